//! Seldon protobuf: `decode_message` (a one-pass decoder for the common shapes, prost for
//! the rest) agrees with prost's message types on every input it takes.
#![no_main]
use bytes::Bytes;
use inferwire_codec::pb::seldon::protos::SeldonMessage;
use inferwire_codec::protocol::seldon::proto;
use libfuzzer_sys::fuzz_target;
use prost::Message;

fuzz_target!(|data: &[u8]| {
    let limits = inferwire_fuzz::limits();
    if let Ok(ours) = proto::decode_message(Bytes::copy_from_slice(data), &limits) {
        let pb = SeldonMessage::decode(data).expect("a message prost cannot read was accepted");
        let reference = proto::from_pb(pb, &limits).expect("accepted a message prost refuses");
        assert_eq!(format!("{ours:?}"), format!("{reference:?}"));
    }
});
