//! Operator views: reads for the console, `/metrics` and `loft export` that no AWS API has.
//! None of them changes anything: a peeked message keeps its visibility, receive count and
//! receipt handle.

use std::collections::BTreeMap;

use super::handle::Service;
use crate::attributes::QueueConfig;
use crate::error::{Error, Result};
use crate::message::{self, MessageAttributes};
use crate::model::{DeliveryRecord, GroupCounts, QueueCounts, StoredMessage};
use crate::service::core::activity::ActivitySnapshot;
use crate::service::core::history;

/// Most messages one peek returns.
pub const MAX_PEEK: u32 = 1000;

/// Most pending deliveries [`Service::topic_overview`] reads to summarise them.
pub const OVERVIEW_DELIVERIES: u32 = 10_000;

/// A group of a fair queue is a noisy neighbour when it has at least this many messages in
/// flight... (SQS Developer Guide, "How Amazon SQS fair queues work": at least 30 in flight
/// and more than 10% of the queue's).
pub const NOISY_MIN_IN_FLIGHT: i64 = 30;

/// ...and more than this percentage of the queue's in-flight messages.
pub const NOISY_SHARE_PERCENT: i64 = 10;

/// A fair queue as AWS's fair-queue CloudWatch metrics describe it
/// (ApproximateNumberOfNoisyGroups, ApproximateNumberOfMessages*InQuietGroups,
/// ApproximateAgeOfOldestMessageInQuietGroups), for `/metrics`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FairQueueStatus {
    /// Groups that are noisy neighbours now ([`NOISY_MIN_IN_FLIGHT`],
    /// [`NOISY_SHARE_PERCENT`]).
    pub noisy_groups: u64,
    /// Messages of the other groups (and those without a group, each a tenant of its own).
    pub quiet: QueueCounts,
    /// Age (ms) of the oldest visible message of a quiet group, if any.
    pub quiet_oldest_age_ms: Option<i64>,
}

impl FairQueueStatus {
    /// Applies the noisy-neighbour rule to a fair queue's groups at `now_ms`.
    pub fn of(groups: &[GroupCounts], now_ms: i64) -> FairQueueStatus {
        let in_flight: i64 = groups.iter().map(|g| g.counts.in_flight).sum();
        let mut status = FairQueueStatus::default();
        for g in groups {
            let n = g.counts.in_flight;
            let noisy = g.group.is_some()
                && n >= NOISY_MIN_IN_FLIGHT
                && n * 100 > in_flight * NOISY_SHARE_PERCENT;
            if noisy {
                status.noisy_groups += 1;
                continue;
            }
            status.quiet.visible += g.counts.visible;
            status.quiet.in_flight += n;
            status.quiet.delayed += g.counts.delayed;
            if let Some(sent) = g.oldest_visible_sent_at_ms {
                let age = (now_ms - sent).max(0);
                status.quiet_oldest_age_ms =
                    Some(status.quiet_oldest_age_ms.map_or(age, |a| a.max(age)));
            }
        }
        status
    }
}

/// One queue as the console lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueOverview {
    /// Name.
    pub name: String,
    /// ARN.
    pub arn: String,
    /// FIFO queue.
    pub fifo: bool,
    /// Message counts now.
    pub counts: QueueCounts,
    /// The dead-letter queue its RedrivePolicy names, by name.
    pub dead_letter_target: Option<String>,
    /// The RedrivePolicy's maxReceiveCount.
    pub max_receive_count: Option<i64>,
    /// Queues whose RedrivePolicy names this one (it is their dead-letter queue), by name.
    pub dead_letter_sources: Vec<String>,
    /// Visible messages (ApproximateNumberOfMessages) of the dead-letter queue its
    /// RedrivePolicy names, when that queue exists.
    pub dead_letter_depth: Option<i64>,
}

/// Most queues one page of [`Service::queue_overview`] holds.
pub const MAX_OVERVIEW_PAGE: usize = 1000;

/// Which queues [`Service::queue_overview`] lists.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OverviewListing {
    /// Only queues whose name contains this (ignoring case; blank: every queue).
    pub filter: Option<String>,
    /// Matching queues to skip, in name order.
    pub offset: usize,
    /// Most queues to return, 1..=[`MAX_OVERVIEW_PAGE`]; `None`: every one after `offset`.
    pub limit: Option<usize>,
}

/// A page of [`Service::queue_overview`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OverviewPage {
    /// The page's queues, by name.
    pub queues: Vec<QueueOverview>,
    /// How many queues match the filter (on every page).
    pub total: usize,
}

/// One subscription as the console lists it, with its delivery state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubscriptionOverview {
    /// Subscription ARN.
    pub arn: String,
    /// Protocol (`sqs`, `http`, `email`, ...).
    pub protocol: String,
    /// Endpoint (URL, ARN, address).
    pub endpoint: String,
    /// Confirmed (deliveries happen only when it is).
    pub confirmed: bool,
    /// Its attributes (RawMessageDelivery, FilterPolicy, ...).
    pub attributes: BTreeMap<String, String>,
    /// HTTP/S deliveries waiting for an attempt (counted among the first
    /// [`OVERVIEW_DELIVERIES`] pending ones of all subscriptions).
    pub pending_deliveries: u64,
    /// Most attempts any of those deliveries has had.
    pub max_attempts: i64,
    /// The last error of the newest failed pending delivery.
    pub last_error: Option<String>,
}

/// One topic as the console lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicOverview {
    /// Name.
    pub name: String,
    /// ARN.
    pub arn: String,
    /// FIFO topic.
    pub fifo: bool,
    /// Its subscriptions, oldest first.
    pub subscriptions: Vec<SubscriptionOverview>,
}

/// Where a message stands at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageState {
    /// A receive would return it now.
    Visible,
    /// Received and hidden until its visibility timeout ends.
    InFlight,
    /// Never received and still inside its delay.
    Delayed,
}

impl MessageState {
    /// `visible`, `in_flight` or `delayed` (the `state` label of `loft_queue_messages`).
    pub fn as_str(self) -> &'static str {
        match self {
            MessageState::Visible => "visible",
            MessageState::InFlight => "in_flight",
            MessageState::Delayed => "delayed",
        }
    }
}

/// A message read without claiming it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeekedMessage {
    /// MessageId.
    pub message_id: String,
    /// Body.
    pub body: String,
    /// MD5 hex of the body.
    pub md5_body: String,
    /// Message attributes, all of them.
    pub message_attributes: MessageAttributes,
    /// When it was sent (ms since the epoch).
    pub sent_at_ms: i64,
    /// When it is (or was) next visible (ms since the epoch).
    pub visible_at_ms: i64,
    /// How many times it has been received.
    pub receive_count: i64,
    /// When it was first received (ms since the epoch), if it was.
    pub first_received_at_ms: Option<i64>,
    /// MessageGroupId.
    pub group_id: Option<String>,
    /// MessageDeduplicationId.
    pub dedup_id: Option<String>,
    /// The source queue's ARN when it was dead-lettered.
    pub dead_letter_source: Option<String>,
    /// Visible, in flight or delayed, at the time of the peek.
    pub state: MessageState,
}

/// A page of [`Service::peek_messages`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeekPage {
    /// The messages, in send order.
    pub messages: Vec<PeekedMessage>,
    /// The cursor of the next page when this one was full: opaque, valid for this queue
    /// only, and showing neither the store's sequence numbers nor how far apart two
    /// messages are (they are numbered store-wide, so a readable cursor would let one
    /// account count another's traffic).
    pub next: Option<String>,
}

fn state_of(m: &StoredMessage, now_ms: i64) -> MessageState {
    if m.visible_at_ms <= now_ms {
        MessageState::Visible
    } else if m.receive_count > 0 {
        MessageState::InFlight
    } else {
        MessageState::Delayed
    }
}

impl Service {
    /// Up to `limit` (1..=[`MAX_PEEK`]) messages of queue `name` after the cursor `after`
    /// (a [`PeekPage::next`] of this queue; from the start when `None`), in send order, in
    /// any state, without claiming them. The cursor is the last message's store sequence
    /// sealed under the database's key for this queue
    /// ([`ReceiptKey::seal_position`](crate::service::sqs::receipt::ReceiptKey::seal_position)).
    ///
    /// Errors: `QueueDoesNotExist`; `InvalidParameterValue` for a limit out of range or a
    /// cursor this queue's pages did not give.
    pub async fn peek_messages(
        &self,
        name: &str,
        after: Option<&str>,
        limit: u32,
    ) -> Result<PeekPage> {
        if !(1..=MAX_PEEK).contains(&limit) {
            return Err(Error::invalid(format!(
                "Value {limit} for parameter limit is invalid. Reason: Must be between 1 and {MAX_PEEK}."
            )));
        }
        let queue = self.queue(name).await?;
        let listing = format!("console peek {}", queue.id);
        let key = self.store.receipt_key();
        let after = match after.filter(|a| !a.is_empty()) {
            Some(cursor) => key.open_position(&listing, cursor).ok_or_else(|| {
                Error::invalid(format!(
                    "Value {cursor} for parameter after is invalid. Reason: not a cursor of this queue's pages."
                ))
            })?,
            None => 0,
        };
        let now = self.now_ms();
        let stored = self
            .store
            .peek_messages(queue.id, after, limit, now)
            .await?;
        let next = (stored.len() as u32 == limit)
            .then(|| stored.last().map(|m| key.seal_position(&listing, m.seq)))
            .flatten();
        let messages = stored
            .into_iter()
            .map(|m| PeekedMessage {
                state: state_of(&m, now),
                message_attributes: message::decode_attributes(m.message_attributes.as_deref()),
                message_id: crate::service::sqs::messages::message_id_of(m.message_id, m.seq),
                body: m.body,
                md5_body: m.md5_body,
                sent_at_ms: m.sent_at_ms,
                visible_at_ms: m.visible_at_ms,
                receive_count: m.receive_count,
                first_received_at_ms: m.first_received_at_ms,
                group_id: m.group_id,
                dedup_id: m.dedup_id,
                dead_letter_source: m.dead_letter_source,
            })
            .collect();
        Ok(PeekPage { messages, next })
    }

    /// Message counts of queue `name` now (visible, in flight, delayed).
    ///
    /// Errors: `QueueDoesNotExist`.
    pub async fn queue_counts(&self, name: &str) -> Result<QueueCounts> {
        let queue = self.queue(name).await?;
        self.store.queue_counts(queue.id, self.now_ms()).await
    }

    /// The age of queue `name`'s oldest message now, in milliseconds (SQS's
    /// ApproximateAgeOfOldestMessage, a CloudWatch metric, not a queue attribute: the
    /// oldest message still in the queue, visible, in flight or delayed, by when it was
    /// sent; a message moved back from a dead-letter queue counts from its move); `0` for an
    /// empty queue. One row of the send-order index ([`crate::store::Store::oldest_sent_at`]).
    ///
    /// Errors: `QueueDoesNotExist`.
    pub async fn oldest_message_age_ms(&self, name: &str) -> Result<i64> {
        let queue = self.queue(name).await?;
        let now = self.now_ms();
        Ok(self
            .store
            .oldest_sent_at(queue.id, now)
            .await?
            .map_or(0, |sent| (now - sent).max(0)))
    }

    /// Queue `name` as a fair queue now, or `None` when it is not one (FIFO queues, and
    /// standard queues that never received a message with a MessageGroupId). Reads every
    /// message of the queue.
    ///
    /// Errors: `QueueDoesNotExist`.
    pub async fn fair_queue_status(&self, name: &str) -> Result<Option<FairQueueStatus>> {
        let queue = self.queue(name).await?;
        let now = self.now_ms();
        Ok(self
            .store
            .fair_groups(queue.id, now)
            .await?
            .map(|groups| FairQueueStatus::of(&groups, now)))
    }

    /// Pending SNS HTTP/S deliveries (due, or waiting for a retry) of one subscription (its
    /// ARN suffix) or of all with `None`, oldest first, at most `limit`; each carries its
    /// attempt count and last error.
    pub async fn pending_deliveries(
        &self,
        subscription: Option<&str>,
        limit: u32,
    ) -> Result<Vec<DeliveryRecord>> {
        self.store.list_deliveries(subscription, limit).await
    }

    /// One page of the queues `principal` sees ([`Sqs::visible_queues`](crate::service::Sqs::visible_queues): its account's,
    /// or the default account's for an open Loft), by name,
    /// with their counts, dead-letter relations and the depth of their dead-letter queue:
    /// those whose name contains `listing.filter` (ignoring case), from `listing.offset`,
    /// at most `listing.limit`. Only the page's queues (and their dead-letter queues) are
    /// counted.
    ///
    /// Errors: `InvalidParameterValue` for a `limit` outside 1..=[`MAX_OVERVIEW_PAGE`];
    /// `InternalError` when storage fails.
    pub async fn queue_overview(
        &self,
        principal: &crate::service::core::access::Principal,
        listing: &OverviewListing,
    ) -> Result<OverviewPage> {
        if let Some(limit) = listing.limit {
            if !(1..=MAX_OVERVIEW_PAGE).contains(&limit) {
                return Err(Error::invalid(format!(
                    "Value {limit} for parameter limit is invalid. Reason: Must be between 1 and {MAX_OVERVIEW_PAGE}."
                )));
            }
        }
        let mut queues = self.sqs().visible_queues(principal).await?;
        queues.sort_by(|a, b| a.name.cmp(&b.name));
        let now = self.now_ms();
        let configs: Vec<QueueConfig> = queues
            .iter()
            .map(|q| QueueConfig::from_attributes(&q.attributes))
            .collect();
        let needle = listing
            .filter
            .as_deref()
            .map(str::trim)
            .filter(|f| !f.is_empty())
            .map(str::to_lowercase);
        let matching: Vec<usize> = (0..queues.len())
            .filter(|&i| {
                needle
                    .as_deref()
                    .is_none_or(|n| queues[i].name.to_lowercase().contains(n))
            })
            .collect();
        let total = matching.len();
        let page = matching
            .into_iter()
            .skip(listing.offset)
            .take(listing.limit.unwrap_or(usize::MAX));
        let mut out = Vec::new();
        for i in page {
            let (q, config) = (&queues[i], &configs[i]);
            let counts = self.store.queue_counts(q.id, now).await?;
            let sources = queues
                .iter()
                .zip(&configs)
                .filter(|(_, c)| {
                    c.redrive_policy
                        .as_ref()
                        .is_some_and(|p| self.dlq_key(p) == q.name)
                })
                .map(|(s, _)| s.name.clone())
                .collect();
            let target = config.redrive_policy.as_ref().map(|p| self.dlq_key(p));
            let dead_letter_depth = match &target {
                Some(key) => match self.store.get_queue(key).await? {
                    Some(dlq) => Some(self.store.queue_counts(dlq.id, now).await?.visible),
                    None => None,
                },
                None => None,
            };
            out.push(QueueOverview {
                name: q.name.clone(),
                arn: self.queue_arn(&q.name),
                fifo: config.fifo,
                counts,
                dead_letter_target: target,
                max_receive_count: config.redrive_policy.as_ref().map(|p| p.max_receive_count),
                dead_letter_sources: sources,
                dead_letter_depth,
            });
        }
        Ok(OverviewPage { queues: out, total })
    }

    /// Takes one sample of every queue and topic (the first [`history::MAX_TRACKED`] of
    /// each by store key) for the console's charts ([`history`]): counts read from the
    /// store, counters from this process's activity. The server calls it every sampling
    /// interval.
    ///
    /// Errors: `InternalError` when storage fails (nothing is recorded then).
    pub async fn sample_history(&self) -> Result<()> {
        let now = self.now_ms();
        let mut queues = self.store.list_queues().await?;
        queues.sort_by(|a, b| a.name.cmp(&b.name));
        queues.truncate(history::MAX_TRACKED);
        let activity = self.activity.snapshot();
        let mut round = Vec::with_capacity(queues.len());
        for q in queues {
            let counts = match self.store.queue_counts(q.id, now).await {
                Ok(c) => c,
                // Deleted meanwhile: no sample.
                Err(e) if e.code == crate::ErrorCode::QueueDoesNotExist => continue,
                Err(e) => return Err(e),
            };
            let a = activity.queues.get(&q.name).copied().unwrap_or_default();
            round.push((
                q.name,
                history::QueueSample {
                    at_ms: now,
                    visible: counts.visible,
                    in_flight: counts.in_flight,
                    sent: a.sent,
                    received: a.received,
                },
            ));
        }
        let mut topics = self.store.list_topics().await?;
        topics.sort_by(|a, b| a.name.cmp(&b.name));
        topics.truncate(history::MAX_TRACKED);
        let subs = self.store.list_subscriptions(None).await?;
        let pending = self
            .store
            .list_deliveries(None, OVERVIEW_DELIVERIES)
            .await?;
        let mut pending_by_topic: BTreeMap<i64, u64> = BTreeMap::new();
        for d in &pending {
            if let Some(s) = subs.iter().find(|s| s.uuid == d.subscription) {
                *pending_by_topic.entry(s.topic_id).or_default() += 1;
            }
        }
        let published = self.activity.published_counts();
        let topic_round = topics
            .into_iter()
            .map(|t| {
                let sample = history::TopicSample {
                    at_ms: now,
                    published: published.get(&t.name).copied().unwrap_or(0),
                    pending: pending_by_topic.get(&t.id).copied().unwrap_or(0),
                };
                (t.name, sample)
            })
            .collect();
        self.history.record_queues(round);
        self.history.record_topics(topic_round);
        Ok(())
    }

    /// The console's chart of queue `key` (a store key): its samples so far ([`history`]).
    pub fn queue_history(&self, key: &str) -> history::QueueSeries {
        self.history.queue(key)
    }

    /// The console's chart of topic `key` (a store key).
    pub fn topic_history(&self, key: &str) -> history::TopicSeries {
        self.history.topic(key)
    }

    /// Every topic `principal` sees ([`Sns::visible_topics`](crate::service::Sns::visible_topics)), by name, with its
    /// subscriptions and their pending HTTP/S deliveries.
    ///
    /// Errors: `InternalError` when storage fails.
    pub async fn topic_overview(
        &self,
        principal: &crate::service::core::access::Principal,
    ) -> Result<Vec<TopicOverview>> {
        let topics = self.sns().visible_topics(principal).await?;
        // The subscriptions of those topics alone, read without other accounts' rows (the
        // topics' scope, as `visible_topics` chose it; `""` names no subscriber).
        let (prefix, bare) = if principal.enforced {
            self.listing_of(principal.scope())
        } else {
            (String::new(), true)
        };
        let subs = self.store.list_subscriptions_of(&prefix, bare, "").await?;
        let pending = self
            .store
            .list_deliveries(None, OVERVIEW_DELIVERIES)
            .await?;
        let mut out = Vec::with_capacity(topics.len());
        for t in topics {
            let subscriptions = subs
                .iter()
                .filter(|s| s.topic_id == t.id)
                .map(|s| {
                    let mine: Vec<&DeliveryRecord> = pending
                        .iter()
                        .filter(|d| d.subscription == s.uuid)
                        .collect();
                    SubscriptionOverview {
                        arn: self.sns().subscription_arn(s),
                        protocol: s.protocol.as_str().to_owned(),
                        endpoint: s.endpoint.clone(),
                        confirmed: s.confirmed,
                        attributes: s.attributes.clone(),
                        pending_deliveries: mine.len() as u64,
                        max_attempts: mine.iter().map(|d| d.attempts).max().unwrap_or(0),
                        last_error: mine.iter().rev().find_map(|d| d.last_error.clone()),
                    }
                })
                .collect();
            out.push(TopicOverview {
                arn: self.topic_arn(&t.name),
                fifo: t.name.ends_with(".fifo"),
                name: t.name,
                subscriptions,
            });
        }
        Ok(out)
    }

    /// How many SNS HTTP/S deliveries are pending.
    pub async fn pending_delivery_count(&self) -> Result<u64> {
        self.store.count_deliveries().await
    }

    /// The activity counters now (messages sent, received, deleted, dead-lettered by queue;
    /// SNS deliveries by protocol and outcome).
    pub fn activity(&self) -> ActivitySnapshot {
        self.activity.snapshot()
    }
}

#[cfg(test)]
mod fair_tests {
    use super::*;

    fn group(name: Option<&str>, visible: i64, in_flight: i64, oldest: Option<i64>) -> GroupCounts {
        GroupCounts {
            group: name.map(str::to_owned),
            counts: QueueCounts {
                visible,
                in_flight,
                delayed: 0,
            },
            oldest_visible_sent_at_ms: oldest,
        }
    }

    #[test]
    fn noisy_needs_thirty_in_flight_and_more_than_a_tenth() {
        let groups = [
            group(Some("flood"), 100_000, 200, Some(0)),
            group(Some("busy"), 5, 29, Some(10)),
            group(Some("quiet"), 2, 1, Some(900)),
            group(None, 1, 40, Some(500)),
        ];
        let s = FairQueueStatus::of(&groups, 1000);
        assert_eq!(
            s.noisy_groups, 1,
            "only the flood: busy has 29, no group is never noisy"
        );
        assert_eq!(s.quiet.visible, 8);
        assert_eq!(s.quiet.in_flight, 70);
        assert_eq!(s.quiet_oldest_age_ms, Some(990));
        // 30 in flight out of 400 is under a tenth.
        let groups = [
            group(Some("a"), 0, 30, None),
            group(Some("b"), 0, 370, None),
        ];
        assert_eq!(FairQueueStatus::of(&groups, 0).noisy_groups, 1);
    }
}
