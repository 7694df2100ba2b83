//! Seed 004, Ray Serve's microbenchmark: a no-op backend, "small data", one client and 8
//! clients, requests/s, for each of six server configurations (max batch size, max
//! concurrent queries, replicas). A suite measures the servers as they are configured:
//! `--config` says which of the seed's rows the target was started as (for inferwire:
//! replicas → `--workers`, max concurrent queries → `--max-concurrency`), and the table
//! prints the seed's figure for that row beside ours. `benchmarks/runtime.py` restarts
//! inferwire and Ray Serve in each configuration and runs all six rows.
use std::fmt::Write as _;
use std::time::Duration;

use http::Method;
use serde::Serialize;

use crate::load::{self, Load};
use crate::report::Report;
use crate::target::Target;

/// One of the seed's configurations: (max batch size, max concurrent queries, replicas).
pub type Config = (u32, u32, u32);

/// The seed's rows: a configuration and its requests/s with one client and with 8 (Ray
/// 1.x).
pub const PUBLISHED: &[(Config, [f64; 2])] = &[
    ((1, 1, 1), [629.38, 888.99]),
    ((1, 10000, 1), [610.65, 1856.55]),
    ((10000, 10000, 1), [602.93, 1723.73]),
    ((1, 1, 8), [492.09, 1662.08]),
    ((1, 10000, 8), [459.71, 1860.39]),
    ((10000, 10000, 8), [487.65, 1917.84]),
];

/// The clients of the seed's two columns.
pub const CLIENTS: [usize; 2] = [1, 8];

/// The small request: a Seldon message with one number, sent as a GET with the message in
/// the `json` query parameter (Ray's benchmark sends a GET without a body).
const SMALL_QUERY: &str = "json=%7B%22data%22%3A%7B%22ndarray%22%3A%5B%5B1%5D%5D%7D%7D";

pub struct Server {
    pub name: String,
    /// A base URL (`http://host:port`: the Seldon predictions route with the small
    /// message) or a full URL to GET as it is (e.g. Ray's `/noop`).
    pub url: String,
    /// The server's processes, whose trees' CPU time is measured.
    pub pids: Vec<u32>,
}

pub struct Options {
    pub servers: Vec<Server>,
    /// Which of the seed's rows the servers run as.
    pub config: Option<Config>,
    pub duration: Duration,
    pub warmup: Duration,
    pub progress: bool,
}

#[derive(Serialize)]
pub struct Row {
    pub clients: usize,
    /// One report per server, in the order of `Options::servers`.
    pub reports: Vec<Report>,
}

/// The URL a server is called with.
pub fn url_for(server: &Server) -> String {
    let rest = server.url.trim_end_matches('/');
    let has_path = rest
        .trim_start_matches("http://")
        .split_once('/')
        .is_some_and(|(_, p)| !p.is_empty());
    if has_path {
        rest.to_string()
    } else {
        format!("{rest}/api/v1.0/predictions?{SMALL_QUERY}")
    }
}

pub fn parse_config(s: &str) -> Result<Config, String> {
    let parts: Vec<u32> = s
        .split('/')
        .map(|p| p.trim().parse::<u32>())
        .collect::<Result<_, _>>()
        .map_err(|_| {
            format!("--config {s:?}: expected BATCH/CONCURRENT/REPLICAS, e.g. 1/10000/8")
        })?;
    match parts[..] {
        [b, c, r] => Ok((b, c, r)),
        _ => Err(format!(
            "--config {s:?}: expected BATCH/CONCURRENT/REPLICAS, e.g. 1/10000/8"
        )),
    }
}

pub fn run(o: &Options) -> Result<Vec<Row>, String> {
    let mut rows = Vec::new();
    for clients in CLIENTS {
        let mut reports = Vec::new();
        for server in &o.servers {
            let target = Target::http(
                &url_for(server),
                Method::GET,
                &[],
                Default::default(),
                false,
            )?;
            let load = Load {
                concurrency: clients,
                duration: Some(o.duration),
                warmup: o.warmup,
                server_pids: server.pids.clone(),
                progress: o.progress,
                ..Load::default()
            };
            let r = load::run(&target, &load)?;
            eprintln!(
                "{:<10} {clients} client{} {:>10.0} req/s  ok {:.1}%",
                server.name,
                if clients == 1 { " " } else { "s" },
                r.throughput,
                r.success * 100.0
            );
            reports.push(r);
        }
        rows.push(Row { clients, reports });
    }
    Ok(rows)
}

fn seed_label(clients: usize) -> &'static str {
    if clients == 1 {
        "single client small data"
    } else {
        "8 clients small data"
    }
}

/// The seed's shape: the configuration, then one line per client count, with the seed's
/// figure for that configuration beside ours.
pub fn markdown(o: &Options, rows: &[Row]) -> String {
    let mut out = String::new();
    let config = o.config.map_or_else(
        || "(configuration not given: --config BATCH/CONCURRENT/REPLICAS)".to_string(),
        |(b, c, r)| {
            format!("{{'max_batch_size': {b}, 'max_concurrent_queries': {c}, 'num_replicas': {r}}}")
        },
    );
    let published = o
        .config
        .and_then(|c| PUBLISHED.iter().find(|(k, _)| *k == c))
        .map(|(_, v)| *v);
    let _ = writeln!(out, "{config}:\n");
    let mut header = "| | ".to_string();
    for s in &o.servers {
        let _ = write!(header, "{} req/s | p50 | server CPU/req | ", s.name);
    }
    if o.servers.len() == 2 {
        header.push_str("ratio | ");
    }
    header.push_str("seed (Ray Serve) req/s |");
    let _ = writeln!(out, "{header}");
    let cols = 1 + 3 * o.servers.len() + usize::from(o.servers.len() == 2) + 1;
    let _ = writeln!(out, "|{}", "---|".repeat(cols));
    for (i, row) in rows.iter().enumerate() {
        let mut line = format!("| {} | ", seed_label(row.clients));
        for r in &row.reports {
            let cpu = r
                .server_cpu_ns_per_request
                .map_or("-".to_string(), |ns| format!("{:.0} µs", ns / 1e3));
            let _ = write!(
                line,
                "{:.0} | {} | {cpu} | ",
                r.throughput,
                crate::duration::human(Duration::from_nanos(r.latency.p50_ns))
            );
        }
        if let [a, b] = &row.reports[..] {
            let _ = write!(line, "{:.1}× | ", a.throughput / b.throughput.max(1e-9));
        }
        let seed = published.map_or("-".to_string(), |p| format!("{:.2}", p[i]));
        let _ = writeln!(line, "{seed} |");
        out.push_str(&line);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_configs() {
        let s = |url: &str| Server {
            name: "x".into(),
            url: url.into(),
            pids: Vec::new(),
        };
        assert!(url_for(&s("http://127.0.0.1:9000")).ends_with(
            "/api/v1.0/predictions?json=%7B%22data%22%3A%7B%22ndarray%22%3A%5B%5B1%5D%5D%7D%7D"
        ));
        assert_eq!(
            url_for(&s("http://127.0.0.1:8000/noop")),
            "http://127.0.0.1:8000/noop"
        );
        assert_eq!(parse_config("1/10000/8"), Ok((1, 10000, 8)));
        assert!(parse_config("1/2").is_err());
    }
}
