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
                    .filter(|o| !o.is_empty()),
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
                .await?
        }
        None => {
            let target = Target::Account {
                service: "sqs",
                account: &ctx.principal.account_id,
            };
            svc.authorize(&ctx.principal, &action, target).await?
        }
    }
    if let (R::StartMessageMoveTask(i), Some(source)) = (req, &key) {
        move_task(svc, ctx, source, i.destination_arn.as_deref()).await?;
    }
    Ok(())
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

/// The topic ARN of a subscription ARN (`TOPIC_ARN:UUID`).
fn subscription_topic(arn: &str) -> &str {
    arn.rsplit_once(':').map_or(arn, |(topic, _)| topic)
}

/// The ARN an SNS request acts on and the parameter that names it: the topic's, the
/// subscription's (whose topic is the resource), the tagged resource's; `None` for the
/// operations on no one topic.
fn sns_target(req: &SnsRequest) -> Option<(&str, &'static str)> {
    use SnsRequest as R;
    Some(match req {
        R::AddPermission(i) => (&i.topic_arn, "TopicArn"),
        R::ConfirmSubscription(i) => (&i.topic_arn, "TopicArn"),
        R::DeleteTopic(i) => (&i.topic_arn, "TopicArn"),
        R::GetDataProtectionPolicy(i) => (&i.resource_arn, "ResourceArn"),
        R::GetSubscriptionAttributes(i) => (&i.subscription_arn, "SubscriptionArn"),
        R::GetTopicAttributes(i) => (&i.topic_arn, "TopicArn"),
        R::ListSubscriptionsByTopic(i) => (&i.topic_arn, "TopicArn"),
        R::ListTagsForResource(i) => (&i.resource_arn, "ResourceArn"),
        R::Publish(i) => (i.topic_arn.as_deref()?, "TopicArn"),
        R::PublishBatch(i) => (&i.topic_arn, "TopicArn"),
        R::PutDataProtectionPolicy(i) => (&i.resource_arn, "ResourceArn"),
        R::RemovePermission(i) => (&i.topic_arn, "TopicArn"),
        R::SetSubscriptionAttributes(i) => (&i.subscription_arn, "SubscriptionArn"),
        R::SetTopicAttributes(i) => (&i.topic_arn, "TopicArn"),
        R::Subscribe(i) => (&i.topic_arn, "TopicArn"),
        R::TagResource(i) => (&i.resource_arn, "ResourceArn"),
        R::Unsubscribe(i) => (&i.subscription_arn, "SubscriptionArn"),
        R::UntagResource(i) => (&i.resource_arn, "ResourceArn"),
        _ => return None,
    })
}

/// Checks an SNS request: the topic it names is in the request's region
/// ([`Service::check_arn_region`]), and the caller's and the topic's policies allow it.
///
/// Errors: `InvalidParameter` (a topic of another region), `AuthorizationError` (403); an
/// ARN that names no topic is left to the operation.
pub async fn sns(svc: &Service, ctx: &Context, req: &SnsRequest) -> Result<()> {
    use SnsRequest as R;
    let target = sns_target(req);
    if let Some((arn, param)) = target {
        svc.check_arn_region(&ctx.principal, arn, param)?;
    }
    if !ctx.principal.enforced {
        return Ok(());
    }
    let action = match req.name() {
        "PublishBatch" => "Publish",
        other => other,
    };
    let key = match (req, target) {
        (R::CreateTopic(i), _) => {
            let p = &ctx.principal;
            Some(svc.resource_key(&p.account_id, &p.region, &i.name))
        }
        (R::GetSubscriptionAttributes(_), Some((arn, _)))
        | (R::SetSubscriptionAttributes(_), Some((arn, _)))
        | (R::Unsubscribe(_), Some((arn, _))) => svc.key_of_arn(subscription_topic(arn), "sns"),
        (_, Some((arn, _))) => svc.key_of_arn(arn, "sns"),
        (_, None) => None,
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
