//! inferwire-trees: tree ensembles converted once into inferwire's own format
//! (`format`, documented in docs/reference/tree-format.md) and scored in Rust, row by row
//! over every tree, with no interpreter on the path (`forest`).
pub mod forest;
pub mod format;

pub use forest::{Forest, LoadError};
pub use format::ForestFile;
