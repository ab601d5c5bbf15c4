//! The SNS operations over the Query protocol: AWS's input shape in (decoded by
//! [`super::query::decode_sns`]), the service called, AWS's output shape out (written as
//! XML by [`super::query::response`] with SNS's `member`/`entry` rules).
//!
//! Source: the botocore model `sns/2010-03-31` (operation, member and error names).

use std::sync::Arc;

use loft_core::message::{MessageAttributeValue, MessageAttributes};
use loft_core::service::{PublishRequest, PublishResult, PublishTarget};
use loft_core::{Error, ErrorCode, Result, Service};
use serde_json::{json, Map, Value};

use super::input::Input;
use super::query::XmlRules;

/// The SNS Query namespace.
pub const SNS_NAMESPACE: &str = "http://sns.amazonaws.com/doc/2010-03-31/";

/// XML rules for SNS output: lists wrapped in `<member>`, maps as `<entry><key/><value/>`.
pub const XML_RULES: XmlRules = XmlRules {
    lists: &[],
    maps: &[
        ("Attributes", "entry", "key", "value"),
        ("attributes", "entry", "key", "value"),
    ],
    member_lists: true,
};

/// Operations whose model has no output shape (no Result element in Query responses).
pub const NO_OUTPUT: &[&str] = &[
    "AddPermission",
    "DeleteEndpoint",
    "DeletePlatformApplication",
    "DeleteTopic",
    "PutDataProtectionPolicy",
    "RemovePermission",
    "SetEndpointAttributes",
    "SetPlatformApplicationAttributes",
    "SetSubscriptionAttributes",
    "SetTopicAttributes",
    "Unsubscribe",
];

fn invalid(what: &str) -> Error {
    Error::new(
        ErrorCode::InvalidParameter,
        format!("Invalid parameter: {what}"),
    )
}

fn required<'a>(input: Input<'a>, name: &str) -> Result<&'a str> {
    input
        .str(name)?
        .filter(|v| !v.is_empty())
        .ok_or_else(|| invalid(&format!("{name} Reason: no value for required parameter")))
}

/// SNS message attributes: name to `{DataType, StringValue | BinaryValue}`.
fn message_attributes(input: Input<'_>) -> Result<MessageAttributes> {
    let mut out = MessageAttributes::new();
    let Some(Value::Object(map)) = input.get_raw("MessageAttributes") else {
        return Ok(out);
    };
    for (name, v) in map {
        let e = Input(v);
        let data_type = e.str("DataType")?.unwrap_or("").to_owned();
        let binary_value = e
            .str("BinaryValue")?
            .map(loft_core::message::base64_decode)
            .transpose()?;
        out.insert(
            name.clone(),
            MessageAttributeValue {
                data_type,
                string_value: e.str("StringValue")?.map(str::to_owned),
                binary_value,
            },
        );
    }
    Ok(out)
}

fn publish_request(input: Input<'_>) -> Result<PublishRequest> {
    Ok(PublishRequest {
        message: input.str("Message")?.unwrap_or("").to_owned(),
        subject: input.str("Subject")?.map(str::to_owned),
        message_structure: input.str("MessageStructure")?.map(str::to_owned),
        message_attributes: message_attributes(input)?,
        group_id: input.str("MessageGroupId")?.map(str::to_owned),
        dedup_id: input.str("MessageDeduplicationId")?.map(str::to_owned),
    })
}

fn publish_output(r: PublishResult, id: Option<&str>) -> Value {
    let mut m = Map::new();
    if let Some(id) = id {
        m.insert("Id".into(), json!(id));
    }
    m.insert("MessageId".into(), json!(r.message_id));
    if let Some(s) = r.sequence_number {
        m.insert("SequenceNumber".into(), json!(s));
    }
    Value::Object(m)
}

fn tags_list(tags: &std::collections::BTreeMap<String, String>) -> Value {
    Value::Array(
        tags.iter()
            .map(|(k, v)| json!({"Key": k, "Value": v}))
            .collect(),
    )
}

/// A list of structures. The Query protocol sends an empty list as the bare parameter
/// with no value (`PublishBatchRequestEntries=`), which reads as an empty string here.
/// Errors: `InvalidParameterValue` for anything else that is not a list of structures.
fn object_list<'a>(input: Input<'a>, name: &str) -> Result<Vec<Input<'a>>> {
    match input.get_raw(name) {
        Some(Value::String(s)) if s.is_empty() => Ok(Vec::new()),
        _ => input.objects(name),
    }
}

fn tags_map(input: Input<'_>, name: &str) -> Result<std::collections::BTreeMap<String, String>> {
    let mut out = std::collections::BTreeMap::new();
    for t in object_list(input, name)? {
        out.insert(
            t.req_str("Key")?.to_owned(),
            t.str("Value")?.unwrap_or("").to_owned(),
        );
    }
    Ok(out)
}

/// Runs SNS operation `op`. Errors: `InvalidAction` for unknown operations, and each
/// operation's errors.
pub async fn call(svc: &Arc<Service>, op: &str, input: &Value) -> Result<Value> {
    let input = Input(input);
    match op {
        "CreateTopic" => {
            let name = required(input, "Name")?;
            let mut attrs = input.str_map("Attributes")?;
            if let Some(p) = input.str("DataProtectionPolicy")? {
                attrs.insert("DataProtectionPolicy".into(), p.to_owned());
            }
            let t = svc
                .create_topic(name, attrs, tags_map(input, "Tags")?)
                .await?;
            Ok(json!({"TopicArn": svc.topic_arn(&t.name)}))
        }
        "DeleteTopic" => {
            svc.delete_topic(required(input, "TopicArn")?).await?;
            Ok(json!({}))
        }
        "ListTopics" => {
            let page = svc.list_topics(input.str("NextToken")?).await?;
            let topics: Vec<Value> = page
                .items
                .iter()
                .map(|t| json!({"TopicArn": svc.topic_arn(&t.name)}))
                .collect();
            let mut out = Map::new();
            out.insert("Topics".into(), Value::Array(topics));
            if let Some(t) = page.next_token {
                out.insert("NextToken".into(), json!(t));
            }
            Ok(Value::Object(out))
        }
        "GetTopicAttributes" => {
            let attrs = svc
                .get_topic_attributes(required(input, "TopicArn")?)
                .await?;
            Ok(json!({"Attributes": attrs}))
        }
        "SetTopicAttributes" => {
            svc.set_topic_attribute(
                required(input, "TopicArn")?,
                required(input, "AttributeName")?,
                input.str("AttributeValue")?.unwrap_or(""),
            )
            .await?;
            Ok(json!({}))
        }
        "Subscribe" => {
            let return_arn = input
                .str("ReturnSubscriptionArn")?
                .is_some_and(|v| v.eq_ignore_ascii_case("true"))
                || input.get_raw("ReturnSubscriptionArn") == Some(&Value::Bool(true));
            let r = svc
                .subscribe(
                    required(input, "TopicArn")?,
                    required(input, "Protocol")?,
                    input.str("Endpoint")?,
                    input.str_map("Attributes")?,
                    return_arn,
                )
                .await?;
            Ok(json!({"SubscriptionArn": r.subscription_arn}))
        }
        "ConfirmSubscription" => {
            let arn = svc
                .confirm_subscription(required(input, "TopicArn")?, required(input, "Token")?)
                .await?;
            Ok(json!({"SubscriptionArn": arn}))
        }
        "Unsubscribe" => {
            svc.unsubscribe(required(input, "SubscriptionArn")?).await?;
            Ok(json!({}))
        }
        "ListSubscriptions" | "ListSubscriptionsByTopic" => {
            let topic = if op == "ListSubscriptionsByTopic" {
                Some(required(input, "TopicArn")?)
            } else {
                None
            };
            let page = svc
                .list_subscriptions(topic, input.str("NextToken")?)
                .await?;
            let subs: Vec<Value> = page
                .items
                .iter()
                .map(|s| {
                    json!({
                        "SubscriptionArn": if s.confirmed { svc.subscription_arn(s) } else { "PendingConfirmation".into() },
                        "Owner": svc.config().account_id,
                        "Protocol": s.protocol,
                        "Endpoint": s.endpoint,
                        "TopicArn": svc.topic_arn(&s.topic_name),
                    })
                })
                .collect();
            let mut out = Map::new();
            out.insert("Subscriptions".into(), Value::Array(subs));
            if let Some(t) = page.next_token {
                out.insert("NextToken".into(), json!(t));
            }
            Ok(Value::Object(out))
        }
        "GetSubscriptionAttributes" => {
            let attrs = svc
                .get_subscription_attributes(required(input, "SubscriptionArn")?)
                .await?;
            Ok(json!({"Attributes": attrs}))
        }
        "SetSubscriptionAttributes" => {
            svc.set_subscription_attribute(
                required(input, "SubscriptionArn")?,
                required(input, "AttributeName")?,
                input.str("AttributeValue")?.unwrap_or(""),
            )
            .await?;
            Ok(json!({}))
        }
        "Publish" => {
            let req = publish_request(input)?;
            let target = match (
                input.str("TopicArn")?.filter(|s| !s.is_empty()),
                input.str("TargetArn")?.filter(|s| !s.is_empty()),
                input.str("PhoneNumber")?.filter(|s| !s.is_empty()),
            ) {
                (Some(t), _, _) | (None, Some(t), _) => PublishTarget::Topic(t),
                (None, None, Some(p)) => PublishTarget::Phone(p),
                _ => {
                    return Err(invalid(
                        "TopicArn or TargetArn Reason: no value for required parameter",
                    ))
                }
            };
            let r = svc.publish(target, req).await?;
            Ok(publish_output(r, None))
        }
        "PublishBatch" => {
            let topic = required(input, "TopicArn")?;
            let entries = object_list(input, "PublishBatchRequestEntries")?;
            let ids = super::input::batch_ids(
                &entries,
                &super::input::BatchTexts {
                    empty: "The batch request doesn't contain any entries",
                    too_many: "The batch request contains more entries than permissible",
                    invalid_id: "The Id of a batch entry in a batch request doesn't abide by the specification.",
                    repeated: "Two or more batch entries in the request have the same Id.",
                },
            )?;
            let mut reqs = Vec::new();
            for e in &entries {
                reqs.push(publish_request(*e)?);
            }
            let total: usize = reqs.iter().map(|r| r.message.len()).sum();
            if total > 262_144 {
                return Err(Error::new(
                    ErrorCode::BatchRequestTooLong,
                    "The length of all the batch messages put together is more than the limit.",
                ));
            }
            let results = svc.publish_batch(topic, reqs).await?;
            let mut successful = Vec::new();
            let mut failed = Vec::new();
            for (id, r) in ids.into_iter().zip(results) {
                match r {
                    Ok(r) => successful.push(publish_output(r, Some(id))),
                    Err(e) => failed.push(json!({
                        "Id": id,
                        "Code": e.code.aws_code(),
                        "Message": e.message,
                        "SenderFault": e.code.is_sender_fault(),
                    })),
                }
            }
            Ok(json!({"Successful": successful, "Failed": failed}))
        }
        "TagResource" => {
            svc.tag_topic(required(input, "ResourceArn")?, tags_map(input, "Tags")?)
                .await?;
            Ok(json!({}))
        }
        "UntagResource" => {
            svc.untag_topic(required(input, "ResourceArn")?, &input.str_list("TagKeys")?)
                .await?;
            Ok(json!({}))
        }
        "ListTagsForResource" => {
            let tags = svc.topic_tags(required(input, "ResourceArn")?).await?;
            Ok(json!({"Tags": tags_list(&tags)}))
        }
        "AddPermission" => {
            svc.add_topic_permission(
                required(input, "TopicArn")?,
                required(input, "Label")?,
                &input.str_list("AWSAccountId")?,
                &input.str_list("ActionName")?,
            )
            .await?;
            Ok(json!({}))
        }
        "RemovePermission" => {
            svc.remove_topic_permission(required(input, "TopicArn")?, required(input, "Label")?)
                .await?;
            Ok(json!({}))
        }
        // Mobile push: applications and endpoints kept in the store; publishes recorded.
        "CreatePlatformApplication" => {
            let arn = svc
                .create_platform_application(
                    required(input, "Name")?,
                    required(input, "Platform")?,
                    input.str_map("Attributes")?,
                )
                .await?;
            Ok(json!({"PlatformApplicationArn": arn}))
        }
        "CreatePlatformEndpoint" => {
            let mut attrs = input.str_map("Attributes")?;
            if let Some(d) = input.str("CustomUserData")? {
                attrs.insert("CustomUserData".into(), d.to_owned());
            }
            let arn = svc
                .create_platform_endpoint(
                    required(input, "PlatformApplicationArn")?,
                    required(input, "Token")?,
                    attrs,
                )
                .await?;
            Ok(json!({"EndpointArn": arn}))
        }
        "ListPlatformApplications" | "ListEndpointsByPlatformApplication" => {
            let (list_key, arn_key) = if op == "ListPlatformApplications" {
                ("PlatformApplications", "PlatformApplicationArn")
            } else {
                ("Endpoints", "EndpointArn")
            };
            let app = if op == "ListPlatformApplications" {
                None
            } else {
                Some(required(input, "PlatformApplicationArn")?)
            };
            let items: Vec<Value> = svc
                .list_platform(app)
                .await?
                .into_iter()
                .map(|r| json!({arn_key: r.arn, "Attributes": r.attributes}))
                .collect();
            let mut out = Map::new();
            out.insert(list_key.into(), Value::Array(items));
            Ok(Value::Object(out))
        }
        "GetPlatformApplicationAttributes" | "GetEndpointAttributes" => {
            let key = if op == "GetEndpointAttributes" {
                "EndpointArn"
            } else {
                "PlatformApplicationArn"
            };
            Ok(json!({"Attributes": svc.platform_attributes(required(input, key)?).await?}))
        }
        "SetPlatformApplicationAttributes" | "SetEndpointAttributes" => {
            let key = if op == "SetEndpointAttributes" {
                "EndpointArn"
            } else {
                "PlatformApplicationArn"
            };
            svc.set_platform_attributes(required(input, key)?, input.str_map("Attributes")?)
                .await?;
            Ok(json!({}))
        }
        "DeletePlatformApplication" | "DeleteEndpoint" => {
            let key = if op == "DeleteEndpoint" {
                "EndpointArn"
            } else {
                "PlatformApplicationArn"
            };
            svc.delete_platform(required(input, key)?).await?;
            Ok(json!({}))
        }
        // SMS settings: accepted; Loft sends no SMS (messages are recorded).
        "CheckIfPhoneNumberIsOptedOut" => Ok(json!({"isOptedOut": false})),
        "GetSMSAttributes" => Ok(json!({"attributes": {}})),
        "SetSMSAttributes" | "OptInPhoneNumber" => Ok(json!({})),
        "ListPhoneNumbersOptedOut" => Ok(json!({"phoneNumbers": []})),
        "GetSMSSandboxAccountStatus" => Ok(json!({"IsInSandbox": false})),
        other => Err(Error::new(
            ErrorCode::InvalidAction,
            format!("The action {other} is not valid for this endpoint."),
        )),
    }
}
