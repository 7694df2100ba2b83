//! gRPC: `seldon.protos.Seldon` and `seldon.protos.Model`, plus health and reflection.
pub mod codec;
mod predict;
mod seldon;
mod serve;

pub use serve::{serve, CONNECTION_WINDOW, STREAM_WINDOW};

#[allow(clippy::all)]
pub(crate) mod generated {
    include!(concat!(env!("OUT_DIR"), "/seldon.protos.rs"));
}
