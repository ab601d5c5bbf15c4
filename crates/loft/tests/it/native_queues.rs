//! The queue rows of docs/seeds-api.md's table, and the queue behaviours around them: visibility
//! expiry, long polling, dead-letter moves and concurrent consumers.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::{seq_of, Loft, PATIENCE};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_answers_healthy_loft() {
    let loft = Loft::start();
    loft.get("/health")
        .await
        .expect(200, json!({"status": "healthy", "service": "loft"}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_queue_without_body_answers_201_with_defaults() {
    let loft = Loft::start();
    loft.post_empty("/queues/orders").await.expect(
        201,
        json!({"name": "orders", "dead_letter_queue": "", "max_receive_count": 5, "visibility_timeout": 30}),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_queue_with_options_answers_them() {
    let loft = Loft::start();
    loft.post_json(
        "/queues/orders",
        &json!({"dead_letter_queue": "orders-dlq", "max_receive_count": 3, "visibility_timeout": 10}),
    )
    .await
    .expect(
        201,
        json!({"name": "orders", "dead_letter_queue": "orders-dlq", "max_receive_count": 3, "visibility_timeout": 10}),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_queue_is_idempotent_and_keeps_the_first_settings() {
    let loft = Loft::start();
    let first = json!({"name": "orders", "dead_letter_queue": "dlq", "max_receive_count": 2, "visibility_timeout": 7});
    loft.post_json(
        "/queues/orders",
        &json!({"dead_letter_queue": "dlq", "max_receive_count": 2, "visibility_timeout": 7}),
    )
    .await
    .expect(201, first.clone());
    // Same name again, without a body and with other settings: the queue as first created.
    loft.post_empty("/queues/orders")
        .await
        .expect(201, first.clone());
    loft.post_json(
        "/queues/orders",
        &json!({"dead_letter_queue": "other", "max_receive_count": 9, "visibility_timeout": 60}),
    )
    .await
    .expect(201, first);
    // Still one queue named orders (and its dead-letter queue).
    let names = loft.names("/queues").await;
    assert_eq!(
        names.iter().filter(|n| *n == "orders").count(),
        1,
        "{names:?}"
    );
    // A message sent before the repeated create is still there.
    let id = loft.send_msg("orders", "kept").await;
    loft.post_empty("/queues/orders").await;
    let m = loft.receive("orders", "").await.expect("message kept");
    assert_eq!((m.id, m.body.as_str()), (id, "kept"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_receive_count_zero_or_negative_means_five() {
    let loft = Loft::start();
    for (name, n) in [("zero", 0), ("negative", -3)] {
        let r = loft
            .post_json(
                &format!("/queues/{name}"),
                &json!({"dead_letter_queue": "dlq", "max_receive_count": n}),
            )
            .await;
        r.expect(
            201,
            json!({"name": name, "dead_letter_queue": "dlq", "max_receive_count": 5, "visibility_timeout": 30}),
        );
    }
    // And it behaves as 5: five receives return the message, the sixth moves it.
    let id = loft.send_msg("zero", "poison").await;
    for expected in 1..=5 {
        let m = loft
            .receive("zero", "?visibility_timeout=0")
            .await
            .unwrap_or_else(|| panic!("receive {expected} returned null"));
        assert_eq!((m.id.as_str(), m.receive_count), (id.as_str(), expected));
    }
    assert_eq!(loft.receive("zero", "?visibility_timeout=0").await, None);
    let moved = loft.receive("dlq", "").await.expect("moved to dlq");
    assert_eq!(moved.id, id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_queue_is_idempotent_for_max_receive_count_without_a_dead_letter_queue() {
    let loft = Loft::start();
    let first = json!({"name": "q", "dead_letter_queue": "", "max_receive_count": 3, "visibility_timeout": 30});
    loft.post_json("/queues/q", &json!({"max_receive_count": 3}))
        .await
        .expect(201, first.clone());
    loft.post_empty("/queues/q").await.expect(201, first);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_queues_answers_the_names() {
    let loft = Loft::start();
    assert_eq!(loft.names("/queues").await, Vec::<String>::new());
    let r = loft.get("/queues").await;
    r.expect(200, json!([]));
    for name in ["b-queue", "a-queue", "c_queue"] {
        loft.post_empty(&format!("/queues/{name}")).await;
    }
    // Created by its first send.
    loft.send_msg("d.queue", "x").await;
    assert_eq!(
        loft.names("/queues").await,
        ["a-queue", "b-queue", "c_queue", "d.queue"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_answers_201_with_sequential_msg_ids_and_creates_the_queue() {
    let loft = Loft::start();
    let r = loft
        .post_json("/queues/work/messages", &json!({"body": "task-1"}))
        .await;
    // The seed's lifecycle: the first message of a fresh service is msg-1.
    r.expect(201, json!({"id": "msg-1"}));
    assert_eq!(loft.names("/queues").await, ["work"]);
    let mut last = 1;
    for (queue, body) in [("work", "task-2"), ("other", "x"), ("work", "task-3")] {
        let n = seq_of(&loft.send_msg(queue, body).await, "msg-");
        assert!(n > last, "msg-{n} after msg-{last}");
        last = n;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn receive_answers_the_oldest_message_then_null() {
    let loft = Loft::start();
    let r = loft.get("/queues/work/messages").await;
    r.expect(200, json!(null)); // no such queue
    loft.post_empty("/queues/work").await;
    loft.get("/queues/work/messages")
        .await
        .expect(200, json!(null)); // empty queue
    let a = loft.send_msg("work", "task-1").await;
    let b = loft.send_msg("work", "task-2").await;
    loft.get("/queues/work/messages")
        .await
        .expect(200, json!({"id": a, "body": "task-1", "receive_count": 1}));
    loft.get("/queues/work/messages")
        .await
        .expect(200, json!({"id": b, "body": "task-2", "receive_count": 1}));
    // Both are hidden for the default 30 s now.
    loft.get("/queues/work/messages")
        .await
        .expect(200, json!(null));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn receive_answers_the_oldest_visible_message_by_send_order() {
    // The seed selects `ORDER BY rowid`: of the visible messages, the one sent first, even
    // when a later one has been visible for longer.
    let loft = Loft::start();
    let a = loft.send_msg("work", "first").await;
    let b = loft.send_msg("work", "second").await;
    // Loft's clock has millisecond steps, and the receive below must fall on a later
    // millisecond than the sends for the order to be observable: wait for the clock to
    // move past the second send's millisecond.
    let now_ms = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis()
    };
    let sent_by = now_ms();
    assert!(
        crate::wait::until(Duration::from_secs(1), || async { now_ms() > sent_by }).await,
        "the clock stood still"
    );
    let m = loft
        .receive("work", "?visibility_timeout=0")
        .await
        .expect("msg");
    assert_eq!(m.id, a);
    let m = loft.receive("work", "").await.expect("msg");
    assert_eq!(
        (m.id.as_str(), m.receive_count),
        (a.as_str(), 2),
        "the oldest message ({a}) again, not {b}"
    );
    let m = loft.receive("work", "").await.expect("msg");
    assert_eq!(m.id, b);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_answers_204_and_the_message_is_gone() {
    let loft = Loft::start();
    let id = loft.send_msg("work", "task").await;
    // Received with visibility 0: it stays visible, so only the delete can make it go.
    let m = loft
        .receive("work", "?visibility_timeout=0")
        .await
        .expect("msg");
    assert_eq!(m.id, id);
    let again = loft
        .receive("work", "?visibility_timeout=0")
        .await
        .expect("still there before delete");
    assert_eq!((again.id.as_str(), again.receive_count), (id.as_str(), 2));
    let r = loft.delete(&format!("/queues/work/messages/{id}")).await;
    assert_eq!(r.status.as_u16(), 204);
    assert_eq!(r.text, "");
    assert_eq!(loft.receive("work", "?visibility_timeout=0").await, None);
    // Deleting again, an unknown id, or on an unknown queue: still 204.
    loft.ack("work", &id).await;
    loft.ack("work", "msg-999999").await;
    loft.ack("nope", "msg-1").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_on_another_queue_leaves_the_message() {
    let loft = Loft::start();
    let id = loft.send_msg("a", "mine").await;
    loft.post_empty("/queues/b").await;
    loft.ack("b", &id).await;
    let m = loft.receive("a", "").await.expect("still in a");
    assert_eq!(m.id, id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_visibility_timeout_setting_hides_received_messages_for_that_long() {
    let loft = Loft::start();
    loft.post_json("/queues/short", &json!({"visibility_timeout": 1}))
        .await
        .expect(
            201,
            json!({"name": "short", "dead_letter_queue": "", "max_receive_count": 5, "visibility_timeout": 1}),
        );
    let id = loft.send_msg("short", "x").await;
    assert_eq!(
        loft.receive("short", "").await.expect("msg").receive_count,
        1
    );
    assert_eq!(loft.receive("short", "").await, None);
    let m = loft
        .receive("short", "?wait_seconds=5")
        .await
        .expect("visible again after the queue's 1 s");
    assert_eq!((m.id, m.receive_count), (id, 2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn visibility_expiry_of_one_second_redelivers_to_a_long_poll() {
    let loft = Loft::start();
    let id = loft.send_msg("work", "task").await;
    let first = loft
        .receive("work", "?visibility_timeout=1")
        .await
        .expect("first receive");
    assert_eq!((first.id.as_str(), first.receive_count), (id.as_str(), 1));
    assert_eq!(
        loft.receive("work", "").await,
        None,
        "hidden right after receive"
    );
    let started = Instant::now();
    let again = loft
        .receive("work", "?wait_seconds=5")
        .await
        .expect("the long poll returns the message once it is visible again");
    assert_eq!(again.id, id);
    assert_eq!(again.body, "task");
    assert_eq!(again.receive_count, 2);
    // Woken by the expiry (about 1 s), not by the end of the 5 s wait.
    let took = started.elapsed();
    assert!(
        took < Duration::from_millis(4500),
        "long poll took {took:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_poll_wakes_on_send() {
    let loft = std::sync::Arc::new(Loft::start());
    loft.post_empty("/queues/work").await;
    let poller = {
        let loft = loft.clone();
        tokio::spawn(async move { loft.receive("work", "?wait_seconds=10").await })
    };
    // The queue is empty: a 1 s long poll of our own comes back null, by which time the
    // 10 s one is waiting at the server. It must still be waiting.
    assert_eq!(loft.receive("work", "?wait_seconds=1").await, None);
    assert!(!poller.is_finished(), "the 10 s long poll returned early");
    let sent_at = Instant::now();
    let id = loft.send_msg("work", "wake up").await;
    let got = tokio::time::timeout(Duration::from_secs(5), poller)
        .await
        .expect("the long poll did not wake within 5 s of the send")
        .expect("poller task")
        .expect("the long poll returned null");
    assert_eq!(got.id, id);
    assert_eq!(got.body, "wake up");
    assert_eq!(got.receive_count, 1);
    assert!(sent_at.elapsed() < Duration::from_secs(5));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_poll_on_a_queue_not_yet_created_wakes_on_the_send_that_creates_it() {
    // The seed's scheduler polls `jobs` before any producer has sent (and so created) it.
    let loft = std::sync::Arc::new(Loft::start());
    let poller = {
        let loft = loft.clone();
        tokio::spawn(async move {
            let started = Instant::now();
            (
                loft.receive("jobs", "?wait_seconds=3").await,
                started.elapsed(),
            )
        })
    };
    // Our own 1 s long poll on the missing queue must wait too (and find nothing).
    let started = Instant::now();
    assert_eq!(loft.receive("jobs", "?wait_seconds=1").await, None);
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(900),
        "wait_seconds=1 on a missing queue returned after {took:?}"
    );
    let id = loft.send_msg("jobs", r#"{"command":"run"}"#).await;
    let (got, _) = tokio::time::timeout(PATIENCE, poller)
        .await
        .expect("long poll finished")
        .expect("poller task");
    let got = got.expect("the long poll returned null instead of the message that arrived");
    assert_eq!(got.id, id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_poll_returns_null_after_the_wait_when_nothing_arrives() {
    let loft = Loft::start();
    loft.post_empty("/queues/idle").await;
    let started = Instant::now();
    assert_eq!(loft.receive("idle", "?wait_seconds=1").await, None);
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(900),
        "wait_seconds=1 returned after {took:?}"
    );
    assert!(took < PATIENCE, "wait_seconds=1 returned after {took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_letter_queue_receives_the_message_past_max_receive_count() {
    let loft = Loft::start();
    loft.post_json(
        "/queues/src",
        &json!({"dead_letter_queue": "src-dlq", "max_receive_count": 2}),
    )
    .await
    .expect(
        201,
        json!({"name": "src", "dead_letter_queue": "src-dlq", "max_receive_count": 2, "visibility_timeout": 30}),
    );
    let id = loft.send_msg("src", "poison").await;
    let mut counts = Vec::new();
    // Receive it, never acknowledge, until it leaves (bounded: it must leave).
    for _ in 0..10 {
        match loft.receive("src", "?visibility_timeout=0").await {
            Some(m) => {
                assert_eq!(m.id, id);
                counts.push(m.receive_count);
            }
            None => break,
        }
    }
    assert_eq!(
        counts,
        [1, 2],
        "returned exactly max_receive_count times, then moved"
    );
    assert_eq!(
        loft.receive("src", "?visibility_timeout=0").await,
        None,
        "gone from the source"
    );
    let dead = loft
        .receive("src-dlq", "?visibility_timeout=0")
        .await
        .expect("the message is in the dead-letter queue");
    assert_eq!(dead.id, id);
    assert_eq!(dead.body, "poison");
    assert_eq!(
        loft.receive("src", "?visibility_timeout=0").await,
        None,
        "still not in the source"
    );
    // It lives on in the DLQ like any message: acknowledge it there.
    loft.ack("src-dlq", &id).await;
    assert_eq!(loft.receive("src-dlq", "?visibility_timeout=0").await, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_concurrent_consumers_receive_each_of_60_messages_exactly_once() {
    let loft = std::sync::Arc::new(Loft::start());
    let mut sent = HashMap::new();
    for i in 0..60 {
        let body = format!("job-{i}");
        let id = loft.send_msg("work", &body).await;
        assert!(
            sent.insert(id.clone(), body).is_none(),
            "send returned {id} twice"
        );
    }
    let mut consumers = Vec::new();
    for _ in 0..8 {
        let loft = loft.clone();
        consumers.push(tokio::spawn(async move {
            let mut got = Vec::new();
            // Every message is sent already and held for the default 30 s once received,
            // so null means nothing is left for anyone.
            while let Some(m) = loft.receive("work", "").await {
                assert_eq!(m.receive_count, 1, "{m:?} redelivered");
                loft.ack("work", &m.id).await;
                got.push(m);
            }
            got
        }));
    }
    let mut ids = Vec::new();
    for c in consumers {
        for m in c.await.expect("consumer") {
            assert_eq!(Some(&m.body), sent.get(&m.id), "body of {}", m.id);
            ids.push(m.id);
        }
    }
    let distinct: HashSet<String> = ids.iter().cloned().collect();
    assert_eq!(ids.len(), 60, "received {} messages in all", ids.len());
    assert_eq!(distinct.len(), 60, "duplicates among {ids:?}");
    assert_eq!(distinct, sent.keys().cloned().collect::<HashSet<_>>());
    assert_eq!(loft.receive("work", "?visibility_timeout=0").await, None);
}

#[tokio::test]
async fn fifo_names_and_fifo_dead_letter_queues_are_refused() {
    let loft = Loft::start();
    // The seeds' API makes standard queues only.
    loft.post_empty("/queues/x.fifo").await.expect_error(400);
    loft.post_json("/queues/x.fifo/messages", &json!({"body": "b"}))
        .await
        .expect_error(400);
    // A FIFO queue made through SQS cannot be a standard queue's dead-letter queue.
    let created = loft
        .send(
            loft.http
                .post(loft.url("/"))
                .header("x-amz-target", "AmazonSQS.CreateQueue")
                .header("content-type", "application/x-amz-json-1.0")
                .body(r#"{"QueueName":"d.fifo","Attributes":{"FifoQueue":"true"}}"#),
        )
        .await;
    assert_eq!(created.status, 200);
    loft.post_json(
        "/queues/src",
        &json!({"dead_letter_queue": "d.fifo", "max_receive_count": 1}),
    )
    .await
    .expect_error(400);
    assert_eq!(loft.names("/queues").await, vec!["d.fifo".to_string()]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seed_names_with_url_characters_get_queue_urls_that_reach_them() {
    let loft = Loft::start();
    let sqs = crate::common::sqs_client(&loft.base);
    // `?` and `#` would end a URL's path; `%` and a space must not be read as escapes.
    for name in ["qa?b", "qa#b", "100% sure", "caf\u{e9}"] {
        let path = format!(
            "/queues/{}",
            name.replace('%', "%25")
                .replace('?', "%3F")
                .replace('#', "%23")
                .replace(' ', "%20")
                .replace('\u{e9}', "%C3%A9")
        );
        let made = loft.post_empty(&path).await;
        assert_eq!(made.status.as_u16(), 201, "{name}: {}", made.text);
        assert_eq!(made.json()["name"], name);
        let url = sqs
            .get_queue_url()
            .queue_name(name)
            .send()
            .await
            .unwrap()
            .queue_url
            .unwrap();
        assert!(!url.contains(['?', '#', ' ']), "{url}");
        sqs.send_message()
            .queue_url(&url)
            .message_body(format!("for {name}"))
            .send()
            .await
            .unwrap();
        // The seeds' API reads it from the queue of that name, not from `qa`.
        let got = loft.get(&format!("{path}/messages")).await;
        assert_eq!(got.status.as_u16(), 200, "{}", got.text);
        assert_eq!(got.json()["body"], format!("for {name}"), "{url}");
        let listed = sqs.list_queues().send().await.unwrap().queue_urls.unwrap();
        assert!(listed.contains(&url), "{listed:?} lacks {url}");
    }
    assert!(sqs.get_queue_url().queue_name("qa").send().await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queue_cannot_be_its_own_dead_letter_queue_nor_count_past_1000() {
    let loft = Loft::start();
    loft.post_json(
        "/queues/loop",
        &json!({"dead_letter_queue": "loop", "max_receive_count": 3}),
    )
    .await
    .expect_error(400);
    loft.post_json(
        "/queues/many",
        &json!({"dead_letter_queue": "many-dlq", "max_receive_count": 5000}),
    )
    .await
    .expect_error(400);
    // Nothing was made by the refusals: the names are free for their settings.
    loft.get("/queues").await.expect(200, json!([]));
    loft.post_json(
        "/queues/many",
        &json!({"dead_letter_queue": "many-dlq", "max_receive_count": 1000}),
    )
    .await
    .expect(
        201,
        json!({"name": "many", "dead_letter_queue": "many-dlq", "max_receive_count": 1000, "visibility_timeout": 30}),
    );
}
