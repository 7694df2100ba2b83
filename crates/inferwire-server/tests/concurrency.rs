//! Where and how many calls run: at most `model_threads` at once; a fast model runs on
//! the caller's thread when nothing waits, a slow one (or one with a near deadline, or
//! with batching) on the model threads; every model thread is started and stopped once.
mod common;

use std::sync::atomic::Ordering;
use std::sync::Arc;

use common::{near_deadline, rows, runner, values, Stub};
use inferwire_server::runner::RunnerConfig;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_threads_bound_the_calls_running_at_once() {
    // Each call waits until two run at once: the test ends quickly only if they can.
    let stub = Arc::new(Stub::meeting(2));
    let runner = runner(
        &stub,
        RunnerConfig {
            max_concurrency: 6,
            model_threads: 2,
            ..common::config()
        },
    );
    let calls: Vec<_> = (0..6)
        .map(|i| {
            let r = runner.clone();
            tokio::spawn(async move { r.predict(rows(&[&[f64::from(i)]]), near_deadline()).await })
        })
        .collect();
    for (i, c) in calls.into_iter().enumerate() {
        assert_eq!(values(&c.await.unwrap().unwrap()), vec![2.0 * i as f64]);
    }
    assert_eq!(stub.peak.load(Ordering::SeqCst), 2);
    assert_eq!(stub.predicts(), 6);
}

#[test]
fn every_model_thread_is_started_and_stopped_once() {
    let stub = Arc::new(Stub::new());
    let runner = runner(
        &stub,
        RunnerConfig {
            model_threads: 3,
            ..common::config()
        },
    );
    drop(runner); // waits for the model threads to stop
    assert_eq!(stub.started.load(Ordering::SeqCst), 3);
    assert_eq!(stub.stopped.load(Ordering::SeqCst), 3);
}

#[tokio::test(flavor = "current_thread")]
async fn a_fast_model_runs_on_the_callers_thread() {
    let stub = Arc::new(Stub::new());
    let runner = runner(&stub, common::config());
    let here = std::thread::current().id();
    for i in 0..100 {
        let answer = runner.predict(rows(&[&[f64::from(i)]]), None).await;
        assert_eq!(values(&answer.unwrap()), vec![2.0 * f64::from(i)]);
    }
    let threads = stub.threads.lock().unwrap().clone();
    // Until calls are measured they are taken to be slow: the first runs on a model thread.
    assert_ne!(threads[0], here);
    // Once measured fast, calls run here (a few slow ones on a loaded machine may not).
    assert!(threads.contains(&here), "no call ran inline");
}

#[tokio::test(flavor = "current_thread")]
async fn a_near_deadline_or_batching_keeps_calls_off_the_callers_thread() {
    let here = std::thread::current().id();
    let stub = Arc::new(Stub::new());
    let near = runner(&stub, common::config());
    for _ in 0..50 {
        near.predict(rows(&[&[1.0]]), near_deadline())
            .await
            .unwrap();
    }
    let batched = runner(
        &stub,
        RunnerConfig {
            max_batch_size: 4,
            max_batch_delay: std::time::Duration::ZERO,
            ..common::config()
        },
    );
    for _ in 0..50 {
        batched.predict(rows(&[&[1.0]]), None).await.unwrap();
    }
    let threads = stub.threads.lock().unwrap().clone();
    assert_eq!(threads.len(), 100);
    assert!(!threads.contains(&here));
}
