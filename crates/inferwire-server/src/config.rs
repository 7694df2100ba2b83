//! Server settings: built once by the Python side (whose schema, `inferwire.settings`,
//! holds the served defaults) and handed over as one struct.
use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

use inferwire_codec::Limits;

#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub host: String,
    /// REST port (HTTP/1.1 and h2c); 0 picks a free port.
    pub http_port: u16,
    /// gRPC port; 0 picks a free port.
    pub grpc_port: u16,
    /// Largest request body (REST) or message (gRPC) accepted, in bytes.
    pub max_body_bytes: usize,
    pub limits: Limits,
    /// The model's name in `meta.requestPath` and metadata.
    pub model_name: String,
    /// The value beside the name in `meta.requestPath` (Seldon puts the image there).
    pub model_image: String,
    /// Seldon replies keep the model's `meta.metrics` (the wrapper's
    /// INCLUDE_METRICS_IN_CLIENT_RESPONSE); they are counted on `/metrics` either way.
    pub include_metrics_in_client_response: bool,
    /// The model's version on V2 routes (`/v2/models/NAME/versions/VERSION`); empty: the
    /// model is served without one.
    pub model_version: String,
    /// Requests admitted to the model at once (running, or gathered into a batch).
    pub max_concurrency: usize,
    /// Requests that may wait for admission before new ones get 503 / RESOURCE_EXHAUSTED.
    pub max_queue: usize,
    /// Model calls that may run at the same time, on as many model threads.
    pub model_threads: usize,
    /// Requests joined into one model call at most (1: no batching).
    pub max_batch_size: usize,
    /// How long a batch's first request waits for more.
    pub max_batch_delay: Duration,
    /// How long a request may take before it gets 504 / DEADLINE_EXCEEDED (and is
    /// dropped if it has not reached the model); `None`: no limit.
    pub timeout: Option<Duration>,
    /// Bind with SO_REUSEPORT, so that worker processes each bind the same ports.
    pub reuse_port: bool,
    /// Log one line per request (`None`: no access log).
    pub access_log: AccessLog,
    /// Tokio worker threads doing networking and encoding.
    pub io_threads: usize,
    /// How long in-flight requests may take to finish after SIGTERM.
    pub grace_period: Duration,
    /// Bearer-token auth on every route but health and metrics; `None`: open.
    pub auth: Option<std::sync::Arc<crate::auth::Auth>>,
    /// TLS on both ports; `None`: plaintext.
    pub tls: Option<std::sync::Arc<crate::tls::TlsConfig>>,
    /// Connections open at once (REST and gRPC); past it, accepting waits for one to close.
    pub max_connections: usize,
    /// HTTP/1.1: the time to send a whole request head (from the connection's start or
    /// its previous response); slow senders and idle keep-alive connections are closed.
    pub header_timeout: Duration,
    /// HTTP/2 streams open at once on one connection (REST h2 and gRPC).
    pub max_streams: u32,
    /// With several workers and a repository: where they share repository API changes.
    pub repository_sync: Option<crate::repository_sync::SyncConfig>,
    /// How often each worker reads the repository for models added, changed or removed
    /// (Triton's poll mode); `None`: never.
    pub repository_poll: Option<Duration>,
    /// TorchServe's management API's own port (`None`: its routes are on the REST port).
    pub management_port: Option<u16>,
    /// TorchServe's gRPC management service's own port (`None`: on the gRPC port, in
    /// TorchServe's dialect).
    pub grpc_management_port: Option<u16>,
    /// The port of KServe's wrapper in TorchServe's KServe image (`None`: not served, or
    /// the REST port is it).
    pub kserve_port: Option<u16>,
    /// The gRPC port of KServe's wrapper in TorchServe's KServe image (KServe's V2 gRPC;
    /// `None`: not served).
    pub kserve_grpc_port: Option<u16>,
    /// TorchServe's key file, whose inference key its inference API requires.
    pub torchserve_keys: Option<std::sync::Arc<crate::torchserve_keys::KeyFile>>,
    /// A model call running longer than this is stuck: the server stops reporting live
    /// (and, as a supervised worker, drains and exits to be replaced). `None`: never.
    pub stuck_after: Option<Duration>,
    /// This process is one of several workers that a supervisor restarts when they exit.
    pub supervised: bool,
    /// A worker that has answered this many requests (plus up to `max_requests_jitter`,
    /// drawn per worker) drains and exits to be replaced; `None`: never.
    pub max_requests: Option<u64>,
    pub max_requests_jitter: u64,
    /// A worker whose resident memory passes this many bytes drains and exits to be
    /// replaced (checked every second); `None`: never.
    pub max_worker_memory: Option<u64>,
    /// The time a request body (REST) or each request message (gRPC) has to arrive,
    /// counted from the end of the head (or the previous message): past it, 408 /
    /// DEADLINE_EXCEEDED.
    pub body_timeout: Duration,
    /// Request-body bytes this process holds at once, received or being decoded; a body
    /// that would exceed it gets 503 / RESOURCE_EXHAUSTED at once.
    pub max_body_bytes_in_flight: usize,
    /// Without auth: serve the repository API (publish, delete, load, unload, index) to
    /// anyone anyway. Off by default: a published model file can run code.
    pub allow_unauthenticated_repository: bool,
    /// A port answering only `metrics_endpoint`, as Seldon's wrapper serves its metrics
    /// (`PREDICTIVE_UNIT_METRICS_SERVICE_PORT`); None: none.
    pub metrics_port: Option<u16>,
    pub metrics_endpoint: String,
    /// Triton's system shared-memory extension; `None`: off (the default).
    pub shared_memory: Option<crate::shared_memory::SharedMemoryConfig>,
    /// Streamed replies' bounds.
    pub streaming: crate::stream::StreamLimits,
    /// Whose answers the V2 dataplane gives where servers differ (`dialect`).
    pub dialect: std::sync::Arc<dyn crate::dialect::Dialect>,
    /// What `GET /v2` and `ServerMetadata` say of the server.
    pub identity: ServerIdentity,
    /// Cross-origin requests from browsers (`rest::cors`); `None`: none allowed.
    pub cors: Option<CorsConfig>,
    /// Repository models loaded on request and unloaded past a memory budget.
    pub model_cache: crate::models::CacheConfig,
    /// The trace and logging settings the server starts with (Triton's trace and logging
    /// extensions change them at runtime: `runtime_settings`).
    pub trace: crate::runtime_settings::Trace,
    pub log: crate::runtime_settings::Log,
    /// OpenTelemetry traces exported by OTLP (`crate::trace`); `None`: off.
    pub traces: Option<crate::trace::TraceConfig>,
}

/// Which pages of other origins may call the REST API from a browser, as Starlette's
/// CORS middleware (MLServer's `cors_settings`) takes them: `*` in a list allows any.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CorsConfig {
    pub origins: Vec<String>,
    pub methods: Vec<String>,
    /// Request headers a page may send beyond the safelisted ones.
    pub headers: Vec<String>,
    pub credentials: bool,
    /// Reply headers a page may read beyond the safelisted ones.
    pub expose: Vec<String>,
    /// Seconds a browser may keep a preflight's answer.
    pub max_age: u64,
}

/// The protocol extensions `/v2` and `ServerMetadata` name, as Triton names them.
pub const EXTENSIONS: [&str; 4] = [
    "binary_tensor_data",
    "statistics",
    "model_configuration",
    "system_shared_memory",
];

/// HTTP/2 flow-control windows (shared with REST's h2c): room for a large tensor.
pub const STREAM_WINDOW: u32 = 4 * 1024 * 1024;
pub const CONNECTION_WINDOW: u32 = 16 * 1024 * 1024;

/// The server's name, version and protocol extensions, as `GET /v2` gives them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerIdentity {
    pub name: String,
    pub version: String,
    pub extensions: Vec<String>,
}

impl Default for ServerIdentity {
    fn default() -> Self {
        Self {
            name: "inferwire".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            extensions: EXTENSIONS.map(String::from).to_vec(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccessLog {
    Off,
    Text,
    Json,
}

impl ServerConfig {
    /// This worker's request limit: `max_requests` plus a share of the jitter drawn for
    /// this process, so that workers started together are not all replaced together.
    pub fn request_limit(&self) -> Option<u64> {
        let extra = match self.max_requests_jitter {
            0 => 0,
            most => {
                // Seeded per process: forked workers share the parent's hasher keys.
                let mut h = std::collections::hash_map::RandomState::new().build_hasher();
                h.write_u32(std::process::id());
                h.finish() % (most + 1)
            }
        };
        self.max_requests.map(|n| n.max(1) + extra)
    }

    pub fn runner(&self) -> crate::runner::RunnerConfig {
        crate::runner::RunnerConfig {
            max_concurrency: self.max_concurrency,
            max_queue: self.max_queue,
            model_threads: self.model_threads,
            max_batch_size: self.max_batch_size,
            max_batch_delay: self.max_batch_delay,
        }
    }
}

/// For Rust tests and embedding, with the schema's defaults; `inferwire serve` takes every
/// value from the Python schema (python/inferwire/settings.py).
impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            host: "0.0.0.0".into(),
            http_port: 9000,
            grpc_port: 5000,
            max_body_bytes: 64 * 1024 * 1024,
            limits: Limits::default(),
            model_name: "model".into(),
            model_image: String::new(),
            include_metrics_in_client_response: true,
            model_version: String::new(),
            max_concurrency: 1,
            max_queue: 1024,
            model_threads: 1,
            max_batch_size: 1,
            max_batch_delay: Duration::ZERO,
            timeout: Some(Duration::from_secs(60)),
            reuse_port: false,
            access_log: AccessLog::Off,
            io_threads: 2,
            grace_period: Duration::from_secs(30),
            auth: None,
            tls: None,
            max_connections: 10_000,
            header_timeout: Duration::from_secs(30),
            max_streams: 200,
            repository_sync: None,
            repository_poll: None,
            torchserve_keys: None,
            management_port: None,
            grpc_management_port: None,
            kserve_port: None,
            kserve_grpc_port: None,
            stuck_after: Some(Duration::from_secs(120)),
            supervised: false,
            max_requests: None,
            max_requests_jitter: 0,
            max_worker_memory: None,
            body_timeout: Duration::from_secs(30),
            max_body_bytes_in_flight: 256 * 1024 * 1024,
            allow_unauthenticated_repository: false,
            metrics_port: None,
            metrics_endpoint: "/prometheus".into(),
            shared_memory: None,
            streaming: crate::stream::StreamLimits::default(),
            dialect: crate::dialect::default(),
            identity: ServerIdentity::default(),
            cors: None,
            model_cache: crate::models::CacheConfig::default(),
            trace: crate::runtime_settings::Trace::default(),
            log: crate::runtime_settings::Log::default(),
            traces: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_is_max_requests_plus_at_most_the_jitter() {
        let mut config = ServerConfig::default();
        assert_eq!(config.request_limit(), None);
        config.max_requests = Some(100);
        assert_eq!(config.request_limit(), Some(100));
        config.max_requests_jitter = 10;
        let limit = config.request_limit().unwrap();
        assert!((100..=110).contains(&limit), "{limit}");
    }
}
