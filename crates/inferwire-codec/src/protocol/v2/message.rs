//! V2 requests and responses as inferwire holds them, the same for REST and gRPC, with
//! every input already decoded into a typed `Tensor`.
use serde_json::{Map, Value};

use crate::error::{CodecError, Result};
use crate::limits::Limits;
use crate::tensor::{DType, Tensor};

/// `parameters`: V2 allows bool, integer, float and string values.
pub type Parameters = Map<String, Value>;

/// Every datatype of the protocol, as it spells them.
pub const DATATYPES: [(&str, DType); 14] = [
    ("BOOL", DType::Bool),
    ("UINT8", DType::U8),
    ("UINT16", DType::U16),
    ("UINT32", DType::U32),
    ("UINT64", DType::U64),
    ("INT8", DType::I8),
    ("INT16", DType::I16),
    ("INT32", DType::I32),
    ("INT64", DType::I64),
    ("FP16", DType::F16),
    ("BF16", DType::BF16),
    ("FP32", DType::F32),
    ("FP64", DType::F64),
    ("BYTES", DType::Bytes),
];

pub fn datatype_name(d: DType) -> &'static str {
    DATATYPES
        .iter()
        .find(|(_, t)| *t == d)
        .map_or("BYTES", |(n, _)| n)
}

pub fn parse_datatype(name: &str) -> Option<DType> {
    DATATYPES.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// An input's declared datatype and shape, checked (against the limits too): the dtype,
/// the element count and the shape. `field` names the input in errors.
pub(crate) fn declared(
    field: &str,
    datatype: &str,
    shape: &[i64],
    limits: &Limits,
) -> Result<(DType, usize, Vec<usize>)> {
    let dtype = parse_datatype(datatype).ok_or_else(|| {
        CodecError::bad_request(format!(
            "{field}.datatype: {datatype:?} is not a V2 datatype ({})",
            DATATYPES.map(|(n, _)| n).join(", ")
        ))
    })?;
    let count = limits
        .element_count(shape)
        .map_err(|e| e.in_field(&format!("{field}.shape")))?;
    Ok((dtype, count, shape.iter().map(|&d| d as usize).collect()))
}

/// Refuses two inputs (or two requested outputs) of one name: a model takes its inputs
/// by name, so one of the two would be dropped without a word.
pub(crate) fn unique_names<'a>(
    what: &str,
    names: impl ExactSizeIterator<Item = &'a str>,
) -> Result<()> {
    let mut seen = std::collections::HashSet::with_capacity(names.len());
    for (i, name) in names.enumerate() {
        if !seen.insert(name) {
            return Err(CodecError::bad_request(format!(
                "{what}[{i}].name: {name:?} is given twice (names must be unique)"
            )));
        }
    }
    Ok(())
}

#[derive(Debug, Clone, PartialEq)]
pub struct InferInput {
    pub name: String,
    pub tensor: Tensor,
    pub parameters: Parameters,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct RequestedOutput {
    pub name: String,
    pub parameters: Parameters,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct InferRequest {
    pub id: String,
    pub parameters: Parameters,
    pub inputs: Vec<InferInput>,
    /// Empty: every output the model produces.
    pub outputs: Vec<RequestedOutput>,
}

/// Most entries one `parameters` object may hold (the request's, an input's, an output's,
/// or one nested in them), and how deep values may nest in it. Each entry becomes the
/// model's own Python object, costing many times its bytes; V2's values are scalars, and
/// MLServer's `headers` a flat object.
pub const MAX_PARAMETERS: usize = 1024;
pub const MAX_PARAMETER_DEPTH: usize = 16;

impl InferRequest {
    /// 400 naming the field when a `parameters` object is past `MAX_PARAMETERS` entries
    /// or `MAX_PARAMETER_DEPTH` levels.
    pub fn check_parameters(&self) -> Result<()> {
        check_parameters("parameters", &self.parameters)?;
        for (i, input) in self.inputs.iter().enumerate() {
            check_parameters(&format!("inputs[{i}].parameters"), &input.parameters)?;
        }
        for (i, output) in self.outputs.iter().enumerate() {
            check_parameters(&format!("outputs[{i}].parameters"), &output.parameters)?;
        }
        Ok(())
    }
}

fn check_parameters(field: &str, p: &Parameters) -> Result<()> {
    let too_many = |n: usize| {
        CodecError::bad_request(format!(
            "{field}: an object of {n} entries, more than the {MAX_PARAMETERS} parameters may \
             hold"
        ))
    };
    if p.len() > MAX_PARAMETERS {
        return Err(too_many(p.len()));
    }
    let mut stack: Vec<(&Value, usize)> = p.values().map(|v| (v, 1)).collect();
    while let Some((value, depth)) = stack.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match value {
            Value::Object(m) if m.len() > MAX_PARAMETERS => return Err(too_many(m.len())),
            Value::Object(m) => Box::new(m.values()),
            Value::Array(a) => Box::new(a.iter()),
            _ => continue,
        };
        if depth >= MAX_PARAMETER_DEPTH {
            return Err(CodecError::bad_request(format!(
                "{field}: nested deeper than {MAX_PARAMETER_DEPTH} levels"
            )));
        }
        stack.extend(children.map(|v| (v, depth + 1)));
    }
    Ok(())
}

/// Which outputs go back as binary data (HTTP binary extension), kept apart from the
/// request so that the request can be handed to the model.
#[derive(Debug, Clone, Default)]
pub struct BinaryOutputs {
    /// The request's `binary_data_output`.
    default: bool,
    /// Requested outputs with their own `binary_data` parameter.
    named: Vec<(String, bool)>,
}

impl BinaryOutputs {
    /// Whether output `name` goes back as binary data: its own `binary_data` parameter,
    /// else the request's `binary_data_output`.
    pub fn wants(&self, name: &str) -> bool {
        self.named
            .iter()
            .find(|(n, _)| n == name)
            .map_or(self.default, |(_, b)| *b)
    }
}

impl InferRequest {
    pub fn binary_outputs(&self) -> BinaryOutputs {
        BinaryOutputs {
            default: self
                .parameters
                .get("binary_data_output")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            named: self
                .outputs
                .iter()
                .filter_map(|o| {
                    let b = o.parameters.get("binary_data")?.as_bool()?;
                    Some((o.name.clone(), b))
                })
                .collect(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct InferOutput {
    pub name: String,
    pub tensor: Tensor,
    pub parameters: Parameters,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct InferResponse {
    pub model_name: String,
    pub model_version: String,
    pub id: String,
    pub parameters: Parameters,
    pub outputs: Vec<InferOutput>,
}

/// A tensor passed by reference through Triton's shared-memory extension: its
/// `shared_memory_region`, `shared_memory_offset` (default 0) and
/// `shared_memory_byte_size` parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedMemoryRef {
    pub region: String,
    pub offset: u64,
    pub byte_size: u64,
}

/// The parameter that marks a tensor passed by reference.
pub const SHARED_MEMORY_REGION: &str = "shared_memory_region";

/// `parameters`' shared-memory reference, if it has one. As Triton: the region and the
/// byte size are required together, the offset is optional. `field` names the tensor.
pub fn shared_memory_ref(parameters: &Parameters, field: &str) -> Result<Option<SharedMemoryRef>> {
    let region = parameters.get(SHARED_MEMORY_REGION);
    let size = parameters.get("shared_memory_byte_size");
    let offset = parameters.get("shared_memory_offset");
    let (region, size) = match (region, size) {
        (None, None) if offset.is_none() => return Ok(None),
        (Some(r), Some(s)) => (r, s),
        _ => {
            return Err(CodecError::bad_request(format!(
                "{field}.parameters: shared_memory_region and shared_memory_byte_size go \
                 together (shared_memory_offset is optional)"
            )))
        }
    };
    let region = region.as_str().filter(|r| !r.is_empty()).ok_or_else(|| {
        CodecError::bad_request(format!(
            "{field}.parameters.shared_memory_region: must be a registered region's name, \
             got {region}"
        ))
    })?;
    let count = |v: &Value, name: &str| {
        v.as_u64().ok_or_else(|| {
            CodecError::bad_request(format!(
                "{field}.parameters.{name}: must be a byte count (a whole number, 0 or more), \
                 got {v}"
            ))
        })
    };
    Ok(Some(SharedMemoryRef {
        region: region.to_owned(),
        offset: offset.map_or(Ok(0), |o| count(o, "shared_memory_offset"))?,
        byte_size: count(size, "shared_memory_byte_size")?,
    }))
}

/// Where the decoders read the inputs passed by reference (the server's registry of
/// shared-memory regions): the `byte_size` bytes at `offset` in `region`. `field` names
/// the input in errors.
pub trait SharedInputs {
    fn read(&self, field: &str, at: &SharedMemoryRef) -> Result<bytes::Bytes>;
}

/// For decoders given no registry: every input passed by reference is refused.
pub struct NoSharedMemory;

impl SharedInputs for NoSharedMemory {
    fn read(&self, field: &str, _: &SharedMemoryRef) -> Result<bytes::Bytes> {
        Err(CodecError::bad_request(format!(
            "{field}.parameters.shared_memory_region: inputs in shared memory are not taken here"
        )))
    }
}

/// An input passed by reference: its data from `shm`, checked against its datatype and
/// shape as any raw data is.
pub(crate) fn shared_input(
    shm: &dyn SharedInputs,
    field: &str,
    at: &SharedMemoryRef,
    dtype: crate::tensor::DType,
    shape: Vec<usize>,
) -> Result<Tensor> {
    let raw = shm.read(field, at)?;
    super::binary::from_bytes(raw, dtype, shape, field)
}

/// Whether an output was written into shared memory: it then goes back without data.
pub fn in_shared_memory(o: &InferOutput) -> bool {
    o.parameters.contains_key(SHARED_MEMORY_REGION)
}

/// The outputs a request asked for (`wanted`; empty: all), in its order; 400 naming an
/// output the model did not produce.
pub fn pick_outputs(
    wanted: &[String],
    outputs: Vec<InferOutput>,
) -> crate::Result<Vec<InferOutput>> {
    if wanted.is_empty() {
        return Ok(outputs);
    }
    let produced: Vec<String> = outputs.iter().map(|o| o.name.clone()).collect();
    let mut outputs: Vec<_> = outputs.into_iter().map(Some).collect();
    let mut picked = Vec::with_capacity(wanted.len());
    for name in wanted {
        let found = outputs
            .iter_mut()
            .find(|o| o.as_ref().is_some_and(|o| &o.name == name))
            .and_then(Option::take);
        match found {
            Some(o) => picked.push(o),
            None => {
                return Err(crate::CodecError::bad_request(format!(
                    "outputs: the model produced no output named {name:?} (it produced {})",
                    produced.join(", ")
                )));
            }
        }
    }
    Ok(picked)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_are_bounded_in_entries_and_depth() {
        let mut req = InferRequest::default();
        for i in 0..MAX_PARAMETERS {
            req.parameters.insert(format!("k{i}"), Value::from(1));
        }
        req.check_parameters().unwrap();
        req.parameters.insert("one more".into(), Value::from(1));
        let e = req.check_parameters().unwrap_err().to_string();
        assert!(e.contains("parameters: an object of 1025 entries"), "{e}");
        let mut deep = Value::from(1);
        for _ in 0..MAX_PARAMETER_DEPTH {
            deep = Value::Array(vec![deep]);
        }
        let mut req = InferRequest::default();
        req.outputs.push(RequestedOutput {
            name: "y".into(),
            parameters: [("p".to_string(), deep)].into_iter().collect(),
        });
        let e = req.check_parameters().unwrap_err().to_string();
        assert!(
            e.contains("outputs[0].parameters: nested deeper than 16"),
            "{e}"
        );
    }
}
