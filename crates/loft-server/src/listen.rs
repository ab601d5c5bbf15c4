//! The accept loop: serves a router on TCP listeners with a connection limit, a limit on
//! request header size, and graceful shutdown.
//!
//! - **Connections**: at most [`ServerLimits::max_connections`] open at once over all
//!   listeners. One more is answered `503 {"error": ...}` with `Retry-After: 1` and
//!   `Connection: close` (at most [`MAX_REFUSING`] such answers at once; past that the
//!   connection is closed unanswered), so clients see why instead of hanging.
//! - **Headers**: HTTP/1 request heads (request line and headers) over
//!   [`ServerLimits::max_header_bytes`] or with more than [`ServerLimits::max_headers`]
//!   headers are answered `431 Request Header Fields Too Large` by hyper; HTTP/2 header
//!   lists are capped at the same size. A head not complete within
//!   [`ServerLimits::header_read_timeout`] closes the connection, so idle half-open
//!   connections do not hold slots forever.
//! - **Shutdown**: when the shutdown future completes, listeners stop accepting, idle
//!   connections close, and in-flight requests finish before [`serve`] returns.

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, HeaderValue, Request, Response, StatusCode};
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};
use tower_service::Service as _;

/// How many over-limit connections are answered with a 503 at once.
pub const MAX_REFUSING: usize = 64;

/// Connection and header limits of [`serve`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerLimits {
    /// Most connections open at once, over all listeners (default 10,000).
    pub max_connections: usize,
    /// Largest HTTP/1 request head and HTTP/2 header list, bytes (default 64 KiB; hyper's
    /// floor is 8 KiB).
    pub max_header_bytes: usize,
    /// Most headers of one HTTP/1 request (default 100).
    pub max_headers: usize,
    /// How long a connection may take to send a complete request head (default 30 s).
    pub header_read_timeout: Duration,
}

impl Default for ServerLimits {
    fn default() -> Self {
        ServerLimits {
            max_connections: 10_000,
            max_header_bytes: 64 * 1024,
            max_headers: 100,
            header_read_timeout: Duration::from_secs(30),
        }
    }
}

fn builder(limits: &ServerLimits) -> Builder<TokioExecutor> {
    let mut b = Builder::new(TokioExecutor::new());
    b.http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .max_buf_size(limits.max_header_bytes.max(8192))
        .max_headers(limits.max_headers);
    b.http2()
        .timer(TokioTimer::new())
        .max_header_list_size(u32::try_from(limits.max_header_bytes).unwrap_or(u32::MAX));
    b
}

/// The answer to a connection over the limit.
fn refusal(max: usize) -> Response<Body> {
    let body = serde_json::json!({
        "error": format!("too many open connections (the limit is {max}); retry later"),
    })
    .to_string();
    let mut resp = Response::new(Body::from(body));
    *resp.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    h.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    h.insert(header::CONNECTION, HeaderValue::from_static("close"));
    resp
}

/// Serves `router` on every listener under `limits` until `shutdown` completes, then stops
/// accepting, lets in-flight requests finish and returns.
///
/// Errors: none today (accept errors such as running out of file descriptors are logged
/// and retried after a pause); the `Result` leaves room for listener set-up failures.
pub async fn serve(
    listeners: Vec<TcpListener>,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
    limits: ServerLimits,
) -> std::io::Result<()> {
    let (stop_tx, stop_rx) = watch::channel(false);
    tokio::spawn(async move {
        shutdown.await;
        let _ = stop_tx.send(true);
    });
    let limits = Arc::new(limits);
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let refusing = Arc::new(Semaphore::new(MAX_REFUSING));
    let graceful = Arc::new(GracefulShutdown::new());
    let mut tasks = Vec::new();
    for listener in listeners {
        let mut stop = stop_rx.clone();
        let router = router.clone();
        let limits = limits.clone();
        let slots = slots.clone();
        let refusing = refusing.clone();
        let graceful = graceful.clone();
        tasks.push(tokio::spawn(async move {
            let builder = builder(&limits);
            loop {
                let accepted = tokio::select! {
                    r = listener.accept() => r,
                    _ = stop.wait_for(|s| *s) => break,
                };
                let (stream, peer) = match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        // EMFILE and friends: wait for connections to close.
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                };
                let _ = stream.set_nodelay(true);
                let io = TokioIo::new(stream);
                match slots.clone().try_acquire_owned() {
                    Ok(slot) => {
                        let router = router.clone();
                        let service = hyper::service::service_fn(move |req: Request<Incoming>| {
                            let mut router = router.clone();
                            async move { router.call(req.map(Body::new)).await }
                        });
                        let conn = builder.serve_connection_with_upgrades(io, service).into_owned();
                        let conn = graceful.watch(conn);
                        tokio::spawn(async move {
                            let _slot = slot;
                            if let Err(e) = conn.await {
                                tracing::trace!(%peer, error = %e, "connection ended with an error");
                            }
                        });
                    }
                    Err(_) => {
                        let Ok(turn) = refusing.clone().try_acquire_owned() else {
                            tracing::warn!(%peer, "connection limit reached; connection closed");
                            continue;
                        };
                        tracing::warn!(%peer, max = limits.max_connections, "connection limit reached; answering 503");
                        let max = limits.max_connections;
                        let timeout = limits.header_read_timeout.min(Duration::from_secs(5));
                        tokio::spawn(async move {
                            let _turn = turn;
                            let service = hyper::service::service_fn(move |_req: Request<Incoming>| async move {
                                Ok::<_, Infallible>(refusal(max))
                            });
                            let conn = hyper::server::conn::http1::Builder::new()
                                .keep_alive(false)
                                .timer(TokioTimer::new())
                                .header_read_timeout(timeout)
                                .serve_connection(io, service);
                            let _ = tokio::time::timeout(timeout * 2, conn).await;
                        });
                    }
                }
            }
        }));
    }
    for t in tasks {
        t.await.map_err(std::io::Error::other)?;
    }
    // Every listener has stopped: close idle connections, finish in-flight requests.
    match Arc::try_unwrap(graceful) {
        Ok(g) => g.shutdown().await,
        Err(_) => tracing::warn!("graceful shutdown: connections still referenced"),
    }
    Ok(())
}
