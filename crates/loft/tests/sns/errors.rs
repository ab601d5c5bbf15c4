//! The errors users provoke, each with the code, HTTP status and SDK error variant of the
//! botocore model `sns/2010-03-31`: NotFound (404), InvalidParameter (400),
//! ParameterValueInvalid (400), ResourceNotFound (404), TagLimitExceeded (400), the batch
//! errors (400), InvalidAction (400).

use aws_sdk_sns::operation::confirm_subscription::ConfirmSubscriptionError;
use aws_sdk_sns::operation::create_topic::CreateTopicError;
use aws_sdk_sns::operation::get_subscription_attributes::GetSubscriptionAttributesError;
use aws_sdk_sns::operation::get_topic_attributes::GetTopicAttributesError;
use aws_sdk_sns::operation::list_subscriptions_by_topic::ListSubscriptionsByTopicError;
use aws_sdk_sns::operation::list_tags_for_resource::ListTagsForResourceError;
use aws_sdk_sns::operation::publish::PublishError;
use aws_sdk_sns::operation::publish_batch::PublishBatchError;
use aws_sdk_sns::operation::set_subscription_attributes::SetSubscriptionAttributesError;
use aws_sdk_sns::operation::set_topic_attributes::SetTopicAttributesError;
use aws_sdk_sns::operation::subscribe::SubscribeError;
use aws_sdk_sns::operation::tag_resource::TagResourceError;
use aws_sdk_sns::operation::untag_resource::UntagResourceError;
use aws_sdk_sns::types::{PublishBatchRequestEntry, Tag};

use crate::*;

fn entry(id: &str, message: &str) -> PublishBatchRequestEntry {
    PublishBatchRequestEntry::builder()
        .id(id)
        .message(message)
        .build()
        .expect("entry")
}

#[tokio::test]
async fn missing_topics_and_subscriptions_are_not_found() {
    let server = Server::start();
    let sns = server.sns();
    let missing = server.topic_arn("missing");
    let msg = assert_sns_err!(
        sns.get_topic_attributes().topic_arn(&missing).send().await,
        GetTopicAttributesError::NotFoundException(_),
        "NotFound",
        404
    );
    assert_eq!(msg, "Topic does not exist");
    assert_sns_err!(
        sns.publish().topic_arn(&missing).message("m").send().await,
        PublishError::NotFoundException(_),
        "NotFound",
        404
    );
    assert_sns_err!(
        sns.publish_batch()
            .topic_arn(&missing)
            .publish_batch_request_entries(entry("a", "m"))
            .send()
            .await,
        PublishBatchError::NotFoundException(_),
        "NotFound",
        404
    );
    assert_sns_err!(
        sns.subscribe()
            .topic_arn(&missing)
            .protocol("sqs")
            .endpoint(server.queue_arn("q"))
            .send()
            .await,
        SubscribeError::NotFoundException(_),
        "NotFound",
        404
    );
    assert_sns_err!(
        sns.set_topic_attributes()
            .topic_arn(&missing)
            .attribute_name("DisplayName")
            .attribute_value("x")
            .send()
            .await,
        SetTopicAttributesError::NotFoundException(_),
        "NotFound",
        404
    );
    assert_sns_err!(
        sns.list_subscriptions_by_topic()
            .topic_arn(&missing)
            .send()
            .await,
        ListSubscriptionsByTopicError::NotFoundException(_),
        "NotFound",
        404
    );
    let missing_sub = format!("{missing}:3f6f3e2a-8a53-4c7b-9e0e-0e8d3c1b2a10");
    assert_sns_err!(
        sns.get_subscription_attributes()
            .subscription_arn(&missing_sub)
            .send()
            .await,
        GetSubscriptionAttributesError::NotFoundException(_),
        "NotFound",
        404
    );
    assert_sns_err!(
        sns.set_subscription_attributes()
            .subscription_arn(&missing_sub)
            .attribute_name("RawMessageDelivery")
            .attribute_value("true")
            .send()
            .await,
        SetSubscriptionAttributesError::NotFoundException(_),
        "NotFound",
        404
    );
    // Deleting what is not there succeeds (both calls are idempotent).
    sns.delete_topic()
        .topic_arn(&missing)
        .send()
        .await
        .expect("DeleteTopic of a missing topic");
    sns.unsubscribe()
        .subscription_arn(&missing_sub)
        .send()
        .await
        .expect("Unsubscribe of a missing subscription");
}

#[tokio::test]
async fn malformed_arns_are_invalid_parameters() {
    let server = Server::start();
    let sns = server.sns();
    for arn in ["not-an-arn", "arn:aws:sqs:us-east-1:000000000000:queue"] {
        assert_sns_err!(
            sns.get_topic_attributes().topic_arn(arn).send().await,
            GetTopicAttributesError::InvalidParameterException(_),
            "InvalidParameter",
            400
        );
        assert_sns_err!(
            sns.publish().topic_arn(arn).message("m").send().await,
            PublishError::InvalidParameterException(_),
            "InvalidParameter",
            400
        );
    }
    assert_sns_err!(
        sns.get_subscription_attributes()
            .subscription_arn("nope")
            .send()
            .await,
        GetSubscriptionAttributesError::InvalidParameterException(_),
        "InvalidParameter",
        400
    );
    // Publish needs a TopicArn, TargetArn or PhoneNumber.
    assert_sns_err!(
        sns.publish().message("m").send().await,
        PublishError::InvalidParameterException(_),
        "InvalidParameter",
        400
    );
}

#[tokio::test]
async fn bad_topic_names_and_attributes() {
    let server = Server::start();
    let sns = server.sns();
    let long = "a".repeat(257);
    for name in [
        "",
        "has space",
        "dot.ted",
        "slash/y",
        "ünïcode",
        long.as_str(),
        ".fifo",
    ] {
        assert_sns_err!(
            sns.create_topic().name(name).send().await,
            CreateTopicError::InvalidParameterException(_),
            "InvalidParameter",
            400
        );
    }
    // The longest name is fine.
    create_topic(&sns, &"a".repeat(256), &[]).await;
    for (k, v) in [
        ("NoSuchAttribute", "x"),
        ("DeliveryPolicy", "{not json"),
        (
            "DeliveryPolicy",
            r#"{"http":{"defaultHealthyRetryPolicy":{"numRetries":101}}}"#,
        ),
        ("SignatureVersion", "3"),
        ("TracingConfig", "Sometimes"),
        ("Policy", "not json"),
    ] {
        assert_sns_err!(
            sns.create_topic().name("t").attributes(k, v).send().await,
            CreateTopicError::InvalidParameterException(_),
            "InvalidParameter",
            400
        );
    }
    // CreateTopic is idempotent for the same attributes; other attributes are an error.
    let arn = create_topic(&sns, "t", &[("DisplayName", "one")]).await;
    assert_eq!(
        create_topic(&sns, "t", &[("DisplayName", "one")]).await,
        arn
    );
    assert_sns_err!(
        sns.create_topic()
            .name("t")
            .attributes("DisplayName", "two")
            .send()
            .await,
        CreateTopicError::InvalidParameterException(_),
        "InvalidParameter",
        400
    );
    // FifoTopic cannot be changed after creation.
    assert_sns_err!(
        sns.set_topic_attributes()
            .topic_arn(&arn)
            .attribute_name("FifoTopic")
            .attribute_value("true")
            .send()
            .await,
        SetTopicAttributesError::InvalidParameterException(_),
        "InvalidParameter",
        400
    );
}

#[tokio::test]
async fn bad_messages() {
    let server = Server::start();
    let sns = server.sns();
    let topic = create_topic(&sns, "t", &[]).await;
    let msg = assert_sns_err!(
        sns.publish().topic_arn(&topic).message("").send().await,
        PublishError::InvalidParameterException(_),
        "InvalidParameter",
        400
    );
    assert_eq!(msg, "Invalid parameter: Empty message");
    assert_sns_err!(
        sns.publish()
            .topic_arn(&topic)
            .message("x".repeat(262_145))
            .send()
            .await,
        PublishError::InvalidParameterException(_),
        "InvalidParameter",
        400
    );
    // 256 KiB exactly is the limit, and fine.
    sns.publish()
        .topic_arn(&topic)
        .message("x".repeat(262_144))
        .send()
        .await
        .expect("a 256 KiB message");
    for subject in ["", "line\nbreak", &"s".repeat(101)] {
        assert_sns_err!(
            sns.publish()
                .topic_arn(&topic)
                .message("m")
                .subject(subject)
                .send()
                .await,
            PublishError::InvalidParameterException(_),
            "InvalidParameter",
            400
        );
    }
    for (structure, message) in [
        ("json", "not json"),
        ("json", r#"{"sqs":"no default"}"#),
        ("xml", r#"{"default":"d"}"#),
    ] {
        assert_sns_err!(
            sns.publish()
                .topic_arn(&topic)
                .message(message)
                .message_structure(structure)
                .send()
                .await,
            PublishError::InvalidParameterException(_),
            "InvalidParameter",
            400
        );
    }
    // Message attributes: the SDK's InvalidParameterValueException, code ParameterValueInvalid.
    for (data_type, value) in [
        ("Number", "twelve"),
        ("Number", ""),
        ("String", ""),
        ("Sometype", "x"),
        ("String.Array", "not an array"),
    ] {
        assert_sns_err!(
            sns.publish()
                .topic_arn(&topic)
                .message("m")
                .message_attributes("a", sns_typed(data_type, value))
                .send()
                .await,
            PublishError::InvalidParameterValueException(_),
            "ParameterValueInvalid",
            400
        );
    }
    // Attribute names: SNS Developer Guide, "Amazon SNS message attributes".
    let long = "n".repeat(257);
    for name in [
        "AWS.x",
        "amazon.y",
        ".dot",
        "dot.",
        "a..b",
        "sp ace",
        long.as_str(),
    ] {
        assert_sns_err!(
            sns.publish()
                .topic_arn(&topic)
                .message("m")
                .message_attributes(name, sns_string("v"))
                .send()
                .await,
            PublishError::InvalidParameterValueException(_),
            "ParameterValueInvalid",
            400
        );
    }
    sns.publish()
        .topic_arn(&topic)
        .message("m")
        .message_attributes("fine.name-with_all-3", sns_string("v"))
        .message_attributes("n".repeat(256), sns_string("v"))
        .send()
        .await
        .expect("valid attribute names");
}

#[tokio::test]
async fn bad_subscriptions() {
    let server = Server::start();
    let sns = server.sns();
    let topic = create_topic(&sns, "t", &[]).await;
    for (protocol, endpoint) in [
        ("carrier-pigeon", "coop"),
        ("sqs", "not-an-arn"),
        ("sqs", "arn:aws:sns:us-east-1:000000000000:t"),
        ("http", "https://wrong-scheme.example"),
        ("https", "ftp://example.com"),
        ("email", "no-at-sign"),
    ] {
        assert_sns_err!(
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
    }
    for (k, v) in [
        ("NoSuchAttribute", "x"),
        ("FilterPolicy", "{not json"),
        ("FilterPolicy", r#"{"a":"not a list"}"#),
        ("FilterPolicyScope", "Elsewhere"),
        ("RawMessageDelivery", "maybe"),
        (
            "DeliveryPolicy",
            r#"{"healthyRetryPolicy":{"numRetries":1}}"#,
        ),
        ("RedrivePolicy", r#"{"deadLetterTargetArn":"not-an-arn"}"#),
    ] {
        assert_sns_err!(
            sns.subscribe()
                .topic_arn(&topic)
                .protocol("sqs")
                .endpoint(server.queue_arn("q"))
                .attributes(k, v)
                .send()
                .await,
            SubscribeError::InvalidParameterException(_),
            "InvalidParameter",
            400
        );
    }
    // Raw delivery is for SQS, HTTP/S and Firehose only.
    assert_sns_err!(
        sns.subscribe()
            .topic_arn(&topic)
            .protocol("email")
            .endpoint("someone@example.com")
            .attributes("RawMessageDelivery", "true")
            .send()
            .await,
        SubscribeError::InvalidParameterException(_),
        "InvalidParameter",
        400
    );
    // Subscribing again with other attributes is an error; with the same, the same ARN.
    let arn = subscribe_queue(&server, &topic, "q", &[("RawMessageDelivery", "true")]).await;
    assert_eq!(
        subscribe_queue(&server, &topic, "q", &[("RawMessageDelivery", "true")]).await,
        arn
    );
    assert_sns_err!(
        sns.subscribe()
            .topic_arn(&topic)
            .protocol("sqs")
            .endpoint(server.queue_arn("q"))
            .attributes("RawMessageDelivery", "false")
            .send()
            .await,
        SubscribeError::InvalidParameterException(_),
        "InvalidParameter",
        400
    );
    for (k, v) in [
        ("NoSuchAttribute", "x"),
        ("FilterPolicy", "[1,2]"),
        ("DeliveryPolicy", "{}"),
    ] {
        assert_sns_err!(
            sns.set_subscription_attributes()
                .subscription_arn(&arn)
                .attribute_name(k)
                .attribute_value(v)
                .send()
                .await,
            SetSubscriptionAttributesError::InvalidParameterException(_),
            "InvalidParameter",
            400
        );
    }
    assert_sns_err!(
        sns.confirm_subscription()
            .topic_arn(&topic)
            .token("no-such-token")
            .send()
            .await,
        ConfirmSubscriptionError::InvalidParameterException(_),
        "InvalidParameter",
        400
    );
}

#[tokio::test]
async fn publish_batch_request_errors() {
    let server = Server::start();
    let sns = server.sns();
    let topic = create_topic(&sns, "t", &[]).await;
    let eleven: Vec<_> = (0..11).map(|i| entry(&format!("e{i}"), "m")).collect();
    assert_sns_err!(
        sns.publish_batch()
            .topic_arn(&topic)
            .set_publish_batch_request_entries(Some(eleven))
            .send()
            .await,
        PublishBatchError::TooManyEntriesInBatchRequestException(_),
        "TooManyEntriesInBatchRequest",
        400
    );
    assert_sns_err!(
        sns.publish_batch()
            .topic_arn(&topic)
            .publish_batch_request_entries(entry("same", "a"))
            .publish_batch_request_entries(entry("same", "b"))
            .send()
            .await,
        PublishBatchError::BatchEntryIdsNotDistinctException(_),
        "BatchEntryIdsNotDistinct",
        400
    );
    assert_sns_err!(
        sns.publish_batch()
            .topic_arn(&topic)
            .publish_batch_request_entries(entry("not valid!", "a"))
            .send()
            .await,
        PublishBatchError::InvalidBatchEntryIdException(_),
        "InvalidBatchEntryId",
        400
    );
    let big = "x".repeat(200_000);
    assert_sns_err!(
        sns.publish_batch()
            .topic_arn(&topic)
            .publish_batch_request_entries(entry("a", &big))
            .publish_batch_request_entries(entry("b", &big))
            .send()
            .await,
        PublishBatchError::BatchRequestTooLongException(_),
        "BatchRequestTooLong",
        400
    );
    // Bodies that fit, with attributes that push the batch over 256 KiB, as AWS counts
    // them (names, data types and values).
    let number = aws_sdk_sns::types::MessageAttributeValue::builder()
        .data_type("Number")
        .string_value("1")
        .build()
        .expect("attribute");
    let fits = PublishBatchRequestEntry::builder()
        .id("a")
        .message("x".repeat(262_144 - "attr1Number1".len()))
        .message_attributes("attr1", number)
        .build()
        .expect("entry");
    assert_sns_err!(
        sns.publish_batch()
            .topic_arn(&topic)
            .publish_batch_request_entries(fits)
            .publish_batch_request_entries(entry("b", "b"))
            .send()
            .await,
        PublishBatchError::BatchRequestTooLongException(_),
        "BatchRequestTooLong",
        400
    );
    assert_sns_err!(
        sns.publish_batch()
            .topic_arn(&topic)
            .set_publish_batch_request_entries(Some(Vec::new()))
            .send()
            .await,
        PublishBatchError::EmptyBatchRequestException(_),
        "EmptyBatchRequest",
        400
    );
}

#[tokio::test]
async fn tags_of_a_missing_topic_are_resource_not_found() {
    // botocore: TagResource, UntagResource and ListTagsForResource model
    // ResourceNotFoundException (code ResourceNotFound, 404), not NotFoundException.
    let server = Server::start();
    let sns = server.sns();
    let missing = server.topic_arn("missing");
    assert_sns_err!(
        sns.tag_resource()
            .resource_arn(&missing)
            .tags(Tag::builder().key("k").value("v").build().expect("tag"))
            .send()
            .await,
        TagResourceError::ResourceNotFoundException(_),
        "ResourceNotFound",
        404
    );
    assert_sns_err!(
        sns.untag_resource()
            .resource_arn(&missing)
            .tag_keys("k")
            .send()
            .await,
        UntagResourceError::ResourceNotFoundException(_),
        "ResourceNotFound",
        404
    );
    assert_sns_err!(
        sns.list_tags_for_resource()
            .resource_arn(&missing)
            .send()
            .await,
        ListTagsForResourceError::ResourceNotFoundException(_),
        "ResourceNotFound",
        404
    );
}

#[tokio::test]
async fn more_than_fifty_tags_is_tag_limit_exceeded() {
    // botocore: TagLimitExceededException (code TagLimitExceeded, 400); SNS allows 50 tags.
    let server = Server::start();
    let sns = server.sns();
    let topic = create_topic(&sns, "t", &[]).await;
    let tags: Vec<Tag> = (0..50)
        .map(|i| {
            Tag::builder()
                .key(format!("k{i}"))
                .value("v")
                .build()
                .expect("tag")
        })
        .collect();
    sns.tag_resource()
        .resource_arn(&topic)
        .set_tags(Some(tags))
        .send()
        .await
        .expect("50 tags");
    assert_sns_err!(
        sns.tag_resource()
            .resource_arn(&topic)
            .tags(
                Tag::builder()
                    .key("one-more")
                    .value("v")
                    .build()
                    .expect("tag")
            )
            .send()
            .await,
        TagResourceError::TagLimitExceededException(_),
        "TagLimitExceeded",
        400
    );
}

#[tokio::test]
async fn query_errors_on_the_wire() {
    let server = Server::start();
    let http = reqwest::Client::new();
    let send = |form: &'static [(&'static str, &'static str)]| {
        let http = http.clone();
        let url = format!("{}/", server.url);
        async move {
            let resp = http.post(url).form(form).send().await.expect("POST");
            let status = resp.status().as_u16();
            let ct = resp
                .headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_owned();
            (status, ct, resp.text().await.expect("body"))
        }
    };
    let (status, ct, body) = send(&[
        ("Action", "GetTopicAttributes"),
        ("Version", "2010-03-31"),
        ("TopicArn", "arn:aws:sns:us-east-1:000000000000:missing"),
    ])
    .await;
    assert_eq!(status, 404);
    assert_eq!(ct, "text/xml");
    assert!(
        body.starts_with("<?xml version=\"1.0\"?><ErrorResponse xmlns=\"http://sns.amazonaws.com/doc/2010-03-31/\"><Error><Type>Sender</Type><Code>NotFound</Code><Message>Topic does not exist</Message>"),
        "{body}"
    );
    assert!(body.contains("<RequestId>"), "{body}");
    let (status, _, body) = send(&[("Action", "NoSuchAction"), ("Version", "2010-03-31")]).await;
    assert_eq!(status, 400);
    assert!(body.contains("<Code>InvalidAction</Code>"), "{body}");
    // A successful response: the Result element in SNS's namespace.
    let (status, _, body) = send(&[
        ("Action", "CreateTopic"),
        ("Version", "2010-03-31"),
        ("Name", "wire"),
    ])
    .await;
    assert_eq!(status, 200);
    assert!(
        body.contains("<CreateTopicResponse xmlns=\"http://sns.amazonaws.com/doc/2010-03-31/\"><CreateTopicResult><TopicArn>arn:aws:sns:us-east-1:000000000000:wire</TopicArn></CreateTopicResult><ResponseMetadata><RequestId>"),
        "{body}"
    );
}

#[tokio::test]
async fn a_delivery_policy_over_an_hour_of_retries_is_invalid() {
    // SNS Developer Guide, "Amazon SNS message delivery retries": "The total policy retry
    // time for an HTTP/S endpoint cannot be greater than 3,600 seconds"; AWS answers
    // InvalidParameter "DeliveryPolicy: http.defaultHealthyRetryPolicy: Total policy retry
    // time cannot be greater than 3600 seconds".
    let server = Server::start();
    let sns = server.sns();
    let topic = create_topic(&sns, "t", &[]).await;
    assert_sns_err!(
        sns.set_topic_attributes()
            .topic_arn(&topic)
            .attribute_name("DeliveryPolicy")
            .attribute_value(
                r#"{"http":{"defaultHealthyRetryPolicy":{"minDelayTarget":3599,"maxDelayTarget":3600,"numRetries":10}}}"#,
            )
            .send()
            .await,
        SetTopicAttributesError::InvalidParameterException(_),
        "InvalidParameter",
        400
    );
}

/// No SNS answer (XML) carries a character XML 1.0 cannot, and no raw copy brings one into
/// a queue: a DisplayName and a tag holding U+0001 are refused (InvalidParameter, 400),
/// so GetTopicAttributes and ListTagsForResource stay readable; a message published with
/// U+0001 reaches a raw SQS subscriber's queue no more than SendMessage would take it
/// (`InvalidMessageContents`) while the envelope subscriber, whose JSON escapes it, gets
/// it; the next message reaches both.
#[tokio::test]
async fn characters_xml_cannot_carry_reach_no_answer_and_no_raw_queue() {
    let server = Server::start();
    let (sns, sqs) = (server.sns(), server.sqs());
    let err = sns
        .create_topic()
        .name("ctl-name")
        .attributes("DisplayName", "a\u{1}b")
        .send()
        .await
        .expect_err("a DisplayName with U+0001");
    assert_eq!(
        harness::sdk_error(&err),
        ("InvalidParameter".to_owned(), 400)
    );
    let topic = create_topic(&sns, "ctl", &[]).await;
    let err = sns
        .tag_resource()
        .resource_arn(&topic)
        .tags(Tag::builder().key("k\u{1}").value("v").build().unwrap())
        .send()
        .await
        .expect_err("a tag key with U+0001");
    assert_eq!(
        harness::sdk_error(&err),
        ("InvalidParameter".to_owned(), 400)
    );
    sns.get_topic_attributes()
        .topic_arn(&topic)
        .send()
        .await
        .expect("GetTopicAttributes parses");
    sns.list_tags_for_resource()
        .resource_arn(&topic)
        .send()
        .await
        .expect("ListTagsForResource parses");

    let raw = create_queue(&sqs, "ctl-raw", &[]).await;
    let wrapped = create_queue(&sqs, "ctl-envelope", &[]).await;
    subscribe_queue(
        &server,
        &topic,
        "ctl-raw",
        &[("RawMessageDelivery", "true")],
    )
    .await;
    subscribe_queue(&server, &topic, "ctl-envelope", &[]).await;
    for text in ["a\u{1}b", "fine"] {
        sns.publish()
            .topic_arn(&topic)
            .message(text)
            .send()
            .await
            .expect("Publish");
    }
    let got = receive_exactly(&sqs, &raw, 1).await;
    assert_eq!(got[0].body(), Some("fine"));
    let got = receive_exactly(&sqs, &wrapped, 2).await;
    let texts: Vec<String> = got
        .iter()
        .map(|m| {
            json_of(m.body().unwrap())["Message"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(texts, ["a\u{1}b", "fine"]);
}

/// Publish's MessageGroupId and MessageDeduplicationId take what SQS takes: 1 to 128
/// alphanumeric and punctuation characters (SNS API Reference, Publish). A second tryout
/// published `g\x01g` and a 300-character group id to a FIFO topic, and a subscribed
/// queue stored them.
#[tokio::test]
async fn fifo_ids_outside_sqss_characters_and_length_are_refused() {
    let server = Server::start();
    let sns = server.sns();
    let topic = create_topic(
        &sns,
        "ids.fifo",
        &[("FifoTopic", "true"), ("ContentBasedDeduplication", "true")],
    )
    .await;
    let long = "a".repeat(129);
    for (group, dedup) in [
        ("g\u{1}g", None),
        ("g g", None),
        (long.as_str(), None),
        ("g", Some("d\u{7}")),
        ("g", Some("é")),
        ("g", Some(long.as_str())),
    ] {
        let err = sns
            .publish()
            .topic_arn(&topic)
            .message("m")
            .message_group_id(group)
            .set_message_deduplication_id(dedup.map(str::to_owned))
            .send()
            .await
            .expect_err("refused");
        assert_eq!(
            harness::sdk_error(&err),
            ("InvalidParameter".to_owned(), 400),
            "{group:?} {dedup:?}"
        );
    }
    sns.publish()
        .topic_arn(&topic)
        .message("m")
        .message_group_id("a-Z_0.9!~")
        .message_deduplication_id("b".repeat(128))
        .send()
        .await
        .expect("1 to 128 punctuation and alphanumerics");
}
