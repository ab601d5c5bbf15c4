//! Storage faults (docs/running.md "Durability"): a full disk and a read-only database file give clear
//! errors and never a damaged file.
//!
//! - Disk full: Loft runs with `RLIMIT_FSIZE` set (and `SIGXFSZ` ignored), so a write
//!   that would grow a file past the limit fails with `EFBIG`, as SQLite's writes fail on
//!   a full disk. Sends must then fail with a 503 naming storage (SQS JSON
//!   `ServiceUnavailable`, the seeds' `{"error"}`), reads keep working, and after a restart
//!   without the limit every acknowledged message is there exactly once, no refused one is,
//!   and `PRAGMA integrity_check` says `ok`.
//! - Read-only: Loft runs as `nobody` against a root-owned 0644 file in a directory it
//!   cannot write; it must refuse to start with a message naming the file, and leave the
//!   file byte for byte as it was. Needs root to switch users: skipped with a note
//!   otherwise.

use std::collections::BTreeSet;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};

use crate::loft::{LoftProcess, Storage, TestLoft};

/// What the child process is started with.
#[derive(Clone, Copy, Default)]
struct Limits {
    /// `RLIMIT_FSIZE`, bytes.
    file_size: Option<u64>,
    /// Run as this uid and gid (needs root).
    user: Option<u32>,
}

/// A `loft serve` child on `db` (a [`LoftProcess`]); its stderr collected in memory (a
/// log file would itself hit the file-size limit).
struct Server {
    loft: LoftProcess,
    base: String,
}

/// How a start ended: listening, or exited with its status and stderr.
enum Started {
    Listening(Box<Server>),
    Exited(std::process::ExitStatus, String),
}

fn spawn(db: &Path, limits: Limits) -> Started {
    let Limits { file_size, user } = limits;
    let spec = TestLoft::new()
        .storage(Storage::Sqlite(db.to_owned()))
        .log("warn")
        .stderr_in_memory()
        .configure(move |cmd| {
            // SAFETY: between fork and exec the closure only makes async-signal-safe
            // system calls (setrlimit, signal, setgroups, setgid, setuid) and allocates
            // nothing.
            unsafe {
                cmd.pre_exec(move || {
                    if let Some(bytes) = file_size {
                        let limit = libc::rlimit {
                            rlim_cur: bytes as libc::rlim_t,
                            rlim_max: bytes as libc::rlim_t,
                        };
                        if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                            return Err(std::io::Error::last_os_error());
                        }
                        // Past the limit a write fails with EFBIG instead of killing the
                        // process.
                        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
                    }
                    if let Some(id) = user {
                        if libc::setgroups(0, std::ptr::null()) != 0
                            || libc::setgid(id) != 0
                            || libc::setuid(id) != 0
                        {
                            return Err(std::io::Error::last_os_error());
                        }
                    }
                    Ok(())
                });
            }
        });
    match spec.try_start() {
        Ok(loft) => Started::Listening(Box::new(Server {
            base: loft.url.clone(),
            loft,
        })),
        Err(failed) => Started::Exited(failed.status, failed.stderr),
    }
}

fn start(db: &Path, limits: Limits) -> Server {
    match spawn(db, limits) {
        Started::Listening(s) => *s,
        Started::Exited(status, stderr) => {
            panic!("loft exited before listening ({status}); stderr:\n{stderr}")
        }
    }
}

impl Server {
    /// SIGTERM, then waits for the exit; returns whether it exited 0.
    fn stop(mut self) -> bool {
        self.loft.stop().clean()
    }

    fn stderr(&self) -> String {
        self.loft.stderr()
    }

    /// [`Self::stop`], then the whole of the child's stderr: read once the exit has
    /// closed the pipe and the reader thread has ended, so no line the server wrote is
    /// still on its way.
    fn stop_with_log(mut self) -> (bool, String) {
        let (exit, text) = self.loft.stop_with_stderr();
        (exit.clean(), text)
    }

    fn queue_url(&self) -> String {
        format!("{}/000000000000/full", self.base)
    }

    /// SendMessage of `body` to the queue `full`: status and JSON body.
    async fn send(&self, http: &reqwest::Client, body: &str) -> (u16, Value) {
        let input = json!({"QueueUrl": self.queue_url(), "MessageBody": body});
        self.sqs(http, "SendMessage", input).await
    }

    /// An SQS JSON call: status and JSON body.
    async fn sqs(&self, http: &reqwest::Client, op: &str, input: Value) -> (u16, Value) {
        let resp = http
            .post(format!("{}/", self.base))
            .header("X-Amz-Target", format!("AmazonSQS.{op}"))
            .header("Content-Type", "application/x-amz-json-1.0")
            .body(input.to_string())
            .send()
            .await
            .unwrap_or_else(|e| panic!("{op}: {e}"));
        let status = resp.status().as_u16();
        let text = resp.text().await.expect("body");
        let body = serde_json::from_str(&text).unwrap_or_else(|_| json!({ "raw": text }));
        (status, body)
    }
}

/// Every message of the queue, received (and deleted) until it is empty.
async fn drain(server: &Server, http: &reqwest::Client) -> Vec<String> {
    let url = server.queue_url();
    let mut bodies = Vec::new();
    loop {
        let (status, out) = server
            .sqs(
                http,
                "ReceiveMessage",
                json!({"QueueUrl": url, "MaxNumberOfMessages": 10, "VisibilityTimeout": 300}),
            )
            .await;
        assert_eq!(status, 200, "receive: {out}");
        let Some(messages) = out["Messages"].as_array().filter(|m| !m.is_empty()) else {
            return bodies;
        };
        let mut entries = Vec::new();
        for (i, m) in messages.iter().enumerate() {
            bodies.push(m["Body"].as_str().expect("a body").to_owned());
            entries.push(json!({"Id": format!("d{i}"), "ReceiptHandle": m["ReceiptHandle"]}));
        }
        let (status, out) = server
            .sqs(
                http,
                "DeleteMessageBatch",
                json!({"QueueUrl": url, "Entries": entries}),
            )
            .await;
        assert_eq!(status, 200, "delete: {out}");
    }
}

fn integrity(db: &Path) -> String {
    let conn = rusqlite::Connection::open(db).expect("open the database");
    conn.query_row("PRAGMA integrity_check", [], |r| r.get::<_, String>(0))
        .expect("integrity_check")
}

fn file_len(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_refuses_writes_clearly_and_loses_nothing_acknowledged() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let db: PathBuf = dir.path().join("loft.db");
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client");

    // A database with a queue and some messages, shut down cleanly (WAL checkpointed).
    let server = start(&db, Limits::default());
    let (status, out) = server
        .sqs(&http, "CreateQueue", json!({"QueueName": "full"}))
        .await;
    assert_eq!(status, 200, "{out}");
    let mut acknowledged = BTreeSet::new();
    for i in 0..20 {
        let body = format!("before the limit {i}");
        let (status, out) = server.send(&http, &body).await;
        assert_eq!(status, 200, "{out}");
        acknowledged.insert(body);
    }
    assert!(server.stop(), "clean shutdown");
    let size = file_len(&db);
    assert!(size > 0, "the database file exists");

    // Again, with files limited to 256 KiB more than the database: the WAL fills up after
    // a few dozen 4 KiB bodies.
    let limit = size + 256 * 1024;
    let server = start(
        &db,
        Limits {
            file_size: Some(limit),
            user: None,
        },
    );
    let payload = "x".repeat(4000);
    let mut refused = BTreeSet::new();
    let mut refusals = Vec::new();
    for i in 0..2000 {
        let body = format!("under the limit {i} {payload}");
        let (status, out) = server.send(&http, &body).await;
        match status {
            200 => {
                acknowledged.insert(body);
            }
            _ => {
                refused.insert(body);
                refusals.push((status, out));
                if refusals.len() == 5 {
                    break;
                }
            }
        }
    }
    eprintln!(
        "files limited to {limit} bytes: {} sends acknowledged in all, then {} refused",
        acknowledged.len(),
        refusals.len()
    );
    assert!(
        !refusals.is_empty(),
        "no send failed with files limited to {limit} bytes; WAL {} bytes",
        file_len(&dir.path().join("loft.db-wal"))
    );
    for (status, out) in &refusals {
        assert_eq!(*status, 503, "a full disk is a 503: {out}");
        assert_eq!(
            out["__type"],
            json!("com.amazonaws.sqs#ServiceUnavailable"),
            "{out}"
        );
        let message = out["message"].as_str().unwrap_or("");
        assert!(
            message.contains("storage is full"),
            "the message names the cause: {message}; Loft's log:\n{}",
            server.stderr()
        );
    }
    // The seeds' API says the same in its shape.
    let resp = http
        .post(format!("{}/queues/full/messages", server.base))
        .json(&json!({"body": format!("seed {payload}")}))
        .send()
        .await
        .expect("seed send");
    assert_eq!(resp.status().as_u16(), 503);
    let body: Value = resp.json().await.expect("JSON error");
    assert!(
        body["error"]
            .as_str()
            .is_some_and(|e| e.contains("storage is full")),
        "{body}"
    );
    refused.insert(format!("seed {payload}"));
    // Reads still work.
    let (status, out) = server
        .sqs(&http, "GetQueueUrl", json!({"QueueName": "full"}))
        .await;
    assert_eq!(status, 200, "{out}");
    let (_, log) = server.stop_with_log();
    assert!(
        log.contains("database or disk is full") || log.contains("storage is full"),
        "the log names the fault:\n{log}"
    );

    // Without the limit: every acknowledged message exactly once, no refused one, and an
    // intact file.
    let server = start(&db, Limits::default());
    let bodies = drain(&server, &http).await;
    let got: BTreeSet<String> = bodies.iter().cloned().collect();
    assert_eq!(got.len(), bodies.len(), "no message twice");
    let missing: Vec<_> = acknowledged.difference(&got).collect();
    assert!(missing.is_empty(), "acknowledged but lost: {missing:?}");
    let extra: Vec<_> = got.intersection(&refused).collect();
    assert!(extra.is_empty(), "refused but stored: {extra:?}");
    assert_eq!(got, acknowledged);
    assert!(server.stop(), "clean shutdown");
    assert_eq!(integrity(&db), "ok");
}

/// Creates the queue `full` on `server` and sends it the message "kept".
async fn queue_with_one_message(server: &Server, http: &reqwest::Client) {
    let (status, out) = server
        .sqs(http, "CreateQueue", json!({"QueueName": "full"}))
        .await;
    assert_eq!(status, 200, "{out}");
    let (status, out) = server.send(http, "kept").await;
    assert_eq!(status, 200, "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_database_stops_start_up_with_the_file_named_and_unchanged() {
    let root = crate::skips::root();
    if root.missing.is_some() {
        return root.skip(
            "storage_faults::a_read_only_database_stops_start_up_with_the_file_named_and_unchanged",
        );
    }
    const NOBODY: u32 = 65534;
    let dir = tempfile::tempdir().expect("temporary directory");
    let db = dir.path().join("loft.db");
    let http = reqwest::Client::new();

    // A database with a message, made by root and shut down cleanly.
    let server = start(&db, Limits::default());
    queue_with_one_message(&server, &http).await;
    assert!(server.stop(), "clean shutdown");
    // Root's 0644 file in root's 0755 directory: nobody may read both, write neither.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o644)).unwrap();
    for leftover in ["loft.db-wal", "loft.db-shm"] {
        assert!(
            !dir.path().join(leftover).exists(),
            "{leftover} left after a clean shutdown"
        );
    }
    let before = std::fs::read(&db).expect("read the database");

    let started = spawn(
        &db,
        Limits {
            file_size: None,
            user: Some(NOBODY),
        },
    );
    let (status, stderr) = match started {
        Started::Exited(status, stderr) => (status, stderr),
        Started::Listening(server) => {
            let stderr = server.stderr();
            let _ = server.stop();
            panic!("loft started on a database it cannot write; stderr:\n{stderr}");
        }
    };
    assert!(!status.success(), "a failed start exits non-zero");
    assert!(
        stderr.contains(&db.display().to_string()) && stderr.contains("read-only"),
        "the error names the file and the cause:\n{stderr}"
    );
    assert_eq!(
        std::fs::read(&db).expect("read the database"),
        before,
        "the file is unchanged"
    );
    assert!(!dir.path().join("loft.db-wal").exists());
    assert_eq!(integrity(&db), "ok");
}

/// Loft keeps its SQLite file to itself (exclusive locking): a second Loft on the same
/// file is refused with a message naming the file and the cause, and the first one goes
/// on serving with its data intact.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_loft_on_the_same_file_is_refused() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let db = dir.path().join("loft.db");
    let http = reqwest::Client::new();
    let first = start(&db, Limits::default());
    queue_with_one_message(&first, &http).await;

    let (status, stderr) = match spawn(&db, Limits::default()) {
        Started::Exited(status, stderr) => (status, stderr),
        Started::Listening(second) => {
            let stderr = second.stderr();
            let _ = second.stop();
            panic!("a second loft started on a file another loft has open; stderr:\n{stderr}");
        }
    };
    assert!(!status.success(), "a refused start exits non-zero");
    assert!(
        stderr.contains(&db.display().to_string())
            && stderr.contains("another process has the database open"),
        "the error names the file and the cause:\n{stderr}"
    );

    assert_eq!(drain(&first, &http).await, ["kept"]);
    assert!(first.stop(), "clean shutdown");
    assert_eq!(integrity(&db), "ok");
}
