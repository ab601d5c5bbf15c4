//! Fan-out to SQS: one publish, several queues with different filters (MessageAttributes
//! and MessageBody scope), raw and enveloped delivery, every envelope field.
//!
//! Sources: SNS Developer Guide "Fanout to Amazon SQS queues", "Parsing message formats"
//! (the Notification document), "Amazon SNS raw message delivery", "Amazon SNS message
//! filtering".

use std::collections::BTreeMap;

use aws_sdk_sqs::types::MessageAttributeValue as SqsAttr;
use serde_json::{json, Value};

use crate::harness::ACCOUNT;
use crate::sink::verify_envelope;
use crate::*;

/// The bodies of `msgs`, keyed by the MessageId of their envelope (or their raw body).
fn by_message_id(msgs: &[aws_sdk_sqs::types::Message]) -> BTreeMap<String, Value> {
    msgs.iter()
        .map(|m| {
            let v = json_of(m.body().expect("body"));
            (v["MessageId"].as_str().expect("MessageId").to_owned(), v)
        })
        .collect()
}

#[tokio::test]
async fn fan_out_to_filtered_raw_and_enveloped_queues() {
    let server = Server::start();
    let (sns, sqs) = (server.sns(), server.sqs());
    let topic = create_topic(&sns, "orders", &[]).await;
    let mut urls = BTreeMap::new();
    for q in ["all", "raw", "red", "big", "never", "eu"] {
        urls.insert(q, create_queue(&sqs, q, &[]).await);
    }
    let all_sub = subscribe_queue(&server, &topic, "all", &[]).await;
    subscribe_queue(&server, &topic, "raw", &[("RawMessageDelivery", "true")]).await;
    subscribe_queue(
        &server,
        &topic,
        "red",
        &[("FilterPolicy", r#"{"color":["red"]}"#)],
    )
    .await;
    subscribe_queue(
        &server,
        &topic,
        "big",
        &[
            ("FilterPolicy", r#"{"amount":[{"numeric":[">",100]}]}"#),
            ("FilterPolicyScope", "MessageBody"),
        ],
    )
    .await;
    subscribe_queue(
        &server,
        &topic,
        "never",
        &[("FilterPolicy", r#"{"color":["blue"]}"#)],
    )
    .await;
    subscribe_queue(
        &server,
        &topic,
        "eu",
        &[
            (
                "FilterPolicy",
                r#"{"store":[{"prefix":"eu-"}],"price":[{"numeric":["<",10]}]}"#,
            ),
            ("RawMessageDelivery", "true"),
        ],
    )
    .await;

    let body1 = r#"{"amount":150,"item":"lamp"}"#;
    let first = sns
        .publish()
        .topic_arn(&topic)
        .message(body1)
        .subject("Hello")
        .message_attributes("color", sns_string("red"))
        .message_attributes("price", sns_typed("Number", "9.5"))
        .message_attributes("store", sns_string("eu-west"))
        .message_attributes("blob", sns_binary(&[0, 1, 2, 255]))
        .message_attributes("tags", sns_typed("String.Array", r#"["a","b"]"#))
        .send()
        .await
        .expect("Publish 1");
    let id1 = first.message_id().expect("MessageId").to_owned();
    assert!(
        first.sequence_number().is_none(),
        "standard topics have no SequenceNumber"
    );
    let body2 = r#"{"amount":50}"#;
    let id2 = sns
        .publish()
        .topic_arn(&topic)
        .message(body2)
        .message_attributes("color", sns_string("green"))
        .send()
        .await
        .expect("Publish 2")
        .message_id()
        .expect("MessageId")
        .to_owned();
    let body3 = "plain text, not JSON";
    let id3 = sns
        .publish()
        .target_arn(&topic)
        .message(body3)
        .send()
        .await
        .expect("Publish 3 (TargetArn)")
        .message_id()
        .expect("MessageId")
        .to_owned();
    assert_eq!(
        [&id1, &id2, &id3]
            .iter()
            .collect::<std::collections::HashSet<_>>()
            .len(),
        3,
        "MessageIds are unique"
    );

    // The unfiltered, enveloped queue: all three, each envelope exactly as AWS sends it.
    let all = by_message_id(&receive_exactly(&sqs, &urls["all"], 3).await);
    let unsubscribe_url = format!(
        "{}/?Action=Unsubscribe&SubscriptionArn={all_sub}",
        server.url,
    );
    let env1 = &all[&id1];
    assert_eq!(
        keys(env1),
        sorted(&[
            "Type",
            "MessageId",
            "TopicArn",
            "Subject",
            "Message",
            "Timestamp",
            "SignatureVersion",
            "Signature",
            "SigningCertURL",
            "UnsubscribeURL",
            "MessageAttributes"
        ]),
        "{env1}"
    );
    assert_eq!(env1["Type"], "Notification");
    assert_eq!(env1["MessageId"], id1.as_str());
    assert_eq!(env1["TopicArn"], topic.as_str());
    assert_eq!(env1["Subject"], "Hello");
    assert_eq!(env1["Message"], body1);
    assert_timestamp(env1["Timestamp"].as_str().expect("Timestamp"));
    assert_eq!(env1["SignatureVersion"], "1");
    // AWS's form: SimpleNotificationService-{32 hex digits}.pem.
    let cert_url = env1["SigningCertURL"].as_str().expect("SigningCertURL");
    let file = cert_url
        .strip_prefix(&format!(
            "{}/_loft/sns/SimpleNotificationService-",
            server.url
        ))
        .and_then(|f| f.strip_suffix(".pem"))
        .unwrap_or_else(|| panic!("SigningCertURL {cert_url}"));
    assert!(
        file.len() == 32
            && file
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()),
        "{cert_url}"
    );
    assert_eq!(env1["UnsubscribeURL"], unsubscribe_url.as_str());
    assert_eq!(
        env1["MessageAttributes"],
        json!({
            "blob": {"Type": "Binary", "Value": "AAEC/w=="},
            "color": {"Type": "String", "Value": "red"},
            "price": {"Type": "Number", "Value": "9.5"},
            "store": {"Type": "String", "Value": "eu-west"},
            "tags": {"Type": "String.Array", "Value": "[\"a\",\"b\"]"},
        })
    );
    verify_envelope(env1).await;
    // Subject and MessageAttributes appear only when given.
    for (id, body) in [(&id2, body2), (&id3, body3)] {
        let env = &all[id];
        let mut expected = vec![
            "Type",
            "MessageId",
            "TopicArn",
            "Message",
            "Timestamp",
            "SignatureVersion",
            "Signature",
            "SigningCertURL",
            "UnsubscribeURL",
        ];
        if id == &id2 {
            expected.push("MessageAttributes");
        }
        assert_eq!(keys(env), sorted(&expected), "{env}");
        assert_eq!(env["Message"], body);
        assert_eq!(env["UnsubscribeURL"], unsubscribe_url.as_str());
        verify_envelope(env).await;
    }
    assert_eq!(
        all[&id2]["MessageAttributes"],
        json!({"color": {"Type": "String", "Value": "green"}})
    );

    // Raw delivery: the bare body, the attributes as typed SQS message attributes.
    let raw = receive_exactly(&sqs, &urls["raw"], 3).await;
    let raw_bodies: BTreeMap<&str, &aws_sdk_sqs::types::Message> =
        raw.iter().map(|m| (m.body().expect("body"), m)).collect();
    assert_eq!(raw_bodies.keys().copied().collect::<Vec<_>>(), {
        let mut v = vec![body1, body2, body3];
        v.sort();
        v
    });
    let m1 = raw_bodies[body1];
    let attrs = m1
        .message_attributes()
        .expect("raw delivery keeps the attributes");
    let expected: BTreeMap<&str, SqsAttr> = [
        ("color", sqs_string("String", "red")),
        ("price", sqs_string("Number", "9.5")),
        ("store", sqs_string("String", "eu-west")),
        ("tags", sqs_string("String.Array", r#"["a","b"]"#)),
        (
            "blob",
            SqsAttr::builder()
                .data_type("Binary")
                .binary_value(aws_sdk_sqs::primitives::Blob::new(vec![0, 1, 2, 255]))
                .build()
                .expect("attr"),
        ),
    ]
    .into_iter()
    .collect();
    assert_eq!(attrs.len(), expected.len(), "{attrs:?}");
    for (name, want) in &expected {
        assert_eq!(attrs.get(*name), Some(want), "attribute {name}");
    }
    assert!(
        m1.md5_of_message_attributes().is_some(),
        "raw delivery with attributes has MD5OfMessageAttributes"
    );
    let m3 = raw_bodies[body3];
    assert!(
        m3.message_attributes().is_none_or(|a| a.is_empty()),
        "no attributes published, none delivered: {m3:?}"
    );
    assert_eq!(
        m3.md5_of_body().expect("MD5OfBody"),
        format!("{:x}", md5::Md5::digest(body3.as_bytes())),
        "MD5OfBody of the raw body"
    );
    // The SQS message an SNS delivery makes carries SNS as its sender: a unique ID in
    // IAM's form (SQS API Reference, ReceiveMessage, SenderId: "ABCDEFGHI1JKLMNOPQ23R"),
    // `AIDA` and 17 upper-case letters and digits, not the topic's account id (before).
    let sender = m3
        .attributes()
        .and_then(|a| a.get(&aws_sdk_sqs::types::MessageSystemAttributeName::SenderId))
        .expect("SenderId");
    assert!(
        sender.len() == 21
            && sender.starts_with("AIDA")
            && sender
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit()),
        "SenderId {sender}"
    );

    // Filters: attribute scope, body scope, a filter nothing matches, two keys at once.
    let red = receive_exactly(&sqs, &urls["red"], 1).await;
    assert_eq!(
        json_of(red[0].body().expect("body"))["MessageId"],
        id1.as_str()
    );
    let big = receive_exactly(&sqs, &urls["big"], 1).await;
    assert_eq!(
        json_of(big[0].body().expect("body"))["MessageId"],
        id1.as_str()
    );
    receive_exactly(&sqs, &urls["never"], 0).await;
    let eu = receive_exactly(&sqs, &urls["eu"], 1).await;
    assert_eq!(eu[0].body(), Some(body1));

    // The topic counts its confirmed subscriptions.
    let attrs = topic_attributes(&sns, &topic).await;
    assert_eq!(attrs["SubscriptionsConfirmed"], "6");
    assert_eq!(attrs["SubscriptionsPending"], "0");
    assert_eq!(attrs["Owner"], ACCOUNT);
}

fn sqs_string(data_type: &str, value: &str) -> SqsAttr {
    SqsAttr::builder()
        .data_type(data_type)
        .string_value(value)
        .build()
        .expect("attr")
}

use md5::Digest as _;

#[tokio::test]
async fn unsubscribe_url_works_when_fetched() {
    let server = Server::start();
    let (sns, sqs) = (server.sns(), server.sqs());
    let topic = create_topic(&sns, "t", &[]).await;
    let url = create_queue(&sqs, "q", &[]).await;
    let sub = subscribe_queue(&server, &topic, "q", &[]).await;
    sns.publish()
        .topic_arn(&topic)
        .message("one")
        .send()
        .await
        .expect("Publish");
    let env = json_of(
        receive_exactly(&sqs, &url, 1).await[0]
            .body()
            .expect("body"),
    );
    let unsubscribe = env["UnsubscribeURL"].as_str().expect("UnsubscribeURL");
    let resp = reqwest::get(unsubscribe).await.expect("GET UnsubscribeURL");
    assert_eq!(resp.status(), 200);
    let text = resp.text().await.expect("body");
    assert!(
        text.contains("<UnsubscribeResponse xmlns=\"http://sns.amazonaws.com/doc/2010-03-31/\">"),
        "{text}"
    );
    assert_sns_err!(
        sns.get_subscription_attributes()
            .subscription_arn(&sub)
            .send()
            .await,
        aws_sdk_sns::operation::get_subscription_attributes::GetSubscriptionAttributesError::NotFoundException(_),
        "NotFound",
        404
    );
    sns.publish()
        .topic_arn(&topic)
        .message("two")
        .send()
        .await
        .expect("Publish");
    receive_exactly(&sqs, &url, 0).await;
}

#[tokio::test]
async fn message_structure_json_sends_the_sqs_text() {
    let server = Server::start();
    let (sns, sqs) = (server.sns(), server.sqs());
    let topic = create_topic(&sns, "t", &[]).await;
    let env_url = create_queue(&sqs, "env", &[]).await;
    let raw_url = create_queue(&sqs, "raw", &[]).await;
    subscribe_queue(&server, &topic, "env", &[]).await;
    subscribe_queue(&server, &topic, "raw", &[("RawMessageDelivery", "true")]).await;
    sns.publish()
        .topic_arn(&topic)
        .message_structure("json")
        .message(r#"{"default":"for everyone","sqs":"for queues","email":"for mail"}"#)
        .send()
        .await
        .expect("Publish");
    let env = json_of(
        receive_exactly(&sqs, &env_url, 1).await[0]
            .body()
            .expect("body"),
    );
    assert_eq!(env["Message"], "for queues");
    verify_envelope(&env).await;
    let raw = receive_exactly(&sqs, &raw_url, 1).await;
    assert_eq!(raw[0].body(), Some("for queues"));

    // Without an "sqs" key the default goes.
    sns.publish()
        .topic_arn(&topic)
        .message_structure("json")
        .message(r#"{"default":"for everyone"}"#)
        .send()
        .await
        .expect("Publish");
    let raw = receive_exactly(&sqs, &raw_url, 1).await;
    assert_eq!(raw[0].body(), Some("for everyone"));
}

#[tokio::test]
async fn publish_batch_fans_out_every_entry() {
    let server = Server::start();
    let (sns, sqs) = (server.sns(), server.sqs());
    let topic = create_topic(&sns, "batch", &[]).await;
    let url = create_queue(&sqs, "q", &[]).await;
    subscribe_queue(&server, &topic, "q", &[("RawMessageDelivery", "true")]).await;
    let entries: Vec<_> = (0..10)
        .map(|i| {
            aws_sdk_sns::types::PublishBatchRequestEntry::builder()
                .id(format!("e{i}"))
                .message(format!("m{i}"))
                .message_attributes("n", sns_typed("Number", &i.to_string()))
                .build()
                .expect("entry")
        })
        .collect();
    let out = sns
        .publish_batch()
        .topic_arn(&topic)
        .set_publish_batch_request_entries(Some(entries))
        .send()
        .await
        .expect("PublishBatch");
    assert!(out.failed().is_empty(), "{out:?}");
    let ids: Vec<&str> = out.successful().iter().filter_map(|s| s.id()).collect();
    assert_eq!(ids, (0..10).map(|i| format!("e{i}")).collect::<Vec<_>>());
    assert!(out.successful().iter().all(|s| s.message_id().is_some()));
    let msgs = receive_exactly(&sqs, &url, 10).await;
    let mut bodies: Vec<&str> = msgs.iter().filter_map(|m| m.body()).collect();
    bodies.sort();
    assert_eq!(bodies, (0..10).map(|i| format!("m{i}")).collect::<Vec<_>>());

    // An entry with an invalid message attribute refuses the whole batch, as AWS answers
    // (recorded PublishBatch: ParameterValueInvalid for the request); nothing is delivered.
    let entries = vec![
        aws_sdk_sns::types::PublishBatchRequestEntry::builder()
            .id("good")
            .message("fine")
            .build()
            .expect("entry"),
        aws_sdk_sns::types::PublishBatchRequestEntry::builder()
            .id("bad")
            .message("x")
            .message_attributes("n", sns_typed("Number", "not a number"))
            .build()
            .expect("entry"),
    ];
    let message = assert_sns_err!(
        sns.publish_batch()
            .topic_arn(&topic)
            .set_publish_batch_request_entries(Some(entries))
            .send()
            .await,
        aws_sdk_sns::operation::publish_batch::PublishBatchError::InvalidParameterValueException(_),
        "ParameterValueInvalid",
        400
    );
    assert_eq!(
        message,
        "The message attribute 'n' has an invalid message attribute value: not a number."
    );
    let empty = sqs
        .receive_message()
        .queue_url(&url)
        .wait_time_seconds(1)
        .send()
        .await
        .expect("ReceiveMessage");
    assert!(empty.messages().is_empty(), "{empty:?}");
}

#[tokio::test]
async fn nothing_reaches_a_deleted_topic_s_queues_and_a_deleted_queue_breaks_nothing() {
    let server = Server::start();
    let (sns, sqs) = (server.sns(), server.sqs());
    let topic = create_topic(&sns, "t", &[]).await;
    let keep = create_queue(&sqs, "keep", &[]).await;
    let gone = create_queue(&sqs, "gone", &[]).await;
    subscribe_queue(&server, &topic, "keep", &[("RawMessageDelivery", "true")]).await;
    subscribe_queue(&server, &topic, "gone", &[]).await;
    sqs.delete_queue()
        .queue_url(&gone)
        .send()
        .await
        .expect("DeleteQueue");
    // A subscription whose queue no longer exists does not fail the publish.
    sns.publish()
        .topic_arn(&topic)
        .message("still delivered")
        .send()
        .await
        .expect("Publish");
    let msgs = receive_exactly(&sqs, &keep, 1).await;
    assert_eq!(msgs[0].body(), Some("still delivered"));
    sns.delete_topic()
        .topic_arn(&topic)
        .send()
        .await
        .expect("DeleteTopic");
    let subs = sns
        .list_subscriptions()
        .send()
        .await
        .expect("ListSubscriptions");
    assert!(
        subs.subscriptions().is_empty(),
        "deleting a topic deletes its subscriptions: {subs:?}"
    );
}

#[tokio::test]
async fn more_than_ten_attributes_reach_enveloped_subscriptions_only() {
    // SNS Developer Guide, "Amazon SNS message attributes": a raw-delivery SQS subscription
    // takes at most 10 message attributes and a message with more is discarded for it;
    // enveloped subscriptions take more. Publish itself accepts them.
    let server = Server::start();
    let (sns, sqs) = (server.sns(), server.sqs());
    let topic = create_topic(&sns, "many", &[]).await;
    let env_url = create_queue(&sqs, "env", &[]).await;
    let raw_url = create_queue(&sqs, "raw", &[]).await;
    subscribe_queue(&server, &topic, "env", &[]).await;
    subscribe_queue(&server, &topic, "raw", &[("RawMessageDelivery", "true")]).await;
    let mut req = sns.publish().topic_arn(&topic).message("twelve attributes");
    for i in 0..12 {
        req = req.message_attributes(format!("a{i:02}"), sns_string(&i.to_string()));
    }
    req.send().await.expect("Publish with 12 attributes");
    let env = json_of(
        receive_exactly(&sqs, &env_url, 1).await[0]
            .body()
            .expect("body"),
    );
    assert_eq!(
        env["MessageAttributes"].as_object().map(|m| m.len()),
        Some(12),
        "{env}"
    );
    receive_exactly(&sqs, &raw_url, 0).await;
    // Ten still go through raw.
    let mut req = sns.publish().topic_arn(&topic).message("ten attributes");
    for i in 0..10 {
        req = req.message_attributes(format!("a{i:02}"), sns_string(&i.to_string()));
    }
    req.send().await.expect("Publish with 10 attributes");
    let raw = receive_exactly(&sqs, &raw_url, 1).await;
    assert_eq!(raw[0].message_attributes().map(|a| a.len()), Some(10));
    receive_exactly(&sqs, &env_url, 1).await;
}

#[tokio::test]
async fn message_structure_json_delivers_no_attributes_but_filters_on_them() {
    // SNS Developer Guide, "Amazon SNS message attributes": "Message attributes are sent
    // only when the message structure is String, not JSON."
    let server = Server::start();
    let (sns, sqs) = (server.sns(), server.sqs());
    let topic = create_topic(&sns, "structured", &[]).await;
    let env_url = create_queue(&sqs, "env", &[]).await;
    let raw_url = create_queue(&sqs, "raw", &[]).await;
    subscribe_queue(
        &server,
        &topic,
        "env",
        &[("FilterPolicy", r#"{"kind":["wanted"]}"#)],
    )
    .await;
    subscribe_queue(&server, &topic, "raw", &[("RawMessageDelivery", "true")]).await;
    for kind in ["wanted", "unwanted"] {
        sns.publish()
            .topic_arn(&topic)
            .message_structure("json")
            .message(r#"{"default":"d","sqs":"s"}"#)
            .message_attributes("kind", sns_string(kind))
            .send()
            .await
            .expect("Publish");
    }
    let env = json_of(
        receive_exactly(&sqs, &env_url, 1).await[0]
            .body()
            .expect("body"),
    );
    assert_eq!(env["Message"], "s");
    assert!(env.get("MessageAttributes").is_none(), "{env}");
    for m in receive_exactly(&sqs, &raw_url, 2).await {
        assert_eq!(m.body(), Some("s"));
        assert!(m.message_attributes().is_none_or(|a| a.is_empty()), "{m:?}");
    }
}

#[tokio::test]
async fn a_nested_body_policy_and_its_scope_in_one_subscribe() {
    // Subscribe with FilterPolicy and FilterPolicyScope=MessageBody together (as the CDK and
    // CloudFormation do): the policy is read in the body scope, where it may nest.
    let server = Server::start();
    let (sns, sqs) = (server.sns(), server.sqs());
    let topic = create_topic(&sns, "nested", &[]).await;
    let url = create_queue(&sqs, "big-orders", &[]).await;
    let sub = subscribe_queue(
        &server,
        &topic,
        "big-orders",
        &[
            (
                "FilterPolicy",
                r#"{"order":{"amount":[{"numeric":[">=",100]}],"status":["new"]}}"#,
            ),
            ("FilterPolicyScope", "MessageBody"),
            ("RawMessageDelivery", "true"),
        ],
    )
    .await;
    for body in [
        r#"{"order":{"amount":150,"status":"new"}}"#,
        r#"{"order":{"amount":150,"status":"old"}}"#,
        r#"{"order":{"amount":5,"status":"new"}}"#,
        r#"{"amount":150,"status":"new"}"#,
    ] {
        sns.publish()
            .topic_arn(&topic)
            .message(body)
            .send()
            .await
            .expect("Publish");
    }
    let got = receive_exactly(&sqs, &url, 1).await;
    assert_eq!(
        got[0].body(),
        Some(r#"{"order":{"amount":150,"status":"new"}}"#)
    );
    // A nested policy stays invalid in the attributes scope.
    assert_sns_err!(
        sns.set_subscription_attributes()
            .subscription_arn(&sub)
            .attribute_name("FilterPolicyScope")
            .attribute_value("MessageAttributes")
            .send()
            .await,
        aws_sdk_sns::operation::set_subscription_attributes::SetSubscriptionAttributesError::InvalidParameterException(_),
        "InvalidParameter",
        400
    );
}
