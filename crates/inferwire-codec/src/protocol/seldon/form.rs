//! A SeldonMessage sent as a `multipart/form-data` form, as the Seldon wrapper takes it
//! (`curl -F 'data={"ndarray":[[1]]}' -F strData=@file -F binData=@file -F meta=...`):
//! each part is one of the message's keys; text fields hold JSON (but `strData`, which
//! is the text itself), a `binData` file is the bytes and any other file is read as text.
use bytes::Bytes;
use serde_json::{Map, Value};

use super::json;
use super::message::{Payload, SeldonMessage};
use crate::limits::Limits;
use crate::multipart::Part;
use crate::{CodecError, Result};

/// The keys a form may have: the SeldonMessage's own.
const KEYS: [&str; 6] = [
    "data",
    "meta",
    "strData",
    "binData",
    "jsonData",
    "customData",
];

/// Whether a multipart body is a Seldon form rather than a file upload for the model
/// (one file part, e.g. `-F file=@x.jpg`, maybe with other fields, which
/// `media::decode` serves): it has a text field named as one of the message's keys, or
/// a part named `strData` or `binData`.
pub fn is_seldon_form(parts: &[Part]) -> bool {
    parts.iter().any(|p| {
        (p.filename.is_none() && KEYS.contains(&p.name.as_str()))
            || p.name == "strData"
            || p.name == "binData"
    })
}

pub fn decode_form(parts: Vec<Part>, limits: &Limits) -> Result<SeldonMessage> {
    let mut fields = Map::new();
    let mut bin: Option<Bytes> = None;
    for part in parts {
        let name = part.name.as_str();
        if !KEYS.contains(&name) {
            return Err(CodecError::bad_request(format!(
                "multipart form: unknown field {name:?}: a Seldon form's fields are the \
                 SeldonMessage's keys ({})",
                KEYS.join(", ")
            )));
        }
        if fields.contains_key(name) || (name == "binData" && bin.is_some()) {
            return Err(CodecError::bad_request(format!(
                "multipart form: the field {name:?} is sent twice"
            )));
        }
        if name == "binData" && part.filename.is_some() {
            bin = Some(part.body);
            continue;
        }
        let text = std::str::from_utf8(&part.body).map_err(|_| {
            CodecError::bad_request(format!(
                "multipart form: {name} is not UTF-8 text (send bytes as a binData file: \
                 -F binData=@file)"
            ))
        })?;
        // Text fields are JSON, as Seldon's wrapper reads them; strData and files are text.
        let value = if name == "strData" || part.filename.is_some() {
            Value::String(text.to_owned())
        } else {
            serde_json::from_str(text).map_err(|e| {
                CodecError::bad_request(format!("multipart form: {name} is not JSON: {e}"))
            })?
        };
        fields.insert(name.to_owned(), value);
    }
    let body = serde_json::to_vec(&Value::Object(fields))
        .map_err(|e| CodecError::bad_request(format!("multipart form: {e}")))?;
    let mut msg = json::decode_general(&body, limits)?;
    if let Some(b) = bin {
        if !matches!(msg.payload, Payload::None) {
            return Err(CodecError::bad_request(format!(
                "multipart form: send one payload field, not binData and {}",
                msg.payload.kind()
            )));
        }
        msg.payload = Payload::Bin(b);
    }
    Ok(msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(name: &str, body: &str) -> Part {
        Part {
            name: name.into(),
            filename: None,
            content_type: None,
            body: Bytes::from(body.to_owned()),
        }
    }

    fn file(name: &str, body: &[u8]) -> Part {
        Part {
            filename: Some("f".into()),
            body: Bytes::copy_from_slice(body),
            ..field(name, "")
        }
    }

    #[test]
    fn fields_are_json_and_str_data_is_text() {
        let limits = Limits::default();
        let parts = vec![
            field("data", r#"{"ndarray": [[1, 2]]}"#),
            field("meta", r#"{"puid": "p1"}"#),
        ];
        assert!(is_seldon_form(&parts));
        let m = decode_form(parts, &limits).unwrap();
        assert_eq!(m.meta.puid, "p1");
        assert_eq!(m.payload.kind(), "ndarray");
        let m = decode_form(vec![file("strData", b"hello\n")], &limits).unwrap();
        assert_eq!(m.payload, Payload::Str("hello\n".into()));
        let m = decode_form(vec![field("strData", "{not json")], &limits).unwrap();
        assert_eq!(m.payload, Payload::Str("{not json".into()));
    }

    #[test]
    fn bin_data_files_are_bytes() {
        let m = decode_form(vec![file("binData", &[0, 255, 1])], &Limits::default()).unwrap();
        assert_eq!(m.payload, Payload::Bin(Bytes::from_static(&[0, 255, 1])));
    }

    #[test]
    fn a_lone_file_upload_is_not_a_seldon_form() {
        assert!(!is_seldon_form(&[file("file", b"\x89PNG")]));
        assert!(!is_seldon_form(&[file("data", b"\x89PNG")]));
        assert!(!is_seldon_form(&[file("file", b"x"), field("note", "hi")]));
    }

    #[test]
    fn mistakes_name_the_field() {
        let limits = Limits::default();
        let e = decode_form(vec![field("dat", "{}")], &limits).unwrap_err();
        assert!(e.message.contains("\"dat\""), "{}", e.message);
        let e = decode_form(vec![field("data", "{nope")], &limits).unwrap_err();
        assert!(e.message.contains("data is not JSON"), "{}", e.message);
        let e =
            decode_form(vec![file("binData", b"x"), field("strData", "y")], &limits).unwrap_err();
        assert!(e.message.contains("binData and strData"), "{}", e.message);
        let e = decode_form(vec![file("strData", &[0xff])], &limits).unwrap_err();
        assert!(e.message.contains("UTF-8"), "{}", e.message);
    }
}
