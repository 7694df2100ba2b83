//! The server's own probes (`/health/ping`, `/live`, `/ready`) and the metrics scrape: no
//! model is called.
use http::{HeaderValue, StatusCode};

use super::body::{self, Reply};
use crate::app::App;
use crate::error::ServeError;

pub async fn ping() -> Result<Reply, ServeError> {
    Ok(body::text(StatusCode::OK, "pong"))
}

pub async fn live(app: &App) -> Result<Reply, ServeError> {
    Ok(match app.not_live_because() {
        None => body::json(StatusCode::OK, b"{\"status\":\"alive\"}".to_vec()),
        Some(why) => body::json(
            StatusCode::SERVICE_UNAVAILABLE,
            serde_json::to_vec(&serde_json::json!({"status": "not live", "error": why}))
                .unwrap_or_default(),
        ),
    })
}

pub async fn ready(app: &App) -> Result<Reply, ServeError> {
    Ok(if app.is_ready() {
        body::json(StatusCode::OK, b"{\"status\":\"ready\"}".to_vec())
    } else {
        body::json(
            StatusCode::SERVICE_UNAVAILABLE,
            b"{\"status\":\"not ready\"}".to_vec(),
        )
    })
}

/// Prometheus' scrape: the dialect's own series first (Triton's `nv_*`), then inferwire's.
pub async fn metrics(app: &App) -> Result<Reply, ServeError> {
    let mut text = app
        .config
        .dialect
        .metrics_text(&app.model_series(), &app.metrics)
        .unwrap_or_default();
    text.push_str(&app.metrics.render());
    if let Some(extra) = app.extra_metrics.clone() {
        // It may wait for the GIL behind a model call: not on an I/O thread.
        if let Ok(more) = tokio::task::spawn_blocking(move || extra()).await {
            text.push_str(&more);
        }
    }
    let mut r = body::with_type(
        StatusCode::OK,
        text.into(),
        "text/plain; version=0.0.4; charset=utf-8",
    );
    r.headers_mut()
        .insert("cache-control", HeaderValue::from_static("no-store"));
    Ok(r)
}
