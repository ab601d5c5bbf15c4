//! Queue attributes: names, ranges, defaults and the typed view the service works from;
//! the typed views of a topic's and a subscription's attributes ([`TopicConfig`],
//! [`SubscriptionConfig`]).
//!
//! Source: SQS API Reference, CreateQueue and SetQueueAttributes "Request Parameters";
//! MaximumMessageSize's range and default follow AWS's 2025 raise of the limit to 1 MiB.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::error::{Error, ErrorCode, Result};
use crate::names::arn_resource;

/// Default VisibilityTimeout, seconds.
pub const DEFAULT_VISIBILITY_TIMEOUT: u32 = 30;
/// Default MessageRetentionPeriod, seconds (4 days).
pub const DEFAULT_RETENTION: u32 = 345_600;
/// Default and largest MaximumMessageSize, bytes (1 MiB).
pub const MAX_MESSAGE_SIZE: u32 = 1_048_576;

/// Attributes a caller may set, with their inclusive integer ranges where numeric.
const SETTABLE: &[(&str, Option<(i64, i64)>)] = &[
    ("DelaySeconds", Some((0, 900))),
    ("MaximumMessageSize", Some((1024, MAX_MESSAGE_SIZE as i64))),
    ("MessageRetentionPeriod", Some((60, 1_209_600))),
    ("ReceiveMessageWaitTimeSeconds", Some((0, 20))),
    ("VisibilityTimeout", Some((0, 43_200))),
    ("KmsDataKeyReusePeriodSeconds", Some((60, 86_400))),
    ("Policy", None),
    ("RedrivePolicy", None),
    ("RedriveAllowPolicy", None),
    ("KmsMasterKeyId", None),
    ("SqsManagedSseEnabled", None),
    ("FifoQueue", None),
    ("ContentBasedDeduplication", None),
    ("DeduplicationScope", None),
    ("FifoThroughputLimit", None),
];

/// A queue attribute Loft keeps for itself (never listed among AWS's attributes, never
/// settable): the DeduplicationScope a FIFO queue was created with. Deduplication follows
/// it, not a DeduplicationScope changed later: AWS keeps deduplicating in the creation
/// scope after SetQueueAttributes changes DeduplicationScope (and FifoThroughputLimit),
/// in both directions, while GetQueueAttributes reports the new values (recorded).
pub const CREATED_DEDUPLICATION_SCOPE: &str = "LoftCreatedDeduplicationScope";

/// Attributes computed by Loft, readable but never settable.
pub const READ_ONLY: &[&str] = &[
    "ApproximateNumberOfMessages",
    "ApproximateNumberOfMessagesDelayed",
    "ApproximateNumberOfMessagesNotVisible",
    "CreatedTimestamp",
    "LastModifiedTimestamp",
    "QueueArn",
];

/// Every attribute name GetQueueAttributes knows, in AWS's order of listing.
pub fn all_names() -> impl Iterator<Item = &'static str> {
    READ_ONLY
        .iter()
        .copied()
        .chain(SETTABLE.iter().map(|(n, _)| *n))
}

/// Whether `name` is a queue attribute AWS knows.
pub fn is_known(name: &str) -> bool {
    all_names().any(|n| n == name)
}

fn invalid_value(name: &str) -> Error {
    Error::new(
        ErrorCode::InvalidAttributeValue,
        format!("Invalid value for the parameter {name}."),
    )
}

/// Checks the combination of a FIFO queue's attributes as they will be stored (after a
/// create, or a set merged into the queue's): FifoThroughputLimit `perMessageGroupId` is
/// allowed only with DeduplicationScope `messageGroup` (SQS API Reference,
/// SetQueueAttributes, "FifoThroughputLimit").
///
/// Errors: `InvalidAttributeValue` naming FifoThroughputLimit.
pub fn validate_combination(attributes: &BTreeMap<String, String>) -> Result<()> {
    let per_group = attributes
        .get("FifoThroughputLimit")
        .is_some_and(|v| v == "perMessageGroupId");
    let group_scope = attributes
        .get("DeduplicationScope")
        .is_some_and(|v| v == "messageGroup");
    if per_group && !group_scope {
        return Err(Error::new(
            ErrorCode::InvalidAttributeValue,
            "Invalid value for the parameter FifoThroughputLimit. Reason: The perMessageGroupId value is allowed only when the value for DeduplicationScope is messageGroup.",
        ));
    }
    Ok(())
}

/// SSE-KMS and SSE-SQS in one request: a CreateQueue or SetQueueAttributes that gives a
/// `KmsMasterKeyId` (not empty) together with `SqsManagedSseEnabled` `true` is refused; a
/// KMS key given alone turns SSE-SQS off instead (see the Service's queue operations).
///
/// Errors: `InvalidAttributeName` "You can use one type of server-side encryption (SSE) at
/// one time. You can either enable KMS SSE or SQS SSE."
///
/// Source: SQS API Reference, SetQueueAttributes ("Only one server-side encryption option
/// is supported per queue"); AWS's recorded answer, both protocols (LocalStack
/// `test_sse_kms_and_sqs_are_mutually_exclusive`, `aws.validated`).
pub fn check_one_encryption(given: &BTreeMap<String, String>) -> Result<()> {
    let kms = given.get("KmsMasterKeyId").is_some_and(|k| !k.is_empty());
    let sqs = given
        .get("SqsManagedSseEnabled")
        .is_some_and(|v| v.eq_ignore_ascii_case("true"));
    if kms && sqs {
        return Err(Error::new(
            ErrorCode::InvalidAttributeName,
            "You can use one type of server-side encryption (SSE) at one time. You can either enable KMS SSE or SQS SSE.",
        ));
    }
    Ok(())
}

/// The redrive policy of a queue (`RedrivePolicy`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedrivePolicy {
    /// The dead-letter queue's ARN.
    pub dead_letter_target_arn: String,
    /// Receives after which a message moves (1..=1000).
    pub max_receive_count: i64,
}

impl RedrivePolicy {
    /// Parses AWS's JSON form; `maxReceiveCount` may be a number or a numeric string.
    ///
    /// Errors: `InvalidParameterValue` when malformed or out of range.
    pub fn parse(text: &str) -> Result<Self> {
        let bad = |why: &str| {
            Error::invalid(format!(
                "Value {text} for parameter RedrivePolicy is invalid. Reason: {why}"
            ))
        };
        let v: Value = serde_json::from_str(text)
            .map_err(|_| bad("Redrive policy is not a valid JSON map."))?;
        let obj = v
            .as_object()
            .ok_or_else(|| bad("Redrive policy is not a valid JSON map."))?;
        for key in obj.keys() {
            if key != "deadLetterTargetArn" && key != "maxReceiveCount" {
                return Err(bad(&format!("Only following keys are allowed: deadLetterTargetArn, maxReceiveCount. Found: {key}")));
            }
        }
        let arn = obj
            .get("deadLetterTargetArn")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                bad("Redrive policy does not contain mandatory attribute: deadLetterTargetArn.")
            })?;
        if arn_resource(arn, "sqs").is_none() {
            return Err(bad("Invalid deadLetterTargetArn."));
        }
        let count = match obj.get("maxReceiveCount") {
            Some(Value::Number(n)) => n.as_i64(),
            Some(Value::String(s)) => s.parse().ok(),
            None => {
                return Err(bad(
                    "Redrive policy does not contain mandatory attribute: maxReceiveCount.",
                ))
            }
            _ => None,
        }
        .filter(|n| (1..=1000).contains(n))
        .ok_or_else(|| {
            bad("Invalid value for maxReceiveCount: must be an integer from 1 to 1000.")
        })?;
        Ok(RedrivePolicy {
            dead_letter_target_arn: arn.to_owned(),
            max_receive_count: count,
        })
    }

    /// AWS's canonical JSON form, as GetQueueAttributes returns it.
    pub fn to_json(&self) -> String {
        serde_json::json!({
            "deadLetterTargetArn": self.dead_letter_target_arn,
            "maxReceiveCount": self.max_receive_count,
        })
        .to_string()
    }

    /// The dead-letter queue's name.
    pub fn dlq_name(&self) -> &str {
        arn_resource(&self.dead_letter_target_arn, "sqs").unwrap_or_default()
    }
}

/// Validates and normalises attributes for CreateQueue (`creating`) or SetQueueAttributes.
/// `fifo` is whether the queue is (or is being created as) a FIFO queue.
///
/// Errors: `InvalidAttributeName` for unknown or read-only names (and FIFO-only attributes
/// on a standard queue); `InvalidAttributeValue` / `InvalidParameterValue` for bad values.
pub fn validate(
    attributes: &BTreeMap<String, String>,
    creating: bool,
    fifo: bool,
) -> Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    for (name, value) in attributes {
        let Some((_, range)) = SETTABLE.iter().find(|(n, _)| n == name) else {
            return Err(Error::new(
                ErrorCode::InvalidAttributeName,
                format!("Unknown Attribute {name}."),
            ));
        };
        let value = value.trim();
        if let Some((lo, hi)) = range {
            let n: i64 = value.parse().map_err(|_| invalid_value(name))?;
            if n < *lo || n > *hi {
                return Err(invalid_value(name));
            }
            out.insert(name.clone(), n.to_string());
            continue;
        }
        let normalised = match name.as_str() {
            "RedrivePolicy" => {
                if value.is_empty() {
                    String::new()
                } else {
                    RedrivePolicy::parse(value)?.to_json()
                }
            }
            "RedriveAllowPolicy" => {
                if !value.is_empty() {
                    check_redrive_allow(value)?;
                }
                value.to_owned()
            }
            "Policy" => {
                if !value.is_empty() && serde_json::from_str::<Value>(value).is_err() {
                    return Err(invalid_value(name));
                }
                value.to_owned()
            }
            "SqsManagedSseEnabled" | "ContentBasedDeduplication" | "FifoQueue" => {
                let b = parse_bool(value).ok_or_else(|| invalid_value(name))?;
                b.to_string()
            }
            "DeduplicationScope" => match value {
                "queue" | "messageGroup" => value.to_owned(),
                _ => return Err(invalid_value(name)),
            },
            "FifoThroughputLimit" => match value {
                "perQueue" | "perMessageGroupId" => value.to_owned(),
                _ => return Err(invalid_value(name)),
            },
            _ => value.to_owned(),
        };
        // FIFO-only attributes on a standard queue, in AWS's words (its recorded answers
        // to CreateQueue and SetQueueAttributes). FifoQueue itself exists on FIFO queues
        // only: `false` never names a standard queue.
        if !fifo {
            let message = match name.as_str() {
                "FifoQueue" | "ContentBasedDeduplication" => {
                    Some(format!("Unknown Attribute {name}."))
                }
                "DeduplicationScope" | "FifoThroughputLimit" => Some(format!(
                    "You can specify the {name} only when FifoQueue is set to true."
                )),
                _ => None,
            };
            if let Some(message) = message {
                return Err(Error::new(ErrorCode::InvalidAttributeName, message));
            }
        }
        if name == "FifoQueue" {
            if normalised == "false" {
                return Err(Error::new(
                    ErrorCode::InvalidAttributeValue,
                    "Invalid value for the parameter FifoQueue. Reason: Modifying queue type is not supported.",
                ));
            }
            if !creating {
                // `true` on a FIFO queue changes nothing.
                continue;
            }
        }
        out.insert(name.clone(), normalised);
    }
    Ok(out)
}

fn check_redrive_allow(value: &str) -> Result<()> {
    let bad = || {
        Error::invalid(format!(
            "Value {value} for parameter RedriveAllowPolicy is invalid."
        ))
    };
    let v: Value = serde_json::from_str(value).map_err(|_| bad())?;
    let permission = v
        .get("redrivePermission")
        .and_then(Value::as_str)
        .ok_or_else(bad)?;
    match permission {
        // sourceQueueArns "can be specified only when redrivePermission is byQueue" (SQS
        // API Reference, SetQueueAttributes, RedriveAllowPolicy).
        "allowAll" | "denyAll" if v.get("sourceQueueArns").is_some() => Err(bad()),
        "allowAll" | "denyAll" => Ok(()),
        "byQueue" => {
            let arns = v
                .get("sourceQueueArns")
                .and_then(Value::as_array)
                .ok_or_else(bad)?;
            if arns.is_empty() || arns.len() > 10 {
                return Err(bad());
            }
            Ok(())
        }
        _ => Err(bad()),
    }
}

fn parse_bool(value: &str) -> Option<bool> {
    match value.to_ascii_lowercase().as_str() {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

/// The typed view of a queue's attributes, defaults applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueConfig {
    /// Seconds a received message stays hidden.
    pub visibility_timeout: u32,
    /// Seconds every new message is delayed.
    pub delay_seconds: u32,
    /// Largest message, bytes (body plus attributes).
    pub maximum_message_size: u32,
    /// Seconds a message is kept.
    pub retention_seconds: u32,
    /// Default long-poll wait, seconds.
    pub receive_wait_seconds: u32,
    /// Dead-letter rule, if any.
    pub redrive_policy: Option<RedrivePolicy>,
    /// FIFO queue.
    pub fifo: bool,
    /// Content-based deduplication (FIFO).
    pub content_based_deduplication: bool,
    /// Deduplication scoped to the message group rather than the queue (FIFO): the
    /// scope the queue was created with ([`CREATED_DEDUPLICATION_SCOPE`]; queues created
    /// before Loft kept it follow their DeduplicationScope).
    pub dedup_per_group: bool,
    /// Server-side encryption at rest: the key name messages are sealed under and the
    /// data key reuse period (ms). `None` when both SqsManagedSseEnabled is `false` and
    /// no KmsMasterKeyId is set.
    pub encryption: Option<(String, i64)>,
}

/// Default KmsDataKeyReusePeriodSeconds (5 minutes, SQS API Reference, SetQueueAttributes).
pub const DEFAULT_DATA_KEY_REUSE_SECONDS: u32 = 300;

impl QueueConfig {
    /// Reads the typed configuration from stored attributes.
    pub fn from_attributes(attributes: &BTreeMap<String, String>) -> Self {
        let num = |name: &str, default: u32| {
            attributes
                .get(name)
                .and_then(|v| v.parse().ok())
                .unwrap_or(default)
        };
        QueueConfig {
            visibility_timeout: num("VisibilityTimeout", DEFAULT_VISIBILITY_TIMEOUT),
            delay_seconds: num("DelaySeconds", 0),
            maximum_message_size: num("MaximumMessageSize", MAX_MESSAGE_SIZE),
            retention_seconds: num("MessageRetentionPeriod", DEFAULT_RETENTION),
            receive_wait_seconds: num("ReceiveMessageWaitTimeSeconds", 0),
            redrive_policy: attributes
                .get("RedrivePolicy")
                .filter(|v| !v.is_empty())
                .and_then(|v| RedrivePolicy::parse(v).ok()),
            fifo: attributes.get("FifoQueue").is_some_and(|v| v == "true"),
            content_based_deduplication: attributes
                .get("ContentBasedDeduplication")
                .is_some_and(|v| v == "true"),
            dedup_per_group: attributes
                .get(CREATED_DEDUPLICATION_SCOPE)
                .or_else(|| attributes.get("DeduplicationScope"))
                .is_some_and(|v| v == "messageGroup"),
            encryption: encryption(attributes).map(|key| {
                (
                    key,
                    num(
                        "KmsDataKeyReusePeriodSeconds",
                        DEFAULT_DATA_KEY_REUSE_SECONDS,
                    ) as i64
                        * 1000,
                )
            }),
        }
    }

    /// The sealing a message sent at `sent_at_ms` gets, as [`crate::model::NewMessage::seal`]:
    /// the queue's key and the reuse period that time falls in.
    pub fn seal_at(&self, sent_at_ms: i64) -> Option<crate::model::SealWith> {
        self.encryption
            .as_ref()
            .map(|(key_id, reuse_ms)| crate::model::SealWith {
                key_id: key_id.clone(),
                period: sent_at_ms.div_euclid((*reuse_ms).max(1)),
            })
    }
}

/// The key a queue's messages are sealed under: its KmsMasterKeyId when one is set
/// (SSE-KMS), else [`crate::model::SSE_SQS_KEY_ID`] unless SqsManagedSseEnabled is
/// `false` (SSE-SQS, on by default as on AWS since 2022's change of the default).
fn encryption(attributes: &BTreeMap<String, String>) -> Option<String> {
    if let Some(key) = attributes.get("KmsMasterKeyId").filter(|k| !k.is_empty()) {
        return Some(key.clone());
    }
    let sse_sqs = attributes
        .get("SqsManagedSseEnabled")
        .is_none_or(|v| !v.eq_ignore_ascii_case("false"));
    sse_sqs.then(|| crate::model::SSE_SQS_KEY_ID.to_owned())
}

/// The stored topic attribute (Loft's own, never listed or settable) holding when the
/// topic's archive started (ms): set when an ArchivePolicy is first given.
pub const ARCHIVE_START_ATTRIBUTE: &str = "loft:ArchiveStart";

/// The topic attribute holding the data protection policy as PutDataProtectionPolicy put
/// it (SNS API Reference, SetTopicAttributes, "DataProtectionPolicy").
pub const DATA_PROTECTION_POLICY_ATTRIBUTE: &str = "DataProtectionPolicy";

/// The attribute prefixes of SNS delivery status logging (SNS Developer Guide, "Amazon SNS
/// message delivery status"): `{prefix}{Success,Failure}FeedbackRoleArn` and
/// `{prefix}SuccessFeedbackSampleRate`.
pub const FEEDBACK_PREFIXES: [&str; 5] = ["HTTP", "SQS", "Lambda", "Firehose", "Application"];

/// One protocol's delivery status logging settings (SNS Developer Guide, "Amazon SNS
/// message delivery status").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeedbackConfig {
    /// `{prefix}SuccessFeedbackRoleArn` is set (non-empty): successes are logged.
    pub success: bool,
    /// `{prefix}FailureFeedbackRoleArn` is set (non-empty): failures are logged.
    pub failure: bool,
    /// `{prefix}SuccessFeedbackSampleRate`, percent of successes logged (0 to 100; unset
    /// or unreadable counts as 100).
    pub success_sample_rate: u32,
}

/// The typed view of a topic's stored attributes (SNS API Reference, SetTopicAttributes
/// and CreateTopic, "Attributes"), read in one place, [`TopicConfig::from_attributes`].
/// Values are as validated on CreateTopic / SetTopicAttributes (booleans lowercase).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopicConfig {
    /// FifoTopic is `true` (any case).
    pub fifo: bool,
    /// ContentBasedDeduplication is `true` (FIFO topics).
    pub content_based_deduplication: bool,
    /// FifoThroughputScope is `MessageGroup`: deduplication per message group rather than
    /// per topic.
    pub dedup_per_group: bool,
    /// TracingConfig is `Active` (AWS X-Ray active tracing).
    pub tracing_active: bool,
    /// SignatureVersion is `2` (SHA256 signatures) rather than `1` (SHA1, the default).
    pub signature_version_2: bool,
    /// DisplayName, when set and non-empty (the sender of email and SMS).
    pub display_name: Option<String>,
    /// DeliveryPolicy as stored (JSON), if set: see [`crate::delivery_policy::DeliveryPolicy`].
    pub delivery_policy: Option<String>,
    /// Policy (the topic's access policy, IAM JSON) as stored, if set.
    pub policy: Option<String>,
    /// DataProtectionPolicy as put, if set (possibly empty).
    pub data_protection_policy: Option<String>,
    /// ArchivePolicy as stored (JSON), if set (FIFO topics).
    pub archive_policy: Option<String>,
    /// When the archive started (ms), [`ARCHIVE_START_ATTRIBUTE`], if stored and readable.
    pub archive_start_ms: Option<i64>,
    /// KmsMasterKeyId, when set and non-empty (encryption at rest).
    pub kms_master_key_id: Option<String>,
    /// Delivery status logging per [`FEEDBACK_PREFIXES`] entry, in that order.
    pub feedback: [FeedbackConfig; 5],
}

impl TopicConfig {
    /// Reads the typed configuration from a topic's stored attributes: the one function
    /// that reads topic attributes by name. Unset attributes take AWS's defaults.
    pub fn from_attributes(attributes: &BTreeMap<String, String>) -> Self {
        let is = |name: &str, value: &str| attributes.get(name).is_some_and(|v| v == value);
        let text = |name: &str| attributes.get(name).cloned();
        let non_empty = |name: &str| attributes.get(name).filter(|v| !v.is_empty()).cloned();
        let role = |prefix: &str, outcome: &str| {
            attributes
                .get(&format!("{prefix}{outcome}FeedbackRoleArn"))
                .is_some_and(|v| !v.is_empty())
        };
        TopicConfig {
            fifo: attributes
                .get("FifoTopic")
                .is_some_and(|v| v.eq_ignore_ascii_case("true")),
            content_based_deduplication: is("ContentBasedDeduplication", "true"),
            dedup_per_group: is("FifoThroughputScope", "MessageGroup"),
            tracing_active: is("TracingConfig", "Active"),
            signature_version_2: is("SignatureVersion", "2"),
            display_name: non_empty("DisplayName"),
            delivery_policy: text("DeliveryPolicy"),
            policy: text("Policy"),
            data_protection_policy: text(DATA_PROTECTION_POLICY_ATTRIBUTE),
            archive_policy: text("ArchivePolicy"),
            archive_start_ms: attributes
                .get(ARCHIVE_START_ATTRIBUTE)
                .and_then(|v| v.parse().ok()),
            kms_master_key_id: non_empty("KmsMasterKeyId"),
            feedback: FEEDBACK_PREFIXES.map(|prefix| FeedbackConfig {
                success: role(prefix, "Success"),
                failure: role(prefix, "Failure"),
                success_sample_rate: attributes
                    .get(&format!("{prefix}SuccessFeedbackSampleRate"))
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(100),
            }),
        }
    }

    /// The delivery status logging of attribute prefix `prefix` (one of
    /// [`FEEDBACK_PREFIXES`]); nothing logged for any other prefix.
    pub fn feedback(&self, prefix: &str) -> FeedbackConfig {
        FEEDBACK_PREFIXES
            .iter()
            .position(|p| *p == prefix)
            .map_or_else(FeedbackConfig::default, |i| self.feedback[i])
    }

    /// The encryption at rest of what Loft keeps of topic `topic_id`'s messages, as
    /// [`topic_seal`].
    pub fn seal(&self, topic_id: i64) -> Option<crate::model::TopicSeal> {
        self.kms_master_key_id
            .as_ref()
            .map(|key| crate::model::TopicSeal {
                topic_id,
                key_id: key.clone(),
            })
    }
}

impl Default for FeedbackConfig {
    fn default() -> Self {
        FeedbackConfig {
            success: false,
            failure: false,
            success_sample_rate: 100,
        }
    }
}

/// The attribute marking a subscription made through the seeds' API: it receives the
/// seeds' `{"topic","message"}` JSON payload rather than an SNS envelope.
pub const SEED_PAYLOAD_ATTRIBUTE: &str = "LoftSeedPayload";

/// The attribute that keeps a subscription's owner when it is not its topic's owner: the
/// 12-digit account that called Subscribe. A subscription belongs to the account that
/// made it (SNS Developer Guide, "Sending Amazon SNS messages to an Amazon SQS queue in a
/// different account": the queue owner who subscribes "owns the subscription"), which
/// GetSubscriptionAttributes reports as `Owner`, may manage it and lists it. Stored with
/// the subscription's attributes, never reported among them and never settable (Subscribe
/// and SetSubscriptionAttributes refuse the name).
pub const SUBSCRIBER_ACCOUNT_ATTRIBUTE: &str = "LoftSubscriberAccount";

/// The attribute that keeps whether a subscription confirmed by ConfirmSubscription was
/// confirmed with authentication (`true`: a signed call with `AuthenticateOnUnsubscribe`
/// true; `false` otherwise). Such a subscription reports `ConfirmationWasAuthenticated`
/// true, and only a signed call may unsubscribe it (SNS API Reference, ConfirmSubscription
/// and Unsubscribe). A subscription without it was confirmed at Subscribe, by the signed
/// Subscribe itself (`sqs`, `lambda`, ...), or is pending. Hidden as
/// [`SUBSCRIBER_ACCOUNT_ATTRIBUTE`] is.
pub const CONFIRMATION_AUTHENTICATED_ATTRIBUTE: &str = "LoftConfirmationAuthenticated";

/// The typed view of a subscription's stored attributes (SNS API Reference,
/// SetSubscriptionAttributes and Subscribe, "Attributes"), read in one place,
/// [`SubscriptionConfig::from_attributes`]. Values are as validated on Subscribe /
/// SetSubscriptionAttributes (booleans lowercase).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SubscriptionConfig {
    /// RawMessageDelivery is `true`: the message alone is delivered, not its envelope.
    pub raw_message_delivery: bool,
    /// FilterPolicy, when set and non-empty (an empty one is no filter policy).
    pub filter_policy: Option<String>,
    /// FilterPolicyScope: `MessageBody`, else `MessageAttributes` (the default).
    pub filter_policy_scope: crate::filter_policy::FilterPolicyScope,
    /// DeliveryPolicy as stored (JSON), if set: see [`crate::delivery_policy::DeliveryPolicy`].
    pub delivery_policy: Option<String>,
    /// The `deadLetterTargetArn` of RedrivePolicy, when it is set, JSON and names one.
    pub dead_letter_target_arn: Option<String>,
    /// SubscriptionRoleArn as stored, if set (Firehose subscriptions).
    pub subscription_role_arn: Option<String>,
    /// ReplayPolicy as stored (JSON), if set (FIFO topics with an archive).
    pub replay_policy: Option<String>,
    /// [`SEED_PAYLOAD_ATTRIBUTE`] is present: a seeds' subscription.
    pub seed_payload: bool,
    /// [`SUBSCRIBER_ACCOUNT_ATTRIBUTE`]: the account that made the subscription, when it
    /// is not the topic's (`None`: the topic's account owns it).
    pub subscriber_account: Option<String>,
    /// [`CONFIRMATION_AUTHENTICATED_ATTRIBUTE`]: how ConfirmSubscription confirmed it
    /// (`None`: it did not).
    pub confirmation_authenticated: Option<bool>,
}

impl SubscriptionConfig {
    /// Reads the typed configuration from a subscription's stored attributes (or
    /// Subscribe's validated ones): the one function that reads subscription attributes by
    /// name. Unset attributes take AWS's defaults.
    pub fn from_attributes(attributes: &BTreeMap<String, String>) -> Self {
        use crate::filter_policy::FilterPolicyScope;
        SubscriptionConfig {
            raw_message_delivery: attributes
                .get("RawMessageDelivery")
                .is_some_and(|v| v == "true"),
            filter_policy: attributes
                .get("FilterPolicy")
                .filter(|p| !p.is_empty())
                .cloned(),
            filter_policy_scope: match attributes.get("FilterPolicyScope").map(String::as_str) {
                Some("MessageBody") => FilterPolicyScope::MessageBody,
                _ => FilterPolicyScope::MessageAttributes,
            },
            delivery_policy: attributes.get("DeliveryPolicy").cloned(),
            dead_letter_target_arn: attributes
                .get("RedrivePolicy")
                .and_then(|p| serde_json::from_str::<Value>(p).ok())
                .and_then(|v| v.get("deadLetterTargetArn")?.as_str().map(str::to_owned)),
            subscription_role_arn: attributes.get("SubscriptionRoleArn").cloned(),
            replay_policy: attributes.get("ReplayPolicy").cloned(),
            seed_payload: attributes.contains_key(SEED_PAYLOAD_ATTRIBUTE),
            subscriber_account: attributes.get(SUBSCRIBER_ACCOUNT_ATTRIBUTE).cloned(),
            confirmation_authenticated: attributes
                .get(CONFIRMATION_AUTHENTICATED_ATTRIBUTE)
                .map(|v| v == "true"),
        }
    }
}

/// The encryption at rest of what Loft keeps of `topic`'s messages (recorded messages,
/// pending HTTP/S and Lambda deliveries, FIFO archive entries): sealed under a data key of
/// the topic and its KmsMasterKeyId when one is set (SNS Developer Guide, "Encryption at
/// rest"); `None` (stored as they are) otherwise. SNS has no SSE default of its own.
pub fn topic_seal(topic: &crate::model::TopicRecord) -> Option<crate::model::TopicSeal> {
    TopicConfig::from_attributes(&topic.attributes).seal(topic.id)
}

/// The value AWS reports for a settable attribute that was never set.
pub fn default_value(name: &str) -> Option<&'static str> {
    Some(match name {
        "DelaySeconds" => "0",
        "MaximumMessageSize" => "1048576",
        "MessageRetentionPeriod" => "345600",
        "ReceiveMessageWaitTimeSeconds" => "0",
        "VisibilityTimeout" => "30",
        "SqsManagedSseEnabled" => "true",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn source_queue_arns_only_with_by_queue() {
        let policy = |p: &str| validate(&attrs(&[("RedriveAllowPolicy", p)]), true, false);
        assert!(policy(r#"{"redrivePermission":"allowAll"}"#).is_ok());
        assert!(policy(r#"{"redrivePermission":"byQueue","sourceQueueArns":["arn:aws:sqs:us-east-1:000000000000:q"]}"#).is_ok());
        for permission in ["allowAll", "denyAll"] {
            let e = policy(&format!(
                r#"{{"redrivePermission":"{permission}","sourceQueueArns":["arn:aws:sqs:us-east-1:000000000000:q"]}}"#
            ))
            .unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidParameterValue, "{permission}");
        }
    }

    #[test]
    fn ranges_are_enforced() {
        assert!(validate(&attrs(&[("VisibilityTimeout", "43200")]), true, false).is_ok());
        let e = validate(&attrs(&[("VisibilityTimeout", "43201")]), true, false).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidAttributeValue);
        let e = validate(&attrs(&[("DelaySeconds", "x")]), true, false).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidAttributeValue);
        assert!(validate(&attrs(&[("MaximumMessageSize", "1048576")]), true, false).is_ok());
        assert!(validate(&attrs(&[("MaximumMessageSize", "1048577")]), true, false).is_err());
    }

    #[test]
    fn unknown_and_read_only_names_are_rejected() {
        let e = validate(&attrs(&[("Colour", "blue")]), true, false).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidAttributeName);
        let e = validate(&attrs(&[("QueueArn", "x")]), true, false).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidAttributeName);
        let e = validate(
            &attrs(&[("ContentBasedDeduplication", "true")]),
            true,
            false,
        )
        .unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidAttributeName);
    }

    #[test]
    fn redrive_policy_accepts_string_and_number_counts() {
        let p = RedrivePolicy::parse(
            r#"{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:dlq","maxReceiveCount":"3"}"#,
        )
        .unwrap();
        assert_eq!(p.max_receive_count, 3);
        assert_eq!(p.dlq_name(), "dlq");
        assert!(
            RedrivePolicy::parse(r#"{"deadLetterTargetArn":"x","maxReceiveCount":3}"#).is_err()
        );
        assert!(RedrivePolicy::parse(
            r#"{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:0:dlq","maxReceiveCount":0}"#
        )
        .is_err());
    }

    #[test]
    fn config_defaults() {
        let c = QueueConfig::from_attributes(&BTreeMap::new());
        assert_eq!(c.visibility_timeout, 30);
        assert_eq!(c.retention_seconds, 345_600);
        assert!(!c.fifo);
    }

    #[test]
    fn topic_config_defaults() {
        let c = TopicConfig::from_attributes(&BTreeMap::new());
        assert_eq!(c, TopicConfig::default());
        assert!(!c.fifo && !c.content_based_deduplication && !c.signature_version_2);
        assert_eq!(c.feedback("SQS").success_sample_rate, 100);
        assert!(!c.feedback("HTTP").success && !c.feedback("HTTP").failure);
        assert_eq!(c.seal(7), None);
    }

    #[test]
    fn topic_config_reads_each_attribute() {
        let attrs: BTreeMap<String, String> = [
            ("FifoTopic", "TRUE"),
            ("ContentBasedDeduplication", "true"),
            ("FifoThroughputScope", "MessageGroup"),
            ("TracingConfig", "Active"),
            ("SignatureVersion", "2"),
            ("DisplayName", ""),
            ("DeliveryPolicy", "{}"),
            ("Policy", "{\"Statement\":[]}"),
            (DATA_PROTECTION_POLICY_ATTRIBUTE, ""),
            ("ArchivePolicy", "{\"MessageRetentionPeriod\":\"7\"}"),
            (ARCHIVE_START_ATTRIBUTE, "1234"),
            ("KmsMasterKeyId", "alias/aws/sns"),
            ("LambdaFailureFeedbackRoleArn", "arn:aws:iam::1:role/r"),
            ("LambdaSuccessFeedbackSampleRate", "25"),
            ("HTTPSuccessFeedbackRoleArn", ""),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        let c = TopicConfig::from_attributes(&attrs);
        assert!(c.fifo && c.content_based_deduplication && c.dedup_per_group);
        assert!(c.tracing_active && c.signature_version_2);
        // An empty DisplayName or KmsMasterKeyId counts as unset; other texts are kept as
        // stored, empty or not.
        assert_eq!(c.display_name, None);
        assert_eq!(c.delivery_policy.as_deref(), Some("{}"));
        assert_eq!(c.policy.as_deref(), Some("{\"Statement\":[]}"));
        assert_eq!(c.data_protection_policy.as_deref(), Some(""));
        assert_eq!(
            c.archive_policy.as_deref(),
            Some("{\"MessageRetentionPeriod\":\"7\"}")
        );
        assert_eq!(c.archive_start_ms, Some(1234));
        assert_eq!(
            c.seal(7),
            Some(crate::model::TopicSeal {
                topic_id: 7,
                key_id: "alias/aws/sns".into()
            })
        );
        let lambda = c.feedback("Lambda");
        assert!(lambda.failure && !lambda.success);
        assert_eq!(lambda.success_sample_rate, 25);
        assert!(
            !c.feedback("HTTP").success,
            "an empty role ARN logs nothing"
        );
        assert_eq!(c.feedback("email"), FeedbackConfig::default());
    }

    #[test]
    fn subscription_config_defaults_and_values() {
        use crate::filter_policy::FilterPolicyScope;
        let c = SubscriptionConfig::from_attributes(&BTreeMap::new());
        assert_eq!(c, SubscriptionConfig::default());
        assert_eq!(c.filter_policy_scope, FilterPolicyScope::MessageAttributes);
        let attrs: BTreeMap<String, String> = [
            ("RawMessageDelivery", "true"),
            ("FilterPolicy", "{\"a\":[\"b\"]}"),
            ("FilterPolicyScope", "MessageBody"),
            ("DeliveryPolicy", "{}"),
            (
                "RedrivePolicy",
                "{\"deadLetterTargetArn\":\"arn:aws:sqs:us-east-1:1:dlq\"}",
            ),
            ("SubscriptionRoleArn", "arn:aws:iam::1:role/r"),
            ("ReplayPolicy", "{}"),
            (SEED_PAYLOAD_ATTRIBUTE, "true"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        let c = SubscriptionConfig::from_attributes(&attrs);
        assert!(c.raw_message_delivery && c.seed_payload);
        assert_eq!(c.filter_policy.as_deref(), Some("{\"a\":[\"b\"]}"));
        assert_eq!(c.filter_policy_scope, FilterPolicyScope::MessageBody);
        assert_eq!(c.delivery_policy.as_deref(), Some("{}"));
        assert_eq!(
            c.dead_letter_target_arn.as_deref(),
            Some("arn:aws:sqs:us-east-1:1:dlq")
        );
        assert_eq!(
            c.subscription_role_arn.as_deref(),
            Some("arn:aws:iam::1:role/r")
        );
        assert_eq!(c.replay_policy.as_deref(), Some("{}"));
        // An empty FilterPolicy is no filter policy; a RedrivePolicy that is not JSON
        // names no dead-letter queue.
        let attrs: BTreeMap<String, String> = [("FilterPolicy", ""), ("RedrivePolicy", "x")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        let c = SubscriptionConfig::from_attributes(&attrs);
        assert_eq!(c.filter_policy, None);
        assert_eq!(c.dead_letter_target_arn, None);
    }

    #[test]
    fn topic_config_lowercase_values_only() {
        // Stored booleans are lowercase (validated on CreateTopic / SetTopicAttributes);
        // the publish path compared them exactly, and still does.
        let attrs: BTreeMap<String, String> = [("ContentBasedDeduplication", "TRUE")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        assert!(!TopicConfig::from_attributes(&attrs).content_based_deduplication);
    }
}
