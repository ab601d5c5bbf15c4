//! SQS FIFO throughput quotas: how many SendMessage, ReceiveMessage and DeleteMessage
//! transactions a FIFO queue takes per second, answered with `RequestThrottled` past them.
//!
//! Sources: SQS Developer Guide "Amazon SQS message quotas" (Message throughput: a FIFO
//! queue without high throughput takes 300 transactions per second per API action,
//! `SendMessage`, `ReceiveMessage` and `DeleteMessage`; a batch is one transaction, so up
//! to 3,000 messages per second with batches of 10; in high throughput mode the queue's
//! ceiling is the Region's, 70,000 transactions per second per action in US East
//! (N. Virginia), US West (Oregon) and Europe (Ireland), 19,000 in US East (Ohio) and
//! Europe (Frankfurt)), "Partitions and data distribution for high throughput for SQS FIFO
//! queues" (a message group lives in one partition, and a partition takes 300 send,
//! receive or delete transactions a second), "Troubleshoot FIFO throttling issues";
//! CreateQueue's `FifoThroughputLimit` ("whether the FIFO queue throughput quota applies
//! to the entire queue or per message group"); the botocore model's `RequestThrottled`
//! and its retry configuration (`_retry.json`: SQS `RequestThrottled` with HTTP 403 is a
//! throttling error the SDKs retry).
//!
//! What Loft counts, per FIFO queue and per action (a batch request is one transaction of
//! its action; ChangeMessageVisibility is not among the quota's actions):
//!
//! - `FifoThroughputLimit` `perQueue` (the default): [`PER_QUEUE_TPS`] per action.
//! - `perMessageGroupId` (high throughput): [`PER_GROUP_TPS`] per action per message group
//!   for sends, whose groups the request names (a batch is one transaction of each group
//!   it names), and the Region's ceiling ([`high_throughput_tps`]) per action for the
//!   whole queue. Receives and deletes name no group, so only the ceiling applies to them.
//!
//! Each count is a token bucket on the Service clock holding one second of burst: full
//! (the quota's number of transactions) when unused, refilled continuously at the quota's
//! rate; a transaction takes one token, and one that finds none is refused before it does
//! anything. Standard queues are not counted ("nearly unlimited" on AWS), nor are Loft's
//! own event source mapping poller (it stands for Lambda's), the seeds' REST API, the
//! console, and SNS deliveries into FIFO queues: the quota meters SQS API calls. The buckets are
//! this process's (per node by design, like the other limits): N nodes sharing a
//! PostgreSQL database each allow the quota, so together up to N times it. The operator
//! switch `--no-sqs-quotas` ([`crate::service::core::limits::Limits::sqs_quotas`]) turns them off.

use std::collections::HashMap;
use std::sync::Mutex;

use super::Core;
use crate::error::{Error, ErrorCode, Result};
use crate::model::QueueRecord;

/// Transactions per second per action of a FIFO queue with `FifoThroughputLimit`
/// `perQueue` (SQS message quotas, "Message throughput").
pub const PER_QUEUE_TPS: i64 = 300;

/// Transactions per second per action of one message group of a FIFO queue in high
/// throughput mode (`perMessageGroupId`): one partition's (SQS Developer Guide,
/// "Partitions and data distribution").
pub const PER_GROUP_TPS: i64 = 300;

/// Buckets idle this long are full again and may be forgotten (ms).
const IDLE_MS: i64 = 1_000;

/// Forget idle buckets once this many are held.
const SWEEP_AT: usize = 10_000;

/// The quota's transactions per second per action for a whole FIFO queue in high
/// throughput mode in `region` (SQS message quotas, "High throughput for FIFO queues",
/// non-batched API calls): 70,000 in us-east-1, us-west-2 and eu-west-1; 19,000 in
/// us-east-2 and eu-central-1; 9,000 in ap-south-1, ap-southeast-1, ap-southeast-2 and
/// ap-northeast-1; 4,500 in eu-west-2 and sa-east-1; 2,400 elsewhere.
pub fn high_throughput_tps(region: &str) -> i64 {
    match region {
        "us-east-1" | "us-west-2" | "eu-west-1" => 70_000,
        "us-east-2" | "eu-central-1" => 19_000,
        "ap-south-1" | "ap-southeast-1" | "ap-southeast-2" | "ap-northeast-1" => 9_000,
        "eu-west-2" | "sa-east-1" => 4_500,
        _ => 2_400,
    }
}

/// The API actions the FIFO quota counts; a batch counts as its action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QuotaAction {
    /// SendMessage, SendMessageBatch.
    Send,
    /// ReceiveMessage.
    Receive,
    /// DeleteMessage, DeleteMessageBatch.
    Delete,
}

impl QuotaAction {
    fn name(self) -> &'static str {
        match self {
            QuotaAction::Send => "SendMessage",
            QuotaAction::Receive => "ReceiveMessage",
            QuotaAction::Delete => "DeleteMessage",
        }
    }
}

/// One token bucket: `milli` thousandths of a token at `at_ms`.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    milli: i64,
    at_ms: i64,
}

impl Bucket {
    /// The bucket at `now_ms` for a quota of `tps`: refilled by `tps` thousandths of a
    /// token per millisecond since it was last seen, at most `tps` tokens (one second).
    fn refilled(self, tps: i64, now_ms: i64) -> Bucket {
        let elapsed = (now_ms - self.at_ms).max(0);
        Bucket {
            milli: (self.milli + elapsed.saturating_mul(tps)).min(tps * 1000),
            at_ms: now_ms.max(self.at_ms),
        }
    }
}

/// Which bucket: queue id, action, and the message group for per-group counts.
type Key = (i64, QuotaAction, Option<String>);

/// Every bucket of this process (module doc).
#[derive(Debug, Default)]
pub(crate) struct Quotas(Mutex<HashMap<Key, Bucket>>);

/// One count a transaction takes a token of: which bucket and its quota.
pub(crate) struct Charge {
    /// Message group, for a per-group count.
    pub group: Option<String>,
    /// Transactions per second.
    pub tps: i64,
}

impl Quotas {
    /// Takes one token of each of `charges` for `action` on queue `queue_id` at `now_ms`,
    /// all or none.
    ///
    /// Errors: `RequestThrottled` when a bucket is empty (nothing is taken then).
    pub(crate) fn take(
        &self,
        queue_id: i64,
        action: QuotaAction,
        charges: &[Charge],
        now_ms: i64,
    ) -> Result<()> {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if map.len() >= SWEEP_AT {
            map.retain(|_, b| now_ms - b.at_ms < IDLE_MS);
        }
        let mut next = Vec::with_capacity(charges.len());
        for c in charges {
            let key = (queue_id, action, c.group.clone());
            let full = Bucket {
                milli: c.tps * 1000,
                at_ms: now_ms,
            };
            let b = map.get(&key).map_or(full, |b| b.refilled(c.tps, now_ms));
            if b.milli < 1000 {
                return Err(throttled(action, c));
            }
            next.push((
                key,
                Bucket {
                    milli: b.milli - 1000,
                    at_ms: b.at_ms,
                },
            ));
        }
        map.extend(next);
        Ok(())
    }

    /// Forgets queue `queue_id`'s buckets (the queue was deleted).
    pub(crate) fn forget(&self, queue_id: i64) {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|k, _| k.0 != queue_id);
    }
}

impl Core {
    /// Counts one `action` transaction on `queue` against its FIFO throughput quota (module
    /// doc); `groups` are the message groups a send names (none for receives and deletes).
    /// Standard queues, and every queue with [`crate::service::core::limits::Limits::sqs_quotas`] off, are not
    /// counted.
    ///
    /// Errors: `RequestThrottled` (403) past the quota.
    pub(crate) fn charge_fifo_quota<'a>(
        &self,
        queue: &QueueRecord,
        action: QuotaAction,
        groups: impl IntoIterator<Item = Option<&'a str>>,
    ) -> Result<()> {
        if !self.config.limits.sqs_quotas
            || queue.attributes.get("FifoQueue").map(String::as_str) != Some("true")
        {
            return Ok(());
        }
        let per_group = queue
            .attributes
            .get("FifoThroughputLimit")
            .map(String::as_str)
            == Some("perMessageGroupId");
        let charges = if per_group {
            let (scope, _) = self.key_scope(&queue.name);
            let mut charges = vec![Charge {
                group: None,
                tps: high_throughput_tps(scope.region),
            }];
            if action == QuotaAction::Send {
                let mut named: Vec<&str> = groups.into_iter().flatten().collect();
                named.sort_unstable();
                named.dedup();
                charges.extend(named.into_iter().map(|g| Charge {
                    group: Some(g.to_owned()),
                    tps: PER_GROUP_TPS,
                }));
            }
            charges
        } else {
            vec![Charge {
                group: None,
                tps: PER_QUEUE_TPS,
            }]
        };
        self.quotas.take(queue.id, action, &charges, self.now_ms())
    }
}

fn throttled(action: QuotaAction, c: &Charge) -> Error {
    let scope = match &c.group {
        Some(g) => format!("message group {g} of this FIFO queue"),
        None => "this FIFO queue".to_owned(),
    };
    Error::new(
        ErrorCode::RequestThrottled,
        format!(
            "Request is throttled: {} exceeds {} transactions per second for {scope}.",
            action.name(),
            c.tps
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn per_queue() -> Vec<Charge> {
        vec![Charge {
            group: None,
            tps: PER_QUEUE_TPS,
        }]
    }

    #[test]
    fn one_second_of_burst_then_the_rate() {
        let q = Quotas::default();
        let t = 1_000_000;
        for _ in 0..300 {
            q.take(1, QuotaAction::Send, &per_queue(), t).unwrap();
        }
        let e = q.take(1, QuotaAction::Send, &per_queue(), t).unwrap_err();
        assert_eq!(e.code, ErrorCode::RequestThrottled);
        // 300 a second is one every 3.33 ms: 3 ms give none, 4 ms give one.
        assert!(q.take(1, QuotaAction::Send, &per_queue(), t + 3).is_err());
        q.take(1, QuotaAction::Send, &per_queue(), t + 4).unwrap();
        assert!(q.take(1, QuotaAction::Send, &per_queue(), t + 4).is_err());
        // A second idle refills the burst, not more.
        for _ in 0..300 {
            q.take(1, QuotaAction::Send, &per_queue(), t + 10_000)
                .unwrap();
        }
        assert!(q
            .take(1, QuotaAction::Send, &per_queue(), t + 10_000)
            .is_err());
    }

    #[test]
    fn actions_queues_and_groups_count_apart() {
        let q = Quotas::default();
        let t = 5_000;
        for _ in 0..300 {
            q.take(1, QuotaAction::Send, &per_queue(), t).unwrap();
        }
        assert!(q.take(1, QuotaAction::Send, &per_queue(), t).is_err());
        q.take(1, QuotaAction::Receive, &per_queue(), t).unwrap();
        q.take(1, QuotaAction::Delete, &per_queue(), t).unwrap();
        q.take(2, QuotaAction::Send, &per_queue(), t).unwrap();
        let group = |g: &str| {
            vec![Charge {
                group: Some(g.into()),
                tps: PER_GROUP_TPS,
            }]
        };
        for _ in 0..300 {
            q.take(3, QuotaAction::Send, &group("a"), t).unwrap();
        }
        assert!(q.take(3, QuotaAction::Send, &group("a"), t).is_err());
        q.take(3, QuotaAction::Send, &group("b"), t).unwrap();
    }

    #[test]
    fn a_refused_transaction_takes_nothing() {
        let q = Quotas::default();
        let t = 0;
        let both = |g: &str| {
            vec![
                Charge {
                    group: Some(g.into()),
                    tps: 1,
                },
                Charge {
                    group: None,
                    tps: 2,
                },
            ]
        };
        q.take(1, QuotaAction::Send, &both("a"), t).unwrap();
        // Group a is empty: refused, and the queue's bucket keeps its token.
        assert!(q.take(1, QuotaAction::Send, &both("a"), t).is_err());
        q.take(1, QuotaAction::Send, &both("b"), t).unwrap();
        assert!(q.take(1, QuotaAction::Send, &both("c"), t).is_err());
    }

    #[test]
    fn high_throughput_ceilings_by_region() {
        assert_eq!(high_throughput_tps("us-east-1"), 70_000);
        assert_eq!(high_throughput_tps("eu-central-1"), 19_000);
        assert_eq!(high_throughput_tps("xx-test-9"), 2_400);
    }
}
