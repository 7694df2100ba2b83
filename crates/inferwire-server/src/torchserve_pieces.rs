//! A TorchServe handler's answer as its transports (`rest::torchserve`,
//! `grpc::torchserve`) read it. A whole reply is the output `body`: one element, or, when
//! the handler sent intermediate responses during a call that could not stream them (one
//! run inline on an I/O thread), those and then the reply, one element each; its status,
//! content type and headers are the response's parameters (the first piece's when there
//! are several, as TorchServe's chunked reply takes its head from its first chunk). Once
//! the handler sends a request a piece during the call (`stream::handoff`), the answer is
//! a stream instead: each piece an output `body` of one element with those parameters on
//! the output, the reply last (`last`), or the handler's failure in its place.
use bytes::Bytes;
use inferwire_codec::protocol::v2::{InferOutput, Parameters};
use inferwire_codec::TensorData;
use serde_json::Value;
use tokio::sync::OwnedSemaphorePermit;

use crate::app::App;
use crate::dialect::TORCHSERVE_BODY as BODY;
use crate::error::{Kind, ServeError};
use crate::metrics::Protocol;
use crate::models::Served;
use crate::stream::{PieceStream, Receiver};

pub use crate::stream::handoff::TOKEN;

/// One piece of a streamed answer.
pub struct Piece {
    pub data: Bytes,
    /// `status`, `content_type`, `headers`, as a whole reply's.
    pub parameters: Parameters,
    /// The handler's reply: the stream ends with it.
    pub last: bool,
}

/// A streamed answer, holding its place among the worker's open streams.
pub struct Streamed {
    pub pieces: PieceStream,
    _open: OwnedSemaphorePermit,
}

/// The `body` output's elements (at least one).
pub fn parts(outputs: Vec<InferOutput>) -> Result<Vec<Bytes>, ServeError> {
    outputs
        .into_iter()
        .find(|o| o.name == BODY)
        .and_then(|o| match o.tensor.data {
            TensorData::Bytes(b) if !b.is_empty() => Some(b),
            _ => None,
        })
        .ok_or_else(no_body)
}

/// A piece of a streamed answer, read from its outputs.
pub fn piece(outputs: Vec<InferOutput>) -> Result<Piece, ServeError> {
    let body = outputs
        .into_iter()
        .find(|o| o.name == BODY)
        .ok_or_else(no_body)?;
    let data = match body.tensor.data {
        TensorData::Bytes(mut b) if b.len() == 1 => b.pop().unwrap_or_default(),
        _ => return Err(no_body()),
    };
    let last = body.parameters.get("last") == Some(&Value::Bool(true));
    Ok(Piece {
        data,
        parameters: body.parameters,
        last,
    })
}

/// The stream of a request whose handler sent it a piece: refused (503, and the handler's
/// next piece finds its reader gone) when the worker has `--stream-max-open` open.
pub fn open(
    app: &App,
    model: &Served,
    protocol: Protocol,
    rx: Receiver,
) -> Result<Streamed, ServeError> {
    let open = app.streams.admit()?;
    let pieces = PieceStream::new(
        rx,
        app.config.streaming.clone(),
        app.metrics,
        model.slot,
        protocol,
        Vec::new(),
    );
    Ok(Streamed {
        pieces,
        _open: open,
    })
}

/// A stream that ended without the handler's reply (its model gave up on a reader that
/// took nothing, or failed outside the handler).
#[cold]
pub fn cut_short() -> ServeError {
    ServeError::new(
        Kind::Internal,
        "the handler's stream ended before its reply (see --stream-idle-timeout)",
    )
}

#[cold]
fn no_body() -> ServeError {
    ServeError::new(
        Kind::Internal,
        "the model's reply has no body (a TorchServe handler model answers one)",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use inferwire_codec::Tensor;

    fn output(data: Vec<&'static [u8]>, parameters: Parameters) -> InferOutput {
        InferOutput {
            name: BODY.into(),
            tensor: Tensor {
                shape: vec![data.len()],
                data: TensorData::Bytes(data.into_iter().map(Bytes::from_static).collect()),
            },
            parameters,
        }
    }

    #[test]
    fn a_piece_carries_its_parameters_and_the_last_one_says_so() {
        let mut p = Parameters::new();
        p.insert("status".into(), Value::from(200));
        let first = piece(vec![output(vec![b"a"], p.clone())]).unwrap();
        assert_eq!((first.data.as_ref(), first.last), (&b"a"[..], false));
        assert_eq!(first.parameters["status"], 200);
        p.insert("last".into(), Value::Bool(true));
        assert!(piece(vec![output(vec![b"b"], p)]).unwrap().last);
        assert!(piece(vec![output(vec![b"a", b"b"], Parameters::new())]).is_err());
        assert_eq!(
            parts(vec![output(vec![b"a", b"b"], Parameters::new())]).unwrap(),
            [Bytes::from_static(b"a"), Bytes::from_static(b"b")]
        );
        assert!(parts(Vec::new()).is_err());
    }
}
