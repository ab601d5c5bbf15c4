//! The embedded SQLite store.
//!
//! One read-write connection, behind a mutex, does every read and write. A request that
//! is the only one in the store, finds the connection free, and comes when no request has
//! found another in the store for [`QUIET_MS`] runs its closure there at once, on its own
//! thread, in its own transaction (the fast path: no thread hand-off, which cost more CPU
//! than the SQL at low concurrency). Otherwise (other requests in the store or lately,
//! or the connection busy) it sends its closure to the writer thread instead,
//! which, once it holds the connection, runs as many as are waiting (up to [`MAX_BATCH`])
//! inside one transaction (both paths share `run_group`), each after the first in its own
//! savepoint so that one failing request does not undo the others (the first runs bare:
//! if it fails the transaction is rolled back and started again), commits once, and only
//! then answers each caller (group commit). Either way a caller is never told "done" about anything that is not
//! committed. With [`Durability::Fsync`] every request takes the writer thread, so that
//! no request thread waits for an fsync and concurrent requests share one.

mod cache;
mod migrations;
mod ops;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex, MutexGuard, TryLockError};
use std::thread;
use std::time::Instant;

use async_trait::async_trait;
use loft_core::error::{Error, Result};
use loft_core::model::*;
use loft_core::service::receipt::ReceiptKey;
use loft_core::store::Store;
use rusqlite::Connection;

use crate::replay::ArchiveWindow;
use crate::seal::{self, KeySource, Open, Seal, Sealer};
use tokio::sync::oneshot;

pub use migrations::SCHEMA_VERSION;

/// Most requests committed in one transaction.
pub const MAX_BATCH: usize = 512;

/// How long, in milliseconds, after a request last found another in the store the fast
/// path stays closed: while requests come concurrently, every one goes to the writer
/// thread, so that those arriving together share a group commit. Taken inline, a request
/// that is alone for a moment commits on its own (a fan-out publish's own ~20 index pages
/// to the WAL), and its thread holds the connection while the others' jobs queue behind
/// it (docs/benchmarks/history.md, "Fan-out, branch `s16-fanout`").
pub const QUIET_MS: u64 = 100;

/// Whether a request may run on its own thread ([`SqliteStore::write`]'s fast path): it is
/// `alone` in the store and no request found company in the last [`QUIET_MS`]
/// (`now_ms` and `company_at_ms` on one millisecond clock that starts at 1;
/// `company_at_ms` 0: never).
fn fast_path(alone: bool, now_ms: u64, company_at_ms: u64) -> bool {
    alone && (company_at_ms == 0 || now_ms.saturating_sub(company_at_ms) >= QUIET_MS)
}

/// How much an acknowledged write survives (docs/running.md "Durability").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// WAL with `synchronous=NORMAL`: an acknowledged write survives a crash of Loft
    /// (kill -9), but not necessarily a power loss.
    #[default]
    Process,
    /// WAL with `synchronous=FULL`: every acknowledged write is on disk (fsync) first.
    Fsync,
}

/// What to tell a job's caller once the transaction's fate is known: `Some(error)` when it
/// did not commit.
type Done = Box<dyn FnOnce(Option<&Error>) + Send>;
/// A request for the writer. Given the connection inside an open transaction, it runs and
/// returns its [`Done`] and, if it failed, its error; given `None` (no transaction could be
/// opened) it does not run. The flag says whether it must run in its own savepoint
/// (`true`: other jobs share the transaction) or may run bare (`false`: it is the first
/// job of the transaction, which is rolled back whole if it fails).
type Job = Box<dyn FnOnce(Option<&Connection>, bool) -> (Done, Option<Error>) + Send>;

enum Msg {
    Job(Job),
    Close(oneshot::Sender<()>),
}

/// The connection, `None` once closed.
type Shared = Arc<Mutex<Option<Connection>>>;

/// Locks the connection, recovering it from a poisoned lock: a request that panicked
/// while holding it cannot have committed, and [`begin`] rolls back what it left open.
fn lock(conn: &Mutex<Option<Connection>>) -> MutexGuard<'_, Option<Connection>> {
    conn.lock().unwrap_or_else(|p| p.into_inner())
}

/// Starts a write transaction, first rolling back one left open by a request that
/// panicked.
fn begin(conn: &Connection) -> Result<()> {
    if !conn.is_autocommit() {
        let _ = conn.execute_batch("ROLLBACK");
    }
    conn.prepare_cached("BEGIN IMMEDIATE")
        .and_then(|mut s| s.execute([]).map(|_| ()))
        .map_err(|e| storage_error(conn, &e))
}

/// Commits, or rolls back and says why.
fn commit(conn: &Connection) -> Option<Error> {
    let outcome = conn
        .prepare_cached("COMMIT")
        .and_then(|mut s| s.execute([]).map(|_| ()));
    match outcome {
        Ok(()) => None,
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            Some(storage_error(conn, &e))
        }
    }
}

/// Runs `f` in a savepoint of the open transaction: its changes are kept if it succeeds
/// and undone if it fails, whatever the other requests of the group do. Without
/// `savepoint` (the transaction's first job) it runs bare: SQLite then copies no page to
/// a sub-journal, and `run_group` rolls back the whole transaction if it fails.
fn in_savepoint<T>(
    conn: &Connection,
    savepoint: bool,
    f: impl FnOnce(&Connection) -> rusqlite::Result<T>,
) -> Result<T> {
    if !savepoint {
        return f(conn).map_err(|e| storage_error(conn, &e));
    }
    let run = || -> rusqlite::Result<T> {
        conn.prepare_cached("SAVEPOINT job")?.execute([])?;
        match f(conn) {
            Ok(v) => {
                conn.prepare_cached("RELEASE job")?.execute([])?;
                Ok(v)
            }
            Err(e) => {
                let _ = conn.execute_batch("ROLLBACK TO job; RELEASE job");
                Err(e)
            }
        }
    };
    run().map_err(|e| storage_error(conn, &e))
}

/// The SQLite implementation of [`Store`]. Cheap to share behind an `Arc`.
pub struct SqliteStore {
    conn: Shared,
    jobs: mpsc::Sender<Msg>,
    /// Whether a request may run on its own thread when the connection is free.
    inline: bool,
    /// Requests inside [`Self::write`] now: the fast path is taken only when alone, so
    /// that concurrent requests share a group commit instead of committing one by one.
    in_store: AtomicUsize,
    /// When a request last found another inside [`Self::write`]: milliseconds since
    /// `opened`, plus one (0: never). The fast path waits [`QUIET_MS`] after it.
    company_at: AtomicU64,
    /// When the store was opened: the origin of `company_at`.
    opened: Instant,
    /// Seals and opens the messages of encrypted queues (`crate::seal`).
    sealer: Arc<Sealer>,
    /// The next messages' store sequence numbers (see [`ops::MessageSeqs`]).
    seqs: Arc<ops::MessageSeqs>,
    /// Topics and subscription lists as last read (see [`cache`]): a publish reads both.
    topics: cache::TopicCache,
    /// The database's receipt-handle key, read (or made) at open ([`Store::receipt_key`]).
    receipt_key: ReceiptKey,
}

/// The database's receipt-handle key: the `receipt_key` row, made with a new random key
/// when the database has none yet (its first open), in one transaction.
///
/// Errors: SQLite fails, or the row does not hold a key.
fn load_receipt_key(conn: &Connection) -> Result<ReceiptKey, String> {
    let fresh = ReceiptKey::generate().to_base64();
    conn.execute(
        "INSERT INTO receipt_key (id, key) VALUES (1, ?1) ON CONFLICT (id) DO NOTHING",
        [fresh],
    )
    .map_err(|e| e.to_string())?;
    let text: String = conn
        .query_row("SELECT key FROM receipt_key WHERE id = 1", [], |r| r.get(0))
        .map_err(|e| e.to_string())?;
    ReceiptKey::from_base64(&text)
        .ok_or_else(|| "the receipt_key row does not hold a Loft receipt key".to_owned())
}

/// Turns SQLite's memory statistics off (`SQLITE_CONFIG_MEMSTATUS` 0) once per process,
/// before its first connection: with them on, every `sqlite3_malloc` and `sqlite3_free`
/// takes a global mutex to count bytes that Loft never reads (SQLite's
/// `sqlite3_memory_used`, `sqlite3_soft_heap_limit64`, neither of which Loft uses). The
/// setting is SQLite's documented start-up configuration (sqlite.org/c3ref/config.html);
/// once SQLite has initialised (a connection was opened elsewhere first, as some tests
/// do), `sqlite3_config` returns `SQLITE_MISUSE` and changes nothing, which is harmless.
fn without_memory_statistics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: a start-up option set before this process's first connection (the
        // store is where Loft opens SQLite); SQLite refuses it once initialised.
        unsafe {
            rusqlite::ffi::sqlite3_config(
                rusqlite::ffi::SQLITE_CONFIG_MEMSTATUS,
                0 as std::os::raw::c_int,
            );
        }
    });
}

/// Creates the database file `path` empty with mode 0600 on Unix when it does not exist
/// (SQLite gives its `-wal` and `-shm` files the database's mode): it holds the receipt
/// key (who reads it can forge receipt handles), every message and the recorded SMS
/// passwords, so only Loft's user may read it whatever the umask. An existing file is left
/// as it is, with a warning when others may read it. `:memory:` and a path that cannot be
/// made are left to SQLite (which then says why).
fn create_private_file(path: &Path) {
    if path == Path::new(":memory:") || path.as_os_str().is_empty() {
        return;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        match std::fs::metadata(path) {
            Ok(m) => {
                let mode = m.permissions().mode() & 0o777;
                if m.is_file() && mode & 0o077 != 0 {
                    tracing::warn!(
                        "{} has mode {mode:o}; other users may read its messages and its receipt key (want 600)",
                        path.display()
                    );
                }
            }
            Err(_) => {
                let _ = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(0o600)
                    .open(path);
            }
        }
    }
}

/// Counts a request in [`SqliteStore::write`] until dropped.
struct InStore<'a>(&'a AtomicUsize);

impl Drop for InStore<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl SqliteStore {
    /// Opens (creating if needed) the database at `path`, migrates it to
    /// [`SCHEMA_VERSION`] and starts the writer thread. Messages of encrypted queues are
    /// sealed with the master key in [`seal::default_key_file`] of `path` (made on first
    /// use) unless [`SqliteStore::with_key_source`] says otherwise; an in-memory database
    /// (`:memory:`) gets a random key that lives as long as the store.
    ///
    /// Errors: the file cannot be opened or is not a Loft database of a known version.
    pub fn open(path: &Path, durability: Durability) -> Result<Self, String> {
        without_memory_statistics();
        let fail = |e: rusqlite::Error| open_error(path, &e);
        create_private_file(path);
        let mut conn = Connection::open(path).map_err(fail)?;
        // SQLite opens a file it may not write read-only without a word; every write would
        // then fail. Refuse to start instead.
        if conn
            .is_readonly(rusqlite::DatabaseName::Main)
            .map_err(fail)?
        {
            return Err(read_only_message(path, "opened read-only"));
        }
        let sync = match durability {
            Durability::Process => "NORMAL",
            Durability::Fsync => "FULL",
        };
        // EXCLUSIVE locking: Loft is the file's only user, so it takes the lock once and
        // keeps it, instead of five fcntl() calls on the -shm file per transaction; the
        // WAL index then lives in Loft's memory (no -shm file). A second process (another
        // Loft on the same file, or the sqlite3 shell) is refused while Loft runs, which
        // also keeps two Lofts from sharing a file whose long-poll wake-ups and caches are
        // per process. The pragma must come before the first read of the file, and the
        // empty write transaction takes the write lock at once (kept until Loft exits).
        conn.execute_batch(&format!(
            "PRAGMA busy_timeout=5000; PRAGMA locking_mode=EXCLUSIVE; PRAGMA journal_mode=WAL; \
             PRAGMA synchronous={sync}; PRAGMA foreign_keys=OFF; PRAGMA cache_size=-16384; \
             PRAGMA temp_store=MEMORY; PRAGMA wal_autocheckpoint=10000; BEGIN IMMEDIATE; COMMIT;"
        ))
        .map_err(fail)?;
        migrations::migrate(&mut conn).map_err(|e| format!("{}: {e}", path.display()))?;
        conn.set_prepared_statement_cache_capacity(64);
        let seqs = Arc::new(ops::MessageSeqs::load(&conn).map_err(fail)?);
        let receipt_key =
            load_receipt_key(&conn).map_err(|e| format!("{}: {e}", path.display()))?;
        let conn: Shared = Arc::new(Mutex::new(Some(conn)));
        let (jobs, rx) = mpsc::channel::<Msg>();
        let writer_conn = conn.clone();
        thread::Builder::new()
            .name("loft-sqlite-writer".into())
            .spawn(move || writer(writer_conn, rx))
            .map_err(|e| e.to_string())?;
        let sealer = if path == Path::new(":memory:") {
            Sealer::ephemeral()
        } else {
            Sealer::new(KeySource::File(seal::default_key_file(path)))
        };
        Ok(SqliteStore {
            conn,
            jobs,
            inline: durability == Durability::Process,
            in_store: AtomicUsize::new(0),
            company_at: AtomicU64::new(0),
            opened: Instant::now(),
            sealer: Arc::new(sealer),
            seqs,
            topics: cache::TopicCache::default(),
            receipt_key,
        })
    }

    /// The same store, sealing and opening encrypted queues' messages with the master key
    /// `source` gives (a configured key file, or a key).
    pub fn with_key_source(mut self, source: KeySource) -> Self {
        self.sealer = Arc::new(Sealer::new(source));
        self
    }

    /// What the database says about its master key, read at start: the recorded check
    /// value and one sealed message body, if any (see [`seal::verify_master_key`]).
    ///
    /// Errors: `InternalError` (or `ServiceUnavailable` for I/O) when SQLite fails.
    pub async fn master_key_probe(&self) -> Result<seal::KeyProbe> {
        self.write(|c| {
            use rusqlite::OptionalExtension;
            let check = c
                .query_row(
                    "SELECT check_value FROM sse_key_check WHERE id = 1",
                    [],
                    |r| r.get(0),
                )
                .optional()?;
            let sealed_body = c
                .query_row(
                    "SELECT body FROM messages WHERE sealed <> 0 LIMIT 1",
                    [],
                    |r| r.get(0),
                )
                .optional()?;
            Ok(seal::KeyProbe { check, sealed_body })
        })
        .await
    }

    /// Records `check` as the check value of the database's master key
    /// ([`seal::MasterKey::check_value`]), replacing any earlier one.
    ///
    /// Errors: as [`SqliteStore::master_key_probe`].
    pub async fn record_master_key_check(&self, check: String) -> Result<()> {
        self.write(move |c| {
            c.execute(
                "INSERT INTO sse_key_check (id, check_value) VALUES (1, ?1) \
                 ON CONFLICT (id) DO UPDATE SET check_value = excluded.check_value",
                [check],
            )
            .map(drop)
        })
        .await
    }

    /// An in-memory database, for tests.
    pub fn open_in_memory() -> Result<Self, String> {
        Self::open(Path::new(":memory:"), Durability::Process)
    }

    /// Commits what is pending, checkpoints the WAL into the main file and stops the writer.
    /// Later calls fail with `InternalError`. Call once at shutdown.
    pub async fn close(&self) {
        let (tx, rx) = oneshot::channel();
        if self.jobs.send(Msg::Close(tx)).is_ok() {
            let _ = rx.await;
        }
    }

    /// Runs `f` in a transaction and returns its result once that transaction has
    /// committed: at once on this thread when no other request is in the store and the
    /// connection is free (and durability allows), otherwise on the writer thread inside
    /// the next group transaction.
    async fn write<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        self.write_as(f, Atomicity::Savepoint).await
    }

    /// [`Self::write`] with `atomicity` ([`Atomicity::Statement`] only for a job whose
    /// one lasting change is a single statement).
    async fn write_as<T, F>(&self, f: F, atomicity: Atomicity) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        let (job, rx) = job_as(f, atomicity);
        let alone = self.in_store.fetch_add(1, Ordering::SeqCst) == 0;
        let _counted = InStore(&self.in_store);
        let now_ms = self.opened.elapsed().as_millis() as u64 + 1;
        if !alone {
            self.company_at.store(now_ms, Ordering::Relaxed);
        }
        let here = self.inline && fast_path(alone, now_ms, self.company_at.load(Ordering::Relaxed));
        self.submit(job, here)?;
        rx.await
            .map_err(|_| Error::internal("sqlite writer dropped a request"))?
    }

    /// Seals `plain` ([`Sealer::sealed`], on the caller's thread, not the writer's) and
    /// writes it with `f` as [`Self::write_as`] does: the one way this store writes what
    /// may hold text the service asked to seal.
    async fn write_sealed<P, T, F>(&self, plain: P, f: F, atomicity: Atomicity) -> Result<T>
    where
        P: Seal,
        P::Sealed: Send + 'static,
        T: Send + 'static,
        F: FnOnce(&Connection, &P::Sealed) -> rusqlite::Result<T> + Send + 'static,
    {
        let sealed = self.sealer.sealed(plain)?;
        self.write_as(move |c| f(c, &sealed), atomicity).await
    }

    /// Runs `f` as [`Self::write`] does and opens what it read ([`opened`], on the
    /// caller's thread): the one way this store hands out what may hold sealed text (a
    /// receive's claims are opened inside its transaction, by [`ops`], through
    /// [`opened`] too).
    async fn read_opened<T, F>(&self, f: F) -> Result<T::Opened>
    where
        T: Open + Send + 'static,
        F: FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        let stored = self.write(f).await?;
        opened(&self.sealer, stored)
    }

    /// [`Self::write`] for a write to topics or subscriptions: the topic cache is
    /// forgotten once it is done, whether it committed or not.
    async fn write_topics<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        let out = self.write(f).await;
        self.topics.forget();
        out
    }

    /// Runs `job` at once on this thread, as a group of one with the writer's transaction
    /// rules, when `here` and the connection is free; otherwise queues it for the writer.
    fn submit(&self, job: Job, here: bool) -> Result<()> {
        if here {
            let guard = match self.conn.try_lock() {
                Ok(g) => Some(g),
                Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
                Err(TryLockError::WouldBlock) => None,
            };
            if let Some(guard) = guard {
                run_group(guard.as_ref(), job, || None);
                return Ok(());
            }
        }
        self.jobs
            .send(Msg::Job(job))
            .map_err(|_| Error::internal("sqlite writer stopped"))
    }
}

/// The one place this store opens what may hold sealed text ([`Sealer::opened`]): what
/// [`SqliteStore::read_opened`] read back, after its transaction, and each message a
/// receive claims ([`seal::Claiming`]), inside the receive's transaction on the writer
/// thread ([`ops::receive`]).
///
/// Errors: as the type's [`Open`] says.
fn opened<T: Open>(sealer: &Sealer, stored: T) -> Result<T::Opened> {
    sealer.opened(stored)
}

/// Loft's error for a failed SQLite call on `conn`: a full disk, a file-size limit or a
/// disk quota, a read-only file and an I/O error say so (503, logged with SQLite's words
/// and the system's); anything else is an internal error (500).
///
/// SQLite reports a full disk (`ENOSPC`) as `SQLITE_FULL` but a write past a file-size
/// limit (`EFBIG`) or a quota (`EDQUOT`) as a plain I/O error, so the system error of the
/// failed call is read too.
fn storage_error(conn: &Connection, e: &rusqlite::Error) -> Error {
    use rusqlite::ErrorCode as Code;
    use std::io::ErrorKind;
    match e.sqlite_error_code() {
        Some(Code::DiskFull) => {
            tracing::error!(error = %e, "storage is full");
            Error::storage_full()
        }
        Some(Code::ReadOnly) => {
            tracing::error!(error = %e, "storage is read-only");
            Error::storage_read_only()
        }
        Some(Code::SystemIoFailure) => {
            // SAFETY: `conn` is open for as long as the borrow lasts, and
            // sqlite3_system_errno only reads the connection's last system error.
            let errno = unsafe { rusqlite::ffi::sqlite3_system_errno(conn.handle()) };
            let system = std::io::Error::from_raw_os_error(errno);
            match system.kind() {
                ErrorKind::StorageFull | ErrorKind::FileTooLarge | ErrorKind::QuotaExceeded => {
                    tracing::error!(error = %e, %system, "storage is full");
                    Error::storage_full()
                }
                _ => Error::storage_io(format!("{e} ({e:?}; {system})")),
            }
        }
        _ => Error::internal(e),
    }
}

fn read_only_message(path: &Path, detail: &str) -> String {
    format!(
        "{}: the database is read-only for this process ({detail}): Loft writes the file and \
         creates its -wal file beside it, so the file and its directory must be \
         writable by the user Loft runs as",
        path.display()
    )
}

/// A start-up error naming the file, with the likely cause when SQLite's words are terse.
fn open_error(path: &Path, e: &rusqlite::Error) -> String {
    use rusqlite::ErrorCode as Code;
    match e.sqlite_error_code() {
        Some(Code::ReadOnly) => read_only_message(path, &e.to_string()),
        Some(Code::DatabaseBusy | Code::DatabaseLocked) => format!(
            "{}: {e}: another process has the database open (another Loft on the same file?); \
             Loft keeps its SQLite file to itself while it runs",
            path.display()
        ),
        Some(Code::CannotOpen) => format!(
            "{}: {e} (Loft must be able to open the file for writing and to create its -wal \
             file in the same directory)",
            path.display()
        ),
        _ => format!("{}: {e}", path.display()),
    }
}

/// Wraps `f` as a [`Job`]; the receiver gets its result once its transaction's fate is
/// known (its own error, the commit's error, or its value once committed).
#[cfg(test)]
fn job<T, F>(f: F) -> (Job, oneshot::Receiver<Result<T>>)
where
    T: Send + 'static,
    F: FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
{
    job_as(f, Atomicity::Savepoint)
}

/// How a job's changes are undone when it fails inside a group transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Atomicity {
    /// In a savepoint of its own (`SAVEPOINT job` ... `RELEASE job`) when it is not the
    /// transaction's first job: any job.
    Savepoint,
    /// By SQLite alone: the job's only change that must not outlive its failure is made
    /// by one statement, and SQLite backs out a failed statement's changes and keeps the
    /// transaction ("ABORT ... backs out any changes made by the current SQL statement;
    /// but changes caused by prior SQL statements within the same transaction are
    /// preserved", sqlite.org/lang_conflict.html); an error that rolls back the whole
    /// transaction (a full disk, an I/O error) is caught by `run_group` as before. No
    /// savepoint, so SQLite copies no page into a sub-journal (11 of a grouped send's
    /// allocations were `memjrnlWrite`: docs/benchmarks/history.md, "Where the allocations
    /// are").
    Statement,
    /// With the whole group: the job runs without a savepoint of its own, and if it fails
    /// where it is not the transaction's first job it rolls back the whole group
    /// transaction, so every job of the group is answered the error and nothing of theirs
    /// is committed (`run_group` sees the transaction gone). For a job of several
    /// statements that fails only as the transaction would (an I/O error, a full disk):
    /// no expected error (a missing row, a broken rule) may end it. What it saves is the
    /// sub-journal: a savepoint makes SQLite copy every page the job touches, already
    /// dirty in the group's transaction or not, into memory first (a fan-out publish's
    /// ~20 index and table pages: 5% of its server CPU, docs/benchmarks/history.md,
    /// "Fan-out, branch `s20-fanout`").
    Group,
}

/// [`job`] with `atomicity`.
fn job_as<T, F>(f: F, atomicity: Atomicity) -> (Job, oneshot::Receiver<Result<T>>)
where
    T: Send + 'static,
    F: FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
{
    let (tx, rx) = oneshot::channel::<Result<T>>();
    let job: Job = Box::new(move |conn, savepoint| {
        let grouped = savepoint && atomicity == Atomicity::Group;
        let savepoint = savepoint && atomicity == Atomicity::Savepoint;
        let outcome = conn.map(|conn| {
            let outcome = in_savepoint(conn, savepoint, f);
            // A failed `Group` job after the first: what it wrote cannot be told from
            // the others' writes, so none of the group's is kept.
            if grouped && outcome.is_err() && !conn.is_autocommit() {
                let _ = conn.execute_batch("ROLLBACK");
            }
            outcome
        });
        let failed = match &outcome {
            Some(Err(e)) => Some(e.clone()),
            _ => None,
        };
        let done: Done = Box::new(move |commit_error: Option<&Error>| {
            let reply = match (commit_error, outcome) {
                (Some(e), _) => Err(e.clone()),
                (None, Some(result)) => result,
                (None, None) => Err(Error::internal("a storage job was not run")),
            };
            let _ = tx.send(reply);
        });
        (done, failed)
    });
    (job, rx)
}

/// Runs `first`, then the jobs `next` gives while it gives them (up to [`MAX_BATCH`] in
/// all), in one transaction on `conn` (`None`: the store is closed), commits once and
/// only then answers each job's caller (group commit).
fn run_group(conn: Option<&Connection>, first: Job, mut next: impl FnMut() -> Option<Job>) {
    let Some(conn) = conn else {
        let (done, _) = first(None, true);
        done(Some(&Error::internal("sqlite store closed")));
        return;
    };
    // The first job runs bare (no savepoint). If it fails, its transaction holds nothing
    // else: roll it back, answer it, and start over with the next job.
    let mut first = first;
    let mut ran = 0;
    let done = loop {
        if let Err(e) = begin(conn) {
            // Not run: outside a transaction its statements would commit on their own
            // while its caller is told it failed.
            let (done, _) = first(None, true);
            done(Some(&e));
            return;
        }
        ran += 1;
        let (done, failed) = first(Some(conn), false);
        if failed.is_none() {
            break done;
        }
        if !conn.is_autocommit() {
            let _ = conn.execute_batch("ROLLBACK");
        }
        done(None);
        match (ran < MAX_BATCH).then(&mut next).flatten() {
            Some(job) => first = job,
            None => return,
        }
    };
    // A failed statement (a full disk, an I/O error) may make SQLite roll back the whole
    // transaction, not only the job's savepoint. Then nothing before it is committed, and
    // a later job would run outside any transaction: stop there, and tell every caller of
    // the group the error.
    let rolled_back = |failed: Option<Error>| {
        failed.filter(|_| conn.is_autocommit()).map(|e| {
            tracing::error!(error = %e, "a failed statement rolled back the whole transaction");
            e
        })
    };
    let mut dones = vec![done];
    let mut aborted = None;
    while aborted.is_none() && ran < MAX_BATCH {
        let Some(job) = next() else { break };
        ran += 1;
        let (done, failed) = job(Some(conn), true);
        dones.push(done);
        aborted = rolled_back(failed);
    }
    let commit = aborted.or_else(|| commit(conn));
    for done in dones {
        done(commit.as_ref());
    }
}

/// The writer loop: group as many waiting jobs as possible into one transaction.
fn writer(shared: Shared, rx: mpsc::Receiver<Msg>) {
    let mut closing: Option<oneshot::Sender<()>> = None;
    while let Ok(msg) = rx.recv() {
        let first = match msg {
            Msg::Job(job) => job,
            Msg::Close(reply) => {
                closing = Some(reply);
                break;
            }
        };
        let guard = lock(&shared);
        run_group(guard.as_ref(), first, || match rx.try_recv() {
            Ok(Msg::Job(job)) => Some(job),
            Ok(Msg::Close(reply)) => {
                closing = Some(reply);
                None
            }
            Err(_) => None,
        });
        drop(guard);
        if closing.is_some() {
            break;
        }
    }
    // Closed, or every SqliteStore handle is gone: checkpoint so the main file is whole,
    // and refuse later requests.
    let mut guard = lock(&shared);
    if let Some(conn) = guard.take() {
        let _ = conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)");
        drop(conn);
    }
    drop(guard);
    if let Some(reply) = closing {
        let _ = reply.send(());
    }
}

#[async_trait]
impl Store for SqliteStore {
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
        let name = name.to_owned();
        self.write(move |c| ops::create_queue(c, &name, &attributes, &tags, now_ms))
            .await
    }

    async fn get_queue(&self, name: &str) -> Result<Option<QueueRecord>> {
        let name = name.to_owned();
        self.write(move |c| ops::get_queue(c, &name)).await
    }

    async fn list_queues(&self) -> Result<Vec<QueueRecord>> {
        self.write(ops::list_queues).await
    }

    async fn list_queues_of(&self, prefix: &str, bare: bool) -> Result<Vec<QueueRecord>> {
        let prefix = prefix.to_owned();
        self.write(move |c| ops::list_queues_of(c, &prefix, bare))
            .await
    }

    async fn count_queues(&self) -> Result<u64> {
        self.write(|c| ops::count_rows(c, "queues")).await
    }

    async fn count_queues_of(&self, prefix: &str, bare: bool) -> Result<u64> {
        let prefix = prefix.to_owned();
        self.write(move |c| ops::count_rows_of(c, "queues", &prefix, bare))
            .await
    }

    async fn delete_queue(&self, queue_id: i64, recreate_after_ms: i64) -> Result<bool> {
        self.write(move |c| ops::delete_queue(c, queue_id, recreate_after_ms))
            .await
    }

    async fn queue_recreate_after(&self, name: &str) -> Result<Option<i64>> {
        let name = name.to_owned();
        self.write(move |c| ops::queue_recreate_after(c, &name))
            .await
    }

    async fn set_queue_attributes(
        &self,
        queue_id: i64,
        attributes: BTreeMap<String, String>,
        now_ms: i64,
    ) -> Result<()> {
        self.write(move |c| ops::set_queue_attributes(c, queue_id, &attributes, now_ms))
            .await
    }

    async fn set_queue_tags(&self, queue_id: i64, tags: BTreeMap<String, String>) -> Result<()> {
        self.write(move |c| ops::set_queue_tags(c, queue_id, &tags))
            .await
    }

    async fn send_messages(&self, messages: Vec<(i64, NewMessage)>) -> Result<Vec<SentMessage>> {
        let seqs = self.seqs.clone();
        let atomicity = if ops::one_insert(&messages) {
            Atomicity::Statement
        } else {
            Atomicity::Savepoint
        };
        self.write_sealed(
            messages,
            move |c, messages| ops::send_messages(c, &seqs, messages),
            atomicity,
        )
        .await
    }

    async fn receive(&self, request: ReceiveRequest) -> Result<ReceiveOutcome> {
        let sealer = self.sealer.clone();
        // A FIFO attempt's replay hands out what it claimed before, read back sealed.
        self.read_opened(move |c| ops::receive(c, &request, &sealer))
            .await
    }

    async fn delete_message(
        &self,
        queue_id: i64,
        seq: i64,
        strict: Option<(i64, i64)>,
    ) -> Result<DeleteOutcome> {
        self.write(move |c| ops::delete_message(c, queue_id, seq, strict))
            .await
    }

    async fn delete_messages(
        &self,
        queue_id: i64,
        items: Vec<(i64, Option<(i64, i64)>)>,
    ) -> Result<Vec<DeleteOutcome>> {
        self.write(move |c| {
            items
                .into_iter()
                .map(|(seq, strict)| ops::delete_message(c, queue_id, seq, strict))
                .collect()
        })
        .await
    }

    async fn delete_message_by_id(&self, queue_id: i64, message_id: &str) -> Result<bool> {
        let message_id = message_id.to_owned();
        self.write(move |c| ops::delete_message_by_id(c, queue_id, &message_id))
            .await
    }

    async fn delete_unnamed_message(&self, queue_id: i64, seq: i64) -> Result<bool> {
        self.write(move |c| ops::delete_unnamed_message(c, queue_id, seq))
            .await
    }

    async fn change_visibility(
        &self,
        queue_id: i64,
        seq: i64,
        receipt_token: Option<i64>,
        _now_ms: i64,
        visible_at_ms: i64,
        max_hidden_ms: i64,
    ) -> Result<VisibilityChange> {
        self.write(move |c| {
            ops::change_visibility(
                c,
                queue_id,
                seq,
                receipt_token,
                visible_at_ms,
                max_hidden_ms,
            )
        })
        .await
    }

    async fn move_messages(
        &self,
        source_queue_id: i64,
        target: MoveTarget,
        new_message_ids: Vec<String>,
        now_ms: i64,
        task: Option<MoveTaskLease>,
    ) -> Result<Option<u64>> {
        let seqs = self.seqs.clone();
        self.write(move |c| {
            ops::move_step(
                c,
                &seqs,
                source_queue_id,
                &target,
                &new_message_ids,
                now_ms,
                task.as_ref(),
            )
        })
        .await
    }

    async fn create_move_task(&self, task: MoveTaskRecord) -> Result<bool> {
        self.write(move |c| ops::create_move_task(c, &task)).await
    }

    async fn list_move_tasks(&self, source_arn: &str, limit: u32) -> Result<Vec<MoveTaskRecord>> {
        let source_arn = source_arn.to_owned();
        self.write(move |c| ops::list_move_tasks(c, &source_arn, limit))
            .await
    }

    async fn cancel_move_task(&self, handle: &str) -> Result<Option<MoveTaskRecord>> {
        let handle = handle.to_owned();
        self.write(move |c| ops::cancel_move_task(c, &handle)).await
    }

    async fn claim_move_tasks(
        &self,
        owner: &str,
        now_ms: i64,
        lease_until_ms: i64,
        limit: u32,
    ) -> Result<Vec<MoveTaskRecord>> {
        let owner = owner.to_owned();
        self.write(move |c| ops::claim_move_tasks(c, &owner, now_ms, lease_until_ms, limit))
            .await
    }

    async fn finish_move_task(
        &self,
        lease: MoveTaskLease,
        status: MoveTaskStatus,
        failure_reason: Option<String>,
    ) -> Result<bool> {
        self.write(move |c| ops::finish_move_task(c, &lease, status, failure_reason.as_deref()))
            .await
    }

    async fn release_move_tasks(&self, owner: &str) -> Result<()> {
        let owner = owner.to_owned();
        self.write(move |c| ops::release_move_tasks(c, &owner))
            .await
    }

    async fn purge_queue(
        &self,
        queue_id: i64,
        now_ms: i64,
        next_after_ms: i64,
    ) -> Result<PurgeOutcome> {
        self.write(move |c| ops::purge_queue(c, queue_id, now_ms, next_after_ms))
            .await
    }

    async fn queue_counts(&self, queue_id: i64, now_ms: i64) -> Result<QueueCounts> {
        self.write(move |c| ops::queue_counts(c, queue_id, now_ms))
            .await
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
        self.read_opened(move |c| ops::archived_messages(c, &window))
            .await
    }

    async fn delete_archive(&self, topic_id: i64) -> Result<u64> {
        self.write(move |c| ops::delete_archive(c, topic_id)).await
    }

    async fn put_replay(&self, replay: ReplayRecord) -> Result<()> {
        self.write(move |c| ops::put_replay(c, &replay)).await
    }

    async fn get_replay(&self, subscription: &str) -> Result<Option<ReplayRecord>> {
        let subscription = subscription.to_owned();
        self.write(move |c| ops::get_replay(c, &subscription)).await
    }

    async fn claim_replays(
        &self,
        owner: &str,
        now_ms: i64,
        lease_until_ms: i64,
        limit: u32,
    ) -> Result<Vec<ReplayRecord>> {
        let owner = owner.to_owned();
        self.write(move |c| ops::claim_replays(c, &owner, now_ms, lease_until_ms, limit))
            .await
    }

    async fn advance_replay(&self, step: ReplayStep) -> Result<Option<ReplayRecord>> {
        let seqs = self.seqs.clone();
        self.write_sealed(
            step,
            move |c, step| ops::advance_replay(c, &seqs, step),
            Atomicity::Savepoint,
        )
        .await
    }

    async fn release_replays(&self, owner: &str) -> Result<()> {
        let owner = owner.to_owned();
        self.write(move |c| ops::release_replays(c, &owner)).await
    }

    async fn fair_groups(&self, queue_id: i64, now_ms: i64) -> Result<Option<Vec<GroupCounts>>> {
        self.write(move |c| ops::fair_groups(c, queue_id, now_ms))
            .await
    }

    async fn count_in_flight(&self, queue_id: i64, now_ms: i64) -> Result<i64> {
        self.write(move |c| ops::count_in_flight(c, queue_id, now_ms))
            .await
    }

    async fn oldest_sent_at(&self, queue_id: i64, now_ms: i64) -> Result<Option<i64>> {
        self.write(move |c| ops::oldest_sent_at(c, queue_id, now_ms))
            .await
    }

    async fn peek_messages(
        &self,
        queue_id: i64,
        after_seq: i64,
        limit: u32,
        now_ms: i64,
    ) -> Result<Vec<StoredMessage>> {
        self.read_opened(move |c| ops::peek_messages(c, queue_id, after_seq, limit, now_ms))
            .await
    }

    async fn delete_expired(&self, now_ms: i64) -> Result<u64> {
        self.write(move |c| ops::delete_expired(c, now_ms)).await
    }

    async fn create_topic(
        &self,
        name: &str,
        attributes: BTreeMap<String, String>,
        tags: BTreeMap<String, String>,
        now_ms: i64,
    ) -> Result<(TopicRecord, bool)> {
        let name = name.to_owned();
        self.write_topics(move |c| ops::create_topic(c, &name, &attributes, &tags, now_ms))
            .await
    }

    async fn get_topic(&self, name: &str) -> Result<Option<TopicRecord>> {
        if let Some(topic) = self.topics.topic(name) {
            return Ok(topic);
        }
        let generation = self.topics.generation();
        let key = name.to_owned();
        let topic = self.write(move |c| ops::get_topic(c, &key)).await?;
        self.topics.keep_topic(generation, name, &topic);
        Ok(topic)
    }

    async fn list_topics(&self) -> Result<Vec<TopicRecord>> {
        self.write(ops::list_topics).await
    }

    async fn list_topics_of(&self, prefix: &str, bare: bool) -> Result<Vec<TopicRecord>> {
        let prefix = prefix.to_owned();
        self.write(move |c| ops::list_topics_of(c, &prefix, bare))
            .await
    }

    async fn count_topics(&self) -> Result<u64> {
        self.write(|c| ops::count_rows(c, "topics")).await
    }

    async fn count_topics_of(&self, prefix: &str, bare: bool) -> Result<u64> {
        let prefix = prefix.to_owned();
        self.write(move |c| ops::count_rows_of(c, "topics", &prefix, bare))
            .await
    }

    async fn delete_topic(&self, topic_id: i64) -> Result<bool> {
        self.write_topics(move |c| ops::delete_topic(c, topic_id))
            .await
    }

    async fn set_topic_attributes(
        &self,
        topic_id: i64,
        attributes: BTreeMap<String, String>,
    ) -> Result<()> {
        self.write_topics(move |c| ops::set_topic_json(c, topic_id, "attributes", &attributes))
            .await
    }

    async fn set_topic_tags(&self, topic_id: i64, tags: BTreeMap<String, String>) -> Result<()> {
        self.write_topics(move |c| ops::set_topic_json(c, topic_id, "tags", &tags))
            .await
    }

    async fn create_subscription(
        &self,
        topic_id: i64,
        subscription: NewSubscription,
    ) -> Result<SubscriptionRecord> {
        self.write_topics(move |c| ops::create_subscription(c, topic_id, &subscription))
            .await
    }

    async fn publish(
        &self,
        messages: Vec<(i64, NewMessage)>,
        deliveries: Vec<NewDelivery>,
        records: Vec<RecordedMessage>,
    ) -> Result<Vec<SentMessage>> {
        let seqs = self.seqs.clone();
        self.write_sealed(
            (messages, deliveries, records),
            move |c, (messages, deliveries, records)| {
                ops::publish(c, &seqs, messages, deliveries, records)
            },
            // Its inserts break no rule (no unique key but the numbers it takes), so only
            // an I/O error or a full disk ends it, and those end the group's transaction.
            Atomicity::Group,
        )
        .await
    }

    async fn publish_fifo(&self, publish: FifoPublish) -> Result<Option<Vec<FifoPublished>>> {
        let seqs = self.seqs.clone();
        self.write_sealed(
            publish,
            move |c, publish| ops::publish_fifo(c, &seqs, publish),
            Atomicity::Savepoint,
        )
        .await
    }

    async fn claim_deliveries(
        &self,
        now_ms: i64,
        limit: u32,
        lease_until_ms: i64,
    ) -> Result<Vec<DeliveryRecord>> {
        self.read_opened(move |c| ops::claim_deliveries(c, now_ms, limit, lease_until_ms))
            .await
    }

    async fn finish_delivery(&self, id: i64) -> Result<()> {
        self.write(move |c| ops::finish_delivery(c, id)).await
    }

    async fn retry_delivery(
        &self,
        id: i64,
        attempts: i64,
        next_at_ms: i64,
        error: &str,
    ) -> Result<()> {
        let error = error.to_owned();
        self.write(move |c| ops::retry_delivery(c, id, attempts, next_at_ms, &error))
            .await
    }

    async fn retry_invocation(
        &self,
        id: i64,
        attempts: i64,
        function_errors: i64,
        next_at_ms: i64,
        error: &str,
    ) -> Result<()> {
        let error = error.to_owned();
        self.write(move |c| {
            ops::retry_invocation(c, id, attempts, function_errors, next_at_ms, &error)
        })
        .await
    }

    async fn next_delivery_at(&self) -> Result<Option<i64>> {
        self.write(ops::next_delivery_at).await
    }

    async fn create_event_source_mapping(
        &self,
        mapping: EventSourceMappingRecord,
    ) -> Result<Option<String>> {
        self.write(move |c| ops::create_event_source_mapping(c, &mapping))
            .await
    }

    async fn get_event_source_mapping(
        &self,
        uuid: &str,
    ) -> Result<Option<EventSourceMappingRecord>> {
        let uuid = uuid.to_owned();
        self.write(move |c| ops::get_event_source_mapping(c, &uuid))
            .await
    }

    async fn list_event_source_mappings(&self) -> Result<Vec<EventSourceMappingRecord>> {
        self.write(ops::list_event_source_mappings).await
    }

    async fn update_event_source_mapping(&self, mapping: EventSourceMappingRecord) -> Result<bool> {
        self.write(move |c| ops::update_event_source_mapping(c, &mapping))
            .await
    }

    async fn delete_event_source_mapping(&self, uuid: &str) -> Result<bool> {
        let uuid = uuid.to_owned();
        self.write(move |c| ops::delete_event_source_mapping(c, &uuid))
            .await
    }

    async fn claim_event_source_mappings(
        &self,
        owner: &str,
        now_ms: i64,
        lease_until_ms: i64,
        limit: u32,
    ) -> Result<Vec<EventSourceMappingRecord>> {
        let owner = owner.to_owned();
        self.write(move |c| {
            ops::claim_event_source_mappings(c, &owner, now_ms, lease_until_ms, limit)
        })
        .await
    }

    async fn renew_event_source_mapping(
        &self,
        uuid: &str,
        owner: &str,
        lease_until_ms: i64,
    ) -> Result<Option<EventSourceMappingRecord>> {
        let (uuid, owner) = (uuid.to_owned(), owner.to_owned());
        self.write(move |c| ops::renew_event_source_mapping(c, &uuid, &owner, lease_until_ms))
            .await
    }

    async fn release_event_source_mappings(&self, owner: &str) -> Result<()> {
        let owner = owner.to_owned();
        self.write(move |c| ops::release_event_source_mappings(c, &owner))
            .await
    }

    async fn list_deliveries(
        &self,
        subscription: Option<&str>,
        limit: u32,
    ) -> Result<Vec<DeliveryRecord>> {
        let subscription = subscription.map(str::to_owned);
        self.read_opened(move |c| ops::list_deliveries(c, subscription.as_deref(), limit))
            .await
    }

    async fn count_deliveries(&self) -> Result<u64> {
        self.write(ops::count_deliveries).await
    }

    async fn list_recorded(
        &self,
        limit: u32,
        account: Option<String>,
    ) -> Result<Vec<RecordedMessage>> {
        self.read_opened(move |c| ops::list_recorded(c, limit, account.as_deref()))
            .await
    }

    async fn reset(&self, scope: Option<ResetScope>) -> Result<ResetCounts> {
        self.write_topics(move |c| ops::reset(c, scope.as_ref()))
            .await
    }

    async fn delete_recorded(&self, filter: RecordedFilter) -> Result<u64> {
        self.write(move |c| ops::delete_recorded(c, &filter)).await
    }

    async fn list_subscriptions(&self, topic_id: Option<i64>) -> Result<Vec<SubscriptionRecord>> {
        let Some(id) = topic_id else {
            return self.write(|c| ops::list_subscriptions(c, None)).await;
        };
        if let Some(subscriptions) = self.topics.subscriptions(id) {
            return Ok(subscriptions);
        }
        let generation = self.topics.generation();
        let subscriptions = self
            .write(move |c| ops::list_subscriptions(c, Some(id)))
            .await?;
        self.topics
            .keep_subscriptions(generation, id, &subscriptions);
        Ok(subscriptions)
    }

    async fn list_subscriptions_of(
        &self,
        prefix: &str,
        bare: bool,
        subscriber: &str,
    ) -> Result<Vec<SubscriptionRecord>> {
        let (prefix, subscriber) = (prefix.to_owned(), subscriber.to_owned());
        self.write(move |c| ops::list_subscriptions_of(c, &prefix, bare, &subscriber))
            .await
    }

    async fn get_subscription(&self, uuid: &str) -> Result<Option<SubscriptionRecord>> {
        let uuid = uuid.to_owned();
        self.write(move |c| ops::get_subscription(c, &uuid)).await
    }

    async fn update_subscription(
        &self,
        uuid: &str,
        attributes: BTreeMap<String, String>,
        confirmed: bool,
        token: Option<String>,
    ) -> Result<()> {
        let uuid = uuid.to_owned();
        self.write_topics(move |c| {
            ops::update_subscription(c, &uuid, &attributes, confirmed, token)
        })
        .await
    }

    async fn delete_subscription(&self, uuid: &str) -> Result<bool> {
        let uuid = uuid.to_owned();
        self.write_topics(move |c| ops::delete_subscription(c, &uuid))
            .await
    }

    async fn create_platform_application(
        &self,
        arn: &str,
        attributes: BTreeMap<String, String>,
    ) -> Result<()> {
        let arn = arn.to_owned();
        self.write(move |c| ops::create_platform_application(c, &arn, &attributes))
            .await
    }

    async fn create_platform_endpoint(
        &self,
        application_arn: &str,
        arn: &str,
        token: &str,
        attributes: BTreeMap<String, String>,
    ) -> Result<Option<String>> {
        let (app, arn, token) = (application_arn.to_owned(), arn.to_owned(), token.to_owned());
        self.write(move |c| ops::create_platform_endpoint(c, &app, &arn, &token, &attributes))
            .await
    }

    async fn get_platform(&self, arn: &str) -> Result<Option<PlatformRecord>> {
        let arn = arn.to_owned();
        self.write(move |c| ops::get_platform(c, &arn)).await
    }

    async fn list_platform_applications(&self) -> Result<Vec<PlatformRecord>> {
        self.write(ops::list_platform_applications).await
    }

    async fn list_platform_endpoints(&self, application_arn: &str) -> Result<Vec<PlatformRecord>> {
        let app = application_arn.to_owned();
        self.write(move |c| ops::list_platform_endpoints(c, &app))
            .await
    }

    async fn update_platform_attributes(
        &self,
        arn: &str,
        attributes: BTreeMap<String, String>,
        token: Option<String>,
    ) -> Result<bool> {
        let arn = arn.to_owned();
        self.write(move |c| ops::update_platform_attributes(c, &arn, &attributes, token.as_deref()))
            .await
    }

    async fn delete_platform(&self, arn: &str) -> Result<()> {
        let arn = arn.to_owned();
        self.write(move |c| ops::delete_platform(c, &arn)).await
    }

    async fn sms_attributes(&self, scope: &str) -> Result<BTreeMap<String, String>> {
        let scope = scope.to_owned();
        self.write(move |c| ops::sms_attributes(c, &scope)).await
    }

    async fn set_sms_attributes(
        &self,
        scope: &str,
        attributes: BTreeMap<String, String>,
    ) -> Result<()> {
        let scope = scope.to_owned();
        self.write(move |c| ops::set_sms_attributes(c, &scope, &attributes))
            .await
    }

    async fn sms_sandbox_numbers(&self, scope: &str) -> Result<Vec<SmsSandboxNumber>> {
        let scope = scope.to_owned();
        self.write(move |c| ops::sms_sandbox_numbers(c, &scope))
            .await
    }

    async fn put_sms_sandbox_number(&self, scope: &str, number: SmsSandboxNumber) -> Result<()> {
        let scope = scope.to_owned();
        self.write(move |c| ops::put_sms_sandbox_number(c, &scope, &number))
            .await
    }

    async fn delete_sms_sandbox_number(&self, scope: &str, phone_number: &str) -> Result<bool> {
        let (scope, phone_number) = (scope.to_owned(), phone_number.to_owned());
        self.write(move |c| ops::delete_sms_sandbox_number(c, &scope, &phone_number))
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(body: &str, now: i64) -> NewMessage {
        NewMessage {
            message_id: None,
            body: body.into(),
            md5_body: String::new(),
            message_attributes: None,
            system_attributes: None,
            sender_id: "0".into(),
            sent_at_ms: now,
            visible_at_ms: now,
            expires_at_ms: now + 60_000,
            group_id: None,
            dedup_id: None,
            receive_count: 0,
            first_received_at_ms: None,
            dead_letter_source: None,
            dedup: None,
            seal: None,
        }
    }

    async fn queue_with(store: &SqliteStore, bodies: &[&str], now: i64) -> i64 {
        let (q, _) = store
            .create_queue("q", BTreeMap::new(), BTreeMap::new(), now)
            .await
            .unwrap();
        let msgs = bodies.iter().map(|b| (q.id, message(b, now))).collect();
        store.send_messages(msgs).await.unwrap();
        q.id
    }

    fn request(queue_id: i64, max: u32, now: i64, visibility_ms: i64) -> ReceiveRequest {
        ReceiveRequest {
            queue_id,
            max_messages: max,
            now_ms: now,
            visibility_ms,
            receipt_tokens: (1..=max as i64).collect(),
            redrive: None,
            fifo: false,
            send_order: false,
            attempt: None,
        }
    }

    #[tokio::test]
    async fn a_zero_visibility_receive_never_returns_a_message_twice() {
        let store = SqliteStore::open_in_memory().unwrap();
        let now = 1_000_000;
        let q = queue_with(&store, &["a", "b", "c"], now).await;
        for send_order in [false, true] {
            let mut req = request(q, 10, now, 0);
            req.send_order = send_order;
            let out = store.receive(req).await.unwrap();
            let mut bodies: Vec<&str> = out.messages.iter().map(|m| m.body.as_str()).collect();
            bodies.sort();
            assert_eq!(bodies, ["a", "b", "c"], "send_order {send_order}");
        }
    }

    #[tokio::test]
    async fn peek_reads_every_state_in_order_without_claiming() {
        let store = SqliteStore::open_in_memory().unwrap();
        let now = 1_000_000;
        let q = queue_with(&store, &["a", "b", "c", "d"], now).await;
        let claimed = store.receive(request(q, 1, now, 30_000)).await.unwrap();
        assert_eq!(claimed.messages.len(), 1);
        let page = store.peek_messages(q, 0, 3, now).await.unwrap();
        let bodies: Vec<&str> = page.iter().map(|m| m.body.as_str()).collect();
        assert_eq!(bodies, ["a", "b", "c"]);
        let rest = store.peek_messages(q, page[2].seq, 3, now).await.unwrap();
        assert_eq!(rest.len(), 1);
        assert_eq!(rest[0].body, "d");
        // Nothing changed: one in flight, three visible, receive counts as they were.
        let again = store.peek_messages(q, 0, 10, now).await.unwrap();
        assert_eq!(again.iter().map(|m| m.receive_count).sum::<i64>(), 1);
        let counts = store.queue_counts(q, now).await.unwrap();
        assert_eq!((counts.visible, counts.in_flight), (3, 1));
        // Expired messages are left out.
        assert!(store
            .peek_messages(q, 0, 10, now + 60_000)
            .await
            .unwrap()
            .is_empty());
        assert_eq!(store.count_deliveries().await.unwrap(), 0);
    }

    /// Inserts `v` into t, then fails when `fail`.
    fn insert_job(v: i64, fail: bool) -> (Job, oneshot::Receiver<Result<i64>>) {
        job(move |c| {
            c.execute("INSERT INTO t (v) VALUES (?1)", [v])?;
            if fail {
                c.execute("INSERT INTO missing_table VALUES (1)", [])?;
            }
            Ok(v)
        })
    }

    /// Runs `jobs` as one group on `conn`; returns whether each succeeded, in order, and
    /// the values left in `t`, ascending.
    fn run_jobs<T>(
        conn: &Connection,
        jobs: Vec<(Job, oneshot::Receiver<Result<T>>)>,
    ) -> (Vec<bool>, Vec<i64>) {
        let (jobs, replies): (Vec<_>, Vec<_>) = jobs.into_iter().unzip();
        let mut jobs = jobs.into_iter();
        let first = jobs.next().unwrap();
        run_group(Some(conn), first, || jobs.next());
        let outcomes = replies
            .into_iter()
            .map(|mut rx| rx.try_recv().expect("every caller is answered").is_ok())
            .collect();
        let mut stmt = conn.prepare("SELECT v FROM t ORDER BY v").unwrap();
        let kept = stmt
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        (outcomes, kept)
    }

    #[test]
    fn the_fast_path_is_closed_for_quiet_ms_after_a_request_found_company() {
        // Never any company: a lone request runs on its own thread.
        assert!(fast_path(true, 1, 0));
        assert!(fast_path(true, 50_000, 0));
        // Not alone: never.
        assert!(!fast_path(false, 50_000, 0));
        // Company at 1,000 ms: closed until QUIET_MS have passed, open from then on.
        assert!(!fast_path(true, 1_000, 1_000));
        assert!(!fast_path(true, 1_000 + QUIET_MS - 1, 1_000));
        assert!(fast_path(true, 1_000 + QUIET_MS, 1_000));
        // A clock read before a concurrent request stored a later company time.
        assert!(!fast_path(true, 999, 1_000));
    }

    #[test]
    fn a_failing_job_undoes_only_itself_whether_first_or_not() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE t (v INTEGER)").unwrap();
        // Two failures in a row first (the bare first job, then its replacement), then a
        // success, a failure in a savepoint, and a success.
        let plan = [(1, true), (2, true), (3, false), (4, true), (5, false)];
        let jobs = plan.iter().map(|&(v, fail)| insert_job(v, fail)).collect();
        let (outcomes, kept) = run_jobs(&conn, jobs);
        assert_eq!(outcomes, [false, false, true, false, true]);
        assert_eq!(kept, [3, 5]);
        assert!(conn.is_autocommit(), "the transaction is closed");
    }
    #[test]
    fn a_failing_statement_job_without_savepoint_undoes_only_itself() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE t (v INTEGER UNIQUE)")
            .unwrap();
        // Jobs of one statement each, run with `Atomicity::Statement` (no savepoint): the
        // third fails on its second row after SQLite wrote its first, the fourth on its
        // only row; SQLite backs out each failed statement and keeps the transaction.
        let statements: [&'static str; 5] = [
            "INSERT INTO t (v) VALUES (1)",
            "INSERT INTO t (v) VALUES (2)",
            "INSERT INTO t (v) VALUES (3), (1)",
            "INSERT INTO t (v) VALUES (2)",
            "INSERT INTO t (v) VALUES (4)",
        ];
        let jobs = statements
            .into_iter()
            .map(|sql| job_as(move |c| c.execute(sql, []), Atomicity::Statement))
            .collect();
        let (outcomes, kept) = run_jobs(&conn, jobs);
        assert_eq!(outcomes, [true, true, false, false, true]);
        assert_eq!(kept, [1, 2, 4]);
        assert!(conn.is_autocommit(), "the transaction is closed");
    }

    #[test]
    fn a_failing_group_job_fails_its_whole_group_and_keeps_nothing() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE t (v INTEGER)").unwrap();
        // `Atomicity::Group` jobs of two statements each, the third failing after its first
        // insert: no savepoint holds its writes apart, so the group's transaction goes.
        let group_job = |v: i64, fail: bool| {
            job_as(
                move |c| {
                    c.execute("INSERT INTO t (v) VALUES (?1)", [v])?;
                    if fail {
                        c.execute("INSERT INTO missing_table VALUES (1)", [])?;
                    }
                    c.execute("INSERT INTO t (v) VALUES (?1)", [v * 10])?;
                    Ok(v)
                },
                Atomicity::Group,
            )
        };
        let jobs = vec![group_job(1, false), group_job(2, false), group_job(3, true)];
        let (outcomes, kept) = run_jobs(&conn, jobs);
        assert_eq!(outcomes, [false, false, false], "every caller is told");
        assert!(kept.is_empty(), "nothing committed: {kept:?}");
        assert!(conn.is_autocommit(), "the transaction is closed");
        // The first job of a group fails alone, as any job does; a later job that
        // succeeds leaves the group's others committed.
        let jobs = vec![group_job(4, true), group_job(5, false), group_job(6, false)];
        let (outcomes, kept) = run_jobs(&conn, jobs);
        assert_eq!(outcomes, [false, true, true]);
        assert_eq!(kept, [5, 6, 50, 60]);
        assert!(conn.is_autocommit(), "the transaction is closed");
    }

    /// Sends one message to queue `q` and returns its store sequence number.
    async fn send_one(store: &SqliteStore, q: i64, body: &str, now: i64) -> i64 {
        store
            .send_messages(vec![(q, message(body, now))])
            .await
            .unwrap()[0]
            .seq
    }

    /// A new database and its WAL are readable by Loft's user only, whatever the umask:
    /// they hold the receipt key and every message (a tenant on the same machine could
    /// read the 0644 file a umask of 022 gave).
    #[cfg(unix)]
    #[tokio::test]
    async fn a_new_database_and_its_wal_are_private_to_lofts_user() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("private.db");
        let store = SqliteStore::open(&path, Durability::Process).unwrap();
        queue_with(&store, &["a"], 1_000_000).await;
        let wal = dir.path().join("private.db-wal");
        for p in [&path, &wal] {
            let mode = std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "{}", p.display());
        }
        store.close().await;
    }

    #[tokio::test]
    async fn sequence_numbers_are_not_reused_after_deleting_the_newest_or_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("seq.db");
        let now = 1_000_000;
        let store = SqliteStore::open(&path, Durability::Process).unwrap();
        let q = queue_with(&store, &["a", "b"], now).await;
        let newest = send_one(&store, q, "c", now).await;
        assert!(store.delete_unnamed_message(q, newest).await.unwrap());
        let after_delete = send_one(&store, q, "d", now).await;
        assert!(after_delete > newest, "{after_delete} after {newest}");
        assert!(store.delete_unnamed_message(q, after_delete).await.unwrap());
        store.close().await;
        drop(store);
        let store = SqliteStore::open(&path, Durability::Process).unwrap();
        let after_restart = send_one(&store, q, "e", now).await;
        assert!(
            after_restart > after_delete,
            "{after_restart} after {after_delete}"
        );
        store.close().await;
    }

    #[test]
    fn a_rolled_back_raise_of_the_high_water_mark_is_made_again() {
        let mut conn = Connection::open_in_memory().unwrap();
        migrations::migrate(&mut conn).unwrap();
        let seqs = ops::MessageSeqs::load(&conn).unwrap();
        let high = |c: &Connection| -> i64 {
            c.query_row("SELECT high FROM message_seq", [], |r| r.get(0))
                .unwrap()
        };
        conn.execute_batch("BEGIN").unwrap();
        assert_eq!(seqs.take(&conn, 1).unwrap(), 1);
        assert!(high(&conn) >= 1);
        conn.execute_batch("ROLLBACK").unwrap();
        assert_eq!(high(&conn), 0, "the raise was rolled back");
        conn.execute_batch("BEGIN").unwrap();
        let next = seqs.take(&conn, 3).unwrap();
        assert_eq!(next, 2, "a taken number is not given again");
        conn.execute_batch("COMMIT").unwrap();
        assert!(high(&conn) >= 4, "the raise is made again and committed");
        let reserved = high(&conn);
        let reloaded = ops::MessageSeqs::load(&conn).unwrap();
        assert_eq!(
            reloaded.take(&conn, 1).unwrap(),
            reserved + 1,
            "a reload starts above"
        );
    }

    /// A store opened (and so migrated) on a file made at schema `version` with `sql`
    /// run on it; the runtime to drive it and the directory to keep.
    fn upgraded_from(
        version: i64,
        sql: &str,
    ) -> (tempfile::TempDir, SqliteStore, tokio::runtime::Runtime) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(format!("v{version}.db"));
        {
            let mut conn = Connection::open(&path).unwrap();
            migrations::migrate_to(&mut conn, version).unwrap();
            conn.execute_batch(sql).unwrap();
        }
        let store = SqliteStore::open(&path, Durability::Process).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        (dir, store, rt)
    }

    #[test]
    fn migration_11_keeps_messages_and_numbers_above_autoincrements_high_mark() {
        let (_dir, store, rt) = upgraded_from(
            10,
            "INSERT INTO queues (name, attributes, tags, created_at, modified_at) \
             VALUES ('q', '{}', '{}', 0, 0); \
             INSERT INTO messages (queue_id, body, md5_body, sender_id, sent_at, \
             visible_at, expires_at, group_id) \
             VALUES (1, 'kept', 'm', 's', 0, 0, 9000000000000, 'g'); \
             INSERT INTO messages (queue_id, body, md5_body, sender_id, sent_at, \
             visible_at, expires_at) VALUES (1, 'deleted', 'm', 's', 0, 0, 1); \
             DELETE FROM messages WHERE body = 'deleted';",
        );
        rt.block_on(async {
            let kept = store.peek_messages(1, 0, 10, 0).await.unwrap();
            assert_eq!(kept.len(), 1);
            assert_eq!((kept[0].seq, kept[0].body.as_str()), (1, "kept"));
            assert_eq!(kept[0].group_id.as_deref(), Some("g"));
            // AUTOINCREMENT had handed out 2 (deleted since): the next number is above it.
            assert!(send_one(&store, 1, "new", 0).await > 2);
            store.close().await;
        });
    }

    #[test]
    fn migration_20_reads_an_older_move_task_as_its_source_accounts() {
        let (_dir, store, rt) = upgraded_from(
            19,
            "INSERT INTO move_tasks (handle, source_arn, source_queue, status, to_move, \
             started_at) VALUES ('h', 'arn:dlq', 'dlq', 'COMPLETED', 1, 0);",
        );
        rt.block_on(async {
            let tasks = store.list_move_tasks("arn:dlq", 10).await.unwrap();
            assert_eq!(tasks.len(), 1);
            assert_eq!(tasks[0].handle, "h");
            assert_eq!(tasks[0].started_by, None, "an older row names no starter");
            store.close().await;
        });
    }
    #[test]
    fn migration_21_keeps_older_fifo_numbers_and_counts_each_queue_above_them() {
        // A FIFO message and its deduplication key from before, and store-wide numbers
        // handed out up to 41.
        let (_dir, store, rt) = upgraded_from(
            20,
            "INSERT INTO queues (name, attributes, tags, created_at, modified_at) \
             VALUES ('q.fifo', '{}', '{}', 0, 0); \
             INSERT INTO messages (seq, queue_id, message_id, body, md5_body, sender_id, \
             sent_at, visible_at, expires_at, group_id, dedup_id) \
             VALUES (7, 1, 'm7', 'old', 'm', 's', 0, 0, 9000000000000, 'g', 'd7'); \
             INSERT INTO fifo_dedup (queue_id, scope, dedup_id, seq, message_id, expires_at) \
             VALUES (1, '', 'd7', 7, 'm7', 9000000000000); \
             UPDATE message_seq SET high = 41;",
        );
        rt.block_on(async {
            let kept = store.peek_messages(1, 0, 10, 0).await.unwrap();
            assert_eq!(
                (kept[0].seq, kept[0].sequence),
                (7, None),
                "made of seq, as before"
            );
            let fifo = |body: &str, dedup: &str| NewMessage {
                group_id: Some("g".into()),
                dedup_id: Some(dedup.into()),
                dedup: Some(DedupKey {
                    scope: String::new(),
                    id: dedup.into(),
                    expires_at_ms: 9_000_000_000_000,
                }),
                ..message(body, 1)
            };
            let sent = store
                .send_messages(vec![(1, fifo("again", "d7")), (1, fifo("new", "d8"))])
                .await
                .unwrap();
            assert!(sent[0].duplicate);
            assert_eq!((sent[0].seq, sent[0].sequence), (7, None));
            assert_eq!(
                sent[1].sequence,
                Some(42),
                "above every number given before"
            );
            let (later, _) = store
                .create_queue("later.fifo", BTreeMap::new(), BTreeMap::new(), 0)
                .await
                .unwrap();
            let sent = store
                .send_messages(vec![(later.id, fifo("first", "f"))])
                .await
                .unwrap();
            assert_eq!(
                sent[0].sequence,
                Some(1),
                "a queue made later counts from 1"
            );
            store.close().await;
        });
    }
}
