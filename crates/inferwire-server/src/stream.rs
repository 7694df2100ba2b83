//! Streamed replies: a model's pieces, from its iterator to the transport that sends
//! them (REST server-sent events, gRPC `ModelStreamInfer`), bounded per stream (pieces,
//! bytes, idle time, total time) and per worker (streams open at once), and counted.
//!
//! The runner starts the model's stream and drives it (`runner::Runner::stream`); a
//! transport reads it through `PieceStream`, which applies the limits and records the
//! metrics. Dropping a `PieceStream` (the client went away) closes the channel, and the
//! model stops at its next piece.
mod channel;
pub mod handoff;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use inferwire_codec::protocol::v2::InferOutput;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

pub use channel::{channel, Piece, Receiver, Sender, Sent};

use crate::error::{Kind, ServeError};
use crate::metrics::{Metrics, Protocol, StreamEnd};

/// The bounds every stream is held to.
#[derive(Debug, Clone)]
pub struct StreamLimits {
    /// Streams open at once in one worker; more are refused (503 / RESOURCE_EXHAUSTED).
    pub max_open: usize,
    /// Pieces one stream may send.
    pub max_pieces: u64,
    /// Encoded bytes one stream may send.
    pub max_bytes: u64,
    /// The longest a stream may go without a piece from the model, or with the reader
    /// taking none.
    pub idle: Duration,
    /// The longest a stream may last.
    pub total: Duration,
}

impl Default for StreamLimits {
    fn default() -> Self {
        Self {
            max_open: 1024,
            max_pieces: 65_536,
            max_bytes: 256 * 1024 * 1024,
            idle: Duration::from_secs(60),
            total: Duration::from_secs(3600),
        }
    }
}

/// The streams open in one worker.
pub struct OpenStreams {
    permits: Arc<Semaphore>,
    max: usize,
}

impl OpenStreams {
    pub fn new(max: usize) -> Self {
        Self {
            permits: Arc::new(Semaphore::new(max.clamp(1, Semaphore::MAX_PERMITS))),
            max,
        }
    }

    /// A place for one more stream, or 503 / RESOURCE_EXHAUSTED at once.
    pub fn admit(&self) -> Result<OwnedSemaphorePermit, ServeError> {
        self.permits.clone().try_acquire_owned().map_err(|_| {
            ServeError::new(
                Kind::Overloaded,
                format!(
                    "{} streams are already open in this worker; retry later (see \
                     --stream-max-open)",
                    self.max
                ),
            )
        })
    }
}

/// A model's stream as a transport reads it.
pub struct PieceStream {
    rx: Receiver,
    limits: StreamLimits,
    metrics: Metrics,
    model: usize,
    protocol: Protocol,
    started: Instant,
    pieces: u64,
    bytes: u64,
    /// How the stream ended, once it has; a stream dropped before that was cancelled.
    end: Option<StreamEnd>,
    /// The outputs the request asked for (empty: all).
    wanted: Vec<String>,
    /// When waiting for the next piece ends (idle or total limit), while waiting.
    timer: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl PieceStream {
    pub(crate) fn new(
        rx: Receiver,
        limits: StreamLimits,
        metrics: Metrics,
        model: usize,
        protocol: Protocol,
        wanted: Vec<String>,
    ) -> Self {
        metrics.stream_opened(1);
        // A producer that gives up on a reader taking nothing ends the stream's count
        // then, not when its transport lets go of it (see `Drop`).
        rx.on_stall(Box::new(move || {
            metrics.stream_closed(model, protocol, StreamEnd::Limited)
        }));
        Self {
            rx,
            limits,
            metrics,
            model,
            protocol,
            started: Instant::now(),
            pieces: 0,
            bytes: 0,
            end: None,
            wanted,
            timer: None,
        }
    }

    /// The next piece, an error that ends the stream (the model's, or a limit's), or
    /// None at its end.
    pub async fn next(&mut self) -> Option<Result<Vec<InferOutput>, ServeError>> {
        std::future::poll_fn(|cx| self.poll_next(cx)).await
    }

    pub fn poll_next(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Vec<InferOutput>, ServeError>>> {
        if self.end.is_some() {
            return Poll::Ready(None);
        }
        let piece = match self.rx.poll_recv(cx) {
            Poll::Ready(None) if self.rx.stalled() => {
                // Counted as ended when the producer gave up (`on_stall`).
                self.end = Some(StreamEnd::Limited);
                return Poll::Ready(Some(Err(ServeError::new(
                    Kind::Deadline,
                    format!(
                        "the client took nothing for {} s (see --stream-idle-timeout)",
                        self.limits.idle.as_secs_f64()
                    ),
                ))));
            }
            Poll::Ready(None) => {
                self.end = Some(StreamEnd::Completed);
                return Poll::Ready(None);
            }
            Poll::Ready(Some(piece)) => piece,
            Poll::Pending => {
                let limits = &self.limits;
                let until = (self.started + limits.total).min(Instant::now() + limits.idle);
                let timer = self
                    .timer
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(until.into())));
                if timer.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                self.timer = None;
                return Poll::Ready(Some(Err(self.timed_out())));
            }
        };
        self.timer = None;
        Poll::Ready(Some(self.accept(piece)))
    }

    fn accept(&mut self, piece: Piece) -> Result<Vec<InferOutput>, ServeError> {
        let outputs = match piece.map_err(ServeError::from) {
            Ok(outputs) => Ok(inferwire_codec::protocol::v2::pick_outputs(
                &self.wanted,
                outputs,
            )?),
            Err(e) => Err(e),
        };
        let outputs = match outputs {
            Ok(o) => o,
            Err(e) => {
                self.end = Some(StreamEnd::Failed);
                return Err(e);
            }
        };
        if self.pieces >= self.limits.max_pieces {
            return Err(self.stop(
                Kind::TooLarge,
                format!(
                    "the stream reached its limit of {} pieces (see --stream-max-pieces)",
                    self.limits.max_pieces
                ),
            ));
        }
        if self.pieces == 0 {
            self.metrics
                .first_piece(self.model, self.protocol, self.started.elapsed());
        }
        self.pieces += 1;
        Ok(outputs)
    }

    #[cold]
    fn timed_out(&mut self) -> ServeError {
        if self.started.elapsed() >= self.limits.total {
            self.stop(
                Kind::Deadline,
                format!(
                    "the stream ran for its limit of {} s (see --stream-timeout)",
                    self.limits.total.as_secs_f64()
                ),
            )
        } else {
            self.stop(
                Kind::Deadline,
                format!(
                    "the model sent no piece for {} s (see --stream-idle-timeout)",
                    self.limits.idle.as_secs_f64()
                ),
            )
        }
    }

    /// Counts `n` encoded bytes of a piece about to be sent: an error once the stream's
    /// byte limit is passed (the piece is then not sent).
    pub fn sending(&mut self, n: usize) -> Result<(), ServeError> {
        self.bytes += n as u64;
        if self.bytes > self.limits.max_bytes {
            self.pieces -= 1;
            return Err(self.stop(
                Kind::TooLarge,
                format!(
                    "the stream reached its limit of {} bytes (see --stream-max-bytes)",
                    self.limits.max_bytes
                ),
            ));
        }
        self.metrics.piece_sent(self.model, self.protocol, n);
        Ok(())
    }

    /// Pieces handed out so far.
    pub fn pieces(&self) -> u64 {
        self.pieces
    }

    #[cold]
    fn stop(&mut self, kind: Kind, why: String) -> ServeError {
        self.end = Some(StreamEnd::Limited);
        ServeError::new(kind, why)
    }
}

impl Drop for PieceStream {
    fn drop(&mut self) {
        // Counted already if its producer gave up on it.
        if self.rx.forget_stall() {
            let end = self.end.unwrap_or(StreamEnd::Cancelled);
            self.metrics.stream_closed(self.model, self.protocol, end);
        }
    }
}
