//! CPU time from /proc: the server's whole process tree (workers included) and this
//! process's own, the honest per-request figures when generator and server share a
//! small machine. Linux counts it in clock ticks of 10 ms (USER_HZ = 100), so runs of a
//! few seconds or more give usable per-request figures.
use std::collections::HashMap;
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

/// CPU time used so far by `pid` and every process below it; `None` if it is gone.
pub fn process_tree(pid: u32) -> Option<Duration> {
    let (_, own) = stat(pid)?;
    let mut children: HashMap<u32, Vec<(u32, u64)>> = HashMap::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for entry in dir.flatten() {
            let Some(p) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            if p == pid {
                continue;
            }
            if let Some((ppid, t)) = stat(p) {
                children.entry(ppid).or_default().push((p, t));
            }
        }
    }
    let mut total = own;
    let mut todo = vec![pid];
    while let Some(p) = todo.pop() {
        for &(c, t) in children.get(&p).map(Vec::as_slice).unwrap_or_default() {
            total += t;
            todo.push(c);
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
}
