//! FIFO topics: to FIFO queues with the message group and deduplication id kept, the
//! envelope's SequenceNumber, deduplication (explicit and content-based), and the rules
//! of which subscriptions a FIFO topic takes.
//!
//! Sources: SNS Developer Guide "Amazon SNS FIFO topics", "Message ordering details for
//! FIFO topics", "Message deduplication for FIFO topics", "Parsing message formats"; SNS API
//! Reference Publish (MessageGroupId, MessageDeduplicationId, SequenceNumber).

use aws_sdk_sns::operation::publish::PublishError;
use aws_sdk_sns::operation::subscribe::SubscribeError;
use aws_sdk_sqs::types::MessageSystemAttributeName as Sys;

use crate::*;

/// A 128-bit sequence number as a comparable integer.
fn seq(s: &str) -> u128 {
    s.parse()
        .unwrap_or_else(|_| panic!("SequenceNumber {s:?} is not a number"))
}

async fn publish_fifo(
    sns: &aws_sdk_sns::Client,
    topic: &str,
    body: &str,
    group: &str,
    dedup: Option<&str>,
) -> (String, String) {
    let out = sns
        .publish()
        .topic_arn(topic)
        .message(body)
        .message_group_id(group)
        .set_message_deduplication_id(dedup.map(str::to_owned))
        .send()
        .await
        .unwrap_or_else(|e| panic!("Publish {body}: {e:?}"));
    (
        out.message_id().expect("MessageId").to_owned(),
        out.sequence_number()
            .expect("FIFO topics return a SequenceNumber")
            .to_owned(),
    )
}

#[tokio::test]
async fn fifo_topic_to_fifo_queues_keeps_group_dedup_and_order() {
    let server = Server::start();
    let (sns, sqs) = (server.sns(), server.sqs());
    let topic = create_topic(&sns, "prices.fifo", &[("FifoTopic", "true")]).await;
    let fifo = [("FifoQueue", "true")];
    let wholesale = create_queue(&sqs, "wholesale.fifo", &fifo).await;
    let retail = create_queue(&sqs, "retail.fifo", &fifo).await;
    let analytics = create_queue(&sqs, "analytics", &[]).await;
    let sub = subscribe_queue(&server, &topic, "wholesale.fifo", &[]).await;
    subscribe_queue(
        &server,
        &topic,
        "retail.fifo",
        &[("RawMessageDelivery", "true")],
    )
    .await;
    // FIFO topics deliver to standard queues too (without the ordering guarantee).
    subscribe_queue(&server, &topic, "analytics", &[]).await;

    let a = publish_fifo(&sns, &topic, "a", "g1", Some("d1")).await;
    let b = publish_fifo(&sns, &topic, "b", "g1", Some("d2")).await;
    let c = publish_fifo(&sns, &topic, "c", "g2", Some("d3")).await;
    assert!(
        seq(&a.1) < seq(&b.1) && seq(&b.1) < seq(&c.1),
        "{a:?} {b:?} {c:?}"
    );
    // A repeated deduplication id within the window: accepted, same answer, not delivered.
    let again = publish_fifo(&sns, &topic, "a, again", "g1", Some("d1")).await;
    assert_eq!(again, a, "a duplicate returns the first publish's ids");

    // The enveloped FIFO queue: three messages, group order kept, dedup id carried.
    let got = receive_exactly(&sqs, &wholesale, 3).await;
    let find = |body: &str| {
        got.iter()
            .find(|m| json_of(m.body().expect("body"))["Message"] == body)
            .unwrap_or_else(|| panic!("{body} not delivered: {got:?}"))
    };
    let mut g1 = Vec::new();
    for (body, (id, sequence), group, dedup) in [
        ("a", &a, "g1", "d1"),
        ("b", &b, "g1", "d2"),
        ("c", &c, "g2", "d3"),
    ] {
        let m = find(body);
        let env = json_of(m.body().expect("body"));
        assert_eq!(
            keys(&env),
            sorted(&[
                "Type",
                "MessageId",
                "SequenceNumber",
                "TopicArn",
                "Message",
                "Timestamp",
                "UnsubscribeURL"
            ]),
            "FIFO envelopes carry SequenceNumber and no signature: {env}"
        );
        assert_eq!(env["Type"], "Notification");
        assert_eq!(env["MessageId"], id.as_str());
        assert_eq!(env["SequenceNumber"], sequence.as_str());
        assert_eq!(env["TopicArn"], topic.as_str());
        assert!(env["UnsubscribeURL"]
            .as_str()
            .is_some_and(|u| u.ends_with(&format!("&SubscriptionArn={sub}"))));
        assert_timestamp(env["Timestamp"].as_str().expect("Timestamp"));
        let attrs = m.attributes().expect("system attributes");
        assert_eq!(
            attrs.get(&Sys::MessageGroupId).map(String::as_str),
            Some(group)
        );
        assert_eq!(
            attrs.get(&Sys::MessageDeduplicationId).map(String::as_str),
            Some(dedup)
        );
        assert!(attrs.contains_key(&Sys::SequenceNumber), "{attrs:?}");
        if group == "g1" {
            g1.push(seq(&attrs[&Sys::SequenceNumber]));
        }
    }
    assert!(g1[0] < g1[1], "the queue kept g1's order: {g1:?}");

    // Raw to a FIFO queue: the bare bodies, in order within each group.
    let raw = receive_fifo_in_order(&sqs, &retail, 3).await;
    let g1_bodies: Vec<&str> = raw
        .iter()
        .filter(|m| {
            m.attributes()
                .and_then(|a| a.get(&Sys::MessageGroupId))
                .map(String::as_str)
                == Some("g1")
        })
        .filter_map(|m| m.body())
        .collect();
    assert_eq!(g1_bodies, ["a", "b"]);
    assert!(raw.iter().any(|m| m.body() == Some("c")));

    // The standard queue gets the three envelopes.
    receive_exactly(&sqs, &analytics, 3).await;
}

/// Receives `n` messages of a FIFO queue one at a time (deleting each), so group order is
/// what the queue hands out.
async fn receive_fifo_in_order(
    sqs: &aws_sdk_sqs::Client,
    url: &str,
    n: usize,
) -> Vec<aws_sdk_sqs::types::Message> {
    let mut out = Vec::new();
    let deadline = std::time::Instant::now() + PATIENCE;
    while out.len() < n {
        assert!(std::time::Instant::now() < deadline, "only {out:?}");
        let got = sqs
            .receive_message()
            .queue_url(url)
            .max_number_of_messages(1)
            .wait_time_seconds(1)
            .message_system_attribute_names(Sys::All)
            .send()
            .await
            .expect("ReceiveMessage");
        for m in got.messages() {
            sqs.delete_message()
                .queue_url(url)
                .receipt_handle(m.receipt_handle().expect("handle"))
                .send()
                .await
                .expect("DeleteMessage");
            out.push(m.clone());
        }
    }
    out
}

#[tokio::test]
async fn content_based_deduplication_on_the_topic() {
    let server = Server::start();
    let (sns, sqs) = (server.sns(), server.sqs());
    let topic = create_topic(
        &sns,
        "cbd.fifo",
        &[("FifoTopic", "true"), ("ContentBasedDeduplication", "true")],
    )
    .await;
    let url = create_queue(&sqs, "q.fifo", &[("FifoQueue", "true")]).await;
    subscribe_queue(&server, &topic, "q.fifo", &[("RawMessageDelivery", "true")]).await;
    let first = publish_fifo(&sns, &topic, "same body", "g", None).await;
    let second = publish_fifo(&sns, &topic, "same body", "g", None).await;
    assert_eq!(first, second, "the same body is a duplicate");
    let other = publish_fifo(&sns, &topic, "other body", "g", None).await;
    assert_ne!(other.0, first.0);
    let msgs = receive_fifo_in_order(&sqs, &url, 2).await;
    assert_eq!(
        msgs.iter().filter_map(|m| m.body()).collect::<Vec<_>>(),
        ["same body", "other body"]
    );
    receive_exactly(&sqs, &url, 0).await;
    let attrs = topic_attributes(&sns, &topic).await;
    assert_eq!(attrs["FifoTopic"], "true");
    assert_eq!(attrs["ContentBasedDeduplication"], "true");
}

/// SNS API Reference, Publish, MessageDeduplicationId: with FifoThroughputScope
/// `MessageGroup` "the message deduplication scope is within each individual message
/// group": the same id in two groups is two messages, in one group a duplicate.
#[tokio::test]
async fn message_group_scope_deduplicates_within_each_group() {
    let server = Server::start();
    let (sns, sqs) = (server.sns(), server.sqs());
    let topic = create_topic(
        &sns,
        "scoped.fifo",
        &[
            ("FifoTopic", "true"),
            ("FifoThroughputScope", "MessageGroup"),
        ],
    )
    .await;
    let url = create_queue(
        &sqs,
        "scoped.fifo",
        &[
            ("FifoQueue", "true"),
            ("DeduplicationScope", "messageGroup"),
        ],
    )
    .await;
    subscribe_queue(
        &server,
        &topic,
        "scoped.fifo",
        &[("RawMessageDelivery", "true")],
    )
    .await;
    let a = publish_fifo(&sns, &topic, "a", "g1", Some("same")).await;
    let b = publish_fifo(&sns, &topic, "b", "g2", Some("same")).await;
    assert_ne!(a.0, b.0, "another group: another message");
    assert!(seq(&b.1) > seq(&a.1));
    let again = publish_fifo(&sns, &topic, "a again", "g1", Some("same")).await;
    assert_eq!(again, a, "the same group: a duplicate");
    let msgs = receive_fifo_in_order(&sqs, &url, 2).await;
    let mut got: Vec<&str> = msgs.iter().filter_map(|m| m.body()).collect();
    got.sort();
    assert_eq!(got, ["a", "b"]);
    receive_exactly(&sqs, &url, 0).await;
    // The default scope (Topic): the same id in another group is a duplicate.
    let whole = create_topic(&sns, "whole.fifo", &[("FifoTopic", "true")]).await;
    let first = publish_fifo(&sns, &whole, "x", "g1", Some("same")).await;
    let other_group = publish_fifo(&sns, &whole, "y", "g2", Some("same")).await;
    assert_eq!(other_group, first);
}

#[tokio::test]
async fn fifo_publish_errors() {
    let server = Server::start();
    let sns = server.sns();
    let fifo = create_topic(&sns, "f.fifo", &[("FifoTopic", "true")]).await;
    let standard = create_topic(&sns, "s", &[]).await;
    // No MessageGroupId on a FIFO topic.
    assert_sns_err!(
        sns.publish()
            .topic_arn(&fifo)
            .message("m")
            .message_deduplication_id("d")
            .send()
            .await,
        PublishError::InvalidParameterException(_),
        "InvalidParameter",
        400
    );
    // No deduplication id and no content-based deduplication.
    assert_sns_err!(
        sns.publish()
            .topic_arn(&fifo)
            .message("m")
            .message_group_id("g")
            .send()
            .await,
        PublishError::InvalidParameterException(_),
        "InvalidParameter",
        400
    );
    // A deduplication id on a standard topic.
    assert_sns_err!(
        sns.publish()
            .topic_arn(&standard)
            .message("m")
            .message_deduplication_id("d")
            .send()
            .await,
        PublishError::InvalidParameterException(_),
        "InvalidParameter",
        400
    );
    // FifoTopic=true needs a .fifo name and a .fifo name needs FifoTopic=true.
    for (name, attrs) in [
        ("plain", vec![("FifoTopic", "true")]),
        ("named.fifo", vec![]),
    ] {
        let mut req = sns.create_topic().name(name);
        for (k, v) in attrs {
            req = req.attributes(k, v);
        }
        assert_sns_err!(
            req.send().await,
            aws_sdk_sns::operation::create_topic::CreateTopicError::InvalidParameterException(_),
            "InvalidParameter",
            400
        );
    }
    // ContentBasedDeduplication is for FIFO topics only.
    assert_sns_err!(
        sns.create_topic()
            .name("cbd")
            .attributes("ContentBasedDeduplication", "true")
            .send()
            .await,
        aws_sdk_sns::operation::create_topic::CreateTopicError::InvalidParameterException(_),
        "InvalidParameter",
        400
    );
}

#[tokio::test]
async fn a_fifo_queue_cannot_subscribe_to_a_standard_topic() {
    // AWS: Subscribe fails with InvalidParameter "Invalid parameter: Endpoint Reason: FIFO
    // SQS Queues can not be subscribed to standard SNS topics".
    let server = Server::start();
    let (sns, sqs) = (server.sns(), server.sqs());
    let topic = create_topic(&sns, "standard", &[]).await;
    create_queue(&sqs, "q.fifo", &[("FifoQueue", "true")]).await;
    let message = assert_sns_err!(
        sns.subscribe()
            .topic_arn(&topic)
            .protocol("sqs")
            .endpoint(server.queue_arn("q.fifo"))
            .send()
            .await,
        SubscribeError::InvalidParameterException(_),
        "InvalidParameter",
        400
    );
    assert!(
        message.contains("FIFO SQS Queues can not be subscribed to standard SNS topics"),
        "{message}"
    );
}

#[tokio::test]
async fn fifo_topics_take_only_sqs_subscriptions() {
    // AWS: a FIFO topic's subscriptions are SQS queues; any other protocol fails with
    // InvalidParameter "Invalid parameter: Invalid protocol type: <protocol>".
    let server = Server::start();
    let sns = server.sns();
    let topic = create_topic(&sns, "f.fifo", &[("FifoTopic", "true")]).await;
    for (protocol, endpoint) in [
        ("http", "http://127.0.0.1:9/x"),
        ("email", "someone@example.com"),
        ("sms", "+15555550100"),
    ] {
        let message = assert_sns_err!(
            sns.subscribe()
                .topic_arn(&topic)
                .protocol(protocol)
                .endpoint(endpoint)
                .send()
                .await,
            SubscribeError::InvalidParameterException(_),
            "InvalidParameter",
            400
        );
        assert!(message.contains("Invalid protocol type"), "{message}");
    }
}
