//! SNS message data protection in the service: PutDataProtectionPolicy and
//! GetDataProtectionPolicy, and the hooks Publish calls, Inbound for each published message
//! and Outbound for each subscription's delivery. The rules themselves are
//! [`crate::data_protection`]'s; this module stores the policy (in the topic's record, so
//! it survives restarts and is shared by every node), counts what happens for `/metrics`,
//! writes the log lines and sends audit records to an SQS destination.
//!
//! Who is the Principal: Inbound statements (and the audit record's `callerPrincipal`) are
//! the publisher's, its IAM ARN as its key authenticated it (`PublishRequest::publisher`;
//! the topic's account's root `arn:aws:iam::ACCOUNT:root` for an open Loft); Outbound
//! statements, matched per subscription, use the default account's root
//! ([`SnsDelivery::caller_principal`]). Statements name `*`, an account id, its root ARN or
//! the principal's ARN.
//!
//! Sources: SNS API Reference PutDataProtectionPolicy, GetDataProtectionPolicy, CreateTopic
//! (`DataProtectionPolicy`); SNS Developer Guide "Amazon SNS message data protection".

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::Value;

use super::sns_errors::invalid;
use super::SnsDelivery;
use crate::attributes::{QueueConfig, TopicConfig};
use crate::data_protection::{self as dp, DataDirection, Detection, Policy, Verdict};
use crate::error::{Error, ErrorCode, Result};
use crate::model::{NewMessage, SubscriptionRecord, TopicRecord};
use crate::service::core::access::Writer;

/// The topic attribute the policy is stored under. GetTopicAttributes does not list it
/// (AWS does not either); GetDataProtectionPolicy reads it.
pub use crate::attributes::DATA_PROTECTION_POLICY_ATTRIBUTE as POLICY_ATTRIBUTE;

/// Per-topic counts of messages the audit statement considered, for its SampleRate.
#[derive(Default)]
pub(crate) struct AuditCounts(Mutex<HashMap<i64, u64>>);

/// An audit to finish once the message has its MessageId: what was scanned and found.
pub(crate) struct PendingAudit {
    audit: dp::Audit,
    /// The publisher's IAM ARN: the record's `callerPrincipal`.
    publisher: String,
    text: String,
    found: Vec<Detection>,
}

impl SnsDelivery {
    /// PutDataProtectionPolicy: validates and stores `policy` on the topic; an empty string
    /// removes it (SNS Developer Guide, "Deleting data protection policies").
    ///
    /// Errors: `InvalidParameter` (a malformed ResourceArn; the policy outside the grammar
    /// or naming what Loft cannot honour, see [`Policy::parse`]), `NotFound`.
    pub async fn put_data_protection_policy(&self, resource_arn: &str, policy: &str) -> Result<()> {
        let topic = self.policy_topic(resource_arn).await?;
        let mut attrs = topic.attributes.clone();
        if policy.is_empty() {
            attrs.remove(POLICY_ATTRIBUTE);
        } else {
            Policy::parse(policy)?;
            attrs.insert(POLICY_ATTRIBUTE.to_owned(), policy.to_owned());
        }
        self.store.set_topic_attributes(topic.id, attrs).await
    }

    /// Checks that `principal` may have a data protection policy `policy` (JSON text, as
    /// CreateTopic's `DataProtectionPolicy` attribute, SetTopicAttributes and
    /// PutDataProtectionPolicy take it) write audit records into the queues its audit
    /// statement's destinations name: each needs `sqs:SendMessage` for the caller, from
    /// its identity policies and the queue's `Policy` as for any send
    /// ([`Core::authorize`](crate::service::Core::authorize); across accounts both must allow it). AWS's audit
    /// destinations (CloudWatch Logs, S3, Firehose; SNS Developer Guide, "Data protection
    /// policy operations") are written only where the destination lets the writer in;
    /// Loft's destination is a queue, so permission to send to it is that rule. An empty
    /// text, a text that does not parse (refused later in its own words) or an ARN naming
    /// no queue passes.
    ///
    /// Errors: `AuthorizationError` (403) "User: ARN is not authorized to perform:
    /// sqs:SendMessage on resource: QUEUE-ARN because ...".
    pub async fn authorize_findings_destinations(
        &self,
        principal: &crate::service::core::access::Principal,
        policy: &str,
    ) -> Result<()> {
        if !principal.enforced || policy.is_empty() {
            return Ok(());
        }
        let Ok(parsed) = Policy::parse(policy) else {
            return Ok(());
        };
        for arn in parsed.audit_queue_arns() {
            let Some(key) = self.key_of_arn(arn, "sqs") else {
                continue;
            };
            self.authorize(
                principal,
                "sqs:SendMessage",
                crate::service::core::access::Target::Queue(&key),
            )
            .await
            .map_err(|e| Error::new(ErrorCode::AuthorizationError, e.message))?;
        }
        Ok(())
    }

    /// GetDataProtectionPolicy: the topic's policy as it was put, or `""` without one.
    /// Errors: `InvalidParameter` (a malformed ResourceArn), `NotFound`.
    pub async fn get_data_protection_policy(&self, resource_arn: &str) -> Result<String> {
        let topic = self.policy_topic(resource_arn).await?;
        Ok(TopicConfig::from_attributes(&topic.attributes)
            .data_protection_policy
            .unwrap_or_default())
    }

    /// The topic a ResourceArn names. An ARN of fewer than six elements is refused as
    /// every SNS ARN parameter is ("Invalid parameter: ResourceArn Reason: An ARN must have
    /// at least 6 elements, not N", AWS's recorded form, here with this parameter's name);
    /// any other malformed ARN is "Invalid parameter: ResourceArn".
    async fn policy_topic(&self, resource_arn: &str) -> Result<TopicRecord> {
        super::sns_errors::check_arn_elements("ResourceArn", resource_arn)?;
        self.topic_by_arn(resource_arn).await.map_err(|e| {
            if e.code == ErrorCode::InvalidParameter {
                invalid("ResourceArn")
            } else {
                e
            }
        })
    }

    /// The topic's policy, parsed. Errors: `InvalidParameter` for a stored policy that no
    /// longer parses (one an older Loft kept without checking): publishes fail until it is
    /// replaced, rather than going out unprotected.
    pub(crate) fn topic_policy(&self, topic: &TopicRecord) -> Result<Option<Policy>> {
        let config = TopicConfig::from_attributes(&topic.attributes);
        match config.data_protection_policy.filter(|p| !p.is_empty()) {
            None => Ok(None),
            Some(text) => Policy::parse(&text).map(Some).map_err(|e| {
                Error::new(
                    e.code,
                    format!(
                        "The topic's stored data protection policy is not valid; replace it with PutDataProtectionPolicy. {}",
                        e.message
                    ),
                )
            }),
        }
    }

    /// The Inbound hook of Publish: audits `message` (when the audit statement samples it)
    /// and applies the Deny and Deidentify statements. With MessageStructure `json`, each
    /// protocol's message is protected on its own and the structure kept. Returns the
    /// message to publish and the audit to finish once the MessageId is known.
    ///
    /// Errors: `AuthorizationError` when a Deny statement finds sensitive data, or when the
    /// whole message is sensitive (SNS Developer Guide, "Data protection policy
    /// operations"). `publisher` is the publishing principal's IAM ARN, which the
    /// statements are matched against.
    pub(crate) fn protect_inbound(
        &self,
        topic: &TopicRecord,
        policy: &Policy,
        message: String,
        structured: bool,
        publisher: &str,
    ) -> Result<(String, Option<PendingAudit>)> {
        let principal = publisher;
        let mut pending = None;
        if let Some((statement, audit)) = policy.audit(principal) {
            let n = {
                let mut counts = self
                    .audit_counts
                    .0
                    .lock()
                    .unwrap_or_else(|p| p.into_inner());
                let n = counts.entry(topic.id).or_default();
                *n += 1;
                *n
            };
            if dp::sampled(audit.sample_rate, n) {
                pending = Some(PendingAudit {
                    audit: audit.clone(),
                    publisher: publisher.to_owned(),
                    found: dp::detect(&message, &statement.identifiers),
                    text: message.clone(),
                });
            }
        }
        let denied = |sid: Option<String>, identifiers: Vec<&str>| {
            self.activity
                .data_protection(&topic.name, DataDirection::Inbound.as_str(), "denied");
            tracing::info!(topic = %topic.name, statement = sid.as_deref().unwrap_or(""), identifiers = %identifiers.join(","), "data protection: publish denied");
            Error::new(
                ErrorCode::AuthorizationError,
                format!(
                    "The topic's data protection policy denies this message: it contains sensitive data ({}).",
                    identifiers.join(", ")
                ),
            )
        };
        let mut changed = false;
        let out = if structured {
            let Ok(Value::Object(mut map)) = serde_json::from_str::<Value>(&message) else {
                return Ok((message, pending));
            };
            for v in map.values_mut() {
                let Value::String(s) = v else { continue };
                match policy.enforce(DataDirection::Inbound, principal, s) {
                    Verdict::Unchanged => {}
                    Verdict::Rewritten(t) => {
                        *s = t;
                        changed = true;
                    }
                    Verdict::Denied { sid, identifiers } => return Err(denied(sid, identifiers)),
                }
            }
            if changed {
                Value::Object(map).to_string()
            } else {
                message
            }
        } else {
            match policy.enforce(DataDirection::Inbound, principal, &message) {
                Verdict::Unchanged => message,
                Verdict::Rewritten(t) => {
                    changed = true;
                    t
                }
                Verdict::Denied { sid, identifiers } => return Err(denied(sid, identifiers)),
            }
        };
        if changed {
            self.activity.data_protection(
                &topic.name,
                DataDirection::Inbound.as_str(),
                "deidentified",
            );
        }
        Ok((out, pending))
    }

    /// Finishes an audit of message `message_id`: counts it (with or without findings) and
    /// its findings, writes the audit record to the log, and, when the matching destination
    /// names a queue, queues the record there as a message of this publish's transaction
    /// (pushed to `messages`; a missing queue is logged and skipped). The record names the
    /// publisher as its `callerPrincipal` (SNS Developer Guide, "Data protection policy
    /// operations": the audit record's fields). The record is the topic's, whoever
    /// published: AWS writes audit records into destinations that the principal setting the
    /// data protection policy was allowed to deliver to (SNS Developer Guide, "Data
    /// protection policy operations", "Required permissions when specifying log
    /// destinations": the permissions are those of the principal calling
    /// PutDataProtectionPolicy or CreateTopic), never the publisher's. Loft's writer is the
    /// topic's account (its `root`), so another account's publish is audited like the
    /// owner's own, and the queue takes the record only while its `Policy` lets the topic's
    /// account send into it, decided now by the rule every SNS delivery to a queue follows
    /// ([`Core::may_send_into`](crate::service::Core::may_send_into)): a permission its
    /// owner removed since the policy was set stops the next record, which is dropped
    /// (logged) as a refused delivery is.
    pub(crate) async fn finish_audit(
        &self,
        topic: &TopicRecord,
        pending: PendingAudit,
        message_id: &str,
        now: i64,
        messages: &mut Vec<(i64, NewMessage)>,
        message_queues: &mut Vec<String>,
    ) -> Result<()> {
        let PendingAudit {
            audit,
            publisher,
            text,
            found,
        } = pending;
        let topic_arn = self.topic_arn(&topic.name);
        let with = !found.is_empty();
        self.activity.data_protection(
            &topic.name,
            DataDirection::Inbound.as_str(),
            if with {
                "with_findings"
            } else {
                "without_findings"
            },
        );
        for d in dp::DataIdentifier::ALL {
            let n = found.iter().filter(|f| f.identifier == *d).count() as u64;
            self.activity.findings(&topic.name, d.name(), n);
        }
        let destination = if with {
            audit.findings.as_ref()
        } else {
            audit.no_findings.as_ref()
        };
        let Some(destination) = destination else {
            return Ok(());
        };
        let record = dp::audit_record(
            message_id,
            &crate::clock::iso_timestamp(now),
            &publisher,
            &topic_arn,
            &text,
            &found,
        )
        .to_string();
        tracing::info!(topic = %topic.name, message_id, findings = with, log_group = destination.log_group.as_deref().unwrap_or(""), record = %record, "data protection audit");
        let Some(queue_arn) = &destination.queue_arn else {
            return Ok(());
        };
        let queue = match self.key_of_arn(queue_arn, "sqs") {
            Some(name) => self.find_queue(&name).await?,
            None => None,
        };
        let Some(queue) = queue else {
            tracing::warn!(topic = %topic.name, queue = %queue_arn, "data protection audit destination queue does not exist; record not sent");
            return Ok(());
        };
        let owner = crate::names::arn_account(&topic_arn).unwrap_or_default();
        let owner_root = format!("arn:aws:iam::{owner}:root");
        let writer = Writer::Principal {
            account: owner,
            arn: &owner_root,
        };
        let queue_policy = queue.attributes.get("Policy").map(String::as_str);
        if !self.may_send_into(&writer, &queue.name, queue_policy) {
            tracing::warn!(topic = %topic.name, queue = %queue_arn, owner = %owner, "the audit destination queue's Policy does not allow the topic's account to send; record not sent");
            return Ok(());
        }
        let config = QueueConfig::from_attributes(&queue.attributes);
        message_queues.push(queue.name.clone());
        messages.push((
            queue.id,
            self.sns_own_message(
                &topic_arn,
                &config,
                uuid::Uuid::new_v4().to_string(),
                record,
                &topic.name,
                message_id,
                now,
            ),
        ));
        Ok(())
    }

    /// The Outbound hook of one subscription's delivery: `text` as the subscription gets
    /// it (de-identified when a statement says so), or `None` when a Deny statement stops
    /// the delivery (logged with AWS's delivery-status wording) or the whole text is
    /// sensitive.
    pub(crate) fn protect_outbound(
        &self,
        topic: &TopicRecord,
        policy: &Policy,
        sub: &SubscriptionRecord,
        text: String,
    ) -> Option<String> {
        let direction = DataDirection::Outbound.as_str();
        // The delivery's principal is the subscriber, the account that owns the
        // subscription (SNS Developer Guide, "Understanding Amazon SNS data protection
        // policies": Principal is "the IAM principals that published to the topic or
        // that subscribed to the topic").
        let subscriber = format!("arn:aws:iam::{}:root", self.subscription_owner(sub));
        match policy.enforce(DataDirection::Outbound, &subscriber, &text) {
            Verdict::Unchanged => Some(text),
            Verdict::Rewritten(t) => {
                self.activity
                    .data_protection(&topic.name, direction, "deidentified");
                Some(t)
            }
            Verdict::Denied { sid, identifiers } => {
                self.activity
                    .data_protection(&topic.name, direction, "denied");
                tracing::info!(topic = %topic.name, statement = sid.as_deref().unwrap_or(""), identifiers = %identifiers.join(","), "data protection: the topic's data protection policy prohibits this message from being delivered to {}", self.subscription_arn(sub));
                None
            }
        }
    }
}
