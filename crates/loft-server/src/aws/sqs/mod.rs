//! The SQS operations: each typed input ([`types`]) handed to its Service method, the
//! result returned as the typed output. Both SQS wire protocols decode into
//! [`SqsRequest`] and encode [`SqsResponse`], so every operation behaves the same over JSON
//! and Query; nothing here decides a rule of queues or messages: that is the Service's.
//!
//! Adding an operation: its input and output in [`types`] (and one line in its
//! `operations!` list), its Service method, one arm in [`call`].
//!
//! Source: the botocore model `sqs/2012-11-05` (operation and member names) and the SQS
//! API Reference.

pub mod types;

use std::sync::Arc;

use loft_core::message::{MessageAttributeValue as CoreValue, MessageAttributes};
use loft_core::service::{BatchEntry, BatchOutcome, ReceiveMessage, SendMessage, SendResult};
use loft_core::{Error, ErrorCode, Result, Service};

use super::shape::{Blob, Entry, NoOutput};
use types::*;

pub use super::Context;

impl Context {
    /// The URL of the queue of store key `key`: `BASE/ACCOUNT/NAME` in the configured
    /// region, `BASE/queue/REGION/ACCOUNT/NAME` in any other (the path form LocalStack
    /// also uses, which works whatever host the client reached Loft at). The name is
    /// percent-encoded (only names made through the seeds' API have characters to
    /// encode: `?`, `#`, `%`, spaces, non-ASCII), so every name comes back through
    /// [`queue_name`] as itself.
    fn queue_url(&self, svc: &Service, key: &str) -> String {
        let (scope, name) = svc.key_scope(key);
        let name = percent_encoding::utf8_percent_encode(name, PATH_SEGMENT);
        if scope.region == svc.config().region {
            format!("{}/{}/{}", self.base_url, scope.account, name)
        } else {
            let (region, account) = (scope.region, scope.account);
            format!("{}/queue/{region}/{account}/{name}", self.base_url)
        }
    }

    /// The store key of the queue `url` names ([`QueueUrlParts`]), in the request's
    /// account and region unless the URL names others ([`Service::queue_key_for`]).
    ///
    /// Errors: `QueueDoesNotExist` when it names no queue, or a region other than the one
    /// the request was signed for.
    pub fn queue_key(&self, svc: &Service, url: &str) -> Result<String> {
        let parts = QueueUrlParts::parse(url)?;
        let name = decoded(parts.name);
        svc.queue_key_for(&self.principal, parts.region, parts.account, &name)
    }

    /// The store key of queue `name` in `owner` (QueueOwnerAWSAccountId) or the caller's
    /// account, in the request's region.
    ///
    /// Errors: `QueueDoesNotExist` when `owner` is not an account id (12 ASCII digits):
    /// no queue can belong to it. AWS's answer to a malformed QueueOwnerAWSAccountId is
    /// recorded neither in the botocore model (GetQueueUrl: "The Amazon Web Services
    /// account ID of the account that created the queue", a plain String) nor in
    /// LocalStack's AWS-validated SQS snapshots, so it is answered as a queue that does not
    /// exist, the same for every malformed id (`0111111111111`, `+11111111111`,
    /// `1.1e11`, non-ASCII digits), before any permission is weighed.
    pub fn named_queue_key(
        &self,
        svc: &Service,
        name: &str,
        owner: Option<&str>,
    ) -> Result<String> {
        let account = match owner {
            Some(o) if !loft_core::names::is_account_id(o) => return Err(Error::no_queue()),
            Some(o) => o,
            None => &*self.principal.account_id,
        };
        Ok(svc.resource_key(account, &self.principal.region, name))
    }
}

/// What a QueueUrl says: the queue's name (its last path segment) and, when the URL names
/// them, its account (the 12-digit segment before the name) and region (a host
/// `sqs.REGION.…` or `REGION.queue.…` as AWS's and LocalStack's are, or a path
/// `/queue/REGION/ACCOUNT/NAME`). URLs of real AWS and of other emulators are accepted
/// (`https://sqs.us-east-1.amazonaws.com/000000000000/q`, `http://localhost:4566/000000000000/q`,
/// `http://sqs.eu-west-1.localhost.localstack.cloud:4566/000000000000/q`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueUrlParts<'a> {
    /// The region the URL names, if any.
    pub region: Option<&'a str>,
    /// The account the URL names, if any.
    pub account: Option<&'a str>,
    /// The queue name.
    pub name: &'a str,
}

impl<'a> QueueUrlParts<'a> {
    /// Reads `url`. Errors: `QueueDoesNotExist` when it names no queue.
    pub fn parse(url: &'a str) -> Result<QueueUrlParts<'a>> {
        use loft_core::names::{is_account_id, is_region};
        let trimmed = url.split(['?', '#']).next().unwrap_or("");
        let (host, path) = match trimmed.split_once("://") {
            Some((_, rest)) => rest.split_once('/').unwrap_or((rest, "")),
            None => ("", trimmed),
        };
        // The last four non-empty segments, last first (all that is read; no allocation).
        let mut last = [""; 4];
        let mut n = 0;
        for segment in path.rsplit('/').filter(|s| !s.is_empty()).take(4) {
            last[n] = segment;
            n += 1;
        }
        if n == 0 {
            return Err(Error::no_queue());
        }
        let name = last[0];
        if name.contains(':') && name.starts_with("http") {
            return Err(Error::no_queue());
        }
        let account = (n >= 2).then_some(last[1]).filter(|a| is_account_id(a));
        // A segment of digits before the name is an account that is not one (13 digits,
        // non-ASCII digits): no queue belongs to it, as for a malformed
        // QueueOwnerAWSAccountId ([`Context::named_queue_key`]), rather than the caller's
        // own queue of that name. A word there (`/queue/NAME`, as older emulators' URLs
        // read) still names the caller's.
        if n >= 2 && account.is_none() && percent_decoded_digits(last[1]) {
            return Err(Error::no_queue());
        }
        let path_region = (account.is_some() && n >= 4 && last[3] == "queue")
            .then_some(last[2])
            .filter(|r| is_region(r));
        let host = host.rsplit('@').next().unwrap_or(host);
        let mut labels = host.split('.');
        let host_region = match (labels.next(), labels.next()) {
            (Some("sqs"), Some(r)) if is_region(r) => Some(r),
            (Some(r), Some("queue")) if is_region(r) => Some(r),
            _ => None,
        };
        Ok(QueueUrlParts {
            region: path_region.or(host_region),
            account,
            name,
        })
    }
}

/// Whether URL path segment `segment`, percent-decoded, is digits only (any script's).
fn percent_decoded_digits(segment: &str) -> bool {
    let s = decoded(segment);
    !s.is_empty() && s.chars().all(char::is_numeric)
}

/// The queue name a QueueUrl names: its last path segment ([`QueueUrlParts`]).
///
/// Errors: `QueueDoesNotExist` when it names no queue.
///
/// The segment is percent-decoded, as [`Context::queue_url`] encodes it; one that does
/// not decode to UTF-8 is taken as written.
pub fn queue_name(url: &str) -> Result<String> {
    QueueUrlParts::parse(url).map(|p| decoded(p.name).into_owned())
}

/// A queue URL's name segment percent-decoded ([`Context::queue_url`] encodes it); one
/// that does not decode to UTF-8 is taken as written.
fn decoded(segment: &str) -> std::borrow::Cow<'_, str> {
    percent_encoding::percent_decode_str(segment)
        .decode_utf8()
        .unwrap_or(std::borrow::Cow::Borrowed(segment))
}

/// The bytes a queue name's URL path segment keeps as they are: RFC 3986's unreserved
/// characters (`A-Z a-z 0-9 - . _ ~`); every other byte is percent-encoded.
const PATH_SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// The store key of the queue a move task's `param` (`SourceArn`, `DestinationArn`)
/// names, for a request of `principal`: a queue of another region than the one the
/// request was signed for is not there, as a queue URL of another region is not.
///
/// Errors: `InvalidParameterValue` when `arn` is not a queue ARN;
/// `ResourceNotFoundException` "The resource that you specified for the {param}
/// parameter doesn't exist." for another region's queue.
fn move_task_queue_key(
    svc: &Service,
    principal: &loft_core::service::Principal,
    arn: &str,
    param: &str,
) -> Result<String> {
    let key = queue_key_from_arn(svc, arn, param)?;
    if svc.check_arn_region(principal, arn, param).is_err() {
        return Err(Error::new(
            ErrorCode::ResourceNotFoundException,
            format!("The resource that you specified for the {param} parameter doesn't exist."),
        ));
    }
    Ok(key)
}

/// The store key of the queue an ARN names. Errors: `InvalidParameterValue` naming
/// `param`.
pub fn queue_key_from_arn(svc: &Service, arn: &str, param: &str) -> Result<String> {
    svc.key_of_arn(arn, "sqs")
        .ok_or_else(|| Error::invalid(format!("Value {arn} for parameter {param} is invalid.")))
}

/// Message attributes in the Service's terms. Errors: `InvalidParameterValue` for list
/// values, which Loft does not support.
fn attributes(map: Option<MessageBodyAttributeMap>) -> Result<MessageAttributes> {
    let mut out = MessageAttributes::new();
    for (name, v) in map.map(|m| m.into_inner()).unwrap_or_default() {
        if v.string_list_values.is_some_and(|l| !l.is_empty())
            || v.binary_list_values.is_some_and(|l| !l.is_empty())
        {
            return Err(Error::invalid(format!(
                "Message attribute list values in '{name}' are not supported."
            )));
        }
        out.insert(
            name,
            CoreValue {
                data_type: v.data_type.unwrap_or_default(),
                string_value: v.string_value,
                binary_value: v.binary_value.map(|b| b.0),
            },
        );
    }
    Ok(out)
}

/// Message attributes in the model's terms.
fn attributes_out(attributes: MessageAttributes) -> Option<MessageBodyAttributeMap> {
    (!attributes.is_empty()).then(|| {
        attributes
            .into_iter()
            .map(|(name, v)| {
                (
                    name,
                    MessageAttributeValue {
                        string_value: v.string_value,
                        binary_value: v.binary_value.map(Blob),
                        string_list_values: None,
                        binary_list_values: None,
                        data_type: Some(v.data_type),
                    },
                )
            })
            .collect::<std::collections::BTreeMap<_, _>>()
            .into()
    })
}

fn map_or_empty<V, N>(m: Option<super::shape::Map<V, N>>) -> std::collections::BTreeMap<String, V> {
    m.map(|m| m.into_inner()).unwrap_or_default()
}

#[allow(clippy::too_many_arguments)]
fn send_message(
    ctx: &Context,
    body: String,
    delay_seconds: Option<i64>,
    message_attributes: Option<MessageBodyAttributeMap>,
    system_attributes: Option<MessageBodySystemAttributeMap>,
    group_id: Option<String>,
    dedup_id: Option<String>,
) -> Result<SendMessage> {
    let mut system_attributes = attributes(system_attributes)?;
    if let Some(trace) = &ctx.trace_header {
        system_attributes
            .entry("AWSTraceHeader".into())
            .or_insert_with(|| loft_core::message::MessageAttributeValue::string(trace.clone()));
    }
    Ok(SendMessage {
        body,
        delay_seconds,
        message_attributes: attributes(message_attributes)?,
        system_attributes,
        group_id,
        dedup_id,
        sender_id: ctx
            .principal
            .enforced
            .then(|| ctx.principal.sender_id.to_string()),
    })
}

/// A batch's entries in the Service's terms: each entry's Id, and the entry read by `read`
/// or why it could not be read.
fn entries<T, U>(
    list: Option<Vec<Entry<T>>>,
    id: impl Fn(&T) -> String,
    read: impl Fn(T) -> Result<U>,
) -> Vec<BatchEntry<U>> {
    list.unwrap_or_default()
        .into_iter()
        .map(|e| match e {
            Entry::Ok(t) => BatchEntry {
                id: Some(id(&t)),
                entry: read(t),
            },
            Entry::Bad { id, error } => BatchEntry {
                id,
                entry: Err(error),
            },
        })
        .collect()
}

fn failed(id: String, e: Error) -> BatchResultErrorEntry {
    BatchResultErrorEntry {
        id,
        sender_fault: e.code.is_sender_fault(),
        code: e.code.query_code().to_owned(),
        message: Some(e.message),
    }
}

/// A batch's outcome as the model's Successful and Failed lists (Failed left out when
/// empty, as SQS answers).
fn outcome<T, S>(
    results: BatchOutcome<T>,
    ok: impl Fn(String, T) -> S,
) -> (Vec<S>, Option<Vec<BatchResultErrorEntry>>) {
    let mut successful = Vec::new();
    let mut failures = Vec::new();
    for (id, r) in results {
        match r {
            Ok(t) => successful.push(ok(id, t)),
            Err(e) => failures.push(failed(id, e)),
        }
    }
    (successful, (!failures.is_empty()).then_some(failures))
}

fn send_result(r: SendResult) -> SendMessageResult {
    SendMessageResult {
        md5_of_message_body: Some(r.md5_body),
        md5_of_message_attributes: r.md5_attributes,
        md5_of_message_system_attributes: r.md5_system_attributes,
        message_id: Some(r.message_id),
        sequence_number: r.sequence_number,
    }
}

/// A running SQS operation: what [`call`] returns.
pub type Operation =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<SqsResponse>> + Send>>;

/// Runs one SQS request: the future of its answer.
///
/// Errors: each operation's, as its Service method documents them.
///
/// The returned future holds two box pointers and nothing of the request: the access check
/// and the operation's start run in a boxed future of their own that owns the Service, the
/// context and the decoded request, and is freed once it hands over the operation's own
/// future (boxed). A long poll (ReceiveMessage's up to 20 s wait) so holds only its
/// receive's state, not a copy of the request, the context or the largest operation's
/// state (memory per waiting long poll: BENCHMARKS.md, long polls).
pub fn call(
    svc: Arc<Service>,
    ctx: Context,
    req: SqsRequest,
) -> impl std::future::Future<Output = Result<SqsResponse>> + Send + 'static {
    let start = Box::pin(start(svc, ctx, req));
    async move {
        let op = start.await?;
        op.await
    }
}

/// [`call`]'s first part: the access check, then the operation's future.
async fn start(svc: Arc<Service>, ctx: Context, req: SqsRequest) -> Result<Operation> {
    super::access::check(&svc, &ctx, req.access()).await?;
    if svc.config().auto_create_queues {
        if let Some(key) = auto_created(&svc, &ctx, &req) {
            svc.sqs().auto_create_queue(&ctx.principal, &key).await?;
        }
    }
    Ok(match req {
        SqsRequest::ReceiveMessage(i) => receive_message(svc, &ctx, i)?,
        req => Box::pin(operation(svc, ctx, req)),
    })
}

/// The queue key of the operations that create a missing queue when
/// `auto_create_queues` is on ([`Sqs::auto_create_queue`]): GetQueueUrl, SendMessage,
/// SendMessageBatch and ReceiveMessage; `None` for every other operation.
fn auto_created(svc: &Service, ctx: &Context, req: &SqsRequest) -> Option<String> {
    match req {
        SqsRequest::GetQueueUrl(i) => ctx
            .named_queue_key(
                svc,
                &i.queue_name,
                i.queue_owner_aws_account_id
                    .as_deref()
                    .filter(|o| !o.is_empty()),
            )
            .ok(),
        SqsRequest::SendMessage(i) => ctx.queue_key(svc, &i.queue_url).ok(),
        SqsRequest::SendMessageBatch(i) => ctx.queue_key(svc, &i.queue_url).ok(),
        SqsRequest::ReceiveMessage(i) => ctx.queue_key(svc, &i.queue_url).ok(),
        _ => None,
    }
}

/// ReceiveMessage: the queue's messages, waiting up to WaitTimeSeconds for one, and ending
/// the wait early with none when the client's connection goes away
/// ([`crate::client_link`]). The request is read here; the returned future owns only the
/// Service, the queue's key, the Service's `ReceiveMessage` and the client-link watch.
///
/// Errors: `QueueDoesNotExist` for a URL that names no queue (here); those of
/// [`Sqs::receive_message`] (from the future).
fn receive_message(
    svc: Arc<Service>,
    ctx: &Context,
    i: ReceiveMessageRequest,
) -> Result<Operation> {
    let name = ctx.queue_key(&svc, &i.queue_url)?;
    let mut system = i.attribute_names.unwrap_or_default();
    system.extend(i.message_system_attribute_names.unwrap_or_default());
    let r = ReceiveMessage {
        max_messages: i.max_number_of_messages,
        visibility_timeout: i.visibility_timeout,
        wait_seconds: i.wait_time_seconds,
        system_attribute_names: system,
        message_attribute_names: i.message_attribute_names.unwrap_or_default(),
        attempt_id: i.receive_request_attempt_id,
    };
    let client = ctx.client.clone();
    // Boxed: it is handed down through the Service's receive futures, each of which would
    // otherwise keep a slot of its size for the whole wait.
    let gone: Gone = Box::pin(async move {
        match client {
            Some(c) => c.gone().await,
            None => std::future::pending().await,
        }
    });
    Ok(Box::pin(receive_wait(svc, name, r, gone)))
}

/// The client-link watch a waiting receive holds ([`receive_message`]).
pub(crate) type Gone = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// [`receive_message`]'s wait on queue `name`, until messages come, WaitTimeSeconds ends
/// or `gone` resolves; its answer.
///
/// A function returning an `async move` block, not an `async fn`: the block uses what it
/// owns in place, where an `async fn` would keep its arguments twice (as arguments, and
/// as the locals they are moved into), for the whole wait.
///
/// Errors: those of [`Sqs::receive_message`].
#[allow(clippy::manual_async_fn)] // an `async fn` would hold its arguments twice (above)
pub(crate) fn receive_wait(
    svc: Arc<Service>,
    name: String,
    r: ReceiveMessage,
    gone: Gone,
) -> impl std::future::Future<Output = Result<SqsResponse>> + Send + 'static {
    async move {
        let received = svc.sqs().receive_message_until(&name, &r, gone).await?;
        crate::observe::link_to_sends(
            received
                .iter()
                .map(|m| (m.message_id.as_str(), m.trace_header.as_deref())),
        );
        let messages: Vec<Message> = received
            .into_iter()
            .map(|m| Message {
                message_id: Some(m.message_id),
                receipt_handle: Some(m.receipt_handle),
                md5_of_body: Some(m.md5_body),
                body: Some(m.body),
                attributes: (!m.attributes.is_empty()).then(|| m.attributes.into()),
                md5_of_message_attributes: m.md5_message_attributes,
                message_attributes: attributes_out(m.message_attributes),
            })
            .collect();
        Ok(SqsResponse::ReceiveMessage(ReceiveMessageResult {
            messages: (!messages.is_empty()).then_some(messages),
        }))
    }
}

/// Every operation but ReceiveMessage (see [`call`]); the access check is done.
async fn operation(svc: Arc<Service>, ctx: Context, req: SqsRequest) -> Result<SqsResponse> {
    use SqsRequest as R;
    let (svc, ctx) = (&svc, &ctx);
    use SqsResponse as S;
    let queue = |url: &str| ctx.queue_key(svc, url);
    Ok(match req {
        R::AddPermission(i) => {
            svc.sqs()
                .add_permission(
                    &queue(&i.queue_url)?,
                    &i.label,
                    &i.aws_account_ids.unwrap_or_default(),
                    &i.actions.unwrap_or_default(),
                )
                .await?;
            S::AddPermission(NoOutput)
        }
        R::CancelMessageMoveTask(i) => {
            let moved = svc.sqs().cancel_message_move_task(&i.task_handle).await?;
            S::CancelMessageMoveTask(CancelMessageMoveTaskResult {
                approximate_number_of_messages_moved: Some(moved as i64),
            })
        }
        R::ChangeMessageVisibility(i) => {
            svc.sqs()
                .change_visibility(
                    &queue(&i.queue_url)?,
                    &i.receipt_handle,
                    i.visibility_timeout,
                )
                .await?;
            S::ChangeMessageVisibility(NoOutput)
        }
        R::ChangeMessageVisibilityBatch(i) => {
            let name = queue(&i.queue_url)?;
            let batch = entries(
                i.entries,
                |e| e.id.clone(),
                |e| Ok((e.receipt_handle, e.visibility_timeout)),
            );
            let results = svc
                .sqs()
                .change_visibility_batch_entries(&name, batch)
                .await?;
            let (successful, failed) = outcome(results, |id, ()| {
                ChangeMessageVisibilityBatchResultEntry { id }
            });
            S::ChangeMessageVisibilityBatch(ChangeMessageVisibilityBatchResult {
                successful,
                failed,
            })
        }
        R::CreateQueue(i) => {
            let q = svc
                .sqs()
                .create_queue(
                    &ctx.named_queue_key(svc, &i.queue_name, None)?,
                    map_or_empty(i.attributes),
                    map_or_empty(i.tags),
                )
                .await?;
            S::CreateQueue(CreateQueueResult {
                queue_url: Some(ctx.queue_url(svc, &q.name)),
            })
        }
        R::DeleteMessage(i) => {
            svc.sqs()
                .delete_message(&queue(&i.queue_url)?, &i.receipt_handle)
                .await?;
            S::DeleteMessage(NoOutput)
        }
        R::DeleteMessageBatch(i) => {
            let name = queue(&i.queue_url)?;
            let batch = entries(i.entries, |e| e.id.clone(), |e| Ok(e.receipt_handle));
            let results = svc.sqs().delete_message_batch_entries(&name, batch).await?;
            let (successful, failed) =
                outcome(results, |id, ()| DeleteMessageBatchResultEntry { id });
            S::DeleteMessageBatch(DeleteMessageBatchResult { successful, failed })
        }
        R::DeleteQueue(i) => {
            svc.sqs().delete_queue(&queue(&i.queue_url)?).await?;
            S::DeleteQueue(NoOutput)
        }
        R::GetQueueAttributes(i) => {
            let attrs = svc
                .sqs()
                .get_queue_attributes(
                    &queue(&i.queue_url)?,
                    &i.attribute_names.unwrap_or_default(),
                )
                .await?;
            S::GetQueueAttributes(GetQueueAttributesResult {
                attributes: (!attrs.is_empty()).then(|| attrs.into()),
            })
        }
        R::GetQueueUrl(i) => {
            let key = ctx.named_queue_key(
                svc,
                &i.queue_name,
                i.queue_owner_aws_account_id
                    .as_deref()
                    .filter(|o| !o.is_empty()),
            )?;
            let q = svc.queue(&key).await?;
            S::GetQueueUrl(GetQueueUrlResult {
                queue_url: Some(ctx.queue_url(svc, &q.name)),
            })
        }
        R::ListDeadLetterSourceQueues(i) => {
            let page = svc
                .sqs()
                .list_dead_letter_sources(
                    &queue(&i.queue_url)?,
                    i.max_results,
                    i.next_token.as_deref(),
                )
                .await?;
            S::ListDeadLetterSourceQueues(ListDeadLetterSourceQueuesResult {
                queue_urls: page
                    .queues
                    .iter()
                    .map(|q| ctx.queue_url(svc, &q.name))
                    .collect(),
                next_token: page.next_token,
            })
        }
        R::ListMessageMoveTasks(i) => {
            let source = move_task_queue_key(svc, &ctx.principal, &i.source_arn, "SourceArn")?;
            let tasks = svc
                .sqs()
                .list_message_move_tasks(&source, i.max_results)
                .await?;
            S::ListMessageMoveTasks(ListMessageMoveTasksResult {
                results: tasks
                    .into_iter()
                    .map(|t| ListMessageMoveTasksResultEntry {
                        task_handle: t.task_handle,
                        status: Some(t.status),
                        source_arn: Some(t.source_arn),
                        destination_arn: t.destination_arn,
                        max_number_of_messages_per_second: t.max_per_second,
                        approximate_number_of_messages_moved: Some(t.moved as i64),
                        approximate_number_of_messages_to_move: Some(t.to_move),
                        failure_reason: t.failure_reason,
                        started_timestamp: Some(t.started_at_ms),
                    })
                    .collect(),
            })
        }
        R::ListQueueTags(i) => {
            let tags = svc.sqs().list_queue_tags(&queue(&i.queue_url)?).await?;
            S::ListQueueTags(ListQueueTagsResult {
                tags: (!tags.is_empty()).then(|| tags.into()),
            })
        }
        R::ListQueues(i) => {
            let page = svc
                .sqs()
                .list_queues_of(
                    ctx.principal.scope(),
                    i.queue_name_prefix.as_deref(),
                    i.max_results,
                    i.next_token.as_deref(),
                )
                .await?;
            let urls: Vec<String> = page
                .queues
                .iter()
                .map(|q| ctx.queue_url(svc, &q.name))
                .collect();
            S::ListQueues(ListQueuesResult {
                queue_urls: (!urls.is_empty()).then_some(urls),
                next_token: page.next_token,
            })
        }
        R::PurgeQueue(i) => {
            svc.sqs().purge_queue(&queue(&i.queue_url)?).await?;
            S::PurgeQueue(NoOutput)
        }
        R::ReceiveMessage(i) => return receive_message(svc.clone(), ctx, i)?.await,
        R::RemovePermission(i) => {
            svc.sqs()
                .remove_permission(&queue(&i.queue_url)?, &i.label)
                .await?;
            S::RemovePermission(NoOutput)
        }
        R::SendMessage(i) => {
            let name = queue(&i.queue_url)?;
            let m = send_message(
                ctx,
                i.message_body,
                i.delay_seconds,
                i.message_attributes,
                i.message_system_attributes,
                i.message_group_id,
                i.message_deduplication_id,
            )?;
            S::SendMessage(send_result(svc.sqs().send_message(&name, m).await?))
        }
        R::SendMessageBatch(i) => {
            let name = queue(&i.queue_url)?;
            let batch = entries(
                i.entries,
                |e| e.id.clone(),
                |e| {
                    send_message(
                        ctx,
                        e.message_body,
                        e.delay_seconds,
                        e.message_attributes,
                        e.message_system_attributes,
                        e.message_group_id,
                        e.message_deduplication_id,
                    )
                },
            );
            let results = svc.sqs().send_message_batch_entries(&name, batch).await?;
            let (successful, failed) = outcome(results, |id, r| SendMessageBatchResultEntry {
                id,
                message_id: r.message_id,
                md5_of_message_body: r.md5_body,
                md5_of_message_attributes: r.md5_attributes,
                md5_of_message_system_attributes: r.md5_system_attributes,
                sequence_number: r.sequence_number,
            });
            S::SendMessageBatch(SendMessageBatchResult { successful, failed })
        }
        R::SetQueueAttributes(i) => {
            svc.sqs()
                .set_queue_attributes(&queue(&i.queue_url)?, i.attributes.into_inner())
                .await?;
            S::SetQueueAttributes(NoOutput)
        }
        R::StartMessageMoveTask(i) => {
            let source = move_task_queue_key(svc, &ctx.principal, &i.source_arn, "SourceArn")?;
            let destination = i
                .destination_arn
                .as_deref()
                .map(|a| move_task_queue_key(svc, &ctx.principal, a, "DestinationArn"))
                .transpose()?;
            let handle = svc
                .sqs()
                .start_message_move_task_by(
                    ctx.principal.acting_arn().as_deref(),
                    &source,
                    destination.as_deref(),
                    i.max_number_of_messages_per_second,
                )
                .await?;
            S::StartMessageMoveTask(StartMessageMoveTaskResult {
                task_handle: Some(handle),
            })
        }
        R::TagQueue(i) => {
            svc.sqs()
                .tag_queue(&queue(&i.queue_url)?, i.tags.into_inner())
                .await?;
            S::TagQueue(NoOutput)
        }
        R::UntagQueue(i) => {
            svc.sqs()
                .untag_queue(&queue(&i.queue_url)?, &i.tag_keys)
                .await?;
            S::UntagQueue(NoOutput)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::QueueUrlParts;

    fn parts(url: &str) -> (Option<&str>, Option<&str>, &str) {
        let p = QueueUrlParts::parse(url).expect(url);
        (p.region, p.account, p.name)
    }

    #[test]
    fn queue_urls_name_their_region_and_account() {
        let a = Some("000000000000");
        for (url, expected) in [
            ("http://127.0.0.1:9324/000000000000/q", (None, a, "q")),
            ("http://127.0.0.1:9324/q", (None, None, "q")),
            (
                "http://h/queue/eu-west-1/000000000000/q",
                (Some("eu-west-1"), a, "q"),
            ),
            (
                "https://sqs.eu-west-1.amazonaws.com/000000000000/q",
                (Some("eu-west-1"), a, "q"),
            ),
            (
                "https://eu-west-1.queue.amazonaws.com/000000000000/q",
                (Some("eu-west-1"), a, "q"),
            ),
            (
                "http://sqs.ap-south-1.localhost.localstack.cloud:4566/000000000000/q.fifo",
                (Some("ap-south-1"), a, "q.fifo"),
            ),
            ("http://localhost:4566/000000000000/q?x=1", (None, a, "q")),
            // Not a region: the segment and the host say nothing.
            ("http://h/queue/local/000000000000/q", (None, a, "q")),
            ("http://sqs.localhost:9324/000000000000/q", (None, a, "q")),
            ("http://h/orders/q", (None, None, "q")),
        ] {
            assert_eq!(parts(url), expected, "{url}");
        }
        assert!(QueueUrlParts::parse("http://h/").is_err());
        assert!(QueueUrlParts::parse("").is_err());
    }

    /// An account segment of digits that is not a 12-digit account id names no queue: not
    /// the caller's queue of that name (found by a tenant sending to `/0111111111111/q`).
    #[test]
    fn digits_that_are_no_account_name_no_queue() {
        for url in [
            "http://h/0111111111111/q",
            "http://h/11111111111/q",
            "http://h/%31%31/q",
            "http://h/\u{ff11}\u{ff11}\u{ff11}\u{ff11}\u{ff11}\u{ff11}\u{ff11}\u{ff11}\u{ff11}\u{ff11}\u{ff11}\u{ff11}/q",
            "http://h/queue/eu-west-1/1234/q",
        ] {
            let e = QueueUrlParts::parse(url).expect_err(url);
            assert_eq!(e.code, loft_core::ErrorCode::QueueDoesNotExist, "{url}");
        }
    }
}
