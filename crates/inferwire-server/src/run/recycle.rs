//! Worker recycling (`max_requests`, `max_worker_memory`): a worker past either limit
//! stops being ready (its HTTP/1.1 answers from then on say `Connection: close`), drains
//! like at SIGTERM and exits 0; the supervisor, which holds the listening sockets, starts
//! its replacement, and connections meanwhile wait in the shared accept queue.
use std::sync::Weak;
use std::time::Duration;

use super::StopHandle;
use crate::app::App;

/// How often the limits are checked (the request limit also at once when reached);
/// memory only every `MEMORY_EVERY`th time.
const EVERY: Duration = Duration::from_millis(100);
const MEMORY_EVERY: u32 = 10;

/// This process's resident memory (`VmRSS` in /proc/self/status), in bytes.
pub fn resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Why this worker should be replaced now, if it should.
fn why(app: &App, check_memory: bool) -> Option<String> {
    if let Some(limit) = app.request_limit {
        let answered = app.answered();
        if answered >= limit {
            return Some(format!(
                "answered {answered} requests (max_requests {}, this worker's limit {limit})",
                app.config.max_requests.unwrap_or(limit)
            ));
        }
    }
    let most = app.config.max_worker_memory.filter(|_| check_memory)?;
    let rss = resident_bytes()?;
    (rss > most).then(|| {
        format!(
            "resident memory {:.1} MiB is over max_worker_memory ({:.1} MiB)",
            rss as f64 / 1048576.0,
            most as f64 / 1048576.0
        )
    })
}

/// Runs on its own thread until the app is gone or a limit is passed, which stops the
/// server (a drain, as at SIGTERM).
pub fn watch(app: &Weak<App>, stop: &StopHandle) {
    let mut round = 0u32;
    loop {
        {
            let Some(app) = app.upgrade() else { return };
            let (reached, wake) = &app.limit_reached;
            let guard = reached.lock().unwrap_or_else(|e| e.into_inner());
            if !*guard {
                let _ = wake.wait_timeout(guard, EVERY);
            }
        }
        round = round.wrapping_add(1);
        let Some(app) = app.upgrade() else { return };
        if let Some(why) = why(&app, round.is_multiple_of(MEMORY_EVERY)) {
            tracing::info!("recycling this worker: {why}; it drains and exits, and the supervisor starts a new one");
            app.set_not_ready();
            stop.stop();
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resident_memory_is_read() {
        assert!(resident_bytes().unwrap() > 0);
    }
}
