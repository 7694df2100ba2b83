//! One streamed reply over HTTP/2 (`--http2`: h2c, or ALPN h2 on https://): the request
//! on a stream of a shared connection, the `text/event-stream` body read frame by frame
//! into the same SSE reader as HTTP/1.1's.
use bytes::Bytes;
use h2::client::SendRequest;

use super::http::{end_of, not_sse, pieces};
use super::sse;
use super::tally::{End, Tally};
use crate::error_body::keep_head;
use crate::target::Target;

/// Sends the request and reads its stream; how it ended, and whether the connection can
/// carry the next one.
pub async fn stream(s: &mut SendRequest<Bytes>, t: &Target, tally: &mut Tally) -> (End, bool) {
    match exchange(s, t, tally).await {
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
    tally: &mut Tally,
) -> Result<End, h2::Error> {
    std::future::poll_fn(|cx| s.poll_ready(cx)).await?;
    let (res, mut out) = s.send_request(t.head(), t.body.is_empty())?;
    if !t.body.is_empty() {
        out.send_data(t.body.clone(), true)?;
    }
    let res = res.await?;
    let status = res.status().as_u16();
    let content_type = res
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    if status == 200 {
        if let Some(end) = not_sse(&content_type) {
            return Ok(end); // dropping the stream resets it
        }
    }
    let mut body = res.into_body();
    let mut events = sse::Parser::default();
    let (mut head, mut body_len) = (Vec::new(), 0u64);
    while let Some(chunk) = body.data().await {
        let d = chunk?;
        body.flow_control().release_capacity(d.len())?;
        if status != 200 {
            keep_head(&mut head, &d);
            body_len += d.len() as u64;
        } else if let Some(end) = pieces(&mut events, &d, tally) {
            return Ok(end);
        }
    }
    Ok(end_of(status, &head, body_len))
}
