//! Seldon's other graph component services: `Generic`, `Transformer`,
//! `OutputTransformer`, `Router` and `Combiner`, all served by every component as
//! seldon-core's wrapper does; each method runs the default model's operation.
use inferwire_codec::pb::seldon::protos as pb;
use inferwire_codec::protocol::seldon::{proto, SeldonMessage};
use tonic::{Request, Response, Status};

use super::generated::{
    combiner_server, generic_server, output_transformer_server, router_server, transformer_server,
};
use super::methods::{self, Rpc};
use super::seldon::{reply_to_pb, SeldonService};
use super::timeout::client_timeout;
use crate::error::{Kind, ServeError};
use crate::metrics::{Code, Encoding};
use crate::runner::Component;

type Result<T> = std::result::Result<Response<T>, Status>;

impl SeldonService {
    /// `transform_input`, `transform_output` or `route` on one message.
    async fn one(
        &self,
        req: Request<pb::SeldonMessage>,
        rpc: &Rpc,
        call: fn(SeldonMessage) -> Component,
    ) -> Result<pb::SeldonMessage> {
        let limits = &self.0.config.limits;
        self.component(req, rpc, |m| Ok(call(proto::from_pb(m, limits)?)))
            .await
    }

    /// `aggregate` over a SeldonMessageList.
    async fn aggregate(
        &self,
        req: Request<pb::SeldonMessageList>,
        rpc: &Rpc,
    ) -> Result<pb::SeldonMessage> {
        let limits = &self.0.config.limits;
        self.component(req, rpc, |list| {
            if list.seldon_messages.is_empty() {
                return Err(ServeError::new(
                    Kind::BadRequest,
                    "Aggregate: seldonMessages is empty; a combiner needs at least one message",
                ));
            }
            let msgs = list
                .seldon_messages
                .into_iter()
                .map(|m| proto::from_pb(m, limits))
                .collect::<std::result::Result<Vec<_>, _>>()?;
            Ok(Component::Aggregate(msgs))
        })
        .await
    }

    /// Decodes a request into its call, runs it on the default model and counts it.
    async fn component<T>(
        &self,
        req: Request<T>,
        rpc: &Rpc,
        decode: impl FnOnce(T) -> std::result::Result<Component, ServeError>,
    ) -> Result<pb::SeldonMessage> {
        let app = &self.0;
        let mut obs = rpc.observe();
        obs.model = app.default_slot();
        obs.traced(app, req.metadata().as_ref());
        let deadline = app.deadline(obs.start, client_timeout(req.metadata()));
        let run = async {
            let call = decode(req.into_inner())?;
            obs.encoding = match &call {
                Component::TransformInput(m)
                | Component::TransformOutput(m)
                | Component::Route(m) => Encoding::of_payload(&m.payload),
                Component::Aggregate(ms) => ms
                    .first()
                    .map_or(Encoding::None, |m| Encoding::of_payload(&m.payload)),
            };
            reply_to_pb(crate::seldon::component(app, call, deadline).await?)
        };
        let result = run.await.map_err(|e: ServeError| e.to_status());
        obs.finish(app, Code::of_grpc(&result), rpc.name());
        result.map(Response::new)
    }
}

#[tonic::async_trait]
impl generic_server::Generic for SeldonService {
    async fn transform_input(&self, req: Request<pb::SeldonMessage>) -> Result<pb::SeldonMessage> {
        self.one(
            req,
            &methods::GENERIC_TRANSFORM_INPUT,
            Component::TransformInput,
        )
        .await
    }

    async fn transform_output(&self, req: Request<pb::SeldonMessage>) -> Result<pb::SeldonMessage> {
        self.one(
            req,
            &methods::GENERIC_TRANSFORM_OUTPUT,
            Component::TransformOutput,
        )
        .await
    }

    async fn route(&self, req: Request<pb::SeldonMessage>) -> Result<pb::SeldonMessage> {
        self.one(req, &methods::GENERIC_ROUTE, Component::Route)
            .await
    }

    async fn aggregate(&self, req: Request<pb::SeldonMessageList>) -> Result<pb::SeldonMessage> {
        SeldonService::aggregate(self, req, &methods::GENERIC_AGGREGATE).await
    }

    async fn send_feedback(&self, req: Request<pb::Feedback>) -> Result<pb::SeldonMessage> {
        self.feedback(req, &methods::GENERIC_FEEDBACK).await
    }
}

#[tonic::async_trait]
impl router_server::Router for SeldonService {
    async fn route(&self, req: Request<pb::SeldonMessage>) -> Result<pb::SeldonMessage> {
        self.one(req, &methods::ROUTER_ROUTE, Component::Route)
            .await
    }

    async fn send_feedback(&self, req: Request<pb::Feedback>) -> Result<pb::SeldonMessage> {
        self.feedback(req, &methods::ROUTER_FEEDBACK).await
    }
}

#[tonic::async_trait]
impl transformer_server::Transformer for SeldonService {
    async fn transform_input(&self, req: Request<pb::SeldonMessage>) -> Result<pb::SeldonMessage> {
        self.one(
            req,
            &methods::TRANSFORMER_TRANSFORM_INPUT,
            Component::TransformInput,
        )
        .await
    }
}

#[tonic::async_trait]
impl output_transformer_server::OutputTransformer for SeldonService {
    async fn transform_output(&self, req: Request<pb::SeldonMessage>) -> Result<pb::SeldonMessage> {
        self.one(
            req,
            &methods::OUTPUT_TRANSFORMER_TRANSFORM_OUTPUT,
            Component::TransformOutput,
        )
        .await
    }
}

#[tonic::async_trait]
impl combiner_server::Combiner for SeldonService {
    async fn aggregate(&self, req: Request<pb::SeldonMessageList>) -> Result<pb::SeldonMessage> {
        SeldonService::aggregate(self, req, &methods::COMBINER_AGGREGATE).await
    }
}
