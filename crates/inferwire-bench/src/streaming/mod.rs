//! `inferwire bench stream`: load of streamed replies. Each stream is one request whose
//! answer comes in pieces: server-sent events over HTTP/1.1 or HTTP/2 (`http`, `http2`,
//! `sse`), or replies on a bidirectional gRPC stream (`grpc`). The run measures when each stream's first
//! piece came, the gaps between pieces, pieces and bytes per second, and CPU per piece.
//!
//! Every stream runs as a task on one thread (a current-thread tokio runtime): a stream
//! lasts many round trips, so a blocking thread per stream would save nothing. The loops
//! are `load`'s: closed (`concurrency` streams open, each worker starting its next when
//! its last ended) or open (`rate` streams started per second, at most `concurrency`
//! open, a late one timed from when it was due).
mod grpc;
mod http;
mod http2;
mod page;
mod report;
mod sse;
mod tally;

use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use h2::client::SendRequest;

pub use page::stream_page;
pub use report::{markdown_table, StreamReport};

use crate::cpu;
use crate::load::{budget, Counters, Load, Plan};
use crate::progress::Progress;
use crate::target::{Target, Transport};
use crate::transport::{self, Sender};
use tally::{End, Tally};

/// How a gRPC server shapes its replies on `ModelStreamInfer`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum ReplyShape {
    /// `ModelStreamInferResponse { error_message, infer_response }` (Triton, inferwire).
    Triton,
    /// Bare `ModelInferResponse` messages (MLServer's dataplane).
    Mlserver,
}

/// What to stream: an HTTP/1.1 request answered with server-sent events, or a gRPC
/// call answered with `shape` replies.
#[derive(Clone)]
pub struct StreamTarget {
    pub target: Target,
    pub shape: ReplyShape,
}

impl StreamTarget {
    fn kind(&self) -> &'static str {
        match (self.target.transport, self.shape) {
            (Transport::Grpc, ReplyShape::Triton) => "gRPC stream, Triton replies",
            (Transport::Grpc, ReplyShape::Mlserver) => "gRPC stream, MLServer replies",
            (Transport::H2c, _) => "HTTP/2 server-sent events",
            _ => "HTTP/1.1 server-sent events",
        }
    }
}

/// Runs the load and reports; errors only when the target cannot be reached at all.
pub fn run(target: &StreamTarget, load: &Load) -> Result<StreamReport, String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("starting the runtime: {e}"))?;
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, drive(Rc::new(target.clone()), load.clone()))
}

/// A worker's connection; `None` until (re)opened.
enum Conn {
    Http(Option<http::Conn>),
    /// gRPC, or server-sent events over HTTP/2: streams share it.
    H2(Option<SendRequest<Bytes>>),
}

impl Conn {
    async fn open(t: &StreamTarget) -> Result<Conn, String> {
        Ok(match t.target.transport {
            Transport::Http1 => Conn::Http(Some(http::open(&t.target).await?)),
            _ => Conn::H2(Some(h2_of(transport::connect(&t.target).await?))),
        })
    }

    /// Another handle on the same gRPC connection; none for HTTP/1.1.
    fn share(&self) -> Option<Conn> {
        match self {
            Conn::H2(Some(s)) => Some(Conn::H2(Some(s.clone()))),
            _ => None,
        }
    }

    /// Opens the connection again if the last stream lost it.
    async fn ready(&mut self, t: &StreamTarget) -> Result<(), String> {
        match self {
            Conn::Http(slot @ None) => *slot = Some(http::open(&t.target).await?),
            Conn::H2(slot @ None) => {
                *slot = Some(h2_of(transport::connect(&t.target).await?));
            }
            _ => {}
        }
        Ok(())
    }

    fn lose(&mut self) {
        match self {
            Conn::Http(c) => *c = None,
            Conn::H2(c) => *c = None,
        }
    }

    /// One stream; how it ended and whether the connection is still good.
    async fn stream(&mut self, t: &StreamTarget, tally: &mut Tally) -> (End, bool) {
        match self {
            Conn::Http(Some(c)) => http::stream(c, &t.target, tally).await,
            Conn::H2(Some(s)) if t.target.transport == Transport::Grpc => {
                grpc::stream(s, &t.target, t.shape, tally).await
            }
            Conn::H2(Some(s)) => http2::stream(s, &t.target, tally).await,
            _ => (End::failed("error", "no connection"), false),
        }
    }
}

fn h2_of(s: Sender) -> SendRequest<Bytes> {
    match s {
        Sender::H2(s) => s,
        Sender::H1(_) => unreachable!("gRPC and --http2 targets connect over HTTP/2"),
    }
}

async fn drive(t: Rc<StreamTarget>, load: Load) -> Result<StreamReport, String> {
    let workers = load.concurrency.max(1);
    let conns = match t.target.transport {
        Transport::Http1 => workers,
        _ => load.connections.unwrap_or(1).clamp(1, workers),
    };
    // Opened before the clock starts, so that an unreachable target stops the run with
    // its reason and a stream's time does not include its connection's setup.
    let mut slots: Vec<Conn> = Vec::with_capacity(workers);
    for i in 0..workers {
        let c = match slots.get(i % conns).and_then(Conn::share) {
            Some(shared) if i >= conns => shared,
            _ => Conn::open(&t).await?,
        };
        slots.push(c);
    }
    if let Some(plan) = Plan::warmup(&load) {
        slots = run_workers(&t, slots, plan, Arc::default()).await.0;
    }
    let (duration, limit) = budget(&load);
    let progress = Rc::new(Progress::new(load.progress, duration, limit));
    let client_before = cpu::own();
    let server_before = cpu::trees(&load.server_pids);
    let plan = Plan::measured(&load);
    let counters = Arc::new(Counters::default());
    let ticker = progress.enabled().then(|| {
        let (progress, counters) = (progress.clone(), counters.clone());
        tokio::task::spawn_local(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(250)).await;
                progress.show(counters.done.load(Ordering::Relaxed));
            }
        })
    });
    let (_, tally) = run_workers(&t, slots, plan, counters).await;
    if let Some(x) = ticker {
        x.abort();
    }
    progress.finish();
    let client_cpu = cpu::own().saturating_sub(client_before);
    let server_cpu =
        server_before.and_then(|b| Some(cpu::trees(&load.server_pids)?.saturating_sub(b)));
    Ok(StreamReport::new(
        &tally,
        report::RunInfo {
            target: t.target.url(),
            transport: t.kind().to_string(),
            reply: (t.target.transport == Transport::Grpc).then_some(t.shape),
            load: &load,
            connections: conns,
            start: plan.start,
            client_cpu,
            server_cpu,
        },
    ))
}

/// Runs one worker per connection handle until the plan says stop; gives them back.
async fn run_workers(
    t: &Rc<StreamTarget>,
    slots: Vec<Conn>,
    plan: Plan,
    counters: Arc<Counters>,
) -> (Vec<Conn>, Tally) {
    let handles: Vec<_> = slots
        .into_iter()
        .map(|c| tokio::task::spawn_local(worker(t.clone(), c, plan, counters.clone())))
        .collect();
    crate::load::tasks::gathered(handles, Tally::merge).await
}

async fn worker(
    t: Rc<StreamTarget>,
    mut conn: Conn,
    plan: Plan,
    counters: Arc<Counters>,
) -> (Conn, Tally) {
    let mut tally = Tally::default();
    while let Some(intended) = plan.ticket(&counters.issued) {
        let late = match intended {
            Some(at) if at > Instant::now() => {
                tokio::time::sleep_until(at.into()).await;
                None
            }
            // Every worker was busy: timed from when it was due.
            Some(at) => Some(at),
            None => None,
        };
        let reopened = conn.ready(&t).await;
        tally.begin(late.unwrap_or_else(Instant::now));
        if let Err(e) = reopened {
            tally.end(End::failed("error", e));
            counters.done.fetch_add(1, Ordering::Relaxed);
            // A refused connection must not become a busy loop.
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        }
        let end = match tokio::time::timeout(plan.timeout, conn.stream(&t, &mut tally)).await {
            Ok((end, keep)) => {
                if !keep {
                    conn.lose();
                }
                end
            }
            Err(_) => {
                conn.lose();
                let m = format!("the stream did not end within {:?}", plan.timeout);
                End::failed("error", m)
            }
        };
        tally.end(end);
        counters.done.fetch_add(1, Ordering::Relaxed);
    }
    (conn, tally)
}

#[cfg(test)]
mod tests {
    use inferwire_codec::pb::inference::{infer_parameter::ParameterChoice, ModelInferRequest};
    use prost::Message;

    /// `stream --call ... -d JSON`: the V2 JSON request as the `ModelInferRequest` sent,
    /// typed contents for every common datatype and the parameters a streaming model reads.
    #[test]
    fn v2_json_requests_become_typed_protobuf() {
        let body = br#"{"id": "r1", "inputs": [
            {"name": "b", "datatype": "BYTES", "shape": [2], "data": ["hi", "yo"]},
            {"name": "i", "datatype": "INT32", "shape": [2], "data": [1, -2]},
            {"name": "l", "datatype": "INT64", "shape": [1], "data": [3]},
            {"name": "f", "datatype": "FP32", "shape": [1], "data": [1.5]},
            {"name": "d", "datatype": "FP64", "shape": [1], "data": [2.5]},
            {"name": "t", "datatype": "BOOL", "shape": [2], "data": [true, false]}],
            "parameters": {"n": 3, "triton_enable_empty_final_response": true}}"#;
        let pb = crate::payload::v2_json_to_protobuf(body, "llm", false).unwrap();
        let r = ModelInferRequest::decode(&pb[..]).unwrap();
        assert_eq!((r.model_name.as_str(), r.id.as_str()), ("llm", "r1"));
        let c = |k: usize| r.inputs[k].contents.clone().unwrap();
        assert_eq!(c(0).bytes_contents, [&b"hi"[..], &b"yo"[..]]);
        assert_eq!(c(1).int_contents, [1, -2]);
        assert_eq!(c(2).int64_contents, [3]);
        assert_eq!(c(3).fp32_contents, [1.5]);
        assert_eq!(c(4).fp64_contents, [2.5]);
        assert_eq!(c(5).bool_contents, [true, false]);
        assert!(r.raw_input_contents.is_empty());
        let p = |k: &str| r.parameters[k].parameter_choice.clone();
        assert_eq!(p("n"), Some(ParameterChoice::Int64Param(3)));
        assert_eq!(
            p("triton_enable_empty_final_response"),
            Some(ParameterChoice::BoolParam(true))
        );
    }
}
