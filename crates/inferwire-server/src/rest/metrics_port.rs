//! The metrics on a port of their own, as Seldon's wrapper serves them for its operator
//! to scrape (`PREDICTIVE_UNIT_METRICS_SERVICE_PORT`, `PREDICTIVE_UNIT_METRICS_ENDPOINT`):
//! `GET <endpoint>` answers what the REST port's `/metrics` does (every worker's counts:
//! the metrics live in memory the workers share, so whichever worker accepts answers
//! for all); anything else is a 404. No auth: as `/metrics` on the REST port.
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use http::Method;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};

use super::{body, health};
use crate::app::App;
use crate::error::{Kind, ServeError};

/// Connections served at once; a scraper needs one.
const MAX_CONNECTIONS: usize = 32;
/// How long a connection may take to send its request's headers, and may stay idle.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves until `stop` flips to true.
pub async fn serve(app: Arc<App>, listener: TcpListener, mut stop: watch::Receiver<bool>) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        tokio::select! {
            accepted = async {
                let permit = slots.clone().acquire_owned().await;
                (permit, listener.accept().await)
            } => {
                let (Ok(permit), Ok((stream, _))) = accepted else { continue };
                let app = app.clone();
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
                    let _ = tokio::time::timeout(HEADER_TIMEOUT * 6, conn).await;
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
