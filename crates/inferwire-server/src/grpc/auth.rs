//! Bearer tokens on gRPC: every call but health, reflection and V2's liveness and
//! readiness needs `authorization: Bearer <token>` metadata with the method's scope
//! (`auth::grpc_access`); without auth, the repository calls are refused unless allowed
//! explicitly. Refused calls get UNAUTHENTICATED or PERMISSION_DENIED before any message
//! is read.
use std::sync::Arc;
use std::task::{Context, Poll};

use tonic::codegen::BoxFuture;
use tower::{Layer, Service};

use crate::auth::{admit, grpc_access, Auth};

#[derive(Clone)]
pub struct AuthLayer {
    pub auth: Option<Arc<Auth>>,
    pub allow_unauthenticated_repository: bool,
}

impl<S> Layer<S> for AuthLayer {
    type Service = Checked<S>;

    fn layer(&self, inner: S) -> Checked<S> {
        Checked {
            inner,
            layer: self.clone(),
        }
    }
}

#[derive(Clone)]
pub struct Checked<S> {
    inner: S,
    layer: AuthLayer,
}

impl<S, B> Service<http::Request<B>> for Checked<S>
where
    S: Service<http::Request<B>, Response = http::Response<tonic::body::Body>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = BoxFuture<Self::Response, Self::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        let header = req
            .headers()
            .get(http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        let admitted = admit(
            self.layer.auth.as_deref(),
            self.layer.allow_unauthenticated_repository,
            grpc_access(req.uri().path()),
            header,
        );
        if let Err(refusal) = admitted {
            let message = refusal.to_string();
            let status = if refusal.is_forbidden() {
                tonic::Status::permission_denied(message)
            } else {
                tonic::Status::unauthenticated(message)
            };
            return Box::pin(async move { Ok(status.into_http()) });
        }
        Box::pin(self.inner.call(req))
    }
}
