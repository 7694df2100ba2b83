//! `stream` against a reference SSE server (hyper, HTTP/1.1 and h2c on one port) whose
//! pieces come a known delay apart: piece counts must be exact, the first piece no sooner
//! than its delay, and in an open loop a stream that could not start when due is timed
//! from when it was due.
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, Response};
use hyper::body::{Body, Frame, Incoming};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use inferwire_bench::load::Load;
use inferwire_bench::streaming::{self, ReplyShape, StreamTarget};
use inferwire_bench::target::Target;
use tokio::sync::mpsc;

/// A body fed by a channel: each message is one frame, sent when the server's task
/// writes it.
struct Events(mpsc::Receiver<Bytes>);

impl Body for Events {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.0.poll_recv(cx).map(|d| d.map(|d| Ok(Frame::data(d))))
    }
}

struct Reference {
    pieces: usize,
    delay: Duration,
    /// The first stream waits this long before its first piece.
    first_stall: Duration,
    hits: AtomicU64,
}

async fn answer(
    r: Arc<Reference>,
    _req: Request<Incoming>,
) -> Result<Response<Events>, Infallible> {
    let n = r.hits.fetch_add(1, Ordering::SeqCst);
    let (tx, rx) = mpsc::channel(4);
    tokio::spawn(async move {
        if n == 0 {
            tokio::time::sleep(r.first_stall).await;
        }
        for i in 0..r.pieces {
            tokio::time::sleep(r.delay).await;
            let event = format!(": comment\ndata: {{\"text\":\ndata: \"{i:08}\"}}\r\n\r\n");
            // The first event's data is one line, the rest two: either way one piece.
            let event = if i == 0 {
                event.replacen(":\ndata: ", ":", 1)
            } else {
                event
            };
            if tx.send(Bytes::from(event)).await.is_err() {
                return;
            }
        }
    });
    let mut res = Response::new(Events(rx));
    res.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/event-stream"),
    );
    Ok(res)
}

/// Starts the server on its own runtime thread; its address.
fn start(r: Reference) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    listener.set_nonblocking(true).unwrap();
    let r = Arc::new(r);
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            loop {
                let (s, _) = listener.accept().await.unwrap();
                let r = r.clone();
                tokio::spawn(async move {
                    let svc = service_fn(move |req| answer(r.clone(), req));
                    let _ = auto::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(s), svc)
                        .await;
                });
            }
        });
    });
    addr
}

fn target(addr: &str, h2: bool) -> StreamTarget {
    let url = format!("http://{addr}/v2/models/m/infer_stream");
    let body = Bytes::from_static(b"{}");
    StreamTarget {
        target: Target::http(&url, Method::POST, &[], body, h2).unwrap(),
        shape: ReplyShape::Triton,
    }
}

#[test]
fn pieces_are_counted_and_timed_over_http1_and_h2c() {
    let addr = start(Reference {
        pieces: 3,
        delay: Duration::from_millis(20),
        first_stall: Duration::ZERO,
        hits: AtomicU64::new(0),
    });
    for h2 in [false, true] {
        let load = Load {
            concurrency: 2,
            requests: Some(6),
            duration: None,
            ..Load::default()
        };
        let r = streaming::run(&target(&addr, h2), &load).unwrap();
        assert_eq!((r.streams, r.ok, r.pieces), (6, 6, 18), "h2 {h2}: {r:?}");
        assert_eq!((r.pieces_per_stream.min, r.pieces_per_stream.max), (3, 3));
        // Per stream: {"text":"00000000"} (19 bytes), then two of 20 (a "\n" joins their lines).
        assert_eq!(r.bytes, 6 * (19 + 20 + 20));
        assert!(r.time_to_first_piece.min_ns >= 19_900_000, "{r:?}");
        assert!(r.stream_duration.min_ns >= 59_900_000, "{r:?}");
        assert_eq!(r.status_codes.get("200"), Some(&6));
        assert_eq!(r.connections, if h2 { 1 } else { 2 });
    }
}

#[test]
fn late_streams_are_timed_from_when_they_were_due() {
    // One worker, a stream due every 50 ms, the first stalled 300 ms: the next three
    // start late, and their first pieces are timed from their due times.
    let addr = start(Reference {
        pieces: 1,
        delay: Duration::from_millis(5),
        first_stall: Duration::from_millis(300),
        hits: AtomicU64::new(0),
    });
    let load = Load {
        concurrency: 1,
        rate: Some(20.0),
        requests: Some(4),
        duration: None,
        ..Load::default()
    };
    let r = streaming::run(&target(&addr, false), &load).unwrap();
    assert_eq!((r.streams, r.ok, r.pieces), (4, 4, 4), "{r:?}");
    // Without the correction three of four would be about 5 ms.
    assert!(
        r.time_to_first_piece.p50_ns >= 150_000_000,
        "{:?}",
        r.time_to_first_piece
    );
    assert_eq!(r.mode, "open");
}
