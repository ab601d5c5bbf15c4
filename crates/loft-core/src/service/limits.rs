//! Limits: how many queues and topics may exist, and how many messages one queue may have
//! in flight (received and not yet deleted or visible again).
//!
//! Sources: SQS Developer Guide "Amazon SQS message quotas" (in-flight messages: 120,000
//! per standard queue, answered with `OverLimit`; 20,000 per FIFO queue, where a receive
//! simply returns no messages); SNS "Amazon SNS endpoints and quotas" (100,000 standard
//! topics per account, `TopicLimitExceeded`). SQS has no queue count quota; Loft's is a
//! guard for a single node's disk and memory, answered with `OverLimit`.
//!
//! Counts are kept by this process: queue and topic counts are read from the store once
//! and then followed through creates and deletes; in-flight counts are an upper bound
//! (the last count plus what was received since) recounted from the store when the bound
//! nears the limit, at most every [`RECOUNT_INTERVAL`], so a busy queue is not scanned on
//! every receive. A recount (`Store::count_in_flight`) reads only the messages not visible
//! now, so a deep backlog of visible messages does not make it slow (the first receive of
//! a queue with 1,000,000 waiting messages once stalled the store for seconds reading all
//! of them). Nodes sharing one database each enforce their own view, so the limits
//! are approximate there, as AWS's are.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::Service;
use crate::error::{Error, ErrorCode, Result};
use crate::model::{QueueRecord, TopicRecord};

type Map = std::collections::BTreeMap<String, String>;

/// The shortest time between two in-flight recounts of one queue while it is at its limit.
pub const RECOUNT_INTERVAL: Duration = Duration::from_millis(200);

/// The longest a queue's in-flight bound is trusted once it passes half the limit (other
/// nodes sharing the database receive too).
pub const RECOUNT_MAX_AGE: Duration = Duration::from_secs(60);

/// Configurable caps. Every count is a number of items, not bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Most queues that may exist (default 100,000). Creating one more: `OverLimit` (403).
    pub max_queues: u64,
    /// Most topics that may exist (default 100,000, SNS's standard-topic quota). Creating
    /// one more: `TopicLimitExceeded` (403).
    pub max_topics: u64,
    /// Most in-flight messages of a standard queue (default 120,000, as SQS). A receive at
    /// the limit: `OverLimit` (403); near it, fewer messages than asked.
    pub max_in_flight: u64,
    /// Most in-flight messages of a FIFO queue (default 20,000, as SQS). A receive at the
    /// limit returns no messages, without an error, as SQS does.
    pub max_in_flight_fifo: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_queues: 100_000,
            max_topics: 100_000,
            max_in_flight: 120_000,
            max_in_flight_fifo: 20_000,
        }
    }
}

/// One queue's in-flight upper bound: `counted` at `at`, plus `received` since.
#[derive(Debug, Clone, Copy)]
struct Gauge {
    counted: i64,
    received: i64,
    at: Instant,
}

/// The process's counts behind [`Limits`].
#[derive(Debug)]
pub(crate) struct Counters {
    /// Queues that exist; -1 until first read from the store.
    queues: AtomicI64,
    /// Topics that exist; -1 until first read from the store.
    topics: AtomicI64,
    /// In-flight bounds by queue id.
    in_flight: Mutex<HashMap<i64, Gauge>>,
}

impl Default for Counters {
    fn default() -> Self {
        Counters {
            queues: AtomicI64::new(-1),
            topics: AtomicI64::new(-1),
            in_flight: Mutex::default(),
        }
    }
}

/// Takes one slot of `counter` unless it is at `max`; false when full.
fn reserve(counter: &AtomicI64, max: u64) -> bool {
    counter
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
            (n < max as i64).then_some(n + 1)
        })
        .is_ok()
}

/// Gives a slot back (a create that did not create, a delete).
fn release(counter: &AtomicI64) {
    let _ = counter.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
        (n > 0).then_some(n - 1)
    });
}

/// What a receive may take, from [`Service::in_flight_room`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Room {
    /// Up to this many messages (at least 1).
    Messages(u32),
    /// None now: a FIFO queue at its limit (the receive returns nothing).
    Full,
}

impl Service {
    async fn count_queues(&self) -> Result<()> {
        if self.counters.queues.load(Ordering::SeqCst) < 0 {
            let n = self.store.list_queues().await?.len() as i64;
            let _ =
                self.counters
                    .queues
                    .compare_exchange(-1, n, Ordering::SeqCst, Ordering::SeqCst);
        }
        Ok(())
    }

    async fn count_topics(&self) -> Result<()> {
        if self.counters.topics.load(Ordering::SeqCst) < 0 {
            let n = self.store.list_topics().await?.len() as i64;
            let _ =
                self.counters
                    .topics
                    .compare_exchange(-1, n, Ordering::SeqCst, Ordering::SeqCst);
        }
        Ok(())
    }

    /// Creates queue `name` in the store (or returns the existing one, `false`), within
    /// [`Limits::max_queues`]. Every path that creates a queue goes through here.
    ///
    /// Errors: `OverLimit` when the cap is reached and `name` does not exist; store errors.
    pub(crate) async fn store_create_queue(
        &self,
        name: &str,
        attributes: Map,
        tags: Map,
    ) -> Result<(QueueRecord, bool)> {
        self.count_queues().await?;
        let max = self.config.limits.max_queues;
        let reserved = reserve(&self.counters.queues, max);
        if !reserved && self.store.get_queue(name).await?.is_none() {
            return Err(Error::new(
                ErrorCode::OverLimit,
                format!("Cannot create the queue: the limit of {max} queues is reached."),
            ));
        }
        let result = self
            .store
            .create_queue(name, attributes, tags, self.now_ms())
            .await;
        if reserved && !matches!(result, Ok((_, true))) {
            release(&self.counters.queues);
        }
        result
    }

    /// Records that queue `queue_id` was deleted.
    pub(crate) fn queue_deleted(&self, queue_id: i64) {
        release(&self.counters.queues);
        self.counters
            .in_flight
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&queue_id);
    }

    /// Creates topic `name` in the store (or returns the existing one, `false`), within
    /// [`Limits::max_topics`]. Every path that creates a topic goes through here.
    ///
    /// Errors: `TopicLimitExceeded` when the cap is reached and `name` does not exist.
    pub(crate) async fn store_create_topic(
        &self,
        name: &str,
        attributes: Map,
        tags: Map,
    ) -> Result<(TopicRecord, bool)> {
        self.count_topics().await?;
        let max = self.config.limits.max_topics;
        let reserved = reserve(&self.counters.topics, max);
        if !reserved && self.store.get_topic(name).await?.is_none() {
            return Err(Error::new(
                ErrorCode::TopicLimitExceeded,
                format!("Topic limit exceeded: the limit of {max} topics is reached."),
            ));
        }
        let result = self
            .store
            .create_topic(name, attributes, tags, self.now_ms())
            .await;
        if reserved && !matches!(result, Ok((_, true))) {
            release(&self.counters.topics);
        }
        result
    }

    /// Records that a topic was deleted.
    pub(crate) fn topic_deleted(&self) {
        release(&self.counters.topics);
    }

    /// How many of `want` messages a receive from queue `queue_id` may take without
    /// passing the queue's in-flight limit.
    ///
    /// Errors: `OverLimit` for a standard queue at its limit; store errors.
    pub(crate) async fn in_flight_room(
        &self,
        queue_id: i64,
        fifo: bool,
        want: u32,
    ) -> Result<Room> {
        let limit = if fifo {
            self.config.limits.max_in_flight_fifo
        } else {
            self.config.limits.max_in_flight
        } as i64;
        let gauge = self
            .counters
            .in_flight
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&queue_id)
            .copied();
        let recount = match gauge {
            None => true,
            Some(g) => {
                let bound = g.counted + g.received;
                let age = g.at.elapsed();
                (bound + want as i64 > limit && age >= RECOUNT_INTERVAL)
                    || (bound > limit / 2 && age >= RECOUNT_MAX_AGE)
            }
        };
        let bound = if recount {
            let counted = self.store.count_in_flight(queue_id, self.now_ms()).await?;
            self.counters
                .in_flight
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(
                    queue_id,
                    Gauge {
                        counted,
                        received: 0,
                        at: Instant::now(),
                    },
                );
            counted
        } else {
            gauge.map_or(0, |g| g.counted + g.received)
        };
        let room = (limit - bound).clamp(0, want as i64) as u32;
        if room > 0 {
            return Ok(Room::Messages(room));
        }
        if fifo {
            return Ok(Room::Full);
        }
        Err(Error::new(
            ErrorCode::OverLimit,
            format!(
                "The queue has the maximum of {limit} in-flight messages. Delete messages or \
                 let their visibility timeouts end before receiving more."
            ),
        ))
    }

    /// Adds `n` received messages to queue `queue_id`'s in-flight bound.
    pub(crate) fn note_received(&self, queue_id: i64, n: usize) {
        if n == 0 {
            return;
        }
        if let Some(g) = self
            .counters
            .in_flight
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_mut(&queue_id)
        {
            g.received += n as i64;
        }
    }
}
