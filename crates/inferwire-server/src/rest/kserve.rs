//! KServe's protocol as its TorchServe image answers it (`inferwire torchserve` with a
//! KServe service envelope): the v1 routes of the image's KServe wrapper (`GET
//! /v1/models`, `GET /v1/models/{name}`, `POST /v1/models/{name}:predict` and
//! `:explain`) and, in this dialect, V2's infer route. TorchServe's frontend hands such a
//! request's body to the handler as it came, where the envelope
//! (`inferwire/torchserve/envelope.py`) unwraps it and wraps the reply, so these are
//! TorchServe's predictions route under KServe's paths: the same token check, batching
//! and errors, in KServe's `{"error": ...}` shape on the wrapper's port.
use http::{Method, Request, StatusCode};
use hyper::body::Incoming;
use serde_json::{json, Value};

use super::body::{self, Reply};
use super::torchserve;
use crate::app::App;
use crate::error::{Kind, ServeError};
use crate::observe::Observed;

/// `GET /v1/models`: the names of the models served (KServe's model list).
pub async fn list(app: &App) -> Result<Reply, ServeError> {
    let names = crate::torchserve_management::ready_names(app).await?;
    Ok(json_reply(StatusCode::OK, &json!({ "models": names })))
}

/// `/v1/models/{name}`: GET is the model's readiness; POST with `:predict` or
/// `:explain` after the name (one path segment, as KServe writes it) its prediction.
pub async fn v1(
    app: &App,
    req: Request<Incoming>,
    segment: &str,
    obs: &mut Observed,
) -> Result<Reply, ServeError> {
    let verb = segment.rsplit_once(':');
    match (req.method(), verb) {
        (&Method::GET, None) => {
            app.models.servable(segment, "").await?;
            let ready = app.is_ready();
            let status = if ready {
                StatusCode::OK
            } else {
                StatusCode::SERVICE_UNAVAILABLE
            };
            Ok(json_reply(status, &json!({"name": segment, "ready": ready})))
        }
        (&Method::POST, Some((name, "predict"))) => {
            torchserve::predict(app, req, name, "", obs, false)
                .await
                .map_err(handler_said)
        }
        (&Method::POST, Some((name, "explain"))) => {
            torchserve::predict(app, req, name, "", obs, true)
                .await
                .map_err(handler_said)
        }
        (&Method::POST, _) => Err(ServeError::new(
            Kind::NotFound,
            format!("POST /v1/models/{segment}: want /v1/models/NAME:predict or NAME:explain"),
        )),
        (method, _) => Err(ServeError::new(
            Kind::MethodNotAllowed,
            format!("{method} is not allowed on /v1/models/{segment}: GET reads the model's readiness, POST NAME:predict predicts"),
        )),
    }
}

/// `POST /v2/models/{name}[/versions/{version}]/infer` in TorchServe's dialect: the body
/// to the handler, as TorchServe's frontend hands it over (the kservev2 envelope reads
/// its `inputs`).
pub async fn v2_infer(
    app: &App,
    req: Request<Incoming>,
    name: &str,
    version: &str,
    obs: &mut Observed,
) -> Result<Reply, ServeError> {
    torchserve::predict(app, req, name, version, obs, false)
        .await
        .map_err(handler_said)
}

/// A handler's failure with what it said (the `message` of TorchServe's error body, the
/// envelope's words for a refused request) as the error's message, which KServe's
/// `{"error": ...}` shows; its status and TorchServe's body stay.
pub(crate) fn handler_said(mut e: ServeError) -> ServeError {
    let said = e.model_reply.as_ref().and_then(|r| {
        let body: Value = serde_json::from_str(r.body.as_deref()?).ok()?;
        body["message"].as_str().map(str::to_owned)
    });
    if let Some(message) = said {
        e.message = message;
    }
    e
}

fn json_reply(status: StatusCode, v: &Value) -> Reply {
    body::json(status, serde_json::to_vec(v).unwrap_or_default())
}
