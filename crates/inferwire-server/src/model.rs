//! The contract between the server and a model runtime: the server hands it `Call`s
//! through `runner::Runner`, which bounds how many run and wait.
use inferwire_codec::protocol::seldon::reply::{predict_payload, Output};
use inferwire_codec::protocol::seldon::{Feedback, Meta, Metric, Payload, SeldonMessage};
use inferwire_codec::protocol::v2::{InferOutput, InferRequest};
use serde_json::{Map, Value};

/// One request for the model.
// `Predict` is the common case and the largest; see `Reply`.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Call {
    Predict(SeldonMessage),
    /// Several requests' rows joined into one message (`batch::Batch`): the runtime
    /// answers with `Reply::Answer`, which the batcher cuts back into one reply each.
    PredictBatch(SeldonMessage),
    /// Boxed: rare, and three messages large.
    Feedback(Box<Feedback>),
    HealthStatus,
    Metadata,
    /// A V2 inference request: the runtime answers with `Reply::Infer`.
    Infer(Box<InferRequest>),
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
    /// `predict`'s result before it is shaped into a reply (for `Call::PredictBatch`).
    Answer(Answer),
    /// A V2 request's outputs, every one the model produced, in its order.
    Infer(Vec<InferOutput>),
}

/// What `predict` returned, with the tags and metrics the model gave alongside.
#[derive(Debug, Default)]
pub struct Answer {
    pub output: Option<Output>,
    /// Column names for a 2-D output (the model's `class_names`, or `t:0..`).
    pub names: Vec<String>,
    pub tags: Map<String, Value>,
    pub metrics: Vec<Metric>,
}

impl Answer {
    /// The reply to one request: the output in the request's payload kind, and the
    /// request's tags with the model's added.
    pub fn into_message(
        self,
        request: &Payload,
        request_tags: &Map<String, Value>,
    ) -> SeldonMessage {
        let payload = match self.output {
            None => Payload::None,
            Some(output) => predict_payload(request, output, self.names),
        };
        let mut tags = request_tags.clone();
        tags.extend(self.tags);
        SeldonMessage {
            status: None,
            meta: Meta {
                tags,
                metrics: self.metrics,
                ..Meta::default()
            },
            payload,
        }
    }
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
