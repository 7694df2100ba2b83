//! Decoding limits, checked before anything is allocated.
use crate::error::{CodecError, Result};

#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Largest number of elements one tensor may hold.
    pub max_elements: usize,
    /// Deepest JSON array nesting accepted for `ndarray` data.
    pub max_depth: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_elements: 64 * 1024 * 1024,
            max_depth: 32,
        }
    }
}

/// Most dimensions a tensor may have: numpy's own limit before 2.0 (64 since).
pub const MAX_RANK: usize = 32;

/// An empty tensor's dimensions, its zeros left out, may multiply to at most this. Its
/// element count (0) bounds nothing, yet replies and models still loop over those
/// dimensions (a JSON `[]` per row, a class name per column): a few bytes declaring
/// `[0, 2000000]` must not cost what two million elements would.
pub const MAX_EMPTY_EXTENT: usize = 65_536;

impl Limits {
    /// Product of `dims` as an element count, refusing negative sizes, overflow, more
    /// than `MAX_RANK` dimensions, anything above `max_elements`, and an empty shape whose
    /// other dimensions multiply past `MAX_EMPTY_EXTENT`.
    pub fn element_count(&self, dims: &[i64]) -> Result<usize> {
        if dims.len() > MAX_RANK {
            return Err(CodecError::bad_request(format!(
                "shape has {} dimensions, more than the limit of {MAX_RANK}",
                dims.len()
            )));
        }
        let mut n: usize = 1;
        // The product with zeros counted as ones: what loops over the shape cost.
        let mut extent: usize = 1;
        for &d in dims {
            if d < 0 {
                return Err(CodecError::bad_request(format!(
                    "shape {dims:?} has a negative dimension"
                )));
            }
            let d = usize::try_from(d).map_err(|_| self.too_many(dims))?;
            extent = extent
                .checked_mul(d.max(1))
                .filter(|&e| e <= self.max_elements)
                .ok_or_else(|| self.too_many(dims))?;
            n = n.saturating_mul(d);
        }
        if n == 0 && extent > MAX_EMPTY_EXTENT {
            return Err(CodecError::bad_request(format!(
                "shape {dims:?} has no elements, but its other dimensions multiply to \
                 {extent}, past the limit of {MAX_EMPTY_EXTENT} for an empty tensor"
            )));
        }
        Ok(n)
    }

    #[cold]
    fn too_many(&self, dims: &[i64]) -> CodecError {
        CodecError::bad_request(format!(
            "shape {dims:?} exceeds the limit of {} elements per tensor (the max_elements setting)",
            self.max_elements
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dimensions_are_bounded_even_without_elements() {
        let l = Limits::default();
        assert_eq!(l.element_count(&[2, 3]).unwrap(), 6);
        assert_eq!(l.element_count(&[]).unwrap(), 1);
        assert_eq!(l.element_count(&[0, 1000]).unwrap(), 0);
        assert_eq!(l.element_count(&[0, MAX_EMPTY_EXTENT as i64]).unwrap(), 0);
        let e = l.element_count(&[0, 2_000_000]).unwrap_err().to_string();
        assert!(e.contains("no elements") && e.contains("65536"), "{e}");
        let e = l
            .element_count(&[1_000_000_000_000, 0])
            .unwrap_err()
            .to_string();
        assert!(e.contains("max_elements"), "{e}");
        let e = l.element_count(&[1; 33]).unwrap_err().to_string();
        assert!(e.contains("33 dimensions"), "{e}");
        assert!(l.element_count(&[1; 32]).is_ok());
        assert!(l.element_count(&[-1]).is_err());
        assert!(l.element_count(&[i64::MAX, i64::MAX, 0]).is_err());
    }
}
