//! Triton's sequences across workers. With `--workers` above 1 the kernel spreads
//! connections over the worker processes, each with its own copy of a stateful model, so
//! the requests of one sequence (`sequence_id`) could each reach a different copy. The
//! owner of a sequence is worker `hash(id) % workers` (a stable hash of the id's text, the
//! same in every process); a V2 request of a sequence another worker owns is passed to
//! that worker over its unix socket and its reply relayed. The sockets live in a folder
//! only this user can enter, named after the supervisor; a restarted worker binds its
//! path again (the sequences it held start over, as on a Triton instance that failed).
//!
//! The frames on a socket, one request and its reply at a time: `u32` length (little
//! endian) and an encoded `ModelInferRequest` (inputs raw); the reply a tag byte (0: a
//! `ModelInferResponse` follows; otherwise 1 + the index of the error's `Kind`, and its
//! message follows), a `u32` length and the bytes.
//!
//! A request's frame is bounded by what the largest request any worker accepts encodes to
//! (`frame_limit`), not by the body limit: the raw tensors of a body are up to eight times
//! its size, and a request one worker accepts must be served by whichever owns it. A
//! reply's frame is held to the same bound: the owner refuses a larger one before writing
//! it (the client gets an error naming the limit), and the forwarding worker reads no
//! longer frame, so a length read off the socket never sizes an allocation past it.
use std::path::{Path, PathBuf};
use std::time::Instant;

use inferwire_codec::pb::inference as pb;
use inferwire_codec::protocol::v2::proto;
use inferwire_codec::protocol::v2::{InferRequest, InferResponse};
use prost::Message;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;

use crate::error::{Kind, ServeError};
use crate::models::Served;

/// How long a request waits for its sequence's worker to bind its socket (a worker
/// starting, or restarted after a crash: the supervisor's first pause is 0.1 s).
const CONNECT_WITHIN: std::time::Duration = std::time::Duration::from_secs(2);

/// The largest request frame a worker sends or takes, for a server whose bodies (REST
/// bodies and gRPC messages, after inflating) hold at most `max_body_bytes`. No wire form
/// spends less than a byte on an element (a JSON digit and its comma are two, a packed
/// varint one) and none is wider than eight raw (INT64, FP64); a BYTES element's four-byte
/// length takes at least two bytes of JSON (`""`) or protobuf (tag, length), and the
/// request's other fields encode to no more than eight times their JSON. Inputs read from
/// shared memory add at most `max_body_bytes` (read as they are), and the path and headers
/// (the model's name and version, the request id) fit the rest.
pub(crate) fn frame_limit(max_body_bytes: usize) -> usize {
    max_body_bytes.saturating_mul(9).saturating_add(1 << 20)
}

/// This worker's place among the workers, and where their sockets are.
#[derive(Debug, Clone)]
pub struct Route {
    pub(crate) dir: PathBuf,
    pub(crate) me: usize,
    workers: usize,
}

impl Route {
    /// Worker `me` of `workers` (none with one worker: nothing to route), its sockets in
    /// a folder named after the supervisor, the parent of every worker.
    pub fn for_worker(me: usize, workers: usize) -> Option<Route> {
        if workers < 2 {
            return None;
        }
        let supervisor = std::os::unix::process::parent_id();
        let dir = std::env::temp_dir().join(format!("inferwire-sequences-{supervisor}"));
        Some(Route { dir, me, workers })
    }

    pub(crate) fn socket(&self, worker: usize) -> PathBuf {
        self.dir.join(format!("worker-{worker}.sock"))
    }

    /// The worker that owns `req`'s sequence, when it is not this one. No `sequence_id`,
    /// or Triton's "none" (0 or ""), is served where it arrived.
    pub fn elsewhere(&self, req: &InferRequest) -> Option<usize> {
        let owner = owner(req.parameters.get("sequence_id")?, self.workers)?;
        (owner != self.me).then_some(owner)
    }

    /// Runs `req` on worker `owner` and returns its reply (or its error).
    pub async fn forward(
        &self,
        owner: usize,
        model: &Served,
        req: InferRequest,
        deadline: Option<Instant>,
        limits: &inferwire_codec::Limits,
        max_body_bytes: usize,
    ) -> Result<InferResponse, ServeError> {
        let mut msg = proto::to_pb_request(req, &model.name, true);
        msg.model_version.clone_from(&model.version);
        // Cannot happen for a request this server accepted (see `frame_limit`); were it to,
        // the request is refused here, not by the owner hanging up.
        let limit = frame_limit(max_body_bytes);
        if msg.encoded_len() > limit {
            return Err(ServeError::new(
                Kind::TooLarge,
                format!(
                    "the request takes {} bytes as passed to the worker that serves its \
                     sequence, more than the {limit} its max_body_bytes allows",
                    msg.encoded_len()
                ),
            ));
        }
        let call = async {
            let mut s = self.connect(owner).await.map_err(|e| {
                ServeError::new(
                    Kind::ShuttingDown,
                    format!(
                        "worker {owner}, which serves this sequence, is not reachable (it is \
                         restarting?): {e}"
                    ),
                )
            })?;
            write_frame(&mut s, 0, &msg.encode_to_vec())
                .await
                .map_err(lost)?;
            let (tag, bytes) = read_frame(&mut s, limit).await.map_err(|e| {
                if e.kind() == std::io::ErrorKind::InvalidData {
                    reply_too_large(&e.to_string())
                } else {
                    lost(e)
                }
            })?;
            if tag == 0 {
                let r = pb::ModelInferResponse::decode(bytes.as_slice()).map_err(|e| {
                    ServeError::new(Kind::Internal, format!("a worker's reply: {e}"))
                })?;
                return Ok(proto::response_from_pb(r, limits)?);
            }
            let kind = Kind::ALL
                .get(usize::from(tag) - 1)
                .copied()
                .unwrap_or(Kind::Internal);
            Err(ServeError::new(
                kind,
                String::from_utf8_lossy(&bytes).into_owned(),
            ))
        };
        match deadline {
            None => call.await,
            Some(at) => tokio::time::timeout_at(at.into(), call)
                .await
                .unwrap_or_else(|_| {
                    Err(ServeError::new(
                        Kind::Deadline,
                        "the request's deadline passed on the worker that serves its sequence",
                    ))
                }),
        }
    }

    /// A connection to `owner`'s socket. A worker starting (with the others, or in a dead
    /// one's place) binds it within moments: until `CONNECT_WITHIN` has passed, a socket
    /// not there yet, or not listening yet, is tried again.
    async fn connect(&self, owner: usize) -> std::io::Result<UnixStream> {
        let path = self.socket(owner);
        let until = Instant::now() + CONNECT_WITHIN;
        loop {
            match UnixStream::connect(&path).await {
                Ok(s) => return Ok(s),
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused
                    ) && Instant::now() < until =>
                {
                    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                }
                Err(e) => return Err(e),
            }
        }
    }
}

/// The owner of sequence `id` among `workers`: FNV-1a of its text (an integer's decimal
/// digits, a string's bytes), the same in every process.
fn owner(id: &Value, workers: usize) -> Option<usize> {
    let text = match id {
        Value::String(s) if !s.is_empty() => s.clone(),
        Value::Number(n) if n.as_u64() != Some(0) => n.to_string(),
        _ => return None,
    };
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    usize::try_from(h % workers as u64).ok()
}

pub(crate) fn make_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            // Made by another worker of this server: it must be ours and private.
            let meta = std::fs::symlink_metadata(dir)?;
            let private = meta.permissions().mode() & 0o077 == 0;
            if !meta.is_dir() || meta.uid() != my_uid() || !private {
                return Err(std::io::Error::other(format!(
                    "{} exists and is not a private folder of this user",
                    dir.display()
                )));
            }
            Ok(())
        }
        Err(e) => Err(e),
    }
}

/// This process's user id: the owner of /proc/self.
fn my_uid() -> u32 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").map_or(u32::MAX, |m| m.uid())
}

/// A reply larger than a frame between workers may be (`frame_limit`).
pub(crate) fn reply_too_large(why: &str) -> ServeError {
    ServeError::new(
        Kind::Internal,
        format!(
            "the model's reply is too large to pass back from the worker that serves this \
             sequence: {why} (9 x max_body_bytes + 1 MiB; see --max-body-bytes)"
        ),
    )
}

fn lost(e: std::io::Error) -> ServeError {
    ServeError::new(
        Kind::ShuttingDown,
        format!("the worker that serves this sequence went away: {e}"),
    )
}

pub(crate) async fn write_frame(s: &mut UnixStream, tag: u8, bytes: &[u8]) -> std::io::Result<()> {
    let len = u32::try_from(bytes.len()).map_err(std::io::Error::other)?;
    let mut head = [0u8; 5];
    head[0] = tag;
    head[1..].copy_from_slice(&len.to_le_bytes());
    s.write_all(&head).await?;
    s.write_all(bytes).await
}

pub(crate) async fn read_frame(s: &mut UnixStream, limit: usize) -> std::io::Result<(u8, Vec<u8>)> {
    let mut head = [0u8; 5];
    s.read_exact(&mut head).await?;
    let len = u32::from_le_bytes([head[1], head[2], head[3], head[4]]) as usize;
    if len > limit {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("a frame of {len} bytes, more than the {limit} allowed"),
        ));
    }
    let mut bytes = vec![0u8; len];
    s.read_exact(&mut bytes).await?;
    Ok((head[0], bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_are_stable_and_spread() {
        assert_eq!(owner(&Value::from(0), 4), None);
        assert_eq!(owner(&Value::from(""), 4), None);
        assert_eq!(owner(&Value::Bool(true), 4), None);
        // The same id, the same owner, whichever way it was written.
        assert_eq!(owner(&Value::from(17), 4), owner(&Value::from(17u64), 4));
        let mut seen = [0usize; 4];
        for i in 1..=400u64 {
            seen[owner(&Value::from(i), 4).unwrap()] += 1;
            let s = Value::from(format!("user-{i}"));
            assert_eq!(owner(&s, 4), owner(&s.clone(), 4));
        }
        assert!(seen.iter().all(|&n| n > 50), "{seen:?}");
    }
}
