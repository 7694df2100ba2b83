//! The contract between the server and a model runtime: one method per operation, each
//! with its own request and answer types. The server calls them through
//! `runner::Runner`, which bounds how many run and wait.
use std::collections::BTreeMap;

use inferwire_codec::protocol::seldon::reply::{predict_payload, Output};
use inferwire_codec::protocol::seldon::{Feedback, Meta, Metric, Payload, SeldonMessage};
use inferwire_codec::protocol::v2::{InferOutput, InferRequest, Parameters};
use serde_json::{json, Map, Value};

// Errors are the error module's; named here too, as part of the contract.
pub use crate::error::{ModelError, ModelErrorKind};

/// What `predict` answered.
// `Message` is the common case and the largest: boxing it would cost an allocation per request.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Prediction {
    /// A complete message, encoded in the request's protocol.
    Message(SeldonMessage),
    /// `predict_raw`'s result, returned as the model gave it.
    Raw(Output),
}

/// What a V2 inference gave: the outputs, and the response's own parameters.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Inferred {
    pub outputs: Vec<InferOutput>,
    pub parameters: Parameters,
}

impl From<Vec<InferOutput>> for Inferred {
    fn from(outputs: Vec<InferOutput>) -> Self {
        Self {
            outputs,
            parameters: Parameters::new(),
        }
    }
}

/// What `predict` returned, with the tags and metrics the model gave alongside.
#[derive(Debug, Default)]
pub struct Answer {
    pub output: Option<Output>,
    /// Column names for a 2-D output (the model's `class_names`, or `t:0..`).
    pub names: Vec<String>,
    pub tags: Map<String, Value>,
    pub metrics: Vec<Metric>,
    /// Set by a model that is a whole inference graph: the routes its routers took and
    /// the nodes it ran (Seldon's `meta.routing` and `meta.requestPath`).
    pub routing: BTreeMap<String, i32>,
    pub request_path: BTreeMap<String, String>,
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
                routing: self.routing,
                request_path: self.request_path,
                ..Meta::default()
            },
            payload,
        }
    }
}

/// What produces a stream's pieces.
pub enum Pieces {
    /// An iterator the runner advances on a thread of its own, one piece per call, each
    /// call holding a model slot as any model call does (a Python generator).
    Blocking(Box<dyn BlockingPieces>),
    /// A producer that runs by itself (a Python async generator on its event loop) and
    /// sends its pieces into the sender it is given; dropping the sender ends the stream.
    Driven(Box<dyn FnOnce(crate::stream::Sender) + Send>),
}

/// A blocking iterator of pieces.
pub trait BlockingPieces: Send {
    /// The next piece; None when the model has no more.
    fn next(&mut self) -> Option<crate::stream::Piece>;

    /// Ends the iterator early: the reader has gone or a limit was reached (a Python
    /// generator sees `GeneratorExit` at its `yield`).
    fn close(&mut self);
}

/// The core's contract with a model: tensors in, tensors out. A model answers a V2
/// inference request (`infer`) and may stream its answer, give metadata and serve routes
/// of its own. Seldon's message-level operations are an adapter
/// above this (`SeldonOps`, reached through `seldon()`), beside the other ways a model is
/// written (MLServer's `MLModel`, MLflow, the library runtimes, native trees), which the
/// runtimes that build them adapt onto this same contract.
///
/// The methods run on the I/O thread that received the request or on a model thread
/// (see `runner`), never on two threads at once unless the runtime allows it. A new
/// operation is one more method here with a default, and one more `Op` for the runner.
pub trait Model: Send + Sync + 'static {
    /// Whether this stands in for a default model the server does not have (it is then
    /// not listed among the models served).
    fn is_placeholder(&self) -> bool {
        false
    }

    /// A V2 inference request: every output the model produced, in its order, and the
    /// parameters the model gives the response itself (an MLServer model's
    /// `InferenceResponse.parameters`).
    fn infer(&self, _request: InferRequest) -> Result<Inferred, ModelError> {
        Err(ModelError::unsupported("V2 inference"))
    }

    /// Whether the model answers in pieces (`infer_stream`); one that does not answers a
    /// streamed request with one piece, its `infer`.
    fn streams(&self) -> bool {
        false
    }

    /// A V2 inference answered piece by piece: what produces the pieces. Called only
    /// when `streams()`; runs no model code beyond starting the stream.
    fn infer_stream(&self, _request: InferRequest) -> Result<Pieces, ModelError> {
        Err(ModelError::unsupported("streamed inference"))
    }

    /// Whether the model takes a dynamic batch as a list of requests (`infer_many`), as
    /// Triton's Python backend hands `execute` its requests, instead of their rows joined
    /// into one request.
    fn infers_many(&self) -> bool {
        false
    }

    /// A batch of V2 requests, each answered on its own (called only when
    /// `infers_many()`): one result per request, in order. An `Err` fails them all.
    fn infer_many(
        &self,
        _requests: Vec<InferRequest>,
    ) -> Result<Vec<Result<Inferred, ModelError>>, ModelError> {
        Err(ModelError::unsupported("batches of requests"))
    }

    /// The model's own configuration, in Triton's JSON form of `ModelConfig` (a Triton
    /// repository's `config.pbtxt` as read); `None`: the server describes the model from
    /// its metadata and batching settings.
    fn config(&self) -> Option<Value> {
        None
    }

    /// The model's metadata, as JSON (Seldon's `init_metadata()`).
    fn metadata(&self) -> Result<Value, ModelError> {
        Ok(Value::Object(Map::new()))
    }

    /// REST routes the model serves itself, as (method, path): MLServer's
    /// `@custom_handler` methods. Asked once, when the model is loaded.
    fn custom_routes(&self) -> Vec<(String, String)> {
        Vec::new()
    }

    /// A request on one of `custom_routes`: its body (JSON) in, the reply's JSON out.
    fn custom(
        &self,
        _method: &str,
        _path: &str,
        _body: bytes::Bytes,
    ) -> Result<bytes::Bytes, ModelError> {
        Err(ModelError::unsupported("custom routes"))
    }

    /// Seldon's message-level operations, where the model has them; `None`: the Seldon
    /// protocol's routes answer that it has no `predict` (and Seldon's defaults for the
    /// rest).
    fn seldon(&self) -> Option<&dyn SeldonOps> {
        None
    }

    /// Called on each server thread when it starts, before any operation on it. A Python
    /// runtime creates the thread's interpreter state here, once, so that each call only
    /// takes the GIL instead of creating and destroying a thread state.
    fn thread_started(&self) {}

    /// Called on each server thread when it stops.
    fn thread_stopping(&self) {}
}

/// Seldon's message-level operations (the wrapper's component API), an adapter above
/// the tensor contract: only `predict` is required; the others default to Seldon's own
/// answers for a class that lacks them.
pub trait SeldonOps: Send + Sync {
    /// Seldon `predict` (or `predict_raw`) on one request.
    fn predict(&self, msg: SeldonMessage) -> Result<Prediction, ModelError>;

    /// `predict` on several requests' rows joined into one message (dynamic batching,
    /// `batch::join`): the answer before it is shaped into a reply, which the batcher
    /// cuts back into one reply per request. When it fails, each request runs alone
    /// through `predict`.
    fn predict_batch(&self, _msg: SeldonMessage) -> Result<Answer, ModelError> {
        Err(ModelError::unsupported("batched predict"))
    }

    /// Seldon `transform_input` (a TRANSFORMER): without one, Seldon answers the input
    /// unchanged, and so does this default.
    fn transform_input(&self, msg: SeldonMessage) -> Result<Prediction, ModelError> {
        Ok(Prediction::Message(msg))
    }

    /// Seldon `transform_output` (an OUTPUT_TRANSFORMER): the input unchanged by default.
    fn transform_output(&self, msg: SeldonMessage) -> Result<Prediction, ModelError> {
        Ok(Prediction::Message(msg))
    }

    /// Seldon `route` (a ROUTER): the reply's data is `[[child]]`, `-1` for every
    /// child. Seldon has no default: 400, "Route not defined".
    fn route(&self, _msg: SeldonMessage) -> Result<Prediction, ModelError> {
        Err(ModelError::not_defined("Route"))
    }

    /// Seldon `aggregate` (a COMBINER) over its children's messages. No default either.
    fn aggregate(&self, _msgs: Vec<SeldonMessage>) -> Result<Prediction, ModelError> {
        Err(ModelError::not_defined("Aggregate"))
    }

    /// Seldon `send_feedback`: the reply to a feedback message.
    fn send_feedback(&self, _feedback: Feedback) -> Result<SeldonMessage, ModelError> {
        Err(ModelError::unsupported("send_feedback"))
    }

    /// Seldon `health_status`.
    fn health_status(&self) -> Result<SeldonMessage, ModelError> {
        Ok(SeldonMessage {
            payload: Payload::Json(json!({"status": "ok"})),
            ..SeldonMessage::default()
        })
    }
}

/// The Seldon operations of a model that has none: no `predict`, Seldon's defaults for
/// the rest.
struct NoSeldon;

impl SeldonOps for NoSeldon {
    fn predict(&self, _msg: SeldonMessage) -> Result<Prediction, ModelError> {
        Err(ModelError::unsupported("Seldon's predict"))
    }
}

/// `model`'s Seldon operations, or Seldon's answers for a model without them.
pub fn seldon_of(model: &dyn Model) -> &dyn SeldonOps {
    model.seldon().unwrap_or(&NoSeldon)
}
