//! `multipart/form-data` bodies (RFC 7578), as browsers, `requests` and FastAPI
//! `UploadFile` clients send files. Parts are slices of the body, never copied.
use bytes::Bytes;
use memchr::memmem;

use crate::error::{CodecError, Result};

/// Most parts one body may have, and most header bytes per part: a form that needs more
/// is not a model request.
const MAX_PARTS: usize = 256;
const MAX_PART_HEADER: usize = 16 * 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    /// The form field's name.
    pub name: String,
    /// Present for file fields.
    pub filename: Option<String>,
    pub content_type: Option<String>,
    pub body: Bytes,
}

/// The `boundary` parameter of a multipart Content-Type.
pub fn boundary(content_type: &str) -> Result<String> {
    let b = params(content_type)
        .find(|(k, _)| k.eq_ignore_ascii_case("boundary"))
        .map(|(_, v)| v);
    match b {
        Some(b) if !b.is_empty() && b.len() <= 70 => Ok(b),
        _ => Err(bad(
            "the Content-Type has no boundary parameter (of 1 to 70 characters)",
        )),
    }
}

/// Splits a body into its parts.
pub fn parse(body: &Bytes, boundary: &str) -> Result<Vec<Part>> {
    let delimiter = format!("--{boundary}");
    let next_delimiter = memmem::Finder::new(&format!("\r\n--{boundary}")).into_owned();
    // The first delimiter may follow a preamble, which is ignored.
    let first = if body.starts_with(delimiter.as_bytes()) {
        0
    } else {
        match next_delimiter.find(body) {
            Some(i) => i + 2,
            None => {
                return Err(bad(format!(
                    "the boundary {boundary:?} of the Content-Type never occurs in the body"
                )))
            }
        }
    };
    let mut at = first + delimiter.len();
    let mut parts = Vec::new();
    loop {
        let rest = &body[at..];
        if rest.starts_with(b"--") {
            return Ok(parts); // the close delimiter; an epilogue may follow
        }
        // Transport padding, then the line break that ends the delimiter line.
        let line_end = memchr::memmem::find(rest, b"\r\n")
            .ok_or_else(|| bad("the body ends inside a delimiter line"))?;
        if !rest[..line_end].iter().all(|&c| c == b' ' || c == b'\t') {
            return Err(bad("a delimiter is followed by text on its line"));
        }
        let head_start = at + line_end + 2;
        let head_len = memmem::find(&body[head_start..], b"\r\n\r\n").ok_or_else(|| {
            bad(format!(
                "part {} has no blank line after its headers",
                parts.len() + 1
            ))
        })?;
        if head_len > MAX_PART_HEADER {
            return Err(bad(format!(
                "part {} has over {MAX_PART_HEADER} bytes of headers",
                parts.len() + 1
            )));
        }
        let head = std::str::from_utf8(&body[head_start..head_start + head_len])
            .map_err(|_| bad(format!("part {}'s headers are not UTF-8", parts.len() + 1)))?;
        let data_start = head_start + head_len + 4;
        let data_len = next_delimiter.find(&body[data_start..]).ok_or_else(|| {
            bad(format!(
                "part {} is not closed by a boundary line (is the body truncated?)",
                parts.len() + 1
            ))
        })?;
        parts.push(part(
            head,
            body.slice(data_start..data_start + data_len),
            parts.len() + 1,
        )?);
        if parts.len() > MAX_PARTS {
            return Err(bad(format!("more than {MAX_PARTS} parts")));
        }
        at = data_start + data_len + 2 + delimiter.len();
    }
}

fn part(head: &str, body: Bytes, number: usize) -> Result<Part> {
    let (mut name, mut filename, mut content_type) = (None, None, None);
    for line in head.split("\r\n") {
        let Some((key, value)) = line.split_once(':') else {
            return Err(bad(format!(
                "part {number} has a header line without a colon"
            )));
        };
        let value = value.trim();
        if key.eq_ignore_ascii_case("content-disposition") {
            for (k, v) in params(value) {
                match k.to_ascii_lowercase().as_str() {
                    "name" => name = Some(v),
                    "filename" => filename = Some(v),
                    _ => {}
                }
            }
        } else if key.eq_ignore_ascii_case("content-type") {
            content_type = Some(value.to_owned());
        }
    }
    let name = name.ok_or_else(|| {
        bad(format!(
            "part {number} has no Content-Disposition name (form-data; name=\"...\")"
        ))
    })?;
    Ok(Part {
        name,
        filename,
        content_type,
        body,
    })
}

/// The `key=value` parameters after the first `;` of a header value; values may be
/// quoted, with backslash escapes.
fn params(value: &str) -> impl Iterator<Item = (String, String)> + '_ {
    let mut rest = value.split_once(';').map_or("", |(_, r)| r);
    std::iter::from_fn(move || loop {
        rest = rest.trim_start_matches([' ', '\t', ';']);
        if rest.is_empty() {
            return None;
        }
        let eq = rest.find(['=', ';']).unwrap_or(rest.len());
        let key = rest[..eq].trim().to_owned();
        if rest[eq..].starts_with(';') || eq == rest.len() {
            rest = &rest[eq..];
            continue; // a bare flag
        }
        let v = &rest[eq + 1..];
        if let Some(q) = v.strip_prefix('"') {
            let mut out = String::new();
            let mut chars = q.char_indices();
            let mut end = q.len();
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => {
                        if let Some((_, e)) = chars.next() {
                            out.push(e);
                        }
                    }
                    '"' => {
                        end = i + 1;
                        break;
                    }
                    c => out.push(c),
                }
            }
            rest = &q[end.min(q.len())..];
            return Some((key, out));
        }
        let end = v.find(';').unwrap_or(v.len());
        rest = &v[end..];
        return Some((key, v[..end].trim().to_owned()));
    })
}

#[cold]
fn bad(message: impl Into<String>) -> CodecError {
    CodecError::bad_request(format!("invalid multipart body: {}", message.into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CT: &str = "multipart/form-data; boundary=\"XyZ\"";

    fn body(parts: &[(&str, Option<&str>, &[u8])]) -> Bytes {
        let mut b = b"preamble\r\n".to_vec();
        for (name, file, data) in parts {
            b.extend_from_slice(b"--XyZ\r\nContent-Disposition: form-data; name=\"");
            b.extend_from_slice(name.as_bytes());
            b.push(b'"');
            if let Some(f) = file {
                b.extend_from_slice(
                    format!("; filename=\"{f}\"\r\nContent-Type: image/png").as_bytes(),
                );
            }
            b.extend_from_slice(b"\r\n\r\n");
            b.extend_from_slice(data);
            b.extend_from_slice(b"\r\n");
        }
        b.extend_from_slice(b"--XyZ--\r\n");
        Bytes::from(b)
    }

    #[test]
    fn parts() {
        assert_eq!(boundary(CT).unwrap(), "XyZ");
        let b = body(&[
            ("note", None, b"hi"),
            ("file", Some("a b.png"), b"\r\n--Xy\x00"),
        ]);
        let p = parse(&b, "XyZ").unwrap();
        assert_eq!(p.len(), 2);
        assert_eq!((p[0].name.as_str(), &p[0].body[..]), ("note", &b"hi"[..]));
        assert_eq!(p[1].filename.as_deref(), Some("a b.png"));
        assert_eq!(&p[1].body[..], b"\r\n--Xy\x00");
        assert_eq!(p[1].content_type.as_deref(), Some("image/png"));
    }

    #[test]
    fn errors() {
        let e = |b: &[u8]| {
            parse(&Bytes::copy_from_slice(b), "XyZ")
                .unwrap_err()
                .message
        };
        assert!(e(b"nothing here").contains("never occurs"));
        assert!(
            e(b"--XyZ\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\nabc")
                .contains("not closed")
        );
        assert!(
            e(b"--XyZ\r\nContent-Disposition: form-data\r\n\r\nabc\r\n--XyZ--")
                .contains("no Content-Disposition name")
        );
        assert!(boundary("multipart/form-data").is_err());
    }
}
