//! AWS's rules for SNS parameters and attributes, each over its variants (issue 33): the
//! spelling of Subscribe's Protocol, RawMessageDelivery's values, topic attributes. Each
//! test names its source: the SNS API Reference, the botocore model `sns/2010-03-31`,
//! AWS's recorded answers (LocalStack's `aws.validated` snapshots), or, where AWS's words
//! are not known, says the words are Loft's (docs/conformance.md, "Rules by area").

use aws_sdk_sns::operation::set_subscription_attributes::SetSubscriptionAttributesError;
use aws_sdk_sns::operation::subscribe::SubscribeError;

use crate::*;

/// Subscribe's Protocol in any ASCII case names its protocol, and the subscription reports
/// the lower-case wire name (Get, ListSubscriptionsByTopic); subscribing again in another
/// case is the same subscription. Anything else is refused in AWS's recorded words
/// (`test_subscribe_with_invalid_protocol`), naming the protocol as given.
#[tokio::test]
async fn a_protocol_in_any_case_is_its_protocol() {
    let server = Server::start();
    let sns = server.sns();
    let topic = create_topic(&sns, "spellings", &[]).await;
    let queue = server.queue_arn("spelled");
    for (given, endpoint, reported) in [
        ("SQS", queue.as_str(), "sqs"),
        ("EMAIL", "someone@example.com", "email"),
        ("Email-JSON", "someone@example.com", "email-json"),
        ("Sms", "+15551234567", "sms"),
    ] {
        let arn = sns
            .subscribe()
            .topic_arn(&topic)
            .protocol(given)
            .endpoint(endpoint)
            .return_subscription_arn(true)
            .send()
            .await
            .unwrap_or_else(|e| panic!("Subscribe {given}: {e:?}"))
            .subscription_arn()
            .expect("arn")
            .to_owned();
        let attrs = sns
            .get_subscription_attributes()
            .subscription_arn(&arn)
            .send()
            .await
            .expect("GetSubscriptionAttributes");
        assert_eq!(attrs.attributes().unwrap()["Protocol"], reported, "{given}");
        // The same protocol in its own spelling is the same subscription.
        let again = sns
            .subscribe()
            .topic_arn(&topic)
            .protocol(reported)
            .endpoint(endpoint)
            .return_subscription_arn(true)
            .send()
            .await
            .expect("Subscribe again");
        assert_eq!(again.subscription_arn(), Some(arn.as_str()), "{given}");
    }
    let listed = sns
        .list_subscriptions_by_topic()
        .topic_arn(&topic)
        .send()
        .await
        .expect("ListSubscriptionsByTopic");
    let mut protocols: Vec<&str> = listed
        .subscriptions()
        .iter()
        .filter_map(|s| s.protocol())
        .collect();
    protocols.sort();
    assert_eq!(protocols, ["email", "email-json", "sms", "sqs"]);
    for given in [
        "test-protocol",
        "SMTP",
        "Email_Json",
        " sqs",
        "sqs ",
        "\u{17f}qs",
    ] {
        let msg = assert_sns_err!(
            sns.subscribe()
                .topic_arn(&topic)
                .protocol(given)
                .endpoint("someone@example.com")
                .send()
                .await,
            SubscribeError::InvalidParameterException(_),
            "InvalidParameter",
            400
        );
        assert_eq!(
            msg,
            format!("Invalid parameter: Amazon SNS does not support this protocol string: {given}"),
            "{given:?}"
        );
    }
}

/// RawMessageDelivery is `true` or `false` in any ASCII case, read back lower-case and
/// acted on (a `TRUE` subscription receives the raw message); any other value, empty
/// included, is refused in AWS's recorded words, at Subscribe after "Attributes Reason: "
/// (`test_create_subscriptions_with_attributes`) and at SetSubscriptionAttributes without
/// it (`test_validate_set_sub_attributes`), and the subscription keeps its value.
#[tokio::test]
async fn raw_message_delivery_is_true_or_false_in_any_case() {
    let server = Server::start();
    let sns = server.sns();
    let sqs = server.sqs();
    let topic = create_topic(&sns, "raw-values", &[]).await;
    let taken = [
        ("TRUE", "true"),
        ("True", "true"),
        ("FALSE", "false"),
        ("fAlSe", "false"),
    ];
    let refused = ["", "yes", "1", " true", "wrongvalue"];
    for (i, (given, kept)) in taken.iter().enumerate() {
        let name = format!("raw-{i}");
        let url = create_queue(&sqs, &name, &[]).await;
        let arn = subscribe_queue(&server, &topic, &name, &[("RawMessageDelivery", *given)]).await;
        let attrs = subscription_attributes(&sns, &arn).await;
        assert_eq!(attrs["RawMessageDelivery"], *kept, "Subscribe {given:?}");
        sns.publish()
            .topic_arn(&topic)
            .message("as-is")
            .send()
            .await
            .expect("Publish");
        let got = receive_exactly(&sqs, &url, 1).await;
        let body = got[0].body().unwrap_or_default();
        if *kept == "true" {
            assert_eq!(body, "as-is", "{given:?}");
        } else {
            assert_eq!(json_of(body)["Message"], "as-is", "{given:?}");
        }
        sns.unsubscribe()
            .subscription_arn(&arn)
            .send()
            .await
            .expect("Unsubscribe");
    }
    create_queue(&sqs, "raw-set", &[]).await;
    let arn = subscribe_queue(&server, &topic, "raw-set", &[]).await;
    for (given, kept) in taken {
        sns.set_subscription_attributes()
            .subscription_arn(&arn)
            .attribute_name("RawMessageDelivery")
            .attribute_value(given)
            .send()
            .await
            .unwrap_or_else(|e| panic!("Set {given:?}: {e:?}"));
        assert_eq!(
            subscription_attributes(&sns, &arn).await["RawMessageDelivery"],
            kept
        );
    }
    for given in refused {
        let msg = assert_sns_err!(
            sns.subscribe()
                .topic_arn(&topic)
                .protocol("sqs")
                .endpoint(server.queue_arn("raw-refused"))
                .attributes("RawMessageDelivery", given)
                .send()
                .await,
            SubscribeError::InvalidParameterException(_),
            "InvalidParameter",
            400
        );
        assert_eq!(
            msg,
            format!("Invalid parameter: Attributes Reason: RawMessageDelivery: Invalid value [{given}]. Must be true or false."),
            "Subscribe {given:?}"
        );
        let msg = assert_sns_err!(
            sns.set_subscription_attributes()
                .subscription_arn(&arn)
                .attribute_name("RawMessageDelivery")
                .attribute_value(given)
                .send()
                .await,
            SetSubscriptionAttributesError::InvalidParameterException(_),
            "InvalidParameter",
            400
        );
        assert_eq!(
            msg,
            format!("Invalid parameter: RawMessageDelivery: Invalid value [{given}]. Must be true or false."),
            "Set {given:?}"
        );
        assert_eq!(
            subscription_attributes(&sns, &arn).await["RawMessageDelivery"],
            "false",
            "kept after {given:?}"
        );
    }
}

/// Topic attributes at CreateTopic and SetTopicAttributes: DisplayName up to 100
/// characters (CloudFormation's AWS::SNS::Topic; refused as "Invalid parameter: Attributes
/// Reason: DisplayName" at CreateTopic, AWS's words quoted from real accounts, and
/// "Invalid parameter: DisplayName" at Set); a Policy that is not a JSON object ("Policy
/// Error: null"); `*FeedbackRoleArn` an IAM role's ARN; `*SuccessFeedbackSampleRate` 0 to
/// 100; names the two operations do not list ("Invalid parameter: AttributeName"). A
/// refused Create makes no topic; a refused Set keeps the value before it.
#[tokio::test]
async fn topic_attributes_follow_the_api_reference() {
    use aws_sdk_sns::operation::create_topic::CreateTopicError;
    use aws_sdk_sns::operation::set_topic_attributes::SetTopicAttributesError;
    let server = Server::start();
    let sns = server.sns();
    let long = |n: usize| "n".repeat(n);
    let role = "arn:aws:iam::000000000000:role/SNSFeedback";
    let taken: Vec<(&str, String)> = vec![
        ("DisplayName", long(100)),
        ("DisplayName", "\u{e9}".repeat(100)),
        ("DisplayName", "with spaces\tand_tabs-".into()),
        (
            "Policy",
            r#"{"Version":"2012-10-17","Statement":[]}"#.into(),
        ),
        ("LambdaSuccessFeedbackRoleArn", role.into()),
        ("LambdaSuccessFeedbackSampleRate", "100".into()),
        ("SQSFailureFeedbackRoleArn", role.into()),
    ];
    for (i, (name, value)) in taken.iter().enumerate() {
        let created = create_topic(&sns, &format!("taken-{i}"), &[(*name, value.as_str())]).await;
        assert_eq!(
            topic_attributes(&sns, &created).await[*name],
            *value,
            "Create {name}"
        );
        let set = create_topic(&sns, &format!("set-{i}"), &[]).await;
        sns.set_topic_attributes()
            .topic_arn(&set)
            .attribute_name(*name)
            .attribute_value(value)
            .send()
            .await
            .unwrap_or_else(|e| panic!("Set {name}={value:?}: {e:?}"));
        assert_eq!(
            topic_attributes(&sns, &set).await[*name],
            *value,
            "Set {name}"
        );
    }
    // (name, value, what follows "Invalid parameter: " [and "Attributes Reason: "]);
    // `None`: "Invalid parameter: AttributeName" at both.
    let refused: Vec<(&str, String, Option<String>)> = vec![
        ("DisplayName", long(101), Some("DisplayName".into())),
        (
            "DisplayName",
            "\u{e9}".repeat(101),
            Some("DisplayName".into()),
        ),
        (
            "Policy",
            "not json".into(),
            Some("Policy Error: null".into()),
        ),
        ("Policy", "[]".into(), Some("Policy Error: null".into())),
        (
            "LambdaSuccessFeedbackRoleArn",
            "not-an-arn".into(),
            Some("LambdaSuccessFeedbackRoleArn: invalid value".into()),
        ),
        (
            "LambdaSuccessFeedbackSampleRate",
            "101".into(),
            Some("LambdaSuccessFeedbackSampleRate: invalid value".into()),
        ),
        (
            "LambdaSuccessFeedbackSampleRate",
            "half".into(),
            Some("LambdaSuccessFeedbackSampleRate: invalid value".into()),
        ),
        ("Unknown", "x".into(), None),
        ("displayname", "x".into(), None),
        ("SubscriptionsConfirmed", "1".into(), None),
    ];
    let kept = create_topic(&sns, "kept", &[("DisplayName", "before")]).await;
    for (name, value, what) in &refused {
        let create_words = match what {
            Some(w) => format!("Invalid parameter: Attributes Reason: {w}"),
            None => "Invalid parameter: AttributeName".into(),
        };
        let set_words = match what {
            Some(w) => format!("Invalid parameter: {w}"),
            None => "Invalid parameter: AttributeName".into(),
        };
        let msg = assert_sns_err!(
            sns.create_topic()
                .name("refused")
                .attributes(*name, value)
                .send()
                .await,
            CreateTopicError::InvalidParameterException(_),
            "InvalidParameter",
            400
        );
        assert_eq!(msg, create_words, "Create {name}={value:?}");
        let msg = assert_sns_err!(
            sns.set_topic_attributes()
                .topic_arn(&kept)
                .attribute_name(*name)
                .attribute_value(value)
                .send()
                .await,
            SetTopicAttributesError::InvalidParameterException(_),
            "InvalidParameter",
            400
        );
        assert_eq!(msg, set_words, "Set {name}={value:?}");
    }
    let listed = sns.list_topics().send().await.expect("ListTopics");
    assert!(
        !listed
            .topics()
            .iter()
            .any(|t| t.topic_arn().is_some_and(|a| a.ends_with(":refused"))),
        "a refused CreateTopic made a topic"
    );
    assert_eq!(topic_attributes(&sns, &kept).await["DisplayName"], "before");
}

/// Tags at TagResource, CreateTopic and UntagResource: keys of 1 to 128 characters and
/// values of up to 256 (SNS API Reference, Tag), else `ValidationError` naming the member
/// (`tags.N.member.key`, `tagKeys.N.member`); `aws:` keys refused (AWS's tagging rules;
/// Loft's words); 50 tags at most (`TagLimitExceeded`). A refused call changes nothing.
#[tokio::test]
async fn tags_follow_the_api_reference() {
    use aws_sdk_sns::operation::create_topic::CreateTopicError;
    use aws_sdk_sns::operation::tag_resource::TagResourceError;
    use aws_sdk_sns::operation::untag_resource::UntagResourceError;
    use aws_sdk_sns::types::Tag;
    let tag = |k: &str, v: &str| Tag::builder().key(k).value(v).build().expect("tag");
    let server = Server::start();
    let sns = server.sns();
    let topic = create_topic(&sns, "tagged", &[]).await;
    let key128 = "k".repeat(128);
    let accented = "\u{e9}".repeat(128);
    sns.tag_resource()
        .resource_arn(&topic)
        .tags(tag(&key128, &"v".repeat(256)))
        .tags(tag(&accented, ""))
        .send()
        .await
        .expect("keys of 128 characters, values of 256 and none");
    let listed = |sns: aws_sdk_sns::Client, arn: String| async move {
        let mut keys: Vec<String> = sns
            .list_tags_for_resource()
            .resource_arn(arn)
            .send()
            .await
            .expect("ListTagsForResource")
            .tags()
            .iter()
            .map(|t| t.key().to_owned())
            .collect();
        keys.sort();
        keys
    };
    let before = listed(sns.clone(), topic.clone()).await;
    assert_eq!(before, [key128.clone(), accented.clone()]);
    let too_long = |path: &str, value: &str, max: usize| {
        format!("1 validation error detected: Value '{value}' at '{path}' failed to satisfy constraint: Member must have length less than or equal to {max}")
    };
    let key129 = "k".repeat(129);
    let value257 = "\u{e9}".repeat(257);
    let rows: Vec<(Vec<Tag>, &str, String)> = vec![
        (
            vec![tag("", "v")],
            "ValidationError",
            "1 validation error detected: Value '' at 'tags.1.member.key' failed to satisfy constraint: Member must have length greater than or equal to 1".into(),
        ),
        (vec![tag(&key129, "v")], "ValidationError", too_long("tags.1.member.key", &key129, 128)),
        (
            vec![tag("ok", "v"), tag("k", &value257)],
            "ValidationError",
            too_long("tags.2.member.value", &value257, 256),
        ),
        (
            vec![tag("aws:owner", "v")],
            "InvalidParameter",
            "Invalid parameter: Tags Reason: Tag key aws:owner is invalid: the aws: prefix is reserved for AWS use".into(),
        ),
        (
            vec![tag("AWS:Owner", "v")],
            "InvalidParameter",
            "Invalid parameter: Tags Reason: Tag key AWS:Owner is invalid: the aws: prefix is reserved for AWS use".into(),
        ),
    ];
    for (tags, code, words) in &rows {
        let e = sns
            .tag_resource()
            .resource_arn(&topic)
            .set_tags(Some(tags.clone()))
            .send()
            .await
            .expect_err("refused tags");
        assert_eq!(
            crate::harness::sdk_error(&e),
            (code.to_string(), 400),
            "TagResource {words}"
        );
        assert_eq!(
            aws_sdk_sns::error::ProvideErrorMetadata::message(&e),
            Some(words.as_str())
        );
        let service = e.into_service_error();
        if *code == "InvalidParameter" {
            assert!(
                matches!(service, TagResourceError::InvalidParameterException(_)),
                "{service:?}"
            );
        }
        let e = sns
            .create_topic()
            .name("tagged-at-birth")
            .set_tags(Some(tags.clone()))
            .send()
            .await
            .expect_err("refused tags");
        assert_eq!(
            crate::harness::sdk_error(&e),
            (code.to_string(), 400),
            "CreateTopic {words}"
        );
        assert_eq!(
            aws_sdk_sns::error::ProvideErrorMetadata::message(&e),
            Some(words.as_str())
        );
        if *code == "InvalidParameter" {
            assert!(matches!(
                e.into_service_error(),
                CreateTopicError::InvalidParameterException(_)
            ));
        }
    }
    assert_eq!(
        listed(sns.clone(), topic.clone()).await,
        before,
        "refused calls changed the tags"
    );
    let topics = sns.list_topics().send().await.expect("ListTopics");
    assert!(!topics.topics().iter().any(|t| t
        .topic_arn()
        .is_some_and(|a| a.ends_with(":tagged-at-birth"))));
    // UntagResource: the same key rules, under `tagKeys.N.member`.
    for (key, code, words) in [
        (
            String::new(),
            "ValidationError",
            "1 validation error detected: Value '' at 'tagKeys.1.member' failed to satisfy constraint: Member must have length greater than or equal to 1".to_owned(),
        ),
        (key129.clone(), "ValidationError", too_long("tagKeys.1.member", &key129, 128)),
        (
            "aws:owner".into(),
            "InvalidParameter",
            "Invalid parameter: Tags Reason: Tag key aws:owner is invalid: the aws: prefix is reserved for AWS use".into(),
        ),
    ] {
        let e = sns
            .untag_resource()
            .resource_arn(&topic)
            .tag_keys(&key128)
            .tag_keys(&key)
            .send()
            .await
            .expect_err("refused keys");
        let path_fixed = words.replace("tagKeys.1.", "tagKeys.2.");
        assert_eq!(crate::harness::sdk_error(&e), (code.to_string(), 400), "UntagResource {key:?}");
        assert_eq!(aws_sdk_sns::error::ProvideErrorMetadata::message(&e), Some(path_fixed.as_str()));
        if code == "InvalidParameter" {
            assert!(matches!(e.into_service_error(), UntagResourceError::InvalidParameterException(_)));
        }
    }
    assert_eq!(
        listed(sns.clone(), topic.clone()).await,
        before,
        "a refused untag removed a tag"
    );
    // Fifty tags are a topic's most.
    let fifty: Vec<Tag> = (0..48).map(|i| tag(&format!("k{i}"), "v")).collect();
    sns.tag_resource()
        .resource_arn(&topic)
        .set_tags(Some(fifty))
        .send()
        .await
        .expect("fifty tags in all");
    let msg = assert_sns_err!(
        sns.tag_resource()
            .resource_arn(&topic)
            .tags(tag("fifty-one", "v"))
            .send()
            .await,
        TagResourceError::TagLimitExceededException(_),
        "TagLimitExceeded",
        400
    );
    assert!(!msg.is_empty());
}
