//! A run's report: vegeta's fields (requests, rate, throughput, latencies, bytes, success,
//! status codes, errors), ghz's latency histogram, and CPU time per request on both
//! sides. Written as text, JSON or Markdown.
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use serde::Serialize;

use crate::duration::human;
use crate::stats::Recorder;

#[derive(Debug, Clone, Serialize)]
pub struct Latencies {
    pub min_ns: u64,
    pub mean_ns: u64,
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p95_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Bucket {
    /// Upper bound of the bucket.
    pub le_ns: u64,
    pub count: u64,
}

/// What was run: the target and how the load was shaped.
#[derive(Debug, Clone, Serialize)]
pub struct Setup {
    pub target: String,
    pub transport: String,
    /// "closed" (`concurrency` requests in flight, each sent when the last ended) or
    /// "open" (sent at `rate` per second whatever the answers).
    pub mode: String,
    pub concurrency: usize,
    pub connections: usize,
    pub rate: Option<f64>,
    /// The server whose CPU time was measured (--server-pid, or found by --server-cpu):
    /// the first of `server_pids`, kept for readers of earlier reports.
    pub server_pid: Option<u32>,
    /// Every process whose tree's CPU time was measured: one for a server with its
    /// workers below it, several for separate processes sharing the port.
    pub server_pids: Vec<u32>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    #[serde(flatten)]
    pub setup: Setup,
    pub requests: u64,
    pub ok: u64,
    pub success: f64,
    /// Requests sent per second of attack.
    pub sent_rate: f64,
    /// Successful requests per second, from the first send to the last answer.
    pub throughput: f64,
    pub duration_ns: u64,
    pub attack_ns: u64,
    pub wait_ns: u64,
    pub latency: Latencies,
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub status_codes: BTreeMap<String, u64>,
    /// The latencies of each status code's requests.
    pub latency_by_code: BTreeMap<String, Latencies>,
    pub errors: Vec<String>,
    pub histogram: Vec<Bucket>,
    /// This generator's CPU time per request.
    pub client_cpu_ns_per_request: f64,
    /// The server process tree's CPU time per request, when it was measured.
    pub server_cpu_ns_per_request: Option<f64>,
}

/// A finished run's timings and CPU counters, which `Report::new` turns into rates.
pub struct RunInfo {
    pub setup: Setup,
    pub attack: Duration,
    pub wait: Duration,
    pub client_cpu: Duration,
    pub server_cpu: Option<Duration>,
}

impl Report {
    pub fn new(r: &Recorder, info: RunInfo) -> Self {
        let n = r.requests.max(1) as f64;
        let total = info.attack + info.wait;
        Self {
            setup: info.setup,
            requests: r.requests,
            ok: r.ok,
            success: if r.requests == 0 {
                0.0
            } else {
                r.ok as f64 / n
            },
            sent_rate: r.requests as f64 / info.attack.as_secs_f64().max(1e-9),
            throughput: r.ok as f64 / total.as_secs_f64().max(1e-9),
            duration_ns: total.as_nanos() as u64,
            attack_ns: info.attack.as_nanos() as u64,
            wait_ns: info.wait.as_nanos() as u64,
            latency: latencies(&r.hist),
            bytes_in: r.bytes_in,
            bytes_out: r.bytes_out,
            status_codes: r.codes.clone(),
            latency_by_code: r
                .by_code
                .iter()
                .map(|(k, h)| (k.clone(), latencies(h)))
                .collect(),
            errors: r.errors.iter().cloned().collect(),
            histogram: buckets(r, 10),
            client_cpu_ns_per_request: info.client_cpu.as_nanos() as f64 / n,
            server_cpu_ns_per_request: info.server_cpu.map(|c| c.as_nanos() as f64 / n),
        }
    }

    pub fn mean(&self) -> Duration {
        Duration::from_nanos(self.latency.mean_ns)
    }

    pub fn text(&self) -> String {
        let d = |ns: u64| human(Duration::from_nanos(ns));
        let l = &self.latency;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "Target        {} ({}, {} loop, concurrency {}, {} connection{}{})",
            self.setup.target,
            self.setup.transport,
            self.setup.mode,
            self.setup.concurrency,
            self.setup.connections,
            if self.setup.connections == 1 { "" } else { "s" },
            self.setup
                .rate
                .map(|r| format!(", {r}/s"))
                .unwrap_or_default()
        );
        let _ = writeln!(
            s,
            "Requests      [total, rate, throughput]  {}, {:.2}, {:.2}",
            self.requests, self.sent_rate, self.throughput
        );
        let _ = writeln!(
            s,
            "Duration      [total, attack, wait]      {}, {}, {}",
            d(self.duration_ns),
            d(self.attack_ns),
            d(self.wait_ns)
        );
        let _ = writeln!(
            s,
            "Latencies     [min, mean, 50, 90, 95, 99, 99.9, max]  {}, {}, {}, {}, {}, {}, {}, {}",
            d(l.min_ns),
            d(l.mean_ns),
            d(l.p50_ns),
            d(l.p90_ns),
            d(l.p95_ns),
            d(l.p99_ns),
            d(l.p999_ns),
            d(l.max_ns)
        );
        let per = |b: u64| b as f64 / self.requests.max(1) as f64;
        let _ = writeln!(
            s,
            "Bytes In      [total, mean]              {}, {:.2}",
            self.bytes_in,
            per(self.bytes_in)
        );
        let _ = writeln!(
            s,
            "Bytes Out     [total, mean]              {}, {:.2}",
            self.bytes_out,
            per(self.bytes_out)
        );
        let _ = writeln!(
            s,
            "Success       [ratio]                    {:.2}%",
            self.success * 100.0
        );
        let codes: Vec<String> = self
            .status_codes
            .iter()
            .map(|(k, v)| format!("{k}:{v}"))
            .collect();
        let _ = writeln!(
            s,
            "Status Codes  [code:count]               {}",
            codes.join("  ")
        );
        if self.latency_by_code.len() > 1 {
            for (code, l) in &self.latency_by_code {
                let _ = writeln!(
                    s,
                    "  {code:<11} [mean, 50, 99, max]       {}, {}, {}, {}",
                    d(l.mean_ns),
                    d(l.p50_ns),
                    d(l.p99_ns),
                    d(l.max_ns)
                );
            }
        }
        let cpu = |ns: f64| human(Duration::from_nanos(ns as u64));
        let pids = self
            .setup
            .server_pids
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>();
        let pids = format!(
            "pid{} {}",
            if pids.len() == 1 { "" } else { "s" },
            pids.join(", ")
        );
        let server = match self.server_cpu_ns_per_request {
            Some(ns) => format!("{} ({pids})", cpu(ns)),
            None if self.setup.server_pids.is_empty() => {
                "- (no --server-cpu or --server-pid)".into()
            }
            None => format!("- ({pids} ended during the run)"),
        };
        let _ = writeln!(
            s,
            "CPU/request   [generator, server]        {}, {server}",
            cpu(self.client_cpu_ns_per_request),
        );
        let _ = writeln!(s, "Error Set:");
        for e in &self.errors {
            let _ = writeln!(s, "{e}");
        }
        if !self.histogram.is_empty() {
            let _ = writeln!(s, "\nResponse time histogram:");
            let most = self
                .histogram
                .iter()
                .map(|b| b.count)
                .max()
                .unwrap_or(1)
                .max(1);
            for b in &self.histogram {
                let bar = "∎".repeat((b.count * 40).div_ceil(most) as usize);
                let _ = writeln!(s, "  {:>9} [{}]\t|{bar}", d(b.le_ns), b.count);
            }
        }
        s
    }

    pub fn json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

/// A histogram's summary (all zeros when it is empty).
pub(crate) fn latencies(h: &hdrhistogram::Histogram<u64>) -> Latencies {
    let empty = h.is_empty();
    let q = |p: f64| if empty { 0 } else { h.value_at_quantile(p) };
    Latencies {
        min_ns: if empty { 0 } else { h.min() },
        mean_ns: h.mean() as u64,
        p50_ns: q(0.5),
        p90_ns: q(0.9),
        p95_ns: q(0.95),
        p99_ns: q(0.99),
        p999_ns: q(0.999),
        max_ns: if empty { 0 } else { h.max() },
    }
}

/// One Markdown table, a row per report.
pub fn markdown_table(reports: &[Report]) -> String {
    let d = |ns: u64| human(Duration::from_nanos(ns));
    let mut s = String::from(
        "| target | transport | concurrency | requests | success | throughput/s | mean | p50 | p90 | p99 | p99.9 | max | generator CPU/req | server CPU/req |\n\
         |---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in reports {
        let l = &r.latency;
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {:.2}% | {:.1} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.setup.target,
            r.setup.transport,
            r.setup.concurrency,
            r.requests,
            r.success * 100.0,
            r.throughput,
            d(l.mean_ns),
            d(l.p50_ns),
            d(l.p90_ns),
            d(l.p99_ns),
            d(l.p999_ns),
            d(l.max_ns),
            d(r.client_cpu_ns_per_request as u64),
            r.server_cpu_ns_per_request
                .map_or("-".into(), |c| d(c as u64))
        );
    }
    s
}

/// `n` equal-width buckets from the fastest to the slowest request, as ghz draws them.
fn buckets(r: &Recorder, n: u64) -> Vec<Bucket> {
    buckets_of(&r.hist, n)
}

/// `n` equal-width buckets from the smallest to the largest value of `h`.
pub(crate) fn buckets_of(h: &hdrhistogram::Histogram<u64>, n: u64) -> Vec<Bucket> {
    if h.is_empty() {
        return Vec::new();
    }
    let (lo, hi) = (h.min(), h.max());
    let width = ((hi - lo) / n).max(1);
    let mut out: Vec<Bucket> = (1..=n)
        .map(|i| Bucket {
            le_ns: if i == n { hi } else { (lo + width * i).min(hi) },
            count: 0,
        })
        .collect();
    for v in h.iter_recorded() {
        let at = v.value_iterated_to();
        let i = out
            .iter()
            .position(|b| at <= b.le_ns)
            .unwrap_or(out.len() - 1);
        out[i].count += v.count_at_value();
    }
    // Narrow ranges give repeated bounds: the first of each holds every count.
    out.dedup_by_key(|b| b.le_ns);
    out
}
