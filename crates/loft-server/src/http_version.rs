//! Which HTTP a connection speaks, told from its first bytes, and the connection handed on
//! with those bytes put back.
//!
//! A connection that opens with HTTP/2's client preface (`PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n`,
//! RFC 9113 §3.4: "prior knowledge", or after TLS ALPN `h2`) is HTTP/2; any other opening is
//! HTTP/1. This is what hyper-util's `auto::Builder` does, done here so that the bytes read
//! to tell reach hyper's HTTP/1 reader together with the rest of what the client sent
//! ([`Prefixed`]): given the few sniffed bytes alone in its first read, hyper grows its read
//! buffer from 8 KiB to 16 KiB to read the rest of the head, and keeps that buffer for the
//! life of the connection (16.4 KB of a waiting long poll's ~30 KB: the heap profile in
//! docs/benchmarks/history.md, "hyper's read buffer grown to 16 KiB by the version sniff").

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};

/// HTTP/2's connection preface as the client sends it (RFC 9113 §3.4).
const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// The HTTP version of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// HTTP/1.0 or HTTP/1.1 (anything that is not the HTTP/2 preface).
    Http1,
    /// HTTP/2 (the connection opened with the client preface).
    Http2,
}

/// Reads the first bytes of `io` (at most the 24 of the HTTP/2 preface, and no more once
/// they differ from it) and returns the version they tell with `io` wrapped so that those
/// bytes are read again first. A connection closed before any byte counts as HTTP/1 (its
/// server then sees the end of the stream, as it would have).
///
/// Errors: the read's own error (for a [`crate::deadline::TimedIo`], the idle clock running
/// out).
pub async fn sniff<S: AsyncRead + Unpin>(mut io: S) -> io::Result<(Version, Prefixed<S>)> {
    let mut head = [0u8; PREFACE.len()];
    let mut filled = 0;
    let version = loop {
        let n = io.read(&mut head[filled..]).await?;
        if n == 0 {
            break Version::Http1;
        }
        filled += n;
        if head[..filled] != PREFACE[..filled] {
            break Version::Http1;
        }
        if filled == PREFACE.len() {
            break Version::Http2;
        }
    };
    Ok((
        version,
        Prefixed {
            inner: io,
            head,
            at: 0,
            len: filled,
            error: None,
        },
    ))
}

/// A connection whose first bytes were read by [`sniff`]: reads give those bytes first,
/// then the connection's own. The first read that gives them also reads what the
/// connection has ready behind them into the same buffer, so the reader sees the request
/// as the client sent it, not cut after the sniffed bytes. Writes go straight through.
#[derive(Debug)]
pub struct Prefixed<S> {
    inner: S,
    head: [u8; PREFACE.len()],
    /// Next byte of `head` to give.
    at: usize,
    /// Bytes of `head` that were read.
    len: usize,
    /// An error the connection returned while the sniffed bytes were being given, returned
    /// by the next read.
    error: Option<io::Error>,
}

impl<S: AsyncRead + Unpin> AsyncRead for Prefixed<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if let Some(e) = this.error.take() {
            return Poll::Ready(Err(e));
        }
        if this.at == this.len {
            return Pin::new(&mut this.inner).poll_read(cx, buf);
        }
        let n = (this.len - this.at).min(buf.remaining());
        buf.put_slice(&this.head[this.at..this.at + n]);
        this.at += n;
        if this.at == this.len && buf.remaining() > 0 {
            // What is ready behind the sniffed bytes, in the same read; none ready (or the
            // end of the stream) leaves the sniffed bytes alone in this read.
            if let Poll::Ready(Err(e)) = Pin::new(&mut this.inner).poll_read(cx, buf) {
                this.error = Some(e);
            }
        }
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Prefixed<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    async fn opened_with(first: &[u8], rest: &[u8]) -> (Version, Vec<u8>, usize) {
        let (mut client, server) = tokio::io::duplex(64 * 1024);
        client.write_all(first).await.unwrap();
        let sniffing = tokio::spawn(sniff(server));
        tokio::task::yield_now().await;
        client.write_all(rest).await.unwrap();
        drop(client);
        let (version, mut io) = sniffing.await.unwrap().unwrap();
        let mut buf = vec![0u8; 8192];
        let first_read = io.read(&mut buf).await.unwrap();
        let mut all = buf[..first_read].to_vec();
        io.read_to_end(&mut all).await.unwrap();
        (version, all, first_read)
    }

    #[tokio::test]
    async fn an_http1_request_is_read_whole_in_the_first_read() {
        let req = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}";
        let (version, all, first_read) = opened_with(req, b"").await;
        assert_eq!(version, Version::Http1);
        assert_eq!(all, req);
        // The first read gave the sniffed bytes and the rest of the request together.
        assert_eq!(first_read, req.len());
    }

    #[tokio::test]
    async fn the_http2_preface_is_http2_and_is_read_again() {
        let (version, all, _) = opened_with(PREFACE, b"\0\0\0\x04\0\0\0\0\0").await;
        assert_eq!(version, Version::Http2);
        assert_eq!(&all[..24], PREFACE);
        assert_eq!(all.len(), 24 + 9);
    }

    #[tokio::test]
    async fn a_preface_in_pieces_is_still_http2() {
        let (version, all, _) = opened_with(&PREFACE[..5], &PREFACE[5..]).await;
        assert_eq!(version, Version::Http2);
        assert_eq!(all, PREFACE);
    }

    #[tokio::test]
    async fn a_request_starting_like_the_preface_is_http1() {
        let req = b"PRIVATE / HTTP/1.1\r\n\r\n";
        let (version, all, _) = opened_with(&req[..3], &req[3..]).await;
        assert_eq!(version, Version::Http1);
        assert_eq!(all, req);
    }

    #[tokio::test]
    async fn a_connection_closed_at_once_is_http1_with_nothing_to_read() {
        let (version, all, first_read) = opened_with(b"", b"").await;
        assert_eq!(version, Version::Http1);
        assert!(all.is_empty());
        assert_eq!(first_read, 0);
    }
}
