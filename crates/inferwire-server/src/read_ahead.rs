//! A read buffer in front of a connection that grows with the messages it carries.
//!
//! HTTP/2 (h2, under tonic and hyper) reads the socket in pieces of about 8 KiB, so an
//! 800 KB tensor costs a hundred `recvfrom` calls, each a few microseconds on a VM: more
//! than decoding the tensor. `ReadAhead` reads as much as the socket holds into its own
//! buffer and serves h2's small reads from memory. The buffer starts at 16 KiB, doubles
//! whenever a read fills it (up to 1 MiB) and stays that size for the connection: only
//! connections that carry large messages pay for a large buffer. Reads larger than the
//! buffer (HTTP/1.1's, which grows its own) go straight to the socket.
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

const FIRST: usize = 16 * 1024;
const MAX: usize = 1024 * 1024;

pub struct ReadAhead<T> {
    io: T,
    buf: Vec<u8>,
    pos: usize,
    end: usize,
    /// The last read filled the buffer: double it before the next one.
    grow: bool,
}

impl<T> ReadAhead<T> {
    pub fn new(io: T) -> Self {
        Self {
            io,
            buf: Vec::new(),
            pos: 0,
            end: 0,
            grow: false,
        }
    }

    pub fn get_ref(&self) -> &T {
        &self.io
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for ReadAhead<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        dst: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.pos == this.end {
            if dst.remaining() >= this.buf.len().max(FIRST) {
                return Pin::new(&mut this.io).poll_read(cx, dst);
            }
            if this.buf.is_empty() || this.grow {
                let size = (this.buf.len() * 2).clamp(FIRST, MAX);
                this.buf = vec![0; size];
                this.grow = false;
            }
            let mut rb = ReadBuf::new(&mut this.buf);
            ready!(Pin::new(&mut this.io).poll_read(cx, &mut rb))?;
            let n = rb.filled().len();
            this.grow = n == this.buf.len() && n < MAX;
            this.pos = 0;
            this.end = n;
        }
        let n = dst.remaining().min(this.end - this.pos);
        dst.put_slice(&this.buf[this.pos..this.pos + n]);
        this.pos += n;
        Poll::Ready(Ok(()))
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for ReadAhead<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn small_reads_see_every_byte_in_order_and_the_buffer_grows() {
        let (mut tx, rx) = tokio::io::duplex(4 * MAX);
        let data: Vec<u8> = (0..3 * MAX).map(|i| (i % 251) as u8).collect();
        let expect = data.clone();
        let writer = tokio::spawn(async move {
            tx.write_all(&data).await.unwrap();
        });
        let mut r = ReadAhead::new(rx);
        let mut got = Vec::new();
        let mut chunk = [0u8; 8192];
        loop {
            let n = r.read(&mut chunk).await.unwrap();
            if n == 0 {
                break;
            }
            got.extend_from_slice(&chunk[..n]);
        }
        writer.await.unwrap();
        assert_eq!(got, expect);
        assert!(
            r.buf.len() > FIRST,
            "a connection carrying megabytes grows its buffer"
        );
        assert!(r.buf.len() <= MAX);
    }

    #[tokio::test]
    async fn large_reads_bypass_the_buffer() {
        let (mut tx, rx) = tokio::io::duplex(1 << 20);
        tx.write_all(&[7u8; 100_000]).await.unwrap();
        drop(tx);
        let mut r = ReadAhead::new(rx);
        let mut all = Vec::new();
        r.read_to_end(&mut all).await.unwrap();
        assert_eq!(all, vec![7u8; 100_000]);
    }
}
