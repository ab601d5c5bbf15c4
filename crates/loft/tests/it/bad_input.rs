//! Bad requests: each answers its 4xx status with a JSON `{"error": "..."}` body, and none
//! of them changes anything stored.

use serde_json::json;

use crate::common::{Loft, Sink};
use crate::native_topics::assert_delivery;

const MIB: usize = 1024 * 1024;

/// `{"body": "xxx…"}` whose whole JSON text is `total` bytes.
fn send_body_of(total: usize) -> String {
    let overhead = r#"{"body":""}"#.len();
    format!(r#"{{"body":"{}"}}"#, "x".repeat(total - overhead))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_bad_input_answers_a_json_error_and_changes_nothing() {
    let loft = Loft::start();
    let mut sink = Sink::start().await;

    // What is stored before: two queues, two pending messages, one topic with one
    // subscriber.
    loft.post_json("/queues/q", &json!({"visibility_timeout": 30}))
        .await;
    loft.post_empty("/queues/other").await;
    let one = loft.send_msg("q", "one").await;
    let two = loft.send_msg("q", "two").await;
    loft.post_empty("/topics/t").await;
    loft.subscribe("t", &sink.url("/hook")).await;
    let queues = loft.names("/queues").await;
    let topics = loft.names("/topics").await;
    assert_eq!(queues, ["other", "q"]);
    assert_eq!(topics, ["t"]);

    let big = send_body_of(MIB + 1);
    let big_publish = format!(r#"{{"message":"{}"}}"#, "x".repeat(MIB));
    let big_create = format!(r#"{{"dead_letter_queue":"{}"}}"#, "x".repeat(MIB));

    // (what, method, path, body or None for no body, expected status)
    let cases: Vec<(&str, &str, &str, Option<String>, u16)> = vec![
        // Send.
        (
            "malformed JSON",
            "POST",
            "/queues/q/messages",
            Some(r#"{"body": "#.into()),
            400,
        ),
        (
            "not JSON at all",
            "POST",
            "/queues/new-a/messages",
            Some("hello".into()),
            400,
        ),
        (
            "body is a number",
            "POST",
            "/queues/q/messages",
            Some(r#"{"body": 5}"#.into()),
            400,
        ),
        (
            "body is null",
            "POST",
            "/queues/q/messages",
            Some(r#"{"body": null}"#.into()),
            400,
        ),
        (
            "body is an array",
            "POST",
            "/queues/new-b/messages",
            Some(r#"{"body": ["a"]}"#.into()),
            400,
        ),
        (
            "no body field",
            "POST",
            "/queues/q/messages",
            Some("{}".into()),
            400,
        ),
        (
            "empty request body",
            "POST",
            "/queues/q/messages",
            None,
            400,
        ),
        (
            "empty request body, new queue",
            "POST",
            "/queues/new-c/messages",
            None,
            400,
        ),
        (
            "whitespace request body",
            "POST",
            "/queues/q/messages",
            Some("  \n".into()),
            400,
        ),
        (
            "empty message body",
            "POST",
            "/queues/q/messages",
            Some(r#"{"body": ""}"#.into()),
            400,
        ),
        (
            "empty message body, new queue",
            "POST",
            "/queues/new-d/messages",
            Some(r#"{"body": ""}"#.into()),
            400,
        ),
        (
            "send over 1 MiB",
            "POST",
            "/queues/q/messages",
            Some(big.clone()),
            413,
        ),
        (
            "send over 1 MiB, new queue",
            "POST",
            "/queues/new-e/messages",
            Some(big),
            413,
        ),
        // Create queue.
        (
            "create: malformed JSON",
            "POST",
            "/queues/new-f",
            Some("{".into()),
            400,
        ),
        (
            "create: max_receive_count a string",
            "POST",
            "/queues/new-g",
            Some(r#"{"max_receive_count": "five"}"#.into()),
            400,
        ),
        (
            "create: dead_letter_queue a number",
            "POST",
            "/queues/new-h",
            Some(r#"{"dead_letter_queue": 7}"#.into()),
            400,
        ),
        (
            "create: visibility_timeout too large",
            "POST",
            "/queues/new-i",
            Some(r#"{"visibility_timeout": 43201}"#.into()),
            400,
        ),
        (
            "create: visibility_timeout negative",
            "POST",
            "/queues/new-j",
            Some(r#"{"visibility_timeout": -1}"#.into()),
            400,
        ),
        (
            "create over 1 MiB",
            "POST",
            "/queues/new-k",
            Some(big_create),
            413,
        ),
        // Receive.
        (
            "receive: visibility_timeout not a number",
            "GET",
            "/queues/q/messages?visibility_timeout=abc",
            None,
            400,
        ),
        (
            "receive: visibility_timeout negative",
            "GET",
            "/queues/q/messages?visibility_timeout=-1",
            None,
            400,
        ),
        (
            "receive: visibility_timeout too large",
            "GET",
            "/queues/q/messages?visibility_timeout=43201",
            None,
            400,
        ),
        (
            "receive: wait_seconds too large",
            "GET",
            "/queues/q/messages?wait_seconds=21",
            None,
            400,
        ),
        (
            "receive: wait_seconds negative",
            "GET",
            "/queues/q/messages?wait_seconds=-1",
            None,
            400,
        ),
        // Subscribe.
        (
            "subscribe: no endpoint",
            "POST",
            "/topics/t/subscribe",
            Some("{}".into()),
            400,
        ),
        (
            "subscribe: no endpoint, new topic",
            "POST",
            "/topics/new-t/subscribe",
            Some("{}".into()),
            400,
        ),
        (
            "subscribe: empty request body",
            "POST",
            "/topics/t/subscribe",
            None,
            400,
        ),
        (
            "subscribe: empty endpoint",
            "POST",
            "/topics/t/subscribe",
            Some(r#"{"endpoint": ""}"#.into()),
            400,
        ),
        (
            "subscribe: endpoint a number",
            "POST",
            "/topics/t/subscribe",
            Some(r#"{"endpoint": 5}"#.into()),
            400,
        ),
        (
            "subscribe: malformed JSON",
            "POST",
            "/topics/t/subscribe",
            Some(r#"{"endpoint": "http://"#.into()),
            400,
        ),
        // Publish.
        (
            "publish: malformed JSON",
            "POST",
            "/topics/t/publish",
            Some(r#"{"message": "#.into()),
            400,
        ),
        (
            "publish: message a number",
            "POST",
            "/topics/t/publish",
            Some(r#"{"message": 5}"#.into()),
            400,
        ),
        (
            "publish: no message field",
            "POST",
            "/topics/t/publish",
            Some("{}".into()),
            400,
        ),
        (
            "publish: empty request body",
            "POST",
            "/topics/t/publish",
            None,
            400,
        ),
        (
            "publish over 1 MiB",
            "POST",
            "/topics/t/publish",
            Some(big_publish),
            413,
        ),
        // Unknown routes.
        ("unknown route", "GET", "/nope", None, 404),
        ("root", "GET", "/", None, 404),
        ("singular queue", "POST", "/queue/q", None, 404),
        (
            "too deep",
            "GET",
            "/queues/q/messages/msg-1/extra",
            None,
            404,
        ),
        (
            "unknown topic action",
            "POST",
            "/topics/t/unsubscribe",
            Some("{}".into()),
            404,
        ),
        // Wrong methods.
        ("PUT a queue", "PUT", "/queues/q", None, 405),
        ("GET a queue", "GET", "/queues/q", None, 405),
        ("DELETE a queue", "DELETE", "/queues/q", None, 405),
        ("POST the queue list", "POST", "/queues", None, 405),
        (
            "DELETE all messages",
            "DELETE",
            "/queues/q/messages",
            None,
            405,
        ),
        (
            "POST to a message",
            "POST",
            "/queues/q/messages/msg-1",
            Some("{}".into()),
            405,
        ),
        (
            "GET a message",
            "GET",
            "/queues/q/messages/msg-1",
            None,
            405,
        ),
        ("POST health", "POST", "/health", None, 405),
        ("DELETE the topic list", "DELETE", "/topics", None, 405),
        ("DELETE a topic", "DELETE", "/topics/t", None, 405),
        ("GET subscribe", "GET", "/topics/t/subscribe", None, 405),
        ("GET publish", "GET", "/topics/t/publish", None, 405),
    ];

    for (what, method, path, body, status) in &cases {
        let mut req = loft
            .http
            .request(method.parse().expect("method"), loft.url(path));
        if let Some(b) = body {
            req = req
                .header("content-type", "application/json")
                .body(b.clone());
        }
        let r = loft.send(req).await;
        assert_eq!(
            r.status.as_u16(),
            *status,
            "{what}: {method} {path} answered {} {:?}",
            r.status,
            r.text.chars().take(200).collect::<String>()
        );
        // Same checks as Resp::expect_error, with the case named.
        let ct = r
            .headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        assert!(
            ct.starts_with("application/json"),
            "{what}: content-type {ct:?}"
        );
        let v: serde_json::Value = serde_json::from_str(&r.text)
            .unwrap_or_else(|e| panic!("{what}: error body is not JSON ({e}): {:?}", r.text));
        let obj = v.as_object().unwrap_or_else(|| panic!("{what}: {v}"));
        assert_eq!(obj.len(), 1, "{what}: error body {v}");
        assert!(
            obj.get("error")
                .and_then(|e| e.as_str())
                .is_some_and(|e| !e.is_empty()),
            "{what}: error body {v}"
        );
    }

    // Nothing changed: the same queues and topics, no queue or topic created by a bad
    // request...
    assert_eq!(loft.names("/queues").await, queues);
    assert_eq!(loft.names("/topics").await, topics);
    // ...the same single subscription, and no bad publish delivered anything...
    assert_eq!(loft.publish("t", "good").await, 1);
    assert_delivery(&sink.next().await, "/hook", "t", "good");
    assert!(sink.try_next().is_none());
    // ...and the same two messages, never received (no bad receive claimed one, no bad
    // send added one, no wrong-method request deleted one).
    let mut got = Vec::new();
    while let Some(m) = loft.receive("q", "?visibility_timeout=60").await {
        got.push((m.id, m.body, m.receive_count));
    }
    got.sort();
    let mut want = vec![(one, "one".to_owned(), 1), (two, "two".to_owned(), 1)];
    want.sort();
    assert_eq!(got, want);
    assert_eq!(loft.receive("other", "").await, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_of_exactly_1_mib_is_accepted() {
    let loft = Loft::start();
    let body = send_body_of(MIB);
    assert_eq!(body.len(), MIB);
    let r = loft.post_raw("/queues/big/messages", body.clone()).await;
    assert_eq!(r.status.as_u16(), 201, "{}", r.text);
    let m = loft.receive("big", "").await.expect("the big message");
    assert_eq!(m.body.len(), MIB - r#"{"body":""}"#.len());
    assert!(m.body.bytes().all(|b| b == b'x'));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn receive_from_an_unknown_queue_with_bad_parameters_is_still_400() {
    let loft = Loft::start();
    loft.get("/queues/nope/messages?wait_seconds=99")
        .await
        .expect_error(400);
    loft.get("/queues/nope/messages?visibility_timeout=x")
        .await
        .expect_error(400);
    assert_eq!(loft.names("/queues").await, Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_json_array_instead_of_an_object_is_400_and_changes_nothing() {
    let loft = Loft::start();
    let mut sink = Sink::start().await;
    loft.post_empty("/topics/t").await;
    loft.subscribe("t", &sink.url("/hook")).await;
    let cases = [
        ("/queues/q/messages", r#"["one"]"#),
        ("/queues/q2", r#"["dlq", 3, 10]"#),
        ("/topics/t/subscribe", r#"["http://127.0.0.1:9/x"]"#),
        ("/topics/t/publish", r#"["hello"]"#),
    ];
    let mut wrong = Vec::new();
    for (path, body) in cases {
        let r = loft.post_raw(path, body).await;
        if r.status.as_u16() != 400 {
            wrong.push(format!("POST {path} {body} -> {} {}", r.status, r.text));
        }
    }
    assert!(wrong.is_empty(), "accepted: {wrong:#?}");
    assert_eq!(loft.names("/queues").await, Vec::<String>::new());
    assert_eq!(loft.publish("t", "good").await, 1);
    assert_delivery(&sink.next().await, "/hook", "t", "good");
}

/// A `\u` escape naming half of a surrogate pair is not a character (RFC 8259, 8.2): the
/// body is refused with a `{"error"}` that says so, not serde's "hex escape" words, and
/// nothing is sent; a complete surrogate pair is a character and is accepted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lone_surrogate_escape_is_400_with_a_clear_error() {
    let loft = Loft::start();
    for body in [r#"{"body":"\ud800"}"#, r#"{"body":"x\udc00y"}"#] {
        let r = loft.post_raw("/queues/q/messages", body).await;
        assert_eq!(r.status.as_u16(), 400, "{body}: {}", r.text);
        let v: serde_json::Value = serde_json::from_str(&r.text).expect("JSON error");
        let error = v["error"].as_str().expect("an error string");
        assert!(error.contains("lone UTF-16 surrogate"), "{body}: {error}");
        assert!(!error.contains("hex escape"), "{body}: {error}");
    }
    assert_eq!(loft.names("/queues").await, Vec::<String>::new());
    let r = loft
        .post_raw("/queues/q/messages", r#"{"body":"\ud83d\ude00"}"#)
        .await;
    assert_eq!(r.status.as_u16(), 201, "{}", r.text);
}
