//! JSON helpers shared by every JSON protocol: the typed array fast path, writers, and
//! serde with errors that name the field.
pub mod numbers;
pub mod scan;
pub mod value;
pub mod write;

use serde::Deserialize;

use crate::error::{CodecError, Result};

/// Deserializes one JSON document with serde; an error names the offending field's path
/// (`inputs[0].shape: ...`), or says the JSON itself is invalid.
pub fn deserialize<'a, T: Deserialize<'a>>(body: &'a [u8]) -> Result<T> {
    let mut de = serde_json::Deserializer::from_slice(body);
    let value = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if inner.is_syntax() || inner.is_eof() || path == "." || path == "?" {
            CodecError::bad_request(format!("invalid JSON: {inner}"))
        } else {
            CodecError::bad_request(format!("{path}: {inner}"))
        }
    })?;
    de.end()
        .map_err(|e| CodecError::bad_request(format!("invalid JSON: {e}")))?;
    Ok(value)
}
