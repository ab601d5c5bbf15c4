//! Property test of FIFO topics: random publishes and PublishBatches (several message
//! groups; explicit deduplication ids, fresh and repeated; with ContentBasedDeduplication,
//! no id and fresh or repeated bodies) through random nodes, clock steps (a `ManualClock`,
//! never a sleep) and restarts, each checked against a model of AWS's rules (SNS Developer
//! Guide, "Message deduplication for FIFO topics", "Message ordering details for FIFO
//! topics"; SNS API Reference, Publish `MessageDeduplicationId`, `SequenceNumber`):
//!
//! - a publish whose deduplication key was published in the last five minutes is accepted
//!   with the original's MessageId and SequenceNumber and delivered to no one; the key is
//!   the MessageDeduplicationId (or the body's SHA-256 with ContentBasedDeduplication),
//!   across the whole topic with FifoThroughputScope `Topic`, within its message group
//!   with `MessageGroup`;
//! - any other publish gets a new MessageId and a SequenceNumber above every one the topic
//!   gave before, whichever node it went through and whatever restarted in between;
//! - nothing is delivered twice or lost: the subscribed FIFO queue holds each new publish
//!   exactly once, in its group's publish order, and the subscribed standard queue holds
//!   each exactly once.
//!
//! Nodes are Services over one store: on SQLite several Services share the store, and a
//! restart closes the store and opens its file again (every node restarts: one process
//! holds the file); on PostgreSQL (when `LOFT_TEST_DATABASE_URL` is set) each node has its
//! own connection pool to one database, and a restart replaces one node's.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use loft_core::clock::ManualClock;
use loft_core::service::{
    PublishRequest, PublishResult, PublishTarget, ReceiveMessage, ReceivedMessage,
};
use loft_core::store::Store;
use loft_core::{Result, Service, ServiceConfig};
use loft_store::{Durability, PgOptions, PgStore, SqliteStore};
use proptest::prelude::*;

const START_MS: i64 = 1_700_000_000_000;
const DEDUP_WINDOW_MS: i64 = 5 * 60 * 1000;
const GROUPS: u8 = 3;
const NODES: usize = 3;
const TOPIC: &str = "prop.fifo";
const FIFO_QUEUE: &str = "prop-sub.fifo";
const STANDARD_QUEUE: &str = "prop-sub";

/// How the topic deduplicates.
#[derive(Debug, Clone, Copy)]
struct Mode {
    /// ContentBasedDeduplication.
    content_based: bool,
    /// FifoThroughputScope `MessageGroup` (else `Topic`).
    per_group: bool,
}

/// The deduplication id (or, content-based, the body) of one publish.
#[derive(Debug, Clone, Copy)]
enum Key {
    /// Never used before.
    Fresh,
    /// The `n`-th (modulo) one used so far.
    Reuse(usize),
}

#[derive(Debug, Clone)]
struct Entry {
    group: u8,
    key: Key,
    /// With ContentBasedDeduplication: give no MessageDeduplicationId (the body's hash is
    /// the key).
    by_content: bool,
}

#[derive(Debug, Clone)]
enum Op {
    Publish { node: usize, entry: Entry },
    Batch { node: usize, entries: Vec<Entry> },
    Step { ms: i64 },
    Restart { node: usize },
}

fn key() -> impl Strategy<Value = Key> {
    prop_oneof![3 => Just(Key::Fresh), 2 => any::<usize>().prop_map(Key::Reuse)]
}

fn entry() -> impl Strategy<Value = Entry> {
    (0..GROUPS, key(), any::<bool>()).prop_map(|(group, key, by_content)| Entry {
        group,
        key,
        by_content,
    })
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..NODES, entry()).prop_map(|(node, entry)| Op::Publish { node, entry }),
        2 => (0..NODES, prop::collection::vec(entry(), 1..=4))
            .prop_map(|(node, entries)| Op::Batch { node, entries }),
        3 => (0i64..60_000).prop_map(|ms| Op::Step { ms }),
        1 => (100_000i64..=320_000).prop_map(|ms| Op::Step { ms }),
        1 => (0..NODES).prop_map(|node| Op::Restart { node }),
    ]
}

fn mode() -> impl Strategy<Value = Mode> {
    (any::<bool>(), any::<bool>()).prop_map(|(content_based, per_group)| Mode {
        content_based,
        per_group,
    })
}

/// One accepted, new publish as the model expects it delivered.
#[derive(Debug)]
struct Published {
    body: String,
    group: String,
    sequence: u128,
}

struct Model {
    mode: Mode,
    now: i64,
    /// Keys inside their window: (scope, key) to (MessageId, SequenceNumber, window end).
    window: HashMap<(String, String), (String, u128, i64)>,
    /// Explicit ids and bodies handed out so far, for reuse.
    ids: Vec<String>,
    bodies: Vec<String>,
    last_sequence: u128,
    /// New publishes by MessageId, and their MessageIds in publish order.
    published: HashMap<String, Published>,
    order: Vec<String>,
    trace: Vec<String>,
}

impl Model {
    fn fail(&self, why: String) -> TestCaseError {
        TestCaseError::fail(format!(
            "{why}\nmode {:?}\nops:\n  {}",
            self.mode,
            self.trace.join("\n  ")
        ))
    }

    fn pick(list: &mut Vec<String>, key: Key, fresh: impl FnOnce(usize) -> String) -> String {
        match key {
            Key::Reuse(n) if !list.is_empty() => list[n % list.len()].clone(),
            _ => {
                let v = fresh(list.len());
                list.push(v.clone());
                v
            }
        }
    }

    /// The request for `e` and its deduplication key (scope, id) as the model sees it.
    fn prepare(&mut self, e: &Entry) -> (PublishRequest, (String, String)) {
        let group = format!("g{}", e.group);
        let content = self.mode.content_based && e.by_content;
        let (body, dedup_id, key) = if content {
            // The key is the body's SHA-256: the same body, the same key.
            let body = Model::pick(&mut self.bodies, e.key, |n| format!("body {n}"));
            (body.clone(), None, format!("content:{body}"))
        } else {
            let id = Model::pick(&mut self.ids, e.key, |n| format!("id-{n}"));
            let body = format!("body for {id} #{}", self.order.len() + self.trace.len());
            (body, Some(id.clone()), id)
        };
        let scope = if self.mode.per_group {
            group.clone()
        } else {
            String::new()
        };
        let req = PublishRequest {
            message: body,
            group_id: Some(group),
            dedup_id,
            ..PublishRequest::default()
        };
        (req, (scope, key))
    }

    /// Checks one publish's answer against the rules and records it.
    fn published(
        &mut self,
        req: &PublishRequest,
        key: (String, String),
        got: Result<PublishResult>,
    ) -> Result<(), TestCaseError> {
        let got = got.map_err(|e| self.fail(format!("publish {:?} failed: {e}", req.message)))?;
        let sequence: u128 = got
            .sequence_number
            .as_deref()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| self.fail(format!("no SequenceNumber in {got:?}")))?;
        self.trace.push(format!(
            "publish {:?} group {:?} key {key:?} -> {} {sequence}",
            req.message, req.group_id, got.message_id
        ));
        if let Some((id, seq, until)) = self.window.get(&key) {
            if *until > self.now {
                if (&got.message_id, sequence) != (id, *seq) {
                    return Err(self.fail(format!(
                        "a duplicate inside the window got ({}, {sequence}), not the original's ({id}, {seq})",
                        got.message_id
                    )));
                }
                return Ok(());
            }
        }
        if self.published.contains_key(&got.message_id) {
            return Err(self.fail(format!("MessageId {} given twice", got.message_id)));
        }
        if sequence <= self.last_sequence {
            return Err(self.fail(format!(
                "SequenceNumber {sequence} after {}",
                self.last_sequence
            )));
        }
        self.last_sequence = sequence;
        self.window.insert(
            key,
            (got.message_id.clone(), sequence, self.now + DEDUP_WINDOW_MS),
        );
        self.order.push(got.message_id.clone());
        self.published.insert(
            got.message_id,
            Published {
                body: req.message.clone(),
                group: req.group_id.clone().unwrap_or_default(),
                sequence,
            },
        );
        Ok(())
    }

    /// Checks a drained queue: each new publish once; on the FIFO queue, group order.
    fn delivered(
        &self,
        queue: &str,
        got: &[ReceivedMessage],
        fifo: bool,
    ) -> Result<(), TestCaseError> {
        let mut seen = HashSet::new();
        let mut per_group: HashMap<String, Vec<String>> = HashMap::new();
        for m in got {
            let env: serde_json::Value = serde_json::from_str(&m.body)
                .map_err(|e| self.fail(format!("{queue}: not an envelope ({e}): {}", m.body)))?;
            let id = env["MessageId"].as_str().unwrap_or_default().to_owned();
            let Some(p) = self.published.get(&id) else {
                return Err(self.fail(format!("{queue}: {id} was not a new publish: {}", m.body)));
            };
            if !seen.insert(id.clone()) {
                return Err(self.fail(format!("{queue}: {id} delivered twice")));
            }
            if env["Message"] != p.body.as_str()
                || env["SequenceNumber"] != p.sequence.to_string().as_str()
            {
                return Err(self.fail(format!("{queue}: {id} is not what was published: {env}")));
            }
            per_group.entry(p.group.clone()).or_default().push(id);
        }
        let lost: Vec<&String> = self.order.iter().filter(|id| !seen.contains(*id)).collect();
        if !lost.is_empty() {
            return Err(self.fail(format!("{queue}: never delivered: {lost:?}")));
        }
        if fifo {
            for (group, ids) in per_group {
                let want: Vec<&String> = self
                    .order
                    .iter()
                    .filter(|id| self.published[*id].group == group)
                    .collect();
                if ids.iter().collect::<Vec<_>>() != want {
                    return Err(self.fail(format!(
                        "{queue}: group {group} came as {ids:?}, published as {want:?}"
                    )));
                }
            }
        }
        Ok(())
    }
}

/// Where the nodes' stores come from.
enum Engine {
    /// One file, shared by every node.
    Sqlite {
        path: std::path::PathBuf,
        store: Arc<SqliteStore>,
    },
    /// One database; each node its own pool.
    Postgres { url: String, schema: String },
}

struct Nodes {
    engine: Engine,
    clock: Arc<ManualClock>,
    services: Vec<Arc<Service>>,
}

impl Nodes {
    async fn node_store(&self) -> Arc<dyn Store> {
        match &self.engine {
            Engine::Sqlite { store, .. } => store.clone(),
            Engine::Postgres { url, schema } => Arc::new(
                PgStore::connect(
                    url,
                    PgOptions {
                        pool_size: 2,
                        schema: Some(schema.clone()),
                    },
                )
                .await
                .expect("connect to LOFT_TEST_DATABASE_URL")
                // Queues are encrypted by default (SSE-SQS); every node shares the
                // master key, as nodes on one database must.
                .with_key_source(loft_store::seal::KeySource::Key(
                    loft_store::seal::MasterKey::from_bytes([7; 32]),
                )),
            ),
        }
    }

    async fn start(engine: Engine, clock: Arc<ManualClock>) -> Nodes {
        let mut nodes = Nodes {
            engine,
            clock,
            services: Vec::new(),
        };
        for _ in 0..NODES {
            let s = nodes.service().await;
            nodes.services.push(s);
        }
        nodes
    }

    async fn service(&self) -> Arc<Service> {
        Service::new(
            self.node_store().await,
            self.clock.clone(),
            ServiceConfig::default(),
            None,
        )
    }

    async fn restart(&mut self, node: usize) {
        match &mut self.engine {
            Engine::Sqlite { path, store } => {
                // The process holds the file alone: every node goes down and comes back.
                self.services.clear();
                store.close().await;
                *store = Arc::new(SqliteStore::open(path, Durability::Process).expect("reopen"));
                for _ in 0..NODES {
                    let s = self.service().await;
                    self.services.push(s);
                }
            }
            Engine::Postgres { .. } => {
                self.services[node] = self.service().await;
            }
        }
    }
}

fn attrs(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

async fn drain(svc: &Service, queue: &str) -> Vec<ReceivedMessage> {
    let mut out = Vec::new();
    loop {
        let got = svc
            .sqs()
            .receive_message(
                queue,
                ReceiveMessage {
                    max_messages: Some(10),
                    visibility_timeout: Some(30),
                    wait_seconds: Some(0),
                    ..ReceiveMessage::default()
                },
            )
            .await
            .expect("receive");
        if got.is_empty() {
            return out;
        }
        for m in &got {
            svc.sqs()
                .delete_message(queue, &m.receipt_handle)
                .await
                .expect("delete");
        }
        out.extend(got);
    }
}

async fn run(engine: Engine, mode: Mode, ops: Vec<Op>) -> Result<(), TestCaseError> {
    let clock = Arc::new(ManualClock::new(START_MS));
    let mut nodes = Nodes::start(engine, clock.clone()).await;
    let svc = nodes.services[0].clone();
    let mut topic_attrs = vec![("FifoTopic", "true")];
    if mode.content_based {
        topic_attrs.push(("ContentBasedDeduplication", "true"));
    }
    if mode.per_group {
        topic_attrs.push(("FifoThroughputScope", "MessageGroup"));
    }
    svc.sns()
        .create_topic(TOPIC, attrs(&topic_attrs), Vec::new())
        .await
        .expect("create topic");
    let mut queue_attrs = vec![("FifoQueue", "true")];
    if mode.per_group {
        queue_attrs.push(("DeduplicationScope", "messageGroup"));
    }
    svc.sqs()
        .create_queue(FIFO_QUEUE, attrs(&queue_attrs), BTreeMap::new())
        .await
        .expect("create FIFO queue");
    svc.sqs()
        .create_queue(STANDARD_QUEUE, BTreeMap::new(), BTreeMap::new())
        .await
        .expect("create queue");
    let topic_arn = svc.topic_arn(TOPIC);
    for q in [FIFO_QUEUE, STANDARD_QUEUE] {
        svc.sns()
            .subscribe(
                &topic_arn,
                "sqs",
                Some(&svc.queue_arn(q)),
                BTreeMap::new(),
                true,
            )
            .await
            .expect("subscribe");
    }
    drop(svc);
    let mut model = Model {
        mode,
        now: START_MS,
        window: HashMap::new(),
        ids: Vec::new(),
        bodies: Vec::new(),
        last_sequence: 0,
        published: HashMap::new(),
        order: Vec::new(),
        trace: Vec::new(),
    };
    for op in ops {
        match op {
            Op::Publish { node, entry } => {
                let (req, key) = model.prepare(&entry);
                let got = nodes.services[node]
                    .sns()
                    .publish(PublishTarget::Topic(&topic_arn), req.clone())
                    .await;
                model.trace.push(format!("(node {node})"));
                model.published(&req, key, got)?;
            }
            Op::Batch { node, entries } => {
                let prepared: Vec<(PublishRequest, (String, String))> =
                    entries.iter().map(|e| model.prepare(e)).collect();
                let results = nodes.services[node]
                    .sns()
                    .publish_batch(
                        &topic_arn,
                        prepared.iter().map(|(r, _)| r.clone()).collect(),
                    )
                    .await
                    .map_err(|e| model.fail(format!("batch failed: {e}")))?;
                model
                    .trace
                    .push(format!("(batch of {} through node {node})", prepared.len()));
                prop_assert_eq!(results.len(), prepared.len());
                for ((req, key), got) in prepared.into_iter().zip(results) {
                    model.published(&req, key, got)?;
                }
            }
            Op::Step { ms } => {
                clock.advance_ms(ms);
                model.now += ms;
                model.trace.push(format!("step {ms} ms"));
            }
            Op::Restart { node } => {
                nodes.restart(node).await;
                model.trace.push(format!("restart node {node}"));
            }
        }
    }
    let svc = nodes.services[NODES - 1].clone();
    let fifo = drain(&svc, FIFO_QUEUE).await;
    model.delivered(FIFO_QUEUE, &fifo, true)?;
    let standard = drain(&svc, STANDARD_QUEUE).await;
    model.delivered(STANDARD_QUEUE, &standard, false)?;
    Ok(())
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(f)
}

fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
}

fn sqlite_engine() -> (Engine, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("loft.db");
    let store = Arc::new(SqliteStore::open(&path, Durability::Process).expect("open"));
    (Engine::Sqlite { path, store }, dir)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(48),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Every rule above on SQLite.
    #[test]
    fn fifo_topic_model_sqlite(mode in mode(), ops in prop::collection::vec(op(), 1..=40)) {
        let (engine, _dir) = sqlite_engine();
        block_on(run(engine, mode, ops))?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(12),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Every rule above on PostgreSQL, each node with its own pool (skipped, with a note,
    /// unless `LOFT_TEST_DATABASE_URL` names a database).
    #[test]
    fn fifo_topic_model_postgres(mode in mode(), ops in prop::collection::vec(op(), 1..=40)) {
        let Some(url) = std::env::var("LOFT_TEST_DATABASE_URL").ok().filter(|u| !u.is_empty())
        else {
            eprintln!("note: LOFT_TEST_DATABASE_URL is unset; skipping fifo_topic_model_postgres");
            return Ok(());
        };
        let schema = format!("loft_prop_{:016x}", rand::random::<u64>());
        let outcome = block_on(async {
            let outcome = run(
                Engine::Postgres { url: url.clone(), schema: schema.clone() },
                mode,
                ops,
            )
            .await;
            let _ = PgStore::drop_schema(&url, &schema).await;
            outcome
        });
        outcome?;
    }
}
