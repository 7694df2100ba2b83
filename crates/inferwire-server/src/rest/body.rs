//! Reading request bodies within the size limit, the body timeout and the server's
//! budget of body bytes, and building replies.
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use http::{header, HeaderValue, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::body::{Body, Frame, SizeHint};

use super::content_coding::{self, Coding};
use crate::app::App;
use crate::error::{Kind, ServeError};

pub type Reply = Response<ReplyBody>;

/// A reply's body: whole, or a stream of events written as they come (`rest::stream`),
/// or a stream that may fail after its head (`Chunks`: TorchServe's chunked replies; the
/// connection is then closed without the body's end, so that the client sees the reply
/// fail instead of a whole body).
pub enum ReplyBody {
    Full(Full<Bytes>),
    Stream(Pin<Box<dyn Body<Data = Bytes, Error = Infallible> + Send>>),
    Chunks(Pin<Box<dyn Body<Data = Bytes, Error = std::io::Error> + Send>>),
}

impl Body for ReplyBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        let never = |e: Infallible| match e {};
        match self.get_mut() {
            ReplyBody::Full(b) => Pin::new(b).poll_frame(cx).map_err(never),
            ReplyBody::Stream(b) => b.as_mut().poll_frame(cx).map_err(never),
            ReplyBody::Chunks(b) => b.as_mut().poll_frame(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            ReplyBody::Full(b) => b.is_end_stream(),
            ReplyBody::Stream(b) => b.is_end_stream(),
            ReplyBody::Chunks(b) => b.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            ReplyBody::Full(b) => b.size_hint(),
            ReplyBody::Stream(b) => b.size_hint(),
            ReplyBody::Chunks(b) => b.size_hint(),
        }
    }
}

/// Collects the body into one buffer, refusing more than `limit` bytes (before reading
/// anything when Content-Length already says so), and inflates it as `Content-Encoding`
/// says (the inflated size bounded by `limit` too). The whole body must arrive within
/// `body_timeout` of this call, which comes right after the head; its bytes are charged to
/// the server's budget (`max_body_bytes_in_flight`) until this returns, Content-Length's
/// worth before reading. The buffer is reserved from Content-Length, so each frame is
/// copied once, where it stays; a body in one frame is not copied at all.
pub async fn read(app: &App, req: Request<Incoming>, limit: usize) -> Result<Bytes, ServeError> {
    let timeout = app.config.body_timeout;
    let deadline = tokio::time::Instant::now() + timeout;
    let coding = content_coding::of(req.headers())?;
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(too_large(limit));
    }
    let mut charge = app.bodies.charge(declared.map_or(0, |n| n as usize))?;
    let mut body = req.into_body();
    // The first frame is kept as it is; a second one starts the joined buffer.
    let mut first: Option<Bytes> = None;
    let mut joined: Option<BytesMut> = None;
    loop {
        let Ok(frame) = tokio::time::timeout_at(deadline, body.frame()).await else {
            return Err(ServeError::new(
                Kind::BodyTimeout,
                format!(
                    "the request body did not arrive within {} s of the request head \
                     (see --body-timeout)",
                    timeout.as_secs_f64()
                ),
            ));
        };
        let Some(frame) = frame else { break };
        let frame = frame.map_err(|e| {
            ServeError::new(
                Kind::BadRequest,
                format!("could not read the request body: {e}"),
            )
        })?;
        let Ok(data) = frame.into_data() else {
            continue; // trailers
        };
        let so_far = joined
            .as_ref()
            .map_or_else(|| first.as_ref().map_or(0, Bytes::len), BytesMut::len);
        if so_far + data.len() > limit {
            return Err(too_large(limit));
        }
        if so_far + data.len() > charge.held() {
            charge.grow(so_far + data.len() - charge.held())?;
        }
        match (&first, &mut joined) {
            (None, _) => first = Some(data),
            (Some(held), None) => {
                let want = declared.map_or(0, |n| n as usize).max(so_far + data.len());
                let mut buf = BytesMut::with_capacity(want);
                buf.extend_from_slice(held);
                buf.extend_from_slice(&data);
                joined = Some(buf);
            }
            (Some(_), Some(buf)) => buf.extend_from_slice(&data),
        }
    }
    let raw = match joined {
        Some(buf) => buf.freeze(),
        None => first.unwrap_or_default(),
    };
    if coding == Coding::Identity {
        return Ok(raw);
    }
    content_coding::inflate(coding, &raw, limit, &mut charge)
}

#[cold]
fn too_large(limit: usize) -> ServeError {
    ServeError::new(
        Kind::TooLarge,
        format!("request body is larger than the limit of {limit} bytes (see --max-body-bytes)"),
    )
}

pub fn json(status: StatusCode, body: Vec<u8>) -> Reply {
    with_type(status, body.into(), "application/json")
}

pub fn text(status: StatusCode, body: &'static str) -> Reply {
    with_type(
        status,
        Bytes::from_static(body.as_bytes()),
        "text/plain; charset=utf-8",
    )
}

pub fn with_type(status: StatusCode, body: Bytes, content_type: &'static str) -> Reply {
    let mut r = Response::new(ReplyBody::Full(Full::new(body)));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

/// A reply whose Content-Type is only known at run time (a media type from the request).
pub fn with_media(status: StatusCode, body: Bytes, content_type: &str) -> Reply {
    let mut r = Response::new(ReplyBody::Full(Full::new(body)));
    *r.status_mut() = status;
    let value = HeaderValue::from_str(content_type)
        .unwrap_or(HeaderValue::from_static("application/octet-stream"));
    r.headers_mut().insert(header::CONTENT_TYPE, value);
    r
}

/// An error as a Seldon FAILURE message.
pub fn error(e: &ServeError) -> Reply {
    let mut out = Vec::with_capacity(128);
    match e.model_body() {
        // The model's exception chose its body (`to_dict()`), as Seldon answers it.
        Some(body) => out.extend_from_slice(body.as_bytes()),
        None => {
            let _ =
                inferwire_codec::protocol::seldon::json::encode_message(&e.to_message(), &mut out);
        }
    }
    let status = StatusCode::from_u16(e.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut r = json(status, out);
    for_kind(&mut r, e.kind);
    r
}

/// What an error's kind adds to any REST reply: `Retry-After` when overloaded, and the
/// end of the connection after a body timeout (HTTP/1.1: the rest of a slow body is not
/// waited for; HTTP/2 drops the header and resets the stream).
pub fn for_kind(reply: &mut Reply, kind: Kind) {
    match kind {
        Kind::Overloaded => {
            reply
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        Kind::BodyTimeout => {
            reply
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        _ => {}
    }
}
