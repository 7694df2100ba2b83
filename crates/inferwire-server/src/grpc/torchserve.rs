//! TorchServe's gRPC inference API (`org.pytorch.serve.grpc.inference.
//! InferenceAPIsService`, `inferwire torchserve` only): `Ping`, `Predictions`,
//! `StreamPredictions` and `StreamPredictions2`. A `PredictionsRequest` becomes the V2
//! request TorchServe's REST route makes (`rest/torchserve.rs`), except that its named
//! inputs are the request's BYTES inputs, one each, and its `grpc` parameter says so:
//! the handler gets `{"data": ..., ...}` as TorchServe's gRPC path gives it. Its reply is
//! the output `body`: one element (a whole reply), or the handler's intermediate pieces
//! and then its reply when the request asked for them (`pieces`), each a message of
//! `StreamPredictions`. Errors are TorchServe's gRPC answers: the code its frontend
//! gives, the message with the Java exception's name after a newline.
use std::pin::Pin;
use std::sync::Arc;

use bytes::Bytes;
use inferwire_codec::protocol::v2::{InferInput, InferRequest, Parameters};
use inferwire_codec::{Tensor, TensorData};
use serde_json::{Map, Value};
use tokio_stream::Stream;
use tonic::metadata::MetadataMap;
use tonic::{Code, Request, Response, Status, Streaming};

use super::generated_torchserve::inference::inference_ap_is_service_server::InferenceApIsService;
use super::generated_torchserve::inference::{
    PredictionResponse, PredictionsRequest, TorchServeHealthResponse,
};
use super::methods;
use super::timeout::client_timeout;
use crate::app::App;
use crate::dialect::TORCHSERVE_BODY as BODY;
use crate::error::{Kind, ServeError};
use crate::metrics::{Code as Answered, Encoding};
use crate::torchserve_keys::{Api, FAILED};

/// TorchServe's headers for a StreamPredictions2 request's sequence (its defaults of
/// `ts_header_key_sequence_id`/`_start`).
const SEQUENCE_ID: &str = "ts_request_sequence_id";
const SEQUENCE_START: &str = "ts_request_sequence_start";
/// Replies a StreamPredictions2 client may fall behind by before requests wait.
const STREAM_BUFFER: usize = 16;

#[derive(Clone)]
pub struct TorchServeService(pub Arc<App>);

type Replies = Pin<Box<dyn Stream<Item = Result<PredictionResponse, Status>> + Send>>;

/// With TorchServe's token authorization on, a call without the inference key is
/// refused as TorchServe's interceptor refuses it.
pub(super) fn admit(app: &App, metadata: &MetadataMap) -> Result<(), Status> {
    let Some(keys) = &app.config.torchserve_keys else {
        return Ok(());
    };
    let header = metadata
        .get(http::header::AUTHORIZATION.as_str())
        .and_then(|v| v.to_str().ok());
    if keys.admits(header, Api::Inference) {
        Ok(())
    } else {
        Err(Status::permission_denied(FAILED))
    }
}

#[tonic::async_trait]
impl InferenceApIsService for TorchServeService {
    async fn ping(&self, req: Request<()>) -> Result<Response<TorchServeHealthResponse>, Status> {
        admit(&self.0, req.metadata())?;
        let status = if self.0.is_ready() {
            "Healthy"
        } else {
            "Unhealthy"
        };
        // TorchServe's pretty-printed StatusResponse, answered OK either way.
        Ok(Response::new(TorchServeHealthResponse {
            health: format!("{{\n  \"status\": \"{status}\"\n}}"),
        }))
    }

    async fn predictions(
        &self,
        req: Request<PredictionsRequest>,
    ) -> Result<Response<PredictionResponse>, Status> {
        admit(&self.0, req.metadata())?;
        let deadline = client_timeout(req.metadata());
        let rpc = &methods::TS_PREDICTIONS;
        let mut replies = predict(&self.0, req.into_inner(), deadline, rpc, false, Map::new())
            .await
            .map_err(|e| status(&e.0, &e.1))?;
        let prediction = replies.pop().unwrap_or_default();
        Ok(Response::new(PredictionResponse {
            prediction,
            ..Default::default()
        }))
    }

    type StreamPredictionsStream = Replies;

    /// The handler's intermediate responses, then its reply (each as the handler sent
    /// it, once the handler has returned).
    async fn stream_predictions(
        &self,
        req: Request<PredictionsRequest>,
    ) -> Result<Response<Replies>, Status> {
        admit(&self.0, req.metadata())?;
        let deadline = client_timeout(req.metadata());
        let pieces = predict(
            &self.0,
            req.into_inner(),
            deadline,
            &methods::TS_STREAM_PREDICTIONS,
            true,
            Map::new(),
        )
        .await
        .map_err(|e| status(&e.0, &e.1))?;
        let replies = pieces.into_iter().map(|prediction| {
            Ok(PredictionResponse {
                prediction,
                ..Default::default()
            })
        });
        Ok(Response::new(Box::pin(tokio_stream::iter(replies))))
    }

    type StreamPredictions2Stream = Replies;

    /// Each request in turn, its replies before the next request's; a failed request is
    /// answered with a `status` and the stream goes on, as TorchServe's.
    async fn stream_predictions2(
        &self,
        req: Request<Streaming<PredictionsRequest>>,
    ) -> Result<Response<Replies>, Status> {
        admit(&self.0, req.metadata())?;
        let app = self.0.clone();
        let mut incoming = req.into_inner();
        let (tx, rx) = tokio::sync::mpsc::channel(STREAM_BUFFER);
        tokio::spawn(async move {
            while let Ok(Some(request)) = incoming.message().await {
                for reply in sequence_replies(&app, request).await {
                    if tx.send(Ok(reply)).await.is_err() {
                        return;
                    }
                }
            }
        });
        Ok(Response::new(Box::pin(
            tokio_stream::wrappers::ReceiverStream::new(rx),
        )))
    }
}

/// One StreamPredictions2 request's replies: its pieces, or its failure as a `status`.
async fn sequence_replies(app: &App, request: PredictionsRequest) -> Vec<PredictionResponse> {
    let id = request.sequence_id.clone().unwrap_or_default();
    let starts = request
        .input
        .get(SEQUENCE_START)
        .is_some_and(|v| v.eq_ignore_ascii_case(b"true"));
    let failed = |code: Code, message: String, reason: &str| {
        vec![PredictionResponse {
            prediction: Bytes::new(),
            sequence_id: None,
            status: Some(rich_status(code, message, reason)),
        }]
    };
    if id.is_empty() && !starts {
        return failed(
            Code::Internal,
            "Parameter sequenceId is required.".into(),
            "BadRequestException.()",
        );
    }
    let mut headers = Map::new();
    let id = if id.is_empty() {
        headers.insert(SEQUENCE_START.into(), Value::String("true".into()));
        format!("ts-seq-{}", crate::uuid::v4())
    } else {
        id
    };
    headers.insert(SEQUENCE_ID.into(), Value::String(id));
    match predict(
        app,
        request,
        None,
        &methods::TS_STREAM_PREDICTIONS2,
        true,
        headers,
    )
    .await
    {
        Ok(pieces) => pieces
            .into_iter()
            .map(|prediction| PredictionResponse {
                prediction,
                ..Default::default()
            })
            .collect(),
        Err((e, name)) => {
            let s = status(&e, &name);
            let (message, reason) = s
                .message()
                .split_once('\n')
                .map_or((s.message(), ""), |(m, r)| (m, r));
            failed(s.code(), message.to_owned(), reason)
        }
    }
}

/// A failure and the model name it is about.
pub(super) type Failure = (ServeError, String);

/// Runs one `PredictionsRequest`: the handler's replies (its pieces, then its reply,
/// when `pieces` asks for them; else the reply alone), with `headers` as its request
/// headers.
pub(super) async fn predict(
    app: &App,
    req: PredictionsRequest,
    client: Option<std::time::Duration>,
    rpc: &'static methods::Rpc,
    pieces: bool,
    headers: Map<String, Value>,
) -> Result<Vec<Bytes>, Failure> {
    let mut obs = rpc.observe();
    obs.encoding = Encoding::Bytes;
    let name = req.model_name.clone();
    let run = async {
        if req.model_name.is_empty() {
            return Err(ServeError::new(
                Kind::BadRequest,
                "Parameter model_name is required.",
            ));
        }
        let model = app.model(&req.model_name, &req.model_version).await?;
        obs.model = model.slot;
        obs.id = crate::uuid::v4();
        let id = if obs.id.is_empty() {
            crate::uuid::v4()
        } else {
            obs.id.clone()
        };
        let request = to_v2(req, id, pieces, headers);
        let deadline = app.deadline(obs.start, client);
        let response = crate::dataplane::infer_whole(app, &model, request, deadline).await?;
        replies(response.outputs)
    };
    let result = run.await;
    let code = match &result {
        Ok(_) => Answered::Grpc(Code::Ok),
        Err(e) => Answered::Grpc(status(e, &name).code()),
    };
    obs.finish(app, code, rpc.name());
    result.map_err(|e| (e, name))
}

/// The V2 request a `PredictionsRequest` is: one BYTES input per named input, in name
/// order, and the parameters the REST route sends (no content type or query; TorchServe
/// hands a gRPC request's handler only its sequence headers), `grpc` and `pieces`.
fn to_v2(
    req: PredictionsRequest,
    id: String,
    pieces: bool,
    headers: Map<String, Value>,
) -> InferRequest {
    let mut parameters = Parameters::new();
    parameters.insert("content_type".into(), Value::String(String::new()));
    parameters.insert("headers".into(), Value::Object(headers));
    parameters.insert("query".into(), Value::Array(Vec::new()));
    parameters.insert("grpc".into(), Value::Bool(true));
    if pieces {
        parameters.insert("pieces".into(), Value::Bool(true));
    }
    let inputs = req
        .input
        .into_iter()
        .map(|(name, data)| InferInput {
            name,
            tensor: Tensor {
                shape: vec![1],
                data: TensorData::Bytes(vec![data]),
            },
            parameters: Parameters::new(),
        })
        .collect();
    InferRequest {
        id,
        parameters,
        inputs,
        outputs: Vec::new(),
    }
}

/// The `body` output's elements: the handler's pieces, then its reply.
fn replies(
    outputs: Vec<inferwire_codec::protocol::v2::InferOutput>,
) -> Result<Vec<Bytes>, ServeError> {
    outputs
        .into_iter()
        .find(|o| o.name == BODY)
        .and_then(|o| match o.tensor.data {
            TensorData::Bytes(b) if !b.is_empty() => Some(b),
            _ => None,
        })
        .ok_or_else(|| {
            ServeError::new(
                Kind::Internal,
                "the model's reply has no body (a TorchServe handler model answers one)",
            )
        })
}

/// TorchServe's status for a failed call about model `name`: the code its frontend
/// answers, the message with the Java exception's name after a newline (grpc-java's
/// `augmentDescription`).
fn status(e: &ServeError, name: &str) -> Status {
    if e.model_reply.is_some() {
        // The handler's failure: the message of TorchServe's error body.
        let body = e
            .model_body()
            .and_then(|b| serde_json::from_str::<Value>(b).ok());
        let message = body
            .as_ref()
            .and_then(|b| b.get("message"))
            .and_then(Value::as_str)
            .unwrap_or(&e.message);
        return Status::new(
            http_code(e.http_status()),
            format!("{message}\norg.pytorch.serve.http.InternalServerException"),
        );
    }
    let (code, reason) = match e.kind {
        Kind::BadRequest if e.message == "Parameter model_name is required." => {
            (Code::Internal, "BadRequestException.()")
        }
        Kind::NotFound if e.message.starts_with("Model version") => (
            Code::Internal,
            "org.pytorch.serve.archive.model.ModelVersionNotFoundException",
        ),
        Kind::NotFound => (
            Code::Internal,
            "org.pytorch.serve.archive.model.ModelNotFoundException",
        ),
        Kind::Overloaded | Kind::Unavailable | Kind::ShuttingDown => {
            let message = format!(
                "Model \"{name}\" has no worker to serve inference request. Please use scale \
                 workers API to add workers. If this is a sequence inference, please check if \
                 it is closed, or expired; or exceeds maxSequenceJobQueueSize"
            );
            return Status::new(
                Code::Internal,
                format!("{message}\nInternalServerException.()"),
            );
        }
        Kind::Deadline => return e.to_status(),
        _ => (
            http_code(e.http_status()),
            "org.pytorch.serve.http.InternalServerException",
        ),
    };
    Status::new(code, format!("{}\n{reason}", e.message))
}

/// TorchServe's gRPC code for an HTTP status (its `GRPCUtils.getGRPCStatusCode`).
fn http_code(status: u16) -> Code {
    match status {
        400 => Code::InvalidArgument,
        401 => Code::Unauthenticated,
        403 => Code::PermissionDenied,
        404 => Code::NotFound,
        409 => Code::Aborted,
        413 | 429 => Code::ResourceExhausted,
        416 => Code::OutOfRange,
        499 => Code::Cancelled,
        504 => Code::DeadlineExceeded,
        501 => Code::Unimplemented,
        503 => Code::Unavailable,
        s if (200..300).contains(&s) => Code::Ok,
        s if (400..500).contains(&s) => Code::FailedPrecondition,
        s if (500..600).contains(&s) => Code::Internal,
        _ => Code::Unknown,
    }
}

/// `google.rpc.ErrorInfo`'s `reason` (the one field TorchServe sets).
#[derive(Clone, PartialEq, prost::Message)]
struct ErrorInfo {
    #[prost(string, tag = "1")]
    reason: String,
}

/// A `google.rpc.Status` with one `ErrorInfo` naming the failure, as TorchServe answers a
/// failed StreamPredictions2 request.
fn rich_status(
    code: Code,
    message: String,
    reason: &str,
) -> super::generated_torchserve::google::rpc::Status {
    use prost::Message;
    let info = ErrorInfo {
        reason: reason.to_owned(),
    };
    super::generated_torchserve::google::rpc::Status {
        code: code as i32,
        message,
        details: vec![prost_types::Any {
            type_url: "type.googleapis.com/google.rpc.ErrorInfo".into(),
            value: info.encode_to_vec(),
        }],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_are_answered_as_torchserve_s_frontend_answers_them() {
        let missing = ServeError::new(Kind::NotFound, "Model not found: m");
        let s = status(&missing, "m");
        assert_eq!(s.code(), Code::Internal);
        assert_eq!(
            s.message(),
            "Model not found: m\norg.pytorch.serve.archive.model.ModelNotFoundException"
        );
        let version = ServeError::new(
            Kind::NotFound,
            "Model version: 9 does not exist for model: m",
        );
        assert!(status(&version, "m")
            .message()
            .ends_with("\norg.pytorch.serve.archive.model.ModelVersionNotFoundException"));
        let full = status(&ServeError::new(Kind::Overloaded, "queue full"), "m");
        assert_eq!(full.code(), Code::Internal);
        assert!(full.message().starts_with("Model \"m\" has no worker"));
        assert_eq!(http_code(503), Code::Unavailable);
        assert_eq!(http_code(507), Code::Internal);
        assert_eq!(http_code(418), Code::FailedPrecondition);
    }

    #[test]
    fn named_inputs_become_bytes_inputs_in_name_order() {
        let mut req = PredictionsRequest {
            model_name: "m".into(),
            ..Default::default()
        };
        req.input.insert("data".into(), Bytes::from_static(b"x"));
        req.input.insert("b".into(), Bytes::from_static(b"y"));
        let v2 = to_v2(req, "id".into(), false, Map::new());
        let names: Vec<&str> = v2.inputs.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(names, ["b", "data"]);
        assert_eq!(v2.parameters["grpc"], Value::Bool(true));
        assert!(!v2.parameters.contains_key("pieces"));
    }
}
