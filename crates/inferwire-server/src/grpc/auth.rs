//! Bearer tokens on gRPC: every call but health, reflection and V2's liveness and
//! readiness needs `authorization: Bearer <token>` metadata with the method's scope
//! (its row in `grpc::methods`); without auth, the repository calls are refused unless
//! allowed explicitly. Refused calls get UNAUTHENTICATED or PERMISSION_DENIED before any
//! message is read, and are counted like the method's other answers. A method not in the
//! table gets UNIMPLEMENTED naming it.
use std::sync::Arc;
use std::task::{Context, Poll};

use tonic::codegen::BoxFuture;
use tower::{Layer, Service};

use super::methods;
use crate::app::App;
use crate::auth::admit;
use crate::metrics::Code;

#[derive(Clone)]
pub struct AuthLayer {
    pub app: Arc<App>,
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
        let app = &self.layer.app;
        // A method of another dialect's service is not served here.
        let method =
            methods::find(req.uri().path()).filter(|m| m.served_in(app.config.dialect.name()));
        let admitted = admit(
            app.config.auth.as_deref(),
            app.config.allow_unauthenticated_repository,
            method.map_or(methods::access(""), |m| m.access),
            header,
        );
        if let Err(refusal) = admitted {
            let status = refusal.to_error().to_status();
            if let Some(m) = method.filter(|m| m.metric.is_some()) {
                m.observe().finish(app, Code::Grpc(status.code()), m.name());
            }
            return Box::pin(async move { Ok(status.into_http()) });
        }
        if method.is_none() {
            // tonic's own answer carries no message; say which method and where the
            // served ones are listed.
            let status = tonic::Status::unimplemented(format!(
                "{} is not served by inferwire (the gRPC methods served are listed in \
                 docs/reference/v2-protocol.md and seldon-protocol.md)",
                req.uri().path()
            ));
            return Box::pin(async move { Ok(status.into_http()) });
        }
        Box::pin(self.inner.call(req))
    }
}

/// A call to `rpc` that changes what its `change_access` guards: refused as the auth
/// layer refuses a call (its table row needs less to read).
pub(super) fn admit_change(
    app: &App,
    rpc: &methods::Rpc,
    metadata: &tonic::metadata::MetadataMap,
) -> Result<(), tonic::Status> {
    let Some(access) = rpc.change_access else {
        return Ok(());
    };
    let header = metadata
        .get(http::header::AUTHORIZATION.as_str())
        .and_then(|v| v.to_str().ok());
    admit(
        app.config.auth.as_deref(),
        app.config.allow_unauthenticated_repository,
        access,
        header,
    )
    .map_err(|refusal| refusal.to_error().to_status())
}
