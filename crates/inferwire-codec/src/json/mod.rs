//! JSON helpers shared by every JSON protocol: the typed array fast path and writers.
pub mod numbers;
pub mod scan;
pub mod value;
pub mod write;
