//! TorchServe's management API (`inferwire torchserve`), what each call does, once for
//! both its transports: REST on the management port (`rest::torchserve`) and gRPC's
//! `ManagementAPIsService` on `grpc_management_port` (`grpc::torchserve_management`).
//! Each transport reads its call's arguments, checks the management key
//! (`management_key`), and writes what these answer in its own shape; the errors are
//! `ServeError`s each transport turns into TorchServe's answer.
use serde_json::{json, Map, Value};

use crate::app::App;
use crate::error::{Kind, ModelReply, ServeError};
use crate::models::Served;
use crate::torchserve_keys::Api;

/// What inferwire answers a register or unregister while TorchServe's model API is off.
pub const MODEL_API_OFF: &str = "Model API is disabled: start with --enable-model-api (or \
     enable_model_api=true) to register and unregister models";

/// TorchServe's page of models: 100 unless asked for fewer (its `ApiUtils.getModelList`).
pub const PAGE: usize = 100;

/// Whether a call with this `Authorization` value may use the management API: with
/// TorchServe's token authorization on, only with the management key.
pub fn management_key(app: &App, authorization: Option<&str>) -> bool {
    app.config
        .torchserve_keys
        .as_ref()
        .is_none_or(|keys| keys.admits(authorization, Api::Management))
}

/// What registering and unregistering need besides the key: TorchServe's model API
/// switched on (`enable_model_api`, which `inferwire torchserve` hands over as the
/// repository API's opt-in).
pub fn model_api(app: &App) -> Result<(), ServeError> {
    if app.config.allow_unauthenticated_repository {
        Ok(())
    } else {
        Err(ServeError::new(Kind::MethodNotAllowed, MODEL_API_OFF))
    }
}

/// The models served, `limit` a page from `from` (TorchServe's bounds: a limit that is
/// missing, not positive or over 100 is 100; a negative start is 0): `{"models":
/// [{"modelName", "modelUrl"}, ...]}` in name order, with `nextPageToken` while more
/// follow.
pub async fn list(app: &App, limit: Option<i64>, from: Option<i64>) -> Result<Value, ServeError> {
    let limit = limit
        .and_then(|l| usize::try_from(l).ok())
        .filter(|l| (1..=PAGE).contains(l))
        .unwrap_or(PAGE);
    let from = from.and_then(|f| usize::try_from(f).ok()).unwrap_or(0);
    let names = ready_names(app).await?;
    let mut models = Vec::new();
    for name in names.iter().skip(from).take(limit) {
        let url = match app.model(name, "").await {
            Ok(model) => described(&model).await?["modelUrl"].clone(),
            Err(_) => Value::Null,
        };
        models.push(json!({"modelName": name, "modelUrl": url}));
    }
    let mut out = json!({ "models": models });
    let next = from.saturating_add(limit);
    if next < names.len() {
        out["nextPageToken"] = Value::String(next.to_string());
    }
    Ok(out)
}

/// The model's description, as TorchServe's (a list of one; `all` or no version: the
/// version served, inferwire serving one a model).
pub async fn describe(app: &App, name: &str, version: &str) -> Result<Value, ServeError> {
    let version = if version == "all" { "" } else { version };
    let model = app.model(name, version).await?;
    Ok(json!([described(&model).await?]))
}

/// A model's description: what its adapter says of its archive (`torchserve` in its
/// metadata), with the server's part.
async fn described(model: &Served) -> Result<Value, ServeError> {
    let meta = model.runner.metadata(None).await?;
    let mut d = meta.get("torchserve").cloned().unwrap_or_else(|| json!({}));
    d["modelName"] = Value::String(model.name.clone());
    d["modelVersion"] = Value::String(model.version.clone());
    d["workers"] = json!([{
        "id": std::process::id().to_string(),
        "status": "READY",
        "pid": std::process::id(),
        "gpu": false,
    }]);
    Ok(d)
}

/// The names of the models serving now, in order, each once (its versions together).
pub async fn ready_names(app: &App) -> Result<Vec<String>, ServeError> {
    let mut names: Vec<String> = app
        .models
        .index()
        .await?
        .iter()
        .filter(|m| m["state"] == "READY")
        .filter_map(|m| m["name"].as_str().map(str::to_owned))
        .collect();
    names.sort_unstable();
    names.dedup();
    Ok(names)
}

/// Serves the archive `url` (a file name in the model store, or an http(s) URL that
/// `allowed_urls` allows: the repository's checks) as `name`, or as TorchServe names it
/// without one; `parameters` are the call's others (each a string, as REST's query
/// gives them), which the repository takes or refuses. Its status sentence.
pub async fn register(
    app: &App,
    url: &str,
    name: Option<&str>,
    parameters: Map<String, Value>,
) -> Result<String, ServeError> {
    model_api(app)?;
    if url.is_empty() {
        return Err(ServeError::new(
            Kind::BadRequest,
            "Parameter url is required.",
        ));
    }
    let name = name
        .filter(|n| !n.is_empty())
        .map_or_else(|| default_name(url), str::to_owned);
    if app.model(&name, "").await.is_ok() {
        return Err(conflict(format!("Model {name} is already registered.")));
    }
    let mut parameters = parameters;
    parameters.insert("url".into(), Value::String(url.to_owned()));
    app.load_model(&name, Value::Object(parameters)).await?;
    let version = app
        .model(&name, "")
        .await
        .map(|m| m.version.clone())
        .unwrap_or_default();
    Ok(format!(
        "Model \"{name}\" Version: {version} registered with 1 initial workers"
    ))
}

/// TorchServe's 409 (its ConflictStatusException): a model of that name is served.
fn conflict(message: String) -> ServeError {
    let mut e = ServeError::new(Kind::BadRequest, message);
    e.model_reply = Some(Box::new(ModelReply {
        status: 409,
        body: None,
    }));
    e
}

/// Whether `e` is a register's conflict (`conflict`).
pub fn is_conflict(e: &ServeError) -> bool {
    e.kind == Kind::BadRequest && e.model_body().is_none() && e.http_status() == 409
}

/// Stops serving model `name` (its `version`, when given, must be the one served).
pub async fn unregister(app: &App, name: &str, version: &str) -> Result<String, ServeError> {
    model_api(app)?;
    if name.is_empty() {
        return Err(ServeError::new(
            Kind::BadRequest,
            "Parameter model_name is required.",
        ));
    }
    app.model(name, version).await?;
    app.unload_model(name).await?;
    Ok(format!("Model \"{name}\" unregistered"))
}

/// TorchServe's scaling (`min_worker` 1 and `max_worker` `min_worker` unless given).
/// inferwire's workers are processes that each serve every model (`--workers`): nothing
/// changes, and the answer says so in TorchServe's shape, so the scripts that call it go on.
pub async fn scale(
    app: &App,
    name: &str,
    version: &str,
    min_worker: Option<u32>,
    max_worker: Option<u32>,
) -> Result<String, ServeError> {
    let min = min_worker.unwrap_or(1);
    if max_worker.unwrap_or(min) < min {
        return Err(ServeError::new(
            Kind::BadRequest,
            "max_worker cannot be less than min_worker.",
        ));
    }
    let model = app.model(name, version).await?;
    tracing::warn!(
        "scale workers of {name:?} to min_worker={min}: inferwire's workers are processes \
         that each serve every model (--workers); nothing changes"
    );
    Ok(format!(
        "Workers of model \"{}\" are inferwire's processes, each serving every model: \
         min_worker={min} changes nothing",
        model.name
    ))
}

/// The version served without one. inferwire serves an archive's one version: setting
/// it again is what succeeds.
pub async fn set_default(app: &App, name: &str, version: &str) -> Result<String, ServeError> {
    let wanted = app.model(name, version).await?;
    let current = app.model(name, "").await?;
    if wanted.version != current.version {
        return Err(ServeError::new(
            Kind::Unsupported,
            format!(
                "model {name:?} serves version {:?} by default; changing the default \
                 version is not served yet",
                current.version
            ),
        ));
    }
    Ok(format!(
        "Default version successfully updated for model \"{name}\" to \"{version}\""
    ))
}

/// The name TorchServe gives an archive registered without one: its file name without
/// `.mar`, anything but letters, digits and `_` made `_`.
pub fn default_name(url: &str) -> String {
    let last = url.trim_end_matches('/').rsplit('/').next().unwrap_or(url);
    let stem = last.strip_suffix(".mar").unwrap_or(last);
    stem.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// JSON pretty-printed as TorchServe's frontend writes it (Gson's two-space indent).
pub fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_torchserve_s_for_an_archive_without_one() {
        assert_eq!(default_name("densenet-161.mar"), "densenet_161");
        assert_eq!(default_name("https://h/a/b/x.y.mar"), "x_y");
        assert_eq!(default_name("folder/"), "folder");
    }

    #[test]
    fn a_conflict_is_told_from_other_refusals() {
        assert!(is_conflict(&conflict("m".into())));
        assert!(!is_conflict(&ServeError::new(Kind::BadRequest, "m")));
        assert_eq!(conflict("m".into()).http_status(), 409);
    }
}
