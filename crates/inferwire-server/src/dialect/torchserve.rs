//! TorchServe's answers (`inferwire torchserve`): its words for a model or version it
//! does not have, and its frontend's metrics first on the metrics page, named, typed,
//! helped and written as TorchServe 0.12 exports them in `metrics_mode=prometheus`
//! (`ts/configs/metrics.yaml`; frontend `MetricCache`, `PrometheusCounter`/`Gauge` on
//! Prometheus simpleclient 0.9: labels with a trailing comma, values as Java doubles).
//! The handlers' own metrics (`context.metrics`) follow inferwire's, from the Python side.
//! Its routes and error shape are `rest::torchserve`'s.
use std::fmt::Write;
use std::sync::OnceLock;

use super::{Absent, Dialect, Missing};
use crate::error::{Kind, ServeError};
use crate::metrics::host::HostUse;
use crate::metrics::{label_value, Metrics, ModelSeries};

/// The BYTES input a TorchServe request's body travels in to the model, and the output
/// its reply comes back in (REST and gRPC alike).
pub const BODY: &str = "body";

#[derive(Debug, Clone, Copy, Default)]
pub struct TorchServe;

impl Dialect for TorchServe {
    fn name(&self) -> &'static str {
        "torchserve"
    }

    fn not_found(&self, e: ServeError, missing: &Missing<'_>) -> ServeError {
        if e.kind != Kind::NotFound {
            return e;
        }
        let message = match missing.absent {
            Absent::Version => format!(
                "Model version: {} does not exist for model: {}",
                missing.version, missing.name
            ),
            Absent::Model | Absent::NotLoaded => format!("Model not found: {}", missing.name),
        };
        ServeError::new(Kind::NotFound, message)
    }

    fn metrics_text(&self, models: &[ModelSeries], metrics: &Metrics) -> Option<String> {
        Some(render(
            models,
            metrics.http_replies(),
            crate::metrics::host::sample(),
            hostname(),
        ))
    }
}

/// A per-model counter's value.
type Value = fn(&ModelSeries) -> f64;

/// The per-model counters (`model_name`, `model_version`, `hostname`), in metrics.yaml's
/// order. TorchServe counts a request on arrival and its latencies when it is answered
/// well (`RestJob.response`; `sendError` records none): here the requests are those the
/// model answered, and the latencies the successful ones', from reaching the model's
/// queue (its `begin`) to the answer, and to the model call (its `scheduled`).
const MODEL_COUNTERS: [(&str, &str, Value); 3] = [
    ("ts_inference_requests_total", "Count", |m| {
        (m.stats.success.0 + m.stats.fail.0) as f64
    }),
    ("ts_inference_latency_microseconds", "Microseconds", |m| {
        m.stats.success.1 as f64 / 1000.0
    }),
    ("ts_queue_latency_microseconds", "Microseconds", |m| {
        m.stats.queue_ns as f64 / 1000.0
    }),
];

/// TorchServe's frontend series: the request classes, the per-model counters, and the
/// host's CPU and memory (its system metrics; TorchServe samples them each minute, here
/// at each scrape). A family is written with no series until it has one, as TorchServe
/// registers every family of its configuration at start.
fn render(models: &[ModelSeries], replies: [u64; 3], host: HostUse, hostname: &str) -> String {
    let mut out = String::with_capacity(2048);
    let host_labels = format!("Level=\"Host\",Hostname=\"{}\",", label_value(hostname));
    for (name, n) in ["Requests2XX", "Requests4XX", "Requests5XX"]
        .into_iter()
        .zip(replies)
    {
        family(&mut out, name, "counter", "Count");
        if n > 0 {
            let _ = writeln!(out, "{name}{{{host_labels}}} {}", java_double(n as f64));
        }
    }
    for (name, unit, value) in MODEL_COUNTERS {
        family(&mut out, name, "counter", unit);
        for m in models {
            let _ = writeln!(
                out,
                "{name}{{model_name=\"{}\",model_version=\"{}\",hostname=\"{}\",}} {}",
                label_value(&m.name),
                label_value(model_version(m, models)),
                label_value(hostname),
                java_double(value(m))
            );
        }
    }
    const MB: f64 = 1024.0 * 1024.0;
    let total = host.memory_total_bytes as f64;
    let used = host.memory_used_bytes as f64;
    let gauges = [
        ("CPUUtilization", "Percent", host.cpu_utilization * 100.0),
        ("MemoryUsed", "Megabytes", used / MB),
        ("MemoryAvailable", "Megabytes", (total - used) / MB),
        (
            "MemoryUtilization",
            "Percent",
            if total > 0.0 {
                used / total * 100.0
            } else {
                0.0
            },
        ),
    ];
    for (name, unit, value) in gauges {
        family(&mut out, name, "gauge", unit);
        if total > 0.0 {
            let _ = writeln!(out, "{name}{{{host_labels}}} {}", java_double(value));
        }
    }
    out
}

/// TorchServe labels a request `default` when its path names no version: a model served
/// at one version is `default`; where several versions are loaded, each has its own.
fn model_version<'a>(m: &'a ModelSeries, models: &[ModelSeries]) -> &'a str {
    if models.iter().filter(|o| o.name == m.name).count() > 1 {
        &m.version
    } else {
        "default"
    }
}

/// A family's header as simpleclient writes TorchServe's: `Torchserve prometheus <type>
/// metric with unit: <unit>`.
fn family(out: &mut String, name: &str, kind: &str, unit: &str) {
    let _ = write!(
        out,
        "# HELP {name} Torchserve prometheus {kind} metric with unit: {unit}\n\
         # TYPE {name} {kind}\n"
    );
}

/// A value as Java's `Double.toString` writes it (simpleclient's `doubleToGoString`):
/// `3.0`, `290371.129`, `1.2345678E7`, `1.0E-4`.
fn java_double(v: f64) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "+Inf" } else { "-Inf" }.into();
    }
    let a = v.abs();
    if a == 0.0 || (1e-3..1e7).contains(&a) {
        // Shortest round trip, with ".0" on a whole number, as Java's.
        return format!("{v:?}");
    }
    let s = format!("{v:E}");
    match s.split_once('E') {
        Some((mantissa, exp)) if !mantissa.contains('.') => format!("{mantissa}.0E{exp}"),
        _ => s,
    }
}

/// The host's name, as TorchServe's `hostname` and `Hostname` labels carry it (and the
/// Python side's handler metrics: `socket.gethostname()`).
fn hostname() -> &'static str {
    static NAME: OnceLock<String> = OnceLock::new();
    NAME.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/kernel/hostname")
            .ok()
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .or_else(|| std::env::var("HOSTNAME").ok())
            .unwrap_or_else(|| "localhost".into())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::stats::Snapshot;

    fn series(name: &str, version: &str, success: (u64, u64), fail: u64) -> ModelSeries {
        ModelSeries {
            name: name.into(),
            version: version.into(),
            stats: Snapshot {
                success,
                fail: (fail, 0),
                executions: success.0,
                compute: (success.0, success.1 / 2),
                queue_ns: success.1 / 2,
                last_inference_ms: 1,
            },
            failures: [0, 0, fail, 0],
            pending: 0,
        }
    }

    #[test]
    fn metrics_as_torchserve_exports_them() {
        let host = HostUse {
            cpu_utilization: 0.25,
            memory_total_bytes: 8 << 30,
            memory_used_bytes: 2 << 30,
        };
        let models = [
            series("echo", "1.0", (3, 290_371_129), 1),
            series("mnist", "1.0", (0, 0), 0),
            series("mnist", "2.0", (20, 40_000_000_000), 0),
        ];
        let text = render(&models, [8, 1, 0], host, "h\"1");
        for line in [
            "# HELP Requests2XX Torchserve prometheus counter metric with unit: Count\n\
             # TYPE Requests2XX counter\n\
             Requests2XX{Level=\"Host\",Hostname=\"h\\\"1\",} 8.0\n",
            "Requests4XX{Level=\"Host\",Hostname=\"h\\\"1\",} 1.0\n",
            // No 5XX yet: the family alone.
            "# TYPE Requests5XX counter\n# HELP ts_inference_requests_total",
            "# HELP ts_inference_requests_total Torchserve prometheus counter metric with \
             unit: Count\n# TYPE ts_inference_requests_total counter\n\
             ts_inference_requests_total{model_name=\"echo\",model_version=\"default\",\
             hostname=\"h\\\"1\",} 4.0\n",
            "ts_inference_requests_total{model_name=\"mnist\",model_version=\"2.0\",\
             hostname=\"h\\\"1\",} 20.0\n",
            "# HELP ts_inference_latency_microseconds Torchserve prometheus counter metric \
             with unit: Microseconds\n",
            "ts_inference_latency_microseconds{model_name=\"echo\",model_version=\"default\",\
             hostname=\"h\\\"1\",} 290371.129\n",
            "ts_inference_latency_microseconds{model_name=\"mnist\",model_version=\"2.0\",\
             hostname=\"h\\\"1\",} 4.0E7\n",
            "ts_queue_latency_microseconds{model_name=\"mnist\",model_version=\"1.0\",\
             hostname=\"h\\\"1\",} 0.0\n",
            "# HELP CPUUtilization Torchserve prometheus gauge metric with unit: Percent\n\
             # TYPE CPUUtilization gauge\nCPUUtilization{Level=\"Host\",Hostname=\"h\\\"1\",} 25.0\n",
            "MemoryUsed{Level=\"Host\",Hostname=\"h\\\"1\",} 2048.0\n",
            "MemoryAvailable{Level=\"Host\",Hostname=\"h\\\"1\",} 6144.0\n",
            "MemoryUtilization{Level=\"Host\",Hostname=\"h\\\"1\",} 25.0\n",
        ] {
            assert!(text.contains(line), "{line}\n---\n{text}");
        }
        // No model, no host figures: every family, no series.
        let none = render(&[], [0; 3], HostUse::default(), "h");
        assert_eq!(
            none.lines().filter(|l| !l.starts_with('#')).count(),
            0,
            "{none}"
        );
        assert_eq!(none.matches("# TYPE ").count(), 10, "{none}");
    }

    #[test]
    fn values_are_java_doubles() {
        for (v, text) in [
            (0.0, "0.0"),
            (3.0, "3.0"),
            (365.21, "365.21"),
            (9_999_999.5, "9999999.5"),
            (1e7, "1.0E7"),
            (12_345_678.0, "1.2345678E7"),
            (0.0001, "1.0E-4"),
            (f64::NAN, "NaN"),
            (f64::INFINITY, "+Inf"),
        ] {
            assert_eq!(java_double(v), text);
        }
    }
}
