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

/// The members of one message to send, the same in `SendMessage` and in each entry of
/// `SendMessageBatch` (`SendMessageBatchRequestEntry`).
#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct MessageIn<'a> {
    pub message_body: &'a str,
    /// FIFO queues.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_group_id: Option<String>,
    /// FIFO queues.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_deduplication_id: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct SendMessageIn<'a> {
    pub queue_url: &'a str,
    #[serde(flatten)]
    pub message: MessageIn<'a>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct SendMessageOut {
    pub message_id: String,
}

/// A batch request (`SendMessageBatch`, `DeleteMessageBatch`): the queue and its entries.
#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct BatchIn<'a, E> {
    pub queue_url: &'a str,
    pub entries: Vec<BatchEntry<E>>,
}

impl<'a, E> BatchIn<'a, E> {
    /// A batch of `entries` (at most 10: any more are left out) for `queue_url`, their ids
    /// [`BATCH_IDS`] in order, so that an entry's id is its index.
    pub fn new(queue_url: &'a str, entries: impl IntoIterator<Item = E>) -> Self {
        BatchIn {
            queue_url,
            entries: BATCH_IDS
                .into_iter()
                .zip(entries)
                .map(|(id, entry)| BatchEntry { id, entry })
                .collect(),
        }
    }
}

/// One entry of a batch request: its id and the operation's own members (`MessageIn` for
/// `SendMessageBatch`, `ReceiptIn` for `DeleteMessageBatch`).
#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct BatchEntry<E> {
    pub id: &'static str,
    #[serde(flatten)]
    pub entry: E,
}

/// The answer of a batch request: its entries that succeeded (`T`, as far as the bench
/// reads them) and those that failed.
#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct BatchOut<T> {
    // Not `default`, which would ask `T: Default`.
    #[serde(default = "Vec::new")]
    pub successful: Vec<T>,
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

/// The member of a `DeleteMessageBatch` entry that names its message.
#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct ReceiptIn<'a> {
    pub receipt_handle: &'a str,
}

/// A successful entry of a batch answer, as far as the bench reads it.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_carry_the_model_names_in_order() {
        let message = |body| MessageIn {
            message_body: body,
            message_group_id: Some("g".into()),
            message_deduplication_id: None,
        };
        let send = SendMessageIn {
            queue_url: "u",
            message: message("a"),
        };
        assert_eq!(
            serde_json::to_string(&send).unwrap(),
            r#"{"QueueUrl":"u","MessageBody":"a","MessageGroupId":"g"}"#
        );
        let batch = BatchIn::new("u", [message("a"), message("b")]);
        assert_eq!(
            serde_json::to_string(&batch).unwrap(),
            r#"{"QueueUrl":"u","Entries":[{"Id":"0","MessageBody":"a","MessageGroupId":"g"},{"Id":"1","MessageBody":"b","MessageGroupId":"g"}]}"#
        );
        let receipts = (0..11).map(|_| ReceiptIn {
            receipt_handle: "r",
        });
        let delete = BatchIn::new("u", receipts);
        assert_eq!(delete.entries.len(), 10, "a batch takes at most 10 entries");
        assert_eq!(
            serde_json::to_string(&delete.entries[9]).unwrap(),
            r#"{"Id":"9","ReceiptHandle":"r"}"#
        );
    }
}
