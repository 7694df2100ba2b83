//! Seed 001, images over REST and gRPC: a structured "basic" request, a base64 image and
//! a binary image, at the seed's three image sizes, 20 concurrent requests, reported as
//! the seed does: seconds per round of 20 requests (20 ÷ requests/s).
//!
//! On inferwire (any model with a small answer: `inferwire serve noop`, or
//! `benchmarks/models/images.py:Seed001`, which also decodes the base64 image):
//! REST sends the basic request and `{"image": base64}` as plain JSON and the image as an
//! `image/jpeg` body; gRPC sends them as a Seldon `jsonData` and `binData`. The image is
//! incompressible bytes of the seed's size framed as a JPEG (SOI ... EOI): the servers in
//! the seed never decode it. benchmarks/images_numpy.py runs the same cells against the
//! seed's own servers (FastAPI and grpcio) with real JPEGs.
use std::fmt::Write as _;

use bytes::Bytes;
use http::Method;

use super::cells::{self, Measured, Options, Server};
use crate::payload::seldon_json_to_protobuf;
use crate::target::Target;

/// Seconds per round of 20: (basic, base64, binary) over REST, then over gRPC.
pub type Figures = [[f64; 3]; 2];

/// The seed's resolutions, binary sizes (MB) and figures.
pub const PUBLISHED: &[((u32, u32), f64, Figures)] = &[
    (
        (360, 640),
        0.229,
        [[0.0723, 0.0943, 0.0572], [0.0093, 0.0179, 0.0120]],
    ),
    (
        (720, 1280),
        0.870,
        [[0.0611, 0.2350, 0.0872], [0.0090, 0.0926, 0.0570]],
    ),
    (
        (1080, 1920),
        2.320,
        [[0.0583, 0.8056, 0.1909], [0.0097, 0.2793, 0.1974]],
    ),
];

pub const CLIENTS: usize = 20;
const KINDS: [&str; 3] = ["basic", "base64", "binary"];
const TRANSPORTS: [&str; 2] = ["REST", "gRPC"];
const SELDON_PREDICT: &str = "seldon.protos.Seldon/Predict";

/// The seed's structured request: two strings, an integer and a small map.
fn basic() -> serde_json::Value {
    serde_json::json!({
        "field1": "a".repeat(100),
        "field2": "b".repeat(100),
        "field3": 42,
        "field4": {"x": 1, "y": 2},
    })
}

/// `mb` megabytes framed as a JPEG.
pub fn image(mb: f64) -> Vec<u8> {
    let len = (mb * 1e6) as usize;
    let mut b = cells::noise(len, 1);
    b[..2].copy_from_slice(&[0xff, 0xd8]);
    b[len - 2..].copy_from_slice(&[0xff, 0xd9]);
    b
}

pub fn targets(server: &Server, sizes: &[usize]) -> Result<Vec<(String, Target)>, String> {
    let url = format!("{}/api/v1.0/predictions", server.rest.trim_end_matches('/'));
    let json = vec![("Content-Type".to_string(), "application/json".to_string())];
    let jpeg = vec![("Content-Type".to_string(), "image/jpeg".to_string())];
    let mut out = Vec::new();
    for &i in sizes {
        let ((h, w), mb, _) = PUBLISHED[i];
        let img = image(mb);
        let b64 = base64_simd::STANDARD.encode_to_string(&img);
        let image_doc = serde_json::json!({"image": b64});
        let rest = [
            (serde_json::to_vec(&basic()).unwrap_or_default(), &json),
            (serde_json::to_vec(&image_doc).unwrap_or_default(), &json),
            (img, &jpeg),
        ];
        for (kind, (body, headers)) in KINDS.iter().zip(rest) {
            let t = Target::http(&url, Method::POST, headers, Bytes::from(body), false)?;
            out.push((format!("{h}x{w}|REST|{kind}"), t));
        }
        let grpc = [
            serde_json::json!({"jsonData": basic()}),
            serde_json::json!({"jsonData": image_doc}),
            serde_json::json!({"binData": b64}),
        ];
        for (kind, msg) in KINDS.iter().zip(grpc) {
            let pb = seldon_json_to_protobuf(&serde_json::to_vec(&msg).unwrap_or_default())?;
            let t = Target::grpc(&server.grpc, SELDON_PREDICT, &[], &pb)?;
            out.push((format!("{h}x{w}|gRPC|{kind}"), t));
        }
    }
    Ok(out)
}

pub fn run(o: &Options, sizes: &[usize]) -> Result<Vec<Measured>, String> {
    cells::run(o, |s| targets(s, sizes))
}

/// One table per size in the seed's shape, with the seed's figure beside ours.
pub fn markdown(o: &Options, measured: &[Measured]) -> String {
    let mut out = String::new();
    let per_round = |r: &crate::report::Report| o.clients as f64 / r.throughput.max(1e-9);
    for ((h, w), mb, published) in PUBLISHED {
        let rows: Vec<&Measured> = measured
            .iter()
            .filter(|m| m.key.starts_with(&format!("{h}x{w}|")))
            .collect();
        if rows.is_empty() {
            continue;
        }
        let _ = writeln!(
            out,
            "{h}×{w} (image {mb:.3} MB): seconds per round of {} concurrent requests \
             ({} ÷ requests/s), server CPU per request in brackets\n",
            o.clients, o.clients
        );
        let mut header = "| |".to_string();
        for kind in ["Basic", "B64", "Binary"] {
            for s in &o.servers {
                let _ = write!(header, " {kind}: {} |", s.name);
            }
            header.push_str(" seed |");
        }
        let cols = 1 + 3 * (o.servers.len() + 1);
        let _ = writeln!(out, "{header}\n|{}", "---|".repeat(cols));
        for (t, transport) in TRANSPORTS.iter().enumerate() {
            let mut line = format!("| {transport} |");
            for (k, kind) in KINDS.iter().enumerate() {
                let key = format!("{h}x{w}|{transport}|{kind}");
                match rows.iter().find(|m| m.key == key) {
                    Some(m) => {
                        for r in &m.reports {
                            let _ = write!(line, " {} |", cells::figure(r, per_round, 4));
                        }
                    }
                    None => line.push_str(&" - |".repeat(o.servers.len())),
                }
                let _ = write!(line, " {:.4} |", published[t][k]);
            }
            let _ = writeln!(out, "{line}");
        }
        out.push('\n');
    }
    out
}

/// `--sizes` for this suite: resolutions (`360x640`) or their heights; all by default.
pub fn parse_sizes(given: &[String]) -> Result<Vec<usize>, String> {
    if given.is_empty() {
        return Ok((0..PUBLISHED.len()).collect());
    }
    given
        .iter()
        .map(|s| {
            PUBLISHED
                .iter()
                .position(|((h, w), _, _)| *s == format!("{h}x{w}") || *s == h.to_string())
                .ok_or_else(|| {
                    format!("images: size {s:?}: expected 360x640, 720x1280 or 1080x1920")
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_have_the_seed_size_and_frame() {
        let b = image(0.229);
        assert_eq!(b.len(), 229_000);
        assert_eq!(
            (&b[..2], &b[b.len() - 2..]),
            (&[0xff, 0xd8][..], &[0xff, 0xd9][..])
        );
        assert_eq!(
            parse_sizes(&["720".into(), "1080x1920".into()]),
            Ok(vec![1, 2])
        );
        assert!(parse_sizes(&["100x100".into()]).is_err());
    }
}
