//! The `.npy` format (`numpy.save`): a magic string, a version, a header that is a Python
//! dict literal (`{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }`), then the
//! raw elements. Versions 1.0, 2.0 and 3.0 are read; 1.0 is written.
use super::descr::{self, Descr};
use crate::error::{CodecError, Result};
use crate::limits::Limits;
use crate::tensor::Tensor;

const MAGIC: &[u8] = b"\x93NUMPY";

/// Decodes a `.npy` body. A Fortran-ordered array is reordered into row-major order.
pub fn decode(body: &[u8], limits: &Limits) -> Result<Tensor> {
    if !body.starts_with(MAGIC) {
        return Err(bad(
            "the body does not start with the .npy magic string \\x93NUMPY",
        ));
    }
    let (major, minor) = match body.get(6..8) {
        Some(v) => (v[0], v[1]),
        None => return Err(bad("truncated before the version")),
    };
    let (len_bytes, utf8) = match major {
        1 => (2, false),
        2 => (4, false),
        3 => (4, true),
        _ => return Err(bad(format!("unsupported .npy version {major}.{minor}"))),
    };
    let Some(len) = body.get(8..8 + len_bytes) else {
        return Err(bad("truncated before the header length"));
    };
    let header_len = if len_bytes == 2 {
        u16::from_le_bytes([len[0], len[1]]) as usize
    } else {
        u32::from_le_bytes([len[0], len[1], len[2], len[3]]) as usize
    };
    let start = 8 + len_bytes;
    let Some(header) = body.get(start..start + header_len) else {
        return Err(bad(format!(
            "the header says it is {header_len} bytes, but the body ends {} bytes after it starts",
            body.len() - start
        )));
    };
    let header: String = if utf8 {
        std::str::from_utf8(header)
            .map_err(|_| bad("the header is not UTF-8"))?
            .to_owned()
    } else {
        header.iter().map(|&b| b as char).collect() // latin-1
    };
    let h = Header::parse(&header)?;
    let dims: Vec<i64> = h.shape.iter().map(|&d| d as i64).collect();
    let count = limits
        .element_count(&dims)
        .map_err(|e| e.in_field("npy shape"))?;
    let raw = &body[start + header_len..];
    let data = if h.fortran && h.shape.len() > 1 {
        let expected = count.saturating_mul(h.descr.size());
        if raw.len() != expected {
            // Worded by `elements`.
            descr::elements(raw, h.descr, count, "npy data")?;
        }
        let c_order = fortran_to_c(raw, &h.shape, h.descr.size());
        descr::elements(&c_order, h.descr, count, "npy data")?
    } else {
        descr::elements(raw, h.descr, count, "npy data")?
    };
    Tensor::new(h.shape, data)
}

/// Writes `t` as a version 1.0 `.npy` file.
pub fn encode(t: &Tensor, out: &mut Vec<u8>) -> Result<()> {
    let data = descr::numpy_data(&t.data)?;
    let name = descr::name(data.dtype()).unwrap_or("<f8");
    let mut header = format!("{{'descr': '{name}', 'fortran_order': False, 'shape': (");
    for (i, d) in t.shape.iter().enumerate() {
        if i > 0 {
            header.push_str(", ");
        }
        header.push_str(&d.to_string());
    }
    if t.shape.len() == 1 {
        header.push(',');
    }
    header.push_str("), }");
    // numpy pads the header with spaces so the data starts 64-byte aligned.
    let unpadded = MAGIC.len() + 2 + 2 + header.len() + 1;
    let pad = (64 - unpadded % 64) % 64;
    header.extend(std::iter::repeat_n(' ', pad));
    header.push('\n');
    let bytes = data.to_le_bytes().unwrap_or_default();
    out.reserve(10 + header.len() + bytes.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(&bytes);
    Ok(())
}

#[cold]
fn bad(message: impl Into<String>) -> CodecError {
    CodecError::bad_request(format!("invalid .npy body: {}", message.into()))
}

struct Header {
    descr: Descr,
    fortran: bool,
    shape: Vec<usize>,
}

impl Header {
    /// Reads the dict literal numpy writes. Only the three keys numpy defines are
    /// accepted, each once; values are a quoted string, True/False, a tuple of integers.
    fn parse(s: &str) -> Result<Header> {
        let mut p = Literal {
            b: s.as_bytes(),
            i: 0,
        };
        let (mut descr, mut fortran, mut shape) = (None, None, None);
        p.expect(b'{')?;
        loop {
            p.ws();
            if p.eat(b'}') {
                break;
            }
            let key = p.string()?;
            p.ws();
            p.expect(b':')?;
            p.ws();
            match key.as_str() {
                "descr" if descr.is_none() => {
                    if p.peek() == Some(b'[') {
                        return Err(bad(
                            "structured dtypes (a list 'descr') are not supported: send one \
                             numeric dtype",
                        ));
                    }
                    descr = Some(descr::parse(&p.string()?).map_err(|e| e.in_field("npy descr"))?);
                }
                "fortran_order" if fortran.is_none() => fortran = Some(p.boolean()?),
                "shape" if shape.is_none() => shape = Some(p.tuple()?),
                other => return Err(bad(format!("unexpected header key {other:?}"))),
            }
            p.ws();
            if !p.eat(b',') {
                p.ws();
                p.expect(b'}')?;
                break;
            }
        }
        match (descr, fortran, shape) {
            (Some(descr), Some(fortran), Some(shape)) => Ok(Header {
                descr,
                fortran,
                shape,
            }),
            _ => Err(bad("the header needs 'descr', 'fortran_order' and 'shape'")),
        }
    }
}

struct Literal<'a> {
    b: &'a [u8],
    i: usize,
}

impl Literal<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn ws(&mut self) {
        while self.peek().is_some_and(|c| c.is_ascii_whitespace()) {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        let hit = self.peek() == Some(c);
        self.i += usize::from(hit);
        hit
    }

    fn expect(&mut self, c: u8) -> Result<()> {
        if self.eat(c) {
            return Ok(());
        }
        Err(bad(format!(
            "header: expected {:?} at byte {}",
            c as char, self.i
        )))
    }

    fn string(&mut self) -> Result<String> {
        let q = match self.peek() {
            Some(q @ (b'\'' | b'"')) => q,
            _ => return Err(bad(format!("header: expected a string at byte {}", self.i))),
        };
        let start = self.i + 1;
        let len = self.b[start..]
            .iter()
            .position(|&c| c == q)
            .ok_or_else(|| bad("header: unterminated string"))?;
        self.i = start + len + 1;
        Ok(String::from_utf8_lossy(&self.b[start..start + len]).into_owned())
    }

    fn boolean(&mut self) -> Result<bool> {
        for (word, v) in [(&b"True"[..], true), (&b"False"[..], false)] {
            if self.b[self.i..].starts_with(word) {
                self.i += word.len();
                return Ok(v);
            }
        }
        Err(bad("header: 'fortran_order' must be True or False"))
    }

    fn tuple(&mut self) -> Result<Vec<usize>> {
        self.expect(b'(')?;
        let mut dims = Vec::new();
        loop {
            self.ws();
            if self.eat(b')') {
                return Ok(dims);
            }
            let start = self.i;
            while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                self.i += 1;
            }
            let digits = std::str::from_utf8(&self.b[start..self.i]).unwrap_or("");
            let d = digits
                .parse::<usize>()
                .map_err(|_| bad("header: 'shape' must be a tuple of non-negative integers"))?;
            dims.push(d);
            self.ws();
            if !self.eat(b',') {
                self.ws();
                self.expect(b')')?;
                return Ok(dims);
            }
        }
    }
}

/// Column-major element bytes to row-major: element (i0, i1, ...) sits at
/// i0 + d0·(i1 + d1·(i2 + ...)) in the input.
fn fortran_to_c(raw: &[u8], shape: &[usize], size: usize) -> Vec<u8> {
    let count: usize = shape.iter().product();
    let mut strides = Vec::with_capacity(shape.len());
    let mut s = 1;
    for &d in shape {
        strides.push(s);
        s *= d;
    }
    let mut out = Vec::with_capacity(raw.len());
    let mut index = vec![0usize; shape.len()];
    let mut offset = 0usize;
    for _ in 0..count {
        out.extend_from_slice(&raw[offset * size..(offset + 1) * size]);
        // Advance the row-major multi-index, keeping the column-major offset in step.
        for axis in (0..shape.len()).rev() {
            index[axis] += 1;
            offset += strides[axis];
            if index[axis] < shape[axis] {
                break;
            }
            offset -= strides[axis] * shape[axis];
            index[axis] = 0;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::TensorData;

    fn npy(header: &str, data: &[u8]) -> Vec<u8> {
        let mut v = MAGIC.to_vec();
        v.extend_from_slice(&[1, 0]);
        v.extend_from_slice(&(header.len() as u16).to_le_bytes());
        v.extend_from_slice(header.as_bytes());
        v.extend_from_slice(data);
        v
    }

    #[test]
    fn round_trip() {
        let t = Tensor::new(vec![2, 3], TensorData::I32((0..6).collect())).unwrap();
        let mut out = Vec::new();
        encode(&t, &mut out).unwrap();
        assert_eq!(out.len() % 64, 24); // 64-byte header + 24 data bytes
        assert_eq!(decode(&out, &Limits::default()).unwrap(), t);
        let scalar = Tensor::new(vec![], TensorData::F64(vec![2.5])).unwrap();
        out.clear();
        encode(&scalar, &mut out).unwrap();
        assert!(std::str::from_utf8(&out[10..74])
            .unwrap()
            .contains("'shape': ()"));
        assert_eq!(decode(&out, &Limits::default()).unwrap(), scalar);
    }

    #[test]
    fn fortran_order_is_reordered() {
        // [[1, 2, 3], [4, 5, 6]] stored column by column.
        let data: Vec<u8> = [1u16, 4, 2, 5, 3, 6]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let b = npy(
            "{'descr': '<u2', 'fortran_order': True, 'shape': (2, 3), }\n",
            &data,
        );
        let t = decode(&b, &Limits::default()).unwrap();
        assert_eq!(t.data, TensorData::U16(vec![1, 2, 3, 4, 5, 6]));
    }

    #[test]
    fn errors_name_the_problem() {
        let l = Limits::default();
        let h = "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }\n";
        let e = |b: &[u8]| decode(b, &l).unwrap_err().message;
        assert!(e(b"hello").contains("magic"));
        assert!(e(&npy(h, &[0; 8])).contains("8 bytes"));
        let truncated = &npy(h, &[])[..20];
        assert!(e(truncated).contains("header says"), "{}", e(truncated));
        assert!(e(&npy(
            "{'descr': '|O', 'fortran_order': False, 'shape': (1,), }",
            &[]
        ))
        .contains("unpickling"));
        assert!(e(&npy("{'descr': '<f8', 'shape': (1,), }", &[0; 8])).contains("needs"));
        assert!(e(&npy(
            "{'descr': '<f8', 'fortran_order': False, 'shape': (-1,), }",
            &[]
        ))
        .contains("non-negative"));
        let huge = "{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999,), }";
        assert!(e(&npy(huge, &[])).contains("limit"));
    }
}
