//! Deadlines: a request is answered with `Kind::Deadline` (504 / DEADLINE_EXCEEDED) once
//! its deadline passes, whether it waits for admission, waits in the queue, or runs; one
//! whose deadline passed before a model thread took it is dropped, not computed.
mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{near_deadline, rows, runner, until, values, Stub};
use inferwire_server::error::Kind;
use inferwire_server::runner::RunnerConfig;

const SHORT: Duration = Duration::from_millis(100);

fn assert_deadline(e: &inferwire_server::ServeError) {
    assert_eq!(e.kind, Kind::Deadline);
    assert_eq!(e.http_status(), 504);
    assert_eq!(
        e.message,
        "the request's deadline passed before the model answered (see --timeout)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_whose_deadline_passes_in_the_queue_is_never_computed() {
    let stub = Arc::new(Stub::held());
    // Two admitted, one model thread: the second waits in the model threads' queue.
    let runner = runner(
        &stub,
        RunnerConfig {
            max_concurrency: 2,
            ..common::config()
        },
    );
    let r = runner.clone();
    let first = tokio::spawn(async move { r.predict(rows(&[&[1.0]]), near_deadline()).await });
    until("the first call to reach the model", || stub.entered() == 1).await;

    let e = runner
        .predict(rows(&[&[2.0]]), Some(Instant::now() + SHORT))
        .await
        .expect_err("the deadline passes while the model is busy");
    assert_deadline(&e);

    stub.release();
    assert_eq!(values(&first.await.unwrap().unwrap()), vec![2.0]);
    // A request sent after the expired one is answered after it was skipped.
    let third = runner.predict(rows(&[&[3.0]]), near_deadline()).await;
    assert_eq!(values(&third.unwrap()), vec![6.0]);
    assert_eq!(
        stub.predicts(),
        2,
        "the expired request never reached the model"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_waiting_for_admission_gives_up_at_its_deadline() {
    let stub = Arc::new(Stub::held());
    let runner = runner(&stub, common::config());
    let r = runner.clone();
    let first = tokio::spawn(async move { r.predict(rows(&[&[1.0]]), near_deadline()).await });
    until("the first call to reach the model", || stub.entered() == 1).await;
    let e = runner
        .health_status(Some(Instant::now() + SHORT))
        .await
        .expect_err("no admission before the deadline");
    assert_deadline(&e);
    stub.release();
    first.await.unwrap().unwrap();
    assert_eq!(stub.entered(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_call_past_its_deadline_is_answered_without_waiting_for_the_model() {
    let stub = Arc::new(Stub::held());
    let runner = runner(&stub, common::config());
    // Long enough for a model thread to take the call on a busy machine.
    let deadline = Instant::now() + Duration::from_secs(1);
    let r = runner.clone();
    let call = tokio::spawn(async move { r.predict(rows(&[&[1.0]]), Some(deadline)).await });
    until("the call to reach the model", || stub.entered() == 1).await;
    let e = call.await.unwrap().expect_err("the model is still running");
    assert_deadline(&e);
    assert_eq!(stub.finished(), 0, "answered while the model still runs");
    stub.release();
    until("the model to finish", || stub.finished() == 1).await;
    // Its admission came back once the model was done: the next request is served.
    let next = runner.predict(rows(&[&[4.0]]), near_deadline()).await;
    assert_eq!(values(&next.unwrap()), vec![8.0]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deadline_already_passed_is_answered_at_once() {
    let stub = Arc::new(Stub::new());
    let runner = runner(&stub, common::config());
    let e = runner
        .predict(rows(&[&[1.0]]), Some(Instant::now()))
        .await
        .expect_err("too late");
    assert_deadline(&e);
    // Another request after it runs; the late one is dropped unseen, if it was queued.
    runner
        .predict(rows(&[&[1.0]]), near_deadline())
        .await
        .unwrap();
    assert_eq!(stub.predicts(), 1);
}
