//! Several `loft serve` processes on one PostgreSQL database, driven over raw SQS JSON
//! requests: a shared queue received exactly once (within visibility timeouts) while one
//! node is killed with SIGKILL, FIFO order per group and deduplication across nodes, and a
//! long poll on one node woken by a send through another.
//!
//! Skipped (with a note, counted on the terminal by `skipped_multinode_cases`) unless
//! `LOFT_TEST_DATABASE_URL` names a database, and failed instead with
//! `LOFT_TEST_REQUIRE_POSTGRES=1` (CI); `scripts/with-postgres.sh` provides one. Each test works in a fresh schema, dropped at
//! its end. `LOFT_MULTINODE_MESSAGES` sets the size of the shared-queue run (default 50,000,
//! about 20 s in a debug build on 2 cores); the FIFO run uses a fifth of it.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tempfile::TempDir;

use crate::loft::{LoftProcess, Storage, TestLoft};

const ACCOUNT: &str = "000000000000";

fn database_url() -> Option<String> {
    std::env::var("LOFT_TEST_DATABASE_URL")
        .ok()
        .filter(|u| !u.is_empty())
}

/// Says on the terminal how many multi-node cases were skipped and why (or fails, with
/// `LOFT_TEST_REQUIRE_POSTGRES=1`); silent when they ran.
#[test]
fn skipped_multinode_cases() {
    crate::skips::postgres().report(
        "multi-node PostgreSQL cases",
        &["multinode::", "cells_down::"],
    );
}

fn message_count() -> usize {
    std::env::var("LOFT_MULTINODE_MESSAGES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(50_000)
}

/// One `loft serve` process on the cluster's database (a [`LoftProcess`]: SIGTERM and
/// wait on drop).
struct Node {
    loft: LoftProcess,
    base: String,
}

impl Node {
    fn start(url: &str, dir: &std::path::Path, index: usize, extra: &[String]) -> Node {
        let loft = TestLoft::new()
            .storage(Storage::Postgres(url.to_owned()))
            .args(["--database-pool-size", "8"])
            .args(extra)
            .log("warn")
            .stderr_file(&format!("node{index}.log"))
            .start_at(dir);
        Node {
            base: loft.url.clone(),
            loft,
        }
    }

    /// SIGKILL: no shutdown, open transactions die with the connections.
    fn kill9(&mut self) {
        self.loft.kill9();
    }
}

/// `n` nodes on a fresh schema of the test database; stops them and drops the schema on
/// drop.
struct Cluster {
    nodes: Vec<Node>,
    url: String,
    schema: String,
    /// The URL the nodes connect with (the schema on its search path).
    node_url: String,
    /// Extra `loft serve` arguments of every node.
    extra: Vec<String>,
    /// How many nodes were started in all (names each node's log file).
    started: usize,
    dir: TempDir,
}

impl Cluster {
    async fn start(n: usize, test: &str) -> Option<Cluster> {
        Cluster::start_with(n, test, &[]).await
    }

    /// `n` nodes started with the extra `loft serve` arguments `extra`.
    async fn start_with(n: usize, test: &str, extra: &[&str]) -> Option<Cluster> {
        let extra: Vec<String> = extra.iter().map(|a| a.to_string()).collect();
        let Some(url) = database_url() else {
            crate::skips::postgres().skip(&format!("multinode::{test}"));
            return None;
        };
        let schema = format!("loft_mn_{:016x}", rand_u64());
        // The nodes put the schema on their search path; they create its tables
        // themselves, all at once (the migration lock makes that safe).
        loft_store::PgStore::create_schema(&url, &schema)
            .await
            .expect("connect to LOFT_TEST_DATABASE_URL");
        let sep = if url.contains('?') { '&' } else { '?' };
        let node_url = format!("{url}{sep}options=-c%20search_path%3D{schema}");
        let dir = tempfile::tempdir().expect("temporary directory");
        // Started together, on an empty schema.
        let handles: Vec<_> = (0..n)
            .map(|i| {
                let node_url = node_url.clone();
                let path = dir.path().to_owned();
                let extra = extra.clone();
                std::thread::spawn(move || Node::start(&node_url, &path, i, &extra))
            })
            .collect();
        let nodes = handles
            .into_iter()
            .map(|h| h.join().expect("node start"))
            .collect();
        Some(Cluster {
            nodes,
            url,
            schema,
            node_url,
            extra,
            started: n,
            dir,
        })
    }

    /// Stops every node gracefully (SIGTERM, waiting for each to exit).
    fn stop_all(&mut self) {
        self.nodes.clear();
    }

    /// Stops node `i` gracefully; the others keep their indexes shifted down by one.
    fn stop(&mut self, i: usize) {
        drop(self.nodes.remove(i));
    }

    /// Starts one more node on the same database; returns its base URL.
    fn add_node(&mut self) -> String {
        let node = Node::start(&self.node_url, self.dir.path(), self.started, &self.extra);
        self.started += 1;
        let base = node.base.clone();
        self.nodes.push(node);
        base
    }

    fn bases(&self) -> Vec<String> {
        self.nodes.iter().map(|n| n.base.clone()).collect()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.nodes.clear();
        let (url, schema) = (self.url.clone(), self.schema.clone());
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            let _ = rt.block_on(loft_store::PgStore::drop_schema(&url, &schema));
        })
        .join();
    }
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
        .timeout(Duration::from_secs(40))
        .pool_max_idle_per_host(32)
        .build()
        .expect("HTTP client")
}

/// One SQS JSON call; `Err` for transport failures and non-200 answers.
async fn sqs(http: &reqwest::Client, base: &str, op: &str, body: Value) -> Result<Value, String> {
    let resp = http
        .post(format!("{base}/"))
        .header("x-amz-target", format!("AmazonSQS.{op}"))
        .header("content-type", "application/x-amz-json-1.0")
        .body(body.to_string())
        .send()
        .await
        .map_err(|e| format!("{op} to {base}: {e}"))?;
    let status = resp.status();
    let text = resp.text().await.map_err(|e| format!("{op} body: {e}"))?;
    if !status.is_success() {
        return Err(format!("{op} to {base}: HTTP {status}: {text}"));
    }
    serde_json::from_str(&text).map_err(|e| format!("{op}: not JSON ({e}): {text}"))
}

fn queue_url(base: &str, name: &str) -> String {
    format!("{base}/{ACCOUNT}/{name}")
}

/// What one receive of one message looked like from the client.
#[derive(Clone, Copy)]
struct Receipt {
    /// When the ReceiveMessage request was sent (before the server's claim).
    asked: Instant,
    /// When its answer arrived (after the claim).
    answered: Instant,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_nodes_share_a_queue_exactly_once_through_a_kill() {
    let Some(mut cluster) = Cluster::start(3, "three_nodes_share_a_queue").await else {
        return;
    };
    let bases = cluster.bases();
    let total = message_count();
    let visibility = Duration::from_secs(10);
    let http = http();
    sqs(
        &http,
        &bases[0],
        "CreateQueue",
        json!({"QueueName": "shared", "Attributes": {"VisibilityTimeout": "10"}}),
    )
    .await
    .expect("CreateQueue");

    let alive: Arc<Vec<AtomicBool>> = Arc::new((0..3).map(|_| AtomicBool::new(true)).collect());
    let sent = Arc::new(AtomicUsize::new(0));
    let in_doubt: Arc<Mutex<HashSet<usize>>> = Arc::default();
    let received: Arc<Mutex<HashMap<usize, Vec<Receipt>>>> = Arc::default();
    let distinct = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();

    const PRODUCERS: usize = 6;
    const CONSUMERS: usize = 9;
    let mut producers = Vec::new();
    for p in 0..PRODUCERS {
        let (http, bases, alive, sent, in_doubt) = (
            http.clone(),
            bases.clone(),
            alive.clone(),
            sent.clone(),
            in_doubt.clone(),
        );
        producers.push(tokio::spawn(async move {
            let ids: Vec<usize> = (p..total).step_by(PRODUCERS).collect();
            for (b, chunk) in ids.chunks(10).enumerate() {
                let entries: Vec<Value> = chunk
                    .iter()
                    .map(|i| json!({"Id": format!("e{i}"), "MessageBody": format!("m{i}")}))
                    .collect();
                let mut node = (b + p) % 3;
                let mut tries = 0;
                loop {
                    while !alive[node].load(Ordering::SeqCst) {
                        node = (node + 1) % 3;
                    }
                    let body = json!({
                        "QueueUrl": queue_url(&bases[node], "shared"),
                        "Entries": entries,
                    });
                    match sqs(&http, &bases[node], "SendMessageBatch", body).await {
                        Ok(v) => {
                            let ok = v["Successful"].as_array().map_or(0, Vec::len);
                            assert_eq!(ok, chunk.len(), "batch partly failed: {v}");
                            break;
                        }
                        Err(e) => {
                            // The batch may or may not have been stored: its bodies may
                            // now exist twice.
                            in_doubt.lock().unwrap().extend(chunk.iter().copied());
                            tries += 1;
                            assert!(tries < 20, "send keeps failing: {e}");
                            node = (node + 1) % 3;
                            // The producer's own retry pause.
                            crate::wait::pace(Duration::from_millis(20)).await;
                        }
                    }
                }
                sent.fetch_add(chunk.len(), Ordering::SeqCst);
            }
        }));
    }

    let mut consumers = Vec::new();
    for c in 0..CONSUMERS {
        let (http, bases, alive, received, distinct) = (
            http.clone(),
            bases.clone(),
            alive.clone(),
            received.clone(),
            distinct.clone(),
        );
        consumers.push(tokio::spawn(async move {
            let mut node = c % 3;
            let deadline = Instant::now() + Duration::from_secs(900);
            while distinct.load(Ordering::SeqCst) < total {
                assert!(
                    Instant::now() < deadline,
                    "only {} of {total} messages received in 15 minutes",
                    distinct.load(Ordering::SeqCst)
                );
                while !alive[node].load(Ordering::SeqCst) {
                    node = (node + 1) % 3;
                }
                let asked = Instant::now();
                let got = sqs(
                    &http,
                    &bases[node],
                    "ReceiveMessage",
                    json!({
                        "QueueUrl": queue_url(&bases[node], "shared"),
                        "MaxNumberOfMessages": 10,
                        "WaitTimeSeconds": 1,
                    }),
                )
                .await;
                let answered = Instant::now();
                let messages = match got {
                    Ok(v) => v["Messages"].as_array().cloned().unwrap_or_default(),
                    Err(_) => {
                        node = (node + 1) % 3;
                        continue;
                    }
                };
                if messages.is_empty() {
                    continue;
                }
                let mut entries = Vec::new();
                {
                    let mut received = received.lock().unwrap();
                    for (k, m) in messages.iter().enumerate() {
                        let body = m["Body"].as_str().expect("Body");
                        let i: usize = body[1..].parse().expect("m{i} body");
                        let seen = received.entry(i).or_default();
                        if seen.is_empty() {
                            distinct.fetch_add(1, Ordering::SeqCst);
                        }
                        seen.push(Receipt { asked, answered });
                        entries.push(
                            json!({"Id": format!("d{k}"), "ReceiptHandle": m["ReceiptHandle"]}),
                        );
                    }
                }
                let body =
                    json!({"QueueUrl": queue_url(&bases[node], "shared"), "Entries": entries});
                if sqs(&http, &bases[node], "DeleteMessageBatch", body)
                    .await
                    .is_err()
                {
                    // Not deleted: these come back after the visibility timeout.
                    node = (node + 1) % 3;
                }
            }
        }));
    }

    // Kill node 2 with SIGKILL while producers and consumers are busy on it.
    let busy = crate::wait::until(Duration::from_secs(120), || async {
        sent.load(Ordering::SeqCst) >= total * 2 / 5
    })
    .await;
    assert!(
        busy,
        "the producers did not send 2/5 of the messages in 120 s"
    );
    cluster.nodes[2].kill9();
    alive[2].store(false, Ordering::SeqCst);
    let killed_at = sent.load(Ordering::SeqCst);

    for p in producers {
        p.await.expect("producer");
    }
    let sent_in = started.elapsed();
    for c in consumers {
        c.await.expect("consumer");
    }
    let elapsed = started.elapsed();

    let received = received.lock().unwrap();
    let in_doubt = in_doubt.lock().unwrap();
    assert_eq!(received.len(), total, "every message was received");
    let mut redelivered = 0;
    for (i, receipts) in received.iter() {
        if receipts.len() < 2 {
            continue;
        }
        if in_doubt.contains(i) {
            continue; // Sent twice (the first send's answer was lost in the kill).
        }
        redelivered += 1;
        let mut r = receipts.clone();
        r.sort_by_key(|x| x.asked);
        for w in r.windows(2) {
            // The second claim happened after the first claim plus the visibility
            // timeout: the first request went out before the first claim, the second
            // answer came after the second claim.
            let gap = w[1].answered.duration_since(w[0].asked);
            assert!(
                gap + Duration::from_millis(50) >= visibility,
                "m{i} was handed out twice {gap:?} apart, inside its visibility timeout"
            );
        }
    }
    eprintln!(
        "multinode: {total} messages through 3 nodes (node 2 SIGKILLed after {killed_at} sends): \
         sent in {:.1} s, all received in {:.1} s ({:.0} msg/s end to end); \
         {} sends in doubt, {redelivered} redelivered after the visibility timeout",
        sent_in.as_secs_f64(),
        elapsed.as_secs_f64(),
        total as f64 / elapsed.as_secs_f64(),
        in_doubt.len(),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifo_order_and_dedup_hold_across_nodes() {
    let Some(cluster) = Cluster::start(3, "fifo_order_and_dedup").await else {
        return;
    };
    let bases = cluster.bases();
    let groups = 20;
    let per_group = (message_count() / 5 / groups).max(10);
    let total = groups * per_group;
    let http = http();
    sqs(
        &http,
        &bases[1],
        "CreateQueue",
        json!({"QueueName": "orders.fifo", "Attributes": {"FifoQueue": "true"}}),
    )
    .await
    .expect("CreateQueue");
    let started = Instant::now();

    let mut producers = Vec::new();
    for p in 0..4 {
        let (http, bases) = (http.clone(), bases.clone());
        producers.push(tokio::spawn(async move {
            let mine: Vec<usize> = (p..groups).step_by(4).collect();
            let mut batch_no = 0;
            for start in (0..per_group).step_by(10) {
                for &g in &mine {
                    let end = (start + 10).min(per_group);
                    let entries: Vec<Value> = (start..end)
                        .map(|i| {
                            json!({
                                "Id": format!("e{i}"),
                                "MessageBody": format!("g{g}-{i}"),
                                "MessageGroupId": format!("g{g}"),
                                "MessageDeduplicationId": format!("g{g}-{i}"),
                            })
                        })
                        .collect();
                    let node = (batch_no + p) % 3;
                    batch_no += 1;
                    let body = |n: usize| {
                        json!({"QueueUrl": queue_url(&bases[n], "orders.fifo"), "Entries": entries})
                    };
                    let first = sqs(&http, &bases[node], "SendMessageBatch", body(node))
                        .await
                        .expect("SendMessageBatch");
                    let ids = |v: &Value| -> Vec<String> {
                        v["Successful"]
                            .as_array()
                            .expect("Successful")
                            .iter()
                            .map(|e| e["MessageId"].as_str().unwrap().to_owned())
                            .collect()
                    };
                    assert_eq!(ids(&first).len(), end - start);
                    if batch_no % 3 == 0 {
                        // The same batch again through another node: deduplicated.
                        let other = (node + 1) % 3;
                        let again = sqs(&http, &bases[other], "SendMessageBatch", body(other))
                            .await
                            .expect("SendMessageBatch again");
                        assert_eq!(ids(&again), ids(&first), "dedup across nodes");
                    }
                }
            }
        }));
    }

    // Next index expected per group; advanced before the delete, which is what unlocks
    // the group for every other consumer on every node.
    let next: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
    let count = Arc::new(AtomicUsize::new(0));
    let mut consumers = Vec::new();
    for c in 0..6 {
        let (http, bases, next, count) = (http.clone(), bases.clone(), next.clone(), count.clone());
        consumers.push(tokio::spawn(async move {
            let node = c % 3;
            let url = queue_url(&bases[node], "orders.fifo");
            let deadline = Instant::now() + Duration::from_secs(600);
            while count.load(Ordering::SeqCst) < total {
                assert!(Instant::now() < deadline, "FIFO run timed out");
                let v = sqs(
                    &http,
                    &bases[node],
                    "ReceiveMessage",
                    json!({"QueueUrl": url, "MaxNumberOfMessages": 10, "WaitTimeSeconds": 1}),
                )
                .await
                .expect("ReceiveMessage");
                let messages = v["Messages"].as_array().cloned().unwrap_or_default();
                if messages.is_empty() {
                    continue;
                }
                let mut entries = Vec::new();
                {
                    let mut next = next.lock().unwrap();
                    for (k, m) in messages.iter().enumerate() {
                        let body = m["Body"].as_str().unwrap();
                        let (g, i) = body.split_once('-').unwrap();
                        let i: usize = i.parse().unwrap();
                        let expected = next.entry(g.to_owned()).or_default();
                        assert_eq!(i, *expected, "group {g}: got {body} out of order");
                        *expected += 1;
                        entries.push(
                            json!({"Id": format!("d{k}"), "ReceiptHandle": m["ReceiptHandle"]}),
                        );
                    }
                }
                count.fetch_add(entries.len(), Ordering::SeqCst);
                let v = sqs(
                    &http,
                    &bases[node],
                    "DeleteMessageBatch",
                    json!({"QueueUrl": url, "Entries": entries}),
                )
                .await
                .expect("DeleteMessageBatch");
                assert!(
                    v["Failed"].as_array().is_none_or(Vec::is_empty),
                    "delete failed: {v}"
                );
            }
        }));
    }
    for p in producers {
        p.await.expect("producer");
    }
    for c in consumers {
        c.await.expect("consumer");
    }
    assert_eq!(count.load(Ordering::SeqCst), total);
    let next = next.lock().unwrap();
    assert!(
        next.values().all(|n| *n == per_group),
        "every group complete"
    );
    eprintln!(
        "multinode: FIFO {total} messages in {groups} groups through 3 nodes in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_poll_on_one_node_wakes_on_a_send_through_another() {
    let Some(cluster) = Cluster::start(2, "long_poll_wakes_across_nodes").await else {
        return;
    };
    let bases = cluster.bases();
    let http = http();
    sqs(
        &http,
        &bases[0],
        "CreateQueue",
        json!({"QueueName": "wake"}),
    )
    .await
    .expect("CreateQueue");
    let mut latencies = Vec::new();
    for round in 0..5 {
        let (a, b) = (round % 2, (round + 1) % 2);
        let poll = {
            let (http, base) = (http.clone(), bases[a].clone());
            tokio::spawn(async move {
                let v = sqs(
                    &http,
                    &base,
                    "ReceiveMessage",
                    json!({"QueueUrl": queue_url(&base, "wake"), "WaitTimeSeconds": 20}),
                )
                .await
                .expect("ReceiveMessage");
                (v, Instant::now())
            })
        };
        // Let the poll reach its wait: it is still waiting 300 ms on (watched, not slept).
        crate::wait::holds_for(
            "the long poll waiting",
            Duration::from_millis(300),
            || async { !poll.is_finished() },
        )
        .await;
        let body = format!("ping {round}");
        let before_send = Instant::now();
        sqs(
            &http,
            &bases[b],
            "SendMessage",
            json!({"QueueUrl": queue_url(&bases[b], "wake"), "MessageBody": body}),
        )
        .await
        .expect("SendMessage");
        let (v, answered) = tokio::time::timeout(Duration::from_secs(10), poll)
            .await
            .expect("the long poll answered within 10 s")
            .expect("poll task");
        let messages = v["Messages"].as_array().cloned().unwrap_or_default();
        assert_eq!(messages.len(), 1, "the poll got the message: {v}");
        assert_eq!(messages[0]["Body"], body.as_str());
        let latency = answered.saturating_duration_since(before_send);
        assert!(
            latency < Duration::from_secs(2),
            "woken {latency:?} after the send (the 20 s wait was not cut short by the notification)"
        );
        latencies.push(latency);
        let handle = messages[0]["ReceiptHandle"].clone();
        sqs(
            &http,
            &bases[a],
            "DeleteMessage",
            json!({"QueueUrl": queue_url(&bases[a], "wake"), "ReceiptHandle": handle}),
        )
        .await
        .expect("DeleteMessage");
    }
    latencies.sort();
    eprintln!(
        "multinode: long poll woken across nodes, send-to-answer latency median {:?}, max {:?}",
        latencies[latencies.len() / 2],
        latencies[latencies.len() - 1]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn each_topic_delivery_reaches_its_endpoint_once_whatever_node_published() {
    let Some(cluster) = Cluster::start(3, "each_topic_delivery_once").await else {
        return;
    };
    let bases = cluster.bases();
    let http = http();
    let mut sink = super::common::Sink::start().await;
    let created = http
        .post(format!("{}/topics/events", bases[0]))
        .send()
        .await
        .expect("create topic");
    assert_eq!(created.status().as_u16(), 201);
    let subscribed = http
        .post(format!("{}/topics/events/subscribe", bases[1]))
        .json(&json!({"endpoint": sink.url("/hook")}))
        .send()
        .await
        .expect("subscribe");
    assert_eq!(subscribed.status().as_u16(), 201);

    const MESSAGES: usize = 300;
    let mut publishers = Vec::new();
    for p in 0..3 {
        let (http, bases) = (http.clone(), bases.clone());
        publishers.push(tokio::spawn(async move {
            for i in (p..MESSAGES).step_by(3) {
                let base = &bases[i % 3];
                let r = http
                    .post(format!("{base}/topics/events/publish"))
                    .json(&json!({"message": format!("n{i}")}))
                    .send()
                    .await
                    .expect("publish");
                assert_eq!(r.status().as_u16(), 200);
            }
        }));
    }
    for p in publishers {
        p.await.expect("publisher");
    }
    let mut seen = HashSet::new();
    while seen.len() < MESSAGES {
        let r = sink.next().await;
        let v = r.json();
        assert_eq!(v["topic"], "events");
        let m = v["message"].as_str().expect("message").to_owned();
        assert!(seen.insert(m.clone()), "{m} was delivered twice");
    }
    // Nothing more arrives within 2 s: no node delivered a leased delivery again.
    let again = crate::wait::poll(Duration::from_secs(2), || {
        std::future::ready(sink.try_next())
    })
    .await;
    if let Some(extra) = again {
        panic!(
            "a delivery arrived twice: {}",
            String::from_utf8_lossy(&extra.body)
        );
    }
}

/// One SNS Query call: `(HTTP status, XML body)`.
async fn sns(http: &reqwest::Client, base: &str, params: &[(&str, &str)]) -> (u16, String) {
    let body: String = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(params.iter().copied().chain([("Version", "2010-03-31")]))
        .finish();
    let resp = http
        .post(format!("{base}/"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body)
        .send()
        .await
        .expect("SNS request");
    let status = resp.status().as_u16();
    (status, resp.text().await.expect("SNS body"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_data_protection_policy_put_on_one_node_is_enforced_by_another() {
    let Some(cluster) = Cluster::start(2, "data_protection_across_nodes").await else {
        return;
    };
    let bases = cluster.bases();
    let http = http();
    let topic = format!("arn:aws:sns:us-east-1:{ACCOUNT}:dp-nodes");
    let (status, body) = sns(
        &http,
        &bases[0],
        &[("Action", "CreateTopic"), ("Name", "dp-nodes")],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let policy = json!({"Name": "p", "Version": "2021-06-01", "Statement": [{
        "DataDirection": "Inbound", "Principal": ["*"],
        "DataIdentifier": ["arn:aws:dataprotection::aws:data-identifier/EmailAddress"],
        "Operation": {"Deny": {}}}]})
    .to_string();
    let (status, body) = sns(
        &http,
        &bases[0],
        &[
            ("Action", "PutDataProtectionPolicy"),
            ("ResourceArn", &topic),
            ("DataProtectionPolicy", &policy),
        ],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    // The other node reads the same policy and enforces it on its first publish.
    let (status, body) = sns(
        &http,
        &bases[1],
        &[
            ("Action", "GetDataProtectionPolicy"),
            ("ResourceArn", &topic),
        ],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("EmailAddress"), "{body}");
    let (status, body) = sns(
        &http,
        &bases[1],
        &[
            ("Action", "Publish"),
            ("TopicArn", &topic),
            ("Message", "mail me at jo@example.com"),
        ],
    )
    .await;
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("<Code>AuthorizationError</Code>"), "{body}");
    let (status, body) = sns(
        &http,
        &bases[1],
        &[
            ("Action", "Publish"),
            ("TopicArn", &topic),
            ("Message", "no address"),
        ],
    )
    .await;
    assert_eq!(status, 200, "{body}");
}

// ----- what once lived in a node's memory (the scenarios of `durable_state`)

use crate::durable_state::{self as state, Clients};

/// Runs one `durable_state` scenario's first phase through node 0 and its second through
/// node 1, both running.
macro_rules! across_nodes {
    ($test:ident, $before:path, $after:path) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $test() {
            let Some(cluster) = Cluster::start(2, stringify!($test)).await else {
                return;
            };
            let bases = cluster.bases();
            let s = $before(&Clients::of(&bases[0])).await;
            $after(&Clients::of(&bases[1]), s).await;
        }
    };
}

across_nodes!(
    fifo_topic_deduplication_and_sequence_numbers_hold_across_nodes,
    state::fifo_topic_before,
    state::fifo_topic_after
);

across_nodes!(
    a_fifo_receive_attempt_is_replayed_through_another_node,
    state::attempt_before,
    state::attempt_after
);

across_nodes!(
    platforms_made_through_one_node_are_seen_by_another,
    state::platform_before,
    state::platform_after
);

/// Purge and delete holds: the second phase through the other node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn purge_and_delete_holds_hold_across_nodes() {
    let Some(cluster) = Cluster::start(2, "purge_and_delete_holds").await else {
        return;
    };
    let bases = cluster.bases();
    state::holds_before(&Clients::of(&bases[0])).await;
    state::holds_after(&Clients::of(&bases[1])).await;
}

/// Move tasks started through node 0 are listed through node 1; node 0 stops while one
/// runs, and node 1 takes it over and completes it. A task started through node 1 is
/// cancelled through node 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn move_tasks_are_taken_over_and_cancelled_across_nodes() {
    let Some(mut cluster) = Cluster::start(2, "move_tasks_across_nodes").await else {
        return;
    };
    let bases = cluster.bases();
    let (first, second) = (Clients::of(&bases[0]), Clients::of(&bases[1]));
    let s = state::move_before(&first).await;
    let (status, _, handle) = state::newest_task(&second, "orders-dlq").await;
    assert_eq!(status, "RUNNING", "node 1 sees node 0's task");
    assert!(handle.is_some());
    // A task running on node 1, cancelled through node 0: what the cancel reports moved
    // is what arrived, and node 1 lists it cancelled.
    state::dead_letters(&second, "audit", "audit-dlq", 3).await;
    let handle = state::start_task(&second, "audit-dlq", 1).await;
    let cancelled = first
        .sqs
        .cancel_message_move_task()
        .task_handle(&handle)
        .send()
        .await
        .expect("CancelMessageMoveTask through the other node");
    let moved = cancelled.approximate_number_of_messages_moved();
    assert_eq!(state::visible(&second, "audit").await, moved);
    let (status, listed, _) = state::newest_task(&second, "audit-dlq").await;
    assert_eq!((status.as_str(), listed), ("CANCELLED", moved));
    // Node 0 stops mid-task: node 1 resumes it.
    cluster.stop(0);
    state::move_after(&second, s).await;
}

/// A task running on node 0 whose destination queue is deleted through node 1 ends
/// `FAILED` with AWS's FailureReason `AWS.SimpleQueueService.NonExistentQueue` (recorded,
/// LocalStack's `aws.validated` `test_move_task_delete_destination_queue_while_running`),
/// and every message it did not move is still in the dead-letter queue, read through node 1.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_tasks_destination_deleted_on_another_node_fails_it_and_keeps_its_messages() {
    let Some(cluster) = Cluster::start(2, "move_destination_deleted_across_nodes").await else {
        return;
    };
    let bases = cluster.bases();
    let (first, second) = (Clients::of(&bases[0]), Clients::of(&bases[1]));
    const N: i64 = 6;
    state::dead_letters(&first, "refunds", "refunds-dlq", N as usize).await;
    let elsewhere = first
        .sqs
        .create_queue()
        .queue_name("refunds-elsewhere")
        .send()
        .await
        .expect("CreateQueue")
        .queue_url()
        .expect("QueueUrl")
        .to_owned();
    let arn = |name: &str| format!("arn:aws:sqs:us-east-1:000000000000:{name}");
    first
        .sqs
        .start_message_move_task()
        .source_arn(arn("refunds-dlq"))
        .destination_arn(arn("refunds-elsewhere"))
        .max_number_of_messages_per_second(1)
        .send()
        .await
        .expect("StartMessageMoveTask");
    second
        .sqs
        .delete_queue()
        .queue_url(&elsewhere)
        .send()
        .await
        .expect("DeleteQueue through the other node");
    let ended = crate::wait::until(Duration::from_secs(40), || async {
        state::newest_task(&second, "refunds-dlq").await.0 != "RUNNING"
    })
    .await;
    assert!(ended, "the task still runs 40 s after its destination went");
    let listed = second
        .sqs
        .list_message_move_tasks()
        .source_arn(arn("refunds-dlq"))
        .send()
        .await
        .expect("ListMessageMoveTasks");
    let task = &listed.results()[0];
    assert_eq!(task.status(), Some("FAILED"), "{task:?}");
    assert_eq!(
        task.failure_reason(),
        Some("AWS.SimpleQueueService.NonExistentQueue"),
        "{task:?}"
    );
    let moved = task.approximate_number_of_messages_moved();
    assert_eq!(
        state::visible(&second, "refunds-dlq").await + moved,
        N,
        "{moved} moved before the delete; the rest stay"
    );
}

/// The same scenarios, every node stopped in between and a new node started on the
/// database: a restart on PostgreSQL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn state_survives_restarting_every_node() {
    let Some(mut cluster) = Cluster::start(1, "state_survives_restarting_every_node").await else {
        return;
    };
    let c = Clients::of(&cluster.bases()[0]);
    let topic = state::fifo_topic_before(&c).await;
    state::holds_before(&c).await;
    let attempt = state::attempt_before(&c).await;
    let moves = state::move_before(&c).await;
    let platform = state::platform_before(&c).await;
    cluster.stop_all();
    let c = Clients::of(&cluster.add_node());
    state::fifo_topic_after(&c, topic).await;
    state::holds_after(&c).await;
    state::attempt_after(&c, attempt).await;
    state::move_after(&c, moves).await;
    state::platform_after(&c, platform).await;
}

/// A receipt handle one node issued is verified by every node of the database (the key
/// that signs handles is kept in it), and by a node started after every other stopped; a
/// forged one is refused by all alike (SQS API Reference, DeleteMessage /
/// ChangeMessageVisibility: `ReceiptHandleIsInvalid`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receipt_handle_from_one_node_works_on_another_and_after_restart() {
    let Some(mut cluster) = Cluster::start(2, "receipt_handles_across_nodes").await else {
        return;
    };
    let bases = cluster.bases();
    let http = http();
    sqs(
        &http,
        &bases[0],
        "CreateQueue",
        json!({"QueueName": "handles"}),
    )
    .await
    .expect("CreateQueue");
    let url = queue_url(&bases[0], "handles");
    for body in ["a", "b"] {
        sqs(
            &http,
            &bases[0],
            "SendMessage",
            json!({"QueueUrl": url, "MessageBody": body}),
        )
        .await
        .expect("SendMessage");
    }
    let got = sqs(
        &http,
        &bases[0],
        "ReceiveMessage",
        json!({"QueueUrl": url, "MaxNumberOfMessages": 10, "VisibilityTimeout": 300}),
    )
    .await
    .expect("ReceiveMessage");
    let handles: Vec<String> = got["Messages"]
        .as_array()
        .expect("two messages")
        .iter()
        .map(|m| m["ReceiptHandle"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(handles.len(), 2);
    // A forged handle (one character of the first changed) is refused by node 1.
    let mut forged: Vec<char> = handles[0].chars().collect();
    forged[20] = if forged[20] == 'A' { 'B' } else { 'A' };
    let forged: String = forged.into_iter().collect();
    let refused = sqs(
        &http,
        &bases[1],
        "DeleteMessage",
        json!({"QueueUrl": queue_url(&bases[1], "handles"), "ReceiptHandle": forged}),
    )
    .await
    .expect_err("a forged handle is refused");
    assert!(refused.contains("ReceiptHandleIsInvalid"), "{refused}");
    // Node 1 accepts node 0's genuine handle.
    sqs(
        &http,
        &bases[1],
        "ChangeMessageVisibility",
        json!({"QueueUrl": queue_url(&bases[1], "handles"), "ReceiptHandle": handles[0], "VisibilityTimeout": 600}),
    )
    .await
    .expect("node 0's handle on node 1");
    sqs(
        &http,
        &bases[1],
        "DeleteMessage",
        json!({"QueueUrl": queue_url(&bases[1], "handles"), "ReceiptHandle": handles[0]}),
    )
    .await
    .expect("node 0's handle deletes on node 1");
    // Every node stops; a new one accepts the other handle.
    cluster.stop_all();
    let base = cluster.add_node();
    sqs(
        &http,
        &base,
        "ChangeMessageVisibility",
        json!({"QueueUrl": queue_url(&base, "handles"), "ReceiptHandle": handles[1], "VisibilityTimeout": 600}),
    )
    .await
    .expect("the handle after a restart");
    sqs(
        &http,
        &base,
        "DeleteMessage",
        json!({"QueueUrl": queue_url(&base, "handles"), "ReceiptHandle": handles[1]}),
    )
    .await
    .expect("the handle deletes after a restart");
    let attrs = sqs(
        &http,
        &base,
        "GetQueueAttributes",
        json!({"QueueUrl": queue_url(&base, "handles"), "AttributeNames": ["All"]}),
    )
    .await
    .expect("GetQueueAttributes");
    assert_eq!(attrs["Attributes"]["ApproximateNumberOfMessages"], "0");
    assert_eq!(
        attrs["Attributes"]["ApproximateNumberOfMessagesNotVisible"],
        "0"
    );
}

/// The queue cap counts the database's queues: a node refuses on a count the store just
/// gave, whichever node created or deleted them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_queue_cap_counts_every_nodes_queues() {
    let Some(cluster) = Cluster::start_with(
        2,
        "the_queue_cap_counts_every_nodes_queues",
        &["--max-queues", "3"],
    )
    .await
    else {
        return;
    };
    let bases = cluster.bases();
    let (a, b) = (Clients::of(&bases[0]), Clients::of(&bases[1]));
    let mut urls = Vec::new();
    for name in ["q1", "q2", "q3"] {
        let out = a
            .sqs
            .create_queue()
            .queue_name(name)
            .send()
            .await
            .expect("CreateQueue");
        urls.push(out.queue_url().expect("url").to_owned());
    }
    let err = b
        .sqs
        .create_queue()
        .queue_name("q4")
        .send()
        .await
        .expect_err("node 1 counts node 0's queues");
    assert_eq!(
        aws_sdk_sqs::error::ProvideErrorMetadata::code(&err),
        Some("OverLimit"),
        "{err:?}"
    );
    a.sqs
        .delete_queue()
        .queue_url(&urls[0])
        .send()
        .await
        .expect("DeleteQueue");
    // Node 1's count said "full"; before refusing it counts again, and there is room.
    b.sqs
        .create_queue()
        .queue_name("q4")
        .send()
        .await
        .expect("a slot freed through node 0");
}

/// An SQS event source mapping from the config file of three nodes: exactly one node polls
/// it at a time (with MaximumConcurrency 2, never more than 2 batches are in flight across
/// the cluster), and when the nodes stop one after another, the last one drains the queue.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_event_source_mapping_runs_on_one_node_at_a_time() {
    use axum::body::Bytes;
    use axum::extract::State;
    #[derive(Clone, Default)]
    struct Host {
        in_flight: Arc<AtomicUsize>,
        most: Arc<AtomicUsize>,
        bodies: Arc<Mutex<Vec<String>>>,
    }
    async fn handle(State(h): State<Host>, body: Bytes) -> &'static str {
        let now = h.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        h.most.fetch_max(now, Ordering::SeqCst);
        // The function's work: long enough for batches of several pollers to overlap.
        crate::wait::pace(Duration::from_millis(30)).await;
        let event: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        for r in event["Records"].as_array().into_iter().flatten() {
            h.bodies
                .lock()
                .unwrap()
                .push(r["body"].as_str().unwrap_or_default().to_owned());
        }
        h.in_flight.fetch_sub(1, Ordering::SeqCst);
        "{}"
    }
    let host = Host::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = axum::Router::new()
        .fallback(axum::routing::post(handle))
        .with_state(host.clone());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("loft.toml");
    std::fs::write(
        &config,
        format!(
            r#"
[[functions]]
name = "f"
url = "http://{addr}/"

[[queues]]
name = "jobs"

[[event_source_mappings]]
function = "f"
queue = "jobs"
batch_size = 5
maximum_concurrency = 2
"#
        ),
    )
    .unwrap();
    let config = config.to_string_lossy().into_owned();
    let Some(mut cluster) = Cluster::start_with(
        3,
        "an_event_source_mapping_runs_on_one_node_at_a_time",
        &["--config", &config],
    )
    .await
    else {
        return;
    };
    let http = http();
    let mut sent = Vec::new();
    let send_some = |base: String, from: usize, http: reqwest::Client| async move {
        for i in from..from + 100 {
            sqs(
                &http,
                &base,
                "SendMessage",
                json!({"QueueUrl": queue_url(&base, "jobs"), "MessageBody": format!("m{i}")}),
            )
            .await
            .expect("send");
        }
    };
    for round in 0..3 {
        let base = cluster.bases()[0].clone();
        send_some(base, round * 100, http.clone()).await;
        sent.extend((round * 100..round * 100 + 100).map(|i| format!("m{i}")));
        let seen = || -> HashSet<String> { host.bodies.lock().unwrap().iter().cloned().collect() };
        let all = crate::wait::until(Duration::from_secs(60), || {
            let seen = seen();
            std::future::ready(sent.iter().all(|b| seen.contains(b)))
        })
        .await;
        assert!(
            all,
            "round {round}: {} of {} processed",
            seen().len(),
            sent.len()
        );
        if round < 2 {
            // A graceful stop hands the mapping to another node at once.
            cluster.stop(0);
        }
    }
    assert!(
        host.most.load(Ordering::SeqCst) <= 2,
        "{} batches in flight at once: more than one node polled the mapping",
        host.most.load(Ordering::SeqCst)
    );
    assert!(host.most.load(Ordering::SeqCst) >= 1);
}

/// A queue made fair by sends through one node is received in fair order through another:
/// the flag and the keys are in the database.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fair_queue_is_fair_through_every_node() {
    let Some(cluster) = Cluster::start(2, "fair_queue_across_nodes").await else {
        return;
    };
    let bases = cluster.bases();
    let http = http();
    sqs(
        &http,
        &bases[0],
        "CreateQueue",
        json!({"QueueName": "tenants"}),
    )
    .await
    .expect("CreateQueue");
    let url = queue_url(&bases[0], "tenants");
    for batch in 0..100 {
        let entries: Vec<Value> = (0..10)
            .map(|i| {
                json!({"Id": format!("e{i}"), "MessageBody": format!("noisy-{}", batch * 10 + i),
                       "MessageGroupId": "noisy"})
            })
            .collect();
        sqs(
            &http,
            &bases[0],
            "SendMessageBatch",
            json!({"QueueUrl": url, "Entries": entries}),
        )
        .await
        .expect("SendMessageBatch");
    }
    sqs(
        &http,
        &bases[0],
        "SendMessage",
        json!({"QueueUrl": url, "MessageBody": "quiet", "MessageGroupId": "quiet"}),
    )
    .await
    .expect("SendMessage");
    let v = sqs(
        &http,
        &bases[1],
        "ReceiveMessage",
        json!({"QueueUrl": queue_url(&bases[1], "tenants"), "MaxNumberOfMessages": 10}),
    )
    .await
    .expect("ReceiveMessage");
    let bodies: Vec<&str> = v["Messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter_map(|m| m["Body"].as_str())
        .collect();
    assert!(bodies.contains(&"quiet"), "{bodies:?}");
}

/// Two nodes see the same regional queues and topics: one name made in two regions through
/// node 0 is two queues and two topics through node 1, each region listing and resolving
/// its own, with their messages.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_see_the_same_regional_queues_and_topics() {
    let Some(cluster) =
        Cluster::start(2, "two_nodes_see_the_same_regional_queues_and_topics").await
    else {
        return;
    };
    let bases = cluster.bases();
    let made = crate::regions::before(&bases[0]).await;
    let made = made.rebased(&bases[0], &bases[1]);
    crate::regions::after(&bases[1], made).await;
}

/// SNS message replay on two nodes: a replay subscribed through one node, while both
/// nodes poll for replays and both publish live messages, and the node the subscription
/// was made on stops part-way: every archived and live message reaches the queue exactly
/// once (no two nodes ran a batch, no live copy slipped past the replay), in topic order
/// within each group (SNS Developer Guide, "Amazon SNS message replay for FIFO topic
/// subscribers").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_runs_once_across_nodes() {
    use aws_sdk_sns::types::PublishBatchRequestEntry;
    let Some(mut cluster) = Cluster::start(2, "a_replay_runs_once_across_nodes").await else {
        return;
    };
    let bases = cluster.bases();
    let nodes = [
        super::durable_state::Clients::of(&bases[0]),
        super::durable_state::Clients::of(&bases[1]),
    ];
    let topic = nodes[0]
        .sns
        .create_topic()
        .name("replayed.fifo")
        .attributes("FifoTopic", "true")
        .attributes("ArchivePolicy", r#"{"MessageRetentionPeriod":"1"}"#)
        .send()
        .await
        .expect("CreateTopic")
        .topic_arn()
        .expect("TopicArn")
        .to_owned();
    let start = aws_sdk_sns::primitives::DateTime::from_secs(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64
            - 5,
    )
    .fmt(aws_sdk_sns::primitives::DateTimeFormat::DateTime)
    .unwrap();
    let publish = |node: usize, from: usize, count: usize| {
        let (sns, topic) = (nodes[node].sns.clone(), topic.clone());
        async move {
            let entries = (from..from + count)
                .map(|i| {
                    PublishBatchRequestEntry::builder()
                        .id(format!("e{i}"))
                        .message(format!("m{i}"))
                        .message_group_id(format!("g{}", i % 3))
                        .message_deduplication_id(format!("d{i}"))
                        .build()
                        .unwrap()
                })
                .collect();
            let out = sns
                .publish_batch()
                .topic_arn(&topic)
                .set_publish_batch_request_entries(Some(entries))
                .send()
                .await
                .expect("PublishBatch");
            assert!(out.failed().is_empty(), "{:?}", out.failed());
        }
    };
    const ARCHIVED: usize = 1_000;
    const LIVE: usize = 60;
    for b in 0..ARCHIVED / 10 {
        publish(b % 2, b * 10, 10).await;
    }
    let url = nodes[1]
        .sqs
        .create_queue()
        .queue_name("replay.fifo")
        .attributes(aws_sdk_sqs::types::QueueAttributeName::FifoQueue, "true")
        .send()
        .await
        .expect("CreateQueue")
        .queue_url()
        .unwrap()
        .to_owned();
    let sub = nodes[0]
        .sns
        .subscribe()
        .topic_arn(&topic)
        .protocol("sqs")
        .endpoint(format!("arn:aws:sqs:us-east-1:{ACCOUNT}:replay.fifo"))
        .attributes(
            "ReplayPolicy",
            format!(r#"{{"PointType":"Timestamp","StartingPoint":"{start}"}}"#),
        )
        .send()
        .await
        .expect("Subscribe")
        .subscription_arn()
        .unwrap()
        .to_owned();
    // Live messages through both nodes while the replay runs; the subscribing node stops
    // part-way through them.
    for b in 0..LIVE / 10 {
        publish(b % 2, ARCHIVED + b * 10, 10).await;
    }
    drop(nodes);
    cluster.stop(0);
    let node = super::durable_state::Clients::of(&cluster.bases()[0]);
    let attributes = || async {
        node.sns
            .get_subscription_attributes()
            .subscription_arn(&sub)
            .send()
            .await
            .expect("GetSubscriptionAttributes")
            .attributes()
            .cloned()
            .unwrap_or_default()
    };
    let completed = crate::wait::until(Duration::from_secs(60), || async {
        attributes().await.get("ReplayStatus").map(String::as_str) == Some("Completed")
    })
    .await;
    assert!(
        completed,
        "the replay did not complete: {:?}",
        attributes().await
    );
    // Every message once, each group in topic order.
    let mut seen: HashMap<String, u64> = HashMap::new();
    let mut last: HashMap<String, u128> = HashMap::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while seen.len() < ARCHIVED + LIVE {
        assert!(Instant::now() < deadline, "only {} arrived", seen.len());
        let got = node
            .sqs
            .receive_message()
            .queue_url(&url)
            .max_number_of_messages(10)
            .wait_time_seconds(1)
            .send()
            .await
            .expect("ReceiveMessage");
        let mut entries = Vec::new();
        for (i, m) in got.messages().iter().enumerate() {
            let env: Value = serde_json::from_str(m.body().unwrap()).unwrap();
            let body = env["Message"].as_str().unwrap().to_owned();
            let index: usize = body[1..].parse().unwrap();
            let group = format!("g{}", index % 3);
            let sequence: u128 = env["SequenceNumber"].as_str().unwrap().parse().unwrap();
            let previous = last.insert(group.clone(), sequence).unwrap_or(0);
            assert!(
                sequence > previous,
                "{body} came after a later message of {group}"
            );
            *seen.entry(body.clone()).or_default() += 1;
            assert_eq!(seen[&body], 1, "{body} arrived twice");
            entries.push(
                aws_sdk_sqs::types::DeleteMessageBatchRequestEntry::builder()
                    .id(i.to_string())
                    .receipt_handle(m.receipt_handle().unwrap())
                    .build()
                    .unwrap(),
            );
        }
        // One DeleteMessageBatch per receive: a FIFO queue allows 300 DeleteMessage calls
        // per second (AWS's quota, enforced by Loft), which one-by-one deletes of a fast
        // receive loop can pass.
        if !entries.is_empty() {
            let out = node
                .sqs
                .delete_message_batch()
                .queue_url(&url)
                .set_entries(Some(entries))
                .send()
                .await
                .expect("DeleteMessageBatch");
            assert!(out.failed().is_empty(), "{:?}", out.failed());
        }
    }
    let extra = node
        .sqs
        .receive_message()
        .queue_url(&url)
        .wait_time_seconds(1)
        .send()
        .await
        .expect("ReceiveMessage");
    assert!(extra.messages().is_empty(), "more than every message once");
}

/// The console's listing of one database is the same through every node (pages, the
/// dead-letter queue's depth), while each node's chart history is its own: both sample the
/// shared counts, but only the node that served the sends shows a send rate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_lists_the_same_queues_everywhere_and_each_node_charts_its_own_rates() {
    let Some(cluster) = Cluster::start_with(
        2,
        "console_lists_the_same_queues",
        &["--console-sample-interval", "0.05"],
    )
    .await
    else {
        return;
    };
    let bases = cluster.bases();
    let http = http();
    for i in 1..=12 {
        sqs(
            &http,
            &bases[i % 2],
            "CreateQueue",
            json!({"QueueName": format!("c-{i:02}")}),
        )
        .await
        .expect("CreateQueue");
    }
    sqs(
        &http,
        &bases[0],
        "CreateQueue",
        json!({"QueueName": "c-dlq"}),
    )
    .await
    .expect("CreateQueue");
    sqs(
        &http,
        &bases[1],
        "SetQueueAttributes",
        json!({"QueueUrl": queue_url(&bases[1], "c-01"), "Attributes": {"RedrivePolicy":
            format!("{{\"deadLetterTargetArn\":\"arn:aws:sqs:us-east-1:{ACCOUNT}:c-dlq\",\"maxReceiveCount\":\"2\"}}")}}),
    )
    .await
    .expect("SetQueueAttributes");
    sqs(
        &http,
        &bases[1],
        "SendMessage",
        json!({"QueueUrl": queue_url(&bases[1], "c-dlq"), "MessageBody": "dead"}),
    )
    .await
    .expect("SendMessage");
    let listing = |base: String, path: &'static str| {
        let http = http.clone();
        async move {
            let resp = http.get(format!("{base}{path}")).send().await.unwrap();
            let total = resp.headers()["x-total-count"].to_str().unwrap().to_owned();
            let body: Value = resp.json().await.unwrap();
            (total, body)
        }
    };
    for base in &bases {
        let (total, page) = listing(base.clone(), "/_loft/queues?offset=10&limit=5").await;
        assert_eq!(total, "13", "{base}");
        let names: Vec<&str> = page
            .as_array()
            .unwrap()
            .iter()
            .map(|q| q["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["c-11", "c-12", "c-dlq"], "{base}");
        let (_, first) = listing(base.clone(), "/_loft/queues?filter=c-01").await;
        assert_eq!(first[0]["dead_letter_depth"], 1, "{base}: {first}");
    }

    // Wait for a sample of the empty queue on node 0, send through node 0, and wait for
    // both nodes to have sampled the sends.
    let history = |base: String| {
        let http = http.clone();
        async move {
            let v: Value = http
                .get(format!("{base}/_loft/queues?filter=c-02"))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            v[0]["history"].clone()
        }
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    let sampled = crate::wait::until(Duration::from_secs(20), || async {
        history(bases[0].clone()).await["visible"]
            .as_array()
            .is_some_and(|v| v.contains(&json!(0)))
    })
    .await;
    assert!(sampled, "no sample on node 0");
    for i in 0..5 {
        sqs(
            &http,
            &bases[0],
            "SendMessage",
            json!({"QueueUrl": queue_url(&bases[0], "c-02"), "MessageBody": format!("m{i}")}),
        )
        .await
        .expect("SendMessage");
    }
    let mut seen = Vec::new();
    for base in &bases {
        let left = deadline.saturating_duration_since(Instant::now());
        let found = crate::wait::poll(left, || async {
            let h = history(base.clone()).await;
            h["visible"]
                .as_array()
                .is_some_and(|v| v.last() == Some(&json!(5)))
                .then_some(h)
        })
        .await;
        let h = match found {
            Some(h) => h,
            None => panic!(
                "{base} never sampled the sends: {}",
                history(base.clone()).await
            ),
        };
        let sent: f64 = h["sent_per_s"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_f64)
            .sum();
        seen.push(sent);
    }
    assert!(seen[0] > 0.0, "node 0 served the sends: {seen:?}");
    assert_eq!(seen[1], 0.0, "node 1 served none: {seen:?}");
}

/// `POST /_loft/reset` on one node is seen on the other at once, although the other had
/// the queue's record cached: the reset tells every node through the store (PostgreSQL
/// NOTIFY), so the other forgets its cache well before the cache's 1 s lifetime, and a
/// send through it reaches the queue made again under the same name, not the old one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reset_on_one_node_is_seen_on_the_other_at_once() {
    let Some(cluster) = Cluster::start(2, "a_reset_on_one_node_is_seen").await else {
        return;
    };
    let bases = cluster.bases();
    let http = http();
    let name = "reset-across-nodes";
    sqs(&http, &bases[0], "CreateQueue", json!({"QueueName": name}))
        .await
        .expect("create");
    // Node 1 reads the queue, and keeps its record.
    sqs(
        &http,
        &bases[1],
        "SendMessage",
        json!({"QueueUrl": queue_url(&bases[1], name), "MessageBody": "before"}),
    )
    .await
    .expect("send through node 1");
    let resp = http
        .post(format!("{}/_loft/reset", bases[0]))
        .send()
        .await
        .expect("reset");
    assert_eq!(resp.status().as_u16(), 200);
    let counts: Value = resp.json().await.expect("counts");
    assert!(counts["queues"].as_u64() >= Some(1), "{counts}");
    assert!(counts["messages"].as_u64() >= Some(1), "{counts}");
    // Half the cache's lifetime: only the notification can make node 1 forget by then.
    let deadline = Instant::now() + loft_core::service::QUEUE_CACHE_TTL / 2;
    loop {
        let got = sqs(&http, &bases[1], "GetQueueUrl", json!({"QueueName": name})).await;
        match got {
            Err(e) if e.contains("NonExistentQueue") || e.contains("QueueDoesNotExist") => break,
            other => assert!(
                Instant::now() < deadline,
                "node 1 still sees the reset queue: {other:?}"
            ),
        }
    }
    sqs(&http, &bases[0], "CreateQueue", json!({"QueueName": name}))
        .await
        .expect("the name is free again at once");
    sqs(
        &http,
        &bases[1],
        "SendMessage",
        json!({"QueueUrl": queue_url(&bases[1], name), "MessageBody": "after"}),
    )
    .await
    .expect("send through node 1");
    let got = sqs(
        &http,
        &bases[0],
        "ReceiveMessage",
        json!({"QueueUrl": queue_url(&bases[0], name), "WaitTimeSeconds": 5}),
    )
    .await
    .expect("receive through node 0");
    let bodies: Vec<&str> = got["Messages"]
        .as_array()
        .map(|a| a.iter().filter_map(|m| m["Body"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(bodies, ["after"], "{got}");
}
