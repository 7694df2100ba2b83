//! Cross-origin requests (`cors_*` settings, MLServer's `cors_settings`): a browser's
//! preflight (`OPTIONS` with `Access-Control-Request-Method`) is answered here, before
//! routing and auth, and every reply to an allowed origin says so. Without allowed
//! origins (the default) nothing is added: browsers keep pages of other origins out.
use http::header::{self, HeaderMap, HeaderValue};
use http::{Method, StatusCode};

use super::body::{self, Reply};
use crate::config::CorsConfig;

/// Headers a browser sends without asking (the CORS-safelisted request headers).
const SAFELISTED: [&str; 4] = [
    "accept",
    "accept-language",
    "content-language",
    "content-type",
];

fn any(list: &[String]) -> bool {
    list.iter().any(|v| v == "*")
}

impl CorsConfig {
    fn allows_origin(&self, origin: &str) -> bool {
        any(&self.origins) || self.origins.iter().any(|o| o == origin)
    }

    /// What `Access-Control-Allow-Origin` says to `origin`: `*` when any origin may call
    /// without credentials, else the origin itself.
    fn allow_origin(&self, origin: &HeaderValue) -> HeaderValue {
        if any(&self.origins) && !self.credentials {
            HeaderValue::from_static("*")
        } else {
            origin.clone()
        }
    }

    /// The answer to a preflight, or `None` when the request is not one.
    pub fn preflight(&self, method: &Method, headers: &HeaderMap) -> Option<Reply> {
        if method != Method::OPTIONS {
            return None;
        }
        let origin = headers.get(header::ORIGIN)?;
        let asked = headers.get(header::ACCESS_CONTROL_REQUEST_METHOD)?;
        let mut refused = Vec::new();
        if !origin.to_str().is_ok_and(|o| self.allows_origin(o)) {
            refused.push("origin");
        }
        let asked = asked.to_str().unwrap_or_default();
        if !any(&self.methods) && !self.methods.iter().any(|m| m.eq_ignore_ascii_case(asked)) {
            refused.push("method");
        }
        let requested = headers
            .get(header::ACCESS_CONTROL_REQUEST_HEADERS)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        let header_ok = |h: &str| {
            let h = h.trim().to_ascii_lowercase();
            h.is_empty()
                || any(&self.headers)
                || SAFELISTED.contains(&h.as_str())
                || self.headers.iter().any(|a| a.eq_ignore_ascii_case(&h))
        };
        if !requested.split(',').all(header_ok) {
            refused.push("headers");
        }
        let mut r = if refused.is_empty() {
            body::with_type(StatusCode::OK, "OK".into(), "text/plain; charset=utf-8")
        } else {
            let text = format!("Disallowed CORS {}", refused.join(", "));
            body::with_type(
                StatusCode::BAD_REQUEST,
                text.into(),
                "text/plain; charset=utf-8",
            )
        };
        let h = r.headers_mut();
        if refused.is_empty() {
            h.insert(
                header::ACCESS_CONTROL_ALLOW_ORIGIN,
                self.allow_origin(origin),
            );
        }
        let methods = if any(&self.methods) {
            "DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT".to_owned()
        } else {
            self.methods.join(", ")
        };
        let allowed_headers = if any(&self.headers) {
            requested.to_owned()
        } else {
            let mut all: Vec<&str> = SAFELISTED.to_vec();
            all.extend(self.headers.iter().map(String::as_str));
            all.join(", ")
        };
        for (name, value) in [
            (header::ACCESS_CONTROL_ALLOW_METHODS, methods),
            (header::ACCESS_CONTROL_ALLOW_HEADERS, allowed_headers),
            (header::ACCESS_CONTROL_MAX_AGE, self.max_age.to_string()),
        ] {
            if let Ok(v) = HeaderValue::from_str(&value) {
                h.insert(name, v);
            }
        }
        if self.credentials {
            h.insert(
                header::ACCESS_CONTROL_ALLOW_CREDENTIALS,
                HeaderValue::from_static("true"),
            );
        }
        h.append(header::VARY, HeaderValue::from_static("Origin"));
        Some(r)
    }

    /// A reply to a request from an allowed origin says that it may read it.
    pub fn decorate(&self, origin: Option<&HeaderValue>, reply: &mut Reply) {
        let Some(origin) = origin else {
            return;
        };
        if !origin.to_str().is_ok_and(|o| self.allows_origin(o)) {
            return;
        }
        let allow = self.allow_origin(origin);
        let h = reply.headers_mut();
        if allow != "*" {
            h.append(header::VARY, HeaderValue::from_static("Origin"));
        }
        h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, allow);
        if self.credentials {
            h.insert(
                header::ACCESS_CONTROL_ALLOW_CREDENTIALS,
                HeaderValue::from_static("true"),
            );
        }
        if !self.expose.is_empty() {
            if let Ok(v) = HeaderValue::from_str(&self.expose.join(", ")) {
                h.insert(header::ACCESS_CONTROL_EXPOSE_HEADERS, v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(origins: &[&str]) -> CorsConfig {
        CorsConfig {
            origins: origins.iter().map(|s| (*s).to_owned()).collect(),
            methods: vec!["GET".into(), "POST".into()],
            headers: vec!["x-token".into()],
            credentials: false,
            expose: vec![],
            max_age: 600,
        }
    }

    fn preflight(c: &CorsConfig, origin: &str, method: &str, headers: &str) -> Reply {
        let mut h = HeaderMap::new();
        h.insert(header::ORIGIN, origin.parse().unwrap());
        h.insert(
            header::ACCESS_CONTROL_REQUEST_METHOD,
            method.parse().unwrap(),
        );
        if !headers.is_empty() {
            h.insert(
                header::ACCESS_CONTROL_REQUEST_HEADERS,
                headers.parse().unwrap(),
            );
        }
        c.preflight(&Method::OPTIONS, &h).unwrap()
    }

    #[test]
    fn preflights_allowed_and_refused() {
        let c = config(&["https://app.example"]);
        let ok = preflight(&c, "https://app.example", "POST", "content-type, x-token");
        assert_eq!(ok.status(), StatusCode::OK);
        assert_eq!(
            ok.headers()[header::ACCESS_CONTROL_ALLOW_ORIGIN],
            "https://app.example"
        );
        assert_eq!(ok.headers()[header::ACCESS_CONTROL_MAX_AGE], "600");
        let bad = preflight(&c, "https://evil.example", "DELETE", "x-other");
        assert_eq!(bad.status(), StatusCode::BAD_REQUEST);
        assert!(bad
            .headers()
            .get(header::ACCESS_CONTROL_ALLOW_ORIGIN)
            .is_none());
        // Not a preflight: routed as usual.
        assert!(c.preflight(&Method::OPTIONS, &HeaderMap::new()).is_none());
        assert!(c.preflight(&Method::GET, &HeaderMap::new()).is_none());
    }

    #[test]
    fn replies_to_allowed_origins_only() {
        let c = config(&["*"]);
        let mut r = body::with_type(StatusCode::OK, "x".into(), "text/plain");
        c.decorate(Some(&HeaderValue::from_static("https://a.example")), &mut r);
        assert_eq!(r.headers()[header::ACCESS_CONTROL_ALLOW_ORIGIN], "*");
        let c = config(&["https://a.example"]);
        let mut r = body::with_type(StatusCode::OK, "x".into(), "text/plain");
        c.decorate(Some(&HeaderValue::from_static("https://b.example")), &mut r);
        assert!(r
            .headers()
            .get(header::ACCESS_CONTROL_ALLOW_ORIGIN)
            .is_none());
    }
}
