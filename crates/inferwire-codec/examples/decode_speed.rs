//! Decode speed of the notebook's 100,000-integer requests (JSON), single thread:
//! `cargo run --release -p inferwire-codec --example decode_speed`
use std::time::Instant;

use inferwire_codec::protocol::seldon::json::decode_message;
use inferwire_codec::Limits;

fn main() {
    let vals: Vec<String> = (0..100_000).map(|v| v.to_string()).collect();
    let list = format!("[{}]", vals.join(", "));
    let bodies = [
        ("ndarray", format!(r#"{{"data": {{"ndarray": [{list}]}}}}"#)),
        (
            "tensor",
            format!(r#"{{"data":{{"tensor":{{"shape":[1,100000],"values":{list}}}}}}}"#),
        ),
    ];
    let limits = Limits::default();
    for (name, body) in &bodies {
        let rounds = 300;
        let mut times = Vec::with_capacity(rounds);
        for _ in 0..rounds {
            let start = Instant::now();
            let m = decode_message(body.as_bytes(), &limits).expect("decodes");
            times.push(start.elapsed());
            std::hint::black_box(m);
        }
        times.sort();
        let median = times[rounds / 2];
        let mb_s = body.len() as f64 / median.as_secs_f64() / 1e6;
        println!(
            "{name:8} {} bytes: median {median:?}, {mb_s:.0} MB/s",
            body.len()
        );
    }
}
