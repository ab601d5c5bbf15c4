//! The service side of HTTP/S delivery: the workers take due deliveries here and report
//! each attempt's outcome; retries follow the effective DeliveryPolicy and, when they run
//! out, the message goes to the subscription's RedrivePolicy dead-letter queue.
//!
//! Sources: SNS Developer Guide "Amazon SNS message delivery retries", "Amazon SNS
//! dead-letter queues (DLQs)".

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use super::SnsDelivery;
use crate::attributes::{SubscriptionConfig, TopicConfig};
use crate::delivery_policy::DeliveryPolicy;
use crate::error::Result;
use crate::model::DeliveryRecord;
use crate::service::core::activity::{http_protocol, DeliveryOutcome};

/// How long a taken delivery is leased to its worker (ms); longer than any HTTP/S attempt.
/// Lambda deliveries are leased longer when a configured function's timeout needs it
/// ([`SnsDelivery::delivery_lease_ms`]).
pub const DELIVERY_LEASE_MS: i64 = 60_000;

impl SnsDelivery {
    /// Takes up to `limit` due deliveries for a worker, leasing each. Deliveries of
    /// subscriptions that no longer exist are dropped here, except the
    /// UnsubscribeConfirmation that follows the subscription's deletion.
    ///
    /// A notification to an HTTP/S subscription whose effective DeliveryPolicy has
    /// `throttlePolicy.maxReceivesPerSecond` N is taken only while fewer than N of that
    /// subscription's notifications were taken in the current second of the service's
    /// clock; the others wait, unattempted, until the next second (SNS Developer Guide,
    /// "Creating an HTTP/S delivery policy": "the maximum number of deliveries per second,
    /// per subscription"). The count is this process's: with several nodes each may send N
    /// a second.
    pub async fn take_deliveries(&self, limit: u32) -> Result<Vec<DeliveryRecord>> {
        let now = self.now_ms();
        let taken = self
            .store
            .claim_deliveries(now, limit, now + self.delivery_lease_ms())
            .await?;
        let mut out = Vec::with_capacity(taken.len());
        let mut topics: HashMap<String, Option<String>> = HashMap::new();
        for d in taken {
            if is_unsubscribe_confirmation(&d) {
                out.push(d);
                continue;
            }
            let Some(sub) = self.store.get_subscription(&d.subscription).await? else {
                self.store.finish_delivery(d.id).await?;
                continue;
            };
            if is_notification(&d) && sub.protocol.is_http() {
                let topic_policy = match topics.get(&sub.topic_name) {
                    Some(p) => p.clone(),
                    None => {
                        let p = self.store.get_topic(&sub.topic_name).await?.and_then(|t| {
                            TopicConfig::from_attributes(&t.attributes).delivery_policy
                        });
                        topics.insert(sub.topic_name.clone(), p.clone());
                        p
                    }
                };
                let max = DeliveryPolicy::effective(
                    topic_policy.as_deref(),
                    SubscriptionConfig::from_attributes(&sub.attributes)
                        .delivery_policy
                        .as_deref(),
                )
                .max_receives_per_second;
                if let Some(max) = max {
                    if let Some(next_ms) = self.throttle.admit(&sub.uuid, max, now) {
                        let why = d.last_error.clone().unwrap_or_else(|| {
                            "waiting: throttlePolicy.maxReceivesPerSecond reached".to_owned()
                        });
                        self.store
                            .retry_delivery(d.id, d.attempts, next_ms, &why)
                            .await?;
                        continue;
                    }
                }
            }
            out.push(d);
        }
        Ok(out)
    }

    /// How long taken deliveries are leased (ms): [`DELIVERY_LEASE_MS`], or the longest
    /// configured function timeout plus 30 s when that is longer, so no other node takes
    /// over an invocation still running.
    pub fn delivery_lease_ms(&self) -> i64 {
        let longest = self
            .config
            .functions
            .iter()
            .map(|f| f.timeout_seconds as i64 * 1000 + 30_000)
            .max()
            .unwrap_or(0);
        DELIVERY_LEASE_MS.max(longest)
    }

    /// Records a successful attempt: the delivery is done.
    pub async fn delivery_succeeded(&self, id: i64) -> Result<()> {
        self.store.finish_delivery(id).await
    }

    /// Records a successful attempt of `d` (as [`SnsDelivery::delivery_succeeded`]) and counts
    /// it as delivered in the activity counters.
    pub async fn delivery_done(&self, d: &DeliveryRecord) -> Result<()> {
        self.end_delivery(d, DeliveryOutcome::Delivered).await
    }

    /// Writes the delivery status record of one HTTP/S or Lambda attempt of `d` (see
    /// [`super::delivery_status`]) when its topic logs that protocol's successes or
    /// failures: `status_code` is the endpoint's HTTP status (202 for an accepted
    /// asynchronous invocation; 0 when none came), `error` what went wrong. Reads the
    /// subscription and the topic; a failure to read them is logged, never returned.
    pub async fn log_delivery_status(
        &self,
        d: &DeliveryRecord,
        success: bool,
        status_code: Option<u16>,
        error: Option<&str>,
    ) {
        use super::delivery_status as ds;
        let protocol = ds::prefix(http_protocol(&d.endpoint)).unwrap_or("HTTP");
        let topic = match self.store.get_subscription(&d.subscription).await {
            Ok(Some(sub)) => self.store.get_topic(&sub.topic_name).await,
            Ok(None) => Ok(None),
            Err(e) => Err(e),
        };
        let topic = match topic {
            Ok(Some(t)) => t,
            Ok(None) => return,
            Err(e) => {
                tracing::warn!(error = %e, "delivery status: cannot read the topic");
                return;
            }
        };
        let config = TopicConfig::from_attributes(&topic.attributes);
        if !ds::enabled(&config, protocol, success) {
            return;
        }
        // The envelope (or the SNS event of a Lambda delivery) names the message; a raw
        // delivery's body is the message itself.
        let body: serde_json::Value = serde_json::from_str(&d.body).unwrap_or_default();
        // Confirmation messages are not notifications: AWS logs only these.
        if matches!(
            body.get("Type").and_then(|t| t.as_str()),
            Some("SubscriptionConfirmation" | "UnsubscribeConfirmation")
        ) {
            return;
        }
        let envelope = body
            .pointer("/Records/0/Sns")
            .unwrap_or(&body)
            .as_object()
            .filter(|o| o.contains_key("MessageId"));
        let message_id = envelope
            .and_then(|o| o.get("MessageId"))
            .and_then(|v| v.as_str());
        let message = match envelope {
            Some(o) => o.get("Message").and_then(|v| v.as_str()),
            None => Some(d.body.as_str()),
        };
        let topic_arn = self.topic_arn(&topic.name);
        ds::log(&ds::DeliveryStatus {
            protocol,
            success,
            topic_name: &topic.name,
            topic_arn: &topic_arn,
            topic_config: &config,
            message_id,
            message,
            published_at_ms: d.created_at_ms,
            destination: &d.endpoint,
            provider_response: error.map_or_else(
                || serde_json::json!({"statusCode": status_code}).to_string(),
                str::to_owned,
            ),
            status_code: status_code.unwrap_or(0),
            attempts: d.attempts + 1,
            now_ms: self.now_ms(),
        });
    }

    /// Records a failed attempt. Schedules the next retry by the effective DeliveryPolicy;
    /// when retries are exhausted, sends the message to the subscription's dead-letter
    /// queue (RedrivePolicy) if it has one, and drops it.
    pub async fn delivery_failed(&self, d: &DeliveryRecord, error: &str) -> Result<()> {
        let attempts = d.attempts + 1;
        let Some(sub) = self.store.get_subscription(&d.subscription).await? else {
            // An UnsubscribeConfirmation outlives its subscription: AWS's default policy.
            if is_unsubscribe_confirmation(d) {
                if let Some(delay) =
                    DeliveryPolicy::default_http().delay_before_retry(attempts as u32)
                {
                    let next = self.now_ms() + delay as i64 * 1000;
                    self.store
                        .retry_delivery(d.id, attempts, next, error)
                        .await?;
                    self.delivery_notify.notify_one();
                    return Ok(());
                }
            }
            return self.store.finish_delivery(d.id).await;
        };
        let topic_policy = self
            .store
            .get_topic(&sub.topic_name)
            .await?
            .and_then(|t| TopicConfig::from_attributes(&t.attributes).delivery_policy);
        let policy = DeliveryPolicy::effective(
            topic_policy.as_deref(),
            SubscriptionConfig::from_attributes(&sub.attributes)
                .delivery_policy
                .as_deref(),
        );
        if let Some(delay) = policy.delay_before_retry(attempts as u32) {
            let next = self.now_ms() + delay as i64 * 1000;
            self.store
                .retry_delivery(d.id, attempts, next, error)
                .await?;
            // The worker computed its sleep while this attempt held its lease; wake it so
            // it sleeps until this retry's time rather than its idle cap.
            self.delivery_notify.notify_one();
            self.activity.delivery(
                http_protocol(&d.endpoint).as_str(),
                DeliveryOutcome::Retrying,
                1,
            );
            return Ok(());
        }
        tracing::warn!(subscription = %d.subscription, endpoint = %d.endpoint, attempts, error, "delivery retries exhausted");
        if let Some(queue) = self.subscription_dlq(&sub) {
            let topic_arn = self.topic_arn(&sub.topic_name);
            if self
                .dead_letter_text(&queue, d.body.clone(), &topic_arn)
                .await?
            {
                return self.end_delivery(d, DeliveryOutcome::DeadLettered).await;
            }
        }
        self.end_delivery(d, DeliveryOutcome::Dropped).await
    }

    /// How long a worker may sleep before deliveries are due again: until the next due
    /// delivery, at most `cap`. Deliveries queued meanwhile wake it through
    /// [`SnsDelivery::delivery_wakeup`].
    pub async fn delivery_idle(&self, cap: Duration) -> Result<Duration> {
        let next = self.store.next_delivery_at().await?;
        Ok(match next {
            None => cap,
            Some(at) => {
                let ms = (at - self.now_ms()).max(0) as u64;
                cap.min(Duration::from_millis(ms))
            }
        })
    }

    /// Resolves when a new delivery has been queued since the last call.
    pub async fn delivery_wakeup(&self) {
        self.delivery_notify.notified().await
    }
}

/// Per subscription, the second (of the service's clock, ms / 1000) and how many of its
/// notifications were taken in it.
#[derive(Default)]
pub(crate) struct Throttle(Mutex<HashMap<String, (i64, u32)>>);

impl Throttle {
    /// Counts one more notification of `subscription` at `now_ms` if fewer than `max`
    /// were taken in that second (`None`); otherwise nothing is counted and the answer
    /// is when the next second starts (ms).
    fn admit(&self, subscription: &str, max: u32, now_ms: i64) -> Option<i64> {
        let second = now_ms.div_euclid(1000);
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        // Seconds gone by are forgotten, so the map holds only this second's senders.
        map.retain(|_, (s, _)| *s >= second);
        let slot = map.entry(subscription.to_owned()).or_insert((second, 0));
        if slot.1 < max {
            slot.1 += 1;
            None
        } else {
            Some((second + 1) * 1000)
        }
    }
}

/// Whether `d` is a Notification (not a subscription confirmation).
fn is_notification(d: &DeliveryRecord) -> bool {
    d.headers
        .iter()
        .any(|(k, v)| k == "x-amz-sns-message-type" && v == "Notification")
}

/// Whether `d` is the UnsubscribeConfirmation POST of a deleted subscription.
fn is_unsubscribe_confirmation(d: &DeliveryRecord) -> bool {
    d.headers
        .iter()
        .any(|(k, v)| k == "x-amz-sns-message-type" && v == "UnsubscribeConfirmation")
}
