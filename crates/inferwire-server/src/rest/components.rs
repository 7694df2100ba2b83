//! The routes of Seldon's other graph component types, as seldon-core's wrapper serves
//! them on every component: `/transform-input`, `/transform-output`, `/route` and
//! `/aggregate`, each by POST (a JSON body, or curl's `json=` form) or GET (`?json=`).
use http::{Method, Request};
use hyper::body::Incoming;
use inferwire_codec::media::Media;
use inferwire_codec::protocol::seldon::{json, proto, SeldonMessage};
use serde_json::Value;

use super::body::Reply;
use super::seldon::{encode_reply, percent_decode, read_body};
use crate::app::App;
use crate::error::{Kind, ServeError};
use crate::metrics::Encoding;
use crate::observe::Observed;
use crate::runner::Component;

/// `transform_input`, `transform_output` or `route` on one message.
pub async fn one(
    app: &App,
    req: Request<Incoming>,
    obs: &mut Observed,
    call: fn(SeldonMessage) -> Component,
) -> Result<Reply, ServeError> {
    let body = message_body(app, req).await?;
    let msg = json::decode_message(&body, &app.config.limits)?;
    obs.encoding = Encoding::of_payload(&msg.payload);
    if obs.id.is_empty() {
        obs.id.clone_from(&msg.meta.puid);
    }
    let deadline = app.deadline(obs.start, None);
    encode_reply(app.component(call(msg), deadline).await?)
}

/// `aggregate` over a SeldonMessageList: a JSON list of messages, or
/// `{"seldonMessages": [...]}`, as Seldon's wrapper takes both.
pub async fn aggregate(
    app: &App,
    req: Request<Incoming>,
    obs: &mut Observed,
) -> Result<Reply, ServeError> {
    let body = message_body(app, req).await?;
    let msgs = decode_list(&body, app)?;
    if let Some(first) = msgs.first() {
        obs.encoding = Encoding::of_payload(&first.payload);
        if obs.id.is_empty() {
            obs.id.clone_from(&first.meta.puid);
        }
    }
    let deadline = app.deadline(obs.start, None);
    encode_reply(app.component(Component::Aggregate(msgs), deadline).await?)
}

/// A SeldonMessageList in its JSON forms; every message decoded as a predict body is.
fn decode_list(body: &[u8], app: &App) -> Result<Vec<SeldonMessage>, ServeError> {
    let value: Value = serde_json::from_slice(body).map_err(|e| {
        ServeError::new(
            Kind::BadRequest,
            format!("aggregate: the body is not JSON: {e}"),
        )
    })?;
    let list = match value {
        Value::Array(list) => list,
        Value::Object(mut o) => match o.remove("seldonMessages") {
            Some(Value::Array(list)) => list,
            _ => return Err(not_a_list("an object without a `seldonMessages` list")),
        },
        other => return Err(not_a_list(kind_of(&other))),
    };
    if list.is_empty() {
        return Err(ServeError::new(
            Kind::BadRequest,
            "aggregate: `seldonMessages` is empty; a combiner needs at least one message",
        ));
    }
    list.into_iter()
        .enumerate()
        .map(|(i, m)| match m {
            Value::Object(o) => {
                proto::json_object_to_message(&o, &app.config.limits).map_err(|e| {
                    ServeError::new(
                        Kind::BadRequest,
                        format!("aggregate: seldonMessages[{i}]: {e}"),
                    )
                })
            }
            other => Err(ServeError::new(
                Kind::BadRequest,
                format!(
                    "aggregate: seldonMessages[{i}] is {}, not a SeldonMessage object",
                    kind_of(&other)
                ),
            )),
        })
        .collect()
}

#[cold]
fn not_a_list(what: &str) -> ServeError {
    ServeError::new(
        Kind::BadRequest,
        format!(
            "aggregate takes a SeldonMessageList: a JSON list of SeldonMessages or \
             {{\"seldonMessages\": [...]}}, not {what}"
        ),
    )
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// The JSON a request carries: the `json` query parameter of a GET, else the body (JSON,
/// or the `json=` field of a form, as for predict).
async fn message_body(app: &App, req: Request<Incoming>) -> Result<Vec<u8>, ServeError> {
    if req.method() == Method::GET {
        let query = req.uri().query().unwrap_or("");
        return match query.split('&').find_map(|kv| kv.strip_prefix("json=")) {
            Some(v) => Ok(percent_decode(v.as_bytes())),
            None => Err(ServeError::new(
                Kind::BadRequest,
                format!(
                    "GET on {} needs the message in the `json` query parameter (or POST it \
                     as the body)",
                    req.uri().path()
                ),
            )),
        };
    }
    match read_body(app, req).await? {
        (Media::Seldon, body) => Ok(body.to_vec()),
        (other, _) => Err(ServeError::new(
            Kind::UnsupportedMedia,
            format!(
                "Seldon's component routes take a JSON SeldonMessage, not {}",
                other.content_type()
            ),
        )),
    }
}
