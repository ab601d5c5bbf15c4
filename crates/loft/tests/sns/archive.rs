//! SNS FIFO topics' message archiving: ArchivePolicy validated (FIFO topics only, a JSON
//! object with MessageRetentionPeriod of 1 to 365 days), reported with
//! BeginningArchiveTime by GetTopicAttributes, removed with `{}`.
//!
//! Sources: SNS Developer Guide, "Amazon SNS message archiving and replay for FIFO
//! topics"; the botocore model's GetTopicAttributes (`BeginningArchiveTime`); AWS's
//! recorded GetTopicAttributes of a topic with a 30-day archive (`{"MessageRetentionPeriod":
//! "30"}`, LocalStack's CloudFormation snapshot).

use aws_sdk_sns::operation::create_topic::CreateTopicError;
use aws_sdk_sns::operation::set_topic_attributes::SetTopicAttributesError;

use crate::*;

#[tokio::test]
async fn archive_policy_is_validated_reported_and_removed() {
    let server = Server::start();
    let sns = server.sns();
    let arn = create_topic(
        &sns,
        "orders.fifo",
        &[
            ("FifoTopic", "true"),
            ("ArchivePolicy", r#"{"MessageRetentionPeriod": 30}"#),
        ],
    )
    .await;
    let attrs = topic_attributes(&sns, &arn).await;
    assert_eq!(attrs["ArchivePolicy"], r#"{"MessageRetentionPeriod":"30"}"#);
    assert_timestamp(&attrs["BeginningArchiveTime"]);
    assert!(!attrs.keys().any(|k| k.starts_with("loft:")), "{attrs:?}");

    // Refused: a standard topic, and every malformed policy.
    let msg = assert_sns_err!(
        sns.create_topic()
            .name("plain")
            .attributes("ArchivePolicy", r#"{"MessageRetentionPeriod":"7"}"#)
            .send()
            .await,
        CreateTopicError::InvalidParameterException(_),
        "InvalidParameter",
        400
    );
    assert!(msg.contains("FIFO topics"), "{msg}");
    for bad in [
        "not json",
        r#"["MessageRetentionPeriod"]"#,
        r#"{"MessageRetentionPeriod":"0"}"#,
        r#"{"MessageRetentionPeriod":"366"}"#,
        r#"{"MessageRetentionPeriod":"ten"}"#,
        r#"{"MessageRetentionPeriod":"7","Extra":"1"}"#,
    ] {
        let msg = assert_sns_err!(
            sns.set_topic_attributes()
                .topic_arn(&arn)
                .attribute_name("ArchivePolicy")
                .attribute_value(bad)
                .send()
                .await,
            SetTopicAttributesError::InvalidParameterException(_),
            "InvalidParameter",
            400
        );
        assert!(msg.contains("ArchivePolicy"), "{bad}: {msg}");
    }
    // The refused values changed nothing.
    assert_eq!(
        topic_attributes(&sns, &arn).await["ArchivePolicy"],
        r#"{"MessageRetentionPeriod":"30"}"#
    );

    // A new period keeps the archive; `{}` ends it.
    sns.set_topic_attributes()
        .topic_arn(&arn)
        .attribute_name("ArchivePolicy")
        .attribute_value(r#"{"MessageRetentionPeriod":"365"}"#)
        .send()
        .await
        .expect("SetTopicAttributes");
    assert_eq!(
        topic_attributes(&sns, &arn).await["ArchivePolicy"],
        r#"{"MessageRetentionPeriod":"365"}"#
    );
    sns.set_topic_attributes()
        .topic_arn(&arn)
        .attribute_name("ArchivePolicy")
        .attribute_value("{}")
        .send()
        .await
        .expect("SetTopicAttributes {}");
    let attrs = topic_attributes(&sns, &arn).await;
    assert!(!attrs.contains_key("ArchivePolicy"), "{attrs:?}");
    assert!(!attrs.contains_key("BeginningArchiveTime"), "{attrs:?}");

    // A FIFO topic without a policy reports neither.
    let other = create_topic(&sns, "other.fifo", &[("FifoTopic", "true")]).await;
    let attrs = topic_attributes(&sns, &other).await;
    assert!(!attrs.contains_key("BeginningArchiveTime"), "{attrs:?}");
}
