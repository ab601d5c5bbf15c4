//! The console's charts: recent samples of every queue's and topic's counts and counters,
//! kept in this process's memory.
//!
//! A sampler ([`crate::Service::sample_history`], called every `--console-sample-interval`
//! by the server, 30 s by default) records for each queue its visible and in-flight
//! messages (read from the store) and its send and receive counters
//! ([`super::activity`]), and for each topic its publish counter and its pending HTTP/S
//! deliveries. The last [`HISTORY_SAMPLES`] samples are kept: one hour at the default
//! interval.
//!
//! The history is a view, not state: it is per node (each node samples the shared store
//! itself, and its send and receive rates are the requests *this node* served), it starts
//! empty when the node starts, and nothing that matters is lost on a restart.
//!
//! Memory is bounded: at most [`MAX_TRACKED`] queues and [`MAX_TRACKED`] topics (the first
//! by store key; the others have no chart) times [`HISTORY_SAMPLES`] samples of 40 bytes
//! (a queue) or 24 bytes (a topic): at most 24 MB of samples for queues and 14.4 MB for
//! topics, plus one name per tracked resource.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Mutex;
use std::time::Duration;

/// Samples kept per queue and per topic (120: an hour at the default interval).
pub const HISTORY_SAMPLES: usize = 120;

/// Most queues (and, separately, most topics) sampled; the rest, last by store key, have
/// no history.
pub const MAX_TRACKED: usize = 5_000;

/// Time between two samples unless the server is told otherwise (30 s).
pub const DEFAULT_SAMPLE_INTERVAL: Duration = Duration::from_secs(30);

/// One queue at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueSample {
    /// When, ms since the epoch (the service's clock).
    pub at_ms: i64,
    /// Visible messages (ApproximateNumberOfMessages).
    pub visible: i64,
    /// In-flight messages (ApproximateNumberOfMessagesNotVisible).
    pub in_flight: i64,
    /// Messages sent to the queue since this process started (the `sent` counter of
    /// [`super::activity::QueueActivity`]).
    pub sent: u64,
    /// Messages received from the queue since this process started.
    pub received: u64,
}

/// One topic at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TopicSample {
    /// When, ms since the epoch.
    pub at_ms: i64,
    /// Messages published to the topic since this process started (entries of Publish and
    /// PublishBatch the topic accepted).
    pub published: u64,
    /// HTTP/S deliveries of its subscriptions pending (due or waiting for a retry).
    pub pending: u64,
}

/// A queue's history as the console charts it: one entry per sample, oldest first. Rates
/// are per second over the time since the sample before (`None` for the first sample, or
/// when the counter went down).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QueueSeries {
    /// Sample times, ms since the epoch.
    pub at_ms: Vec<i64>,
    /// Visible messages.
    pub visible: Vec<i64>,
    /// In-flight messages.
    pub in_flight: Vec<i64>,
    /// Messages sent per second.
    pub sent_per_s: Vec<Option<f64>>,
    /// Messages received per second.
    pub received_per_s: Vec<Option<f64>>,
}

/// A topic's history: as [`QueueSeries`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TopicSeries {
    /// Sample times, ms since the epoch.
    pub at_ms: Vec<i64>,
    /// Messages published per second.
    pub published_per_s: Vec<Option<f64>>,
    /// Pending HTTP/S deliveries.
    pub pending: Vec<u64>,
}

/// The rate of a counter between two samples, per second.
fn rate(before: u64, after: u64, before_ms: i64, after_ms: i64) -> Option<f64> {
    let ms = after_ms - before_ms;
    if ms <= 0 || after < before {
        return None;
    }
    Some((after - before) as f64 * 1000.0 / ms as f64)
}

/// The rings, by store key. Every method takes `&self`; one short lock each.
#[derive(Debug, Default)]
pub struct History {
    queues: Mutex<BTreeMap<String, VecDeque<QueueSample>>>,
    topics: Mutex<BTreeMap<String, VecDeque<TopicSample>>>,
}

/// Adds one round of samples to `rings`: resources absent from `round` are forgotten
/// (deleted), at most [`MAX_TRACKED`] are kept, each ring at most [`HISTORY_SAMPLES`] long.
fn record<T>(rings: &Mutex<BTreeMap<String, VecDeque<T>>>, round: Vec<(String, T)>) {
    let mut map = rings.lock().unwrap_or_else(|p| p.into_inner());
    let mut old = std::mem::take(&mut *map);
    for (name, sample) in round.into_iter().take(MAX_TRACKED) {
        let mut ring = old
            .remove(&name)
            .unwrap_or_else(|| VecDeque::with_capacity(HISTORY_SAMPLES));
        if ring.len() == HISTORY_SAMPLES {
            ring.pop_front();
        }
        ring.push_back(sample);
        map.insert(name, ring);
    }
}

impl History {
    /// Records one sampling round of the queues (by store key); queues not in it are
    /// forgotten.
    pub fn record_queues(&self, round: Vec<(String, QueueSample)>) {
        record(&self.queues, round);
    }

    /// Records one sampling round of the topics (by store key).
    pub fn record_topics(&self, round: Vec<(String, TopicSample)>) {
        record(&self.topics, round);
    }

    /// Queue `key`'s samples, oldest first, with its rates (empty when it has none).
    pub fn queue(&self, key: &str) -> QueueSeries {
        let map = self.queues.lock().unwrap_or_else(|p| p.into_inner());
        let mut s = QueueSeries::default();
        let Some(ring) = map.get(key) else {
            return s;
        };
        let mut prev: Option<&QueueSample> = None;
        for q in ring {
            s.at_ms.push(q.at_ms);
            s.visible.push(q.visible);
            s.in_flight.push(q.in_flight);
            s.sent_per_s
                .push(prev.and_then(|p| rate(p.sent, q.sent, p.at_ms, q.at_ms)));
            s.received_per_s
                .push(prev.and_then(|p| rate(p.received, q.received, p.at_ms, q.at_ms)));
            prev = Some(q);
        }
        s
    }

    /// Topic `key`'s samples, oldest first, with its publish rate.
    pub fn topic(&self, key: &str) -> TopicSeries {
        let map = self.topics.lock().unwrap_or_else(|p| p.into_inner());
        let mut s = TopicSeries::default();
        let Some(ring) = map.get(key) else {
            return s;
        };
        let mut prev: Option<&TopicSample> = None;
        for t in ring {
            s.at_ms.push(t.at_ms);
            s.pending.push(t.pending);
            s.published_per_s
                .push(prev.and_then(|p| rate(p.published, t.published, p.at_ms, t.at_ms)));
            prev = Some(t);
        }
        s
    }

    /// How many queues and topics have a history now.
    pub fn tracked(&self) -> (usize, usize) {
        let q = self.queues.lock().unwrap_or_else(|p| p.into_inner()).len();
        let t = self.topics.lock().unwrap_or_else(|p| p.into_inner()).len();
        (q, t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(at_ms: i64, visible: i64, sent: u64, received: u64) -> QueueSample {
        QueueSample {
            at_ms,
            visible,
            in_flight: 1,
            sent,
            received,
        }
    }

    #[test]
    fn rates_are_per_second_between_samples_and_the_first_has_none() {
        let h = History::default();
        h.record_queues(vec![("a".into(), q(1_000, 5, 10, 0))]);
        h.record_queues(vec![("a".into(), q(3_000, 7, 30, 4))]);
        let s = h.queue("a");
        assert_eq!(s.at_ms, [1_000, 3_000]);
        assert_eq!(s.visible, [5, 7]);
        assert_eq!(s.in_flight, [1, 1]);
        assert_eq!(s.sent_per_s, [None, Some(10.0)]);
        assert_eq!(s.received_per_s, [None, Some(2.0)]);
        assert_eq!(h.queue("missing"), QueueSeries::default());
    }

    #[test]
    fn rings_keep_the_last_samples_and_forget_deleted_queues() {
        let h = History::default();
        for i in 0..(HISTORY_SAMPLES as i64 + 10) {
            h.record_queues(vec![
                ("a".into(), q(i * 1000, i, 0, 0)),
                ("b".into(), q(i * 1000, i, 0, 0)),
            ]);
        }
        let s = h.queue("a");
        assert_eq!(s.at_ms.len(), HISTORY_SAMPLES);
        assert_eq!(s.visible[0], 10, "the oldest ten were dropped");
        h.record_queues(vec![("a".into(), q(1_000_000, 0, 0, 0))]);
        assert_eq!(h.queue("b"), QueueSeries::default(), "b is gone");
        assert_eq!(h.tracked(), (1, 0));
    }

    #[test]
    fn at_most_max_tracked_queues_are_kept() {
        let h = History::default();
        let round: Vec<(String, QueueSample)> = (0..MAX_TRACKED + 3)
            .map(|i| (format!("q{i:05}"), q(0, 0, 0, 0)))
            .collect();
        h.record_queues(round);
        assert_eq!(h.tracked().0, MAX_TRACKED);
    }

    #[test]
    fn a_counter_that_went_down_has_no_rate() {
        let h = History::default();
        h.record_topics(vec![(
            "t".into(),
            TopicSample {
                at_ms: 0,
                published: 9,
                pending: 0,
            },
        )]);
        h.record_topics(vec![(
            "t".into(),
            TopicSample {
                at_ms: 500,
                published: 2,
                pending: 3,
            },
        )]);
        let s = h.topic("t");
        assert_eq!(s.published_per_s, [None, None]);
        assert_eq!(s.pending, [0, 3]);
    }
}
