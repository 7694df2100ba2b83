//! The metrics on a port of their own, as Seldon's wrapper serves them for its operator
//! to scrape (`PREDICTIVE_UNIT_METRICS_SERVICE_PORT`, `PREDICTIVE_UNIT_METRICS_ENDPOINT`):
//! `GET <endpoint>` answers what the REST port's `/metrics` does (every worker's counts:
//! the metrics live in memory the workers share, so whichever worker accepts answers
//! for all); anything else is a 404. No auth: as `/metrics` on the REST port.
use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::Method;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::{watch, Notify, Semaphore};

use super::{body, health};
use crate::app::App;
use crate::error::{Kind, ServeError};

/// Connections served at once; a scraper needs one. A new connection past it closes the
/// oldest (at once if it has no request under way, else after its reply), so a flood of
/// idle or slow connections cannot keep a scraper out: it can only be pushed out by as
/// many connections as this arriving after its own, before it sends its request.
const MAX_CONNECTIONS: usize = 32;
/// Connections alive at once, those closing included (a slow sender being pushed out
/// gets until its head's timeout).
const MAX_ALIVE: usize = 4 * MAX_CONNECTIONS;
/// How long a connection may take to send its request's headers, and may stay idle.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// The connections being served, oldest first, each with what tells it to close.
type Open = Arc<Mutex<VecDeque<(u64, Arc<Notify>)>>>;

/// Serves until `stop` flips to true.
pub async fn serve(app: Arc<App>, listener: TcpListener, mut stop: watch::Receiver<bool>) {
    let alive = Arc::new(Semaphore::new(MAX_ALIVE));
    let open: Open = Arc::default();
    let mut next_id = 0u64;
    loop {
        tokio::select! {
            accepted = async {
                let permit = alive.clone().acquire_owned().await;
                (permit, listener.accept().await)
            } => {
                let (Ok(permit), Ok((stream, _))) = accepted else { continue };
                let (id, close) = (next_id, Arc::new(Notify::new()));
                next_id += 1;
                {
                    let mut open = open.lock().unwrap_or_else(|e| e.into_inner());
                    if open.len() >= MAX_CONNECTIONS {
                        if let Some((_, oldest)) = open.pop_front() {
                            oldest.notify_one();
                        }
                    }
                    open.push_back((id, close.clone()));
                }
                let (app, open) = (app.clone(), open.clone());
                tokio::spawn(async move {
                    let svc = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                        let app = app.clone();
                        async move { Ok::<_, Infallible>(answer(&app, req.method(), req.uri().path()).await) }
                    });
                    let conn = hyper::server::conn::http1::Builder::new()
                        .timer(TokioTimer::new())
                        .header_read_timeout(HEADER_TIMEOUT)
                        .keep_alive(true)
                        .serve_connection(TokioIo::new(stream), svc);
                    let mut conn = std::pin::pin!(conn);
                    let served = async {
                        tokio::select! {
                            biased;
                            _ = conn.as_mut() => {}
                            () = close.notified() => {
                                conn.as_mut().graceful_shutdown();
                                let _ = conn.as_mut().await;
                            }
                        }
                    };
                    let _ = tokio::time::timeout(HEADER_TIMEOUT * 6, served).await;
                    open.lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .retain(|(i, _)| *i != id);
                    drop(permit);
                });
            }
            _ = stop.changed() => break,
        }
    }
}

async fn answer(app: &App, method: &Method, path: &str) -> body::Reply {
    let result = if path != app.config.metrics_endpoint {
        Err(ServeError::new(
            Kind::NotFound,
            format!(
                "this port serves only the metrics, at GET {}",
                app.config.metrics_endpoint
            ),
        ))
    } else if method != Method::GET && method != Method::HEAD {
        Err(ServeError::new(
            Kind::MethodNotAllowed,
            format!("{method} is not allowed on {path}: GET the metrics"),
        ))
    } else {
        health::metrics(app).await
    };
    result.unwrap_or_else(|e| body::error(&e))
}
