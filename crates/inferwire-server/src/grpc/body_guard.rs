//! Every gRPC call's request body, watched on its way to tonic:
//! - each message, and the end of the stream after the last one, must arrive within
//!   `body_timeout` of the call's start or of the previous message; past it the call
//!   fails with DEADLINE_EXCEEDED;
//! - each message is charged to the body budget (`max_body_bytes_in_flight`) at its
//!   5-byte prefix, by the length the prefix declares, before its bytes are read; the
//!   charge lasts until the next message starts or the body is dropped (tonic drops a
//!   unary call's body once its message is decoded). RESOURCE_EXHAUSTED when it does not
//!   fit. (A gzip or deflate message is inflated by tonic once it is whole, within
//!   `max_body_bytes`; that short-lived copy is not charged.)
//! - on a streaming call (`ModelStreamInfer`) the clock runs only while a message is on
//!   its way: between messages the client may wait (for its replies, say); the handler
//!   bounds that wait (`grpc::stream`);
//! - a `grpc-encoding` other than gzip, deflate or identity is UNIMPLEMENTED before any
//!   byte is read, with a message saying what is taken.
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Buf, Bytes};
use hyper::body::{Body, Frame, SizeHint};
use tokio::time::{Instant, Sleep};
use tonic::codegen::BoxFuture;
use tonic::Status;
use tower::{Layer, Service};

use crate::body_budget::{BodyBudget, Charge};

/// The `grpc-encoding` values taken, as `grpc-accept-encoding` lists them.
pub const ACCEPTED_ENCODINGS: &str = "identity,gzip,deflate";

/// Marks the reply to a deflate request, so that a refusal names the coding
/// (`codec::refusals_named`); gzip, by far the commoner, is assumed otherwise.
#[derive(Clone, Copy)]
pub struct Deflated;

#[derive(Clone)]
pub struct BodyGuardLayer {
    pub budget: Arc<BodyBudget>,
    pub timeout: Duration,
    /// `max_body_bytes`: a longer message is tonic's to refuse, not the budget's.
    pub max_message: usize,
}

impl<S> Layer<S> for BodyGuardLayer {
    type Service = Guarded<S>;

    fn layer(&self, inner: S) -> Guarded<S> {
        Guarded {
            inner,
            rules: self.clone(),
        }
    }
}

#[derive(Clone)]
pub struct Guarded<S> {
    inner: S,
    rules: BodyGuardLayer,
}

type Req = http::Request<tonic::body::Body>;

impl<S> Service<Req> for Guarded<S>
where
    S: Service<Req, Response = http::Response<tonic::body::Body>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = BoxFuture<Self::Response, Self::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Req) -> Self::Future {
        if let Some(status) = unsupported_encoding(req.headers()) {
            return Box::pin(async move { Ok(status.into_http()) });
        }
        let deflate = req
            .headers()
            .get("grpc-encoding")
            .is_some_and(|v| v.as_bytes() == b"deflate");
        let streaming = req.uri().path() == super::methods::V2_STREAM_INFER.path;
        let (parts, body) = req.into_parts();
        let mut watched = Watched::new(body, &self.rules);
        if streaming {
            watched.paused = true;
            watched.between = false;
        }
        let body = tonic::body::Body::new(watched);
        let call = self.inner.call(http::Request::from_parts(parts, body));
        if !deflate {
            return Box::pin(call);
        }
        Box::pin(async move {
            let mut res = call.await?;
            res.extensions_mut().insert(Deflated);
            Ok(res)
        })
    }
}

fn unsupported_encoding(headers: &http::HeaderMap) -> Option<Status> {
    const ENCODING: http::HeaderName = http::HeaderName::from_static("grpc-encoding");
    let value = headers.get(&ENCODING)?;
    if matches!(value.as_bytes(), b"identity" | b"gzip" | b"deflate") {
        return None;
    }
    let mut status = Status::unimplemented(format!(
        "grpc-encoding {:?} is not supported: send deflate, gzip or identity",
        String::from_utf8_lossy(value.as_bytes())
    ));
    status.metadata_mut().insert(
        "grpc-accept-encoding",
        tonic::metadata::MetadataValue::from_static(ACCEPTED_ENCODINGS),
    );
    Some(status)
}

/// A request body with its clock and its current message's charge.
struct Watched {
    inner: tonic::body::Body,
    budget: Arc<BodyBudget>,
    timeout: Duration,
    max_message: usize,
    /// When the current message (or the end of the stream) is due; `None` once ended.
    due: Option<Pin<Box<Sleep>>>,
    charge: Option<Charge>,
    /// The current message's prefix as far as it has come (`seen` bytes of 5).
    prefix: [u8; 5],
    seen: usize,
    /// Bytes of the current message still to come, once its prefix is whole.
    left: usize,
    failed: bool,
    /// Whether the clock runs between messages (not on a streaming call).
    between: bool,
    /// The clock is stopped until the next message starts.
    paused: bool,
}

impl Watched {
    fn new(inner: tonic::body::Body, rules: &BodyGuardLayer) -> Self {
        Self {
            inner,
            budget: rules.budget.clone(),
            timeout: rules.timeout,
            max_message: rules.max_message,
            due: Some(Box::pin(tokio::time::sleep(rules.timeout))),
            charge: None,
            prefix: [0; 5],
            seen: 0,
            left: 0,
            failed: false,
            between: true,
            paused: false,
        }
    }

    /// Follows the gRPC framing through `data`: charges each message at its prefix and
    /// restarts the clock when one is complete.
    fn account(&mut self, mut data: &[u8]) -> Result<(), Status> {
        while !data.is_empty() {
            if self.seen < 5 {
                if self.seen == 0 && self.paused {
                    self.paused = false;
                    if let Some(due) = self.due.as_mut() {
                        due.as_mut().reset(Instant::now() + self.timeout);
                    }
                }
                let take = (5 - self.seen).min(data.len());
                self.prefix[self.seen..self.seen + take].copy_from_slice(&data[..take]);
                self.seen += take;
                data.advance(take);
                if self.seen < 5 {
                    break;
                }
                let len = u32::from_be_bytes([
                    self.prefix[1],
                    self.prefix[2],
                    self.prefix[3],
                    self.prefix[4],
                ]) as usize;
                // The previous message is decoded by now; this one takes its place.
                self.charge = None;
                if len <= self.max_message {
                    let charge = self
                        .budget
                        .charge(len + 5)
                        .map_err(|e| Status::resource_exhausted(e.message))?;
                    self.charge = Some(charge);
                }
                self.left = len;
            } else {
                let take = self.left.min(data.len());
                self.left -= take;
                data.advance(take);
            }
            if self.seen == 5 && self.left == 0 {
                self.seen = 0;
                self.paused = !self.between;
                if let Some(due) = self.due.as_mut() {
                    due.as_mut().reset(Instant::now() + self.timeout);
                }
            }
        }
        Ok(())
    }

    #[cold]
    fn timed_out(&self) -> Status {
        Status::deadline_exceeded(format!(
            "the request message did not arrive within {} s of the call's start or the \
             previous message (see --body-timeout)",
            self.timeout.as_secs_f64()
        ))
    }
}

impl Body for Watched {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        let this = &mut *self;
        if this.failed {
            return Poll::Ready(None);
        }
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    if let Err(status) = this.account(data) {
                        this.failed = true;
                        return Poll::Ready(Some(Err(status)));
                    }
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(None) => {
                this.due = None;
                Poll::Ready(None)
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(e))),
            Poll::Pending => {
                let late = !this.paused
                    && this
                        .due
                        .as_mut()
                        .is_some_and(|due| due.as_mut().poll(cx).is_ready());
                if late {
                    this.failed = true;
                    return Poll::Ready(Some(Err(this.timed_out())));
                }
                Poll::Pending
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.failed || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Metrics;

    fn watched(budget: usize, max_message: usize) -> Watched {
        let rules = BodyGuardLayer {
            budget: BodyBudget::new(budget, Metrics::shared().expect("an anonymous mapping")),
            timeout: Duration::from_secs(30),
            max_message,
        };
        Watched::new(tonic::body::Body::empty(), &rules)
    }

    fn prefix(len: u32) -> Vec<u8> {
        let mut p = vec![0];
        p.extend_from_slice(&len.to_be_bytes());
        p
    }

    #[tokio::test]
    async fn each_message_is_charged_at_its_prefix_until_the_next_one() {
        let mut w = watched(1000, 1000);
        // A prefix split across frames: nothing is charged until it is whole.
        w.account(&prefix(100)[..3]).unwrap();
        assert_eq!(w.budget.in_use(), 0);
        w.account(&prefix(100)[3..]).unwrap();
        assert_eq!(w.budget.in_use(), 105);
        w.account(&[7; 60]).unwrap();
        assert_eq!((w.seen, w.left), (5, 40));
        // The end of one message and the next (empty) one, then a third, in one frame.
        let mut frame = vec![7; 40];
        frame.extend(prefix(0));
        frame.extend(prefix(200));
        w.account(&frame).unwrap();
        assert_eq!(w.budget.in_use(), 205);
        assert_eq!((w.seen, w.left), (5, 200));
        // A message that does not fit is refused; the previous one's charge is given
        // back as the next one starts.
        let e = w
            .account(&[&[7; 200][..], &prefix(996)].concat())
            .unwrap_err();
        assert_eq!(e.code(), tonic::Code::ResourceExhausted);
        assert!(e.message().contains("--max-body-bytes-in-flight"), "{e}");
        assert_eq!(w.budget.in_use(), 0);
        let mut w = watched(1000, 500);
        w.account(&prefix(300)).unwrap();
        let budget = w.budget.clone();
        assert_eq!(budget.in_use(), 305);
        drop(w); // a call ended or aborted mid-message
        assert_eq!(budget.in_use(), 0);
    }

    #[tokio::test]
    async fn a_message_over_max_body_bytes_is_left_to_tonic() {
        let mut w = watched(1000, 500);
        w.account(&prefix(u32::MAX)).unwrap();
        assert_eq!(w.budget.in_use(), 0);
    }

    #[tokio::test]
    async fn a_streaming_call_waits_between_messages_without_a_clock() {
        let mut w = watched(1000, 1000);
        w.timeout = Duration::from_millis(10);
        w.paused = true;
        w.between = false;
        w.account(&prefix(3)[..2]).unwrap();
        assert!(!w.paused, "a message on its way has the clock running");
        w.account(&[&prefix(3)[2..], &[1, 2, 3][..]].concat())
            .unwrap();
        assert!(w.paused, "between messages the clock stops");
        tokio::time::sleep(Duration::from_millis(50)).await;
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        // An open body with nothing to read: pending, not DEADLINE_EXCEEDED.
        let open = tokio_stream::pending::<Result<Frame<Bytes>, Status>>();
        w.inner = tonic::body::Body::new(http_body_util::StreamBody::new(open));
        assert!(Pin::new(&mut w).poll_frame(&mut cx).is_pending());
        // Once the next message starts, its clock runs.
        w.account(&prefix(3)[..1]).unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        match Pin::new(&mut w).poll_frame(&mut cx) {
            Poll::Ready(Some(Err(s))) => assert_eq!(s.code(), tonic::Code::DeadlineExceeded),
            _ => panic!("a message begun must arrive within body_timeout"),
        }
    }

    #[test]
    fn only_gzip_deflate_and_identity_are_taken() {
        let mut h = http::HeaderMap::new();
        assert!(unsupported_encoding(&h).is_none());
        for ok in ["gzip", "deflate", "identity"] {
            h.insert("grpc-encoding", http::HeaderValue::from_static(ok));
            assert!(unsupported_encoding(&h).is_none());
        }
        h.insert("grpc-encoding", http::HeaderValue::from_static("snappy"));
        let s = unsupported_encoding(&h).unwrap();
        assert_eq!(s.code(), tonic::Code::Unimplemented);
        assert!(s.message().contains("gzip or identity"), "{s}");
    }
}
