//! Path → handler. Seldon's ingress prefix (`/seldon/<namespace>/<deployment>`) is
//! accepted and ignored, so URLs written for a Seldon deployment work unchanged.
use std::sync::Arc;

use http::{Method, Request, StatusCode};
use hyper::body::Incoming;

use super::body::{self, Reply};
use super::seldon;
use crate::app::App;
use crate::error::{Kind, ServeError};

pub async fn handle(app: Arc<App>, req: Request<Incoming>) -> Reply {
    let path = strip_ingress_prefix(req.uri().path()).to_owned();
    let method = req.method().clone();
    let result = match (path.as_str(), &method) {
        ("/api/v1.0/predictions" | "/api/v0.1/predictions" | "/predict", &Method::POST) => {
            seldon::predict(&app, req).await
        }
        ("/api/v1.0/feedback" | "/api/v0.1/feedback" | "/send-feedback", &Method::POST) => {
            seldon::feedback(&app, req).await
        }
        ("/health/ping" | "/api/v1.0/health/ping", &Method::GET) => {
            Ok(body::text(StatusCode::OK, "pong"))
        }
        ("/health/status" | "/api/v1.0/health/status", &Method::GET) => {
            seldon::health_status(&app).await
        }
        ("/live", &Method::GET) => Ok(body::json(
            StatusCode::OK,
            b"{\"status\":\"alive\"}".to_vec(),
        )),
        ("/ready", &Method::GET) => Ok(if app.is_ready() {
            body::json(StatusCode::OK, b"{\"status\":\"ready\"}".to_vec())
        } else {
            body::json(
                StatusCode::SERVICE_UNAVAILABLE,
                b"{\"status\":\"not ready\"}".to_vec(),
            )
        }),
        (p, &Method::GET) if p == "/metadata" || p.starts_with("/api/v1.0/metadata") => {
            seldon::metadata(&app).await
        }
        (p, _) if is_known(p) => Err(ServeError::new(
            Kind::MethodNotAllowed,
            format!("{method} is not allowed on {p}"),
        )),
        (p, _) => Err(ServeError::new(
            Kind::NotFound,
            format!("no route for {method} {p}"),
        )),
    };
    result.unwrap_or_else(|e| body::error(&e))
}

fn is_known(p: &str) -> bool {
    matches!(
        p,
        "/api/v1.0/predictions"
            | "/api/v0.1/predictions"
            | "/predict"
            | "/api/v1.0/feedback"
            | "/api/v0.1/feedback"
            | "/send-feedback"
            | "/health/ping"
            | "/health/status"
            | "/live"
            | "/ready"
            | "/metadata"
    )
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
