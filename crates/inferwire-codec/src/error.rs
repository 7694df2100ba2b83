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
    /// What went wrong, as data, where a server may word it its own way (the message is
    /// inferwire's words); `None` for most errors. Boxed: errors stay small.
    pub cause: Option<Box<Cause>>,
}

/// The facts behind a few errors that other servers word differently (Triton's dialect
/// rewords them; see `inferwire_server::dialect`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cause {
    /// The body is not JSON: the byte offset where the parser stopped, serde_json's words
    /// for what it found there (without the position), and the last byte before it that
    /// is not white space (`None` at the start).
    Json {
        offset: usize,
        reason: String,
        after: Option<u8>,
    },
    /// A field the request must have is missing (`field`: its name, not its path).
    MissingField { field: String },
    /// An input's binary data (raw, binary extension or shared memory) is not the size its
    /// datatype and shape need. `input` is its name ("" until the decoder knows it).
    DataSize {
        input: String,
        expected: usize,
        got: usize,
    },
    /// An input's `binary_data_size` reaches past the end of the body by `missing` bytes.
    BinaryShort { input: String, missing: usize },
    /// Binary data after the inputs that no input's `binary_data_size` accounts for.
    BinaryLeft,
    /// A gRPC request with `raw_input_contents` whose input `input` also has typed
    /// `contents`.
    ContentsWithRaw { input: String },
}

impl CodecError {
    #[cold]
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self {
            kind: ErrorKind::BadRequest,
            message: message.into(),
            cause: None,
        }
    }

    #[cold]
    pub fn bad_output(message: impl Into<String>) -> Self {
        Self {
            kind: ErrorKind::BadOutput,
            message: message.into(),
            cause: None,
        }
    }

    /// The same error, with the facts behind it.
    #[cold]
    pub fn because(mut self, cause: Cause) -> Self {
        self.cause = Some(Box::new(cause));
        self
    }

    /// Names the input a `Cause::DataSize` is about, once the decoder knows its name.
    #[cold]
    pub fn of_input(mut self, name: &str) -> Self {
        if let Some(Cause::DataSize { input, .. }) = self.cause.as_deref_mut() {
            name.clone_into(input);
        }
        self
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
