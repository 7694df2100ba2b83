//! Models served with no Python on the request path: tree ensembles in inferwire's tree
//! format, scored by `inferwire_trees::Forest`. Takes rows as a numeric array (Seldon
//! `ndarray`/`tensor`/binary encodings, one V2 input of `[rows, features]`) or as columns
//! named by feature (a data-frame JSON object `{"Number": [...], "Start": [...]}`, V2 inputs
//! named by feature), and answers probabilities per class or predicted values.
use std::sync::Arc;

use inferwire_codec::protocol::seldon::reply::Output;
use inferwire_codec::protocol::seldon::{Array, Feedback, Meta, Payload, SeldonMessage};
use inferwire_codec::protocol::v2::{InferInput, InferOutput, InferRequest};
use inferwire_codec::{Tensor, TensorData};
use inferwire_trees::forest::argmax_rows;
use inferwire_trees::format::Task;
use inferwire_trees::Forest;
use serde_json::{json, Map, Value};

use crate::model::{Answer, Inferred, Model, ModelError, Prediction, SeldonOps};

pub struct TreeModel {
    forest: Arc<Forest>,
    /// Column names of the probabilities (classification) or the value (regression).
    output_names: Vec<String>,
    v2: V2Outputs,
    /// Metadata a settings file gave (`inputs`, `outputs`, `platform`, ...), over the
    /// model's own.
    metadata: Map<String, Value>,
}

/// The V2 outputs a tree model answers: inferwire's own, or those of the MLServer runtime
/// whose settings file it was served from, so that its clients read the same replies.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum V2Outputs {
    /// `predict_proba` and `predict` (labels) for a classifier, `predict` for a regressor.
    #[default]
    Inferwire,
    /// `mlserver_sklearn` and `mlserver_xgboost`: `predict` and `predict_proba` as the
    /// estimator's methods, only `default` unless the request names outputs, a 1-D
    /// result as `[rows, 1]`; XGBoost's estimators answer float32.
    MlServer { default: String, fp32: bool },
    /// `mlserver_lightgbm`: one output, `predict`, as `Booster.predict` answers it
    /// (a binary classifier's probability of its second class, `[rows, 1]`).
    MlServerLightgbm,
}

fn bad(message: impl Into<String>) -> ModelError {
    ModelError::bad_input(message)
}

fn label(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

impl TreeModel {
    /// `template` names the outputs: `{class}` is replaced by each class label (e.g.
    /// `{class}_Pred` gives `absent_Pred`, `present_Pred`); a regressor's one output is
    /// `template` with `{class}` replaced by `value`.
    pub fn new(forest: Arc<Forest>, template: &str) -> Self {
        let info = &forest.info;
        let output_names = match info.task {
            Task::Classification if info.classes.len() == info.n_outputs => info
                .classes
                .iter()
                .map(|c| template.replace("{class}", &label(c)))
                .collect(),
            Task::Classification => (0..info.n_outputs)
                .map(|i| template.replace("{class}", &i.to_string()))
                .collect(),
            Task::Regression => (0..info.n_outputs)
                .map(|i| {
                    let name = if info.n_outputs == 1 {
                        "value".to_string()
                    } else {
                        format!("value{i}")
                    };
                    template.replace("{class}", &name)
                })
                .collect(),
        };
        Self {
            forest,
            output_names,
            v2: V2Outputs::Inferwire,
            metadata: Map::new(),
        }
    }

    /// The same model with `metadata`'s keys over its own metadata.
    pub fn with_metadata(mut self, metadata: Map<String, Value>) -> Self {
        self.metadata = metadata;
        self
    }

    /// The same model answering V2 requests as `v2` says.
    pub fn with_v2_outputs(mut self, v2: V2Outputs) -> Self {
        self.v2 = v2;
        self
    }

    fn n_features(&self) -> usize {
        self.forest.info.n_features
    }

    /// Rows from a numeric array: `[features]` is one row, `[rows, features]` many. With
    /// column `names` that are the model's feature names in another order, columns are
    /// reordered to match.
    fn rows_from_tensor(&self, t: &Tensor, names: &[String]) -> Result<Vec<f64>, ModelError> {
        let nf = self.n_features();
        let cols = match t.shape[..] {
            [n] => n,
            [_, n] => n,
            _ => {
                return Err(bad(format!(
                    "expected rows of {nf} features (shape [rows, {nf}]), got shape {:?}",
                    t.shape
                )))
            }
        };
        if cols != nf {
            return Err(bad(format!(
                "expected {nf} features per row{}, got {cols}",
                self.feature_list()
            )));
        }
        let values = t.data.to_f64_vec().ok_or_else(|| {
            bad("expected numbers; the model scores numeric features (strings are not features)")
        })?;
        let feature_names = &self.forest.info.feature_names;
        if names.len() != nf || feature_names.is_empty() || names == feature_names {
            return Ok(values);
        }
        let order: Option<Vec<usize>> = feature_names
            .iter()
            .map(|f| names.iter().position(|n| n == f))
            .collect();
        let Some(order) = order else {
            return Ok(values); // other names (t:0, ...): taken in order
        };
        let mut out = Vec::with_capacity(values.len());
        for row in values.chunks_exact(nf) {
            out.extend(order.iter().map(|&i| row[i]));
        }
        Ok(out)
    }

    fn feature_list(&self) -> String {
        let names = &self.forest.info.feature_names;
        if names.is_empty() {
            String::new()
        } else {
            format!(" ({})", names.join(", "))
        }
    }

    /// Rows from columns named by feature, each a list of numbers (`null` is missing).
    fn rows_from_columns(&self, columns: &Map<String, Value>) -> Result<Vec<f64>, ModelError> {
        self.rows_from_named(|name| columns.get(name).map(|col| json_column(name, col)))
    }

    /// Rows from one column per feature, found by name by `column` (`None`: missing).
    fn rows_from_named(
        &self,
        mut column: impl FnMut(&str) -> Option<Result<Vec<f64>, ModelError>>,
    ) -> Result<Vec<f64>, ModelError> {
        let names = &self.forest.info.feature_names;
        if names.is_empty() {
            return Err(bad(
                "this model was trained without feature names, so columns cannot be matched: \
                 send rows as an array",
            ));
        }
        let mut cols: Vec<Vec<f64>> = Vec::with_capacity(names.len());
        for name in names {
            let values = column(name).ok_or_else(|| {
                bad(format!(
                    "column {name:?} is missing; the model takes {}",
                    names.join(", ")
                ))
            })??;
            if let Some(first) = cols.first().filter(|c| c.len() != values.len()) {
                return Err(bad(format!(
                    "column {name:?} has {} values; the others have {}",
                    values.len(),
                    first.len()
                )));
            }
            cols.push(values);
        }
        let rows = cols.first().map_or(0, Vec::len);
        let mut out = Vec::with_capacity(rows * names.len());
        for r in 0..rows {
            out.extend(cols.iter().map(|c| c[r]));
        }
        Ok(out)
    }

    fn score(&self, x: &[f64]) -> Result<(Vec<f64>, usize), ModelError> {
        let rows = x.len() / self.n_features();
        let mut out = vec![0.0; rows * self.forest.info.n_outputs];
        self.forest.predict(x, &mut out).map_err(bad)?;
        Ok((out, rows))
    }

    fn rows_of(&self, payload: &Payload) -> Result<Vec<f64>, ModelError> {
        match payload {
            Payload::Data {
                array: Array::Numeric(t),
                names,
                ..
            } => self.rows_from_tensor(t, names),
            Payload::Json(Value::Object(columns)) => self.rows_from_columns(columns),
            Payload::Data {
                array: Array::Json(_),
                ..
            } => Err(bad(
                "expected a rectangular array of numbers (rows × features)",
            )),
            other => Err(bad(format!(
                "expected rows of features as an array, or columns as a JSON object; got {}",
                other.kind()
            ))),
        }
    }

    fn matrix(&self, values: Vec<f64>, rows: usize) -> Tensor {
        Tensor {
            shape: vec![rows, self.forest.info.n_outputs],
            data: TensorData::F64(values),
        }
    }

    /// Column-oriented JSON, as the data frame came in: `{"absent_Pred": [...], ...}`.
    fn columns(&self, values: &[f64]) -> Value {
        let width = self.forest.info.n_outputs;
        let mut out = Map::new();
        for (i, name) in self.output_names.iter().enumerate() {
            let col: Vec<Value> = values.chunks_exact(width).map(|r| json!(r[i])).collect();
            out.insert(name.clone(), Value::Array(col));
        }
        Value::Object(out)
    }

    fn rows_from_inputs(&self, inputs: &[InferInput]) -> Result<Vec<f64>, ModelError> {
        self.rows_from_named(|name| {
            let input = inputs.iter().find(|i| i.name == name)?;
            Some(
                input
                    .tensor
                    .data
                    .to_f64_vec()
                    .ok_or_else(|| bad(format!("input {name:?}: expected numbers"))),
            )
        })
        .map_err(|e| {
            bad(format!(
                "{} (send one input of shape [rows, {}], or one input per feature)",
                e.message,
                self.n_features()
            ))
        })
    }

    /// MLServer's scikit-learn and XGBoost runtimes: each requested output (else
    /// `default`) as the estimator's method of that name answers it.
    fn mlserver_outputs(
        &self,
        req: &InferRequest,
        default: &str,
        fp32: bool,
        values: Vec<f64>,
        rows: usize,
    ) -> Result<Vec<InferOutput>, ModelError> {
        let info = &self.forest.info;
        let wanted: Vec<&str> = if req.outputs.is_empty() {
            vec![default]
        } else {
            req.outputs.iter().map(|o| o.name.as_str()).collect()
        };
        let floats = |values: Vec<f64>, shape: Vec<usize>| Tensor {
            shape,
            data: if fp32 {
                TensorData::F32(values.iter().map(|&v| v as f32).collect())
            } else {
                TensorData::F64(values)
            },
        };
        let mut outputs = Vec::with_capacity(wanted.len());
        for name in wanted {
            let tensor = match (name, info.task) {
                ("predict", Task::Classification) => {
                    let mut labels = self.labels(&argmax_rows(&values, info.n_outputs));
                    labels.shape = vec![rows, 1];
                    labels
                }
                ("predict", Task::Regression) => {
                    let width = info.n_outputs;
                    let shape = if width == 1 {
                        vec![rows, 1]
                    } else {
                        vec![rows, width]
                    };
                    floats(values.clone(), shape)
                }
                ("predict_proba", Task::Classification) => {
                    floats(values.clone(), vec![rows, info.n_outputs])
                }
                ("predict_proba", Task::Regression) => {
                    return Err(bad(format!(
                        "outputs: a regressor ({}) has no predict_proba",
                        info.source
                    )))
                }
                (other, _) => {
                    return Err(bad(format!(
                        "outputs: {other:?} is not one this runtime answers (predict, \
                         predict_proba)"
                    )))
                }
            };
            outputs.push(InferOutput {
                name: name.to_owned(),
                tensor,
                parameters: numpy_content_type(),
            });
        }
        Ok(outputs)
    }

    /// MLServer's LightGBM runtime: `Booster.predict`'s answer, named `predict`.
    fn lightgbm_output(&self, values: Vec<f64>, rows: usize) -> InferOutput {
        let info = &self.forest.info;
        let tensor = match (info.task, info.n_outputs) {
            (Task::Classification, 2) => Tensor {
                shape: vec![rows, 1],
                data: TensorData::F64(values.chunks_exact(2).map(|r| r[1]).collect()),
            },
            (_, 1) => Tensor {
                shape: vec![rows, 1],
                data: TensorData::F64(values),
            },
            (_, width) => Tensor {
                shape: vec![rows, width],
                data: TensorData::F64(values),
            },
        };
        InferOutput {
            name: "predict".into(),
            tensor,
            parameters: numpy_content_type(),
        }
    }

    /// Class labels: integers as INT64, anything else as BYTES.
    fn labels(&self, picked: &[usize]) -> Tensor {
        let classes = &self.forest.info.classes;
        let ints: Option<Vec<i64>> = picked
            .iter()
            .map(|&i| classes.get(i).map_or(Some(i as i64), Value::as_i64))
            .collect();
        let data = match ints {
            Some(v) => TensorData::I64(v),
            None => TensorData::Bytes(
                picked
                    .iter()
                    .map(|&i| classes.get(i).map(label).unwrap_or_default().into())
                    .collect(),
            ),
        };
        Tensor {
            shape: vec![picked.len()],
            data,
        }
    }
}

/// MLServer's numpy codec marks each output it encodes with its content type.
fn numpy_content_type() -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("content_type".into(), Value::String("np".into()));
    m
}

/// A data frame's column: a list of numbers (`null` is missing, booleans are 0 and 1), or
/// one value.
fn json_column(name: &str, col: &Value) -> Result<Vec<f64>, ModelError> {
    let number = |v: &Value| match v {
        Value::Number(n) => n.as_f64().ok_or_else(|| bad("bad number")),
        Value::Null => Ok(f64::NAN),
        Value::Bool(b) => Ok(f64::from(u8::from(*b))),
        other => Err(bad(format!("column {name:?}: {other} is not a number"))),
    };
    match col {
        Value::Array(items) => items.iter().map(number).collect(),
        scalar => number(scalar).map(|v| vec![v]),
    }
}

impl TreeModel {
    /// V2: one input of `[rows, features]`, or one 1-D input per feature, named by
    /// feature. Outputs: `predict_proba` and `predict` (class labels) for classifiers,
    /// `predict` for regressors.
    fn outputs(&self, req: InferRequest) -> Result<Vec<InferOutput>, ModelError> {
        let x = match &req.inputs[..] {
            [one] if one.tensor.shape.len() == 2 || self.n_features() == 1 => {
                self.rows_from_tensor(&one.tensor, &[])?
            }
            inputs => self.rows_from_inputs(inputs)?,
        };
        let (values, rows) = self.score(&x)?;
        match &self.v2 {
            V2Outputs::Inferwire => {}
            V2Outputs::MlServer { default, fp32 } => {
                return self.mlserver_outputs(&req, default, *fp32, values, rows)
            }
            V2Outputs::MlServerLightgbm => return Ok(vec![self.lightgbm_output(values, rows)]),
        }
        let info = &self.forest.info;
        let mut outputs = Vec::new();
        match info.task {
            Task::Classification => {
                let picked = argmax_rows(&values, info.n_outputs);
                outputs.push(InferOutput {
                    name: "predict_proba".into(),
                    tensor: self.matrix(values, rows),
                    parameters: Map::new(),
                });
                outputs.push(InferOutput {
                    name: "predict".into(),
                    tensor: self.labels(&picked),
                    parameters: Map::new(),
                });
            }
            Task::Regression => {
                let shape = if info.n_outputs == 1 {
                    vec![rows]
                } else {
                    vec![rows, info.n_outputs]
                };
                outputs.push(InferOutput {
                    name: "predict".into(),
                    tensor: Tensor {
                        shape,
                        data: TensorData::F64(values),
                    },
                    parameters: Map::new(),
                });
            }
        }
        Ok(outputs)
    }

    fn tree_metadata(&self) -> Result<Value, ModelError> {
        let info = &self.forest.info;
        let inputs: Vec<Value> = if info.feature_names.is_empty() {
            vec![json!({"name": "input-0", "datatype": "FP64", "shape": [-1, info.n_features]})]
        } else {
            info.feature_names
                .iter()
                .map(|n| json!({"name": n, "datatype": "FP64", "shape": [-1]}))
                .collect()
        };
        let mut outputs = vec![];
        if info.task == Task::Classification {
            outputs.push(
                json!({"name": "predict_proba", "datatype": "FP64", "shape": [-1, info.n_outputs]}),
            );
        }
        outputs.push(json!({"name": "predict", "datatype": if info.task == Task::Classification { "BYTES" } else { "FP64" }, "shape": [-1]}));
        if !matches!(self.v2, V2Outputs::Inferwire) {
            // What `mlserver_outputs` answers by default: labels (INT64 when every class is
            // an integer) or values.
            let ints = info.classes.iter().all(Value::is_i64);
            let datatype = match (info.task, &self.v2) {
                (Task::Classification, V2Outputs::MlServer { .. }) if ints => "INT64",
                (Task::Classification, V2Outputs::MlServer { .. }) => "BYTES",
                (_, V2Outputs::MlServer { fp32: true, .. }) => "FP32",
                _ => "FP64",
            };
            let width = match (&self.v2, info.task, info.n_outputs) {
                (V2Outputs::MlServer { .. }, Task::Classification, _) | (_, _, 1) => 1,
                (V2Outputs::MlServerLightgbm, Task::Classification, 2) => 1,
                (_, _, n) => n,
            };
            outputs = vec![json!({"name": "predict", "datatype": datatype, "shape": [-1, width]})];
        }
        let mut meta = json!({
            "versions": [],
            "platform": format!("inferwire-trees ({})", info.source),
            "inputs": inputs,
            "outputs": outputs,
            "classes": info.classes,
            "trees": info.n_trees,
        });
        if let Value::Object(own) = &mut meta {
            own.extend(self.metadata.clone());
        }
        Ok(meta)
    }

    // health_status: the default, `{"status": "ok"}`.
}

impl SeldonOps for TreeModel {
    fn predict(&self, msg: SeldonMessage) -> Result<Prediction, ModelError> {
        let x = self.rows_of(&msg.payload)?;
        let (values, rows) = self.score(&x)?;
        if matches!(msg.payload, Payload::Json(_)) {
            return Ok(Prediction::Message(SeldonMessage {
                status: None,
                meta: Meta {
                    tags: msg.meta.tags,
                    ..Meta::default()
                },
                payload: Payload::Json(self.columns(&values)),
            }));
        }
        let answer = Answer {
            output: Some(Output::Array(Array::Numeric(self.matrix(values, rows)))),
            names: self.output_names.clone(),
            ..Answer::default()
        };
        Ok(Prediction::Message(
            answer.into_message(&msg.payload, &msg.meta.tags),
        ))
    }

    fn predict_batch(&self, msg: SeldonMessage) -> Result<Answer, ModelError> {
        let x = self.rows_of(&msg.payload)?;
        let (values, rows) = self.score(&x)?;
        Ok(Answer {
            output: Some(Output::Array(Array::Numeric(self.matrix(values, rows)))),
            names: self.output_names.clone(),
            ..Answer::default()
        })
    }

    fn send_feedback(&self, _feedback: Feedback) -> Result<SeldonMessage, ModelError> {
        Err(bad(
            "send_feedback is not supported by the native tree runtime",
        ))
    }
}

impl Model for TreeModel {
    fn infer(&self, req: InferRequest) -> Result<Inferred, ModelError> {
        self.outputs(req).map(Inferred::from)
    }

    fn metadata(&self) -> Result<Value, ModelError> {
        self.tree_metadata()
    }

    fn seldon(&self) -> Option<&dyn SeldonOps> {
        Some(self)
    }
}

/// The default model of a server started with an empty repository, waiting for models
/// to be published: every call says so.
pub struct NoModel;

impl NoModel {
    #[cold]
    fn none() -> ModelError {
        bad(
            "this server has no default model: call a published model on \
             /api/NAME/VERSION or /v2/models/NAME, or publish one \
             (POST /api/v1.0/publish/NAME/VERSION)",
        )
    }
}

impl Model for NoModel {
    fn is_placeholder(&self) -> bool {
        true
    }

    fn infer(&self, _request: InferRequest) -> Result<Inferred, ModelError> {
        Err(Self::none())
    }

    fn metadata(&self) -> Result<Value, ModelError> {
        Ok(json!({"platform": "inferwire"}))
    }

    fn seldon(&self) -> Option<&dyn SeldonOps> {
        Some(self)
    }
}

impl SeldonOps for NoModel {
    fn predict(&self, _msg: SeldonMessage) -> Result<Prediction, ModelError> {
        Err(Self::none())
    }

    fn predict_batch(&self, _msg: SeldonMessage) -> Result<Answer, ModelError> {
        Err(Self::none())
    }

    fn send_feedback(&self, _feedback: Feedback) -> Result<SeldonMessage, ModelError> {
        Err(Self::none())
    }

    fn health_status(&self) -> Result<SeldonMessage, ModelError> {
        Ok(SeldonMessage {
            payload: Payload::Json(json!({"status": "ok", "models": 0})),
            ..SeldonMessage::default()
        })
    }
}
