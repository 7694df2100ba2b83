//! gRPC: `seldon.protos.Seldon` and `seldon.protos.Model`, V2's
//! `inference.GRPCInferenceService`, plus health and reflection.
mod auth;
mod body_guard;
pub mod codec;
mod components;
mod health;
mod incoming;
pub(crate) mod methods;
mod predict;
mod runtime_settings;
mod seldon;
mod serve;
mod stream;
mod timeout;
mod trailers;
mod v2;

pub use serve::serve;

#[allow(clippy::all)]
pub(crate) mod generated {
    include!(concat!(env!("OUT_DIR"), "/seldon.protos.rs"));
}

#[allow(clippy::all)]
pub(crate) mod generated_v2 {
    include!(concat!(env!("OUT_DIR"), "/inference.rs"));

    pub(crate) mod model_repository {
        include!(concat!(env!("OUT_DIR"), "/inference.model_repository.rs"));
    }
}
