//! Receipt handles at the service, on an in-memory SQLite store: handles of the format
//! before the MAC (`base64("{queue}:{seq}:{token}")`) keep working only while their token
//! is the message's current one, and their refusals say nothing of whether a message
//! exists; a signed handle's answers follow AWS (SQS API Reference, DeleteMessage and
//! ChangeMessageVisibility).

use std::collections::BTreeMap;
use std::sync::Arc;

use base64::Engine;
use loft_core::clock::ManualClock;
use loft_core::service::{ReceiveMessage, SendMessage};
use loft_core::{ErrorCode, Service, ServiceConfig};
use loft_store::SqliteStore;

fn service() -> Arc<Service> {
    let store = Arc::new(SqliteStore::open_in_memory().expect("store"));
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    Service::new(store, clock, ServiceConfig::default(), None)
}

fn rx(visibility: i64) -> ReceiveMessage {
    ReceiveMessage {
        max_messages: Some(1),
        visibility_timeout: Some(visibility),
        wait_seconds: Some(0),
        ..ReceiveMessage::default()
    }
}

/// The legacy handle naming the same receive as signed handle `h`.
fn legacy_of(h: &str) -> String {
    let b = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(h)
        .unwrap();
    let field = |at: usize| i64::from_be_bytes(b[at..at + 8].try_into().unwrap());
    legacy(field(1), field(9), field(17))
}

fn legacy(queue: i64, seq: i64, token: i64) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("{queue}:{seq}:{token}"))
}

async fn send(svc: &Service, queue: &str, body: &str) {
    svc.send_message(
        queue,
        SendMessage {
            body: body.into(),
            ..SendMessage::default()
        },
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn a_legacy_handle_works_only_while_it_is_the_current_receive() {
    let svc = service();
    svc.create_queue("q", BTreeMap::new(), BTreeMap::new())
        .await
        .unwrap();
    send(&svc, "q", "m").await;
    let first = svc.receive_message("q", rx(300)).await.unwrap();
    let old = legacy_of(&first[0].receipt_handle);
    // Current: it changes visibility.
    svc.change_visibility("q", &old, 0).await.unwrap();
    let second = svc.receive_message("q", rx(300)).await.unwrap();
    assert_eq!(second.len(), 1);
    // Received again: the old legacy handle is no valid handle any more, for either call,
    // and the message stays with its new receive.
    for err in [
        svc.change_visibility("q", &old, 0).await.unwrap_err(),
        svc.delete_message("q", &old).await.unwrap_err(),
    ] {
        assert_eq!(err.code, ErrorCode::ReceiptHandleIsInvalid);
    }
    assert!(svc.receive_message("q", rx(0)).await.unwrap().is_empty());
    // The current receive's legacy form deletes; once deleted it is invalid too.
    let current = legacy_of(&second[0].receipt_handle);
    svc.delete_message("q", &current).await.unwrap();
    assert_eq!(
        svc.delete_message("q", &current).await.unwrap_err().code,
        ErrorCode::ReceiptHandleIsInvalid
    );
    // ... while the signed handle of a deleted message deletes "again", as on AWS.
    svc.delete_message("q", &second[0].receipt_handle)
        .await
        .unwrap();
}

#[tokio::test]
async fn a_legacy_guess_answers_alike_for_messages_that_exist_and_do_not() {
    let svc = service();
    svc.create_queue("q", BTreeMap::new(), BTreeMap::new())
        .await
        .unwrap();
    send(&svc, "q", "probe").await;
    let got = svc.receive_message("q", rx(0)).await.unwrap();
    let b = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(&got[0].receipt_handle)
        .unwrap();
    let queue = i64::from_be_bytes(b[1..9].try_into().unwrap());
    let seq = i64::from_be_bytes(b[9..17].try_into().unwrap());
    send(&svc, "q", "never received").await;
    // seq + 1 exists (never received, token 0), seq + 1000 does not; tokens guessed.
    for s in [seq, seq + 1, seq + 1000] {
        for token in [0, 1, 42] {
            let h = legacy(queue, s, token);
            let d = svc.delete_message("q", &h).await.unwrap_err();
            let c = svc.change_visibility("q", &h, 0).await.unwrap_err();
            let c2 = svc.change_visibility("q", &h, 600).await.unwrap_err();
            for e in [&d, &c, &c2] {
                assert_eq!(e.code, ErrorCode::ReceiptHandleIsInvalid, "{s} {token}");
                assert_eq!(
                    e.message,
                    format!("The input receipt handle \"{h}\" is not a valid receipt handle.")
                );
            }
        }
    }
    // Both messages are still there.
    let r = ReceiveMessage {
        max_messages: Some(10),
        ..rx(30)
    };
    assert_eq!(svc.receive_message("q", r).await.unwrap().len(), 2);
}

#[tokio::test]
async fn a_handle_signed_by_another_database_is_invalid() {
    let (a, b) = (service(), service());
    for svc in [&a, &b] {
        svc.create_queue("q", BTreeMap::new(), BTreeMap::new())
            .await
            .unwrap();
        send(svc, "q", "m").await;
    }
    let from_a = a.receive_message("q", rx(300)).await.unwrap();
    let _ = b.receive_message("q", rx(300)).await.unwrap();
    // Same queue id and seq on both: only the key differs.
    let err = b
        .delete_message("q", &from_a[0].receipt_handle)
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::ReceiptHandleIsInvalid);
    a.delete_message("q", &from_a[0].receipt_handle)
        .await
        .unwrap();
}
