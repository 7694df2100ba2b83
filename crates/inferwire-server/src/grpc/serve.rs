//! The gRPC servers: on the gRPC port, the Seldon, V2 and TorchServe inference services;
//! on TorchServe's management port (`grpc_management_port`), its management service; on
//! KServe's wrapper's gRPC port (`kserve_grpc_port`), KServe's V2 service; each with
//! `grpc.health.v1.Health`, server reflection, and the same bounds and layers.
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
use super::generated_torchserve::management::management_ap_is_service_server::ManagementApIsServiceServer;
use super::generated_v2::grpc_inference_service_server::GrpcInferenceServiceServer;
use super::generated_v2::model_repository::model_repository_service_server::ModelRepositoryServiceServer;
use super::kserve::KServeV2;
use super::methods;
use super::predict::FastPredict;
use super::seldon::SeldonService;
use super::torchserve::TorchServeService;
use super::torchserve_management::TorchServeManagement;
use super::v2::V2Service;
use crate::app::App;

/// The longest a drain waits for every open health Watch stream to take NOT_SERVING
/// before GOAWAY (a client that reads nothing would hold it back for ever).
const WATCH_TOLD_WITHIN: std::time::Duration = std::time::Duration::from_secs(1);

/// The gRPC port's server, until `stop` flips to true; tonic then drains open calls.
pub async fn serve(app: Arc<App>, listener: TcpListener, stop: watch::Receiver<bool>) {
    serve_on(app, listener, stop, Port::Main).await;
}

/// TorchServe's gRPC management port's server (`grpc_management_port`), until `stop`.
pub async fn serve_management(app: Arc<App>, listener: TcpListener, stop: watch::Receiver<bool>) {
    serve_on(app, listener, stop, Port::Management).await;
}

/// KServe's V2 gRPC as TorchServe's KServe image serves it (`kserve_grpc_port`), until
/// `stop`.
pub async fn serve_kserve(app: Arc<App>, listener: TcpListener, stop: watch::Receiver<bool>) {
    serve_on(app, listener, stop, Port::KServe).await;
}

/// Which gRPC listener a server is for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Port {
    Main,
    Management,
    KServe,
}

/// TorchServe's management service (`inferwire torchserve`), bounded as the others.
fn management_service(
    app: &Arc<App>,
    limit: usize,
) -> ManagementApIsServiceServer<TorchServeManagement> {
    ManagementApIsServiceServer::new(TorchServeManagement(app.clone()))
        .accept_compressed(Gzip)
        .accept_compressed(Deflate)
        .max_decoding_message_size(limit)
        .max_encoding_message_size(usize::MAX)
}

async fn serve_on(
    app: Arc<App>,
    listener: TcpListener,
    mut stop: watch::Receiver<bool>,
    port: Port,
) {
    let limit = app.config.max_body_bytes;
    let torchserve_dialect = methods::TS_PREDICTIONS.served_in(app.config.dialect.name());
    // The management service: on its own port, or on this one where it has none (as
    // REST's management routes are on the REST port without `management_port`).
    let management = match port {
        Port::Management => Some(management_service(&app, limit)),
        Port::Main => (torchserve_dialect && app.config.grpc_management_port.is_none())
            .then(|| management_service(&app, limit)),
        Port::KServe => None,
    };
    let kserve = (port == Port::KServe).then(|| {
        GrpcInferenceServiceServer::new(KServeV2(app.clone()))
            .accept_compressed(Gzip)
            .accept_compressed(Deflate)
            .max_decoding_message_size(limit)
            .max_encoding_message_size(usize::MAX)
    });
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
    let torchserve = torchserve_dialect.then(|| {
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

    let descriptors = Descriptors {
        main: port != Port::Management,
        torchserve: torchserve.is_some() && port == Port::Main,
        management: management.is_some(),
    };
    let reflection = reflected(descriptors)
        .build_v1()
        .expect("the built-in descriptors are valid")
        .accept_compressed(Gzip)
        .accept_compressed(Deflate)
        .max_decoding_message_size(limit);
    let reflection_alpha = reflected(descriptors)
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
        .add_service(health_svc)
        .add_service(reflection)
        .add_service(reflection_alpha)
        .add_optional_service(management)
        .add_optional_service(kserve);
    let router = if port == Port::Main {
        router
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
    } else {
        router
    };
    let incoming = super::incoming::incoming(
        listener,
        tls,
        app.config.streaming.idle,
        app.config.header_timeout,
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

/// The descriptor sets a port's reflection lists.
#[derive(Clone, Copy)]
struct Descriptors {
    /// The Seldon and V2 services (the gRPC port's; V2's on KServe's).
    main: bool,
    /// TorchServe's inference service.
    torchserve: bool,
    /// TorchServe's management service.
    management: bool,
}

/// Reflection's descriptors: the services served.
fn reflected(d: Descriptors) -> tonic_reflection::server::Builder<'static> {
    let mut b = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET);
    if d.main {
        b = b.register_encoded_file_descriptor_set(inferwire_codec::pb::FILE_DESCRIPTOR_SET);
    }
    if d.torchserve {
        b = b
            .register_encoded_file_descriptor_set(super::generated_torchserve::FILE_DESCRIPTOR_SET);
    }
    if d.management {
        b = b.register_encoded_file_descriptor_set(
            super::generated_torchserve::MANAGEMENT_FILE_DESCRIPTOR_SET,
        );
    }
    b
}

#[cfg(test)]
mod tests {
    use super::{reflected, Descriptors};

    /// The descriptors reflection is built from are valid together.
    #[test]
    fn reflection_builds_with_torchserve_s_services() {
        let all = Descriptors {
            main: true,
            torchserve: true,
            management: true,
        };
        assert!(reflected(all).build_v1().is_ok());
        let management = Descriptors {
            main: false,
            torchserve: false,
            management: true,
        };
        assert!(reflected(management).build_v1alpha().is_ok());
    }
}
