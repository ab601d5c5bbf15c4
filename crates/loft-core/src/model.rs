//! Domain types shared by the service and the stores: queues, messages, topics and
//! subscriptions as they are stored. Times are milliseconds since the Unix epoch.

use std::collections::BTreeMap;
use std::sync::Arc;

/// A queue as stored. `attributes` holds the settable AWS queue attributes by their AWS names
/// (`VisibilityTimeout`, `RedrivePolicy`, ...), already validated and normalised by the
/// service; see [`crate::attributes`] for their meaning and defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueRecord {
    /// Store-assigned id, stable for the queue's life.
    pub id: i64,
    /// The queue's name (SQS rules for queues created over AWS protocols).
    pub name: String,
    /// Settable attributes by AWS name; absent means the default.
    pub attributes: BTreeMap<String, String>,
    /// Cost-allocation tags.
    pub tags: BTreeMap<String, String>,
    /// When the queue was created (ms).
    pub created_at_ms: i64,
    /// When its attributes last changed (ms).
    pub modified_at_ms: i64,
}

/// A message to store. Built by the service; the store only persists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewMessage {
    /// The MessageId as the service chose it, or `None` for a message the service names
    /// after its store sequence number (the seeds' `msg-N`, see
    /// [`crate::service::seed_message_id`]): the store keeps no id for it.
    pub message_id: Option<String>,
    /// The message body (UTF-8, at most the queue's MaximumMessageSize bytes with attributes).
    pub body: String,
    /// MD5 hex digest of the body.
    pub md5_body: String,
    /// Message attributes as JSON (`{"name": {"DataType", "StringValue"|"BinaryValue"}}`),
    /// opaque to the store.
    pub message_attributes: Option<String>,
    /// Message system attributes (AWSTraceHeader) as JSON, opaque to the store.
    pub system_attributes: Option<String>,
    /// The SenderId system attribute.
    pub sender_id: String,
    /// When it was sent (ms).
    pub sent_at_ms: i64,
    /// When it first becomes visible (ms): sent time plus delay.
    pub visible_at_ms: i64,
    /// When retention ends and it is dropped (ms).
    pub expires_at_ms: i64,
    /// MessageGroupId (FIFO and fair queues).
    pub group_id: Option<String>,
    /// MessageDeduplicationId (FIFO).
    pub dedup_id: Option<String>,
    /// Receive count carried over from an earlier life (DLQ moves keep it); normally 0.
    pub receive_count: i64,
    /// First-receive time carried over from an earlier life.
    pub first_received_at_ms: Option<i64>,
    /// Original queue's ARN when moved from a source queue to its dead-letter queue.
    pub dead_letter_source: Option<String>,
    /// FIFO deduplication: when set, a message with the same key inside the window is not
    /// stored again; the send reports the original instead.
    pub dedup: Option<DedupKey>,
    /// Server-side encryption the service decided for this message (the queue's
    /// SqsManagedSseEnabled or KmsMasterKeyId): the store keeps `body` and
    /// `message_attributes` sealed under the data key this names, and opens them when it
    /// returns the message. `None` stores them as they are.
    pub seal: Option<SealWith>,
}

/// "Encrypt with key K": which data key seals a message at rest (SQS Developer Guide,
/// "Encryption at rest in Amazon SQS", "Key terms": the KMS key and the data key reuse
/// period). The store derives the data key from its master key, the queue, `key_id` and
/// `period`, so one data key serves a queue for one reuse period.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SealWith {
    /// The queue's KmsMasterKeyId as given (an alias, alias ARN, key id or key ARN; Loft
    /// has no KMS, so it only names the derivation), or [`SSE_SQS_KEY_ID`] for SSE-SQS.
    pub key_id: String,
    /// The reuse period the message falls in: its send time divided by the queue's
    /// KmsDataKeyReusePeriodSeconds (in ms).
    pub period: i64,
}

/// "Encrypt with key K" for what Loft keeps at rest of one SNS topic whose
/// KmsMasterKeyId is set (SNS Developer Guide, "Encryption at rest"): recorded messages,
/// pending HTTP/S and Lambda deliveries, FIFO archive entries. The store derives the data
/// key from its master key, `topic_id` and `key_id`, seals the data before it writes it
/// and opens it when it reads it back.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TopicSeal {
    /// The topic's store id.
    pub topic_id: i64,
    /// The topic's KmsMasterKeyId as given (Loft has no KMS: it only names the derivation).
    pub key_id: String,
}

/// The key name SSE-SQS messages are sealed under (SqsManagedSseEnabled: SQS-owned keys,
/// no KMS key named).
pub const SSE_SQS_KEY_ID: &str = "SSE-SQS";

/// A FIFO deduplication key and its window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DedupKey {
    /// `""` for queue scope, the MessageGroupId for messageGroup scope.
    pub scope: String,
    /// The MessageDeduplicationId (explicit, or the body's SHA-256 hex).
    pub id: String,
    /// When the window ends (ms): five minutes after the first send.
    pub expires_at_ms: i64,
}

/// What the store did with one sent message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentMessage {
    /// Sequence number: the new message's, or the original's for a duplicate.
    pub seq: i64,
    /// MessageId: the new message's, or the original's for a duplicate; `None` for a
    /// message stored without one ([`NewMessage::message_id`]).
    pub message_id: Option<String>,
    /// Whether this was a duplicate inside the deduplication window (nothing stored).
    pub duplicate: bool,
    /// The queue's own sequence number of a message with a deduplication key (a FIFO
    /// queue's), the original's for a duplicate: its queue's counter, see
    /// [`StoredMessage::sequence`]. `None` for other messages and for a duplicate of one
    /// stored before queues counted their own (the SequenceNumber is then made of `seq`).
    pub sequence: Option<i64>,
}

/// Result of a delete by receipt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeleteOutcome {
    /// Deleted.
    Deleted,
    /// No such message (already deleted, or never there).
    NotFound,
    /// The message exists but the receipt is not its current, unexpired one.
    Stale,
}

/// A message as stored, returned by a receive or a peek.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredMessage {
    /// Store sequence number: increasing across the whole store, never reused.
    pub seq: i64,
    /// The queue it is in.
    pub queue_id: i64,
    /// The MessageId given to [`NewMessage::message_id`] (a UUID over AWS protocols);
    /// `None` for a message stored without one (the seeds' `msg-N`, named by the service).
    pub message_id: Option<String>,
    /// The body.
    pub body: String,
    /// MD5 hex of the body.
    pub md5_body: String,
    /// Message attributes JSON, as given to [`NewMessage`].
    pub message_attributes: Option<String>,
    /// System attributes JSON, as given to [`NewMessage`].
    pub system_attributes: Option<String>,
    /// SenderId.
    pub sender_id: String,
    /// When it was sent (ms).
    pub sent_at_ms: i64,
    /// When it is next visible (ms).
    pub visible_at_ms: i64,
    /// How many times it has been received (including the receive that returned it).
    pub receive_count: i64,
    /// When it was first received (ms).
    pub first_received_at_ms: Option<i64>,
    /// Changes on every receive; part of the receipt handle.
    pub receipt_token: i64,
    /// MessageGroupId.
    pub group_id: Option<String>,
    /// MessageDeduplicationId.
    pub dedup_id: Option<String>,
    /// The source queue's ARN when dead-lettered.
    pub dead_letter_source: Option<String>,
    /// Whether `body` and `message_attributes` are still sealed as stored. Engines open
    /// sealed messages before returning them, so a caller of the store sees `false`.
    pub sealed: bool,
    /// The queue's own sequence number (FIFO queues; the SequenceNumber is
    /// [`crate::service::sequence_number`] of it): each queue counts its own messages with
    /// a deduplication key (sends, SNS fan-out, moves into it), from 1, strictly increasing,
    /// kept with the queue, so it tells nothing of other queues' traffic, unlike `seq`.
    /// A message a receive dead-letters keeps the number its source queue gave it. `None`
    /// for messages without one: those of standard queues, and FIFO messages stored
    /// before queues counted their own (their SequenceNumber is made of `seq`).
    pub sequence: Option<i64>,
}

/// What a receive claims and how. The service decides every parameter; the store applies
/// them in one atomic statement group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceiveRequest {
    /// Queue to receive from.
    pub queue_id: i64,
    /// At most this many messages are claimed (the service keeps it to 1..=10; 0 claims
    /// none, which still replays a recorded [`ReceiveRequest::attempt`]).
    pub max_messages: u32,
    /// Current time (ms).
    pub now_ms: i64,
    /// Messages become visible again at `now_ms + visibility_ms`.
    pub visibility_ms: i64,
    /// The receipt token of each claimed message, in the order messages are claimed: the
    /// first claimed gets `receipt_tokens[0]`. At least `max_messages` of them, distinct.
    pub receipt_tokens: Vec<i64>,
    /// Dead-letter rule: a message already received `moves_at_receive_count` times moves
    /// to `dlq_queue_id` instead of being returned.
    pub redrive: Option<RedriveRule>,
    /// FIFO: hand out messages group by group, never past an in-flight one.
    pub fifo: bool,
    /// Standard queues: oldest sent first (the seeds' order) instead of the engine's
    /// visibility order (SQS's best-effort order, `Store::receive`).
    pub send_order: bool,
    /// FIFO receives only: the ReceiveRequestAttemptId of this receive. When an unexpired
    /// attempt with this id is recorded for the queue, the store claims nothing new and
    /// returns that attempt's messages that still hold its receipt tokens, hidden again
    /// until `now_ms + visibility_ms` ([`ReceiveOutcome::replayed`]). Otherwise a receive
    /// that claims messages records them under this id, in the same transaction.
    pub attempt: Option<ReceiveAttempt>,
}

/// A FIFO receive's ReceiveRequestAttemptId and how long a retry with it is answered with
/// the same messages (SQS API Reference, ReceiveMessage, `ReceiveRequestAttemptId`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceiveAttempt {
    /// The attempt id (1 to 128 characters, checked by the service).
    pub id: String,
    /// Until when (ms, exclusive) a retry replays this receive.
    pub expires_at_ms: i64,
}

/// The dead-letter rule of a queue, resolved to store ids and thresholds by the service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedriveRule {
    /// The dead-letter queue's store id.
    pub dlq_queue_id: i64,
    /// A message whose stored receive count is at least this moves instead of being
    /// received again (the queue's maxReceiveCount).
    pub moves_at_receive_count: i64,
    /// The source queue's ARN, recorded on moved messages (DeadLetterQueueSourceArn).
    pub source_arn: String,
    /// Whether a moved message's MessageDeduplicationId becomes its MessageId (moves into
    /// a FIFO dead-letter queue).
    pub dedup_id_from_message_id: bool,
}

/// What a receive returned.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReceiveOutcome {
    /// The claimed messages, in queue order, each with a fresh receipt token.
    pub messages: Vec<StoredMessage>,
    /// How many messages were moved to the dead-letter queue by this receive.
    pub dead_lettered: u64,
    /// When the next hidden or delayed message of the queue becomes visible (ms), if any:
    /// a long poll sleeps until then at the latest.
    pub next_visible_at_ms: Option<i64>,
    /// Whether `messages` is the replay of a recorded [`ReceiveRequest::attempt`] (nothing
    /// new was claimed).
    pub replayed: bool,
    /// Messages this receive passed over because their sealed body or attributes cannot be
    /// decrypted (sealed under another master key, or damaged): each is left exactly as it
    /// was (not claimed, no receive count, no dead-letter move) and, in a FIFO queue, the
    /// rest of its group waits behind it. Named by MessageId (`seq N` for a message
    /// without one), each once per store instance: a later receive that meets it again
    /// passes it over without naming it.
    pub undecryptable: Vec<String>,
}

/// Result of a purge ([`crate::store::Store::purge_queue`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PurgeOutcome {
    /// Every message was deleted: this many.
    Purged(u64),
    /// Refused: an earlier purge's hold has not ended (nothing was deleted).
    InProgress,
}

/// Result of a visibility change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VisibilityChange {
    /// Changed.
    Changed,
    /// No such message (deleted, or never there).
    NotFound,
    /// The receipt token is not the message's current one.
    Stale,
    /// The change would hide the message more than 12 hours after its receive.
    TooLong,
    /// The message is visible, not in flight.
    NotInflight,
}

/// Message counts of one queue at one instant.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueCounts {
    /// Visible now (ApproximateNumberOfMessages).
    pub visible: i64,
    /// Received and hidden (ApproximateNumberOfMessagesNotVisible).
    pub in_flight: i64,
    /// Never received and still delayed (ApproximateNumberOfMessagesDelayed).
    pub delayed: i64,
}

/// One message group of a fair queue at one instant ([`crate::store::Store::fair_groups`]).
/// Messages without a MessageGroupId are counted together under `group: None`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupCounts {
    /// The MessageGroupId, `None` for the messages without one.
    pub group: Option<String>,
    /// The group's messages by state, as [`QueueCounts`] counts them.
    pub counts: QueueCounts,
    /// When the group's oldest visible message was sent (ms), if it has one.
    pub oldest_visible_sent_at_ms: Option<i64>,
}

/// A topic as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicRecord {
    /// Store id.
    pub id: i64,
    /// Topic name (the seeds allow `:` in it, e.g. `s3:ObjectCreated`).
    pub name: String,
    /// Settable attributes by AWS name.
    pub attributes: BTreeMap<String, String>,
    /// Tags.
    pub tags: BTreeMap<String, String>,
    /// Creation time (ms).
    pub created_at_ms: i64,
}

/// A subscription's delivery protocol: the values of Subscribe's `Protocol` (SNS API
/// Reference, Subscribe, "Protocol": `http`, `https`, `email`, `email-json`, `sms`, `sqs`,
/// `application`, `lambda`, `firehose`). Parsed from its wire name by
/// [`SubscriptionProtocol::parse`], the one place a protocol name is read; the store keeps
/// [`SubscriptionProtocol::as_str`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SubscriptionProtocol {
    /// `http`: JSON envelopes POSTed to an `http://` URL.
    Http,
    /// `https`: JSON envelopes POSTed to an `https://` URL.
    Https,
    /// `email`: the message's text mailed (recorded by Loft).
    Email,
    /// `email-json`: the JSON envelope mailed (recorded by Loft).
    EmailJson,
    /// `sms`: the text sent to a phone number (recorded by Loft).
    Sms,
    /// `sqs`: a copy sent to an SQS queue, named by its ARN.
    Sqs,
    /// `application`: a mobile push endpoint, named by its ARN (recorded by Loft).
    Application,
    /// `lambda`: a function invoked, named by its ARN.
    Lambda,
    /// `firehose`: a Firehose delivery stream, named by its ARN (recorded by Loft).
    Firehose,
}

impl SubscriptionProtocol {
    /// Every protocol, in the order SNS's Subscribe documentation lists them.
    pub const ALL: [SubscriptionProtocol; 9] = [
        SubscriptionProtocol::Http,
        SubscriptionProtocol::Https,
        SubscriptionProtocol::Email,
        SubscriptionProtocol::EmailJson,
        SubscriptionProtocol::Sms,
        SubscriptionProtocol::Sqs,
        SubscriptionProtocol::Application,
        SubscriptionProtocol::Lambda,
        SubscriptionProtocol::Firehose,
    ];

    /// The protocol's wire name (`http`, `email-json`, ...), as Subscribe takes it and
    /// ListSubscriptions reports it.
    pub fn as_str(self) -> &'static str {
        match self {
            SubscriptionProtocol::Http => "http",
            SubscriptionProtocol::Https => "https",
            SubscriptionProtocol::Email => "email",
            SubscriptionProtocol::EmailJson => "email-json",
            SubscriptionProtocol::Sms => "sms",
            SubscriptionProtocol::Sqs => "sqs",
            SubscriptionProtocol::Application => "application",
            SubscriptionProtocol::Lambda => "lambda",
            SubscriptionProtocol::Firehose => "firehose",
        }
    }

    /// Parses a wire name, in any ASCII case: `EMAIL`, `Sqs` and `Email-JSON` name their
    /// protocols. AWS takes a protocol in another case (an SDK user's Subscribe with
    /// Protocol `SQS` went past the protocol check to the attributes', aws-sdk-js issue
    /// #3446); the subscription then reports the lower-case wire name, Loft's reading (AWS's
    /// read-back of such a subscription is not recorded).
    ///
    /// Errors: `InvalidParameter` "Invalid parameter: Amazon SNS does not support this
    /// protocol string: {protocol}", SNS's recorded words for an unknown protocol
    /// (`test_subscribe_with_invalid_protocol`), naming the protocol as given: AWS's
    /// answers quote the caller's spelling ("Delivery protocol SQS ...", the issue above).
    /// Nothing is trimmed: ` sqs` is no protocol.
    pub fn parse(protocol: &str) -> Result<SubscriptionProtocol, crate::Error> {
        SubscriptionProtocol::ALL
            .into_iter()
            .find(|p| p.as_str().eq_ignore_ascii_case(protocol))
            .ok_or_else(|| {
                crate::Error::new(
                    crate::ErrorCode::InvalidParameter,
                    format!(
                        "Invalid parameter: Amazon SNS does not support this protocol string: {protocol}"
                    ),
                )
            })
    }

    /// Whether deliveries go over HTTP/S (`http`, `https`): the protocols with a
    /// confirmation POST, a DeliveryPolicy and the delivery queue's retries.
    pub fn is_http(self) -> bool {
        match self {
            SubscriptionProtocol::Http | SubscriptionProtocol::Https => true,
            SubscriptionProtocol::Email
            | SubscriptionProtocol::EmailJson
            | SubscriptionProtocol::Sms
            | SubscriptionProtocol::Sqs
            | SubscriptionProtocol::Application
            | SubscriptionProtocol::Lambda
            | SubscriptionProtocol::Firehose => false,
        }
    }
}

impl std::str::FromStr for SubscriptionProtocol {
    type Err = crate::Error;

    /// As [`SubscriptionProtocol::parse`].
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        SubscriptionProtocol::parse(s)
    }
}

impl std::fmt::Display for SubscriptionProtocol {
    /// The wire name, [`SubscriptionProtocol::as_str`].
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A subscription to store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSubscription {
    /// The subscription's ARN suffix (a UUID); the full ARN is built from the topic.
    pub uuid: String,
    /// Protocol (the seeds' subscriptions are `http` or `https`, marked by their payload
    /// attribute).
    pub protocol: SubscriptionProtocol,
    /// Endpoint URL or ARN.
    pub endpoint: String,
    /// Settable attributes by AWS name.
    pub attributes: BTreeMap<String, String>,
    /// Whether it is confirmed (deliveries happen only when it is).
    pub confirmed: bool,
    /// Confirmation token when pending.
    pub token: Option<String>,
}

/// A subscription as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubscriptionRecord {
    /// Store sequence: the seeds' `sub-N` id is `sub-{seq}`; never reused.
    pub seq: i64,
    /// The topic's store id.
    pub topic_id: i64,
    /// The topic's name.
    pub topic_name: String,
    /// ARN suffix (UUID).
    pub uuid: String,
    /// Protocol.
    pub protocol: SubscriptionProtocol,
    /// Endpoint.
    pub endpoint: String,
    /// Attributes.
    pub attributes: BTreeMap<String, String>,
    /// Confirmed or pending.
    pub confirmed: bool,
    /// Confirmation token when pending.
    pub token: Option<String>,
}

/// Where a message-move task sends messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MoveTarget {
    /// Every message to this queue id.
    Queue(i64),
    /// Each message to the queue whose ARN its `dead_letter_source` holds: (ARN, queue id).
    Sources(Vec<(String, i64)>),
}

/// One accepted publish of a FIFO topic, before the store numbers it (SNS Developer
/// Guide, "Message deduplication for FIFO topics").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FifoPublishEntry {
    /// The MessageId the service chose for it.
    pub message_id: String,
    /// Its deduplication key: `scope` is `""` with FifoThroughputScope `Topic`, the
    /// MessageGroupId with `MessageGroup`; the window ends at `expires_at_ms`.
    pub dedup: DedupKey,
    /// With the topic's ArchivePolicy: keep the entry in the topic's archive.
    pub archive: Option<ArchiveEntry>,
    /// The subscription (its ARN suffix) of each queue message the fan-out builds for
    /// this entry, in the fan-out's order: a copy whose subscription has a replay holding
    /// live messages ([`ReplayRecord::hold_live`]) is not stored (its replay delivers it
    /// from the archive). Empty: every copy is stored.
    pub subscriptions: Vec<String>,
}

/// What a FIFO topic's archive keeps of one published message (SNS Developer Guide,
/// "Amazon SNS message archiving and replay for FIFO topics"), besides the topic, its
/// sequence number, its MessageId and its publish time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchiveEntry {
    /// The publish as the service will need it to replay the message (JSON, opaque to
    /// the store).
    pub published: String,
    /// When the archive's retention period ends for it (ms): it is swept then.
    pub expires_at_ms: i64,
    /// Encryption at rest the service decided (the topic's KmsMasterKeyId): the store
    /// keeps `published` sealed and opens it when it reads the archive back.
    pub seal: Option<TopicSeal>,
}

/// One message of a FIFO topic's archive ([`crate::store::Store::archived_messages`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchivedMessage {
    /// The topic's sequence number of the message (strictly increasing per topic).
    pub sequence: i64,
    /// Its MessageId.
    pub message_id: String,
    /// When it was published (ms).
    pub published_at_ms: i64,
    /// When it leaves the archive (ms).
    pub expires_at_ms: i64,
    /// [`ArchiveEntry::published`].
    pub published: String,
    /// Whether `published` is still sealed as stored ([`ArchiveEntry::seal`]). Engines
    /// open it before returning the message, so a caller of the store sees `false`.
    pub sealed: bool,
}

/// The state of a subscription's message replay (SNS API Reference, Subscribe,
/// `ReplayStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplayStatus {
    /// The default state while the replay starts: no batch delivered yet.
    Pending,
    /// Delivering the archived messages of its window.
    Replaying,
    /// Every message of the window was delivered.
    Completed,
    /// The replay could not finish (its `failure` says why).
    Failed,
}

impl ReplayStatus {
    /// The name the store keeps: `Pending`, `Replaying`, `Completed`, `Failed` (see
    /// [`ReplayStatus::attribute_value`] for what GetSubscriptionAttributes shows).
    pub fn as_str(self) -> &'static str {
        match self {
            ReplayStatus::Pending => "Pending",
            ReplayStatus::Replaying => "Replaying",
            ReplayStatus::Completed => "Completed",
            ReplayStatus::Failed => "Failed",
        }
    }

    /// The value GetSubscriptionAttributes reports as `ReplayStatus`: `Pending`,
    /// `In progress` (a running replay), `Completed`, `Failed`, as the SNS API Reference
    /// (Subscribe, `ReplayStatus`) and the Developer Guide ("Amazon SNS message replay for
    /// FIFO topic subscribers") list them. [`ReplayStatus::as_str`] is the store's name.
    pub fn attribute_value(self) -> &'static str {
        match self {
            ReplayStatus::Replaying => "In progress",
            other => other.as_str(),
        }
    }

    /// The status named `s` ([`ReplayStatus::as_str`]); anything else is `Failed`.
    pub fn parse(s: &str) -> ReplayStatus {
        match s {
            "Pending" => ReplayStatus::Pending,
            "Replaying" => ReplayStatus::Replaying,
            "Completed" => ReplayStatus::Completed,
            _ => ReplayStatus::Failed,
        }
    }

    /// Pending or Replaying: a node still has work to do.
    pub fn is_active(self) -> bool {
        matches!(self, ReplayStatus::Pending | ReplayStatus::Replaying)
    }
}

/// A subscription's message replay as stored (SNS Developer Guide, "Amazon SNS message
/// replay for FIFO topic subscribers"): one per subscription, replaced by a new
/// ReplayPolicy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayRecord {
    /// The subscription (its ARN suffix).
    pub subscription: String,
    /// Its topic's store id.
    pub topic_id: i64,
    /// Names this replay: a new ReplayPolicy gives a new id, and steps of the old one no
    /// longer count.
    pub replay_id: String,
    /// StartingPoint (ms): archived messages published at or after it are replayed.
    pub starting_at_ms: i64,
    /// EndingPoint (ms), if any: messages published after it are not replayed, and once
    /// the replay completes the subscription stays paused (no live messages).
    pub ending_at_ms: Option<i64>,
    /// The topic sequence number of the last archived message the replay has passed
    /// (delivered or filtered out); 0 before the first.
    pub cursor: i64,
    /// Where it stands.
    pub status: ReplayStatus,
    /// Whether the live fan-out of the topic leaves this subscription out (the replay
    /// delivers those messages from the archive, or the subscription is paused after a
    /// replay with an EndingPoint).
    pub hold_live: bool,
    /// Why it failed.
    pub failure: Option<String>,
    /// The node running it, while one holds its lease.
    pub owner: Option<String>,
    /// When that node's lease ends (ms); 0 when none holds it.
    pub lease_until_ms: i64,
}

/// How a replay step ends ([`ReplayStep::finish`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplayFinish {
    /// More to do: the replay is Replaying.
    Continue,
    /// The window has no EndingPoint and the step read the archive to its end: the replay
    /// completes if its cursor has reached the topic's latest sequence number (checked in
    /// the step's transaction, one publish to the topic at a time), and live delivery
    /// resumes; otherwise it goes on (a publish came in meanwhile).
    CaughtUp,
    /// The window's EndingPoint has passed and the archive up to it is delivered: the
    /// replay completes and the subscription stays paused.
    Ended,
    /// There is nothing more to replay (the topic's archive was removed): the replay
    /// completes and live delivery resumes, whatever its cursor.
    Stopped,
    /// The replay cannot go on: it fails with this reason and live delivery resumes.
    Failed(String),
}

/// One batch of a replay ([`crate::store::Store::advance_replay`]).
#[derive(Debug, Clone)]
pub struct ReplayStep {
    /// The subscription.
    pub subscription: String,
    /// The replay it belongs to ([`ReplayRecord::replay_id`]).
    pub replay_id: String,
    /// The node that holds its lease.
    pub owner: String,
    /// The lease, renewed to this (ms).
    pub lease_until_ms: i64,
    /// The queue messages of this batch, stored as [`crate::store::Store::send_messages`]
    /// does.
    pub messages: Vec<(i64, NewMessage)>,
    /// The new cursor (the sequence number of the last archived message the batch passed).
    pub cursor: i64,
    /// How the step ends.
    pub finish: ReplayFinish,
}

/// What one replay step writes back to its replay ([`ReplayStep::outcome`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayOutcome<'a> {
    /// The replay's new status.
    pub status: ReplayStatus,
    /// Whether live delivery to the subscription stays held.
    pub hold_live: bool,
    /// Why the replay failed, when it did.
    pub failure: Option<String>,
    /// The node that keeps the lease: the step's while the replay is active, else none.
    pub owner: Option<&'a str>,
    /// The lease (ms): the step's while the replay is active, else 0.
    pub lease_until_ms: i64,
}

impl ReplayStep {
    /// What this step writes back. `caught_up` matters only for [`ReplayFinish::CaughtUp`]:
    /// whether the cursor reached the topic's latest sequence number, or nothing after it is
    /// archived (messages published while the topic kept no archive can never be replayed
    /// and must not keep the replay waiting), as the engine read it in the step's
    /// transaction.
    pub fn outcome(&self, caught_up: bool) -> ReplayOutcome<'_> {
        let (status, hold_live, failure) = match &self.finish {
            ReplayFinish::Continue => (ReplayStatus::Replaying, true, None),
            ReplayFinish::CaughtUp if caught_up => (ReplayStatus::Completed, false, None),
            ReplayFinish::CaughtUp => (ReplayStatus::Replaying, true, None),
            ReplayFinish::Ended => (ReplayStatus::Completed, true, None),
            ReplayFinish::Stopped => (ReplayStatus::Completed, false, None),
            ReplayFinish::Failed(why) => (ReplayStatus::Failed, false, Some(why.clone())),
        };
        let active = status.is_active();
        ReplayOutcome {
            status,
            hold_live,
            failure,
            owner: active.then_some(self.owner.as_str()),
            lease_until_ms: if active { self.lease_until_ms } else { 0 },
        }
    }
}

/// What the store did with one [`FifoPublishEntry`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FifoPublished {
    /// The entry's MessageId, or the original's for a duplicate.
    pub message_id: String,
    /// The topic's sequence number for it (the original's for a duplicate): the
    /// SequenceNumber is [`crate::service::sequence_number`] of it.
    pub sequence: i64,
    /// Whether the key was recorded inside its window: nothing fanned out.
    pub duplicate: bool,
    /// One per queue message the fan-out built for the entry, in its order (empty for a
    /// duplicate), as [`crate::store::Store::send_messages`] reports them.
    pub sent: Vec<SentMessage>,
}

/// Builds the queue messages of entry `index` of a [`FifoPublish`] once the store has
/// given it its topic sequence number (the SNS envelope carries it). The service's code,
/// called by the store inside the publish's transaction; may be called again if the
/// transaction is retried, so it must give the same answer for the same arguments.
pub type FifoFanout = Arc<dyn Fn(usize, i64) -> Vec<(i64, NewMessage)> + Send + Sync>;

/// A publish (or PublishBatch) to a FIFO topic: see [`crate::store::Store::publish_fifo`].
#[derive(Clone)]
pub struct FifoPublish {
    /// The topic's store id.
    pub topic_id: i64,
    /// Current time (ms): keys whose window ended by then are free.
    pub now_ms: i64,
    /// The accepted entries, in order.
    pub entries: Vec<FifoPublishEntry>,
    /// The fan-out of each entry to the topic's SQS subscriptions.
    pub fanout: FifoFanout,
}

impl std::fmt::Debug for FifoPublish {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FifoPublish")
            .field("topic_id", &self.topic_id)
            .field("now_ms", &self.now_ms)
            .field("entries", &self.entries)
            .finish_non_exhaustive()
    }
}

/// The state of a message-move task (SQS API Reference, ListMessageMoveTasks, `Status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MoveTaskStatus {
    /// Moving; at most one task per source queue is.
    Running,
    /// Every message it could move has moved.
    Completed,
    /// Stopped by CancelMessageMoveTask.
    Cancelled,
    /// Stopped by an error (its `failure_reason`).
    Failed,
}

impl MoveTaskStatus {
    /// AWS's name: `RUNNING`, `COMPLETED`, `CANCELLED`, `FAILED`.
    pub fn as_str(self) -> &'static str {
        match self {
            MoveTaskStatus::Running => "RUNNING",
            MoveTaskStatus::Completed => "COMPLETED",
            MoveTaskStatus::Cancelled => "CANCELLED",
            MoveTaskStatus::Failed => "FAILED",
        }
    }

    /// The status named `name` ([`MoveTaskStatus::as_str`]); an unknown name reads as
    /// `Failed`.
    pub fn parse(name: &str) -> MoveTaskStatus {
        match name {
            "RUNNING" => MoveTaskStatus::Running,
            "COMPLETED" => MoveTaskStatus::Completed,
            "CANCELLED" => MoveTaskStatus::Cancelled,
            _ => MoveTaskStatus::Failed,
        }
    }
}

/// A message-move task as stored: what StartMessageMoveTask asked, and its progress. Any
/// node reads and changes it; the node running it holds a lease (`owner` until
/// `lease_until_ms`), and another node takes it over once the lease has run out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MoveTaskRecord {
    /// The TaskHandle (opaque, unique).
    pub handle: String,
    /// The source (dead-letter) queue's ARN.
    pub source_arn: String,
    /// The source queue's name.
    pub source_queue: String,
    /// The destination queue's ARN; `None`: each message back to its own source queue.
    pub destination_arn: Option<String>,
    /// MaxNumberOfMessagesPerSecond as asked (`None`: the default).
    pub max_per_second: Option<i64>,
    /// Where it stands.
    pub status: MoveTaskStatus,
    /// Messages moved so far (ApproximateNumberOfMessagesMoved).
    pub moved: i64,
    /// Messages in the source when it started (ApproximateNumberOfMessagesToMove).
    pub to_move: i64,
    /// Why it failed, when it did.
    pub failure_reason: Option<String>,
    /// When it started (ms).
    pub started_at_ms: i64,
    /// The node (a [`crate::Service`] instance) running it now, if any.
    pub owner: Option<String>,
    /// Until when (ms) `owner`'s lease holds.
    pub lease_until_ms: i64,
    /// The IAM ARN of the principal that started it (StartMessageMoveTask's caller), whose
    /// permission to send into a destination queue of another account each step checks;
    /// `None` for a task of an open Loft, or one stored before Loft kept it: the task is
    /// then its source queue's account's root.
    pub started_by: Option<String>,
}

/// The lease a node holds on a running move task: steps and the finish it makes count
/// only while the task is still running under this owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MoveTaskLease {
    /// The task's handle.
    pub handle: String,
    /// The node holding it.
    pub owner: String,
    /// The lease, renewed to this (ms) by each step.
    pub lease_until_ms: i64,
}

/// A mobile push platform application or endpoint as stored (SNS
/// CreatePlatformApplication, CreatePlatformEndpoint).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlatformRecord {
    /// PlatformApplicationArn or EndpointArn.
    pub arn: String,
    /// Attributes by AWS name (an endpoint's include `Token`).
    pub attributes: BTreeMap<String, String>,
}

/// A destination phone number of an account's SMS sandbox (SNS
/// CreateSMSSandboxPhoneNumber, VerifySMSSandboxPhoneNumber,
/// ListSMSSandboxPhoneNumbers; SNS Developer Guide, "SMS sandbox").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SmsSandboxNumber {
    /// The number, as given (E.164, `+` and 8 or more digits, or up to 9 digits).
    pub phone_number: String,
    /// Whether it was verified with its one-time password (`Verified`), else `Pending`.
    pub verified: bool,
    /// The one-time password last sent to it (5 to 8 digits).
    pub one_time_password: String,
    /// When it was added or its password last sent (ms since the epoch).
    pub created_at_ms: i64,
}

/// An HTTP/S delivery to make (a notification or a subscription confirmation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewDelivery {
    /// The subscription's ARN suffix.
    pub subscription: String,
    /// The URL to POST to.
    pub endpoint: String,
    /// Content-Type of the body.
    pub content_type: String,
    /// Extra headers, in order.
    pub headers: Vec<(String, String)>,
    /// The request body.
    pub body: String,
    /// When the first attempt is due (ms).
    pub due_at_ms: i64,
    /// Encryption at rest the service decided (the topic's KmsMasterKeyId): the store
    /// keeps `body` sealed until a delivery worker or a listing reads it back. Headers,
    /// endpoint and content type are stored as they are.
    pub seal: Option<TopicSeal>,
}

/// A stored delivery, as the delivery workers take it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryRecord {
    /// Store id.
    pub id: i64,
    /// The subscription's ARN suffix.
    pub subscription: String,
    /// The URL to POST to.
    pub endpoint: String,
    /// Content-Type of the body.
    pub content_type: String,
    /// Extra headers, in order.
    pub headers: Vec<(String, String)>,
    /// The request body.
    pub body: String,
    /// Attempts made so far (before this one).
    pub attempts: i64,
    /// When it was created (ms).
    pub created_at_ms: i64,
    /// The last attempt's error, if any.
    pub last_error: Option<String>,
    /// Lambda deliveries: how many of `attempts` ended in a function error (the others
    /// were throttled or could not reach the function); 0 for HTTP/S deliveries.
    pub function_errors: i64,
    /// Whether `body` is still sealed as stored ([`NewDelivery::seal`]). Engines open it
    /// before returning the record, so a caller of the store sees `false`.
    pub sealed: bool,
}

/// Which recorded messages [`crate::store::Store::delete_recorded`] deletes: those matching
/// every field that is set (all of them when none is).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecordedFilter {
    /// Only this protocol (`email`, `sms`, ...).
    pub protocol: Option<String>,
    /// Only this endpoint (address, phone number, ARN).
    pub endpoint: Option<String>,
    /// Only messages published to this topic ARN.
    pub topic_arn: Option<String>,
    /// Only messages of this account, in the store's form ([`RecordedMessage::account`]:
    /// `""` for the default account).
    pub account: Option<String>,
}

/// A message for a protocol Loft does not send (email, SMS, mobile push, Lambda,
/// Firehose): recorded so a developer can read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedMessage {
    /// Store id (0 before storing).
    pub id: i64,
    /// The account it belongs to (the publishing topic's, or the caller's for a publish
    /// straight to a phone number or endpoint), in the form store keys take: `""` for the
    /// configured default account (so every record written before accounts belongs to it),
    /// else the 12-digit account id.
    pub account: String,
    /// The protocol: `email`, `email-json`, `sms`, `application`, `lambda`, `firehose`.
    pub protocol: String,
    /// The endpoint (address, phone number, ARN).
    pub endpoint: String,
    /// The topic's ARN, when published to a topic.
    pub topic_arn: Option<String>,
    /// Subject, if any.
    pub subject: Option<String>,
    /// The message as it would have been sent.
    pub message: String,
    /// Who it would have come from: for email and email-json, the From header
    /// (`"{DisplayName} <no-reply@sns.amazonaws.com>"`, the topic's name without a
    /// DisplayName); for SMS from a topic with a DisplayName, its first 10 characters
    /// (the sender prefix the message starts with); for firehose, the subscription's
    /// SubscriptionRoleArn (the role SNS writes to the stream under); `None` otherwise.
    pub sender: Option<String>,
    /// When (ms).
    pub created_at_ms: i64,
    /// Encryption at rest the service decided (the topic's KmsMasterKeyId): the store
    /// keeps `message` and `subject` sealed and opens them when it reads them back (a
    /// record read back has `None`).
    pub seal: Option<TopicSeal>,
}

/// An SQS event source mapping as stored (Lambda API Reference,
/// CreateEventSourceMapping): which queue feeds which function, and how. The store keeps
/// it as the service decided it; the node polling it holds a lease (`owner` until
/// `lease_until_ms`), and another node takes it over once the lease has run out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventSourceMappingRecord {
    /// The mapping's UUID.
    pub uuid: String,
    /// The function's ARN (unqualified).
    pub function_arn: String,
    /// The queue's ARN.
    pub event_source_arn: String,
    /// BatchSize: most messages in one invocation (1..=10000).
    pub batch_size: i64,
    /// MaximumBatchingWindowInSeconds (0..=300).
    pub maximum_batching_window_seconds: i64,
    /// Enabled: polling, or paused.
    pub enabled: bool,
    /// FunctionResponseTypes (`ReportBatchItemFailures`).
    pub function_response_types: Vec<String>,
    /// FilterCriteria's patterns, each a JSON object as text; a message matching none of
    /// them is deleted without an invocation. Empty: every message is sent.
    pub filter_patterns: Vec<String>,
    /// ScalingConfig.MaximumConcurrency (2..=1000), when set.
    pub maximum_concurrency: Option<i64>,
    /// When it was created or last changed (ms): LastModified.
    pub last_modified_ms: i64,
    /// The node polling it now, if any.
    pub owner: Option<String>,
    /// Until when (ms) `owner`'s lease holds.
    pub lease_until_ms: i64,
    /// The account the mapping belongs to: the one whose caller created it (Lambda
    /// Developer Guide: a mapping is a resource of the account that creates it). `None`
    /// for the default account, and for every mapping stored before mappings had one
    /// (then only the default account's queues could be mapped).
    pub account: Option<String>,
}

/// Whose resources [`crate::store::Store::reset`] removes: the resources of one account,
/// by the forms the store keeps them in. The service builds it (`Service::reset`); the
/// store only matches rows against it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResetScope {
    /// The 12-digit account id: event source mappings whose `account` is it, platform
    /// applications and endpoints whose ARN names it (`arn:aws:sns:REGION:ACCOUNT:...`),
    /// SMS settings of scope `ACCOUNT:REGION`.
    pub account: String,
    /// Whether the account is the configured default account: then store keys without
    /// the separator (`names::scoped_key`'s bare names), mappings without an account and
    /// records of account `""` are its too.
    pub default_account: bool,
}

/// What a store's reset statements match on, from an optional [`ResetScope`] (none:
/// everything): the same values on both engines, each in its own SQL.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResetBinds {
    /// No scope: every row goes.
    pub all: bool,
    /// [`ResetScope::default_account`]: bare store keys are the account's too.
    pub default_account: bool,
    /// [`ResetScope::key_prefix`] (empty without a scope).
    pub prefix: String,
    /// [`ResetScope::account`] (empty without a scope).
    pub account: String,
    /// [`ResetScope::recorded_account`] (empty without a scope).
    pub recorded: String,
}

impl ResetBinds {
    /// The binds of `scope`.
    pub fn of(scope: Option<&ResetScope>) -> Self {
        match scope {
            None => ResetBinds {
                all: true,
                ..ResetBinds::default()
            },
            Some(s) => ResetBinds {
                all: false,
                default_account: s.default_account,
                prefix: s.key_prefix(),
                account: s.account.clone(),
                recorded: s.recorded_account().to_owned(),
            },
        }
    }
}

impl ResetScope {
    /// The prefix of the account's store keys outside the bare-name form: `ACCOUNT/`.
    pub fn key_prefix(&self) -> String {
        format!("{}{}", self.account, crate::names::ACCOUNT_SEPARATOR)
    }

    /// The account of its recorded messages, in [`RecordedMessage::account`]'s form.
    pub fn recorded_account(&self) -> &str {
        if self.default_account {
            ""
        } else {
            &self.account
        }
    }

    /// Whether store key `key` (a queue's or topic's) is the account's.
    pub fn owns_key(&self, key: &str) -> bool {
        (self.default_account && crate::names::is_default_scope_key(key))
            || key.starts_with(&self.key_prefix())
    }
}

/// What [`crate::store::Store::reset`] removed, by kind of resource. Serialised as the
/// answer of `POST /_loft/reset`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ResetCounts {
    /// Queues deleted.
    pub queues: u64,
    /// Messages of those queues deleted (visible, in flight and delayed).
    pub messages: u64,
    /// Topics deleted.
    pub topics: u64,
    /// Subscriptions of those topics deleted.
    pub subscriptions: u64,
    /// Pending HTTP/S and Lambda deliveries of those subscriptions dropped.
    pub deliveries: u64,
    /// SQS event source mappings deleted.
    pub mappings: u64,
    /// Message-move tasks (running or finished) of the account's queues deleted.
    pub move_tasks: u64,
    /// SNS messages recorded for email, SMS, mobile push (and other unsent protocols)
    /// deleted.
    pub recordings: u64,
    /// Platform applications and endpoints deleted.
    pub platforms: u64,
    /// The ids of the deleted queues (not serialised): the service forgets what it keeps
    /// about them.
    #[serde(skip)]
    pub queue_ids: Vec<i64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorCode;

    #[test]
    fn every_subscription_protocol_round_trips_through_its_wire_name() {
        let names: Vec<&str> = SubscriptionProtocol::ALL
            .iter()
            .map(|p| p.as_str())
            .collect();
        // SNS API Reference, Subscribe, "Protocol": the nine protocols, each named once.
        assert_eq!(
            names,
            [
                "http",
                "https",
                "email",
                "email-json",
                "sms",
                "sqs",
                "application",
                "lambda",
                "firehose"
            ]
        );
        for p in SubscriptionProtocol::ALL {
            assert_eq!(SubscriptionProtocol::parse(p.as_str()).unwrap(), p);
            assert_eq!(p.as_str().parse::<SubscriptionProtocol>().unwrap(), p);
            assert_eq!(p.to_string(), p.as_str());
        }
    }

    /// Subscribe's Protocol, each spelling: any ASCII case of a wire name is its protocol;
    /// anything else (another separator, spaces, another alphabet's letters, empty) is
    /// refused naming the protocol as given (`SubscriptionProtocol::parse`).
    #[test]
    fn subscription_protocol_rules() {
        use SubscriptionProtocol as P;
        let refused = |given: &str| {
            Err(format!(
                "Invalid parameter: Amazon SNS does not support this protocol string: {given}"
            ))
        };
        let rows: Vec<(&str, Result<P, String>)> = vec![
            ("sqs", Ok(P::Sqs)),
            ("SQS", Ok(P::Sqs)),
            ("Sqs", Ok(P::Sqs)),
            ("EMAIL", Ok(P::Email)),
            ("Email-JSON", Ok(P::EmailJson)),
            ("HTTPS", Ok(P::Https)),
            ("Http", Ok(P::Http)),
            ("SMS", Ok(P::Sms)),
            ("Lambda", Ok(P::Lambda)),
            ("APPLICATION", Ok(P::Application)),
            ("FireHose", Ok(P::Firehose)),
            ("test-protocol", refused("test-protocol")),
            ("smtp", refused("smtp")),
            ("SMTP", refused("SMTP")),
            ("", refused("")),
            ("Email_Json", refused("Email_Json")),
            ("emailjson", refused("emailjson")),
            (" sqs", refused(" sqs")),
            ("sqs ", refused("sqs ")),
            ("native", refused("native")),
            // Letters that fold to ASCII in Unicode only: the long s, the Kelvin sign.
            ("\u{17f}qs", refused("\u{17f}qs")),
            ("\u{212a}inesis", refused("\u{212a}inesis")),
        ];
        for (given, want) in rows {
            let got = SubscriptionProtocol::parse(given).map_err(|e| {
                assert_eq!(e.code, ErrorCode::InvalidParameter, "{given:?}");
                e.message
            });
            assert_eq!(got, want, "{given:?}");
        }
    }

    #[test]
    fn only_http_and_https_are_http() {
        let http: Vec<SubscriptionProtocol> = SubscriptionProtocol::ALL
            .into_iter()
            .filter(|p| p.is_http())
            .collect();
        assert_eq!(
            http,
            [SubscriptionProtocol::Http, SubscriptionProtocol::Https]
        );
    }
}
