//! Triton's generate extension: flat JSON on both sides. A request is an object whose
//! keys are input names (values: a string, number or boolean, or a rectangular list of
//! them), with `parameters` and `id` kept for themselves; the reply is an object with
//! `model_name`, `model_version` and each output by name, a one-element output as that
//! element, any other as a flat list.
use bytes::Bytes;
use serde_json::{Map, Value};

use super::json::{self, write_flat};
use super::message::{InferRequest, InferResponse};
use crate::{CodecError, Limits, Result};

/// Whether a generate body is a V2 inference request instead (MLServer treats
/// `generate` as an alias of `infer`): an object with an `inputs` list of objects.
pub fn is_v2_request(body: &[u8]) -> bool {
    // Cheap first: most flat bodies never mention the key.
    if !body.windows(8).any(|w| w == b"\"inputs\"") {
        return false;
    }
    let Ok(v) = serde_json::from_slice::<Value>(body) else {
        return false;
    };
    v.get("inputs")
        .and_then(Value::as_array)
        .is_some_and(|a| a.iter().all(Value::is_object))
}

/// Decodes a flat generate body into an inference request, with the same bounds and
/// checks as a V2 JSON request.
pub fn decode_request(body: &[u8], limits: &Limits) -> Result<InferRequest> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| CodecError::bad_request(format!("invalid JSON: {e}")))?;
    let Value::Object(fields) = v else {
        return Err(CodecError::bad_request(
            "the body must be a JSON object of inputs by name",
        ));
    };
    let mut request = Map::new();
    let mut inputs = Vec::with_capacity(fields.len());
    let mut names = Vec::with_capacity(fields.len());
    for (name, value) in fields {
        match name.as_str() {
            "parameters" | "id" => {
                request.insert(name, value);
                continue;
            }
            _ => {}
        }
        let (datatype, shape) = typed(&name, &value)?;
        names.push(name.clone());
        let mut input = Map::new();
        input.insert("name".into(), Value::String(name));
        input.insert("datatype".into(), Value::String(datatype.into()));
        input.insert("shape".into(), shape.into());
        input.insert(
            "data".into(),
            if value.is_array() {
                value
            } else {
                Value::Array(vec![value])
            },
        );
        inputs.push(Value::Object(input));
    }
    if inputs.is_empty() {
        return Err(CodecError::bad_request(
            "the body names no input: give each as \"name\": value",
        ));
    }
    request.insert("inputs".into(), Value::Array(inputs));
    let body = serde_json::to_vec(&Value::Object(request))
        .map_err(|e| CodecError::bad_request(e.to_string()))?;
    // The V2 decoder names an input by its place (`inputs[1].data`); this body, by its key.
    json::decode_request(Bytes::from(body), None, limits).map_err(|mut e| {
        if let Some(rest) = e.message.strip_prefix("inputs[") {
            let (i, rest) = rest.split_once(']').unwrap_or(("", rest));
            if let Some(name) = i.parse::<usize>().ok().and_then(|i| names.get(i)) {
                let rest = rest.strip_prefix(".data").unwrap_or(rest);
                e.message = format!("{name}{rest}");
            }
        }
        e
    })
}

/// A flat value's V2 datatype and shape.
fn typed(name: &str, value: &Value) -> Result<(&'static str, Vec<usize>)> {
    let mut shape = Vec::new();
    let mut first = value;
    while let Value::Array(items) = first {
        shape.push(items.len());
        match items.first() {
            Some(v) => first = v,
            None => {
                return Err(CodecError::bad_request(format!(
                    "{name}: an empty list has no datatype"
                )))
            }
        }
    }
    let datatype = match first {
        Value::String(_) => "BYTES",
        Value::Bool(_) => "BOOL",
        Value::Number(_) if any_float(value) => "FP64",
        Value::Number(_) => "INT64",
        Value::Null | Value::Object(_) | Value::Array(_) => {
            return Err(CodecError::bad_request(format!(
                "{name}: must be a string, number or boolean, or a list of them"
            )))
        }
    };
    if shape.is_empty() {
        shape.push(1);
    }
    Ok((datatype, shape))
}

fn any_float(v: &Value) -> bool {
    match v {
        Value::Number(n) => !n.is_i64() && !n.is_u64(),
        Value::Array(items) => items.iter().any(any_float),
        _ => false,
    }
}

/// Writes `r` as the flat reply.
pub fn encode_response(r: &InferResponse, out: &mut Vec<u8>) -> Result<()> {
    out.extend_from_slice(b"{\"model_name\":");
    crate::json::write::string(&r.model_name, out);
    out.extend_from_slice(b",\"model_version\":");
    crate::json::write::string(&r.model_version, out);
    if !r.id.is_empty() {
        out.extend_from_slice(b",\"id\":");
        crate::json::write::string(&r.id, out);
    }
    for o in &r.outputs {
        out.push(b',');
        crate::json::write::string(&o.name, out);
        out.push(b':');
        let start = out.len();
        write_flat(&o.name, &o.tensor.data, out)?;
        if o.tensor.data.len() == 1 && out.len() >= start + 2 {
            // `[x]` → `x`
            out.pop();
            out.remove(start);
        }
    }
    out.push(b'}');
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::v2::InferOutput;
    use crate::{Tensor, TensorData};

    #[test]
    fn flat_inputs_become_typed_tensors() {
        let r = decode_request(
            br#"{"text_input": "hi", "max_tokens": 5, "temperature": [0.5, 1],
                 "stop": true, "ids": [[1, 2], [3, 4]], "parameters": {"stream": true},
                 "id": "7"}"#,
            &Limits::default(),
        )
        .unwrap();
        assert_eq!(r.id, "7");
        assert_eq!(r.parameters["stream"], Value::Bool(true));
        let by = |n: &str| r.inputs.iter().find(|i| i.name == n).unwrap();
        assert_eq!(
            by("text_input").tensor.data,
            TensorData::Bytes(vec!["hi".into()])
        );
        assert_eq!(by("max_tokens").tensor.data, TensorData::I64(vec![5]));
        assert_eq!(
            by("temperature").tensor.data,
            TensorData::F64(vec![0.5, 1.0])
        );
        assert_eq!(by("stop").tensor.data, TensorData::Bool(vec![true]));
        assert_eq!(by("ids").tensor.shape, vec![2, 2]);
    }

    #[test]
    fn bad_bodies_name_what_is_wrong() {
        let err = |b: &[u8]| decode_request(b, &Limits::default()).unwrap_err().message;
        assert!(err(b"[1]").contains("JSON object"));
        assert!(err(b"{}").contains("names no input"));
        assert!(err(br#"{"x": []}"#).contains("x: an empty list"));
        assert!(err(br#"{"x": {"a": 1}}"#).contains("x: must be"));
        let ragged = err(br#"{"x": [[1, 2], [3]]}"#);
        assert!(ragged.starts_with("x: "), "{ragged}");
        let wrong = err(br#"{"a": 1, "b": [1, "two"]}"#);
        assert!(wrong.starts_with("b"), "{wrong}");
        assert!(err(b"{").contains("invalid JSON"));
    }

    #[test]
    fn v2_bodies_are_told_apart() {
        assert!(is_v2_request(
            br#"{"inputs": [{"name": "a", "datatype": "INT64", "shape": [1], "data": [1]}]}"#
        ));
        assert!(!is_v2_request(br#"{"inputs": "a prompt"}"#));
        assert!(!is_v2_request(br#"{"text_input": "hi"}"#));
    }

    #[test]
    fn replies_are_flat() {
        let r = InferResponse {
            model_name: "m".into(),
            model_version: "1".into(),
            id: String::new(),
            parameters: Default::default(),
            outputs: vec![
                InferOutput {
                    name: "text_output".into(),
                    tensor: Tensor::new(vec![1], TensorData::Bytes(vec!["hello".into()])).unwrap(),
                    parameters: Default::default(),
                },
                InferOutput {
                    name: "ids".into(),
                    tensor: Tensor::new(vec![2], TensorData::I64(vec![1, 2])).unwrap(),
                    parameters: Default::default(),
                },
            ],
        };
        let mut out = Vec::new();
        encode_response(&r, &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"model_name":"m","model_version":"1","text_output":"hello","ids":[1,2]}"#
        );
    }
}
