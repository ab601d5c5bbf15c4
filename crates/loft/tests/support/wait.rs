//! Waiting for an event, in one place: poll a condition every few milliseconds until it
//! holds or a deadline passes. The only sleeps of the integration tests live here, each
//! inside a loop bounded by its deadline, so no test stands a fixed pause in for
//! synchronisation; a test that waits for time to pass (a visibility timeout, a delay)
//! polls for the effect it expects (the message becomes receivable) instead.
//!
//! Included by path (`#[path = "../support/wait.rs"] mod wait;`) into every test binary.

#![allow(dead_code)]

use std::future::Future;
use std::time::{Duration, Instant};

/// How often a condition is polled.
pub const EVERY: Duration = Duration::from_millis(20);

/// Polls `check` every [`EVERY`] until it returns `Some`, for at most `within`; `None` when
/// the deadline passed first (`check` runs at least once, and once more at the deadline).
pub async fn poll<T, F, Fut>(within: Duration, mut check: F) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + within;
    loop {
        if let Some(v) = check().await {
            return Some(v);
        }
        let now = Instant::now();
        if now >= deadline {
            return None;
        }
        tokio::time::sleep(EVERY.min(deadline - now)).await;
    }
}

/// [`poll`], panicking with `what` when the deadline passes.
pub async fn eventually<T, F, Fut>(what: &str, within: Duration, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    match poll(within, check).await {
        Some(v) => v,
        None => panic!("timed out after {within:?} waiting for {what}"),
    }
}

/// Waits until `cond` holds, at most `within`; whether it did.
pub async fn until<F, Fut>(within: Duration, mut cond: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    poll(within, || {
        let f = cond();
        async move { f.await.then_some(()) }
    })
    .await
    .is_some()
}

/// The blocking form of [`poll`] (for tests and helpers outside a runtime).
pub fn poll_blocking<T>(within: Duration, mut check: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + within;
    loop {
        if let Some(v) = check() {
            return Some(v);
        }
        let now = Instant::now();
        if now >= deadline {
            return None;
        }
        std::thread::sleep(EVERY.min(deadline - now));
    }
}

/// The blocking form of [`until`].
pub fn until_blocking(within: Duration, mut cond: impl FnMut() -> bool) -> bool {
    poll_blocking(within, || cond().then_some(())).is_some()
}

/// Keeps polling `check` every [`EVERY`] for all of `window`, asserting it stays `true`
/// the whole time (for "nothing happens" checks: no delivery, no message): the pause is
/// the observation itself, bounded by `window`. Panics with `what` at the first `false`.
pub async fn holds_for<F, Fut>(what: &str, window: Duration, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + window;
    loop {
        assert!(check().await, "{what} stopped holding");
        let now = Instant::now();
        if now >= deadline {
            return;
        }
        tokio::time::sleep(EVERY.min(deadline - now)).await;
    }
}

/// The blocking form of [`holds_for`].
pub fn holds_for_blocking(what: &str, window: Duration, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + window;
    loop {
        assert!(check(), "{what} stopped holding");
        let now = Instant::now();
        if now >= deadline {
            return;
        }
        std::thread::sleep(EVERY.min(deadline - now));
    }
}

/// A party of the test that is slow on purpose (a client on a slow link, a producer's
/// retry pause, a fake function host doing its work): waits `gap` between two of its own
/// steps. Not a wait on Loft: the test measures what Loft does with a peer this slow.
pub async fn pace(gap: Duration) {
    tokio::time::sleep(gap).await;
}

/// The blocking form of [`pace`].
pub fn pace_blocking(gap: Duration) {
    std::thread::sleep(gap);
}
