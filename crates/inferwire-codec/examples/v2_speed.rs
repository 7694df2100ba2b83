//! How fast V2 JSON requests decode and responses encode (100,000 INT64 elements), beside
//! serde_json reading the same body into typed structs and writing the same numbers, and
//! a plain copy of the body for scale.
use std::time::{Duration, Instant};

use bytes::Bytes;
use inferwire_codec::protocol::v2::{json, InferOutput, InferResponse};
use inferwire_codec::Limits;
use serde::Deserialize;

#[derive(Deserialize)]
#[allow(dead_code)] // read to be parsed, not used
struct Request {
    inputs: Vec<Input>,
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct Input {
    name: String,
    shape: Vec<u64>,
    datatype: String,
    data: Vec<i64>,
}

/// The median of `runs` timings of `f`.
fn median(runs: usize, mut f: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    times.sort();
    times[runs / 2]
}

fn rate(bytes: usize, d: Duration) -> String {
    format!(
        "{d:>10.2?}  {:.2} GB/s",
        bytes as f64 / d.as_secs_f64() / 1e9
    )
}

fn main() {
    let data: Vec<String> = (0..100_000).map(|i| i.to_string()).collect();
    let body = format!(
        r#"{{"inputs":[{{"name":"x","shape":[100000],"datatype":"INT64","data":[{}]}}]}}"#,
        data.join(",")
    );
    let body = Bytes::from(body);
    let n = 301;
    let mut last = None;
    let decode = median(n, || {
        last = Some(json::decode_request(body.clone(), None, &Limits::default()).unwrap());
    });
    let serde_decode = median(n, || {
        let r: Request = serde_json::from_slice(&body).unwrap();
        assert_eq!(r.inputs[0].data.len(), 100_000);
    });
    let req = last.unwrap();
    let resp = InferResponse {
        model_name: "m".into(),
        outputs: vec![InferOutput {
            name: "y".into(),
            tensor: req.inputs[0].tensor.clone(),
            parameters: Default::default(),
        }],
        ..Default::default()
    };
    let mut size = 0;
    let encode = median(n, || {
        let mut out = Vec::new();
        json::encode_response(&resp, |_| false, &mut out).unwrap();
        size = out.len();
    });
    let numbers: Vec<i64> = (0..100_000).collect();
    let serde_encode = median(n, || {
        let out = serde_json::to_vec(&numbers).unwrap();
        assert!(out.len() > 500_000);
    });
    let copy = median(n, || {
        let copied = body.to_vec();
        assert_eq!(copied.len(), body.len());
    });
    println!("request body: {} bytes; response: {size} bytes", body.len());
    println!(
        "decode, inferwire:             {}",
        rate(body.len(), decode)
    );
    println!(
        "decode, serde_json (typed):    {}",
        rate(body.len(), serde_decode)
    );
    println!("encode, inferwire:             {}", rate(size, encode));
    println!(
        "encode, serde_json (the data): {}",
        rate(size, serde_encode)
    );
    println!("copy of the request body:      {}", rate(body.len(), copy));
}
