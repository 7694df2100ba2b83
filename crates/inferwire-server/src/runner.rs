//! Running model calls: at most `max_concurrency` at once, at most `max_queue` waiting
//! (more are refused at once: backpressure instead of unbounded latency).
//!
//! A call runs on the I/O thread that decoded the request: handing it to another thread
//! and back costs two cross-thread wake-ups, which on a 2-core VM cost more CPU than a
//! small model call. A model whose recent calls were slow is called on the model thread
//! instead, so that its I/O thread keeps serving its other connections meanwhile.
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::Instant;

use tokio::sync::{oneshot, OwnedSemaphorePermit, Semaphore};

use crate::error::{Kind, ServeError};
use crate::model::{Call, Model, ModelError, Reply};

/// Calls slower than this (moving average) go to the model thread.
const SLOW_CALL_MICROS: u64 = 1_000;

type Job = Box<dyn FnOnce(&dyn Model) + Send>;

pub struct Runner {
    model: Arc<dyn Model>,
    permits: Arc<Semaphore>,
    waiting: AtomicUsize,
    max_queue: usize,
    /// Exponential moving average of call durations, in microseconds.
    recent_micros: AtomicU64,
    model_thread: Option<(mpsc::Sender<Job>, JoinHandle<()>)>,
}

/// Decrements the waiting count when a queued request stops waiting, however it stops.
struct Waiting<'a>(&'a AtomicUsize);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Runner {
    pub fn new(
        model: Arc<dyn Model>,
        max_concurrency: usize,
        max_queue: usize,
    ) -> std::io::Result<Self> {
        let (tx, rx) = mpsc::channel::<Job>();
        let thread_model = model.clone();
        let handle = std::thread::Builder::new()
            .name("inferwire-model".into())
            .spawn(move || {
                thread_model.thread_started();
                while let Ok(job) = rx.recv() {
                    job(&*thread_model);
                }
                thread_model.thread_stopping();
            })?;
        Ok(Self {
            model,
            permits: Arc::new(Semaphore::new(max_concurrency.max(1))),
            waiting: AtomicUsize::new(0),
            max_queue,
            recent_micros: AtomicU64::new(0),
            model_thread: Some((tx, handle)),
        })
    }

    pub async fn call(&self, call: Call) -> Result<Reply, ServeError> {
        let permit = match self.permits.clone().try_acquire_owned() {
            Ok(p) => p,
            Err(_) => {
                if self.waiting.fetch_add(1, Ordering::Relaxed) >= self.max_queue {
                    self.waiting.fetch_sub(1, Ordering::Relaxed);
                    return Err(ServeError::new(
                        Kind::Overloaded,
                        format!(
                            "{} requests are already waiting for the model; retry later",
                            self.max_queue
                        ),
                    ));
                }
                let _waiting = Waiting(&self.waiting);
                self.permits.clone().acquire_owned().await.map_err(|_| {
                    ServeError::new(Kind::ShuttingDown, "the server is shutting down")
                })?
            }
        };
        let start = Instant::now();
        let result = if self.recent_micros.load(Ordering::Relaxed) < SLOW_CALL_MICROS {
            let result = self.model.call(call);
            drop(permit);
            result
        } else {
            self.on_model_thread(call, permit).await?
        };
        let took = u64::try_from(start.elapsed().as_micros()).unwrap_or(u64::MAX);
        let prev = self.recent_micros.load(Ordering::Relaxed);
        self.recent_micros
            .store(prev - prev / 8 + took / 8, Ordering::Relaxed);
        Ok(result?)
    }

    /// The permit travels with the call: if the client goes away meanwhile, the model
    /// still counts as busy until the call really ends.
    async fn on_model_thread(
        &self,
        call: Call,
        permit: OwnedSemaphorePermit,
    ) -> Result<Result<Reply, ModelError>, ServeError> {
        let (done, result) = oneshot::channel();
        let job: Job = Box::new(move |model: &dyn Model| {
            if !done.is_closed() {
                let _ = done.send(model.call(call));
            }
            drop(permit);
        });
        let stopped = || ServeError::new(Kind::ShuttingDown, "the model thread has stopped");
        let (tx, _) = self.model_thread.as_ref().ok_or_else(stopped)?;
        tx.send(job).map_err(|_| stopped())?;
        result.await.map_err(|_| stopped())
    }
}

impl Drop for Runner {
    fn drop(&mut self) {
        if let Some((tx, handle)) = self.model_thread.take() {
            drop(tx);
            let _ = handle.join();
        }
    }
}
