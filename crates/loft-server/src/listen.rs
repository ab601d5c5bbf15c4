//! The accept loop: serves a router on TCP listeners under the limits of [`ServerLimits`],
//! and shuts down gracefully.
//!
//! - **Connections**: at most [`ServerLimits::max_connections`] open at once over all
//!   listeners, and, when set, at most [`ServerLimits::max_connections_per_ip`] from one
//!   client address (off by default: behind a load balancer or NAT every client shares
//!   one). One more is answered `503 {"error": ...}` with `Retry-After: 1` and
//!   `Connection: close`, so clients see why instead of hanging. At most [`MAX_REFUSING`]
//!   such answers are under way at once; past that a listener stops accepting until one
//!   ends (each within 10 s, or twice the request timeout if shorter, whether or not its
//!   client sends a request), and the kernel's listen backlog ([`LISTEN_BACKLOG`]) holds
//!   the next connections meanwhile (past it, new clients' connection attempts wait): no
//!   connection is accepted and then closed unanswered, unless its client sends no
//!   request within that time.
//! - **Proxies** ([`crate::proxy`]): a connection from [`ServerLimits::trusted_proxies`]
//!   may open with a PROXY protocol v2 header, whose client address then counts for the
//!   per-address limit and is the request's [`ClientAddr`]; its requests' `X-Forwarded-For`
//!   names the [`ClientAddr`] too (IAM's `aws:SourceIp`).
//! - **Headers**: HTTP/1 request heads (request line and headers) over
//!   [`ServerLimits::max_header_bytes`] or with more than [`ServerLimits::max_headers`]
//!   headers are answered `431 Request Header Fields Too Large` by hyper; HTTP/2 header
//!   lists are capped at the same size.
//! - **Deadlines** ([`crate::deadline`]): a request's head and body must arrive within
//!   [`ServerLimits::request_timeout`] of its first byte, bodies earning one more second per
//!   [`ServerLimits::min_body_rate`] bytes (up to one timeout ahead); a connection idle
//!   between requests for [`ServerLimits::keep_alive_timeout`] is closed, and so is one
//!   whose client does not read its response for a request timeout. A stalled head closes
//!   the connection; a stalled body is answered `408` in its protocol's shape and the
//!   connection closed.
//! - **Body memory**: every request carries the server's [`BodyBudget`]
//!   ([`ServerLimits::max_body_bytes_in_flight`]) as an extension; [`crate::body`] reads
//!   bodies under it.
//! - **Half-closed clients**: a client that shuts down its sending side after its request
//!   (`shutdown(SHUT_WR)`) still gets its answer; the request is served to the end (a long
//!   poll then ends at once with an empty answer: see [`crate::client_link`], whose
//!   [`ClientLink`] every request carries as an extension).
//! - **Shutdown**: when the shutdown future completes, listeners stop accepting, idle
//!   connections close, and in-flight requests finish before [`serve`] returns.
//! - **TLS**: a [`Listener`] made with [`Listener::tls`] speaks HTTPS (rustls; see
//!   [`crate::tls`]). The handshake runs on the connection's own task under the same
//!   connection slot and within the request timeout, so a slow or failed handshake holds
//!   or closes only its own connection. Every request carries its listener's [`Scheme`] as
//!   an extension, which is how URLs Loft builds from a request (queue URLs) get `https`.
//! - **Runtimes**: a listener given a runtime ([`Listener::on_runtime`]) accepts, and
//!   serves its connections, on that runtime's thread instead of the caller's; `loft serve
//!   --runtime per-core` gives each core a current-thread runtime accepting on its own
//!   handle of every listening socket ([`Listener::twin`]; fewer wake-ups per request:
//!   docs/benchmarks/history.md, "wake-ups per request and the runtime model"), so that a
//!   request is read, handled and answered on the thread that accepted it. The connection limits, the body budget and
//!   the graceful shutdown stay shared by all listeners, whatever runtime they are on.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, HeaderValue, Request, Response, StatusCode};
use futures_util::future::Either;
use futures_util::FutureExt;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Semaphore};
use tokio_rustls::TlsAcceptor;

use crate::body::BodyBudget;
use crate::client_link::ClientLink;
use crate::deadline::{Clocks, ConnState, InFlight, TimedBody, TimedIo, TrackedBody};
use crate::http_version;
use crate::proxy::{ProxyHeader, TrustedProxies};

/// What [`serve`] serves: the answer to each request, as a future that owns what it needs
/// and not the request beside it (hyper keeps it per connection, and a long poll holds it
/// for its whole wait). [`axum::Router`] is one; the server's app (`App` of
/// [`crate::routes`], with its direct AWS route) another. The accept loop knows nothing
/// else of the routes.
pub trait Serve: Send + Sync + 'static {
    /// The answer to `req` (a future that borrows nothing of `self`).
    fn call(&self, req: Request<Body>) -> impl Future<Output = Response<Body>> + Send + use<Self>;
}

/// Every request through the router.
impl Serve for axum::Router {
    fn call(&self, req: Request<Body>) -> impl Future<Output = Response<Body>> + Send + use<> {
        let mut router = self.clone();
        let routed = tower_service::Service::call(&mut router, req);
        // Boxed: the router's future holds the request until its route takes it, and
        // this future would otherwise be as large for every request.
        Box::pin(async move {
            match routed.await {
                Ok(resp) => resp,
                Err(e) => match e {},
            }
        })
    }
}

/// The scheme a request arrived by: the listener's. [`serve`] inserts it into every
/// request's extensions; a request served another way (a test calling the router
/// directly) has none, which means [`Scheme::Http`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum Scheme {
    /// Plain HTTP.
    #[default]
    Http,
    /// HTTP over TLS.
    Https,
}

impl Scheme {
    /// `"http"` or `"https"`, as in a URL.
    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }
}

impl std::fmt::Display for Scheme {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A bound TCP listener and, for HTTPS, the TLS acceptor of its connections.
pub struct Listener {
    tcp: TcpListener,
    tls: Option<TlsAcceptor>,
    /// Where its accept loop and connections run; `None`: the runtime [`serve`] runs on.
    runtime: Option<tokio::runtime::Handle>,
}

impl Listener {
    /// A plain HTTP listener.
    pub fn plain(tcp: TcpListener) -> Listener {
        Listener {
            tcp,
            tls: None,
            runtime: None,
        }
    }

    /// The same listener, accepting and serving its connections on `runtime` (a runtime
    /// another thread drives, e.g. a current-thread runtime per core) instead of the one
    /// [`serve`] runs on. [`serve`] moves the socket to that runtime's I/O driver, so the
    /// connections' readiness wakes that runtime's thread only. The runtime must be
    /// driven until [`serve`] returns.
    pub fn on_runtime(mut self, runtime: tokio::runtime::Handle) -> Listener {
        self.runtime = Some(runtime);
        self
    }

    /// An HTTPS listener: every connection must open with a TLS handshake `acceptor`
    /// completes ([`crate::tls::acceptor`] makes one from PEM files).
    pub fn tls(tcp: TcpListener, acceptor: TlsAcceptor) -> Listener {
        Listener {
            tcp,
            tls: Some(acceptor),
            runtime: None,
        }
    }

    /// One more handle on this listener's socket (a duplicated descriptor of the same
    /// listening socket), with its scheme and TLS acceptor, for another runtime to accept
    /// on ([`Listener::on_runtime`]). Every handle accepts from the one queue of
    /// connections; no second socket is bound, so no other process can bind the address
    /// beside it.
    ///
    /// Errors: the descriptor cannot be duplicated (the system's error, e.g. too many
    /// open files); `Unsupported` off Unix.
    pub fn twin(&self) -> std::io::Result<Listener> {
        #[cfg(unix)]
        let tcp = {
            use std::os::fd::AsFd as _;
            let fd = self.tcp.as_fd().try_clone_to_owned()?;
            // Non-blocking already: the flag belongs to the socket both descriptors share.
            TcpListener::from_std(std::net::TcpListener::from(fd))?
        };
        #[cfg(not(unix))]
        let tcp: TcpListener = {
            return Err(std::io::Error::new(
                std::io::ErrorKind::Unsupported,
                "a listener shared by several runtimes needs Unix",
            ));
        };
        Ok(Listener {
            tcp,
            tls: self.tls.clone(),
            runtime: None,
        })
    }

    /// [`Scheme::Https`] for a TLS listener, else [`Scheme::Http`].
    pub fn scheme(&self) -> Scheme {
        if self.tls.is_some() {
            Scheme::Https
        } else {
            Scheme::Http
        }
    }

    /// The bound address (with the port the system picked for port 0).
    ///
    /// Errors: the socket's own (rare: the socket is gone).
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.tcp.local_addr()
    }

    /// `scheme://IP:PORT` of this listener, with `127.0.0.1` (or `::1`) standing for an
    /// unspecified address (`0.0.0.0`, `::`): a URL a local client can use.
    ///
    /// Errors: [`Listener::local_addr`]'s.
    pub fn local_url(&self) -> std::io::Result<String> {
        let mut addr = self.local_addr()?;
        if addr.ip().is_unspecified() {
            addr.set_ip(match addr {
                SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
                SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
            });
        }
        Ok(format!("{}://{addr}", self.scheme()))
    }
}

impl std::fmt::Debug for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listener")
            .field("addr", &self.tcp.local_addr().ok())
            .field("scheme", &self.scheme())
            .finish()
    }
}

impl From<TcpListener> for Listener {
    fn from(tcp: TcpListener) -> Listener {
        Listener::plain(tcp)
    }
}

/// The listen backlog [`bind`] asks for: connections whose handshake the kernel has
/// completed and holds until Loft accepts them, e.g. while listeners wait for
/// [`MAX_REFUSING`] answers to end. Linux caps it at `net.core.somaxconn` (4096 by
/// default since Linux 5.4); the standard library's and tokio's `bind` ask for 128.
pub const LISTEN_BACKLOG: u32 = 4096;

/// A TCP listener on `addr` with a [`LISTEN_BACKLOG`] backlog (and `SO_REUSEADDR` on Unix,
/// as the standard library's `bind`, so that a restarted Loft can bind at once).
///
/// Errors: the system's (the address is in use or not local, no permission).
pub fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = match addr {
        SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
        SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
    };
    #[cfg(unix)]
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

/// How many over-limit connections are answered with a 503 at once; past that, listeners
/// stop accepting until one of these answers ends (see the module documentation).
pub const MAX_REFUSING: usize = 64;

/// Connection, header, deadline and body-memory limits of [`serve`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerLimits {
    /// Most connections open at once, over all listeners (default 10,000).
    pub max_connections: usize,
    /// Most connections open at once from one client IP address (the PROXY protocol's
    /// client for a trusted proxy's connections); `None` (the default): no such limit.
    pub max_connections_per_ip: Option<usize>,
    /// Proxies whose PROXY protocol v2 headers and `X-Forwarded-For` name the client
    /// (default: none; [`crate::proxy`]).
    pub trusted_proxies: TrustedProxies,
    /// Largest HTTP/1 request head and HTTP/2 header list, bytes (default 64 KiB; hyper's
    /// floor is 8 KiB).
    pub max_header_bytes: usize,
    /// Most headers of one HTTP/1 request (default 100).
    pub max_headers: usize,
    /// Time a request's head and body get from its first byte, and a TLS handshake from
    /// the connection's start; also how long a response may go unread (default 30 s).
    pub request_timeout: Duration,
    /// Body bytes per second that earn a request one more second, up to one request
    /// timeout ahead (default 4 KiB/s; 0: bodies get the request timeout only).
    pub min_body_rate: u64,
    /// Time a connection may stay idle between requests (and before its first) before it
    /// is closed (default 75 s: above the 60 s idle timeout load balancers default to, so
    /// a balancer never reuses a connection Loft is closing).
    pub keep_alive_timeout: Duration,
    /// Most bytes of request bodies held at once over all requests (default 256 MiB); see
    /// [`crate::body`].
    pub max_body_bytes_in_flight: usize,
}

impl Default for ServerLimits {
    fn default() -> Self {
        ServerLimits {
            max_connections: 10_000,
            max_connections_per_ip: None,
            trusted_proxies: TrustedProxies::default(),
            max_header_bytes: 64 * 1024,
            max_headers: 100,
            request_timeout: Duration::from_secs(30),
            min_body_rate: 4 * 1024,
            keep_alive_timeout: Duration::from_secs(75),
            max_body_bytes_in_flight: 256 * 1024 * 1024,
        }
    }
}

impl ServerLimits {
    /// The clocks of each connection.
    pub fn clocks(&self) -> Clocks {
        Clocks {
            request_timeout: self.request_timeout,
            min_body_rate: self.min_body_rate,
            keep_alive_timeout: self.keep_alive_timeout,
        }
    }
}

/// hyper's HTTP/1 and HTTP/2 connection settings under `limits`.
struct Http {
    h1: hyper::server::conn::http1::Builder,
    h2: hyper::server::conn::http2::Builder<TokioExecutor>,
}

fn builder(limits: &ServerLimits) -> Http {
    let mut h1 = hyper::server::conn::http1::Builder::new();
    // Heads are timed by crate::deadline (hyper's clock would start when the connection
    // goes idle, which is the keep-alive timeout's part).
    h1.timer(TokioTimer::new())
        .header_read_timeout(None)
        .half_close(true)
        .max_buf_size(limits.max_header_bytes.max(8192))
        .max_headers(limits.max_headers);
    let mut h2 = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
    h2.timer(TokioTimer::new())
        .max_header_list_size(u32::try_from(limits.max_header_bytes).unwrap_or(u32::MAX));
    Http { h1, h2 }
}

/// A `{"error": message, "message": message}` answer with `status` that closes the
/// connection (`message` too, so AWS SDKs, which read that member, show the text).
fn closing_error(status: StatusCode, message: String) -> Response<Body> {
    let body = serde_json::json!({ "error": message, "message": message }).to_string();
    let mut resp = Response::new(Body::from(body));
    *resp.status_mut() = status;
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    h.insert(header::CONNECTION, HeaderValue::from_static("close"));
    resp
}

/// The answer to a connection over a limit: `why` says which.
fn refusal(why: &str) -> Response<Body> {
    let mut resp = closing_error(
        StatusCode::SERVICE_UNAVAILABLE,
        format!("{why}; retry later"),
    );
    resp.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    resp
}

/// The answer to a plain HTTP request `req` on a TLS listener bound at `local`: the https
/// URL of the host the client named (`Host`), else of the bound address.
fn plain_on_tls(req: &Request<Incoming>, local: Option<SocketAddr>) -> Response<Body> {
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .filter(|h| {
            !h.is_empty()
                && h.len() <= 255
                && h.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b".-:[]".contains(&b))
        })
        .map(str::to_owned)
        .or_else(|| local.map(|a| a.to_string()))
        .unwrap_or_default();
    closing_error(
        StatusCode::BAD_REQUEST,
        format!("this listener speaks HTTPS: use https://{host}"),
    )
}

/// Answers one request on `io` with `answer(request)` over HTTP/1 and closes; the header
/// read is bounded by `timeout` and the whole exchange by twice that.
async fn answer_once<S, F>(io: S, timeout: Duration, answer: F)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    F: Fn(&Request<Incoming>) -> Response<Body> + Send + 'static,
{
    let service = hyper::service::service_fn(move |req: Request<Incoming>| {
        let resp = answer(&req);
        async move { Ok::<_, Infallible>(resp) }
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .keep_alive(false)
        .timer(TokioTimer::new())
        .header_read_timeout(timeout)
        .serve_connection(TokioIo::new(io), service);
    let _ = tokio::time::timeout(timeout * 2, conn).await;
}

/// What the first bytes of a connection on a TLS listener turned out to be.
enum Opening {
    /// A completed TLS handshake.
    Tls(Box<tokio_rustls::server::TlsStream<TcpStream>>),
    /// Plain HTTP (the first byte is an ASCII letter, as in `GET` or `POST`).
    PlainHttp(TcpStream),
    /// Neither, a failed handshake, or nothing in time: close.
    Failed(String),
}

/// Waits for the client's first byte and, when it opens a TLS record, completes the
/// handshake; all within `timeout`.
async fn open_tls(acceptor: &TlsAcceptor, stream: TcpStream, timeout: Duration) -> Opening {
    let work = async move {
        let mut first = [0u8; 1];
        match stream.peek(&mut first).await {
            Ok(0) => return Opening::Failed("closed before the handshake".into()),
            Ok(_) => {}
            Err(e) => return Opening::Failed(e.to_string()),
        }
        // 0x16: a TLS handshake record (ClientHello).
        if first[0] != 0x16 {
            if first[0].is_ascii_alphabetic() {
                return Opening::PlainHttp(stream);
            }
            return Opening::Failed(format!(
                "not a TLS handshake (first byte {:#04x})",
                first[0]
            ));
        }
        match acceptor.accept(stream).await {
            Ok(s) => Opening::Tls(Box::new(s)),
            Err(e) => Opening::Failed(format!("TLS handshake failed: {e}")),
        }
    };
    tokio::time::timeout(timeout, work)
        .await
        .unwrap_or_else(|_| Opening::Failed("no TLS handshake in time".into()))
}

/// What every connection task of one listener shares.
struct Shared<A> {
    tls: Option<TlsAcceptor>,
    app: Arc<A>,
    http: Http,
    scheme: Scheme,
    limits: Arc<ServerLimits>,
    budget: Arc<BodyBudget>,
    local: Option<SocketAddr>,
}

/// The client's address of a request's connection (a request extension): the peer's, or
/// the one a trusted proxy's PROXY protocol header named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerAddr(pub SocketAddr);

/// The client of a request (a request extension), for IAM's `aws:SourceIp`: its
/// [`PeerAddr`]'s address, or, from a trusted proxy, what `X-Forwarded-For` says
/// ([`TrustedProxies::client`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientAddr(pub IpAddr);

/// Serves `io` with the router until the client closes, the connection fails, a clock of
/// [`crate::deadline`] runs out, or a graceful shutdown (through `watcher`) lets its
/// in-flight requests finish. HTTP/1 or HTTP/2 as the connection's first bytes tell
/// ([`crate::http_version`]); a shutdown while they are awaited closes the connection.
async fn serve_http<A: Serve, S>(
    shared: &Shared<A>,
    io: S,
    watcher: Watcher,
    peer: SocketAddr,
    link: ClientLink,
    mut stop: watch::Receiver<bool>,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let app = shared.app.clone();
    let scheme = shared.scheme;
    let budget = shared.budget.clone();
    let clocks = shared.limits.clocks();
    let max_head = shared.limits.max_header_bytes;
    let trusted = shared.limits.trusted_proxies.clone();
    let state = ConnState::new();
    let io = TimedIo::new(io, state.clone(), clocks);
    let (version, io) = tokio::select! {
        r = http_version::sniff(io) => match r {
            Ok(v) => v,
            Err(e) => {
                tracing::debug!(%peer, error = %e, "connection ended before a request");
                return;
            }
        },
        _ = stop.wait_for(|s| *s) => return,
    };
    let service = hyper::service::service_fn(move |mut req: Request<Incoming>| {
        // Before the future: the request counts as under way from its head on.
        let in_flight = InFlight::new(&state);
        let started = state.take_head_start();
        req.extensions_mut().insert(scheme);
        req.extensions_mut().insert(budget.clone());
        let client = trusted.client(peer.ip(), req.headers());
        req.extensions_mut().insert(PeerAddr(peer));
        req.extensions_mut().insert(ClientAddr(client));
        req.extensions_mut().insert(link.clone());
        // hyper checks its read buffer against the limit only while a head is incomplete,
        // and that buffer can grow past the limit in one read; so the head's size is
        // checked here too, on what hyper parsed.
        let over = req.version() < axum::http::Version::HTTP_2 && head_len(&req) > max_head;
        if over {
            let resp = closing_error(
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                format!("the request head is larger than {max_head} bytes"),
            );
            return Either::Left(std::future::ready(Ok(
                resp.map(|b| TrackedBody::new(b, in_flight))
            )));
        }
        let req = req.map(|b| Body::new(TimedBody::new(b, started, clocks)));
        // The app's future is made now and mapped, not awaited in an `async` block that
        // would keep the request beside it: hyper boxes this future per connection and a
        // long poll holds it for its wait (memory per waiting long poll: BENCHMARKS.md,
        // long polls).
        Either::Right(
            app.call(req)
                .map(move |resp| Ok::<_, Infallible>(resp.map(|b| TrackedBody::new(b, in_flight)))),
        )
    });
    let io = TokioIo::new(io);
    let ended = match version {
        http_version::Version::Http1 => {
            let conn = shared.http.h1.serve_connection(io, service);
            watcher.watch(conn).await.map_err(|e| e.to_string())
        }
        http_version::Version::Http2 => {
            let conn = shared.http.h2.serve_connection(io, service);
            watcher.watch(conn).await.map_err(|e| e.to_string())
        }
    };
    if let Err(e) = ended {
        tracing::debug!(%peer, error = %e, "connection ended with an error");
    }
}

/// The size of `req`'s HTTP/1 head as a client writes it (`METHOD TARGET HTTP/1.1`, each
/// `name: value` line, the blank line), bytes: what [`ServerLimits::max_header_bytes`]
/// bounds.
fn head_len<B>(req: &Request<B>) -> usize {
    let uri = req.uri();
    let target = uri.path_and_query().map_or(1, |p| p.as_str().len())
        + uri
            .authority()
            .map_or(0, |a| a.as_str().len() + "://".len())
        + uri.scheme_str().map_or(0, str::len);
    let line = req.method().as_str().len() + 1 + target + " HTTP/1.1\r\n".len();
    let headers: usize = req
        .headers()
        .iter()
        .map(|(n, v)| n.as_str().len() + ": ".len() + v.len() + "\r\n".len())
        .sum();
    line + headers + "\r\n".len()
}

/// Open connections per client address, for [`ServerLimits::max_connections_per_ip`].
#[derive(Debug)]
struct PerAddress {
    max: usize,
    open: Mutex<HashMap<IpAddr, usize>>,
}

/// One connection counted for its address; uncounted when dropped.
struct AddressSlot {
    table: Arc<PerAddress>,
    ip: IpAddr,
}

impl PerAddress {
    /// A slot for `ip`, or `None` when it has [`PerAddress::max`] connections open.
    /// IPv4-mapped IPv6 addresses count as their IPv4 address.
    fn enter(table: &Arc<PerAddress>, ip: IpAddr) -> Option<AddressSlot> {
        let ip = ip.to_canonical();
        let mut open = table.open.lock().unwrap_or_else(|p| p.into_inner());
        let n = open.entry(ip).or_insert(0);
        if *n >= table.max {
            return None;
        }
        *n += 1;
        Some(AddressSlot {
            table: table.clone(),
            ip,
        })
    }
}

impl Drop for AddressSlot {
    fn drop(&mut self) {
        let mut open = self.table.open.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = open.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.ip);
            }
        }
    }
}

/// Serves `app` (an [`axum::Router`], or any other [`Serve`]) on every listener
/// under `limits` until `shutdown` completes, then stops
/// accepting, lets in-flight requests finish and returns. Each request carries its
/// listener's [`Scheme`] and the server's [`BodyBudget`] as extensions.
///
/// On a TLS listener the handshake happens on the connection's own task, holding one of
/// the [`ServerLimits::max_connections`] slots, and must finish within
/// [`ServerLimits::request_timeout`]; a failed handshake closes that connection only.
/// A plain HTTP request there is answered `400 {"error": "this listener speaks HTTPS: use
/// https://HOST"}` (the request's `Host`) and the connection closed.
///
/// A listener with a runtime ([`Listener::on_runtime`]) accepts and serves on it; the
/// limits, the budget and the shutdown are the same for every listener.
///
/// Errors: a listener's socket cannot be moved to its runtime's I/O driver (the system's
/// error). Accept errors such as running out of file descriptors are logged and retried
/// after a pause.
pub async fn serve(
    listeners: Vec<Listener>,
    app: impl Serve,
    shutdown: impl Future<Output = ()> + Send + 'static,
    limits: ServerLimits,
) -> std::io::Result<()> {
    let app = Arc::new(app);
    let (stop_tx, stop_rx) = watch::channel(false);
    tokio::spawn(async move {
        shutdown.await;
        let _ = stop_tx.send(true);
    });
    let limits = Arc::new(limits);
    let slots = Slots {
        all: Arc::new(Semaphore::new(limits.max_connections)),
        per_address: limits.max_connections_per_ip.map(|max| {
            Arc::new(PerAddress {
                max,
                open: Mutex::new(HashMap::new()),
            })
        }),
        refusing: Arc::new(Semaphore::new(MAX_REFUSING)),
    };
    let budget = BodyBudget::new(limits.max_body_bytes_in_flight);
    let graceful = Arc::new(GracefulShutdown::new());
    let mut tasks = Vec::new();
    for listener in listeners {
        let stop = stop_rx.clone();
        let shared = Arc::new(Shared {
            tls: listener.tls.clone(),
            app: app.clone(),
            http: builder(&limits),
            scheme: listener.scheme(),
            limits: limits.clone(),
            budget: budget.clone(),
            local: listener.tcp.local_addr().ok(),
        });
        let Some(runtime) = listener.runtime else {
            tasks.push(tokio::spawn(accept_loop(
                listener.tcp,
                shared,
                stop,
                slots.clone(),
                graceful.clone(),
            )));
            continue;
        };
        // Registered with that runtime's I/O driver, so that its readiness (and that of
        // the connections it accepts there) wakes that runtime's thread.
        let tcp = {
            let std = listener.tcp.into_std()?;
            let _entered = runtime.enter();
            TcpListener::from_std(std)?
        };
        tasks.push(runtime.spawn(accept_loop(
            tcp,
            shared,
            stop,
            slots.clone(),
            graceful.clone(),
        )));
    }
    for t in tasks {
        t.await.map_err(std::io::Error::other)?;
    }
    // Every listener has stopped (and dropped the TLS handshakes under way): close idle
    // connections, finish in-flight requests.
    match Arc::try_unwrap(graceful) {
        Ok(g) => g.shutdown().await,
        Err(_) => tracing::warn!("graceful shutdown: connections still referenced"),
    }
    Ok(())
}

/// The connection slots every listener shares.
#[derive(Clone)]
struct Slots {
    /// [`ServerLimits::max_connections`].
    all: Arc<Semaphore>,
    /// [`ServerLimits::max_connections_per_ip`], when set.
    per_address: Option<Arc<PerAddress>>,
    /// [`MAX_REFUSING`].
    refusing: Arc<Semaphore>,
}

/// Accepts connections on one listener until `stop` turns true.
async fn accept_loop<A: Serve>(
    tcp: TcpListener,
    shared: Arc<Shared<A>>,
    mut stop: watch::Receiver<bool>,
    slots: Slots,
    graceful: Arc<GracefulShutdown>,
) {
    loop {
        let accepted = tokio::select! {
            r = tcp.accept() => r,
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
        // A trusted proxy's connections count for the client its PROXY header names, once
        // read (on the connection's task); the proxy's own address is not limited.
        let trusted = shared.limits.trusted_proxies.contains(peer.ip());
        let address_slot = match &slots.per_address {
            Some(table) if !trusted => PerAddress::enter(table, peer.ip()).map(Some).ok_or(()),
            _ => Ok(None),
        };
        let slot = address_slot
            .as_ref()
            .ok()
            .and_then(|_| slots.all.clone().try_acquire_owned().ok());
        match (slot, address_slot) {
            (Some(slot), Ok(address_slot)) => {
                // Taken here, on the accept loop, so that a shutdown waits for this
                // connection even while its TLS handshake is under way.
                let watcher = graceful.watcher();
                let (shared, stop, slots) = (shared.clone(), stop.clone(), slots.clone());
                tokio::spawn(async move {
                    let _slots = (slot, address_slot);
                    connection(&shared, stream, peer, watcher, stop, trusted, &slots).await;
                });
            }
            (_, address_slot) => {
                let why = if address_slot.is_err() {
                    per_address_refusal(&shared, peer.ip())
                } else {
                    format!(
                        "too many open connections (the limit is {})",
                        shared.limits.max_connections
                    )
                };
                drop(address_slot);
                // Past MAX_REFUSING answers under way this listener waits for one to end
                // (each is bounded) instead of dropping the connection: the kernel's
                // backlog holds the next ones meanwhile.
                let turn = tokio::select! {
                    t = slots.refusing.clone().acquire_owned() => t,
                    _ = stop.wait_for(|s| *s) => break,
                };
                let Ok(turn) = turn else { break };
                tracing::warn!(%peer, reason = %why, "connection limit reached; answering 503");
                let shared = shared.clone();
                tokio::spawn(async move {
                    let _turn = turn;
                    refuse(&shared, stream, why, trusted).await;
                });
            }
        }
    }
}

/// Why a connection from `ip` is refused by the per-address limit.
fn per_address_refusal<A>(shared: &Shared<A>, ip: IpAddr) -> String {
    format!(
        "too many open connections from {} (the limit is {} per address)",
        ip.to_canonical(),
        shared.limits.max_connections_per_ip.unwrap_or_default()
    )
}

/// One connection within the limit: from a `trusted` proxy, its PROXY protocol header if
/// it opens with one (whose client then takes a per-address slot, or is refused); its TLS
/// handshake on a TLS listener; then HTTP until it ends. A shutdown during the handshake
/// drops it.
async fn connection<A: Serve>(
    shared: &Shared<A>,
    mut stream: TcpStream,
    mut peer: SocketAddr,
    watcher: Watcher,
    mut stop: watch::Receiver<bool>,
    trusted: bool,
    slots: &Slots,
) {
    let mut _address_slot = None;
    if trusted {
        let read = crate::proxy::read_proxy_v2(
            &mut stream,
            shared.limits.keep_alive_timeout,
            shared.limits.request_timeout,
        );
        let header = tokio::select! {
            h = read => h,
            _ = stop.wait_for(|s| *s) => return,
        };
        match header {
            Ok(Some(ProxyHeader::Client(client))) => peer = client,
            Ok(Some(ProxyHeader::Local) | None) => {}
            Err(why) => {
                tracing::debug!(%peer, reason = %why, "bad PROXY protocol header; connection closed");
                return;
            }
        }
        if let Some(table) = &slots.per_address {
            if !shared.limits.trusted_proxies.contains(peer.ip()) {
                match PerAddress::enter(table, peer.ip()) {
                    Some(s) => _address_slot = Some(s),
                    None => {
                        let why = per_address_refusal(shared, peer.ip());
                        tracing::warn!(%peer, reason = %why, "connection limit reached; answering 503");
                        drop(watcher);
                        // Its header is read: the answer follows at once.
                        refuse(shared, stream, why, false).await;
                        return;
                    }
                }
            }
        }
    }
    // Marks the connection's links closed when this task ends, before the socket closes.
    let (link, _link_guard) = ClientLink::new(&stream);
    let Some(acceptor) = &shared.tls else {
        serve_http(shared, stream, watcher, peer, link, stop).await;
        return;
    };
    let timeout = shared.limits.request_timeout;
    let opening = tokio::select! {
        o = open_tls(acceptor, stream, timeout) => o,
        _ = stop.wait_for(|s| *s) => return,
    };
    match opening {
        Opening::Tls(s) => serve_http(shared, s, watcher, peer, link, stop).await,
        Opening::PlainHttp(s) => {
            drop(watcher);
            tracing::debug!(%peer, "plain HTTP on a TLS listener; answering 400");
            let local = shared.local;
            let answer = move |req: &Request<Incoming>| plain_on_tls(req, local);
            answer_once(s, timeout.min(Duration::from_secs(5)), answer).await;
        }
        Opening::Failed(why) => {
            tracing::debug!(%peer, reason = %why, "TLS connection closed before HTTP");
        }
    }
}

/// One connection over a limit: answered 503 saying `why` (after its TLS handshake on a
/// TLS listener, and after its PROXY header when it comes from a `trusted` proxy, so that
/// the balancer gets the 503 too). All within twice 5 s or the request timeout if shorter:
/// a client that sends no request in that time is closed unanswered.
async fn refuse<A>(shared: &Shared<A>, mut stream: TcpStream, why: String, trusted: bool) {
    let timeout = shared.limits.request_timeout.min(Duration::from_secs(5));
    let answer = move |_: &Request<Incoming>| refusal(&why);
    let work = async move {
        if trusted
            && crate::proxy::read_proxy_v2(&mut stream, timeout, timeout)
                .await
                .is_err()
        {
            return;
        }
        match &shared.tls {
            None => answer_once(stream, timeout, answer).await,
            Some(acceptor) => match open_tls(acceptor, stream, timeout).await {
                Opening::Tls(s) => answer_once(s, timeout, answer).await,
                Opening::PlainHttp(s) => answer_once(s, timeout, answer).await,
                Opening::Failed(_) => {}
            },
        }
    };
    let _ = tokio::time::timeout(timeout * 2, work).await;
}
