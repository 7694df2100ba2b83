//! `inferwire bench ...`: the load generator's command line, run without the GIL. Built
//! only with the `bench` feature, which pyproject.toml asks for: wheels carry it
//! (docs/install.md).
use pyo3::prelude::*;

/// Runs `inferwire bench` with `args` (the first is the program name); returns the exit
/// status.
#[pyfunction]
pub fn bench_main(py: Python<'_>, args: Vec<String>) -> i32 {
    py.detach(|| inferwire_bench::cli::main(args))
}
