//! How fast V2 JSON requests decode and responses encode (100,000 INT64 elements).
use std::time::Instant;

use bytes::Bytes;
use inferwire_codec::protocol::v2::{json, InferOutput, InferResponse};
use inferwire_codec::Limits;

fn main() {
    let data: Vec<String> = (0..100_000).map(|i| i.to_string()).collect();
    let body = format!(
        r#"{{"inputs":[{{"name":"x","shape":[100000],"datatype":"INT64","data":[{}]}}]}}"#,
        data.join(",")
    );
    let body = Bytes::from(body);
    let n = 200;
    let start = Instant::now();
    let mut last = None;
    for _ in 0..n {
        last = Some(json::decode_request(body.clone(), None, &Limits::default()).unwrap());
    }
    let per = start.elapsed() / n;
    let req = last.unwrap();
    println!("decode: {per:?} per request ({} bytes)", body.len());
    let resp = InferResponse {
        model_name: "m".into(),
        outputs: vec![InferOutput {
            name: "y".into(),
            tensor: req.inputs[0].tensor.clone(),
            parameters: Default::default(),
        }],
        ..Default::default()
    };
    let start = Instant::now();
    for _ in 0..n {
        let mut out = Vec::new();
        json::encode_response(&resp, |_| false, &mut out).unwrap();
    }
    println!("encode: {:?} per response", start.elapsed() / n);
}
