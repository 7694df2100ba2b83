//! Seed 002, ML Server's "realtime" web service: a decision tree scored on a data frame of
//! 1,000 rows per request (`{"Number": [...], "Start": [...]}`), many clients at once, with
//! a bearer token; predictions/s (requests/s × rows) is the headline.
//!
//! On inferwire: `inferwire serve tree.joblib` (the native tree runtime) takes the data
//! frame as a plain JSON object on its predict route. `--path` names another route,
//! `--token` adds `Authorization: Bearer ...`.
use std::fmt::Write as _;

use bytes::Bytes;
use http::Method;

use super::cells::{self, Measured, Options, Server};
use crate::target::Target;

/// The seed: 1,505 requests/s of 1,000 rows on 32 cores (JMeter, 1,000 threads).
pub const PUBLISHED_REQUESTS: f64 = 1505.0;
pub const ROWS: usize = 1000;
pub const CLIENTS: usize = 100;

pub struct Request {
    pub path: String,
    pub columns: Vec<String>,
    pub rows: usize,
    pub token: Option<String>,
}

/// The data frame: each column a list of `rows` small integers, the same every run.
pub fn body(columns: &[String], rows: usize) -> Vec<u8> {
    let mut out = String::from("{");
    for (c, name) in columns.iter().enumerate() {
        if c > 0 {
            out.push(',');
        }
        let _ = write!(out, "{}:[", serde_json::Value::from(name.as_str()));
        let noise = cells::noise(rows, c as u64 + 7);
        for (r, b) in noise.iter().enumerate() {
            if r > 0 {
                out.push(',');
            }
            let _ = write!(out, "{}", 1 + u32::from(*b) % 18);
        }
        out.push(']');
    }
    out.push('}');
    out.into_bytes()
}

pub fn targets(server: &Server, req: &Request) -> Result<Vec<(String, Target)>, String> {
    let url = format!(
        "{}/{}",
        server.rest.trim_end_matches('/'),
        req.path.trim_start_matches('/')
    );
    let mut headers = vec![("Content-Type".to_string(), "application/json".to_string())];
    if let Some(t) = &req.token {
        headers.push(("Authorization".to_string(), format!("Bearer {t}")));
    }
    let body = Bytes::from(body(&req.columns, req.rows));
    let t = Target::http(&url, Method::POST, &headers, body, false)?;
    Ok(vec![(format!("{} rows", req.rows), t)])
}

pub fn run(o: &Options, req: &Request) -> Result<Vec<Measured>, String> {
    cells::run(o, |s| targets(s, req))
}

pub fn markdown(o: &Options, req: &Request, measured: &[Measured]) -> String {
    let mut out = format!(
        "{} rows per request ({}), {} clients{}\n\n\
         | server | requests/s | predictions/s | p50 | p99 | server CPU/request | OK |\n\
         |---|---|---|---|---|---|---|\n",
        req.rows,
        req.columns.join(", "),
        o.clients,
        if req.token.is_some() {
            ", bearer token"
        } else {
            ""
        }
    );
    for m in measured {
        for (s, r) in o.servers.iter().zip(&m.reports) {
            let human = |ns: u64| crate::duration::human(std::time::Duration::from_nanos(ns));
            let cpu = r
                .server_cpu_ns_per_request
                .map_or("-".into(), |ns| human(ns as u64));
            let _ = writeln!(
                out,
                "| {} | {:.0} | {:.0} | {} | {} | {cpu} | {:.1}% |",
                s.name,
                r.throughput,
                r.throughput * req.rows as f64,
                human(r.latency.p50_ns),
                human(r.latency.p99_ns),
                r.success * 100.0
            );
        }
    }
    let _ = writeln!(
        out,
        "| seed (ML Server, 32 cores) | {PUBLISHED_REQUESTS:.0} | {:.0} | - | - | - | - |",
        PUBLISHED_REQUESTS * ROWS as f64
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_is_a_data_frame() {
        let b = body(&["Number".into(), "Start".into()], 5);
        let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
        assert_eq!(v["Number"].as_array().unwrap().len(), 5);
        assert!(v["Start"]
            .as_array()
            .unwrap()
            .iter()
            .all(|x| x.as_u64().unwrap() >= 1));
        assert_eq!(b, body(&["Number".into(), "Start".into()], 5));
    }
}
