//! How many model calls may run at once (`model_threads`), shared by I/O threads (which
//! only ever try, never wait) and model threads (which wait). Each running call's start
//! is kept, so that a watchdog can tell a call that never returns (`--stuck-after`).
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

pub struct Slots {
    state: Mutex<State>,
    freed: Condvar,
}

struct State {
    free: usize,
    /// The start of each running call, by the id its `Slot` holds.
    running: Vec<(u64, Instant)>,
    next_id: u64,
    /// Threads blocked in `take`: a slot given back wakes one only when there is one, as
    /// every notify is a system call even with nobody to wake.
    waiting: usize,
}

/// A running call; gives its slot back when dropped.
pub struct Slot<'a> {
    slots: &'a Slots,
    id: u64,
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let mut state = self.slots.lock();
        state.free += 1;
        state.running.retain(|(id, _)| *id != self.id);
        let wake = state.waiting > 0;
        drop(state);
        if wake {
            self.slots.freed.notify_one();
        }
    }
}

impl Slots {
    pub fn new(n: usize) -> Self {
        Self {
            state: Mutex::new(State {
                free: n,
                running: Vec::with_capacity(n),
                next_id: 0,
                waiting: 0,
            }),
            freed: Condvar::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn try_take(&self) -> Option<Slot<'_>> {
        let mut state = self.lock();
        if state.free == 0 {
            return None;
        }
        Some(self.occupy(&mut state))
    }

    pub fn take(&self) -> Slot<'_> {
        let mut state = self.lock();
        while state.free == 0 {
            state.waiting += 1;
            state = self.freed.wait(state).unwrap_or_else(|e| e.into_inner());
            state.waiting -= 1;
        }
        self.occupy(&mut state)
    }

    fn occupy(&self, state: &mut State) -> Slot<'_> {
        state.free -= 1;
        let id = state.next_id;
        state.next_id += 1;
        state.running.push((id, Instant::now()));
        Slot { slots: self, id }
    }

    /// How long the oldest running call has been running (`None`: none runs).
    pub fn longest(&self) -> Option<Duration> {
        self.lock().running.iter().map(|(_, t)| t.elapsed()).max()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_running_call_is_tracked() {
        let slots = Slots::new(2);
        assert!(slots.longest().is_none());
        let first = slots.take();
        std::thread::sleep(Duration::from_millis(20));
        let second = slots.try_take().expect("a second slot");
        assert!(slots.try_take().is_none());
        assert!(slots.longest().unwrap() >= Duration::from_millis(20));
        drop(first);
        assert!(slots.longest().unwrap() < Duration::from_millis(20));
        drop(second);
        assert!(slots.longest().is_none());
        assert!(slots.try_take().is_some());
    }
}
