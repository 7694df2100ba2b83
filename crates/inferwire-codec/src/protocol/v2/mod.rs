//! The Open Inference Protocol (KServe V2, as MLServer and Triton speak it): REST bodies
//! (JSON, with or without the binary tensor extension) and gRPC messages.
pub mod binary;
pub mod generate;
pub mod json;
mod message;
pub mod proto;

pub use message::*;
