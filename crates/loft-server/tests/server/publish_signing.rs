//! When a publish is signed: an SNS envelope (SQS without RawMessageDelivery, HTTP/S, ...)
//! carries a Signature, a raw SQS copy is the message text alone and needs none. The
//! service over the in-memory SQLite store with a signer that counts its calls.
//!
//! Sources: SNS Developer Guide, "Amazon SNS raw message delivery" (the raw message is
//! delivered as is, without the JSON envelope) and "Verifying the signatures of Amazon SNS
//! messages" (the envelope's Signature). Signing every publish was 70% of a raw
//! fan-out's server CPU (docs/benchmarks/history.md, "Fan-out: SNS Publish and
//! PublishBatch to 10 SQS queues").

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use loft_core::clock::{Clock, ManualClock};
use loft_core::service::{
    MessageSigner, PublishRequest, PublishTarget, ReceiveMessage, SignedFields,
};
use loft_core::{Service, ServiceConfig};
use loft_store::SqliteStore;
use serde_json::Value;

/// Signs with a fixed string and counts the calls.
#[derive(Default)]
struct CountingSigner(AtomicUsize);

impl MessageSigner for CountingSigner {
    fn sign(&self, _fields: &SignedFields, _signature_version: u8) -> String {
        self.0.fetch_add(1, Ordering::SeqCst);
        "c2lnbmVk".into()
    }

    fn certificate_file(&self) -> String {
        "SimpleNotificationService-00000000000000000000000000000000.pem".into()
    }
}

/// A service, topic `t` and one SQS subscription per entry of `raw` (queue `q{i}`, raw
/// delivery when true).
async fn world(raw: &[bool]) -> (Arc<Service>, Arc<CountingSigner>, String) {
    let signer = Arc::new(CountingSigner::default());
    let svc = Service::new(
        Arc::new(SqliteStore::open_in_memory().expect("in-memory store")),
        Arc::new(ManualClock::new(1_700_000_000_000)) as Arc<dyn Clock>,
        ServiceConfig::default(),
        Some(signer.clone() as Arc<dyn MessageSigner>),
    );
    svc.sns()
        .create_topic("t", BTreeMap::new(), Vec::new())
        .await
        .expect("create topic");
    let topic_arn = svc.topic_arn("t");
    for (i, raw) in raw.iter().enumerate() {
        let name = format!("q{i}");
        svc.sqs()
            .create_queue(&name, BTreeMap::new(), BTreeMap::new())
            .await
            .expect("create queue");
        let attrs = BTreeMap::from([("RawMessageDelivery".to_owned(), raw.to_string())]);
        svc.sns()
            .subscribe(&topic_arn, "sqs", Some(&svc.queue_arn(&name)), attrs, true)
            .await
            .expect("subscribe");
    }
    (svc, signer, topic_arn)
}

async fn publish(svc: &Service, topic_arn: &str, message: &str) {
    svc.sns()
        .publish(
            PublishTarget::Topic(topic_arn),
            PublishRequest {
                message: message.to_owned(),
                ..PublishRequest::default()
            },
        )
        .await
        .expect("publish");
}

async fn body_in(svc: &Service, queue: &str) -> String {
    let got = svc
        .sqs()
        .receive_message(
            queue,
            ReceiveMessage {
                max_messages: Some(1),
                wait_seconds: Some(0),
                ..ReceiveMessage::default()
            },
        )
        .await
        .expect("receive");
    assert_eq!(got.len(), 1, "one message in {queue}");
    got[0].body.clone()
}

#[tokio::test]
async fn a_fan_out_to_raw_queues_only_signs_nothing() {
    let (svc, signer, topic_arn) = world(&[true, true, true]).await;
    publish(&svc, &topic_arn, "hello").await;
    for q in ["q0", "q1", "q2"] {
        assert_eq!(body_in(&svc, q).await, "hello");
    }
    assert_eq!(signer.0.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn an_envelope_is_signed_once_per_publish_beside_raw_copies() {
    let (svc, signer, topic_arn) = world(&[true, false, false]).await;
    publish(&svc, &topic_arn, "hello").await;
    assert_eq!(body_in(&svc, "q0").await, "hello");
    for q in ["q1", "q2"] {
        let envelope: Value = serde_json::from_str(&body_in(&svc, q).await).expect("JSON");
        assert_eq!(envelope["Message"], "hello");
        assert_eq!(envelope["Signature"], "c2lnbmVk");
    }
    assert_eq!(
        signer.0.load(Ordering::SeqCst),
        1,
        "the two envelopes share one signature"
    );
}
