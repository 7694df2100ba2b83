//! Publishing: `POST /api/v1.0/publish/NAME/VERSION` with a trained model file as the body
//! stores it in the model repository (validated and converted first) and serves it, on V2
//! and on `/api/NAME/VERSION`; `GET /api/v1.0/publish` lists published models and
//! versions; `DELETE /api/v1.0/publish/NAME/VERSION` removes a version.
use http::{Request, StatusCode};
use hyper::body::Incoming;
use serde_json::json;

use super::body::{self, Reply};
use crate::app::App;
use crate::error::{Kind, ServeError};

/// `GET /api/v1.0/publish`: the published models and their versions.
pub async fn list(app: &App) -> Result<Reply, ServeError> {
    Ok(ok(json!({"models": app.models.published().await?})))
}

/// `POST /api/v1.0/publish/NAME/VERSION`.
pub async fn publish(
    app: &App,
    req: Request<Incoming>,
    name: &str,
    version: &str,
) -> Result<Reply, ServeError> {
    let filename = filename(&req)?;
    let data = body::read(app, req, app.config.max_body_bytes).await?;
    if data.is_empty() {
        return Err(ServeError::new(
            Kind::BadRequest,
            "the body is empty: send the model file",
        ));
    }
    app.models.publish(name, version, data, filename).await?;
    Ok(body::json(
        StatusCode::CREATED,
        json!({
            "name": name,
            "version": version,
            "routes": [format!("/api/{name}/{version}"), format!("/v2/models/{name}/versions/{version}/infer")],
        })
        .to_string()
        .into_bytes(),
    ))
}

/// `DELETE /api/v1.0/publish/NAME/VERSION`.
pub async fn delete(app: &App, name: &str, version: &str) -> Result<Reply, ServeError> {
    app.models.delete_version(name, version).await?;
    Ok(ok(json!({"name": name, "deleted": version})))
}

/// Any other path under `/api/v1.0/publish/`.
pub async fn misplaced(path: &str) -> Result<Reply, ServeError> {
    Err(ServeError::new(
        Kind::NotFound,
        format!("{path}: publish to /api/v1.0/publish/NAME/VERSION"),
    ))
}

fn ok(v: serde_json::Value) -> Reply {
    body::json(StatusCode::OK, v.to_string().into_bytes())
}

/// The uploaded file's name, which says its format: `?filename=model.joblib`, else
/// `model.json` for a JSON body.
fn filename(req: &Request<Incoming>) -> Result<String, ServeError> {
    let query = req.uri().query().unwrap_or("");
    if let Some(f) = query.split('&').find_map(|kv| kv.strip_prefix("filename=")) {
        if !f.is_empty() && !f.contains(['/', '\\']) {
            return Ok(f.to_owned());
        }
    }
    let json = req
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|c| c.starts_with("application/json"));
    if json {
        return Ok("model.json".into());
    }
    Err(ServeError::new(
        Kind::BadRequest,
        "name the file so its format is known: ?filename=model.joblib (or .pkl, .json, \
         .ubj, .txt, .onnx)",
    ))
}
