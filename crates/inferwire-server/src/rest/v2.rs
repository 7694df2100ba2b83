//! The Open Inference Protocol (V2) over REST: health, server and model metadata, and
//! `infer` with JSON or the binary tensor extension. Errors are `{"error": "..."}`.
use http::{HeaderValue, Method, Request, StatusCode};
use hyper::body::Incoming;
use inferwire_codec::protocol::v2::json;
use serde_json::{json, Value};

use super::body::{self, Reply};
use crate::app::App;
use crate::error::{Kind, ServeError};
use crate::metrics;
use crate::models::Served;
use crate::observe::Observed;

const BINARY_HEADER: &str = "inference-header-content-length";

/// What a `/v2...` path names.
pub(super) enum Target<'a> {
    Server,
    Live,
    Ready,
    Model(&'a str, &'a str),
    ModelReady(&'a str, &'a str),
    Infer(&'a str, &'a str),
    RepositoryIndex,
    Load(&'a str),
    Unload(&'a str),
}

pub(super) fn parse(path: &str) -> Option<Target<'_>> {
    let rest = path.strip_prefix("/v2")?;
    match rest {
        "" | "/" => return Some(Target::Server),
        "/health/live" => return Some(Target::Live),
        "/health/ready" => return Some(Target::Ready),
        _ => {}
    }
    if rest == "/repository/index" {
        return Some(Target::RepositoryIndex);
    }
    if let Some(m) = rest.strip_prefix("/repository/models/") {
        return match m.split_once('/') {
            Some((name, "load")) if !name.is_empty() => Some(Target::Load(name)),
            Some((name, "unload")) if !name.is_empty() => Some(Target::Unload(name)),
            _ => None,
        };
    }
    let rest = rest.strip_prefix("/models/")?;
    let (name, mut tail) = rest.split_once('/').unwrap_or((rest, ""));
    let mut version = "";
    if let Some(v) = tail.strip_prefix("versions/") {
        let (v, t) = v.split_once('/').unwrap_or((v, ""));
        version = v;
        tail = t;
    }
    if name.is_empty() {
        return None;
    }
    match tail {
        "" => Some(Target::Model(name, version)),
        "ready" => Some(Target::ModelReady(name, version)),
        "infer" => Some(Target::Infer(name, version)),
        _ => None,
    }
}

pub async fn handle(app: &App, req: Request<Incoming>, path: &str, obs: &mut Observed) -> Reply {
    let method = req.method().clone();
    let target = parse(path);
    obs.route = match target {
        Some(Target::Infer(..)) => metrics::Route::Infer,
        Some(Target::Model(..)) | Some(Target::Server) => metrics::Route::Metadata,
        Some(Target::RepositoryIndex | Target::Load(_) | Target::Unload(_)) => {
            metrics::Route::Other
        }
        Some(_) => metrics::Route::Health,
        None => metrics::Route::Other,
    };
    let result = match (target, &method) {
        (Some(Target::Infer(name, version)), &Method::POST) => {
            infer(app, req, name, version, obs).await
        }
        (Some(Target::Infer(..)), _) => Err(not_allowed(&method, path)),
        (Some(Target::RepositoryIndex), &Method::POST) => repository_index(app, req).await,
        (Some(Target::Load(name)), &Method::POST) => {
            app.models.load(name).await.map(|()| ok(json!({})))
        }
        (Some(Target::Unload(name)), &Method::POST) => {
            app.models.unload(name).await.map(|()| ok(json!({})))
        }
        (Some(Target::RepositoryIndex | Target::Load(_) | Target::Unload(_)), _) => {
            Err(not_allowed(&method, path))
        }
        (Some(_), m) if m != Method::GET => Err(not_allowed(&method, path)),
        (Some(Target::Server), _) => Ok(ok(json!({
            "name": "inferwire",
            "version": env!("CARGO_PKG_VERSION"),
            "extensions": ["binary_tensor_data"],
        }))),
        (Some(Target::Live), _) => Ok(match app.not_live_because() {
            None => ok(json!({"live": true})),
            Some(why) => readiness(false, json!({"live": false, "error": why})),
        }),
        (Some(Target::Ready), _) => Ok(readiness(app.is_ready(), json!({"ready": app.is_ready()}))),
        (Some(Target::ModelReady(name, version)), _) => app.models.get(name, version).map(|_| {
            readiness(
                app.is_ready(),
                json!({"name": name, "ready": app.is_ready()}),
            )
        }),
        (Some(Target::Model(name, version)), _) => match app.models.get(name, version) {
            Ok(model) => model_metadata(&model).await.map(ok),
            Err(e) => Err(e),
        },
        (None, _) => Err(ServeError::new(
            Kind::NotFound,
            format!("no route for {method} {path}"),
        )),
    };
    result.unwrap_or_else(|e| error(&e))
}

/// `POST /v2/repository/index`, with `{"ready": true}` for the ready models only.
async fn repository_index(app: &App, req: Request<Incoming>) -> Result<Reply, ServeError> {
    let body = body::read(app, req, 64 * 1024).await?;
    let ready_only = if body.iter().all(u8::is_ascii_whitespace) {
        false
    } else {
        let v: Value = serde_json::from_slice(&body)
            .map_err(|e| ServeError::new(Kind::BadRequest, format!("invalid JSON: {e}")))?;
        match v.get("ready") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(other) => {
                return Err(ServeError::new(
                    Kind::BadRequest,
                    format!("ready: must be true or false, got {other}"),
                ))
            }
        }
    };
    let index = app.models.index().await?;
    Ok(ok(Value::Array(
        index
            .into_iter()
            .filter(|m| !ready_only || m["state"] == "READY")
            .collect(),
    )))
}

fn not_allowed(method: &Method, path: &str) -> ServeError {
    ServeError::new(
        Kind::MethodNotAllowed,
        format!("{method} is not allowed on {path}"),
    )
}

fn ok(v: Value) -> Reply {
    body::json(StatusCode::OK, serde_json::to_vec(&v).unwrap_or_default())
}

fn readiness(ready: bool, v: Value) -> Reply {
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    body::json(status, serde_json::to_vec(&v).unwrap_or_default())
}

/// V2's error body.
pub fn error(e: &ServeError) -> Reply {
    let status = StatusCode::from_u16(e.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut r = body::json(
        status,
        serde_json::to_vec(&json!({"error": e.message})).unwrap_or_default(),
    );
    body::for_kind(&mut r, e.kind);
    r
}

/// The model's metadata in V2's shape: the model's `init_metadata()` supplies versions,
/// platform, inputs and outputs; name and version come from the server.
pub async fn model_metadata(model: &Served) -> Result<Value, ServeError> {
    let meta = model.runner.metadata(None).await?;
    let tensors = |key: &str| -> Vec<Value> {
        meta.get(key)
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .map(|t| {
                        json!({
                            "name": t.get("name").and_then(Value::as_str).unwrap_or_default(),
                            "datatype": t.get("datatype").and_then(Value::as_str).unwrap_or("BYTES"),
                            "shape": t.get("shape").cloned().unwrap_or_else(|| json!([-1])),
                        })
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let versions: Vec<Value> = if model.version.is_empty() {
        meta.get("versions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    } else {
        vec![Value::from(model.version.clone())]
    };
    Ok(json!({
        "name": model.name,
        "versions": versions,
        "platform": meta.get("platform").and_then(Value::as_str).unwrap_or("inferwire"),
        "inputs": tensors("inputs"),
        "outputs": tensors("outputs"),
    }))
}

async fn infer(
    app: &App,
    req: Request<Incoming>,
    name: &str,
    version: &str,
    obs: &mut Observed,
) -> Result<Reply, ServeError> {
    let model = app.models.get(name, version)?;
    obs.model = model.slot;
    let header_len = match req.headers().get(BINARY_HEADER) {
        None => None,
        Some(v) => Some(
            v.to_str()
                .ok()
                .and_then(|s| s.trim().parse::<usize>().ok())
                .ok_or_else(|| {
                    ServeError::new(
                        Kind::BadRequest,
                        format!("Inference-Header-Content-Length: {v:?} is not a byte count"),
                    )
                })?,
        ),
    };
    obs.encoding = if header_len.is_some() {
        "binary"
    } else {
        "json"
    };
    let body = body::read(app, req, app.config.max_body_bytes).await?;
    let request = json::decode_request(body, header_len, &app.config.limits)?;
    if obs.id.is_empty() {
        obs.id.clone_from(&request.id);
    }
    let binary = request.binary_outputs();
    let deadline = app.deadline(obs.start, None);
    let response = app.infer(&model, request, deadline).await?;
    let mut out = Vec::with_capacity(256);
    let blobs = json::encode_response(&response, |name| binary.wants(name), &mut out)?;
    if blobs.is_empty() {
        return Ok(body::json(StatusCode::OK, out));
    }
    let json_len = out.len();
    for b in blobs {
        out.extend_from_slice(&b);
    }
    let mut r = body::with_type(StatusCode::OK, out.into(), "application/octet-stream");
    r.headers_mut().insert(
        BINARY_HEADER,
        HeaderValue::from_str(&json_len.to_string()).unwrap_or(HeaderValue::from_static("0")),
    );
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        assert!(matches!(parse("/v2"), Some(Target::Server)));
        assert!(matches!(parse("/v2/health/ready"), Some(Target::Ready)));
        assert!(matches!(
            parse("/v2/models/m"),
            Some(Target::Model("m", ""))
        ));
        assert!(matches!(
            parse("/v2/models/m/versions/3/infer"),
            Some(Target::Infer("m", "3"))
        ));
        assert!(matches!(
            parse("/v2/models/m/ready"),
            Some(Target::ModelReady("m", ""))
        ));
        assert!(parse("/v2/models//infer").is_none());
        assert!(parse("/v2/models/m/other").is_none());
        assert!(matches!(
            parse("/v2/repository/index"),
            Some(Target::RepositoryIndex)
        ));
        assert!(matches!(
            parse("/v2/repository/models/m/load"),
            Some(Target::Load("m"))
        ));
        assert!(matches!(
            parse("/v2/repository/models/m/unload"),
            Some(Target::Unload("m"))
        ));
        assert!(parse("/v2/repository/models//load").is_none());
    }
}
