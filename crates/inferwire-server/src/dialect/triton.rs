//! Triton's dialect of the V2 dataplane (`v2_dialect: triton`, what `inferwire
//! tritonserver` speaks), as Triton 2.5x answers: its words and status codes for a model
//! it cannot serve (core `model_repository_manager.cc`, `model_lifecycle.cc`), for a
//! request that does not match the model's configuration (core `infer_request.cc`,
//! `model.cc`), for a body that is not JSON or binary data of the wrong size (server
//! `http_server.cc`, common `triton_json.h`); gRPC replies always in
//! `raw_output_contents` (server `grpc/infer_handler.cc`); and its `nv_*` metrics first on
//! the metrics page (core `metrics.cc`, `metric_model_reporter.cc`). Nothing here is on
//! the path of another dialect.
use std::fmt::Write;

use inferwire_codec::{Cause, CodecError};

use super::{Absent, Dialect, Missing};
use crate::error::{Kind, ServeError};
use crate::metrics::{Failure, Metrics, ModelSeries};
use crate::model_config::{input_names, Mismatch};

/// How Triton says a load failed before any model was built (the repository poll).
const POLL_FAILED: &str = "failed to poll from model repository";

/// Triton's answers.
#[derive(Debug, Clone, Copy, Default)]
pub struct Triton;

impl Dialect for Triton {
    fn name(&self) -> &'static str {
        "triton"
    }

    /// A Triton repository has no default model: every model may be unloaded.
    fn unloads_default(&self) -> bool {
        true
    }

    fn not_found(&self, e: ServeError, missing: &Missing<'_>) -> ServeError {
        if e.kind != Kind::NotFound {
            return e;
        }
        unknown_model(missing)
    }

    /// A repository load of a name the repository does not have: Triton's 500.
    fn unknown_load(&self, name: &str) -> Option<ServeError> {
        Some(ServeError::new(
            Kind::Internal,
            format!("failed to load '{name}', {POLL_FAILED}"),
        ))
    }

    /// Triton's words for a load that failed, its reason kept after them. A load whose
    /// parameters the repository could not take (the Triton repository's reason starts
    /// with Triton's "failed to poll from model repository") is Triton's INTERNAL, which
    /// Triton's own clients check for.
    fn load_failed(&self, mut e: ServeError, name: &str) -> ServeError {
        let prefix = crate::models::load_failed(name);
        if let Some(reason) = e.message.strip_prefix(&prefix) {
            let reason = reason.strip_prefix(": ").unwrap_or(reason);
            if reason.starts_with(POLL_FAILED) {
                e.kind = Kind::Internal;
                e.message = format!("failed to load '{name}', {reason}");
            } else {
                e.message = format!("failed to load '{name}': {reason}");
            }
        }
        e
    }

    fn invalid_rest(&self, e: CodecError, model: &str) -> ServeError {
        reworded(e, model)
    }

    fn invalid_grpc(&self, e: CodecError, model: &str) -> ServeError {
        reworded(e, model)
    }

    fn mismatch(&self, m: &Mismatch, model: &str, request_id: &str) -> ServeError {
        ServeError::new(Kind::BadRequest, mismatch_message(m, model, request_id))
    }

    /// Triton answers gRPC inferences in `raw_output_contents` whatever the request sent.
    fn raw_grpc_reply(&self, _asked: bool) -> bool {
        true
    }

    fn metrics_text(&self, models: &[ModelSeries], _metrics: &Metrics) -> Option<String> {
        let mut out = String::with_capacity(4096);
        render_models(models, &mut out);
        render_host(crate::metrics::host::sample(), &mut out);
        Some(out)
    }
}

/// Triton's "Request for unknown model" errors, by what the server has of the model.
#[cold]
fn unknown_model(m: &Missing<'_>) -> ServeError {
    let (name, version) = (m.name, m.version);
    if !version.is_empty() {
        match version.parse::<i64>() {
            Err(_) => {
                return ServeError::new(
                    Kind::BadRequest,
                    format!(
                        "failed to get model version from specified version string \
                         '{version}' (details: stol), version should be an integral value > 0"
                    ),
                )
            }
            Ok(v) if v < 0 => {
                return ServeError::new(
                    Kind::BadRequest,
                    format!(
                        "invalid model version specified '{version}' , version should be an \
                         integral value > 0"
                    ),
                )
            }
            Ok(_) => {}
        }
    }
    let prefix = "Request for unknown model";
    match (m.absent, version.is_empty()) {
        // Triton 2.51 does not know the name at all: NOT_FOUND (404), as tritonserver
        // answers over both transports.
        (Absent::Model, _) => {
            ServeError::new(Kind::NotFound, format!("{prefix}: '{name}' is not found"))
        }
        (Absent::Version, false) => ServeError::new(
            Kind::NotFound,
            format!("{prefix}: '{name}' version {version} is not found"),
        ),
        (Absent::NotLoaded, false) => ServeError::new(
            Kind::Unavailable,
            format!("{prefix}: '{name}' version {version} is not at ready state"),
        ),
        (Absent::Version | Absent::NotLoaded, true) => ServeError::new(
            Kind::NotFound,
            format!("{prefix}: '{name}' has no available versions"),
        ),
    }
}

/// A request that does not decode, in Triton's words where it has its own (`e.cause`).
fn reworded(e: CodecError, model: &str) -> ServeError {
    let Some(cause) = e.cause.as_deref() else {
        return e.into();
    };
    match cause {
        // Triton's JSON parser reports through its internal-error status: 500.
        Cause::Json {
            offset,
            reason,
            after,
        } => ServeError::new(
            Kind::Internal,
            format!(
                "failed to parse the request JSON buffer: {} at {offset}",
                rapidjson_words(reason, *offset, *after)
            ),
        ),
        // TritonJson's internal error, with the field Triton was reading: 500.
        Cause::MissingField { field } => ServeError::new(
            Kind::Internal,
            format!(
                "Unable to parse '{field}': attempt to access non-existing object member \
                 '{field}'"
            ),
        ),
        Cause::DataSize {
            input,
            expected,
            got,
        } => ServeError::new(
            Kind::BadRequest,
            format!(
                "{}input byte size mismatch for input '{input}' for model '{model}'. \
                 Expected {expected}, got {got}",
                request_prefix("")
            ),
        ),
        Cause::BinaryShort { input, missing } => ServeError::new(
            Kind::BadRequest,
            format!(
                "unexpected size for input '{input}', expecting {missing} additional bytes \
                 for model '{model}'"
            ),
        ),
        Cause::BinaryLeft => ServeError::new(
            Kind::BadRequest,
            format!("unexpected additional input data for model '{model}'"),
        ),
        Cause::ContentsWithRaw { input } => ServeError::new(
            Kind::BadRequest,
            format!(
                "contents field must not be specified when using raw_input_contents for \
                 '{input}' for model '{model}'"
            ),
        ),
    }
}

/// What rapidjson (Triton's parser) says where serde_json says `reason`, after the byte
/// `after` (at the end of the body, rapidjson's words depend on what it read last: a
/// value is still owed after `[`, `,` or `:`).
fn rapidjson_words(reason: &str, offset: usize, after: Option<u8>) -> &'static str {
    let owes_value = matches!(after, Some(b'[' | b',' | b':'));
    match reason {
        "EOF while parsing a value" if offset == 0 => "The document is empty.",
        "EOF while parsing an object" if after == Some(b',') => "Missing a name for object member.",
        "EOF while parsing a list" | "EOF while parsing an object" if owes_value => {
            "Invalid value."
        }
        "EOF while parsing an object" if after == Some(b'{') => "Missing a name for object member.",
        "EOF while parsing a list" | "expected `,` or `]`" => {
            "Missing a comma or ']' after an array element."
        }
        "EOF while parsing an object" | "expected `,` or `}`" => {
            "Missing a comma or '}' after an object member."
        }
        "EOF while parsing a string" => "Missing a closing quotation mark in string.",
        "expected `:`" => "Missing a colon after a name of object member.",
        "key must be a string" | "trailing comma" => "Missing a name for object member.",
        "invalid escape" => "Invalid escape character in string.",
        "invalid unicode code point" | "lone leading surrogate in hex escape" => {
            "The surrogate pair in string is invalid."
        }
        "number out of range" => "Number too big to be stored in double.",
        "trailing characters" => "The document root must not be followed by other values.",
        r if r.starts_with("control character") => "Invalid encoding in string.",
        _ => "Invalid value.",
    }
}

/// How Triton's core starts a message about a request: its id, or `<id_unknown>`.
fn request_prefix(id: &str) -> String {
    let id = if id.is_empty() { "<id_unknown>" } else { id };
    format!("[request id: {id}] ")
}

/// `[a,b]`, as Triton lists dims.
fn dims(d: &[i64]) -> String {
    let listed: Vec<String> = d.iter().map(i64::to_string).collect();
    format!("[{}]", listed.join(","))
}

/// `['a','b']`, as Triton lists input names (`]` when none: Triton's own slip, kept).
fn names(n: &[String], empty: &str) -> String {
    if n.is_empty() {
        return empty.to_owned();
    }
    input_names(n, |x| format!("'{x}'"), ",")
}

/// Triton's words for a request that does not match the model's configuration.
#[cold]
fn mismatch_message(m: &Mismatch, model: &str, id: &str) -> String {
    let at = request_prefix(id);
    match m {
        Mismatch::UnexpectedOutput { output } => {
            format!("unexpected inference output '{output}' for model '{model}'")
        }
        Mismatch::UnexpectedInput { input } => {
            format!("unexpected inference input '{input}' for model '{model}'")
        }
        Mismatch::InputCount {
            required,
            declared,
            sent,
            missing,
        } => {
            let expected = if required == declared {
                format!("expected {declared} inputs")
            } else {
                format!("expected number of inputs between {required} and {declared}")
            };
            format!(
                "{at}{expected} but got {} inputs for model '{model}'. Got input(s) {}, but \
                 missing required input(s) {}. Please provide all required input(s).",
                sent.len(),
                names(sent, "[]"),
                names(missing, "]"),
            )
        }
        Mismatch::NoBatchDimension { input } => format!(
            "{at}input '{input}' has no shape but model requires batch dimension for '{model}'"
        ),
        Mismatch::BatchSizes { input } => {
            format!("{at}input '{input}' batch size does not match other inputs for '{model}'")
        }
        Mismatch::BatchTooLarge { max } => {
            format!("{at}inference request batch-size must be <= {max} for '{model}'")
        }
        Mismatch::Datatype {
            input,
            sent,
            declared,
        } => format!(
            "{at}inference input '{input}' data-type is '{sent}', but model '{model}' expects \
             '{declared}'"
        ),
        Mismatch::Shape {
            input,
            expected,
            sent,
            batching,
        } => {
            let note = if *batching {
                "NOTE: Setting a non-zero max_batch_size in the model config requires a batch \
                 dimension to be prepended to each input shape. If you want to specify the \
                 full shape including the batch dim in your input dims config, try setting \
                 max_batch_size to zero. See the model configuration docs for more info on \
                 max_batch_size."
            } else {
                ""
            };
            format!(
                "{at}unexpected shape for input '{input}' for model '{model}'. Expected {}, \
                 got {}. {note}",
                dims(expected),
                dims(sent)
            )
        }
    }
}

/// One family's `# HELP` and `# TYPE` lines.
fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = write!(out, "# HELP {name} {help}\n# TYPE {name} {kind}\n");
}

/// A label value escaped as the text format wants.
fn escaped(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// A per-model series' value.
type Value = fn(&ModelSeries) -> u64;

/// The per-model counters after the failures, in the order Triton registers them, with
/// its help texts.
const COUNTERS: [(&str, &str, Value); 7] = [
    (
        "nv_inference_count",
        "Number of inferences performed (does not include cached requests)",
        |m| m.stats.success.0,
    ),
    (
        "nv_inference_exec_count",
        "Number of model executions performed (does not include cached requests)",
        |m| m.stats.executions,
    ),
    (
        "nv_inference_request_duration_us",
        "Cumulative inference request duration in microseconds (includes cached requests)",
        |m| m.stats.success.1 / 1000,
    ),
    (
        "nv_inference_queue_duration_us",
        "Cumulative inference queuing duration in microseconds (includes cached requests)",
        |m| m.stats.queue_ns / 1000,
    ),
    // Decoding and encoding happen in the transport, outside the model's timing: 0, as
    // the statistics extension reports them.
    (
        "nv_inference_compute_input_duration_us",
        "Cumulative compute input duration in microseconds (does not include cached \
         requests)",
        |_| 0,
    ),
    (
        "nv_inference_compute_infer_duration_us",
        "Cumulative compute inference duration in microseconds (does not include cached \
         requests)",
        |m| m.stats.compute.1 / 1000,
    ),
    (
        "nv_inference_compute_output_duration_us",
        "Cumulative inference compute output duration in microseconds (does not include \
         cached requests)",
        |_| 0,
    ),
];

/// The per-model families in Triton's order (its counters, then the pending gauge), with
/// its labels (`model`, `version`; `reason` on failures). Triton leaves out a family no
/// model has.
fn render_models(models: &[ModelSeries], out: &mut String) {
    if models.is_empty() {
        return;
    }
    let labels = |m: &ModelSeries| {
        format!(
            "model=\"{}\",version=\"{}\"",
            escaped(&m.name),
            escaped(&m.version)
        )
    };
    let series = |out: &mut String, name: &str, kind: &str, help: &str, value: Value| {
        family(out, name, kind, help);
        for m in models {
            let _ = writeln!(out, "{name}{{{}}} {}", labels(m), value(m));
        }
    };
    series(
        out,
        "nv_inference_request_success",
        "counter",
        "Number of successful inference requests, all batch sizes",
        |m| m.stats.success.0,
    );
    let failure = "nv_inference_request_failure";
    family(
        out,
        failure,
        "counter",
        "Number of failed inference requests, all batch sizes",
    );
    for m in models {
        // In the order tritonserver 2.51 lists them.
        for (why, n) in Failure::ALL.iter().zip(m.failures).rev() {
            let _ = writeln!(
                out,
                "{failure}{{model=\"{}\",reason=\"{}\",version=\"{}\"}} {n}",
                escaped(&m.name),
                why.label(),
                escaped(&m.version)
            );
        }
    }
    for (name, help, value) in COUNTERS {
        series(out, name, "counter", help, value);
    }
    series(
        out,
        "nv_inference_pending_request_count",
        "gauge",
        "Instantaneous number of pending requests awaiting execution per-model.",
        |m| u64::try_from(m.pending).unwrap_or(0),
    );
}

/// Triton's pinned-memory and CPU gauges (no labels). There is no pinned-memory pool
/// (nothing is copied to a GPU): 0, where dashboards expect the series.
fn render_host(host: crate::metrics::host::HostUse, out: &mut String) {
    for (name, help) in [
        (
            "nv_pinned_memory_pool_total_bytes",
            "Pinned memory pool total memory size, in bytes",
        ),
        (
            "nv_pinned_memory_pool_used_bytes",
            "Pinned memory pool used memory size, in bytes",
        ),
    ] {
        family(out, name, "gauge", help);
        let _ = writeln!(out, "{name} 0");
    }
    family(
        out,
        "nv_cpu_utilization",
        "gauge",
        "CPU utilization rate [0.0 - 1.0]",
    );
    let _ = writeln!(out, "nv_cpu_utilization {}", host.cpu_utilization);
    family(
        out,
        "nv_cpu_memory_total_bytes",
        "gauge",
        "CPU total memory (RAM), in bytes",
    );
    let _ = writeln!(out, "nv_cpu_memory_total_bytes {}", host.memory_total_bytes);
    family(
        out,
        "nv_cpu_memory_used_bytes",
        "gauge",
        "CPU used memory (RAM), in bytes",
    );
    let _ = writeln!(out, "nv_cpu_memory_used_bytes {}", host.memory_used_bytes);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::stats::Snapshot;

    fn missing(name: &'static str, version: &'static str, absent: Absent) -> ServeError {
        let e = ServeError::new(Kind::NotFound, "inferwire's words");
        Triton.not_found(
            e,
            &Missing {
                name,
                version,
                absent,
            },
        )
    }

    #[test]
    fn an_unknown_model_as_triton_words_it() {
        let e = missing("foo", "", Absent::Model);
        assert_eq!(
            (e.http_status(), e.grpc_code(), e.message.as_str()),
            (
                404,
                tonic::Code::NotFound,
                "Request for unknown model: 'foo' is not found"
            )
        );
        let e = missing("m", "99", Absent::Version);
        assert_eq!(
            (e.http_status(), e.grpc_code(), e.message.as_str()),
            (
                404,
                tonic::Code::NotFound,
                "Request for unknown model: 'm' version 99 is not found"
            )
        );
        let e = missing("m", "", Absent::NotLoaded);
        assert_eq!(
            (e.http_status(), e.message.as_str()),
            (
                404,
                "Request for unknown model: 'm' has no available versions"
            )
        );
        let e = missing("m", "1", Absent::NotLoaded);
        assert_eq!(
            (e.http_status(), e.grpc_code(), e.message.as_str()),
            (
                503,
                tonic::Code::Unavailable,
                "Request for unknown model: 'm' version 1 is not at ready state"
            )
        );
        let e = missing("m", "v1", Absent::Version);
        assert_eq!(e.http_status(), 400);
        assert!(e
            .message
            .starts_with("failed to get model version from specified version string 'v1'"));
        // A load on request that failed is not a lookup's miss: left as it is.
        let failed = ServeError::new(Kind::Model, "load failed");
        let e = Triton.not_found(
            failed,
            &Missing {
                name: "m",
                version: "",
                absent: Absent::Model,
            },
        );
        assert_eq!(e.message, "load failed");
    }

    #[test]
    fn decoding_errors_in_tritons_words() {
        let json = CodecError::bad_request("invalid JSON: ...").because(Cause::Json {
            offset: 0,
            reason: "EOF while parsing a value".into(),
            after: None,
        });
        let e = Triton.invalid_rest(json, "m");
        assert_eq!(
            (e.http_status(), e.message.as_str()),
            (
                500,
                "failed to parse the request JSON buffer: The document is empty. at 0"
            )
        );
        assert_eq!(rapidjson_words("expected value", 3, None), "Invalid value.");
        // At the end of the body: what rapidjson owed next.
        let eof_list = "EOF while parsing a list";
        assert_eq!(rapidjson_words(eof_list, 12, Some(b'[')), "Invalid value.");
        assert_eq!(
            rapidjson_words(eof_list, 13, Some(b'1')),
            "Missing a comma or ']' after an array element."
        );
        let eof_object = "EOF while parsing an object";
        assert_eq!(
            rapidjson_words(eof_object, 1, Some(b'{')),
            "Missing a name for object member."
        );
        assert_eq!(rapidjson_words(eof_object, 6, Some(b':')), "Invalid value.");
        let missing = CodecError::bad_request("...").because(Cause::MissingField {
            field: "inputs".into(),
        });
        let e = Triton.invalid_rest(missing, "m");
        assert_eq!(
            (e.http_status(), e.message.as_str()),
            (
                500,
                "Unable to parse 'inputs': attempt to access non-existing object member \
                 'inputs'"
            )
        );
        let size = CodecError::bad_request("...").because(Cause::DataSize {
            input: "INPUT0".into(),
            expected: 64,
            got: 60,
        });
        assert_eq!(
            Triton.invalid_grpc(size, "simple").message,
            "[request id: <id_unknown>] input byte size mismatch for input 'INPUT0' for \
             model 'simple'. Expected 64, got 60"
        );
        let short = CodecError::bad_request("...").because(Cause::BinaryShort {
            input: "x".into(),
            missing: 4,
        });
        assert_eq!(
            Triton.invalid_rest(short, "m").message,
            "unexpected size for input 'x', expecting 4 additional bytes for model 'm'"
        );
        let plain = CodecError::bad_request("inputs[0].shape: bad");
        assert_eq!(
            Triton.invalid_rest(plain, "m").message,
            "inputs[0].shape: bad"
        );
    }

    #[test]
    fn mismatches_in_tritons_words() {
        let shape = Mismatch::Shape {
            input: "INPUT0".into(),
            expected: vec![-1, 16],
            sent: vec![1, 8],
            batching: true,
        };
        let e = Triton.mismatch(&shape, "simple", "");
        assert_eq!(e.http_status(), 400);
        assert!(e.message.starts_with(
            "[request id: <id_unknown>] unexpected shape for input 'INPUT0' for model \
             'simple'. Expected [-1,16], got [1,8]. NOTE: Setting a non-zero max_batch_size"
        ));
        let dtype = Mismatch::Datatype {
            input: "INPUT0".into(),
            sent: "FP32",
            declared: "INT32",
        };
        assert_eq!(
            Triton.mismatch(&dtype, "simple", "r1").message,
            "[request id: r1] inference input 'INPUT0' data-type is 'FP32', but model \
             'simple' expects 'INT32'"
        );
        let count = Mismatch::InputCount {
            required: 2,
            declared: 2,
            sent: vec!["INPUT0".into()],
            missing: vec!["INPUT1".into()],
        };
        assert_eq!(
            Triton.mismatch(&count, "simple", "").message,
            "[request id: <id_unknown>] expected 2 inputs but got 1 inputs for model \
             'simple'. Got input(s) ['INPUT0'], but missing required input(s) ['INPUT1']. \
             Please provide all required input(s)."
        );
        let extra = Mismatch::UnexpectedInput {
            input: "INPUT9".into(),
        };
        assert_eq!(
            Triton.mismatch(&extra, "simple", "").message,
            "unexpected inference input 'INPUT9' for model 'simple'"
        );
    }

    #[test]
    fn metrics_as_triton_exports_them() {
        let series = ModelSeries {
            name: "simple".into(),
            version: "1".into(),
            stats: Snapshot {
                success: (3, 9_000_000),
                fail: (2, 10),
                executions: 2,
                compute: (3, 6_000_000),
                queue_ns: 3_000_000,
                last_inference_ms: 1,
            },
            failures: [1, 0, 1, 0],
            pending: 4,
        };
        let metrics = Metrics::shared().unwrap();
        let text = Triton.metrics_text(&[series], &metrics).unwrap();
        for line in [
            "# HELP nv_inference_request_success Number of successful inference requests, \
             all batch sizes\n# TYPE nv_inference_request_success counter\n\
             nv_inference_request_success{model=\"simple\",version=\"1\"} 3\n",
            "nv_inference_request_failure{model=\"simple\",reason=\"BACKEND\",version=\"1\"} 1\n",
            "nv_inference_request_failure{model=\"simple\",reason=\"OTHER\",version=\"1\"} 0\n",
            "nv_inference_exec_count{model=\"simple\",version=\"1\"} 2\n",
            "nv_inference_request_duration_us{model=\"simple\",version=\"1\"} 9000\n",
            "nv_inference_queue_duration_us{model=\"simple\",version=\"1\"} 3000\n",
            "nv_inference_compute_infer_duration_us{model=\"simple\",version=\"1\"} 6000\n",
            "nv_inference_compute_output_duration_us{model=\"simple\",version=\"1\"} 0\n",
            "# TYPE nv_inference_pending_request_count gauge\n\
             nv_inference_pending_request_count{model=\"simple\",version=\"1\"} 4\n",
            "# TYPE nv_cpu_utilization gauge\nnv_cpu_utilization ",
            "# HELP nv_cpu_memory_used_bytes CPU used memory (RAM), in bytes\n",
        ] {
            assert!(text.contains(line), "{line}\n---\n{text}");
        }
        // No model: no per-model family.
        let none = Triton.metrics_text(&[], &metrics).unwrap();
        assert!(!none.contains("nv_inference") && none.contains("nv_cpu_memory_total_bytes"));
    }
}
