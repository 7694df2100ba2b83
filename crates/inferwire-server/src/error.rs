//! The server's one error type, mapped here (and only here) to HTTP status and gRPC code.
use inferwire_codec::protocol::seldon::SeldonMessage;
use inferwire_codec::{CodecError, ErrorKind};

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
    /// A V2 REST request that is not a valid inference request, where the server answers
    /// as MLServer does (422; `v2_invalid_status`); otherwise such a request is BadRequest.
    Unprocessable,
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
    /// A model that is there but cannot serve now (Triton's "not at ready state"): 503,
    /// UNAVAILABLE.
    Unavailable,
    /// A request for something the server does not do (Triton's UNSUPPORTED): 501,
    /// UNIMPLEMENTED.
    Unsupported,
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
            Kind::Unprocessable => 422,
            Kind::NotAcceptable => 406,
            Kind::Overloaded | Kind::ShuttingDown | Kind::Unavailable => 503,
            Kind::TooManyRequests => 429,
            Kind::Deadline => 504,
            Kind::BodyTimeout => 408,
            Kind::Model | Kind::Internal => 500,
            Kind::Unsupported => 501,
        }
    }

    pub const fn grpc_code(self) -> tonic::Code {
        match self {
            Kind::BadRequest => tonic::Code::InvalidArgument,
            Kind::TooLarge => tonic::Code::ResourceExhausted,
            Kind::NotFound => tonic::Code::NotFound,
            Kind::MethodNotAllowed | Kind::Unsupported => tonic::Code::Unimplemented,
            Kind::UnsupportedMedia | Kind::NotAcceptable | Kind::Unprocessable => {
                tonic::Code::InvalidArgument
            }
            Kind::Unauthenticated => tonic::Code::Unauthenticated,
            Kind::Forbidden => tonic::Code::PermissionDenied,
            Kind::Overloaded | Kind::TooManyRequests => tonic::Code::ResourceExhausted,
            Kind::ShuttingDown | Kind::Unavailable => tonic::Code::Unavailable,
            Kind::Deadline | Kind::BodyTimeout => tonic::Code::DeadlineExceeded,
            Kind::Model | Kind::Internal => tonic::Code::Internal,
        }
    }

    /// Seldon's `status.reason` for this error.
    pub const fn reason(self) -> &'static str {
        match self {
            // Seldon's wrapper's reason for a payload it cannot read.
            Kind::BadRequest => "MICROSERVICE_BAD_DATA",
            Kind::TooLarge => "PAYLOAD_TOO_LARGE",
            Kind::NotFound => "NOT_FOUND",
            Kind::MethodNotAllowed => "METHOD_NOT_ALLOWED",
            Kind::Unauthenticated => "UNAUTHENTICATED",
            Kind::Forbidden => "FORBIDDEN",
            Kind::UnsupportedMedia => "UNSUPPORTED_MEDIA_TYPE",
            Kind::Unprocessable => "UNPROCESSABLE_ENTITY",
            Kind::NotAcceptable => "NOT_ACCEPTABLE",
            Kind::Overloaded => "OVERLOADED",
            Kind::TooManyRequests => "TOO_MANY_REQUESTS",
            Kind::Deadline => "DEADLINE_EXCEEDED",
            Kind::BodyTimeout => "REQUEST_TIMEOUT",
            Kind::ShuttingDown => "SHUTTING_DOWN",
            Kind::Unavailable => "UNAVAILABLE",
            Kind::Unsupported => "NOT_IMPLEMENTED",
            Kind::Model => "MODEL_ERROR",
            Kind::Internal => "INTERNAL_ERROR",
        }
    }
}

#[derive(Debug, Clone)]
pub struct ServeError {
    pub kind: Kind,
    pub message: String,
    /// A model's own answer to its error (an exception with a `status_code`), which
    /// replaces the kind's status, gRPC code and REST body. Boxed: errors stay small.
    pub model_reply: Option<Box<ModelReply>>,
}

/// The status (4xx or 5xx) a model's exception carried, and its `to_dict()` as JSON.
#[derive(Debug, Clone)]
pub struct ModelReply {
    pub status: u16,
    pub body: Option<Box<str>>,
}

impl ServeError {
    #[cold]
    pub fn new(kind: Kind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            model_reply: None,
        }
    }

    pub fn http_status(&self) -> u16 {
        match &self.model_reply {
            Some(r) => r.status,
            None => self.kind.http_status(),
        }
    }

    pub fn grpc_code(&self) -> tonic::Code {
        match &self.model_reply {
            Some(r) => grpc_code_of_status(r.status),
            None => self.kind.grpc_code(),
        }
    }

    /// The JSON body the model chose for this error (Seldon answers an exception's
    /// `to_dict()`), if any.
    pub fn model_body(&self) -> Option<&str> {
        self.model_reply.as_ref()?.body.as_deref()
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
        Self::new(kind, e.message)
    }
}

impl From<ModelError> for ServeError {
    fn from(e: ModelError) -> Self {
        match e.kind {
            ModelErrorKind::Raised => Self::new(Kind::Model, e.message),
            ModelErrorKind::BadInput => Self::new(Kind::BadRequest, e.message),
            // Only error statuses are a model's to choose: 1xx-3xx (and nonsense) would
            // tell a client that a failed call worked, or redirect it.
            ModelErrorKind::Status(status @ 400..=499) => {
                Self::with_reply(Kind::BadRequest, e.message, status, e.body)
            }
            ModelErrorKind::Status(status @ 500..=599) => {
                Self::with_reply(Kind::Model, e.message, status, e.body)
            }
            ModelErrorKind::Status(_) => Self::new(Kind::Model, e.message),
        }
    }
}

impl ServeError {
    #[cold]
    fn with_reply(kind: Kind, message: String, status: u16, body: Option<Box<str>>) -> Self {
        Self {
            kind,
            message,
            model_reply: Some(Box::new(ModelReply { status, body })),
        }
    }
}

/// The gRPC code for an HTTP error status a model chose: the one its meaning has in gRPC
/// (as inferwire's own errors map), else INVALID_ARGUMENT for a 4xx, INTERNAL for a 5xx.
const fn grpc_code_of_status(status: u16) -> tonic::Code {
    match status {
        401 => tonic::Code::Unauthenticated,
        403 => tonic::Code::PermissionDenied,
        404 => tonic::Code::NotFound,
        408 | 504 => tonic::Code::DeadlineExceeded,
        413 | 429 => tonic::Code::ResourceExhausted,
        501 => tonic::Code::Unimplemented,
        503 => tonic::Code::Unavailable,
        500..=599 => tonic::Code::Internal,
        _ => tonic::Code::InvalidArgument,
    }
}

impl std::fmt::Display for ServeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ServeError {}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelErrorKind {
    /// The model raised: HTTP 500, gRPC INTERNAL.
    Raised,
    /// The model rejected its input (raised inferwire's BadRequest): 400 / INVALID_ARGUMENT.
    BadInput,
    /// The model raised an exception that carries its HTTP status, as Seldon's wrapper
    /// honours (`SeldonMicroserviceException(status_code=...)`, or a `status_code` and
    /// `to_dict()`): that status (4xx or 5xx; any other is answered 500) and the gRPC
    /// code nearest to it.
    Status(u16),
}

#[derive(Debug, Clone)]
pub struct ModelError {
    pub kind: ModelErrorKind,
    pub message: String,
    /// The REST body Seldon answers for this error (the exception's `to_dict()` as JSON),
    /// instead of inferwire's FAILURE message; only with `ModelErrorKind::Status`.
    pub body: Option<Box<str>>,
}

impl ModelError {
    /// The request was wrong for this model (400 / INVALID_ARGUMENT).
    pub fn bad_input(message: impl Into<String>) -> Self {
        Self {
            kind: ModelErrorKind::BadInput,
            message: message.into(),
            body: None,
        }
    }

    /// A graph operation the class does not define, worded as Seldon's
    /// SeldonNotImplementedError (400).
    #[cold]
    pub fn not_defined(operation: &str) -> Self {
        Self::bad_input(format!(
            "{operation} not defined: the model has no {}() method",
            operation.to_ascii_lowercase()
        ))
    }

    /// An operation this model does not have.
    #[cold]
    pub(crate) fn unsupported(operation: &str) -> Self {
        Self::bad_input(format!("this model does not implement {operation}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raised(status: u16, body: Option<&str>) -> ServeError {
        ServeError::from(ModelError {
            kind: ModelErrorKind::Status(status),
            message: "E: no".into(),
            body: body.map(Into::into),
        })
    }

    #[test]
    fn a_model_status_is_honoured_only_for_4xx_and_5xx() {
        let e = raised(404, Some(r#"{"a":1}"#));
        assert_eq!(
            (e.http_status(), e.grpc_code(), e.model_body()),
            (404, tonic::Code::NotFound, Some(r#"{"a":1}"#))
        );
        for (status, code) in [
            (418, tonic::Code::InvalidArgument),
            (501, tonic::Code::Unimplemented),
            (503, tonic::Code::Unavailable),
            (500, tonic::Code::Internal),
        ] {
            let e = raised(status, None);
            assert_eq!((e.http_status(), e.grpc_code()), (status, code));
        }
        for status in [0, 200, 302, 999] {
            let e = raised(status, Some("{}"));
            assert_eq!(
                (e.http_status(), e.grpc_code()),
                (500, tonic::Code::Internal)
            );
            assert_eq!((e.kind, e.model_body()), (Kind::Model, None));
        }
        assert_eq!(raised(400, None).to_status().message(), "E: no");
    }
}
