//! Protobuf bodies for `inferwire.Client`'s gRPC calls, made from (and read back into) the
//! REST forms the client already builds, by the same codecs the server uses: the client's
//! requests and replies exist once, in one form.
use bytes::Bytes;
use inferwire_codec::pb::inference as v2pb;
use inferwire_codec::protocol::seldon::{json as seldon_json, proto as seldon_proto};
use inferwire_codec::protocol::v2;
use inferwire_codec::Limits;
use prost::Message;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// A client decodes what its server sent: no element limit of its own.
fn limits() -> Limits {
    Limits {
        max_elements: usize::MAX,
        ..Limits::default()
    }
}

fn err(e: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// A SeldonMessage's JSON → its protobuf encoding.
#[pyfunction]
pub fn seldon_to_pb<'py>(py: Python<'py>, body: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
    let msg = seldon_json::decode_message(body, &limits()).map_err(err)?;
    let pb = seldon_proto::to_pb(msg).map_err(err)?;
    Ok(PyBytes::new(py, &pb.encode_to_vec()))
}

/// A SeldonMessage's protobuf encoding → its JSON.
#[pyfunction]
pub fn seldon_from_pb<'py>(py: Python<'py>, pb: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
    let msg = seldon_proto::decode_message(Bytes::copy_from_slice(pb), &limits()).map_err(err)?;
    let mut out = Vec::new();
    seldon_json::encode_message(&msg, &mut out).map_err(err)?;
    Ok(PyBytes::new(py, &out))
}

/// A V2 REST request body (JSON, then binary inputs after `header_len` bytes) → a
/// `ModelInferRequest` for `model` (and `version`), inputs in `raw_input_contents`.
#[pyfunction]
#[pyo3(signature = (body, header_len, model, version=""))]
pub fn v2_request_to_pb<'py>(
    py: Python<'py>,
    body: &[u8],
    header_len: Option<usize>,
    model: &str,
    version: &str,
) -> PyResult<Bound<'py, PyBytes>> {
    let req = v2::json::decode_request(Bytes::copy_from_slice(body), header_len, &limits())
        .map_err(err)?;
    let mut pb = v2::proto::to_pb_request(req, model, true);
    pb.model_version = version.to_owned();
    Ok(PyBytes::new(py, &pb.encode_to_vec()))
}

/// A `ModelInferResponse` → the V2 REST reply with every output binary: the body and the
/// length of its JSON header.
#[pyfunction]
pub fn v2_response_from_pb<'py>(
    py: Python<'py>,
    pb: &[u8],
) -> PyResult<(Bound<'py, PyBytes>, usize)> {
    let r = v2pb::ModelInferResponse::decode(pb).map_err(err)?;
    let resp = v2::proto::response_from_pb(r, &limits()).map_err(err)?;
    let mut out = Vec::new();
    let blobs = v2::json::encode_response(&resp, |_| true, &mut out).map_err(err)?;
    let header_len = out.len();
    for b in blobs {
        out.extend_from_slice(&b);
    }
    Ok((PyBytes::new(py, &out), header_len))
}

/// The compiled `prediction.proto` (with its imports) as a `FileDescriptorSet`, from
/// which `inferwire.seldon_proto` makes the protobuf classes a Seldon `*_grpc` method
/// takes, without protoc or generated modules.
#[pyfunction]
pub fn seldon_descriptor_set(py: Python<'_>) -> Bound<'_, PyBytes> {
    PyBytes::new(py, inferwire_codec::pb::FILE_DESCRIPTOR_SET)
}
