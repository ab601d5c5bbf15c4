//! HTTP/S retry timing with a clock the test moves: the service over the in-memory SQLite
//! store and a [`ManualClock`], a sink that fails every notification, and
//! [`deliver_due`] run by hand. Each attempt must happen exactly when the effective
//! DeliveryPolicy says: not a millisecond before its retry time, and at it.
//!
//! Sources: SNS Developer Guide "Amazon SNS message delivery retries" (the four phases, the
//! default policy of 3 retries 20 s apart, topic versus subscription policies,
//! disableSubscriptionOverrides), "Amazon SNS dead-letter queues (DLQs)".

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::Router;
use loft_core::clock::{Clock, ManualClock};
use loft_core::service::{PublishRequest, PublishTarget, ReceiveMessage};
use loft_core::{Service, ServiceConfig};
use loft_server::delivery::deliver_due;
use loft_store::SqliteStore;
use serde_json::Value;

/// 2023-11-14T22:13:20Z.
const START_MS: i64 = 1_700_000_000_000;

/// One request the sink received: its `x-amz-sns-message-type`, its body, and the
/// (manual) time it arrived at.
#[derive(Debug, Clone)]
struct Hit {
    kind: String,
    body: String,
    at_ms: i64,
}

#[derive(Clone)]
struct SinkState {
    clock: Arc<ManualClock>,
    hits: Arc<Mutex<Vec<Hit>>>,
    /// Notifications answered with 500 before one gets 200.
    failures_left: Arc<Mutex<usize>>,
}

async fn record(State(s): State<SinkState>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let kind = headers
        .get("x-amz-sns-message-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    s.hits.lock().unwrap().push(Hit {
        kind: kind.clone(),
        body: String::from_utf8_lossy(&body).into_owned(),
        at_ms: s.clock.now_ms(),
    });
    if kind == "SubscriptionConfirmation" {
        return StatusCode::OK;
    }
    let mut left = s.failures_left.lock().unwrap();
    if *left > 0 {
        *left -= 1;
        StatusCode::INTERNAL_SERVER_ERROR
    } else {
        StatusCode::OK
    }
}

struct World {
    clock: Arc<ManualClock>,
    svc: Arc<Service>,
    client: reqwest::Client,
    sink: SinkState,
    sink_addr: SocketAddr,
    topic_arn: String,
}

impl World {
    /// A service, a sink failing the first `failures` notifications, and topic `t` with
    /// topic `attributes`.
    async fn new(failures: usize, attributes: &[(&str, &str)]) -> World {
        let clock = Arc::new(ManualClock::new(START_MS));
        let store = Arc::new(SqliteStore::open_in_memory().expect("in-memory store"));
        let svc = Service::new(
            store,
            clock.clone() as Arc<dyn Clock>,
            ServiceConfig::default(),
            None,
        );
        let sink = SinkState {
            clock: clock.clone(),
            hits: Arc::default(),
            failures_left: Arc::new(Mutex::new(failures)),
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the sink");
        let sink_addr = listener.local_addr().expect("sink address");
        let app = Router::new().fallback(record).with_state(sink.clone());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        let attrs: BTreeMap<String, String> = attributes
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        svc.sns()
            .create_topic("t", attrs, Vec::new())
            .await
            .expect("create topic");
        let topic_arn = svc.topic_arn("t");
        World {
            client: loft_server::delivery::client(Default::default()).expect("client"),
            clock,
            svc,
            sink,
            sink_addr,
            topic_arn,
        }
    }

    /// Subscribes the sink with subscription `attributes` and confirms it with the token
    /// of the SubscriptionConfirmation it received. Returns the subscription ARN.
    async fn subscribe(&self, attributes: &[(&str, &str)]) -> String {
        let attrs: BTreeMap<String, String> = attributes
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let endpoint = format!("http://{}/hook", self.sink_addr);
        self.svc
            .sns()
            .subscribe(&self.topic_arn, "http", Some(&endpoint), attrs, true)
            .await
            .expect("subscribe");
        assert_eq!(self.deliver().await, 1, "the confirmation is sent at once");
        let hit = self.hits().pop().expect("a confirmation");
        assert_eq!(hit.kind, "SubscriptionConfirmation");
        let v: Value = serde_json::from_str(&hit.body).expect("JSON");
        let token = v["Token"].as_str().expect("Token");
        self.sink.hits.lock().unwrap().clear();
        self.svc
            .sns()
            .confirm_subscription(&self.topic_arn, token, false)
            .await
            .expect("confirm")
    }

    async fn publish(&self, message: &str) -> String {
        self.svc
            .sns()
            .publish(
                PublishTarget::Topic(&self.topic_arn),
                PublishRequest {
                    message: message.to_owned(),
                    ..PublishRequest::default()
                },
            )
            .await
            .expect("publish")
            .message_id
    }

    async fn deliver(&self) -> usize {
        deliver_due(&self.svc, &self.client).await
    }

    fn hits(&self) -> Vec<Hit> {
        self.sink.hits.lock().unwrap().clone()
    }

    fn now(&self) -> i64 {
        self.clock.now_ms()
    }

    /// Walks the schedule: the first attempt now, then for each delay (seconds) moves the
    /// clock to 1 ms before the retry (nothing is due) and to the retry time (exactly one
    /// attempt). Asserts every attempt's time at the sink. Returns the attempts made.
    async fn walk(&self, delays: &[i64]) -> usize {
        let first = self.now();
        assert_eq!(self.deliver().await, 1, "the first attempt is immediate");
        let mut expected_times = vec![first];
        for (i, &delay) in delays.iter().enumerate() {
            let retry = i + 1;
            if delay > 0 {
                self.clock.advance_ms(delay * 1000 - 1);
                assert_eq!(
                    self.deliver().await,
                    0,
                    "retry {retry} ({delay} s) attempted 1 ms early"
                );
                self.clock.advance_ms(1);
            }
            assert_eq!(
                self.deliver().await,
                1,
                "retry {retry} ({delay} s after the previous attempt) not attempted on time"
            );
            expected_times.push(self.now());
        }
        let times: Vec<i64> = self
            .hits()
            .iter()
            .filter(|h| h.kind == "Notification")
            .map(|h| h.at_ms - first)
            .collect();
        let expected: Vec<i64> = expected_times.iter().map(|t| t - first).collect();
        assert_eq!(times, expected, "attempt times (ms after the first)");
        times.len()
    }

    /// Moves the clock far ahead and asserts nothing is attempted any more.
    async fn assert_finished(&self) {
        for _ in 0..3 {
            self.clock.advance_ms(3_600_000);
            assert_eq!(
                self.deliver().await,
                0,
                "an attempt after the policy ran out"
            );
        }
    }

    async fn queue_bodies(&self, queue: &str) -> Vec<String> {
        self.svc
            .sqs()
            .receive_message(
                queue,
                ReceiveMessage {
                    max_messages: Some(10),
                    wait_seconds: Some(0),
                    ..ReceiveMessage::default()
                },
            )
            .await
            .expect("receive")
            .into_iter()
            .map(|m| m.body)
            .collect()
    }
}

#[tokio::test]
async fn every_phase_of_a_subscription_policy_happens_on_time_then_the_dlq() {
    let w = World::new(usize::MAX, &[]).await;
    w.svc
        .sqs()
        .create_queue("dlq", BTreeMap::new(), BTreeMap::new())
        .await
        .expect("create dlq");
    // 1 immediate retry, 1 at minDelayTarget, 3 backoff retries (linear 5 → 20: 5, 12.5
    // rounded to 13, 20), 1 at maxDelayTarget.
    let policy = r#"{"healthyRetryPolicy":{"minDelayTarget":5,"maxDelayTarget":20,"numRetries":6,
        "numNoDelayRetries":1,"numMinDelayRetries":1,"numMaxDelayRetries":1,"backoffFunction":"linear"}}"#;
    let redrive = format!(r#"{{"deadLetterTargetArn":"{}"}}"#, w.svc.queue_arn("dlq"));
    w.subscribe(&[("DeliveryPolicy", policy), ("RedrivePolicy", &redrive)])
        .await;
    let id = w.publish("never accepted").await;
    assert!(w.queue_bodies("dlq").await.is_empty());
    let attempts = w.walk(&[0, 5, 5, 13, 20, 20]).await;
    assert_eq!(attempts, 7, "the first attempt and numRetries retries");
    // Every attempt resent the same signed message.
    let hits = w.hits();
    assert!(hits.iter().all(|h| h.body == hits[0].body));
    // Retries exhausted: the message went to the dead-letter queue at once.
    let dead = w.queue_bodies("dlq").await;
    assert_eq!(dead.len(), 1, "{dead:?}");
    let env: Value = serde_json::from_str(&dead[0]).expect("the envelope");
    assert_eq!(env["MessageId"], id.as_str());
    assert_eq!(env["Message"], "never accepted");
    w.assert_finished().await;
}

#[tokio::test]
async fn the_default_policy_is_three_retries_twenty_seconds_apart() {
    let w = World::new(usize::MAX, &[]).await;
    w.subscribe(&[]).await;
    w.publish("m").await;
    assert_eq!(w.walk(&[20, 20, 20]).await, 4);
    // No RedrivePolicy: the message is dropped.
    w.assert_finished().await;
}

#[tokio::test]
async fn a_success_ends_the_schedule() {
    let w = World::new(2, &[]).await;
    let policy = r#"{"healthyRetryPolicy":{"minDelayTarget":3,"maxDelayTarget":3,"numRetries":5}}"#;
    w.subscribe(&[("DeliveryPolicy", policy)]).await;
    w.publish("m").await;
    // Two failures, then the second retry succeeds.
    assert_eq!(w.walk(&[3, 3]).await, 3);
    w.assert_finished().await;
}

#[tokio::test]
async fn the_topic_policy_applies_unless_the_subscription_overrides_it() {
    let topic_policy = r#"{"http":{"defaultHealthyRetryPolicy":{"minDelayTarget":2,"maxDelayTarget":8,"numRetries":3,"backoffFunction":"linear"}}}"#;
    // The topic's policy: linear 2 → 8 over 3 retries: 2, 5, 8.
    let w = World::new(usize::MAX, &[("DeliveryPolicy", topic_policy)]).await;
    w.subscribe(&[]).await;
    w.publish("m").await;
    assert_eq!(w.walk(&[2, 5, 8]).await, 4);
    w.assert_finished().await;

    // A subscription policy takes precedence...
    let w = World::new(usize::MAX, &[("DeliveryPolicy", topic_policy)]).await;
    let sub_policy =
        r#"{"healthyRetryPolicy":{"minDelayTarget":1,"maxDelayTarget":1,"numRetries":1}}"#;
    w.subscribe(&[("DeliveryPolicy", sub_policy)]).await;
    w.publish("m").await;
    assert_eq!(w.walk(&[1]).await, 2);
    w.assert_finished().await;

    // ...unless the topic disables subscription overrides.
    let locked = r#"{"http":{"defaultHealthyRetryPolicy":{"minDelayTarget":4,"maxDelayTarget":4,"numRetries":2},"disableSubscriptionOverrides":true}}"#;
    let w = World::new(usize::MAX, &[("DeliveryPolicy", locked)]).await;
    w.subscribe(&[("DeliveryPolicy", sub_policy)]).await;
    w.publish("m").await;
    assert_eq!(w.walk(&[4, 4]).await, 3);
    w.assert_finished().await;
}

#[tokio::test]
async fn each_delivery_keeps_its_own_schedule() {
    // Two messages published 7 s apart, each failing: their retries interleave, each on
    // its own clock.
    let w = World::new(usize::MAX, &[]).await;
    let policy =
        r#"{"healthyRetryPolicy":{"minDelayTarget":10,"maxDelayTarget":10,"numRetries":2}}"#;
    w.subscribe(&[("DeliveryPolicy", policy)]).await;
    w.publish("first").await;
    assert_eq!(w.deliver().await, 1); // first: attempt 1 at 0 s
    w.clock.advance_ms(7_000);
    w.publish("second").await;
    assert_eq!(w.deliver().await, 1); // second: attempt 1 at 7 s
    w.clock.advance_ms(3_000);
    assert_eq!(w.deliver().await, 1); // first: retry 1 at 10 s
    w.clock.advance_ms(6_999);
    assert_eq!(w.deliver().await, 0);
    w.clock.advance_ms(1);
    assert_eq!(w.deliver().await, 1); // second: retry 1 at 17 s
    w.clock.advance_ms(3_000);
    assert_eq!(w.deliver().await, 1); // first: retry 2 at 20 s
    w.clock.advance_ms(7_000);
    assert_eq!(w.deliver().await, 1); // second: retry 2 at 27 s
    let order: Vec<(i64, String)> = w
        .hits()
        .iter()
        .map(|h| {
            let v: Value = serde_json::from_str(&h.body).expect("JSON");
            (
                (h.at_ms - START_MS) / 1000,
                v["Message"].as_str().expect("Message").to_owned(),
            )
        })
        .collect();
    let expected: Vec<(i64, String)> = [
        (0, "first"),
        (7, "second"),
        (10, "first"),
        (17, "second"),
        (20, "first"),
        (27, "second"),
    ]
    .iter()
    .map(|(t, m)| (*t, (*m).to_owned()))
    .collect();
    assert_eq!(order, expected);
    w.assert_finished().await;
}

/// `throttlePolicy.maxReceivesPerSecond`: at most that many notifications a second start
/// for the subscription; the rest wait, unattempted, for the next second of the clock,
/// and each arrives once (SNS Developer Guide, "Creating an HTTP/S delivery policy").
#[tokio::test]
async fn max_receives_per_second_spreads_notifications_over_seconds() {
    let w = World::new(0, &[]).await;
    let policy =
        r#"{"healthyRetryPolicy":{"numRetries":3},"throttlePolicy":{"maxReceivesPerSecond":2}}"#;
    w.subscribe(&[("DeliveryPolicy", policy)]).await;
    let start = w.now();
    for i in 0..5 {
        w.publish(&format!("m{i}")).await;
    }
    assert_eq!(w.deliver().await, 2, "two in the first second");
    assert_eq!(w.deliver().await, 0, "no more in the same second");
    w.clock.advance_ms(999);
    assert_eq!(w.deliver().await, 0, "still the first second");
    w.clock.advance_ms(1);
    assert_eq!(w.deliver().await, 2, "two in the next");
    w.clock.advance_ms(1_000);
    assert_eq!(w.deliver().await, 1, "the last one in the third");
    let hits = w.hits();
    let times: Vec<i64> = hits.iter().map(|h| h.at_ms - start).collect();
    assert_eq!(times, [0, 0, 1_000, 1_000, 2_000]);
    let mut messages: Vec<String> = hits
        .iter()
        .map(|h| {
            let v: Value = serde_json::from_str(&h.body).expect("envelope");
            v["Message"].as_str().expect("Message").to_owned()
        })
        .collect();
    messages.sort();
    assert_eq!(messages, ["m0", "m1", "m2", "m3", "m4"]);
    w.assert_finished().await;
}

/// The topic's `http.defaultThrottlePolicy` throttles its subscriptions the same way; a
/// topic without one sends everything at once.
#[tokio::test]
async fn the_topic_throttle_policy_applies_and_none_means_no_throttle() {
    let topic_policy = r#"{"http":{"defaultThrottlePolicy":{"maxReceivesPerSecond":1}}}"#;
    let w = World::new(0, &[("DeliveryPolicy", topic_policy)]).await;
    w.subscribe(&[]).await;
    for i in 0..3 {
        w.publish(&format!("m{i}")).await;
    }
    assert_eq!(w.deliver().await, 1);
    w.clock.advance_ms(1_000);
    assert_eq!(w.deliver().await, 1);
    w.clock.advance_ms(1_000);
    assert_eq!(w.deliver().await, 1);
    w.assert_finished().await;

    let w = World::new(0, &[]).await;
    w.subscribe(&[]).await;
    for i in 0..3 {
        w.publish(&format!("m{i}")).await;
    }
    assert_eq!(w.deliver().await, 3, "no throttle policy: all at once");
}
