//! Message-move tasks: moving messages from a dead-letter queue back to their source queues
//! (or to another queue) at a bounded rate.
//!
//! Source: SQS API Reference StartMessageMoveTask, ListMessageMoveTasks,
//! CancelMessageMoveTask; SQS Developer Guide "Configuring a dead-letter queue redrive".
//!
//! A task is a row of the store ([`MoveTaskRecord`]): any node lists and cancels it. The
//! node that runs it holds a lease ([`MOVE_TASK_LEASE_MS`]) that each step renews in the
//! step's own transaction, with the step's progress; a cancel stops the runner at its next
//! step. A node stopping gives its leases up ([`Sqs::release_move_tasks`]), and
//! [`Sqs::resume_move_tasks`] (run every [`MOVE_TASK_POLL`] by the server) takes over
//! running tasks whose lease has ended: after a restart, or on another node once one died.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use serde_json::json;

use super::Sqs;
use crate::attributes::QueueConfig;
use crate::error::{Error, ErrorCode, Result};
use crate::model::{MoveTarget, MoveTaskLease, MoveTaskRecord, MoveTaskStatus};
use crate::service::core::access::Writer;

/// Default MaxNumberOfMessagesPerSecond when none is given.
pub const DEFAULT_RATE: i64 = 500;

/// How long a node's lease on a running task lasts, ms; every step (at least one a second)
/// renews it. A task whose node died is taken over this long after its last step.
pub const MOVE_TASK_LEASE_MS: i64 = 10_000;

/// How often the server looks for running tasks no node holds.
pub const MOVE_TASK_POLL: Duration = Duration::from_secs(2);

/// One task as ListMessageMoveTasks reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MoveTask {
    /// TaskHandle, only while RUNNING.
    pub task_handle: Option<String>,
    /// RUNNING, COMPLETED, CANCELLING, CANCELLED or FAILED.
    pub status: String,
    /// The dead-letter queue's ARN.
    pub source_arn: String,
    /// The destination's ARN, when one was given.
    pub destination_arn: Option<String>,
    /// The rate asked for, messages per second.
    pub max_per_second: Option<i64>,
    /// Messages moved so far.
    pub moved: u64,
    /// Messages in the source when the task started.
    pub to_move: i64,
    /// Why it failed.
    pub failure_reason: Option<String>,
    /// Start time, ms since the epoch.
    pub started_at_ms: i64,
}

/// The words of a task's `FailureReason` when its destination queue no longer lets the
/// task's principal send. AWS documents no wording for it (SQS API Reference,
/// ListMessageMoveTasksResultEntry: "The task failure reason (only included if the task
/// status is FAILED)"): these words are Loft's, shaped as SQS words an `AccessDenied`.
pub fn destination_refused_reason(principal_arn: &str, queue_arn: &str) -> String {
    format!(
        "User: {principal_arn} is not authorized to perform: sqs:SendMessage on resource: {queue_arn}: the destination queue's Policy no longer allows it."
    )
}

/// The words of a task's `FailureReason` when its source queue no longer lets the task's
/// principal receive and delete (Loft's words, as [`destination_refused_reason`]'s).
pub fn source_refused_reason(principal_arn: &str, queue_arn: &str) -> String {
    format!(
        "User: {principal_arn} is not authorized to perform: sqs:ReceiveMessage on resource: {queue_arn}: the source queue's Policy no longer allows it."
    )
}

/// A task's `FailureReason` when a queue it moves messages into was deleted while it ran:
/// AWS's, recorded (LocalStack's `aws.validated`
/// `test_move_task_delete_destination_queue_while_running`: the task ends `FAILED` with
/// this reason and the messages not yet moved stay in the dead-letter queue).
pub const NONEXISTENT_QUEUE_REASON: &str = "AWS.SimpleQueueService.NonExistentQueue";

/// Who a running task works for, and on which queues: each step asks
/// [`Core::may_receive_from`](crate::service::Core) whether the source queue's `Policy`
/// still lets that principal receive and delete, and
/// [`Core::may_send_into`](crate::service::Core) whether the destination queue's still
/// lets it send (each only matters for a queue of another account, or one whose policy
/// denies).
#[derive(Debug, Clone)]
struct SendCheck {
    /// The source (dead-letter) queue's store key.
    source: String,
    /// The destination queue's store key; `None` when the messages go back to their own
    /// source queues (which a RedrivePolicy keeps in the dead-letter queue's account).
    queue: Option<String>,
    /// The principal's account.
    account: String,
    /// The principal's IAM ARN.
    arn: String,
}

impl Sqs {
    /// StartMessageMoveTask by a caller of the source queue's account, as its root
    /// ([`Sqs::start_message_move_task_by`] without a principal).
    ///
    /// Errors: as [`Sqs::start_message_move_task_by`].
    pub async fn start_message_move_task(
        self: &Arc<Self>,
        source: &str,
        destination: Option<&str>,
        max_per_second: Option<i64>,
    ) -> Result<String> {
        self.start_message_move_task_by(None, source, destination, max_per_second)
            .await
    }

    /// StartMessageMoveTask: starts moving `source`'s messages (a dead-letter queue) to
    /// `destination`, or each back to its own source queue, at `max_per_second` (1..=500).
    /// `started_by` is the caller's IAM ARN ([`crate::service::Principal::acting_arn`];
    /// `None`: the source queue's account's root), stored with the task: a source or a
    /// destination in another account takes each step only while its `Policy` lets that
    /// principal receive and delete (the source) or send (the destination), as SNS
    /// deliveries to a queue are checked at each delivery; once it does not, the task ends
    /// `FAILED` with [`source_refused_reason`] or [`destination_refused_reason`] as its
    /// FailureReason.
    ///
    /// Errors: `ResourceNotFoundException` for unknown queues, `InvalidParameterValue`
    /// (not a dead-letter queue, bad rate, a task already runs for this source: AWS's
    /// words and code, recorded in `test_start_multiple_move_tasks`).
    pub async fn start_message_move_task_by(
        self: &Arc<Self>,
        started_by: Option<&str>,
        source: &str,
        destination: Option<&str>,
        max_per_second: Option<i64>,
    ) -> Result<String> {
        let not_found = || {
            Error::new(
                ErrorCode::ResourceNotFoundException,
                "The resource that you specified for the SourceArn parameter doesn't exist.",
            )
        };
        let src = self.store.get_queue(source).await?.ok_or_else(not_found)?;
        if let Some(rate) = max_per_second {
            if !(1..=500).contains(&rate) {
                return Err(Error::invalid(
                    "Value for parameter MaxNumberOfMessagesPerSecond is invalid. Reason: Must be between 1 and 500.",
                ));
            }
        }
        let sources = self.dead_letter_sources(source).await?;
        if sources.is_empty() {
            return Err(Error::invalid(
                "Source queue must be configured as a Dead Letter Queue.",
            ));
        }
        let target = match destination {
            Some(d) => {
                let dq = self.store.get_queue(d).await?.ok_or_else(|| {
                    Error::new(
                        ErrorCode::ResourceNotFoundException,
                        "The resource that you specified for the DestinationArn parameter doesn't exist.",
                    )
                })?;
                let fifo = QueueConfig::from_attributes(&src.attributes).fifo;
                if QueueConfig::from_attributes(&dq.attributes).fifo != fifo {
                    return Err(Error::invalid(
                        "The source queue and destination queue must be of the same queue type.",
                    ));
                }
                // Moving a queue's messages into itself would only give them new ids and
                // lose where they came from.
                if dq.id == src.id {
                    return Err(Error::invalid(
                        "The source queue and destination queue must be different queues.",
                    ));
                }
                MoveTarget::Queue(dq.id)
            }
            None => MoveTarget::Sources(
                sources
                    .iter()
                    .map(|q| (self.queue_arn(&q.name), q.id))
                    .collect(),
            ),
        };
        let source_arn = self.queue_arn(source);
        let now = self.now_ms();
        let counts = self.store.queue_counts(src.id, now).await?;
        let handle = base64::engine::general_purpose::STANDARD.encode(
            json!({"taskId": uuid::Uuid::new_v4().to_string(), "sourceArn": source_arn})
                .to_string(),
        );
        let created = self
            .store
            .create_move_task(MoveTaskRecord {
                handle: handle.clone(),
                source_arn,
                source_queue: source.to_owned(),
                destination_arn: destination.map(|d| self.queue_arn(d)),
                max_per_second,
                status: MoveTaskStatus::Running,
                moved: 0,
                to_move: counts.visible,
                failure_reason: None,
                started_at_ms: now,
                owner: Some(self.node_id.clone()),
                lease_until_ms: now + MOVE_TASK_LEASE_MS,
                started_by: started_by.map(str::to_owned),
            })
            .await?;
        if !created {
            // Recorded (`test_start_multiple_move_tasks`): InvalidParameterValue, 400.
            return Err(Error::invalid(
                "There is already a task running. Only one active task is allowed for a source queue arn at a given time.",
            ));
        }
        let check = self.send_check(started_by, source, destination);
        let watch = self.target_queues(&target, destination);
        self.spawn_move_task(handle.clone(), src.id, target, max_per_second, check, watch);
        Ok(handle)
    }

    /// What each step of a task started by `started_by` (`None`: the source queue's
    /// account's root) from `source` into `destination` checks.
    fn send_check(
        &self,
        started_by: Option<&str>,
        source: &str,
        destination: Option<&str>,
    ) -> SendCheck {
        let queue = destination.map(str::to_owned);
        let arn = match started_by {
            Some(arn) => arn.to_owned(),
            None => format!("arn:aws:iam::{}:root", self.split_key(source).0),
        };
        let account = crate::names::arn_account(&arn)
            .unwrap_or_default()
            .to_owned();
        SendCheck {
            source: source.to_owned(),
            queue,
            account,
            arn,
        }
    }

    /// `None` while `check`'s principal may still receive from its source queue and send
    /// into its destination queue; else the task's FailureReason. A queue that is gone
    /// passes here (the step then moves nothing from or to it).
    async fn refused(&self, check: &SendCheck) -> Result<Option<String>> {
        let writer = Writer::Principal {
            account: &check.account,
            arn: &check.arn,
        };
        if let Some(source) = self.store.get_queue(&check.source).await? {
            let policy = source.attributes.get("Policy").map(String::as_str);
            if !self.may_receive_from(&writer, &check.source, policy) {
                return Ok(Some(source_refused_reason(
                    &check.arn,
                    &self.queue_arn(&check.source),
                )));
            }
        }
        let Some(destination) = &check.queue else {
            return Ok(None);
        };
        let Some(queue) = self.store.get_queue(destination).await? else {
            return Ok(None);
        };
        let policy = queue.attributes.get("Policy").map(String::as_str);
        if self.may_send_into(&writer, destination, policy) {
            return Ok(None);
        }
        Ok(Some(destination_refused_reason(
            &check.arn,
            &self.queue_arn(destination),
        )))
    }

    /// The queues `target` moves messages into, as (store key, id): the destination
    /// (`destination`, its key) or each source queue of the dead-letter queue.
    fn target_queues(&self, target: &MoveTarget, destination: Option<&str>) -> Vec<(String, i64)> {
        match target {
            MoveTarget::Queue(id) => destination
                .map(|key| vec![(key.to_owned(), *id)])
                .unwrap_or_default(),
            MoveTarget::Sources(list) => list
                .iter()
                .filter_map(|(arn, id)| Some((self.key_of_arn(arn, "sqs")?, *id)))
                .collect(),
        }
    }

    /// Whether one of `queues` (store key, id) is gone: no queue has the key, or the one
    /// that has it now is another queue (deleted and created again).
    async fn any_queue_gone(&self, queues: &[(String, i64)]) -> Result<bool> {
        for (key, id) in queues {
            match self.store.get_queue(key).await? {
                Some(q) if q.id == *id => {}
                _ => return Ok(true),
            }
        }
        Ok(false)
    }

    fn spawn_move_task(
        self: &Arc<Self>,
        handle: String,
        source_id: i64,
        target: MoveTarget,
        max_per_second: Option<i64>,
        check: SendCheck,
        watch: Vec<(String, i64)>,
    ) {
        let svc = Arc::clone(self);
        let rate = max_per_second.unwrap_or(DEFAULT_RATE);
        self.move_runners.fetch_add(1, Ordering::SeqCst);
        tokio::spawn(async move {
            svc.run_move_task(handle, source_id, target, rate, check, watch)
                .await;
            svc.move_runners.fetch_sub(1, Ordering::SeqCst);
            svc.move_runner_done.notify_waiters();
        });
    }

    /// Runs a task this node holds until it completes, fails (its source queue no longer
    /// lets `check`'s principal receive, or its destination queue send, checked before each
    /// step; or one of `watch`, the queues it moves into, was deleted:
    /// [`NONEXISTENT_QUEUE_REASON`]), is cancelled, is taken over by another node (its
    /// lease ran out) or the service stops.
    ///
    /// A step into a queue that is gone moves nothing into it (the store keeps those
    /// messages in the source), so a step short of its allowance is where the task looks:
    /// with every queue of `watch` still there it has completed, else it has failed.
    async fn run_move_task(
        &self,
        handle: String,
        source_id: i64,
        target: MoveTarget,
        rate: i64,
        check: SendCheck,
        watch: Vec<(String, i64)>,
    ) {
        // Ten slices a second; each adds a tenth of the rate to a budget, and whole
        // messages of the budget move, so low rates (1 a second) are kept too.
        let mut tick = tokio::time::interval(Duration::from_millis(100));
        let mut budget = 0.0f64;
        loop {
            tick.tick().await;
            if self.is_shutting_down() {
                // The server releases this node's leases as it stops.
                return;
            }
            budget = (budget + rate as f64 / 10.0).min(rate as f64);
            let allowance = budget.floor() as u32;
            if allowance == 0 {
                continue;
            }
            let now = self.now_ms();
            let lease = MoveTaskLease {
                handle: handle.clone(),
                owner: self.node_id.clone(),
                lease_until_ms: now + MOVE_TASK_LEASE_MS,
            };
            let refused = self.refused(&check).await;
            let outcome = match refused {
                Ok(None) => {
                    let ids = (0..allowance)
                        .map(|_| uuid::Uuid::new_v4().to_string())
                        .collect();
                    self.store
                        .move_messages(source_id, target.clone(), ids, now, Some(lease.clone()))
                        .await
                }
                Ok(Some(why)) => Err(Error::new(ErrorCode::AccessDenied, why)),
                Err(e) => Err(e),
            };
            let (status, failure) = match outcome {
                // Cancelled, finished, or no longer this node's.
                Ok(None) => return,
                Ok(Some(moved)) => {
                    budget -= moved as f64;
                    if moved > 0 {
                        match &target {
                            MoveTarget::Queue(id) => self.wake(*id),
                            MoveTarget::Sources(list) => {
                                for (_, id) in list {
                                    self.wake(*id);
                                }
                            }
                        }
                    }
                    if moved == allowance as u64 {
                        continue;
                    }
                    match self.any_queue_gone(&watch).await {
                        Ok(false) => (MoveTaskStatus::Completed, None),
                        Ok(true) => (
                            MoveTaskStatus::Failed,
                            Some(NONEXISTENT_QUEUE_REASON.to_owned()),
                        ),
                        Err(e) => (MoveTaskStatus::Failed, Some(e.message)),
                    }
                }
                Err(e) => (MoveTaskStatus::Failed, Some(e.message)),
            };
            if let Err(e) = self.store.finish_move_task(lease, status, failure).await {
                tracing::warn!(error = %e, "could not record the end of a message-move task");
            }
            return;
        }
    }

    /// Takes over the running tasks no node holds (their lease ended: the node that ran
    /// them stopped or died) and runs them here. Returns how many it took. The server calls
    /// it every [`MOVE_TASK_POLL`]; a task whose source queue is gone fails.
    ///
    /// Errors: store errors.
    pub async fn resume_move_tasks(self: &Arc<Self>) -> Result<usize> {
        let now = self.now_ms();
        let tasks = self
            .store
            .claim_move_tasks(&self.node_id, now, now + MOVE_TASK_LEASE_MS, 16)
            .await?;
        let n = tasks.len();
        for t in tasks {
            let lease = MoveTaskLease {
                handle: t.handle.clone(),
                owner: self.node_id.clone(),
                lease_until_ms: t.lease_until_ms,
            };
            match self.move_task_plan(&t).await? {
                Ok((source_id, target)) => {
                    tracing::info!(source = %t.source_arn, moved = t.moved, "resuming a message-move task");
                    let destination = t
                        .destination_arn
                        .as_deref()
                        .and_then(|arn| self.key_of_arn(arn, "sqs"));
                    let check = self.send_check(
                        t.started_by.as_deref(),
                        &t.source_queue,
                        destination.as_deref(),
                    );
                    let watch = self.target_queues(&target, destination.as_deref());
                    self.spawn_move_task(
                        t.handle,
                        source_id,
                        target,
                        t.max_per_second,
                        check,
                        watch,
                    );
                }
                Err(why) => {
                    self.store
                        .finish_move_task(lease, MoveTaskStatus::Failed, Some(why))
                        .await?;
                }
            }
        }
        Ok(n)
    }

    /// Where a stored task moves from and to, resolved to queue ids now; `Err(why)` when a
    /// queue it names is gone (the task fails). Errors: store errors.
    async fn move_task_plan(
        &self,
        t: &MoveTaskRecord,
    ) -> Result<std::result::Result<(i64, MoveTarget), String>> {
        let Some(src) = self.store.get_queue(&t.source_queue).await? else {
            return Ok(Err("The source queue no longer exists.".to_owned()));
        };
        let target = match &t.destination_arn {
            Some(arn) => {
                let name = self.key_of_arn(arn, "sqs").unwrap_or_default();
                let Some(dq) = self.store.get_queue(&name).await? else {
                    return Ok(Err(NONEXISTENT_QUEUE_REASON.to_owned()));
                };
                MoveTarget::Queue(dq.id)
            }
            None => MoveTarget::Sources(
                self.dead_letter_sources(&t.source_queue)
                    .await?
                    .iter()
                    .map(|q| (self.queue_arn(&q.name), q.id))
                    .collect(),
            ),
        };
        Ok(Ok((src.id, target)))
    }

    /// Gives up the running tasks this node holds, so that another node, or this one
    /// started again, takes them over at once instead of after their lease. The server
    /// calls it when it stops, after [`Core::begin_shutdown`](crate::service::Core::begin_shutdown) (which stops the runners).
    ///
    /// Errors: store errors.
    pub async fn release_move_tasks(&self) -> Result<()> {
        // Let a step in flight finish first (a runner stops at its next tick, within
        // 100 ms), so that no step renews a lease after it was given up.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
        loop {
            let done = self.move_runner_done.notified();
            tokio::pin!(done);
            done.as_mut().enable();
            if self.move_runners.load(Ordering::SeqCst) == 0 {
                break;
            }
            if tokio::time::timeout_at(deadline, done).await.is_err() {
                break;
            }
        }
        self.store.release_move_tasks(&self.node_id).await
    }

    /// ListMessageMoveTasks: the most recent tasks of `source` (newest first), at most
    /// `max_results` (1..=10, default 1).
    ///
    /// Errors: `ResourceNotFoundException` for an unknown queue, `InvalidParameterValue`.
    pub async fn list_message_move_tasks(
        &self,
        source: &str,
        max_results: Option<i64>,
    ) -> Result<Vec<MoveTask>> {
        let max = max_results.unwrap_or(1);
        if !(1..=10).contains(&max) {
            return Err(Error::invalid(
                "Value for parameter MaxResults is invalid. Reason: Must be between 1 and 10.",
            ));
        }
        if self.store.get_queue(source).await?.is_none() {
            return Err(Error::new(
                ErrorCode::ResourceNotFoundException,
                "The resource that you specified for the SourceArn parameter doesn't exist.",
            ));
        }
        let arn = self.queue_arn(source);
        let tasks = self.store.list_move_tasks(&arn, max as u32).await?;
        Ok(tasks
            .into_iter()
            .map(|t| MoveTask {
                task_handle: (t.status == MoveTaskStatus::Running).then_some(t.handle),
                status: t.status.as_str().to_owned(),
                source_arn: t.source_arn,
                destination_arn: t.destination_arn,
                max_per_second: t.max_per_second,
                moved: t.moved.max(0) as u64,
                to_move: t.to_move,
                failure_reason: t.failure_reason,
                started_at_ms: t.started_at_ms,
            })
            .collect())
    }

    /// The store key of the source queue a task handle names, for checking
    /// `sqs:CancelMessageMoveTask` on that queue (SQS Developer Guide "Amazon SQS API
    /// permissions: Actions and resource reference": the move task actions are on the
    /// source queue). `None` when the handle is not one Loft's form can read (the
    /// operation then answers `ResourceNotFoundException`, as AWS answers an unknown
    /// handle).
    ///
    /// Read from the handle alone ([`Sqs::start_message_move_task`] writes its task's
    /// source ARN into it), not from the store, so the check does not depend on whether
    /// the task exists: a caller refused on the queue is refused for a handle made up to
    /// name it as for a real one. A made-up handle that names the caller's own queue is
    /// let through and finds no task, since the store matches a handle whole and holds
    /// each task's handle with its real source.
    pub fn move_task_source(&self, handle: &str) -> Option<String> {
        let arn = base64::engine::general_purpose::STANDARD
            .decode(handle)
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .and_then(|v| v.get("sourceArn")?.as_str().map(str::to_owned))?;
        self.key_of_arn(&arn, "sqs")
    }

    /// CancelMessageMoveTask: stops a running task, whichever node runs it; returns how
    /// many messages it moved.
    ///
    /// Errors, in AWS's order and words (recorded in LocalStack's `aws.validated`
    /// `test_sqs_move_task` snapshots): `InvalidParameterValue` "Value for parameter
    /// TaskHandle is invalid." for a handle that is not base64 JSON naming a `taskId` and a
    /// `sourceArn` (the form AWS's handles and Loft's have); `ResourceNotFoundException`
    /// "The resource that you specified for the SourceArn parameter doesn't exist." when
    /// its source queue does not exist; `ResourceNotFoundException` "Task does not exist."
    /// when no running task has this handle.
    pub async fn cancel_message_move_task(&self, handle: &str) -> Result<u64> {
        let doc = base64::engine::general_purpose::STANDARD
            .decode(handle)
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok());
        let named = |field: &str| {
            doc.as_ref()
                .and_then(|d| d.get(field)?.as_str().map(str::to_owned))
        };
        let (Some(_), Some(source_arn)) = (named("taskId"), named("sourceArn")) else {
            return Err(Error::invalid("Value for parameter TaskHandle is invalid."));
        };
        let source = match self.key_of_arn(&source_arn, "sqs") {
            Some(key) => self.store.get_queue(&key).await?,
            None => None,
        };
        if source.is_none() {
            return Err(Error::new(
                ErrorCode::ResourceNotFoundException,
                "The resource that you specified for the SourceArn parameter doesn't exist.",
            ));
        }
        let task = self.store.cancel_move_task(handle).await?.ok_or_else(|| {
            Error::new(ErrorCode::ResourceNotFoundException, "Task does not exist.")
        })?;
        Ok(task.moved.max(0) as u64)
    }
}
