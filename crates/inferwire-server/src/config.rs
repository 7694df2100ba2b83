//! Server settings: built once by the Python side and handed over as one struct.
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
    /// Model calls that may run at once (1: the model is never called concurrently).
    pub max_concurrency: usize,
    /// Requests that may wait for the model before new ones get 503 / UNAVAILABLE.
    pub max_queue: usize,
    /// Tokio worker threads doing networking and encoding.
    pub io_threads: usize,
    /// How long in-flight requests may take to finish after SIGTERM.
    pub grace_period: Duration,
}

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
            max_concurrency: 1,
            max_queue: 1024,
            io_threads: 2,
            grace_period: Duration::from_secs(30),
        }
    }
}
