//! Topics and subscriptions: create, list, attributes, subscribe and confirm, unsubscribe,
//! tags, permissions; and the seeds' topic API on the same engine.
//!
//! Sources: SNS API Reference (CreateTopic, GetTopicAttributes, SetTopicAttributes,
//! Subscribe, ConfirmSubscription, Unsubscribe, ListSubscriptions, GetSubscriptionAttributes,
//! SetSubscriptionAttributes, TagResource, AddPermission); `chapter-42-sns.md`
//! ("Topics and subscriptions").

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::envelope::{sender_of, SignedFields};
use super::sns_errors::{check_arn_elements, invalid};
use super::{Sns, SnsDelivery};
use crate::attributes::{SubscriptionConfig, TopicConfig};
use crate::clock::iso_timestamp;
use crate::delivery_policy::DeliveryPolicy;
use crate::error::{Error, ErrorCode, Result};
use crate::filter_policy::FilterPolicy;
use crate::message::MessageAttributes;
use crate::model::{
    NewSubscription, RecordedFilter, RecordedMessage, SubscriptionProtocol, SubscriptionRecord,
    TopicRecord,
};
use crate::names::{self, Naming};
use crate::service::core::access::Principal;

type Map = BTreeMap<String, String>;

/// The attribute marking a subscription made through the seeds' API: it receives the
/// seeds' `{"topic","message"}` JSON payload rather than an SNS envelope.
pub use crate::attributes::{
    CONFIRMATION_AUTHENTICATED_ATTRIBUTE, SEED_PAYLOAD_ATTRIBUTE, SUBSCRIBER_ACCOUNT_ATTRIBUTE,
};

/// One page of topics or subscriptions, at most [`PAGE_SIZE`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page<T> {
    /// The items.
    pub items: Vec<T>,
    /// Token for the next page.
    pub next_token: Option<String>,
}

/// ListTopics and ListSubscriptions page size (AWS: 100).
pub const PAGE_SIZE: usize = 100;

/// What Subscribe returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubscribeResult {
    /// The subscription's ARN, or `pending confirmation`.
    pub subscription_arn: String,
}

fn topic_not_found() -> Error {
    Error::new(ErrorCode::NotFound, "Topic does not exist")
}

fn subscription_not_found() -> Error {
    Error::new(ErrorCode::NotFound, "Subscription does not exist")
}

/// The actions of the SNS API (botocore `sns/2010-03-31`), the names AddPermission's
/// ActionName may give.
const SNS_ACTIONS: &[&str] = &[
    "AddPermission",
    "CheckIfPhoneNumberIsOptedOut",
    "ConfirmSubscription",
    "CreatePlatformApplication",
    "CreatePlatformEndpoint",
    "CreateSMSSandboxPhoneNumber",
    "CreateTopic",
    "DeleteEndpoint",
    "DeletePlatformApplication",
    "DeleteSMSSandboxPhoneNumber",
    "DeleteTopic",
    "GetDataProtectionPolicy",
    "GetEndpointAttributes",
    "GetPlatformApplicationAttributes",
    "GetSMSAttributes",
    "GetSMSSandboxAccountStatus",
    "GetSubscriptionAttributes",
    "GetTopicAttributes",
    "ListEndpointsByPlatformApplication",
    "ListOriginationNumbers",
    "ListPhoneNumbersOptedOut",
    "ListPlatformApplications",
    "ListSMSSandboxPhoneNumbers",
    "ListSubscriptions",
    "ListSubscriptionsByTopic",
    "ListTagsForResource",
    "ListTopics",
    "OptInPhoneNumber",
    "Publish",
    "PublishBatch",
    "PutDataProtectionPolicy",
    "RemovePermission",
    "SetEndpointAttributes",
    "SetPlatformApplicationAttributes",
    "SetSMSAttributes",
    "SetSubscriptionAttributes",
    "SetTopicAttributes",
    "Subscribe",
    "TagResource",
    "Unsubscribe",
    "UntagResource",
    "VerifySMSSandboxPhoneNumber",
];

const TOPIC_SETTABLE: &[&str] = &[
    "DeliveryPolicy",
    "DisplayName",
    "Policy",
    "KmsMasterKeyId",
    "TracingConfig",
    "SignatureVersion",
    "ContentBasedDeduplication",
    "FifoTopic",
    "ArchivePolicy",
    "FifoThroughputScope",
    "DataProtectionPolicy",
];

fn is_feedback_attribute(name: &str) -> bool {
    ["HTTP", "SQS", "Lambda", "Firehose", "Application"]
        .iter()
        .any(|p| {
            name.strip_prefix(p).is_some_and(|rest| {
                matches!(
                    rest,
                    "SuccessFeedbackRoleArn"
                        | "FailureFeedbackRoleArn"
                        | "SuccessFeedbackSampleRate"
                )
            })
        })
}

/// The longest DisplayName, in characters: "maximum 100 characters long, including hyphens
/// (-), underscores (_), spaces, and tabs" (CloudFormation's AWS::SNS::Topic DisplayName,
/// the one place AWS documents it).
pub const DISPLAY_NAME_MAX_CHARS: usize = 100;

/// Checks one topic attribute at CreateTopic (`creating`) or SetTopicAttributes and
/// returns the value kept.
///
/// Rules (SNS API Reference, CreateTopic and SetTopicAttributes, Attributes): the names are
/// those the two operations list (`TOPIC_SETTABLE` and each protocol's delivery-status
/// trio), else "Invalid parameter: AttributeName" (AWS's recorded words for an unknown
/// subscription attribute; for a topic's, Loft's reading). DisplayName: at most
/// [`DISPLAY_NAME_MAX_CHARS`] characters. `*FeedbackRoleArn`: an IAM role's ARN, or empty
/// for none. `*SuccessFeedbackSampleRate`: a whole number 0 to 100 ("percentage of
/// successful messages to sample"), digits only. Policy: a JSON object.
///
/// Errors: `InvalidParameter`. A refused value is named as AWS names DisplayName's
/// (quoted from real accounts: "Invalid parameter: Attributes Reason: DisplayName" at
/// CreateTopic, "Invalid parameter: DisplayName" at SetTopicAttributes, the form AWS
/// records for subscription attributes at Subscribe and Set); a Policy that is not a JSON
/// object is "... Policy Error: null", AWS's words for a topic policy it cannot use (quoted
/// from real accounts; for a text that is not JSON, Loft's reading). The other values'
/// words are not recorded: Loft's are the attribute's name and ": invalid value".
fn validate_topic_attribute(name: &str, value: &str, creating: bool, fifo: bool) -> Result<String> {
    if !TOPIC_SETTABLE.contains(&name) && !is_feedback_attribute(name) {
        return Err(invalid("AttributeName"));
    }
    let refused = |what: &str| {
        if creating {
            invalid(&format!("Attributes Reason: {what}"))
        } else {
            invalid(what)
        }
    };
    let bad = || refused(&format!("{name}: invalid value"));
    // Every attribute is text GetTopicAttributes gives back in XML: none may hold a
    // character XML cannot carry (a DisplayName with a control character, say).
    if !crate::message::valid_characters(value) {
        return Err(bad());
    }
    Ok(match name {
        "DeliveryPolicy" if !value.is_empty() => DeliveryPolicy::stored_topic_document(value)?,
        "DataProtectionPolicy" if !value.is_empty() => {
            crate::data_protection::Policy::parse(value)?;
            value.to_owned()
        }
        "ArchivePolicy" => super::archive::parse_policy(value, fifo)?.attribute(),
        "Policy" if !value.is_empty() => match serde_json::from_str::<Value>(value) {
            Ok(Value::Object(_)) => value.to_owned(),
            _ => return Err(refused("Policy Error: null")),
        },
        "DisplayName" => {
            if value.chars().count() > DISPLAY_NAME_MAX_CHARS {
                return Err(refused("DisplayName"));
            }
            value.to_owned()
        }
        n if n.ends_with("SuccessFeedbackSampleRate") => {
            let digits = !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit());
            match value.parse::<u32>() {
                Ok(rate) if digits && rate <= 100 => value.to_owned(),
                _ => return Err(bad()),
            }
        }
        n if n.ends_with("FeedbackRoleArn") => {
            if !value.is_empty() && !is_role_arn(value) {
                return Err(bad());
            }
            value.to_owned()
        }
        "TracingConfig" => match value {
            "Active" | "PassThrough" => value.to_owned(),
            _ => return Err(bad()),
        },
        "SignatureVersion" => match value {
            "1" | "2" => value.to_owned(),
            _ => return Err(bad()),
        },
        "FifoTopic" => {
            if !creating {
                return Err(invalid("AttributeName"));
            }
            match value.to_ascii_lowercase().as_str() {
                "true" | "false" => value.to_ascii_lowercase(),
                _ => return Err(bad()),
            }
        }
        "ContentBasedDeduplication" => {
            if !fifo {
                return Err(invalid(
                    "Attributes Reason: ContentBasedDeduplication can only be set for FIFO topics",
                ));
            }
            match value.to_ascii_lowercase().as_str() {
                "true" | "false" => value.to_ascii_lowercase(),
                _ => return Err(bad()),
            }
        }
        "FifoThroughputScope" => match value {
            "Topic" | "MessageGroup" => value.to_owned(),
            _ => return Err(bad()),
        },
        _ => value.to_owned(),
    })
}

/// Whether `value` is an IAM role ARN: `arn:{partition}:iam::{12 digits}:role/{path and
/// name}` (IAM User Guide, "IAM identifiers": role ARNs), as SubscriptionRoleArn must be.
fn is_role_arn(value: &str) -> bool {
    let mut parts = value.splitn(6, ':');
    let (Some("arn"), Some(partition), Some("iam"), Some(""), Some(account), Some(resource)) = (
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
    ) else {
        return false;
    };
    partition.starts_with("aws")
        && account.len() == 12
        && account.bytes().all(|b| b.is_ascii_digit())
        && resource
            .strip_prefix("role/")
            .and_then(|r| r.rsplit('/').next())
            .is_some_and(|name| !name.is_empty())
}

/// Checks one subscription attribute and returns the value kept. `at_subscribe` words the
/// RawMessageDelivery and FilterPolicyScope refusals as AWS does for Subscribe ("Invalid
/// parameter: Attributes Reason: RawMessageDelivery: ...") rather than for
/// SetSubscriptionAttributes ("Invalid parameter: RawMessageDelivery: ...", both recorded). Errors: `InvalidParameter`.
fn validate_subscription_attribute(
    name: &str,
    value: &str,
    protocol: SubscriptionProtocol,
    at_subscribe: bool,
) -> Result<String> {
    use SubscriptionProtocol as P;
    let bad = |why: &str| invalid(&format!("Attributes Reason: {name}: {why}"));
    Ok(match name {
        "RawMessageDelivery" => {
            // Raw delivery: "Amazon SQS, HTTP/S and Firehose endpoints" (SNS Developer
            // Guide, "Amazon SNS raw message delivery").
            let raw = match protocol {
                P::Sqs | P::Http | P::Https | P::Firehose => true,
                P::Email | P::EmailJson | P::Sms | P::Application | P::Lambda => false,
            };
            if !raw {
                return Err(invalid(&format!(
                    "Attributes Reason: Delivery protocol [{protocol}] does not support raw message delivery."
                )));
            }
            match value.to_ascii_lowercase().as_str() {
                "true" | "false" => value.to_ascii_lowercase(),
                _ => {
                    let prefix = if at_subscribe {
                        "Attributes Reason: "
                    } else {
                        ""
                    };
                    return Err(invalid(&format!(
                        "{prefix}RawMessageDelivery: Invalid value [{value}]. Must be true or false."
                    )));
                }
            }
        }
        // Parsed by `check_filter_scope` once every attribute is known: the same Subscribe
        // may set FilterPolicyScope=MessageBody, whose policies may nest.
        "FilterPolicy" => value.to_owned(),
        // Exactly one of the two names, case and all (SNS API Reference,
        // SetSubscriptionAttributes). The words are AWS's, recorded for
        // SetSubscriptionAttributes (`test_set_subscription_filter_policy_scope`); Subscribe
        // puts "Attributes Reason: " before them, as it does for every attribute AWS was
        // recorded refusing there (RawMessageDelivery, FilterPolicy).
        "FilterPolicyScope" => match value {
            "MessageAttributes" | "MessageBody" => value.to_owned(),
            _ => {
                let prefix = if at_subscribe {
                    "Attributes Reason: "
                } else {
                    ""
                };
                return Err(invalid(&format!(
                    "{prefix}FilterPolicyScope: Invalid value [{value}]. Please use either MessageBody or MessageAttributes"
                )));
            }
        },
        "DeliveryPolicy" => {
            if !protocol.is_http() {
                return Err(bad("only HTTP/S subscriptions have a delivery policy"));
            }
            if !value.is_empty() {
                DeliveryPolicy::parse_subscription(value)?;
            }
            value.to_owned()
        }
        "RedrivePolicy" => {
            if !value.is_empty() {
                let v: Value = serde_json::from_str(value)
                    .map_err(|e| invalid(&format!("RedrivePolicy: failed to parse JSON. {e}")))?;
                let arn = v
                    .get("deadLetterTargetArn")
                    .and_then(Value::as_str)
                    .ok_or_else(|| bad("deadLetterTargetArn is required"))?;
                if names::arn_resource(arn, "sqs").is_none() {
                    return Err(invalid(
                        "RedrivePolicy: deadLetterTargetArn is an invalid arn",
                    ));
                }
            }
            value.to_owned()
        }
        // Started by `SnsDelivery::start_replay` once the subscription is stored.
        "ReplayPolicy" => {
            super::replay::parse_policy(value)?;
            value.to_owned()
        }
        // The role SNS assumes to write to a Firehose delivery stream (SNS Developer Guide,
        // "Fanout to Firehose delivery streams"); no other protocol has one.
        "SubscriptionRoleArn" => {
            if protocol != P::Firehose {
                return Err(bad(&format!(
                    "SubscriptionRoleArn is only supported for the firehose protocol, not {protocol}"
                )));
            }
            if !is_role_arn(value) {
                return Err(bad(
                    "must be an IAM role ARN (arn:aws:iam::ACCOUNT:role/NAME); it is required for firehose subscriptions",
                ));
            }
            value.to_owned()
        }
        _ => return Err(invalid("AttributeName")),
    })
}

impl SnsDelivery {
    /// The topic with this ARN. Errors: `InvalidParameter` for a malformed ARN, `NotFound`.
    pub async fn topic_by_arn(&self, arn: &str) -> Result<TopicRecord> {
        check_arn_elements("TopicArn", arn)?;
        let name = self
            .key_of_arn(arn, "sns")
            .ok_or_else(|| invalid("TopicArn"))?;
        self.store
            .get_topic(&name)
            .await?
            .ok_or_else(topic_not_found)
    }

    /// The subscription with this ARN: its id names it, and the rest, its topic's ARN,
    /// must name the topic it is of. An ARN of another topic with a subscription's id
    /// names nothing (so permissions checked on the ARN's topic are the subscription's
    /// topic's), and is answered as a subscription that does not exist, as AWS answers it.
    /// Errors: `InvalidParameter`, `NotFound`.
    pub async fn subscription_by_arn(&self, arn: &str) -> Result<SubscriptionRecord> {
        check_arn_elements("SubscriptionArn", arn)?;
        if !arn.starts_with("arn:aws:sns:") {
            return Err(invalid("SubscriptionArn"));
        }
        // A subscription ARN is its topic's ARN and one more element, the id.
        let uuid = arn
            .splitn(7, ':')
            .nth(6)
            .and_then(|rest| rest.rsplit(':').next())
            .filter(|u| !u.is_empty())
            .ok_or_else(|| invalid("SubscriptionId"))?;
        let sub = self
            .store
            .get_subscription(uuid)
            .await?
            .ok_or_else(subscription_not_found)?;
        let topic_part = arn.rsplit_once(':').map_or("", |(topic, _)| topic);
        if self.key_of_arn(topic_part, "sns").as_deref() != Some(sub.topic_name.as_str()) {
            return Err(subscription_not_found());
        }
        Ok(sub)
    }

    /// A subscription's ARN: the topic's ARN, `:` and its UUID.
    pub fn subscription_arn(&self, s: &SubscriptionRecord) -> String {
        format!("{}:{}", self.topic_arn(&s.topic_name), s.uuid)
    }
}

impl Sns {
    /// CreateTopic: creates the topic, or returns the existing one when its attributes and
    /// tags match. Errors: `InvalidParameter` (name, FIFO rules, attributes, an existing
    /// topic with other attributes or tags), `TopicLimitExceeded` (the topic cap).
    pub async fn create_topic(
        &self,
        name: &str,
        attributes: Map,
        tags: Vec<(String, String)>,
    ) -> Result<TopicRecord> {
        check_tag_list(&tags)?;
        let tags = unique_tags(tags)?;
        let fifo = TopicConfig::from_attributes(&attributes).fifo;
        // FIFO topic names end with .fifo and only FIFO topics' names do (SNS Developer
        // Guide, "FIFO topics"); AWS reports it as any other bad name.
        if fifo != name.ends_with(".fifo") {
            return Err(invalid("Topic Name"));
        }
        names::check_topic_name(self.split_key(name).1, Naming::Aws)?;
        let mut attrs = Map::new();
        for (k, v) in &attributes {
            attrs.insert(k.clone(), validate_topic_attribute(k, v, true, fifo)?);
        }
        check_sns_tags(&tags)?;
        // An ArchivePolicy of `{}` is no archive; a real one starts the archive now.
        if TopicConfig::from_attributes(&attrs)
            .archive_policy
            .as_deref()
            == Some("")
        {
            attrs.remove("ArchivePolicy");
        }
        let mut stored = attrs.clone();
        if TopicConfig::from_attributes(&attrs)
            .archive_policy
            .is_some()
        {
            stored.insert(
                super::archive::ARCHIVE_START_ATTRIBUTE.to_owned(),
                self.now_ms().to_string(),
            );
        }
        let (topic, created) = self.store_create_topic(name, stored, tags.clone()).await?;
        if !created {
            let differs = attrs.iter().any(|(k, v)| {
                topic
                    .attributes
                    .get(k)
                    .map_or(!(k == "FifoTopic" && v == "false"), |cur| {
                        match k.as_str() {
                            // Kept in its stored form, which a topic created before that form
                            // may not have.
                            "DeliveryPolicy" => {
                                DeliveryPolicy::stored_topic_document(cur).as_deref().ok()
                                    != Some(v)
                            }
                            _ => cur != v,
                        }
                    })
            });
            if differs {
                return Err(invalid(
                    "Attributes Reason: Topic already exists with different attributes",
                ));
            }
            // Tags given again must each be on the topic already (a subset is fine).
            if tags.iter().any(|(k, v)| topic.tags.get(k) != Some(v)) {
                return Err(invalid(
                    "Tags Reason: Topic already exists with different tags",
                ));
            }
        }
        Ok(topic)
    }

    /// DeleteTopic: the topic and its subscriptions; deleting a missing topic succeeds.
    /// Errors: `InvalidParameter` for a malformed ARN.
    pub async fn delete_topic(&self, arn: &str) -> Result<()> {
        let name = self
            .key_of_arn(arn, "sns")
            .ok_or_else(|| invalid("TopicArn"))?;
        if let Some(t) = self.store.get_topic(&name).await? {
            if self.store.delete_topic(t.id).await? {
                self.topic_deleted(&t.name);
            }
        }
        Ok(())
    }

    /// ListTopics of the default account and region ([`Sns::list_topics_of`]).
    /// Errors: `InvalidParameter` for a bad token.
    pub async fn list_topics(&self, next_token: Option<&str>) -> Result<Page<TopicRecord>> {
        let (account, region) = (self.config.account_id.clone(), self.config.region.clone());
        let scope = names::Scope {
            account: &account,
            region: &region,
        };
        self.list_topics_of(scope, next_token).await
    }

    /// ListTopics: the topics of `scope` (an account in a region), 100 a page. Errors:
    /// `InvalidParameter` "Invalid parameter: NextToken" for a token that names no topic
    /// key (as ListSubscriptions refuses one that does not open).
    pub async fn list_topics_of(
        &self,
        scope: names::Scope<'_>,
        next_token: Option<&str>,
    ) -> Result<Page<TopicRecord>> {
        // A token is the base64 of a topic's store key (account and region parts, then a
        // topic name: letters, digits, `-`, `_`, `.fifo`); one that names no such key
        // was never given out.
        if let Some(t) = next_token.filter(|t| !t.is_empty()) {
            let key = crate::message::base64_decode(t)
                .ok()
                .and_then(|b| String::from_utf8(b).ok())
                .unwrap_or_default();
            let plausible = !key.is_empty()
                && key
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'));
            if !plausible {
                return Err(invalid("NextToken"));
            }
        }
        let topics = self.topics_of(scope).await?;
        page(topics, next_token, |t| t.name.clone())
    }

    /// The topics of `scope` (an account in a region), by store key: read from the store
    /// without other accounts' rows ([`Core::listing_of`](crate::service::Core::listing_of)).
    ///
    /// Errors: `InternalError` when storage fails.
    pub async fn topics_of(&self, scope: names::Scope<'_>) -> Result<Vec<TopicRecord>> {
        let (prefix, bare) = self.listing_of(scope);
        let topics = self.store.list_topics_of(&prefix, bare).await?;
        Ok(self.in_scope(topics, scope, |t| &t.name))
    }

    /// GetTopicAttributes: stored attributes plus Owner, TopicArn, Policy, DisplayName,
    /// subscription counts and EffectiveDeliveryPolicy. Errors: `InvalidParameter`,
    /// `NotFound`.
    pub async fn get_topic_attributes(&self, arn: &str) -> Result<Map> {
        let topic = self.topic_by_arn(arn).await?;
        let subs = self.store.list_subscriptions(Some(topic.id)).await?;
        let topic_arn = self.topic_arn(&topic.name);
        let mut out = Map::new();
        out.insert(
            "Policy".into(),
            default_topic_policy(&topic_arn, self.split_key(&topic.name).0),
        );
        out.insert("Owner".into(), self.split_key(&topic.name).0.to_owned());
        out.insert(
            "SubscriptionsPending".into(),
            subs.iter().filter(|s| !s.confirmed).count().to_string(),
        );
        out.insert("TopicArn".into(), topic_arn);
        out.insert(
            "EffectiveDeliveryPolicy".into(),
            topic_effective_delivery_policy(
                TopicConfig::from_attributes(&topic.attributes)
                    .delivery_policy
                    .as_deref(),
            ),
        );
        out.insert(
            "SubscriptionsConfirmed".into(),
            subs.iter().filter(|s| s.confirmed).count().to_string(),
        );
        out.insert("DisplayName".into(), String::new());
        out.insert("SubscriptionsDeleted".into(), "0".into());
        if topic.name.ends_with(".fifo") {
            out.insert("FifoTopic".into(), "true".into());
            out.insert("ContentBasedDeduplication".into(), "false".into());
        }
        for (k, v) in &topic.attributes {
            // GetDataProtectionPolicy reads the policy; AWS does not list it here.
            if (k == "FifoTopic" && v == "false")
                || k == super::protection::POLICY_ATTRIBUTE
                || k == super::archive::ARCHIVE_START_ATTRIBUTE
            {
                continue;
            }
            out.insert(k.clone(), v.clone());
        }
        if let Some(t) = super::archive::beginning_archive_time(&topic, self.now_ms()) {
            out.insert("BeginningArchiveTime".into(), t);
        }
        Ok(out)
    }

    /// SetTopicAttributes. Errors: `InvalidParameter`, `NotFound`.
    pub async fn set_topic_attribute(&self, arn: &str, name: &str, value: &str) -> Result<()> {
        let topic = self.topic_by_arn(arn).await?;
        let fifo = topic.name.ends_with(".fifo");
        let value = validate_topic_attribute(name, value, false, fifo)?;
        let mut attrs = topic.attributes.clone();
        let start = super::archive::ARCHIVE_START_ATTRIBUTE;
        let mut ends_archive = false;
        if name == "ArchivePolicy" {
            // `{}` (or nothing) ends the archive and drops what it kept; a policy keeps the
            // archive's start when one runs already (a new period applies to it).
            if value.is_empty() {
                ends_archive = attrs.remove(name).is_some();
                attrs.remove(start);
            } else {
                attrs
                    .entry(start.to_owned())
                    .or_insert_with(|| self.now_ms().to_string());
                attrs.insert(name.to_owned(), value);
            }
        } else if value.is_empty()
            && matches!(name, "DeliveryPolicy" | "Policy" | "DataProtectionPolicy")
        {
            attrs.remove(name);
        } else {
            attrs.insert(name.to_owned(), value);
        }
        self.store.set_topic_attributes(topic.id, attrs).await?;
        if ends_archive {
            self.store.delete_archive(topic.id).await?;
        }
        Ok(())
    }

    /// Subscribe. `sqs`, `sms`, `lambda`, `firehose` and `application` subscriptions are
    /// confirmed at once; `http`/`https` get a SubscriptionConfirmation POST, `email` a
    /// recorded confirmation message, and an `sqs` queue of another account than the
    /// subscriber's (through [`Sns::subscribe_as`]) a SubscriptionConfirmation message in the
    /// queue; those stay pending until ConfirmSubscription.
    /// Subscribing the same endpoint again with the same attributes returns the same ARN.
    ///
    /// Errors: `NotFound` (topic), `InvalidParameter` (protocol, endpoint, an HTTP/S
    /// endpoint whose IP address the endpoint policy denies, attributes, an existing
    /// subscription with other attributes, a protocol other than `sqs` on a FIFO topic, a
    /// FIFO queue on a standard topic).
    pub async fn subscribe(
        &self,
        topic_arn: &str,
        protocol: &str,
        endpoint: Option<&str>,
        attributes: Map,
        return_arn: bool,
    ) -> Result<SubscribeResult> {
        self.subscribe_as(
            None, None, topic_arn, protocol, endpoint, attributes, return_arn,
        )
        .await
    }

    /// Subscribe by the identity `principal` (an IAM ARN), which GetSubscriptionAttributes
    /// then reports as `SubscriptionPrincipal` (`None`: [`Core::principal_arn`](crate::service::Core::principal_arn)),
    /// of the 12-digit `account` (`None`: the topic's). A subscription belongs to the
    /// account that made it: one of another account than the topic's is that account's
    /// ([`SUBSCRIBER_ACCOUNT_ATTRIBUTE`], [`Core::subscription_owner`](crate::service::Core::subscription_owner)).
    ///
    /// Errors: as [`Sns::subscribe`].
    #[allow(clippy::too_many_arguments)]
    pub async fn subscribe_as(
        &self,
        principal: Option<&str>,
        account: Option<&str>,
        topic_arn: &str,
        protocol: &str,
        endpoint: Option<&str>,
        attributes: Map,
        return_arn: bool,
    ) -> Result<SubscribeResult> {
        let topic = self.topic_by_arn(topic_arn).await?;
        use SubscriptionProtocol as P;
        let protocol = SubscriptionProtocol::parse(protocol)?;
        let endpoint = endpoint.unwrap_or("").trim();
        // Each protocol's endpoint shape, refused in AWS's words where they are known.
        super::endpoints::check_endpoint(protocol, endpoint, &self.config.region)?;
        // An `application` endpoint is one of the subscriber's platform endpoints that
        // exists ([`Sns::check_application_endpoint`]).
        if protocol == P::Application {
            let owner = account.unwrap_or(self.split_key(&topic.name).0);
            self.check_application_endpoint(owner, endpoint).await?;
        }
        // A function of another account than the topic's is invoked only when it exists
        // and grants the topic's account (`allow_accounts`, as a Lambda resource-based
        // policy's `lambda:InvokeFunction` for that account); checked again at each
        // delivery. A missing one is refused in the same words, naming the ARN the
        // endpoint names, so the answer does not tell whether another account's function
        // exists. The topic's own account's unconfigured functions are recorded, and so
        // are another account's with one account only (`multi_account` off: an ARN of
        // another account names nothing Loft has).
        if protocol == P::Lambda {
            let (account, _) = self.split_key(&topic.name);
            let function =
                crate::functions::FunctionRef::parse(endpoint, account, &self.config.region);
            let refused = function.account != account
                && self
                    .functions
                    .invocable_function(account, endpoint)
                    .is_err()
                && (self.config.multi_account
                    || self.functions.function(account, endpoint).is_ok());
            if refused {
                return Err(Error::new(
                    ErrorCode::AuthorizationError,
                    format!(
                        "User: {} is not authorized to perform: lambda:InvokeFunction on resource: {} because no resource-based policy allows the lambda:InvokeFunction action",
                        principal.map_or_else(|| self.principal_arn(), str::to_owned),
                        function.arn()
                    ),
                ));
            }
        }
        // FIFO topics deliver to SQS queues only, and FIFO queues take only FIFO topics
        // (SNS Developer Guide, "Amazon SNS FIFO topics").
        let fifo_topic = topic.name.ends_with(".fifo");
        if fifo_topic && protocol != P::Sqs {
            return Err(invalid(&format!("Invalid protocol type: {protocol}")));
        }
        if !fifo_topic
            && protocol == P::Sqs
            && names::arn_resource(endpoint, "sqs").is_some_and(|q| q.ends_with(".fifo"))
        {
            // AWS's words, its doubled prefix included.
            return Err(invalid(
                "Invalid parameter: Endpoint Reason: FIFO SQS Queues can not be subscribed to standard SNS topics",
            ));
        }
        if protocol.is_http() {
            self.config
                .endpoint_policy
                .check_url(endpoint)
                .map_err(|why| invalid(&format!("Endpoint Reason: {why}")))?;
        }
        let mut attrs = Map::new();
        for (k, v) in &attributes {
            attrs.insert(
                k.clone(),
                validate_subscription_attribute(k, v, protocol, true)?,
            );
        }
        // Subscribe words a filter policy's refusal "Invalid parameter: Attributes Reason:
        // FilterPolicy: ..." (recorded), SetSubscriptionAttributes without the
        // "Attributes Reason: ".
        check_filter_scope(&attrs).map_err(crate::filter_policy::in_subscribe_call)?;
        check_fifo_redrive(&topic.name, endpoint, &attrs)?;
        let subscriber = account.filter(|a| *a != self.split_key(&topic.name).0);
        check_redrive_owner(self, &topic.name, subscriber, &attrs)?;
        // Subscribe's SubscriptionRoleArn: "Specifying a valid ARN for this attribute is
        // required for Firehose delivery stream subscriptions" (SNS API Reference).
        let config = SubscriptionConfig::from_attributes(&attrs);
        if protocol == P::Firehose && config.subscription_role_arn.is_none() {
            return Err(invalid(
                "Attributes Reason: SubscriptionRoleArn is required for firehose subscriptions",
            ));
        }
        if let Some(policy) = &config.replay_policy {
            if self.check_replay(&topic, policy)?.is_none() {
                // `{}` or empty at Subscribe: no replay, nothing kept.
                attrs.remove("ReplayPolicy");
            }
        }
        let existing = self
            .store
            .list_subscriptions(Some(topic.id))
            .await?
            .into_iter()
            .find(|s| s.protocol == protocol && s.endpoint == endpoint);
        if let Some(s) = existing {
            // Each attribute given must equal the existing one's value, or its default
            // when the subscription never set it; attributes left out are not compared.
            let same = attrs.iter().all(|(k, v)| {
                s.attributes
                    .get(k)
                    .map(String::as_str)
                    .or_else(|| subscription_attribute_default(k))
                    == Some(v.as_str())
            });
            if !same {
                return Err(invalid(
                    "Attributes Reason: Subscription already exists with different attributes",
                ));
            }
            let arn = if s.confirmed || return_arn {
                self.subscription_arn(&s)
            } else {
                "pending confirmation".into()
            };
            return Ok(SubscribeResult {
                subscription_arn: arn,
            });
        }
        // Endpoints a message could reach unasked confirm first (SNS API Reference,
        // Subscribe: "the endpoint owner must call ConfirmSubscription"), and so does a
        // queue of another account than the subscriber's: "If the topic owner [...]
        // subscribes a queue owned by another account, the queue owner must confirm"
        // (SNS Developer Guide, "Sending Amazon SNS messages to an Amazon SQS queue in a
        // different account"). With one account only, every queue is the caller's.
        let needs_confirmation = match protocol {
            P::Http | P::Https | P::Email | P::EmailJson => true,
            P::Sqs => {
                let queue_account = names::arn_account(endpoint)
                    .filter(|a| !a.is_empty())
                    .unwrap_or(&self.config.account_id);
                self.config.multi_account && account.is_some_and(|a| a != queue_account)
            }
            P::Sms | P::Application | P::Lambda | P::Firehose => false,
        };
        let token = needs_confirmation.then(new_token);
        if let Some(p) = principal {
            attrs.insert("SubscriptionPrincipal".into(), p.to_owned());
        }
        if let Some(a) = subscriber {
            attrs.insert(SUBSCRIBER_ACCOUNT_ATTRIBUTE.into(), a.to_owned());
        }
        let sub = self
            .store
            .create_subscription(
                topic.id,
                NewSubscription {
                    uuid: uuid::Uuid::new_v4().to_string(),
                    protocol,
                    endpoint: endpoint.to_owned(),
                    attributes: attrs,
                    confirmed: !needs_confirmation,
                    token: token.clone(),
                },
            )
            .await?;
        if let Some(policy) = SubscriptionConfig::from_attributes(&sub.attributes).replay_policy {
            self.start_replay(&topic, &sub, &policy).await?;
        }
        if let Some(token) = token {
            self.send_confirmation(&topic, &sub, &token).await?;
        }
        let arn = if sub.confirmed || return_arn {
            self.subscription_arn(&sub)
        } else {
            "pending confirmation".into()
        };
        Ok(SubscribeResult {
            subscription_arn: arn,
        })
    }

    /// Queues the SubscriptionConfirmation for an HTTP/S endpoint, puts it in an SQS
    /// subscription's queue ([`SnsDelivery::sqs_confirmation`]), or records it for email.
    async fn send_confirmation(
        &self,
        topic: &TopicRecord,
        sub: &SubscriptionRecord,
        token: &str,
    ) -> Result<()> {
        let topic_arn = self.topic_arn(&topic.name);
        let subscribe_url = format!(
            "{}/?Action=ConfirmSubscription&TopicArn={topic_arn}&Token={token}",
            self.config.advertised_url,
        );
        let message = format!(
            "You have chosen to subscribe to the topic {topic_arn}.\nTo confirm the subscription, visit the SubscribeURL included in this message."
        );
        if sub.protocol.is_http() {
            self.queue_confirmation(
                topic,
                sub,
                "SubscriptionConfirmation",
                token,
                &subscribe_url,
                &message,
            )
            .await?;
        } else if sub.protocol == SubscriptionProtocol::Sqs {
            let fields = SignedFields {
                message_type: "SubscriptionConfirmation".into(),
                message,
                message_id: uuid::Uuid::new_v4().to_string(),
                subject: None,
                subscribe_url: Some(subscribe_url),
                timestamp: iso_timestamp(self.now_ms()),
                token: Some(token.into()),
                topic_arn,
            };
            let queue = match self.key_of_arn(&sub.endpoint, "sqs") {
                Some(key) => self.store.get_queue(&key).await?,
                None => None,
            };
            let confirmation = queue.and_then(|q| {
                let m = self.sqs_confirmation(topic, sub, &q, &fields)?;
                Some((q.id, m))
            });
            match confirmation {
                Some((queue_id, m)) => {
                    self.store
                        .publish(vec![(queue_id, m)], Vec::new(), Vec::new())
                        .await?;
                    self.wake(queue_id);
                }
                None => tracing::warn!(
                    endpoint = %sub.endpoint,
                    topic = %fields.topic_arn,
                    "the SubscriptionConfirmation did not reach the subscription's queue (it is missing, or its Policy does not let the topic send); the subscription stays pending"
                ),
            }
        } else {
            let (sender, message) =
                sender_of(topic, sub.protocol, format!("{message}\n{subscribe_url}"));
            let record = RecordedMessage {
                id: 0,
                account: self.stored_account(self.key_scope(&topic.name).0.account),
                protocol: sub.protocol.as_str().to_owned(),
                endpoint: sub.endpoint.clone(),
                topic_arn: Some(topic_arn),
                subject: Some("AWS Notification - Subscription Confirmation".into()),
                message,
                sender,
                created_at_ms: self.now_ms(),
                seal: crate::attributes::topic_seal(topic),
            };
            self.store
                .publish(Vec::new(), Vec::new(), vec![record])
                .await?;
        }
        Ok(())
    }

    /// ConfirmSubscription: confirms the pending subscription of `topic_arn` holding
    /// `token`; confirming twice returns the same ARN. The token is what is checked: AWS
    /// answers a well-formed token that no subscription of the topic holds with "Invalid
    /// parameter: Token" whether or not the topic exists, and a token not of a token's
    /// form (hexadecimal digits, as SNS's tokens are) with "Invalid token" (recorded).
    ///
    /// `authenticated`: the call was signed and asked `AuthenticateOnUnsubscribe` true, so
    /// only a signed call may unsubscribe the subscription from then on
    /// ([`CONFIRMATION_AUTHENTICATED_ATTRIBUTE`]).
    ///
    /// Errors: `InvalidParameter` (a malformed TopicArn, "Invalid token", "Invalid
    /// parameter: Token").
    pub async fn confirm_subscription(
        &self,
        topic_arn: &str,
        token: &str,
        authenticated: bool,
    ) -> Result<String> {
        check_arn_elements("TopicArn", topic_arn)?;
        if !is_token_form(token) {
            return Err(Error::new(ErrorCode::InvalidParameter, "Invalid token"));
        }
        let topic = match self.topic_by_arn(topic_arn).await {
            Ok(t) => t,
            Err(e) if e.code == ErrorCode::NotFound => return Err(invalid("Token")),
            Err(e) => return Err(e),
        };
        let subs = self.store.list_subscriptions(Some(topic.id)).await?;
        let sub = subs
            .into_iter()
            .find(|s| s.token.as_deref() == Some(token))
            .ok_or_else(|| invalid("Token"))?;
        if !sub.confirmed {
            let mut attributes = sub.attributes.clone();
            attributes.insert(
                CONFIRMATION_AUTHENTICATED_ATTRIBUTE.into(),
                authenticated.to_string(),
            );
            self.store
                .update_subscription(&sub.uuid, attributes, true, sub.token.clone())
                .await?;
        }
        Ok(self.subscription_arn(&sub))
    }

    /// Unsubscribe: deletes the subscription; a missing one succeeds (the call is
    /// idempotent). A confirmed HTTP/S endpoint then gets an UnsubscribeConfirmation POST
    /// (SNS Developer Guide, "HTTP/HTTPS unsubscribe confirmation JSON format"), queued
    /// before the subscription goes so that it is delivered even across a restart. Its
    /// SubscribeURL carries a fresh token that no subscription holds: Loft cannot restore a
    /// deleted subscription, so fetching it answers "Invalid token".
    ///
    /// `unsigned`: the call carried no signature where Loft requires one (Unsubscribe is
    /// open then, for the UnsubscribeURL SNS sends). Such a call cannot remove a
    /// subscription whose confirmation was authenticated ([`unsubscribe_needs_signature`]):
    /// "If the subscription requires authentication for deletion, only the owner of the
    /// subscription or the topic's owner can unsubscribe, and an AWS signature is
    /// required" (SNS API Reference, Unsubscribe).
    ///
    /// Errors: `InvalidParameter` for a malformed ARN; `AuthorizationError` (403) for an
    /// unsigned call on a subscription that needs a signature.
    pub async fn unsubscribe(&self, arn: &str, unsigned: bool) -> Result<()> {
        match self.subscription_by_arn(arn).await {
            Ok(s) if unsigned && unsubscribe_needs_signature(&s) => Err(Error::new(
                ErrorCode::AuthorizationError,
                "The subscription requires authentication to unsubscribe: the request must be signed",
            )),
            Ok(s) => {
                if s.confirmed && s.protocol.is_http() {
                    if let Some(topic) = self.store.get_topic(&s.topic_name).await? {
                        let token = new_token();
                        let subscribe_url = format!(
                            "{}/?Action=ConfirmSubscription&TopicArn={}&Token={token}",
                            self.config.advertised_url,
                            self.topic_arn(&topic.name),
                        );
                        let message = format!(
                            "You have chosen to deactivate subscription {}.\nTo cancel this operation and restore the subscription, visit the SubscribeURL included in this message.",
                            self.subscription_arn(&s)
                        );
                        self.queue_confirmation(
                            &topic,
                            &s,
                            "UnsubscribeConfirmation",
                            &token,
                            &subscribe_url,
                            &message,
                        )
                        .await?;
                    }
                }
                self.store.delete_subscription(&s.uuid).await?;
                Ok(())
            }
            Err(e) if e.code == ErrorCode::NotFound => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// ListSubscriptions / ListSubscriptionsByTopic: 100 a page.
    /// Errors: `NotFound` (topic), `InvalidParameter` (token).
    pub async fn list_subscriptions(
        &self,
        topic_arn: Option<&str>,
        next_token: Option<&str>,
    ) -> Result<Page<SubscriptionRecord>> {
        let topic_id = match topic_arn {
            Some(arn) => Some(self.topic_by_arn(arn).await?.id),
            None => None,
        };
        let subs = self.store.list_subscriptions(topic_id).await?;
        self.subscription_page(subs, next_token)
    }

    /// Cuts `subs` (in store order) into a page of 100 after `next_token`, a token sealed
    /// under the database's key ([`ReceiptKey::seal_position`](crate::service::sqs::receipt::ReceiptKey::seal_position))
    /// that holds the last store sequence of the previous page: subscriptions are numbered
    /// store-wide, so a readable token would let one account count another's subscriptions.
    /// Errors: `InvalidParameter` for a token that does not open.
    fn subscription_page(
        &self,
        subs: Vec<SubscriptionRecord>,
        next_token: Option<&str>,
    ) -> Result<Page<SubscriptionRecord>> {
        const LISTING: &str = "sns subscriptions";
        let key = self.store.receipt_key();
        let after = next_token
            .filter(|t| !t.is_empty())
            .map(|t| {
                key.open_position(LISTING, t)
                    .ok_or_else(|| invalid("NextToken"))
            })
            .transpose()?;
        let mut items: Vec<SubscriptionRecord> = subs
            .into_iter()
            .filter(|s| after.is_none_or(|a| s.seq > a))
            .collect();
        let mut next = None;
        if items.len() > PAGE_SIZE {
            items.truncate(PAGE_SIZE);
            next = items.last().map(|s| key.seal_position(LISTING, s.seq));
        }
        Ok(Page {
            items,
            next_token: next,
        })
    }

    /// ListSubscriptions of `scope` (an account in a region): "a list of the requester's
    /// subscriptions" (SNS API Reference, ListSubscriptions), those it owns
    /// ([`Core::subscription_owner`](crate::service::Core::subscription_owner)) on the topics of its region, 100 a page. Errors:
    /// `InvalidParameter` for a bad token.
    pub async fn list_subscriptions_of(
        &self,
        scope: names::Scope<'_>,
        next_token: Option<&str>,
    ) -> Result<Page<SubscriptionRecord>> {
        // Those it owns are on its topics or name it their subscriber: the store reads
        // those alone, without other accounts' rows.
        let (prefix, bare) = self.listing_of(scope);
        let mut subs = self
            .store
            .list_subscriptions_of(&prefix, bare, scope.account)
            .await?;
        subs.retain(|s| {
            self.key_scope(&s.topic_name).0.region == scope.region
                && self.subscription_owner(s) == scope.account
        });
        self.subscription_page(subs, next_token)
    }

    /// The owner ([`Core::subscription_owner`](crate::service::Core::subscription_owner)) of the subscription `arn` names, when it
    /// names one ([`SnsDelivery::subscription_by_arn`]); `None` for a malformed ARN or
    /// one that names no subscription. Errors: the store's.
    pub async fn subscription_owner_of(&self, arn: &str) -> Result<Option<String>> {
        match self.subscription_by_arn(arn).await {
            Ok(s) => Ok(Some(self.subscription_owner(&s))),
            Err(e) if matches!(e.code, ErrorCode::NotFound | ErrorCode::InvalidParameter) => {
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// GetSubscriptionAttributes. Errors: `InvalidParameter`, `NotFound`.
    pub async fn get_subscription_attributes(&self, arn: &str) -> Result<Map> {
        let s = self.subscription_by_arn(arn).await?;
        let topic = self
            .store
            .get_topic(&s.topic_name)
            .await?
            .ok_or_else(topic_not_found)?;
        let mut out = Map::new();
        out.insert("Owner".into(), self.subscription_owner(&s));
        out.insert("RawMessageDelivery".into(), "false".into());
        out.insert("TopicArn".into(), self.topic_arn(&s.topic_name));
        out.insert("Endpoint".into(), s.endpoint.clone());
        out.insert("Protocol".into(), s.protocol.as_str().to_owned());
        out.insert("PendingConfirmation".into(), (!s.confirmed).to_string());
        out.insert(
            "ConfirmationWasAuthenticated".into(),
            (s.confirmed && unsubscribe_needs_signature(&s)).to_string(),
        );
        out.insert("SubscriptionArn".into(), self.subscription_arn(&s));
        out.insert("SubscriptionPrincipal".into(), self.principal_arn());
        if s.protocol.is_http() {
            out.insert(
                "EffectiveDeliveryPolicy".into(),
                DeliveryPolicy::effective(
                    TopicConfig::from_attributes(&topic.attributes)
                        .delivery_policy
                        .as_deref(),
                    SubscriptionConfig::from_attributes(&s.attributes)
                        .delivery_policy
                        .as_deref(),
                )
                .to_json(),
            );
        }
        // An empty FilterPolicy is no filter policy: AWS reports neither it nor a
        // FilterPolicyScope then (recorded Subscribe with FilterPolicy "" and
        // FilterPolicyScope MessageBody); with one, the scope defaults to
        // MessageAttributes.
        let config = SubscriptionConfig::from_attributes(&s.attributes);
        let has_policy = config.filter_policy.is_some();
        for (k, v) in &s.attributes {
            if k == SEED_PAYLOAD_ATTRIBUTE
                || k == SUBSCRIBER_ACCOUNT_ATTRIBUTE
                || k == CONFIRMATION_AUTHENTICATED_ATTRIBUTE
                || (!has_policy && matches!(k.as_str(), "FilterPolicy" | "FilterPolicyScope"))
            {
                continue;
            }
            out.insert(k.clone(), v.clone());
        }
        if has_policy {
            out.entry("FilterPolicyScope".into())
                .or_insert_with(|| "MessageAttributes".into());
        }
        if config.replay_policy.is_some() {
            if let Some(status) = self.replay_status(&s.uuid).await? {
                out.insert("ReplayStatus".into(), status.to_owned());
            }
        }
        Ok(out)
    }

    /// SetSubscriptionAttributes. Errors: `InvalidParameter`, `NotFound`.
    pub async fn set_subscription_attribute(
        &self,
        arn: &str,
        name: &str,
        value: &str,
    ) -> Result<()> {
        let s = self.subscription_by_arn(arn).await?;
        let value = validate_subscription_attribute(name, value, s.protocol, false)?;
        let mut attrs = s.attributes.clone();
        // An empty ReplayPolicy, or `{}`, cancels the replay and is not kept.
        let no_replay = name == "ReplayPolicy" && super::replay::parse_policy(&value)?.is_none();
        if (value.is_empty() && matches!(name, "FilterPolicy" | "DeliveryPolicy" | "RedrivePolicy"))
            || no_replay
        {
            attrs.remove(name);
        } else {
            attrs.insert(name.to_owned(), value.clone());
        }
        check_filter_scope(&attrs)?;
        check_fifo_redrive(&s.topic_name, &s.endpoint, &attrs)?;
        let subscriber = SubscriptionConfig::from_attributes(&attrs).subscriber_account;
        check_redrive_owner(self, &s.topic_name, subscriber.as_deref(), &attrs)?;
        if name == "ReplayPolicy" {
            // Checked against the topic (its archive) before anything is stored; a new
            // policy replaces the running replay (SNS Developer Guide: "Starting a replay
            // will replace the existing replay").
            let topic = self
                .store
                .get_topic(&s.topic_name)
                .await?
                .ok_or_else(topic_not_found)?;
            self.check_replay(&topic, &value)?;
            self.store
                .update_subscription(&s.uuid, attrs, s.confirmed, s.token.clone())
                .await?;
            return self.start_replay(&topic, &s, &value).await;
        }
        self.store
            .update_subscription(&s.uuid, attrs, s.confirmed, s.token.clone())
            .await
    }

    /// The topic a tagging call names. The tagging operations model
    /// `ResourceNotFoundException` (code `ResourceNotFound`) rather than `NotFound`.
    /// Errors: `InvalidParameter`, `SnsResourceNotFound`.
    async fn tagged_topic(&self, arn: &str) -> Result<TopicRecord> {
        self.topic_by_arn(arn).await.map_err(|e| {
            if e.code == ErrorCode::NotFound {
                Error::new(ErrorCode::SnsResourceNotFound, "Resource does not exist")
            } else {
                e
            }
        })
    }

    /// TagResource (topics). Errors: `ValidationError` (a key or value of the wrong length),
    /// `InvalidParameter` (a key AWS reserves, a key given twice), `TagLimitExceeded` (over
    /// 50 tags), `SnsResourceNotFound`.
    pub async fn tag_topic(&self, arn: &str, tags: Vec<(String, String)>) -> Result<()> {
        check_tag_list(&tags)?;
        let tags = unique_tags(tags)?;
        let topic = self.tagged_topic(arn).await?;
        let mut merged = topic.tags.clone();
        merged.extend(tags);
        check_sns_tags(&merged)?;
        self.store.set_topic_tags(topic.id, merged).await
    }

    /// UntagResource (topics). Errors: `ValidationError` (a key of the wrong length),
    /// `InvalidParameter` (a key AWS reserves), `SnsResourceNotFound`.
    pub async fn untag_topic(&self, arn: &str, keys: &[String]) -> Result<()> {
        check_tag_keys(keys)?;
        let topic = self.tagged_topic(arn).await?;
        let mut tags = topic.tags.clone();
        for k in keys {
            tags.remove(k);
        }
        self.store.set_topic_tags(topic.id, tags).await
    }

    /// ListTagsForResource (topics). Errors: `InvalidParameter`, `SnsResourceNotFound`.
    pub async fn topic_tags(&self, arn: &str) -> Result<Map> {
        Ok(self.tagged_topic(arn).await?.tags)
    }

    /// AddPermission (topics): adds statement `label` to the topic's Policy, allowing
    /// `actions` (SNS action names) to the root principals of `accounts` (12-digit ids).
    /// Errors: `InvalidParameter` (label exists, an action not of SNS, an account that is
    /// not a 12-digit id), `NotFound`.
    pub async fn add_topic_permission(
        &self,
        arn: &str,
        label: &str,
        accounts: &[String],
        actions: &[String],
    ) -> Result<()> {
        if accounts.is_empty() || actions.is_empty() || label.is_empty() {
            return Err(invalid("Label, AWSAccountId and ActionName are required"));
        }
        let topic = self.topic_by_arn(arn).await?;
        let topic_arn = self.topic_arn(&topic.name);
        let mut policy: Value = TopicConfig::from_attributes(&topic.attributes)
            .policy
            .and_then(|p| serde_json::from_str(&p).ok())
            .unwrap_or_else(|| {
                serde_json::from_str(&default_topic_policy(
                    &topic_arn,
                    self.split_key(&topic.name).0,
                ))
                .unwrap_or(json!({}))
            });
        let statements = policy["Statement"]
            .as_array_mut()
            .ok_or_else(|| invalid("Policy"))?;
        if statements.iter().any(|s| s["Sid"] == label) {
            return Err(invalid("Statement already exists"));
        }
        if actions.iter().any(|a| !SNS_ACTIONS.contains(&a.as_str())) {
            return Err(invalid("Policy statement action out of service scope!"));
        }
        // Each AWSAccountId becomes the principal `arn:aws:iam::ID:root`: one that is not
        // a 12-digit account id names no principal (SNS API Reference, AddPermission:
        // "The Amazon Web Services account IDs of the users (principals)"). AWS's words
        // for a policy naming a principal that does not exist, recorded from real
        // accounts for SetTopicAttributes; for AddPermission they are Loft's reading.
        if accounts.iter().any(|a| !names::is_account_id(a)) {
            return Err(invalid("Policy Error: PrincipalNotFound"));
        }
        // One principal or action is written as a string, several as a list, as AWS
        // writes the statement (its recorded GetTopicAttributes answers).
        let one_or_list = |items: Vec<String>| match <[String; 1]>::try_from(items) {
            Ok([one]) => json!(one),
            Err(items) => json!(items),
        };
        statements.push(json!({
            "Sid": label,
            "Effect": "Allow",
            "Principal": {"AWS": one_or_list(accounts.iter().map(|a| format!("arn:aws:iam::{a}:root")).collect())},
            "Action": one_or_list(actions.iter().map(|a| format!("SNS:{a}")).collect()),
            "Resource": topic_arn,
        }));
        let mut attrs = topic.attributes.clone();
        attrs.insert("Policy".into(), policy.to_string());
        self.store.set_topic_attributes(topic.id, attrs).await
    }

    /// RemovePermission (topics). Errors: `InvalidParameter` (no such label), `NotFound`.
    pub async fn remove_topic_permission(&self, arn: &str, label: &str) -> Result<()> {
        let topic = self.topic_by_arn(arn).await?;
        let mut policy: Value = TopicConfig::from_attributes(&topic.attributes)
            .policy
            .and_then(|p| serde_json::from_str(&p).ok())
            .ok_or_else(|| invalid("Label Reason: can't find label"))?;
        let statements = policy["Statement"]
            .as_array_mut()
            .ok_or_else(|| invalid("Policy"))?;
        let before = statements.len();
        statements.retain(|s| s["Sid"] != label);
        if before == statements.len() {
            return Err(invalid("Label Reason: can't find label"));
        }
        let mut attrs = topic.attributes.clone();
        attrs.insert("Policy".into(), policy.to_string());
        self.store.set_topic_attributes(topic.id, attrs).await
    }

    /// Messages recorded for protocols Loft does not send (email, SMS, push, Lambda,
    /// Firehose), newest first, at most `limit`: those of `principal`'s account only when
    /// permissions are enforced ([`Core::visible_account`](crate::service::Core::visible_account)), every one for an open Loft.
    pub async fn recorded_messages(
        &self,
        principal: &Principal,
        limit: u32,
    ) -> Result<Vec<RecordedMessage>> {
        self.store
            .list_recorded(limit, self.visible_account(principal))
            .await
    }

    /// Deletes the recorded messages `filter` matches (all of them with an empty filter),
    /// so tests can start each case clean; of `principal`'s account only when permissions
    /// are enforced (whatever `filter.account` says). Returns how many.
    pub async fn delete_recorded_messages(
        &self,
        principal: &Principal,
        mut filter: RecordedFilter,
    ) -> Result<u64> {
        if let Some(account) = self.visible_account(principal) {
            filter.account = Some(account);
        }
        self.store.delete_recorded(filter).await
    }

    // ----- the seeds' topic API

    /// The seeds' `POST /topics/{name}`: idempotent create. `name` is a store key, as the
    /// listings give it (docs/seeds-api.md: another account's `ACCOUNT/NAME`): an existing
    /// topic is returned whatever its key, and the name rule applies to a new one only
    /// (its name, for an existing one, so a FIFO topic is refused as before).
    ///
    /// Errors: `InvalidParameterValue` for a new topic's name that is not a path segment.
    pub async fn create_topic_seed(&self, name: &str) -> Result<TopicRecord> {
        if let Some(topic) = self.store.get_topic(name).await? {
            names::check_topic_name(self.split_key(name).1, Naming::Seed)?;
            return Ok(topic);
        }
        names::check_topic_name(name, Naming::Seed)?;
        Ok(self
            .store_create_topic(name, Map::new(), Map::new())
            .await?
            .0)
    }

    /// The topics of the default account and region, by name: those the seeds' API and
    /// the console act on (`GET /topics`).
    ///
    /// Errors: `InternalError` when storage fails.
    pub async fn default_scope_topics(&self) -> Result<Vec<TopicRecord>> {
        // No prefix: the bare keys alone, read without other accounts' rows.
        let mut topics = self.store.list_topics_of("", true).await?;
        topics.retain(|t| crate::names::is_default_scope_key(&t.name));
        Ok(topics)
    }

    /// The topics `principal` sees in Loft's own listings (the seeds' `GET /topics`, the
    /// console's `GET /_loft/topics`), by name: as [`Sqs::visible_queues`](crate::service::Sqs::visible_queues).
    ///
    /// Errors: `InternalError` when storage fails.
    pub async fn visible_topics(
        &self,
        principal: &crate::service::core::access::Principal,
    ) -> Result<Vec<TopicRecord>> {
        if !principal.enforced {
            return self.default_scope_topics().await;
        }
        self.topics_of(principal.scope()).await
    }

    /// The seeds' `POST /topics/{name}/subscribe`: subscribes `endpoint` (an http or https
    /// URL), confirmed at once as the seed has no handshake; creates the topic if missing.
    /// `topic` is a store key, as [`Sns::create_topic_seed`] takes it.
    ///
    /// Errors: `InvalidParameterValue` for an empty or non-HTTP endpoint, an endpoint whose
    /// IP address the endpoint policy denies, or a bad name; `TopicLimitExceeded`.
    pub async fn subscribe_seed(&self, topic: &str, endpoint: &str) -> Result<SubscriptionRecord> {
        let protocol = if endpoint.starts_with("http://") {
            SubscriptionProtocol::Http
        } else if endpoint.starts_with("https://") {
            SubscriptionProtocol::Https
        } else {
            return Err(Error::invalid(
                "endpoint must be an http:// or https:// URL",
            ));
        };
        self.config
            .endpoint_policy
            .check_url(endpoint)
            .map_err(|why| Error::invalid(format!("endpoint refused: {why}")))?;
        let topic = self.create_topic_seed(topic).await?;
        let mut attributes = Map::new();
        attributes.insert(SEED_PAYLOAD_ATTRIBUTE.to_owned(), "true".to_owned());
        self.store
            .create_subscription(
                topic.id,
                NewSubscription {
                    uuid: uuid::Uuid::new_v4().to_string(),
                    protocol,
                    endpoint: endpoint.into(),
                    attributes,
                    confirmed: true,
                    token: None,
                },
            )
            .await
    }

    /// Queues the SubscriptionConfirmation or UnsubscribeConfirmation (`message_type`)
    /// POST of an HTTP/S subscription: a signed envelope with Token and SubscribeURL.
    pub(crate) async fn queue_confirmation(
        &self,
        topic: &TopicRecord,
        sub: &SubscriptionRecord,
        message_type: &str,
        token: &str,
        subscribe_url: &str,
        message: &str,
    ) -> Result<()> {
        let topic_arn = self.topic_arn(&topic.name);
        let message_id = uuid::Uuid::new_v4().to_string();
        let fields = SignedFields {
            message_type: message_type.into(),
            message: message.into(),
            message_id: message_id.clone(),
            subject: None,
            subscribe_url: Some(subscribe_url.into()),
            timestamp: iso_timestamp(self.now_ms()),
            token: Some(token.into()),
            topic_arn: topic_arn.clone(),
        };
        let sig = self.signature(topic, &fields);
        let body = self.envelope(&fields, sig.as_ref(), &MessageAttributes::new(), None, None);
        let delivery = self.http_delivery(topic, sub, message_type, &message_id, body, false);
        self.store
            .publish(Vec::new(), vec![delivery], Vec::new())
            .await?;
        self.delivery_notify.notify_one();
        Ok(())
    }
}

/// Whether subscription `s` was confirmed with authentication, so that only a signed call
/// may unsubscribe it: as ConfirmSubscription recorded it
/// ([`CONFIRMATION_AUTHENTICATED_ATTRIBUTE`]). Without that record: `true` for a
/// subscription confirmed at Subscribe (by that signed call: `sqs`, `lambda`, `sms`,
/// `application`, `firehose`); `false` for one still pending, and for an HTTP/S or email
/// one confirmed before the record was kept (almost always through its SubscribeURL,
/// which carries no signature).
fn unsubscribe_needs_signature(s: &SubscriptionRecord) -> bool {
    use SubscriptionProtocol as P;
    let confirmed_at_subscribe = match s.protocol {
        P::Http | P::Https | P::Email | P::EmailJson => false,
        P::Sqs | P::Sms | P::Application | P::Lambda | P::Firehose => true,
    };
    SubscriptionConfig::from_attributes(&s.attributes)
        .confirmation_authenticated
        .unwrap_or(s.confirmed && confirmed_at_subscribe)
}

/// The value a subscription attribute has when it was never set, for those that have
/// one (SNS API Reference, SetSubscriptionAttributes).
fn subscription_attribute_default(name: &str) -> Option<&'static str> {
    match name {
        "RawMessageDelivery" => Some("false"),
        "FilterPolicyScope" => Some("MessageAttributes"),
        _ => None,
    }
}

fn check_filter_scope(attrs: &Map) -> Result<()> {
    let config = SubscriptionConfig::from_attributes(attrs);
    if let Some(policy) = &config.filter_policy {
        FilterPolicy::parse(policy, config.filter_policy_scope)?;
    }
    Ok(())
}

/// A subscription dead-letters only to a queue of its owner's account and its topic's
/// region ([`Core::dead_letter_key`](crate::service::Core)): "The Amazon SNS subscription
/// and Amazon SQS queue must be under the same AWS account and Region" (SNS Developer
/// Guide, "Amazon SNS dead-letter queues (DLQs)"). Errors: `InvalidParameter`, in Loft's
/// words (AWS's text for this refusal is not recorded).
fn check_redrive_owner(
    core: &crate::service::Core,
    topic_key: &str,
    subscriber_account: Option<&str>,
    attrs: &Map,
) -> Result<()> {
    match SubscriptionConfig::from_attributes(attrs).dead_letter_target_arn {
        Some(arn)
            if core.key_of_arn(&arn, "sqs").is_some()
                && core
                    .dead_letter_key(topic_key, subscriber_account, &arn)
                    .is_none() =>
        {
            Err(invalid(
                "RedrivePolicy: deadLetterTargetArn must be a queue of the subscription owner's account and region",
            ))
        }
        _ => Ok(()),
    }
}

/// A FIFO queue subscribed to a FIFO topic dead-letters to a FIFO queue only.
/// Errors: `InvalidParameter` "Invalid parameter: RedrivePolicy: must use a FIFO queue as
/// DLQ for a FIFO Subscription to a FIFO Topic." (AWS's answer).
fn check_fifo_redrive(topic_name: &str, endpoint: &str, attrs: &Map) -> Result<()> {
    let fifo_subscription = topic_name.ends_with(".fifo")
        && names::arn_resource(endpoint, "sqs").is_some_and(|q| q.ends_with(".fifo"));
    match SubscriptionConfig::from_attributes(attrs).dead_letter_target_arn {
        Some(arn) if fifo_subscription && !arn.ends_with(".fifo") => Err(invalid(
            "RedrivePolicy: must use a FIFO queue as DLQ for a FIFO Subscription to a FIFO Topic.",
        )),
        _ => Ok(()),
    }
}

/// Tags as a map, refusing a key given twice. Errors: `InvalidParameter`
/// "Invalid parameter: Duplicated keys are not allowed." (AWS's answer).
pub(crate) fn unique_tags(tags: Vec<(String, String)>) -> Result<Map> {
    let mut out = Map::new();
    for (k, v) in tags {
        if out.insert(k, v).is_some() {
            return Err(invalid("Duplicated keys are not allowed."));
        }
    }
    Ok(out)
}

/// The longest tag key, in characters (SNS API Reference, Tag: Key, length 1 to 128).
pub const TAG_KEY_MAX_CHARS: usize = 128;
/// The longest tag value, in characters (SNS API Reference, Tag: Value, length 0 to 256).
pub const TAG_VALUE_MAX_CHARS: usize = 256;
/// The most tags a topic holds (botocore `TagLimitExceededException`: "Can't add more than
/// 50 tags to a topic").
pub const TAGS_PER_TOPIC: usize = 50;

/// A member of `path` whose length in characters is outside `min..=max`: AWS's model
/// validation answer, `ValidationError` "1 validation error detected: Value 'V' at 'PATH'
/// failed to satisfy constraint: Member must have length less than or equal to MAX" (or
/// "greater than or equal to MIN"). The form is AWS's (recorded for a missing member,
/// `Value null at 'attributes'`, and for a list member's path,
/// `publishBatchRequestEntries.1.member...`); the length wording is AWS's model
/// validation's as other AWS services answer it, not recorded from SNS.
fn length_violation(path: &str, value: &str, min: usize, max: usize) -> Option<Error> {
    let n = value.chars().count();
    let constraint = if n < min {
        format!("greater than or equal to {min}")
    } else if n > max {
        format!("less than or equal to {max}")
    } else {
        return None;
    };
    Some(Error::new(
        ErrorCode::ValidationError,
        format!(
            "1 validation error detected: Value '{value}' at '{path}' failed to satisfy constraint: Member must have length {constraint}"
        ),
    ))
}

/// Whether a tag key begins with `aws:` in any case: "The aws: prefix is reserved for AWS
/// use" (AWS tagging guide, "Tag naming limits and requirements": keys with it can be
/// neither added nor removed by a caller).
fn reserved_tag_key(key: &str) -> bool {
    key.get(..4).is_some_and(|p| p.eq_ignore_ascii_case("aws:"))
}

/// The refusal of a reserved tag key. AWS's words are not recorded: these are Loft's.
fn reserved_tag_refusal(key: &str) -> Error {
    invalid(&format!(
        "Tags Reason: Tag key {key} is invalid: the aws: prefix is reserved for AWS use"
    ))
}

/// Checks the tags of a TagResource or CreateTopic in the order given: each key 1 to
/// [`TAG_KEY_MAX_CHARS`] characters and each value at most [`TAG_VALUE_MAX_CHARS`]
/// (`ValidationError` at `tags.N.member.key` / `.value`, the first one found), then no key
/// reserved to AWS (`InvalidParameter`).
fn check_tag_list(tags: &[(String, String)]) -> Result<()> {
    for (i, (k, v)) in tags.iter().enumerate() {
        let n = i + 1;
        if let Some(e) = length_violation(&format!("tags.{n}.member.key"), k, 1, TAG_KEY_MAX_CHARS)
        {
            return Err(e);
        }
        if let Some(e) =
            length_violation(&format!("tags.{n}.member.value"), v, 0, TAG_VALUE_MAX_CHARS)
        {
            return Err(e);
        }
    }
    match tags.iter().find(|(k, _)| reserved_tag_key(k)) {
        Some((k, _)) => Err(reserved_tag_refusal(k)),
        None => Ok(()),
    }
}

/// Checks UntagResource's keys as [`check_tag_list`] checks TagResource's (path
/// `tagKeys.N.member`): a key AWS reserves can no more be removed than added.
fn check_tag_keys(keys: &[String]) -> Result<()> {
    for (i, k) in keys.iter().enumerate() {
        let path = format!("tagKeys.{}.member", i + 1);
        if let Some(e) = length_violation(&path, k, 1, TAG_KEY_MAX_CHARS) {
            return Err(e);
        }
    }
    match keys.iter().find(|k| reserved_tag_key(k)) {
        Some(k) => Err(reserved_tag_refusal(k)),
        None => Ok(()),
    }
}

/// A topic's tags after a change: at most [`TAGS_PER_TOPIC`] (`TagLimitExceeded`), each
/// key and value text XML can carry (`InvalidParameter` "Tags").
fn check_sns_tags(tags: &Map) -> Result<()> {
    if tags.len() > TAGS_PER_TOPIC {
        return Err(Error::new(
            ErrorCode::TagLimitExceeded,
            "Could not complete request: tag quota of per resource exceeded",
        ));
    }
    for (k, v) in tags {
        if !crate::message::valid_characters(k) || !crate::message::valid_characters(v) {
            return Err(invalid("Tags"));
        }
    }
    Ok(())
}

/// Whether `token` has the form of a confirmation token: hexadecimal digits (SNS's are
/// 288 of them, Loft's 64).
fn is_token_form(token: &str) -> bool {
    !token.is_empty() && token.bytes().all(|b| b.is_ascii_hexdigit())
}

fn new_token() -> String {
    format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}

/// A topic's EffectiveDeliveryPolicy in AWS's topic form (the subscription form is
/// [`DeliveryPolicy::to_json`]): `{"http":{"defaultHealthyRetryPolicy":{..},
/// "disableSubscriptionOverrides":false,"defaultRequestPolicy":{"headerContentType":
/// "text/plain; charset=UTF-8"}}}`, with `defaultThrottlePolicy` when the topic sets one.
fn topic_effective_delivery_policy(topic_policy: Option<&str>) -> String {
    let policy = DeliveryPolicy::effective(topic_policy, None);
    let retry = serde_json::from_str::<Value>(&policy.to_json())
        .map(|v| v["healthyRetryPolicy"].clone())
        .unwrap_or(Value::Null);
    let doc: Value = topic_policy
        .and_then(|p| serde_json::from_str(p).ok())
        .unwrap_or(Value::Null);
    let http = &doc["http"];
    let mut out = serde_json::Map::new();
    out.insert("defaultHealthyRetryPolicy".into(), retry);
    out.insert(
        "disableSubscriptionOverrides".into(),
        json!(http["disableSubscriptionOverrides"]
            .as_bool()
            .unwrap_or(false)),
    );
    if let Some(n) = policy.max_receives_per_second {
        out.insert(
            "defaultThrottlePolicy".into(),
            json!({"maxReceivesPerSecond": n}),
        );
    }
    let content_type = http["defaultRequestPolicy"]["headerContentType"]
        .as_str()
        .unwrap_or("text/plain; charset=UTF-8");
    out.insert(
        "defaultRequestPolicy".into(),
        json!({"headerContentType": content_type}),
    );
    json!({"http": out}).to_string()
}

fn default_topic_policy(topic_arn: &str, account: &str) -> String {
    json!({
        "Version": "2008-10-17",
        "Id": "__default_policy_ID",
        "Statement": [{
            "Sid": "__default_statement_ID",
            "Effect": "Allow",
            "Principal": {"AWS": "*"},
            "Action": ["SNS:GetTopicAttributes", "SNS:SetTopicAttributes", "SNS:AddPermission",
                "SNS:RemovePermission", "SNS:DeleteTopic", "SNS:Subscribe",
                "SNS:ListSubscriptionsByTopic", "SNS:Publish"],
            "Resource": topic_arn,
            "Condition": {"StringEquals": {"AWS:SourceOwner": account}}
        }]
    })
    .to_string()
}

/// Cuts `items` (already in order) into a page after `next_token`, which is the base64 of
/// the last key of the previous page. Errors: `InvalidParameter` for a bad token.
fn page<T>(items: Vec<T>, next_token: Option<&str>, key: impl Fn(&T) -> String) -> Result<Page<T>> {
    page_of(items, next_token, PAGE_SIZE, key)
}

/// One page of `items` (sorted by `key`) of at most `size`, after the item whose key
/// `next_token` names (the base64 of the last key of the page before).
/// Errors: `InvalidParameter` "Invalid parameter: NextToken" for a token that is not one.
pub(super) fn page_of<T>(
    items: Vec<T>,
    next_token: Option<&str>,
    size: usize,
    key: impl Fn(&T) -> String,
) -> Result<Page<T>> {
    let after = next_token
        .filter(|t| !t.is_empty())
        .map(|t| {
            crate::message::base64_decode(t)
                .ok()
                .and_then(|b| String::from_utf8(b).ok())
                .ok_or_else(|| invalid("NextToken"))
        })
        .transpose()?;
    let mut items: Vec<T> = items
        .into_iter()
        .filter(|i| after.as_ref().is_none_or(|a| key(i) > *a))
        .collect();
    let mut next = None;
    if items.len() > size {
        items.truncate(size);
        next = items
            .last()
            .map(|i| crate::message::base64_encode(key(i).as_bytes()));
    }
    Ok(Page {
        items,
        next_token: next,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RawMessageDelivery's values, at Subscribe and at SetSubscriptionAttributes: `true` or
    /// `false` in any ASCII case, kept lower-case (AWS's recorded Subscribe with `TrUe`
    /// reads back `true`, `test_create_subscriptions_with_attributes`; `True` likewise,
    /// `test_subscribe_idempotency`); anything else, empty included, refused in AWS's
    /// recorded words ("Invalid value [wrongvalue]" at Subscribe with "Attributes Reason: "
    /// first; "[test-ValUe]" and "[]" at Set, `test_validate_set_sub_attributes`).
    /// Spaces are not trimmed: ` true` is no boolean (Loft's reading; AWS's answer to it is
    /// not recorded).
    #[test]
    fn raw_message_delivery_values() {
        let rows: &[(&str, Option<&str>)] = &[
            ("true", Some("true")),
            ("false", Some("false")),
            ("TRUE", Some("true")),
            ("True", Some("true")),
            ("TrUe", Some("true")),
            ("FALSE", Some("false")),
            ("fAlSe", Some("false")),
            ("", None),
            ("yes", None),
            ("no", None),
            ("1", None),
            ("0", None),
            ("t", None),
            (" true", None),
            ("true ", None),
            ("wrongvalue", None),
            ("test-ValUe", None),
            ("tru\u{0435}", None),
        ];
        for &(value, kept) in rows {
            for at_subscribe in [true, false] {
                let got = validate_subscription_attribute(
                    "RawMessageDelivery",
                    value,
                    SubscriptionProtocol::Sqs,
                    at_subscribe,
                );
                match kept {
                    Some(kept) => assert_eq!(got.unwrap(), kept, "{value:?}"),
                    None => {
                        let e = got.unwrap_err();
                        assert_eq!(e.code, ErrorCode::InvalidParameter, "{value:?}");
                        let prefix = if at_subscribe {
                            "Attributes Reason: "
                        } else {
                            ""
                        };
                        assert_eq!(
                            e.message,
                            format!(
                                "Invalid parameter: {prefix}RawMessageDelivery: Invalid value [{value}]. Must be true or false."
                            ),
                            "{value:?} at_subscribe={at_subscribe}"
                        );
                    }
                }
            }
        }
    }

    /// RawMessageDelivery belongs to the protocols raw delivery exists for: Amazon SQS,
    /// HTTP/S and Firehose (SNS Developer Guide, "Amazon SNS raw message delivery"); the
    /// others refuse it whatever its value.
    #[test]
    fn raw_message_delivery_protocols() {
        use SubscriptionProtocol as P;
        for protocol in P::ALL {
            let raw = matches!(protocol, P::Sqs | P::Http | P::Https | P::Firehose);
            for value in ["true", "false", "TRUE"] {
                let got =
                    validate_subscription_attribute("RawMessageDelivery", value, protocol, true);
                assert_eq!(got.is_ok(), raw, "{protocol} {value}");
                if !raw {
                    assert_eq!(
                        got.unwrap_err().message,
                        format!("Invalid parameter: Attributes Reason: Delivery protocol [{protocol}] does not support raw message delivery.")
                    );
                }
            }
        }
    }

    /// Topic attributes at CreateTopic and SetTopicAttributes, one row per variant:
    /// `Ok(kept)` or the refusal after "Invalid parameter: " and, at CreateTopic,
    /// "Attributes Reason: " (`validate_topic_attribute`'s doc names each source); an empty
    /// refusal stands for "Invalid parameter: AttributeName" at both.
    #[test]
    fn topic_attribute_rules() {
        let long = |n: usize| "d".repeat(n);
        let letters = |n: usize| "\u{e9}".repeat(n);
        let role = "arn:aws:iam::000000000000:role/SNSFeedback";
        let ok = |v: &str| Ok(v.to_owned());
        let bad = |name: &str| Err(format!("{name}: invalid value"));
        let mut rows: Vec<(&str, String, std::result::Result<String, String>)> = vec![
            ("DisplayName", String::new(), ok("")),
            ("DisplayName", "My Topic".into(), ok("My Topic")),
            ("DisplayName", "tab\there_-".into(), ok("tab\there_-")),
            ("DisplayName", long(100), Ok(long(100))),
            ("DisplayName", long(101), Err("DisplayName".into())),
            ("DisplayName", letters(100), Ok(letters(100))),
            ("DisplayName", letters(101), Err("DisplayName".into())),
            ("DisplayName", "bell\u{7}".into(), bad("DisplayName")),
            ("Policy", String::new(), ok("")),
            ("Policy", "{}".into(), ok("{}")),
            (
                "Policy",
                "not json".into(),
                Err("Policy Error: null".into()),
            ),
            ("Policy", "[1]".into(), Err("Policy Error: null".into())),
            (
                "Policy",
                "\"text\"".into(),
                Err("Policy Error: null".into()),
            ),
            (
                "Policy",
                "{\"Version\":".into(),
                Err("Policy Error: null".into()),
            ),
            ("HTTPSuccessFeedbackRoleArn", role.into(), ok(role)),
            ("SQSFailureFeedbackRoleArn", String::new(), ok("")),
            (
                "LambdaSuccessFeedbackRoleArn",
                "not-an-arn".into(),
                bad("LambdaSuccessFeedbackRoleArn"),
            ),
            (
                "FirehoseFailureFeedbackRoleArn",
                "arn:aws:iam::000000000000:user/u".into(),
                bad("FirehoseFailureFeedbackRoleArn"),
            ),
            (
                "ApplicationSuccessFeedbackRoleArn",
                "arn:aws:iam::0000:role/r".into(),
                bad("ApplicationSuccessFeedbackRoleArn"),
            ),
            (
                "SQSSuccessFeedbackRoleArn",
                "arn:aws:sqs:us-east-1:000000000000:role/r".into(),
                bad("SQSSuccessFeedbackRoleArn"),
            ),
            ("HTTPSuccessFeedbackSampleRate", "0".into(), ok("0")),
            ("HTTPSuccessFeedbackSampleRate", "100".into(), ok("100")),
        ];
        for rate in ["101", "-1", "+5", "5.5", "", "ten", " 5"] {
            rows.push((
                "SQSSuccessFeedbackSampleRate",
                rate.into(),
                bad("SQSSuccessFeedbackSampleRate"),
            ));
        }
        // Names outside the two operations' lists, another case of a listed one, and
        // attributes SNS reports but does not take.
        for name in [
            "DisplayNames",
            "displayname",
            "SMSSuccessFeedbackRoleArn",
            "HTTPFailureFeedbackSampleRate",
            "TopicArn",
            "Owner",
            "",
        ] {
            rows.push((name, "x".into(), Err(String::new())));
        }
        for (name, value, want) in rows {
            for creating in [true, false] {
                let got = validate_topic_attribute(name, &value, creating, false);
                match &want {
                    Ok(kept) => assert_eq!(got.unwrap(), *kept, "{name}={value:?}"),
                    Err(what) => {
                        let e = got.unwrap_err();
                        assert_eq!(e.code, ErrorCode::InvalidParameter, "{name}={value:?}");
                        let message = if what.is_empty() {
                            "Invalid parameter: AttributeName".to_owned()
                        } else if creating {
                            format!("Invalid parameter: Attributes Reason: {what}")
                        } else {
                            format!("Invalid parameter: {what}")
                        };
                        assert_eq!(e.message, message, "{name}={value:?} creating={creating}");
                    }
                }
            }
        }
    }

    /// Tags of TagResource and CreateTopic, one row per variant (`check_tag_list`): keys of
    /// 1 to 128 characters and values of up to 256 (counted in characters, not bytes),
    /// `aws:` keys in any case refused; UntagResource's keys likewise (`check_tag_keys`).
    #[test]
    fn tag_rules() {
        let k = |n: usize| "k".repeat(n);
        let e = |n: usize| "\u{e9}".repeat(n);
        let too_long = |path: &str, value: &str, max: usize| {
            Err(format!("1 validation error detected: Value '{value}' at '{path}' failed to satisfy constraint: Member must have length less than or equal to {max}"))
        };
        let reserved = |key: &str| {
            Err(format!(
                "Invalid parameter: Tags Reason: Tag key {key} is invalid: the aws: prefix is reserved for AWS use"
            ))
        };
        let empty_key = Err("1 validation error detected: Value '' at 'tags.1.member.key' failed to satisfy constraint: Member must have length greater than or equal to 1".to_owned());
        // A TagResource's tags and the refusal's words, or none.
        type Row = (Vec<(String, String)>, std::result::Result<(), String>);
        let rows: Vec<Row> = vec![
            (vec![("k".into(), String::new())], Ok(())),
            (vec![(k(128), "v".repeat(256))], Ok(())),
            (vec![(e(128), e(256))], Ok(())),
            (vec![("awsome".into(), "aws:value".into())], Ok(())),
            (vec![("my:aws:key".into(), "v".into())], Ok(())),
            (vec![(String::new(), "v".into())], empty_key),
            (
                vec![(k(129), "v".into())],
                too_long("tags.1.member.key", &k(129), 128),
            ),
            (
                vec![(e(129), "v".into())],
                too_long("tags.1.member.key", &e(129), 128),
            ),
            (
                vec![("a".into(), "v".into()), ("b".into(), "v".repeat(257))],
                too_long("tags.2.member.value", &"v".repeat(257), 256),
            ),
            (
                vec![("k".into(), e(257))],
                too_long("tags.1.member.value", &e(257), 256),
            ),
            (vec![("aws:x".into(), "v".into())], reserved("aws:x")),
            (vec![("AWS:x".into(), "v".into())], reserved("AWS:x")),
            (vec![("Aws:".into(), "v".into())], reserved("Aws:")),
            // Lengths are checked before the prefix, in order.
            (
                vec![("aws:x".into(), "v".into()), (k(129), "v".into())],
                too_long("tags.2.member.key", &k(129), 128),
            ),
        ];
        for (tags, want) in rows {
            let got = check_tag_list(&tags).map_err(|e| {
                let code = if e.message.starts_with("1 validation") {
                    ErrorCode::ValidationError
                } else {
                    ErrorCode::InvalidParameter
                };
                assert_eq!(e.code, code, "{tags:?}");
                e.message
            });
            assert_eq!(got, want, "{tags:?}");
            // UntagResource's keys follow the same rules, under their own path.
            let keys: Vec<String> = tags.iter().map(|(k, _)| k.clone()).collect();
            let want_keys = want
                .as_ref()
                .err()
                .filter(|m| !m.contains(".value'"))
                .map(|m| {
                    m.replace("tags.", "tagKeys.")
                        .replace(".member.key'", ".member'")
                });
            assert_eq!(
                check_tag_keys(&keys).err().map(|e| e.message),
                want_keys,
                "{keys:?}"
            );
        }
        // Fifty tags are a topic's most; the fifty-first is TagLimitExceeded.
        let fifty: Map = (0..50).map(|i| (format!("k{i}"), "v".to_owned())).collect();
        assert!(check_sns_tags(&fifty).is_ok());
        let mut more = fifty;
        more.insert("one-more".into(), "v".into());
        assert_eq!(
            check_sns_tags(&more).unwrap_err().code,
            ErrorCode::TagLimitExceeded
        );
    }
}
