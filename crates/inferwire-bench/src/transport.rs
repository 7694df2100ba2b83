//! Connections and one request on them: HTTP/1.1 with the generator's own client
//! (`http1`), HTTP/2 (h2c, gRPC) with the h2 crate; no pool in between: the load driver
//! owns every connection. With h2 itself (not hyper's client on top of it) a request's
//! HEADERS and DATA frames are queued together and leave in one `writev`.
use bytes::Bytes;
use tokio::net::TcpStream;

use crate::error_body::{body_message, keep_head};
use crate::target::{Target, Transport};

/// HTTP/2 windows large enough for a large tensor in one go (as the server's).
const STREAM_WINDOW: u32 = 4 * 1024 * 1024;
const CONNECTION_WINDOW: u32 = 16 * 1024 * 1024;

pub enum Sender {
    /// `None` once the server closed it: the next request opens a new one.
    H1(Option<crate::http1::Conn>),
    H2(h2::client::SendRequest<Bytes>),
}

impl Sender {
    /// Another handle on the same connection (HTTP/2 multiplexes; HTTP/1.1 cannot).
    pub fn share(&self) -> Option<Sender> {
        match self {
            Sender::H1(_) => None,
            Sender::H2(s) => Some(Sender::H2(s.clone())),
        }
    }
}

/// Why a connection could not be opened, and what to check.
pub(crate) fn connect_error(addr: &str, e: std::io::Error) -> String {
    format!("connect {addr}: {e} (is a server listening there?)")
}

pub use crate::stream::Io;

pub(crate) async fn tcp(t: &Target) -> Result<Box<dyn Io>, String> {
    let tcp = TcpStream::connect(&t.authority)
        .await
        .map_err(|e| connect_error(&t.authority, e))?;
    let _ = tcp.set_nodelay(true);
    match &t.tls {
        None => Ok(Box::new(tcp)),
        Some(tls) => {
            let connector = tokio_rustls::TlsConnector::from(tls.config.clone());
            let stream = connector
                .connect(tls.server_name.clone(), tcp)
                .await
                .map_err(|e| format!("TLS handshake with {}: {e}", t.authority))?;
            Ok(Box::new(stream))
        }
    }
}

/// How a request ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Code {
    Http(u16),
    /// A gRPC status code (0 is OK).
    Grpc(i32),
    /// No response: the connection failed, or the time ran out.
    Error(String),
}

impl Code {
    pub fn ok(&self) -> bool {
        match self {
            // vegeta's rule: any 2xx or 3xx answer is a success.
            Code::Http(s) => (200..400).contains(s),
            Code::Grpc(c) => *c == 0,
            Code::Error(_) => false,
        }
    }

    /// The label in a report's status-code table: `200`, `OK`, `Unavailable`, `error`.
    pub fn label(&self) -> String {
        match self {
            Code::Http(s) => s.to_string(),
            Code::Grpc(c) => grpc_code_name(*c).to_string(),
            Code::Error(_) => "error".to_string(),
        }
    }
}

pub struct Outcome {
    pub code: Code,
    /// Response body bytes (the framed message for gRPC).
    pub bytes_in: u64,
    /// The server's message for a failed request (HTTP body start, grpc-message).
    pub message: Option<String>,
}

pub async fn connect(t: &Target) -> Result<Sender, String> {
    let tcp = tcp(t).await?;
    match t.transport {
        Transport::Http1 => Ok(Sender::H1(Some(crate::http1::Conn::new(tcp)))),
        Transport::H2c | Transport::Grpc => {
            let (sender, conn) = h2::client::Builder::new()
                .initial_window_size(STREAM_WINDOW)
                .initial_connection_window_size(CONNECTION_WINDOW)
                .max_frame_size(1 << 20)
                .handshake::<Box<dyn Io>, Bytes>(tcp)
                .await
                .map_err(|e| format!("HTTP/2 handshake with {}: {e}", t.authority))?;
            tokio::spawn(async move {
                let _ = conn.await;
            });
            Ok(Sender::H2(sender))
        }
    }
}

/// Sends one request and reads the whole response.
pub async fn send(sender: &mut Sender, t: &Target) -> Outcome {
    match sender {
        Sender::H1(conn) => send_h1(conn, t).await,
        Sender::H2(s) => match send_h2(s, t).await {
            Ok(out) => out,
            Err(e) => failed(error_text(&e)),
        },
    }
}

async fn send_h2(s: &mut h2::client::SendRequest<Bytes>, t: &Target) -> Result<Outcome, h2::Error> {
    std::future::poll_fn(|cx| s.poll_ready(cx)).await?;
    let (res, mut stream) = s.send_request(t.head(), t.body.is_empty())?;
    if !t.body.is_empty() {
        // Queued with the HEADERS frame; h2 sends what the peer's window allows now and
        // the rest as WINDOW_UPDATEs arrive.
        stream.send_data(t.body.clone(), true)?;
    }
    let res = res.await?;
    let status = res.status().as_u16();
    let mut grpc_status = header_i32(res.headers(), "grpc-status");
    let mut grpc_message = header_text(res.headers(), "grpc-message");
    let mut body = res.into_body();
    let mut bytes_in = 0u64;
    // The start of an error body, for the report's error set.
    let mut head = Vec::new();
    while let Some(chunk) = body.data().await {
        let d = chunk?;
        bytes_in += d.len() as u64;
        if status >= 400 {
            keep_head(&mut head, &d);
        }
        body.flow_control().release_capacity(d.len())?;
    }
    if let Some(tr) = body.trailers().await? {
        grpc_status = header_i32(&tr, "grpc-status").or(grpc_status);
        grpc_message = header_text(&tr, "grpc-message").or(grpc_message);
    }
    let code = match t.transport {
        Transport::Grpc if status == 200 => match grpc_status {
            Some(c) => Code::Grpc(c),
            None => Code::Error("gRPC response without grpc-status".into()),
        },
        _ => Code::Http(status),
    };
    let message = if code.ok() {
        None
    } else if t.transport == Transport::Grpc {
        grpc_message.or_else(|| Some(format!("HTTP status {status}")))
    } else {
        Some(body_message(&head, bytes_in))
    };
    Ok(Outcome {
        code,
        bytes_in,
        message,
    })
}

async fn send_h1(slot: &mut Option<crate::http1::Conn>, t: &Target) -> Outcome {
    let conn = match slot {
        Some(c) => c,
        None => match tcp(t).await {
            Ok(s) => slot.insert(crate::http1::Conn::new(s)),
            Err(e) => return failed(e),
        },
    };
    let (out, close) = outcome_of(conn.exchange(&t.wire, t.method == http::Method::HEAD).await);
    if close {
        *slot = None;
    }
    out
}

/// An HTTP/1.1 exchange as an outcome, and whether the connection must be dropped.
pub(crate) fn outcome_of(r: Result<crate::http1::Response, String>) -> (Outcome, bool) {
    match r {
        Ok(r) => {
            let code = Code::Http(r.status);
            let message = (!code.ok()).then(|| body_message(&r.head_of_body, r.body_len));
            let out = Outcome {
                code,
                bytes_in: r.body_len,
                message,
            };
            (out, r.close)
        }
        Err(e) => (failed(e), true),
    }
}

fn failed(e: String) -> Outcome {
    Outcome {
        code: Code::Error(e.clone()),
        bytes_in: 0,
        message: Some(e),
    }
}

/// hyper's error and its cause ("connection reset by peer"), on one line.
pub(crate) fn error_text(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(c) = source {
        s.push_str(": ");
        s.push_str(&c.to_string());
        source = c.source();
    }
    s
}

fn header_i32(h: &http::HeaderMap, name: &str) -> Option<i32> {
    h.get(name)?.to_str().ok()?.trim().parse().ok()
}

fn header_text(h: &http::HeaderMap, name: &str) -> Option<String> {
    let raw = h.get(name)?.to_str().ok()?;
    Some(percent_decode(raw))
}

/// grpc-message is percent-encoded; a `%` without two hex digits after it stays as it is.
pub(crate) fn percent_decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
}

/// The names ghz and grpc-go print for status codes.
pub fn grpc_code_name(c: i32) -> &'static str {
    match c {
        0 => "OK",
        1 => "Canceled",
        2 => "Unknown",
        3 => "InvalidArgument",
        4 => "DeadlineExceeded",
        5 => "NotFound",
        6 => "AlreadyExists",
        7 => "PermissionDenied",
        8 => "ResourceExhausted",
        9 => "FailedPrecondition",
        10 => "Aborted",
        11 => "OutOfRange",
        12 => "Unimplemented",
        13 => "Internal",
        14 => "Unavailable",
        15 => "DataLoss",
        16 => "Unauthenticated",
        _ => "UnknownCode",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_messages_are_percent_decoded() {
        assert_eq!(percent_decode("bad%20input%3A x"), "bad input: x");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz"), "%zz");
        assert_eq!(percent_decode("%+1 %4"), "%+1 %4");
        assert_eq!(percent_decode("caf%C3%A9 %FF"), "café \u{fffd}");
    }
}
