//! FIFO queue rules, one test each, against the service on an in-memory SQLite store with a
//! `ManualClock` (time moves without sleeping).
//!
//! Sources: SQS Developer Guide "FIFO queue delivery logic", "Exactly-once processing",
//! "Using the message group ID", "Using the message deduplication ID", "Dead-letter
//! queues"; SQS API Reference SendMessage, SendMessageBatch, ReceiveMessage
//! (ReceiveRequestAttemptId), DeleteMessage; AWS Knowledge Center "ReceiptHandleIsInvalid
//! and InvalidParameterValue errors" (expired FIFO receipt handles).

use std::collections::BTreeMap;
use std::sync::Arc;

use loft_core::clock::ManualClock;
use loft_core::message::MessageAttributeValue;
use loft_core::service::{ReceiveMessage, ReceivedMessage, SendMessage, SendResult};
use loft_core::{ErrorCode, Service, ServiceConfig};
use loft_store::SqliteStore;

const START_MS: i64 = 1_700_000_000_000;

struct Env {
    svc: Arc<Service>,
    clock: Arc<ManualClock>,
}

fn attrs(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn env() -> Env {
    let store = Arc::new(SqliteStore::open_in_memory().expect("store"));
    let clock = Arc::new(ManualClock::new(START_MS));
    let svc = Service::new(store, clock.clone(), ServiceConfig::default(), None);
    Env { svc, clock }
}

fn msg(group: &str, dedup: &str, body: &str) -> SendMessage {
    SendMessage {
        body: body.into(),
        group_id: Some(group.into()),
        dedup_id: Some(dedup.into()),
        ..SendMessage::default()
    }
}

fn rx(max: i64, visibility: i64) -> ReceiveMessage {
    ReceiveMessage {
        max_messages: Some(max),
        visibility_timeout: Some(visibility),
        wait_seconds: Some(0),
        system_attribute_names: vec!["All".into()],
        ..ReceiveMessage::default()
    }
}

fn bodies(ms: &[ReceivedMessage]) -> Vec<&str> {
    ms.iter().map(|m| m.body.as_str()).collect()
}

impl Env {
    fn advance(&self, seconds: i64) {
        self.clock.advance_ms(seconds * 1000);
    }

    /// Creates FIFO queue `name` with `extra` attributes.
    async fn fifo(&self, name: &str, extra: &[(&str, &str)]) {
        let mut a = attrs(&[("FifoQueue", "true")]);
        a.extend(attrs(extra));
        self.svc
            .sqs()
            .create_queue(name, a, BTreeMap::new())
            .await
            .expect("create FIFO queue");
    }

    /// Sends a message with explicit group and deduplication id; the body is the dedup id.
    async fn send(&self, q: &str, group: &str, dedup: &str) -> SendResult {
        self.svc
            .sqs()
            .send_message(q, msg(group, dedup, dedup))
            .await
            .expect("send")
    }

    async fn recv(&self, q: &str, max: i64, visibility: i64) -> Vec<ReceivedMessage> {
        self.svc
            .sqs()
            .receive_message(q, rx(max, visibility))
            .await
            .expect("receive")
    }

    async fn delete_all(&self, q: &str, ms: &[ReceivedMessage]) {
        for m in ms {
            self.svc
                .sqs()
                .delete_message(q, &m.receipt_handle)
                .await
                .expect("delete");
        }
    }
}

fn seq(r: &SendResult) -> u128 {
    r.sequence_number
        .as_deref()
        .expect("FIFO send returns a SequenceNumber")
        .parse()
        .expect("numeric SequenceNumber")
}

// ----- ordering and group locking

#[tokio::test]
async fn strict_order_within_a_group() {
    let e = env();
    e.fifo("order.fifo", &[]).await;
    for i in 0..6 {
        e.send("order.fifo", "g", &format!("m{i}")).await;
    }
    for i in 0..6 {
        let got = e.recv("order.fifo", 1, 30).await;
        assert_eq!(bodies(&got), [format!("m{i}").as_str()]);
        e.delete_all("order.fifo", &got).await;
    }
    assert!(e.recv("order.fifo", 10, 30).await.is_empty());
}

#[tokio::test]
async fn in_flight_message_locks_its_group() {
    let e = env();
    e.fifo("lock.fifo", &[]).await;
    e.send("lock.fifo", "g", "a1").await;
    e.send("lock.fifo", "g", "a2").await;
    let first = e.recv("lock.fifo", 1, 30).await;
    assert_eq!(bodies(&first), ["a1"]);
    // a2 is visible but a1 is in flight: nothing of the group is handed out.
    assert!(e.recv("lock.fifo", 10, 30).await.is_empty());
    e.advance(29);
    assert!(e.recv("lock.fifo", 10, 30).await.is_empty());
    // Deleting a1 opens the group.
    e.delete_all("lock.fifo", &first).await;
    assert_eq!(bodies(&e.recv("lock.fifo", 10, 30).await), ["a2"]);
}

#[tokio::test]
async fn visibility_expiry_redelivers_the_head_first() {
    let e = env();
    e.fifo("expire.fifo", &[]).await;
    e.send("expire.fifo", "g", "a1").await;
    e.send("expire.fifo", "g", "a2").await;
    assert_eq!(bodies(&e.recv("expire.fifo", 1, 30).await), ["a1"]);
    e.advance(31);
    // a1 comes back before a2, and a2 only with it (same receive) or after it.
    let again = e.recv("expire.fifo", 10, 30).await;
    assert_eq!(bodies(&again), ["a1", "a2"]);
    assert_eq!(again[0].receive_count, 2);
    assert_eq!(again[1].receive_count, 1);
}

#[tokio::test]
async fn later_message_visible_behind_hidden_earlier_one_stays_locked() {
    let e = env();
    e.fifo("behind.fifo", &[]).await;
    e.send("behind.fifo", "g", "a1").await;
    e.send("behind.fifo", "g", "a2").await;
    e.send("behind.fifo", "g", "a3").await;
    let got = e.recv("behind.fifo", 2, 30).await;
    assert_eq!(bodies(&got), ["a1", "a2"]);
    e.svc
        .sqs()
        .change_visibility("behind.fifo", &got[0].receipt_handle, 120)
        .await
        .unwrap();
    // a2's own timeout is over, but a1 (earlier) is still hidden.
    e.advance(31);
    assert!(e.recv("behind.fifo", 10, 30).await.is_empty());
    e.advance(90);
    assert_eq!(
        bodies(&e.recv("behind.fifo", 10, 30).await),
        ["a1", "a2", "a3"]
    );
}

/// AWS's recorded answers (LocalStack's aws.validated
/// `test_fifo_group_visibility_extends_with_change_message_visibility`): a group gives its
/// messages up to its first hidden one, so an earlier message made visible again is handed
/// out while a later one of its group is still in flight; the later ones stay behind it.
#[tokio::test]
async fn earlier_message_made_visible_comes_before_a_later_in_flight_one() {
    let e = env();
    e.fifo("relock.fifo", &[]).await;
    e.send("relock.fifo", "g", "a1").await;
    e.send("relock.fifo", "g", "a2").await;
    let got = e.recv("relock.fifo", 2, 30).await;
    assert_eq!(bodies(&got), ["a1", "a2"]);
    e.svc
        .sqs()
        .change_visibility("relock.fifo", &got[0].receipt_handle, 0)
        .await
        .unwrap();
    // a2 is still in flight with the first consumer; a1 comes again, nothing after a2.
    let second = e.recv("relock.fifo", 10, 30).await;
    assert_eq!(bodies(&second), ["a1"]);
}

/// The recorded scenario itself: the later message's visibility is extended, the earlier
/// one's runs out, and the earlier one is received again alone.
#[tokio::test]
async fn earlier_message_expired_comes_before_a_later_extended_one() {
    let e = env();
    e.fifo("relock2.fifo", &[]).await;
    e.send("relock2.fifo", "g", "a1").await;
    e.send("relock2.fifo", "g", "a2").await;
    let got = e.recv("relock2.fifo", 2, 30).await;
    e.svc
        .sqs()
        .change_visibility("relock2.fifo", &got[1].receipt_handle, 300)
        .await
        .unwrap();
    e.send("relock2.fifo", "g", "a3").await;
    e.advance(31);
    let second = e.recv("relock2.fifo", 10, 30).await;
    assert_eq!(bodies(&second), ["a1"], "a2 is in flight, a3 behind it");
}

#[tokio::test]
async fn other_groups_keep_flowing() {
    let e = env();
    e.fifo("groups.fifo", &[]).await;
    e.send("groups.fifo", "a", "a1").await;
    e.send("groups.fifo", "a", "a2").await;
    e.send("groups.fifo", "b", "b1").await;
    e.send("groups.fifo", "c", "c1").await;
    assert_eq!(bodies(&e.recv("groups.fifo", 1, 30).await), ["a1"]);
    assert_eq!(bodies(&e.recv("groups.fifo", 1, 30).await), ["b1"]);
    assert_eq!(bodies(&e.recv("groups.fifo", 10, 30).await), ["c1"]);
    assert!(e.recv("groups.fifo", 10, 30).await.is_empty());
}

#[tokio::test]
async fn several_in_order_messages_of_one_group_in_one_receive() {
    let e = env();
    e.fifo("batch.fifo", &[]).await;
    for i in 1..=5 {
        e.send("batch.fifo", "g", &format!("m{i}")).await;
    }
    let got = e.recv("batch.fifo", 10, 30).await;
    assert_eq!(bodies(&got), ["m1", "m2", "m3", "m4", "m5"]);
    // Deleting in any order within the batch is fine, and the group is then empty.
    for m in got.iter().rev() {
        e.svc
            .sqs()
            .delete_message("batch.fifo", &m.receipt_handle)
            .await
            .unwrap();
    }
    assert!(e.recv("batch.fifo", 10, 30).await.is_empty());
}

#[tokio::test]
async fn receive_respects_max_number_of_messages() {
    let e = env();
    e.fifo("max.fifo", &[]).await;
    for i in 1..=4 {
        e.send("max.fifo", "g", &format!("m{i}")).await;
    }
    assert_eq!(bodies(&e.recv("max.fifo", 3, 30).await), ["m1", "m2", "m3"]);
    // m4 waits behind the three in flight.
    assert!(e.recv("max.fifo", 10, 30).await.is_empty());
}

// ----- deduplication

#[tokio::test]
async fn duplicate_inside_window_returns_original_and_is_not_enqueued() {
    let e = env();
    e.fifo("dup.fifo", &[]).await;
    let first = e
        .svc
        .sqs()
        .send_message("dup.fifo", msg("g", "d1", "first"))
        .await
        .unwrap();
    e.advance(299);
    let again = e
        .svc
        .sqs()
        .send_message("dup.fifo", msg("g", "d1", "second body"))
        .await
        .unwrap();
    assert_eq!(again.message_id, first.message_id);
    assert_eq!(again.sequence_number, first.sequence_number);
    let got = e.recv("dup.fifo", 10, 30).await;
    assert_eq!(bodies(&got), ["first"]);
    e.delete_all("dup.fifo", &got).await;
    assert!(e.recv("dup.fifo", 10, 30).await.is_empty());
}

#[tokio::test]
async fn duplicate_of_deleted_message_inside_window_is_not_enqueued() {
    let e = env();
    e.fifo("dupdel.fifo", &[]).await;
    let first = e.send("dupdel.fifo", "g", "d1").await;
    let got = e.recv("dupdel.fifo", 1, 30).await;
    e.delete_all("dupdel.fifo", &got).await;
    e.advance(60);
    let again = e.send("dupdel.fifo", "g", "d1").await;
    assert_eq!(again.message_id, first.message_id);
    assert_eq!(again.sequence_number, first.sequence_number);
    assert!(e.recv("dupdel.fifo", 10, 30).await.is_empty());
}

#[tokio::test]
async fn same_id_after_the_window_is_a_new_message() {
    let e = env();
    e.fifo("window.fifo", &[]).await;
    let first = e.send("window.fifo", "g", "d1").await;
    e.advance(5 * 60 + 1);
    let later = e.send("window.fifo", "g", "d1").await;
    assert_ne!(later.message_id, first.message_id);
    assert!(seq(&later) > seq(&first));
    let got = e.recv("window.fifo", 10, 30).await;
    assert_eq!(got.len(), 2);
    // And the new send opens a window of its own.
    e.advance(60);
    let third = e.send("window.fifo", "g", "d1").await;
    assert_eq!(third.message_id, later.message_id);
}

#[tokio::test]
async fn duplicate_inside_one_batch() {
    let e = env();
    e.fifo("dupbatch.fifo", &[]).await;
    let results = e
        .svc
        .sqs()
        .send_message_batch(
            "dupbatch.fifo",
            vec![
                msg("g", "d1", "x"),
                msg("g", "d1", "y"),
                msg("g", "d2", "z"),
            ],
        )
        .await
        .unwrap();
    let r: Vec<SendResult> = results.into_iter().map(|r| r.unwrap()).collect();
    assert_eq!(r[1].message_id, r[0].message_id);
    assert_eq!(r[1].sequence_number, r[0].sequence_number);
    assert_ne!(r[2].message_id, r[0].message_id);
    assert_eq!(bodies(&e.recv("dupbatch.fifo", 10, 30).await), ["x", "z"]);
}

#[tokio::test]
async fn content_based_deduplication_uses_the_body_only() {
    let e = env();
    e.fifo("cbd.fifo", &[("ContentBasedDeduplication", "true")])
        .await;
    let send = |body: &str, group: &str, attr: Option<&str>| {
        let mut m = SendMessage {
            body: body.into(),
            group_id: Some(group.into()),
            ..SendMessage::default()
        };
        if let Some(a) = attr {
            m.message_attributes
                .insert("k".into(), MessageAttributeValue::string(a));
        }
        let svc = e.svc.clone();
        async move { svc.sqs().send_message("cbd.fifo", m).await.unwrap() }
    };
    let a = send("same", "g", None).await;
    // Same body, other attributes, even another group (queue scope): a duplicate.
    let b = send("same", "g", Some("x")).await;
    let c = send("same", "h", None).await;
    assert_eq!(b.message_id, a.message_id);
    assert_eq!(c.message_id, a.message_id);
    let d = send("different", "g", None).await;
    assert_ne!(d.message_id, a.message_id);
    // An explicit id takes precedence over the body's hash.
    let explicit = e
        .svc
        .sqs()
        .send_message("cbd.fifo", msg("g", "explicit-1", "same"))
        .await
        .unwrap();
    assert_ne!(explicit.message_id, a.message_id);
    let got = e.recv("cbd.fifo", 10, 30).await;
    assert_eq!(bodies(&got), ["same", "different", "same"]);
    // An explicit id equal to the one generated from a body duplicates that message
    // (API Reference, SendMessage, MessageDeduplicationId).
    let generated = got[0].attributes["MessageDeduplicationId"].clone();
    let same_key = e
        .svc
        .sqs()
        .send_message("cbd.fifo", msg("g", &generated, "other body"))
        .await
        .unwrap();
    assert_eq!(same_key.message_id, a.message_id);
}

#[tokio::test]
async fn deduplication_scope_message_group() {
    let e = env();
    e.fifo("scope.fifo", &[("DeduplicationScope", "messageGroup")])
        .await;
    let a = e.send("scope.fifo", "a", "d1").await;
    let b = e.send("scope.fifo", "b", "d1").await;
    assert_ne!(a.message_id, b.message_id, "other group: not a duplicate");
    let a2 = e.send("scope.fifo", "a", "d1").await;
    assert_eq!(a2.message_id, a.message_id, "same group: a duplicate");
    assert_eq!(a2.sequence_number, a.sequence_number);
    assert_eq!(e.recv("scope.fifo", 10, 30).await.len(), 2);
}

#[tokio::test]
async fn deduplication_scope_queue_is_the_default() {
    let e = env();
    e.fifo("qscope.fifo", &[]).await;
    let a = e.send("qscope.fifo", "a", "d1").await;
    let b = e.send("qscope.fifo", "b", "d1").await;
    assert_eq!(a.message_id, b.message_id);
    assert_eq!(e.recv("qscope.fifo", 10, 30).await.len(), 1);
}

#[tokio::test]
async fn deduplication_is_per_queue() {
    let e = env();
    e.fifo("one.fifo", &[]).await;
    e.fifo("two.fifo", &[]).await;
    let a = e.send("one.fifo", "g", "d1").await;
    let b = e.send("two.fifo", "g", "d1").await;
    assert_ne!(a.message_id, b.message_id);
    assert_eq!(e.recv("two.fifo", 10, 30).await.len(), 1);
}

#[tokio::test]
async fn missing_deduplication_id_without_content_based_dedup_is_rejected() {
    let e = env();
    e.fifo("nodedup.fifo", &[]).await;
    let err = e
        .svc
        .sqs()
        .send_message(
            "nodedup.fifo",
            SendMessage {
                body: "x".into(),
                group_id: Some("g".into()),
                ..SendMessage::default()
            },
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidParameterValue);
}

// ----- sequence numbers

#[tokio::test]
async fn sequence_numbers_grow_within_a_group_and_match_received_attribute() {
    let e = env();
    e.fifo("seq.fifo", &[]).await;
    let mut sent = Vec::new();
    for i in 0..4 {
        sent.push(e.send("seq.fifo", "g", &format!("m{i}")).await);
        e.send("seq.fifo", "other", &format!("o{i}")).await;
    }
    let batch = e
        .svc
        .sqs()
        .send_message_batch("seq.fifo", vec![msg("g", "b1", "b1"), msg("g", "b2", "b2")])
        .await
        .unwrap();
    sent.extend(batch.into_iter().map(|r| r.unwrap()));
    for w in sent.windows(2) {
        assert!(seq(&w[1]) > seq(&w[0]), "{:?} then {:?}", w[0], w[1]);
    }
    let got = e.recv("seq.fifo", 10, 30).await;
    let in_g: Vec<&ReceivedMessage> = got
        .iter()
        .filter(|m| m.attributes.get("MessageGroupId").map(String::as_str) == Some("g"))
        .collect();
    assert_eq!(in_g.len(), sent.len());
    for (m, s) in in_g.iter().zip(&sent) {
        assert_eq!(m.message_id, s.message_id);
        assert_eq!(
            m.attributes.get("SequenceNumber"),
            s.sequence_number.as_ref()
        );
        assert_eq!(
            m.attributes
                .get("MessageDeduplicationId")
                .map(String::as_str),
            Some(m.body.as_str())
        );
    }
}

// ----- receipt handles

#[tokio::test]
async fn expired_receipt_handle_is_rejected() {
    let e = env();
    e.fifo("expired.fifo", &[]).await;
    e.send("expired.fifo", "g", "a1").await;
    let got = e.recv("expired.fifo", 1, 30).await;
    let old = got[0].receipt_handle.clone();
    e.advance(31);
    let err = e
        .svc
        .sqs()
        .delete_message("expired.fifo", &old)
        .await
        .unwrap_err();
    assert!(
        matches!(
            err.code,
            ErrorCode::ReceiptHandleIsInvalid | ErrorCode::InvalidParameterValue
        ),
        "{err}"
    );
    // Its visibility can still be changed with that handle (AWS answers a
    // ChangeMessageVisibility after the timeout ran out 200): hidden for 10 s more.
    e.svc
        .sqs()
        .change_visibility("expired.fifo", &old, 10)
        .await
        .unwrap();
    assert!(e.recv("expired.fifo", 1, 30).await.is_empty());
    e.advance(11);
    // The message was not deleted: it comes back with a new handle, and the old one no
    // longer works.
    let again = e.recv("expired.fifo", 1, 30).await;
    assert_eq!(bodies(&again), ["a1"]);
    assert_ne!(again[0].receipt_handle, old);
    assert!(e
        .svc
        .sqs()
        .delete_message("expired.fifo", &old)
        .await
        .is_err());
    assert!(e
        .svc
        .sqs()
        .change_visibility("expired.fifo", &old, 10)
        .await
        .is_err());
    e.svc
        .sqs()
        .delete_message("expired.fifo", &again[0].receipt_handle)
        .await
        .unwrap();
    assert!(e.recv("expired.fifo", 1, 30).await.is_empty());
}

/// AWS Knowledge Center, "ReceiptHandleIsInvalid / InvalidParameterValue errors": for FIFO
/// queues, deleting with a handle whose visibility timeout expired fails with
/// `InvalidParameterValue` ("Value ... for parameter ReceiptHandle is invalid. Reason: The
/// receipt handle has expired."); `ReceiptHandleIsInvalid` is for handles that are not valid
/// at all.
#[tokio::test]
async fn expired_receipt_handle_error_code_is_invalid_parameter_value() {
    let e = env();
    e.fifo("expcode.fifo", &[]).await;
    e.send("expcode.fifo", "g", "a1").await;
    let got = e.recv("expcode.fifo", 1, 30).await;
    e.advance(31);
    let err = e
        .svc
        .sqs()
        .delete_message("expcode.fifo", &got[0].receipt_handle)
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidParameterValue, "{err}");
}

#[tokio::test]
async fn garbage_receipt_handle_is_invalid() {
    let e = env();
    e.fifo("garbage.fifo", &[]).await;
    let err = e
        .svc
        .sqs()
        .delete_message("garbage.fifo", "not-a-handle")
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::ReceiptHandleIsInvalid);
}

#[tokio::test]
async fn visibility_change_to_zero_redelivers_in_order() {
    let e = env();
    e.fifo("zero.fifo", &[]).await;
    e.send("zero.fifo", "g", "a1").await;
    e.send("zero.fifo", "g", "a2").await;
    let got = e.recv("zero.fifo", 1, 30).await;
    e.svc
        .sqs()
        .change_visibility("zero.fifo", &got[0].receipt_handle, 0)
        .await
        .unwrap();
    let again = e.recv("zero.fifo", 10, 30).await;
    assert_eq!(bodies(&again), ["a1", "a2"]);
    // The handle of the earlier receive is no longer good.
    assert!(e
        .svc
        .sqs()
        .delete_message("zero.fifo", &got[0].receipt_handle)
        .await
        .is_err());
}

// ----- ReceiveRequestAttemptId

fn attempt(max: i64, visibility: i64, id: &str) -> ReceiveMessage {
    ReceiveMessage {
        attempt_id: Some(id.into()),
        ..rx(max, visibility)
    }
}

#[tokio::test]
async fn receive_attempt_retry_returns_the_same_messages() {
    let e = env();
    e.fifo("attempt.fifo", &[]).await;
    e.send("attempt.fifo", "a", "a1").await;
    e.send("attempt.fifo", "a", "a2").await;
    e.send("attempt.fifo", "b", "b1").await;
    let first = e
        .svc
        .sqs()
        .receive_message("attempt.fifo", attempt(2, 30, "try-1"))
        .await
        .unwrap();
    assert_eq!(bodies(&first), ["a1", "a2"]);
    e.advance(5);
    let retry = e
        .svc
        .sqs()
        .receive_message("attempt.fifo", attempt(2, 30, "try-1"))
        .await
        .unwrap();
    assert_eq!(bodies(&retry), bodies(&first));
    let handles = |ms: &[ReceivedMessage]| {
        ms.iter()
            .map(|m| m.receipt_handle.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(handles(&retry), handles(&first));
    // A new attempt id is a new receive: b1 only.
    let other = e
        .svc
        .sqs()
        .receive_message("attempt.fifo", attempt(10, 30, "try-2"))
        .await
        .unwrap();
    assert_eq!(bodies(&other), ["b1"]);
    // The replayed handles delete.
    e.delete_all("attempt.fifo", &retry).await;
}

/// API Reference, ReceiveMessage, ReceiveRequestAttemptId: "If a retry occurs within the
/// deduplication interval, it resets the visibility timeout."
#[tokio::test]
async fn receive_attempt_retry_resets_the_visibility_timeout() {
    let e = env();
    e.fifo("attreset.fifo", &[]).await;
    e.send("attreset.fifo", "a", "a1").await;
    let first = e
        .svc
        .sqs()
        .receive_message("attreset.fifo", attempt(1, 30, "try-1"))
        .await
        .unwrap();
    e.advance(20);
    let retry = e
        .svc
        .sqs()
        .receive_message("attreset.fifo", attempt(1, 30, "try-1"))
        .await
        .unwrap();
    assert_eq!(bodies(&retry), ["a1"]);
    // 40 s after the first receive, 20 s after the retry: still hidden.
    e.advance(20);
    assert!(e.recv("attreset.fifo", 10, 30).await.is_empty());
    e.svc
        .sqs()
        .delete_message("attreset.fifo", &first[0].receipt_handle)
        .await
        .unwrap();
}

// ----- dead-letter queues

#[tokio::test]
async fn dead_letter_redrive_keeps_group_and_order() {
    let e = env();
    e.fifo("dlq.fifo", &[]).await;
    let policy = format!(
        r#"{{"deadLetterTargetArn":"{}","maxReceiveCount":"1"}}"#,
        e.svc.queue_arn("dlq.fifo")
    );
    e.fifo("src.fifo", &[("RedrivePolicy", &policy)]).await;
    let mut sent = Vec::new();
    for (g, d) in [
        ("a", "a1"),
        ("b", "b1"),
        ("a", "a2"),
        ("b", "b2"),
        ("a", "a3"),
    ] {
        sent.push(e.send("src.fifo", g, d).await);
    }
    let got = e.recv("src.fifo", 10, 5).await;
    assert_eq!(bodies(&got), ["a1", "a2", "a3", "b1", "b2"]);
    e.advance(6);
    // Every message is past maxReceiveCount: all move, none is returned.
    assert!(e.recv("src.fifo", 10, 5).await.is_empty());
    let dead = e.recv("dlq.fifo", 10, 30).await;
    // One receive takes as much of one group as it can: group a, then group b.
    assert_eq!(bodies(&dead), ["a1", "a2", "a3", "b1", "b2"]);
    let sent_order = ["a1", "b1", "a2", "b2", "a3"];
    for m in &dead {
        let i = sent_order.iter().position(|b| *b == m.body).unwrap();
        assert_eq!(m.message_id, sent[i].message_id);
        assert_eq!(
            m.attributes.get("MessageGroupId").map(String::as_str),
            Some(&m.body[..1])
        );
        assert_eq!(
            m.attributes.get("DeadLetterQueueSourceArn"),
            Some(&e.svc.queue_arn("src.fifo"))
        );
    }
    // Group rules hold in the dead-letter queue too.
    e.advance(31);
    let one = e.recv("dlq.fifo", 1, 30).await;
    assert_eq!(bodies(&one), ["a1"]);
    assert_eq!(bodies(&e.recv("dlq.fifo", 10, 30).await), ["b1", "b2"]);
}

#[tokio::test]
async fn dead_lettered_head_unblocks_the_rest_of_its_group() {
    let e = env();
    e.fifo("dlq2.fifo", &[]).await;
    let policy = format!(
        r#"{{"deadLetterTargetArn":"{}","maxReceiveCount":2}}"#,
        e.svc.queue_arn("dlq2.fifo")
    );
    e.fifo("src2.fifo", &[("RedrivePolicy", &policy)]).await;
    e.send("src2.fifo", "g", "poison").await;
    e.send("src2.fifo", "g", "next").await;
    for _ in 0..2 {
        assert_eq!(bodies(&e.recv("src2.fifo", 1, 5).await), ["poison"]);
        e.advance(6);
    }
    // The third receive moves "poison" and hands out the next message of the group.
    assert_eq!(bodies(&e.recv("src2.fifo", 1, 5).await), ["next"]);
    assert_eq!(bodies(&e.recv("dlq2.fifo", 10, 5).await), ["poison"]);
}

#[tokio::test]
async fn fifo_dead_letter_queue_must_be_fifo() {
    let e = env();
    e.svc
        .sqs()
        .create_queue("plain-dlq", BTreeMap::new(), BTreeMap::new())
        .await
        .unwrap();
    e.fifo("fifo-dlq.fifo", &[]).await;
    let to = |q: &str| {
        format!(
            r#"{{"deadLetterTargetArn":"{}","maxReceiveCount":3}}"#,
            e.svc.queue_arn(q)
        )
    };
    let mut a = attrs(&[("FifoQueue", "true")]);
    a.insert("RedrivePolicy".into(), to("plain-dlq"));
    let err = e
        .svc
        .sqs()
        .create_queue("src.fifo", a, BTreeMap::new())
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidParameterValue);
    // Nor the other way round, nor through SetQueueAttributes.
    let err = e
        .svc
        .sqs()
        .create_queue(
            "plain-src",
            attrs(&[("RedrivePolicy", &to("fifo-dlq.fifo"))]),
            BTreeMap::new(),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidParameterValue);
    e.fifo("later.fifo", &[]).await;
    let err = e
        .svc
        .sqs()
        .set_queue_attributes("later.fifo", attrs(&[("RedrivePolicy", &to("plain-dlq"))]))
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidParameterValue);
    e.svc
        .sqs()
        .set_queue_attributes(
            "later.fifo",
            attrs(&[("RedrivePolicy", &to("fifo-dlq.fifo"))]),
        )
        .await
        .unwrap();
}

// ----- send validation

#[tokio::test]
async fn message_group_id_is_required() {
    let e = env();
    e.fifo("nogroup.fifo", &[]).await;
    let no_group = SendMessage {
        body: "x".into(),
        dedup_id: Some("d".into()),
        ..SendMessage::default()
    };
    let err = e
        .svc
        .sqs()
        .send_message("nogroup.fifo", no_group.clone())
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::MissingParameter);
    // In a batch one entry without a group refuses the whole batch with
    // InvalidParameterValue (AWS's recorded answer); nothing is stored.
    let err = e
        .svc
        .sqs()
        .send_message_batch("nogroup.fifo", vec![msg("g", "ok", "ok"), no_group])
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidParameterValue);
    assert_eq!(
        err.message,
        "The request must contain the parameter MessageGroupId."
    );
    assert!(e.recv("nogroup.fifo", 10, 30).await.is_empty());
    // Likewise an entry without a deduplication id on a queue without content-based
    // deduplication.
    let no_dedup = SendMessage {
        body: "y".into(),
        group_id: Some("g".into()),
        ..SendMessage::default()
    };
    let err = e
        .svc
        .sqs()
        .send_message_batch("nogroup.fifo", vec![msg("g", "ok2", "ok"), no_dedup])
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidParameterValue);
    assert!(e.recv("nogroup.fifo", 10, 30).await.is_empty());
}

#[tokio::test]
async fn group_and_dedup_ids_are_checked() {
    let e = env();
    e.fifo("ids.fifo", &[]).await;
    let long = "x".repeat(128);
    e.svc
        .sqs()
        .send_message("ids.fifo", msg(&long, &long, "fine"))
        .await
        .unwrap();
    let too_long = "x".repeat(129);
    for m in [
        msg(&too_long, "d", "b"),
        msg("g", &too_long, "b"),
        msg("", "d", "b"),
        msg("g", "", "b"),
        msg("g g", "d", "b"),
    ] {
        let err = e
            .svc
            .sqs()
            .send_message("ids.fifo", m.clone())
            .await
            .unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidParameterValue, "{m:?}");
    }
}

#[tokio::test]
async fn per_message_delay_is_rejected_on_fifo() {
    let e = env();
    e.fifo("delay.fifo", &[]).await;
    let delayed = SendMessage {
        delay_seconds: Some(5),
        ..msg("g", "d1", "x")
    };
    let err = e
        .svc
        .sqs()
        .send_message("delay.fifo", delayed.clone())
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidParameterValue);
    let results = e
        .svc
        .sqs()
        .send_message_batch("delay.fifo", vec![delayed, msg("g", "d2", "y")])
        .await
        .unwrap();
    assert_eq!(
        results[0].as_ref().unwrap_err().code,
        ErrorCode::InvalidParameterValue
    );
    assert!(results[1].is_ok());
}

#[tokio::test]
async fn queue_delay_applies_and_keeps_order() {
    let e = env();
    e.fifo("qdelay.fifo", &[("DelaySeconds", "10")]).await;
    e.send("qdelay.fifo", "g", "a1").await;
    e.advance(5);
    e.send("qdelay.fifo", "g", "a2").await;
    assert!(e.recv("qdelay.fifo", 10, 30).await.is_empty());
    e.advance(5);
    assert_eq!(bodies(&e.recv("qdelay.fifo", 10, 30).await), ["a1"]);
}

#[tokio::test]
async fn standard_queue_accepts_and_returns_message_group_id() {
    let e = env();
    e.svc
        .sqs()
        .create_queue("fair", BTreeMap::new(), BTreeMap::new())
        .await
        .unwrap();
    let r = e
        .svc
        .sqs()
        .send_message(
            "fair",
            SendMessage {
                body: "x".into(),
                group_id: Some("tenant-1".into()),
                ..SendMessage::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(r.sequence_number, None);
    let got = e.recv("fair", 10, 30).await;
    assert_eq!(
        got[0].attributes.get("MessageGroupId").map(String::as_str),
        Some("tenant-1")
    );
    assert!(!got[0].attributes.contains_key("SequenceNumber"));
    // A deduplication id is for FIFO queues only.
    let err = e
        .svc
        .sqs()
        .send_message(
            "fair",
            SendMessage {
                body: "x".into(),
                dedup_id: Some("d".into()),
                ..SendMessage::default()
            },
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidParameterValue);
}

/// SQS Developer Guide, "FIFO queue delivery logic": "Amazon SQS first attempts to return as
/// many messages with the same message group ID as possible".
#[tokio::test]
async fn receive_prefers_messages_of_one_group() {
    let e = env();
    e.fifo("prefer.fifo", &[]).await;
    for (g, d) in [("a", "a1"), ("b", "b1"), ("a", "a2"), ("b", "b2")] {
        e.send("prefer.fifo", g, d).await;
    }
    assert_eq!(bodies(&e.recv("prefer.fifo", 2, 30).await), ["a1", "a2"]);
}

// ----- long polling

/// A long poll blocked on a locked group returns as soon as the group opens (AWS: "returns
/// ... as soon as a message is available"), not at its deadline or the in-flight message's
/// timeout.
#[tokio::test]
async fn long_poll_wakes_when_the_group_head_is_deleted() {
    let e = env();
    e.fifo("lp.fifo", &[]).await;
    e.send("lp.fifo", "g", "a1").await;
    e.send("lp.fifo", "g", "a2").await;
    let head = e.recv("lp.fifo", 1, 30).await;
    let svc = e.svc.clone();
    let started = std::time::Instant::now();
    let poll = tokio::spawn(async move {
        let r = ReceiveMessage {
            wait_seconds: Some(3),
            ..rx(1, 30)
        };
        svc.sqs().receive_message("lp.fifo", r).await.unwrap()
    });
    // The poll waits while the group's head is in flight: it has not returned 200 ms on
    // (checked every 10 ms), so the delete below is what must wake it.
    while started.elapsed() < std::time::Duration::from_millis(200) {
        assert!(
            !poll.is_finished(),
            "the long poll returned while the group was locked"
        );
        tokio::task::yield_now().await;
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    e.delete_all("lp.fifo", &head).await;
    let got = poll.await.unwrap();
    assert_eq!(bodies(&got), ["a2"]);
    assert!(
        started.elapsed() < std::time::Duration::from_millis(1500),
        "long poll returned after {:?}",
        started.elapsed()
    );
}

// ----- dead-letter queue redrive (StartMessageMoveTask)

/// Builds `src.fifo` with dead-letter queue `dlq.fifo` (maxReceiveCount 1) and dead-letters
/// `msgs` (group, dedup id) into it, in order.
async fn dead_letter(e: &Env, msgs: &[(&str, &str)]) -> Vec<SendResult> {
    e.fifo("dlq.fifo", &[]).await;
    let policy = format!(
        r#"{{"deadLetterTargetArn":"{}","maxReceiveCount":1}}"#,
        e.svc.queue_arn("dlq.fifo")
    );
    e.fifo("src.fifo", &[("RedrivePolicy", &policy)]).await;
    let mut sent = Vec::new();
    for (g, d) in msgs {
        sent.push(e.send("src.fifo", g, d).await);
    }
    assert_eq!(e.recv("src.fifo", 10, 5).await.len(), msgs.len());
    e.advance(6);
    assert!(e.recv("src.fifo", 10, 5).await.is_empty());
    sent
}

/// Runs a move task from `dlq.fifo` back to its source and waits (real time, the task
/// ticks every 100 ms) until it has finished.
async fn redrive(e: &Env) {
    e.svc
        .sqs()
        .start_message_move_task("dlq.fifo", None, None)
        .await
        .expect("start move task");
    for _ in 0..100 {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        let tasks = e
            .svc
            .sqs()
            .list_message_move_tasks("dlq.fifo", Some(1))
            .await
            .unwrap();
        if tasks[0].status != "RUNNING" {
            assert_eq!(tasks[0].status, "COMPLETED");
            return;
        }
    }
    panic!("move task did not finish");
}

#[tokio::test]
async fn redrive_from_fifo_dead_letter_queue_keeps_group_and_order() {
    let e = env();
    let order = [("a", "a1"), ("b", "b1"), ("a", "a2"), ("a", "a3")];
    dead_letter(&e, &order).await;
    redrive(&e).await;
    let back = e.recv("src.fifo", 10, 30).await;
    assert_eq!(bodies(&back), ["a1", "a2", "a3", "b1"]);
    for m in &back {
        assert_eq!(
            m.attributes.get("MessageGroupId").map(String::as_str),
            Some(&m.body[..1])
        );
    }
    assert!(e.recv("dlq.fifo", 10, 30).await.is_empty());
}

/// SQS Developer Guide, "Configuring a dead-letter queue redrive": "When a message is moved
/// from a FIFO queue to a FIFO DLQ, the original message's deduplication ID will be replaced
/// with the original message's ID."
#[tokio::test]
async fn dead_lettered_message_dedup_id_becomes_its_message_id() {
    let e = env();
    dead_letter(&e, &[("a", "a1")]).await;
    let dead = e.recv("dlq.fifo", 10, 30).await;
    assert_eq!(
        dead[0].attributes.get("MessageDeduplicationId"),
        Some(&dead[0].message_id)
    );
}

/// Same guide: "the destination queue ingests the redriven messages, as well as new messages
/// from other producers, according to the order in which it receives them" and "All
/// redriven messages are considered new messages with a new messageID".
#[tokio::test]
async fn redriven_messages_are_new_messages_at_the_end() {
    let e = env();
    let sent = dead_letter(&e, &[("a", "a1")]).await;
    let a2 = e.send("src.fifo", "a", "a2").await;
    redrive(&e).await;
    let back = e.recv("src.fifo", 10, 30).await;
    assert_eq!(bodies(&back), ["a2", "a1"]);
    assert_ne!(back[1].message_id, sent[0].message_id);
    let s = |m: &ReceivedMessage| -> u128 { m.attributes["SequenceNumber"].parse().unwrap() };
    assert!(s(&back[1]) > seq(&a2));
}

/// A redrive must not let a later message of a group overtake an earlier one still in flight
/// in the dead-letter queue (AWS moves messages by receiving them from the DLQ, which keeps
/// group order).
#[tokio::test]
async fn redrive_does_not_let_a_later_message_overtake() {
    let e = env();
    dead_letter(&e, &[("a", "a1"), ("a", "a2")]).await;
    let held = e.recv("dlq.fifo", 1, 300).await;
    assert_eq!(bodies(&held), ["a1"]);
    redrive(&e).await;
    let got = e.recv("src.fifo", 10, 30).await;
    assert!(
        got.is_empty(),
        "source handed out {:?} while a1 is still in the DLQ",
        bodies(&got)
    );
}
