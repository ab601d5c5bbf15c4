//! SNS message replay for FIFO topic subscribers: a subscription's ReplayPolicy redelivers
//! the topic's archived messages of its window through the live delivery path (filter
//! policy, envelope, FIFO group order), then live delivery goes on; with an EndingPoint
//! the subscription is paused after it; ReplayStatus reports where the replay stands; a
//! replay survives a restart; invalid policies are refused.
//!
//! Sources: SNS Developer Guide, "Amazon SNS message replay for FIFO topic subscribers"
//! (a replayed message keeps its content, MessageId and Timestamp and carries
//! `Replayed`; filter policies apply; "Understanding the EndingPoint"); the botocore model
//! `sns/2010-03-31`, Subscribe (`ReplayPolicy`, `ReplayStatus`).

use std::collections::BTreeMap;

use aws_sdk_sns::operation::set_subscription_attributes::SetSubscriptionAttributesError;
use aws_sdk_sns::operation::subscribe::SubscribeError;
use serde_json::Value;

use crate::*;

const ARCHIVED: &[(&str, &str)] = &[
    ("FifoTopic", "true"),
    ("ArchivePolicy", r#"{"MessageRetentionPeriod":"1"}"#),
];

const KEEP_ONLY: &str = r#"{"kind":["keep"]}"#;

/// An ISO 8601 timestamp `offset_ms` from now.
fn iso_from_now(offset_ms: i64) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_millis() as i64;
    aws_sdk_sns::primitives::DateTime::from_millis(now + offset_ms)
        .fmt(aws_sdk_sns::primitives::DateTimeFormat::DateTime)
        .expect("an ISO 8601 time")
}

async fn subscription_attributes(server: &Server, arn: &str) -> BTreeMap<String, String> {
    server
        .sns()
        .get_subscription_attributes()
        .subscription_arn(arn)
        .send()
        .await
        .expect("GetSubscriptionAttributes")
        .attributes()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .collect()
}

/// Waits until the subscription's ReplayStatus is `want`, at most [`PATIENCE`].
async fn wait_for_status(server: &Server, arn: &str, want: &str) {
    let reached = crate::wait::until(PATIENCE, || async {
        subscription_attributes(server, arn)
            .await
            .get("ReplayStatus")
            .map(String::as_str)
            == Some(want)
    })
    .await;
    assert!(
        reached,
        "ReplayStatus never became {want}: {:?}",
        subscription_attributes(server, arn).await
    );
}

async fn publish(server: &Server, topic: &str, body: &str, group: &str, kind: &str) -> String {
    server
        .sns()
        .publish()
        .topic_arn(topic)
        .message(body)
        .message_group_id(group)
        .message_deduplication_id(body)
        .message_attributes("kind", sns_string(kind))
        .send()
        .await
        .expect("Publish")
        .message_id()
        .expect("MessageId")
        .to_owned()
}

/// The envelopes of `messages`.
fn envelopes(messages: &[aws_sdk_sqs::types::Message]) -> Vec<Value> {
    messages
        .iter()
        .map(|m| json_of(m.body().expect("body")))
        .collect()
}

/// Message bodies by group, in arrival order: the envelope names no group, so the group is
/// the body's prefix (`g1-...`), as the test publishes them.
fn by_group(envs: &[Value]) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for e in envs {
        let body = e["Message"].as_str().expect("Message").to_owned();
        let group = body.split('-').next().unwrap_or_default().to_owned();
        out.entry(group).or_default().push(body);
    }
    out
}

#[tokio::test]
async fn replay_redelivers_the_archive_as_the_live_subscriber_got_it() {
    let server = Server::start();
    let sqs = server.sqs();
    let topic = create_topic(&server.sns(), "orders.fifo", ARCHIVED).await;
    let live_url = create_queue(&sqs, "live.fifo", &[("FifoQueue", "true")]).await;
    subscribe_queue(&server, &topic, "live.fifo", &[("FilterPolicy", KEEP_ONLY)]).await;
    let start = iso_from_now(-1_000);
    let mut kept = 0;
    for i in 0..24 {
        let group = format!("g{}", i % 3);
        let kind = if i % 4 == 3 { "drop" } else { "keep" };
        kept += usize::from(kind == "keep");
        publish(&server, &topic, &format!("{group}-m{i:02}"), &group, kind).await;
    }
    let live = envelopes(&receive_exactly(&sqs, &live_url, kept).await);

    // A new queue subscribed with a ReplayPolicy from before the first publish.
    let replay_url = create_queue(&sqs, "replay.fifo", &[("FifoQueue", "true")]).await;
    let policy = format!(r#"{{"PointType":"Timestamp","StartingPoint":"{start}"}}"#);
    let sub = subscribe_queue(
        &server,
        &topic,
        "replay.fifo",
        &[("FilterPolicy", KEEP_ONLY), ("ReplayPolicy", &policy)],
    )
    .await;
    wait_for_status(&server, &sub, "Completed").await;
    let attrs = subscription_attributes(&server, &sub).await;
    assert_eq!(attrs["ReplayPolicy"], policy);
    let replayed = envelopes(&receive_exactly(&sqs, &replay_url, kept).await);

    // The same messages, filter applied, in the same order within each group, each with
    // the original's MessageId, Timestamp and SequenceNumber, marked Replayed.
    assert_eq!(by_group(&replayed), by_group(&live));
    let originals: BTreeMap<&str, &Value> = live
        .iter()
        .map(|e| (e["Message"].as_str().unwrap(), e))
        .collect();
    for r in &replayed {
        let o = originals[r["Message"].as_str().unwrap()];
        for field in [
            "MessageId",
            "Timestamp",
            "SequenceNumber",
            "TopicArn",
            "Type",
        ] {
            assert_eq!(r[field], o[field], "{field} of {r}");
        }
        assert_eq!(r["MessageAttributes"], o["MessageAttributes"]);
        assert_eq!(r["Replayed"], "true", "{r}");
        // Where AWS's recorded replayed envelopes put it: right after SequenceNumber.
        let order: Vec<&String> = r.as_object().unwrap().keys().collect();
        let at = |k: &str| order.iter().position(|o| *o == k).unwrap();
        assert_eq!(at("Replayed"), at("SequenceNumber") + 1, "{r}");
        assert!(
            o.get("Replayed").is_none(),
            "a live copy is not replayed: {o}"
        );
    }

    // Then live delivery goes on, to both subscriptions, not marked replayed.
    publish(&server, &topic, "g0-after", "g0", "keep").await;
    for url in [&live_url, &replay_url] {
        let got = envelopes(&receive_exactly(&sqs, url, 1).await);
        assert_eq!(got[0]["Message"], "g0-after");
        assert!(got[0].get("Replayed").is_none(), "{}", got[0]);
    }

    // /metrics counts the replayed copies with the live ones.
    let metrics = reqwest::get(format!("{}/metrics", server.url))
        .await
        .expect("GET /metrics")
        .text()
        .await
        .expect("metrics text");
    let delivered = metrics
        .lines()
        .find(|l| {
            l.starts_with("loft_deliveries_total{")
                && l.contains(r#"protocol="sqs""#)
                && l.contains(r#"outcome="delivered""#)
        })
        .and_then(|l| l.rsplit(' ').next())
        .unwrap_or_else(|| panic!("no sqs delivered counter:\n{metrics}"));
    assert_eq!(delivered, (2 * kept + 2).to_string());
}

#[tokio::test]
async fn raw_replay_carries_the_replayed_attribute() {
    let server = Server::start();
    let sqs = server.sqs();
    let topic = create_topic(&server.sns(), "raw.fifo", ARCHIVED).await;
    let start = iso_from_now(-1_000);
    publish(&server, &topic, "g-one", "g", "keep").await;
    let url = create_queue(&sqs, "raw-replay.fifo", &[("FifoQueue", "true")]).await;
    let policy = format!(r#"{{"PointType":"Timestamp","StartingPoint":"{start}"}}"#);
    let sub = subscribe_queue(
        &server,
        &topic,
        "raw-replay.fifo",
        &[("RawMessageDelivery", "true"), ("ReplayPolicy", &policy)],
    )
    .await;
    wait_for_status(&server, &sub, "Completed").await;
    let got = receive_exactly(&sqs, &url, 1).await;
    assert_eq!(got[0].body(), Some("g-one"));
    let attrs = got[0].message_attributes().expect("attributes");
    assert_eq!(attrs["Replayed"].string_value(), Some("true"));
    assert_eq!(attrs["kind"].string_value(), Some("keep"));
    assert_eq!(
        got[0].attributes().unwrap()[&MessageSystemAttributeName::MessageGroupId],
        "g"
    );
}

/// A replay with an EndingPoint still ahead keeps replaying (Replaying) and keeps its
/// cursor across a restart: nothing is delivered twice; messages published inside the
/// window reach the subscription through the replay; once the EndingPoint has passed it
/// completes and the subscription is paused; a new policy without EndingPoint resumes it.
#[tokio::test]
async fn replay_survives_a_restart_and_an_ending_point_pauses_the_subscription() {
    let mut server = Server::start();
    let sqs = server.sqs();
    let topic = create_topic(&server.sns(), "window.fifo", ARCHIVED).await;
    let start = iso_from_now(-1_000);
    publish(&server, &topic, "g-before", "g", "keep").await;
    let url = create_queue(&sqs, "window.fifo", &[("FifoQueue", "true")]).await;
    let end = iso_from_now(4_000);
    let policy =
        format!(r#"{{"PointType":"Timestamp","StartingPoint":"{start}","EndingPoint":"{end}"}}"#);
    let sub = subscribe_queue(&server, &topic, "window.fifo", &[("ReplayPolicy", &policy)]).await;
    let first = envelopes(&receive_exactly(&sqs, &url, 1).await);
    assert_eq!(first[0]["Message"], "g-before");
    assert_eq!(
        subscription_attributes(&server, &sub).await["ReplayStatus"],
        "In progress"
    );

    server.stop();
    server.start_again();
    let sqs = server.sqs();
    // Inside the window: delivered by the replay, after the restart, once.
    publish(&server, &topic, "g-inside", "g", "keep").await;
    let inside = envelopes(&receive_exactly(&sqs, &url, 1).await);
    assert_eq!(inside[0]["Message"], "g-inside");
    assert_eq!(inside[0]["Replayed"], "true");
    wait_for_status(&server, &sub, "Completed").await;

    // Paused: a message after the EndingPoint is not delivered.
    publish(&server, &topic, "g-paused", "g", "keep").await;
    assert!(receive_some(&sqs, &url, 1).await.is_empty());

    // Resumed from the EndingPoint: the paused message comes through the replay, then
    // live ones.
    let resume = format!(r#"{{"PointType":"Timestamp","StartingPoint":"{end}"}}"#);
    server
        .sns()
        .set_subscription_attributes()
        .subscription_arn(&sub)
        .attribute_name("ReplayPolicy")
        .attribute_value(&resume)
        .send()
        .await
        .expect("SetSubscriptionAttributes ReplayPolicy");
    let resumed = envelopes(&receive_exactly(&sqs, &url, 1).await);
    assert_eq!(resumed[0]["Message"], "g-paused");
    wait_for_status(&server, &sub, "Completed").await;
    publish(&server, &topic, "g-live", "g", "keep").await;
    let live = envelopes(&receive_exactly(&sqs, &url, 1).await);
    assert_eq!(live[0]["Message"], "g-live");
    assert!(live[0].get("Replayed").is_none());
}

#[tokio::test]
async fn invalid_replay_policies_are_refused() {
    let server = Server::start();
    let (sns, sqs) = (server.sns(), server.sqs());
    let topic = create_topic(&sns, "checked.fifo", ARCHIVED).await;
    create_queue(&sqs, "checked.fifo", &[("FifoQueue", "true")]).await;
    let sub = subscribe_queue(&server, &topic, "checked.fifo", &[]).await;
    let past = iso_from_now(-60_000);
    let later = iso_from_now(-30_000);
    for bad in [
        "not json".to_owned(),
        "[]".to_owned(),
        format!(r#"{{"StartingPoint":"{past}"}}"#),
        format!(r#"{{"PointType":"Offset","StartingPoint":"{past}"}}"#),
        r#"{"PointType":"Timestamp"}"#.to_owned(),
        r#"{"PointType":"Timestamp","StartingPoint":"yesterday"}"#.to_owned(),
        format!(r#"{{"PointType":"Timestamp","StartingPoint":"{later}","EndingPoint":"{past}"}}"#),
        format!(
            r#"{{"PointType":"Timestamp","StartingPoint":"{}"}}"#,
            iso_from_now(3_600_000)
        ),
    ] {
        let msg = assert_sns_err!(
            sns.set_subscription_attributes()
                .subscription_arn(&sub)
                .attribute_name("ReplayPolicy")
                .attribute_value(&bad)
                .send()
                .await,
            SetSubscriptionAttributesError::InvalidParameterException(_),
            "InvalidParameter",
            400
        );
        assert!(msg.contains("ReplayPolicy"), "{bad}: {msg}");
    }
    let attrs = subscription_attributes(&server, &sub).await;
    assert!(!attrs.contains_key("ReplayPolicy"), "{attrs:?}");
    assert!(!attrs.contains_key("ReplayStatus"), "{attrs:?}");

    // A FIFO topic without an archive has nothing to replay: refused, no subscription.
    let bare = create_topic(&sns, "bare.fifo", &[("FifoTopic", "true")]).await;
    let policy = format!(r#"{{"PointType":"Timestamp","StartingPoint":"{past}"}}"#);
    let msg = assert_sns_err!(
        sns.subscribe()
            .topic_arn(&bare)
            .protocol("sqs")
            .endpoint(server.queue_arn("checked.fifo"))
            .attributes("ReplayPolicy", &policy)
            .send()
            .await,
        SubscribeError::InvalidParameterException(_),
        "InvalidParameter",
        400
    );
    assert!(msg.contains("ArchivePolicy"), "{msg}");
    let subs = sns
        .list_subscriptions_by_topic()
        .topic_arn(&bare)
        .send()
        .await
        .expect("ListSubscriptionsByTopic");
    assert!(subs.subscriptions().is_empty());
}

/// ReplayPolicy `{}` cancels the replay (AWS's recorded SetSubscriptionAttributes:
/// accepted, then neither ReplayPolicy nor ReplayStatus is shown): a subscription paused
/// after an EndingPoint receives live messages again.
#[tokio::test]
async fn an_empty_replay_policy_ends_the_pause() {
    let server = Server::start();
    let sqs = server.sqs();
    let topic = create_topic(&server.sns(), "stop.fifo", ARCHIVED).await;
    let start = iso_from_now(-2_000);
    let end = iso_from_now(-1_000);
    let url = create_queue(&sqs, "stop.fifo", &[("FifoQueue", "true")]).await;
    let policy =
        format!(r#"{{"PointType":"Timestamp","StartingPoint":"{start}","EndingPoint":"{end}"}}"#);
    let sub = subscribe_queue(&server, &topic, "stop.fifo", &[("ReplayPolicy", &policy)]).await;
    wait_for_status(&server, &sub, "Completed").await;
    publish(&server, &topic, "g-paused", "g", "keep").await;
    assert!(receive_some(&sqs, &url, 1).await.is_empty(), "paused");
    server
        .sns()
        .set_subscription_attributes()
        .subscription_arn(&sub)
        .attribute_name("ReplayPolicy")
        .attribute_value("{}")
        .send()
        .await
        .expect("SetSubscriptionAttributes ReplayPolicy {}");
    let attrs = subscription_attributes(&server, &sub).await;
    assert!(!attrs.contains_key("ReplayPolicy"), "{attrs:?}");
    assert!(!attrs.contains_key("ReplayStatus"), "{attrs:?}");
    publish(&server, &topic, "g-live", "g", "keep").await;
    let got = envelopes(&receive_exactly(&sqs, &url, 1).await);
    assert_eq!(got[0]["Message"], "g-live");
}

/// Removing the topic's ArchivePolicy ends a running replay as Completed and live messages
/// reach the subscription again, as AWS's recorded answers show.
#[tokio::test]
async fn removing_the_archive_completes_a_running_replay() {
    let server = Server::start();
    let (sns, sqs) = (server.sns(), server.sqs());
    let topic = create_topic(&sns, "gone.fifo", ARCHIVED).await;
    let start = iso_from_now(-1_000);
    let url = create_queue(&sqs, "gone.fifo", &[("FifoQueue", "true")]).await;
    // An EndingPoint an hour ahead keeps the replay Replaying.
    let end = iso_from_now(3_600_000);
    let policy =
        format!(r#"{{"PointType":"Timestamp","StartingPoint":"{start}","EndingPoint":"{end}"}}"#);
    let sub = subscribe_queue(&server, &topic, "gone.fifo", &[("ReplayPolicy", &policy)]).await;
    wait_for_status(&server, &sub, "In progress").await;
    sns.set_topic_attributes()
        .topic_arn(&topic)
        .attribute_name("ArchivePolicy")
        .attribute_value("{}")
        .send()
        .await
        .expect("SetTopicAttributes ArchivePolicy {}");
    wait_for_status(&server, &sub, "Completed").await;
    publish(&server, &topic, "g-live", "g", "keep").await;
    let got = envelopes(&receive_exactly(&sqs, &url, 1).await);
    assert_eq!(got[0]["Message"], "g-live");
    assert!(got[0].get("Replayed").is_none());
}

/// A topic with ContentBasedDeduplication: its publishes name no MessageDeduplicationId,
/// and the replay delivers them all the same (the id is the message's SHA-256, as live).
#[tokio::test]
async fn a_content_deduplicated_topic_replays_its_archive() {
    let server = Server::start();
    let sqs = server.sqs();
    let attrs = [ARCHIVED, &[("ContentBasedDeduplication", "true")]].concat();
    let topic = create_topic(&server.sns(), "cbd.fifo", &attrs).await;
    let start = iso_from_now(-1_000);
    for body in ["g0-one", "g0-two"] {
        server
            .sns()
            .publish()
            .topic_arn(&topic)
            .message(body)
            .message_group_id("g0")
            .send()
            .await
            .expect("Publish");
    }
    let url = create_queue(&sqs, "cbd-replay.fifo", &[("FifoQueue", "true")]).await;
    let policy = format!(r#"{{"PointType":"Timestamp","StartingPoint":"{start}"}}"#);
    let sub = subscribe_queue(
        &server,
        &topic,
        "cbd-replay.fifo",
        &[("ReplayPolicy", &policy)],
    )
    .await;
    wait_for_status(&server, &sub, "Completed").await;
    let got = envelopes(&receive_exactly(&sqs, &url, 2).await);
    let bodies: Vec<&str> = got.iter().map(|e| e["Message"].as_str().unwrap()).collect();
    assert_eq!(bodies, ["g0-one", "g0-two"]);
}

/// Messages published before the topic kept an archive cannot be replayed; a replay from
/// before them completes with what the archive holds instead of waiting for them.
#[tokio::test]
async fn a_replay_past_unarchived_messages_completes() {
    let server = Server::start();
    let sqs = server.sqs();
    let topic = create_topic(&server.sns(), "late.fifo", &[("FifoTopic", "true")]).await;
    let start = iso_from_now(-1_000);
    publish(&server, &topic, "g0-before", "g0", "keep").await;
    server
        .sns()
        .set_topic_attributes()
        .topic_arn(&topic)
        .attribute_name("ArchivePolicy")
        .attribute_value(r#"{"MessageRetentionPeriod":"1"}"#)
        .send()
        .await
        .expect("SetTopicAttributes");
    publish(&server, &topic, "g0-archived", "g0", "keep").await;
    let url = create_queue(&sqs, "late-replay.fifo", &[("FifoQueue", "true")]).await;
    let policy = format!(r#"{{"PointType":"Timestamp","StartingPoint":"{start}"}}"#);
    let sub = subscribe_queue(
        &server,
        &topic,
        "late-replay.fifo",
        &[("ReplayPolicy", &policy)],
    )
    .await;
    wait_for_status(&server, &sub, "Completed").await;
    let got = envelopes(&receive_exactly(&sqs, &url, 1).await);
    assert_eq!(got[0]["Message"], "g0-archived");
    // Live delivery goes on, not marked replayed.
    publish(&server, &topic, "g0-live", "g0", "keep").await;
    let got = envelopes(&receive_exactly(&sqs, &url, 1).await);
    assert_eq!(got[0]["Message"], "g0-live");
    assert!(got[0].get("Replayed").is_none(), "{}", got[0]);
}
