//! The SQS operations' inputs and outputs, named and shaped as the botocore model
//! `sqs/2012-11-05` declares them; the `/ Name` parts are the Query protocol's flattened
//! names from the model's last Query edition (`locationName`s).
//!
//! Where Loft reads a member more leniently than the model requires, so that the Service
//! can answer with AWS's own words, the field says so (`DataType` of a message attribute is
//! optional here: an attribute without one gets the Service's "must contain non-empty
//! message attribute type").
//!
//! [`SqsRequest`] and [`SqsResponse`] hold one variant per operation; [`OPERATIONS`] lists
//! them with their members for tests and tools.

use super::super::shape::{operations, structure, Blob, Entry, KeyValue, Map, NameValue, NoOutput};

/// A queue attribute map (`Attribute.N.Name` / `.Value`).
pub type QueueAttributeMap = Map<String, NameValue>;
/// A tag map (`Tag.N.Key` / `.Value`).
pub type TagMap = Map<String, KeyValue>;
/// Message attributes (`MessageAttribute.N.Name` / `.Value.DataType` ...).
pub type MessageBodyAttributeMap = Map<MessageAttributeValue, NameValue>;
/// Message system attributes (`MessageSystemAttribute.N.Name` / `.Value...`).
pub type MessageBodySystemAttributeMap = Map<MessageAttributeValue, NameValue>;
/// A message's system attributes in a receive (`Attribute.N.Name` / `.Value`).
pub type MessageSystemAttributeMap = Map<String, NameValue>;

structure! {
    /// A message attribute's value (`MessageAttributeValue`, also the model's
    /// `MessageSystemAttributeValue`).
    pub struct MessageAttributeValue {
        /// The value of String and Number attributes.
        StringValue: string_value: Option<String>,
        /// The value of Binary attributes.
        BinaryValue: binary_value: Option<Blob>,
        /// Reserved by AWS; Loft refuses non-empty lists.
        StringListValues / StringListValue: string_list_values: Option<Vec<String>>,
        /// Reserved by AWS; Loft refuses non-empty lists.
        BinaryListValues / BinaryListValue: binary_list_values: Option<Vec<Blob>>,
        /// `String`, `Number`, `Binary`, with an optional `.custom` suffix. Required by the
        /// model; its absence is the Service's to word.
        DataType: data_type: Option<String>,
    }

    /// `AddPermission` input.
    pub struct AddPermissionRequest {
        /// The queue.
        QueueUrl: queue_url: String,
        /// The permission's label.
        Label: label: String,
        /// Accounts granted.
        AWSAccountIds / AWSAccountId: aws_account_ids: Option<Vec<String>>,
        /// Actions granted.
        Actions / ActionName: actions: Option<Vec<String>>,
    }

    /// `CancelMessageMoveTask` input.
    pub struct CancelMessageMoveTaskRequest {
        /// The task's handle.
        TaskHandle: task_handle: String,
    }
    /// `CancelMessageMoveTask` output.
    pub struct CancelMessageMoveTaskResult {
        /// Messages moved before the cancel.
        ApproximateNumberOfMessagesMoved: approximate_number_of_messages_moved: Option<i64>,
    }

    /// `ChangeMessageVisibility` input.
    pub struct ChangeMessageVisibilityRequest {
        /// The queue.
        QueueUrl: queue_url: String,
        /// The received message's handle.
        ReceiptHandle: receipt_handle: String,
        /// New timeout, seconds from now.
        VisibilityTimeout: visibility_timeout: i64,
    }

    /// One `ChangeMessageVisibilityBatch` entry.
    pub struct ChangeMessageVisibilityBatchRequestEntry {
        /// The entry's id in the batch.
        Id: id: String,
        /// The received message's handle.
        ReceiptHandle: receipt_handle: String,
        /// New timeout, seconds from now (required by Loft, as SQS answers without one).
        VisibilityTimeout: visibility_timeout: i64,
    }
    /// `ChangeMessageVisibilityBatch` input.
    pub struct ChangeMessageVisibilityBatchRequest {
        /// The queue.
        QueueUrl: queue_url: String,
        /// The entries; each one that cannot be read fails on its own.
        Entries / ChangeMessageVisibilityBatchRequestEntry:
            entries: Option<Vec<Entry<ChangeMessageVisibilityBatchRequestEntry>>>,
    }
    /// A successful `ChangeMessageVisibilityBatch` entry.
    pub struct ChangeMessageVisibilityBatchResultEntry {
        /// The entry's id.
        Id: id: String,
    }
    /// `ChangeMessageVisibilityBatch` output.
    pub struct ChangeMessageVisibilityBatchResult {
        /// Entries that succeeded.
        Successful / ChangeMessageVisibilityBatchResultEntry:
            successful: Vec<ChangeMessageVisibilityBatchResultEntry>,
        /// Entries that failed; left out when none did, as SQS answers.
        Failed / BatchResultErrorEntry: failed: Option<Vec<BatchResultErrorEntry>>,
    }

    /// A failed batch entry.
    pub struct BatchResultErrorEntry {
        /// The entry's id.
        Id: id: String,
        /// Whether the caller is at fault.
        SenderFault: sender_fault: bool,
        /// The error's Query code.
        Code: code: String,
        /// The error's message.
        Message: message: Option<String>,
    }

    /// `CreateQueue` input.
    pub struct CreateQueueRequest {
        /// The queue's name.
        QueueName: queue_name: String,
        /// Queue attributes.
        Attributes / Attribute: attributes: Option<QueueAttributeMap>,
        /// Tags.
        tags / Tag: tags: Option<TagMap>,
    }
    /// `CreateQueue` output.
    pub struct CreateQueueResult {
        /// The new (or existing) queue's URL.
        QueueUrl: queue_url: Option<String>,
    }

    /// `DeleteMessage` input.
    pub struct DeleteMessageRequest {
        /// The queue.
        QueueUrl: queue_url: String,
        /// The received message's handle.
        ReceiptHandle: receipt_handle: String,
    }

    /// One `DeleteMessageBatch` entry.
    pub struct DeleteMessageBatchRequestEntry {
        /// The entry's id in the batch.
        Id: id: String,
        /// The received message's handle.
        ReceiptHandle: receipt_handle: String,
    }
    /// `DeleteMessageBatch` input.
    pub struct DeleteMessageBatchRequest {
        /// The queue.
        QueueUrl: queue_url: String,
        /// The entries; each one that cannot be read fails on its own.
        Entries / DeleteMessageBatchRequestEntry:
            entries: Option<Vec<Entry<DeleteMessageBatchRequestEntry>>>,
    }
    /// A successful `DeleteMessageBatch` entry.
    pub struct DeleteMessageBatchResultEntry {
        /// The entry's id.
        Id: id: String,
    }
    /// `DeleteMessageBatch` output.
    pub struct DeleteMessageBatchResult {
        /// Entries that succeeded.
        Successful / DeleteMessageBatchResultEntry: successful: Vec<DeleteMessageBatchResultEntry>,
        /// Entries that failed; left out when none did.
        Failed / BatchResultErrorEntry: failed: Option<Vec<BatchResultErrorEntry>>,
    }

    /// `DeleteQueue` input.
    pub struct DeleteQueueRequest {
        /// The queue.
        QueueUrl: queue_url: String,
    }

    /// `GetQueueAttributes` input.
    pub struct GetQueueAttributesRequest {
        /// The queue.
        QueueUrl: queue_url: String,
        /// Names wanted (`All` for every one).
        AttributeNames / AttributeName: attribute_names: Option<Vec<String>>,
    }
    /// `GetQueueAttributes` output.
    pub struct GetQueueAttributesResult {
        /// The attributes; left out when none.
        Attributes / Attribute: attributes: Option<QueueAttributeMap>,
    }

    /// `GetQueueUrl` input.
    pub struct GetQueueUrlRequest {
        /// The queue's name.
        QueueName: queue_name: String,
        /// The owner's account (Loft has one account; accepted and ignored).
        QueueOwnerAWSAccountId: queue_owner_aws_account_id: Option<String>,
    }
    /// `GetQueueUrl` output.
    pub struct GetQueueUrlResult {
        /// The queue's URL.
        QueueUrl: queue_url: Option<String>,
    }

    /// `ListDeadLetterSourceQueues` input.
    pub struct ListDeadLetterSourceQueuesRequest {
        /// The dead-letter queue.
        QueueUrl: queue_url: String,
        /// A page token.
        NextToken: next_token: Option<String>,
        /// Page size (1..=1000).
        MaxResults: max_results: Option<i64>,
    }
    /// `ListDeadLetterSourceQueues` output.
    pub struct ListDeadLetterSourceQueuesResult {
        /// Queues naming it as their dead-letter queue.
        queueUrls / QueueUrl: queue_urls: Vec<String>,
        /// The next page's token.
        NextToken: next_token: Option<String>,
    }

    /// `ListMessageMoveTasks` input.
    pub struct ListMessageMoveTasksRequest {
        /// The source queue's ARN.
        SourceArn: source_arn: String,
        /// Most tasks (1..=10).
        MaxResults: max_results: Option<i64>,
    }
    /// One move task.
    pub struct ListMessageMoveTasksResultEntry {
        /// Its handle, while it runs.
        TaskHandle: task_handle: Option<String>,
        /// RUNNING, COMPLETED, CANCELLING, CANCELLED or FAILED.
        Status: status: Option<String>,
        /// The source queue's ARN.
        SourceArn: source_arn: Option<String>,
        /// The destination's ARN, when one was given.
        DestinationArn: destination_arn: Option<String>,
        /// The rate limit, when one was given.
        MaxNumberOfMessagesPerSecond: max_number_of_messages_per_second: Option<i64>,
        /// Messages moved.
        ApproximateNumberOfMessagesMoved: approximate_number_of_messages_moved: Option<i64>,
        /// Messages to move.
        ApproximateNumberOfMessagesToMove: approximate_number_of_messages_to_move: Option<i64>,
        /// Why it failed.
        FailureReason: failure_reason: Option<String>,
        /// When it started, ms since the epoch.
        StartedTimestamp: started_timestamp: Option<i64>,
    }
    /// `ListMessageMoveTasks` output.
    pub struct ListMessageMoveTasksResult {
        /// The tasks, newest first.
        Results / ListMessageMoveTasksResultEntry: results: Vec<ListMessageMoveTasksResultEntry>,
    }

    /// `ListQueueTags` input.
    pub struct ListQueueTagsRequest {
        /// The queue.
        QueueUrl: queue_url: String,
    }
    /// `ListQueueTags` output.
    pub struct ListQueueTagsResult {
        /// The tags; left out when none.
        Tags / Tag: tags: Option<TagMap>,
    }

    /// `ListQueues` input.
    pub struct ListQueuesRequest {
        /// Only queues whose name starts with it.
        QueueNamePrefix: queue_name_prefix: Option<String>,
        /// A page token.
        NextToken: next_token: Option<String>,
        /// Page size (1..=1000).
        MaxResults: max_results: Option<i64>,
    }
    /// `ListQueues` output.
    pub struct ListQueuesResult {
        /// The queues; left out when none.
        QueueUrls / QueueUrl: queue_urls: Option<Vec<String>>,
        /// The next page's token.
        NextToken: next_token: Option<String>,
    }

    /// A received message.
    pub struct Message {
        /// Its id.
        MessageId: message_id: Option<String>,
        /// The handle of this receive.
        ReceiptHandle: receipt_handle: Option<String>,
        /// MD5 of the body.
        MD5OfBody: md5_of_body: Option<String>,
        /// The body.
        Body: body: Option<String>,
        /// System attributes asked for; left out when none.
        Attributes / Attribute: attributes: Option<MessageSystemAttributeMap>,
        /// MD5 of the message attributes returned.
        MD5OfMessageAttributes: md5_of_message_attributes: Option<String>,
        /// Message attributes asked for; left out when none.
        MessageAttributes / MessageAttribute: message_attributes: Option<MessageBodyAttributeMap>,
    }

    /// `PurgeQueue` input.
    pub struct PurgeQueueRequest {
        /// The queue.
        QueueUrl: queue_url: String,
    }

    /// `ReceiveMessage` input.
    pub struct ReceiveMessageRequest {
        /// The queue.
        QueueUrl: queue_url: String,
        /// System attributes wanted (deprecated name).
        AttributeNames / AttributeName: attribute_names: Option<Vec<String>>,
        /// System attributes wanted.
        MessageSystemAttributeNames / MessageSystemAttributeName:
            message_system_attribute_names: Option<Vec<String>>,
        /// Message attributes wanted (`All`, `.*`, names, `prefix.*`).
        MessageAttributeNames / MessageAttributeName: message_attribute_names: Option<Vec<String>>,
        /// Most messages (1..=10).
        MaxNumberOfMessages: max_number_of_messages: Option<i64>,
        /// Visibility timeout of this receive, seconds.
        VisibilityTimeout: visibility_timeout: Option<i64>,
        /// Long-poll wait, seconds (0..=20).
        WaitTimeSeconds: wait_time_seconds: Option<i64>,
        /// FIFO: the receive attempt's id.
        ReceiveRequestAttemptId: receive_request_attempt_id: Option<String>,
    }
    /// `ReceiveMessage` output.
    pub struct ReceiveMessageResult {
        /// The messages; left out when none.
        Messages / Message: messages: Option<Vec<Message>>,
    }

    /// `RemovePermission` input.
    pub struct RemovePermissionRequest {
        /// The queue.
        QueueUrl: queue_url: String,
        /// The permission's label.
        Label: label: String,
    }

    /// `SendMessage` input.
    pub struct SendMessageRequest {
        /// The queue.
        QueueUrl: queue_url: String,
        /// The body.
        MessageBody: message_body: String,
        /// Delay, seconds (0..=900).
        DelaySeconds: delay_seconds: Option<i64>,
        /// Message attributes.
        MessageAttributes / MessageAttribute: message_attributes: Option<MessageBodyAttributeMap>,
        /// System attributes (`AWSTraceHeader`).
        MessageSystemAttributes / MessageSystemAttribute:
            message_system_attributes: Option<MessageBodySystemAttributeMap>,
        /// FIFO: deduplication id.
        MessageDeduplicationId: message_deduplication_id: Option<String>,
        /// FIFO: group id.
        MessageGroupId: message_group_id: Option<String>,
    }
    /// `SendMessage` output.
    pub struct SendMessageResult {
        /// MD5 of the body.
        MD5OfMessageBody: md5_of_message_body: Option<String>,
        /// MD5 of the message attributes.
        MD5OfMessageAttributes: md5_of_message_attributes: Option<String>,
        /// MD5 of the system attributes.
        MD5OfMessageSystemAttributes: md5_of_message_system_attributes: Option<String>,
        /// The message's id.
        MessageId: message_id: Option<String>,
        /// FIFO: its sequence number.
        SequenceNumber: sequence_number: Option<String>,
    }

    /// One `SendMessageBatch` entry.
    pub struct SendMessageBatchRequestEntry {
        /// The entry's id in the batch.
        Id: id: String,
        /// The body.
        MessageBody: message_body: String,
        /// Delay, seconds (0..=900).
        DelaySeconds: delay_seconds: Option<i64>,
        /// Message attributes.
        MessageAttributes / MessageAttribute: message_attributes: Option<MessageBodyAttributeMap>,
        /// System attributes (`AWSTraceHeader`).
        MessageSystemAttributes / MessageSystemAttribute:
            message_system_attributes: Option<MessageBodySystemAttributeMap>,
        /// FIFO: deduplication id.
        MessageDeduplicationId: message_deduplication_id: Option<String>,
        /// FIFO: group id.
        MessageGroupId: message_group_id: Option<String>,
    }
    /// `SendMessageBatch` input.
    pub struct SendMessageBatchRequest {
        /// The queue.
        QueueUrl: queue_url: String,
        /// The entries; each one that cannot be read fails on its own.
        Entries / SendMessageBatchRequestEntry:
            entries: Option<Vec<Entry<SendMessageBatchRequestEntry>>>,
    }
    /// A successful `SendMessageBatch` entry.
    pub struct SendMessageBatchResultEntry {
        /// The entry's id.
        Id: id: String,
        /// The message's id.
        MessageId: message_id: String,
        /// MD5 of the body.
        MD5OfMessageBody: md5_of_message_body: String,
        /// MD5 of the message attributes.
        MD5OfMessageAttributes: md5_of_message_attributes: Option<String>,
        /// MD5 of the system attributes.
        MD5OfMessageSystemAttributes: md5_of_message_system_attributes: Option<String>,
        /// FIFO: its sequence number.
        SequenceNumber: sequence_number: Option<String>,
    }
    /// `SendMessageBatch` output.
    pub struct SendMessageBatchResult {
        /// Entries that succeeded.
        Successful / SendMessageBatchResultEntry: successful: Vec<SendMessageBatchResultEntry>,
        /// Entries that failed; left out when none did.
        Failed / BatchResultErrorEntry: failed: Option<Vec<BatchResultErrorEntry>>,
    }

    /// `SetQueueAttributes` input.
    pub struct SetQueueAttributesRequest {
        /// The queue.
        QueueUrl: queue_url: String,
        /// The attributes to set.
        Attributes / Attribute: attributes: QueueAttributeMap,
    }

    /// `StartMessageMoveTask` input.
    pub struct StartMessageMoveTaskRequest {
        /// The dead-letter queue's ARN.
        SourceArn: source_arn: String,
        /// Where to move; the messages' original queues when absent.
        DestinationArn: destination_arn: Option<String>,
        /// Rate limit (1..=500).
        MaxNumberOfMessagesPerSecond: max_number_of_messages_per_second: Option<i64>,
    }
    /// `StartMessageMoveTask` output.
    pub struct StartMessageMoveTaskResult {
        /// The task's handle.
        TaskHandle: task_handle: Option<String>,
    }

    /// `TagQueue` input.
    pub struct TagQueueRequest {
        /// The queue.
        QueueUrl: queue_url: String,
        /// Tags to add or replace.
        Tags / Tag: tags: TagMap,
    }

    /// `UntagQueue` input.
    pub struct UntagQueueRequest {
        /// The queue.
        QueueUrl: queue_url: String,
        /// Keys to remove.
        TagKeys / TagKey: tag_keys: Vec<String>,
    }
}

operations! {
    /// An SQS request: the operation and its input.
    pub enum SqsRequest;
    /// An SQS answer: the operation and its output.
    pub enum SqsResponse;
    /// Every SQS operation, with its input and output members.
    pub static OPERATIONS;
    {
        AddPermission(AddPermissionRequest) -> NoOutput,
            sqs:AddPermission on QueueUrl(queue_url),
        CancelMessageMoveTask(CancelMessageMoveTaskRequest) -> CancelMessageMoveTaskResult,
            sqs:CancelMessageMoveTask on TaskHandle(task_handle),
        ChangeMessageVisibility(ChangeMessageVisibilityRequest) -> NoOutput,
            sqs:ChangeMessageVisibility on QueueUrl(queue_url),
        ChangeMessageVisibilityBatch(ChangeMessageVisibilityBatchRequest)
            -> ChangeMessageVisibilityBatchResult,
            sqs:ChangeMessageVisibility on QueueUrl(queue_url),
        CreateQueue(CreateQueueRequest) -> CreateQueueResult,
            sqs:CreateQueue on NewQueue(queue_name),
        DeleteMessage(DeleteMessageRequest) -> NoOutput,
            sqs:DeleteMessage on QueueUrl(queue_url),
        DeleteMessageBatch(DeleteMessageBatchRequest) -> DeleteMessageBatchResult,
            sqs:DeleteMessage on QueueUrl(queue_url),
        DeleteQueue(DeleteQueueRequest) -> NoOutput,
            sqs:DeleteQueue on QueueUrl(queue_url),
        GetQueueAttributes(GetQueueAttributesRequest) -> GetQueueAttributesResult,
            sqs:GetQueueAttributes on QueueUrl(queue_url),
        GetQueueUrl(GetQueueUrlRequest) -> GetQueueUrlResult,
            sqs:GetQueueUrl on QueueName(queue_name, queue_owner_aws_account_id),
        ListDeadLetterSourceQueues(ListDeadLetterSourceQueuesRequest)
            -> ListDeadLetterSourceQueuesResult,
            sqs:ListDeadLetterSourceQueues on QueueUrl(queue_url),
        ListMessageMoveTasks(ListMessageMoveTasksRequest) -> ListMessageMoveTasksResult,
            sqs:ListMessageMoveTasks on QueueArn(source_arn),
        ListQueueTags(ListQueueTagsRequest) -> ListQueueTagsResult,
            sqs:ListQueueTags on QueueUrl(queue_url),
        ListQueues(ListQueuesRequest) -> ListQueuesResult,
            sqs:ListQueues on Account,
        PurgeQueue(PurgeQueueRequest) -> NoOutput,
            sqs:PurgeQueue on QueueUrl(queue_url),
        ReceiveMessage(ReceiveMessageRequest) -> ReceiveMessageResult,
            sqs:ReceiveMessage on QueueUrl(queue_url),
        RemovePermission(RemovePermissionRequest) -> NoOutput,
            sqs:RemovePermission on QueueUrl(queue_url),
        SendMessage(SendMessageRequest) -> SendMessageResult,
            sqs:SendMessage on QueueUrl(queue_url),
        SendMessageBatch(SendMessageBatchRequest) -> SendMessageBatchResult,
            sqs:SendMessage on QueueUrl(queue_url),
        SetQueueAttributes(SetQueueAttributesRequest) -> NoOutput,
            sqs:SetQueueAttributes on QueueUrl(queue_url),
        StartMessageMoveTask(StartMessageMoveTaskRequest) -> StartMessageMoveTaskResult,
            sqs:StartMessageMoveTask on MoveTask(source_arn, destination_arn),
        TagQueue(TagQueueRequest) -> NoOutput,
            sqs:TagQueue on QueueUrl(queue_url),
        UntagQueue(UntagQueueRequest) -> NoOutput,
            sqs:UntagQueue on QueueUrl(queue_url),
    }
}
