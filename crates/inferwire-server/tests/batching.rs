//! Dynamic batching: compatible requests gathered within `max_batch_delay` share one
//! model call, and each gets its own rows back; a failed batch runs each request alone.
mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{infer_request, near_deadline, rows, runner, values, Stub, PATIENCE};
use inferwire_codec::protocol::seldon::{Payload, SeldonMessage};
use inferwire_codec::TensorData;
use inferwire_server::model::Prediction;
use inferwire_server::runner::{Runner, RunnerConfig};

/// Batches of up to `size`, waiting for more as long as a test may take: a batch goes
/// when it is full, never because a slow machine was late.
fn batching(size: usize) -> RunnerConfig {
    RunnerConfig {
        max_concurrency: 16,
        max_batch_size: size,
        max_batch_delay: PATIENCE,
        ..common::config()
    }
}

/// Sends every message at once; the answers in the same order.
async fn predict_all(
    runner: &Arc<Runner>,
    msgs: Vec<SeldonMessage>,
) -> Vec<Result<Prediction, inferwire_server::ServeError>> {
    let calls: Vec<_> = msgs
        .into_iter()
        .map(|m| {
            let r = runner.clone();
            tokio::spawn(async move { r.predict(m, near_deadline()).await })
        })
        .collect();
    let mut out = Vec::new();
    for c in calls {
        out.push(c.await.unwrap());
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compatible_requests_share_one_call_and_get_their_own_rows() {
    let stub = Arc::new(Stub::new());
    let runner = runner(&stub, batching(4));
    let answers = predict_all(
        &runner,
        vec![
            rows(&[&[1.0, 2.0]]),
            rows(&[&[3.0, 4.0], &[5.0, 6.0]]),
            rows(&[&[7.0, 8.0]]),
            rows(&[&[9.0, 10.0]]),
        ],
    )
    .await;
    let mut got: Vec<Vec<f64>> = answers
        .iter()
        .map(|a| values(a.as_ref().unwrap()))
        .collect();
    got.sort_by(|a, b| a.partial_cmp(b).unwrap());
    assert_eq!(
        got,
        vec![
            vec![2.0, 4.0],
            vec![6.0, 8.0, 10.0, 12.0],
            vec![14.0, 16.0],
            vec![18.0, 20.0],
        ]
    );
    // Each answer is its own request's: the two-row request got two rows.
    assert_eq!(
        values(answers[1].as_ref().unwrap()),
        vec![6.0, 8.0, 10.0, 12.0]
    );
    assert_eq!(
        stub.batches(),
        vec![5],
        "one call with every request's rows"
    );
    assert_eq!(stub.predicts(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lone_request_goes_when_the_delay_passes() {
    let stub = Arc::new(Stub::new());
    let delay = Duration::from_millis(50);
    let runner = runner(
        &stub,
        RunnerConfig {
            max_batch_delay: delay,
            ..batching(8)
        },
    );
    let start = Instant::now();
    let answer = runner.predict(rows(&[&[1.0]]), None).await.unwrap();
    assert!(start.elapsed() >= delay, "it waited for others first");
    assert_eq!(values(&answer), vec![2.0]);
    // A batch of one is an ordinary predict.
    assert_eq!(stub.predicts(), 1);
    assert!(stub.batches().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_that_cannot_be_joined_run_alone() {
    let stub = Arc::new(Stub::new());
    let runner = runner(&stub, batching(4));
    let text = SeldonMessage {
        payload: Payload::Str("hello".into()),
        ..SeldonMessage::default()
    };
    let answers = predict_all(
        &runner,
        vec![
            rows(&[&[1.0, 2.0]]),
            rows(&[&[1.0, 2.0, 3.0]]), // another width
            text,
            rows(&[&[3.0, 4.0]]),
        ],
    )
    .await;
    assert_eq!(values(answers[1].as_ref().unwrap()), vec![2.0, 4.0, 6.0]);
    match answers[2].as_ref().unwrap() {
        Prediction::Message(m) => assert_eq!(m.payload, Payload::Str("hello".into())),
        other => panic!("{other:?}"),
    }
    assert_eq!(stub.batches(), vec![2], "the two rows of width 2 together");
    assert_eq!(stub.predicts(), 2, "the others alone");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_batch_runs_each_request_alone() {
    let stub = Arc::new(Stub::failing_batches());
    let runner = runner(&stub, batching(3));
    let answers = predict_all(
        &runner,
        vec![rows(&[&[1.0]]), rows(&[&[2.0]]), rows(&[&[3.0]])],
    )
    .await;
    let got: Vec<Vec<f64>> = answers
        .iter()
        .map(|a| values(a.as_ref().unwrap()))
        .collect();
    assert_eq!(got, vec![vec![2.0], vec![4.0], vec![6.0]]);
    assert_eq!(stub.batches(), vec![3]);
    assert_eq!(stub.predicts(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v2_requests_are_joined_by_rows_and_cut_back() {
    let stub = Arc::new(Stub::new());
    let runner = runner(&stub, batching(2));
    let (a, b) = (runner.clone(), runner.clone());
    let first = tokio::spawn(async move {
        a.infer(infer_request(&[&[1.0, 2.0]]), near_deadline())
            .await
    });
    let second = tokio::spawn(async move {
        b.infer(infer_request(&[&[3.0, 4.0], &[5.0, 6.0]]), near_deadline())
            .await
    });
    let first = first.await.unwrap().unwrap().outputs;
    let second = second.await.unwrap().unwrap().outputs;
    assert_eq!(stub.infers(), vec![3], "one call with both requests' rows");
    assert_eq!(first[0].name, "y");
    assert_eq!(first[0].tensor.shape, vec![1, 2]);
    assert_eq!(first[0].tensor.data, TensorData::F64(vec![2.0, 4.0]));
    assert_eq!(second[0].tensor.shape, vec![2, 2]);
    assert_eq!(
        second[0].tensor.data,
        TensorData::F64(vec![6.0, 8.0, 10.0, 12.0])
    );
}
