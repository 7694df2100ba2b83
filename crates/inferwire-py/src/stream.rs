//! A Python model's stream, as the server's `Pieces`: a generator advanced by the
//! runner's thread (`blocking`), or an async generator on the stream loop sending into a
//! `Sink` (`driven`). The GIL is held for each piece only.
use std::sync::{Arc, Mutex};
use std::time::Duration;

use inferwire_server::stream::{Piece, Sender};
use inferwire_server::{BlockingPieces, Pieces};
use pyo3::exceptions::PyStopIteration;
use pyo3::prelude::*;

use crate::model::{outputs_from, Errors};

pub fn blocking(pieces: Bound<'_, PyAny>, errors: Arc<Errors>) -> Pieces {
    Pieces::Blocking(Box::new(Generator {
        pieces: Some(pieces.unbind()),
        errors,
    }))
}

pub fn driven(start: Bound<'_, PyAny>, errors: Arc<Errors>) -> Pieces {
    let start = start.unbind();
    Pieces::Driven(Box::new(move |tx: Sender| {
        Python::attach(|py| {
            let patience = tx.patience;
            let sink = Sink {
                tx: Mutex::new(Some(tx)),
                errors,
            };
            let sink = match Py::new(py, sink) {
                Ok(s) => s,
                Err(e) => return drop(e),
            };
            if let Err(e) = start
                .bind(py)
                .call1((sink.clone_ref(py), patience.as_secs_f64()))
            {
                // Not started: the stream ends with the reason.
                let sink = sink.borrow(py);
                let error = sink.errors.of(py, e);
                sink.finish(Some(Err(error)));
            }
        });
    }))
}

/// A plain generator of `[(name, value), ...]` lists (`inferwire.streaming.encoded`).
struct Generator {
    pieces: Option<Py<PyAny>>,
    errors: Arc<Errors>,
}

impl BlockingPieces for Generator {
    fn next(&mut self) -> Option<Piece> {
        let pieces = self.pieces.as_ref()?;
        Python::attach(|py| {
            let next = pieces.bind(py).call_method0("__next__");
            match next {
                Ok(out) => Some(outputs_from(&out).map_err(|e| self.errors.of(py, e))),
                Err(e) if e.is_instance_of::<PyStopIteration>(py) => None,
                Err(e) => Some(Err(self.errors.of(py, e))),
            }
        })
    }

    fn close(&mut self) {
        if let Some(pieces) = &self.pieces {
            Python::attach(|py| {
                // The model's cleanup raising is its own business; the stream is over.
                let _ = pieces.bind(py).call_method0("close");
            });
        }
    }
}

impl Drop for Generator {
    fn drop(&mut self) {
        if let Some(pieces) = self.pieces.take() {
            Python::attach(|_| drop(pieces));
        }
    }
}

/// Where an async generator's driver (`inferwire.streaming._drive`) sends its pieces.
#[pyclass(frozen, module = "inferwire._core")]
pub struct Sink {
    tx: Mutex<Option<Sender>>,
    errors: Arc<Errors>,
}

impl Sink {
    fn with<T>(&self, f: impl FnOnce(&Sender) -> T) -> Option<T> {
        let tx = self.tx.lock().unwrap_or_else(|e| e.into_inner());
        tx.as_ref().map(f)
    }

    /// Sends a last piece (if any) and ends the stream.
    fn finish(&self, last: Option<Piece>) {
        let tx = self.tx.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let (Some(tx), Some(piece)) = (tx, last) {
            let _ = tx.send_blocking(piece, Duration::ZERO);
        }
    }
}

#[pymethods]
impl Sink {
    /// Whether `send` would queue a piece now (or drop it: the reader has gone).
    fn has_room(&self) -> bool {
        self.with(Sender::has_room).unwrap_or(true)
    }

    /// Calls `callback()` (from any thread) once there is room or the reader has gone.
    fn when_room(&self, callback: Py<PyAny>) {
        let wake: Box<dyn FnOnce() + Send> = Box::new(move || {
            Python::attach(|py| {
                let _ = callback.call0(py);
            });
        });
        let tx = self.tx.lock().unwrap_or_else(|e| e.into_inner());
        match tx.as_ref() {
            Some(tx) => tx.when_room(wake),
            None => {
                drop(tx);
                wake();
            }
        }
    }

    /// Queues one piece's outputs; False when the reader has gone (the driver stops).
    fn send(&self, outputs: &Bound<'_, PyAny>) -> PyResult<bool> {
        let piece = outputs_from(outputs)?;
        Ok(self
            .with(|tx| tx.try_send(Ok(piece)).is_ok())
            .unwrap_or(false))
    }

    /// Ends the stream with the model's exception.
    fn fail(&self, py: Python<'_>, exc: Bound<'_, PyAny>) {
        let error = self.errors.of(py, PyErr::from_value(exc));
        self.finish(Some(Err(error)));
    }

    /// The reader took nothing for the idle limit: its queued pieces go and the stream
    /// stops counting as open (the driver then closes it).
    fn give_up(&self) {
        self.with(Sender::give_up);
    }

    /// Ends the stream (the generator has finished).
    fn close(&self) {
        self.finish(None);
    }
}

/// A request's stream while the model call answering it runs
/// (`inferwire_server::stream::handoff`): where a TorchServe handler's intermediate
/// responses go as it sends them, its reply last. Used from the thread running the call.
#[pyclass(frozen, module = "inferwire._core")]
pub struct PieceSender {
    tx: Mutex<Option<Sender>>,
}

/// The sender of the request whose parameters carry `token`, the first time; None after
/// that, or when no reader can take pieces while the call runs (the model then answers
/// them with its reply).
#[pyfunction]
pub fn take_piece_sender(token: u64) -> Option<PieceSender> {
    inferwire_server::stream::handoff::take(token).map(|tx| PieceSender {
        tx: Mutex::new(Some(tx)),
    })
}

impl PieceSender {
    /// Queues `piece`, waiting without the GIL while the reader is behind (up to the
    /// stream's idle limit); false when the reader has gone or stalled, and the stream
    /// is then over.
    fn put(&self, py: Python<'_>, piece: Piece) -> bool {
        let taken = self.tx.lock().unwrap_or_else(|e| e.into_inner()).take();
        let Some(tx) = taken else { return false };
        let (tx, sent) = py.detach(move || {
            let patience = tx.patience;
            let sent = tx.send_blocking(piece, patience);
            (tx, sent)
        });
        if sent != inferwire_server::stream::Sent::Queued {
            return false;
        }
        *self.tx.lock().unwrap_or_else(|e| e.into_inner()) = Some(tx);
        true
    }
}

#[pymethods]
impl PieceSender {
    /// Sends one piece's outputs (a `[(name, value, parameters)]` list); False when the
    /// reader has gone or stalled (send no more).
    fn send(&self, py: Python<'_>, outputs: &Bound<'_, PyAny>) -> PyResult<bool> {
        let piece = outputs_from(outputs)?;
        Ok(self.put(py, Ok(piece)))
    }

    /// Ends the stream with a failure: its HTTP `status`, `message` and error body.
    fn fail(&self, py: Python<'_>, status: u16, message: String, body: Option<String>) -> bool {
        let error = inferwire_server::ModelError {
            kind: inferwire_server::ModelErrorKind::Status(status),
            message,
            body: body.map(String::into_boxed_str),
        };
        let sent = self.put(py, Err(error));
        self.close();
        sent
    }

    /// Ends the stream (after its last piece).
    fn close(&self) {
        drop(self.tx.lock().unwrap_or_else(|e| e.into_inner()).take());
    }
}
