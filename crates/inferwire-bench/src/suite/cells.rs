//! What the image and numpy-echo suites share: a grid of named requests, each sent to
//! every server with the same closed-loop load, one after another.
use std::time::Duration;

use serde::Serialize;

use crate::load::{self, Load};
use crate::report::Report;
use crate::target::Target;

/// Where one server listens.
#[derive(Debug, Clone)]
pub struct Server {
    pub name: String,
    /// REST base URL, `http://host:port`.
    pub rest: String,
    /// gRPC address, `host:port`.
    pub grpc: String,
    /// The server's processes, whose trees' CPU time is measured.
    pub pids: Vec<u32>,
}

pub struct Options {
    pub servers: Vec<Server>,
    /// Requests in flight.
    pub clients: usize,
    pub duration: Duration,
    pub warmup: Duration,
    pub progress: bool,
}

/// One cell measured on every server.
#[derive(Serialize)]
pub struct Measured {
    pub key: String,
    /// One per server, in `Options::servers` order.
    pub reports: Vec<Report>,
}

/// Runs every cell `targets` builds for a server (the same keys for every server).
pub fn run(
    o: &Options,
    targets: impl Fn(&Server) -> Result<Vec<(String, Target)>, String>,
) -> Result<Vec<Measured>, String> {
    let mut out: Vec<Measured> = Vec::new();
    for (s, server) in o.servers.iter().enumerate() {
        for (i, (key, target)) in targets(server)?.into_iter().enumerate() {
            let load = Load {
                concurrency: o.clients,
                duration: Some(o.duration),
                warmup: o.warmup,
                server_pids: server.pids.clone(),
                progress: o.progress,
                ..Load::default()
            };
            let r = load::run(&target, &load)?;
            if r.ok == 0 {
                return Err(format!(
                    "{} {key}: no request succeeded ({:?} {:?})",
                    server.name,
                    r.status_codes,
                    r.errors.first()
                ));
            }
            eprintln!(
                "{:<12} {key:<28} {:>10.0} req/s  ok {:.1}%",
                server.name,
                r.throughput,
                r.success * 100.0
            );
            if s == 0 {
                out.push(Measured {
                    key,
                    reports: vec![r],
                });
            } else if let Some(m) = out.get_mut(i) {
                m.reports.push(r);
            }
        }
    }
    Ok(out)
}

/// `value (cpu)` for a table cell: `per_request` turns a report into the figure shown.
pub fn figure(r: &Report, per_request: impl Fn(&Report) -> f64, digits: usize) -> String {
    let cpu = r.server_cpu_ns_per_request.map_or(String::new(), |ns| {
        format!(
            " ({})",
            crate::duration::human(Duration::from_nanos(ns as u64))
        )
    });
    let failed = if r.success < 1.0 {
        format!(" [{:.1}% ok]", r.success * 100.0)
    } else {
        String::new()
    };
    format!("{:.digits$}{cpu}{failed}", per_request(r))
}

/// A deterministic byte stream (xorshift64*), for payloads that must not compress.
pub fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.max(1);
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        out.extend_from_slice(&x.wrapping_mul(0x2545_f491_4f6c_dd1d).to_le_bytes());
    }
    out.truncate(len);
    out
}

/// The report page for a grid suite: mean latency per cell and server, the table of every
/// report, and each report's latency histogram.
pub fn html(title: &str, intro: &str, o: &Options, measured: &[Measured]) -> String {
    use std::fmt::Write as _;

    let mut body = format!("<p>{intro}</p>");
    let categories: Vec<String> = measured.iter().map(|m| m.key.replace('|', " · ")).collect();
    let series: Vec<(String, Vec<f64>)> = o
        .servers
        .iter()
        .enumerate()
        .map(|(k, s)| {
            let means = measured
                .iter()
                .map(|m| m.reports.get(k).map_or(0.0, |r| r.latency.mean_ns as f64))
                .collect();
            (format!("{} (mean)", s.name), means)
        })
        .collect();
    body.push_str(&crate::html::bars(
        "Mean latency per cell",
        &categories,
        &series,
    ));
    let rows = measured.iter().flat_map(|m| {
        o.servers
            .iter()
            .zip(&m.reports)
            .map(move |(s, r)| (format!("{} · {}", m.key.replace('|', " · "), s.name), r))
    });
    body.push_str(&crate::html::table(rows));
    for m in measured {
        for (s, r) in o.servers.iter().zip(&m.reports) {
            let title = format!("{} · {}", m.key.replace('|', " · "), s.name);
            let _ = write!(body, "{}", crate::html::histogram(&title, r));
        }
    }
    crate::html::page(title, &body)
}
