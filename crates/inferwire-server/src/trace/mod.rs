//! OpenTelemetry traces of the requests served (off unless an OTLP endpoint is set):
//! a request continues the trace its `traceparent` names (`context`), or starts one when
//! the sampler says so (`sampler`); it is recorded as a server span with its parts as
//! child spans (`span`) and exported by OTLP from a thread of its own (`export`). When
//! tracing is off, `App::tracer` is `None` and the request path checks that once.
pub mod context;
pub mod export;
pub mod sampler;
pub mod span;

use http::HeaderMap;

pub use export::{ExportConfig, Protocol};
pub use sampler::Sampler;
pub use span::{Active, Attr};

use context::SpanContext;

/// OTLP's messages (`proto/otlp_trace.proto`).
#[allow(clippy::all, clippy::pedantic)]
pub mod pb {
    include!(concat!(env!("OUT_DIR"), "/otlp.rs"));
}

/// The traces' settings (`trace_*` and `otlp_*` in `inferwire.settings`).
#[derive(Debug, Clone)]
pub struct TraceConfig {
    pub sampler: Sampler,
    pub export: ExportConfig,
}

/// A worker's tracer: the sampler, and the queue to its exporter.
pub struct Tracer {
    sampler: Sampler,
    queue: export::Queue,
}

impl Tracer {
    /// Starts the worker's exporter; `None` (with the reason logged) if its thread cannot
    /// start, or if the sampler can never sample.
    pub fn start(config: &TraceConfig, metrics: crate::metrics::Metrics) -> Option<Self> {
        if config.sampler.never() {
            return None;
        }
        match export::start(config.export.clone(), metrics) {
            Ok(queue) => Some(Self {
                sampler: config.sampler,
                queue,
            }),
            Err(e) => {
                tracing::error!("traces: the exporter did not start ({e}); nothing is traced");
                None
            }
        }
    }

    /// The request's span, if it is sampled: in the caller's trace when its
    /// `traceparent` is valid, else in a new one.
    pub fn begin(&self, headers: &HeaderMap) -> Option<Box<Active>> {
        let parent = headers
            .get("traceparent")
            .and_then(|v| context::parse_traceparent(v.as_bytes()));
        let trace_id = parent.map_or_else(span::trace_id, |p| p.trace_id);
        if !self.sampler.sample(parent.as_ref(), &trace_id) {
            return None;
        }
        let tracestate = parent
            .and(headers.get("tracestate"))
            .and_then(|v| context::parse_tracestate(v.as_bytes()));
        let ctx = SpanContext {
            trace_id,
            span_id: span::span_id(),
            flags: parent.map_or(0, |p| p.flags) | 1,
        };
        Some(Box::new(Active::new(
            ctx,
            parent.map(|p| p.span_id),
            tracestate,
        )))
    }

    pub fn end(&self, finished: span::Finished) {
        self.queue.push(finished);
    }
}
