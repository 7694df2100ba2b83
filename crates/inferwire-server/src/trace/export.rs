//! Spans leave the server here: finished requests go into a bounded queue (a full queue
//! drops them, counted), and one thread per worker, off the request path, gathers them
//! into batches (every second, or sooner at `BATCH_SPANS`) and sends each batch as one
//! OTLP export request, over HTTP/protobuf (`POST .../v1/traces`) or gRPC
//! (`TraceService/Export`), on a new connection, within the export timeout. A collector
//! that is down or slow costs the batch (counted as failed), never a request.
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderName, HeaderValue, Uri};
use http_body_util::{BodyExt, Full};
use prost::Message;
use tokio::sync::mpsc;

use super::pb;
use super::span::{key_value, Attr, Finished};
use crate::metrics::Metrics;

/// Spans sent in one export request at most.
pub const BATCH_SPANS: usize = 512;
/// How long a span waits for its batch at most.
const BATCH_DELAY: Duration = Duration::from_secs(1);
/// OTLP's gRPC method.
const GRPC_EXPORT: &str = "/opentelemetry.proto.collector.trace.v1.TraceService/Export";
/// The largest reply read from a collector (its body is not needed beyond its status).
const MAX_REPLY: usize = 64 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    HttpProtobuf,
    Grpc,
}

/// Where and how spans are sent.
#[derive(Debug, Clone)]
pub struct ExportConfig {
    /// `http://host:port/path`: the full URL for HTTP/protobuf; for gRPC only the
    /// authority counts.
    pub url: Uri,
    pub protocol: Protocol,
    /// Added to every export request (`OTEL_EXPORTER_OTLP_HEADERS`).
    pub headers: Vec<(HeaderName, HeaderValue)>,
    pub timeout: Duration,
    /// Finished requests waiting to be sent at most; more are dropped.
    pub queue: usize,
    /// The resource's `service.name`.
    pub service_name: String,
}

/// The request path's end of the queue.
pub struct Queue {
    tx: mpsc::Sender<Finished>,
    metrics: Metrics,
}

impl Queue {
    /// Hands a finished request to the exporter, or drops and counts it when the queue is
    /// full (or the exporter gone). Never waits.
    pub fn push(&self, finished: Finished) {
        if let Err(e) = self.tx.try_send(finished) {
            let lost = match e {
                mpsc::error::TrySendError::Full(f) | mpsc::error::TrySendError::Closed(f) => f,
            };
            self.metrics.spans_dropped(lost.span_count() as u64);
        }
    }
}

/// Starts this worker's exporter thread; the queue feeds it. The thread ends, after a
/// last export, when every `Queue` is dropped.
pub fn start(config: ExportConfig, metrics: Metrics) -> std::io::Result<Queue> {
    let (tx, rx) = mpsc::channel(config.queue.max(1));
    metrics.tracing_on();
    std::thread::Builder::new()
        .name("inferwire-trace-export".into())
        .spawn(move || {
            let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                tracing::error!("traces: no runtime for the exporter; spans are dropped");
                return;
            };
            runtime.block_on(run(config, rx, metrics));
        })?;
    Ok(Queue { tx, metrics })
}

async fn run(config: ExportConfig, mut rx: mpsc::Receiver<Finished>, metrics: Metrics) {
    let mut batch: Vec<Finished> = Vec::new();
    let mut spans = 0;
    let mut warned = false;
    loop {
        let due = tokio::time::Instant::now() + BATCH_DELAY;
        let mut closed = false;
        while spans < BATCH_SPANS {
            match tokio::time::timeout_at(due, rx.recv()).await {
                Ok(Some(f)) => {
                    spans += f.span_count();
                    batch.push(f);
                }
                Ok(None) => {
                    closed = true;
                    break;
                }
                Err(_) => break,
            }
        }
        if !batch.is_empty() {
            let body = encode(&config, std::mem::take(&mut batch));
            match tokio::time::timeout(config.timeout, send(&config, body)).await {
                Ok(Ok(())) => {
                    metrics.spans_exported(spans as u64);
                    warned = false;
                }
                Ok(Err(why)) => failed(&metrics, spans, &mut warned, &why),
                Err(_) => failed(&metrics, spans, &mut warned, "timed out"),
            }
            spans = 0;
        }
        if closed {
            return;
        }
    }
}

/// A failed export: counted; logged once until an export succeeds again.
fn failed(metrics: &Metrics, spans: usize, warned: &mut bool, why: &str) {
    metrics.spans_failed(spans as u64);
    if !*warned {
        tracing::warn!("traces: export failed ({why}); spans are counted in inferwire_trace_spans_failed_total until it works again");
        *warned = true;
    }
}

fn encode(config: &ExportConfig, batch: Vec<Finished>) -> Vec<u8> {
    let mut spans = Vec::with_capacity(batch.len() * 4);
    for f in batch {
        f.into_spans(&mut spans);
    }
    let request = pb::ExportTraceServiceRequest {
        resource_spans: vec![pb::ResourceSpans {
            resource: Some(pb::Resource {
                attributes: vec![
                    key_value("service.name", Attr::Str(config.service_name.clone())),
                    key_value("telemetry.sdk.name", Attr::Str("inferwire".into())),
                    key_value("telemetry.sdk.language", Attr::Str("rust".into())),
                ],
            }),
            scope_spans: vec![pb::ScopeSpans {
                scope: Some(pb::InstrumentationScope {
                    name: "inferwire".into(),
                    version: env!("CARGO_PKG_VERSION").into(),
                }),
                spans,
            }],
        }],
    };
    request.encode_to_vec()
}

/// One export request on a new connection; `Err` says why it failed.
async fn send(config: &ExportConfig, message: Vec<u8>) -> Result<(), String> {
    let authority = config.url.authority().ok_or("no host in the endpoint")?;
    let port = authority.port_u16().unwrap_or(80);
    let stream = tokio::net::TcpStream::connect((authority.host(), port))
        .await
        .map_err(|e| format!("connect to {authority}: {e}"))?;
    let _ = stream.set_nodelay(true);
    let io = hyper_util::rt::TokioIo::new(stream);
    let (path, content_type, body) = match config.protocol {
        Protocol::HttpProtobuf => (
            config.url.path().to_owned(),
            "application/x-protobuf",
            message,
        ),
        Protocol::Grpc => {
            // gRPC's frame: not compressed, then the length, then the message.
            let mut framed = Vec::with_capacity(message.len() + 5);
            framed.push(0);
            framed.extend_from_slice(&(message.len() as u32).to_be_bytes());
            framed.extend_from_slice(&message);
            (GRPC_EXPORT.to_owned(), "application/grpc", framed)
        }
    };
    // HTTP/1.1 sends the path alone (origin form, with a Host header); HTTP/2 takes the
    // scheme and authority from the URI for its pseudo-headers.
    let uri = match config.protocol {
        Protocol::HttpProtobuf => Uri::builder().path_and_query(path).build(),
        Protocol::Grpc => Uri::builder()
            .scheme("http")
            .authority(authority.clone())
            .path_and_query(path)
            .build(),
    }
    .map_err(|e| e.to_string())?;
    let mut req = http::Request::post(uri)
        .header(http::header::CONTENT_TYPE, content_type)
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| e.to_string())?;
    if config.protocol == Protocol::Grpc {
        req.headers_mut()
            .insert(http::header::TE, HeaderValue::from_static("trailers"));
    } else {
        req.headers_mut().insert(
            http::header::HOST,
            HeaderValue::from_str(authority.as_str()).map_err(|e| e.to_string())?,
        );
    }
    for (name, value) in &config.headers {
        req.headers_mut().insert(name.clone(), value.clone());
    }
    let reply = match config.protocol {
        Protocol::HttpProtobuf => {
            let (mut sender, conn) = hyper::client::conn::http1::handshake(io)
                .await
                .map_err(|e| e.to_string())?;
            tokio::spawn(conn);
            sender.send_request(req).await.map_err(|e| e.to_string())?
        }
        Protocol::Grpc => {
            let (mut sender, conn) =
                hyper::client::conn::http2::handshake(hyper_util::rt::TokioExecutor::new(), io)
                    .await
                    .map_err(|e| e.to_string())?;
            tokio::spawn(conn);
            sender.send_request(req).await.map_err(|e| e.to_string())?
        }
    };
    let status = reply.status();
    let headers = reply.headers().clone();
    let body = http_body_util::Limited::new(reply.into_body(), MAX_REPLY)
        .collect()
        .await
        .map_err(|e| format!("reading the reply: {e}"))?;
    if !status.is_success() {
        return Err(format!("the collector answered {status}"));
    }
    if config.protocol == Protocol::Grpc {
        // A trailers-only reply carries the status in its headers.
        let code = body
            .trailers()
            .and_then(|t| t.get("grpc-status"))
            .or_else(|| headers.get("grpc-status"))
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        if code != "0" {
            return Err(format!("the collector answered grpc-status {code:?}"));
        }
    }
    Ok(())
}
