//! One gRPC stream (`ModelStreamInfer`, bidirectional): one request, then the client's
//! half-close, then every reply until the server ends the stream. Replies are Triton's
//! `ModelStreamInferResponse` wrapper or MLServer's bare `ModelInferResponse`, read only
//! as far as the report needs (outputs are counted, never decoded).
use std::collections::HashMap;

use bytes::{Buf, Bytes, BytesMut};
use h2::client::SendRequest;
use inferwire_codec::pb::inference::{infer_parameter::ParameterChoice, InferParameter};

use super::tally::{End, Tally};
use super::ReplyShape;
use crate::target::Target;
use crate::transport::grpc_code_name;

/// The largest reply accepted (gRPC's own default is 4 MiB).
const MAX_MESSAGE: usize = 64 << 20;

/// Triton's `ModelStreamInferResponse`.
#[derive(Clone, PartialEq, prost::Message)]
struct StreamReply {
    #[prost(string, tag = "1")]
    error_message: String,
    #[prost(message, optional, tag = "2")]
    infer_response: Option<Reply>,
    /// `ModelInferResponse`'s `id` and `outputs`: set only when the reply is a bare
    /// `ModelInferResponse` (whose `model_name` would pass for `error_message`).
    #[prost(string, tag = "3")]
    stray_id: String,
    #[prost(bytes = "bytes", repeated, tag = "5")]
    stray_outputs: Vec<Bytes>,
}

/// The fields of `ModelInferResponse` that say whether a reply is a piece; outputs stay
/// undecoded bytes.
#[derive(Clone, PartialEq, prost::Message)]
struct Reply {
    #[prost(map = "string, message", tag = "4")]
    parameters: HashMap<String, InferParameter>,
    #[prost(bytes = "bytes", repeated, tag = "5")]
    outputs: Vec<Bytes>,
    #[prost(bytes = "bytes", repeated, tag = "6")]
    raw_output_contents: Vec<Bytes>,
}

/// What one reply is to the report.
#[derive(Debug, PartialEq)]
enum Kind {
    Piece,
    /// Triton's empty last reply (`triton_final_response: true`, no outputs).
    Final,
    Error(String),
}

fn kind(shape: ReplyShape, message: Bytes) -> Result<Kind, String> {
    let reply = match shape {
        ReplyShape::Mlserver => {
            // Decoded all the same: a reply that is not a ModelInferResponse is an error.
            let _: Reply = prost::Message::decode(message)
                .map_err(|e| format!("a reply that is not a ModelInferResponse: {e}"))?;
            return Ok(Kind::Piece);
        }
        ReplyShape::Triton => {
            let r: StreamReply = prost::Message::decode(message).map_err(|e| {
                format!("a reply that is not a ModelStreamInferResponse: {e} (--reply mlserver for bare ModelInferResponse replies)")
            })?;
            if !r.stray_id.is_empty() || !r.stray_outputs.is_empty() {
                return Err("a bare ModelInferResponse, not a ModelStreamInferResponse: the server answers as MLServer does (--reply mlserver)".into());
            }
            if !r.error_message.is_empty() {
                return Ok(Kind::Error(r.error_message));
            }
            match r.infer_response {
                Some(reply) => reply,
                None => return Ok(Kind::Final), // nothing in it: no piece either
            }
        }
    };
    let last = matches!(
        reply
            .parameters
            .get("triton_final_response")
            .and_then(|p| p.parameter_choice.as_ref()),
        Some(ParameterChoice::BoolParam(true))
    );
    let empty = reply.outputs.is_empty() && reply.raw_output_contents.is_empty();
    Ok(if last && empty {
        Kind::Final
    } else {
        Kind::Piece
    })
}

/// The next length-prefixed message in `buf`, once it is all there.
fn next_message(buf: &mut BytesMut) -> Result<Option<Bytes>, String> {
    if buf.len() < 5 {
        return Ok(None);
    }
    if buf[0] != 0 {
        return Err("a compressed reply (grpc-encoding is not supported)".into());
    }
    let len = u32::from_be_bytes([buf[1], buf[2], buf[3], buf[4]]) as usize;
    if len > MAX_MESSAGE {
        return Err(format!("a reply of {len} bytes (at most {MAX_MESSAGE})"));
    }
    if buf.len() < 5 + len {
        return Ok(None);
    }
    buf.advance(5);
    Ok(Some(buf.split_to(len).freeze()))
}

/// Sends the request and reads its replies; how the stream ended, and whether the
/// connection can carry the next one.
pub async fn stream(
    s: &mut SendRequest<Bytes>,
    t: &Target,
    shape: ReplyShape,
    tally: &mut Tally,
) -> (End, bool) {
    match exchange(s, t, shape, tally).await {
        Ok(end) => (end, true),
        // A reset stream leaves the connection as it was; anything else may not have.
        Err(e) => (
            End::failed("error", crate::transport::error_text(&e)),
            e.is_reset(),
        ),
    }
}

async fn exchange(
    s: &mut SendRequest<Bytes>,
    t: &Target,
    shape: ReplyShape,
    tally: &mut Tally,
) -> Result<End, h2::Error> {
    std::future::poll_fn(|cx| s.poll_ready(cx)).await?;
    let (res, mut out) = s.send_request(t.head(), false)?;
    // The one request and the half-close, queued together.
    out.send_data(t.body.clone(), true)?;
    let res = res.await?;
    let status = res.status().as_u16();
    if status != 200 {
        return Ok(End::failed(
            &status.to_string(),
            format!("HTTP status {status}"),
        ));
    }
    let mut grpc_status = header_i32(res.headers(), "grpc-status");
    let mut grpc_message = header_text(res.headers(), "grpc-message");
    let mut body = res.into_body();
    let mut buf = BytesMut::new();
    while let Some(chunk) = body.data().await {
        let d = chunk?;
        body.flow_control().release_capacity(d.len())?;
        buf.extend_from_slice(&d);
        loop {
            let message = match next_message(&mut buf) {
                Ok(Some(m)) => m,
                Ok(None) => break,
                Err(e) => return Ok(End::failed("bad reply", e)),
            };
            let n = message.len();
            match kind(shape, message) {
                Ok(Kind::Piece) => tally.piece(n),
                Ok(Kind::Final) => {}
                // Dropping the stream resets it: this request is over.
                Ok(Kind::Error(m)) => return Ok(End::failed("error reply", m)),
                Err(e) => return Ok(End::failed("bad reply", e)),
            }
        }
    }
    if let Some(tr) = body.trailers().await? {
        grpc_status = header_i32(&tr, "grpc-status").or(grpc_status);
        grpc_message = header_text(&tr, "grpc-message").or(grpc_message);
    }
    Ok(match grpc_status {
        Some(0) if buf.is_empty() => End::ok("OK"),
        Some(0) => End::failed("bad reply", "the stream ended inside a reply"),
        Some(c) => End::failed(grpc_code_name(c), grpc_message.unwrap_or_default()),
        None => End::failed("error", "gRPC response without grpc-status"),
    })
}

fn header_i32(h: &http::HeaderMap, name: &str) -> Option<i32> {
    h.get(name)?.to_str().ok()?.trim().parse().ok()
}

fn header_text(h: &http::HeaderMap, name: &str) -> Option<String> {
    Some(crate::transport::percent_decode(
        h.get(name)?.to_str().ok()?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use inferwire_codec::pb::inference::{model_infer_response, ModelInferResponse};
    use prost::Message;

    fn triton(error: &str, response: Option<ModelInferResponse>) -> Bytes {
        let mut b = Vec::new();
        if !error.is_empty() {
            prost::encoding::string::encode(1, &error.to_string(), &mut b);
        }
        if let Some(r) = response {
            prost::encoding::message::encode(2, &r, &mut b);
        }
        b.into()
    }

    fn response(outputs: usize, last: bool) -> ModelInferResponse {
        let mut r = ModelInferResponse {
            id: "7".into(),
            ..Default::default()
        };
        for _ in 0..outputs {
            r.outputs.push(model_infer_response::InferOutputTensor {
                name: "text".into(),
                datatype: "BYTES".into(),
                shape: vec![1],
                ..Default::default()
            });
        }
        let p = InferParameter {
            parameter_choice: Some(ParameterChoice::BoolParam(last)),
        };
        r.parameters.insert("triton_final_response".into(), p);
        r
    }

    #[test]
    fn triton_replies_pieces_finals_and_errors() {
        let t = ReplyShape::Triton;
        assert_eq!(
            kind(t, triton("", Some(response(1, false)))),
            Ok(Kind::Piece)
        );
        // A decoupled model's one reply that is also the last: still a piece.
        assert_eq!(
            kind(t, triton("", Some(response(1, true)))),
            Ok(Kind::Piece)
        );
        assert_eq!(
            kind(t, triton("", Some(response(0, true)))),
            Ok(Kind::Final)
        );
        assert_eq!(
            kind(t, triton("model failed", None)),
            Ok(Kind::Error("model failed".into()))
        );
        let bare = Bytes::from(response(1, false).encode_to_vec());
        assert_eq!(kind(ReplyShape::Mlserver, bare.clone()), Ok(Kind::Piece));
        assert!(kind(t, bare).unwrap_err().contains("--reply mlserver"));
        assert!(kind(t, Bytes::from_static(b"\xff\xff")).is_err());
    }

    #[test]
    fn messages_are_split_from_the_frames() {
        let mut buf = BytesMut::from(&b"\x00\x00\x00\x00\x02ab\x00\x00\x00\x00\x03c"[..]);
        assert_eq!(next_message(&mut buf).unwrap().unwrap(), &b"ab"[..]);
        assert_eq!(next_message(&mut buf).unwrap(), None);
        buf.extend_from_slice(b"de");
        assert_eq!(next_message(&mut buf).unwrap().unwrap(), &b"cde"[..]);
        let mut big = BytesMut::from(&b"\x00\xff\xff\xff\xff"[..]);
        assert!(next_message(&mut big).is_err());
        let mut compressed = BytesMut::from(&b"\x01\x00\x00\x00\x00"[..]);
        assert!(next_message(&mut compressed).is_err());
    }
}
