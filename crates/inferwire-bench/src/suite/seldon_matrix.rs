//! Seed 000, Seldon's "Python Wrapper Benchmarking" notebook: a no-op model behind the
//! Seldon protocol, predict and predict_raw × REST and gRPC × ndarray / tensor / tftensor
//! × 100,000 and 1 integers, one connection, no rate limit. Printed in the notebook's
//! shape (mean latency per encoding) with the notebook's published figures beside ours.
use std::fmt::Write as _;
use std::time::Duration;

use http::Method;
use inferwire_codec::protocol::seldon::Encoding;
use serde::Serialize;

use crate::duration::human;
use crate::load::{self, Load};
use crate::payload::{notebook_json, seldon_json_to_protobuf, ENCODINGS};
use crate::report::Report;
use crate::target::Target;

/// The notebook's "Example results": mean latency in ms for ndarray, tensor, tftensor
/// (Seldon 1.10 on Kubernetes behind Istio, one CPU for the model).
pub const PUBLISHED_MS: &[(&str, &str, usize, [f64; 3])] = &[
    ("predict", "rest", 100_000, [19.8, 19.7, 16.2]),
    ("predict", "grpc", 100_000, [253.0, 8.4, 5.5]),
    ("predict_raw", "rest", 100_000, [13.3, 13.3, 11.1]),
    ("predict_raw", "grpc", 100_000, [46.0, 7.9, 5.0]),
    ("predict", "rest", 1, [1.8, 1.8, 2.1]),
    ("predict", "grpc", 1, [1.46, 1.49, 1.57]),
];

/// Where one server listens: REST base URL and gRPC address, for the predict model and
/// (optionally) for a second deployment running the predict_raw model, as the notebook
/// deployed two.
#[derive(Debug, Clone)]
pub struct Endpoints {
    pub name: String,
    pub rest: String,
    pub grpc: String,
    pub raw_rest: Option<String>,
    pub raw_grpc: Option<String>,
    /// The server's processes, whose trees' CPU time is measured.
    pub server_pids: Vec<u32>,
    /// The predict_raw server's, when it is another process.
    pub raw_pids: Vec<u32>,
}

#[derive(Debug, Clone)]
pub struct Options {
    pub ours: Endpoints,
    pub vs: Option<Endpoints>,
    pub methods: Vec<String>,
    pub protocols: Vec<String>,
    pub encodings: Vec<Encoding>,
    pub sizes: Vec<usize>,
    pub duration: Duration,
    pub warmup: Duration,
    pub progress: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    pub method: String,
    pub protocol: String,
    pub size: usize,
    pub encoding: String,
    /// One report per server, in the order of `Options` (ours, then --vs).
    pub reports: Vec<Option<Report>>,
    /// Why a server skipped this cell.
    pub skipped: Vec<Option<String>>,
}

/// The REST URL: a base URL gets the Seldon path appended.
fn predictions_url(base: &str) -> String {
    if base.contains("/api/v") {
        base.to_string()
    } else {
        format!("{}/api/v1.0/predictions", base.trim_end_matches('/'))
    }
}

/// The notebook's cells in its order; predict_raw only at 100,000 integers, as there.
fn cells(o: &Options) -> Vec<(String, String, usize, Encoding)> {
    let mut out = Vec::new();
    for &size in &o.sizes {
        for method in &o.methods {
            if method == "predict_raw" && size != 100_000 {
                continue;
            }
            for protocol in &o.protocols {
                for &enc in &o.encodings {
                    out.push((method.clone(), protocol.clone(), size, enc));
                }
            }
        }
    }
    out
}

fn target_for(
    e: &Endpoints,
    method: &str,
    protocol: &str,
    body: &str,
) -> Result<Option<Target>, String> {
    let (rest, grpc) = if method == "predict_raw" {
        match (&e.raw_rest, &e.raw_grpc) {
            (Some(r), Some(g)) => (r.clone(), g.clone()),
            (Some(r), None) if protocol == "rest" => (r.clone(), String::new()),
            (None, Some(g)) if protocol == "grpc" => (String::new(), g.clone()),
            _ => return Ok(None),
        }
    } else {
        (e.rest.clone(), e.grpc.clone())
    };
    Ok(Some(if protocol == "rest" {
        Target::http(
            &predictions_url(&rest),
            Method::POST,
            &[],
            body.to_string().into(),
            false,
        )?
    } else {
        let metadata = [
            ("seldon".to_string(), "seldon-model".to_string()),
            ("namespace".to_string(), "seldon".to_string()),
        ];
        Target::grpc(
            &grpc,
            "/seldon.protos.Seldon/Predict",
            &metadata,
            &seldon_json_to_protobuf(body.as_bytes())?,
        )?
    }))
}

pub fn run(o: &Options) -> Result<Vec<Cell>, String> {
    let servers: Vec<&Endpoints> = std::iter::once(&o.ours).chain(o.vs.as_ref()).collect();
    let mut out = Vec::new();
    for (method, protocol, size, enc) in cells(o) {
        let body = notebook_json(enc, size);
        let mut reports = Vec::new();
        let mut skipped = Vec::new();
        for e in &servers {
            match target_for(e, &method, &protocol, &body)? {
                None => {
                    reports.push(None);
                    skipped.push(Some(format!(
                        "{}: predict_raw needs a server running a predict_raw model (--raw-target / --raw-grpc-target)",
                        e.name
                    )));
                }
                Some(t) => {
                    let load = Load {
                        duration: Some(o.duration),
                        warmup: o.warmup,
                        server_pids: if method == "predict_raw" {
                            e.raw_pids.clone()
                        } else {
                            e.server_pids.clone()
                        },
                        progress: o.progress,
                        ..Load::default()
                    };
                    let r = load::run(&t, &load)?;
                    eprintln!(
                        "{:<10} {method:<11} {protocol:<4} {size:>6} {:<8} n={:<6} mean {:>8}  ok {:.1}%",
                        e.name,
                        enc.name(),
                        r.requests,
                        human(r.mean()),
                        r.success * 100.0
                    );
                    reports.push(Some(r));
                    skipped.push(None);
                }
            }
        }
        out.push(Cell {
            method,
            protocol,
            size,
            encoding: enc.name().to_string(),
            reports,
            skipped,
        });
    }
    Ok(out)
}

fn server_names(o: &Options) -> Vec<&str> {
    std::iter::once(o.ours.name.as_str())
        .chain(o.vs.as_ref().map(|v| v.name.as_str()))
        .collect()
}

/// (method, protocol, size): one of the notebook's tables.
type TableKey = (String, String, usize);

/// The cells grouped as the notebook's tables, in order: a title, the key, and the cells
/// (one per encoding).
fn tables(cells: &[Cell]) -> Vec<(String, TableKey, Vec<&Cell>)> {
    let mut keys: Vec<TableKey> = Vec::new();
    for c in cells {
        let key = (c.method.clone(), c.protocol.clone(), c.size);
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    keys.into_iter()
        .map(|(method, protocol, size)| {
            let row = cells
                .iter()
                .filter(|c| c.method == method && c.protocol == protocol && c.size == size)
                .collect();
            let title = format!(
                "{method} · {} · {} integer{}",
                if protocol == "rest" { "REST" } else { "gRPC" },
                thousands(size),
                if size == 1 { "" } else { "s" }
            );
            (title, (method, protocol, size), row)
        })
        .collect()
}

/// The notebook's tables: one per (method, protocol, size), encodings as columns.
pub fn markdown(o: &Options, cells: &[Cell]) -> String {
    let names = server_names(o);
    let mut s = String::new();
    for (title, (method, protocol, size), row) in tables(cells) {
        let _ = writeln!(s, "\n#### {title}\n");
        let _ = write!(s, "| |");
        for c in &row {
            let _ = write!(s, " {} |", c.encoding);
        }
        let _ = write!(s, "\n|---|");
        for _ in &row {
            let _ = write!(s, "---:|");
        }
        s.push('\n');
        if let Some((_, _, _, ms)) = PUBLISHED_MS
            .iter()
            .find(|p| p.0 == method && p.1 == protocol && p.2 == size)
        {
            let _ = write!(s, "| notebook (published, Seldon 1.10) |");
            for c in &row {
                let i = ENCODINGS
                    .iter()
                    .position(|e| e.name() == c.encoding)
                    .unwrap_or(0);
                let _ = write!(s, " {} |", human(Duration::from_secs_f64(ms[i] / 1e3)));
            }
            s.push('\n');
        }
        let line = |s: &mut String, label: String, f: &dyn Fn(&Report) -> String, k: usize| {
            let _ = write!(s, "| {label} |");
            for c in &row {
                let v = c
                    .reports
                    .get(k)
                    .and_then(Option::as_ref)
                    .map_or("skipped".into(), f);
                let _ = write!(s, " {v} |");
            }
            s.push('\n');
        };
        for (k, name) in names.iter().enumerate() {
            line(
                &mut s,
                format!("{name}: mean latency"),
                &|r| human(r.mean()),
                k,
            );
            line(
                &mut s,
                format!("{name}: server CPU / request"),
                &|r| {
                    r.server_cpu_ns_per_request
                        .map_or("-".into(), |c| human(Duration::from_nanos(c as u64)))
                },
                k,
            );
            line(
                &mut s,
                format!("{name}: generator CPU / request"),
                &|r| human(Duration::from_nanos(r.client_cpu_ns_per_request as u64)),
                k,
            );
            line(
                &mut s,
                format!("{name}: answered OK"),
                &|r| format!("{}/{}", r.ok, r.requests),
                k,
            );
        }
        if names.len() == 2 {
            let _ = write!(s, "| {} / {}, latency |", names[1], names[0]);
            for c in &row {
                let v = match (&c.reports[0], &c.reports[1]) {
                    (Some(a), Some(b)) if a.latency.mean_ns > 0 => {
                        format!(
                            "{:.1}×",
                            b.latency.mean_ns as f64 / a.latency.mean_ns as f64
                        )
                    }
                    _ => "-".into(),
                };
                let _ = write!(s, " {v} |");
            }
            s.push('\n');
        }
        for c in &row {
            for why in c.skipped.iter().flatten() {
                let _ = writeln!(s, "\n{} skipped: {why}", c.encoding);
            }
        }
    }
    s
}

/// The same tables as charts: per (method, protocol, size), the mean latency per
/// encoding for each server beside the published figure, the percentiles, and each
/// cell's histogram.
pub fn html(o: &Options, cells: &[Cell]) -> String {
    let names = server_names(o);
    let mut body = String::from(
        "<p>Seed 000, Seldon's Python wrapper benchmarking notebook: one connection, one \
         request in flight per cell.</p>",
    );
    for (title, (method, protocol, size), row) in tables(cells) {
        let _ = write!(body, "<h2>{title}</h2>");
        let encodings: Vec<String> = row.iter().map(|c| c.encoding.clone()).collect();
        let mut series: Vec<(String, Vec<f64>)> = names
            .iter()
            .enumerate()
            .map(|(k, n)| {
                let v = row
                    .iter()
                    .map(|c| {
                        c.reports
                            .get(k)
                            .and_then(Option::as_ref)
                            .map_or(0.0, |r| r.latency.mean_ns as f64)
                    })
                    .collect();
                (format!("{n} (mean)"), v)
            })
            .collect();
        if let Some((_, _, _, ms)) = PUBLISHED_MS
            .iter()
            .find(|p| p.0 == method && p.1 == protocol && p.2 == size)
        {
            let v = row
                .iter()
                .map(|c| {
                    let i = ENCODINGS
                        .iter()
                        .position(|e| e.name() == c.encoding)
                        .unwrap_or(0);
                    ms[i] * 1e6
                })
                .collect();
            series.push(("notebook, published".into(), v));
        }
        body.push_str(&crate::html::bars(
            &format!("Mean latency per encoding, {title}"),
            &encodings,
            &series,
        ));
        let mut cats = Vec::new();
        let mut pct: Vec<(String, Vec<f64>)> =
            names.iter().map(|n| (n.to_string(), Vec::new())).collect();
        for c in &row {
            for (label, pick) in [("p50", 0usize), ("p90", 1), ("p99", 2)] {
                cats.push(format!("{} {label}", c.encoding));
                for (k, series) in pct.iter_mut().enumerate() {
                    let v = c.reports.get(k).and_then(Option::as_ref).map_or(0.0, |r| {
                        [r.latency.p50_ns, r.latency.p90_ns, r.latency.p99_ns][pick] as f64
                    });
                    series.1.push(v);
                }
            }
        }
        body.push_str(&crate::html::bars(
            &format!("Latency percentiles, {title}"),
            &cats,
            &pct,
        ));
        for c in &row {
            for (k, r) in c.reports.iter().enumerate() {
                if let Some(r) = r {
                    body.push_str(&crate::html::histogram(
                        &format!("{}: {title}, {}", names[k], c.encoding),
                        r,
                    ));
                }
            }
        }
        let mut rows = Vec::new();
        for c in &row {
            for (k, r) in c.reports.iter().enumerate() {
                if let Some(r) = r {
                    rows.push((format!("{} {}", names[k], c.encoding), r));
                }
            }
        }
        body.push_str(&crate::html::table(rows.into_iter()));
    }
    crate::html::page("inferwire bench: seldon-matrix", &body)
}

fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}
