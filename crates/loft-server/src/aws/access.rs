//! Which IAM action each AWS operation is and what it acts on, so that every operation of
//! both services is checked by [`Service::authorize`] before it runs.
//!
//! The action is the service's prefix and the operation's name (`sqs:SendMessage`,
//! `sns:Publish`); the batch operations are their single forms (`SendMessageBatch` is
//! `sqs:SendMessage`, `PublishBatch` is `sns:Publish`), as the SQS and SNS "Actions,
//! resources, and condition keys" pages of the Service Authorization Reference list them.
//! The resource is the queue or topic the request names (a subscription's topic for the
//! subscription operations), or the caller's account for the operations on no one resource
//! (ListQueues, ListTopics, the SMS and mobile push operations).

use loft_core::service::Target;
use loft_core::{Result, Service};

use super::sns::types::SnsRequest;
use super::sqs::types::SqsRequest;
use super::sqs::Context;

/// Checks an SQS request against the caller's and the queue's policies.
///
/// Errors: `AccessDenied` (403); a URL or ARN that names no queue is left to the operation,
/// which refuses it in its own words.
pub async fn sqs(svc: &Service, ctx: &Context, req: &SqsRequest) -> Result<()> {
    use SqsRequest as R;
    if !ctx.principal.enforced {
        return Ok(());
    }
    let action = match req.name() {
        "SendMessageBatch" => "SendMessage",
        "DeleteMessageBatch" => "DeleteMessage",
        "ChangeMessageVisibilityBatch" => "ChangeMessageVisibility",
        other => other,
    };
    let url_key = |url: &str| ctx.queue_key(svc, url).ok();
    let key = match req {
        R::AddPermission(i) => url_key(&i.queue_url),
        R::ChangeMessageVisibility(i) => url_key(&i.queue_url),
        R::ChangeMessageVisibilityBatch(i) => url_key(&i.queue_url),
        R::DeleteMessage(i) => url_key(&i.queue_url),
        R::DeleteMessageBatch(i) => url_key(&i.queue_url),
        R::DeleteQueue(i) => url_key(&i.queue_url),
        R::GetQueueAttributes(i) => url_key(&i.queue_url),
        R::ListDeadLetterSourceQueues(i) => url_key(&i.queue_url),
        R::ListQueueTags(i) => url_key(&i.queue_url),
        R::PurgeQueue(i) => url_key(&i.queue_url),
        R::ReceiveMessage(i) => url_key(&i.queue_url),
        R::RemovePermission(i) => url_key(&i.queue_url),
        R::SendMessage(i) => url_key(&i.queue_url),
        R::SendMessageBatch(i) => url_key(&i.queue_url),
        R::SetQueueAttributes(i) => url_key(&i.queue_url),
        R::TagQueue(i) => url_key(&i.queue_url),
        R::UntagQueue(i) => url_key(&i.queue_url),
        R::CreateQueue(i) => Some(ctx.named_queue_key(svc, &i.queue_name, None)),
        R::GetQueueUrl(i) => Some(
            ctx.named_queue_key(
                svc,
                &i.queue_name,
                i.queue_owner_aws_account_id
                    .as_deref()
                    .filter(|_| svc.multi_account()),
            ),
        ),
        R::ListMessageMoveTasks(i) => svc.key_of_arn(&i.source_arn, "sqs"),
        R::StartMessageMoveTask(i) => svc.key_of_arn(&i.source_arn, "sqs"),
        R::ListQueues(_) | R::CancelMessageMoveTask(_) => None,
    };
    let action = format!("sqs:{action}");
    match &key {
        Some(k) => {
            svc.authorize(&ctx.principal, &action, Target::Queue(k))
                .await
        }
        None => {
            let target = Target::Account {
                service: "sqs",
                account: &ctx.principal.account_id,
            };
            svc.authorize(&ctx.principal, &action, target).await
        }
    }
}

/// The topic ARN of a subscription ARN (`TOPIC_ARN:UUID`).
fn subscription_topic(arn: &str) -> &str {
    arn.rsplit_once(':').map_or(arn, |(topic, _)| topic)
}

/// Checks an SNS request against the caller's and the topic's policies.
///
/// Errors: `AuthorizationError` (403); an ARN that names no topic is left to the operation.
pub async fn sns(svc: &Service, ctx: &Context, req: &SnsRequest) -> Result<()> {
    use SnsRequest as R;
    if !ctx.principal.enforced {
        return Ok(());
    }
    let action = match req.name() {
        "PublishBatch" => "Publish",
        other => other,
    };
    let topic = |arn: &str| svc.key_of_arn(arn, "sns");
    let key = match req {
        R::AddPermission(i) => topic(&i.topic_arn),
        R::ConfirmSubscription(i) => topic(&i.topic_arn),
        R::CreateTopic(i) => Some(svc.resource_key(&ctx.principal.account_id, &i.name)),
        R::DeleteTopic(i) => topic(&i.topic_arn),
        R::GetDataProtectionPolicy(i) => topic(&i.resource_arn),
        R::GetSubscriptionAttributes(i) => topic(subscription_topic(&i.subscription_arn)),
        R::GetTopicAttributes(i) => topic(&i.topic_arn),
        R::ListSubscriptionsByTopic(i) => topic(&i.topic_arn),
        R::ListTagsForResource(i) => topic(&i.resource_arn),
        R::Publish(i) => i.topic_arn.as_deref().and_then(topic),
        R::PublishBatch(i) => topic(&i.topic_arn),
        R::PutDataProtectionPolicy(i) => topic(&i.resource_arn),
        R::RemovePermission(i) => topic(&i.topic_arn),
        R::SetSubscriptionAttributes(i) => topic(subscription_topic(&i.subscription_arn)),
        R::SetTopicAttributes(i) => topic(&i.topic_arn),
        R::Subscribe(i) => topic(&i.topic_arn),
        R::TagResource(i) => topic(&i.resource_arn),
        R::Unsubscribe(i) => topic(subscription_topic(&i.subscription_arn)),
        R::UntagResource(i) => topic(&i.resource_arn),
        _ => None,
    };
    let action = format!("sns:{action}");
    match &key {
        Some(k) => {
            svc.authorize(&ctx.principal, &action, Target::Topic(k))
                .await
        }
        None => {
            let target = Target::Account {
                service: "sns",
                account: &ctx.principal.account_id,
            };
            svc.authorize(&ctx.principal, &action, target).await
        }
    }
}
