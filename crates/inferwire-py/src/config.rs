//! The settings dict built by `inferwire.settings` → `ServerConfig`, crossing once.
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use inferwire_codec::Limits;
use inferwire_server::auth::Auth;
use inferwire_server::login_guard::LoginLimits;
use inferwire_server::runner::RunnerConfig;
use inferwire_server::{AccessLog, ModelSpec, ServerConfig};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

macro_rules! getter {
    ($name:ident, $t:ty) => {
        fn $name(d: &Bound<'_, PyDict>, key: &str, default: $t) -> PyResult<$t> {
            match d.get_item(key)? {
                Some(v) if !v.is_none() => v
                    .extract::<$t>()
                    .map_err(|e| PyValueError::new_err(format!("setting {key}: {e}"))),
                _ => Ok(default),
            }
        }
    };
}
getter!(get_str, String);
getter!(get_port, u16);
getter!(get_usize, usize);
getter!(get_f64, f64);
getter!(get_bool, bool);
getter!(get_u32, u32);

/// `max_concurrency`; 0 means enough to keep every model thread's batch full.
fn admitted(d: &Bound<'_, PyDict>, model_threads: usize, max_batch_size: usize) -> PyResult<usize> {
    Ok(match get_usize(d, "max_concurrency", 0)? {
        0 => model_threads.max(1) * max_batch_size.max(1),
        n => n,
    })
}

pub fn from_dict(d: &Bound<'_, PyDict>) -> PyResult<ServerConfig> {
    let base = ServerConfig::default();
    let limits = Limits {
        max_elements: get_usize(d, "max_elements", base.limits.max_elements)?,
        max_depth: get_usize(d, "max_json_depth", base.limits.max_depth)?,
    };
    let model_threads = get_usize(d, "model_threads", base.model_threads)?;
    let max_batch_size = get_usize(d, "max_batch_size", base.max_batch_size)?;
    let seconds = |key: &str| -> PyResult<Option<Duration>> {
        let v = get_f64(d, key, 0.0)?;
        Ok((v > 0.0).then(|| Duration::from_secs_f64(v)))
    };
    let access_log = match get_str(d, "access_log", "off".into())?.as_str() {
        "off" => AccessLog::Off,
        "text" => AccessLog::Text,
        "json" => AccessLog::Json,
        other => {
            return Err(PyValueError::new_err(format!(
                "setting access_log: {other:?} is not off, text or json"
            )))
        }
    };
    Ok(ServerConfig {
        max_concurrency: admitted(d, model_threads, max_batch_size)?,
        model_threads,
        max_batch_size,
        max_batch_delay: seconds("max_batch_delay")?.unwrap_or(Duration::ZERO),
        timeout: seconds("timeout")?,
        reuse_port: get_usize(d, "workers", 1)? > 1,
        // One worker is supervised too unless `supervisor` is off (see inferwire.workers).
        supervised: get_usize(d, "workers", 1)? > 1
            || get_str(d, "supervisor", "on".into())? != "off",
        stuck_after: match seconds("stuck_after")? {
            Some(d) => Some(d),
            None if d.contains("stuck_after")? => None,
            None => base.stuck_after,
        },
        max_connections: get_usize(d, "max_connections", base.max_connections)?,
        header_timeout: seconds("header_timeout")?.unwrap_or(base.header_timeout),
        max_streams: u32::try_from(get_usize(d, "max_streams", base.max_streams as usize)?)
            .map_err(|_| PyValueError::new_err("setting max_streams: too large"))?,
        repository_sync: match get_str(d, "repository_sync_dir", String::new())? {
            dir if dir.is_empty() => None,
            dir => Some(inferwire_server::repository_sync::SyncConfig {
                dir: dir.into(),
                workers: get_usize(d, "workers", 1)?,
            }),
        },
        access_log,
        host: get_str(d, "host", base.host)?,
        http_port: get_port(d, "http_port", base.http_port)?,
        grpc_port: get_port(d, "grpc_port", base.grpc_port)?,
        max_body_bytes: get_usize(d, "max_body_bytes", base.max_body_bytes)?,
        limits,
        model_name: get_str(d, "model_name", base.model_name)?,
        model_image: get_str(d, "model_image", base.model_image)?,
        model_version: get_str(d, "model_version", base.model_version)?,
        max_queue: get_usize(d, "max_queue", base.max_queue)?,
        io_threads: get_usize(d, "io_threads", base.io_threads)?,
        grace_period: Duration::from_secs_f64(get_f64(
            d,
            "grace_period",
            base.grace_period.as_secs_f64(),
        )?),
        auth: auth(d)?,
        tls: tls(d)?,
        max_requests: match get_usize(d, "max_requests", 0)? {
            0 => None,
            n => Some(n as u64),
        },
        max_requests_jitter: get_usize(d, "max_requests_jitter", 0)? as u64,
        max_worker_memory: match get_usize(d, "max_worker_memory", 0)? {
            0 => None,
            n => Some(n as u64),
        },
        body_timeout: seconds("body_timeout")?.unwrap_or(base.body_timeout),
        max_body_bytes_in_flight: get_usize(
            d,
            "max_body_bytes_in_flight",
            base.max_body_bytes_in_flight,
        )?,
        allow_unauthenticated_repository: get_bool(d, "allow_unauthenticated_repository", false)?,
    })
}

/// TLS on both ports when a certificate is given (`tls_cert`, `tls_key`, and for mutual
/// TLS `tls_client_ca`).
fn tls(d: &Bound<'_, PyDict>) -> PyResult<Option<Arc<inferwire_server::tls::ServerConfig>>> {
    let cert = get_str(d, "tls_cert", String::new())?;
    if cert.is_empty() {
        return Ok(None);
    }
    let key = get_str(d, "tls_key", String::new())?;
    let ca = get_str(d, "tls_client_ca", String::new())?;
    inferwire_server::tls::server_config(
        PathBuf::from(cert).as_path(),
        PathBuf::from(key).as_path(),
        (!ca.is_empty()).then(|| PathBuf::from(ca)).as_deref(),
    )
    .map(Some)
    .map_err(|e| PyValueError::new_err(format!("TLS: {e}")))
}

/// Auth is on when a token or user file is given; the signing key comes from Python
/// (made once before workers fork, or `auth_secret`).
fn auth(d: &Bound<'_, PyDict>) -> PyResult<Option<Arc<Auth>>> {
    let path = |key: &str| -> PyResult<Option<PathBuf>> {
        let v = get_str(d, key, String::new())?;
        Ok((!v.is_empty()).then(|| PathBuf::from(v)))
    };
    let (tokens, users) = (path("auth_tokens")?, path("auth_users")?);
    if tokens.is_none() && users.is_none() {
        return Ok(None);
    }
    let key = get_str(d, "auth_key", String::new())?.into_bytes();
    let ttl = Duration::from_secs_f64(get_f64(d, "auth_token_ttl", 3600.0)?);
    let base = LoginLimits::default();
    let limits = LoginLimits {
        user_failures: get_u32(d, "login_user_failures", base.user_failures)?,
        client_failures: get_u32(d, "login_client_failures", base.client_failures)?,
        window: Duration::from_secs_f64(get_f64(d, "login_window", base.window.as_secs_f64())?),
        ..base
    };
    Auth::load(tokens.as_deref(), users.as_deref(), key, ttl)
        .map(|a| Some(Arc::new(a.with_login_limits(limits))))
        .map_err(PyValueError::new_err)
}

/// A repository model's settings (`inferwire.repository.ModelSettings.runner()` plus name
/// and version) → how it is served.
pub fn spec_from_dict(d: &Bound<'_, PyDict>) -> PyResult<ModelSpec> {
    let model_threads = get_usize(d, "model_threads", 1)?;
    let max_batch_size = get_usize(d, "max_batch_size", 1)?;
    Ok(ModelSpec {
        name: get_str(d, "name", String::new())?,
        version: get_str(d, "version", String::new())?,
        runner: RunnerConfig {
            max_concurrency: admitted(d, model_threads, max_batch_size)?,
            max_queue: get_usize(d, "max_queue", 1024)?,
            model_threads,
            max_batch_size,
            max_batch_delay: Duration::from_secs_f64(get_f64(d, "max_batch_delay", 0.0)?),
        },
    })
}
