//! The repository API across worker processes. Each worker serves its own copy of the
//! models, so a change made through one of them (load, unload, publish, delete) must reach
//! the others. The worker that took the call applies it, then records it in a folder the
//! workers share (`state.json`, written under a file lock); every worker polls that file
//! and applies what it has not yet (`applied-N.json` says how far it got, and what failed).
//! The call answers once every worker has applied the change, or says which did not. A
//! worker the supervisor restarts applies the whole record before its first poll ends, so
//! it serves what the others serve.
use std::collections::BTreeMap;
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// How often a worker looks for changes made through the others.
pub const POLL: Duration = Duration::from_millis(100);

/// Where the workers meet, and which of them this is.
#[derive(Debug, Clone)]
pub struct SyncConfig {
    pub dir: PathBuf,
    pub workers: usize,
}

/// The last change to each model.
#[derive(Debug, Default, Serialize, Deserialize)]
struct State {
    generation: u64,
    models: BTreeMap<String, Change>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Change {
    pub generation: u64,
    /// Loaded (or reloaded) from the repository; `false`: unloaded.
    pub serving: bool,
    /// What the repository's `reload` builds the same load from (a load with
    /// parameters); null: the repository's own files.
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub replay: serde_json::Value,
}

/// How far one worker got.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Applied {
    generation: u64,
    /// Models whose change failed here, with the reason.
    failed: BTreeMap<String, String>,
}

/// The generation a worker catches up to, and the changes (model, what to do) to get there.
pub type Pending = (u64, Vec<(String, Change)>);

pub struct RepoSync {
    dir: PathBuf,
    worker: usize,
    workers: usize,
    applied: AtomicU64,
}

impl RepoSync {
    pub fn new(config: &SyncConfig, worker: usize) -> Self {
        Self {
            dir: config.dir.clone(),
            worker,
            workers: config.workers,
            applied: AtomicU64::new(0),
        }
    }

    /// Records a change this worker has applied; returns its generation.
    pub fn record(
        &self,
        name: &str,
        serving: bool,
        replay: serde_json::Value,
    ) -> Result<u64, String> {
        let lock = File::create(self.dir.join("lock")).map_err(|e| self.err(e))?;
        lock.lock().map_err(|e| self.err(e))?;
        let mut state = self.state()?;
        state.generation += 1;
        let generation = state.generation;
        state.models.insert(
            name.to_string(),
            Change {
                generation,
                serving,
                replay,
            },
        );
        write_json(&self.dir.join("state.json"), &state)?;
        drop(lock);
        // Changes recorded by others before this one are still this worker's to apply
        // (the poller will); only a worker with nothing pending is marked as caught up.
        if self.applied.load(Ordering::Acquire) + 1 == generation {
            self.acknowledge(generation, BTreeMap::new())?;
        }
        Ok(generation)
    }

    /// Changes recorded since this worker last caught up, and the generation they bring
    /// it to; `None` when there are none.
    pub fn pending(&self) -> Result<Option<Pending>, String> {
        let state = self.state()?;
        let mine = self.applied.load(Ordering::Acquire);
        if state.generation <= mine {
            return Ok(None);
        }
        let changes = state
            .models
            .into_iter()
            .filter(|(_, c)| c.generation > mine)
            .collect();
        Ok(Some((state.generation, changes)))
    }

    /// This worker has applied everything up to `generation`; `failed` names what it could
    /// not apply.
    pub fn acknowledge(
        &self,
        generation: u64,
        failed: BTreeMap<String, String>,
    ) -> Result<(), String> {
        self.applied.fetch_max(generation, Ordering::AcqRel);
        let path = self.dir.join(format!("applied-{}.json", self.worker));
        write_json(&path, &Applied { generation, failed })
    }

    /// Waits until every worker has applied `generation`; an error names the workers that
    /// failed to apply `name` (with their reasons) or did not get to it within `timeout`.
    pub async fn wait_for_all(
        &self,
        generation: u64,
        name: &str,
        timeout: Duration,
    ) -> Result<(), String> {
        let deadline = Instant::now() + timeout;
        loop {
            let mut behind = Vec::new();
            let mut failed = Vec::new();
            for w in 0..self.workers {
                let a: Applied =
                    read_json(&self.dir.join(format!("applied-{w}.json")))?.unwrap_or_default();
                if a.generation < generation {
                    behind.push(w.to_string());
                } else if let Some(reason) = a.failed.get(name) {
                    failed.push(format!("worker {w}: {reason}"));
                }
            }
            if !failed.is_empty() {
                return Err(format!(
                    "not applied by every worker ({})",
                    failed.join("; ")
                ));
            }
            if behind.is_empty() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "worker(s) {} did not apply it within {timeout:?}; they will when they can",
                    behind.join(", ")
                ));
            }
            tokio::time::sleep(POLL / 2).await;
        }
    }

    fn state(&self) -> Result<State, String> {
        Ok(read_json(&self.dir.join("state.json"))?.unwrap_or_default())
    }

    fn err(&self, e: std::io::Error) -> String {
        format!("{}: {e}", self.dir.display())
    }
}

fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<Option<T>, String> {
    match fs::read(path) {
        Ok(b) => serde_json::from_slice(&b)
            .map(Some)
            .map_err(|e| format!("{}: {e}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// Written to a temporary file and renamed: readers see the old or the new, never half.
fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<(), String> {
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let text = serde_json::to_vec(value).map_err(|e| e.to_string())?;
    fs::write(&tmp, text)
        .and_then(|()| fs::rename(&tmp, path))
        .map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_reach_the_other_worker_and_are_acknowledged() {
        let dir = std::env::temp_dir().join(format!("inferwire-sync-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let config = SyncConfig {
            dir: dir.clone(),
            workers: 2,
        };
        let (a, b) = (RepoSync::new(&config, 0), RepoSync::new(&config, 1));
        let replay = serde_json::json!({"config": "{}"});
        let g1 = a.record("m", true, serde_json::Value::Null).unwrap();
        let g2 = a.record("n", true, replay.clone()).unwrap();
        let g3 = a.record("m", false, serde_json::Value::Null).unwrap();
        assert_eq!((g1, g2, g3), (1, 2, 3));
        assert!(a.pending().unwrap().is_none());
        let (to, changes) = b.pending().unwrap().unwrap();
        assert_eq!(to, 3);
        let got: Vec<(String, bool)> = changes
            .iter()
            .map(|(n, c)| (n.clone(), c.serving))
            .collect();
        assert_eq!(got, vec![("m".into(), false), ("n".into(), true)]);
        assert_eq!(changes[1].1.replay, replay);
        assert!(changes[0].1.replay.is_null());
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let waited = rt.block_on(a.wait_for_all(3, "m", Duration::from_millis(200)));
        assert!(waited.unwrap_err().contains("worker(s) 1 did not apply it"));
        b.acknowledge(3, BTreeMap::from([("n".to_string(), "boom".to_string())]))
            .unwrap();
        assert!(rt
            .block_on(a.wait_for_all(3, "m", Duration::from_secs(1)))
            .is_ok());
        let e = rt
            .block_on(a.wait_for_all(2, "n", Duration::from_secs(1)))
            .unwrap_err();
        assert!(e.contains("worker 1: boom"), "{e}");
        assert!(b.pending().unwrap().is_none());
        fs::remove_dir_all(dir).unwrap();
    }
}
