//! The shared core of the services: what SQS, SNS and functions all stand on.
//!
//! [`Core`] holds the store, the clock, the configuration and every per-process cache and
//! counter; its methods are the ones every service needs: configuration, time and ARNs,
//! the queue cache and long-poll wake-ups, accounts and permissions ([`access`]), limits
//! (`limits`) and FIFO throughput quotas ([`quotas`]).
//!
//! - [`access`]: accounts, callers ([`Principal`](access::Principal)) and permissions
//!   ([`Core::authorize`]).
//! - [`activity`]: counters of sends, receives, deletes, dead-letters and deliveries.
//! - [`history`]: recent samples of queue and topic counts for the console.
//! - `limits`: queue and topic caps, in-flight messages per queue ([`Limits`]).
//! - [`quotas`]: SQS FIFO throughput quotas (`FifoThroughputLimit`, `RequestThrottled`).

pub mod access;
pub mod activity;
pub mod history;
pub(crate) mod limits;
pub mod quotas;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::model::QueueRecord;
use crate::names;
use crate::store::Store;
use limits::Limits;

/// The IAM user name every caller acts as ([`Core::principal_arn`]).
pub const DEFAULT_IDENTITY: &str = "loft";

/// How long a cached queue record is trusted when another node may change it.
pub const QUEUE_CACHE_TTL: std::time::Duration = std::time::Duration::from_secs(1);

/// How often every node relays the work that crosses storage cells
/// ([`Core::relay_outbox`]); a publish normally relays its own rows at once, so this
/// only bounds the wait after a relay failed or died.
pub const OUTBOX_POLL: std::time::Duration = std::time::Duration::from_secs(1);

/// How often every node looks for moves of queues between storage cells whose run
/// stopped ([`Core::finish_cell_moves`]): with loft-store's 30 s move lease, a queue whose
/// move was killed is paused at most about 35 s.
pub const CELL_MOVE_POLL: std::time::Duration = std::time::Duration::from_secs(5);

/// How long a relay leases the outbox rows it takes (ms): those of a relay that died are
/// relayed by another node after this.
pub const OUTBOX_LEASE_MS: i64 = 30_000;

/// Most outbox rows one relay batch takes.
pub const OUTBOX_BATCH: u32 = 100;

/// Most batches one [`Core::relay_outbox`] runs.
pub const OUTBOX_ROUNDS: u32 = 20;

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
    /// that does not exist ([`Sqs::auto_create_queue`](crate::service::Sqs::auto_create_queue)); off by default, as AWS.
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

/// The shared core: every field the services read, and the methods all of them use.
/// Each service ([`Sqs`](crate::service::Sqs), [`SnsDelivery`](crate::service::SnsDelivery),
/// [`Sns`](crate::service::Sns), [`Functions`](crate::service::Functions)) holds it behind
/// an `Arc` and dereferences to it.
///
/// The store is its only memory: every queue, message, topic, deduplication window,
/// receive attempt, purge and delete hold, move task and platform is a row there, written
/// in the transaction of the operation it belongs to, so a restart or another node sharing
/// the database sees the same state. Each field below says what kind of thing it is; none
/// is state that cannot be rebuilt from the store at any moment.
pub struct Core {
    /// Configuration: where state lives.
    pub(in crate::service) store: Arc<dyn Store>,
    /// Configuration: where time comes from (tests move it).
    pub(in crate::service) clock: Arc<dyn Clock>,
    /// Configuration: account, region, URL, limits, endpoint policy.
    pub(in crate::service) config: ServiceConfig,
    /// Long-poll waiters by queue id, notified after a send commits (process: the
    /// requests waiting in this process; a wake-up only makes them look at the store).
    waiters: Mutex<HashMap<i64, Arc<Notify>>>,
    /// Cache: queue records by name, with when they were read (see
    /// [`Core::find_queue`]; trusted for [`QUEUE_CACHE_TTL`]).
    queue_cache: Mutex<HashMap<String, (Arc<QueueRecord>, std::time::Instant)>>,
    /// Identity of this service instance (a UUID made at start): the owner of the
    /// message-move task, replay and mapping leases it holds in the store. Not state: a new
    /// one after a restart, and the old one's leases are released at shutdown or run out.
    pub(in crate::service) node_id: String,
    /// Process: wakes this process's delivery workers when deliveries are queued (the
    /// deliveries are store rows; workers also look on their own).
    pub(in crate::service) delivery_notify: Notify,
    /// Process lifecycle: set when the server is stopping, so long polls answer at once.
    shutting_down: AtomicBool,
    /// Process lifecycle: wakes long polls when the server is stopping.
    pub(in crate::service) shutdown_notify: Notify,
    /// Metrics counters for `/metrics`: this process's activity since it started, per
    /// node by design (Prometheus counters start at zero with the process).
    pub(in crate::service) activity: activity::Activity,
    /// View: recent samples of queue and topic counts for the console's charts, per node
    /// ([`history`]; bounded, lost on restart by design).
    pub(in crate::service) history: history::History,
    /// Cache: the counts behind the queue, topic and in-flight limits, rebuilt from the
    /// store (see `limits`: recounted when old and before any refusal; per node, so the
    /// limits are approximate across nodes by design).
    counters: limits::Counters,
    /// Cache: resource policies parsed, by their text (rebuilt from the store's text).
    policy_cache: access::PolicyCache,
    /// Cache: the caller of an open Loft ([`access::Principal::open`] of `config`), built
    /// once and cloned per request ([`Core::open_principal`]).
    open_principal: access::Principal,
    /// Process bookkeeping: FIFO queues' throughput quota buckets (see [`quotas`]); per
    /// node by design, like the limits' counters.
    quotas: quotas::Quotas,
}

impl Core {
    /// A core over `store`, reading time from `clock`; the services are made over it by
    /// [`Service::new`](crate::service::Service::new).
    pub(in crate::service) fn new(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        config: ServiceConfig,
    ) -> Core {
        let open_principal = access::Principal::open(&config);
        Core {
            store,
            clock,
            config,
            waiters: Mutex::default(),
            queue_cache: Mutex::default(),
            node_id: uuid::Uuid::new_v4().to_string(),
            delivery_notify: Notify::new(),
            shutting_down: AtomicBool::new(false),
            shutdown_notify: Notify::new(),
            activity: activity::Activity::default(),
            history: history::History::default(),
            counters: limits::Counters::default(),
            policy_cache: access::PolicyCache::default(),
            open_principal,
            quotas: quotas::Quotas::default(),
        }
    }

    /// The account and region in use.
    pub fn config(&self) -> &ServiceConfig {
        &self.config
    }

    /// The caller of an open Loft ([`access::Principal::open`] of [`Core::config`]): a
    /// clone of the one built when the service was made, which shares its strings (a few
    /// reference counts per request, no formatting).
    pub fn open_principal(&self) -> access::Principal {
        self.open_principal.clone()
    }

    /// Ends delivery `d` (an SNS HTTP/S, Lambda, email or SMS delivery) with `outcome`:
    /// counts it under its endpoint's protocol in the activity counters and removes it
    /// from the store (`Store::finish_delivery`). Errors: the store's.
    pub(in crate::service) async fn end_delivery(
        &self,
        d: &crate::model::DeliveryRecord,
        outcome: activity::DeliveryOutcome,
    ) -> Result<()> {
        self.store.finish_delivery(d.id).await?;
        self.activity
            .delivery(activity::http_protocol(&d.endpoint).as_str(), outcome, 1);
        Ok(())
    }

    /// Sends `body` to queue `name` as SNS sends to a subscription's dead-letter queue (no
    /// attributes, no DeadLetterQueueSourceArn; SNS Developer Guide, "Amazon SNS dead-letter
    /// queues"), for a message of topic `topic_arn`. Returns whether it was sent: `false`
    /// when the queue does not exist or its `Policy` does not let the topic send into it
    /// now ([`Core::may_send_into`], the rule of every SNS write into a queue: the
    /// subscription's owner may be another account than the topic's). Errors: the store's.
    pub(in crate::service) async fn dead_letter_text(
        &self,
        name: &str,
        body: String,
        topic_arn: &str,
    ) -> Result<bool> {
        let Some(q) = self.store.get_queue(name).await? else {
            return Ok(false);
        };
        let policy = q.attributes.get("Policy").map(String::as_str);
        if !self.may_send_into(&access::Writer::Topic { topic_arn }, &q.name, policy) {
            tracing::warn!(queue = %q.name, topic = %topic_arn, "dead-letter queue's Policy does not let the topic send; message dropped");
            return Ok(false);
        }
        let now = self.now_ms();
        let config = crate::attributes::QueueConfig::from_attributes(&q.attributes);
        self.store
            .send_messages(vec![(
                q.id,
                crate::model::NewMessage {
                    message_id: Some(uuid::Uuid::new_v4().to_string()),
                    md5_body: crate::message::md5_hex(body.as_bytes()),
                    message_attributes: crate::message::encode_attributes(
                        &crate::message::MessageAttributes::new(),
                    ),
                    system_attributes: None,
                    sender_id: access::sns_sender_id(
                        topic_arn.split(':').nth(3).unwrap_or(&self.config.region),
                    ),
                    sent_at_ms: now,
                    visible_at_ms: now,
                    expires_at_ms: now + config.retention_seconds as i64 * 1000,
                    group_id: None,
                    dedup_id: None,
                    receive_count: 0,
                    first_received_at_ms: None,
                    dead_letter_source: None,
                    dedup: None,
                    seal: config.seal_at(now),
                    body,
                },
            )])
            .await?;
        self.wake(q.id);
        self.activity.sent(&q.name, 1);
        Ok(true)
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

    pub(in crate::service) fn is_shutting_down(&self) -> bool {
        self.shutting_down.load(Ordering::SeqCst)
    }

    /// Whether storage answers (for `/ready`): a scoped listing of no key, a round trip
    /// through the store that reads no account's rows.
    pub async fn ready(&self) -> bool {
        self.store.list_topics_of("", false).await.is_ok()
    }

    /// Drops messages past their retention; run periodically. Returns how many.
    pub async fn expire_messages(&self) -> Result<u64> {
        self.store.delete_expired(self.now_ms()).await
    }

    /// Relays the work that crosses storage cells ([`crate::store::Store::relay_outbox`]:
    /// SNS copies bound for a queue of another cell), in batches of [`OUTBOX_BATCH`]
    /// rows each leased for [`OUTBOX_LEASE_MS`], until the outbox holds no due row or
    /// [`OUTBOX_ROUNDS`] batches ran; run periodically by every node ([`OUTBOX_POLL`]).
    /// Returns how many rows it relayed (always 0 on a store of one database).
    ///
    /// Errors: `InternalError` when the store fails (what was relayed stays relayed).
    pub async fn relay_outbox(&self) -> Result<u64> {
        let mut total = 0;
        for _ in 0..OUTBOX_ROUNDS {
            let now = self.now_ms();
            let n = self
                .store
                .relay_outbox(now, now + OUTBOX_LEASE_MS, OUTBOX_BATCH)
                .await?;
            total += n;
            if n < u64::from(OUTBOX_BATCH) {
                break;
            }
        }
        Ok(total)
    }

    /// Finishes the moves of queues between storage cells whose run stopped
    /// ([`crate::store::Store::finish_cell_moves`], as this node); run periodically by
    /// every node ([`CELL_MOVE_POLL`]). Returns how many it finished (always 0 on a store
    /// of one database).
    ///
    /// Errors: as [`crate::store::Store::finish_cell_moves`].
    pub async fn finish_cell_moves(&self) -> Result<u64> {
        self.store
            .finish_cell_moves(&self.node_id, self.now_ms())
            .await
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

    pub(in crate::service) fn waiter(&self, queue_id: i64) -> Arc<Notify> {
        let mut map = self.waiters.lock().unwrap_or_else(|p| p.into_inner());
        map.entry(queue_id).or_default().clone()
    }

    pub(in crate::service) fn wake(&self, queue_id: i64) {
        let map = self.waiters.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = map.get(&queue_id) {
            n.notify_waiters();
        }
    }

    pub(in crate::service) fn wake_all(&self) {
        let map = self.waiters.lock().unwrap_or_else(|p| p.into_inner());
        for n in map.values() {
            n.notify_waiters();
        }
    }
}

/// Wakes `core`'s long polls on the queue ids the store reports from other nodes
/// ([`Store::wakeups`]), until the core is dropped. Needs a Tokio runtime; without one
/// (some unit tests) polls still wake on their own timers.
pub(in crate::service) fn follow_wakeups(
    core: &Arc<Core>,
    mut rx: tokio::sync::broadcast::Receiver<i64>,
) {
    use tokio::sync::broadcast::error::RecvError;
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let weak = Arc::downgrade(core);
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
