//! Starting the servers, waiting for a stop signal, and draining.
//!
//! Thread per core: each of `io_threads` threads runs its own single-threaded tokio
//! runtime with REST and gRPC accept loops on the shared listeners, so a connection lives
//! on one thread and a request costs no cross-thread wake-up (on a small VM those cost
//! more CPU than parsing, encoding and a small model call together). A thread busy in a
//! long model call stops polling, and new connections go to the others.
mod recycle;

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::sync::watch;

use crate::app::App;
use crate::config::ServerConfig;
use crate::error::{Kind, ServeError};
use crate::metrics::Metrics;
use crate::model::Model;
use crate::models::{ModelSpec, Models, Repository};
use crate::repository_sync::RepoSync;
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

const LISTEN_BACKLOG: i32 = 4096;

fn bind(
    host: &str,
    port: u16,
    what: &str,
    reuse_port: bool,
) -> Result<std::net::TcpListener, ServeError> {
    use socket2::{Domain, Socket, Type};
    let cannot = |e: std::io::Error| {
        ServeError::new(
            Kind::Internal,
            format!("cannot listen for {what} on {host}:{port}: {e}"),
        )
    };
    let addr = std::net::ToSocketAddrs::to_socket_addrs(&(host, port))
        .map_err(cannot)?
        .next()
        .ok_or_else(|| cannot(std::io::Error::other("the host has no address")))?;
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, None).map_err(cannot)?;
    socket.set_reuse_address(true).map_err(cannot)?;
    // Workers each bind the same port; the kernel spreads new connections among them.
    if reuse_port {
        socket.set_reuse_port(true).map_err(cannot)?;
    }
    socket.bind(&addr.into()).map_err(cannot)?;
    // The kernel caps the backlog at net.core.somaxconn (4096 on current kernels): a
    // burst of new connections past a short backlog waits for SYN retransmits (1 s).
    socket.listen(LISTEN_BACKLOG).map_err(cannot)?;
    socket.set_nonblocking(true).map_err(cannot)?;
    Ok(socket.into())
}

/// Both listening sockets, bound once: by `inferwire serve`'s supervisor before it forks
/// the workers, which inherit them. All workers then take connections from one accept
/// queue, so connections a dying worker has not accepted yet stay there for the others.
pub struct Listeners {
    pub http: std::net::TcpListener,
    pub grpc: std::net::TcpListener,
    /// The metrics port (`config.metrics_port`), when one is set.
    pub metrics: Option<std::net::TcpListener>,
    /// TorchServe's management port (`config.management_port`), when it has its own.
    pub management: Option<std::net::TcpListener>,
    /// KServe's wrapper's port (`config.kserve_port`), when it has its own.
    pub kserve: Option<std::net::TcpListener>,
    /// TorchServe's gRPC management port (`config.grpc_management_port`), when it has one.
    pub grpc_management: Option<std::net::TcpListener>,
    /// KServe's wrapper's gRPC port (`config.kserve_grpc_port`), when one is set.
    pub kserve_grpc: Option<std::net::TcpListener>,
}

impl Listeners {
    pub fn bind(config: &ServerConfig) -> Result<Self, ServeError> {
        Self::bind_with(config, false)
    }

    fn bind_with(config: &ServerConfig, reuse_port: bool) -> Result<Self, ServeError> {
        Ok(Self {
            http: bind(&config.host, config.http_port, "REST", reuse_port)?,
            grpc: bind(&config.host, config.grpc_port, "gRPC", reuse_port)?,
            metrics: config
                .metrics_port
                .map(|port| bind(&config.host, port, "metrics", reuse_port))
                .transpose()?,
            management: config
                .management_port
                .map(|port| bind(&config.host, port, "management", reuse_port))
                .transpose()?,
            kserve: config
                .kserve_port
                .map(|port| bind(&config.host, port, "KServe", reuse_port))
                .transpose()?,
            grpc_management: config
                .grpc_management_port
                .map(|port| bind(&config.host, port, "gRPC management", reuse_port))
                .transpose()?,
            kserve_grpc: config
                .kserve_grpc_port
                .map(|port| bind(&config.host, port, "KServe gRPC", reuse_port))
                .transpose()?,
        })
    }

    pub fn try_clone(&self) -> Result<Self, ServeError> {
        Ok(Self {
            http: self.http.try_clone().map_err(internal)?,
            grpc: self.grpc.try_clone().map_err(internal)?,
            metrics: self
                .metrics
                .as_ref()
                .map(|m| m.try_clone().map_err(internal))
                .transpose()?,
            management: self
                .management
                .as_ref()
                .map(|m| m.try_clone().map_err(internal))
                .transpose()?,
            kserve: self
                .kserve
                .as_ref()
                .map(|m| m.try_clone().map_err(internal))
                .transpose()?,
            grpc_management: self
                .grpc_management
                .as_ref()
                .map(|m| m.try_clone().map_err(internal))
                .transpose()?,
            kserve_grpc: self
                .kserve_grpc
                .as_ref()
                .map(|m| m.try_clone().map_err(internal))
                .transpose()?,
        })
    }
}

fn internal(e: impl std::fmt::Display) -> ServeError {
    ServeError::new(Kind::Internal, e.to_string())
}

/// Keeps a timer at most `HEARTBEAT` away on this thread's runtime, so that the
/// per-request timers (the deadline, the body timeout: tens of seconds out) are never
/// the earliest one: registering the earliest timer wakes the runtime's driver through
/// its eventfd, a system call and a wake-up for every request (a sixth of a small gRPC
/// request's CPU). The cost instead: one wake-up a second when idle.
async fn heartbeat() {
    let mut tick = tokio::time::interval(HEARTBEAT);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
    }
}

const HEARTBEAT: std::time::Duration = std::time::Duration::from_secs(1);

/// A runtime on the calling thread: each I/O thread, the metrics port and the signal
/// watcher run their own.
fn single_threaded_runtime() -> Result<tokio::runtime::Runtime, ServeError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(internal)
}

/// One I/O thread: a single-threaded runtime serving REST and gRPC until `stop`.
fn io_thread(
    app: Arc<App>,
    http: std::net::TcpListener,
    grpc_listener: std::net::TcpListener,
    stop: watch::Receiver<bool>,
) -> Result<(), ServeError> {
    let runtime = single_threaded_runtime()?;
    let grace = app.config.grace_period;
    runtime.block_on(async move {
        tokio::spawn(heartbeat());
        let http = tokio::net::TcpListener::from_std(http).map_err(internal)?;
        let grpc_listener = tokio::net::TcpListener::from_std(grpc_listener).map_err(internal)?;
        let rest_task = rest::serve(app.clone(), http, stop.clone(), grace, rest::Port::Main);
        // tonic waits for open calls without a limit (a health `Watch` stream never
        // ends): past the grace period they are dropped, as REST's are.
        let mut grace_over = stop.clone();
        let grpc_task = async move {
            tokio::select! {
                () = grpc::serve(app, grpc_listener, stop) => {}
                () = async {
                    while !*grace_over.borrow_and_update() {
                        if grace_over.changed().await.is_err() {
                            std::future::pending::<()>().await;
                        }
                    }
                    tokio::time::sleep(grace).await;
                } => tracing::warn!("gRPC: grace period over with calls still open; closing them"),
            }
        };
        tokio::join!(rest_task, grpc_task);
        Ok(())
    })
}

/// A side listener (TorchServe's management ports, KServe's wrapper port, the metrics
/// port) on a thread and small runtime of its own, so a busy REST port does not hold it
/// up: `serve` answers it until `stop`. `heartbeat`: keep the request timers off the
/// driver's wake-ups (a port that serves requests with deadlines).
fn side_listener<F, Fut>(
    name: &str,
    listener: Option<std::net::TcpListener>,
    app: &Arc<App>,
    stop: &watch::Receiver<bool>,
    heartbeat_on: bool,
    serve: F,
) -> Result<Option<std::thread::JoinHandle<Result<(), ServeError>>>, ServeError>
where
    F: FnOnce(Arc<App>, tokio::net::TcpListener, watch::Receiver<bool>) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()>,
{
    let Some(listener) = listener else {
        return Ok(None);
    };
    let (app, stop) = (app.clone(), stop.clone());
    let thread = std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            let runtime = single_threaded_runtime()?;
            runtime.block_on(async move {
                if heartbeat_on {
                    tokio::spawn(heartbeat());
                }
                let listener = tokio::net::TcpListener::from_std(listener).map_err(internal)?;
                serve(app, listener, stop).await;
                Ok(())
            })
        });
    thread.map(Some).map_err(internal)
}

/// What to serve: the settings, the default model (the Seldon protocol's, served under
/// `config.model_name`), other models already built, and where more can be loaded from.
pub struct Serving {
    pub config: ServerConfig,
    pub model: Arc<dyn Model>,
    pub others: Vec<(Arc<dyn Model>, ModelSpec)>,
    pub repository: Option<Arc<dyn Repository>>,
    /// This process's index among the workers.
    pub worker: usize,
    /// How many workers serve (sequences are routed between them when above 1).
    pub workers: usize,
    /// Sockets bound before the fork (`Listeners::bind`); `None`: bound here.
    pub listeners: Option<Listeners>,
    /// Metrics the embedding adds to the scrape (`App::extra_metrics`).
    pub extra_metrics: Option<crate::app::ExtraMetrics>,
}

/// Runs the REST and gRPC servers until SIGINT, SIGTERM or `stop`, then drains: the
/// server reports not-ready, stops accepting, and open requests finish within the
/// grace period. Blocks the calling thread.
pub fn serve(
    serving: Serving,
    metrics: Metrics,
    stop: StopHandle,
    on_bound: impl FnOnce(Bound),
) -> Result<(), ServeError> {
    let Serving {
        config,
        model,
        others,
        repository,
        worker,
        workers,
        listeners,
        extra_metrics,
    } = serving;
    let Listeners {
        http,
        grpc: grpc_listener,
        metrics: metrics_listener,
        management: management_listener,
        kserve: kserve_listener,
        grpc_management: grpc_management_listener,
        kserve_grpc: kserve_grpc_listener,
    } = match listeners {
        Some(l) => l,
        None => Listeners::bind_with(&config, config.reuse_port)?,
    };
    let bound = Bound {
        http: http.local_addr().map_err(internal)?,
        grpc: grpc_listener.local_addr().map_err(internal)?,
    };
    let threads = config.io_threads.max(1);
    let grace = config.grace_period;
    let default = ModelSpec {
        name: config.model_name.clone(),
        version: config.model_version.clone(),
        runner: config.runner(),
        memory: 0,
    };
    let default = Models::build(model.clone(), default, metrics).map_err(internal)?;
    let others = others
        .into_iter()
        .map(|(m, spec)| Models::build(m, spec, metrics))
        .collect::<std::io::Result<Vec<_>>>()
        .map_err(internal)?;
    let sync = config
        .repository_sync
        .as_ref()
        .filter(|_| repository.is_some())
        .map(|c| RepoSync::new(c, worker));
    let syncing = sync.is_some();
    let models = Models::new(
        default,
        others,
        repository,
        sync,
        metrics,
        config.model_cache,
    )
    .with_placeholder_default(model.is_placeholder());
    metrics.worker_started(std::process::id());
    let mut app = App::new(config, models, metrics);
    app.extra_metrics = extra_metrics;
    // Each worker exports its own spans (threads do not survive the fork).
    app.tracer = app
        .config
        .traces
        .as_ref()
        .and_then(|t| crate::trace::Tracer::start(t, metrics));
    let app = Arc::new(app);
    if syncing {
        // Applies what other workers changed through the repository API. It holds the
        // app weakly, so that dropping the app at the end still stops the models.
        let weak = Arc::downgrade(&app);
        app.models.apply_pending(); // a restarted worker catches up before it serves
        std::thread::Builder::new()
            .name("inferwire-repo-sync".into())
            .spawn(move || loop {
                std::thread::sleep(crate::repository_sync::POLL);
                match weak.upgrade() {
                    Some(app) => app.models.apply_pending(),
                    None => break,
                }
            })
            .map_err(internal)?;
    }
    if let (Some(every), true) = (app.config.repository_poll, app.models.has_repository()) {
        // Triton's poll mode: each worker reads the repository on its own. It holds the
        // app weakly, as the sync thread does.
        let weak = Arc::downgrade(&app);
        app.models.poll_repository(); // what is there now: nothing to change
        std::thread::Builder::new()
            .name("inferwire-repo-poll".into())
            .spawn(move || loop {
                std::thread::sleep(every);
                match weak.upgrade() {
                    Some(app) => app.models.poll_repository(),
                    None => break,
                }
            })
            .map_err(internal)?;
    }
    if let Some(limit) = app.config.stuck_after {
        let (weak, stop) = (Arc::downgrade(&app), stop.clone());
        std::thread::Builder::new()
            .name("inferwire-watchdog".into())
            .spawn(move || watch_for_stuck(&weak, limit, &stop))
            .map_err(internal)?;
    }
    if app.config.supervised
        && (app.request_limit.is_some() || app.config.max_worker_memory.is_some())
    {
        let (weak, stop) = (Arc::downgrade(&app), stop.clone());
        std::thread::Builder::new()
            .name("inferwire-recycle".into())
            .spawn(move || recycle::watch(&weak, &stop))
            .map_err(internal)?;
    }
    let (stop_tx, stop_rx) = watch::channel(false);
    if let Some(route) = crate::sequences::Route::for_worker(worker, workers) {
        crate::dataplane::serve_forwarded(&route, Arc::downgrade(&app), stop_rx.clone()).map_err(
            |e| {
                ServeError::new(
                    Kind::Internal,
                    format!("the socket other workers pass sequences to: {e}"),
                )
            },
        )?;
        let _ = app.sequences.set(route);
    }
    // The signal handlers exist before any thread serves: a SIGTERM sent the moment the
    // server first answers must drain it, not kill it by the default action.
    let signals = single_threaded_runtime()?;
    let listening = {
        let _runtime = signals.enter();
        Signals::register()
    };

    // Said before any thread accepts: whoever reads the log after a first answer finds
    // the line there (the ports are bound, so connections wait in the backlog meanwhile).
    on_bound(bound);
    let mut handles = Vec::with_capacity(threads);
    for i in 0..threads {
        let (app, stop_rx, model) = (app.clone(), stop_rx.clone(), model.clone());
        let (http, grpc_listener) = (
            http.try_clone().map_err(internal)?,
            grpc_listener.try_clone().map_err(internal)?,
        );
        let handle = std::thread::Builder::new()
            .name(format!("inferwire-io-{i}"))
            .spawn(move || {
                model.thread_started();
                let result = io_thread(app, http, grpc_listener, stop_rx);
                model.thread_stopping();
                result
            })
            .map_err(internal)?;
        handles.push(handle);
    }
    drop((http, grpc_listener));
    let sides = [
        side_listener(
            "inferwire-management",
            management_listener,
            &app,
            &stop_rx,
            true,
            move |app, l, stop| rest::serve(app, l, stop, grace, rest::Port::Management),
        )?,
        side_listener(
            "inferwire-grpc-management",
            grpc_management_listener,
            &app,
            &stop_rx,
            true,
            grpc::serve_management,
        )?,
        side_listener(
            "inferwire-kserve",
            kserve_listener,
            &app,
            &stop_rx,
            true,
            move |app, l, stop| rest::serve(app, l, stop, grace, rest::Port::KServe),
        )?,
        side_listener(
            "inferwire-kserve-grpc",
            kserve_grpc_listener,
            &app,
            &stop_rx,
            true,
            grpc::serve_kserve,
        )?,
        side_listener(
            "inferwire-metrics",
            metrics_listener,
            &app,
            &stop_rx,
            false,
            rest::metrics_port::serve,
        )?,
    ];
    handles.extend(sides.into_iter().flatten());

    // The calling thread only waits for signals.
    signals.block_on(wait_for_stop(stop, listening));
    tracing::info!("stopping: no longer ready, draining open requests (grace {grace:?})");
    app.set_not_ready();
    let _ = stop_tx.send(true);
    let mut result = Ok(());
    // An I/O thread running a call inline that never returns cannot end its own grace
    // period: past it (and a margin), such a thread is left behind.
    let until = std::time::Instant::now() + grace + JOIN_MARGIN;
    for handle in handles {
        match crate::bounded_join::join_by(handle, until) {
            None => tracing::warn!("an I/O thread is still in a model call; not waiting for it"),
            Some(Ok(Ok(()))) => {}
            Some(Ok(Err(e))) => result = Err(e),
            Some(Err(_)) => {
                result = Err(ServeError::new(Kind::Internal, "an I/O thread panicked"));
            }
        }
    }
    if let Some(why) = app.not_live_because() {
        if app.config.supervised && result.is_ok() {
            // The supervisor starts a new worker in this one's place.
            result = Err(ServeError::new(Kind::Internal, why));
        }
    }
    // The last reference: stops the model threads after their queue.
    drop(app);
    metrics.worker_stopped();
    result
}

/// How long after the grace period a draining server still waits for its I/O threads.
const JOIN_MARGIN: std::time::Duration = std::time::Duration::from_secs(2);

/// Checks every model's oldest running call; once one has run past `limit`, the server
/// stops reporting live and, as a supervised worker, drains and exits so that the
/// supervisor starts a fresh one (a Python call cannot be interrupted from outside).
fn watch_for_stuck(app: &std::sync::Weak<App>, limit: std::time::Duration, stop: &StopHandle) {
    let every = (limit / 4).clamp(
        std::time::Duration::from_millis(100),
        std::time::Duration::from_secs(1),
    );
    loop {
        std::thread::sleep(every);
        let Some(app) = app.upgrade() else { return };
        let Some((model, took)) = app.stuck_call(limit) else {
            continue;
        };
        let why = format!(
            "model {model:?}: a call has been running for {:.1} s, longer than stuck_after \
             ({:.1} s)",
            took.as_secs_f64(),
            limit.as_secs_f64()
        );
        if app.config.supervised {
            tracing::error!("{why}: this worker drains and exits; the supervisor replaces it");
        } else {
            tracing::error!("{why}: no longer live (/live answers 503)");
        }
        app.set_stuck(why);
        if app.config.supervised {
            stop.stop();
        }
        return;
    }
}

/// SIGTERM and SIGINT, registered with the runtime that waits for them.
struct Signals {
    #[cfg(unix)]
    term: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    int: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    /// Must run inside the runtime that will wait (`Runtime::enter`).
    fn register() -> Self {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            Self {
                term: signal(SignalKind::terminate()).ok(),
                int: signal(SignalKind::interrupt()).ok(),
            }
        }
        #[cfg(not(unix))]
        Self {}
    }
}

async fn wait_for_stop(stop: StopHandle, signals: Signals) {
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
        let Signals { mut term, mut int } = signals;
        tokio::select! {
            _ = async { match term.as_mut() { Some(s) => { s.recv().await; } None => std::future::pending().await } } => {}
            _ = async { match int.as_mut() { Some(s) => { s.recv().await; } None => std::future::pending().await } } => {}
            _ = programmatic => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = signals;
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = programmatic => {}
        }
    }
}
