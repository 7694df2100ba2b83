//! `inferwire._core`: the glue between Python and the pure-Rust server.
//!
//! Nothing here decides protocol behaviour: it converts values, takes and releases the
//! GIL, and maps errors. Python holds the user-facing API (CLI, settings, model loading,
//! Seldon method semantics); Rust holds everything on the request path.
mod auth;
#[cfg(feature = "bench")]
mod bench;
mod config;
mod convert;
mod model;
mod repository;
mod server;
mod stream;
mod thread_state;
mod trees;
mod wire;

use pyo3::prelude::*;

/// Request buffers are large and short-lived (an 800 KB tensor per request): glibc hands
/// them back to the kernel and faults fresh pages in on the next request, a fifth of the
/// CPU of a large request. mimalloc keeps them. Only Rust allocations use it.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<server::Server>()?;
    m.add_class::<config::CoreConfig>()?;
    m.add_class::<config::CoreModelSpec>()?;
    m.add_class::<trees::TreeEnsemble>()?;
    m.add_class::<stream::Sink>()?;
    m.add_class::<stream::PieceSender>()?;
    m.add_function(wrap_pyfunction!(stream::take_piece_sender, m)?)?;
    #[cfg(feature = "bench")]
    m.add_function(wrap_pyfunction!(bench::bench_main, m)?)?;
    m.add_function(wrap_pyfunction!(auth::token_digest, m)?)?;
    m.add_function(wrap_pyfunction!(auth::hash_password, m)?)?;
    m.add_function(wrap_pyfunction!(wire::seldon_to_pb, m)?)?;
    m.add_function(wrap_pyfunction!(wire::seldon_from_pb, m)?)?;
    m.add_function(wrap_pyfunction!(wire::seldon_descriptor_set, m)?)?;
    m.add_function(wrap_pyfunction!(wire::v2_request_to_pb, m)?)?;
    m.add_function(wrap_pyfunction!(wire::v2_response_from_pb, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
