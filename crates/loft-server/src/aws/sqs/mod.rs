//! The 23 SQS operations: AWS's JSON input shape in, the service called, AWS's JSON output
//! shape out. Both wire protocols (JSON 1.0 and Query) decode to and encode from these
//! shapes, so every operation behaves the same over both.
//!
//! Source: the botocore model `sqs/2012-11-05` (operation and member names) and the SQS API
//! Reference (batch rules, errors).

use std::sync::Arc;

use loft_core::service::{ReceiveMessage, SendMessage, SendResult};
use loft_core::{Error, ErrorCode, Result, Service};
use serde_json::{json, Map, Value};

use super::input::{attributes_json, Input};

/// The SQS operations, as `X-Amz-Target: AmazonSQS.<name>` and `Action=<name>` name them.
pub const OPERATIONS: &[&str] = &[
    "AddPermission",
    "CancelMessageMoveTask",
    "ChangeMessageVisibility",
    "ChangeMessageVisibilityBatch",
    "CreateQueue",
    "DeleteMessage",
    "DeleteMessageBatch",
    "DeleteQueue",
    "GetQueueAttributes",
    "GetQueueUrl",
    "ListDeadLetterSourceQueues",
    "ListMessageMoveTasks",
    "ListQueueTags",
    "ListQueues",
    "PurgeQueue",
    "ReceiveMessage",
    "RemovePermission",
    "SendMessage",
    "SendMessageBatch",
    "SetQueueAttributes",
    "StartMessageMoveTask",
    "TagQueue",
    "UntagQueue",
];

/// Operations whose model has no output shape (no Result element in Query responses).
pub const NO_OUTPUT: &[&str] = &[
    "AddPermission",
    "ChangeMessageVisibility",
    "DeleteMessage",
    "DeleteQueue",
    "PurgeQueue",
    "RemovePermission",
    "SetQueueAttributes",
    "TagQueue",
    "UntagQueue",
];

/// Where a request came in: what queue URLs are built from.
#[derive(Debug, Clone)]
pub struct Context {
    /// `scheme://host[:port]` as the client addressed Loft.
    pub base_url: String,
}

impl Context {
    fn queue_url(&self, svc: &Service, name: &str) -> String {
        format!("{}/{}/{}", self.base_url, svc.config().account_id, name)
    }
}

/// The queue name a QueueUrl names: its last path segment. URLs of real AWS and of other
/// emulators are accepted (`https://sqs.us-east-1.amazonaws.com/000000000000/q`,
/// `http://localhost:4566/000000000000/q`).
///
/// Errors: `MissingParameter` when absent; `QueueDoesNotExist` when it names no queue.
pub fn queue_name(input: Input<'_>) -> Result<String> {
    let url = input.req_str("QueueUrl")?;
    let trimmed = url.split(['?', '#']).next().unwrap_or("");
    let name = trimmed
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or("");
    if name.is_empty() || name.contains(':') && name.starts_with("http") {
        return Err(Error::no_queue());
    }
    Ok(name.to_owned())
}

fn queue_name_from_arn(svc: &Service, arn: &str, param: &str) -> Result<String> {
    let _ = svc;
    loft_core::names::arn_resource(arn, "sqs")
        .map(str::to_owned)
        .ok_or_else(|| Error::invalid(format!("Value {arn} for parameter {param} is invalid.")))
}

fn ok_empty() -> Result<Value> {
    Ok(json!({}))
}

fn object(pairs: Vec<(&str, Option<Value>)>) -> Value {
    let mut map = Map::new();
    for (k, v) in pairs {
        if let Some(v) = v {
            map.insert(k.to_owned(), v);
        }
    }
    Value::Object(map)
}

/// Checks batch entry ids: 1..=10 entries, ids distinct, ids of 1..80 alphanumerics,
/// hyphens and underscores. Errors: `EmptyBatchRequest`, `TooManyEntriesInBatchRequest`,
/// `BatchEntryIdsNotDistinct`, `InvalidBatchEntryId`, `MissingParameter`.
fn check_batch<'a>(entries: &[Input<'a>]) -> Result<Vec<&'a str>> {
    super::input::batch_ids(
        entries,
        &super::input::BatchTexts {
            empty: "There should be at least one SendMessageBatchRequestEntry in the request.",
            too_many: "Maximum number of entries per request are 10. You have sent {sent}.",
            invalid_id: "A batch entry id can only contain alphanumeric characters, hyphens and underscores. It can be at most 80 letters long.",
            repeated: "Id repeated.",
        },
    )
}

fn batch_error(id: &str, e: &Error) -> Value {
    json!({
        "Id": id,
        "SenderFault": e.code.is_sender_fault(),
        "Code": e.code.query_code(),
        "Message": e.message,
    })
}

fn send_input(entry: Input<'_>) -> Result<SendMessage> {
    let mut system_attributes = entry.message_attributes("MessageSystemAttributes")?;
    system_attributes.retain(|_, _| true);
    Ok(SendMessage {
        body: entry.req_str("MessageBody")?.to_owned(),
        delay_seconds: entry.int("DelaySeconds")?,
        message_attributes: entry.message_attributes("MessageAttributes")?,
        system_attributes,
        group_id: entry.str("MessageGroupId")?.map(str::to_owned),
        dedup_id: entry.str("MessageDeduplicationId")?.map(str::to_owned),
    })
}

fn send_output(r: SendResult, id: Option<&str>) -> Value {
    object(vec![
        ("Id", id.map(|i| json!(i))),
        ("MessageId", Some(json!(r.message_id))),
        ("MD5OfMessageBody", Some(json!(r.md5_body))),
        (
            "MD5OfMessageAttributes",
            r.md5_attributes.map(Value::String),
        ),
        (
            "MD5OfMessageSystemAttributes",
            r.md5_system_attributes.map(Value::String),
        ),
        ("SequenceNumber", r.sequence_number.map(Value::String)),
    ])
}

/// Runs SQS operation `op` on `input` (AWS's JSON input shape) and returns AWS's JSON output
/// shape. Errors: `InvalidAction` for an unknown operation, and each operation's errors.
pub async fn call(svc: &Arc<Service>, ctx: &Context, op: &str, input: &Value) -> Result<Value> {
    let input = Input(input);
    match op {
        "CreateQueue" => {
            let name = input.req_str("QueueName")?;
            let mut tags = input.str_map("tags")?;
            tags.extend(input.str_map("Tags")?);
            let q = svc
                .create_queue(name, input.str_map("Attributes")?, tags)
                .await?;
            Ok(json!({"QueueUrl": ctx.queue_url(svc, &q.name)}))
        }
        "GetQueueUrl" => {
            let name = input.req_str("QueueName")?;
            let q = svc.queue(name).await?;
            Ok(json!({"QueueUrl": ctx.queue_url(svc, &q.name)}))
        }
        "ListQueues" => {
            let page = svc
                .list_queues(
                    input.str("QueueNamePrefix")?,
                    input.int("MaxResults")?,
                    input.str("NextToken")?,
                )
                .await?;
            let urls: Vec<Value> = page
                .queues
                .iter()
                .map(|q| json!(ctx.queue_url(svc, &q.name)))
                .collect();
            Ok(object(vec![
                (
                    "QueueUrls",
                    (!urls.is_empty()).then_some(Value::Array(urls)),
                ),
                ("NextToken", page.next_token.map(Value::String)),
            ]))
        }
        "DeleteQueue" => {
            svc.delete_queue(&queue_name(input)?).await?;
            ok_empty()
        }
        "GetQueueAttributes" => {
            let name = queue_name(input)?;
            let attrs = svc
                .get_queue_attributes(&name, &input.str_list("AttributeNames")?)
                .await?;
            Ok(object(vec![(
                "Attributes",
                (!attrs.is_empty()).then(|| json!(attrs)),
            )]))
        }
        "SetQueueAttributes" => {
            let name = queue_name(input)?;
            if input.get_raw("Attributes").is_none() {
                return Err(Error::missing("Attributes"));
            }
            svc.set_queue_attributes(&name, input.str_map("Attributes")?)
                .await?;
            ok_empty()
        }
        "PurgeQueue" => {
            svc.purge_queue(&queue_name(input)?).await?;
            ok_empty()
        }
        "SendMessage" => {
            let name = queue_name(input)?;
            let m = send_input(input)?;
            let r = svc.send_message(&name, m).await?;
            Ok(send_output(r, None))
        }
        "SendMessageBatch" => {
            let name = queue_name(input)?;
            let entries = input.objects("Entries")?;
            let ids = check_batch(&entries)?;
            let mut parsed = Vec::new();
            let mut failed = Vec::new();
            let mut parsed_ids = Vec::new();
            for (entry, id) in entries.iter().zip(&ids) {
                match send_input(*entry) {
                    Ok(m) => {
                        parsed.push(m);
                        parsed_ids.push(*id);
                    }
                    Err(e) => failed.push(batch_error(id, &e)),
                }
            }
            let results = svc.send_message_batch(&name, parsed).await?;
            let mut successful = Vec::new();
            for (id, r) in parsed_ids.into_iter().zip(results) {
                match r {
                    Ok(r) => successful.push(send_output(r, Some(id))),
                    Err(e) => failed.push(batch_error(id, &e)),
                }
            }
            Ok(json!({"Successful": successful, "Failed": failed}))
        }
        "ReceiveMessage" => {
            let name = queue_name(input)?;
            let mut system = input.str_list("AttributeNames")?;
            system.extend(input.str_list("MessageSystemAttributeNames")?);
            let r = ReceiveMessage {
                max_messages: input.int("MaxNumberOfMessages")?,
                visibility_timeout: input.int("VisibilityTimeout")?,
                wait_seconds: input.int("WaitTimeSeconds")?,
                system_attribute_names: system,
                message_attribute_names: input.str_list("MessageAttributeNames")?,
                attempt_id: input.str("ReceiveRequestAttemptId")?.map(str::to_owned),
            };
            let messages = svc.receive_message(&name, r).await?;
            let list: Vec<Value> = messages
                .into_iter()
                .map(|m| {
                    object(vec![
                        ("MessageId", Some(json!(m.message_id))),
                        ("ReceiptHandle", Some(json!(m.receipt_handle))),
                        ("MD5OfBody", Some(json!(m.md5_body))),
                        ("Body", Some(json!(m.body))),
                        (
                            "Attributes",
                            (!m.attributes.is_empty()).then(|| json!(m.attributes)),
                        ),
                        (
                            "MD5OfMessageAttributes",
                            m.md5_message_attributes.map(Value::String),
                        ),
                        (
                            "MessageAttributes",
                            (!m.message_attributes.is_empty())
                                .then(|| attributes_json(&m.message_attributes)),
                        ),
                    ])
                })
                .collect();
            Ok(object(vec![(
                "Messages",
                (!list.is_empty()).then_some(Value::Array(list)),
            )]))
        }
        "DeleteMessage" => {
            let name = queue_name(input)?;
            svc.delete_message(&name, input.req_str("ReceiptHandle")?)
                .await?;
            ok_empty()
        }
        "DeleteMessageBatch" => {
            let name = queue_name(input)?;
            let entries = input.objects("Entries")?;
            let ids = check_batch(&entries)?;
            let mut handles = Vec::new();
            let mut handle_ids = Vec::new();
            let mut failed = Vec::new();
            for (entry, id) in entries.iter().zip(&ids) {
                match entry.req_str("ReceiptHandle") {
                    Ok(h) => {
                        handles.push(h.to_owned());
                        handle_ids.push(*id);
                    }
                    Err(e) => failed.push(batch_error(id, &e)),
                }
            }
            let results = svc.delete_message_batch(&name, &handles).await?;
            let mut successful = Vec::new();
            for (id, r) in handle_ids.into_iter().zip(results) {
                match r {
                    Ok(()) => successful.push(json!({"Id": id})),
                    Err(e) => failed.push(batch_error(id, &e)),
                }
            }
            Ok(json!({"Successful": successful, "Failed": failed}))
        }
        "ChangeMessageVisibility" => {
            let name = queue_name(input)?;
            let handle = input.req_str("ReceiptHandle")?;
            let vt = input
                .int("VisibilityTimeout")?
                .ok_or_else(|| Error::missing("VisibilityTimeout"))?;
            svc.change_visibility(&name, handle, vt).await?;
            ok_empty()
        }
        "ChangeMessageVisibilityBatch" => {
            let name = queue_name(input)?;
            let entries = input.objects("Entries")?;
            let ids = check_batch(&entries)?;
            let mut items = Vec::new();
            let mut item_ids = Vec::new();
            let mut failed = Vec::new();
            for (entry, id) in entries.iter().zip(&ids) {
                let parsed = entry.req_str("ReceiptHandle").and_then(|h| {
                    let vt = entry
                        .int("VisibilityTimeout")?
                        .ok_or_else(|| Error::missing("VisibilityTimeout"))?;
                    Ok((h.to_owned(), vt))
                });
                match parsed {
                    Ok(item) => {
                        items.push(item);
                        item_ids.push(*id);
                    }
                    Err(e) => failed.push(batch_error(id, &e)),
                }
            }
            let results = svc.change_visibility_batch(&name, &items).await?;
            let mut successful = Vec::new();
            for (id, r) in item_ids.into_iter().zip(results) {
                match r {
                    Ok(()) => successful.push(json!({"Id": id})),
                    Err(e) => failed.push(batch_error(id, &e)),
                }
            }
            Ok(json!({"Successful": successful, "Failed": failed}))
        }
        "TagQueue" => {
            let name = queue_name(input)?;
            let tags = input.str_map("Tags")?;
            if tags.is_empty() {
                return Err(Error::missing("Tags"));
            }
            svc.tag_queue(&name, tags).await?;
            ok_empty()
        }
        "UntagQueue" => {
            let name = queue_name(input)?;
            let keys = input.str_list("TagKeys")?;
            if keys.is_empty() {
                return Err(Error::missing("TagKeys"));
            }
            svc.untag_queue(&name, &keys).await?;
            ok_empty()
        }
        "ListQueueTags" => {
            let tags = svc.list_queue_tags(&queue_name(input)?).await?;
            Ok(object(vec![(
                "Tags",
                (!tags.is_empty()).then(|| json!(tags)),
            )]))
        }
        "ListDeadLetterSourceQueues" => {
            let name = queue_name(input)?;
            let page = svc
                .list_dead_letter_sources(&name, input.int("MaxResults")?, input.str("NextToken")?)
                .await?;
            let urls: Vec<Value> = page
                .queues
                .iter()
                .map(|q| json!(ctx.queue_url(svc, &q.name)))
                .collect();
            Ok(object(vec![
                ("queueUrls", Some(Value::Array(urls))),
                ("NextToken", page.next_token.map(Value::String)),
            ]))
        }
        "AddPermission" => {
            let name = queue_name(input)?;
            svc.add_permission(
                &name,
                input.req_str("Label")?,
                &input.str_list("AWSAccountIds")?,
                &input.str_list("Actions")?,
            )
            .await?;
            ok_empty()
        }
        "RemovePermission" => {
            let name = queue_name(input)?;
            svc.remove_permission(&name, input.req_str("Label")?)
                .await?;
            ok_empty()
        }
        "StartMessageMoveTask" => {
            let source = queue_name_from_arn(svc, input.req_str("SourceArn")?, "SourceArn")?;
            let destination = input
                .str("DestinationArn")?
                .map(|a| queue_name_from_arn(svc, a, "DestinationArn"))
                .transpose()?;
            let handle = svc
                .start_message_move_task(
                    &source,
                    destination.as_deref(),
                    input.int("MaxNumberOfMessagesPerSecond")?,
                )
                .await?;
            Ok(json!({"TaskHandle": handle}))
        }
        "ListMessageMoveTasks" => {
            let source = queue_name_from_arn(svc, input.req_str("SourceArn")?, "SourceArn")?;
            let tasks = svc
                .list_message_move_tasks(&source, input.int("MaxResults")?)
                .await?;
            let results: Vec<Value> = tasks
                .into_iter()
                .map(|t| {
                    object(vec![
                        ("TaskHandle", t.task_handle.map(Value::String)),
                        ("Status", Some(json!(t.status))),
                        ("SourceArn", Some(json!(t.source_arn))),
                        ("DestinationArn", t.destination_arn.map(Value::String)),
                        (
                            "MaxNumberOfMessagesPerSecond",
                            t.max_per_second.map(|n| json!(n)),
                        ),
                        ("ApproximateNumberOfMessagesMoved", Some(json!(t.moved))),
                        ("ApproximateNumberOfMessagesToMove", Some(json!(t.to_move))),
                        ("FailureReason", t.failure_reason.map(Value::String)),
                        ("StartedTimestamp", Some(json!(t.started_at_ms))),
                    ])
                })
                .collect();
            Ok(json!({"Results": results}))
        }
        "CancelMessageMoveTask" => {
            let moved = svc
                .cancel_message_move_task(input.req_str("TaskHandle")?)
                .await?;
            Ok(json!({"ApproximateNumberOfMessagesMoved": moved}))
        }
        other => Err(Error::new(
            ErrorCode::InvalidAction,
            format!("The action {other} is not valid for this endpoint."),
        )),
    }
}
