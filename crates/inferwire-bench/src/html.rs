//! Self-contained HTML reports: inline SVG charts and tables, no scripts, no external
//! files, so a report opens offline and can be attached to an issue as one file.
use std::fmt::Write as _;
use std::time::Duration;

use crate::duration::human;
use crate::report::Report;

/// Series colours (colour-blind safe), reused in order.
const COLOURS: [&str; 6] = [
    "#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2",
];

pub(crate) fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

pub(crate) fn ns(v: f64) -> String {
    human(Duration::from_nanos(v.max(0.0) as u64))
}

/// A page with `title` around `body` (sections of charts and tables).
pub fn page(title: &str, body: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width\"><title>{t}</title><style>\
         body{{font:14px system-ui,sans-serif;margin:24px;color:#222;max-width:1100px}}\
         h1{{font-size:22px}}h2{{font-size:17px;margin-top:32px}}\
         figure{{margin:12px 0}}figcaption{{color:#555;font-size:12px}}\
         table{{border-collapse:collapse;margin:8px 0}}td,th{{border:1px solid #ccc;padding:3px 8px;text-align:right}}\
         th:first-child,td:first-child{{text-align:left}}svg text{{font:11px system-ui,sans-serif}}\
         </style></head><body><h1>{t}</h1>\n{body}</body></html>\n",
        t = esc(title)
    )
}

/// Grouped horizontal bars: one group per category, one bar per series (values in ns).
pub fn bars(title: &str, categories: &[String], series: &[(String, Vec<f64>)]) -> String {
    let bar_h = 14.0;
    let group_h = bar_h * series.len().max(1) as f64 + 10.0;
    let (left, width) = (190.0, 900.0);
    let plot_w = width - left - 90.0;
    let height = 30.0 + group_h * categories.len() as f64 + 20.0 * series.len() as f64;
    let max = series
        .iter()
        .flat_map(|(_, v)| v.iter().copied())
        .fold(0.0f64, f64::max)
        .max(1.0);
    let mut s = format!(
        "<figure class=\"chart\" data-chart=\"bars\"><svg xmlns=\"http://www.w3.org/2000/svg\" \
         width=\"{width}\" height=\"{height}\" role=\"img\"><title>{}</title>",
        esc(title)
    );
    for (c, cat) in categories.iter().enumerate() {
        let y0 = 20.0 + c as f64 * group_h;
        let _ = write!(
            s,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
            left - 8.0,
            y0 + group_h / 2.0,
            esc(cat)
        );
        for (k, (_, values)) in series.iter().enumerate() {
            let v = values.get(c).copied().unwrap_or(0.0);
            let w = (v / max * plot_w).max(if v > 0.0 { 1.0 } else { 0.0 });
            let y = y0 + k as f64 * bar_h;
            let _ = write!(
                s,
                "<rect class=\"bar\" x=\"{left}\" y=\"{y}\" width=\"{w:.1}\" height=\"{}\" fill=\"{}\"/>\
                 <text x=\"{:.1}\" y=\"{}\">{}</text>",
                bar_h - 2.0,
                COLOURS[k % COLOURS.len()],
                left + w + 4.0,
                y + bar_h - 4.0,
                ns(v)
            );
        }
    }
    legend(
        &mut s,
        series.iter().map(|(n, _)| n.as_str()),
        height - 14.0 * series.len() as f64,
    );
    s.push_str("</svg>");
    let _ = writeln!(s, "<figcaption>{}</figcaption></figure>", esc(title));
    s
}

fn legend<'a>(s: &mut String, names: impl Iterator<Item = &'a str>, y0: f64) {
    for (k, name) in names.enumerate() {
        let y = y0 + 14.0 * k as f64;
        let _ = write!(
            s,
            "<rect x=\"10\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{}\"/><text x=\"26\" y=\"{}\">{}</text>",
            y - 9.0,
            COLOURS[k % COLOURS.len()],
            y,
            esc(name)
        );
    }
}

/// A report's latency histogram as vertical bars, as ghz prints it.
pub fn histogram(title: &str, r: &Report) -> String {
    histogram_of(
        title,
        &r.histogram,
        "requests per latency bucket (upper bounds)",
    )
}

/// Bucket counts as vertical bars, `what` the counts' caption.
pub fn histogram_of(title: &str, buckets: &[crate::report::Bucket], what: &str) -> String {
    let (width, height, left, bottom) = (560.0, 220.0, 50.0, 40.0);
    let n = buckets.len().max(1) as f64;
    let most = buckets.iter().map(|b| b.count).max().unwrap_or(1).max(1) as f64;
    let slot = (width - left - 10.0) / n;
    let plot_h = height - bottom - 20.0;
    let mut s = format!(
        "<figure class=\"chart\" data-chart=\"histogram\"><svg xmlns=\"http://www.w3.org/2000/svg\" \
         width=\"{width}\" height=\"{height}\" role=\"img\"><title>{}</title>",
        esc(title)
    );
    for (i, b) in buckets.iter().enumerate() {
        let h = (b.count as f64 / most * plot_h).max(if b.count > 0 { 1.0 } else { 0.0 });
        let x = left + i as f64 * slot;
        let _ = write!(
            s,
            "<rect class=\"bar\" x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{h:.1}\" fill=\"{}\"><title>≤ {}: {}</title></rect>\
             <text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            x + 1.0,
            height - bottom - h,
            slot - 2.0,
            COLOURS[0],
            ns(b.le_ns as f64),
            b.count,
            x + slot / 2.0,
            height - bottom + 14.0,
            ns(b.le_ns as f64)
        );
    }
    let _ = writeln!(
        s,
        "<text x=\"{left}\" y=\"12\">{}</text></svg>\
         <figcaption>{}</figcaption></figure>",
        esc(what),
        esc(title)
    );
    s
}

/// A line through (x, y) points per series: throughput against concurrency.
pub fn lines(
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[(String, Vec<(f64, f64)>)],
) -> String {
    let (width, height, left, bottom) = (560.0, 260.0, 60.0, 60.0);
    let pts = series.iter().flat_map(|(_, p)| p.iter());
    let (xmax, ymax) = pts.fold((1.0f64, 1.0f64), |(a, b), &(x, y)| (a.max(x), b.max(y)));
    let px = |x: f64| left + x / xmax * (width - left - 20.0);
    let py = |y: f64| height - bottom - y / ymax * (height - bottom - 20.0);
    let mut s = format!(
        "<figure class=\"chart\" data-chart=\"lines\"><svg xmlns=\"http://www.w3.org/2000/svg\" \
         width=\"{width}\" height=\"{height}\" role=\"img\"><title>{}</title>\
         <line x1=\"{left}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#888\"/>\
         <line x1=\"{left}\" y1=\"20\" x2=\"{left}\" y2=\"{}\" stroke=\"#888\"/>\
         <text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\
         <text x=\"4\" y=\"14\">{} (max {ymax:.0})</text>",
        esc(title),
        height - bottom,
        width - 20.0,
        height - bottom,
        height - bottom,
        (left + width) / 2.0,
        height - bottom + 30.0,
        esc(x_label),
        esc(y_label)
    );
    for (k, (_, p)) in series.iter().enumerate() {
        let colour = COLOURS[k % COLOURS.len()];
        let path: Vec<String> = p
            .iter()
            .map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y)))
            .collect();
        let _ = write!(
            s,
            "<polyline class=\"line\" fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\" points=\"{}\"/>",
            path.join(" ")
        );
        for &(x, y) in p {
            let _ = write!(
                s,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{colour}\"/><text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{x}</text>",
                px(x),
                py(y),
                px(x),
                height - bottom + 14.0
            );
        }
    }
    legend(&mut s, series.iter().map(|(n, _)| n.as_str()), height - 8.0);
    let _ = writeln!(s, "</svg><figcaption>{}</figcaption></figure>", esc(title));
    s
}

/// The runs of one `attack` (one per concurrency value) as a page.
pub fn attack_page(reports: &[Report]) -> String {
    let Some(first) = reports.first() else {
        return page("inferwire bench", "<p>No runs.</p>");
    };
    let mut body = format!(
        "<p>{} · {} · {} loop</p>",
        esc(&first.setup.target),
        esc(&first.setup.transport),
        esc(&first.setup.mode)
    );
    let label = |r: &Report| format!("concurrency {}", r.setup.concurrency);
    let pct = ["min", "p50", "p90", "p95", "p99", "p99.9", "max"];
    let series: Vec<(String, Vec<f64>)> = reports
        .iter()
        .map(|r| {
            let l = &r.latency;
            let v = [
                l.min_ns, l.p50_ns, l.p90_ns, l.p95_ns, l.p99_ns, l.p999_ns, l.max_ns,
            ];
            (label(r), v.iter().map(|&x| x as f64).collect())
        })
        .collect();
    body.push_str("<h2>Latency percentiles</h2>");
    body.push_str(&bars(
        "Latency percentiles per run",
        &pct.iter().map(|p| p.to_string()).collect::<Vec<_>>(),
        &series,
    ));
    if reports.len() > 1 {
        body.push_str("<h2>Throughput against concurrency</h2>");
        let pts = reports
            .iter()
            .map(|r| (r.setup.concurrency as f64, r.throughput))
            .collect();
        body.push_str(&lines(
            "Successful requests per second against requests in flight",
            "requests in flight",
            "requests/s",
            &[(first.setup.target.clone(), pts)],
        ));
    }
    body.push_str("<h2>Latency histograms</h2>");
    for r in reports {
        body.push_str(&histogram(&format!("Latency histogram, {}", label(r)), r));
    }
    body.push_str("<h2>Figures</h2>");
    body.push_str(&table(reports.iter().map(|r| (label(r), r))));
    page("inferwire bench attack", &body)
}

/// A table of reports, one row each.
pub fn table<'a>(rows: impl Iterator<Item = (String, &'a Report)>) -> String {
    let mut s = String::from(
        "<table><tr><th>run</th><th>requests</th><th>success</th><th>throughput/s</th>\
         <th>mean</th><th>p50</th><th>p99</th><th>max</th><th>generator CPU/req</th><th>server CPU/req</th></tr>",
    );
    for (name, r) in rows {
        let l = &r.latency;
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{:.2}%</td><td>{:.1}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&name),
            r.requests,
            r.success * 100.0,
            r.throughput,
            ns(l.mean_ns as f64),
            ns(l.p50_ns as f64),
            ns(l.p99_ns as f64),
            ns(l.max_ns as f64),
            ns(r.client_cpu_ns_per_request),
            r.server_cpu_ns_per_request.map_or("-".into(), ns)
        );
    }
    s.push_str("</table>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_and_bars_scale() {
        let svg = bars(
            "a <b> & c",
            &["x".into(), "y".into()],
            &[("s1".into(), vec![1000.0, 2000.0])],
        );
        assert!(svg.contains("a &lt;b&gt; &amp; c"));
        assert_eq!(svg.matches("class=\"bar\"").count(), 2);
        assert!(
            svg.contains("width=\"620.0\""),
            "the largest bar spans the plot"
        );
    }
}
