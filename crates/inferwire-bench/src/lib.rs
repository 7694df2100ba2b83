//! inferwire-bench: a load generator for model servers and the source benchmarks as suites.
//!
//! Pure Rust. One thread drives every connection (a current-thread tokio runtime), so the
//! generator's own CPU per request stays small next to the server's on a 2-core machine.
mod blocking_h2;
pub mod cli;
pub mod cpu;
pub mod duration;
mod error_body;
mod hpack;
pub mod html;
mod http1;
pub mod listener;
pub mod load;
pub mod payload;
mod progress;
pub mod report;
pub mod stats;
mod stream;
pub mod streaming;
pub mod suite;
pub mod target;
pub mod tls;
pub mod transport;
mod zerocopy;
