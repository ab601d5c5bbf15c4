//! The service layer: every rule of queues, topics and functions, shared by all protocol
//! adapters.
//!
//! [`Service`] (`handle.rs`) is the one handle callers hold (`Arc<Service>`). It is made
//! of four parts, each in its own folder, each reached by an accessor:
//!
//! - [`core`] ([`Service::core`], and what `Service` dereferences to): the shared [`Core`]:
//!   store, clock, configuration, caches and counters; ARNs, the queue cache, accounts and
//!   permissions, limits, FIFO quotas.
//! - [`sqs`] ([`Service::sqs`]): the [`Sqs`] service: queues, messages, batches, move
//!   tasks, receipt handles.
//! - [`sns`] ([`Service::sns`]): the [`Sns`] service over [`SnsDelivery`]: topics,
//!   subscriptions, platform, publish and fan-out, deliveries, data protection, archive and
//!   replay.
//! - [`functions`] ([`Service::functions`]): the [`Functions`] service: configured
//!   functions, SNS `lambda` deliveries, SQS event source mappings.
//! - [`operator`]: operator views (peeking at messages, counts, overviews, history); they
//!   span every service, so they are `Service`'s own methods.
//! - [`reset`]: removing an account's (or every account's) state between tests, and
//!   making the configuration's resources again.
//!
//! Each service stands on the core; functions calls into SQS, SNS into functions (and uses
//! SQS's message rules); SQS calls neither.
//! SQS JSON, SQS Query and the seeds' API all call these methods, so one scenario gives the
//! same answer over every protocol.

pub mod core;
pub mod functions;
mod handle;
pub mod operator;
pub mod reset;
pub mod sns;
pub mod sqs;

pub use self::core::access::{unique_id, Principal, Target};
pub use self::core::limits::{Limits, RECOUNT_INTERVAL, RECOUNT_MAX_AGE};
pub use self::core::{
    access, activity, history, quotas, Core, ServiceConfig, CELL_MOVE_POLL, DEFAULT_IDENTITY,
    OUTBOX_BATCH, OUTBOX_LEASE_MS, OUTBOX_POLL, OUTBOX_ROUNDS, QUEUE_CACHE_TTL,
};
pub use functions::{Functions, MappingInput, MappingView, MAPPING_LEASE_MS, MAPPING_RENEW_MS};
pub use handle::Service;
pub use operator::{
    MessageState, OverviewListing, OverviewPage, PeekPage, PeekedMessage, QueueOverview,
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
pub use sns::{archive, delivery_status, platform, replay, sandbox, Sns, SnsDelivery};
pub use sqs::batch::{BatchEntry, BatchKind, BatchOutcome};
pub use sqs::messages::{
    seed_message_id, sequence_number, ReceiveMessage, ReceivedMessage, SendMessage, SendResult,
    MAX_HIDDEN_MS,
};
pub use sqs::move_tasks::{MoveTask, MOVE_TASK_LEASE_MS, MOVE_TASK_POLL};
pub use sqs::queues::{ListQueuesPage, SeedQueue};
pub use sqs::{batch, receipt, Sqs};
