//! Seldon messages as gRPC protobuf (`seldon.protos.SeldonMessage`), via prost types:
//! decoding picks `proto_fast` or prost + `from_pb`; encoding (`to_pb`) is here.
use bytes::Bytes;
use prost::Message;
use prost_types::{value::Kind, ListValue, Struct, Value as PValue};
use serde_json::{Map, Number, Value};

pub use super::from_pb::{feedback_from_pb, from_pb, value_to_json};
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
