//! Triton's trace and logging extensions over gRPC (`TraceSetting`, `LogSettings`), with
//! Triton's words for a bad value over gRPC (server `src/grpc/grpc_server.cc`), which
//! differ a little from its REST words (`rest::runtime_settings`). A call with settings
//! changes them and needs what the repository API needs; one without reads them.
use inferwire_codec::pb::inference as pb;
use pb::log_settings_request::setting_value::ParameterChoice as LogValue;
use pb::log_settings_response::setting_value::ParameterChoice as LogReply;

use crate::app::App;
use crate::error::{Kind, ServeError};
use crate::runtime_settings::{self, file_fixed, Change, Log, LogUpdate, Mode, Trace, TraceFields};

/// `TraceSetting`: the setting in force for the model named (or the global one), after
/// the request's changes.
pub(super) async fn trace(
    app: &App,
    req: pb::TraceSettingRequest,
) -> Result<pb::TraceSettingResponse, ServeError> {
    let model = (!req.model_name.is_empty()).then_some(req.model_name.as_str());
    if let Some(name) = model {
        app.trace_model(name).await?;
    }
    if !req.settings.is_empty() {
        let update = runtime_settings::trace_update(&req.settings)?;
        app.runtime.update_trace(model, &update)?;
    }
    Ok(trace_reply(&app.runtime.trace(model)))
}

/// `LogSettings`: the logging switches, after the request's changes.
pub(super) fn log(
    app: &App,
    req: &pb::LogSettingsRequest,
) -> Result<pb::LogSettingsResponse, ServeError> {
    let now = if req.settings.is_empty() {
        app.runtime.log()
    } else {
        app.runtime.update_log(log_update(&req.settings)?)
    };
    Ok(log_reply(&now))
}

type TraceValues = std::collections::HashMap<String, pb::trace_setting_request::SettingValue>;
type LogValues = std::collections::HashMap<String, pb::log_settings_request::SettingValue>;

/// A `TraceSettingRequest`'s fields: each a list of strings, the level's names or a
/// number's one value (an empty list: clear it).
impl TraceFields for TraceValues {
    const COUNT_GOT: &'static str = "got: ";

    fn has(&self, field: &str) -> bool {
        self.contains_key(field)
    }

    fn level(&self) -> Result<Change<Vec<&str>>, ServeError> {
        Ok(match self.get("trace_level").map(|v| &v.value) {
            None => Change::Keep,
            Some(names) if names.is_empty() => Change::Clear,
            Some(names) => Change::Set(names.iter().map(String::as_str).collect()),
        })
    }

    fn number(&self, field: &str) -> Result<Change<&str>, ServeError> {
        match self.get(field).map(|v| v.value.as_slice()) {
            None => Ok(Change::Keep),
            Some([]) => Ok(Change::Clear),
            Some([text]) => Ok(Change::Set(text)),
            Some(_) => Err(ServeError::new(
                Kind::BadRequest,
                format!("expect only 1 value for '{field}'"),
            )),
        }
    }
}

fn log_update(settings: &LogValues) -> Result<LogUpdate, ServeError> {
    if settings.contains_key("log_file") {
        return Err(file_fixed("log"));
    }
    let value = |name: &str| settings.get(name).map(|v| v.parameter_choice.as_ref());
    let expect = |what: &str, name: &str| {
        ServeError::new(Kind::BadRequest, format!("expect {what} for '{name}'"))
    };
    let switch = |name: &str| -> Result<Option<bool>, ServeError> {
        match value(name) {
            None => Ok(None),
            Some(Some(LogValue::BoolParam(b))) => Ok(Some(*b)),
            Some(_) => Err(expect("boolean", name)),
        }
    };
    let info = switch("log_info")?;
    let warning = switch("log_warning")?;
    let error = switch("log_error")?;
    let verbose_level = match value("log_verbose_level") {
        None => None,
        Some(Some(LogValue::Uint32Param(n))) => Some(*n),
        Some(_) => return Err(expect("int32", "log_verbose_level")),
    };
    let format = match value("log_format") {
        None => None,
        Some(Some(LogValue::StringParam(f))) if f == "default" || f == "ISO8601" => Some(f.clone()),
        Some(Some(LogValue::StringParam(f))) => {
            return Err(ServeError::new(
                Kind::BadRequest,
                format!("invalid argument for log_format, got: {f}"),
            ))
        }
        Some(_) => return Err(expect("string", "log_format")),
    };
    Ok(LogUpdate {
        info,
        warning,
        error,
        verbose_level,
        format,
    })
}

fn trace_reply(t: &Trace) -> pb::TraceSettingResponse {
    let mut settings = std::collections::HashMap::new();
    let mut put = |name: &str, value: Vec<String>| {
        settings.insert(
            name.to_owned(),
            pb::trace_setting_response::SettingValue { value },
        );
    };
    put(
        "trace_level",
        t.level.names().into_iter().map(str::to_owned).collect(),
    );
    put("trace_rate", vec![t.rate.to_string()]);
    put("trace_count", vec![t.count.to_string()]);
    if t.mode == Mode::Triton {
        put("log_frequency", vec![t.log_frequency.to_string()]);
        put("trace_file", vec![t.file.clone()]);
    }
    put("trace_mode", vec![t.mode.name().to_owned()]);
    pb::TraceSettingResponse { settings }
}

fn log_reply(l: &Log) -> pb::LogSettingsResponse {
    let value = |v: LogReply| pb::log_settings_response::SettingValue {
        parameter_choice: Some(v),
    };
    let settings = [
        ("log_file", LogReply::StringParam(l.file.clone())),
        ("log_info", LogReply::BoolParam(l.info)),
        ("log_warning", LogReply::BoolParam(l.warning)),
        ("log_error", LogReply::BoolParam(l.error)),
        ("log_verbose_level", LogReply::Uint32Param(l.verbose_level)),
        ("log_format", LogReply::StringParam(l.format.clone())),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), value(v)))
    .collect();
    pb::LogSettingsResponse { settings }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime_settings::trace_update;

    fn values(pairs: &[(&str, &[&str])]) -> TraceValues {
        pairs
            .iter()
            .map(|(k, v)| {
                let value = v.iter().map(|s| (*s).to_owned()).collect();
                (
                    (*k).to_owned(),
                    pb::trace_setting_request::SettingValue { value },
                )
            })
            .collect()
    }

    #[test]
    fn trace_settings_as_triton_reads_them_over_grpc() {
        let u = trace_update(&values(&[("trace_rate", &["7"]), ("trace_level", &[])])).unwrap();
        assert_eq!((u.rate, u.level), (Change::Set(7), Change::Clear));
        let e = trace_update(&values(&[("trace_rate", &["1", "2"])])).unwrap_err();
        assert_eq!(e.message, "expect only 1 value for 'trace_rate'");
        let e = trace_update(&values(&[("trace_count", &["-3"])])).unwrap_err();
        assert_eq!(
            e.message,
            "Unable to parse 'trace_count'. Expecting value >= -1, got: -3"
        );
        let e = trace_update(&values(&[("trace_file", &["x"])])).unwrap_err();
        assert_eq!(e.grpc_code(), tonic::Code::Unimplemented);
        let reply = trace_reply(&Trace::default());
        assert_eq!(reply.settings["trace_level"].value, vec!["OFF"]);
        assert_eq!(reply.settings["trace_rate"].value, vec!["1000"]);
        assert_eq!(reply.settings.len(), 6);
    }

    #[test]
    fn log_settings_as_triton_reads_them_over_grpc() {
        let one = |k: &str, v: LogValue| -> LogValues {
            [(
                k.to_owned(),
                pb::log_settings_request::SettingValue {
                    parameter_choice: Some(v),
                },
            )]
            .into()
        };
        let u = log_update(&one("log_verbose_level", LogValue::Uint32Param(2))).unwrap();
        assert_eq!(u.verbose_level, Some(2));
        let e = log_update(&one("log_info", LogValue::Uint32Param(1))).unwrap_err();
        assert_eq!(
            (e.grpc_code(), e.message.as_str()),
            (
                tonic::Code::InvalidArgument,
                "expect boolean for 'log_info'"
            )
        );
        let e = log_update(&one("log_format", LogValue::StringParam("x".into()))).unwrap_err();
        assert_eq!(e.message, "invalid argument for log_format, got: x");
        let reply = log_reply(&Log::default());
        assert_eq!(
            reply.settings["log_verbose_level"].parameter_choice,
            Some(LogReply::Uint32Param(0))
        );
    }
}
