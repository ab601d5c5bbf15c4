//! Message operations over aws-sdk-sqs: SendMessage, SendMessageBatch, ReceiveMessage,
//! DeleteMessage, DeleteMessageBatch, ChangeMessageVisibility,
//! ChangeMessageVisibilityBatch, PurgeQueue, StartMessageMoveTask, ListMessageMoveTasks,
//! CancelMessageMoveTask; with their parameters and the MD5s checked independently.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use aws_sdk_sqs::operation::purge_queue::PurgeQueueError;
use aws_sdk_sqs::types::{
    ChangeMessageVisibilityBatchRequestEntry, DeleteMessageBatchRequestEntry,
    MessageSystemAttributeName as S, SendMessageBatchRequestEntry,
};

use crate::harness::{Server, ACCOUNT};
use crate::md5::{self, Value};
use crate::{binary_attr, counts, create_queue, string_attr, typed_attr};

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

#[tokio::test]
async fn send_receive_delete_with_attributes_and_digests() {
    let server = Server::start();
    let sqs = server.sdk();
    let url = create_queue(&sqs, "work", &[]).await;
    let body = "héllo, wörld \u{1F600}\r\n\t<&>\"'";
    let sent = sqs
        .send_message()
        .queue_url(&url)
        .message_body(body)
        .message_attributes("colour", string_attr("blue"))
        .message_attributes("count", typed_attr("Number", "42"))
        .message_attributes("price", typed_attr("Number.usd", "9.99"))
        .message_attributes("blob", binary_attr(&[0, 1, 2, 255]))
        .message_attributes("label", typed_attr("String.custom", "x"))
        .send()
        .await
        .unwrap();
    let expected_attr_md5 = md5::of_attributes(&[
        ("colour", "String", Value::Text("blue")),
        ("count", "Number", Value::Text("42")),
        ("price", "Number.usd", Value::Text("9.99")),
        ("blob", "Binary", Value::Bytes(&[0, 1, 2, 255])),
        ("label", "String.custom", Value::Text("x")),
    ]);
    assert_eq!(
        sent.md5_of_message_body(),
        Some(md5::hex_md5(body.as_bytes()).as_str())
    );
    assert_eq!(
        sent.md5_of_message_attributes(),
        Some(expected_attr_md5.as_str())
    );
    assert_eq!(sent.md5_of_message_system_attributes(), None);
    assert_eq!(sent.sequence_number(), None);
    let message_id = sent.message_id().unwrap().to_owned();
    assert!(!message_id.is_empty());

    let before = now_ms();
    let out = sqs
        .receive_message()
        .queue_url(&url)
        .message_attribute_names("All")
        .message_system_attribute_names(S::All)
        .send()
        .await
        .unwrap();
    let [m] = out.messages() else {
        panic!("one message expected: {out:?}")
    };
    assert_eq!(m.message_id(), Some(message_id.as_str()));
    assert_eq!(m.body(), Some(body));
    assert_eq!(
        m.md5_of_body(),
        Some(md5::hex_md5(body.as_bytes()).as_str())
    );
    assert_eq!(
        m.md5_of_message_attributes(),
        Some(expected_attr_md5.as_str())
    );
    let attrs = m.message_attributes().unwrap();
    assert_eq!(attrs.len(), 5);
    assert_eq!(attrs["colour"].string_value(), Some("blue"));
    assert_eq!(attrs["colour"].data_type(), "String");
    assert_eq!(attrs["count"].string_value(), Some("42"));
    assert_eq!(attrs["price"].data_type(), "Number.usd");
    assert_eq!(
        attrs["blob"].binary_value().map(|b| b.as_ref().to_vec()),
        Some(vec![0, 1, 2, 255])
    );
    assert_eq!(
        md5::of_sdk_attributes(attrs).as_deref(),
        m.md5_of_message_attributes()
    );

    let system = m.attributes().unwrap();
    assert_eq!(system[&S::ApproximateReceiveCount], "1");
    assert_eq!(system[&S::SenderId], ACCOUNT);
    let sent_at: i64 = system[&S::SentTimestamp].parse().unwrap();
    let first: i64 = system[&S::ApproximateFirstReceiveTimestamp]
        .parse()
        .unwrap();
    // Milliseconds since the epoch.
    assert!((sent_at - before).abs() < 10_000, "SentTimestamp {sent_at}");
    assert!(first >= sent_at, "{first} < {sent_at}");
    // Standard queue: no FIFO attributes, no dead-letter source.
    assert!(!system.contains_key(&S::MessageGroupId));
    assert!(!system.contains_key(&S::SequenceNumber));
    assert!(!system.contains_key(&S::DeadLetterQueueSourceArn));

    // In flight now: counted as not visible.
    assert_eq!(counts(&sqs, &url).await, (0, 1, 0));
    sqs.delete_message()
        .queue_url(&url)
        .receipt_handle(m.receipt_handle().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(counts(&sqs, &url).await, (0, 0, 0));
    // Deleting an already deleted message succeeds, as on AWS.
    sqs.delete_message()
        .queue_url(&url)
        .receipt_handle(m.receipt_handle().unwrap())
        .send()
        .await
        .unwrap();
    let out = sqs.receive_message().queue_url(&url).send().await.unwrap();
    assert!(out.messages().is_empty());
}

#[tokio::test]
async fn receive_selects_system_attributes_by_name() {
    let server = Server::start();
    let sqs = server.sdk();
    let url = create_queue(&sqs, "sys", &[]).await;
    sqs.send_message()
        .queue_url(&url)
        .message_body("b")
        .send()
        .await
        .unwrap();
    // The deprecated AttributeNames parameter selects the same attributes.
    #[allow(deprecated)]
    let out = sqs
        .receive_message()
        .queue_url(&url)
        .attribute_names(aws_sdk_sqs::types::QueueAttributeName::from(
            "SentTimestamp",
        ))
        .message_system_attribute_names(S::ApproximateReceiveCount)
        .visibility_timeout(0)
        .send()
        .await
        .unwrap();
    let m = &out.messages()[0];
    let attrs = m.attributes().unwrap();
    let mut names: Vec<&str> = attrs.keys().map(S::as_str).collect();
    names.sort();
    assert_eq!(names, ["ApproximateReceiveCount", "SentTimestamp"]);
    // No names: no Attributes, no message attributes, no attribute digest.
    let out = sqs.receive_message().queue_url(&url).send().await.unwrap();
    let m = &out.messages()[0];
    assert!(m.attributes().is_none_or(HashMap::is_empty));
    assert!(m.message_attributes().is_none_or(HashMap::is_empty));
    assert_eq!(m.md5_of_message_attributes(), None);
}

#[tokio::test]
async fn aws_trace_header_system_attribute() {
    let server = Server::start();
    let sqs = server.sdk();
    let url = create_queue(&sqs, "traced", &[]).await;
    let header = "Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1";
    let sent = sqs
        .send_message()
        .queue_url(&url)
        .message_body("b")
        .message_system_attributes(
            aws_sdk_sqs::types::MessageSystemAttributeNameForSends::AwsTraceHeader,
            aws_sdk_sqs::types::MessageSystemAttributeValue::builder()
                .data_type("String")
                .string_value(header)
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(
        sent.md5_of_message_system_attributes(),
        Some(md5::of_attributes(&[("AWSTraceHeader", "String", Value::Text(header))]).as_str())
    );
    let out = sqs
        .receive_message()
        .queue_url(&url)
        .message_system_attribute_names(S::AwsTraceHeader)
        .send()
        .await
        .unwrap();
    assert_eq!(
        out.messages()[0].attributes().unwrap()[&S::AwsTraceHeader],
        header
    );
}

#[tokio::test]
async fn send_message_batch_and_receive_up_to_ten() {
    let server = Server::start();
    let sqs = server.sdk();
    let url = create_queue(&sqs, "batch", &[]).await;
    let mut req = sqs.send_message_batch().queue_url(&url);
    for i in 0..10 {
        let mut e = SendMessageBatchRequestEntry::builder()
            .id(format!("e-{i}"))
            .message_body(format!("body {i}"));
        if i & 1 == 0 {
            e = e.message_attributes("i", typed_attr("Number", &i.to_string()));
        }
        req = req.entries(e.build().unwrap());
    }
    let out = req.send().await.unwrap();
    assert!(out.failed().is_empty(), "{:?}", out.failed());
    assert_eq!(out.successful().len(), 10);
    let mut ids = HashMap::new();
    for s in out.successful() {
        let i: usize = s.id().strip_prefix("e-").unwrap().parse().unwrap();
        assert_eq!(
            s.md5_of_message_body(),
            md5::hex_md5(format!("body {i}").as_bytes())
        );
        let expected = (i & 1 == 0)
            .then(|| md5::of_attributes(&[("i", "Number", Value::Text(&i.to_string()))]));
        assert_eq!(s.md5_of_message_attributes(), expected.as_deref());
        ids.insert(s.message_id().to_owned(), i);
    }
    assert_eq!(ids.len(), 10, "message ids must be distinct");

    let mut received = HashMap::new();
    for _ in 0..20 {
        let out = sqs
            .receive_message()
            .queue_url(&url)
            .max_number_of_messages(10)
            .message_attribute_names("All")
            .send()
            .await
            .unwrap();
        assert!(out.messages().len() <= 10);
        for m in out.messages() {
            let i = ids[m.message_id().unwrap()];
            assert_eq!(m.body().unwrap(), format!("body {i}"));
            received.insert(i, m.receipt_handle().unwrap().to_owned());
        }
        if received.len() == 10 {
            break;
        }
    }
    assert_eq!(received.len(), 10);

    // DeleteMessageBatch of all ten.
    let mut req = sqs.delete_message_batch().queue_url(&url);
    for (i, handle) in &received {
        req = req.entries(
            DeleteMessageBatchRequestEntry::builder()
                .id(format!("d{i}"))
                .receipt_handle(handle)
                .build()
                .unwrap(),
        );
    }
    let out = req.send().await.unwrap();
    assert!(out.failed().is_empty(), "{:?}", out.failed());
    let mut done: Vec<&str> = out.successful().iter().map(|s| s.id()).collect();
    done.sort();
    let mut want: Vec<String> = (0..10).map(|i| format!("d{i}")).collect();
    want.sort();
    assert_eq!(done, want);
    assert_eq!(counts(&sqs, &url).await, (0, 0, 0));
}

#[tokio::test]
async fn visibility_timeout_hides_and_change_visibility_reveals() {
    let server = Server::start();
    let sqs = server.sdk();
    let url = create_queue(&sqs, "vis", &[]).await;
    sqs.send_message()
        .queue_url(&url)
        .message_body("m")
        .send()
        .await
        .unwrap();
    let first = sqs
        .receive_message()
        .queue_url(&url)
        .visibility_timeout(1)
        .send()
        .await
        .unwrap();
    let m = first.messages()[0].clone();
    // Hidden for the receive's own timeout.
    let out = sqs.receive_message().queue_url(&url).send().await.unwrap();
    assert!(out.messages().is_empty());
    // Visible again once its 1 s has passed: received then, with a count of 2.
    let m2 = crate::wait::poll(Duration::from_secs(10), || async {
        let again = sqs
            .receive_message()
            .queue_url(&url)
            .message_system_attribute_names(S::ApproximateReceiveCount)
            .visibility_timeout(60)
            .send()
            .await
            .unwrap();
        again.messages().first().cloned()
    })
    .await
    .expect("the message never became visible again");
    assert_eq!(m2.message_id(), m.message_id());
    assert_eq!(m2.attributes().unwrap()[&S::ApproximateReceiveCount], "2");

    // ChangeMessageVisibility 0 makes it visible at once.
    sqs.change_message_visibility()
        .queue_url(&url)
        .receipt_handle(m2.receipt_handle().unwrap())
        .visibility_timeout(0)
        .send()
        .await
        .unwrap();
    let third = sqs.receive_message().queue_url(&url).send().await.unwrap();
    let m3 = third.messages()[0].clone();
    assert_eq!(m3.message_id(), m.message_id());
    // Extending hides it again.
    sqs.change_message_visibility()
        .queue_url(&url)
        .receipt_handle(m3.receipt_handle().unwrap())
        .visibility_timeout(3600)
        .send()
        .await
        .unwrap();
    let out = sqs.receive_message().queue_url(&url).send().await.unwrap();
    assert!(out.messages().is_empty());
    assert_eq!(counts(&sqs, &url).await, (0, 1, 0));
}

#[tokio::test]
async fn change_message_visibility_batch() {
    let server = Server::start();
    let sqs = server.sdk();
    let url = create_queue(&sqs, "cmvb", &[]).await;
    for i in 0..3 {
        sqs.send_message()
            .queue_url(&url)
            .message_body(format!("m{i}"))
            .send()
            .await
            .unwrap();
    }
    let mut handles = Vec::new();
    while handles.len() < 3 {
        let out = sqs
            .receive_message()
            .queue_url(&url)
            .max_number_of_messages(10)
            .visibility_timeout(600)
            .send()
            .await
            .unwrap();
        handles.extend(
            out.messages()
                .iter()
                .map(|m| m.receipt_handle().unwrap().to_owned()),
        );
    }
    let mut req = sqs.change_message_visibility_batch().queue_url(&url);
    for (i, h) in handles.iter().enumerate() {
        req = req.entries(
            ChangeMessageVisibilityBatchRequestEntry::builder()
                .id(format!("c{i}"))
                .receipt_handle(h)
                .visibility_timeout(if i == 0 { 0 } else { 600 })
                .build()
                .unwrap(),
        );
    }
    let out = req.send().await.unwrap();
    assert!(out.failed().is_empty(), "{:?}", out.failed());
    assert_eq!(out.successful().len(), 3);
    // One made visible, two still hidden.
    assert_eq!(counts(&sqs, &url).await, (1, 2, 0));
}

#[tokio::test]
async fn delay_seconds_per_message_and_per_queue() {
    let server = Server::start();
    let sqs = server.sdk();
    let url = create_queue(&sqs, "delayed", &[]).await;
    sqs.send_message()
        .queue_url(&url)
        .message_body("later")
        .delay_seconds(2)
        .send()
        .await
        .unwrap();
    assert_eq!(counts(&sqs, &url).await, (0, 0, 1));
    let out = sqs.receive_message().queue_url(&url).send().await.unwrap();
    assert!(out.messages().is_empty());
    // Once its 2 s have passed the message counts as visible.
    let visible = crate::wait::until(Duration::from_secs(10), || async {
        counts(&sqs, &url).await == (1, 0, 0)
    })
    .await;
    assert!(visible, "still {:?}", counts(&sqs, &url).await);
    let out = sqs.receive_message().queue_url(&url).send().await.unwrap();
    assert_eq!(out.messages()[0].body(), Some("later"));

    // The queue's DelaySeconds applies when the message gives none; 0 overrides it.
    let url = create_queue(&sqs, "slow", &[("DelaySeconds", "900")]).await;
    sqs.send_message()
        .queue_url(&url)
        .message_body("queue delay")
        .send()
        .await
        .unwrap();
    sqs.send_message()
        .queue_url(&url)
        .message_body("no delay")
        .delay_seconds(0)
        .send()
        .await
        .unwrap();
    assert_eq!(counts(&sqs, &url).await, (1, 0, 1));
    let out = sqs.receive_message().queue_url(&url).send().await.unwrap();
    assert_eq!(out.messages()[0].body(), Some("no delay"));
}

#[tokio::test]
async fn purge_queue_then_purge_in_progress() {
    let server = Server::start();
    let sqs = server.sdk();
    let url = create_queue(&sqs, "purged", &[]).await;
    for i in 0..5 {
        sqs.send_message()
            .queue_url(&url)
            .message_body(format!("m{i}"))
            .send()
            .await
            .unwrap();
    }
    sqs.receive_message().queue_url(&url).send().await.unwrap();
    sqs.purge_queue().queue_url(&url).send().await.unwrap();
    assert_eq!(counts(&sqs, &url).await, (0, 0, 0));
    // A second purge within 60 s: PurgeQueueInProgress, HTTP 403.
    assert_sdk_err!(
        sqs.purge_queue().queue_url(&url).send().await,
        PurgeQueueError::PurgeQueueInProgress(_),
        "AWS.SimpleQueueService.PurgeQueueInProgress",
        403
    );
    // Other queues are not affected by the cool-down.
    let other = create_queue(&sqs, "other", &[]).await;
    sqs.purge_queue().queue_url(&other).send().await.unwrap();
    assert_sdk_err!(
        sqs.purge_queue()
            .queue_url(server.queue_url("nope"))
            .send()
            .await,
        PurgeQueueError::QueueDoesNotExist(_),
        "AWS.SimpleQueueService.NonExistentQueue",
        400
    );
}

#[tokio::test]
async fn long_poll_waits_then_returns_empty() {
    let server = Server::start();
    let sqs = server.sdk();
    let url = create_queue(&sqs, "idle", &[]).await;
    let start = Instant::now();
    let out = sqs
        .receive_message()
        .queue_url(&url)
        .wait_time_seconds(1)
        .send()
        .await
        .unwrap();
    let waited = start.elapsed();
    assert!(out.messages().is_empty());
    assert!(waited >= Duration::from_millis(900), "{waited:?}");
    assert!(waited < Duration::from_secs(5), "{waited:?}");

    // Without WaitTimeSeconds the queue's ReceiveMessageWaitTimeSeconds applies.
    let url = create_queue(&sqs, "patient", &[("ReceiveMessageWaitTimeSeconds", "1")]).await;
    let start = Instant::now();
    sqs.receive_message().queue_url(&url).send().await.unwrap();
    assert!(start.elapsed() >= Duration::from_millis(900));
    // And WaitTimeSeconds 0 overrides it (short poll).
    let start = Instant::now();
    sqs.receive_message()
        .queue_url(&url)
        .wait_time_seconds(0)
        .send()
        .await
        .unwrap();
    assert!(start.elapsed() < Duration::from_millis(800));
}

#[tokio::test]
async fn queue_url_forms_other_endpoints_use() {
    // Users keep URLs from real AWS or other emulators in configuration: the queue is the
    // last path segment.
    let server = Server::start();
    let sqs = server.sdk();
    create_queue(&sqs, "anywhere", &[]).await;
    for url in [
        "https://sqs.us-east-1.amazonaws.com/000000000000/anywhere".to_owned(),
        "http://localhost:4566/000000000000/anywhere".to_owned(),
        server.queue_url("anywhere"),
    ] {
        sqs.send_message()
            .queue_url(&url)
            .message_body("x")
            .send()
            .await
            .unwrap_or_else(|e| panic!("{url}: {e:?}"));
    }
    assert_eq!(counts(&sqs, &server.queue_url("anywhere")).await.0, 3);
}
