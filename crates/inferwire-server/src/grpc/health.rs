//! `grpc.health.v1.Health`, with what a drain needs and tonic-health lacks: the server
//! learns when every open `Watch` stream has taken the NOT_SERVING update, and sends
//! GOAWAY only after that. Load balancers and Kubernetes rely on that order; waiting a
//! few scheduler rounds instead made it a matter of timing on a loaded machine.
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::sync::{watch, Notify};
use tokio_stream::Stream;
use tonic::{Request, Response, Status};
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_server::{Health, HealthServer};
use tonic_health::pb::{HealthCheckRequest, HealthCheckResponse};

/// The names health answers for: the whole server (the empty name) and each service.
const SERVICES: [&str; 9] = [
    "",
    "seldon.protos.Seldon",
    "seldon.protos.Model",
    "seldon.protos.Generic",
    "seldon.protos.Router",
    "seldon.protos.Transformer",
    "seldon.protos.OutputTransformer",
    "seldon.protos.Combiner",
    "inference.GRPCInferenceService",
];

/// The server's side of health: flips every name together.
#[derive(Clone)]
pub struct Reporter(Arc<Shared>);

struct Shared {
    serving: watch::Sender<bool>,
    /// Watch streams open, and how many of them have yielded NOT_SERVING.
    open: AtomicUsize,
    told: AtomicUsize,
    changed: Notify,
}

impl Reporter {
    pub fn new() -> (Self, HealthServer<Service>) {
        let shared = Arc::new(Shared {
            serving: watch::channel(true).0,
            open: AtomicUsize::new(0),
            told: AtomicUsize::new(0),
            changed: Notify::new(),
        });
        (Self(shared.clone()), HealthServer::new(Service(shared)))
    }

    /// Turns every name NOT_SERVING and waits, at most `within`, until each open Watch
    /// stream has handed that update to its HTTP/2 stream (whose frames then go out
    /// before the stream ends, GOAWAY or not). False when the time ran out: a client
    /// that reads nothing holds its stream's update back.
    pub async fn not_serving(&self, within: Duration) -> bool {
        let s = &self.0;
        s.serving.send_replace(false);
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let notified = s.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if s.told.load(Ordering::SeqCst) >= s.open.load(Ordering::SeqCst) {
                return true;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return false;
            }
        }
    }
}

pub struct Service(Arc<Shared>);

fn status_of(serving: bool) -> HealthCheckResponse {
    let status = if serving {
        ServingStatus::Serving
    } else {
        ServingStatus::NotServing
    };
    HealthCheckResponse {
        status: status as i32,
    }
}

fn known(request: &Request<HealthCheckRequest>) -> Result<(), Status> {
    if SERVICES.contains(&request.get_ref().service.as_str()) {
        Ok(())
    } else {
        Err(Status::not_found("service not registered"))
    }
}

#[tonic::async_trait]
impl Health for Service {
    async fn check(
        &self,
        request: Request<HealthCheckRequest>,
    ) -> Result<Response<HealthCheckResponse>, Status> {
        known(&request)?;
        Ok(Response::new(status_of(*self.0.serving.borrow())))
    }

    type WatchStream = WatchStream;

    async fn watch(
        &self,
        request: Request<HealthCheckRequest>,
    ) -> Result<Response<WatchStream>, Status> {
        known(&request)?;
        self.0.open.fetch_add(1, Ordering::SeqCst);
        Ok(Response::new(WatchStream {
            updates: tokio_stream::wrappers::WatchStream::new(self.0.serving.subscribe()),
            shared: self.0.clone(),
            told: false,
        }))
    }
}

/// The current status, then each change; counted in `Shared` while it is open.
pub struct WatchStream {
    updates: tokio_stream::wrappers::WatchStream<bool>,
    shared: Arc<Shared>,
    told: bool,
}

impl Stream for WatchStream {
    type Item = Result<HealthCheckResponse, Status>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let next = Pin::new(&mut self.updates).poll_next(cx);
        if let Poll::Ready(Some(false)) = next {
            if !self.told {
                self.told = true;
                self.shared.told.fetch_add(1, Ordering::SeqCst);
                self.shared.changed.notify_waiters();
            }
        }
        next.map(|update| update.map(|serving| Ok(status_of(serving))))
    }
}

impl Drop for WatchStream {
    fn drop(&mut self) {
        self.shared.open.fetch_sub(1, Ordering::SeqCst);
        if self.told {
            self.shared.told.fetch_sub(1, Ordering::SeqCst);
        }
        self.shared.changed.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio_stream::StreamExt;

    #[tokio::test]
    async fn not_serving_waits_for_every_open_watch() {
        let (reporter, server) = Reporter::new();
        let _ = server;
        let svc = Service(reporter.0.clone());
        let req = || {
            Request::new(HealthCheckRequest {
                service: String::new(),
            })
        };
        let mut a = svc.watch(req()).await.unwrap().into_inner();
        let mut b = svc.watch(req()).await.unwrap().into_inner();
        assert_eq!(
            a.next().await.unwrap().unwrap().status,
            ServingStatus::Serving as i32
        );
        // `b` never reads: the wait ends at its limit, unanswered.
        let waiting = tokio::spawn({
            let r = reporter.clone();
            async move { r.not_serving(Duration::from_secs(5)).await }
        });
        assert_eq!(
            a.next().await.unwrap().unwrap().status,
            ServingStatus::NotServing as i32
        );
        assert!(!waiting.is_finished());
        assert_eq!(
            b.next().await.unwrap().unwrap().status,
            ServingStatus::NotServing as i32
        );
        assert!(waiting.await.unwrap());
        drop((a, b));
        assert!(reporter.not_serving(Duration::from_millis(10)).await);
        let unknown = Request::new(HealthCheckRequest {
            service: "nope".into(),
        });
        assert!(svc.check(unknown).await.is_err());
    }
}
