//! The V2 binary tensor extension: the first two bytes give the JSON header's length
//! (Inference-Header-Content-Length), the rest is the body (header, then blobs).
#![no_main]
use bytes::Bytes;
use inferwire_codec::protocol::v2::json;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let header_len = usize::from(u16::from_le_bytes([data[0], data[1]]));
    let body = Bytes::copy_from_slice(&data[2..]);
    let _ = json::decode_request(body, Some(header_len), &inferwire_fuzz::limits());
});
