//! `TreeEnsemble`: a model in the inferwire tree format scored from Python (tests and
//! `inferwire.trees`); the server scores the same `Forest` without Python.
use std::sync::Arc;

use inferwire_server::native::{TreeModel, V2Outputs};
use inferwire_server::Model;
use inferwire_trees::format::Task;
use inferwire_trees::Forest;
use numpy::{PyArray2, PyArrayMethods, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use serde_json::{Map, Value};

use crate::convert::json_to_py;

#[pyclass(frozen)]
pub struct TreeEnsemble {
    forest: Arc<Forest>,
    output_names: String,
    v2: V2Outputs,
    metadata: Map<String, Value>,
}

impl TreeEnsemble {
    /// The model the server runs for it: no Python on the request path.
    pub fn model(&self) -> Arc<dyn Model> {
        Arc::new(
            TreeModel::new(self.forest.clone(), &self.output_names)
                .with_v2_outputs(self.v2.clone())
                .with_metadata(self.metadata.clone()),
        )
    }
}

/// The V2 outputs of MLServer's runtime `runtime` (`sklearn`, `xgboost`, `lightgbm`;
/// empty: inferwire's own).
fn v2_outputs(runtime: &str, default_output: &str) -> PyResult<V2Outputs> {
    let mlserver = |fp32| V2Outputs::MlServer {
        default: default_output.to_owned(),
        fp32,
    };
    match runtime {
        "" => Ok(V2Outputs::Inferwire),
        "sklearn" => Ok(mlserver(false)),
        "xgboost" => Ok(mlserver(true)),
        "lightgbm" => Ok(V2Outputs::MlServerLightgbm),
        other => Err(PyValueError::new_err(format!(
            "mlserver_runtime: {other:?} is not sklearn, xgboost or lightgbm"
        ))),
    }
}

#[pymethods]
impl TreeEnsemble {
    /// Loads a model from its JSON text (`str` or `bytes`). `output_names` names the
    /// outputs when served: `{class}` becomes each class label.
    #[new]
    #[pyo3(signature = (text, output_names="{class}", *, mlserver_runtime="", default_output="predict", metadata="{}"))]
    fn new(
        text: &Bound<'_, PyAny>,
        output_names: &str,
        mlserver_runtime: &str,
        default_output: &str,
        metadata: &str,
    ) -> PyResult<Self> {
        let v2 = v2_outputs(mlserver_runtime, default_output)?;
        let metadata = match serde_json::from_str(metadata) {
            Ok(Value::Object(m)) => m,
            _ => return Err(PyValueError::new_err("metadata: not a JSON object")),
        };
        let bytes: Vec<u8> = match text.extract::<String>() {
            Ok(s) => s.into_bytes(),
            Err(_) => text.extract::<Vec<u8>>()?,
        };
        let forest = Forest::from_json(&bytes).map_err(|e| PyValueError::new_err(e.0))?;
        Ok(Self {
            forest: Arc::new(forest),
            output_names: output_names.to_owned(),
            v2,
            metadata,
        })
    }

    /// Class probabilities (classification) or values (regression), one row per row of
    /// `X` (a 2-D float64 array), computed without the GIL.
    #[pyo3(signature = (X))]
    #[allow(non_snake_case)] // scikit-learn's name for the feature matrix
    fn predict<'py>(
        &self,
        py: Python<'py>,
        X: PyReadonlyArray2<'py, f64>,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let x = X;
        let [rows, cols] = [x.shape()[0], x.shape()[1]];
        if cols != self.forest.info.n_features {
            return Err(PyValueError::new_err(format!(
                "X has {cols} features; the model takes {}",
                self.forest.info.n_features
            )));
        }
        let data: Vec<f64> = x.as_array().iter().copied().collect();
        let width = self.forest.info.n_outputs;
        let mut out = vec![0.0; rows * width];
        py.detach(|| self.forest.predict(&data, &mut out))
            .map_err(PyValueError::new_err)?;
        numpy::PyArray1::from_vec(py, out).reshape([rows, width])
    }

    /// The bytes the model holds in memory (its trees' arrays).
    #[getter]
    fn memory_bytes(&self) -> usize {
        self.forest.memory_bytes()
    }

    #[getter]
    fn n_features(&self) -> usize {
        self.forest.info.n_features
    }

    #[getter]
    fn n_outputs(&self) -> usize {
        self.forest.info.n_outputs
    }

    #[getter]
    fn n_trees(&self) -> usize {
        self.forest.info.n_trees
    }

    #[getter]
    fn task(&self) -> &'static str {
        match self.forest.info.task {
            Task::Classification => "classification",
            Task::Regression => "regression",
        }
    }

    #[getter]
    fn source(&self) -> &str {
        &self.forest.info.source
    }

    #[getter]
    fn feature_names(&self) -> Vec<String> {
        self.forest.info.feature_names.clone()
    }

    #[getter]
    fn classes<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyAny>>> {
        self.forest
            .info
            .classes
            .iter()
            .map(|c| json_to_py(py, c))
            .collect()
    }
}
