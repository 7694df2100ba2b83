//! A stream run's HTML page: time to first piece and time between pieces as percentile
//! bars per run, pieces per second against concurrency, histograms, and a table; the
//! same self-contained SVG charts as `attack`'s page (`html`).
use std::fmt::Write as _;

use super::report::StreamReport;
use crate::html::{bars, esc, histogram_of, lines, ns, page};
use crate::report::Latencies;

fn percentiles(l: &Latencies) -> Vec<f64> {
    [l.min_ns, l.p50_ns, l.p90_ns, l.p99_ns, l.max_ns]
        .iter()
        .map(|&x| x as f64)
        .collect()
}

/// The runs of one `stream` command (one per concurrency value) as a page.
pub fn stream_page(reports: &[StreamReport]) -> String {
    let Some(first) = reports.first() else {
        return page("inferwire bench stream", "<p>No runs.</p>");
    };
    let mut body = format!(
        "<p>{} · {} · {} loop</p>",
        esc(&first.target),
        esc(&first.transport),
        esc(&first.mode)
    );
    let label = |r: &StreamReport| format!("concurrency {}", r.concurrency);
    let pct: Vec<String> = ["min", "p50", "p90", "p99", "max"]
        .iter()
        .map(|p| p.to_string())
        .collect();
    let series = |f: fn(&StreamReport) -> &Latencies| -> Vec<(String, Vec<f64>)> {
        reports
            .iter()
            .map(|r| (label(r), percentiles(f(r))))
            .collect()
    };
    body.push_str("<h2>Time to first piece</h2>");
    body.push_str(&bars(
        "Time to first piece, percentiles per run",
        &pct,
        &series(|r| &r.time_to_first_piece),
    ));
    body.push_str("<h2>Time between pieces</h2>");
    body.push_str(&bars(
        "Time between consecutive pieces of a stream, percentiles per run",
        &pct,
        &series(|r| &r.time_between_pieces),
    ));
    if reports.len() > 1 {
        body.push_str("<h2>Pieces per second against concurrency</h2>");
        let pts = reports
            .iter()
            .map(|r| (r.concurrency as f64, r.pieces_per_second))
            .collect();
        body.push_str(&lines(
            "Pieces per second against streams open at once",
            "streams open",
            "pieces/s",
            &[(first.target.clone(), pts)],
        ));
    }
    body.push_str("<h2>Histograms</h2>");
    for r in reports {
        body.push_str(&histogram_of(
            &format!("Time to first piece, {}", label(r)),
            &r.ttft_histogram,
            "streams per bucket (upper bounds)",
        ));
        body.push_str(&histogram_of(
            &format!("Time between pieces, {}", label(r)),
            &r.gap_histogram,
            "gaps per bucket (upper bounds)",
        ));
    }
    body.push_str("<h2>Figures</h2>");
    body.push_str(
        "<table><tr><th>run</th><th>streams</th><th>success</th><th>first piece p50</th>\
         <th>p99</th><th>between pieces p50</th><th>p99</th><th>pieces/stream</th>\
         <th>pieces/s</th><th>bytes/s</th><th>generator CPU/piece</th><th>server CPU/piece</th></tr>",
    );
    for r in reports {
        let (f, g) = (&r.time_to_first_piece, &r.time_between_pieces);
        let _ = write!(
            body,
            "<tr><td>{}</td><td>{}</td><td>{:.2}%</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td>{:.2}</td><td>{:.1}</td><td>{:.0}</td><td>{}</td><td>{}</td></tr>",
            esc(&label(r)),
            r.streams,
            r.success * 100.0,
            ns(f.p50_ns as f64),
            ns(f.p99_ns as f64),
            ns(g.p50_ns as f64),
            ns(g.p99_ns as f64),
            r.pieces_per_stream.mean,
            r.pieces_per_second,
            r.bytes_per_second,
            ns(r.client_cpu_ns_per_piece),
            r.server_cpu_ns_per_piece.map_or("-".into(), ns)
        );
    }
    body.push_str("</table>\n");
    page("inferwire bench stream", &body)
}
