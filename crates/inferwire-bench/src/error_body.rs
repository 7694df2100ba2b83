//! The start of a failed response's body, kept for the report's error set: shared by the
//! HTTP/1.1 client (`http1`) and the HTTP/2 paths (`transport`, `blocking_h2`).

/// How much of a failed response's body is kept for the report's error set.
const ERROR_HEAD: usize = 200;

/// Keeps what `head` still has room for of `data`, the next part of an error body.
pub(crate) fn keep_head(head: &mut Vec<u8>, data: &[u8]) {
    let room = ERROR_HEAD.saturating_sub(head.len()).min(data.len());
    head.extend_from_slice(&data[..room]);
}

/// The error message from `head`, the start of a body of `body_len` bytes: trimmed, and
/// when the body went on, ended with "…" so a cut message does not pass for a whole one.
pub(crate) fn body_message(head: &[u8], body_len: u64) -> String {
    if body_len <= head.len() as u64 {
        return String::from_utf8_lossy(head).trim().to_string();
    }
    let head = whole_chars(head);
    format!("{}…", String::from_utf8_lossy(head).trim())
}

/// `b` without a UTF-8 character the cut split at its end (it would show as U+FFFD):
/// from_utf8 reports an incomplete last character as an error without a length.
fn whole_chars(b: &[u8]) -> &[u8] {
    match std::str::from_utf8(b) {
        Err(e) if e.error_len().is_none() => &b[..e.valid_up_to()],
        _ => b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_bodies_are_kept_to_a_head_and_a_cut_says_so() {
        let mut head = Vec::new();
        keep_head(&mut head, &[b'x'; 150]);
        keep_head(&mut head, &[b'y'; 150]);
        assert_eq!(head.len(), ERROR_HEAD);
        assert!(head[..150] == [b'x'; 150] && head[150..] == [b'y'; 50]);
        // The whole body: as it is, trimmed.
        assert_eq!(body_message(b" {\"error\": 1}\n", 14), "{\"error\": 1}");
        // A longer one: the ellipsis, after the last whole character.
        let body = format!("{{\"reason\": \"{}é\"}}", "a".repeat(187));
        let mut head = Vec::new();
        keep_head(&mut head, body.as_bytes());
        assert_eq!(head.len(), 200);
        assert_eq!(head[199], 0xC3); // é's first byte, cut from its second
        let m = body_message(&head, body.len() as u64);
        assert_eq!(m, format!("{{\"reason\": \"{}…", "a".repeat(187)));
        // Cut right after a whole character: it stays.
        assert_eq!(body_message("ab€".as_bytes(), 10), "ab€…");
        assert_eq!(body_message(&"ab€".as_bytes()[..4], 10), "ab…");
        assert_eq!(body_message(&"ab😀".as_bytes()[..5], 10), "ab…");
        assert_eq!(body_message(b"", 10), "…");
        // Invalid bytes inside the kept part still show as U+FFFD.
        assert_eq!(body_message(b"a\xffb", 3), "a\u{fffd}b");
    }
}
