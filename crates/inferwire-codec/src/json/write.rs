//! Writing JSON numbers and arrays straight from typed buffers.
use crate::tensor::{Tensor, TensorData};

/// Types that know how to write themselves as one JSON value.
pub trait JsonNumber: Copy {
    fn write(self, out: &mut Vec<u8>);
}

macro_rules! int_number {
    ($($t:ty),*) => {$(
        impl JsonNumber for $t {
            #[inline]
            fn write(self, out: &mut Vec<u8>) {
                out.extend_from_slice(itoa::Buffer::new().format(self).as_bytes());
            }
        }
    )*};
}
int_number!(u8, u16, u32, u64, i8, i16, i32, i64);

impl JsonNumber for f64 {
    #[inline]
    fn write(self, out: &mut Vec<u8>) {
        if self.is_finite() {
            out.extend_from_slice(ryu::Buffer::new().format_finite(self).as_bytes());
        } else {
            // As strings (protobuf's JSON mapping), which requests may carry too: JSON
            // has no such numbers, and strict parsers refuse Python's bare `NaN`.
            out.extend_from_slice(if self.is_nan() {
                b"\"NaN\""
            } else if self > 0.0 {
                b"\"Infinity\""
            } else {
                b"\"-Infinity\""
            });
        }
    }
}

impl JsonNumber for f32 {
    #[inline]
    fn write(self, out: &mut Vec<u8>) {
        if self.is_finite() {
            out.extend_from_slice(ryu::Buffer::new().format_finite(self).as_bytes());
        } else {
            f64::from(self).write(out);
        }
    }
}

impl JsonNumber for half::f16 {
    #[inline]
    fn write(self, out: &mut Vec<u8>) {
        self.to_f32().write(out);
    }
}

impl JsonNumber for half::bf16 {
    #[inline]
    fn write(self, out: &mut Vec<u8>) {
        self.to_f32().write(out);
    }
}

impl JsonNumber for bool {
    #[inline]
    fn write(self, out: &mut Vec<u8>) {
        out.extend_from_slice(if self { b"true" } else { b"false" });
    }
}

/// Writes `values` as a flat JSON array.
pub fn flat<T: JsonNumber>(values: &[T], out: &mut Vec<u8>) {
    // Room for typical numbers up front: growing a large buffer copies it each time.
    out.reserve(values.len() * 8 + 2);
    out.push(b'[');
    for (i, &v) in values.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        v.write(out);
    }
    out.push(b']');
}

/// Writes a numeric tensor's elements as one flat JSON array (booleans as `true`/`false`).
/// Returns `false`, writing nothing, for BYTES: they are not numbers.
pub fn flat_data(data: &TensorData, out: &mut Vec<u8>) -> bool {
    match data {
        TensorData::Bytes(_) => return false,
        TensorData::Bool(v) => flat(v, out),
        TensorData::U8(v) => flat(v, out),
        TensorData::U16(v) => flat(v, out),
        TensorData::U32(v) => flat(v, out),
        TensorData::U64(v) => flat(v, out),
        TensorData::I8(v) => flat(v, out),
        TensorData::I16(v) => flat(v, out),
        TensorData::I32(v) => flat(v, out),
        TensorData::I64(v) => flat(v, out),
        TensorData::F16(v) => flat(v, out),
        TensorData::BF16(v) => flat(v, out),
        TensorData::F32(v) => flat(v, out),
        TensorData::F64(v) => flat(v, out),
    }
    true
}

/// Writes `values` as nested JSON arrays of the given shape (Seldon's `ndarray`).
pub fn nested<T: JsonNumber>(shape: &[usize], values: &[T], out: &mut Vec<u8>) {
    match shape {
        [] => match values.first() {
            Some(&v) => v.write(out),
            None => out.extend_from_slice(b"null"),
        },
        [_] => flat(values, out),
        [n, rest @ ..] => {
            let step: usize = rest.iter().product();
            out.push(b'[');
            for i in 0..*n {
                if i > 0 {
                    out.push(b',');
                }
                nested(rest, &values[i * step..(i + 1) * step], out);
            }
            out.push(b']');
        }
    }
}

/// Writes a JSON string with the escapes JSON requires.
pub fn string(s: &str, out: &mut Vec<u8>) {
    // serde_json's escaping is correct and fast; writing to a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, s);
}

/// Writes bytes as a base64 JSON string (protobuf's JSON mapping of `bytes`).
pub fn base64_string(b: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    base64_simd::STANDARD.encode_append(b, out);
    out.push(b'"');
}

/// Writes a tensor as nested arrays; byte strings become JSON strings (lossy UTF-8).
pub fn tensor_nested(t: &Tensor, out: &mut Vec<u8>) {
    match &t.data {
        TensorData::Bytes(v) => {
            let strings: Vec<serde_json::Value> = v
                .iter()
                .map(|b| serde_json::Value::String(String::from_utf8_lossy(b).into_owned()))
                .collect();
            let value = crate::json::value::nest(&t.shape, strings);
            let _ = serde_json::to_writer(&mut *out, &value);
        }
        TensorData::Bool(v) => nested(&t.shape, v, out),
        TensorData::U8(v) => nested(&t.shape, v, out),
        TensorData::U16(v) => nested(&t.shape, v, out),
        TensorData::U32(v) => nested(&t.shape, v, out),
        TensorData::U64(v) => nested(&t.shape, v, out),
        TensorData::I8(v) => nested(&t.shape, v, out),
        TensorData::I16(v) => nested(&t.shape, v, out),
        TensorData::I32(v) => nested(&t.shape, v, out),
        TensorData::I64(v) => nested(&t.shape, v, out),
        TensorData::F16(v) => nested(&t.shape, v, out),
        TensorData::BF16(v) => nested(&t.shape, v, out),
        TensorData::F32(v) => nested(&t.shape, v, out),
        TensorData::F64(v) => nested(&t.shape, v, out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_shapes() {
        let mut out = Vec::new();
        nested(&[2, 2], &[1i64, 2, 3, 4], &mut out);
        assert_eq!(out, b"[[1,2],[3,4]]");
        out.clear();
        nested(&[2, 0], &[] as &[i64], &mut out);
        assert_eq!(out, b"[[],[]]");
        out.clear();
        nested(&[], &[7.5f64], &mut out);
        assert_eq!(out, b"7.5");
    }

    #[test]
    fn non_finite_floats_as_strings() {
        let mut out = Vec::new();
        flat(&[1.0f64, f64::NAN, f64::NEG_INFINITY], &mut out);
        assert_eq!(out, br#"[1.0,"NaN","-Infinity"]"#);
        out.clear();
        flat(&[f32::INFINITY], &mut out);
        assert_eq!(out, br#"["Infinity"]"#);
    }
}
