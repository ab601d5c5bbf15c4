//! Messages: send, receive with visibility timeout and long polling, delete, visibility
//! changes, purge; and the seeds' variants of them.
//!
//! Sources: SQS API Reference (SendMessage, SendMessageBatch, ReceiveMessage, DeleteMessage,
//! ChangeMessageVisibility, PurgeQueue); SQS Developer Guide "Visibility timeout",
//! "Short and long polling", "Dead-letter queues"; `chapter-41-sqs.md` "Send", "Receive",
//! "Delete (Ack)".

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use super::receipt::{invalid_handle, Issued, Receipt};
use super::Sqs;
use crate::attributes::QueueConfig;
use crate::error::{Error, ErrorCode, Result};
use crate::message::{self, MessageAttributes};
use crate::model::*;
use crate::service::core::quotas::QuotaAction;

/// One message to send (SendMessage, or one SendMessageBatch entry).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SendMessage {
    /// MessageBody.
    pub body: String,
    /// DelaySeconds (0..=900); `None` takes the queue's.
    pub delay_seconds: Option<i64>,
    /// MessageAttributes.
    pub message_attributes: MessageAttributes,
    /// MessageSystemAttributes (only `AWSTraceHeader`).
    pub system_attributes: MessageAttributes,
    /// MessageGroupId.
    pub group_id: Option<String>,
    /// MessageDeduplicationId.
    pub dedup_id: Option<String>,
    /// The sender's `SenderId` ([`crate::service::Principal::sender_id`]); `None`: the
    /// default account's id.
    pub sender_id: Option<String>,
}

/// What a send returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendResult {
    /// MessageId.
    pub message_id: String,
    /// MD5OfMessageBody.
    pub md5_body: String,
    /// MD5OfMessageAttributes, when there are attributes.
    pub md5_attributes: Option<String>,
    /// MD5OfMessageSystemAttributes, when there are system attributes.
    pub md5_system_attributes: Option<String>,
    /// SequenceNumber (FIFO).
    pub sequence_number: Option<String>,
}

/// A receive request (ReceiveMessage parameters).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReceiveMessage {
    /// MaxNumberOfMessages (1..=10, default 1).
    pub max_messages: Option<i64>,
    /// VisibilityTimeout, seconds (0..=43200); `None` takes the queue's.
    pub visibility_timeout: Option<i64>,
    /// WaitTimeSeconds (0..=20); `None` takes the queue's ReceiveMessageWaitTimeSeconds.
    pub wait_seconds: Option<i64>,
    /// AttributeNames / MessageSystemAttributeNames (`All` or names).
    pub system_attribute_names: Vec<String>,
    /// MessageAttributeNames (`All`, `.*`, names, `prefix.*`).
    pub message_attribute_names: Vec<String>,
    /// ReceiveRequestAttemptId (FIFO).
    pub attempt_id: Option<String>,
}

/// A received message, with the attributes the request selected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceivedMessage {
    /// MessageId.
    pub message_id: String,
    /// ReceiptHandle: new on every receive.
    pub receipt_handle: String,
    /// Body.
    pub body: String,
    /// MD5OfBody.
    pub md5_body: String,
    /// Selected system attributes (SentTimestamp, ApproximateReceiveCount, ...).
    pub attributes: BTreeMap<String, String>,
    /// Selected message attributes.
    pub message_attributes: MessageAttributes,
    /// MD5OfMessageAttributes over the selected attributes only.
    pub md5_message_attributes: Option<String>,
    /// How many times it has been received, this time included.
    pub receive_count: i64,
    /// The message's `AWSTraceHeader` system attribute (X-Ray trace header of its send),
    /// whether or not the receive asked for it: what links the receive's trace span to
    /// the send's (`loft_server::observe::link_to_sends`). Never returned as such.
    pub trace_header: Option<String>,
}

const SYSTEM_ATTRIBUTES: &[&str] = &[
    "ApproximateFirstReceiveTimestamp",
    "ApproximateReceiveCount",
    "AWSTraceHeader",
    "DeadLetterQueueSourceArn",
    "MessageDeduplicationId",
    "MessageGroupId",
    "SenderId",
    "SentTimestamp",
    "SequenceNumber",
];

fn check_range(name: &str, value: i64, lo: i64, hi: i64) -> Result<()> {
    if value < lo || value > hi {
        return Err(Error::invalid(format!(
            "Value {value} for parameter {name} is invalid. Reason: Must be between {lo} and {hi}, if provided."
        )));
    }
    Ok(())
}

/// Largest SendMessageBatch, bytes: all entries' bodies and attributes together (1 MiB);
/// each entry is also held to its queue's MaximumMessageSize.
pub const MAX_BATCH_BYTES: usize = 1_048_576;

/// FIFO deduplication window, ms (five minutes).
pub const DEDUP_WINDOW_MS: i64 = 5 * 60 * 1000;

/// How long after a PurgeQueue another is refused, ms (SQS API Reference, PurgeQueue:
/// `PurgeQueueInProgress`, "only one PurgeQueue operation ... every 60 seconds").
pub const PURGE_HOLD_MS: i64 = 60_000;

/// Longest a message stays hidden after the receive that hid it, ms: 12 hours (SQS
/// Developer Guide, "Visibility timeout": "the maximum is 12 hours"). A
/// ChangeMessageVisibility past it is refused.
pub const MAX_HIDDEN_MS: i64 = 43_200_000;

/// The MessageId the seeds' API gives the message with store sequence number `seq`
/// (`msg-N`, `chapter-41-sqs.md` "Send"); such messages are stored without an id.
pub fn seed_message_id(seq: i64) -> String {
    format!("msg-{seq}")
}

/// The store sequence number a seeds' MessageId `msg-N` names, if `id` has that form.
fn seed_sequence(id: &str) -> Option<i64> {
    id.strip_prefix("msg-")?
        .parse()
        .ok()
        .filter(|n: &i64| *n > 0)
}

/// The MessageId of a stored message: its own, or the seeds' `msg-N` for one stored
/// without ([`NewMessage::message_id`] `None`).
pub(crate) fn message_id_of(stored: Option<String>, seq: i64) -> String {
    stored.unwrap_or_else(|| seed_message_id(seq))
}

/// `n` fresh receipt tokens: random, non-negative, distinct (the receipt handle carries
/// one; a new receive of a message gives it a new one).
pub(crate) fn receipt_tokens(n: usize) -> Vec<i64> {
    let mut tokens: Vec<i64> = Vec::with_capacity(n);
    while tokens.len() < n {
        let t = rand::random::<i64>() & i64::MAX;
        if !tokens.contains(&t) {
            tokens.push(t);
        }
    }
    tokens
}

/// The SequenceNumber of sequence number `seq`: a 20-digit decimal, 10^19 + `seq`, in the
/// form of AWS's 128-bit sequence numbers (SQS API Reference, SendMessage: "the large,
/// non-consecutive number that Amazon SQS assigns to each message"). A FIFO queue's
/// message gives its queue's own number ([`crate::model::StoredMessage::sequence`], see
/// [`message_sequence_number`]); an SNS FIFO topic's publish its topic's.
pub fn sequence_number(seq: i64) -> String {
    (10_000_000_000_000_000_000u128 + seq.max(0) as u128).to_string()
}

/// The SequenceNumber of a FIFO queue's message: for a message numbered by its queue
/// (`sequence`, [`crate::model::StoredMessage::sequence`]), 10^19 + 2^60 + the queue's
/// `offset` ([`super::receipt::ReceiptKey::sequence_offset`], under 2^40) + that number, a 20-digit
/// decimal above every number given before queues counted their own and above every SNS
/// FIFO topic's (10^19 + the topic's count), so a topic's number and its queues' differ,
/// as AWS's do; for a message stored before queues counted their own, [`sequence_number`]
/// of its store sequence `seq` (what it was given then). Within a queue the numbers grow
/// with its counter. The number may be negative: a queue moved to another storage cell
/// (`loft cells move`) gets a new id, so a new offset, and its numbers are shifted by the
/// difference so that every message keeps its SequenceNumber and later ones go on above
/// them; the sum never goes below 10^19.
pub fn message_sequence_number(offset: u64, sequence: Option<i64>, seq: i64) -> String {
    match sequence {
        Some(n) => {
            let base = 10_000_000_000_000_000_000i128;
            (base + (1i128 << 60) + offset as i128 + n as i128)
                .max(base)
                .to_string()
        }
        None => sequence_number(seq),
    }
}

/// Checks a MessageGroupId or MessageDeduplicationId: 1..=128 characters of alphanumerics
/// and punctuation. Errors: `InvalidParameterValue`.
fn check_fifo_id(name: &str, value: &str) -> Result<()> {
    let ok = !value.is_empty()
        && value.len() <= 128
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b.is_ascii_punctuation());
    if ok {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "Value {value} for parameter {name} is invalid. Reason: {name} can only include alphanumeric and punctuation characters. 1 to 128 in length."
        )))
    }
}

/// The error for a FIFO receipt handle whose receive has expired or been superseded
/// (AWS Knowledge Center, "SQS receipt handle has expired" errors).
fn expired_handle(handle: &str) -> Error {
    Error::invalid(format!(
        "Value {handle} for parameter ReceiptHandle is invalid. Reason: The receipt handle has expired."
    ))
}

/// The error for a ChangeMessageVisibility whose (genuine) handle's message is gone from a
/// standard queue (deleted; a later receive does not make a genuine handle stale there) (AWS's
/// answer, as LocalStack's AWS-validated test
/// `test_change_visibility_on_deleted_message_raises_invalid_parameter_value` records it).
fn not_available_for_change(handle: &str) -> Error {
    Error::invalid(format!(
        "Value {handle} for parameter ReceiptHandle is invalid. Reason: Message does not exist or is not available for visibility timeout change."
    ))
}

/// The condition a delete by `receipt` puts to the store ([`crate::store::Store::delete_message`]'s
/// `strict`): on a FIFO queue the handle's receive must still hold the message (token and
/// visibility); a legacy handle (no MAC, [`Issued::Legacy`]) must carry the message's
/// current token, the only thing that vouches for it (`i64::MIN`: in flight or not); a
/// signed handle of a standard queue deletes its message whatever receive it came from
/// (SQS API Reference, DeleteMessage: an old handle's request succeeds).
fn delete_condition(fifo: bool, receipt: &Receipt, issued: Issued, now: i64) -> Option<(i64, i64)> {
    match (fifo, issued) {
        (true, _) => Some((receipt.token, now)),
        (false, Issued::Legacy) => Some((receipt.token, i64::MIN)),
        (false, Issued::Signed) => None,
    }
}

/// The answer to a delete by `handle` that ended in `outcome`. A signed handle whose
/// message is gone succeeds, as on AWS; a FIFO receive that no longer holds its message has
/// expired. A legacy handle that does not hold its message is not a valid handle, whether
/// or not the message exists, so the answer tells nothing of other messages.
fn delete_answer(handle: &str, issued: Issued, outcome: DeleteOutcome) -> Result<()> {
    match (issued, outcome) {
        (_, DeleteOutcome::Deleted) => Ok(()),
        (Issued::Legacy, _) => Err(invalid_handle(handle)),
        (Issued::Signed, DeleteOutcome::Stale) => Err(expired_handle(handle)),
        (Issued::Signed, DeleteOutcome::NotFound) => Ok(()),
    }
}

fn not_for_queue_type(name: &str, value: &str) -> Error {
    Error::invalid(format!(
        "Value {value} for parameter {name} is invalid. Reason: The request include parameter that is not valid for this queue type."
    ))
}

impl Sqs {
    /// Validates one message against the queue and builds what the store keeps.
    /// `in_batch` changes the error for a missing MessageGroupId, as AWS does.
    fn build_message(
        &self,
        config: &QueueConfig,
        m: SendMessage,
        seed_id: bool,
        in_batch: bool,
        now: i64,
    ) -> Result<(NewMessage, SendResult)> {
        let mut dedup = None;
        if config.fifo {
            // FIFO queues take no per-message delay; 0 is accepted as "none" (the queue's
            // DelaySeconds then applies), as AWS accepts it.
            if let Some(d) = m.delay_seconds.filter(|d| *d != 0) {
                return Err(not_for_queue_type("DelaySeconds", &d.to_string()));
            }
            let Some(group) = m.group_id.as_deref() else {
                return Err(if in_batch {
                    Error::invalid("The request must contain the parameter MessageGroupId.")
                } else {
                    Error::missing("MessageGroupId")
                });
            };
            check_fifo_id("MessageGroupId", group)?;
            let id = match m.dedup_id.as_deref() {
                Some(d) => {
                    check_fifo_id("MessageDeduplicationId", d)?;
                    d.to_owned()
                }
                None if config.content_based_deduplication => {
                    hex::encode(<sha2::Sha256 as sha2::Digest>::digest(m.body.as_bytes()))
                }
                None => {
                    return Err(Error::invalid(
                        "The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly",
                    ))
                }
            };
            dedup = Some(DedupKey {
                scope: if config.dedup_per_group {
                    group.to_owned()
                } else {
                    String::new()
                },
                id,
                expires_at_ms: now + DEDUP_WINDOW_MS,
            });
        } else {
            if let Some(d) = &m.dedup_id {
                return Err(not_for_queue_type("MessageDeduplicationId", d));
            }
            if let Some(g) = &m.group_id {
                check_fifo_id("MessageGroupId", g)?;
            }
        }
        message::validate_body(&m.body)?;
        message::validate_attributes(&m.message_attributes)?;
        for (name, v) in &m.system_attributes {
            if name != "AWSTraceHeader" || v.base_type() != "String" {
                return Err(Error::invalid(format!(
                    "Message system attribute name '{name}' is invalid."
                )));
            }
            // The characters SQS stores (as for a user attribute's value, whose words
            // these are; AWS's for a system attribute are not recorded).
            if !message::valid_characters(&v.data_type)
                || v.string_value
                    .as_deref()
                    .is_some_and(|s| !message::valid_characters(s))
            {
                return Err(Error::invalid(format!(
                    "Message system attribute '{name}' value contains invalid characters."
                )));
            }
        }
        let size = m.body.len() + message::attributes_size(&m.message_attributes);
        if size > config.maximum_message_size as usize {
            // AWS's words differ by operation: SendMessage's refusal says "are invalid",
            // a SendMessageBatch entry's "cannot be validated" (both recorded:
            // `test_send_message_with_updated_maximum_message_size`, `test_send_batch_message_size`).
            let verdict = if in_batch {
                "cannot be validated"
            } else {
                "are invalid"
            };
            return Err(Error::invalid(format!(
                "One or more parameters {verdict}. Reason: Message must be shorter than {} bytes.",
                config.maximum_message_size
            )));
        }
        let delay = match m.delay_seconds.filter(|_| !config.fifo) {
            Some(d) => {
                check_range("DelaySeconds", d, 0, 900)?;
                d
            }
            None => config.delay_seconds as i64,
        };
        let md5_body = message::md5_hex(m.body.as_bytes());
        let result = SendResult {
            message_id: String::new(),
            md5_body: md5_body.clone(),
            md5_attributes: message::md5_of_attributes(&m.message_attributes),
            md5_system_attributes: message::md5_of_attributes(&m.system_attributes),
            sequence_number: None,
        };
        let new = NewMessage {
            message_id: if seed_id {
                None
            } else {
                Some(uuid::Uuid::new_v4().to_string())
            },
            md5_body,
            message_attributes: message::encode_attributes(&m.message_attributes),
            system_attributes: message::encode_attributes(&m.system_attributes),
            sender_id: m
                .sender_id
                .clone()
                .unwrap_or_else(|| self.config.account_id.clone()),
            sent_at_ms: now,
            visible_at_ms: now + delay * 1000,
            expires_at_ms: now + config.retention_seconds as i64 * 1000,
            group_id: m.group_id,
            receive_count: 0,
            first_received_at_ms: None,
            dead_letter_source: None,
            dedup_id: dedup.as_ref().map(|d| d.id.clone()),
            dedup,
            seal: config.seal_at(now),
            body: m.body,
        };
        Ok((new, result))
    }

    /// SendMessage. Errors: `QueueDoesNotExist`, `MissingParameter` (empty body),
    /// `InvalidMessageContents`, `InvalidParameterValue` (size, delay, attributes),
    /// `RequestThrottled` (a FIFO queue's throughput quota, [`crate::service::core::quotas`]).
    pub async fn send_message(&self, queue_name: &str, m: SendMessage) -> Result<SendResult> {
        let queue = self.queue(queue_name).await?;
        self.charge_fifo_quota(&queue, QuotaAction::Send, [m.group_id.as_deref()])?;
        let mut results = self.send_batch_to(&queue, vec![m], false, false).await?;
        results
            .pop()
            .unwrap_or_else(|| Err(Error::internal("empty send result")))
    }

    /// SendMessageBatch: each entry succeeds or fails on its own; the valid ones are stored
    /// in one transaction. Errors for the whole call: `QueueDoesNotExist`,
    /// `BatchRequestTooLong` (entries together over MaximumMessageSize), `RequestThrottled`
    /// (a FIFO queue's throughput quota: the batch is one transaction, [`crate::service::core::quotas`]).
    pub async fn send_message_batch(
        &self,
        queue_name: &str,
        entries: Vec<SendMessage>,
    ) -> Result<Vec<Result<SendResult>>> {
        let queue = self.queue(queue_name).await?;
        self.charge_fifo_quota(
            &queue,
            QuotaAction::Send,
            entries.iter().map(|e| e.group_id.as_deref()),
        )?;
        let config = QueueConfig::from_attributes(&queue.attributes);
        let total: usize = entries
            .iter()
            .map(|e| e.body.len() + message::attributes_size(&e.message_attributes))
            .sum();
        // On a FIFO queue an entry without MessageGroupId, or without a deduplication id
        // when the queue has no content-based deduplication, refuses the whole batch
        // (AWS's recorded answers), not just that entry.
        if config.fifo {
            if entries.iter().any(|e| e.group_id.is_none()) {
                return Err(Error::invalid(
                    "The request must contain the parameter MessageGroupId.",
                ));
            }
            if !config.content_based_deduplication && entries.iter().any(|e| e.dedup_id.is_none()) {
                return Err(Error::invalid(
                    "The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly",
                ));
            }
        }
        if total > MAX_BATCH_BYTES {
            return Err(Error::new(
                ErrorCode::BatchRequestTooLong,
                format!(
                    "Batch requests cannot be longer than {MAX_BATCH_BYTES} bytes. You have sent {total} bytes."
                ),
            ));
        }
        self.send_batch_to(&queue, entries, false, true).await
    }

    /// The seeds' `POST /queues/{name}/messages`: creates the queue with defaults when
    /// missing, stores `body` with a `msg-N` id. Errors: `InvalidParameterValue` (name),
    /// `MissingParameter` (empty body), `InvalidMessageContents`.
    pub async fn send_seed(&self, queue_name: &str, body: String) -> Result<String> {
        let queue = match self.find_queue(queue_name).await? {
            Some(q) => q,
            // The name rule is a creation rule: an existing queue is reached by its key, as
            // receive and delete reach it (another account's `ACCOUNT/NAME` included).
            None => {
                crate::names::check_queue_name(queue_name, crate::names::Naming::Seed)?;
                Arc::new(
                    self.store_create_queue(queue_name, BTreeMap::new(), BTreeMap::new())
                        .await?
                        .0,
                )
            }
        };
        let m = SendMessage {
            body,
            ..SendMessage::default()
        };
        let mut results = self.send_batch_to(&queue, vec![m], true, false).await?;
        let result = results
            .pop()
            .unwrap_or_else(|| Err(Error::internal("empty send result")))?;
        Ok(result.message_id)
    }

    async fn send_batch_to(
        &self,
        queue: &QueueRecord,
        entries: Vec<SendMessage>,
        seed_ids: bool,
        in_batch: bool,
    ) -> Result<Vec<Result<SendResult>>> {
        let config = QueueConfig::from_attributes(&queue.attributes);
        let now = self.now_ms();
        let mut results: Vec<Result<SendResult>> = Vec::with_capacity(entries.len());
        let mut to_store = Vec::new();
        let mut slots = Vec::new();
        for entry in entries {
            match self.build_message(&config, entry, seed_ids, in_batch, now) {
                Ok((new, result)) => {
                    slots.push(results.len());
                    results.push(Ok(result));
                    to_store.push((queue.id, new));
                }
                Err(e) => results.push(Err(e)),
            }
        }
        if to_store.is_empty() {
            return Ok(results);
        }
        let stored = self.store.send_messages(to_store).await?;
        let new = stored.iter().filter(|s| !s.duplicate).count();
        self.activity.sent(&queue.name, new as u64);
        for (slot, sent) in slots.into_iter().zip(stored) {
            if let Ok(r) = &mut results[slot] {
                r.message_id = message_id_of(sent.message_id, sent.seq);
                if config.fifo {
                    let offset = self.receipt_key.sequence_offset(queue.id);
                    r.sequence_number =
                        Some(message_sequence_number(offset, sent.sequence, sent.seq));
                }
            }
        }
        self.wake(queue.id);
        Ok(results)
    }

    /// ReceiveMessage: claims up to MaxNumberOfMessages visible messages, hiding each for
    /// the visibility timeout; waits up to WaitTimeSeconds for one to arrive, woken
    /// in-process by sends and by the next hidden message's expiry. Messages past the
    /// queue's maxReceiveCount move to its dead-letter queue instead.
    ///
    /// The in-flight limit ([`crate::service::core::limits::Limits`]) caps how many messages a receive takes; at
    /// the limit a standard queue answers `OverLimit` and a FIFO queue returns nothing.
    ///
    /// Errors: `QueueDoesNotExist`, `InvalidParameterValue` (ranges), `OverLimit`,
    /// `RequestThrottled` (a FIFO queue's throughput quota, counted once per request
    /// however long it waits, [`crate::service::core::quotas`]).
    pub async fn receive_message(
        &self,
        queue_name: &str,
        r: ReceiveMessage,
    ) -> Result<Vec<ReceivedMessage>> {
        self.receive_message_until(queue_name, &r, std::future::pending())
            .await
    }

    /// [`Sqs::receive_message`] for a client that may go away: when `gone` resolves
    /// during the wait (the client's connection closed or reset), the wait ends with no
    /// messages, so none is made invisible for a client that cannot read it and the
    /// request's connection is freed at once rather than at the end of WaitTimeSeconds.
    /// `gone` is not looked at before the first look at the queue: messages already
    /// visible are handed out as to any request.
    ///
    /// `r` is borrowed, not moved in: a long poll's caller keeps it, and a copy in each
    /// future down the wait would be held for all of it (memory per waiting long poll:
    /// BENCHMARKS.md, long polls).
    ///
    /// Errors: those of [`Sqs::receive_message`].
    pub async fn receive_message_until(
        &self,
        queue_name: &str,
        r: &ReceiveMessage,
        gone: impl std::future::Future<Output = ()> + Send,
    ) -> Result<Vec<ReceivedMessage>> {
        let queue = self.queue(queue_name).await?;
        self.charge_fifo_quota(&queue, QuotaAction::Receive, [])?;
        self.receive_in(&queue, r, false, gone).await
    }

    /// The seeds' `GET /queues/{name}/messages`: the oldest visible message or `None`
    /// (also when the queue does not exist).
    ///
    /// Errors: `InvalidParameterValue` for out-of-range visibility or wait, or a name no
    /// queue of the seeds' API can have.
    pub async fn receive_seed(
        &self,
        queue_name: &str,
        visibility_timeout: Option<i64>,
        wait_seconds: Option<i64>,
    ) -> Result<Option<ReceivedMessage>> {
        self.receive_seed_until(
            queue_name,
            visibility_timeout,
            wait_seconds,
            std::future::pending(),
        )
        .await
    }

    /// [`Sqs::receive_seed`] whose wait ends early, with `None`, when `gone`
    /// resolves (the client went away; see [`Sqs::receive_message_until`]).
    ///
    /// Errors: those of [`Sqs::receive_seed`].
    pub async fn receive_seed_until(
        &self,
        queue_name: &str,
        visibility_timeout: Option<i64>,
        wait_seconds: Option<i64>,
        gone: impl std::future::Future<Output = ()> + Send,
    ) -> Result<Option<ReceivedMessage>> {
        if let Some(v) = visibility_timeout {
            check_range("visibility_timeout", v, 0, 43_200)?;
        }
        let wait = wait_seconds.unwrap_or(0);
        check_range("wait_seconds", wait, 0, 20)?;
        let queue = match self.store.get_queue(queue_name).await? {
            Some(q) => q,
            // A name no queue can have is refused, as a send to it is. (A `.fifo` name
            // may yet be created through SQS: it reads as an empty queue.)
            None if queue_name.ends_with(".fifo") && wait == 0 => return Ok(None),
            None if wait == 0 => {
                crate::names::check_queue_name(queue_name, crate::names::Naming::Seed)?;
                return Ok(None);
            }
            // A long poll on a queue nobody created yet waits for the send that creates it,
            // as a seed worker polling `jobs` before any producer expects.
            None => {
                crate::names::check_queue_name(queue_name, crate::names::Naming::Seed)?;
                self.store_create_queue(queue_name, BTreeMap::new(), BTreeMap::new())
                    .await?
                    .0
            }
        };
        let r = ReceiveMessage {
            max_messages: Some(1),
            visibility_timeout,
            wait_seconds: Some(wait),
            ..ReceiveMessage::default()
        };
        Ok(self.receive_in(&queue, &r, true, gone).await?.pop())
    }

    /// Receives from `queue`; `send_order` hands out the oldest sent visible message first
    /// (the seeds' rule) rather than the one visible longest (SQS's best effort, cheaper);
    /// a wait ends with no messages when `gone` resolves.
    pub(in crate::service) async fn receive_in(
        &self,
        queue: &QueueRecord,
        r: &ReceiveMessage,
        send_order: bool,
        gone: impl std::future::Future<Output = ()> + Send,
    ) -> Result<Vec<ReceivedMessage>> {
        tokio::pin!(gone);
        let config = QueueConfig::from_attributes(&queue.attributes);
        let max = r.max_messages.unwrap_or(1);
        check_range("MaxNumberOfMessages", max, 1, 10)?;
        let visibility = r
            .visibility_timeout
            .unwrap_or(config.visibility_timeout as i64);
        check_range("VisibilityTimeout", visibility, 0, 43_200)?;
        let wait = r.wait_seconds.unwrap_or(config.receive_wait_seconds as i64);
        if !(0..=20).contains(&wait) {
            // AWS words this range unlike the others.
            return Err(Error::invalid(format!(
                "Value {wait} for parameter WaitTimeSeconds is invalid. Reason: Must be >= 0 and <= 20, if provided."
            )));
        }
        let redrive = match &config.redrive_policy {
            Some(p) => self
                .find_queue(&self.dlq_key(p))
                .await?
                // A policy naming the queue itself (SQS accepts one: LocalStack's
                // AWS-validated `test_set_empty_redrive_policy` sets it) moves nothing:
                // moving a message into the queue it is in would make it visible and move
                // it again for ever. Messages stay and are received again.
                .filter(|dlq| dlq.id != queue.id)
                .map(|dlq| RedriveRule {
                    dlq_queue_id: dlq.id,
                    moves_at_receive_count: p.max_receive_count,
                    source_arn: self.queue_arn(&queue.name),
                    // SQS Developer Guide, "Configuring a dead-letter queue redrive": moved
                    // from a FIFO queue, "the original message's deduplication ID will be
                    // replaced with the original message's ID".
                    dedup_id_from_message_id: config.fifo,
                }),
            None => None,
        };
        // A FIFO retry with the same ReceiveRequestAttemptId inside the window returns the
        // same messages and restarts their visibility timeout (ReceiveMessage,
        // ReceiveRequestAttemptId); the store keeps the attempt with the receive, so a retry
        // through another node or after a restart finds it too.
        let attempt = match (&r.attempt_id, config.fifo) {
            (Some(id), true) => {
                check_fifo_id("ReceiveRequestAttemptId", id)?;
                Some(id.clone())
            }
            _ => None,
        };
        let deadline = tokio::time::Instant::now() + Duration::from_secs(wait as u64);
        let notify = self.waiter(queue.id);
        loop {
            let notified = notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let stopping = self.shutdown_notify.notified();
            tokio::pin!(stopping);
            stopping.as_mut().enable();
            let now = self.now_ms();
            // The in-flight limit: a standard queue at it answers OverLimit; a FIFO queue
            // receives nothing and looks again after a recount interval (a retry of a
            // recorded attempt is still answered: it takes no new message).
            let room = self
                .in_flight_room(queue.id, config.fifo, max as u32)
                .await?;
            let take = match room {
                crate::service::core::limits::Room::Messages(take) => Some(take),
                crate::service::core::limits::Room::Full if attempt.is_some() => Some(0),
                crate::service::core::limits::Room::Full => None,
            };
            let outcome = match take {
                Some(take) => {
                    let outcome = self
                        .store
                        .receive(ReceiveRequest {
                            queue_id: queue.id,
                            max_messages: take,
                            now_ms: now,
                            visibility_ms: visibility * 1000,
                            receipt_tokens: receipt_tokens(take as usize),
                            redrive: redrive.clone(),
                            fifo: config.fifo,
                            send_order,
                            attempt: attempt.as_ref().map(|id| ReceiveAttempt {
                                id: id.clone(),
                                expires_at_ms: now + (visibility * 1000).min(DEDUP_WINDOW_MS),
                            }),
                        })
                        .await?;
                    if !outcome.replayed {
                        self.note_received(queue.id, outcome.messages.len());
                    }
                    outcome
                }
                None => ReceiveOutcome {
                    next_visible_at_ms: Some(
                        now + crate::service::core::limits::RECOUNT_INTERVAL.as_millis() as i64,
                    ),
                    ..ReceiveOutcome::default()
                },
            };
            for id in &outcome.undecryptable {
                tracing::error!(
                    queue = %queue.name,
                    message_id = %id,
                    "a stored message cannot be decrypted with this master key (another key, or damaged bytes): left in the queue, not received"
                );
            }
            self.activity
                .undecryptable(&queue.name, outcome.undecryptable.len() as u64);
            if outcome.dead_lettered > 0 {
                self.activity
                    .dead_lettered(&queue.name, outcome.dead_lettered);
                if let Some(rule) = &redrive {
                    self.wake(rule.dlq_queue_id);
                }
            }
            let at_deadline = tokio::time::Instant::now() >= deadline || self.is_shutting_down();
            if !outcome.messages.is_empty() || outcome.replayed || at_deadline {
                if !outcome.replayed {
                    self.activity
                        .received(&queue.name, outcome.messages.len() as u64);
                }
                return Ok(outcome
                    .messages
                    .into_iter()
                    .map(|m| self.to_received(m, r, config.fifo))
                    .collect());
            }
            let mut wake_at = deadline;
            if let Some(next) = outcome.next_visible_at_ms {
                let in_ms = (next - now).max(1) as u64;
                wake_at = wake_at.min(tokio::time::Instant::now() + Duration::from_millis(in_ms));
            }
            tokio::select! {
                _ = &mut notified => {}
                _ = &mut stopping => {}
                _ = tokio::time::sleep_until(wake_at) => {}
                // The client cannot read an answer: take nothing for it.
                _ = &mut gone => return Ok(Vec::new()),
            }
        }
    }

    fn to_received(&self, m: StoredMessage, r: &ReceiveMessage, fifo: bool) -> ReceivedMessage {
        let all_attrs = message::decode_attributes(m.message_attributes.as_deref());
        let selected = message::select_attributes(&all_attrs, &r.message_attribute_names);
        let wants = |n: &str| {
            r.system_attribute_names
                .iter()
                .any(|w| w == "All" || w == n)
        };
        let trace_header = m.system_attributes.as_deref().and_then(|a| {
            message::decode_attributes(Some(a))
                .remove("AWSTraceHeader")
                .and_then(|v| v.string_value)
        });
        let mut attributes = BTreeMap::new();
        for name in SYSTEM_ATTRIBUTES {
            if !wants(name) {
                continue;
            }
            let value = match *name {
                "ApproximateFirstReceiveTimestamp" => m.first_received_at_ms.map(|t| t.to_string()),
                "ApproximateReceiveCount" => Some(m.receive_count.to_string()),
                "AWSTraceHeader" => trace_header.clone(),
                "DeadLetterQueueSourceArn" => m.dead_letter_source.clone(),
                "MessageDeduplicationId" => m.dedup_id.clone(),
                "MessageGroupId" => m.group_id.clone(),
                "SenderId" => Some(m.sender_id.clone()),
                "SentTimestamp" => Some(m.sent_at_ms.to_string()),
                "SequenceNumber" if fifo => Some(message_sequence_number(
                    self.receipt_key.sequence_offset(m.queue_id),
                    m.sequence,
                    m.seq,
                )),
                _ => None,
            };
            if let Some(v) = value {
                attributes.insert((*name).to_owned(), v);
            }
        }
        ReceivedMessage {
            receipt_handle: Receipt {
                queue_id: m.queue_id,
                seq: m.seq,
                token: m.receipt_token,
            }
            .encode(&self.receipt_key),
            md5_message_attributes: message::md5_of_attributes(&selected),
            message_attributes: selected,
            message_id: message_id_of(m.message_id, m.seq),
            body: m.body,
            md5_body: m.md5_body,
            attributes,
            receive_count: m.receive_count,
            trace_header,
        }
    }

    /// Decodes a receipt handle (its MAC verified under the store's key, or a legacy one,
    /// [`super::receipt`]) and checks it belongs to `queue`.
    ///
    /// Errors: `MissingParameter` (empty), `ReceiptHandleIsInvalid` (not Loft's, or another
    /// queue's).
    fn receipt_for(&self, queue: &QueueRecord, handle: &str) -> Result<(Receipt, Issued)> {
        if handle.is_empty() {
            return Err(Error::missing("ReceiptHandle"));
        }
        let (receipt, issued) = Receipt::decode(handle, &self.receipt_key)?;
        if receipt.queue_id != queue.id {
            return Err(invalid_handle(handle));
        }
        Ok((receipt, issued))
    }

    /// DeleteMessage: deleting an already deleted message succeeds, as on AWS; on a standard
    /// queue a stale handle of the same message still deletes it. A handle Loft did not
    /// sign is `ReceiptHandleIsInvalid`; a legacy (unsigned) one only deletes while it is
    /// its message's current receive ([`super::receipt`]).
    ///
    /// Errors: `QueueDoesNotExist`, `ReceiptHandleIsInvalid`, `RequestThrottled` (a FIFO
    /// queue's throughput quota, [`crate::service::core::quotas`]).
    pub async fn delete_message(&self, queue_name: &str, handle: &str) -> Result<()> {
        let queue = self.queue(queue_name).await?;
        self.charge_fifo_quota(&queue, QuotaAction::Delete, [])?;
        self.delete_in(&queue, handle).await
    }

    /// Deletes by receipt handle. On a FIFO queue the handle must be the message's current
    /// one and the message still in flight (AWS rejects handles of expired receives); see
    /// `delete_condition` and `delete_answer` for the rest.
    pub(in crate::service) async fn delete_in(
        &self,
        queue: &QueueRecord,
        handle: &str,
    ) -> Result<()> {
        let (receipt, issued) = self.receipt_for(queue, handle)?;
        let fifo = QueueConfig::from_attributes(&queue.attributes).fifo;
        let strict = delete_condition(fifo, &receipt, issued, self.now_ms());
        let outcome = self
            .store
            .delete_message(queue.id, receipt.seq, strict)
            .await?;
        if outcome == DeleteOutcome::Deleted {
            self.activity.deleted(&queue.name, 1);
            // Deleting a FIFO message may open its group: wake long polls waiting on it.
            if fifo {
                self.wake(queue.id);
            }
        }
        delete_answer(handle, issued, outcome)
    }

    /// DeleteMessageBatch: each handle succeeds or fails on its own.
    /// Errors for the whole call: `QueueDoesNotExist`, `RequestThrottled` (a FIFO queue's
    /// throughput quota: the batch is one transaction, [`crate::service::core::quotas`]).
    pub async fn delete_message_batch(
        &self,
        queue_name: &str,
        handles: &[String],
    ) -> Result<Vec<Result<()>>> {
        let queue = self.queue(queue_name).await?;
        self.charge_fifo_quota(&queue, QuotaAction::Delete, [])?;
        let mut out = Vec::with_capacity(handles.len());
        let fifo = QueueConfig::from_attributes(&queue.attributes).fifo;
        let now = self.now_ms();
        let mut slots = Vec::new();
        let mut items = Vec::new();
        for h in handles {
            match self.receipt_for(&queue, h) {
                Ok((receipt, issued)) => {
                    slots.push(Some((items.len(), issued)));
                    items.push((receipt.seq, delete_condition(fifo, &receipt, issued, now)));
                }
                Err(e) => {
                    slots.push(None);
                    out.push(Err(e));
                }
            }
        }
        let outcomes = self.store.delete_messages(queue.id, items).await?;
        let deleted = outcomes
            .iter()
            .filter(|o| **o == DeleteOutcome::Deleted)
            .count() as u64;
        if deleted > 0 {
            self.activity.deleted(&queue.name, deleted);
        }
        let mut errors = out.into_iter();
        let mut out = Vec::with_capacity(handles.len());
        for (h, slot) in handles.iter().zip(slots) {
            out.push(match slot {
                None => errors.next().unwrap_or(Ok(())),
                Some((i, issued)) => match outcomes.get(i) {
                    Some(outcome) => delete_answer(h, issued, *outcome),
                    None => Err(Error::internal("a batch delete answered fewer outcomes")),
                },
            });
        }
        if fifo && outcomes.contains(&DeleteOutcome::Deleted) {
            self.wake(queue.id);
        }
        Ok(out)
    }

    /// The seeds' `DELETE /queues/{name}/messages/{id}`: deletes by MessageId; succeeds
    /// whether or not the message (or queue) exists.
    pub async fn delete_seed(&self, queue_name: &str, id: &str) -> Result<()> {
        if let Some(queue) = self.find_queue(queue_name).await? {
            let deleted = match seed_sequence(id) {
                Some(seq) => self.store.delete_unnamed_message(queue.id, seq).await?,
                None => self.store.delete_message_by_id(queue.id, id).await?,
            };
            if deleted {
                self.activity.deleted(&queue.name, 1);
            }
        }
        Ok(())
    }

    /// ChangeMessageVisibility: the message becomes visible `visibility_timeout` seconds
    /// from now (0 makes it visible at once). On a FIFO queue only the handle of the
    /// message's latest receive changes it; on a standard queue any handle Loft issued for
    /// the message does (AWS's recorded answer), a legacy one only if it is the latest.
    ///
    /// Errors: `QueueDoesNotExist`, `ReceiptHandleIsInvalid` (a handle Loft did not sign,
    /// or a legacy one that is not its message's latest receive), `InvalidParameterValue`
    /// (range; the message was deleted: "Message does not exist or
    /// is not available for visibility timeout change", or on a FIFO queue "The receipt
    /// handle has expired"), `MessageNotInflight`.
    pub async fn change_visibility(
        &self,
        queue_name: &str,
        handle: &str,
        visibility_timeout: i64,
    ) -> Result<()> {
        let queue = self.queue(queue_name).await?;
        self.change_visibility_in(&queue, handle, visibility_timeout)
            .await
    }

    pub(in crate::service) async fn change_visibility_in(
        &self,
        queue: &QueueRecord,
        handle: &str,
        visibility_timeout: i64,
    ) -> Result<()> {
        let (receipt, issued) = self.receipt_for(queue, handle)?;
        check_range("VisibilityTimeout", visibility_timeout, 0, 43_200)?;
        let now = self.now_ms();
        let fifo = QueueConfig::from_attributes(&queue.attributes).fifo;
        // On a standard queue a genuine (signed) handle of an earlier receive still changes
        // the message's visibility: AWS's recorded answer (LocalStack's aws.validated
        // `test_terminate_visibility_timeout_after_receive`: a handle from a receive with
        // VisibilityTimeout 0, then a second receive, then ChangeMessageVisibility(0) with
        // the first handle succeeds). A FIFO handle and a legacy handle must be current.
        let token = (fifo || issued == Issued::Legacy).then_some(receipt.token);
        let change = self
            .store
            .change_visibility(
                queue.id,
                receipt.seq,
                token,
                now,
                now + visibility_timeout * 1000,
                MAX_HIDDEN_MS,
            )
            .await?;
        // A legacy handle is vouched for by its token alone: one that does not hold its
        // message is no valid handle, whether or not the message exists.
        if issued == Issued::Legacy
            && matches!(change, VisibilityChange::Stale | VisibilityChange::NotFound)
        {
            return Err(invalid_handle(handle));
        }
        match change {
            VisibilityChange::Stale if fifo => Err(expired_handle(handle)),
            VisibilityChange::Stale => Err(not_available_for_change(handle)),
            VisibilityChange::TooLong => Err(Error::invalid(format!(
                "Value {visibility_timeout} for parameter VisibilityTimeout is invalid. Reason: Total VisibilityTimeout for the message is beyond the limit [43200 seconds]"
            ))),
            VisibilityChange::Changed => {
                if visibility_timeout == 0 {
                    self.wake(queue.id);
                }
                Ok(())
            }
            VisibilityChange::NotFound => Err(not_available_for_change(handle)),
            VisibilityChange::NotInflight => Err(Error::new(
                ErrorCode::MessageNotInflight,
                "The message referred to isn't in flight.",
            )),
        }
    }

    /// ChangeMessageVisibilityBatch: each entry succeeds or fails on its own.
    /// Errors for the whole call: `QueueDoesNotExist`.
    pub async fn change_visibility_batch(
        &self,
        queue_name: &str,
        entries: &[(String, i64)],
    ) -> Result<Vec<Result<()>>> {
        let queue = self.queue(queue_name).await?;
        let mut out = Vec::with_capacity(entries.len());
        for (handle, vt) in entries {
            out.push(self.change_visibility_in(&queue, handle, *vt).await);
        }
        Ok(out)
    }

    /// PurgeQueue: deletes every message. The time of the purge is recorded with it in the
    /// store, so the 60-second rule holds across nodes and restarts.
    ///
    /// Errors: `QueueDoesNotExist`, `PurgeQueueInProgress` (another purge of this queue in
    /// the last 60 s, SQS API Reference, PurgeQueue).
    pub async fn purge_queue(&self, queue_name: &str) -> Result<()> {
        let queue = self.queue(queue_name).await?;
        let now = self.now_ms();
        match self
            .store
            .purge_queue(queue.id, now, now + PURGE_HOLD_MS)
            .await?
        {
            PurgeOutcome::Purged(_) => Ok(()),
            PurgeOutcome::InProgress => Err(Error::new(
                ErrorCode::PurgeQueueInProgress,
                // The queue's name, as the caller knows it, not its store key.
                format!(
                    "Only one PurgeQueue operation on {} is allowed every 60 seconds.",
                    self.split_key(&queue.name).1
                ),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_queues_sequence_numbers_grow_above_the_older_ones_and_a_topics() {
        let offset = (1u64 << 40) - 1;
        let n = |sequence| {
            message_sequence_number(offset, Some(sequence), 0)
                .parse::<u128>()
                .unwrap()
        };
        assert!(
            n(1) < n(2) && n(2) < n(1 << 50),
            "growing with the queue's counter"
        );
        for s in [n(0), n(1 << 50)] {
            assert_eq!(s.to_string().len(), 20, "20 digits");
        }
        // Above every number of a message stored before (its store sequence, below 2^60)
        // and every SNS FIFO topic's (10^19 + its count).
        let older: u128 = message_sequence_number(offset, None, (1 << 59) + 3)
            .parse()
            .unwrap();
        assert!(older < n(0));
        assert!(sequence_number(1 << 59).parse::<u128>().unwrap() < n(0));
    }
}
