//! REST: HTTP/1.1 and h2c on one port, routed by one table (`routes`).
mod body;
mod components;
mod content_coding;
mod cors;
mod custom;
mod handle;
mod health;
pub(crate) mod kserve;
mod login;
pub mod metrics_port;
mod publish;
mod routes;
mod runtime_settings;
mod seldon;
mod serve;
mod shared_memory;
mod stream;
mod torchserve;
mod torchserve_openapi;
mod v2;

pub use routes::Port;
pub use serve::serve;
