//! A gRPC `SeldonMessage` decoded by prost, turned into inferwire's form: the protocol's
//! semantics for protobuf, which both `proto` (the prost path) and `proto_fast` (which
//! falls back on it) use.
use prost_types::{value::Kind, ListValue, Value as PValue};
use serde_json::{Number, Value};

use super::message::*;
use super::tftensor;
use crate::error::{CodecError, Result};
use crate::limits::Limits;
use crate::pb::seldon::protos as pb;
use crate::tensor::{Tensor, TensorData};

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
        None => (Encoding::Ndarray, Array::empty()),
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
    let number = |k: &Kind| match k {
        Kind::NumberValue(x) => Some(*x),
        _ => None,
    };
    if collect_leaves(&l, &shape, &mut numbers, number) {
        return Ok(Array::Numeric(Tensor::new(
            shape,
            TensorData::F64(numbers),
        )?));
    }
    let mut bools = Vec::with_capacity(n);
    let boolean = |k: &Kind| match k {
        Kind::BoolValue(b) => Some(*b),
        _ => None,
    };
    if collect_leaves(&l, &shape, &mut bools, boolean) {
        return Ok(Array::Numeric(Tensor::new(shape, TensorData::Bool(bools))?));
    }
    let v = list_to_json(l);
    check_rectangular(&v, "data.ndarray")?;
    Ok(Array::Json(v))
}

/// Appends the leaves of `l`, a list nested to `shape`, that `leaf` reads (a number, a
/// bool); false as soon as one is not, or a list has another length.
fn collect_leaves<T>(
    l: &ListValue,
    shape: &[usize],
    out: &mut Vec<T>,
    leaf: fn(&Kind) -> Option<T>,
) -> bool {
    if l.values.len() != shape[0] {
        return false;
    }
    if shape.len() == 1 {
        for v in &l.values {
            match v.kind.as_ref().and_then(leaf) {
                Some(x) => out.push(x),
                None => return false,
            }
        }
        return true;
    }
    l.values.iter().all(|v| match &v.kind {
        Some(Kind::ListValue(inner)) => collect_leaves(inner, &shape[1..], out, leaf),
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
