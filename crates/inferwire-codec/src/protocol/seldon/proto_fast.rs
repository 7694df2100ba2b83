//! A one-pass protobuf reader for the common gRPC request: `data` holding a `tensor`, a
//! rectangular numeric `ndarray` or a `tftensor`, read straight into typed buffers.
//! prost would build one `Value` message per `ndarray` element and push packed doubles one
//! at a time. Anything else (other payloads, repeated or out-of-order oneof fields, strings
//! or ragged lists) returns `None` and takes prost's path (`from_pb`), so there is
//! one definition of the protocol's semantics and this reader only has to agree with it.
use bytes::Bytes;
use prost::encoding::decode_varint;
use prost::Message;

use super::from_pb::from_pb;
use super::message::*;
use super::tftensor;
use crate::error::Result;
use crate::limits::Limits;
use crate::pb::seldon::protos as pb;
use crate::pb::tensorflow::TensorProto;
use crate::tensor::{Tensor, TensorData};

/// One field as it sits on the wire; `Len` is a range of the buffer being read.
enum Field {
    Varint(u64),
    Fixed64(u64),
    Len(std::ops::Range<usize>),
    Fixed32,
}

/// Reads the field at `*pos` and moves past it; `None` for anything malformed (prost then
/// reports it) and for groups, which no Seldon message uses.
fn next_field(b: &[u8], pos: &mut usize) -> Option<(u32, Field)> {
    let mut rest = &b[*pos..];
    // prost refuses a key wider than 32 bits (so a tag above 2^29 - 1) and tag 0.
    let key = u32::try_from(decode_varint(&mut rest).ok()?).ok()?;
    let tag = Some(key >> 3).filter(|&t| t != 0)?;
    let field = match key & 7 {
        0 => Field::Varint(decode_varint(&mut rest).ok()?),
        1 => {
            let (v, tail) = rest.split_first_chunk::<8>()?;
            rest = tail;
            Field::Fixed64(u64::from_le_bytes(*v))
        }
        2 => {
            let len = usize::try_from(decode_varint(&mut rest).ok()?).ok()?;
            if len > rest.len() {
                return None;
            }
            let start = b.len() - rest.len();
            rest = &rest[len..];
            Field::Len(start..start + len)
        }
        5 => {
            rest = rest.get(4..)?;
            Field::Fixed32
        }
        _ => return None,
    };
    *pos = b.len() - rest.len();
    Some((tag, field))
}

/// `Some` when this reader decided the message (successfully or with the same error prost's
/// path gives), `None` to let prost decode it.
pub fn decode(buf: &Bytes, limits: &Limits) -> Option<Result<SeldonMessage>> {
    let mut pos = 0;
    let mut data = None;
    // Everything but `data` (status, meta, unknown fields): small, decoded by prost.
    let mut head = Vec::new();
    while pos < buf.len() {
        let start = pos;
        match next_field(buf, &mut pos)? {
            (3, Field::Len(r)) if data.is_none() => data = Some(r),
            // A second `data`, or another payload kind: prost's merge rules decide.
            (3..=7, _) => return None,
            _ => head.extend_from_slice(&buf[start..pos]),
        }
    }
    let data = data?;
    let head = pb::SeldonMessage::decode(head.as_slice()).ok()?;
    let payload = match default_data(buf.slice(data), limits)? {
        Ok(p) => p,
        Err(e) => return Some(Err(e)),
    };
    Some(from_pb(head, limits).map(|mut m| {
        m.payload = payload;
        m
    }))
}

fn default_data(b: Bytes, limits: &Limits) -> Option<Result<Payload>> {
    let mut pos = 0;
    let mut names = Vec::new();
    let mut array = None;
    while pos < b.len() {
        match next_field(&b, &mut pos)? {
            (1, Field::Len(r)) => names.push(String::from_utf8(b[r].to_vec()).ok()?),
            (tag @ 2..=4, Field::Len(r)) if array.is_none() => array = Some((tag, r)),
            (1..=4, _) => return None,
            _ => {}
        }
    }
    let (tag, r) = array?;
    let decoded = match tag {
        2 => tensor(&b[r], limits).map(|t| {
            t.map(|t| (Encoding::Tensor, t))
                .map_err(|e| e.in_field("data.tensor"))
        })?,
        3 => ndarray(&b[r], limits)?.map(|t| (Encoding::Ndarray, t)),
        4 => {
            let proto = TensorProto::decode(b.slice(r)).ok()?;
            tftensor::to_tensor(proto, limits)
                .map(|t| (Encoding::TfTensor, t))
                .map_err(|e| e.in_field("data.tftensor"))
        }
        _ => return None,
    };
    Some(decoded.map(|(encoding, t)| Payload::Data {
        names,
        encoding,
        array: Array::Numeric(t),
    }))
}

/// Seldon's `Tensor { repeated int32 shape = 1; repeated double values = 2; }`, packed or not.
fn tensor(b: &[u8], limits: &Limits) -> Option<Result<Tensor>> {
    let mut pos = 0;
    let mut dims: Vec<i64> = Vec::new();
    let mut values: Vec<f64> = Vec::new();
    while pos < b.len() {
        match next_field(b, &mut pos)? {
            (1, Field::Len(r)) => {
                let mut packed = &b[r];
                while !packed.is_empty() {
                    dims.push(i64::from(decode_varint(&mut packed).ok()? as i32));
                }
            }
            (1, Field::Varint(v)) => dims.push(i64::from(v as i32)),
            (2, Field::Len(r)) => {
                let packed = &b[r];
                if !packed.len().is_multiple_of(8) {
                    return None;
                }
                values.reserve(packed.len() / 8);
                values.extend(
                    packed
                        .chunks_exact(8)
                        .map(|c| f64::from_le_bytes(c.try_into().unwrap_or_default())),
                );
            }
            (2, Field::Fixed64(v)) => values.push(f64::from_bits(v)),
            (1 | 2, _) => return None,
            _ => {}
        }
    }
    Some(shaped_tensor(&dims, TensorData::F64(values), limits))
}

/// A `ListValue` of numbers nested to one depth, every list at a depth the same length:
/// a float64 tensor, as prost's path makes it. `None` for anything else.
fn ndarray(b: &[u8], limits: &Limits) -> Option<Result<Tensor>> {
    let mut grid = Grid {
        shape: Vec::new(),
        leaf_depth: None,
        // A number costs 11 bytes on the wire: a good guess for the capacity.
        values: Vec::with_capacity(b.len() / 11),
        max_depth: limits.max_depth,
    };
    grid.list(b, 0)?;
    let shape: Vec<usize> = grid.shape.iter().map(|d| d.unwrap_or(0)).collect();
    if grid.leaf_depth.is_some_and(|d| d + 1 != shape.len())
        || shape.iter().product::<usize>() != grid.values.len()
    {
        return None;
    }
    let dims: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
    if let Err(e) = limits.element_count(&dims) {
        return Some(Err(e.in_field("data.ndarray")));
    }
    Some(Tensor::new(shape, TensorData::F64(grid.values)))
}

struct Grid {
    /// The length of the lists at each depth, once one has been read.
    shape: Vec<Option<usize>>,
    /// The depth at which numbers were found.
    leaf_depth: Option<usize>,
    values: Vec<f64>,
    max_depth: usize,
}

impl Grid {
    /// `ListValue { repeated Value values = 1; }` at `depth`.
    fn list(&mut self, b: &[u8], depth: usize) -> Option<()> {
        if depth >= self.max_depth {
            return None;
        }
        let mut count = 0;
        let mut pos = 0;
        while pos < b.len() {
            // The common element, `Value { double number_value = 2; }`: key 0x0a, length
            // 9, key 0x11, eight bytes.
            if let Some([0x0a, 0x09, 0x11, x @ ..]) = b.get(pos..pos + 11).and_then(|s| {
                let s: &[u8; 11] = s.try_into().ok()?;
                Some(s)
            }) {
                self.leaf(depth)?;
                self.values.push(f64::from_le_bytes(*x));
                pos += 11;
                count += 1;
                continue;
            }
            match next_field(b, &mut pos)? {
                (1, Field::Len(r)) => self.value(&b[r], depth)?,
                _ => return None,
            }
            count += 1;
        }
        if self.shape.len() <= depth {
            self.shape.resize(depth + 1, None);
        }
        match self.shape[depth] {
            Some(n) if n != count => None,
            _ => {
                self.shape[depth] = Some(count);
                Some(())
            }
        }
    }

    /// One `Value` inside a list at `depth`: a number or a nested list, nothing else.
    fn value(&mut self, b: &[u8], depth: usize) -> Option<()> {
        let mut pos = 0;
        let (tag, field) = next_field(b, &mut pos)?;
        if pos != b.len() {
            return None;
        }
        match (tag, field) {
            (2, Field::Fixed64(bits)) => {
                self.leaf(depth)?;
                self.values.push(f64::from_bits(bits));
                Some(())
            }
            (6, Field::Len(r)) => {
                if self.leaf_depth.is_some_and(|d| d <= depth) {
                    return None;
                }
                self.list(&b[r], depth + 1)
            }
            _ => None,
        }
    }

    fn leaf(&mut self, depth: usize) -> Option<()> {
        (*self.leaf_depth.get_or_insert(depth) == depth).then_some(())
    }
}

#[cfg(test)]
mod tests;
