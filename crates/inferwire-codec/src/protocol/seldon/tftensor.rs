//! TensorFlow `TensorProto` ⇄ `Tensor`, shared by the JSON and protobuf forms of `tftensor`.
use bytes::Bytes;
use half::{bf16, f16};

use crate::error::{CodecError, Result};
use crate::limits::Limits;
use crate::pb::tensorflow::{tensor_shape_proto::Dim, DataType, TensorProto, TensorShapeProto};
use crate::tensor::{DType, Tensor, TensorData};

/// Decodes a `TensorProto`, from `tensor_content` bytes or from its typed `*_val` field.
pub fn to_tensor(mut p: TensorProto, limits: &Limits) -> Result<Tensor> {
    let shape_proto = p.tensor_shape.take().unwrap_or_default();
    if shape_proto.unknown_rank {
        return Err(CodecError::bad_request(
            "tensor_shape: unknown_rank is not allowed",
        ));
    }
    let dims: Vec<i64> = shape_proto.dim.iter().map(|d| d.size).collect();
    let n = limits
        .element_count(&dims)
        .map_err(|e| e.in_field("tensor_shape"))?;
    let shape: Vec<usize> = dims.iter().map(|&d| d as usize).collect();
    let dtype = DataType::try_from(p.dtype)
        .map_err(|_| CodecError::bad_request(format!("dtype: unknown DataType {}", p.dtype)))?;
    let data = if !p.tensor_content.is_empty() {
        from_content(dtype, &p.tensor_content, n)?
    } else {
        from_vals(dtype, p, n)?
    };
    Tensor::new(shape, data)
}

fn from_content(dtype: DataType, content: &[u8], n: usize) -> Result<TensorData> {
    fn pod<T: bytemuck::Pod>(content: &[u8], n: usize, dtype: DataType) -> Result<Vec<T>> {
        let want = n * std::mem::size_of::<T>();
        if content.len() != want {
            return Err(CodecError::bad_request(format!(
                "tensor_content: {} {} values need {want} bytes but {} were given",
                n,
                dtype.as_str_name(),
                content.len()
            )));
        }
        // Copies into an aligned buffer (the body offers no alignment guarantee).
        Ok(bytemuck::pod_collect_to_vec(content))
    }
    Ok(match dtype {
        DataType::DtFloat => TensorData::F32(pod(content, n, dtype)?),
        DataType::DtDouble => TensorData::F64(pod(content, n, dtype)?),
        DataType::DtInt32 => TensorData::I32(pod(content, n, dtype)?),
        DataType::DtUint8 => TensorData::U8(pod(content, n, dtype)?),
        DataType::DtInt16 => TensorData::I16(pod(content, n, dtype)?),
        DataType::DtInt8 => TensorData::I8(pod(content, n, dtype)?),
        DataType::DtInt64 => TensorData::I64(pod(content, n, dtype)?),
        DataType::DtUint16 => TensorData::U16(pod(content, n, dtype)?),
        DataType::DtUint32 => TensorData::U32(pod(content, n, dtype)?),
        DataType::DtUint64 => TensorData::U64(pod(content, n, dtype)?),
        DataType::DtHalf => TensorData::F16(pod(content, n, dtype)?),
        DataType::DtBool => TensorData::Bool(
            pod::<u8>(content, n, dtype)?
                .iter()
                .map(|&b| b != 0)
                .collect(),
        ),
        // numpy has no bfloat16: widen to float32, which holds every bfloat16 exactly.
        DataType::DtBfloat16 => TensorData::F32(
            pod::<u16>(content, n, dtype)?
                .into_iter()
                .map(|b| bf16::from_bits(b).to_f32())
                .collect(),
        ),
        other => return Err(unsupported(other)),
    })
}

/// The most elements a tensor given with fewer values may be filled to.
pub const MAX_FILL: usize = 1 << 20;

/// TensorFlow's rule for typed values: fewer values than elements repeat the last one
/// (a single value fills the tensor); none at all means zeros. A few bytes could so ask
/// for a tensor as large as `--max-elements` (512 MB of int64 by default), which the
/// body limit would never let through whole: filling stops at `MAX_FILL` elements.
fn fill<T: Clone + Default>(mut v: Vec<T>, n: usize, field: &str) -> Result<Vec<T>> {
    if v.len() > n {
        return Err(CodecError::bad_request(format!(
            "{field}: {} values given for a shape of {n} elements",
            v.len()
        )));
    }
    if v.len() < n && n > MAX_FILL {
        return Err(CodecError::bad_request(format!(
            "{field}: {} values for a shape of {n} elements; a tensor is filled from fewer \
             values only up to {MAX_FILL} elements (send them all, or as tensor_content)",
            v.len()
        )));
    }
    let last = v.last().cloned().unwrap_or_default();
    v.resize(n, last);
    Ok(v)
}

/// `fill`, then each value converted to the tensor's type: narrow integers travel widened
/// in `int_val`, halves as the low bits of `half_val`.
fn fill_as<T: Clone + Default, U>(
    v: Vec<T>,
    n: usize,
    field: &str,
    to: impl Fn(T) -> U,
) -> Result<Vec<U>> {
    Ok(fill(v, n, field)?.into_iter().map(to).collect())
}

fn from_vals(dtype: DataType, p: TensorProto, n: usize) -> Result<TensorData> {
    Ok(match dtype {
        DataType::DtFloat => TensorData::F32(fill(p.float_val, n, "float_val")?),
        DataType::DtDouble => TensorData::F64(fill(p.double_val, n, "double_val")?),
        DataType::DtInt32 => TensorData::I32(fill(p.int_val, n, "int_val")?),
        DataType::DtInt16 => TensorData::I16(fill_as(p.int_val, n, "int_val", |x| x as i16)?),
        DataType::DtInt8 => TensorData::I8(fill_as(p.int_val, n, "int_val", |x| x as i8)?),
        DataType::DtUint8 => TensorData::U8(fill_as(p.int_val, n, "int_val", |x| x as u8)?),
        DataType::DtUint16 => TensorData::U16(fill_as(p.int_val, n, "int_val", |x| x as u16)?),
        DataType::DtInt64 => TensorData::I64(fill(p.int64_val, n, "int64_val")?),
        DataType::DtUint32 => TensorData::U32(fill(p.uint32_val, n, "uint32_val")?),
        DataType::DtUint64 => TensorData::U64(fill(p.uint64_val, n, "uint64_val")?),
        DataType::DtBool => TensorData::Bool(fill(p.bool_val, n, "bool_val")?),
        DataType::DtHalf => TensorData::F16(fill_as(p.half_val, n, "half_val", |b| {
            f16::from_bits(b as u16)
        })?),
        DataType::DtBfloat16 => TensorData::F32(fill_as(p.half_val, n, "half_val", |b| {
            bf16::from_bits(b as u16).to_f32()
        })?),
        DataType::DtString => TensorData::Bytes(fill(p.string_val, n, "string_val")?),
        other => return Err(unsupported(other)),
    })
}

#[cold]
fn unsupported(dtype: DataType) -> CodecError {
    CodecError::bad_request(format!(
        "dtype: {} is not supported (use a real or integer dtype, DT_BOOL or DT_STRING)",
        dtype.as_str_name()
    ))
}

pub fn data_type(dtype: DType) -> DataType {
    match dtype {
        DType::Bool => DataType::DtBool,
        DType::U8 => DataType::DtUint8,
        DType::U16 => DataType::DtUint16,
        DType::U32 => DataType::DtUint32,
        DType::U64 => DataType::DtUint64,
        DType::I8 => DataType::DtInt8,
        DType::I16 => DataType::DtInt16,
        DType::I32 => DataType::DtInt32,
        DType::I64 => DataType::DtInt64,
        DType::F16 => DataType::DtHalf,
        DType::BF16 => DataType::DtBfloat16,
        DType::F32 => DataType::DtFloat,
        DType::F64 => DataType::DtDouble,
        DType::Bytes => DataType::DtString,
    }
}

/// Encodes as TensorFlow's `make_tensor_proto` does: one element goes in its typed
/// field, more go in `tensor_content`; strings always go in `string_val`.
pub fn from_tensor(t: &Tensor) -> TensorProto {
    let mut p = TensorProto {
        dtype: data_type(t.dtype()) as i32,
        tensor_shape: Some(TensorShapeProto {
            dim: t
                .shape
                .iter()
                .map(|&d| Dim {
                    size: d as i64,
                    name: String::new(),
                })
                .collect(),
            unknown_rank: false,
        }),
        ..TensorProto::default()
    };
    if t.len() != 1 {
        if let Some(content) = t.data.to_le_bytes() {
            p.tensor_content = Bytes::from(content);
            return p;
        }
    }
    match &t.data {
        TensorData::Bool(v) => p.bool_val = v.clone(),
        TensorData::U8(v) => p.int_val = v.iter().map(|&x| x.into()).collect(),
        TensorData::U16(v) => p.int_val = v.iter().map(|&x| x.into()).collect(),
        TensorData::I8(v) => p.int_val = v.iter().map(|&x| x.into()).collect(),
        TensorData::I16(v) => p.int_val = v.iter().map(|&x| x.into()).collect(),
        TensorData::I32(v) => p.int_val = v.clone(),
        TensorData::U32(v) => p.uint32_val = v.clone(),
        TensorData::U64(v) => p.uint64_val = v.clone(),
        TensorData::I64(v) => p.int64_val = v.clone(),
        TensorData::F16(v) => p.half_val = v.iter().map(|x| i32::from(x.to_bits())).collect(),
        TensorData::BF16(v) => p.half_val = v.iter().map(|x| i32::from(x.to_bits())).collect(),
        TensorData::F32(v) => p.float_val = v.clone(),
        TensorData::F64(v) => p.double_val = v.clone(),
        TensorData::Bytes(v) => p.string_val = v.clone(),
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(dims: &[i64]) -> Option<TensorShapeProto> {
        Some(TensorShapeProto {
            dim: dims
                .iter()
                .map(|&size| Dim {
                    size,
                    name: String::new(),
                })
                .collect(),
            unknown_rank: false,
        })
    }

    #[test]
    fn content_round_trip_every_dtype() {
        let cases = vec![
            TensorData::Bool(vec![true, false]),
            TensorData::U8(vec![1, 255]),
            TensorData::U16(vec![1, 65535]),
            TensorData::U32(vec![1, u32::MAX]),
            TensorData::U64(vec![1, u64::MAX]),
            TensorData::I8(vec![-1, 127]),
            TensorData::I16(vec![-1, 300]),
            TensorData::I32(vec![-1, i32::MAX]),
            TensorData::I64(vec![-1, i64::MAX]),
            TensorData::F16(vec![f16::from_f32(1.5), f16::from_f32(-2.0)]),
            TensorData::F32(vec![1.5, -2.25]),
            TensorData::F64(vec![1.5, f64::MAX]),
            TensorData::Bytes(vec![Bytes::from_static(b"a"), Bytes::from_static(b"bc")]),
        ];
        for data in cases {
            for n in [1usize, 2] {
                let mut d = data.clone();
                with_data_truncate(&mut d, n);
                let t = Tensor::new(vec![n], d).unwrap();
                let back = to_tensor(from_tensor(&t), &Limits::default()).unwrap();
                assert_eq!(back, t);
            }
        }
    }

    fn with_data_truncate(d: &mut TensorData, n: usize) {
        crate::with_data!(d, v => v.truncate(n));
    }

    #[test]
    fn filling_is_bounded() {
        // Found by the tftensor fuzz target: 130 bytes asking for 41 M int64 (328 MB).
        let p = TensorProto {
            dtype: DataType::DtInt64 as i32,
            tensor_shape: shape(&[80, 80, 80, 80]),
            int64_val: vec![80],
            ..Default::default()
        };
        let e = to_tensor(p, &Limits::default()).unwrap_err();
        assert!(
            e.message.contains("filled from fewer values only up to"),
            "{}",
            e.message
        );
    }

    #[test]
    fn single_value_fills_the_shape() {
        let p = TensorProto {
            dtype: DataType::DtFloat as i32,
            tensor_shape: shape(&[2, 2]),
            float_val: vec![3.0],
            ..Default::default()
        };
        let t = to_tensor(p, &Limits::default()).unwrap();
        assert_eq!(t.data, TensorData::F32(vec![3.0; 4]));
    }

    #[test]
    fn bad_inputs() {
        let limits = Limits::default();
        let too_short = TensorProto {
            dtype: DataType::DtInt64 as i32,
            tensor_shape: shape(&[3]),
            tensor_content: Bytes::from_static(&[0; 16]),
            ..Default::default()
        };
        assert!(to_tensor(too_short, &limits)
            .unwrap_err()
            .message
            .contains("need 24 bytes"));
        let unknown = TensorProto {
            dtype: 999,
            ..Default::default()
        };
        assert!(to_tensor(unknown, &limits).is_err());
        let huge = TensorProto {
            dtype: DataType::DtInt64 as i32,
            tensor_shape: shape(&[1 << 40, 1 << 40]),
            ..Default::default()
        };
        assert!(to_tensor(huge, &limits)
            .unwrap_err()
            .message
            .contains("limit"));
        let negative = TensorProto {
            dtype: 1,
            tensor_shape: shape(&[-1]),
            ..Default::default()
        };
        assert!(to_tensor(negative, &limits).is_err());
        let complex = TensorProto {
            dtype: DataType::DtComplex64 as i32,
            ..Default::default()
        };
        assert!(to_tensor(complex, &limits)
            .unwrap_err()
            .message
            .contains("not supported"));
    }
}
