//! JSON helpers shared by every JSON protocol: the typed array fast path, writers, and
//! serde with errors that name the field.
pub mod numbers;
pub mod scan;
pub mod value;
pub mod write;

use serde::Deserialize;

use crate::error::{Cause, CodecError, Result};

/// Deserializes one JSON document with serde; an error names the offending field's path
/// (`inputs[0].shape: ...`), or says the JSON itself is invalid.
pub fn deserialize<'a, T: Deserialize<'a>>(body: &'a [u8]) -> Result<T> {
    let mut de = serde_json::Deserializer::from_slice(body);
    let value = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if inner.is_syntax() || inner.is_eof() {
            return not_json(body, &inner);
        }
        // A document of the wrong shape that is not JSON either: the JSON error first.
        if let Err(syntax) = serde_json::from_slice::<serde::de::IgnoredAny>(body) {
            if syntax.is_syntax() || syntax.is_eof() {
                return not_json(body, &syntax);
            }
        }
        let e = if path == "." || path == "?" {
            CodecError::bad_request(format!("invalid JSON: {inner}"))
        } else {
            CodecError::bad_request(format!("{path}: {inner}"))
        };
        match missing_field(&inner) {
            Some(field) => e.because(Cause::MissingField { field }),
            None => e,
        }
    })?;
    de.end().map_err(|e| not_json(body, &e))?;
    Ok(value)
}

/// A body that is not JSON, with where the parser stopped (`Cause::Json`).
#[cold]
fn not_json(body: &[u8], e: &serde_json::Error) -> CodecError {
    let offset = if e.is_eof() {
        body.len()
    } else {
        // serde_json counts lines from 1 and columns (bytes) from 1 within the line.
        let line_start: usize = body
            .split(|&b| b == b'\n')
            .take(e.line().saturating_sub(1))
            .map(|l| l.len() + 1)
            .sum();
        (line_start + e.column().saturating_sub(1)).min(body.len())
    };
    let after = body[..offset]
        .iter()
        .rev()
        .find(|b| !b.is_ascii_whitespace())
        .copied();
    CodecError::bad_request(format!("invalid JSON: {e}")).because(Cause::Json {
        offset,
        reason: bare(e),
        after,
    })
}

/// serde_json's words without the position it appends.
fn bare(e: &serde_json::Error) -> String {
    let full = e.to_string();
    let at = format!(" at line {} column {}", e.line(), e.column());
    full.strip_suffix(&at).unwrap_or(&full).to_owned()
}

/// The name in serde's "missing field `name`".
fn missing_field(e: &serde_json::Error) -> Option<String> {
    let reason = bare(e);
    let name = reason.strip_prefix("missing field `")?.strip_suffix('`')?;
    Some(name.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cause(body: &str) -> Cause {
        let e = deserialize::<serde_json::Value>(body.as_bytes()).unwrap_err();
        assert!(e.message.starts_with("invalid JSON: "), "{}", e.message);
        *e.cause.expect("a cause")
    }

    #[test]
    fn a_body_that_is_not_json_says_where_the_parser_stopped() {
        let offset = |body| match cause(body) {
            Cause::Json { offset, .. } => offset,
            other => panic!("{other:?}"),
        };
        assert_eq!(offset(""), 0);
        assert_eq!(offset("{bad"), 1);
        assert_eq!(offset("{\n  \"a\": x}"), 9);
        assert_eq!(offset("{\"a\": 1"), 7);
        assert_eq!(offset("{} x"), 3);
        match cause("{bad") {
            Cause::Json { reason, after, .. } => {
                assert_eq!(
                    (reason.as_str(), after),
                    ("key must be a string", Some(b'{'))
                )
            }
            other => panic!("{other:?}"),
        }
        // A well-formed document of the wrong shape is not a JSON error.
        let e = deserialize::<Vec<u8>>(b"{}").unwrap_err();
        assert_eq!(e.cause, None);
        // One of the wrong shape that is not JSON either: the JSON error.
        let e = deserialize::<Vec<u8>>(b"{} x").unwrap_err();
        assert!(matches!(
            e.cause.as_deref(),
            Some(Cause::Json { offset: 3, .. })
        ));
    }

    #[test]
    fn a_missing_field_is_named() {
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Needs {
            inputs: Vec<u8>,
        }
        let e = deserialize::<Needs>(b"{}").unwrap_err();
        let missing = Cause::MissingField {
            field: "inputs".into(),
        };
        assert_eq!(e.cause.as_deref(), Some(&missing));
        assert_eq!(
            e.message,
            "invalid JSON: missing field `inputs` at line 1 column 2"
        );
    }
}
