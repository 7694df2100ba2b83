//! The load driver, on one thread: a closed loop (`concurrency` requests in flight, each
//! sent when the previous one ends) or an open loop (requests sent at `rate` per second
//! whatever the answers). In the open loop a request that could not go out on time,
//! because every worker was still waiting for an answer, is timed from when it should
//! have been sent, so a stalled server shows up in the latencies instead of silently
//! lowering the rate (no coordinated omission). Timer jitter (tokio's timers have a
//! millisecond's resolution) is not counted against the server: a request whose worker
//! was free and waiting is timed from when it actually left.
//!
//! HTTP/1.1 with up to `THREADS_UP_TO` connections runs one thread per connection with
//! blocking calls (`threads`): a request then costs a write and a read, one system call
//! less than through an async runtime's `epoll_wait`, which on a small request is a
//! sixth of the generator's CPU. So do HTTP/2 and gRPC without TLS when each worker has
//! a connection of its own (`--connections` ≥ `--concurrency`; one request in flight by
//! default). Everything else runs as tasks on one thread (`tasks`).
pub(crate) mod tasks;
mod threads;

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::cpu;
use crate::report::{Report, RunInfo, Setup};
use crate::stats::Recorder;
use crate::target::{Target, Transport};
use crate::transport::{Code, Outcome};

/// HTTP/1.1 runs on threads up to this many connections, on tasks above.
pub const THREADS_UP_TO: usize = 64;

#[derive(Debug, Clone)]
pub struct Load {
    /// Requests in flight at once (closed loop), or the most workers (open loop).
    pub concurrency: usize,
    /// HTTP/2 and gRPC connections to spread them over (default 1, as ghz); HTTP/1.1
    /// always uses one connection per worker.
    pub connections: Option<usize>,
    /// Requests per second: an open loop. `None` (or 0): a closed loop.
    pub rate: Option<f64>,
    pub duration: Option<Duration>,
    pub requests: Option<u64>,
    /// A closed-loop run before measuring, not reported.
    pub warmup: Duration,
    /// A request without an answer by then counts as an error.
    pub timeout: Duration,
    /// Measure the CPU time per request of these processes' trees (the server's).
    pub server_pids: Vec<u32>,
    pub progress: bool,
}

impl Default for Load {
    fn default() -> Self {
        Self {
            concurrency: 1,
            connections: None,
            rate: None,
            duration: Some(Duration::from_secs(10)),
            requests: None,
            warmup: Duration::ZERO,
            timeout: Duration::from_secs(30),
            server_pids: Vec::new(),
            progress: false,
        }
    }
}

/// Runs the load and reports; errors only when the target cannot be reached at all.
pub fn run(target: &Target, load: &Load) -> Result<Report, String> {
    let workers = load.concurrency.max(1);
    // HTTP/2 multiplexes: threads only when no two workers would share a connection.
    let own_connections = match target.transport {
        Transport::Http1 => true,
        _ => target.tls.is_none() && load.connections.unwrap_or(1) >= workers,
    };
    if own_connections && workers <= THREADS_UP_TO {
        threads::run(target, load)
    } else {
        tasks::run(target, load)
    }
}

/// When the run stops, and how requests are spaced.
#[derive(Clone, Copy)]
pub(crate) struct Plan {
    pub(crate) start: Instant,
    deadline: Option<Instant>,
    limit: Option<u64>,
    /// Open loop: the gap between intended send times.
    interval: Option<Duration>,
    pub(crate) timeout: Duration,
}

impl Plan {
    pub(crate) fn warmup(load: &Load) -> Option<Self> {
        let now = Instant::now();
        (!load.warmup.is_zero()).then(|| Plan {
            start: now,
            deadline: Some(now + load.warmup),
            limit: None,
            interval: None,
            timeout: load.timeout,
        })
    }

    pub(crate) fn measured(load: &Load) -> Self {
        let start = Instant::now();
        let (duration, limit) = budget(load);
        Plan {
            start,
            deadline: duration.map(|d| start + d),
            limit,
            interval: rate(load).map(|r| Duration::from_secs_f64(1.0 / r)),
            timeout: load.timeout,
        }
    }

    /// Takes the next request: `None` when the run is over, else its intended send
    /// time in the open loop (`Some(None)` in the closed loop).
    pub(crate) fn ticket(&self, issued: &AtomicU64) -> Option<Option<Instant>> {
        let i = issued.fetch_add(1, Ordering::Relaxed);
        if self.limit.is_some_and(|l| i >= l) {
            return None;
        }
        let intended = self.interval.map(|g| self.start + g.mul_f64(i as f64));
        let at = intended.unwrap_or_else(Instant::now);
        if self.deadline.is_some_and(|d| at >= d) {
            return None;
        }
        Some(intended)
    }
}

pub(crate) fn rate(load: &Load) -> Option<f64> {
    load.rate.filter(|&r| r > 0.0)
}

/// The run's length: as given, or 10 s when neither a duration nor a count is.
pub(crate) fn budget(load: &Load) -> (Option<Duration>, Option<u64>) {
    match (load.duration, load.requests) {
        (None, None) => (Some(Duration::from_secs(10)), None),
        other => other,
    }
}

/// Shared by the workers of one run: tickets taken, requests done (for the progress bar).
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) issued: AtomicU64,
    pub(crate) done: AtomicU64,
}

/// One worker's results, merged into the run's at the end.
#[derive(Default)]
struct Tally {
    rec: Recorder,
    last_send: Option<Instant>,
}

impl Tally {
    fn merge(&mut self, other: Tally) {
        self.rec.merge(other.rec);
        self.last_send = self.last_send.max(other.last_send);
    }
}

fn timed_out(timeout: Duration) -> Outcome {
    let m = format!("no answer within {timeout:?}");
    Outcome {
        code: Code::Error(m.clone()),
        bytes_in: 0,
        message: Some(m),
    }
}

/// CPU counters read before the measured run.
struct CpuBefore {
    client: Duration,
    server: Option<Duration>,
}

impl CpuBefore {
    fn now(load: &Load) -> Self {
        Self {
            client: cpu::own(),
            server: cpu::trees(&load.server_pids),
        }
    }
}

fn report(
    target: &Target,
    load: &Load,
    connections: usize,
    plan: &Plan,
    tally: Tally,
    before: CpuBefore,
) -> Report {
    let client_cpu = cpu::own().saturating_sub(before.client);
    let server_cpu = before
        .server
        .and_then(|b| Some(cpu::trees(&load.server_pids)?.saturating_sub(b)));
    let last_send = tally.last_send.unwrap_or(plan.start);
    let last_done = tally.rec.last_done.unwrap_or(last_send);
    Report::new(
        &tally.rec,
        RunInfo {
            setup: Setup {
                target: target.url(),
                transport: target.transport.name().to_string(),
                mode: if rate(load).is_some() {
                    "open"
                } else {
                    "closed"
                }
                .to_string(),
                concurrency: load.concurrency.max(1),
                connections,
                rate: rate(load),
                server_pid: load.server_pids.first().copied(),
                server_pids: load.server_pids.clone(),
            },
            attack: last_send.saturating_duration_since(plan.start),
            wait: last_done.saturating_duration_since(last_send),
            client_cpu,
            server_cpu,
        },
    )
}
