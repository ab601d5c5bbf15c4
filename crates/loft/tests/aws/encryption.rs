//! SQS server-side encryption at rest over aws-sdk-sqs: SSE-SQS (the default), SSE-KMS
//! (any KmsMasterKeyId) and SqsManagedSseEnabled=false, checked in the database file
//! itself, across a restart.
//!
//! Source: SQS Developer Guide, "Encryption at rest in Amazon SQS".

use crate::harness::Server;
use crate::{create_queue, string_attr};

/// Sends `body` with one String attribute and returns the MessageId.
async fn send(sqs: &aws_sdk_sqs::Client, url: &str, body: &str, attr: &str) -> String {
    sqs.send_message()
        .queue_url(url)
        .message_body(body)
        .message_attributes("note", string_attr(attr))
        .send()
        .await
        .expect("SendMessage")
        .message_id()
        .expect("MessageId")
        .to_owned()
}

/// Receives one message with its attributes: (body, "note" attribute, MD5OfBody).
async fn receive(sqs: &aws_sdk_sqs::Client, url: &str) -> (String, String, String) {
    let out = sqs
        .receive_message()
        .queue_url(url)
        .message_attribute_names("All")
        .send()
        .await
        .expect("ReceiveMessage");
    let m = &out.messages()[0];
    (
        m.body().unwrap().to_owned(),
        m.message_attributes().unwrap()["note"]
            .string_value()
            .unwrap()
            .to_owned(),
        m.md5_of_body().unwrap().to_owned(),
    )
}

#[tokio::test]
async fn messages_of_encrypted_queues_are_sealed_in_the_database_and_survive_a_restart() {
    let mut server = Server::start();
    let sqs = server.sdk();
    let sse_sqs = create_queue(&sqs, "sse-sqs", &[]).await;
    let sse_kms = create_queue(
        &sqs,
        "sse-kms",
        &[
            ("KmsMasterKeyId", "alias/aws/sqs"),
            ("KmsDataKeyReusePeriodSeconds", "60"),
        ],
    )
    .await;
    let clear = create_queue(&sqs, "clear", &[("SqsManagedSseEnabled", "false")]).await;
    send(
        &sqs,
        &sse_sqs,
        "top secret sqs body",
        "hidden sqs attribute",
    )
    .await;
    send(
        &sqs,
        &sse_kms,
        "top secret kms body",
        "hidden kms attribute",
    )
    .await;
    send(
        &sqs,
        &clear,
        "plain visible body",
        "plain visible attribute",
    )
    .await;

    server.stop();
    let key_file = server.dir().join("loft-sse").join("master.key");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&key_file), 0o600, "the master key is private");
        assert_eq!(mode(key_file.parent().unwrap()), 0o700);
    }
    let db = rusqlite::Connection::open(server.dir().join("loft.db")).unwrap();
    let rows: Vec<(String, String, String, i64)> = db
        .prepare(
            "SELECT q.name, m.body, m.message_attributes, m.sealed FROM messages m \
             JOIN queues q ON q.id = m.queue_id ORDER BY q.name",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    drop(db);
    // The WAL may still hold pages; read the files' bytes too.
    let mut bytes = std::fs::read(server.dir().join("loft.db")).unwrap();
    bytes.extend(std::fs::read(server.dir().join("loft.db-wal")).unwrap_or_default());
    let contains = |needle: &str| bytes.windows(needle.len()).any(|w| w == needle.as_bytes());
    assert_eq!(rows.len(), 3);
    for (queue, body, attributes, sealed) in &rows {
        if queue == "clear" {
            assert_eq!(body, "plain visible body");
            assert_eq!(*sealed, 0);
        } else {
            assert_eq!(*sealed, 1, "{queue}");
            assert!(!body.contains("secret"), "{queue}: {body}");
            assert!(!attributes.contains("hidden"), "{queue}: {attributes}");
        }
    }
    for needle in ["top secret", "hidden sqs", "hidden kms"] {
        assert!(!contains(needle), "{needle:?} is in the database file");
    }
    assert!(contains("plain visible body"));

    server.restart();
    // A new client: the old one's pooled connections went with the old process.
    let sqs = server.sdk();
    let body = "top secret sqs body";
    assert_eq!(
        receive(&sqs, &sse_sqs).await,
        (
            body.to_owned(),
            "hidden sqs attribute".to_owned(),
            crate::md5::hex_md5(body.as_bytes())
        )
    );
    assert_eq!(receive(&sqs, &sse_kms).await.0, "top secret kms body");
    assert_eq!(receive(&sqs, &clear).await.1, "plain visible attribute");
}
