//! The SQLite store's read cache of topics and their subscription lists.
//!
//! Every SNS Publish reads its topic (`get_topic`) and the topic's subscriptions
//! (`list_subscriptions`) before it fans out; through the one connection each read was a
//! job of its own for the writer (a thread hand-off under load, a savepoint, the rows'
//! JSON attributes parsed again), two of a publish's three store jobs. The SQLite file
//! is held with an EXCLUSIVE lock by one Loft process (see [`super::SqliteStore::open`]),
//! so every change to a topic or a subscription goes through this store: each such write
//! [`TopicCache::forget`]s everything once it is done (committed or not), and a read that
//! raced with one is not kept ([`TopicCache::generation`]). What a read returns is
//! therefore always what the database holds, as without the cache.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use loft_core::model::{SubscriptionRecord, TopicRecord};

/// Most entries kept in each map; past it the map is emptied (a client looking up many
/// names that do not exist must not grow the cache without end).
const MAX_ENTRIES: usize = 4096;

#[derive(Default)]
struct Inner {
    /// Bumped by every [`TopicCache::forget`].
    generation: u64,
    /// `get_topic` answers by name (`None`: no such topic).
    topics: HashMap<String, Option<TopicRecord>>,
    /// `list_subscriptions(Some(topic_id))` answers by topic id.
    subscriptions: HashMap<i64, Vec<SubscriptionRecord>>,
}

/// Topics by name and subscription lists by topic id, as last read from the database.
#[derive(Default)]
pub(super) struct TopicCache(Mutex<Inner>);

impl TopicCache {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The current generation: read it before a database read, and pass it to
    /// [`TopicCache::keep_topic`] or [`TopicCache::keep_subscriptions`] after.
    pub(super) fn generation(&self) -> u64 {
        self.lock().generation
    }

    /// The cached answer of `get_topic(name)`, if any.
    pub(super) fn topic(&self, name: &str) -> Option<Option<TopicRecord>> {
        self.lock().topics.get(name).cloned()
    }

    /// The cached answer of `list_subscriptions(Some(topic_id))`, if any.
    pub(super) fn subscriptions(&self, topic_id: i64) -> Option<Vec<SubscriptionRecord>> {
        self.lock().subscriptions.get(&topic_id).cloned()
    }

    /// Keeps `topic` as `name`'s answer, unless a write forgot the cache since
    /// `generation` was read.
    pub(super) fn keep_topic(&self, generation: u64, name: &str, topic: &Option<TopicRecord>) {
        let mut inner = self.lock();
        if inner.generation != generation {
            return;
        }
        if inner.topics.len() >= MAX_ENTRIES {
            inner.topics.clear();
        }
        inner.topics.insert(name.to_owned(), topic.clone());
    }

    /// Keeps `subscriptions` as topic `topic_id`'s list, unless a write forgot the cache
    /// since `generation` was read.
    pub(super) fn keep_subscriptions(
        &self,
        generation: u64,
        topic_id: i64,
        subscriptions: &[SubscriptionRecord],
    ) {
        let mut inner = self.lock();
        if inner.generation != generation {
            return;
        }
        if inner.subscriptions.len() >= MAX_ENTRIES {
            inner.subscriptions.clear();
        }
        inner.subscriptions.insert(topic_id, subscriptions.to_vec());
    }

    /// Drops everything cached; called after every write to topics or subscriptions.
    pub(super) fn forget(&self) {
        let mut inner = self.lock();
        inner.generation += 1;
        inner.topics.clear();
        inner.subscriptions.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topic(id: i64) -> TopicRecord {
        TopicRecord {
            id,
            name: "t".into(),
            attributes: Default::default(),
            tags: Default::default(),
            created_at_ms: 0,
        }
    }

    #[test]
    fn a_read_that_raced_with_a_write_is_not_kept() {
        let cache = TopicCache::default();
        let before = cache.generation();
        cache.forget();
        cache.keep_topic(before, "t", &Some(topic(1)));
        assert_eq!(cache.topic("t"), None);
        let now = cache.generation();
        cache.keep_topic(now, "t", &Some(topic(1)));
        assert_eq!(cache.topic("t"), Some(Some(topic(1))));
        cache.forget();
        assert_eq!(cache.topic("t"), None);
    }
}
