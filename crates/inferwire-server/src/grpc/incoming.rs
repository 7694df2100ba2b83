//! gRPC connections: accepted here (a TLS handshake, or the wait for HTTP/2's preface, on
//! each connection's own task), then
//! handed to tonic as they are ready. Each holds one of the server's connection permits
//! (`max_connections`, shared with REST) until it closes; with none left, the connection
//! just accepted waits for one and further ones queue in the kernel's backlog. The loop
//! ends with the server.
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot, watch, OwnedSemaphorePermit, Semaphore};
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::server::{Connected, TcpConnectInfo};

use crate::read_ahead::ReadAhead;
use crate::write_stall::WriteStall;

/// A connection as tonic takes it, with its permit.
pub struct Conn {
    io: Io,
    _permit: OwnedSemaphorePermit,
}

/// A reply its client takes none of ends with its connection (`write_stall`).
enum Io {
    Plain(WriteStall<ReadAhead<TcpStream>>),
    Tls(Box<WriteStall<TlsStream<TcpStream>>>),
}

impl Connected for Conn {
    type ConnectInfo = TcpConnectInfo;

    fn connect_info(&self) -> TcpConnectInfo {
        match &self.io {
            Io::Plain(s) => s.get_ref().get_ref().connect_info(),
            Io::Tls(s) => s.get_ref().get_ref().0.connect_info(),
        }
    }
}

macro_rules! each {
    ($self:ident, $s:ident => $e:expr) => {
        match &mut $self.io {
            Io::Plain($s) => $e,
            Io::Tls($s) => $e,
        }
    };
}

impl AsyncRead for Conn {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        each!(self, s => Pin::new(s).poll_read(cx, buf))
    }
}

impl AsyncWrite for Conn {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        each!(self, s => Pin::new(s).poll_write(cx, buf))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        each!(self, s => Pin::new(s).poll_flush(cx))
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        each!(self, s => Pin::new(s).poll_shutdown(cx))
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        each!(self, s => Pin::new(s).poll_write_vectored(cx, bufs))
    }

    fn is_write_vectored(&self) -> bool {
        match &self.io {
            Io::Plain(s) => s.is_write_vectored(),
            Io::Tls(s) => s.is_write_vectored(),
        }
    }
}

/// The stream of ready connections from `listener`. At `stop`, the connections already
/// in the listen queue are accepted too (without waiting for more), and `drained`
/// fires once tonic has taken every one of them from the stream: tonic's own shutdown
/// must wait for that, or it drops them unserved.
pub fn incoming(
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
    stall: Duration,
    head_within: Duration,
    permits: Arc<Semaphore>,
    mut stop: watch::Receiver<bool>,
    drained: oneshot::Sender<()>,
) -> ReceiverStream<io::Result<Conn>> {
    let (tx, rx) = mpsc::channel(BUFFERED);
    tokio::spawn(async move {
        // Each hand-over task holds a clone until its connection is with tonic (or
        // refused): the drain waits for them all, else a connection still in its TLS
        // handshake or awaiting its preface would be dropped, reset, at shutdown.
        let (alive, mut handing) = mpsc::channel::<()>(1);
        let hand = |stream, permit| {
            hand_over(
                stream,
                permit,
                tls.as_ref(),
                (stall, head_within),
                (&tx, &alive),
            )
        };
        loop {
            let accepted = tokio::select! {
                a = async {
                    let accepted = listener.accept().await;
                    (permits.clone().acquire_owned().await, accepted)
                } => a,
                _ = stop.changed() => break,
            };
            let (Ok(permit), Ok((stream, _))) = accepted else {
                continue;
            };
            if !hand(stream, permit) {
                break;
            }
        }
        for (stream, permit) in crate::drain::queued(listener, &permits).await {
            if !hand(stream, permit) {
                break;
            }
        }
        drop(alive);
        while handing.recv().await.is_some() {}
        // Every slot free again: tonic has taken all that was sent.
        let _ = tx.reserve_many(BUFFERED).await;
        let _ = drained.send(());
        // The stream must not end (dropping `tx` would end it): tonic takes an ended
        // stream of connections as its cue to shut down at once, without the shutdown
        // future that first tells health Watch streams NOT_SERVING.
        std::future::pending::<()>().await;
        drop(tx);
    });
    ReceiverStream::new(rx)
}

const BUFFERED: usize = 64;

/// Passes a connection to tonic (after its TLS handshake, on its own task); false once
/// tonic takes no more.
fn hand_over(
    stream: TcpStream,
    permit: OwnedSemaphorePermit,
    tls: Option<&TlsAcceptor>,
    (stall, head_within): (Duration, Duration),
    (tx, alive): (&mpsc::Sender<io::Result<Conn>>, &mpsc::Sender<()>),
) -> bool {
    let alive = alive.clone();
    let _ = stream.set_nodelay(true);
    let Some(acceptor) = tls.cloned() else {
        // Handed to tonic once its preface has come (`first_bytes`), on its own task.
        let to_tonic = tx.clone();
        tokio::spawn(async move {
            if crate::first_bytes::arrived(&stream, head_within).await {
                let conn = Conn {
                    io: Io::Plain(WriteStall::new(ReadAhead::new(stream), stall)),
                    _permit: permit,
                };
                let _ = to_tonic.send(Ok(conn)).await;
            }
            drop(alive);
        });
        return !tx.is_closed();
    };
    let to_tonic = tx.clone();
    tokio::spawn(async move {
        let handshake = tokio::time::timeout(crate::tls::HANDSHAKE, acceptor.accept(stream));
        if let Ok(Ok(tls)) = handshake.await {
            let conn = Conn {
                io: Io::Tls(Box::new(WriteStall::new(tls, stall))),
                _permit: permit,
            };
            let _ = to_tonic.send(Ok(conn)).await;
        }
        drop(alive);
    });
    !tx.is_closed()
}
