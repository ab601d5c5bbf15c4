//! The SNS operations: each typed input ([`types`]) handed to its Service method, the
//! result returned as the typed output, written as the Query protocol's XML by
//! [`super::sns_query`]. Nothing here decides a rule of topics or subscriptions: that is
//! the Service's.
//!
//! Adding an operation: its input and output in [`types`] (and one line in its
//! `operations!` list), its Service method, one arm in [`call`].
//!
//! Source: the botocore model `sns/2010-03-31` (operation, member and error names).

pub mod types;

use std::collections::BTreeMap;
use std::sync::Arc;

use loft_core::message::{MessageAttributeValue as CoreValue, MessageAttributes};
use loft_core::service::{BatchEntry, PlatformKind, PublishRequest, PublishResult, PublishTarget};
use loft_core::{Error, ErrorCode, Result, Service};

use super::shape::NoOutput;
use types::*;

/// The SNS Query namespace.
pub const SNS_NAMESPACE: &str = "http://sns.amazonaws.com/doc/2010-03-31/";

fn attributes(map: Option<MessageAttributeMap>) -> MessageAttributes {
    map.map(|m| m.into_inner())
        .unwrap_or_default()
        .into_iter()
        .map(|(name, v)| {
            (
                name,
                CoreValue {
                    data_type: v.data_type,
                    string_value: v.string_value,
                    binary_value: v.binary_value.map(|b| b.0),
                },
            )
        })
        .collect()
}

fn map_or_empty(m: Option<MapStringToString>) -> BTreeMap<String, String> {
    m.map(|m| m.into_inner()).unwrap_or_default()
}

fn tags_in(tags: Option<Vec<Tag>>) -> Vec<(String, String)> {
    tags.unwrap_or_default()
        .into_iter()
        .map(|t| (t.key, t.value))
        .collect()
}

fn some_map(m: BTreeMap<String, String>) -> Option<MapStringToString> {
    Some(m.into())
}

fn publish_output(r: PublishResult) -> PublishResponse {
    PublishResponse {
        message_id: Some(r.message_id),
        sequence_number: r.sequence_number,
    }
}

fn subscriptions(page_items: Vec<loft_core::service::SubscriptionSummary>) -> Vec<Subscription> {
    page_items
        .into_iter()
        .map(|s| Subscription {
            subscription_arn: Some(s.subscription_arn),
            owner: Some(s.owner),
            protocol: Some(s.protocol),
            endpoint: Some(s.endpoint),
            topic_arn: Some(s.topic_arn),
        })
        .collect()
}

/// Runs one SNS request and returns its answer.
///
/// Errors: each operation's, as its Service method documents them.
///
/// `ctx` is where the request came in; its X-Ray trace header reaches subscribed queues.
pub async fn call(
    svc: &Arc<Service>,
    ctx: &super::Context,
    req: SnsRequest,
) -> Result<SnsResponse> {
    use SnsRequest as R;
    use SnsResponse as S;
    super::access::check(svc, ctx, req.access()).await?;
    Ok(match req {
        R::AddPermission(i) => {
            svc.sns()
                .add_topic_permission(&i.topic_arn, &i.label, &i.aws_account_id, &i.action_name)
                .await?;
            S::AddPermission(NoOutput)
        }
        R::CheckIfPhoneNumberIsOptedOut(i) => {
            S::CheckIfPhoneNumberIsOptedOut(CheckIfPhoneNumberIsOptedOutResponse {
                is_opted_out: Some(svc.sns().sms_opted_out(&i.phone_number)?),
            })
        }
        R::ConfirmSubscription(i) => {
            let arn = svc
                .sns()
                .confirm_subscription(
                    &i.topic_arn,
                    &i.token,
                    !ctx.unsigned
                        && i.authenticate_on_unsubscribe
                            .as_deref()
                            .is_some_and(|v| v.eq_ignore_ascii_case("true")),
                )
                .await?;
            S::ConfirmSubscription(ConfirmSubscriptionResponse {
                subscription_arn: Some(arn),
            })
        }
        R::CreatePlatformApplication(i) => {
            let arn = svc
                .sns()
                .create_platform_application(
                    ctx.principal.scope(),
                    &i.name,
                    &i.platform,
                    i.attributes.into_inner(),
                )
                .await?;
            S::CreatePlatformApplication(CreatePlatformApplicationResponse {
                platform_application_arn: Some(arn),
            })
        }
        R::CreatePlatformEndpoint(i) => {
            let mut attrs = map_or_empty(i.attributes);
            // CustomUserData may come both as a parameter and as an attribute; the
            // attribute wins, as AWS answers (recorded CreatePlatformEndpoint).
            if let Some(d) = i.custom_user_data {
                attrs.entry("CustomUserData".into()).or_insert(d);
            }
            let arn = svc
                .sns()
                .create_platform_endpoint(
                    &ctx.principal.account_id,
                    &i.platform_application_arn,
                    &i.token,
                    attrs,
                )
                .await?;
            S::CreatePlatformEndpoint(CreateEndpointResponse {
                endpoint_arn: Some(arn),
            })
        }
        R::CreateTopic(i) => {
            let mut attrs = map_or_empty(i.attributes);
            if let Some(p) = i.data_protection_policy {
                attrs.insert("DataProtectionPolicy".into(), p);
            }
            let p = &ctx.principal;
            if let Some(policy) = attrs.get("DataProtectionPolicy") {
                svc.sns().authorize_findings_destinations(p, policy).await?;
            }
            let key = svc.resource_key(&p.account_id, &p.region, &i.name);
            let t = svc.sns().create_topic(&key, attrs, tags_in(i.tags)).await?;
            S::CreateTopic(CreateTopicResponse {
                topic_arn: Some(svc.topic_arn(&t.name)),
            })
        }
        R::DeleteEndpoint(i) => {
            svc.sns()
                .delete_platform(
                    &ctx.principal.account_id,
                    PlatformKind::Endpoint,
                    &i.endpoint_arn,
                )
                .await?;
            S::DeleteEndpoint(NoOutput)
        }
        R::DeletePlatformApplication(i) => {
            svc.sns()
                .delete_platform(
                    &ctx.principal.account_id,
                    PlatformKind::Application,
                    &i.platform_application_arn,
                )
                .await?;
            S::DeletePlatformApplication(NoOutput)
        }
        R::DeleteTopic(i) => {
            svc.sns().delete_topic(&i.topic_arn).await?;
            S::DeleteTopic(NoOutput)
        }
        R::GetEndpointAttributes(i) => S::GetEndpointAttributes(GetEndpointAttributesResponse {
            attributes: some_map(
                svc.sns()
                    .platform_attributes(
                        &ctx.principal.account_id,
                        PlatformKind::Endpoint,
                        &i.endpoint_arn,
                    )
                    .await?,
            ),
        }),
        R::GetPlatformApplicationAttributes(i) => {
            S::GetPlatformApplicationAttributes(GetPlatformApplicationAttributesResponse {
                attributes: some_map(
                    svc.sns()
                        .platform_attributes(
                            &ctx.principal.account_id,
                            PlatformKind::Application,
                            &i.platform_application_arn,
                        )
                        .await?,
                ),
            })
        }
        R::GetSMSAttributes(i) => S::GetSMSAttributes(GetSMSAttributesResponse {
            attributes: some_map(
                svc.sns()
                    .sms_attributes(ctx.principal.scope(), &i.attributes.unwrap_or_default())
                    .await?,
            ),
        }),
        R::GetSMSSandboxAccountStatus(_) => {
            S::GetSMSSandboxAccountStatus(GetSMSSandboxAccountStatusResult {
                is_in_sandbox: svc.sns().sms_sandbox(),
            })
        }
        R::GetSubscriptionAttributes(i) => {
            let attrs = svc
                .sns()
                .get_subscription_attributes(&i.subscription_arn)
                .await?;
            S::GetSubscriptionAttributes(GetSubscriptionAttributesResponse {
                attributes: some_map(attrs),
            })
        }
        R::GetTopicAttributes(i) => {
            let attrs = svc.sns().get_topic_attributes(&i.topic_arn).await?;
            S::GetTopicAttributes(GetTopicAttributesResponse {
                attributes: some_map(attrs),
            })
        }
        R::ListEndpointsByPlatformApplication(i) => {
            let page = svc
                .sns()
                .list_platform(
                    ctx.principal.scope(),
                    Some(&i.platform_application_arn),
                    i.next_token.as_deref(),
                )
                .await?;
            let endpoints = page
                .items
                .into_iter()
                .map(|r| Endpoint {
                    endpoint_arn: Some(r.arn),
                    attributes: some_map(r.attributes),
                })
                .collect();
            S::ListEndpointsByPlatformApplication(ListEndpointsByPlatformApplicationResponse {
                endpoints,
                next_token: page.next_token,
            })
        }
        R::ListPhoneNumbersOptedOut(i) => {
            let page = svc.sns().phone_numbers_opted_out(i.next_token.as_deref());
            S::ListPhoneNumbersOptedOut(ListPhoneNumbersOptedOutResponse {
                phone_numbers: page.items,
                next_token: page.next_token,
            })
        }
        R::ListPlatformApplications(i) => {
            let page = svc
                .sns()
                .list_platform(ctx.principal.scope(), None, i.next_token.as_deref())
                .await?;
            let platform_applications = page
                .items
                .into_iter()
                .map(|r| PlatformApplication {
                    platform_application_arn: Some(r.arn),
                    attributes: some_map(r.attributes),
                })
                .collect();
            S::ListPlatformApplications(ListPlatformApplicationsResponse {
                platform_applications,
                next_token: page.next_token,
            })
        }
        R::ListSubscriptions(i) => {
            let page = svc
                .sns()
                .list_subscriptions_of(ctx.principal.scope(), i.next_token.as_deref())
                .await?;
            let items = page
                .items
                .iter()
                .map(|s| svc.sns().subscription_summary(s))
                .collect();
            S::ListSubscriptions(ListSubscriptionsResponse {
                subscriptions: subscriptions(items),
                next_token: page.next_token,
            })
        }
        R::ListSubscriptionsByTopic(i) => {
            let page = svc
                .sns()
                .list_subscription_summaries(Some(&i.topic_arn), i.next_token.as_deref())
                .await?;
            S::ListSubscriptionsByTopic(ListSubscriptionsByTopicResponse {
                subscriptions: subscriptions(page.items),
                next_token: page.next_token,
            })
        }
        R::ListTagsForResource(i) => {
            let tags = svc.sns().topic_tags(&i.resource_arn).await?;
            S::ListTagsForResource(ListTagsForResourceResponse {
                tags: tags
                    .into_iter()
                    .map(|(key, value)| Tag { key, value })
                    .collect(),
            })
        }
        R::ListTopics(i) => {
            let page = svc
                .sns()
                .list_topics_of(ctx.principal.scope(), i.next_token.as_deref())
                .await?;
            S::ListTopics(ListTopicsResponse {
                topics: page
                    .items
                    .iter()
                    .map(|t| Topic {
                        topic_arn: Some(svc.topic_arn(&t.name)),
                    })
                    .collect(),
                next_token: page.next_token,
            })
        }
        R::CreateSMSSandboxPhoneNumber(i) => {
            svc.sns()
                .create_sms_sandbox_number(
                    &ctx.principal.account_id,
                    ctx.principal.scope(),
                    &i.phone_number,
                    i.language_code.as_deref(),
                )
                .await?;
            S::CreateSMSSandboxPhoneNumber(CreateSMSSandboxPhoneNumberResult {})
        }
        R::DeleteSMSSandboxPhoneNumber(i) => {
            svc.sns()
                .delete_sms_sandbox_number(ctx.principal.scope(), &i.phone_number)
                .await?;
            S::DeleteSMSSandboxPhoneNumber(DeleteSMSSandboxPhoneNumberResult {})
        }
        R::ListOriginationNumbers(i) => {
            let page = svc.sns().list_origination_numbers(i.max_results)?;
            S::ListOriginationNumbers(ListOriginationNumbersResult {
                next_token: page.next_token,
                phone_numbers: Vec::new(),
            })
        }
        R::ListSMSSandboxPhoneNumbers(i) => {
            let page = svc
                .sns()
                .list_sms_sandbox_numbers(
                    ctx.principal.scope(),
                    i.next_token.as_deref(),
                    i.max_results,
                )
                .await?;
            S::ListSMSSandboxPhoneNumbers(ListSMSSandboxPhoneNumbersResult {
                phone_numbers: page
                    .items
                    .into_iter()
                    .map(|n| SMSSandboxPhoneNumber {
                        phone_number: Some(n.phone_number),
                        status: Some(n.status.to_owned()),
                    })
                    .collect(),
                next_token: page.next_token,
            })
        }
        R::VerifySMSSandboxPhoneNumber(i) => {
            svc.sns()
                .verify_sms_sandbox_number(
                    ctx.principal.scope(),
                    &i.phone_number,
                    &i.one_time_password,
                )
                .await?;
            S::VerifySMSSandboxPhoneNumber(VerifySMSSandboxPhoneNumberResult {})
        }
        R::OptInPhoneNumber(i) => {
            svc.sns().opt_in_phone_number(&i.phone_number)?;
            S::OptInPhoneNumber(OptInPhoneNumberResponse {})
        }
        R::Publish(i) => {
            let target = match (&i.topic_arn, &i.target_arn, &i.phone_number) {
                (Some(t), _, _) => PublishTarget::Topic(t),
                (None, Some(t), _) => PublishTarget::Target(t),
                (None, None, Some(p)) => PublishTarget::Phone(p),
                (None, None, None) => {
                    return Err(Error::with(
                        ErrorCode::InvalidParameter,
                        &[(
                            "parameter",
                            &"TopicArn or TargetArn Reason: no value for required parameter",
                        )],
                    ))
                }
            };
            let req = PublishRequest {
                message: i.message,
                subject: i.subject,
                message_structure: i.message_structure,
                message_attributes: attributes(i.message_attributes),
                group_id: i.message_group_id,
                dedup_id: i.message_deduplication_id,
                trace_header: ctx.trace_header.clone(),
                publisher: ctx.principal.acting_arn(),
            };
            S::Publish(publish_output(
                svc.sns()
                    .publish_as(&ctx.principal.account_id, target, req)
                    .await?,
            ))
        }
        R::PublishBatch(i) => {
            let entries = i
                .publish_batch_request_entries
                .unwrap_or_default()
                .into_iter()
                .map(|e| BatchEntry {
                    id: Some(e.id),
                    entry: Ok(PublishRequest {
                        message: e.message,
                        subject: e.subject,
                        message_structure: e.message_structure,
                        message_attributes: attributes(e.message_attributes),
                        group_id: e.message_group_id,
                        dedup_id: e.message_deduplication_id,
                        trace_header: ctx.trace_header.clone(),
                        publisher: ctx.principal.acting_arn(),
                    }),
                })
                .collect();
            let mut successful = Vec::new();
            let mut failed = Vec::new();
            for (id, r) in svc
                .sns()
                .publish_batch_entries(&i.topic_arn, entries)
                .await?
            {
                match r {
                    Ok(r) => successful.push(PublishBatchResultEntry {
                        id: Some(id),
                        message_id: Some(r.message_id),
                        sequence_number: r.sequence_number,
                    }),
                    Err(e) => failed.push(BatchResultErrorEntry {
                        id,
                        code: e.code.query_code().to_owned(),
                        sender_fault: e.code.is_sender_fault(),
                        message: Some(e.message),
                    }),
                }
            }
            S::PublishBatch(PublishBatchResponse { successful, failed })
        }
        R::PutDataProtectionPolicy(i) => {
            svc.sns()
                .authorize_findings_destinations(&ctx.principal, &i.data_protection_policy)
                .await?;
            svc.sns()
                .put_data_protection_policy(&i.resource_arn, &i.data_protection_policy)
                .await?;
            S::PutDataProtectionPolicy(NoOutput)
        }
        R::GetDataProtectionPolicy(i) => {
            S::GetDataProtectionPolicy(GetDataProtectionPolicyResponse {
                data_protection_policy: Some(
                    svc.sns()
                        .get_data_protection_policy(&i.resource_arn)
                        .await?,
                ),
            })
        }
        R::RemovePermission(i) => {
            svc.sns()
                .remove_topic_permission(&i.topic_arn, &i.label)
                .await?;
            S::RemovePermission(NoOutput)
        }
        R::SetEndpointAttributes(i) => {
            svc.sns()
                .set_platform_attributes(
                    &ctx.principal.account_id,
                    PlatformKind::Endpoint,
                    &i.endpoint_arn,
                    Some(i.attributes.into_inner()),
                )
                .await?;
            S::SetEndpointAttributes(NoOutput)
        }
        R::SetPlatformApplicationAttributes(i) => {
            svc.sns()
                .set_platform_attributes(
                    &ctx.principal.account_id,
                    PlatformKind::Application,
                    &i.platform_application_arn,
                    i.attributes.map(|a| a.into_inner()),
                )
                .await?;
            S::SetPlatformApplicationAttributes(NoOutput)
        }
        R::SetSMSAttributes(i) => {
            svc.sns()
                .set_sms_attributes(ctx.principal.scope(), i.attributes.into_inner())
                .await?;
            S::SetSMSAttributes(SetSMSAttributesResponse {})
        }
        R::SetSubscriptionAttributes(i) => {
            svc.sns()
                .set_subscription_attribute(
                    &i.subscription_arn,
                    &i.attribute_name,
                    i.attribute_value.as_deref().unwrap_or(""),
                )
                .await?;
            S::SetSubscriptionAttributes(NoOutput)
        }
        R::SetTopicAttributes(i) => {
            if i.attribute_name == "DataProtectionPolicy" {
                let policy = i.attribute_value.as_deref().unwrap_or("");
                svc.sns()
                    .authorize_findings_destinations(&ctx.principal, policy)
                    .await?;
            }
            svc.sns()
                .set_topic_attribute(
                    &i.topic_arn,
                    &i.attribute_name,
                    i.attribute_value.as_deref().unwrap_or(""),
                )
                .await?;
            S::SetTopicAttributes(NoOutput)
        }
        R::Subscribe(i) => {
            let principal = ctx.principal.enforced.then_some(&*ctx.principal.arn);
            let r = svc
                .sns()
                .subscribe_as(
                    principal,
                    Some(&ctx.principal.account_id),
                    &i.topic_arn,
                    &i.protocol,
                    i.endpoint.as_deref(),
                    map_or_empty(i.attributes),
                    i.return_subscription_arn.unwrap_or(false),
                )
                .await?;
            S::Subscribe(SubscribeResponse {
                subscription_arn: Some(r.subscription_arn),
            })
        }
        R::TagResource(i) => {
            svc.sns()
                .tag_topic(&i.resource_arn, tags_in(Some(i.tags)))
                .await?;
            S::TagResource(TagResourceResponse {})
        }
        R::Unsubscribe(i) => {
            svc.sns()
                .unsubscribe(&i.subscription_arn, ctx.unsigned)
                .await?;
            S::Unsubscribe(NoOutput)
        }
        R::UntagResource(i) => {
            svc.sns().untag_topic(&i.resource_arn, &i.tag_keys).await?;
            S::UntagResource(UntagResourceResponse {})
        }
    })
}
