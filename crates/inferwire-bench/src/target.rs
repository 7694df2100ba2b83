//! What one request is: transport, address, path, headers and body. Built once and sent
//! many times: the body is a shared `Bytes`, never copied per request.
use bytes::{BufMut, Bytes, BytesMut};
use http::header::{HeaderName, HeaderValue, CONTENT_TYPE, HOST};
use http::{HeaderMap, Method, Request, Uri};

use crate::tls::Tls;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    /// HTTP/1.1 with keep-alive: one request at a time per connection.
    Http1,
    /// HTTP/2 without TLS, prior knowledge: many streams per connection.
    H2c,
    /// gRPC unary calls (HTTP/2, `application/grpc`, length-prefixed messages).
    Grpc,
}

impl Transport {
    pub fn name(self) -> &'static str {
        match self {
            Transport::Http1 => "HTTP/1.1",
            Transport::H2c => "h2c",
            Transport::Grpc => "gRPC",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Target {
    pub transport: Transport,
    /// `host:port` to connect to.
    pub authority: String,
    pub method: Method,
    uri: Uri,
    headers: HeaderMap,
    /// The request body as sent: for gRPC, the framed message.
    pub body: Bytes,
    /// HTTP/1.1: the whole request, serialized once.
    pub wire: Bytes,
    /// `https://` and `grpcs://` targets.
    pub tls: Option<Tls>,
}

impl Target {
    /// An HTTP request to `url` (`http://host:port/path`, or `https://`).
    pub fn http(
        url: &str,
        method: Method,
        headers: &[(String, String)],
        body: Bytes,
        h2: bool,
    ) -> Result<Self, String> {
        let uri: Uri = url.parse().map_err(|e| format!("URL {url:?}: {e}"))?;
        let secure = match uri.scheme_str() {
            Some("http") => false,
            Some("https") => true,
            _ => return Err(format!("URL {url:?}: expected http:// or https://")),
        };
        let authority = authority_of(&uri, url, secure)?;
        let mut map = header_map(headers)?;
        if !body.is_empty() && !map.contains_key(CONTENT_TYPE) {
            map.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        }
        let transport = if h2 { Transport::H2c } else { Transport::Http1 };
        let tls = secure
            .then(|| Tls::new(uri.host().unwrap_or(""), h2))
            .transpose()?;
        Ok(Self::build(
            transport, authority, method, &uri, map, body, tls,
        ))
    }

    /// A gRPC unary call of `call` (`/pkg.Service/Method`, `pkg.Service/Method` or
    /// `pkg.Service.Method`) on `addr` (`host:port`, optionally `grpc://` or `http://`;
    /// `grpcs://` or `https://` for TLS), with `message` already encoded as protobuf.
    pub fn grpc(
        addr: &str,
        call: &str,
        metadata: &[(String, String)],
        message: &[u8],
    ) -> Result<Self, String> {
        let (secure, addr) = match addr.split_once("://") {
            Some(("grpcs" | "https", rest)) => (true, rest),
            Some(("grpc" | "http", rest)) => (false, rest),
            Some(_) => {
                return Err(format!(
                    "gRPC target {addr:?}: expected host:port, grpc:// or grpcs://"
                ))
            }
            None => (false, addr),
        };
        let addr = addr.trim_end_matches('/');
        let path = method_path(call)?;
        let scheme = if secure { "https" } else { "http" };
        let uri: Uri = format!("{scheme}://{addr}{path}")
            .parse()
            .map_err(|e| format!("gRPC target {addr:?} / {call:?}: {e}"))?;
        let authority = authority_of(&uri, addr, secure)?;
        let tls = secure
            .then(|| Tls::new(uri.host().unwrap_or(""), true))
            .transpose()?;
        let mut map = header_map(metadata)?;
        map.insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
        map.insert("te", HeaderValue::from_static("trailers"));
        Ok(Self::build(
            Transport::Grpc,
            authority,
            Method::POST,
            &uri,
            map,
            grpc_frame(message),
            tls,
        ))
    }

    fn build(
        transport: Transport,
        authority: String,
        method: Method,
        uri: &Uri,
        mut headers: HeaderMap,
        body: Bytes,
        tls: Option<Tls>,
    ) -> Self {
        // HTTP/1.1 sends the path and a Host header; HTTP/2 needs the absolute URI for
        // its :scheme and :authority.
        let uri = if transport == Transport::Http1 {
            if let Ok(host) = HeaderValue::from_str(&authority) {
                headers.insert(HOST, host);
            }
            uri.path_and_query()
                .map_or("/", |p| p.as_str())
                .parse()
                .unwrap_or_default()
        } else {
            uri.clone()
        };
        let wire = if transport == Transport::Http1 {
            crate::http1::serialize(method.as_str(), &uri.to_string(), &headers, &body)
        } else {
            Bytes::new()
        };
        Self {
            transport,
            authority,
            method,
            uri,
            headers,
            body,
            wire,
            tls,
        }
    }

    pub fn url(&self) -> String {
        match self.transport {
            Transport::Http1 => {
                let scheme = if self.tls.is_some() { "https" } else { "http" };
                format!("{scheme}://{}{}", self.authority, self.uri)
            }
            _ => self.uri.to_string(),
        }
    }

    /// The request without its body (sent separately, see `transport`).
    pub fn head(&self) -> Request<()> {
        let mut req = Request::new(());
        *req.method_mut() = self.method.clone();
        *req.uri_mut() = self.uri.clone();
        *req.headers_mut() = self.headers.clone();
        req
    }
}

fn authority_of(uri: &Uri, shown: &str, secure: bool) -> Result<String, String> {
    let a = uri
        .authority()
        .ok_or_else(|| format!("{shown:?} has no host"))?;
    let port = a.port_u16().unwrap_or(if secure { 443 } else { 80 });
    Ok(format!("{}:{port}", a.host()))
}

fn header_map(pairs: &[(String, String)]) -> Result<HeaderMap, String> {
    let mut map = HeaderMap::new();
    for (k, v) in pairs {
        let name = HeaderName::from_bytes(k.trim().as_bytes())
            .map_err(|e| format!("header name {k:?}: {e}"))?;
        let value =
            HeaderValue::from_str(v.trim()).map_err(|e| format!("header {k:?} value: {e}"))?;
        map.append(name, value);
    }
    Ok(map)
}

/// Splits `Key: value` (curl's and vegeta's `-H` form).
pub fn parse_header(s: &str) -> Result<(String, String), String> {
    let (k, v) = s
        .split_once(':')
        .ok_or_else(|| format!("header {s:?}: expected \"Name: value\""))?;
    Ok((k.trim().to_string(), v.trim().to_string()))
}

/// `/pkg.Service/Method` from any of the spellings gRPC tools accept.
pub fn method_path(call: &str) -> Result<String, String> {
    let c = call.trim().trim_start_matches('/');
    let path = if c.contains('/') {
        c.to_string()
    } else {
        let (svc, method) = c
            .rsplit_once('.')
            .ok_or_else(|| format!("gRPC method {call:?}: expected package.Service/Method"))?;
        format!("{svc}/{method}")
    };
    if path.split('/').count() != 2 || path.ends_with('/') {
        return Err(format!(
            "gRPC method {call:?}: expected package.Service/Method"
        ));
    }
    Ok(format!("/{path}"))
}

/// gRPC's message framing: a zero compression flag, a big-endian length, the message.
pub fn grpc_frame(message: &[u8]) -> Bytes {
    let mut b = BytesMut::with_capacity(5 + message.len());
    b.put_u8(0);
    b.put_u32(message.len() as u32);
    b.put_slice(message);
    b.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn method_spellings() {
        for s in [
            "/seldon.protos.Seldon/Predict",
            "seldon.protos.Seldon/Predict",
            "seldon.protos.Seldon.Predict",
        ] {
            assert_eq!(method_path(s).unwrap(), "/seldon.protos.Seldon/Predict");
        }
        assert!(method_path("Predict").is_err());
        assert!(method_path("a/b/c").is_err());
    }

    #[test]
    fn http1_sends_the_path_and_a_host() {
        let t = Target::http(
            "http://127.0.0.1:9000/api/v1.0/predictions",
            Method::POST,
            &[],
            Bytes::from_static(b"{}"),
            false,
        )
        .unwrap();
        let r = t.head();
        assert_eq!(r.uri(), "/api/v1.0/predictions");
        assert_eq!(r.headers()[HOST], "127.0.0.1:9000");
        assert_eq!(r.headers()[CONTENT_TYPE], "application/json");
        assert_eq!(t.authority, "127.0.0.1:9000");
        assert_eq!(
            &t.wire[..],
            b"POST /api/v1.0/predictions HTTP/1.1\r\ncontent-type: application/json\r\n\
              host: 127.0.0.1:9000\r\ncontent-length: 2\r\n\r\n{}"
        );
    }

    #[test]
    fn grpc_frames_the_message() {
        let t = Target::grpc("127.0.0.1:5000", "a.B/C", &[], b"xyz").unwrap();
        assert_eq!(&t.body[..], &[0, 0, 0, 0, 3, b'x', b'y', b'z']);
        assert_eq!(t.head().uri(), "http://127.0.0.1:5000/a.B/C");
    }
}
