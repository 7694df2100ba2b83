//! The Open Inference Protocol (V2) over REST: health, server and model metadata, and
//! `infer` with JSON or the binary tensor extension. Errors are `{"error": "..."}`.
use http::{HeaderValue, Request, StatusCode};
use hyper::body::Incoming;
use inferwire_codec::protocol::v2::{json, InferRequest};
use serde_json::{json, Value};

use super::body::{self, Reply};
use crate::app::App;
use crate::error::{Kind, ServeError};
use crate::metrics::Encoding;
use crate::observe::Observed;

const BINARY_HEADER: &str = "inference-header-content-length";

/// `GET /v2`: the server's metadata.
/// `/v2/docs/dataplane.json`: an OpenAPI document of the V2 routes, where MLServer serves
/// its own.
pub async fn openapi() -> Result<Reply, ServeError> {
    Ok(body::with_type(
        StatusCode::OK,
        bytes::Bytes::from_static(include_bytes!("v2_openapi.json")),
        "application/json",
    ))
}

/// `/v2/docs`: a page that shows that document with Swagger UI (loaded by the browser
/// from its CDN, as MLServer's page loads it).
pub async fn docs_page() -> Result<Reply, ServeError> {
    Ok(body::with_type(
        StatusCode::OK,
        bytes::Bytes::from_static(DOCS_PAGE.as_bytes()),
        "text/html; charset=utf-8",
    ))
}

const DOCS_PAGE: &str = r##"<!doctype html>
<html>
<head>
<meta charset="utf-8">
<title>inferwire: Open Inference Protocol (V2)</title>
<link rel="stylesheet" href="https://cdn.jsdelivr.net/npm/swagger-ui-dist@5/swagger-ui.css">
</head>
<body>
<div id="ui"></div>
<script src="https://cdn.jsdelivr.net/npm/swagger-ui-dist@5/swagger-ui-bundle.js"></script>
<script>SwaggerUIBundle({url: "docs/dataplane.json", dom_id: "#ui"});</script>
</body>
</html>
"##;

pub async fn server(app: &App) -> Result<Reply, ServeError> {
    let id = &app.config.identity;
    Ok(ok(json!({
        "name": id.name,
        "version": id.version,
        "extensions": id.extensions,
    })))
}

pub async fn live(app: &App) -> Result<Reply, ServeError> {
    Ok(match app.not_live_because() {
        None => ok(json!({"live": true})),
        Some(why) => readiness(false, json!({"live": false, "error": why})),
    })
}

pub async fn ready(app: &App) -> Result<Reply, ServeError> {
    Ok(readiness(app.is_ready(), json!({"ready": app.is_ready()})))
}

/// `GET /v2/models/NAME[/versions/VERSION]/ready`: 404 for a model not served.
pub async fn model_ready(app: &App, name: &str, version: &str) -> Result<Reply, ServeError> {
    app.models.servable(name, version).await?;
    Ok(readiness(
        app.is_ready(),
        json!({"name": name, "ready": app.is_ready()}),
    ))
}

/// `GET /v2/models/NAME[/versions/VERSION]`: the model's metadata.
pub async fn model(app: &App, name: &str, version: &str) -> Result<Reply, ServeError> {
    let model = app.model(name, version).await?;
    let as_written = app.config.dialect.metadata_as_written();
    crate::dataplane::model_metadata(&model, as_written)
        .await
        .map(ok)
}

/// `GET /v2/models/stats`, or with a name (and version) one model's: Triton's
/// statistics extension.
pub async fn stats(app: &App, name: &str, version: &str) -> Result<Reply, ServeError> {
    let models = if name.is_empty() {
        app.models.all()
    } else {
        vec![app.models.get(name, version)?]
    };
    Ok(ok(crate::dataplane::statistics(&models)))
}

/// `GET /v2/models/NAME[/versions/VERSION]/config`: Triton's model configuration
/// extension.
pub async fn config(app: &App, name: &str, version: &str) -> Result<Reply, ServeError> {
    let model = app.model(name, version).await?;
    crate::dataplane::model_config(&model).await.map(ok)
}

/// `POST /v2/repository/models/{name}/load`, its body empty or `{"parameters": {...}}`
/// (Triton's `config` and `file:<version>/<path>` overrides, the files in base64).
pub async fn load(app: &App, req: Request<Incoming>, name: &str) -> Result<Reply, ServeError> {
    let body = body::read(app, req, app.config.max_body_bytes).await?;
    let parameters = load_parameters(&body)?;
    app.load_model(name, parameters)
        .await
        .map(|()| ok(json!({})))
}

/// At most this many load parameters (Triton's are `config` and one per file).
const MAX_LOAD_PARAMETERS: usize = 1024;

fn load_parameters(body: &[u8]) -> Result<Value, ServeError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Value::Object(Default::default()));
    }
    let parsed: LoadBody = serde_json::from_slice(body)
        .map_err(|e| ServeError::new(Kind::BadRequest, format!("the load request's body: {e}")))?;
    Ok(Value::Object(
        parsed.parameters.map(|p| p.0).unwrap_or_default(),
    ))
}

/// A load call's body: only `parameters` is read, each a string, number or boolean, at
/// most `MAX_LOAD_PARAMETERS` of them (memory follows the body's size, not its shape).
#[derive(serde::Deserialize)]
struct LoadBody {
    #[serde(default)]
    parameters: Option<LoadParameters>,
}

struct LoadParameters(serde_json::Map<String, Value>);

impl<'de> serde::Deserialize<'de> for LoadParameters {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = LoadParameters;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("parameters: a JSON object of strings, numbers and booleans")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut m: A,
            ) -> Result<Self::Value, A::Error> {
                use serde::de::Error;
                let mut out = serde_json::Map::new();
                while let Some(key) = m.next_key::<String>()? {
                    if out.len() == MAX_LOAD_PARAMETERS {
                        return Err(A::Error::custom(format!(
                            "parameters: more than {MAX_LOAD_PARAMETERS}"
                        )));
                    }
                    let value: Scalar = m.next_value().map_err(|_| {
                        A::Error::custom(format!(
                            "parameters.{key}: must be a string, number or boolean"
                        ))
                    })?;
                    out.insert(key, value.0);
                }
                Ok(LoadParameters(out))
            }
        }
        d.deserialize_map(Visit)
    }
}

/// A parameter's value: nested objects and arrays are refused, not built.
struct Scalar(Value);

impl<'de> serde::Deserialize<'de> for Scalar {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl serde::de::Visitor<'_> for Visit {
            type Value = Scalar;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string, number or boolean")
            }
            fn visit_bool<E>(self, v: bool) -> Result<Scalar, E> {
                Ok(Scalar(Value::Bool(v)))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Scalar, E> {
                Ok(Scalar(v.into()))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Scalar, E> {
                Ok(Scalar(v.into()))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Scalar, E> {
                Ok(Scalar(v.into()))
            }
            fn visit_str<E>(self, v: &str) -> Result<Scalar, E> {
                Ok(Scalar(Value::String(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Scalar, E> {
                Ok(Scalar(Value::String(v)))
            }
        }
        d.deserialize_any(Visit)
    }
}

pub async fn unload(app: &App, name: &str) -> Result<Reply, ServeError> {
    app.unload_model(name).await.map(|()| ok(json!({})))
}

/// `POST /v2/repository/index`, with `{"ready": true}` for the ready models only.
pub async fn repository_index(app: &App, req: Request<Incoming>) -> Result<Reply, ServeError> {
    let body = body::read(app, req, 64 * 1024).await?;
    let ready_only = if body.iter().all(u8::is_ascii_whitespace) {
        false
    } else {
        let v: Value = serde_json::from_slice(&body)
            .map_err(|e| ServeError::new(Kind::BadRequest, format!("invalid JSON: {e}")))?;
        match v.get("ready") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(other) => {
                return Err(ServeError::new(
                    Kind::BadRequest,
                    format!("ready: must be true or false, got {other}"),
                ))
            }
        }
    };
    let index = app.models.index().await?;
    Ok(ok(Value::Array(
        index
            .into_iter()
            .filter(|m| !ready_only || m["state"] == "READY")
            .collect(),
    )))
}

fn ok(v: Value) -> Reply {
    body::json(StatusCode::OK, serde_json::to_vec(&v).unwrap_or_default())
}

fn readiness(ready: bool, v: Value) -> Reply {
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    body::json(status, serde_json::to_vec(&v).unwrap_or_default())
}

/// V2's error body: `{"error": ...}`; a request that does not validate (422, MLServer's
/// answer) has FastAPI's `detail` beside it, as MLServer's clients read it.
pub fn error(e: &ServeError) -> Reply {
    let status = StatusCode::from_u16(e.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let v = if e.kind == Kind::Unprocessable {
        crate::dialect::validation_body(&e.message)
    } else {
        json!({"error": e.message})
    };
    let mut r = body::json(status, serde_json::to_vec(&v).unwrap_or_default());
    body::for_kind(&mut r, e.kind);
    r
}

pub async fn infer(
    app: &App,
    req: Request<Incoming>,
    name: &str,
    version: &str,
    obs: &mut Observed,
) -> Result<Reply, ServeError> {
    let model = app.model(name, version).await?;
    obs.model = model.slot;
    obs.served_by(&model.name, &model.version);
    let began = obs.clock();
    let mut request = decode(app, req, &model.name, obs).await?;
    obs.part("decode", began);
    obs.pass_context(&mut request.parameters);
    let binary = request.binary_outputs();
    let deadline = app.deadline(obs.start, None);
    let began = obs.clock();
    let timing = obs.call_timing();
    let call = crate::dataplane::infer_timed(app, &model, request, deadline, timing.clone());
    let mut response = call.await?;
    obs.infer_part(began, timing.as_ref());
    let began = obs.clock();
    let headers = app.config.dialect.reply_headers(&mut response);
    let mut out = Vec::with_capacity(256);
    let blobs = json::encode_response(&response, |name| binary.wants(name), &mut out)?;
    obs.part("encode", began);
    let mut r = if blobs.is_empty() {
        body::json(StatusCode::OK, out)
    } else {
        let json_len = out.len();
        for b in blobs {
            out.extend_from_slice(&b);
        }
        let mut r = body::with_type(StatusCode::OK, out.into(), "application/octet-stream");
        r.headers_mut().insert(
            BINARY_HEADER,
            HeaderValue::from_str(&json_len.to_string()).unwrap_or(HeaderValue::from_static("0")),
        );
        r
    };
    add_headers(&mut r, headers);
    Ok(r)
}

/// An inference reply's headers (`Dialect::reply_headers`); one that is not a valid header
/// is left out.
pub(super) fn add_headers(r: &mut Reply, headers: Vec<(String, String)>) {
    for (name, value) in headers {
        let name = http::HeaderName::from_bytes(name.to_ascii_lowercase().as_bytes());
        if let (Ok(name), Ok(v)) = (name, HeaderValue::from_str(&value)) {
            r.headers_mut().insert(name, v);
        }
    }
}

/// Reads a V2 inference request: JSON, or JSON and binary data with
/// `Inference-Header-Content-Length`; inputs may be in shared-memory regions. What the
/// dialect adds is added (`Dialect::prepare`).
pub(super) async fn decode(
    app: &App,
    req: Request<Incoming>,
    model: &str,
    obs: &mut Observed,
) -> Result<InferRequest, ServeError> {
    let headers = app.config.dialect.headers_for_model(req.headers());
    let header_len = match req.headers().get(BINARY_HEADER) {
        None => None,
        Some(v) => Some(
            v.to_str()
                .ok()
                .and_then(|s| s.trim().parse::<usize>().ok())
                .ok_or_else(|| {
                    ServeError::new(
                        Kind::BadRequest,
                        format!("Inference-Header-Content-Length: {v:?} is not a byte count"),
                    )
                })?,
        ),
    };
    obs.encoding = if header_len.is_some() {
        Encoding::Binary
    } else {
        Encoding::Json
    };
    let body = body::read(app, req, app.config.max_body_bytes).await?;
    let mut request = json::decode_request_with(
        body,
        header_len,
        &app.config.limits,
        &app.shared_memory.reader(app.config.max_body_bytes),
    )
    .map_err(|e| app.config.dialect.invalid_rest(e, model))?;
    app.config.dialect.prepare(&mut request, headers);
    if obs.id.is_empty() {
        obs.id.clone_from(&request.id);
    }
    Ok(request)
}
