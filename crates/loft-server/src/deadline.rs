//! The clocks of one connection, so that a client that stalls cannot hold a connection
//! slot (or the memory of a half-sent body) for longer than the limits say:
//!
//! - **Idle** (no request under way): the first byte of the next request must arrive
//!   within the keep-alive timeout, or the connection is closed. A new connection starts
//!   idle.
//! - **Request**: from its first byte, a request's head and body must arrive within the
//!   request timeout. Each `min_body_rate` bytes of body that arrive add one second, up to
//!   one request timeout ahead of now: a body that keeps arriving at the minimum rate or
//!   faster is never cut, one that stalls is cut one request timeout after its last
//!   progress (its first byte for a body that never starts), and one that trickles slower
//!   than the rate is cut in time. The head's clock runs here ([`TimedIo`]), the body's in
//!   the body the router reads ([`TimedBody`]), which ends with [`BodyTimedOut`].
//! - **Writing**: a response the client does not read (a write that makes no progress)
//!   for a request timeout closes the connection.
//! - **Closing**: when Loft closes a connection after an answer (`Connection: close`, say
//!   a 503 to a body it did not read), it keeps reading and discarding what the client
//!   still sends, until the client closes, pauses for [`LINGER_QUIET`] or [`LINGER_MAX`]
//!   has passed (a "lingering close"): closing a socket with unread data makes the system
//!   reset the connection, and a client still sending its body would lose the answer.
//! - While a request is being served (between its head and the end of its response: a
//!   long poll, a slow commit) nothing is timed here.
//!
//! HTTP/2 connections follow the same rules with "a request under way" meaning any of its
//! streams.
//!
//! [`InFlight`] marks a request as under way from its head to the end of its response
//! ([`TrackedBody`]); [`TimedIo`] reads that from the connection's [`ConnState`].

use std::future::Future as _;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use axum::body::{Body, Bytes};
use hyper::body::{Body as HttpBody, Frame, Incoming, SizeHint};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

use crate::body::BodyTimedOut;

/// The timeouts of one connection (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Clocks {
    /// Time a request's head and body get from its first byte.
    pub request_timeout: Duration,
    /// Body bytes per second that earn a request one more second (0: none).
    pub min_body_rate: u64,
    /// Time an idle connection waits for the next request's first byte.
    pub keep_alive_timeout: Duration,
}

/// What one connection's IO, its requests and their responses share.
#[derive(Debug, Default)]
pub struct ConnState {
    /// Requests between their head and the end of their response.
    active: AtomicUsize,
    /// Requests finished so far: a change restarts the keep-alive clock.
    finished: AtomicU64,
    /// When the first byte of the request whose head is being read arrived.
    head_started: Mutex<Option<Instant>>,
    /// The reader waiting while requests were under way, woken when the last one ends so
    /// that its idle clock starts.
    idle_waker: Mutex<Option<Waker>>,
}

impl ConnState {
    /// A fresh state, shared.
    pub fn new() -> Arc<ConnState> {
        Arc::new(ConnState::default())
    }

    /// When the request whose head was just read started (its first byte), taking it;
    /// now when unknown.
    pub fn take_head_start(&self) -> Instant {
        lock(&self.head_started).take().unwrap_or_else(Instant::now)
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A request under way on a connection, from its head until dropped (with the response
/// body it ends in, [`TrackedBody`]).
#[derive(Debug)]
pub struct InFlight(Arc<ConnState>);

impl InFlight {
    /// Marks one more request under way on `state`.
    pub fn new(state: &Arc<ConnState>) -> InFlight {
        state.active.fetch_add(1, Ordering::AcqRel);
        InFlight(state.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.finished.fetch_add(1, Ordering::AcqRel);
        if self.0.active.fetch_sub(1, Ordering::AcqRel) == 1 {
            if let Some(w) = lock(&self.0.idle_waker).take() {
                w.wake();
            }
        }
    }
}

/// A response body that holds its request's [`InFlight`] until it has been sent whole
/// (or dropped).
pub struct TrackedBody {
    inner: Body,
    in_flight: Option<InFlight>,
}

impl TrackedBody {
    /// `inner`, ending `in_flight` when it ends.
    pub fn new(inner: Body, in_flight: InFlight) -> TrackedBody {
        TrackedBody {
            inner,
            in_flight: Some(in_flight),
        }
    }
}

impl HttpBody for TrackedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if matches!(polled, Poll::Ready(None) | Poll::Ready(Some(Err(_)))) {
            self.in_flight = None;
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A request body under the request's deadline (see the module doc): it ends with
/// [`BodyTimedOut`] when the deadline passes before the body has arrived.
pub struct TimedBody<B = Incoming> {
    inner: B,
    deadline: Instant,
    timer: Pin<Box<Sleep>>,
    clocks: Clocks,
    done: bool,
}

impl<B> TimedBody<B> {
    /// `inner`, due `clocks.request_timeout` after `started` (the request's first byte).
    pub fn new(inner: B, started: Instant, clocks: Clocks) -> TimedBody<B> {
        let deadline = started + clocks.request_timeout;
        TimedBody {
            inner,
            deadline,
            timer: Box::pin(tokio::time::sleep_until(deadline)),
            clocks,
            done: false,
        }
    }

    /// `bytes` arrived: they earn `bytes / min_body_rate` seconds, up to one request
    /// timeout from now.
    fn earned(&mut self, bytes: usize) {
        if self.clocks.min_body_rate == 0 {
            return;
        }
        let extra = Duration::from_secs_f64(bytes as f64 / self.clocks.min_body_rate as f64);
        let cap = Instant::now() + self.clocks.request_timeout;
        self.deadline = (self.deadline + extra).min(cap).max(self.deadline);
    }
}

impl<B> HttpBody for TimedBody<B>
where
    B: HttpBody<Data = Bytes> + Unpin,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if self.done {
            return Poll::Ready(None);
        }
        match Pin::new(&mut self.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    let n = data.len();
                    self.earned(n);
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(e.into()))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => {
                let deadline = self.deadline;
                if passed(&mut self.timer, deadline, cx) {
                    self.done = true;
                    return Poll::Ready(Some(Err(Box::new(BodyTimedOut))));
                }
                Poll::Pending
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// Longest a closing connection is drained ([`TimedIo`]'s lingering close).
pub const LINGER_MAX: Duration = Duration::from_secs(5);

/// A closing connection whose client sends nothing for this long is closed at once.
pub const LINGER_QUIET: Duration = Duration::from_millis(500);

/// Where the reading side of a connection is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reading {
    /// No request under way, none started: the keep-alive clock.
    Idle,
    /// A request's first bytes arrived, its head is not complete: the request clock.
    Head,
    /// Requests are under way: no clock here.
    Busy,
}

/// A connection's IO with the idle, head and write clocks of the module doc; a clock
/// that runs out fails the read or write with [`io::ErrorKind::TimedOut`], which closes
/// the connection.
pub struct TimedIo<S> {
    inner: S,
    state: Arc<ConnState>,
    clocks: Clocks,
    reading: Reading,
    seen_finished: u64,
    read_deadline: Instant,
    read_timer: Pin<Box<Sleep>>,
    write_deadline: Option<Instant>,
    write_timer: Pin<Box<Sleep>>,
    /// Once the sending side is shut down: when the lingering close ends at the latest.
    linger_until: Option<Instant>,
}

impl<S> TimedIo<S> {
    /// `inner`, idle from now, sharing `state` with the connection's requests.
    pub fn new(inner: S, state: Arc<ConnState>, clocks: Clocks) -> TimedIo<S> {
        let now = Instant::now();
        let read_deadline = now + clocks.keep_alive_timeout;
        TimedIo {
            inner,
            state,
            clocks,
            reading: Reading::Idle,
            seen_finished: 0,
            read_deadline,
            read_timer: Box::pin(tokio::time::sleep_until(read_deadline)),
            write_deadline: None,
            write_timer: Box::pin(tokio::time::sleep_until(now)),
            linger_until: None,
        }
    }
}

/// Polls `timer` to `deadline`: whether it has passed (the task is woken when it does).
fn passed(timer: &mut Pin<Box<Sleep>>, deadline: Instant, cx: &mut Context<'_>) -> bool {
    if timer.deadline() != deadline {
        timer.as_mut().reset(deadline);
    }
    timer.as_mut().poll(cx).is_ready()
}

impl<S: AsyncRead + Unpin> AsyncRead for TimedIo<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.state.active.load(Ordering::Acquire) > 0 {
            this.reading = Reading::Busy;
            *lock(&this.state.idle_waker) = Some(cx.waker().clone());
            // Checked again: the last request may have ended before the waker was set.
            if this.state.active.load(Ordering::Acquire) > 0 {
                return Pin::new(&mut this.inner).poll_read(cx, buf);
            }
        }
        let finished = this.state.finished.load(Ordering::Acquire);
        if this.reading == Reading::Busy || finished != this.seen_finished {
            this.seen_finished = finished;
            this.reading = Reading::Idle;
            this.read_deadline = Instant::now() + this.clocks.keep_alive_timeout;
            *lock(&this.state.head_started) = None;
        }
        let before = buf.filled().len();
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                if buf.filled().len() > before && this.reading == Reading::Idle {
                    let now = Instant::now();
                    this.reading = Reading::Head;
                    this.read_deadline = now + this.clocks.request_timeout;
                    *lock(&this.state.head_started) = Some(now);
                }
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => {
                if passed(&mut this.read_timer, this.read_deadline, cx) {
                    let what = match this.reading {
                        Reading::Head => "the request head did not arrive in time",
                        _ => "the connection was idle for the keep-alive timeout",
                    };
                    return Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, what)));
                }
                Poll::Pending
            }
        }
    }
}

impl<S: AsyncWrite + Unpin> TimedIo<S> {
    /// Runs a write-side poll under the write clock: progress stops it, a stall past the
    /// request timeout fails with `TimedOut`.
    fn timed_write<T>(
        &mut self,
        cx: &mut Context<'_>,
        op: impl FnOnce(Pin<&mut S>, &mut Context<'_>) -> Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        match op(Pin::new(&mut self.inner), cx) {
            Poll::Ready(r) => {
                self.write_deadline = None;
                Poll::Ready(r)
            }
            Poll::Pending => {
                let timeout = self.clocks.request_timeout;
                let deadline = *self
                    .write_deadline
                    .get_or_insert_with(|| Instant::now() + timeout);
                if passed(&mut self.write_timer, deadline, cx) {
                    return Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "the client did not read the response in time",
                    )));
                }
                Poll::Pending
            }
        }
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for TimedIo<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.get_mut()
            .timed_write(cx, |s, cx| s.poll_write(cx, buf))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.get_mut()
            .timed_write(cx, |s, cx| s.poll_write_vectored(cx, bufs))
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().timed_write(cx, |s, cx| s.poll_flush(cx))
    }

    /// Shuts down the sending side, then drains what the client still sends (the
    /// lingering close of the module doc) before reporting the shutdown done.
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.linger_until.is_none() {
            match this.timed_write(cx, |s, cx| s.poll_shutdown(cx)) {
                Poll::Ready(Ok(())) => {}
                other => return other,
            }
            let now = Instant::now();
            this.linger_until = Some(now + LINGER_MAX);
            this.read_deadline = now + LINGER_QUIET;
        }
        let until = this.linger_until.unwrap_or_else(Instant::now);
        let mut scratch = [0u8; 8192];
        loop {
            let mut buf = ReadBuf::new(&mut scratch);
            match Pin::new(&mut this.inner).poll_read(cx, &mut buf) {
                Poll::Ready(Ok(())) if buf.filled().is_empty() => return Poll::Ready(Ok(())),
                Poll::Ready(Ok(())) => {
                    this.read_deadline = (Instant::now() + LINGER_QUIET).min(until);
                }
                // The client is gone or reset: nothing left to drain.
                Poll::Ready(Err(_)) => return Poll::Ready(Ok(())),
                Poll::Pending => {
                    let deadline = this.read_deadline.min(until);
                    if passed(&mut this.read_timer, deadline, cx) {
                        return Poll::Ready(Ok(()));
                    }
                    return Poll::Pending;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::sync::mpsc;

    /// A body fed through a channel: ends when the sender is dropped.
    struct Fed(mpsc::Receiver<Bytes>);

    impl HttpBody for Fed {
        type Data = Bytes;
        type Error = std::io::Error;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
            self.0.poll_recv(cx).map(|c| c.map(|c| Ok(Frame::data(c))))
        }
    }

    /// Reads `body` to its end: the bytes, or the error and when it came.
    async fn drain(body: TimedBody<Fed>) -> Result<usize, (bool, Instant)> {
        let mut body = body;
        let mut n = 0;
        loop {
            match std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
                None => return Ok(n),
                Some(Ok(f)) => n += f.data_ref().map_or(0, |d| d.len()),
                Some(Err(e)) => return Err((e.is::<BodyTimedOut>(), Instant::now())),
            }
        }
    }

    /// Feeds `chunk` every `every` for `times` times, then stalls (`stall`) or ends.
    fn feed(
        tx: mpsc::Sender<Bytes>,
        chunk: usize,
        every: Duration,
        times: usize,
        stall: bool,
    ) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            for _ in 0..times {
                tokio::time::sleep(every).await;
                if tx.send(Bytes::from(vec![b'a'; chunk])).await.is_err() {
                    return;
                }
            }
            if stall {
                tx.closed().await;
            }
        })
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_that_never_starts_is_cut_at_the_request_timeout() {
        let (tx, rx) = mpsc::channel(1);
        let start = Instant::now();
        let body = TimedBody::new(Fed(rx), start, CLOCKS);
        let (timed_out, at) = drain(body).await.unwrap_err();
        assert!(timed_out);
        assert_eq!(at - start, CLOCKS.request_timeout);
        drop(tx);
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_at_the_minimum_rate_is_never_cut() {
        // 1,000 B/s for 200 s: far past the request timeout.
        let (tx, rx) = mpsc::channel(1);
        let start = Instant::now();
        let feeder = feed(tx, 100, Duration::from_millis(100), 2000, false);
        let n = drain(TimedBody::new(Fed(rx), start, CLOCKS)).await.unwrap();
        assert_eq!(n, 200_000);
        assert_eq!(start.elapsed(), Duration::from_secs(200));
        feeder.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn a_large_body_that_stalls_is_cut_one_timeout_after_its_last_byte() {
        // 10 MB at once earns 10,000 s at 1,000 B/s, but at most one timeout ahead.
        let (tx, rx) = mpsc::channel(1);
        let start = Instant::now();
        let feeder = feed(tx, 10_000_000, Duration::from_secs(5), 1, true);
        let (timed_out, at) = drain(TimedBody::new(Fed(rx), start, CLOCKS))
            .await
            .unwrap_err();
        assert!(timed_out);
        assert_eq!(at - start, Duration::from_secs(5) + CLOCKS.request_timeout);
        feeder.abort();
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_slower_than_the_rate_is_cut_in_time() {
        // 500 B/s, half the rate: the 30 s shrink by half a second each second, so 60 s.
        let (tx, rx) = mpsc::channel(1);
        let start = Instant::now();
        let feeder = feed(tx, 500, Duration::from_secs(1), 1000, false);
        let (timed_out, at) = drain(TimedBody::new(Fed(rx), start, CLOCKS))
            .await
            .unwrap_err();
        assert!(timed_out);
        let took = (at - start).as_secs_f64();
        assert!((59.0..=61.0).contains(&took), "{took}");
        feeder.abort();
    }

    const CLOCKS: Clocks = Clocks {
        request_timeout: Duration::from_secs(30),
        min_body_rate: 1000,
        keep_alive_timeout: Duration::from_secs(60),
    };

    #[tokio::test(start_paused = true)]
    async fn an_idle_connection_closes_after_the_keep_alive_timeout() {
        let (client, server) = tokio::io::duplex(64);
        let _client = client;
        let mut io = TimedIo::new(server, ConnState::new(), CLOCKS);
        let start = Instant::now();
        let mut buf = [0u8; 8];
        let err = io.read(&mut buf).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert_eq!(start.elapsed(), CLOCKS.keep_alive_timeout);
    }

    #[tokio::test(start_paused = true)]
    async fn a_head_started_must_finish_within_the_request_timeout() {
        let (mut client, server) = tokio::io::duplex(64);
        let state = ConnState::new();
        let mut io = TimedIo::new(server, state.clone(), CLOCKS);
        tokio::time::advance(Duration::from_secs(50)).await;
        client.write_all(b"POST / HT").await.unwrap();
        let mut buf = [0u8; 64];
        assert_eq!(io.read(&mut buf).await.unwrap(), 9);
        let head_start = Instant::now();
        let err = io.read(&mut buf).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert_eq!(head_start.elapsed(), CLOCKS.request_timeout);
        assert_eq!(state.take_head_start(), head_start);
    }

    #[tokio::test(start_paused = true)]
    async fn nothing_is_timed_while_a_request_is_served_and_idle_starts_after_it() {
        let (mut client, server) = tokio::io::duplex(64);
        let state = ConnState::new();
        let mut io = TimedIo::new(server, state.clone(), CLOCKS);
        let in_flight = InFlight::new(&state);
        let reader = tokio::spawn(async move {
            let mut buf = [0u8; 8];
            let r = io.read(&mut buf).await;
            (r.map_err(|e| e.kind()), Instant::now())
        });
        // Far past every clock while the request is served.
        tokio::time::sleep(Duration::from_secs(600)).await;
        assert!(!reader.is_finished());
        let ended = Instant::now();
        drop(in_flight);
        let (r, at) = reader.await.unwrap();
        assert_eq!(r, Err(io::ErrorKind::TimedOut));
        assert_eq!(at - ended, CLOCKS.keep_alive_timeout, "idle from the end");
        drop(client.write_all(b"x").await);
    }

    #[tokio::test(start_paused = true)]
    async fn closing_drains_what_the_client_still_sends_until_it_pauses() {
        let (mut client, server) = tokio::io::duplex(64);
        let mut io = TimedIo::new(server, ConnState::new(), CLOCKS);
        let sender = tokio::spawn(async move {
            // The rest of a body, 10 bytes every 100 ms for a second, then a pause.
            for _ in 0..10 {
                tokio::time::sleep(Duration::from_millis(100)).await;
                client.write_all(&[b'x'; 10]).await.unwrap();
            }
            tokio::time::sleep(Duration::from_secs(3600)).await;
            drop(client);
        });
        let start = Instant::now();
        io.shutdown().await.unwrap();
        assert_eq!(start.elapsed(), Duration::from_secs(1) + LINGER_QUIET);
        sender.abort();
        // A client that closes is done with at once; one that never stops, at LINGER_MAX.
        let (client, server) = tokio::io::duplex(64);
        drop(client);
        let mut io = TimedIo::new(server, ConnState::new(), CLOCKS);
        let start = Instant::now();
        io.shutdown().await.unwrap();
        assert_eq!(start.elapsed(), Duration::ZERO);
        let (mut client, server) = tokio::io::duplex(64);
        let mut io = TimedIo::new(server, ConnState::new(), CLOCKS);
        let sender = tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(100)).await;
                if client.write_all(b"x").await.is_err() {
                    return;
                }
            }
        });
        let start = Instant::now();
        io.shutdown().await.unwrap();
        assert_eq!(start.elapsed(), LINGER_MAX);
        sender.abort();
    }

    #[tokio::test(start_paused = true)]
    async fn a_client_that_does_not_read_is_cut_after_the_request_timeout() {
        let (_client, server) = tokio::io::duplex(16);
        let mut io = TimedIo::new(server, ConnState::new(), CLOCKS);
        let start = Instant::now();
        let err = io.write_all(&[0u8; 64]).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert_eq!(start.elapsed(), CLOCKS.request_timeout);
    }
}
