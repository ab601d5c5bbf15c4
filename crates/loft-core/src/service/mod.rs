//! The service layer: every rule of queues and topics, shared by all protocol adapters.
//!
//! - [`queues`]: queue lifecycle, attributes, tags, permissions.
//! - [`messages`]: send, receive (with long polling), delete, visibility, purge.
//! - [`move_tasks`]: moving messages out of dead-letter queues.
//! - [`topics`]: topics, subscriptions and publish.
//! - [`receipt`]: receipt handles.
//!
//! SQS JSON, SQS Query and the seeds' API all call these methods, so one scenario gives the
//! same answer over every protocol.

mod messages;
mod move_tasks;
mod queues;
pub mod receipt;
mod topics;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{mpsc, Notify};

use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::model::QueueRecord;
use crate::names;
use crate::store::Store;

pub use messages::{sequence_number, ReceiveMessage, ReceivedMessage, SendMessage, SendResult};
pub use move_tasks::MoveTask;
pub use queues::{ListQueuesPage, SeedQueue};
pub use topics::Delivery;

/// A remembered FIFO receive: until when (ms) it is replayed, and what it returned.
type AttemptRecord = (i64, Vec<ReceivedMessage>);

/// Settings of the service that show in names: the account and region of every ARN.
#[derive(Debug, Clone)]
pub struct ServiceConfig {
    /// Twelve-digit account id, default `000000000000`.
    pub account_id: String,
    /// Region, default `us-east-1`.
    pub region: String,
}

impl Default for ServiceConfig {
    fn default() -> Self {
        ServiceConfig {
            account_id: "000000000000".into(),
            region: "us-east-1".into(),
        }
    }
}

/// The service. Share it behind an `Arc`; every method takes `&self`.
pub struct Service {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    config: ServiceConfig,
    /// Long-poll waiters by queue id: notified after a send commits.
    waiters: Mutex<HashMap<i64, Arc<Notify>>>,
    /// When each queue was last purged (ms), for PurgeQueueInProgress.
    purges: Mutex<HashMap<i64, i64>>,
    /// FIFO receives by (queue id, ReceiveRequestAttemptId): until when (ms) a retry
    /// returns the same messages, and those messages.
    attempts: Mutex<HashMap<(i64, String), AttemptRecord>>,
    /// Message-move tasks, oldest first.
    move_tasks: Mutex<Vec<MoveTask>>,
    /// Outgoing HTTP deliveries for the delivery workers.
    deliveries: mpsc::UnboundedSender<Delivery>,
}

impl Service {
    /// A service over `store`, reading time from `clock`. Returns the receiving end of the
    /// delivery channel, which the delivery workers drain.
    pub fn new(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        config: ServiceConfig,
    ) -> (Arc<Service>, mpsc::UnboundedReceiver<Delivery>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let service = Service {
            store,
            clock,
            config,
            waiters: Mutex::default(),
            purges: Mutex::default(),
            move_tasks: Mutex::default(),
            attempts: Mutex::default(),
            deliveries: tx,
        };
        (Arc::new(service), rx)
    }

    /// The account and region in use.
    pub fn config(&self) -> &ServiceConfig {
        &self.config
    }

    /// The current time, milliseconds since the epoch.
    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    /// `arn:aws:sqs:{region}:{account}:{name}`.
    pub fn queue_arn(&self, name: &str) -> String {
        names::queue_arn(&self.config.region, &self.config.account_id, name)
    }

    /// `arn:aws:sns:{region}:{account}:{name}`.
    pub fn topic_arn(&self, name: &str) -> String {
        names::topic_arn(&self.config.region, &self.config.account_id, name)
    }

    /// Whether storage answers (for `/ready`).
    pub async fn ready(&self) -> bool {
        self.store.list_topics().await.is_ok()
    }

    /// Drops messages past their retention; run periodically. Returns how many.
    pub async fn expire_messages(&self) -> Result<u64> {
        self.store.delete_expired(self.now_ms()).await
    }

    /// The queue named `name`. Errors: `QueueDoesNotExist`.
    pub async fn queue(&self, name: &str) -> Result<QueueRecord> {
        self.store
            .get_queue(name)
            .await?
            .ok_or_else(Error::no_queue)
    }

    fn waiter(&self, queue_id: i64) -> Arc<Notify> {
        let mut map = self.waiters.lock().unwrap_or_else(|p| p.into_inner());
        map.entry(queue_id).or_default().clone()
    }

    fn wake(&self, queue_id: i64) {
        let map = self.waiters.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = map.get(&queue_id) {
            n.notify_waiters();
        }
    }
}
