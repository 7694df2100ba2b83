//! Seldon protocol handlers over REST.
use bytes::Bytes;
use http::{header, Request, StatusCode};
use hyper::body::Incoming;
use inferwire_codec::media::{self, Media};
use inferwire_codec::multipart;
use inferwire_codec::protocol::seldon::{
    form, json, reply::Output, Array, Meta, Payload, SeldonMessage,
};

use super::body::{self, Reply};
use crate::app::App;
use crate::error::{Kind, ServeError};
use crate::metrics::Encoding;
use crate::model::Prediction;
use crate::models::Served;
use crate::observe::Observed;

pub async fn predict(
    app: &App,
    req: Request<Incoming>,
    obs: &mut Observed,
    model: Option<&Served>,
) -> Result<Reply, ServeError> {
    let accept = header_str(&req, header::ACCEPT);
    let ingress = through_ingress(&req);
    let (media, body) = read_body(app, req).await?;
    if let Media::Multipart(boundary) = &media {
        // A form of the message's keys, as Seldon's wrapper takes (`-F 'data=...'`);
        // a lone file part stays an upload for the model.
        let parts = multipart::parse(&body, boundary)?;
        if form::is_seldon_form(&parts) {
            let msg = form::decode_form(parts, &app.config.limits)?;
            return predict_message(app, msg, accept, obs, model, ingress).await;
        }
    }
    if media != Media::Seldon {
        return predict_media(app, media, body, accept, obs, model).await;
    }
    // A SeldonMessage in its common shape takes the one-pass decoder; anything else is
    // told apart by its keys (an array layout, plain JSON) before the general decoder.
    let msg = match json::decode_fast(&body, &app.config.limits) {
        Some(m) => m?,
        None => match Media::refine_json(&body) {
            Media::Seldon => json::decode_general(&body, &app.config.limits)?,
            other => return predict_media(app, other, body, accept, obs, model).await,
        },
    };
    predict_message(app, msg, accept, obs, model, ingress).await
}

/// Whether the request came by Seldon's ingress path (`/seldon/NAMESPACE/DEPLOYMENT/...`),
/// where Seldon's executor stands in front of the model.
fn through_ingress<B>(req: &Request<B>) -> bool {
    req.uri().path().starts_with("/seldon/")
}

/// A published model's own route, `POST /api/NAME/VERSION`.
pub async fn predict_named(
    app: &App,
    req: Request<Incoming>,
    obs: &mut Observed,
    name: &str,
    version: &str,
) -> Result<Reply, ServeError> {
    let model = app.models.get_or_load(name, version).await?;
    obs.model = model.slot;
    predict(app, req, obs, Some(&model)).await
}

/// `GET` with the message in the `json` query parameter, as the Seldon wrapper accepts
/// (and as tools that only send GETs, like wrk, can call the model).
pub async fn predict_query(
    app: &App,
    req: Request<Incoming>,
    obs: &mut Observed,
) -> Result<Reply, ServeError> {
    let query = req.uri().query().unwrap_or("");
    let Some(value) = query.split('&').find_map(|kv| kv.strip_prefix("json=")) else {
        return Err(ServeError::new(
            Kind::BadRequest,
            "GET on predictions needs the SeldonMessage in the `json` query parameter \
             (or POST it as the body)",
        ));
    };
    let accept = header_str(&req, header::ACCEPT);
    let ingress = through_ingress(&req);
    let msg = json::decode_message(&percent_decode(value.as_bytes()), &app.config.limits)?;
    predict_message(app, msg, accept, obs, None, ingress).await
}

async fn predict_message(
    app: &App,
    mut msg: SeldonMessage,
    accept: Option<String>,
    obs: &mut Observed,
    model: Option<&Served>,
    ingress: bool,
) -> Result<Reply, ServeError> {
    // Seldon's executor gives every request a puid; its wrapper only echoes one.
    if ingress && msg.meta.puid.is_empty() {
        msg.meta.puid = crate::uuid::v4();
    }
    obs.encoding = Encoding::of_payload(&msg.payload);
    if obs.id.is_empty() {
        obs.id.clone_from(&msg.meta.puid);
    }
    let deadline = app.deadline(obs.start, None);
    let began = obs.clock();
    let timing = obs.call_timing();
    let call = crate::seldon::predict_on(app, model, msg, deadline, timing.clone());
    let reply = call.await?;
    obs.infer_part(began, timing.as_ref());
    // A Seldon client may ask for the array in another encoding (Accept:
    // application/x-npy); an Accept that fits nothing keeps the Seldon reply, as before.
    let wanted = match (&reply, accept) {
        (Prediction::Message(m), Some(a)) if a.trim() != "*/*" => {
            media::negotiate(Some(&a), &Media::Seldon, &m.payload)
                .ok()
                .filter(|media| *media != Media::Seldon)
        }
        _ => None,
    };
    match (reply, wanted) {
        (Prediction::Message(m), Some(media)) => encode_media(m.payload, &media),
        (reply, _) => encode_reply(reply),
    }
}

/// A body in one of the non-Seldon media: decoded into the payload the model gets, the
/// reply encoded in the request's media or the one Accept asks for.
async fn predict_media(
    app: &App,
    media: Media,
    body: Bytes,
    accept: Option<String>,
    obs: &mut Observed,
    model: Option<&Served>,
) -> Result<Reply, ServeError> {
    obs.encoding = Encoding::of_media(&media);
    let deadline = app.deadline(obs.start, None);
    let (bytes, target, _meta) = crate::seldon::predict_media(
        app,
        model,
        &media,
        body,
        Meta::default(),
        accept.as_deref(),
        deadline,
    )
    .await?;
    Ok(body::with_media(
        StatusCode::OK,
        bytes,
        target.content_type(),
    ))
}

fn encode_media(payload: Payload, media: &Media) -> Result<Reply, ServeError> {
    let bytes = media::encode(payload, media)?;
    Ok(body::with_media(
        StatusCode::OK,
        bytes,
        media.content_type(),
    ))
}

fn header_str(req: &Request<Incoming>, name: header::HeaderName) -> Option<String> {
    req.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

pub async fn feedback(app: &App, req: Request<Incoming>) -> Result<Reply, ServeError> {
    let body = json_body(app, req).await?;
    let f = json::decode_feedback(&body, &app.config.limits)?;
    let reply = crate::seldon::feedback(app, f).await?;
    encode_reply(Prediction::Message(reply))
}

pub async fn health_status(app: &App) -> Result<Reply, ServeError> {
    encode_reply(Prediction::Message(
        crate::seldon::health_status(app).await?,
    ))
}

/// `/seldon.json`: an OpenAPI document of the Seldon routes inferwire serves, where
/// Seldon's wrapper serves its own.
pub async fn openapi() -> Result<Reply, ServeError> {
    Ok(body::with_type(
        StatusCode::OK,
        Bytes::from_static(include_bytes!("seldon_openapi.json")),
        "application/json",
    ))
}

pub async fn metadata(app: &App) -> Result<Reply, ServeError> {
    let v = crate::seldon::metadata(app).await?;
    Ok(body::json(
        StatusCode::OK,
        serde_json::to_vec(&v).unwrap_or_default(),
    ))
}

pub(super) fn encode_reply(reply: Prediction) -> Result<Reply, ServeError> {
    let out = match reply {
        Prediction::Message(m) => {
            let mut out = Vec::with_capacity(256);
            json::encode_message(&m, &mut out)?;
            out
        }
        // predict_raw: the model's own value, as JSON; a `status.code` in it is the
        // HTTP status, as Seldon's wrapper answers (one that is no HTTP status: 200).
        Prediction::Raw(Output::Json(v)) => {
            let status = v
                .pointer("/status/code")
                .and_then(serde_json::Value::as_u64)
                .and_then(|c| u16::try_from(c).ok())
                .filter(|c| (200..=599).contains(c))
                .and_then(|c| StatusCode::from_u16(c).ok())
                .unwrap_or(StatusCode::OK);
            return Ok(body::json(
                status,
                serde_json::to_vec(&v).unwrap_or_default(),
            ));
        }
        Prediction::Raw(Output::Array(Array::Json(v))) => {
            serde_json::to_vec(&v).unwrap_or_default()
        }
        Prediction::Raw(Output::Array(Array::Numeric(t))) => {
            let mut out = Vec::new();
            inferwire_codec::json::write::tensor_nested(&t, &mut out);
            out
        }
        Prediction::Raw(Output::Str(s)) => serde_json::to_vec(&s).unwrap_or_default(),
        Prediction::Raw(Output::Bin(b)) => {
            return Ok(body::with_type(
                StatusCode::OK,
                b,
                "application/octet-stream",
            ));
        }
    };
    Ok(body::json(StatusCode::OK, out))
}

/// Reads a body and the media its Content-Type names. Like Seldon, a missing
/// Content-Type and curl's default form type are taken as JSON (with the `json=` form
/// field unwrapped).
pub(super) async fn read_body(
    app: &App,
    req: Request<Incoming>,
) -> Result<(Media, Bytes), ServeError> {
    let ctype = header_str(&req, header::CONTENT_TYPE);
    let media = Media::from_content_type(ctype.as_deref())?.ok_or_else(|| {
        ServeError::new(
            Kind::UnsupportedMedia,
            format!(
                "unsupported Content-Type {:?}: send {}",
                ctype.as_deref().unwrap_or_default(),
                media::ACCEPTED
            ),
        )
    })?;
    let form = ctype.as_deref().is_some_and(|c| {
        c.to_ascii_lowercase()
            .starts_with("application/x-www-form-urlencoded")
    });
    let body = body::read(app, req, app.config.max_body_bytes).await?;
    if form && body.starts_with(b"json=") {
        return Ok((media, Bytes::from(percent_decode(&body[5..]))));
    }
    Ok((media, body))
}

/// Reads a JSON body (feedback): only the JSON types are accepted.
async fn json_body(app: &App, req: Request<Incoming>) -> Result<Bytes, ServeError> {
    match read_body(app, req).await? {
        (Media::Seldon, body) => Ok(body),
        (other, _) => Err(ServeError::new(
            Kind::UnsupportedMedia,
            format!("feedback takes a JSON body, not {}", other.content_type()),
        )),
    }
}

/// A form-encoded value (`application/x-www-form-urlencoded`, as a query string too): up
/// to the next `&` (other fields follow), `+` a space, then %XX escapes decoded; a `%`
/// without two hex digits after it stays as it is.
pub(super) fn percent_decode(s: &[u8]) -> Vec<u8> {
    let value = s.split(|&b| b == b'&').next().unwrap_or_default();
    let spaced: Vec<u8> = value
        .iter()
        .map(|&b| if b == b'+' { b' ' } else { b })
        .collect();
    percent_encoding::percent_decode(&spaced).collect()
}
