//! The settings `inferwire.settings` validated, crossing into Rust once:
//! `CoreConfig(**settings)` hands the core's settings over by name, read by
//! `inferwire_server::settings::Settings` (a missing or unknown key is a TypeError naming
//! it; units and derived values are worked out there), and `CoreModelSpec(**kwargs)` how
//! one repository model is served. Defaults live in the Python schema only.
use inferwire_server::settings::{runner, Settings};
use inferwire_server::{ModelSpec, ServerConfig};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// `inferwire._core.CoreConfig`: how the server runs (`inferwire.Settings.to_core()`).
#[pyclass(module = "inferwire._core", frozen)]
pub struct CoreConfig {
    pub config: ServerConfig,
    /// The core's log filter level (tracing's spelling: debug, info, warn, error).
    pub log_level: String,
}

#[pymethods]
impl CoreConfig {
    #[new]
    #[pyo3(signature = (**settings))]
    fn new(settings: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let value = match settings {
            Some(d) => crate::convert::py_to_json(d.as_any())?,
            None => serde_json::Value::Object(Default::default()),
        };
        // Keys and types are the caller's mistake, as a wrong keyword argument is.
        let settings = Settings::from_json(value).map_err(PyTypeError::new_err)?;
        let (config, log_level) = settings.into_config().map_err(PyValueError::new_err)?;
        Ok(Self { config, log_level })
    }
}

/// `inferwire._core.CoreModelSpec`: how one repository model is served
/// (`inferwire.repository.ModelSettings.to_core()`).
#[pyclass(module = "inferwire._core", frozen)]
pub struct CoreModelSpec(pub ModelSpec);

#[pymethods]
impl CoreModelSpec {
    #[new]
    #[pyo3(signature = (
        *, name, version, model_threads, max_concurrency, max_queue, max_batch_size,
        max_batch_delay, memory_bytes,
    ))]
    #[allow(clippy::too_many_arguments)] // one keyword argument per setting, by design
    fn new(
        name: String,
        version: String,
        model_threads: usize,
        max_concurrency: usize,
        max_queue: usize,
        max_batch_size: usize,
        max_batch_delay: f64,
        memory_bytes: u64,
    ) -> Self {
        Self(ModelSpec {
            name,
            version,
            memory: memory_bytes,
            runner: runner(
                model_threads,
                max_concurrency,
                max_queue,
                max_batch_size,
                max_batch_delay,
            ),
        })
    }
}
