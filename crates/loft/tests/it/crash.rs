//! Crash safety (docs/running.md "Durability"): Loft is killed with SIGKILL under a mixed load of sends,
//! receives and deletes, several times; after each restart every acknowledged send is
//! there exactly once and every acknowledged delete stays deleted.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::mpsc;

use crate::common::Loft;

const ROUNDS: usize = 4;
const SENDERS: usize = 4;
const CONSUMERS: usize = 2;
/// Acknowledged sends each round must see before the kill.
const SENDS_BEFORE_KILL: usize = 60;

#[derive(Default)]
struct Ledger {
    sent: HashSet<String>,
    deleted: HashSet<String>,
    /// Deletes asked for, acknowledged or not: a kill can land after a delete commits and
    /// before its 204 reaches the consumer, and then the message is rightly gone.
    deleting: HashSet<String>,
}

async fn sender(
    http: reqwest::Client,
    base: String,
    stop: Arc<AtomicBool>,
    ledger: Arc<Mutex<Ledger>>,
    acks: mpsc::UnboundedSender<()>,
    n: usize,
) {
    let mut i = 0;
    while !stop.load(Ordering::SeqCst) && i < 10_000 {
        i += 1;
        let body = json!({"body": format!("sender {n} message {i}")});
        let Ok(resp) = http
            .post(format!("{base}/queues/crash/messages"))
            .json(&body)
            .send()
            .await
        else {
            return;
        };
        if resp.status().as_u16() != 201 {
            return;
        }
        let Ok(v) = resp.json::<Value>().await else {
            return;
        };
        if let Some(id) = v["id"].as_str() {
            ledger.lock().unwrap().sent.insert(id.to_owned());
            let _ = acks.send(());
        }
    }
}

async fn consumer(
    http: reqwest::Client,
    base: String,
    stop: Arc<AtomicBool>,
    ledger: Arc<Mutex<Ledger>>,
) {
    let mut i = 0;
    while !stop.load(Ordering::SeqCst) && i < 10_000 {
        i += 1;
        let Ok(resp) = http
            .get(format!("{base}/queues/crash/messages?visibility_timeout=1"))
            .send()
            .await
        else {
            return;
        };
        let Ok(v) = resp.json::<Value>().await else {
            return;
        };
        let Some(id) = v["id"].as_str() else { continue };
        ledger.lock().unwrap().deleting.insert(id.to_owned());
        let Ok(del) = http
            .delete(format!("{base}/queues/crash/messages/{id}"))
            .send()
            .await
        else {
            return;
        };
        if del.status().as_u16() == 204 {
            ledger.lock().unwrap().deleted.insert(id.to_owned());
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_under_load_loses_no_acknowledged_send_or_delete() {
    let mut loft = Loft::start();
    loft.post_empty("/queues/crash").await.expect(201, json!({
        "name": "crash", "dead_letter_queue": "", "max_receive_count": 5, "visibility_timeout": 30
    }));
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    for _round in 0..ROUNDS {
        let stop = Arc::new(AtomicBool::new(false));
        let (acks_tx, mut acks) = mpsc::unbounded_channel();
        let mut tasks = Vec::new();
        for n in 0..SENDERS {
            tasks.push(tokio::spawn(sender(
                loft.http.clone(),
                loft.base.clone(),
                stop.clone(),
                ledger.clone(),
                acks_tx.clone(),
                n,
            )));
        }
        for _ in 0..CONSUMERS {
            tasks.push(tokio::spawn(consumer(
                loft.http.clone(),
                loft.base.clone(),
                stop.clone(),
                ledger.clone(),
            )));
        }
        drop(acks_tx);
        for _ in 0..SENDS_BEFORE_KILL {
            tokio::time::timeout(Duration::from_secs(10), acks.recv())
                .await
                .expect("sends are acknowledged")
                .expect("senders run");
        }
        // The load is still running: kill Loft in the middle of it.
        loft.crash_and_restart();
        stop.store(true, Ordering::SeqCst);
        for t in tasks {
            let _ = t.await;
        }
    }
    // Drain: every message still stored, each taken once (hidden for 10 minutes).
    let mut drained = Vec::new();
    loop {
        let r = loft
            .get("/queues/crash/messages?visibility_timeout=600&wait_seconds=2")
            .await;
        let v = r.json();
        match v["id"].as_str() {
            Some(id) => drained.push(id.to_owned()),
            None => break,
        }
    }
    let ledger = ledger.lock().unwrap();
    let unique: HashSet<&String> = drained.iter().collect();
    assert_eq!(unique.len(), drained.len(), "a message was stored twice");
    for id in &ledger.deleted {
        assert!(
            !unique.contains(id),
            "{id} was acknowledged deleted but came back"
        );
    }
    for id in ledger
        .sent
        .iter()
        .filter(|id| !ledger.deleted.contains(*id) && !ledger.deleting.contains(*id))
    {
        assert!(
            unique.contains(id),
            "{id} was acknowledged sent but is gone"
        );
    }
    assert!(ledger.sent.len() >= ROUNDS * SENDS_BEFORE_KILL);
}
