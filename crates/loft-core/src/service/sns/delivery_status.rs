//! SNS delivery status logging: the `{HTTP,SQS,Lambda,Firehose,Application}
//! {Success,Failure}FeedbackRoleArn` and `...SuccessFeedbackSampleRate` topic attributes.
//!
//! AWS writes one JSON record per delivery attempt to CloudWatch Logs (log groups
//! `sns/{region}/{account}/{topic}` and `.../Failure`) when the topic names a role for
//! that protocol and outcome, successes sampled at the sample rate (percent). Loft has no
//! CloudWatch: it writes the same records as log lines on the tracing target
//! [`TARGET`] (`info` for successes, `warn` for failures), with the record as the `record`
//! field (JSON) and the log group AWS would use as `log_group`.
//!
//! Source: SNS Developer Guide, "Amazon SNS message delivery status" (the attributes, the
//! log groups and the record's fields: `notification.{messageId, topicArn, timestamp,
//! messageMD5Sum}`, `delivery.{deliveryId, destination, providerResponse, dwellTimeMs,
//! attempts, statusCode}`, `status`).

use serde_json::json;

use crate::attributes::TopicConfig;
use crate::clock::iso_timestamp;
use crate::message;
use crate::model::SubscriptionProtocol;

/// The tracing target delivery status records are written on.
pub const TARGET: &str = "loft::sns::delivery_status";

/// One delivery attempt, as the record describes it.
#[derive(Debug, Clone)]
pub struct DeliveryStatus<'a> {
    /// The attribute prefix: `HTTP` (http and https), `SQS`, `Lambda`, `Firehose`,
    /// `Application`.
    pub protocol: &'static str,
    /// Whether the attempt succeeded.
    pub success: bool,
    /// The topic's name.
    pub topic_name: &'a str,
    /// The topic's ARN (`arn:aws:sns:{region}:{account}:{name}`).
    pub topic_arn: &'a str,
    /// The topic's configuration: which protocols log, and at what sample rate.
    pub topic_config: &'a TopicConfig,
    /// The SNS MessageId, if known.
    pub message_id: Option<&'a str>,
    /// The message text (its MD5 is `messageMD5Sum`), if known.
    pub message: Option<&'a str>,
    /// When it was published (ms).
    pub published_at_ms: i64,
    /// The endpoint (queue ARN, URL, function ARN).
    pub destination: &'a str,
    /// What the endpoint answered (`providerResponse`).
    pub provider_response: String,
    /// HTTP status of the attempt (200 for a stored SQS message).
    pub status_code: u16,
    /// Attempts so far, this one included.
    pub attempts: i64,
    /// Now (ms): dwell time is now minus the publish time.
    pub now_ms: i64,
}

/// The attribute prefix of a subscription protocol (`https` is `HTTP`'s), or `None` for
/// protocols without delivery status logging (email, SMS).
pub fn prefix(protocol: SubscriptionProtocol) -> Option<&'static str> {
    use SubscriptionProtocol as P;
    Some(match protocol {
        P::Http | P::Https => "HTTP",
        P::Sqs => "SQS",
        P::Lambda => "Lambda",
        P::Firehose => "Firehose",
        P::Application => "Application",
        P::Email | P::EmailJson | P::Sms => return None,
    })
}

/// Whether the topic logs `protocol`'s successes (`success`) or failures at all (its role
/// attribute is set). Cheap: callers test it before building a record.
pub fn enabled(config: &TopicConfig, protocol: &str, success: bool) -> bool {
    let feedback = config.feedback(protocol);
    if success {
        feedback.success
    } else {
        feedback.failure
    }
}

/// Writes the record of `s` when the topic logs it: failures always, successes when the
/// sample draw falls under `{protocol}SuccessFeedbackSampleRate` (percent, 0 to 100;
/// unset counts as 100, every success).
pub fn log(s: &DeliveryStatus<'_>) {
    if !enabled(s.topic_config, s.protocol, s.success) {
        return;
    }
    if s.success {
        let rate = s.topic_config.feedback(s.protocol).success_sample_rate;
        if rand::random::<u32>() % 100 >= rate {
            return;
        }
    }
    let mut notification = serde_json::Map::new();
    if let Some(text) = s.message {
        notification.insert(
            "messageMD5Sum".into(),
            json!(message::md5_hex(text.as_bytes())),
        );
    }
    if let Some(id) = s.message_id {
        notification.insert("messageId".into(), json!(id));
    }
    notification.insert("topicArn".into(), json!(s.topic_arn));
    notification.insert("timestamp".into(), json!(iso_timestamp(s.published_at_ms)));
    let record = json!({
        "notification": notification,
        "delivery": {
            "deliveryId": uuid::Uuid::new_v4().to_string(),
            "destination": s.destination,
            "providerResponse": s.provider_response,
            "dwellTimeMs": (s.now_ms - s.published_at_ms).max(0),
            "attempts": s.attempts,
            "statusCode": s.status_code,
        },
        "status": if s.success { "SUCCESS" } else { "FAILURE" },
    })
    .to_string();
    let (region, account) = s.topic_arn.split(':').skip(3).take(2).fold(
        (String::new(), String::new()),
        |(r, a), part| {
            if r.is_empty() {
                (part.to_owned(), a)
            } else {
                (r, part.to_owned())
            }
        },
    );
    let group = format!("sns/{region}/{account}/{}", s.topic_name);
    if s.success {
        tracing::info!(target: TARGET, log_group = %group, record = %record, "SNS delivery status");
    } else {
        tracing::warn!(target: TARGET, log_group = %format!("{group}/Failure"), record = %record, "SNS delivery status");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_topics_with_a_role_log() {
        let mut a = std::collections::BTreeMap::new();
        assert!(!enabled(&TopicConfig::from_attributes(&a), "SQS", true));
        a.insert(
            "SQSSuccessFeedbackRoleArn".into(),
            "arn:aws:iam::1:role/r".into(),
        );
        let config = TopicConfig::from_attributes(&a);
        assert!(enabled(&config, "SQS", true));
        assert!(!enabled(&config, "SQS", false));
        assert!(!enabled(&config, "HTTP", true));
        assert_eq!(prefix(SubscriptionProtocol::Https), Some("HTTP"));
        assert_eq!(prefix(SubscriptionProtocol::Email), None);
    }
}
