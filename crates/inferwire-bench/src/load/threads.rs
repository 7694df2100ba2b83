//! One thread per connection with blocking calls (see `load`): HTTP/1.1, and HTTP/2 or
//! gRPC without TLS when every worker has a connection of its own (`blocking_h2`).
use std::net::TcpStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::{budget, report, timed_out, Counters, CpuBefore, Load, Plan, Tally};
use crate::blocking_h2::{self, Prepared};
use crate::http1::{BlockingConn, BlockingStream, TIMED_OUT};
use crate::progress::Progress;
use crate::report::Report;
use crate::target::{Target, Transport};
use crate::transport::{self, Code, Outcome};

/// A blocking connection of either kind.
enum Blocking {
    H1(BlockingConn),
    H2(Box<blocking_h2::Conn>),
}

impl Blocking {
    /// One request and its response, and whether the connection must be dropped.
    fn exchange(
        &mut self,
        t: &Target,
        prepared: Option<&Prepared>,
        timeout: Duration,
    ) -> (Outcome, bool) {
        let r = match (self, prepared) {
            (Blocking::H1(c), _) => {
                let head = t.method == http::Method::HEAD;
                return match c.exchange(&t.wire, head) {
                    Err(e) if e == TIMED_OUT => (timed_out(timeout), true),
                    other => transport::outcome_of(other),
                };
            }
            (Blocking::H2(c), Some(p)) => c.exchange(p, &t.body),
            (Blocking::H2(_), None) => Err("an HTTP/2 connection without its request".into()),
        };
        match r {
            Ok(x) => x,
            Err(e) if e == TIMED_OUT => (timed_out(timeout), true),
            Err(e) => transport::outcome_of(Err(e)),
        }
    }
}

fn connect(t: &Target, timeout: Duration) -> Result<Blocking, String> {
    let s =
        TcpStream::connect(&t.authority).map_err(|e| transport::connect_error(&t.authority, e))?;
    let _ = s.set_nodelay(true);
    let _ = s.set_read_timeout(Some(timeout));
    let _ = s.set_write_timeout(Some(timeout));
    if t.transport != Transport::Http1 {
        let c = blocking_h2::Conn::new(s)
            .map_err(|e| format!("HTTP/2 preface to {}: {e}", t.authority))?;
        return Ok(Blocking::H2(Box::new(c)));
    }
    let stream = match &t.tls {
        None => BlockingStream::Plain(s),
        Some(tls) => {
            let mut c = rustls::ClientConnection::new(tls.config.clone(), tls.server_name.clone())
                .map_err(|e| format!("TLS with {}: {e}", t.authority))?;
            let mut s = s;
            // Handshake now, so that a refused certificate stops the run with its reason.
            while c.is_handshaking() {
                c.complete_io(&mut s)
                    .map_err(|e| format!("TLS handshake with {}: {e}", t.authority))?;
            }
            BlockingStream::Tls(Box::new(rustls::StreamOwned::new(c, s)))
        }
    };
    Ok(Blocking::H1(BlockingConn::new(stream)))
}

pub fn run(target: &Target, load: &Load) -> Result<Report, String> {
    let workers = load.concurrency.max(1);
    let mut conns = (0..workers)
        .map(|_| connect(target, load.timeout).map(Some))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(plan) = Plan::warmup(load) {
        conns = run_workers(target, conns, plan, &Counters::default(), None).0;
    }
    let (duration, limit) = budget(load);
    let progress = Progress::new(load.progress, duration, limit);
    let before = CpuBefore::now(load);
    let plan = Plan::measured(load);
    let counters = Counters::default();
    let (_, tally) = run_workers(target, conns, plan, &counters, Some(&progress));
    progress.finish();
    Ok(report(target, load, workers, &plan, tally, before))
}

type Conn = Option<Blocking>;

fn run_workers(
    target: &Target,
    conns: Vec<Conn>,
    plan: Plan,
    counters: &Counters,
    progress: Option<&Progress>,
) -> (Vec<Conn>, Tally) {
    let n = conns.len();
    let finished = AtomicUsize::new(0);
    std::thread::scope(|s| {
        let handles: Vec<_> = conns
            .into_iter()
            .map(|c| {
                let finished = &finished;
                s.spawn(move || {
                    let r = worker(target, c, plan, counters);
                    finished.fetch_add(1, Ordering::Release);
                    r
                })
            })
            .collect();
        if let Some(p) = progress.filter(|p| p.enabled()) {
            while finished.load(Ordering::Acquire) < n {
                std::thread::sleep(Duration::from_millis(250));
                p.show(counters.done.load(Ordering::Relaxed));
            }
        }
        let mut back = Vec::with_capacity(n);
        let mut tally = Tally::default();
        for h in handles {
            if let Ok((c, t)) = h.join() {
                back.push(c);
                tally.merge(t);
            }
        }
        (back, tally)
    })
}

fn worker(target: &Target, mut conn: Conn, plan: Plan, counters: &Counters) -> (Conn, Tally) {
    let bytes_out = target.body.len() as u64;
    let prepared = (target.transport != Transport::Http1).then(|| Prepared::new(target));
    let mut tally = Tally::default();
    while let Some(intended) = plan.ticket(&counters.issued) {
        let now = Instant::now();
        let from = match intended {
            Some(at) if at > now => {
                std::thread::sleep(at - now);
                Instant::now()
            }
            // Late: every worker was busy. Time it from when it should have left.
            Some(at) => at,
            None => now,
        };
        tally.last_send = Some(Instant::now());
        let fresh = conn.is_none();
        let (out, close) = match &mut conn {
            Some(c) => c.exchange(target, prepared.as_ref(), plan.timeout),
            None => match connect(target, plan.timeout) {
                Ok(c) => conn
                    .insert(c)
                    .exchange(target, prepared.as_ref(), plan.timeout),
                Err(e) => transport::outcome_of(Err(e)),
            },
        };
        if close {
            conn = None;
        }
        let done = Instant::now();
        tally.rec.record(done - from, done, &out, bytes_out);
        counters.done.fetch_add(1, Ordering::Relaxed);
        if fresh && matches!(out.code, Code::Error(_)) {
            // A refused connection must not become a busy loop.
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    (conn, tally)
}
