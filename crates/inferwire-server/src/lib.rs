//! inferwire-server: REST (HTTP/1.1 + h2c) and gRPC servers around a `Model`.
//!
//! Pure Rust, no Python: the Python glue implements `Model` and calls `serve`.
pub mod app;
pub mod auth;
mod batch;
pub mod body_budget;
mod bounded_join;
pub mod config;
mod dataplane;
pub mod dialect;
mod drain;
pub mod error;
mod first_bytes;
pub mod grpc;
pub mod login_guard;
pub mod metrics;
pub mod model;
pub mod model_config;
pub mod models;
pub mod native;
mod observe;
mod read_ahead;
pub mod repository_sync;
pub mod rest;
mod run;
pub mod runner;
pub mod runtime_settings;
mod seldon;
mod sequences;
pub mod settings;
pub mod shared_memory;
pub mod stream;
pub mod tls;
pub mod torchserve_keys;
mod torchserve_management;
mod torchserve_pieces;
pub mod trace;
mod uuid;
mod write_stall;

pub use config::{AccessLog, ServerConfig};
pub use error::ServeError;
pub use metrics::Metrics;
pub use model::{
    Answer, BlockingPieces, Inferred, Model, ModelError, ModelErrorKind, Pieces, Prediction,
    SeldonOps,
};
pub use models::{ModelSpec, Repository};
pub use run::{serve, Bound, Listeners, Serving, StopHandle};
