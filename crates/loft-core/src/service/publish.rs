//! Publish: message validation, filter policies, the SNS envelope, and fan-out in one
//! transaction to every matching SQS queue, HTTP/S endpoint (durably queued for the
//! delivery workers) and recorded protocol.
//!
//! Sources: SNS API Reference Publish and PublishBatch; SNS Developer Guide "Parsing
//! message formats" (the envelope), "Amazon SNS raw message delivery", "Amazon SNS message
//! attributes", "Message filtering", "Fanout to Amazon SQS queues"; `chapter-42-sns.md`
//! ("Publish", the seeds' `{"topic","message"}` payload).

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::activity::DeliveryOutcome;
use super::delivery_status;
use super::messages::{sequence_number, DEDUP_WINDOW_MS};
use super::topics::{check_arn_elements, invalid, SEED_PAYLOAD_ATTRIBUTE};
use super::Service;
use crate::attributes::QueueConfig;
use crate::delivery_policy::{DeliveryPolicy, DEFAULT_CONTENT_TYPE};
use crate::error::{Error, ErrorCode, Result};
use crate::filter_policy::{FilterPolicy, FilterPolicyScope};
use crate::message::{self, MessageAttributes};
use crate::model::*;
use crate::names;

/// Largest SNS message, bytes, attributes included (256 KiB).
pub const MAX_SNS_MESSAGE: usize = 262_144;

/// One message to publish (Publish, or one PublishBatch entry).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PublishRequest {
    /// Message (required).
    pub message: String,
    /// Subject (email and the envelope).
    pub subject: Option<String>,
    /// `json` when Message holds one message per protocol.
    pub message_structure: Option<String>,
    /// MessageAttributes (String, String.Array, Number, Binary).
    pub message_attributes: MessageAttributes,
    /// MessageGroupId (FIFO topics; fair queues).
    pub group_id: Option<String>,
    /// MessageDeduplicationId (FIFO topics).
    pub dedup_id: Option<String>,
    /// The X-Ray trace header of the request (`X-Amzn-Trace-Id`): SQS subscriptions'
    /// messages carry it as their `AWSTraceHeader` system attribute (SNS Developer Guide,
    /// "Active tracing in Amazon SNS").
    pub trace_header: Option<String>,
}

/// What Publish returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublishResult {
    /// MessageId.
    pub message_id: String,
    /// SequenceNumber (FIFO topics).
    pub sequence_number: Option<String>,
}

/// The fields SNS signs (SNS Developer Guide, "Verifying the signatures of Amazon SNS
/// messages"): for Notification, Message, MessageId, Subject (when present), Timestamp,
/// TopicArn, Type; for SubscriptionConfirmation, Message, MessageId, SubscribeURL,
/// Timestamp, Token, TopicArn, Type.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SignedFields {
    /// `Notification`, `SubscriptionConfirmation` or `UnsubscribeConfirmation`.
    pub message_type: String,
    /// Message.
    pub message: String,
    /// MessageId.
    pub message_id: String,
    /// Subject, Notification only.
    pub subject: Option<String>,
    /// SubscribeURL, confirmations only.
    pub subscribe_url: Option<String>,
    /// Timestamp, ISO 8601 with milliseconds.
    pub timestamp: String,
    /// Token, confirmations only.
    pub token: Option<String>,
    /// TopicArn.
    pub topic_arn: String,
}

/// Signs SNS messages; implemented by the server with Loft's generated key.
pub trait MessageSigner: Send + Sync + 'static {
    /// Base64 RSA signature of the canonical string of `fields`: SHA1 for
    /// `signature_version` 1, SHA256 for 2.
    fn sign(&self, fields: &SignedFields, signature_version: u8) -> String;

    /// The file name of the certificate the signatures verify with, as AWS names it:
    /// `SimpleNotificationService-{id}.pem`, `id` 32 lowercase hex digits that change
    /// when the certificate does. SigningCertURL is [`SIGNING_CERT_DIR`] and this name
    /// under the advertised URL.
    fn certificate_file(&self) -> String;
}

/// URL path of the folder the signing certificate is served from: SigningCertURL is
/// `{advertised_url}{SIGNING_CERT_DIR}{MessageSigner::certificate_file}`.
pub const SIGNING_CERT_DIR: &str = "/_loft/sns/";

/// The certificate file name in SigningCertURL when no signer is configured (signatures
/// are then empty).
pub const UNSIGNED_CERT_FILE: &str =
    "SimpleNotificationService-00000000000000000000000000000000.pem";

/// ISO 8601 UTC with milliseconds, as SNS's Timestamp.
pub fn iso_timestamp(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .unwrap_or_default()
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

fn sns_attribute_json(attrs: &MessageAttributes) -> Value {
    let mut map = Map::new();
    for (name, v) in attrs {
        let value = match &v.binary_value {
            Some(b) => message::base64_encode(b),
            None => v.string_value.clone().unwrap_or_default(),
        };
        map.insert(name.clone(), json!({"Type": v.data_type, "Value": value}));
    }
    Value::Object(map)
}

/// The JSON envelope SNS sends to HTTP/S endpoints and (without raw delivery) SQS queues,
/// in AWS's field order (SNS Developer Guide, "Parsing message formats"): FIFO topics add
/// SequenceNumber and carry no signature fields; `subscription_arn` fills the
/// UnsubscribeURL of notifications; URLs start with `advertised_url`; SigningCertURL is
/// `signing_cert_url`.
fn render_envelope(
    advertised_url: &str,
    signing_cert_url: &str,
    fields: &SignedFields,
    signature: Option<&(u8, String)>,
    attributes: &MessageAttributes,
    sequence: Option<&str>,
    subscription_arn: Option<&str>,
) -> String {
    Value::Object(envelope_map(
        advertised_url,
        signing_cert_url,
        fields,
        signature,
        attributes,
        sequence,
        subscription_arn,
    ))
    .to_string()
}

/// [`render_envelope`]'s fields, in order, before they are written out.
fn envelope_map(
    advertised_url: &str,
    signing_cert_url: &str,
    fields: &SignedFields,
    signature: Option<&(u8, String)>,
    attributes: &MessageAttributes,
    sequence: Option<&str>,
    subscription_arn: Option<&str>,
) -> Map<String, Value> {
    let mut env = Map::new();
    env.insert("Type".into(), json!(fields.message_type));
    env.insert("MessageId".into(), json!(fields.message_id));
    if let Some(t) = &fields.token {
        env.insert("Token".into(), json!(t));
    }
    if let Some(seq) = sequence {
        env.insert("SequenceNumber".into(), json!(seq));
    }
    env.insert("TopicArn".into(), json!(fields.topic_arn));
    if let Some(s) = &fields.subject {
        env.insert("Subject".into(), json!(s));
    }
    env.insert("Message".into(), json!(fields.message));
    if let Some(u) = &fields.subscribe_url {
        env.insert("SubscribeURL".into(), json!(u));
    }
    env.insert("Timestamp".into(), json!(fields.timestamp));
    if let Some((version, sig)) = signature {
        env.insert("SignatureVersion".into(), json!(version.to_string()));
        env.insert("Signature".into(), json!(sig));
        env.insert("SigningCertURL".into(), json!(signing_cert_url));
    }
    if let Some(arn) = subscription_arn {
        // AWS writes the ARN as it is: its characters ([A-Za-z0-9_.:-]) need no
        // percent-encoding in a query string.
        env.insert(
            "UnsubscribeURL".into(),
            json!(format!(
                "{advertised_url}/?Action=Unsubscribe&SubscriptionArn={arn}"
            )),
        );
    }
    if !attributes.is_empty() {
        env.insert("MessageAttributes".into(), sns_attribute_json(attributes));
    }
    env
}

/// One SQS subscription's copy of a publish, decided before the topic's sequence number
/// is known (a FIFO topic's envelope carries it): rendered by [`SqsCopy::render`].
#[derive(Clone)]
pub(crate) struct SqsCopy {
    queue_id: i64,
    /// The copy's own MessageId in the queue.
    message_id: String,
    /// Raw delivery: the text itself, with the message's attributes, shared by the raw
    /// copies of one publish that get the same text.
    raw: Option<std::sync::Arc<RawText>>,
    /// Otherwise the envelope of these fields and signature, for this subscription ARN.
    fields: SignedFields,
    signature: Option<(u8, String)>,
    /// SigningCertURL of the envelope.
    signing_cert_url: String,
    subscription_arn: String,
    delivered_attributes: MessageAttributes,
    /// The stored system attributes (AWSTraceHeader), encoded.
    system_attributes: Option<String>,
    /// Whether this copy goes to the subscription's dead-letter queue (its queue is gone).
    pub(crate) dead_lettered: bool,
    /// The subscription (ARN suffix) it is for.
    subscription: String,
    /// A replayed copy: the envelope says `"Replayed": true`, a raw copy carries the
    /// `Replayed` attribute.
    replayed: bool,
    group_id: Option<String>,
    /// The MessageDeduplicationId the queue message shows.
    dedup_id: Option<String>,
    dedup: Option<DedupKey>,
    sender_id: String,
    now_ms: i64,
    delay_seconds: i64,
    retention_seconds: i64,
    /// The queue's encryption at rest (see [`NewMessage::seal`]).
    seal: Option<crate::model::SealWith>,
}

/// The body of a raw-delivery SQS copy (the published text, no envelope) with its MD5
/// and its message attributes encoded as the queue stores them: made once per publish
/// and distinct text ([`RawText::shared`]), so ten raw subscriptions of one topic hash
/// and encode the message once, not ten times.
pub(crate) struct RawText {
    text: String,
    /// MD5 hex digest of `text` (the queue message's MD5OfBody).
    md5: String,
    /// The delivered message attributes.
    attributes: MessageAttributes,
    /// `attributes` encoded ([`message::encode_attributes`]).
    encoded: Option<String>,
}

impl RawText {
    /// The raw body for `text` with `attributes`: the one in `memo` when it holds the
    /// same text and attributes (the previous raw copy of the same publish), else a new
    /// one, left in `memo` for the next copy.
    pub(crate) fn shared(
        memo: &mut Option<std::sync::Arc<RawText>>,
        text: &str,
        attributes: &MessageAttributes,
    ) -> std::sync::Arc<RawText> {
        if let Some(r) = memo {
            if r.text == text && r.attributes == *attributes {
                return r.clone();
            }
        }
        let r = std::sync::Arc::new(RawText {
            text: text.to_owned(),
            md5: message::md5_hex(text.as_bytes()),
            encoded: message::encode_attributes(attributes),
            attributes: attributes.clone(),
        });
        *memo = Some(r.clone());
        r
    }
}

impl SqsCopy {
    /// The queue message; an envelope gets SequenceNumber `sequence` (FIFO topics).
    pub(crate) fn render(&self, advertised_url: &str, sequence: Option<&str>) -> (i64, NewMessage) {
        let (body, md5_body, message_attributes) = match &self.raw {
            Some(raw) if self.replayed => {
                let mut attributes = raw.attributes.clone();
                attributes.insert(
                    REPLAYED_ATTRIBUTE.into(),
                    message::MessageAttributeValue::string("true".to_owned()),
                );
                (
                    raw.text.clone(),
                    raw.md5.clone(),
                    message::encode_attributes(&attributes),
                )
            }
            Some(raw) => (raw.text.clone(), raw.md5.clone(), raw.encoded.clone()),
            None => {
                let mut env = envelope_map(
                    advertised_url,
                    &self.signing_cert_url,
                    &self.fields,
                    self.signature.as_ref(),
                    &self.delivered_attributes,
                    sequence,
                    Some(&self.subscription_arn),
                );
                if self.replayed {
                    env = with_replayed(env);
                }
                let body = Value::Object(env).to_string();
                let md5 = message::md5_hex(body.as_bytes());
                (body, md5, None)
            }
        };
        let now = self.now_ms;
        (
            self.queue_id,
            NewMessage {
                message_id: Some(self.message_id.clone()),
                md5_body,
                message_attributes,
                system_attributes: self.system_attributes.clone(),
                sender_id: self.sender_id.clone(),
                sent_at_ms: now,
                visible_at_ms: now + self.delay_seconds * 1000,
                expires_at_ms: now + self.retention_seconds * 1000,
                group_id: self.group_id.clone(),
                dedup_id: self.dedup_id.clone(),
                receive_count: 0,
                first_received_at_ms: None,
                dead_letter_source: None,
                dedup: self.dedup.clone(),
                seal: self.seal.clone(),
                body,
            },
        )
    }
}

/// The attribute that marks a replayed message (SNS Developer Guide, "Amazon SNS message
/// replay for FIFO topic subscribers": "the boolean attribute `Replayed` is added to each
/// replayed message"): `"Replayed" : "true"` in the envelope, after SequenceNumber, as
/// AWS's recorded replayed envelopes have it; with raw delivery (not recorded), a String
/// message attribute `Replayed` = `true`.
pub const REPLAYED_ATTRIBUTE: &str = "Replayed";

/// `env` with `"Replayed": "true"` after its SequenceNumber (before TopicArn), where
/// AWS's recorded replayed envelopes carry it.
fn with_replayed(env: Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    let mut placed = false;
    for (k, v) in env {
        if !placed && k == "TopicArn" {
            out.insert(REPLAYED_ATTRIBUTE.into(), json!("true"));
            placed = true;
        }
        out.insert(k, v);
    }
    if !placed {
        out.insert(REPLAYED_ATTRIBUTE.into(), json!("true"));
    }
    out
}

/// One message on its way to one SQS subscription: what [`Service::sqs_copy`] needs of
/// the publish (live or replayed).
pub(crate) struct Outgoing<'a> {
    pub topic_arn: &'a str,
    pub delivered_attributes: &'a MessageAttributes,
    /// The stored system attributes (AWSTraceHeader), encoded.
    pub trace_attributes: Option<String>,
    pub group_id: Option<&'a str>,
    /// The publish's MessageDeduplicationId (FIFO topics).
    pub dedup_id: Option<&'a str>,
    /// The FIFO queue's deduplication key id when it differs from `dedup_id` (replays).
    pub dedup_key: Option<String>,
    pub now_ms: i64,
    pub replayed: bool,
}

/// Gives the fields of a notification of one text and, unless the copy is raw (`true`),
/// its signature: a raw copy is the text itself, with no envelope to sign (an RSA
/// signature was 70% of a raw fan-out's server CPU).
pub(crate) type Signer<'a> =
    dyn FnMut(&Service, &str, bool) -> (SignedFields, Option<(u8, String)>) + 'a;

/// What [`Service::sqs_copy`] decided.
pub(crate) enum SqsStep {
    /// This copy, for the queue of this name.
    Copy(Box<SqsCopy>, String),
    /// Given up: no queue can take it (already logged).
    Dropped,
}

impl Service {
    /// The delivery status record of one SQS copy stored by a publish (see
    /// [`delivery_status`]): SUCCESS, status 200, the queue's MessageId as SQS's answer.
    fn log_sqs_delivery(
        &self,
        topic: &TopicRecord,
        topic_arn: &str,
        copy: &SqsCopy,
        queue: &str,
        now: i64,
    ) {
        if !delivery_status::enabled(&topic.attributes, "SQS", true) {
            return;
        }
        delivery_status::log(&delivery_status::DeliveryStatus {
            protocol: "SQS",
            success: true,
            topic_name: &topic.name,
            topic_arn,
            topic_attributes: &topic.attributes,
            message_id: Some(&copy.fields.message_id),
            message: Some(&copy.fields.message),
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
fn log_recorded_delivery(topic: &TopicRecord, topic_arn: &str, r: &RecordedStatus, now: i64) {
    if !delivery_status::enabled(&topic.attributes, r.prefix, true) {
        return;
    }
    delivery_status::log(&delivery_status::DeliveryStatus {
        protocol: r.prefix,
        success: true,
        topic_name: &topic.name,
        topic_arn,
        topic_attributes: &topic.attributes,
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

/// The address SNS sends email notifications from (SNS Developer Guide, "Email
/// notifications": `no-reply@sns.amazonaws.com`).
pub const EMAIL_FROM_ADDRESS: &str = "no-reply@sns.amazonaws.com";

/// Most characters of a DisplayName an SMS shows (SNS console and Developer Guide,
/// "DisplayName": "only the first 10 characters are displayed in an SMS message").
pub const SMS_DISPLAY_NAME_CHARS: usize = 10;

/// Who a recorded message of `protocol` from `topic` comes from, and its text as sent:
/// email and email-json come from `"{DisplayName} <no-reply@sns.amazonaws.com>"` (the
/// topic's name when it has no DisplayName: the "From" field, SNS API Reference,
/// SetTopicAttributes `DisplayName`); an SMS from a topic with a DisplayName starts with
/// its first 10 characters and `"> "`, the sender prefix; other protocols have none.
pub fn sender_of(topic: &TopicRecord, protocol: &str, message: String) -> (Option<String>, String) {
    let display = topic
        .attributes
        .get("DisplayName")
        .filter(|d| !d.is_empty());
    match protocol {
        "email" | "email-json" => {
            let name = display.map_or(topic.name.as_str(), String::as_str);
            (Some(format!("{name} <{EMAIL_FROM_ADDRESS}>")), message)
        }
        "sms" => match display {
            Some(d) => {
                let prefix: String = d.chars().take(SMS_DISPLAY_NAME_CHARS).collect();
                let text = format!("{prefix}> {message}");
                (Some(prefix), text)
            }
            None => (None, message),
        },
        _ => (None, message),
    }
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

/// Most message attributes a raw-delivery SQS subscription can carry. SNS itself takes
/// more; a message with more is discarded for such a subscription (SNS Developer Guide,
/// "Amazon SNS message attributes").
pub const MAX_RAW_SQS_ATTRIBUTES: usize = 10;

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

/// An SNS message attribute name, checked as AWS answers (recorded): its length, then a
/// leading or trailing period, then each character in turn (a character outside
/// `A-Z a-z 0-9 _ - .` named by its code, `#x5E`; a second period in a row). Names starting
/// `AWS.` or `Amazon.` are reserved (SNS Developer Guide); AWS's text for that refusal is
/// not recorded, so Loft's own words are used.
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
    if lower.starts_with("aws.") || lower.starts_with("amazon.") {
        return bad(format!(
            "Message (user) attribute name '{name}' is reserved for use by Amazon."
        ));
    }
    Ok(())
}

impl Service {
    /// Signs an envelope's fields with the topic's SignatureVersion; `None` for FIFO
    /// topics (their envelopes carry no signature) and when no signer is configured the
    /// signature is empty.
    pub(crate) fn signature(
        &self,
        topic: &TopicRecord,
        fields: &SignedFields,
    ) -> Option<(u8, String)> {
        if topic.name.ends_with(".fifo") {
            return None;
        }
        let version: u8 =
            if topic.attributes.get("SignatureVersion").map(String::as_str) == Some("2") {
                2
            } else {
                1
            };
        let sig = self
            .signer
            .as_ref()
            .map(|s| s.sign(fields, version))
            .unwrap_or_default();
        Some((version, sig))
    }

    /// Builds the JSON envelope SNS sends to HTTP/S endpoints and (without raw delivery)
    /// SQS queues ([`render_envelope`] with this service's advertised URL).
    pub(crate) fn envelope(
        &self,
        topic: &TopicRecord,
        fields: &SignedFields,
        signature: Option<&(u8, String)>,
        attributes: &MessageAttributes,
        sequence: Option<&str>,
        subscription_arn: Option<&str>,
    ) -> String {
        let _ = topic;
        render_envelope(
            &self.config.advertised_url,
            &self.signing_cert_url(),
            fields,
            signature,
            attributes,
            sequence,
            subscription_arn,
        )
    }

    /// SigningCertURL: the advertised URL, [`SIGNING_CERT_DIR`] and the signer's
    /// certificate file name.
    pub(crate) fn signing_cert_url(&self) -> String {
        let file = self
            .signer
            .as_ref()
            .map_or_else(|| UNSIGNED_CERT_FILE.to_owned(), |s| s.certificate_file());
        format!("{}{SIGNING_CERT_DIR}{file}", self.config.advertised_url)
    }

    /// The signed fields of a notification.
    pub(crate) fn notification_fields(
        &self,
        topic_arn: &str,
        message_id: &str,
        message: &str,
        subject: Option<&str>,
        timestamp: &str,
    ) -> SignedFields {
        SignedFields {
            message_type: "Notification".into(),
            message: message.into(),
            message_id: message_id.into(),
            subject: subject.map(str::to_owned),
            subscribe_url: None,
            timestamp: timestamp.into(),
            token: None,
            topic_arn: topic_arn.into(),
        }
    }

    /// The text subscription `sub` gets of a message, or `None` when it gets nothing: its
    /// FilterPolicy (on `filter_attrs`, or on `text` with scope MessageBody) does not
    /// match, or the topic's data protection policy (`policy`) denies the outbound copy.
    /// One rule for live publishes and replays (SNS Developer Guide, "Filter replayed
    /// messages": the archived message is matched against the subscription's FilterPolicy).
    pub(crate) fn subscription_text(
        &self,
        topic: &TopicRecord,
        policy: Option<&crate::data_protection::Policy>,
        sub: &SubscriptionRecord,
        filter_attrs: &BTreeMap<String, (String, String)>,
        text: String,
    ) -> Option<String> {
        if !passes_filter(sub, filter_attrs, &text) {
            return None;
        }
        match policy {
            Some(p) => self.protect_outbound(topic, p, sub, text),
            None => Some(text),
        }
    }

    /// The copy SQS subscription `sub` of `topic` gets of `text` (after
    /// [`Service::subscription_text`]): raw or in the envelope, to the subscription's
    /// queue, or to its dead-letter queue when that queue is gone, refuses the topic or
    /// is too small for the message (SNS Developer Guide, "Amazon SNS dead-letter queues"), with the FIFO group and
    /// deduplication key a FIFO queue needs. `queues` holds the queues the topic's
    /// subscriptions name, by name (`None`: gone); `sign` gives the signed fields of a
    /// text; `raw_text` holds the raw body the previous copy of the same message made, which
    /// a raw copy of the same text shares ([`RawText::shared`]). The one delivery step of
    /// live publishes and of replays.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn sqs_copy(
        &self,
        topic: &TopicRecord,
        sub: &SubscriptionRecord,
        text: String,
        raw: bool,
        out: &Outgoing<'_>,
        queues: &BTreeMap<String, Option<std::sync::Arc<QueueRecord>>>,
        signing_cert_url: &str,
        sign: &mut Signer<'_>,
        raw_text: &mut Option<std::sync::Arc<RawText>>,
    ) -> SqsStep {
        let fifo = topic.name.ends_with(".fifo");
        // A queue of another account takes the message only when its Policy lets the
        // topic send (`access`); one that refuses, like one that is gone, cannot take it:
        // the message goes to the subscription's dead-letter queue when it names one.
        let may_take = |q: &std::sync::Arc<QueueRecord>| {
            let ok = self.sns_may_deliver(
                out.topic_arn,
                &q.name,
                q.attributes.get("Policy").map(String::as_str),
            );
            if !ok {
                tracing::warn!(queue = %q.name, topic = %out.topic_arn, "the queue's Policy does not allow the topic to send; message not delivered to it");
            }
            ok
        };
        let (fields, signature) = sign(self, &text, raw);
        // The subscription's ARN is its topic's and its id; the topic's is at hand.
        let subscription_arn = if sub.topic_name == topic.name {
            format!("{}:{}", out.topic_arn, sub.uuid)
        } else {
            self.subscription_arn(sub)
        };
        // A queue refuses a message larger than its MaximumMessageSize, as it refuses a
        // SendMessage. The size is the copy's as the queue would hold it: raw, the message
        // and its attributes; otherwise the whole envelope (a FIFO topic's SequenceNumber,
        // given at commit, always has 20 digits).
        let copy_size = if raw {
            text.len() + crate::message::attributes_size(out.delivered_attributes)
        } else {
            let sequence = fifo.then(|| sequence_number(0));
            let mut env = envelope_map(
                &self.config.advertised_url,
                signing_cert_url,
                &fields,
                signature.as_ref(),
                out.delivered_attributes,
                sequence.as_deref(),
                Some(&subscription_arn),
            );
            if out.replayed {
                env = with_replayed(env);
            }
            Value::Object(env).to_string().len()
        };
        let fits = |q: &std::sync::Arc<QueueRecord>| {
            let max = QueueConfig::from_attributes(&q.attributes).maximum_message_size as usize;
            let ok = copy_size <= max;
            if !ok {
                tracing::warn!(queue = %q.name, size = copy_size, max, "the message is larger than the queue's MaximumMessageSize; not delivered to it");
            }
            ok
        };
        let endpoint_queue = self
            .key_of_arn(&sub.endpoint, "sqs")
            .and_then(|n| queues.get(&n).cloned().flatten())
            .filter(may_take)
            .filter(fits);
        let (queue, dead_lettered) = match endpoint_queue {
            Some(q) => (q, false),
            None => match self
                .subscription_dlq(sub)
                .and_then(|n| queues.get(&n).cloned().flatten())
                .filter(may_take)
                .filter(fits)
            {
                Some(dlq) => (dlq, true),
                None => {
                    tracing::warn!(endpoint = %sub.endpoint, "SNS subscription to a missing queue; message not delivered");
                    return SqsStep::Dropped;
                }
            },
        };
        let config = QueueConfig::from_attributes(&queue.attributes);
        let attribute_room = MAX_RAW_SQS_ATTRIBUTES - usize::from(out.replayed);
        if raw && out.delivered_attributes.len() > attribute_room {
            tracing::warn!(queue = %queue.name, "more than 10 message attributes for a raw-delivery SQS subscription; message discarded for it");
            // Not a rule leaving the subscription out: a copy SNS could not deliver,
            // counted as `loft_deliveries_total{outcome="dropped"}`.
            return SqsStep::Dropped;
        }
        let dedup = if config.fifo {
            out.dedup_id.map(|id| DedupKey {
                scope: if config.dedup_per_group {
                    out.group_id.unwrap_or_default().to_owned()
                } else {
                    String::new()
                },
                id: out.dedup_key.clone().unwrap_or_else(|| id.to_owned()),
                expires_at_ms: out.now_ms + DEDUP_WINDOW_MS,
            })
        } else {
            None
        };
        if config.fifo && (out.group_id.is_none() || dedup.is_none()) {
            tracing::warn!(queue = %queue.name, "a standard topic cannot deliver to a FIFO queue; message not delivered");
            return SqsStep::Dropped;
        }
        SqsStep::Copy(
            Box::new(SqsCopy {
                queue_id: queue.id,
                message_id: uuid::Uuid::new_v4().to_string(),
                raw: raw.then(|| RawText::shared(raw_text, &text, out.delivered_attributes)),
                fields,
                signature,
                signing_cert_url: signing_cert_url.to_owned(),
                subscription_arn,
                delivered_attributes: out.delivered_attributes.clone(),
                system_attributes: out.trace_attributes.clone(),
                dead_lettered,
                subscription: sub.uuid.clone(),
                replayed: out.replayed,
                // A standard topic's MessageGroupId reaches a standard queue (fair
                // queues); a FIFO topic's does not (AWS's recorded deliveries).
                group_id: out
                    .group_id
                    .map(str::to_owned)
                    .filter(|_| config.fifo || !fifo),
                dedup_id: dedup.as_ref().and(out.dedup_id.map(str::to_owned)),
                dedup,
                sender_id: self.config.account_id.clone(),
                now_ms: out.now_ms,
                delay_seconds: config.delay_seconds as i64,
                retention_seconds: config.retention_seconds as i64,
                seal: config.seal_at(out.now_ms),
            }),
            queue.name.clone(),
        )
    }

    /// A durable HTTP/S delivery of `body` for subscription `sub` of `topic`, with SNS's
    /// headers. Notifications take the Content-Type of the effective delivery policy's
    /// `requestPolicy.headerContentType`; confirmations are always `text/plain;
    /// charset=UTF-8`.
    pub(crate) fn http_delivery(
        &self,
        topic: &TopicRecord,
        sub: &SubscriptionRecord,
        message_type: &str,
        message_id: &str,
        body: String,
        raw: bool,
    ) -> NewDelivery {
        let topic_arn = self.topic_arn(&topic.name);
        let content_type = if message_type == "Notification" {
            DeliveryPolicy::effective(
                topic.attributes.get("DeliveryPolicy").map(String::as_str),
                sub.attributes.get("DeliveryPolicy").map(String::as_str),
            )
            .content_type()
            .to_owned()
        } else {
            DEFAULT_CONTENT_TYPE.to_owned()
        };
        let mut headers = vec![
            ("x-amz-sns-message-type".to_owned(), message_type.to_owned()),
            ("x-amz-sns-message-id".to_owned(), message_id.to_owned()),
            ("x-amz-sns-topic-arn".to_owned(), topic_arn),
        ];
        if message_type == "Notification" {
            headers.push((
                "x-amz-sns-subscription-arn".to_owned(),
                self.subscription_arn(sub),
            ));
        }
        if raw {
            headers.push(("x-amz-sns-rawdelivery".to_owned(), "true".to_owned()));
        }
        NewDelivery {
            subscription: sub.uuid.clone(),
            endpoint: sub.endpoint.clone(),
            content_type,
            headers,
            body,
            due_at_ms: self.now_ms(),
            seal: crate::attributes::topic_seal(topic),
        }
    }

    /// Publish to a topic (TopicArn or TargetArn) or an SMS number (PhoneNumber), by a
    /// caller of the default account ([`Service::publish_as`]).
    ///
    /// Errors: as [`Service::publish_as`].
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
                // SNS API Reference, Publish: EndpointDisabled, "Exception error indicating
                // endpoint disabled" (AWS's text: "Endpoint is disabled").
                if !self.platform_endpoint_enabled(arn).await? {
                    return Err(Error::with(ErrorCode::EndpointDisabled, &[]));
                }
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
                self.publish_direct(account, "application", arn, req).await
            }
            PublishTarget::Phone(number) => {
                if !names::is_phone_number(number) {
                    return Err(invalid(&format!(
                        "PhoneNumber Reason: {number} is not valid to publish to"
                    )));
                }
                self.publish_direct(account, "sms", number, req).await
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
        protocol: &str,
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
            protocol: protocol.into(),
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
            .delivery(protocol, DeliveryOutcome::Recorded, 1);
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
        let cbd = topic
            .attributes
            .get("ContentBasedDeduplication")
            .is_some_and(|v| v == "true");
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
            if s.is_empty()
                || s.len() > 100
                || !s.chars().all(|c| c.is_ascii() && !c.is_ascii_control())
            {
                return Err(invalid("Subject"));
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
        let cbd = topic
            .attributes
            .get("ContentBasedDeduplication")
            .is_some_and(|v| v == "true");
        // SNS API Reference, Publish, MessageDeduplicationId: with FifoThroughputScope
        // "MessageGroup the message deduplication scope is within each individual message
        // group", with "Topic" (the default) across the entire topic.
        let dedup_per_group = topic
            .attributes
            .get("FifoThroughputScope")
            .is_some_and(|v| v == "MessageGroup");
        let topic_arn = self.topic_arn(&topic.name);
        let tracing_active = topic
            .attributes
            .get("TracingConfig")
            .is_some_and(|v| v == "Active");
        let policy = self.topic_policy(topic)?;
        let subs: Vec<SubscriptionRecord> = self
            .store
            .list_subscriptions(Some(topic.id))
            .await?
            .into_iter()
            .filter(|s| s.confirmed)
            .collect();
        // SigningCertURL names the signing certificate, whose key is made on first use
        // (an RSA key generation, ~0.3 s of CPU): only an envelope carries it, so a topic
        // whose subscriptions are all raw SQS ones does not ask for it.
        let envelopes = subs.iter().any(|s| {
            s.protocol != "sqs"
                || s.attributes
                    .get("RawMessageDelivery")
                    .is_none_or(|v| v != "true")
        });
        let signing_cert_url = if envelopes {
            self.signing_cert_url()
        } else {
            String::new()
        };
        let mut queue_cache: BTreeMap<String, Option<std::sync::Arc<QueueRecord>>> =
            BTreeMap::new();
        for s in subs.iter().filter(|s| s.protocol == "sqs") {
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
                match self.protect_inbound(
                    topic,
                    policy,
                    std::mem::take(&mut req.message),
                    structured,
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
            let filter_attrs: BTreeMap<String, (String, String)> = req
                .message_attributes
                .iter()
                .map(|(k, v)| {
                    let value = match &v.binary_value {
                        Some(b) => message::base64_encode(b),
                        None => v.string_value.clone().unwrap_or_default(),
                    };
                    (k.clone(), (v.data_type.clone(), value))
                })
                .collect();
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
            let mut sign =
                |svc: &Service, text: &str, raw: bool| -> (SignedFields, Option<(u8, String)>) {
                    if raw {
                        let f = svc.notification_fields(
                            &topic_arn,
                            &message_id,
                            text,
                            req.subject.as_deref(),
                            &timestamp,
                        );
                        return (f, None);
                    }
                    signed
                        .entry(text.to_owned())
                        .or_insert_with(|| {
                            let f = svc.notification_fields(
                                &topic_arn,
                                &message_id,
                                text,
                                req.subject.as_deref(),
                                &timestamp,
                            );
                            let sig = svc.signature(topic, &f);
                            (f, sig)
                        })
                        .clone()
                };
            let mut copies: Vec<(SqsCopy, String)> = Vec::new();
            // The raw body this entry's raw copies share (one MD5 per distinct text).
            let mut raw_text = None;
            for sub in &subs {
                let Some(text) = self.subscription_text(
                    topic,
                    policy.as_ref(),
                    sub,
                    &filter_attrs,
                    text_for(structure_key(&sub.protocol, &sub.endpoint)),
                ) else {
                    continue;
                };
                // FIFO topics have SQS subscriptions only (`subscribe` refuses others).
                if fifo && sub.protocol != "sqs" {
                    tracing::warn!(protocol = %sub.protocol, "a FIFO topic delivers to SQS only; message not delivered");
                    dropped.push("other");
                    continue;
                }
                let raw = sub
                    .attributes
                    .get("RawMessageDelivery")
                    .is_some_and(|v| v == "true");
                if sub.attributes.contains_key(SEED_PAYLOAD_ATTRIBUTE) {
                    deliveries.push(NewDelivery {
                        subscription: sub.uuid.clone(),
                        endpoint: sub.endpoint.clone(),
                        content_type: "application/json".into(),
                        headers: Vec::new(),
                        body: json!({"topic": topic.name, "message": text}).to_string(),
                        due_at_ms: now,
                        seal: crate::attributes::topic_seal(topic),
                    });
                    continue;
                }
                match sub.protocol.as_str() {
                    "sqs" => {
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
                            SqsStep::Dropped => dropped.push("sqs"),
                        }
                    }
                    "http" | "https" => {
                        let sub_arn = self.subscription_arn(sub);
                        let body = if raw {
                            text.clone()
                        } else {
                            let (fields, sig) = sign(self, &text, false);
                            self.envelope(
                                topic,
                                &fields,
                                sig.as_ref(),
                                delivered_attributes,
                                None,
                                Some(&sub_arn),
                            )
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
                    "lambda"
                        if self
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
                        deliveries.extend(self.lambda_delivery(&n, &sub.uuid, &sub.endpoint).map(
                            |d| NewDelivery {
                                seal: crate::attributes::topic_seal(topic),
                                ..d
                            },
                        ));
                    }
                    protocol => {
                        let sub_arn = self.subscription_arn(sub);
                        let message = if protocol == "email-json" {
                            let (fields, sig) = sign(self, &text, false);
                            self.envelope(
                                topic,
                                &fields,
                                sig.as_ref(),
                                delivered_attributes,
                                None,
                                Some(&sub_arn),
                            )
                        } else {
                            text.clone()
                        };
                        let (sender, message) = sender_of(topic, protocol, message);
                        // A Firehose delivery is written under the subscription's role
                        // (SubscriptionRoleArn): the recording names it as its sender.
                        let sender = match protocol {
                            "firehose" => sub.attributes.get("SubscriptionRoleArn").cloned(),
                            _ => sender,
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
                            protocol: protocol.to_owned(),
                            endpoint: sub.endpoint.clone(),
                            topic_arn: Some(topic_arn.clone()),
                            subject: req.subject.clone(),
                            message,
                            sender,
                            created_at_ms: now,
                            seal: crate::attributes::topic_seal(topic),
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
                        self.log_sqs_delivery(topic, &topic_arn, copy, name, now);
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
            let mut messages = Vec::new();
            let mut names = Vec::new();
            let mut logged = Vec::new();
            for (_, copies) in &accepted {
                for (copy, name) in copies {
                    messages.push(copy.render(&self.config.advertised_url, None));
                    names.push((name.clone(), copy.dead_lettered));
                    if delivery_status::enabled(&topic.attributes, "SQS", true) {
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
                    self.log_sqs_delivery(topic, &topic_arn, copy, name, now);
                }
            }
        }
        for (queue, new, dead_lettered) in stored {
            if new {
                self.activity.sent(&queue, 1);
                let outcome = if dead_lettered {
                    DeliveryOutcome::DeadLettered
                } else {
                    DeliveryOutcome::Delivered
                };
                self.activity.delivery("sqs", outcome, 1);
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
            log_recorded_delivery(topic, &topic_arn, r, now);
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
        let body = self.envelope(
            topic,
            &fields,
            sig.as_ref(),
            &MessageAttributes::new(),
            None,
            None,
        );
        let delivery = self.http_delivery(topic, sub, message_type, &message_id, body, false);
        self.store
            .publish(Vec::new(), vec![delivery], Vec::new())
            .await?;
        self.delivery_notify.notify_one();
        Ok(())
    }

    /// The seeds' `POST /topics/{name}/publish`: every subscription gets the message (seed
    /// subscriptions the `{"topic","message"}` JSON, others as SNS delivers); returns the
    /// number of subscriptions. Deliveries are durable and retried; none is awaited.
    ///
    /// Errors: `InvalidParameterValue` for an empty message (SNS delivers none), also to a
    /// topic that does not exist, and for a name no topic of the seeds' API can have.
    pub async fn publish_seed(&self, topic: &str, message: &str) -> Result<usize> {
        crate::names::check_topic_name(topic, crate::names::Naming::Seed)?;
        if message.is_empty() {
            return Err(Error::invalid("message must not be empty"));
        }
        let Some(topic) = self.store.get_topic(topic).await? else {
            return Ok(0);
        };
        let count = self
            .store
            .list_subscriptions(Some(topic.id))
            .await?
            .iter()
            .filter(|s| s.confirmed)
            .count();
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

/// The text a `MessageStructure=json` message carries for the key `protocol` (`sqs`,
/// `http`, `GCM`, ...; [`structure_key`]):
/// its key for the protocol when that holds a string, else `default`. "Keys in the JSON
/// object that correspond to supported transport protocols must have simple JSON string
/// values"; a key of another type is ignored, as AWS delivers `default` then (SNS API
/// Reference, Publish, MessageStructure; recorded delivery to SQS).
pub(crate) fn structured_text<'a>(message: &'a Value, protocol: &str) -> &'a str {
    message
        .get(protocol)
        .and_then(Value::as_str)
        .or_else(|| message.get("default").and_then(Value::as_str))
        .unwrap_or_default()
}

/// The key of a `MessageStructure=json` message that a subscriber of `protocol` at
/// `endpoint` reads: the protocol's name (`sqs`, `http`, `email`, `sms`, ...), and for a
/// mobile push endpoint (`application`) its platform (`GCM`, `APNS`, ...), the middle of
/// its ARN `endpoint/PLATFORM/APP/ID` (SNS API Reference, Publish, MessageStructure; SNS
/// Developer Guide, "Sending custom platform-specific payloads to mobile devices": the
/// payload of each platform under its platform's key, `default` for the others).
pub(crate) fn structure_key<'a>(protocol: &'a str, endpoint: &'a str) -> &'a str {
    if protocol != "application" {
        return protocol;
    }
    crate::names::arn_resource(endpoint, "sns")
        .and_then(|r| r.strip_prefix("endpoint/"))
        .and_then(|r| r.split('/').next())
        .unwrap_or(protocol)
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

fn passes_filter(
    sub: &SubscriptionRecord,
    attrs: &BTreeMap<String, (String, String)>,
    text: &str,
) -> bool {
    let Some(policy) = sub.attributes.get("FilterPolicy").filter(|p| !p.is_empty()) else {
        return true;
    };
    let scope = match sub.attributes.get("FilterPolicyScope").map(String::as_str) {
        Some("MessageBody") => FilterPolicyScope::MessageBody,
        _ => FilterPolicyScope::MessageAttributes,
    };
    let Ok(policy) = FilterPolicy::parse(policy, scope) else {
        return false;
    };
    match scope {
        FilterPolicyScope::MessageAttributes => policy.matches_attributes(attrs),
        FilterPolicyScope::MessageBody => serde_json::from_str::<Value>(text)
            .map(|v| policy.matches_body(&v))
            .unwrap_or(false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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

    /// MessageStructure=json: each protocol key's variants, one row each.
    #[test]
    fn structured_text_takes_string_keys_only() {
        let rows = [
            (
                serde_json::json!({"default": "d", "sqs": "{\"field\": \"value\"}"}),
                "{\"field\": \"value\"}",
            ),
            (
                serde_json::json!({"default": "d", "sqs": {"field": "value"}}),
                "d",
            ),
            (serde_json::json!({"default": "d", "sqs": 5}), "d"),
            (serde_json::json!({"default": "d", "sqs": null}), "d"),
            (serde_json::json!({"default": "d", "http": "h"}), "d"),
            (serde_json::json!({"default": "d", "SQS": "upper"}), "d"),
            (serde_json::json!({"default": "d", "sqs": ""}), ""),
        ];
        for (message, want) in rows {
            assert_eq!(structured_text(&message, "sqs"), want, "{message}");
        }
    }
}
