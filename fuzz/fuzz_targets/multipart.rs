//! multipart/form-data: the first line of the input is the boundary, the rest the body.
#![no_main]
use bytes::Bytes;
use inferwire_codec::multipart;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some(split) = data.iter().position(|&b| b == b'\n') else {
        return;
    };
    let Ok(boundary) = std::str::from_utf8(&data[..split]) else {
        return;
    };
    let ct = format!("multipart/form-data; boundary={boundary}");
    let Ok(boundary) = multipart::boundary(&ct) else {
        return;
    };
    let body = Bytes::copy_from_slice(&data[split + 1..]);
    if let Ok(parts) = multipart::parse(&body, &boundary) {
        for p in parts {
            assert!(p.body.len() <= body.len());
        }
    }
});
