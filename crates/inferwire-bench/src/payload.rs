//! Request bodies of the source benchmarks, byte for byte as their notebooks build them,
//! plus the same requests as protobuf for gRPC and as vegeta / ghz input files.
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use inferwire_codec::protocol::seldon::{json, proto, Encoding};
use inferwire_codec::Limits;
use prost::Message;

pub const ENCODINGS: [Encoding; 3] = [Encoding::Ndarray, Encoding::Tensor, Encoding::TfTensor];

pub fn encoding_named(name: &str) -> Result<Encoding, String> {
    ENCODINGS
        .into_iter()
        .find(|e| e.name() == name)
        .ok_or_else(|| format!("encoding {name:?}: expected ndarray, tensor or tftensor"))
}

/// Python's `str` of `list(range(size))`: `[0, 1, 2]`.
fn python_list(size: usize) -> String {
    let mut s = String::with_capacity(size * 8 + 2);
    s.push('[');
    for i in 0..size {
        if i > 0 {
            s.push_str(", ");
        }
        let _ = write!(s, "{i}");
    }
    s.push(']');
    s
}

/// The Seldon notebook's request body for `size` consecutive integers (seed 000). The
/// `tftensor` one is what `MessageToJson(tf.make_tensor_proto(np.array(vals)))` gives:
/// DT_INT64, one dimension, `tensorContent` for more than one value, else `int64Val`.
pub fn notebook_json(encoding: Encoding, size: usize) -> String {
    match encoding {
        Encoding::Ndarray => format!("{{\"data\": {{\"ndarray\": [{}]}}}}", python_list(size)),
        Encoding::Tensor => format!(
            "{{\"data\":{{\"tensor\":{{\"shape\":[1,{size}],\"values\":{}}}}}}}",
            python_list(size)
        ),
        Encoding::TfTensor => {
            let values = if size > 1 {
                let raw: Vec<u8> = (0..size as i64).flat_map(i64::to_le_bytes).collect();
                format!(
                    "\"tensorContent\":\"{}\"",
                    base64_simd::STANDARD.encode_to_string(raw)
                )
            } else {
                let v: Vec<String> = (0..size).map(|i| format!("\"{i}\"")).collect();
                format!("\"int64Val\":[{}]", v.join(","))
            };
            format!(
                "{{\"data\":{{\"tftensor\":{{\"dtype\":\"DT_INT64\",\"tensorShape\":{{\"dim\":[{{\"size\":\"{size}\"}}]}},{values}}}}}}}"
            )
        }
    }
}

/// A Seldon JSON message as the protobuf `SeldonMessage` gRPC clients send (what ghz
/// builds from the same JSON file).
pub fn seldon_json_to_protobuf(body: &[u8]) -> Result<Vec<u8>, String> {
    let limits = Limits::default();
    let msg = json::decode_message(body, &limits).map_err(|e| e.to_string())?;
    let mut pb = proto::to_pb(msg).map_err(|e| e.to_string())?;
    if pb.meta.as_ref().is_some_and(|m| *m == Default::default()) {
        pb.meta = None;
    }
    Ok(pb.encode_to_vec())
}

/// One vegeta JSON target line, as the notebook writes it.
/// A V2 JSON inference request (the REST body) as the gRPC `ModelInferRequest` for
/// `model`, inputs raw or typed.
pub fn v2_json_to_protobuf(body: &[u8], model: &str, raw: bool) -> Result<Vec<u8>, String> {
    use inferwire_codec::protocol::v2;
    let limits = inferwire_codec::Limits {
        max_elements: usize::MAX,
        ..Default::default()
    };
    let req = v2::json::decode_request(body.to_vec().into(), None, &limits)
        .map_err(|e| format!("the V2 request: {}", e.message))?;
    Ok(prost::Message::encode_to_vec(&v2::proto::to_pb_request(
        req, model, raw,
    )))
}

pub fn vegeta_target(url: &str, body: &[u8]) -> String {
    format!(
        "{{\"method\":\"POST\",\"url\":{},\"body\":\"{}\",\"header\":{{\"Content-Type\":[\"application/json\"]}}}}\n",
        serde_json::Value::from(url),
        base64_simd::STANDARD.encode_to_string(body)
    )
}

/// Writes, for each encoding: `data_<enc>.json` (the body; ghz's `--data-file`),
/// `vegeta_<enc>.json` (a vegeta target for `url`) and `grpc_<enc>.bin` (the protobuf
/// message; ghz's `--binary --data-file`, `inferwire bench attack --data-file`).
pub fn write_notebook_files(
    dir: &Path,
    encodings: &[Encoding],
    size: usize,
    url: &str,
) -> Result<Vec<PathBuf>, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut written = Vec::new();
    for &enc in encodings {
        let body = notebook_json(enc, size);
        let files = [
            (
                format!("data_{}.json", enc.name()),
                body.clone().into_bytes(),
            ),
            (
                format!("vegeta_{}.json", enc.name()),
                vegeta_target(url, body.as_bytes()).into_bytes(),
            ),
            (
                format!("grpc_{}.bin", enc.name()),
                seldon_json_to_protobuf(body.as_bytes())?,
            ),
        ];
        for (name, bytes) in files {
            let path = dir.join(name);
            std::fs::write(&path, bytes).map_err(|e| format!("{}: {e}", path.display()))?;
            written.push(path);
        }
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notebook_bodies() {
        assert_eq!(
            notebook_json(Encoding::Ndarray, 3),
            r#"{"data": {"ndarray": [[0, 1, 2]]}}"#
        );
        assert_eq!(
            notebook_json(Encoding::Tensor, 2),
            r#"{"data":{"tensor":{"shape":[1,2],"values":[0, 1]}}}"#
        );
        assert_eq!(
            notebook_json(Encoding::TfTensor, 1),
            r#"{"data":{"tftensor":{"dtype":"DT_INT64","tensorShape":{"dim":[{"size":"1"}]},"int64Val":["0"]}}}"#
        );
        assert!(notebook_json(Encoding::TfTensor, 2)
            .contains(r#""tensorContent":"AAAAAAAAAAABAAAAAAAAAA==""#));
    }

    #[test]
    fn protobuf_of_every_encoding_decodes_back() {
        for enc in ENCODINGS {
            let pb = seldon_json_to_protobuf(notebook_json(enc, 5).as_bytes()).unwrap();
            let m = proto::decode_message(pb.into(), &Limits::default()).unwrap();
            assert_eq!(m.payload.kind(), enc.name());
        }
    }
}
