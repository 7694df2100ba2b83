//! A connection whose reader takes nothing is closed: a write that stays blocked (the
//! client's receive window and the socket's buffers full) for longer than the limit
//! fails with `TimedOut`, and hyper or h2 then drop the connection with everything it
//! holds: the reply being written, a stream's buffered pieces, its place in
//! `inferwire_streams_open`. Without it, a client that sends a request and never reads
//! keeps the reply's buffers for as long as it keeps the socket open (issue 41).
//!
//! Only time spent blocked counts: a slow reader that takes a little now and then resets
//! the clock with each write that goes through.
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

pub struct WriteStall<T> {
    io: T,
    limit: Duration,
    /// When the write blocked since is given up, while it is blocked.
    blocked: Option<Pin<Box<Sleep>>>,
}

impl<T> WriteStall<T> {
    pub fn new(io: T, limit: Duration) -> Self {
        Self {
            io,
            limit,
            blocked: None,
        }
    }

    pub fn get_ref(&self) -> &T {
        &self.io
    }

    /// What a write (or flush, `wrote: false`) came to, counting the time it has been
    /// blocked. Only a write that goes through starts the clock again.
    fn watch<R>(
        &mut self,
        cx: &mut Context<'_>,
        polled: Poll<io::Result<R>>,
        wrote: bool,
    ) -> Poll<io::Result<R>> {
        if polled.is_ready() {
            if wrote {
                self.blocked = None;
            }
            return polled;
        }
        let limit = self.limit;
        let timer = self
            .blocked
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        if timer.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        self.blocked = None;
        Poll::Ready(Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "the client took none of the reply for {} s (see --stream-idle-timeout)",
                limit.as_secs_f64()
            ),
        )))
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for WriteStall<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for WriteStall<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.io).poll_write(cx, buf);
        this.watch(cx, polled, true)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.io).poll_write_vectored(cx, bufs);
        this.watch(cx, polled, true)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.io).poll_flush(cx);
        this.watch(cx, polled, false)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.io).poll_shutdown(cx);
        this.watch(cx, polled, false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    #[tokio::test]
    async fn a_write_blocked_past_the_limit_fails_and_one_that_goes_through_does_not() {
        // A pipe of 64 bytes whose far end reads nothing.
        let (near, mut far) = tokio::io::duplex(64);
        let mut io = WriteStall::new(near, Duration::from_millis(100));
        io.write_all(&[0; 64]).await.unwrap();
        let started = std::time::Instant::now();
        let e = io.write_all(&[0; 64]).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        assert!(started.elapsed() >= Duration::from_millis(100));
        // A reader that takes some in time: the clock starts again.
        let mut io = WriteStall::new(io.io, Duration::from_millis(300));
        let reader = tokio::spawn(async move {
            let mut buf = [0; 64];
            for _ in 0..3 {
                tokio::time::sleep(Duration::from_millis(100)).await;
                tokio::io::AsyncReadExt::read_exact(&mut far, &mut buf)
                    .await
                    .unwrap();
            }
            far
        });
        io.write_all(&[0; 128]).await.unwrap();
        drop(reader.await.unwrap());
    }
}
