//! The service layer: every rule of queues and topics, shared by all protocol adapters.
//!
//! - [`queues`]: queue lifecycle, attributes, tags, permissions.
//! - [`messages`]: send, receive (with long polling), delete, visibility, purge.
//! - [`move_tasks`]: moving messages out of dead-letter queues.
//! - [`topics`]: topics and subscriptions.
//! - [`publish`]: publish and fan-out.
//! - `envelope`: SNS message formats (the envelope, signed fields, SQS copies, structured
//!   text), shared by publish, replay and subscriptions.
//! - `sns_errors`: SNS's `InvalidParameter` answers, a leaf every SNS file may import.
//! - [`deliveries`]: HTTP/S delivery outcomes and retries.
//! - [`protection`]: SNS message data protection (Put/GetDataProtectionPolicy, the
//!   Inbound and Outbound hooks of Publish).
//! - [`receipt`]: receipt handles.
//! - [`batch`]: the rules of batch requests (entry counts, ids, sizes) for SQS and SNS.
//! - `listing`: how subscriptions are listed, the SMS settings answers.
//! - [`access`]: accounts, callers ([`Principal`]) and permissions ([`Service::authorize`]).
//! - [`activity`]: counters of sends, receives, deletes, dead-letters and deliveries.
//! - [`operator`]: operator views: peeking at messages, counts, pending deliveries.
//! - `limits`: queue and topic caps, in-flight messages per queue ([`Limits`]).
//! - [`quotas`]: SQS FIFO throughput quotas (`FifoThroughputLimit`, `RequestThrottled`).
//! - [`reset`]: removing an account's (or every account's) state between tests.
//!
//! SQS JSON, SQS Query and the seeds' API all call these methods, so one scenario gives the
//! same answer over every protocol.

pub mod access;
pub mod activity;
pub mod archive;
pub mod batch;
mod deliveries;
pub mod delivery_status;
mod envelope;
mod functions;
pub mod history;
mod limits;
mod listing;
mod messages;
mod move_tasks;
pub mod operator;
pub mod platform;
mod protection;
mod publish;
mod queues;
pub mod quotas;
pub mod receipt;
pub mod replay;
pub mod reset;
mod sns_errors;
mod topics;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::Notify;

use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::model::QueueRecord;
use crate::names;
use crate::store::Store;

pub use access::{unique_id, Principal, Target};
pub use batch::{BatchEntry, BatchKind, BatchOutcome};
pub use deliveries::DELIVERY_LEASE_MS;
pub use envelope::{
    MessageSigner, PublishRequest, SignedFields, SIGNING_CERT_DIR, UNSIGNED_CERT_FILE,
};
pub use functions::{MappingInput, MappingView, MAPPING_LEASE_MS, MAPPING_RENEW_MS};
pub use limits::{Limits, RECOUNT_INTERVAL, RECOUNT_MAX_AGE};
pub use listing::{SubscriptionSummary, SMS_ATTRIBUTES};
pub use messages::{
    seed_message_id, sequence_number, ReceiveMessage, ReceivedMessage, SendMessage, SendResult,
    MAX_HIDDEN_MS,
};
pub use move_tasks::{MoveTask, MOVE_TASK_LEASE_MS, MOVE_TASK_POLL};
pub use operator::{
    MessageState, OverviewListing, OverviewPage, PeekedMessage, QueueOverview,
    SubscriptionOverview, TopicOverview, MAX_OVERVIEW_PAGE, MAX_PEEK,
};
pub use platform::{PlatformKind, PlatformResource, PLATFORMS};
pub use protection::POLICY_ATTRIBUTE;
pub use publish::{PublishResult, PublishTarget};
pub use queues::{ListQueuesPage, SeedQueue};
pub use replay::{REPLAY_BATCH, REPLAY_LEASE_MS, REPLAY_POLL};
pub use topics::{Page, SubscribeResult, PAGE_SIZE, SEED_PAYLOAD_ATTRIBUTE};

/// The IAM user name every caller acts as ([`Service::principal_arn`]).
pub const DEFAULT_IDENTITY: &str = "loft";

/// How long a cached queue record is trusted when another node may change it.
pub const QUEUE_CACHE_TTL: std::time::Duration = std::time::Duration::from_secs(1);

/// Settings of the service: the account and region of every ARN, the URL Loft is reached
/// at, its limits and the SNS endpoint policy.
#[derive(Debug, Clone)]
pub struct ServiceConfig {
    /// Twelve-digit account id, default `000000000000`.
    pub account_id: String,
    /// Region, default `us-east-1`.
    pub region: String,
    /// Base URL clients reach Loft at (`http://127.0.0.1:9324`): SubscribeURL,
    /// UnsubscribeURL and SigningCertURL are built from it.
    pub advertised_url: String,
    /// Queue and topic caps, in-flight limits.
    pub limits: Limits,
    /// Which addresses SNS HTTP/S subscriptions may reach.
    pub endpoint_policy: crate::endpoint_policy::EndpointPolicy,
    /// The functions Loft invokes (`[[functions]]` of the config file); their hosts are
    /// the operator's, so the endpoint policy does not apply to them.
    pub functions: Vec<crate::functions::FunctionConfig>,
    /// Whether access keys of accounts other than `account_id` exist: resources can then
    /// be made in other accounts, and a topic delivers to another account's queue only as
    /// its policy allows ([`access`]). Off by default: one account, whose URLs and ARNs
    /// name it (one naming another account names nothing).
    pub multi_account: bool,
    /// Whether GetQueueUrl, SendMessage(Batch) and ReceiveMessage create a queue they name
    /// that does not exist ([`Service::auto_create_queue`]); off by default, as AWS.
    pub auto_create_queues: bool,
}

impl Default for ServiceConfig {
    fn default() -> Self {
        ServiceConfig {
            account_id: "000000000000".into(),
            region: "us-east-1".into(),
            advertised_url: "http://127.0.0.1:9324".into(),
            limits: Limits::default(),
            endpoint_policy: crate::endpoint_policy::EndpointPolicy::default(),
            functions: Vec::new(),
            multi_account: false,
            auto_create_queues: false,
        }
    }
}

/// The service. Share it behind an `Arc`; every method takes `&self`.
///
/// The store is its only memory: every queue, message, topic, deduplication window,
/// receive attempt, purge and delete hold, move task and platform is a row there, written
/// in the transaction of the operation it belongs to, so a restart or another node sharing
/// the database sees the same state. Each field below says what kind of thing it is; none
/// is state that cannot be rebuilt from the store at any moment.
pub struct Service {
    /// Configuration: where state lives.
    store: Arc<dyn Store>,
    /// Configuration: where time comes from (tests move it).
    clock: Arc<dyn Clock>,
    /// Configuration: account, region, URL, limits, endpoint policy.
    config: ServiceConfig,
    /// Long-poll waiters by queue id, notified after a send commits (process: the
    /// requests waiting in this process; a wake-up only makes them look at the store).
    waiters: Mutex<HashMap<i64, Arc<Notify>>>,
    /// Cache: queue records by name, with when they were read (see
    /// [`Service::find_queue`]; trusted for [`QUEUE_CACHE_TTL`]).
    queue_cache: Mutex<HashMap<String, (Arc<QueueRecord>, std::time::Instant)>>,
    /// Identity of this service instance (a UUID made at start): the owner of the
    /// message-move task leases it holds in the store. Not state: a new one after a
    /// restart, and the old one's leases are released at shutdown or run out.
    node_id: String,
    /// Process bookkeeping: how many message-move tasks this process runs now, and a
    /// wake-up when one ends (for [`Service::release_move_tasks`] at shutdown); the
    /// tasks themselves are store rows.
    move_runners: std::sync::atomic::AtomicUsize,
    move_runner_done: Notify,
    /// Configuration: signs SNS envelopes, when configured.
    signer: Option<Arc<dyn envelope::MessageSigner>>,
    /// Process: wakes this process's delivery workers when deliveries are queued (the
    /// deliveries are store rows; workers also look on their own).
    delivery_notify: Notify,
    /// Process lifecycle: set when the server is stopping, so long polls answer at once.
    shutting_down: AtomicBool,
    /// Process lifecycle: wakes long polls when the server is stopping.
    shutdown_notify: Notify,
    /// Metrics counters for `/metrics`: this process's activity since it started, per
    /// node by design (Prometheus counters start at zero with the process).
    activity: activity::Activity,
    /// View: recent samples of queue and topic counts for the console's charts, per node
    /// ([`history`]; bounded, lost on restart by design).
    history: history::History,
    /// Cache: the counts behind the queue, topic and in-flight limits, rebuilt from the
    /// store (see `limits`: recounted when old and before any refusal; per node, so the
    /// limits are approximate across nodes by design).
    counters: limits::Counters,
    /// Messages each topic's data protection audit statement considered (SampleRate).
    audit_counts: protection::AuditCounts,
    /// Cache: resource policies parsed, by their text (rebuilt from the store's text).
    policy_cache: access::PolicyCache,
    /// Cache: the caller of an open Loft ([`access::Principal::open`] of `config`), built
    /// once and cloned per request ([`Service::open_principal`]).
    open_principal: access::Principal,
    /// Process bookkeeping: HTTP/S notifications this process started per subscription
    /// in the current second (`throttlePolicy.maxReceivesPerSecond`, see
    /// `deliveries`); per node by design, like the limits' counters.
    throttle: deliveries::Throttle,
    /// Process bookkeeping: FIFO queues' throughput quota buckets (see [`quotas`]); per
    /// node by design, like the limits' counters.
    quotas: quotas::Quotas,
    /// Configuration: the key that signs receipt handles, read from the store
    /// ([`Store::receipt_key`]) when the service is made; the store keeps it, so every node
    /// and every restart have the same.
    receipt_key: receipt::ReceiptKey,
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
        signer: Option<Arc<dyn envelope::MessageSigner>>,
    ) -> Arc<Service> {
        let wakeups = store.wakeups();
        let open_principal = access::Principal::open(&config);
        let receipt_key = store.receipt_key();
        let service = Arc::new(Service {
            store,
            clock,
            config,
            waiters: Mutex::default(),
            queue_cache: Mutex::default(),
            node_id: uuid::Uuid::new_v4().to_string(),
            move_runners: std::sync::atomic::AtomicUsize::new(0),
            move_runner_done: Notify::new(),
            signer,
            delivery_notify: Notify::new(),
            shutting_down: AtomicBool::new(false),
            shutdown_notify: Notify::new(),
            activity: activity::Activity::default(),
            history: history::History::default(),
            counters: limits::Counters::default(),
            audit_counts: protection::AuditCounts::default(),
            policy_cache: access::PolicyCache::default(),
            open_principal,
            throttle: deliveries::Throttle::default(),
            quotas: quotas::Quotas::default(),
            receipt_key,
            provisioner: std::sync::OnceLock::new(),
        });
        if let Some(rx) = wakeups {
            follow_wakeups(&service, rx);
        }
        service
    }

    /// The account and region in use.
    pub fn config(&self) -> &ServiceConfig {
        &self.config
    }

    /// The caller of an open Loft ([`access::Principal::open`] of [`Service::config`]): a
    /// clone of the one built when the service was made, which shares its strings (a few
    /// reference counts per request, no formatting).
    pub fn open_principal(&self) -> access::Principal {
        self.open_principal.clone()
    }

    /// The current time, milliseconds since the epoch.
    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    /// `arn:aws:sqs:{region}:{account}:{name}` of the queue of store key `key` (its
    /// account's and region's, see [`access`]).
    pub fn queue_arn(&self, key: &str) -> String {
        let (scope, name) = self.key_scope(key);
        names::queue_arn(scope.region, scope.account, name)
    }

    /// The IAM principal requests act as: `arn:aws:iam::{account}:user/{DEFAULT_IDENTITY}`.
    /// Access keys have no identities of their own yet, so every caller is this user of
    /// the configured account (SNS's SubscriptionPrincipal reports it).
    pub fn principal_arn(&self) -> String {
        format!(
            "arn:aws:iam::{}:user/{DEFAULT_IDENTITY}",
            self.config.account_id
        )
    }

    /// `arn:aws:sns:{region}:{account}:{name}` of the topic of store key `key` (its
    /// account's and region's).
    pub fn topic_arn(&self, key: &str) -> String {
        let (scope, name) = self.key_scope(key);
        names::topic_arn(scope.region, scope.account, name)
    }

    /// Marks the service as stopping: every waiting long poll answers now with what it has
    /// (usually nothing), and later ones do not wait, so a graceful shutdown is prompt.
    pub fn begin_shutdown(&self) {
        self.shutting_down.store(true, Ordering::SeqCst);
        self.shutdown_notify.notify_waiters();
    }

    fn is_shutting_down(&self) -> bool {
        self.shutting_down.load(Ordering::SeqCst)
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
    pub async fn queue(&self, name: &str) -> Result<Arc<QueueRecord>> {
        self.find_queue(name).await?.ok_or_else(Error::no_queue)
    }

    /// The queue named `name`, if any, from a short-lived cache: every request names its
    /// queue, and this saves a trip to the store for each. Changes made through this
    /// service clear the cache at once; changes made by other nodes sharing the database
    /// show within [`QUEUE_CACHE_TTL`].
    pub(crate) async fn find_queue(&self, name: &str) -> Result<Option<Arc<QueueRecord>>> {
        {
            let cache = self.queue_cache.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((q, at)) = cache.get(name) {
                if at.elapsed() < QUEUE_CACHE_TTL {
                    return Ok(Some(q.clone()));
                }
            }
        }
        let found = self.store.get_queue(name).await?.map(Arc::new);
        let mut cache = self.queue_cache.lock().unwrap_or_else(|p| p.into_inner());
        match &found {
            Some(q) => {
                cache.insert(name.to_owned(), (q.clone(), std::time::Instant::now()));
            }
            None => {
                cache.remove(name);
            }
        }
        Ok(found)
    }

    /// Clears the queue cache; called after every change to a queue's record.
    pub(crate) fn forget_queues(&self) {
        self.queue_cache
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
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

    fn wake_all(&self) {
        let map = self.waiters.lock().unwrap_or_else(|p| p.into_inner());
        for n in map.values() {
            n.notify_waiters();
        }
    }
}

/// Wakes `service`'s long polls on the queue ids the store reports from other nodes
/// ([`Store::wakeups`]), until the service is dropped. Needs a Tokio runtime; without one
/// (some unit tests) polls still wake on their own timers.
fn follow_wakeups(service: &Arc<Service>, mut rx: tokio::sync::broadcast::Receiver<i64>) {
    use tokio::sync::broadcast::error::RecvError;
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let weak = Arc::downgrade(service);
    handle.spawn(async move {
        loop {
            let id = match rx.recv().await {
                Ok(id) => id,
                // Missed some: wake everything, the polls look again.
                Err(RecvError::Lagged(_)) => -1,
                Err(RecvError::Closed) => return,
            };
            let Some(service) = weak.upgrade() else {
                return;
            };
            if id < 0 {
                // Another node may have reset the store (`Store::reset`): what this
                // node cached of its queues may name queues that are gone.
                service.forget_queues();
                service.wake_all();
            } else {
                service.wake(id);
            }
        }
    });
}
