//! One folder per protocol, with the same file names inside: `message.rs` (the protocol's
//! messages as inferwire holds them), `json.rs` (REST bodies), `proto.rs` (gRPC messages).
pub mod seldon;
pub mod v2;
