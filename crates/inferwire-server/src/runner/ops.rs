//! The operations a runner runs, one type each with its answer's type, so that the
//! queue, the inline path and the batcher hand every caller the answer of the operation
//! it asked for.
use std::borrow::Cow;

use inferwire_codec::protocol::seldon::reply::Output;
use inferwire_codec::protocol::seldon::{json as seldon_json, Feedback, Metric, SeldonMessage};
use inferwire_codec::protocol::v2::InferRequest;
use serde_json::Value;

use super::pool::{Queued, Work};
use crate::model::{seldon_of, Answer, Inferred, Model, ModelError, Prediction};

/// One call of a model method.
pub trait Op: Send + Sized + 'static {
    type Output: Send + 'static;
    /// With batching on: whether the model threads may join this call with others.
    const BATCHABLE: bool = false;
    /// Whether it is an inference, counted by the statistics extension (`stats.rs`).
    const INFERENCE: bool = false;

    fn run(self, model: &dyn Model) -> Result<Self::Output, ModelError>;

    /// The model's own metrics given with the answer (Seldon's `metrics()`).
    fn custom(_output: &Self::Output) -> Cow<'_, [Metric]> {
        Cow::Borrowed(&[])
    }

    /// How this call waits in the model threads' queue: the batchable operations each
    /// have their own variant (no allocation); the others are boxed.
    fn queued(work: Work<Self>) -> Queued {
        Queued::Alone(Box::new(work))
    }
}

/// A reply's metrics: a message's, or a low-level method's dict's own `meta.metrics`,
/// which count as under Seldon's wrapper (ones it cannot read are left uncounted; the
/// reply still goes out as it is).
fn prediction_metrics(output: &Prediction) -> Cow<'_, [Metric]> {
    match output {
        Prediction::Message(m) => Cow::Borrowed(&m.meta.metrics),
        Prediction::Raw(Output::Json(v)) => {
            Cow::Owned(seldon_json::metrics_of(v).unwrap_or_default())
        }
        Prediction::Raw(_) => Cow::Borrowed(&[]),
    }
}

pub struct Predict(pub SeldonMessage);

impl Op for Predict {
    type Output = Prediction;
    const BATCHABLE: bool = true;
    const INFERENCE: bool = true;

    fn run(self, model: &dyn Model) -> Result<Prediction, ModelError> {
        seldon_of(model).predict(self.0)
    }

    fn custom(output: &Prediction) -> Cow<'_, [Metric]> {
        prediction_metrics(output)
    }

    fn queued(work: Work<Self>) -> Queued {
        Queued::Predict(work)
    }
}

/// Several requests' rows in one message (`batch::join`); only the batcher makes these.
pub struct PredictBatch(pub SeldonMessage);

impl Op for PredictBatch {
    type Output = Answer;
    const INFERENCE: bool = true;

    fn run(self, model: &dyn Model) -> Result<Answer, ModelError> {
        seldon_of(model).predict_batch(self.0)
    }

    fn custom(output: &Answer) -> Cow<'_, [Metric]> {
        Cow::Borrowed(&output.metrics)
    }
}

pub struct Infer(pub InferRequest);

impl Op for Infer {
    type Output = Inferred;
    const BATCHABLE: bool = true;
    const INFERENCE: bool = true;

    fn run(self, model: &dyn Model) -> Result<Inferred, ModelError> {
        model.infer(self.0)
    }

    fn queued(work: Work<Self>) -> Queued {
        Queued::Infer(work)
    }
}

/// A batch of requests handed to the model as a list (`Model::infer_many`); only the
/// batcher makes these.
pub struct InferMany(pub Vec<InferRequest>);

impl Op for InferMany {
    type Output = Vec<Result<Inferred, ModelError>>;
    const INFERENCE: bool = true;

    fn run(self, model: &dyn Model) -> Result<Self::Output, ModelError> {
        let n = self.0.len();
        let answers = model.infer_many(self.0)?;
        if answers.len() != n {
            return Err(ModelError {
                kind: crate::error::ModelErrorKind::Raised,
                message: format!(
                    "the model answered {} responses for a batch of {n} requests",
                    answers.len()
                ),
                body: None,
            });
        }
        Ok(answers)
    }
}

pub struct Metadata;

impl Op for Metadata {
    type Output = Value;

    fn run(self, model: &dyn Model) -> Result<Value, ModelError> {
        model.metadata()
    }
}

/// A request on one of the model's own routes (`Model::custom`).
pub struct Custom {
    pub method: String,
    pub path: String,
    pub body: bytes::Bytes,
}

impl Op for Custom {
    type Output = bytes::Bytes;

    fn run(self, model: &dyn Model) -> Result<bytes::Bytes, ModelError> {
        model.custom(&self.method, &self.path, self.body)
    }
}

/// Boxed: rare, and three messages large.
pub struct SendFeedback(pub Box<Feedback>);

impl Op for SendFeedback {
    type Output = SeldonMessage;

    fn run(self, model: &dyn Model) -> Result<SeldonMessage, ModelError> {
        seldon_of(model).send_feedback(*self.0)
    }

    fn custom(output: &SeldonMessage) -> Cow<'_, [Metric]> {
        Cow::Borrowed(&output.meta.metrics)
    }
}

pub struct HealthStatus;

impl Op for HealthStatus {
    type Output = SeldonMessage;

    fn run(self, model: &dyn Model) -> Result<SeldonMessage, ModelError> {
        seldon_of(model).health_status()
    }

    fn custom(output: &SeldonMessage) -> Cow<'_, [Metric]> {
        Cow::Borrowed(&output.meta.metrics)
    }
}

/// The operations of Seldon's other graph component types, each on its own trait method.
macro_rules! component_op {
    ($(#[$doc:meta])* $name:ident($input:ty) => $method:ident) => {
        $(#[$doc])*
        pub struct $name(pub $input);

        impl Op for $name {
            type Output = Prediction;

            fn run(self, model: &dyn Model) -> Result<Prediction, ModelError> {
                seldon_of(model).$method(self.0)
            }

            fn custom(output: &Prediction) -> Cow<'_, [Metric]> {
                prediction_metrics(output)
            }
        }
    };
}

component_op!(
    /// A TRANSFORMER's `transform_input`.
    TransformInput(SeldonMessage) => transform_input
);
component_op!(
    /// An OUTPUT_TRANSFORMER's `transform_output`.
    TransformOutput(SeldonMessage) => transform_output
);
component_op!(
    /// A ROUTER's `route`.
    Route(SeldonMessage) => route
);
component_op!(
    /// A COMBINER's `aggregate` over its children's messages.
    Aggregate(Vec<SeldonMessage>) => aggregate
);

/// Starts a streamed inference: what will produce its pieces (no piece yet). It counts
/// as one inference in the statistics (as Triton counts a decoupled request; the time
/// is its start's), so that perf_analyzer's `--streaming` finds the model's counts.
pub struct StartStream(pub InferRequest);

impl Op for StartStream {
    type Output = crate::model::Pieces;
    const INFERENCE: bool = true;

    fn run(self, model: &dyn Model) -> Result<crate::model::Pieces, ModelError> {
        model.infer_stream(self.0)
    }
}
