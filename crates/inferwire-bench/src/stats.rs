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
    /// Latencies again, by status code: under overload, how fast refusals come back
    /// and how the accepted requests fare are separate questions.
    pub by_code: BTreeMap<String, Histogram<u64>>,
    pub errors: BTreeSet<String>,
    /// When the last request finished.
    pub last_done: Option<Instant>,
}

impl Default for Recorder {
    fn default() -> Self {
        Self {
            hist: new_histogram(),
            requests: 0,
            ok: 0,
            bytes_in: 0,
            bytes_out: 0,
            codes: BTreeMap::new(),
            by_code: BTreeMap::new(),
            errors: BTreeSet::new(),
            last_done: None,
        }
    }
}

/// Latencies in nanoseconds, 3 significant digits, up to an hour.
pub(crate) fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid histogram bounds")
}

impl Recorder {
    pub fn record(&mut self, latency: Duration, done: Instant, out: &Outcome, bytes_out: u64) {
        self.requests += 1;
        let ns = (latency.as_nanos() as u64).max(1);
        self.hist.saturating_record(ns);
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
        let label = out.code.label();
        match self.by_code.get_mut(&label) {
            Some(h) => h.saturating_record(ns),
            None => {
                let mut h = new_histogram();
                h.saturating_record(ns);
                self.by_code.insert(label.clone(), h);
            }
        }
        *self.codes.entry(label).or_default() += 1;
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
        for (k, h) in o.by_code {
            match self.by_code.get_mut(&k) {
                Some(mine) => {
                    let _ = mine.add(&h);
                }
                None => {
                    self.by_code.insert(k, h);
                }
            }
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
