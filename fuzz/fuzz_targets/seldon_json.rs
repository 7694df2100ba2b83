//! Seldon JSON: the fast decoder and the general one agree on every input the fast one
//! takes, and nothing that is not JSON is accepted. The reference is serde_json's own
//! reading of any JSON (`IgnoredAny`), which, like the decoders, does not check the UTF-8
//! of strings it skips (unknown keys).
#![no_main]
use inferwire_codec::protocol::seldon::json;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let limits = inferwire_fuzz::limits();
    let general = json::decode_general(data, &limits);
    if general.is_ok() {
        assert!(
            serde_json::from_slice::<serde::de::IgnoredAny>(data).is_ok(),
            "accepted a body that is not JSON"
        );
    }
    if let Some(Ok(fast)) = json::decode_fast(data, &limits) {
        let general = general.expect("the fast decoder took a body the general one refuses");
        assert_eq!(format!("{fast:?}"), format!("{general:?}"));
    }
    let _ = json::decode_message(data, &limits);
    let _ = json::decode_feedback(data, &limits);
});
