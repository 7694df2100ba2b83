//! The settings dict built by `inferwire.settings` → `ServerConfig`, crossing once.
use std::time::Duration;

use inferwire_codec::Limits;
use inferwire_server::ServerConfig;
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

pub fn from_dict(d: &Bound<'_, PyDict>) -> PyResult<ServerConfig> {
    let base = ServerConfig::default();
    let limits = Limits {
        max_elements: get_usize(d, "max_elements", base.limits.max_elements)?,
        max_depth: get_usize(d, "max_json_depth", base.limits.max_depth)?,
    };
    Ok(ServerConfig {
        // One model call at a time, as the Seldon wrapper with one gunicorn thread.
        max_concurrency: base.max_concurrency,
        host: get_str(d, "host", base.host)?,
        http_port: get_port(d, "http_port", base.http_port)?,
        grpc_port: get_port(d, "grpc_port", base.grpc_port)?,
        max_body_bytes: get_usize(d, "max_body_bytes", base.max_body_bytes)?,
        limits,
        model_name: get_str(d, "model_name", base.model_name)?,
        model_image: get_str(d, "model_image", base.model_image)?,
        max_queue: get_usize(d, "max_queue", base.max_queue)?,
        io_threads: get_usize(d, "io_threads", base.io_threads)?,
        grace_period: Duration::from_secs_f64(get_f64(
            d,
            "grace_period",
            base.grace_period.as_secs_f64(),
        )?),
    })
}
