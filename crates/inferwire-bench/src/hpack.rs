//! HPACK (RFC 7541) for the blocking HTTP/2 client: request headers encoded once as
//! literals that touch no table, and a decoder for response headers with the dynamic
//! table and Huffman strings, since servers index and compress what they send.

/// The static table (RFC 7541 Appendix A), 1-based: names, and the values that have one.
const STATIC: [(&str, &str); 61] = [
    (":authority", ""),
    (":method", "GET"),
    (":method", "POST"),
    (":path", "/"),
    (":path", "/index.html"),
    (":scheme", "http"),
    (":scheme", "https"),
    (":status", "200"),
    (":status", "204"),
    (":status", "206"),
    (":status", "304"),
    (":status", "400"),
    (":status", "404"),
    (":status", "500"),
    ("accept-charset", ""),
    ("accept-encoding", "gzip, deflate"),
    ("accept-language", ""),
    ("accept-ranges", ""),
    ("accept", ""),
    ("access-control-allow-origin", ""),
    ("age", ""),
    ("allow", ""),
    ("authorization", ""),
    ("cache-control", ""),
    ("content-disposition", ""),
    ("content-encoding", ""),
    ("content-language", ""),
    ("content-length", ""),
    ("content-location", ""),
    ("content-range", ""),
    ("content-type", ""),
    ("cookie", ""),
    ("date", ""),
    ("etag", ""),
    ("expect", ""),
    ("expires", ""),
    ("from", ""),
    ("host", ""),
    ("if-match", ""),
    ("if-modified-since", ""),
    ("if-none-match", ""),
    ("if-range", ""),
    ("if-unmodified-since", ""),
    ("last-modified", ""),
    ("link", ""),
    ("location", ""),
    ("max-forwards", ""),
    ("proxy-authenticate", ""),
    ("proxy-authorization", ""),
    ("range", ""),
    ("referer", ""),
    ("refresh", ""),
    ("retry-after", ""),
    ("server", ""),
    ("set-cookie", ""),
    ("strict-transport-security", ""),
    ("transfer-encoding", ""),
    ("user-agent", ""),
    ("vary", ""),
    ("via", ""),
    ("www-authenticate", ""),
];

/// The Huffman code's bit lengths per symbol, 0..=255 and EOS (RFC 7541 Appendix B). The
/// code is canonical: the codes follow from the lengths, shortest first, by symbol.
const HUFFMAN_LENGTHS: [u8; 257] = [
    13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 30, 28,
    28, 28, 28, 28, 28, 28, 28, 28, 6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6, 5, 5,
    5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10, 13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
    7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6, 15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6,
    6, 5, 6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28, 20, 22, 20, 20, 22, 22, 22, 23, 22,
    23, 23, 23, 23, 23, 24, 23, 24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24, 22,
    21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, 21, 21, 22, 21, 23, 22, 23, 23, 20,
    22, 22, 22, 23, 22, 22, 23, 26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, 19,
    21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27, 20, 24, 20, 21, 22, 21, 21, 23, 22,
    22, 25, 25, 24, 24, 26, 23, 26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26, 30,
];

const EOS: u16 = 256;

/// Canonical decoding tables: per length, the first code, how many codes, and where its
/// symbols start in `symbols` (sorted by length, then symbol).
struct Huffman {
    first: [u32; 31],
    count: [u32; 31],
    offset: [u32; 31],
    symbols: [u16; 257],
}

fn huffman() -> &'static Huffman {
    static TABLE: std::sync::OnceLock<Huffman> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let mut h = Huffman {
            first: [0; 31],
            count: [0; 31],
            offset: [0; 31],
            symbols: [0; 257],
        };
        for &l in &HUFFMAN_LENGTHS {
            h.count[l as usize] += 1;
        }
        let (mut code, mut at) = (0u32, 0u32);
        for len in 1..31 {
            h.first[len] = code;
            h.offset[len] = at;
            code = (code + h.count[len]) << 1;
            at += h.count[len];
        }
        let mut next = h.offset;
        for (sym, &l) in HUFFMAN_LENGTHS.iter().enumerate() {
            h.symbols[next[l as usize] as usize] = sym as u16;
            next[l as usize] += 1;
        }
        h
    })
}

fn huffman_decode(data: &[u8]) -> Result<Vec<u8>, String> {
    let h = huffman();
    let mut out = Vec::with_capacity(data.len() * 8 / 5);
    let (mut code, mut len) = (0u32, 0usize);
    for &byte in data {
        for i in (0..8).rev() {
            code = (code << 1) | u32::from((byte >> i) & 1);
            len += 1;
            if len > 30 {
                return Err("HPACK: bad Huffman code".into());
            }
            let k = code.wrapping_sub(h.first[len]);
            if k < h.count[len] {
                let sym = h.symbols[(h.offset[len] + k) as usize];
                if sym == EOS {
                    return Err("HPACK: EOS in a Huffman string".into());
                }
                out.push(sym as u8);
                (code, len) = (0, 0);
            }
        }
    }
    // What is left must be padding: fewer than 8 bits, all ones (the start of EOS).
    if len >= 8 || code != (1 << len) - 1 {
        return Err("HPACK: bad Huffman padding".into());
    }
    Ok(out)
}

/// A prefixed integer (RFC 7541 5.1) from `buf` at `*at`, whose first byte has `bits`
/// bits of it.
fn integer(buf: &[u8], at: &mut usize, bits: u32) -> Result<usize, String> {
    let short = "HPACK: header block ends inside an integer";
    let mask = (1usize << bits) - 1;
    let mut v = *buf.get(*at).ok_or(short)? as usize & mask;
    *at += 1;
    if v < mask {
        return Ok(v);
    }
    let mut shift = 0;
    loop {
        let b = *buf.get(*at).ok_or(short)?;
        *at += 1;
        v += ((b & 0x7f) as usize) << shift;
        if b & 0x80 == 0 {
            return Ok(v);
        }
        shift += 7;
        if shift > 28 {
            return Err("HPACK: integer too large".into());
        }
    }
}

fn string(buf: &[u8], at: &mut usize) -> Result<Vec<u8>, String> {
    let huff = *buf
        .get(*at)
        .ok_or("HPACK: header block ends before a string")?
        & 0x80
        != 0;
    let len = integer(buf, at, 7)?;
    let raw = buf
        .get(*at..*at + len)
        .ok_or("HPACK: header block ends inside a string")?;
    *at += len;
    if huff {
        huffman_decode(raw)
    } else {
        Ok(raw.to_vec())
    }
}

/// The response-side decoder: the dynamic table lives as long as the connection.
pub struct Decoder {
    /// Newest first.
    table: std::collections::VecDeque<(Vec<u8>, Vec<u8>)>,
    size: usize,
    max: usize,
}

impl Default for Decoder {
    fn default() -> Self {
        Self {
            table: Default::default(),
            size: 0,
            max: 4096,
        }
    }
}

impl Decoder {
    /// Decodes a whole header block, calling `each(name, value)` per field.
    pub fn decode(
        &mut self,
        block: &[u8],
        mut each: impl FnMut(&[u8], &[u8]),
    ) -> Result<(), String> {
        let mut at = 0;
        while at < block.len() {
            let b = block[at];
            if b & 0x80 != 0 {
                let i = integer(block, &mut at, 7)?;
                let (n, v) = self.get(i)?;
                each(&n, &v);
            } else if b & 0xe0 == 0x20 {
                let size = integer(block, &mut at, 5)?;
                if size > 4096 {
                    return Err(format!("HPACK: table size {size} above the 4096 allowed"));
                }
                self.max = size;
                self.evict(0);
            } else {
                // Literal: with incremental indexing (01), without (0000) or never (0001).
                let (bits, index) = if b & 0xc0 == 0x40 {
                    (6, true)
                } else {
                    (4, false)
                };
                let i = integer(block, &mut at, bits)?;
                let name = if i == 0 {
                    string(block, &mut at)?
                } else {
                    self.get(i)?.0
                };
                let value = string(block, &mut at)?;
                each(&name, &value);
                if index {
                    self.insert(name, value);
                }
            }
        }
        Ok(())
    }

    fn get(&self, i: usize) -> Result<(Vec<u8>, Vec<u8>), String> {
        match i {
            1..=61 => {
                let (n, v) = STATIC[i - 1];
                Ok((n.as_bytes().to_vec(), v.as_bytes().to_vec()))
            }
            _ => self
                .table
                .get(i.wrapping_sub(62))
                .cloned()
                .ok_or_else(|| format!("HPACK: index {i} is not in the table")),
        }
    }

    fn insert(&mut self, name: Vec<u8>, value: Vec<u8>) {
        let size = name.len() + value.len() + 32;
        self.evict(size);
        if size <= self.max {
            self.size += size;
            self.table.push_front((name, value));
        }
    }

    /// Makes room for `incoming` bytes (dropping everything if it cannot fit).
    fn evict(&mut self, incoming: usize) {
        while self.size + incoming > self.max {
            match self.table.pop_back() {
                Some((n, v)) => self.size -= n.len() + v.len() + 32,
                None => break,
            }
        }
    }
}

/// Request headers as literals without indexing and without Huffman: the block is the same
/// for every request, so it is built once.
pub fn encode(fields: &[(&[u8], &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, value) in fields {
        match STATIC.iter().position(|(n, _)| n.as_bytes() == *name) {
            Some(i) => push_integer(&mut out, 0x00, 4, i + 1),
            None => {
                out.push(0x00);
                push_integer(&mut out, 0x00, 7, name.len());
                out.extend_from_slice(name);
            }
        }
        push_integer(&mut out, 0x00, 7, value.len());
        out.extend_from_slice(value);
    }
    out
}

fn push_integer(out: &mut Vec<u8>, flags: u8, bits: u32, v: usize) {
    let mask = (1usize << bits) - 1;
    if v < mask {
        out.push(flags | v as u8);
        return;
    }
    out.push(flags | mask as u8);
    let mut v = v - mask;
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(d: &mut Decoder, block: &[u8]) -> Vec<(String, String)> {
        let mut out = Vec::new();
        d.decode(block, |n, v| {
            out.push((
                String::from_utf8_lossy(n).into_owned(),
                String::from_utf8_lossy(v).into_owned(),
            ))
        })
        .unwrap();
        out
    }

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn the_rfc_response_examples_with_huffman() {
        // RFC 7541 C.6: three responses on one connection, a 256-byte table.
        let mut d = Decoder {
            max: 256,
            ..Default::default()
        };
        let first = fields(
            &mut d,
            &hex(
                "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0
                  82a6 2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
            ),
        );
        assert_eq!(first[0], (":status".into(), "302".into()));
        assert_eq!(first[1], ("cache-control".into(), "private".into()));
        assert_eq!(first[2].1, "Mon, 21 Oct 2013 20:13:21 GMT");
        assert_eq!(first[3].1, "https://www.example.com");
        let second = fields(&mut d, &hex("4883 640e ff c1 c0 bf"));
        assert_eq!(second[0], (":status".into(), "307".into()));
        assert_eq!(second[3].1, "https://www.example.com");
        assert_eq!(d.size, 222);
    }

    #[test]
    fn our_literals_decode_and_bad_blocks_are_errors() {
        let block = encode(&[
            (b":path", b"/seldon.protos.Seldon/Predict"),
            (b"te", b"trailers"),
            (b"x-long", &[b'v'; 300]),
        ]);
        let got = fields(&mut Decoder::default(), &block);
        assert_eq!(
            got[0],
            (":path".into(), "/seldon.protos.Seldon/Predict".into())
        );
        assert_eq!(got[1], ("te".into(), "trailers".into()));
        assert_eq!(got[2].1.len(), 300);
        assert!(Decoder::default().decode(&[0xbe], |_, _| {}).is_err()); // index 62, empty
        assert!(Decoder::default()
            .decode(&[0x40, 0x85, 0xff], |_, _| {})
            .is_err());
        assert!(huffman_decode(&[0xff, 0xff, 0xff, 0xff]).is_err()); // EOS
    }
}
