//! msgpack-numpy bodies: a tensor decoded encodes and decodes back to itself.
#![no_main]
use inferwire_codec::arrays::msgpack;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let limits = inferwire_fuzz::limits();
    if let Ok(t) = msgpack::decode(data, &limits) {
        let mut out = Vec::new();
        if msgpack::encode(&t, &mut out).is_ok() {
            let again = msgpack::decode(&out, &limits).expect("our own msgpack");
            assert_eq!(format!("{t:?}"), format!("{again:?}"));
        }
    }
});
