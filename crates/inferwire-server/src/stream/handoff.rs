//! Pieces sent during a model call that answers as a whole: a TorchServe handler answers
//! its batch in one call and may send a request intermediate responses on the way
//! (`send_intermediate_predict_response`). The transport opens a `Handoff` for its
//! request (its token travels in the request's parameters) and waits for the call's reply
//! and the handoff together (`race`). The first time the model sends the request a piece
//! it takes the stream's sending end (`take`), and the reply becomes a stream: the pieces
//! as they are sent, then the reply as the last piece, through the same bounded channel,
//! limits and metrics as a streaming model's (`PieceStream`). A request whose model sends
//! nothing costs a map entry and is answered as before.
//!
//! A call running inline on an I/O thread (the runner's fast path) is not read until it
//! returns, so `take` refuses it: the model then keeps its pieces for the whole reply.
use std::collections::hash_map::{Entry, HashMap, RandomState};
use std::future::{poll_fn, Future};
use std::hash::BuildHasher;
use std::pin::pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{LazyLock, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use super::channel::{channel, Receiver, Sender};

/// The request parameter that carries the request's `Handoff` token to the model.
pub const TOKEN: &str = "torchserve_stream";

struct Slot {
    /// The producer's patience with a reader that takes nothing (the idle limit).
    patience: Duration,
    /// The receiving end, from the first `take` until the transport collects it.
    rx: Option<Receiver>,
    taken: bool,
    /// The transport waiting in `race`.
    waker: Option<Waker>,
}

static OPEN: LazyLock<Mutex<HashMap<u64, Slot>>> = LazyLock::new(Default::default);
static NEXT: AtomicU64 = AtomicU64::new(1);
/// Tokens are a keyed hash of a counter: a V2 client, which names its own request
/// parameters, cannot guess another request's and take its stream.
static KEY: LazyLock<RandomState> = LazyLock::new(RandomState::new);

fn open() -> MutexGuard<'static, HashMap<u64, Slot>> {
    OPEN.lock().unwrap_or_else(|e| e.into_inner())
}

/// One request's place for the pieces of the call that answers it; closed when dropped
/// (a sender the model holds then finds its reader gone).
pub struct Handoff {
    token: u64,
}

/// How `race` ended.
pub enum Raced<T> {
    /// The call answered and sent no piece.
    Done(T),
    /// The model sent a piece: the rest comes through the stream, its reply last.
    Started(Receiver),
}

impl Handoff {
    /// A new handoff; `patience`: how long the model waits for a reader that takes
    /// nothing before it gives up (the stream's idle limit).
    pub fn open(patience: Duration) -> Self {
        let mut open = open();
        loop {
            let token = KEY.hash_one(NEXT.fetch_add(1, Ordering::Relaxed));
            if let Entry::Vacant(place) = open.entry(token) {
                place.insert(Slot {
                    patience,
                    rx: None,
                    taken: false,
                    waker: None,
                });
                return Self { token };
            }
        }
    }

    /// What the model is given to find this handoff (`take`).
    pub fn token(&self) -> u64 {
        self.token
    }

    /// The call's answer, or the stream once the model has sent a piece (pieces sent
    /// before the answer came win over it: the model sends its reply into the stream).
    pub async fn race<T>(&self, call: impl Future<Output = T>) -> Raced<T> {
        let mut call = pin!(call);
        poll_fn(|cx| {
            if let Some(rx) = self.started(Some(cx)) {
                return Poll::Ready(Raced::Started(rx));
            }
            match call.as_mut().poll(cx) {
                Poll::Pending => Poll::Pending,
                Poll::Ready(out) => Poll::Ready(match self.started(None) {
                    Some(rx) => Raced::Started(rx),
                    None => Raced::Done(out),
                }),
            }
        })
        .await
    }

    /// The receiving end once the model has taken the sender; else None, and `cx` is
    /// woken when it does.
    fn started(&self, cx: Option<&mut Context<'_>>) -> Option<Receiver> {
        let mut open = open();
        let entry = open.get_mut(&self.token)?;
        if let Some(rx) = entry.rx.take() {
            return Some(rx);
        }
        if let Some(cx) = cx {
            if !entry
                .waker
                .as_ref()
                .is_some_and(|w| w.will_wake(cx.waker()))
            {
                entry.waker = Some(cx.waker().clone());
            }
        }
        None
    }
}

impl Drop for Handoff {
    fn drop(&mut self) {
        let entry = open().remove(&self.token);
        // The receiver (if never collected) goes outside the lock.
        drop(entry);
    }
}

/// The sending end of request `token`'s stream, the first time it is asked for; None
/// after that, when the request's transport has gone (or never opened one), and on an I/O
/// thread, whose transport cannot read while the call runs.
pub fn take(token: u64) -> Option<Sender> {
    if tokio::runtime::Handle::try_current().is_ok() {
        return None;
    }
    let mut open = open();
    let entry = open.get_mut(&token)?;
    if entry.taken {
        return None;
    }
    let (mut tx, rx) = channel();
    tx.patience = entry.patience;
    entry.taken = true;
    entry.rx = Some(rx);
    let waker = entry.waker.take();
    drop(open);
    if let Some(w) = waker {
        w.wake();
    }
    Some(tx)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::Sent;

    #[tokio::test]
    async fn a_call_that_sends_nothing_answers_as_a_whole() {
        let handoff = Handoff::open(Duration::from_secs(1));
        match handoff.race(async { 7 }).await {
            Raced::Done(n) => assert_eq!(n, 7),
            Raced::Started(_) => panic!("started"),
        }
    }

    #[tokio::test]
    async fn the_first_piece_starts_the_stream_before_the_call_ends() {
        let handoff = Handoff::open(Duration::from_secs(1));
        let token = handoff.token();
        let (done_tx, done_rx) = tokio::sync::oneshot::channel::<()>();
        let model = std::thread::spawn(move || {
            let tx = take(token).expect("the sender");
            assert!(take(token).is_none(), "taken once");
            assert_eq!(
                tx.send_blocking(Ok(Vec::new()), Duration::from_secs(5)),
                Sent::Queued
            );
            tx
        });
        let mut rx = match handoff.race(done_rx).await {
            Raced::Started(rx) => rx,
            Raced::Done(_) => panic!("answered"),
        };
        assert!(rx.recv().await.unwrap().unwrap().is_empty());
        let tx = model.join().unwrap();
        drop(tx);
        assert!(rx.recv().await.is_none());
        drop(done_tx);
    }

    #[tokio::test]
    async fn an_io_thread_or_a_closed_handoff_gets_no_sender() {
        let handoff = Handoff::open(Duration::from_secs(1));
        assert!(take(handoff.token()).is_none(), "on an I/O thread");
        let token = handoff.token();
        drop(handoff);
        let other = std::thread::spawn(move || take(token).is_none());
        assert!(other.join().unwrap());
    }
}
