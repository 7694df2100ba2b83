//! Triton's generate bodies (flat inputs by name): nothing that is not a JSON object is
//! accepted, and telling them from V2 requests never fails.
#![no_main]
use inferwire_codec::protocol::v2::generate;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = generate::is_v2_request(data);
    if generate::decode_request(data, &inferwire_fuzz::limits()).is_ok() {
        let v: serde_json::Value = serde_json::from_slice(data).expect("accepted non-JSON");
        assert!(v.is_object(), "accepted a body that is not an object");
    }
});
