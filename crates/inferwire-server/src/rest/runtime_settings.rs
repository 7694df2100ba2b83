//! Triton's trace and logging extensions over REST: `GET`/`POST /v2/trace/setting`,
//! `/v2/models/NAME/trace/setting` and `/v2/logging`, with Triton's field names, types
//! (trace numbers as strings) and words for a bad value (server `src/http_server.cc`
//! `HandleTrace`, `HandleLogging`; common `triton_json.h` for a value of the wrong JSON
//! type). A POST changes the server: its route needs what the repository API needs
//! (`routes`). The settings themselves are `crate::runtime_settings`.
use http::{Method, Request, StatusCode};
use hyper::body::Incoming;
use serde_json::{json, Map, Value};

use super::body::{self, Reply};
use crate::app::App;
use crate::error::{Kind, ServeError};
use crate::runtime_settings::{
    self, file_fixed, Change, Log, LogUpdate, Mode, Trace, TraceFields, TraceUpdate,
};

/// Largest settings body read.
const MAX_BODY: usize = 64 * 1024;

/// `/v2/trace/setting` (`model` ""), `/v2/models/NAME/trace/setting`: the setting in
/// force, after a POST's update.
pub async fn trace(app: &App, req: Request<Incoming>, model: &str) -> Result<Reply, ServeError> {
    let model = (!model.is_empty()).then_some(model);
    if let Some(name) = model {
        app.trace_model(name).await?;
    }
    if req.method() == Method::POST {
        let update = trace_update(&read_json(app, req).await?)?;
        app.runtime.update_trace(model, &update)?;
    }
    Ok(ok(trace_json(&app.runtime.trace(model))))
}

/// `/v2/logging`: the logging switches, after a POST's update.
pub async fn logging(app: &App, req: Request<Incoming>) -> Result<Reply, ServeError> {
    let now = if req.method() == Method::POST {
        let update = log_update(&read_json(app, req).await?)?;
        app.runtime.update_log(update)
    } else {
        app.runtime.log()
    };
    Ok(ok(log_json(&now)))
}

/// The body as JSON; one that is not JSON in the dialect's words (Triton: 500, "failed to
/// parse the request JSON buffer").
async fn read_json(app: &App, req: Request<Incoming>) -> Result<Value, ServeError> {
    let body = body::read(app, req, MAX_BODY).await?;
    inferwire_codec::json::deserialize::<Value>(&body)
        .map_err(|e| app.config.dialect.invalid_rest(e, ""))
}

/// What TritonJson says of a value of the wrong type (its internal error: 500).
fn wrong_type(what: &str) -> ServeError {
    ServeError::new(
        Kind::Internal,
        format!("attempt to access JSON non-{what} as {what}"),
    )
}

fn trace_update(v: &Value) -> Result<TraceUpdate, ServeError> {
    let empty = Map::new();
    runtime_settings::trace_update(v.as_object().unwrap_or(&empty))
}

/// A JSON body's trace fields: the level an array of names (`null`: clear it), each
/// number a string (`null`: clear it).
impl TraceFields for Map<String, Value> {
    const COUNT_GOT: &'static str = "got:";

    fn has(&self, field: &str) -> bool {
        self.contains_key(field)
    }

    fn level(&self) -> Result<Change<Vec<&str>>, ServeError> {
        match self.get("trace_level") {
            None => Ok(Change::Keep),
            Some(Value::Null) => Ok(Change::Clear),
            Some(Value::Array(items)) => items
                .iter()
                .map(|n| n.as_str().ok_or_else(|| wrong_type("string")))
                .collect::<Result<_, _>>()
                .map(Change::Set),
            Some(_) => Err(wrong_type("array")),
        }
    }

    fn number(&self, field: &str) -> Result<Change<&str>, ServeError> {
        match self.get(field) {
            None => Ok(Change::Keep),
            Some(Value::Null) => Ok(Change::Clear),
            Some(Value::String(text)) => Ok(Change::Set(text)),
            Some(_) => Err(wrong_type("string")),
        }
    }
}

fn log_update(v: &Value) -> Result<LogUpdate, ServeError> {
    let empty = Map::new();
    let fields = v.as_object().unwrap_or(&empty);
    let given = |name| fields.get(name).filter(|v| !v.is_null());
    if given("log_file").is_some() {
        return Err(file_fixed("log"));
    }
    let switch = |name| -> Result<Option<bool>, ServeError> {
        given(name)
            .map(|v| v.as_bool().ok_or_else(|| wrong_type("boolean")))
            .transpose()
    };
    let verbose_level = given("log_verbose_level")
        .map(|v| {
            v.as_u64()
                .map(|n| n as u32)
                .ok_or_else(|| wrong_type("unsigned-integer"))
        })
        .transpose()?;
    let format = given("log_format")
        .map(|v| {
            let f = v.as_str().ok_or_else(|| wrong_type("string"))?;
            if f == "default" || f == "ISO8601" {
                Ok(f.to_owned())
            } else {
                // Triton answers this one UNAVAILABLE (503).
                Err(ServeError::new(
                    Kind::Unavailable,
                    format!("invalid argument for --log_format, got: {f}"),
                ))
            }
        })
        .transpose()?;
    Ok(LogUpdate {
        info: switch("log_info")?,
        warning: switch("log_warning")?,
        error: switch("log_error")?,
        verbose_level,
        format,
    })
}

/// A trace setting as Triton writes it: numbers as strings; the file and log frequency
/// only in Triton's own mode.
fn trace_json(t: &Trace) -> Value {
    let mut v = json!({
        "trace_level": t.level.names(),
        "trace_rate": t.rate.to_string(),
        "trace_count": t.count.to_string(),
        "trace_mode": t.mode.name(),
    });
    if t.mode == Mode::Triton {
        v["log_frequency"] = Value::from(t.log_frequency.to_string());
        v["trace_file"] = Value::from(t.file.clone());
    }
    v
}

fn log_json(l: &Log) -> Value {
    json!({
        "log_file": l.file,
        "log_info": l.info,
        "log_warning": l.warning,
        "log_error": l.error,
        "log_verbose_level": l.verbose_level,
        "log_format": l.format,
    })
}

fn ok(v: Value) -> Reply {
    body::json(StatusCode::OK, serde_json::to_vec(&v).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_updates_as_triton_reads_them() {
        let u = trace_update(&json!({
            "trace_level": ["TIMESTAMPS"], "trace_rate": "5", "trace_count": null
        }))
        .unwrap();
        assert_eq!(u.rate, Change::Set(5));
        assert_eq!(u.count, Change::Clear);
        assert_eq!(u.log_frequency, Change::Keep);
        let e = trace_update(&json!({"trace_file": "x.log"})).unwrap_err();
        assert_eq!(
            (e.http_status(), e.message.as_str()),
            (
                501,
                "trace file location can not be updated through network protocol"
            )
        );
        let e = trace_update(&json!({"trace_rate": 5})).unwrap_err();
        assert_eq!(
            (e.http_status(), e.message.as_str()),
            (500, "attempt to access JSON non-string as string")
        );
        let e = trace_update(&json!({"trace_count": "-2"})).unwrap_err();
        assert_eq!(
            e.message,
            "Unable to parse 'trace_count'. Expecting value >= -1, got:-2"
        );
        assert_eq!(
            trace_update(&json!({"trace_rate": "-1"})).unwrap().rate,
            Change::Set(u32::MAX)
        );
    }

    #[test]
    fn log_updates_as_triton_reads_them() {
        let u = log_update(&json!({"log_info": false, "log_verbose_level": 1, "log_file": null}))
            .unwrap();
        assert_eq!((u.info, u.verbose_level), (Some(false), Some(1)));
        let e = log_update(&json!({"log_info": "no"})).unwrap_err();
        assert_eq!(e.message, "attempt to access JSON non-boolean as boolean");
        let e = log_update(&json!({"log_format": "json"})).unwrap_err();
        assert_eq!(
            (e.http_status(), e.message.as_str()),
            (503, "invalid argument for --log_format, got: json")
        );
        assert_eq!(
            log_update(&json!({"log_file": "x"}))
                .unwrap_err()
                .http_status(),
            501
        );
        let shown = log_json(&Log::default());
        assert_eq!(
            shown,
            json!({"log_file": "", "log_info": true, "log_warning": true, "log_error": true,
                   "log_verbose_level": 0, "log_format": "default"})
        );
        let t = trace_json(&Trace::default());
        assert_eq!(
            t,
            json!({"trace_level": ["OFF"], "trace_rate": "1000", "trace_count": "-1",
                   "log_frequency": "0", "trace_file": "", "trace_mode": "triton"})
        );
    }
}
