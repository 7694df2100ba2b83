//! Prometheus metrics, counted in memory shared by every worker process (see `region`),
//! so one scrape of any worker shows the whole server. Every series has a fixed slot:
//! recording is a few relaxed atomic adds, no locks and no allocation.
mod custom;
pub mod host;
mod labels;
mod region;
pub mod stats;

use std::fmt::Write;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use inferwire_codec::protocol::seldon::Metric;

use custom::CustomTable;

/// Worker processes one shared region has room for.
pub const MAX_WORKERS: usize = 64;

/// Models with their own series (a model repository's); more share slot 0, labelled "".
pub const MAX_MODELS: usize = 32;
const MODEL_NAME: usize = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    Rest,
    Grpc,
}

const PROTOCOLS: [&str; 2] = ["rest", "grpc"];

pub use labels::{Code, Encoding, Route};

const ROUTES: usize = Route::ALL.len();
const ENCODINGS: usize = Encoding::ALL.len();
const CODES: usize = labels::CODES;

/// Upper bounds of the duration histograms' buckets, in seconds.
const SECONDS: [f64; 16] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0,
];

/// Upper bounds of the batch-size histogram's buckets, in requests.
const BATCH_SIZES: [f64; 11] = [
    1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0,
];

/// A histogram's counts per bucket (not cumulative; the last is +Inf) and their sum.
#[repr(C)]
pub(crate) struct Histogram<const N: usize> {
    buckets: [AtomicU64; N],
    /// Sum of observations, in nanoseconds (durations) or units (sizes).
    sum: AtomicU64,
}

impl<const N: usize> Histogram<N> {
    fn observe(&self, bounds: &[f64], value: f64, sum_units: u64) {
        let i = bounds.iter().position(|&b| value <= b).unwrap_or(N - 1);
        self.buckets[i].fetch_add(1, Relaxed);
        self.sum.fetch_add(sum_units, Relaxed);
    }

    fn observe_duration(&self, took: Duration) {
        let nanos = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        self.observe(&SECONDS, took.as_secs_f64(), nanos);
    }

    /// Writes `name_bucket`, `name_sum` and `name_count` lines; `labels` is `k="v",...`
    /// or empty. `scale` turns the stored sum into the unit of the bounds.
    fn render(&self, out: &mut String, name: &str, labels: &str, bounds: &[f64], scale: f64) {
        let sep = if labels.is_empty() { "" } else { "," };
        let mut total = 0u64;
        for (i, bucket) in self.buckets.iter().enumerate() {
            total += bucket.load(Relaxed);
            let le = bounds
                .get(i)
                .map_or_else(|| "+Inf".to_owned(), |b| b.to_string());
            let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"{le}\"}} {total}");
        }
        let sum = self.sum.load(Relaxed) as f64 * scale;
        let braces = if labels.is_empty() {
            String::new()
        } else {
            format!("{{{labels}}}")
        };
        let _ = writeln!(out, "{name}_sum{braces} {sum}");
        let _ = writeln!(out, "{name}_count{braces} {total}");
    }
}

type Durations = Histogram<{ SECONDS.len() + 1 }>;

#[repr(C)]
struct WorkerSlot {
    pid: AtomicU64,
    in_flight: AtomicI64,
    queued: AtomicI64,
    /// Request-body bytes charged to the worker's `max_body_bytes_in_flight` budget.
    body_bytes: AtomicI64,
    /// Streamed replies open.
    streams: AtomicI64,
    /// Repository models loaded in this worker, and the memory their loads measured.
    models_loaded: AtomicI64,
    model_bytes: AtomicI64,
}

/// The model cache's counts (`crate::models`), over every worker: requests that found
/// their model loaded or not, loads (and their time), failed loads, evictions.
#[repr(C)]
struct CacheCounts {
    hits: AtomicU64,
    misses: AtomicU64,
    loads: AtomicU64,
    load_failures: AtomicU64,
    evictions: AtomicU64,
    load_seconds: Durations,
    /// The budget (`model_memory_budget`), in bytes; 0: none.
    budget: AtomicU64,
}

/// How a streamed reply ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamEnd {
    /// The model had no more pieces.
    Completed,
    /// The model raised.
    Failed,
    /// The client went away or cancelled.
    Cancelled,
    /// A stream limit (pieces, bytes, idle time, total time) cut it short.
    Limited,
}

impl StreamEnd {
    const ALL: [StreamEnd; 4] = [
        StreamEnd::Completed,
        StreamEnd::Failed,
        StreamEnd::Cancelled,
        StreamEnd::Limited,
    ];

    fn label(self) -> &'static str {
        match self {
            StreamEnd::Completed => "completed",
            StreamEnd::Failed => "failed",
            StreamEnd::Cancelled => "cancelled",
            StreamEnd::Limited => "limited",
        }
    }
}

const STREAM_ENDS: usize = StreamEnd::ALL.len();

/// A model's name, claimed once by whichever process builds the model first.
#[repr(C)]
struct ModelName {
    state: std::sync::atomic::AtomicU32,
    len: std::sync::atomic::AtomicU32,
    bytes: [std::sync::atomic::AtomicU8; MODEL_NAME],
}

const PER_MODEL: usize = PROTOCOLS.len() * ROUTES * ENCODINGS * CODES;

#[repr(C)]
struct Region {
    models: [ModelName; MAX_MODELS],
    requests: [AtomicU64; MAX_MODELS * PER_MODEL],
    latency: [Durations; MAX_MODELS * PROTOCOLS.len() * ROUTES],
    model: [Durations; MAX_MODELS],
    batch: [Histogram<{ BATCH_SIZES.len() + 1 }>; MAX_MODELS],
    workers: [WorkerSlot; MAX_WORKERS],
    restarts: AtomicU64,
    recycles: AtomicU64,
    custom: CustomTable,
    /// The statistics extension's counts per model slot, summed over the workers.
    stats: [stats::Stats; MAX_MODELS],
    /// Streamed replies, per model and protocol: how they ended, pieces and bytes sent,
    /// and the time to the first piece.
    stream_ends: [AtomicU64; MAX_MODELS * PROTOCOLS.len() * STREAM_ENDS],
    pieces: [AtomicU64; MAX_MODELS * PROTOCOLS.len()],
    piece_bytes: [AtomicU64; MAX_MODELS * PROTOCOLS.len()],
    first_piece: [Durations; MAX_MODELS * PROTOCOLS.len()],
    cache: CacheCounts,
    /// Requests waiting for admission, per worker and model (a worker's row is cleared
    /// when it starts, so a dead worker's count goes with it).
    pending: [AtomicI64; MAX_WORKERS * MAX_MODELS],
    /// Failed inferences by why, per model (`Failure`; the rest of the statistics'
    /// failures are `Failure::Other`).
    failures: [AtomicU64; MAX_MODELS * FAILURES],
    /// The trace exporters' spans, over every worker (`crate::trace`).
    spans: SpanCounts,
}

/// Spans exported, dropped because the export queue was full, and lost to a failed
/// export; `on`: whether tracing is configured (the series are shown only then).
#[repr(C)]
struct SpanCounts {
    on: AtomicU64,
    exported: AtomicU64,
    dropped: AtomicU64,
    failed: AtomicU64,
}

/// Why an inference failed, as Triton labels `nv_inference_request_failure` (`reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// Refused before the model ran: the queue was full, or the deadline passed.
    Rejected,
    /// The client went away, or the server was stopping.
    Canceled,
    /// The model raised.
    Backend,
    Other,
}

const FAILURES: usize = 3;

impl Failure {
    pub const ALL: [Failure; 4] = [
        Failure::Rejected,
        Failure::Canceled,
        Failure::Backend,
        Failure::Other,
    ];

    /// Triton's label.
    pub fn label(self) -> &'static str {
        match self {
            Failure::Rejected => "REJECTED",
            Failure::Canceled => "CANCELED",
            Failure::Backend => "BACKEND",
            Failure::Other => "OTHER",
        }
    }

    /// Why a request that got `kind` failed.
    pub fn of(kind: crate::error::Kind) -> Self {
        use crate::error::Kind;
        match kind {
            Kind::Overloaded | Kind::Deadline => Failure::Rejected,
            Kind::ShuttingDown => Failure::Canceled,
            Kind::Model => Failure::Backend,
            _ => Failure::Other,
        }
    }

    /// Its counter's index; `None`: not counted apart (the rest of the failures).
    fn slot(self) -> Option<usize> {
        match self {
            Failure::Rejected => Some(0),
            Failure::Canceled => Some(1),
            Failure::Backend => Some(2),
            Failure::Other => None,
        }
    }
}

/// One loaded model's counts, for a dialect's own series on the metrics page (Triton's
/// `nv_inference_*`).
#[derive(Debug, Clone)]
pub struct ModelSeries {
    pub name: String,
    /// The version label ("1" for a model served without versions, as the statistics
    /// extension numbers it).
    pub version: String,
    pub stats: stats::Snapshot,
    /// Failures by `Failure::ALL`'s order; `Other` is the statistics' failures less the
    /// others.
    pub failures: [u64; 4],
    /// Requests waiting for the model, over every worker.
    pub pending: i64,
}

/// A handle on the shared counts, for one worker.
#[derive(Clone, Copy)]
pub struct Metrics {
    region: &'static Region,
    worker: usize,
    /// The model slot `model_call` counts in (see `model_slot`).
    model: usize,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics")
            .field("worker", &self.worker)
            .finish()
    }
}

impl Metrics {
    /// Fresh counts in memory that processes forked later share.
    pub fn shared() -> std::io::Result<Self> {
        Ok(Self {
            region: region::shared_zeroed::<Region>()?,
            worker: 0,
            model: 0,
        })
    }

    /// The same counts, with gauges kept in worker `index`'s slot.
    pub fn for_worker(self, index: usize) -> Self {
        Self {
            worker: index.min(MAX_WORKERS - 1),
            ..self
        }
    }

    /// The slot of model `name` (claimed on first use, by any process); 0, shared and
    /// unlabelled, once every slot is taken.
    pub fn model_slot(&self, name: &str) -> usize {
        use std::sync::atomic::Ordering::{Acquire, Release};
        let name = &name.as_bytes()[..name.len().min(MODEL_NAME)];
        for (i, slot) in self.region.models.iter().enumerate().skip(1) {
            loop {
                match slot.state.compare_exchange(0, 1, Acquire, Acquire) {
                    Ok(_) => {
                        for (dst, &b) in slot.bytes.iter().zip(name) {
                            dst.store(b, Relaxed);
                        }
                        slot.len.store(name.len() as u32, Relaxed);
                        slot.state.store(2, Release);
                        return i;
                    }
                    Err(1) => std::thread::yield_now(),
                    Err(_) => break,
                }
            }
            if model_name(slot) == name {
                return i;
            }
        }
        0
    }

    /// The statistics extension's counts for this handle's model, shared by every worker;
    /// None for slot 0, which models past `MAX_MODELS` share and so cannot tell apart.
    pub fn model_stats(&self) -> Option<&'static stats::Stats> {
        (self.model > 0).then(|| &self.region.stats[self.model])
    }

    /// The same counts, with model calls counted for model slot `slot`.
    pub fn for_model(self, slot: usize) -> Self {
        Self {
            model: slot.min(MAX_MODELS - 1),
            ..self
        }
    }

    fn slot(&self) -> &WorkerSlot {
        &self.region.workers[self.worker]
    }

    /// A worker (re)starting: its gauges start from zero, whatever its predecessor left.
    pub fn worker_started(&self, pid: u32) {
        let slot = self.slot();
        slot.in_flight.store(0, Relaxed);
        slot.queued.store(0, Relaxed);
        slot.body_bytes.store(0, Relaxed);
        slot.streams.store(0, Relaxed);
        slot.models_loaded.store(0, Relaxed);
        slot.model_bytes.store(0, Relaxed);
        let row = self.worker * MAX_MODELS;
        for pending in &self.region.pending[row..row + MAX_MODELS] {
            pending.store(0, Relaxed);
        }
        slot.pid.store(u64::from(pid), Relaxed);
    }

    pub fn worker_stopped(&self) {
        self.slot().pid.store(0, Relaxed);
    }

    pub fn worker_restarted(&self) {
        self.region.restarts.fetch_add(1, Relaxed);
    }

    /// A worker replaced after `max_requests` or `max_worker_memory`.
    pub fn worker_recycled(&self) {
        self.region.recycles.fetch_add(1, Relaxed);
    }

    /// One answered request.
    pub fn request(
        &self,
        model: usize,
        protocol: Protocol,
        route: Route,
        encoding: Encoding,
        code: Code,
        took: Duration,
    ) {
        let model = model.min(MAX_MODELS - 1);
        let (e, c) = (encoding as usize, code.slot());
        let pr = protocol as usize * ROUTES + route as usize;
        let i = model * PER_MODEL + (pr * ENCODINGS + e) * CODES + c;
        self.region.requests[i].fetch_add(1, Relaxed);
        self.region.latency[model * PROTOCOLS.len() * ROUTES + pr].observe_duration(took);
    }

    /// HTTP replies by TorchServe's classes (its `Requests2XX`, `Requests4XX`,
    /// `Requests5XX`): 200–299, 400–499, and every other status. A status outside the
    /// label table (`code="other"`) is in none.
    pub fn http_replies(&self) -> [u64; 3] {
        let mut out = [0; 3];
        for (i, n) in self.region.requests.iter().enumerate() {
            let Some(status) = Code::http_status(i % CODES) else {
                continue;
            };
            let class = match status {
                200..=299 => 0,
                400..=499 => 1,
                _ => 2,
            };
            out[class] += n.load(Relaxed);
        }
        out
    }

    /// One model call serving `requests` requests (more than one when batched).
    pub fn model_call(&self, requests: usize, took: Duration) {
        self.region.model[self.model].observe_duration(took);
        self.region.batch[self.model].observe(&BATCH_SIZES, requests as f64, requests as u64);
    }

    /// The name of the model in metrics slot `slot` ("" for none).
    pub fn slot_name(&self, slot: usize) -> String {
        let m = &self.region.models[slot.min(MAX_MODELS - 1)];
        String::from_utf8_lossy(&model_name(m)).into_owned()
    }

    /// A worker's trace exporter started.
    pub fn tracing_on(&self) {
        self.region.spans.on.store(1, Relaxed);
    }

    pub fn spans_exported(&self, n: u64) {
        self.region.spans.exported.fetch_add(n, Relaxed);
    }

    /// Spans dropped because the export queue was full.
    pub fn spans_dropped(&self, n: u64) {
        self.region.spans.dropped.fetch_add(n, Relaxed);
    }

    /// Spans lost to an export the collector did not take (down, slow, refusing).
    pub fn spans_failed(&self, n: u64) {
        self.region.spans.failed.fetch_add(n, Relaxed);
    }

    pub fn add_queued(&self, delta: i64) {
        self.slot().queued.fetch_add(delta, Relaxed);
        self.region.pending[self.worker * MAX_MODELS + self.model].fetch_add(delta, Relaxed);
    }

    /// A failed inference of the model in `slot`, by why (Triton's `reason` label).
    pub fn inference_failed(&self, slot: usize, why: Failure) {
        if let Some(i) = why.slot() {
            self.region.failures[slot.min(MAX_MODELS - 1) * FAILURES + i].fetch_add(1, Relaxed);
        }
    }

    /// The model in `slot`'s series, from its statistics (`stats`).
    pub fn model_series(
        &self,
        slot: usize,
        name: &str,
        version: &str,
        stats: stats::Snapshot,
    ) -> ModelSeries {
        let r = self.region;
        let slot = slot.min(MAX_MODELS - 1);
        let live = r
            .workers
            .iter()
            .enumerate()
            .filter(|(_, w)| w.pid.load(Relaxed) != 0);
        let pending = live
            .map(|(i, _)| r.pending[i * MAX_MODELS + slot].load(Relaxed))
            .sum::<i64>()
            .max(0);
        let mut failures = [0u64; 4];
        for (i, n) in failures.iter_mut().take(FAILURES).enumerate() {
            *n = r.failures[slot * FAILURES + i].load(Relaxed);
        }
        failures[3] = stats
            .fail
            .0
            .saturating_sub(failures[..FAILURES].iter().sum());
        ModelSeries {
            name: name.to_owned(),
            version: version.to_owned(),
            stats,
            failures,
            pending,
        }
    }

    pub fn add_in_flight(&self, delta: i64) {
        self.slot().in_flight.fetch_add(delta, Relaxed);
    }

    /// A request for a repository model found it loaded (`hit`) or had it loaded.
    pub fn model_cache(&self, hit: bool) {
        let c = &self.region.cache;
        if hit { &c.hits } else { &c.misses }.fetch_add(1, Relaxed);
    }

    /// A repository model loaded (or failed to), and how long that took.
    pub fn model_loaded(&self, ok: bool, took: Duration) {
        let c = &self.region.cache;
        if ok {
            c.loads.fetch_add(1, Relaxed);
            c.load_seconds.observe_duration(took);
        } else {
            c.load_failures.fetch_add(1, Relaxed);
        }
    }

    pub fn model_evicted(&self) {
        self.region.cache.evictions.fetch_add(1, Relaxed);
    }

    /// This worker's repository models: how many are loaded, and their measured bytes.
    pub fn models_held(&self, count: usize, bytes: u64) {
        let slot = self.slot();
        slot.models_loaded.store(count as i64, Relaxed);
        slot.model_bytes
            .store(i64::try_from(bytes).unwrap_or(i64::MAX), Relaxed);
    }

    pub fn set_model_budget(&self, bytes: u64) {
        self.region.cache.budget.store(bytes, Relaxed);
    }

    pub fn add_body_bytes(&self, delta: i64) {
        self.slot().body_bytes.fetch_add(delta, Relaxed);
    }

    /// A streamed reply opened (1) or closed (-1) in this worker.
    pub fn stream_opened(&self, delta: i64) {
        self.slot().streams.fetch_add(delta, Relaxed);
    }

    pub fn stream_closed(&self, model: usize, protocol: Protocol, end: StreamEnd) {
        self.stream_opened(-1);
        let i = (model.min(MAX_MODELS - 1) * PROTOCOLS.len() + protocol as usize) * STREAM_ENDS
            + end as usize;
        self.region.stream_ends[i].fetch_add(1, Relaxed);
    }

    pub fn first_piece(&self, model: usize, protocol: Protocol, took: Duration) {
        let i = model.min(MAX_MODELS - 1) * PROTOCOLS.len() + protocol as usize;
        self.region.first_piece[i].observe_duration(took);
    }

    pub fn piece_sent(&self, model: usize, protocol: Protocol, bytes: usize) {
        let i = model.min(MAX_MODELS - 1) * PROTOCOLS.len() + protocol as usize;
        self.region.pieces[i].fetch_add(1, Relaxed);
        self.region.piece_bytes[i].fetch_add(bytes as u64, Relaxed);
    }

    /// A metric the model reported (Seldon's `metrics()`): COUNTER adds, GAUGE sets,
    /// TIMER observes milliseconds into a histogram in seconds.
    pub fn custom(&self, metric: &Metric) {
        self.region.custom.record(metric);
    }

    /// Prometheus' text exposition format (version 0.0.4).
    pub fn render(&self) -> String {
        let r = self.region;
        let mut out = String::with_capacity(16 * 1024);
        out.push_str(
            "# HELP inferwire_requests_total Requests answered, by protocol, route, payload \
             encoding and status.\n# TYPE inferwire_requests_total counter\n",
        );
        let names: Vec<String> = r
            .models
            .iter()
            .map(|m| label_value(&String::from_utf8_lossy(&model_name(m))))
            .collect();
        for (i, n) in r.requests.iter().enumerate() {
            let n = n.load(Relaxed);
            if n == 0 {
                continue;
            }
            let (m, i) = (i / PER_MODEL, i % PER_MODEL);
            let c = i % CODES;
            let e = i / CODES % ENCODINGS;
            let pr = i / CODES / ENCODINGS;
            let _ = writeln!(
                out,
                "inferwire_requests_total{{model=\"{}\",protocol=\"{}\",route=\"{}\",encoding=\"{}\",code=\"{}\"}} {n}",
                names[m],
                PROTOCOLS[pr / ROUTES],
                Route::ALL[pr % ROUTES].label(),
                Encoding::ALL[e].label(),
                Code::label_of(c)
            );
        }
        out.push_str(
            "# HELP inferwire_request_duration_seconds Time from a request's arrival to its \
             reply.\n# TYPE inferwire_request_duration_seconds histogram\n",
        );
        for (i, h) in r.latency.iter().enumerate() {
            if h.buckets.iter().all(|b| b.load(Relaxed) == 0) {
                continue;
            }
            let per = PROTOCOLS.len() * ROUTES;
            let (m, pr) = (i / per, i % per);
            let labels = format!(
                "model=\"{}\",protocol=\"{}\",route=\"{}\"",
                names[m],
                PROTOCOLS[pr / ROUTES],
                Route::ALL[pr % ROUTES].label()
            );
            h.render(
                &mut out,
                "inferwire_request_duration_seconds",
                &labels,
                &SECONDS,
                1e-9,
            );
        }
        out.push_str(
            "# HELP inferwire_model_duration_seconds Time in the model per call (per batch \
             when batching).\n# TYPE inferwire_model_duration_seconds histogram\n",
        );
        for (m, h) in r.model.iter().enumerate() {
            if h.buckets.iter().any(|b| b.load(Relaxed) != 0) {
                let labels = format!("model=\"{}\"", names[m]);
                h.render(
                    &mut out,
                    "inferwire_model_duration_seconds",
                    &labels,
                    &SECONDS,
                    1e-9,
                );
            }
        }
        out.push_str(
            "# HELP inferwire_batch_size Requests served by one model call.\n\
             # TYPE inferwire_batch_size histogram\n",
        );
        for (m, h) in r.batch.iter().enumerate() {
            if h.buckets.iter().any(|b| b.load(Relaxed) != 0) {
                let labels = format!("model=\"{}\"", names[m]);
                h.render(&mut out, "inferwire_batch_size", &labels, &BATCH_SIZES, 1.0);
            }
        }
        render_streams(r, &names, &mut out);
        let live = || r.workers.iter().filter(|w| w.pid.load(Relaxed) != 0);
        let queued: i64 = live().map(|w| w.queued.load(Relaxed).max(0)).sum();
        let in_flight: i64 = live().map(|w| w.in_flight.load(Relaxed).max(0)).sum();
        let body_bytes: i64 = live().map(|w| w.body_bytes.load(Relaxed).max(0)).sum();
        let streams: i64 = live().map(|w| w.streams.load(Relaxed).max(0)).sum();
        let _ = write!(
            out,
            "# HELP inferwire_queue_depth Requests waiting for the model.\n\
             # TYPE inferwire_queue_depth gauge\ninferwire_queue_depth {queued}\n\
             # HELP inferwire_in_flight_requests Requests admitted to the model (running or \
             gathered into a batch).\n# TYPE inferwire_in_flight_requests gauge\n\
             inferwire_in_flight_requests {in_flight}\n\
             # HELP inferwire_request_body_bytes Request-body bytes being received or \
             decoded (charged to max_body_bytes_in_flight).\n\
             # TYPE inferwire_request_body_bytes gauge\ninferwire_request_body_bytes {body_bytes}\n\
             # HELP inferwire_streams_open Streamed replies open.\n\
             # TYPE inferwire_streams_open gauge\ninferwire_streams_open {streams}\n\
             # HELP inferwire_workers Worker processes serving.\n# TYPE inferwire_workers gauge\n\
             inferwire_workers {}\n\
             # HELP inferwire_worker_restarts_total Workers restarted after they died.\n\
             # TYPE inferwire_worker_restarts_total counter\ninferwire_worker_restarts_total {}\n\
             # HELP inferwire_worker_recycles_total Workers replaced after max_requests or \
             max_worker_memory.\n# TYPE inferwire_worker_recycles_total counter\n\
             inferwire_worker_recycles_total {}\n",
            live().count(),
            r.restarts.load(Relaxed),
            r.recycles.load(Relaxed),
        );
        render_cache(r, &mut out);
        render_spans(&r.spans, &mut out);
        r.custom.render(&mut out);
        out
    }
}

/// The trace exporters' series, once tracing is on.
fn render_spans(s: &SpanCounts, out: &mut String) {
    if s.on.load(Relaxed) == 0 {
        return;
    }
    let _ = write!(
        out,
        "# HELP inferwire_trace_spans_exported_total Spans a collector took.\n\
         # TYPE inferwire_trace_spans_exported_total counter\n\
         inferwire_trace_spans_exported_total {}\n\
         # HELP inferwire_trace_spans_dropped_total Spans dropped because the export queue \
         was full.\n# TYPE inferwire_trace_spans_dropped_total counter\n\
         inferwire_trace_spans_dropped_total {}\n\
         # HELP inferwire_trace_spans_failed_total Spans lost to exports that failed \
         (collector down, slow or refusing).\n\
         # TYPE inferwire_trace_spans_failed_total counter\n\
         inferwire_trace_spans_failed_total {}\n",
        s.exported.load(Relaxed),
        s.dropped.load(Relaxed),
        s.failed.load(Relaxed),
    );
}

/// The model cache's series, once a model was loaded on request or a budget is set.
fn render_cache(r: &Region, out: &mut String) {
    let c = &r.cache;
    let budget = c.budget.load(Relaxed);
    let (hits, misses) = (c.hits.load(Relaxed), c.misses.load(Relaxed));
    if budget == 0 && hits + misses == 0 {
        return;
    }
    let live = || r.workers.iter().filter(|w| w.pid.load(Relaxed) != 0);
    let loaded: i64 = live().map(|w| w.models_loaded.load(Relaxed).max(0)).sum();
    let bytes: i64 = live().map(|w| w.model_bytes.load(Relaxed).max(0)).sum();
    let _ = write!(
        out,
        "# HELP inferwire_model_cache_requests_total Requests for a repository model, by \
         whether it was loaded (hit) or had to be loaded (miss).\n\
         # TYPE inferwire_model_cache_requests_total counter\n\
         inferwire_model_cache_requests_total{{result=\"hit\"}} {hits}\n\
         inferwire_model_cache_requests_total{{result=\"miss\"}} {misses}\n\
         # HELP inferwire_model_loads_total Repository models loaded, by outcome.\n\
         # TYPE inferwire_model_loads_total counter\n\
         inferwire_model_loads_total{{result=\"ok\"}} {}\n\
         inferwire_model_loads_total{{result=\"failed\"}} {}\n\
         # HELP inferwire_model_evictions_total Models unloaded to keep within the memory \
         budget (least recently used first).\n\
         # TYPE inferwire_model_evictions_total counter\ninferwire_model_evictions_total {}\n\
         # HELP inferwire_models_loaded Repository models loaded (summed over workers).\n\
         # TYPE inferwire_models_loaded gauge\ninferwire_models_loaded {loaded}\n\
         # HELP inferwire_model_memory_bytes Memory the loaded models' loads measured \
         (summed over workers).\n\
         # TYPE inferwire_model_memory_bytes gauge\ninferwire_model_memory_bytes {bytes}\n\
         # HELP inferwire_model_memory_budget_bytes The models' memory budget, per worker \
         (0: none).\n\
         # TYPE inferwire_model_memory_budget_bytes gauge\n\
         inferwire_model_memory_budget_bytes {budget}\n\
         # HELP inferwire_model_load_seconds Time to load a repository model.\n\
         # TYPE inferwire_model_load_seconds histogram\n",
        c.loads.load(Relaxed),
        c.load_failures.load(Relaxed),
        c.evictions.load(Relaxed),
    );
    c.load_seconds
        .render(out, "inferwire_model_load_seconds", "", &SECONDS, 1e-9);
}

/// The streamed replies' series, per model and protocol, only where there were some.
fn render_streams(r: &Region, names: &[String], out: &mut String) {
    let series = |i: usize| {
        format!(
            "model=\"{}\",protocol=\"{}\"",
            names[i / PROTOCOLS.len()],
            PROTOCOLS[i % PROTOCOLS.len()]
        )
    };
    out.push_str(
        "# HELP inferwire_streams_total Streamed replies, by how they ended.\n\
         # TYPE inferwire_streams_total counter\n",
    );
    for (i, n) in r.stream_ends.iter().enumerate() {
        let n = n.load(Relaxed);
        if n != 0 {
            let end = StreamEnd::ALL[i % STREAM_ENDS].label();
            let _ = writeln!(
                out,
                "inferwire_streams_total{{{},end=\"{end}\"}} {n}",
                series(i / STREAM_ENDS)
            );
        }
    }
    for (name, help, counts) in [
        (
            "inferwire_stream_pieces_total",
            "Pieces sent in streamed replies.",
            &r.pieces,
        ),
        (
            "inferwire_stream_bytes_total",
            "Encoded bytes of the pieces sent.",
            &r.piece_bytes,
        ),
    ] {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
        for (i, n) in counts.iter().enumerate() {
            let n = n.load(Relaxed);
            if n != 0 {
                let _ = writeln!(out, "{name}{{{}}} {n}", series(i));
            }
        }
    }
    out.push_str(
        "# HELP inferwire_stream_first_piece_seconds Time from a streamed request's start \
         to its first piece.\n# TYPE inferwire_stream_first_piece_seconds histogram\n",
    );
    for (i, h) in r.first_piece.iter().enumerate() {
        if h.buckets.iter().any(|b| b.load(Relaxed) != 0) {
            h.render(
                out,
                "inferwire_stream_first_piece_seconds",
                &series(i),
                &SECONDS,
                1e-9,
            );
        }
    }
}

fn model_name(slot: &ModelName) -> Vec<u8> {
    if slot.state.load(std::sync::atomic::Ordering::Acquire) != 2 {
        return Vec::new();
    }
    let n = (slot.len.load(Relaxed) as usize).min(MODEL_NAME);
    slot.bytes[..n].iter().map(|b| b.load(Relaxed)).collect()
}

/// A label value escaped as the text format wants.
/// A label value escaped as the text format wants.
pub(crate) fn label_value(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use inferwire_codec::protocol::seldon::MetricType;

    #[test]
    fn http_replies_by_torchserve_s_classes() {
        let m = Metrics::shared().unwrap();
        let took = Duration::from_micros(1);
        for (code, times) in [
            (Code::Http(200), 3),
            (Code::Http(201), 1),
            (Code::Http(404), 2),
            (Code::Http(503), 1),
            // Not HTTP, or not a labelled status: in no class.
            (Code::Grpc(tonic::Code::Ok), 5),
            (Code::Http(299), 1),
        ] {
            for model in [0, 3].into_iter().take(times) {
                m.request(
                    model,
                    Protocol::Rest,
                    Route::Infer,
                    Encoding::Bytes,
                    code,
                    took,
                );
            }
            for _ in 2..times {
                m.request(1, Protocol::Rest, Route::Other, Encoding::None, code, took);
            }
        }
        assert_eq!(m.http_replies(), [4, 2, 1]);
    }

    #[test]
    fn counts_render_as_prometheus_text() {
        let m = Metrics::shared().unwrap();
        m.worker_started(42);
        let slot = m.model_slot("iris");
        assert_eq!(m.model_slot("iris"), slot);
        let m = m.for_model(slot);
        m.request(
            slot,
            Protocol::Rest,
            Route::Predict,
            Encoding::Tensor,
            Code::Http(200),
            Duration::from_micros(30),
        );
        m.request(
            slot,
            Protocol::Grpc,
            Route::Predict,
            Encoding::Ndarray,
            Code::Grpc(tonic::Code::ResourceExhausted),
            Duration::from_millis(2),
        );
        m.model_call(3, Duration::from_millis(1));
        m.add_in_flight(2);
        m.custom(&Metric {
            key: "my_counter".into(),
            kind: MetricType::Counter,
            value: 2.0,
            tags: [("a".to_string(), "b".to_string())].into(),
        });
        m.custom(&Metric {
            key: "my_counter".into(),
            kind: MetricType::Counter,
            value: 1.0,
            tags: [("a".to_string(), "b".to_string())].into(),
        });
        let text = m.render();
        assert!(text.contains(
            "inferwire_requests_total{model=\"iris\",protocol=\"rest\",route=\"predict\",encoding=\"tensor\",code=\"200\"} 1\n"
        ), "{text}");
        assert!(text.contains("code=\"RESOURCE_EXHAUSTED\"} 1\n"), "{text}");
        assert!(
            text.contains("inferwire_batch_size_bucket{model=\"iris\",le=\"4\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("inferwire_batch_size_bucket{model=\"iris\",le=\"2\"} 0\n"),
            "{text}"
        );
        assert!(text.contains("inferwire_in_flight_requests 2\n"), "{text}");
        assert!(text.contains("inferwire_workers 1\n"), "{text}");
        assert!(text.contains("my_counter_total{a=\"b\"} 3\n"), "{text}");
        m.request(
            slot,
            Protocol::Rest,
            Route::Other,
            Encoding::None,
            Code::Http(401),
            Duration::from_micros(5),
        );
        m.request(
            slot,
            Protocol::Grpc,
            Route::Predict,
            Encoding::None,
            Code::Grpc(tonic::Code::PermissionDenied),
            Duration::from_micros(5),
        );
        let text = m.render();
        assert!(text.contains(
            "inferwire_requests_total{model=\"iris\",protocol=\"rest\",route=\"other\",encoding=\"none\",code=\"401\"} 1\n"
        ), "{text}");
        assert!(text.contains(
            "inferwire_requests_total{model=\"iris\",protocol=\"grpc\",route=\"predict\",encoding=\"none\",code=\"PERMISSION_DENIED\"} 1\n"
        ), "{text}");
        assert!(!text.contains("code=\"other\""), "{text}");
    }
}
