//! Streamed replies over REST: server-sent events on `infer_stream` (MLServer's) and
//! `generate_stream` (Triton's generate extension), and `generate`, its unstreamed form.
//!
//! Each piece is one event, `data: <JSON>\n\n`, written when the model yields it: the
//! body polls the model's stream only when hyper asks for more, so a reader that stops
//! reading stops the model once the socket's and the stream's small buffers are full.
//! The reply's head waits for the first piece, so that an error before it (a bad input,
//! the model raising at once) is an ordinary error status; one after it is a last
//! event, `data: {"error": "..."}`, and the end of the body.
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{header, HeaderValue, Request, Response, StatusCode};
use hyper::body::{Body, Frame, Incoming};
use inferwire_codec::protocol::v2::{generate, json, InferOutput, InferRequest, InferResponse};

use super::body::{self, Reply, ReplyBody};
use crate::app::App;
use crate::error::ServeError;
use crate::metrics::{Encoding, Protocol};
use crate::observe::Observed;
use crate::stream::PieceStream;

/// How a stream's events are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// V2 inference responses (MLServer's `infer_stream`, and `generate_stream` given a V2
    /// request).
    V2,
    /// Triton's generate extension: outputs by name at the top level.
    Flat,
}

/// `POST /v2/models/NAME[/versions/V]/infer_stream`: a V2 request, V2 events.
pub async fn infer_stream(
    app: &App,
    req: Request<Incoming>,
    name: &str,
    version: &str,
    obs: &mut Observed,
) -> Result<Reply, ServeError> {
    let model = app.model(name, version).await?;
    obs.model = model.slot;
    let request = super::v2::decode(app, req, &model.name, obs).await?;
    start(app, &model, request, Shape::V2).await
}

/// `POST /v2/models/NAME[/versions/V]/generate_stream`: Triton's flat body (or a V2
/// request, as MLServer takes it), events in the same shape.
pub async fn generate_stream(
    app: &App,
    req: Request<Incoming>,
    name: &str,
    version: &str,
    obs: &mut Observed,
) -> Result<Reply, ServeError> {
    let model = app.model(name, version).await?;
    obs.model = model.slot;
    let (request, shape) = read_generate(app, req, obs).await?;
    start(app, &model, request, shape).await
}

/// `POST /v2/models/NAME[/versions/V]/generate`: the same request answered once (a
/// model that streams answers its pieces joined; see `seldon.py`).
pub async fn generate(
    app: &App,
    req: Request<Incoming>,
    name: &str,
    version: &str,
    obs: &mut Observed,
) -> Result<Reply, ServeError> {
    let model = app.model(name, version).await?;
    obs.model = model.slot;
    let (request, shape) = read_generate(app, req, obs).await?;
    let deadline = app.deadline(obs.start, None);
    let mut response = crate::dataplane::infer_whole(app, &model, request, deadline).await?;
    let headers = app.config.dialect.reply_headers(&mut response);
    let mut out = Vec::with_capacity(256);
    match shape {
        Shape::V2 => {
            json::encode_response(&response, |_| false, &mut out)?;
        }
        Shape::Flat => generate::encode_response(&response, &mut out)?,
    }
    let mut r = body::json(StatusCode::OK, out);
    super::v2::add_headers(&mut r, headers);
    Ok(r)
}

async fn read_generate(
    app: &App,
    req: Request<Incoming>,
    obs: &mut Observed,
) -> Result<(InferRequest, Shape), ServeError> {
    obs.encoding = Encoding::Json;
    let headers = app.config.dialect.headers_for_model(req.headers());
    let body = body::read(app, req, app.config.max_body_bytes).await?;
    let (mut request, shape) = if generate::is_v2_request(&body) {
        let r = json::decode_request(body, None, &app.config.limits)?;
        (r, Shape::V2)
    } else {
        let r = generate::decode_request(&body, &app.config.limits)?;
        (r, Shape::Flat)
    };
    app.config.dialect.prepare(&mut request, headers);
    if obs.id.is_empty() {
        obs.id.clone_from(&request.id);
    }
    Ok((request, shape))
}

/// Starts the model's stream and answers once its first piece (or error, or end) is
/// known.
async fn start(
    app: &App,
    model: &crate::models::Served,
    request: InferRequest,
    shape: Shape,
) -> Result<Reply, ServeError> {
    let head = InferResponse {
        model_name: model.name.clone(),
        model_version: model.version.clone(),
        id: request.id.clone(),
        parameters: Default::default(),
        outputs: Vec::new(),
    };
    let stream = crate::dataplane::infer_pieces(app, model, request, Protocol::Rest).await?;
    let mut events = Events {
        stream,
        head,
        shape,
        first: None,
        done: false,
    };
    match events.stream.next().await {
        None => events.done = true,
        Some(Err(e)) => return Err(e),
        Some(Ok(outputs)) => {
            let (event, last) = events.event(outputs);
            events.first = Some(event);
            events.done = last;
        }
    }
    let mut r = Response::new(ReplyBody::Stream(Box::pin(events)));
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    // Proxies that buffer replies (nginx) pass events on as they come.
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    *r.status_mut() = StatusCode::OK;
    Ok(r)
}

/// A stream's events, as the reply's body.
struct Events {
    stream: PieceStream,
    /// The model's name, version and the request's id, for each event.
    head: InferResponse,
    shape: Shape,
    /// The first event, encoded before the head was sent.
    first: Option<Bytes>,
    done: bool,
}

impl Events {
    /// One piece as an event; `true` when it is the last (an error took its place).
    fn event(&mut self, outputs: Vec<InferOutput>) -> (Bytes, bool) {
        let mut out = Vec::with_capacity(128);
        out.extend_from_slice(b"data: ");
        self.head.outputs = outputs;
        let encoded = match self.shape {
            Shape::V2 => json::encode_response(&self.head, |_| false, &mut out).map(drop),
            Shape::Flat => generate::encode_response(&self.head, &mut out),
        };
        self.head.outputs.clear();
        if let Err(e) = encoded {
            return (error_event(&ServeError::from(e)), true);
        }
        out.extend_from_slice(b"\n\n");
        match self.stream.sending(out.len()) {
            Ok(()) => (Bytes::from(out), false),
            Err(e) => (error_event(&e), true),
        }
    }
}

fn error_event(e: &ServeError) -> Bytes {
    let mut out = b"data: ".to_vec();
    let _ = serde_json::to_writer(&mut out, &serde_json::json!({"error": e.message}));
    out.extend_from_slice(b"\n\n");
    Bytes::from(out)
}

impl Body for Events {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        if let Some(first) = this.first.take() {
            return Poll::Ready(Some(Ok(Frame::data(first))));
        }
        if this.done {
            return Poll::Ready(None);
        }
        let event = match this.stream.poll_next(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(None) => {
                this.done = true;
                return Poll::Ready(None);
            }
            Poll::Ready(Some(Err(e))) => {
                this.done = true;
                error_event(&e)
            }
            Poll::Ready(Some(Ok(outputs))) => {
                let (event, last) = this.event(outputs);
                this.done = last;
                event
            }
        };
        Poll::Ready(Some(Ok(Frame::data(event))))
    }

    fn is_end_stream(&self) -> bool {
        self.done && self.first.is_none()
    }
}
