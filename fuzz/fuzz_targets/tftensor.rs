//! TensorFlow TensorProto (Seldon tftensor), from any bytes prost decodes; a tensor it
//! gives encodes back to the same tensor.
#![no_main]
use inferwire_codec::pb::tensorflow::TensorProto;
use inferwire_codec::protocol::seldon::tftensor;
use libfuzzer_sys::fuzz_target;
use prost::Message;

fuzz_target!(|data: &[u8]| {
    let Ok(p) = TensorProto::decode(data) else {
        return;
    };
    let limits = inferwire_fuzz::limits();
    if let Ok(t) = tftensor::to_tensor(p, &limits) {
        let again = tftensor::to_tensor(tftensor::from_tensor(&t), &limits).expect("round trip");
        assert_eq!(format!("{t:?}"), format!("{again:?}"));
    }
});
