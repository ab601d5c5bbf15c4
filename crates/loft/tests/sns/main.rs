//! Loft's SNS suite: the SNS Query protocol through aws-sdk-sns, deliveries read back
//! through aws-sdk-sqs and an HTTP sink, all against the real `loft` binary.
//!
//! - [`fanout`]: one publish to several SQS queues with attribute and body filters, raw
//!   and enveloped, every envelope field checked.
//! - [`data_protection`]: Put/GetDataProtectionPolicy, Inbound and Outbound Deny and
//!   Deidentify, audit records in SQS, the log and `/metrics`.
//! - [`fifo`]: FIFO topic to FIFO queue (group, deduplication, SequenceNumber).
//! - [`archive`]: FIFO topics' ArchivePolicy and BeginningArchiveTime.
//! - [`replay`]: ReplayPolicy and ReplayStatus: the archive replayed like the live copy,
//!   raw replays, EndingPoint pauses, a replay across a restart, invalid policies.
//! - [`errors`]: NotFound, InvalidParameter and the other errors users can provoke.
//! - [`recorded_messages`]: the recorded email/SMS messages, listed and cleared by filter.
//! - [`topics`]: list paging, topic and subscription attributes, tags.
//! - [`rules`]: AWS's rules for SNS parameters and attributes over their variants (issue 33).
//! - [`recorded`]: answers as AWS recorded them: ARN and phone checks, idempotency,
//!   SubscriptionPrincipal, permissions, dead-lettering, trace headers.
//! - [`platform`]: platform applications and endpoints, SMS and push publishes, each rule
//!   with its variants: application attributes, ARN kinds, disabled applications,
//!   `application` subscriptions, paged lists, AWS-defined message attributes.
//! - [`http`]: HTTP/S subscriptions: confirmation through SubscribeURL, signatures
//!   (SignatureVersion 1 and 2) verified with the served certificate, SNS's headers,
//!   retries by DeliveryPolicy, the RedrivePolicy DLQ, a restart that resumes deliveries.
//!
//! Authority: the botocore model `sns/2010-03-31` and the SNS Developer Guide. A test that
//! pins a known divergence from AWS asserts AWS's behaviour and is `#[ignore]`d with the
//! reason, so `cargo test -p loft --test sns -- --ignored` lists what is still to fix.

#[path = "../support/loft.rs"]
mod loft;
#[path = "../support/wait.rs"]
mod wait;
#[macro_use]
mod harness;
mod archive;
mod data_protection;
mod encryption;
mod errors;
mod fanout;
mod fifo;
mod http;
mod platform;
mod recorded;
mod recorded_messages;
mod replay;
mod rules;
mod sandbox;
mod sink;
mod topics;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use aws_sdk_sns::types::MessageAttributeValue;
use aws_sdk_sqs::types::{MessageSystemAttributeName, QueueAttributeName};
use serde_json::Value;

pub use harness::{Server, PATIENCE};

/// Creates topic `name` with `attributes`; returns its ARN.
pub async fn create_topic(sns: &aws_sdk_sns::Client, name: &str, attrs: &[(&str, &str)]) -> String {
    let mut req = sns.create_topic().name(name);
    for (k, v) in attrs {
        req = req.attributes(*k, *v);
    }
    req.send()
        .await
        .unwrap_or_else(|e| panic!("CreateTopic {name}: {e:?}"))
        .topic_arn()
        .expect("TopicArn")
        .to_owned()
}

/// Creates SQS queue `name` with `attributes`; returns its URL.
pub async fn create_queue(sqs: &aws_sdk_sqs::Client, name: &str, attrs: &[(&str, &str)]) -> String {
    let mut req = sqs.create_queue().queue_name(name);
    for (k, v) in attrs {
        req = req.attributes(QueueAttributeName::from(*k), *v);
    }
    req.send()
        .await
        .unwrap_or_else(|e| panic!("CreateQueue {name}: {e:?}"))
        .queue_url()
        .expect("QueueUrl")
        .to_owned()
}

/// Subscribes queue `queue` (by name) to `topic_arn` with `attributes`; returns the
/// subscription ARN (SQS subscriptions are confirmed at once).
pub async fn subscribe_queue(
    server: &Server,
    topic_arn: &str,
    queue: &str,
    attrs: &[(&str, &str)],
) -> String {
    let mut req = server
        .sns()
        .subscribe()
        .topic_arn(topic_arn)
        .protocol("sqs")
        .endpoint(server.queue_arn(queue));
    for (k, v) in attrs {
        req = req.attributes(*k, *v);
    }
    let arn = req
        .send()
        .await
        .unwrap_or_else(|e| panic!("Subscribe {queue}: {e:?}"))
        .subscription_arn()
        .expect("SubscriptionArn")
        .to_owned();
    assert!(
        arn.starts_with(&format!("{topic_arn}:")),
        "subscription ARN {arn} is not under {topic_arn}"
    );
    arn
}

/// A String SNS message attribute.
pub fn sns_string(value: &str) -> MessageAttributeValue {
    sns_typed("String", value)
}

/// An SNS message attribute of a String- or Number-based `data_type`.
pub fn sns_typed(data_type: &str, value: &str) -> MessageAttributeValue {
    MessageAttributeValue::builder()
        .data_type(data_type)
        .string_value(value)
        .build()
        .expect("attribute")
}

/// A Binary SNS message attribute.
pub fn sns_binary(bytes: &[u8]) -> MessageAttributeValue {
    MessageAttributeValue::builder()
        .data_type("Binary")
        .binary_value(aws_sdk_sns::primitives::Blob::new(bytes.to_vec()))
        .build()
        .expect("attribute")
}

/// Receives (and deletes) every message of queue `url` until `n` have arrived, waiting at
/// most [`PATIENCE`]; then checks that no more arrive within a short long poll.
pub async fn receive_exactly(
    sqs: &aws_sdk_sqs::Client,
    url: &str,
    n: usize,
) -> Vec<aws_sdk_sqs::types::Message> {
    let deadline = Instant::now() + PATIENCE;
    let mut out = Vec::new();
    while out.len() < n {
        assert!(
            Instant::now() < deadline,
            "{url}: only {} of {n} messages arrived: {out:?}",
            out.len()
        );
        out.extend(receive_some(sqs, url, 1).await);
    }
    let extra = receive_some(sqs, url, 0).await;
    assert!(extra.is_empty(), "{url}: more than {n} messages: {extra:?}");
    out
}

/// One ReceiveMessage of up to 10 messages with all attributes, waiting `wait` seconds;
/// deletes what it got.
pub async fn receive_some(
    sqs: &aws_sdk_sqs::Client,
    url: &str,
    wait: i32,
) -> Vec<aws_sdk_sqs::types::Message> {
    let out = sqs
        .receive_message()
        .queue_url(url)
        .max_number_of_messages(10)
        .wait_time_seconds(wait)
        .message_attribute_names("All")
        .message_system_attribute_names(MessageSystemAttributeName::All)
        .send()
        .await
        .expect("ReceiveMessage");
    let msgs = out.messages().to_vec();
    for m in &msgs {
        sqs.delete_message()
            .queue_url(url)
            .receipt_handle(m.receipt_handle().expect("receipt handle"))
            .send()
            .await
            .expect("DeleteMessage");
    }
    msgs
}

/// The JSON of a message body; panics showing the body when it is not JSON.
pub fn json_of(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body:?}"))
}

/// The field names of an envelope, sorted.
pub fn keys(v: &Value) -> Vec<String> {
    let mut k: Vec<String> = v
        .as_object()
        .unwrap_or_else(|| panic!("not a JSON object: {v}"))
        .keys()
        .cloned()
        .collect();
    k.sort();
    k
}

/// Sorted owned strings, for comparing field lists.
pub fn sorted(names: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = names.iter().map(|s| (*s).to_owned()).collect();
    v.sort();
    v
}

/// Asserts `ts` is an ISO 8601 UTC timestamp with milliseconds (`2024-01-02T03:04:05.678Z`)
/// within a minute of now.
#[track_caller]
pub fn assert_timestamp(ts: &str) {
    let b = ts.as_bytes();
    let shape_ok = ts.len() == 24
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b'T'
        && b[13] == b':'
        && b[16] == b':'
        && b[19] == b'.'
        && b[23] == b'Z'
        && b.iter()
            .enumerate()
            .all(|(i, c)| matches!(i, 4 | 7 | 10 | 13 | 16 | 19 | 23) || c.is_ascii_digit());
    assert!(shape_ok, "Timestamp {ts:?} is not YYYY-MM-DDThh:mm:ss.sssZ");
    let parsed = chrono_like_epoch_ms(ts);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_millis() as i64;
    assert!(
        (now - parsed).abs() < 60_000,
        "Timestamp {ts} is not close to now"
    );
}

/// Milliseconds since the epoch of a `YYYY-MM-DDThh:mm:ss.sssZ` timestamp (days from the
/// civil date, as in Howard Hinnant's algorithm).
fn chrono_like_epoch_ms(ts: &str) -> i64 {
    let n = |r: std::ops::Range<usize>| ts[r].parse::<i64>().expect("digits");
    let (y, m, d) = (n(0..4), n(5..7), n(8..10));
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    ((days * 24 + n(11..13)) * 60 + n(14..16)) * 60_000 + n(17..19) * 1000 + n(20..23)
}

/// A topic's attributes.
pub async fn topic_attributes(
    sns: &aws_sdk_sns::Client,
    topic_arn: &str,
) -> BTreeMap<String, String> {
    sns.get_topic_attributes()
        .topic_arn(topic_arn)
        .send()
        .await
        .expect("GetTopicAttributes")
        .attributes()
        .expect("Attributes")
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// A subscription's attributes.
pub async fn subscription_attributes(
    sns: &aws_sdk_sns::Client,
    arn: &str,
) -> BTreeMap<String, String> {
    sns.get_subscription_attributes()
        .subscription_arn(arn)
        .send()
        .await
        .expect("GetSubscriptionAttributes")
        .attributes()
        .expect("Attributes")
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Waits until `cond` holds, at most `timeout` (through [`wait::until`]).
pub async fn eventually<F, Fut>(timeout: Duration, what: &str, cond: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    assert!(
        wait::until(timeout, cond).await,
        "timed out waiting for {what}"
    );
}
