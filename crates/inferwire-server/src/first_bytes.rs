//! A connection must begin its request within the head's time limit (`--header-timeout`).
//! hyper's own head timer starts only once a connection is known to speak HTTP/1.1, and
//! HTTP/2's handshake waits for the client's preface without any: a client that connects
//! and sends nothing, or trickles the 24-byte preface, would hold its connection (and its
//! `--max-connections` slot) for ever. So the REST and gRPC ports first wait here, on the
//! connection's own task, for the preface whole or for bytes that are not it (HTTP/1.1,
//! whose head hyper then times).
use std::time::Duration;

use tokio::net::TcpStream;

const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// How often a partial preface is looked at again (`peek` does not wait for more).
const RECHECK: Duration = Duration::from_millis(20);

/// Whether `stream` began a request within `within` (false: silent, trickling, or
/// closed; the caller closes it).
pub async fn arrived(stream: &TcpStream, within: Duration) -> bool {
    let begun = async {
        let mut buf = [0u8; H2_PREFACE.len()];
        loop {
            let n = stream.peek(&mut buf).await?;
            if n == 0 {
                return Ok::<_, std::io::Error>(false);
            }
            if n == buf.len() || buf[..n] != H2_PREFACE[..n] {
                return Ok(true);
            }
            tokio::time::sleep(RECHECK).await;
        }
    };
    matches!(tokio::time::timeout(within, begun).await, Ok(Ok(true)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    async fn pair() -> (TcpStream, TcpStream) {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
        (l.accept().await.unwrap().0, client)
    }

    #[tokio::test]
    async fn a_request_begins_a_silent_or_trickling_client_does_not() {
        let within = Duration::from_millis(300);
        let (server, mut client) = pair().await;
        client.write_all(b"GET / HTTP/1.1\r\n").await.unwrap();
        assert!(arrived(&server, within).await);
        let (server, mut client) = pair().await;
        client.write_all(H2_PREFACE).await.unwrap();
        assert!(arrived(&server, within).await);
        let (server, _client) = pair().await;
        assert!(!arrived(&server, within).await);
        let (server, mut client) = pair().await;
        client.write_all(&H2_PREFACE[..10]).await.unwrap();
        assert!(!arrived(&server, within).await);
    }
}
