//! inferwire-server: REST (HTTP/1.1 + h2c) and gRPC servers around a `Model`.
//!
//! Pure Rust, no Python: the Python glue implements `Model` and calls `serve`.
pub mod app;
pub mod config;
pub mod error;
pub mod grpc;
pub mod model;
mod read_ahead;
pub mod rest;
mod run;
pub mod runner;

pub use config::ServerConfig;
pub use error::ServeError;
pub use model::{Call, Model, ModelError, ModelErrorKind, Reply};
pub use run::{serve, Bound, StopHandle};
