//! What a model's own configuration (`Model::config`, Triton's JSON form of `ModelConfig`)
//! says a request must be: its inputs by name, with their data types and dims (-1: any
//! size), which are optional, the batch dimension a `max_batch_size` above 0 puts first,
//! a `reshape`, and the outputs a request may ask for. Read once when the model loads
//! (`Contract::read`); `Contract::check` runs on every V2 request to such a model, for
//! every dialect (a model that declares its inputs gets a request that matches them, or
//! the client hears what differs), and says what differs as data (`Mismatch`), which the
//! dialect words: inferwire's words are `Mismatch`'s `Display`, Triton's are its dialect's.
use std::fmt;

use inferwire_codec::protocol::v2::{datatype_name, InferRequest};
use serde_json::Value;

/// A model's declared inputs and outputs.
#[derive(Debug, Clone, PartialEq)]
pub struct Contract {
    /// Above 0: every input but shape tensors starts with a batch dimension of at most
    /// this many.
    max_batch_size: i64,
    inputs: Vec<Input>,
    /// The outputs a request may ask for; `None`: the configuration lists none.
    outputs: Option<Vec<String>>,
}

#[derive(Debug, Clone, PartialEq)]
struct Input {
    name: String,
    /// The V2 datatype (`FP32`, `BYTES`); `None`: one the server does not know (not
    /// checked).
    datatype: Option<&'static str>,
    /// Without the batch dimension; -1: any size.
    dims: Vec<i64>,
    optional: bool,
    /// The shape the model gets instead of `dims` (-1s take the request's sizes in turn).
    reshape: Option<Vec<i64>>,
    /// A shape tensor keeps its shape as sent (no batch dimension is taken off).
    shape_tensor: bool,
}

/// How a request differs from its model's configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mismatch {
    /// It asks for an output the configuration does not list.
    UnexpectedOutput { output: String },
    /// Too many inputs, or a required one missing. `sent`: the request's inputs' names;
    /// `missing`: the required ones it lacks, in the configuration's order.
    InputCount {
        required: usize,
        declared: usize,
        sent: Vec<String>,
        missing: Vec<String>,
    },
    /// An input the configuration does not have.
    UnexpectedInput { input: String },
    /// A batching model's input without even a batch dimension.
    NoBatchDimension { input: String },
    /// Inputs whose batch dimensions differ.
    BatchSizes { input: String },
    /// A batch larger than the model's `max_batch_size`.
    BatchTooLarge { max: i64 },
    Datatype {
        input: String,
        sent: &'static str,
        declared: &'static str,
    },
    /// `expected`: the declared dims, with -1 first for the batch dimension when batching.
    Shape {
        input: String,
        expected: Vec<i64>,
        sent: Vec<i64>,
        batching: bool,
    },
}

impl Contract {
    /// The contract a configuration declares; `None` when it declares no inputs (nothing
    /// to check a request against).
    pub fn read(config: &Value) -> Option<Self> {
        let inputs: Vec<Input> = config
            .get("input")?
            .as_array()?
            .iter()
            .filter_map(Input::read)
            .collect();
        if inputs.is_empty() {
            return None;
        }
        let outputs = config
            .get("output")
            .and_then(Value::as_array)
            .filter(|o| !o.is_empty())
            .map(|o| {
                o.iter()
                    .filter_map(|t| Some(t.get("name")?.as_str()?.to_owned()))
                    .collect()
            });
        Some(Self {
            max_batch_size: config.get("max_batch_size").and_then(int).unwrap_or(0),
            inputs,
            outputs,
        })
    }

    /// Checks `request` against the contract, in the order Triton checks (outputs, the
    /// number of inputs, each input's name and batch dimension, the batch size, each
    /// input's datatype and dims), and gives inputs with a `reshape` their reshaped shape.
    pub fn check(&self, request: &mut InferRequest) -> Result<(), Mismatch> {
        if let Some(outputs) = &self.outputs {
            if let Some(o) = request.outputs.iter().find(|o| !outputs.contains(&o.name)) {
                return Err(Mismatch::UnexpectedOutput {
                    output: o.name.clone(),
                });
            }
        }
        let required = self.inputs.iter().filter(|i| !i.optional).count();
        let sent = request.inputs.len();
        if sent > self.inputs.len() || sent < required {
            return Err(self.count_mismatch(request, required));
        }
        let batching = self.max_batch_size > 0;
        let mut specs = Vec::with_capacity(sent);
        let mut batch: Option<usize> = None;
        for input in &request.inputs {
            let Some(spec) = self.inputs.iter().find(|i| i.name == input.name) else {
                return Err(Mismatch::UnexpectedInput {
                    input: input.name.clone(),
                });
            };
            specs.push(spec);
            if !batching || spec.shape_tensor {
                continue;
            }
            let Some(&first) = input.tensor.shape.first() else {
                return Err(Mismatch::NoBatchDimension {
                    input: input.name.clone(),
                });
            };
            match batch {
                None => batch = Some(first),
                Some(b) if b != first => {
                    return Err(Mismatch::BatchSizes {
                        input: input.name.clone(),
                    })
                }
                Some(_) => {}
            }
        }
        if batching && batch.map_or(0, to_i64) > self.max_batch_size {
            return Err(Mismatch::BatchTooLarge {
                max: self.max_batch_size,
            });
        }
        for (input, spec) in request.inputs.iter_mut().zip(specs) {
            let sent = input.tensor.data.dtype();
            let sent = datatype_name(sent);
            if let Some(declared) = spec.datatype.filter(|d| *d != sent) {
                return Err(Mismatch::Datatype {
                    input: input.name.clone(),
                    sent,
                    declared,
                });
            }
            let strip = usize::from(batching && !spec.shape_tensor);
            let shape = &input.tensor.shape;
            let dims = &shape[strip.min(shape.len())..];
            let fits = dims.len() == spec.dims.len()
                && dims
                    .iter()
                    .zip(&spec.dims)
                    .all(|(&d, &want)| want == -1 || to_i64(d) == want);
            if !fits {
                let mut expected = Vec::with_capacity(spec.dims.len() + 1);
                if batching {
                    expected.push(-1);
                }
                expected.extend(&spec.dims);
                return Err(Mismatch::Shape {
                    input: input.name.clone(),
                    expected,
                    sent: shape.iter().copied().map(to_i64).collect(),
                    batching,
                });
            }
            if let Some(reshape) = &spec.reshape {
                let mut free = dims
                    .iter()
                    .zip(&spec.dims)
                    .filter(|(_, &want)| want == -1)
                    .map(|(&d, _)| d);
                let mut shape: Vec<usize> = shape[..strip.min(shape.len())].to_vec();
                for &d in reshape {
                    shape.push(match d {
                        -1 => free.next().unwrap_or(1),
                        d => usize::try_from(d).unwrap_or(0),
                    });
                }
                // A reshape that does not hold the data is the configuration's mistake:
                // the model gets the shape as sent.
                if shape.iter().product::<usize>() == input.tensor.shape.iter().product::<usize>() {
                    input.tensor.shape = shape;
                }
            }
        }
        Ok(())
    }

    #[cold]
    fn count_mismatch(&self, request: &InferRequest, required: usize) -> Mismatch {
        let has = |name: &str| request.inputs.iter().any(|i| i.name == name);
        Mismatch::InputCount {
            required,
            declared: self.inputs.len(),
            sent: request.inputs.iter().map(|i| i.name.clone()).collect(),
            missing: self
                .inputs
                .iter()
                .filter(|i| !i.optional && !has(&i.name))
                .map(|i| i.name.clone())
                .collect(),
        }
    }
}

impl Input {
    fn read(t: &Value) -> Option<Self> {
        let dims =
            |v: Option<&Value>| -> Option<Vec<i64>> { v?.as_array()?.iter().map(int).collect() };
        Some(Self {
            name: t.get("name")?.as_str()?.to_owned(),
            datatype: t
                .get("data_type")
                .and_then(Value::as_str)
                .and_then(v2_datatype),
            dims: dims(t.get("dims")).unwrap_or_default(),
            optional: t.get("optional").and_then(Value::as_bool).unwrap_or(false),
            reshape: dims(t.get("reshape").and_then(|r| r.get("shape"))),
            shape_tensor: t
                .get("is_shape_tensor")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        })
    }
}

/// A configuration's integer: a number, or a string holding one (protobuf's JSON mapping
/// writes int64 as a string).
fn int(v: &Value) -> Option<i64> {
    v.as_i64().or_else(|| v.as_str()?.trim().parse().ok())
}

fn to_i64(d: usize) -> i64 {
    i64::try_from(d).unwrap_or(i64::MAX)
}

/// A configuration's data type (`TYPE_FP32`) as V2 names it (`FP32`; `TYPE_STRING` is
/// `BYTES`); `None` for one V2 lacks.
pub fn v2_datatype(config_type: &str) -> Option<&'static str> {
    Some(match config_type.strip_prefix("TYPE_")? {
        "BOOL" => "BOOL",
        "UINT8" => "UINT8",
        "UINT16" => "UINT16",
        "UINT32" => "UINT32",
        "UINT64" => "UINT64",
        "INT8" => "INT8",
        "INT16" => "INT16",
        "INT32" => "INT32",
        "INT64" => "INT64",
        "FP16" => "FP16",
        "FP32" => "FP32",
        "FP64" => "FP64",
        "BF16" => "BF16",
        "STRING" => "BYTES",
        _ => return None,
    })
}

/// The input names a [`Mismatch::InputCount`] message lists (those the request sent, those
/// it lacks) as one dialect writes a list: in brackets, each name as `name` writes it,
/// `sep` between them. inferwire's: Rust's debug form (`["a", "b"]`); Triton's:
/// `['a','b']` (`dialect::triton`).
pub fn input_names(names: &[String], name: fn(&str) -> String, sep: &str) -> String {
    let listed: Vec<String> = names.iter().map(|n| name(n)).collect();
    format!("[{}]", listed.join(sep))
}

/// inferwire's words: what differs, and what to send instead.
impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mismatch::UnexpectedOutput { output } => write!(
                f,
                "outputs: the model has no output {output:?} (its configuration lists the \
                 outputs it has)"
            ),
            Mismatch::InputCount {
                required,
                declared,
                sent,
                missing,
            } => {
                let count = if required == declared {
                    format!("{declared}")
                } else {
                    format!("{required} to {declared}")
                };
                let list = |names| input_names(names, |n| format!("{n:?}"), ", ");
                let got = list(sent);
                write!(f, "inputs: the model takes {count} inputs, got {got}")?;
                if !missing.is_empty() {
                    write!(f, "; send {} too", list(missing))?;
                }
                Ok(())
            }
            Mismatch::UnexpectedInput { input } => write!(
                f,
                "inputs: the model has no input {input:?} (its configuration lists the \
                 inputs it takes)"
            ),
            Mismatch::NoBatchDimension { input } => write!(
                f,
                "input {input:?}: the model batches, so its shape starts with the batch \
                 size; send a shape"
            ),
            Mismatch::BatchSizes { input } => write!(
                f,
                "input {input:?}: its batch size (the first dimension) differs from the \
                 other inputs'"
            ),
            Mismatch::BatchTooLarge { max } => {
                write!(
                    f,
                    "inputs: the batch size (the first dimension) is at most {max}"
                )
            }
            Mismatch::Datatype {
                input,
                sent,
                declared,
            } => write!(
                f,
                "input {input:?}: datatype {sent}, but the model takes {declared}"
            ),
            Mismatch::Shape {
                input,
                expected,
                sent,
                batching,
            } => {
                write!(
                    f,
                    "input {input:?}: shape {sent:?}, but the model takes {expected:?} \
                     (-1: any size)"
                )?;
                if *batching {
                    f.write_str(", the batch size first")?;
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use inferwire_codec::protocol::v2::{InferInput, RequestedOutput};
    use inferwire_codec::{Tensor, TensorData};
    use serde_json::json;

    fn contract() -> Contract {
        Contract::read(&json!({
            "name": "m",
            "max_batch_size": 8,
            "input": [
                {"name": "a", "data_type": "TYPE_FP32", "dims": [-1, 3]},
                {"name": "b", "data_type": "TYPE_STRING", "dims": ["1"], "optional": true},
                {"name": "c", "data_type": "TYPE_INT32", "dims": [4], "reshape": {"shape": [2, 2]}},
            ],
            "output": [{"name": "y", "data_type": "TYPE_FP32", "dims": [1]}],
        }))
        .unwrap()
    }

    fn input(name: &str, shape: Vec<usize>, data: TensorData) -> InferInput {
        InferInput {
            name: name.into(),
            tensor: Tensor::new(shape, data).unwrap(),
            parameters: Default::default(),
        }
    }

    fn request(inputs: Vec<InferInput>) -> InferRequest {
        InferRequest {
            inputs,
            ..InferRequest::default()
        }
    }

    fn a(shape: Vec<usize>) -> InferInput {
        let n = shape.iter().product();
        input("a", shape, TensorData::F32(vec![0.0; n]))
    }

    fn c(shape: Vec<usize>) -> InferInput {
        let n = shape.iter().product();
        input("c", shape, TensorData::I32(vec![0; n]))
    }

    #[test]
    fn a_request_that_fits_is_reshaped_where_the_configuration_says() {
        let mut r = request(vec![a(vec![2, 5, 3]), c(vec![2, 4])]);
        assert_eq!(contract().check(&mut r), Ok(()));
        assert_eq!(r.inputs[0].tensor.shape, vec![2, 5, 3]);
        assert_eq!(r.inputs[1].tensor.shape, vec![2, 2, 2]);
    }

    #[test]
    fn each_difference_as_data() {
        let check = |mut r: InferRequest| contract().check(&mut r).unwrap_err();
        assert_eq!(
            check(request(vec![a(vec![1, 1, 3])])),
            Mismatch::InputCount {
                required: 2,
                declared: 3,
                sent: vec!["a".into()],
                missing: vec!["c".into()],
            }
        );
        assert_eq!(
            check(request(vec![
                a(vec![1, 1, 3]),
                input("x", vec![1], TensorData::I32(vec![1]))
            ])),
            Mismatch::UnexpectedInput { input: "x".into() }
        );
        assert_eq!(
            check(request(vec![a(vec![1, 1, 3]), c(vec![2, 4])])),
            Mismatch::BatchSizes { input: "c".into() }
        );
        assert_eq!(
            check(request(vec![a(vec![9, 1, 3]), c(vec![9, 4])])),
            Mismatch::BatchTooLarge { max: 8 }
        );
        assert_eq!(
            check(request(vec![a(vec![1, 1, 4]), c(vec![1, 4])])),
            Mismatch::Shape {
                input: "a".into(),
                expected: vec![-1, -1, 3],
                sent: vec![1, 1, 4],
                batching: true,
            }
        );
        let as_int = input("a", vec![1, 1, 3], TensorData::I32(vec![1, 2, 3]));
        assert_eq!(
            check(request(vec![as_int, c(vec![1, 4])])),
            Mismatch::Datatype {
                input: "a".into(),
                sent: "INT32",
                declared: "FP32",
            }
        );
        let mut asks = request(vec![a(vec![1, 1, 3]), c(vec![1, 4])]);
        asks.outputs.push(RequestedOutput {
            name: "z".into(),
            parameters: Default::default(),
        });
        assert_eq!(
            check(asks),
            Mismatch::UnexpectedOutput { output: "z".into() }
        );
    }

    #[test]
    fn without_batching_the_shape_is_the_dims() {
        let plain = Contract::read(&json!({
            "input": [{"name": "a", "data_type": "TYPE_FP32", "dims": [3]}],
        }))
        .unwrap();
        assert_eq!(plain.check(&mut request(vec![a(vec![3])])), Ok(()));
        let e = plain.check(&mut request(vec![a(vec![1, 3])])).unwrap_err();
        assert_eq!(
            e.to_string(),
            "input \"a\": shape [1, 3], but the model takes [3] (-1: any size)"
        );
    }

    #[test]
    fn a_configuration_without_inputs_checks_nothing() {
        assert_eq!(Contract::read(&json!({"name": "m"})), None);
        assert_eq!(Contract::read(&json!({"input": []})), None);
        assert_eq!(v2_datatype("TYPE_STRING"), Some("BYTES"));
        assert_eq!(v2_datatype("TYPE_FP32"), Some("FP32"));
        assert_eq!(v2_datatype("FP32"), None);
    }
}
