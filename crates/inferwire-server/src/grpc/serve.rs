//! The gRPC server: Seldon services, `grpc.health.v1.Health` and server reflection.
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::sync::watch;

use super::generated::{model_server::ModelServer, seldon_server::SeldonServer};
use super::generated_v2::grpc_inference_service_server::GrpcInferenceServiceServer;
use super::predict::FastPredict;
use super::seldon::SeldonService;
use super::v2::V2Service;
use crate::app::App;

/// HTTP/2 flow-control windows (shared with REST's h2c): room for a large tensor.
pub const STREAM_WINDOW: u32 = 4 * 1024 * 1024;
pub const CONNECTION_WINDOW: u32 = 16 * 1024 * 1024;

/// Serves until `stop` flips to true; tonic then drains open calls.
pub async fn serve(app: Arc<App>, listener: TcpListener, mut stop: watch::Receiver<bool>) {
    let limit = app.config.max_body_bytes;
    let svc = SeldonService(app.clone());
    let seldon = SeldonServer::new(svc.clone())
        .max_decoding_message_size(limit)
        .max_encoding_message_size(usize::MAX);
    let seldon = FastPredict::new(seldon, svc.clone(), limit);
    let model = ModelServer::new(svc.clone())
        .max_decoding_message_size(limit)
        .max_encoding_message_size(usize::MAX);
    let model = FastPredict::new(model, svc, limit);
    let v2 = GrpcInferenceServiceServer::new(V2Service(app.clone()))
        .max_decoding_message_size(limit)
        .max_encoding_message_size(usize::MAX);

    let (health, health_svc) = tonic_health::server::health_reporter();
    health.set_serving::<SeldonServer<SeldonService>>().await;
    health.set_serving::<ModelServer<SeldonService>>().await;
    health
        .set_serving::<GrpcInferenceServiceServer<V2Service>>()
        .await;

    let reflection = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(inferwire_codec::pb::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1()
        .expect("the built-in descriptors are valid");
    let reflection_alpha = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(inferwire_codec::pb::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1alpha()
        .expect("the built-in descriptors are valid");

    let tls = app.config.tls.clone().map(tokio_rustls::TlsAcceptor::from);
    let stop_accepting = stop.clone();
    let shutdown = async move {
        let _ = stop.changed().await;
        health
            .set_not_serving::<SeldonServer<SeldonService>>()
            .await;
        health.set_not_serving::<ModelServer<SeldonService>>().await;
        health
            .set_not_serving::<GrpcInferenceServiceServer<V2Service>>()
            .await;
        // The empty name stands for the whole server (grpc.health.v1).
        health
            .set_service_status("", tonic_health::ServingStatus::NotServing)
            .await;
    };
    let router = tonic::transport::Server::builder()
        // HTTP/2's default 64 KiB windows make a client wait for WINDOW_UPDATEs a dozen
        // times per 800 KB tensor: each a round trip and a wake-up on both sides.
        .initial_stream_window_size(STREAM_WINDOW)
        .initial_connection_window_size(CONNECTION_WINDOW)
        .max_concurrent_streams(app.config.max_streams)
        .layer(tower::util::MapResponseLayer::new(
            super::codec::oversize_is_resource_exhausted,
        ))
        .layer(super::auth::AuthLayer {
            auth: app.config.auth.clone(),
            allow_unauthenticated_repository: app.config.allow_unauthenticated_repository,
        })
        .add_service(seldon)
        .add_service(model)
        .add_service(v2)
        .add_service(health_svc)
        .add_service(reflection)
        .add_service(reflection_alpha);
    let incoming =
        super::incoming::incoming(listener, tls, app.connections.clone(), stop_accepting);
    let result = router
        .serve_with_incoming_shutdown(incoming, shutdown)
        .await;
    if let Err(e) = result {
        tracing::error!("gRPC server stopped: {e}");
    }
}
