//! Message-move tasks: moving messages from a dead-letter queue back to their source queues
//! (or to another queue) at a bounded rate.
//!
//! Source: SQS API Reference StartMessageMoveTask, ListMessageMoveTasks,
//! CancelMessageMoveTask; SQS Developer Guide "Configuring a dead-letter queue redrive".
//! Tasks live in memory: a restart ends them (messages already moved stay moved).

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use serde_json::json;

use super::Service;
use crate::attributes::QueueConfig;
use crate::error::{Error, ErrorCode, Result};
use crate::model::MoveTarget;

/// Default MaxNumberOfMessagesPerSecond when none is given.
pub const DEFAULT_RATE: i64 = 500;

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

impl Service {
    /// StartMessageMoveTask: starts moving `source`'s messages (a dead-letter queue) to
    /// `destination`, or each back to its own source queue, at `max_per_second` (1..=500).
    ///
    /// Errors: `QueueDoesNotExist`/`ResourceNotFoundException` for unknown queues,
    /// `InvalidParameterValue` (not a dead-letter queue, bad rate), `UnsupportedOperation`
    /// (a task already runs for this source).
    pub async fn start_message_move_task(
        self: &Arc<Self>,
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
        let counts = self.store.queue_counts(src.id, self.now_ms()).await?;
        let handle = base64::engine::general_purpose::STANDARD.encode(
            json!({"taskId": uuid::Uuid::new_v4().to_string(), "sourceArn": source_arn})
                .to_string(),
        );
        {
            let mut tasks = self.move_tasks.lock().unwrap_or_else(|p| p.into_inner());
            if tasks
                .iter()
                .any(|t| t.source_arn == source_arn && t.status == "RUNNING")
            {
                return Err(Error::new(
                    ErrorCode::UnsupportedOperation,
                    "There is already a task running. Only one active task is allowed for a source queue arn at a given time.",
                ));
            }
            tasks.push(MoveTask {
                task_handle: Some(handle.clone()),
                status: "RUNNING".into(),
                source_arn: source_arn.clone(),
                destination_arn: destination.map(|d| self.queue_arn(d)),
                max_per_second,
                moved: 0,
                to_move: counts.visible,
                failure_reason: None,
                started_at_ms: self.now_ms(),
            });
        }
        let svc = Arc::clone(self);
        let task_handle = handle.clone();
        let rate = max_per_second.unwrap_or(DEFAULT_RATE);
        let src_id = src.id;
        tokio::spawn(async move {
            svc.run_move_task(task_handle, src_id, target, rate).await;
        });
        Ok(handle)
    }

    async fn run_move_task(&self, handle: String, source_id: i64, target: MoveTarget, rate: i64) {
        // Ten slices a second; each adds a tenth of the rate to a budget, and whole
        // messages of the budget move, so low rates (1 a second) are kept too.
        let mut tick = tokio::time::interval(Duration::from_millis(100));
        let mut budget = 0.0f64;
        loop {
            tick.tick().await;
            if self.move_task_status(&handle).as_deref() != Some("RUNNING") {
                return;
            }
            budget = (budget + rate as f64 / 10.0).min(rate as f64);
            let allowance = budget.floor() as u32;
            if allowance == 0 {
                continue;
            }
            let ids = (0..allowance)
                .map(|_| uuid::Uuid::new_v4().to_string())
                .collect();
            let outcome = self
                .store
                .move_messages(source_id, target.clone(), ids, self.now_ms())
                .await;
            let (moved, done, failure) = match outcome {
                Ok(n) => (n, n < allowance as u64, None),
                Err(e) => (0, true, Some(e.message)),
            };
            budget -= moved as f64;
            if moved > 0 {
                if let MoveTarget::Queue(id) = &target {
                    self.wake(*id);
                } else if let MoveTarget::Sources(list) = &target {
                    for (_, id) in list {
                        self.wake(*id);
                    }
                }
            }
            let mut tasks = self.move_tasks.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(t) = tasks
                .iter_mut()
                .find(|t| t.task_handle.as_deref() == Some(&handle))
            {
                t.moved += moved;
                if t.status != "RUNNING" {
                    return;
                }
                if done {
                    t.status = if failure.is_some() {
                        "FAILED"
                    } else {
                        "COMPLETED"
                    }
                    .into();
                    t.failure_reason = failure;
                    t.task_handle = None;
                    return;
                }
            } else {
                return;
            }
        }
    }

    fn move_task_status(&self, handle: &str) -> Option<String> {
        let tasks = self.move_tasks.lock().unwrap_or_else(|p| p.into_inner());
        tasks
            .iter()
            .find(|t| t.task_handle.as_deref() == Some(handle))
            .map(|t| t.status.clone())
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
        let tasks = self.move_tasks.lock().unwrap_or_else(|p| p.into_inner());
        Ok(tasks
            .iter()
            .rev()
            .filter(|t| t.source_arn == arn)
            .take(max as usize)
            .cloned()
            .collect())
    }

    /// CancelMessageMoveTask: stops a running task; returns how many messages it moved.
    ///
    /// Errors: `ResourceNotFoundException` when no running task has this handle.
    pub async fn cancel_message_move_task(&self, handle: &str) -> Result<u64> {
        let mut tasks = self.move_tasks.lock().unwrap_or_else(|p| p.into_inner());
        let task = tasks
            .iter_mut()
            .find(|t| t.task_handle.as_deref() == Some(handle) && t.status == "RUNNING")
            .ok_or_else(|| {
                Error::new(ErrorCode::ResourceNotFoundException, "Task does not exist.")
            })?;
        task.status = "CANCELLED".into();
        task.task_handle = None;
        Ok(task.moved)
    }
}
