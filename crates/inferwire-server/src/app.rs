//! State shared by every connection: the models, metrics, limits in force, readiness,
//! and the dataplane's parts (shared memory, sequences, open streams). The protocols' logic
//! is `dataplane` (V2) and `seldon` (Seldon's); what differs by dialect is `dialect`.
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::config::ServerConfig;
use crate::dialect::{Absent, Missing};
use crate::error::{Kind, ServeError};
use crate::metrics::{Metrics, ModelSeries};
use crate::models::{Models, Served};
use serde_json::Value;

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
    /// Triton's trace and logging settings, as clients change them.
    pub runtime: crate::runtime_settings::RuntimeSettings,
    /// This worker's tracer (`config.traces`, started by `run`); `None`: tracing off.
    pub tracer: Option<crate::trace::Tracer>,
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
            runtime: crate::runtime_settings::RuntimeSettings::new(
                config.trace.clone(),
                config.log.clone(),
            ),
            tracer: None,
            config,
        }
    }

    /// The model a V2 call names (loaded on request where the cache does that); a
    /// missing one in the dialect's words.
    pub async fn model(&self, name: &str, version: &str) -> Result<Arc<Served>, ServeError> {
        match self.models.get_or_load(name, version).await {
            Ok(model) => Ok(model),
            Err(e) => Err(self.missing(e, name, version).await),
        }
    }

    /// A failed lookup in the dialect's words, told what the server has of the model.
    #[cold]
    pub async fn missing(&self, e: ServeError, name: &str, version: &str) -> ServeError {
        let absent = if e.kind != Kind::NotFound {
            Absent::Model
        } else if self.models.is_loaded(name) {
            Absent::Version
        } else if self.models.known(name).await {
            Absent::NotLoaded
        } else {
            Absent::Model
        };
        let missing = Missing {
            name,
            version,
            absent,
        };
        self.config.dialect.not_found(e, &missing)
    }

    /// A repository load, with the call's parameters (a JSON object: `config`, `file:…`);
    /// an unknown name in the dialect's words.
    pub async fn load_model(&self, name: &str, parameters: Value) -> Result<(), ServeError> {
        let dialect = &self.config.dialect;
        // A load that brings the model's files (Triton's `file:` parameters) needs no
        // folder in the repository.
        let brings_files = parameters
            .as_object()
            .is_some_and(|p| p.keys().any(|k| k.starts_with("file:")));
        if let Some(refused) = dialect.unknown_load(name) {
            if !brings_files && !self.models.in_repository(name).await {
                return Err(refused);
            }
        }
        let done = self.models.load(name, parameters).await;
        done.map_err(|e| dialect.not_found(dialect.load_failed(e, name), &Missing::model(name)))
    }

    /// A repository unload (the default model too where the dialect lets it go); an
    /// unknown name in the dialect's words.
    pub async fn unload_model(&self, name: &str) -> Result<(), ServeError> {
        let dialect = &self.config.dialect;
        let done = self.models.unload(name, dialect.unloads_default()).await;
        done.map_err(|e| dialect.not_found(e, &Missing::model(name)))
    }

    /// A model whose trace setting a client asks for: Triton answers only while the
    /// server and the model are ready, in its words.
    pub async fn trace_model(&self, name: &str) -> Result<(), ServeError> {
        if !self.is_ready() {
            return Err(ServeError::new(Kind::Unavailable, "Server not ready"));
        }
        if self.models.servable(name, "").await.is_err() {
            return Err(ServeError::new(
                Kind::BadRequest,
                format!("Request for unknown model : {name}"),
            ));
        }
        Ok(())
    }

    /// The loaded models' series for the dialect's part of the metrics page.
    pub fn model_series(&self) -> Vec<ModelSeries> {
        let mut models = self.models.all();
        models.retain(|m| !self.models.is_placeholder(&m.name));
        models.sort_by(|a, b| a.name.cmp(&b.name).then(a.version.cmp(&b.version)));
        models
            .iter()
            .map(|m| {
                // Numbered as the statistics extension numbers a model without versions.
                let version = if m.version.is_empty() {
                    "1"
                } else {
                    &m.version
                };
                self.metrics
                    .model_series(m.slot, &m.name, version, m.runner.stats())
            })
            .collect()
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
}
