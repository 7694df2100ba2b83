//! The load driver, on one thread: a closed loop (`concurrency` requests in flight, each
//! sent when the previous one ends) or an open loop (requests sent at `rate` per second
//! whatever the answers). In the open loop a request that could not go out on time,
//! because every worker was still waiting for an answer, is timed from when it should
//! have been sent, so a stalled server shows up in the latencies instead of silently
//! lowering the rate (no coordinated omission). Timer jitter (tokio's timers have a
//! millisecond's resolution) is not counted against the server: a request whose worker
//! was free and waiting is timed from when it actually left.
use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::cpu;
use crate::progress::Progress;
use crate::report::{Report, RunInfo};
use crate::stats::Recorder;
use crate::target::{Target, Transport};
use crate::transport::{self, Code, Outcome, Sender};

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
    /// Measure this process tree's CPU time per request.
    pub server_pid: Option<u32>,
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
            server_pid: None,
            progress: false,
        }
    }
}

/// Runs the load and reports; errors only when the target cannot be reached at all.
pub fn run(target: &Target, load: &Load) -> Result<Report, String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("starting the runtime: {e}"))?;
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, drive(Rc::new(target.clone()), load.clone()))
}

struct Shared {
    rec: Recorder,
    issued: u64,
    last_send: Option<Instant>,
}

#[derive(Clone, Copy)]
struct Plan {
    start: Instant,
    deadline: Option<Instant>,
    limit: Option<u64>,
    /// Open loop: the gap between intended send times.
    interval: Option<Duration>,
    timeout: Duration,
}

impl Plan {
    /// The next request's number and, in the open loop, its intended send time; `None`
    /// when the run is over.
    fn ticket(&self, s: &mut Shared) -> Option<(u64, Option<Instant>)> {
        let i = s.issued;
        if self.limit.is_some_and(|l| i >= l) {
            return None;
        }
        let intended = self.interval.map(|g| self.start + g.mul_f64(i as f64));
        let at = intended.unwrap_or_else(Instant::now);
        if self.deadline.is_some_and(|d| at >= d) {
            return None;
        }
        s.issued += 1;
        Some((i, intended))
    }
}

async fn drive(target: Rc<Target>, load: Load) -> Result<Report, String> {
    let workers = load.concurrency.max(1);
    let conns = match target.transport {
        Transport::Http1 => workers,
        _ => load.connections.unwrap_or(1).clamp(1, workers),
    };
    let mut senders: Vec<Sender> = Vec::with_capacity(workers);
    for i in 0..workers {
        let s = match senders.get(i % conns).and_then(Sender::share) {
            Some(shared) if i >= conns => shared,
            _ => transport::connect(&target).await?,
        };
        senders.push(s);
    }
    let rate = load.rate.filter(|&r| r > 0.0);
    let (duration, limit) = match (load.duration, load.requests) {
        (None, None) => (Some(Duration::from_secs(10)), None),
        other => other,
    };

    if !load.warmup.is_zero() {
        let plan = Plan {
            start: Instant::now(),
            deadline: Some(Instant::now() + load.warmup),
            limit: None,
            interval: None,
            timeout: load.timeout,
        };
        let shared = new_shared();
        senders = run_workers(&target, senders, plan, &shared).await;
    }

    let progress = Rc::new(Progress::new(load.progress, duration, limit));
    let cpu_client = cpu::own();
    let cpu_server = load.server_pid.and_then(cpu::process_tree);
    let start = Instant::now();
    let plan = Plan {
        start,
        deadline: duration.map(|d| start + d),
        limit,
        interval: rate.map(|r| Duration::from_secs_f64(1.0 / r)),
        timeout: load.timeout,
    };
    let shared = new_shared();
    let ticker = progress.enabled().then(|| {
        let (progress, shared) = (progress.clone(), shared.clone());
        tokio::task::spawn_local(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(250)).await;
                progress.show(shared.borrow().rec.requests);
            }
        })
    });
    run_workers(&target, senders, plan, &shared).await;
    if let Some(t) = ticker {
        t.abort();
    }
    progress.finish();
    let client_cpu = cpu::own().saturating_sub(cpu_client);
    let server_cpu = match (load.server_pid, cpu_server) {
        (Some(pid), Some(before)) => cpu::process_tree(pid).map(|t| t.saturating_sub(before)),
        _ => None,
    };

    let s = shared.borrow();
    let last_send = s.last_send.unwrap_or(start);
    let last_done = s.rec.last_done.unwrap_or(last_send);
    Ok(Report::new(
        &s.rec,
        RunInfo {
            target: target.url(),
            transport: target.transport.name().to_string(),
            mode: if rate.is_some() { "open" } else { "closed" }.to_string(),
            concurrency: workers,
            connections: conns,
            rate,
            attack: last_send.saturating_duration_since(start),
            wait: last_done.saturating_duration_since(last_send),
            client_cpu,
            server_cpu,
            server_pid: load.server_pid,
        },
    ))
}

fn new_shared() -> Rc<RefCell<Shared>> {
    Rc::new(RefCell::new(Shared {
        rec: Recorder::default(),
        issued: 0,
        last_send: None,
    }))
}

/// Runs one worker per sender until the plan says stop; gives the senders back.
async fn run_workers(
    target: &Rc<Target>,
    senders: Vec<Sender>,
    plan: Plan,
    shared: &Rc<RefCell<Shared>>,
) -> Vec<Sender> {
    let handles: Vec<_> = senders
        .into_iter()
        .map(|s| tokio::task::spawn_local(worker(target.clone(), s, plan, shared.clone())))
        .collect();
    let mut back = Vec::with_capacity(handles.len());
    for h in handles {
        if let Ok(s) = h.await {
            back.push(s);
        }
    }
    back
}

async fn worker(
    target: Rc<Target>,
    mut sender: Sender,
    plan: Plan,
    shared: Rc<RefCell<Shared>>,
) -> Sender {
    let bytes_out = target.body.len() as u64;
    loop {
        let Some((_, intended)) = plan.ticket(&mut shared.borrow_mut()) else {
            break;
        };
        let from = match intended {
            Some(at) if at > Instant::now() => {
                tokio::time::sleep_until(at.into()).await;
                Instant::now()
            }
            // Late: every worker was busy. Time it from when it should have left.
            Some(at) => at,
            None => Instant::now(),
        };
        shared.borrow_mut().last_send = Some(Instant::now());
        let out =
            match tokio::time::timeout(plan.timeout, transport::send(&mut sender, &target)).await {
                Ok(o) => o,
                Err(_) => Outcome {
                    code: Code::Error(format!("no answer within {:?}", plan.timeout)),
                    bytes_in: 0,
                    message: Some(format!("no answer within {:?}", plan.timeout)),
                },
            };
        let done = Instant::now();
        let failed = matches!(out.code, Code::Error(_));
        shared
            .borrow_mut()
            .rec
            .record(done - from, done, &out, bytes_out);
        if failed {
            // The connection may be gone: open a new one (after a pause, so that a
            // refused connection does not become a busy loop).
            match transport::connect(&target).await {
                Ok(s) => sender = s,
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            }
        }
    }
    sender
}
