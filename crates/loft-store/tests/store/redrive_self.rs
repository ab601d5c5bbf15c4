//! A RedrivePolicy naming its own queue: accepted, as SQS accepts it (LocalStack's
//! AWS-validated `test_set_empty_redrive_policy` sets one), and harmless: receives past
//! maxReceiveCount return the message again instead of moving it into the queue it is in,
//! which once spun the store's writer for ever, also after a restart.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use loft_core::clock::ManualClock;
use loft_core::service::{ReceiveMessage, SendMessage};
use loft_core::{Service, ServiceConfig};
use loft_store::SqliteStore;

fn policy(svc: &Service, name: &str) -> String {
    let arn = svc.queue_arn(name);
    format!(r#"{{"deadLetterTargetArn":"{arn}","maxReceiveCount":"1"}}"#)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queue_that_is_its_own_dead_letter_queue_keeps_its_messages() {
    let store = Arc::new(SqliteStore::open_in_memory().expect("store"));
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let svc = Service::new(store.clone(), clock.clone(), ServiceConfig::default(), None);
    svc.sqs()
        .create_queue("selfq", BTreeMap::new(), BTreeMap::new())
        .await
        .expect("queue");
    let own = policy(&svc, "selfq");
    svc.sqs()
        .set_queue_attributes("selfq", BTreeMap::from([("RedrivePolicy".to_owned(), own)]))
        .await
        .expect("a queue as its own dead-letter queue is accepted");
    // A Service started on that database (a restart): it has no cached copy of the queue.
    let svc = Service::new(store.clone(), clock.clone(), ServiceConfig::default(), None);
    svc.sqs()
        .send_message(
            "selfq",
            SendMessage {
                body: "loop".into(),
                ..SendMessage::default()
            },
        )
        .await
        .unwrap();
    for n in 1..=3 {
        let receive = svc.sqs().receive_message(
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
