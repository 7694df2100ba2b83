//! A minimal HTTP/1.1 keep-alive client for load generation: the request is serialized
//! once and written with one call; the response is parsed as it arrives (httparse) and
//! its body counted, not kept. hyper's client connection hands each request to a
//! connection task over a channel; here the worker reads and writes its socket itself,
//! from a tokio task (`Conn`) or from its own thread with blocking calls (`BlockingConn`).
use std::os::fd::AsRawFd;

use bytes::{Buf, Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::zerocopy::{self, Discard};

/// The largest response head accepted.
const MAX_HEAD: usize = 64 * 1024;
const MAX_HEADERS: usize = 64;

/// The error `BlockingConn::exchange` gives when the socket's timeout expired.
pub const TIMED_OUT: &str = "timed out";

/// What one exchange gave.
pub struct Response {
    pub status: u16,
    pub body_len: u64,
    /// The start of the body of an error (4xx/5xx), for the report's error set.
    pub head_of_body: Vec<u8>,
    /// The server asked to close the connection after this response.
    pub close: bool,
}

/// An incremental response parser: it consumes bytes as they arrive and says when the
/// response is complete, so the async and the blocking connection share it.
pub struct Parser {
    state: State,
    head_request: bool,
    status: u16,
    close: bool,
    body_len: u64,
    head_of_body: Vec<u8>,
    /// With `keeping_body`: the body's bytes since the last `take_body`.
    kept: Option<BytesMut>,
    content_type: String,
}

#[derive(Clone, Copy)]
enum State {
    Head,
    Length(u64),
    ChunkSize,
    ChunkData(u64),
    ChunkEnd,
    Trailers,
    UntilClose,
    Done,
}

impl Parser {
    /// `head_request`: the request was HEAD, whose response has no body whatever its
    /// headers say.
    pub fn new(head_request: bool) -> Self {
        Self {
            state: State::Head,
            head_request,
            status: 0,
            close: false,
            body_len: 0,
            head_of_body: Vec::new(),
            kept: None,
            content_type: String::new(),
        }
    }

    /// A parser that keeps the body's bytes for `take_body` (the stream reader reads
    /// events out of them as they arrive) instead of only counting them.
    pub fn keeping_body() -> Self {
        Self {
            kept: Some(BytesMut::new()),
            ..Self::new(false)
        }
    }

    /// The body's bytes that arrived since the last call (with `keeping_body`).
    pub fn take_body(&mut self) -> BytesMut {
        self.kept.as_mut().map(BytesMut::split).unwrap_or_default()
    }

    /// The status, once the head is in (0 before).
    pub fn status(&self) -> u16 {
        self.status
    }

    /// The response's content-type, once the head is in.
    pub fn content_type(&self) -> &str {
        &self.content_type
    }

    /// Consumes from `buf` what belongs to this response; `true` once it is complete.
    pub fn feed(&mut self, buf: &mut BytesMut) -> Result<bool, String> {
        loop {
            match self.state {
                State::Done => return Ok(true),
                State::Head => match self.head(buf)? {
                    true => {}
                    false => return Ok(false),
                },
                State::Length(0) => self.state = State::Done,
                State::Length(n) | State::ChunkData(n) => {
                    if buf.is_empty() {
                        return Ok(false);
                    }
                    let take = (buf.len() as u64).min(n) as usize;
                    self.body(buf, take);
                    let left = n - take as u64;
                    self.state = match self.state {
                        State::Length(_) => State::Length(left),
                        _ if left == 0 => State::ChunkEnd,
                        _ => State::ChunkData(left),
                    };
                }
                State::ChunkSize => {
                    let Some(line) = line(buf)? else {
                        return Ok(false);
                    };
                    let size = line.split(';').next().unwrap_or("").trim();
                    let n = u64::from_str_radix(size, 16)
                        .map_err(|_| format!("chunked body: bad chunk size {size:?}"))?;
                    self.state = if n == 0 {
                        State::Trailers
                    } else {
                        State::ChunkData(n)
                    };
                }
                State::ChunkEnd => match line(buf)? {
                    Some(_) => self.state = State::ChunkSize,
                    None => return Ok(false),
                },
                State::Trailers => match line(buf)? {
                    Some(l) if l.is_empty() => self.state = State::Done,
                    Some(_) => {}
                    None => return Ok(false),
                },
                State::UntilClose => {
                    let n = buf.len();
                    self.body(buf, n);
                    return Ok(false);
                }
            }
        }
    }

    /// The connection ended: complete for a body delimited by the close, else an error.
    pub fn eof(mut self) -> Result<Response, String> {
        match self.state {
            State::UntilClose | State::Done => {
                self.close = true;
                Ok(self.finish())
            }
            _ => Err("the server closed the connection mid-response".into()),
        }
    }

    pub fn finish(self) -> Response {
        Response {
            status: self.status,
            body_len: self.body_len,
            head_of_body: self.head_of_body,
            close: self.close,
        }
    }

    fn body(&mut self, buf: &mut BytesMut, n: usize) {
        self.count(&buf[..n]);
        buf.advance(n);
    }

    fn count(&mut self, data: &[u8]) {
        if let Some(k) = &mut self.kept {
            k.extend_from_slice(data);
        }
        if self.status >= 400 {
            crate::error_body::keep_head(&mut self.head_of_body, data);
        }
        self.body_len += data.len() as u64;
    }

    /// What is left of a body of known length, once everything buffered is consumed.
    fn length_left(&self) -> Option<u64> {
        match self.state {
            State::Length(n) if n > 0 => Some(n),
            _ => None,
        }
    }

    /// `data`, read straight from the socket, is the next part of a body of known length
    /// (at most `length_left`): counted without going through the buffer.
    fn counted(&mut self, data: &[u8]) {
        self.count(data);
        if let State::Length(n) = self.state {
            self.state = State::Length(n - data.len() as u64);
        }
    }

    /// `n` bytes of a successful body of known length went by without being read.
    fn skipped(&mut self, n: u64) {
        self.body_len += n;
        if let State::Length(left) = self.state {
            self.state = State::Length(left - n);
        }
    }

    /// Parses the status line and headers once they are all in; `false` if not yet.
    fn head(&mut self, buf: &mut BytesMut) -> Result<bool, String> {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut res = httparse::Response::new(&mut headers);
        let n = match res.parse(buf) {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) if buf.len() < MAX_HEAD => return Ok(false),
            Ok(httparse::Status::Partial) => {
                return Err(format!("response head larger than {MAX_HEAD} bytes"))
            }
            Err(e) => return Err(format!("malformed response: {e}")),
        };
        self.status = res.code.unwrap_or(0);
        self.close = res.version == Some(0);
        let mut framing = State::UntilClose;
        for h in res.headers.iter() {
            let v = std::str::from_utf8(h.value).unwrap_or("").trim();
            if h.name.eq_ignore_ascii_case("content-length") {
                let len = v.parse().map_err(|_| format!("bad content-length {v:?}"))?;
                if !matches!(framing, State::ChunkSize) {
                    framing = State::Length(len);
                }
            } else if h.name.eq_ignore_ascii_case("transfer-encoding")
                && v.to_ascii_lowercase().ends_with("chunked")
            {
                framing = State::ChunkSize;
            } else if h.name.eq_ignore_ascii_case("connection") {
                self.close = v.eq_ignore_ascii_case("close");
            } else if h.name.eq_ignore_ascii_case("content-type") {
                self.content_type = v.to_string();
            }
        }
        let bodiless = self.head_request
            || matches!(self.status, 204 | 304)
            || (100..200).contains(&self.status);
        self.state = if bodiless { State::Done } else { framing };
        buf.advance(n);
        Ok(true)
    }
}

/// One line (without its CRLF) once it is complete.
fn line(buf: &mut BytesMut) -> Result<Option<String>, String> {
    match buf.iter().position(|&b| b == b'\n') {
        Some(i) => {
            let l = String::from_utf8_lossy(&buf[..i]).trim().to_string();
            buf.advance(i + 1);
            Ok(Some(l))
        }
        None if buf.len() > MAX_HEAD => Err("chunked body: line too long".into()),
        None => Ok(None),
    }
}

/// A connection driven by the async (tokio) workers.
pub struct Conn {
    stream: Box<dyn crate::stream::Io>,
    buf: BytesMut,
}

impl Conn {
    pub fn new(stream: Box<dyn crate::stream::Io>) -> Self {
        Self {
            stream,
            buf: BytesMut::with_capacity(16 * 1024),
        }
    }

    /// Writes `wire` (a whole serialized request) and reads one response.
    pub async fn exchange(&mut self, wire: &[u8], head: bool) -> Result<Response, String> {
        self.stream
            .write_all(wire)
            .await
            .map_err(|e| format!("writing the request: {e}"))?;
        let mut parser = Parser::new(head);
        loop {
            if parser.feed(&mut self.buf)? {
                return Ok(parser.finish());
            }
            if self.buf.capacity() - self.buf.len() < 4096 {
                self.buf.reserve(16 * 1024);
            }
            let n = self
                .stream
                .read_buf(&mut self.buf)
                .await
                .map_err(|e| format!("reading the response: {e}"))?;
            if n == 0 {
                return parser.eof();
            }
        }
    }
}

/// A connection driven by its own thread with blocking calls: a request costs a write
/// and a read, without the `epoll_wait` an async runtime adds.
pub struct BlockingConn {
    stream: BlockingStream,
    buf: BytesMut,
    chunk: Box<[u8]>,
    /// Made the first time a large body is to be thrown away.
    discard: Option<Discard>,
}

/// A blocking connection's byte stream: plain TCP, or TLS over it.
pub enum BlockingStream {
    Plain(std::net::TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, std::net::TcpStream>>),
}

impl std::io::Read for BlockingStream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            BlockingStream::Plain(s) => s.read(buf),
            BlockingStream::Tls(s) => s.read(buf),
        }
    }
}

impl std::io::Write for BlockingStream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            BlockingStream::Plain(s) => s.write(buf),
            BlockingStream::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            BlockingStream::Plain(s) => s.flush(),
            BlockingStream::Tls(s) => s.flush(),
        }
    }
}

impl BlockingConn {
    pub fn new(stream: BlockingStream) -> Self {
        Self {
            stream,
            buf: BytesMut::with_capacity(16 * 1024),
            chunk: vec![0; 64 * 1024].into_boxed_slice(),
            discard: None,
        }
    }

    /// Sends `wire` and reads one response (a large body without copying it, see
    /// `zerocopy`).
    pub fn exchange(&mut self, wire: &[u8], head: bool) -> Result<Response, String> {
        use std::io::{ErrorKind, Read, Write};
        let failed = |what: &str, e: std::io::Error| {
            if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) {
                TIMED_OUT.to_string()
            } else {
                format!("{what}: {e}")
            }
        };
        self.stream
            .write_all(wire)
            .map_err(|e| failed("writing the request", e))?;
        let mut parser = Parser::new(head);
        loop {
            if parser.feed(&mut self.buf)? {
                return Ok(parser.finish());
            }
            let n = match (parser.length_left(), &self.stream) {
                // A large body: past the socket without a copy.
                (Some(left), BlockingStream::Plain(s))
                    if left >= zerocopy::MIN as u64 && parser.status < 400 =>
                {
                    let d = match &mut self.discard {
                        Some(d) => d,
                        None => self
                            .discard
                            .insert(Discard::new().map_err(|e| format!("making a pipe: {e}"))?),
                    };
                    let n = d
                        .drain(s.as_raw_fd(), left)
                        .map_err(|e| failed("reading the response", e))?;
                    parser.skipped(n);
                    n as usize
                }
                // The rest of a body: counted from the read buffer, not appended.
                (Some(left), _) => {
                    let want = (left as usize).min(self.chunk.len());
                    let n = self
                        .stream
                        .read(&mut self.chunk[..want])
                        .map_err(|e| failed("reading the response", e))?;
                    parser.counted(&self.chunk[..n]);
                    n
                }
                (None, _) => {
                    let n = self
                        .stream
                        .read(&mut self.chunk)
                        .map_err(|e| failed("reading the response", e))?;
                    self.buf.extend_from_slice(&self.chunk[..n]);
                    n
                }
            };
            if n == 0 {
                return parser.eof();
            }
        }
    }
}

/// The request as it goes on the wire: request line, headers, body.
pub fn serialize(method: &str, path: &str, headers: &http::HeaderMap, body: &[u8]) -> Bytes {
    let mut w = Vec::with_capacity(256 + body.len());
    w.extend_from_slice(method.as_bytes());
    w.push(b' ');
    w.extend_from_slice(path.as_bytes());
    w.extend_from_slice(b" HTTP/1.1\r\n");
    for (k, v) in headers {
        w.extend_from_slice(k.as_str().as_bytes());
        w.extend_from_slice(b": ");
        w.extend_from_slice(v.as_bytes());
        w.extend_from_slice(b"\r\n");
    }
    if !body.is_empty() || matches!(method, "POST" | "PUT" | "PATCH") {
        w.extend_from_slice(format!("content-length: {}\r\n", body.len()).as_bytes());
    }
    w.extend_from_slice(b"\r\n");
    w.extend_from_slice(body);
    w.into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::{TcpListener, TcpStream};

    /// A server that answers each request with the next scripted response, written in
    /// small pieces so that the client must reassemble it.
    async fn scripted(responses: Vec<&'static [u8]>) -> Conn {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut s, _) = l.accept().await.unwrap();
            for r in responses {
                let mut buf = [0u8; 1024];
                let _ = s.read(&mut buf).await.unwrap();
                for piece in r.chunks(7) {
                    s.write_all(piece).await.unwrap();
                    s.flush().await.unwrap();
                    tokio::task::yield_now().await;
                }
            }
        });
        Conn::new(Box::new(TcpStream::connect(addr).await.unwrap()))
    }

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn lengths_chunks_errors_and_close() {
        rt().block_on(async {
            let mut c = scripted(vec![
                b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello",
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n4;x=1\r\ndefg\r\n0\r\nx-t: 1\r\n\r\n",
                b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 4\r\n\r\nbusy",
                b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok",
            ])
            .await;
            let r = c.exchange(b"GET / HTTP/1.1\r\n\r\n", false).await.unwrap();
            assert_eq!((r.status, r.body_len, r.close), (200, 5, false));
            let r = c.exchange(b"GET / HTTP/1.1\r\n\r\n", false).await.unwrap();
            assert_eq!((r.status, r.body_len), (200, 7));
            let r = c.exchange(b"GET / HTTP/1.1\r\n\r\n", false).await.unwrap();
            assert_eq!((r.status, r.head_of_body.as_slice()), (503, &b"busy"[..]));
            let r = c.exchange(b"GET / HTTP/1.1\r\n\r\n", false).await.unwrap();
            assert!(r.close);
        });
    }

    #[test]
    fn head_responses_have_no_body_and_truncation_is_an_error() {
        rt().block_on(async {
            let mut c = scripted(vec![
                b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\n",
                b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nshort",
            ])
            .await;
            let r = c.exchange(b"HEAD / HTTP/1.1\r\n\r\n", true).await.unwrap();
            assert_eq!(r.body_len, 0);
            let e = c
                .exchange(b"GET / HTTP/1.1\r\n\r\n", false)
                .await
                .err()
                .unwrap();
            assert!(e.contains("closed the connection mid-response"), "{e}");
        });
    }
}
