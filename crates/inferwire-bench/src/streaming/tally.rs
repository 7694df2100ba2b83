//! What a stream run measured: when each stream's first piece came, the gaps between
//! pieces, each stream's length, and how streams ended. One per worker, merged at the end.
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::stats::new_histogram;

/// At most this many distinct error messages are kept (a failing server repeats itself).
const MAX_ERRORS: usize = 100;

/// How one stream ended: the label of the report's status-code table, and for a failed
/// stream its message.
pub struct End {
    pub label: String,
    pub error: Option<String>,
}

impl End {
    pub fn ok(label: &str) -> Self {
        Self {
            label: label.to_string(),
            error: None,
        }
    }

    pub fn failed(label: &str, message: impl Into<String>) -> Self {
        Self {
            label: label.to_string(),
            error: Some(message.into()),
        }
    }
}

pub struct Tally {
    /// Time to first piece, from the send (or the due time in an open loop), in ns.
    pub ttft: Histogram<u64>,
    /// Gaps between consecutive pieces of one stream, every stream pooled.
    pub gaps: Histogram<u64>,
    /// Each stream's whole length, from the send to its end.
    pub durations: Histogram<u64>,
    pub streams: u64,
    pub ok: u64,
    pub pieces: u64,
    /// Payload bytes of the pieces: SSE event data, or reply messages.
    pub bytes: u64,
    pub min_pieces: Option<u64>,
    pub max_pieces: u64,
    pub codes: BTreeMap<String, u64>,
    pub errors: BTreeSet<String>,
    pub last_send: Option<Instant>,
    pub last_done: Option<Instant>,
    /// The stream being read: when it started, its last piece, its pieces so far.
    from: Instant,
    last: Option<Instant>,
    current: u64,
}

impl Default for Tally {
    fn default() -> Self {
        Self {
            ttft: new_histogram(),
            gaps: new_histogram(),
            durations: new_histogram(),
            streams: 0,
            ok: 0,
            pieces: 0,
            bytes: 0,
            min_pieces: None,
            max_pieces: 0,
            codes: BTreeMap::new(),
            errors: BTreeSet::new(),
            last_send: None,
            last_done: None,
            from: Instant::now(),
            last: None,
            current: 0,
        }
    }
}

fn ns(d: Duration) -> u64 {
    (d.as_nanos() as u64).max(1)
}

impl Tally {
    /// A stream starts; its times count from `from`.
    pub fn begin(&mut self, from: Instant) {
        self.from = from;
        self.last = None;
        self.current = 0;
        self.last_send = Some(Instant::now());
    }

    /// A piece of `bytes` payload bytes arrived now.
    pub fn piece(&mut self, bytes: usize) {
        let now = Instant::now();
        match self.last {
            None => self.ttft.saturating_record(ns(now - self.from)),
            Some(prev) => self.gaps.saturating_record(ns(now - prev)),
        }
        self.last = Some(now);
        self.current += 1;
        self.pieces += 1;
        self.bytes += bytes as u64;
    }

    /// The stream ended as `end` says.
    pub fn end(&mut self, end: End) {
        let now = Instant::now();
        self.streams += 1;
        self.durations.saturating_record(ns(now - self.from));
        self.min_pieces = Some(
            self.min_pieces
                .map_or(self.current, |m| m.min(self.current)),
        );
        self.max_pieces = self.max_pieces.max(self.current);
        match end.error {
            None => self.ok += 1,
            Some(m) if self.errors.len() < MAX_ERRORS => {
                self.errors
                    .insert(if m.is_empty() { end.label.clone() } else { m });
            }
            Some(_) => {}
        }
        *self.codes.entry(end.label).or_default() += 1;
        self.last_done = Some(now);
    }

    pub fn merge(&mut self, o: Tally) {
        // Same bounds everywhere: adding cannot fail.
        let _ = self.ttft.add(&o.ttft);
        let _ = self.gaps.add(&o.gaps);
        let _ = self.durations.add(&o.durations);
        self.streams += o.streams;
        self.ok += o.ok;
        self.pieces += o.pieces;
        self.bytes += o.bytes;
        self.min_pieces = match (self.min_pieces, o.min_pieces) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.max_pieces = self.max_pieces.max(o.max_pieces);
        for (k, v) in o.codes {
            *self.codes.entry(k).or_default() += v;
        }
        for e in o.errors {
            if self.errors.len() >= MAX_ERRORS {
                break;
            }
            self.errors.insert(e);
        }
        self.last_send = self.last_send.max(o.last_send);
        self.last_done = self.last_done.max(o.last_done);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_pieces_gaps_and_ends_are_counted_per_stream() {
        let mut t = Tally::default();
        t.begin(Instant::now() - Duration::from_millis(5));
        t.piece(10);
        t.piece(20);
        t.piece(30);
        t.end(End::ok("200"));
        t.begin(Instant::now());
        t.end(End::failed("500", "boom"));
        assert_eq!((t.streams, t.ok, t.pieces, t.bytes), (2, 1, 3, 60));
        assert_eq!((t.ttft.len(), t.gaps.len(), t.durations.len()), (1, 2, 2));
        assert!(t.ttft.max() >= 5_000_000); // the highest value of its bucket
        assert_eq!((t.min_pieces, t.max_pieces), (Some(0), 3));
        assert_eq!(t.errors.iter().collect::<Vec<_>>(), ["boom"]);
        let mut all = Tally::default();
        all.merge(t);
        assert_eq!(all.codes.get("500"), Some(&1));
        assert_eq!(all.min_pieces, Some(0));
    }
}
