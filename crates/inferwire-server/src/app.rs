//! State shared by every connection, and the protocol logic both transports share.
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use inferwire_codec::media::{self, Media};
use inferwire_codec::protocol::seldon::{Feedback, Meta, SeldonMessage};
use serde_json::Value;

use crate::config::ServerConfig;
use crate::error::{Kind, ServeError};
use crate::metrics::Metrics;
use crate::model::Prediction;
use crate::models::{Models, Served};

pub struct App {
    pub config: ServerConfig,
    pub models: Models,
    pub metrics: Metrics,
    /// One per open connection, REST and gRPC (`max_connections`).
    pub connections: std::sync::Arc<tokio::sync::Semaphore>,
    /// Request-body bytes held at once (`max_body_bytes_in_flight`).
    pub bodies: std::sync::Arc<crate::body_budget::BodyBudget>,
    ready: AtomicBool,
    /// Why the server is no longer live (a stuck model call); `None`: live.
    stuck: std::sync::Mutex<Option<String>>,
    /// Requests answered by this process (`max_requests`).
    answered: std::sync::atomic::AtomicU64,
    /// This worker's `max_requests`, with its share of the jitter; `None`: no limit.
    pub request_limit: Option<u64>,
    /// Wakes the recycling thread (run::recycle) the moment the limit is reached.
    pub limit_reached: (std::sync::Mutex<bool>, std::sync::Condvar),
    /// Streamed replies open in this worker (`stream_max_open`).
    pub streams: crate::stream::OpenStreams,
    /// Triton's system shared-memory regions (off unless configured).
    pub shared_memory: crate::shared_memory::SharedMemory,
    /// With several workers: where V2 requests of a sequence another worker owns go.
    pub(crate) sequences: std::sync::OnceLock<crate::sequences::Route>,
    /// Text in Prometheus' format the scrape adds after inferwire's own (the models'
    /// metrics kept by the Python side: MLServer's `mlserver.log`).
    pub extra_metrics: Option<ExtraMetrics>,
}

/// What `App::extra_metrics` calls, off the I/O threads, at each scrape.
pub type ExtraMetrics = Arc<dyn Fn() -> String + Send + Sync>;

impl App {
    pub fn new(config: ServerConfig, models: Models, metrics: Metrics) -> Self {
        // Only a supervised worker is replaced when it exits.
        let request_limit = config.supervised.then(|| config.request_limit()).flatten();
        Self {
            connections: std::sync::Arc::new(tokio::sync::Semaphore::new(
                config
                    .max_connections
                    .min(tokio::sync::Semaphore::MAX_PERMITS),
            )),
            bodies: crate::body_budget::BodyBudget::new(config.max_body_bytes_in_flight, metrics),
            shared_memory: crate::shared_memory::SharedMemory::new(config.shared_memory.clone()),
            streams: crate::stream::OpenStreams::new(config.streaming.max_open),
            models,
            metrics,
            ready: AtomicBool::new(true),
            stuck: std::sync::Mutex::new(None),
            answered: std::sync::atomic::AtomicU64::new(0),
            request_limit,
            limit_reached: Default::default(),
            sequences: std::sync::OnceLock::new(),
            extra_metrics: None,
            config,
        }
    }

    /// The model a V2 call names (loaded on request where the cache does that); a
    /// missing one in the dialect's words.
    pub async fn model(&self, name: &str, version: &str) -> Result<Arc<Served>, ServeError> {
        let found = self.models.get_or_load(name, version).await;
        found.map_err(|e| self.config.dialect.not_found(e, name, version))
    }

    /// A repository load; an unknown name in the dialect's words.
    pub async fn load_model(&self, name: &str) -> Result<(), ServeError> {
        let dialect = &self.config.dialect;
        if let Some(refused) = dialect.unknown_load(name) {
            if !self.models.in_repository(name).await {
                return Err(refused);
            }
        }
        let done = self.models.load(name).await;
        done.map_err(|e| dialect.not_found(e, name, ""))
    }

    /// A repository unload (the default model too where the dialect lets it go); an
    /// unknown name in the dialect's words.
    pub async fn unload_model(&self, name: &str) -> Result<(), ServeError> {
        let dialect = &self.config.dialect;
        let done = self.models.unload(name, dialect.unloads_default()).await;
        done.map_err(|e| dialect.not_found(e, name, ""))
    }

    /// The default model's metrics slot (for requests on the Seldon protocol's routes).
    pub fn default_slot(&self) -> usize {
        self.models.default_model().map_or(0, |m| m.slot)
    }

    /// When a request that arrived at `start` must be answered: the sooner of the
    /// server's `timeout` and the client's own deadline (gRPC's `grpc-timeout`).
    pub fn deadline(&self, start: Instant, client: Option<Duration>) -> Option<Instant> {
        let limit = match (self.config.timeout, client) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        limit.map(|d| start + d)
    }

    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Relaxed)
    }

    pub fn set_not_ready(&self) {
        self.ready.store(false, Ordering::Relaxed);
    }

    /// Counts an answered request. The one that reaches `request_limit` makes the
    /// worker not ready at once, so that its own HTTP/1.1 answer already closes the
    /// connection (see rest::serve) before the worker drains.
    pub fn answered_one(&self) {
        let n = self.answered.fetch_add(1, Ordering::Relaxed) + 1;
        if self.request_limit.is_some_and(|limit| n >= limit) {
            self.set_not_ready();
            *self
                .limit_reached
                .0
                .lock()
                .unwrap_or_else(|e| e.into_inner()) = true;
            self.limit_reached.1.notify_all();
        }
    }

    pub fn answered(&self) -> u64 {
        self.answered.load(Ordering::Relaxed)
    }

    /// `None` while live; otherwise why not (liveness probes get 503 with it).
    pub fn not_live_because(&self) -> Option<String> {
        self.stuck.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// A model call never returned: neither live nor ready from now on.
    pub fn set_stuck(&self, why: String) {
        self.set_not_ready();
        *self.stuck.lock().unwrap_or_else(|e| e.into_inner()) = Some(why);
    }

    /// The oldest running model call over every model, if it has run longer than
    /// `limit`: the model's name and how long.
    pub fn stuck_call(&self, limit: Duration) -> Option<(String, Duration)> {
        self.models
            .all()
            .iter()
            .filter_map(|m| Some((m.name.clone(), m.runner.longest_call()?)))
            .filter(|(_, took)| *took > limit)
            .max_by_key(|(_, took)| *took)
    }

    /// Runs `predict` (or `predict_raw`) and completes the reply's `meta`.
    pub async fn predict(
        &self,
        msg: SeldonMessage,
        deadline: Option<Instant>,
    ) -> Result<Prediction, ServeError> {
        self.predict_on(None, msg, deadline).await
    }

    /// `predict` on `model` (a published model's own route), or the default model.
    pub async fn predict_on(
        &self,
        model: Option<&Served>,
        msg: SeldonMessage,
        deadline: Option<Instant>,
    ) -> Result<Prediction, ServeError> {
        let puid = msg.meta.puid.clone();
        // What earlier graph nodes added, which Seldon's wrapper passes on (usually empty).
        let earlier = (msg.meta.request_path.clone(), msg.meta.metrics.clone());
        let reply = match model {
            Some(m) => m.runner.predict(msg, deadline).await?,
            None => {
                let m = self.models.default_model()?;
                m.runner.predict(msg, deadline).await?
            }
        };
        Ok(match reply {
            Prediction::Message(mut m) => {
                let (request_path, metrics) = earlier;
                if !metrics.is_empty() {
                    m.meta.metrics.splice(0..0, metrics);
                }
                // This model names itself unless it listed the nodes it ran (a graph); a
                // model on its own route has no image of its own.
                let (name, image) = match model {
                    Some(served) => (served.name.as_str(), served.name.as_str()),
                    None => (self.models.default_name(), self.config.model_image.as_str()),
                };
                complete_meta(&mut m.meta, puid, name, image);
                // The request's entries (earlier graph nodes) win on the same key, as in
                // Seldon's merge.
                m.meta.request_path.extend(request_path);
                Prediction::Message(m)
            }
            raw @ Prediction::Raw(_) => raw,
        })
    }

    /// A predict whose payload came as a body in `media` (REST, or a gRPC `binData`
    /// with `x-content-type`): decoded, predicted on `model` (or the default), and the
    /// reply encoded in the media `accept` picks (default: the request's). Returns the
    /// encoded reply, its media, and the reply's meta.
    pub async fn predict_media(
        &self,
        model: Option<&Served>,
        media: &Media,
        body: Bytes,
        meta: Meta,
        accept: Option<&str>,
        deadline: Option<Instant>,
    ) -> Result<(Bytes, Media, Meta), ServeError> {
        let (payload, default) = media::decode(media, body, &self.config.limits)?;
        let msg = SeldonMessage {
            status: None,
            meta,
            payload,
        };
        let (payload, meta) = match self.predict_on(model, msg, deadline).await? {
            Prediction::Message(m) => (m.payload, m.meta),
            Prediction::Raw(out) => (media::output_payload(out), Meta::default()),
        };
        let target = media::negotiate(accept, &default, &payload)
            .map_err(|e| ServeError::new(Kind::NotAcceptable, e))?;
        Ok((media::encode(payload, &target)?, target, meta))
    }

    pub async fn feedback(&self, f: Feedback) -> Result<SeldonMessage, ServeError> {
        let puid = f
            .request
            .as_ref()
            .map(|r| r.meta.puid.clone())
            .unwrap_or_default();
        let model = self.models.default_model()?;
        let mut m = model.runner.send_feedback(f, None).await?;
        self.complete_meta(&mut m.meta, puid);
        Ok(m)
    }

    /// A Seldon graph component's operation on the default model, its reply's meta
    /// completed as predict's.
    pub async fn component(
        &self,
        call: crate::runner::Component,
        deadline: Option<Instant>,
    ) -> Result<Prediction, ServeError> {
        let puid = call.puid();
        let model = self.models.default_model()?;
        Ok(match model.runner.component(call, deadline).await? {
            Prediction::Message(mut m) => {
                self.complete_meta(&mut m.meta, puid);
                Prediction::Message(m)
            }
            raw @ Prediction::Raw(_) => raw,
        })
    }

    pub async fn health_status(&self) -> Result<SeldonMessage, ServeError> {
        let model = self.models.default_model()?;
        let mut m = model.runner.health_status(None).await?;
        self.complete_meta(&mut m.meta, String::new());
        Ok(m)
    }

    pub async fn metadata(&self) -> Result<Value, ServeError> {
        self.models.default_model()?.runner.metadata(None).await
    }

    /// Seldon's reply meta: the request's `puid` echoed, and this model in `requestPath`
    /// unless the model (a graph) listed the nodes it ran there.
    fn complete_meta(&self, meta: &mut Meta, puid: String) {
        complete_meta(
            meta,
            puid,
            self.models.default_name(),
            &self.config.model_image,
        );
    }
}

fn complete_meta(meta: &mut Meta, puid: String, name: &str, image: &str) {
    if meta.puid.is_empty() {
        meta.puid = puid;
    }
    if meta.request_path.is_empty() {
        meta.request_path
            .insert(name.to_string(), image.to_string());
    }
}
