//! Making the file's queues, topics, subscriptions and event source mappings in the
//! service at start (and again after a reset), idempotently.

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
            match svc.queue(&q.name).await {
                Ok(_) => {
                    // FifoQueue follows the name (checked at parse), so it cannot differ.
                    let mut attrs = q.attributes.clone();
                    attrs.remove("FifoQueue");
                    if !attrs.is_empty() {
                        svc.sqs()
                            .set_queue_attributes(&q.name, attrs)
                            .await
                            .map_err(at)?;
                    }
                    if !q.tags.is_empty() {
                        svc.sqs()
                            .tag_queue(&q.name, q.tags.clone())
                            .await
                            .map_err(at)?;
                    }
                    tracing::info!(queue = %q.name, "queue from the configuration exists; attributes applied");
                    done.queues_updated.push(q.name.clone());
                }
                Err(e) if e.code == ErrorCode::QueueDoesNotExist => {
                    svc.sqs()
                        .create_queue(&q.name, q.attributes.clone(), q.tags.clone())
                        .await
                        .map_err(at)?;
                    tracing::info!(queue = %q.name, "queue created from the configuration");
                    done.queues_created.push(q.name.clone());
                }
                Err(e) => return Err(at(e)),
            }
        }
        for t in &self.topics {
            let arn = svc.topic_arn(&t.name);
            let at =
                |e: loft_core::Error| self.error(&t.span, format!("topic {}: {}", t.name, aws(e)));
            match svc.sns().topic_by_arn(&arn).await {
                Ok(_) => {
                    for (k, v) in &t.attributes {
                        if k == "FifoTopic" {
                            continue;
                        }
                        svc.sns()
                            .set_topic_attribute(&arn, k, v)
                            .await
                            .map_err(at)?;
                    }
                    if !t.tags.is_empty() {
                        svc.sns()
                            .tag_topic(&arn, t.tags.clone().into_iter().collect())
                            .await
                            .map_err(at)?;
                    }
                    tracing::info!(topic = %t.name, "topic from the configuration exists; attributes applied");
                    done.topics_updated.push(t.name.clone());
                }
                Err(e) if e.code == ErrorCode::NotFound => {
                    svc.sns()
                        .create_topic(
                            &t.name,
                            t.attributes.clone(),
                            t.tags.clone().into_iter().collect(),
                        )
                        .await
                        .map_err(at)?;
                    tracing::info!(topic = %t.name, "topic created from the configuration");
                    done.topics_created.push(t.name.clone());
                }
                Err(e) => return Err(at(e)),
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
            let (existing, _) = svc
                .functions()
                .list_event_source_mappings(&account, Some(&queue_arn), None, None, Some(10_000))
                .await
                .map_err(at)?;
            let uuid = match existing
                .into_iter()
                .find(|v| v.record.function_arn == function_arn)
            {
                Some(v) => {
                    input.event_source_arn = None;
                    svc.functions()
                        .update_event_source_mapping(&account, &v.record.uuid, input)
                        .await
                        .map_err(at)?
                        .record
                        .uuid
                }
                None => match svc
                    .functions()
                    .create_event_source_mapping(&account, input.clone())
                    .await
                {
                    Ok(v) => v.record.uuid,
                    // Another node starting from the same file created it meanwhile.
                    Err(e) if e.code == ErrorCode::LambdaResourceConflict => {
                        let (existing, _) = svc
                            .functions()
                            .list_event_source_mappings(
                                &account,
                                Some(&queue_arn),
                                None,
                                None,
                                Some(10_000),
                            )
                            .await
                            .map_err(at)?;
                        let v = existing
                            .into_iter()
                            .find(|v| v.record.function_arn == function_arn)
                            .ok_or_else(|| at(e))?;
                        input.event_source_arn = None;
                        svc.functions()
                            .update_event_source_mapping(&account, &v.record.uuid, input)
                            .await
                            .map_err(at)?
                            .record
                            .uuid
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
