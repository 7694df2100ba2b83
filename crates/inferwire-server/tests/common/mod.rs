//! What the integration tests share: a stub model with no Python that counts what it is
//! asked and can be held inside a call, runners and servers around it, and small clients.
//!
//! Nothing here waits a fixed time and then looks: tests wait for a condition (with a
//! generous bound) so that they pass on a loaded machine.
// Each test file uses some of these helpers, never all.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use inferwire_codec::protocol::seldon::reply::Output;
use inferwire_codec::protocol::seldon::{Array, Encoding, Payload, SeldonMessage};
use inferwire_codec::protocol::v2::{InferInput, InferOutput, InferRequest};
use inferwire_codec::{Tensor, TensorData};
use inferwire_server::runner::{Runner, RunnerConfig};
use inferwire_server::{
    Answer, Bound, Inferred, Metrics, Model, ModelError, Prediction, SeldonOps, ServerConfig,
    Serving, StopHandle,
};

/// How long any wait in a test may take before the test fails: far beyond what a
/// passing test needs, so that a slow machine does not fail it.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// A deadline nearer than the runner's inline headroom (30 s): the call always goes to
/// a model thread, never runs on the caller's.
pub fn near_deadline() -> Option<Instant> {
    Some(Instant::now() + PATIENCE)
}

/// Calls wait in the model while the gate is closed.
#[derive(Default)]
struct Gate {
    closed: Mutex<bool>,
    changed: Condvar,
}

impl Gate {
    fn pass(&self) {
        let mut closed = self.closed.lock().unwrap();
        let until = Instant::now() + PATIENCE;
        while *closed && Instant::now() < until {
            closed = self.changed.wait_timeout(closed, PATIENCE).unwrap().0;
        }
    }

    fn set(&self, closed: bool) {
        *self.closed.lock().unwrap() = closed;
        self.changed.notify_all();
    }
}

/// A model that doubles every number it gets (Seldon and V2), and records what it was
/// asked: how many calls of each operation, the rows of each batched call, the thread
/// each predict ran on, and how many calls ran at once.
#[derive(Default)]
pub struct Stub {
    gate: Gate,
    /// `predict_batch` fails (so the batcher runs each request alone).
    fail_batches: bool,
    /// Calls wait (up to `PATIENCE`) until this many have run at once.
    meet: usize,
    pub predicts: AtomicUsize,
    /// The rows of each `predict_batch` call.
    pub batches: Mutex<Vec<usize>>,
    /// The rows of each `infer` call.
    pub infers: Mutex<Vec<usize>>,
    /// The thread of each `predict` call.
    pub threads: Mutex<Vec<ThreadId>>,
    /// Calls that have entered the model (past the gate or not), and left it.
    pub entered: AtomicUsize,
    pub finished: AtomicUsize,
    running: Mutex<usize>,
    met: Condvar,
    /// The most calls that ran at once.
    pub peak: AtomicUsize,
    pub started: AtomicUsize,
    pub stopped: AtomicUsize,
}

impl Stub {
    pub fn new() -> Self {
        Self::default()
    }

    /// Calls wait inside the model until `release`.
    pub fn held() -> Self {
        let stub = Self::default();
        stub.gate.set(true);
        stub
    }

    pub fn failing_batches() -> Self {
        Self {
            fail_batches: true,
            ..Self::default()
        }
    }

    /// Calls wait inside the model until `n` have run at once (once; then none waits).
    pub fn meeting(n: usize) -> Self {
        Self {
            meet: n,
            ..Self::default()
        }
    }

    pub fn release(&self) {
        self.gate.set(false);
    }

    pub fn predicts(&self) -> usize {
        self.predicts.load(Ordering::SeqCst)
    }

    pub fn batches(&self) -> Vec<usize> {
        self.batches.lock().unwrap().clone()
    }

    pub fn infers(&self) -> Vec<usize> {
        self.infers.lock().unwrap().clone()
    }

    pub fn entered(&self) -> usize {
        self.entered.load(Ordering::SeqCst)
    }

    pub fn finished(&self) -> usize {
        self.finished.load(Ordering::SeqCst)
    }

    /// Every call goes through here: counted, held at the gate, and counted out.
    fn inside<T>(&self, f: impl FnOnce() -> T) -> T {
        self.entered.fetch_add(1, Ordering::SeqCst);
        let mut running = self.running.lock().unwrap();
        *running += 1;
        self.peak.fetch_max(*running, Ordering::SeqCst);
        self.met.notify_all();
        let until = Instant::now() + PATIENCE;
        while self.peak.load(Ordering::SeqCst) < self.meet && Instant::now() < until {
            running = self.met.wait_timeout(running, PATIENCE).unwrap().0;
        }
        drop(running);
        self.gate.pass();
        let out = f();
        *self.running.lock().unwrap() -= 1;
        self.finished.fetch_add(1, Ordering::SeqCst);
        out
    }
}

fn doubled(t: &Tensor) -> Tensor {
    let v: Vec<f64> = t
        .data
        .to_f64_vec()
        .unwrap()
        .iter()
        .map(|x| x * 2.0)
        .collect();
    Tensor::new(t.shape.clone(), TensorData::F64(v)).unwrap()
}

fn rows_of(payload: &Payload) -> usize {
    match payload {
        Payload::Data {
            array: Array::Numeric(t),
            ..
        } => t.shape.first().copied().unwrap_or(1),
        _ => 0,
    }
}

impl SeldonOps for Stub {
    fn predict(&self, msg: SeldonMessage) -> Result<Prediction, ModelError> {
        self.inside(|| {
            self.predicts.fetch_add(1, Ordering::SeqCst);
            self.threads
                .lock()
                .unwrap()
                .push(std::thread::current().id());
            let output = match &msg.payload {
                Payload::Data {
                    array: Array::Numeric(t),
                    ..
                } => Some(Output::Array(Array::Numeric(doubled(t)))),
                Payload::Str(s) => Some(Output::Str(s.clone())),
                _ => None,
            };
            let answer = Answer {
                output,
                ..Answer::default()
            };
            Ok(Prediction::Message(
                answer.into_message(&msg.payload, &msg.meta.tags),
            ))
        })
    }

    fn predict_batch(&self, msg: SeldonMessage) -> Result<Answer, ModelError> {
        self.inside(|| {
            self.batches.lock().unwrap().push(rows_of(&msg.payload));
            if self.fail_batches {
                return Err(ModelError::bad_input("this stub fails batches"));
            }
            let Payload::Data {
                array: Array::Numeric(t),
                ..
            } = &msg.payload
            else {
                return Err(ModelError::bad_input("a batch without numbers"));
            };
            Ok(Answer {
                output: Some(Output::Array(Array::Numeric(doubled(t)))),
                ..Answer::default()
            })
        })
    }
}

impl Model for Stub {
    fn seldon(&self) -> Option<&dyn SeldonOps> {
        Some(self)
    }

    fn infer(&self, request: InferRequest) -> Result<Inferred, ModelError> {
        self.inside(|| {
            let x = &request.inputs[0].tensor;
            self.infers
                .lock()
                .unwrap()
                .push(x.shape.first().copied().unwrap_or(1));
            Ok(vec![InferOutput {
                name: "y".into(),
                tensor: doubled(x),
                parameters: Default::default(),
            }]
            .into())
        })
    }

    fn thread_started(&self) {
        self.started.fetch_add(1, Ordering::SeqCst);
    }

    fn thread_stopping(&self) {
        self.stopped.fetch_add(1, Ordering::SeqCst);
    }
}

/// No batching, one model thread, one request at a time and a long queue.
pub fn config() -> RunnerConfig {
    RunnerConfig {
        max_concurrency: 1,
        max_queue: 64,
        model_threads: 1,
        max_batch_size: 1,
        max_batch_delay: Duration::from_millis(5),
    }
}

/// Metrics of their own, with this process counted as a running worker (its gauges
/// then show in `render`).
pub fn metrics() -> Metrics {
    let m = Metrics::shared().expect("an anonymous mapping");
    m.worker_started(std::process::id());
    m
}

pub fn runner(stub: &Arc<Stub>, config: RunnerConfig) -> Arc<Runner> {
    Arc::new(Runner::new(stub.clone(), &config, metrics()).expect("model threads"))
}

/// Waits until `cond` holds, failing the test past `PATIENCE`.
pub async fn until(what: &str, cond: impl Fn() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < PATIENCE, "waited too long for {what}");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// A Seldon message with `rows` as an ndarray.
pub fn rows(rows: &[&[f64]]) -> SeldonMessage {
    let width = rows.first().map_or(0, |r| r.len());
    let values: Vec<f64> = rows.iter().flat_map(|r| r.iter().copied()).collect();
    SeldonMessage {
        payload: Payload::Data {
            names: vec![],
            encoding: Encoding::Ndarray,
            array: Array::Numeric(
                Tensor::new(vec![rows.len(), width], TensorData::F64(values)).unwrap(),
            ),
        },
        ..SeldonMessage::default()
    }
}

/// The numbers of a predicted message.
pub fn values(p: &Prediction) -> Vec<f64> {
    match p {
        Prediction::Message(SeldonMessage {
            payload:
                Payload::Data {
                    array: Array::Numeric(t),
                    ..
                },
            ..
        }) => t.data.to_f64_vec().unwrap(),
        other => panic!("expected numbers, got {other:?}"),
    }
}

/// A V2 request with one FP64 input `x` of `rows` rows.
pub fn infer_request(rows: &[&[f64]]) -> InferRequest {
    let width = rows.first().map_or(0, |r| r.len());
    let values: Vec<f64> = rows.iter().flat_map(|r| r.iter().copied()).collect();
    InferRequest {
        inputs: vec![InferInput {
            name: "x".into(),
            tensor: Tensor::new(vec![rows.len(), width], TensorData::F64(values)).unwrap(),
            parameters: Default::default(),
        }],
        ..InferRequest::default()
    }
}

/// A whole server (REST and gRPC on free ports of 127.0.0.1) serving `model` as its
/// default model `model`; stopped and drained when dropped.
pub struct Server {
    pub http: SocketAddr,
    pub grpc: SocketAddr,
    stop: StopHandle,
    thread: Option<std::thread::JoinHandle<Result<(), inferwire_server::ServeError>>>,
}

/// A small server: one I/O thread, a short grace period, no watchdog.
pub fn server_config() -> ServerConfig {
    ServerConfig {
        host: "127.0.0.1".into(),
        http_port: 0,
        grpc_port: 0,
        io_threads: 1,
        grace_period: Duration::from_secs(1),
        stuck_after: None,
        ..ServerConfig::default()
    }
}

impl Server {
    /// A server whose stub model holds every call until `Stub::release`.
    pub fn held(config: ServerConfig) -> (Arc<Stub>, Self) {
        let stub = Arc::new(Stub::held());
        let server = Self::start(stub.clone(), config);
        (stub, server)
    }

    pub fn start(model: Arc<dyn Model>, config: ServerConfig) -> Self {
        let stop = StopHandle::new();
        let (bound_tx, bound_rx) = std::sync::mpsc::channel::<Bound>();
        let serving = Serving {
            config,
            model,
            others: Vec::new(),
            repository: None,
            worker: 0,
            workers: 1,
            listeners: None,
            extra_metrics: None,
        };
        let handle = stop.clone();
        let thread = std::thread::spawn(move || {
            inferwire_server::serve(serving, metrics(), handle, move |b| {
                let _ = bound_tx.send(b);
            })
        });
        let bound = bound_rx.recv_timeout(PATIENCE).expect("the server started");
        Self {
            http: bound.http,
            grpc: bound.grpc,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.stop();
        if let Some(t) = self.thread.take() {
            let result = t.join().expect("the server thread");
            if !std::thread::panicking() {
                result.expect("the server stopped cleanly");
            }
        }
    }
}

/// One HTTP/1.1 request on a new connection: the status and the body as text.
pub async fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: &str,
) -> (http::StatusCode, String) {
    let (status, _, body) = http_with(addr, method, path, body, &[]).await;
    (status, body)
}

/// `http` with request headers of its own, answering the reply's headers too.
pub async fn http_with(
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: &str,
    headers: &[(&str, &str)],
) -> (http::StatusCode, http::HeaderMap, String) {
    use http_body_util::{BodyExt, Full};
    let stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let (mut send, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .expect("an HTTP/1.1 connection");
    tokio::spawn(conn);
    let mut request = http::Request::builder()
        .method(method)
        .uri(path)
        .header(http::header::HOST, addr.to_string())
        .header(http::header::CONTENT_TYPE, "application/json");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request
        .body(Full::new(bytes::Bytes::from(body.to_owned())))
        .unwrap();
    let response = send.send_request(request).await.expect("a response");
    let status = response.status();
    let reply_headers = response.headers().clone();
    let body = response.into_body().collect().await.expect("a body");
    (
        status,
        reply_headers,
        String::from_utf8_lossy(&body.to_bytes()).into_owned(),
    )
}

/// A tonic client over one HTTP/2 connection to `addr`.
pub async fn grpc(addr: SocketAddr) -> tonic::client::Grpc<H2> {
    let stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let (send, conn) = hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(stream),
    )
    .await
    .expect("an HTTP/2 connection");
    tokio::spawn(conn);
    let origin = format!("http://{addr}").parse().unwrap();
    tonic::client::Grpc::with_origin(H2(send), origin)
}

/// hyper's HTTP/2 client as the tower service tonic's client takes.
#[derive(Clone)]
pub struct H2(hyper::client::conn::http2::SendRequest<tonic::body::Body>);

impl tower::Service<http::Request<tonic::body::Body>> for H2 {
    type Response = http::Response<hyper::body::Incoming>;
    type Error = hyper::Error;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<Self::Response, hyper::Error>> + Send>,
    >;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), hyper::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<tonic::body::Body>) -> Self::Future {
        Box::pin(self.0.send_request(request))
    }
}

/// One unary gRPC call of `path` (`/package.Service/Method`).
pub async fn unary<Req, Resp>(
    client: &mut tonic::client::Grpc<H2>,
    path: &'static str,
    request: Req,
) -> Result<Resp, tonic::Status>
where
    Req: prost::Message + Send + Sync + 'static,
    Resp: prost::Message + Default + Send + Sync + 'static,
{
    client.ready().await.expect("the connection is ready");
    let codec = tonic_prost::ProstCodec::<Req, Resp>::default();
    let path = http::uri::PathAndQuery::from_static(path);
    client
        .unary(tonic::Request::new(request), path, codec)
        .await
        .map(tonic::Response::into_inner)
}
