//! HTTP/2 (h2c and gRPC) on a connection of its own, driven by one thread with blocking
//! calls, one stream at a time: a call costs a write and a read or two, as HTTP/1.1 does
//! on threads, instead of the async client's task hand-offs and `epoll_wait`s (a third of
//! the generator's CPU on a small gRPC call). The request's header block is encoded once;
//! HEADERS and DATA leave in one write. Windows are opened wide at the start, so a
//! response never waits for flow control.
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;

use bytes::{Buf, BytesMut};

use crate::hpack;
use crate::target::{Target, Transport};
use crate::transport::{Code, Outcome};

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const DATA: u8 = 0;
const HEADERS: u8 = 1;
const RST_STREAM: u8 = 3;
const SETTINGS: u8 = 4;
const PUSH_PROMISE: u8 = 5;
const PING: u8 = 6;
const GOAWAY: u8 = 7;
const WINDOW_UPDATE: u8 = 8;
const CONTINUATION: u8 = 9;
const END_STREAM: u8 = 0x1;
const ACK: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const PADDED: u8 = 0x8;
const PRIORITY: u8 = 0x20;
const MAX_WINDOW: u32 = (1 << 31) - 1;
/// The largest frame we accept (advertised), as the async client's.
const OUR_MAX_FRAME: usize = 1 << 20;
/// Returned to the connection window once this much was received.
const REFILL: u64 = 1 << 30;

/// One request's frames, prepared once per run.
pub struct Prepared {
    block: Vec<u8>,
    grpc: bool,
}

impl Prepared {
    pub fn new(t: &Target) -> Self {
        let head = t.head();
        let uri = head.uri();
        let path = uri.path_and_query().map_or("/", |p| p.as_str());
        let scheme = uri.scheme_str().unwrap_or("http");
        let mut fields: Vec<(&[u8], &[u8])> = vec![
            (b":method", head.method().as_str().as_bytes()),
            (b":scheme", scheme.as_bytes()),
            (b":path", path.as_bytes()),
            (b":authority", t.authority.as_bytes()),
        ];
        for (k, v) in head.headers() {
            fields.push((k.as_str().as_bytes(), v.as_bytes()));
        }
        Self {
            block: hpack::encode(&fields),
            grpc: t.transport == Transport::Grpc,
        }
    }
}

pub struct Conn {
    sock: TcpStream,
    rbuf: BytesMut,
    chunk: Box<[u8]>,
    wbuf: Vec<u8>,
    decoder: hpack::Decoder,
    next_stream: u32,
    peer_max_frame: usize,
    peer_window: i64,
    conn_window: i64,
    received: u64,
    /// The server said GOAWAY: finish this stream, then reconnect.
    going_away: bool,
}

/// What one exchange gave, and whether the connection must be dropped.
pub type Exchange = (Outcome, bool);

impl Conn {
    pub fn new(mut sock: TcpStream) -> std::io::Result<Self> {
        let mut hello = PREFACE.to_vec();
        let settings: [(u16, u32); 3] = [
            (2, 0),                    // no server push
            (4, MAX_WINDOW),           // stream windows never close
            (5, OUR_MAX_FRAME as u32), // large DATA frames
        ];
        frame_header(&mut hello, settings.len() * 6, SETTINGS, 0, 0);
        for (id, v) in settings {
            hello.extend_from_slice(&id.to_be_bytes());
            hello.extend_from_slice(&v.to_be_bytes());
        }
        frame_header(&mut hello, 4, WINDOW_UPDATE, 0, 0);
        hello.extend_from_slice(&(MAX_WINDOW - 65_535).to_be_bytes());
        sock.write_all(&hello)?;
        Ok(Self {
            sock,
            rbuf: BytesMut::with_capacity(16 * 1024),
            chunk: vec![0; 64 * 1024].into_boxed_slice(),
            wbuf: Vec::with_capacity(4096),
            decoder: hpack::Decoder::default(),
            next_stream: 1,
            peer_max_frame: 16_384,
            peer_window: 65_535,
            conn_window: 65_535,
            received: 0,
            going_away: false,
        })
    }

    /// Sends one request and reads its whole response. `Err` is a broken connection.
    pub fn exchange(&mut self, p: &Prepared, body: &[u8]) -> Result<Exchange, String> {
        let id = self.next_stream;
        self.next_stream += 2;
        let mut s = Stream {
            id,
            window: self.peer_window,
            status: None,
            grpc_status: None,
            grpc_message: None,
            bytes_in: 0,
            head_of_body: Vec::new(),
            ended: false,
            block: None,
        };
        self.wbuf.clear();
        let mut at = 0;
        let mut first = true;
        while first || at < p.block.len() {
            let n = (p.block.len() - at).min(self.peer_max_frame);
            let last = at + n == p.block.len();
            let (kind, mut flags) = if first {
                (HEADERS, 0)
            } else {
                (CONTINUATION, 0)
            };
            if last {
                flags |= END_HEADERS;
            }
            if first && body.is_empty() {
                flags |= END_STREAM;
            }
            frame_header(&mut self.wbuf, n, kind, flags, id);
            self.wbuf.extend_from_slice(&p.block[at..at + n]);
            (at, first) = (at + n, false);
        }
        // The body goes out in frames as large as the peer takes and the windows allow;
        // a small one leaves with the headers in one write.
        let mut sent = 0;
        while sent < body.len() && !s.ended {
            let room = s.window.min(self.conn_window).max(0) as usize;
            let n = (body.len() - sent).min(self.peer_max_frame).min(room);
            if n == 0 {
                self.flush()?;
                self.read_frame(&mut s)?; // waits for a WINDOW_UPDATE
                continue;
            }
            let flags = if sent + n == body.len() {
                END_STREAM
            } else {
                0
            };
            frame_header(&mut self.wbuf, n, DATA, flags, id);
            if n > 16 * 1024 {
                self.flush()?;
                self.write(&body[sent..sent + n])?;
            } else {
                self.wbuf.extend_from_slice(&body[sent..sent + n]);
            }
            sent += n;
            s.window -= n as i64;
            self.conn_window -= n as i64;
        }
        self.flush()?;
        while !s.ended {
            self.read_frame(&mut s)?;
        }
        if self.received >= REFILL {
            self.wbuf.clear();
            frame_header(&mut self.wbuf, 4, WINDOW_UPDATE, 0, 0);
            self.wbuf
                .extend_from_slice(&(self.received as u32).to_be_bytes());
            self.received = 0;
            self.flush()?;
        }
        let close = self.going_away || self.next_stream > MAX_WINDOW - 2;
        Ok((s.outcome(p.grpc), close))
    }

    fn flush(&mut self) -> Result<(), String> {
        if !self.wbuf.is_empty() {
            let buf = std::mem::take(&mut self.wbuf);
            let r = self.write(&buf);
            self.wbuf = buf;
            self.wbuf.clear();
            r?;
        }
        Ok(())
    }

    fn write(&mut self, data: &[u8]) -> Result<(), String> {
        self.sock
            .write_all(data)
            .map_err(|e| io_error("writing", e))
    }

    /// Reads and handles one frame.
    fn read_frame(&mut self, s: &mut Stream) -> Result<(), String> {
        while self.rbuf.len() < 9 || self.rbuf.len() < 9 + frame_len(&self.rbuf) {
            if self.rbuf.len() >= 9 && frame_len(&self.rbuf) > OUR_MAX_FRAME {
                return Err(format!(
                    "HTTP/2 frame of {} bytes, above the advertised {OUR_MAX_FRAME}",
                    frame_len(&self.rbuf)
                ));
            }
            let n = self
                .sock
                .read(&mut self.chunk)
                .map_err(|e| io_error("reading", e))?;
            if n == 0 {
                return Err("the server closed the connection".into());
            }
            self.rbuf.extend_from_slice(&self.chunk[..n]);
        }
        let len = frame_len(&self.rbuf);
        let kind = self.rbuf[3];
        let flags = self.rbuf[4];
        let stream = u32::from_be_bytes([self.rbuf[5], self.rbuf[6], self.rbuf[7], self.rbuf[8]])
            & MAX_WINDOW;
        self.rbuf.advance(9);
        let payload = self.rbuf.split_to(len);
        let ours = stream == s.id;
        match kind {
            DATA => {
                self.received += len as u64;
                if ours {
                    let data = unpad(&payload, flags)?;
                    s.bytes_in += data.len() as u64;
                    if s.status.is_some_and(|c| c >= 400) {
                        crate::error_body::keep_head(&mut s.head_of_body, data);
                    }
                    s.ended |= flags & END_STREAM != 0;
                }
            }
            HEADERS => {
                let mut block = unpad(&payload, flags)?;
                if flags & PRIORITY != 0 {
                    block = block
                        .get(5..)
                        .ok_or("HTTP/2 HEADERS shorter than its priority")?;
                }
                s.block = Some((block.to_vec(), ours, flags & END_STREAM != 0));
                if flags & END_HEADERS != 0 {
                    self.headers_done(s)?;
                }
            }
            CONTINUATION => {
                let Some((block, ..)) = s.block.as_mut() else {
                    return Err("HTTP/2 CONTINUATION without HEADERS".into());
                };
                block.extend_from_slice(&payload);
                if flags & END_HEADERS != 0 {
                    self.headers_done(s)?;
                }
            }
            SETTINGS if flags & ACK == 0 => {
                for kv in payload.chunks_exact(6) {
                    let v = u32::from_be_bytes([kv[2], kv[3], kv[4], kv[5]]);
                    match u16::from_be_bytes([kv[0], kv[1]]) {
                        4 => {
                            s.window += i64::from(v) - self.peer_window;
                            self.peer_window = i64::from(v);
                        }
                        5 => self.peer_max_frame = v as usize,
                        _ => {}
                    }
                }
                frame_header(&mut self.wbuf, 0, SETTINGS, ACK, 0);
                self.flush()?;
            }
            PING if flags & ACK == 0 => {
                frame_header(&mut self.wbuf, payload.len(), PING, ACK, 0);
                self.wbuf.extend_from_slice(&payload);
                self.flush()?;
            }
            WINDOW_UPDATE => {
                let inc = payload.get(..4).map_or(0, |b| {
                    u32::from_be_bytes([b[0], b[1], b[2], b[3]]) & MAX_WINDOW
                });
                if stream == 0 {
                    self.conn_window += i64::from(inc);
                } else if ours {
                    s.window += i64::from(inc);
                }
            }
            RST_STREAM if ours => {
                let code = payload
                    .get(..4)
                    .map_or(0, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
                return Err(format!(
                    "the server reset the stream (HTTP/2 error code {code})"
                ));
            }
            GOAWAY => {
                let last = payload.get(..4).map_or(0, |b| {
                    u32::from_be_bytes([b[0], b[1], b[2], b[3]]) & MAX_WINDOW
                });
                let code = payload
                    .get(4..8)
                    .map_or(0, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
                self.going_away = true;
                if last < s.id {
                    return Err(format!("the server sent GOAWAY (HTTP/2 error code {code})"));
                }
            }
            PUSH_PROMISE => {
                return Err("the server pushed a stream, though push was disabled".into())
            }
            _ => {} // PRIORITY, acknowledgements, frames of other streams
        }
        Ok(())
    }

    /// A whole header block arrived: decode it (every block, to keep the table in step).
    fn headers_done(&mut self, s: &mut Stream) -> Result<(), String> {
        let Some((block, ours, end_stream)) = s.block.take() else {
            return Ok(());
        };
        // Another stream's block only keeps the decoder's table in step.
        self.decoder.decode(&block, |name, value| {
            if !ours {
                return;
            }
            let text = || String::from_utf8_lossy(value).into_owned();
            match name {
                b":status" => s.status = text().parse().ok(),
                b"grpc-status" => s.grpc_status = text().trim().parse().ok(),
                b"grpc-message" => s.grpc_message = Some(crate::transport::percent_decode(&text())),
                _ => {}
            }
        })?;
        s.ended |= ours && end_stream;
        Ok(())
    }
}

struct Stream {
    id: u32,
    /// Our send window on this stream.
    window: i64,
    status: Option<u16>,
    grpc_status: Option<i32>,
    grpc_message: Option<String>,
    bytes_in: u64,
    head_of_body: Vec<u8>,
    ended: bool,
    /// A header block being collected (HEADERS then CONTINUATIONs): the bytes, whether
    /// it is this stream's, and whether it ends the stream.
    block: Option<(Vec<u8>, bool, bool)>,
}

impl Stream {
    fn outcome(self, grpc: bool) -> Outcome {
        let status = self.status.unwrap_or(0);
        let code = match (grpc, status) {
            (true, 200) => match self.grpc_status {
                Some(c) => Code::Grpc(c),
                None => Code::Error("gRPC response without grpc-status".into()),
            },
            _ => Code::Http(status),
        };
        let message = if code.ok() {
            None
        } else if grpc {
            self.grpc_message
                .or_else(|| Some(format!("HTTP status {status}")))
        } else {
            Some(crate::error_body::body_message(
                &self.head_of_body,
                self.bytes_in,
            ))
        };
        Outcome {
            code,
            bytes_in: self.bytes_in,
            message,
        }
    }
}

fn frame_header(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    out.extend_from_slice(&(len as u32).to_be_bytes()[1..]);
    out.push(kind);
    out.push(flags);
    out.extend_from_slice(&stream.to_be_bytes());
}

fn frame_len(b: &[u8]) -> usize {
    (usize::from(b[0]) << 16) | (usize::from(b[1]) << 8) | usize::from(b[2])
}

fn unpad(payload: &[u8], flags: u8) -> Result<&[u8], String> {
    if flags & PADDED == 0 {
        return Ok(payload);
    }
    let pad = *payload
        .first()
        .ok_or("HTTP/2 padded frame without its pad length")? as usize;
    payload
        .get(1..payload.len().saturating_sub(pad))
        .filter(|_| pad < payload.len())
        .ok_or_else(|| "HTTP/2 padding longer than its frame".into())
}

fn io_error(what: &str, e: std::io::Error) -> String {
    if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) {
        crate::http1::TIMED_OUT.to_string()
    } else {
        format!("{what} HTTP/2: {e}")
    }
}
