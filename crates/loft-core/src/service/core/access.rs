//! Accounts and permissions: who calls ([`Principal`]), which account a queue or topic
//! belongs to, and whether a call is allowed ([`Core::authorize`]).
//!
//! **Accounts and regions.** A queue or topic belongs to one account and one region. Its
//! store key is its name for the configured default account and region (so every database
//! written before accounts and regions existed holds the default ones' resources, and
//! nothing migrates), `ACCOUNT/NAME` for another account in the default region, and
//! `ACCOUNT/REGION/NAME` in any other region ([`names::scoped_key`]). ARNs and queue URLs
//! are made from the key, so they carry the right account and region. A request's region
//! is its SigV4 scope's ([`Principal::region`]); a URL or ARN names its queue's or topic's
//! account and region ([`Core::queue_key_for`], [`Core::key_of_arn`],
//! [`Core::check_arn_region`]). With [`ServiceConfig::multi_account`] off (no access key
//! names another account) nothing can be made in another account, so a URL or ARN naming
//! one names nothing, as on AWS.
//!
//! **Permissions.** [`Core::authorize`] evaluates the caller's identity policies and the
//! resource's `Policy` attribute with [`crate::iam::authorize`] (IAM User Guide, "Policy
//! evaluation logic"): an explicit deny wins, within an account either kind of policy may
//! allow, across accounts both must. A key without policies may do everything in its own
//! account. Refusals are `AccessDenied` for SQS actions and `AuthorizationError` for SNS
//! actions, 403, worded as AWS words them ("User: ARN is not authorized to perform: ACTION
//! on resource: ARN because ...").

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::attributes::SubscriptionConfig;
use crate::error::{Error, ErrorCode, Result};
use crate::iam::{self, Caller, Decision, Identity, Policy, Request};
use crate::names;

use super::{Core, ServiceConfig, DEFAULT_IDENTITY};

/// The caller of one request, as the protocol adapters authenticated it.
///
/// Its strings are shared (`Arc<str>`), so a clone is a few reference counts: the open
/// caller is built once per [`Core`] ([`Core::open_principal`]) and cloned per
/// request, not formatted again (per-request CPU: BENCHMARKS.md, the floor).
#[derive(Debug, Clone)]
pub struct Principal {
    /// Its 12-digit account id.
    pub account_id: Arc<str>,
    /// Its identity's ARN (`arn:aws:iam::111111111111:user/team-a`; for a key without an
    /// identity `arn:aws:iam::ACCOUNT:user/loft`, the user every caller was before
    /// identities existed).
    pub arn: Arc<str>,
    /// Its identity policies; `None` for a key without any (everything in its own
    /// account).
    pub policies: Option<Arc<Vec<Policy>>>,
    /// The `SenderId` of the messages it sends: the account id for a key without an
    /// identity (what SQS reports for an account's root user), else the identity's unique
    /// id ([`unique_id`]).
    pub sender_id: Arc<str>,
    /// The client's IP address (`aws:SourceIp`), when known; written out as text only
    /// when a policy is evaluated.
    pub source_ip: Option<std::net::IpAddr>,
    /// Whether the request came over TLS (`aws:SecureTransport`).
    pub secure_transport: bool,
    /// Whether permissions are checked at all: false for an open Loft (no credentials),
    /// which allows everything as before.
    pub enforced: bool,
    /// The region of the request: the region of its SigV4 credential scope when it has one
    /// that is a region name ([`names::is_region`]), else the configured region (see
    /// [`Principal::signed_region`]). New queues and topics are made in it, ListQueues and
    /// ListTopics list it.
    pub region: Arc<str>,
    /// Whether [`Principal::region`] came from the request's credential scope. Only then
    /// does it override the region a queue URL or ARN names: an unsigned request acts in
    /// the region its URL or ARN names (Loft's `--region` when it names none).
    pub signed_region: bool,
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

/// The `SenderId` of the messages Amazon SNS puts in queues in `region` (deliveries, a
/// subscription's confirmations and dead-letter copies, data protection audit records).
///
/// SNS sends as its own identity, not as the topic's account: the SQS API Reference
/// (ReceiveMessage, `SenderId`) gives a user's unique ID ("ABCDEFGHI1JKLMNOPQ23R") or a
/// role's, never an account id, and messages SNS delivers carry an `AIDA` id of SNS's in
/// the topic's region (AWS's recorded deliveries carry a SenderId on every SNS copy, its
/// value redacted; the id of each region is not documented). Loft's stands in for it:
/// [`unique_id`] of the region's SNS, `AIDA` and 17 characters, the same on every node.
pub fn sns_sender_id(region: &str) -> String {
    unique_id(&format!("arn:aws:sns:{region}::service"))
}

/// `aws:userid` of the identity `arn` of `account` (IAM User Guide, "AWS global condition
/// context keys"): the account id for its root, the identity's unique id ([`unique_id`])
/// for a user, and `ROLE-ID:NAME` for a role (AWS gives the role's id and the session's
/// name; Loft's role keys have no session, so the role's name stands for it).
pub fn user_id(account: &str, arn: &str) -> String {
    let resource = arn.rsplit_once(':').map_or("", |(_, r)| r);
    if resource == "root" {
        return account.to_owned();
    }
    match resource.strip_prefix("role/") {
        Some(path) => format!(
            "{}:{}",
            unique_id(arn),
            path.rsplit('/').next().unwrap_or(path)
        ),
        None => unique_id(arn),
    }
}

impl Principal {
    /// The ARN work this caller starts is done as, when another account's queue is to
    /// take what that work writes later (a message move task, a publish's data
    /// protection audit record; see `Core::may_send_into`): its [`Principal::arn`]
    /// when permissions are enforced, `None` for an open Loft (the work is then the
    /// resource's own account's, as before accounts existed).
    pub fn acting_arn(&self) -> Option<String> {
        self.enforced.then(|| self.arn.to_string())
    }

    /// The caller of an open Loft: the default account's `user/loft`, nothing enforced.
    ///
    /// A request takes a clone of [`Core::open_principal`] instead of building this.
    pub fn open(config: &ServiceConfig) -> Principal {
        let account_id: Arc<str> = config.account_id.as_str().into();
        Principal {
            arn: format!("arn:aws:iam::{account_id}:user/{DEFAULT_IDENTITY}").into(),
            sender_id: account_id.clone(),
            account_id,
            policies: None,
            source_ip: None,
            secure_transport: false,
            enforced: false,
            region: config.region.as_str().into(),
            signed_region: false,
        }
    }

    /// Sets the request's region from the region of its SigV4 credential scope, when that
    /// is a region name ([`names::is_region`]); anything else (`local`, no scope) leaves
    /// the configured region.
    pub fn sign_region(&mut self, scope_region: Option<&str>) {
        if let Some(r) = scope_region.filter(|r| names::is_region(r)) {
            if *self.region != *r {
                self.region = r.into();
            }
            self.signed_region = true;
        }
    }

    /// The scope new resources of this caller are made in: its account and region.
    pub fn scope(&self) -> names::Scope<'_> {
        names::Scope {
            account: &self.account_id,
            region: &self.region,
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
        let account: Arc<str> = account.unwrap_or(&config.account_id).into();
        let (arn, sender_id): (Arc<str>, Arc<str>) = match identity {
            Some(id) => {
                let arn = format!("arn:aws:iam::{account}:{id}");
                let sender = unique_id(&arn);
                (arn.into(), sender.into())
            }
            None => (
                format!("arn:aws:iam::{account}:user/{DEFAULT_IDENTITY}").into(),
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
            region: config.region.as_str().into(),
            signed_region: false,
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
        /// `sqs`, `sns` or `lambda`.
        service: &'static str,
        /// The account.
        account: &'a str,
    },
    /// A resource of `account` without a resource policy in Loft (a Lambda event source
    /// mapping, a configured function), by its ARN.
    Resource {
        /// Its ARN (`arn:aws:lambda:REGION:ACCOUNT:event-source-mapping:UUID`).
        arn: &'a str,
        /// The account it belongs to.
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

impl Core {
    /// The store key of the queue a subscription's RedrivePolicy names as its dead-letter
    /// queue (`{"deadLetterTargetArn": "arn:aws:sqs:...:NAME"}`), if any, and only when it
    /// is a queue the subscription may dead-letter to ([`Core::dead_letter_key`]).
    pub(crate) fn subscription_dlq(
        &self,
        sub: &crate::model::SubscriptionRecord,
    ) -> Option<String> {
        let config = SubscriptionConfig::from_attributes(&sub.attributes);
        let arn = config.dead_letter_target_arn?;
        self.dead_letter_key(&sub.topic_name, config.subscriber_account.as_deref(), &arn)
    }

    /// The store key of dead-letter queue `arn` for a subscription of topic `topic_key`
    /// owned by `subscriber_account` (`None`: the topic's account): `None` when the ARN
    /// names no queue, or, with several accounts, a queue of another account or region
    /// than the subscription's ("The Amazon SNS subscription and Amazon SQS queue must be
    /// under the same AWS account and Region", SNS Developer Guide, "Amazon SNS dead-letter
    /// queues (DLQs)"). With one account only, every queue is the account's.
    pub(crate) fn dead_letter_key(
        &self,
        topic_key: &str,
        subscriber_account: Option<&str>,
        arn: &str,
    ) -> Option<String> {
        let key = self.key_of_arn(arn, "sqs")?;
        if !self.config.multi_account {
            return Some(key);
        }
        let (topic_scope, _) = self.key_scope(topic_key);
        let owner = subscriber_account.unwrap_or(topic_scope.account);
        let (queue_scope, _) = self.key_scope(&key);
        (queue_scope.account == owner && queue_scope.region == topic_scope.region).then_some(key)
    }

    /// The 12-digit account that owns subscription `s`: the one that made it when that
    /// was not its topic's ([`crate::attributes::SUBSCRIBER_ACCOUNT_ATTRIBUTE`]), else its
    /// topic's. Reported as `Owner` by GetSubscriptionAttributes and the list operations.
    pub fn subscription_owner(&self, s: &crate::model::SubscriptionRecord) -> String {
        SubscriptionConfig::from_attributes(&s.attributes)
            .subscriber_account
            .unwrap_or_else(|| self.split_key(&s.topic_name).0.to_owned())
    }

    /// Whether accounts other than the default one exist ([`ServiceConfig::multi_account`]).
    pub fn multi_account(&self) -> bool {
        self.config.multi_account
    }

    /// The configured default account and region: resources there have bare store keys.
    pub fn default_scope(&self) -> names::Scope<'_> {
        names::Scope {
            account: &self.config.account_id,
            region: &self.config.region,
        }
    }

    /// The store key of `name` in `account` and `region` ([`names::scoped_key`]: the bare
    /// name in the default account and region). A key of an account no access key names
    /// (with [`ServiceConfig::multi_account`] off, any account but the default) names no
    /// resource, since nothing can be created there: such a URL or ARN is answered as AWS
    /// answers a missing queue or topic.
    pub fn resource_key(&self, account: &str, region: &str, name: &str) -> String {
        let scope = names::Scope { account, region };
        names::scoped_key(self.default_scope(), scope, name)
    }

    /// Account `account` in the form the store keeps an owning account in: `""` for the
    /// configured default account (as its store keys are bare names), else the account id
    /// ([`crate::model::RecordedMessage::account`]).
    pub fn stored_account(&self, account: &str) -> String {
        if account == self.config.account_id {
            String::new()
        } else {
            account.to_owned()
        }
    }

    /// The account whose resources `principal` sees in Loft's own listings (the console's
    /// and `/_loft/` routes), in [`Core::stored_account`]'s form: its own account when
    /// permissions are enforced (any access key, whether it signed or signed in with HTTP
    /// Basic), `None` (every account) for an open Loft, which has one account only.
    pub fn visible_account(&self, principal: &Principal) -> Option<String> {
        principal
            .enforced
            .then(|| self.stored_account(&principal.account_id))
    }

    /// The account and name of a store key.
    pub fn split_key<'a>(&'a self, key: &'a str) -> (&'a str, &'a str) {
        let (scope, name) = self.key_scope(key);
        (scope.account, name)
    }

    /// Store key `key` in the one form [`names::scoped_key`] makes: a key written in a
    /// longer form than its scope needs (`ACCOUNT/NAME` or `ACCOUNT/REGION/NAME` of the
    /// default account or region) becomes the form the store holds (`NAME`,
    /// `ACCOUNT/NAME`). Lets a client that knows a queue's account and region from its
    /// URL, but not Loft's defaults, name it in full (`loft export`).
    pub fn canonical_key(&self, key: &str) -> String {
        let (scope, name) = self.key_scope(key);
        names::scoped_key(self.default_scope(), scope, name)
    }

    /// The account and region ([`names::Scope`]) and the name of a store key.
    pub fn key_scope<'a>(&'a self, key: &'a str) -> (names::Scope<'a>, &'a str) {
        names::split_scoped_key(self.default_scope(), key)
    }

    /// What the store's scoped listings (`Store::list_queues_of` and its kin) take to read
    /// the resources of `scope` and no other account's: the prefix of its keys outside the
    /// bare form (`ACCOUNT/REGION/` in another region, else `ACCOUNT/`, whose range also
    /// holds the account's keys of other regions, which the listings leave out) and
    /// whether its keys are bare too (the default account in the default region; see
    /// [`names::scoped_key`]). The keys [`Core::in_scope`] keeps for `scope` are among
    /// those listed.
    pub(crate) fn listing_of(&self, scope: names::Scope<'_>) -> (String, bool) {
        let sep = names::ACCOUNT_SEPARATOR;
        let default = self.default_scope();
        if scope.region != default.region {
            (
                format!("{}{sep}{}{sep}", scope.account, scope.region),
                false,
            )
        } else {
            (
                format!("{}{sep}", scope.account),
                scope.account == default.account,
            )
        }
    }

    /// The resources of `scope` (an account in a region) among `items`, in their order:
    /// those whose store key (`key` of each) [`Core::key_scope`] puts in it.
    pub(crate) fn in_scope<T>(
        &self,
        mut items: Vec<T>,
        scope: names::Scope<'_>,
        key: impl Fn(&T) -> &str,
    ) -> Vec<T> {
        items.retain(|i| self.key_scope(key(i)).0 == scope);
        items
    }

    /// The store key an ARN of `service` (`sqs`, `sns`) names: its account, region and
    /// resource (an empty region or account field means the default one). `None` when it
    /// is not such an ARN, or its region is neither the configured one nor shaped like a
    /// region name ([`names::is_region`]): no resource can be there.
    pub fn key_of_arn(&self, arn: &str, service: &str) -> Option<String> {
        let name = names::arn_resource(arn, service)?;
        let account = names::arn_account(arn)
            .filter(|a| !a.is_empty())
            .unwrap_or(&self.config.account_id);
        let region = names::arn_region(arn)
            .filter(|r| !r.is_empty())
            .unwrap_or(&self.config.region);
        if region != self.config.region && !names::is_region(region) {
            return None;
        }
        Some(self.resource_key(account, region, name))
    }

    /// The store key of queue `name` that a queue URL names, with the `region` and
    /// `account` the URL names (if any), for the request of `principal`.
    ///
    /// The region is the request's when it was signed for one ([`Principal::signed_region`]),
    /// else the URL's, else the configured one; the account is the URL's, else the
    /// caller's. An account no access key names has no queues (see [`Core::resource_key`]).
    ///
    /// Errors: `QueueDoesNotExist` when the URL names a region other than the one the
    /// request was signed for: that queue is not in the region the request is served in.
    pub fn queue_key_for(
        &self,
        principal: &Principal,
        region: Option<&str>,
        account: Option<&str>,
        name: &str,
    ) -> Result<String> {
        let region = match region {
            Some(r) if principal.signed_region && *r != *principal.region => {
                return Err(Error::no_queue())
            }
            Some(r) => r,
            None => &principal.region,
        };
        let account = account.unwrap_or(&principal.account_id);
        Ok(self.resource_key(account, region, name))
    }

    /// Checks that `arn` (a topic's, a subscription's) is in the region the request of
    /// `principal` was signed for, as SNS requires: a topic is reached through its own
    /// region's endpoint only (LocalStack's AWS-validated `TestSNSMultiRegions` recordings:
    /// every topic operation from another region is refused so). An unsigned request, or an
    /// ARN without a region field, passes.
    ///
    /// Errors: `InvalidParameter` "Invalid parameter: {param}" (400).
    pub fn check_arn_region(&self, principal: &Principal, arn: &str, param: &str) -> Result<()> {
        match names::arn_region(arn) {
            Some(r) if principal.signed_region && !r.is_empty() && *r != *principal.region => {
                Err(Error::new(
                    ErrorCode::InvalidParameter,
                    format!("Invalid parameter: {param}"),
                ))
            }
            _ => Ok(()),
        }
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
                let policy = self.store.get_topic(key).await?.and_then(|t| {
                    crate::attributes::TopicConfig::from_attributes(&t.attributes).policy
                });
                (self.topic_arn(key), owner.to_owned(), policy)
            }
            Target::Account { service, account } => (
                format!("arn:aws:{service}:{}:{account}:", principal.region),
                account.to_owned(),
                None,
            ),
            Target::Resource { arn, account } => (arn.to_owned(), account.to_owned(), None),
        };
        // A key without policies in its own account, and no resource policy to deny: the
        // common case, decided without building a request.
        if principal.policies.is_none() && policy_text.is_none() && *owner == *principal.account_id
        {
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
                account: principal.account_id.to_string(),
                arn: principal.arn.to_string(),
            },
        )
        .with(
            "aws:SecureTransport",
            vec![principal.secure_transport.to_string()],
        )
        .with(
            "aws:userid",
            vec![user_id(&principal.account_id, &principal.arn)],
        )
        .at(self.now_ms(), &principal.region);
        let request = match &principal.source_ip {
            Some(ip) => request.with("aws:SourceIp", vec![ip.to_string()]),
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
        // Another account's resource answers as one without a policy would, so that a
        // refusal tells neither whether it exists nor what its policy says (docs/security.md:
        // the same answer for another account's resource it may not reach as for a missing
        // one of the same name).
        let foreign = *owner != *principal.account_id;
        let resource_denies = !foreign
            && resource_policy
                .as_deref()
                .is_some_and(|p| p.evaluate(&request) == Decision::ExplicitDeny);
        let identity_denies = match &identity {
            Identity::Policies(list) => list
                .iter()
                .any(|p| p.evaluate(&request) == Decision::ExplicitDeny),
            _ => false,
        };
        let decision = if foreign && !identity_denies {
            Decision::ImplicitDeny
        } else {
            decision
        };
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

    /// The one rule for every write into a queue that no request of the moment makes: an
    /// SNS delivery (or subscription confirmation), a message move task's step, a data
    /// protection audit record. Whether `writer` may still send into the queue of
    /// `queue_key`, whose `Policy` attribute is now `queue_policy`, decided at each write
    /// from the queue's current `Policy`, so that a permission the queue's owner removes
    /// (or an explicit Deny it adds) stops the next write, not only the next request:
    ///
    /// - the queue's `Policy` explicitly denies `sqs:SendMessage` to the writer: no;
    /// - it allows it: yes;
    /// - it says nothing: only within one account (the writer's account owns the queue).
    ///
    /// The request the policy sees: `sqs:SendMessage` on the queue's ARN by
    /// `sns.amazonaws.com` with `aws:SourceArn` and `aws:SourceAccount` of the topic (SNS
    /// Developer Guide, "Sending Amazon SNS messages to an Amazon SQS queue in a different
    /// account"), or by the principal the work is done for (IAM User Guide, "Policy
    /// evaluation logic": across accounts the resource policy must allow it). Only the
    /// queue's policy is weighed here: the principal's identity policies were checked by
    /// the request that set the work up. With one account only
    /// ([`ServiceConfig::multi_account`] off) every write is allowed, as before.
    pub(crate) fn may_send_into(
        &self,
        writer: &Writer<'_>,
        queue_key: &str,
        queue_policy: Option<&str>,
    ) -> bool {
        self.queue_policy_allows(writer, "sqs:SendMessage", queue_key, queue_policy)
    }

    /// The same rule for every read of a queue that no request of the moment makes: an
    /// event source mapping's receive and delete (Lambda polls with the function's
    /// execution role, whose every `ReceiveMessage` and `DeleteMessage` the queue's policy
    /// must allow at that moment: Lambda Developer Guide, "Using Lambda with Amazon SQS",
    /// execution role permissions), a message move task's step out of its source queue.
    /// Whether `reader` may still receive and delete the messages of the queue of
    /// `queue_key` (`Policy` now `queue_policy`): both `sqs:ReceiveMessage` and
    /// `sqs:DeleteMessage` pass [`Core::may_send_into`]'s rule, so a grant the queue's
    /// owner removes, or a Deny it adds, stops the next read, not only the next request.
    pub(crate) fn may_receive_from(
        &self,
        reader: &Writer<'_>,
        queue_key: &str,
        queue_policy: Option<&str>,
    ) -> bool {
        ["sqs:ReceiveMessage", "sqs:DeleteMessage"]
            .into_iter()
            .all(|action| self.queue_policy_allows(reader, action, queue_key, queue_policy))
    }

    /// [`Core::may_send_into`]'s rule for `action` on the queue of `queue_key`.
    fn queue_policy_allows(
        &self,
        writer: &Writer<'_>,
        action: &str,
        queue_key: &str,
        queue_policy: Option<&str>,
    ) -> bool {
        if !self.config.multi_account {
            return true;
        }
        let (owner, _) = self.split_key(queue_key);
        let (caller, account, request_context) = match writer {
            Writer::Topic { topic_arn } => {
                let account = names::arn_account(topic_arn)
                    .filter(|a| !a.is_empty())
                    .unwrap_or(&self.config.account_id);
                (
                    Caller::Service("sns.amazonaws.com".into()),
                    account,
                    Some(*topic_arn),
                )
            }
            Writer::Principal { account, arn } => (
                Caller::Iam {
                    account: (*account).to_owned(),
                    arn: (*arn).to_owned(),
                },
                *account,
                None,
            ),
        };
        let user = match writer {
            Writer::Principal { account, arn } => Some(user_id(account, arn)),
            Writer::Topic { .. } => None,
        };
        let region = names::arn_region(&self.queue_arn(queue_key))
            .unwrap_or(&self.config.region)
            .to_owned();
        let mut request =
            Request::new(action, self.queue_arn(queue_key), caller).at(self.now_ms(), &region);
        if let Some(user) = user {
            request = request.with("aws:userid", vec![user]);
        }
        if let Some(topic_arn) = request_context {
            request = request
                .with("aws:SourceArn", vec![topic_arn.to_owned()])
                .with("aws:SourceAccount", vec![account.to_owned()]);
        }
        let policy = queue_policy
            .filter(|t| !t.is_empty())
            .and_then(|t| self.policy_cache.get(t));
        match policy.as_deref().map(|p| p.evaluate(&request)) {
            Some(Decision::ExplicitDeny) => false,
            Some(Decision::Allow) => true,
            _ => owner == account,
        }
    }
}

/// Who writes into (or reads) a queue on its own, after the request that set the work up
/// ([`Core::may_send_into`], [`Core::may_receive_from`]).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Writer<'a> {
    /// SNS, delivering a message of this topic (or a subscription confirmation).
    Topic {
        /// The topic's ARN.
        topic_arn: &'a str,
    },
    /// A principal of an account, for work it started (a message move task, an event
    /// source mapping), or the topic's account for a data protection audit record.
    Principal {
        /// Its 12-digit account id.
        account: &'a str,
        /// Its IAM ARN (`arn:aws:iam::ACCOUNT:user/NAME`, `...:root`).
        arn: &'a str,
    },
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

    /// aws:userid: a root's is its account id, a user's its unique id, a role's
    /// `ROLE-ID:NAME` (IAM User Guide, "AWS global condition context keys").
    #[test]
    fn user_ids_by_kind_of_identity() {
        let account = "111111111111";
        assert_eq!(user_id(account, "arn:aws:iam::111111111111:root"), account);
        let user = "arn:aws:iam::111111111111:user/path/team-a";
        assert_eq!(user_id(account, user), unique_id(user));
        let role = "arn:aws:iam::111111111111:role/team-b";
        let id = user_id(account, role);
        assert!(id.starts_with("AROA") && id.ends_with(":team-b"), "{id}");
    }

    /// SNS's SenderId in each region (one row each): a user's unique ID form, `AIDA` and
    /// 17 upper-case letters and digits, one per region, never an account id.
    #[test]
    fn sns_sender_ids_are_unique_ids_per_region() {
        let rows = ["us-east-1", "eu-west-1", "ap-southeast-2", "us-gov-west-1"];
        let ids: Vec<String> = rows.iter().map(|r| sns_sender_id(r)).collect();
        for (region, id) in rows.iter().zip(&ids) {
            assert_eq!(id.len(), 21, "{region}: {id}");
            assert!(id.starts_with("AIDA"), "{region}: {id}");
            assert!(
                id.chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit()),
                "{region}: {id}"
            );
            assert_eq!(*id, sns_sender_id(region), "{region}: stable");
        }
        let distinct: std::collections::BTreeSet<&String> = ids.iter().collect();
        assert_eq!(distinct.len(), rows.len());
    }

    #[test]
    fn unique_ids_look_like_aws_ones_and_differ() {
        let a = unique_id("arn:aws:iam::111111111111:user/a");
        let b = unique_id("arn:aws:iam::111111111111:user/b");
        assert!(a.starts_with("AIDA") && a.len() == 21, "{a}");
        assert_ne!(a, b);
        assert_eq!(a, unique_id("arn:aws:iam::111111111111:user/a"));
        assert!(unique_id("arn:aws:iam::1:role/r").starts_with("AROA"));
    }
}
