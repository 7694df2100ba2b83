//! Worker recycling (`max_requests`, `max_worker_memory`): a worker past either limit
//! stops being ready (its HTTP/1.1 answers from then on say `Connection: close`), drains
//! like at SIGTERM and exits 0; the supervisor, which holds the listening sockets, starts
//! its replacement, and connections meanwhile wait in the shared accept queue.
use std::hash::{BuildHasher, Hasher};
use std::sync::Weak;
use std::time::Duration;

use crate::app::App;
use crate::config::ServerConfig;
use crate::run::StopHandle;

/// How often the limits are checked (the request limit also at once when reached);
/// memory only every `MEMORY_EVERY`th time.
const EVERY: Duration = Duration::from_millis(100);
const MEMORY_EVERY: u32 = 10;

/// This worker's request limit: `max_requests` plus a share of the jitter drawn for
/// this process, so that workers started together are not all replaced together.
pub fn request_limit(config: &ServerConfig) -> Option<u64> {
    let extra = match config.max_requests_jitter {
        0 => 0,
        most => {
            // Seeded per process: forked workers share the parent's hasher keys.
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u32(std::process::id());
            h.finish() % (most + 1)
        }
    };
    config.max_requests.map(|n| n.max(1) + extra)
}

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
    fn the_limit_is_max_requests_plus_at_most_the_jitter() {
        let mut config = ServerConfig::default();
        assert_eq!(request_limit(&config), None);
        config.max_requests = Some(100);
        assert_eq!(request_limit(&config), Some(100));
        config.max_requests_jitter = 10;
        let limit = request_limit(&config).unwrap();
        assert!((100..=110).contains(&limit), "{limit}");
    }

    #[test]
    fn resident_memory_is_read() {
        assert!(resident_bytes().unwrap() > 0);
    }
}
