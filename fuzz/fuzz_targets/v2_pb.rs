//! V2 gRPC ModelInferRequest, typed contents and raw_input_contents.
#![no_main]
use inferwire_codec::pb::inference::ModelInferRequest;
use inferwire_codec::protocol::v2::proto;
use libfuzzer_sys::fuzz_target;
use prost::Message;

fuzz_target!(|data: &[u8]| {
    if let Ok(req) = ModelInferRequest::decode(data) {
        let _ = proto::from_pb(req, &inferwire_fuzz::limits());
    }
});
