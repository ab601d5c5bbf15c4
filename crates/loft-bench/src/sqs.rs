//! The few SQS request and response shapes the bench uses, named as in the botocore
//! model (`sqs/2012-11-05/service-2.json`). Only the members the bench reads are
//! declared; the rest of an answer is ignored.

use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};

/// Ids for the entries of a batch request (at most 10 entries).
pub const BATCH_IDS: [&str; 10] = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"];

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct QueueNameIn<'a> {
    pub queue_name: &'a str,
    /// CreateQueue's attributes (`FifoQueue` for `--fifo-groups`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attributes: Option<std::collections::BTreeMap<&'static str, &'static str>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct QueueUrlOut {
    pub queue_url: String,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct QueueUrlIn<'a> {
    pub queue_url: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct SendMessageIn<'a> {
    pub queue_url: &'a str,
    pub message_body: &'a str,
    /// FIFO queues.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_group_id: Option<String>,
    /// FIFO queues.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_deduplication_id: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct SendMessageOut {
    pub message_id: String,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct SendMessageBatchIn<'a> {
    pub queue_url: &'a str,
    pub entries: Vec<SendEntry<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct SendEntry<'a> {
    pub id: &'static str,
    pub message_body: &'a str,
    /// FIFO queues.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_group_id: Option<String>,
    /// FIFO queues.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_deduplication_id: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct SendMessageBatchOut {
    #[serde(default)]
    pub successful: Vec<IgnoredAny>,
    #[serde(default)]
    pub failed: Vec<BatchError>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct BatchError {
    pub code: String,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct ReceiveMessageIn<'a> {
    pub queue_url: &'a str,
    pub max_number_of_messages: u32,
    /// Seconds.
    pub visibility_timeout: u64,
    /// Seconds.
    pub wait_time_seconds: u32,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ReceiveMessageOut {
    #[serde(default)]
    pub messages: Vec<Message>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Message {
    pub message_id: String,
    pub receipt_handle: String,
    #[serde(default)]
    pub body: String,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct DeleteMessageBatchIn<'a> {
    pub queue_url: &'a str,
    pub entries: Vec<DeleteEntry<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct DeleteEntry<'a> {
    pub id: &'static str,
    pub receipt_handle: &'a str,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct DeleteMessageBatchOut {
    #[serde(default)]
    pub successful: Vec<BatchOk>,
    #[serde(default)]
    pub failed: Vec<BatchError>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct BatchOk {
    pub id: String,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct DeleteMessageIn<'a> {
    pub queue_url: &'a str,
    pub receipt_handle: &'a str,
}

/// For operations whose answer the bench does not read.
pub type Ignored = IgnoredAny;

/// GetQueueAttributes' answer, for `QueueArn`.
#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct QueueArnOut {
    pub attributes: QueueArnAttributes,
}

/// The `QueueArn` attribute.
#[derive(Deserialize)]
pub struct QueueArnAttributes {
    #[serde(rename = "QueueArn")]
    pub queue_arn: String,
}
