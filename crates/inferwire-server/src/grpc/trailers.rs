//! Trailing metadata of a gRPC reply beyond the status: tonic sends a handler's metadata
//! as headers, but some clients read theirs from the trailers (MLServer's CloudEvents,
//! `grpc::v2`). A handler puts `Trailing` in its response's extensions; `with_trailers`
//! (a layer over every reply) adds it to the trailers frame the body ends with.
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue};
use hyper::body::{Body, Frame, SizeHint};

/// Metadata for a reply's trailers.
#[derive(Debug, Clone, Default)]
pub struct Trailing(HeaderMap);

impl Trailing {
    /// From (name, value) pairs; names are lowercased (gRPC metadata keys are), and a
    /// pair that is not a valid header is left out.
    pub fn from_pairs(pairs: Vec<(String, String)>) -> Self {
        let mut map = HeaderMap::with_capacity(pairs.len());
        for (name, value) in pairs {
            let name = HeaderName::from_bytes(name.to_ascii_lowercase().as_bytes());
            if let (Ok(name), Ok(value)) = (name, HeaderValue::from_str(&value)) {
                map.insert(name, value);
            }
        }
        Self(map)
    }
}

/// The reply with its `Trailing`, if any, moved into its trailers.
pub fn with_trailers<B>(res: http::Response<B>) -> http::Response<WithTrailers<B>> {
    let (mut parts, body) = res.into_parts();
    let extra = parts.extensions.remove::<Trailing>().map(|t| t.0);
    http::Response::from_parts(parts, WithTrailers { inner: body, extra })
}

pub struct WithTrailers<B> {
    inner: B,
    extra: Option<HeaderMap>,
}

impl<B> Body for WithTrailers<B>
where
    B: Body<Data = Bytes> + Unpin,
{
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                let frame = match (frame.into_trailers(), this.extra.take()) {
                    (Ok(mut trailers), Some(extra)) => {
                        for (name, value) in &extra {
                            trailers.insert(name.clone(), value.clone());
                        }
                        Frame::trailers(trailers)
                    }
                    (Ok(trailers), None) => Frame::trailers(trailers),
                    (Err(frame), extra) => {
                        this.extra = extra;
                        frame
                    }
                };
                Poll::Ready(Some(Ok(frame)))
            }
            other => other,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
