//! Dialects: where V2 servers answer the same protocol differently (a not-found message,
//! a status code, an id made for a request without one, headers on a reply), whose
//! answers inferwire gives. A dialect is one type implementing [`Dialect`]; the request
//! path consults it at entry (model lookup, decoding, what the model is handed) and at
//! exit (reply headers, error wording, the shape of replies), the metrics page asks it for
//! its own series, and nothing asks which dialect it is. `DIALECTS` is the registry the `v2_dialect` setting picks from:
//! adding a dialect is a module here and a row there.
mod mlserver;
mod torchserve;
mod triton;

use std::fmt::Debug;
use std::sync::Arc;

use http::HeaderMap;
use inferwire_codec::protocol::v2::{InferRequest, InferResponse};
use inferwire_codec::CodecError;
use serde_json::Value;

use crate::error::{Kind, ServeError};
use crate::metrics::{Metrics, ModelSeries};
use crate::model_config::Mismatch;

pub use mlserver::{validation_body, Mlserver};
pub use torchserve::{TorchServe, BODY as TORCHSERVE_BODY};
pub use triton::Triton;

/// What a model lookup that found nothing asked for, and what the server has of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Missing<'a> {
    pub name: &'a str,
    /// "" when the request named no version.
    pub version: &'a str,
    pub absent: Absent,
}

impl<'a> Missing<'a> {
    /// A name the server has nothing of (a repository call's).
    pub fn model(name: &'a str) -> Self {
        Self {
            name,
            version: "",
            absent: Absent::Model,
        }
    }
}

/// What the server has of a model it could not serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Absent {
    /// Nothing by that name, loaded or in the repository.
    Model,
    /// The model is loaded, not at the version asked for.
    Version,
    /// The repository has it; it is not loaded (unloaded, or its load failed).
    NotLoaded,
}

/// One server's answers where V2 servers differ. Every method has the default dialect's
/// answer (Triton's and KServe's, with inferwire's own messages), so a dialect writes
/// only where it differs.
pub trait Dialect: Send + Sync + Debug + 'static {
    /// The name the `v2_dialect` setting gives it.
    fn name(&self) -> &'static str;

    /// Whether model metadata answers the versions and the tensors' `parameters` as the
    /// model's own metadata writes them (MLServer), rather than the served version alone.
    fn metadata_as_written(&self) -> bool {
        false
    }

    /// A model lookup that failed (`e`, a 404 for an unknown model or version, or the
    /// error of a load on request): the dialect's words for it.
    fn not_found(&self, e: ServeError, _missing: &Missing<'_>) -> ServeError {
        e
    }

    /// A repository load of a name the repository does not have: the dialect's answer,
    /// or `None` to let the repository answer (Triton's 400).
    fn unknown_load(&self, _name: &str) -> Option<ServeError> {
        None
    }

    /// A repository load that failed (`e`, its message `models::load_failed` and the
    /// reason): the dialect's words for it.
    fn load_failed(&self, e: ServeError, _name: &str) -> ServeError {
        e
    }

    /// Whether a repository unload may take the default model (the one the Seldon
    /// protocol's routes answer), as MLServer lets every model go.
    fn unloads_default(&self) -> bool {
        false
    }

    /// What of the request's headers (REST) or metadata (gRPC) the model is handed, as
    /// `parameters.headers`; `None`: nothing (and nothing copied).
    fn headers_for_model(&self, _headers: &HeaderMap) -> Option<Value> {
        None
    }

    /// A decoded request as the model gets it: an id made, the headers added.
    fn prepare(&self, _request: &mut InferRequest, _headers: Option<Value>) {}

    /// A request on a stream that came without an id: the id it gets (`None`: none).
    fn stream_request_id(&self) -> Option<String> {
        None
    }

    /// A REST inference body for `model` that does not decode (`e.cause` has the facts
    /// behind some errors, for a dialect that words them its own way).
    fn invalid_rest(&self, e: CodecError, _model: &str) -> ServeError {
        e.into()
    }

    /// A gRPC inference message for `model` that does not decode.
    fn invalid_grpc(&self, e: CodecError, _model: &str) -> ServeError {
        e.into()
    }

    /// A request that does not match its model's configuration (`model_config`).
    fn mismatch(&self, m: &Mismatch, _model: &str, _request_id: &str) -> ServeError {
        ServeError::new(Kind::BadRequest, m.to_string())
    }

    /// Whether a gRPC inference reply carries its outputs in `raw_output_contents`;
    /// `asked`: whether the request sent raw contents (KServe answers in kind).
    fn raw_grpc_reply(&self, asked: bool) -> bool {
        asked
    }

    /// The headers (gRPC: trailing metadata) of an inference reply; the dialect may take
    /// them out of the response's parameters.
    fn reply_headers(&self, _response: &mut InferResponse) -> Vec<(String, String)> {
        Vec::new()
    }

    /// How gRPC `ModelStreamInfer` replies are shaped.
    fn stream_reply(&self) -> StreamReply {
        StreamReply::Triton
    }

    /// The dialect's own series at the top of the metrics page, from the loaded models'
    /// counts and the server's (`metrics`); `None`: inferwire's alone.
    fn metrics_text(&self, _models: &[ModelSeries], _metrics: &Metrics) -> Option<String> {
        None
    }
}

/// The two shapes of `ModelStreamInfer` replies clients expect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StreamReply {
    /// Triton's `ModelStreamInferResponse`: errors in the reply, final-response flags.
    #[default]
    Triton,
    /// MLServer's bare `ModelInferResponse`: a failed request ends the call.
    Mlserver,
}

/// Triton's and KServe's answers (and inferwire's own messages): the default dialect.
#[derive(Debug, Clone, Copy, Default)]
pub struct Inferwire;

impl Dialect for Inferwire {
    fn name(&self) -> &'static str {
        "inferwire"
    }
}

/// The registry: each dialect's name (the `v2_dialect` setting's value) and how it is
/// made for a server named `server` (what `GET /v2` says it is).
type Make = fn(server: &str) -> Arc<dyn Dialect>;
const DIALECTS: [(&str, Make); 4] = [
    ("inferwire", |_| Arc::new(Inferwire)),
    ("mlserver", |server| Arc::new(Mlserver::new(server))),
    ("triton", |_| Arc::new(Triton)),
    ("torchserve", |_| Arc::new(TorchServe)),
];

/// The dialect named `name`; `None` for a name the registry lacks.
pub fn by_name(name: &str, server: &str) -> Option<Arc<dyn Dialect>> {
    DIALECTS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, make)| make(server))
}

/// The registry's names, for error messages.
pub fn names() -> impl Iterator<Item = &'static str> {
    DIALECTS.iter().map(|(n, _)| *n)
}

/// A dialect with the two rules a setting may change whatever the dialect
/// (`v2_invalid_status`, `grpc_stream_reply`): everything else is the dialect's own.
#[derive(Debug)]
pub struct Tuned {
    pub base: Arc<dyn Dialect>,
    /// A REST inference body that does not decode is 422 (MLServer's answer), not 400.
    pub invalid_422: bool,
    pub stream_reply: StreamReply,
}

impl Dialect for Tuned {
    fn name(&self) -> &'static str {
        self.base.name()
    }
    fn not_found(&self, e: ServeError, missing: &Missing<'_>) -> ServeError {
        self.base.not_found(e, missing)
    }
    fn unknown_load(&self, name: &str) -> Option<ServeError> {
        self.base.unknown_load(name)
    }
    fn load_failed(&self, e: ServeError, name: &str) -> ServeError {
        self.base.load_failed(e, name)
    }
    fn unloads_default(&self) -> bool {
        self.base.unloads_default()
    }
    fn metadata_as_written(&self) -> bool {
        self.base.metadata_as_written()
    }
    fn headers_for_model(&self, headers: &HeaderMap) -> Option<Value> {
        self.base.headers_for_model(headers)
    }
    fn prepare(&self, request: &mut InferRequest, headers: Option<Value>) {
        self.base.prepare(request, headers)
    }
    fn stream_request_id(&self) -> Option<String> {
        self.base.stream_request_id()
    }
    fn invalid_rest(&self, e: CodecError, model: &str) -> ServeError {
        let mut e = self.base.invalid_rest(e, model);
        if self.invalid_422 && e.kind == Kind::BadRequest {
            e.kind = Kind::Unprocessable;
        }
        e
    }
    fn invalid_grpc(&self, e: CodecError, model: &str) -> ServeError {
        self.base.invalid_grpc(e, model)
    }
    fn mismatch(&self, m: &Mismatch, model: &str, request_id: &str) -> ServeError {
        self.base.mismatch(m, model, request_id)
    }
    fn raw_grpc_reply(&self, asked: bool) -> bool {
        self.base.raw_grpc_reply(asked)
    }
    fn reply_headers(&self, response: &mut InferResponse) -> Vec<(String, String)> {
        self.base.reply_headers(response)
    }
    fn stream_reply(&self) -> StreamReply {
        self.stream_reply
    }
    fn metrics_text(&self, models: &[ModelSeries], metrics: &Metrics) -> Option<String> {
        self.base.metrics_text(models, metrics)
    }
}

/// The default dialect, for configs built in Rust (tests, embedding).
pub fn default() -> Arc<dyn Dialect> {
    Arc::new(Inferwire)
}
