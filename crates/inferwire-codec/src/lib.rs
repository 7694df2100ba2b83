//! inferwire-codec: `Tensor` and every wire format inferwire speaks, to and from it.
//!
//! Pure Rust, no Python: decoders parse request bodies straight into typed buffers and
//! encoders write replies straight from them.
pub mod arrays;
pub mod error;
pub mod json;
pub mod limits;
pub mod media;
pub mod multipart;
pub mod pb;
pub mod protocol;
pub mod rows;
pub mod stream_reply;
pub mod tensor;

pub use error::{Cause, CodecError, ErrorKind, Result};
pub use limits::Limits;
pub use tensor::{DType, Tensor, TensorData};
