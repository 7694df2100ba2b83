//! `inferwire._core.Server`: runs the Rust servers with the GIL released.
use std::sync::Arc;

use inferwire_server::{
    serve, Listeners, Metrics, Model, ModelSpec, Repository, ServerConfig, Serving, StopHandle,
};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

use crate::config::CoreConfig;
use crate::repository::{built, model_of, PyRepository};

#[pyclass(module = "inferwire._core", frozen)]
pub struct Server {
    config: ServerConfig,
    model: Arc<dyn Model>,
    /// Repository models built before the fork (shared copy-on-write, as the default one).
    /// `serve()` takes them: then the process that serves holds them only while it
    /// serves them, and an unloaded one goes (a supervisor keeps its own for the
    /// workers it forks).
    others: std::sync::Mutex<Vec<(Arc<dyn Model>, ModelSpec)>>,
    repository: Option<Arc<dyn Repository>>,
    /// Made here, before `inferwire serve --workers` forks: every worker counts in it.
    metrics: Metrics,
    stop: StopHandle,
    /// Bound by `listen()` before the workers fork; each worker serves clones of them.
    /// The supervisor lets go of its own at SIGTERM (`unlisten()`).
    listeners: std::sync::Mutex<Option<Listeners>>,
    /// Called at each scrape for more metrics text (MLServer's custom metrics).
    metrics_text: Option<Arc<Py<PyAny>>>,
}

#[pymethods]
impl Server {
    /// `config`: `inferwire.Settings.to_core()`; `models`: `(adapter, CoreModelSpec)` of
    /// other models already built; `repository`: an `inferwire.repository.Repository` the
    /// repository API loads from; `metrics_text`: a callable giving more of the metrics
    /// page, in Prometheus' text format.
    #[new]
    #[pyo3(signature = (config, adapter, models=Vec::new(), repository=None, metrics_text=None))]
    fn new(
        config: PyRef<'_, CoreConfig>,
        adapter: Bound<'_, PyAny>,
        models: Vec<Bound<'_, PyAny>>,
        repository: Option<Py<PyAny>>,
        metrics_text: Option<Py<PyAny>>,
    ) -> PyResult<Self> {
        init_logging(&config.log_level);
        Ok(Self {
            config: config.config.clone(),
            model: model_of(adapter)?,
            others: std::sync::Mutex::new(models.iter().map(built).collect::<PyResult<_>>()?),
            repository: repository.map(|r| Arc::new(PyRepository(r)) as Arc<dyn Repository>),
            metrics: Metrics::shared()
                .map_err(|e| PyRuntimeError::new_err(format!("cannot map metrics memory: {e}")))?,
            stop: StopHandle::new(),
            listeners: std::sync::Mutex::new(None),
            metrics_text: metrics_text.map(Arc::new),
        })
    }

    /// Serves until SIGINT/SIGTERM or `stop()`. `on_bound(http_port, grpc_port)` is called
    /// once both ports listen. `worker` is this process' index among the `workers`.
    #[pyo3(signature = (on_bound, worker=0, workers=1))]
    fn serve(
        &self,
        py: Python<'_>,
        on_bound: Py<PyAny>,
        worker: usize,
        workers: usize,
    ) -> PyResult<()> {
        let serving = Serving {
            config: self.config.clone(),
            model: self.model.clone(),
            others: std::mem::take(&mut *self.others.lock().unwrap_or_else(|e| e.into_inner())),
            repository: self.repository.clone(),
            worker,
            workers,
            // Taken, not cloned: once the I/O threads have closed theirs at the drain,
            // nothing in this process holds the sockets open, so the kernel refuses new
            // connections instead of queueing them for no one (and resetting them at
            // exit, after a balancer has sent them a request).
            listeners: self
                .listeners
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take(),
            extra_metrics: self.metrics_text.clone().map(extra_metrics),
        };
        let metrics = self.metrics.for_worker(worker);
        let stop = self.stop.clone();
        py.detach(move || {
            serve(serving, metrics, stop, |bound| {
                Python::attach(|py| {
                    if let Err(e) = on_bound.call1(py, (bound.http.port(), bound.grpc.port())) {
                        e.print(py);
                    }
                })
            })
        })
        .map_err(|e| PyRuntimeError::new_err(e.message))
    }

    /// Binds both ports now, once, for `serve()` in this process and in the workers it
    /// forks; returns `(http_port, grpc_port)`.
    fn listen(&self) -> PyResult<(u16, u16)> {
        let mut held = self.listeners.lock().unwrap_or_else(|e| e.into_inner());
        if held.is_none() {
            *held = Some(
                Listeners::bind(&self.config).map_err(|e| PyRuntimeError::new_err(e.message))?,
            );
        }
        let Some(listeners) = held.as_ref() else {
            unreachable!("bound just above")
        };
        let port = |l: &std::net::TcpListener| l.local_addr().map(|a| a.port());
        Ok((
            port(&listeners.http).map_err(|e| PyRuntimeError::new_err(e.to_string()))?,
            port(&listeners.grpc).map_err(|e| PyRuntimeError::new_err(e.to_string()))?,
        ))
    }

    /// Closes this process's handles on the listening sockets (the supervisor's, at
    /// SIGTERM: it forks no more workers). Once the draining workers have closed theirs
    /// too, new connections are refused, and a balancer sends them elsewhere, instead of
    /// being completed by the kernel into a queue no one takes from and then reset.
    fn unlisten(&self) {
        drop(
            self.listeners
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take(),
        );
    }

    /// Counts a worker replaced after `max_requests` or `max_worker_memory`
    /// (`inferwire_worker_recycles_total`).
    fn worker_recycled(&self) {
        self.metrics.worker_recycled();
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

/// The scrape's call of `metrics_text`: its text, or nothing (and a warning) when it
/// fails, so that inferwire's own metrics are still served.
fn extra_metrics(hook: Arc<Py<PyAny>>) -> inferwire_server::app::ExtraMetrics {
    Arc::new(move || {
        Python::attach(|py| {
            hook.call0(py)
                .and_then(|text| text.extract::<String>(py))
                .unwrap_or_else(|e| {
                    tracing::warn!("metrics_text() failed: {e}");
                    String::new()
                })
        })
    })
}
