//! Publish: message validation and fan-out in one transaction to every matching SQS
//! queue, HTTP/S endpoint (durably queued for the delivery workers) and recorded protocol.
//! What each subscriber gets (filter policy, the SNS envelope, the SQS copy) is
//! [`super::envelope`]'s, shared with replay.
//!
//! Sources: SNS API Reference Publish and PublishBatch; SNS Developer Guide "Parsing
//! message formats" (the envelope), "Amazon SNS raw message delivery", "Amazon SNS message
//! attributes", "Message filtering", "Fanout to Amazon SQS queues"; `chapter-42-sns.md`
//! ("Publish", the seeds' `{"topic","message"}` payload).

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::delivery_status;
use super::envelope::{
    filter_attributes, sender_of, structure_key, structured_text, Outgoing, PublishRequest,
    SignedFields, SqsCopy, SqsStep,
};
use super::sns_errors::{check_arn_elements, invalid};
use super::{Sns, SnsDelivery};
use crate::attributes::{SubscriptionConfig, TopicConfig};
use crate::clock::iso_timestamp;
use crate::error::{Error, ErrorCode, Result};
use crate::message::{self, MessageAttributes};
use crate::model::*;
use crate::names;
use crate::service::core::activity::DeliveryOutcome;
use crate::service::sqs::messages::{sequence_number, DEDUP_WINDOW_MS};

/// Largest SNS message, bytes, attributes included (256 KiB).
pub const MAX_SNS_MESSAGE: usize = 262_144;

/// What Publish returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublishResult {
    /// MessageId.
    pub message_id: String,
    /// SequenceNumber (FIFO topics).
    pub sequence_number: Option<String>,
}

impl Sns {
    /// The delivery status record of one SQS copy stored by a publish (see
    /// [`delivery_status`]): SUCCESS, status 200, the queue's MessageId as SQS's answer.
    fn log_sqs_delivery(
        &self,
        topic: &TopicRecord,
        config: &TopicConfig,
        topic_arn: &str,
        copy: &SqsCopy,
        queue: &str,
        now: i64,
    ) {
        if !delivery_status::enabled(config, "SQS", true) {
            return;
        }
        delivery_status::log(&delivery_status::DeliveryStatus {
            protocol: "SQS",
            success: true,
            topic_name: &topic.name,
            topic_arn,
            topic_config: config,
            message_id: Some(copy.notification().0),
            message: Some(copy.notification().1),
            published_at_ms: copy.now_ms,
            destination: &self.queue_arn(queue),
            provider_response: serde_json::json!({"sqsMessageId": copy.message_id}).to_string(),
            status_code: 200,
            attempts: 1,
            now_ms: now,
        });
    }
}

/// A Firehose or mobile push delivery Loft recorded in a publish's transaction: Loft's
/// delivery attempt for those protocols (it does not send them on), logged as AWS logs a
/// delivery status once the transaction committed.
struct RecordedStatus {
    /// `Firehose` or `Application`.
    prefix: &'static str,
    /// The delivery stream or platform endpoint ARN.
    endpoint: String,
    /// The SNS MessageId.
    message_id: String,
    /// The message as recorded.
    message: String,
}

/// The delivery status record of one recorded Firehose or mobile push delivery (see
/// [`delivery_status`]): SUCCESS, status 200, sampled at the topic's
/// `{Firehose,Application}SuccessFeedbackSampleRate`, written only when the topic names
/// a `...SuccessFeedbackRoleArn`. A recording cannot fail, so no failure record is ever
/// written for these protocols.
fn log_recorded_delivery(
    topic: &TopicRecord,
    config: &TopicConfig,
    topic_arn: &str,
    r: &RecordedStatus,
    now: i64,
) {
    if !delivery_status::enabled(config, r.prefix, true) {
        return;
    }
    delivery_status::log(&delivery_status::DeliveryStatus {
        protocol: r.prefix,
        success: true,
        topic_name: &topic.name,
        topic_arn,
        topic_config: config,
        message_id: Some(&r.message_id),
        message: Some(&r.message),
        published_at_ms: now,
        destination: &r.endpoint,
        provider_response: "Recorded by Loft (GET /_loft/sns/messages)".to_owned(),
        status_code: 200,
        attempts: 1,
        now_ms: now,
    });
}

/// A new X-Ray trace header, `Root=1-{8 hex digits: the Unix time in seconds}-{24 hex
/// digits: 96 random bits};Sampled=1`, as a service that starts a trace writes it (X-Ray
/// Developer Guide, "Tracing header"). No Parent: Loft records no segment.
pub fn new_trace_header(now_ms: i64) -> String {
    let random: u128 = rand::random::<u128>() >> 32;
    format!(
        "Root=1-{:08x}-{:024x};Sampled=1",
        (now_ms / 1000) as u32,
        random
    )
}

/// Validates SNS message attributes: names, types and values, in the order and words of
/// AWS's recorded answers to Publish and PublishBatch (SNS Developer Guide, "Amazon SNS
/// message attributes": a name of at most 256 characters, `A-Z a-z 0-9 _ - .`, no leading,
/// trailing or doubled period; a type `String`, `Number` or `Binary`, optionally with a
/// `.label`; String and Number values in `StringValue`, Binary ones in `BinaryValue`, never
/// empty). Their number is not limited here (only their size, with the message's).
///
/// Errors: `ParameterValueInvalid`.
pub(crate) fn validate_sns_attributes(attrs: &MessageAttributes) -> Result<()> {
    for (name, v) in attrs {
        validate_sns_attribute_name(name)?;
        let bad = |why: &str| {
            Error::new(
                ErrorCode::ParameterValueInvalid,
                format!("The message attribute '{name}' {why}"),
            )
        };
        // A custom type is `Base.label`, the label not empty (`String.` is refused).
        let base = match v.data_type.split_once('.') {
            Some((_, "")) => "",
            Some((base, _)) => base,
            None => v.data_type.as_str(),
        };
        if !matches!(base, "String" | "Number" | "Binary") {
            return Err(bad("has an invalid message attribute type, the set of supported type prefixes is Binary, Number, and String."));
        }
        let empty = || {
            bad(&format!(
                "must contain non-empty message attribute value for message attribute type '{}'.",
                v.data_type
            ))
        };
        if v.string_value.is_none() && v.binary_value.is_none() {
            return Err(empty());
        }
        match base {
            "Binary" => {
                let Some(b) = &v.binary_value else {
                    return Err(bad("with type 'Binary' must use field 'Binary'."));
                };
                if b.is_empty() {
                    return Err(empty());
                }
            }
            _ => {
                let Some(s) = v.string_value.as_deref() else {
                    return Err(bad(&format!(
                        "with type '{}' must use field 'String'.",
                        v.data_type
                    )));
                };
                if s.is_empty() {
                    return Err(empty());
                }
                if v.data_type == "String.Array"
                    && !matches!(serde_json::from_str::<Value>(s), Ok(Value::Array(_)))
                {
                    return Err(bad("has an invalid message attribute value: a String.Array must be a JSON array."));
                }
                if base == "Number" && s.trim().parse::<f64>().map_or(true, |f| !f.is_finite()) {
                    return Err(bad("has an invalid message attribute value: not a number."));
                }
            }
        }
    }
    Ok(())
}

/// The message attributes AWS itself defines for Publish, which its reserved `AWS.` prefix
/// is kept for: the SMS ones (SNS Developer Guide, "Publishing to a mobile phone":
/// `AWS.SNS.SMS.SenderID`, `AWS.SNS.SMS.MaxPrice`, `AWS.SNS.SMS.SMSType`,
/// `AWS.MM.SMS.OriginationNumber`, `AWS.MM.SMS.EntityId`, `AWS.MM.SMS.TemplateId`).
pub const AWS_SMS_ATTRIBUTES: &[&str] = &[
    "AWS.SNS.SMS.SenderID",
    "AWS.SNS.SMS.MaxPrice",
    "AWS.SNS.SMS.SMSType",
    "AWS.MM.SMS.OriginationNumber",
    "AWS.MM.SMS.EntityId",
    "AWS.MM.SMS.TemplateId",
];

/// Whether `name` is one of AWS's own message attributes, which a Publish may carry
/// although its prefix is reserved: [`AWS_SMS_ATTRIBUTES`], or a mobile push one,
/// `AWS.SNS.MOBILE.{PLATFORM}.{KEY}` (SNS Developer Guide, "Amazon SNS message attributes",
/// "Reserved message attributes for mobile push notifications", and "Using the Amazon SNS
/// time to live (TTL) message attribute": `AWS.SNS.MOBILE.APNS.PUSH_TYPE`,
/// `AWS.SNS.MOBILE.FCM.TTL`, ...). Names are compared exactly, as AWS names them.
pub fn is_aws_defined_attribute(name: &str) -> bool {
    AWS_SMS_ATTRIBUTES.contains(&name)
        || name
            .strip_prefix("AWS.SNS.MOBILE.")
            .and_then(|rest| rest.split_once('.'))
            .is_some_and(|(platform, key)| !platform.is_empty() && !key.is_empty())
}

/// An SNS message attribute name, checked as AWS answers (recorded): its length, then a
/// leading or trailing period, then each character in turn (a character outside
/// `A-Z a-z 0-9 _ - .` named by its code, `#x5E`; a second period in a row). Names starting
/// `AWS.` or `Amazon.` are reserved (SNS Developer Guide) except AWS's own
/// ([`is_aws_defined_attribute`]); AWS's text for that refusal is not recorded, so Loft's
/// own words are used.
///
/// Errors: `ParameterValueInvalid`.
fn validate_sns_attribute_name(name: &str) -> Result<()> {
    let bad = |m: String| Err(Error::new(ErrorCode::ParameterValueInvalid, m));
    if name.is_empty() {
        return bad("The message attribute name must not be empty.".into());
    }
    if name.len() > 256 {
        return bad("Length of message attribute name must be less than 256 bytes.".into());
    }
    if name.starts_with('.') {
        return bad("Invalid message attribute name starting with character '.' was found.".into());
    }
    if name.ends_with('.') {
        return bad("Invalid message attribute name ending with character '.' was found.".into());
    }
    let mut previous = '\0';
    for c in name.chars() {
        if !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')) {
            return bad(format!("Invalid non-alphanumeric character '#x{:X}' was found in the message attribute name. Can only include alphanumeric characters, hyphens, underscores, or dots.", c as u32));
        }
        if c == '.' && previous == '.' {
            return bad("Message attribute name can not have successive '.' character.".into());
        }
        previous = c;
    }
    let lower = name.to_ascii_lowercase();
    if (lower.starts_with("aws.") || lower.starts_with("amazon."))
        && !is_aws_defined_attribute(name)
    {
        return bad(format!(
            "Message (user) attribute name '{name}' is reserved for use by Amazon."
        ));
    }
    Ok(())
}

impl Sns {
    /// Publish to a topic (TopicArn or TargetArn) or an SMS number (PhoneNumber), by a
    /// caller of the default account ([`Sns::publish_as`]).
    ///
    /// Errors: as [`Sns::publish_as`].
    pub async fn publish(
        &self,
        target: PublishTarget<'_>,
        req: PublishRequest,
    ) -> Result<PublishResult> {
        let account = self.config.account_id.clone();
        self.publish_as(&account, target, req).await
    }

    /// Publish to a topic (TopicArn or TargetArn) or an SMS number (PhoneNumber) by a
    /// caller of `account`. A message to a phone number is recorded as `account`'s; a
    /// mobile push endpoint (TargetArn) is reached only by its own account's callers (an
    /// endpoint has no resource policy to grant others), so another account's endpoint is
    /// answered as one that does not exist.
    ///
    /// Errors: `InvalidParameter` (no target, empty or too long message, bad subject or
    /// MessageStructure, FIFO rules, an endpoint that does not exist or is another
    /// account's), `ParameterValueInvalid` (attributes), `NotFound`.
    pub async fn publish_as(
        &self,
        account: &str,
        target: PublishTarget<'_>,
        req: PublishRequest,
    ) -> Result<PublishResult> {
        let target = match target {
            PublishTarget::Target(arn)
                if self.platform_owned_by(arn, account)
                    && self.is_platform_endpoint(arn).await? =>
            {
                // SNS API Reference, Publish: PlatformApplicationDisabled and
                // EndpointDisabled ("Endpoint is disabled", AWS's text).
                self.check_endpoint_reachable(arn).await?;
                PublishTarget::Endpoint(arn)
            }
            PublishTarget::Target(arn) => {
                check_arn_elements("TargetArn", arn)?;
                // An endpoint ARN (`...:endpoint/APNS/app/id`) that names no endpoint.
                if names::arn_resource(arn, "sns").is_some_and(|r| r.starts_with("endpoint/")) {
                    return Err(invalid(
                        "TargetArn Reason: No endpoint found for the target arn specified",
                    ));
                }
                PublishTarget::Topic(arn)
            }
            other => other,
        };
        match target {
            PublishTarget::Endpoint(arn) => {
                self.publish_direct(account, SubscriptionProtocol::Application, arn, req)
                    .await
            }
            PublishTarget::Phone(number) => {
                if !names::is_phone_number(number) {
                    return Err(invalid(&format!(
                        "PhoneNumber Reason: {number} is not valid to publish to"
                    )));
                }
                self.publish_direct(account, SubscriptionProtocol::Sms, number, req)
                    .await
            }
            PublishTarget::Topic(arn) | PublishTarget::Target(arn) => {
                let topic = self.topic_by_arn(arn).await?;
                let mut results = self.publish_to(&topic, vec![req], false).await?;
                results
                    .pop()
                    .unwrap_or_else(|| Err(Error::internal("empty publish result")))
            }
        }
    }

    /// A publish straight to an SMS number or a push endpoint by a caller of `account`:
    /// recorded as that account's, not sent.
    async fn publish_direct(
        &self,
        account: &str,
        protocol: SubscriptionProtocol,
        endpoint: &str,
        req: PublishRequest,
    ) -> Result<PublishResult> {
        self.check_publish(&req, false)?;
        let message_id = uuid::Uuid::new_v4().to_string();
        // MessageStructure=json: the text of this protocol's (or platform's) key, else
        // `default`, as for a topic's subscribers.
        let message = match req.message_structure {
            Some(_) => serde_json::from_str::<Value>(&req.message)
                .map(|v| structured_text(&v, structure_key(protocol, endpoint)).to_owned())
                .unwrap_or(req.message),
            None => req.message,
        };
        let record = RecordedMessage {
            id: 0,
            account: self.stored_account(account),
            protocol: protocol.as_str().to_owned(),
            endpoint: endpoint.into(),
            topic_arn: None,
            subject: req.subject.clone(),
            message,
            sender: None,
            created_at_ms: self.now_ms(),
            seal: None,
        };
        self.store
            .publish(Vec::new(), Vec::new(), vec![record])
            .await?;
        self.activity
            .delivery(protocol.as_str(), DeliveryOutcome::Recorded, 1);
        Ok(PublishResult {
            message_id,
            sequence_number: None,
        })
    }

    /// PublishBatch: each entry succeeds or fails on its own; all accepted entries fan out
    /// in one transaction. Errors for the whole call: `NotFound`, `InvalidParameter`.
    pub async fn publish_batch(
        &self,
        topic_arn: &str,
        entries: Vec<PublishRequest>,
    ) -> Result<Vec<Result<PublishResult>>> {
        let topic = self.topic_by_arn(topic_arn).await?;
        // The FIFO parameters and the message structure of every entry are checked for
        // the request as a whole: one entry that breaks them refuses the batch, as AWS
        // answers (its recorded PublishBatch: a FIFO entry without MessageGroupId or a
        // deduplication id, a MessageStructure=json entry without `default`, an entry
        // with an invalid message attribute). Other checks (sizes) fail their entry alone.
        for req in &entries {
            self.check_batch_entry(&topic, req)?;
        }
        self.publish_to(&topic, entries, true).await
    }

    /// The request-level checks of a PublishBatch entry: MessageStructure, and the FIFO
    /// topic rules (a MessageGroupId, a MessageDeduplicationId unless the topic
    /// deduplicates by content; none on a standard topic). Errors: `InvalidParameter`.
    fn check_batch_entry(&self, topic: &TopicRecord, req: &PublishRequest) -> Result<()> {
        let fifo = topic.name.ends_with(".fifo");
        check_message_structure(req)?;
        validate_sns_attributes(&req.message_attributes)?;
        let cbd = TopicConfig::from_attributes(&topic.attributes).content_based_deduplication;
        if fifo {
            if req.group_id.is_none() {
                return Err(invalid(
                    "The MessageGroupId parameter is required for FIFO topics",
                ));
            }
            if req.dedup_id.is_none() && !cbd {
                return Err(invalid("The topic should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly"));
            }
        } else if req.dedup_id.is_some() {
            return Err(invalid("MessageDeduplicationId Reason: The request includes MessageDeduplicationId parameter that is not valid for this topic type"));
        }
        Ok(())
    }

    fn check_publish(&self, req: &PublishRequest, _fifo: bool) -> Result<()> {
        if req.message.is_empty() {
            return Err(invalid("Empty message"));
        }
        let size = req.message.len() + message::attributes_size(&req.message_attributes);
        if size > MAX_SNS_MESSAGE {
            return Err(invalid("Message too long"));
        }
        if let Some(s) = &req.subject {
            check_subject(s)?;
        }
        // The ids SQS takes (SNS API Reference, Publish: "up to 128 alphanumeric
        // characters (a-z, A-Z, 0-9) and punctuation"); the words follow the recorded
        // "Invalid parameter: MessageDeduplicationId Reason: ..." (AWS's own for this
        // refusal are not recorded).
        for (name, value) in [
            ("MessageGroupId", &req.group_id),
            ("MessageDeduplicationId", &req.dedup_id),
        ] {
            if let Some(v) = value {
                let ok = !v.is_empty()
                    && v.len() <= 128
                    && v.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b.is_ascii_punctuation());
                if !ok {
                    return Err(invalid(&format!(
                        "{name} Reason: {name} can only include alphanumeric and punctuation characters. 1 to 128 in length."
                    )));
                }
            }
        }
        check_message_structure(req)?;
        validate_sns_attributes(&req.message_attributes)
    }

    async fn publish_to(
        &self,
        topic: &TopicRecord,
        entries: Vec<PublishRequest>,
        in_batch: bool,
    ) -> Result<Vec<Result<PublishResult>>> {
        let _ = in_batch;
        let fifo = topic.name.ends_with(".fifo");
        let config = TopicConfig::from_attributes(&topic.attributes);
        let cbd = config.content_based_deduplication;
        // SNS API Reference, Publish, MessageDeduplicationId: with FifoThroughputScope
        // "MessageGroup the message deduplication scope is within each individual message
        // group", with "Topic" (the default) across the entire topic.
        let dedup_per_group = config.dedup_per_group;
        let topic_arn = self.topic_arn(&topic.name);
        // The account whose root publishes a request without a publisher (an open Loft).
        let topic_account = names::arn_account(&topic_arn)
            .unwrap_or(&self.config.account_id)
            .to_owned();
        let tracing_active = config.tracing_active;
        let policy = self.topic_policy(topic)?;
        let subs = self.confirmed_subscriptions(topic).await?;
        // SigningCertURL names the signing certificate, whose key is made on first use
        // (an RSA key generation, ~0.3 s of CPU): only an envelope carries it, so a topic
        // whose subscriptions are all raw SQS ones does not ask for it.
        let envelopes = subs.iter().any(|s| {
            s.protocol != SubscriptionProtocol::Sqs
                || !SubscriptionConfig::from_attributes(&s.attributes).raw_message_delivery
        });
        let signing_cert_url = if envelopes {
            self.signing_cert_url()
        } else {
            String::new()
        };
        let mut queue_cache: BTreeMap<String, Option<std::sync::Arc<QueueRecord>>> =
            BTreeMap::new();
        for s in subs
            .iter()
            .filter(|s| s.protocol == SubscriptionProtocol::Sqs)
        {
            let endpoint = self.key_of_arn(&s.endpoint, "sqs");
            for name in endpoint.into_iter().chain(self.subscription_dlq(s)) {
                if let std::collections::btree_map::Entry::Vacant(slot) = queue_cache.entry(name) {
                    let q = self.find_queue(slot.key()).await?;
                    slot.insert(q);
                }
            }
        }
        let now = self.now_ms();
        let mut results: Vec<Result<PublishResult>> = Vec::with_capacity(entries.len());
        let mut deliveries = Vec::new();
        let mut records = Vec::new();
        // The recorded Firehose and mobile push deliveries, for their delivery status.
        let mut recorded_status: Vec<RecordedStatus> = Vec::new();
        // Per accepted entry: its slot in `results`, its SQS copies with their queues'
        // names (for the activity counters), and on a FIFO topic its deduplication key.
        let mut accepted: Vec<(usize, Vec<(SqsCopy, String)>)> = Vec::new();
        let mut keys: Vec<FifoPublishEntry> = Vec::new();
        // The protocols of deliveries given up at once.
        let mut dropped: Vec<&str> = Vec::new();
        // Data protection audit records for SQS destinations, and their queues.
        let (mut audit_messages, mut audit_queues) = (Vec::new(), Vec::new());
        for mut req in entries {
            if let Err(e) = self.check_publish(&req, fifo) {
                results.push(Err(e));
                continue;
            }
            let mut audit = None;
            if let Some(policy) = &policy {
                let structured = req.message_structure.is_some();
                let publisher = req
                    .publisher
                    .take()
                    .unwrap_or_else(|| format!("arn:aws:iam::{}:root", topic_account));
                match self.protect_inbound(
                    topic,
                    policy,
                    std::mem::take(&mut req.message),
                    structured,
                    &publisher,
                ) {
                    Ok((message, pending)) => (req.message, audit) = (message, pending),
                    Err(e) => {
                        results.push(Err(e));
                        continue;
                    }
                }
            }
            // FIFO topic rules and deduplication.
            let mut dedup_id = None;
            if fifo {
                if req.group_id.is_none() {
                    results.push(Err(invalid(
                        "The MessageGroupId parameter is required for FIFO topics",
                    )));
                    continue;
                }
                let id = match (&req.dedup_id, cbd) {
                    (Some(d), _) => d.clone(),
                    (None, true) => hex::encode(<sha2::Sha256 as sha2::Digest>::digest(
                        req.message.as_bytes(),
                    )),
                    (None, false) => {
                        results.push(Err(invalid("The topic should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly")));
                        continue;
                    }
                };
                dedup_id = Some(id);
            } else if req.dedup_id.is_some() {
                results.push(Err(invalid("MessageDeduplicationId Reason: The request includes MessageDeduplicationId parameter that is not valid for this topic type")));
                continue;
            }
            let message_id = uuid::Uuid::new_v4().to_string();
            if let Some(pending) = audit {
                self.finish_audit(
                    topic,
                    pending,
                    &message_id,
                    now,
                    &mut audit_messages,
                    &mut audit_queues,
                )
                .await?;
            }
            let per_protocol: Option<Value> = req
                .message_structure
                .as_ref()
                .and_then(|_| serde_json::from_str(&req.message).ok());
            let text_for = |protocol: &str| -> String {
                match &per_protocol {
                    Some(v) => structured_text(v, protocol).to_owned(),
                    None => req.message.clone(),
                }
            };
            let filter_attrs = filter_attributes(&req.message_attributes);
            // "Message attributes are sent only when the message structure is String, not
            // JSON" (SNS Developer Guide, "Amazon SNS message attributes"); filter
            // policies still see them.
            let no_attributes = MessageAttributes::new();
            let delivered_attributes = if req.message_structure.is_some() {
                &no_attributes
            } else {
                &req.message_attributes
            };
            // TracingConfig Active: SNS starts a trace when the publisher sent none, so
            // the subscribers' messages carry one (X-Ray Developer Guide, "Amazon SNS and
            // AWS X-Ray"; the header format of "Tracing header"); PassThrough (the
            // default) only passes the publisher's on.
            let started =
                (req.trace_header.is_none() && tracing_active).then(|| new_trace_header(now));
            let trace_attributes = req
                .trace_header
                .as_ref()
                .or(started.as_ref())
                .and_then(|t| {
                    let mut a = MessageAttributes::new();
                    a.insert(
                        "AWSTraceHeader".into(),
                        message::MessageAttributeValue::string(t.clone()),
                    );
                    message::encode_attributes(&a)
                });
            let timestamp = iso_timestamp(now);
            // The signed fields of each distinct text, signed once (FIFO topics' envelopes
            // carry no signature).
            let mut signed: BTreeMap<String, (SignedFields, Option<(u8, String)>)> =
                BTreeMap::new();
            let mut sign = |svc: &SnsDelivery,
                            text: &str,
                            raw: bool|
             -> (SignedFields, Option<(u8, String)>) {
                let fields = || {
                    svc.notification_fields(
                        &topic_arn,
                        &message_id,
                        text,
                        req.subject.as_deref(),
                        &timestamp,
                    )
                };
                if raw {
                    return (fields(), None);
                }
                signed
                    .entry(text.to_owned())
                    .or_insert_with(|| {
                        let f = fields();
                        let sig = svc.signature(topic, &f);
                        (f, sig)
                    })
                    .clone()
            };
            // Sized once: a copy is a few hundred bytes, and growing the vector one
            // subscription at a time moved them again and again (3% of a 10-queue
            // fan-out's server CPU, docs/benchmarks/history.md, "Fan-out, branch
            // `s20-fanout`").
            let mut copies: Vec<(SqsCopy, String)> = Vec::with_capacity(subs.len());
            // The raw body this entry's raw copies share (one MD5 per distinct text).
            let mut raw_text = None;
            for sub in &subs {
                let Some(text) = self.subscription_text(
                    topic,
                    policy.as_ref(),
                    sub,
                    &filter_attrs,
                    text_for(structure_key(sub.protocol, &sub.endpoint)),
                ) else {
                    continue;
                };
                // FIFO topics have SQS subscriptions only (`subscribe` refuses others).
                if fifo && sub.protocol != SubscriptionProtocol::Sqs {
                    tracing::warn!(protocol = %sub.protocol, "a FIFO topic delivers to SQS only; message not delivered");
                    dropped.push("other");
                    continue;
                }
                let sub_config = SubscriptionConfig::from_attributes(&sub.attributes);
                let raw = sub_config.raw_message_delivery;
                if sub_config.seed_payload {
                    deliveries.push(NewDelivery {
                        subscription: sub.uuid.clone(),
                        endpoint: sub.endpoint.clone(),
                        content_type: "application/json".into(),
                        headers: Vec::new(),
                        body: json!({"topic": topic.name, "message": text}).to_string(),
                        due_at_ms: now,
                        seal: config.seal(topic.id),
                    });
                    continue;
                }
                use SubscriptionProtocol as P;
                match sub.protocol {
                    P::Sqs => {
                        let out = Outgoing {
                            topic_arn: &topic_arn,
                            delivered_attributes,
                            trace_attributes: trace_attributes.clone(),
                            group_id: req.group_id.as_deref(),
                            dedup_id: dedup_id.as_deref(),
                            dedup_key: None,
                            now_ms: now,
                            replayed: false,
                        };
                        match self.sqs_copy(
                            topic,
                            sub,
                            text,
                            raw,
                            &out,
                            &queue_cache,
                            &signing_cert_url,
                            &mut |svc, t, raw| sign(svc, t, raw),
                            &mut raw_text,
                        ) {
                            SqsStep::Copy(copy, name) => copies.push((*copy, name)),
                            SqsStep::Dropped => dropped.push(P::Sqs.as_str()),
                        }
                    }
                    P::Http | P::Https => {
                        let body = if raw {
                            text.clone()
                        } else {
                            self.notification_envelope(sub, &text, delivered_attributes, &mut sign)
                        };
                        deliveries.push(self.http_delivery(
                            topic,
                            sub,
                            "Notification",
                            &message_id,
                            body,
                            raw,
                        ));
                    }
                    // A function the topic's account may invoke; another's is recorded
                    // as an unconfigured one is.
                    P::Lambda
                        if self
                            .functions
                            .invocable_function(self.split_key(&topic.name).0, &sub.endpoint)
                            .is_ok() =>
                    {
                        let sub_arn = self.subscription_arn(sub);
                        let (fields, sig) = sign(self, &text, false);
                        let unsubscribe_url = format!(
                            "{}/?Action=Unsubscribe&SubscriptionArn={sub_arn}",
                            self.config.advertised_url
                        );
                        let n = crate::functions::SnsNotification {
                            subscription_arn: &sub_arn,
                            topic_arn: &topic_arn,
                            message_id: &message_id,
                            subject: fields.subject.as_deref(),
                            message: &fields.message,
                            timestamp: &fields.timestamp,
                            signature: sig.as_ref().map(|(v, s)| (*v, s.as_str())),
                            signing_cert_url: &signing_cert_url,
                            unsubscribe_url: &unsubscribe_url,
                            attributes: delivered_attributes,
                        };
                        deliveries.extend(
                            self.functions
                                .lambda_delivery(&n, &sub.uuid, &sub.endpoint)
                                .map(|d| NewDelivery {
                                    seal: config.seal(topic.id),
                                    ..d
                                }),
                        );
                    }
                    // Recorded, not sent: email, SMS, push, Firehose, and a function this
                    // topic may not invoke.
                    protocol @ (P::Email
                    | P::EmailJson
                    | P::Sms
                    | P::Application
                    | P::Lambda
                    | P::Firehose) => {
                        let message = if protocol == P::EmailJson {
                            self.notification_envelope(sub, &text, delivered_attributes, &mut sign)
                        } else {
                            text.clone()
                        };
                        let (sender, message) = sender_of(topic, protocol, message);
                        // A Firehose delivery is written under the subscription's role
                        // (SubscriptionRoleArn): the recording names it as its sender.
                        let sender = if protocol == P::Firehose {
                            sub_config.subscription_role_arn.clone()
                        } else {
                            sender
                        };
                        if let Some(prefix @ ("Firehose" | "Application")) =
                            delivery_status::prefix(protocol)
                        {
                            recorded_status.push(RecordedStatus {
                                prefix,
                                endpoint: sub.endpoint.clone(),
                                message_id: message_id.clone(),
                                message: message.clone(),
                            });
                        }
                        records.push(RecordedMessage {
                            id: 0,
                            account: self.stored_account(self.key_scope(&topic.name).0.account),
                            protocol: protocol.as_str().to_owned(),
                            endpoint: sub.endpoint.clone(),
                            topic_arn: Some(topic_arn.clone()),
                            subject: req.subject.clone(),
                            message,
                            sender,
                            created_at_ms: now,
                            seal: config.seal(topic.id),
                        });
                    }
                }
            }
            if let Some(id) = dedup_id {
                keys.push(FifoPublishEntry {
                    message_id: message_id.clone(),
                    dedup: DedupKey {
                        scope: if dedup_per_group {
                            req.group_id.clone().unwrap_or_default()
                        } else {
                            String::new()
                        },
                        id,
                        expires_at_ms: now + DEDUP_WINDOW_MS,
                    },
                    archive: super::archive::entry(topic, &req, now),
                    subscriptions: copies.iter().map(|(c, _)| c.subscription.clone()).collect(),
                });
            }
            accepted.push((results.len(), copies));
            results.push(Ok(PublishResult {
                message_id,
                sequence_number: None,
            }));
        }
        let mut woken: Vec<i64> = accepted
            .iter()
            .flat_map(|(_, copies)| copies.iter().map(|(c, _)| c.queue_id))
            .collect();
        woken.sort_unstable();
        woken.dedup();
        let has_deliveries = !deliveries.is_empty();
        let recorded: Vec<String> = records.iter().map(|r| r.protocol.clone()).collect();
        // What each queue message stored was: (its queue's name, stored anew, sent to the
        // subscription's dead-letter queue).
        let mut stored: Vec<(String, bool, bool)> = Vec::new();
        if fifo && !accepted.is_empty() {
            // The store numbers each entry and checks its key in the publish's transaction;
            // the envelopes carry that number, so the copies are rendered there.
            let url = self.config.advertised_url.clone();
            let plans: Vec<Vec<SqsCopy>> = accepted
                .iter()
                .map(|(_, copies)| copies.iter().map(|(c, _)| c.clone()).collect())
                .collect();
            let fanout: FifoFanout = std::sync::Arc::new(move |i: usize, sequence: i64| {
                let sequence = sequence_number(sequence);
                plans[i]
                    .iter()
                    .map(|c| c.render(&url, Some(&sequence)))
                    .collect()
            });
            let published = self
                .store
                .publish_fifo(FifoPublish {
                    topic_id: topic.id,
                    now_ms: now,
                    entries: keys,
                    fanout,
                })
                .await?
                .ok_or_else(|| Error::new(ErrorCode::NotFound, "Topic does not exist"))?;
            for ((slot, copies), p) in accepted.iter().zip(published) {
                results[*slot] = Ok(PublishResult {
                    message_id: p.message_id,
                    sequence_number: Some(sequence_number(p.sequence)),
                });
                for ((copy, name), sent) in copies.iter().zip(&p.sent) {
                    stored.push((name.clone(), !sent.duplicate, copy.dead_lettered));
                    if !sent.duplicate {
                        self.log_sqs_delivery(topic, &config, &topic_arn, copy, name, now);
                    }
                }
            }
            // Audit records of a FIFO topic go in their own transaction, after the fan-out.
            if !audit_messages.is_empty() {
                self.store
                    .publish(std::mem::take(&mut audit_messages), Vec::new(), Vec::new())
                    .await?;
            }
        } else {
            let count: usize = accepted.iter().map(|(_, copies)| copies.len()).sum();
            let mut messages = Vec::with_capacity(count + audit_messages.len());
            let mut names = Vec::with_capacity(count);
            let mut logged = Vec::new();
            for (_, copies) in &accepted {
                for (copy, name) in copies {
                    messages.push(copy.render(&self.config.advertised_url, None));
                    names.push((name.clone(), copy.dead_lettered));
                    if delivery_status::enabled(&config, "SQS", true) {
                        logged.push((copy, name));
                    }
                }
            }
            // Data protection audit records, in the publish's transaction.
            messages.extend(std::mem::take(&mut audit_messages));
            if !messages.is_empty() || has_deliveries || !records.is_empty() {
                let sent = self.store.publish(messages, deliveries, records).await?;
                for ((name, dead), sent) in names.into_iter().zip(&sent) {
                    stored.push((name, !sent.duplicate, dead));
                }
                for (copy, name) in logged {
                    self.log_sqs_delivery(topic, &config, &topic_arn, copy, name, now);
                }
            }
        }
        for (queue, new, dead_lettered) in stored {
            if new {
                self.activity.sns_copy_stored(&queue, dead_lettered);
            }
        }
        for queue in &audit_queues {
            self.activity.sent(queue, 1);
        }
        for protocol in recorded {
            self.activity
                .delivery(&protocol, DeliveryOutcome::Recorded, 1);
        }
        for r in &recorded_status {
            log_recorded_delivery(topic, &config, &topic_arn, r, now);
        }
        for protocol in dropped {
            self.activity
                .delivery(protocol, DeliveryOutcome::Dropped, 1);
        }
        for q in woken {
            self.wake(q);
        }
        if has_deliveries {
            self.delivery_notify.notify_one();
        }
        let published = results.iter().filter(|r| r.is_ok()).count();
        self.activity.published(&topic.name, published as u64);
        Ok(results)
    }

    /// The subscriptions of `topic` a publish delivers to: the confirmed ones (one pending
    /// confirmation gets nothing). Errors: store errors.
    async fn confirmed_subscriptions(
        &self,
        topic: &TopicRecord,
    ) -> Result<Vec<SubscriptionRecord>> {
        let mut subs = self.store.list_subscriptions(Some(topic.id)).await?;
        subs.retain(|s| s.confirmed);
        Ok(subs)
    }

    /// The seeds' `POST /topics/{name}/publish`: every subscription gets the message (seed
    /// subscriptions the `{"topic","message"}` JSON, others as SNS delivers); returns the
    /// number of subscriptions. Deliveries are durable and retried; none is awaited.
    ///
    /// `topic` is a store key, as the listings give it (docs/seeds-api.md: another
    /// account's `ACCOUNT/NAME`); the name rule is checked on its name.
    ///
    /// Errors: `InvalidParameterValue` for an empty message (SNS delivers none), also to a
    /// topic that does not exist, and for a name no topic of the seeds' API can have.
    pub async fn publish_seed(&self, topic: &str, message: &str) -> Result<usize> {
        crate::names::check_topic_name(self.split_key(topic).1, crate::names::Naming::Seed)?;
        if message.is_empty() {
            return Err(Error::invalid("message must not be empty"));
        }
        let Some(topic) = self.store.get_topic(topic).await? else {
            return Ok(0);
        };
        let count = self.confirmed_subscriptions(&topic).await?.len();
        let req = PublishRequest {
            message: message.to_owned(),
            ..PublishRequest::default()
        };
        let mut results = self.publish_to(&topic, vec![req], false).await?;
        if let Some(Err(e)) = results.pop() {
            return Err(Error::invalid(e.message));
        }
        Ok(count)
    }
}

/// Where Publish sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PublishTarget<'a> {
    /// A topic, by ARN (TopicArn).
    Topic(&'a str),
    /// TargetArn: a topic or a mobile push endpoint, by ARN.
    Target(&'a str),
    /// An SMS number (PhoneNumber): recorded, not sent.
    Phone(&'a str),
    /// A mobile push endpoint (TargetArn): recorded, not sent.
    Endpoint(&'a str),
}

/// MessageStructure: absent, or `json` with a Message that is a JSON object holding a
/// `default` string. Errors: `InvalidParameter` in AWS's words.
fn check_message_structure(req: &PublishRequest) -> Result<()> {
    if let Some(structure) = &req.message_structure {
        if structure != "json" {
            return Err(invalid("MessageStructure"));
        }
        let v: Value = serde_json::from_str(&req.message)
            .map_err(|_| invalid("Message Structure - JSON message body failed to parse"))?;
        if !v.get("default").is_some_and(Value::is_string) {
            return Err(invalid(
                "Message Structure - No default entry in JSON message body",
            ));
        }
    }
    Ok(())
}

/// Publish's `Subject`: "UTF-8 text with no line breaks or control characters, and less
/// than 100 characters long" (SNS API Reference, Publish; botocore's `sns/2010-03-31`),
/// and not empty (recorded, `test_publish_with_empty_subject`). Characters are counted,
/// not bytes; 100 is taken (Loft's reading of "less than 100", as before). Line breaks
/// are every control character (LF, CR, and tab among them) and U+2028, U+2029.
///
/// Errors: `InvalidParameter` "Invalid parameter: Subject" (recorded).
pub(crate) fn check_subject(subject: &str) -> Result<()> {
    let ok = !subject.is_empty()
        && subject.chars().count() <= 100
        && !subject
            .chars()
            .any(|c| c.is_control() || matches!(c, '\u{2028}' | '\u{2029}'));
    if ok {
        Ok(())
    } else {
        Err(invalid("Subject"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One row per variant of the Subject rule: taken or refused.
    #[test]
    fn subject_rules() {
        let rows: &[(String, bool)] = &[
            ("Hello".into(), true),
            (" starts with a space".into(), true),
            ("Grüße aus Köln".into(), true),
            ("件名".into(), true),
            ("emoji 🎉".into(), true),
            ("s".repeat(100), true),
            ("ä".repeat(100), true),
            ("s".repeat(101), false),
            ("ä".repeat(101), false),
            (String::new(), false),
            ("line\nbreak".into(), false),
            ("carriage\rreturn".into(), false),
            ("tab\there".into(), false),
            ("nul\u{0}".into(), false),
            ("bell\u{7}".into(), false),
            ("del\u{7f}".into(), false),
            ("next line\u{85}".into(), false),
            ("line separator\u{2028}".into(), false),
            ("paragraph separator\u{2029}".into(), false),
        ];
        for (subject, taken) in rows {
            match check_subject(subject) {
                Ok(()) => assert!(taken, "{subject:?} taken"),
                Err(e) => {
                    assert!(!taken, "{subject:?} refused");
                    assert_eq!(e.code, crate::ErrorCode::InvalidParameter);
                    assert_eq!(e.message, "Invalid parameter: Subject");
                }
            }
        }
    }
    use crate::message::MessageAttributeValue;

    fn value(
        data_type: &str,
        string: Option<&str>,
        binary: Option<&[u8]>,
    ) -> MessageAttributeValue {
        MessageAttributeValue {
            data_type: data_type.into(),
            string_value: string.map(str::to_owned),
            binary_value: binary.map(<[u8]>::to_vec),
        }
    }

    /// Every variant of SNS's message attribute rule, one row each: the message AWS
    /// recorded for Publish and PublishBatch (the same text for both), or `None` when the
    /// attribute is accepted.
    #[test]
    fn sns_message_attribute_rules() {
        let long = "a".repeat(257);
        let longest = "a".repeat(256);
        let rows: Vec<(&str, MessageAttributeValue, Option<&str>)> = vec![
            ("attr1", value("String", Some("v"), None), None),
            ("attr1", value("String.custom", Some("v"), None), None),
            ("attr1", value("Number", Some("1.5"), None), None),
            ("attr1", value("Number.float", Some("-2e3"), None), None),
            ("attr1", value("Binary", None, Some(b"\x00\x01")), None),
            ("attr1", value("Binary.png", None, Some(b"x")), None),
            ("attr1", value("String.Array", Some("[\"a\", 1, null]"), None), None),
            ("a-b_c.d9", value("String", Some("v"), None), None),
            (&longest, value("String", Some("v"), None), None),
            ("attr1", value("String", Some(""), None), Some("The message attribute 'attr1' must contain non-empty message attribute value for message attribute type 'String'.")),
            ("attr1", value("String", None, None), Some("The message attribute 'attr1' must contain non-empty message attribute value for message attribute type 'String'.")),
            ("attr1", value("Number", None, None), Some("The message attribute 'attr1' must contain non-empty message attribute value for message attribute type 'Number'.")),
            ("attr1", value("Binary", None, Some(b"")), Some("The message attribute 'attr1' must contain non-empty message attribute value for message attribute type 'Binary'.")),
            ("attr1", value("String", None, Some(b"123")), Some("The message attribute 'attr1' with type 'String' must use field 'String'.")),
            ("attr1", value("Number", None, Some(b"123")), Some("The message attribute 'attr1' with type 'Number' must use field 'String'.")),
            ("attr1", value("Binary", Some("123"), None), Some("The message attribute 'attr1' with type 'Binary' must use field 'Binary'.")),
            ("attr1", value("InvalidType", Some("123"), None), Some("The message attribute 'attr1' has an invalid message attribute type, the set of supported type prefixes is Binary, Number, and String.")),
            ("attr1", value("String.", Some("x"), None), Some("The message attribute 'attr1' has an invalid message attribute type, the set of supported type prefixes is Binary, Number, and String.")),
            ("attr1", value("Stringprefixed", Some("x"), None), Some("The message attribute 'attr1' has an invalid message attribute type, the set of supported type prefixes is Binary, Number, and String.")),
            ("attr1", value("string", Some("x"), None), Some("The message attribute 'attr1' has an invalid message attribute type, the set of supported type prefixes is Binary, Number, and String.")),
            ("attr1", value("Number", Some("twelve"), None), Some("The message attribute 'attr1' has an invalid message attribute value: not a number.")),
            ("attr1", value("String.Array", Some("nope"), None), Some("The message attribute 'attr1' has an invalid message attribute value: a String.Array must be a JSON array.")),
            (&long, value("String", Some("123"), None), Some("Length of message attribute name must be less than 256 bytes.")),
            ("a^*?", value("String", Some("123"), None), Some("Invalid non-alphanumeric character '#x5E' was found in the message attribute name. Can only include alphanumeric characters, hyphens, underscores, or dots.")),
            ("a b", value("String", Some("123"), None), Some("Invalid non-alphanumeric character '#x20' was found in the message attribute name. Can only include alphanumeric characters, hyphens, underscores, or dots.")),
            (".abc", value("String", Some("123"), None), Some("Invalid message attribute name starting with character '.' was found.")),
            ("abc.", value("String", Some("123"), None), Some("Invalid message attribute name ending with character '.' was found.")),
            ("a..bc", value("String", Some("123"), None), Some("Message attribute name can not have successive '.' character.")),
        ];
        for (name, v, expected) in rows {
            let attrs: MessageAttributes = [(name.to_owned(), v.clone())].into();
            match (validate_sns_attributes(&attrs), expected) {
                (Ok(()), None) => {}
                (Err(e), Some(m)) => {
                    assert_eq!(e.code, ErrorCode::ParameterValueInvalid, "{name} {v:?}");
                    assert_eq!(e.message, m, "{name} {v:?}");
                }
                (got, want) => panic!("{name} {v:?}: got {got:?}, want {want:?}"),
            }
        }
    }

    /// The reserved prefixes `AWS.` and `Amazon.` (any case) refuse every name but AWS's own
    /// attributes, the SMS ones by name and the mobile push family
    /// `AWS.SNS.MOBILE.{PLATFORM}.{KEY}` (SNS Developer Guide); one row per variant.
    #[test]
    fn reserved_prefixes_take_only_aws_defined_attributes() {
        let rows: &[(&str, bool)] = &[
            ("AWS.SNS.SMS.SenderID", true),
            ("AWS.SNS.SMS.MaxPrice", true),
            ("AWS.SNS.SMS.SMSType", true),
            ("AWS.MM.SMS.OriginationNumber", true),
            ("AWS.MM.SMS.EntityId", true),
            ("AWS.MM.SMS.TemplateId", true),
            ("AWS.SNS.MOBILE.APNS.PUSH_TYPE", true),
            ("AWS.SNS.MOBILE.APNS_SANDBOX.TTL", true),
            ("AWS.SNS.MOBILE.FCM.TTL", true),
            ("AWS.SNS.MOBILE.WNS.Type", true),
            ("AWSX.custom", true),
            ("my.AWS.attr", true),
            ("AWS.custom", false),
            ("aws.custom", false),
            ("Amazon.custom", false),
            ("AMAZON.custom", false),
            ("AWS.SNS.SMS.Bogus", false),
            ("aws.sns.sms.smstype", false),
            ("AWS.MM.SMS.Other", false),
            ("AWS.SNS.MOBILE.APNS", false),
            ("aws.sns.mobile.apns.ttl", false),
        ];
        for &(name, accepted) in rows {
            let attrs: MessageAttributes =
                [(name.to_owned(), value("String", Some("v"), None))].into();
            match validate_sns_attributes(&attrs) {
                Ok(()) => assert!(accepted, "{name} was accepted"),
                Err(e) => {
                    assert!(!accepted, "{name}: {e:?}");
                    assert_eq!(e.code, ErrorCode::ParameterValueInvalid, "{name}");
                    assert_eq!(
                        e.message,
                        format!(
                            "Message (user) attribute name '{name}' is reserved for use by Amazon."
                        ),
                        "{name}"
                    );
                }
            }
        }
    }
}
