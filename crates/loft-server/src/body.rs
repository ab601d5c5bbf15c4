//! Request bodies, read under three bounds so that no client can make Loft hold more memory
//! than it chose to give:
//!
//! - **The protocol's limit** ([`RequestBody`]'s `LIMIT`: 1 MiB for the seeds' API and the
//!   console, [`NATIVE_BODY_LIMIT`]; 10 MiB for the AWS protocols,
//!   [`crate::aws::AWS_BODY_LIMIT`]), checked against `Content-Length` before a byte is
//!   read and against the bytes as they arrive, so a body is never buffered past it
//!   ([`BodyError::TooLarge`], 413).
//! - **A global budget** of body bytes buffered at once over all requests ([`BodyBudget`],
//!   `--max-body-bytes-in-flight`): bytes are counted as they arrive and given back when the
//!   request that read them is answered. A request whose `Content-Length` does not fit in
//!   what is left, or whose next chunk does not, is not read further
//!   ([`BodyError::Busy`], 503 with `Retry-After: 1`).
//! - **A deadline** for the whole request, enforced by [`crate::listen`] on the body it
//!   hands the router: a body that stalls ends with [`BodyTimedOut`], read here as
//!   [`BodyError::TimedOut`] (408).
//!
//! Each adapter renders a [`BodyError`] in its protocol's shape ([`BodyError::to_error`]
//! gives the row of the error table).

use std::fmt;
use std::ops::Deref;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{FromRequest, Request};
use axum::http::{header, HeaderMap, HeaderValue};
use bytes::BytesMut;
use hyper::body::Body as _;
use loft_core::{Error, ErrorCode};

/// The most body bytes all requests together may hold while they are read and served.
/// Shared by every connection of [`crate::listen::serve`], which puts it in each request's
/// extensions (a request without one, say from a test calling the router directly, is
/// bounded by its protocol's limit only).
#[derive(Debug)]
pub struct BodyBudget {
    limit: usize,
    used: AtomicUsize,
}

impl BodyBudget {
    /// A budget of `limit` bytes.
    pub fn new(limit: usize) -> Arc<BodyBudget> {
        Arc::new(BodyBudget {
            limit,
            used: AtomicUsize::new(0),
        })
    }

    /// The budget, bytes.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Bytes held by requests now.
    pub fn in_use(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// Whether `n` more bytes fit now.
    pub fn fits(&self, n: usize) -> bool {
        self.in_use().saturating_add(n) <= self.limit
    }

    /// Takes `n` bytes into `reservation` if they fit; `false` (and nothing taken) if not.
    fn take(self: &Arc<Self>, reservation: &mut Reservation, n: usize) -> bool {
        let taken = self
            .used
            .fetch_update(Ordering::AcqRel, Ordering::Relaxed, |used| {
                used.checked_add(n).filter(|total| *total <= self.limit)
            })
            .is_ok();
        if taken {
            if reservation.budget.is_none() {
                reservation.budget = Some(self.clone());
            }
            reservation.bytes += n;
        }
        taken
    }
}

/// Bytes taken from a [`BodyBudget`]; given back when dropped.
#[derive(Debug, Default)]
pub struct Reservation {
    budget: Option<Arc<BodyBudget>>,
    bytes: usize,
}

impl Reservation {
    /// How many bytes this holds.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if let Some(b) = &self.budget {
            b.used.fetch_sub(self.bytes, Ordering::AcqRel);
        }
    }
}

/// The error a request body ends with when the request's deadline passed before it
/// arrived (see [`crate::listen::ServerLimits::request_timeout`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyTimedOut;

impl fmt::Display for BodyTimedOut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the request body did not arrive in time")
    }
}

impl std::error::Error for BodyTimedOut {}

/// A request extension saying the body was read already under the budget by a layer that
/// holds its [`Reservation`] until the request is answered (the signature check of the
/// seeds' API): a [`RequestBody`] read after it does not count the bytes twice.
#[derive(Debug, Clone, Copy)]
pub struct AlreadyCounted;

/// Why a body was not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BodyError {
    /// Larger than `limit` bytes (by `Content-Length` or as it arrived): 413.
    TooLarge {
        /// The protocol's limit, bytes.
        limit: usize,
    },
    /// The global budget has no room for it: 503, retry later.
    Busy,
    /// The request's deadline passed before the body arrived: 408.
    TimedOut,
    /// The body could not be read (the connection broke, bad chunked encoding): 400.
    Failed(String),
}

impl BodyError {
    /// The `Retry-After` value to send with it (seconds), for [`BodyError::Busy`].
    pub fn retry_after(&self) -> Option<&'static str> {
        matches!(self, BodyError::Busy).then_some("1")
    }

    /// Adds what every answer to an unread body carries: `Retry-After` when retrying helps
    /// ([`Self::retry_after`]), and `Connection: close`, since the rest of the body stays
    /// unread.
    pub fn add_headers(&self, headers: &mut HeaderMap) {
        if let Some(after) = self.retry_after() {
            headers.insert(header::RETRY_AFTER, HeaderValue::from_static(after));
        }
        headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
    }

    /// The message for people.
    pub fn message(&self) -> String {
        match self {
            BodyError::TooLarge { limit } => {
                format!("request body is larger than {limit} bytes")
            }
            BodyError::Busy => {
                "the server is reading too many request bodies at once; retry later".into()
            }
            BodyError::TimedOut => "the request did not arrive in time".into(),
            BodyError::Failed(why) => format!("the request body could not be read: {why}"),
        }
    }

    /// The row of the error table: `RequestTooLarge`, `ServiceUnavailable`,
    /// `RequestTimeout` or `MalformedRequest`, with [`Self::message`].
    pub fn to_error(&self) -> Error {
        let code = match self {
            BodyError::TooLarge { .. } => ErrorCode::RequestTooLarge,
            BodyError::Busy => ErrorCode::ServiceUnavailable,
            BodyError::TimedOut => ErrorCode::RequestTimeout,
            BodyError::Failed(_) => ErrorCode::MalformedRequest,
        };
        Error::new(code, self.message())
    }
}

/// The declared `Content-Length`, when there is a valid one.
fn content_length(headers: &HeaderMap) -> Option<usize> {
    headers
        .get(header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
}

fn is_timeout(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur = Some(e);
    while let Some(err) = cur {
        if err.is::<BodyTimedOut>() {
            return true;
        }
        cur = err.source();
    }
    false
}

/// Most of a declared length a body's buffer takes at once, before its bytes arrive: the
/// whole of a body up to 1 MiB (one allocation, as most bodies are), then it doubles as
/// bytes arrive, up to the declared length. The pages are not touched (not resident)
/// until bytes fill them.
const FIRST_CAPACITY: usize = 1024 * 1024;

/// First capacity of a body without a declared length.
const UNDECLARED_CAPACITY: usize = 64 * 1024;

/// Reads `body` whole under `limit` bytes and `budget` (see the module doc). The returned
/// [`Reservation`] holds the body's bytes in the budget: keep it until the request is
/// answered.
///
/// Errors: [`BodyError::TooLarge`] (before reading when `Content-Length` says so),
/// [`BodyError::Busy`] (likewise), [`BodyError::TimedOut`], [`BodyError::Failed`].
pub async fn read(
    headers: &HeaderMap,
    budget: Option<&Arc<BodyBudget>>,
    mut body: Body,
    limit: usize,
) -> Result<(Bytes, Reservation), BodyError> {
    let declared = content_length(headers);
    if declared.is_some_and(|n| n > limit) {
        return Err(BodyError::TooLarge { limit });
    }
    if let (Some(b), Some(n)) = (budget, declared) {
        if !b.fits(n) {
            return Err(BodyError::Busy);
        }
    }
    let mut reservation = Reservation::default();
    let ceiling = declared.unwrap_or(limit);
    let mut buf = BytesMut::new();
    let first = declared.map_or(UNDECLARED_CAPACITY, |n| n.min(FIRST_CAPACITY));
    loop {
        let frame = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await;
        let data = match frame {
            None => break,
            Some(Err(e)) => {
                let inner = e.into_inner();
                return Err(if is_timeout(inner.as_ref()) {
                    BodyError::TimedOut
                } else {
                    BodyError::Failed(inner.to_string())
                });
            }
            Some(Ok(frame)) => match frame.into_data() {
                Ok(d) => d,
                Err(_) => continue, // trailers
            },
        };
        let total = buf.len() + data.len();
        if total > limit {
            return Err(BodyError::TooLarge { limit });
        }
        if let Some(b) = budget {
            if !b.take(&mut reservation, data.len()) {
                return Err(BodyError::Busy);
            }
        }
        if total > buf.capacity() {
            let grown = (buf.capacity() * 2).max(first).max(total);
            buf.reserve(grown.min(ceiling.max(total)) - buf.len());
        }
        buf.extend_from_slice(&data);
    }
    Ok((buf.freeze(), reservation))
}

/// Largest request body of the seeds' API and the console, bytes (1 MiB); bodies are read
/// under it by [`NativeBody`].
pub const NATIVE_BODY_LIMIT: usize = 1024 * 1024;

/// A body of the seeds' API (and of the console) read under
/// [`NATIVE_BODY_LIMIT`].
pub type NativeBody = RequestBody<{ NATIVE_BODY_LIMIT }>;

/// A request body read whole under `LIMIT` bytes, the global [`BodyBudget`] and the
/// request's deadline (see the module doc); dereferences to its [`Bytes`]. Its bytes stay
/// counted in the budget until it is dropped.
///
/// Rejection: [`BodyError`].
#[derive(Debug)]
pub struct RequestBody<const LIMIT: usize> {
    bytes: Bytes,
    _reservation: Reservation,
}

impl<const LIMIT: usize> RequestBody<LIMIT> {
    /// Reads `body`, the body of the request whose head is `parts`: what the extractor
    /// does, for a handler that takes the request apart itself (so that its headers and
    /// extensions are moved out rather than copied by one extractor each).
    ///
    /// Errors: [`BodyError`], as the extractor.
    pub async fn from_parts(
        parts: &axum::http::request::Parts,
        body: Body,
    ) -> Result<Self, BodyError> {
        let budget = parts
            .extensions
            .get::<Arc<BodyBudget>>()
            .filter(|_| parts.extensions.get::<AlreadyCounted>().is_none());
        let (bytes, reservation) = read(&parts.headers, budget, body, LIMIT).await?;
        Ok(RequestBody {
            bytes,
            _reservation: reservation,
        })
    }

    /// The body.
    pub fn bytes(&self) -> &Bytes {
        &self.bytes
    }

    /// Frees the bytes once they have been decoded, so the raw body and its decoded form
    /// are not both held while the request is served; they stay counted in the budget
    /// (the decoded form takes about as much) until this is dropped. The body reads as
    /// empty afterwards.
    pub fn release(&mut self) {
        self.bytes = Bytes::new();
    }
}

impl<const LIMIT: usize> Deref for RequestBody<LIMIT> {
    type Target = Bytes;

    fn deref(&self) -> &Bytes {
        &self.bytes
    }
}

impl<S: Send + Sync, const LIMIT: usize> FromRequest<S> for RequestBody<LIMIT> {
    type Rejection = BodyError;

    async fn from_request(req: Request, _state: &S) -> Result<Self, BodyError> {
        let (parts, body) = req.into_parts();
        Self::from_parts(&parts, body).await
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::task::{Context, Poll};

    use super::*;
    use hyper::body::Frame;

    fn headers(len: Option<usize>) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Some(n) = len {
            h.insert(header::CONTENT_LENGTH, HeaderValue::from(n));
        }
        h
    }

    /// A body of the given chunks, then an optional error.
    struct Chunks(
        VecDeque<Bytes>,
        Option<Box<dyn std::error::Error + Send + Sync>>,
    );

    impl hyper::body::Body for Chunks {
        type Data = Bytes;
        type Error = Box<dyn std::error::Error + Send + Sync>;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            _cx: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
            if let Some(c) = self.0.pop_front() {
                return Poll::Ready(Some(Ok(Frame::data(c))));
            }
            Poll::Ready(self.1.take().map(Err))
        }
    }

    fn chunks(parts: &[&'static [u8]]) -> Body {
        Body::new(Chunks(
            parts.iter().map(|p| Bytes::from_static(p)).collect(),
            None,
        ))
    }

    #[tokio::test]
    async fn a_declared_length_over_the_limit_is_refused_unread() {
        let err = read(&headers(Some(11)), None, Body::from("x"), 10)
            .await
            .unwrap_err();
        assert_eq!(err, BodyError::TooLarge { limit: 10 });
        assert_eq!(err.to_error().code.http_status(), 413);
        assert_eq!(err.to_error().code, ErrorCode::RequestTooLarge);
    }

    #[tokio::test]
    async fn an_undeclared_body_is_cut_as_it_passes_the_limit() {
        let body = chunks(&[b"12345", b"67890", b"1"]);
        let err = read(&headers(None), None, body, 10).await.unwrap_err();
        assert_eq!(err, BodyError::TooLarge { limit: 10 });
        let (bytes, _) = read(&headers(None), None, chunks(&[b"12345", b"67890"]), 10)
            .await
            .unwrap();
        assert_eq!(&bytes[..], b"1234567890", "exactly the limit is fine");
    }

    #[tokio::test]
    async fn bytes_count_against_the_budget_until_the_reservation_drops() {
        let budget = BodyBudget::new(10);
        let (bytes, held) = read(&headers(None), Some(&budget), chunks(&[b"123", b"45"]), 100)
            .await
            .unwrap();
        assert_eq!(&bytes[..], b"12345");
        assert_eq!((budget.in_use(), held.bytes()), (5, 5));
        // A declared length that does not fit in what is left: refused before reading.
        let err = read(&headers(Some(6)), Some(&budget), Body::from("123456"), 100)
            .await
            .unwrap_err();
        assert_eq!(err, BodyError::Busy);
        assert_eq!(err.to_error().code.http_status(), 503);
        assert_eq!(err.retry_after(), Some("1"));
        // An undeclared one that outgrows it: refused as it arrives, its bytes given back.
        let err = read(
            &headers(None),
            Some(&budget),
            chunks(&[b"1234", b"56"]),
            100,
        )
        .await
        .unwrap_err();
        assert_eq!(err, BodyError::Busy);
        assert_eq!(budget.in_use(), 5);
        drop(held);
        assert_eq!(budget.in_use(), 0);
        let (bytes, _held) = read(
            &headers(Some(10)),
            Some(&budget),
            Body::from("0123456789"),
            100,
        )
        .await
        .unwrap();
        assert_eq!(bytes.len(), 10);
        assert_eq!(budget.in_use(), 10);
    }

    #[tokio::test]
    async fn a_timed_out_body_is_told_from_a_broken_one() {
        let timed_out = Body::new(Chunks(
            [Bytes::from_static(b"ab")].into(),
            Some(Box::new(BodyTimedOut)),
        ));
        let err = read(&headers(Some(5)), None, timed_out, 10)
            .await
            .unwrap_err();
        assert_eq!(err, BodyError::TimedOut);
        assert_eq!(err.to_error().code.http_status(), 408);
        assert_eq!(err.to_error().code, ErrorCode::RequestTimeout);
        let broken = Body::new(Chunks(VecDeque::new(), Some("connection reset".into())));
        let err = read(&headers(None), None, broken, 10).await.unwrap_err();
        assert!(
            matches!(&err, BodyError::Failed(m) if m.contains("connection reset")),
            "{err:?}"
        );
        assert_eq!(err.to_error().code.http_status(), 400);
    }
}
