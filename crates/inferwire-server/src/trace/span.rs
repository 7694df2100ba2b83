//! One traced request while it runs (`Active`: its context, when it began, the timed
//! parts), and the record of it handed to the exporter (`Finished`), which turns it into
//! OTLP spans off the request path: the request's server span and one child span for
//! each part.
use std::cell::Cell;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use super::context::SpanContext;
use super::pb;

/// An attribute's value.
#[derive(Debug, Clone, PartialEq)]
pub enum Attr {
    Str(String),
    Int(i64),
}

/// A timed part of a request: its name, when it ran, the part it is within (an index
/// into the parts; `None`: directly under the server span), and the size of the model
/// call's batch (the model-call part's only attribute).
#[derive(Debug, Clone, Copy)]
struct Part<T> {
    name: &'static str,
    from: T,
    to: T,
    within: Option<usize>,
    batch: Option<usize>,
}

/// A request being traced.
#[derive(Debug)]
pub struct Active {
    /// The server span's own context (the caller's trace id, a new span id).
    pub ctx: SpanContext,
    /// The caller's span, when the request carried a `traceparent`.
    pub parent: Option<[u8; 8]>,
    pub tracestate: Option<String>,
    start: Instant,
    start_ns: u64,
    parts: Vec<Part<Instant>>,
    /// The model that served it (name, version), when the handler said.
    pub model: Option<(String, String)>,
}

impl Active {
    pub fn new(ctx: SpanContext, parent: Option<[u8; 8]>, tracestate: Option<String>) -> Self {
        Self {
            ctx,
            parent,
            tracestate,
            start: Instant::now(),
            start_ns: unix_nanos(),
            parts: Vec::with_capacity(6),
            model: None,
        }
    }

    /// Marks a part of the request (decode, infer, encode) that ran from `from` to now.
    pub fn part(&mut self, name: &'static str, from: Instant) {
        self.parts.push(Part {
            name,
            from,
            to: Instant::now(),
            within: None,
            batch: None,
        });
    }

    /// The `infer` part from `from` to now and, when the model call's timing is known,
    /// its two children: `queue` (from `from` until the call began: admission, the
    /// model threads' queue and the batch's gathering) and `model` (the call, with the
    /// size of its batch).
    pub fn infer(&mut self, from: Instant, called: Option<crate::runner::Called>) {
        self.part("infer", from);
        let Some(c) = called else { return };
        let within = Some(self.parts.len() - 1);
        let start = c.start.max(from);
        self.parts.push(Part {
            name: "queue",
            from,
            to: start,
            within,
            batch: None,
        });
        self.parts.push(Part {
            name: "model",
            from: start,
            to: start + c.took,
            within,
            batch: Some(c.batch),
        });
    }

    /// The request's span, ended now, with its parts.
    pub fn finish(
        self,
        name: String,
        error: bool,
        attributes: Vec<(&'static str, Attr)>,
    ) -> Finished {
        let at = |t: Instant| {
            self.start_ns
                .saturating_add(t.saturating_duration_since(self.start).as_nanos() as u64)
        };
        Finished {
            ctx: self.ctx,
            parent: self.parent,
            tracestate: self.tracestate.unwrap_or_default(),
            name,
            start_ns: self.start_ns,
            end_ns: at(Instant::now()),
            parts: self
                .parts
                .iter()
                .map(|p| Part {
                    name: p.name,
                    from: at(p.from),
                    to: at(p.to),
                    within: p.within,
                    batch: p.batch,
                })
                .collect(),
            attributes,
            error,
        }
    }
}

/// A traced request, ended.
#[derive(Debug)]
pub struct Finished {
    ctx: SpanContext,
    parent: Option<[u8; 8]>,
    tracestate: String,
    name: String,
    start_ns: u64,
    end_ns: u64,
    parts: Vec<Part<u64>>,
    attributes: Vec<(&'static str, Attr)>,
    error: bool,
}

impl Finished {
    /// How many OTLP spans it becomes.
    pub fn span_count(&self) -> usize {
        1 + self.parts.len()
    }

    /// Its OTLP spans, appended to `out`: the server span, then one internal child span
    /// per part.
    pub fn into_spans(self, out: &mut Vec<pb::Span>) {
        // Bits 8 and 9: whether the parent is known to be remote, and that it is.
        let remote = if self.parent.is_some() { 0x300 } else { 0x100 };
        let flags = u32::from(self.ctx.flags & 1);
        let status = pb::Status {
            message: String::new(),
            code: if self.error {
                pb::status::StatusCode::Error as i32
            } else {
                pb::status::StatusCode::Unset as i32
            },
        };
        let ids: Vec<[u8; 8]> = self.parts.iter().map(|_| span_id()).collect();
        for (part, id) in self.parts.iter().zip(&ids) {
            let parent = part.within.map_or(self.ctx.span_id, |i| ids[i]);
            let attributes = part
                .batch
                .map(|n| {
                    vec![key_value(
                        "inferwire.batch.size",
                        Attr::Int(i64::try_from(n).unwrap_or(i64::MAX)),
                    )]
                })
                .unwrap_or_default();
            out.push(pb::Span {
                trace_id: self.ctx.trace_id.to_vec(),
                span_id: id.to_vec(),
                trace_state: self.tracestate.clone(),
                parent_span_id: parent.to_vec(),
                name: part.name.to_owned(),
                kind: pb::span::SpanKind::Internal as i32,
                start_time_unix_nano: part.from,
                end_time_unix_nano: part.to,
                attributes,
                flags: flags | 0x100,
                ..Default::default()
            });
        }
        out.push(pb::Span {
            trace_id: self.ctx.trace_id.to_vec(),
            span_id: self.ctx.span_id.to_vec(),
            trace_state: self.tracestate,
            parent_span_id: self.parent.map(|p| p.to_vec()).unwrap_or_default(),
            name: self.name,
            kind: pb::span::SpanKind::Server as i32,
            start_time_unix_nano: self.start_ns,
            end_time_unix_nano: self.end_ns,
            attributes: self
                .attributes
                .into_iter()
                .map(|(k, v)| key_value(k, v))
                .collect(),
            status: Some(status),
            flags: flags | remote,
            links: Vec::new(),
        });
    }
}

pub fn key_value(key: &str, value: Attr) -> pb::KeyValue {
    use pb::any_value::Value;
    pb::KeyValue {
        key: key.to_owned(),
        value: Some(pb::AnyValue {
            value: Some(match value {
                Attr::Str(s) => Value::StringValue(s),
                Attr::Int(i) => Value::IntValue(i),
            }),
        }),
    }
}

fn unix_nanos() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

thread_local! {
    /// Per-thread id generator state, seeded once from the system's randomness.
    static STATE: Cell<u64> = Cell::new({
        let mut seed = [0u8; 8];
        let _ = getrandom::fill(&mut seed);
        u64::from_ne_bytes(seed) | 1
    });
}

/// The next 64 random-looking bits (SplitMix64): ids need to be unique, not secret.
fn next() -> u64 {
    STATE.with(|s| {
        let x = s.get().wrapping_add(0x9e37_79b9_7f4a_7c15);
        s.set(x);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    })
}

/// A new span id (never all zeros).
pub fn span_id() -> [u8; 8] {
    loop {
        let id = next().to_be_bytes();
        if id != [0; 8] {
            return id;
        }
    }
}

/// A new trace id (never all zeros).
pub fn trace_id() -> [u8; 16] {
    let mut id = [0u8; 16];
    id[..8].copy_from_slice(&next().to_be_bytes());
    id[8..].copy_from_slice(&span_id());
    id
}
