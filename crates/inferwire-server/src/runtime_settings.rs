//! Settings clients read and change while the server runs: Triton's trace extension
//! (`/v2[/models/M]/trace/setting`, gRPC `TraceSetting`) and logging extension
//! (`/v2/logging`, gRPC `LogSettings`), kept as Triton's server keeps them
//! (server `src/tracer.cc` `TraceManager`, `src/http_server.cc`): a model's trace setting
//! falls back to the global one field by field, and the global one to the server's start.
//!
//! They are stored and reported; nothing is traced yet (exporting traces, Triton's file
//! or OpenTelemetry, is a later change), and the logging switches do not reach the
//! server's log filter (it has no handle to change at runtime). Each worker process
//! keeps its own. Each transport reads its request's fields with Triton's words for
//! that transport (`rest::runtime_settings`, `grpc::runtime_settings`: each implements
//! [`TraceFields`] for its request); the rules for the values, which they share, are here
//! ([`trace_update`]).
use std::collections::HashMap;
use std::sync::Mutex;

use crate::error::{Kind, ServeError};

/// What is traced: nothing (`OFF`), timestamps, tensors, or both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Level {
    pub timestamps: bool,
    pub tensors: bool,
}

impl Level {
    pub const OFF: Level = Level {
        timestamps: false,
        tensors: false,
    };

    pub fn is_off(self) -> bool {
        self == Self::OFF
    }

    /// Triton's names, as its replies list them.
    pub fn names(self) -> Vec<&'static str> {
        if self.is_off() {
            return vec!["OFF"];
        }
        let mut out = Vec::new();
        if self.timestamps {
            out.push("TIMESTAMPS");
        }
        if self.tensors {
            out.push("TENSORS");
        }
        out
    }

    /// A level from Triton's names: `OFF` alone, or any of `TIMESTAMPS` and `TENSORS`
    /// (other names are ignored, as Triton ignores them); `None` when none was named.
    pub fn from_names<'a>(
        names: impl ExactSizeIterator<Item = &'a str>,
    ) -> Result<Option<Level>, ServeError> {
        let many = names.len() > 1;
        let mut level = None;
        for name in names {
            match name {
                "OFF" if many => {
                    return Err(ServeError::new(
                        Kind::BadRequest,
                        "Expect only one trace level 'OFF' is specified",
                    ))
                }
                "OFF" => level = Some(Level::OFF),
                "TIMESTAMPS" => level.get_or_insert(Level::OFF).timestamps = true,
                "TENSORS" => level.get_or_insert(Level::OFF).tensors = true,
                _ => {}
            }
        }
        Ok(level)
    }
}

/// Where traces go: Triton's own file format, or OpenTelemetry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    #[default]
    Triton,
    OpenTelemetry,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Triton => "triton",
            Mode::OpenTelemetry => "opentelemetry",
        }
    }
}

/// One trace setting, every field known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trace {
    pub level: Level,
    /// One request in this many is traced.
    pub rate: u32,
    /// How many more to trace; -1: no limit.
    pub count: i32,
    /// Traces written to the file after this many (0: at the end).
    pub log_frequency: u32,
    pub file: String,
    pub mode: Mode,
}

/// Triton's defaults (`tritonserver` without `--trace-config`).
impl Default for Trace {
    fn default() -> Self {
        Self {
            level: Level::OFF,
            rate: 1000,
            count: -1,
            log_frequency: 0,
            file: String::new(),
            mode: Mode::Triton,
        }
    }
}

/// What an update does to one field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Change<T> {
    #[default]
    Keep,
    /// Forget this scope's value: the one it falls back to applies.
    Clear,
    Set(T),
}

/// A trace update: what it does to each field a client may change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TraceUpdate {
    pub level: Change<Level>,
    pub rate: Change<u32>,
    pub count: Change<i32>,
    pub log_frequency: Change<u32>,
}

/// A trace update's fields as one transport reads them: whether a field is there, and its
/// value as Triton takes it (level names; numbers as text), before the rules for the
/// values ([`trace_update`]). A value of the wrong shape is refused here, in that
/// transport's words.
pub trait TraceFields {
    /// How Triton's message for a `trace_count` below -1 ends: "got:" and the value,
    /// with a space between them over gRPC and none over REST.
    const COUNT_GOT: &'static str;

    /// Whether the request names `field` at all.
    fn has(&self, field: &str) -> bool;

    /// `trace_level`'s names (`Clear`: the request clears it).
    fn level(&self) -> Result<Change<Vec<&str>>, ServeError>;

    /// A trace number's text (`Clear`: the request clears it).
    fn number(&self, field: &str) -> Result<Change<&str>, ServeError>;
}

/// A trace update from a request's fields, as Triton reads them over either transport: no
/// file; a level from its names (none named: unchanged); `trace_rate` and `log_frequency`
/// as unsigned 32 bits, `trace_count` from -1 (no limit). The fields are read in this
/// order, so a request with several bad ones is refused for the first, as Triton does.
pub fn trace_update<F: TraceFields>(fields: &F) -> Result<TraceUpdate, ServeError> {
    if fields.has("trace_file") {
        return Err(file_fixed("trace"));
    }
    let level = match fields.level()? {
        Change::Keep => Change::Keep,
        Change::Clear => Change::Clear,
        Change::Set(names) => match Level::from_names(names.into_iter())? {
            Some(level) => Change::Set(level),
            None => Change::Keep,
        },
    };
    let number = |field, range| -> Result<Change<(i64, &str)>, ServeError> {
        Ok(match fields.number(field)? {
            Change::Set(text) => Change::Set((stoi(field, text, range)?, text)),
            Change::Clear => Change::Clear,
            Change::Keep => Change::Keep,
        })
    };
    // C's cast of a negative int to uint32_t wraps, as Triton stores it.
    let unsigned = |field| -> Result<Change<u32>, ServeError> {
        Ok(match number(field, UNSIGNED)? {
            Change::Set((v, _)) => Change::Set(v as u32),
            Change::Clear => Change::Clear,
            Change::Keep => Change::Keep,
        })
    };
    let rate = unsigned("trace_rate")?;
    let count = match number("trace_count", COUNT)? {
        Change::Set((v, text)) if v < COUNT.0 => {
            return Err(ServeError::new(
                Kind::BadRequest,
                format!(
                    "Unable to parse 'trace_count'. Expecting value >= {}, {}{text}",
                    COUNT.0,
                    F::COUNT_GOT
                ),
            ))
        }
        Change::Set((v, _)) => Change::Set(v as i32),
        Change::Clear => Change::Clear,
        Change::Keep => Change::Keep,
    };
    let log_frequency = unsigned("log_frequency")?;
    Ok(TraceUpdate {
        level,
        rate,
        count,
        log_frequency,
    })
}

/// The fields one scope (the global setting, or a model's) has of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Own {
    level: Option<Level>,
    rate: Option<u32>,
    count: Option<i32>,
    log_frequency: Option<u32>,
}

impl Own {
    fn apply(&mut self, u: &TraceUpdate) {
        fn one<T: Copy>(field: &mut Option<T>, change: Change<T>) {
            match change {
                Change::Keep => {}
                Change::Clear => *field = None,
                Change::Set(v) => *field = Some(v),
            }
        }
        one(&mut self.level, u.level);
        one(&mut self.rate, u.rate);
        one(&mut self.count, u.count);
        one(&mut self.log_frequency, u.log_frequency);
    }

    fn over(&self, base: &Trace) -> Trace {
        Trace {
            level: self.level.unwrap_or(base.level),
            rate: self.rate.unwrap_or(base.rate),
            count: self.count.unwrap_or(base.count),
            log_frequency: self.log_frequency.unwrap_or(base.log_frequency),
            file: base.file.clone(),
            mode: base.mode,
        }
    }

    fn is_empty(&self) -> bool {
        *self == Own::default()
    }
}

/// Logging switches, as Triton reports them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Log {
    pub file: String,
    pub info: bool,
    pub warning: bool,
    pub error: bool,
    pub verbose_level: u32,
    /// `default` or `ISO8601`.
    pub format: String,
}

impl Default for Log {
    fn default() -> Self {
        Self {
            file: String::new(),
            info: true,
            warning: true,
            error: true,
            verbose_level: 0,
            format: "default".into(),
        }
    }
}

/// A logging update; `None`: unchanged.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LogUpdate {
    pub info: Option<bool>,
    pub warning: Option<bool>,
    pub error: Option<bool>,
    pub verbose_level: Option<u32>,
    pub format: Option<String>,
}

/// The settings of one worker process.
#[derive(Debug, Default)]
pub struct RuntimeSettings {
    trace: Mutex<Traces>,
    log: Mutex<Log>,
}

#[derive(Debug, Default)]
struct Traces {
    /// The server's start (the global setting's fallback).
    start: Trace,
    global: Own,
    models: HashMap<String, Own>,
}

impl RuntimeSettings {
    /// Settings starting from `trace` and `log` (the server's start).
    pub fn new(trace: Trace, log: Log) -> Self {
        Self {
            trace: Mutex::new(Traces {
                start: trace,
                ..Traces::default()
            }),
            log: Mutex::new(log),
        }
    }

    /// The trace setting in force for `model` (`None`: the global one).
    pub fn trace(&self, model: Option<&str>) -> Trace {
        let t = self.trace.lock().unwrap_or_else(|e| e.into_inner());
        let global = t.global.over(&t.start);
        match model.and_then(|m| t.models.get(m)) {
            Some(own) => own.over(&global),
            None => global,
        }
    }

    /// Applies `update` to `model`'s setting (`None`: the global one) and answers the
    /// setting now in force; refused, as Triton refuses it, when the result would trace
    /// (a level other than OFF) with a rate of 0, in Triton's mode without a file, or with
    /// a count of 0.
    pub fn update_trace(
        &self,
        model: Option<&str>,
        update: &TraceUpdate,
    ) -> Result<Trace, ServeError> {
        let mut t = self.trace.lock().unwrap_or_else(|e| e.into_inner());
        let mut own = match model {
            Some(m) => t.models.get(m).copied().unwrap_or_default(),
            None => t.global,
        };
        own.apply(update);
        let global = t.global.over(&t.start);
        let result = match model {
            Some(_) => own.over(&global),
            None => own.over(&t.start),
        };
        if !result.level.is_off() {
            let why = if result.rate == 0 {
                Some("sample rate must be non-zero")
            } else if result.mode == Mode::Triton && result.file.is_empty() {
                Some("trace file name is not given")
            } else if result.count == 0 {
                Some("")
            } else {
                None
            };
            if let Some(why) = why {
                return Err(ServeError::new(
                    Kind::BadRequest,
                    format!("Attempting to set invalid trace setting :{why}"),
                ));
            }
        }
        match model {
            Some(m) if own.is_empty() => {
                t.models.remove(m);
            }
            Some(m) => {
                t.models.insert(m.to_owned(), own);
            }
            None => t.global = own,
        }
        Ok(result)
    }

    pub fn log(&self) -> Log {
        self.log.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Applies `update` (its values already checked) and answers the switches now.
    pub fn update_log(&self, update: LogUpdate) -> Log {
        let mut log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        let LogUpdate {
            info,
            warning,
            error,
            verbose_level,
            format,
        } = update;
        log.info = info.unwrap_or(log.info);
        log.warning = warning.unwrap_or(log.warning);
        log.error = error.unwrap_or(log.error);
        log.verbose_level = verbose_level.unwrap_or(log.verbose_level);
        if let Some(f) = format {
            log.format = f;
        }
        log.clone()
    }
}

/// A trace setting's field given as text: its integer as C's `std::stoi` reads one
/// (leading blanks, a sign, digits; what follows is ignored), refused in Triton's words
/// when there is none or it overflows 32 bits. `range`: the bounds Triton's message names.
fn stoi(field: &str, text: &str, range: (i64, i64)) -> Result<i64, ServeError> {
    let t = text.trim_start();
    let digits_at = usize::from(t.starts_with(['+', '-']));
    let digits = t[digits_at..]
        .bytes()
        .take_while(u8::is_ascii_digit)
        .count();
    if digits == 0 {
        return Err(ServeError::new(
            Kind::BadRequest,
            format!("Unable to parse '{field}', got: {text}"),
        ));
    }
    match t[..digits_at + digits].parse::<i64>() {
        Ok(v) if i32::try_from(v).is_ok() => Ok(v),
        _ => Err(ServeError::new(
            Kind::BadRequest,
            format!(
                "Unable to parse '{field}', value is out of range [ {}, {} ], got: {text}",
                range.0, range.1
            ),
        )),
    }
}

/// The bounds Triton names for `trace_rate` and `log_frequency` (unsigned 32 bits), and
/// for `trace_count`.
const UNSIGNED: (i64, i64) = (0, u32::MAX as i64);
const COUNT: (i64, i64) = (-1, i32::MAX as i64);

/// Triton's answer to an update of where traces or logs are written.
pub fn file_fixed(what: &str) -> ServeError {
    ServeError::new(
        Kind::Unsupported,
        format!("{what} file location can not be updated through network protocol"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_file() -> RuntimeSettings {
        RuntimeSettings::new(
            Trace {
                file: "global.log".into(),
                level: Level {
                    timestamps: true,
                    tensors: false,
                },
                rate: 1,
                ..Trace::default()
            },
            Log::default(),
        )
    }

    #[test]
    fn a_model_falls_back_to_the_global_setting_field_by_field() {
        let s = with_file();
        let model = TraceUpdate {
            rate: Change::Set(12),
            log_frequency: Change::Set(34),
            ..TraceUpdate::default()
        };
        s.update_trace(Some("simple"), &model).unwrap();
        let global = TraceUpdate {
            level: Change::Set(Level::OFF),
            rate: Change::Set(5),
            count: Change::Set(7),
            ..TraceUpdate::default()
        };
        s.update_trace(None, &global).unwrap();
        let m = s.trace(Some("simple"));
        assert_eq!(
            (m.level, m.rate, m.count, m.log_frequency),
            (Level::OFF, 12, 7, 34)
        );
        // Clearing the global rate and count: the start's values again.
        let clear = TraceUpdate {
            rate: Change::Clear,
            count: Change::Clear,
            ..TraceUpdate::default()
        };
        let g = s.update_trace(None, &clear).unwrap();
        assert_eq!((g.level, g.rate, g.count), (Level::OFF, 1, -1));
        // Clearing the model's rate: the global's.
        let m = s
            .update_trace(
                Some("simple"),
                &TraceUpdate {
                    rate: Change::Clear,
                    level: Change::Clear,
                    ..TraceUpdate::default()
                },
            )
            .unwrap();
        assert_eq!((m.level, m.rate, m.log_frequency), (Level::OFF, 1, 34));
        assert_eq!(s.trace(Some("other")), s.trace(None));
    }

    #[test]
    fn tracing_needs_a_rate_and_a_file() {
        let s = RuntimeSettings::default();
        let on = TraceUpdate {
            level: Change::Set(Level {
                timestamps: true,
                tensors: false,
            }),
            ..TraceUpdate::default()
        };
        let e = s.update_trace(None, &on).unwrap_err();
        assert_eq!(
            (e.http_status(), e.message.as_str()),
            (
                400,
                "Attempting to set invalid trace setting :trace file name is not given"
            )
        );
        assert!(s.trace(None).level.is_off());
        let zero = TraceUpdate {
            rate: Change::Set(0),
            ..TraceUpdate::default()
        };
        let e = with_file().update_trace(None, &zero).unwrap_err();
        assert!(e.message.ends_with(":sample rate must be non-zero"));
    }

    #[test]
    fn levels_and_numbers_as_triton_reads_them() {
        let level = |n: &[&str]| Level::from_names(n.iter().copied());
        assert_eq!(level(&["OFF"]).unwrap(), Some(Level::OFF));
        assert_eq!(
            level(&["TENSORS", "TIMESTAMPS"]).unwrap().unwrap().names(),
            vec!["TIMESTAMPS", "TENSORS"]
        );
        assert_eq!(level(&["NOPE"]).unwrap(), None);
        assert_eq!(
            level(&["TIMESTAMPS", "OFF"]).unwrap_err().message,
            "Expect only one trace level 'OFF' is specified"
        );
        assert_eq!(stoi("trace_rate", " 12abc", UNSIGNED).unwrap(), 12);
        assert_eq!(stoi("trace_count", "-1", COUNT).unwrap(), -1);
        assert_eq!(
            stoi("trace_rate", "abc", UNSIGNED).unwrap_err().message,
            "Unable to parse 'trace_rate', got: abc"
        );
        assert_eq!(
            stoi("trace_rate", "99999999999", UNSIGNED)
                .unwrap_err()
                .message,
            "Unable to parse 'trace_rate', value is out of range [ 0, 4294967295 ], got: \
             99999999999"
        );
        let e = file_fixed("trace");
        assert_eq!(
            (e.http_status(), e.grpc_code()),
            (501, tonic::Code::Unimplemented)
        );
    }

    #[test]
    fn logging_switches() {
        let s = RuntimeSettings::default();
        assert!(s.log().info && s.log().format == "default");
        let now = s.update_log(LogUpdate {
            info: Some(false),
            verbose_level: Some(2),
            ..LogUpdate::default()
        });
        assert_eq!((now.info, now.warning, now.verbose_level), (false, true, 2));
    }
}
