//! The codec's one error type. The server maps `kind` to HTTP status and gRPC code.
use std::fmt;

/// What went wrong, which decides the status a client sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// Malformed or inconsistent input: HTTP 400, gRPC INVALID_ARGUMENT.
    BadRequest,
    /// A model result that cannot be encoded as asked: HTTP 500, gRPC INTERNAL.
    BadOutput,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodecError {
    pub kind: ErrorKind,
    pub message: String,
}

impl CodecError {
    #[cold]
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self {
            kind: ErrorKind::BadRequest,
            message: message.into(),
        }
    }

    #[cold]
    pub fn bad_output(message: impl Into<String>) -> Self {
        Self {
            kind: ErrorKind::BadOutput,
            message: message.into(),
        }
    }

    /// Prefixes the message with the field it concerns, e.g. `data.tensor: ...`.
    #[cold]
    pub fn in_field(mut self, field: &str) -> Self {
        self.message = format!("{field}: {}", self.message);
        self
    }
}

impl fmt::Display for CodecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CodecError {}

pub type Result<T, E = CodecError> = std::result::Result<T, E>;
