//! .npy files: a tensor decoded encodes and decodes back to itself.
#![no_main]
use inferwire_codec::arrays::npy;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let limits = inferwire_fuzz::limits();
    if let Ok(t) = npy::decode(data, &limits) {
        let mut out = Vec::new();
        if npy::encode(&t, &mut out).is_ok() {
            let again = npy::decode(&out, &limits).expect("our own .npy");
            assert_eq!(format!("{t:?}"), format!("{again:?}"));
        }
    }
});
