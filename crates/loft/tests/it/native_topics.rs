//! The topic rows of docs/seeds-api.md's table, and fan-out to several endpoints.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::{dead_endpoint, seq_of, Loft, Recorded, Sink};

/// Asserts `r` is the seeds' delivery of `message` on `topic` to `path`:
/// `POST path` with a JSON body that is exactly `{"topic", "message"}`.
#[track_caller]
pub fn assert_delivery(r: &Recorded, path: &str, topic: &str, message: &str) {
    assert_eq!(r.method, "POST");
    assert_eq!(r.path, path);
    let ct = r
        .headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    assert!(ct.starts_with("application/json"), "content-type {ct:?}");
    assert_eq!(r.json(), json!({"topic": topic, "message": message}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_topic_answers_201_with_the_name_and_is_idempotent() {
    let loft = Loft::start();
    loft.post_empty("/topics/orders")
        .await
        .expect(201, json!({"name": "orders"}));
    loft.post_empty("/topics/orders")
        .await
        .expect(201, json!({"name": "orders"}));
    // The seed's Lambda creates its topic with Content-Type: application/json and no body.
    loft.post_raw("/topics/orders", "")
        .await
        .expect(201, json!({"name": "orders"}));
    assert_eq!(loft.names("/topics").await, ["orders"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_topics_answers_the_names() {
    let loft = Loft::start();
    loft.get("/topics").await.expect(200, json!([]));
    for name in ["job-status", "instance-launch", "s3:ObjectCreated"] {
        loft.post_empty(&format!("/topics/{name}"))
            .await
            .expect(201, json!({ "name": name }));
    }
    assert_eq!(
        loft.names("/topics").await,
        ["instance-launch", "job-status", "s3:ObjectCreated"]
    );
    // Topics and queues are separate name spaces.
    assert_eq!(loft.names("/queues").await, Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscribe_answers_201_with_rising_sub_ids() {
    let loft = Loft::start();
    loft.post_empty("/topics/events").await;
    let r = loft
        .post_json(
            "/topics/events/subscribe",
            &json!({"endpoint": "http://127.0.0.1:9/a"}),
        )
        .await;
    r.expect(201, json!({"id": "sub-1"}));
    let mut last = 1;
    for ep in ["http://127.0.0.1:9/b", "http://127.0.0.1:9/c"] {
        let n = seq_of(&loft.subscribe("events", ep).await, "sub-");
        assert!(n > last, "sub-{n} after sub-{last}");
        last = n;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publish_without_subscribers_delivers_to_none() {
    let loft = Loft::start();
    loft.post_empty("/topics/quiet").await;
    loft.post_json("/topics/quiet/publish", &json!({"message": "hello"}))
        .await
        .expect(200, json!({"delivered": 0}));
    // A topic nobody created has no subscribers either.
    loft.post_json("/topics/nowhere/publish", &json!({"message": "hello"}))
        .await
        .expect(200, json!({"delivered": 0}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publish_posts_topic_and_message_json_to_each_endpoint() {
    let loft = Loft::start();
    let mut a = Sink::start().await;
    let mut b = Sink::start().await;
    loft.post_empty("/topics/job-status").await;
    loft.subscribe("job-status", &a.url("/hook-a")).await;
    loft.subscribe("job-status", &b.url("/hooks/b")).await;
    let message = r#"{"job_id":"job-7","status":"done"}"#;
    loft.post_json("/topics/job-status/publish", &json!({ "message": message }))
        .await
        .expect(200, json!({"delivered": 2}));
    assert_delivery(&a.next().await, "/hook-a", "job-status", message);
    assert_delivery(&b.next().await, "/hooks/b", "job-status", message);
    // A second publish reaches both again, with its own message.
    assert_eq!(loft.publish("job-status", "second").await, 2);
    assert_delivery(&a.next().await, "/hook-a", "job-status", "second");
    assert_delivery(&b.next().await, "/hooks/b", "job-status", "second");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publish_reaches_only_the_subscribers_of_its_topic() {
    let loft = Loft::start();
    let mut a = Sink::start().await;
    let mut b = Sink::start().await;
    loft.post_empty("/topics/one").await;
    loft.post_empty("/topics/two").await;
    loft.subscribe("one", &a.url("/one")).await;
    loft.subscribe("two", &b.url("/two")).await;
    assert_eq!(loft.publish("one", "for one").await, 1);
    assert_eq!(loft.publish("two", "for two").await, 1);
    // Each sink's first delivery is its own topic's message: the other never went there.
    assert_delivery(&a.next().await, "/one", "one", "for one");
    assert_delivery(&b.next().await, "/two", "two", "for two");
}

/// A publish answers without waiting for its deliveries: well under the 15 s per-attempt
/// timeout (`loft_server::delivery::ATTEMPT_TIMEOUT_SECS`) that waiting on an endpoint that
/// never answers would take, with room for a loaded machine.
const PUBLISH_BOUND: Duration = Duration::from_secs(10);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fan_out_to_three_endpoints_with_one_down_reaches_the_two_live_ones() {
    let loft = Loft::start();
    let mut a = Sink::start().await;
    let mut b = Sink::start().await;
    let down = format!("http://{}/gone", dead_endpoint());
    loft.post_empty("/topics/fan").await;
    loft.subscribe("fan", &a.url("/a")).await;
    loft.subscribe("fan", &down).await;
    loft.subscribe("fan", &b.url("/b")).await;
    let started = Instant::now();
    loft.post_json("/topics/fan/publish", &json!({"message": "to all"}))
        .await
        .expect(200, json!({"delivered": 3}));
    let took = started.elapsed();
    assert!(took < PUBLISH_BOUND, "publish took {took:?}");
    assert_delivery(&a.next().await, "/a", "fan", "to all");
    assert_delivery(&b.next().await, "/b", "fan", "to all");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endpoint_that_never_answers_delays_neither_publish_nor_the_others() {
    let loft = Loft::start();
    let mut live = Sink::start().await;
    // Accepts connections (the kernel's backlog) but never reads nor answers.
    let hang = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let hang_url = format!("http://{}/slow", hang.local_addr().expect("addr"));
    loft.post_empty("/topics/t").await;
    loft.subscribe("t", &hang_url).await;
    loft.subscribe("t", &live.url("/live")).await;
    for i in 0..3 {
        let message = format!("m{i}");
        let started = Instant::now();
        assert_eq!(loft.publish("t", &message).await, 2);
        let took = started.elapsed();
        assert!(took < PUBLISH_BOUND, "publish took {took:?}");
        assert_delivery(&live.next().await, "/live", "t", &message);
    }
    drop(hang);
}

#[tokio::test]
async fn publishing_an_empty_message_is_refused() {
    let loft = Loft::start();
    loft.post_empty("/topics/t").await;
    loft.post_json("/topics/t/publish", &json!({"message": ""}))
        .await
        .expect_error(400);
}
