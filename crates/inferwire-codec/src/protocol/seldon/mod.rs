//! The Seldon protocol (`seldon.protos.SeldonMessage`) over JSON and protobuf.
pub mod form;
mod from_pb;
pub mod json;
pub mod message;
pub mod proto;
mod proto_fast;
pub mod reply;
pub mod tftensor;

pub use message::*;
