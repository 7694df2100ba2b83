//! A one-line progress bar on stderr, only when stderr is a terminal.
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

pub struct Progress {
    on: bool,
    start: Instant,
    duration: Option<Duration>,
    requests: Option<u64>,
}

impl Progress {
    pub fn new(wanted: bool, duration: Option<Duration>, requests: Option<u64>) -> Self {
        Self {
            on: wanted && std::io::stderr().is_terminal(),
            start: Instant::now(),
            duration,
            requests,
        }
    }

    pub fn enabled(&self) -> bool {
        self.on
    }

    pub fn show(&self, done: u64) {
        if !self.on {
            return;
        }
        let elapsed = self.start.elapsed();
        let by_time = self
            .duration
            .map(|d| elapsed.as_secs_f64() / d.as_secs_f64().max(1e-9));
        let by_count = self.requests.map(|n| done as f64 / n.max(1) as f64);
        let frac = by_time
            .into_iter()
            .chain(by_count)
            .fold(0.0f64, f64::max)
            .min(1.0);
        let filled = (frac * 30.0) as usize;
        let rate = done as f64 / elapsed.as_secs_f64().max(1e-9);
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "\r[{}{}] {:>3.0}%  {done} requests  {rate:.0}/s ",
            "=".repeat(filled),
            " ".repeat(30 - filled),
            frac * 100.0
        );
        let _ = err.flush();
    }

    pub fn finish(&self) {
        if self.on {
            let _ = write!(std::io::stderr(), "\r{}\r", " ".repeat(70));
        }
    }
}
