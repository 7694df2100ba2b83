//! CPU time from /proc: the server's whole process tree (workers included) and this
//! process's own, the honest per-request figures when generator and server share a
//! small machine. Linux counts it in clock ticks of 10 ms (USER_HZ = 100), so runs of a
//! few seconds or more give usable per-request figures.
use std::collections::{HashMap, HashSet};
use std::time::Duration;

const TICK: Duration = Duration::from_millis(10);

/// (ppid, utime + stime in ticks) from `/proc/PID/stat`.
fn stat(pid: u32) -> Option<(u32, u64)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold spaces: fields start after it.
    let rest = &s[s.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ppid = f.get(1)?.parse().ok()?;
    let utime: u64 = f.get(11)?.parse().ok()?;
    let stime: u64 = f.get(12)?.parse().ok()?;
    Some((ppid, utime + stime))
}

/// The parent of `pid`; `None` if it is gone.
pub fn parent(pid: u32) -> Option<u32> {
    stat(pid).map(|(ppid, _)| ppid)
}

/// The PIDs in /proc.
pub fn pids() -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect()
}

/// CPU time used so far by `pid` and every process below it; `None` if it is gone.
pub fn process_tree(pid: u32) -> Option<Duration> {
    trees(&[pid])
}

/// CPU time used so far by the processes `roots` and every process below them, each
/// counted once; `None` if there are none or one of them is gone (the difference of two
/// readings would be meaningless).
pub fn trees(roots: &[u32]) -> Option<Duration> {
    let mut seen = HashSet::new();
    let mut total = 0;
    for &r in roots {
        let (_, t) = stat(r)?;
        if seen.insert(r) {
            total += t;
        }
    }
    if seen.is_empty() {
        return None;
    }
    // One pass over /proc for all the roots: a server's workers are its children.
    let mut children: HashMap<u32, Vec<(u32, u64)>> = HashMap::new();
    for p in pids() {
        if let Some((ppid, t)) = stat(p) {
            children.entry(ppid).or_default().push((p, t));
        }
    }
    let mut todo: Vec<u32> = seen.iter().copied().collect();
    while let Some(p) = todo.pop() {
        for &(c, t) in children.get(&p).map(Vec::as_slice).unwrap_or_default() {
            // A root below another root is counted once.
            if seen.insert(c) {
                total += t;
                todo.push(c);
            }
        }
    }
    Some(TICK * total as u32)
}

/// This process's CPU time so far.
pub fn own() -> Duration {
    stat(std::process::id()).map_or(Duration::ZERO, |(_, t)| TICK * t as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_time_grows_with_work() {
        let before = own();
        let start = std::time::Instant::now();
        let mut x = 0u64;
        while start.elapsed() < Duration::from_millis(60) {
            x = x.wrapping_mul(31).wrapping_add(7);
        }
        std::hint::black_box(x);
        let after = own();
        assert!(after > before);
        // Read after `own`: the tree (this process) has used at least as much by then.
        assert!(process_tree(std::process::id()).unwrap() >= after);
        assert!(process_tree(u32::MAX).is_none());
    }

    #[test]
    fn trees_count_each_process_once() {
        let me = std::process::id();
        assert!(trees(&[]).is_none());
        assert!(trees(&[me, u32::MAX]).is_none());
        let start = std::time::Instant::now();
        let mut x = 0u64;
        while start.elapsed() < Duration::from_millis(60) {
            x = x.wrapping_mul(31).wrapping_add(7);
        }
        std::hint::black_box(x);
        // This process named twice (or as its parent's descendant) is still itself once.
        let once = process_tree(me).unwrap();
        let twice = trees(&[me, me]).unwrap();
        assert!(twice < once * 2, "{once:?} {twice:?}");
        assert_eq!(parent(me), Some(std::os::unix::process::parent_id()));
    }
}
