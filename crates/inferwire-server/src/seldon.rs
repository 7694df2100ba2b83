//! Seldon's protocol rules that both transports share: a predict on the default model or
//! a published one, its payload given as a message or as a body in some media type,
//! feedback, the graph components' operations, health and metadata, and the reply's
//! `meta` as Seldon's wrapper completes it (the request's `puid`, this model in
//! `requestPath`). The transports (`rest::seldon`, `grpc::seldon`, the components' routes
//! and services) turn messages to and from their wire forms around these.
use std::time::Instant;

use bytes::Bytes;
use inferwire_codec::media::{self, Media};
use inferwire_codec::protocol::seldon::{Feedback, Meta, SeldonMessage};
use serde_json::Value;

use crate::app::App;
use crate::error::{Kind, ServeError};
use crate::model::Prediction;
use crate::models::Served;
use crate::runner::{CallTiming, Component};

/// Runs `predict` (or `predict_raw`) and completes the reply's `meta`.
pub async fn predict(
    app: &App,
    msg: SeldonMessage,
    deadline: Option<Instant>,
) -> Result<Prediction, ServeError> {
    predict_on(app, None, msg, deadline, None).await
}

/// `predict` on `model` (a published model's own route), or the default model; a traced
/// request's `timing` is told when the model call ran.
pub async fn predict_on(
    app: &App,
    model: Option<&Served>,
    msg: SeldonMessage,
    deadline: Option<Instant>,
    timing: Option<CallTiming>,
) -> Result<Prediction, ServeError> {
    let puid = msg.meta.puid.clone();
    // What earlier graph nodes added, which Seldon's wrapper passes on (usually empty).
    let earlier = (msg.meta.request_path.clone(), msg.meta.metrics.clone());
    let reply = match model {
        Some(m) => m.runner.predict_timed(msg, deadline, timing).await?,
        None => {
            let m = app.models.default_model()?;
            m.runner.predict_timed(msg, deadline, timing).await?
        }
    };
    Ok(match reply {
        Prediction::Message(mut m) => {
            let (request_path, metrics) = earlier;
            hide_own_metrics(app, &mut m.meta, 0);
            if !metrics.is_empty() {
                m.meta.metrics.splice(0..0, metrics);
            }
            // This model names itself unless it listed the nodes it ran (a graph); a
            // model on its own route has no image of its own.
            let (name, image) = match model {
                Some(served) => (served.name.as_str(), served.name.as_str()),
                None => (app.models.default_name(), app.config.model_image.as_str()),
            };
            complete_meta(&mut m.meta, puid, name, image);
            // The request's entries (earlier graph nodes) win on the same key, as in
            // Seldon's merge.
            m.meta.request_path.extend(request_path);
            Prediction::Message(m)
        }
        raw @ Prediction::Raw(_) => raw,
    })
}

/// A predict whose payload came as a body in `media` (REST, or a gRPC `binData`
/// with `x-content-type`): decoded, predicted on `model` (or the default), and the
/// reply encoded in the media `accept` picks (default: the request's). Returns the
/// encoded reply, its media, and the reply's meta.
pub async fn predict_media(
    app: &App,
    model: Option<&Served>,
    media: &Media,
    body: Bytes,
    meta: Meta,
    accept: Option<&str>,
    deadline: Option<Instant>,
) -> Result<(Bytes, Media, Meta), ServeError> {
    let (payload, default) = media::decode(media, body, &app.config.limits)?;
    let msg = SeldonMessage {
        status: None,
        meta,
        payload,
    };
    let (payload, meta) = match predict_on(app, model, msg, deadline, None).await? {
        Prediction::Message(m) => (m.payload, m.meta),
        Prediction::Raw(out) => (media::output_payload(out), Meta::default()),
    };
    let target = media::negotiate(accept, &default, &payload)
        .map_err(|e| ServeError::new(Kind::NotAcceptable, e))?;
    Ok((media::encode(payload, &target)?, target, meta))
}

pub async fn feedback(app: &App, f: Feedback) -> Result<SeldonMessage, ServeError> {
    let puid = f
        .request
        .as_ref()
        .map(|r| r.meta.puid.clone())
        .unwrap_or_default();
    let model = app.models.default_model()?;
    let mut m = model.runner.send_feedback(f, None).await?;
    hide_own_metrics(app, &mut m.meta, 0);
    complete_meta_default(app, &mut m.meta, puid);
    Ok(m)
}

/// A Seldon graph component's operation on the default model, its reply's meta
/// completed as predict's.
pub async fn component(
    app: &App,
    call: Component,
    deadline: Option<Instant>,
) -> Result<Prediction, ServeError> {
    let puid = call.puid();
    // What earlier nodes put in the request's meta and the wrapper passes on: a
    // transformer's request metrics (before its own) and requestPath, every combined
    // message's requestPath (their metrics the aggregate merges itself); a router's none.
    let (request_path, metrics) = match &call {
        Component::TransformInput(m) | Component::TransformOutput(m) => {
            (m.meta.request_path.clone(), m.meta.metrics.clone())
        }
        Component::Route(_) => Default::default(),
        Component::Aggregate(ms) => {
            let path = ms
                .iter()
                .flat_map(|m| m.meta.request_path.clone())
                .collect();
            (path, Vec::new())
        }
    };
    // An aggregate's reply starts with its messages' metrics (kept), then the model's.
    let merged = match &call {
        Component::Aggregate(ms) => ms.iter().map(|m| m.meta.metrics.len()).sum(),
        _ => 0,
    };
    let model = app.models.default_model()?;
    Ok(match model.runner.component(call, deadline).await? {
        Prediction::Message(mut m) => {
            hide_own_metrics(app, &mut m.meta, merged);
            if !metrics.is_empty() {
                m.meta.metrics.splice(0..0, metrics);
            }
            complete_meta_default(app, &mut m.meta, puid);
            m.meta.request_path.extend(request_path);
            Prediction::Message(m)
        }
        raw @ Prediction::Raw(_) => raw,
    })
}

pub async fn health_status(app: &App) -> Result<SeldonMessage, ServeError> {
    let model = app.models.default_model()?;
    let mut m = model.runner.health_status(None).await?;
    complete_meta_default(app, &mut m.meta, String::new());
    Ok(m)
}

pub async fn metadata(app: &App) -> Result<Value, ServeError> {
    app.models.default_model()?.runner.metadata(None).await
}

/// Without `include_metrics_in_client_response` the reply leaves out the model's own
/// metrics (after the first `kept`, which earlier nodes sent), as Seldon's wrapper
/// leaves them out; the runner has counted them on `/metrics` already.
fn hide_own_metrics(app: &App, meta: &mut Meta, kept: usize) {
    if !app.config.include_metrics_in_client_response {
        meta.metrics.truncate(kept);
    }
}

/// Seldon's reply meta: the request's `puid` echoed, and this model in `requestPath`
/// unless the model (a graph) listed the nodes it ran there.
fn complete_meta_default(app: &App, meta: &mut Meta, puid: String) {
    complete_meta(
        meta,
        puid,
        app.models.default_name(),
        &app.config.model_image,
    );
}

/// An unnamed unit (no PREDICTIVE_UNIT_ID or --model-name: the server passes no image)
/// adds no entry, as Seldon's wrapper adds none without PREDICTIVE_UNIT_ID.
fn complete_meta(meta: &mut Meta, puid: String, name: &str, image: &str) {
    if meta.puid.is_empty() {
        meta.puid = puid;
    }
    if meta.request_path.is_empty() && !image.is_empty() {
        meta.request_path
            .insert(name.to_string(), image.to_string());
    }
}
