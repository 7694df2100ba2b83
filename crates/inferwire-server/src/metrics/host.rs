//! The machine's CPU and memory use, read from `/proc` when the metrics are scraped (as
//! Triton reports them on CPU: `nv_cpu_utilization`, `nv_cpu_memory_*`). Nothing is
//! sampled between scrapes: utilization is over the time since the previous scrape in
//! this process (since boot, at the first).
use std::sync::Mutex;

/// CPU and memory use at one scrape.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct HostUse {
    /// Busy share of every CPU's time since the previous scrape, 0.0 to 1.0.
    pub cpu_utilization: f64,
    pub memory_total_bytes: u64,
    /// Total less available (`MemAvailable`): what the kernel could not give back.
    pub memory_used_bytes: u64,
}

/// Busy and idle CPU time (ticks) since boot, over every CPU.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Ticks {
    busy: u64,
    idle: u64,
}

static LAST: Mutex<Option<Ticks>> = Mutex::new(None);

/// Reads the use now; zeros for what cannot be read (not Linux).
pub fn sample() -> HostUse {
    let mut out = HostUse::default();
    if let Some(now) = std::fs::read_to_string("/proc/stat")
        .ok()
        .and_then(|s| ticks(&s))
    {
        let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
        let before = last.unwrap_or_default();
        out.cpu_utilization = utilization(before, now);
        *last = Some(now);
    }
    if let Some((total, available)) = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| memory(&s))
    {
        out.memory_total_bytes = total;
        out.memory_used_bytes = total.saturating_sub(available);
    }
    out
}

/// The aggregate `cpu` line of `/proc/stat`: user nice system idle iowait irq softirq
/// steal; busy is all but idle and iowait.
fn ticks(stat: &str) -> Option<Ticks> {
    let line = stat.lines().next()?.strip_prefix("cpu ")?;
    let v: Vec<u64> = line
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    let at = |i: usize| v.get(i).copied().unwrap_or(0);
    Some(Ticks {
        busy: at(0) + at(1) + at(2) + at(5) + at(6) + at(7),
        idle: at(3) + at(4),
    })
}

fn utilization(before: Ticks, now: Ticks) -> f64 {
    let busy = now.busy.saturating_sub(before.busy);
    let idle = now.idle.saturating_sub(before.idle);
    if busy + idle == 0 {
        return 0.0;
    }
    busy as f64 / (busy + idle) as f64
}

/// `MemTotal` and `MemAvailable` from `/proc/meminfo`, in bytes.
fn memory(meminfo: &str) -> Option<(u64, u64)> {
    let field = |name: &str| -> Option<u64> {
        let line = meminfo.lines().find(|l| l.starts_with(name))?;
        let kib: u64 = line[name.len()..]
            .trim_start_matches(':')
            .split_whitespace()
            .next()?
            .parse()
            .ok()?;
        Some(kib * 1024)
    };
    let (total, available) = (field("MemTotal")?, field("MemAvailable")?);
    (available <= total).then_some((total, available))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_proc_as_triton_does() {
        let stat = "cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 1 2 3\n";
        let t = ticks(stat).unwrap();
        assert_eq!(
            t,
            Ticks {
                busy: 150,
                idle: 850
            }
        );
        let later = Ticks {
            busy: 250,
            idle: 950,
        };
        assert!((utilization(t, later) - 0.5).abs() < 1e-9);
        assert_eq!(utilization(t, t), 0.0);
        let meminfo = "MemTotal:       16000 kB\nMemFree:  1 kB\nMemAvailable:   4000 kB\n";
        assert_eq!(memory(meminfo), Some((16000 * 1024, 4000 * 1024)));
        assert_eq!(memory("MemTotal: 1 kB\n"), None);
        if cfg!(target_os = "linux") {
            let s = sample();
            assert!(s.memory_total_bytes > 0 && s.memory_used_bytes <= s.memory_total_bytes);
            assert!((0.0..=1.0).contains(&s.cpu_utilization));
        }
    }
}
