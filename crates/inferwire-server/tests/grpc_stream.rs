//! gRPC `ModelStreamInfer` with a model that streams (a stub generator, no Python): many
//! pieces per request then the empty final reply, a generator failing mid-stream, a
//! reader that takes nothing holding the model, and a cancelled call stopping it.
mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{grpc, server_config, until, Server, H2, PATIENCE};
use inferwire_codec::pb::inference as pb;
use inferwire_codec::pb::inference::infer_parameter::ParameterChoice;
use inferwire_codec::protocol::v2::{InferOutput, InferRequest};
use inferwire_codec::{Tensor, TensorData};
use inferwire_server::stream::Piece;
use inferwire_server::{BlockingPieces, Model, ModelError, Pieces};
use tokio_stream::StreamExt;

const STREAM: &str = "/inference.GRPCInferenceService/ModelStreamInfer";

/// Yields `x[0]` pieces, piece `i` an output `y` of `x[2]` copies of `i` (at least one);
/// fails at piece `x[1]` when that is not negative. Counts the pieces it made and notes
/// when it was closed early.
#[derive(Default)]
struct Generator {
    made: Arc<AtomicUsize>,
    closed: Arc<AtomicBool>,
}

struct Counting {
    n: usize,
    fail_at: Option<usize>,
    width: usize,
    next: usize,
    made: Arc<AtomicUsize>,
    closed: Arc<AtomicBool>,
}

impl BlockingPieces for Counting {
    fn next(&mut self) -> Option<Piece> {
        if self.next >= self.n {
            return None;
        }
        let i = self.next;
        self.next += 1;
        if self.fail_at == Some(i) {
            return Some(Err(ModelError {
                kind: inferwire_server::ModelErrorKind::Raised,
                message: format!("the generator failed at piece {i}"),
                body: None,
            }));
        }
        self.made.fetch_add(1, Ordering::SeqCst);
        let tensor = Tensor::new(
            vec![self.width],
            TensorData::F64(vec![i as f64; self.width]),
        );
        Some(Ok(vec![InferOutput {
            name: "y".into(),
            tensor: tensor.expect("a tensor"),
            parameters: Default::default(),
        }]))
    }

    fn close(&mut self) {
        self.closed.store(true, Ordering::SeqCst);
    }
}

impl Model for Generator {
    fn streams(&self) -> bool {
        true
    }

    fn infer_stream(&self, request: InferRequest) -> Result<Pieces, ModelError> {
        let x = request.inputs[0]
            .tensor
            .data
            .to_f64_vec()
            .ok_or_else(|| ModelError::bad_input("numbers only"))?;
        let at = |i: usize| x.get(i).copied().unwrap_or(-1.0);
        Ok(Pieces::Blocking(Box::new(Counting {
            n: at(0) as usize,
            fail_at: (at(1) >= 0.0).then_some(at(1) as usize),
            width: (at(2) as usize).max(1),
            next: 0,
            made: self.made.clone(),
            closed: self.closed.clone(),
        })))
    }
}

fn request(id: &str, x: &[f64], empty_final: bool) -> pb::ModelInferRequest {
    let mut r = pb::ModelInferRequest {
        model_name: "model".into(),
        id: id.into(),
        inputs: vec![pb::model_infer_request::InferInputTensor {
            name: "x".into(),
            datatype: "FP64".into(),
            shape: vec![x.len() as i64],
            ..Default::default()
        }],
        raw_input_contents: vec![x.iter().flat_map(|v| v.to_le_bytes()).collect()],
        ..Default::default()
    };
    if empty_final {
        r.parameters.insert(
            "triton_enable_empty_final_response".into(),
            pb::InferParameter {
                parameter_choice: Some(ParameterChoice::BoolParam(true)),
            },
        );
    }
    r
}

async fn call(
    client: &mut tonic::client::Grpc<H2>,
    requests: Vec<pb::ModelInferRequest>,
) -> tonic::Streaming<pb::ModelStreamInferResponse> {
    client.ready().await.expect("the connection is ready");
    let codec =
        tonic_prost::ProstCodec::<pb::ModelInferRequest, pb::ModelStreamInferResponse>::default();
    client
        .streaming(
            tonic::Request::new(tokio_stream::iter(requests)),
            http::uri::PathAndQuery::from_static(STREAM),
            codec,
        )
        .await
        .expect("the call starts")
        .into_inner()
}

/// A reply as (id, first value of each output, final flag, error message).
fn seen(r: &pb::ModelStreamInferResponse) -> (String, Vec<f64>, Option<bool>, String) {
    let i = r.infer_response.clone().unwrap_or_default();
    let fin = match i
        .parameters
        .get("triton_final_response")
        .and_then(|p| p.parameter_choice.clone())
    {
        Some(ParameterChoice::BoolParam(b)) => Some(b),
        _ => None,
    };
    let values = i
        .raw_output_contents
        .iter()
        .map(|b| f64::from_le_bytes(b[..8].try_into().unwrap()))
        .collect();
    (i.id, values, fin, r.error_message.clone())
}

fn piece(id: &str, v: f64) -> (String, Vec<f64>, Option<bool>, String) {
    (id.into(), vec![v], Some(false), String::new())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pieces_then_the_empty_final_reply_in_order() {
    let server = Server::start(Arc::new(Generator::default()), server_config());
    let mut client = grpc(server.grpc).await;
    let replies = call(
        &mut client,
        vec![
            request("a", &[3.0], true),
            request("b", &[2.0], false),
            request("c", &[4.0, 2.0], true),
            request("d", &[1.0], true),
        ],
    )
    .await;
    let got: Vec<_> = replies.map(|r| seen(&r.expect("a reply"))).collect().await;
    let want = vec![
        piece("a", 0.0),
        piece("a", 1.0),
        piece("a", 2.0),
        ("a".into(), vec![], Some(true), String::new()),
        piece("b", 0.0),
        piece("b", 1.0),
        piece("c", 0.0),
        piece("c", 1.0),
        (
            "c".into(),
            vec![],
            None,
            "the generator failed at piece 2".into(),
        ),
        piece("d", 0.0),
        ("d".into(), vec![], Some(true), String::new()),
    ];
    assert_eq!(got, want);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_taking_nothing_holds_the_model_and_a_cancel_stops_it() {
    let model = Arc::new(Generator::default());
    let (made, closed) = (model.made.clone(), model.closed.clone());
    let server = Server::start(model, server_config());
    let mut client = grpc(server.grpc).await;
    // Endless pieces of 64 KiB each.
    let mut replies = call(
        &mut client,
        vec![request("big", &[1e12, -1.0, 8192.0], false)],
    )
    .await;
    let first = replies.next().await.expect("a reply").expect("a piece");
    assert_eq!(seen(&first).1, vec![0.0]);
    // The reader takes nothing more: the windows and the small queue fill, and the model
    // stops making pieces (a few MiB ahead at most).
    let mut last = usize::MAX;
    let start = std::time::Instant::now();
    loop {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let now = made.load(Ordering::SeqCst);
        if now == last {
            break;
        }
        last = now;
        assert!(
            start.elapsed() < PATIENCE,
            "the model never paused: {now} pieces"
        );
    }
    assert!(
        last < 1000,
        "{last} pieces of 64 KiB made for a reader that took one"
    );
    assert!(!closed.load(Ordering::SeqCst));
    // Cancel: the call's replies are dropped, and the generator is closed at its next
    // piece.
    drop(replies);
    drop(client);
    until("the generator is closed", || closed.load(Ordering::SeqCst)).await;
}
