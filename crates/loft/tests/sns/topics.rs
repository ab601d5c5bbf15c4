//! Topics and subscriptions as data: ListTopics / ListSubscriptions paging (100 a page),
//! topic and subscription attributes, tags.
//!
//! Sources: SNS API Reference ListTopics, ListSubscriptions, ListSubscriptionsByTopic,
//! GetTopicAttributes, GetSubscriptionAttributes, SetSubscriptionAttributes, TagResource.

use std::collections::BTreeSet;

use aws_sdk_sns::types::Tag;
use serde_json::Value;

use crate::harness::ACCOUNT;
use crate::*;

#[tokio::test]
async fn list_topics_pages_by_one_hundred() {
    let server = Server::start();
    let sns = server.sns();
    let mut made = BTreeSet::new();
    for i in 0..205 {
        made.insert(create_topic(&sns, &format!("topic-{i:03}"), &[]).await);
    }
    let mut seen = Vec::new();
    let mut pages = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let out = sns
            .list_topics()
            .set_next_token(token.clone())
            .send()
            .await
            .expect("ListTopics");
        pages.push(out.topics().len());
        seen.extend(
            out.topics()
                .iter()
                .filter_map(|t| t.topic_arn())
                .map(str::to_owned),
        );
        token = out.next_token().map(str::to_owned);
        if token.is_none() {
            break;
        }
    }
    assert_eq!(pages, [100, 100, 5]);
    assert_eq!(seen.len(), 205, "no topic twice");
    assert_eq!(seen.iter().cloned().collect::<BTreeSet<_>>(), made);

    // The SDK's paginator walks the same pages.
    let all: Vec<_> = sns
        .list_topics()
        .into_paginator()
        .items()
        .send()
        .collect::<Result<Vec<_>, _>>()
        .await
        .expect("paginate");
    assert_eq!(all.len(), 205);

    // Not base64, and base64 of what is no topic's key ("AAAA" is three NUL bytes).
    for junk in ["%%%not a token", "AAAA", "//79"] {
        assert_sns_err!(
            sns.list_topics().next_token(junk).send().await,
            aws_sdk_sns::operation::list_topics::ListTopicsError::InvalidParameterException(_),
            "InvalidParameter",
            400
        );
    }
}

#[tokio::test]
async fn list_subscriptions_pages_and_shows_each_field() {
    let server = Server::start();
    let sns = server.sns();
    let a = create_topic(&sns, "a", &[]).await;
    let b = create_topic(&sns, "b", &[]).await;
    let mut arns = BTreeSet::new();
    for i in 0..120 {
        arns.insert(subscribe_queue(&server, &a, &format!("q{i}"), &[]).await);
    }
    for i in 0..3 {
        arns.insert(subscribe_queue(&server, &b, &format!("q{i}"), &[]).await);
    }
    // An unconfirmed HTTP subscription shows as PendingConfirmation.
    let pending = sns
        .subscribe()
        .topic_arn(&b)
        .protocol("http")
        .endpoint("http://127.0.0.1:9/never")
        .send()
        .await
        .expect("Subscribe http");
    assert_eq!(pending.subscription_arn(), Some("pending confirmation"));

    let mut all = Vec::new();
    let mut sizes = Vec::new();
    let mut tokens = Vec::new();
    let mut token = None;
    loop {
        let out = sns
            .list_subscriptions()
            .set_next_token(token)
            .send()
            .await
            .expect("ListSubscriptions");
        sizes.push(out.subscriptions().len());
        all.extend(out.subscriptions().to_vec());
        token = out.next_token().map(str::to_owned);
        tokens.extend(token.clone());
        if token.is_none() {
            break;
        }
    }
    assert_eq!(sizes, [100, 24]);
    // The token is sealed: it does not carry the store-wide number of the page's last
    // subscription, and a token in its readable form (base64 of that number) is refused.
    let readable = "MDAwMDAwMDAwMDAwMDAwMDAxMDA"; // base64 of "00000000000000000100"
    assert_ne!(tokens, [readable]);
    let refused = sns.list_subscriptions().next_token(readable).send().await;
    let e = refused.expect_err("a readable token");
    assert_eq!(
        e.as_service_error().and_then(|e| e.meta().code()),
        Some("InvalidParameter")
    );
    let confirmed: BTreeSet<String> = all
        .iter()
        .filter_map(|s| s.subscription_arn())
        .filter(|a| *a != "PendingConfirmation")
        .map(str::to_owned)
        .collect();
    assert_eq!(confirmed, arns);
    let http = all
        .iter()
        .find(|s| s.protocol() == Some("http"))
        .expect("the http subscription is listed");
    assert_eq!(http.subscription_arn(), Some("PendingConfirmation"));
    assert_eq!(http.endpoint(), Some("http://127.0.0.1:9/never"));
    let one = all
        .iter()
        .find(|s| s.topic_arn() == Some(b.as_str()) && s.protocol() == Some("sqs"))
        .expect("a queue of b");
    assert_eq!(one.owner(), Some(ACCOUNT));
    assert!(one
        .endpoint()
        .is_some_and(|e| e.starts_with("arn:aws:sqs:us-east-1:000000000000:q")));

    let by_topic = sns
        .list_subscriptions_by_topic()
        .topic_arn(&b)
        .send()
        .await
        .expect("ListSubscriptionsByTopic");
    assert_eq!(by_topic.subscriptions().len(), 4);
    assert!(by_topic.next_token().is_none());
    assert!(by_topic
        .subscriptions()
        .iter()
        .all(|s| s.topic_arn() == Some(b.as_str())));
}

#[tokio::test]
async fn topic_attributes_defaults_and_updates() {
    let server = Server::start();
    let sns = server.sns();
    let topic = create_topic(&sns, "attrs", &[("DisplayName", "Shown")]).await;
    let attrs = topic_attributes(&sns, &topic).await;
    assert_eq!(attrs["TopicArn"], topic);
    assert_eq!(attrs["Owner"], ACCOUNT);
    assert_eq!(attrs["DisplayName"], "Shown");
    assert_eq!(attrs["SubscriptionsConfirmed"], "0");
    assert_eq!(attrs["SubscriptionsPending"], "0");
    assert_eq!(attrs["SubscriptionsDeleted"], "0");
    let policy: Value = serde_json::from_str(&attrs["Policy"]).expect("Policy is JSON");
    assert_eq!(policy["Statement"][0]["Resource"], topic.as_str());
    // The topic form of the policy (the subscription form has healthyRetryPolicy).
    assert_eq!(
        attrs["EffectiveDeliveryPolicy"],
        r#"{"http":{"defaultHealthyRetryPolicy":{"minDelayTarget":20,"maxDelayTarget":20,"numRetries":3,"numMaxDelayRetries":0,"numNoDelayRetries":0,"numMinDelayRetries":0,"backoffFunction":"linear"},"disableSubscriptionOverrides":false,"defaultRequestPolicy":{"headerContentType":"text/plain; charset=UTF-8"}}}"#
    );
    assert!(
        !attrs.contains_key("FifoTopic"),
        "standard topics have no FifoTopic: {attrs:?}"
    );

    let policy = r#"{"http":{"defaultHealthyRetryPolicy":{"minDelayTarget":2,"maxDelayTarget":9,"numRetries":5}}}"#;
    sns.set_topic_attributes()
        .topic_arn(&topic)
        .attribute_name("DeliveryPolicy")
        .attribute_value(policy)
        .send()
        .await
        .expect("SetTopicAttributes DeliveryPolicy");
    sns.set_topic_attributes()
        .topic_arn(&topic)
        .attribute_name("SignatureVersion")
        .attribute_value("2")
        .send()
        .await
        .expect("SetTopicAttributes SignatureVersion");
    let attrs = topic_attributes(&sns, &topic).await;
    // Kept with `disableSubscriptionOverrides` false added, as AWS reports it.
    let kept: Value = serde_json::from_str(&attrs["DeliveryPolicy"]).expect("DeliveryPolicy");
    assert_eq!(
        kept,
        serde_json::json!({"http":{"defaultHealthyRetryPolicy":{"minDelayTarget":2,"maxDelayTarget":9,"numRetries":5},"disableSubscriptionOverrides":false}})
    );
    assert_eq!(attrs["SignatureVersion"], "2");
    let effective: Value =
        serde_json::from_str(&attrs["EffectiveDeliveryPolicy"]).expect("EffectiveDeliveryPolicy");
    let retry = &effective["http"]["defaultHealthyRetryPolicy"];
    assert_eq!(retry["numRetries"], 5);
    assert_eq!(retry["maxDelayTarget"], 9);
    assert_eq!(effective["http"]["disableSubscriptionOverrides"], false);

    // CreateTopic again with the DeliveryPolicy as given is the same topic: the given one
    // is compared in the form it is kept in.
    let policy = r#"{"http":{"defaultRequestPolicy":{"headerContentType":"application/json"}}}"#;
    let first = create_topic(&sns, "attrs-dp", &[("DeliveryPolicy", policy)]).await;
    let again = create_topic(&sns, "attrs-dp", &[("DeliveryPolicy", policy)]).await;
    assert_eq!(first, again);

    let fifo = create_topic(&sns, "attrs.fifo", &[("FifoTopic", "true")]).await;
    let attrs = topic_attributes(&sns, &fifo).await;
    assert_eq!(attrs["FifoTopic"], "true");
    assert_eq!(attrs["ContentBasedDeduplication"], "false");
}

#[tokio::test]
async fn subscription_attributes_defaults_and_updates() {
    let server = Server::start();
    let sns = server.sns();
    let topic = create_topic(&sns, "t", &[]).await;
    let arn = subscribe_queue(&server, &topic, "q", &[]).await;
    let attrs = subscription_attributes(&sns, &arn).await;
    for (k, v) in [
        ("SubscriptionArn", arn.as_str()),
        ("TopicArn", topic.as_str()),
        ("Owner", ACCOUNT),
        ("Protocol", "sqs"),
        ("Endpoint", &server.queue_arn("q")),
        ("RawMessageDelivery", "false"),
        ("PendingConfirmation", "false"),
        ("ConfirmationWasAuthenticated", "true"),
    ] {
        assert_eq!(
            attrs.get(k).map(String::as_str),
            Some(v),
            "{k} in {attrs:?}"
        );
    }
    assert!(!attrs.contains_key("FilterPolicy"));
    assert!(
        !attrs.contains_key("EffectiveDeliveryPolicy"),
        "SQS subscriptions have no delivery policy: {attrs:?}"
    );

    let set = |name: &'static str, value: &'static str| {
        let sns = sns.clone();
        let arn = arn.clone();
        async move {
            sns.set_subscription_attributes()
                .subscription_arn(arn)
                .attribute_name(name)
                .attribute_value(value)
                .send()
                .await
                .unwrap_or_else(|e| panic!("set {name}: {e:?}"));
        }
    };
    set("FilterPolicy", r#"{"k":["v"]}"#).await;
    set("RawMessageDelivery", "true").await;
    let attrs = subscription_attributes(&sns, &arn).await;
    assert_eq!(attrs["FilterPolicy"], r#"{"k":["v"]}"#);
    assert_eq!(attrs["FilterPolicyScope"], "MessageAttributes");
    assert_eq!(attrs["RawMessageDelivery"], "true");
    set("FilterPolicyScope", "MessageBody").await;
    assert_eq!(
        subscription_attributes(&sns, &arn).await["FilterPolicyScope"],
        "MessageBody"
    );
    // An empty FilterPolicy removes the filter.
    set("FilterPolicy", "").await;
    let attrs = subscription_attributes(&sns, &arn).await;
    assert!(!attrs.contains_key("FilterPolicy"), "{attrs:?}");
    set(
        "RedrivePolicy",
        r#"{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:dlq"}"#,
    )
    .await;
    assert_eq!(
        subscription_attributes(&sns, &arn).await["RedrivePolicy"],
        r#"{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:dlq"}"#
    );
}

#[tokio::test]
async fn tags_are_set_listed_and_removed() {
    let server = Server::start();
    let sns = server.sns();
    let tag = |k: &str, v: &str| Tag::builder().key(k).value(v).build().expect("tag");
    let topic = sns
        .create_topic()
        .name("tagged")
        .tags(tag("team", "core"))
        .send()
        .await
        .expect("CreateTopic with tags")
        .topic_arn()
        .expect("arn")
        .to_owned();
    let list = |sns: aws_sdk_sns::Client, arn: String| async move {
        let mut v: Vec<(String, String)> = sns
            .list_tags_for_resource()
            .resource_arn(arn)
            .send()
            .await
            .expect("ListTagsForResource")
            .tags()
            .iter()
            .map(|t| (t.key().to_owned(), t.value().to_owned()))
            .collect();
        v.sort();
        v
    };
    assert_eq!(
        list(sns.clone(), topic.clone()).await,
        [("team".to_owned(), "core".to_owned())]
    );
    sns.tag_resource()
        .resource_arn(&topic)
        .tags(tag("env", "test"))
        .tags(tag("team", "platform"))
        .send()
        .await
        .expect("TagResource");
    assert_eq!(
        list(sns.clone(), topic.clone()).await,
        [
            ("env".to_owned(), "test".to_owned()),
            ("team".to_owned(), "platform".to_owned())
        ]
    );
    sns.untag_resource()
        .resource_arn(&topic)
        .tag_keys("team")
        .tag_keys("absent")
        .send()
        .await
        .expect("UntagResource");
    assert_eq!(
        list(sns.clone(), topic.clone()).await,
        [("env".to_owned(), "test".to_owned())]
    );
    // CreateTopic of an existing topic with other tags is an error.
    assert_sns_err!(
        sns.create_topic()
            .name("tagged")
            .tags(tag("env", "prod"))
            .send()
            .await,
        aws_sdk_sns::operation::create_topic::CreateTopicError::InvalidParameterException(_),
        "InvalidParameter",
        400
    );
    // A tag key of 129 characters fails the model's length constraint (SNS API Reference,
    // Tag; docs/conformance.md, row "tags"; every variant in `rules::tags_follow_the_api_reference`).
    let e = sns
        .tag_resource()
        .resource_arn(&topic)
        .tags(tag(&"k".repeat(129), "v"))
        .send()
        .await
        .expect_err("a key of 129 characters");
    assert_eq!(
        crate::harness::sdk_error(&e),
        ("ValidationError".to_owned(), 400)
    );
}

/// SubscriptionRoleArn belongs to Firehose subscriptions (the role SNS writes to the
/// delivery stream with): refused for another protocol, kept and reported for firehose.
#[tokio::test]
async fn subscription_role_arn_is_for_firehose_only() {
    use aws_sdk_sns::error::ProvideErrorMetadata as _;
    let server = Server::start();
    let sns = server.sns();
    let topic = create_topic(&sns, "to-firehose", &[]).await;
    let role = "arn:aws:iam::000000000000:role/SNSFirehose";
    let e = sns
        .subscribe()
        .topic_arn(&topic)
        .protocol("sqs")
        .endpoint("arn:aws:sqs:us-east-1:000000000000:q")
        .attributes("SubscriptionRoleArn", role)
        .send()
        .await
        .expect_err("SubscriptionRoleArn on an SQS subscription");
    assert_eq!(e.code(), Some("InvalidParameter"), "{e:?}");
    assert!(e.message().unwrap_or("").contains("firehose"), "{e:?}");
    let arn = sns
        .subscribe()
        .topic_arn(&topic)
        .protocol("firehose")
        .endpoint("arn:aws:firehose:us-east-1:000000000000:deliverystream/s")
        .attributes("SubscriptionRoleArn", role)
        .return_subscription_arn(true)
        .send()
        .await
        .expect("Subscribe firehose")
        .subscription_arn()
        .unwrap()
        .to_owned();
    let attrs = sns
        .get_subscription_attributes()
        .subscription_arn(&arn)
        .send()
        .await
        .expect("GetSubscriptionAttributes");
    assert_eq!(attrs.attributes().unwrap()["SubscriptionRoleArn"], role);
}

/// A firehose subscription needs its role ("Specifying a valid ARN for this attribute is
/// required for Firehose delivery stream subscriptions", SNS API Reference): refused
/// without one, with one that is not an IAM role ARN, and when SetSubscriptionAttributes
/// would clear it. A publish is recorded under the role (the recording's `sender`) and,
/// with FirehoseSuccessFeedbackRoleArn, writes AWS's delivery status record.
#[tokio::test]
async fn firehose_subscriptions_need_a_role_and_record_deliveries_under_it() {
    use aws_sdk_sns::error::ProvideErrorMetadata as _;
    let server = Server::start();
    let sns = server.sns();
    let feedback = "arn:aws:iam::000000000000:role/SNSFeedback";
    let topic = create_topic(&sns, "fh", &[("FirehoseSuccessFeedbackRoleArn", feedback)]).await;
    let stream = "arn:aws:firehose:us-east-1:000000000000:deliverystream/s";
    let role = "arn:aws:iam::000000000000:role/service/SNSFirehose";
    for bad in [
        None,
        Some("arn:aws:sqs:us-east-1:000000000000:q"),
        Some("role"),
    ] {
        let mut req = sns
            .subscribe()
            .topic_arn(&topic)
            .protocol("firehose")
            .endpoint(stream);
        if let Some(v) = bad {
            req = req.attributes("SubscriptionRoleArn", v);
        }
        let e = req.send().await.expect_err("firehose without a valid role");
        assert_eq!(e.code(), Some("InvalidParameter"), "{bad:?}: {e:?}");
        assert!(
            e.message().unwrap_or("").contains("SubscriptionRoleArn"),
            "{e:?}"
        );
    }
    let arn = sns
        .subscribe()
        .topic_arn(&topic)
        .protocol("firehose")
        .endpoint(stream)
        .attributes("SubscriptionRoleArn", role)
        .return_subscription_arn(true)
        .send()
        .await
        .expect("Subscribe firehose")
        .subscription_arn()
        .unwrap()
        .to_owned();
    let e = sns
        .set_subscription_attributes()
        .subscription_arn(&arn)
        .attribute_name("SubscriptionRoleArn")
        .attribute_value("")
        .send()
        .await
        .expect_err("the role cannot be removed");
    assert_eq!(e.code(), Some("InvalidParameter"), "{e:?}");
    let id = sns
        .publish()
        .topic_arn(&topic)
        .message("to the stream")
        .send()
        .await
        .expect("Publish")
        .message_id()
        .unwrap()
        .to_owned();
    let list: serde_json::Value = reqwest::get(format!("{}/_loft/sns/messages", server.url))
        .await
        .expect("GET /_loft/sns/messages")
        .json()
        .await
        .expect("JSON");
    let text = list.to_string();
    assert!(
        text.contains(role),
        "the role is the recording's sender: {text}"
    );
    assert!(text.contains("to the stream"), "{text}");
    let status_line = || {
        server
            .stderr()
            .lines()
            .find(|l| l.contains("loft::sns::delivery_status"))
            .map(str::to_owned)
    };
    let found = crate::wait::poll(crate::harness::PATIENCE, || async { status_line() }).await;
    let line = found.unwrap_or_else(|| panic!("no delivery status: {}", server.stderr()));
    for needle in [
        id.as_str(),
        r#""status":"SUCCESS""#,
        stream,
        "sns/us-east-1/000000000000/fh",
    ] {
        assert!(line.contains(needle), "{needle} not in {line}");
    }
}
