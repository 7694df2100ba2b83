//! The floor under any gRPC server on this machine, as `http_floor` is for HTTP/1.1: one
//! thread per connection, blocking sockets, HTTP/2 framing read only as far as finding
//! where each stream's request ends (no HPACK decoding, no protobuf), and the same reply to
//! every call: `:status 200`, an empty message, `grpc-status: 0`. Every call that a read
//! completes is answered in one `write`, so with many streams in flight on one connection
//! it shows the least a multiplexing server can spend per call, too.
//!
//!     cargo run --release -p inferwire-server --example grpc_floor -- 127.0.0.1:5300
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const DATA: u8 = 0;
const HEADERS: u8 = 1;
const SETTINGS: u8 = 4;
const PING: u8 = 6;
const GOAWAY: u8 = 7;
const WINDOW_UPDATE: u8 = 8;
const END_STREAM: u8 = 0x1;
const ACK: u8 = 0x1;
const END_HEADERS: u8 = 0x4;

/// `:status: 200` (static index 8) and `content-type: application/grpc` (a literal
/// without indexing, on static name 31): no dynamic table, so every reply is the same.
const REPLY_HEADERS: &[u8] = b"\x88\x0f\x10\x10application/grpc";
/// `grpc-status: 0`, a literal with a new name, without indexing.
const TRAILERS: &[u8] = b"\x00\x0bgrpc-status\x010";
/// An empty message: not compressed, length 0.
const MESSAGE: &[u8] = &[0, 0, 0, 0, 0];

fn frame(out: &mut Vec<u8>, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
    let len = u32::try_from(payload.len()).expect("small frames only");
    out.extend_from_slice(&len.to_be_bytes()[1..]);
    out.extend_from_slice(&[kind, flags]);
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
}

fn serve(mut s: TcpStream) -> std::io::Result<()> {
    s.set_nodelay(true)?;
    let mut buf = vec![0u8; 1 << 20];
    let mut have = 0;
    let mut out = Vec::with_capacity(1 << 16);
    // The server's SETTINGS (all defaults) go first.
    frame(&mut out, SETTINGS, 0, 0, &[]);
    s.write_all(&out)?;
    out.clear();
    let mut started = false;
    loop {
        let n = s.read(&mut buf[have..])?;
        if n == 0 {
            return Ok(());
        }
        have += n;
        let mut at = 0;
        if !started {
            if have < PREFACE.len() {
                continue;
            }
            at = PREFACE.len();
            started = true;
        }
        // Data received is handed back at once: to the connection's window in one update
        // per read, and to its stream's while the stream still sends (a message larger
        // than a stream's first window needs it).
        let mut received = 0u32;
        while have - at >= 9 {
            let head = &buf[at..at + 9];
            let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
            if have - at < 9 + len {
                break;
            }
            let (kind, flags) = (head[3], head[4]);
            let stream = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff;
            let payload = &buf[at + 9..at + 9 + len];
            match kind {
                SETTINGS if flags & ACK == 0 => frame(&mut out, SETTINGS, ACK, 0, &[]),
                PING if flags & ACK == 0 => frame(&mut out, PING, ACK, 0, payload),
                GOAWAY => return Ok(()),
                DATA => {
                    received += len as u32;
                    if len > 0 && flags & END_STREAM == 0 {
                        frame(
                            &mut out,
                            WINDOW_UPDATE,
                            0,
                            stream,
                            &(len as u32).to_be_bytes(),
                        );
                    }
                }
                _ => {}
            }
            if (kind == DATA || kind == HEADERS) && flags & END_STREAM != 0 {
                frame(&mut out, HEADERS, END_HEADERS, stream, REPLY_HEADERS);
                frame(&mut out, DATA, 0, stream, MESSAGE);
                frame(
                    &mut out,
                    HEADERS,
                    END_HEADERS | END_STREAM,
                    stream,
                    TRAILERS,
                );
            }
            at += 9 + len;
        }
        if received > 0 {
            frame(&mut out, WINDOW_UPDATE, 0, 0, &received.to_be_bytes());
        }
        if !out.is_empty() {
            s.write_all(&out)?;
            out.clear();
        }
        buf.copy_within(at..have, 0);
        have -= at;
        if have == buf.len() {
            return Ok(()); // a frame larger than the buffer: not a client we measure
        }
    }
}

fn main() -> std::io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:5300".into());
    let listener = TcpListener::bind(&addr)?;
    eprintln!("grpc_floor listening on {addr}");
    for s in listener.incoming() {
        let s = s?;
        std::thread::spawn(move || serve(s));
    }
    Ok(())
}
