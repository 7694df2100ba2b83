//! What the fuzz targets share.
use inferwire_codec::Limits;

/// The server's limits, but at most a million elements per tensor: a 100-byte input may
/// legitimately describe (and, for a `tftensor`, fill) a tensor as large as the limit
/// allows, and the targets compare whole tensors; at the server's default (64 M
/// elements) that takes more memory than libFuzzer's 2 GB budget. The code paths are the
/// same at either limit.
pub fn limits() -> Limits {
    Limits {
        max_elements: 1 << 20,
        ..Limits::default()
    }
}
