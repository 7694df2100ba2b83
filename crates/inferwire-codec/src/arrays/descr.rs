//! numpy's array-protocol type strings (`'<f8'`, `'|u1'`, `'>i4'`), as `.npy` headers,
//! msgpack-numpy and the JSON array encodings name an array's element type.
use crate::error::{CodecError, Result};
use crate::tensor::{DType, TensorData};

/// An element type and the byte order its data is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Descr {
    pub dtype: DType,
    pub big_endian: bool,
}

impl Descr {
    /// Bytes per element.
    pub fn size(self) -> usize {
        match self.dtype {
            DType::Bool | DType::U8 | DType::I8 => 1,
            DType::U16 | DType::I16 | DType::F16 | DType::BF16 => 2,
            DType::U32 | DType::I32 | DType::F32 => 4,
            DType::U64 | DType::I64 | DType::F64 => 8,
            DType::Bytes => 0,
        }
    }
}

/// Parses a type string (`'<f8'`) or a numpy type name (`'float64'`), refusing what has
/// no place in a numeric tensor, with the reason.
pub fn parse(s: &str) -> Result<Descr> {
    if let Some(dtype) = by_name(s) {
        return Ok(Descr {
            dtype,
            big_endian: false,
        });
    }
    let (order, code) = match s.as_bytes().first() {
        Some(b'<' | b'|' | b'=') => (false, &s[1..]),
        Some(b'>') => (true, &s[1..]),
        _ => (false, s),
    };
    let dtype = match code {
        "b1" | "?" => DType::Bool,
        "u1" | "B" => DType::U8,
        "u2" | "H" => DType::U16,
        "u4" | "I" => DType::U32,
        "u8" | "L" => DType::U64,
        "i1" | "b" => DType::I8,
        "i2" | "h" => DType::I16,
        "i4" | "i" => DType::I32,
        "i8" | "l" | "q" => DType::I64,
        "f2" | "e" => DType::F16,
        "f4" | "f" => DType::F32,
        "f8" | "d" => DType::F64,
        _ => return Err(refused(s)),
    };
    Ok(Descr {
        dtype,
        big_endian: order,
    })
}

fn by_name(s: &str) -> Option<DType> {
    Some(match s {
        "bool" => DType::Bool,
        "uint8" => DType::U8,
        "uint16" => DType::U16,
        "uint32" => DType::U32,
        "uint64" => DType::U64,
        "int8" => DType::I8,
        "int16" => DType::I16,
        "int32" => DType::I32,
        "int64" => DType::I64,
        "float16" => DType::F16,
        "float32" => DType::F32,
        "float64" => DType::F64,
        _ => return None,
    })
}

#[cold]
fn refused(s: &str) -> CodecError {
    let kind = s.trim_start_matches(['<', '>', '|', '=']).chars().next();
    let why = match kind {
        Some('O') => "object arrays are refused: decoding them means unpickling, which runs code",
        Some('V') => "structured (void) arrays are not supported",
        Some('U' | 'S') => "string arrays are not supported here; send bytes or V2 BYTES",
        Some('c') => "complex arrays are not supported",
        Some('M' | 'm') => "datetime arrays are not supported",
        _ => "not a numpy numeric type",
    };
    CodecError::bad_request(format!(
        "dtype {s:?}: {why} (numeric and bool arrays only, e.g. '<f8', '<i8', '|u1', '|b1')"
    ))
}

/// The little-endian type string of `dtype`, as numpy writes it. BF16 has none (numpy
/// has no bfloat16): callers widen it to float32 first, and `None` is returned for it
/// and for byte strings.
pub fn name(dtype: DType) -> Option<&'static str> {
    Some(match dtype {
        DType::Bool => "|b1",
        DType::U8 => "|u1",
        DType::U16 => "<u2",
        DType::U32 => "<u4",
        DType::U64 => "<u8",
        DType::I8 => "|i1",
        DType::I16 => "<i2",
        DType::I32 => "<i4",
        DType::I64 => "<i8",
        DType::F16 => "<f2",
        DType::F32 => "<f4",
        DType::F64 => "<f8",
        DType::BF16 | DType::Bytes => return None,
    })
}

/// Elements from raw bytes in `descr`'s byte order; `raw.len()` must be `count` elements.
pub fn elements(raw: &[u8], descr: Descr, count: usize, what: &str) -> Result<TensorData> {
    let need = count.checked_mul(descr.size());
    if need != Some(raw.len()) {
        return Err(CodecError::bad_request(format!(
            "{what} is {} bytes, but {count} elements of {} need {}",
            raw.len(),
            name(descr.dtype).unwrap_or("?"),
            need.map_or_else(|| "more".to_owned(), |n| n.to_string()),
        )));
    }
    let swapped;
    let raw = if descr.big_endian && descr.size() > 1 {
        let mut v = raw.to_vec();
        for chunk in v.chunks_exact_mut(descr.size()) {
            chunk.reverse();
        }
        swapped = v;
        &swapped[..]
    } else {
        raw
    };
    TensorData::from_le_bytes(raw, descr.dtype)
        .unwrap_or_else(|| Err(CodecError::bad_request("byte strings have no fixed size")))
        .map_err(|e| e.in_field(what))
}

/// The data as numpy can describe it: BF16 widened to float32 (exact); byte strings
/// refused with the reason.
pub fn numpy_data(data: &TensorData) -> Result<std::borrow::Cow<'_, TensorData>> {
    match data {
        TensorData::BF16(v) => Ok(std::borrow::Cow::Owned(TensorData::F32(
            v.iter().map(|x| x.to_f32()).collect(),
        ))),
        TensorData::Bytes(_) => Err(CodecError::bad_output(
            "the model returned strings or bytes, which this encoding cannot carry as an \
             array; return a numeric array, or bytes on their own",
        )),
        other => Ok(std::borrow::Cow::Borrowed(other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_strings() {
        assert_eq!(parse("<f8").unwrap().dtype, DType::F64);
        assert!(parse(">i4").unwrap().big_endian);
        assert_eq!(parse("|b1").unwrap().dtype, DType::Bool);
        assert_eq!(parse("float32").unwrap().dtype, DType::F32);
        let e = parse("|O").unwrap_err().message;
        assert!(e.contains("unpickling"), "{e}");
        assert!(parse("<U5").unwrap_err().message.contains("string"));
        for d in [DType::Bool, DType::U16, DType::I64, DType::F16] {
            assert_eq!(parse(name(d).unwrap()).unwrap().dtype, d);
        }
    }

    #[test]
    fn big_endian_is_swapped() {
        let d = parse(">u2").unwrap();
        assert_eq!(
            elements(&[0, 1, 1, 0], d, 2, "data").unwrap(),
            TensorData::U16(vec![1, 256])
        );
        let e = elements(&[0, 1, 1], d, 2, "data").unwrap_err().message;
        assert!(e.contains("3 bytes"), "{e}");
    }
}
