//! The load as tasks on one thread (a current-thread tokio runtime): HTTP/2 and gRPC, and
//! HTTP/1.1 beyond `THREADS_UP_TO` connections.
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{budget, report, timed_out, Counters, CpuBefore, Load, Plan, Tally};
use crate::progress::Progress;
use crate::report::Report;
use crate::target::{Target, Transport};
use crate::transport::{self, Code, Sender};

pub fn run(target: &Target, load: &Load) -> Result<Report, String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("starting the runtime: {e}"))?;
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, drive(Rc::new(target.clone()), load.clone()))
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
    if let Some(plan) = Plan::warmup(&load) {
        senders = run_workers(&target, senders, plan, Arc::default()).await.0;
    }

    let (duration, limit) = budget(&load);
    let progress = Rc::new(Progress::new(load.progress, duration, limit));
    let before = CpuBefore::now(&load);
    let plan = Plan::measured(&load);
    let counters = Arc::new(Counters::default());
    let ticker = progress.enabled().then(|| {
        let (progress, counters) = (progress.clone(), counters.clone());
        tokio::task::spawn_local(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(250)).await;
                progress.show(counters.done.load(Ordering::Relaxed));
            }
        })
    });
    let (_, tally) = run_workers(&target, senders, plan, counters).await;
    if let Some(t) = ticker {
        t.abort();
    }
    progress.finish();
    Ok(report(&target, &load, conns, &plan, tally, before))
}

/// Runs one worker per sender until the plan says stop; gives the senders back.
async fn run_workers(
    target: &Rc<Target>,
    senders: Vec<Sender>,
    plan: Plan,
    counters: Arc<Counters>,
) -> (Vec<Sender>, Tally) {
    let handles: Vec<_> = senders
        .into_iter()
        .map(|s| tokio::task::spawn_local(worker(target.clone(), s, plan, counters.clone())))
        .collect();
    gathered(handles, Tally::merge).await
}

/// Waits for every worker: the connections they give back, and their tallies merged.
pub(crate) async fn gathered<C, T: Default>(
    handles: Vec<tokio::task::JoinHandle<(C, T)>>,
    merge: fn(&mut T, T),
) -> (Vec<C>, T) {
    let mut back = Vec::with_capacity(handles.len());
    let mut tally = T::default();
    for h in handles {
        if let Ok((c, t)) = h.await {
            back.push(c);
            merge(&mut tally, t);
        }
    }
    (back, tally)
}

async fn worker(
    target: Rc<Target>,
    mut sender: Sender,
    plan: Plan,
    counters: Arc<Counters>,
) -> (Sender, Tally) {
    let bytes_out = target.body.len() as u64;
    let mut tally = Tally::default();
    while let Some(intended) = plan.ticket(&counters.issued) {
        let from = match intended {
            Some(at) if at > Instant::now() => {
                tokio::time::sleep_until(at.into()).await;
                Instant::now()
            }
            // Late: every worker was busy. Time it from when it should have left.
            Some(at) => at,
            None => Instant::now(),
        };
        tally.last_send = Some(Instant::now());
        let out = tokio::time::timeout(plan.timeout, transport::send(&mut sender, &target))
            .await
            .unwrap_or_else(|_| timed_out(plan.timeout));
        let done = Instant::now();
        tally.rec.record(done - from, done, &out, bytes_out);
        counters.done.fetch_add(1, Ordering::Relaxed);
        if matches!(out.code, Code::Error(_)) {
            // The connection may be gone: open a new one (after a pause, so that a
            // refused connection does not become a busy loop).
            match transport::connect(&target).await {
                Ok(s) => sender = s,
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            }
        }
    }
    (sender, tally)
}
