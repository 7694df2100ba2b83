//! The inferwire tree format, version 1: what converters write (from scikit-learn,
//! XGBoost, LightGBM) and what `Forest::load` reads. JSON, so it can be inspected and
//! diffed; it is read once at load time.
//!
//! A model is a list of trees. Each tree adds the value of the leaf a row reaches to the
//! row's raw output (to every output, or to the one its `output` names); the sum is
//! averaged (`mean`) or kept (`sum`), `base` is added, and `link` turns the raw output
//! into what the library's own `predict_proba` / `predict` returns.
use serde::{Deserialize, Serialize};

pub const FORMAT: &str = "inferwire-trees";
pub const VERSION: u32 = 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Task {
    /// Outputs are class probabilities; the prediction is the class with the highest.
    Classification,
    /// Outputs are the predicted values.
    Regression,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Aggregate {
    /// Random forests: the average of the trees (per output, of the trees that add to it).
    Mean,
    /// Boosting: the sum of the trees.
    Sum,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Link {
    Identity,
    /// Binary boosting: one raw output `r` becomes the probabilities `[1 - σ(r), σ(r)]`.
    Sigmoid,
    /// Multi-class boosting: softmax over the raw outputs.
    Softmax,
}

/// How a split sends a row left.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Split {
    /// `x <= threshold` (scikit-learn, LightGBM).
    Le,
    /// `x < threshold` (XGBoost).
    Lt,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForestFile {
    /// Always `inferwire-trees`.
    pub format: String,
    /// Always 1 for this layout.
    pub version: u32,
    /// The estimator it was converted from, e.g. `sklearn.ensemble.RandomForestClassifier`.
    pub source: String,
    pub task: Task,
    pub n_features: usize,
    #[serde(default)]
    pub feature_names: Vec<String>,
    /// Class labels, in output order (classification).
    #[serde(default)]
    pub classes: Vec<serde_json::Value>,
    /// Raw outputs per row (before `link`): classes, or 1 for regression and binary
    /// boosting.
    pub n_outputs: usize,
    pub aggregate: Aggregate,
    /// Added to the raw outputs after aggregation (boosting's initial prediction).
    #[serde(default)]
    pub base: Vec<f64>,
    pub link: Link,
    pub split: Split,
    /// Round each feature to float32 before comparing it (scikit-learn and XGBoost
    /// compare float32 features).
    #[serde(default)]
    pub features_as_f32: bool,
    pub trees: Vec<TreeFile>,
}

/// One tree as parallel arrays, one entry per node; node 0 is the root.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TreeFile {
    /// The feature a node splits on; -1 for leaves.
    pub feature: Vec<i64>,
    /// Numbers, or the strings `"inf"`, `"-inf"`, `"nan"` (JSON has no infinities:
    /// scikit-learn splits missing values from all others at an infinite threshold).
    #[serde(deserialize_with = "floats", serialize_with = "write_floats")]
    pub threshold: Vec<f64>,
    pub left: Vec<u32>,
    pub right: Vec<u32>,
    /// Where a missing value (NaN) goes, per node; empty: where its comparison sends it
    /// (NaN compares false, so right).
    #[serde(default)]
    pub missing_left: Vec<bool>,
    /// Leaf values (numbers or `"inf"`, `"-inf"`, `"nan"`), `width` per node (only leaves' are read), where `width` is
    /// `n_outputs`, or 1 when `output` is set.
    #[serde(deserialize_with = "floats", serialize_with = "write_floats")]
    pub value: Vec<f64>,
    /// The one raw output this tree adds to (boosting with one tree per class).
    #[serde(default)]
    pub output: Option<usize>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Float {
    Number(f64),
    Text(String),
}

fn floats<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<f64>, D::Error> {
    let raw: Vec<Float> = Vec::deserialize(d)?;
    raw.into_iter()
        .map(|f| match f {
            Float::Number(x) => Ok(x),
            Float::Text(t) => match t.as_str() {
                "inf" | "Infinity" => Ok(f64::INFINITY),
                "-inf" | "-Infinity" => Ok(f64::NEG_INFINITY),
                "nan" | "NaN" => Ok(f64::NAN),
                other => Err(serde::de::Error::custom(format!(
                    "{other:?} is not a number (\"inf\", \"-inf\" and \"nan\" are the only strings)"
                ))),
            },
        })
        .collect()
}

fn write_floats<S: serde::Serializer>(v: &[f64], s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeSeq;
    let mut seq = s.serialize_seq(Some(v.len()))?;
    for x in v {
        if x.is_finite() {
            seq.serialize_element(x)?;
        } else if x.is_nan() {
            seq.serialize_element("nan")?;
        } else if *x > 0.0 {
            seq.serialize_element("inf")?;
        } else {
            seq.serialize_element("-inf")?;
        }
    }
    seq.end()
}
