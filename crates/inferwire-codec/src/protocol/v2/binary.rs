//! Tensor contents as raw bytes, as the HTTP binary extension and gRPC's
//! `raw_input_contents` / `raw_output_contents` carry them: elements little-endian, BOOL
//! one byte each, BYTES each as a 4-byte little-endian length and then its bytes.
use crate::error::{Cause, CodecError, Result};
use crate::tensor::{DType, Tensor, TensorData};
use bytes::Bytes;

use super::datatype_name;

/// Bytes per element, `None` for BYTES (variable).
pub fn element_size(d: DType) -> Option<usize> {
    Some(match d {
        DType::Bool | DType::U8 | DType::I8 => 1,
        DType::U16 | DType::I16 | DType::F16 | DType::BF16 => 2,
        DType::U32 | DType::I32 | DType::F32 => 4,
        DType::U64 | DType::I64 | DType::F64 => 8,
        DType::Bytes => return None,
    })
}

/// The raw form of `data`.
pub fn to_bytes(data: &TensorData) -> Vec<u8> {
    match data {
        TensorData::Bytes(items) => {
            let mut out = Vec::with_capacity(items.iter().map(|b| b.len() + 4).sum());
            for b in items {
                out.extend_from_slice(&(b.len() as u32).to_le_bytes());
                out.extend_from_slice(b);
            }
            out
        }
        other => other.to_le_bytes().unwrap_or_default(),
    }
}

/// The raw form of `data`, taking it: fixed-size elements become `Bytes` over the
/// tensor's own buffer, not a copy (an 800 KB output is one copy fewer on its way out).
pub fn into_bytes(data: TensorData) -> Bytes {
    // Every supported target is little-endian, so the buffer is already the wire form.
    const _: () = assert!(cfg!(target_endian = "little"));
    struct Le<T>(Vec<T>);
    impl<T: bytemuck::Pod> AsRef<[u8]> for Le<T> {
        fn as_ref(&self) -> &[u8] {
            bytemuck::cast_slice(&self.0)
        }
    }
    fn owned<T: bytemuck::Pod + Send>(v: Vec<T>) -> Bytes {
        Bytes::from_owner(Le(v))
    }
    match data {
        TensorData::U8(v) => Bytes::from(v),
        TensorData::U16(v) => owned(v),
        TensorData::U32(v) => owned(v),
        TensorData::U64(v) => owned(v),
        TensorData::I8(v) => owned(v),
        TensorData::I16(v) => owned(v),
        TensorData::I32(v) => owned(v),
        TensorData::I64(v) => owned(v),
        TensorData::F16(v) => owned(v),
        TensorData::BF16(v) => owned(v),
        TensorData::F32(v) => owned(v),
        TensorData::F64(v) => owned(v),
        other @ (TensorData::Bool(_) | TensorData::Bytes(_)) => Bytes::from(to_bytes(&other)),
    }
}

/// A tensor of `dtype` and `shape` (its element count already checked against the
/// limits) from `raw`. `field` names the input in errors.
pub fn from_bytes(raw: Bytes, dtype: DType, shape: Vec<usize>, field: &str) -> Result<Tensor> {
    let count: usize = shape.iter().product();
    let data = match element_size(dtype) {
        None => TensorData::Bytes(split_bytes(raw, count, field)?),
        Some(size) => {
            if raw.len() != count * size {
                return Err(CodecError::bad_request(format!(
                    "{field}: {} bytes of data do not hold {count} {} elements ({} bytes)",
                    raw.len(),
                    datatype_name(dtype),
                    count * size
                ))
                .because(Cause::DataSize {
                    input: String::new(),
                    expected: count * size,
                    got: raw.len(),
                }));
            }
            match TensorData::from_le_bytes(&raw, dtype) {
                Some(data) => data.map_err(|e| e.in_field(field))?,
                None => unreachable!("BYTES has no fixed element size"),
            }
        }
    };
    Tensor::new(shape, data)
}

/// BYTES elements: each a 4-byte little-endian length and that many bytes. The elements
/// are slices of `raw`, not copies.
fn split_bytes(raw: Bytes, count: usize, field: &str) -> Result<Vec<Bytes>> {
    let mut out = Vec::with_capacity(count.min(raw.len() / 4 + 1));
    let mut at = 0usize;
    while at < raw.len() {
        let Some(len) = raw.get(at..at + 4) else {
            return Err(CodecError::bad_request(format!(
                "{field}: BYTES element {} starts with {} bytes where a 4-byte length is needed",
                out.len(),
                raw.len() - at
            )));
        };
        let len = u32::from_le_bytes([len[0], len[1], len[2], len[3]]) as usize;
        at += 4;
        if len > raw.len() - at {
            return Err(CodecError::bad_request(format!(
                "{field}: BYTES element {} says it has {len} bytes but only {} remain",
                out.len(),
                raw.len() - at
            )));
        }
        out.push(raw.slice(at..at + len));
        at += len;
    }
    if out.len() != count {
        return Err(CodecError::bad_request(format!(
            "{field}: the shape needs {count} BYTES elements but the data holds {}",
            out.len()
        )));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::{bf16, f16};

    #[test]
    fn round_trips() {
        let cases = [
            TensorData::Bool(vec![true, false]),
            TensorData::I64(vec![-1, 2]),
            TensorData::F16(vec![f16::from_f32(1.5), f16::from_f32(-2.0)]),
            TensorData::BF16(vec![bf16::from_f32(1.5), bf16::from_f32(3.0)]),
            TensorData::Bytes(vec![Bytes::from_static(b"ab"), Bytes::new()]),
        ];
        for data in cases {
            let raw = Bytes::from(to_bytes(&data));
            assert_eq!(into_bytes(data.clone()), raw);
            let t = from_bytes(raw, data.dtype(), vec![2], "inputs[0]").unwrap();
            assert_eq!(t.data, data);
        }
    }

    #[test]
    fn bad_lengths_name_the_input() {
        let e = from_bytes(
            Bytes::from_static(&[0; 6]),
            DType::F32,
            vec![2],
            "inputs[1]",
        );
        assert!(e.unwrap_err().message.starts_with("inputs[1]: 6 bytes"));
        let overrun = Bytes::from(vec![9, 0, 0, 0, b'x']);
        let e = from_bytes(overrun, DType::Bytes, vec![1], "inputs[0]").unwrap_err();
        assert!(
            e.message.contains("says it has 9 bytes but only 1 remain"),
            "{e:?}"
        );
        let e = from_bytes(Bytes::from_static(&[2]), DType::Bool, vec![1], "x").unwrap_err();
        assert!(e.message.contains("0 or 1"));
        let short = Bytes::from(vec![1, 0, 0, 0, b'a']);
        let e = from_bytes(short, DType::Bytes, vec![2], "x").unwrap_err();
        assert!(e
            .message
            .contains("needs 2 BYTES elements but the data holds 1"));
    }
}
