//! The model executor: one thread that takes calls from a bounded queue and runs them.
//!
//! Network threads never run model code; they enqueue and await. A full queue is
//! refused at once (backpressure) rather than letting latency grow without bound.
use std::sync::Arc;
use std::thread::JoinHandle;

use tokio::sync::{mpsc, oneshot};

use crate::error::{Kind, ServeError};
use crate::model::{Call, Model, ModelError, Reply};

struct Job {
    call: Call,
    done: oneshot::Sender<Result<Reply, ModelError>>,
}

pub struct Executor {
    tx: mpsc::Sender<Job>,
}

pub struct ExecutorThread(JoinHandle<()>);

impl ExecutorThread {
    /// Waits for queued calls to finish; the queue closes when every `Executor` is dropped.
    pub fn join(self) {
        let _ = self.0.join();
    }
}

impl Executor {
    pub fn start(
        model: Arc<dyn Model>,
        max_queue: usize,
    ) -> std::io::Result<(Self, ExecutorThread)> {
        let (tx, mut rx) = mpsc::channel::<Job>(max_queue.max(1));
        let thread = std::thread::Builder::new()
            .name("inferwire-model".into())
            .spawn(move || {
                while let Some(job) = rx.blocking_recv() {
                    if job.done.is_closed() {
                        continue; // the client went away: don't compute for nobody
                    }
                    let _ = job.done.send(model.call(job.call));
                }
            })?;
        Ok((Self { tx }, ExecutorThread(thread)))
    }

    pub async fn call(&self, call: Call) -> Result<Reply, ServeError> {
        let (done, result) = oneshot::channel();
        self.tx.try_send(Job { call, done }).map_err(|e| match e {
            mpsc::error::TrySendError::Full(_) => {
                ServeError::new(Kind::Overloaded, "the model's queue is full; retry later")
            }
            mpsc::error::TrySendError::Closed(_) => {
                ServeError::new(Kind::ShuttingDown, "the server is shutting down")
            }
        })?;
        let reply = result
            .await
            .map_err(|_| ServeError::new(Kind::Internal, "the model executor stopped"))?;
        Ok(reply?)
    }
}
