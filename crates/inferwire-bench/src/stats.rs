//! What a run measured: an HDR histogram of latencies and the counters a report needs.
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::transport::Outcome;

/// At most this many distinct error messages are kept (a failing server repeats itself).
const MAX_ERRORS: usize = 100;

pub struct Recorder {
    /// Latencies in nanoseconds, 3 significant digits, up to an hour.
    pub hist: Histogram<u64>,
    pub requests: u64,
    pub ok: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub codes: BTreeMap<String, u64>,
    pub errors: BTreeSet<String>,
    /// When the last request finished.
    pub last_done: Option<Instant>,
}

impl Default for Recorder {
    fn default() -> Self {
        Self {
            hist: Histogram::new_with_bounds(1, 3_600_000_000_000, 3)
                .expect("valid histogram bounds"),
            requests: 0,
            ok: 0,
            bytes_in: 0,
            bytes_out: 0,
            codes: BTreeMap::new(),
            errors: BTreeSet::new(),
            last_done: None,
        }
    }
}

impl Recorder {
    pub fn record(&mut self, latency: Duration, done: Instant, out: &Outcome, bytes_out: u64) {
        self.requests += 1;
        self.hist
            .saturating_record((latency.as_nanos() as u64).max(1));
        self.bytes_in += out.bytes_in;
        self.bytes_out += bytes_out;
        if out.code.ok() {
            self.ok += 1;
        } else if let Some(m) = &out.message {
            if self.errors.len() < MAX_ERRORS {
                let m = if m.is_empty() {
                    out.code.label()
                } else {
                    m.clone()
                };
                self.errors.insert(m);
            }
        }
        *self.codes.entry(out.code.label()).or_default() += 1;
        self.last_done = Some(self.last_done.map_or(done, |d| d.max(done)));
    }

    /// Adds another worker's results to these.
    pub fn merge(&mut self, o: Recorder) {
        // Both histograms have the same bounds, so adding cannot fail.
        let _ = self.hist.add(&o.hist);
        self.requests += o.requests;
        self.ok += o.ok;
        self.bytes_in += o.bytes_in;
        self.bytes_out += o.bytes_out;
        for (k, v) in o.codes {
            *self.codes.entry(k).or_default() += v;
        }
        for e in o.errors {
            if self.errors.len() >= MAX_ERRORS {
                break;
            }
            self.errors.insert(e);
        }
        self.last_done = self.last_done.max(o.last_done);
    }
}
