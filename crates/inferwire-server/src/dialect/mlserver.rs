//! MLServer's dialect of the V2 dataplane (`v2_dialect: mlserver`, what `inferwire start`
//! speaks). Where MLServer answers differently from Triton, its clients, tests and
//! dashboards expect its answers: "Model NAME with version V not found", FastAPI's 422
//! body, a uuid for a request that came without an id, CloudEvents headers on every
//! inference reply, and the request's headers handed to the model as
//! `parameters.headers`. The request path reaches these through
//! `Dialect`; nothing here is on the path of the default dialect.
use http::HeaderMap;
use serde_json::{json, Map, Value};

use inferwire_codec::protocol::v2::{InferRequest, InferResponse};
use inferwire_codec::CodecError;

use super::{Dialect, Missing};
use crate::error::{Kind, ServeError};

/// MLServer's answers, with the CloudEvents headers of the server it is made for.
#[derive(Debug, Clone)]
pub struct Mlserver {
    events: CloudEvents,
}

impl Mlserver {
    pub fn new(server_name: &str) -> Self {
        Self {
            events: CloudEvents::new(server_name),
        }
    }
}

impl Dialect for Mlserver {
    fn name(&self) -> &'static str {
        "mlserver"
    }

    fn not_found(&self, e: ServeError, missing: &Missing<'_>) -> ServeError {
        model_not_found(e, missing.name, missing.version)
    }

    /// MLServer's "Model NAME not found" (404, where Triton answers 400).
    fn unknown_load(&self, name: &str) -> Option<ServeError> {
        Some(model_not_found(
            ServeError::new(Kind::NotFound, ""),
            name,
            "",
        ))
    }

    fn unloads_default(&self) -> bool {
        true
    }

    /// MLServer answers `versions`, `inputs` and `outputs` as the settings write them
    /// ("sum-model/v1.2.3", each input's content type).
    fn metadata_as_written(&self) -> bool {
        true
    }

    fn headers_for_model(&self, headers: &HeaderMap) -> Option<Value> {
        Some(request_headers(headers))
    }

    /// A uuid where the request had no id, and the headers `headers_for_model` took.
    fn prepare(&self, req: &mut InferRequest, headers: Option<Value>) {
        if req.id.is_empty() {
            req.id = crate::uuid::v4();
        }
        if let Some(h) = headers {
            req.parameters.insert("headers".to_owned(), h);
        }
    }

    fn stream_request_id(&self) -> Option<String> {
        Some(crate::uuid::v4())
    }

    /// A bad datatype worded as MLServer words it; anything else as it is.
    fn invalid_grpc(&self, e: CodecError, _model: &str) -> ServeError {
        let e = ServeError::from(e);
        match grpc_validation_message(&e.message) {
            Some(message) => ServeError::new(e.kind, message),
            None => e,
        }
    }

    /// The response's `parameters.headers` (taken out of the parameters, as MLServer
    /// takes them), then its CloudEvents headers.
    fn reply_headers(&self, response: &mut InferResponse) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = match response.parameters.remove("headers") {
            Some(Value::Object(given)) => given
                .into_iter()
                .filter(|(k, _)| model_may_set(k))
                .filter_map(|(k, v)| Some((k, v.as_str()?.to_owned())))
                .collect(),
            _ => Vec::new(),
        };
        let events = self.events.headers(&response.model_name, &response.id);
        out.extend(events.into_iter().map(|(k, v)| (k.to_owned(), v)));
        out
    }
}

/// MLServer's `ModelNotFound`, for a lookup that found no such model (or version).
fn model_not_found(e: ServeError, name: &str, version: &str) -> ServeError {
    if e.kind != Kind::NotFound {
        return e;
    }
    let message = if version.is_empty() {
        format!("Model {name} not found")
    } else {
        format!("Model {name} with version {version} not found")
    };
    ServeError::new(Kind::NotFound, message)
}

/// MLServer's datatypes, as its schema's enum lists them (no BF16).
const DATATYPES: [&str; 13] = [
    "BOOL", "UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16", "INT32", "INT64", "FP16",
    "FP32", "FP64", "BYTES",
];

/// pydantic's words for a value outside MLServer's datatype enum.
fn datatype_message() -> String {
    let quoted: Vec<String> = DATATYPES.iter().map(|d| format!("'{d}'")).collect();
    let (last, rest) = quoted.split_last().expect("not empty");
    format!("Input should be {} or {last}", rest.join(", "))
}

/// A decoding error's field path and what is wrong with it: inferwire's messages start
/// with the field (`inputs[0].datatype: ...`).
fn split_field(message: &str) -> (Option<&str>, &str) {
    match message.split_once(": ") {
        Some((field, rest))
            if !field.is_empty()
                && field
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_.[]-".contains(c)) =>
        {
            (Some(field), rest)
        }
        _ => (None, message),
    }
}

/// `inputs[0].datatype` as FastAPI's `loc`: `["body", "inputs", 0, "datatype"]`.
fn location(field: &str) -> Vec<Value> {
    let mut loc = vec![Value::from("body")];
    for part in field.split('.') {
        let mut pieces = part.split('[');
        if let Some(name) = pieces.next().filter(|n| !n.is_empty()) {
            loc.push(Value::from(name));
        }
        for index in pieces {
            let index = index.trim_end_matches(']');
            loc.push(
                index
                    .parse::<u64>()
                    .map_or_else(|_| Value::from(index), Value::from),
            );
        }
    }
    loc
}

/// The value a "not a V2 datatype" message quotes.
fn quoted_value(rest: &str) -> Option<String> {
    let start = rest.find('"')?;
    let tail = &rest[start..];
    serde_json::Deserializer::from_str(tail)
        .into_iter::<String>()
        .next()?
        .ok()
}

/// FastAPI's 422 body for a request that does not validate, as MLServer answers one:
/// `{"detail": [{"type", "loc", "msg", "input"}]}` (inferwire's `error` beside it).
pub fn validation_body(message: &str) -> Value {
    let (field, rest) = split_field(message);
    let item = match field {
        Some(field) if field.ends_with("datatype") && rest.contains("not a V2 datatype") => {
            json!({
                "type": "enum",
                "loc": location(field),
                "msg": datatype_message(),
                "input": quoted_value(rest),
                "ctx": {"expected": datatype_message().trim_start_matches("Input should be ")},
            })
        }
        Some(field) => json!({"type": "value_error", "loc": location(field), "msg": rest}),
        None => json!({"type": "value_error", "loc": ["body"], "msg": message}),
    };
    json!({"error": message, "detail": [item]})
}

/// The gRPC status message MLServer gives a request with an unknown datatype (pydantic's
/// validation error, as its converter raises it); `None` for any other error.
fn grpc_validation_message(message: &str) -> Option<String> {
    let (field, rest) = split_field(message);
    if !field?.ends_with("datatype") || !rest.contains("not a V2 datatype") {
        return None;
    }
    let value = quoted_value(rest)?;
    let literal = serde_json::to_string(&value).ok()?;
    let literal = format!("'{}'", &literal[1..literal.len() - 1]);
    Some(format!(
        "1 validation error for RequestInput\ndatatype\n  {} [type=enum, input_value={literal}, \
         input_type=str]\n    For further information visit https://errors.pydantic.dev/2.9/v/enum",
        datatype_message()
    ))
}

/// Headers no model gets: inferwire's own credentials and hop-by-hop framing.
const KEPT_FROM_MODELS: [&str; 4] = ["authorization", "cookie", "connection", "te"];

/// The request's headers as `parameters.headers` (MLServer hands them to the model so):
/// lowercase names, text values; binary gRPC metadata (`-bin`) is left out.
fn request_headers(headers: &HeaderMap) -> Value {
    let mut out = Map::new();
    for (name, value) in headers {
        let name = name.as_str();
        if KEPT_FROM_MODELS.contains(&name) || name.ends_with("-bin") || name.starts_with(':') {
            continue;
        }
        if let Ok(v) = value.to_str() {
            out.insert(name.to_owned(), Value::from(v));
        }
    }
    Value::Object(out)
}

/// Whether a model's response header (`parameters.headers`) may be sent: not one that
/// frames the reply or its connection (a model echoing every request header would
/// otherwise send the request's `content-length`), nor gRPC's own.
fn model_may_set(name: &str) -> bool {
    const FRAMING: [&str; 10] = [
        "content-length",
        "content-type",
        "content-encoding",
        "transfer-encoding",
        "connection",
        "keep-alive",
        "upgrade",
        "te",
        "trailer",
        "host",
    ];
    let name = name.to_ascii_lowercase();
    !(FRAMING.contains(&name.as_str()) || name.starts_with("grpc-") || name.starts_with(':'))
}

/// MLServer's CloudEvents headers on an inference reply: what the event is, the server
/// that sent it and the model, keyed by the request's id.
#[derive(Debug, Clone)]
struct CloudEvents {
    source: String,
    server: String,
    namespace: Option<String>,
}

/// Where Kubernetes mounts the pod's namespace (MLServer reads it there too).
const NAMESPACE_FILE: &str = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

impl CloudEvents {
    fn new(server_name: &str) -> Self {
        let namespace = std::fs::read_to_string(NAMESPACE_FILE)
            .ok()
            .map(|n| n.trim().to_owned())
            .filter(|n| !n.is_empty());
        let mut source = format!("io.seldon.serving.deployment.{server_name}");
        if let Some(ns) = &namespace {
            source = format!("{source}.{ns}");
        }
        Self {
            source,
            server: server_name.to_owned(),
            namespace,
        }
    }

    /// The headers (names as MLServer writes them; HTTP/2 and gRPC lowercase them).
    fn headers(&self, model: &str, id: &str) -> Vec<(&'static str, String)> {
        let mut out = vec![
            ("Ce-Specversion", "0.3".to_owned()),
            ("Ce-Source", self.source.clone()),
            ("Ce-Type", "io.seldon.serving.inference.response".to_owned()),
            ("Ce-Modelid", model.to_owned()),
            ("Ce-Inferenceservicename", self.server.clone()),
            ("Ce-Endpoint", model.to_owned()),
        ];
        if !id.is_empty() {
            out.push(("Ce-Id", id.to_owned()));
            out.push(("Ce-Requestid", id.to_owned()));
        }
        if let Some(ns) = &self.namespace {
            out.push(("Ce-Namespace", ns.clone()));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_found_as_mlserver_words_it() {
        let e = ServeError::new(Kind::NotFound, "no model");
        assert_eq!(
            model_not_found(e.clone(), "my-model", "v0").message,
            "Model my-model with version v0 not found"
        );
        assert_eq!(
            model_not_found(e, "my-model", "").message,
            "Model my-model not found"
        );
        let other = ServeError::new(Kind::Model, "load failed");
        assert_eq!(model_not_found(other, "m", "").message, "load failed");
    }

    #[test]
    fn a_bad_datatype_as_fastapi_and_pydantic_report_it() {
        let m = "inputs[0].datatype: \"INT322\" is not a V2 datatype (BOOL, UINT8)";
        let body = validation_body(m);
        let d = &body["detail"][0];
        assert_eq!(d["loc"], json!(["body", "inputs", 0, "datatype"]));
        assert_eq!(d["input"], "INT322");
        assert_eq!(
            d["msg"],
            "Input should be 'BOOL', 'UINT8', 'UINT16', 'UINT32', 'UINT64', 'INT8', \
             'INT16', 'INT32', 'INT64', 'FP16', 'FP32', 'FP64' or 'BYTES'"
        );
        assert_eq!(body["error"], m);
        let g = grpc_validation_message(m).unwrap();
        assert!(g.starts_with("1 validation error for RequestInput\ndatatype\n  Input should"));
        assert!(g.contains("[type=enum, input_value='INT322', input_type=str]"));
        let other = validation_body("invalid JSON: expected value at line 1");
        assert_eq!(other["detail"][0]["loc"], json!(["body"]));
        assert_eq!(grpc_validation_message("inputs[0].shape: bad"), None);
    }

    #[test]
    fn a_model_cannot_reframe_its_reply() {
        assert!(model_may_set("x-foo"));
        for name in [
            "Content-Length",
            "transfer-encoding",
            "grpc-status",
            ":status",
            "te",
        ] {
            assert!(!model_may_set(name), "{name}");
        }
    }

    #[test]
    fn credentials_stay_out_of_the_models_headers() {
        let mut h = HeaderMap::new();
        h.insert("x-foo", "bar".parse().unwrap());
        h.insert("authorization", "Bearer secret".parse().unwrap());
        h.insert("trace-bin", "AAEC".parse().unwrap());
        assert_eq!(request_headers(&h), json!({"x-foo": "bar"}));
    }
}
