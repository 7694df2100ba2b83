//! Which REST routes need a token, and which scope: decided from what the router makes of
//! the path (the same `route`, `named_model` and `v2::parse` that `routes::handle` uses),
//! never from prefixes or suffixes, so that a crafted path cannot borrow an open route's
//! access while reaching another handler.
use super::routes::{is_publish, named_model, route, Route};
use super::v2::{parse, Target};
use crate::auth::Access;

/// What the request for `path` (its ingress prefix already stripped) needs.
pub fn of(path: &str) -> Access {
    // Seldon's own routes first, the common case: none of the paths below can be one.
    match route(path) {
        Some(Route::Ping | Route::Status | Route::Live | Route::Ready | Route::Metrics) => {
            return Access::OPEN
        }
        Some(_) => return Access::PREDICT,
        None => {}
    }
    // Then the order of `routes::handle`.
    if path == "/login" {
        return Access::OPEN;
    }
    if is_publish(path) {
        return Access::REPOSITORY_WRITE;
    }
    if named_model(path).is_some() {
        return Access::PREDICT;
    }
    if path.starts_with("/v2") {
        return match parse(path) {
            Some(Target::Server | Target::Live | Target::Ready | Target::ModelReady(..)) => {
                Access::OPEN
            }
            Some(Target::RepositoryIndex) => Access::REPOSITORY_READ,
            Some(Target::Load(_) | Target::Unload(_)) => Access::REPOSITORY_WRITE,
            // Unknown paths too, so a 404 says nothing to a client without a token.
            Some(Target::Model(..) | Target::Infer(..)) | None => Access::PREDICT,
        };
    }
    Access::PREDICT
}

#[cfg(test)]
mod tests {
    use super::of;
    use crate::auth::Access;

    #[test]
    fn open_routes_are_the_health_ones() {
        for p in [
            "/health/ping",
            "/api/v1.0/health/status",
            "/live",
            "/ready",
            "/metrics",
            "/login",
            "/v2",
            "/v2/health/ready",
            "/v2/models/m/ready",
            "/v2/models/m/versions/1/ready",
        ] {
            assert_eq!(of(p), Access::OPEN, "{p}");
        }
    }

    #[test]
    fn crafted_ready_suffixes_need_a_token() {
        for p in [
            "/v2/models/m/infer/ready",
            "/v2/models/ready",
            "/v2/models/m/versions/ready",
            "/v2/models/m/versions/ready/infer",
            "/v2/models//ready",
            "/v2/repository/models/m/ready",
            "/api/m/ready",
            "/api/v1.0/predictions/ready",
        ] {
            assert!(of(p).scope.is_some(), "{p}");
        }
        assert_eq!(of("/v2/models/m/infer"), Access::PREDICT);
        assert_eq!(of("/api/v1.0/predictions"), Access::PREDICT);
    }

    #[test]
    fn repository_routes() {
        for p in [
            "/api/v1.0/publish",
            "/api/v1.0/publish/m/1",
            "/v2/repository/models/m/load",
            "/v2/repository/models/m/unload",
        ] {
            assert_eq!(of(p), Access::REPOSITORY_WRITE, "{p}");
        }
        assert_eq!(of("/v2/repository/index"), Access::REPOSITORY_READ);
    }
}
