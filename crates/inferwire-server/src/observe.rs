//! What is recorded about each answered request: metrics always, an access-log line when
//! asked for (`--access-log text|json`), with the request id (`x-request-id` or `puid`).
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
        }
    }

    /// Records the request: `code` is the reply's HTTP status or gRPC code; `target` is
    /// the method and path (REST) or the gRPC method, for the access log.
    pub fn finish(self, app: &App, code: Code, target: &str) {
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
}
