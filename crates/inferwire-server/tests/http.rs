//! The whole server over HTTP/1.1, with a stub model: the answers, status codes and
//! bodies a client sees for predictions, V2 inference, overload and deadlines.
mod common;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use common::{http, server_config, until, Server, Stub};
use http::StatusCode;
use serde_json::{json, Value};

fn parse(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seldon_and_v2_requests_reach_the_model() {
    let stub = Arc::new(Stub::new());
    let server = Server::start(stub.clone(), server_config());

    let (status, body) = http(
        server.http,
        "POST",
        "/api/v1.0/predictions",
        r#"{"data": {"ndarray": [[1, 2], [3, 4]]}, "meta": {"puid": "p1"}}"#,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let reply = parse(&body);
    assert_eq!(reply["data"]["ndarray"], json!([[2.0, 4.0], [6.0, 8.0]]));
    assert_eq!(reply["meta"]["puid"], "p1");
    // A unit given no image (not named, as Seldon's wrapper without PREDICTIVE_UNIT_ID)
    // adds no requestPath entry.
    assert!(reply["meta"].get("requestPath").is_none(), "{body}");

    let (status, body) = http(
        server.http,
        "POST",
        "/v2/models/model/infer",
        r#"{"id": "r1", "inputs": [{"name": "x", "shape": [1, 2], "datatype": "FP64", "data": [1.5, 2]}]}"#,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let reply = parse(&body);
    assert_eq!(reply["id"], "r1");
    assert_eq!(reply["model_name"], "model");
    assert_eq!(reply["outputs"][0]["name"], "y");
    assert_eq!(reply["outputs"][0]["data"], json!([3.0, 4.0]));

    let (status, body) = http(server.http, "GET", "/api/v1.0/health/status", "").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(parse(&body)["jsonData"], json!({"status": "ok"}));

    assert_eq!(stub.predicts(), 1);
    assert_eq!(stub.infers(), vec![1]);

    // Every server thread that may call the model (the one I/O thread, the one model
    // thread) told it when it started and when it stopped.
    drop(server);
    assert_eq!(stub.started.load(Ordering::SeqCst), 2);
    assert_eq!(stub.stopped.load(Ordering::SeqCst), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_model_with_no_queue_answers_503() {
    let (stub, server) = Server::held(inferwire_server::ServerConfig {
        max_queue: 0,
        ..server_config()
    });
    let addr = server.http;
    let body = r#"{"data": {"ndarray": [[1]]}}"#;
    let first =
        tokio::spawn(async move { http(addr, "POST", "/api/v1.0/predictions", body).await });
    until("the first request to reach the model", || {
        stub.entered() == 1
    })
    .await;

    let (status, reply) = http(addr, "POST", "/api/v1.0/predictions", body).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{reply}");
    let reply = parse(&reply);
    assert_eq!(reply["status"]["reason"], "OVERLOADED");
    assert_eq!(reply["status"]["code"], 503);

    stub.release();
    let (status, _) = first.await.unwrap();
    assert_eq!(status, StatusCode::OK);
    assert_eq!(stub.predicts(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_past_the_server_timeout_answers_504() {
    let (stub, server) = Server::held(inferwire_server::ServerConfig {
        timeout: Some(Duration::from_millis(300)),
        ..server_config()
    });
    let (status, reply) = http(
        server.http,
        "POST",
        "/v2/models/model/infer",
        r#"{"inputs": [{"name": "x", "shape": [1], "datatype": "FP64", "data": [1]}]}"#,
    )
    .await;
    assert_eq!(status, StatusCode::GATEWAY_TIMEOUT, "{reply}");
    assert_eq!(
        parse(&reply)["error"],
        "the request's deadline passed before the model answered (see --timeout)"
    );
    stub.release();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operations_the_model_lacks_answer_with_the_trait_defaults() {
    let server = Server::start(Arc::new(Stub::new()), server_config());
    let (status, body) = http(
        server.http,
        "POST",
        "/api/v1.0/feedback",
        r#"{"request": {"data": {"ndarray": [[1]]}}, "reward": 1}"#,
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let status_field = &parse(&body)["status"];
    assert_eq!(
        status_field["info"],
        "this model does not implement send_feedback"
    );
    assert_eq!(status_field["reason"], "MICROSERVICE_BAD_DATA");

    let (status, body) = http(server.http, "GET", "/v2/models/model", "").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let meta = parse(&body);
    assert_eq!(meta["name"], "model");
    assert_eq!(meta["inputs"], json!([]));
}
