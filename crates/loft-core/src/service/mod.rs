//! The service layer: every rule of queues, topics and functions, shared by all protocol
//! adapters.
//!
//! [`Service`] is the one handle callers hold (`Arc<Service>`). It is made of four parts,
//! each in its own folder, each reached by an accessor:
//!
//! - [`core`] ([`Service::core`], and what `Service` dereferences to): the shared [`Core`]:
//!   store, clock, configuration, caches and counters; ARNs, the queue cache, accounts and
//!   permissions, limits, FIFO quotas, operator views.
//! - [`sqs`] ([`Service::sqs`]): the [`Sqs`] service: queues, messages, batches, move
//!   tasks, receipt handles.
//! - [`sns`] ([`Service::sns`]): the [`Sns`] service over [`SnsDelivery`]: topics,
//!   subscriptions, platform, publish and fan-out, deliveries, data protection, archive and
//!   replay.
//! - [`functions`] ([`Service::functions`]): the [`Functions`] service: configured
//!   functions, SNS `lambda` deliveries, SQS event source mappings.
//! - [`reset`]: removing an account's (or every account's) state between tests, and
//!   making the configuration's resources again.
//!
//! Each service stands on the core; SNS and functions call into SQS, never the other way.
//! SQS JSON, SQS Query and the seeds' API all call these methods, so one scenario gives the
//! same answer over every protocol.

pub mod core;
pub mod functions;
pub mod operator;
pub mod reset;
pub mod sns;
pub mod sqs;

use std::ops::Deref;
use std::sync::Arc;

use crate::clock::Clock;
use crate::store::Store;

pub use self::core::access::{unique_id, Principal, Target};
pub use self::core::limits::{Limits, RECOUNT_INTERVAL, RECOUNT_MAX_AGE};
pub use self::core::{
    access, activity, history, quotas, Core, ServiceConfig, DEFAULT_IDENTITY, QUEUE_CACHE_TTL,
};
pub use functions::{Functions, MappingInput, MappingView, MAPPING_LEASE_MS, MAPPING_RENEW_MS};
pub use operator::{
    MessageState, OverviewListing, OverviewPage, PeekedMessage, QueueOverview,
    SubscriptionOverview, TopicOverview, MAX_OVERVIEW_PAGE, MAX_PEEK,
};
pub use sns::deliveries::DELIVERY_LEASE_MS;
pub use sns::envelope::{
    MessageSigner, PublishRequest, SignedFields, SIGNING_CERT_DIR, UNSIGNED_CERT_FILE,
};
pub use sns::listing::{SubscriptionSummary, SMS_ATTRIBUTES};
pub use sns::platform::{PlatformKind, PlatformResource, PLATFORMS};
pub use sns::protection::POLICY_ATTRIBUTE;
pub use sns::publish::{PublishResult, PublishTarget};
pub use sns::replay::{REPLAY_BATCH, REPLAY_LEASE_MS, REPLAY_POLL};
pub use sns::topics::{Page, SubscribeResult, PAGE_SIZE, SEED_PAYLOAD_ATTRIBUTE};
pub use sns::{archive, delivery_status, platform, replay, Sns, SnsDelivery};
pub use sqs::batch::{BatchEntry, BatchKind, BatchOutcome};
pub use sqs::messages::{
    seed_message_id, sequence_number, ReceiveMessage, ReceivedMessage, SendMessage, SendResult,
    MAX_HIDDEN_MS,
};
pub use sqs::move_tasks::{MoveTask, MOVE_TASK_LEASE_MS, MOVE_TASK_POLL};
pub use sqs::queues::{ListQueuesPage, SeedQueue};
pub use sqs::{receipt, Sqs};

/// The service: the handle every caller holds. Share it behind an `Arc`; every method
/// takes `&self`. Its parts are the shared [`Core`] (which it dereferences to) and the
/// [`Sqs`], [`Sns`] and [`Functions`] services over it; none holds state that cannot be
/// rebuilt from the store (see [`Core`]).
pub struct Service {
    /// The shared core every service holds.
    core: Arc<Core>,
    /// SQS: queues and messages.
    sqs: Arc<Sqs>,
    /// SNS: topics, subscriptions, publish and deliveries.
    sns: Arc<Sns>,
    /// Functions: configured functions, lambda deliveries, event source mappings.
    functions: Arc<Functions>,
    /// Configuration: what makes the configuration file's resources again after a
    /// [`Service::reset`] (set once by the binary, [`Service::set_provisioner`]).
    provisioner: std::sync::OnceLock<reset::Provisioner>,
}

impl Service {
    /// A service over `store`, reading time from `clock`, signing SNS envelopes with
    /// `signer` when given.
    pub fn new(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        config: ServiceConfig,
        signer: Option<Arc<dyn MessageSigner>>,
    ) -> Arc<Service> {
        let wakeups = store.wakeups();
        let core = Arc::new(Core::new(store, clock, config));
        let sqs = Arc::new(Sqs::new(core.clone()));
        let functions = Arc::new(Functions::new(core.clone(), sqs.clone()));
        let delivery = Arc::new(SnsDelivery::new(core.clone(), functions.clone(), signer));
        let sns = Arc::new(Sns::new(delivery));
        if let Some(rx) = wakeups {
            self::core::follow_wakeups(&core, rx);
        }
        Arc::new(Service {
            core,
            sqs,
            sns,
            functions,
            provisioner: std::sync::OnceLock::new(),
        })
    }

    /// The shared core: configuration, time, ARNs, accounts and permissions, limits,
    /// operator views (also reached through `Service`'s `Deref`).
    pub fn core(&self) -> &Arc<Core> {
        &self.core
    }

    /// The SQS service: queue and message actions (SQS API Reference).
    pub fn sqs(&self) -> &Arc<Sqs> {
        &self.sqs
    }

    /// The SNS service: topic, subscription, platform and publish actions (SNS API
    /// Reference), and the delivery and replay workers' steps.
    pub fn sns(&self) -> &Arc<Sns> {
        &self.sns
    }

    /// The functions service: configured functions, lambda deliveries and event source
    /// mappings (Lambda API Reference).
    pub fn functions(&self) -> &Arc<Functions> {
        &self.functions
    }
}

impl Deref for Service {
    type Target = Core;

    fn deref(&self) -> &Core {
        &self.core
    }
}
