//! The budget of request-body bytes one server process holds at once
//! (`max_body_bytes_in_flight`), shared by REST and gRPC. A body is charged from its
//! first byte (or, when its size is declared, before any byte is read) until the request
//! has it whole and decoded: REST bodies until they are read (and inflated), gRPC messages
//! until tonic hands the decoded message to the handler. A body that would overdraw the
//! budget is refused at once (503 / RESOURCE_EXHAUSTED) instead of waiting, so slow or
//! unfinished bodies cannot pile up memory. Charges are RAII guards: whatever ends a body
//! (done, refused, timed out, the client gone) gives its bytes back.
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::error::{Kind, ServeError};
use crate::metrics::Metrics;

pub struct BodyBudget {
    limit: usize,
    used: AtomicUsize,
    /// `inferwire_request_body_bytes`, this process's share.
    metrics: Metrics,
}

impl BodyBudget {
    pub fn new(limit: usize, metrics: Metrics) -> Arc<Self> {
        Arc::new(Self {
            limit,
            used: AtomicUsize::new(0),
            metrics,
        })
    }

    /// A charge of `n` bytes, or the refusal to send when the budget has not that much.
    pub fn charge(self: &Arc<Self>, n: usize) -> Result<Charge, ServeError> {
        let mut charge = Charge {
            budget: self.clone(),
            held: 0,
        };
        charge.grow(n)?;
        Ok(charge)
    }

    /// Bytes charged now.
    pub fn in_use(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    fn take(&self, n: usize) -> Result<(), ServeError> {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(n).filter(|&total| total <= self.limit)
            })
            .map_err(|used| self.refused(used, n))?;
        self.metrics.add_body_bytes(n as i64);
        Ok(())
    }

    fn give_back(&self, n: usize) {
        if n > 0 {
            self.used.fetch_sub(n, Ordering::AcqRel);
            self.metrics.add_body_bytes(-(n as i64));
        }
    }

    #[cold]
    fn refused(&self, used: usize, n: usize) -> ServeError {
        ServeError::new(
            Kind::Overloaded,
            format!(
                "request bodies being received hold {used} of the {} bytes allowed at once, \
                 too many for {n} more (see --max-body-bytes-in-flight); retry shortly",
                self.limit
            ),
        )
    }
}

/// Bytes charged to the budget until dropped.
pub struct Charge {
    budget: Arc<BodyBudget>,
    held: usize,
}

impl Charge {
    /// Charges `n` more bytes, or refuses them (the bytes already held stay charged).
    pub fn grow(&mut self, n: usize) -> Result<(), ServeError> {
        self.budget.take(n)?;
        self.held += n;
        Ok(())
    }

    /// Gives back what is held above `keep` bytes.
    pub fn shrink_to(&mut self, keep: usize) {
        if self.held > keep {
            self.budget.give_back(self.held - keep);
            self.held = keep;
        }
    }

    pub fn held(&self) -> usize {
        self.held
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.budget.give_back(self.held);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(limit: usize) -> Arc<BodyBudget> {
        BodyBudget::new(limit, Metrics::shared().expect("an anonymous mapping"))
    }

    #[test]
    fn charges_are_refused_past_the_limit_and_given_back_on_drop() {
        let b = budget(100);
        let mut a = b.charge(60).unwrap();
        let e = b.charge(41).err().unwrap();
        assert_eq!(e.kind, Kind::Overloaded);
        assert!(e.message.contains("--max-body-bytes-in-flight"), "{e}");
        assert!(a.grow(41).is_err());
        assert_eq!(a.held(), 60);
        a.grow(40).unwrap();
        assert_eq!(b.in_use(), 100);
        a.shrink_to(10);
        assert_eq!(b.in_use(), 10);
        drop(a);
        assert_eq!(b.in_use(), 0);
        assert!(b.charge(100).is_ok());
        assert_eq!(b.in_use(), 0);
    }

    #[test]
    fn a_huge_declared_size_does_not_wrap() {
        let b = budget(100);
        let _a = b.charge(50).unwrap();
        assert!(b.charge(usize::MAX).is_err());
        assert_eq!(b.in_use(), 50);
    }
}
