//! Whether a cell's database answers: the bound on each operation of a cell, and the
//! breaker that fails a down cell's operations at once (`crate::cells`).
//!
//! A store opened alone is never armed: its operations wait as long as the pool and the
//! database make them, as before. A store that serves as a cell ([`PgStore::claim_cell`]
//! arms it) bounds each operation ([`run!`]):
//!
//! - A pooled connection that has not come after [`DEADLINE`] (a refused connection
//!   fails at once), or a statement (or transaction) that has not answered after it, is
//!   not yet taken as a failure: a fresh connection [probes](probe) the database, for at
//!   most [`PROBE_TIMEOUT`]. When the probe answers, the database is alive and the pool
//!   only busy or the statement only slow (a purge of a large queue): it is awaited.
//!   When the probe does not, the cell is **down** (a statement's connection is dropped,
//!   not returned to the pool).
//! - A connection that breaks (closed, an I/O error, PostgreSQL shutting down or refusing
//!   connections) makes the cell down as well.
//!
//! While a cell is down every operation on it fails at once with `ServiceUnavailable`
//! (503), so no request waits on it; one task probes it every [`PROBE_EVERY`] and marks it
//! up when a probe answers, so it serves again without a restart. The longest a request
//! waits on a cell that goes down under it is `DEADLINE + PROBE_TIMEOUT` (8 s).
//!
//! [`PgStore::claim_cell`]: super::PgStore
//! [`run!`]: super::PgStore

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use loft_core::error::{Error, ErrorCode};

use super::tls;

/// How long an armed store waits for a pooled connection, and for a statement before it
/// probes the database.
pub const DEADLINE: Duration = Duration::from_secs(5);

/// How long a probe (a fresh connection and `SELECT 1`) may take.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// How often a down cell is probed.
pub const PROBE_EVERY: Duration = Duration::from_millis(500);

/// One database's health, shared by its store and its group runners.
pub(crate) struct Health {
    config: tokio_postgres::Config,
    tls: tls::MakeRustls,
    /// The cell number, once armed; unarmed stores have no deadline and no breaker.
    cell: OnceLock<u32>,
    /// Whether the cell is down (its operations fail at once).
    down: AtomicBool,
}

impl Health {
    /// The health of the database `config` connects to; unarmed.
    pub(crate) fn new(config: tokio_postgres::Config, tls: tls::MakeRustls) -> Arc<Health> {
        Arc::new(Health {
            config,
            tls,
            cell: OnceLock::new(),
            down: AtomicBool::new(false),
        })
    }

    /// Arms the bound and the breaker: this database is cell `number`.
    pub(crate) fn arm(&self, number: u32) {
        let _ = self.cell.set(number);
    }

    /// The bound of one wait, when armed.
    pub(crate) fn deadline(&self) -> Option<Duration> {
        self.cell.get().map(|_| DEADLINE)
    }

    /// Whether the cell is down now.
    pub(crate) fn is_down(&self) -> bool {
        self.down.load(Ordering::Acquire)
    }

    /// `Ok` unless the cell is down; then the error to answer at once.
    pub(crate) fn check(&self) -> loft_core::error::Result<()> {
        if self.is_down() {
            Err(self.unavailable())
        } else {
            Ok(())
        }
    }

    /// `ServiceUnavailable` (503) naming the cell.
    pub(crate) fn unavailable(&self) -> Error {
        let cell = self.cell.get().copied().unwrap_or(1);
        Error::new(
            ErrorCode::ServiceUnavailable,
            format!(
                "The storage cell of this resource (cell {cell}) is unreachable. \
                 Retry later; other queues and topics are served."
            ),
        )
    }

    /// Marks the cell down (when armed) and starts the task that marks it up again.
    /// Returns the error to answer.
    pub(crate) fn trip(self: &Arc<Self>, why: &dyn std::fmt::Display) -> Error {
        let Some(&cell) = self.cell.get() else {
            return Error::internal(format!("PostgreSQL: {why}"));
        };
        if self
            .down
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            tracing::warn!(cell, reason = %why, "cell down: its operations fail until it answers");
            let weak = Arc::downgrade(self);
            tokio::spawn(watch(weak, cell));
        }
        self.unavailable()
    }

    /// Whether a fresh connection gets an answer to `SELECT 1` within [`PROBE_TIMEOUT`].
    pub(crate) async fn probe(&self) -> bool {
        probe(&self.config, &self.tls).await
    }
}

/// Whether a fresh connection to `config` gets an answer to `SELECT 1` within
/// [`PROBE_TIMEOUT`].
async fn probe(config: &tokio_postgres::Config, tls: &tls::MakeRustls) -> bool {
    let attempt = async {
        let (client, connection) = config.connect(tls.clone()).await.ok()?;
        let task = tokio::spawn(connection);
        let answered = client.simple_query("SELECT 1").await.is_ok();
        drop(client);
        task.abort();
        Some(answered)
    };
    matches!(
        tokio::time::timeout(PROBE_TIMEOUT, attempt).await,
        Ok(Some(true))
    )
}

/// Probes a down cell every [`PROBE_EVERY`] until it answers, then marks it up. Ends
/// when the store is dropped.
async fn watch(health: Weak<Health>, cell: u32) {
    loop {
        tokio::time::sleep(PROBE_EVERY).await;
        let Some(h) = health.upgrade() else { return };
        let (config, tls) = (h.config.clone(), h.tls.clone());
        drop(h);
        if probe(&config, &tls).await {
            if let Some(h) = health.upgrade() {
                h.down.store(false, Ordering::Release);
                tracing::info!(cell, "cell up again");
            }
            return;
        }
    }
}

/// Whether `e` says the connection or the server is gone (closed, an I/O error, the
/// server shutting down or not accepting connections), rather than that a statement
/// failed.
pub(crate) fn connection_lost(e: &tokio_postgres::Error) -> bool {
    if e.is_closed() {
        return true;
    }
    if let Some(db) = e.as_db_error() {
        let code = db.code().code();
        return code.starts_with("08") || code.starts_with("57P");
    }
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if s.downcast_ref::<std::io::Error>().is_some() {
            return true;
        }
        source = s.source();
    }
    false
}

/// Whether failing to get a pooled connection with `e` says the database is unreachable
/// (rather than that the pool is busy or closed, or the server refused the login).
pub(crate) fn pool_lost(e: &deadpool_postgres::PoolError) -> bool {
    use deadpool_postgres::{PoolError, TimeoutType};
    match e {
        PoolError::Backend(e) => connection_lost(e) || e.as_db_error().is_none(),
        PoolError::Timeout(TimeoutType::Create) => true,
        _ => false,
    }
}
