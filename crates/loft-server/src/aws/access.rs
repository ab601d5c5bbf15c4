//! Which IAM action each AWS operation is and what it acts on, so that every operation of
//! SQS, SNS and Lambda is checked by [`Service::authorize`] before it runs.
//!
//! Each operation declares its access on its line of the service's operations list
//! ([`crate::aws::shape`]'s `operations!` for SQS and SNS, [`accesses!`] for Lambda):
//! `SendMessage(SendMessageRequest) -> SendMessageResult, sqs:SendMessage on QueueUrl(queue_url)`.
//! The macro generates the request's `access()` ([`Access`]: the action and the
//! [`Resource`] built from the input's members), and [`check`] resolves the resource the
//! way the operation will and asks [`Service::authorize`].
//!
//! The action is the service's prefix and the operation's name (`sqs:SendMessage`,
//! `sns:Publish`, `lambda:GetEventSourceMapping`); the batch operations are their single
//! forms (`SendMessageBatch` is `sqs:SendMessage`, `PublishBatch` is `sns:Publish`), as the
//! SQS, SNS and Lambda pages of the Service Authorization Reference ("Actions, resources,
//! and condition keys") list them. The resource is the queue or topic the request names
//! (the topic a subscription's ARN names, the source queue a move task's handle names), a
//! mapping of the Lambda API, a function of the caller's account, or the caller's account
//! for the operations on no one resource (ListQueues, ListTopics, ListEventSourceMappings,
//! CreateEventSourceMapping, the SMS and mobile push operations), whose resource is `*` in
//! that reference.

use loft_core::service::Target;
use loft_core::{Result, Service};

use super::Context;

/// What an operation acts on, as its declaration names it from its input's members.
/// [`check`] resolves each kind to the resource the operation will act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource<'a> {
    /// A queue by its URL (`QueueUrl`): its account and region are the URL's, else the
    /// caller's ([`Context::queue_key`]).
    QueueUrl(&'a str),
    /// A queue by its name (`QueueName`) in the caller's account, or in the account of
    /// `QueueOwnerAWSAccountId` when given.
    QueueName(&'a str, Option<&'a str>),
    /// A queue to be created, by its name (`QueueName`), in the caller's account and
    /// region (CreateQueue).
    NewQueue(&'a str),
    /// A queue by its ARN (`SourceArn`).
    QueueArn(&'a str),
    /// StartMessageMoveTask's source queue (`SourceArn`), and its destination queue
    /// (`DestinationArn`) when given: see [`move_task`] for what each needs.
    MoveTask(&'a str, Option<&'a str>),
    /// A message move task by its `TaskHandle`: the source queue the handle names
    /// ([`Sqs::move_task_source`]), whether or not such a task exists.
    TaskHandle(&'a str),
    /// A topic by its ARN (`TopicArn`).
    TopicArn(&'a str),
    /// A topic by its ARN in `ResourceArn` (the tagging and data protection operations).
    ResourceArn(&'a str),
    /// A topic by its name (`Name`) in the caller's account and region (CreateTopic).
    TopicName(&'a str),
    /// Publish's target as Publish resolves it: its `TopicArn` when given, else its
    /// `TargetArn` (a topic, or a mobile push endpoint, which only its own account's callers
    /// reach); with neither (a `PhoneNumber`), the caller's account.
    PublishTarget(Option<&'a str>, Option<&'a str>),
    /// A subscription by its ARN (`SubscriptionArn`): the topic the ARN names (the ARN
    /// without its last `:ID`), whether or not the subscription exists. The operation
    /// finds a subscription only on the topic its ARN names
    /// ([`SnsDelivery::subscription_by_arn`]), so that topic is the one it acts on.
    Subscription(&'a str),
    /// ConfirmSubscription's topic (`TopicArn`): in the request's region, as every SNS ARN,
    /// but checked on the caller's account, not on the topic. The token sent to the
    /// endpoint is what authorizes a confirmation (SNS API Reference, ConfirmSubscription:
    /// it "verifies an endpoint owner's intent to receive messages by validating the token
    /// sent to the endpoint by an earlier Subscribe action"), and that owner is often not
    /// the topic's: a queue of another account confirms the subscription the topic's owner
    /// made (SNS Developer Guide, "Sending Amazon SNS messages to an Amazon SQS queue in a
    /// different account"). Unsigned, the call is open ([`crate::auth`]).
    ConfirmationTopic(&'a str),
    /// An event source mapping by its `UUID`, in the account it belongs to.
    Mapping(&'a str),
    /// A new event source mapping's queue (`EventSourceArn`): the account's
    /// CreateEventSourceMapping, and reading that queue ([`mapping_source`]).
    MappingSource(Option<&'a str>),
    /// A configured function of the caller's account by its name or ARN (`FunctionName`,
    /// [`loft_core::service::Functions::own_function`]).
    Function(&'a str),
    /// No one resource: the caller's account.
    Account,
}

/// An operation's IAM action and resource, from its declaration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Access<'a> {
    /// The action: `sqs:SendMessage`, `sns:Publish`, `lambda:GetEventSourceMapping`.
    pub action: &'static str,
    /// What it acts on.
    pub resource: Resource<'a>,
}

impl Access<'_> {
    /// The service prefix of the action (`sqs`, `sns`, `lambda`).
    pub fn service(&self) -> &'static str {
        match self.action.split_once(':') {
            Some(("sqs", _)) => "sqs",
            Some(("sns", _)) => "sns",
            _ => "lambda",
        }
    }
}

/// An input member as a [`Resource`] field: a `String` as `&str`, an `Option<String>` as
/// `Option<&str>`.
pub trait Member<'a> {
    /// The field's type.
    type Out;
    /// The member as the field.
    fn member(&'a self) -> Self::Out;
}

impl<'a> Member<'a> for String {
    type Out = &'a str;
    fn member(&'a self) -> &'a str {
        self
    }
}

impl<'a> Member<'a> for Option<String> {
    type Out = Option<&'a str>;
    fn member(&'a self) -> Option<&'a str> {
        self.as_deref()
    }
}

/// Generates `$req::access()` from one declaration per operation:
/// `Op, prefix:Action on Kind(member, ...)` ([`Resource`]'s `Kind`, built from the input's
/// members through [`Member`]). Used by `operations!` and by the Lambda operations.
macro_rules! accesses {
    ( $req:ident {
        $( $op:ident, $svc:ident : $action:ident on $kind:ident $( ( $( $member:ident ),* ) )? ),*
        $(,)?
    } ) => {
        impl $req {
            /// Each operation's name and the input members (Rust field names) its access
            /// declaration resolves the resource from: a test holds every member that names
            /// a resource (an ARN, a URL) to being one of them.
            pub const ACCESS_MEMBERS: &'static [(&'static str, &'static [&'static str])] = &[
                $( (stringify!($op), &[ $( $( stringify!($member) ),* )? ]), )*
            ];

            /// The operation's IAM action and the resource it acts on, as its declaration
            /// names them ([`crate::aws::access`]).
            pub fn access(&self) -> $crate::aws::access::Access<'_> {
                match self {
                    $( $req::$op(_i) => $crate::aws::access::Access {
                        action: concat!(stringify!($svc), ":", stringify!($action)),
                        resource: $crate::aws::access::Resource::$kind $( (
                            $( $crate::aws::access::Member::member(&_i.$member) ),*
                        ) )?,
                    }, )*
                }
            }
        }
    };
}
pub(crate) use accesses;

/// Where a checked action lands once its [`Resource`] is resolved.
enum Resolved {
    /// The queue of this store key.
    Queue(String),
    /// The topic of this store key.
    Topic(String),
    /// A resource without a resource policy: its ARN and account.
    Other { arn: String, account: String },
    /// The caller's account (also what a name that resolves to nothing is checked on;
    /// the operation then refuses it in its own words).
    Account,
}

/// The ARN an SNS access names and the parameter that carries it, for the region rule.
fn sns_arn<'a>(r: &Resource<'a>) -> Option<(&'a str, &'static str)> {
    match *r {
        Resource::TopicArn(a) | Resource::ConfirmationTopic(a) => Some((a, "TopicArn")),
        Resource::PublishTarget(a, _) => a.map(|a| (a, "TopicArn")),
        Resource::ResourceArn(a) => Some((a, "ResourceArn")),
        Resource::Subscription(a) => Some((a, "SubscriptionArn")),
        Resource::QueueUrl(_)
        | Resource::QueueName(..)
        | Resource::NewQueue(_)
        | Resource::QueueArn(_)
        | Resource::MoveTask(..)
        | Resource::TaskHandle(_)
        | Resource::TopicName(_)
        | Resource::Mapping(_)
        | Resource::MappingSource(_)
        | Resource::Function(_)
        | Resource::Account => None,
    }
}

/// Checks an operation's [`Access`] for the caller of `ctx`: an SNS ARN is in the
/// request's region ([`Service::check_arn_region`], also for an open Loft); then, when
/// permissions are enforced, the caller's and the resource's policies allow the action on
/// the resource as the operation will resolve it.
///
/// Errors: `InvalidParameter` (an SNS ARN of another region); `AccessDenied` (SQS,
/// Lambda) or `AuthorizationError` (SNS), 403. A URL, ARN, handle or UUID that names
/// nothing is checked on the caller's account and left to the operation, which refuses it
/// in its own words.
pub async fn check(svc: &Service, ctx: &Context, access: Access<'_>) -> Result<()> {
    if let Some((arn, param)) = sns_arn(&access.resource) {
        svc.check_arn_region(&ctx.principal, arn, param)?;
    }
    if !ctx.principal.enforced {
        return Ok(());
    }
    let p = &ctx.principal;
    let queue = |key: Option<String>| key.map_or(Resolved::Account, Resolved::Queue);
    let topic = |key: Option<String>| key.map_or(Resolved::Account, Resolved::Topic);
    let resolved = match access.resource {
        Resource::QueueUrl(url) => queue(ctx.queue_key(svc, url).ok()),
        Resource::QueueName(name, owner) => {
            let owner = owner.filter(|o| !o.is_empty());
            Resolved::Queue(ctx.named_queue_key(svc, name, owner)?)
        }
        Resource::NewQueue(name) => Resolved::Queue(ctx.named_queue_key(svc, name, None)?),
        Resource::QueueArn(arn) | Resource::MoveTask(arn, _) => queue(svc.key_of_arn(arn, "sqs")),
        // Checked on the queue the handle names before the task is looked up, so a caller
        // refused on that queue gets the same 403 for a running task's handle as for one
        // made up to name the queue: a 404 for the second would tell it the first exists.
        Resource::TaskHandle(handle) => queue(svc.sqs().move_task_source(handle)),
        Resource::TopicArn(arn) | Resource::ResourceArn(arn) => topic(svc.key_of_arn(arn, "sns")),
        // A TargetArn that is not a push endpoint is published to as a topic
        // (`Service::publish_as`), so it is checked as one.
        Resource::PublishTarget(topic_arn, target_arn) => topic(
            topic_arn
                .or(target_arn.filter(|a| {
                    !loft_core::names::arn_resource(a, "sns")
                        .is_some_and(|r| r.starts_with("endpoint/"))
                }))
                .and_then(|a| svc.key_of_arn(a, "sns")),
        ),
        Resource::TopicName(name) => {
            Resolved::Topic(svc.resource_key(&p.account_id, &p.region, name))
        }
        // A subscription belongs to the account that made it (SNS Developer Guide,
        // "Sending Amazon SNS messages to an Amazon SQS queue in a different account"), so
        // the caller's own subscription on another account's topic is checked as the
        // caller's: its policies on the topic's ARN (the subscription operations' resource
        // in the Service Authorization Reference), not the topic's policy. Any other is
        // checked on the topic the ARN names, as if the subscription were not looked up:
        // a caller refused on that topic gets the same 403 for another account's
        // subscription as for a made-up id on the same topic (as for topics themselves). A
        // subscription is found only on the topic its ARN names, so this is also the topic
        // it belongs to.
        Resource::Subscription(arn) => {
            let topic_arn = arn.rsplit_once(':').map(|(topic_arn, _)| topic_arn);
            let topic_key = topic_arn.and_then(|a| svc.key_of_arn(a, "sns"));
            let topic_account = topic_key.as_deref().map(|k| svc.split_key(k).0);
            match svc.sns().subscription_owner_of(arn).await? {
                Some(owner) if owner == *p.account_id && topic_account != Some(&owner) => {
                    Resolved::Other {
                        arn: topic_arn.unwrap_or(arn).to_owned(),
                        account: owner,
                    }
                }
                _ => topic(topic_key),
            }
        }
        // Mappings have no resource policy and live in their account (Lambda answers a
        // UUID of another account's mapping as one that does not exist), so another
        // account's is checked, like a missing one, on the caller's account, and the
        // operation answers `ResourceNotFoundException`: a 403 would tell the caller that
        // the UUID exists.
        Resource::Mapping(uuid) => match svc.functions().find_event_source_mapping(uuid).await? {
            Some(m) if svc.functions().mapping_account(&m) == &*p.account_id => Resolved::Other {
                arn: svc.functions().mapping_arn(&m),
                account: p.account_id.to_string(),
            },
            _ => Resolved::Account,
        },
        // A configured function belongs to its account (`account` in its config), and a
        // FunctionName alone names the caller's own (Lambda resolves it in the caller's
        // account). Another account's function is checked, like a missing one, on the
        // caller's account, and the operation answers `ResourceNotFoundException` naming
        // the ARN the caller named: a 403 would tell the caller that the function exists.
        Resource::Function(name) => match svc.functions().own_function(&p.account_id, name) {
            Ok(f) => Resolved::Other {
                arn: svc.functions().function_arn(&f.name),
                account: p.account_id.to_string(),
            },
            Err(_) => Resolved::Account,
        },
        Resource::MappingSource(_) | Resource::ConfirmationTopic(_) | Resource::Account => {
            Resolved::Account
        }
    };
    let target = match &resolved {
        Resolved::Queue(k) => Target::Queue(k),
        Resolved::Topic(k) => Target::Topic(k),
        Resolved::Other { arn, account } => Target::Resource { arn, account },
        Resolved::Account => Target::Account {
            service: access.service(),
            account: &p.account_id,
        },
    };
    svc.authorize(p, access.action, target).await?;
    match (access.resource, resolved) {
        (Resource::MoveTask(_, destination), Resolved::Queue(source)) => {
            move_task(svc, ctx, &source, destination).await
        }
        (Resource::MappingSource(Some(arn)), _) => mapping_source(svc, ctx, arn).await,
        _ => Ok(()),
    }
}

/// The further permissions a message move task needs, as the SQS Developer Guide's "Amazon
/// SQS API permissions: Actions and resource reference" lists them for the move task
/// operations: `sqs:ReceiveMessage`, `sqs:DeleteMessage` and `sqs:GetQueueAttributes` on
/// the source (dead-letter) queue, whose messages the task takes, and `sqs:SendMessage` on
/// the destination queue when `DestinationArn` names one (without it, the messages go back
/// to the queues they were moved from, which are not checked).
///
/// Errors: `AccessDenied` (403) naming the first action refused.
async fn move_task(
    svc: &Service,
    ctx: &Context,
    source: &str,
    destination: Option<&str>,
) -> Result<()> {
    for action in [
        "sqs:ReceiveMessage",
        "sqs:DeleteMessage",
        "sqs:GetQueueAttributes",
    ] {
        svc.authorize(&ctx.principal, action, Target::Queue(source))
            .await?;
    }
    if let Some(key) = destination.and_then(|arn| svc.key_of_arn(arn, "sqs")) {
        svc.authorize(&ctx.principal, "sqs:SendMessage", Target::Queue(&key))
            .await?;
    }
    Ok(())
}

/// What a new event source mapping needs on its queue: Lambda polls the queue with the
/// function's execution role, which needs `sqs:ReceiveMessage`, `sqs:DeleteMessage` and
/// `sqs:GetQueueAttributes` on it (Lambda Developer Guide, "Using Lambda with Amazon SQS":
/// execution role permissions). Loft polls for the caller, so the caller needs them: on
/// the queue the ARN names in its account and region ([`Service::key_of_arn`]). An ARN
/// that names no queue is left to the operation.
///
/// Errors: `AccessDenied` (403) naming the first action refused.
async fn mapping_source(svc: &Service, ctx: &Context, arn: &str) -> Result<()> {
    let Some(key) = svc.key_of_arn(arn, "sqs") else {
        return Ok(());
    };
    for action in [
        "sqs:ReceiveMessage",
        "sqs:DeleteMessage",
        "sqs:GetQueueAttributes",
    ] {
        svc.authorize(&ctx.principal, action, Target::Queue(&key))
            .await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::aws::lambda::types::*;
    use crate::aws::shape::Wire;
    use crate::aws::sns::types::SnsRequest;
    use crate::aws::sqs::types::SqsRequest;

    fn sqs(op: &str, input: serde_json::Value) -> SqsRequest {
        SqsRequest::from_json(op, input, Wire::SqsJson).expect("decodes")
    }

    fn sns(op: &str, input: serde_json::Value) -> SnsRequest {
        SnsRequest::from_json(op, input, Wire::SnsQuery).expect("decodes")
    }

    #[test]
    fn sqs_declarations_name_the_action_and_the_member_that_names_the_resource() {
        let r = sqs(
            "SendMessageBatch",
            json!({"QueueUrl": "http://h/1/q", "Entries": []}),
        );
        assert_eq!(
            r.access(),
            Access {
                action: "sqs:SendMessage",
                resource: Resource::QueueUrl("http://h/1/q"),
            }
        );
        let r = sqs("CancelMessageMoveTask", json!({"TaskHandle": "h"}));
        assert_eq!(
            r.access(),
            Access {
                action: "sqs:CancelMessageMoveTask",
                resource: Resource::TaskHandle("h"),
            }
        );
        let r = sqs(
            "GetQueueUrl",
            json!({"QueueName": "q", "QueueOwnerAWSAccountId": "111111111111"}),
        );
        assert_eq!(
            r.access().resource,
            Resource::QueueName("q", Some("111111111111"))
        );
        let r = sqs(
            "StartMessageMoveTask",
            json!({"SourceArn": "arn:aws:sqs:us-east-1:1:dlq"}),
        );
        assert_eq!(
            r.access().resource,
            Resource::MoveTask("arn:aws:sqs:us-east-1:1:dlq", None)
        );
        assert_eq!(
            sqs("ListQueues", json!({})).access(),
            Access {
                action: "sqs:ListQueues",
                resource: Resource::Account,
            }
        );
    }

    #[test]
    fn sns_declarations_resolve_subscriptions_and_publish_targets() {
        let arn = "arn:aws:sns:us-east-1:111111111111:t:0d2a0a5e";
        let r = sns("Unsubscribe", json!({"SubscriptionArn": arn}));
        assert_eq!(
            r.access(),
            Access {
                action: "sns:Unsubscribe",
                resource: Resource::Subscription(arn),
            }
        );
        let r = sns(
            "Publish",
            json!({"PhoneNumber": "+15555550100", "Message": "m"}),
        );
        assert_eq!(r.access().resource, Resource::PublishTarget(None, None));
        let topic = "arn:aws:sns:us-east-1:111111111111:t";
        let r = sns("Publish", json!({"TargetArn": topic, "Message": "m"}));
        assert_eq!(
            r.access().resource,
            Resource::PublishTarget(None, Some(topic))
        );
        let r = sns(
            "PublishBatch",
            json!({"TopicArn": "arn:aws:sns:us-east-1:1:t", "PublishBatchRequestEntries": []}),
        );
        assert_eq!(r.access().action, "sns:Publish");
    }

    #[test]
    fn lambda_declarations_name_lambdas_actions() {
        let r = LambdaRequest::DeleteEventSourceMapping(DeleteEventSourceMappingRequest {
            uuid: "u".into(),
        });
        assert_eq!(
            r.access(),
            Access {
                action: "lambda:DeleteEventSourceMapping",
                resource: Resource::Mapping("u"),
            }
        );
        let r = LambdaRequest::CreateEventSourceMapping(CreateEventSourceMappingRequest {
            event_source_arn: Some("arn:aws:sqs:us-east-1:1:q".into()),
            ..Default::default()
        });
        assert_eq!(
            r.access().resource,
            Resource::MappingSource(Some("arn:aws:sqs:us-east-1:1:q"))
        );
        assert_eq!(r.access().service(), "lambda");
    }

    /// The members of `op` that name a resource: an ARN, a URL or a task handle.
    fn resource_members(op: &crate::aws::shape::Operation) -> Vec<&'static str> {
        op.input
            .iter()
            .filter(|m| matches!(m.kind, crate::aws::shape::Kind::String))
            .map(|m| m.name)
            .filter(|n| n.ends_with("Arn") || n.ends_with("Url") || *n == "TaskHandle")
            .collect()
    }

    /// `TargetArn` and `target_arn` alike.
    fn plain(name: &str) -> String {
        name.chars()
            .filter(|c| *c != '_')
            .flat_map(char::to_lowercase)
            .collect()
    }

    /// Every member that names a resource is one the operation's access declaration
    /// resolves, so no ARN or URL reaches an operation unchecked. The exceptions are
    /// members whose resource the operation does not act on as the caller's: each says why.
    #[test]
    fn every_member_naming_a_resource_is_declared() {
        // (operation, member, why it is not the checked resource)
        let not_the_resource: &[(&str, &str, &str)] = &[(
            "StartMessageMoveTask",
            "DestinationArn",
            "declared second: `move_task` checks sqs:SendMessage on it",
        )];
        // Mobile push resources have no resource policy: an application or endpoint is its
        // account's alone, and the Service looks it up in the caller's account only, so
        // another account's ARN names nothing there (NotFound). The check is the account's.
        let platform: &[(&str, &str)] = &[
            ("CreatePlatformEndpoint", "PlatformApplicationArn"),
            ("DeletePlatformApplication", "PlatformApplicationArn"),
            ("GetPlatformApplicationAttributes", "PlatformApplicationArn"),
            ("SetPlatformApplicationAttributes", "PlatformApplicationArn"),
            (
                "ListEndpointsByPlatformApplication",
                "PlatformApplicationArn",
            ),
            ("DeleteEndpoint", "EndpointArn"),
            ("GetEndpointAttributes", "EndpointArn"),
            ("SetEndpointAttributes", "EndpointArn"),
        ];
        let services = [
            (
                crate::aws::sqs::types::OPERATIONS,
                SqsRequest::ACCESS_MEMBERS,
            ),
            (
                crate::aws::sns::types::OPERATIONS,
                SnsRequest::ACCESS_MEMBERS,
            ),
        ];
        let mut undeclared = Vec::new();
        for (operations, declared) in services {
            for op in operations {
                let (_, members) = declared
                    .iter()
                    .find(|(name, _)| *name == op.name)
                    .expect("every operation has an access declaration");
                for member in resource_members(op) {
                    let named = members.iter().any(|m| plain(m) == plain(member));
                    let excused = not_the_resource
                        .iter()
                        .any(|(o, m, _)| *o == op.name && *m == member)
                        || platform.iter().any(|(o, m)| *o == op.name && *m == member);
                    if !named && !excused {
                        undeclared.push(format!("{}.{member}", op.name));
                    }
                }
            }
        }
        assert!(
            undeclared.is_empty(),
            "members naming a resource that no access declaration checks: {undeclared:?}"
        );
    }
}
