//! Admission: `max_concurrency` requests are admitted, `max_queue` more wait, and the
//! rest are refused at once (503 / RESOURCE_EXHAUSTED) rather than waiting.
mod common;

use std::sync::Arc;

use common::{near_deadline, rows, runner, until, Stub};
use inferwire_server::error::Kind;
use inferwire_server::runner::RunnerConfig;

fn queue_depth(runner_metrics: &inferwire_server::Metrics) -> usize {
    let text = runner_metrics.render();
    let line = text
        .lines()
        .find(|l| l.starts_with("inferwire_queue_depth "))
        .expect("the queue depth gauge");
    line.rsplit(' ').next().unwrap().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_past_the_queue_are_refused_at_once_and_the_rest_are_answered() {
    let stub = Arc::new(Stub::held());
    let metrics = common::metrics();
    let runner = Arc::new(
        inferwire_server::runner::Runner::new(
            stub.clone(),
            &RunnerConfig {
                max_concurrency: 1,
                max_queue: 2,
                ..common::config()
            },
            metrics,
        )
        .unwrap(),
    );
    // One running (held in the model), two waiting for admission.
    let mut admitted = Vec::new();
    for i in 0..3 {
        let r = runner.clone();
        admitted.push(tokio::spawn(async move {
            r.predict(rows(&[&[f64::from(i)]]), near_deadline()).await
        }));
        if i == 0 {
            until("the first call to reach the model", || stub.entered() == 1).await;
        }
    }
    until("two requests to wait", || queue_depth(&metrics) == 2).await;

    let refused = runner
        .predict(rows(&[&[9.0]]), near_deadline())
        .await
        .expect_err("a fourth request is refused");
    assert_eq!(refused.kind, Kind::Overloaded);
    assert_eq!(refused.http_status(), 503);
    assert_eq!(
        refused.message,
        "2 requests are already waiting for the model; retry later (see --max-queue and \
         --max-concurrency)"
    );
    assert_eq!(
        stub.entered(),
        1,
        "the refused request never reached the model"
    );

    stub.release();
    for (i, call) in admitted.into_iter().enumerate() {
        let answer = call
            .await
            .unwrap()
            .expect("an admitted request is answered");
        assert_eq!(common::values(&answer), vec![2.0 * i as f64]);
    }
    assert_eq!(stub.predicts(), 3);
    assert_eq!(queue_depth(&metrics), 0);

    // With the queue empty again, a new request is admitted.
    let answer = runner.predict(rows(&[&[5.0]]), near_deadline()).await;
    assert_eq!(common::values(&answer.unwrap()), vec![10.0]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_no_queue_a_busy_model_refuses_every_other_request() {
    let stub = Arc::new(Stub::held());
    let runner = runner(
        &stub,
        RunnerConfig {
            max_concurrency: 1,
            max_queue: 0,
            ..common::config()
        },
    );
    let r = runner.clone();
    let first = tokio::spawn(async move { r.predict(rows(&[&[1.0]]), near_deadline()).await });
    until("the first call to reach the model", || stub.entered() == 1).await;
    for _ in 0..5 {
        let e = runner.metadata(None).await.expect_err("refused");
        assert_eq!(e.kind, Kind::Overloaded);
        assert_eq!(e.grpc_code(), tonic::Code::ResourceExhausted);
    }
    stub.release();
    assert_eq!(common::values(&first.await.unwrap().unwrap()), vec![2.0]);
    assert_eq!(stub.entered(), 1);
}
