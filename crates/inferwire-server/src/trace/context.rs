//! W3C Trace Context (https://www.w3.org/TR/trace-context/): the `traceparent` and
//! `tracestate` headers read and written. Parsing is strict and bounded, as the
//! recommendation asks: a `traceparent` that is not exactly version, trace id, parent id
//! and flags in lower-case hex (or that has an all-zero id, or version `ff`) is ignored
//! and the request starts a trace of its own; a `tracestate` longer than 512 bytes, with
//! more than 32 members, or with a character outside its grammar is dropped (never cut).

/// The longest `tracestate` passed on (the spec's recommended minimum to propagate).
pub const MAX_TRACESTATE: usize = 512;
/// The most list members a `tracestate` may have.
const MAX_MEMBERS: usize = 32;

/// A span's identity as W3C carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpanContext {
    pub trace_id: [u8; 16],
    pub span_id: [u8; 8],
    /// Trace flags; bit 0 is `sampled`.
    pub flags: u8,
}

impl SpanContext {
    pub fn sampled(&self) -> bool {
        self.flags & 1 == 1
    }

    /// `traceparent`'s value: version 00, ids in lower-case hex, flags.
    pub fn traceparent(&self) -> String {
        let mut out = String::with_capacity(55);
        out.push_str("00-");
        hex(&self.trace_id, &mut out);
        out.push('-');
        hex(&self.span_id, &mut out);
        out.push('-');
        hex(&[self.flags], &mut out);
        out
    }
}

/// Reads a `traceparent` value; `None` for anything the spec says to ignore.
pub fn parse_traceparent(value: &[u8]) -> Option<SpanContext> {
    // version "-" trace-id "-" parent-id "-" flags: 2+1+32+1+16+1+2 = 55 bytes. A later
    // version may append "-" and more; version 00 may not.
    if value.len() < 55 || value[2] != b'-' || value[35] != b'-' || value[52] != b'-' {
        return None;
    }
    let version = unhex::<1>(&value[0..2])?[0];
    if version == 0xff || (version == 0 && value.len() != 55) {
        return None;
    }
    if value.len() > 55 && value[55] != b'-' {
        return None;
    }
    let trace_id = unhex::<16>(&value[3..35])?;
    let span_id = unhex::<8>(&value[36..52])?;
    let flags = unhex::<1>(&value[53..55])?[0];
    if trace_id == [0; 16] || span_id == [0; 8] {
        return None;
    }
    Some(SpanContext {
        trace_id,
        span_id,
        flags,
    })
}

/// A `tracestate` value to pass on unchanged, if it keeps to the spec's grammar and
/// limits; `None` drops it.
pub fn parse_tracestate(value: &[u8]) -> Option<String> {
    if value.len() > MAX_TRACESTATE {
        return None;
    }
    let text = std::str::from_utf8(value).ok()?;
    let mut members = 0;
    for member in text.split(',') {
        let member = member.trim_matches([' ', '\t']);
        if member.is_empty() {
            continue; // empty list members are allowed and skipped
        }
        members += 1;
        let (key, val) = member.split_once('=')?;
        let key_ok = !key.is_empty()
            && key
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_-*/@".contains(&b));
        // Printable ASCII except `,` and `=`; no trailing space.
        let val_ok = !val.is_empty()
            && !val.ends_with(' ')
            && val
                .bytes()
                .all(|b| (0x20..=0x7e).contains(&b) && b != b',' && b != b'=');
        if !key_ok || !val_ok || members > MAX_MEMBERS {
            return None;
        }
    }
    (members > 0).then(|| text.to_owned())
}

fn unhex<const N: usize>(text: &[u8]) -> Option<[u8; N]> {
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None, // upper case is invalid in traceparent
    };
    let mut out = [0u8; N];
    for (i, pair) in text.chunks_exact(2).enumerate() {
        out[i] = digit(pair[0])? << 4 | digit(pair[1])?;
    }
    Some(out)
}

pub(crate) fn hex(bytes: &[u8], out: &mut String) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 15)] as char);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn reads_and_writes_traceparent() {
        let ctx = parse_traceparent(GOOD.as_bytes()).unwrap();
        assert!(ctx.sampled());
        assert_eq!(
            ctx.span_id,
            [0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7]
        );
        assert_eq!(ctx.traceparent(), GOOD);
    }

    #[test]
    fn ignores_bad_traceparent() {
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "0x-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ] {
            assert_eq!(parse_traceparent(bad.as_bytes()), None, "{bad}");
        }
        // A later version may carry more after its fields.
        let later = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what";
        assert!(parse_traceparent(later.as_bytes()).is_some());
    }

    #[test]
    fn tracestate_bounded() {
        assert_eq!(
            parse_tracestate(b"congo=t61rcWkgMzE,rojo=00f067aa0ba902b7").as_deref(),
            Some("congo=t61rcWkgMzE,rojo=00f067aa0ba902b7")
        );
        assert_eq!(parse_tracestate(b"Bad=1"), None);
        assert_eq!(parse_tracestate(b"novalue"), None);
        let long = format!("a={}", "x".repeat(MAX_TRACESTATE));
        assert_eq!(parse_tracestate(long.as_bytes()), None);
        let many: Vec<String> = (0..33).map(|i| format!("k{i}=v")).collect();
        assert_eq!(parse_tracestate(many.join(",").as_bytes()), None);
    }
}
