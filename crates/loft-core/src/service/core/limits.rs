//! Limits: how many queues and topics may exist, and how many messages one queue may have
//! in flight (received and not yet deleted or visible again).
//!
//! Sources: SQS Developer Guide "Amazon SQS message quotas" (in-flight messages: 120,000
//! per standard queue, answered with `OverLimit`; 20,000 per FIFO queue, where a receive
//! simply returns no messages); SNS "Amazon SNS endpoints and quotas" (100,000 standard
//! topics per account, `TopicLimitExceeded`). SQS has no queue count quota; Loft's is a
//! guard for a single node's disk and memory, answered with `OverLimit`.
//!
//! Every count here is a cache of the store, rebuilt from it at any moment: none is state
//! of its own.
//!
//! - Queue and topic counts ([`Counters`]): per account, as AWS's quotas are (SQS and SNS
//!   quotas are per account; Loft counts an account's queues or topics in all its regions
//!   together), so one tenant filling its quota never refuses another's creates nor sees
//!   their deletes through its count. With one account only
//!   ([`ServiceConfig::multi_account`](super::ServiceConfig::multi_account) off) the count
//!   is of every queue or topic, as it always was. Read from the store
//!   (`Store::count_queues_of`, `Store::count_topics_of`; `Store::count_queues`,
//!   `Store::count_topics` with one account), then followed through this node's creates
//!   and deletes, and read again when [`RECOUNT_MAX_AGE`] old (so other nodes' creates and deletes show
//!   within a minute) and before any refusal (so a node refuses a create only on a count
//!   the store just gave). Two nodes creating the last free slots at the same instant may
//!   both pass: the caps are exact on one node and approximate across nodes, by design,
//!   as AWS's quotas are.
//! - In-flight counts: an upper bound (the last count plus what this node received since)
//!   recounted from the store when the bound nears the limit, at most every
//!   [`RECOUNT_INTERVAL`], so a busy queue is not scanned on every receive, and when older
//!   than [`RECOUNT_MAX_AGE`] past half the limit (other nodes receive too). A recount
//!   (`Store::count_in_flight`) reads only the messages not visible now, so a deep backlog
//!   of visible messages does not make it slow (the first receive of a queue with
//!   1,000,000 waiting messages once stalled the store for seconds reading all of them).
//!   Per node by design: each node bounds its own receives; across nodes the limit is
//!   approximate, as AWS's is.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::Core;
use crate::error::{Error, ErrorCode, Result};
use crate::model::{QueueRecord, TopicRecord};
use crate::names;

type Map = std::collections::BTreeMap<String, String>;

/// The shortest time between two in-flight recounts of one queue while it is at its limit.
pub const RECOUNT_INTERVAL: Duration = Duration::from_millis(200);

/// The longest a queue's in-flight bound is trusted once it passes half the limit, and a
/// queue or topic count at all (other nodes sharing the database create, delete and
/// receive too).
pub const RECOUNT_MAX_AGE: Duration = Duration::from_secs(60);

/// Configurable caps. Every count is a number of items, not bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Most queues one account may have, in all its regions (default 100,000). Creating one
    /// more: `OverLimit` (403).
    pub max_queues: u64,
    /// Most topics one account may have, in all its regions (default 100,000, SNS's
    /// standard-topic quota, per account). Creating one more: `TopicLimitExceeded` (403).
    pub max_topics: u64,
    /// Most in-flight messages of a standard queue (default 120,000, as SQS). A receive at
    /// the limit: `OverLimit` (403); near it, fewer messages than asked.
    pub max_in_flight: u64,
    /// Most in-flight messages of a FIFO queue (default 20,000, as SQS). A receive at the
    /// limit returns no messages, without an error, as SQS does.
    pub max_in_flight_fifo: u64,
    /// Whether FIFO queues' throughput quotas are enforced (default on, as AWS; see
    /// `quotas`): 300 SendMessage, ReceiveMessage and DeleteMessage transactions a second
    /// per queue (`perQueue`) or per message group (`perMessageGroupId`), past them
    /// `RequestThrottled` (403). Off: FIFO queues are as fast as Loft is.
    pub sqs_quotas: bool,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_queues: 100_000,
            max_topics: 100_000,
            max_in_flight: 120_000,
            max_in_flight_fifo: 20_000,
            sqs_quotas: true,
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

/// A count of the store's queues or topics: `n` as read at `at` (`None`: never read),
/// followed since through this node's creates and deletes.
#[derive(Debug, Default)]
struct Count {
    n: i64,
    at: Option<Instant>,
}

/// The counts behind [`Limits`]: caches of the store, rebuilt from it (module doc).
#[derive(Debug, Default)]
pub(crate) struct Counters {
    /// Queues that exist, by account (`""`: every queue, with one account only).
    queues: Mutex<HashMap<String, Count>>,
    /// Topics that exist, by account (as `queues`).
    topics: Mutex<HashMap<String, Count>>,
    /// In-flight bounds by queue id.
    in_flight: Mutex<HashMap<i64, Gauge>>,
}

/// Which count.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Queues,
    Topics,
}

impl Counters {
    fn of(&self, kind: Kind) -> std::sync::MutexGuard<'_, HashMap<String, Count>> {
        match kind {
            Kind::Queues => &self.queues,
            Kind::Topics => &self.topics,
        }
        .lock()
        .unwrap_or_else(|p| p.into_inner())
    }
}

/// Gives a slot of `account` back (a create that did not create, a delete).
fn release(counts: &mut HashMap<String, Count>, account: &str) {
    if let Some(count) = counts.get_mut(account) {
        count.n = (count.n - 1).max(0);
    }
}

/// What a receive may take, from [`Core::in_flight_room`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Room {
    /// Up to this many messages (at least 1).
    Messages(u32),
    /// None now: a FIFO queue at its limit (the receive returns nothing).
    Full,
}

impl Core {
    /// The account whose count store key `key` falls in: its account, or `""` (every
    /// resource) with one account only
    /// ([`ServiceConfig::multi_account`](super::ServiceConfig::multi_account) off).
    fn count_account(&self, key: &str) -> String {
        if self.config.multi_account {
            self.split_key(key).0.to_owned()
        } else {
            String::new()
        }
    }

    /// The store's count of kind `kind` for `account` ([`Core::count_account`]).
    async fn store_count(&self, kind: Kind, account: &str) -> Result<u64> {
        if account.is_empty() {
            return match kind {
                Kind::Queues => self.store.count_queues().await,
                Kind::Topics => self.store.count_topics().await,
            };
        }
        let prefix = format!("{account}{}", names::ACCOUNT_SEPARATOR);
        // The default account's keys in the default region are bare names.
        let bare = account == self.config.account_id;
        match kind {
            Kind::Queues => self.store.count_queues_of(&prefix, bare).await,
            Kind::Topics => self.store.count_topics_of(&prefix, bare).await,
        }
    }

    /// Takes one slot of count `kind` of `account` unless `max` are taken; false when
    /// full. The count is read from the store when never read or [`RECOUNT_MAX_AGE`] old,
    /// and again before answering false.
    async fn reserve(&self, kind: Kind, account: &str, max: u64) -> Result<bool> {
        for fresh in [false, true] {
            let stale = {
                let c = self.counters.of(kind);
                c.get(account)
                    .and_then(|c| c.at)
                    .is_none_or(|at| at.elapsed() >= RECOUNT_MAX_AGE)
            };
            let recounted = fresh || stale;
            if recounted {
                let n = self.store_count(kind, account).await? as i64;
                self.counters.of(kind).insert(
                    account.to_owned(),
                    Count {
                        n,
                        at: Some(Instant::now()),
                    },
                );
            }
            let mut counts = self.counters.of(kind);
            let c = counts.entry(account.to_owned()).or_default();
            if c.n < max as i64 {
                c.n += 1;
                return Ok(true);
            }
            if recounted {
                return Ok(false);
            }
        }
        Ok(false)
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
        let max = self.config.limits.max_queues;
        let account = self.count_account(name);
        let reserved = self.reserve(Kind::Queues, &account, max).await?;
        if !reserved && self.store.get_queue(name).await?.is_none() {
            return Err(Error::new(
                ErrorCode::OverLimit,
                format!("Cannot create the queue: the limit of {max} queues for this account is reached."),
            ));
        }
        // A queue with a dead-letter queue is placed beside it where the store chooses.
        let beside = attributes
            .get("RedrivePolicy")
            .and_then(|text| crate::attributes::RedrivePolicy::parse(text).ok())
            .map(|policy| self.dlq_key(&policy))
            .filter(|key| !key.is_empty());
        let result = self
            .store
            .create_queue_beside(name, attributes, tags, self.now_ms(), beside.as_deref())
            .await;
        if reserved && !matches!(result, Ok((_, true))) {
            release(&mut self.counters.of(Kind::Queues), &account);
        }
        result
    }

    /// Records that queue `queue_id` (store key `key`) was deleted.
    pub(crate) fn queue_deleted(&self, key: &str, queue_id: i64) {
        let account = self.count_account(key);
        release(&mut self.counters.of(Kind::Queues), &account);
        self.quotas.forget(queue_id);
        self.counters
            .in_flight
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&queue_id);
    }

    /// Forgets the counts after a reset removed queues `queue_ids` and topics: the queue
    /// and topic counts are read again at the next create, the queues' in-flight bounds
    /// and FIFO quota buckets dropped.
    pub(crate) fn forget_counts(&self, queue_ids: &[i64]) {
        self.counters.of(Kind::Queues).clear();
        self.counters.of(Kind::Topics).clear();
        let mut in_flight = self
            .counters
            .in_flight
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        for id in queue_ids {
            in_flight.remove(id);
            self.quotas.forget(*id);
        }
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
        let max = self.config.limits.max_topics;
        let account = self.count_account(name);
        let reserved = self.reserve(Kind::Topics, &account, max).await?;
        if !reserved && self.store.get_topic(name).await?.is_none() {
            return Err(Error::new(
                ErrorCode::TopicLimitExceeded,
                format!(
                    "Topic limit exceeded: the limit of {max} topics for this account is reached."
                ),
            ));
        }
        let result = self
            .store
            .create_topic(name, attributes, tags, self.now_ms())
            .await;
        if reserved && !matches!(result, Ok((_, true))) {
            release(&mut self.counters.of(Kind::Topics), &account);
        }
        result
    }

    /// Records that the topic of store key `key` was deleted.
    pub(crate) fn topic_deleted(&self, key: &str) {
        let account = self.count_account(key);
        release(&mut self.counters.of(Kind::Topics), &account);
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
