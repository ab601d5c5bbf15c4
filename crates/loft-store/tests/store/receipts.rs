//! Receipt handles at the service, on an in-memory SQLite store (and on PostgreSQL when
//! `LOFT_TEST_DATABASE_URL` names a database, each case in a fresh schema): handles of the format
//! before the MAC (`base64("{queue}:{seq}:{token}")`) keep working only while their token
//! is the message's current one, and their refusals say nothing of whether a message
//! exists; a signed handle's answers follow AWS (SQS API Reference, DeleteMessage and
//! ChangeMessageVisibility).

use std::collections::BTreeMap;
use std::sync::Arc;

use base64::Engine;
use loft_core::clock::ManualClock;
use loft_core::service::receipt::{Receipt, ReceiptKey};
use loft_core::service::{ReceiveMessage, SendMessage};
use loft_core::store::Store;
use loft_core::{ErrorCode, Service, ServiceConfig};
use loft_store::seal::{KeySource, MasterKey};
use loft_store::{PgOptions, PgStore, SqliteStore};

use crate::skips;

fn service() -> Arc<Service> {
    service_on(Arc::new(SqliteStore::open_in_memory().expect("store")))
}

/// A service on a new in-memory SQLite store, with that store's receipt key: a handle is
/// sealed, so only the key reads the fields a legacy guess names.
fn service_with_key() -> (Arc<Service>, ReceiptKey) {
    let store = Arc::new(SqliteStore::open_in_memory().expect("store"));
    let key = store.receipt_key();
    (service_on(store), key)
}

fn service_on(store: Arc<dyn Store>) -> Arc<Service> {
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    Service::new(store, clock, ServiceConfig::default(), None)
}

/// A service on a fresh PostgreSQL schema, and the schema's name to drop; `None` (the case
/// skipped, with a note) without `LOFT_TEST_DATABASE_URL`.
async fn pg_service(test: &str) -> Option<(Arc<Service>, ReceiptKey, String, String)> {
    let Some(url) = std::env::var("LOFT_TEST_DATABASE_URL")
        .ok()
        .filter(|u| !u.is_empty())
    else {
        skips::postgres().skip(test);
        return None;
    };
    let schema = format!("loft_test_{:016x}", rand::random::<u64>());
    let store = PgStore::connect(
        &url,
        PgOptions {
            pool_size: 4,
            schema: Some(schema.clone()),
        },
    )
    .await
    .expect("connect to LOFT_TEST_DATABASE_URL")
    // New queues are SSE-SQS encrypted: the store needs a master key to send.
    .with_key_source(KeySource::Key(MasterKey::from_bytes([0x5a; 32])));
    let key = store.receipt_key();
    Some((service_on(Arc::new(store)), key, url, schema))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_legacy_handles_and_guesses() {
    let Some((svc, key, url, schema)) = pg_service("postgres_legacy_handles_and_guesses").await
    else {
        return;
    };
    legacy_handle_works_only_while_current(&svc, &key).await;
    legacy_guesses_answer_alike(&svc, &key).await;
    drop(svc);
    PgStore::drop_schema(&url, &schema)
        .await
        .expect("drop schema");
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
/// The legacy form of the receive handle `h` names (read with the store's `key`).
fn legacy_of(h: &str, key: &ReceiptKey) -> String {
    let (r, _) = Receipt::decode(h, key).unwrap();
    legacy(r.queue_id, r.seq, r.token)
}

fn legacy(queue: i64, seq: i64, token: i64) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("{queue}:{seq}:{token}"))
}

async fn send(svc: &Service, queue: &str, body: &str) {
    svc.sqs()
        .send_message(
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
    let (svc, key) = service_with_key();
    legacy_handle_works_only_while_current(&svc, &key).await;
}

async fn legacy_handle_works_only_while_current(svc: &Service, key: &ReceiptKey) {
    svc.sqs()
        .create_queue("q", BTreeMap::new(), BTreeMap::new())
        .await
        .unwrap();
    send(svc, "q", "m").await;
    let first = svc.sqs().receive_message("q", rx(300)).await.unwrap();
    let old = legacy_of(&first[0].receipt_handle, key);
    // Current: it changes visibility.
    svc.sqs().change_visibility("q", &old, 0).await.unwrap();
    let second = svc.sqs().receive_message("q", rx(300)).await.unwrap();
    assert_eq!(second.len(), 1);
    // Received again: the old legacy handle is no valid handle any more, for either call,
    // and the message stays with its new receive.
    for err in [
        svc.sqs().change_visibility("q", &old, 0).await.unwrap_err(),
        svc.sqs().delete_message("q", &old).await.unwrap_err(),
    ] {
        assert_eq!(err.code, ErrorCode::ReceiptHandleIsInvalid);
    }
    assert!(svc
        .sqs()
        .receive_message("q", rx(0))
        .await
        .unwrap()
        .is_empty());
    // The current receive's legacy form deletes; once deleted it is invalid too.
    let current = legacy_of(&second[0].receipt_handle, key);
    svc.sqs().delete_message("q", &current).await.unwrap();
    assert_eq!(
        svc.sqs()
            .delete_message("q", &current)
            .await
            .unwrap_err()
            .code,
        ErrorCode::ReceiptHandleIsInvalid
    );
    // ... while the signed handle of a deleted message deletes "again", as on AWS.
    svc.sqs()
        .delete_message("q", &second[0].receipt_handle)
        .await
        .unwrap();
}

#[tokio::test]
async fn a_legacy_guess_answers_alike_for_messages_that_exist_and_do_not() {
    let (svc, key) = service_with_key();
    legacy_guesses_answer_alike(&svc, &key).await;
}

async fn legacy_guesses_answer_alike(svc: &Service, key: &ReceiptKey) {
    svc.sqs()
        .create_queue("g", BTreeMap::new(), BTreeMap::new())
        .await
        .unwrap();
    send(svc, "g", "probe").await;
    let got = svc.sqs().receive_message("g", rx(0)).await.unwrap();
    let (named, _) = Receipt::decode(&got[0].receipt_handle, key).unwrap();
    let (queue, seq) = (named.queue_id, named.seq);
    send(svc, "g", "never received").await;
    // seq + 1 exists (never received, token 0), seq + 1000 does not; tokens guessed.
    for s in [seq, seq + 1, seq + 1000] {
        for token in [0, 1, 42] {
            let h = legacy(queue, s, token);
            let d = svc.sqs().delete_message("g", &h).await.unwrap_err();
            let c = svc.sqs().change_visibility("g", &h, 0).await.unwrap_err();
            let c2 = svc.sqs().change_visibility("g", &h, 600).await.unwrap_err();
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
    assert_eq!(svc.sqs().receive_message("g", r).await.unwrap().len(), 2);
}

#[tokio::test]
async fn a_handle_signed_by_another_database_is_invalid() {
    let (a, b) = (service(), service());
    for svc in [&a, &b] {
        svc.sqs()
            .create_queue("q", BTreeMap::new(), BTreeMap::new())
            .await
            .unwrap();
        send(svc, "q", "m").await;
    }
    let from_a = a.sqs().receive_message("q", rx(300)).await.unwrap();
    let _ = b.sqs().receive_message("q", rx(300)).await.unwrap();
    // Same queue id and seq on both: only the key differs.
    let err = b
        .sqs()
        .delete_message("q", &from_a[0].receipt_handle)
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::ReceiptHandleIsInvalid);
    a.sqs()
        .delete_message("q", &from_a[0].receipt_handle)
        .await
        .unwrap();
}
