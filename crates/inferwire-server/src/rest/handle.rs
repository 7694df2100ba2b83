//! One REST request: its route found in the table (`routes`), its access checked, its
//! handler run, errors in the protocol's shape (V2's `{"error": ...}` under `/v2`,
//! Seldon's FAILURE message elsewhere), and the request recorded.
use std::net::IpAddr;
use std::sync::Arc;

use http::{HeaderValue, Request};
use hyper::body::Incoming;

use super::body::{self, Reply};
use super::routes::{self, Ctx, Port};
use crate::app::App;
use crate::error::{Kind, ServeError};
use crate::metrics::{self, Code, Protocol};
use crate::observe::Observed;

/// `peer`: the client's address, which failed logins are counted against.
pub async fn handle(app: Arc<App>, req: Request<Incoming>, peer: IpAddr, port: Port) -> Reply {
    let cors = app.config.cors.as_ref();
    if let Some(reply) = cors.and_then(|c| c.preflight(req.method(), req.headers())) {
        return reply;
    }
    let origin = cors.and(req.headers().get(http::header::ORIGIN).cloned());
    let path = strip_ingress_prefix(req.uri().path()).to_owned();
    let method = req.method().clone();
    // A dialect's own routes are served in that dialect only.
    let dialect = app.config.dialect.name();
    let found = routes::find(&path).filter(|f| {
        f.route.dialect.is_none_or(|d| d == dialect) && serves(&app, f.route.port, port, &path)
    });
    let family = found.as_ref().and_then(|f| f.route.dialect).or(
        // A path no route serves is answered in the shape of the dialect's own API.
        Some(dialect).filter(|d| {
            *d == "torchserve" && (port == Port::Management || !path.starts_with("/v2"))
        }),
    );
    let route = found.as_ref().map(|f| f.route);
    let mut obs = Observed::new(
        Protocol::Rest,
        route.map_or(metrics::Route::Other, |r| r.metric),
    );
    let request_id = req.headers().get("x-request-id").cloned();
    if let Some(id) = request_id.as_ref().and_then(|v| v.to_str().ok()) {
        obs.id = id.to_owned();
    }
    obs.traced(&app, req.headers());
    let refused = crate::auth::admit(
        app.config.auth.as_deref(),
        app.config.allow_unauthenticated_repository,
        routes::access(found.as_ref(), &method),
        req.headers()
            .get(http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok()),
    )
    .err();
    let result = match (refused, found) {
        (Some(refusal), _) => {
            let e = refusal.to_error();
            let mut r = error(family, port, &path, &e);
            if e.kind == Kind::Unauthenticated {
                r.headers_mut().insert(
                    http::header::WWW_AUTHENTICATE,
                    HeaderValue::from_static("Bearer realm=\"inferwire\""),
                );
            }
            Ok(r)
        }
        (None, None) if port == Port::Management => Err(ServeError::new(
            Kind::NotFound,
            super::torchserve::NO_RESOURCE,
        )),
        (None, None) => match app.models.custom_route(method.as_str(), &path) {
            Some(model) => {
                obs.model = model.slot;
                super::custom::handle(&app, &model, req, &path, &obs).await
            }
            None if family == Some("torchserve") => Err(ServeError::new(
                Kind::NotFound,
                super::torchserve::NO_RESOURCE,
            )),
            None => Err(routes::no_route_for(&method, &path)),
        },
        (None, Some(found)) => {
            if found.route.default_model {
                obs.model = app.default_slot();
            }
            match found.route.handler(&method) {
                None => Err(found.route.not_allowed(&method, &path)),
                Some(handler) => {
                    handler(Ctx {
                        app: &app,
                        req,
                        obs: &mut obs,
                        path: &path,
                        name: found.name,
                        version: found.version,
                        peer,
                        port,
                    })
                    .await
                }
            }
        }
    };
    let mut reply = result.unwrap_or_else(|e| error(family, port, &path, &e));
    if let Some(id) = request_id {
        reply.headers_mut().insert("x-request-id", id);
    }
    if let Some(c) = cors {
        c.decorate(origin.as_ref(), &mut reply);
    }
    let status = reply.status().as_u16();
    obs.finish(&app, Code::Http(status), &format!("{method} {path}"));
    reply
}

/// Whether a route for listener `route` is served on a connection to `on`: the
/// management API on its own port, or on the REST port when it shares it; KServe's v1
/// routes on the KServe wrapper's port and the REST port (TorchServe's frontend serves
/// them too), and of the REST port's routes the wrapper's port serves V2's health,
/// metadata and model routes, as KServe's model server; everything else on the REST
/// port only.
fn serves(app: &App, route: Port, on: Port, path: &str) -> bool {
    match (route, on) {
        _ if route == on => true,
        (Port::MainAndManagement, Port::Main | Port::Management) => true,
        (Port::Management, Port::Main) => app.config.management_port.is_none(),
        (Port::KServe, Port::Main) => true,
        (Port::Main, Port::KServe) => {
            path == "/v2" || path.starts_with("/v2/health/") || path.starts_with("/v2/models/")
        }
        _ => false,
    }
}

/// An error in the shape of the route's dialect (`family`), or the path's protocol; on
/// the KServe wrapper's port, KServe's `{"error": ...}`.
fn error(family: Option<&str>, port: Port, path: &str, e: &ServeError) -> Reply {
    if port == Port::KServe {
        super::v2::error(e)
    } else if family == Some("torchserve") {
        super::torchserve::error(e)
    } else if path.starts_with("/v2") {
        super::v2::error(e)
    } else {
        body::error(e)
    }
}

/// `/seldon/ns/name/api/v1.0/predictions` → `/api/v1.0/predictions`; also
/// `/seldon/name/api/...`, which SeldonClient sends when given no namespace.
fn strip_ingress_prefix(path: &str) -> &str {
    let Some(rest) = path.strip_prefix("/seldon/") else {
        return path;
    };
    let tail_at = |rest: &str, n: usize| rest.splitn(n + 1, '/').nth(n).map(str::len);
    let two = tail_at(rest, 2);
    let one = tail_at(rest, 1);
    let api = |len: Option<usize>| len.is_some_and(|l| path[path.len() - l..].starts_with("api/"));
    let tail = match (two, one) {
        (two, Some(one)) if !api(two) && api(Some(one)) => one,
        (Some(two), _) => two,
        _ => return path,
    };
    &path[path.len() - tail - 1..]
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
        assert_eq!(
            strip_ingress_prefix("/seldon/model/api/v1.0/predictions"),
            "/api/v1.0/predictions"
        );
        // A deployment named `api` in namespace `x`.
        assert_eq!(
            strip_ingress_prefix("/seldon/x/api/api/v1.0/predictions"),
            "/api/v1.0/predictions"
        );
        assert_eq!(
            strip_ingress_prefix("/seldon/ns/dep/v2/models"),
            "/v2/models"
        );
    }
}
