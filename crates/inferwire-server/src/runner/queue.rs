//! The model threads' shared queue. A call handed over wakes one idle thread, and only
//! when one is idle; while a thread gathers a batch, new work goes to it and the other
//! threads stay asleep. (A `Mutex<mpsc::Receiver>` woke a second thread for every call:
//! the one waiting for the mutex, only to block again in `recv`.)
use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

pub struct Queue<T> {
    state: Mutex<State<T>>,
    /// Idle threads wait here for work.
    work: Condvar,
    /// The gathering thread waits here for more of its batch.
    more: Condvar,
}

struct State<T> {
    items: VecDeque<T>,
    closed: bool,
    /// A thread is gathering a batch: what comes in is its to take.
    gathering: bool,
    /// Threads asleep on `work`.
    idle: usize,
}

/// The queue closed: nothing more will come.
pub struct Closed<T>(pub T);

impl<T> Queue<T> {
    pub fn new() -> Self {
        Self {
            state: Mutex::new(State {
                items: VecDeque::new(),
                closed: false,
                gathering: false,
                idle: 0,
            }),
            work: Condvar::new(),
            more: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn push(&self, item: T) -> Result<(), Closed<T>> {
        let mut state = self.lock();
        if state.closed {
            return Err(Closed(item));
        }
        state.items.push_back(item);
        if state.gathering {
            drop(state);
            self.more.notify_one();
        } else if state.idle > 0 {
            drop(state);
            self.work.notify_one();
        }
        Ok(())
    }

    /// Wakes every thread; each takes what is left, then `take` answers `None`.
    pub fn close(&self) {
        self.lock().closed = true;
        self.work.notify_all();
        self.more.notify_all();
    }

    /// The next item, waiting for one (`None`: closed and empty). When `joins` says the
    /// item may be batched and `max` is above 1, also what arrives within `delay`, until
    /// `max` items that `joins` accepts are in; meanwhile the other threads take nothing.
    pub fn take(&self, joins: impl Fn(&T) -> bool, max: usize, delay: Duration) -> Option<Vec<T>> {
        let mut state = self.lock();
        let first = loop {
            if !state.gathering {
                if let Some(item) = state.items.pop_front() {
                    break item;
                }
                if state.closed {
                    return None;
                }
            }
            state.idle += 1;
            state = self.work.wait(state).unwrap_or_else(|e| e.into_inner());
            state.idle -= 1;
        };
        if max <= 1 || !joins(&first) {
            return Some(vec![first]);
        }
        let until = Instant::now() + delay;
        let mut items = vec![first];
        let mut joined = 1;
        state.gathering = true;
        while joined < max {
            if let Some(item) = state.items.pop_front() {
                joined += usize::from(joins(&item));
                items.push(item);
                continue;
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() || state.closed {
                break;
            }
            state = self
                .more
                .wait_timeout(state, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        state.gathering = false;
        // What came after the batch closed is the next thread's; at close, every thread
        // that slept through it must see it.
        if state.idle > 0 && (state.closed || !state.items.is_empty()) {
            let closed = state.closed;
            drop(state);
            if closed {
                self.work.notify_all();
            } else {
                self.work.notify_one();
            }
        }
        Some(items)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn items_come_out_in_order_then_none_once_closed() {
        let q = Queue::new();
        for i in 0..3 {
            assert!(q.push(i).is_ok());
        }
        q.close();
        assert!(matches!(q.push(9), Err(Closed(9))));
        let alone = |q: &Queue<i32>| q.take(|_| false, 1, Duration::ZERO);
        assert_eq!(alone(&q), Some(vec![0]));
        assert_eq!(alone(&q), Some(vec![1]));
        assert_eq!(alone(&q), Some(vec![2]));
        assert_eq!(alone(&q), None);
    }

    #[test]
    fn a_gathering_thread_takes_what_arrives_within_its_delay() {
        let q = Arc::new(Queue::new());
        let producer = {
            let q = q.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                assert!(q.push(2).is_ok());
                assert!(q.push(3).is_ok());
                assert!(q.push(4).is_ok());
            })
        };
        assert!(q.push(1).is_ok());
        // Full at three, before the delay is over; the fourth is left for the next.
        let started = Instant::now();
        let joins = |_: &i32| true;
        assert_eq!(
            q.take(joins, 3, Duration::from_secs(5)),
            Some(vec![1, 2, 3])
        );
        assert!(started.elapsed() < Duration::from_secs(5));
        producer.join().unwrap();
        assert_eq!(q.take(joins, 1, Duration::ZERO), Some(vec![4]));
    }

    #[test]
    fn a_gathering_thread_stops_at_its_delay_and_close_wakes_the_others() {
        let q = Arc::new(Queue::new());
        let sleeper = {
            let q = q.clone();
            std::thread::spawn(move || q.take(|_: &i32| true, 8, Duration::ZERO))
        };
        assert!(q.push(1).is_ok());
        let closer = {
            let q = q.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(100));
                q.close();
            })
        };
        // One of the two threads has the item; the other sleeps until close.
        let got = q.take(|_| true, 8, Duration::from_millis(50));
        closer.join().unwrap();
        let other = sleeper.join().unwrap();
        let mut all: Vec<_> = got.into_iter().chain(other).flatten().collect();
        all.sort_unstable();
        assert_eq!(all, vec![1]);
    }

    #[test]
    fn an_idle_thread_wakes_for_work_and_for_close() {
        let q = Arc::new(Queue::<i32>::new());
        let taker = {
            let q = q.clone();
            let alone = move || q.take(|_| false, 1, Duration::ZERO);
            std::thread::spawn(move || (alone(), alone()))
        };
        std::thread::sleep(Duration::from_millis(20));
        assert!(q.push(7).is_ok());
        std::thread::sleep(Duration::from_millis(20));
        q.close();
        assert_eq!(taker.join().unwrap(), (Some(vec![7]), None));
    }
}
