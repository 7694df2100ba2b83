//! Seed 003, numpy echo: float64 arrays of 1, 256 and 8,192 points sent as a JSON list,
//! a JSON base64 buffer and msgpack-numpy over REST, and over gRPC, echoed back, many
//! requests in flight; reported as the seed does, milliseconds per request
//! (1,000 ÷ requests/s).
//!
//! On inferwire (`inferwire serve echo --model-name echo`): the REST bodies go to the
//! Seldon predict route with their Content-Type; gRPC is V2 `ModelInfer` with
//! `raw_input_contents`, and a Seldon `binData` holding a .npy with
//! `x-content-type: application/x-npy` (one binary format on both transports).
use std::fmt::Write as _;

use bytes::Bytes;
use http::Method;
use inferwire_codec::arrays::{json as array_json, msgpack, npy};
use inferwire_codec::{Tensor, TensorData};

use super::cells::{self, Measured, Options, Server};
use crate::payload::{seldon_json_to_protobuf, v2_json_to_protobuf};
use crate::target::Target;

pub const POINTS: [usize; 3] = [1, 256, 8192];
/// The seed's rows, its best server for each (ms per request, 1,000 parallel requests).
pub const PUBLISHED: &[(&str, [f64; 3])] = &[
    ("JSON", [0.529, 1.010, 15.408]),
    ("JSON base64", [0.516, 0.525, 1.616]),
    ("msgpack", [0.487, 0.506, 0.590]),
    ("gRPC", [0.203, 0.212, 0.297]),
    ("gRPC .npy in binData", [0.203, 0.212, 0.297]),
];
/// The seed sends 1,000 at once through clients that pool 100 connections.
pub const CLIENTS: usize = 100;

/// `n` float64s in [0, 1), the same every run.
pub fn points(n: usize) -> Tensor {
    let raw = cells::noise(8 * n, n as u64);
    let data = raw
        .chunks_exact(8)
        .map(|c| {
            let bits = u64::from_le_bytes(c.try_into().unwrap_or_default());
            (bits >> 11) as f64 / (1u64 << 53) as f64
        })
        .collect();
    Tensor {
        shape: vec![n],
        data: TensorData::F64(data),
    }
}

pub fn targets(server: &Server, model: &str) -> Result<Vec<(String, Target)>, String> {
    let url = format!("{}/api/v1.0/predictions", server.rest.trim_end_matches('/'));
    let ctype = |t: &str| vec![("Content-Type".to_string(), t.to_string())];
    let mut out = Vec::new();
    for n in POINTS {
        let t = points(n);
        let err = |e: inferwire_codec::CodecError| e.message;
        let mut list = Vec::new();
        array_json::encode(&t, array_json::Layout::List, &mut list).map_err(err)?;
        let mut b64 = Vec::new();
        array_json::encode(&t, array_json::Layout::Base64, &mut b64).map_err(err)?;
        let mut packed = Vec::new();
        msgpack::encode(&t, &mut packed).map_err(err)?;
        let rest = [
            ("JSON", list, "application/json"),
            ("JSON base64", b64, "application/json"),
            ("msgpack", packed, "application/msgpack"),
        ];
        for (label, body, media) in rest {
            let target = Target::http(&url, Method::POST, &ctype(media), Bytes::from(body), false)?;
            out.push((format!("{label}|{n}"), target));
        }
        let TensorData::F64(values) = &t.data else {
            unreachable!("points are float64")
        };
        let v2 = serde_json::json!({
            "inputs": [{"name": "x", "shape": [n], "datatype": "FP64", "data": values}]
        });
        let pb = v2_json_to_protobuf(&serde_json::to_vec(&v2).unwrap_or_default(), model, true)?;
        let call = "inference.GRPCInferenceService/ModelInfer";
        out.push((
            format!("gRPC|{n}"),
            Target::grpc(&server.grpc, call, &[], &pb)?,
        ));
        let mut file = Vec::new();
        npy::encode(&t, &mut file).map_err(err)?;
        let msg = serde_json::json!({"binData": base64_simd::STANDARD.encode_to_string(&file)});
        let pb = seldon_json_to_protobuf(&serde_json::to_vec(&msg).unwrap_or_default())?;
        let meta = [(
            "x-content-type".to_string(),
            "application/x-npy".to_string(),
        )];
        let target = Target::grpc(&server.grpc, "seldon.protos.Seldon/Predict", &meta, &pb)?;
        out.push((format!("gRPC .npy in binData|{n}"), target));
    }
    Ok(out)
}

pub fn run(o: &Options, model: &str) -> Result<Vec<Measured>, String> {
    cells::run(o, |s| targets(s, model))
}

/// The seed's table: one row per encoding, one column group per size.
pub fn markdown(o: &Options, measured: &[Measured]) -> String {
    let per_request = |r: &crate::report::Report| 1000.0 / r.throughput.max(1e-9);
    let mut out = format!(
        "ms per request (1,000 ÷ requests/s) with {} requests in flight, server CPU per \
         request in brackets; the seed's best server beside (for gRPC: its grpcio figure)\n\n",
        o.clients
    );
    let mut header = "| encoding |".to_string();
    for n in POINTS {
        for s in &o.servers {
            let _ = write!(header, " {n} pt: {} |", s.name);
        }
        header.push_str(" seed |");
    }
    let cols = 1 + POINTS.len() * (o.servers.len() + 1);
    let _ = writeln!(out, "{header}\n|{}", "---|".repeat(cols));
    for (label, seed) in PUBLISHED {
        let mut line = format!("| {label} |");
        for (i, n) in POINTS.iter().enumerate() {
            match measured.iter().find(|m| m.key == format!("{label}|{n}")) {
                Some(m) => {
                    for r in &m.reports {
                        let _ = write!(line, " {} |", cells::figure(r, per_request, 3));
                    }
                }
                None => line.push_str(&" - |".repeat(o.servers.len())),
            }
            let _ = write!(line, " {:.3} |", seed[i]);
        }
        let _ = writeln!(out, "{line}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_are_repeatable_fractions() {
        let a = points(256);
        assert_eq!(a, points(256));
        let TensorData::F64(v) = a.data else { panic!() };
        assert!(v.iter().all(|x| (0.0..1.0).contains(x)));
        assert_ne!(v[0], v[1]);
    }
}
