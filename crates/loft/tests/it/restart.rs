//! State survives a graceful restart (SIGTERM, then a new process on the same database).

use serde_json::json;

use std::time::Instant;

use crate::common::{seq_of, Loft, Sink, PATIENCE};
use crate::native_topics::assert_delivery;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queues_topics_messages_and_subscriptions_survive_a_sigterm_restart() {
    let mut loft = Loft::start();
    let mut sink = Sink::start().await;

    loft.post_json(
        "/queues/orders",
        &json!({"dead_letter_queue": "orders-dlq", "max_receive_count": 3, "visibility_timeout": 12}),
    )
    .await;
    let m1 = loft.send_msg("orders", "first").await;
    let m2 = loft.send_msg("orders", "second").await;
    // The newest message is acknowledged before the restart: its number must not come back.
    let m3 = loft.send_msg("orders", "acked").await;
    let m = loft
        .receive("orders", "?visibility_timeout=0")
        .await
        .expect("m1");
    assert_eq!(m.id, m1);
    loft.ack("orders", &m3).await;
    loft.post_empty("/topics/events").await;
    let s1 = loft.subscribe("events", &sink.url("/before")).await;
    let queues = loft.names("/queues").await;
    let topics = loft.names("/topics").await;
    assert_eq!(queues, ["orders", "orders-dlq"]);
    assert_eq!(topics, ["events"]);

    loft.restart();

    assert_eq!(loft.names("/queues").await, queues);
    assert_eq!(loft.names("/topics").await, topics);
    // The queue kept its settings (an idempotent create answers them).
    loft.post_empty("/queues/orders").await.expect(
        201,
        json!({"name": "orders", "dead_letter_queue": "orders-dlq", "max_receive_count": 3, "visibility_timeout": 12}),
    );
    // Pending messages, with their receive counts; the acknowledged one stays gone.
    let mut pending = [
        loft.receive("orders", "")
            .await
            .expect("a pending message survived"),
        loft.receive("orders", "")
            .await
            .expect("both pending messages survived"),
    ];
    pending.sort_by_key(|m| seq_of(&m.id, "msg-"));
    let got: Vec<(&str, &str, i64)> = pending
        .iter()
        .map(|m| (m.id.as_str(), m.body.as_str(), m.receive_count))
        .collect();
    assert_eq!(got, [(m1.as_str(), "first", 2), (m2.as_str(), "second", 1)]);
    assert_eq!(loft.receive("orders", "?visibility_timeout=0").await, None);

    // Ids keep rising across the restart: never a number used before it.
    let m4 = loft.send_msg("orders", "after").await;
    assert!(
        seq_of(&m4, "msg-") > seq_of(&m3, "msg-"),
        "{m4} after {m3} (restart)"
    );
    let s2 = loft.subscribe("events", &sink.url("/after")).await;
    assert!(
        seq_of(&s2, "sub-") > seq_of(&s1, "sub-"),
        "{s2} after {s1} (restart)"
    );

    // The subscription made before the restart still gets deliveries.
    assert_eq!(loft.publish("events", "after restart").await, 2);
    let mut paths = Vec::new();
    for _ in 0..2 {
        let r = sink.next().await;
        assert_delivery(&r, &r.path.clone(), "events", "after restart");
        paths.push(r.path);
    }
    paths.sort();
    assert_eq!(paths, ["/after", "/before"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn message_ids_never_repeat_across_restarts_even_when_all_were_deleted() {
    let mut loft = Loft::start();
    let mut seen = Vec::new();
    for round in 0..3 {
        let id = loft.send_msg("q", &format!("round {round}")).await;
        let m = loft.receive("q", "").await.expect("msg");
        loft.ack("q", &m.id).await;
        seen.push(seq_of(&id, "msg-"));
        loft.restart();
    }
    assert!(
        seen.windows(2).all(|w| w[0] < w[1]),
        "ids across restarts: {seen:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_in_flight_at_shutdown_stays_hidden_until_its_timeout_after_restart() {
    let mut loft = Loft::start();
    let id = loft.send_msg("q", "held").await;
    let m = loft
        .receive("q", "?visibility_timeout=1")
        .await
        .expect("msg");
    assert_eq!(m.id, id);
    loft.restart();
    // Not lost, and returned again once its 1 s visibility has passed.
    let again = loft
        .receive("q", "?wait_seconds=5")
        .await
        .expect("the in-flight message came back after the restart");
    assert_eq!((again.id, again.receive_count), (id, 2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_during_a_long_poll_shuts_down_within_ten_seconds() {
    let mut loft = Loft::start();
    loft.post_empty("/queues/idle").await;
    let poll = loft
        .http
        .get(loft.url("/queues/idle/messages?wait_seconds=20"))
        .send();
    let poller = tokio::spawn(poll);
    // The queue is empty; a 1 s poll of our own returns null while the 20 s one waits.
    assert_eq!(loft.receive("idle", "?wait_seconds=1").await, None);
    assert!(!poller.is_finished());
    // Asserts exit status 0 within PATIENCE (10 s) of SIGTERM.
    let started = Instant::now();
    loft.stop();
    let took = started.elapsed();
    assert!(took < PATIENCE, "shutdown took {took:?}");
    // The long poll got an answer (null), not a dropped connection.
    let resp = poller.await.expect("task").expect("long poll answered");
    assert_eq!(resp.status().as_u16(), 200);
    assert_eq!(resp.text().await.expect("body"), "null");
}

/// A fair queue stays fair across a restart: its flag and its messages' fair keys are in
/// the database, so a quiet group sent before the restart is still served ahead of a
/// noisy group's backlog after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fair_queue_keeps_its_order_across_a_restart() {
    let mut loft = Loft::start();
    let sqs = crate::common::sqs_client(&loft.url(""));
    let url = sqs
        .create_queue()
        .queue_name("tenants")
        .send()
        .await
        .expect("CreateQueue")
        .queue_url()
        .expect("url")
        .to_owned();
    for batch in 0..50 {
        let mut req = sqs.send_message_batch().queue_url(&url);
        for i in 0..10 {
            req = req.entries(
                aws_sdk_sqs::types::SendMessageBatchRequestEntry::builder()
                    .id(format!("e{i}"))
                    .message_body(format!("noisy-{}", batch * 10 + i))
                    .message_group_id("noisy")
                    .build()
                    .expect("entry"),
            );
        }
        req.send().await.expect("SendMessageBatch");
    }
    sqs.send_message()
        .queue_url(&url)
        .message_body("quiet")
        .message_group_id("quiet")
        .send()
        .await
        .expect("SendMessage");

    loft.restart();

    let sqs = crate::common::sqs_client(&loft.url(""));
    let got = sqs
        .receive_message()
        .queue_url(&url)
        .max_number_of_messages(10)
        .send()
        .await
        .expect("ReceiveMessage");
    let bodies: Vec<&str> = got.messages().iter().filter_map(|m| m.body()).collect();
    assert!(bodies.contains(&"quiet"), "{bodies:?}");
}
