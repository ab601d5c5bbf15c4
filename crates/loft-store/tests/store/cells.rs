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

/// Work whose transaction would span two cells is refused whole: nothing is written.
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
        .publish(vec![(a, msg("x")), (b, msg("y"))], Vec::new(), Vec::new())
        .await
        .is_err());
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
