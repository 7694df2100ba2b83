//! Per-model inference statistics for Triton's statistics extension: a few relaxed
//! atomics bumped once per inference (Seldon `predict` or V2 `infer`), so that the
//! request path pays a handful of uncontended adds.
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Counts since the server started (a model reloaded under its name keeps counting).
/// All-zero is the empty value: it lives in the metrics' shared memory (`metrics.rs`).
#[derive(Debug, Default)]
pub struct Stats {
    success: Pair,
    fail: Pair,
    /// Model calls, a batch's joined call counting once.
    executions: AtomicU64,
    /// The successful requests' time inside the model's call (a batch's call counts its
    /// whole time for each of its requests, as each waited that long).
    compute: Pair,
    /// Milliseconds since the epoch of the last inference's end; 0 before any.
    last_ms: AtomicU64,
}

#[derive(Debug, Default)]
struct Pair {
    count: AtomicU64,
    ns: AtomicU64,
}

impl Pair {
    fn add(&self, took: Duration) {
        self.count.fetch_add(1, Ordering::Relaxed);
        self.ns.fetch_add(nanos(took), Ordering::Relaxed);
    }

    fn get(&self) -> (u64, u64) {
        (
            self.count.load(Ordering::Relaxed),
            self.ns.load(Ordering::Relaxed),
        )
    }
}

/// A runner's statistics: shared by the workers, or its process's own.
#[derive(Debug, Clone)]
pub enum Handle {
    Shared(&'static Stats),
    Own(Arc<Stats>),
}

impl std::ops::Deref for Handle {
    type Target = Stats;

    fn deref(&self) -> &Stats {
        match self {
            Handle::Shared(s) => s,
            Handle::Own(s) => s,
        }
    }
}

/// What the statistics extension reports, read at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Snapshot {
    pub success: (u64, u64),
    pub fail: (u64, u64),
    pub executions: u64,
    pub compute: (u64, u64),
    /// The time successful requests spent before the model call: their total less the
    /// model's.
    pub queue_ns: u64,
    pub last_inference_ms: u64,
}

impl Stats {
    /// One inference ended, `took` after it reached the runner.
    pub fn finished(&self, ok: bool, took: Duration) {
        if ok { &self.success } else { &self.fail }.add(took);
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        self.last_ms.store(now, Ordering::Relaxed);
    }

    /// One model call answering `requests` requests took `took`.
    pub fn executed(&self, requests: usize, took: Duration, ok: bool) {
        self.executions.fetch_add(1, Ordering::Relaxed);
        if ok {
            let n = u64::try_from(requests).unwrap_or(u64::MAX);
            self.compute.count.fetch_add(n, Ordering::Relaxed);
            self.compute
                .ns
                .fetch_add(nanos(took).saturating_mul(n), Ordering::Relaxed);
        }
    }

    pub fn snapshot(&self) -> Snapshot {
        let success = self.success.get();
        let compute = self.compute.get();
        Snapshot {
            success,
            fail: self.fail.get(),
            executions: self.executions.load(Ordering::Relaxed),
            compute,
            queue_ns: success.1.saturating_sub(compute.1),
            last_inference_ms: self.last_ms.load(Ordering::Relaxed),
        }
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_successes_failures_and_queue_time() {
        let s = Stats::default();
        assert_eq!(s.snapshot(), Snapshot::default());
        s.executed(1, Duration::from_nanos(300), true);
        s.executed(1, Duration::from_nanos(10), false);
        s.finished(true, Duration::from_nanos(1000));
        s.finished(false, Duration::from_nanos(50));
        let snap = s.snapshot();
        assert_eq!(snap.success, (1, 1000));
        assert_eq!(snap.fail, (1, 50));
        assert_eq!(snap.executions, 2);
        assert_eq!(snap.compute, (1, 300));
        assert_eq!(snap.queue_ns, 700);
        // A batch of three: one execution, each request's compute time the call's.
        s.executed(3, Duration::from_nanos(100), true);
        let snap = s.snapshot();
        assert_eq!(snap.executions, 3);
        assert_eq!(snap.compute, (4, 600));
        assert!(snap.last_inference_ms > 1_600_000_000_000);
    }
}
