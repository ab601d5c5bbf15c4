//! Queue lifecycle: create (AWS's and the seeds' rules), list, delete, attributes, tags,
//! permissions, dead-letter sources.
//!
//! Sources: SQS API Reference (CreateQueue, ListQueues, GetQueueAttributes,
//! SetQueueAttributes, TagQueue, AddPermission, ListDeadLetterSourceQueues) and
//! `chapter-41-sqs.md` "Queue CRUD".

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::Sqs;
use crate::attributes::{self, QueueConfig, RedrivePolicy};
use crate::error::{Error, ErrorCode, Result};
use crate::model::QueueRecord;
use crate::names::{self, Naming};

type Map = BTreeMap<String, String>;

/// The SQS actions AddPermission may grant (besides `*`).
pub const SQS_ACTIONS: &[&str] = &[
    "ChangeMessageVisibility",
    "ChangeMessageVisibilityBatch",
    "DeleteMessage",
    "DeleteMessageBatch",
    "GetQueueAttributes",
    "GetQueueUrl",
    "ListDeadLetterSourceQueues",
    "ListQueueTags",
    "PurgeQueue",
    "ReceiveMessage",
    "SendMessage",
    "SendMessageBatch",
    "CancelMessageMoveTask",
    "ListMessageMoveTasks",
    "StartMessageMoveTask",
];

/// A queue attribute Loft keeps for the seeds' API (never listed among AWS's attributes):
/// the `max_receive_count` a seed queue was created with when it has no dead-letter queue.
pub const SEED_MAX_RECEIVE_COUNT: &str = "LoftSeedMaxReceiveCount";

/// The seeds' view of a queue (`POST /queues/{name}` response).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeedQueue {
    /// Queue name.
    pub name: String,
    /// Dead-letter queue name, empty when none.
    pub dead_letter_queue: String,
    /// Receives before a move to the dead-letter queue.
    pub max_receive_count: i64,
    /// Visibility timeout, seconds.
    pub visibility_timeout: u32,
}

/// One page of ListQueues.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListQueuesPage {
    /// The queues of this page, by name.
    pub queues: Vec<QueueRecord>,
    /// Token for the next page, when there is one.
    pub next_token: Option<String>,
}

/// Which listing a queue page's NextToken belongs to: a token of one is refused by the
/// other.
#[derive(Debug, Clone, Copy)]
enum QueueListing {
    /// ListQueues.
    Queues,
    /// ListDeadLetterSourceQueues.
    DeadLetterSources,
}

impl QueueListing {
    /// The listing's name, sealed into its tokens as additional data.
    fn name(self) -> &'static str {
        match self {
            QueueListing::Queues => "sqs ListQueues",
            QueueListing::DeadLetterSources => "sqs ListDeadLetterSourceQueues",
        }
    }
}

/// One page of queues (already in name order) after `next_token`, a token an earlier page
/// of the same `listing` gave: the last name of that page sealed under the database's
/// key ([`ReceiptKey::seal_name`](super::receipt::ReceiptKey::seal_name)); at most
/// `max_results` (1..=1000), else `default_limit`; a token for the next page only when
/// `max_results` was given.
///
/// A token Loft never gave (made up, edited, another listing's or another database's) is
/// refused rather than read as a place in the list: the API Reference's NextToken is
/// "Pagination token to request the next set of results", so only a token a page gave
/// names one; answering an empty or arbitrary page would pass a client's mistake off as
/// the end of the list. AWS's refusal of such a token is not recorded; the code is SQS's
/// for a bad parameter value and the words are Loft's.
///
/// Errors: `InvalidParameterValue` for MaxResults out of range or a token no page gave.
fn page_queues(
    key: &super::receipt::ReceiptKey,
    listing: QueueListing,
    queues: Vec<QueueRecord>,
    max_results: Option<i64>,
    next_token: Option<&str>,
    default_limit: usize,
) -> Result<ListQueuesPage> {
    if let Some(m) = max_results {
        if !(1..=1000).contains(&m) {
            return Err(Error::invalid(
                "Value for parameter MaxResults is invalid. Reason: MaxResults must be an integer between 1 and 1000.",
            ));
        }
    }
    let after = next_token
        .map(|t| {
            key.open_name(listing.name(), t)
                .ok_or_else(|| Error::invalid("Invalid NextToken value."))
        })
        .transpose()?;
    let mut queues: Vec<QueueRecord> = queues
        .into_iter()
        .filter(|q| after.as_ref().is_none_or(|a| q.name > *a))
        .collect();
    let limit = max_results.map_or(default_limit, |m| m as usize);
    let mut next = None;
    if queues.len() > limit {
        queues.truncate(limit);
        if max_results.is_some() {
            next = queues
                .last()
                .map(|q| key.seal_name(listing.name(), &q.name));
        }
    }
    Ok(ListQueuesPage {
        queues,
        next_token: next,
    })
}

fn check_tags(tags: &Map) -> Result<()> {
    if tags.len() > 50 {
        return Err(Error::invalid("Too many tags added for queue."));
    }
    for (k, v) in tags {
        // Tags come back in ListQueueTags' XML: no character XML cannot carry.
        if k.is_empty()
            || k.len() > 128
            || v.len() > 256
            || !crate::message::valid_characters(k)
            || !crate::message::valid_characters(v)
        {
            return Err(Error::invalid(format!("Tag {k} is invalid.")));
        }
    }
    Ok(())
}

/// How long after DeleteQueue its name cannot be used again, ms (SQS API Reference,
/// DeleteQueue: "you must wait at least 60 seconds before creating a queue with the same
/// name"; CreateQueue's `QueueDeletedRecently`).
pub const RECREATE_HOLD_MS: i64 = 60_000;

impl Sqs {
    /// CreateQueue: creates `name` with `attributes` and `tags`, or returns the existing
    /// queue when every given attribute matches it.
    ///
    /// Errors: `InvalidParameterValue` (name, FIFO rules, DLQ missing or of the other kind),
    /// `InvalidAttributeName`, `InvalidAttributeValue`, `QueueNameExists` (same name,
    /// different attribute value), `OverLimit` (the queue cap).
    pub async fn create_queue(
        &self,
        name: &str,
        attributes: Map,
        tags: Map,
    ) -> Result<QueueRecord> {
        let fifo = attributes
            .get("FifoQueue")
            .is_some_and(|v| v.eq_ignore_ascii_case("true"));
        if fifo && !name.ends_with(".fifo") {
            return Err(Error::invalid(
                "The name of a FIFO queue can only include alphanumeric characters, hyphens, or underscores, must end with .fifo suffix and be 1 to 80 in length.",
            ));
        }
        if !fifo && name.ends_with(".fifo") {
            return Err(Error::invalid(
                "Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length",
            ));
        }
        names::check_queue_name(self.split_key(name).1, Naming::Aws)?;
        let mut attributes = attributes::validate(&attributes, true, fifo)?;
        attributes::validate_combination(&attributes)?;
        attributes::check_one_encryption(&attributes)?;
        if attributes
            .get("KmsMasterKeyId")
            .is_some_and(|k| !k.is_empty())
        {
            // SSE-KMS instead of SSE-SQS (see set_queue_attributes).
            attributes
                .entry("SqsManagedSseEnabled".into())
                .or_insert_with(|| "false".into());
        }
        if fifo {
            let scope = attributes
                .get("DeduplicationScope")
                .map_or("queue", String::as_str)
                .to_owned();
            attributes.insert(attributes::CREATED_DEDUPLICATION_SCOPE.into(), scope);
        }
        check_tags(&tags)?;
        // The hold is a row the delete wrote, so a delete through another node or before a
        // restart counts too.
        if self
            .store
            .queue_recreate_after(name)
            .await?
            .is_some_and(|after| self.now_ms() < after)
        {
            return Err(Error::new(
                ErrorCode::QueueDeletedRecently,
                "You must wait 60 seconds after deleting a queue before you can create another with the same name.",
            ));
        }
        self.check_redrive_target(name, &attributes, fifo).await?;
        let (queue, created) = self
            .store_create_queue(name, attributes.clone(), tags)
            .await?;
        if !created {
            for (k, v) in &attributes {
                if k == attributes::CREATED_DEDUPLICATION_SCOPE {
                    continue;
                }
                let current = queue
                    .attributes
                    .get(k)
                    .map(String::as_str)
                    .or_else(|| attributes::default_value(k))
                    .unwrap_or("");
                if current != v {
                    return Err(Error::new(
                        ErrorCode::QueueNameExists,
                        format!("A queue already exists with the same name and a different value for attribute {k}"),
                    ));
                }
            }
        }
        Ok(queue)
    }

    async fn check_redrive_target(&self, source: &str, attributes: &Map, fifo: bool) -> Result<()> {
        let Some(text) = attributes.get("RedrivePolicy").filter(|v| !v.is_empty()) else {
            return Ok(());
        };
        let policy = RedrivePolicy::parse(text)?;
        let bad = |why: &str| {
            Error::invalid(format!(
                "Value {text} for parameter RedrivePolicy is invalid. Reason: {why}"
            ))
        };
        // A dead-letter queue is in its source's account and region (SQS Developer Guide,
        // "Using dead-letter queues"): one elsewhere is not found, as AWS looks only there.
        let dlq_key = self.dlq_key(&policy);
        if self.key_scope(&dlq_key).0 != self.key_scope(source).0 {
            return Err(bad("Dead letter target does not exist."));
        }
        let Some(dlq) = self.store.get_queue(&dlq_key).await? else {
            return Err(bad("Dead letter target does not exist."));
        };
        if QueueConfig::from_attributes(&dlq.attributes).fifo != fifo {
            return Err(bad(
                "Dead-letter queue must be the same type of queue as the source queue.",
            ));
        }
        // The dead-letter queue's RedriveAllowPolicy decides which sources may use it.
        if let Some(allow) = dlq
            .attributes
            .get("RedriveAllowPolicy")
            .and_then(|p| serde_json::from_str::<Value>(p).ok())
        {
            let source_arn = self.queue_arn(source);
            let allowed = match allow.get("redrivePermission").and_then(Value::as_str) {
                Some("denyAll") => false,
                Some("byQueue") => allow
                    .get("sourceQueueArns")
                    .and_then(Value::as_array)
                    .is_some_and(|a| a.iter().any(|v| v.as_str() == Some(&source_arn))),
                _ => true,
            };
            if !allowed {
                return Err(bad(&format!(
                    "The dead-letter queue's RedriveAllowPolicy does not allow {source_arn} as a source queue."
                )));
            }
        }
        Ok(())
    }

    /// With [`crate::service::core::ServiceConfig::auto_create_queues`] on, creates queue `key` when it
    /// does not exist, before GetQueueUrl, SendMessage, SendMessageBatch or ReceiveMessage
    /// runs on it (ElasticMQ's `autoCreateQueues`): with the default attributes, FIFO when
    /// the name ends in `.fifo`, in the key's account and region, which must be
    /// `principal`'s own (another account's missing queue stays missing). A name CreateQueue
    /// would refuse creates nothing: the operation then answers `QueueDoesNotExist`, as it
    /// would without the setting. Off, or when the queue exists, nothing happens.
    ///
    /// Errors: `AccessDenied` (403) when `principal` may not `sqs:CreateQueue` it;
    /// CreateQueue's `QueueDeletedRecently` and `OverLimit`; store errors.
    pub async fn auto_create_queue(
        &self,
        principal: &crate::service::core::access::Principal,
        key: &str,
    ) -> Result<()> {
        if !self.config.auto_create_queues || self.find_queue(key).await?.is_some() {
            return Ok(());
        }
        let (owner, name) = self.split_key(key);
        if *owner != *principal.account_id {
            return Ok(());
        }
        self.authorize(
            principal,
            "sqs:CreateQueue",
            crate::service::core::access::Target::Queue(key),
        )
        .await?;
        let mut attributes = Map::new();
        if name.ends_with(".fifo") {
            attributes.insert("FifoQueue".into(), "true".into());
        }
        match self.create_queue(key, attributes, Map::new()).await {
            Ok(q) => {
                tracing::info!(queue = %q.name, "queue created on first use (auto_create_queues)");
                Ok(())
            }
            Err(e)
                if matches!(
                    e.code,
                    ErrorCode::InvalidParameterValue | ErrorCode::InvalidAttributeName
                ) =>
            {
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// The seeds' name rule for queue key `key` ([`Sqs::create_queue_seed`]): on the
    /// name of an existing queue, on the whole key of a new one.
    async fn check_seed_queue_key(&self, key: &str) -> Result<()> {
        let name = match self.find_queue(key).await? {
            Some(_) => self.split_key(key).1,
            None => key,
        };
        names::check_queue_name(name, Naming::Seed)
    }

    /// The seeds' `POST /queues/{name}`: idempotent create with an optional dead-letter
    /// queue (created too when missing), `max_receive_count` (<= 0 means 5) and
    /// `visibility_timeout` (seconds, 0..=43200, default 30). An existing queue is returned
    /// unchanged, as the seed's `ON CONFLICT DO NOTHING` does. `name` (and
    /// `dead_letter_queue`) is a store key, as the listings give it (docs/seeds-api.md:
    /// another account's `ACCOUNT/NAME`): the name rule applies to a new queue's whole key,
    /// and to an existing queue's name only (so a FIFO queue is refused as before).
    ///
    /// Errors: `InvalidParameterValue` for a bad name or visibility timeout, a
    /// `dead_letter_queue` equal to `name` or of another account or region than `name`'s, or a `max_receive_count` over 1000 with a
    /// `dead_letter_queue` (a RedrivePolicy's range).
    pub async fn create_queue_seed(
        &self,
        name: &str,
        dead_letter_queue: Option<&str>,
        max_receive_count: i64,
        visibility_timeout: Option<i64>,
    ) -> Result<SeedQueue> {
        self.check_seed_queue_key(name).await?;
        let max_receive_count = if max_receive_count <= 0 {
            5
        } else {
            max_receive_count
        };
        let mut attrs = Map::new();
        attrs.insert(SEED_MAX_RECEIVE_COUNT.into(), max_receive_count.to_string());
        if let Some(vt) = visibility_timeout {
            if !(0..=43_200).contains(&vt) {
                return Err(Error::invalid(
                    "visibility_timeout must be 0 to 43200 seconds",
                ));
            }
            attrs.insert("VisibilityTimeout".into(), vt.to_string());
        }
        if let Some(dlq) = dead_letter_queue.filter(|d| !d.is_empty()) {
            self.check_seed_queue_key(dlq).await?;
            // A dead-letter queue is of its source queue's own account and region (SQS
            // Developer Guide, "Using dead-letter queues": "must reside in the same AWS
            // account and Region"): a key of another scope would let a caller move its
            // messages into a queue it may not send to, as no dead-letter move is checked.
            if self.key_scope(dlq).0 != self.key_scope(name).0 {
                return Err(Error::invalid(
                    "dead_letter_queue must be a queue of the same account and region as the queue",
                ));
            }
            if dlq == name {
                // Moving a message to the queue it is in would count its receives for ever.
                return Err(Error::invalid(
                    "dead_letter_queue must name another queue than the queue itself",
                ));
            }
            // The receive count of a dead-letter move is a RedrivePolicy's maxReceiveCount,
            // 1 to 1000 (SQS); past that it used to be cut to 1000 without a word.
            if max_receive_count > 1000 {
                return Err(Error::invalid(
                    "max_receive_count must be 1 to 1000 with a dead_letter_queue",
                ));
            }
            // A standard queue's dead-letter queue must be standard too (CreateQueue's rule).
            let dlq_is_fifo = match self.find_queue(dlq).await? {
                Some(q) => QueueConfig::from_attributes(&q.attributes).fifo,
                None => false,
            };
            let source_is_fifo = match self.find_queue(name).await? {
                Some(q) => QueueConfig::from_attributes(&q.attributes).fifo,
                None => false,
            };
            if dlq_is_fifo != source_is_fifo {
                return Err(Error::invalid(
                    "dead_letter_queue must be the same type of queue as the source queue (standard or FIFO)",
                ));
            }
            self.store_create_queue(dlq, Map::new(), Map::new()).await?;
            // AWS's RedrivePolicy allows 1..=1000 receives.
            let policy = RedrivePolicy {
                dead_letter_target_arn: self.queue_arn(dlq),
                max_receive_count,
            };
            attrs.insert("RedrivePolicy".into(), policy.to_json());
        }
        let (queue, _) = self.store_create_queue(name, attrs, Map::new()).await?;
        let config = QueueConfig::from_attributes(&queue.attributes);
        Ok(SeedQueue {
            name: queue.name.clone(),
            dead_letter_queue: config
                .redrive_policy
                .as_ref()
                .map(|p| self.dlq_key(p))
                .unwrap_or_default(),
            max_receive_count: config.redrive_policy.as_ref().map_or_else(
                || {
                    queue
                        .attributes
                        .get(SEED_MAX_RECEIVE_COUNT)
                        .and_then(|v| v.parse().ok())
                        .unwrap_or(5)
                },
                |p| p.max_receive_count,
            ),
            visibility_timeout: config.visibility_timeout,
        })
    }

    /// Every queue of every account and region, by store key (for `/metrics`).
    pub async fn all_queues(&self) -> Result<Vec<QueueRecord>> {
        self.store.list_queues().await
    }

    /// The queues of the default account and region, by name: those the seeds' API and the
    /// console act on (`GET /queues`); other accounts' and regions' queues are theirs to see.
    ///
    /// Errors: `InternalError` when storage fails.
    pub async fn default_scope_queues(&self) -> Result<Vec<QueueRecord>> {
        // No prefix: the bare keys alone, read without other accounts' rows.
        let mut queues = self.store.list_queues_of("", true).await?;
        queues.retain(|q| names::is_default_scope_key(&q.name));
        Ok(queues)
    }

    /// The queues of `scope` (an account in a region), by store key: read from the store
    /// without other accounts' rows ([`Core::listing_of`]), so that one account's queues
    /// do not slow another's listings.
    ///
    /// Errors: `InternalError` when storage fails.
    pub async fn queues_of(&self, scope: names::Scope<'_>) -> Result<Vec<QueueRecord>> {
        let (prefix, bare) = self.listing_of(scope);
        let queues = self.store.list_queues_of(&prefix, bare).await?;
        Ok(self.in_scope(queues, scope, |q| &q.name))
    }

    /// The queues `principal` sees in Loft's own listings (the seeds' `GET /queues`, the
    /// console's `GET /_loft/queues`), by name: its own account's in its region when
    /// permissions are enforced, the default account's and region's for an open Loft
    /// ([`Sqs::default_scope_queues`]).
    ///
    /// Errors: `InternalError` when storage fails.
    pub async fn visible_queues(
        &self,
        principal: &crate::service::core::access::Principal,
    ) -> Result<Vec<QueueRecord>> {
        if !principal.enforced {
            return self.default_scope_queues().await;
        }
        self.queues_of(principal.scope()).await
    }

    /// ListQueues of the default account and region ([`Sqs::list_queues_of`]).
    ///
    /// Errors: `InvalidParameterValue` for a bad `max_results` or token.
    pub async fn list_queues(
        &self,
        prefix: Option<&str>,
        max_results: Option<i64>,
        next_token: Option<&str>,
    ) -> Result<ListQueuesPage> {
        let (account, region) = (self.config.account_id.clone(), self.config.region.clone());
        let scope = names::Scope {
            account: &account,
            region: &region,
        };
        self.list_queues_of(scope, prefix, max_results, next_token)
            .await
    }

    /// ListQueues: the queues of `scope` (an account in a region) whose name starts with
    /// `prefix`, `max_results` (1..=1000) a page. Without `max_results`, at most 1000 and
    /// no token.
    ///
    /// Errors: `InvalidParameterValue` for a bad `max_results` or token.
    pub async fn list_queues_of(
        &self,
        scope: names::Scope<'_>,
        prefix: Option<&str>,
        max_results: Option<i64>,
        next_token: Option<&str>,
    ) -> Result<ListQueuesPage> {
        if next_token.is_some() && max_results.is_none() {
            return Err(Error::invalid(
                "MaxResults is required when NextToken is given.",
            ));
        }
        let queues = self
            .queues_of(scope)
            .await?
            .into_iter()
            .filter(|q| prefix.is_none_or(|p| self.key_scope(&q.name).1.starts_with(p)))
            .collect();
        page_queues(
            &self.receipt_key,
            QueueListing::Queues,
            queues,
            max_results,
            next_token,
            1000,
        )
    }

    /// ListDeadLetterSourceQueues: the queues whose RedrivePolicy targets `name`, by name,
    /// `max_results` (1..=1000) a page; without it, all of them.
    ///
    /// Errors: `QueueDoesNotExist`, `InvalidParameterValue` (MaxResults, token).
    pub async fn list_dead_letter_sources(
        &self,
        name: &str,
        max_results: Option<i64>,
        next_token: Option<&str>,
    ) -> Result<ListQueuesPage> {
        let sources = self.dead_letter_sources(name).await?;
        page_queues(
            &self.receipt_key,
            QueueListing::DeadLetterSources,
            sources,
            max_results,
            next_token,
            usize::MAX,
        )
    }

    /// DeleteQueue: the queue and its messages. Errors: `QueueDoesNotExist`.
    pub async fn delete_queue(&self, name: &str) -> Result<()> {
        let queue = self.queue(name).await?;
        let recreate_after = self.now_ms() + RECREATE_HOLD_MS;
        if self.store.delete_queue(queue.id, recreate_after).await? {
            self.queue_deleted(&queue.name, queue.id);
        }
        self.forget_queues();
        self.wake(queue.id);
        Ok(())
    }

    /// GetQueueAttributes: `names` may hold `All` or attribute names; computed attributes
    /// (counts, timestamps in seconds, QueueArn) and defaults are filled in.
    ///
    /// Errors: `QueueDoesNotExist`, `InvalidAttributeName`.
    pub async fn get_queue_attributes(&self, name: &str, names: &[String]) -> Result<Map> {
        let queue = self.queue(name).await?;
        for n in names {
            if n != "All" && !attributes::is_known(n) {
                return Err(Error::new(
                    ErrorCode::InvalidAttributeName,
                    format!("Unknown Attribute {n}."),
                ));
            }
        }
        let all = names.iter().any(|n| n == "All");
        let wanted = |n: &str| all || names.iter().any(|x| x == n);
        let mut out = Map::new();
        let config = QueueConfig::from_attributes(&queue.attributes);
        let needs_counts = attributes::READ_ONLY[..3].iter().any(|n| wanted(n));
        if needs_counts {
            let counts = self.store.queue_counts(queue.id, self.now_ms()).await?;
            for (n, v) in [
                ("ApproximateNumberOfMessages", counts.visible),
                ("ApproximateNumberOfMessagesNotVisible", counts.in_flight),
                ("ApproximateNumberOfMessagesDelayed", counts.delayed),
            ] {
                if wanted(n) {
                    out.insert(n.into(), v.to_string());
                }
            }
        }
        if wanted("CreatedTimestamp") {
            out.insert(
                "CreatedTimestamp".into(),
                (queue.created_at_ms / 1000).to_string(),
            );
        }
        if wanted("LastModifiedTimestamp") {
            out.insert(
                "LastModifiedTimestamp".into(),
                (queue.modified_at_ms / 1000).to_string(),
            );
        }
        if wanted("QueueArn") {
            out.insert("QueueArn".into(), self.queue_arn(&queue.name));
        }
        for n in attributes::all_names() {
            if !wanted(n) || out.contains_key(n) {
                continue;
            }
            let fifo_attr = matches!(
                n,
                "FifoQueue"
                    | "ContentBasedDeduplication"
                    | "DeduplicationScope"
                    | "FifoThroughputLimit"
            );
            if fifo_attr && !config.fifo {
                continue;
            }
            // The data key reuse period is reported only while a KMS key is set.
            if n == "KmsDataKeyReusePeriodSeconds"
                && queue
                    .attributes
                    .get("KmsMasterKeyId")
                    .is_none_or(|k| k.is_empty())
            {
                continue;
            }
            let value = queue
                .attributes
                .get(n)
                .filter(|v| !v.is_empty())
                .cloned()
                .or_else(|| match n {
                    "FifoQueue" | "ContentBasedDeduplication" if config.fifo => {
                        Some(if n == "FifoQueue" { "true" } else { "false" }.into())
                    }
                    "DeduplicationScope" if config.fifo => Some("queue".into()),
                    "FifoThroughputLimit" if config.fifo => Some("perQueue".into()),
                    _ => attributes::default_value(n).map(str::to_owned),
                });
            if let Some(v) = value {
                out.insert(n.into(), v);
            }
        }
        Ok(out)
    }

    /// SetQueueAttributes: validates and merges; an empty RedrivePolicy or Policy removes it.
    ///
    /// Errors: `QueueDoesNotExist`, `InvalidAttributeName`, `InvalidAttributeValue`,
    /// `InvalidParameterValue`.
    pub async fn set_queue_attributes(&self, name: &str, attributes: Map) -> Result<()> {
        let queue = self.queue(name).await?;
        let fifo = QueueConfig::from_attributes(&queue.attributes).fifo;
        let changes = attributes::validate(&attributes, false, fifo)?;
        attributes::check_one_encryption(&changes)?;
        self.check_redrive_target(name, &changes, fifo).await?;
        let mut merged = queue.attributes.clone();
        for (k, v) in changes {
            if v.is_empty()
                && matches!(
                    k.as_str(),
                    "RedrivePolicy" | "Policy" | "RedriveAllowPolicy"
                )
            {
                merged.remove(&k);
            } else {
                merged.insert(k, v);
            }
        }
        attributes::validate_combination(&merged)?;
        // SSE-KMS and SSE-SQS exclude each other: a KMS key turns SQS-managed encryption
        // off, and it stays off when the key is removed (AWS's recorded answers).
        if attributes
            .get("KmsMasterKeyId")
            .is_some_and(|k| !k.is_empty())
        {
            merged.insert("SqsManagedSseEnabled".into(), "false".into());
        }
        self.store
            .set_queue_attributes(queue.id, merged, self.now_ms())
            .await?;
        self.forget_queues();
        Ok(())
    }

    /// TagQueue: adds or replaces tags. Errors: `MissingParameter` (no tags),
    /// `QueueDoesNotExist`, `InvalidParameterValue`.
    pub async fn tag_queue(&self, name: &str, tags: Map) -> Result<()> {
        if tags.is_empty() {
            return Err(Error::missing("Tags"));
        }
        let queue = self.queue(name).await?;
        let mut merged = queue.tags.clone();
        merged.extend(tags);
        check_tags(&merged)?;
        self.store.set_queue_tags(queue.id, merged).await?;
        self.forget_queues();
        Ok(())
    }

    /// UntagQueue: removes tags by key. Errors: `MissingParameter` (no keys),
    /// `QueueDoesNotExist`.
    pub async fn untag_queue(&self, name: &str, keys: &[String]) -> Result<()> {
        if keys.is_empty() {
            return Err(Error::missing("TagKeys"));
        }
        let queue = self.queue(name).await?;
        let mut tags = queue.tags.clone();
        for k in keys {
            tags.remove(k);
        }
        self.store.set_queue_tags(queue.id, tags).await?;
        self.forget_queues();
        Ok(())
    }

    /// ListQueueTags. Errors: `QueueDoesNotExist`.
    pub async fn list_queue_tags(&self, name: &str) -> Result<Map> {
        Ok(self.queue(name).await?.tags.clone())
    }

    /// ListDeadLetterSourceQueues: the queues whose RedrivePolicy targets `name`, among the
    /// queues of its account and region, where a dead-letter queue's sources are (SQS
    /// Developer Guide, "Using dead-letter queues"; CreateQueue and SetQueueAttributes
    /// refuse a target elsewhere), read without other accounts' rows.
    /// Errors: `QueueDoesNotExist`.
    pub async fn dead_letter_sources(&self, name: &str) -> Result<Vec<QueueRecord>> {
        let queue = self.queue(name).await?;
        let arn = self.queue_arn(&queue.name);
        Ok(self
            .queues_of(self.key_scope(&queue.name).0)
            .await?
            .into_iter()
            .filter(|q| {
                QueueConfig::from_attributes(&q.attributes)
                    .redrive_policy
                    .is_some_and(|p| p.dead_letter_target_arn == arn)
            })
            .collect())
    }

    /// AddPermission: adds a statement `label` to the queue's Policy attribute.
    ///
    /// Errors: `QueueDoesNotExist`, `MissingParameter`, `InvalidParameterValue` (a label
    /// already in use, or not 1 to 80 alphanumerics, hyphens and underscores), `OverLimit`
    /// (more than 7 actions).
    pub async fn add_permission(
        &self,
        name: &str,
        label: &str,
        accounts: &[String],
        actions: &[String],
    ) -> Result<()> {
        if label.is_empty() {
            return Err(Error::missing("Label"));
        }
        if label.len() > 80
            || !label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err(Error::invalid(format!(
                "Value {label} for parameter Label is invalid. Reason: Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length."
            )));
        }
        if accounts.is_empty() {
            return Err(Error::missing("AWSAccountId"));
        }
        if actions.is_empty() {
            return Err(Error::missing("ActionName"));
        }
        if let Some(bad) = actions
            .iter()
            .find(|a| *a != "*" && !SQS_ACTIONS.contains(&a.as_str()))
        {
            return Err(Error::invalid(format!(
                "Value SQS:{bad} for parameter ActionName is invalid. Reason: Please refer to the appropriate WSDL for a list of valid actions."
            )));
        }
        if actions.len() > 7 {
            return Err(Error::new(
                ErrorCode::OverLimit,
                "7 Actions were found, maximum allowed is 7.",
            ));
        }
        let queue = self.queue(name).await?;
        let arn = self.queue_arn(&queue.name);
        let mut policy: Value = queue
            .attributes
            .get("Policy")
            .and_then(|p| serde_json::from_str(p).ok())
            .unwrap_or_else(|| json!({"Version": "2008-10-17", "Id": format!("{arn}/SQSDefaultPolicy"), "Statement": []}));
        let statements = policy["Statement"]
            .as_array_mut()
            .ok_or_else(|| Error::invalid("Policy is malformed."))?;
        if statements.iter().any(|s| s["Sid"] == label) {
            return Err(Error::invalid(format!(
                "Value {label} for parameter Label is invalid. Reason: Already exists."
            )));
        }
        let principals: Vec<String> = accounts
            .iter()
            .map(|a| format!("arn:aws:iam::{a}:root"))
            .collect();
        let actions: Vec<String> = actions.iter().map(|a| format!("SQS:{a}")).collect();
        statements.push(json!({
            "Sid": label,
            "Effect": "Allow",
            "Principal": {"AWS": if principals.len() == 1 { json!(principals[0]) } else { json!(principals) }},
            "Action": if actions.len() == 1 { json!(actions[0]) } else { json!(actions) },
            "Resource": arn,
        }));
        self.write_policy(&queue, Some(&policy)).await
    }

    /// RemovePermission: removes statement `label`.
    ///
    /// Errors: `QueueDoesNotExist`, `InvalidParameterValue` when no such label.
    pub async fn remove_permission(&self, name: &str, label: &str) -> Result<()> {
        let queue = self.queue(name).await?;
        let not_found = || {
            Error::invalid(format!(
                "Value {label} for parameter Label is invalid. Reason: can't find label."
            ))
        };
        let mut policy: Value = queue
            .attributes
            .get("Policy")
            .and_then(|p| serde_json::from_str(p).ok())
            .ok_or_else(not_found)?;
        let statements = policy["Statement"].as_array_mut().ok_or_else(not_found)?;
        let before = statements.len();
        statements.retain(|s| s["Sid"] != label);
        if statements.len() == before {
            return Err(not_found());
        }
        let emptied = statements.is_empty();
        self.write_policy(&queue, (!emptied).then_some(&policy))
            .await
    }

    /// Stores `policy` as `queue`'s Policy attribute, or removes the attribute (`None`):
    /// the write of AddPermission and RemovePermission.
    ///
    /// Errors: store errors.
    async fn write_policy(&self, queue: &QueueRecord, policy: Option<&Value>) -> Result<()> {
        let mut attrs = queue.attributes.clone();
        match policy {
            Some(p) => attrs.insert("Policy".into(), p.to_string()),
            None => attrs.remove("Policy"),
        };
        self.store
            .set_queue_attributes(queue.id, attrs, self.now_ms())
            .await?;
        self.forget_queues();
        Ok(())
    }
}
