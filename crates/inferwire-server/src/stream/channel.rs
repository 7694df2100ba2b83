//! A stream's pieces on their way from the model to the transport: a small bounded
//! queue with one producer and one consumer. A producer on a thread of its own blocks
//! while the queue is full (`send_blocking`); one on an event loop asks instead to be
//! called back when there is room (`when_room`). Either learns that the reader has gone
//! (the consumer was dropped) at its next piece, and stops.
use std::collections::VecDeque;
use std::future::poll_fn;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use inferwire_codec::protocol::v2::InferOutput;

use crate::error::ModelError;

/// One piece the model yielded, or the error that ended its stream.
pub type Piece = Result<Vec<InferOutput>, ModelError>;

/// Pieces a stream holds between the model and the transport. Small, because the
/// transport's own buffers (the socket's, hyper's, h2's window) come after it: a slow
/// reader pauses the model after a handful of pieces, whatever their size.
pub const CAPACITY: usize = 4;

struct State {
    queue: VecDeque<Piece>,
    /// The producer has finished (the model's iterator ended, or it gave up).
    done: bool,
    /// The consumer was dropped: the reader went away or the stream was cut short.
    closed: bool,
    /// The producer gave up on a reader that took nothing (`Sent::Stalled`): the stream
    /// was cut short, not finished.
    stalled: bool,
    reader: Option<Waker>,
    /// An event-loop producer waiting for room.
    on_room: Option<Box<dyn FnOnce() + Send>>,
    /// What ends the stream's accounting (`PieceStream`'s place in `streams_open`) when
    /// the producer gives up on a stalled reader: a transport that no longer polls its
    /// body (its client reads nothing) may hold the consumer for as long as the
    /// connection lasts.
    on_stall: Option<Box<dyn FnOnce() + Send>>,
}

struct Shared {
    state: Mutex<State>,
    room: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The model's end.
pub struct Sender {
    shared: Arc<Shared>,
    /// The stream's place among those open (`OpenStreams`), held while the model produces:
    /// a reader that stops reading holds its connection, not a place for the model.
    _open: Option<tokio::sync::OwnedSemaphorePermit>,
    /// How long the producer waits for a reader that takes nothing before it gives up
    /// (the stream's idle limit).
    pub patience: Duration,
}

/// The transport's end.
pub struct Receiver {
    shared: Arc<Shared>,
}

pub fn channel() -> (Sender, Receiver) {
    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            queue: VecDeque::with_capacity(CAPACITY),
            done: false,
            closed: false,
            stalled: false,
            reader: None,
            on_room: None,
            on_stall: None,
        }),
        room: Condvar::new(),
    });
    (
        Sender {
            shared: shared.clone(),
            _open: None,
            patience: Duration::from_secs(60),
        },
        Receiver { shared },
    )
}

/// What a send came to.
#[derive(Debug, PartialEq, Eq)]
pub enum Sent {
    Queued,
    /// The queue stayed full for the whole wait: the reader is not reading.
    Stalled,
    /// The reader has gone; the piece was dropped.
    Closed,
}

impl Sender {
    /// Holds the stream's place among those open until the producer finishes.
    pub fn hold(&mut self, open: tokio::sync::OwnedSemaphorePermit) {
        self._open = Some(open);
    }

    /// Queues `piece`, waiting up to `patience` for room.
    pub fn send_blocking(&self, piece: Piece, patience: Duration) -> Sent {
        let until = Instant::now() + patience;
        let mut state = self.shared.lock();
        loop {
            if state.closed {
                return Sent::Closed;
            }
            if state.queue.len() < CAPACITY {
                break;
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                drop(state);
                self.give_up();
                return Sent::Stalled;
            }
            state = self
                .shared
                .room
                .wait_timeout(state, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        state.queue.push_back(piece);
        let reader = state.reader.take();
        drop(state);
        if let Some(w) = reader {
            w.wake();
        }
        Sent::Queued
    }

    /// Queues `piece` if there is room; else gives it back.
    pub fn try_send(&self, piece: Piece) -> Result<(), (Piece, bool)> {
        let mut state = self.shared.lock();
        if state.closed {
            return Err((piece, true));
        }
        if state.queue.len() >= CAPACITY {
            return Err((piece, false));
        }
        state.queue.push_back(piece);
        let reader = state.reader.take();
        drop(state);
        if let Some(w) = reader {
            w.wake();
        }
        Ok(())
    }

    /// Whether a piece sent now would be queued at once (or dropped: the reader has gone).
    pub fn has_room(&self) -> bool {
        let state = self.shared.lock();
        state.closed || state.queue.len() < CAPACITY
    }

    pub fn is_closed(&self) -> bool {
        self.shared.lock().closed
    }

    /// Gives up on a reader that took nothing for the stream's idle limit: what is
    /// queued is let go and the stream stops counting as open now, whether or not its
    /// transport ever polls it again (the reader then gets the limit's error).
    pub fn give_up(&self) {
        let mut state = self.shared.lock();
        if state.closed {
            return;
        }
        state.stalled = true;
        let queued = std::mem::take(&mut state.queue);
        let on_stall = state.on_stall.take();
        let reader = state.reader.take();
        drop(state);
        drop(queued);
        if let Some(f) = on_stall {
            f();
        }
        if let Some(w) = reader {
            w.wake();
        }
    }

    /// Calls `wake` once the queue has room or the reader has gone: at once if that is
    /// already so, else from the consumer's thread when it takes a piece or is dropped.
    pub fn when_room(&self, wake: Box<dyn FnOnce() + Send>) {
        let mut state = self.shared.lock();
        if state.closed || state.queue.len() < CAPACITY {
            drop(state);
            wake();
            return;
        }
        state.on_room = Some(wake);
    }
}

impl Drop for Sender {
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        state.done = true;
        let reader = state.reader.take();
        drop(state);
        if let Some(w) = reader {
            w.wake();
        }
    }
}

impl Receiver {
    /// Whether the producer gave up on this reader for taking nothing.
    pub fn stalled(&self) -> bool {
        self.shared.lock().stalled
    }

    /// Sets what runs if the producer gives up on this reader.
    pub fn on_stall(&self, f: Box<dyn FnOnce() + Send>) {
        self.shared.lock().on_stall = Some(f);
    }

    /// Takes back what `on_stall` set: true if it was still there (it has not run, and
    /// now will not).
    pub fn forget_stall(&self) -> bool {
        self.shared.lock().on_stall.take().is_some()
    }

    /// The next piece; None once the producer has finished and every piece is taken.
    pub async fn recv(&mut self) -> Option<Piece> {
        poll_fn(|cx| self.poll_recv(cx)).await
    }

    pub fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<Piece>> {
        let mut state = self.shared.lock();
        if state.stalled {
            return Poll::Ready(None);
        }
        if let Some(piece) = state.queue.pop_front() {
            let on_room = state.on_room.take();
            drop(state);
            self.shared.room.notify_one();
            if let Some(wake) = on_room {
                wake();
            }
            return Poll::Ready(Some(piece));
        }
        if state.done {
            return Poll::Ready(None);
        }
        if !state
            .reader
            .as_ref()
            .is_some_and(|w| w.will_wake(cx.waker()))
        {
            state.reader = Some(cx.waker().clone());
        }
        Poll::Pending
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        state.closed = true;
        // Pieces still queued are dropped here, not when the producer notices.
        let queued = std::mem::take(&mut state.queue);
        let on_room = state.on_room.take();
        drop(state);
        drop(queued);
        self.shared.room.notify_all();
        if let Some(wake) = on_room {
            wake();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn piece(n: usize) -> Piece {
        Ok(vec![
            InferOutput {
                name: n.to_string(),
                tensor: inferwire_codec::tensor::Tensor::new(
                    vec![1],
                    inferwire_codec::tensor::TensorData::I64(vec![n as i64]),
                )
                .unwrap(),
                parameters: Default::default(),
            };
            1
        ])
    }

    fn name(p: Piece) -> String {
        p.unwrap()[0].name.clone()
    }

    #[tokio::test]
    async fn pieces_arrive_in_order_then_the_end() {
        let (tx, mut rx) = channel();
        let producer = std::thread::spawn(move || {
            for i in 0..20 {
                assert_eq!(
                    tx.send_blocking(piece(i), Duration::from_secs(5)),
                    Sent::Queued
                );
            }
        });
        for i in 0..20 {
            assert_eq!(name(rx.recv().await.unwrap()), i.to_string());
        }
        assert!(rx.recv().await.is_none());
        producer.join().unwrap();
    }

    #[test]
    fn a_full_queue_stalls_a_blocking_producer_and_a_gone_reader_closes_it() {
        let (tx, rx) = channel();
        for i in 0..CAPACITY {
            assert!(tx.try_send(piece(i)).is_ok());
        }
        assert!(!tx.has_room());
        assert!(matches!(tx.try_send(piece(9)), Err((_, false))));
        let woken = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = woken.clone();
        tx.when_room(Box::new(move || {
            flag.store(true, std::sync::atomic::Ordering::SeqCst)
        }));
        assert!(!woken.load(std::sync::atomic::Ordering::SeqCst));
        drop(rx);
        assert!(woken.load(std::sync::atomic::Ordering::SeqCst));
        assert!(tx.is_closed());
        assert_eq!(
            tx.send_blocking(piece(9), Duration::from_secs(5)),
            Sent::Closed
        );
    }

    #[tokio::test]
    async fn a_stalled_reader_is_given_up_its_pieces_let_go_and_on_stall_run_once() {
        let (tx, mut rx) = channel();
        let ends = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let seen = ends.clone();
        rx.on_stall(Box::new(move || {
            seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }));
        for i in 0..CAPACITY {
            assert!(tx.try_send(piece(i)).is_ok());
        }
        assert!(!rx.stalled());
        assert_eq!(
            tx.send_blocking(piece(9), Duration::from_millis(20)),
            Sent::Stalled
        );
        // Given up at once, before the reader is polled or dropped.
        assert!(rx.stalled());
        assert!(tx.has_room());
        assert_eq!(ends.load(std::sync::atomic::Ordering::SeqCst), 1);
        assert!(!rx.forget_stall());
        assert!(rx.recv().await.is_none());
        // Once only.
        tx.give_up();
        assert_eq!(ends.load(std::sync::atomic::Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn taking_a_piece_wakes_an_event_loop_producer() {
        let (tx, mut rx) = channel();
        for i in 0..CAPACITY {
            assert!(tx.try_send(piece(i)).is_ok());
        }
        let woken = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = woken.clone();
        tx.when_room(Box::new(move || {
            flag.store(true, std::sync::atomic::Ordering::SeqCst)
        }));
        assert_eq!(name(rx.recv().await.unwrap()), "0");
        assert!(woken.load(std::sync::atomic::Ordering::SeqCst));
        assert!(tx.has_room());
    }
}
