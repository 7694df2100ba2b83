//! Triton's dialect over the wire: a server on 127.0.0.1 with `v2_dialect: triton` and
//! Triton's identity, serving a model with Triton's configuration of its `simple` example
//! (two INT32 inputs of 16, batching up to 8), answers as Triton 2.5x does: its error
//! messages and statuses over REST and gRPC, raw gRPC replies, its `nv_*` metrics, and its
//! trace and logging extensions.
mod common;

use std::sync::Arc;

use common::{http, http_with, server_config, Server};
use http::StatusCode;
use inferwire_codec::pb::inference as pb;
use inferwire_codec::protocol::v2::{InferOutput, InferRequest};
use inferwire_codec::{Tensor, TensorData};
use inferwire_server::config::ServerIdentity;
use inferwire_server::{dialect, Inferred, Model, ModelError, ServerConfig};
use serde_json::{json, Value};

/// Triton's `simple` example: OUTPUT0 = INPUT0 + INPUT1, OUTPUT1 = INPUT0 - INPUT1. A
/// request whose id is "raise" fails in the model.
struct Simple;

impl Model for Simple {
    fn infer(&self, request: InferRequest) -> Result<Inferred, ModelError> {
        if request.id == "raise" {
            return Err(ModelError {
                kind: inferwire_server::ModelErrorKind::Raised,
                message: "the model raised".into(),
                body: None,
            });
        }
        let ints = |i: usize| match &request.inputs[i].tensor.data {
            TensorData::I32(v) => v.clone(),
            other => panic!("{other:?}"),
        };
        let (a, b) = (ints(0), ints(1));
        let shape = request.inputs[0].tensor.shape.clone();
        let out = |name: &str, v: Vec<i32>| InferOutput {
            name: name.into(),
            tensor: Tensor::new(shape.clone(), TensorData::I32(v)).unwrap(),
            parameters: Default::default(),
        };
        Ok(vec![
            out("OUTPUT0", a.iter().zip(&b).map(|(x, y)| x + y).collect()),
            out("OUTPUT1", a.iter().zip(&b).map(|(x, y)| x - y).collect()),
        ]
        .into())
    }

    fn config(&self) -> Option<Value> {
        Some(json!({
            "name": "simple",
            "platform": "python",
            "max_batch_size": 8,
            "input": [
                {"name": "INPUT0", "data_type": "TYPE_INT32", "dims": [16]},
                {"name": "INPUT1", "data_type": "TYPE_INT32", "dims": [16]},
            ],
            "output": [
                {"name": "OUTPUT0", "data_type": "TYPE_INT32", "dims": [16]},
                {"name": "OUTPUT1", "data_type": "TYPE_INT32", "dims": [16]},
            ],
        }))
    }
}

fn triton_config() -> ServerConfig {
    let mut config = server_config();
    config.dialect = dialect::by_name("triton", "triton").unwrap();
    config.model_name = "simple".into();
    config.model_version = "1".into();
    config.identity = ServerIdentity {
        name: "triton".into(),
        version: "2.51.0".into(),
        extensions: ["classification", "statistics", "trace", "logging"]
            .map(String::from)
            .to_vec(),
    };
    config
}

fn triton() -> Server {
    Server::start(Arc::new(Simple), triton_config())
}

fn input(name: &str, shape: &[usize], datatype: &str, data: Value) -> Value {
    json!({"name": name, "shape": shape, "datatype": datatype, "data": data})
}

fn ones(n: usize) -> Value {
    Value::from(vec![1; n])
}

/// A request for `simple` with these inputs.
fn body(inputs: Vec<Value>) -> String {
    json!({ "inputs": inputs }).to_string()
}

async fn post(server: &Server, path: &str, body: &str) -> (StatusCode, Value) {
    let (status, text) = http(server.http, "POST", path, body).await;
    let v = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    (status, v)
}

/// The error a request gets, as (status, message).
async fn refused(server: &Server, path: &str, body: &str) -> (u16, String) {
    let (status, v) = post(server, path, body).await;
    (
        status.as_u16(),
        v["error"].as_str().unwrap_or_default().to_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_as_triton_words_them_over_rest() {
    let server = triton();
    let good = body(vec![
        input("INPUT0", &[1, 16], "INT32", ones(16)),
        input("INPUT1", &[1, 16], "INT32", ones(16)),
    ]);
    let (status, v) = post(&server, "/v2/models/simple/infer", &good).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(v["outputs"][0]["data"], Value::from(vec![2; 16]));

    assert_eq!(
        refused(&server, "/v2/models/nope/infer", &good).await,
        (404, "Request for unknown model: 'nope' is not found".into())
    );
    assert_eq!(
        refused(&server, "/v2/models/simple/versions/2/infer", &good).await,
        (
            404,
            "Request for unknown model: 'simple' version 2 is not found".into()
        )
    );
    let (status, message) = refused(
        &server,
        "/v2/models/simple/infer",
        &body(vec![
            input("INPUT0", &[1, 8], "INT32", ones(8)),
            input("INPUT1", &[1, 16], "INT32", ones(16)),
        ]),
    )
    .await;
    assert_eq!(status, 400);
    assert!(
        message.starts_with(
            "[request id: <id_unknown>] unexpected shape for input 'INPUT0' for model \
             'simple'. Expected [-1,16], got [1,8]. NOTE: Setting a non-zero max_batch_size"
        ),
        "{message}"
    );
    assert_eq!(
        refused(
            &server,
            "/v2/models/simple/infer",
            &body(vec![
                input("INPUT0", &[1, 16], "FP32", ones(16)),
                input("INPUT1", &[1, 16], "INT32", ones(16)),
            ]),
        )
        .await,
        (
            400,
            "[request id: <id_unknown>] inference input 'INPUT0' data-type is 'FP32', but \
             model 'simple' expects 'INT32'"
                .into()
        )
    );
    assert_eq!(
        refused(
            &server,
            "/v2/models/simple/infer",
            &body(vec![
                input("INPUT0", &[1, 16], "INT32", ones(16)),
                input("INPUT9", &[1, 16], "INT32", ones(16)),
            ]),
        )
        .await,
        (
            400,
            "unexpected inference input 'INPUT9' for model 'simple'".into()
        )
    );
    assert_eq!(
        refused(
            &server,
            "/v2/models/simple/infer",
            &body(vec![input("INPUT0", &[1, 16], "INT32", ones(16))]),
        )
        .await,
        (
            400,
            "[request id: <id_unknown>] expected 2 inputs but got 1 inputs for model \
             'simple'. Got input(s) ['INPUT0'], but missing required input(s) ['INPUT1']. \
             Please provide all required input(s)."
                .into()
        )
    );
    assert_eq!(
        refused(&server, "/v2/models/simple/infer", "{\"id\": \"a\"").await,
        (
            500,
            "failed to parse the request JSON buffer: Missing a comma or '}' after an object \
             member. at 10"
                .into()
        )
    );
    assert_eq!(
        refused(&server, "/v2/models/simple/infer", "inputs").await,
        (
            500,
            "failed to parse the request JSON buffer: Invalid value. at 0".into()
        )
    );
    // What tritonserver 2.51 answers to each of these (checked side by side).
    for (body, message) in [
        (
            "{\"inputs\": [",
            "failed to parse the request JSON buffer: Invalid value. at 12",
        ),
        (
            "{} x",
            "failed to parse the request JSON buffer: The document root must not be followed \
             by other values. at 3",
        ),
        (
            "{bad",
            "failed to parse the request JSON buffer: Missing a name for object member. at 1",
        ),
        (
            "{}",
            "Unable to parse 'inputs': attempt to access non-existing object member 'inputs'",
        ),
    ] {
        assert_eq!(
            refused(&server, "/v2/models/simple/infer", body).await,
            (500, message.to_owned()),
            "{body}"
        );
    }
    assert_eq!(
        refused(&server, "/v2/models/simple/infer", "").await,
        (
            500,
            "failed to parse the request JSON buffer: The document is empty. at 0".into()
        )
    );

    // Binary data of the wrong size for its datatype and shape.
    let header = json!({"inputs": [
        {"name": "INPUT0", "shape": [1, 16], "datatype": "INT32",
         "parameters": {"binary_data_size": 60}},
        {"name": "INPUT1", "shape": [1, 16], "datatype": "INT32",
         "parameters": {"binary_data_size": 64}},
    ]})
    .to_string();
    let mut raw = header.clone().into_bytes();
    raw.extend(std::iter::repeat_n(0u8, 124));
    let raw = String::from_utf8(raw).unwrap();
    let len = header.len().to_string();
    let (status, _, text) = http_with(
        server.http,
        "POST",
        "/v2/models/simple/infer",
        &raw,
        &[("inference-header-content-length", &len)],
    )
    .await;
    assert_eq!(status.as_u16(), 400, "{text}");
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap()["error"],
        "[request id: <id_unknown>] input byte size mismatch for input 'INPUT0' for model \
         'simple'. Expected 64, got 60"
    );
}

/// A `ModelInferRequest` for `simple`, typed.
fn grpc_request(model: &str) -> pb::ModelInferRequest {
    let tensor = |name: &str| pb::model_infer_request::InferInputTensor {
        name: name.into(),
        datatype: "INT32".into(),
        shape: vec![1, 16],
        contents: Some(pb::InferTensorContents {
            int_contents: vec![3; 16],
            ..Default::default()
        }),
        ..Default::default()
    };
    pb::ModelInferRequest {
        model_name: model.into(),
        inputs: vec![tensor("INPUT0"), tensor("INPUT1")],
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_replies_raw_and_errors_in_tritons_words() {
    let server = triton();
    let mut client = common::grpc(server.grpc).await;
    const INFER: &str = "/inference.GRPCInferenceService/ModelInfer";
    let reply: pb::ModelInferResponse = common::unary(&mut client, INFER, grpc_request("simple"))
        .await
        .unwrap();
    assert_eq!(reply.raw_output_contents.len(), 2, "{reply:?}");
    assert!(reply.outputs.iter().all(|o| o.contents.is_none()));
    assert_eq!(&reply.raw_output_contents[0][..4], &6i32.to_le_bytes());

    let e = common::unary::<_, pb::ModelInferResponse>(&mut client, INFER, grpc_request("nope"))
        .await
        .unwrap_err();
    assert_eq!(
        (e.code(), e.message()),
        (
            tonic::Code::NotFound,
            "Request for unknown model: 'nope' is not found"
        )
    );
    let mut short = grpc_request("simple");
    short.inputs.truncate(1);
    let e = common::unary::<_, pb::ModelInferResponse>(&mut client, INFER, short)
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::InvalidArgument);
    assert!(
        e.message().contains("expected 2 inputs but got 1 inputs"),
        "{e:?}"
    );

    let meta: pb::ServerMetadataResponse = common::unary(
        &mut client,
        "/inference.GRPCInferenceService/ServerMetadata",
        pb::ServerMetadataRequest {},
    )
    .await
    .unwrap();
    assert_eq!(
        (meta.name.as_str(), meta.version.as_str()),
        ("triton", "2.51.0")
    );
    assert!(meta.extensions.contains(&"trace".to_owned()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_metadata_is_tritons() {
    let server = triton();
    let (status, text) = http(server.http, "GET", "/v2", "").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap(),
        json!({"name": "triton", "version": "2.51.0",
               "extensions": ["classification", "statistics", "trace", "logging"]})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_metrics_page_starts_with_tritons_series() {
    let server = triton();
    let good = body(vec![
        input("INPUT0", &[1, 16], "INT32", ones(16)),
        input("INPUT1", &[1, 16], "INT32", ones(16)),
    ]);
    for _ in 0..3 {
        assert_eq!(
            post(&server, "/v2/models/simple/infer", &good).await.0,
            StatusCode::OK
        );
    }
    let raising = json!({"id": "raise", "inputs": [
        input("INPUT0", &[1, 16], "INT32", ones(16)),
        input("INPUT1", &[1, 16], "INT32", ones(16)),
    ]})
    .to_string();
    let (status, _) = post(&server, "/v2/models/simple/infer", &raising).await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);

    let (status, text) = http(server.http, "GET", "/metrics", "").await;
    assert_eq!(status, StatusCode::OK);
    let labels = "{model=\"simple\",version=\"1\"}";
    for line in [
        "# HELP nv_inference_request_success Number of successful inference requests, all \
         batch sizes\n# TYPE nv_inference_request_success counter\n"
            .to_owned(),
        format!("nv_inference_request_success{labels} 3\n"),
        "nv_inference_request_failure{model=\"simple\",reason=\"BACKEND\",version=\"1\"} 1\n"
            .to_owned(),
        "nv_inference_request_failure{model=\"simple\",reason=\"REJECTED\",version=\"1\"} 0\n"
            .to_owned(),
        format!("nv_inference_count{labels} 3\n"),
        format!("nv_inference_exec_count{labels} 4\n"),
        format!("nv_inference_pending_request_count{labels} 0\n"),
        "# TYPE nv_cpu_utilization gauge\nnv_cpu_utilization ".to_owned(),
        "# TYPE nv_cpu_memory_total_bytes gauge\n".to_owned(),
    ] {
        assert!(text.contains(&line), "{line}\n---\n{text}");
    }
    for name in [
        "nv_inference_request_duration_us",
        "nv_inference_queue_duration_us",
        "nv_inference_compute_input_duration_us",
        "nv_inference_compute_infer_duration_us",
        "nv_inference_compute_output_duration_us",
    ] {
        assert!(
            text.contains(&format!("# TYPE {name} counter\n{name}{labels} ")),
            "{name}"
        );
    }
    // Triton's series first, inferwire's after them.
    let nv = text.find("nv_inference_request_success").unwrap();
    let own = text.find("inferwire_requests_total").unwrap();
    assert!(nv < own);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_dialect_keeps_its_own_answers() {
    let mut config = triton_config();
    config.dialect = dialect::default();
    let server = Server::start(Arc::new(Simple), config);
    let good = body(vec![
        input("INPUT0", &[1, 16], "INT32", ones(16)),
        input("INPUT1", &[1, 16], "INT32", ones(16)),
    ]);
    let (status, message) = refused(&server, "/v2/models/nope/infer", &good).await;
    assert_eq!(status, 404, "{message}");
    // The configuration is checked in every dialect, in inferwire's words here.
    let (status, message) = refused(
        &server,
        "/v2/models/simple/infer",
        &body(vec![input("INPUT0", &[1, 16], "INT32", ones(16))]),
    )
    .await;
    assert_eq!(status, 400);
    assert!(message.contains("send [\"INPUT1\"] too"), "{message}");
    let (_, text) = http(server.http, "GET", "/metrics", "").await;
    assert!(!text.contains("nv_inference"), "{text}");
    let mut client = common::grpc(server.grpc).await;
    let reply: pb::ModelInferResponse = common::unary(
        &mut client,
        "/inference.GRPCInferenceService/ModelInfer",
        grpc_request("simple"),
    )
    .await
    .unwrap();
    assert!(reply.raw_output_contents.is_empty(), "typed in, typed out");
}

async fn get_json(server: &Server, path: &str) -> (StatusCode, Value) {
    let (status, text) = http(server.http, "GET", path, "").await;
    (status, serde_json::from_str(&text).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trace_and_logging_settings() {
    let mut config = triton_config();
    config.allow_unauthenticated_repository = true;
    let server = Server::start(Arc::new(Simple), config);
    let defaults = json!({"trace_level": ["OFF"], "trace_rate": "1000", "trace_count": "-1",
                          "log_frequency": "0", "trace_file": "", "trace_mode": "triton"});
    assert_eq!(
        get_json(&server, "/v2/trace/setting").await,
        (StatusCode::OK, defaults.clone())
    );
    assert_eq!(
        get_json(&server, "/v2/models/simple/trace/setting").await,
        (StatusCode::OK, defaults.clone())
    );
    let (status, v) = get_json(&server, "/v2/models/nope/trace/setting").await;
    assert_eq!(
        (status.as_u16(), &v["error"]),
        (400, &json!("Request for unknown model : nope"))
    );

    // A model's setting of its own; the global one unchanged.
    let (status, v) = post(
        &server,
        "/v2/models/simple/trace/setting",
        r#"{"trace_rate": "12", "log_frequency": "34"}"#,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(
        (&v["trace_rate"], &v["log_frequency"]),
        (&json!("12"), &json!("34"))
    );
    assert_eq!(get_json(&server, "/v2/trace/setting").await.1, defaults);
    // A global change reaches the model's fields it does not set itself.
    let (_, v) = post(&server, "/v2/trace/setting", r#"{"trace_count": "5"}"#).await;
    assert_eq!(v["trace_count"], "5");
    let (_, v) = get_json(&server, "/v2/models/simple/trace/setting").await;
    assert_eq!(
        (&v["trace_count"], &v["trace_rate"]),
        (&json!("5"), &json!("12"))
    );

    for (bad, status, message) in [
        (
            r#"{"trace_file": "x.log"}"#,
            501,
            "trace file location can not be updated through network protocol",
        ),
        (
            r#"{"trace_rate": "many"}"#,
            400,
            "Unable to parse 'trace_rate', got: many",
        ),
        (
            r#"{"trace_level": ["TIMESTAMPS"]}"#,
            400,
            "Attempting to set invalid trace setting :trace file name is not given",
        ),
        (
            r#"{"trace_level": ["OFF", "TENSORS"]}"#,
            400,
            "Expect only one trace level 'OFF' is specified",
        ),
    ] {
        assert_eq!(
            refused(&server, "/v2/trace/setting", bad).await,
            (status, message.to_owned()),
            "{bad}"
        );
    }

    let (status, v) = get_json(&server, "/v2/logging").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        v,
        json!({"log_file": "", "log_info": true, "log_warning": true, "log_error": true,
               "log_verbose_level": 0, "log_format": "default"})
    );
    let (_, v) = post(
        &server,
        "/v2/logging",
        r#"{"log_verbose_level": 1, "log_info": false}"#,
    )
    .await;
    assert_eq!(
        (&v["log_verbose_level"], &v["log_info"]),
        (&json!(1), &json!(false))
    );
    assert_eq!(
        refused(&server, "/v2/logging", r#"{"log_format": "json"}"#).await,
        (503, "invalid argument for --log_format, got: json".into())
    );

    // gRPC: the same settings, Triton's messages.
    let mut client = common::grpc(server.grpc).await;
    const TRACE: &str = "/inference.GRPCInferenceService/TraceSetting";
    let read: pb::TraceSettingResponse = common::unary(
        &mut client,
        TRACE,
        pb::TraceSettingRequest {
            model_name: "simple".into(),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(read.settings["trace_rate"].value, vec!["12"]);
    let clear = pb::TraceSettingRequest {
        model_name: "simple".into(),
        settings: [(
            "trace_rate".to_owned(),
            pb::trace_setting_request::SettingValue { value: vec![] },
        )]
        .into(),
    };
    let cleared: pb::TraceSettingResponse = common::unary(&mut client, TRACE, clear).await.unwrap();
    assert_eq!(cleared.settings["trace_rate"].value, vec!["1000"]);
    assert_eq!(cleared.settings["log_frequency"].value, vec!["34"]);
    let logs: pb::LogSettingsResponse = common::unary(
        &mut client,
        "/inference.GRPCInferenceService/LogSettings",
        pb::LogSettingsRequest::default(),
    )
    .await
    .unwrap();
    assert_eq!(
        logs.settings["log_verbose_level"].parameter_choice,
        Some(pb::log_settings_response::setting_value::ParameterChoice::Uint32Param(1))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changing_settings_needs_what_the_repository_api_needs() {
    let server = triton();
    assert_eq!(get_json(&server, "/v2/logging").await.0, StatusCode::OK);
    let (status, message) = refused(&server, "/v2/logging", r#"{"log_info": false}"#).await;
    assert_eq!(status, 403);
    assert!(
        message.contains("--allow-unauthenticated-repository"),
        "{message}"
    );
    let (status, _) = refused(&server, "/v2/trace/setting", r#"{"trace_rate": "2"}"#).await;
    assert_eq!(status, 403);

    let mut client = common::grpc(server.grpc).await;
    const LOG: &str = "/inference.GRPCInferenceService/LogSettings";
    let read: Result<pb::LogSettingsResponse, _> =
        common::unary(&mut client, LOG, pb::LogSettingsRequest::default()).await;
    assert!(read.is_ok());
    let change = pb::LogSettingsRequest {
        settings: [(
            "log_info".to_owned(),
            pb::log_settings_request::SettingValue {
                parameter_choice: Some(
                    pb::log_settings_request::setting_value::ParameterChoice::BoolParam(false),
                ),
            },
        )]
        .into(),
    };
    let e = common::unary::<_, pb::LogSettingsResponse>(&mut client, LOG, change)
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::PermissionDenied);
}
