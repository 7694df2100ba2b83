//! One Python thread state per server thread, for the thread's whole life.
//!
//! `Python::attach` on a thread CPython has not seen creates a thread state and destroys
//! it again on release (an allocation, an mmap of a frame arena, a lock): per request,
//! that was a third of the server's CPU time for a small model. Registering the thread
//! once, detached, makes every later `attach` only take the GIL.
#![allow(unsafe_code)] // CPython's thread-state API has no safe wrapper in PyO3.

use std::cell::Cell;

use pyo3::ffi;

thread_local! {
    /// The GIL state to release and the detached thread state, while registered.
    static REGISTERED: Cell<Option<(ffi::PyGILState_STATE, *mut ffi::PyThreadState)>> =
        const { Cell::new(None) };
}

/// Creates this thread's Python thread state and detaches from it, leaving it registered.
pub fn attach_for_life() {
    // SAFETY: the interpreter is initialized (this code runs inside a Python process that
    // imported the extension); the thread holds no GIL here, so Ensure takes it and
    // creates the thread state, and SaveThread releases the GIL while keeping that state
    // registered for the thread. `release` undoes both in reverse order.
    unsafe {
        if ffi::Py_IsInitialized() == 0 || REGISTERED.get().is_some() {
            return;
        }
        let gil = ffi::PyGILState_Ensure();
        let tstate = ffi::PyEval_SaveThread();
        REGISTERED.set(Some((gil, tstate)));
    }
}

/// Releases what `attach_for_life` registered.
pub fn release() {
    if let Some((gil, tstate)) = REGISTERED.take() {
        // SAFETY: `tstate` was detached by `attach_for_life` on this same thread and no
        // PyO3 guard is active here (thread shutdown), so restoring then releasing it
        // balances the Ensure exactly once.
        unsafe {
            if ffi::Py_IsInitialized() != 0 {
                ffi::PyEval_RestoreThread(tstate);
                ffi::PyGILState_Release(gil);
            }
        }
    }
}
