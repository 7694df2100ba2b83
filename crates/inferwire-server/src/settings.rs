//! The settings that reach the core, by the names `inferwire.settings` gives them (the
//! meaning and default of each is written there, once): the Python side hands over its
//! settings as they are, they are read here by name (a missing or unknown key is an error
//! naming it), and `into_config` turns them into the server's config: units converted,
//! auth, TLS and the dialect built. A new setting is a field in `settings.py` and a field
//! here, used below; the glue between Python and Rust never names a setting.
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use inferwire_codec::Limits;
use serde::Deserialize;

use crate::auth::Auth;
use crate::config::{AccessLog, CorsConfig, ServerConfig, ServerIdentity};
use crate::dialect::{self, StreamReply, Tuned};
use crate::login_guard::LoginLimits;
use crate::repository_sync::SyncConfig;
use crate::runner::RunnerConfig;
use crate::shared_memory::SharedMemoryConfig;
use crate::stream::StreamLimits;
use crate::tls::TlsConfig;
use crate::trace::TraceConfig;

/// The core's settings, each as `settings.py` names and types it. Not `Debug`: it holds
/// the token signing key.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    pub host: String,
    pub http_port: u16,
    pub grpc_port: u16,
    pub model_name: String,
    pub model_image: String,
    pub include_metrics_in_client_response: bool,
    pub model_version: String,
    pub model_threads: usize,
    pub max_concurrency: usize,
    pub max_queue: usize,
    pub max_batch_size: usize,
    pub max_batch_delay: f64,
    pub auth_tokens: String,
    pub auth_users: String,
    pub auth_key: String,
    pub auth_token_ttl: f64,
    pub allow_unauthenticated_repository: bool,
    pub login_user_failures: u32,
    pub login_client_failures: u32,
    pub login_window: f64,
    pub tls_cert: String,
    pub tls_key: String,
    pub tls_client_ca: String,
    pub max_body_bytes: usize,
    pub body_timeout: f64,
    pub max_body_bytes_in_flight: usize,
    pub max_elements: usize,
    pub max_json_depth: usize,
    pub max_connections: usize,
    pub header_timeout: f64,
    pub max_streams: u32,
    pub workers: usize,
    pub supervised: bool,
    pub timeout: f64,
    pub io_threads: usize,
    pub grace_period: f64,
    pub stuck_after: f64,
    pub max_requests: u64,
    pub max_requests_jitter: u64,
    pub max_worker_memory: u64,
    pub access_log: String,
    pub log_level: String,
    pub repository_sync_dir: String,
    pub repository_poll_secs: f64,
    pub torchserve_key_file: String,
    pub torchserve_token_minutes: f64,
    pub management_port: u16,
    pub grpc_management_port: u16,
    pub kserve_port: u16,
    pub kserve_grpc_port: u16,
    pub metrics_port: u16,
    pub metrics_endpoint: String,
    pub system_shared_memory: bool,
    pub shared_memory_max_regions: usize,
    pub shared_memory_max_bytes: u64,
    pub shared_memory_dir: String,
    pub stream_max_open: usize,
    pub stream_max_pieces: u64,
    pub stream_max_bytes: u64,
    pub stream_idle_timeout: f64,
    pub stream_timeout: f64,
    pub grpc_stream_reply: String,
    pub v2_invalid_status: u16,
    pub v2_dialect: String,
    pub server_name: String,
    pub server_version: String,
    pub server_extensions: String,
    pub cors_allow_origins: String,
    pub cors_allow_methods: String,
    pub cors_allow_headers: String,
    pub cors_allow_credentials: bool,
    pub cors_expose_headers: String,
    pub cors_max_age: u64,
    pub load_models_on_request: bool,
    pub model_memory_budget: u64,
    pub trace_sampler: String,
    pub trace_sampler_arg: f64,
    pub trace_service_name: String,
    pub trace_queue: usize,
    pub otlp_endpoint: String,
    pub otlp_traces_endpoint: String,
    pub otlp_protocol: String,
    pub otlp_headers: String,
    pub otlp_timeout: f64,
}

impl Settings {
    /// The settings read from JSON (what the glue makes of the Python dict).
    pub fn from_json(value: serde_json::Value) -> Result<Self, String> {
        serde_json::from_value(value).map_err(|e| format!("the core's settings: {e}"))
    }

    /// The server's config, and the core's log filter level (tracing's spelling).
    pub fn into_config(self) -> Result<(ServerConfig, String), String> {
        let Settings {
            host,
            http_port,
            grpc_port,
            model_name,
            model_image,
            include_metrics_in_client_response,
            model_version,
            model_threads,
            max_concurrency,
            max_queue,
            max_batch_size,
            max_batch_delay,
            auth_tokens,
            auth_users,
            auth_key,
            auth_token_ttl,
            allow_unauthenticated_repository,
            login_user_failures,
            login_client_failures,
            login_window,
            tls_cert,
            tls_key,
            tls_client_ca,
            max_body_bytes,
            body_timeout,
            max_body_bytes_in_flight,
            max_elements,
            max_json_depth,
            max_connections,
            header_timeout,
            max_streams,
            workers,
            supervised,
            timeout,
            io_threads,
            grace_period,
            stuck_after,
            max_requests,
            max_requests_jitter,
            max_worker_memory,
            access_log,
            log_level,
            repository_sync_dir,
            repository_poll_secs,
            torchserve_key_file,
            torchserve_token_minutes,
            management_port,
            grpc_management_port,
            kserve_port,
            kserve_grpc_port,
            metrics_port,
            metrics_endpoint,
            system_shared_memory,
            shared_memory_max_regions,
            shared_memory_max_bytes,
            shared_memory_dir,
            stream_max_open,
            stream_max_pieces,
            stream_max_bytes,
            stream_idle_timeout,
            stream_timeout,
            grpc_stream_reply,
            v2_invalid_status,
            v2_dialect,
            server_name,
            server_version,
            server_extensions,
            cors_allow_origins,
            cors_allow_methods,
            cors_allow_headers,
            cors_allow_credentials,
            cors_expose_headers,
            cors_max_age,
            load_models_on_request,
            model_memory_budget,
            trace_sampler,
            trace_sampler_arg,
            trace_service_name,
            trace_queue,
            otlp_endpoint,
            otlp_traces_endpoint,
            otlp_protocol,
            otlp_headers,
            otlp_timeout,
        } = self;
        let invalid_422 = match v2_invalid_status {
            400 => false,
            422 => true,
            other => return Err(format!("v2_invalid_status: {other} is not 400 or 422")),
        };
        let identity = identity(server_name, server_version, &server_extensions);
        let base = dialect::by_name(&v2_dialect, &identity.name).ok_or_else(|| {
            format!(
                "v2_dialect: {v2_dialect:?} is not one of {}",
                dialect::names().collect::<Vec<_>>().join(", ")
            )
        })?;
        let cors = (!cors_allow_origins.trim().is_empty()).then(|| CorsConfig {
            origins: list(&cors_allow_origins),
            methods: list(&cors_allow_methods),
            headers: list(&cors_allow_headers),
            credentials: cors_allow_credentials,
            expose: list(&cors_expose_headers),
            max_age: cors_max_age,
        });
        let stream_reply = match grpc_stream_reply.as_str() {
            "triton" => StreamReply::Triton,
            "mlserver" => StreamReply::Mlserver,
            other => {
                return Err(format!(
                    "grpc_stream_reply: {other:?} is not triton or mlserver"
                ))
            }
        };
        let access_log = match access_log.as_str() {
            "off" => AccessLog::Off,
            "text" => AccessLog::Text,
            "json" => AccessLog::Json,
            other => return Err(format!("access_log: {other:?} is not off, text or json")),
        };
        let limits = LoginLimits {
            user_failures: login_user_failures,
            client_failures: login_client_failures,
            window: Duration::from_secs_f64(login_window),
            ..LoginLimits::default()
        };
        let runner = runner(
            model_threads,
            max_concurrency,
            max_queue,
            max_batch_size,
            max_batch_delay,
        );
        let traces = traces(Traces {
            sampler: &trace_sampler,
            sampler_arg: trace_sampler_arg,
            service_name: trace_service_name,
            queue: trace_queue,
            endpoint: &otlp_endpoint,
            traces_endpoint: &otlp_traces_endpoint,
            protocol: &otlp_protocol,
            headers: &otlp_headers,
            timeout: otlp_timeout,
        })?;
        let config = ServerConfig {
            traces,
            dialect: Arc::new(Tuned {
                base,
                invalid_422,
                stream_reply,
            }),
            identity,
            cors,
            // Triton's defaults: no setting gives others yet.
            trace: Default::default(),
            log: Default::default(),
            // MiB; a budget implies loading on request (nothing else would load models
            // back after they were unloaded to make room).
            model_cache: crate::models::CacheConfig {
                on_request: load_models_on_request || model_memory_budget > 0,
                budget: (model_memory_budget > 0).then(|| model_memory_budget * 1024 * 1024),
            },
            streaming: StreamLimits {
                max_open: stream_max_open,
                max_pieces: stream_max_pieces,
                max_bytes: stream_max_bytes,
                idle: Duration::from_secs_f64(stream_idle_timeout.max(0.001)),
                total: Duration::from_secs_f64(stream_timeout.max(0.001)),
            },
            host,
            http_port,
            grpc_port,
            max_body_bytes,
            limits: Limits {
                max_elements,
                max_depth: max_json_depth,
            },
            model_name,
            model_image,
            include_metrics_in_client_response,
            model_version,
            max_concurrency: runner.max_concurrency,
            max_queue: runner.max_queue,
            model_threads: runner.model_threads,
            max_batch_size: runner.max_batch_size,
            max_batch_delay: runner.max_batch_delay,
            timeout: seconds(timeout),
            reuse_port: workers > 1,
            access_log,
            io_threads,
            grace_period: seconds_or_zero(grace_period),
            auth: auth(
                &auth_tokens,
                &auth_users,
                auth_key,
                Duration::from_secs_f64(auth_token_ttl),
                limits,
            )?,
            tls: tls(&tls_cert, &tls_key, &tls_client_ca)?,
            max_connections,
            header_timeout: seconds_or_zero(header_timeout),
            max_streams,
            repository_sync: (!repository_sync_dir.is_empty()).then(|| SyncConfig {
                dir: repository_sync_dir.into(),
                workers,
            }),
            stuck_after: seconds(stuck_after),
            repository_poll: seconds(repository_poll_secs),
            management_port: (management_port > 0 && management_port != http_port)
                .then_some(management_port),
            grpc_management_port: (grpc_management_port > 0 && grpc_management_port != grpc_port)
                .then_some(grpc_management_port),
            kserve_port: (kserve_port > 0 && kserve_port != http_port).then_some(kserve_port),
            kserve_grpc_port: (kserve_grpc_port > 0 && kserve_grpc_port != grpc_port)
                .then_some(kserve_grpc_port),
            torchserve_keys: (!torchserve_key_file.is_empty()).then(|| {
                Arc::new(crate::torchserve_keys::KeyFile::new(
                    torchserve_key_file,
                    Duration::from_secs_f64(torchserve_token_minutes.max(0.0) * 60.0),
                ))
            }),
            supervised,
            max_requests: limit(max_requests),
            max_requests_jitter,
            max_worker_memory: limit(max_worker_memory),
            body_timeout: seconds_or_zero(body_timeout),
            max_body_bytes_in_flight,
            allow_unauthenticated_repository,
            metrics_port: (metrics_port > 0).then_some(metrics_port),
            metrics_endpoint,
            // The folder is made by the server before workers fork; without it (a
            // config built outside `serve`) the extension stays off.
            shared_memory: (system_shared_memory && !shared_memory_dir.is_empty()).then(|| {
                SharedMemoryConfig {
                    dir: shared_memory_dir.into(),
                    max_regions: shared_memory_max_regions,
                    max_bytes: shared_memory_max_bytes,
                }
            }),
        };
        Ok((config, log_level))
    }
}

/// The trace settings, as `Settings` has them.
struct Traces<'a> {
    sampler: &'a str,
    sampler_arg: f64,
    service_name: String,
    queue: usize,
    endpoint: &'a str,
    traces_endpoint: &'a str,
    protocol: &'a str,
    headers: &'a str,
    timeout: f64,
}

/// Tracing's config: off (`None`) unless an OTLP endpoint is given. As OpenTelemetry's
/// exporters read them: `otlp_traces_endpoint` is the URL used as it is; else
/// `otlp_endpoint` is the collector's base URL, to which HTTP/protobuf adds `/v1/traces`;
/// gRPC takes only the host and port of either. `otlp_headers` is `key=value,...` with
/// the values percent-encoded.
fn traces(t: Traces<'_>) -> Result<Option<TraceConfig>, String> {
    use crate::trace::{ExportConfig, Protocol, Sampler};
    let protocol = match t.protocol {
        "http/protobuf" => Protocol::HttpProtobuf,
        "grpc" => Protocol::Grpc,
        other => {
            return Err(format!(
                "otlp_protocol: {other:?} is not http/protobuf or grpc (http/json is not \
                 supported)"
            ))
        }
    };
    let (setting, given) = match (t.traces_endpoint.trim(), t.endpoint.trim()) {
        ("", "") => return Ok(None),
        ("", base) => ("otlp_endpoint", base),
        (full, _) => ("otlp_traces_endpoint", full),
    };
    // MLServer's tracing_server and gRPC endpoints are often host:port alone.
    let text = if given.contains("://") {
        given.to_owned()
    } else {
        format!("http://{given}")
    };
    let mut url: http::Uri = text
        .parse()
        .map_err(|e| format!("{setting}: {given:?} is not a URL ({e})"))?;
    match url.scheme_str() {
        Some("http") => {}
        Some("https") => {
            return Err(format!(
                "{setting}: {given:?}: https is not supported yet; give an http:// collector \
                 (a local agent or sidecar)"
            ))
        }
        _ => return Err(format!("{setting}: {given:?} is not an http:// URL")),
    }
    if url.host().is_none_or(str::is_empty) {
        return Err(format!("{setting}: {given:?} has no host"));
    }
    if setting == "otlp_endpoint" && protocol == Protocol::HttpProtobuf {
        let path = format!("{}/v1/traces", url.path().trim_end_matches('/'));
        let mut parts = url.into_parts();
        parts.path_and_query = Some(
            path.parse()
                .map_err(|e| format!("{setting}: {given:?}: {e}"))?,
        );
        url = http::Uri::from_parts(parts).map_err(|e| format!("{setting}: {given:?}: {e}"))?;
    }
    let sampler = Sampler::by_name(t.sampler, t.sampler_arg)?;
    Ok(Some(TraceConfig {
        sampler,
        export: ExportConfig {
            url,
            protocol,
            headers: otlp_headers(t.headers)?,
            timeout: Duration::from_secs_f64(t.timeout.max(0.001)),
            queue: t.queue.max(1),
            service_name: t.service_name,
        },
    }))
}

/// `OTEL_EXPORTER_OTLP_HEADERS`' form: `key=value` pairs split by commas, values
/// percent-encoded.
fn otlp_headers(text: &str) -> Result<Vec<(http::HeaderName, http::HeaderValue)>, String> {
    let mut out = Vec::new();
    for pair in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let bad = || format!("otlp_headers: {pair:?} is not key=value with a valid header");
        let (key, value) = pair.split_once('=').ok_or_else(bad)?;
        let value = percent_encoding::percent_decode_str(value.trim())
            .decode_utf8()
            .map_err(|_| bad())?;
        let name = http::HeaderName::from_bytes(key.trim().to_ascii_lowercase().as_bytes())
            .map_err(|_| bad())?;
        let value = http::HeaderValue::from_str(&value).map_err(|_| bad())?;
        out.push((name, value));
    }
    Ok(out)
}

/// Seconds as a duration; 0 (or less) means none.
fn seconds(v: f64) -> Option<Duration> {
    (v > 0.0).then(|| Duration::from_secs_f64(v))
}

fn seconds_or_zero(v: f64) -> Duration {
    seconds(v).unwrap_or(Duration::ZERO)
}

/// 0 means none (no request limit, no memory limit).
fn limit(n: u64) -> Option<u64> {
    (n > 0).then_some(n)
}

/// A runner's settings (the server's, or one repository model's) in its units.
pub fn runner(
    model_threads: usize,
    max_concurrency: usize,
    max_queue: usize,
    max_batch_size: usize,
    max_batch_delay: f64,
) -> RunnerConfig {
    RunnerConfig {
        max_concurrency,
        max_queue,
        model_threads,
        max_batch_size,
        max_batch_delay: seconds_or_zero(max_batch_delay),
    }
}

/// TLS on both ports when a certificate is given (and for mutual TLS a client CA).
/// `GET /v2`'s name, version and extensions: "" keeps inferwire's version, "*" its
/// extensions; otherwise extensions are a comma-separated list (empty: none).
fn identity(name: String, version: String, extensions: &str) -> ServerIdentity {
    let ours = ServerIdentity::default();
    ServerIdentity {
        name,
        version: if version.is_empty() {
            ours.version
        } else {
            version
        },
        extensions: if extensions.trim() == "*" {
            ours.extensions
        } else {
            list(extensions)
        },
    }
}

/// A comma-separated setting's items.
fn list(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .map(str::to_owned)
        .collect()
}

fn tls(cert: &str, key: &str, client_ca: &str) -> Result<Option<Arc<TlsConfig>>, String> {
    if cert.is_empty() {
        return Ok(None);
    }
    let ca = (!client_ca.is_empty()).then(|| PathBuf::from(client_ca));
    crate::tls::server_config(
        PathBuf::from(cert).as_path(),
        PathBuf::from(key).as_path(),
        ca.as_deref(),
    )
    .map(Some)
    .map_err(|e| format!("TLS: {e}"))
}

/// Auth is on when a token or user file is given; the signing key comes from Python
/// (made once before workers fork, or `auth_secret`).
fn auth(
    tokens: &str,
    users: &str,
    key: String,
    ttl: Duration,
    limits: LoginLimits,
) -> Result<Option<Arc<Auth>>, String> {
    let path = |v: &str| (!v.is_empty()).then(|| PathBuf::from(v));
    let (tokens, users) = (path(tokens), path(users));
    if tokens.is_none() && users.is_none() {
        return Ok(None);
    }
    Auth::load(tokens.as_deref(), users.as_deref(), key.into_bytes(), ttl)
        .map(|a| Some(Arc::new(a.with_login_limits(limits))))
}
