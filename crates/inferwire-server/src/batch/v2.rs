//! Dynamic batching of V2 requests: requests whose inputs have the same names, dtypes,
//! dimensions after the first and content types (and that ask for the same outputs with
//! the same parameters) are joined input by input along the first axis; every output is
//! cut back by rows.
use inferwire_codec::protocol::v2::{
    InferInput, InferOutput, InferRequest, Parameters, RequestedOutput,
};
use inferwire_codec::{rows, DType};
use serde_json::Value;

use crate::error::{Kind, ServeError};

#[derive(Debug, PartialEq)]
pub struct Key {
    inputs: Vec<(String, DType, Vec<usize>, Option<Value>)>,
    parameters: Parameters,
    outputs: Vec<RequestedOutput>,
}

/// `None` for requests that always run alone: no inputs, a scalar input, or inputs with
/// different row counts.
pub fn key(req: &InferRequest) -> Option<Key> {
    let rows = req.inputs.first()?.tensor.shape.first().copied()?;
    let mut inputs = Vec::with_capacity(req.inputs.len());
    for i in &req.inputs {
        if i.tensor.shape.first() != Some(&rows) {
            return None;
        }
        inputs.push((
            i.name.clone(),
            i.tensor.dtype(),
            i.tensor.shape[1..].to_vec(),
            i.parameters.get("content_type").cloned(),
        ));
    }
    // The request's headers (MLServer's dialect puts them here), its stream's token
    // (a TorchServe request's) and its trace context (a traced request's) differ from
    // request to request without making them incompatible; a batch's model call sees
    // its first request's trace context.
    let mut parameters = req.parameters.clone();
    parameters.remove("headers");
    parameters.remove(crate::stream::handoff::TOKEN);
    parameters.remove("traceparent");
    parameters.remove("tracestate");
    Some(Key {
        inputs,
        parameters,
        outputs: req.outputs.clone(),
    })
}

/// One request holding every request's rows (copied once; the requests are kept, to be
/// run alone if the batch fails), and each request's row count.
pub fn join(reqs: &[InferRequest]) -> Result<(InferRequest, Vec<usize>), ServeError> {
    let first = reqs
        .first()
        .ok_or_else(|| ServeError::new(Kind::Internal, "an empty batch reached the batcher"))?;
    let counts = reqs.iter().map(|r| r.inputs[0].tensor.shape[0]).collect();
    let mut inputs = Vec::with_capacity(first.inputs.len());
    for (j, input) in first.inputs.iter().enumerate() {
        let parts: Vec<_> = reqs.iter().map(|r| &r.inputs[j].tensor).collect();
        inputs.push(InferInput {
            name: input.name.clone(),
            tensor: rows::concat(&parts)?,
            parameters: input.parameters.clone(),
        });
    }
    Ok((
        InferRequest {
            id: first.id.clone(),
            parameters: first.parameters.clone(),
            inputs,
            outputs: first.outputs.clone(),
        },
        counts,
    ))
}

/// Every output cut into each request's rows: one list of outputs per request.
pub fn split(
    outputs: Vec<InferOutput>,
    counts: &[usize],
) -> Result<Vec<Vec<InferOutput>>, ServeError> {
    let mut per_request: Vec<Vec<InferOutput>> = counts.iter().map(|_| Vec::new()).collect();
    for o in outputs {
        let parts = rows::split(o.tensor, counts).map_err(|e| {
            ServeError::new(Kind::Model, format!("output {:?}: {}", o.name, e.message))
        })?;
        for (mine, tensor) in per_request.iter_mut().zip(parts) {
            mine.push(InferOutput {
                name: o.name.clone(),
                tensor,
                parameters: o.parameters.clone(),
            });
        }
    }
    Ok(per_request)
}

#[cfg(test)]
mod tests {
    use super::*;
    use inferwire_codec::{Tensor, TensorData};

    fn req(rows: usize) -> InferRequest {
        InferRequest {
            inputs: vec![InferInput {
                name: "x".into(),
                tensor: Tensor::new(vec![rows, 2], TensorData::I64(vec![rows as i64; rows * 2]))
                    .unwrap(),
                parameters: Parameters::new(),
            }],
            ..Default::default()
        }
    }

    #[test]
    fn join_and_split() {
        let (a, b) = (req(1), req(2));
        assert_eq!(key(&a), key(&b));
        let (joined, counts) = join(&[a, b]).unwrap();
        assert_eq!(joined.inputs[0].tensor.shape, vec![3, 2]);
        let out = InferOutput {
            name: "y".into(),
            tensor: joined.inputs[0].tensor.clone(),
            parameters: Parameters::new(),
        };
        let parts = split(vec![out], &counts).unwrap();
        assert_eq!(parts[1][0].tensor.data, TensorData::I64(vec![2; 4]));
        let bad = InferOutput {
            name: "z".into(),
            tensor: Tensor::new(vec![1], TensorData::I64(vec![0])).unwrap(),
            parameters: Parameters::new(),
        };
        let e = split(vec![bad], &counts).unwrap_err();
        assert!(
            e.message.starts_with("output \"z\": with batching on"),
            "{}",
            e.message
        );
    }
}
