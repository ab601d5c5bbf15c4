//! The SQS service: queues and their messages.
//!
//! - `queues`: queue lifecycle, attributes, tags, permissions.
//! - `messages`: send, receive (with long polling), delete, visibility, purge.
//! - [`batch`]: the rules of batch requests (entry counts, ids, sizes), SQS's and the ones
//!   SNS's PublishBatch shares.
//! - `move_tasks`: moving messages out of dead-letter queues.
//! - [`receipt`]: receipt handles.
//!
//! It stands on the shared [`Core`] only; SNS and functions call into it, never the
//! other way.

pub mod batch;
pub(crate) mod messages;
pub(crate) mod move_tasks;
pub(crate) mod queues;
pub mod receipt;

use std::ops::Deref;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

use tokio::sync::Notify;

use crate::service::core::Core;

/// The SQS service (SQS API Reference: every queue and message action), over the shared
/// [`Core`] it dereferences to. Reached as [`Service::sqs`](crate::service::Service::sqs).
pub struct Sqs {
    /// The shared core: store, clock, configuration, caches.
    core: Arc<Core>,
    /// Process bookkeeping: how many message-move tasks this process runs now, and a
    /// wake-up when one ends (for [`Sqs::release_move_tasks`] at shutdown); the tasks
    /// themselves are store rows.
    move_runners: AtomicUsize,
    move_runner_done: Notify,
    /// Configuration: the key that signs receipt handles, read from the store
    /// ([`Store::receipt_key`](crate::store::Store::receipt_key)) when the service is made;
    /// the store keeps it, so every node and every restart have the same.
    receipt_key: receipt::ReceiptKey,
}

impl Sqs {
    /// The SQS service over `core`, its receipt key read from the store.
    pub(in crate::service) fn new(core: Arc<Core>) -> Sqs {
        let receipt_key = core.store.receipt_key();
        Sqs {
            core,
            move_runners: AtomicUsize::new(0),
            move_runner_done: Notify::new(),
            receipt_key,
        }
    }
}

impl Deref for Sqs {
    type Target = Core;

    fn deref(&self) -> &Core {
        &self.core
    }
}
