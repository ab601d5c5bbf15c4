//! Accounts and permissions: who calls ([`Principal`]), which account a queue or topic
//! belongs to, and whether a call is allowed ([`Service::authorize`]).
//!
//! **Accounts.** A queue or topic belongs to one account. Its store key is its name for the
//! configured default account (so every database written before accounts existed holds the
//! default account's resources, and nothing migrates) and `ACCOUNT/NAME` for any other
//! ([`names::scoped_key`]). ARNs and queue URLs are made from the key, so they carry the
//! right account. With [`ServiceConfig::multi_account`] off (no access key names another
//! account) every key is a bare name and the account in a URL or ARN is not looked at:
//! Loft behaves as it did before accounts.
//!
//! **Permissions.** [`Service::authorize`] evaluates the caller's identity policies and the
//! resource's `Policy` attribute with [`crate::iam::authorize`] (IAM User Guide, "Policy
//! evaluation logic"): an explicit deny wins, within an account either kind of policy may
//! allow, across accounts both must. A key without policies may do everything in its own
//! account. Refusals are `AccessDenied` for SQS actions and `AuthorizationError` for SNS
//! actions, 403, worded as AWS words them ("User: ARN is not authorized to perform: ACTION
//! on resource: ARN because ...").

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::error::{Error, ErrorCode, Result};
use crate::iam::{self, Caller, Decision, Identity, Policy, Request};
use crate::names;

use super::{Service, ServiceConfig, DEFAULT_IDENTITY};

/// The caller of one request, as the protocol adapters authenticated it.
#[derive(Debug, Clone)]
pub struct Principal {
    /// Its 12-digit account id.
    pub account_id: String,
    /// Its identity's ARN (`arn:aws:iam::111111111111:user/team-a`; for a key without an
    /// identity `arn:aws:iam::ACCOUNT:user/loft`, the user every caller was before
    /// identities existed).
    pub arn: String,
    /// Its identity policies; `None` for a key without any (everything in its own
    /// account).
    pub policies: Option<Arc<Vec<Policy>>>,
    /// The `SenderId` of the messages it sends: the account id for a key without an
    /// identity (what SQS reports for an account's root user), else the identity's unique
    /// id ([`unique_id`]).
    pub sender_id: String,
    /// The client's IP address (`aws:SourceIp`), when known.
    pub source_ip: Option<String>,
    /// Whether the request came over TLS (`aws:SecureTransport`).
    pub secure_transport: bool,
    /// Whether permissions are checked at all: false for an open Loft (no credentials),
    /// which allows everything as before.
    pub enforced: bool,
}

/// The unique id AWS gives an IAM identity, as SQS reports it in `SenderId`: `AIDA` (users)
/// or `AROA` (roles) and 17 characters. Loft has no IAM to ask, so it derives them from the
/// identity's ARN (SHA-256, base32 upper case): stable, and different for each identity.
pub fn unique_id(arn: &str) -> String {
    use sha2::{Digest, Sha256};
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let digest = Sha256::digest(arn.as_bytes());
    let prefix = if arn.contains(":role/") {
        "AROA"
    } else {
        "AIDA"
    };
    let tail: String = digest
        .iter()
        .take(17)
        .map(|b| ALPHABET[(*b as usize) % 32] as char)
        .collect();
    format!("{prefix}{tail}")
}

impl Principal {
    /// The caller of an open Loft: the default account's `user/loft`, nothing enforced.
    pub fn open(config: &ServiceConfig) -> Principal {
        Principal {
            account_id: config.account_id.clone(),
            arn: format!("arn:aws:iam::{}:user/{DEFAULT_IDENTITY}", config.account_id),
            policies: None,
            sender_id: config.account_id.clone(),
            source_ip: None,
            secure_transport: false,
            enforced: false,
        }
    }

    /// The caller of an access key of `account` (the default account when `None`) acting
    /// as `identity` (`user/team-a`, `role/app`; `None`: `user/loft` with the account's
    /// SenderId), with `policies` (`None`: everything in its own account).
    pub fn for_key(
        config: &ServiceConfig,
        account: Option<&str>,
        identity: Option<&str>,
        policies: Option<Arc<Vec<Policy>>>,
    ) -> Principal {
        let account = account.unwrap_or(&config.account_id).to_owned();
        let (arn, sender_id) = match identity {
            Some(id) => {
                let arn = format!("arn:aws:iam::{account}:{id}");
                let sender = unique_id(&arn);
                (arn, sender)
            }
            None => (
                format!("arn:aws:iam::{account}:user/{DEFAULT_IDENTITY}"),
                account.clone(),
            ),
        };
        Principal {
            account_id: account,
            arn,
            policies,
            sender_id,
            source_ip: None,
            secure_transport: false,
            enforced: true,
        }
    }
}

/// What an action is on.
#[derive(Debug, Clone, Copy)]
pub enum Target<'a> {
    /// The queue of this store key (existing or to be created).
    Queue(&'a str),
    /// The topic of this store key (existing or to be created).
    Topic(&'a str),
    /// No one resource: the account's SQS (`ListQueues`) or SNS (`ListTopics`, SMS
    /// settings); the resource ARN is `arn:aws:SERVICE:REGION:ACCOUNT:`.
    Account {
        /// `sqs` or `sns`.
        service: &'static str,
        /// The account.
        account: &'a str,
    },
}

/// Parsed resource policies by their text, so each request does not parse its queue's
/// policy again; cleared when it grows past [`POLICY_CACHE_MAX`].
#[derive(Default)]
pub(crate) struct PolicyCache(Mutex<HashMap<String, Option<Arc<Policy>>>>);

/// Most policy texts [`PolicyCache`] holds.
const POLICY_CACHE_MAX: usize = 4096;

impl PolicyCache {
    /// The parsed policy of `text`; `None` when it is not a policy Loft can evaluate (such
    /// a policy allows nothing).
    fn get(&self, text: &str) -> Option<Arc<Policy>> {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(p) = map.get(text) {
            return p.clone();
        }
        let parsed = Policy::parse_lenient(text).ok().map(Arc::new);
        if map.len() >= POLICY_CACHE_MAX {
            map.clear();
        }
        map.insert(text.to_owned(), parsed.clone());
        parsed
    }
}

impl Service {
    /// Whether accounts other than the default one exist ([`ServiceConfig::multi_account`]).
    pub fn multi_account(&self) -> bool {
        self.config.multi_account
    }

    /// The store key of `name` in `account` ([`names::scoped_key`]); the bare name when
    /// [`ServiceConfig::multi_account`] is off.
    pub fn resource_key(&self, account: &str, name: &str) -> String {
        if self.config.multi_account {
            names::scoped_key(&self.config.account_id, account, name)
        } else {
            name.to_owned()
        }
    }

    /// The account and name of a store key.
    pub fn split_key<'a>(&'a self, key: &'a str) -> (&'a str, &'a str) {
        if self.config.multi_account {
            names::split_key(&self.config.account_id, key)
        } else {
            (&self.config.account_id, key)
        }
    }

    /// The store key an ARN of `service` (`sqs`, `sns`) names: its account and resource.
    /// `None` when it is not such an ARN.
    pub fn key_of_arn(&self, arn: &str, service: &str) -> Option<String> {
        let name = names::arn_resource(arn, service)?;
        let account = names::arn_account(arn).unwrap_or(&self.config.account_id);
        Some(self.resource_key(account, name))
    }

    /// The store key of a RedrivePolicy's dead-letter queue.
    pub fn dlq_key(&self, policy: &crate::attributes::RedrivePolicy) -> String {
        self.key_of_arn(&policy.dead_letter_target_arn, "sqs")
            .unwrap_or_default()
    }

    /// Decides whether `principal` may perform `action` (`sqs:SendMessage`,
    /// `sns:Publish`) on `target`, from its identity policies and the queue's or topic's
    /// `Policy` attribute (a missing resource has none). Always `Ok` for an open Loft.
    ///
    /// Errors: `AccessDenied` (an `sqs:` action) or `AuthorizationError` (`sns:`), 403,
    /// "User: ARN is not authorized to perform: ACTION on resource: ARN because ...".
    pub async fn authorize(
        &self,
        principal: &Principal,
        action: &str,
        target: Target<'_>,
    ) -> Result<()> {
        if !principal.enforced {
            return Ok(());
        }
        let (resource, owner, policy_text) = match target {
            Target::Queue(key) => {
                let (owner, _) = self.split_key(key);
                let policy = self
                    .find_queue(key)
                    .await?
                    .and_then(|q| q.attributes.get("Policy").cloned());
                (self.queue_arn(key), owner.to_owned(), policy)
            }
            Target::Topic(key) => {
                let (owner, _) = self.split_key(key);
                let policy = self
                    .store
                    .get_topic(key)
                    .await?
                    .and_then(|t| t.attributes.get("Policy").cloned());
                (self.topic_arn(key), owner.to_owned(), policy)
            }
            Target::Account { service, account } => (
                format!("arn:aws:{service}:{}:{account}:", self.config.region),
                account.to_owned(),
                None,
            ),
        };
        // A key without policies in its own account, and no resource policy to deny: the
        // common case, decided without building a request.
        if principal.policies.is_none() && policy_text.is_none() && owner == principal.account_id {
            return Ok(());
        }
        let resource_policy = policy_text
            .as_deref()
            .filter(|t| !t.is_empty())
            .and_then(|t| self.policy_cache.get(t));
        let request = Request::new(
            action,
            resource.clone(),
            Caller::Iam {
                account: principal.account_id.clone(),
                arn: principal.arn.clone(),
            },
        )
        .with(
            "aws:SecureTransport",
            vec![principal.secure_transport.to_string()],
        );
        let request = match &principal.source_ip {
            Some(ip) => request.with("aws:SourceIp", vec![ip.clone()]),
            None => request,
        };
        let identity = match &principal.policies {
            None => Identity::Unrestricted,
            Some(list) => Identity::Policies(list),
        };
        let decision = iam::authorize(identity, resource_policy.as_deref(), &owner, &request);
        if decision == Decision::Allow {
            return Ok(());
        }
        let identity_allows = match identity {
            Identity::Unrestricted => true,
            Identity::Policies(list) => {
                list.iter().any(|p| p.evaluate(&request) == Decision::Allow)
            }
            Identity::None => false,
        };
        let resource_denies = resource_policy
            .as_deref()
            .is_some_and(|p| p.evaluate(&request) == Decision::ExplicitDeny);
        let (code, shown) = denied_action(action);
        let why = match decision {
            Decision::ExplicitDeny if resource_denies => {
                "with an explicit deny in a resource-based policy".to_owned()
            }
            Decision::ExplicitDeny => "with an explicit deny in an identity-based policy".into(),
            _ if identity_allows => {
                format!("because no resource-based policy allows the {shown} action")
            }
            _ => format!("because no identity-based policy allows the {shown} action"),
        };
        Err(Error::new(
            code,
            format!(
                "User: {} is not authorized to perform: {shown} on resource: {resource} {why}",
                principal.arn
            ),
        ))
    }

    /// Whether SNS may deliver a message of topic `topic_arn` to the queue of `queue_key`:
    /// always within one account (unless the queue's policy denies it); across accounts only
    /// when the queue's `Policy` allows `sqs:SendMessage` to `sns.amazonaws.com` (or the
    /// topic's account) for this topic (`aws:SourceArn`, `aws:SourceAccount`), as SNS
    /// Developer Guide "Sending Amazon SNS messages to an Amazon SQS queue in a different
    /// account" describes.
    pub(crate) fn sns_may_deliver(
        &self,
        topic_arn: &str,
        queue_key: &str,
        queue_policy: Option<&str>,
    ) -> bool {
        if !self.config.multi_account {
            return true;
        }
        let (owner, _) = self.split_key(queue_key);
        let topic_account = names::arn_account(topic_arn).unwrap_or(&self.config.account_id);
        let policy = queue_policy
            .filter(|t| !t.is_empty())
            .and_then(|t| self.policy_cache.get(t));
        let request = Request::new(
            "sqs:SendMessage",
            self.queue_arn(queue_key),
            Caller::Service("sns.amazonaws.com".into()),
        )
        .with("aws:SourceArn", vec![topic_arn.to_owned()])
        .with("aws:SourceAccount", vec![topic_account.to_owned()]);
        match policy.as_deref().map(|p| p.evaluate(&request)) {
            Some(Decision::ExplicitDeny) => false,
            Some(Decision::Allow) => true,
            _ => owner == topic_account,
        }
    }
}

/// The error code for a refused action and the action as the service's messages write
/// it (`sqs:SendMessage`, `SNS:Publish`).
fn denied_action(action: &str) -> (ErrorCode, String) {
    match action.strip_prefix("sns:") {
        Some(op) => (ErrorCode::AuthorizationError, format!("SNS:{op}")),
        None => (ErrorCode::AccessDenied, action.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unique_ids_look_like_aws_ones_and_differ() {
        let a = unique_id("arn:aws:iam::111111111111:user/a");
        let b = unique_id("arn:aws:iam::111111111111:user/b");
        assert!(a.starts_with("AIDA") && a.len() == 21, "{a}");
        assert_ne!(a, b);
        assert_eq!(a, unique_id("arn:aws:iam::111111111111:user/a"));
        assert!(unique_id("arn:aws:iam::1:role/r").starts_with("AROA"));
    }

    #[test]
    fn keys_scope_names_by_account() {
        assert_eq!(names::scoped_key("000000000000", "000000000000", "q"), "q");
        assert_eq!(
            names::scoped_key("000000000000", "111111111111", "q"),
            "111111111111/q"
        );
        assert_eq!(
            names::split_key("000000000000", "111111111111/q"),
            ("111111111111", "q")
        );
        assert_eq!(names::split_key("000000000000", "q"), ("000000000000", "q"));
    }
}
