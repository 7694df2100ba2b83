//! V2 over gRPC: `ModelInferRequest` → `InferRequest` (typed `contents` or
//! `raw_input_contents`) and `InferResponse` → `ModelInferResponse`.
use std::collections::HashMap;

use half::{bf16, f16};
use serde_json::Value;

use super::binary;
use super::message::*;
use crate::error::{Cause, CodecError, Result};
use crate::limits::Limits;
use crate::pb::inference as pb;
use crate::pb::inference::infer_parameter::ParameterChoice;
use crate::tensor::{DType, Tensor, TensorData};

fn parameters(p: HashMap<String, pb::InferParameter>) -> Parameters {
    let mut out: Vec<(String, Value)> = p
        .into_iter()
        .filter_map(|(k, v)| {
            let v = match v.parameter_choice? {
                ParameterChoice::BoolParam(b) => Value::from(b),
                ParameterChoice::Int64Param(i) => Value::from(i),
                ParameterChoice::StringParam(s) => Value::from(s),
                ParameterChoice::DoubleParam(d) => Value::from(d),
                ParameterChoice::Uint64Param(u) => Value::from(u),
            };
            Some((k, v))
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out.into_iter().collect()
}

fn to_pb_parameters(p: &Parameters) -> HashMap<String, pb::InferParameter> {
    p.iter()
        .filter_map(|(k, v)| {
            let choice = match v {
                Value::Bool(b) => ParameterChoice::BoolParam(*b),
                Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
                    (Some(i), _, _) => ParameterChoice::Int64Param(i),
                    (None, Some(u), _) => ParameterChoice::Uint64Param(u),
                    (_, _, Some(f)) => ParameterChoice::DoubleParam(f),
                    _ => return None,
                },
                Value::String(s) => ParameterChoice::StringParam(s.clone()),
                // Other JSON values have no protobuf form: sent as their JSON text.
                other => ParameterChoice::StringParam(other.to_string()),
            };
            Some((
                k.clone(),
                pb::InferParameter {
                    parameter_choice: Some(choice),
                },
            ))
        })
        .collect()
}

/// Whether the reply to `req` goes in `raw_output_contents`. Triton always answers raw
/// and its clients (tritonclient, perf_analyzer) read only raw outputs for every datatype
/// but BYTES, so raw is the default; a request that sent typed `contents` is answered
/// typed, as KServe's clients and MLServer do, unless an input is in shared memory (only
/// Triton's clients send that). A request-level `binary_data_output` boolean (the HTTP
/// binary extension's parameter) chooses explicitly.
pub fn reply_raw(req: &pb::ModelInferRequest) -> bool {
    if let Some(ParameterChoice::BoolParam(b)) = req
        .parameters
        .get("binary_data_output")
        .and_then(|p| p.parameter_choice.as_ref())
    {
        return *b;
    }
    !req.raw_input_contents.is_empty()
        || req.inputs.iter().all(|i| i.contents.is_none())
        || req
            .inputs
            .iter()
            .any(|i| i.parameters.contains_key(super::SHARED_MEMORY_REGION))
}

pub fn from_pb(req: pb::ModelInferRequest, limits: &Limits) -> Result<InferRequest> {
    from_pb_with(req, limits, &NoSharedMemory)
}

/// `from_pb`, reading the inputs passed by reference (Triton's shared-memory parameters)
/// from `shm`. As Triton, `raw_input_contents` then holds one entry for each of the other
/// inputs, in order.
pub fn from_pb_with(
    req: pb::ModelInferRequest,
    limits: &Limits,
    shm: &dyn SharedInputs,
) -> Result<InferRequest> {
    unique_names("inputs", req.inputs.iter().map(|i| i.name.as_str()))?;
    unique_names("outputs", req.outputs.iter().map(|o| o.name.as_str()))?;
    let mut inputs = Vec::with_capacity(req.inputs.len());
    let mut refs = Vec::with_capacity(req.inputs.len());
    for (i, input) in req.inputs.iter().enumerate() {
        refs.push(shared_memory_ref(
            &parameters(input.parameters.clone()),
            &format!("inputs[{i}]"),
        )?);
    }
    let by_value = refs.iter().filter(|r| r.is_none()).count();
    let raw = req.raw_input_contents;
    if !raw.is_empty() {
        // The protocol takes an input's data in one place: raw for all, or typed.
        if let Some((i, input)) = req
            .inputs
            .iter()
            .enumerate()
            .find(|(_, input)| input.contents.as_ref().is_some_and(has_values))
        {
            return Err(CodecError::bad_request(format!(
                "inputs[{i}]: has typed contents while the request has raw_input_contents; \
                 send every input one way"
            ))
            .because(Cause::ContentsWithRaw {
                input: input.name.clone(),
            }));
        }
    }
    if !raw.is_empty() && raw.len() != by_value {
        return Err(CodecError::bad_request(format!(
            "raw_input_contents: {} entries for {by_value} inputs (one each, in order{})",
            raw.len(),
            if by_value < refs.len() {
                ", less those in shared memory"
            } else {
                ""
            }
        )));
    }
    let mut raw = raw.into_iter();
    for ((i, input), at) in req.inputs.into_iter().enumerate().zip(refs) {
        let field = format!("inputs[{i}]");
        let (dtype, count, shape) = declared(&field, &input.datatype, &input.shape, limits)?;
        let tensor = match at {
            Some(at) => {
                if input.contents.is_some() {
                    return Err(CodecError::bad_request(format!(
                        "{field}: has contents and shared_memory_region; send one or the other"
                    )));
                }
                shared_input(shm, &field, &at, dtype, shape).map_err(|e| e.of_input(&input.name))?
            }
            None => match raw.next() {
                Some(bytes) => binary::from_bytes(bytes, dtype, shape, &field)
                    .map_err(|e| e.of_input(&input.name))?,
                None => typed(
                    input.contents.unwrap_or_default(),
                    dtype,
                    shape,
                    count,
                    &field,
                )?,
            },
        };
        inputs.push(InferInput {
            name: input.name,
            tensor,
            parameters: parameters(input.parameters),
        });
    }
    let request = InferRequest {
        id: req.id,
        parameters: parameters(req.parameters),
        inputs,
        outputs: req
            .outputs
            .into_iter()
            .map(|o| RequestedOutput {
                name: o.name,
                parameters: parameters(o.parameters),
            })
            .collect(),
    };
    request.check_parameters()?;
    Ok(request)
}

/// Whether typed `contents` hold any value (an empty message is no data).
fn has_values(c: &pb::InferTensorContents) -> bool {
    !(c.bool_contents.is_empty()
        && c.int_contents.is_empty()
        && c.int64_contents.is_empty()
        && c.uint_contents.is_empty()
        && c.uint64_contents.is_empty()
        && c.fp32_contents.is_empty()
        && c.fp64_contents.is_empty()
        && c.bytes_contents.is_empty())
}

/// An input's typed `contents`: the field for its datatype (narrow integers travel
/// widened in `int_contents` / `uint_contents`, and are narrowed back with a range check).
fn typed(
    c: pb::InferTensorContents,
    dtype: DType,
    shape: Vec<usize>,
    count: usize,
    field: &str,
) -> Result<Tensor> {
    let name = datatype_name(dtype);
    let data = match dtype {
        DType::Bool => TensorData::Bool(c.bool_contents),
        DType::I8 => TensorData::I8(narrowed(c.int_contents, field, name)?),
        DType::I16 => TensorData::I16(narrowed(c.int_contents, field, name)?),
        DType::I32 => TensorData::I32(c.int_contents),
        DType::I64 => TensorData::I64(c.int64_contents),
        DType::U8 => TensorData::U8(narrowed(c.uint_contents, field, name)?),
        DType::U16 => TensorData::U16(narrowed(c.uint_contents, field, name)?),
        DType::U32 => TensorData::U32(c.uint_contents),
        DType::U64 => TensorData::U64(c.uint64_contents),
        DType::F32 => TensorData::F32(c.fp32_contents),
        DType::F64 => TensorData::F64(c.fp64_contents),
        DType::Bytes => TensorData::Bytes(c.bytes_contents),
        DType::F16 | DType::BF16 => {
            return Err(CodecError::bad_request(format!(
                "{field}: {name} has no typed contents field; send it in raw_input_contents"
            )))
        }
    };
    if data.len() != count {
        return Err(CodecError::bad_request(format!(
            "{field}.contents: {} {name} values for shape {shape:?}, which needs {count}",
            data.len()
        )));
    }
    Tensor::new(shape, data)
}

/// `v`, widened integers of `field`, as the narrow type `T` (`name`): an error names the
/// first value that does not fit.
fn narrowed<W: Copy + std::fmt::Display, T: TryFrom<W>>(
    v: Vec<W>,
    field: &str,
    name: &str,
) -> Result<Vec<T>> {
    v.into_iter()
        .map(|x| {
            T::try_from(x).map_err(|_| {
                CodecError::bad_request(format!("{field}.contents: {x} does not fit in {name}"))
            })
        })
        .collect()
}

/// A request as a client sends it (load generators, tests): inputs in
/// `raw_input_contents` with `raw`, else typed (FP16 and BF16 always raw).
pub fn to_pb_request(req: InferRequest, model_name: &str, raw: bool) -> pb::ModelInferRequest {
    let raw = raw
        || req
            .inputs
            .iter()
            .any(|i| matches!(i.tensor.dtype(), DType::F16 | DType::BF16));
    let mut out = pb::ModelInferRequest {
        model_name: model_name.to_string(),
        id: req.id,
        parameters: to_pb_parameters(&req.parameters),
        outputs: req
            .outputs
            .iter()
            .map(|o| pb::model_infer_request::InferRequestedOutputTensor {
                name: o.name.clone(),
                parameters: to_pb_parameters(&o.parameters),
            })
            .collect(),
        ..Default::default()
    };
    for i in req.inputs {
        let shape = i.tensor.shape.iter().map(|&d| d as i64).collect();
        let datatype = datatype_name(i.tensor.dtype()).to_string();
        let contents = if raw {
            out.raw_input_contents
                .push(binary::into_bytes(i.tensor.data));
            None
        } else {
            Some(contents(i.tensor.data))
        };
        out.inputs.push(pb::model_infer_request::InferInputTensor {
            name: i.name,
            datatype,
            shape,
            parameters: to_pb_parameters(&i.parameters),
            contents,
        });
    }
    out
}

/// A reply as a client reads it: outputs decoded from `raw_output_contents` or typed
/// contents, with the same checks as a request's inputs (an output tensor has an input
/// tensor's fields).
pub fn response_from_pb(r: pb::ModelInferResponse, limits: &Limits) -> Result<InferResponse> {
    let as_request = pb::ModelInferRequest {
        inputs: r
            .outputs
            .into_iter()
            .map(|o| pb::model_infer_request::InferInputTensor {
                name: o.name,
                datatype: o.datatype,
                shape: o.shape,
                parameters: o.parameters,
                contents: o.contents,
            })
            .collect(),
        raw_input_contents: r.raw_output_contents,
        ..Default::default()
    };
    let decoded = from_pb(as_request, limits).map_err(|e| {
        CodecError::bad_output(
            e.message
                .replace("raw_input_contents", "raw_output_contents"),
        )
    })?;
    Ok(InferResponse {
        model_name: r.model_name,
        model_version: r.model_version,
        id: r.id,
        parameters: parameters(r.parameters),
        outputs: decoded
            .inputs
            .into_iter()
            .map(|i| InferOutput {
                name: i.name,
                tensor: i.tensor,
                parameters: i.parameters,
            })
            .collect(),
    })
}

/// The reply. With `raw`, every output goes in `raw_output_contents` (what Triton does,
/// and what tritonclient reads fastest); otherwise in typed `contents`, except FP16 and
/// BF16, which only have a raw form.
pub fn to_pb(r: InferResponse, raw: bool) -> pb::ModelInferResponse {
    let any_half = r
        .outputs
        .iter()
        .any(|o| matches!(o.tensor.dtype(), DType::F16 | DType::BF16));
    // The protocol keeps raw and typed outputs apart: one half-precision output makes
    // every output raw.
    let raw = raw || any_half;
    let mut out = pb::ModelInferResponse {
        model_name: r.model_name,
        model_version: r.model_version,
        id: r.id,
        parameters: to_pb_parameters(&r.parameters),
        ..Default::default()
    };
    for o in r.outputs {
        let shape = o.tensor.shape.iter().map(|&d| d as i64).collect();
        let datatype = datatype_name(o.tensor.dtype()).to_string();
        let by_reference = in_shared_memory(&o);
        let contents = if raw {
            // Written into the client's shared memory: an empty entry keeps the others
            // in step with their outputs, as Triton sends it.
            out.raw_output_contents.push(if by_reference {
                bytes::Bytes::new()
            } else {
                binary::into_bytes(o.tensor.data)
            });
            None
        } else if by_reference {
            None
        } else {
            Some(contents(o.tensor.data))
        };
        out.outputs
            .push(pb::model_infer_response::InferOutputTensor {
                name: o.name,
                datatype,
                shape,
                parameters: to_pb_parameters(&o.parameters),
                contents,
            });
    }
    out
}

fn contents(data: TensorData) -> pb::InferTensorContents {
    let mut c = pb::InferTensorContents::default();
    match data {
        TensorData::Bool(v) => c.bool_contents = v,
        TensorData::I8(v) => c.int_contents = v.into_iter().map(i32::from).collect(),
        TensorData::I16(v) => c.int_contents = v.into_iter().map(i32::from).collect(),
        TensorData::I32(v) => c.int_contents = v,
        TensorData::I64(v) => c.int64_contents = v,
        TensorData::U8(v) => c.uint_contents = v.into_iter().map(u32::from).collect(),
        TensorData::U16(v) => c.uint_contents = v.into_iter().map(u32::from).collect(),
        TensorData::U32(v) => c.uint_contents = v,
        TensorData::U64(v) => c.uint64_contents = v,
        TensorData::F32(v) => c.fp32_contents = v,
        TensorData::F64(v) => c.fp64_contents = v,
        TensorData::Bytes(v) => c.bytes_contents = v,
        // `to_pb` sends these raw; widen rather than lose them if ever called.
        TensorData::F16(v) => c.fp32_contents = v.into_iter().map(f16::to_f32).collect(),
        TensorData::BF16(v) => c.fp32_contents = v.into_iter().map(bf16::to_f32).collect(),
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn input(datatype: &str, shape: Vec<i64>, c: pb::InferTensorContents) -> pb::ModelInferRequest {
        pb::ModelInferRequest {
            model_name: "m".into(),
            inputs: vec![pb::model_infer_request::InferInputTensor {
                name: "x".into(),
                datatype: datatype.into(),
                shape,
                contents: Some(c),
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    #[test]
    fn typed_and_raw_contents() {
        let c = pb::InferTensorContents {
            int_contents: vec![1, -2],
            ..Default::default()
        };
        let r = from_pb(input("INT8", vec![2], c), &Limits::default()).unwrap();
        assert_eq!(r.inputs[0].tensor.data, TensorData::I8(vec![1, -2]));
        let c = pb::InferTensorContents {
            int_contents: vec![300],
            ..Default::default()
        };
        let e = from_pb(input("INT8", vec![1], c), &Limits::default()).unwrap_err();
        assert!(e.message.contains("300 does not fit in INT8"), "{e:?}");
        let mut req = input("FP16", vec![2], Default::default());
        req.raw_input_contents = vec![Bytes::from(vec![0, 0x3c, 0, 0xc0])];
        let r = from_pb(req, &Limits::default()).unwrap();
        assert_eq!(
            r.inputs[0].tensor.data,
            TensorData::F16(vec![f16::from_f32(1.0), f16::from_f32(-2.0)])
        );
        let e = from_pb(
            input("FP16", vec![1], Default::default()),
            &Limits::default(),
        );
        assert!(e.unwrap_err().message.contains("raw_input_contents"));
        // Raw data for one input and typed values for another: refused, naming it.
        let mut req = input(
            "INT32",
            vec![1],
            pb::InferTensorContents {
                int_contents: vec![7],
                ..Default::default()
            },
        );
        req.raw_input_contents = vec![Bytes::from(vec![0, 0, 0, 0])];
        let e = from_pb(req, &Limits::default()).unwrap_err();
        assert_eq!(
            e.cause.as_deref(),
            Some(&Cause::ContentsWithRaw { input: "x".into() })
        );
    }

    /// A registry that holds 8 bytes, 1.0 and 2.0 as FP32, in region "r".
    struct OneRegion;

    impl SharedInputs for OneRegion {
        fn read(&self, field: &str, at: &SharedMemoryRef) -> Result<Bytes> {
            if at.region != "r" {
                return Err(CodecError::bad_request(format!("{field}: no region")));
            }
            let all: Vec<u8> = [1.0f32, 2.0].iter().flat_map(|f| f.to_le_bytes()).collect();
            Ok(Bytes::from(
                all[at.offset as usize..][..at.byte_size as usize].to_vec(),
            ))
        }
    }

    #[test]
    fn inputs_in_shared_memory_take_no_raw_entry() {
        let shm_param = |v: ParameterChoice| pb::InferParameter {
            parameter_choice: Some(v),
        };
        let in_shm = pb::model_infer_request::InferInputTensor {
            name: "a".into(),
            datatype: "FP32".into(),
            shape: vec![1],
            parameters: [
                (
                    "shared_memory_region".to_string(),
                    shm_param(ParameterChoice::StringParam("r".into())),
                ),
                (
                    "shared_memory_byte_size".to_string(),
                    shm_param(ParameterChoice::Int64Param(4)),
                ),
                (
                    "shared_memory_offset".to_string(),
                    shm_param(ParameterChoice::Int64Param(4)),
                ),
            ]
            .into(),
            ..Default::default()
        };
        let mut req = input("INT8", vec![1], Default::default());
        req.inputs[0].contents = None;
        req.inputs.insert(0, in_shm);
        req.raw_input_contents = vec![Bytes::from_static(&[5])];
        let r = from_pb_with(req.clone(), &Limits::default(), &OneRegion).unwrap();
        assert_eq!(r.inputs[0].tensor.data, TensorData::F32(vec![2.0]));
        assert_eq!(r.inputs[1].tensor.data, TensorData::I8(vec![5]));
        // Without a registry: refused, naming the input.
        let e = from_pb(req.clone(), &Limits::default()).unwrap_err();
        assert!(
            e.message
                .starts_with("inputs[0].parameters.shared_memory_region"),
            "{e:?}"
        );
        // One raw entry per input, less those in shared memory.
        req.raw_input_contents.push(Bytes::from_static(&[6]));
        let e = from_pb_with(req, &Limits::default(), &OneRegion).unwrap_err();
        assert!(e.message.contains("less those in shared memory"), "{e:?}");
    }

    #[test]
    fn reply_raw_unless_typed_or_asked() {
        let c = pb::InferTensorContents {
            fp32_contents: vec![1.0],
            ..Default::default()
        };
        let mut typed = input("FP32", vec![1], c);
        assert!(!reply_raw(&typed));
        let mut by_reference = typed.clone();
        by_reference.inputs[0].contents = None;
        assert!(reply_raw(&by_reference), "no contents at all: Triton's raw");
        assert!(reply_raw(&pb::ModelInferRequest::default()), "no inputs");
        let mut in_shm = typed.clone();
        in_shm.inputs[0].parameters.insert(
            super::super::SHARED_MEMORY_REGION.into(),
            pb::InferParameter {
                parameter_choice: Some(ParameterChoice::StringParam("r".into())),
            },
        );
        assert!(
            reply_raw(&in_shm),
            "an input in shared memory: Triton's client"
        );
        let mut raw = by_reference.clone();
        raw.raw_input_contents = vec![Bytes::from_static(&[0, 0, 128, 63])];
        assert!(reply_raw(&raw));
        let ask = |b| pb::InferParameter {
            parameter_choice: Some(ParameterChoice::BoolParam(b)),
        };
        typed
            .parameters
            .insert("binary_data_output".into(), ask(true));
        assert!(reply_raw(&typed));
        raw.parameters
            .insert("binary_data_output".into(), ask(false));
        assert!(!reply_raw(&raw));
    }

    #[test]
    fn replies_raw_or_typed() {
        let r = InferResponse {
            outputs: vec![InferOutput {
                name: "y".into(),
                tensor: Tensor::new(vec![2], TensorData::U8(vec![1, 2])).unwrap(),
                parameters: Parameters::new(),
            }],
            ..Default::default()
        };
        let typed = to_pb(r.clone(), false);
        assert_eq!(
            typed.outputs[0].contents.as_ref().unwrap().uint_contents,
            vec![1, 2]
        );
        let raw = to_pb(r, true);
        assert_eq!(raw.raw_output_contents, vec![Bytes::from_static(&[1, 2])]);
        assert_eq!(raw.outputs[0].datatype, "UINT8");
    }
}
