//! SNS topic encryption at rest over aws-sdk-sns: a topic's `KmsMasterKeyId` seals what
//! Loft keeps of its messages (recorded SMS/email/... messages and a FIFO topic's
//! archive here), checked in the database file and its WAL, across a restart; what the
//! subscribers and `/_loft/sns/messages` see is the plaintext.
//!
//! Source: SNS Developer Guide, "Encryption at rest" (SSE with a KMS key per topic).

use serde_json::Value;

use crate::*;

/// Whether the database file or its WAL holds `needle`.
fn on_disk(server: &Server, needle: &str) -> bool {
    let mut bytes = std::fs::read(server.dir().join("loft.db")).unwrap();
    bytes.extend(std::fs::read(server.dir().join("loft.db-wal")).unwrap_or_default());
    bytes.windows(needle.len()).any(|w| w == needle.as_bytes())
}

#[tokio::test]
async fn a_topic_with_a_kms_key_keeps_its_messages_sealed_at_rest() {
    let mut server = Server::start();
    let sns = server.sns();
    let sqs = server.sqs();
    let key = [("KmsMasterKeyId", "alias/aws/sns")];
    // A standard topic whose SMS subscriber's messages are recorded.
    let topic = create_topic(&sns, "sealed-topic", &key).await;
    sns.subscribe()
        .topic_arn(&topic)
        .protocol("sms")
        .endpoint("+15555550100")
        .send()
        .await
        .expect("Subscribe sms");
    let clear = create_topic(&sns, "clear-topic", &[]).await;
    sns.subscribe()
        .topic_arn(&clear)
        .protocol("sms")
        .endpoint("+15555550101")
        .send()
        .await
        .expect("Subscribe sms");
    // A FIFO topic with an archive and an SQS FIFO subscriber.
    let fifo = create_topic(
        &sns,
        "sealed-topic.fifo",
        &[
            key[0],
            ("FifoTopic", "true"),
            ("ArchivePolicy", r#"{"MessageRetentionPeriod": "1"}"#),
        ],
    )
    .await;
    let queue = create_queue(&sqs, "sealed-sub.fifo", &[("FifoQueue", "true")]).await;
    subscribe_queue(&server, &fifo, "sealed-sub.fifo", &[]).await;

    for (arn, text) in [
        (&topic, "sms-marker-7f3a sealed"),
        (&clear, "sms-plain-marker-11"),
    ] {
        sns.publish()
            .topic_arn(arn)
            .message(text)
            .send()
            .await
            .expect("Publish");
    }
    sns.publish()
        .topic_arn(&fifo)
        .message("fifo-marker-9c2e archived")
        .message_group_id("g")
        .message_deduplication_id("d1")
        .send()
        .await
        .expect("Publish FIFO");

    server.stop();
    for needle in ["sms-marker-7f3a", "fifo-marker-9c2e"] {
        assert!(
            !on_disk(&server, needle),
            "{needle:?} is in the database files"
        );
    }
    assert!(
        on_disk(&server, "sms-plain-marker-11"),
        "a topic without a key keeps its records as they are"
    );

    server.start_again();
    let list: Value = reqwest::get(format!("{}/_loft/sns/messages", server.url))
        .await
        .expect("GET /_loft/sns/messages")
        .json()
        .await
        .expect("JSON");
    let messages: Vec<&str> = list
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|m| m["message"].as_str())
        .collect();
    assert!(messages.contains(&"sms-marker-7f3a sealed"), "{messages:?}");
    assert!(messages.contains(&"sms-plain-marker-11"), "{messages:?}");
    // The SQS subscriber got the plaintext (its copy is sealed by the queue's SSE).
    let sqs = server.sqs();
    let got = receive_exactly(&sqs, &queue, 1).await;
    let envelope = json_of(got[0].body().expect("body"));
    assert_eq!(envelope["Message"], "fifo-marker-9c2e archived");
}
