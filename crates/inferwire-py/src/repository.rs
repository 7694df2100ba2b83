//! `Repository` for `inferwire.repository.Repository`: the Python side reads the folder
//! and builds models; the core calls it (off the I/O threads) to list and load them.
use std::sync::Arc;

use inferwire_server::{Model, ModelSpec, Repository};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::config::CoreModelSpec;
use crate::model::PyModel;
use crate::trees::TreeEnsemble;

pub struct PyRepository(pub Py<PyAny>);

/// The model an adapter stands for: a `TreeEnsemble` is served natively, anything else
/// through Python.
pub fn model_of(adapter: Bound<'_, PyAny>) -> PyResult<Arc<dyn Model>> {
    if adapter.is_none() {
        return Ok(Arc::new(inferwire_server::native::NoModel));
    }
    if let Ok(native) = adapter.cast::<TreeEnsemble>() {
        return Ok(native.get().model());
    }
    Ok(Arc::new(PyModel::new(adapter)?))
}

/// A model built by Python: its adapter and its `CoreModelSpec`.
pub fn built(pair: &Bound<'_, PyAny>) -> PyResult<(Arc<dyn Model>, ModelSpec)> {
    let pair = pair.cast::<PyTuple>()?;
    let model = model_of(pair.get_item(0)?)?;
    let spec = pair.get_item(1)?.cast::<CoreModelSpec>()?.get().0.clone();
    Ok((model, spec))
}

impl Repository for PyRepository {
    fn names(&self) -> Result<Vec<String>, String> {
        Python::attach(|py| {
            self.0
                .bind(py)
                .call_method0("names")
                .and_then(|n| n.extract())
                .map_err(|e| e.value(py).to_string())
        })
    }

    fn failures(&self) -> Vec<(String, String)> {
        Python::attach(|py| {
            self.0
                .bind(py)
                .call_method0("failures")
                .and_then(|f| f.extract::<std::collections::BTreeMap<String, String>>())
                .map(|f| f.into_iter().collect())
                .unwrap_or_default()
        })
    }

    /// The Python repository's `poll()`: `[(name, versions or None), ...]`, where
    /// versions are `(adapter, CoreModelSpec)` pairs, or an exception (why they could
    /// not be built).
    fn poll(&self) -> Result<inferwire_server::models::Polled, String> {
        Python::attach(|py| {
            let out = self
                .0
                .bind(py)
                .call_method0("poll")
                .map_err(|e| e.value(py).to_string())?;
            let mut changes = Vec::new();
            for item in out.try_iter().map_err(|e| e.value(py).to_string())? {
                let (name, versions): (String, Bound<'_, PyAny>) =
                    item.and_then(|i| i.extract())
                        .map_err(|e| e.value(py).to_string())?;
                if versions.is_none() {
                    changes.push((name, None));
                    continue;
                }
                if versions.is_instance_of::<pyo3::exceptions::PyBaseException>() {
                    changes.push((name, Some(Err(versions.to_string()))));
                    continue;
                }
                let mut built_versions = Vec::new();
                for pair in versions.try_iter().map_err(|e| e.value(py).to_string())? {
                    let pair = pair.map_err(|e| e.value(py).to_string())?;
                    built_versions.push(built(&pair).map_err(|e| e.value(py).to_string())?);
                }
                changes.push((name, Some(Ok(built_versions))));
            }
            Ok(changes)
        })
    }

    fn publish(
        &self,
        name: &str,
        version: &str,
        data: &[u8],
        filename: &str,
    ) -> Result<(Arc<dyn Model>, ModelSpec), String> {
        Python::attach(|py| {
            let data = pyo3::types::PyBytes::new(py, data);
            self.0
                .bind(py)
                .call_method1("publish", (name, version, data, filename))
                .and_then(|pair| built(&pair))
                .map_err(|e| e.value(py).to_string())
        })
    }

    fn delete(
        &self,
        name: &str,
        version: &str,
    ) -> Result<Option<inferwire_server::models::Built>, String> {
        Python::attach(|py| {
            let out = self
                .0
                .bind(py)
                .call_method1("delete", (name, version))
                .map_err(|e| e.value(py).to_string())?;
            if out.is_none() {
                return Ok(None);
            }
            built(&out).map(Some).map_err(|e| e.value(py).to_string())
        })
    }

    fn published(&self) -> Result<serde_json::Value, String> {
        Python::attach(|py| {
            self.0
                .bind(py)
                .call_method0("published")
                .and_then(|v| crate::convert::py_to_json(&v))
                .map_err(|e| e.value(py).to_string())
        })
    }

    fn load(&self, name: &str) -> Result<(Arc<dyn Model>, ModelSpec), String> {
        Python::attach(|py| {
            self.0
                .bind(py)
                .call_method1("load", (name,))
                .and_then(|pair| built(&pair))
                .map_err(|e| e.value(py).to_string())
        })
    }

    fn load_versions(&self, name: &str) -> Result<Vec<inferwire_server::models::Built>, String> {
        Python::attach(|py| {
            let pairs = self
                .0
                .bind(py)
                .call_method1("load_versions", (name,))
                .map_err(|e| e.value(py).to_string())?;
            versions(&pairs)
        })
    }

    /// The Python repository's `load_with(name, parameters)`: `(versions, replay)`.
    fn load_with(
        &self,
        name: &str,
        parameters: &serde_json::Value,
    ) -> Result<(Vec<inferwire_server::models::Built>, serde_json::Value), String> {
        Python::attach(|py| {
            let err = |e: PyErr| e.value(py).to_string();
            let parameters = crate::convert::json_to_py(py, parameters).map_err(err)?;
            let out = self
                .0
                .bind(py)
                .call_method1("load_with", (name, parameters))
                .map_err(err)?;
            let (pairs, replay): (Bound<'_, PyAny>, Bound<'_, PyAny>) =
                out.extract().map_err(err)?;
            let replay = crate::convert::py_to_json(&replay).map_err(err)?;
            Ok((versions(&pairs)?, replay))
        })
    }

    fn reload(
        &self,
        name: &str,
        replay: &serde_json::Value,
    ) -> Result<Vec<inferwire_server::models::Built>, String> {
        Python::attach(|py| {
            let err = |e: PyErr| e.value(py).to_string();
            let replay = crate::convert::json_to_py(py, replay).map_err(err)?;
            let pairs = self
                .0
                .bind(py)
                .call_method1("reload", (name, replay))
                .map_err(err)?;
            versions(&pairs)
        })
    }
}

/// `[(adapter, CoreModelSpec), ...]` from Python, as built models.
fn versions(pairs: &Bound<'_, PyAny>) -> Result<Vec<inferwire_server::models::Built>, String> {
    let py = pairs.py();
    let mut out = Vec::new();
    for pair in pairs.try_iter().map_err(|e| e.value(py).to_string())? {
        let pair = pair.map_err(|e| e.value(py).to_string())?;
        out.push(built(&pair).map_err(|e| e.value(py).to_string())?);
    }
    Ok(out)
}
