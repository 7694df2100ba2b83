//! State shared by every connection, and the protocol logic both transports share.
use std::sync::atomic::{AtomicBool, Ordering};

use inferwire_codec::protocol::seldon::{Feedback, Meta, SeldonMessage};
use serde_json::Value;

use crate::config::ServerConfig;
use crate::error::{Kind, ServeError};
use crate::model::{Call, Reply};
use crate::runner::Runner;

pub struct App {
    pub config: ServerConfig,
    pub runner: Runner,
    ready: AtomicBool,
}

impl App {
    pub fn new(config: ServerConfig, runner: Runner) -> Self {
        Self {
            config,
            runner,
            ready: AtomicBool::new(true),
        }
    }

    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Relaxed)
    }

    pub fn set_not_ready(&self) {
        self.ready.store(false, Ordering::Relaxed);
    }

    /// Runs `predict` (or `predict_raw`) and completes the reply's `meta`.
    pub async fn predict(&self, msg: SeldonMessage) -> Result<Reply, ServeError> {
        let puid = msg.meta.puid.clone();
        let reply = self.runner.call(Call::Predict(msg)).await?;
        Ok(match reply {
            Reply::Message(mut m) => {
                self.complete_meta(&mut m.meta, puid);
                Reply::Message(m)
            }
            other => other,
        })
    }

    pub async fn feedback(&self, f: Feedback) -> Result<SeldonMessage, ServeError> {
        let puid = f
            .request
            .as_ref()
            .map(|r| r.meta.puid.clone())
            .unwrap_or_default();
        match self.runner.call(Call::Feedback(Box::new(f))).await? {
            Reply::Message(mut m) => {
                self.complete_meta(&mut m.meta, puid);
                Ok(m)
            }
            other => Err(unexpected(other)),
        }
    }

    pub async fn health_status(&self) -> Result<Reply, ServeError> {
        match self.runner.call(Call::HealthStatus).await? {
            Reply::Message(mut m) => {
                self.complete_meta(&mut m.meta, String::new());
                Ok(Reply::Message(m))
            }
            other => Ok(other),
        }
    }

    pub async fn metadata(&self) -> Result<Value, ServeError> {
        match self.runner.call(Call::Metadata).await? {
            Reply::Metadata(v) => Ok(v),
            other => Err(unexpected(other)),
        }
    }

    /// Seldon's reply meta: the request's `puid` echoed, and this model in `requestPath`.
    fn complete_meta(&self, meta: &mut Meta, puid: String) {
        if meta.puid.is_empty() {
            meta.puid = puid;
        }
        meta.request_path
            .entry(self.config.model_name.clone())
            .or_insert_with(|| self.config.model_image.clone());
    }
}

#[cold]
fn unexpected(reply: Reply) -> ServeError {
    ServeError::new(
        Kind::Internal,
        format!("the model runtime gave an unexpected reply: {reply:?}"),
    )
}
