//! When a traced request's model call ran, and how many requests its batch held: filled
//! in by whichever thread ran the call, read by the request's span once it is answered.
//! Only a traced request has one (the untraced path passes `None` and reads no clock).
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// A model call as the request saw it.
#[derive(Debug, Clone, Copy)]
pub struct Called {
    pub start: Instant,
    pub took: Duration,
    /// The requests answered by the call (1 when it ran alone).
    pub batch: usize,
}

/// The sink a traced request passes down; the first call recorded is kept (a batch that
/// failed and ran its requests alone records each request's own call).
#[derive(Debug, Clone, Default)]
pub struct CallTiming(Arc<OnceLock<Called>>);

impl CallTiming {
    pub fn called(&self, start: Instant, took: Duration, batch: usize) {
        let _ = self.0.set(Called { start, took, batch });
    }

    pub fn get(&self) -> Option<Called> {
        self.0.get().copied()
    }
}
