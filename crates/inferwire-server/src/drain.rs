//! Taking the connections already waiting in a listen queue, at the start of a drain.
use std::sync::Arc;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Accepts every connection `listener`'s queue holds now, without waiting for more, and
/// closes this process's handle on it. Each holds a connection permit. The accepts are
/// plain non-blocking calls: tokio's would return nothing until its reactor has seen
/// the listener readable again, and the queue would be left to the kernel to reset.
pub async fn queued(
    listener: TcpListener,
    permits: &Arc<Semaphore>,
) -> Vec<(TcpStream, OwnedSemaphorePermit)> {
    let mut out = Vec::new();
    let Ok(listener) = listener.into_std() else {
        return out;
    };
    // A socket error other than an empty queue (EAGAIN) ends the drain too.
    while let Ok((stream, _)) = listener.accept() {
        let Ok(permit) = permits.clone().acquire_owned().await else {
            break;
        };
        if stream.set_nonblocking(true).is_err() {
            continue;
        }
        if let Ok(stream) = TcpStream::from_std(stream) {
            out.push((stream, permit));
        }
    }
    out
}
