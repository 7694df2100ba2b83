//! Dynamic batching's data side: which requests may share a model call, how their rows
//! are joined into one message, and how the model's answer is cut back into one reply
//! per request, each in its own request's encoding.
use inferwire_codec::protocol::seldon::reply::Output;
use inferwire_codec::protocol::seldon::{Array, Payload, SeldonMessage};
use inferwire_codec::{rows, DType};
use serde_json::{Map, Value};

use crate::error::{Kind, ServeError};
use crate::model::Answer;

pub mod v2;

/// Requests with equal keys can be joined: numeric arrays of one dtype, with the same
/// dimensions after the first and the same column names.
#[derive(Debug, PartialEq, Eq)]
pub struct Key {
    dtype: DType,
    trailing: Vec<usize>,
    names: Vec<String>,
}

/// `None` for requests that are always run alone (strings, `jsonData`, bytes, scalars).
pub fn key(msg: &SeldonMessage) -> Option<Key> {
    match &msg.payload {
        Payload::Data {
            names,
            array: Array::Numeric(t),
            ..
        } if !t.shape.is_empty() => Some(Key {
            dtype: t.dtype(),
            trailing: t.shape[1..].to_vec(),
            names: names.clone(),
        }),
        _ => None,
    }
}

/// What a reply needs from its request once the rows have gone into the batch.
pub struct Member {
    /// The request's payload kind and encoding (its array is taken out).
    shell: Payload,
    tags: Map<String, Value>,
    rows: usize,
}

/// Joins requests of one `key` into one message (their rows copied once; the requests
/// are kept, to be run alone if the batch fails). The model sees the first request's
/// `meta` (with `wants_meta`); each reply keeps its own request's tags.
pub fn join(msgs: &[SeldonMessage]) -> Result<(SeldonMessage, Vec<Member>), ServeError> {
    let mut members = Vec::with_capacity(msgs.len());
    let mut tensors = Vec::with_capacity(msgs.len());
    for msg in msgs {
        let Payload::Data {
            encoding,
            array: Array::Numeric(t),
            ..
        } = &msg.payload
        else {
            return Err(ServeError::new(
                Kind::Internal,
                "a request without a numeric array reached the batcher",
            ));
        };
        members.push(Member {
            shell: Payload::Data {
                names: Vec::new(),
                encoding: *encoding,
                array: Array::Json(Value::Null),
            },
            tags: msg.meta.tags.clone(),
            rows: t.shape.first().copied().unwrap_or(0),
        });
        tensors.push(t);
    }
    let Some(Payload::Data {
        names, encoding, ..
    }) = msgs.first().map(|m| &m.payload)
    else {
        return Err(ServeError::new(
            Kind::Internal,
            "an empty batch reached the batcher",
        ));
    };
    let joined = SeldonMessage {
        status: None,
        meta: msgs[0].meta.clone(),
        payload: Payload::Data {
            names: names.clone(),
            encoding: *encoding,
            array: Array::Numeric(rows::concat(&tensors)?),
        },
    };
    Ok((joined, members))
}

/// One reply per member, in order. An answer that does not have one row per input row
/// fails every member with a message saying what the model returned.
pub fn split(answer: Answer, members: Vec<Member>) -> Vec<Result<SeldonMessage, ServeError>> {
    let counts: Vec<usize> = members.iter().map(|m| m.rows).collect();
    let Answer {
        output,
        names,
        tags,
        metrics,
        routing,
        request_path,
    } = answer;
    let parts: Result<Vec<Option<Output>>, ServeError> = match output {
        None => Ok(vec![None; members.len()]),
        Some(Output::Array(Array::Numeric(t))) => rows::split(t, &counts)
            .map(|ts| {
                ts.into_iter()
                    .map(|t| Some(Output::Array(Array::Numeric(t))))
                    .collect()
            })
            .map_err(ServeError::from),
        Some(Output::Array(Array::Json(Value::Array(items))))
            if items.len() == counts.iter().sum::<usize>() =>
        {
            let mut items = items.into_iter();
            Ok(counts
                .iter()
                .map(|&n| {
                    let part: Vec<Value> = items.by_ref().take(n).collect();
                    Some(Output::Array(Array::Json(Value::Array(part))))
                })
                .collect())
        }
        Some(other) => Err(ServeError::new(
            Kind::Model,
            format!(
                "with batching on, the model must return one row per input row: it returned {} \
                 for {} rows from {} requests",
                describe(&other),
                counts.iter().sum::<usize>(),
                counts.len()
            ),
        )),
    };
    match parts {
        Err(e) => members.iter().map(|_| Err(e.clone())).collect(),
        Ok(parts) => members
            .into_iter()
            .zip(parts)
            .map(|(m, output)| {
                let answer = Answer {
                    output,
                    names: names.clone(),
                    tags: tags.clone(),
                    metrics: metrics.clone(),
                    // A graph's routers chose once for the joined batch.
                    routing: routing.clone(),
                    request_path: request_path.clone(),
                };
                Ok(answer.into_message(&m.shell, &m.tags))
            })
            .collect(),
    }
}

fn describe(output: &Output) -> String {
    match output {
        Output::Array(Array::Json(v)) if v.is_array() => {
            format!("a list of {}", v.as_array().map_or(0, Vec::len))
        }
        Output::Array(_) | Output::Json(_) => "a value that is not a list".into(),
        Output::Bin(_) => "bytes".into(),
        Output::Str(_) => "a string".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use inferwire_codec::protocol::seldon::Encoding;
    use inferwire_codec::{Tensor, TensorData};

    fn msg(encoding: Encoding, shape: &[usize], v: Vec<f64>) -> SeldonMessage {
        SeldonMessage {
            payload: Payload::Data {
                names: vec![],
                encoding,
                array: Array::Numeric(Tensor::new(shape.to_vec(), TensorData::F64(v)).unwrap()),
            },
            ..Default::default()
        }
    }

    #[test]
    fn each_request_gets_its_rows_back_in_its_encoding() {
        let a = msg(Encoding::Ndarray, &[1, 2], vec![1.0, 2.0]);
        let b = msg(Encoding::TfTensor, &[2, 2], vec![3.0, 4.0, 5.0, 6.0]);
        assert_eq!(key(&a), key(&b));
        let (joined, members) = join(&[a, b]).unwrap();
        let Payload::Data {
            array: Array::Numeric(t),
            ..
        } = joined.payload
        else {
            panic!()
        };
        assert_eq!(t.shape, vec![3, 2]);
        let replies = split(
            Answer {
                output: Some(Output::Array(Array::Numeric(t))),
                ..Default::default()
            },
            members,
        );
        let second = replies[1].as_ref().unwrap();
        match &second.payload {
            Payload::Data {
                encoding,
                array: Array::Numeric(t),
                ..
            } => {
                assert_eq!(*encoding, Encoding::TfTensor);
                assert_eq!(t.data, TensorData::F64(vec![3.0, 4.0, 5.0, 6.0]));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_wrong_row_count_fails_every_member() {
        let (_, members) = join(&[
            msg(Encoding::Tensor, &[1], vec![1.0]),
            msg(Encoding::Tensor, &[1], vec![2.0]),
        ])
        .unwrap();
        let one = Tensor::new(vec![1], TensorData::F64(vec![0.0])).unwrap();
        let replies = split(
            Answer {
                output: Some(Output::Array(Array::Numeric(one))),
                ..Default::default()
            },
            members,
        );
        assert_eq!(replies.len(), 2);
        for r in replies {
            assert!(r.unwrap_err().message.contains("one row per input row"));
        }
    }
}
