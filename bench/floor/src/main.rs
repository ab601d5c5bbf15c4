//! `loft-floor` (bench/floor): the smallest honest server that does the real work of an
//! Amazon SQS `SendMessage`, the physical floor Loft's single-send path is measured against.
//! BENCHMARKS.md, "The floor", has the current figures and commands;
//! docs/benchmarks/history.md, "the floor" (`bench/floor`), the first measurements and what
//! the gap consists of.
//!
//! Per request it does what every SQS server must do and nothing else: HTTP/1.1 with
//! keep-alive (hyper, as Loft), the AWS JSON 1.0 body parsed with serde_json, the body's
//! MD5 computed, a MessageId (UUID v4) drawn, one row inserted into a table of Loft's shape
//! and committed in SQLite with Loft's pragmas (WAL, `synchronous=NORMAL`,
//! `locking_mode=EXCLUSIVE`, ...: `crates/loft-store/src/sqlite/mod.rs`), and AWS's JSON
//! answer (`MD5OfMessageBody`, `MessageId`, an `x-amzn-RequestId` header). Concurrent
//! sends share one transaction as in Loft's SQLite engine: a send alone in the store
//! commits on its own thread, the others queue for one writer thread that commits all that
//! are waiting at once.
//!
//! Left out on purpose, as Loft's own rules rather than physics: routing, authentication,
//! queues (every message goes to queue 1; `CreateQueue` and `GetQueueUrl` answer a URL
//! and store nothing, `DeleteQueue` answers `{}`), message attributes, delays, FIFO,
//! validation of the body's characters, logging and metrics. Any other `X-Amz-Target`
//! is refused with `InvalidAction`.
//!
//! Usage: `loft-floor --listen 127.0.0.1:PORT --db FILE [--no-autoincrement]
//! [--no-expiry-index]`. `FILE` must not exist yet (the schema switches apply when it is
//! created). The two switches drop, one at a time, the two parts of Loft's schema measured
//! for their cost per send: `AUTOINCREMENT` (a `sqlite_sequence` row rewritten by every
//! commit) and the index on `expires_at`.

use std::borrow::Cow;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex, TryLockError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use clap::Parser;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_TYPE, HOST};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use md5::{Digest, Md5};
use rusqlite::{params, Connection};
use serde::Deserialize;
use tokio::net::TcpListener;
use tokio::sync::oneshot;

/// Loft's allocator, so that the allocator is not part of the gap.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Largest request body read, in bytes: SQS's 1 MiB message plus room for the JSON
/// around it and its escapes.
const MAX_REQUEST_BYTES: usize = 4 * 1_048_576;

/// Most sends committed in one transaction (Loft's `MAX_BATCH`).
const MAX_BATCH: usize = 512;

/// Retention of a queue with default attributes (4 days, in milliseconds), as Loft stores
/// it in `expires_at`.
const RETENTION_MS: i64 = 345_600 * 1000;

/// The account id in the queue URL and the row's `sender_id` (Loft's default).
const ACCOUNT_ID: &str = "000000000000";

/// Command line.
#[derive(Parser, Debug)]
#[command(name = "loft-floor", about = "The floor for Loft's SendMessage path")]
struct Args {
    /// Address to listen on, e.g. 127.0.0.1:9330.
    #[arg(long)]
    listen: SocketAddr,
    /// SQLite database to create (must not exist).
    #[arg(long)]
    db: PathBuf,
    /// `seq INTEGER PRIMARY KEY` without AUTOINCREMENT (no sqlite_sequence row to rewrite
    /// at each commit).
    #[arg(long)]
    no_autoincrement: bool,
    /// No index on `expires_at`.
    #[arg(long)]
    no_expiry_index: bool,
}

/// The columns of Loft's `messages` table after all of its migrations
/// (`crates/loft-store/src/sqlite/migrations.rs`), and the indexes a standard message
/// lands in (`messages_group` is partial on `group_id IS NOT NULL`, so a standard send
/// never writes it; it is created all the same).
fn schema(autoincrement: bool, expiry_index: bool) -> String {
    format!(
        "CREATE TABLE messages (
            seq                INTEGER PRIMARY KEY{},
            queue_id           INTEGER NOT NULL,
            message_id         TEXT,
            body               TEXT NOT NULL,
            md5_body           TEXT NOT NULL,
            message_attributes TEXT,
            system_attributes  TEXT,
            sender_id          TEXT NOT NULL,
            sent_at            INTEGER NOT NULL,
            visible_at         INTEGER NOT NULL,
            expires_at         INTEGER NOT NULL,
            receive_count      INTEGER NOT NULL DEFAULT 0,
            first_received_at  INTEGER,
            receipt_token      INTEGER NOT NULL DEFAULT 0,
            group_id           TEXT,
            dedup_id           TEXT,
            dead_letter_source TEXT,
            received_at        INTEGER
        );
        CREATE INDEX messages_visibility ON messages(queue_id, visible_at, seq);
        {}
        CREATE INDEX messages_queue_order ON messages(queue_id, seq);
        CREATE INDEX messages_group ON messages(queue_id, group_id, seq) WHERE group_id IS NOT NULL;",
        if autoincrement { " AUTOINCREMENT" } else { "" },
        if expiry_index {
            "CREATE INDEX messages_expiry ON messages(expires_at);"
        } else {
            ""
        },
    )
}

/// Loft's insert of one message (`ops::send_messages`), with the values of a standard
/// send without attributes.
const INSERT: &str = "INSERT INTO messages (queue_id, message_id, body, md5_body, \
    message_attributes, system_attributes, sender_id, sent_at, visible_at, expires_at, \
    receive_count, first_received_at, group_id, dedup_id, dead_letter_source) \
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)";

/// One message to store.
struct Row {
    message_id: String,
    body: String,
    md5_body: String,
    /// Milliseconds since the Unix epoch.
    now_ms: i64,
}

/// Where a queued send hears that its transaction committed (or why not).
type Reply = oneshot::Sender<Result<(), String>>;

/// The database: one connection, used in place by a send that is alone, else by the
/// writer thread.
struct Db {
    conn: Arc<Mutex<Connection>>,
    /// Sends between their arrival at the store and their answer.
    in_store: AtomicUsize,
    jobs: mpsc::Sender<(Row, Reply)>,
}

/// Decrements the in-store count when a send leaves the store.
struct Counted<'a>(&'a AtomicUsize);

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Db {
    /// Creates the database at `path` with Loft's pragmas and the schema of [`schema`]
    /// (`autoincrement`, `expiry_index`), and starts the writer thread. Errors: the file
    /// exists, or SQLite refuses it.
    fn create(
        path: &std::path::Path,
        autoincrement: bool,
        expiry_index: bool,
    ) -> Result<Db, String> {
        if path.exists() {
            return Err(format!(
                "{}: exists; give a new file (the schema switches apply at creation)",
                path.display()
            ));
        }
        let fail = |e: rusqlite::Error| format!("{}: {e}", path.display());
        let conn = Connection::open(path).map_err(fail)?;
        // Loft's pragmas, in Loft's order (SqliteStore::open, default durability).
        conn.execute_batch(
            "PRAGMA busy_timeout=5000; PRAGMA locking_mode=EXCLUSIVE; PRAGMA journal_mode=WAL; \
             PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=OFF; PRAGMA cache_size=-16384; \
             PRAGMA temp_store=MEMORY; PRAGMA wal_autocheckpoint=10000; BEGIN IMMEDIATE; COMMIT;",
        )
        .map_err(fail)?;
        conn.execute_batch(&schema(autoincrement, expiry_index))
            .map_err(fail)?;
        let conn = Arc::new(Mutex::new(conn));
        let (jobs, rx) = mpsc::channel();
        let writer_conn = conn.clone();
        std::thread::Builder::new()
            .name("floor-writer".into())
            .spawn(move || writer(writer_conn, rx))
            .map_err(|e| e.to_string())?;
        Ok(Db {
            conn,
            in_store: AtomicUsize::new(0),
            jobs,
        })
    }

    /// Stores `row` and returns once it is committed: in place when no other send is in
    /// the store and the connection is free, else in the writer's next transaction.
    /// Errors: SQLite's, as text.
    async fn store(&self, row: Row) -> Result<(), String> {
        let alone = self.in_store.fetch_add(1, Ordering::SeqCst) == 0;
        let _counted = Counted(&self.in_store);
        if alone {
            match self.conn.try_lock() {
                Ok(c) => return commit_group(&c, std::slice::from_ref(&row)),
                Err(TryLockError::Poisoned(p)) => {
                    return commit_group(&p.into_inner(), std::slice::from_ref(&row))
                }
                Err(TryLockError::WouldBlock) => {}
            }
        }
        let (tx, rx) = oneshot::channel();
        self.jobs
            .send((row, tx))
            .map_err(|_| "the writer thread stopped".to_string())?;
        rx.await
            .map_err(|_| "the writer thread dropped a send".to_string())?
    }
}

/// Inserts `rows` in one transaction. A failed insert rolls the whole group back, and
/// every send of the group is answered with the error (none of them is stored).
fn commit_group(c: &Connection, rows: &[Row]) -> Result<(), String> {
    let run = || -> rusqlite::Result<()> {
        c.prepare_cached("BEGIN IMMEDIATE")?.execute([])?;
        let mut insert = c.prepare_cached(INSERT)?;
        for r in rows {
            insert.execute(params![
                1i64,
                r.message_id,
                r.body,
                r.md5_body,
                None::<String>,
                None::<String>,
                ACCOUNT_ID,
                r.now_ms,
                r.now_ms,
                r.now_ms + RETENTION_MS,
                0i64,
                None::<i64>,
                None::<String>,
                None::<String>,
                None::<String>,
            ])?;
        }
        c.prepare_cached("COMMIT")?.execute([])?;
        Ok(())
    };
    run().map_err(|e| {
        if !c.is_autocommit() {
            let _ = c.execute_batch("ROLLBACK");
        }
        e.to_string()
    })
}

/// The writer thread: takes every send waiting (up to [`MAX_BATCH`]) and commits them in
/// one transaction, until every sender is gone.
fn writer(conn: Arc<Mutex<Connection>>, rx: mpsc::Receiver<(Row, Reply)>) {
    let mut rows = Vec::new();
    let mut replies = Vec::new();
    while let Ok((row, reply)) = rx.recv() {
        rows.push(row);
        replies.push(reply);
        while rows.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok((row, reply)) => {
                    rows.push(row);
                    replies.push(reply);
                }
                Err(_) => break,
            }
        }
        let outcome = {
            let c = conn.lock().unwrap_or_else(|p| p.into_inner());
            commit_group(&c, &rows)
        };
        rows.clear();
        for reply in replies.drain(..) {
            let _ = reply.send(outcome.clone());
        }
    }
}

/// The operations the floor answers.
enum Op {
    SendMessage,
    QueueUrl,
    DeleteQueue,
    Other,
}

/// SendMessage's members the floor reads (botocore `SendMessageRequest`); the others are
/// ignored.
#[derive(Deserialize)]
struct SendIn<'a> {
    #[serde(rename = "QueueUrl", borrow)]
    queue_url: Cow<'a, str>,
    #[serde(rename = "MessageBody", borrow)]
    message_body: Cow<'a, str>,
}

/// CreateQueue's and GetQueueUrl's `QueueName`.
#[derive(Deserialize)]
struct QueueNameIn<'a> {
    #[serde(rename = "QueueName", borrow)]
    queue_name: Cow<'a, str>,
}

/// An SQS JSON error: status 400 (or 500 for `InternalError`), `__type` and `message`
/// in the body and the Query protocol's code in `x-amzn-query-error`, as AWS answers.
fn error(code: &str, message: &str) -> (StatusCode, String, Option<String>) {
    let status = if code == "InternalError" {
        StatusCode::INTERNAL_SERVER_ERROR
    } else {
        StatusCode::BAD_REQUEST
    };
    let body =
        serde_json::json!({"__type": format!("com.amazonaws.sqs#{code}"), "message": message});
    let side = if status == StatusCode::BAD_REQUEST {
        "Sender"
    } else {
        "Receiver"
    };
    (
        status,
        body.to_string(),
        Some(format!("AWS.SimpleQueueService.{code};{side}")),
    )
}

/// SendMessage: MD5 of the body, a MessageId, the row committed, AWS's answer.
async fn send_message(db: &Db, body: &[u8]) -> (StatusCode, String, Option<String>) {
    let input: SendIn = match serde_json::from_slice(body) {
        Ok(i) => i,
        Err(e) => return error("InvalidParameterValue", &e.to_string()),
    };
    if input.queue_url.is_empty() {
        return error("MissingParameter", "The request must contain a QueueUrl.");
    }
    if input.message_body.is_empty() {
        return error(
            "MissingParameter",
            "The request must contain the parameter MessageBody.",
        );
    }
    let md5_body = hex::encode(Md5::digest(input.message_body.as_bytes()));
    let message_id = uuid::Uuid::new_v4().to_string();
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0);
    let answer = format!(r#"{{"MD5OfMessageBody":"{md5_body}","MessageId":"{message_id}"}}"#);
    let row = Row {
        message_id,
        body: input.message_body.into_owned(),
        md5_body,
        now_ms,
    };
    match db.store(row).await {
        Ok(()) => (StatusCode::OK, answer, None),
        Err(e) => error("InternalError", &e),
    }
}

/// CreateQueue and GetQueueUrl: the URL of the named queue on this host; nothing stored.
fn queue_url(host: &str, body: &[u8]) -> (StatusCode, String, Option<String>) {
    match serde_json::from_slice::<QueueNameIn>(body) {
        Ok(q) if !q.queue_name.is_empty() => {
            let url = format!("http://{host}/{ACCOUNT_ID}/{}", q.queue_name);
            (
                StatusCode::OK,
                serde_json::json!({ "QueueUrl": url }).to_string(),
                None,
            )
        }
        Ok(_) => error("MissingParameter", "The request must contain a QueueName."),
        Err(e) => error("InvalidParameterValue", &e.to_string()),
    }
}

/// One request: decoded by `X-Amz-Target`, answered in AWS JSON 1.0.
async fn handle(db: Arc<Db>, req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let op = match req
        .headers()
        .get("x-amz-target")
        .and_then(|v| v.to_str().ok())
    {
        Some("AmazonSQS.SendMessage") => Op::SendMessage,
        Some("AmazonSQS.CreateQueue" | "AmazonSQS.GetQueueUrl") => Op::QueueUrl,
        Some("AmazonSQS.DeleteQueue") => Op::DeleteQueue,
        _ => Op::Other,
    };
    let host = match op {
        Op::QueueUrl => req
            .headers()
            .get(HOST)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("localhost")
            .to_owned(),
        _ => String::new(),
    };
    let (status, text, query_error) = match Limited::new(req.into_body(), MAX_REQUEST_BYTES)
        .collect()
        .await
    {
        Err(e) => error("InvalidParameterValue", &format!("reading the body: {e}")),
        Ok(collected) => {
            let body = collected.to_bytes();
            match op {
                Op::SendMessage => send_message(&db, &body).await,
                Op::QueueUrl => queue_url(&host, &body),
                Op::DeleteQueue => (StatusCode::OK, "{}".to_string(), None),
                Op::Other => error(
                    "InvalidAction",
                    "The floor answers SendMessage, CreateQueue, GetQueueUrl and DeleteQueue only.",
                ),
            }
        }
    };
    let mut resp = Response::new(Full::new(Bytes::from(text)));
    *resp.status_mut() = status;
    let h = resp.headers_mut();
    h.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("application/x-amz-json-1.0"),
    );
    if let Ok(v) = HeaderValue::from_str(&uuid::Uuid::new_v4().to_string()) {
        h.insert("x-amzn-requestid", v);
    }
    if let Some(v) = query_error.and_then(|q| HeaderValue::from_str(&q).ok()) {
        h.insert("x-amzn-query-error", v);
    }
    Ok(resp)
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args = Args::parse();
    let db = match Db::create(&args.db, !args.no_autoincrement, !args.no_expiry_index) {
        Ok(db) => Arc::new(db),
        Err(e) => {
            eprintln!("loft-floor: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let listener = match TcpListener::bind(args.listen).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("loft-floor: cannot listen on {}: {e}", args.listen);
            return std::process::ExitCode::FAILURE;
        }
    };
    eprintln!(
        "loft-floor: listening on {} (db {}, autoincrement {}, expiry index {})",
        args.listen,
        args.db.display(),
        !args.no_autoincrement,
        !args.no_expiry_index
    );
    loop {
        let stream = match listener.accept().await {
            Ok((s, _)) => s,
            Err(e) => {
                // Out of descriptors, for one: wait a little instead of spinning.
                eprintln!("loft-floor: accept: {e}");
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let db = db.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| handle(db.clone(), req));
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh database file in a fresh temporary directory (removed by the caller).
    fn scratch(name: &str) -> (PathBuf, PathBuf) {
        let dir =
            std::env::temp_dir().join(format!("loft-floor-test-{name}-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        (dir.join("floor.db"), dir)
    }

    #[tokio::test]
    async fn a_send_is_committed_and_answered_with_its_md5() {
        let (path, dir) = scratch("send");
        let db = Db::create(&path, true, true).unwrap();
        let (status, answer, query_error) = send_message(
            &db,
            br#"{"QueueUrl":"http://h/000000000000/q","MessageBody":"hello \u00e9"}"#,
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{answer}");
        assert!(query_error.is_none());
        let answer: serde_json::Value = serde_json::from_str(&answer).unwrap();
        // MD5 of the decoded body, "hello \u{e9}" in UTF-8.
        let expected = hex::encode(Md5::digest("hello \u{e9}".as_bytes()));
        assert_eq!(answer["MD5OfMessageBody"], expected.as_str());
        let id = answer["MessageId"].as_str().unwrap().to_string();
        let c = db.conn.lock().unwrap();
        let (body, md5, stored_id, visible, expires, sent): (
            String,
            String,
            String,
            i64,
            i64,
            i64,
        ) = c
            .query_row(
                "SELECT body, md5_body, message_id, visible_at, expires_at, sent_at FROM messages",
                [],
                |r| {
                    Ok((
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                        r.get(5)?,
                    ))
                },
            )
            .unwrap();
        assert_eq!(body, "hello \u{e9}");
        assert_eq!(md5, expected);
        assert_eq!(stored_id, id);
        assert_eq!(visible, sent);
        assert_eq!(expires - sent, RETENTION_MS);
        drop(c);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[tokio::test]
    async fn bad_sends_get_sqs_errors_and_store_nothing() {
        let (path, dir) = scratch("bad");
        let db = Db::create(&path, true, true).unwrap();
        for (body, code) in [
            (&b"not json"[..], "InvalidParameterValue"),
            (br#"{"QueueUrl":"u","MessageBody":""}"#, "MissingParameter"),
            (br#"{"QueueUrl":"","MessageBody":"x"}"#, "MissingParameter"),
        ] {
            let (status, answer, query_error) = send_message(&db, body).await;
            assert_eq!(status, StatusCode::BAD_REQUEST);
            let answer: serde_json::Value = serde_json::from_str(&answer).unwrap();
            assert_eq!(
                answer["__type"],
                format!("com.amazonaws.sqs#{code}").as_str()
            );
            assert_eq!(
                query_error.as_deref(),
                Some(format!("AWS.SimpleQueueService.{code};Sender").as_str())
            );
        }
        let n: i64 = db
            .conn
            .lock()
            .unwrap()
            .query_row("SELECT count(*) FROM messages", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 0);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn the_switches_drop_autoincrement_and_the_expiry_index() {
        for (autoincrement, expiry_index) in
            [(true, true), (false, true), (true, false), (false, false)]
        {
            let c = Connection::open_in_memory().unwrap();
            c.execute_batch(&schema(autoincrement, expiry_index))
                .unwrap();
            let sql: String = c
                .query_row(
                    "SELECT sql FROM sqlite_master WHERE name = 'messages'",
                    [],
                    |r| r.get(0),
                )
                .unwrap();
            assert_eq!(sql.contains("AUTOINCREMENT"), autoincrement);
            let expiry: i64 = c
                .query_row(
                    "SELECT count(*) FROM sqlite_master WHERE name = 'messages_expiry'",
                    [],
                    |r| r.get(0),
                )
                .unwrap();
            assert_eq!(expiry == 1, expiry_index);
        }
    }

    #[test]
    fn an_existing_file_is_refused() {
        let (path, dir) = scratch("exists");
        std::fs::write(&path, b"").unwrap();
        let e = Db::create(&path, true, true).err().unwrap();
        assert!(e.contains("exists"), "{e}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
