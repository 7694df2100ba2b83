//! The source benchmarks (shared/seeds), runnable against any compatible server.
pub mod cells;
pub mod images;
pub mod numpy_echo;
pub mod ray_micro;
pub mod realtime_rows;
pub mod seldon_matrix;

/// Every suite the issue names: (name, source, what it needs that is not there yet).
pub const SUITES: &[(&str, &str, Option<&str>)] = &[
    (
        "seldon-matrix",
        "seed 000, Seldon's Python wrapper benchmarking notebook",
        None,
    ),
    (
        "images",
        "seed 001, images as base64 and binary over REST and gRPC",
        None,
    ),
    (
        "realtime-rows",
        "seed 002, ML Server realtime web service, 1,000 rows per request",
        None,
    ),
    (
        "numpy-echo",
        "seed 003, numpy arrays as JSON lists, base64 buffers and msgpack",
        None,
    ),
    (
        "ray-micro",
        "seed 004, Ray Serve's replicas / batch size / concurrency table",
        None,
    ),
];
