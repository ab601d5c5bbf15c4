//! SNS message replay for FIFO topic subscribers (SNS Developer Guide, "Amazon SNS message
//! replay for FIFO topic subscribers"; SNS API Reference, Subscribe, `ReplayPolicy` and
//! `ReplayStatus`).
//!
//! A subscription's `ReplayPolicy` (`{"PointType":"Timestamp","StartingPoint":"...",
//! "EndingPoint":"..."}`, EndingPoint optional) redelivers the messages of its topic's
//! archive published in that window, in the topic's order, through the same delivery step
//! as a live publish ([`SnsDelivery::subscription_text`], [`SnsDelivery::sqs_copy`]: filter policy,
//! raw delivery or the envelope, FIFO group, dead-letter queue). A replayed message keeps
//! its MessageId, Timestamp and SequenceNumber and carries `Replayed`
//! ([`super::envelope::REPLAYED_ATTRIBUTE`]).
//!
//! The replay is a record in the Store ([`ReplayRecord`]): its window, cursor, status and
//! a node lease. While it runs, the topic's live fan-out leaves the subscription out (the
//! store does so in the publish's transaction) and the replay delivers those messages from
//! the archive as it catches up, so each group's order holds; without an EndingPoint it
//! completes once its cursor reaches the topic's latest message (checked in the step's
//! transaction) and live delivery resumes; with one, it completes after the EndingPoint
//! and the subscription stays paused (no live messages) until a new ReplayPolicy without
//! EndingPoint. A new ReplayPolicy replaces the running replay.
//!
//! [`SnsDelivery::advance_replays`] (run every [`REPLAY_POLL`] by the server) takes the
//! replays no node holds, or this node holds, and advances each a batch at a time: each
//! batch's queue messages, the cursor and the lease in one transaction, so a restart or a
//! takeover resumes after the last committed batch (no message twice). A node stopping
//! releases its leases ([`SnsDelivery::release_replays`]).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::envelope::{filter_attributes, Outgoing, SignedFields, SqsStep};
use super::sns_errors::invalid;
use super::SnsDelivery;
use crate::error::Result;
use crate::message::{self, MessageAttributes};
use crate::model::*;
use crate::service::sqs::messages::sequence_number;

/// How long a node's lease on a replay lasts (ms) unless a step renews it: another node
/// takes a replay over this long after its node died.
pub const REPLAY_LEASE_MS: i64 = 30_000;

/// How often the server looks for replays to advance.
pub const REPLAY_POLL: Duration = Duration::from_millis(250);

/// Archived messages read per replay step.
pub const REPLAY_BATCH: u32 = 100;

/// Steps one replay may take in one [`SnsDelivery::advance_replays`] call, so that one long
/// replay does not hold the others back.
const STEPS_PER_CALL: usize = 10;

/// A validated ReplayPolicy: the window, ms since the epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplayWindow {
    /// StartingPoint.
    pub starting_at_ms: i64,
    /// EndingPoint, if given.
    pub ending_at_ms: Option<i64>,
}

/// Validates a ReplayPolicy (SNS Developer Guide, "Add a replay policy to the
/// subscription using the API"): a JSON object with `PointType` `Timestamp` (the only
/// point type), `StartingPoint` (required) and `EndingPoint` (optional; empty is none),
/// each an ISO 8601 timestamp, the EndingPoint not before the StartingPoint. `None` for an
/// empty value or `{}` (no replay: the running one is cancelled).
///
/// Errors: `InvalidParameter` ("Invalid parameter: ReplayPolicy Reason: ...").
pub fn parse_policy(value: &str) -> Result<Option<ReplayWindow>> {
    let bad = |why: &str| invalid(&format!("ReplayPolicy Reason: {why}"));
    if value.trim().is_empty() {
        return Ok(None);
    }
    let doc: Value = serde_json::from_str(value).map_err(|_| bad("invalid JSON"))?;
    let Some(map) = doc.as_object() else {
        return Err(bad("must be a JSON object"));
    };
    // `{}` cancels the replay (AWS's recorded SetSubscriptionAttributes: accepted, and
    // the subscription then shows neither ReplayPolicy nor ReplayStatus).
    if map.is_empty() {
        return Ok(None);
    }
    if let Some(other) = map
        .keys()
        .find(|k| !matches!(k.as_str(), "PointType" | "StartingPoint" | "EndingPoint"))
    {
        return Err(bad(&format!("unknown member {other}")));
    }
    match map.get("PointType") {
        Some(Value::String(t)) if t == "Timestamp" => {}
        Some(_) => return Err(bad("PointType must be Timestamp")),
        None => return Err(bad("PointType is required")),
    }
    let point = |name: &str| -> Result<Option<i64>> {
        match map.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.is_empty() => Ok(None),
            Some(Value::String(s)) => chrono::DateTime::parse_from_rfc3339(s)
                .map(|t| Some(t.timestamp_millis()))
                .map_err(|_| bad(&format!("{name} must be an ISO 8601 timestamp"))),
            Some(_) => Err(bad(&format!("{name} must be an ISO 8601 timestamp"))),
        }
    };
    let Some(starting_at_ms) = point("StartingPoint")? else {
        return Err(bad("StartingPoint is required"));
    };
    let ending_at_ms = point("EndingPoint")?;
    if ending_at_ms.is_some_and(|end| end < starting_at_ms) {
        return Err(bad("EndingPoint must not be before StartingPoint"));
    }
    Ok(Some(ReplayWindow {
        starting_at_ms,
        ending_at_ms,
    }))
}

impl SnsDelivery {
    /// Checks ReplayPolicy `policy` for a subscription of `topic` now: valid
    /// ([`parse_policy`]), the topic keeps an archive, the StartingPoint not in the
    /// future. `None` for an empty policy.
    ///
    /// Errors: `InvalidParameter`.
    pub(crate) fn check_replay(
        &self,
        topic: &TopicRecord,
        policy: &str,
    ) -> Result<Option<ReplayWindow>> {
        let Some(window) = parse_policy(policy)? else {
            return Ok(None);
        };
        if super::archive::retention_days(topic).is_none() {
            return Err(invalid(
                "ReplayPolicy Reason: the topic has no ArchivePolicy: there is nothing to replay",
            ));
        }
        if window.starting_at_ms > self.now_ms() {
            return Err(invalid(
                "ReplayPolicy Reason: StartingPoint must not be in the future",
            ));
        }
        Ok(Some(window))
    }

    /// Starts the replay `policy` (checked by [`SnsDelivery::check_replay`]) for subscription
    /// `sub` of `topic`, replacing the one it had: Pending, no node holding it. An empty
    /// policy stops the running one (live delivery resumes).
    ///
    /// Errors: `InvalidParameter` as [`SnsDelivery::check_replay`], store errors.
    pub(crate) async fn start_replay(
        &self,
        topic: &TopicRecord,
        sub: &SubscriptionRecord,
        policy: &str,
    ) -> Result<()> {
        let Some(window) = self.check_replay(topic, policy)? else {
            if let Some(mut r) = self.store.get_replay(&sub.uuid).await? {
                r.replay_id = uuid::Uuid::new_v4().to_string();
                if r.status.is_active() {
                    r.status = ReplayStatus::Completed;
                }
                r.hold_live = false;
                r.owner = None;
                r.lease_until_ms = 0;
                self.store.put_replay(r).await?;
            }
            return Ok(());
        };
        self.store
            .put_replay(ReplayRecord {
                subscription: sub.uuid.clone(),
                topic_id: topic.id,
                replay_id: uuid::Uuid::new_v4().to_string(),
                starting_at_ms: window.starting_at_ms,
                ending_at_ms: window.ending_at_ms,
                cursor: 0,
                status: ReplayStatus::Pending,
                hold_live: true,
                failure: None,
                owner: None,
                lease_until_ms: 0,
            })
            .await
    }

    /// ReplayStatus of subscription `uuid` (`Pending`, `In progress`, `Completed`,
    /// `Failed`: [`crate::model::ReplayStatus::attribute_value`]), if it has a replay.
    /// Errors: store errors.
    pub(crate) async fn replay_status(&self, uuid: &str) -> Result<Option<&'static str>> {
        Ok(self
            .store
            .get_replay(uuid)
            .await?
            .map(|r| r.status.attribute_value()))
    }

    /// Advances the replays this node holds or no node holds (their lease ended), each up
    /// to a few batches. Returns how many replays it worked on. The server calls it every
    /// [`REPLAY_POLL`].
    ///
    /// Errors: store errors (a replay whose subscription, topic or archive is gone fails
    /// instead).
    pub async fn advance_replays(self: &Arc<Self>) -> Result<usize> {
        if self.is_shutting_down() {
            return Ok(0);
        }
        let now = self.now_ms();
        let replays = self
            .store
            .claim_replays(&self.node_id, now, now + REPLAY_LEASE_MS, 16)
            .await?;
        let n = replays.len();
        for mut r in replays {
            for _ in 0..STEPS_PER_CALL {
                if self.is_shutting_down() {
                    return Ok(n);
                }
                let (step, full, stored) = self.replay_step(&r).await?;
                let next = self.store.advance_replay(step).await?;
                if next.is_some() {
                    // Counted as a live publish counts its copies.
                    for (queue, dead_lettered) in stored {
                        self.activity.sns_copy_stored(&queue, dead_lettered);
                        self.activity
                            .replayed(if dead_lettered { "failed" } else { "delivered" });
                    }
                }
                match next {
                    Some(next) if next.status.is_active() && full => r = next,
                    // Done, failed, waiting for more, replaced, or no longer this node's.
                    _ => break,
                }
            }
        }
        Ok(n)
    }

    /// The next batch of replay `r`, whether it was full (more may follow at once), and
    /// each of its copies' queue name and whether it goes to the dead-letter queue.
    async fn replay_step(
        &self,
        r: &ReplayRecord,
    ) -> Result<(ReplayStep, bool, Vec<(String, bool)>)> {
        let now = self.now_ms();
        let mut step = ReplayStep {
            subscription: r.subscription.clone(),
            replay_id: r.replay_id.clone(),
            owner: self.node_id.clone(),
            lease_until_ms: now + REPLAY_LEASE_MS,
            messages: Vec::new(),
            cursor: r.cursor,
            finish: ReplayFinish::Continue,
        };
        let fail = |mut step: ReplayStep, why: &str| {
            step.finish = ReplayFinish::Failed(why.to_owned());
            Ok((step, false, Vec::new()))
        };
        let Some(sub) = self.store.get_subscription(&r.subscription).await? else {
            return fail(step, "The subscription no longer exists.");
        };
        let Some(topic) = self.store.get_topic(&sub.topic_name).await? else {
            return fail(step, "The topic no longer exists.");
        };
        if super::archive::retention_days(&topic).is_none() {
            // AWS's recorded answer: a replay whose topic's ArchivePolicy was removed
            // shows Completed, and live messages reach the subscription again.
            step.finish = ReplayFinish::Stopped;
            return Ok((step, false, Vec::new()));
        }
        let archived = self
            .store
            .archived_messages(
                topic.id,
                r.cursor,
                r.starting_at_ms,
                r.ending_at_ms,
                now,
                REPLAY_BATCH,
            )
            .await?;
        let full = archived.len() as u32 == REPLAY_BATCH;
        let mut queues: BTreeMap<String, Option<Arc<QueueRecord>>> = BTreeMap::new();
        for name in self
            .key_of_arn(&sub.endpoint, "sqs")
            .into_iter()
            .chain(self.subscription_dlq(&sub))
        {
            let q = self.find_queue(&name).await?;
            queues.insert(name, q);
        }
        let policy = self.topic_policy(&topic)?;
        let url = self.config.advertised_url.clone();
        let signing_cert_url = self.signing_cert_url();
        let topic_arn = self.topic_arn(&topic.name);
        let mut woken = Vec::new();
        let mut stored = Vec::new();
        for m in &archived {
            step.cursor = m.sequence;
            let Some((copy, queue)) = self.replayed_copy(
                &topic,
                &sub,
                policy.as_ref(),
                &topic_arn,
                &signing_cert_url,
                &queues,
                r,
                m,
                now,
            ) else {
                continue;
            };
            let sequence = sequence_number(m.sequence);
            stored.push((queue, copy.dead_lettered));
            let (queue_id, message) = copy.render(&url, Some(&sequence));
            woken.push(queue_id);
            step.messages.push((queue_id, message));
        }
        if !full {
            step.finish = match r.ending_at_ms {
                Some(end) if now > end => ReplayFinish::Ended,
                Some(_) => ReplayFinish::Continue,
                None => ReplayFinish::CaughtUp,
            };
        }
        woken.sort_unstable();
        woken.dedup();
        for q in woken {
            self.wake(q);
        }
        Ok((step, full, stored))
    }

    /// The copy subscription `sub` gets of archived message `m` in replay `r`, through the
    /// live publish's delivery step, with its queue's name; `None` when it gets none
    /// (filtered out, or no queue can take it).
    #[allow(clippy::too_many_arguments)]
    fn replayed_copy(
        &self,
        topic: &TopicRecord,
        sub: &SubscriptionRecord,
        policy: Option<&crate::data_protection::Policy>,
        topic_arn: &str,
        signing_cert_url: &str,
        queues: &BTreeMap<String, Option<Arc<QueueRecord>>>,
        r: &ReplayRecord,
        m: &ArchivedMessage,
        now: i64,
    ) -> Option<(super::envelope::SqsCopy, String)> {
        let published: Value = serde_json::from_str(&m.published).ok()?;
        let field = |name: &str| published.get(name).and_then(Value::as_str);
        let message = field("Message").unwrap_or_default();
        let attributes: MessageAttributes = message::decode_attributes(field("MessageAttributes"));
        let structured = field("MessageStructure").is_some();
        let text = if structured {
            serde_json::from_str::<Value>(message)
                .ok()
                .map(|v| {
                    super::envelope::structured_text(&v, SubscriptionProtocol::Sqs.as_str())
                        .to_owned()
                })
                .unwrap_or_default()
        } else {
            message.to_owned()
        };
        let filter_attrs = filter_attributes(&attributes);
        let text = self.subscription_text(topic, policy, sub, &filter_attrs, text)?;
        let none = MessageAttributes::new();
        let delivered = if structured { &none } else { &attributes };
        let raw = crate::attributes::SubscriptionConfig::from_attributes(&sub.attributes)
            .raw_message_delivery;
        // A topic with ContentBasedDeduplication archived no MessageDeduplicationId: the
        // publish's was the SHA-256 of the message, as here.
        let content_dedup_id = field("MessageDeduplicationId")
            .is_none()
            .then(|| hex::encode(<sha2::Sha256 as sha2::Digest>::digest(message.as_bytes())));
        let out = Outgoing {
            topic_arn,
            delivered_attributes: delivered,
            trace_attributes: None,
            group_id: field("MessageGroupId"),
            dedup_id: field("MessageDeduplicationId").or(content_dedup_id.as_deref()),
            // The replay's own key: a replay into a queue that holds the original inside
            // its deduplication window still delivers; a batch stored twice would not.
            dedup_key: Some(format!("replay:{}:{}", r.replay_id, m.sequence)),
            now_ms: now,
            replayed: true,
        };
        let timestamp = field("Timestamp").unwrap_or_default().to_owned();
        let subject = field("Subject").map(str::to_owned);
        let message_id = m.message_id.clone();
        let mut sign =
            |svc: &SnsDelivery, text: &str, raw: bool| -> (SignedFields, Option<(u8, String)>) {
                let f = svc.notification_fields(
                    topic_arn,
                    &message_id,
                    text,
                    subject.as_deref(),
                    &timestamp,
                );
                let sig = if raw { None } else { svc.signature(topic, &f) };
                (f, sig)
            };
        match self.sqs_copy(
            topic,
            sub,
            text,
            raw,
            &out,
            queues,
            signing_cert_url,
            &mut sign,
            &mut None,
        ) {
            SqsStep::Copy(copy, queue) => Some((*copy, queue)),
            SqsStep::Dropped => None,
        }
    }

    /// Gives up the replays this node holds, so that another node, or this one started
    /// again, takes them over at once. The server calls it when it stops.
    ///
    /// Errors: store errors.
    pub async fn release_replays(&self) -> Result<()> {
        self.store.release_replays(&self.node_id).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_as_aws_describes_them() {
        let w = parse_policy(
            r#"{"PointType":"Timestamp","StartingPoint":"2023-10-01T10:00:00.000Z","EndingPoint":"2023-10-01T12:00:00.000Z"}"#,
        )
        .unwrap()
        .unwrap();
        assert_eq!(w.starting_at_ms, 1_696_154_400_000);
        assert_eq!(w.ending_at_ms, Some(1_696_161_600_000));
        let w = parse_policy(r#"{"PointType":"Timestamp","StartingPoint":"2023-10-01T00:00:00Z"}"#)
            .unwrap()
            .unwrap();
        assert_eq!(w.ending_at_ms, None);
        assert_eq!(parse_policy("").unwrap(), None);
        assert_eq!(parse_policy("{}").unwrap(), None);
        for bad in [
            "not json",
            "[]",
            r#"{"StartingPoint":"2023-10-01T00:00:00Z"}"#,
            r#"{"PointType":"Offset","StartingPoint":"2023-10-01T00:00:00Z"}"#,
            r#"{"PointType":"Timestamp"}"#,
            r#"{"PointType":"Timestamp","StartingPoint":"yesterday"}"#,
            r#"{"PointType":"Timestamp","StartingPoint":1696118400}"#,
            r#"{"PointType":"Timestamp","StartingPoint":"2023-10-01T12:00:00Z","EndingPoint":"2023-10-01T10:00:00Z"}"#,
            r#"{"PointType":"Timestamp","StartingPoint":"2023-10-01T00:00:00Z","Other":1}"#,
        ] {
            let e = parse_policy(bad).unwrap_err();
            assert_eq!(e.code, crate::error::ErrorCode::InvalidParameter, "{bad}");
            assert!(
                e.message
                    .starts_with("Invalid parameter: ReplayPolicy Reason: "),
                "{bad}: {}",
                e.message
            );
        }
    }
}
