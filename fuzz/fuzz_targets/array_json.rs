//! The JSON array layouts ({"data", "dtype"} and {"buffer", "dtype", "shape"}), told
//! apart by `classify`: nothing that is not JSON is accepted, and a tensor decoded
//! encodes and decodes back to itself.
#![no_main]
use inferwire_codec::arrays::json;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let limits = inferwire_fuzz::limits();
    if let json::Shape::Array(layout) = json::classify(data) {
        if let Ok(t) = json::decode(data, layout, &limits) {
            assert!(
                serde_json::from_slice::<serde::de::IgnoredAny>(data).is_ok(),
                "accepted non-JSON"
            );
            // Non-finite values too: they are written as the strings "NaN", "Infinity" and
            // "-Infinity", which requests carry the same way.
            let mut out = Vec::new();
            if json::encode(&t, layout, &mut out).is_ok() {
                let again = json::decode(&out, layout, &limits).expect("our own JSON");
                assert_eq!(format!("{t:?}"), format!("{again:?}"));
            }
        }
    }
});
