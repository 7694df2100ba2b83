//! `Content-Encoding` on REST request bodies: `gzip` and `deflate` are inflated,
//! `identity` passes, anything else (a chain included) is 415 before the body is read.
//! The inflated size is checked against `max_body_bytes` while inflating, so a small bomb
//! never grows past the limit, and its bytes are charged to the body budget as they come.
use std::io::Read;

use bytes::Bytes;
use flate2::read::{DeflateDecoder, MultiGzDecoder, ZlibDecoder};
use http::{header, HeaderMap};

use crate::body_budget::Charge;
use crate::error::{Kind, ServeError};

/// What `Content-Encoding` values are taken, for messages.
pub const SUPPORTED: &str = "gzip, deflate or identity";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coding {
    Identity,
    Gzip,
    Deflate,
}

impl Coding {
    fn name(self) -> &'static str {
        match self {
            Coding::Identity => "identity",
            Coding::Gzip => "gzip",
            Coding::Deflate => "deflate",
        }
    }
}

/// The body's coding from every `Content-Encoding` header (a list; `identity` entries
/// change nothing). Two codings applied one after the other are refused: no client
/// needs them, and each would multiply a bomb.
pub fn of(headers: &HeaderMap) -> Result<Coding, ServeError> {
    let mut found = Coding::Identity;
    for value in headers.get_all(header::CONTENT_ENCODING) {
        let text = value
            .to_str()
            .map_err(|_| unsupported(&String::from_utf8_lossy(value.as_bytes())))?;
        for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let coding = match item.to_ascii_lowercase().as_str() {
                "identity" => continue,
                "gzip" | "x-gzip" => Coding::Gzip,
                "deflate" => Coding::Deflate,
                _ => return Err(unsupported(text)),
            };
            if found != Coding::Identity {
                return Err(unsupported(text));
            }
            found = coding;
        }
    }
    Ok(found)
}

#[cold]
fn unsupported(value: &str) -> ServeError {
    ServeError::new(
        Kind::UnsupportedMedia,
        format!("Content-Encoding {value:?} is not supported: send {SUPPORTED} (one coding)"),
    )
}

/// Inflates `data`, refusing (413) an inflated body over `limit` bytes before inflating
/// past it. Each chunk is charged to `charge` before it is kept.
pub fn inflate(
    coding: Coding,
    data: &[u8],
    limit: usize,
    charge: &mut Charge,
) -> Result<Bytes, ServeError> {
    let mut reader: Box<dyn Read + '_> = match coding {
        Coding::Identity => return Ok(Bytes::copy_from_slice(data)),
        Coding::Gzip => Box::new(MultiGzDecoder::new(data)),
        // HTTP's "deflate" is the zlib format, but some clients send raw deflate.
        Coding::Deflate if is_zlib(data) => Box::new(ZlibDecoder::new(data)),
        Coding::Deflate => Box::new(DeflateDecoder::new(data)),
    };
    const CHUNK: usize = 256 * 1024;
    // Room for a typical ratio up front; a bomb grows the buffer only as it inflates.
    // One allocation up front, so that growing never copies: gzip's trailer states the
    // inflated size (a hint only: it is not trusted past `limit`); for deflate, a guess.
    let guess = match coding {
        Coding::Gzip if data.len() >= 18 => gzip_size(data).saturating_add(1),
        _ => data.len().saturating_mul(4).max(CHUNK),
    };
    let mut out = Vec::with_capacity(guess.min(limit.saturating_add(1)));
    loop {
        let start = out.len();
        // One byte more than the limit allows tells "over the limit".
        let room = (limit - start).min(CHUNK) + 1;
        charge.grow(room)?;
        out.resize(start + room, 0);
        let n = read_some(&mut reader, &mut out[start..]).map_err(|e| {
            ServeError::new(
                Kind::BadRequest,
                format!(
                    "the request body is not valid {} (Content-Encoding): {e}",
                    coding.name()
                ),
            )
        })?;
        out.truncate(start + n);
        charge.shrink_to(charge.held() - (room - n));
        if out.len() > limit {
            return Err(ServeError::new(
                Kind::TooLarge,
                format!(
                    "the request body inflates (Content-Encoding: {}) to more than the limit \
                     of {limit} bytes (see --max-body-bytes)",
                    coding.name()
                ),
            ));
        }
        if n < room {
            return Ok(out.into());
        }
    }
}

/// Fills `buf` unless the stream ends first; the bytes read.
fn read_some(reader: &mut dyn Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match reader.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// The inflated size a gzip member's trailer states (ISIZE: the size modulo 2^32).
fn gzip_size(data: &[u8]) -> usize {
    let tail: [u8; 4] = data[data.len() - 4..].try_into().unwrap_or_default();
    u32::from_le_bytes(tail) as usize
}

/// A zlib header (RFC 1950): deflate method, a window of at most 32 KiB, and a check
/// value making the first two bytes a multiple of 31.
fn is_zlib(data: &[u8]) -> bool {
    match data {
        [cmf, flg, ..] => {
            cmf & 0x0f == 8 && cmf >> 4 <= 7 && (u16::from(*cmf) << 8 | u16::from(*flg)) % 31 == 0
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use flate2::write::{DeflateEncoder, GzEncoder, ZlibEncoder};
    use flate2::Compression;
    use http::HeaderValue;

    use super::*;
    use crate::body_budget::BodyBudget;
    use crate::metrics::Metrics;

    fn headers(values: &[&'static str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append(header::CONTENT_ENCODING, HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn codings() {
        assert_eq!(of(&headers(&[])).unwrap(), Coding::Identity);
        assert_eq!(of(&headers(&["GZIP"])).unwrap(), Coding::Gzip);
        assert_eq!(
            of(&headers(&["identity, deflate"])).unwrap(),
            Coding::Deflate
        );
        for bad in [
            &["br"][..],
            &["gzip, br"],
            &["gzip", "gzip"],
            &["zstd"],
            &["compress"],
        ] {
            let e = of(&headers(bad)).unwrap_err();
            assert_eq!(e.kind, Kind::UnsupportedMedia);
            assert!(e.message.contains(SUPPORTED), "{e}");
        }
    }

    fn budget() -> std::sync::Arc<BodyBudget> {
        BodyBudget::new(1 << 30, Metrics::shared().expect("an anonymous mapping"))
    }

    #[test]
    fn inflates_each_coding_within_the_limit() {
        let body: Vec<u8> = (0..300_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        let mut gz = GzEncoder::new(Vec::new(), Compression::fast());
        gz.write_all(&body).unwrap();
        let mut zlib = ZlibEncoder::new(Vec::new(), Compression::fast());
        zlib.write_all(&body).unwrap();
        let mut raw = DeflateEncoder::new(Vec::new(), Compression::fast());
        raw.write_all(&body).unwrap();
        let b = budget();
        for (coding, data) in [
            (Coding::Gzip, gz.finish().unwrap()),
            (Coding::Deflate, zlib.finish().unwrap()),
            (Coding::Deflate, raw.finish().unwrap()),
        ] {
            let mut charge = b.charge(0).unwrap();
            let out = inflate(coding, &data, body.len(), &mut charge).unwrap();
            assert_eq!(&out[..], &body[..]);
            assert_eq!(charge.held(), body.len());
            let e = inflate(coding, &data, body.len() - 1, &mut b.charge(0).unwrap()).unwrap_err();
            assert_eq!(e.kind, Kind::TooLarge);
            assert!(e.message.contains("--max-body-bytes"), "{e}");
        }
        assert_eq!(b.in_use(), 0);
        let e = inflate(Coding::Gzip, b"not gzip", 100, &mut b.charge(0).unwrap()).unwrap_err();
        assert_eq!(e.kind, Kind::BadRequest);
    }

    #[test]
    fn a_bomb_stops_at_the_limit() {
        let mut gz = GzEncoder::new(Vec::new(), Compression::best());
        gz.write_all(&vec![0u8; 16 << 20]).unwrap();
        let bomb = gz.finish().unwrap();
        let b = budget();
        let mut charge = b.charge(0).unwrap();
        let e = inflate(Coding::Gzip, &bomb, 1 << 20, &mut charge).unwrap_err();
        assert_eq!(e.kind, Kind::TooLarge);
        assert!(charge.held() <= (1 << 20) + 1);
    }
}
