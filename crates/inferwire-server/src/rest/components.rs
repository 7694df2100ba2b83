//! The routes of Seldon's other graph component types, as seldon-core's wrapper serves
//! them on every component: `/transform-input`, `/transform-output`, `/route` and
//! `/aggregate`, each by POST (a JSON body, or curl's `json=` form) or GET (`?json=`).
use http::{Method, Request};
use hyper::body::Incoming;
use inferwire_codec::media::Media;
use inferwire_codec::protocol::seldon::{json, SeldonMessage};
use inferwire_codec::Limits;
use serde::Deserialize;
use serde_json::value::RawValue;

use super::body::Reply;
use super::seldon::{encode_reply, percent_decode, read_body};
use crate::app::App;
use crate::error::{Kind, ServeError};
use crate::metrics::Encoding;
use crate::observe::Observed;
use crate::runner::{Component, MAX_AGGREGATE_MESSAGES};

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
    encode_reply(crate::seldon::component(app, call(msg), deadline).await?)
}

/// `GET /send-feedback?json=...`: the Feedback in the query, as Seldon's wrapper takes it.
pub async fn feedback_query(app: &App, req: Request<Incoming>) -> Result<Reply, ServeError> {
    let body = message_body(app, req).await?;
    let f = json::decode_feedback(&body, &app.config.limits)?;
    encode_reply(crate::model::Prediction::Message(
        crate::seldon::feedback(app, f).await?,
    ))
}

/// `aggregate` over a SeldonMessageList: a JSON list of messages, or
/// `{"seldonMessages": [...]}`, as Seldon's wrapper takes both.
pub async fn aggregate(
    app: &App,
    req: Request<Incoming>,
    obs: &mut Observed,
) -> Result<Reply, ServeError> {
    let body = message_body(app, req).await?;
    let msgs = decode_list(&body, &app.config.limits)?;
    if let Some(first) = msgs.first() {
        obs.encoding = Encoding::of_payload(&first.payload);
        if obs.id.is_empty() {
            obs.id.clone_from(&first.meta.puid);
        }
    }
    let deadline = app.deadline(obs.start, None);
    encode_reply(crate::seldon::component(app, Component::Aggregate(msgs), deadline).await?)
}

/// A SeldonMessageList in its JSON forms; every message decoded as a predict body is,
/// from its own slice of the body (no generic JSON tree of the whole list is built, so
/// the decoders' limits bound it as they bound a predict).
fn decode_list(body: &[u8], limits: &Limits) -> Result<Vec<SeldonMessage>, ServeError> {
    let bad = |e: serde_json::Error| not_a_list(&e.to_string());
    let list: Vec<&RawValue> = match body.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'[') => serde_json::from_slice::<Capped<'_>>(body).map_err(bad)?.0,
        Some(b'{') => {
            let wrapped: Wrapped<'_> = serde_json::from_slice(body).map_err(bad)?;
            wrapped
                .seldon_messages
                .ok_or_else(|| not_a_list("an object without a `seldonMessages` list"))?
                .0
        }
        Some(_) => {
            let kind = serde_json::from_slice::<&RawValue>(body)
                .map(|v| kind_of(v.get()))
                .unwrap_or("text that is not JSON");
            return Err(not_a_list(kind));
        }
        None => return Err(not_a_list("an empty body")),
    };
    if list.is_empty() {
        return Err(ServeError::new(
            Kind::BadRequest,
            "aggregate: `seldonMessages` is empty; a combiner needs at least one message",
        ));
    }
    list.into_iter()
        .enumerate()
        .map(|(i, m)| {
            let text = m.get();
            if !text.starts_with('{') {
                return Err(ServeError::new(
                    Kind::BadRequest,
                    format!(
                        "aggregate: seldonMessages[{i}] is {}, not a SeldonMessage object",
                        kind_of(text)
                    ),
                ));
            }
            json::decode_message(text.as_bytes(), limits).map_err(|e| {
                ServeError::new(
                    Kind::BadRequest,
                    format!("aggregate: seldonMessages[{i}]: {e}"),
                )
            })
        })
        .collect()
}

/// `{"seldonMessages": [...]}`; other keys are ignored, as Seldon ignores them.
#[derive(Deserialize)]
struct Wrapped<'a> {
    #[serde(rename = "seldonMessages", borrow, default)]
    seldon_messages: Option<Capped<'a>>,
}

/// The list's messages as slices of the body, refused past `MAX_AGGREGATE_MESSAGES`
/// while reading (before any is decoded or the list grows).
struct Capped<'a>(Vec<&'a RawValue>);

impl<'de: 'a, 'a> Deserialize<'de> for Capped<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Seq;
        impl<'de> serde::de::Visitor<'de> for Seq {
            type Value = Vec<&'de RawValue>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a list of SeldonMessages")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(m) = seq.next_element::<&'de RawValue>()? {
                    if out.len() == MAX_AGGREGATE_MESSAGES {
                        return Err(serde::de::Error::custom(format!(
                            "more than {MAX_AGGREGATE_MESSAGES} messages"
                        )));
                    }
                    out.push(m);
                }
                Ok(out)
            }
        }
        d.deserialize_seq(Seq).map(Capped)
    }
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

/// What a JSON value is, from its first character.
fn kind_of(text: &str) -> &'static str {
    match text.as_bytes().first() {
        Some(b'n') => "null",
        Some(b't' | b'f') => "a boolean",
        Some(b'"') => "a string",
        Some(b'[') => "a list",
        Some(b'{') => "an object",
        _ => "a number",
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

#[cfg(test)]
mod tests {
    use super::*;

    fn said(body: &str) -> String {
        decode_list(body.as_bytes(), &Limits::default())
            .unwrap_err()
            .message
    }

    #[test]
    fn both_json_forms() {
        let one = r#"{"data": {"ndarray": [[1]]}}"#;
        for body in [
            format!("[{one}, {one}]"),
            format!(r#" {{"meta": {{}}, "seldonMessages": [{one}, {one}]}}"#),
        ] {
            assert_eq!(
                decode_list(body.as_bytes(), &Limits::default())
                    .unwrap()
                    .len(),
                2
            );
        }
    }

    #[test]
    fn bad_lists_say_what_they_got() {
        assert!(said("5").ends_with("not a number"));
        assert!(said(r#""x""#).ends_with("not a string"));
        assert!(said("").ends_with("not an empty body"));
        assert!(said("{nope").contains("not key must be a string"));
        assert!(said(r#"{"data": {}}"#).contains("without a `seldonMessages` list"));
        assert!(said(r#"{"seldonMessages": 3}"#).contains("invalid type: integer"));
        assert!(said("[]").contains("is empty"));
        assert!(said(r#"[{"data": {"ndarray": [[1]]}}, null]"#)
            .contains("seldonMessages[1] is null, not a SeldonMessage"));
        assert!(
            said(r#"[{"data": {"ndarray": "x"}}]"#).starts_with("aggregate: seldonMessages[0]: ")
        );
    }
}
