//! Durations as the load tools write them: `10s`, `500ms`, `2m`, `1.5s`, `250us`.
use std::time::Duration;

pub fn parse(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: f64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a duration (e.g. 10s, 500ms, 2m)"))?;
    let secs = match unit {
        "" | "s" => n,
        "ms" => n / 1e3,
        "us" | "µs" => n / 1e6,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        _ => {
            return Err(format!(
                "{s:?}: unknown unit {unit:?} (use h, m, s, ms or us)"
            ))
        }
    };
    Duration::try_from_secs_f64(secs).map_err(|e| format!("{s:?}: {e}"))
}

/// `1.23ms`, `456µs`, `2.5s`: three significant digits, as reports show latencies.
pub fn human(d: Duration) -> String {
    let ns = d.as_nanos() as f64;
    let (v, unit) = if ns >= 1e9 {
        (ns / 1e9, "s")
    } else if ns >= 1e6 {
        (ns / 1e6, "ms")
    } else if ns >= 1e3 {
        (ns / 1e3, "µs")
    } else {
        (ns, "ns")
    };
    let digits = if v >= 100.0 {
        0
    } else if v >= 10.0 {
        1
    } else {
        2
    };
    format!("{v:.digits$}{unit}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_tools_spellings() {
        assert_eq!(parse("10s").unwrap(), Duration::from_secs(10));
        assert_eq!(parse("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse("1.5").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse("250us").unwrap(), Duration::from_micros(250));
        assert!(parse("ten").is_err());
        assert!(parse("5d").is_err());
    }

    #[test]
    fn human_keeps_three_digits() {
        assert_eq!(human(Duration::from_micros(1234)), "1.23ms");
        assert_eq!(human(Duration::from_micros(456)), "456µs");
        assert_eq!(human(Duration::from_millis(2500)), "2.50s");
    }
}
