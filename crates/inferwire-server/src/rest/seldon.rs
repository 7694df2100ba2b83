//! Seldon protocol handlers over REST.
use bytes::Bytes;
use http::{header, Request, StatusCode};
use hyper::body::Incoming;
use inferwire_codec::protocol::seldon::{json, reply::Output, Array};

use super::body::{self, Reply};
use crate::app::App;
use crate::error::{Kind, ServeError};
use crate::model::Reply as ModelReply;
use crate::observe::Observed;

pub async fn predict(
    app: &App,
    req: Request<Incoming>,
    obs: &mut Observed,
) -> Result<Reply, ServeError> {
    let body = json_body(app, req).await?;
    predict_body(app, &body, obs).await
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
    predict_body(app, &percent_decode(value.as_bytes()), obs).await
}

async fn predict_body(app: &App, body: &[u8], obs: &mut Observed) -> Result<Reply, ServeError> {
    let msg = json::decode_message(body, &app.config.limits)?;
    obs.encoding = msg.payload.kind();
    if obs.id.is_empty() {
        obs.id.clone_from(&msg.meta.puid);
    }
    let deadline = app.deadline(obs.start, None);
    let reply = app.predict(msg, deadline).await?;
    encode_reply(reply)
}

pub async fn feedback(app: &App, req: Request<Incoming>) -> Result<Reply, ServeError> {
    let body = json_body(app, req).await?;
    let f = json::decode_feedback(&body, &app.config.limits)?;
    let reply = app.feedback(f).await?;
    encode_reply(ModelReply::Message(reply))
}

pub async fn health_status(app: &App) -> Result<Reply, ServeError> {
    encode_reply(app.health_status().await?)
}

pub async fn metadata(app: &App) -> Result<Reply, ServeError> {
    let v = app.metadata().await?;
    Ok(body::json(
        StatusCode::OK,
        serde_json::to_vec(&v).unwrap_or_default(),
    ))
}

fn encode_reply(reply: ModelReply) -> Result<Reply, ServeError> {
    let out = match reply {
        ModelReply::Message(m) => {
            let mut out = Vec::with_capacity(256);
            json::encode_message(&m, &mut out)?;
            out
        }
        // predict_raw: the model's own value, as JSON.
        ModelReply::Raw(Output::Json(v)) | ModelReply::Raw(Output::Array(Array::Json(v))) => {
            serde_json::to_vec(&v).unwrap_or_default()
        }
        ModelReply::Raw(Output::Array(Array::Numeric(t))) => {
            let mut out = Vec::new();
            inferwire_codec::json::write::tensor_nested(&t, &mut out);
            out
        }
        ModelReply::Raw(Output::Str(s)) => serde_json::to_vec(&s).unwrap_or_default(),
        ModelReply::Raw(Output::Bin(b)) => {
            return Ok(body::with_type(
                StatusCode::OK,
                b,
                "application/octet-stream",
            ));
        }
        ModelReply::Metadata(v) => serde_json::to_vec(&v).unwrap_or_default(),
        ModelReply::Answer(_) | ModelReply::Infer(_) => {
            return Err(ServeError::new(
                Kind::Internal,
                "a batch or V2 answer reached the Seldon REST encoder",
            ))
        }
    };
    Ok(body::json(StatusCode::OK, out))
}

/// Reads a JSON body. Like Seldon, a missing Content-Type and curl's default form type
/// are accepted (with the `json=` form field unwrapped); other types are refused.
async fn json_body(app: &App, req: Request<Incoming>) -> Result<Bytes, ServeError> {
    let ctype = req
        .headers()
        .get(header::CONTENT_TYPE)
        .map(|v| v.to_str().unwrap_or("").to_ascii_lowercase());
    let media = ctype
        .as_deref()
        .map(|c| c.split(';').next().unwrap_or("").trim().to_owned());
    let form = media.as_deref() == Some("application/x-www-form-urlencoded");
    let ok = match media.as_deref() {
        None | Some("") | Some("application/json") | Some("text/json") | Some("text/plain") => true,
        Some(m) => form || m.ends_with("+json"),
    };
    if !ok {
        return Err(ServeError::new(
            Kind::BadRequest,
            format!(
                "unsupported Content-Type {:?}: send the SeldonMessage as application/json",
                ctype.unwrap_or_default()
            ),
        ));
    }
    let body = body::read(req, app.config.max_body_bytes).await?;
    if form && body.starts_with(b"json=") {
        return Ok(Bytes::from(percent_decode(&body[5..])));
    }
    Ok(body)
}

fn percent_decode(s: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        match s[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < s.len() => {
                let hex = std::str::from_utf8(&s[i + 1..i + 3]).ok();
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b'&' => break, // other form fields follow
            c => out.push(c),
        }
        i += 1;
    }
    out
}
