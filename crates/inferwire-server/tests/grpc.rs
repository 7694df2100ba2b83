//! The whole server over gRPC (a tonic client), with a stub model: Seldon `Predict`,
//! V2 `ModelInfer`, and the status codes of overload and deadlines.
mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{grpc, infer_request, rows, server_config, unary, until, Server, Stub};
use inferwire_codec::pb::inference as v2pb;
use inferwire_codec::pb::seldon::protos as pb;
use inferwire_codec::protocol::seldon::proto;
use inferwire_codec::protocol::v2::proto as v2proto;
use inferwire_codec::{Limits, TensorData};

const PREDICT: &str = "/seldon.protos.Model/Predict";
const INFER: &str = "/inference.GRPCInferenceService/ModelInfer";

fn predict_request(values: &[f64]) -> pb::SeldonMessage {
    proto::to_pb(rows(&[values])).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seldon_predict_and_v2_infer_reach_the_model() {
    let stub = Arc::new(Stub::new());
    let server = Server::start(stub.clone(), server_config());
    let mut client = grpc(server.grpc).await;

    let reply: pb::SeldonMessage = unary(&mut client, PREDICT, predict_request(&[1.0, 2.0]))
        .await
        .expect("Predict");
    let reply = proto::from_pb(reply, &Limits::default()).unwrap();
    assert_eq!(
        common::values(&inferwire_server::Prediction::Message(reply)),
        vec![2.0, 4.0]
    );

    let request = v2proto::to_pb_request(infer_request(&[&[1.0, 3.0]]), "model", false);
    let reply: v2pb::ModelInferResponse = unary(&mut client, INFER, request)
        .await
        .expect("ModelInfer");
    assert_eq!(reply.model_name, "model");
    let reply = v2proto::response_from_pb(reply, &Limits::default()).unwrap();
    assert_eq!(reply.outputs[0].name, "y");
    assert_eq!(
        reply.outputs[0].tensor.data,
        TensorData::F64(vec![2.0, 6.0])
    );

    assert_eq!(stub.predicts(), 1);
    assert_eq!(stub.infers(), vec![1]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_model_with_no_queue_answers_resource_exhausted() {
    let (stub, server) = Server::held(inferwire_server::ServerConfig {
        max_queue: 0,
        ..server_config()
    });
    let addr = server.grpc;
    let first = tokio::spawn(async move {
        let mut client = grpc(addr).await;
        unary::<_, pb::SeldonMessage>(&mut client, PREDICT, predict_request(&[1.0])).await
    });
    until("the first request to reach the model", || {
        stub.entered() == 1
    })
    .await;

    let mut client = grpc(addr).await;
    let status = unary::<_, pb::SeldonMessage>(&mut client, PREDICT, predict_request(&[2.0]))
        .await
        .expect_err("refused");
    assert_eq!(status.code(), tonic::Code::ResourceExhausted);
    assert!(status.message().contains("retry later"), "{status:?}");

    stub.release();
    first.await.unwrap().expect("the first request is answered");
    assert_eq!(stub.predicts(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_past_the_server_timeout_answers_deadline_exceeded() {
    let (stub, server) = Server::held(inferwire_server::ServerConfig {
        timeout: Some(Duration::from_millis(300)),
        ..server_config()
    });
    let mut client = grpc(server.grpc).await;
    let request = v2proto::to_pb_request(infer_request(&[&[1.0]]), "model", false);
    let status = unary::<_, v2pb::ModelInferResponse>(&mut client, INFER, request)
        .await
        .expect_err("too slow");
    assert_eq!(status.code(), tonic::Code::DeadlineExceeded);
    stub.release();
}
