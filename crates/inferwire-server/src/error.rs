//! The server's one error type, mapped here (and only here) to HTTP status and gRPC code.
use inferwire_codec::protocol::seldon::SeldonMessage;
use inferwire_codec::{CodecError, ErrorKind};

use crate::model::{ModelError, ModelErrorKind};

/// Declares `Kind` with `Kind::ALL`, every kind, so that the list cannot miss one: the
/// metrics check at compile time that each kind's status has a label.
macro_rules! kinds {
    ($(#[$m:meta])* pub enum Kind { $($(#[$vm:meta])* $v:ident,)* }) => {
        $(#[$m])*
        pub enum Kind { $($(#[$vm])* $v,)* }

        impl Kind {
            pub const ALL: &'static [Kind] = &[$(Kind::$v,)*];
        }
    };
}

kinds! {
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    BadRequest,
    TooLarge,
    NotFound,
    MethodNotAllowed,
    /// No valid bearer token (401).
    Unauthenticated,
    /// A valid token without the scope the route needs (403).
    Forbidden,
    /// A Content-Type no decoder takes (415).
    UnsupportedMedia,
    /// No type in Accept can carry the reply (406).
    NotAcceptable,
    Overloaded,
    /// Too many failed logins from this user or client (429, with Retry-After).
    TooManyRequests,
    /// The request's deadline (`--timeout`, gRPC's `grpc-timeout`) passed.
    Deadline,
    /// The request body did not arrive within `body_timeout` (408; the connection closes).
    BodyTimeout,
    ShuttingDown,
    Model,
    Internal,
}
}

impl Kind {
    pub const fn http_status(self) -> u16 {
        match self {
            Kind::BadRequest => 400,
            Kind::TooLarge => 413,
            Kind::NotFound => 404,
            Kind::MethodNotAllowed => 405,
            Kind::Unauthenticated => 401,
            Kind::Forbidden => 403,
            Kind::UnsupportedMedia => 415,
            Kind::NotAcceptable => 406,
            Kind::Overloaded | Kind::ShuttingDown => 503,
            Kind::TooManyRequests => 429,
            Kind::Deadline => 504,
            Kind::BodyTimeout => 408,
            Kind::Model | Kind::Internal => 500,
        }
    }

    pub const fn grpc_code(self) -> tonic::Code {
        match self {
            Kind::BadRequest => tonic::Code::InvalidArgument,
            Kind::TooLarge => tonic::Code::ResourceExhausted,
            Kind::NotFound => tonic::Code::NotFound,
            Kind::MethodNotAllowed => tonic::Code::Unimplemented,
            Kind::UnsupportedMedia | Kind::NotAcceptable => tonic::Code::InvalidArgument,
            Kind::Unauthenticated => tonic::Code::Unauthenticated,
            Kind::Forbidden => tonic::Code::PermissionDenied,
            Kind::Overloaded | Kind::TooManyRequests => tonic::Code::ResourceExhausted,
            Kind::ShuttingDown => tonic::Code::Unavailable,
            Kind::Deadline | Kind::BodyTimeout => tonic::Code::DeadlineExceeded,
            Kind::Model | Kind::Internal => tonic::Code::Internal,
        }
    }

    /// Seldon's `status.reason` for this error.
    pub const fn reason(self) -> &'static str {
        match self {
            Kind::BadRequest => "BAD_REQUEST",
            Kind::TooLarge => "PAYLOAD_TOO_LARGE",
            Kind::NotFound => "NOT_FOUND",
            Kind::MethodNotAllowed => "METHOD_NOT_ALLOWED",
            Kind::Unauthenticated => "UNAUTHENTICATED",
            Kind::Forbidden => "FORBIDDEN",
            Kind::UnsupportedMedia => "UNSUPPORTED_MEDIA_TYPE",
            Kind::NotAcceptable => "NOT_ACCEPTABLE",
            Kind::Overloaded => "OVERLOADED",
            Kind::TooManyRequests => "TOO_MANY_REQUESTS",
            Kind::Deadline => "DEADLINE_EXCEEDED",
            Kind::BodyTimeout => "REQUEST_TIMEOUT",
            Kind::ShuttingDown => "SHUTTING_DOWN",
            Kind::Model => "MODEL_ERROR",
            Kind::Internal => "INTERNAL_ERROR",
        }
    }
}

#[derive(Debug, Clone)]
pub struct ServeError {
    pub kind: Kind,
    pub message: String,
}

impl ServeError {
    #[cold]
    pub fn new(kind: Kind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    pub const fn http_status(&self) -> u16 {
        self.kind.http_status()
    }

    pub const fn grpc_code(&self) -> tonic::Code {
        self.kind.grpc_code()
    }

    /// Seldon's `status.reason` for this error.
    pub const fn reason(&self) -> &'static str {
        self.kind.reason()
    }

    /// The Seldon FAILURE message REST clients get as the body.
    pub fn to_message(&self) -> SeldonMessage {
        SeldonMessage::failure(
            i32::from(self.http_status()),
            self.reason(),
            self.message.clone(),
        )
    }

    pub fn to_status(&self) -> tonic::Status {
        tonic::Status::new(self.grpc_code(), self.message.clone())
    }
}

impl From<CodecError> for ServeError {
    fn from(e: CodecError) -> Self {
        let kind = match e.kind {
            ErrorKind::BadRequest => Kind::BadRequest,
            ErrorKind::BadOutput => Kind::Model,
        };
        Self {
            kind,
            message: e.message,
        }
    }
}

impl From<ModelError> for ServeError {
    fn from(e: ModelError) -> Self {
        let kind = match e.kind {
            ModelErrorKind::Raised => Kind::Model,
            ModelErrorKind::BadInput => Kind::BadRequest,
        };
        Self {
            kind,
            message: e.message,
        }
    }
}

impl std::fmt::Display for ServeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ServeError {}
