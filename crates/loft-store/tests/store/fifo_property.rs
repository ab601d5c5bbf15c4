//! Property test of FIFO queues: random interleavings of sends (several groups, fresh and
//! repeated deduplication ids, single and batch), receives (several consumers, random
//! MaxNumberOfMessages and visibility timeouts), deletes and visibility changes with fresh
//! and stale receipt handles, and clock steps (a `ManualClock`, never a sleep), each checked
//! against a small model of AWS's rules (SQS Developer Guide, "FIFO queue delivery logic",
//! "Exactly-once processing", "Using the message group ID"):
//!
//! - a message of a group is never handed out while an earlier message of that group is in
//!   flight (messages of one group may come together in one receive, in order); an earlier
//!   one whose visibility ran out may be handed out while a later one is still in flight,
//!   as AWS's recorded answers show (LocalStack's aws.validated
//!   `test_fifo_group_visibility_extends_with_change_message_visibility`);
//! - a group's messages are handed out in send order: what a receive gives of a group is a
//!   prefix of the group's undeleted messages;
//! - a message is redelivered only after its visibility timeout expired or was changed to 0,
//!   and never after it was deleted;
//! - nothing is lost: once every timeout has run out, draining the queue gives every sent and
//!   undeleted message, group by group in order;
//! - a send whose deduplication key (MessageDeduplicationId, or the body's hash with
//!   ContentBasedDeduplication; per group with DeduplicationScope=messageGroup) was sent in
//!   the last five minutes, deleted or not, is accepted with the original MessageId and
//!   SequenceNumber and not enqueued again; SequenceNumber grows within a group;
//! - only the current receipt handle of a message still in flight deletes it; the current
//!   handle of a message received once changes its visibility, in flight or not (AWS
//!   answers a ChangeMessageVisibility after the timeout ran out 200).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use loft_core::clock::ManualClock;
use loft_core::service::{ReceiveMessage, ReceivedMessage, SendMessage, SendResult};
use loft_core::{ErrorCode, Result, Service, ServiceConfig};
use loft_store::{PgOptions, PgStore, SqliteStore};
use proptest::prelude::*;

const QUEUE: &str = "prop.fifo";
const START_MS: i64 = 1_700_000_000_000;
const DEDUP_WINDOW_MS: i64 = 5 * 60 * 1000;
const GROUPS: u8 = 4;
const CONSUMERS: u8 = 3;

/// How the queue deduplicates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dedup {
    /// Explicit MessageDeduplicationId, queue scope.
    Explicit,
    /// ContentBasedDeduplication, no explicit ids.
    ContentBased,
    /// Explicit ids, DeduplicationScope=messageGroup.
    PerGroup,
}

/// The deduplication id (or, content-based, the body) of one send.
#[derive(Debug, Clone, Copy)]
enum Key {
    /// Never used before.
    Fresh,
    /// The `n`-th (modulo) key used so far.
    Reuse(usize),
}

#[derive(Debug, Clone)]
enum Op {
    Send {
        group: u8,
        key: Key,
    },
    SendBatch {
        entries: Vec<(u8, Key)>,
    },
    Receive {
        consumer: u8,
        max: i64,
        visibility: i64,
    },
    Delete {
        consumer: u8,
        pick: usize,
    },
    ChangeVisibility {
        consumer: u8,
        pick: usize,
        seconds: i64,
    },
    Step {
        ms: i64,
    },
}

fn key() -> impl Strategy<Value = Key> {
    prop_oneof![3 => Just(Key::Fresh), 1 => any::<usize>().prop_map(Key::Reuse)]
}

fn op() -> impl Strategy<Value = Op> {
    let visibility = prop_oneof![1 => Just(0i64), 4 => 1i64..=60];
    prop_oneof![
        5 => (0..GROUPS, key()).prop_map(|(group, key)| Op::Send { group, key }),
        1 => prop::collection::vec((0..GROUPS, key()), 1..=4)
            .prop_map(|entries| Op::SendBatch { entries }),
        5 => (0..CONSUMERS, 1i64..=10, visibility.clone())
            .prop_map(|(consumer, max, visibility)| Op::Receive { consumer, max, visibility }),
        4 => (0..CONSUMERS, any::<usize>())
            .prop_map(|(consumer, pick)| Op::Delete { consumer, pick }),
        2 => (0..CONSUMERS, any::<usize>(), visibility)
            .prop_map(|(consumer, pick, seconds)| Op::ChangeVisibility { consumer, pick, seconds }),
        3 => (0i64..40_000).prop_map(|ms| Op::Step { ms }),
        1 => (100_000i64..=320_000).prop_map(|ms| Op::Step { ms }),
    ]
}

/// One message as the model knows it.
#[derive(Debug)]
struct Msg {
    id: String,
    group: String,
    body: String,
    dedup_id: String,
    sequence: u128,
    deleted: bool,
    /// In flight while the clock is before this (ms).
    hidden_until: i64,
    /// The receipt handle of its last receive.
    handle: Option<String>,
    receives: i64,
}

struct Model {
    dedup: Dedup,
    now: i64,
    msgs: Vec<Msg>,
    by_id: HashMap<String, usize>,
    /// (scope, dedup id) -> (first send time, message index).
    window: HashMap<(String, String), (i64, usize)>,
    keys_used: Vec<String>,
    /// Each consumer's receipt handles: (handle, message index).
    held: Vec<Vec<(String, usize)>>,
    bodies: usize,
    last_sequence: HashMap<String, u128>,
    trace: Vec<String>,
}

impl Model {
    fn in_flight(&self, i: usize) -> bool {
        !self.msgs[i].deleted && self.msgs[i].hidden_until > self.now
    }

    fn fail(&self, why: String) -> TestCaseError {
        let tail: Vec<&String> = self.trace.iter().rev().take(25).collect();
        let tail: Vec<&String> = tail.into_iter().rev().collect();
        TestCaseError::fail(format!("{why}\nlast steps:\n  {}", join(&tail)))
    }

    /// Builds the SendMessage for `group`/`key` and the dedup id / body the model expects.
    fn prepare(&mut self, group: u8, key: Key) -> (SendMessage, String, String) {
        self.bodies += 1;
        let group = format!("g{group}");
        let reused = match key {
            Key::Reuse(n) if !self.keys_used.is_empty() => {
                Some(self.keys_used[n % self.keys_used.len()].clone())
            }
            _ => None,
        };
        match self.dedup {
            Dedup::ContentBased => {
                let body = reused.unwrap_or_else(|| format!("body-{}", self.bodies));
                self.keys_used.push(body.clone());
                let m = SendMessage {
                    body: body.clone(),
                    group_id: Some(group),
                    ..SendMessage::default()
                };
                (m, body.clone(), body)
            }
            Dedup::Explicit | Dedup::PerGroup => {
                let id = reused.unwrap_or_else(|| format!("d-{}", self.bodies));
                self.keys_used.push(id.clone());
                let body = format!("body-{}", self.bodies);
                let m = SendMessage {
                    body: body.clone(),
                    group_id: Some(group),
                    dedup_id: Some(id.clone()),
                    ..SendMessage::default()
                };
                (m, id, body)
            }
        }
    }

    /// Checks one send's result against the model and records it.
    fn sent(
        &mut self,
        m: &SendMessage,
        key: String,
        result: Result<SendResult>,
    ) -> Result<(), TestCaseError> {
        let group = m.group_id.clone().unwrap_or_default();
        let r = result.map_err(|e| self.fail(format!("send {m:?} failed: {e}")))?;
        let sequence: u128 = r
            .sequence_number
            .as_deref()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| self.fail(format!("send gave no SequenceNumber: {r:?}")))?;
        let scope = match self.dedup {
            Dedup::PerGroup => group.clone(),
            _ => String::new(),
        };
        let dup = self
            .window
            .get(&(scope.clone(), key.clone()))
            .filter(|(at, _)| self.now < at + DEDUP_WINDOW_MS)
            .map(|(_, i)| *i);
        if let Some(i) = dup {
            let original = &self.msgs[i];
            if r.message_id != original.id || sequence != original.sequence {
                return Err(self.fail(format!(
                    "duplicate send (key {key}) inside the window gave MessageId {} / SequenceNumber {sequence}, expected the original {} / {}",
                    r.message_id, original.id, original.sequence
                )));
            }
            self.trace.push(format!(
                "send {group} key {key} -> duplicate of {}",
                original.body
            ));
            return Ok(());
        }
        if self.by_id.contains_key(&r.message_id) {
            return Err(self.fail(format!(
                "send (key {key}) outside any window was deduplicated onto {}",
                r.message_id
            )));
        }
        if let Some(last) = self.last_sequence.get(&group) {
            if sequence <= *last {
                return Err(self.fail(format!(
                    "SequenceNumber {sequence} in {group} does not grow (last {last})"
                )));
            }
        }
        self.last_sequence.insert(group.clone(), sequence);
        let i = self.msgs.len();
        self.trace
            .push(format!("send {group} key {key} -> #{i} {}", m.body));
        self.msgs.push(Msg {
            id: r.message_id.clone(),
            group,
            body: m.body.clone(),
            dedup_id: key.clone(),
            sequence,
            deleted: false,
            hidden_until: 0,
            handle: None,
            receives: 0,
        });
        self.by_id.insert(r.message_id, i);
        self.window.insert((scope, key), (self.now, i));
        Ok(())
    }

    /// The undeleted messages of `group`, in send order.
    fn pending(&self, group: &str) -> Vec<usize> {
        (0..self.msgs.len())
            .filter(|&i| self.msgs[i].group == group && !self.msgs[i].deleted)
            .collect()
    }

    /// Checks one receive's result against the model and records it.
    fn received(
        &mut self,
        consumer: u8,
        max: i64,
        visibility: i64,
        got: Result<Vec<ReceivedMessage>>,
    ) -> Result<(), TestCaseError> {
        let got = got.map_err(|e| self.fail(format!("receive failed: {e}")))?;
        let mut seen = HashSet::new();
        let mut per_group: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        let mut taken = Vec::new();
        if got.len() as i64 > max {
            return Err(self.fail(format!("receive of at most {max} gave {}", got.len())));
        }
        for r in &got {
            let Some(&i) = self.by_id.get(&r.message_id) else {
                return Err(self.fail(format!("received an unknown message {r:?}")));
            };
            let m = &self.msgs[i];
            if !seen.insert(i) {
                return Err(self.fail(format!("#{i} twice in one receive")));
            }
            if m.deleted {
                return Err(self.fail(format!("received #{i} ({}) after it was deleted", m.body)));
            }
            if self.in_flight(i) {
                return Err(self.fail(format!(
                    "received #{i} ({}) while it is in flight (hidden until +{} ms)",
                    m.body,
                    m.hidden_until - self.now
                )));
            }
            let in_flight: Vec<usize> = self
                .pending(&m.group)
                .into_iter()
                .filter(|&j| self.in_flight(j))
                .collect();
            let blocking: Vec<usize> = in_flight.iter().copied().filter(|&j| j < i).collect();
            if !blocking.is_empty() {
                return Err(self.fail(format!(
                    "received #{i} ({}) of {} while #{blocking:?} of that group is in flight",
                    m.body, m.group
                )));
            }
            let slot = per_group.entry(m.group.clone()).or_default();
            let pending = self.pending(&m.group);
            if pending.get(slot.len()) != Some(&i) {
                return Err(self.fail(format!(
                    "received #{i} ({}) out of order: {} had {slot:?} in this receive, undeleted in send order {pending:?}",
                    m.body, m.group
                )));
            }
            slot.push(i);
            let a = &r.attributes;
            let expect_count = (m.receives + 1).to_string();
            let checks = [
                ("body", Some(&r.body), &m.body),
                ("MessageGroupId", a.get("MessageGroupId"), &m.group),
                (
                    "MessageDeduplicationId",
                    a.get("MessageDeduplicationId"),
                    &m.dedup_id,
                ),
                (
                    "SequenceNumber",
                    a.get("SequenceNumber"),
                    &m.sequence.to_string(),
                ),
                (
                    "ApproximateReceiveCount",
                    a.get("ApproximateReceiveCount"),
                    &expect_count,
                ),
            ];
            for (what, got_value, want) in checks {
                let matches = match (what, got_value) {
                    // Content-based ids are the body's SHA-256; only check presence.
                    ("MessageDeduplicationId", Some(_)) if self.dedup == Dedup::ContentBased => {
                        true
                    }
                    (_, Some(v)) => v == want,
                    (_, None) => false,
                };
                if !matches {
                    return Err(
                        self.fail(format!("#{i}: {what} is {got_value:?}, expected {want:?}"))
                    );
                }
            }
            taken.push((i, r.receipt_handle.clone()));
        }
        // Nothing withheld: a receive that had room took every available message of every
        // group with nothing in flight.
        if (got.len() as i64) < max {
            let groups: HashSet<String> = self.msgs.iter().map(|m| m.group.clone()).collect();
            for g in groups {
                let pending = self.pending(&g);
                if pending.iter().any(|&j| self.in_flight(j)) {
                    continue;
                }
                let given = per_group.get(&g).map_or(0, Vec::len);
                if given < pending.len() {
                    return Err(self.fail(format!(
                        "receive of {max} gave {} messages but withheld {:?} of idle group {g}",
                        got.len(),
                        &pending[given..]
                    )));
                }
            }
        }
        let ids: Vec<usize> = taken.iter().map(|(i, _)| *i).collect();
        self.trace.push(format!(
            "t+{} c{consumer} receive max {max} vis {visibility} -> {ids:?}",
            self.now - START_MS
        ));
        for (i, handle) in taken {
            let m = &mut self.msgs[i];
            m.hidden_until = self.now + visibility * 1000;
            m.handle = Some(handle.clone());
            m.receives += 1;
            self.held[consumer as usize].push((handle, i));
        }
        Ok(())
    }

    /// The handle `pick` of `consumer`, if it holds any.
    fn pick(&self, consumer: u8, pick: usize) -> Option<(String, usize)> {
        let held = &self.held[consumer as usize];
        (!held.is_empty()).then(|| held[pick % held.len()].clone())
    }

    /// Whether `handle` is message `i`'s current handle and `i` still in flight.
    fn valid(&self, handle: &str, i: usize) -> bool {
        self.in_flight(i) && self.msgs[i].handle.as_deref() == Some(handle)
    }

    fn deleted(&mut self, handle: &str, i: usize, got: Result<()>) -> Result<(), TestCaseError> {
        let valid = self.valid(handle, i);
        self.trace.push(format!(
            "t+{} delete #{i} ({}) -> {got:?}",
            self.now - START_MS,
            if valid {
                "valid handle"
            } else {
                "stale handle"
            }
        ));
        if self.msgs[i].deleted {
            // Deleting again: AWS may answer either way; nothing may change.
            return Ok(());
        }
        match got {
            Ok(()) if valid => {
                self.msgs[i].deleted = true;
                Ok(())
            }
            Ok(()) => Err(self.fail(format!(
                "delete of #{i} with a stale or expired handle succeeded"
            ))),
            Err(e) if valid => Err(self.fail(format!(
                "delete of #{i} with its current handle while in flight failed: {e}"
            ))),
            Err(e)
                if matches!(
                    e.code,
                    ErrorCode::ReceiptHandleIsInvalid | ErrorCode::InvalidParameterValue
                ) =>
            {
                Ok(())
            }
            Err(e) => Err(self.fail(format!("delete of #{i}, stale handle: wrong error {e}"))),
        }
    }

    fn visibility_changed(
        &mut self,
        handle: &str,
        i: usize,
        seconds: i64,
        got: Result<()>,
    ) -> Result<(), TestCaseError> {
        let m = &self.msgs[i];
        let valid = !m.deleted && m.receives > 0 && m.handle.as_deref() == Some(handle);
        self.trace.push(format!(
            "t+{} change visibility #{i} to {seconds} ({}) -> {got:?}",
            self.now - START_MS,
            if valid {
                "valid handle"
            } else {
                "stale handle"
            }
        ));
        match got {
            Ok(()) if valid => {
                self.msgs[i].hidden_until = self.now + seconds * 1000;
                Ok(())
            }
            Ok(()) => Err(self.fail(format!(
                "visibility change of #{i} with a stale handle or after delete succeeded"
            ))),
            Err(e) if valid => Err(self.fail(format!(
                "visibility change of #{i} with its current handle failed: {e}"
            ))),
            Err(_) => Ok(()),
        }
    }
}

fn join(lines: &[&String]) -> String {
    lines
        .iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join("\n  ")
}

fn receive_request(max: i64, visibility: i64) -> ReceiveMessage {
    ReceiveMessage {
        max_messages: Some(max),
        visibility_timeout: Some(visibility),
        wait_seconds: Some(0),
        system_attribute_names: vec!["All".into()],
        ..ReceiveMessage::default()
    }
}

async fn run(dedup: Dedup, ops: Vec<Op>) -> Result<(), TestCaseError> {
    let store = Arc::new(SqliteStore::open_in_memory().expect("store"));
    run_on(store, dedup, ops).await
}

async fn run_on(
    store: Arc<dyn loft_core::store::Store>,
    dedup: Dedup,
    ops: Vec<Op>,
) -> Result<(), TestCaseError> {
    let clock = Arc::new(ManualClock::new(START_MS));
    let svc = Service::new(store, clock.clone(), ServiceConfig::default(), None);
    let mut attrs = BTreeMap::from([("FifoQueue".to_string(), "true".to_string())]);
    match dedup {
        Dedup::Explicit => {}
        Dedup::ContentBased => {
            attrs.insert("ContentBasedDeduplication".into(), "true".into());
        }
        Dedup::PerGroup => {
            attrs.insert("DeduplicationScope".into(), "messageGroup".into());
        }
    }
    svc.sqs()
        .create_queue(QUEUE, attrs, BTreeMap::new())
        .await
        .expect("create queue");
    let mut model = Model {
        dedup,
        now: START_MS,
        msgs: Vec::new(),
        by_id: HashMap::new(),
        window: HashMap::new(),
        keys_used: Vec::new(),
        held: vec![Vec::new(); CONSUMERS as usize],
        bodies: 0,
        last_sequence: HashMap::new(),
        trace: Vec::new(),
    };
    for op in ops {
        match op {
            Op::Send { group, key } => {
                let (m, key, _) = model.prepare(group, key);
                let r = svc.sqs().send_message(QUEUE, m.clone()).await;
                model.sent(&m, key, r)?;
            }
            Op::SendBatch { entries } => {
                let prepared: Vec<(SendMessage, String)> = entries
                    .into_iter()
                    .map(|(g, k)| {
                        let (m, key, _) = model.prepare(g, k);
                        (m, key)
                    })
                    .collect();
                let results = svc
                    .sqs()
                    .send_message_batch(QUEUE, prepared.iter().map(|(m, _)| m.clone()).collect())
                    .await
                    .map_err(|e| model.fail(format!("send batch failed: {e}")))?;
                prop_assert_eq!(results.len(), prepared.len());
                for ((m, key), r) in prepared.into_iter().zip(results) {
                    model.sent(&m, key, r)?;
                }
            }
            Op::Receive {
                consumer,
                max,
                visibility,
            } => {
                let got = svc
                    .sqs()
                    .receive_message(QUEUE, receive_request(max, visibility))
                    .await;
                model.received(consumer, max, visibility, got)?;
            }
            Op::Delete { consumer, pick } => {
                if let Some((handle, i)) = model.pick(consumer, pick) {
                    let got = svc.sqs().delete_message(QUEUE, &handle).await;
                    model.deleted(&handle, i, got)?;
                }
            }
            Op::ChangeVisibility {
                consumer,
                pick,
                seconds,
            } => {
                if let Some((handle, i)) = model.pick(consumer, pick) {
                    let got = svc.sqs().change_visibility(QUEUE, &handle, seconds).await;
                    model.visibility_changed(&handle, i, seconds, got)?;
                }
            }
            Op::Step { ms } => {
                clock.advance_ms(ms);
                model.now += ms;
                model.trace.push(format!("step {ms} ms"));
            }
        }
    }
    // Drain: once every visibility timeout has run out, every undeleted message comes back,
    // each group in order, and nothing else.
    clock.advance_ms(3_600_000);
    model.now += 3_600_000;
    model.trace.push("step 1 h; drain".into());
    let mut rounds = 0;
    loop {
        rounds += 1;
        if rounds > model.msgs.len() + 2 {
            return Err(model.fail("drain does not end".into()));
        }
        let got = svc
            .sqs()
            .receive_message(QUEUE, receive_request(10, 30))
            .await;
        let before = model.held[0].len();
        model.received(0, 10, 30, got)?;
        let fresh: Vec<(String, usize)> = model.held[0][before..].to_vec();
        if fresh.is_empty() {
            break;
        }
        for (handle, i) in fresh {
            let got = svc.sqs().delete_message(QUEUE, &handle).await;
            model.deleted(&handle, i, got)?;
        }
    }
    let lost: Vec<usize> = (0..model.msgs.len())
        .filter(|&i| !model.msgs[i].deleted)
        .collect();
    if !lost.is_empty() {
        return Err(model.fail(format!("messages never delivered: {lost:?}")));
    }
    Ok(())
}

fn dedup_mode() -> impl Strategy<Value = Dedup> {
    prop_oneof![
        Just(Dedup::Explicit),
        Just(Dedup::ContentBased),
        Just(Dedup::PerGroup)
    ]
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(f)
}

fn config() -> ProptestConfig {
    ProptestConfig {
        // PROPTEST_CASES=N runs a longer hunt.
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(64),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    /// Every rule above, on SQLite.
    #[test]
    fn fifo_model(dedup in dedup_mode(), ops in prop::collection::vec(op(), 1..=60)) {
        block_on(run(dedup, ops))?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(16),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Every rule above, on PostgreSQL (skipped, with a note,
    /// unless `LOFT_TEST_DATABASE_URL` names a database).
    #[test]
    fn fifo_model_postgres(dedup in dedup_mode(), ops in prop::collection::vec(op(), 1..=60)) {
        let Some(url) = std::env::var("LOFT_TEST_DATABASE_URL").ok().filter(|u| !u.is_empty())
        else {
            eprintln!("note: LOFT_TEST_DATABASE_URL is unset; skipping fifo_model_postgres");
            return Ok(());
        };
        let schema = format!("loft_fprop_{:016x}", rand::random::<u64>());
        let outcome = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime")
            .block_on(async {
                let store = PgStore::connect(
                    &url,
                    PgOptions { pool_size: 4, schema: Some(schema.clone()) },
                )
                .await
                .expect("connect to LOFT_TEST_DATABASE_URL")
                // The service's queues are encrypted by default (SSE-SQS).
                .with_key_source(loft_store::seal::KeySource::Key(
                    loft_store::seal::MasterKey::from_bytes([7; 32]),
                ));
                let outcome = run_on(Arc::new(store), dedup, ops).await;
                let _ = PgStore::drop_schema(&url, &schema).await;
                outcome
            });
        outcome?;
    }
}
