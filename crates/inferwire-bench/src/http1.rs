//! A minimal HTTP/1.1 keep-alive client for load generation: the request is serialized
//! once and written with one call; the response is parsed in place (httparse) and its
//! body counted, not kept. hyper's client connection hands each request to a connection
//! task over a channel, two task switches per request; here the worker reads and writes
//! its socket itself, which halves the generator's CPU per small request.
use bytes::{Buf, Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The largest response head accepted.
const MAX_HEAD: usize = 64 * 1024;
const MAX_HEADERS: usize = 64;

pub struct Conn {
    stream: TcpStream,
    buf: BytesMut,
}

/// What one exchange gave.
pub struct Response {
    pub status: u16,
    pub body_len: u64,
    /// The start of the body, kept for error messages (4xx/5xx).
    pub head_of_body: Vec<u8>,
    /// The server asked to close the connection after this response.
    pub close: bool,
}

impl Conn {
    pub fn new(stream: TcpStream) -> Self {
        Self {
            stream,
            buf: BytesMut::with_capacity(16 * 1024),
        }
    }

    /// Writes `wire` (a whole serialized request) and reads one response. `head` is true
    /// for HEAD requests, whose responses have no body whatever their headers say.
    pub async fn exchange(&mut self, wire: &[u8], head: bool) -> Result<Response, String> {
        self.stream
            .write_all(wire)
            .await
            .map_err(|e| format!("writing the request: {e}"))?;
        let (status, framing, close) = self.read_head().await?;
        let keep = |status: u16| (400..600).contains(&status);
        let mut head_of_body = Vec::new();
        let body_len = match framing {
            _ if head || status == 204 || status == 304 || (100..200).contains(&status) => 0,
            Framing::Length(n) => {
                self.skip(n, keep(status).then_some(&mut head_of_body))
                    .await?
            }
            Framing::Chunked => {
                self.chunked(keep(status).then_some(&mut head_of_body))
                    .await?
            }
            Framing::UntilClose => {
                let mut n = self.buf.len() as u64;
                self.buf.clear();
                loop {
                    let got = self.fill().await?;
                    if got == 0 {
                        break;
                    }
                    n += got as u64;
                    self.buf.clear();
                }
                return Ok(Response {
                    status,
                    body_len: n,
                    head_of_body,
                    close: true,
                });
            }
        };
        Ok(Response {
            status,
            body_len,
            head_of_body,
            close,
        })
    }

    async fn fill(&mut self) -> Result<usize, String> {
        if self.buf.capacity() - self.buf.len() < 4096 {
            self.buf.reserve(16 * 1024);
        }
        self.stream
            .read_buf(&mut self.buf)
            .await
            .map_err(|e| format!("reading the response: {e}"))
    }

    async fn fill_or_eof(&mut self) -> Result<(), String> {
        match self.fill().await? {
            0 => Err("the server closed the connection mid-response".into()),
            _ => Ok(()),
        }
    }

    async fn read_head(&mut self) -> Result<(u16, Framing, bool), String> {
        loop {
            let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
            let mut res = httparse::Response::new(&mut headers);
            match res.parse(&self.buf) {
                Ok(httparse::Status::Complete(n)) => {
                    let status = res.code.unwrap_or(0);
                    let mut framing = Framing::UntilClose;
                    let mut close = res.version == Some(0);
                    for h in res.headers.iter() {
                        let v = std::str::from_utf8(h.value).unwrap_or("").trim();
                        if h.name.eq_ignore_ascii_case("content-length") {
                            let n = v.parse().map_err(|_| format!("bad content-length {v:?}"))?;
                            if !matches!(framing, Framing::Chunked) {
                                framing = Framing::Length(n);
                            }
                        } else if h.name.eq_ignore_ascii_case("transfer-encoding")
                            && v.to_ascii_lowercase().ends_with("chunked")
                        {
                            framing = Framing::Chunked;
                        } else if h.name.eq_ignore_ascii_case("connection") {
                            close = v.eq_ignore_ascii_case("close");
                        }
                    }
                    self.buf.advance(n);
                    return Ok((status, framing, close));
                }
                Ok(httparse::Status::Partial) if self.buf.len() < MAX_HEAD => {}
                Ok(httparse::Status::Partial) => {
                    return Err(format!("response head larger than {MAX_HEAD} bytes"))
                }
                Err(e) => return Err(format!("malformed response: {e}")),
            }
            self.fill_or_eof().await?;
        }
    }

    /// Consumes `n` body bytes, keeping the first 200 in `keep` if asked.
    async fn skip(&mut self, mut n: u64, mut keep: Option<&mut Vec<u8>>) -> Result<u64, String> {
        let total = n;
        loop {
            let take = (self.buf.len() as u64).min(n) as usize;
            if let Some(k) = keep.as_deref_mut() {
                let room = 200usize.saturating_sub(k.len()).min(take);
                k.extend_from_slice(&self.buf[..room]);
            }
            self.buf.advance(take);
            n -= take as u64;
            if n == 0 {
                return Ok(total);
            }
            self.fill_or_eof().await?;
        }
    }

    async fn line(&mut self) -> Result<String, String> {
        loop {
            if let Some(i) = self.buf.iter().position(|&b| b == b'\n') {
                let line = String::from_utf8_lossy(&self.buf[..i]).trim().to_string();
                self.buf.advance(i + 1);
                return Ok(line);
            }
            if self.buf.len() > MAX_HEAD {
                return Err("chunked body: line too long".into());
            }
            self.fill_or_eof().await?;
        }
    }

    async fn chunked(&mut self, mut keep: Option<&mut Vec<u8>>) -> Result<u64, String> {
        let mut total = 0;
        loop {
            let line = self.line().await?;
            let size = line.split(';').next().unwrap_or("").trim();
            let n = u64::from_str_radix(size, 16)
                .map_err(|_| format!("chunked body: bad chunk size {size:?}"))?;
            if n == 0 {
                // Trailers, up to an empty line.
                while !self.line().await?.is_empty() {}
                return Ok(total);
            }
            total += self.skip(n, keep.as_deref_mut()).await?;
            self.line().await?;
        }
    }
}

enum Framing {
    Length(u64),
    Chunked,
    UntilClose,
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
    use tokio::net::TcpListener;

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
        Conn::new(TcpStream::connect(addr).await.unwrap())
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
