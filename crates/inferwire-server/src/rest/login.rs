//! `POST /login`: a password exchanged for a signed bearer token.
use std::net::IpAddr;
use std::time::Duration;

use http::{HeaderValue, Request, StatusCode};
use hyper::body::Incoming;

use super::body::{self, Reply};
use crate::app::App;
use crate::error::{Kind, ServeError};

/// The login route's handler: a refusal for too many failures carries `Retry-After`.
pub async fn login(app: &App, req: Request<Incoming>, peer: IpAddr) -> Result<Reply, ServeError> {
    Ok(attempt(app, req, peer).await.unwrap_or_else(|e| {
        let mut r = body::error(&e.error);
        if let Some(wait) = e.retry_after {
            // Whole seconds, rounded up: never an invitation to retry too early.
            let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
            r.headers_mut()
                .insert(http::header::RETRY_AFTER, HeaderValue::from(secs.max(1)));
        }
        r
    }))
}

/// A refused login, with how long to wait when it was refused for too many failures.
struct LoginError {
    error: ServeError,
    retry_after: Option<Duration>,
}

impl From<ServeError> for LoginError {
    fn from(error: ServeError) -> Self {
        Self {
            error,
            retry_after: None,
        }
    }
}

/// `POST /login` with `{"username", "password"}`: a signed bearer token for the user's
/// scopes, valid for `auth_token_ttl`. A user or client past its failure limit gets 429
/// without a password check; the check itself runs on a blocking thread, a bounded number
/// at a time, never on the I/O threads that carry every other request.
async fn attempt(app: &App, req: Request<Incoming>, peer: IpAddr) -> Result<Reply, LoginError> {
    let Some(auth) = app.config.auth.clone() else {
        return Err(ServeError::new(
            Kind::NotFound,
            "login is off: this server runs without auth (see --auth-users)",
        )
        .into());
    };
    #[derive(serde::Deserialize)]
    struct Login {
        username: String,
        password: String,
    }
    let raw = body::read(app, req, 64 * 1024).await?;
    let creds: Login = serde_json::from_slice(&raw).map_err(|e| {
        ServeError::new(
            Kind::BadRequest,
            format!("login takes {{\"username\": ..., \"password\": ...}}: {e}"),
        )
    })?;
    let guard = &auth.guard;
    if let Err(wait) = guard.admit(&creds.username, peer) {
        return Err(LoginError {
            error: ServeError::new(
                Kind::TooManyRequests,
                format!(
                    "too many failed logins for this user or from this address: retry in {} s",
                    wait.as_secs().max(1)
                ),
            ),
            retry_after: Some(wait),
        });
    }
    let Ok(Ok(_turn)) =
        tokio::time::timeout(guard.limits.hashing_wait, guard.hashing.acquire()).await
    else {
        guard.not_tried(&creds.username, peer);
        return Err(LoginError {
            error: ServeError::new(Kind::Overloaded, "too many logins at once: retry shortly"),
            retry_after: Some(Duration::from_secs(1)),
        });
    };
    let checker = auth.clone();
    let user = creds.username.clone();
    let outcome = tokio::task::spawn_blocking(move || checker.login(&user, &creds.password))
        .await
        .map_err(|_| ServeError::new(Kind::Internal, "the password check failed"))?;
    let (token, exp) = outcome.map_err(|r| r.to_error())?;
    guard.succeeded(&creds.username, peer);
    let out = serde_json::json!({
        "access_token": token,
        "token_type": "Bearer",
        "expires_in": auth.ttl.as_secs(),
        "expires_on": exp,
    });
    Ok(body::json(
        StatusCode::OK,
        serde_json::to_vec(&out).unwrap_or_default(),
    ))
}
