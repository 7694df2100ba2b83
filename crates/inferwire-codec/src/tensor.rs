//! `Tensor`: a dtype, a shape and one contiguous typed buffer.
//!
//! Buffers are plain `Vec<T>` so that the Python glue can hand them to numpy without a
//! copy (numpy borrows the `Vec` and keeps it alive as the array's base object).
use bytes::Bytes;
use half::{bf16, f16};

/// Element type of a tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    Bool,
    U8,
    U16,
    U32,
    U64,
    I8,
    I16,
    I32,
    I64,
    F16,
    /// bfloat16 (V2 `BF16`); numpy has no such dtype, so models get it widened to float32.
    BF16,
    F32,
    F64,
    /// Variable-length byte strings (TensorFlow `DT_STRING`, V2 `BYTES`).
    Bytes,
}

/// The elements of a tensor, row-major.
#[derive(Debug, Clone, PartialEq)]
pub enum TensorData {
    Bool(Vec<bool>),
    U8(Vec<u8>),
    U16(Vec<u16>),
    U32(Vec<u32>),
    U64(Vec<u64>),
    I8(Vec<i8>),
    I16(Vec<i16>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    F16(Vec<f16>),
    BF16(Vec<bf16>),
    F32(Vec<f32>),
    F64(Vec<f64>),
    Bytes(Vec<Bytes>),
}

/// Runs `$body` with `$v` bound to the inner `Vec` of every variant of `TensorData`.
#[macro_export]
macro_rules! with_data {
    ($data:expr, $v:ident => $body:expr) => {
        match $data {
            $crate::TensorData::Bool($v) => $body,
            $crate::TensorData::U8($v) => $body,
            $crate::TensorData::U16($v) => $body,
            $crate::TensorData::U32($v) => $body,
            $crate::TensorData::U64($v) => $body,
            $crate::TensorData::I8($v) => $body,
            $crate::TensorData::I16($v) => $body,
            $crate::TensorData::I32($v) => $body,
            $crate::TensorData::I64($v) => $body,
            $crate::TensorData::F16($v) => $body,
            $crate::TensorData::BF16($v) => $body,
            $crate::TensorData::F32($v) => $body,
            $crate::TensorData::F64($v) => $body,
            $crate::TensorData::Bytes($v) => $body,
        }
    };
}

impl TensorData {
    pub fn len(&self) -> usize {
        with_data!(self, v => v.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn dtype(&self) -> DType {
        match self {
            TensorData::Bool(_) => DType::Bool,
            TensorData::U8(_) => DType::U8,
            TensorData::U16(_) => DType::U16,
            TensorData::U32(_) => DType::U32,
            TensorData::U64(_) => DType::U64,
            TensorData::I8(_) => DType::I8,
            TensorData::I16(_) => DType::I16,
            TensorData::I32(_) => DType::I32,
            TensorData::I64(_) => DType::I64,
            TensorData::F16(_) => DType::F16,
            TensorData::BF16(_) => DType::BF16,
            TensorData::F32(_) => DType::F32,
            TensorData::F64(_) => DType::F64,
            TensorData::Bytes(_) => DType::Bytes,
        }
    }

    /// Every element as `f64` (what Seldon's `tensor.values` carries), or `None` for bytes.
    pub fn to_f64_vec(&self) -> Option<Vec<f64>> {
        Some(match self {
            TensorData::Bool(v) => v.iter().map(|&x| f64::from(u8::from(x))).collect(),
            TensorData::U8(v) => v.iter().map(|&x| x.into()).collect(),
            TensorData::U16(v) => v.iter().map(|&x| x.into()).collect(),
            TensorData::U32(v) => v.iter().map(|&x| x.into()).collect(),
            TensorData::U64(v) => v.iter().map(|&x| x as f64).collect(),
            TensorData::I8(v) => v.iter().map(|&x| x.into()).collect(),
            TensorData::I16(v) => v.iter().map(|&x| x.into()).collect(),
            TensorData::I32(v) => v.iter().map(|&x| x.into()).collect(),
            TensorData::I64(v) => v.iter().map(|&x| x as f64).collect(),
            TensorData::F16(v) => v.iter().map(|&x| x.to_f64()).collect(),
            TensorData::BF16(v) => v.iter().map(|&x| x.to_f64()).collect(),
            TensorData::F32(v) => v.iter().map(|&x| x.into()).collect(),
            TensorData::F64(v) => v.clone(),
            TensorData::Bytes(_) => return None,
        })
    }

    /// Elements of `dtype` from their little-endian bytes (BOOL: one byte, 0 or 1), copied
    /// once into an aligned buffer: `raw` may start anywhere. `raw`'s length must be a
    /// multiple of the element size (callers check it, to word the error). `None` for
    /// BYTES, which have no fixed size.
    pub fn from_le_bytes(raw: &[u8], dtype: DType) -> Option<crate::Result<Self>> {
        fn v<T: bytemuck::Pod>(raw: &[u8]) -> Vec<T> {
            const _: () = assert!(cfg!(target_endian = "little"));
            bytemuck::pod_collect_to_vec(raw)
        }
        Some(Ok(match dtype {
            DType::Bool => {
                if let Some(bad) = raw.iter().find(|&&b| b > 1) {
                    return Some(Err(crate::CodecError::bad_request(format!(
                        "BOOL elements are one byte, 0 or 1; got {bad}"
                    ))));
                }
                TensorData::Bool(raw.iter().map(|&b| b == 1).collect())
            }
            DType::U8 => TensorData::U8(raw.to_vec()),
            DType::U16 => TensorData::U16(v(raw)),
            DType::U32 => TensorData::U32(v(raw)),
            DType::U64 => TensorData::U64(v(raw)),
            DType::I8 => TensorData::I8(v(raw)),
            DType::I16 => TensorData::I16(v(raw)),
            DType::I32 => TensorData::I32(v(raw)),
            DType::I64 => TensorData::I64(v(raw)),
            DType::F16 => TensorData::F16(v::<f16>(raw)),
            DType::BF16 => TensorData::BF16(v::<bf16>(raw)),
            DType::F32 => TensorData::F32(v(raw)),
            DType::F64 => TensorData::F64(v(raw)),
            DType::Bytes => return None,
        }))
    }

    /// The little-endian element bytes (TensorFlow's `tensor_content`); `None` for bytes.
    pub fn to_le_bytes(&self) -> Option<Vec<u8>> {
        fn le<T: bytemuck::Pod>(v: &[T]) -> Vec<u8> {
            // Every supported target is little-endian; assert rather than silently corrupt.
            const _: () = assert!(cfg!(target_endian = "little"));
            bytemuck::cast_slice(v).to_vec()
        }
        Some(match self {
            TensorData::Bool(v) => v.iter().map(|&b| u8::from(b)).collect(),
            TensorData::U8(v) => v.clone(),
            TensorData::U16(v) => le(v),
            TensorData::U32(v) => le(v),
            TensorData::U64(v) => le(v),
            TensorData::I8(v) => le(v),
            TensorData::I16(v) => le(v),
            TensorData::I32(v) => le(v),
            TensorData::I64(v) => le(v),
            TensorData::F16(v) => le(v),
            TensorData::BF16(v) => le(v),
            TensorData::F32(v) => le(v),
            TensorData::F64(v) => le(v),
            TensorData::Bytes(_) => return None,
        })
    }
}

/// A dense row-major tensor. `shape`'s product always equals `data.len()`.
#[derive(Debug, Clone, PartialEq)]
pub struct Tensor {
    pub shape: Vec<usize>,
    pub data: TensorData,
}

impl Tensor {
    /// Builds a tensor, refusing a shape whose product differs from the number of values.
    pub fn new(shape: Vec<usize>, data: TensorData) -> crate::Result<Self> {
        let n = shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
        if n != Some(data.len()) {
            return Err(crate::CodecError::bad_request(format!(
                "shape {shape:?} needs {} values but {} were given",
                n.map_or_else(|| "too many".to_string(), |n| n.to_string()),
                data.len()
            )));
        }
        Ok(Self { shape, data })
    }

    pub fn dtype(&self) -> DType {
        self.data.dtype()
    }

    pub fn len(&self) -> usize {
        self.data.len()
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }
}
