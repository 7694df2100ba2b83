//! What is recorded about each answered request: metrics always, an access-log line when
//! asked for (`--access-log text|json`), with the request id (`x-request-id` or `puid`),
//! and its span when it is traced (`crate::trace`: each method here that touches the
//! span does nothing, past one check, when the request is not traced).
use std::io::Write;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use crate::app::App;
use crate::config::AccessLog;
use crate::metrics::{Code, Encoding, Protocol, Route};

pub struct Observed {
    pub protocol: Protocol,
    pub route: Route,
    pub start: Instant,
    /// How the request's payload was encoded, once decoded.
    pub encoding: Encoding,
    /// `x-request-id` if the client sent one, else the message's `puid`.
    pub id: String,
    /// The metrics slot of the model that served it (0: none, e.g. a 404).
    pub model: usize,
    /// Its span, when tracing is on and it is sampled.
    pub trace: Option<Box<crate::trace::Active>>,
}

impl Observed {
    pub fn new(protocol: Protocol, route: Route) -> Self {
        Self {
            protocol,
            route,
            start: Instant::now(),
            encoding: Encoding::None,
            id: String::new(),
            model: 0,
            trace: None,
        }
    }

    /// Starts the request's span when the server traces and the sampler keeps it
    /// (`headers`: REST's headers or gRPC's metadata, for `traceparent`). Health probes
    /// are not traced.
    #[inline]
    pub fn traced(&mut self, app: &App, headers: &http::HeaderMap) {
        if let Some(tracer) = &app.tracer {
            if self.route != Route::Health {
                self.trace = tracer.begin(headers);
            }
        }
    }

    /// Now, if the request is traced (the start of a part, for `part`).
    #[inline]
    pub fn clock(&self) -> Option<Instant> {
        self.trace.as_ref().map(|_| Instant::now())
    }

    /// A part of the request (`decode`, `infer`, `encode`) that ran from `from` to now.
    #[inline]
    pub fn part(&mut self, name: &'static str, from: Option<Instant>) {
        if let (Some(t), Some(from)) = (&mut self.trace, from) {
            t.part(name, from);
        }
    }

    /// A sink for the model call's timing, if the request is traced (`None`, nothing
    /// made, when it is not).
    #[inline]
    pub fn call_timing(&self) -> Option<crate::runner::CallTiming> {
        self.trace
            .as_ref()
            .map(|_| crate::runner::CallTiming::default())
    }

    /// The `infer` part, from `from` to now, with its `queue` and `model` children when
    /// `timing` heard of the model call.
    #[inline]
    pub fn infer_part(
        &mut self,
        from: Option<Instant>,
        timing: Option<&crate::runner::CallTiming>,
    ) {
        if let (Some(t), Some(from)) = (&mut self.trace, from) {
            t.infer(from, timing.and_then(crate::runner::CallTiming::get));
        }
    }

    /// The model that serves the request, for its span.
    #[inline]
    pub fn served_by(&mut self, name: &str, version: &str) {
        if let Some(t) = &mut self.trace {
            t.model = Some((name.to_owned(), version.to_owned()));
        }
    }

    /// The request's trace context, for the model: `traceparent` (and `tracestate`)
    /// naming the server span, in the request's parameters.
    #[inline]
    pub fn pass_context(&self, parameters: &mut inferwire_codec::protocol::v2::Parameters) {
        if let Some(t) = &self.trace {
            parameters.insert(
                "traceparent".to_owned(),
                serde_json::Value::String(t.ctx.traceparent()),
            );
            if let Some(state) = &t.tracestate {
                parameters.insert(
                    "tracestate".to_owned(),
                    serde_json::Value::String(state.clone()),
                );
            }
        }
    }

    /// Records the request: `code` is the reply's HTTP status or gRPC code; `target` is
    /// the method and path (REST) or the gRPC method, for the access log.
    pub fn finish(mut self, app: &App, code: Code, target: &str) {
        if let Some(t) = self.trace.take() {
            self.end_span(app, *t, code, target);
        }
        let took = self.start.elapsed();
        app.answered_one();
        app.metrics.request(
            self.model,
            self.protocol,
            self.route,
            self.encoding,
            code,
            took,
        );
        let code = code.text();
        let encoding = self.encoding.label();
        let protocol = match self.protocol {
            Protocol::Rest => "rest",
            Protocol::Grpc => "grpc",
        };
        match app.config.access_log {
            AccessLog::Off => {}
            AccessLog::Text => tracing::info!(
                "access {protocol} {target} {code} {:.3}ms encoding={} id={}",
                took.as_secs_f64() * 1e3,
                encoding,
                if self.id.is_empty() { "-" } else { &self.id }
            ),
            AccessLog::Json => {
                let ts = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_or(0.0, |d| d.as_secs_f64());
                let line = serde_json::json!({
                    "ts": ts,
                    "protocol": protocol,
                    "target": target,
                    "code": code,
                    "ms": took.as_secs_f64() * 1e3,
                    "encoding": encoding,
                    "id": self.id,
                });
                // One write per line, so that lines from several threads never interleave.
                let mut text = line.to_string();
                text.push('\n');
                let _ = std::io::stderr().lock().write_all(text.as_bytes());
            }
        }
    }

    /// The request's span, ended and handed to the exporter.
    #[cold]
    fn end_span(&self, app: &App, mut t: crate::trace::Active, code: Code, target: &str) {
        use crate::trace::Attr;
        let Some(tracer) = &app.tracer else { return };
        let (protocol, error, status) = match code {
            Code::Http(status) => (
                "rest",
                status >= 500,
                ("http.response.status_code", i64::from(status)),
            ),
            Code::Grpc(c) => (
                "grpc",
                matches!(
                    c,
                    tonic::Code::Unknown
                        | tonic::Code::DeadlineExceeded
                        | tonic::Code::Unimplemented
                        | tonic::Code::Internal
                        | tonic::Code::Unavailable
                        | tonic::Code::DataLoss
                ),
                ("rpc.grpc.status_code", c as i64),
            ),
        };
        let (model, version) = t
            .model
            .take()
            .unwrap_or_else(|| (app.metrics.slot_name(self.model), String::new()));
        let mut attributes = vec![
            ("inferwire.protocol", Attr::Str(protocol.into())),
            ("inferwire.route", Attr::Str(self.route.label().into())),
            (
                "inferwire.dialect",
                Attr::Str(app.config.dialect.name().into()),
            ),
            (
                "inferwire.encoding",
                Attr::Str(self.encoding.label().into()),
            ),
            (status.0, Attr::Int(status.1)),
        ];
        if !model.is_empty() {
            attributes.push(("inferwire.model.name", Attr::Str(model)));
        }
        if !version.is_empty() {
            attributes.push(("inferwire.model.version", Attr::Str(version)));
        }
        if !self.id.is_empty() {
            attributes.push(("inferwire.request_id", Attr::Str(self.id.clone())));
        }
        tracer.end(t.finish(target.to_owned(), error, attributes));
    }
}
