//! Limits against the real binary: in-flight messages per standard and FIFO queue, the
//! queue and topic caps, request header size, open connections.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use aws_sdk_sqs::types::{QueueAttributeName, SendMessageBatchRequestEntry};
use serde_json::json;

use crate::harness::*;

async fn send_n(client: &aws_sdk_sqs::Client, url: &str, n: usize, fifo: bool) {
    let mut req = client.send_message_batch().queue_url(url);
    for i in 0..n {
        let mut e = SendMessageBatchRequestEntry::builder()
            .id(format!("m{i}"))
            .message_body(format!("body {i}"));
        if fifo {
            e = e.message_group_id(format!("g{i}"));
        }
        req = req.entries(e.build().unwrap());
    }
    let out = req.send().await.expect("send batch");
    assert!(out.failed().is_empty(), "{out:?}");
}

#[tokio::test]
async fn a_standard_queue_at_its_in_flight_limit_answers_over_limit() {
    let loft = Loft::start(&["--max-in-flight", "3"], &[]);
    let client = loft.sdk("x", "x");
    let url = client
        .create_queue()
        .queue_name("busy")
        .send()
        .await
        .unwrap();
    let url = url.queue_url().unwrap().to_owned();
    send_n(&client, &url, 5, false).await;
    let receive = || {
        client
            .receive_message()
            .queue_url(&url)
            .max_number_of_messages(10)
            .visibility_timeout(300)
            .send()
    };
    let first = receive().await.expect("receive up to the limit");
    assert_eq!(
        first.messages().len(),
        3,
        "only the room left is handed out"
    );
    let err = receive().await.expect_err("at the limit");
    let (code, status, message) = sdk_error(&err);
    assert_eq!((code.as_str(), status), ("OverLimit", 403), "{message}");
    assert!(message.contains("in-flight"), "{message}");
    // Deleting one makes room again (after the recount interval).
    client
        .delete_message()
        .queue_url(&url)
        .receipt_handle(first.messages()[0].receipt_handle().unwrap())
        .send()
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let again = receive().await.expect("room for one");
    assert_eq!(again.messages().len(), 1);
}

#[tokio::test]
async fn a_fifo_queue_at_its_in_flight_limit_returns_nothing_without_an_error() {
    let loft = Loft::start(&["--max-in-flight-fifo", "2"], &[]);
    let client = loft.sdk("x", "x");
    let url = client
        .create_queue()
        .queue_name("orders.fifo")
        .attributes(QueueAttributeName::FifoQueue, "true")
        .attributes(QueueAttributeName::ContentBasedDeduplication, "true")
        .send()
        .await
        .unwrap()
        .queue_url()
        .unwrap()
        .to_owned();
    send_n(&client, &url, 4, true).await;
    let receive = || {
        client
            .receive_message()
            .queue_url(&url)
            .max_number_of_messages(10)
            .visibility_timeout(300)
            .send()
    };
    assert_eq!(receive().await.unwrap().messages().len(), 2);
    let at_limit = receive().await.expect("no error at the FIFO limit");
    assert!(at_limit.messages().is_empty());
}

#[tokio::test]
async fn the_queue_cap_refuses_new_queues_but_not_existing_names() {
    let loft = Loft::start(&["--max-queues", "2"], &[]);
    let client = loft.sdk("x", "x");
    for name in ["a", "b"] {
        client.create_queue().queue_name(name).send().await.unwrap();
    }
    let err = client
        .create_queue()
        .queue_name("c")
        .send()
        .await
        .unwrap_err();
    let (code, status, message) = sdk_error(&err);
    assert_eq!((code.as_str(), status), ("OverLimit", 403), "{message}");
    assert!(message.contains("2 queues"), "{message}");
    client
        .create_queue()
        .queue_name("a")
        .send()
        .await
        .expect("an existing name");
    // The seeds' API shares the cap.
    let resp = http()
        .post(format!("{}/queues/seed", loft.url))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 403);
    client
        .delete_queue()
        .queue_url(loft.queue_url("a"))
        .send()
        .await
        .unwrap();
    client
        .create_queue()
        .queue_name("c")
        .send()
        .await
        .expect("room after a delete");
}

#[tokio::test]
async fn the_topic_cap_answers_topic_limit_exceeded() {
    let loft = Loft::start(&["--max-topics", "1"], &[]);
    let create = |name: &'static str| {
        http()
            .post(&loft.url)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form(&[
                ("Action", "CreateTopic"),
                ("Name", name),
                ("Version", "2010-03-31"),
            ]))
            .send()
    };
    assert_eq!(create("t1").await.unwrap().status(), 200);
    let resp = create("t2").await.unwrap();
    assert_eq!(resp.status(), 403);
    let text = resp.text().await.unwrap();
    assert!(text.contains("<Code>TopicLimitExceeded</Code>"), "{text}");
    assert_eq!(
        create("t1").await.unwrap().status(),
        200,
        "an existing name"
    );
    let seed = http()
        .post(format!("{}/topics/t3", loft.url))
        .send()
        .await
        .unwrap();
    assert_eq!(seed.status(), 403);
    let body: serde_json::Value = seed.json().await.unwrap();
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("limit of 1 topics"),
        "{body}"
    );
}

#[tokio::test]
async fn request_heads_over_the_header_limit_get_431() {
    let loft = Loft::start(&["--max-header-bytes", "16384"], &[]);
    let c = http();
    let small = c
        .get(format!("{}/health", loft.url))
        .header("x-padding", "a".repeat(8 * 1024))
        .send()
        .await
        .unwrap();
    assert_eq!(small.status(), 200);
    let big = c
        .get(format!("{}/health", loft.url))
        .header("x-padding", "a".repeat(32 * 1024))
        .send()
        .await
        .unwrap();
    assert_eq!(big.status(), 431);
    // The body limit still applies on its own: 1 MiB on the seeds' API.
    let body = json!({"body": "a".repeat(1024 * 1024 + 1)});
    let resp = c
        .post(format!("{}/queues/big/messages", loft.url))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 413);
}

/// Sends a keep-alive `GET /health` on `stream` and reads the response head and body.
fn get_health(stream: &mut TcpStream) -> String {
    stream
        .write_all(b"GET /health HTTP/1.1\r\nHost: loft\r\n\r\n")
        .unwrap();
    let mut buf = vec![0u8; 4096];
    let mut out = String::new();
    // The answers are small: one read after the head arrives is enough for both shapes.
    while !out.contains("\r\n\r\n{") || !out.ends_with('}') {
        let n = stream.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        out.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    out
}

#[tokio::test]
async fn connections_over_the_limit_get_503_until_one_closes() {
    let loft = Loft::start(&["--max-connections", "2"], &[]);
    let addr = loft.url.trim_start_matches("http://").to_owned();
    let timeout = Some(Duration::from_secs(10));
    let open = || {
        let s = TcpStream::connect(&addr).unwrap();
        s.set_read_timeout(timeout).unwrap();
        s
    };
    let mut first = open();
    let mut second = open();
    assert!(get_health(&mut first).starts_with("HTTP/1.1 200"));
    assert!(get_health(&mut second).starts_with("HTTP/1.1 200"));
    let mut third = open();
    let refused = get_health(&mut third);
    assert!(refused.starts_with("HTTP/1.1 503"), "{refused}");
    assert!(refused.contains("too many open connections"), "{refused}");
    assert!(
        refused.to_ascii_lowercase().contains("retry-after: 1"),
        "{refused}"
    );
    drop(first);
    let mut answered = String::new();
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        answered = get_health(&mut open());
        if answered.starts_with("HTTP/1.1 200") {
            break;
        }
    }
    assert!(
        answered.starts_with("HTTP/1.1 200"),
        "a slot frees when a connection closes: {answered}"
    );
    assert!(
        get_health(&mut second).starts_with("HTTP/1.1 200"),
        "kept connections still work"
    );
}
