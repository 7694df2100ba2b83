//! `Predict` on both Seldon services, routed around tonic's generated handler: the request
//! reaches `proto::decode_message` as one contiguous buffer, which reads the common shapes
//! in one pass straight into typed buffers instead of building prost's message tree. The
//! generated servers still answer every other method.
use std::convert::Infallible;
use std::task::{Context, Poll};

use bytes::Bytes;
use inferwire_codec::pb::seldon::protos as pb;
use inferwire_codec::protocol::seldon::proto;
use tonic::codegen::{Body, BoxFuture, Service, StdError};
use tonic::server::{Grpc, NamedService, UnaryService};
use tonic::{Request, Response, Status};

use super::codec::RawRequestCodec;
use super::methods::{Handler, Rpc};
use super::seldon::SeldonService;
use super::timeout::client_timeout;
use crate::error::ServeError;
use crate::metrics::{Code, Encoding};

/// Wraps a generated server (`S`) and takes over its `Predict` method (`rpc`, a row of
/// `grpc::methods` that `FastPredict` serves).
#[derive(Clone)]
pub struct FastPredict<S> {
    inner: S,
    svc: SeldonService,
    rpc: &'static Rpc,
    max_decoding: usize,
}

impl<S: NamedService> FastPredict<S> {
    pub fn new(inner: S, svc: SeldonService, max_decoding: usize, rpc: &'static Rpc) -> Self {
        debug_assert_eq!(rpc.handler, Handler::FastPredict);
        Self {
            inner,
            svc,
            rpc,
            max_decoding,
        }
    }
}

impl<S: NamedService> NamedService for FastPredict<S> {
    const NAME: &'static str = S::NAME;
}

impl<S, B> Service<http::Request<B>> for FastPredict<S>
where
    S: Service<http::Request<B>, Response = http::Response<tonic::body::Body>, Error = Infallible>,
    S::Future: Send + 'static,
    B: Body + Send + 'static,
    B::Error: Into<StdError> + Send + 'static,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response, Infallible>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        if req.uri().path() != self.rpc.path {
            return Box::pin(self.inner.call(req));
        }
        let method = RawPredict(self.svc.clone(), self.rpc);
        let mut grpc = Grpc::new(RawRequestCodec)
            .accept_compressed(tonic::codec::CompressionEncoding::Gzip)
            .accept_compressed(tonic::codec::CompressionEncoding::Deflate)
            .max_decoding_message_size(self.max_decoding)
            .max_encoding_message_size(usize::MAX);
        Box::pin(async move { Ok(grpc.unary(method, req).await) })
    }
}

struct RawPredict(SeldonService, &'static Rpc);

impl UnaryService<Bytes> for RawPredict {
    type Response = pb::SeldonMessage;
    type Future = BoxFuture<Response<pb::SeldonMessage>, Status>;

    fn call(&mut self, req: Request<Bytes>) -> Self::Future {
        let (svc, rpc) = (self.0.clone(), self.1);
        Box::pin(async move {
            let mut obs = rpc.observe();
            obs.model = svc.0.default_slot();
            if let Some(id) = req.metadata().get("x-request-id") {
                obs.id = id.to_str().unwrap_or_default().to_owned();
            }
            obs.traced(&svc.0, req.metadata().as_ref());
            let deadline = svc.0.deadline(obs.start, client_timeout(req.metadata()));
            let text = |key: &str| {
                req.metadata()
                    .get(key)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned)
            };
            // `x-content-type` says binData holds a body as REST would take it (.npy,
            // msgpack-numpy, an image...): one binary format for both transports.
            let (content_type, accept) = (text("x-content-type"), text("x-accept"));
            // The `seldon` header is Seldon's gRPC ingress, whose executor gives every
            // request a puid.
            let ingress = text("seldon").is_some();
            let run = async {
                let limits = svc.0.config.limits;
                let mut msg = proto::decode_message(req.into_inner(), &limits)
                    .map_err(|e| ServeError::from(e).to_status())?;
                if ingress && msg.meta.puid.is_empty() {
                    msg.meta.puid = crate::uuid::v4();
                }
                obs.encoding = Encoding::of_payload(&msg.payload);
                if obs.id.is_empty() {
                    obs.id.clone_from(&msg.meta.puid);
                }
                match content_type {
                    Some(ct) => {
                        let (reply, media) = svc
                            .predict_bin_media(msg, &ct, accept, deadline, &mut obs)
                            .await?;
                        let mut r = Response::new(reply);
                        if let Ok(v) = media.parse() {
                            r.metadata_mut().insert("x-content-type", v);
                        }
                        Ok(r)
                    }
                    None => svc.predict_message(msg, deadline).await.map(Response::new),
                }
            };
            let result = run.await;
            obs.finish(&svc.0, Code::of_grpc(&result), rpc.name());
            result
        })
    }
}
