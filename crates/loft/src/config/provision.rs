//! Making the file's queues, topics, subscriptions and event source mappings in the
//! service at start (and again after a reset), idempotently.

use std::future::Future;
use std::ops::Range;

use loft_core::{ErrorCode, Service};

use super::{error_at, Config, ConfigError};

/// What [`Config::provision`] did, by resource.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Provisioned {
    /// Queues created.
    pub queues_created: Vec<String>,
    /// Queues that existed and got the declared attributes and tags.
    pub queues_updated: Vec<String>,
    /// Topics created.
    pub topics_created: Vec<String>,
    /// Topics that existed and got the declared attributes and tags.
    pub topics_updated: Vec<String>,
    /// Subscription ARNs created or updated.
    pub subscriptions: Vec<String>,
    /// Event source mapping UUIDs created or updated.
    pub event_source_mappings: Vec<String>,
}

impl Config {
    fn error(&self, span: &Range<usize>, message: impl Into<String>) -> ConfigError {
        error_at(&self.path, &self.text, span, message)
    }

    /// Creates or updates every declared queue (dead-letter queues first), topic and
    /// subscription through `svc`, so validation is the service's.
    ///
    /// Errors: the first resource the service refuses, with its line in the file and the
    /// service's error code and message.
    pub async fn provision(&self, svc: &Service) -> Result<Provisioned, ConfigError> {
        let mut done = Provisioned::default();
        let aws = |e: loft_core::Error| format!("{}: {}", e.code.aws_code(), e.message);
        for q in &self.queues {
            let at = |e: loft_core::Error| {
                let span = q
                    .attribute_spans
                    .iter()
                    .find(|(name, _)| e.message.contains(name.as_str()))
                    .map_or(&q.span, |(_, s)| s);
                self.error(span, format!("queue {}: {}", q.name, aws(e)))
            };
            let update = async {
                // FifoQueue follows the name (checked at parse), so it cannot differ.
                let mut attrs = q.attributes.clone();
                attrs.remove("FifoQueue");
                if !attrs.is_empty() {
                    svc.sqs().set_queue_attributes(&q.name, attrs).await?;
                }
                if !q.tags.is_empty() {
                    svc.sqs().tag_queue(&q.name, q.tags.clone()).await?;
                }
                tracing::info!(queue = %q.name, "queue from the configuration exists; attributes applied");
                Ok(())
            };
            let create = async {
                svc.sqs()
                    .create_queue(&q.name, q.attributes.clone(), q.tags.clone())
                    .await?;
                tracing::info!(queue = %q.name, "queue created from the configuration");
                Ok(())
            };
            let found = svc.queue(&q.name).await;
            match create_or_update(found, ErrorCode::QueueDoesNotExist, update, create)
                .await
                .map_err(at)?
            {
                Made::Updated => done.queues_updated.push(q.name.clone()),
                Made::Created => done.queues_created.push(q.name.clone()),
            }
        }
        for t in &self.topics {
            let arn = svc.topic_arn(&t.name);
            let at =
                |e: loft_core::Error| self.error(&t.span, format!("topic {}: {}", t.name, aws(e)));
            let update = async {
                for (k, v) in &t.attributes {
                    if k == "FifoTopic" {
                        continue;
                    }
                    svc.sns().set_topic_attribute(&arn, k, v).await?;
                }
                if !t.tags.is_empty() {
                    let tags = t.tags.clone().into_iter().collect();
                    svc.sns().tag_topic(&arn, tags).await?;
                }
                tracing::info!(topic = %t.name, "topic from the configuration exists; attributes applied");
                Ok(())
            };
            let create = async {
                let tags = t.tags.clone().into_iter().collect();
                svc.sns()
                    .create_topic(&t.name, t.attributes.clone(), tags)
                    .await?;
                tracing::info!(topic = %t.name, "topic created from the configuration");
                Ok(())
            };
            let found = svc.sns().topic_by_arn(&arn).await;
            match create_or_update(found, ErrorCode::NotFound, update, create)
                .await
                .map_err(at)?
            {
                Made::Updated => done.topics_updated.push(t.name.clone()),
                Made::Created => done.topics_created.push(t.name.clone()),
            }
            for s in &t.subscriptions {
                let at = |e: loft_core::Error| {
                    self.error(
                        &s.span,
                        format!(
                            "subscription of topic {} to {}: {}",
                            t.name,
                            s.endpoint,
                            aws(e)
                        ),
                    )
                };
                let existing = self
                    .find_subscription(svc, &arn, &s.protocol, &s.endpoint)
                    .await
                    .map_err(at)?;
                let sub_arn = match existing {
                    Some(sub_arn) => {
                        for (k, v) in &s.attributes {
                            svc.sns()
                                .set_subscription_attribute(&sub_arn, k, v)
                                .await
                                .map_err(at)?;
                        }
                        sub_arn
                    }
                    None => {
                        svc.sns()
                            .subscribe(
                                &arn,
                                &s.protocol,
                                Some(&s.endpoint),
                                s.attributes.clone(),
                                true,
                            )
                            .await
                            .map_err(at)?
                            .subscription_arn
                    }
                };
                tracing::info!(topic = %t.name, subscription = %sub_arn, "subscription from the configuration");
                done.subscriptions.push(sub_arn);
            }
        }
        for m in &self.event_source_mappings {
            let at = |e: loft_core::Error| {
                self.error(
                    &m.span,
                    format!(
                        "event source mapping of {} to {}: {}",
                        m.queue,
                        m.function,
                        aws(e)
                    ),
                )
            };
            let mut input = m.input.clone();
            let queue_arn = if m.queue.starts_with("arn:") {
                m.queue.clone()
            } else {
                svc.queue_arn(&m.queue)
            };
            input.event_source_arn = Some(queue_arn.clone());
            let function_arn = svc.functions().function_arn(&m.function);
            // The configuration's mappings are their function's account's (the default
            // account's unless the function names another).
            let account = svc
                .functions()
                .functions()
                .iter()
                .find(|f| f.name == m.function)
                .map_or(svc.config().account_id.clone(), |f| {
                    svc.functions().function_account(f).to_owned()
                });
            let existing = find_mapping(svc, &account, &queue_arn, &function_arn)
                .await
                .map_err(at)?;
            let uuid = match existing {
                Some(uuid) => update_mapping(svc, &account, &uuid, input)
                    .await
                    .map_err(at)?,
                None => match svc
                    .functions()
                    .create_event_source_mapping(&account, input.clone())
                    .await
                {
                    Ok(v) => v.record.uuid,
                    // Another node starting from the same file created it meanwhile.
                    Err(e) if e.code == ErrorCode::LambdaResourceConflict => {
                        let uuid = find_mapping(svc, &account, &queue_arn, &function_arn)
                            .await
                            .map_err(at)?
                            .ok_or_else(|| at(e))?;
                        update_mapping(svc, &account, &uuid, input)
                            .await
                            .map_err(at)?
                    }
                    Err(e) => return Err(at(e)),
                },
            };
            tracing::info!(queue = %m.queue, function = %m.function, mapping = %uuid, "event source mapping from the configuration");
            done.event_source_mappings.push(uuid);
        }
        Ok(done)
    }

    async fn find_subscription(
        &self,
        svc: &Service,
        topic_arn: &str,
        protocol: &str,
        endpoint: &str,
    ) -> loft_core::Result<Option<String>> {
        // An unknown protocol matches nothing; Subscribe then refuses it in SNS's words.
        let protocol = loft_core::model::SubscriptionProtocol::parse(protocol).ok();
        let mut token: Option<String> = None;
        loop {
            let page = svc
                .sns()
                .list_subscriptions(Some(topic_arn), token.as_deref())
                .await?;
            if let Some(s) = page
                .items
                .iter()
                .find(|s| Some(s.protocol) == protocol && s.endpoint == endpoint.trim())
            {
                return Ok(Some(svc.sns().subscription_arn(s)));
            }
            match page.next_token {
                Some(t) => token = Some(t),
                None => return Ok(None),
            }
        }
    }
}

/// Whether a declared queue or topic existed (and got the file's attributes and tags) or
/// was created.
enum Made {
    Updated,
    Created,
}

/// Makes one declared queue or topic as the file says: runs `update` when `found` (the
/// service's lookup of it) found it, `create` when the lookup answered `missing` (its
/// "does not exist" code); any other error of the lookup is returned as it is.
async fn create_or_update<T>(
    found: loft_core::Result<T>,
    missing: ErrorCode,
    update: impl Future<Output = loft_core::Result<()>>,
    create: impl Future<Output = loft_core::Result<()>>,
) -> loft_core::Result<Made> {
    match found {
        Ok(_) => update.await.map(|()| Made::Updated),
        Err(e) if e.code == missing => create.await.map(|()| Made::Created),
        Err(e) => Err(e),
    }
}

/// The UUID of `account`'s event source mapping of `queue_arn` to `function_arn`, if there
/// is one.
async fn find_mapping(
    svc: &Service,
    account: &str,
    queue_arn: &str,
    function_arn: &str,
) -> loft_core::Result<Option<String>> {
    let (existing, _) = svc
        .functions()
        .list_event_source_mappings(account, Some(queue_arn), None, None, Some(10_000))
        .await?;
    Ok(existing
        .into_iter()
        .find(|v| v.record.function_arn == function_arn)
        .map(|v| v.record.uuid))
}

/// Gives `account`'s existing event source mapping `uuid` the file's settings `input`
/// (without its queue, which an update cannot change); returns its UUID.
async fn update_mapping(
    svc: &Service,
    account: &str,
    uuid: &str,
    mut input: loft_core::service::MappingInput,
) -> loft_core::Result<String> {
    input.event_source_arn = None;
    Ok(svc
        .functions()
        .update_event_source_mapping(account, uuid, input)
        .await?
        .record
        .uuid)
}
