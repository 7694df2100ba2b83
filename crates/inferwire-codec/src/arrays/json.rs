//! Arrays as small JSON documents, as numpy RPC clients send them:
//! a list, `{"data": [[1, 2], [3, 4]], "dtype": "<i8"}`, or a base64 buffer,
//! `{"buffer": "AQAA...", "dtype": "<i8", "shape": [2, 2]}`.
use serde::Deserialize;

use super::descr;
use crate::error::{CodecError, Result};
use crate::json::{numbers, scan, write};
use crate::limits::Limits;
use crate::tensor::{DType, Tensor, TensorData};

/// Which of the two layouts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    List,
    Base64,
}

impl Layout {
    pub fn name(self) -> &'static str {
        match self {
            Layout::List => "json-list",
            Layout::Base64 => "json-base64",
        }
    }
}

/// Keys that make a body a SeldonMessage.
const SELDON_KEYS: &[&str] = &[
    "data",
    "binData",
    "bin_data",
    "strData",
    "str_data",
    "jsonData",
    "json_data",
    "customData",
    "custom_data",
    "meta",
    "status",
];

/// What a JSON request body is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// A SeldonMessage (also anything malformed: its decoder words the error).
    Seldon,
    /// One of the array layouts.
    Array(Layout),
    /// A JSON object that is neither: handed to the model as it is (like `jsonData`).
    Plain,
}

/// Tells the layouts apart by their top-level keys: `data` holding a list (Seldon's
/// `data` is an object) is the list layout; `buffer` with only `dtype`/`shape` beside it
/// is the base64 layout; an object with none of Seldon's keys is plain JSON.
pub fn classify(body: &[u8]) -> Shape {
    let mut keys: Vec<(String, u8)> = Vec::new();
    let start = scan::ws(body, 0);
    let end = scan::object(body, start, |key, at| {
        keys.push((key.to_owned(), body.get(at).copied().unwrap_or(0)));
        scan::skip_value(body, at)
    });
    if end.is_none_or(|e| scan::ws(body, e) != body.len()) || keys.is_empty() {
        return Shape::Seldon;
    }
    let only = |allowed: &[&str]| keys.iter().all(|(k, _)| allowed.contains(&k.as_str()));
    // A list, or a number or bool for a 0-d array (numpy's `tolist()` of a scalar).
    let array_like = |c: u8| c == b'[' || c == b'-' || c == b't' || c == b'f' || c.is_ascii_digit();
    if keys.iter().any(|(k, c)| k == "data" && array_like(*c)) && only(&["data", "dtype"]) {
        return Shape::Array(Layout::List);
    }
    if keys.iter().any(|(k, _)| SELDON_KEYS.contains(&k.as_str())) {
        return Shape::Seldon;
    }
    if keys.iter().any(|(k, _)| *k == "buffer") && only(&["buffer", "dtype", "shape"]) {
        return Shape::Array(Layout::Base64);
    }
    Shape::Plain
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Base64In {
    buffer: String,
    dtype: String,
    #[serde(default)]
    shape: Option<Vec<i64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListIn<'a> {
    #[serde(borrow)]
    data: &'a serde_json::value::RawValue,
    #[serde(default)]
    dtype: Option<String>,
}

/// Decodes a body `classify` found to be `layout`.
pub fn decode(body: &[u8], layout: Layout, limits: &Limits) -> Result<Tensor> {
    match layout {
        Layout::Base64 => {
            let b: Base64In = crate::json::deserialize(body)?;
            let d = descr::parse(&b.dtype).map_err(|e| e.in_field("dtype"))?;
            let raw = base64_simd::STANDARD
                .decode_to_vec(b.buffer.as_bytes())
                .map_err(|_| CodecError::bad_request("buffer: not valid base64"))?;
            let dims = match b.shape {
                Some(s) => s,
                None if d.size() > 0 => vec![(raw.len() / d.size()) as i64],
                None => vec![0],
            };
            let count = limits
                .element_count(&dims)
                .map_err(|e| e.in_field("shape"))?;
            let data = descr::elements(&raw, d, count, "buffer")?;
            Tensor::new(dims.iter().map(|&d| d as usize).collect(), data)
        }
        Layout::List => {
            let b: ListIn = crate::json::deserialize(body)?;
            let dtype = b
                .dtype
                .as_deref()
                .map(|s| descr::parse(s).map_err(|e| e.in_field("dtype")))
                .transpose()?;
            let raw = b.data.get().as_bytes();
            let t = match scalar(raw) {
                Some(t) => t,
                None => match numbers::parse_array(raw, *limits)? {
                    Some(t) => t,
                    // Numbers among which some are "NaN", "Infinity" or "-Infinity".
                    None => serde_json::from_slice(raw)
                        .ok()
                        .and_then(|v| numbers::with_non_finite(&v, true))
                        .map(|(shape, values)| Tensor::new(shape, TensorData::F64(values)))
                        .ok_or_else(|| {
                            CodecError::bad_request(
                                "data: must be a rectangular array of numbers or booleans (a \
                                 ragged or mixed list has no numpy dtype)",
                            )
                        })??,
                },
            };
            match dtype {
                Some(d) if d.dtype != t.dtype() => {
                    let data = cast(t.data, d.dtype).map_err(|e| e.in_field("data"))?;
                    Tensor::new(t.shape, data)
                }
                _ => Ok(t),
            }
        }
    }
}

/// A 0-d array written as a bare number or bool.
fn scalar(raw: &[u8]) -> Option<Tensor> {
    let data = match serde_json::from_slice::<serde_json::Value>(raw).ok()? {
        serde_json::Value::Bool(b) => TensorData::Bool(vec![b]),
        serde_json::Value::Number(n) => match n.as_i64() {
            Some(i) => TensorData::I64(vec![i]),
            None => TensorData::F64(vec![n.as_f64()?]),
        },
        _ => return None,
    };
    Some(Tensor {
        shape: Vec::new(),
        data,
    })
}

/// Converts parsed JSON numbers to the declared dtype, refusing values the dtype cannot
/// hold instead of wrapping them.
fn cast(data: TensorData, to: DType) -> Result<TensorData> {
    if data.is_empty() {
        return TensorData::from_le_bytes(&[], to)
            .unwrap_or_else(|| Err(CodecError::bad_request("not a numpy numeric dtype")));
    }
    macro_rules! ints {
        ($v:expr, $t:ty, $variant:ident) => {{
            let mut out = Vec::with_capacity($v.len());
            for x in $v {
                out.push(<$t>::try_from(x).map_err(|_| {
                    CodecError::bad_request(format!("{x} does not fit in {}", stringify!($t)))
                })?);
            }
            TensorData::$variant(out)
        }};
    }
    let ints: Vec<i64> = match data {
        TensorData::I64(v) => v,
        TensorData::Bool(v) if to != DType::Bool => v.into_iter().map(i64::from).collect(),
        TensorData::F64(v) => {
            return match to {
                DType::F32 => Ok(TensorData::F32(numbers::narrow(
                    v,
                    |x| x as f32,
                    "float32",
                )?)),
                DType::F16 => Ok(TensorData::F16(numbers::narrow(
                    v,
                    half::f16::from_f64,
                    "float16",
                )?)),
                _ => Err(CodecError::bad_request(format!(
                    "the values are not all integers, so they cannot be {}",
                    descr::name(to).unwrap_or("that dtype")
                ))),
            }
        }
        other => {
            return Err(CodecError::bad_request(format!(
                "{:?} values cannot be {}",
                other.dtype(),
                descr::name(to).unwrap_or("that dtype")
            )))
        }
    };
    Ok(match to {
        DType::Bool => {
            if let Some(x) = ints.iter().find(|&&x| x != 0 && x != 1) {
                return Err(CodecError::bad_request(format!("{x} is not a bool")));
            }
            TensorData::Bool(ints.into_iter().map(|x| x == 1).collect())
        }
        DType::U8 => ints!(ints, u8, U8),
        DType::U16 => ints!(ints, u16, U16),
        DType::U32 => ints!(ints, u32, U32),
        DType::U64 => ints!(ints, u64, U64),
        DType::I8 => ints!(ints, i8, I8),
        DType::I16 => ints!(ints, i16, I16),
        DType::I32 => ints!(ints, i32, I32),
        DType::I64 => TensorData::I64(ints),
        DType::F16 => TensorData::F16(numbers::narrow(
            ints.iter().map(|&x| x as f64).collect(),
            half::f16::from_f64,
            "float16",
        )?),
        DType::F32 => TensorData::F32(ints.iter().map(|&x| x as f32).collect()),
        DType::F64 => TensorData::F64(ints.iter().map(|&x| x as f64).collect()),
        DType::BF16 | DType::Bytes => {
            return Err(CodecError::bad_request("not a numpy numeric dtype"))
        }
    })
}

/// Writes `t` in `layout`.
pub fn encode(t: &Tensor, layout: Layout, out: &mut Vec<u8>) -> Result<()> {
    let data = descr::numpy_data(&t.data)?;
    let name = descr::name(data.dtype()).unwrap_or("<f8");
    match layout {
        Layout::List => {
            out.extend_from_slice(b"{\"data\":");
            let t = Tensor {
                shape: t.shape.clone(),
                data: data.into_owned(),
            };
            write::tensor_nested(&t, out);
            out.extend_from_slice(b",\"dtype\":\"");
        }
        Layout::Base64 => {
            out.extend_from_slice(b"{\"buffer\":");
            write::base64_string(&data.to_le_bytes().unwrap_or_default(), out);
            out.extend_from_slice(b",\"shape\":[");
            for (i, d) in t.shape.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(itoa::Buffer::new().format(*d).as_bytes());
            }
            out.extend_from_slice(b"],\"dtype\":\"");
        }
    }
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b"\"}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_by_keys() {
        assert_eq!(
            classify(br#"{"data": [[1, 2]], "dtype": "<i8"}"#),
            Shape::Array(Layout::List)
        );
        assert_eq!(classify(br#"{"data": {"ndarray": [1]}}"#), Shape::Seldon);
        assert_eq!(
            classify(br#"{"buffer": "AQ==", "dtype": "|u1", "shape": [1]}"#),
            Shape::Array(Layout::Base64)
        );
        assert_eq!(
            classify(br#"{"field1": "a", "field4": {"x": 1}}"#),
            Shape::Plain
        );
        assert_eq!(classify(br#"{"jsonData": {"x": 1}}"#), Shape::Seldon);
        assert_eq!(classify(b"{}"), Shape::Seldon);
        assert_eq!(classify(br#"{"data": -1.5}"#), Shape::Array(Layout::List));
        let t = decode(
            br#"{"data": 7, "dtype": "<u2"}"#,
            Layout::List,
            &Limits::default(),
        )
        .unwrap();
        assert_eq!((t.shape.len(), t.data), (0, TensorData::U16(vec![7])));
        assert_eq!(classify(b"{\"a\": "), Shape::Seldon);
    }

    #[test]
    fn round_trips() {
        let l = Limits::default();
        let t = Tensor::new(vec![2, 2], TensorData::I32(vec![1, -2, 3, 4])).unwrap();
        for layout in [Layout::List, Layout::Base64] {
            let mut out = Vec::new();
            encode(&t, layout, &mut out).unwrap();
            assert_eq!(classify(&out), Shape::Array(layout));
            assert_eq!(decode(&out, layout, &l).unwrap(), t, "{layout:?}");
        }
    }

    #[test]
    fn errors() {
        let l = Limits::default();
        let e = |b: &[u8], layout| decode(b, layout, &l).unwrap_err().message;
        assert!(e(br#"{"data": [300], "dtype": "|u1"}"#, Layout::List).contains("300 does not fit"));
        assert!(e(br#"{"data": [1.5], "dtype": "<i4"}"#, Layout::List).contains("not all integers"));
        assert!(e(
            br#"{"buffer": "@@", "dtype": "<i8", "shape": [1]}"#,
            Layout::Base64
        )
        .contains("base64"));
        assert!(e(
            br#"{"buffer": "AQ==", "dtype": "<i8", "shape": [1]}"#,
            Layout::Base64
        )
        .contains("1 bytes"));
        assert!(e(br#"{"data": [[1], [2, 3]]}"#, Layout::List).contains("rectangular"));
    }
}
