//! Random (version 4) UUIDs: the ids a request gets where it brought none (Seldon's
//! `puid`, MLServer's request id).

/// A new random UUID in its text form; empty in the unlikely case the system has no
/// randomness to give.
pub fn v4() -> String {
    let mut b = [0u8; 16];
    if getrandom::fill(&mut b).is_err() {
        return String::new();
    }
    b[6] = (b[6] & 0x0f) | 0x40; // version 4
    b[8] = (b[8] & 0x3f) | 0x80; // RFC 4122 variant
    text(&b)
}

/// 16 bytes in a UUID's text form (8-4-4-4-12 lower-case hex digits), written into one
/// allocation: most requests make an id.
fn text(b: &[u8; 16]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(36);
    for (i, x) in b.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            out.push('-');
        }
        out.push(char::from(HEX[usize::from(x >> 4)]));
        out.push(char::from(HEX[usize::from(x & 0x0f)]));
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn uuids_are_version_4() {
        let a = super::v4();
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "4");
        assert!("89ab".contains(&a[19..20]));
        assert_ne!(a, super::v4());
    }

    #[test]
    fn the_text_form_is_8_4_4_4_12_hex_digits() {
        let b: [u8; 16] = std::array::from_fn(|i| (i as u8) * 17);
        assert_eq!(super::text(&b), "00112233-4455-6677-8899-aabbccddeeff");
    }
}
