//! A stream run's report: streams and how they ended, time to first piece, time between
//! pieces, pieces and bytes per second, stream lengths, and CPU per piece and per
//! stream on both sides. Written as text, JSON (times in ns) or a Markdown row.
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::tally::Tally;
use super::ReplyShape;
use crate::duration::human;
use crate::load::{rate, Load};
use crate::report::{buckets_of, latencies, Bucket, Latencies};

#[derive(Debug, Clone, Serialize)]
pub struct PiecesPerStream {
    pub mean: f64,
    pub min: u64,
    pub max: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct StreamReport {
    pub target: String,
    /// "HTTP/1.1 server-sent events", "gRPC stream, Triton replies", ...
    pub transport: String,
    /// gRPC: how replies were read (`triton` or `mlserver`).
    pub reply: Option<ReplyShape>,
    /// "closed" or "open" (see `load`).
    pub mode: String,
    pub concurrency: usize,
    pub connections: usize,
    pub rate: Option<f64>,
    pub server_pids: Vec<u32>,
    pub streams: u64,
    pub ok: u64,
    pub failed: u64,
    pub success: f64,
    /// Streams started per second of attack.
    pub stream_rate: f64,
    /// Streams that ended well per second, from the first send to the last end.
    pub throughput: f64,
    pub duration_ns: u64,
    pub attack_ns: u64,
    pub wait_ns: u64,
    /// From the send (open loop: from when it was due) to the first piece's arrival,
    /// for every stream that had a piece.
    pub time_to_first_piece: Latencies,
    /// Gaps between consecutive pieces of a stream, every stream's pooled.
    pub time_between_pieces: Latencies,
    /// From the send to the stream's end.
    pub stream_duration: Latencies,
    pub pieces: u64,
    pub pieces_per_stream: PiecesPerStream,
    /// Pieces per second of the whole run.
    pub pieces_per_second: f64,
    /// Payload bytes: SSE event data, or gRPC reply messages.
    pub bytes: u64,
    pub bytes_per_second: f64,
    pub status_codes: BTreeMap<String, u64>,
    pub errors: Vec<String>,
    pub ttft_histogram: Vec<Bucket>,
    pub gap_histogram: Vec<Bucket>,
    pub client_cpu_ns_per_piece: f64,
    pub client_cpu_ns_per_stream: f64,
    pub server_cpu_ns_per_piece: Option<f64>,
    pub server_cpu_ns_per_stream: Option<f64>,
}

pub struct RunInfo<'a> {
    pub target: String,
    pub transport: String,
    pub reply: Option<ReplyShape>,
    pub load: &'a Load,
    pub connections: usize,
    pub start: Instant,
    pub client_cpu: Duration,
    pub server_cpu: Option<Duration>,
}

impl StreamReport {
    pub fn new(t: &Tally, info: RunInfo<'_>) -> Self {
        let last_send = t.last_send.unwrap_or(info.start);
        let last_done = t.last_done.unwrap_or(last_send).max(last_send);
        let attack = last_send.saturating_duration_since(info.start);
        let wait = last_done.saturating_duration_since(last_send);
        let total = (attack + wait).as_secs_f64().max(1e-9);
        let per = |d: Duration, n: u64| d.as_nanos() as f64 / n.max(1) as f64;
        Self {
            target: info.target,
            transport: info.transport,
            reply: info.reply,
            mode: if rate(info.load).is_some() {
                "open"
            } else {
                "closed"
            }
            .into(),
            concurrency: info.load.concurrency.max(1),
            connections: info.connections,
            rate: rate(info.load),
            server_pids: info.load.server_pids.clone(),
            streams: t.streams,
            ok: t.ok,
            failed: t.streams - t.ok,
            success: if t.streams == 0 {
                0.0
            } else {
                t.ok as f64 / t.streams as f64
            },
            stream_rate: t.streams as f64 / attack.as_secs_f64().max(1e-9),
            throughput: t.ok as f64 / total,
            duration_ns: (attack + wait).as_nanos() as u64,
            attack_ns: attack.as_nanos() as u64,
            wait_ns: wait.as_nanos() as u64,
            time_to_first_piece: latencies(&t.ttft),
            time_between_pieces: latencies(&t.gaps),
            stream_duration: latencies(&t.durations),
            pieces: t.pieces,
            pieces_per_stream: PiecesPerStream {
                mean: t.pieces as f64 / t.streams.max(1) as f64,
                min: t.min_pieces.unwrap_or(0),
                max: t.max_pieces,
            },
            pieces_per_second: t.pieces as f64 / total,
            bytes: t.bytes,
            bytes_per_second: t.bytes as f64 / total,
            status_codes: t.codes.clone(),
            errors: t.errors.iter().cloned().collect(),
            ttft_histogram: buckets_of(&t.ttft, 10),
            gap_histogram: buckets_of(&t.gaps, 10),
            client_cpu_ns_per_piece: per(info.client_cpu, t.pieces),
            client_cpu_ns_per_stream: per(info.client_cpu, t.streams),
            server_cpu_ns_per_piece: info.server_cpu.map(|c| per(c, t.pieces)),
            server_cpu_ns_per_stream: info.server_cpu.map(|c| per(c, t.streams)),
        }
    }

    pub fn json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    pub fn text(&self) -> String {
        let d = |ns: u64| human(Duration::from_nanos(ns));
        let mut s = String::new();
        let _ = writeln!(
            s,
            "Target          {} ({}, {} loop, concurrency {}, {} connection{}{})",
            self.target,
            self.transport,
            self.mode,
            self.concurrency,
            self.connections,
            if self.connections == 1 { "" } else { "s" },
            self.rate.map(|r| format!(", {r}/s")).unwrap_or_default()
        );
        let _ = writeln!(
            s,
            "Streams         [total, ok, failed, rate, throughput]  {}, {}, {}, {:.2}, {:.2}",
            self.streams, self.ok, self.failed, self.stream_rate, self.throughput
        );
        let _ = writeln!(
            s,
            "Duration        [total, attack, wait]  {}, {}, {}",
            d(self.duration_ns),
            d(self.attack_ns),
            d(self.wait_ns)
        );
        let spread = |s: &mut String, label: &str, l: &Latencies| {
            let _ = writeln!(
                s,
                "{label:<16}[min, mean, 50, 90, 99, max]  {}, {}, {}, {}, {}, {}",
                d(l.min_ns),
                d(l.mean_ns),
                d(l.p50_ns),
                d(l.p90_ns),
                d(l.p99_ns),
                d(l.max_ns)
            );
        };
        spread(&mut s, "First piece", &self.time_to_first_piece);
        let l = &self.time_between_pieces;
        let _ = writeln!(
            s,
            "Between pieces  [mean, 50, 90, 99, max]  {}, {}, {}, {}, {}",
            d(l.mean_ns),
            d(l.p50_ns),
            d(l.p90_ns),
            d(l.p99_ns),
            d(l.max_ns)
        );
        spread(&mut s, "Stream length", &self.stream_duration);
        let p = &self.pieces_per_stream;
        let _ = writeln!(
            s,
            "Pieces          [total, per stream mean, min, max, rate]  {}, {:.2}, {}, {}, {:.2}/s",
            self.pieces, p.mean, p.min, p.max, self.pieces_per_second
        );
        let _ = writeln!(
            s,
            "Bytes           [total, rate]  {}, {:.0}/s",
            self.bytes, self.bytes_per_second
        );
        let _ = writeln!(s, "Success         [ratio]  {:.2}%", self.success * 100.0);
        let codes: Vec<String> = self
            .status_codes
            .iter()
            .map(|(k, v)| format!("{k}:{v}"))
            .collect();
        let _ = writeln!(s, "Status Codes    [code:count]  {}", codes.join("  "));
        let cpu = |ns: f64| human(Duration::from_nanos(ns as u64));
        let server = |v: Option<f64>| match v {
            Some(ns) => cpu(ns),
            None if self.server_pids.is_empty() => "- (no --server-cpu or --server-pid)".into(),
            None => "- (the server ended during the run)".into(),
        };
        let _ = writeln!(
            s,
            "CPU/piece       [generator, server]  {}, {}",
            cpu(self.client_cpu_ns_per_piece),
            server(self.server_cpu_ns_per_piece)
        );
        let _ = writeln!(
            s,
            "CPU/stream      [generator, server]  {}, {}",
            cpu(self.client_cpu_ns_per_stream),
            server(self.server_cpu_ns_per_stream)
        );
        let _ = writeln!(s, "Error Set:");
        for e in &self.errors {
            let _ = writeln!(s, "{e}");
        }
        if !self.ttft_histogram.is_empty() {
            let _ = writeln!(s, "\nTime to first piece histogram:");
            let most = self
                .ttft_histogram
                .iter()
                .map(|b| b.count)
                .max()
                .unwrap_or(1)
                .max(1);
            for b in &self.ttft_histogram {
                let bar = "∎".repeat((b.count * 40).div_ceil(most) as usize);
                let _ = writeln!(s, "  {:>9} [{}]\t|{bar}", d(b.le_ns), b.count);
            }
        }
        s
    }
}

/// One Markdown table, a row per report.
pub fn markdown_table(reports: &[StreamReport]) -> String {
    let d = |ns: u64| human(Duration::from_nanos(ns));
    let mut s = String::from(
        "| target | transport | concurrency | streams | success | first piece p50 | p90 | p99 | between pieces p50 | p99 | pieces/s | bytes/s | generator CPU/piece | server CPU/piece |\n\
         |---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in reports {
        let (f, g) = (&r.time_to_first_piece, &r.time_between_pieces);
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {:.2}% | {} | {} | {} | {} | {} | {:.1} | {:.0} | {} | {} |",
            r.target,
            r.transport,
            r.concurrency,
            r.streams,
            r.success * 100.0,
            d(f.p50_ns),
            d(f.p90_ns),
            d(f.p99_ns),
            d(g.p50_ns),
            d(g.p99_ns),
            r.pieces_per_second,
            r.bytes_per_second,
            d(r.client_cpu_ns_per_piece as u64),
            r.server_cpu_ns_per_piece
                .map_or("-".into(), |c| d(c as u64))
        );
    }
    s
}
