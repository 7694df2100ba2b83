//! `inference.ModelStreamInferResponse`, written by hand instead of generated: the same
//! fields (`error_message = 1`, `infer_response = 2`), and one more choice that is not on
//! the wire. Triton answers `ModelStreamInfer` with this wrapper; MLServer answers the same
//! method with bare `ModelInferResponse`s. With `bare` set, a reply encodes as its
//! `infer_response` alone, so one generated gRPC service can speak either.
use prost::bytes::{Buf, BufMut};
use prost::encoding::{self, DecodeContext, WireType};
use prost::DecodeError;

use crate::pb::inference::ModelInferResponse;

#[derive(Clone, PartialEq, Default, Debug)]
pub struct ModelStreamInferResponse {
    pub error_message: String,
    pub infer_response: Option<ModelInferResponse>,
    /// Encode as MLServer does: the `infer_response`'s fields only (decoding always reads
    /// the wrapper).
    pub bare: bool,
}

impl prost::Message for ModelStreamInferResponse {
    fn encode_raw(&self, buf: &mut impl BufMut) {
        if self.bare {
            if let Some(r) = &self.infer_response {
                r.encode_raw(buf);
            }
            return;
        }
        if !self.error_message.is_empty() {
            encoding::string::encode(1, &self.error_message, buf);
        }
        if let Some(r) = &self.infer_response {
            encoding::message::encode(2, r, buf);
        }
    }

    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), DecodeError> {
        match tag {
            1 => encoding::string::merge(wire_type, &mut self.error_message, buf, ctx),
            2 => encoding::message::merge(
                wire_type,
                self.infer_response.get_or_insert_with(Default::default),
                buf,
                ctx,
            ),
            _ => encoding::skip_field(wire_type, tag, buf, ctx),
        }
    }

    fn encoded_len(&self) -> usize {
        if self.bare {
            return self
                .infer_response
                .as_ref()
                .map_or(0, prost::Message::encoded_len);
        }
        let error = if self.error_message.is_empty() {
            0
        } else {
            encoding::string::encoded_len(1, &self.error_message)
        };
        error
            + self
                .infer_response
                .as_ref()
                .map_or(0, |r| encoding::message::encoded_len(2, r))
    }

    fn clear(&mut self) {
        *self = Self::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    #[test]
    fn the_wrapper_or_the_bare_response() {
        let response = ModelInferResponse {
            model_name: "m".into(),
            id: "7".into(),
            ..Default::default()
        };
        let wrapped = ModelStreamInferResponse {
            error_message: "oops".into(),
            infer_response: Some(response.clone()),
            bare: false,
        };
        let bytes = wrapped.encode_to_vec();
        assert_eq!(bytes.len(), wrapped.encoded_len());
        let back = ModelStreamInferResponse::decode(bytes.as_slice()).unwrap();
        assert_eq!(back, wrapped);
        let bare = ModelStreamInferResponse {
            bare: true,
            ..wrapped
        };
        let bytes = bare.encode_to_vec();
        assert_eq!(bytes.len(), bare.encoded_len());
        assert_eq!(
            ModelInferResponse::decode(bytes.as_slice()).unwrap(),
            response
        );
    }
}
