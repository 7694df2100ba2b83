//! Starting both servers, waiting for a stop signal, and draining.
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::app::App;
use crate::config::ServerConfig;
use crate::error::{Kind, ServeError};
use crate::executor::Executor;
use crate::model::Model;
use crate::{grpc, rest};

/// The addresses actually bound (ports may have been 0).
#[derive(Debug, Clone, Copy)]
pub struct Bound {
    pub http: SocketAddr,
    pub grpc: SocketAddr,
}

/// Stops a running server from another thread, as SIGTERM does.
#[derive(Clone)]
pub struct StopHandle(Arc<watch::Sender<bool>>);

impl StopHandle {
    pub fn new() -> Self {
        Self(Arc::new(watch::channel(false).0))
    }

    pub fn stop(&self) {
        self.0.send_replace(true);
    }
}

impl Default for StopHandle {
    fn default() -> Self {
        Self::new()
    }
}

async fn bind(host: &str, port: u16, what: &str) -> Result<TcpListener, ServeError> {
    TcpListener::bind((host, port)).await.map_err(|e| {
        ServeError::new(
            Kind::Internal,
            format!("cannot listen for {what} on {host}:{port}: {e}"),
        )
    })
}

/// Runs the REST and gRPC servers until SIGINT, SIGTERM or `stop`, then drains: the
/// server reports not-ready, stops accepting, and open requests finish within the
/// grace period. Blocks the calling thread.
pub fn serve(
    config: ServerConfig,
    model: Arc<dyn Model>,
    stop: StopHandle,
    on_bound: impl FnOnce(Bound),
) -> Result<(), ServeError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(config.io_threads.max(1))
        .thread_name("inferwire-io")
        .enable_all()
        .build()
        .map_err(|e| {
            ServeError::new(Kind::Internal, format!("cannot start the I/O runtime: {e}"))
        })?;
    let (executor, model_thread) = Executor::start(model, config.max_queue).map_err(|e| {
        ServeError::new(
            Kind::Internal,
            format!("cannot start the model thread: {e}"),
        )
    })?;
    let grace = config.grace_period;

    let result = runtime.block_on(async move {
        let http = bind(&config.host, config.http_port, "REST").await?;
        let grpc_listener = bind(&config.host, config.grpc_port, "gRPC").await?;
        let bound = Bound {
            http: http
                .local_addr()
                .map_err(|e| ServeError::new(Kind::Internal, e.to_string()))?,
            grpc: grpc_listener
                .local_addr()
                .map_err(|e| ServeError::new(Kind::Internal, e.to_string()))?,
        };
        let app = Arc::new(App::new(config, executor));
        let (stop_tx, stop_rx) = watch::channel(false);
        let rest_task = tokio::spawn(rest::serve(app.clone(), http, stop_rx.clone(), grace));
        let grpc_task = tokio::spawn(grpc::serve(app.clone(), grpc_listener, stop_rx));
        on_bound(bound);

        wait_for_stop(stop).await;
        tracing::info!("stopping: no longer ready, draining open requests (grace {grace:?})");
        app.set_not_ready();
        let _ = stop_tx.send(true);
        let drained = tokio::time::timeout(grace + Duration::from_millis(200), async {
            let _ = rest_task.await;
            let _ = grpc_task.await;
        })
        .await;
        if drained.is_err() {
            tracing::warn!("grace period over; closing remaining connections");
        }
        Ok::<_, ServeError>(())
    });
    runtime.shutdown_timeout(Duration::from_secs(1));
    // Every `Executor` handle is gone with the runtime: the model thread finishes its queue.
    model_thread.join();
    result
}

async fn wait_for_stop(stop: StopHandle) {
    let mut rx = stop.0.subscribe();
    let programmatic = async move {
        while !*rx.borrow_and_update() {
            if rx.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate()).ok();
        let mut int = signal(SignalKind::interrupt()).ok();
        tokio::select! {
            _ = async { match term.as_mut() { Some(s) => { s.recv().await; } None => std::future::pending().await } } => {}
            _ = async { match int.as_mut() { Some(s) => { s.recv().await; } None => std::future::pending().await } } => {}
            _ = programmatic => {}
        }
    }
    #[cfg(not(unix))]
    {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = programmatic => {}
        }
    }
}
