//! TorchServe's API description: OpenAPI 3.0.1 documents of what each port serves, as
//! TorchServe's clients and code generators ask for them. `OPTIONS /` or any method on
//! `/api-description`: the port's API (the inference API, the management API, or both
//! where one port serves both); `OPTIONS /predictions/{model}`: that model's inference
//! calls; `OPTIONS /models/{model}`: its management calls. No key is needed, as in
//! TorchServe. The documents describe inferwire's routes (rest/routes.rs), written here.
use http::StatusCode;
use serde_json::{json, Map, Value};

use crate::app::App;
use crate::error::ServeError;

use super::body::{self, Reply};
use super::routes::Port;

/// The TorchServe release whose APIs are served (python/inferwire/torchserve/context.py's
/// `TORCHSERVE_VERSION`).
pub const TORCHSERVE_VERSION: &str = "0.12.0";

/// `OPTIONS /`, `/api-description`: the API of the port the request came in on.
pub fn listing(app: &App, port: Port) -> Reply {
    let (inference, management) = match port {
        Port::Management => (false, true),
        // The REST port also serves the management API where it has no port of its own.
        _ => (true, app.config.management_port.is_none()),
    };
    let mut paths = Map::new();
    paths.insert("/".into(), json!({ "options": description_op() }));
    if inference {
        inference_paths(&mut paths);
    }
    if management {
        management_paths(&mut paths);
    }
    paths.insert(
        "/api-description".into(),
        json!({ "get": description_op() }),
    );
    document(
        json!({
            "title": "TorchServe APIs",
            "description": "TorchServe's inference and management APIs as inferwire serves them",
            "version": TORCHSERVE_VERSION,
        }),
        paths,
    )
}

/// `OPTIONS /predictions/{model}`: the model's inference calls.
pub async fn model_inference(app: &App, name: &str, version: &str) -> Result<Reply, ServeError> {
    let model = app.model(name, version).await?;
    let mut paths = Map::new();
    let predict = op(
        "predictions",
        &format!("Predictions of model {}", model.name),
        vec![],
        Some(input_body()),
        &[
            ("200", "The handler's reply", any_object()),
            error_404(),
            error_500(),
        ],
    );
    paths.insert(
        format!("/predictions/{}", model.name),
        json!({ "post": predict, "put": predict }),
    );
    Ok(document(
        json!({ "title": format!("RESTful API for: {}", model.name), "version": "1.0.0" }),
        paths,
    ))
}

/// `OPTIONS /models/{model}`: the model's management calls.
pub async fn model_management(app: &App, name: &str, version: &str) -> Result<Reply, ServeError> {
    let model = app.model(name, version).await?;
    let mut paths = Map::new();
    let path = format!("/models/{}", model.name);
    paths.insert(
        path,
        json!({
            "get": op("describeModel", "Describes the model's status", vec![],
                      None, &[("200", "The model's description", any_array()), error_404()]),
            "put": op("setAutoScale", "Sets the model's workers", vec![
                          query("min_worker", "integer", "Fewest workers"),
                          query("max_worker", "integer", "Most workers"),
                          query("synchronous", "boolean", "Wait for the workers")],
                      None, &[("200", "The workers' status", status_object()), error_404()]),
            "delete": op("unregisterModel", "Unregisters the model", vec![],
                         None, &[("200", "Unregistered", status_object()), error_404()]),
        }),
    );
    Ok(document(
        json!({
            "title": format!("RESTful Management API for: {}", model.name),
            "version": TORCHSERVE_VERSION,
        }),
        paths,
    ))
}

fn document(info: Value, paths: Map<String, Value>) -> Reply {
    let doc = json!({ "openapi": "3.0.1", "info": info, "paths": paths });
    let text = crate::torchserve_management::pretty(&doc);
    body::json(StatusCode::OK, text.into_bytes())
}

fn inference_paths(paths: &mut Map<String, Value>) {
    paths.insert(
        "/ping".into(),
        json!({ "get": op("ping", "The server's health", vec![], None,
                          &[("200", "Healthy", status_object()), error_500()]) }),
    );
    for (path, id, what) in [
        (
            "/predictions/{model_name}",
            "predictions",
            "Predictions of a model",
        ),
        (
            "/predictions/{model_name}/{model_version}",
            "versionPredictions",
            "Predictions of one version of a model",
        ),
        (
            "/explanations/{model_name}",
            "explanations",
            "Explanations of a model's predictions",
        ),
    ] {
        let mut params = vec![path_param("model_name", "The model's name")];
        if path.contains("{model_version}") {
            params.push(path_param("model_version", "The model's version"));
        }
        let call = op(
            id,
            what,
            params,
            Some(input_body()),
            &[
                ("200", "The handler's reply", any_object()),
                error_404(),
                error_500(),
            ],
        );
        let methods = if id == "explanations" {
            json!({ "post": call })
        } else {
            json!({ "post": call, "put": call })
        };
        paths.insert(path.into(), methods);
    }
    paths.insert(
        "/v1/models/{model_name}:predict".into(),
        json!({ "post": op("kservePredictions", "KServe v1 predictions",
                           vec![path_param("model_name", "The model's name")],
                           Some(json_body()), &[("200", "{\"predictions\": [...]}", any_object()),
                                                error_404(), error_500()]) }),
    );
    paths.insert(
        "/v2/models/{model_name}/infer".into(),
        json!({ "post": op("kservev2Predictions", "V2 (KServe v2) inference",
                           vec![path_param("model_name", "The model's name")],
                           Some(json_body()), &[("200", "A V2 inference response", any_object()),
                                                error_404(), error_500()]) }),
    );
}

fn management_paths(paths: &mut Map<String, Value>) {
    let name = || path_param("model_name", "The model's name");
    let version = || path_param("model_version", "The model's version");
    paths.insert(
        "/models".into(),
        json!({
            "get": op("listModels", "Lists the registered models", vec![
                          query("limit", "integer", "Models a page (default 100)"),
                          query("next_page_token", "string", "Where the page starts")],
                      None, &[("200", "{\"models\": [...], \"nextPageToken\": ...}",
                               any_object())]),
            "post": op("registerModel", "Registers a model archive", vec![
                           query("url", "string", "The archive: a file in the model store or \
                                  an http(s) URL that allowed_urls allows"),
                           query("model_name", "string", "The name to serve it as"),
                           query("initial_workers", "integer", "Workers to start"),
                           query("batch_size", "integer", "Requests a batch"),
                           query("max_batch_delay", "integer", "Milliseconds a batch waits"),
                           query("response_timeout", "integer", "Seconds a request may take"),
                           query("synchronous", "boolean", "Answer once it serves")],
                       None, &[("200", "Registered", status_object()), error_400(), error_404(),
                               error_500()]),
        }),
    );
    for (path, params) in [
        ("/models/{model_name}", vec![name()]),
        (
            "/models/{model_name}/{model_version}",
            vec![name(), version()],
        ),
    ] {
        let mut scale = params.clone();
        scale.push(query("min_worker", "integer", "Fewest workers"));
        scale.push(query("max_worker", "integer", "Most workers"));
        scale.push(query("synchronous", "boolean", "Wait for the workers"));
        paths.insert(
            path.into(),
            json!({
                "get": op("describeModel", "Describes a model's status", params.clone(), None,
                          &[("200", "The model's description", any_array()), error_404()]),
                "put": op("setAutoScale", "Sets a model's workers", scale, None,
                          &[("200", "The workers' status", status_object()), error_404()]),
                "delete": op("unregisterModel", "Unregisters a model", params, None,
                             &[("200", "Unregistered", status_object()), error_404()]),
            }),
        );
    }
    paths.insert(
        "/models/{model_name}/{model_version}/set-default".into(),
        json!({ "put": op("setDefault", "Makes a version the model's default",
                          vec![name(), version()], None,
                          &[("200", "The default set", status_object()), error_404()]) }),
    );
}

/// A response of an operation: status, what it means, its body's schema.
type Response = (&'static str, &'static str, Value);

fn error_400() -> Response {
    ("400", "Bad request", error_object())
}

fn error_404() -> Response {
    ("404", "No such model or version", error_object())
}

fn error_500() -> Response {
    ("500", "The handler failed", error_object())
}

fn op(
    id: &str,
    description: &str,
    parameters: Vec<Value>,
    request_body: Option<Value>,
    responses: &[Response],
) -> Value {
    let mut answers = Map::new();
    for (code, what, schema) in responses {
        answers.insert(
            (*code).into(),
            json!({ "description": what,
                    "content": { "application/json": { "schema": schema } } }),
        );
    }
    let mut o = json!({
        "description": description,
        "operationId": id,
        "parameters": parameters,
        "responses": answers,
    });
    if let Some(b) = request_body {
        o["requestBody"] = b;
    }
    o
}

fn description_op() -> Value {
    op(
        "apiDescription",
        "This document: the OpenAPI 3.0.1 description of the APIs this port serves",
        vec![],
        None,
        &[
            ("200", "An OpenAPI 3.0.1 document", openapi_object()),
            error_500(),
        ],
    )
}

fn path_param(name: &str, description: &str) -> Value {
    json!({ "in": "path", "name": name, "description": description, "required": true,
            "schema": { "type": "string" } })
}

fn query(name: &str, kind: &str, description: &str) -> Value {
    json!({ "in": "query", "name": name, "description": description, "required": false,
            "schema": { "type": kind } })
}

/// A prediction's body: whatever the model's handler reads (TorchServe passes it as sent).
fn input_body() -> Value {
    json!({
        "description": "The input, in whatever form the model's handler reads",
        "content": { "*/*": { "schema": { "type": "string", "format": "binary" } } },
        "required": true,
    })
}

fn json_body() -> Value {
    json!({ "content": { "application/json": { "schema": any_object() } }, "required": true })
}

fn any_object() -> Value {
    json!({ "type": "object" })
}

fn any_array() -> Value {
    json!({ "type": "array", "items": { "type": "object" } })
}

fn status_object() -> Value {
    json!({ "type": "object", "required": ["status"],
            "properties": { "status": { "type": "string" } } })
}

fn error_object() -> Value {
    json!({ "type": "object", "required": ["code", "type", "message"],
            "properties": { "code": { "type": "integer" }, "type": { "type": "string" },
                            "message": { "type": "string" } } })
}

fn openapi_object() -> Value {
    json!({ "type": "object", "required": ["openapi", "info", "paths"],
            "properties": { "openapi": { "type": "string" }, "info": { "type": "object" },
                            "paths": { "type": "object" } } })
}
