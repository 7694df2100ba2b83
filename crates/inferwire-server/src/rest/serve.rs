//! Accepting REST connections: HTTP/1.1 with keep-alive, or HTTP/2 with prior knowledge.
//!
//! At `stop` the loop takes the connections already waiting in the listen queue (the
//! kernel completed them, their requests may be in flight) without waiting for more,
//! and every connection answers what it has already received before it closes.
use std::convert::Infallible;
use std::future::Future;
use std::net::{IpAddr, Ipv4Addr};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch, OwnedSemaphorePermit};

use super::handle;
use super::routes::Port;
use crate::app::App;
use crate::read_ahead::ReadAhead;
use crate::write_stall::WriteStall;

/// Serves until `stop` flips to true, then lets open requests finish within `grace`.
pub async fn serve(
    app: Arc<App>,
    listener: TcpListener,
    mut stop: watch::Receiver<bool>,
    grace: Duration,
    port: Port,
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
        .initial_stream_window_size(crate::config::STREAM_WINDOW)
        .initial_connection_window_size(crate::config::CONNECTION_WINDOW);
    // Every connection task holds a clone; `recv` returns `None` once all have ended.
    let (open, mut all_closed) = mpsc::channel::<()>(1);
    let conn = Conn {
        port,
        app: app.clone(),
        builder,
        tls: app.config.tls.clone().map(tokio_rustls::TlsAcceptor::from),
        stop: stop.clone(),
        open,
    };
    loop {
        tokio::select! {
            // With every connection permit taken, the accepted connection waits for
            // one, and further ones queue in the kernel's backlog.
            accepted = async {
                let accepted = listener.accept().await;
                (app.connections.clone().acquire_owned().await, accepted)
            } => {
                let (Ok(permit), Ok((stream, _))) = accepted else { continue };
                conn.spawn(stream, permit);
            }
            _ = stop.changed() => break,
        }
    }
    // What the kernel already accepted is served, not reset when the listener closes.
    // Other workers sharing the socket take part of it; none waits for new ones.
    for (stream, permit) in crate::drain::queued(listener, &app.connections).await {
        conn.spawn(stream, permit);
    }
    drop(conn);
    if tokio::time::timeout(grace, all_closed.recv())
        .await
        .is_err()
    {
        tracing::warn!("REST: grace period over with requests still open; closing them");
    }
}

/// What each connection task needs.
struct Conn {
    port: Port,
    app: Arc<App>,
    builder: auto::Builder<TokioExecutor>,
    tls: Option<tokio_rustls::TlsAcceptor>,
    stop: watch::Receiver<bool>,
    open: mpsc::Sender<()>,
}

impl Conn {
    fn spawn(&self, stream: TcpStream, permit: OwnedSemaphorePermit) {
        // Small replies must not wait for Nagle's algorithm.
        let _ = stream.set_nodelay(true);
        // The client's address, for the login limits.
        let peer = stream
            .peer_addr()
            .map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |a| a.ip());
        let (app, port) = (self.app.clone(), self.port);
        let first = Arc::new(tokio::sync::Notify::new());
        let asked = first.clone();
        let svc = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
            let app = app.clone();
            asked.notify_waiters();
            async move {
                let http1 = req.version() < hyper::Version::HTTP_2;
                let mut response = handle::handle(app.clone(), req, peer, port).await;
                // A draining or recycling worker: the client opens its next request's
                // connection elsewhere instead of racing the close of this one.
                if http1 && !app.is_ready() {
                    response.headers_mut().insert(
                        hyper::header::CONNECTION,
                        hyper::header::HeaderValue::from_static("close"),
                    );
                }
                Ok::<_, Infallible>(response)
            }
        });
        let (builder, stop, open) = (self.builder.clone(), self.stop.clone(), self.open.clone());
        // A reply its client takes none of ends with its connection (`write_stall`).
        let stall = self.app.config.streaming.idle;
        let head_within = self.app.config.header_timeout;
        let Some(acceptor) = self.tls.clone() else {
            tokio::spawn(async move {
                if !crate::first_bytes::arrived(&stream, head_within).await {
                    drop((permit, open));
                    return;
                }
                let io = WriteStall::new(ReadAhead::new(stream), stall);
                let conn = builder.serve_connection(TokioIo::new(io), svc).into_owned();
                until_drained(conn, stop, first).await;
                drop((permit, open));
            });
            return;
        };
        // The handshake runs on the connection's own task, so a slow client holds up
        // no one else.
        tokio::spawn(async move {
            let handshake = tokio::time::timeout(crate::tls::HANDSHAKE, acceptor.accept(stream));
            let Ok(Ok(stream)) = handshake.await else {
                return;
            };
            let conn = builder
                .serve_connection(TokioIo::new(WriteStall::new(stream, stall)), svc)
                .into_owned();
            until_drained(conn, stop, first).await;
            drop((permit, open));
        });
    }
}

type Connection<I, S> = auto::Connection<'static, I, S, TokioExecutor>;

/// How long a connection with no request under way when the drain starts gets to begin
/// one (it may be on the way) before it is closed.
const FIRST_REQUEST: Duration = Duration::from_secs(1);

/// Serves `conn` until it closes; once `stop` is true, it finishes what it has begun
/// (HTTP/1.1 its current request, HTTP/2 its open streams) and closes. `first` is
/// notified by each request the connection brings.
async fn until_drained<I, S, B>(
    conn: Connection<I, S>,
    mut stop: watch::Receiver<bool>,
    first: Arc<tokio::sync::Notify>,
) where
    Connection<I, S>: Future,
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
    S: hyper::service::HttpService<hyper::body::Incoming, ResBody = B>,
    S::Future: Send + 'static,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let mut conn: Pin<Box<Connection<I, S>>> = Box::pin(conn);
    // `biased`: polled in order, the connection first; no random draw on every poll.
    tokio::select! {
        biased;
        _ = conn.as_mut() => return,
        () = async {
            while !*stop.borrow_and_update() {
                if stop.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
            }
        } => {}
    }
    // A graceful shutdown closes at once a connection with no request under way: one
    // just accepted, maybe with its request already in the socket, or an idle
    // keep-alive one whose client may be sending its next request right now. Either
    // gets a moment to begin one (answered with `Connection: close`, as the server is
    // no longer ready); one that is mid-request finishes it.
    tokio::select! {
        biased;
        _ = conn.as_mut() => return,
        () = first.notified() => {}
        () = tokio::time::sleep(FIRST_REQUEST) => {}
    }
    conn.as_mut().graceful_shutdown();
    let _ = conn.await;
}
