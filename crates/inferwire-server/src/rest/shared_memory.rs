//! Triton's shared-memory extension over REST: `/v2/systemsharedmemory/...` (the
//! registry is `crate::shared_memory`), and `/v2/cudasharedmemory/...`, which this server
//! (no GPU support) answers as having no regions and refusing registrations.
use http::{Request, StatusCode};
use hyper::body::Incoming;
use serde::Deserialize;
use serde_json::{json, Value};

use super::body::{self, Reply};
use crate::app::App;
use crate::error::{Kind, ServeError};
use crate::shared_memory::Registration;

fn ok(v: &Value) -> Reply {
    body::json(StatusCode::OK, serde_json::to_vec(v).unwrap_or_default())
}

fn named(name: &str) -> Option<&str> {
    (!name.is_empty()).then_some(name)
}

/// `GET /v2/systemsharedmemory[/region/NAME]/status`.
pub async fn status(app: &App, name: &str) -> Result<Reply, ServeError> {
    let regions = app.shared_memory.status(named(name))?;
    Ok(ok(&serde_json::to_value(regions).unwrap_or_default()))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RegisterBody {
    key: String,
    #[serde(default)]
    offset: u64,
    byte_size: u64,
}

/// `POST /v2/systemsharedmemory/region/NAME/register` with `{"key", "offset", "byte_size"}`.
pub async fn register(app: &App, req: Request<Incoming>, name: &str) -> Result<Reply, ServeError> {
    let raw = body::read(app, req, 64 * 1024).await?;
    let b: RegisterBody = serde_json::from_slice(&raw).map_err(|e| {
        ServeError::new(
            Kind::BadRequest,
            format!("register: the body must be {{\"key\", \"offset\", \"byte_size\"}}: {e}"),
        )
    })?;
    app.shared_memory.register(Registration {
        name: name.to_owned(),
        key: b.key,
        offset: b.offset,
        byte_size: b.byte_size,
    })?;
    Ok(ok(&json!({})))
}

/// `POST /v2/systemsharedmemory[/region/NAME]/unregister`.
pub async fn unregister(app: &App, name: &str) -> Result<Reply, ServeError> {
    app.shared_memory.unregister(named(name))?;
    Ok(ok(&json!({})))
}

/// `GET /v2/cudasharedmemory[/region/NAME]/status`: none is ever registered.
pub async fn cuda_status(name: &str) -> Result<Reply, ServeError> {
    match named(name) {
        None => Ok(ok(&json!([]))),
        Some(_) => Err(crate::shared_memory::cuda_unsupported()),
    }
}

/// `POST /v2/cudasharedmemory/region/NAME/register`.
pub async fn cuda_register() -> Result<Reply, ServeError> {
    Err(crate::shared_memory::cuda_unsupported())
}

/// `POST /v2/cudasharedmemory[/region/NAME]/unregister`: nothing to unregister.
pub async fn cuda_unregister() -> Result<Reply, ServeError> {
    Ok(ok(&json!({})))
}
