//! Metrics a model reports (Seldon's `metrics()`), in a fixed-size open-addressing table
//! in the shared region. A series (`name{labels}`) takes a slot the first time it is
//! seen and keeps it; a full table drops new series with one warning.
use std::fmt::Write;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering};

use inferwire_codec::protocol::seldon::{Metric, MetricType};

use super::{label_value, Durations, SECONDS};

const SLOTS: usize = 256;
/// Bytes for `name` + `labels` of one series.
const TEXT: usize = 248;

const EMPTY: u32 = 0;
const WRITING: u32 = 1;
const READY: u32 = 2;

#[repr(C)]
struct Slot {
    state: AtomicU32,
    kind: AtomicU32,
    name_len: AtomicU32,
    text_len: AtomicU32,
    text: [AtomicU8; TEXT],
    /// COUNTER and GAUGE: the value, as `f64` bits.
    value: AtomicU64,
    /// TIMER: observations in seconds (sum in nanoseconds).
    timer: Durations,
}

#[repr(C)]
pub(super) struct CustomTable {
    slots: [Slot; SLOTS],
    warned_full: AtomicU32,
    // Once per server: a model that sends such a metric with every reply would otherwise
    // write a line per request.
    warned_long: AtomicU32,
}

/// A Prometheus metric name from a model's key: other characters become `_`.
fn metric_name(key: &str) -> String {
    let mut name: String = key
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == ':' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        name.insert(0, '_');
    }
    name
}

fn kind_code(kind: MetricType) -> u32 {
    match kind {
        MetricType::Counter => 1,
        MetricType::Gauge => 2,
        MetricType::Timer => 3,
    }
}

impl Slot {
    fn text(&self) -> Vec<u8> {
        let n = (self.text_len.load(Ordering::Acquire) as usize).min(TEXT);
        self.text[..n]
            .iter()
            .map(|b| b.load(Ordering::Relaxed))
            .collect()
    }
}

impl CustomTable {
    pub(super) fn record(&self, metric: &Metric) {
        let mut name = metric_name(&metric.key);
        // Prometheus names counters `*_total`, as the Seldon wrapper's client library does.
        if metric.kind == MetricType::Counter && !name.ends_with("_total") {
            name.push_str("_total");
        }
        let mut labels = String::new();
        for (k, v) in &metric.tags {
            if !labels.is_empty() {
                labels.push(',');
            }
            let _ = write!(labels, "{}=\"{}\"", metric_name(k), label_value(v));
        }
        // `{` keeps `name` + `labels` unambiguous; `name_len` splits them again.
        let series = format!("{name}{{{labels}");
        if series.len() > TEXT {
            if self.warned_long.swap(1, Ordering::Relaxed) == 0 {
                tracing::warn!(
                    "metric {name}: name and tags are longer than {TEXT} bytes; not recorded \
                     (said once: later ones are dropped without a word)"
                );
            }
            return;
        }
        let Some(slot) = self.find_or_insert(series.as_bytes(), name.len(), metric.kind) else {
            if self.warned_full.swap(1, Ordering::Relaxed) == 0 {
                tracing::warn!(
                    "the model reported more than {SLOTS} metric series; new ones are dropped"
                );
            }
            return;
        };
        let value = f64::from(metric.value);
        match metric.kind {
            MetricType::Counter => {
                let _ = slot
                    .value
                    .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |bits| {
                        Some((f64::from_bits(bits) + value).to_bits())
                    });
            }
            MetricType::Gauge => slot.value.store(value.to_bits(), Ordering::Relaxed),
            MetricType::Timer => slot
                .timer
                .observe_duration(std::time::Duration::from_secs_f64(
                    (value / 1000.0).max(0.0),
                )),
        }
    }

    fn find_or_insert(&self, series: &[u8], name_len: usize, kind: MetricType) -> Option<&Slot> {
        // FNV-1a picks where probing starts.
        let hash = series.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        });
        for i in 0..SLOTS {
            let slot = &self.slots[(hash as usize).wrapping_add(i) % SLOTS];
            loop {
                match slot.state.compare_exchange(
                    EMPTY,
                    WRITING,
                    Ordering::Acquire,
                    Ordering::Acquire,
                ) {
                    Ok(_) => {
                        for (dst, &b) in slot.text.iter().zip(series) {
                            dst.store(b, Ordering::Relaxed);
                        }
                        slot.name_len.store(name_len as u32, Ordering::Relaxed);
                        slot.kind.store(kind_code(kind), Ordering::Relaxed);
                        slot.text_len.store(series.len() as u32, Ordering::Release);
                        slot.state.store(READY, Ordering::Release);
                        return Some(slot);
                    }
                    // Another process is filling this slot in: wait for it to finish.
                    Err(WRITING) => std::thread::yield_now(),
                    Err(_) => break,
                }
            }
            if slot.text() == series {
                return Some(slot);
            }
        }
        None
    }

    pub(super) fn render(&self, out: &mut String) {
        let mut series: Vec<(String, String, u32, &Slot)> = self
            .slots
            .iter()
            .filter(|s| s.state.load(Ordering::Acquire) == READY)
            .map(|s| {
                let text = String::from_utf8_lossy(&s.text()).into_owned();
                let n = (s.name_len.load(Ordering::Relaxed) as usize).min(text.len());
                let (name, labels) = text.split_at(n);
                (
                    name.to_owned(),
                    labels.get(1..).unwrap_or_default().to_owned(),
                    s.kind.load(Ordering::Relaxed),
                    s,
                )
            })
            .collect();
        series.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
        let mut current: Option<(&str, u32)> = None;
        for (name, labels, kind, slot) in &series {
            match current {
                Some((n, k)) if n == name => {
                    // Prometheus allows one type per name: the first kind reported wins.
                    if k != *kind {
                        continue;
                    }
                }
                _ => {
                    let t = match kind {
                        1 => "counter",
                        2 => "gauge",
                        _ => "histogram",
                    };
                    let _ = writeln!(out, "# TYPE {name} {t}");
                    current = Some((name, *kind));
                }
            }
            if *kind == 3 {
                slot.timer.render(out, name, labels, &SECONDS, 1e-9);
            } else {
                let v = f64::from_bits(slot.value.load(Ordering::Relaxed));
                let braces = if labels.is_empty() {
                    String::new()
                } else {
                    format!("{{{labels}}}")
                };
                let _ = writeln!(out, "{name}{braces} {v}");
            }
        }
    }
}
