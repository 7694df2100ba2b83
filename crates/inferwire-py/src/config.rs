//! The settings `inferwire.settings` validated, crossing into Rust once and typed:
//! `CoreConfig(**kwargs)` and `CoreModelSpec(**kwargs)` take keyword-only arguments with
//! no defaults, so a missing or misspelt key is a TypeError naming it, never a silent
//! default. Defaults and derived values (max_concurrency 0, jitter, MiB → bytes) live in
//! the Python schema only; this file only converts units and builds TLS and auth.
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use inferwire_codec::Limits;
use inferwire_server::auth::Auth;
use inferwire_server::config::{CorsConfig, ServerIdentity};
use inferwire_server::dialect::{self, StreamReply, Tuned};
use inferwire_server::login_guard::LoginLimits;
use inferwire_server::repository_sync::SyncConfig;
use inferwire_server::runner::RunnerConfig;
use inferwire_server::shared_memory::SharedMemoryConfig;
use inferwire_server::stream::StreamLimits;
use inferwire_server::tls::TlsConfig;
use inferwire_server::{AccessLog, ModelSpec, ServerConfig};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// `inferwire._core.CoreConfig`: how the server runs (`inferwire.Settings.to_core()`).
#[pyclass(module = "inferwire._core", frozen)]
pub struct CoreConfig {
    pub config: ServerConfig,
    /// The core's log filter level (tracing's spelling: debug, info, warn, error).
    pub log_level: String,
}

/// Seconds as a duration; 0 (or less) means none.
fn seconds(v: f64) -> Option<Duration> {
    (v > 0.0).then(|| Duration::from_secs_f64(v))
}

fn seconds_or_zero(v: f64) -> Duration {
    seconds(v).unwrap_or(Duration::ZERO)
}

/// 0 means none (no request limit, no memory limit).
fn limit(n: u64) -> Option<u64> {
    (n > 0).then_some(n)
}

fn runner(
    model_threads: usize,
    max_concurrency: usize,
    max_queue: usize,
    max_batch_size: usize,
    max_batch_delay: f64,
) -> RunnerConfig {
    RunnerConfig {
        max_concurrency,
        max_queue,
        model_threads,
        max_batch_size,
        max_batch_delay: seconds_or_zero(max_batch_delay),
    }
}

#[pymethods]
impl CoreConfig {
    #[new]
    #[pyo3(signature = (
        *, host, http_port, grpc_port, model_name, model_image, model_version,
        model_threads, max_concurrency, max_queue, max_batch_size, max_batch_delay,
        auth_tokens, auth_users, auth_key, auth_token_ttl, allow_unauthenticated_repository,
        login_user_failures, login_client_failures, login_window,
        tls_cert, tls_key, tls_client_ca,
        max_body_bytes, body_timeout, max_body_bytes_in_flight, max_elements, max_json_depth,
        max_connections, header_timeout, max_streams,
        workers, supervised, timeout, io_threads, grace_period, stuck_after,
        max_requests, max_requests_jitter, max_worker_memory,
        access_log, log_level, repository_sync_dir,
        metrics_port, metrics_endpoint,
        system_shared_memory, shared_memory_max_regions, shared_memory_max_bytes,
        shared_memory_dir,
        stream_max_open, stream_max_pieces, stream_max_bytes, stream_idle_timeout,
        stream_timeout, grpc_stream_reply, v2_invalid_status,
        v2_dialect, server_name, server_version, server_extensions,
        cors_allow_origins, cors_allow_methods, cors_allow_headers, cors_allow_credentials,
        cors_expose_headers, cors_max_age,
        load_models_on_request, model_memory_budget,
    ))]
    #[allow(clippy::too_many_arguments)] // one keyword argument per setting, by design
    fn new(
        host: String,
        http_port: u16,
        grpc_port: u16,
        model_name: String,
        model_image: String,
        model_version: String,
        model_threads: usize,
        max_concurrency: usize,
        max_queue: usize,
        max_batch_size: usize,
        max_batch_delay: f64,
        auth_tokens: String,
        auth_users: String,
        auth_key: String,
        auth_token_ttl: f64,
        allow_unauthenticated_repository: bool,
        login_user_failures: u32,
        login_client_failures: u32,
        login_window: f64,
        tls_cert: String,
        tls_key: String,
        tls_client_ca: String,
        max_body_bytes: usize,
        body_timeout: f64,
        max_body_bytes_in_flight: usize,
        max_elements: usize,
        max_json_depth: usize,
        max_connections: usize,
        header_timeout: f64,
        max_streams: u32,
        workers: usize,
        supervised: bool,
        timeout: f64,
        io_threads: usize,
        grace_period: f64,
        stuck_after: f64,
        max_requests: u64,
        max_requests_jitter: u64,
        max_worker_memory: u64,
        access_log: &str,
        log_level: String,
        repository_sync_dir: String,
        metrics_port: u16,
        metrics_endpoint: String,
        system_shared_memory: bool,
        shared_memory_max_regions: usize,
        shared_memory_max_bytes: u64,
        shared_memory_dir: String,
        stream_max_open: usize,
        stream_max_pieces: u64,
        stream_max_bytes: u64,
        stream_idle_timeout: f64,
        stream_timeout: f64,
        grpc_stream_reply: &str,
        v2_invalid_status: u16,
        v2_dialect: &str,
        server_name: String,
        server_version: String,
        server_extensions: String,
        cors_allow_origins: String,
        cors_allow_methods: String,
        cors_allow_headers: String,
        cors_allow_credentials: bool,
        cors_expose_headers: String,
        cors_max_age: u64,
        load_models_on_request: bool,
        model_memory_budget: u64,
    ) -> PyResult<Self> {
        let invalid_422 = match v2_invalid_status {
            400 => false,
            422 => true,
            other => {
                return Err(PyValueError::new_err(format!(
                    "v2_invalid_status: {other} is not 400 or 422"
                )))
            }
        };
        let identity = identity(server_name, server_version, &server_extensions);
        let base = dialect::by_name(v2_dialect, &identity.name).ok_or_else(|| {
            PyValueError::new_err(format!(
                "v2_dialect: {v2_dialect:?} is not one of {}",
                dialect::NAMES.join(", ")
            ))
        })?;
        let cors = (!cors_allow_origins.trim().is_empty()).then(|| CorsConfig {
            origins: list(&cors_allow_origins),
            methods: list(&cors_allow_methods),
            headers: list(&cors_allow_headers),
            credentials: cors_allow_credentials,
            expose: list(&cors_expose_headers),
            max_age: cors_max_age,
        });
        let stream_reply = match grpc_stream_reply {
            "triton" => StreamReply::Triton,
            "mlserver" => StreamReply::Mlserver,
            other => {
                return Err(PyValueError::new_err(format!(
                    "grpc_stream_reply: {other:?} is not triton or mlserver"
                )))
            }
        };
        let access_log = match access_log {
            "off" => AccessLog::Off,
            "text" => AccessLog::Text,
            "json" => AccessLog::Json,
            other => {
                return Err(PyValueError::new_err(format!(
                    "access_log: {other:?} is not off, text or json"
                )))
            }
        };
        let limits = LoginLimits {
            user_failures: login_user_failures,
            client_failures: login_client_failures,
            window: Duration::from_secs_f64(login_window),
            ..LoginLimits::default()
        };
        let runner = runner(
            model_threads,
            max_concurrency,
            max_queue,
            max_batch_size,
            max_batch_delay,
        );
        let config = ServerConfig {
            dialect: Arc::new(Tuned {
                base,
                invalid_422,
                stream_reply,
            }),
            identity,
            cors,
            // MiB; a budget implies loading on request (nothing else would load models
            // back after they were unloaded to make room).
            model_cache: inferwire_server::models::CacheConfig {
                on_request: load_models_on_request || model_memory_budget > 0,
                budget: (model_memory_budget > 0).then(|| model_memory_budget * 1024 * 1024),
            },
            streaming: StreamLimits {
                max_open: stream_max_open,
                max_pieces: stream_max_pieces,
                max_bytes: stream_max_bytes,
                idle: Duration::from_secs_f64(stream_idle_timeout.max(0.001)),
                total: Duration::from_secs_f64(stream_timeout.max(0.001)),
            },
            host,
            http_port,
            grpc_port,
            max_body_bytes,
            limits: Limits {
                max_elements,
                max_depth: max_json_depth,
            },
            model_name,
            model_image,
            model_version,
            max_concurrency: runner.max_concurrency,
            max_queue: runner.max_queue,
            model_threads: runner.model_threads,
            max_batch_size: runner.max_batch_size,
            max_batch_delay: runner.max_batch_delay,
            timeout: seconds(timeout),
            reuse_port: workers > 1,
            access_log,
            io_threads,
            grace_period: seconds_or_zero(grace_period),
            auth: auth(
                &auth_tokens,
                &auth_users,
                auth_key,
                Duration::from_secs_f64(auth_token_ttl),
                limits,
            )?,
            tls: tls(&tls_cert, &tls_key, &tls_client_ca)?,
            max_connections,
            header_timeout: seconds_or_zero(header_timeout),
            max_streams,
            repository_sync: (!repository_sync_dir.is_empty()).then(|| SyncConfig {
                dir: repository_sync_dir.into(),
                workers,
            }),
            stuck_after: seconds(stuck_after),
            supervised,
            max_requests: limit(max_requests),
            max_requests_jitter,
            max_worker_memory: limit(max_worker_memory),
            body_timeout: seconds_or_zero(body_timeout),
            max_body_bytes_in_flight,
            allow_unauthenticated_repository,
            metrics_port: (metrics_port > 0).then_some(metrics_port),
            metrics_endpoint,
            // The folder is made by the server before workers fork; without it (a
            // config built outside `serve`) the extension stays off.
            shared_memory: (system_shared_memory && !shared_memory_dir.is_empty()).then(|| {
                SharedMemoryConfig {
                    dir: shared_memory_dir.into(),
                    max_regions: shared_memory_max_regions,
                    max_bytes: shared_memory_max_bytes,
                }
            }),
        };
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

/// TLS on both ports when a certificate is given (and for mutual TLS a client CA).
/// `GET /v2`'s name, version and extensions: "" keeps inferwire's version, "*" its
/// extensions; otherwise extensions are a comma-separated list (empty: none).
fn identity(name: String, version: String, extensions: &str) -> ServerIdentity {
    let ours = ServerIdentity::default();
    ServerIdentity {
        name,
        version: if version.is_empty() {
            ours.version
        } else {
            version
        },
        extensions: if extensions.trim() == "*" {
            ours.extensions
        } else {
            list(extensions)
        },
    }
}

/// A comma-separated setting's items.
fn list(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .map(str::to_owned)
        .collect()
}

fn tls(cert: &str, key: &str, client_ca: &str) -> PyResult<Option<Arc<TlsConfig>>> {
    if cert.is_empty() {
        return Ok(None);
    }
    let ca = (!client_ca.is_empty()).then(|| PathBuf::from(client_ca));
    inferwire_server::tls::server_config(
        PathBuf::from(cert).as_path(),
        PathBuf::from(key).as_path(),
        ca.as_deref(),
    )
    .map(Some)
    .map_err(|e| PyValueError::new_err(format!("TLS: {e}")))
}

/// Auth is on when a token or user file is given; the signing key comes from Python
/// (made once before workers fork, or `auth_secret`).
fn auth(
    tokens: &str,
    users: &str,
    key: String,
    ttl: Duration,
    limits: LoginLimits,
) -> PyResult<Option<Arc<Auth>>> {
    let path = |v: &str| (!v.is_empty()).then(|| PathBuf::from(v));
    let (tokens, users) = (path(tokens), path(users));
    if tokens.is_none() && users.is_none() {
        return Ok(None);
    }
    Auth::load(tokens.as_deref(), users.as_deref(), key.into_bytes(), ttl)
        .map(|a| Some(Arc::new(a.with_login_limits(limits))))
        .map_err(PyValueError::new_err)
}
