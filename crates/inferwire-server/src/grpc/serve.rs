//! The gRPC server: Seldon services, `grpc.health.v1.Health` and server reflection.
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tonic::codec::CompressionEncoding::{Deflate, Gzip};

use super::generated::combiner_server::CombinerServer;
use super::generated::generic_server::GenericServer;
use super::generated::output_transformer_server::OutputTransformerServer;
use super::generated::router_server::RouterServer;
use super::generated::transformer_server::TransformerServer;
use super::generated::{model_server::ModelServer, seldon_server::SeldonServer};
use super::generated_torchserve::inference::inference_ap_is_service_server::InferenceApIsServiceServer;
use super::generated_v2::grpc_inference_service_server::GrpcInferenceServiceServer;
use super::generated_v2::model_repository::model_repository_service_server::ModelRepositoryServiceServer;
use super::methods;
use super::predict::FastPredict;
use super::seldon::SeldonService;
use super::torchserve::TorchServeService;
use super::v2::V2Service;
use crate::app::App;

/// The longest a drain waits for every open health Watch stream to take NOT_SERVING
/// before GOAWAY (a client that reads nothing would hold it back for ever).
const WATCH_TOLD_WITHIN: std::time::Duration = std::time::Duration::from_secs(1);

/// Serves until `stop` flips to true; tonic then drains open calls.
pub async fn serve(app: Arc<App>, listener: TcpListener, mut stop: watch::Receiver<bool>) {
    let limit = app.config.max_body_bytes;
    let svc = SeldonService(app.clone());
    let seldon = SeldonServer::new(svc.clone())
        .accept_compressed(Gzip)
        .accept_compressed(Deflate)
        .max_decoding_message_size(limit)
        .max_encoding_message_size(usize::MAX);
    let seldon = FastPredict::new(seldon, svc.clone(), limit, &methods::SELDON_PREDICT);
    let model = ModelServer::new(svc.clone())
        .accept_compressed(Gzip)
        .accept_compressed(Deflate)
        .max_decoding_message_size(limit)
        .max_encoding_message_size(usize::MAX);
    // Seldon's other graph component services; the message limit as for predict.
    macro_rules! component {
        ($server:ident) => {
            $server::new(svc.clone())
                .accept_compressed(Gzip)
                .max_decoding_message_size(limit)
                .max_encoding_message_size(usize::MAX)
        };
    }
    let generic = component!(GenericServer);
    let router_svc = component!(RouterServer);
    let transformer = component!(TransformerServer);
    let output_transformer = component!(OutputTransformerServer);
    let combiner = component!(CombinerServer);
    let model = FastPredict::new(model, svc, limit, &methods::MODEL_PREDICT);
    let v2 = GrpcInferenceServiceServer::new(V2Service(app.clone()))
        .accept_compressed(Gzip)
        .accept_compressed(Deflate)
        .max_decoding_message_size(limit)
        .max_encoding_message_size(usize::MAX);
    let repository = ModelRepositoryServiceServer::new(V2Service(app.clone()))
        .accept_compressed(Gzip)
        .accept_compressed(Deflate)
        .max_decoding_message_size(limit);

    // TorchServe's inference service, in its dialect only (its rows in `methods`).
    let torchserve = methods::TS_PREDICTIONS
        .served_in(app.config.dialect.name())
        .then(|| {
            InferenceApIsServiceServer::new(TorchServeService(app.clone()))
                .accept_compressed(Gzip)
                .accept_compressed(Deflate)
                .max_decoding_message_size(limit)
                .max_encoding_message_size(usize::MAX)
        });

    let (health, health_svc) = super::health::Reporter::new();
    let health_svc = health_svc
        .accept_compressed(Gzip)
        .accept_compressed(Deflate)
        .max_decoding_message_size(limit);

    let reflection = reflected(torchserve.is_some())
        .build_v1()
        .expect("the built-in descriptors are valid")
        .accept_compressed(Gzip)
        .accept_compressed(Deflate)
        .max_decoding_message_size(limit);
    let reflection_alpha = reflected(torchserve.is_some())
        .build_v1alpha()
        .expect("the built-in descriptors are valid")
        .accept_compressed(Gzip)
        .accept_compressed(Deflate)
        .max_decoding_message_size(limit);

    let tls = app.config.tls.clone().map(tokio_rustls::TlsAcceptor::from);
    let stop_accepting = stop.clone();
    let (drained, accepted_all) = tokio::sync::oneshot::channel();
    let shutdown = async move {
        let _ = stop.changed().await;
        // Every name (the empty one is the whole server) turns NOT_SERVING, and GOAWAY
        // waits until each open Watch stream has taken that update: clients see
        // NOT_SERVING first by construction.
        if !health.not_serving(WATCH_TOLD_WITHIN).await {
            tracing::warn!("a health Watch client read nothing for 1 s; draining anyway");
        }
        // Connections accepted in the drain must reach tonic before it stops taking them.
        let _ = accepted_all.await;
    };
    let router = tonic::transport::Server::builder()
        // HTTP/2's default 64 KiB windows make a client wait for WINDOW_UPDATEs a dozen
        // times per 800 KB tensor: each a round trip and a wake-up on both sides.
        .initial_stream_window_size(crate::config::STREAM_WINDOW)
        .initial_connection_window_size(crate::config::CONNECTION_WINDOW)
        .max_concurrent_streams(app.config.max_streams)
        .layer(tower::util::MapResponseLayer::new(move |res| {
            super::codec::refusals_named(res, limit)
        }))
        .layer(tower::util::MapResponseLayer::new(
            super::trailers::with_trailers::<tonic::body::Body>,
        ))
        .layer(super::auth::AuthLayer { app: app.clone() })
        .layer(super::body_guard::BodyGuardLayer {
            budget: app.bodies.clone(),
            timeout: app.config.body_timeout,
            max_message: limit,
        })
        .add_service(seldon)
        .add_service(model)
        .add_service(generic)
        .add_service(router_svc)
        .add_service(transformer)
        .add_service(output_transformer)
        .add_service(combiner)
        .add_service(v2)
        .add_service(repository)
        .add_optional_service(torchserve)
        .add_service(health_svc)
        .add_service(reflection)
        .add_service(reflection_alpha);
    let incoming = super::incoming::incoming(
        listener,
        tls,
        app.connections.clone(),
        stop_accepting,
        drained,
    );
    let result = router
        .serve_with_incoming_shutdown(incoming, shutdown)
        .await;
    if let Err(e) = result {
        tracing::error!("gRPC server stopped: {e}");
    }
}

/// Reflection's descriptors: the services served (TorchServe's with `torchserve`).
fn reflected(torchserve: bool) -> tonic_reflection::server::Builder<'static> {
    let b = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(inferwire_codec::pb::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET);
    if torchserve {
        b.register_encoded_file_descriptor_set(super::generated_torchserve::FILE_DESCRIPTOR_SET)
    } else {
        b
    }
}

#[cfg(test)]
mod tests {
    /// The descriptors reflection is built from are valid together.
    #[test]
    fn reflection_builds_with_torchserve_s_service() {
        assert!(super::reflected(true).build_v1().is_ok());
        assert!(super::reflected(false).build_v1alpha().is_ok());
    }
}
