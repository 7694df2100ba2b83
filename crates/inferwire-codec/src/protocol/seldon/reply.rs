//! How a model's result becomes a Seldon reply: the same payload kind as the request.
use bytes::Bytes;
use serde_json::Value;

use super::message::*;
use super::proto::tensor_to_json;

/// What a model returned, already out of Python.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    Array(Array),
    Bin(Bytes),
    Str(String),
    /// A dict (or other JSON) that is not an array.
    Json(Value),
}

/// Builds the reply payload for `predict`: arrays use the request's encoding (`ndarray`
/// for requests that carried no array), bytes and strings become `binData`/`strData`,
/// and a `jsonData` request gets `jsonData` back.
pub fn predict_payload(request: &Payload, output: Output, names: Vec<String>) -> Payload {
    let json_request = matches!(request, Payload::Json(_));
    match output {
        Output::Bin(b) => Payload::Bin(b),
        Output::Str(s) => Payload::Str(s),
        Output::Json(v) => Payload::Json(v),
        Output::Array(a) if json_request => Payload::Json(match a {
            Array::Numeric(t) => tensor_to_json(&t),
            Array::Json(v) => v,
        }),
        Output::Array(array) => {
            let encoding = match request {
                Payload::Data { encoding, .. } => *encoding,
                _ => Encoding::Ndarray,
            };
            Payload::Data {
                names,
                encoding,
                array,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::{Tensor, TensorData};

    fn one() -> Output {
        Output::Array(Array::Numeric(
            Tensor::new(vec![1], TensorData::I64(vec![1])).unwrap(),
        ))
    }

    #[test]
    fn reply_follows_the_request() {
        let req = Payload::Data {
            names: vec![],
            encoding: Encoding::TfTensor,
            array: Array::Json(Value::Null),
        };
        match predict_payload(&req, one(), vec!["a".into()]) {
            Payload::Data {
                encoding, names, ..
            } => {
                assert_eq!(encoding, Encoding::TfTensor);
                assert_eq!(names, vec!["a".to_string()]);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            predict_payload(&Payload::Json(Value::Null), one(), vec![]),
            Payload::Json(serde_json::json!([1]))
        );
        assert!(matches!(
            predict_payload(&Payload::Str("x".into()), one(), vec![]),
            Payload::Data {
                encoding: Encoding::Ndarray,
                ..
            }
        ));
        assert_eq!(
            predict_payload(&Payload::None, Output::Str("s".into()), vec![]),
            Payload::Str("s".into())
        );
    }
}
