//! Joining a thread that may never end: a model call that hangs keeps its thread (model
//! or I/O) busy for good, and shutdown must not wait for it past a deadline.
use std::thread::{JoinHandle, Result};
use std::time::{Duration, Instant};

/// The thread's result if it ends by `until`; otherwise `None`, and it is left to run
/// (detached) while the process goes on.
pub fn join_by<T>(handle: JoinHandle<T>, until: Instant) -> Option<Result<T>> {
    while !handle.is_finished() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
    handle.is_finished().then(|| handle.join())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_finished_thread_is_joined_and_a_stuck_one_left() {
        let quick = std::thread::spawn(|| 7);
        assert_eq!(
            join_by(quick, Instant::now() + Duration::from_secs(5))
                .unwrap()
                .unwrap(),
            7
        );
        let (_tx, rx) = std::sync::mpsc::channel::<()>();
        let stuck = std::thread::spawn(move || rx.recv().is_err());
        let started = Instant::now();
        assert!(join_by(stuck, Instant::now() + Duration::from_millis(50)).is_none());
        assert!(started.elapsed() < Duration::from_secs(1));
    }
}
