//! Cells (`loft_store::cells`): placement, routing after a restart, receipt handles of a
//! queue on cell 2, and refusals of work that would span cells. Two schemas of the test
//! database are the two cells; without `LOFT_TEST_DATABASE_URL` the cases skip (fail
//! under `LOFT_TEST_REQUIRE_POSTGRES=1`). The conformance suite runs on two cells as
//! `conformance::cells::NAME`.

use std::collections::BTreeMap;
use std::sync::Arc;

use loft_core::clock::ManualClock;
use loft_core::model::*;
use loft_core::service::receipt::Receipt;
use loft_core::service::{ReceiveMessage, SendMessage};
use loft_core::store::Store;
use loft_core::{Service, ServiceConfig};
use loft_store::cells::{CellStatus, CELL_ID_BITS};
use loft_store::CellStore;

use crate::conformance::{self, cell_schemas, open_cells, PgSchema, S};
use crate::skips;

const T0: i64 = 1_700_000_000_000;

/// Two fresh cells, or `None` (skipped, with a note) without a test database.
async fn two_cells(test: &str) -> Option<(CellStore, Vec<PgSchema>)> {
    let Some(schemas) = cell_schemas(2) else {
        skips::postgres().skip(test);
        return None;
    };
    let store = open_cells(&schemas).await;
    Some((store, schemas))
}

fn msg(body: &str) -> NewMessage {
    NewMessage {
        message_id: Some(format!("id-{body}")),
        ..conformance::msg(body, T0)
    }
}

fn cell_of(id: i64) -> i64 {
    (id >> CELL_ID_BITS) + 1
}

/// 12 new queues and 12 new topics on two empty cells land 6 and 6 each, and each id
/// names the cell that holds its row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twelve_new_queues_land_six_and_six() {
    let Some((store, _schemas)) = two_cells("cells::twelve_new_queues_land_six_and_six").await
    else {
        return;
    };
    let mut per_cell = [0; 2];
    for i in 0..12 {
        let (q, created) = store
            .create_queue(&format!("q{i}"), BTreeMap::new(), BTreeMap::new(), T0)
            .await
            .unwrap();
        assert!(created);
        per_cell[(cell_of(q.id) - 1) as usize] += 1;
        store
            .create_topic(&format!("t{i}"), BTreeMap::new(), BTreeMap::new(), T0)
            .await
            .unwrap();
    }
    assert_eq!(per_cell, [6, 6]);
    let status = store.status().await.unwrap();
    let counts: Vec<(u32, u64, u64)> = status
        .iter()
        .map(|s: &CellStatus| (s.number, s.queues, s.topics))
        .collect();
    assert_eq!(counts, vec![(1, 6, 6), (2, 6, 6)]);
    for (number, cell) in store.cells().iter().enumerate() {
        for q in cell.list_queues().await.unwrap() {
            assert_eq!(cell_of(q.id), number as i64 + 1, "{}", q.name);
        }
    }
    // The merged list has all twelve, by name.
    let names: Vec<String> = store
        .list_queues()
        .await
        .unwrap()
        .into_iter()
        .map(|q| q.name)
        .collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names.len(), 12);
    assert_eq!(names, sorted);
    // Creating an existing name returns it from its cell, unchanged.
    let again = store
        .create_queue("q1", BTreeMap::new(), BTreeMap::new(), T0)
        .await
        .unwrap();
    assert!(!again.1);
    assert_eq!(store.count_queues().await.unwrap(), 12);
}

/// After a restart (the store opened again over the same databases) every name routes
/// to its cell and its messages are there; the cells given in another order are refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_route_to_their_cells_after_a_reopen() {
    let Some((store, schemas)) =
        two_cells("cells::names_route_to_their_cells_after_a_reopen").await
    else {
        return;
    };
    let mut ids = BTreeMap::new();
    for name in ["a", "b", "c", "d"] {
        let (q, _) = store
            .create_queue(name, BTreeMap::new(), BTreeMap::new(), T0)
            .await
            .unwrap();
        store.send_messages(vec![(q.id, msg(name))]).await.unwrap();
        ids.insert(name, q.id);
    }
    assert!(ids.values().any(|id| cell_of(*id) == 2));
    drop(store);

    let store = open_cells(&schemas).await;
    for (name, id) in &ids {
        let q = store.get_queue(name).await.unwrap().expect("queue found");
        assert_eq!(q.id, *id);
        let peeked = store.peek_messages(q.id, 0, 10, T0).await.unwrap();
        assert_eq!(peeked.len(), 1, "{name}");
        assert_eq!(peeked[0].body, *name);
    }
    assert!(store.get_queue("missing").await.unwrap().is_none());
    drop(store);

    let swapped: Vec<PgSchema> = schemas
        .iter()
        .rev()
        .map(|s| PgSchema {
            url: s.url.clone(),
            schema: s.schema.clone(),
        })
        .collect();
    let mut cells = Vec::new();
    for s in &swapped {
        cells.push(
            loft_store::PgStore::connect(
                &s.url,
                loft_store::PgOptions {
                    pool_size: 2,
                    schema: Some(s.schema.clone()),
                },
            )
            .await
            .unwrap(),
        );
    }
    let refused = CellStore::open(cells).await.err().expect("refused");
    assert!(refused.contains("is cell 2, not cell 1"), "{refused}");
    // The swapped guards must not drop the schemas twice.
    std::mem::forget(swapped);
}

/// A receipt handle of a message on cell 2 names cell 2's queue, and deleting with it
/// deletes on cell 2.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receipt_handle_from_cell_two_deletes_on_cell_two() {
    let Some((store, _schemas)) =
        two_cells("cells::a_receipt_handle_from_cell_two_deletes_on_cell_two").await
    else {
        return;
    };
    let store = Arc::new(store);
    let key = store.receipt_key();
    let clock = Arc::new(ManualClock::new(T0));
    let svc = Service::new(store.clone(), clock, ServiceConfig::default(), None);
    // The first queue goes to cell 1, the second to cell 2.
    for name in ["one", "two"] {
        svc.sqs()
            .create_queue(name, BTreeMap::new(), BTreeMap::new())
            .await
            .unwrap();
        svc.sqs()
            .send_message(
                name,
                SendMessage {
                    body: format!("to {name}"),
                    ..SendMessage::default()
                },
            )
            .await
            .unwrap();
    }
    let two = store.get_queue("two").await.unwrap().unwrap();
    assert_eq!(cell_of(two.id), 2);
    let got = svc
        .sqs()
        .receive_message(
            "two",
            ReceiveMessage {
                max_messages: Some(1),
                visibility_timeout: Some(300),
                wait_seconds: Some(0),
                ..ReceiveMessage::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(got.len(), 1);
    let (receipt, _) = Receipt::decode(&got[0].receipt_handle, &key).unwrap();
    assert_eq!(cell_of(receipt.queue_id), 2);
    svc.sqs()
        .delete_message("two", &got[0].receipt_handle)
        .await
        .unwrap();
    let counts = store.cells()[1].queue_counts(two.id, T0).await.unwrap();
    assert_eq!((counts.visible, counts.in_flight), (0, 0));
    let one = store.get_queue("one").await.unwrap().unwrap();
    let left = store.cells()[0].queue_counts(one.id, T0).await.unwrap();
    assert_eq!(left.visible, 1);
}

/// Work whose transaction would span two cells and that no outbox carries yet (a send
/// naming queues of two cells, a redrive or a move to a queue of another cell) is refused
/// whole: nothing is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn work_across_cells_is_refused_whole() {
    let Some((store, _schemas)) = two_cells("cells::work_across_cells_is_refused_whole").await
    else {
        return;
    };
    let store: S = Arc::new(store);
    let (a, b) = (
        conformance::queue(&store, "a").await,
        conformance::queue(&store, "b").await,
    );
    assert_ne!(cell_of(a), cell_of(b));
    assert!(store
        .send_messages(vec![(a, msg("x")), (b, msg("y"))])
        .await
        .is_err());
    store.send_messages(vec![(a, msg("z"))]).await.unwrap();
    let redrive = ReceiveRequest {
        queue_id: a,
        max_messages: 1,
        now_ms: T0,
        visibility_ms: 30_000,
        receipt_tokens: vec![7],
        redrive: Some(RedriveRule {
            dlq_queue_id: b,
            moves_at_receive_count: 1,
            source_arn: "arn:aws:sqs:us-east-1:000000000000:a".into(),
            dedup_id_from_message_id: false,
        }),
        fifo: false,
        send_order: false,
        attempt: None,
    };
    assert!(store.receive(redrive).await.is_err());
    assert!(store
        .move_messages(a, MoveTarget::Queue(b), vec!["m".into()], T0, None)
        .await
        .is_err());
    // Only "z" was stored, and it is still visible.
    assert_eq!(store.queue_counts(a, T0).await.unwrap().visible, 1);
    assert_eq!(store.queue_counts(b, T0).await.unwrap().visible, 0);
}

// ----- the outbox (`loft_store::cells::outbox`)

const HOUR: i64 = 3_600_000;

/// A copy that outlives the tests' clocks (the relayed-id sweep runs hours later).
fn long_msg(body: &str) -> NewMessage {
    NewMessage {
        expires_at_ms: T0 + 100 * HOUR,
        ..msg(body)
    }
}

/// Queues `a` (cell 1) and `b` (cell 2).
async fn a_and_b(store: &CellStore) -> (i64, i64) {
    let mut ids = Vec::new();
    for name in ["a", "b"] {
        let (q, _) = store
            .create_queue(name, BTreeMap::new(), BTreeMap::new(), T0)
            .await
            .unwrap();
        ids.push(q.id);
    }
    assert_eq!((cell_of(ids[0]), cell_of(ids[1])), (1, 2));
    (ids[0], ids[1])
}

/// The bodies `queue` holds, in order.
async fn bodies(store: &CellStore, queue: i64) -> Vec<String> {
    store
        .peek_messages(queue, 0, 100, T0)
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.body)
        .collect()
}

/// A publish to queues of two cells stores every copy: the local one in the publish's
/// transaction, the other through the outbox, relayed at once (the outbox is empty when
/// the publish returns), with the destination's wake-up; its outcome names the copy
/// as stored there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_publish_across_cells_stores_every_copy() {
    let Some((store, _schemas)) =
        two_cells("cells::a_publish_across_cells_stores_every_copy").await
    else {
        return;
    };
    let (a, b) = a_and_b(&store).await;
    let mut rx = store.wakeups().expect("cells report wake-ups");
    let sent = store
        .publish(
            vec![(a, long_msg("to-a")), (b, long_msg("to-b"))],
            Vec::new(),
            Vec::new(),
        )
        .await
        .unwrap();
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[1].message_id.as_deref(), Some("id-to-b"));
    assert!(!sent[1].duplicate);
    assert_eq!(cell_of(sent[1].seq), 2, "the copy's seq is cell 2's");
    assert_eq!(bodies(&store, a).await, ["to-a"]);
    assert_eq!(bodies(&store, b).await, ["to-b"]);
    assert_eq!(store.count_outbox().await.unwrap(), 0);
    tokio::time::timeout(std::time::Duration::from_secs(10), async {
        while rx.recv().await.expect("wake-up channel") != b {}
    })
    .await
    .expect("a wake-up for the relayed copy's queue");
    // Nothing is left for the relay workers.
    assert_eq!(
        store
            .relay_outbox(T0 + HOUR, T0 + 2 * HOUR, 10)
            .await
            .unwrap(),
        0
    );
    assert_eq!(bodies(&store, b).await, ["to-b"]);
}

/// A publish (standard or FIFO) whose copies are all in one cell writes no outbox row: it
/// is the publish of one database.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_publish_within_one_cell_writes_no_outbox() {
    let Some((store, _schemas)) =
        two_cells("cells::a_publish_within_one_cell_writes_no_outbox").await
    else {
        return;
    };
    let (a, b) = a_and_b(&store).await;
    store.relay_at_once(false);
    for q in [a, b] {
        store
            .publish(
                vec![(q, long_msg("one")), (q, long_msg("two"))],
                Vec::new(),
                Vec::new(),
            )
            .await
            .unwrap();
        assert_eq!(bodies(&store, q).await, ["one", "two"]);
    }
    // Nor does a FIFO topic's publish to a queue of its own cell.
    let (topic, _) = store
        .create_topic("t.fifo", BTreeMap::new(), BTreeMap::new(), T0)
        .await
        .unwrap();
    let (near, _) = store
        .create_queue("near.fifo", BTreeMap::new(), BTreeMap::new(), T0)
        .await
        .unwrap();
    assert_eq!((cell_of(topic.id), cell_of(near.id)), (1, 1));
    publish_fifo(&store, topic.id, near.id, &["k1", "k2"]).await;
    assert_eq!(bodies(&store, near.id).await, ["seq 1", "seq 2"]);
    assert_eq!(store.count_outbox().await.unwrap(), 0);
}

/// A relay that dies after the destination's commit and before the source's delete: the
/// row stays in the outbox, leased; once the lease ends another relay takes it, stores
/// nothing (the destination recorded the row's id) and removes it. The sweep of relayed
/// ids meanwhile keeps the id, since its row is still in the outbox.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relay_that_died_after_the_destination_commit_repeats_nothing() {
    let Some((store, _schemas)) =
        two_cells("cells::a_relay_that_died_after_the_destination_commit_repeats_nothing").await
    else {
        return;
    };
    let (a, b) = a_and_b(&store).await;
    store.relay_at_once(false);
    let sent = store
        .publish(
            vec![(a, long_msg("to-a")), (b, long_msg("to-b"))],
            Vec::new(),
            Vec::new(),
        )
        .await
        .unwrap();
    assert_eq!(sent[1].seq, 0, "not relayed yet");
    assert_eq!(bodies(&store, a).await, ["to-a"]);
    assert!(bodies(&store, b).await.is_empty());
    assert_eq!(store.count_outbox().await.unwrap(), 1);

    // The relay's first two steps, then it dies.
    let lease = T0 + 30_000;
    let rows = store.claim_outbox(0, T0, lease, 10).await.unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].queue_id, b);
    let stored = store.relay_rows(&rows, T0).await.unwrap();
    assert!(stored[0].is_some());
    assert_eq!(bodies(&store, b).await, ["to-b"]);

    // While the lease runs no other relay takes the row; the sweep keeps its id.
    assert_eq!(
        store.relay_outbox(T0 + 1, T0 + 60_000, 10).await.unwrap(),
        0
    );
    store.delete_expired(T0 + 10 * HOUR).await.unwrap();
    assert_eq!(store.count_outbox().await.unwrap(), 1);

    // After it, a relay repeats the row: nothing is stored twice.
    assert_eq!(
        store.relay_outbox(lease, lease + 30_000, 10).await.unwrap(),
        1
    );
    assert_eq!(store.count_outbox().await.unwrap(), 0);
    assert_eq!(bodies(&store, b).await, ["to-b"]);
    assert_eq!(bodies(&store, a).await, ["to-a"]);
    // A late repeat of the dead relay's own insert stores nothing either.
    assert_eq!(store.relay_rows(&rows, T0).await.unwrap(), vec![None]);
    assert_eq!(bodies(&store, b).await, ["to-b"]);
}

/// A relay that dies before the destination's commit: nothing was stored; once the lease
/// ends another relay stores the copy once and removes the row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relay_that_died_before_the_destination_commit_stores_once() {
    let Some((store, _schemas)) =
        two_cells("cells::a_relay_that_died_before_the_destination_commit_stores_once").await
    else {
        return;
    };
    let (a, b) = a_and_b(&store).await;
    store.relay_at_once(false);
    store
        .publish(
            vec![
                (b, long_msg("to-b-1")),
                (b, long_msg("to-b-2")),
                (a, long_msg("to-a")),
            ],
            Vec::new(),
            Vec::new(),
        )
        .await
        .unwrap();
    // The publish ran in cell 2, which holds most of its copies.
    assert_eq!(bodies(&store, b).await, ["to-b-1", "to-b-2"]);
    assert!(bodies(&store, a).await.is_empty());

    // The relay leases the row, then dies.
    let lease = T0 + 30_000;
    let rows = store.claim_outbox(1, T0, lease, 10).await.unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(store.claim_outbox(1, T0, lease, 10).await.unwrap(), vec![]);
    assert!(bodies(&store, a).await.is_empty());

    assert_eq!(
        store.relay_outbox(T0 + 1, T0 + 60_000, 10).await.unwrap(),
        0
    );
    assert_eq!(
        store.relay_outbox(lease, lease + 30_000, 10).await.unwrap(),
        1
    );
    assert_eq!(bodies(&store, a).await, ["to-a"]);
    assert_eq!(store.count_outbox().await.unwrap(), 0);
    assert_eq!(
        store
            .relay_outbox(lease + HOUR, lease + 2 * HOUR, 10)
            .await
            .unwrap(),
        0
    );
    assert_eq!(bodies(&store, a).await, ["to-a"]);
}

/// Two relays of the same rows at once (one whose lease ran out while it still worked,
/// and its successor) store each copy once, in the order of the publish.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_relays_of_one_row_store_it_once() {
    let Some((store, _schemas)) =
        two_cells("cells::concurrent_relays_of_one_row_store_it_once").await
    else {
        return;
    };
    let (a, b) = a_and_b(&store).await;
    store.relay_at_once(false);
    // 21 copies for b and 20 for a: the publish runs in b's cell, a's go to the outbox.
    let copies: Vec<(i64, NewMessage)> = (0..21)
        .map(|i| (b, long_msg(&format!("b{i}"))))
        .chain((0..20).map(|i| (a, long_msg(&format!("a{i}")))))
        .collect();
    store.publish(copies, Vec::new(), Vec::new()).await.unwrap();
    assert!(store
        .claim_outbox(0, T0, T0 + 30_000, 100)
        .await
        .unwrap()
        .is_empty());
    let rows = store.claim_outbox(1, T0, T0 + 30_000, 100).await.unwrap();
    assert_eq!(rows.len(), 20);
    let store = Arc::new(store);
    let (x, y) = {
        let (s1, s2) = (store.clone(), store.clone());
        let (r1, r2) = (rows.clone(), rows.clone());
        tokio::join!(
            tokio::spawn(async move { s1.relay_rows(&r1, T0).await.unwrap() }),
            tokio::spawn(async move { s2.relay_rows(&r2, T0).await.unwrap() }),
        )
    };
    let (x, y) = (x.unwrap(), y.unwrap());
    for i in 0..rows.len() {
        assert!(
            x[i].is_some() != y[i].is_some(),
            "row {i}: exactly one of the two relays stored it"
        );
    }
    store.finish_rows(&rows).await.unwrap();
    let want: Vec<String> = (0..20).map(|i| format!("a{i}")).collect();
    assert_eq!(bodies(&store, a).await, want);
    assert_eq!(bodies(&store, b).await.len(), 21);
    assert_eq!(store.count_outbox().await.unwrap(), 0);
}

/// A FIFO topic's fan-out that puts one copy per entry in `queue`, its body naming the
/// entry's sequence number.
fn fifo_fanout_to(queue: i64) -> FifoFanout {
    Arc::new(move |_, sequence| {
        let body = format!("seq {sequence}");
        vec![(
            queue,
            NewMessage {
                group_id: Some("G".into()),
                dedup_id: Some(body.clone()),
                dedup: Some(DedupKey {
                    scope: String::new(),
                    id: body.clone(),
                    expires_at_ms: T0 + 300_000,
                }),
                ..long_msg(&body)
            },
        )]
    })
}

/// Publishes entries `keys` to FIFO topic `topic`, fanning out to `queue`.
async fn publish_fifo(store: &CellStore, topic: i64, queue: i64, keys: &[&str]) {
    let entries = keys
        .iter()
        .map(|k| FifoPublishEntry {
            message_id: format!("m-{k}"),
            dedup: DedupKey {
                scope: String::new(),
                id: (*k).to_owned(),
                expires_at_ms: T0 + 300_000,
            },
            archive: None,
            subscriptions: Vec::new(),
        })
        .collect();
    let out = store
        .publish_fifo(FifoPublish {
            topic_id: topic,
            now_ms: T0,
            entries,
            fanout: fifo_fanout_to(queue),
        })
        .await
        .unwrap()
        .expect("the topic exists");
    assert_eq!(out.len(), keys.len());
}

/// A FIFO topic on cell 1 fanning out to a FIFO queue on cell 2: the copies go through
/// the outbox and reach the queue in SequenceNumber order. While one relay holds the
/// queue's earlier rows no other relay takes its later ones, and a relay that died
/// holding them delays the rest until its lease ends, then all go in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fifo_topics_copies_are_relayed_in_sequence_order() {
    let Some((store, _schemas)) =
        two_cells("cells::a_fifo_topics_copies_are_relayed_in_sequence_order").await
    else {
        return;
    };
    let (topic, _) = store
        .create_topic("t.fifo", BTreeMap::new(), BTreeMap::new(), T0)
        .await
        .unwrap();
    let mut ids = Vec::new();
    for name in ["local.fifo", "far.fifo"] {
        let (q, _) = store
            .create_queue(name, BTreeMap::new(), BTreeMap::new(), T0)
            .await
            .unwrap();
        ids.push(q.id);
    }
    let far = ids[1];
    assert_eq!((cell_of(topic.id), cell_of(far)), (1, 2));
    store.relay_at_once(false);
    publish_fifo(&store, topic.id, far, &["k1", "k2", "k3"]).await;
    publish_fifo(&store, topic.id, far, &["k4", "k5"]).await;
    assert_eq!(store.count_outbox().await.unwrap(), 5);
    assert!(bodies(&store, far).await.is_empty());

    // Relay X takes the first two rows; relay Y then takes none of the queue's others.
    let lease = T0 + 30_000;
    let x = store.claim_outbox(0, T0, lease, 2).await.unwrap();
    assert_eq!(x.len(), 2);
    assert_eq!(store.claim_outbox(0, T0, lease, 10).await.unwrap(), vec![]);
    // X dies. Until its lease ends nothing moves; then one relay takes all five, in order.
    assert_eq!(store.relay_outbox(T0 + 1, lease, 10).await.unwrap(), 0);
    assert_eq!(
        store.relay_outbox(lease, lease + 30_000, 10).await.unwrap(),
        5
    );
    let want: Vec<String> = (1..=5).map(|s| format!("seq {s}")).collect();
    assert_eq!(bodies(&store, far).await, want);
    // X's late insert stores nothing.
    assert_eq!(store.relay_rows(&x, lease).await.unwrap(), vec![None, None]);

    // Relayed at once by the publishing node: in order after the others.
    store.relay_at_once(true);
    publish_fifo(&store, topic.id, far, &["k6", "k7"]).await;
    assert_eq!(store.count_outbox().await.unwrap(), 0);
    let want: Vec<String> = (1..=7).map(|s| format!("seq {s}")).collect();
    assert_eq!(bodies(&store, far).await, want);
}
