//! SNS answers as AWS recorded them (the LocalStack suite's `aws.validated` snapshots and
//! the SNS API Reference): ARN checks, SMS numbers, subscription and topic idempotency,
//! SubscriptionPrincipal, AddPermission's statement shape, dead-lettering to a
//! subscription's DLQ when its queue is gone, FIFO redrive rules, X-Ray trace headers, SMS
//! settings, platform application errors.

use aws_sdk_sns::operation::add_permission::AddPermissionError;
use aws_sdk_sns::operation::create_platform_application::CreatePlatformApplicationError;
use aws_sdk_sns::operation::create_topic::CreateTopicError;
use aws_sdk_sns::operation::get_endpoint_attributes::GetEndpointAttributesError;
use aws_sdk_sns::operation::get_platform_application_attributes::GetPlatformApplicationAttributesError;
use aws_sdk_sns::operation::opt_in_phone_number::OptInPhoneNumberError;
use aws_sdk_sns::operation::publish::PublishError;
use aws_sdk_sns::operation::set_platform_application_attributes::SetPlatformApplicationAttributesError;
use aws_sdk_sns::operation::set_sms_attributes::SetSMSAttributesError;
use aws_sdk_sns::operation::set_subscription_attributes::SetSubscriptionAttributesError;
use aws_sdk_sns::operation::subscribe::SubscribeError;
use aws_sdk_sns::operation::tag_resource::TagResourceError;
use aws_sdk_sns::operation::unsubscribe::UnsubscribeError;
use aws_sdk_sns::types::Tag;
use serde_json::json;

use crate::*;

fn tag(k: &str, v: &str) -> Tag {
    Tag::builder().key(k).value(v).build().expect("tag")
}

#[tokio::test]
async fn malformed_arns_are_counted_in_elements() {
    let server = Server::start();
    let sns = server.sns();
    for (arn, n) in [("randomstring", 1), ("randomstring:1", 2), ("", 1)] {
        let msg = assert_sns_err!(
            sns.publish().topic_arn(arn).message("m").send().await,
            PublishError::InvalidParameterException(_),
            "InvalidParameter",
            400
        );
        assert_eq!(
            msg,
            format!(
                "Invalid parameter: TopicArn Reason: An ARN must have at least 6 elements, not {n}"
            )
        );
    }
    let msg = assert_sns_err!(
        sns.subscribe()
            .topic_arn("arn:aws:sns:us-east-1:random")
            .protocol("email")
            .endpoint("a@example.com")
            .send()
            .await,
        SubscribeError::InvalidParameterException(_),
        "InvalidParameter",
        400
    );
    assert_eq!(
        msg,
        "Invalid parameter: TopicArn Reason: An ARN must have at least 6 elements, not 5"
    );
    let msg = assert_sns_err!(
        sns.unsubscribe()
            .subscription_arn("randomstring")
            .send()
            .await,
        UnsubscribeError::InvalidParameterException(_),
        "InvalidParameter",
        400
    );
    assert_eq!(
        msg,
        "Invalid parameter: SubscriptionArn Reason: An ARN must have at least 6 elements, not 1"
    );
    // Six elements name a topic, not a subscription.
    let msg = assert_sns_err!(
        sns.unsubscribe()
            .subscription_arn("arn:aws:sns:us-east-1:000000000000:random")
            .send()
            .await,
        UnsubscribeError::InvalidParameterException(_),
        "InvalidParameter",
        400
    );
    assert_eq!(msg, "Invalid parameter: SubscriptionId");
    // A TargetArn naming a push endpoint that does not exist.
    let msg = assert_sns_err!(
        sns.publish()
            .target_arn(format!(
                "arn:aws:sns:us-east-1:{}:endpoint/APNS/app/0f7d5971-aa8b-4bd5-b585-0826e9f93a66",
                harness::ACCOUNT
            ))
            .message("m")
            .send()
            .await,
        PublishError::InvalidParameterException(_),
        "InvalidParameter",
        400
    );
    assert_eq!(
        msg,
        "Invalid parameter: TargetArn Reason: No endpoint found for the target arn specified"
    );
}

#[tokio::test]
async fn phone_numbers_are_checked() {
    let server = Server::start();
    let sns = server.sns();
    let topic = create_topic(&sns, "sms", &[]).await;
    for bad in [
        "+15--551234567",
        "NAA+15551234567",
        "+15551234567.",
        "/+15551234567",
    ] {
        let msg = assert_sns_err!(
            sns.subscribe()
                .topic_arn(&topic)
                .protocol("sms")
                .endpoint(bad)
                .send()
                .await,
            SubscribeError::InvalidParameterException(_),
            "InvalidParameter",
            400
        );
        assert_eq!(msg, format!("Invalid SMS endpoint: {bad}"));
    }
    sns.subscribe()
        .topic_arn(&topic)
        .protocol("sms")
        .endpoint("+12/34-567.890")
        .send()
        .await
        .expect("a number with separators");
    let msg = assert_sns_err!(
        sns.publish()
            .phone_number("+1a234")
            .message("m")
            .send()
            .await,
        PublishError::InvalidParameterException(_),
        "InvalidParameter",
        400
    );
    assert_eq!(
        msg,
        "Invalid parameter: PhoneNumber Reason: +1a234 is not valid to publish to"
    );
    sns.publish()
        .phone_number("+15551234567")
        .message("m")
        .send()
        .await
        .expect("publish to a number");
    let msg = assert_sns_err!(
        sns.opt_in_phone_number()
            .phone_number("invalid")
            .send()
            .await,
        OptInPhoneNumberError::InvalidParameterException(_),
        "InvalidParameter",
        400
    );
    assert_eq!(
        msg,
        "Invalid parameter: PhoneNumber Reason: input incorrectly formatted"
    );
}

/// An `sqs` subscription's Endpoint is a queue's ARN (SNS API Reference, Subscribe);
/// anything else is `InvalidParameter` "Invalid parameter: SQS endpoint ARN" (recorded
/// `test_subscribe_sqs_queue_url`, `test_subscribe_unknown_sqs_queue`).
#[tokio::test]
async fn sqs_endpoints_are_queue_arns() {
    let server = Server::start();
    let sns = server.sns();
    let topic = create_topic(&sns, "to-queues", &[]).await;
    // A queue URL is not its ARN.
    let url = create_queue(&server.sqs(), "by-url", &[]).await;
    let msg = assert_sns_err!(
        sns.subscribe()
            .topic_arn(&topic)
            .protocol("sqs")
            .endpoint(url)
            .send()
            .await,
        SubscribeError::InvalidParameterException(_),
        "InvalidParameter",
        400
    );
    assert_eq!(msg, "Invalid parameter: SQS endpoint ARN");
    // Nor anything else that is not a queue's ARN: a path in the name, an account id that
    // is not 12 digits, a region that is not one, or no name.
    for endpoint in [
        "unknown",
        "arn:aws:sqs:us-east-1:000000000000:111111111111/victim",
        "arn:aws:sqs:us-east-1:000000000000:../111111111111/victim",
        "arn:aws:sqs:us-east-1:0000000000000:victim",
        "arn:aws:sqs:us-east-1:00000000000a:victim",
        "arn:aws:sqs:US-EAST-1:000000000000:victim",
        "arn:aws:sqs::000000000000:victim",
        "arn:aws:sqs:us-east-1:000000000000:",
        "arn:aws:sns:us-east-1:000000000000:victim",
    ] {
        let msg = assert_sns_err!(
            sns.subscribe()
                .topic_arn(&topic)
                .protocol("sqs")
                .endpoint(endpoint)
                .send()
                .await,
            SubscribeError::InvalidParameterException(_),
            "InvalidParameter",
            400
        );
        assert_eq!(msg, "Invalid parameter: SQS endpoint ARN", "{endpoint}");
    }
    // A well-formed ARN of a queue that does not exist is taken, as AWS takes it
    // (recorded `test_subscribe_unknown_sqs_queue`).
    sns.subscribe()
        .topic_arn(&topic)
        .protocol("sqs")
        .endpoint("arn:aws:sqs:us-east-1:000000000000:not-yet")
        .send()
        .await
        .expect("an unknown queue's ARN");
}

/// Each protocol's Endpoint has its own shape (SNS API Reference, Subscribe, Endpoint),
/// and one without it is refused in that protocol's words, AWS's where known (module
/// `endpoints` of loft-core names each source): an email address ("Invalid parameter:
/// Email address"), a Lambda function's ARN ("Invalid parameter: Lambda endpoint ARN"),
/// a platform endpoint's ARN ("Invalid parameter: Application endpoint arn
/// invalid:ENDPOINT"); the URL of the protocol's scheme and a Firehose stream's ARN in
/// Loft's words. Control characters are refused, never stored. Each refused endpoint
/// leaves no subscription behind; each taken one is listed as given.
#[tokio::test]
async fn each_protocol_refuses_an_endpoint_not_of_its_shape() {
    let server = Server::start();
    let sns = server.sns();
    let topic = create_topic(&sns, "shapes", &[]).await;
    let email = "Invalid parameter: Email address";
    let lambda = "Invalid parameter: Lambda endpoint ARN";
    let http = "Invalid parameter: Endpoint must match the specified protocol";
    let firehose = "Invalid parameter: Firehose endpoint ARN";
    let refused: &[(&str, &str, String)] = &[
        ("email", "not-an-email", email.into()),
        ("email", "foo@bar.com;foo@baz.io", email.into()),
        ("email", "a b@example.com", email.into()),
        ("email", "a\u{1}@example.com", email.into()),
        ("email", "a@", email.into()),
        ("email", "", email.into()),
        ("email-json", "not-an-email", email.into()),
        ("email-json", "@example.com", email.into()),
        ("http", "https://example.com", http.into()),
        ("http", "ftp://example.com", http.into()),
        ("https", "http://example.com", http.into()),
        ("https", "https://", http.into()),
        ("lambda", "my-function", lambda.into()),
        ("lambda", "arn:aws:lambda:", lambda.into()),
        ("lambda", "arn:aws:lambda:us-east-1:000000000000:function:f\u{1}", lambda.into()),
        ("lambda", "arn:aws:lambda:us-east-1:000000000000:layer:f", lambda.into()),
        ("firehose", "arn:aws:firehose", firehose.into()),
        ("firehose", "arn:aws:firehose:us-east-1:000000000000:stream/s", firehose.into()),
        (
            "application",
            "invalid arn",
            "Invalid parameter: Application endpoint arn invalid:invalid arn".into(),
        ),
        (
            "application",
            topic.as_str(),
            format!("Invalid parameter: Application endpoint arn invalid:{topic}"),
        ),
        (
            "application",
            "arn:aws:sns:us-east-1:000000000000:endpoint/GCM/app/1\u{1}",
            "Invalid parameter: Application endpoint arn invalid:arn:aws:sns:us-east-1:000000000000:endpoint/GCM/app/1\u{1}".into(),
        ),
    ];
    for (protocol, endpoint, words) in refused {
        let mut req = sns.subscribe().topic_arn(&topic).protocol(*protocol);
        if !endpoint.is_empty() {
            req = req.endpoint(*endpoint);
        }
        let msg = assert_sns_err!(
            req.send().await,
            SubscribeError::InvalidParameterException(_),
            "InvalidParameter",
            400
        );
        // The answer's XML cannot carry U+0001: compare what it can.
        assert_eq!(
            msg,
            words.replace('\u{1}', "\u{FFFD}"),
            "{protocol} {endpoint:?}"
        );
    }
    let taken = [
        ("email", "first.last+tag@mail.example.com"),
        ("email-json", "ops@example.com"),
        ("http", "http://127.0.0.1:9/hook"),
        ("https", "https://127.0.0.1:9/hook"),
        (
            "lambda",
            "arn:aws:lambda:us-east-1:000000000000:function:f:prod",
        ),
        // An `application` endpoint of the right shape must also exist: taken and
        // refused in `platform::application_subscriptions_need_an_endpoint_that_exists`.
    ];
    for (protocol, endpoint) in taken {
        sns.subscribe()
            .topic_arn(&topic)
            .protocol(protocol)
            .endpoint(endpoint)
            .send()
            .await
            .unwrap_or_else(|e| panic!("{protocol} {endpoint}: {e:?}"));
    }
    let listed = sns
        .list_subscriptions_by_topic()
        .topic_arn(&topic)
        .send()
        .await
        .expect("list");
    let mut got: Vec<(String, String)> = listed
        .subscriptions()
        .iter()
        .map(|s| {
            (
                s.protocol().unwrap_or_default().to_owned(),
                s.endpoint().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    got.sort();
    let mut want: Vec<(String, String)> = taken
        .iter()
        .map(|(p, e)| ((*p).to_owned(), (*e).to_owned()))
        .collect();
    want.sort();
    assert_eq!(got, want);
}

/// Publish's Subject is "UTF-8 text with no line breaks or control characters, and less
/// than 100 characters long" (SNS API Reference, Publish), never empty (recorded
/// `test_publish_with_empty_subject`): letters beyond ASCII are taken and reach the
/// subscriber as given; 100 characters are taken whatever their bytes; a refusal is
/// "Invalid parameter: Subject" (recorded) and delivers nothing.
#[tokio::test]
async fn a_subject_is_utf8_text_without_line_breaks() {
    let server = Server::start();
    let sns = server.sns();
    let sqs = server.sqs();
    let topic = create_topic(&sns, "subjects", &[]).await;
    let url = create_queue(&sqs, "subjects-q", &[]).await;
    subscribe_queue(&server, &topic, "subjects-q", &[]).await;
    let taken = [
        "Grüße aus Köln".to_owned(),
        "件名 🎉".to_owned(),
        " leading space".to_owned(),
        "ä".repeat(100),
    ];
    for subject in &taken {
        sns.publish()
            .topic_arn(&topic)
            .message("m")
            .subject(subject)
            .send()
            .await
            .unwrap_or_else(|e| panic!("{subject:?}: {e:?}"));
        let got = receive_exactly(&sqs, &url, 1).await;
        let envelope = json_of(got[0].body().expect("body"));
        assert_eq!(envelope["Subject"], subject.as_str());
    }
    for subject in [
        String::new(),
        "ä".repeat(101),
        "s".repeat(101),
        "line\nbreak".into(),
        "carriage\rreturn".into(),
        "tab\there".into(),
        "next line\u{85}".into(),
        "separator\u{2028}".into(),
    ] {
        let msg = assert_sns_err!(
            sns.publish()
                .topic_arn(&topic)
                .message("m")
                .subject(&subject)
                .send()
                .await,
            PublishError::InvalidParameterException(_),
            "InvalidParameter",
            400
        );
        assert_eq!(msg, "Invalid parameter: Subject", "{subject:?}");
    }
    assert!(receive_some(&sqs, &url, 0).await.is_empty());
}

#[tokio::test]
async fn subscribing_again_compares_with_defaults_and_reports_the_principal() {
    let server = Server::start();
    let sns = server.sns();
    let topic = create_topic(&sns, "idem", &[]).await;
    create_queue(&server.sqs(), "idem-q", &[]).await;
    let arn = subscribe_queue(&server, &topic, "idem-q", &[("RawMessageDelivery", "True")]).await;
    // Leaving attributes out, or giving their defaults, is the same subscription.
    for attrs in [
        vec![],
        vec![("RawMessageDelivery", "true")],
        vec![("FilterPolicyScope", "MessageAttributes")],
    ] {
        assert_eq!(
            subscribe_queue(&server, &topic, "idem-q", &attrs).await,
            arn
        );
    }
    let msg = assert_sns_err!(
        sns.subscribe()
            .topic_arn(&topic)
            .protocol("sqs")
            .endpoint(server.queue_arn("idem-q"))
            .attributes("RawMessageDelivery", "false")
            .attributes("FilterPolicyScope", "MessageBody")
            .send()
            .await,
        SubscribeError::InvalidParameterException(_),
        "InvalidParameter",
        400
    );
    assert_eq!(
        msg,
        "Invalid parameter: Attributes Reason: Subscription already exists with different attributes"
    );
    let attrs = sns
        .get_subscription_attributes()
        .subscription_arn(&arn)
        .send()
        .await
        .expect("GetSubscriptionAttributes");
    assert_eq!(
        attrs.attributes().expect("attributes")["SubscriptionPrincipal"],
        format!("arn:aws:iam::{}:user/loft", harness::ACCOUNT)
    );
    // Attribute values are refused in AWS's words.
    let msg = assert_sns_err!(
        sns.set_subscription_attributes()
            .subscription_arn(&arn)
            .attribute_name("RawMessageDelivery")
            .attribute_value("test-ValUe")
            .send()
            .await,
        SetSubscriptionAttributesError::InvalidParameterException(_),
        "InvalidParameter",
        400
    );
    assert_eq!(
        msg,
        "Invalid parameter: RawMessageDelivery: Invalid value [test-ValUe]. Must be true or false."
    );
    let msg = assert_sns_err!(
        sns.set_subscription_attributes()
            .subscription_arn(&arn)
            .attribute_name("RedrivePolicy")
            .attribute_value(json!({"deadLetterTargetArn": "fake-arn"}).to_string())
            .send()
            .await,
        SetSubscriptionAttributesError::InvalidParameterException(_),
        "InvalidParameter",
        400
    );
    assert_eq!(
        msg,
        "Invalid parameter: RedrivePolicy: deadLetterTargetArn is an invalid arn"
    );
    let msg = assert_sns_err!(
        sns.set_subscription_attributes()
            .subscription_arn(&arn)
            .attribute_name("RedrivePolicy")
            .attribute_value("{invalidjson}")
            .send()
            .await,
        SetSubscriptionAttributesError::InvalidParameterException(_),
        "InvalidParameter",
        400
    );
    assert!(
        msg.starts_with("Invalid parameter: RedrivePolicy: failed to parse JSON."),
        "{msg}"
    );
}

#[tokio::test]
async fn topics_are_idempotent_on_a_subset_of_their_tags() {
    let server = Server::start();
    let sns = server.sns();
    let arn = sns
        .create_topic()
        .name("tagged")
        .tags(tag("a", "1"))
        .tags(tag("b", "2"))
        .send()
        .await
        .expect("CreateTopic")
        .topic_arn
        .expect("arn");
    for tags in [
        vec![tag("a", "1"), tag("b", "2")],
        vec![tag("a", "1")],
        vec![],
    ] {
        let again = sns
            .create_topic()
            .name("tagged")
            .set_tags(Some(tags))
            .send()
            .await
            .expect("CreateTopic again");
        assert_eq!(again.topic_arn.as_deref(), Some(arn.as_str()));
    }
    let msg = assert_sns_err!(
        sns.create_topic()
            .name("tagged")
            .tags(tag("c", "3"))
            .send()
            .await,
        CreateTopicError::InvalidParameterException(_),
        "InvalidParameter",
        400
    );
    assert_eq!(
        msg,
        "Invalid parameter: Tags Reason: Topic already exists with different tags"
    );
    let msg = assert_sns_err!(
        sns.tag_resource()
            .resource_arn(&arn)
            .tags(tag("k", "1"))
            .tags(tag("k", "1"))
            .send()
            .await,
        TagResourceError::InvalidParameterException(_),
        "InvalidParameter",
        400
    );
    assert_eq!(msg, "Invalid parameter: Duplicated keys are not allowed.");
    for (name, attrs) in [
        ("", vec![]),
        ("plain", vec![("FifoTopic", "true")]),
        ("bad:name", vec![]),
    ] {
        let mut req = sns.create_topic().name(name);
        for (k, v) in attrs {
            req = req.attributes(k, v);
        }
        let msg = assert_sns_err!(
            req.send().await,
            CreateTopicError::InvalidParameterException(_),
            "InvalidParameter",
            400
        );
        assert_eq!(msg, "Invalid parameter: Topic Name", "{name:?}");
    }
}

#[tokio::test]
async fn add_permission_writes_aws_statements() {
    let server = Server::start();
    let sns = server.sns();
    let topic = create_topic(&sns, "perm", &[]).await;
    sns.add_permission()
        .topic_arn(&topic)
        .label("one")
        .aws_account_id(harness::ACCOUNT)
        .action_name("Publish")
        .send()
        .await
        .expect("AddPermission");
    let policy = sns
        .get_topic_attributes()
        .topic_arn(&topic)
        .send()
        .await
        .expect("GetTopicAttributes")
        .attributes
        .expect("attributes")["Policy"]
        .clone();
    let policy = json_of(&policy);
    assert_eq!(policy["Version"], "2008-10-17");
    let added = &policy["Statement"][1];
    assert_eq!(added["Sid"], "one");
    // One principal and one action are strings, not lists.
    assert_eq!(
        added["Principal"]["AWS"],
        format!("arn:aws:iam::{}:root", harness::ACCOUNT)
    );
    assert_eq!(added["Action"], "SNS:Publish");
    let msg = assert_sns_err!(
        sns.add_permission()
            .topic_arn(&topic)
            .label("one")
            .aws_account_id(harness::ACCOUNT)
            .action_name("Publish")
            .send()
            .await,
        AddPermissionError::InvalidParameterException(_),
        "InvalidParameter",
        400
    );
    assert_eq!(msg, "Invalid parameter: Statement already exists");
    let msg = assert_sns_err!(
        sns.add_permission()
            .topic_arn(&topic)
            .label("two")
            .aws_account_id(harness::ACCOUNT)
            .action_name("InvalidAction")
            .send()
            .await,
        AddPermissionError::InvalidParameterException(_),
        "InvalidParameter",
        400
    );
    assert_eq!(
        msg,
        "Invalid parameter: Policy statement action out of service scope!"
    );
    // An AWSAccountId that is not a 12-digit account id names no principal: the whole
    // request is refused and the Policy stays as it was.
    let before = sns
        .get_topic_attributes()
        .topic_arn(&topic)
        .send()
        .await
        .expect("GetTopicAttributes")
        .attributes
        .expect("attributes")["Policy"]
        .clone();
    for accounts in [
        vec!["12345678901"],
        vec!["1234567890123"],
        vec!["12345678901a"],
        vec!["1111\u{1}1111111"],
        vec!["*"],
        vec!["arn:aws:iam::111111111111:root"],
        vec![harness::ACCOUNT, "not-an-account"],
    ] {
        let mut req = sns
            .add_permission()
            .topic_arn(&topic)
            .label("three")
            .action_name("Publish");
        for a in &accounts {
            req = req.aws_account_id(*a);
        }
        let msg = assert_sns_err!(
            req.send().await,
            AddPermissionError::InvalidParameterException(_),
            "InvalidParameter",
            400
        );
        assert_eq!(
            msg, "Invalid parameter: Policy Error: PrincipalNotFound",
            "{accounts:?}"
        );
    }
    let after = sns
        .get_topic_attributes()
        .topic_arn(&topic)
        .send()
        .await
        .expect("GetTopicAttributes")
        .attributes
        .expect("attributes")["Policy"]
        .clone();
    assert_eq!(after, before);
}

/// A queue takes no message larger than its MaximumMessageSize, from SNS as from
/// SendMessage: a raw copy of a 5,000-byte message to a queue of 1,024 bytes goes to the
/// subscription's dead-letter queue, and a message that fits is delivered.
#[tokio::test]
async fn a_message_larger_than_the_queue_allows_dead_letters() {
    let server = Server::start();
    let (sns, sqs) = (server.sns(), server.sqs());
    let topic = create_topic(&sns, "sized", &[]).await;
    let small = create_queue(&sqs, "small", &[("MaximumMessageSize", "1024")]).await;
    let dlq = create_queue(&sqs, "small-dlq", &[]).await;
    let sub = subscribe_queue(&server, &topic, "small", &[("RawMessageDelivery", "true")]).await;
    dead_letter_to(&server, &sub, "small-dlq").await;
    let big = "b".repeat(5000);
    for message in [big.as_str(), "fits"] {
        sns.publish()
            .topic_arn(&topic)
            .message(message)
            .send()
            .await
            .expect("Publish");
    }
    let dead = receive_exactly(&sqs, &dlq, 1).await;
    assert_eq!(dead[0].body(), Some(big.as_str()));
    let got = receive_exactly(&sqs, &small, 1).await;
    assert_eq!(got[0].body(), Some("fits"));
}

/// Gives subscription `sub` a RedrivePolicy naming queue `dlq` as its dead-letter queue.
async fn dead_letter_to(server: &Server, sub: &str, dlq: &str) {
    server
        .sns()
        .set_subscription_attributes()
        .subscription_arn(sub)
        .attribute_name("RedrivePolicy")
        .attribute_value(json!({"deadLetterTargetArn": server.queue_arn(dlq)}).to_string())
        .send()
        .await
        .expect("RedrivePolicy");
}

/// The size a queue's MaximumMessageSize is held to is the copy's as the queue would
/// hold it: for a subscription without raw delivery, the whole JSON envelope. A
/// 1,500-byte message fits a 2,048-byte queue, its envelope does not: it goes to the
/// subscription's dead-letter queue, as SQS would refuse SNS's SendMessage; a short
/// message's envelope is delivered.
#[tokio::test]
async fn an_envelope_larger_than_the_queue_allows_dead_letters() {
    let server = Server::start();
    let (sns, sqs) = (server.sns(), server.sqs());
    let topic = create_topic(&sns, "enveloped", &[]).await;
    let small = create_queue(&sqs, "small-env", &[("MaximumMessageSize", "2048")]).await;
    let dlq = create_queue(&sqs, "small-env-dlq", &[]).await;
    let sub = subscribe_queue(&server, &topic, "small-env", &[]).await;
    dead_letter_to(&server, &sub, "small-env-dlq").await;
    let big = "e".repeat(1500);
    for message in [big.as_str(), "fits"] {
        sns.publish()
            .topic_arn(&topic)
            .message(message)
            .send()
            .await
            .expect("Publish");
    }
    let dead = receive_exactly(&sqs, &dlq, 1).await;
    let body = dead[0].body().expect("body");
    assert!(
        body.len() > 2048,
        "the envelope is what did not fit: {} bytes",
        body.len()
    );
    assert_eq!(json_of(body)["Message"], big.as_str());
    let got = receive_exactly(&sqs, &small, 1).await;
    assert_eq!(json_of(got[0].body().expect("body"))["Message"], "fits");
}

/// SNS Developer Guide, "Amazon SNS dead-letter queues": a message a subscription cannot
/// deliver (its queue is gone) goes to the subscription's DLQ, as it would have reached
/// the queue (enveloped, or raw with its attributes).
#[tokio::test]
async fn a_deleted_queue_dead_letters_to_the_subscription_dlq() {
    let server = Server::start();
    let (sns, sqs) = (server.sns(), server.sqs());
    let topic = create_topic(&sns, "dl", &[]).await;
    for raw in [false, true] {
        let queue = format!("gone-{raw}");
        let dlq = format!("gone-dlq-{raw}");
        let queue_url = create_queue(&sqs, &queue, &[]).await;
        let dlq_url = create_queue(&sqs, &dlq, &[]).await;
        let sub = subscribe_queue(
            &server,
            &topic,
            &queue,
            &[("RawMessageDelivery", if raw { "true" } else { "false" })],
        )
        .await;
        sns.set_subscription_attributes()
            .subscription_arn(&sub)
            .attribute_name("RedrivePolicy")
            .attribute_value(json!({"deadLetterTargetArn": server.queue_arn(&dlq)}).to_string())
            .send()
            .await
            .expect("RedrivePolicy");
        sqs.delete_queue()
            .queue_url(&queue_url)
            .send()
            .await
            .expect("DeleteQueue");
        sns.publish()
            .topic_arn(&topic)
            .message(format!("after-{raw}"))
            .message_attributes("n", sns_typed("Number", "111"))
            .send()
            .await
            .expect("Publish");
        let got = receive_exactly(&sqs, &dlq_url, 1).await;
        let m = &got[0];
        if raw {
            assert_eq!(m.body(), Some(format!("after-{raw}").as_str()));
            let attrs = m.message_attributes().expect("message attributes");
            assert_eq!(attrs["n"].string_value(), Some("111"));
        } else {
            let env = json_of(m.body().expect("body"));
            assert_eq!(env["Type"], "Notification");
            assert_eq!(env["Message"], format!("after-{raw}"));
            assert_eq!(env["MessageAttributes"]["n"]["Value"], "111");
        }
        let system = m.attributes().expect("system attributes");
        assert!(
            !system.contains_key(&MessageSystemAttributeName::DeadLetterQueueSourceArn),
            "{system:?}"
        );
        // The subscription stays, as on AWS.
        sns.unsubscribe()
            .subscription_arn(&sub)
            .send()
            .await
            .expect("Unsubscribe");
    }
}

#[tokio::test]
async fn fifo_subscriptions_dead_letter_to_fifo_queues_only() {
    let server = Server::start();
    let (sns, sqs) = (server.sns(), server.sqs());
    let topic = create_topic(&sns, "f.fifo", &[("FifoTopic", "true")]).await;
    create_queue(&sqs, "fq.fifo", &[("FifoQueue", "true")]).await;
    create_queue(&sqs, "plain", &[]).await;
    let sub = subscribe_queue(&server, &topic, "fq.fifo", &[]).await;
    let msg = assert_sns_err!(
        sns.set_subscription_attributes()
            .subscription_arn(&sub)
            .attribute_name("RedrivePolicy")
            .attribute_value(json!({"deadLetterTargetArn": server.queue_arn("plain")}).to_string())
            .send()
            .await,
        SetSubscriptionAttributesError::InvalidParameterException(_),
        "InvalidParameter",
        400
    );
    assert_eq!(
        msg,
        "Invalid parameter: RedrivePolicy: must use a FIFO queue as DLQ for a FIFO Subscription to a FIFO Topic."
    );
    // A standard queue on a FIFO topic is allowed, and its messages carry no group.
    subscribe_queue(&server, &topic, "plain", &[("RawMessageDelivery", "true")]).await;
    sns.publish()
        .topic_arn(&topic)
        .message("m")
        .message_group_id("g1")
        .message_deduplication_id("d1")
        .send()
        .await
        .expect("Publish");
    let url = create_queue(&sqs, "plain", &[]).await;
    let got = receive_exactly(&sqs, &url, 1).await;
    let system = got[0].attributes().expect("system attributes");
    assert!(
        !system.contains_key(&MessageSystemAttributeName::MessageGroupId),
        "{system:?}"
    );
}

/// The `X-Amzn-Trace-Id` header of a Publish reaches subscribed queues as the
/// `AWSTraceHeader` system attribute (SNS Developer Guide, "Active tracing").
#[tokio::test]
async fn trace_headers_reach_subscribed_queues() {
    let server = Server::start();
    let (sns, sqs) = (server.sns(), server.sqs());
    let topic = create_topic(&sns, "traced", &[]).await;
    let url = create_queue(&sqs, "traced-q", &[]).await;
    subscribe_queue(&server, &topic, "traced-q", &[]).await;
    let trace = "Root=1-3152b799-8954dae64eda91bc9a23a7e8;Parent=7fa8c0f79203be72;Sampled=1";
    sns.publish()
        .topic_arn(&topic)
        .message("m")
        .customize()
        .mutate_request(move |r| {
            r.headers_mut().insert("X-Amzn-Trace-Id", trace);
        })
        .send()
        .await
        .expect("Publish");
    let got = receive_exactly(&sqs, &url, 1).await;
    assert_eq!(
        got[0].attributes().expect("attributes")[&MessageSystemAttributeName::AwsTraceHeader],
        trace
    );
}

/// TracingConfig Active: a publish without a trace header starts a trace (a new
/// `Root=1-{time}-{random}` header on the queue message); with one, it is passed on as it
/// is. PassThrough (the default) starts none.
#[tokio::test]
async fn active_tracing_starts_a_trace_when_the_publisher_sent_none() {
    let server = Server::start();
    let (sns, sqs) = (server.sns(), server.sqs());
    let active = create_topic(&sns, "active", &[("TracingConfig", "Active")]).await;
    let passive = create_topic(&sns, "passive", &[]).await;
    let url = create_queue(&sqs, "traces-q", &[]).await;
    subscribe_queue(&server, &active, "traces-q", &[]).await;
    subscribe_queue(&server, &passive, "traces-q", &[]).await;
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    sns.publish()
        .topic_arn(&passive)
        .message("passive")
        .send()
        .await
        .expect("Publish");
    sns.publish()
        .topic_arn(&active)
        .message("active")
        .send()
        .await
        .expect("Publish");
    let got = receive_exactly(&sqs, &url, 2).await;
    let trace_of = |text: &str| {
        let m = got
            .iter()
            .find(|m| {
                m.body()
                    .unwrap()
                    .contains(&format!("\"Message\":\"{text}\""))
            })
            .unwrap_or_else(|| panic!("no {text} message"));
        m.attributes()
            .and_then(|a| a.get(&MessageSystemAttributeName::AwsTraceHeader))
            .cloned()
    };
    assert_eq!(trace_of("passive"), None, "PassThrough starts no trace");
    let started = trace_of("active").expect("Active starts a trace");
    let root = started
        .strip_prefix("Root=1-")
        .and_then(|r| r.strip_suffix(";Sampled=1"))
        .unwrap_or_else(|| panic!("trace header shape: {started}"));
    let (time, id) = root.split_once('-').expect("Root=1-time-id");
    assert_eq!((time.len(), id.len()), (8, 24), "{started}");
    assert!(id.chars().all(|c| c.is_ascii_hexdigit()), "{started}");
    let secs = u64::from_str_radix(time, 16).expect("hex time");
    assert!(secs >= before && secs <= before + 60, "{started}");

    let trace = "Root=1-3152b799-8954dae64eda91bc9a23a7e8;Parent=7fa8c0f79203be72;Sampled=1";
    sns.publish()
        .topic_arn(&active)
        .message("given")
        .customize()
        .mutate_request(move |r| {
            r.headers_mut().insert("X-Amzn-Trace-Id", trace);
        })
        .send()
        .await
        .expect("Publish");
    let got = receive_exactly(&sqs, &url, 1).await;
    assert_eq!(
        got[0].attributes().expect("attributes")[&MessageSystemAttributeName::AwsTraceHeader],
        trace
    );
}

/// Delivery status logging: a topic with SQSSuccessFeedbackRoleArn writes AWS's JSON
/// record of each SQS delivery on the `loft::sns::delivery_status` log target; a topic
/// without the role, or with a sample rate of 0, writes none; a rate above 100 is refused.
#[tokio::test]
async fn delivery_status_records_are_logged_for_topics_with_a_feedback_role() {
    use aws_sdk_sns::error::ProvideErrorMetadata as _;
    let server = Server::start();
    let (sns, sqs) = (server.sns(), server.sqs());
    let role = "arn:aws:iam::000000000000:role/SNSSuccessFeedback";
    let logged = create_topic(&sns, "logged", &[("SQSSuccessFeedbackRoleArn", role)]).await;
    let sampled_out = create_topic(
        &sns,
        "sampled-out",
        &[
            ("SQSSuccessFeedbackRoleArn", role),
            ("SQSSuccessFeedbackSampleRate", "0"),
        ],
    )
    .await;
    let silent = create_topic(&sns, "silent", &[]).await;
    let e = sns
        .set_topic_attributes()
        .topic_arn(&silent)
        .attribute_name("SQSSuccessFeedbackSampleRate")
        .attribute_value("101")
        .send()
        .await
        .expect_err("a rate above 100");
    assert_eq!(e.code(), Some("InvalidParameter"), "{e:?}");
    let url = create_queue(&sqs, "status-q", &[]).await;
    let mut ids = Vec::new();
    for topic in [&logged, &sampled_out, &silent] {
        subscribe_queue(&server, topic, "status-q", &[]).await;
        let out = sns
            .publish()
            .topic_arn(topic)
            .message("status body")
            .send()
            .await
            .expect("Publish");
        ids.push(out.message_id().unwrap().to_owned());
    }
    receive_exactly(&sqs, &url, 3).await;
    let lines = |log: &str| -> Vec<String> {
        log.lines()
            .filter(|l| l.contains("loft::sns::delivery_status"))
            .map(str::to_owned)
            .collect()
    };
    crate::wait::until(crate::harness::PATIENCE, || async {
        !lines(&server.stderr()).is_empty()
    })
    .await;
    let found = lines(&server.stderr());
    assert_eq!(found.len(), 1, "{found:?}");
    let line = &found[0];
    for needle in [
        ids[0].as_str(),
        r#""status":"SUCCESS""#,
        "arn:aws:sqs:us-east-1:000000000000:status-q",
        r#""statusCode":200"#,
        "sns/us-east-1/000000000000/logged",
    ] {
        assert!(line.contains(needle), "{needle} not in {line}");
    }
}

/// The delivery status record of an SQS copy names the publish's MessageId and the MD5 of
/// the text delivered (SNS Developer Guide, "Amazon SNS message delivery status":
/// `notification.messageId`, `notification.messageMD5Sum`), one row per delivery kind:
/// raw copies carry no envelope, and the record still names their message.
#[tokio::test]
async fn delivery_status_records_name_the_message_of_raw_and_envelope_copies() {
    let server = Server::start();
    let (sns, sqs) = (server.sns(), server.sqs());
    let role = "arn:aws:iam::000000000000:role/SNSSuccessFeedback";
    for (n, raw) in [("raw", "true"), ("envelope", "false")] {
        let topic = create_topic(
            &sns,
            &format!("status-{n}"),
            &[("SQSSuccessFeedbackRoleArn", role)],
        )
        .await;
        let url = create_queue(&sqs, &format!("status-{n}-q"), &[]).await;
        subscribe_queue(
            &server,
            &topic,
            &format!("status-{n}-q"),
            &[("RawMessageDelivery", raw)],
        )
        .await;
        let text = format!("status body of the {n} copy");
        let id = sns
            .publish()
            .topic_arn(&topic)
            .message(&text)
            .send()
            .await
            .expect("Publish")
            .message_id()
            .unwrap()
            .to_owned();
        receive_exactly(&sqs, &url, 1).await;
        let group = format!("sns/us-east-1/000000000000/status-{n}");
        let line = || {
            server
                .stderr()
                .lines()
                .find(|l| l.contains("loft::sns::delivery_status") && l.contains(&group))
                .map(str::to_owned)
        };
        crate::wait::until(crate::harness::PATIENCE, || async { line().is_some() }).await;
        let line = line().unwrap();
        let md5 = format!("{:x}", <md5::Md5 as md5::Digest>::digest(text.as_bytes()));
        for needle in [id.as_str(), md5.as_str()] {
            assert!(line.contains(needle), "{n}: {needle} not in {line}");
        }
    }
}

/// AWS's recorded PublishBatch answers: a FIFO entry without MessageGroupId or a
/// deduplication id, or a MessageStructure=json entry without `default`, refuses the whole
/// batch; nothing is published.
#[tokio::test]
async fn publish_batch_fifo_and_structure_rules_refuse_the_batch() {
    use aws_sdk_sns::operation::publish_batch::PublishBatchError;
    use aws_sdk_sns::types::PublishBatchRequestEntry as Entry;
    let server = Server::start();
    let (sns, sqs) = (server.sns(), server.sqs());
    let topic = create_topic(&sns, "b.fifo", &[("FifoTopic", "true")]).await;
    let url = create_queue(&sqs, "b.fifo", &[("FifoQueue", "true")]).await;
    subscribe_queue(&server, &topic, "b.fifo", &[]).await;
    let good = Entry::builder()
        .id("good")
        .message("m")
        .message_group_id("g")
        .message_deduplication_id("d")
        .build()
        .expect("entry");
    let cases = [
        (
            Entry::builder().id("b").message("m").build().expect("entry"),
            "Invalid parameter: The MessageGroupId parameter is required for FIFO topics",
        ),
        (
            Entry::builder()
                .id("b")
                .message("m")
                .message_group_id("g")
                .build()
                .expect("entry"),
            "Invalid parameter: The topic should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly",
        ),
        (
            Entry::builder()
                .id("b")
                .message(json!({"sqs": "x"}).to_string())
                .message_structure("json")
                .message_group_id("g")
                .message_deduplication_id("d2")
                .build()
                .expect("entry"),
            "Invalid parameter: Message Structure - No default entry in JSON message body",
        ),
    ];
    for (bad, message) in cases {
        let msg = assert_sns_err!(
            sns.publish_batch()
                .topic_arn(&topic)
                .publish_batch_request_entries(good.clone())
                .publish_batch_request_entries(bad)
                .send()
                .await,
            PublishBatchError::InvalidParameterException(_),
            "InvalidParameter",
            400
        );
        assert_eq!(msg, message);
    }
    assert!(
        receive_some(&sqs, &url, 0).await.is_empty(),
        "nothing published"
    );
}

#[tokio::test]
async fn sms_attributes_are_checked_kept_and_survive_a_restart() {
    let mut server = Server::start();
    let sns = server.sns();
    // AWS's default before anything is set.
    let got = sns.get_sms_attributes().send().await.unwrap();
    assert_eq!(
        got.attributes().unwrap(),
        &std::collections::HashMap::from([("MonthlySpendLimit".to_owned(), "1".to_owned())])
    );
    for (name, value, message) in [
        (
            "InvalidAttribute",
            "x",
            "InvalidAttribute is not a valid attribute",
        ),
        (
            "DefaultSendID",
            "aaaaaaaaaaaa",
            "DefaultSendID is not a valid attribute",
        ),
        ("DefaultSMSType", "invalid", "DefaultSMSType is invalid"),
        ("DefaultSenderID", "123456789", "DefaultSenderID is invalid"),
        (
            "DeliveryStatusSuccessSamplingRate",
            "101",
            "DeliveryStatusSuccessSamplingRate is invalid",
        ),
    ] {
        let msg = assert_sns_err!(
            sns.set_sms_attributes()
                .attributes(name, value)
                .send()
                .await,
            SetSMSAttributesError::InvalidParameterException(_),
            "InvalidParameter",
            400
        );
        assert_eq!(msg, message);
    }
    sns.set_sms_attributes()
        .attributes("DeliveryStatusSuccessSamplingRate", "100")
        .attributes("DefaultSenderID", "LSTest")
        .attributes("DefaultSMSType", "Promotional")
        .send()
        .await
        .unwrap();
    let all = std::collections::HashMap::from(
        [
            ("DefaultSMSType", "Promotional"),
            ("DefaultSenderID", "LSTest"),
            ("DeliveryStatusSuccessSamplingRate", "100"),
            ("MonthlySpendLimit", "1"),
        ]
        .map(|(k, v)| (k.to_owned(), v.to_owned())),
    );
    let got = sns.get_sms_attributes().send().await.unwrap();
    assert_eq!(got.attributes().unwrap(), &all);
    server.stop();
    server.start_again();
    let sns = server.sns();
    let some = sns
        .get_sms_attributes()
        .attributes("DefaultSenderID")
        .attributes("DefaultSMSType")
        .send()
        .await
        .unwrap();
    assert_eq!(
        some.attributes().unwrap(),
        &std::collections::HashMap::from(
            [
                ("DefaultSMSType", "Promotional"),
                ("DefaultSenderID", "LSTest")
            ]
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
        )
    );
}

#[tokio::test]
async fn platform_errors_name_what_is_missing() {
    let server = Server::start();
    let sns = server.sns();
    let long = "a".repeat(257);
    for (name, message) in [
        ("", "Invalid parameter:  Reason: cannot be empty".to_owned()),
        (
            "@name",
            "Invalid parameter: @name Reason: must contain only characters 'a'-'z', 'A'-'Z', \
             '0'-'9', '_', '-', and '.'"
                .to_owned(),
        ),
        (
            long.as_str(),
            format!("Invalid parameter: {long} Reason: must be at most 256 characters long"),
        ),
    ] {
        let msg = assert_sns_err!(
            sns.create_platform_application()
                .name(name)
                .platform("GCM")
                .attributes("PlatformCredential", "k")
                .send()
                .await,
            CreatePlatformApplicationError::InvalidParameterException(_),
            "InvalidParameter",
            400
        );
        assert_eq!(msg, message);
    }
    let app = "arn:aws:sns:us-east-1:000000000000:app/GCM/none";
    let msg = assert_sns_err!(
        sns.get_platform_application_attributes()
            .platform_application_arn(app)
            .send()
            .await,
        GetPlatformApplicationAttributesError::NotFoundException(_),
        "NotFound",
        404
    );
    assert_eq!(msg, "PlatformApplication does not exist");
    let msg = assert_sns_err!(
        sns.set_platform_application_attributes()
            .platform_application_arn(app)
            .attributes("PlatformPrincipal", "dummy")
            .send()
            .await,
        SetPlatformApplicationAttributesError::NotFoundException(_),
        "NotFound",
        404
    );
    assert_eq!(msg, "PlatformApplication does not exist");
    // Without attributes: the ARN's form is checked first, then their absence (AWS's order).
    let msg = assert_sns_err!(
        sns.set_platform_application_attributes()
            .platform_application_arn(app)
            .send()
            .await,
        _,
        "ValidationError",
        400
    );
    assert_eq!(
        msg,
        "1 validation error detected: Value null at 'attributes' failed to satisfy constraint: \
         Member must not be null"
    );
    let msg = assert_sns_err!(
        sns.set_platform_application_attributes()
            .platform_application_arn("invalid-arn")
            .send()
            .await,
        SetPlatformApplicationAttributesError::InvalidParameterException(_),
        "InvalidParameter",
        400
    );
    assert_eq!(
        msg,
        "Invalid parameter: PlatformApplicationArn Reason: An ARN must have at least 6 \
         elements, not 1"
    );
    let msg = assert_sns_err!(
        sns.get_endpoint_attributes()
            .endpoint_arn("arn:aws:sns:us-east-1:000000000000:endpoint/GCM/none/1")
            .send()
            .await,
        GetEndpointAttributesError::NotFoundException(_),
        "NotFound",
        404
    );
    assert_eq!(msg, "Endpoint does not exist");
}

/// Platform applications and endpoints, each rule's variants in a row: what AWS
/// recorded (LocalStack's `aws.validated` platform snapshots) and SNS API Reference,
/// CreatePlatformApplication / CreatePlatformEndpoint / SetEndpointAttributes.
#[tokio::test]
async fn platform_rules_as_aws_records_them() {
    let server = Server::start();
    let sns = server.sns();
    let err_of = |e: &dyn aws_sdk_sns::error::ProvideErrorMetadata| {
        (
            e.code().unwrap_or_default().to_owned(),
            e.message().unwrap_or_default().to_owned(),
        )
    };
    // CreatePlatformApplication: the credentials come in pairs; the platform is named.
    // (platform, attributes, the refusal's code and message, or None when accepted).
    type Case<'a> = (
        &'a str,
        &'a [(&'a str, &'a str)],
        Option<(&'a str, &'a str)>,
    );
    // GCM has no PlatformPrincipal: its PlatformCredential alone is the API key (SNS API
    // Reference, CreatePlatformApplication); every other platform takes the pair.
    let cases: [Case; 13] = [
        ("ADM", &[("PlatformPrincipal", "p")], Some(("InvalidParameter", "Invalid parameter: Attributes Reason: PlatformPrincipal attribute provided without PlatformCredential"))),
        ("ADM", &[("PlatformCredential", "c")], Some(("InvalidParameter", "Invalid parameter: Attributes Reason: PlatformCredential attribute provided without PlatformPrincipal"))),
        ("APNS", &[("PlatformCredential", "c")], Some(("InvalidParameter", "Invalid parameter: Attributes Reason: PlatformCredential attribute provided without PlatformPrincipal"))),
        ("APNS_SANDBOX", &[("PlatformCredential", "c")], Some(("InvalidParameter", "Invalid parameter: Attributes Reason: PlatformCredential attribute provided without PlatformPrincipal"))),
        ("BAIDU", &[("PlatformCredential", "c")], Some(("InvalidParameter", "Invalid parameter: Attributes Reason: PlatformCredential attribute provided without PlatformPrincipal"))),
        ("MPNS", &[("PlatformCredential", "c")], Some(("InvalidParameter", "Invalid parameter: Attributes Reason: PlatformCredential attribute provided without PlatformPrincipal"))),
        ("WNS", &[("PlatformCredential", "c")], Some(("InvalidParameter", "Invalid parameter: Attributes Reason: PlatformCredential attribute provided without PlatformPrincipal"))),
        ("GCM", &[("PlatformPrincipal", "p")], Some(("InvalidParameter", "Invalid parameter: Attributes Reason: PlatformPrincipal attribute provided without PlatformCredential"))),
        ("GCM", &[("PlatformCredential", "c")], None),
        ("GCM", &[("PlatformPrincipal", "p"), ("PlatformCredential", "c")], None),
        ("AAA", &[("PlatformPrincipal", "p"), ("PlatformCredential", "c")], Some(("InvalidParameter", "Invalid parameter: Platform Reason: AAA is not supported"))),
        ("ADM", &[], Some(("ValidationError", "1 validation error detected: Value null at 'attributes' failed to satisfy constraint: Member must not be null"))),
        ("ADM", &[("PlatformPrincipal", "p"), ("PlatformCredential", "c")], None),
    ];
    let mut app = String::new();
    for (platform, attrs, want) in cases {
        let mut req = sns
            .create_platform_application()
            .name("app1")
            .platform(platform);
        for (k, v) in attrs {
            req = req.attributes(*k, *v);
        }
        match (req.send().await, want) {
            (Ok(out), None) => app = out.platform_application_arn().expect("arn").to_owned(),
            (Err(e), Some((code, message))) => {
                assert_eq!(
                    err_of(&e),
                    (code.to_owned(), message.to_owned()),
                    "{platform} {attrs:?}"
                )
            }
            (got, want) => panic!("{platform} {attrs:?}: got {got:?}, want {want:?}"),
        }
    }
    // The credentials are not reported; Enabled is.
    let got = sns
        .get_platform_application_attributes()
        .platform_application_arn(&app)
        .send()
        .await
        .expect("GetPlatformApplicationAttributes");
    let want: std::collections::HashMap<String, String> =
        [("Enabled".to_owned(), "true".to_owned())].into();
    assert_eq!(got.attributes(), Some(&want));

    // Endpoint attributes: names, CustomUserData's size (2048 bytes pass, 2049 do not), for
    // CreatePlatformEndpoint and SetEndpointAttributes alike.
    let endpoint = sns
        .create_platform_endpoint()
        .platform_application_arn(&app)
        .token("token_1")
        .send()
        .await
        .expect("CreatePlatformEndpoint")
        .endpoint_arn()
        .expect("arn")
        .to_owned();
    let at_limit = "é".repeat(1024);
    let over = format!("{at_limit}a");
    let rows: [(&str, &str, Option<&str>); 6] = [
        ("PlatformPrincipal", "x", Some("Invalid parameter: Attributes Reason: Invalid attribute name: PlatformPrincipal")),
        ("PlatformCredential", "x", Some("Invalid parameter: Attributes Reason: Invalid attribute name: PlatformCredential")),
        ("InvalidKey", "x", Some("Invalid parameter: Attributes Reason: Invalid attribute name: InvalidKey")),
        ("CustomUserData", &over, Some("Invalid parameter: Attributes Reason: Invalid value for attribute: CustomUserData: must be at most 2048 bytes long in UTF-8 encoding")),
        ("CustomUserData", &at_limit, None),
        ("Enabled", "true", None),
    ];
    for (i, (name, value, want)) in rows.into_iter().enumerate() {
        let created = sns
            .create_platform_endpoint()
            .platform_application_arn(&app)
            .token(format!("row-{i}"))
            .attributes(name, value)
            .send()
            .await;
        let set = sns
            .set_endpoint_attributes()
            .endpoint_arn(&endpoint)
            .attributes(name, value)
            .send()
            .await;
        match want {
            None => {
                created.expect("CreatePlatformEndpoint");
                set.expect("SetEndpointAttributes");
            }
            Some(message) => {
                let want = ("InvalidParameter".to_owned(), message.to_owned());
                assert_eq!(err_of(&created.expect_err(name)), want, "create {name}");
                assert_eq!(err_of(&set.expect_err(name)), want, "set {name}");
            }
        }
    }
    // The same token: the same attributes answer the endpoint, others are refused.
    let again = sns
        .create_platform_endpoint()
        .platform_application_arn(&app)
        .token("row-5")
        .send()
        .await
        .expect("same token, same attributes");
    let same = again.endpoint_arn().expect("arn").to_owned();
    let e = sns
        .create_platform_endpoint()
        .platform_application_arn(&app)
        .token("row-5")
        .attributes("Enabled", "false")
        .send()
        .await
        .expect_err("same token, other attributes");
    assert_eq!(
        err_of(&e),
        (
            "InvalidParameter".to_owned(),
            format!("Invalid parameter: Token Reason: Endpoint {same} already exists with the same Token, but different attributes.")
        )
    );
    // CustomUserData both ways: the attribute's value is kept.
    let both = sns
        .create_platform_endpoint()
        .platform_application_arn(&app)
        .token("both")
        .custom_user_data("bar")
        .attributes("CustomUserData", "foo")
        .send()
        .await
        .expect("CreatePlatformEndpoint")
        .endpoint_arn()
        .expect("arn")
        .to_owned();
    let attrs = sns
        .get_endpoint_attributes()
        .endpoint_arn(&both)
        .send()
        .await
        .expect("GetEndpointAttributes");
    let attrs = attrs.attributes().expect("attributes");
    assert_eq!(attrs.get("CustomUserData").map(String::as_str), Some("foo"));
    // ARNs: elements first, then the slashes of the relative part.
    let bad_slashes = app.replace(":app/", ":endpoint/");
    let e = sns
        .set_endpoint_attributes()
        .endpoint_arn(&bad_slashes)
        .attributes("Enabled", "false")
        .send()
        .await
        .expect_err("two slashes");
    assert_eq!(
        err_of(&e),
        (
            "InvalidParameter".to_owned(),
            "Invalid parameter: EndpointArn Reason: Wrong number of slashes in relative portion of the ARN.".to_owned()
        )
    );
    // Enabled=false: Publish answers EndpointDisabled; true again: it is accepted.
    for (enabled, ok) in [("false", false), ("true", true)] {
        sns.set_endpoint_attributes()
            .endpoint_arn(&endpoint)
            .attributes("Enabled", enabled)
            .send()
            .await
            .expect("SetEndpointAttributes");
        let published = sns
            .publish()
            .target_arn(&endpoint)
            .message("m")
            .send()
            .await;
        match (published, ok) {
            (Ok(_), true) => {}
            (Err(e), false) => assert_eq!(
                err_of(&e),
                (
                    "EndpointDisabled".to_owned(),
                    "Endpoint is disabled".to_owned()
                )
            ),
            (got, _) => panic!("Enabled={enabled}: {got:?}"),
        }
    }
}

/// ConfirmSubscription's errors as AWS recorded them: the token is what is checked.
#[tokio::test]
async fn confirm_subscription_checks_the_token() {
    use aws_sdk_sns::error::ProvideErrorMetadata as _;
    let server = Server::start();
    let sns = server.sns();
    let topic = sns
        .create_topic()
        .name("confirm")
        .send()
        .await
        .expect("CreateTopic")
        .topic_arn()
        .expect("arn")
        .to_owned();
    let well_formed = "51b2ff3edb475b7d91550e0ab6edf0c1de2a34e6ebaf6c2262a001bcb7e051c4";
    let missing_topic = format!("{}i", &topic[..topic.len() - 1]);
    for (arn, token, message) in [
        (
            missing_topic.as_str(),
            well_formed,
            "Invalid parameter: Token",
        ),
        (topic.as_str(), "randomtoken", "Invalid token"),
        (topic.as_str(), well_formed, "Invalid parameter: Token"),
    ] {
        let e = sns
            .confirm_subscription()
            .topic_arn(arn)
            .token(token)
            .send()
            .await
            .expect_err("refused");
        assert_eq!(
            (e.code(), e.message()),
            (Some("InvalidParameter"), Some(message)),
            "{arn} {token}"
        );
    }
}

/// Subscribe with attributes: what GetSubscriptionAttributes reports (an empty FilterPolicy
/// is none, so neither it nor its scope), and Subscribe's words for a bad
/// RawMessageDelivery (SetSubscriptionAttributes words it without "Attributes Reason").
#[tokio::test]
async fn subscribe_with_attributes_reports_what_aws_reports() {
    use aws_sdk_sns::error::ProvideErrorMetadata as _;
    let server = Server::start();
    let (sns, sqs) = (server.sns(), server.sqs());
    let topic = sns
        .create_topic()
        .name("subattrs")
        .send()
        .await
        .expect("CreateTopic")
        .topic_arn()
        .expect("arn")
        .to_owned();
    sqs.create_queue()
        .queue_name("subattrs")
        .send()
        .await
        .expect("CreateQueue");
    let queue_arn = format!("arn:aws:sqs:us-east-1:{}:subattrs", crate::harness::ACCOUNT);
    let subscribe = |raw: &str| {
        sns.subscribe()
            .topic_arn(&topic)
            .protocol("sqs")
            .endpoint(&queue_arn)
            .attributes("RawMessageDelivery", raw)
            .attributes("FilterPolicyScope", "MessageBody")
            .attributes("FilterPolicy", "")
            .return_subscription_arn(true)
            .send()
    };
    let e = subscribe("wrongvalue").await.expect_err("bad value");
    assert_eq!(
        e.message(),
        Some("Invalid parameter: Attributes Reason: RawMessageDelivery: Invalid value [wrongvalue]. Must be true or false.")
    );
    let arn = subscribe("TrUe")
        .await
        .expect("Subscribe")
        .subscription_arn()
        .expect("arn")
        .to_owned();
    let got = sns
        .get_subscription_attributes()
        .subscription_arn(&arn)
        .send()
        .await
        .expect("GetSubscriptionAttributes");
    let mut names: Vec<&str> = got
        .attributes()
        .expect("attributes")
        .keys()
        .map(String::as_str)
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "ConfirmationWasAuthenticated",
            "Endpoint",
            "Owner",
            "PendingConfirmation",
            "Protocol",
            "RawMessageDelivery",
            "SubscriptionArn",
            "SubscriptionPrincipal",
            "TopicArn"
        ]
    );
    assert_eq!(got.attributes().unwrap()["RawMessageDelivery"], "true");
    let e = sns
        .set_subscription_attributes()
        .subscription_arn(&arn)
        .attribute_name("RawMessageDelivery")
        .attribute_value("test-ValUe")
        .send()
        .await
        .expect_err("bad value");
    assert_eq!(
        e.message(),
        Some("Invalid parameter: RawMessageDelivery: Invalid value [test-ValUe]. Must be true or false.")
    );
}

/// What GetSubscriptionAttributes reports after Subscribe with attributes, one row per
/// protocol and attribute set (AWS's recorded answers for sqs, lambda, sms and http; SNS
/// Developer Guide "Amazon SNS raw message delivery": raw delivery for SQS, HTTP/S and
/// Firehose only; SNS API Reference, Subscribe: SubscriptionRoleArn for firehose). Every
/// subscription reports the nine base attributes; http/https also EffectiveDeliveryPolicy;
/// a FilterPolicy brings its FilterPolicyScope (MessageAttributes unless given); a
/// RedrivePolicy or SubscriptionRoleArn given is reported as given. HTTP/S and email
/// subscriptions wait for confirmation (PendingConfirmation true,
/// ConfirmationWasAuthenticated false); the others are confirmed at once.
#[tokio::test]
async fn subscription_attributes_by_protocol() {
    use aws_sdk_sns::error::ProvideErrorMetadata as _;
    const BASE: [&str; 9] = [
        "ConfirmationWasAuthenticated",
        "Endpoint",
        "Owner",
        "PendingConfirmation",
        "Protocol",
        "RawMessageDelivery",
        "SubscriptionArn",
        "SubscriptionPrincipal",
        "TopicArn",
    ];
    let server = Server::start();
    let (sns, sqs) = (server.sns(), server.sqs());
    let topic = sns
        .create_topic()
        .name("byprotocol")
        .send()
        .await
        .expect("CreateTopic")
        .topic_arn()
        .expect("arn")
        .to_owned();
    for q in ["bp-target", "bp-dlq"] {
        sqs.create_queue()
            .queue_name(q)
            .send()
            .await
            .expect("CreateQueue");
    }
    let queue = server.queue_arn("bp-target");
    let redrive = json!({"deadLetterTargetArn": server.queue_arn("bp-dlq")}).to_string();
    let lambda = format!(
        "arn:aws:lambda:us-east-1:{}:function:bp",
        crate::harness::ACCOUNT
    );
    let firehose = format!(
        "arn:aws:firehose:us-east-1:{}:deliverystream/bp",
        crate::harness::ACCOUNT
    );
    let role = format!("arn:aws:iam::{}:role/bp", crate::harness::ACCOUNT);
    let policy = r#"{"color":["red"]}"#;
    // (protocol, endpoint, attributes given, Ok(extra names, pending) or Err(code))
    type Row<'a> = (
        &'a str,
        String,
        Vec<(&'a str, String)>,
        Result<(Vec<&'a str>, bool), &'a str>,
    );
    let rows: Vec<Row> = vec![
        ("sqs", queue.clone(), vec![], Ok((vec![], false))),
        (
            "sqs",
            queue.clone(),
            vec![
                ("RawMessageDelivery", "true".into()),
                ("FilterPolicy", policy.into()),
            ],
            Ok((vec!["FilterPolicy", "FilterPolicyScope"], false)),
        ),
        (
            "sqs",
            queue.clone(),
            vec![
                ("FilterPolicy", policy.into()),
                ("FilterPolicyScope", "MessageBody".into()),
            ],
            Ok((vec!["FilterPolicy", "FilterPolicyScope"], false)),
        ),
        (
            "sqs",
            queue.clone(),
            vec![("RedrivePolicy", redrive.clone())],
            Ok((vec!["RedrivePolicy"], false)),
        ),
        (
            "lambda",
            lambda.clone(),
            vec![("RedrivePolicy", redrive.clone())],
            Ok((vec!["RedrivePolicy"], false)),
        ),
        (
            "lambda",
            lambda.clone(),
            vec![("RawMessageDelivery", "true".into())],
            Err("InvalidParameter"),
        ),
        ("sms", "+15555550100".into(), vec![], Ok((vec![], false))),
        (
            "sms",
            "+15555550101".into(),
            vec![("RawMessageDelivery", "true".into())],
            Err("InvalidParameter"),
        ),
        (
            "http",
            "http://127.0.0.1:9/a".into(),
            vec![],
            Ok((vec!["EffectiveDeliveryPolicy"], true)),
        ),
        (
            "https",
            "https://127.0.0.1:9/b".into(),
            vec![
                ("RawMessageDelivery", "true".into()),
                ("FilterPolicy", policy.into()),
            ],
            Ok((
                vec![
                    "EffectiveDeliveryPolicy",
                    "FilterPolicy",
                    "FilterPolicyScope",
                ],
                true,
            )),
        ),
        ("email", "bp@example.com".into(), vec![], Ok((vec![], true))),
        (
            "firehose",
            firehose.clone(),
            vec![
                ("SubscriptionRoleArn", role.clone()),
                ("RawMessageDelivery", "true".into()),
            ],
            Ok((vec!["SubscriptionRoleArn"], false)),
        ),
        (
            "firehose",
            firehose.clone(),
            vec![],
            Err("InvalidParameter"),
        ),
        (
            "sqs",
            queue.clone(),
            vec![("SubscriptionRoleArn", role.clone())],
            Err("InvalidParameter"),
        ),
    ];
    for (protocol, endpoint, given, expected) in rows {
        let mut req = sns
            .subscribe()
            .topic_arn(&topic)
            .protocol(protocol)
            .endpoint(&endpoint)
            .return_subscription_arn(true);
        for (k, v) in &given {
            req = req.attributes(*k, v);
        }
        let got = req.send().await;
        let arn;
        let (extra, pending) = match (expected, got) {
            (Err(code), Err(e)) => {
                assert_eq!(e.code(), Some(code), "{protocol} {given:?}");
                continue;
            }
            (Ok(want), Ok(out)) => {
                // ReturnSubscriptionArn: the ARN even while confirmation is pending.
                arn = out.subscription_arn().expect("arn").to_owned();
                want
            }
            (want, got) => panic!("{protocol} {given:?}: wanted {want:?}, got {got:?}"),
        };
        let attrs = sns
            .get_subscription_attributes()
            .subscription_arn(&arn)
            .send()
            .await
            .expect("GetSubscriptionAttributes")
            .attributes
            .unwrap_or_default();
        let mut names: Vec<&str> = attrs.keys().map(String::as_str).collect();
        names.sort();
        let mut want: Vec<&str> = BASE.iter().copied().chain(extra).collect();
        want.sort();
        assert_eq!(names, want, "{protocol} {given:?}");
        assert_eq!(attrs["Protocol"], protocol);
        assert_eq!(attrs["Endpoint"], endpoint);
        assert_eq!(attrs["PendingConfirmation"], pending.to_string());
        assert_eq!(
            attrs["ConfirmationWasAuthenticated"],
            (!pending).to_string()
        );
        let raw = given
            .iter()
            .find(|(k, _)| *k == "RawMessageDelivery")
            .map_or("false", |(_, v)| v.as_str());
        assert_eq!(attrs["RawMessageDelivery"], raw, "{protocol} {given:?}");
        for (k, v) in &given {
            if *k != "RawMessageDelivery" {
                assert_eq!(&attrs[*k], v, "{protocol}: {k}");
            }
        }
        if given.iter().any(|(k, _)| *k == "FilterPolicy")
            && !given.iter().any(|(k, _)| *k == "FilterPolicyScope")
        {
            assert_eq!(attrs["FilterPolicyScope"], "MessageAttributes");
        }
        // The next row of the same endpoint starts from scratch.
        sns.unsubscribe()
            .subscription_arn(&arn)
            .send()
            .await
            .expect("Unsubscribe");
    }
}

/// `MessageStructure=json` for each subscriber protocol (SNS API Reference, Publish,
/// MessageStructure; SNS Developer Guide, "Sending custom platform-specific payloads to
/// mobile devices"): each subscriber gets the string under its protocol's key (`sqs`,
/// `email`, `email-json`, `sms`, `lambda`, `firehose`; a mobile endpoint its platform's,
/// `GCM`, `APNS`), else `default`; a key whose value is not a string counts as absent.
/// Raw and envelope SQS delivery alike, and a Publish straight to an endpoint or a phone
/// number likewise.
#[tokio::test]
async fn message_structure_json_by_protocol() {
    let server = Server::start();
    let (sns, sqs) = (server.sns(), server.sqs());
    let topic = sns
        .create_topic()
        .name("structured")
        .send()
        .await
        .expect("CreateTopic")
        .topic_arn()
        .expect("arn")
        .to_owned();
    let account = crate::harness::ACCOUNT;
    let mut endpoints: Vec<(&str, String, &str)> = Vec::new(); // (protocol, endpoint, key)
    for (q, raw) in [("st-envelope", false), ("st-raw", true)] {
        sqs.create_queue()
            .queue_name(q)
            .send()
            .await
            .expect("CreateQueue");
        let mut req = sns
            .subscribe()
            .topic_arn(&topic)
            .protocol("sqs")
            .endpoint(server.queue_arn(q));
        if raw {
            req = req.attributes("RawMessageDelivery", "true");
        }
        req.send().await.expect("Subscribe sqs");
    }
    for (platform, name) in [("GCM", "st-gcm"), ("APNS", "st-apns")] {
        let app = sns
            .create_platform_application()
            .name(name)
            .platform(platform)
            .attributes("PlatformPrincipal", "p")
            .attributes("PlatformCredential", "c")
            .send()
            .await
            .expect("CreatePlatformApplication")
            .platform_application_arn()
            .expect("arn")
            .to_owned();
        let endpoint = sns
            .create_platform_endpoint()
            .platform_application_arn(app)
            .token(format!("token-{name}"))
            .send()
            .await
            .expect("CreatePlatformEndpoint")
            .endpoint_arn()
            .expect("arn")
            .to_owned();
        endpoints.push(("application", endpoint, platform));
    }
    endpoints.extend([
        ("email", "st@example.com".to_owned(), "email"),
        ("email-json", "st-json@example.com".to_owned(), "email-json"),
        ("sms", "+15555550142".to_owned(), "sms"),
        (
            "firehose",
            format!("arn:aws:firehose:us-east-1:{account}:deliverystream/st"),
            "firehose",
        ),
    ]);
    for (protocol, endpoint, _) in &endpoints {
        let mut req = sns
            .subscribe()
            .topic_arn(&topic)
            .protocol(*protocol)
            .endpoint(endpoint);
        if *protocol == "firehose" {
            req = req.attributes(
                "SubscriptionRoleArn",
                format!("arn:aws:iam::{account}:role/st"),
            );
        }
        let arn = req
            .return_subscription_arn(true)
            .send()
            .await
            .expect("Subscribe")
            .subscription_arn()
            .expect("arn")
            .to_owned();
        if protocol.starts_with("email") {
            // Email waits for its confirmation: confirm with the token Loft recorded.
            let token = confirmation_token(&server, endpoint).await;
            sns.confirm_subscription()
                .topic_arn(&topic)
                .token(token)
                .send()
                .await
                .unwrap_or_else(|e| panic!("ConfirmSubscription {arn}: {e:?}"));
        }
    }
    let keys = [
        "sqs",
        "email",
        "email-json",
        "sms",
        "firehose",
        "GCM",
        "APNS",
    ];
    // (message, what the key `k` delivers)
    type Row = (serde_json::Value, fn(&str) -> String);
    let rows: [Row; 4] = [
        (
            json!({"default": "d", "sqs": "for sqs", "email": "for email", "email-json": "for email-json",
                   "sms": "for sms", "firehose": "for firehose", "GCM": "for GCM", "APNS": "for APNS"}),
            |k| format!("for {k}"),
        ),
        (json!({"default": "only default"}), |_| {
            "only default".into()
        }),
        (
            json!({"default": "d2", "sqs": {"nested": 1}, "email": 5, "email-json": null, "sms": ["x"],
                   "firehose": true, "GCM": {"notification": {}}, "APNS": 1.5}),
            |_| "d2".into(),
        ),
        (
            json!({"default": "d3", "http": "for http", "lambda": "for lambda", "gcm": "lower case"}),
            |_| "d3".into(),
        ),
    ];
    for (message, want) in rows {
        clear_recorded(&server).await;
        sns.publish()
            .topic_arn(&topic)
            .message_structure("json")
            .message(message.to_string())
            .send()
            .await
            .expect("Publish");
        for (q, raw) in [("st-envelope", false), ("st-raw", true)] {
            let url = sqs
                .get_queue_url()
                .queue_name(q)
                .send()
                .await
                .expect("GetQueueUrl")
                .queue_url()
                .expect("url")
                .to_owned();
            let got = sqs
                .receive_message()
                .queue_url(&url)
                .max_number_of_messages(10)
                .send()
                .await
                .expect("ReceiveMessage");
            let msgs = got.messages();
            assert_eq!(msgs.len(), 1, "{q}: {message}");
            let body = msgs[0].body().unwrap();
            let text = if raw {
                body.to_owned()
            } else {
                let env: serde_json::Value = serde_json::from_str(body).expect("envelope");
                env["Message"].as_str().unwrap().to_owned()
            };
            assert_eq!(text, want("sqs"), "{q}: {message}");
            sqs.delete_message()
                .queue_url(&url)
                .receipt_handle(msgs[0].receipt_handle().unwrap())
                .send()
                .await
                .expect("DeleteMessage");
        }
        let recorded = recorded_messages(&server).await;
        for (protocol, endpoint, key) in &endpoints {
            assert!(keys.contains(key));
            let got = recorded
                .iter()
                .find(|(_, e, _)| e == endpoint)
                .unwrap_or_else(|| panic!("nothing recorded for {protocol} {endpoint}"));
            assert_eq!(
                carried_text(&got.2),
                want(key),
                "{protocol} ({key}): {message}: {}",
                got.2
            );
        }
    }
    // Straight to an endpoint or a phone number: the platform's key, the `sms` key.
    for (target, key) in [(&endpoints[0].1, "GCM"), (&endpoints[1].1, "APNS")] {
        clear_recorded(&server).await;
        sns.publish()
            .target_arn(target)
            .message_structure("json")
            .message(json!({"default": "d", "GCM": "for GCM", "APNS": "for APNS"}).to_string())
            .send()
            .await
            .expect("Publish to an endpoint");
        let recorded = recorded_messages(&server).await;
        assert_eq!(recorded.len(), 1);
        assert_eq!(carried_text(&recorded[0].2), format!("for {key}"));
    }
    clear_recorded(&server).await;
    sns.publish()
        .phone_number("+15555550143")
        .message_structure("json")
        .message(json!({"default": "d", "sms": "for sms"}).to_string())
        .send()
        .await
        .expect("Publish to a phone number");
    let recorded = recorded_messages(&server).await;
    assert_eq!(recorded.len(), 1);
    assert_eq!(carried_text(&recorded[0].2), "for sms");

    /// The text a recorded message carries: itself, or an envelope's `Message`.
    fn carried_text(recorded: &str) -> String {
        match serde_json::from_str::<serde_json::Value>(recorded) {
            Ok(v) if v["Message"].is_string() => v["Message"].as_str().unwrap().to_owned(),
            _ => recorded.to_owned(),
        }
    }

    async fn recorded_messages(server: &Server) -> Vec<(String, String, String)> {
        let list: serde_json::Value = reqwest::get(format!("{}/_loft/sns/messages", server.url))
            .await
            .expect("GET /_loft/sns/messages")
            .json()
            .await
            .expect("JSON");
        list.as_array()
            .expect("a list")
            .iter()
            .map(|m| {
                (
                    m["protocol"].as_str().unwrap().to_owned(),
                    m["endpoint"].as_str().unwrap().to_owned(),
                    m["message"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    }

    async fn clear_recorded(server: &Server) {
        reqwest::Client::new()
            .delete(format!("{}/_loft/sns/messages", server.url))
            .send()
            .await
            .expect("DELETE /_loft/sns/messages");
    }

    /// The confirmation token of the subscription confirmation recorded for `endpoint`.
    async fn confirmation_token(server: &Server, endpoint: &str) -> String {
        let recorded = recorded_messages(server).await;
        let (_, _, message) = recorded
            .iter()
            .find(|(_, e, _)| e == endpoint)
            .unwrap_or_else(|| panic!("no confirmation recorded for {endpoint}"));
        let at = message.find("Token=").expect("a SubscribeURL with a token") + "Token=".len();
        message[at..]
            .chars()
            .take_while(|c| c.is_ascii_hexdigit())
            .collect()
    }
}

/// A filter policy that is refused says where it was given: Subscribe's refusal reads
/// "Invalid parameter: Attributes Reason: FilterPolicy: ...", SetSubscriptionAttributes'
/// "Invalid parameter: FilterPolicy: ..." (AWS's answers recorded for both: Subscribe in
/// `test_subscribe_invalid_filter_policy` and the filter-policy validation snapshots,
/// SetSubscriptionAttributes in `test_validate_set_sub_attributes`). One row per kind of
/// refusal: not JSON, a nested array as a value, a numeric range with a string.
#[tokio::test]
async fn a_refused_filter_policy_names_where_it_was_given() {
    let server = Server::start();
    let sns = server.sns();
    let topic = create_topic(&sns, "filtered", &[]).await;
    create_queue(&server.sqs(), "filtered-q", &[]).await;
    let arn = subscribe_queue(&server, &topic, "filtered-q", &[]).await;
    for (policy, reason) in [
        ("invalid", "FilterPolicy: failed to parse JSON."),
        (
            r#"{"key":[["value"]]}"#,
            "FilterPolicy: Match value must be String, number, true, false, or null",
        ),
        (
            r#"{"key":[{"numeric":[">","a"]}]}"#,
            "FilterPolicy: Value of > must be numeric",
        ),
    ] {
        let msg = assert_sns_err!(
            sns.subscribe()
                .topic_arn(&topic)
                .protocol("sqs")
                .endpoint(server.queue_arn("filtered-q"))
                .attributes("FilterPolicy", policy)
                .send()
                .await,
            SubscribeError::InvalidParameterException(_),
            "InvalidParameter",
            400
        );
        assert!(
            msg.starts_with(&format!("Invalid parameter: Attributes Reason: {reason}")),
            "Subscribe with {policy}: {msg}"
        );
        let msg = assert_sns_err!(
            sns.set_subscription_attributes()
                .subscription_arn(&arn)
                .attribute_name("FilterPolicy")
                .attribute_value(policy)
                .send()
                .await,
            SetSubscriptionAttributesError::InvalidParameterException(_),
            "InvalidParameter",
            400
        );
        assert!(
            msg.starts_with(&format!("Invalid parameter: {reason}")),
            "SetSubscriptionAttributes with {policy}: {msg}"
        );
    }
}

/// FilterPolicyScope takes exactly `MessageAttributes` or `MessageBody` (SNS API Reference,
/// SetSubscriptionAttributes); anything else, any case or spacing, is refused in AWS's
/// words (recorded for SetSubscriptionAttributes, `test_set_subscription_filter_policy_scope`:
/// "Invalid parameter: FilterPolicyScope: Invalid value [RandomValue]. Please use either
/// MessageBody or MessageAttributes"), with "Attributes Reason: " before them at Subscribe,
/// and the subscription's scope is left as it was. Raw and envelope subscriptions alike.
#[tokio::test]
async fn a_filter_policy_scope_is_one_of_two_names() {
    let server = Server::start();
    let sns = server.sns();
    let topic = create_topic(&sns, "scoped", &[]).await;
    create_queue(&server.sqs(), "scoped-q", &[]).await;
    for raw in ["false", "true"] {
        let arn = subscribe_queue(
            &server,
            &topic,
            "scoped-q",
            &[
                ("RawMessageDelivery", raw),
                ("FilterPolicy", r#"{"a":["x"]}"#),
                ("FilterPolicyScope", "MessageBody"),
            ],
        )
        .await;
        for value in [
            "RandomValue",
            "",
            "messagebody",
            "MESSAGEATTRIBUTES",
            " MessageBody",
            "MessageAttributes ",
            "Body",
            "MessageAttributes,MessageBody",
        ] {
            let words = format!(
                "FilterPolicyScope: Invalid value [{value}]. Please use either MessageBody or MessageAttributes"
            );
            let msg = assert_sns_err!(
                sns.set_subscription_attributes()
                    .subscription_arn(&arn)
                    .attribute_name("FilterPolicyScope")
                    .attribute_value(value)
                    .send()
                    .await,
                SetSubscriptionAttributesError::InvalidParameterException(_),
                "InvalidParameter",
                400
            );
            assert_eq!(msg, format!("Invalid parameter: {words}"), "Set {value:?}");
            let msg = assert_sns_err!(
                sns.subscribe()
                    .topic_arn(&topic)
                    .protocol("sqs")
                    .endpoint(server.queue_arn("scoped-q"))
                    .attributes("RawMessageDelivery", raw)
                    .attributes("FilterPolicy", r#"{"a":["x"]}"#)
                    .attributes("FilterPolicyScope", value)
                    .send()
                    .await,
                SubscribeError::InvalidParameterException(_),
                "InvalidParameter",
                400
            );
            assert_eq!(
                msg,
                format!("Invalid parameter: Attributes Reason: {words}"),
                "Subscribe {value:?}"
            );
            let attrs = sns
                .get_subscription_attributes()
                .subscription_arn(&arn)
                .send()
                .await
                .unwrap();
            let scope = attrs.attributes().and_then(|a| a.get("FilterPolicyScope"));
            assert_eq!(
                scope.map(String::as_str),
                Some("MessageBody"),
                "after {value:?}"
            );
        }
        for value in ["MessageAttributes", "MessageBody"] {
            sns.set_subscription_attributes()
                .subscription_arn(&arn)
                .attribute_name("FilterPolicyScope")
                .attribute_value(value)
                .send()
                .await
                .unwrap_or_else(|e| panic!("{value}: {e:?}"));
        }
        sns.unsubscribe()
            .subscription_arn(&arn)
            .send()
            .await
            .unwrap();
    }
}

/// Inside `anything-but`, SNS takes one operator, `prefix` (SNS Developer Guide, "String
/// value matching"); any other name is refused by name, whatever its operand, in AWS's
/// words (recorded, `test_validate_policy_nested_anything_but_operator`: "Unsupported
/// anything-but pattern: suffix"), at Subscribe and at SetSubscriptionAttributes, in both
/// scopes; `prefix` is taken.
#[tokio::test]
async fn anything_but_takes_only_a_prefix() {
    let server = Server::start();
    let sns = server.sns();
    let topic = create_topic(&sns, "anything-but", &[]).await;
    create_queue(&server.sqs(), "anything-but-q", &[]).await;
    let arn = subscribe_queue(&server, &topic, "anything-but-q", &[]).await;
    for scope in ["MessageAttributes", "MessageBody"] {
        for (op, operand) in [
            ("suffix", r#""test""#),
            ("suffix", "1"),
            ("exists", "false"),
            ("equals-ignore-case", r#""A""#),
            ("wrong-operator", "null"),
        ] {
            let policy = format!(r#"{{"key":[{{"anything-but":{{"{op}":{operand}}}}}]}}"#);
            let reason = format!("FilterPolicy: Unsupported anything-but pattern: {op}");
            let msg = assert_sns_err!(
                sns.subscribe()
                    .topic_arn(&topic)
                    .protocol("sqs")
                    .endpoint(server.queue_arn("anything-but-q"))
                    .attributes("FilterPolicyScope", scope)
                    .attributes("FilterPolicy", &policy)
                    .send()
                    .await,
                SubscribeError::InvalidParameterException(_),
                "InvalidParameter",
                400
            );
            assert_eq!(
                msg,
                format!("Invalid parameter: Attributes Reason: {reason}"),
                "Subscribe {scope} {policy}"
            );
            sns.set_subscription_attributes()
                .subscription_arn(&arn)
                .attribute_name("FilterPolicyScope")
                .attribute_value(scope)
                .send()
                .await
                .unwrap();
            let msg = assert_sns_err!(
                sns.set_subscription_attributes()
                    .subscription_arn(&arn)
                    .attribute_name("FilterPolicy")
                    .attribute_value(&policy)
                    .send()
                    .await,
                SetSubscriptionAttributesError::InvalidParameterException(_),
                "InvalidParameter",
                400
            );
            assert_eq!(
                msg,
                format!("Invalid parameter: {reason}"),
                "Set {scope} {policy}"
            );
        }
        sns.set_subscription_attributes()
            .subscription_arn(&arn)
            .attribute_name("FilterPolicy")
            .attribute_value(r#"{"key":[{"anything-but":{"prefix":"test-"}}]}"#)
            .send()
            .await
            .unwrap();
    }
}
