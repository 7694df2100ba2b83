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

impl Limits {
    /// Product of `dims` as an element count, refusing negative sizes, overflow and
    /// anything above `max_elements`.
    pub fn element_count(&self, dims: &[i64]) -> Result<usize> {
        let mut n: usize = 1;
        for &d in dims {
            if d < 0 {
                return Err(CodecError::bad_request(format!(
                    "shape {dims:?} has a negative dimension"
                )));
            }
            n = n
                .checked_mul(d as usize)
                .ok_or_else(|| self.too_many(dims))?;
        }
        if n > self.max_elements {
            return Err(self.too_many(dims));
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
