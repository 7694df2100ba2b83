//! V2 JSON inference requests: nothing that is not JSON is accepted.
#![no_main]
use bytes::Bytes;
use inferwire_codec::protocol::v2::json;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let ok = json::decode_request(
        Bytes::copy_from_slice(data),
        None,
        &inferwire_fuzz::limits(),
    )
    .is_ok();
    if ok {
        assert!(
            serde_json::from_slice::<serde::de::IgnoredAny>(data).is_ok(),
            "accepted non-JSON"
        );
    }
});
