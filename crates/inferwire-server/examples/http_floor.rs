//! The floor under any HTTP server on this machine: one thread, blocking sockets, no
//! parsing beyond finding the end of the body, the same small reply every time. Its CPU
//! time per request is what the kernel alone costs (a `read` and a `write` per request on
//! a keep-alive connection), the figure docs/benchmarks.md compares inferwire's with.
//!
//! A second argument, in milliseconds, makes every request wait that long before its
//! reply (a sleeping "model"), the floor under a slow model's requests.
//!
//!     cargo run --release -p inferwire-server --example http_floor -- 127.0.0.1:9300 [5]
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

const REPLY: &[u8] =
    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 3\r\n\r\n[1]";

fn serve(mut s: TcpStream, delay: Duration) -> std::io::Result<()> {
    s.set_nodelay(true)?;
    let mut buf = vec![0u8; 1 << 20];
    let mut have = 0;
    loop {
        // A request is complete once its headers and `content-length` bytes are in.
        let complete = buf[..have]
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .map(|end| (end + 4, content_length(&buf[..end])))
            .filter(|&(head, len)| have >= head + len);
        if let Some((head, len)) = complete {
            if !delay.is_zero() {
                std::thread::sleep(delay);
            }
            s.write_all(REPLY)?;
            buf.copy_within(head + len..have, 0);
            have -= head + len;
            continue;
        }
        let n = s.read(&mut buf[have..])?;
        if n == 0 {
            return Ok(());
        }
        have += n;
    }
}

fn content_length(head: &[u8]) -> usize {
    String::from_utf8_lossy(head)
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .unwrap_or(0)
}

fn main() -> std::io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:9300".into());
    let delay = std::env::args().nth(2).map_or(0.0, |ms| {
        ms.parse::<f64>().expect("a delay in milliseconds")
    });
    let delay = Duration::from_secs_f64(delay / 1e3);
    let listener = TcpListener::bind(&addr)?;
    eprintln!("http_floor listening on {addr}");
    for s in listener.incoming() {
        let s = s?;
        std::thread::spawn(move || serve(s, delay));
    }
    Ok(())
}
