//! One streamed reply over HTTP/1.1: the request goes out whole (serialized once, see
//! `target`), the `text/event-stream` body is read as it arrives (the generator's own
//! response parser, `http1::Parser`, which undoes chunked framing), and each SSE event
//! with data is a piece, timed when the read that completed it returned.
use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::sse;
use super::tally::{End, Tally};
use crate::error_body::{body_message, keep_head};
use crate::http1::Parser;
use crate::stream::Io;
use crate::target::Target;

/// A keep-alive connection: reused by the worker's next stream unless the server closed
/// it or the stream ended early.
pub struct Conn {
    io: Box<dyn Io>,
    buf: BytesMut,
}

pub async fn open(t: &Target) -> Result<Conn, String> {
    Ok(Conn {
        io: crate::transport::tcp(t).await?,
        buf: BytesMut::with_capacity(16 * 1024),
    })
}

/// What one event is to the report.
enum Kind {
    Piece(usize),
    /// Not a piece: OpenAI-style `data: [DONE]`, which only marks the end.
    Skip,
    Error(String),
}

/// An `event: error` event, or data whose JSON has a top-level "error" (the failure of
/// a stream that had started, as inferwire, MLServer and Triton send it).
fn kind(e: &sse::Event<'_>) -> Kind {
    if e.event == "error" {
        return Kind::Error(String::from_utf8_lossy(e.data).trim().to_string());
    }
    if e.data == b"[DONE]" {
        return Kind::Skip;
    }
    // Parsed only when it may hold the key: most pieces are not looked into.
    let maybe_error = e.data.first() == Some(&b'{') && e.data.windows(7).any(|w| w == b"\"error\"");
    if maybe_error {
        if let Ok(serde_json::Value::Object(o)) = serde_json::from_slice(e.data) {
            if let Some(v) = o.get("error") {
                return Kind::Error(match v {
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                });
            }
        }
    }
    Kind::Piece(e.data.len())
}

/// Sends the request and reads its stream; how it ended, and whether the connection can
/// carry the next request.
pub async fn stream(c: &mut Conn, t: &Target, tally: &mut Tally) -> (End, bool) {
    if let Err(e) = c.io.write_all(&t.wire).await {
        return (
            End::failed("error", format!("writing the request: {e}")),
            false,
        );
    }
    let mut parser = Parser::keeping_body();
    let mut events = sse::Parser::default();
    let mut checked = false;
    // A failed response's status and the start of its body.
    let mut head = Vec::new();
    let mut body_len = 0u64;
    loop {
        let complete = match parser.feed(&mut c.buf) {
            Ok(x) => x,
            Err(e) => return (End::failed("error", e), false),
        };
        let status = parser.status();
        if status != 0 {
            let body = parser.take_body();
            if status != 200 {
                keep_head(&mut head, &body);
                body_len += body.len() as u64;
            } else {
                if !checked {
                    if let Some(end) = not_sse(parser.content_type()) {
                        return (end, false);
                    }
                    checked = true;
                }
                if let Some(end) = pieces(&mut events, &body, tally) {
                    // The body may go on: the connection is not reused.
                    return (end, false);
                }
            }
        }
        if complete {
            let close = parser.finish().close;
            return (end_of(status, &head, body_len), !close);
        }
        if c.buf.capacity() - c.buf.len() < 4096 {
            c.buf.reserve(16 * 1024);
        }
        match c.io.read_buf(&mut c.buf).await {
            Ok(0) => {
                return match parser.eof() {
                    Ok(_) => (end_of(status, &head, body_len), false),
                    Err(e) => (End::failed("error", e), false),
                }
            }
            Ok(_) => {}
            Err(e) => {
                let m = format!("reading the response: {e}");
                return (End::failed("error", m), false);
            }
        }
    }
}

/// Reads the events in `body`, the next part of an SSE body, into `tally`; how the
/// stream ended if an event or the body's form ended it.
pub fn pieces(events: &mut sse::Parser, body: &[u8], tally: &mut Tally) -> Option<End> {
    let mut failed = None;
    let fed = events.feed(body, &mut |e| match kind(&e) {
        Kind::Piece(n) => {
            tally.piece(n);
            true
        }
        Kind::Skip => true,
        Kind::Error(m) => {
            failed = Some(m);
            false
        }
    });
    match (failed, fed) {
        (Some(m), _) => Some(End::failed("error event", m)),
        (None, Err(e)) => Some(End::failed("error", e)),
        (None, Ok(_)) => None,
    }
}

/// A 200 whose content-type is not an event stream, as a failed stream's end.
pub fn not_sse(content_type: &str) -> Option<End> {
    (!content_type
        .to_ascii_lowercase()
        .starts_with("text/event-stream"))
    .then(|| {
        let m = format!("content-type {content_type:?}, not text/event-stream");
        End::failed("not SSE", m)
    })
}

/// A finished response: 200 is a stream that ended well; any other status failed, with
/// the start of its body as the message.
pub fn end_of(status: u16, head: &[u8], body_len: u64) -> End {
    if status == 200 {
        End::ok("200")
    } else {
        End::failed(&status.to_string(), body_message(head, body_len))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind_of(event: &str, data: &str) -> String {
        let e = sse::Event {
            event,
            data: data.as_bytes(),
        };
        match kind(&e) {
            Kind::Piece(n) => format!("piece {n}"),
            Kind::Skip => "skip".into(),
            Kind::Error(m) => format!("error {m}"),
        }
    }

    #[test]
    fn errors_are_an_error_key_or_event() {
        assert_eq!(kind_of("message", r#"{"text":"abc"}"#), "piece 14");
        assert_eq!(
            kind_of("message", r#"{"error":"model failed"}"#),
            "error model failed"
        );
        assert_eq!(
            kind_of("message", r#"{"error":{"code":3}}"#),
            r#"error {"code":3}"#
        );
        // Only a top-level key: an output that mentions "error" is a piece.
        assert_eq!(kind_of("message", r#"{"x":{"error":1}}"#), "piece 17");
        assert_eq!(kind_of("message", r#"{"text":"\"error\""}"#), "piece 20");
        assert_eq!(kind_of("error", "overloaded"), "error overloaded");
        assert_eq!(kind_of("message", "[DONE]"), "skip");
    }
}
