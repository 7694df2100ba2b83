//! The contract between the server and a model runtime: the server hands it `Call`s
//! through `runner::Runner`, which bounds how many run and wait.
use inferwire_codec::protocol::seldon::reply::Output;
use inferwire_codec::protocol::seldon::{Feedback, SeldonMessage};
use serde_json::Value;

/// One request for the model.
// `Predict` is the common case and the largest; see `Reply`.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Call {
    Predict(SeldonMessage),
    /// Boxed: rare, and three messages large.
    Feedback(Box<Feedback>),
    HealthStatus,
    Metadata,
}

/// What the model answered.
// `Message` is the common case and the largest: boxing it would cost an allocation per request.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Reply {
    /// A complete message, encoded in the request's protocol.
    Message(SeldonMessage),
    /// `predict_raw`'s result, returned as the model gave it.
    Raw(Output),
    /// Metadata, as JSON.
    Metadata(Value),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelErrorKind {
    /// The model raised: HTTP 500, gRPC INTERNAL.
    Raised,
    /// The model rejected its input (raised inferwire's BadRequest): 400 / INVALID_ARGUMENT.
    BadInput,
}

#[derive(Debug, Clone)]
pub struct ModelError {
    pub kind: ModelErrorKind,
    pub message: String,
}

/// A model runtime. `call` runs on the I/O thread that received the request (see
/// `runner`), never on two threads at once unless the runtime allows it.
pub trait Model: Send + Sync + 'static {
    fn call(&self, call: Call) -> Result<Reply, ModelError>;

    /// Called on each server thread when it starts, before any `call` on it. A Python
    /// runtime creates the thread's interpreter state here, once, so that each `call`
    /// only takes the GIL instead of creating and destroying a thread state.
    fn thread_started(&self) {}

    /// Called on each server thread when it stops.
    fn thread_stopping(&self) {}
}
