//! Seldon messages as gRPC protobuf (`seldon.protos.SeldonMessage`), via prost types.
use bytes::Bytes;
use prost::Message;
use prost_types::{value::Kind, ListValue, Struct, Value as PValue};
use serde_json::{Map, Number, Value};

use super::message::*;
use super::tftensor;
use crate::error::{CodecError, Result};
use crate::json::value::nest;
use crate::limits::Limits;
use crate::pb::seldon::protos as pb;
use crate::tensor::{Tensor, TensorData};

/// Decodes a gRPC `SeldonMessage`: the common shapes in one pass straight into typed
/// buffers, the rest through prost.
pub fn decode_message(buf: Bytes, limits: &Limits) -> Result<SeldonMessage> {
    if let Some(decided) = super::proto_fast::decode(&buf, limits) {
        return decided;
    }
    let m = pb::SeldonMessage::decode(buf)
        .map_err(|e| CodecError::bad_request(format!("malformed protobuf SeldonMessage: {e}")))?;
    from_pb(m, limits)
}

/// Converts a decoded gRPC message into inferwire's form, checking limits and shapes.
pub fn from_pb(m: pb::SeldonMessage, limits: &Limits) -> Result<SeldonMessage> {
    use pb::seldon_message::DataOneof;
    let payload = match m.data_oneof {
        None => Payload::None,
        Some(DataOneof::Data(d)) => data_from(d, limits)?,
        Some(DataOneof::BinData(b)) => Payload::Bin(b),
        Some(DataOneof::StrData(s)) => Payload::Str(s),
        Some(DataOneof::JsonData(v)) => Payload::Json(value_to_json(v)),
        Some(DataOneof::CustomData(a)) => Payload::Custom {
            type_url: a.type_url,
            value: a.value.into(),
        },
    };
    Ok(SeldonMessage {
        status: m.status.map(|s| Status {
            code: s.code,
            info: s.info,
            reason: s.reason,
            failure: s.status == pb::status::StatusFlag::Failure as i32,
        }),
        meta: m.meta.map(meta_from).unwrap_or_default(),
        payload,
    })
}

pub fn feedback_from_pb(f: pb::Feedback, limits: &Limits) -> Result<Feedback> {
    let conv = |m: Option<pb::SeldonMessage>, field: &str| {
        m.map(|m| from_pb(m, limits).map_err(|e| e.in_field(field)))
            .transpose()
    };
    Ok(Feedback {
        request: conv(f.request, "request")?,
        response: conv(f.response, "response")?,
        reward: f.reward,
        truth: conv(f.truth, "truth")?,
    })
}

fn meta_from(m: pb::Meta) -> Meta {
    Meta {
        puid: m.puid,
        tags: m
            .tags
            .into_iter()
            .map(|(k, v)| (k, value_to_json(v)))
            .collect(),
        routing: m.routing.into_iter().collect(),
        request_path: m.request_path.into_iter().collect(),
        metrics: m
            .metrics
            .into_iter()
            .map(|x| Metric {
                key: x.key,
                kind: MetricType::from_i32(x.r#type).unwrap_or_default(),
                value: x.value,
                tags: x.tags.into_iter().collect(),
            })
            .collect(),
    }
}

fn data_from(d: pb::DefaultData, limits: &Limits) -> Result<Payload> {
    use pb::default_data::DataOneof;
    let (encoding, array) = match d.data_oneof {
        None => {
            return Err(CodecError::bad_request(
                "data: one of ndarray, tensor, tftensor is required",
            ))
        }
        Some(DataOneof::Ndarray(l)) => (Encoding::Ndarray, ndarray_from(l, limits)?),
        Some(DataOneof::Tensor(t)) => {
            let dims: Vec<i64> = t.shape.iter().map(|&d| i64::from(d)).collect();
            let t = shaped_tensor(&dims, TensorData::F64(t.values), limits)
                .map_err(|e| e.in_field("data.tensor"))?;
            (Encoding::Tensor, Array::Numeric(t))
        }
        Some(DataOneof::Tftensor(t)) => (
            Encoding::TfTensor,
            Array::Numeric(
                tftensor::to_tensor(t, limits).map_err(|e| e.in_field("data.tftensor"))?,
            ),
        ),
    };
    Ok(Payload::Data {
        names: d.names,
        encoding,
        array,
    })
}

/// A `ListValue` that is a rectangular array of numbers (or of booleans) becomes a typed
/// tensor: float64, as Seldon's own gRPC path gives (protobuf numbers are doubles).
fn ndarray_from(l: ListValue, limits: &Limits) -> Result<Array> {
    let mut shape = Vec::new();
    let mut probe = &l;
    loop {
        shape.push(probe.values.len());
        match probe.values.first().and_then(|v| v.kind.as_ref()) {
            Some(Kind::ListValue(inner)) => probe = inner,
            _ => break,
        }
    }
    let dims: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
    let n = limits
        .element_count(&dims)
        .map_err(|e| e.in_field("data.ndarray"))?;
    if shape.len() > limits.max_depth {
        return Err(CodecError::bad_request(format!(
            "data.ndarray: nested deeper than {}",
            limits.max_depth
        )));
    }
    let mut numbers = Vec::with_capacity(n);
    if collect_numbers(&l, &shape, &mut numbers) {
        return Ok(Array::Numeric(Tensor::new(
            shape,
            TensorData::F64(numbers),
        )?));
    }
    let mut bools = Vec::with_capacity(n);
    if collect_bools(&l, &shape, &mut bools) {
        return Ok(Array::Numeric(Tensor::new(shape, TensorData::Bool(bools))?));
    }
    let v = list_to_json(l);
    check_rectangular(&v, "data.ndarray")?;
    Ok(Array::Json(v))
}

fn collect_numbers(l: &ListValue, shape: &[usize], out: &mut Vec<f64>) -> bool {
    if l.values.len() != shape[0] {
        return false;
    }
    if shape.len() == 1 {
        for v in &l.values {
            match v.kind {
                Some(Kind::NumberValue(x)) => out.push(x),
                _ => return false,
            }
        }
        return true;
    }
    l.values.iter().all(|v| match &v.kind {
        Some(Kind::ListValue(inner)) => collect_numbers(inner, &shape[1..], out),
        _ => false,
    })
}

fn collect_bools(l: &ListValue, shape: &[usize], out: &mut Vec<bool>) -> bool {
    if l.values.len() != shape[0] {
        return false;
    }
    if shape.len() == 1 {
        for v in &l.values {
            match v.kind {
                Some(Kind::BoolValue(x)) => out.push(x),
                _ => return false,
            }
        }
        return true;
    }
    l.values.iter().all(|v| match &v.kind {
        Some(Kind::ListValue(inner)) => collect_bools(inner, &shape[1..], out),
        _ => false,
    })
}

pub fn value_to_json(v: PValue) -> Value {
    match v.kind {
        None | Some(Kind::NullValue(_)) => Value::Null,
        Some(Kind::NumberValue(x)) => Number::from_f64(x).map_or(Value::Null, Value::Number),
        Some(Kind::StringValue(s)) => Value::String(s),
        Some(Kind::BoolValue(b)) => Value::Bool(b),
        Some(Kind::StructValue(s)) => Value::Object(
            s.fields
                .into_iter()
                .map(|(k, v)| (k, value_to_json(v)))
                .collect(),
        ),
        Some(Kind::ListValue(l)) => list_to_json(l),
    }
}

fn list_to_json(l: ListValue) -> Value {
    Value::Array(l.values.into_iter().map(value_to_json).collect())
}

pub fn json_to_value(v: &Value) -> PValue {
    let kind = match v {
        Value::Null => Kind::NullValue(0),
        Value::Bool(b) => Kind::BoolValue(*b),
        Value::Number(n) => Kind::NumberValue(n.as_f64().unwrap_or(f64::NAN)),
        Value::String(s) => Kind::StringValue(s.clone()),
        Value::Array(a) => Kind::ListValue(ListValue {
            values: a.iter().map(json_to_value).collect(),
        }),
        Value::Object(o) => Kind::StructValue(Struct {
            fields: o
                .iter()
                .map(|(k, v)| (k.clone(), json_to_value(v)))
                .collect(),
        }),
    };
    PValue { kind: Some(kind) }
}

fn number(x: f64) -> PValue {
    PValue {
        kind: Some(Kind::NumberValue(x)),
    }
}

/// Builds nested `ListValue`s of the tensor's shape.
fn tensor_to_list(t: &Tensor) -> Result<ListValue> {
    let leaves: Vec<PValue> = match &t.data {
        TensorData::Bool(v) => v
            .iter()
            .map(|&b| PValue {
                kind: Some(Kind::BoolValue(b)),
            })
            .collect(),
        TensorData::Bytes(v) => v
            .iter()
            .map(|b| PValue {
                kind: Some(Kind::StringValue(String::from_utf8_lossy(b).into_owned())),
            })
            .collect(),
        other => other
            .to_f64_vec()
            .unwrap_or_default()
            .into_iter()
            .map(number)
            .collect(),
    };
    if t.shape.is_empty() {
        return Ok(ListValue { values: leaves });
    }
    Ok(nest_values(&t.shape, leaves))
}

fn nest_values(shape: &[usize], flat: Vec<PValue>) -> ListValue {
    if shape.len() <= 1 {
        return ListValue { values: flat };
    }
    let step: usize = shape[1..].iter().product();
    let mut it = flat.into_iter();
    ListValue {
        values: (0..shape[0])
            .map(|_| PValue {
                kind: Some(Kind::ListValue(nest_values(
                    &shape[1..],
                    it.by_ref().take(step).collect(),
                ))),
            })
            .collect(),
    }
}

/// Converts a reply into the gRPC message.
pub fn to_pb(m: SeldonMessage) -> Result<pb::SeldonMessage> {
    use pb::seldon_message::DataOneof;
    let data_oneof = match m.payload {
        Payload::None => None,
        Payload::Data {
            names,
            encoding,
            array,
        } => Some(DataOneof::Data(data_to_pb(names, encoding, array)?)),
        Payload::Bin(b) => Some(DataOneof::BinData(b)),
        Payload::Str(s) => Some(DataOneof::StrData(s)),
        Payload::Json(v) => Some(DataOneof::JsonData(json_to_value(&v))),
        Payload::Custom { type_url, value } => Some(DataOneof::CustomData(prost_types::Any {
            type_url,
            value: value.to_vec(),
        })),
    };
    Ok(pb::SeldonMessage {
        status: m.status.map(|s| pb::Status {
            code: s.code,
            info: s.info,
            reason: s.reason,
            status: if s.failure {
                pb::status::StatusFlag::Failure as i32
            } else {
                0
            },
        }),
        meta: Some(meta_to_pb(m.meta)),
        data_oneof,
    })
}

fn meta_to_pb(m: Meta) -> pb::Meta {
    pb::Meta {
        puid: m.puid,
        tags: m
            .tags
            .iter()
            .map(|(k, v)| (k.clone(), json_to_value(v)))
            .collect(),
        routing: m.routing.into_iter().collect(),
        request_path: m.request_path.into_iter().collect(),
        metrics: m
            .metrics
            .into_iter()
            .map(|x| pb::Metric {
                key: x.key,
                r#type: x.kind as i32,
                value: x.value,
                tags: x.tags.into_iter().collect(),
            })
            .collect(),
    }
}

fn data_to_pb(names: Vec<String>, encoding: Encoding, array: Array) -> Result<pb::DefaultData> {
    use pb::default_data::DataOneof;
    let data_oneof = match (encoding, array) {
        (Encoding::Ndarray, Array::Numeric(t)) => DataOneof::Ndarray(tensor_to_list(&t)?),
        (Encoding::Ndarray, Array::Json(Value::Array(a))) => DataOneof::Ndarray(ListValue {
            values: a.iter().map(json_to_value).collect(),
        }),
        (Encoding::Ndarray, Array::Json(other)) => DataOneof::Ndarray(ListValue { values: vec![json_to_value(&other)] }),
        (Encoding::Tensor, Array::Numeric(t)) => DataOneof::Tensor(pb::Tensor {
            shape: t
                .shape
                .iter()
                .map(|&d| i32::try_from(d).map_err(|_| CodecError::bad_output(format!("dimension {d} does not fit Seldon's int32 shape"))))
                .collect::<Result<_>>()?,
            values: t.data.to_f64_vec().ok_or_else(|| {
                CodecError::bad_output("the model returned strings, which the tensor encoding cannot carry; use ndarray or tftensor")
            })?,
        }),
        (Encoding::TfTensor, Array::Numeric(t)) => DataOneof::Tftensor(tftensor::from_tensor(&t)),
        (enc, Array::Json(_)) => {
            return Err(CodecError::bad_output(format!(
                "the model returned non-numeric data, which the {} encoding cannot carry; \
                 return a numeric array or send the request as ndarray",
                enc.name()
            )))
        }
    };
    Ok(pb::DefaultData {
        names,
        data_oneof: Some(data_oneof),
    })
}

/// Converts generic JSON (a predict_raw dict) into a message, via its JSON encoding.
pub fn json_object_to_message(v: &Map<String, Value>, limits: &Limits) -> Result<SeldonMessage> {
    let body = serde_json::to_vec(v).map_err(|e| CodecError::bad_output(e.to_string()))?;
    super::json::decode_message(&body, limits)
}

/// Nested JSON arrays from a tensor (for dicts handed to `predict_raw`).
pub fn tensor_to_json(t: &Tensor) -> Value {
    let flat: Vec<Value> = match &t.data {
        TensorData::Bool(v) => v.iter().map(|&b| Value::Bool(b)).collect(),
        TensorData::Bytes(v) => v
            .iter()
            .map(|b| Value::String(String::from_utf8_lossy(b).into_owned()))
            .collect(),
        TensorData::F16(_) | TensorData::F32(_) | TensorData::F64(_) => t
            .data
            .to_f64_vec()
            .unwrap_or_default()
            .into_iter()
            .map(|x| Number::from_f64(x).map_or(Value::Null, Value::Number))
            .collect(),
        other => other
            .to_f64_vec()
            .unwrap_or_default()
            .into_iter()
            .map(|x| Value::from(x as i64))
            .collect(),
    };
    nest(&t.shape, flat)
}
