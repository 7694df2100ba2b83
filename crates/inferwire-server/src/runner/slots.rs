//! How many model calls may run at once (`model_threads`), shared by I/O threads (which
//! only ever try, never wait) and model threads (which wait).
use std::sync::{Condvar, Mutex};

pub struct Slots {
    free: Mutex<usize>,
    freed: Condvar,
}

/// A running call; gives its slot back when dropped.
pub struct Slot<'a>(&'a Slots);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        *self.0.free.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        self.0.freed.notify_one();
    }
}

impl Slots {
    pub fn new(n: usize) -> Self {
        Self {
            free: Mutex::new(n),
            freed: Condvar::new(),
        }
    }

    pub fn try_take(&self) -> Option<Slot<'_>> {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        if *free == 0 {
            return None;
        }
        *free -= 1;
        Some(Slot(self))
    }

    pub fn take(&self) -> Slot<'_> {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        while *free == 0 {
            free = self.freed.wait(free).unwrap_or_else(|e| e.into_inner());
        }
        *free -= 1;
        Slot(self)
    }
}
