//! Seldon messages as inferwire holds them: the same for JSON and protobuf, with numeric
//! arrays already decoded into `Tensor`s.
use std::collections::BTreeMap;

use bytes::Bytes;
use serde_json::{Map, Value};

use crate::limits::Limits;
use crate::tensor::{Tensor, TensorData};

/// How `data` was (or will be) encoded; a reply uses the request's encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Encoding {
    Ndarray,
    Tensor,
    TfTensor,
}

impl Encoding {
    pub fn name(self) -> &'static str {
        match self {
            Encoding::Ndarray => "ndarray",
            Encoding::Tensor => "tensor",
            Encoding::TfTensor => "tftensor",
        }
    }
}

/// Seldon's `tensor`: `values` laid out by `shape`, or flat when no shape is given. The
/// shape is checked (sign, overflow, element limit) before it is trusted.
pub fn shaped_tensor(dims: &[i64], data: TensorData, limits: &Limits) -> crate::Result<Tensor> {
    let shape = if dims.is_empty() {
        vec![data.len()]
    } else {
        limits
            .element_count(dims)
            .map_err(|e| e.in_field("shape"))?;
        dims.iter().map(|&d| d as usize).collect()
    };
    Tensor::new(shape, data)
}

/// Refuses a ragged `ndarray` (`[[1, 2], [3]]`), naming where it is ragged: numpy cannot
/// make an array of it, and would fail inside the model's call instead.
pub fn check_rectangular(v: &Value, field: &str) -> crate::Result<()> {
    // The shape the first elements give; every list must follow it.
    let mut shape = Vec::new();
    let mut probe = v;
    while let Value::Array(items) = probe {
        shape.push(items.len());
        match items.first() {
            Some(first) => probe = first,
            None => break,
        }
    }
    let mut path = Vec::new();
    walk(v, &shape, &mut path).map_err(|why| {
        let at: String = path.iter().map(|i| format!("[{i}]")).collect();
        crate::CodecError::bad_request(format!(
            "{field}{at}: {why} (a ragged list is not an array: every row must have as \
             many items)"
        ))
    })
}

fn walk(v: &Value, shape: &[usize], path: &mut Vec<usize>) -> Result<(), String> {
    let depth = path.len();
    match (v, shape.get(depth)) {
        (Value::Array(items), Some(&n)) if items.len() == n => {
            for (i, item) in items.iter().enumerate() {
                path.push(i);
                walk(item, shape, path)?;
                path.pop();
            }
            Ok(())
        }
        (Value::Array(items), Some(&n)) => {
            Err(format!("{} items where {n} were expected", items.len()))
        }
        (Value::Array(_), None) => Err("a list where the first row has a value".into()),
        (_, Some(_)) => Err("a value where the first row has a list".into()),
        (_, None) => Ok(()),
    }
}

/// The array inside `data`.
#[derive(Debug, Clone, PartialEq)]
pub enum Array {
    Numeric(Tensor),
    /// An `ndarray` that is not a rectangular numeric array (strings, mixed, ragged):
    /// the model gets it as numpy would build it from the lists.
    Json(Value),
}

impl Array {
    /// A `data` that holds none of ndarray, tensor, tftensor, as Seldon's wrapper reads
    /// it: an empty float64 array (`np.array([])`), the names kept.
    pub fn empty() -> Self {
        Array::Numeric(Tensor {
            shape: vec![0],
            data: TensorData::F64(Vec::new()),
        })
    }
}

/// The payload of a message: exactly one of Seldon's `data_oneof` choices.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Payload {
    #[default]
    None,
    Data {
        names: Vec<String>,
        encoding: Encoding,
        array: Array,
    },
    Bin(Bytes),
    Str(String),
    Json(Value),
    /// `customData` (a `google.protobuf.Any`): passed through, never interpreted.
    Custom {
        type_url: String,
        value: Bytes,
    },
}

impl Payload {
    /// The name of the payload kind, as the protocol spells the field.
    pub fn kind(&self) -> &'static str {
        match self {
            Payload::None => "none",
            Payload::Data { encoding, .. } => encoding.name(),
            Payload::Bin(_) => "binData",
            Payload::Str(_) => "strData",
            Payload::Json(_) => "jsonData",
            Payload::Custom { .. } => "customData",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MetricType {
    #[default]
    Counter,
    Gauge,
    Timer,
}

impl MetricType {
    pub fn name(self) -> &'static str {
        match self {
            MetricType::Counter => "COUNTER",
            MetricType::Gauge => "GAUGE",
            MetricType::Timer => "TIMER",
        }
    }

    pub fn from_name(s: &str) -> Option<Self> {
        match s {
            "COUNTER" => Some(MetricType::Counter),
            "GAUGE" => Some(MetricType::Gauge),
            "TIMER" => Some(MetricType::Timer),
            _ => None,
        }
    }

    pub fn from_i32(n: i32) -> Option<Self> {
        match n {
            0 => Some(MetricType::Counter),
            1 => Some(MetricType::Gauge),
            2 => Some(MetricType::Timer),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Metric {
    pub key: String,
    pub kind: MetricType,
    pub value: f32,
    pub tags: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Meta {
    pub puid: String,
    pub tags: Map<String, Value>,
    pub routing: BTreeMap<String, i32>,
    pub request_path: BTreeMap<String, String>,
    pub metrics: Vec<Metric>,
}

impl Meta {
    pub fn is_empty(&self) -> bool {
        self.puid.is_empty()
            && self.tags.is_empty()
            && self.routing.is_empty()
            && self.request_path.is_empty()
            && self.metrics.is_empty()
    }
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Status {
    pub code: i32,
    pub info: String,
    pub reason: String,
    pub failure: bool,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct SeldonMessage {
    pub status: Option<Status>,
    pub meta: Meta,
    pub payload: Payload,
}

impl SeldonMessage {
    /// A FAILURE reply, as Seldon sends for errors.
    pub fn failure(code: i32, reason: &str, info: impl Into<String>) -> Self {
        Self {
            status: Some(Status {
                code,
                info: info.into(),
                reason: reason.to_string(),
                failure: true,
            }),
            ..Self::default()
        }
    }
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Feedback {
    pub request: Option<SeldonMessage>,
    pub response: Option<SeldonMessage>,
    pub reward: f32,
    pub truth: Option<SeldonMessage>,
}
