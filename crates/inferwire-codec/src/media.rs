//! The media types a predict body can have besides a SeldonMessage, chosen by
//! Content-Type on the way in and by Accept on the way out, and the same bytes carried
//! in a gRPC `binData` (see the server's `grpc::seldon`).
use bytes::Bytes;
use serde_json::Value;

use crate::arrays::json::{self as array_json, Layout, Shape};
use crate::arrays::{msgpack, npy};
use crate::error::{CodecError, Result};
use crate::json::write;
use crate::limits::Limits;
use crate::multipart;
use crate::protocol::seldon::reply::Output;
use crate::protocol::seldon::{Array, Encoding, Payload};
use crate::tensor::Tensor;

/// A body encoding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Media {
    /// A SeldonMessage in JSON (the server's own encoder writes it).
    Seldon,
    /// Any other JSON object, handed to the model as a dict; the reply is the model's
    /// result as JSON.
    PlainJson,
    /// `{"data": [...], "dtype"}` or `{"buffer", "dtype", "shape"}`.
    ArrayJson(Layout),
    /// `application/x-npy`.
    Npy,
    /// `application/msgpack` in msgpack-numpy's layout.
    Msgpack,
    /// Opaque bytes (`application/octet-stream`, `image/*`, ...) with their media type.
    Bytes(String),
    /// `multipart/form-data` with this boundary (requests only: the reply is the file
    /// part's type).
    Multipart(String),
    /// `text/plain` (replies only: a model's string).
    Text,
}

impl Media {
    /// The label the metrics and access log use.
    pub fn name(&self) -> &'static str {
        match self {
            Media::Seldon => "seldon-json",
            Media::PlainJson => "plain-json",
            Media::ArrayJson(l) => l.name(),
            Media::Npy => "npy",
            Media::Msgpack => "msgpack",
            Media::Bytes(_) => "bytes",
            Media::Multipart(_) => "multipart",
            Media::Text => "text",
        }
    }

    /// The Content-Type of a reply in this media.
    pub fn content_type(&self) -> &str {
        match self {
            Media::Seldon | Media::PlainJson | Media::ArrayJson(_) => "application/json",
            Media::Npy => "application/x-npy",
            Media::Msgpack => "application/msgpack",
            Media::Bytes(m) => m,
            Media::Multipart(_) => "multipart/form-data",
            Media::Text => "text/plain; charset=utf-8",
        }
    }

    /// The request media a Content-Type names. JSON comes back as `Seldon` until
    /// `refine_json` has looked at the body. `None`: a type that is not accepted.
    pub fn from_content_type(content_type: Option<&str>) -> Result<Option<Media>> {
        let full = content_type.unwrap_or("").trim();
        let essence = essence(full);
        Ok(Some(match essence.as_str() {
            ""
            | "application/json"
            | "text/json"
            | "text/plain"
            | "application/x-www-form-urlencoded" => Media::Seldon,
            e if e.ends_with("+json") => Media::Seldon,
            "application/x-npy" | "application/npy" => Media::Npy,
            "application/msgpack" | "application/x-msgpack" | "application/vnd.msgpack" => {
                Media::Msgpack
            }
            "multipart/form-data" => Media::Multipart(multipart::boundary(full)?),
            e if is_bytes_type(e) => Media::Bytes(e.to_owned()),
            _ => return Ok(None),
        }))
    }

    /// A JSON body's media, from its keys (`arrays::json::classify`).
    pub fn refine_json(body: &[u8]) -> Media {
        match array_json::classify(body) {
            Shape::Seldon => Media::Seldon,
            Shape::Array(l) => Media::ArrayJson(l),
            Shape::Plain => Media::PlainJson,
        }
    }
}

/// The types a predict route accepts, for error messages.
pub const ACCEPTED: &str = "application/json (a SeldonMessage, a plain JSON object, or an \
     array as {\"data\": [...], \"dtype\"} or {\"buffer\", \"dtype\", \"shape\"}), \
     application/x-npy, application/msgpack (msgpack-numpy), application/octet-stream, \
     image/*, audio/*, video/*, multipart/form-data";

fn is_bytes_type(essence: &str) -> bool {
    essence == "application/octet-stream"
        || ["image/", "audio/", "video/"]
            .iter()
            .any(|p| essence.starts_with(p) && essence.len() > p.len())
}

/// `type/subtype`, lowercased, without parameters.
fn essence(media: &str) -> String {
    media
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// Decodes a non-Seldon body into the payload the model gets: arrays as a numeric
/// `tensor` (the model gets a numpy array), bytes as `binData`, plain JSON as `jsonData`.
/// For multipart, the one file part; the reply's default media is returned beside.
pub fn decode(media: &Media, body: Bytes, limits: &Limits) -> Result<(Payload, Media)> {
    let array = |t: Tensor| Payload::Data {
        names: Vec::new(),
        encoding: Encoding::Tensor,
        array: Array::Numeric(t),
    };
    Ok(match media {
        Media::Npy => (array(npy::decode(&body, limits)?), Media::Npy),
        Media::Msgpack => (array(msgpack::decode(&body, limits)?), Media::Msgpack),
        Media::ArrayJson(l) => (
            array(array_json::decode(&body, *l, limits)?),
            Media::ArrayJson(*l),
        ),
        Media::PlainJson => {
            let v: Value = crate::json::deserialize(&body)?;
            (Payload::Json(v), Media::PlainJson)
        }
        Media::Bytes(m) => (Payload::Bin(body), Media::Bytes(m.clone())),
        Media::Multipart(boundary) => {
            let parts = multipart::parse(&body, boundary)?;
            let mut files = parts.into_iter().filter(|p| p.filename.is_some());
            let (Some(file), None) = (files.next(), files.next()) else {
                return Err(CodecError::bad_request(
                    "multipart body: send exactly one file part (a form field with a \
                     filename, as `files={\"file\": open(...)}` or `curl -F file=@x.jpg` do)",
                ));
            };
            let reply = file
                .content_type
                .as_deref()
                .map(essence)
                .filter(|e| is_bytes_type(e))
                .unwrap_or_else(|| "application/octet-stream".to_owned());
            (Payload::Bin(file.body), Media::Bytes(reply))
        }
        Media::Seldon | Media::Text => {
            return Err(CodecError::bad_request(format!(
                "{} is not decoded here",
                media.name()
            )))
        }
    })
}

/// The media of the reply: the first type in `accept` (by preference) that can carry
/// `payload`, `default` for `*/*` or no Accept. When the default cannot carry it (an
/// image request answered with a dict), the payload's natural media. `Err` holds what
/// could have been sent, for a 406.
pub fn negotiate(
    accept: Option<&str>,
    default: &Media,
    payload: &Payload,
) -> std::result::Result<Media, String> {
    let natural = || {
        if default.carries(payload) {
            return default.clone();
        }
        match payload {
            Payload::Data {
                array: Array::Numeric(_),
                ..
            } => match default {
                Media::Npy | Media::Msgpack | Media::ArrayJson(_) => default.clone(),
                _ => Media::ArrayJson(Layout::List),
            },
            Payload::Bin(_) | Payload::Custom { .. } => {
                Media::Bytes("application/octet-stream".into())
            }
            Payload::Str(_) => Media::Text,
            _ => Media::PlainJson,
        }
    };
    let Some(accept) = accept.filter(|a| !a.trim().is_empty()) else {
        return Ok(natural());
    };
    let mut ranges: Vec<(f32, String)> = accept
        .split(',')
        .map(|r| {
            let q = r
                .split(';')
                .skip(1)
                .find_map(|p| p.trim().strip_prefix("q="))
                .and_then(|q| q.trim().parse::<f32>().ok())
                .unwrap_or(1.0);
            (q, essence(r))
        })
        .filter(|(q, _)| *q > 0.0)
        .collect();
    ranges.sort_by(|a, b| b.0.total_cmp(&a.0));
    for (_, range) in &ranges {
        let candidate = match range.as_str() {
            "*/*" => Some(natural()),
            "application/json" | "text/json" => Some(match default {
                Media::Seldon | Media::PlainJson | Media::ArrayJson(_) => default.clone(),
                _ => match payload {
                    Payload::Data {
                        array: Array::Numeric(_),
                        ..
                    } => Media::ArrayJson(Layout::List),
                    _ => Media::PlainJson,
                },
            }),
            "application/x-npy" | "application/npy" => Some(Media::Npy),
            "application/msgpack" | "application/x-msgpack" | "application/vnd.msgpack" => {
                Some(Media::Msgpack)
            }
            "text/plain" => Some(Media::Text),
            r if r.ends_with("/*") => {
                let n = natural();
                n.content_type().starts_with(&r[..r.len() - 1]).then_some(n)
            }
            r if is_bytes_type(r) => Some(Media::Bytes(r.to_owned())),
            _ => None,
        };
        if let Some(m) = candidate.filter(|m| m.carries(payload)) {
            return Ok(m);
        }
    }
    Err(format!(
        "none of the types in Accept ({accept}) can carry this reply ({}); {} can",
        payload.kind(),
        natural().content_type()
    ))
}

impl Media {
    /// Whether a reply in this media can hold `payload`.
    fn carries(&self, payload: &Payload) -> bool {
        let numeric = matches!(
            payload,
            Payload::Data {
                array: Array::Numeric(_),
                ..
            }
        );
        match self {
            Media::Seldon | Media::PlainJson | Media::Msgpack => true,
            Media::Npy | Media::ArrayJson(_) => numeric,
            Media::Bytes(_) => matches!(payload, Payload::Bin(_) | Payload::Custom { .. }),
            Media::Text => matches!(payload, Payload::Str(_)),
            Media::Multipart(_) => false,
        }
    }
}

/// Writes `payload` as `media` (which `negotiate` chose, so it can carry it).
pub fn encode(payload: Payload, media: &Media) -> Result<Bytes> {
    let mut out = Vec::new();
    match (media, payload) {
        (Media::Bytes(_), Payload::Bin(b) | Payload::Custom { value: b, .. }) => return Ok(b),
        (Media::Text, Payload::Str(s)) => return Ok(Bytes::from(s)),
        (
            Media::Npy,
            Payload::Data {
                array: Array::Numeric(t),
                ..
            },
        ) => npy::encode(&t, &mut out)?,
        (Media::Msgpack, payload) => match payload {
            Payload::Data {
                array: Array::Numeric(t),
                ..
            } => msgpack::encode(&t, &mut out)?,
            other => msgpack_value(other, &mut out),
        },
        (
            Media::ArrayJson(l),
            Payload::Data {
                array: Array::Numeric(t),
                ..
            },
        ) => array_json::encode(&t, *l, &mut out)?,
        (Media::PlainJson | Media::Seldon, payload) => match payload {
            Payload::Data {
                array: Array::Numeric(t),
                ..
            } => array_json::encode(&t, Layout::List, &mut out)?,
            Payload::Data {
                array: Array::Json(v),
                ..
            }
            | Payload::Json(v) => out = serde_json::to_vec(&v).unwrap_or_default(),
            Payload::Str(s) => write::string(&s, &mut out),
            Payload::Bin(b) | Payload::Custom { value: b, .. } => {
                write::base64_string(&b, &mut out)
            }
            Payload::None => out.extend_from_slice(b"null"),
        },
        (media, payload) => {
            return Err(CodecError::bad_output(format!(
                "a {} reply cannot be sent as {}",
                payload.kind(),
                media.content_type()
            )))
        }
    }
    Ok(Bytes::from(out))
}

/// A `predict_raw` result as the payload the encoders take.
pub fn output_payload(out: Output) -> Payload {
    match out {
        Output::Array(array) => Payload::Data {
            names: Vec::new(),
            encoding: Encoding::Tensor,
            array,
        },
        Output::Bin(b) => Payload::Bin(b),
        Output::Str(s) => Payload::Str(s),
        Output::Json(v) => Payload::Json(v),
    }
}

fn msgpack_value(payload: Payload, out: &mut Vec<u8>) {
    let v = match payload {
        Payload::Data {
            array: Array::Json(v),
            ..
        }
        | Payload::Json(v) => v,
        Payload::Str(s) => Value::String(s),
        Payload::Bin(b) | Payload::Custom { value: b, .. } => {
            // msgpack has a bytes type: use it rather than base64.
            out.push(0xc6);
            out.extend_from_slice(&(b.len() as u32).to_be_bytes());
            out.extend_from_slice(&b);
            return;
        }
        _ => Value::Null,
    };
    msgpack::encode_value(&v, out);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::TensorData;

    fn numeric() -> Payload {
        Payload::Data {
            names: vec![],
            encoding: Encoding::Tensor,
            array: Array::Numeric(Tensor::new(vec![1], TensorData::F64(vec![1.0])).unwrap()),
        }
    }

    #[test]
    fn content_types() {
        let m = |c| Media::from_content_type(Some(c)).unwrap();
        assert_eq!(m("image/jpeg"), Some(Media::Bytes("image/jpeg".into())));
        assert_eq!(m("Application/X-NPY"), Some(Media::Npy));
        assert_eq!(m("application/json; charset=utf-8"), Some(Media::Seldon));
        assert_eq!(m("application/xml"), None);
        assert_eq!(m("image/"), None);
        assert_eq!(
            m("multipart/form-data; boundary=abc"),
            Some(Media::Multipart("abc".into()))
        );
    }

    #[test]
    fn negotiation() {
        let npy = Media::Npy;
        assert_eq!(negotiate(None, &npy, &numeric()), Ok(Media::Npy));
        assert_eq!(
            negotiate(Some("application/msgpack"), &npy, &numeric()),
            Ok(Media::Msgpack)
        );
        assert_eq!(
            negotiate(Some("image/png;q=0.5, application/json"), &npy, &numeric()),
            Ok(Media::ArrayJson(Layout::List))
        );
        let jpeg = Media::Bytes("image/jpeg".into());
        let dict = Payload::Json(serde_json::json!({"mean": 1}));
        assert_eq!(negotiate(None, &jpeg, &dict), Ok(Media::PlainJson));
        assert_eq!(
            negotiate(Some("image/*"), &jpeg, &Payload::Bin(Bytes::new())),
            Ok(jpeg.clone())
        );
        let e = negotiate(Some("application/x-npy"), &jpeg, &dict).unwrap_err();
        assert!(e.contains("application/json can"), "{e}");
        assert_eq!(
            negotiate(Some("application/x-npy"), &Media::Seldon, &numeric()),
            Ok(Media::Npy)
        );
    }

    #[test]
    fn multipart_needs_one_file() {
        let body = Bytes::from_static(
            b"--b\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\n1\r\n--b--",
        );
        let e = decode(&Media::Multipart("b".into()), body, &Limits::default()).unwrap_err();
        assert!(e.message.contains("exactly one file part"));
    }
}
