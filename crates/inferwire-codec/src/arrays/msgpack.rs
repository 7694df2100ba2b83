//! msgpack-numpy's array layout: a msgpack map `{nd: true, type: '<f8', kind: '',
//! shape: [2, 3], data: <bin>}` (keys as bytes or strings; `nd: false` is a numpy
//! scalar). Object (`kind 'O'`, pickled) and structured (`kind 'V'`) arrays are refused.
//!
//! Only the msgpack subset this layout uses is read; `data` is sliced, not copied, until
//! it is turned into the tensor's buffer.
use serde_json::{Map, Number, Value};

use super::descr;
use crate::error::{CodecError, Result};
use crate::limits::Limits;
use crate::tensor::Tensor;

/// Decodes a msgpack-numpy array.
pub fn decode(body: &[u8], limits: &Limits) -> Result<Tensor> {
    let mut r = Reader { b: body, i: 0 };
    let n = r.map_len()?.ok_or_else(|| {
        bad("the body is not a msgpack map (msgpack-numpy packs an array as a map with 'nd', 'type', 'shape', 'data')")
    })?;
    let (mut nd, mut kind, mut dtype, mut shape, mut data) = (None, None, None, None, None);
    for _ in 0..n {
        let key = r.text()?.ok_or_else(|| bad("a map key is not a string"))?;
        match key {
            b"nd" => nd = Some(r.boolean()?.ok_or_else(|| bad("'nd' must be true or false"))?),
            b"kind" => kind = Some(r.text()?.ok_or_else(|| bad("'kind' must be a string"))?),
            b"type" => {
                dtype = Some(r.text()?.ok_or_else(|| {
                    bad("'type' must be a type string such as '<f8' (structured arrays are not supported)")
                })?)
            }
            b"shape" => shape = Some(r.int_array(limits)?),
            b"data" => data = Some(r.text()?.ok_or_else(|| bad("'data' must be bytes"))?),
            _ => r.skip(0)?,
        }
    }
    if r.i != body.len() {
        return Err(bad(format!(
            "{} bytes follow the array's map",
            body.len() - r.i
        )));
    }
    let Some(nd) = nd else {
        return Err(bad("no 'nd' key: not a msgpack-numpy array"));
    };
    match kind {
        Some(b"O") => return Err(bad(
            "object arrays (kind 'O') are refused: decoding them means unpickling, which runs code",
        )),
        Some(b"V") => return Err(bad("structured arrays (kind 'V') are not supported")),
        _ => {}
    }
    let dtype = dtype.ok_or_else(|| bad("no 'type' key"))?;
    let dtype = std::str::from_utf8(dtype).map_err(|_| bad("'type' is not UTF-8"))?;
    let descr = descr::parse(dtype).map_err(|e| e.in_field("msgpack type"))?;
    let data = data.ok_or_else(|| bad("no 'data' key"))?;
    let dims = match (nd, shape) {
        (true, Some(s)) => s,
        (true, None) => return Err(bad("no 'shape' key")),
        // A numpy scalar.
        (false, _) => Vec::new(),
    };
    let count = limits
        .element_count(&dims)
        .map_err(|e| e.in_field("msgpack shape"))?;
    let values = descr::elements(data, descr, count, "msgpack data")?;
    Tensor::new(dims.iter().map(|&d| d as usize).collect(), values)
}

/// Writes `t` as msgpack-numpy does (keys as bin, `type` as str, `kind` empty bin).
pub fn encode(t: &Tensor, out: &mut Vec<u8>) -> Result<()> {
    let data = descr::numpy_data(&t.data)?;
    let name = descr::name(data.dtype()).unwrap_or("<f8");
    let bytes = data.to_le_bytes().unwrap_or_default();
    out.reserve(48 + 9 * t.shape.len() + bytes.len());
    out.push(0x85);
    bin(b"nd", out);
    out.push(0xc3);
    bin(b"type", out);
    str_header(name.len(), out);
    out.extend_from_slice(name.as_bytes());
    bin(b"kind", out);
    bin(b"", out);
    bin(b"shape", out);
    array_header(t.shape.len(), out);
    for &d in &t.shape {
        uint(d as u64, out);
    }
    bin(b"data", out);
    bin(&bytes, out);
    Ok(())
}

/// Writes any JSON value as msgpack (a model's dict or string reply).
pub fn encode_value(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Null => out.push(0xc0),
        Value::Bool(b) => out.push(if *b { 0xc3 } else { 0xc2 }),
        Value::Number(n) => number(n, out),
        Value::String(s) => {
            str_header(s.len(), out);
            out.extend_from_slice(s.as_bytes());
        }
        Value::Array(a) => {
            array_header(a.len(), out);
            a.iter().for_each(|x| encode_value(x, out));
        }
        Value::Object(m) => map(m, out),
    }
}

fn map(m: &Map<String, Value>, out: &mut Vec<u8>) {
    match m.len() {
        n @ 0..=15 => out.push(0x80 | n as u8),
        n @ 16..=0xffff => {
            out.push(0xde);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            out.push(0xdf);
            out.extend_from_slice(&(n as u32).to_be_bytes());
        }
    }
    for (k, x) in m {
        str_header(k.len(), out);
        out.extend_from_slice(k.as_bytes());
        encode_value(x, out);
    }
}

fn number(n: &Number, out: &mut Vec<u8>) {
    if let Some(u) = n.as_u64() {
        uint(u, out);
    } else if let Some(i) = n.as_i64() {
        out.push(0xd3);
        out.extend_from_slice(&i.to_be_bytes());
    } else {
        out.push(0xcb);
        out.extend_from_slice(&n.as_f64().unwrap_or(f64::NAN).to_be_bytes());
    }
}

fn uint(u: u64, out: &mut Vec<u8>) {
    match u {
        0..=0x7f => out.push(u as u8),
        0x80..=0xff => out.extend_from_slice(&[0xcc, u as u8]),
        0x100..=0xffff => {
            out.push(0xcd);
            out.extend_from_slice(&(u as u16).to_be_bytes());
        }
        0x1_0000..=0xffff_ffff => {
            out.push(0xce);
            out.extend_from_slice(&(u as u32).to_be_bytes());
        }
        _ => {
            out.push(0xcf);
            out.extend_from_slice(&u.to_be_bytes());
        }
    }
}

/// `bin` family: payloads over 4 GiB cannot occur (the body limit is far below).
fn bin(b: &[u8], out: &mut Vec<u8>) {
    match b.len() {
        n @ 0..=0xff => out.extend_from_slice(&[0xc4, n as u8]),
        n @ 0x100..=0xffff => {
            out.push(0xc5);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            out.push(0xc6);
            out.extend_from_slice(&(n as u32).to_be_bytes());
        }
    }
    out.extend_from_slice(b);
}

fn str_header(n: usize, out: &mut Vec<u8>) {
    match n {
        0..=31 => out.push(0xa0 | n as u8),
        32..=0xff => out.extend_from_slice(&[0xd9, n as u8]),
        0x100..=0xffff => {
            out.push(0xda);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        _ => {
            out.push(0xdb);
            out.extend_from_slice(&(n as u32).to_be_bytes());
        }
    }
}

fn array_header(n: usize, out: &mut Vec<u8>) {
    match n {
        0..=15 => out.push(0x90 | n as u8),
        16..=0xffff => {
            out.push(0xdc);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        _ => {
            out.push(0xdd);
            out.extend_from_slice(&(n as u32).to_be_bytes());
        }
    }
}

#[cold]
fn bad(message: impl Into<String>) -> CodecError {
    CodecError::bad_request(format!("invalid msgpack-numpy body: {}", message.into()))
}

struct Reader<'a> {
    b: &'a [u8],
    i: usize,
}

/// Deepest nesting `skip` follows (unknown keys' values), so a hostile body cannot
/// recurse without bound.
const MAX_SKIP_DEPTH: usize = 32;

impl<'a> Reader<'a> {
    fn byte(&mut self) -> Result<u8> {
        let c = *self.b.get(self.i).ok_or_else(|| bad("truncated"))?;
        self.i += 1;
        Ok(c)
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self.i.checked_add(n).filter(|&e| e <= self.b.len());
        let end = end.ok_or_else(|| {
            bad(format!(
                "a value of {n} bytes runs past the end of the body ({} bytes left)",
                self.b.len() - self.i
            ))
        })?;
        let s = &self.b[self.i..end];
        self.i = end;
        Ok(s)
    }

    fn be(&mut self, n: usize) -> Result<u64> {
        Ok(self
            .take(n)?
            .iter()
            .fold(0u64, |a, &b| (a << 8) | u64::from(b)))
    }

    fn map_len(&mut self) -> Result<Option<usize>> {
        let c = self.byte()?;
        Ok(Some(match c {
            0x80..=0x8f => usize::from(c & 0x0f),
            0xde => self.be(2)? as usize,
            0xdf => self.be(4)? as usize,
            _ => return Ok(None),
        }))
    }

    /// A str or bin value, as bytes; `None` (consumed) for any other type.
    fn text(&mut self) -> Result<Option<&'a [u8]>> {
        let c = self.byte()?;
        let n = match c {
            0xa0..=0xbf => usize::from(c & 0x1f),
            0xc4 | 0xd9 => self.be(1)? as usize,
            0xc5 | 0xda => self.be(2)? as usize,
            0xc6 | 0xdb => self.be(4)? as usize,
            _ => {
                self.i -= 1;
                self.skip(0)?;
                return Ok(None);
            }
        };
        self.take(n).map(Some)
    }

    fn boolean(&mut self) -> Result<Option<bool>> {
        match self.byte()? {
            0xc2 => Ok(Some(false)),
            0xc3 => Ok(Some(true)),
            _ => {
                self.i -= 1;
                self.skip(0)?;
                Ok(None)
            }
        }
    }

    fn int(&mut self) -> Result<i64> {
        let c = self.byte()?;
        Ok(match c {
            0x00..=0x7f => i64::from(c),
            0xe0..=0xff => i64::from(c as i8),
            0xcc => self.be(1)? as i64,
            0xcd => self.be(2)? as i64,
            0xce => self.be(4)? as i64,
            0xcf => i64::try_from(self.be(8)?).unwrap_or(i64::MAX),
            0xd0 => self.be(1)? as u8 as i8 as i64,
            0xd1 => self.be(2)? as u16 as i16 as i64,
            0xd2 => self.be(4)? as u32 as i32 as i64,
            0xd3 => self.be(8)? as i64,
            _ => return Err(bad("'shape' must hold integers")),
        })
    }

    fn int_array(&mut self, limits: &Limits) -> Result<Vec<i64>> {
        let c = self.byte()?;
        let n = match c {
            0x90..=0x9f => usize::from(c & 0x0f),
            0xdc => self.be(2)? as usize,
            0xdd => self.be(4)? as usize,
            _ => return Err(bad("'shape' must be an array of integers")),
        };
        if n > limits.max_depth {
            return Err(bad(format!(
                "'shape' has {n} dimensions; at most {} are accepted",
                limits.max_depth
            )));
        }
        (0..n).map(|_| self.int()).collect()
    }

    /// Steps over one value of any type.
    fn skip(&mut self, depth: usize) -> Result<()> {
        if depth > MAX_SKIP_DEPTH {
            return Err(bad("values nested too deeply"));
        }
        let c = self.byte()?;
        let (bytes, items) = match c {
            0x00..=0x7f | 0xe0..=0xff | 0xc0 | 0xc2 | 0xc3 => (0, 0),
            0x80..=0x8f => (0, 2 * usize::from(c & 0x0f)),
            0x90..=0x9f => (0, usize::from(c & 0x0f)),
            0xa0..=0xbf => (usize::from(c & 0x1f), 0),
            0xc4 | 0xd9 => (self.be(1)? as usize, 0),
            0xc5 | 0xda => (self.be(2)? as usize, 0),
            0xc6 | 0xdb => (self.be(4)? as usize, 0),
            0xc7 => (self.be(1)? as usize + 1, 0),
            0xc8 => (self.be(2)? as usize + 1, 0),
            0xc9 => (self.be(4)? as usize + 1, 0),
            0xca | 0xce | 0xd2 => (4, 0),
            0xcb | 0xcf | 0xd3 => (8, 0),
            0xcc | 0xd0 => (1, 0),
            0xcd | 0xd1 => (2, 0),
            0xd4 => (2, 0),
            0xd5 => (3, 0),
            0xd6 => (5, 0),
            0xd7 => (9, 0),
            0xd8 => (17, 0),
            0xdc => (0, self.be(2)? as usize),
            0xdd => (0, self.be(4)? as usize),
            0xde => (0, 2 * self.be(2)? as usize),
            0xdf => (0, 2 * self.be(4)? as usize),
            0xc1 => return Err(bad("byte 0xc1 is never used in msgpack")),
        };
        self.take(bytes)?;
        for _ in 0..items {
            self.skip(depth + 1)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::TensorData;

    #[test]
    fn round_trip() {
        let l = Limits::default();
        for t in [
            Tensor::new(vec![2, 2], TensorData::I64(vec![1, 2, 3, 4])).unwrap(),
            Tensor::new(vec![], TensorData::F32(vec![1.5])).unwrap(),
            Tensor::new(vec![0, 3], TensorData::U8(vec![])).unwrap(),
            Tensor::new(vec![300], TensorData::Bool(vec![true; 300])).unwrap(),
        ] {
            let mut out = Vec::new();
            encode(&t, &mut out).unwrap();
            assert_eq!(decode(&out, &l).unwrap(), t);
        }
    }

    /// The seed's example, with string keys and a bytes `type` as older packers wrote it.
    #[test]
    fn string_keys_and_bytes_type() {
        let mut b = vec![0x85];
        for (k, v) in [("nd", &[0xc3][..]), ("kind", &[0xa0][..])] {
            str_header(k.len(), &mut b);
            b.extend_from_slice(k.as_bytes());
            b.extend_from_slice(v);
        }
        str_header(4, &mut b);
        b.extend_from_slice(b"type");
        bin(b"<i8", &mut b);
        str_header(5, &mut b);
        b.extend_from_slice(b"shape");
        b.extend_from_slice(&[0x92, 2, 2]);
        str_header(4, &mut b);
        b.extend_from_slice(b"data");
        let data: Vec<u8> = (1i64..=4).flat_map(|x| x.to_le_bytes()).collect();
        bin(&data, &mut b);
        let t = decode(&b, &Limits::default()).unwrap();
        assert_eq!(t.shape, vec![2, 2]);
        assert_eq!(t.data, TensorData::I64(vec![1, 2, 3, 4]));
    }

    #[test]
    fn refusals() {
        let l = Limits::default();
        let t = Tensor::new(vec![2], TensorData::F64(vec![1.0, 2.0])).unwrap();
        let mut good = Vec::new();
        encode(&t, &mut good).unwrap();
        let e = |b: &[u8]| decode(b, &l).unwrap_err().message;
        assert!(e(&good[..good.len() - 3]).contains("past the end"));
        let mut wrong_shape = good.clone();
        let at = wrong_shape.windows(2).position(|w| w == [0x91, 2]).unwrap();
        wrong_shape[at + 1] = 3;
        assert!(e(&wrong_shape).contains("16 bytes"), "{}", e(&wrong_shape));
        let obj = good
            .windows(4)
            .position(|w| w == b"<f8\xc4")
            .map(|i| {
                let mut v = good.clone();
                v[i..i + 3].copy_from_slice(b"|O ");
                v
            })
            .unwrap();
        assert!(e(&obj).contains("dtype"));
        assert!(e(&[0x93, 1, 2, 3]).contains("not a msgpack map"));
        assert!(e(&[0x81, 0xa1, b'x', 0xc0]).contains("'nd'"));
    }
}
