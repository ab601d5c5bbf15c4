//! A RedrivePolicy naming its own queue: refused by CreateQueue/SetQueueAttributes, and
//! harmless in a database that already holds one (written here through the store, as an
//! older Loft could): receives past maxReceiveCount return the message again instead of
//! moving it into the queue it is in, which once spun the store's writer for ever.
//!
//! Source: SQS Developer Guide, "Using dead-letter queues" (a dead-letter queue is one that
//! other queues target).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use loft_core::clock::{Clock, ManualClock};
use loft_core::service::{ReceiveMessage, SendMessage};
use loft_core::store::Store;
use loft_core::{ErrorCode, Service, ServiceConfig};
use loft_store::SqliteStore;

fn policy(svc: &Service, name: &str) -> String {
    let arn = svc.queue_arn(name);
    format!(r#"{{"deadLetterTargetArn":"{arn}","maxReceiveCount":"1"}}"#)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queue_cannot_be_its_own_dead_letter_queue() {
    let store = Arc::new(SqliteStore::open_in_memory().expect("store"));
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let svc = Service::new(store.clone(), clock.clone(), ServiceConfig::default(), None);
    svc.create_queue("selfq", BTreeMap::new(), BTreeMap::new())
        .await
        .expect("queue");
    let own = policy(&svc, "selfq");
    let err = svc
        .set_queue_attributes(
            "selfq",
            BTreeMap::from([("RedrivePolicy".to_owned(), own.clone())]),
        )
        .await
        .expect_err("a queue as its own dead-letter queue");
    assert_eq!(err.code, ErrorCode::InvalidParameterValue, "{err:?}");
    assert!(err
        .message
        .ends_with("Reason: Dead letter target can not be the source queue itself."));

    // As a database written before the check holds it.
    let queue = store.get_queue("selfq").await.unwrap().unwrap();
    let mut attributes = queue.attributes.clone();
    attributes.insert("RedrivePolicy".into(), own);
    store
        .set_queue_attributes(queue.id, attributes, clock.now_ms())
        .await
        .unwrap();
    // A Service started on that database (a restart): it has no cached copy of the queue.
    let svc = Service::new(store.clone(), clock.clone(), ServiceConfig::default(), None);
    svc.send_message(
        "selfq",
        SendMessage {
            body: "loop".into(),
            ..SendMessage::default()
        },
    )
    .await
    .unwrap();
    for n in 1..=3 {
        let receive = svc.receive_message(
            "selfq",
            ReceiveMessage {
                wait_seconds: Some(0),
                visibility_timeout: Some(0),
                ..ReceiveMessage::default()
            },
        );
        let got = tokio::time::timeout(Duration::from_secs(20), receive)
            .await
            .unwrap_or_else(|_| panic!("receive {n} did not answer"))
            .unwrap();
        assert_eq!(got.len(), 1, "receive {n}");
        assert_eq!(got[0].body, "loop");
        clock.advance_ms(1000);
    }
}
