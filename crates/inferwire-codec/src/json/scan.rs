//! A minimal JSON scanner for walking a known object layout in one pass: find keys and
//! the extent of values without building anything. It does not validate: every value
//! it skips is either parsed afterwards by serde (which validates it) or rejected.
use memchr::memchr2;

#[inline]
pub fn ws(b: &[u8], mut i: usize) -> usize {
    while let Some(b' ' | b'\n' | b'\r' | b'\t') = b.get(i) {
        i += 1;
    }
    i
}

/// Index just past the string starting at `i` (which must be `"`).
pub fn skip_string(b: &[u8], mut i: usize) -> Option<usize> {
    i += 1;
    loop {
        let at = i + memchr2(b'"', b'\\', b.get(i..)?)?;
        if b[at] == b'"' {
            return Some(at + 1);
        }
        i = at + 2; // an escape: skip the escaped byte
    }
}

/// Index just past the value starting at `i`.
pub fn skip_value(b: &[u8], i: usize) -> Option<usize> {
    match *b.get(i)? {
        b'"' => skip_string(b, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            loop {
                match *b.get(j)? {
                    b'"' => {
                        j = skip_string(b, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
        }
        _ => {
            let mut j = i;
            while let Some(&c) = b.get(j) {
                if matches!(c, b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t') {
                    break;
                }
                j += 1;
            }
            (j > i).then_some(j)
        }
    }
}

/// Walks the members of the object starting at `i` (which must be `{`), calling
/// `member(key, value_start)`, which returns the index just past the value. Returns the
/// index just past the object. Keys with escapes or control characters are not handled
/// (`None`).
pub fn object(
    b: &[u8],
    i: usize,
    mut member: impl FnMut(&str, usize) -> Option<usize>,
) -> Option<usize> {
    if b.get(i) != Some(&b'{') {
        return None;
    }
    let mut j = ws(b, i + 1);
    if b.get(j) == Some(&b'}') {
        return Some(j + 1);
    }
    loop {
        if b.get(j) != Some(&b'"') {
            return None;
        }
        let end = skip_string(b, j)?;
        let key = std::str::from_utf8(&b[j + 1..end - 1]).ok()?;
        // Escapes are not decoded here; control characters are not JSON (found by fuzzing).
        if key.bytes().any(|c| c == b'\\' || c < 0x20) {
            return None;
        }
        j = ws(b, end);
        if b.get(j) != Some(&b':') {
            return None;
        }
        j = member(key, ws(b, j + 1))?;
        j = ws(b, j);
        match b.get(j)? {
            b',' => j = ws(b, j + 1),
            b'}' => return Some(j + 1),
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skips() {
        let b = br#"{"a": "x\"}", "b": [1, {"c": "]"}], "d": -1.5e3}"#;
        let mut seen = Vec::new();
        let end = object(b, 0, |k, v| {
            let e = skip_value(b, v)?;
            seen.push((k.to_owned(), String::from_utf8_lossy(&b[v..e]).into_owned()));
            Some(e)
        });
        assert_eq!(end, Some(b.len()));
        assert_eq!(
            seen,
            vec![
                ("a".into(), r#""x\"}""#.into()),
                ("b".into(), r#"[1, {"c": "]"}]"#.into()),
                ("d".into(), "-1.5e3".into())
            ]
        );
        assert_eq!(object(b"{\"a\" 1}", 0, |_, v| Some(v + 1)), None);
        assert_eq!(skip_value(b"\"open", 0), None);
    }
}
