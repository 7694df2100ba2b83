//! Seldon messages as REST JSON bodies (protobuf's JSON mapping, as Seldon clients send it).
//!
//! Decoding walks the document once with serde; `ndarray` and `tensor.values` are kept
//! as raw slices and parsed by the typed fast path (`json::numbers`), so numeric arrays
//! never become a generic JSON tree.
use std::collections::BTreeMap;

use bytes::Bytes;
use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::message::*;
use super::tftensor;
use crate::error::{CodecError, Result};
use crate::json::{numbers, write};
use crate::limits::Limits;
use crate::pb::tensorflow::{tensor_shape_proto::Dim, DataType, TensorProto, TensorShapeProto};
use crate::tensor::{Tensor, TensorData};

// ---------------------------------------------------------------- decoding

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MessageIn<'a> {
    #[serde(default)]
    status: Option<StatusIn>,
    #[serde(default)]
    meta: Option<MetaIn>,
    #[serde(borrow, default)]
    data: Option<DataIn<'a>>,
    #[serde(default, alias = "bin_data")]
    bin_data: Option<String>,
    #[serde(default, alias = "str_data")]
    str_data: Option<String>,
    #[serde(default, alias = "json_data")]
    json_data: Option<Value>,
    #[serde(default, alias = "custom_data")]
    custom_data: Option<AnyIn>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AnyIn {
    #[serde(rename = "@type", default)]
    type_url: String,
    #[serde(default)]
    value: String,
}

#[derive(Deserialize)]
struct StatusIn {
    #[serde(default)]
    code: i32,
    #[serde(default)]
    info: String,
    #[serde(default)]
    reason: String,
    #[serde(default)]
    status: Option<Value>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct MetaIn {
    #[serde(default)]
    puid: String,
    #[serde(default)]
    tags: Map<String, Value>,
    #[serde(default)]
    routing: BTreeMap<String, i32>,
    #[serde(default, alias = "request_path")]
    request_path: BTreeMap<String, String>,
    #[serde(default)]
    metrics: Vec<MetricIn>,
}

#[derive(Deserialize)]
struct MetricIn {
    key: String,
    #[serde(default, rename = "type")]
    kind: Option<Value>,
    #[serde(default)]
    value: f32,
    #[serde(default)]
    tags: BTreeMap<String, String>,
}

#[derive(Deserialize)]
struct DataIn<'a> {
    #[serde(default)]
    names: Vec<String>,
    #[serde(borrow, default)]
    ndarray: Option<&'a RawValue>,
    #[serde(borrow, default)]
    tensor: Option<TensorIn<'a>>,
    #[serde(default)]
    tftensor: Option<TfTensorIn>,
}

#[derive(Deserialize)]
struct TensorIn<'a> {
    #[serde(default)]
    shape: Option<Vec<i64>>,
    #[serde(borrow, default)]
    values: Option<&'a RawValue>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct TfTensorIn {
    dtype: Option<DTypeIn>,
    #[serde(alias = "tensor_shape")]
    tensor_shape: Option<ShapeIn>,
    #[serde(alias = "version_number")]
    version_number: Lenient<i32>,
    #[serde(alias = "tensor_content")]
    tensor_content: Option<String>,
    #[serde(alias = "half_val")]
    half_val: Vec<Lenient<i32>>,
    #[serde(alias = "float_val")]
    float_val: Vec<Float<f32>>,
    #[serde(alias = "double_val")]
    double_val: Vec<Float<f64>>,
    #[serde(alias = "int_val")]
    int_val: Vec<Lenient<i32>>,
    #[serde(alias = "string_val")]
    string_val: Vec<String>,
    #[serde(alias = "int64_val")]
    int64_val: Vec<Lenient<i64>>,
    #[serde(alias = "bool_val")]
    bool_val: Vec<bool>,
    #[serde(alias = "uint32_val")]
    uint32_val: Vec<Lenient<u32>>,
    #[serde(alias = "uint64_val")]
    uint64_val: Vec<Lenient<u64>>,
    #[serde(alias = "scomplex_val")]
    scomplex_val: Vec<Float<f32>>,
    #[serde(alias = "dcomplex_val")]
    dcomplex_val: Vec<Float<f64>>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct ShapeIn {
    dim: Vec<DimIn>,
    #[serde(alias = "unknown_rank")]
    unknown_rank: bool,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct DimIn {
    size: Lenient<i64>,
    name: String,
}

/// A dtype given by name (`"DT_INT64"`) or by number, as protobuf JSON allows.
struct DTypeIn(i32);

impl<'de> Deserialize<'de> for DTypeIn {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        match Value::deserialize(d)? {
            Value::String(s) => DataType::from_str_name(&s)
                .map(|t| DTypeIn(t as i32))
                .ok_or_else(|| de::Error::custom(format!("unknown dtype {s:?}"))),
            Value::Number(n) => n
                .as_i64()
                .and_then(|n| i32::try_from(n).ok())
                .map(DTypeIn)
                .ok_or_else(|| de::Error::custom(format!("unknown dtype {n}"))),
            other => Err(de::Error::custom(format!(
                "dtype must be a name like \"DT_FLOAT\", not {other}"
            ))),
        }
    }
}

/// An integer given as a JSON number or a decimal string (protobuf JSON writes 64-bit
/// integers as strings).
#[derive(Default, Clone, Copy)]
struct Lenient<T>(T);

macro_rules! lenient_int {
    ($($t:ty),*) => {$(
        impl<'de> Deserialize<'de> for Lenient<$t> {
            fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
                struct V;
                impl Visitor<'_> for V {
                    type Value = $t;
                    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                        write!(f, "an integer ({}) as a number or a string", stringify!($t))
                    }
                    fn visit_i64<E: de::Error>(self, v: i64) -> std::result::Result<$t, E> {
                        <$t>::try_from(v).map_err(|_| E::custom(format!("{v} is out of range for {}", stringify!($t))))
                    }
                    fn visit_u64<E: de::Error>(self, v: u64) -> std::result::Result<$t, E> {
                        <$t>::try_from(v).map_err(|_| E::custom(format!("{v} is out of range for {}", stringify!($t))))
                    }
                    fn visit_f64<E: de::Error>(self, v: f64) -> std::result::Result<$t, E> {
                        if v.fract() == 0.0 && v >= <$t>::MIN as f64 && v <= <$t>::MAX as f64 {
                            Ok(v as $t)
                        } else {
                            Err(E::custom(format!("{v} is not an integer in range for {}", stringify!($t))))
                        }
                    }
                    fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<$t, E> {
                        v.parse().map_err(|_| E::custom(format!("{v:?} is not an integer")))
                    }
                }
                d.deserialize_any(V).map(Lenient)
            }
        }
    )*};
}
lenient_int!(i32, i64, u32, u64);

/// A float given as a number or as protobuf JSON's `"NaN"`, `"Infinity"`, `"-Infinity"`.
#[derive(Clone, Copy)]
struct Float<T>(T);

macro_rules! lenient_float {
    ($($t:ty),*) => {$(
        impl<'de> Deserialize<'de> for Float<$t> {
            fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
                struct V;
                impl Visitor<'_> for V {
                    type Value = $t;
                    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                        f.write_str("a number, \"NaN\", \"Infinity\" or \"-Infinity\"")
                    }
                    fn visit_i64<E: de::Error>(self, v: i64) -> std::result::Result<$t, E> { Ok(v as $t) }
                    fn visit_u64<E: de::Error>(self, v: u64) -> std::result::Result<$t, E> { Ok(v as $t) }
                    fn visit_f64<E: de::Error>(self, v: f64) -> std::result::Result<$t, E> { Ok(v as $t) }
                    fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<$t, E> {
                        match v {
                            "NaN" => Ok(<$t>::NAN),
                            "Infinity" => Ok(<$t>::INFINITY),
                            "-Infinity" => Ok(<$t>::NEG_INFINITY),
                            _ => v.parse().map_err(|_| E::custom(format!("{v:?} is not a number"))),
                        }
                    }
                }
                d.deserialize_any(V).map(Float)
            }
        }
    )*};
}
lenient_float!(f32, f64);

/// Base64 as protobuf's JSON mapping writes it (standard alphabet, or URL-safe). SIMD:
/// an 800 KB `tensorContent` is the largest single cost of a `tftensor` request otherwise.
fn b64(s: &str, field: &str) -> Result<Bytes> {
    base64_simd::STANDARD
        .decode_to_vec(s)
        .or_else(|_| base64_simd::URL_SAFE.decode_to_vec(s))
        .map(Bytes::from)
        .map_err(|e| CodecError::bad_request(format!("{field}: invalid base64: {e}")))
}

/// Parses a JSON document with serde, reporting the path of the offending field.
fn parse<'a, T: Deserialize<'a>>(body: &'a [u8]) -> Result<T> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(CodecError::bad_request(
            "empty body: send a JSON SeldonMessage",
        ));
    }
    if body.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Err(CodecError::bad_request(
            "invalid JSON: the body must be a JSON object such as {\"data\": {\"ndarray\": [[1, 2]]}}",
        ));
    }
    crate::json::deserialize(body)
}

/// Decodes a REST request body into a `SeldonMessage`.
pub fn decode_message(body: &[u8], limits: &Limits) -> Result<SeldonMessage> {
    if let Some(m) = decode_fast(body, limits) {
        return m;
    }
    decode_general(body, limits)
}

/// `decode_message` without its fast path (for callers that tried `decode_fast`).
pub fn decode_general(body: &[u8], limits: &Limits) -> Result<SeldonMessage> {
    let m: MessageIn = parse(body)?;
    message_from(m, limits)
}

/// One pass over the common request shape, `{"data": {"names": [..], "ndarray": [..]
/// | "tensor": {..} | "tftensor": {..}}, "meta": {..}}`: the numeric array is parsed
/// where it lies instead of being scanned once by serde and again by the array parser.
/// Anything else, including every error, returns `None` and takes the general path,
/// which also words the error messages.
pub fn decode_fast(body: &[u8], limits: &Limits) -> Option<Result<SeldonMessage>> {
    use crate::json::scan::{object, skip_value, ws};
    let start = ws(body, 0);
    let mut meta: Option<MetaIn> = None;
    let mut payload: Option<Payload> = None;
    let end = object(body, start, |key, at| match key {
        "data" if payload.is_none() => {
            let mut names: Option<Vec<String>> = None;
            let mut array: Option<(Encoding, Array)> = None;
            let end = object(body, at, |key, at| match key {
                "names" if names.is_none() => {
                    let end = skip_value(body, at)?;
                    names = Some(serde_json::from_slice(&body[at..end]).ok()?);
                    Some(end)
                }
                "ndarray" if array.is_none() => {
                    let (t, len) = numbers::parse_array_prefix(&body[at..], *limits).ok()??;
                    array = Some((Encoding::Ndarray, Array::Numeric(t)));
                    Some(at + len)
                }
                "tensor" if array.is_none() => {
                    let mut shape: Option<Vec<i64>> = None;
                    let mut values: Option<Tensor> = None;
                    let end = object(body, at, |key, at| match key {
                        "shape" if shape.is_none() => {
                            let end = skip_value(body, at)?;
                            shape = Some(serde_json::from_slice(&body[at..end]).ok()?);
                            Some(end)
                        }
                        "values" if values.is_none() => {
                            let (t, len) =
                                numbers::parse_array_prefix(&body[at..], *limits).ok()??;
                            (t.shape.len() == 1).then_some(())?;
                            values = Some(t);
                            Some(at + len)
                        }
                        _ => None,
                    })?;
                    let t = shaped_tensor(&shape.unwrap_or_default(), values?.data, limits).ok()?;
                    array = Some((Encoding::Tensor, Array::Numeric(t)));
                    Some(end)
                }
                "tftensor" if array.is_none() => {
                    let end = skip_value(body, at)?;
                    let t: TfTensorIn = serde_json::from_slice(&body[at..end]).ok()?;
                    let t = tftensor::to_tensor(tftensor_proto(t).ok()?, limits).ok()?;
                    array = Some((Encoding::TfTensor, Array::Numeric(t)));
                    Some(end)
                }
                _ => None,
            })?;
            let (encoding, array) = array?;
            payload = Some(Payload::Data {
                names: names.unwrap_or_default(),
                encoding,
                array,
            });
            Some(end)
        }
        "meta" if meta.is_none() => {
            let end = skip_value(body, at)?;
            meta = Some(serde_json::from_slice(&body[at..end]).ok()?);
            Some(end)
        }
        _ => None,
    })?;
    if ws(body, end) != body.len() {
        return None;
    }
    let meta = meta_from(meta.unwrap_or_default()).ok()?;
    Some(Ok(SeldonMessage {
        status: None,
        meta,
        payload: payload?,
    }))
}

/// Decodes a REST feedback body (`{"request": ..., "response": ..., "reward": ..., "truth": ...}`).
pub fn decode_feedback(body: &[u8], limits: &Limits) -> Result<Feedback> {
    #[derive(Deserialize)]
    struct FeedbackIn<'a> {
        #[serde(borrow, default)]
        request: Option<MessageIn<'a>>,
        #[serde(borrow, default)]
        response: Option<MessageIn<'a>>,
        #[serde(default)]
        reward: f32,
        #[serde(borrow, default)]
        truth: Option<MessageIn<'a>>,
    }
    let f: FeedbackIn = parse(body)?;
    let conv = |m: Option<MessageIn>, field: &str| {
        m.map(|m| message_from(m, limits).map_err(|e| e.in_field(field)))
            .transpose()
    };
    Ok(Feedback {
        request: conv(f.request, "request")?,
        response: conv(f.response, "response")?,
        reward: f.reward,
        truth: conv(f.truth, "truth")?,
    })
}

fn message_from(m: MessageIn, limits: &Limits) -> Result<SeldonMessage> {
    let mut payloads = Vec::new();
    if let Some(d) = m.data {
        payloads.push(data_from(d, limits)?);
    }
    if let Some(s) = m.bin_data {
        payloads.push(Payload::Bin(b64(&s, "binData")?));
    }
    if let Some(s) = m.str_data {
        payloads.push(Payload::Str(s));
    }
    if let Some(v) = m.json_data {
        if nesting(&v) > limits.max_depth {
            return Err(CodecError::bad_request(format!(
                "jsonData: nested deeper than {} (the max_json_depth setting)",
                limits.max_depth
            )));
        }
        payloads.push(Payload::Json(v));
    }
    if let Some(a) = m.custom_data {
        payloads.push(Payload::Custom {
            type_url: a.type_url,
            value: b64(&a.value, "customData.value")?,
        });
    }
    if payloads.len() > 1 {
        let kinds: Vec<&str> = payloads.iter().map(Payload::kind).collect();
        return Err(CodecError::bad_request(format!(
            "only one of data, binData, strData, jsonData, customData may be set, got {}",
            kinds.join(" and ")
        )));
    }
    Ok(SeldonMessage {
        status: m.status.map(|s| Status {
            code: s.code,
            info: s.info,
            reason: s.reason,
            failure: matches!(s.status, Some(Value::String(ref f)) if f == "FAILURE")
                || matches!(s.status, Some(Value::Number(ref n)) if n.as_i64() == Some(1)),
        }),
        meta: meta_from(m.meta.unwrap_or_default())?,
        payload: payloads.pop().unwrap_or_default(),
    })
}

fn meta_from(m: MetaIn) -> Result<Meta> {
    let metrics = metrics_from(m.metrics)?;
    Ok(Meta {
        puid: m.puid,
        tags: m.tags,
        routing: m.routing,
        request_path: m.request_path,
        metrics,
    })
}

fn metrics_from(metrics: Vec<MetricIn>) -> Result<Vec<Metric>> {
    metrics
        .into_iter()
        .enumerate()
        .map(|(i, x)| {
            let kind = match &x.kind {
                None => Some(MetricType::Counter),
                Some(Value::String(s)) => MetricType::from_name(s),
                Some(Value::Number(n)) => n.as_i64().and_then(|n| MetricType::from_i32(n as i32)),
                Some(_) => None,
            }
            .ok_or_else(|| {
                CodecError::bad_request(format!(
                    "meta.metrics[{i}].type: must be COUNTER, GAUGE or TIMER"
                ))
            })?;
            Ok(Metric {
                key: x.key,
                kind,
                value: x.value,
                tags: x.tags,
            })
        })
        .collect()
}

/// The `meta.metrics` of a message given as a JSON value (a `predict_raw` reply), read
/// as a request's are.
pub fn metrics_of(message: &Value) -> Result<Vec<Metric>> {
    let Some(list) = message.get("meta").and_then(|m| m.get("metrics")) else {
        return Ok(Vec::new());
    };
    let metrics = Vec::<MetricIn>::deserialize(list)
        .map_err(|e| CodecError::bad_request(format!("meta.metrics: {e}")))?;
    metrics_from(metrics)
}

fn data_from(d: DataIn, limits: &Limits) -> Result<Payload> {
    let set = [
        d.ndarray.is_some(),
        d.tensor.is_some(),
        d.tftensor.is_some(),
    ];
    if set.iter().filter(|&&x| x).count() > 1 {
        return Err(CodecError::bad_request(
            "data: only one of ndarray, tensor, tftensor may be set",
        ));
    }
    let (encoding, array) = if let Some(raw) = d.ndarray {
        (Encoding::Ndarray, ndarray_from(raw, limits)?)
    } else if let Some(t) = d.tensor {
        (
            Encoding::Tensor,
            Array::Numeric(tensor_from(t, limits).map_err(|e| e.in_field("data.tensor"))?),
        )
    } else if let Some(t) = d.tftensor {
        let proto = tftensor_proto(t)?;
        (
            Encoding::TfTensor,
            Array::Numeric(
                tftensor::to_tensor(proto, limits).map_err(|e| e.in_field("data.tftensor"))?,
            ),
        )
    } else {
        (Encoding::Ndarray, Array::empty())
    };
    Ok(Payload::Data {
        names: d.names,
        encoding,
        array,
    })
}

fn ndarray_from(raw: &RawValue, limits: &Limits) -> Result<Array> {
    if let Some(t) = numbers::parse_array(raw.get().as_bytes(), *limits)
        .map_err(|e| e.in_field("data.ndarray"))?
    {
        return Ok(Array::Numeric(t));
    }
    match serde_json::from_str::<Value>(raw.get()) {
        Ok(v @ Value::Array(_)) if nesting(&v) > limits.max_depth => Err(CodecError::bad_request(
            format!("data.ndarray: nested deeper than {}", limits.max_depth),
        )),
        Ok(v @ Value::Array(_)) => {
            check_rectangular(&v, "data.ndarray")?;
            // Numbers among which some are "NaN", "Infinity" or "-Infinity": float64.
            if let Some((shape, values)) = numbers::with_non_finite(&v, false) {
                return Ok(Array::Numeric(Tensor::new(shape, TensorData::F64(values))?));
            }
            Ok(Array::Json(v))
        }
        Ok(other) => Err(CodecError::bad_request(format!(
            "data.ndarray: must be a (nested) list, got {}",
            kind_of(&other)
        ))),
        Err(e) => Err(CodecError::bad_request(format!("data.ndarray: {e}"))),
    }
}

/// How deeply lists and objects nest in `v` (serde_json stops at 128 while parsing).
fn nesting(v: &Value) -> usize {
    match v {
        Value::Array(items) => 1 + items.iter().map(nesting).max().unwrap_or(0),
        Value::Object(m) => 1 + m.values().map(nesting).max().unwrap_or(0),
        _ => 0,
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

fn tensor_from(t: TensorIn, limits: &Limits) -> Result<Tensor> {
    let raw = t
        .values
        .ok_or_else(|| CodecError::bad_request("values: required"))?;
    let flat_list = || CodecError::bad_request("values: must be a flat list of numbers");
    let data = match numbers::parse_array(raw.get().as_bytes(), *limits)? {
        Some(parsed) if parsed.shape.len() == 1 => parsed.data,
        Some(_) => return Err(flat_list()),
        // Numbers among which some are "NaN", "Infinity" or "-Infinity".
        None => match serde_json::from_str::<Value>(raw.get()) {
            Ok(v) => match numbers::with_non_finite(&v, true) {
                Some((shape, values)) if shape.len() == 1 => TensorData::F64(values),
                _ => return Err(flat_list()),
            },
            Err(e) => return Err(CodecError::bad_request(format!("values: {e}"))),
        },
    };
    shaped_tensor(&t.shape.unwrap_or_default(), data, limits)
}

fn tftensor_proto(t: TfTensorIn) -> Result<TensorProto> {
    let shape = t.tensor_shape.unwrap_or_default();
    let f = "data.tftensor";
    Ok(TensorProto {
        dtype: t.dtype.map_or(0, |d| d.0),
        tensor_shape: Some(TensorShapeProto {
            dim: shape
                .dim
                .into_iter()
                .map(|d| Dim {
                    size: d.size.0,
                    name: d.name,
                })
                .collect(),
            unknown_rank: shape.unknown_rank,
        }),
        version_number: t.version_number.0,
        tensor_content: match t.tensor_content {
            Some(s) => b64(&s, &format!("{f}.tensorContent"))?,
            None => Bytes::new(),
        },
        half_val: t.half_val.into_iter().map(|x| x.0).collect(),
        float_val: t.float_val.into_iter().map(|x| x.0).collect(),
        double_val: t.double_val.into_iter().map(|x| x.0).collect(),
        int_val: t.int_val.into_iter().map(|x| x.0).collect(),
        string_val: t
            .string_val
            .iter()
            .map(|s| b64(s, &format!("{f}.stringVal")))
            .collect::<Result<_>>()?,
        scomplex_val: t.scomplex_val.into_iter().map(|x| x.0).collect(),
        int64_val: t.int64_val.into_iter().map(|x| x.0).collect(),
        bool_val: t.bool_val,
        dcomplex_val: t.dcomplex_val.into_iter().map(|x| x.0).collect(),
        uint32_val: t.uint32_val.into_iter().map(|x| x.0).collect(),
        uint64_val: t.uint64_val.into_iter().map(|x| x.0).collect(),
    })
}

// ---------------------------------------------------------------- encoding

/// Encodes a message as a REST JSON body.
pub fn encode_message(m: &SeldonMessage, out: &mut Vec<u8>) -> Result<()> {
    out.push(b'{');
    let mut first = true;
    let mut key = |out: &mut Vec<u8>, k: &str| {
        if !std::mem::take(&mut first) {
            out.push(b',');
        }
        out.push(b'"');
        out.extend_from_slice(k.as_bytes());
        out.extend_from_slice(b"\":");
    };
    if let Some(s) = &m.status {
        key(out, "status");
        write_status(s, out);
    }
    match &m.payload {
        Payload::None => {}
        Payload::Data {
            names,
            encoding,
            array,
        } => {
            key(out, "data");
            write_data(names, *encoding, array, out)?;
        }
        Payload::Bin(b) => {
            key(out, "binData");
            write::base64_string(b, out);
        }
        Payload::Str(s) => {
            key(out, "strData");
            write::string(s, out);
        }
        Payload::Json(v) => {
            key(out, "jsonData");
            let _ = serde_json::to_writer(&mut *out, v);
        }
        Payload::Custom { type_url, value } => {
            key(out, "customData");
            out.extend_from_slice(b"{\"@type\":");
            write::string(type_url, out);
            out.extend_from_slice(b",\"value\":");
            write::base64_string(value, out);
            out.push(b'}');
        }
    }
    key(out, "meta");
    write_meta(&m.meta, out);
    out.push(b'}');
    Ok(())
}

fn write_status(s: &Status, out: &mut Vec<u8>) {
    out.extend_from_slice(b"{\"code\":");
    out.extend_from_slice(itoa::Buffer::new().format(s.code).as_bytes());
    out.extend_from_slice(b",\"info\":");
    write::string(&s.info, out);
    out.extend_from_slice(b",\"reason\":");
    write::string(&s.reason, out);
    out.extend_from_slice(if s.failure {
        b",\"status\":\"FAILURE\"}"
    } else {
        b",\"status\":\"SUCCESS\"}"
    });
}

fn write_meta(m: &Meta, out: &mut Vec<u8>) {
    // Field order follows the proto (puid, tags, routing, requestPath, metrics).
    let mut fields: Vec<(&str, Value)> = Vec::new();
    if !m.puid.is_empty() {
        fields.push(("puid", Value::String(m.puid.clone())));
    }
    if !m.tags.is_empty() {
        fields.push(("tags", Value::Object(m.tags.clone())));
    }
    if !m.routing.is_empty() {
        fields.push((
            "routing",
            serde_json::to_value(&m.routing).unwrap_or_default(),
        ));
    }
    if !m.request_path.is_empty() {
        fields.push((
            "requestPath",
            serde_json::to_value(&m.request_path).unwrap_or_default(),
        ));
    }
    if !m.metrics.is_empty() {
        let metrics = m
            .metrics
            .iter()
            .map(|x| {
                let mut o = Map::new();
                o.insert("key".into(), Value::String(x.key.clone()));
                if !x.tags.is_empty() {
                    o.insert(
                        "tags".into(),
                        serde_json::to_value(&x.tags).unwrap_or_default(),
                    );
                }
                o.insert("type".into(), Value::String(x.kind.name().into()));
                o.insert("value".into(), serde_json::json!(x.value));
                Value::Object(o)
            })
            .collect();
        fields.push(("metrics", Value::Array(metrics)));
    }
    out.push(b'{');
    for (i, (k, v)) in fields.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write::string(k, out);
        out.push(b':');
        let _ = serde_json::to_writer(&mut *out, v);
    }
    out.push(b'}');
}

fn write_data(
    names: &[String],
    encoding: Encoding,
    array: &Array,
    out: &mut Vec<u8>,
) -> Result<()> {
    out.extend_from_slice(b"{\"names\":");
    let _ = serde_json::to_writer(&mut *out, names);
    match (encoding, array) {
        (Encoding::Ndarray, Array::Numeric(t)) => {
            out.extend_from_slice(b",\"ndarray\":");
            write::tensor_nested(t, out);
        }
        (Encoding::Ndarray, Array::Json(v)) => {
            out.extend_from_slice(b",\"ndarray\":");
            let _ = serde_json::to_writer(&mut *out, v);
        }
        (Encoding::Tensor, Array::Numeric(t)) => {
            out.extend_from_slice(b",\"tensor\":{\"shape\":");
            write::flat(&t.shape.iter().map(|&d| d as u64).collect::<Vec<_>>(), out);
            out.extend_from_slice(b",\"values\":");
            write_flat_values(t, out)?;
            out.push(b'}');
        }
        (Encoding::TfTensor, Array::Numeric(t)) => {
            out.extend_from_slice(b",\"tftensor\":");
            write_tftensor(t, out);
        }
        (enc, Array::Json(_)) => {
            return Err(CodecError::bad_output(format!(
                "the model returned non-numeric data, which the {} encoding cannot carry; \
                 return a numeric array or send the request as ndarray",
                enc.name()
            )))
        }
    }
    out.push(b'}');
    Ok(())
}

fn write_flat_values(t: &Tensor, out: &mut Vec<u8>) -> Result<()> {
    // Seldon's `tensor.values` are doubles: booleans go as 0 and 1.
    if let TensorData::Bool(v) = &t.data {
        write::flat(&v.iter().map(|&b| u8::from(b)).collect::<Vec<_>>(), out);
        return Ok(());
    }
    if !write::flat_data(&t.data, out) {
        return Err(CodecError::bad_output(
            "the model returned strings, which the tensor encoding cannot carry; use ndarray or tftensor",
        ));
    }
    Ok(())
}

/// Writes a tensor in protobuf's JSON mapping of `TensorProto`.
pub fn write_tftensor(t: &Tensor, out: &mut Vec<u8>) {
    let p = tftensor::from_tensor(t);
    out.extend_from_slice(b"{\"dtype\":\"");
    out.extend_from_slice(
        DataType::try_from(p.dtype)
            .map_or("DT_INVALID", |d| d.as_str_name())
            .as_bytes(),
    );
    out.extend_from_slice(b"\",\"tensorShape\":{\"dim\":[");
    for (i, &d) in t.shape.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"size\":\"");
        out.extend_from_slice(itoa::Buffer::new().format(d).as_bytes());
        out.extend_from_slice(b"\"}");
    }
    out.extend_from_slice(b"]}");
    fn field(out: &mut Vec<u8>, name: &str) {
        out.extend_from_slice(b",\"");
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b"\":");
    }
    fn quoted<T: itoa::Integer>(v: &[T], out: &mut Vec<u8>) {
        out.push(b'[');
        for (i, &x) in v.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.push(b'"');
            out.extend_from_slice(itoa::Buffer::new().format(x).as_bytes());
            out.push(b'"');
        }
        out.push(b']');
    }
    // Non-finite values come out as strings, as protobuf's JSON mapping has them.
    fn floats<T: write::JsonNumber>(v: &[T], out: &mut Vec<u8>) {
        write::flat(v, out);
    }
    if !p.tensor_content.is_empty() {
        field(out, "tensorContent");
        write::base64_string(&p.tensor_content, out);
    } else if !p.half_val.is_empty() {
        field(out, "halfVal");
        write::flat(&p.half_val, out);
    } else if !p.float_val.is_empty() {
        field(out, "floatVal");
        floats(&p.float_val, out);
    } else if !p.double_val.is_empty() {
        field(out, "doubleVal");
        floats(&p.double_val, out);
    } else if !p.int_val.is_empty() {
        field(out, "intVal");
        write::flat(&p.int_val, out);
    } else if !p.string_val.is_empty() {
        field(out, "stringVal");
        out.push(b'[');
        for (i, s) in p.string_val.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            write::base64_string(s, out);
        }
        out.push(b']');
    } else if !p.int64_val.is_empty() {
        field(out, "int64Val");
        quoted(&p.int64_val, out);
    } else if !p.bool_val.is_empty() {
        field(out, "boolVal");
        write::flat(&p.bool_val, out);
    } else if !p.uint32_val.is_empty() {
        field(out, "uint32Val");
        write::flat(&p.uint32_val, out);
    } else if !p.uint64_val.is_empty() {
        field(out, "uint64Val");
        quoted(&p.uint64_val, out);
    }
    out.push(b'}');
}

/// A tensor in protobuf's JSON mapping of `TensorProto`, as a JSON value (for raw dicts).
pub fn tftensor_value(t: &Tensor) -> Value {
    let p = tftensor::from_tensor(t);
    if p.tensor_content.is_empty() {
        // Typed `*_val` fields (one element, strings): small, so one writer serves both.
        let mut out = Vec::new();
        write_tftensor(t, &mut out);
        return serde_json::from_slice(&out).unwrap_or(Value::Null);
    }
    // The common, large case, built directly: no JSON text written and parsed back.
    let dims: Vec<Value> = t
        .shape
        .iter()
        .map(|d| serde_json::json!({ "size": d.to_string() }))
        .collect();
    serde_json::json!({
        "dtype": DataType::try_from(p.dtype).map_or("DT_INVALID", |d| d.as_str_name()),
        "tensorShape": { "dim": dims },
        "tensorContent": base64_simd::STANDARD.encode_to_string(&p.tensor_content),
    })
}

#[cfg(test)]
mod tests;
