//! Running model calls. Three bounds, each with one job:
//! - admission: at most `max_concurrency` requests are admitted (running, or gathered into
//!   a batch); at most `max_queue` more wait, and the rest are refused at once (503 /
//!   RESOURCE_EXHAUSTED) instead of letting latency grow without bound;
//! - running: at most `model_threads` model calls run at the same time (`Slots`);
//! - deadlines: a request whose deadline passes while it waits is dropped, not computed.
//!
//! Without batching or a deadline, a call runs on the I/O thread that decoded the
//! request when it is cheap and a running slot is free: handing it to another thread and back costs two
//! cross-thread wake-ups, which on a 2-core VM cost more than a small model call. Slow
//! calls go to the model threads so the I/O thread keeps serving. With batching every
//! predict goes to the model threads, which gather compatible requests into one call.
//!
//! One entry point per model operation (`predict`, `infer`, ...), each answering with
//! its operation's own type; underneath, one generic path (`run`) for all of them.
mod ops;
mod pool;
mod queue;
mod slots;
mod timing;

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use inferwire_codec::protocol::seldon::{Feedback, SeldonMessage};
use inferwire_codec::protocol::v2::InferRequest;
use serde_json::Value;
use tokio::sync::{oneshot, Semaphore};

use crate::error::{Kind, ServeError};
pub use crate::metrics::stats::{Snapshot, Stats};
use crate::metrics::Metrics;
use crate::model::{BlockingPieces, Model, Pieces, Prediction};
use ops::Op;
use pool::{Pool, Waiter, Work};
use slots::Slots;
pub use timing::{CallTiming, Called};

/// Most messages one `aggregate` takes: a combiner merges its children's answers, a
/// handful; the bound keeps a body of many tiny messages from costing a hundred times
/// its size once decoded.
pub const MAX_AGGREGATE_MESSAGES: usize = 1024;

/// One call of a Seldon graph component's operation (besides predict and feedback).
#[derive(Debug)]
pub enum Component {
    TransformInput(SeldonMessage),
    TransformOutput(SeldonMessage),
    Route(SeldonMessage),
    Aggregate(Vec<SeldonMessage>),
}

impl Component {
    /// The operation's name, as Seldon's methods are named.
    pub fn name(&self) -> &'static str {
        match self {
            Component::TransformInput(_) => "transform_input",
            Component::TransformOutput(_) => "transform_output",
            Component::Route(_) => "route",
            Component::Aggregate(_) => "aggregate",
        }
    }

    /// The puid the reply carries when the model sets none: the (first) request's.
    pub fn puid(&self) -> String {
        match self {
            Component::TransformInput(m) | Component::TransformOutput(m) | Component::Route(m) => {
                m.meta.puid.clone()
            }
            Component::Aggregate(ms) => ms.first().map(|m| m.meta.puid.clone()).unwrap_or_default(),
        }
    }
}

/// Calls slower than this (moving average) go to the model threads.
const SLOW_CALL_MICROS: u64 = 1_000;
/// A call whose deadline is at least this far off may run inline on its I/O thread.
const INLINE_HEADROOM: Duration = Duration::from_secs(30);
/// Until calls are measured, assume they are slow: a model's first call (often its
/// slowest) must not block an I/O thread. About ten fast calls bring the average under
/// the threshold.
const FIRST_GUESS_MICROS: u64 = 4 * SLOW_CALL_MICROS;

#[derive(Debug, Clone)]
pub struct RunnerConfig {
    pub max_concurrency: usize,
    pub max_queue: usize,
    pub model_threads: usize,
    /// Requests joined into one model call at most (1: no batching).
    pub max_batch_size: usize,
    /// How long the first request of a batch waits for others.
    pub max_batch_delay: Duration,
}

pub struct Runner {
    model: Arc<dyn Model>,
    admit: Arc<Semaphore>,
    waiting: AtomicUsize,
    max_queue: usize,
    slots: Arc<Slots>,
    batching: bool,
    /// Exponential moving average of call durations, in microseconds.
    recent_micros: AtomicU64,
    pool: Pool,
    metrics: Metrics,
    stats: crate::metrics::stats::Handle,
    /// As configured, for the model configuration extension.
    max_batch_size: usize,
    max_batch_delay: Duration,
}

/// Counts a request out of a gauge however its wait ends (served, refused, dropped).
struct Gauge<'a> {
    counter: Option<&'a AtomicUsize>,
    metrics: Metrics,
    in_flight: bool,
}

impl Drop for Gauge<'_> {
    fn drop(&mut self) {
        if let Some(c) = self.counter {
            c.fetch_sub(1, Ordering::Relaxed);
        }
        if self.in_flight {
            self.metrics.add_in_flight(-1);
        } else {
            self.metrics.add_queued(-1);
        }
    }
}

impl Runner {
    pub fn new(
        model: Arc<dyn Model>,
        config: &RunnerConfig,
        metrics: Metrics,
    ) -> std::io::Result<Self> {
        let slots = Arc::new(Slots::new(config.model_threads.max(1)));
        // In the metrics' shared memory when the model has a slot there, so that every
        // worker's statistics answer the sum; else this process's own.
        let stats = match metrics.model_stats() {
            Some(shared) => crate::metrics::stats::Handle::Shared(shared),
            None => crate::metrics::stats::Handle::Own(Arc::new(Stats::default())),
        };
        let pool = Pool::start(model.clone(), config, slots.clone(), metrics, stats.clone())?;
        Ok(Self {
            model,
            admit: Arc::new(Semaphore::new(config.max_concurrency.max(1))),
            waiting: AtomicUsize::new(0),
            max_queue: config.max_queue,
            slots,
            batching: config.max_batch_size > 1,
            recent_micros: AtomicU64::new(FIRST_GUESS_MICROS),
            pool,
            metrics,
            stats,
            max_batch_size: config.max_batch_size,
            max_batch_delay: config.max_batch_delay,
        })
    }

    /// Seldon `predict` (or `predict_raw`) on one request. Every entry point gives up
    /// with `Kind::Deadline` once `deadline` has passed (the request is then dropped
    /// wherever it waits).
    pub async fn predict(
        &self,
        msg: SeldonMessage,
        deadline: Option<Instant>,
    ) -> Result<Prediction, ServeError> {
        self.run(ops::Predict(msg), deadline).await
    }

    /// `predict`, telling `timing` (a traced request's) when the model call ran and the
    /// size of the batch it was in.
    pub async fn predict_timed(
        &self,
        msg: SeldonMessage,
        deadline: Option<Instant>,
        timing: Option<CallTiming>,
    ) -> Result<Prediction, ServeError> {
        self.run_timed(ops::Predict(msg), deadline, timing).await
    }

    /// A V2 inference: every output the model produced, in its order.
    pub async fn infer(
        &self,
        request: InferRequest,
        deadline: Option<Instant>,
    ) -> Result<crate::model::Inferred, ServeError> {
        self.run(ops::Infer(request), deadline).await
    }

    /// `infer`, telling `timing` (a traced request's) when the model call ran and the
    /// size of the batch it was in.
    pub async fn infer_timed(
        &self,
        request: InferRequest,
        deadline: Option<Instant>,
        timing: Option<CallTiming>,
    ) -> Result<crate::model::Inferred, ServeError> {
        self.run_timed(ops::Infer(request), deadline, timing).await
    }

    /// Whether the model answers in pieces (a streamed request to one that does not gets
    /// one piece, its `infer`).
    pub fn streams(&self) -> bool {
        self.model.streams()
    }

    /// A streamed V2 inference: the receiving end of its pieces. A model that does not
    /// stream answers one piece, its `infer`. The stream's place among those open
    /// (`open`) is held until the model has finished producing. A blocking iterator runs
    /// on a thread of its own, taking a model slot for each piece, and gives up when the
    /// reader has taken nothing for `patience`.
    pub async fn stream(
        &self,
        request: InferRequest,
        deadline: Option<Instant>,
        open: tokio::sync::OwnedSemaphorePermit,
        patience: Duration,
    ) -> Result<crate::stream::Receiver, ServeError> {
        let (mut tx, rx) = crate::stream::channel();
        if !self.model.streams() {
            let inferred = self.infer(request, deadline).await?;
            let _ = tx.try_send(Ok(inferred.outputs));
            return Ok(rx);
        }
        tx.hold(open);
        tx.patience = patience;
        match self.run(ops::StartStream(request), deadline).await? {
            Pieces::Driven(start) => start(tx),
            Pieces::Blocking(pieces) => self.drive(pieces, tx, patience)?,
        }
        Ok(rx)
    }

    /// Advances a blocking iterator on a thread of its own until it ends, fails, or its
    /// reader goes away or stalls.
    fn drive(
        &self,
        mut pieces: Box<dyn BlockingPieces>,
        tx: crate::stream::Sender,
        patience: Duration,
    ) -> Result<(), ServeError> {
        let (model, slots) = (self.model.clone(), self.slots.clone());
        let run = move || {
            model.thread_started();
            loop {
                if tx.is_closed() {
                    pieces.close();
                    break;
                }
                let slot = slots.take();
                let piece = pieces.next();
                drop(slot);
                let Some(piece) = piece else { break };
                let failed = piece.is_err();
                if tx.send_blocking(piece, patience) != crate::stream::Sent::Queued {
                    pieces.close();
                    break;
                }
                if failed {
                    break;
                }
            }
            drop(tx);
            // The iterator's Python objects go while this thread still has its state.
            drop(pieces);
            model.thread_stopping();
        };
        std::thread::Builder::new()
            .name("inferwire-stream".into())
            .spawn(run)
            .map(drop)
            .map_err(|e| {
                ServeError::new(
                    Kind::Internal,
                    format!("could not start a stream's thread: {e}"),
                )
            })
    }

    /// The model's metadata, as the model gives it.
    pub async fn metadata(&self, deadline: Option<Instant>) -> Result<Value, ServeError> {
        self.run(ops::Metadata, deadline).await
    }

    /// A request on one of the model's own routes (`Model::custom_routes`).
    pub async fn custom(
        &self,
        method: String,
        path: String,
        body: bytes::Bytes,
        deadline: Option<Instant>,
    ) -> Result<bytes::Bytes, ServeError> {
        self.run(ops::Custom { method, path, body }, deadline).await
    }

    /// The model's own routes (asked of it once, when it is built).
    pub fn custom_routes(&self) -> Vec<(String, String)> {
        self.model.custom_routes()
    }

    /// Seldon `send_feedback`.
    pub async fn send_feedback(
        &self,
        feedback: Feedback,
        deadline: Option<Instant>,
    ) -> Result<SeldonMessage, ServeError> {
        self.run(ops::SendFeedback(Box::new(feedback)), deadline)
            .await
    }

    /// A Seldon graph component's operation other than predict: `transform_input`,
    /// `transform_output`, `route` or `aggregate`.
    pub async fn component(
        &self,
        call: Component,
        deadline: Option<Instant>,
    ) -> Result<Prediction, ServeError> {
        match call {
            Component::TransformInput(m) => self.run(ops::TransformInput(m), deadline).await,
            Component::TransformOutput(m) => self.run(ops::TransformOutput(m), deadline).await,
            Component::Route(m) => self.run(ops::Route(m), deadline).await,
            Component::Aggregate(ms) => self.run(ops::Aggregate(ms), deadline).await,
        }
    }

    /// Seldon `health_status`.
    pub async fn health_status(
        &self,
        deadline: Option<Instant>,
    ) -> Result<SeldonMessage, ServeError> {
        self.run(ops::HealthStatus, deadline).await
    }

    async fn run<O: Op>(&self, op: O, deadline: Option<Instant>) -> Result<O::Output, ServeError> {
        self.run_timed(op, deadline, None).await
    }

    async fn run_timed<O: Op>(
        &self,
        op: O,
        deadline: Option<Instant>,
        timing: Option<CallTiming>,
    ) -> Result<O::Output, ServeError> {
        // Inferences are counted for the statistics extension.
        if !O::INFERENCE {
            return self.run_uncounted(op, deadline, timing).await;
        }
        let start = Instant::now();
        let result = self.run_uncounted(op, deadline, timing).await;
        self.stats.finished(result.is_ok(), start.elapsed());
        result
    }

    async fn run_uncounted<O: Op>(
        &self,
        op: O,
        deadline: Option<Instant>,
        timing: Option<CallTiming>,
    ) -> Result<O::Output, ServeError> {
        // The usual case first, with no future built around it: a fast model, free now.
        let op = match self.try_inline(op, deadline, timing.as_ref()) {
            Ok(answered) => return answered,
            Err(op) => op,
        };
        match deadline {
            None => self.admitted(op, None, timing).await,
            Some(d) => tokio::time::timeout_at(d.into(), self.admitted(op, deadline, timing))
                .await
                .unwrap_or_else(|_| Err(deadline_exceeded())),
        }
    }

    /// `admitted`'s inline case, taken before any waiting: runs `op` on this thread
    /// when an admission and a model slot are free at once (and the model is fast, the
    /// deadline far off); else gives the operation back.
    // The operation is given back by value (no box) on the hot path: its size is the point.
    #[allow(clippy::result_large_err)]
    fn try_inline<O: Op>(
        &self,
        op: O,
        deadline: Option<Instant>,
        timing: Option<&CallTiming>,
    ) -> Result<Result<O::Output, ServeError>, O> {
        if self.batchable::<O>() || !inline_deadline(deadline) || !self.fast() {
            return Err(op);
        }
        let Ok(permit) = self.admit.clone().try_acquire_owned() else {
            return Err(op);
        };
        let Some(slot) = self.slots.try_take() else {
            return Err(op);
        };
        self.metrics.add_in_flight(1);
        let _in_flight = Gauge {
            counter: None,
            metrics: self.metrics,
            in_flight: true,
        };
        Ok(self.run_here(op, slot, permit, timing))
    }

    /// Whether the model threads may join calls of `O` with others.
    fn batchable<O: Op>(&self) -> bool {
        self.batching && O::BATCHABLE
    }

    /// Runs `op` on this thread, holding a model slot and an admission.
    fn run_here<O: Op>(
        &self,
        op: O,
        slot: slots::Slot<'_>,
        permit: tokio::sync::OwnedSemaphorePermit,
        timing: Option<&CallTiming>,
    ) -> Result<O::Output, ServeError> {
        let start = Instant::now();
        let result = op.run(&*self.model);
        let took = start.elapsed();
        if let Some(t) = timing {
            t.called(start, took, 1);
        }
        drop(slot);
        drop(permit);
        pool::record_custom::<O>(&self.metrics, &result);
        if O::INFERENCE {
            self.stats.executed(1, took, result.is_ok());
        }
        self.observe(took, &result);
        Ok(result?)
    }

    fn fast(&self) -> bool {
        self.recent_micros.load(Ordering::Relaxed) < SLOW_CALL_MICROS
    }

    async fn admitted<O: Op>(
        &self,
        op: O,
        deadline: Option<Instant>,
        timing: Option<CallTiming>,
    ) -> Result<O::Output, ServeError> {
        let permit = match self.admit.clone().try_acquire_owned() {
            Ok(p) => p,
            Err(_) => {
                if self.waiting.fetch_add(1, Ordering::Relaxed) >= self.max_queue {
                    self.waiting.fetch_sub(1, Ordering::Relaxed);
                    return Err(ServeError::new(
                        Kind::Overloaded,
                        format!(
                            "{} requests are already waiting for the model; retry later \
                             (see --max-queue and --max-concurrency)",
                            self.max_queue
                        ),
                    ));
                }
                self.metrics.add_queued(1);
                let _waiting = Gauge {
                    counter: Some(&self.waiting),
                    metrics: self.metrics,
                    in_flight: false,
                };
                self.admit.clone().acquire_owned().await.map_err(|_| {
                    ServeError::new(Kind::ShuttingDown, "the server is shutting down")
                })?
            }
        };
        self.metrics.add_in_flight(1);
        let _in_flight = Gauge {
            counter: None,
            metrics: self.metrics,
            in_flight: true,
        };
        let batchable = self.batchable::<O>();
        if !batchable && inline_deadline(deadline) && self.fast() {
            if let Some(slot) = self.slots.try_take() {
                return self.run_here(op, slot, permit, timing.as_ref());
            }
        }
        let (done, reply) = oneshot::channel();
        let work = Work {
            op,
            deadline,
            batchable,
            waiter: Waiter {
                done,
                permit,
                timing,
            },
        };
        self.pool.send(work)?;
        let (result, took) = reply
            .await
            .map_err(|_| ServeError::new(Kind::ShuttingDown, "the model threads have stopped"))?;
        if let Some(took) = took {
            self.update_recent(took);
        }
        result
    }

    /// The statistics extension's counts for this model.
    pub fn stats(&self) -> Snapshot {
        self.stats.snapshot()
    }

    /// Requests joined into one model call at most (1: no batching), and how long the
    /// first waits for others.
    pub fn batching(&self) -> (usize, Duration) {
        (self.max_batch_size, self.max_batch_delay)
    }

    /// How long the oldest running call of this model has been running.
    pub fn longest_call(&self) -> Option<Duration> {
        self.slots.longest()
    }

    fn observe<T, E>(&self, took: Duration, result: &Result<T, E>) {
        self.metrics.model_call(1, took);
        if result.is_ok() {
            self.update_recent(took);
        }
    }

    fn update_recent(&self, took: Duration) {
        let took = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        let prev = self.recent_micros.load(Ordering::Relaxed);
        self.recent_micros
            .store(prev - prev / 8 + took / 8, Ordering::Relaxed);
    }
}

/// A request with a near deadline runs on a model thread, so that its I/O thread is
/// free to answer 504 when the deadline passes. One whose deadline is far off (the
/// default 60 s) may run inline when the model is fast: handing every call over costs a
/// small request half again its CPU, and a fast model that stops answering is caught by
/// --stuck-after, which replaces the worker.
fn inline_deadline(deadline: Option<Instant>) -> bool {
    deadline.is_none_or(|d| d.saturating_duration_since(Instant::now()) >= INLINE_HEADROOM)
}

#[cold]
pub(crate) fn deadline_exceeded() -> ServeError {
    ServeError::new(
        Kind::Deadline,
        "the request's deadline passed before the model answered (see --timeout)",
    )
}
