//! The generator against a reference server whose behaviour is known: a fixed delay, a
//! known share of failures, one stall. Counts must be exact, latencies within tolerance,
//! errors counted by kind, and the open loop must keep its rate and time late requests
//! from when they should have been sent.
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, Request, Response};
use hyper::body::{Body, Frame, Incoming};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use inferwire_bench::load::{self, Load};
use inferwire_bench::target::Target;

#[derive(Default)]
struct Behaviour {
    delay: Duration,
    /// Every n-th request fails (HTTP 500, or gRPC UNAVAILABLE).
    fail_every: u64,
    /// The n-th request waits this long first.
    stall: Option<(u64, Duration)>,
}

struct Reference {
    hits: AtomicU64,
    how: Behaviour,
}

struct Reply {
    data: Option<Bytes>,
    trailers: Option<HeaderMap>,
}

impl Body for Reply {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if let Some(d) = self.data.take() {
            return Poll::Ready(Some(Ok(Frame::data(d))));
        }
        Poll::Ready(self.trailers.take().map(|t| Ok(Frame::trailers(t))))
    }

    // An exact size gives HTTP/1.1 responses a content-length (the splice path).
    fn size_hint(&self) -> hyper::body::SizeHint {
        match (&self.data, &self.trailers) {
            (Some(d), None) => hyper::body::SizeHint::with_exact(d.len() as u64),
            _ => hyper::body::SizeHint::default(),
        }
    }
}

async fn answer(r: Arc<Reference>, req: Request<Incoming>) -> Result<Response<Reply>, Infallible> {
    let n = r.hits.fetch_add(1, Ordering::SeqCst) + 1;
    if let Some((at, d)) = r.how.stall {
        if n == at {
            tokio::time::sleep(d).await;
        }
    }
    tokio::time::sleep(r.how.delay).await;
    let fail = r.how.fail_every > 0 && n.is_multiple_of(r.how.fail_every);
    if req.uri().path() == "/echo" {
        use http_body_util::BodyExt;
        let body = req.into_body().collect().await.unwrap().to_bytes();
        let mut res = Response::new(Reply {
            data: Some(if fail {
                Bytes::from_static(b"injected failure")
            } else {
                body
            }),
            trailers: None,
        });
        if fail {
            *res.status_mut() = http::StatusCode::INTERNAL_SERVER_ERROR;
        }
        return Ok(res);
    }
    let grpc = req
        .headers()
        .get("content-type")
        .is_some_and(|v| v == "application/grpc");
    let reply = if grpc {
        let mut t = HeaderMap::new();
        t.insert(
            "grpc-status",
            HeaderValue::from_static(if fail { "14" } else { "0" }),
        );
        if fail {
            t.insert(
                "grpc-message",
                HeaderValue::from_static("injected%20failure"),
            );
        }
        let mut res = Response::new(Reply {
            data: (!fail).then(|| Bytes::from_static(&[0, 0, 0, 0, 2, 8, 1])),
            trailers: Some(t),
        });
        res.headers_mut()
            .insert("content-type", HeaderValue::from_static("application/grpc"));
        res
    } else {
        let mut res = Response::new(Reply {
            data: Some(Bytes::from_static(if fail {
                b"injected failure"
            } else {
                b"ok"
            })),
            trailers: None,
        });
        if fail {
            *res.status_mut() = http::StatusCode::INTERNAL_SERVER_ERROR;
        }
        res
    };
    Ok(reply)
}

/// Starts the reference server on its own thread and runtime; returns its address.
fn start(how: Behaviour) -> (String, Arc<Reference>) {
    let r = Arc::new(Reference {
        hits: AtomicU64::new(0),
        how,
    });
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let shared = r.clone();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            loop {
                let (s, _) = listener.accept().await.unwrap();
                let r = shared.clone();
                tokio::spawn(async move {
                    let svc = service_fn(move |req| answer(r.clone(), req));
                    let _ = auto::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(s), svc)
                        .await;
                });
            }
        });
    });
    (addr, r)
}

fn http(addr: &str, h2: bool) -> Target {
    Target::http(
        &format!("http://{addr}/predict"),
        Method::POST,
        &[],
        Bytes::from_static(b"{}"),
        h2,
    )
    .unwrap()
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

#[test]
fn closed_loop_counts_are_exact_and_latencies_include_the_delay() {
    for h2 in [false, true] {
        let (addr, r) = start(Behaviour {
            delay: Duration::from_millis(5),
            fail_every: 10,
            ..Default::default()
        });
        let load = Load {
            concurrency: 2,
            requests: Some(100),
            duration: None,
            ..Load::default()
        };
        let rep = load::run(&http(&addr, h2), &load).unwrap();
        assert_eq!(rep.requests, 100);
        assert_eq!(
            r.hits.load(Ordering::SeqCst),
            100,
            "every request reached the server once"
        );
        assert_eq!(rep.status_codes["200"], 90);
        assert_eq!(rep.status_codes["500"], 10);
        assert_eq!(rep.ok, 90);
        assert_eq!(rep.errors, vec!["injected failure".to_string()]);
        assert_eq!(rep.bytes_out, 200);
        assert_eq!(rep.bytes_in, 90 * 2 + 10 * 16);
        let l = &rep.latency;
        assert!(ms(l.min_ns) >= 5.0, "min {} ms", ms(l.min_ns));
        assert!(ms(l.p50_ns) < 5.0 + 10.0, "p50 {} ms", ms(l.p50_ns));
        assert!(l.min_ns <= l.p50_ns && l.p50_ns <= l.p99_ns && l.p99_ns <= l.max_ns);
        assert_eq!(rep.histogram.iter().map(|b| b.count).sum::<u64>(), 100);
    }
}

#[test]
fn grpc_status_codes_and_messages_are_counted() {
    // Four calls in flight on one connection (tasks), then on four connections of their
    // own (the blocking HTTP/2 client, with its HPACK decoder reading hyper's headers).
    for connections in [None, Some(4)] {
        let (addr, r) = start(Behaviour {
            fail_every: 4,
            ..Default::default()
        });
        let t = Target::grpc(&addr, "pkg.Svc/Method", &[], b"\x08\x01").unwrap();
        let load = Load {
            concurrency: 4,
            connections,
            requests: Some(400),
            duration: None,
            ..Load::default()
        };
        let rep = load::run(&t, &load).unwrap();
        assert_eq!((rep.requests, r.hits.load(Ordering::SeqCst)), (400, 400));
        assert_eq!(rep.status_codes["OK"], 300);
        assert_eq!(rep.status_codes["Unavailable"], 100);
        assert_eq!(rep.errors, vec!["injected failure".to_string()]);
        assert_eq!(rep.bytes_out, 400 * 7);
        assert_eq!(rep.bytes_in, 300 * 7);
    }
}

#[test]
fn open_loop_keeps_its_rate() {
    let (addr, r) = start(Behaviour::default());
    let load = Load {
        concurrency: 4,
        rate: Some(200.0),
        duration: Some(Duration::from_secs(1)),
        ..Load::default()
    };
    let rep = load::run(&http(&addr, false), &load).unwrap();
    assert_eq!(rep.requests, 200, "one request per 5 ms for 1 s");
    assert_eq!(r.hits.load(Ordering::SeqCst), 200);
    assert!(
        (rep.sent_rate - 200.0).abs() < 200.0 * 0.05,
        "sent at {}/s",
        rep.sent_rate
    );
    assert_eq!(rep.setup.mode, "open");
}

#[test]
fn a_stall_shows_in_open_loop_latencies_not_in_a_lower_rate() {
    let stall = Behaviour {
        delay: Duration::from_millis(1),
        stall: Some((20, Duration::from_millis(300))),
        ..Default::default()
    };
    let (addr, _) = start(stall);
    let open = Load {
        concurrency: 1,
        rate: Some(100.0),
        duration: Some(Duration::from_secs(1)),
        ..Load::default()
    };
    let rep = load::run(&http(&addr, false), &open).unwrap();
    assert_eq!(
        rep.requests, 100,
        "the requests due during the stall are still sent"
    );
    // About 30 requests were due while request 20 stalled: each is timed from when it
    // should have gone out, so a tenth of all requests waited 150 ms or more.
    assert!(
        ms(rep.latency.p90_ns) > 100.0,
        "p90 {} ms",
        ms(rep.latency.p90_ns)
    );

    // A closed loop sees one slow request and simply sends fewer.
    let (addr, _) = start(Behaviour {
        delay: Duration::from_millis(1),
        stall: Some((20, Duration::from_millis(300))),
        ..Default::default()
    });
    let closed = Load {
        concurrency: 1,
        duration: Some(Duration::from_secs(1)),
        ..Load::default()
    };
    let rep = load::run(&http(&addr, false), &closed).unwrap();
    assert!(
        ms(rep.latency.p90_ns) < 50.0,
        "p90 {} ms",
        ms(rep.latency.p90_ns)
    );
    assert!(ms(rep.latency.max_ns) >= 300.0);
}

#[test]
fn timeouts_and_unreachable_targets() {
    let (addr, _) = start(Behaviour {
        delay: Duration::from_millis(400),
        ..Default::default()
    });
    let load = Load {
        requests: Some(3),
        duration: None,
        timeout: Duration::from_millis(100),
        ..Load::default()
    };
    let rep = load::run(&http(&addr, false), &load).unwrap();
    assert_eq!(rep.requests, 3);
    assert_eq!(rep.status_codes["error"], 3);
    assert!(
        rep.errors[0].contains("no answer within"),
        "{:?}",
        rep.errors
    );

    // Nothing listens on a port just released.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let err = load::run(&http(&format!("127.0.0.1:{port}"), false), &load).unwrap_err();
    assert!(err.contains("connect"), "{err}");
}

#[test]
fn many_http1_connections_run_as_tasks_and_count_the_same() {
    let (addr, r) = start(Behaviour {
        delay: Duration::from_millis(2),
        fail_every: 50,
        ..Default::default()
    });
    let load = Load {
        concurrency: load::THREADS_UP_TO + 16,
        requests: Some(400),
        duration: None,
        ..Load::default()
    };
    let rep = load::run(&http(&addr, false), &load).unwrap();
    assert_eq!((rep.requests, r.hits.load(Ordering::SeqCst)), (400, 400));
    assert_eq!(rep.setup.connections, load::THREADS_UP_TO + 16);
    assert_eq!(rep.status_codes["500"], 8);
    assert!(ms(rep.latency.min_ns) >= 2.0);
}

#[test]
fn large_bodies_go_out_and_come_back_whole() {
    // 300 KB each way, past the server's 64 KB HTTP/2 windows: the response drained by
    // splice on the blocking HTTP/1.1 path, read on the others (HTTP/2 on tasks, and on
    // blocking connections of its own); every byte is counted, and a failure's body is
    // still read for the error set.
    let (addr, _) = start(Behaviour {
        fail_every: 5,
        ..Default::default()
    });
    let body = Bytes::from(vec![b'x'; 300_000]);
    for (h2, concurrency, connections) in [
        (false, 2, None),
        (true, 2, None),
        (true, 2, Some(2)),
        (false, 70, None),
    ] {
        let t = Target::http(
            &format!("http://{addr}/echo"),
            Method::POST,
            &[],
            body.clone(),
            h2,
        )
        .unwrap();
        let r = load::run(
            &t,
            &Load {
                concurrency,
                connections,
                requests: Some(140),
                duration: None,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(r.requests, 140);
        assert_eq!(r.status_codes.get("500"), Some(&28), "{:?}", r.status_codes);
        assert_eq!(r.bytes_in, 112 * 300_000 + 28 * 16);
        assert_eq!(r.bytes_out, 140 * 300_000);
        assert!(
            r.errors.iter().any(|e| e.contains("injected failure")),
            "{:?}",
            r.errors
        );
    }
}
