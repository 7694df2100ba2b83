//! Path → handler. Seldon's ingress prefix (`/seldon/<namespace>/<deployment>`) is
//! accepted and ignored, so URLs written for a Seldon deployment work unchanged.
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use http::{HeaderValue, Method, Request, StatusCode};
use hyper::body::Incoming;

use super::body::{self, Reply};
use super::seldon;
use crate::app::App;
use crate::error::{Kind, ServeError};
use crate::metrics::{self, Protocol};
use crate::observe::Observed;

/// What a path names; which method it takes is decided in `handle`.
#[derive(Clone, Copy)]
pub(super) enum Route {
    Predict,
    Feedback,
    Ping,
    Status,
    Live,
    Ready,
    Metadata,
    Metrics,
}

impl Route {
    fn label(route: Option<Route>) -> metrics::Route {
        match route {
            Some(Route::Predict) => metrics::Route::Predict,
            Some(Route::Feedback) => metrics::Route::Feedback,
            Some(Route::Ping | Route::Status | Route::Live | Route::Ready) => {
                metrics::Route::Health
            }
            Some(Route::Metadata) => metrics::Route::Metadata,
            Some(Route::Metrics) | None => metrics::Route::Other,
        }
    }
}

pub(super) fn route(path: &str) -> Option<Route> {
    Some(match path {
        "/api/v1.0/predictions" | "/api/v0.1/predictions" | "/predict" => Route::Predict,
        "/api/v1.0/feedback" | "/api/v0.1/feedback" | "/send-feedback" => Route::Feedback,
        "/health/ping" | "/api/v1.0/health/ping" => Route::Ping,
        "/health/status" | "/api/v1.0/health/status" => Route::Status,
        "/live" => Route::Live,
        "/ready" => Route::Ready,
        "/metrics" | "/prometheus" => Route::Metrics,
        p if p == "/metadata" || p.starts_with("/api/v1.0/metadata") => Route::Metadata,
        _ => return None,
    })
}

/// `peer`: the client's address, which failed logins are counted against.
pub async fn handle(app: Arc<App>, req: Request<Incoming>, peer: IpAddr) -> Reply {
    let path = strip_ingress_prefix(req.uri().path()).to_owned();
    let method = req.method().clone();
    let route = route(&path);
    let mut obs = Observed::new(Protocol::Rest, Route::label(route));
    let request_id = req.headers().get("x-request-id").cloned();
    if let Some(id) = request_id.as_ref().and_then(|v| v.to_str().ok()) {
        obs.id = id.to_owned();
    }
    let refused = crate::auth::admit(
        app.config.auth.as_deref(),
        app.config.allow_unauthenticated_repository,
        super::access::of(&path),
        req.headers()
            .get(http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok()),
    )
    .err();
    let mut reply = if let Some(refusal) = refused {
        let e = refusal.to_error();
        let mut r = if path.starts_with("/v2") {
            super::v2::error(&e)
        } else {
            body::error(&e)
        };
        if e.kind == Kind::Unauthenticated {
            r.headers_mut().insert(
                http::header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"inferwire\""),
            );
        }
        r
    } else if path == "/login" {
        login(&app, req, peer).await.unwrap_or_else(|e| {
            let mut r = body::error(&e.error);
            if let Some(wait) = e.retry_after {
                // Whole seconds, rounded up: never an invitation to retry too early.
                let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
                r.headers_mut()
                    .insert(http::header::RETRY_AFTER, HeaderValue::from(secs.max(1)));
            }
            r
        })
    } else if is_publish(&path) {
        super::publish::handle(&app, req, &path, &method)
            .await
            .unwrap_or_else(|e| body::error(&e))
    } else if let Some((name, version)) = named_model(&path) {
        // A published model's own route: /api/NAME/VERSION.
        obs.route = metrics::Route::Predict;
        let run = async {
            let model = app.models.get(name, version)?;
            obs.model = model.slot;
            if method != Method::POST {
                return Err(ServeError::new(
                    Kind::MethodNotAllowed,
                    format!("{method} is not allowed on {path}"),
                ));
            }
            seldon::predict(&app, req, &mut obs, Some(&model)).await
        };
        run.await.unwrap_or_else(|e| body::error(&e))
    } else if path.starts_with("/v2") {
        super::v2::handle(&app, req, &path, &mut obs).await
    } else {
        if !matches!(route, None | Some(Route::Metrics)) {
            obs.model = app.default_slot();
        }
        dispatch(&app, req, route, &path, &method, &mut obs)
            .await
            .unwrap_or_else(|e| body::error(&e))
    };
    if let Some(id) = request_id {
        reply.headers_mut().insert("x-request-id", id);
    }
    let status = reply.status().as_u16();
    obs.finish(
        &app,
        metrics::http_code_name(status),
        &format!("{method} {path}"),
    );
    reply
}

async fn dispatch(
    app: &App,
    req: Request<Incoming>,
    route: Option<Route>,
    path: &str,
    method: &Method,
    obs: &mut Observed,
) -> Result<Reply, ServeError> {
    match (route, method) {
        (Some(Route::Predict), &Method::POST) => seldon::predict(app, req, obs, None).await,
        (Some(Route::Predict), &Method::GET) => seldon::predict_query(app, req, obs).await,
        (Some(Route::Feedback), &Method::POST) => seldon::feedback(app, req).await,
        (Some(Route::Ping), &Method::GET) => Ok(body::text(StatusCode::OK, "pong")),
        (Some(Route::Status), &Method::GET) => seldon::health_status(app).await,
        (Some(Route::Live), &Method::GET) => Ok(match app.not_live_because() {
            None => body::json(StatusCode::OK, b"{\"status\":\"alive\"}".to_vec()),
            Some(why) => body::json(
                StatusCode::SERVICE_UNAVAILABLE,
                serde_json::to_vec(&serde_json::json!({"status": "not live", "error": why}))
                    .unwrap_or_default(),
            ),
        }),
        (Some(Route::Ready), &Method::GET) => Ok(if app.is_ready() {
            body::json(StatusCode::OK, b"{\"status\":\"ready\"}".to_vec())
        } else {
            body::json(
                StatusCode::SERVICE_UNAVAILABLE,
                b"{\"status\":\"not ready\"}".to_vec(),
            )
        }),
        (Some(Route::Metadata), &Method::GET) => seldon::metadata(app).await,
        (Some(Route::Metrics), &Method::GET) => {
            let mut r = body::with_type(
                StatusCode::OK,
                app.metrics.render().into(),
                "text/plain; version=0.0.4; charset=utf-8",
            );
            r.headers_mut()
                .insert("cache-control", HeaderValue::from_static("no-store"));
            Ok(r)
        }
        (Some(_), _) => Err(ServeError::new(
            Kind::MethodNotAllowed,
            format!("{method} is not allowed on {path}"),
        )),
        (None, _) => Err(ServeError::new(
            Kind::NotFound,
            format!("no route for {method} {path}"),
        )),
    }
}

const PUBLISH: &str = "/api/v1.0/publish";
const PUBLISH_PREFIX: &str = "/api/v1.0/publish/";

/// The publishing routes (`publish::handle`).
pub(super) fn is_publish(path: &str) -> bool {
    path == PUBLISH || path.starts_with(PUBLISH_PREFIX)
}

/// `/api/NAME/VERSION` (not Seldon's own `/api/v1.0/...` and `/api/v0.1/...` routes).
pub(super) fn named_model(path: &str) -> Option<(&str, &str)> {
    let rest = path.strip_prefix("/api/")?;
    let (name, version) = rest.split_once('/')?;
    if name.is_empty() || version.is_empty() || version.contains('/') {
        return None;
    }
    if name == "v1.0" || name == "v0.1" {
        return None;
    }
    Some((name, version))
}

/// A refused login, with how long to wait when it was refused for too many failures.
struct LoginError {
    error: ServeError,
    retry_after: Option<Duration>,
}

impl From<ServeError> for LoginError {
    fn from(error: ServeError) -> Self {
        Self {
            error,
            retry_after: None,
        }
    }
}

/// `POST /login` with `{"username", "password"}`: a signed bearer token for the user's
/// scopes, valid for `auth_token_ttl`. A user or client past its failure limit gets 429
/// without a password check; the check itself runs on a blocking thread, a bounded number
/// at a time, never on the I/O threads that carry every other request.
async fn login(app: &App, req: Request<Incoming>, peer: IpAddr) -> Result<Reply, LoginError> {
    let Some(auth) = app.config.auth.clone() else {
        return Err(ServeError::new(
            Kind::NotFound,
            "login is off: this server runs without auth (see --auth-users)",
        )
        .into());
    };
    if req.method() != Method::POST {
        return Err(ServeError::new(
            Kind::MethodNotAllowed,
            "POST {\"username\", \"password\"} to /login",
        )
        .into());
    }
    #[derive(serde::Deserialize)]
    struct Login {
        username: String,
        password: String,
    }
    let raw = body::read(app, req, 64 * 1024).await?;
    let creds: Login = serde_json::from_slice(&raw).map_err(|e| {
        ServeError::new(
            Kind::BadRequest,
            format!("login takes {{\"username\": ..., \"password\": ...}}: {e}"),
        )
    })?;
    let guard = &auth.guard;
    if let Err(wait) = guard.admit(&creds.username, peer) {
        return Err(LoginError {
            error: ServeError::new(
                Kind::TooManyRequests,
                format!(
                    "too many failed logins for this user or from this address: retry in {} s",
                    wait.as_secs().max(1)
                ),
            ),
            retry_after: Some(wait),
        });
    }
    let Ok(Ok(_turn)) =
        tokio::time::timeout(guard.limits.hashing_wait, guard.hashing.acquire()).await
    else {
        guard.not_tried(&creds.username, peer);
        return Err(LoginError {
            error: ServeError::new(Kind::Overloaded, "too many logins at once: retry shortly"),
            retry_after: Some(Duration::from_secs(1)),
        });
    };
    let checker = auth.clone();
    let user = creds.username.clone();
    let outcome = tokio::task::spawn_blocking(move || checker.login(&user, &creds.password))
        .await
        .map_err(|_| ServeError::new(Kind::Internal, "the password check failed"))?;
    let (token, exp) = outcome.map_err(|r| r.to_error())?;
    guard.succeeded(&creds.username, peer);
    let out = serde_json::json!({
        "access_token": token,
        "token_type": "Bearer",
        "expires_in": auth.ttl.as_secs(),
        "expires_on": exp,
    });
    Ok(body::json(
        StatusCode::OK,
        serde_json::to_vec(&out).unwrap_or_default(),
    ))
}

/// `/seldon/ns/name/api/v1.0/predictions` → `/api/v1.0/predictions`.
fn strip_ingress_prefix(path: &str) -> &str {
    let Some(rest) = path.strip_prefix("/seldon/") else {
        return path;
    };
    let mut parts = rest.splitn(3, '/');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(_ns), Some(_name), Some(tail)) => &path[path.len() - tail.len() - 1..],
        _ => path,
    }
}

#[cfg(test)]
mod tests {
    use super::strip_ingress_prefix;

    #[test]
    fn ingress_prefix() {
        assert_eq!(
            strip_ingress_prefix("/seldon/seldon/seldon-model/api/v1.0/predictions"),
            "/api/v1.0/predictions"
        );
        assert_eq!(
            strip_ingress_prefix("/api/v1.0/predictions"),
            "/api/v1.0/predictions"
        );
        assert_eq!(strip_ingress_prefix("/seldon/x"), "/seldon/x");
    }
}
