//! The other side of `sequences`: this worker's socket, where the workers that received
//! a request of a sequence this worker owns pass it, and where it runs through the
//! dataplane as if it had arrived here.
use std::sync::{Arc, Weak};
use std::time::Instant;

use inferwire_codec::pb::inference as pb;
use inferwire_codec::protocol::v2::proto;
use prost::Message;
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::watch;

use crate::app::App;
use crate::error::{Kind, ServeError};
use crate::sequences::{
    frame_limit, make_private_dir, read_frame, reply_too_large, write_frame, Route,
};

/// Serves this worker's socket on a thread of its own until `stop` flips to true.
pub fn listen(route: &Route, app: Weak<App>, stop: watch::Receiver<bool>) -> std::io::Result<()> {
    make_private_dir(&route.dir)?;
    let path = route.socket(route.me);
    // A previous worker in this place left its socket behind.
    let _ = std::fs::remove_file(&path);
    let std_listener = std::os::unix::net::UnixListener::bind(&path)?;
    std_listener.set_nonblocking(true)?;
    std::thread::Builder::new()
        .name("inferwire-sequences".into())
        .spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            rt.block_on(accept(std_listener, app, stop));
            let _ = std::fs::remove_file(&path);
        })?;
    Ok(())
}

async fn accept(
    listener: std::os::unix::net::UnixListener,
    app: Weak<App>,
    mut stop: watch::Receiver<bool>,
) {
    let Ok(listener) = UnixListener::from_std(listener) else {
        return;
    };
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let Some(app) = app.upgrade() else { return };
                tokio::spawn(serve_peer(stream, app));
            }
            _ = stop.changed() => return,
        }
    }
}

/// Answers one other worker's requests, one after the other.
async fn serve_peer(mut s: UnixStream, app: Arc<App>) {
    // Every request another worker accepted fits: bounded by the body limit as sent, not
    // by its larger raw form.
    let limit = frame_limit(app.config.max_body_bytes);
    while let Ok((_, bytes)) = read_frame(&mut s, limit).await {
        let result = run_here(&app, &bytes).await.and_then(|r| {
            // The forwarding worker reads no longer frame: refused here, with the reason.
            let len = r.encoded_len();
            if len > limit {
                return Err(reply_too_large(&format!(
                    "it takes {len} bytes, more than the {limit} allowed"
                )));
            }
            Ok(r)
        });
        let written = match result {
            Ok(r) => write_frame(&mut s, 0, &r.encode_to_vec()).await,
            Err(e) => {
                let index = Kind::ALL.iter().position(|k| *k == e.kind).unwrap_or(0);
                let tag = u8::try_from(index + 1).unwrap_or(u8::MAX);
                write_frame(&mut s, tag, e.message.as_bytes()).await
            }
        };
        if written.is_err() {
            return;
        }
    }
}

async fn run_here(app: &App, bytes: &[u8]) -> Result<pb::ModelInferResponse, ServeError> {
    let msg = pb::ModelInferRequest::decode(bytes)
        .map_err(|e| ServeError::new(Kind::BadRequest, format!("a worker's request: {e}")))?;
    let model = app.models.get(&msg.model_name, &msg.model_version)?;
    let request = proto::from_pb(msg, &app.config.limits)?;
    let deadline = app.deadline(Instant::now(), None);
    let response = super::infer_whole(app, &model, request, deadline).await?;
    Ok(proto::to_pb(response, true))
}
