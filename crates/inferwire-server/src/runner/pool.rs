//! The model threads. Each takes work from one shared queue; with batching, the thread
//! that takes a predict keeps the queue for up to `max_batch_delay` to gather more,
//! then releases it (the next thread gathers the next batch while this one computes).
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::sync::{oneshot, OwnedSemaphorePermit};

use super::ops::{Infer, InferMany, Op, Predict, PredictBatch};
use super::queue::Queue;
use super::slots::Slots;
use super::{deadline_exceeded, RunnerConfig};
use crate::batch;
use crate::error::{Kind, ServeError};
use crate::metrics::stats::Handle as Stats;
use crate::metrics::Metrics;
use inferwire_codec::protocol::v2::InferRequest;

use crate::model::{Inferred, Model, ModelError, Prediction};

/// A call's result, and how long the model took when it ran alone.
pub type Done<T> = (Result<T, ServeError>, Option<Duration>);

/// One call waiting for a model thread.
pub struct Work<O: Op> {
    pub op: O,
    pub deadline: Option<Instant>,
    /// Batching is on and the operation may be batched.
    pub batchable: bool,
    pub waiter: Waiter<O::Output>,
}

/// Who waits for a call's reply.
pub struct Waiter<T> {
    pub done: oneshot::Sender<Done<T>>,
    /// The request's admission: held until its reply is sent, so that a request whose
    /// client went away still counts until the model is done with it.
    pub permit: OwnedSemaphorePermit,
    /// A traced request's: told when its model call ran, and with how many others.
    pub timing: Option<super::CallTiming>,
}

impl<T> Waiter<T> {
    fn reply(self, done: Done<T>) {
        let _ = self.done.send(done);
        drop(self.permit);
    }

    fn called(&self, start: Instant, took: Duration, batch: usize) {
        if let Some(t) = &self.timing {
            t.called(start, took, batch);
        }
    }

    /// Whether anyone still waits for this reply (the client may have gone, or the
    /// deadline passed): work nobody waits for is dropped, not computed.
    fn wanted(&self) -> bool {
        !self.done.is_closed()
    }
}

/// What the model threads take from their queue: the operations that may be batched,
/// each in its own variant, and any other call.
pub enum Queued {
    Predict(Work<Predict>),
    Infer(Work<Infer>),
    Alone(Box<dyn Job>),
}

/// A queued call of any operation, as the model threads see it when they do not batch
/// it: whether it is still wanted, and how to answer or run it.
pub trait Job: Send {
    fn wanted(&self) -> bool;
    fn expired(&self, now: Instant) -> bool;
    fn fail(self: Box<Self>, e: ServeError);
    fn run(self: Box<Self>, on: &Shared);
}

impl<O: Op> Job for Work<O> {
    fn wanted(&self) -> bool {
        self.waiter.wanted()
    }

    fn expired(&self, now: Instant) -> bool {
        self.deadline.is_some_and(|d| d <= now)
    }

    fn fail(self: Box<Self>, e: ServeError) {
        self.waiter.reply((Err(e), None));
    }

    fn run(self: Box<Self>, on: &Shared) {
        on.run_alone(self.op, self.waiter);
    }
}

impl Queued {
    fn job(&self) -> &dyn Job {
        match self {
            Queued::Predict(w) => w,
            Queued::Infer(w) => w,
            Queued::Alone(job) => job.as_ref(),
        }
    }

    fn batchable(&self) -> bool {
        match self {
            Queued::Predict(w) => w.batchable,
            Queued::Infer(w) => w.batchable,
            Queued::Alone(_) => false,
        }
    }

    fn fail(self, e: ServeError) {
        match self {
            Queued::Predict(w) => w.waiter.reply((Err(e), None)),
            Queued::Infer(w) => w.waiter.reply((Err(e), None)),
            Queued::Alone(job) => job.fail(e),
        }
    }
}

/// The calls of one gathering, in the order they came: requests with equal batch keys
/// share a group.
// Lone predicts are the common case: boxing them would cost an allocation per request.
#[allow(clippy::large_enum_variant)]
enum Group {
    Alone(Queued),
    Predicts(batch::Key, Vec<Work<Predict>>),
    Infers(batch::v2::Key, Vec<Work<Infer>>),
}

pub struct Pool {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
}

pub struct Shared {
    model: Arc<dyn Model>,
    queue: Queue<Queued>,
    slots: Arc<Slots>,
    metrics: Metrics,
    stats: Stats,
    max_batch_size: usize,
    max_batch_delay: Duration,
}

impl Pool {
    pub fn start(
        model: Arc<dyn Model>,
        config: &RunnerConfig,
        slots: Arc<Slots>,
        metrics: Metrics,
        stats: Stats,
    ) -> std::io::Result<Self> {
        let shared = Arc::new(Shared {
            model,
            queue: Queue::new(),
            slots,
            metrics,
            stats,
            max_batch_size: config.max_batch_size.max(1),
            max_batch_delay: config.max_batch_delay,
        });
        let threads = (0..config.model_threads.max(1))
            .map(|i| {
                let shared = shared.clone();
                std::thread::Builder::new()
                    .name(format!("inferwire-model-{i}"))
                    .spawn(move || shared.run())
            })
            .collect::<std::io::Result<_>>()?;
        Ok(Self { shared, threads })
    }

    pub fn send<O: Op>(&self, work: Work<O>) -> Result<(), ServeError> {
        let stopped = || ServeError::new(Kind::ShuttingDown, "the model threads have stopped");
        self.shared
            .queue
            .push(O::queued(work))
            .map_err(|_| stopped())
    }
}

/// How long dropping a pool waits for a call still running. Nobody waits for its reply
/// any more (the pool goes when its last request has): a call that never returns must
/// not keep a draining server from exiting.
const JOIN_WAIT: Duration = Duration::from_secs(5);

impl Drop for Pool {
    /// Lets the threads finish what is queued (work nobody waits for is skipped), then
    /// stop; a thread still in a call after `JOIN_WAIT` is left to finish on its own.
    fn drop(&mut self) {
        self.shared.queue.close();
        let until = Instant::now() + JOIN_WAIT;
        for t in self.threads.drain(..) {
            if crate::bounded_join::join_by(t, until).is_none() {
                tracing::warn!(
                    "a model call is still running after {JOIN_WAIT:?}; not waiting for it"
                );
            }
        }
    }
}

impl Shared {
    fn run(&self) {
        self.model.thread_started();
        while let Some(items) = self.gather() {
            self.serve(items);
        }
        self.model.thread_stopping();
    }

    /// The next work: one item, or with batching a predict and whatever arrives within
    /// the batch delay (up to the batch size). `None` once the queue is closed.
    fn gather(&self) -> Option<Vec<Queued>> {
        self.queue
            .take(Queued::batchable, self.max_batch_size, self.max_batch_delay)
    }

    fn serve(&self, items: Vec<Queued>) {
        let now = Instant::now();
        let mut groups: Vec<Group> = Vec::new();
        for item in items {
            if !item.job().wanted() {
                continue;
            }
            if item.job().expired(now) {
                item.fail(deadline_exceeded());
                continue;
            }
            match item {
                Queued::Predict(w) if w.batchable => match batch::key(&w.op.0) {
                    Some(key) => {
                        let found = groups.iter_mut().find_map(|g| match g {
                            Group::Predicts(k, group) if *k == key => Some(group),
                            _ => None,
                        });
                        match found {
                            Some(group) => group.push(w),
                            None => groups.push(Group::Predicts(key, vec![w])),
                        }
                    }
                    None => groups.push(Group::Alone(Queued::Predict(w))),
                },
                Queued::Infer(w) if w.batchable => match batch::v2::key(&w.op.0) {
                    Some(key) => {
                        let found = groups.iter_mut().find_map(|g| match g {
                            Group::Infers(k, group) if *k == key => Some(group),
                            _ => None,
                        });
                        match found {
                            Some(group) => group.push(w),
                            None => groups.push(Group::Infers(key, vec![w])),
                        }
                    }
                    None => groups.push(Group::Alone(Queued::Infer(w))),
                },
                other => groups.push(Group::Alone(other)),
            }
        }
        for group in groups {
            match group {
                Group::Alone(Queued::Predict(w)) => self.run_alone(w.op, w.waiter),
                Group::Alone(Queued::Infer(w)) => self.run_alone(w.op, w.waiter),
                Group::Alone(Queued::Alone(job)) => job.run(self),
                Group::Predicts(_, group) if group.len() > 1 => self.batch_predict(group),
                Group::Infers(_, group) if group.len() > 1 => self.batch_infer(group),
                Group::Predicts(_, group) => group
                    .into_iter()
                    .for_each(|w| self.run_alone(w.op, w.waiter)),
                Group::Infers(_, group) => group
                    .into_iter()
                    .for_each(|w| self.run_alone(w.op, w.waiter)),
            }
        }
    }

    /// Runs `op` on the model once a model slot is free; `requests`: how many requests
    /// it answers (a batch's). Gives the result, when the call began, and how long it took.
    fn call<O: Op>(
        &self,
        op: O,
        requests: usize,
    ) -> (Result<O::Output, ModelError>, Instant, Duration) {
        let _slot = self.slots.take();
        let start = Instant::now();
        let result = op.run(&*self.model);
        let took = start.elapsed();
        self.metrics.model_call(requests, took);
        record_custom::<O>(&self.metrics, &result);
        if O::INFERENCE {
            self.stats.executed(requests, took, result.is_ok());
        }
        (result, start, took)
    }

    fn run_alone<O: Op>(&self, op: O, waiter: Waiter<O::Output>) {
        let (result, start, took) = self.call(op, 1);
        waiter.called(start, took, 1);
        let took = result.is_ok().then_some(took);
        waiter.reply((result.map_err(ServeError::from), took));
    }

    /// One call for the group; if the model fails on the batch, each request runs alone
    /// so that one bad request fails alone.
    fn batch_predict(&self, group: Vec<Work<Predict>>) {
        let mut msgs = Vec::with_capacity(group.len());
        let mut waiters = Vec::with_capacity(group.len());
        for work in group {
            msgs.push(work.op.0);
            waiters.push(work.waiter);
        }
        let (joined, members) = match batch::join(&msgs) {
            Ok(j) => j,
            Err(e) => return fail_all(waiters, e),
        };
        let n = waiters.len();
        match self.call(PredictBatch(joined), n) {
            (Ok(answer), start, took) => {
                for (w, reply) in waiters.into_iter().zip(batch::split(answer, members)) {
                    w.called(start, took, n);
                    w.reply((reply.map(Prediction::Message), None));
                }
            }
            (Err(e), ..) => {
                tracing::debug!(
                    "a batch of {n} failed ({}); running each request alone",
                    e.message
                );
                for (msg, waiter) in msgs.into_iter().zip(waiters) {
                    if waiter.wanted() {
                        self.run_alone(Predict(msg), waiter);
                    }
                }
            }
        }
    }

    /// V2 requests: one call for the group; each output cut back by rows. If the model
    /// fails on the batch, each request runs alone.
    fn batch_infer(&self, group: Vec<Work<Infer>>) {
        let mut reqs = Vec::with_capacity(group.len());
        let mut waiters = Vec::with_capacity(group.len());
        for work in group {
            reqs.push(work.op.0);
            waiters.push(work.waiter);
        }
        if self.model.infers_many() {
            return self.batch_many(reqs, waiters);
        }
        let (joined, counts) = match batch::v2::join(&reqs) {
            Ok(j) => j,
            Err(e) => return fail_all(waiters, e),
        };
        let n = waiters.len();
        match self.call(Infer(joined), n) {
            (Ok(inferred), start, took) => match batch::v2::split(inferred.outputs, &counts) {
                Ok(parts) => {
                    for (w, outputs) in waiters.into_iter().zip(parts) {
                        w.called(start, took, n);
                        let parameters = inferred.parameters.clone();
                        w.reply((
                            Ok(Inferred {
                                outputs,
                                parameters,
                            }),
                            None,
                        ));
                    }
                }
                Err(e) => fail_all(waiters, e),
            },
            (Err(e), ..) => {
                tracing::debug!(
                    "a batch of {n} failed ({}); running each request alone",
                    e.message
                );
                for (req, waiter) in reqs.into_iter().zip(waiters) {
                    if waiter.wanted() {
                        self.run_alone(Infer(req), waiter);
                    }
                }
            }
        }
    }
}

impl Shared {
    /// A model that takes its batch as a list: one call, each request answered by its
    /// own result (a failed call fails them all, as Triton fails a batch whose
    /// `execute` raised).
    fn batch_many(&self, reqs: Vec<InferRequest>, waiters: Vec<Waiter<Inferred>>) {
        let n = waiters.len();
        match self.call(InferMany(reqs), n) {
            (Ok(answers), start, took) => {
                for (w, answer) in waiters.into_iter().zip(answers) {
                    w.called(start, took, n);
                    w.reply((answer.map_err(ServeError::from), None));
                }
            }
            (Err(e), ..) => fail_all(waiters, e.into()),
        }
    }
}

/// Every request of a batch gets the same error.
fn fail_all<T>(waiters: Vec<Waiter<T>>, e: ServeError) {
    for w in waiters {
        w.reply((Err(e.clone()), None));
    }
}

/// The model's own metrics (Seldon's `metrics()`), counted once per model call.
pub(super) fn record_custom<O: Op>(metrics: &Metrics, result: &Result<O::Output, ModelError>) {
    if let Ok(output) = result {
        for m in O::custom(output).iter() {
            metrics.custom(m);
        }
    }
}
