//! The client's own deadline, which every unary handler honours.

/// The client's deadline from `grpc-timeout` (digits and a unit: H, M, S, m, u, n), made
/// a millisecond shorter so that our DEADLINE_EXCEEDED, not tonic's own timer, answers.
pub fn client_timeout(meta: &tonic::metadata::MetadataMap) -> Option<std::time::Duration> {
    use std::time::Duration;
    let v = meta.get("grpc-timeout")?.to_str().ok()?;
    let (digits, unit) = v.split_at(v.len().checked_sub(1)?);
    let n: u64 = digits.parse().ok()?;
    let d = match unit {
        "H" => Duration::from_secs(n.saturating_mul(3600)),
        "M" => Duration::from_secs(n.saturating_mul(60)),
        "S" => Duration::from_secs(n),
        "m" => Duration::from_millis(n),
        "u" => Duration::from_micros(n),
        "n" => Duration::from_nanos(n),
        _ => return None,
    };
    Some(d.saturating_sub(Duration::from_millis(1)))
}
