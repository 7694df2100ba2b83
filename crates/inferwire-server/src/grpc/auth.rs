//! Bearer tokens on gRPC: every call but health, reflection and V2's liveness and
//! readiness needs `authorization: Bearer <token>` metadata with the method's scope
//! (`auth::grpc_scope`). Refused calls get UNAUTHENTICATED or PERMISSION_DENIED before
//! any message is read.
use std::sync::Arc;
use std::task::{Context, Poll};

use tonic::codegen::BoxFuture;
use tower::{Layer, Service};

use crate::auth::{grpc_scope, Auth, Refusal};

#[derive(Clone)]
pub struct AuthLayer(pub Option<Arc<Auth>>);

impl<S> Layer<S> for AuthLayer {
    type Service = Checked<S>;

    fn layer(&self, inner: S) -> Checked<S> {
        Checked {
            inner,
            auth: self.0.clone(),
        }
    }
}

#[derive(Clone)]
pub struct Checked<S> {
    inner: S,
    auth: Option<Arc<Auth>>,
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
        if let Some(auth) = &self.auth {
            if let Some(need) = grpc_scope(req.uri().path()) {
                let header = req
                    .headers()
                    .get(http::header::AUTHORIZATION)
                    .and_then(|v| v.to_str().ok());
                if let Err(refusal) = auth.check(header, need) {
                    let message = refusal.to_string();
                    let status = match refusal {
                        Refusal::Forbidden { .. } => tonic::Status::permission_denied(message),
                        _ => tonic::Status::unauthenticated(message),
                    };
                    return Box::pin(async move { Ok(status.into_http()) });
                }
            }
        }
        Box::pin(self.inner.call(req))
    }
}
