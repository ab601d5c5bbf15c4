//! SNS message formats, shared by publish, replay and subscriptions: the message as
//! published ([`PublishRequest`]), the fields SNS signs and the JSON envelope, the copy an
//! SQS subscription gets (raw or enveloped, replayed or live), the text a subscriber of a
//! protocol reads of a `MessageStructure=json` message, the sender of recorded email and
//! SMS messages, and the HTTP/S delivery with SNS's headers. Nothing here stores or
//! orchestrates: [`super::publish`] fans a publish out, [`super::replay`] replays the
//! archive, both through [`SnsDelivery::subscription_text`] and [`SnsDelivery::sqs_copy`].
//!
//! Sources: SNS Developer Guide "Parsing message formats" (the envelope), "Verifying the
//! signatures of Amazon SNS messages", "Amazon SNS raw message delivery", "Amazon SNS
//! message attributes", "Message filtering", "Fanout to Amazon SQS queues"; SNS API
//! Reference, Publish (MessageStructure).

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::SnsDelivery;
use crate::attributes::{QueueConfig, SubscriptionConfig, TopicConfig};
use crate::delivery_policy::{DeliveryPolicy, DEFAULT_CONTENT_TYPE};
use crate::filter_policy::{FilterPolicy, FilterPolicyScope};
use crate::message::{self, MessageAttributes};
use crate::model::*;
use crate::service::core::access::Writer;
use crate::service::sqs::messages::{sequence_number, DEDUP_WINDOW_MS};

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
    /// The IAM ARN of the principal publishing it (`arn:aws:iam::ACCOUNT:user/NAME`), as
    /// the protocol adapter authenticated it; `None` (an open Loft, a publish Loft makes
    /// itself): the root of the topic's account. The data protection policy's statements
    /// are matched against it, an audit record names it as `callerPrincipal` (SNS Developer
    /// Guide, "Data protection policy operations": the audit record's fields), and an audit
    /// record goes into a queue only while that queue's `Policy` lets it send (the rule SNS
    /// deliveries to a queue follow).
    pub publisher: Option<String>,
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

/// The fields of the JSON envelope SNS sends to HTTP/S endpoints and (without raw
/// delivery) SQS queues, in AWS's field order (SNS Developer Guide, "Parsing message
/// formats"): FIFO topics add SequenceNumber and carry no signature fields;
/// `subscription_arn` fills the UnsubscribeURL of notifications; URLs start with
/// `advertised_url`; SigningCertURL is `signing_cert_url`.
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
    pub(crate) queue_id: i64,
    /// The copy's own MessageId in the queue.
    pub(crate) message_id: String,
    /// What the queue message holds: the raw text or the envelope.
    body: CopyBody,
    /// The stored system attributes (AWSTraceHeader), encoded.
    system_attributes: Option<String>,
    /// Whether this copy goes to the subscription's dead-letter queue (its queue is gone).
    pub(crate) dead_lettered: bool,
    /// The subscription (ARN suffix) it is for.
    pub(crate) subscription: String,
    /// A replayed copy: the envelope says `"Replayed": true`, a raw copy carries the
    /// `Replayed` attribute.
    replayed: bool,
    group_id: Option<String>,
    /// The MessageDeduplicationId the queue message shows.
    dedup_id: Option<String>,
    dedup: Option<DedupKey>,
    sender_id: String,
    pub(crate) now_ms: i64,
    delay_seconds: i64,
    retention_seconds: i64,
    /// The queue's encryption at rest (see [`NewMessage::seal`]).
    seal: Option<crate::model::SealWith>,
}

/// What an SQS copy's queue message holds.
#[derive(Clone)]
enum CopyBody {
    /// Raw delivery: the text itself, with the message's attributes, shared by the raw
    /// copies of one publish that get the same text. No envelope is built for it: its
    /// signed fields, a copy of the text and five other strings per copy, were read only
    /// by the delivery status record, which [`RawText`] names the message for.
    Raw(std::sync::Arc<RawText>),
    /// Otherwise this envelope.
    Envelope(Box<CopyEnvelope>),
}

/// An SQS subscription's copy in the envelope, all but the SequenceNumber a FIFO topic's
/// copy gets at commit: one rendering ([`CopyEnvelope::text`]) for the queue message
/// ([`SqsCopy::render`]) and for the size check that chooses the queue before it
/// ([`SnsDelivery::sqs_copy`]).
#[derive(Clone)]
pub(crate) struct CopyEnvelope {
    /// The signed fields.
    pub(crate) fields: SignedFields,
    signature: Option<(u8, String)>,
    /// SigningCertURL.
    signing_cert_url: String,
    /// UnsubscribeURL's subscription.
    subscription_arn: String,
    /// The delivered message attributes.
    attributes: MessageAttributes,
}

impl CopyEnvelope {
    /// The envelope's text, with SequenceNumber `sequence` (FIFO topics) and, for a
    /// `replayed` copy, `"Replayed": "true"` ([`with_replayed`]).
    fn text(&self, advertised_url: &str, sequence: Option<&str>, replayed: bool) -> String {
        let env = envelope_map(
            advertised_url,
            &self.signing_cert_url,
            &self.fields,
            self.signature.as_ref(),
            &self.attributes,
            sequence,
            Some(&self.subscription_arn),
        );
        let env = if replayed { with_replayed(env) } else { env };
        Value::Object(env).to_string()
    }
}

/// The body of a raw-delivery SQS copy (the published text, no envelope) with its MD5
/// and its message attributes encoded as the queue stores them: made once per publish
/// and distinct text ([`RawText::shared`]), so ten raw subscriptions of one topic hash
/// and encode the message once, not ten times.
pub(crate) struct RawText {
    /// The SNS MessageId of the publish (named in the delivery status record).
    message_id: String,
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
    /// one, left in `memo` for the next copy, naming the SNS message `message_id` gives.
    pub(crate) fn shared(
        memo: &mut Option<std::sync::Arc<RawText>>,
        text: &str,
        attributes: &MessageAttributes,
        message_id: impl FnOnce() -> String,
    ) -> std::sync::Arc<RawText> {
        if let Some(r) = memo {
            if r.text == text && r.attributes == *attributes {
                return r.clone();
            }
        }
        let r = std::sync::Arc::new(RawText {
            message_id: message_id(),
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
    /// The SNS MessageId and the text this copy delivers, as the delivery status record
    /// names them.
    pub(crate) fn notification(&self) -> (&str, &str) {
        match &self.body {
            CopyBody::Raw(raw) => (raw.message_id.as_str(), raw.text.as_str()),
            CopyBody::Envelope(e) => (e.fields.message_id.as_str(), e.fields.message.as_str()),
        }
    }

    /// The queue message; an envelope gets SequenceNumber `sequence` (FIFO topics).
    pub(crate) fn render(&self, advertised_url: &str, sequence: Option<&str>) -> (i64, NewMessage) {
        let (body, md5_body, message_attributes) = match &self.body {
            CopyBody::Raw(raw) if self.replayed => {
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
            CopyBody::Raw(raw) => (raw.text.clone(), raw.md5.clone(), raw.encoded.clone()),
            CopyBody::Envelope(envelope) => {
                let body = envelope.text(advertised_url, sequence, self.replayed);
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

/// One message on its way to one SQS subscription: what [`SnsDelivery::sqs_copy`] needs of
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
    dyn FnMut(&SnsDelivery, &str, bool) -> (SignedFields, Option<(u8, String)>) + 'a;

/// What [`SnsDelivery::sqs_copy`] decided.
pub(crate) enum SqsStep {
    /// This copy, for the queue of this name.
    Copy(Box<SqsCopy>, String),
    /// Given up: no queue can take it (already logged).
    Dropped,
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
/// SetTopicAttributes `DisplayName`; the name, never the store key that carries another
/// account or region: [`crate::names::scoped_key`]); an SMS from a topic with a DisplayName starts with
/// its first 10 characters and `"> "`, the sender prefix; other protocols have none.
pub fn sender_of(
    topic: &TopicRecord,
    protocol: SubscriptionProtocol,
    message: String,
) -> (Option<String>, String) {
    use SubscriptionProtocol as P;
    let display = TopicConfig::from_attributes(&topic.attributes).display_name;
    match protocol {
        P::Email | P::EmailJson => {
            // The name is the key's last part: no topic name holds the separator.
            let name = display.as_deref().unwrap_or_else(|| {
                topic
                    .name
                    .rsplit(crate::names::ACCOUNT_SEPARATOR)
                    .next()
                    .unwrap_or(&topic.name)
            });
            (Some(format!("{name} <{EMAIL_FROM_ADDRESS}>")), message)
        }
        P::Sms => match display {
            Some(d) => {
                let prefix: String = d.chars().take(SMS_DISPLAY_NAME_CHARS).collect();
                let text = format!("{prefix}> {message}");
                (Some(prefix), text)
            }
            None => (None, message),
        },
        P::Http | P::Https | P::Sqs | P::Application | P::Lambda | P::Firehose => (None, message),
    }
}

/// Most message attributes a raw-delivery SQS subscription can carry. SNS itself takes
/// more; a message with more is discarded for such a subscription (SNS Developer Guide,
/// "Amazon SNS message attributes").
pub const MAX_RAW_SQS_ATTRIBUTES: usize = 10;

impl SnsDelivery {
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
        let version: u8 = if TopicConfig::from_attributes(&topic.attributes).signature_version_2 {
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
    /// SQS queues ([`envelope_map`] with this service's advertised URL).
    pub(crate) fn envelope(
        &self,
        fields: &SignedFields,
        signature: Option<&(u8, String)>,
        attributes: &MessageAttributes,
        sequence: Option<&str>,
        subscription_arn: Option<&str>,
    ) -> String {
        Value::Object(envelope_map(
            &self.config.advertised_url,
            &self.signing_cert_url(),
            fields,
            signature,
            attributes,
            sequence,
            subscription_arn,
        ))
        .to_string()
    }

    /// The envelope of a notification of `text` to subscription `sub` (HTTP/S
    /// without raw delivery, email-json), its fields and signature from `sign`.
    pub(crate) fn notification_envelope(
        &self,
        sub: &SubscriptionRecord,
        text: &str,
        attributes: &MessageAttributes,
        sign: &mut Signer<'_>,
    ) -> String {
        let (fields, signature) = sign(self, text, false);
        self.envelope(
            &fields,
            signature.as_ref(),
            attributes,
            None,
            Some(&self.subscription_arn(sub)),
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
    /// [`SnsDelivery::subscription_text`]): raw or in the envelope, to the subscription's
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
            let ok = self.may_send_into(
                &Writer::Topic {
                    topic_arn: out.topic_arn,
                },
                &q.name,
                q.attributes.get("Policy").map(String::as_str),
            );
            if !ok {
                tracing::warn!(queue = %q.name, topic = %out.topic_arn, "the queue's Policy does not allow the topic to send; message not delivered to it");
            }
            ok
        };
        let body = if raw {
            CopyBody::Raw(RawText::shared(
                raw_text,
                &text,
                out.delivered_attributes,
                || sign(self, &text, true).0.message_id,
            ))
        } else {
            let (fields, signature) = sign(self, &text, false);
            CopyBody::Envelope(Box::new(CopyEnvelope {
                fields,
                signature,
                signing_cert_url: signing_cert_url.to_owned(),
                // The subscription's ARN is its topic's and its id; the topic's is at hand.
                subscription_arn: if sub.topic_name == topic.name {
                    format!("{}:{}", out.topic_arn, sub.uuid)
                } else {
                    self.subscription_arn(sub)
                },
                attributes: out.delivered_attributes.clone(),
            }))
        };
        // A queue refuses a message larger than its MaximumMessageSize, as it refuses a
        // SendMessage. The size is the copy's as the queue would hold it: raw, the message
        // and its attributes; otherwise the whole envelope (a FIFO topic's SequenceNumber,
        // given at commit, always has 20 digits).
        let copy_size = match &body {
            CopyBody::Raw(_) => {
                text.len() + crate::message::attributes_size(out.delivered_attributes)
            }
            CopyBody::Envelope(envelope) => {
                let sequence = fifo.then(|| sequence_number(0));
                envelope
                    .text(
                        &self.config.advertised_url,
                        sequence.as_deref(),
                        out.replayed,
                    )
                    .len()
            }
        };
        // Nor does a queue take characters SendMessage refuses (`InvalidMessageContents`):
        // a raw copy is the message and its attributes as published (an envelope escapes
        // them in its JSON).
        let storable = !raw
            || (crate::message::valid_characters(&text)
                && out.delivered_attributes.values().all(|a| {
                    crate::message::valid_characters(&a.data_type)
                        && a.string_value
                            .as_deref()
                            .is_none_or(crate::message::valid_characters)
                }));
        let fits = |q: &std::sync::Arc<QueueRecord>| {
            if !storable {
                tracing::warn!(queue = %q.name, "the raw message holds characters SQS does not store; not delivered to it");
                return false;
            }
            let max = QueueConfig::from_attributes(&q.attributes).maximum_message_size as usize;
            let ok = copy_size <= max;
            if !ok {
                tracing::warn!(queue = %q.name, size = copy_size, max, "the message is larger than the queue's MaximumMessageSize; not delivered to it");
            }
            ok
        };
        let endpoint_exists = self
            .key_of_arn(&sub.endpoint, "sqs")
            .and_then(|n| queues.get(&n).cloned().flatten());
        let queue_missing = endpoint_exists.is_none();
        let endpoint_queue = endpoint_exists.filter(may_take).filter(fits);
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
                    // `may_take` and `fits` have logged why an existing queue refused it.
                    let why = if queue_missing {
                        "SNS subscription to a missing queue; message not delivered"
                    } else {
                        "SNS subscription's queue did not take the message and no dead-letter queue did; message not delivered"
                    };
                    tracing::warn!(endpoint = %sub.endpoint, "{why}");
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
                body,
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
                sender_id: crate::service::core::access::sns_sender_id(
                    out.topic_arn
                        .split(':')
                        .nth(3)
                        .unwrap_or(&self.config.region),
                ),
                now_ms: out.now_ms,
                delay_seconds: config.delay_seconds as i64,
                retention_seconds: config.retention_seconds as i64,
                seal: config.seal_at(out.now_ms),
            }),
            queue.name.clone(),
        )
    }

    /// The SubscriptionConfirmation that SQS subscription `sub` of `topic`, made by another
    /// account than its queue's, puts in that queue (SNS Developer Guide, "Sending Amazon
    /// SNS messages to an Amazon SQS queue in a different account": "the queue owner must
    /// confirm the subscription"): the signed envelope of `fields`, with its Token and
    /// SubscribeURL, as an HTTP/S endpoint's POST carries it. `None` when `queue`'s Policy
    /// does not let the topic send: the confirmation is refused as any message would be,
    /// and the subscription stays pending. A FIFO queue gets it in a message group of its
    /// own, the subscription's id, deduplicated by its MessageId (AWS documents neither).
    pub(crate) fn sqs_confirmation(
        &self,
        topic: &TopicRecord,
        sub: &SubscriptionRecord,
        queue: &QueueRecord,
        fields: &SignedFields,
    ) -> Option<NewMessage> {
        let topic_arn = &fields.topic_arn;
        let policy = queue.attributes.get("Policy").map(String::as_str);
        if !self.may_send_into(&Writer::Topic { topic_arn }, &queue.name, policy) {
            return None;
        }
        let sig = self.signature(topic, fields);
        let body = self.envelope(fields, sig.as_ref(), &MessageAttributes::new(), None, None);
        let config = QueueConfig::from_attributes(&queue.attributes);
        Some(self.sns_own_message(
            topic_arn,
            &config,
            fields.message_id.clone(),
            body,
            &sub.uuid,
            &fields.message_id,
            self.now_ms(),
        ))
    }

    /// A message SNS itself puts in a queue of `config` (a subscription's confirmation, a
    /// data protection audit record): `body` with MessageId `message_id`, sent at `now`
    /// (ms), with the queue's delay, retention and encryption at rest; in a FIFO queue, in
    /// message group `group` and deduplicated by `dedup_id` (scoped to the group when the
    /// queue deduplicates per group). Its SenderId is SNS's in the region of `topic_arn`
    /// ([`crate::service::core::access::sns_sender_id`]).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn sns_own_message(
        &self,
        topic_arn: &str,
        config: &QueueConfig,
        message_id: String,
        body: String,
        group: &str,
        dedup_id: &str,
        now: i64,
    ) -> NewMessage {
        let dedup = config.fifo.then(|| DedupKey {
            scope: if config.dedup_per_group {
                group.to_owned()
            } else {
                String::new()
            },
            id: dedup_id.to_owned(),
            expires_at_ms: now + DEDUP_WINDOW_MS,
        });
        NewMessage {
            message_id: Some(message_id),
            md5_body: message::md5_hex(body.as_bytes()),
            message_attributes: None,
            system_attributes: None,
            sender_id: crate::service::core::access::sns_sender_id(
                topic_arn.split(':').nth(3).unwrap_or(&self.config.region),
            ),
            sent_at_ms: now,
            visible_at_ms: now + config.delay_seconds as i64 * 1000,
            expires_at_ms: now + config.retention_seconds as i64 * 1000,
            group_id: config.fifo.then(|| group.to_owned()),
            dedup_id: config.fifo.then(|| dedup_id.to_owned()),
            receive_count: 0,
            first_received_at_ms: None,
            dead_letter_source: None,
            dedup,
            seal: config.seal_at(now),
            body,
        }
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
                TopicConfig::from_attributes(&topic.attributes)
                    .delivery_policy
                    .as_deref(),
                SubscriptionConfig::from_attributes(&sub.attributes)
                    .delivery_policy
                    .as_deref(),
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
pub(crate) fn structure_key(protocol: SubscriptionProtocol, endpoint: &str) -> &str {
    if protocol != SubscriptionProtocol::Application {
        return protocol.as_str();
    }
    crate::names::arn_resource(endpoint, "sns")
        .and_then(|r| r.strip_prefix("endpoint/"))
        .and_then(|r| r.split('/').next())
        .unwrap_or(protocol.as_str())
}

/// A message's attributes as a filter policy reads them: name to (DataType, value), a
/// Binary value as its base64 text (SNS Developer Guide, "Amazon SNS message filtering":
/// attribute-based policies match on the attribute's type and value).
pub(crate) fn filter_attributes(attrs: &MessageAttributes) -> BTreeMap<String, (String, String)> {
    attrs
        .iter()
        .map(|(k, v)| {
            let value = match &v.binary_value {
                Some(b) => message::base64_encode(b),
                None => v.string_value.clone().unwrap_or_default(),
            };
            (k.clone(), (v.data_type.clone(), value))
        })
        .collect()
}

fn passes_filter(
    sub: &SubscriptionRecord,
    attrs: &BTreeMap<String, (String, String)>,
    text: &str,
) -> bool {
    let config = SubscriptionConfig::from_attributes(&sub.attributes);
    let Some(policy) = config.filter_policy else {
        return true;
    };
    let scope = config.filter_policy_scope;
    let Ok(policy) = FilterPolicy::parse(&policy, scope) else {
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
