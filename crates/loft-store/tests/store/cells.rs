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
use loft_store::{CellStore, PgOptions, PgStore};

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

/// 12 queues and 12 topics created at once on two empty cells land 6 and 6 too: each
/// choice counts the placements of this node not yet stored (before, every create counted
/// the same stored rows, and all 24 landed on one cell).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twelve_queues_created_at_once_land_six_and_six() {
    let Some((store, _schemas)) =
        two_cells("cells::twelve_queues_created_at_once_land_six_and_six").await
    else {
        return;
    };
    let store = std::sync::Arc::new(store);
    let mut creates = Vec::new();
    for i in 0..12 {
        let store = store.clone();
        creates.push(tokio::spawn(async move {
            let (q, created) = store
                .create_queue(&format!("q{i}"), BTreeMap::new(), BTreeMap::new(), T0)
                .await
                .unwrap();
            assert!(created);
            let (t, _) = store
                .create_topic(&format!("t{i}"), BTreeMap::new(), BTreeMap::new(), T0)
                .await
                .unwrap();
            (cell_of(q.id), cell_of(t.id))
        }));
    }
    let (mut queues, mut topics) = ([0; 2], [0; 2]);
    for c in creates {
        let (q, t) = c.await.unwrap();
        queues[(q - 1) as usize] += 1;
        topics[(t - 1) as usize] += 1;
    }
    assert_eq!((queues, topics), ([6, 6], [6, 6]));
}

/// 10 queues created at once through two nodes (two stores over the same cells), 5 at
/// each, land 5 and 5: every placement, whichever node makes it, counts the ones before
/// it in cell 1's catalog (a node that counted only its own would put 3 of its 5 on
/// cell 1, and so would the other).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_queues_created_at_once_on_two_nodes_land_five_and_five() {
    let Some((first, schemas)) =
        two_cells("cells::ten_queues_created_at_once_on_two_nodes_land_five_and_five").await
    else {
        return;
    };
    let nodes = [
        std::sync::Arc::new(first),
        std::sync::Arc::new(open_cells(&schemas).await),
    ];
    let mut creates = Vec::new();
    for i in 0..10 {
        let store = nodes[i % 2].clone();
        creates.push(tokio::spawn(async move {
            let (q, created) = store
                .create_queue(&format!("q{i}"), BTreeMap::new(), BTreeMap::new(), T0)
                .await
                .unwrap();
            assert!(created);
            cell_of(q.id)
        }));
    }
    let mut queues = [0; 2];
    for c in creates {
        queues[(c.await.unwrap() - 1) as usize] += 1;
    }
    assert_eq!(queues, [5, 5]);
}

/// A database that served alone, opened as cell 1 of two: its queue and topic are found
/// by name on their cell, and they count, so the next two queues go to cell 2 and then
/// to cell 1.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_that_served_alone_keeps_its_names_as_cell_one() {
    let test = "cells::a_database_that_served_alone_keeps_its_names_as_cell_one";
    let Some(schemas) = cell_schemas(2) else {
        skips::postgres().skip(test);
        return;
    };
    {
        let alone = PgStore::connect(
            &schemas[0].url,
            PgOptions {
                pool_size: 2,
                schema: Some(schemas[0].schema.clone()),
            },
        )
        .await
        .unwrap();
        let (q, _) = alone
            .create_queue("old", BTreeMap::new(), BTreeMap::new(), T0)
            .await
            .unwrap();
        alone
            .send_messages(vec![(q.id, msg("kept"))])
            .await
            .unwrap();
        alone
            .create_topic("old-topic", BTreeMap::new(), BTreeMap::new(), T0)
            .await
            .unwrap();
    }
    let store = open_cells(&schemas).await;
    let q = store
        .get_queue("old")
        .await
        .unwrap()
        .expect("the old queue is found");
    assert_eq!(cell_of(q.id), 1);
    assert!(store.get_topic("old-topic").await.unwrap().is_some());
    let mut cells = Vec::new();
    for name in ["new-1", "new-2"] {
        let (q, created) = store
            .create_queue(name, BTreeMap::new(), BTreeMap::new(), T0)
            .await
            .unwrap();
        assert!(created);
        cells.push(cell_of(q.id));
    }
    assert_eq!(cells, [2, 1]);
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

/// Work whose transaction would span two cells and that no outbox carries (a send
/// naming queues of two cells) is refused whole: nothing is written.
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
    assert_eq!(store.queue_counts(a, T0).await.unwrap().visible, 0);
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

/// A FIFO topic's archive replayed to a subscriber whose queue is in the other cell: each
/// step commits its cursor in the topic's cell with the copies in its outbox, and they
/// reach the queue in order, relayed at once or, with that off, by the relay workers. A
/// stale step (another node's lease) writes no outbox row. Before, such a step was
/// refused as work across cells and the replay could not go on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_into_a_queue_of_another_cell_arrives_in_order() {
    let Some((store, _schemas)) =
        two_cells("cells::a_replay_into_a_queue_of_another_cell_arrives_in_order").await
    else {
        return;
    };
    let store = Arc::new(store);
    let s: S = store.clone();
    let (topic, _) = store
        .create_topic("rp.fifo", BTreeMap::new(), BTreeMap::new(), T0)
        .await
        .unwrap();
    let _near = conformance::queue(&s, "near.fifo").await;
    let q = conformance::queue(&s, "far.fifo").await;
    assert_eq!((cell_of(topic.id), cell_of(q)), (1, 2));
    store
        .create_subscription(topic.id, conformance::new_sub("u-far", true))
        .await
        .unwrap();
    store
        .put_replay(conformance::replay("u-far", topic.id, "r1"))
        .await
        .unwrap();
    assert_eq!(
        store
            .claim_replays("A", T0, T0 + 30_000, 10)
            .await
            .unwrap()
            .len(),
        1
    );
    let step = |owner: &str, bodies: &[&str], cursor: i64| {
        conformance::replay_step(
            "u-far",
            "r1",
            owner,
            T0,
            bodies
                .iter()
                .map(|b| {
                    (
                        q,
                        conformance::fifo_msg(b, "G", &format!("replay:r1:{b}"), T0),
                    )
                })
                .collect(),
            cursor,
            ReplayFinish::Continue,
        )
    };
    let next = store
        .advance_replay(step("A", &["one", "two"], 2))
        .await
        .unwrap()
        .expect("A holds the replay");
    assert_eq!((next.status, next.cursor), (ReplayStatus::Replaying, 2));
    assert_eq!(store.count_outbox().await.unwrap(), 0, "relayed at once");
    // Another node's step: stale, nothing written.
    assert!(store
        .advance_replay(step("B", &["from-b"], 3))
        .await
        .unwrap()
        .is_none());
    assert_eq!(store.count_outbox().await.unwrap(), 0);
    // The relay workers carry what the step left in the outbox.
    store.relay_at_once(false);
    store
        .advance_replay(step("A", &["three"], 3))
        .await
        .unwrap()
        .expect("A holds the replay");
    assert_eq!(store.count_outbox().await.unwrap(), 1);
    assert_eq!(
        store
            .relay_outbox(T0 + HOUR, T0 + 2 * HOUR, 10)
            .await
            .unwrap(),
        1
    );
    let got: Vec<String> = store
        .peek_messages(q, 0, 100, T0)
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.body)
        .collect();
    assert_eq!(got, ["one", "two", "three"]);
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

// ----- dead-letter queues and message moves across cells

/// The ARN the tests' redrive rules name as the source.
const SOURCE_ARN: &str = "arn:aws:sqs:us-east-1:000000000000:a";

/// A receive of one message from `queue` at `now` that moves messages received at least
/// `max` times to `dlq`, and hides what it claims for `hide` ms.
fn redrive_receive(
    queue: i64,
    dlq: i64,
    max: i64,
    now: i64,
    hide: i64,
    fifo: bool,
) -> ReceiveRequest {
    ReceiveRequest {
        queue_id: queue,
        max_messages: 10,
        now_ms: now,
        visibility_ms: hide,
        receipt_tokens: (1..=10).collect(),
        redrive: Some(RedriveRule {
            dlq_queue_id: dlq,
            moves_at_receive_count: max,
            source_arn: SOURCE_ARN.into(),
            dedup_id_from_message_id: false,
        }),
        fifo,
        send_order: false,
        attempt: None,
    }
}

/// A message with attributes, for the comparisons of moved messages.
fn rich_msg(body: &str) -> NewMessage {
    NewMessage {
        message_attributes: Some(format!("attrs-{body}")),
        system_attributes: Some(format!("sys-{body}")),
        ..long_msg(body)
    }
}

/// What a moved message keeps, without the ids its cell gives (seq, queue, receipt).
fn kept(m: &StoredMessage) -> StoredMessage {
    StoredMessage {
        seq: 0,
        queue_id: 0,
        receipt_token: 0,
        ..m.clone()
    }
}

/// Sends `body` to `queue`, receives it once (hidden 0 ms, so visible again), then
/// receives again with maxReceiveCount 1 towards `dlq`: the message moves. Returns the
/// messages `dlq` then holds.
async fn dead_letter_one(
    store: &CellStore,
    queue: i64,
    dlq: i64,
    body: &str,
) -> Vec<StoredMessage> {
    store
        .send_messages(vec![(queue, rich_msg(body))])
        .await
        .unwrap();
    let first = store
        .receive(redrive_receive(queue, dlq, 1, T0, 0, false))
        .await
        .unwrap();
    assert_eq!(first.messages.len(), 1);
    let second = store
        .receive(redrive_receive(queue, dlq, 1, T0 + 1, 0, false))
        .await
        .unwrap();
    assert!(second.messages.is_empty());
    assert_eq!(second.dead_lettered, 1);
    store.peek_messages(dlq, 0, 100, T0 + 1).await.unwrap()
}

/// A receive that moves a message over maxReceiveCount to a dead-letter queue of another
/// cell: the message leaves its queue and reaches the dead-letter queue (relayed at
/// once, the outbox empty after) exactly as a move to a dead-letter queue of its own cell
/// leaves it: body, attributes, MessageId, receive count, first receive, sent time,
/// expiry and DeadLetterQueueSourceArn alike; only its seq is the other cell's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_letter_to_another_cell_matches_one_in_the_same_cell() {
    let Some((store, _schemas)) =
        two_cells("cells::a_dead_letter_to_another_cell_matches_one_in_the_same_cell").await
    else {
        return;
    };
    let (a, far) = a_and_b(&store).await;
    let (near, _) = store
        .create_queue("near", BTreeMap::new(), BTreeMap::new(), T0)
        .await
        .unwrap();
    assert_eq!(cell_of(near.id), 1);

    let there = dead_letter_one(&store, a, far, "m").await;
    let here = dead_letter_one(&store, a, near.id, "m").await;
    assert_eq!(there.len(), 1);
    assert_eq!(here.len(), 1);
    assert_eq!(cell_of(there[0].seq), 2, "stored by cell 2");
    assert_eq!(there[0].dead_letter_source.as_deref(), Some(SOURCE_ARN));
    assert_eq!(there[0].receive_count, 1);
    assert_eq!(kept(&there[0]), kept(&here[0]));
    assert_eq!(store.queue_counts(a, T0 + 1).await.unwrap().visible, 0);
    assert_eq!(store.count_outbox().await.unwrap(), 0);
}

/// A dead-letter move to another cell whose relay dies before the destination's commit,
/// then one whose relay dies after it: the message is in the outbox as soon as the
/// receive commits (gone from its queue), and each is stored once in the dead-letter
/// queue whatever relay repeats it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_letter_relay_that_dies_stores_once() {
    let Some((store, _schemas)) =
        two_cells("cells::a_dead_letter_relay_that_dies_stores_once").await
    else {
        return;
    };
    let (a, b) = a_and_b(&store).await;
    store.relay_at_once(false);
    for body in ["one", "two"] {
        store
            .send_messages(vec![(a, rich_msg(body))])
            .await
            .unwrap();
    }
    store
        .receive(redrive_receive(a, b, 1, T0, 0, false))
        .await
        .unwrap();
    let out = store
        .receive(redrive_receive(a, b, 1, T0 + 1, 0, false))
        .await
        .unwrap();
    assert_eq!(out.dead_lettered, 2);
    assert!(out.messages.is_empty());
    assert_eq!(store.queue_counts(a, T0 + 1).await.unwrap().visible, 0);
    assert!(bodies(&store, b).await.is_empty());
    assert_eq!(store.count_outbox().await.unwrap(), 2);

    // Relay X leases both rows and dies before storing them.
    let lease = T0 + 30_000;
    let x = store.claim_outbox(0, T0, lease, 10).await.unwrap();
    assert_eq!(x.len(), 2);
    assert!(x.iter().all(|r| r.moved.is_some()));
    assert_eq!(store.relay_outbox(T0 + 1, lease, 10).await.unwrap(), 0);
    // Relay Y takes them after the lease, stores them, and dies before its delete.
    let y = store
        .claim_outbox(0, lease, lease + 30_000, 10)
        .await
        .unwrap();
    assert_eq!(y.len(), 2);
    let stored = store.relay_rows(&y, lease).await.unwrap();
    assert!(stored.iter().all(Option::is_some));
    // Relay Z repeats them after Y's lease: nothing is stored twice.
    assert_eq!(
        store
            .relay_outbox(lease + 30_000, lease + 60_000, 10)
            .await
            .unwrap(),
        2
    );
    assert_eq!(store.count_outbox().await.unwrap(), 0);
    assert_eq!(store.relay_rows(&x, lease).await.unwrap(), vec![None, None]);
    let dead = store.peek_messages(b, 0, 100, lease).await.unwrap();
    let got: Vec<&str> = dead.iter().map(|m| m.body.as_str()).collect();
    assert_eq!(got, ["one", "two"]);
    assert!(dead
        .iter()
        .all(|m| m.dead_letter_source.as_deref() == Some(SOURCE_ARN) && m.receive_count == 1));
}

/// A FIFO queue on cell 1 whose dead-letter queue is a FIFO queue on cell 2: a group's
/// messages moved by one receive reach it in their order, keeping their group,
/// deduplication id and SequenceNumber, whichever relay stores them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifo_dead_letters_reach_another_cell_in_order() {
    let Some((store, _schemas)) =
        two_cells("cells::fifo_dead_letters_reach_another_cell_in_order").await
    else {
        return;
    };
    let mut ids = Vec::new();
    for name in ["a.fifo", "b.fifo"] {
        let (q, _) = store
            .create_queue(name, BTreeMap::new(), BTreeMap::new(), T0)
            .await
            .unwrap();
        ids.push(q.id);
    }
    let (a, b) = (ids[0], ids[1]);
    assert_eq!((cell_of(a), cell_of(b)), (1, 2));
    store.relay_at_once(false);
    let fifo = |body: &str| NewMessage {
        group_id: Some("G".into()),
        dedup_id: Some(format!("d-{body}")),
        dedup: Some(DedupKey {
            scope: String::new(),
            id: format!("d-{body}"),
            expires_at_ms: T0 + 300_000,
        }),
        ..rich_msg(body)
    };
    let mut sent = Vec::new();
    for body in ["f1", "f2", "f3"] {
        sent.extend(store.send_messages(vec![(a, fifo(body))]).await.unwrap());
    }
    let first = store
        .receive(redrive_receive(a, b, 1, T0, 0, true))
        .await
        .unwrap();
    assert_eq!(first.messages.len(), 3);
    let out = store
        .receive(redrive_receive(a, b, 1, T0 + 1, 0, true))
        .await
        .unwrap();
    assert_eq!(out.dead_lettered, 3);
    assert_eq!(store.count_outbox().await.unwrap(), 3);
    // A relay that takes the first row alone, then dies: the later rows wait for it.
    let lease = T0 + 30_000;
    assert_eq!(store.claim_outbox(0, T0, lease, 1).await.unwrap().len(), 1);
    assert_eq!(store.claim_outbox(0, T0, lease, 10).await.unwrap(), vec![]);
    assert_eq!(
        store.relay_outbox(lease, lease + 30_000, 10).await.unwrap(),
        3
    );
    let dead = store.peek_messages(b, 0, 100, lease).await.unwrap();
    let got: Vec<(&str, Option<&str>, Option<&str>)> = dead
        .iter()
        .map(|m| {
            (
                m.body.as_str(),
                m.group_id.as_deref(),
                m.dedup_id.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("f1", Some("G"), Some("d-f1")),
            ("f2", Some("G"), Some("d-f2")),
            ("f3", Some("G"), Some("d-f3")),
        ]
    );
    let numbers: Vec<Option<i64>> = dead.iter().map(|m| m.sequence).collect();
    let sent_numbers: Vec<Option<i64>> = sent.iter().map(|s| s.sequence).collect();
    assert_eq!(numbers, sent_numbers, "each keeps its SequenceNumber");
}

/// A message move (StartMessageMoveTask's step) from a queue on cell 1 to a queue on cell
/// 2: each message leaves the source and reaches the destination once, as a move in one
/// cell stores it (new MessageId, receive count 0), relayed at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_move_to_another_cell_moves_each_message_once() {
    let Some((store, _schemas)) =
        two_cells("cells::a_message_move_to_another_cell_moves_each_message_once").await
    else {
        return;
    };
    let (a, b) = a_and_b(&store).await;
    for body in ["x", "y", "z"] {
        store
            .send_messages(vec![(a, rich_msg(body))])
            .await
            .unwrap();
    }
    let moved = store
        .move_messages(
            a,
            MoveTarget::Queue(b),
            vec!["n1".into(), "n2".into(), "n3".into(), "n4".into()],
            T0 + 5,
            None,
        )
        .await
        .unwrap();
    assert_eq!(moved, Some(3));
    assert!(bodies(&store, a).await.is_empty());
    assert_eq!(store.count_outbox().await.unwrap(), 0);
    let there = store.peek_messages(b, 0, 100, T0 + 5).await.unwrap();
    let got: Vec<(&str, Option<&str>, i64, i64)> = there
        .iter()
        .map(|m| {
            (
                m.body.as_str(),
                m.message_id.as_deref(),
                m.receive_count,
                m.sent_at_ms,
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("x", Some("n1"), 0, T0 + 5),
            ("y", Some("n2"), 0, T0 + 5),
            ("z", Some("n3"), 0, T0 + 5),
        ]
    );
    assert!(there.iter().all(|m| cell_of(m.seq) == 2));
}

/// A move task's step to a queue of another cell whose node dies after the step's commit,
/// before any relay: the step counted its messages and they left the source in its
/// transaction; the relay workers store each once, and a repeat of a relay stores
/// nothing. A step of a cancelled task moves nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_task_across_cells_survives_its_node() {
    let Some((store, _schemas)) =
        two_cells("cells::a_move_task_across_cells_survives_its_node").await
    else {
        return;
    };
    let (a, b) = a_and_b(&store).await;
    store.relay_at_once(false);
    for body in ["x", "y", "z"] {
        store
            .send_messages(vec![(a, rich_msg(body))])
            .await
            .unwrap();
    }
    let task = MoveTaskRecord {
        handle: "h1".into(),
        source_arn: SOURCE_ARN.into(),
        source_queue: "a".into(),
        destination_arn: Some("arn:aws:sqs:us-east-1:000000000000:b".into()),
        max_per_second: Some(2),
        status: MoveTaskStatus::Running,
        moved: 0,
        to_move: 3,
        failure_reason: None,
        started_at_ms: T0,
        owner: None,
        lease_until_ms: 0,
        started_by: None,
    };
    assert!(store.create_move_task(task).await.unwrap());
    let claimed = store
        .claim_move_tasks("node-1", T0, T0 + 30_000, 10)
        .await
        .unwrap();
    assert_eq!(claimed.len(), 1);
    let lease = MoveTaskLease {
        handle: "h1".into(),
        owner: "node-1".into(),
        lease_until_ms: T0 + 30_000,
    };
    let step = store
        .move_messages(
            a,
            MoveTarget::Queue(b),
            vec!["n1".into(), "n2".into()],
            T0 + 1,
            Some(lease.clone()),
        )
        .await
        .unwrap();
    assert_eq!(step, Some(2));
    // The node dies here: its two messages are in the outbox, counted by the task.
    assert_eq!(bodies(&store, a).await, ["z"]);
    assert!(bodies(&store, b).await.is_empty());
    assert_eq!(store.count_outbox().await.unwrap(), 2);
    let listed = store.list_move_tasks(SOURCE_ARN, 10).await.unwrap();
    assert_eq!(listed[0].moved, 2);
    let rows = store
        .claim_outbox(0, T0 + 2, T0 + 2 + 30_000, 10)
        .await
        .unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(store.relay_rows(&rows, T0 + 2).await.unwrap().len(), 2);
    // A relay worker after the lease finishes the rows without storing them again.
    assert_eq!(
        store
            .relay_outbox(T0 + 60_000, T0 + 90_000, 10)
            .await
            .unwrap(),
        2
    );
    assert_eq!(bodies(&store, b).await, ["x", "y"]);
    assert_eq!(store.count_outbox().await.unwrap(), 0);
    assert_eq!(
        store.relay_rows(&rows, T0 + 2).await.unwrap(),
        vec![None, None]
    );
    assert_eq!(bodies(&store, b).await, ["x", "y"]);
}

/// A service on two cells: CreateQueue with a RedrivePolicy places the queue in its
/// dead-letter queue's cell (cell 1 holds more queues, so the count alone would put it on
/// cell 2); a queue without one goes where the counts say.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queue_with_a_redrive_policy_goes_to_its_dead_letter_queues_cell() {
    let Some((store, _schemas)) =
        two_cells("cells::a_queue_with_a_redrive_policy_goes_to_its_dead_letter_queues_cell").await
    else {
        return;
    };
    let store = Arc::new(store);
    let svc = Service::new(
        store.clone(),
        Arc::new(ManualClock::new(T0)),
        ServiceConfig::default(),
        None,
    );
    for name in ["dlq", "pad-1", "pad-2"] {
        svc.sqs()
            .create_queue(name, BTreeMap::new(), BTreeMap::new())
            .await
            .unwrap();
    }
    let cell = |name: &'static str| {
        let store = store.clone();
        async move { cell_of(store.get_queue(name).await.unwrap().unwrap().id) }
    };
    assert_eq!(
        (cell("dlq").await, cell("pad-1").await, cell("pad-2").await),
        (1, 2, 1)
    );
    let policy = BTreeMap::from([(
        "RedrivePolicy".to_owned(),
        r#"{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:dlq","maxReceiveCount":"2"}"#
            .to_owned(),
    )]);
    svc.sqs()
        .create_queue("src", policy, BTreeMap::new())
        .await
        .unwrap();
    assert_eq!(cell("src").await, 1, "beside its dead-letter queue");
    svc.sqs()
        .create_queue("plain", BTreeMap::new(), BTreeMap::new())
        .await
        .unwrap();
    assert_eq!(cell("plain").await, 2, "the cell with fewer queues");
}

/// Through the service: a queue on cell 1 given (by SetQueueAttributes) a dead-letter
/// queue on cell 2; a message received past maxReceiveCount is received from the
/// dead-letter queue with its MessageId, body and DeadLetterQueueSourceArn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_dead_letters_into_another_cell() {
    let Some((store, _schemas)) =
        two_cells("cells::a_service_dead_letters_into_another_cell").await
    else {
        return;
    };
    let store = Arc::new(store);
    let svc = Service::new(
        store.clone(),
        Arc::new(ManualClock::new(T0)),
        ServiceConfig::default(),
        None,
    );
    for name in ["src", "dlq"] {
        svc.sqs()
            .create_queue(name, BTreeMap::new(), BTreeMap::new())
            .await
            .unwrap();
    }
    let src = store.get_queue("src").await.unwrap().unwrap();
    let dlq = store.get_queue("dlq").await.unwrap().unwrap();
    assert_eq!((cell_of(src.id), cell_of(dlq.id)), (1, 2));
    svc.sqs()
        .set_queue_attributes(
            "src",
            BTreeMap::from([(
                "RedrivePolicy".to_owned(),
                r#"{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:dlq","maxReceiveCount":"1"}"#
                    .to_owned(),
            )]),
        )
        .await
        .unwrap();
    let sent = svc
        .sqs()
        .send_message(
            "src",
            SendMessage {
                body: "poison".into(),
                ..SendMessage::default()
            },
        )
        .await
        .unwrap();
    let receive = |queue: &'static str| {
        let svc = svc.clone();
        async move {
            svc.sqs()
                .receive_message(
                    queue,
                    ReceiveMessage {
                        max_messages: Some(1),
                        visibility_timeout: Some(0),
                        wait_seconds: Some(0),
                        system_attribute_names: vec!["All".into()],
                        ..ReceiveMessage::default()
                    },
                )
                .await
                .unwrap()
        }
    };
    assert_eq!(receive("src").await.len(), 1);
    assert!(
        receive("src").await.is_empty(),
        "moved on its second receive"
    );
    let got = receive("dlq").await;
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].body, "poison");
    assert_eq!(got[0].message_id, sent.message_id);
    assert_eq!(
        got[0]
            .attributes
            .get("DeadLetterQueueSourceArn")
            .map(String::as_str),
        Some("arn:aws:sqs:us-east-1:000000000000:src")
    );
    assert_eq!(store.count_outbox().await.unwrap(), 0);
}

/// A cell whose multi-host URL names first a host that is lost (its SYNs go unanswered,
/// as when a failed-over primary's machine is gone) and then the primary opens and
/// serves: each host gets a bounded time to accept (docs/deployment.md "Failover of a
/// cell (Patroni)"), not the kernel's two minutes of SYN retries, which outlast the start's
/// 10 s bound (and a running node's probe, which would keep the cell down).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_first_host_of_a_multi_host_url_is_passed_over() {
    let Some(mut schemas) = cell_schemas(1) else {
        skips::postgres().skip("a_lost_first_host_of_a_multi_host_url_is_passed_over");
        return;
    };
    let schema = schemas.pop().expect("one schema");
    // A listener with a backlog of 0 whose one queued connection is never accepted: the
    // kernel drops every further SYN to it, as to a host that is gone.
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket
        .bind("127.0.0.1:0".parse().expect("address"))
        .expect("bind");
    let lost = socket.listen(0).expect("listen with a backlog of 0");
    let lost_port = lost.local_addr().expect("address").port();
    let _queued = tokio::net::TcpStream::connect(("127.0.0.1", lost_port))
        .await
        .expect("the one queued connection");
    // postgres://USER@HOST:PORT/DB?... -> postgres://USER@127.0.0.1:LOST,HOST:PORT/DB?...
    let (scheme, rest) = schema.url.split_once("://").expect("a postgres:// URL");
    let (user, rest) = rest.split_once('@').expect("a user in the URL");
    let url = format!(
        "{scheme}://{user}@127.0.0.1:{lost_port},{rest}{}target_session_attrs=read-write",
        if rest.contains('?') { "&" } else { "?" }
    );
    let store = loft_store::PgStore::connect(
        &url,
        loft_store::PgOptions {
            pool_size: 2,
            schema: Some(schema.schema.clone()),
        },
    )
    .await
    .unwrap_or_else(|e| panic!("the primary behind a lost first host: {e}"));
    let store: conformance::S = Arc::new(store);
    let id = conformance::queue(&store, "behind-a-lost-host").await;
    assert_eq!(cell_of(id), 1, "a queue on the primary: id {id}");
    drop(store);
    drop(lost);
    drop(schema);
}
