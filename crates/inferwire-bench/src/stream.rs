//! A connection's byte stream, beneath both HTTP clients (`http1`, `transport`).
use tokio::io::{AsyncRead, AsyncWrite};

/// A connection's byte stream: plain TCP, or TLS over it.
pub trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}
