//! V2's `ModelStreamInfer`, Triton's streaming: the client sends `ModelInferRequest`s on
//! one call; each is decoded as `ModelInfer` decodes it, run through `dataplane::infer`,
//! and answered, in order, by `ModelStreamInferResponse`s:
//! - each piece of a streaming model, with `triton_final_response: false`, then, if the
//!   request set `triton_enable_empty_final_response`, one reply without outputs and
//!   `triton_final_response: true` (Triton's decoupled models);
//! - the one reply of a model that does not stream, with `triton_final_response: true`
//!   (Triton's other models);
//! - a request that fails (bad input, unknown model, the model's error, a limit) gets a
//!   reply with `error_message` set, and the call goes on with the next request.
//!
//! What ends the call with a status (the first two as Triton's gRPC library ends it; the
//! waits are bounded here, where Triton leaves them open): a malformed message
//! (INVALID_ARGUMENT), one over `max_body_bytes` (RESOURCE_EXHAUSTED), a message that
//! takes longer than `body_timeout` to arrive once begun, no request for
//! `stream_idle_timeout` while none is being answered (DEADLINE_EXCEEDED), and a drain
//! (UNAVAILABLE, once the request being answered is done). Auth is the layer's, once per
//! call.
//!
//! The replies are produced as tonic takes them (HTTP/2 flow control): a reader that
//! takes nothing holds the model at its next piece, and nothing is read ahead. The next
//! request is read once the previous one is answered. A call that ends (the client
//! cancelled or went away) drops its `PieceStream`, which stops the model.
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use inferwire_codec::pb::inference as pb;
use inferwire_codec::pb::inference::infer_parameter::ParameterChoice;
use inferwire_codec::protocol::v2::{proto, InferOutput, InferResponse, SHARED_MEMORY_REGION};
use tokio::time::Sleep;
use tokio_stream::Stream;
use tonic::{Status, Streaming};

use super::methods;
use crate::app::App;
use crate::error::{Kind, ServeError};
use crate::metrics::{Code, Encoding, Protocol};
use crate::models::Served;
use crate::observe::Observed;
use crate::stream::PieceStream;

/// The request parameter asking for the empty final reply, and the reply parameter that
/// marks a request's last reply (Triton's names).
pub const ENABLE_EMPTY_FINAL: &str = "triton_enable_empty_final_response";
pub const FINAL: &str = "triton_final_response";

/// How often a call waiting for its next request checks for a drain.
const DRAIN_CHECK: Duration = Duration::from_secs(1);

type Reply = Result<pb::ModelStreamInferResponse, Status>;
type Starting =
    Pin<Box<dyn Future<Output = Result<(PieceStream, Arc<Served>), ServeError>> + Send>>;

/// The replies of one `ModelStreamInfer` call, as tonic sends them.
pub struct Replies {
    app: Arc<App>,
    inbound: Streaming<pb::ModelInferRequest>,
    state: State,
    /// The call's `x-request-id`, for requests without an `id`.
    header_id: String,
    /// The call's `grpc-encoding` when deflate (a refusal names the coding).
    deflate: bool,
    /// The call's metadata for the model (MLServer's dialect: `parameters.headers`).
    headers: Option<serde_json::Value>,
    /// Replies as MLServer shapes them (`--grpc-stream-reply mlserver`): bare
    /// `ModelInferResponse`s, no final flags, and a failed request ends the call.
    bare: bool,
    /// While waiting for a request: since when, and the next check.
    idle_since: Instant,
    tick: Option<Pin<Box<Sleep>>>,
}

enum State {
    /// Reading the next request.
    Waiting,
    /// The model is starting (or, if it does not stream, answering) a request.
    Starting(Starting, Box<Call>),
    /// Sending a request's pieces.
    Answering(PieceStream, Box<Call>),
    /// The call is over: no more replies.
    Ended,
}

/// One request on the call.
struct Call {
    obs: Observed,
    model_name: String,
    model_version: String,
    id: String,
    raw: bool,
    /// The model answers in pieces (its replies are not final).
    streams: bool,
    empty_final: bool,
}

impl Replies {
    pub fn new(app: Arc<App>, request: tonic::Request<Streaming<pb::ModelInferRequest>>) -> Self {
        let meta = request.metadata();
        let header_id = meta
            .get("x-request-id")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let deflate = meta
            .get("grpc-encoding")
            .is_some_and(|v| v.as_bytes() == b"deflate");
        let headers = app.config.dialect.headers_for_model(meta.as_ref());
        Self {
            headers,
            inbound: request.into_inner(),
            state: State::Waiting,
            header_id,
            deflate,
            bare: app.config.dialect.stream_reply() == crate::dialect::StreamReply::Mlserver,
            idle_since: Instant::now(),
            tick: None,
            app,
        }
    }

    /// Starts answering `req`: its first reply if it failed at once.
    fn begin(&mut self, mut req: pb::ModelInferRequest) -> Option<Reply> {
        let app = self.app.clone();
        let mut obs = methods::V2_STREAM_INFER.observe();
        obs.id = if req.id.is_empty() {
            self.header_id.clone()
        } else {
            req.id.clone()
        };
        if req.id.is_empty() {
            if let Some(id) = app.config.dialect.stream_request_id() {
                req.id = id;
            }
        }
        let by_reference = req
            .inputs
            .iter()
            .any(|i| i.parameters.contains_key(SHARED_MEMORY_REGION));
        obs.encoding = if by_reference || !req.raw_input_contents.is_empty() {
            Encoding::Raw
        } else {
            Encoding::Typed
        };
        let empty_final = matches!(
            req.parameters
                .get(ENABLE_EMPTY_FINAL)
                .and_then(|p| p.parameter_choice.as_ref()),
            Some(ParameterChoice::BoolParam(true))
        );
        let call = Box::new(Call {
            obs,
            model_name: req.model_name.clone(),
            model_version: req.model_version.clone(),
            id: req.id.clone(),
            raw: app.config.dialect.raw_grpc_reply(proto::reply_raw(&req)),
            streams: false,
            empty_final,
        });
        // Each piece would overwrite the one before it in the region.
        if let Some(i) = req
            .outputs
            .iter()
            .position(|o| o.parameters.contains_key(SHARED_MEMORY_REGION))
        {
            let e = ServeError::new(
                Kind::BadRequest,
                format!(
                    "outputs[{i}]: an output in shared memory is not taken on \
                     ModelStreamInfer (use ModelInfer, or receive the output in the reply)"
                ),
            );
            return Some(self.failed(*call, &e));
        }
        let headers = self.headers.clone();
        // The model is looked up (and loaded on request, where the cache does that) as
        // the request starts, without holding up the call's other work.
        let start = async move {
            let model = app.model(&req.model_name, &req.model_version).await?;
            let request = super::v2::decode(&app, req, headers)?;
            let pieces =
                crate::dataplane::infer_pieces(&app, &model, request, Protocol::Grpc).await?;
            Ok((pieces, model))
        };
        self.state = State::Starting(Box::pin(start), call);
        None
    }

    /// The error reply for a request, counted; the call goes on.
    fn failed(&mut self, call: Call, e: &ServeError) -> Reply {
        let status = e.to_status();
        let Call {
            obs,
            model_name,
            model_version,
            id,
            ..
        } = call;
        obs.finish(
            &self.app,
            Code::Grpc(status.code()),
            methods::V2_STREAM_INFER.name(),
        );
        if self.bare {
            // A bare reply has no room for an error: MLServer ends the call with it.
            self.state = State::Ended;
            return Err(status);
        }
        self.state = State::Waiting;
        self.idle_since = Instant::now();
        Ok(pb::ModelStreamInferResponse {
            error_message: status.message().to_owned(),
            infer_response: Some(pb::ModelInferResponse {
                model_name,
                model_version,
                id,
                ..Default::default()
            }),
            bare: false,
        })
    }

    /// Ends the call with `status`; a request that could not be read (`counted`) is
    /// counted as an answer, an idle call's end is not.
    fn end(&mut self, status: Status, counted: bool) -> Poll<Option<Reply>> {
        self.state = State::Ended;
        if counted {
            methods::V2_STREAM_INFER.observe().finish(
                &self.app,
                Code::Grpc(status.code()),
                methods::V2_STREAM_INFER.name(),
            );
        }
        Poll::Ready(Some(Err(status)))
    }

    /// Waiting for the next request: the reply to send, if any, or nothing yet.
    fn poll_waiting(&mut self, cx: &mut Context<'_>) -> Poll<Option<Reply>> {
        if !self.app.is_ready() {
            return self.end(draining(), false);
        }
        match Pin::new(&mut self.inbound).poll_next(cx) {
            Poll::Ready(Some(Ok(req))) => {
                self.tick = None;
                match self.begin(req) {
                    Some(reply) => Poll::Ready(Some(reply)),
                    // Starting: the caller polls on.
                    None => Poll::Pending,
                }
            }
            Poll::Ready(Some(Err(status))) => {
                let status = named(status, self.app.config.max_body_bytes, self.deflate);
                self.end(status, true)
            }
            Poll::Ready(None) => {
                self.state = State::Ended;
                Poll::Ready(None)
            }
            Poll::Pending => {
                let idle = self.app.config.streaming.idle;
                let tick = self
                    .tick
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep(DRAIN_CHECK)));
                while tick.as_mut().poll(cx).is_ready() {
                    if !self.app.is_ready() {
                        return self.end(draining(), false);
                    }
                    let waited = self.idle_since.elapsed();
                    if waited >= idle {
                        return self.end(
                            Status::deadline_exceeded(format!(
                                "no request on this stream for {} s (see --stream-idle-timeout)",
                                idle.as_secs_f64()
                            )),
                            false,
                        );
                    }
                    let next = DRAIN_CHECK.min(idle - waited);
                    tick.as_mut().reset(tokio::time::Instant::now() + next);
                }
                Poll::Pending
            }
        }
    }
}

/// The reply for one piece: the request's model, version and id, and the outputs.
fn piece(
    call: &Call,
    outputs: Vec<InferOutput>,
    last: bool,
    bare: bool,
) -> pb::ModelStreamInferResponse {
    let response = InferResponse {
        model_name: call.model_name.clone(),
        model_version: call.model_version.clone(),
        id: call.id.clone(),
        parameters: Default::default(),
        outputs,
    };
    let mut response = proto::to_pb(response, call.raw);
    if !bare {
        response.parameters.insert(
            FINAL.into(),
            pb::InferParameter {
                parameter_choice: Some(ParameterChoice::BoolParam(last)),
            },
        );
    }
    pb::ModelStreamInferResponse {
        error_message: String::new(),
        infer_response: Some(response),
        bare,
    }
}

#[cold]
fn draining() -> Status {
    Status::unavailable("the server is shutting down: open a new stream (to another server)")
}

/// tonic's refusal of a message over `max_body_bytes` (as it arrives, or as it
/// inflates), naming the setting as a unary call's refusal does (`codec::refusals_named`).
fn named(status: Status, limit: usize, deflate: bool) -> Status {
    let message = status.message();
    if status.code() == tonic::Code::OutOfRange && message.contains("message length too large") {
        return Status::resource_exhausted(format!(
            "the request message is too large: over the limit of {limit} bytes (see \
             --max-body-bytes)"
        ));
    }
    if message.contains("exceeded while decompressing") {
        let coding = if deflate { "deflate" } else { "gzip" };
        return Status::resource_exhausted(format!(
            "the request message inflates (grpc-encoding: {coding}) to more than the limit \
             of {limit} bytes (see --max-body-bytes)"
        ));
    }
    status
}

impl Stream for Replies {
    type Item = Reply;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Reply>> {
        let this = self.get_mut();
        loop {
            match &mut this.state {
                State::Ended => return Poll::Ready(None),
                State::Waiting => match this.poll_waiting(cx) {
                    // A request was taken and is starting: go on with it.
                    Poll::Pending if !matches!(this.state, State::Waiting) => {}
                    other => return other,
                },
                State::Starting(start, _) => {
                    let started = std::task::ready!(start.as_mut().poll(cx));
                    let State::Starting(_, call) = std::mem::replace(&mut this.state, State::Ended)
                    else {
                        unreachable!("the state was Starting");
                    };
                    match started {
                        Ok((pieces, model)) => {
                            let mut call = call;
                            call.obs.model = model.slot;
                            call.model_name.clone_from(&model.name);
                            call.model_version.clone_from(&model.version);
                            call.streams = model.runner.streams();
                            this.state = State::Answering(pieces, call);
                        }
                        Err(e) => return Poll::Ready(Some(this.failed(*call, &e))),
                    }
                }
                State::Answering(pieces, call) => match std::task::ready!(pieces.poll_next(cx)) {
                    Some(Ok(outputs)) => {
                        let reply = piece(call, outputs, !call.streams, this.bare);
                        match pieces.sending(prost::Message::encoded_len(&reply)) {
                            Ok(()) => return Poll::Ready(Some(Ok(reply))),
                            Err(e) => return Poll::Ready(Some(this.fail_answering(&e))),
                        }
                    }
                    Some(Err(e)) => return Poll::Ready(Some(this.fail_answering(&e))),
                    None => {
                        let State::Answering(_, call) =
                            std::mem::replace(&mut this.state, State::Waiting)
                        else {
                            unreachable!("the state was Answering");
                        };
                        this.idle_since = Instant::now();
                        let last = (call.streams && call.empty_final && !this.bare)
                            .then(|| piece(&call, Vec::new(), true, false));
                        call.obs.finish(
                            &this.app,
                            Code::Grpc(tonic::Code::Ok),
                            methods::V2_STREAM_INFER.name(),
                        );
                        if let Some(last) = last {
                            return Poll::Ready(Some(Ok(last)));
                        }
                    }
                },
            }
        }
    }
}

impl Replies {
    /// A request's stream failed (the model's error, a limit): its error reply.
    fn fail_answering(&mut self, e: &ServeError) -> Reply {
        let State::Answering(pieces, call) = std::mem::replace(&mut self.state, State::Ended)
        else {
            unreachable!("the state was Answering");
        };
        // Its metrics are recorded as it goes (how it ended).
        drop(pieces);
        self.failed(*call, e)
    }
}
