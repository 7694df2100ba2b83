//! `inferwire._core.Server`: runs the Rust servers with the GIL released.
use std::sync::Arc;

use inferwire_server::{serve, Metrics, ServerConfig, StopHandle};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::model::PyModel;

#[pyclass(module = "inferwire._core", frozen)]
pub struct Server {
    config: ServerConfig,
    model: Arc<PyModel>,
    /// Made here, before `inferwire serve --workers` forks: every worker counts in it.
    metrics: Metrics,
    stop: StopHandle,
}

#[pymethods]
impl Server {
    #[new]
    fn new(config: &Bound<'_, PyDict>, adapter: Bound<'_, PyAny>) -> PyResult<Self> {
        let level: String = config
            .get_item("log_level")?
            .map(|v| v.extract())
            .transpose()?
            .unwrap_or_else(|| "info".to_owned());
        init_logging(&level);
        Ok(Self {
            config: crate::config::from_dict(config)?,
            model: Arc::new(PyModel::new(adapter)?),
            metrics: Metrics::shared()
                .map_err(|e| PyRuntimeError::new_err(format!("cannot map metrics memory: {e}")))?,
            stop: StopHandle::new(),
        })
    }

    /// Serves until SIGINT/SIGTERM or `stop()`. `on_bound(http_port, grpc_port)` is called
    /// once both ports listen. `worker` is this process' index among the workers.
    #[pyo3(signature = (on_bound, worker=0))]
    fn serve(&self, py: Python<'_>, on_bound: Py<PyAny>, worker: usize) -> PyResult<()> {
        let config = self.config.clone();
        let model = self.model.clone();
        let metrics = self.metrics.for_worker(worker);
        let stop = self.stop.clone();
        py.detach(move || {
            serve(config, model, metrics, stop, |bound| {
                Python::attach(|py| {
                    if let Err(e) = on_bound.call1(py, (bound.http.port(), bound.grpc.port())) {
                        e.print(py);
                    }
                })
            })
        })
        .map_err(|e| PyRuntimeError::new_err(e.message))
    }

    /// Asks a running `serve()` to drain and return.
    fn stop(&self) {
        self.stop.stop();
    }

    /// Counts a worker restarted by the supervisor (`inferwire_worker_restarts_total`).
    fn worker_restarted(&self) {
        self.metrics.worker_restarted();
    }

    /// Frees a dead worker's slot, so that it stops counting as serving.
    fn worker_exited(&self, worker: usize) {
        self.metrics.for_worker(worker).worker_stopped();
    }

    /// The Prometheus text `/metrics` serves.
    fn metrics_text(&self) -> String {
        self.metrics.render()
    }
}

fn init_logging(level: &str) {
    let filter =
        tracing_subscriber::EnvFilter::try_from_env("INFERWIRE_RUST_LOG").unwrap_or_else(|_| {
            tracing_subscriber::EnvFilter::new(format!(
                "inferwire_server={level},inferwire_py={level},warn"
            ))
        });
    use std::io::IsTerminal;
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr)
        .try_init();
}
