//! REST: HTTP/1.1 and h2c on one port, routed by path.
mod access;
mod body;
mod content_coding;
mod publish;
mod routes;
mod seldon;
mod serve;
pub(crate) mod v2;

pub use serve::serve;
