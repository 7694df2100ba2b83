//! A dialect is one type and one registration: two dialects written here, outside the
//! server crate, change what a client sees without a line of the request path knowing
//! them. One says nothing of its own (it answers as the default does); one has its own
//! words for a missing model, makes ids, hands the model a header and adds its own to
//! replies.
mod common;

use std::sync::Arc;

use common::{server_config, Server, Stub};
use http::StatusCode;
use inferwire_codec::protocol::v2::{InferRequest, InferResponse};
use inferwire_server::dialect::{self, Dialect};
use inferwire_server::ServeError;
use serde_json::{json, Value};

/// A dialect that overrides nothing.
#[derive(Debug)]
struct Plain;

impl Dialect for Plain {
    fn name(&self) -> &'static str {
        "plain"
    }
}

/// A dialect with its own answers.
#[derive(Debug)]
struct Own;

impl Dialect for Own {
    fn name(&self) -> &'static str {
        "own"
    }

    fn not_found(&self, e: ServeError, missing: &dialect::Missing<'_>) -> ServeError {
        ServeError::new(e.kind, format!("no model called {} here", missing.name))
    }

    fn headers_for_model(&self, headers: &http::HeaderMap) -> Option<Value> {
        headers
            .get("x-tenant")
            .and_then(|v| v.to_str().ok())
            .map(|v| json!({ "x-tenant": v }))
    }

    fn prepare(&self, request: &mut InferRequest, headers: Option<Value>) {
        if request.id.is_empty() {
            request.id = "made-by-own".into();
        }
        if let Some(h) = headers {
            request.parameters.insert("headers".into(), h);
        }
    }

    fn reply_headers(&self, response: &mut InferResponse) -> Vec<(String, String)> {
        vec![("x-answered-by".into(), format!("own:{}", response.id))]
    }
}

const INFER: &str =
    r#"{"inputs": [{"name": "x", "shape": [1, 2], "datatype": "FP64", "data": [1, 2]}]}"#;

/// One request (with an `x-tenant` header); the status, the named reply header and the
/// body.
async fn call(
    server: &Server,
    path: &str,
    body: &str,
    header: &str,
) -> (StatusCode, Option<String>, Value) {
    let (status, headers, body) =
        common::http_with(server.http, "POST", path, body, &[("x-tenant", "t1")]).await;
    let value = headers.get(header).map(|v| v.to_str().unwrap().to_owned());
    let parsed = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
    (status, value, parsed)
}

fn serving(dialect: Arc<dyn Dialect>) -> Server {
    let mut config = server_config();
    config.dialect = dialect;
    Server::start(Arc::new(Stub::new()), config)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dialect_that_says_nothing_answers_as_the_default() {
    let plain = serving(Arc::new(Plain));
    let default = serving(dialect::default());
    for server in [&plain, &default] {
        let (status, _, body) =
            call(server, "/v2/models/model/infer", INFER, "x-answered-by").await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["outputs"][0]["data"], json!([2.0, 4.0]));
        assert!(body.get("id").is_none(), "{body}");
    }
    let (s1, _, b1) = call(&plain, "/v2/models/nope/infer", INFER, "x").await;
    let (s2, _, b2) = call(&default, "/v2/models/nope/infer", INFER, "x").await;
    assert_eq!((s1, &b1), (s2, &b2));
    assert_eq!(s1, StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dialect_of_its_own_changes_what_clients_see_at_entry_and_exit() {
    let own = serving(Arc::new(Own));
    let (status, answered_by, body) =
        call(&own, "/v2/models/model/infer", INFER, "x-answered-by").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["id"], "made-by-own");
    assert_eq!(answered_by.as_deref(), Some("own:made-by-own"));
    assert_eq!(body["outputs"][0]["data"], json!([2.0, 4.0]));

    let (status, _, body) = call(&own, "/v2/models/nope/infer", INFER, "x").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(body["error"], "no model called nope here");
}

#[test]
fn the_registry_names_its_dialects() {
    for name in dialect::names() {
        let made = dialect::by_name(name, "inferwire").expect(name);
        assert_eq!(made.name(), name);
    }
    assert!(dialect::by_name("triton-ish", "inferwire").is_none());
}
