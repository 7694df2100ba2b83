//! TorchServe's answers (`inferwire torchserve`): its words for a model or version it
//! does not have. Its routes and error shape are `rest::torchserve`'s.
use super::{Absent, Dialect, Missing};
use crate::error::{Kind, ServeError};

#[derive(Debug, Clone, Copy, Default)]
pub struct TorchServe;

impl Dialect for TorchServe {
    fn name(&self) -> &'static str {
        "torchserve"
    }

    fn not_found(&self, e: ServeError, missing: &Missing<'_>) -> ServeError {
        if e.kind != Kind::NotFound {
            return e;
        }
        let message = match missing.absent {
            Absent::Version => format!(
                "Model version: {} does not exist for model: {}",
                missing.version, missing.name
            ),
            Absent::Model | Absent::NotLoaded => format!("Model not found: {}", missing.name),
        };
        ServeError::new(Kind::NotFound, message)
    }
}
