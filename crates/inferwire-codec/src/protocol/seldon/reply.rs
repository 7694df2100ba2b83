//! How a model's result becomes a Seldon reply: the same payload kind as the request.
use bytes::Bytes;
use serde_json::Value;

use super::message::*;

/// What a model returned, already out of Python.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    Array(Array),
    Bin(Bytes),
    Str(String),
    /// A dict (or other JSON) that is not an array.
    Json(Value),
}

/// Builds the reply payload for `predict` by Seldon's wrapper's rules
/// (`construct_response`): a numeric array answers a `data` request in the request's
/// encoding, and any other request (`strData`, `binData`, `jsonData`, none) as a
/// `tensor`; a non-numeric array (strings, booleans, mixed) is always an `ndarray`.
/// Bytes, strings and dicts become `binData`, `strData` and `jsonData`.
pub fn predict_payload(request: &Payload, output: Output, names: Vec<String>) -> Payload {
    match output {
        Output::Bin(b) => Payload::Bin(b),
        Output::Str(s) => Payload::Str(s),
        Output::Json(v) => Payload::Json(v),
        Output::Array(array) => {
            let encoding = match (&array, request) {
                (Array::Numeric(t), _) if !is_number(t) => Encoding::Ndarray,
                (Array::Json(_), _) => Encoding::Ndarray,
                (_, Payload::Data { encoding, .. }) => *encoding,
                _ => Encoding::Tensor,
            };
            Payload::Data {
                names,
                encoding,
                array,
            }
        }
    }
}

/// numpy's `issubdtype(dtype, np.number)`: every numeric type but booleans and bytes.
fn is_number(t: &crate::tensor::Tensor) -> bool {
    !matches!(
        t.data,
        crate::tensor::TensorData::Bool(_) | crate::tensor::TensorData::Bytes(_)
    )
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
        // An array answered to a request that carried none is a `tensor`, as Seldon's.
        for request in [
            Payload::Json(Value::Null),
            Payload::Str("x".into()),
            Payload::Bin(Bytes::new()),
            Payload::None,
        ] {
            assert!(matches!(
                predict_payload(&request, one(), vec![]),
                Payload::Data {
                    encoding: Encoding::Tensor,
                    ..
                }
            ));
        }
        // Not numbers: an `ndarray`, whatever the request.
        let flags = Output::Array(Array::Numeric(
            Tensor::new(vec![1], TensorData::Bool(vec![true])).unwrap(),
        ));
        let tensor_req = Payload::Data {
            names: vec![],
            encoding: Encoding::Tensor,
            array: Array::Json(Value::Null),
        };
        assert!(matches!(
            predict_payload(&tensor_req, flags, vec![]),
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
