//! TorchServe's gRPC inference API (`org.pytorch.serve.grpc.inference.
//! InferenceAPIsService`, `inferwire torchserve` only): `Ping`, `Predictions`,
//! `StreamPredictions` and `StreamPredictions2`. A `PredictionsRequest` becomes the V2
//! request TorchServe's REST route makes (`rest/torchserve.rs`), except that its named
//! inputs are the request's BYTES inputs, one each, and its `grpc` parameter says so:
//! the handler gets `{"data": ..., ...}` as TorchServe's gRPC path gives it. Its answer
//! (`torchserve_pieces`) is the reply as a whole, or, on the streaming calls once the
//! handler sends an intermediate response, its pieces as it sends them: each a message of
//! `StreamPredictions`, its reply last. `Predictions` answers the pieces and the reply
//! joined. Errors are TorchServe's gRPC answers: the code its frontend gives, the message
//! with the Java exception's name after a newline.
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
use crate::error::{Kind, ServeError};
use crate::metrics::{Code as Answered, Encoding, Protocol};
use crate::stream::handoff::{Handoff, Raced};
use crate::torchserve_keys::{Api, FAILED};
use crate::torchserve_pieces as pieces;

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

    /// The handler's intermediate responses as it sends them, then its reply; a failure
    /// after them ends the call with its status.
    async fn stream_predictions(
        &self,
        req: Request<PredictionsRequest>,
    ) -> Result<Response<Replies>, Status> {
        admit(&self.0, req.metadata())?;
        let deadline = client_timeout(req.metadata());
        let name = req.get_ref().model_name.clone();
        let answer = run(
            &self.0,
            req.into_inner(),
            deadline,
            &methods::TS_STREAM_PREDICTIONS,
            true,
            Map::new(),
        )
        .await
        .map_err(|e| status(&e.0, &e.1))?;
        Ok(Response::new(match answer {
            Answer::Whole(parts) => Box::pin(tokio_stream::iter(parts.into_iter().map(|p| {
                Ok(PredictionResponse {
                    prediction: p,
                    ..Default::default()
                })
            }))),
            Answer::Stream(streamed) => Box::pin(PieceReplies {
                streamed,
                name,
                done: false,
            }),
        }))
    }

    type StreamPredictions2Stream = Replies;

    /// Each request in turn, its replies (as the handler sends them) before the next
    /// request's; a failed request is answered with a `status` and the stream goes on, as
    /// TorchServe's.
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
                let name = request.model_name.clone();
                let mut streamed = match sequence_replies(&app, request).await {
                    Ok(Answer::Stream(streamed)) => streamed,
                    Ok(Answer::Whole(replies)) => {
                        for reply in replies {
                            let reply = PredictionResponse {
                                prediction: reply,
                                ..Default::default()
                            };
                            if tx.send(Ok(reply)).await.is_err() {
                                return;
                            }
                        }
                        continue;
                    }
                    Err(failed) => {
                        if tx.send(Ok(failed)).await.is_err() {
                            return;
                        }
                        continue;
                    }
                };
                // The client gone, the stream goes with this task: the handler's next
                // piece finds its reader gone.
                loop {
                    let (reply, last) = match next_piece(&mut streamed, &name).await {
                        Ok((prediction, last)) => (
                            PredictionResponse {
                                prediction,
                                ..Default::default()
                            },
                            last,
                        ),
                        Err(s) => (failure(&s), true),
                    };
                    if tx.send(Ok(reply)).await.is_err() {
                        return;
                    }
                    if last {
                        break;
                    }
                }
            }
        });
        Ok(Response::new(Box::pin(
            tokio_stream::wrappers::ReceiverStream::new(rx),
        )))
    }
}

/// A streamed answer's next piece and whether it is the last; its failure (the
/// handler's, a limit's, or the stream cut short) as TorchServe's status.
async fn next_piece(streamed: &mut pieces::Streamed, name: &str) -> Result<(Bytes, bool), Status> {
    std::future::poll_fn(|cx| poll_piece(streamed, name, cx)).await
}

fn poll_piece(
    streamed: &mut pieces::Streamed,
    name: &str,
    cx: &mut std::task::Context<'_>,
) -> std::task::Poll<Result<(Bytes, bool), Status>> {
    use std::task::Poll;
    let piece = match streamed.pieces.poll_next(cx) {
        Poll::Pending => return Poll::Pending,
        Poll::Ready(None) => Err(pieces::cut_short()),
        Poll::Ready(Some(Err(e))) => Err(e),
        Poll::Ready(Some(Ok(outputs))) => pieces::piece(outputs),
    };
    Poll::Ready(
        piece
            .and_then(|p| {
                streamed.pieces.sending(p.data.len())?;
                Ok((p.data, p.last))
            })
            .map_err(|e| status(&e, name)),
    )
}

/// A StreamPredictions call's messages, as the handler sends its pieces.
struct PieceReplies {
    streamed: pieces::Streamed,
    name: String,
    done: bool,
}

impl Stream for PieceReplies {
    type Item = Result<PredictionResponse, Status>;

    fn poll_next(
        self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.done {
            return std::task::Poll::Ready(None);
        }
        poll_piece(&mut this.streamed, &this.name, cx).map(|piece| {
            Some(match piece {
                Ok((prediction, last)) => {
                    this.done = last;
                    Ok(PredictionResponse {
                        prediction,
                        ..Default::default()
                    })
                }
                Err(s) => {
                    this.done = true;
                    Err(s)
                }
            })
        })
    }
}

/// A failed StreamPredictions2 request's reply: its `status`, the stream going on.
fn failure(s: &Status) -> PredictionResponse {
    let (message, reason) = s
        .message()
        .split_once('\n')
        .map_or((s.message(), ""), |(m, r)| (m, r));
    PredictionResponse {
        prediction: Bytes::new(),
        sequence_id: None,
        status: Some(rich_status(s.code(), message.to_owned(), reason)),
    }
}

/// One StreamPredictions2 request's answer, or its failure as a reply with a `status`.
async fn sequence_replies(
    app: &App,
    request: PredictionsRequest,
) -> Result<Answer, PredictionResponse> {
    let id = request.sequence_id.clone().unwrap_or_default();
    let starts = request
        .input
        .get(SEQUENCE_START)
        .is_some_and(|v| v.eq_ignore_ascii_case(b"true"));
    if id.is_empty() && !starts {
        return Err(PredictionResponse {
            prediction: Bytes::new(),
            sequence_id: None,
            status: Some(rich_status(
                Code::Internal,
                "Parameter sequenceId is required.".into(),
                "BadRequestException.()",
            )),
        });
    }
    let mut headers = Map::new();
    let id = if id.is_empty() {
        headers.insert(SEQUENCE_START.into(), Value::String("true".into()));
        format!("ts-seq-{}", crate::uuid::v4())
    } else {
        id
    };
    headers.insert(SEQUENCE_ID.into(), Value::String(id));
    run(
        app,
        request,
        None,
        &methods::TS_STREAM_PREDICTIONS2,
        true,
        headers,
    )
    .await
    .map_err(|(e, name)| failure(&status(&e, &name)))
}

/// A failure and the model name it is about.
pub(super) type Failure = (ServeError, String);

/// What a `PredictionsRequest` got: the reply's elements (the handler's intermediate
/// responses kept for the end, then its reply), or, once the handler sent a piece
/// during the call, the stream of its pieces.
pub(super) enum Answer {
    Whole(Vec<Bytes>),
    Stream(pieces::Streamed),
}

/// Runs one `PredictionsRequest` for a reply as a whole: the handler's intermediate
/// responses and its reply, one element each when `pieces` asks for them, else joined
/// into one, with `headers` as its request headers.
pub(super) async fn predict(
    app: &App,
    req: PredictionsRequest,
    client: Option<std::time::Duration>,
    rpc: &'static methods::Rpc,
    pieces: bool,
    headers: Map<String, Value>,
) -> Result<Vec<Bytes>, Failure> {
    let Answer::Whole(mut parts) = run(app, req, client, rpc, false, headers).await? else {
        unreachable!("a reply as a whole has no stream");
    };
    if !pieces && parts.len() > 1 {
        parts = vec![Bytes::from(parts.concat())];
    }
    Ok(parts)
}

/// Runs one `PredictionsRequest`; with `stream`, the handler's pieces come as it sends
/// them (`stream::handoff`).
async fn run(
    app: &App,
    req: PredictionsRequest,
    client: Option<std::time::Duration>,
    rpc: &'static methods::Rpc,
    stream: bool,
    headers: Map<String, Value>,
) -> Result<Answer, Failure> {
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
        let id = obs.id.clone();
        let handoff = stream.then(|| Handoff::open(app.config.streaming.idle));
        let request = to_v2(req, id, handoff.as_ref().map(Handoff::token), headers);
        let deadline = app.deadline(obs.start, client);
        let call = crate::dataplane::infer_whole(app, &model, request, deadline);
        let response = match &handoff {
            None => call.await?,
            Some(handoff) => match handoff.race(call).await {
                Raced::Done(response) => response?,
                Raced::Started(rx) => {
                    return Ok(Answer::Stream(pieces::open(
                        app,
                        &model,
                        Protocol::Grpc,
                        rx,
                    )?))
                }
            },
        };
        Ok(Answer::Whole(pieces::parts(response.outputs)?))
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
/// hands a gRPC request's handler only its sequence headers), `grpc`, and the request's
/// handoff token when its pieces are streamed.
fn to_v2(
    req: PredictionsRequest,
    id: String,
    token: Option<u64>,
    headers: Map<String, Value>,
) -> InferRequest {
    let mut parameters = Parameters::new();
    parameters.insert("content_type".into(), Value::String(String::new()));
    parameters.insert("headers".into(), Value::Object(headers));
    parameters.insert("query".into(), Value::Array(Vec::new()));
    parameters.insert("grpc".into(), Value::Bool(true));
    if let Some(token) = token {
        parameters.insert(pieces::TOKEN.into(), Value::from(token));
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
        let v2 = to_v2(req, "id".into(), None, Map::new());
        let names: Vec<&str> = v2.inputs.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(names, ["b", "data"]);
        assert_eq!(v2.parameters["grpc"], Value::Bool(true));
        assert!(!v2.parameters.contains_key(pieces::TOKEN));
    }
}
