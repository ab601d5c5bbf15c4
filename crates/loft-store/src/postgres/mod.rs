//! The PostgreSQL store: several Loft nodes on one database.
//!
//! Requests run on a connection pool (deadpool-postgres over tokio-postgres) with SQL
//! strings prepared at run time (no build-time database). Most operations are one statement;
//! see [`ops`] for how receives, FIFO groups, deduplication, moves and delivery leases stay
//! correct when several nodes run them at once. A transaction that PostgreSQL aborts as a
//! deadlock or serialization failure is retried.
//!
//! Wake-ups: every change that makes messages visible runs `pg_notify(channel, queue id)`.
//! One connection per node LISTENs on that channel and forwards the queue ids to
//! [`Store::wakeups`], so a long poll on one node returns when a message is sent through
//! another. After the listener reconnects it sends `-1` ("wake every poll"), since
//! notifications sent meanwhile are lost.
//!
//! TLS: rustls, with libpq's `sslmode` (`disable`, `prefer`, `require`, `verify-ca`,
//! `verify-full`) and `sslrootcert`; see [`tls`].

mod group;
mod health;
mod migrations;
mod ops;
pub mod tls;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use loft_core::error::{Error, Result};
use loft_core::model::*;
use loft_core::service::receipt::ReceiptKey;
use loft_core::store::Store;
use tokio::sync::broadcast;
use tokio::task::JoinHandle;
use tokio_postgres::AsyncMessage;

pub use cell::CELL_ID_BITS;
pub use migrations::SCHEMA_VERSION;
use ops::Failure;
pub use ops::FIFO_GROUP_LOCK_CLASS;

use crate::replay::ArchiveWindow;
use crate::seal::{KeySource, Open, Seal, Sealer};

/// Default number of pooled connections per node.
pub const DEFAULT_POOL_SIZE: usize = 16;

/// How often an operation aborted as a deadlock or serialization failure is tried again.
const MAX_RETRIES: u32 = 8;

/// Most send groups, most delete groups and most receive groups each running at once on
/// a node (each group is one statement or transaction on one pooled connection); see
/// [`group`]. `LOFT_PG_GROUP_FLIGHTS` (1 to 64) overrides it, for tuning
/// ([`group_flights`]).
const GROUP_FLIGHTS: usize = 4;

/// The flight limit of each combiner: `LOFT_PG_GROUP_FLIGHTS` when it is a number from 1
/// to 64, else [`GROUP_FLIGHTS`] (an unusable value is logged and ignored).
fn group_flights() -> usize {
    match std::env::var("LOFT_PG_GROUP_FLIGHTS") {
        Ok(v) => match v.trim().parse::<usize>() {
            Ok(n) if (1..=64).contains(&n) => n,
            _ => {
                tracing::warn!(value = %v, "LOFT_PG_GROUP_FLIGHTS is not 1 to 64; using {GROUP_FLIGHTS}");
                GROUP_FLIGHTS
            }
        },
        Err(_) => GROUP_FLIGHTS,
    }
}

/// Most messages in one send group (one INSERT) and entries in one delete group.
const GROUP_MAX_MESSAGES: usize = 500;

/// Most body bytes in one send group (a single larger send still runs, alone).
const GROUP_MAX_BYTES: usize = 4 << 20;

/// A send group's job: one request's standard messages (no deduplication key), sealed.
type SendJob = Vec<(i64, NewMessage)>;

/// A delete group's job: one request's entries (queue id, seq, strict).
type DeleteJob = Vec<ops::DeleteItem>;

/// A receive group's job: one step of one standard ReceiveMessage.
type ReceiveJob = ops::StepJob;

/// Options of [`PgStore::connect`].
#[derive(Debug, Clone)]
pub struct PgOptions {
    /// Most pooled connections (the listener has one more of its own).
    pub pool_size: usize,
    /// Keep Loft's tables in this schema (created when missing) instead of the URL's
    /// search path; also names the wake-up channel, so stores in different schemas of one
    /// database do not wake each other. Letters, digits and `_` only.
    pub schema: Option<String>,
}

impl Default for PgOptions {
    fn default() -> Self {
        PgOptions {
            pool_size: DEFAULT_POOL_SIZE,
            schema: None,
        }
    }
}

/// The PostgreSQL implementation of [`Store`]. Cheap to share behind an `Arc`.
pub struct PgStore {
    pool: Pool,
    /// The LISTEN/NOTIFY channel of this database (and schema).
    channel: String,
    wakeups: broadcast::Sender<i64>,
    /// The store keys whose catalog row changed (cell 1 of cells: `catalog:KEY`
    /// notifications on [`PgStore::channel`], `moving`).
    catalog_changes: broadcast::Sender<String>,
    listener: JoinHandle<()>,
    /// Which queues are fair, as last read: a queue once fair stays fair (ids are never
    /// reused), so `true` is kept; `false` is read again after [`FAIR_RECHECK`], since
    /// another node's send may have made the queue fair meanwhile.
    fair: std::sync::Mutex<std::collections::HashMap<i64, (bool, std::time::Instant)>>,
    /// Where this node's plain-order claims of each queue start their index walk
    /// ([`ops::StepJob::floor`]): the lowest pre-claim `visible_at` of the queue's last
    /// claim, and when the queue's last claim from the start of the index ran (a floor
    /// older than [`FLOOR_RESCAN`] is not used: that claim walks from the start again).
    /// A hint only: no rule depends on it.
    floors: std::sync::Mutex<std::collections::HashMap<i64, (i64, std::time::Instant)>>,
    /// Seals and opens the messages of encrypted queues (`crate::seal`); without
    /// [`PgStore::with_key_source`] it has no key and refuses them.
    sealer: Arc<Sealer>,
    /// Group commit of concurrent standard sends: one INSERT for many requests.
    sends: Arc<group::Combiner<SendJob, Vec<SentMessage>>>,
    /// Group commit of concurrent deletes (DeleteMessage, DeleteMessageBatch): one
    /// DELETE for many requests.
    deletes: Arc<group::Combiner<DeleteJob, Vec<DeleteOutcome>>>,
    /// Group commit of concurrent standard receives (their steps): one transaction, the
    /// claim statements pipelined, for many requests.
    receives: Arc<group::Combiner<ReceiveJob, ops::StepOutcome>>,
    /// The database's receipt-handle key, read (or made) at connect
    /// ([`Store::receipt_key`]); every node of the database reads the same row.
    receipt_key: ReceiptKey,
    /// The queue ids this database holds when it serves as a cell (`crate::cells`), set
    /// by [`PgStore::claim_cell`]; unset (every id) for a store opened alone.
    cell_ids: std::sync::OnceLock<std::ops::Range<i64>>,
    /// Whether the database answers: armed by [`PgStore::claim_cell`], it bounds each
    /// operation and fails a down cell's at once ([`health`]).
    health: Arc<health::Health>,
}

/// The database's receipt-handle key: the `receipt_key` row, made with a new random key by
/// the first node that finds none (`ON CONFLICT DO NOTHING`: of two nodes starting at
/// once, one row wins and both read it).
///
/// Errors: the database refuses, or the row does not hold a key.
async fn load_receipt_key(client: &tokio_postgres::Client) -> Result<ReceiptKey, String> {
    let fresh = ReceiptKey::generate().to_base64();
    client
        .execute(
            "INSERT INTO receipt_key (id, key) VALUES (1, $1) ON CONFLICT (id) DO NOTHING",
            &[&fresh],
        )
        .await
        .map_err(|e| format!("cannot record the receipt key: {}", chain(&e)))?;
    let text: String = client
        .query_one("SELECT key FROM receipt_key WHERE id = 1", &[])
        .await
        .map_err(|e| format!("cannot read the receipt key: {}", chain(&e)))?
        .get(0);
    ReceiptKey::from_base64(&text)
        .ok_or_else(|| "the receipt_key row does not hold a Loft receipt key".to_owned())
}

/// How long this node trusts that a queue is not fair before reading its row again.
const FAIR_RECHECK: Duration = Duration::from_secs(1);

/// How long a queue's claim floor ([`PgStore::floors`]) is used before a claim walks the
/// queue's index from its start again: the longest a visible message below the floor
/// (one another transaction held and put back, or one a node with a slower clock sent)
/// can be passed over while the receives above it come back full.
const FLOOR_RESCAN: Duration = Duration::from_secs(1);

impl Drop for PgStore {
    fn drop(&mut self) {
        self.listener.abort();
    }
}

fn check_schema_name(schema: &str) -> Result<(), String> {
    let ok = !schema.is_empty()
        && schema.len() <= 48
        && schema
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && !schema.as_bytes()[0].is_ascii_digit();
    if ok {
        Ok(())
    } else {
        Err(format!("invalid schema name {schema:?}"))
    }
}

/// Idle time before a connection's first TCP keepalive probe, unless the URL sets
/// `keepalives_idle` ([`parse_url`]).
const KEEPALIVE_IDLE: Duration = Duration::from_secs(10);
/// Time between TCP keepalive probes, unless the URL sets `keepalives_interval`.
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(5);
/// Unanswered TCP keepalive probes that close a connection, unless the URL sets
/// `keepalives_retries`.
const KEEPALIVE_RETRIES: u32 = 3;
/// How long sent data may stay unacknowledged before the connection is closed (Linux's
/// `TCP_USER_TIMEOUT`), unless the URL sets `tcp_user_timeout`.
const TCP_USER_TIMEOUT: Duration = Duration::from_secs(20);

/// How long each host of a URL may take to accept a TCP connection, unless the URL sets
/// `connect_timeout`: a multi-host URL's hosts are tried in order, so a lost first host
/// (its SYNs unanswered) would otherwise hold every new connection for the kernel's SYN
/// retries (about 2 min) before the next host is tried, longer than a cell's probe
/// ([`health::PROBE_TIMEOUT`]) and its operations' bound allow: the cell would stay down
/// after its standby's promotion for as long as the old primary's machine is gone.
const HOST_CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// Parses a `postgres://` URL (or a `key=value` connection string) and builds its TLS
/// connector. Sessions run with JIT off and connections with bounded TCP keepalives, user
/// timeout and per-host connect timeout, each unless the URL sets its own.
///
/// Errors: a URL or TLS setting the driver refuses.
fn parse_url(url: &str) -> Result<(tokio_postgres::Config, tls::MakeRustls), String> {
    let (url, settings) = tls::split(url).map_err(|e| format!("invalid database URL: {e}"))?;
    let mut config: tokio_postgres::Config = url
        .parse()
        .map_err(|e| format!("invalid database URL: {e}"))?;
    if config.get_application_name().is_none() {
        config.application_name("loft");
    }
    // Loft's statements are short ones on indexes, which JIT compilation never pays for;
    // but a statement whose estimated cost passes `jit_above_cost` (PostgreSQL's default
    // `jit = on`) is compiled on every call. bench/backlog measured it: once a FIFO queue
    // held ~100,000 messages, the FIFO send's INSERT (planned per call) crossed it and
    // spent 512 ms a call compiling 107 functions, sends falling from ~1,350 to 10-60 a
    // second. Off for Loft's sessions unless the URL's `options` set `jit` itself.
    let options = config.get_options().unwrap_or("").to_owned();
    if !options.contains("jit") {
        config.options(format!("{options} -c jit=off").trim_start());
    }
    // A connection whose server vanished without closing it (a failed-over primary's
    // machine gone, a network partition) otherwise waits on TCP for hours: the kernel's
    // keepalive starts after 2 h idle, and data never acknowledged is retried for about
    // 15 min. The wake-up listener is idle by design, so it would stay on the old primary
    // and long polls would miss their wake-ups. Unless the URL sets them: keepalive probes
    // after 10 s idle, every 5 s, 3 unanswered close the connection (about 25 s), and so
    // does data unacknowledged for 20 s (the URL's keepalives_idle, keepalives_interval,
    // keepalives_retries, and tcp_user_timeout, which tokio-postgres reads in seconds).
    if !url.contains("keepalives_idle") {
        config.keepalives_idle(KEEPALIVE_IDLE);
    }
    if !url.contains("keepalives_interval") {
        config.keepalives_interval(KEEPALIVE_INTERVAL);
    }
    if !url.contains("keepalives_retries") {
        config.keepalives_retries(KEEPALIVE_RETRIES);
    }
    if !url.contains("tcp_user_timeout") {
        config.tcp_user_timeout(TCP_USER_TIMEOUT);
    }
    if !url.contains("connect_timeout") {
        config.connect_timeout(HOST_CONNECT_TIMEOUT);
    }
    Ok((config, tls::connector(&settings)?))
}

/// An error and its sources, `: `-separated (the driver's own message is often only
/// "error performing TLS handshake").
fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

/// The longest a connection outside the pool (at start, the wake-up listener's) may
/// take to open: a database that accepts and never answers fails the start, or makes
/// the listener try again, instead of hanging it.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Opens one connection outside the pool, its connection task spawned.
async fn connect_one(
    config: &tokio_postgres::Config,
    tls: &tls::MakeRustls,
) -> Result<(tokio_postgres::Client, JoinHandle<()>), String> {
    let (client, connection) = tokio::time::timeout(CONNECT_TIMEOUT, config.connect(tls.clone()))
        .await
        .map_err(|_| {
            format!(
                "cannot connect to PostgreSQL: no answer within {} s",
                CONNECT_TIMEOUT.as_secs()
            )
        })?
        .map_err(|e| format!("cannot connect to PostgreSQL: {}", chain(&e)))?;
    let task = tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::debug!(error = %e, "PostgreSQL connection ended");
        }
    });
    Ok((client, task))
}

impl PgStore {
    /// Connects to the database at `url`, migrates its schema to [`SCHEMA_VERSION`] (under
    /// an advisory lock, so several nodes may start at once) and starts the wake-up
    /// listener.
    ///
    /// Errors: the URL is invalid, the server cannot be reached, or the schema is newer than
    /// this build.
    pub async fn connect(url: &str, options: PgOptions) -> Result<PgStore, String> {
        let (mut config, tls) = parse_url(url)?;
        let channel = match &options.schema {
            Some(schema) => {
                check_schema_name(schema)?;
                // Created by `migrate`, under its lock (CREATE SCHEMA IF NOT EXISTS alone
                // races with itself).
                let options = config.get_options().unwrap_or("").to_owned();
                config.options(format!("{options} -c search_path={schema}").trim_start());
                format!("loft_wakeup_{schema}")
            }
            None => "loft_wakeup".to_owned(),
        };
        let (channel, receipt_key) = {
            let (mut client, task) = connect_one(&config, &tls).await?;
            migrations::migrate(&mut client, options.schema.as_deref()).await?;
            let receipt_key = load_receipt_key(&client).await?;
            // Deployments in different schemas of one database (through the URL's
            // search_path) get different channels too.
            let schema: Option<String> = client
                .query_one("SELECT current_schema()", &[])
                .await
                .map_err(|e| e.to_string())?
                .get(0);
            drop(client);
            let _ = task.await;
            let channel = match schema.as_deref() {
                Some(s) if options.schema.is_none() && s != "public" => {
                    let mut c = format!("loft_wakeup_{s}");
                    c.truncate(63);
                    c
                }
                _ => channel,
            };
            (channel, receipt_key)
        };
        let manager = Manager::from_config(
            config.clone(),
            tls.clone(),
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(options.pool_size.max(1))
            .runtime(Runtime::Tokio1)
            .create_timeout(Some(Duration::from_secs(10)))
            .wait_timeout(Some(Duration::from_secs(30)))
            .recycle_timeout(Some(Duration::from_secs(5)))
            .build()
            .map_err(|e| e.to_string())?;
        let health = health::Health::new(config.clone(), tls.clone());
        let db = Db {
            pool: pool.clone(),
            health: health.clone(),
        };
        let (wakeups, _) = broadcast::channel(4096);
        let (catalog_changes, _) = broadcast::channel(1024);
        let listener = tokio::spawn(listen(
            config,
            tls,
            channel.clone(),
            wakeups.clone(),
            catalog_changes.clone(),
        ));
        let sends = group::Combiner::new(
            group_flights(),
            GROUP_MAX_MESSAGES,
            send_runner(db.clone(), channel.clone()),
        );
        let deletes = group::Combiner::new(
            group_flights(),
            GROUP_MAX_MESSAGES,
            delete_runner(db.clone()),
        );
        let sealer = Arc::new(Sealer::new(KeySource::Missing));
        let receives = receive_combiner(&db, &channel, &sealer);
        Ok(PgStore {
            pool,
            channel,
            wakeups,
            catalog_changes,
            listener,
            fair: std::sync::Mutex::default(),
            floors: std::sync::Mutex::default(),
            sealer,
            sends,
            deletes,
            receives,
            receipt_key,
            cell_ids: std::sync::OnceLock::new(),
            health,
        })
    }

    /// The same store, sealing and opening encrypted queues' messages with the master key
    /// `source` gives. Every node on one database needs the same key.
    pub fn with_key_source(mut self, source: KeySource) -> Self {
        self.sealer = Arc::new(Sealer::new(source));
        // The receive groups open messages with the new sealer.
        self.receives = receive_combiner(
            &Db {
                pool: self.pool.clone(),
                health: self.health.clone(),
            },
            &self.channel,
            &self.sealer,
        );
        self
    }

    /// Creates `schema` when missing, under the migration lock (for deployments that put
    /// Loft in a schema through the URL's `options=-c search_path=...`).
    ///
    /// Errors: the server cannot be reached or refuses.
    pub async fn create_schema(url: &str, schema: &str) -> Result<(), String> {
        check_schema_name(schema)?;
        let (config, tls) = parse_url(url)?;
        let (mut client, task) = connect_one(&config, &tls).await?;
        migrations::create_schema(&mut client, schema).await?;
        drop(client);
        let _ = task.await;
        Ok(())
    }

    /// Drops `schema` and everything in it (tests clean up with this).
    ///
    /// Errors: the server cannot be reached or refuses.
    pub async fn drop_schema(url: &str, schema: &str) -> Result<(), String> {
        check_schema_name(schema)?;
        let (config, tls) = parse_url(url)?;
        let (client, task) = connect_one(&config, &tls).await?;
        client
            .batch_execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"))
            .await
            .map_err(|e| e.to_string())?;
        drop(client);
        let _ = task.await;
        Ok(())
    }

    /// Stops the listener and closes the pool. Later calls fail with `InternalError`.
    pub async fn close(&self) {
        self.listener.abort();
        self.pool.close();
    }

    /// Pool size and use, for metrics: (connections open, idle, callers waiting).
    pub fn pool_status(&self) -> (usize, usize, usize) {
        let s = self.pool.status();
        (s.size, s.available, s.waiting)
    }
}

/// What a notification on the store's channel says.
enum Heard {
    /// Queue `id` may have visible messages.
    Wake(i64),
    /// The catalog row of this store key changed (cells, `moving`).
    Catalog(String),
}

/// LISTENs on `channel` and forwards each notified queue id to `tx` and each
/// `catalog:KEY` payload's store key to `catalog`; reconnects with a backoff when the
/// connection drops, then sends `-1` (wake every long poll, and forget the catalog).
async fn listen(
    config: tokio_postgres::Config,
    tls: tls::MakeRustls,
    channel: String,
    tx: broadcast::Sender<i64>,
    catalog: broadcast::Sender<String>,
) {
    let mut connected_before = false;
    let mut backoff = Duration::from_millis(100);
    loop {
        match tokio::time::timeout(CONNECT_TIMEOUT, config.connect(tls.clone())).await {
            Ok(Ok((client, mut connection))) => {
                let (ntx, mut nrx) = tokio::sync::mpsc::unbounded_channel::<Heard>();
                let driver = tokio::spawn(async move {
                    while let Some(message) =
                        std::future::poll_fn(|cx| connection.poll_message(cx)).await
                    {
                        match message {
                            Ok(AsyncMessage::Notification(n)) => {
                                let heard = match n.payload().parse::<i64>() {
                                    Ok(id) => Some(Heard::Wake(id)),
                                    Err(_) => n
                                        .payload()
                                        .strip_prefix("catalog:")
                                        .map(|key| Heard::Catalog(key.to_owned())),
                                };
                                if let Some(heard) = heard {
                                    if ntx.send(heard).is_err() {
                                        break;
                                    }
                                }
                            }
                            Ok(_) => {}
                            Err(e) => {
                                tracing::warn!(error = %e, "PostgreSQL listener connection failed");
                                break;
                            }
                        }
                    }
                });
                match client.batch_execute(&format!("LISTEN \"{channel}\"")).await {
                    Ok(()) => {
                        backoff = Duration::from_millis(100);
                        if connected_before {
                            tracing::info!("PostgreSQL listener reconnected");
                            let _ = tx.send(-1);
                        }
                        connected_before = true;
                        while let Some(heard) = nrx.recv().await {
                            match heard {
                                Heard::Wake(id) => {
                                    let _ = tx.send(id);
                                }
                                Heard::Catalog(key) => {
                                    let _ = catalog.send(key);
                                }
                            }
                        }
                    }
                    Err(e) => tracing::warn!(error = %e, "PostgreSQL LISTEN failed"),
                }
                driver.abort();
            }
            Ok(Err(e)) => tracing::warn!(error = %chain(&e), "PostgreSQL listener cannot connect"),
            Err(_) => tracing::warn!("PostgreSQL listener cannot connect: no answer"),
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_secs(5));
    }
}

/// Whether PostgreSQL rolled the transaction back for a reason that a new try may not meet
/// (deadlock, serialization failure).
fn retryable(f: &Failure) -> bool {
    match f {
        Failure::Db(e) => e.code().is_some_and(|c| {
            *c == tokio_postgres::error::SqlState::T_R_DEADLOCK_DETECTED
                || *c == tokio_postgres::error::SqlState::T_R_SERIALIZATION_FAILURE
        }),
        Failure::Broken(_) | Failure::Sealing(_) => false,
    }
}

/// Runs `$body` (an expression using the pooled client `$c`, giving a future of
/// `Result<T, Failure>`), retrying deadlocks and serialization failures, and failing to get
/// a connection, with a short backoff.
///
/// On a cell ([`health`]): fails at once with `ServiceUnavailable` while the cell is down;
/// a connection that has not come, or a statement that has not answered, within
/// [`health::DEADLINE`] is awaited only if a probe of the database answers (a busy pool, a
/// slow statement), else the cell is marked down (and the statement's connection dropped);
/// a broken connection marks it down too.
macro_rules! run {
    ($self:ident, |$c:ident| $body:expr) => {{
        let health = &$self.health;
        let deadline = health.deadline();
        let mut attempt = 0u32;
        loop {
            if let Err(e) = health.check() {
                break Err(e);
            }
            // `None`: no connection within the deadline, and the database does not answer
            // a probe either (a pool only busy, the probe answering, is waited for).
            let got = match deadline {
                Some(d) => {
                    let get = $self.pool.get();
                    tokio::pin!(get);
                    match tokio::time::timeout(d, &mut get).await {
                        Ok(got) => Some(got),
                        Err(_) if health.probe().await => Some(get.await),
                        Err(_) => None,
                    }
                }
                None => Some($self.pool.get().await),
            };
            #[allow(unused_mut)]
            let mut $c = match got {
                Some(Ok(c)) => c,
                Some(Err(e)) => {
                    if deadline.is_some() && health::pool_lost(&e) {
                        break Err(health.trip(&format!("pool: {}", chain(&e))));
                    }
                    if attempt < 3 {
                        attempt += 1;
                        tokio::time::sleep(Duration::from_millis(50 << attempt)).await;
                        continue;
                    }
                    break Err(Error::internal(format!("PostgreSQL pool: {}", chain(&e))));
                }
                None => break Err(health.trip(&"no connection, and no answer to a probe")),
            };
            // `None`: the statement did not answer and the database does not either.
            let outcome: Option<std::result::Result<_, Failure>> = {
                let work = $body;
                tokio::pin!(work);
                match deadline {
                    None => Some(work.await),
                    Some(d) => match tokio::time::timeout(d, &mut work).await {
                        Ok(o) => Some(o),
                        Err(_) if health.probe().await => Some(work.await),
                        Err(_) => None,
                    },
                }
            };
            let Some(outcome) = outcome else {
                // Not back into the pool: the connection may never answer.
                drop(deadpool_postgres::Object::take($c));
                break Err(health.trip(&"a statement and a probe did not answer"));
            };
            match outcome {
                Ok(v) => break Ok(v),
                Err(e) if retryable(&e) && attempt < MAX_RETRIES => {
                    attempt += 1;
                    drop($c);
                    let jitter = rand::random::<u64>() % (5 << attempt.min(6));
                    tokio::time::sleep(Duration::from_millis(jitter)).await;
                }
                Err(Failure::Db(e)) if $crate::postgres::moving::is_moved(&e) => {
                    break Err($crate::postgres::moving::moved_error())
                }
                Err(Failure::Db(e)) if deadline.is_some() && health::connection_lost(&e) => {
                    break Err(health.trip(&chain(&e)));
                }
                Err(e) => break Err(Error::internal(format!("PostgreSQL: {e}"))),
            }
        }
    }};
}

/// Like [`run!`], with `$body` inside a transaction `$tx` that commits when it succeeds.
macro_rules! run_tx {
    ($self:ident, |$tx:ident| $body:expr) => {
        run!($self, |c| async {
            let $tx = c.transaction().await?;
            let v = $body.await?;
            $tx.commit().await?;
            Ok::<_, Failure>(v)
        })
    };
}

// After the macros: the cell's catalog statements run through `run!` too.
mod cell;
mod moving;
pub use moving::{PendingMove, QueueImage, MOVED_STATE};

/// The pool a group runner takes its connection from, and the database's health
/// ([`run!`] needs a `pool` and a `health`).
#[derive(Clone)]
struct Db {
    pool: Pool,
    health: Arc<health::Health>,
}

/// Runs a send group: every job's messages in one INSERT statement (one commit), each job
/// answered with its own messages' rows. A group of several that fails for a reason a
/// retry does not cure runs again job by job, so only the failing job fails.
fn send_runner(base: Db, channel: String) -> group::Runner<SendJob, Vec<SentMessage>> {
    Arc::new(move |jobs: Vec<SendJob>| {
        let db = base.clone();
        let channel = channel.clone();
        Box::pin(async move {
            let counts: Vec<usize> = jobs.iter().map(Vec::len).collect();
            let all: Vec<(i64, NewMessage)> = if jobs.len() == 1 {
                jobs.into_iter().next().unwrap_or_default()
            } else {
                jobs.into_iter().flatten().collect()
            };
            let together: Result<Vec<SentMessage>> =
                run!(db, |c| ops::send_messages_fast(&c, &all, &channel));
            match together {
                Ok(sent) if sent.len() == all.len() => {
                    let mut sent = sent.into_iter();
                    counts
                        .iter()
                        .map(|n| Ok(sent.by_ref().take(*n).collect()))
                        .collect()
                }
                Ok(_) => counts
                    .iter()
                    .map(|_| Err(Error::internal("PostgreSQL: an insert lost rows")))
                    .collect(),
                Err(e) if counts.len() == 1 => vec![Err(e)],
                Err(_) => {
                    let mut out = Vec::with_capacity(counts.len());
                    let mut rest = all.as_slice();
                    for n in counts {
                        let (job, tail) = rest.split_at(n);
                        rest = tail;
                        out.push(run!(db, |c| ops::send_messages_fast(&c, job, &channel)));
                    }
                    out
                }
            }
        })
    })
}

/// Runs a delete group: every job's entries in one DELETE statement (one commit), the
/// outcomes as if the jobs ran one after another in queue order. Falls back to job by job
/// as [`send_runner`] does.
fn delete_runner(base: Db) -> group::Runner<DeleteJob, Vec<DeleteOutcome>> {
    Arc::new(move |jobs: Vec<DeleteJob>| {
        let db = base.clone();
        Box::pin(async move {
            let all: Vec<ops::DeleteItem> = jobs.iter().flatten().copied().collect();
            let together: Result<Vec<(bool, bool)>> = run!(db, |c| ops::delete_in_queues(&c, &all));
            let mut gone = std::collections::HashSet::new();
            match together {
                Ok(checked) => {
                    let mut at = 0;
                    jobs.iter()
                        .map(|job| {
                            let part = &checked[at..at + job.len()];
                            at += job.len();
                            Ok(ops::delete_outcomes(job, part, &mut gone))
                        })
                        .collect()
                }
                Err(e) if jobs.len() == 1 => vec![Err(e)],
                Err(_) => {
                    let mut out = Vec::with_capacity(jobs.len());
                    for job in &jobs {
                        let one: Result<Vec<(bool, bool)>> =
                            run!(db, |c| ops::delete_in_queues(&c, job));
                        out.push(one.map(|checked| ops::delete_outcomes(job, &checked, &mut gone)));
                    }
                    out
                }
            }
        })
    })
}

/// The one place this store opens what may hold sealed text ([`Sealer::opened`]): what
/// [`PgStore::read_opened`] read back, after its transaction, and each message a receive
/// claims ([`crate::seal::Claiming`]), inside the receive's transaction
/// ([`ops::receive_steps`], [`ops::receive_fifo`]).
///
/// Errors: as the type's [`Open`] says.
fn opened<T: Open>(sealer: &Sealer, stored: T) -> Result<T::Opened> {
    sealer.opened(stored)
}

/// The receive combiner of a store on `pool`, notifying `channel`, opening with `sealer`.
fn receive_combiner(
    db: &Db,
    channel: &str,
    sealer: &Arc<Sealer>,
) -> Arc<group::Combiner<ReceiveJob, ops::StepOutcome>> {
    group::Combiner::new(
        group_flights(),
        GROUP_MAX_MESSAGES,
        receive_runner(db.clone(), channel.to_owned(), sealer.clone()),
    )
}

/// Runs a receive group: every job's step in one transaction ([`ops::receive_steps`]:
/// one claim statement per queue's set of steps, the statements pipelined, one commit),
/// each job answered with its own step's
/// outcome. Falls back to job by job as [`send_runner`] does.
fn receive_runner(
    base: Db,
    channel: String,
    sealer: Arc<Sealer>,
) -> group::Runner<ReceiveJob, ops::StepOutcome> {
    Arc::new(move |jobs: Vec<ReceiveJob>| {
        let db = base.clone();
        let channel = channel.clone();
        let sealer = sealer.clone();
        Box::pin(async move {
            let together: Result<Vec<ops::StepOutcome>> =
                run_tx!(db, |tx| ops::receive_steps(&tx, &jobs, &channel, &sealer));
            match together {
                Ok(out) if out.len() == jobs.len() => out.into_iter().map(Ok).collect(),
                Ok(_) => jobs
                    .iter()
                    .map(|_| Err(Error::internal("PostgreSQL: a receive group lost steps")))
                    .collect(),
                Err(e) if jobs.len() == 1 => vec![Err(e)],
                Err(_) => {
                    let mut out = Vec::with_capacity(jobs.len());
                    for job in &jobs {
                        let one: Result<Vec<ops::StepOutcome>> =
                            run_tx!(db, |tx| ops::receive_steps(
                                &tx,
                                std::slice::from_ref(job),
                                &channel,
                                &sealer
                            ));
                        out.push(one.and_then(|mut o| {
                            o.pop().ok_or_else(|| {
                                Error::internal("PostgreSQL: a receive step gave no outcome")
                            })
                        }));
                    }
                    out
                }
            }
        })
    })
}

impl PgStore {
    /// Seals `plain` ([`Sealer::sealed`]) and writes it with `write`: the one way this
    /// store writes what may hold text the service asked to seal.
    async fn write_sealed<P, T, F, Fut>(&self, plain: P, write: F) -> Result<T>
    where
        P: Seal,
        F: FnOnce(P::Sealed) -> Fut,
        Fut: std::future::Future<Output = Result<T>>,
    {
        write(self.sealer.sealed(plain)?).await
    }

    /// Reads with `read` and opens what it read ([`opened`]): the one way this store
    /// hands out what may hold sealed text (a receive's claims are opened inside its
    /// transaction, by [`ops`], through [`opened`] too).
    async fn read_opened<T: Open>(
        &self,
        read: impl std::future::Future<Output = Result<T>>,
    ) -> Result<T::Opened> {
        opened(&self.sealer, read.await?)
    }

    /// Stores sealed `messages` ([`Store::send_messages`]).
    async fn send_sealed(&self, messages: Vec<(i64, NewMessage)>) -> Result<Vec<SentMessage>> {
        let channel = self.channel.as_str();
        // The send makes these queues fair (or they were already).
        let fair: Vec<i64> = messages
            .iter()
            .filter(|(_, m)| m.dedup.is_none() && m.group_id.is_some())
            .map(|(q, _)| *q)
            .collect();
        let sent = if ops::needs_transaction(&messages) {
            run_tx!(self, |tx| ops::send_messages_in(&tx, &messages, channel))
        } else if messages.is_empty() {
            Ok(Vec::new())
        } else {
            // Standard sends join a group commit with this node's concurrent ones.
            let weight = messages.len();
            let bytes: usize = messages.iter().map(|(_, m)| m.body.len()).sum();
            // A send of many bytes counts as a full group of its own.
            let weight = if bytes >= GROUP_MAX_BYTES {
                GROUP_MAX_MESSAGES
            } else {
                weight.max(bytes * GROUP_MAX_MESSAGES / GROUP_MAX_BYTES)
            };
            self.sends.submit(messages, weight).await
        }?;
        let mut known = self.fair.lock().unwrap_or_else(|p| p.into_inner());
        for q in fair {
            known.insert(q, (true, std::time::Instant::now()));
        }
        Ok(sent)
    }

    /// A standard queue's receive ([`Store::receive`]), in steps that join this node's
    /// concurrent ones ([`receive_runner`]).
    async fn receive_standard(&self, request: ReceiveRequest) -> Result<ReceiveOutcome> {
        let want = request.max_messages as usize;
        let mut out = ReceiveOutcome::default();
        if want == 0 {
            return Ok(out);
        }
        if request.receipt_tokens.len() < want {
            return Err(Error::internal("fewer receipt tokens than messages"));
        }
        // A fair queue is read in fair-key order first, then, when its keyed messages run
        // short, in the plain order (see `Store::receive`).
        let mut fair = !request.send_order && self.is_fair(request.queue_id).await?;
        // Receipt tokens not handed out yet, and the messages passed over because they
        // cannot be opened (each step's transaction put them back as they were).
        let mut tokens: Vec<i64> = request.receipt_tokens[..want].to_vec();
        let mut passed: Vec<i64> = Vec::new();
        loop {
            let need = (want - out.messages.len()) as i64;
            let skip: Vec<i64> = out
                .messages
                .iter()
                .map(|m| m.seq)
                .chain(passed.iter().copied())
                .collect();
            // The plain order's claims start at the queue's floor while it is fresh.
            let plain = !fair && !request.send_order;
            let floor = if plain {
                self.floor(request.queue_id)
            } else {
                None
            };
            // Standard receive steps join a group with this node's concurrent ones.
            let job = ReceiveJob {
                request: request.clone(),
                tokens: tokens.clone(),
                fair,
                skip,
                floor: floor.map_or(i64::MIN, |(f, _)| f),
                dlq_elsewhere: self.dlq_elsewhere(&request),
            };
            let step = self.receives.submit(job, tokens.len()).await?;
            if plain {
                self.set_floor(request.queue_id, floor, step.lowest_claimed);
            }
            let candidates = step.candidates;
            let next = step.next;
            passed.extend(step.passed);
            out.undecryptable.extend(step.undecryptable);
            tokens.retain(|t| !step.messages.iter().any(|m| m.receipt_token == *t));
            out.messages.extend(step.messages);
            out.dead_lettered += step.dead;
            if out.messages.len() < want && candidates < need && fair {
                fair = false;
                continue;
            }
            if out.messages.len() >= want || candidates < need {
                if out.messages.len() < want {
                    // Here the candidates ran short (`candidates < need`), so the step
                    // read `next`. Messages claimed by this receive are hidden too (the
                    // statement's snapshot saw them visible).
                    let claimed = (!out.messages.is_empty() && request.visibility_ms > 0)
                        .then_some(request.now_ms + request.visibility_ms);
                    out.next_visible_at_ms = match (next, claimed) {
                        (Some(a), Some(b)) => Some(a.min(b)),
                        (a, b) => a.or(b),
                    };
                }
                return Ok(out);
            }
        }
    }

    /// Whether `request`'s dead-letter queue is in another cell: this store is a cell
    /// and the queue's id lies outside its range (see `crate::cells`). Never for a store
    /// opened alone, whose receives move dead letters as they always did.
    fn dlq_elsewhere(&self, request: &ReceiveRequest) -> bool {
        match (self.cell_ids.get(), &request.redrive) {
            (Some(range), Some(rule)) => !range.contains(&rule.dlq_queue_id),
            _ => false,
        }
    }

    /// Whether queue `queue_id` is fair, from [`PgStore::fair`] or its row.
    async fn is_fair(&self, queue_id: i64) -> Result<bool> {
        {
            let known = self.fair.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((fair, at)) = known.get(&queue_id) {
                if *fair || at.elapsed() < FAIR_RECHECK {
                    return Ok(*fair);
                }
            }
        }
        let fair = run!(self, |c| ops::queue_is_fair(&c, queue_id))?;
        self.fair
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(queue_id, (fair, std::time::Instant::now()));
        Ok(fair)
    }

    /// The queue's claim floor and when its walk from the start ran, while younger than
    /// [`FLOOR_RESCAN`]; `None`: the next claim walks from the start.
    fn floor(&self, queue_id: i64) -> Option<(i64, std::time::Instant)> {
        let floors = self.floors.lock().unwrap_or_else(|p| p.into_inner());
        floors
            .get(&queue_id)
            .copied()
            .filter(|(_, since)| since.elapsed() < FLOOR_RESCAN)
    }

    /// Records a plain-order claim of the queue that started at `used` (`None`: at the
    /// start of the index) and whose lowest claimed `visible_at` was `lowest`: the floor
    /// moves there (a walk from the start also renews the floor's age); a claim of none
    /// keeps the floor, or drops it after a walk from the start.
    fn set_floor(
        &self,
        queue_id: i64,
        used: Option<(i64, std::time::Instant)>,
        lowest: Option<i64>,
    ) {
        let mut floors = self.floors.lock().unwrap_or_else(|p| p.into_inner());
        match (lowest, used) {
            (Some(low), Some((_, since))) => {
                floors.insert(queue_id, (low, since));
            }
            (Some(low), None) => {
                floors.insert(queue_id, (low, std::time::Instant::now()));
            }
            (None, Some(_)) => {}
            (None, None) => {
                floors.remove(&queue_id);
            }
        }
    }

    /// The master key kept in the database for nodes started without a key file: made
    /// (random, from the system's CSPRNG) by the first node that asks, read by every other,
    /// so all nodes of one database seal and open with one key. A database dump then holds
    /// the key beside the sealed rows: a key file (`--sse-key-file`) keeps it apart.
    ///
    /// Errors: `InternalError` when the database cannot be reached or its row does not hold
    /// a key.
    pub async fn database_master_key(&self) -> Result<crate::seal::MasterKey> {
        let fresh = crate::seal::MasterKey::generate().to_base64();
        let text: String = run!(self, |c| async {
            c.execute(
                "INSERT INTO sse_master_key (id, key) VALUES (1, $1) ON CONFLICT (id) DO NOTHING",
                &[&fresh],
            )
            .await?;
            let row = c
                .query_one("SELECT key FROM sse_master_key WHERE id = 1", &[])
                .await?;
            Ok::<String, Failure>(row.get(0))
        })?;
        crate::seal::MasterKey::from_base64(&text).ok_or_else(|| {
            Error::internal("the database's sse_master_key row does not hold a Loft master key")
        })
    }

    /// What the database says about its master key, read at start: the recorded check
    /// value and one sealed message body, if any (see [`crate::seal::verify_master_key`]).
    ///
    /// Errors: `InternalError` when the database cannot be reached.
    pub async fn master_key_probe(&self) -> Result<crate::seal::KeyProbe> {
        run!(self, |c| async {
            let check = c
                .query_opt("SELECT check_value FROM sse_key_check WHERE id = 1", &[])
                .await?
                .map(|r| r.get(0));
            let sealed_body = c
                .query_opt("SELECT body FROM messages WHERE sealed <> 0 LIMIT 1", &[])
                .await?
                .map(|r| r.get(0));
            Ok::<_, Failure>(crate::seal::KeyProbe { check, sealed_body })
        })
    }

    /// Records `check` as the check value of the database's master key
    /// ([`crate::seal::MasterKey::check_value`]), replacing any earlier one.
    ///
    /// Errors: as [`PgStore::master_key_probe`].
    pub async fn record_master_key_check(&self, check: &str) -> Result<()> {
        run!(self, |c| async {
            c.execute(
                "INSERT INTO sse_key_check (id, check_value) VALUES (1, $1) \
                 ON CONFLICT (id) DO UPDATE SET check_value = EXCLUDED.check_value",
                &[&check],
            )
            .await?;
            Ok::<_, Failure>(())
        })
    }

    /// Whether this store's connections to the server are encrypted (TLS).
    ///
    /// Errors: `InternalError` when the server cannot be reached.
    pub async fn uses_tls(&self) -> Result<bool> {
        run!(self, |c| async {
            let row = c
                .query_one(
                    "SELECT COALESCE((SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()), \
                     false)",
                    &[],
                )
                .await?;
            Ok::<bool, Failure>(row.get(0))
        })
    }
}

#[async_trait]
impl Store for PgStore {
    fn receipt_key(&self) -> ReceiptKey {
        self.receipt_key.clone()
    }

    async fn create_queue(
        &self,
        name: &str,
        attributes: BTreeMap<String, String>,
        tags: BTreeMap<String, String>,
        now_ms: i64,
    ) -> Result<(QueueRecord, bool)> {
        run!(self, |c| ops::create_queue(
            &c,
            name,
            &attributes,
            &tags,
            now_ms
        ))
    }

    async fn get_queue(&self, name: &str) -> Result<Option<QueueRecord>> {
        run!(self, |c| ops::get_queue(&c, name))
    }

    async fn list_queues(&self) -> Result<Vec<QueueRecord>> {
        run!(self, |c| ops::list_queues(&c))
    }

    async fn list_queues_of(&self, prefix: &str, bare: bool) -> Result<Vec<QueueRecord>> {
        run!(self, |c| ops::list_queues_of(&c, prefix, bare))
    }

    async fn count_queues(&self) -> Result<u64> {
        run!(self, |c| ops::count_rows(&c, "queues"))
    }

    async fn count_queues_of(&self, prefix: &str, bare: bool) -> Result<u64> {
        run!(self, |c| ops::count_rows_of(&c, "queues", prefix, bare))
    }

    async fn delete_queue(&self, queue_id: i64, recreate_after_ms: i64) -> Result<bool> {
        run!(self, |c| ops::delete_queue(&c, queue_id, recreate_after_ms))
    }

    async fn queue_recreate_after(&self, name: &str) -> Result<Option<i64>> {
        run!(self, |c| ops::queue_recreate_after(&c, name))
    }

    async fn set_queue_attributes(
        &self,
        queue_id: i64,
        attributes: BTreeMap<String, String>,
        now_ms: i64,
    ) -> Result<()> {
        run!(self, |c| ops::set_queue_attributes(
            &c,
            queue_id,
            &attributes,
            now_ms
        ))
    }

    async fn set_queue_tags(&self, queue_id: i64, tags: BTreeMap<String, String>) -> Result<()> {
        run!(self, |c| ops::set_queue_tags(&c, queue_id, &tags))
    }

    async fn send_messages(&self, messages: Vec<(i64, NewMessage)>) -> Result<Vec<SentMessage>> {
        self.write_sealed(messages, |messages| self.send_sealed(messages))
            .await
    }

    async fn receive(&self, request: ReceiveRequest) -> Result<ReceiveOutcome> {
        if request.fifo {
            let channel = self.channel.as_str();
            let sealer = self.sealer.as_ref();
            let elsewhere = self.dlq_elsewhere(&request);
            return self
                .read_opened(async {
                    run_tx!(self, |tx| ops::receive_fifo(
                        &tx, &request, channel, sealer, elsewhere
                    ))
                })
                .await;
        }
        self.receive_standard(request).await
    }

    async fn delete_message(
        &self,
        queue_id: i64,
        seq: i64,
        strict: Option<(i64, i64)>,
    ) -> Result<DeleteOutcome> {
        let mut out = self
            .deletes
            .submit(vec![(queue_id, seq, strict)], 1)
            .await?;
        out.pop()
            .ok_or_else(|| Error::internal("PostgreSQL: a delete gave no outcome"))
    }

    async fn delete_messages(
        &self,
        queue_id: i64,
        items: Vec<(i64, Option<(i64, i64)>)>,
    ) -> Result<Vec<DeleteOutcome>> {
        if items.is_empty() {
            return Ok(Vec::new());
        }
        let n = items.len();
        let job: DeleteJob = items.into_iter().map(|(s, t)| (queue_id, s, t)).collect();
        self.deletes.submit(job, n).await
    }

    async fn delete_message_by_id(&self, queue_id: i64, message_id: &str) -> Result<bool> {
        run!(self, |c| ops::delete_message_by_id(
            &c, queue_id, message_id
        ))
    }

    async fn delete_unnamed_message(&self, queue_id: i64, seq: i64) -> Result<bool> {
        run!(self, |c| ops::delete_unnamed_message(&c, queue_id, seq))
    }

    async fn change_visibility(
        &self,
        queue_id: i64,
        seq: i64,
        receipt_token: Option<i64>,
        now_ms: i64,
        visible_at_ms: i64,
        max_hidden_ms: i64,
    ) -> Result<VisibilityChange> {
        let channel = self.channel.as_str();
        run!(self, |c| ops::change_visibility(
            &c,
            queue_id,
            seq,
            receipt_token,
            now_ms,
            visible_at_ms,
            max_hidden_ms,
            channel
        ))
    }

    async fn move_messages(
        &self,
        source_queue_id: i64,
        target: MoveTarget,
        new_message_ids: Vec<String>,
        now_ms: i64,
        task: Option<MoveTaskLease>,
    ) -> Result<Option<u64>> {
        let channel = self.channel.as_str();
        let cell = self.cell_ids.get();
        match &task {
            None => run!(self, |c| ops::move_messages(
                &c,
                source_queue_id,
                &target,
                &new_message_ids,
                now_ms,
                channel,
                cell
            ))
            .map(Some),
            Some(lease) => run_tx!(self, |tx| ops::move_step_in(
                &tx,
                source_queue_id,
                &target,
                &new_message_ids,
                now_ms,
                lease,
                channel,
                cell
            )),
        }
    }

    async fn create_move_task(&self, task: MoveTaskRecord) -> Result<bool> {
        run!(self, |c| ops::create_move_task(&c, &task))
    }

    async fn list_move_tasks(&self, source_arn: &str, limit: u32) -> Result<Vec<MoveTaskRecord>> {
        run!(self, |c| ops::list_move_tasks(&c, source_arn, limit))
    }

    async fn cancel_move_task(&self, handle: &str) -> Result<Option<MoveTaskRecord>> {
        run!(self, |c| ops::cancel_move_task(&c, handle))
    }

    async fn claim_move_tasks(
        &self,
        owner: &str,
        now_ms: i64,
        lease_until_ms: i64,
        limit: u32,
    ) -> Result<Vec<MoveTaskRecord>> {
        run!(self, |c| ops::claim_move_tasks(
            &c,
            owner,
            now_ms,
            lease_until_ms,
            limit
        ))
    }

    async fn finish_move_task(
        &self,
        lease: MoveTaskLease,
        status: MoveTaskStatus,
        failure_reason: Option<String>,
    ) -> Result<bool> {
        run!(self, |c| ops::finish_move_task(
            &c,
            &lease,
            status,
            failure_reason.as_deref()
        ))
    }

    async fn release_move_tasks(&self, owner: &str) -> Result<()> {
        run!(self, |c| ops::release_move_tasks(&c, owner))
    }

    async fn purge_queue(
        &self,
        queue_id: i64,
        now_ms: i64,
        next_after_ms: i64,
    ) -> Result<PurgeOutcome> {
        run!(self, |c| ops::purge_queue(
            &c,
            queue_id,
            now_ms,
            next_after_ms
        ))
    }

    async fn queue_counts(&self, queue_id: i64, now_ms: i64) -> Result<QueueCounts> {
        run!(self, |c| ops::queue_counts(&c, queue_id, now_ms))
    }

    async fn archived_messages(
        &self,
        topic_id: i64,
        after_sequence: i64,
        from_ms: i64,
        until_ms: Option<i64>,
        now_ms: i64,
        limit: u32,
    ) -> Result<Vec<ArchivedMessage>> {
        let window = ArchiveWindow {
            topic_id,
            after_sequence,
            from_ms,
            until_ms,
            now_ms,
            limit,
        };
        self.read_opened(async { run!(self, |c| ops::archived_messages(&c, &window)) })
            .await
    }

    async fn delete_archive(&self, topic_id: i64) -> Result<u64> {
        run!(self, |c| ops::delete_archive(&c, topic_id))
    }

    async fn put_replay(&self, replay: ReplayRecord) -> Result<()> {
        run!(self, |c| ops::put_replay(&c, &replay))
    }

    async fn get_replay(&self, subscription: &str) -> Result<Option<ReplayRecord>> {
        run!(self, |c| ops::get_replay(&c, subscription))
    }

    async fn claim_replays(
        &self,
        owner: &str,
        now_ms: i64,
        lease_until_ms: i64,
        limit: u32,
    ) -> Result<Vec<ReplayRecord>> {
        run!(self, |c| ops::claim_replays(
            &c,
            owner,
            now_ms,
            lease_until_ms,
            limit
        ))
    }

    async fn advance_replay(&self, step: ReplayStep) -> Result<Option<ReplayRecord>> {
        let channel = self.channel.as_str();
        self.write_sealed(step, |step| async move {
            run_tx!(self, |tx| ops::advance_replay_in(&tx, &step, channel))
        })
        .await
    }

    async fn release_replays(&self, owner: &str) -> Result<()> {
        run!(self, |c| ops::release_replays(&c, owner))
    }

    async fn fair_groups(&self, queue_id: i64, now_ms: i64) -> Result<Option<Vec<GroupCounts>>> {
        run!(self, |c| ops::fair_groups(&c, queue_id, now_ms))
    }

    async fn count_in_flight(&self, queue_id: i64, now_ms: i64) -> Result<i64> {
        run!(self, |c| ops::count_in_flight(&c, queue_id, now_ms))
    }

    async fn oldest_sent_at(&self, queue_id: i64, now_ms: i64) -> Result<Option<i64>> {
        run!(self, |c| ops::oldest_sent_at(&c, queue_id, now_ms))
    }

    async fn peek_messages(
        &self,
        queue_id: i64,
        after_seq: i64,
        limit: u32,
        now_ms: i64,
    ) -> Result<Vec<StoredMessage>> {
        self.read_opened(async {
            run!(self, |c| ops::peek_messages(
                &c, queue_id, after_seq, limit, now_ms
            ))
        })
        .await
    }

    async fn delete_expired(&self, now_ms: i64) -> Result<u64> {
        run!(self, |c| ops::delete_expired(&c, now_ms))
    }

    async fn create_topic(
        &self,
        name: &str,
        attributes: BTreeMap<String, String>,
        tags: BTreeMap<String, String>,
        now_ms: i64,
    ) -> Result<(TopicRecord, bool)> {
        run!(self, |c| ops::create_topic(
            &c,
            name,
            &attributes,
            &tags,
            now_ms
        ))
    }

    async fn get_topic(&self, name: &str) -> Result<Option<TopicRecord>> {
        run!(self, |c| ops::get_topic(&c, name))
    }

    async fn list_topics(&self) -> Result<Vec<TopicRecord>> {
        run!(self, |c| ops::list_topics(&c))
    }

    async fn list_topics_of(&self, prefix: &str, bare: bool) -> Result<Vec<TopicRecord>> {
        run!(self, |c| ops::list_topics_of(&c, prefix, bare))
    }

    async fn count_topics(&self) -> Result<u64> {
        run!(self, |c| ops::count_rows(&c, "topics"))
    }

    async fn count_topics_of(&self, prefix: &str, bare: bool) -> Result<u64> {
        run!(self, |c| ops::count_rows_of(&c, "topics", prefix, bare))
    }

    async fn reset(&self, scope: Option<ResetScope>) -> Result<ResetCounts> {
        run!(self, |c| ops::reset(&c, scope.as_ref(), &self.channel))
    }

    async fn delete_topic(&self, topic_id: i64) -> Result<bool> {
        run!(self, |c| ops::delete_topic(&c, topic_id))
    }

    async fn set_topic_attributes(
        &self,
        topic_id: i64,
        attributes: BTreeMap<String, String>,
    ) -> Result<()> {
        run!(self, |c| ops::set_topic_json(
            &c,
            topic_id,
            "attributes",
            &attributes
        ))
    }

    async fn set_topic_tags(&self, topic_id: i64, tags: BTreeMap<String, String>) -> Result<()> {
        run!(self, |c| ops::set_topic_json(&c, topic_id, "tags", &tags))
    }

    async fn create_subscription(
        &self,
        topic_id: i64,
        subscription: NewSubscription,
    ) -> Result<SubscriptionRecord> {
        run!(self, |c| ops::create_subscription(
            &c,
            topic_id,
            &subscription
        ))?
        .ok_or_else(|| Error::internal("subscription to a topic that no longer exists"))
    }

    async fn publish(
        &self,
        messages: Vec<(i64, NewMessage)>,
        deliveries: Vec<NewDelivery>,
        records: Vec<RecordedMessage>,
    ) -> Result<Vec<SentMessage>> {
        // A publish of queue copies alone, none keyed (a standard topic's SQS fan-out),
        // is a send: its copies join this node's group commit of concurrent sends, all of
        // them in one INSERT statement (so none is stored without the others), instead of
        // a transaction of its own (BEGIN, INSERT, COMMIT: three round trips and a commit
        // per publish).
        if deliveries.is_empty() && records.is_empty() && !ops::needs_transaction(&messages) {
            return self
                .write_sealed(messages, |messages| self.send_sealed(messages))
                .await;
        }
        let channel = self.channel.as_str();
        self.write_sealed(
            (messages, deliveries, records),
            |(messages, deliveries, records)| async move {
                run_tx!(self, |tx| ops::publish_in(
                    &tx,
                    &messages,
                    &deliveries,
                    &records,
                    channel
                ))
            },
        )
        .await
    }

    async fn publish_fifo(&self, publish: FifoPublish) -> Result<Option<Vec<FifoPublished>>> {
        // The outbox rows of a cell's publish (none for a store opened alone) are left to
        // the relay workers.
        Ok(self
            .publish_fifo_with_outbox(publish)
            .await?
            .map(|(out, _)| out))
    }

    async fn claim_deliveries(
        &self,
        now_ms: i64,
        limit: u32,
        lease_until_ms: i64,
    ) -> Result<Vec<DeliveryRecord>> {
        self.read_opened(async {
            run!(self, |c| ops::claim_deliveries(
                &c,
                now_ms,
                limit,
                lease_until_ms
            ))
        })
        .await
    }

    async fn finish_delivery(&self, id: i64) -> Result<()> {
        run!(self, |c| ops::finish_delivery(&c, id))
    }

    async fn retry_delivery(
        &self,
        id: i64,
        attempts: i64,
        next_at_ms: i64,
        error: &str,
    ) -> Result<()> {
        run!(self, |c| ops::retry_delivery(
            &c, id, attempts, next_at_ms, error
        ))
    }

    async fn retry_invocation(
        &self,
        id: i64,
        attempts: i64,
        function_errors: i64,
        next_at_ms: i64,
        error: &str,
    ) -> Result<()> {
        run!(self, |c| ops::retry_invocation(
            &c,
            id,
            attempts,
            function_errors,
            next_at_ms,
            error
        ))
    }

    async fn next_delivery_at(&self) -> Result<Option<i64>> {
        run!(self, |c| ops::next_delivery_at(&c))
    }

    async fn create_event_source_mapping(
        &self,
        mapping: EventSourceMappingRecord,
    ) -> Result<Option<String>> {
        run!(self, |c| ops::create_event_source_mapping(&c, &mapping))
    }

    async fn get_event_source_mapping(
        &self,
        uuid: &str,
    ) -> Result<Option<EventSourceMappingRecord>> {
        run!(self, |c| ops::get_event_source_mapping(&c, uuid))
    }

    async fn list_event_source_mappings(&self) -> Result<Vec<EventSourceMappingRecord>> {
        run!(self, |c| ops::list_event_source_mappings(&c))
    }

    async fn update_event_source_mapping(&self, mapping: EventSourceMappingRecord) -> Result<bool> {
        run!(self, |c| ops::update_event_source_mapping(&c, &mapping))
    }

    async fn delete_event_source_mapping(&self, uuid: &str) -> Result<bool> {
        run!(self, |c| ops::delete_event_source_mapping(&c, uuid))
    }

    async fn claim_event_source_mappings(
        &self,
        owner: &str,
        now_ms: i64,
        lease_until_ms: i64,
        limit: u32,
    ) -> Result<Vec<EventSourceMappingRecord>> {
        run!(self, |c| ops::claim_event_source_mappings(
            &c,
            owner,
            now_ms,
            lease_until_ms,
            limit
        ))
    }

    async fn renew_event_source_mapping(
        &self,
        uuid: &str,
        owner: &str,
        lease_until_ms: i64,
    ) -> Result<Option<EventSourceMappingRecord>> {
        run!(self, |c| ops::renew_event_source_mapping(
            &c,
            uuid,
            owner,
            lease_until_ms
        ))
    }

    async fn release_event_source_mappings(&self, owner: &str) -> Result<()> {
        run!(self, |c| ops::release_event_source_mappings(&c, owner))
    }

    async fn list_deliveries(
        &self,
        subscription: Option<&str>,
        limit: u32,
    ) -> Result<Vec<DeliveryRecord>> {
        self.read_opened(async { run!(self, |c| ops::list_deliveries(&c, subscription, limit)) })
            .await
    }

    async fn list_recorded(
        &self,
        limit: u32,
        account: Option<String>,
    ) -> Result<Vec<RecordedMessage>> {
        self.read_opened(async {
            run!(self, |c| ops::list_recorded(&c, limit, account.as_deref()))
        })
        .await
    }

    async fn delete_recorded(&self, filter: RecordedFilter) -> Result<u64> {
        run!(self, |c| ops::delete_recorded(&c, &filter))
    }

    async fn list_subscriptions(&self, topic_id: Option<i64>) -> Result<Vec<SubscriptionRecord>> {
        run!(self, |c| ops::list_subscriptions(&c, topic_id))
    }

    async fn list_subscriptions_of(
        &self,
        prefix: &str,
        bare: bool,
        subscriber: &str,
    ) -> Result<Vec<SubscriptionRecord>> {
        run!(self, |c| ops::list_subscriptions_of(
            &c, prefix, bare, subscriber
        ))
    }

    async fn get_subscription(&self, uuid: &str) -> Result<Option<SubscriptionRecord>> {
        run!(self, |c| ops::get_subscription(&c, uuid))
    }

    async fn update_subscription(
        &self,
        uuid: &str,
        attributes: BTreeMap<String, String>,
        confirmed: bool,
        token: Option<String>,
    ) -> Result<()> {
        run!(self, |c| ops::update_subscription(
            &c,
            uuid,
            &attributes,
            confirmed,
            &token
        ))
    }

    async fn delete_subscription(&self, uuid: &str) -> Result<bool> {
        run!(self, |c| ops::delete_subscription(&c, uuid))
    }

    async fn create_platform_application(
        &self,
        arn: &str,
        attributes: BTreeMap<String, String>,
    ) -> Result<()> {
        run!(self, |c| ops::create_platform_application(
            &c,
            arn,
            &attributes
        ))
    }

    async fn create_platform_endpoint(
        &self,
        application_arn: &str,
        arn: &str,
        token: &str,
        attributes: BTreeMap<String, String>,
    ) -> Result<Option<String>> {
        loop {
            let got = run!(self, |c| ops::create_platform_endpoint(
                &c,
                application_arn,
                arn,
                token,
                &attributes
            ))?;
            if let Some(v) = got {
                return Ok(v);
            }
        }
    }

    async fn get_platform(&self, arn: &str) -> Result<Option<PlatformRecord>> {
        run!(self, |c| ops::get_platform(&c, arn))
    }

    async fn list_platform_applications(&self) -> Result<Vec<PlatformRecord>> {
        run!(self, |c| ops::list_platform_applications(&c))
    }

    async fn list_platform_endpoints(&self, application_arn: &str) -> Result<Vec<PlatformRecord>> {
        run!(self, |c| ops::list_platform_endpoints(&c, application_arn))
    }

    async fn update_platform_attributes(
        &self,
        arn: &str,
        attributes: BTreeMap<String, String>,
        token: Option<String>,
    ) -> Result<bool> {
        run_tx!(self, |tx| ops::update_platform_attributes_in(
            &tx,
            arn,
            &attributes,
            token.as_deref()
        ))
    }

    async fn delete_platform(&self, arn: &str) -> Result<()> {
        run!(self, |c| ops::delete_platform(&c, arn))
    }

    async fn sms_attributes(&self, scope: &str) -> Result<BTreeMap<String, String>> {
        run!(self, |c| ops::sms_attributes(&c, scope))
    }

    async fn set_sms_attributes(
        &self,
        scope: &str,
        attributes: BTreeMap<String, String>,
    ) -> Result<()> {
        run_tx!(self, |tx| ops::set_sms_attributes(&tx, scope, &attributes))
    }

    async fn sms_sandbox_numbers(&self, scope: &str) -> Result<Vec<SmsSandboxNumber>> {
        run!(self, |c| ops::sms_sandbox_numbers(&c, scope))
    }

    async fn put_sms_sandbox_number(&self, scope: &str, number: SmsSandboxNumber) -> Result<()> {
        run!(self, |c| ops::put_sms_sandbox_number(&c, scope, &number))
    }

    async fn delete_sms_sandbox_number(&self, scope: &str, phone_number: &str) -> Result<bool> {
        run!(self, |c| ops::delete_sms_sandbox_number(
            &c,
            scope,
            phone_number
        ))
    }

    fn wakeups(&self) -> Option<broadcast::Receiver<i64>> {
        Some(self.wakeups.subscribe())
    }
}

mod outbox;

pub use outbox::{MovedCopy, OutboxRow};

#[cfg(test)]
mod tests {
    use super::parse_url;

    /// Loft's sessions run with JIT off, added to what the URL's `options` say; a URL that
    /// sets `jit` itself keeps its own.
    #[test]
    fn sessions_run_without_jit_unless_the_url_says() {
        let (config, _) = parse_url("postgres://loft@127.0.0.1/loft").unwrap();
        assert_eq!(config.get_options(), Some("-c jit=off"));
        let (config, _) =
            parse_url("postgres://loft@127.0.0.1/loft?options=-c%20search_path%3Dq").unwrap();
        assert_eq!(config.get_options(), Some("-c search_path=q -c jit=off"));
        let (config, _) =
            parse_url("postgres://loft@127.0.0.1/loft?options=-c%20jit%3Don").unwrap();
        assert_eq!(config.get_options(), Some("-c jit=on"));
    }

    /// A connection to a server that vanished is closed within about half a minute: TCP
    /// keepalives after 10 s idle, every 5 s, 3 probes, and 20 s for unacknowledged data;
    /// a host that does not accept is given up after 2 s; a URL that sets any of them
    /// keeps its own (in both URL forms).
    #[test]
    fn connections_notice_a_vanished_server_unless_the_url_says() {
        use std::time::Duration;
        let (config, _) = parse_url("postgres://loft@127.0.0.1/loft").unwrap();
        assert!(config.get_keepalives());
        assert_eq!(config.get_keepalives_idle(), Duration::from_secs(10));
        assert_eq!(
            config.get_keepalives_interval(),
            Some(Duration::from_secs(5))
        );
        assert_eq!(config.get_keepalives_retries(), Some(3));
        assert_eq!(
            config.get_tcp_user_timeout(),
            Some(&Duration::from_secs(20))
        );
        let (config, _) = parse_url(
            "postgres://loft@127.0.0.1/loft?keepalives_idle=60&keepalives_interval=7\
             &keepalives_retries=9&tcp_user_timeout=40",
        )
        .unwrap();
        assert_eq!(config.get_keepalives_idle(), Duration::from_secs(60));
        assert_eq!(
            config.get_keepalives_interval(),
            Some(Duration::from_secs(7))
        );
        assert_eq!(config.get_keepalives_retries(), Some(9));
        assert_eq!(
            config.get_tcp_user_timeout(),
            Some(&Duration::from_secs(40))
        );
        assert_eq!(
            config.get_connect_timeout(),
            Some(&Duration::from_secs(2)),
            "each host of a URL gets 2 s to accept a connection"
        );
        let (config, _) = parse_url("postgres://loft@127.0.0.1/loft?connect_timeout=7").unwrap();
        assert_eq!(config.get_connect_timeout(), Some(&Duration::from_secs(7)));
        let (config, _) =
            parse_url("host=127.0.0.1 user=loft keepalives_idle=30 tcp_user_timeout=50").unwrap();
        assert_eq!(config.get_keepalives_idle(), Duration::from_secs(30));
        assert_eq!(
            config.get_keepalives_interval(),
            Some(Duration::from_secs(5))
        );
        assert_eq!(
            config.get_tcp_user_timeout(),
            Some(&Duration::from_secs(50))
        );
    }
}
