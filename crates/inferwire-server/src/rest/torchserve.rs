//! TorchServe's inference API (`inferwire torchserve`): `/ping`, `/predictions/{model}
//! [/{version}]` and `/explanations/...`. A request's body goes to the model as it came,
//! as the one BYTES input `body` of a V2 request whose parameters carry what TorchServe
//! hands a handler beside it (its Content-Type, headers and query parameters), so it is
//! batched, bounded and counted as every V2 request is; the model's reply (the output
//! `body`, with its content type, status and headers in the response's parameters) goes
//! back as it is. Errors are TorchServe's `{"code", "type", "message"}`.
use bytes::Bytes;
use http::{header, HeaderName, HeaderValue, Request, Response, StatusCode};
use http_body_util::StreamBody;
use hyper::body::{Frame, Incoming};
use inferwire_codec::protocol::v2::{InferInput, InferRequest, Parameters};
use inferwire_codec::{Tensor, TensorData};
use serde_json::{json, Map, Value};

use super::body::{self, Reply, ReplyBody};
use super::seldon::percent_decode;
use crate::app::App;
use crate::dialect::TORCHSERVE_BODY as BODY;
use crate::error::{Kind, ServeError};
use crate::metrics::Protocol;
use crate::observe::Observed;
use crate::stream::handoff::{Handoff, Raced};
use crate::torchserve_keys::{Api, Renewed, FAILED};
use crate::torchserve_management::{self as management, MODEL_API_OFF};
use crate::torchserve_pieces as pieces;

/// TorchServe's words for a refused token API call.
const TOKEN_FAILED: &str =
    "Token Authentication failed. Token either incorrect, expired, or not provided correctly";

/// At most this many query parameters and headers are handed over (the rest dropped).
const MAX_PAIRS: usize = 256;

/// What TorchServe answers for a path none of its APIs has.
pub const NO_RESOURCE: &str = "Requested resource is not found, please refer to API document.";

/// With TorchServe's token authorization on, a request without the inference key is
/// refused (400 InvalidKeyException, TorchServe's answer).
fn admit(app: &App, headers: &http::HeaderMap) -> Result<(), ServeError> {
    admit_to(app, headers, Api::Inference)
}

fn admit_to(app: &App, headers: &http::HeaderMap, api: Api) -> Result<(), ServeError> {
    let Some(keys) = &app.config.torchserve_keys else {
        return Ok(());
    };
    let header = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    if keys.admits(header, api) {
        Ok(())
    } else {
        Err(ServeError::new(Kind::BadRequest, FAILED))
    }
}

/// `GET /ping`: TorchServe's health answer (behind its token check, as TorchServe's).
pub async fn ping(app: &App, req: Request<Incoming>) -> Result<Reply, ServeError> {
    admit(app, req.headers())?;
    Ok(if app.is_ready() {
        body::json(StatusCode::OK, br#"{"status": "Healthy"}"#.to_vec())
    } else {
        body::json(
            StatusCode::INTERNAL_SERVER_ERROR,
            br#"{"status": "Unhealthy"}"#.to_vec(),
        )
    })
}

/// `/predictions/{name}[/{version}]` (`explain`: `/explanations/...`, which TorchServe's
/// frontend marks with the `explain` header its handlers read).
pub async fn predict(
    app: &App,
    req: Request<Incoming>,
    name: &str,
    version: &str,
    obs: &mut Observed,
    explain: bool,
) -> Result<Reply, ServeError> {
    admit(app, req.headers())?;
    let model = app.model(name, version).await?;
    obs.model = model.slot;
    let content_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let mut headers = Map::new();
    for (k, v) in req.headers().iter().take(MAX_PAIRS) {
        // The client's credentials stay with the server.
        if k == header::AUTHORIZATION || k == header::COOKIE {
            continue;
        }
        if let Ok(v) = v.to_str() {
            headers.insert(k.as_str().to_owned(), Value::String(v.to_owned()));
        }
    }
    if explain {
        headers.insert("explain".into(), Value::String("True".into()));
    }
    let query = query_pairs(req.uri().query().unwrap_or(""));
    // The id handlers see (`context.request_ids`); TorchServe gives every request one.
    let id = if obs.id.is_empty() {
        crate::uuid::v4()
    } else {
        obs.id.clone()
    };
    let data = body::read(app, req, app.config.max_body_bytes).await?;
    let mut parameters = Parameters::new();
    parameters.insert("content_type".into(), Value::String(content_type));
    parameters.insert("headers".into(), Value::Object(headers));
    parameters.insert("query".into(), query);
    // Where the handler's intermediate responses go, if it sends any.
    let handoff = Handoff::open(app.config.streaming.idle);
    parameters.insert(pieces::TOKEN.into(), Value::from(handoff.token()));
    let request = InferRequest {
        id,
        parameters,
        inputs: vec![InferInput {
            name: BODY.into(),
            tensor: Tensor {
                shape: vec![1],
                data: TensorData::Bytes(vec![data]),
            },
            parameters: Parameters::new(),
        }],
        outputs: Vec::new(),
    };
    let deadline = app.deadline(obs.start, None);
    let call = crate::dataplane::infer_whole(app, &model, request, deadline);
    match handoff.race(call).await {
        Raced::Done(response) => {
            let response = response?;
            reply(response.outputs, &response.parameters)
        }
        Raced::Started(rx) => chunked(pieces::open(app, &model, Protocol::Rest, rx)?).await,
    }
}

// -- the management API (what each call does is `torchserve_management`'s) -------------

/// `GET /models?limit=&next_page_token=`: the models served, a page at a time.
pub async fn list(app: &App, req: Request<Incoming>) -> Result<Reply, ServeError> {
    management_key(app, req.headers())?;
    let query = query_pairs(req.uri().query().unwrap_or(""));
    let number = |name: &str| -> Result<Option<i64>, ServeError> {
        let Some(v) = param(&query, name) else {
            return Ok(None);
        };
        v.parse().map(Some).map_err(|_| {
            ServeError::new(
                Kind::BadRequest,
                format!("Invalid {name}: {v}, must be an integer"),
            )
        })
    };
    let (limit, from) = (number("limit")?, number("next_page_token")?);
    let out = management::list(app, limit, from).await?;
    Ok(pretty(StatusCode::OK, &out))
}

/// `GET /models/{name}[/{version}|/all]`: the model's description, as TorchServe's.
pub async fn describe(
    app: &App,
    req: Request<Incoming>,
    name: &str,
    version: &str,
) -> Result<Reply, ServeError> {
    management_key(app, req.headers())?;
    let out = management::describe(app, name, version).await?;
    Ok(pretty(StatusCode::OK, &out))
}

/// `POST /models?url=ARCHIVE[&model_name=...]`: registers an archive (TorchServe's model
/// API: `enable_model_api`).
pub async fn register(app: &App, req: Request<Incoming>) -> Result<Reply, ServeError> {
    management_key(app, req.headers())?;
    let query = query_pairs(req.uri().query().unwrap_or(""));
    let mut parameters = Map::new();
    for pair in query.as_array().into_iter().flatten() {
        if let (Some(k), Some(v)) = (pair[0].as_str(), pair[1].as_str()) {
            parameters.insert(k.to_owned(), Value::String(v.to_owned()));
        }
    }
    let url = param(&query, "url").unwrap_or_default();
    let name = param(&query, "model_name");
    let status = management::register(app, &url, name.as_deref(), parameters).await?;
    Ok(status_reply(&status))
}

/// `DELETE /models/{name}[/{version}]`: unregisters the model (TorchServe's model API).
pub async fn unregister(
    app: &App,
    req: Request<Incoming>,
    name: &str,
    version: &str,
) -> Result<Reply, ServeError> {
    management_key(app, req.headers())?;
    let status = management::unregister(app, name, version).await?;
    Ok(status_reply(&status))
}

/// `PUT /models/{name}[/{version}]?min_worker=&max_worker=`: TorchServe's scaling.
pub async fn scale(
    app: &App,
    req: Request<Incoming>,
    name: &str,
    version: &str,
) -> Result<Reply, ServeError> {
    management_key(app, req.headers())?;
    let query = query_pairs(req.uri().query().unwrap_or(""));
    let mut workers = [None, None];
    for (key, slot) in ["min_worker", "max_worker"].into_iter().zip(&mut workers) {
        if let Some(v) = param(&query, key) {
            *slot = Some(v.parse::<u32>().map_err(|_| {
                ServeError::new(
                    Kind::BadRequest,
                    format!("Invalid {key}: {v}, must be a number"),
                )
            })?);
        }
    }
    let status = management::scale(app, name, version, workers[0], workers[1]).await?;
    Ok(status_reply(&status))
}

/// `PUT /models/{name}/{version}/set-default`: the version served without one.
pub async fn set_default(
    app: &App,
    req: Request<Incoming>,
    name: &str,
    version: &str,
) -> Result<Reply, ServeError> {
    management_key(app, req.headers())?;
    let status = management::set_default(app, name, version).await?;
    Ok(status_reply(&status))
}

/// `GET /token?type=inference|management`: with the API key, that key replaced in the key
/// file (TorchServe's token API); 200 with an empty body, as TorchServe answers.
pub async fn token(app: &App, req: Request<Incoming>) -> Result<Reply, ServeError> {
    let Some(keys) = &app.config.torchserve_keys else {
        return Err(ServeError::new(Kind::NotFound, NO_RESOURCE));
    };
    let query = query_pairs(req.uri().query().unwrap_or(""));
    let kind = param(&query, "type").unwrap_or_default();
    let header = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    match keys.renew(header, &kind) {
        Ok(Renewed::Done) => Ok(body::json(StatusCode::OK, Vec::new())),
        Ok(Renewed::Refused) => Err(ServeError::new(Kind::BadRequest, TOKEN_FAILED)),
        Err(e) => Err(ServeError::new(Kind::Internal, e)),
    }
}

/// With TorchServe's token authorization on, a management call needs the management key
/// (400 InvalidKeyException otherwise, TorchServe's answer).
fn management_key(app: &App, headers: &http::HeaderMap) -> Result<(), ServeError> {
    let header = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    if management::management_key(app, header) {
        Ok(())
    } else {
        Err(ServeError::new(Kind::BadRequest, FAILED))
    }
}

/// The management API's `{"status": ...}` reply.
fn status_reply(status: &str) -> Reply {
    pretty(StatusCode::OK, &json!({ "status": status }))
}

/// The last value of query parameter `name`.
fn param(query: &Value, name: &str) -> Option<String> {
    query.as_array()?.iter().rev().find_map(|p| {
        (p[0] == name)
            .then(|| p[1].as_str().map(str::to_owned))
            .flatten()
    })
}

/// A JSON reply pretty-printed, as TorchServe's frontend writes its own.
fn pretty(status: StatusCode, value: &Value) -> Reply {
    let mut out = management::pretty(value).into_bytes();
    out.push(b'\n');
    body::json(status, out)
}

/// The query string's parameters, in order, as `[[name, value], ...]` (decoded).
fn query_pairs(query: &str) -> Value {
    let text = |s: &str| String::from_utf8_lossy(&percent_decode(s.as_bytes())).into_owned();
    let pairs = query
        .split('&')
        .filter(|kv| !kv.is_empty())
        .take(MAX_PAIRS)
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            json!([text(k), text(v)])
        })
        .collect();
    Value::Array(pairs)
}

/// The model's whole reply: its `body` output's bytes, with the status, content type and
/// headers its parameters give; several elements (intermediate responses kept for the
/// end, then the reply) are written one chunk each, as TorchServe writes them.
fn reply(
    outputs: Vec<inferwire_codec::protocol::v2::InferOutput>,
    parameters: &Parameters,
) -> Result<Reply, ServeError> {
    let mut parts = pieces::parts(outputs)?;
    if parts.len() == 1 {
        let data = parts.pop().unwrap_or_default();
        return Ok(head(body::with_media(StatusCode::OK, data, ""), parameters));
    }
    let frames = parts
        .into_iter()
        .filter(|p| !p.is_empty())
        .map(|p| Ok(Frame::data(p)));
    let chunks = StreamBody::new(tokio_stream::iter(frames.collect::<Vec<_>>()));
    Ok(head(
        Response::new(ReplyBody::Stream(Box::pin(chunks))),
        parameters,
    ))
}

/// A reply whose handler sent a piece during the call: chunked, its head the first
/// piece's (status, content type, headers), each piece a chunk as it comes, the handler's
/// reply last. A failure after the head (the handler's, or a stream limit) is written as
/// TorchServe's error body, and the connection closed without the body's end.
async fn chunked(mut streamed: pieces::Streamed) -> Result<Reply, ServeError> {
    let first = match streamed.pieces.next().await {
        Some(Ok(outputs)) => pieces::piece(outputs)?,
        Some(Err(e)) => return Err(e),
        None => return Err(pieces::cut_short()),
    };
    let (data, last) = (first.data, first.last);
    let sent = streamed.pieces.sending(data.len());
    let chunks = Chunks {
        streamed,
        next: (!data.is_empty()).then_some(data),
        state: if last { Ending::Done } else { Ending::Open },
    };
    sent?;
    Ok(head(
        Response::new(ReplyBody::Chunks(Box::pin(chunks))),
        &first.parameters,
    ))
}

#[derive(PartialEq)]
enum Ending {
    Open,
    /// The handler's reply has been taken: the body ends after `next`.
    Done,
    /// A failure has been written: the body fails once it has gone out.
    Failed,
    /// The failure's bytes are handed over; the next poll fails the body.
    Flushed,
}

/// A streamed reply's body (`chunked`).
struct Chunks {
    streamed: pieces::Streamed,
    next: Option<Bytes>,
    state: Ending,
}

impl Chunks {
    fn fail(&mut self, e: &ServeError) {
        tracing::debug!("a streamed TorchServe reply failed: {}", e.message);
        self.state = Ending::Failed;
        self.next = Some(Bytes::from(error_body(e).1));
    }
}

impl hyper::body::Body for Chunks {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        use std::task::Poll;
        let this = self.get_mut();
        loop {
            if let Some(data) = this.next.take() {
                return Poll::Ready(Some(Ok(Frame::data(data))));
            }
            match this.state {
                Ending::Done => return Poll::Ready(None),
                Ending::Failed => {
                    // hyper drops what it has not written when a body fails: the error
                    // body is let out first (hyper flushes while this is pending).
                    this.state = Ending::Flushed;
                    cx.waker().wake_by_ref();
                    return Poll::Pending;
                }
                Ending::Flushed => {
                    return Poll::Ready(Some(Err(std::io::Error::other(
                        "the handler failed after its first response",
                    ))))
                }
                Ending::Open => {}
            }
            let piece = match this.streamed.pieces.poll_next(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => Err(pieces::cut_short()),
                Poll::Ready(Some(Err(e))) => Err(e),
                Poll::Ready(Some(Ok(outputs))) => pieces::piece(outputs),
            };
            match piece {
                Ok(p) => {
                    if let Err(e) = this.streamed.pieces.sending(p.data.len()) {
                        this.fail(&e);
                        continue;
                    }
                    if p.last {
                        this.state = Ending::Done;
                    }
                    this.next = (!p.data.is_empty()).then_some(p.data);
                }
                Err(e) => this.fail(&e),
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.next.is_none() && self.state == Ending::Done
    }
}

/// `r` with the status, content type and headers the handler's parameters give.
fn head(mut r: Reply, parameters: &Parameters) -> Reply {
    let status = parameters
        .get("status")
        .and_then(Value::as_u64)
        .and_then(|s| u16::try_from(s).ok())
        .and_then(|s| StatusCode::from_u16(s).ok())
        .unwrap_or(StatusCode::OK);
    *r.status_mut() = status;
    r.headers_mut().remove(header::CONTENT_TYPE);
    if let Some(t) = parameters.get("content_type").and_then(Value::as_str) {
        if let (false, Ok(v)) = (t.is_empty(), HeaderValue::from_str(t)) {
            r.headers_mut().insert(header::CONTENT_TYPE, v);
        }
    }
    if let Some(Value::Object(extra)) = parameters.get("headers") {
        for (k, v) in extra.iter().take(MAX_PAIRS) {
            let (Ok(k), Some(Ok(v))) = (
                HeaderName::from_bytes(k.as_bytes()),
                v.as_str().map(HeaderValue::from_str),
            ) else {
                continue;
            };
            // The framing is the server's.
            if k != header::CONTENT_LENGTH && k != header::TRANSFER_ENCODING {
                r.headers_mut().insert(k, v);
            }
        }
    }
    r
}

/// An error as TorchServe answers it: `{"code", "type", "message"}`; a handler's own
/// error reply (its status and body) as the handler made it.
pub fn error(e: &ServeError) -> Reply {
    let (status, text) = error_body(e);
    let mut r = body::json(status, text);
    body::for_kind(&mut r, e.kind);
    r
}

/// An error's status and body, as `error` answers them.
fn error_body(e: &ServeError) -> (StatusCode, Vec<u8>) {
    let status = StatusCode::from_u16(e.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    if let Some(b) = e.model_body() {
        return (status, b.as_bytes().to_vec());
    }
    let kind = match e.kind {
        Kind::NotFound if e.message == NO_RESOURCE => "ResourceNotFoundException",
        Kind::BadRequest if e.message == FAILED || e.message == TOKEN_FAILED => {
            "InvalidKeyException"
        }
        Kind::NotFound => "ModelNotFoundException",
        _ if management::is_conflict(e) => "ConflictStatusException",
        Kind::MethodNotAllowed if e.message == MODEL_API_OFF => "ModelAPIDisabledException",
        Kind::MethodNotAllowed => "MethodNotAllowedException",
        Kind::Overloaded | Kind::Unavailable | Kind::ShuttingDown => "ServiceUnavailableException",
        Kind::Unauthenticated | Kind::Forbidden => "InvalidKeyException",
        Kind::TooLarge => "RequestTooLargeException",
        Kind::Deadline | Kind::BodyTimeout => "RequestTimeoutException",
        _ if status.is_client_error() => "BadRequestException",
        _ => "InternalServerException",
    };
    (
        status,
        error_text(status.as_u16(), kind, &e.message).into_bytes(),
    )
}

/// TorchServe's error body: pretty-printed, in its frontend's order.
fn error_text(code: u16, kind: &str, message: &str) -> String {
    let message = serde_json::to_string(message).unwrap_or_default();
    format!("{{\n  \"code\": {code},\n  \"type\": \"{kind}\",\n  \"message\": {message}\n}}\n")
}

/// A body as bytes, for tests of `reply`.
#[cfg(test)]
fn bytes_output(data: &'static [u8]) -> inferwire_codec::protocol::v2::InferOutput {
    inferwire_codec::protocol::v2::InferOutput {
        name: BODY.into(),
        tensor: Tensor {
            shape: vec![1],
            data: TensorData::Bytes(vec![bytes::Bytes::from_static(data)]),
        },
        parameters: Parameters::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_carries_the_handler_s_status_type_and_headers() {
        let mut p = Parameters::new();
        p.insert("status".into(), json!(206));
        p.insert("content_type".into(), json!("text/plain"));
        p.insert(
            "headers".into(),
            json!({"x-model": "m", "content-length": "1", "bad name": "x"}),
        );
        let r = reply(vec![bytes_output(b"hi")], &p).unwrap();
        assert_eq!(r.status(), 206);
        assert_eq!(r.headers()[header::CONTENT_TYPE], "text/plain");
        assert_eq!(r.headers()["x-model"], "m");
        assert!(r.headers().get(header::CONTENT_LENGTH).is_none());
        let none = reply(vec![bytes_output(b"x")], &Parameters::new()).unwrap();
        assert_eq!(none.status(), 200);
        assert!(none.headers().get(header::CONTENT_TYPE).is_none());
    }

    #[test]
    fn errors_are_torchserve_s_pretty_printed_json() {
        let r = error(&ServeError::new(Kind::NotFound, "Model not found: \"m\""));
        assert_eq!(r.status(), 404);
        let e = error(&ServeError::new(Kind::NotFound, NO_RESOURCE));
        assert_eq!(e.status(), 404);
    }

    #[test]
    fn query_parameters_keep_their_order() {
        assert_eq!(
            query_pairs("b=2&a=%20x&b=3"),
            json!([["b", "2"], ["a", " x"], ["b", "3"]])
        );
    }
}
