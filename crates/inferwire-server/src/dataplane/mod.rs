//! The V2 dataplane: the one way in for every V2 inference, whatever the transport (REST
//! or gRPC) and the shape (unary, streamed, Triton's `generate`). Its steps, in order:
//! the request is checked against the model's configuration where it has one
//! (`model_config`; a mismatch in the dialect's words); outputs asked into shared memory
//! get their regions checked (`shared_memory`); a request of a sequence another worker
//! owns is run there (`sequences`, answered by `forwarded` on the owner); the model runs
//! (`runner`; a failure counted by why); the outputs the request asked for are kept, in
//! its order; shared-memory outputs are written. What a dialect adds
//! happens before (decoding, `Dialect::prepare`) and after (`Dialect::reply_headers`),
//! in the transports. Metadata, statistics and model configuration are in `metadata`.
mod forwarded;
mod metadata;

use std::time::Instant;

use inferwire_codec::protocol::v2::{pick_outputs, InferRequest, InferResponse};

use crate::app::App;
use crate::error::{Kind, ServeError};
use crate::metrics::Protocol;
use crate::models::Served;
use crate::runner::CallTiming;
use crate::shared_memory;
use crate::stream::PieceStream;

pub use forwarded::listen as serve_forwarded;
pub use metadata::{model_config, model_metadata, statistics};

/// How the caller wants the answer.
pub enum Shape {
    /// One reply, by `deadline` (the server's timeout, or the client's); a traced
    /// request's `CallTiming` is told when the model ran.
    Whole(Option<Instant>, Option<CallTiming>),
    /// Pieces as the model yields them, read by this transport.
    Pieces(Protocol),
}

/// The answer, in the shape asked for.
pub enum Answer {
    Whole(InferResponse),
    Pieces(PieceStream),
}

/// Runs a V2 inference on `model`.
pub async fn infer(
    app: &App,
    model: &Served,
    mut req: InferRequest,
    shape: Shape,
) -> Result<Answer, ServeError> {
    if let Some(contract) = &model.contract {
        contract
            .check(&mut req)
            .map_err(|m| app.config.dialect.mismatch(&m, &model.name, &req.id))?;
    }
    let wanted: Vec<String> = req.outputs.iter().map(|o| o.name.clone()).collect();
    let (deadline, timing) = match shape {
        Shape::Whole(deadline, timing) => (deadline, timing),
        Shape::Pieces(protocol) => return stream(app, model, req, wanted, protocol).await,
    };
    let targets = shared_memory::output_targets(&app.shared_memory, &mut req)?;
    let mut response = match app
        .sequences
        .get()
        .and_then(|r| Some((r, r.elsewhere(&req)?)))
    {
        Some((route, owner)) => {
            route
                .forward(
                    owner,
                    model,
                    req,
                    deadline,
                    &app.config.limits,
                    app.config.max_body_bytes,
                )
                .await?
        }
        None => {
            let id = req.id.clone();
            let inferred = model
                .runner
                .infer_timed(req, deadline, timing)
                .await
                .inspect_err(|e| failed(app, model, e))?;
            InferResponse {
                model_name: model.name.clone(),
                model_version: model.version.clone(),
                id,
                parameters: inferred.parameters,
                outputs: pick_outputs(&wanted, inferred.outputs)?,
            }
        }
    };
    shared_memory::write_outputs(targets, &mut response)?;
    Ok(Answer::Whole(response))
}

/// `infer` for one whole reply.
pub async fn infer_whole(
    app: &App,
    model: &Served,
    req: InferRequest,
    deadline: Option<Instant>,
) -> Result<InferResponse, ServeError> {
    infer_timed(app, model, req, deadline, None).await
}

/// `infer_whole` for a traced request: `timing` is told when the model call ran.
pub async fn infer_timed(
    app: &App,
    model: &Served,
    req: InferRequest,
    deadline: Option<Instant>,
    timing: Option<CallTiming>,
) -> Result<InferResponse, ServeError> {
    match infer(app, model, req, Shape::Whole(deadline, timing)).await? {
        Answer::Whole(response) => Ok(response),
        Answer::Pieces(_) => Err(ServeError::new(
            Kind::Internal,
            "a stream for a whole reply",
        )),
    }
}

/// `infer` for a stream of pieces.
pub async fn infer_pieces(
    app: &App,
    model: &Served,
    req: InferRequest,
    protocol: Protocol,
) -> Result<PieceStream, ServeError> {
    match infer(app, model, req, Shape::Pieces(protocol)).await? {
        Answer::Pieces(pieces) => Ok(pieces),
        Answer::Whole(_) => Err(ServeError::new(
            Kind::Internal,
            "a whole reply for a stream",
        )),
    }
}

/// A streamed inference: refused at once when the worker has `stream_max_open` streams
/// open; the model's start is bounded by the request timeout, the stream by its limits.
async fn stream(
    app: &App,
    model: &Served,
    req: InferRequest,
    wanted: Vec<String>,
    protocol: Protocol,
) -> Result<Answer, ServeError> {
    let open = app.streams.admit()?;
    let limits = app.config.streaming.clone();
    let deadline = app.deadline(Instant::now(), None);
    let rx = model
        .runner
        .stream(req, deadline, open, limits.idle)
        .await
        .inspect_err(|e| failed(app, model, e))?;
    Ok(Answer::Pieces(PieceStream::new(
        rx,
        limits,
        app.metrics,
        model.slot,
        protocol,
        wanted,
    )))
}

/// A failed inference counted by why (Triton's `reason` label on its failure counter).
#[cold]
fn failed(app: &App, model: &Served, e: &ServeError) {
    app.metrics
        .inference_failed(model.slot, crate::metrics::Failure::of(e.kind));
}
