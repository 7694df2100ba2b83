//! Accepting REST connections: HTTP/1.1 with keep-alive, or HTTP/2 with prior knowledge.
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::sync::watch;

use super::routes;
use crate::app::App;
use crate::read_ahead::ReadAhead;

/// Serves until `stop` flips to true, then lets open requests finish within `grace`.
pub async fn serve(
    app: Arc<App>,
    listener: TcpListener,
    mut stop: watch::Receiver<bool>,
    grace: Duration,
) {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(app.config.header_timeout);
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(app.config.max_streams)
        .initial_stream_window_size(crate::grpc::STREAM_WINDOW)
        .initial_connection_window_size(crate::grpc::CONNECTION_WINDOW);
    let graceful = GracefulShutdown::new();
    let tls = app.config.tls.clone().map(tokio_rustls::TlsAcceptor::from);
    loop {
        tokio::select! {
            // With every connection permit taken, the accepted connection waits for
            // one, and further ones queue in the kernel's backlog.
            accepted = async {
                let accepted = listener.accept().await;
                (app.connections.clone().acquire_owned().await, accepted)
            } => {
                let (Ok(permit), Ok((stream, peer))) = accepted else { continue };
                let peer = peer.ip();
                // Small replies must not wait for Nagle's algorithm.
                let _ = stream.set_nodelay(true);
                let app = app.clone();
                let svc = service_fn(move |req| {
                    let app = app.clone();
                    async move { Ok::<_, Infallible>(routes::handle(app, req, peer).await) }
                });
                let Some(acceptor) = tls.clone() else {
                    let conn = builder.serve_connection(TokioIo::new(ReadAhead::new(stream)), svc).into_owned();
                    let conn = graceful.watch(conn);
                    tokio::spawn(async move {
                        let _ = conn.await;
                        drop(permit);
                    });
                    continue;
                };
                // The handshake runs on the connection's own task, so a slow client
                // holds up no one else.
                let builder = builder.clone();
                let watcher = graceful.watcher();
                tokio::spawn(async move {
                    let handshake = tokio::time::timeout(crate::tls::HANDSHAKE, acceptor.accept(stream));
                    let Ok(Ok(stream)) = handshake.await else { return };
                    let conn = builder.serve_connection(TokioIo::new(stream), svc).into_owned();
                    let _ = watcher.watch(conn).await;
                    drop(permit);
                });
            }
            _ = stop.changed() => break,
        }
    }
    drop(listener);
    if tokio::time::timeout(grace, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("REST: grace period over with requests still open; closing them");
    }
}
