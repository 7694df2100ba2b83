//! Helpers for `inferwire auth`: the hashes the token and user files hold, made by the
//! same code that checks them.
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// The SHA-256 hex digest of a token, as a token file line holds it.
#[pyfunction]
pub fn token_digest(token: &str) -> String {
    inferwire_server::auth::token_digest(token)
}

/// An argon2id hash of a password (PHC string), as a user file line holds it.
#[pyfunction]
pub fn hash_password(py: Python<'_>, password: &str) -> PyResult<String> {
    py.detach(|| inferwire_server::auth::hash_password(password))
        .map_err(PyValueError::new_err)
}
