//! Cells: an SNS publish whose subscribed queue is in another cell goes through the
//! outbox, and a relaying node killed with SIGKILL in the middle of the relay (before the
//! destination's commit, or after it and before the source's delete) leaves the copy
//! stored exactly once, by another node, after the relay's lease (30 s). Two schemas of
//! `LOFT_TEST_DATABASE_URL` are the two cells; two `loft serve` nodes run on them. A
//! trigger in one cell's database holds the relay at the chosen point (it waits for an
//! advisory lock the test holds), so the kill lands there, not by timing. The same for
//! a message dead-lettered by a receive into a dead-letter queue of the other cell.

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};
use tempfile::TempDir;

use crate::loft::{LoftProcess, Storage, TestLoft};

const ACCOUNT: &str = "000000000000";

/// Where the relay is held when its node is killed.
#[derive(Clone, Copy, Debug)]
enum Gate {
    /// Before the destination's commit: its insert into `cell_relayed` (cell 2) waits.
    BeforeDestinationCommit,
    /// After the destination's commit: the delete of the outbox row (cell 1) waits.
    AfterDestinationCommit,
}

impl Gate {
    /// The advisory lock key the gate waits on (one per gate: the tests run at once on
    /// one database).
    fn key(self) -> i64 {
        match self {
            Gate::BeforeDestinationCommit => 0x6f75_7462_0001,
            Gate::AfterDestinationCommit => 0x6f75_7462_0002,
        }
    }

    /// The cell (0-based) whose table has the gate, the table and the trigger's event.
    fn place(self) -> (usize, &'static str, &'static str, &'static str) {
        match self {
            Gate::BeforeDestinationCommit => (1, "cell_relayed", "INSERT", "NEW"),
            Gate::AfterDestinationCommit => (0, "cell_outbox", "DELETE", "OLD"),
        }
    }
}

/// Two cells (schemas), dropped at the end, and the nodes on them.
pub(crate) struct Cells {
    url: String,
    schemas: Vec<String>,
    pub(crate) node_urls: Vec<String>,
    dir: TempDir,
    nodes: Vec<LoftProcess>,
}

impl Cells {
    async fn start(test: &str) -> Option<Cells> {
        Cells::start_as(&format!("outbox::{test}")).await
    }

    /// Two fresh cells and one node, or `None` (test `full_name` skipped) without a test
    /// database.
    pub(crate) async fn start_as(full_name: &str) -> Option<Cells> {
        let Some(url) = std::env::var("LOFT_TEST_DATABASE_URL")
            .ok()
            .filter(|u| !u.is_empty())
        else {
            crate::skips::postgres().skip(full_name);
            return None;
        };
        let mut schemas = Vec::new();
        let mut node_urls = Vec::new();
        for _ in 0..2 {
            let schema = format!("loft_ob_{:016x}", rand_u64());
            loft_store::PgStore::create_schema(&url, &schema)
                .await
                .expect("connect to LOFT_TEST_DATABASE_URL");
            let sep = if url.contains('?') { '&' } else { '?' };
            node_urls.push(format!("{url}{sep}options=-c%20search_path%3D{schema}"));
            schemas.push(schema);
        }
        let mut cells = Cells {
            url,
            schemas,
            node_urls,
            dir: tempfile::tempdir().expect("temporary directory"),
            nodes: Vec::new(),
        };
        cells.add_node();
        Some(cells)
    }

    /// Starts one more node on the two cells.
    pub(crate) fn add_node(&mut self) -> String {
        let node = start_node(&self.node_urls, self.dir.path(), self.nodes.len());
        let base = node.url.clone();
        self.nodes.push(node);
        base
    }

    /// A connection to cell `i` (0-based), its schema on the search path.
    pub(crate) async fn sql(&self, i: usize) -> tokio_postgres::Client {
        let (client, connection) =
            tokio_postgres::connect(&self.node_urls[i], tokio_postgres::NoTls)
                .await
                .expect("connect to a cell");
        tokio::spawn(connection);
        client
    }
}

impl Drop for Cells {
    fn drop(&mut self) {
        self.nodes.clear();
        let (url, schemas) = (self.url.clone(), self.schemas.clone());
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            for s in schemas {
                let _ = rt.block_on(loft_store::PgStore::drop_schema(&url, &s));
            }
        })
        .join();
    }
}

fn start_node(urls: &[String], dir: &Path, index: usize) -> LoftProcess {
    TestLoft::new()
        .storage(Storage::Postgres(urls[0].clone()))
        .args(["--database-url", urls[1].as_str()])
        .args(["--database-pool-size", "4"])
        .log("warn")
        .stderr_file(&format!("outbox-node{index}.log"))
        .start_at(dir)
}

fn rand_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos(),
    );
    h.finish()
}

fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(120))
        .build()
        .expect("HTTP client")
}

/// One SQS JSON call.
async fn sqs(http: &reqwest::Client, base: &str, op: &str, body: Value) -> Value {
    let resp = http
        .post(format!("{base}/"))
        .header("x-amz-target", format!("AmazonSQS.{op}"))
        .header("content-type", "application/x-amz-json-1.0")
        .body(body.to_string())
        .send()
        .await
        .unwrap_or_else(|e| panic!("{op}: {e}"));
    let status = resp.status();
    let text = resp.text().await.expect("SQS body");
    assert!(status.is_success(), "{op}: HTTP {status}: {text}");
    serde_json::from_str(&text).expect("SQS JSON")
}

/// One SNS Query call: `(HTTP status, XML body)`, or `None` when the connection failed.
async fn sns(http: &reqwest::Client, base: &str, params: &[(&str, &str)]) -> Option<(u16, String)> {
    let body: String = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(params.iter().copied().chain([("Version", "2010-03-31")]))
        .finish();
    let resp = http
        .post(format!("{base}/"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body)
        .send()
        .await
        .ok()?;
    let status = resp.status().as_u16();
    Some((status, resp.text().await.ok()?))
}

async fn count(client: &tokio_postgres::Client, sql: &str) -> i64 {
    client.query_one(sql, &[]).await.expect(sql).get(0)
}

/// The scenario: topic `t` and queue `near` on cell 1, queue `far` on cell 2, both
/// subscribed; the relay is held at `gate` while node 0 (the only node) publishes; node 0
/// is killed there, its held connection ended; node 1, started then, relays after the
/// lease. `far` then holds the copy once, and the outbox is empty.
async fn killed_mid_relay(test: &str, gate: Gate) {
    let Some(mut cells) = Cells::start(test).await else {
        return;
    };
    let node0 = cells.nodes[0].url.clone();
    let http = http();
    let (status, body) = sns(&http, &node0, &[("Action", "CreateTopic"), ("Name", "t")])
        .await
        .expect("CreateTopic");
    assert_eq!(status, 200, "{body}");
    let topic = format!("arn:aws:sns:us-east-1:{ACCOUNT}:t");
    for name in ["near", "far"] {
        sqs(&http, &node0, "CreateQueue", json!({"QueueName": name})).await;
        let endpoint = format!("arn:aws:sqs:us-east-1:{ACCOUNT}:{name}");
        let (status, body) = sns(
            &http,
            &node0,
            &[
                ("Action", "Subscribe"),
                ("TopicArn", &topic),
                ("Protocol", "sqs"),
                ("Endpoint", &endpoint),
            ],
        )
        .await
        .expect("Subscribe");
        assert_eq!(status, 200, "{body}");
    }
    let (source, destination) = (cells.sql(0).await, cells.sql(1).await);
    assert_eq!(count(&source, "SELECT count(*) FROM topics").await, 1);
    assert_eq!(
        count(&source, "SELECT count(*) FROM queues").await,
        1,
        "near"
    );
    assert_eq!(
        count(&destination, "SELECT count(*) FROM queues").await,
        1,
        "far"
    );

    // The gate, closed: the test holds its lock.
    let (cell, table, event, row) = gate.place();
    let gated = if cell == 0 { &source } else { &destination };
    let key = gate.key();
    gated
        .batch_execute(&format!(
            "CREATE FUNCTION outbox_gate() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
               PERFORM pg_advisory_lock_shared({key}); PERFORM pg_advisory_unlock_shared({key}); \
               RETURN {row}; END $$; \
             CREATE TRIGGER outbox_gate BEFORE {event} ON {table} FOR EACH ROW \
               EXECUTE FUNCTION outbox_gate();"
        ))
        .await
        .expect("gate");
    let holder = cells.sql(cell).await;
    holder
        .execute("SELECT pg_advisory_lock($1)", &[&key])
        .await
        .expect("close the gate");

    // Node 0 publishes; its relay stops at the gate (the publish waits for it).
    let publisher = {
        let (http, base, topic) = (http.clone(), node0.clone(), topic.clone());
        tokio::spawn(async move {
            sns(
                &http,
                &base,
                &[
                    ("Action", "Publish"),
                    ("TopicArn", &topic),
                    ("Message", "once"),
                ],
            )
            .await
        })
    };
    let waiting = format!(
        "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND NOT granted \
         AND ((classid::bigint << 32) | objid::bigint) = {key}"
    );
    let held = crate::wait::poll(Duration::from_secs(30), || async {
        let rows = holder.query(waiting.as_str(), &[]).await.ok()?;
        rows.first().map(|r| r.get::<_, i32>(0))
    })
    .await
    .expect("the relay reaches the gate");
    match gate {
        Gate::BeforeDestinationCommit => {
            assert_eq!(
                count(&destination, "SELECT count(*) FROM messages").await,
                0
            );
        }
        Gate::AfterDestinationCommit => {
            assert_eq!(
                count(&destination, "SELECT count(*) FROM messages").await,
                1
            );
        }
    }
    assert_eq!(count(&source, "SELECT count(*) FROM cell_outbox").await, 1);
    assert_eq!(
        count(&source, "SELECT count(*) FROM messages").await,
        1,
        "near's copy"
    );

    // SIGKILL the relaying node. The server notices a dead client only when it writes
    // to it; end the held session as a TCP timeout would, then open the gate.
    cells.nodes[0].kill9();
    let ended: bool = holder
        .query_one("SELECT pg_terminate_backend($1)", &[&held])
        .await
        .expect("end the dead node's session")
        .get(0);
    assert!(ended);
    gated
        .batch_execute(&format!("DROP TRIGGER IF EXISTS outbox_gate ON {table}"))
        .await
        .expect("remove the gate");
    holder
        .execute("SELECT pg_advisory_unlock($1)", &[&key])
        .await
        .expect("open the gate");
    let answered = publisher.await.expect("publisher task");
    assert!(
        answered.is_none_or(|(status, _)| status != 200),
        "the publish's node died before answering"
    );

    // Node 1 relays the row once its lease (30 s) ends.
    let node1 = cells.add_node();
    let empty = crate::wait::poll(Duration::from_secs(90), || async {
        (count(&source, "SELECT count(*) FROM cell_outbox").await == 0).then_some(())
    })
    .await;
    assert!(empty.is_some(), "node 1 relayed the row within 90 s");
    assert_eq!(
        count(&destination, "SELECT count(*) FROM messages").await,
        1,
        "far holds the copy exactly once"
    );
    let got = sqs(
        &http,
        &node1,
        "ReceiveMessage",
        json!({
            "QueueUrl": format!("{node1}/{ACCOUNT}/far"),
            "MaxNumberOfMessages": 10,
            "WaitTimeSeconds": 0,
        }),
    )
    .await;
    let messages = got["Messages"].as_array().cloned().unwrap_or_default();
    assert_eq!(messages.len(), 1, "{got}");
    assert!(
        messages[0]["Body"].as_str().unwrap_or("").contains("once"),
        "{got}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relay_killed_before_the_destination_commit_is_repeated_once() {
    killed_mid_relay(
        "a_relay_killed_before_the_destination_commit_is_repeated_once",
        Gate::BeforeDestinationCommit,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relay_killed_after_the_destination_commit_repeats_nothing() {
    killed_mid_relay(
        "a_relay_killed_after_the_destination_commit_repeats_nothing",
        Gate::AfterDestinationCommit,
    )
    .await;
}

/// The scenario for a dead letter: queue `src` on cell 1 whose dead-letter queue `dlq`
/// (maxReceiveCount 1) is on cell 2; the relay is held at `gate` while node 0 receives
/// the message a second time (the receive moves it); node 0 is killed there; node 1
/// relays after the lease. `dlq` then holds the message once, with its MessageId and
/// DeadLetterQueueSourceArn, and `src` and the outbox are empty.
async fn dead_letter_killed_mid_relay(test: &str, gate: Gate) {
    let Some(mut cells) = Cells::start(test).await else {
        return;
    };
    let node0 = cells.nodes[0].url.clone();
    let http = http();
    for name in ["src", "dlq"] {
        sqs(&http, &node0, "CreateQueue", json!({"QueueName": name})).await;
    }
    let (source, destination) = (cells.sql(0).await, cells.sql(1).await);
    assert_eq!(
        count(&source, "SELECT count(*) FROM queues").await,
        1,
        "src"
    );
    assert_eq!(
        count(&destination, "SELECT count(*) FROM queues").await,
        1,
        "dlq"
    );
    let src = format!("{node0}/{ACCOUNT}/src");
    let policy = format!(
        r#"{{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:{ACCOUNT}:dlq","maxReceiveCount":"1"}}"#
    );
    sqs(
        &http,
        &node0,
        "SetQueueAttributes",
        json!({"QueueUrl": src, "Attributes": {"RedrivePolicy": policy}}),
    )
    .await;
    let sent = sqs(
        &http,
        &node0,
        "SendMessage",
        json!({"QueueUrl": src, "MessageBody": "poison"}),
    )
    .await;
    let receive = json!({
        "QueueUrl": src,
        "MaxNumberOfMessages": 10,
        "WaitTimeSeconds": 0,
        "VisibilityTimeout": 0,
    });
    let first = sqs(&http, &node0, "ReceiveMessage", receive.clone()).await;
    assert_eq!(
        first["Messages"].as_array().map_or(0, Vec::len),
        1,
        "{first}"
    );

    let (cell, table, event, row) = gate.place();
    let gated = if cell == 0 { &source } else { &destination };
    let key = gate.key() + 0x10;
    gated
        .batch_execute(&format!(
            "CREATE FUNCTION outbox_gate() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
               PERFORM pg_advisory_lock_shared({key}); PERFORM pg_advisory_unlock_shared({key}); \
               RETURN {row}; END $$; \
             CREATE TRIGGER outbox_gate BEFORE {event} ON {table} FOR EACH ROW \
               EXECUTE FUNCTION outbox_gate();"
        ))
        .await
        .expect("gate");
    let holder = cells.sql(cell).await;
    holder
        .execute("SELECT pg_advisory_lock($1)", &[&key])
        .await
        .expect("close the gate");

    // Node 0's second receive moves the message; its relay stops at the gate.
    let receiver = {
        let (http, base, body) = (http.clone(), node0.clone(), receive.clone());
        tokio::spawn(async move {
            let resp = http
                .post(format!("{base}/"))
                .header("x-amz-target", "AmazonSQS.ReceiveMessage")
                .header("content-type", "application/x-amz-json-1.0")
                .body(body.to_string())
                .send()
                .await
                .ok()?;
            Some(resp.status().as_u16())
        })
    };
    let waiting = format!(
        "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND NOT granted \
         AND ((classid::bigint << 32) | objid::bigint) = {key}"
    );
    let held = crate::wait::poll(Duration::from_secs(30), || async {
        let rows = holder.query(waiting.as_str(), &[]).await.ok()?;
        rows.first().map(|r| r.get::<_, i32>(0))
    })
    .await
    .expect("the relay reaches the gate");
    let stored = match gate {
        Gate::BeforeDestinationCommit => 0,
        Gate::AfterDestinationCommit => 1,
    };
    assert_eq!(
        count(&destination, "SELECT count(*) FROM messages").await,
        stored
    );
    assert_eq!(count(&source, "SELECT count(*) FROM cell_outbox").await, 1);
    assert_eq!(
        count(&source, "SELECT count(*) FROM messages").await,
        0,
        "the message left src in the receive's transaction"
    );

    cells.nodes[0].kill9();
    let ended: bool = holder
        .query_one("SELECT pg_terminate_backend($1)", &[&held])
        .await
        .expect("end the dead node's session")
        .get(0);
    assert!(ended);
    gated
        .batch_execute(&format!("DROP TRIGGER IF EXISTS outbox_gate ON {table}"))
        .await
        .expect("remove the gate");
    holder
        .execute("SELECT pg_advisory_unlock($1)", &[&key])
        .await
        .expect("open the gate");
    let answered = receiver.await.expect("receiver task");
    assert!(
        answered.is_none_or(|status| status != 200),
        "the receive's node died before answering"
    );

    let node1 = cells.add_node();
    let empty = crate::wait::poll(Duration::from_secs(90), || async {
        (count(&source, "SELECT count(*) FROM cell_outbox").await == 0).then_some(())
    })
    .await;
    assert!(empty.is_some(), "node 1 relayed the row within 90 s");
    assert_eq!(
        count(&destination, "SELECT count(*) FROM messages").await,
        1,
        "dlq holds the message exactly once"
    );
    let got = sqs(
        &http,
        &node1,
        "ReceiveMessage",
        json!({
            "QueueUrl": format!("{node1}/{ACCOUNT}/dlq"),
            "MaxNumberOfMessages": 10,
            "WaitTimeSeconds": 0,
            "MessageSystemAttributeNames": ["All"],
        }),
    )
    .await;
    let messages = got["Messages"].as_array().cloned().unwrap_or_default();
    assert_eq!(messages.len(), 1, "{got}");
    assert_eq!(messages[0]["Body"], "poison", "{got}");
    assert_eq!(messages[0]["MessageId"], sent["MessageId"], "{got}");
    assert_eq!(
        messages[0]["Attributes"]["DeadLetterQueueSourceArn"],
        format!("arn:aws:sqs:us-east-1:{ACCOUNT}:src"),
        "{got}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_letter_relay_killed_before_the_destination_commit_is_repeated_once() {
    dead_letter_killed_mid_relay(
        "a_dead_letter_relay_killed_before_the_destination_commit_is_repeated_once",
        Gate::BeforeDestinationCommit,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_letter_relay_killed_after_the_destination_commit_repeats_nothing() {
    dead_letter_killed_mid_relay(
        "a_dead_letter_relay_killed_after_the_destination_commit_repeats_nothing",
        Gate::AfterDestinationCommit,
    )
    .await;
}
