//! Moving a queue between cells (`loft_store::cells::moving`, `loft cells move`): every
//! message (visible, in flight, delayed), attribute, tag, deduplication window and
//! SequenceNumber counter arrives once; the source keeps nothing and refuses writes that
//! name the old id; a second node routes to the new cell; a move stopped after any step
//! (as a killed run) leaves the queue whole and finishes on a rerun from another process.
//! Two schemas of the test database are the two cells; without `LOFT_TEST_DATABASE_URL`
//! the cases skip (fail under `LOFT_TEST_REQUIRE_POSTGRES=1`).

use std::collections::BTreeMap;
use std::sync::Arc;

use loft_core::clock::ManualClock;
use loft_core::error::ErrorCode;
use loft_core::model::*;
use loft_core::service::{ReceiveMessage, SendMessage};
use loft_core::store::Store;
use loft_core::{Service, ServiceConfig};
use loft_store::cells::CELL_ID_BITS;
use loft_store::{CellStore, MoveStep};

use crate::conformance::{self, cell_schemas, open_cells, PgSchema};
use crate::skips;

const T0: i64 = 1_700_000_000_000;

async fn two_cells(test: &str) -> Option<(Arc<CellStore>, Vec<PgSchema>)> {
    let Some(schemas) = cell_schemas(2) else {
        skips::postgres().skip(test);
        return None;
    };
    let store = open_cells(&schemas).await;
    Some((Arc::new(store), schemas))
}

fn cell_of(id: i64) -> u32 {
    ((id >> CELL_ID_BITS) + 1) as u32
}

fn service(store: &Arc<CellStore>) -> Arc<Service> {
    service_at(store, T0)
}

fn service_at(store: &Arc<CellStore>, now_ms: i64) -> Arc<Service> {
    Service::new(
        store.clone(),
        Arc::new(ManualClock::new(now_ms)),
        ServiceConfig::default(),
        None,
    )
}

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn send(body: &str) -> SendMessage {
    SendMessage {
        body: body.into(),
        ..SendMessage::default()
    }
}

fn fifo(body: &str, group: &str) -> SendMessage {
    SendMessage {
        body: body.into(),
        group_id: Some(group.into()),
        dedup_id: Some(format!("d-{body}")),
        ..SendMessage::default()
    }
}

fn receive(n: i64, visibility: i64) -> ReceiveMessage {
    ReceiveMessage {
        max_messages: Some(n),
        visibility_timeout: Some(visibility),
        wait_seconds: Some(0),
        system_attribute_names: vec!["All".into()],
        ..ReceiveMessage::default()
    }
}

/// A message as it must arrive: everything but its seq, queue id and stored number (a
/// FIFO queue's SequenceNumbers are compared as the service shows them).
fn kept(m: &StoredMessage) -> StoredMessage {
    StoredMessage {
        seq: 0,
        queue_id: 0,
        sequence: None,
        ..m.clone()
    }
}

async fn all_messages(store: &dyn Store, queue: i64) -> Vec<StoredMessage> {
    store.peek_messages(queue, 0, 1000, T0).await.unwrap()
}

/// A standard queue with visible, in-flight and delayed messages and a FIFO queue with
/// two groups, one message in flight, each with attributes and tags, moved to the other
/// cell: every message arrives once with its state, the queues keep their attributes
/// and tags, the source keeps none of their rows and refuses a send naming the old id;
/// after the move the FIFO deduplication window still holds, SequenceNumbers keep
/// increasing and a group's order is kept; a receipt handle of before the move is
/// `ReceiptHandleIsInvalid`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_moved_queue_keeps_every_message_and_attribute() {
    let Some((store, _schemas)) =
        two_cells("cells_move::a_moved_queue_keeps_every_message_and_attribute").await
    else {
        return;
    };
    let svc = service(&store);
    svc.sqs()
        .create_queue(
            "std",
            map(&[("VisibilityTimeout", "45"), ("DelaySeconds", "0")]),
            map(&[("team", "a")]),
        )
        .await
        .unwrap();
    svc.sqs()
        .create_queue(
            "f.fifo",
            map(&[("FifoQueue", "true"), ("VisibilityTimeout", "60")]),
            map(&[("team", "b")]),
        )
        .await
        .unwrap();
    let std = store.get_queue("std").await.unwrap().unwrap();
    let f = store.get_queue("f.fifo").await.unwrap().unwrap();
    assert_eq!((cell_of(std.id), cell_of(f.id)), (1, 2));

    // std: one in flight, three visible, one delayed.
    svc.sqs().send_message("std", send("fly")).await.unwrap();
    let flying = svc
        .sqs()
        .receive_message("std", receive(1, 300))
        .await
        .unwrap();
    assert_eq!(flying.len(), 1);
    for b in ["v1", "v2", "v3"] {
        svc.sqs().send_message("std", send(b)).await.unwrap();
    }
    svc.sqs()
        .send_message(
            "std",
            SendMessage {
                delay_seconds: Some(600),
                ..send("late")
            },
        )
        .await
        .unwrap();
    // f.fifo: g1 a1 a2 a3, g2 b1; a1 in flight.
    let mut numbers = Vec::new();
    for (b, g) in [("a1", "g1"), ("a2", "g1"), ("b1", "g2"), ("a3", "g1")] {
        let sent = svc.sqs().send_message("f.fifo", fifo(b, g)).await.unwrap();
        numbers.push(sent.sequence_number.unwrap().parse::<u128>().unwrap());
    }
    let a1 = svc
        .sqs()
        .receive_message("f.fifo", receive(1, 300))
        .await
        .unwrap();
    assert_eq!(a1[0].body, "a1");

    let std_before = all_messages(store.as_ref(), std.id).await;
    let f_before = all_messages(store.as_ref(), f.id).await;
    assert_eq!((std_before.len(), f_before.len()), (5, 4));

    let moved = store.move_queue("std", 2).await.unwrap();
    assert_eq!(
        (
            moved.from,
            moved.to,
            moved.old_id,
            moved.messages,
            moved.resumed
        ),
        (1, 2, std.id, 5, false)
    );
    let moved_f = store.move_queue("f.fifo", 1).await.unwrap();
    assert_eq!((moved_f.from, moved_f.to, moved_f.messages), (2, 1, 4));

    let std_after = store.get_queue("std").await.unwrap().unwrap();
    let f_after = store.get_queue("f.fifo").await.unwrap().unwrap();
    assert_eq!((cell_of(std_after.id), cell_of(f_after.id)), (2, 1));
    assert_eq!(std_after.id, moved.new_id);
    for (before, after) in [(&std, &std_after), (&f, &f_after)] {
        assert_eq!(after.attributes, before.attributes, "{}", before.name);
        assert_eq!(after.tags, before.tags, "{}", before.name);
        assert_eq!(after.created_at_ms, before.created_at_ms);
    }
    // Every message once, in its order, in its state.
    for (old, new, before) in [
        (std.id, std_after.id, &std_before),
        (f.id, f_after.id, &f_before),
    ] {
        let after = all_messages(store.as_ref(), new).await;
        assert_eq!(
            after.iter().map(kept).collect::<Vec<_>>(),
            before.iter().map(kept).collect::<Vec<_>>()
        );
        assert!(after.iter().all(|m| m.queue_id == new));
        // The source holds none of its rows, and refuses a write naming the old id.
        let source = &store.cells()[cell_of(old) as usize - 1];
        assert!(source
            .peek_messages(old, 0, 10, T0)
            .await
            .unwrap()
            .is_empty());
        let err = source
            .send_messages(vec![(old, conformance::msg("stray", T0))])
            .await
            .unwrap_err();
        assert_eq!(err.code, ErrorCode::ServiceUnavailable);
        assert!(source
            .peek_messages(old, 0, 10, T0)
            .await
            .unwrap()
            .is_empty());
    }
    assert!(store.cells()[0].get_queue("std").await.unwrap().is_none());
    assert!(store.cells()[1]
        .get_queue("f.fifo")
        .await
        .unwrap()
        .is_none());
    let status = store.status().await.unwrap();
    assert_eq!(
        status
            .iter()
            .map(|s| (s.queues, s.messages))
            .collect::<Vec<_>>(),
        vec![(1, 4), (1, 5)]
    );

    // A node that resolves the queues afresh (the first service's cache may name the old
    // ids for a second).
    let svc = service(&store);
    // The deduplication window moved: a repeat of a2 is the original, number included.
    let again = svc
        .sqs()
        .send_message("f.fifo", fifo("a2", "g1"))
        .await
        .unwrap();
    assert_eq!(Some(again.message_id.clone()), f_before[1].message_id);
    let number = |s: &Option<String>| s.as_deref().unwrap().parse::<u128>().unwrap();
    assert_eq!(number(&again.sequence_number), numbers[1]);
    // Numbers keep increasing.
    let next = svc
        .sqs()
        .send_message("f.fifo", fifo("a4", "g1"))
        .await
        .unwrap();
    let n4 = number(&next.sequence_number);
    assert!(
        n4 > *numbers.iter().max().unwrap(),
        "{n4} after {numbers:?}"
    );
    // A handle of before the move is invalid; a1 stays in flight until its timeout.
    let err = svc
        .sqs()
        .delete_message("f.fifo", &a1[0].receipt_handle)
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::ReceiptHandleIsInvalid);
    let got = svc
        .sqs()
        .receive_message("f.fifo", receive(10, 30))
        .await
        .unwrap();
    let seen: Vec<(&str, u128)> = got
        .iter()
        .map(|m| {
            (
                m.body.as_str(),
                number(&m.attributes.get("SequenceNumber").cloned()),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [("b1", numbers[2])],
        "g1 is held by a1, still in flight"
    );
    let got = svc
        .sqs()
        .receive_message("std", receive(10, 30))
        .await
        .unwrap();
    let mut bodies: Vec<&str> = got.iter().map(|m| m.body.as_str()).collect();
    bodies.sort();
    assert_eq!(bodies, ["v1", "v2", "v3"], "fly in flight, late delayed");
    // Once a1's timeout ends, g1 comes in its order, each with the number it was sent with.
    let later = service_at(&store, T0 + 301_000);
    let got = later
        .sqs()
        .receive_message("f.fifo", receive(10, 30))
        .await
        .unwrap();
    let seen: Vec<(&str, u128, &str)> = got
        .iter()
        .map(|m| {
            (
                m.body.as_str(),
                number(&m.attributes.get("SequenceNumber").cloned()),
                m.attributes["ApproximateReceiveCount"].as_str(),
            )
        })
        .collect();
    let g1: Vec<_> = seen
        .iter()
        .filter(|(b, _, _)| b.starts_with('a'))
        .copied()
        .collect();
    assert_eq!(
        g1,
        [
            ("a1", numbers[0], "2"),
            ("a2", numbers[1], "1"),
            ("a3", numbers[3], "1"),
            ("a4", n4, "1")
        ]
    );
    assert!(seen.contains(&("b1", numbers[2], "2")), "{seen:?}");
}

/// A second node (another store over the same cells) that cached the queue's cell before
/// the move routes to the new cell afterwards: its read finds the queue gone from the
/// cached cell and reads the catalog again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_node_routes_to_the_new_cell() {
    let Some((store, schemas)) =
        two_cells("cells_move::a_second_node_routes_to_the_new_cell").await
    else {
        return;
    };
    let other = open_cells(&schemas).await;
    let q = conformance::queue(&(store.clone() as conformance::S), "q").await;
    assert_eq!(cell_of(q), 1);
    store
        .send_messages(vec![(q, conformance::msg("m", T0))])
        .await
        .unwrap();
    assert_eq!(other.get_queue("q").await.unwrap().unwrap().id, q);
    let moved = store.move_queue("q", 2).await.unwrap();
    let seen = other.get_queue("q").await.unwrap().unwrap();
    assert_eq!(seen.id, moved.new_id);
    assert_eq!(all_messages(&other, seen.id).await.len(), 1);
    // And its next lookups go straight there.
    assert_eq!(
        other.get_queue("q").await.unwrap().unwrap().id,
        moved.new_id
    );
}

/// A second node hears the move: cell 1's notification of the catalog change drops the
/// queue's entry from its cache (without any request of its own), and its next lookup
/// reads the catalog and routes to the new cell.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_node_hears_the_catalog_change() {
    let Some((store, schemas)) =
        two_cells("cells_move::a_second_node_hears_the_catalog_change").await
    else {
        return;
    };
    let other = open_cells(&schemas).await;
    let q = conformance::queue(&(store.clone() as conformance::S), "q").await;
    assert_eq!(other.get_queue("q").await.unwrap().unwrap().id, q);
    assert_eq!(other.cached_queue_cell("q"), Some(1));
    let moved = store.move_queue("q", 2).await.unwrap();
    let heard = tokio::time::timeout(std::time::Duration::from_secs(10), async {
        while other.cached_queue_cell("q") == Some(1) {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    })
    .await;
    assert!(heard.is_ok(), "the other node still routes q to cell 1");
    assert_eq!(
        other.get_queue("q").await.unwrap().unwrap().id,
        moved.new_id
    );
    assert_eq!(other.cached_queue_cell("q"), Some(2));
}

/// A move stopped after each step (as a run killed there) leaves the queue whole: before
/// the catalog flips, the queue reads from its old cell and refuses writes there; a
/// rerun from another process (a new store over the same cells) finishes it, and every
/// message is then in the new cell once and nowhere else.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_stopped_after_any_step_finishes_on_a_rerun() {
    for stop in [
        MoveStep::Gate,
        MoveStep::Copy,
        MoveStep::Outbox,
        MoveStep::Flip,
    ] {
        let Some((store, schemas)) =
            two_cells("cells_move::a_move_stopped_after_any_step_finishes_on_a_rerun").await
        else {
            return;
        };
        let q = conformance::queue(&(store.clone() as conformance::S), "q").await;
        let bodies = ["m1", "m2", "m3"];
        for b in bodies {
            store
                .send_messages(vec![(q, conformance::msg(b, T0))])
                .await
                .unwrap();
        }
        let before = all_messages(store.as_ref(), q).await;
        assert!(store
            .move_queue_until("q", 2, Some(stop))
            .await
            .unwrap()
            .is_none());
        // Paused: writes naming the old id are refused, and change nothing.
        let err = store
            .send_messages(vec![(q, conformance::msg("during", T0))])
            .await
            .unwrap_err();
        assert_eq!(err.code, ErrorCode::ServiceUnavailable, "{stop:?}");
        let where_now = store.get_queue("q").await.unwrap().unwrap();
        let expect_cell = if stop == MoveStep::Flip { 2 } else { 1 };
        assert_eq!(cell_of(where_now.id), expect_cell, "{stop:?}");
        assert_eq!(
            all_messages(store.as_ref(), where_now.id)
                .await
                .iter()
                .map(kept)
                .collect::<Vec<_>>(),
            before.iter().map(kept).collect::<Vec<_>>(),
            "{stop:?}"
        );
        drop(store);

        let rerun = open_cells(&schemas).await;
        let done = rerun.move_queue("q", 2).await.unwrap();
        assert!(done.resumed, "{stop:?}");
        let q2 = rerun.get_queue("q").await.unwrap().unwrap();
        assert_eq!((cell_of(q2.id), q2.id), (2, done.new_id), "{stop:?}");
        assert_eq!(
            all_messages(&rerun, q2.id)
                .await
                .iter()
                .map(kept)
                .collect::<Vec<_>>(),
            before.iter().map(kept).collect::<Vec<_>>(),
            "{stop:?}"
        );
        let status = rerun.status().await.unwrap();
        assert_eq!(
            status
                .iter()
                .map(|s| (s.queues, s.messages))
                .collect::<Vec<_>>(),
            vec![(0, 0), (1, 3)],
            "{stop:?}"
        );
        // A third run has nothing left to do.
        let again = rerun.move_queue("q", 2).await.unwrap();
        assert_eq!((again.new_id, again.messages), (q2.id, 0));
    }
}

/// A copy bound for the queue through the outbox (a publish from another cell, not yet
/// relayed when the move runs) is relayed to the queue's new cell once: the move re-aims
/// it, and the old cell refuses it rather than dropping it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outbox_copy_in_flight_reaches_the_moved_queue_once() {
    let Some((store, _schemas)) =
        two_cells("cells_move::an_outbox_copy_in_flight_reaches_the_moved_queue_once").await
    else {
        return;
    };
    let s: conformance::S = store.clone();
    let (a, b) = (
        conformance::queue(&s, "a").await,
        conformance::queue(&s, "b").await,
    );
    assert_eq!((cell_of(a), cell_of(b)), (1, 2));
    store.relay_at_once(false);
    // Runs in cell 1 (most copies): the copy for b waits in cell 1's outbox.
    store
        .publish(
            vec![
                (a, conformance::msg("to-a", T0)),
                (a, conformance::msg("to-a2", T0)),
                (b, conformance::msg("to-b", T0)),
            ],
            Vec::new(),
            Vec::new(),
        )
        .await
        .unwrap();
    assert_eq!(store.count_outbox().await.unwrap(), 1);
    // b moves into cell 1, where the row waits: it is re-aimed at b's new id there.
    let moved = store.move_queue("b", 1).await.unwrap();
    let relayed = store.relay_outbox(T0, T0 + 30_000, 10).await.unwrap();
    assert_eq!(relayed, 1);
    assert_eq!(store.count_outbox().await.unwrap(), 0);
    let got = all_messages(store.as_ref(), moved.new_id).await;
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].body, "to-b");
    assert_eq!(store.relay_outbox(T0, T0 + 30_000, 10).await.unwrap(), 0);

    // A publish that still names b's old id (a node's cached record) after the move: its
    // copy waits in cell 1's outbox aimed at cell 2, which refuses it (b moved) instead
    // of dropping it; the refused relay re-aims it, and the next relay stores it once.
    store
        .publish(
            vec![
                (a, conformance::msg("to-a3", T0)),
                (a, conformance::msg("to-a4", T0)),
                (b, conformance::msg("late-b", T0)),
            ],
            Vec::new(),
            Vec::new(),
        )
        .await
        .unwrap();
    let first = store.relay_outbox(T0, T0 + 30_000, 10).await;
    assert_eq!(
        first.unwrap_err().code,
        ErrorCode::ServiceUnavailable,
        "cell 2 refuses a copy for the queue that left it"
    );
    assert_eq!(store.count_outbox().await.unwrap(), 1);
    assert_eq!(store.relay_outbox(T0, T0 + 30_000, 10).await.unwrap(), 1);
    let got = all_messages(store.as_ref(), moved.new_id).await;
    let bodies: Vec<&str> = got.iter().map(|m| m.body.as_str()).collect();
    assert_eq!(bodies, ["to-b", "late-b"]);
}

/// A queue's message-move tasks (a finished one and a running one leased by a node) move
/// with it, once: the source lists none, the destination lists both, and the running one
/// is free for any node to claim.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn move_tasks_move_with_their_queue() {
    let Some((store, _schemas)) = two_cells("cells_move::move_tasks_move_with_their_queue").await
    else {
        return;
    };
    let s: conformance::S = store.clone();
    let q = conformance::queue(&s, "dlq").await;
    assert_eq!(cell_of(q), 1);
    let arn = "arn:aws:sqs:us-east-1:000000000000:dlq";
    let task = |handle: &str, status: MoveTaskStatus| MoveTaskRecord {
        handle: handle.into(),
        source_arn: arn.into(),
        source_queue: "dlq".into(),
        destination_arn: None,
        max_per_second: None,
        status,
        moved: 0,
        to_move: 3,
        failure_reason: None,
        started_at_ms: T0,
        owner: None,
        lease_until_ms: 0,
        started_by: None,
    };
    assert!(store
        .create_move_task(task("done", MoveTaskStatus::Completed))
        .await
        .unwrap());
    assert!(store
        .create_move_task(task("running", MoveTaskStatus::Running))
        .await
        .unwrap());
    let claimed = store
        .claim_move_tasks("node-a", T0, T0 + 60_000, 10)
        .await
        .unwrap();
    assert_eq!(claimed.len(), 1);
    store.move_queue("dlq", 2).await.unwrap();
    assert!(store.cells()[0]
        .list_move_tasks(arn, 10)
        .await
        .unwrap()
        .is_empty());
    let mut handles: Vec<String> = store.cells()[1]
        .list_move_tasks(arn, 10)
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.handle)
        .collect();
    handles.sort();
    assert_eq!(handles, ["done", "running"]);
    // Another node takes the running task up at once (its old lease stayed behind).
    let claimed = store
        .claim_move_tasks("node-b", T0, T0 + 60_000, 10)
        .await
        .unwrap();
    assert_eq!(
        claimed
            .iter()
            .map(|t| t.handle.as_str())
            .collect::<Vec<_>>(),
        ["running"]
    );
}

/// A FIFO receive retried with its ReceiveRequestAttemptId after the queue moved gets the
/// same messages (the attempt moved with the queue, its messages mapped to their new
/// rows), with handles of the new id that delete them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receive_attempt_retried_after_the_move_gets_its_messages() {
    let Some((store, _schemas)) =
        two_cells("cells_move::a_receive_attempt_retried_after_the_move_gets_its_messages").await
    else {
        return;
    };
    let svc = service(&store);
    svc.sqs()
        .create_queue("r.fifo", map(&[("FifoQueue", "true")]), BTreeMap::new())
        .await
        .unwrap();
    for b in ["m1", "m2"] {
        svc.sqs()
            .send_message("r.fifo", fifo(b, "g"))
            .await
            .unwrap();
    }
    let attempt = |svc: Arc<Service>| async move {
        svc.sqs()
            .receive_message(
                "r.fifo",
                ReceiveMessage {
                    attempt_id: Some("att-1".into()),
                    ..receive(10, 300)
                },
            )
            .await
            .unwrap()
    };
    let first = attempt(svc.clone()).await;
    assert_eq!(first.len(), 2);
    let moved = store.move_queue("r.fifo", 2).await.unwrap();
    assert_eq!(moved.to, 2);
    let svc = service(&store);
    let again = attempt(svc.clone()).await;
    let ids = |v: &[loft_core::service::ReceivedMessage]| {
        v.iter()
            .map(|m| (m.body.clone(), m.message_id.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(ids(&again), ids(&first));
    for m in &again {
        svc.sqs()
            .delete_message("r.fifo", &m.receipt_handle)
            .await
            .unwrap();
    }
    let counts = store.queue_counts(moved.new_id, T0).await.unwrap();
    assert_eq!((counts.visible, counts.in_flight), (0, 0));
}

/// Milliseconds since the Unix epoch by this machine's clock (the clock of move leases).
fn wall_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// A message with a String and a Binary attribute.
fn with_attributes(body: &str) -> SendMessage {
    let attr =
        |t: &str, s: Option<&str>, b: Option<&[u8]>| loft_core::message::MessageAttributeValue {
            data_type: t.into(),
            string_value: s.map(str::to_owned),
            binary_value: b.map(<[u8]>::to_vec),
        };
    SendMessage {
        body: body.into(),
        message_attributes: [
            ("colour".to_owned(), attr("String", Some("blue"), None)),
            (
                "blob".to_owned(),
                attr("Binary", None, Some(&[0, 1, 2, 255])),
            ),
        ]
        .into_iter()
        .collect(),
        ..SendMessage::default()
    }
}

/// A move stopped after each step and left alone (its run killed, nobody reruns it) is
/// listed in progress with its step and owner; another node's sweep leaves it while its
/// lease lasts, then takes it over and finishes it: every message once with its
/// attributes and state, the queue's attributes and tags kept, the source empty. While it
/// waits, a send through the other node's service is answered: 503 `ServiceUnavailable`
/// before the catalog flip (as are a receive and a delete), stored in the new cell after
/// it (and kept by the finish).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_left_alone_after_any_step_is_finished_by_a_nodes_sweep() {
    for stop in [
        MoveStep::Gate,
        MoveStep::Copy,
        MoveStep::Outbox,
        MoveStep::Flip,
    ] {
        let Some((store, schemas)) =
            two_cells("cells_move::a_move_left_alone_after_any_step_is_finished_by_a_nodes_sweep")
                .await
        else {
            return;
        };
        let svc = service(&store);
        svc.sqs()
            .create_queue(
                "q",
                map(&[("VisibilityTimeout", "45"), ("MaximumMessageSize", "2048")]),
                map(&[("team", "a")]),
            )
            .await
            .unwrap();
        for b in ["m1", "m2", "m3"] {
            svc.sqs()
                .send_message("q", with_attributes(b))
                .await
                .unwrap();
        }
        let flying = svc
            .sqs()
            .receive_message("q", receive(1, 300))
            .await
            .unwrap();
        assert_eq!(flying.len(), 1);
        let q = store.get_queue("q").await.unwrap().unwrap();
        assert_eq!(cell_of(q.id), 1);
        let before = all_messages(store.as_ref(), q.id).await;
        assert_eq!(before.len(), 3);
        let gated_at = wall_ms();
        assert!(store
            .move_queue_until("q", 2, Some(stop))
            .await
            .unwrap()
            .is_none());
        drop(svc);
        drop(store);

        // Another node: it lists the move, with the step the run did and its owner.
        let other = Arc::new(open_cells(&schemas).await);
        let moves = other.moves_in_progress().await.unwrap();
        assert_eq!(moves.len(), 1, "{stop:?}: {moves:?}");
        let m = &moves[0];
        assert_eq!(
            (m.name.as_str(), m.from, m.to, m.step),
            ("q", 1, 2, stop),
            "{stop:?}"
        );
        assert!(
            m.owner.as_deref().is_some_and(|o| o.starts_with("cli:")),
            "{stop:?}: {:?}",
            m.owner
        );
        assert!(m.started_at_ms >= gated_at, "{stop:?}");
        assert!(m.lease_until_ms > m.started_at_ms, "{stop:?}");

        // A send through the other node is answered: refused (retryable) while the
        // catalog names the old cell, stored in the new one once it names that.
        let svc = service(&other);
        let sent = svc.sqs().send_message("q", with_attributes("during")).await;
        if stop < MoveStep::Flip {
            assert_eq!(
                sent.unwrap_err().code,
                ErrorCode::ServiceUnavailable,
                "{stop:?}"
            );
            // A receive too (it would change the messages' rows), and a delete of the
            // message in flight.
            let got = svc.sqs().receive_message("q", receive(10, 30)).await;
            assert_eq!(
                got.unwrap_err().code,
                ErrorCode::ServiceUnavailable,
                "{stop:?}"
            );
            let deleted = svc
                .sqs()
                .delete_message("q", &flying[0].receipt_handle)
                .await;
            assert_eq!(
                deleted.unwrap_err().code,
                ErrorCode::ServiceUnavailable,
                "{stop:?}"
            );
        } else {
            sent.unwrap();
        }

        // Its lease has not ended: a sweep leaves it.
        assert_eq!(
            other
                .finish_abandoned_moves("node-b", m.lease_until_ms - 1)
                .await
                .unwrap(),
            0,
            "{stop:?}"
        );
        assert_eq!(other.moves_in_progress().await.unwrap().len(), 1);

        // Once it has, the sweep takes it over and finishes it.
        let after_lease = m.lease_until_ms + 1;
        assert_eq!(
            other
                .finish_abandoned_moves("node-b", after_lease)
                .await
                .unwrap(),
            1,
            "{stop:?}"
        );
        assert!(other.moves_in_progress().await.unwrap().is_empty());
        assert_eq!(
            other
                .finish_abandoned_moves("node-b", after_lease)
                .await
                .unwrap(),
            0
        );
        let moved = other.get_queue("q").await.unwrap().unwrap();
        assert_eq!(cell_of(moved.id), 2, "{stop:?}");
        assert_eq!(moved.attributes, q.attributes, "{stop:?}");
        assert_eq!(moved.tags, q.tags, "{stop:?}");
        let got = all_messages(other.as_ref(), moved.id).await;
        let mut want: Vec<StoredMessage> = before.iter().map(kept).collect();
        let got_kept: Vec<StoredMessage> = got.iter().map(kept).collect();
        if stop == MoveStep::Flip {
            assert_eq!(got.len(), 4, "{stop:?}");
            assert_eq!(got[3].body, "during");
            assert_eq!(got[3].message_attributes, before[0].message_attributes);
            want.push(got_kept[3].clone());
        }
        assert_eq!(got_kept, want, "{stop:?}");
        assert_eq!(
            other
                .status()
                .await
                .unwrap()
                .iter()
                .map(|s| (s.queues, s.messages))
                .collect::<Vec<_>>(),
            vec![(0, 0), (1, want.len() as u64)],
            "{stop:?}"
        );
        // Served from the new cell: a send is stored, and the message in flight comes
        // back when its visibility timeout ends. (A service that cached the queue's old
        // record, as `svc` did, is refused with 503 until its cache ends,
        // `QUEUE_CACHE_TTL`; a fresh one stands for a later request.)
        let svc = service(&other);
        svc.sqs().send_message("q", send("after")).await.unwrap();
        let later = service_at(&other, T0 + 301_000);
        let got = later
            .sqs()
            .receive_message(
                "q",
                ReceiveMessage {
                    message_attribute_names: vec!["All".into()],
                    ..receive(10, 30)
                },
            )
            .await
            .unwrap();
        let mut bodies: Vec<&str> = got.iter().map(|m| m.body.as_str()).collect();
        bodies.sort();
        let mut expect = vec!["after", "m1", "m2", "m3"];
        if stop == MoveStep::Flip {
            expect.push("during");
            expect.sort();
        }
        assert_eq!(bodies, expect, "{stop:?}");
        let sent_attributes = with_attributes("").message_attributes;
        for m in got.iter().filter(|m| m.body != "after") {
            assert_eq!(
                m.message_attributes, sent_attributes,
                "{stop:?}: {}",
                m.body
            );
        }
    }
}

/// Two nodes sweeping at once take each abandoned move once: six queues left gated,
/// swept by two nodes concurrently, are finished six times in all (no move by both),
/// each queue ending in the new cell with its messages once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_sweepers_take_each_move_once() {
    let Some((store, schemas)) = two_cells("cells_move::two_sweepers_take_each_move_once").await
    else {
        return;
    };
    let s: conformance::S = store.clone();
    let mut names = Vec::new();
    for i in 0..6 {
        let name = format!("q{i}");
        let mut id = conformance::queue(&s, &name).await;
        if cell_of(id) == 2 {
            id = store.move_queue(&name, 1).await.unwrap().new_id;
        }
        for b in ["a", "b"] {
            store
                .send_messages(vec![(id, conformance::msg(&format!("{name}-{b}"), T0))])
                .await
                .unwrap();
        }
        let stop = if i % 2 == 0 {
            MoveStep::Gate
        } else {
            MoveStep::Copy
        };
        assert!(store
            .move_queue_until(&name, 2, Some(stop))
            .await
            .unwrap()
            .is_none());
        names.push(name);
    }
    let lease_end = store
        .moves_in_progress()
        .await
        .unwrap()
        .iter()
        .map(|m| m.lease_until_ms)
        .max()
        .unwrap();
    drop(store);
    let a = open_cells(&schemas).await;
    let b = open_cells(&schemas).await;
    let (x, y) = tokio::join!(
        a.finish_abandoned_moves("node-a", lease_end + 1),
        b.finish_abandoned_moves("node-b", lease_end + 1)
    );
    let (x, y) = (x.unwrap(), y.unwrap());
    assert_eq!(x + y, 6, "node a finished {x}, node b {y}");
    assert!(a.moves_in_progress().await.unwrap().is_empty());
    for name in &names {
        let q = b.get_queue(name).await.unwrap().unwrap();
        assert_eq!(cell_of(q.id), 2, "{name}");
        let mut bodies: Vec<String> = all_messages(&b, q.id)
            .await
            .into_iter()
            .map(|m| m.body)
            .collect();
        bodies.sort();
        assert_eq!(bodies, [format!("{name}-a"), format!("{name}-b")]);
    }
    assert_eq!(
        b.status()
            .await
            .unwrap()
            .iter()
            .map(|s| (s.queues, s.messages))
            .collect::<Vec<_>>(),
        vec![(0, 0), (6, 12)]
    );
}

/// An operator's rerun after a node's sweep finished the move has nothing left to do:
/// it finds the queue in its new cell, with its message once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rerun_after_a_sweep_finished_the_move_finds_it_done() {
    let Some((store, schemas)) =
        two_cells("cells_move::a_rerun_after_a_sweep_finished_the_move_finds_it_done").await
    else {
        return;
    };
    let q = conformance::queue(&(store.clone() as conformance::S), "q").await;
    store
        .send_messages(vec![(q, conformance::msg("m", T0))])
        .await
        .unwrap();
    assert!(store
        .move_queue_until("q", 2, Some(MoveStep::Gate))
        .await
        .unwrap()
        .is_none());
    let lease = store.moves_in_progress().await.unwrap()[0].lease_until_ms;
    let other = open_cells(&schemas).await;
    assert_eq!(
        other
            .finish_abandoned_moves("node-b", lease + 1)
            .await
            .unwrap(),
        1
    );
    let again = store.move_queue("q", 2).await.unwrap();
    assert_eq!((again.to, again.messages, again.resumed), (2, 0, false));
    let moved = other.get_queue("q").await.unwrap().unwrap();
    assert_eq!(moved.id, again.new_id);
    assert_eq!(all_messages(&other, moved.id).await.len(), 1);
}
