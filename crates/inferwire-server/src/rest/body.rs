//! Reading request bodies within the size limit, and building replies.
use bytes::{Bytes, BytesMut};
use http::{header, HeaderValue, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;

use crate::error::{Kind, ServeError};

pub type Reply = Response<Full<Bytes>>;

/// Collects the body into one buffer, refusing more than `limit` bytes (before reading
/// anything when Content-Length already says so). The buffer is reserved from
/// Content-Length, so each frame is copied once, where it stays; a body in one frame is
/// not copied at all.
pub async fn read(req: Request<Incoming>, limit: usize) -> Result<Bytes, ServeError> {
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(too_large(limit));
    }
    let mut body = req.into_body();
    // The first frame is kept as it is; a second one starts the joined buffer.
    let mut first: Option<Bytes> = None;
    let mut joined: Option<BytesMut> = None;
    while let Some(frame) = body.frame().await {
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
    Ok(match joined {
        Some(buf) => buf.freeze(),
        None => first.unwrap_or_default(),
    })
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
    let mut r = Response::new(Full::new(body));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

/// A reply whose Content-Type is only known at run time (a media type from the request).
pub fn with_media(status: StatusCode, body: Bytes, content_type: &str) -> Reply {
    let mut r = Response::new(Full::new(body));
    *r.status_mut() = status;
    let value = HeaderValue::from_str(content_type)
        .unwrap_or(HeaderValue::from_static("application/octet-stream"));
    r.headers_mut().insert(header::CONTENT_TYPE, value);
    r
}

/// An error as a Seldon FAILURE message.
pub fn error(e: &ServeError) -> Reply {
    let mut out = Vec::with_capacity(128);
    let _ = inferwire_codec::protocol::seldon::json::encode_message(&e.to_message(), &mut out);
    let status = StatusCode::from_u16(e.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut r = json(status, out);
    if e.kind == Kind::Overloaded {
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    r
}
