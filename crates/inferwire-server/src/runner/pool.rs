//! The model threads. Each takes work from one shared queue; with batching, the thread
//! that takes a predict keeps the queue for up to `max_batch_delay` to gather more,
//! then releases it (the next thread gathers the next batch while this one computes).
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::sync::{oneshot, OwnedSemaphorePermit};

use super::slots::Slots;
use super::{deadline_exceeded, RunnerConfig};
use crate::batch;
use crate::error::{Kind, ServeError};
use crate::metrics::Metrics;
use crate::model::{Call, Model, ModelError, Reply};

/// A call's result, and how long the model took when it ran alone.
pub type Done = (Result<Reply, ServeError>, Option<Duration>);

pub struct Work {
    pub call: Call,
    pub deadline: Option<Instant>,
    pub batchable: bool,
    pub waiter: Waiter,
}

/// Who waits for a call's reply.
pub struct Waiter {
    pub done: oneshot::Sender<Done>,
    /// The request's admission: held until its reply is sent, so that a request whose
    /// client went away still counts until the model is done with it.
    pub permit: OwnedSemaphorePermit,
}

impl Waiter {
    fn reply(self, done: Done) {
        let _ = self.done.send(done);
        drop(self.permit);
    }
}

impl Work {
    /// Whether anyone still waits for this reply (the client may have gone, or the
    /// deadline passed): work nobody waits for is dropped, not computed.
    fn wanted(&self) -> bool {
        !self.waiter.done.is_closed()
    }

    fn expired(&self, now: Instant) -> bool {
        self.deadline.is_some_and(|d| d <= now)
    }
}

pub struct Pool {
    tx: Option<Sender<Work>>,
    threads: Vec<JoinHandle<()>>,
}

struct Shared {
    model: Arc<dyn Model>,
    queue: Mutex<Receiver<Work>>,
    slots: Arc<Slots>,
    metrics: Metrics,
    max_batch_size: usize,
    max_batch_delay: Duration,
}

impl Pool {
    pub fn start(
        model: Arc<dyn Model>,
        config: &RunnerConfig,
        slots: Arc<Slots>,
        metrics: Metrics,
    ) -> std::io::Result<Self> {
        let (tx, rx) = mpsc::channel();
        let shared = Arc::new(Shared {
            model,
            queue: Mutex::new(rx),
            slots,
            metrics,
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
        Ok(Self {
            tx: Some(tx),
            threads,
        })
    }

    pub fn send(&self, work: Work) -> Result<(), ServeError> {
        let stopped = || ServeError::new(Kind::ShuttingDown, "the model threads have stopped");
        self.tx
            .as_ref()
            .ok_or_else(stopped)?
            .send(work)
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
        drop(self.tx.take());
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
        while let Some(work) = self.gather() {
            self.serve(work);
        }
        self.model.thread_stopping();
    }

    /// The next work: one item, or with batching a predict and whatever arrives within
    /// the batch delay (up to the batch size). `None` once the queue is closed.
    fn gather(&self) -> Option<Vec<Work>> {
        let queue = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        let first = queue.recv().ok()?;
        if !first.batchable || self.max_batch_size == 1 {
            return Some(vec![first]);
        }
        let until = Instant::now() + self.max_batch_delay;
        let mut items = vec![first];
        let mut predicts = 1;
        while predicts < self.max_batch_size {
            let left = until.saturating_duration_since(Instant::now());
            let next = if left.is_zero() {
                queue.try_recv().map_err(|_| RecvTimeoutError::Timeout)
            } else {
                queue.recv_timeout(left)
            };
            match next {
                Ok(w) => {
                    predicts += usize::from(w.batchable);
                    items.push(w);
                }
                Err(_) => break,
            }
        }
        Some(items)
    }

    fn serve(&self, items: Vec<Work>) {
        let now = Instant::now();
        let mut groups: Vec<(Option<batch::GroupKey>, Vec<Work>)> = Vec::new();
        for work in items {
            if !work.wanted() {
                continue;
            }
            if work.expired(now) {
                work.waiter.reply((Err(deadline_exceeded()), None));
                continue;
            }
            let key = if work.batchable {
                batch::group_key(&work.call)
            } else {
                None
            };
            match groups.iter_mut().find(|(k, _)| key.is_some() && *k == key) {
                Some((_, group)) => group.push(work),
                None => groups.push((key, vec![work])),
            }
        }
        for (_, group) in groups {
            if group.len() == 1 {
                for work in group {
                    self.alone(work);
                }
            } else {
                self.batch(group);
            }
        }
    }

    fn call(&self, call: Call, requests: usize) -> (Result<Reply, ModelError>, Duration) {
        let _slot = self.slots.take();
        let start = Instant::now();
        let result = self.model.call(call);
        let took = start.elapsed();
        self.metrics.model_call(requests, took);
        record_custom(&self.metrics, &result);
        (result, took)
    }

    fn alone(&self, work: Work) {
        self.run_alone(work.call, work.waiter);
    }

    fn run_alone(&self, call: Call, waiter: Waiter) {
        let (result, took) = self.call(call, 1);
        let took = result.is_ok().then_some(took);
        waiter.reply((result.map_err(ServeError::from), took));
    }

    /// One call for the group; if the model fails on the batch, each request runs alone
    /// so that one bad request fails alone.
    fn batch(&self, group: Vec<Work>) {
        if matches!(group[0].call, Call::Infer(_)) {
            return self.batch_infer(group);
        }
        let mut msgs = Vec::with_capacity(group.len());
        let mut waiters = Vec::with_capacity(group.len());
        for work in group {
            match work.call {
                Call::Predict(m) => {
                    msgs.push(m);
                    waiters.push(work.waiter);
                }
                other => self.run_alone(other, work.waiter),
            }
        }
        let (joined, members) = match batch::join(&msgs) {
            Ok(j) => j,
            Err(e) => return fail_all(waiters, e),
        };
        let n = waiters.len();
        match self.call(Call::PredictBatch(joined), n).0 {
            Ok(Reply::Answer(answer)) => {
                for (w, reply) in waiters.into_iter().zip(batch::split(answer, members)) {
                    w.reply((reply.map(Reply::Message), None));
                }
            }
            Ok(other) => fail_all(
                waiters,
                ServeError::new(
                    Kind::Internal,
                    format!("the model runtime answered a batch with {other:?}"),
                ),
            ),
            Err(e) => {
                tracing::debug!(
                    "a batch of {n} failed ({}); running each request alone",
                    e.message
                );
                for (msg, w) in msgs.into_iter().zip(waiters) {
                    if w.done.is_closed() {
                        continue;
                    }
                    self.run_alone(Call::Predict(msg), w);
                }
            }
        }
    }

    /// V2 requests: one call for the group; each output cut back by rows. If the model
    /// fails on the batch, each request runs alone.
    fn batch_infer(&self, group: Vec<Work>) {
        let mut reqs = Vec::with_capacity(group.len());
        let mut waiters = Vec::with_capacity(group.len());
        for work in group {
            match work.call {
                Call::Infer(r) => {
                    reqs.push(*r);
                    waiters.push(work.waiter);
                }
                other => self.run_alone(other, work.waiter),
            }
        }
        let (joined, counts) = match batch::v2::join(&reqs) {
            Ok(j) => j,
            Err(e) => return fail_all(waiters, e),
        };
        let n = waiters.len();
        match self.call(Call::Infer(Box::new(joined)), n).0 {
            Ok(Reply::Infer(outputs)) => match batch::v2::split(outputs, &counts) {
                Ok(parts) => {
                    for (w, outputs) in waiters.into_iter().zip(parts) {
                        w.reply((Ok(Reply::Infer(outputs)), None));
                    }
                }
                Err(e) => fail_all(waiters, e),
            },
            Ok(other) => fail_all(
                waiters,
                ServeError::new(
                    Kind::Internal,
                    format!("the model runtime answered a V2 batch with {other:?}"),
                ),
            ),
            Err(e) => {
                tracing::debug!(
                    "a batch of {n} failed ({}); running each request alone",
                    e.message
                );
                for (req, w) in reqs.into_iter().zip(waiters) {
                    if !w.done.is_closed() {
                        self.run_alone(Call::Infer(Box::new(req)), w);
                    }
                }
            }
        }
    }
}

/// Every request of a batch gets the same error.
fn fail_all(waiters: Vec<Waiter>, e: ServeError) {
    for w in waiters {
        w.reply((Err(e.clone()), None));
    }
}

/// The model's own metrics (Seldon's `metrics()`), counted once per model call.
pub(super) fn record_custom(metrics: &Metrics, result: &Result<Reply, ModelError>) {
    let list = match result {
        Ok(Reply::Message(m)) => &m.meta.metrics,
        Ok(Reply::Answer(a)) => &a.metrics,
        _ => return,
    };
    for m in list {
        metrics.custom(m);
    }
}
