//! The protobuf codec for the Seldon services: prost, with a malformed request reported
//! as INVALID_ARGUMENT naming the message (tonic's default says INTERNAL).
use std::any::TypeId;
use std::marker::PhantomData;

use bytes::{Buf, Bytes};
use inferwire_codec::pb::seldon::protos as pb;

use tonic::codec::{Codec, DecodeBuf, Decoder};
use tonic::Status;

use crate::runner::MAX_AGGREGATE_MESSAGES;
use tonic_prost::ProstEncoder;

#[derive(Debug, Clone)]
pub struct SeldonCodec<T, U>(PhantomData<(T, U)>);

impl<T, U> Default for SeldonCodec<T, U> {
    fn default() -> Self {
        Self(PhantomData)
    }
}

impl<T, U> Codec for SeldonCodec<T, U>
where
    T: prost::Message + Send + 'static,
    U: prost::Message + Default + Send + 'static,
{
    type Encode = T;
    type Decode = U;
    type Encoder = ProstEncoder<T>;
    type Decoder = MessageDecoder<U>;

    fn encoder(&mut self) -> Self::Encoder {
        ProstEncoder::default()
    }

    fn decoder(&mut self) -> Self::Decoder {
        MessageDecoder(PhantomData)
    }
}

pub struct MessageDecoder<U>(PhantomData<U>);

impl<U: prost::Message + Default + 'static> Decoder for MessageDecoder<U> {
    type Item = U;
    type Error = Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<U>, Status> {
        let bytes = contiguous(buf);
        if TypeId::of::<U>() == TypeId::of::<pb::SeldonMessageList>() {
            check_list_len(&bytes)?;
        }
        U::decode(bytes).map(Some).map_err(|e| {
            let name = std::any::type_name::<U>()
                .rsplit("::")
                .next()
                .unwrap_or("message");
            Status::invalid_argument(format!("malformed protobuf {name}: {e}"))
        })
    }
}

/// A SeldonMessageList's entries are counted before prost decodes them: an empty
/// message is two bytes on the wire and a few hundred once decoded.
fn check_list_len(mut wire: &[u8]) -> Result<(), Status> {
    let mut count = 0usize;
    while !wire.is_empty() {
        let Ok(key) = prost::encoding::decode_varint(&mut wire) else {
            return Ok(()); // malformed: prost's decode says so
        };
        let len = match key & 7 {
            2 => match prost::encoding::decode_varint(&mut wire) {
                Ok(n) => usize::try_from(n).unwrap_or(usize::MAX),
                Err(_) => return Ok(()),
            },
            0 => {
                let _ = prost::encoding::decode_varint(&mut wire);
                0
            }
            1 => 8,
            5 => 4,
            _ => return Ok(()),
        };
        if key >> 3 == 1 {
            count += 1;
            if count > MAX_AGGREGATE_MESSAGES {
                return Err(Status::invalid_argument(format!(
                    "SeldonMessageList: more than {MAX_AGGREGATE_MESSAGES} seldonMessages"
                )));
            }
        }
        if len > wire.len() {
            return Ok(());
        }
        wire = &wire[len..];
    }
    Ok(())
}

/// The whole message as one `Bytes`: a split of tonic's buffer, not a copy. Decoders then
/// read packed numbers from a plain slice, and `bytes` fields become slices of it.
fn contiguous(buf: &mut DecodeBuf<'_>) -> Bytes {
    buf.copy_to_bytes(buf.remaining())
}

/// Encodes replies with prost and hands requests over undecoded (`grpc::predict`).
#[derive(Debug, Clone, Copy, Default)]
pub struct RawRequestCodec;

impl Codec for RawRequestCodec {
    type Encode = pb::SeldonMessage;
    type Decode = Bytes;
    type Encoder = ProstEncoder<pb::SeldonMessage>;
    type Decoder = RawDecoder;

    fn encoder(&mut self) -> Self::Encoder {
        ProstEncoder::default()
    }

    fn decoder(&mut self) -> Self::Decoder {
        RawDecoder
    }
}

pub struct RawDecoder;

impl Decoder for RawDecoder {
    type Item = Bytes;
    type Error = Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<Bytes>, Status> {
        Ok(Some(contiguous(buf)))
    }
}

/// Rewrites tonic's refusals of a request message over `max_body_bytes` to name the
/// setting, and advertises the `grpc-encoding`s taken on every reply. tonic refuses a
/// message whose prefix declares too many bytes with OUT_OF_RANGE before reading it;
/// clients of gRPC servers expect RESOURCE_EXHAUSTED (as grpc-go and grpc-java send). A
/// gzip or deflate message that inflates past the limit is stopped there,
/// RESOURCE_EXHAUSTED too.
pub fn refusals_named<B>(mut res: http::Response<B>, limit: usize) -> http::Response<B> {
    // Names made once: a header looked up by a `&str` is parsed and hashed each time,
    // and this runs on every reply.
    const ACCEPT: http::HeaderName = http::HeaderName::from_static("grpc-accept-encoding");
    const STATUS: http::HeaderName = http::HeaderName::from_static("grpc-status");
    const MESSAGE: http::HeaderName = http::HeaderName::from_static("grpc-message");
    let coding = if res
        .extensions()
        .get::<super::body_guard::Deflated>()
        .is_some()
    {
        "deflate"
    } else {
        "gzip"
    };
    let headers = res.headers_mut();
    headers.insert(
        ACCEPT,
        http::HeaderValue::from_static(super::body_guard::ACCEPTED_ENCODINGS),
    );
    // A reply that is not a refusal (its status is in the trailers) ends here.
    let Some(status) = headers.get(&STATUS).map(http::HeaderValue::as_bytes) else {
        return res;
    };
    let status = Some(status);
    let message = headers
        .get(&MESSAGE)
        .and_then(|m| m.to_str().ok())
        .unwrap_or_default();
    let named = match status {
        Some(b"11")
            if message.contains("message%20length%20too%20large")
                || message.contains("message length too large") =>
        {
            format!(
                "the request message is too large: over the limit of {limit} bytes (see \
                 --max-body-bytes)"
            )
        }
        Some(b"8")
            if message.contains("exceeded%20while%20decompressing")
                || message.contains("exceeded while decompressing") =>
        {
            format!(
                "the request message inflates (grpc-encoding: {coding}) to more than the limit \
                 of {limit} bytes (see --max-body-bytes)"
            )
        }
        _ => return res,
    };
    headers.insert(STATUS, http::HeaderValue::from_static("8"));
    if let Ok(v) = http::HeaderValue::from_str(&named) {
        headers.insert(MESSAGE, v);
    }
    res
}
