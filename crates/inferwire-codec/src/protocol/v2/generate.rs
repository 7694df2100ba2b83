//! Triton's generate extension: flat JSON on both sides. A request is an object whose
//! keys are input names (values: a string, number or boolean, or a rectangular list of
//! them), with `parameters` and `id` kept for themselves; the reply is an object with
//! `model_name`, `model_version` and each output by name, a one-element output as that
//! element, any other as a flat list.
//!
//! A body names at most `MAX_INPUTS` inputs: each becomes a tensor and the model's own
//! object, about a kilobyte, from as little as `"a":1,` (six bytes), so the count and not
//! the body size bounds what a body of short keys costs. A body past it is refused as it
//! is parsed, before the rest is held.
use std::fmt;

use bytes::Bytes;
use serde::de::{self, DeserializeSeed, MapAccess, Visitor};
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

/// Most inputs one flat body may name (`parameters` and `id` aside): a generate request
/// names a model's few inputs, and each costs far more than its bytes.
pub const MAX_INPUTS: usize = 1024;

/// Decodes a flat generate body into an inference request, with the same bounds and
/// checks as a V2 JSON request.
pub fn decode_request(body: &[u8], limits: &Limits) -> Result<InferRequest> {
    let mut refused = None;
    let mut de = serde_json::Deserializer::from_slice(body);
    let parsed = FieldsSeed {
        refused: &mut refused,
    }
    .deserialize(&mut de)
    .and_then(|fields| de.end().map(|()| fields));
    let fields = match (parsed, refused) {
        (Ok(fields), _) => fields,
        (Err(_), Some(Refusal::NotAnObject)) => {
            return Err(CodecError::bad_request(
                "the body must be a JSON object of inputs by name",
            ))
        }
        (Err(_), Some(Refusal::TooManyInputs)) => {
            return Err(CodecError::bad_request(format!(
                "the body names more than {MAX_INPUTS} inputs, the most a generate request \
                 may hold"
            )))
        }
        (Err(e), None) => return Err(CodecError::bad_request(format!("invalid JSON: {e}"))),
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

/// Why the top level was refused, beside serde's own errors.
#[derive(Clone, Copy)]
enum Refusal {
    NotAnObject,
    TooManyInputs,
}

/// The body's top-level object, its inputs counted as they are read.
struct FieldsSeed<'a> {
    refused: &'a mut Option<Refusal>,
}

impl<'de> DeserializeSeed<'de> for FieldsSeed<'_> {
    type Value = Map<String, Value>;

    fn deserialize<D: de::Deserializer<'de>>(
        self,
        d: D,
    ) -> std::result::Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for FieldsSeed<'_> {
    type Value = Map<String, Value>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object of inputs by name")
    }

    fn visit_map<A: MapAccess<'de>>(
        self,
        mut map: A,
    ) -> std::result::Result<Self::Value, A::Error> {
        let mut fields = Map::new();
        let mut inputs = 0usize;
        while let Some(name) = map.next_key::<String>()? {
            if !matches!(name.as_str(), "parameters" | "id") {
                inputs += 1;
                if inputs > MAX_INPUTS {
                    *self.refused = Some(Refusal::TooManyInputs);
                    return Err(de::Error::custom("too many inputs"));
                }
            }
            let value: Value = map.next_value()?;
            fields.insert(name, value);
        }
        Ok(fields)
    }

    // Anything else at the top level.
    fn visit_bool<E: de::Error>(self, _: bool) -> std::result::Result<Self::Value, E> {
        self.not_an_object()
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> std::result::Result<Self::Value, E> {
        self.not_an_object()
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> std::result::Result<Self::Value, E> {
        self.not_an_object()
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> std::result::Result<Self::Value, E> {
        self.not_an_object()
    }
    fn visit_str<E: de::Error>(self, _: &str) -> std::result::Result<Self::Value, E> {
        self.not_an_object()
    }
    fn visit_unit<E: de::Error>(self) -> std::result::Result<Self::Value, E> {
        self.not_an_object()
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, _: A) -> std::result::Result<Self::Value, A::Error> {
        self.not_an_object()
    }
}

impl FieldsSeed<'_> {
    fn not_an_object<E: de::Error>(self) -> std::result::Result<Map<String, Value>, E> {
        *self.refused = Some(Refusal::NotAnObject);
        Err(E::custom("not an object"))
    }
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
        assert!(err(b"{} x").contains("invalid JSON"));
        assert!(err(b"\"a\"").contains("JSON object"));
    }

    #[test]
    fn inputs_are_counted_as_they_are_read() {
        let body = |n: usize| {
            let keys: Vec<String> = (0..n).map(|i| format!("\"k{i}\":1")).collect();
            format!("{{\"id\":\"1\",\"parameters\":{{}},{}}}", keys.join(","))
        };
        let r = decode_request(body(MAX_INPUTS).as_bytes(), &Limits::default()).unwrap();
        assert_eq!(r.inputs.len(), MAX_INPUTS);
        // Past it: refused at the first key too many, whatever follows (even bad JSON).
        let over = decode_request(body(MAX_INPUTS + 1).as_bytes(), &Limits::default());
        let msg = over.unwrap_err().message;
        assert!(msg.contains("more than 1024 inputs"), "{msg}");
        let mut broken = body(MAX_INPUTS + 1).into_bytes();
        broken.truncate(broken.len() - 1);
        let msg = decode_request(&broken, &Limits::default())
            .unwrap_err()
            .message;
        assert!(msg.contains("more than 1024 inputs"), "{msg}");
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
