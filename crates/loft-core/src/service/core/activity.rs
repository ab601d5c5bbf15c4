//! Activity counters: what the service has done since the process started, for `/metrics`.
//!
//! Counts live in memory (a restart starts them at zero, as Prometheus counters expect) and
//! are kept by the service where each event happens, so every protocol counts the same:
//! a message sent over SQS JSON, SQS Query, the seeds' API or an SNS fan-out is one send.
//! Queue gauges (visible, in flight, delayed) are not kept here: they are read from the store
//! when asked ([`crate::Service::queue_counts`]).

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::model::SubscriptionProtocol;

/// Counters of one queue, each a number of messages since the process started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueActivity {
    /// Messages stored in the queue by a send (SendMessage, SendMessageBatch entries, the
    /// seeds' POST, SNS fan-out, SNS delivery dead-lettering). FIFO duplicates are not
    /// counted; message-move tasks are not sends.
    pub sent: u64,
    /// Messages handed out by receives (a FIFO ReceiveRequestAttemptId replay is not a new
    /// receive).
    pub received: u64,
    /// Messages deleted by DeleteMessage, DeleteMessageBatch entries and the seeds' DELETE
    /// (deleting an already deleted message counts nothing; PurgeQueue is not counted).
    pub deleted: u64,
    /// Messages this queue moved to its dead-letter queue because a receive took them past
    /// maxReceiveCount (counted on the source queue).
    pub dead_lettered: u64,
    /// Messages of this queue a receive passed over because they cannot be decrypted
    /// (sealed under another master key, or damaged; see
    /// [`crate::model::ReceiveOutcome::undecryptable`]): each counted once per process.
    pub undecryptable: u64,
}

/// What became of one attempt to hand an SNS message to a subscriber.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DeliveryOutcome {
    /// Stored in the subscribed queue (sqs) or accepted with a 2xx (http/https).
    Delivered,
    /// Recorded for inspection (email, sms, application, lambda, firehose: Loft sends none).
    Recorded,
    /// An HTTP/S attempt failed; another attempt is scheduled.
    Retrying,
    /// Retries ran out; the message went to the subscription's dead-letter queue.
    DeadLettered,
    /// Not delivered and not kept: retries ran out with no dead-letter queue, or the
    /// subscribed queue does not exist.
    Dropped,
}

impl DeliveryOutcome {
    /// The label value: `delivered`, `recorded`, `retrying`, `dead_lettered`, `dropped`.
    pub fn as_str(self) -> &'static str {
        match self {
            DeliveryOutcome::Delivered => "delivered",
            DeliveryOutcome::Recorded => "recorded",
            DeliveryOutcome::Retrying => "retrying",
            DeliveryOutcome::DeadLettered => "dead_lettered",
            DeliveryOutcome::Dropped => "dropped",
        }
    }
}

/// A copy of every counter at one instant.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ActivitySnapshot {
    /// Counters by queue name, for every queue that has seen activity (deleted queues keep
    /// theirs until the process ends).
    pub queues: BTreeMap<String, QueueActivity>,
    /// SNS deliveries by (protocol, outcome): the subscription's protocol (`sqs`, `http`,
    /// `https`, `email`, ...; `sms` for Publish to a phone number).
    pub deliveries: BTreeMap<(String, DeliveryOutcome), u64>,
    /// SNS data protection by (topic name, direction, result): messages with findings
    /// (`with_findings`) and without (`without_findings`) by the audit statement, messages
    /// a Deny statement stopped (`denied`) and messages de-identified (`deidentified`);
    /// `direction` is `Inbound` (Publish) or `Outbound` (one subscription's delivery).
    pub data_protection: BTreeMap<(String, &'static str, &'static str), u64>,
    /// Sensitive data the audit statement found, by (topic name, data identifier name):
    /// every detection counts.
    pub findings: BTreeMap<(String, &'static str), u64>,
    /// SNS message replay copies by outcome: `delivered` (stored in the subscribed queue:
    /// AWS's CloudWatch `NumberOfReplayedNotificationsDelivered`) and `failed` (not
    /// delivered to it: sent to the subscription's dead-letter queue instead, AWS's
    /// `NumberOfReplayedNotificationsFailed`). These copies also count in `deliveries`.
    pub replayed: BTreeMap<&'static str, u64>,
}

/// The counters. Every method takes `&self`; one short lock per event.
#[derive(Debug, Default)]
pub struct Activity {
    queues: Mutex<BTreeMap<String, QueueActivity>>,
    deliveries: Mutex<BTreeMap<(String, DeliveryOutcome), u64>>,
    data_protection: Mutex<BTreeMap<(String, &'static str, &'static str), u64>>,
    findings: Mutex<BTreeMap<(String, &'static str), u64>>,
    replayed: Mutex<BTreeMap<&'static str, u64>>,
    published: Mutex<BTreeMap<String, u64>>,
}

impl Activity {
    fn queue(&self, name: &str, f: impl FnOnce(&mut QueueActivity)) {
        let mut map = self.queues.lock().unwrap_or_else(|p| p.into_inner());
        match map.get_mut(name) {
            Some(q) => f(q),
            None => f(map.entry(name.to_owned()).or_default()),
        }
    }

    /// `n` messages sent to `queue`.
    pub fn sent(&self, queue: &str, n: u64) {
        if n > 0 {
            self.queue(queue, |q| q.sent += n);
        }
    }

    /// `n` messages received from `queue`.
    pub fn received(&self, queue: &str, n: u64) {
        if n > 0 {
            self.queue(queue, |q| q.received += n);
        }
    }

    /// `n` messages deleted from `queue`.
    pub fn deleted(&self, queue: &str, n: u64) {
        if n > 0 {
            self.queue(queue, |q| q.deleted += n);
        }
    }

    /// `n` messages moved from `queue` to its dead-letter queue.
    pub fn dead_lettered(&self, queue: &str, n: u64) {
        if n > 0 {
            self.queue(queue, |q| q.dead_lettered += n);
        }
    }

    /// `n` messages of `queue` found undecryptable by a receive.
    pub fn undecryptable(&self, queue: &str, n: u64) {
        if n > 0 {
            self.queue(queue, |q| q.undecryptable += n);
        }
    }

    /// `n` messages published to `topic` (entries of Publish or PublishBatch it accepted).
    pub fn published(&self, topic: &str, n: u64) {
        if n > 0 {
            let mut map = self.published.lock().unwrap_or_else(|p| p.into_inner());
            match map.get_mut(topic) {
                Some(c) => *c += n,
                None => {
                    map.insert(topic.to_owned(), n);
                }
            }
        }
    }

    /// Messages published by topic since the process started ([`Activity::published`]).
    pub fn published_counts(&self) -> BTreeMap<String, u64> {
        self.published
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// `n` deliveries over `protocol` ended as `outcome`.
    pub fn delivery(&self, protocol: &str, outcome: DeliveryOutcome, n: u64) {
        if n > 0 {
            let mut map = self.deliveries.lock().unwrap_or_else(|p| p.into_inner());
            *map.entry((protocol.to_owned(), outcome)).or_default() += n;
        }
    }

    /// One SNS copy stored in `queue` by a publish or a replay: a send to the queue and an
    /// `sqs` delivery, [`DeliveryOutcome::DeadLettered`] when `dead_lettered` (the queue is
    /// the subscription's dead-letter queue), else [`DeliveryOutcome::Delivered`].
    pub fn sns_copy_stored(&self, queue: &str, dead_lettered: bool) {
        self.sent(queue, 1);
        let outcome = if dead_lettered {
            DeliveryOutcome::DeadLettered
        } else {
            DeliveryOutcome::Delivered
        };
        self.delivery(SubscriptionProtocol::Sqs.as_str(), outcome, 1);
    }

    /// One replayed copy ended as `outcome` (`delivered` or `failed`, see
    /// [`ActivitySnapshot::replayed`]).
    pub fn replayed(&self, outcome: &'static str) {
        let mut map = self.replayed.lock().unwrap_or_else(|p| p.into_inner());
        *map.entry(outcome).or_default() += 1;
    }

    /// One message of `topic` in `direction` had data protection `result` (see
    /// [`ActivitySnapshot::data_protection`]).
    pub fn data_protection(&self, topic: &str, direction: &'static str, result: &'static str) {
        let mut map = self
            .data_protection
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        *map.entry((topic.to_owned(), direction, result))
            .or_default() += 1;
    }

    /// The audit statement of `topic` found `n` pieces of `identifier` data.
    pub fn findings(&self, topic: &str, identifier: &'static str, n: u64) {
        if n > 0 {
            let mut map = self.findings.lock().unwrap_or_else(|p| p.into_inner());
            *map.entry((topic.to_owned(), identifier)).or_default() += n;
        }
    }

    /// Every counter now.
    pub fn snapshot(&self) -> ActivitySnapshot {
        ActivitySnapshot {
            queues: self
                .queues
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
            deliveries: self
                .deliveries
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
            data_protection: self
                .data_protection
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
            findings: self
                .findings
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
            replayed: self
                .replayed
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
        }
    }
}

/// The protocol of a queued delivery's endpoint: `lambda` for a function's ARN, else
/// `https` or `http` by the URL's scheme.
pub fn http_protocol(endpoint: &str) -> SubscriptionProtocol {
    if endpoint.starts_with("arn:aws:lambda:") {
        SubscriptionProtocol::Lambda
    } else if endpoint.starts_with("https://") {
        SubscriptionProtocol::Https
    } else {
        SubscriptionProtocol::Http
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_add_up_per_queue_and_outcome() {
        let a = Activity::default();
        a.sent("q", 3);
        a.sent("q", 0);
        a.received("q", 2);
        a.deleted("q", 1);
        a.dead_lettered("r", 4);
        a.delivery("sqs", DeliveryOutcome::Delivered, 2);
        a.delivery("sqs", DeliveryOutcome::Delivered, 1);
        let s = a.snapshot();
        assert_eq!(
            s.queues["q"],
            QueueActivity {
                sent: 3,
                received: 2,
                deleted: 1,
                dead_lettered: 0,
                undecryptable: 0
            }
        );
        assert_eq!(s.queues["r"].dead_lettered, 4);
        assert_eq!(
            s.deliveries[&("sqs".to_owned(), DeliveryOutcome::Delivered)],
            3
        );
        assert_eq!(s.queues.len(), 2);
    }
}
