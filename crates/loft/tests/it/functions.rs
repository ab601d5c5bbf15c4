//! Functions as consumers against a real Loft process: a function host the test runs (a
//! plain HTTP handler and the Lambda Invoke API on one server), functions, a topic's
//! `lambda` subscription and event source mappings from the config file, messages sent with
//! aws-sdk-sqs and aws-sdk-sns. Waiting is for conditions (a deadline, never a fixed sleep).
//!
//! Scenarios: SNS to a function with a failing first attempt; a queue of 1,000
//! messages drained by a mapping with batch size 10 and partial failures, every message
//! processed at least once and the failures dead-lettered after maxReceiveCount, with a
//! restart in the middle; a FIFO mapping keeping group order.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::{json, Value};

use crate::common::{sns_client, sqs_client, Loft};

/// How long a scenario may take to settle.
const SETTLE: Duration = Duration::from_secs(90);

#[derive(Clone, Default)]
struct Host {
    /// Every event received, with the path it came on.
    events: Arc<Mutex<Vec<(String, Value)>>>,
    /// Statuses to answer first on the Invoke API route (then 200).
    script: Arc<Mutex<VecDeque<u16>>>,
    /// The `X-Amz-Invocation-Type` of every call ("" without one), in call order.
    invocation_types: Arc<Mutex<Vec<String>>>,
}

/// The handler: an SQS batch gets a partial batch response naming every record whose body
/// starts with `fail`; anything else an empty success.
async fn handle(State(h): State<Host>, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let event: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    h.invocation_types.lock().unwrap().push(
        headers
            .get("x-amz-invocation-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned(),
    );
    h.events
        .lock()
        .unwrap()
        .push((uri.path().to_owned(), event.clone()));
    if uri.path().starts_with("/2015-03-31/") {
        if let Some(status) = h.script.lock().unwrap().pop_front() {
            return (StatusCode::from_u16(status).unwrap(), "{}").into_response();
        }
    }
    let failures: Vec<Value> = event["Records"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["eventSource"] == "aws:sqs")
        .filter(|r| r["body"].as_str().is_some_and(|b| b.starts_with("fail")))
        .map(|r| json!({"itemIdentifier": r["messageId"]}))
        .collect();
    Json(json!({"batchItemFailures": failures})).into_response()
}

struct Json(Value);

impl IntoResponse for Json {
    fn into_response(self) -> Response {
        ([("content-type", "application/json")], self.0.to_string()).into_response()
    }
}

async fn start_host() -> (Host, SocketAddr) {
    let host = Host::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind the function host");
    let addr = listener.local_addr().expect("host address");
    let app = Router::new().fallback(handle).with_state(host.clone());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (host, addr)
}

/// Writes `config` to a file in a new directory; returns both (keep the directory).
fn config_file(config: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("loft.toml");
    std::fs::write(&path, config).expect("write the config file");
    (dir, path.to_string_lossy().into_owned())
}

/// Waits until `done` holds, at most [`SETTLE`]; panics with `what` otherwise.
async fn until(what: &str, mut done: impl FnMut() -> bool) {
    let held = crate::wait::until(SETTLE, || std::future::ready(done())).await;
    assert!(held, "timed out waiting for {what}");
}

fn sqs_bodies(events: &[(String, Value)]) -> Vec<(String, i64)> {
    events
        .iter()
        .flat_map(|(_, e)| e["Records"].as_array().cloned().unwrap_or_default())
        .filter(|r| r["eventSource"] == "aws:sqs")
        .map(|r| {
            (
                r["body"].as_str().unwrap_or_default().to_owned(),
                r["attributes"]["ApproximateReceiveCount"]
                    .as_str()
                    .and_then(|c| c.parse().ok())
                    .unwrap_or(0),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sns_invokes_a_function_through_the_invoke_api_after_a_throttled_first_attempt() {
    let (host, addr) = start_host().await;
    host.script.lock().unwrap().push_back(429);
    let (_dir, path) = config_file(&format!(
        r#"
[[functions]]
name = "greeter"
invoke_endpoint = "http://{addr}"
timeout_seconds = 5

[[topics]]
name = "greetings"
[[topics.subscriptions]]
protocol = "lambda"
endpoint = "arn:aws:lambda:us-east-1:000000000000:function:greeter"
"#
    ));
    let loft = Loft::start_with(&["--config", &path]);
    let sns = sns_client(&loft.base);
    let id = sns
        .publish()
        .topic_arn("arn:aws:sns:us-east-1:000000000000:greetings")
        .message("hello, function")
        .subject("hi")
        .send()
        .await
        .expect("publish")
        .message_id
        .expect("MessageId");
    until("the retry after the throttle", || {
        host.events.lock().unwrap().len() >= 2
    })
    .await;
    let events = host.events.lock().unwrap().clone();
    assert_eq!(events.len(), 2, "one throttled attempt, one that ran");
    assert_eq!(events[0].0, "/2015-03-31/functions/greeter/invocations");
    assert_eq!(
        *host.invocation_types.lock().unwrap(),
        ["Event", "Event"],
        "SNS invokes asynchronously, as AWS"
    );
    assert_eq!(events[0].1, events[1].1, "the same event both times");
    let r = &events[1].1["Records"][0];
    assert_eq!(r["EventSource"], "aws:sns");
    assert_eq!(r["Sns"]["MessageId"], id);
    assert_eq!(r["Sns"]["Message"], "hello, function");
    assert_eq!(r["Sns"]["Subject"], "hi");
    assert_eq!(
        r["Sns"]["TopicArn"],
        "arn:aws:sns:us-east-1:000000000000:greetings"
    );
    assert!(r["EventSubscriptionArn"]
        .as_str()
        .is_some_and(|a| a.starts_with("arn:aws:sns:us-east-1:000000000000:greetings:")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mapping_drains_a_thousand_messages_with_partial_failures_across_a_restart() {
    let (host, addr) = start_host().await;
    let (_dir, path) = config_file(&format!(
        r#"
[[functions]]
name = "worker"
url = "http://{addr}/handler"
timeout_seconds = 10

[[queues]]
name = "work-dlq"

[[queues]]
name = "work"
attributes = {{ VisibilityTimeout = "1", RedrivePolicy = {{ maxReceiveCount = 2, deadLetterTargetArn = "arn:aws:sqs:us-east-1:000000000000:work-dlq" }} }}

[[event_source_mappings]]
function = "worker"
queue = "work"
batch_size = 10
function_response_types = ["ReportBatchItemFailures"]
"#
    ));
    let mut loft = Loft::start_with(&["--config", &path]);
    let sqs = sqs_client(&loft.base);
    let url = format!("{}/000000000000/work", loft.base);
    let mut sent = Vec::new();
    for batch in 0..100 {
        let mut req = sqs.send_message_batch().queue_url(&url);
        for i in 0..10 {
            let n = batch * 10 + i;
            let body = if n % 50 == 7 {
                format!("fail-{n}")
            } else {
                format!("ok-{n}")
            };
            req = req.entries(
                aws_sdk_sqs::types::SendMessageBatchRequestEntry::builder()
                    .id(format!("e{i}"))
                    .message_body(&body)
                    .build()
                    .unwrap(),
            );
            sent.push(body);
        }
        let out = req.send().await.expect("send batch");
        assert!(out.failed.is_empty());
    }
    // A restart in the middle: once some batches ran, stop gracefully and start again.
    until("the first batches", || {
        sqs_bodies(&host.events.lock().unwrap()).len() >= 200
    })
    .await;
    loft.restart();
    let ok: Vec<String> = sent
        .iter()
        .filter(|b| b.starts_with("ok"))
        .cloned()
        .collect();
    let failing: Vec<String> = sent
        .iter()
        .filter(|b| b.starts_with("fail"))
        .cloned()
        .collect();
    assert_eq!(failing.len(), 20);
    until("every message processed at least once", || {
        let seen: std::collections::HashSet<String> = sqs_bodies(&host.events.lock().unwrap())
            .into_iter()
            .map(|(b, _)| b)
            .collect();
        sent.iter().all(|b| seen.contains(b))
    })
    .await;
    // Every batch held at most 10 records.
    for (p, e) in host.events.lock().unwrap().iter() {
        assert_eq!(p, "/handler");
        let n = e["Records"].as_array().map_or(0, Vec::len);
        assert!((1..=10).contains(&n), "a batch of {n}");
    }
    // The failures reach the dead-letter queue after their second receive.
    let sqs = sqs_client(&loft.base);
    let dlq = format!("{}/000000000000/work-dlq", loft.base);
    let mut dead: Vec<String> = Vec::new();
    let start = Instant::now();
    while dead.len() < failing.len() {
        assert!(
            start.elapsed() < SETTLE,
            "dead-lettered {} of {}",
            dead.len(),
            failing.len()
        );
        let got = sqs
            .receive_message()
            .queue_url(&dlq)
            .max_number_of_messages(10)
            .wait_time_seconds(1)
            .visibility_timeout(600)
            .send()
            .await
            .expect("receive from the DLQ");
        dead.extend(
            got.messages()
                .iter()
                .filter_map(|m| m.body().map(str::to_owned)),
        );
    }
    dead.sort();
    let mut expected = failing.clone();
    expected.sort();
    assert_eq!(
        dead, expected,
        "exactly the reported failures are dead-lettered"
    );
    let seen = sqs_bodies(&host.events.lock().unwrap());
    let mut counts: HashMap<&str, Vec<i64>> = HashMap::new();
    for (b, c) in &seen {
        counts.entry(b.as_str()).or_default().push(*c);
    }
    for f in &failing {
        let c = &counts[f.as_str()];
        assert!(c.contains(&1) && c.contains(&2), "{f} received {c:?}");
        assert!(!c.contains(&3), "{f} invoked past maxReceiveCount: {c:?}");
    }
    // Nothing is left in the queue: the successes were deleted.
    let queue_attributes = || async {
        let attrs = sqs
            .get_queue_attributes()
            .queue_url(&url)
            .attribute_names(aws_sdk_sqs::types::QueueAttributeName::All)
            .send()
            .await
            .expect("attributes");
        let attrs: BTreeMap<String, String> = attrs
            .attributes()
            .into_iter()
            .flatten()
            .map(|(k, v)| (k.as_str().to_owned(), v.clone()))
            .collect();
        attrs
    };
    let emptied = crate::wait::until(SETTLE, || async {
        let attrs = queue_attributes().await;
        attrs["ApproximateNumberOfMessages"] == "0"
            && attrs["ApproximateNumberOfMessagesNotVisible"] == "0"
    })
    .await;
    assert!(
        emptied,
        "the queue did not empty: {:?}",
        queue_attributes().await
    );
    // Each success was processed; the restart may have repeated a batch in flight, but
    // none was lost.
    for b in &ok {
        assert!(counts.contains_key(b.as_str()), "{b} never processed");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fifo_mapping_invokes_each_group_in_order() {
    let (host, addr) = start_host().await;
    let (_dir, path) = config_file(&format!(
        r#"
[[functions]]
name = "ordered"
url = "http://{addr}/handler"

[[queues]]
name = "orders.fifo"
attributes = {{ FifoQueue = "true", ContentBasedDeduplication = "true" }}

[[event_source_mappings]]
function = "ordered"
queue = "orders.fifo"
batch_size = 5
maximum_concurrency = 3
"#
    ));
    let loft = Loft::start_with(&["--config", &path]);
    let sqs = sqs_client(&loft.base);
    let url = format!("{}/000000000000/orders.fifo", loft.base);
    let groups = ["a", "b", "c"];
    for n in 0..40 {
        for g in groups {
            sqs.send_message()
                .queue_url(&url)
                .message_group_id(g)
                .message_body(format!("{g}-{n}"))
                .send()
                .await
                .expect("send");
        }
    }
    until("every message", || {
        sqs_bodies(&host.events.lock().unwrap()).len() >= 120
    })
    .await;
    let seen = sqs_bodies(&host.events.lock().unwrap());
    assert_eq!(seen.len(), 120, "each message once: no failure, no timeout");
    for g in groups {
        let order: Vec<String> = seen
            .iter()
            .filter(|(b, _)| b.starts_with(&format!("{g}-")))
            .map(|(b, _)| b.clone())
            .collect();
        let expected: Vec<String> = (0..40).map(|n| format!("{g}-{n}")).collect();
        assert_eq!(order, expected, "group {g} in send order");
    }
}

/// boto3's lambda client and the AWS CLI against Loft's Lambda API
/// (`tests/lambda_boto3.py`): needs python3 with boto3 and `aws`, installed by `.ci/run`
/// (which sets `LOFT_REQUIRE_FUNCTION_HOSTS`, so there a missing one fails the test).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn boto3_and_the_aws_cli_drive_the_event_source_mapping_api() {
    let have = std::process::Command::new("python3")
        .args(["-c", "import boto3"])
        .status()
        .is_ok_and(|s| s.success())
        && std::process::Command::new("aws")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
    if !have {
        let note = "python3 with boto3 and the AWS CLI are needed (pip install boto3 awscli)";
        return crate::skips::function_hosts(Some(note.to_owned()))
            .skip("functions::boto3_and_the_aws_cli_drive_the_event_source_mapping_api");
    }
    let (_host, addr) = start_host().await;
    let (_dir, path) = config_file(&format!(
        r#"
[[functions]]
name = "api-fn"
url = "http://{addr}/handler"

[[queues]]
name = "api-q"
"#
    ));
    let loft = Loft::start_with(&["--config", &path]);
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/lambda_boto3.py");
    let base = loft.base.clone();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new("python3")
            .args([
                script,
                "--endpoint",
                &base,
                "--function",
                "api-fn",
                "--queue",
                "api-q",
            ])
            .output()
            .expect("run tests/lambda_boto3.py")
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("4 passed, 0 failed"), "{stdout}");
}

/// The console's `GET /_loft/mappings`: each mapping's state and who polls it, following a
/// pause through the Lambda API.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_lists_mappings_with_their_state_and_poller() {
    let (_host, addr) = start_host().await;
    let (_dir, path) = config_file(&format!(
        r#"
[[functions]]
name = "shown"
url = "http://{addr}/handler"

[[queues]]
name = "shown-q"

[[event_source_mappings]]
function = "shown"
queue = "shown-q"
batch_size = 3
"#
    ));
    let loft = Loft::start_with(&["--config", &path]);
    let mappings = || async { loft.get("/_loft/mappings").await.json() };
    let polled = crate::wait::poll(SETTLE, || async {
        let v = mappings().await;
        (v[0]["poller"] == "this node").then_some(v)
    })
    .await;
    let listed = polled.unwrap_or_else(|| panic!("never polled"));
    let m = &listed[0];
    assert_eq!(m["state"], "Enabled");
    assert_eq!(m["batch_size"], 3);
    assert_eq!(m["queue_arn"], "arn:aws:sqs:us-east-1:000000000000:shown-q");
    assert_eq!(
        m["function_arn"],
        "arn:aws:lambda:us-east-1:000000000000:function:shown"
    );
    let uuid = m["uuid"].as_str().unwrap().to_owned();
    let r = loft
        .send(
            loft.http
                .put(loft.url(&format!("/2015-03-31/event-source-mappings/{uuid}")))
                .json(&json!({"Enabled": false})),
        )
        .await;
    assert_eq!(r.status.as_u16(), 202, "{}", r.text);
    assert_eq!(r.json()["State"], "Updating");
    // Disabling (its poller stopping), then Disabled once the poller has stopped.
    let disabled = crate::wait::until(SETTLE, || async {
        let v = mappings().await;
        let seen = (v[0]["state"].as_str(), v[0]["poller"].as_str());
        if seen == (Some("Disabled"), Some("paused")) {
            return true;
        }
        assert_eq!(seen, (Some("Disabling"), Some("stopping")), "{v}");
        false
    })
    .await;
    assert!(disabled, "never Disabled: {}", mappings().await);
}

/// Lambda API Reference, EventSourceMappingConfiguration.State: a disabled mapping reads
/// `Disabling` until its poller has stopped; once it reads `Disabled`, a message sent to
/// the queue is not invoked (another consumer receives it), and the wait for `Disabled`
/// stays within one renewal of the lease plus a receive.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_invocation_follows_a_mapping_reported_disabled() {
    let (host, addr) = start_host().await;
    let (_dir, path) = config_file(&format!(
        r#"
[[functions]]
name = "pausable"
url = "http://{addr}/handler"

[[queues]]
name = "pausable-q"

[[event_source_mappings]]
function = "pausable"
queue = "pausable-q"
batch_size = 1
"#
    ));
    let loft = Loft::start_with(&["--config", &path]);
    let sqs = sqs_client(&loft.base);
    let url = format!("{}/000000000000/pausable-q", loft.base);
    sqs.send_message()
        .queue_url(&url)
        .message_body("before")
        .send()
        .await
        .expect("send");
    until("the first invocation", || {
        sqs_bodies(&host.events.lock().unwrap()).len() == 1
    })
    .await;
    let listed = loft.get("/2015-03-31/event-source-mappings").await.json();
    let uuid = listed["EventSourceMappings"][0]["UUID"]
        .as_str()
        .expect("UUID")
        .to_owned();
    let path = format!("/2015-03-31/event-source-mappings/{uuid}");
    let r = loft
        .send(
            loft.http
                .put(loft.url(&path))
                .json(&json!({"Enabled": false})),
        )
        .await;
    assert_eq!(r.status.as_u16(), 202, "{}", r.text);
    let start = Instant::now();
    let disabled = crate::wait::until(Duration::from_secs(40), || async {
        let state = loft.get(&path).await.json()["State"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if state == "Disabled" {
            return true;
        }
        assert_eq!(state, "Disabling");
        false
    })
    .await;
    assert!(disabled, "still Disabling after {:?}", start.elapsed());
    sqs.send_message()
        .queue_url(&url)
        .message_body("after")
        .send()
        .await
        .expect("send");
    let got = sqs
        .receive_message()
        .queue_url(&url)
        .wait_time_seconds(10)
        .send()
        .await
        .expect("receive");
    let bodies: Vec<&str> = got.messages().iter().filter_map(|m| m.body()).collect();
    assert_eq!(
        bodies,
        ["after"],
        "the message is the queue's, not the function's"
    );
    let invoked = sqs_bodies(&host.events.lock().unwrap());
    assert_eq!(
        invoked,
        [("before".to_owned(), 1)],
        "nothing invoked after Disabled"
    );
}

/// A function whose host cannot take `Event` (`invocation_type = "RequestResponse"`, see
/// docs/configuration.md) is invoked by SNS with `RequestResponse`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sns_invokes_with_request_response_when_the_function_says_so() {
    let (host, addr) = start_host().await;
    let (_dir, path) = config_file(&format!(
        r#"
[[functions]]
name = "emulated"
invoke_endpoint = "http://{addr}"
invocation_type = "RequestResponse"

[[topics]]
name = "to-emulated"
[[topics.subscriptions]]
protocol = "lambda"
endpoint = "arn:aws:lambda:us-east-1:000000000000:function:emulated"
"#
    ));
    let loft = Loft::start_with(&["--config", &path]);
    sns_client(&loft.base)
        .publish()
        .topic_arn("arn:aws:sns:us-east-1:000000000000:to-emulated")
        .message("hello")
        .send()
        .await
        .expect("publish");
    until("the invocation", || !host.events.lock().unwrap().is_empty()).await;
    assert_eq!(host.invocation_types.lock().unwrap()[0], "RequestResponse");
}

/// An SNS invocation whose function host is down is a durable delivery: it survives a
/// graceful restart of Loft and reaches the function once the host is up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_sns_invocation_waiting_for_its_host_survives_a_restart() {
    let addr = crate::common::dead_endpoint();
    let (_dir, path) = config_file(&format!(
        r#"
[[functions]]
name = "later"
invoke_endpoint = "http://{addr}"

[[topics]]
name = "durable"
[[topics.subscriptions]]
protocol = "lambda"
endpoint = "arn:aws:lambda:us-east-1:000000000000:function:later"
"#
    ));
    let mut loft = Loft::start_with(&["--config", &path]);
    let sns = sns_client(&loft.base);
    sns.publish()
        .topic_arn("arn:aws:sns:us-east-1:000000000000:durable")
        .message("kept across the restart")
        .send()
        .await
        .expect("publish");
    // Wait until the first attempt failed (the host is down): the delivery is retrying.
    let failed = crate::wait::until(SETTLE, || async {
        let topics = loft.get("/_loft/topics").await.json();
        let sub = &topics[0]["subscriptions"][0];
        if sub["last_error"].is_string() {
            assert_eq!(sub["pending_deliveries"], 1, "{sub}");
            return true;
        }
        false
    })
    .await;
    assert!(
        failed,
        "no failed attempt: {}",
        loft.get("/_loft/topics").await.json()
    );
    loft.restart();
    // The host comes up on the configured address.
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .expect("bind the host");
    let host = Host::default();
    let app = Router::new().fallback(handle).with_state(host.clone());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    until("the invocation after the restart", || {
        !host.events.lock().unwrap().is_empty()
    })
    .await;
    let events = host.events.lock().unwrap().clone();
    assert_eq!(events.len(), 1);
    assert_eq!(
        events[0].1["Records"][0]["Sns"]["Message"],
        "kept across the restart"
    );
}

/// Malformed Lambda requests get Lambda's error shape, never a panic or a 5xx.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_lambda_requests_are_refused_in_lambdas_shape() {
    let (_dir, path) = config_file(
        r#"
[[functions]]
name = "f"
url = "http://127.0.0.1:9/"
"#,
    );
    let loft = Loft::start_with(&["--config", &path]);
    let url = loft.url("/2015-03-31/event-source-mappings/");
    for body in [
        "not json",
        "[]",
        r#"{"FunctionName": 5}"#,
        r#"{"FunctionName":"f","BatchSize":"ten"}"#,
        r#"{"FunctionName":"f","FilterCriteria":{"Filters":"x"}}"#,
        r#"{"FunctionName":"f"}"#,
        r#"{"FunctionName":"f","EventSourceArn":"arn:aws:kinesis:us-east-1:000000000000:stream/s"}"#,
        "{\"FunctionName\":\"\u{0}\"}",
    ] {
        let r = loft.send(loft.http.post(&url).body(body.to_owned())).await;
        assert_eq!(r.status.as_u16(), 400, "{body}: {}", r.text);
        assert_eq!(
            r.headers["x-amzn-errortype"], "InvalidParameterValueException",
            "{body}"
        );
        let v = r.json();
        assert_eq!(v["Type"], "User");
        assert!(v["message"].as_str().is_some_and(|m| !m.is_empty()), "{v}");
    }
    for (method, path, status, kind) in [
        (
            "GET",
            "/2015-03-31/event-source-mappings/nope",
            404,
            "ResourceNotFoundException",
        ),
        (
            "DELETE",
            "/2015-03-31/event-source-mappings/nope",
            404,
            "ResourceNotFoundException",
        ),
        (
            "GET",
            "/2015-03-31/functions/missing",
            404,
            "ResourceNotFoundException",
        ),
        (
            "GET",
            "/2015-03-31/event-source-mappings/?MaxItems=x",
            400,
            "InvalidParameterValueException",
        ),
        (
            "GET",
            "/2015-03-31/functions/?Marker=zz",
            400,
            "InvalidParameterValueException",
        ),
    ] {
        let m = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let r = loft.send(loft.http.request(m, loft.url(path))).await;
        assert_eq!(r.status.as_u16(), status, "{method} {path}: {}", r.text);
        assert_eq!(r.headers["x-amzn-errortype"], kind, "{method} {path}");
    }
    let r = loft
        .send(
            loft.http
                .put(loft.url("/2015-03-31/event-source-mappings/nope"))
                .body("{}"),
        )
        .await;
    assert_eq!(r.status.as_u16(), 404, "{}", r.text);
}

/// An SNS client signing with account B's key of [`ALLOWED_CONFIG`].
fn sns_of_b(base: &str) -> aws_sdk_sns::Client {
    use aws_sdk_sns::config::{BehaviorVersion, Credentials, Region};
    let config = aws_sdk_sns::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("AKIDFNB", "secret-b", None, None, "b"))
        .endpoint_url(base)
        .http_client(aws_smithy_http_client::Builder::new().build_http())
        .retry_config(aws_sdk_sns::config::retry::RetryConfig::disabled())
        .build();
    aws_sdk_sns::Client::from_conf(config)
}

/// A function of the default account that allows account B (`{allow}` is the
/// `allow_accounts` line), and B's key; `{addr}` is the function host.
const ALLOWED_CONFIG: &str = r#"
[[credentials]]
access_key_id = "AKIDFNB"
secret_access_key = "secret-b"
account_id = "222222222222"

[[functions]]
name = "shared"
url = "http://{addr}/handler"
{allow}
"#;

/// A function invoked for another account's topic only while its `allow_accounts` names
/// that account: the grant is checked at Subscribe and again at each publish, so a
/// restart with the account taken out of the list stops the invocations of a subscription
/// made before (the notification is recorded instead, as for an unconfigured function).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_function_serves_another_account_only_while_its_config_allows_it() {
    let (host, addr) = start_host().await;
    let config = |allow: &str| {
        ALLOWED_CONFIG
            .replace("{addr}", &addr.to_string())
            .replace("{allow}", allow)
    };
    let (dir, path) = config_file(&config(r#"allow_accounts = ["222222222222"]"#));
    let mut loft = Loft::start_with(&["--config", &path]);
    let function = "arn:aws:lambda:us-east-1:000000000000:function:shared";
    let sns = sns_of_b(&loft.base);
    let topic = sns
        .create_topic()
        .name("b-events")
        .send()
        .await
        .expect("create B's topic")
        .topic_arn
        .expect("TopicArn");
    sns.subscribe()
        .topic_arn(&topic)
        .protocol("lambda")
        .endpoint(function)
        .send()
        .await
        .expect("B subscribes the function it is allowed");
    sns.publish()
        .topic_arn(&topic)
        .message("first")
        .send()
        .await
        .expect("publish");
    until("the allowed invocation", || {
        !host.events.lock().unwrap().is_empty()
    })
    .await;

    // The operator takes B out of the list.
    std::fs::write(&path, config("")).expect("rewrite the config");
    loft.restart();
    let sns = sns_of_b(&loft.base);
    sns.publish()
        .topic_arn(&topic)
        .message("second")
        .send()
        .await
        .expect("publish");
    // Recorded in the publish itself, not invoked.
    let metrics = reqwest::get(loft.url("/metrics"))
        .await
        .expect("GET /metrics")
        .text()
        .await
        .expect("metrics text");
    assert!(
        metrics
            .lines()
            .any(|l| l == r#"loft_deliveries_total{protocol="lambda",outcome="recorded"} 1"#),
        "{metrics}"
    );
    let err = sns
        .subscribe()
        .topic_arn(&topic)
        .protocol("lambda")
        .endpoint(format!("{function}:$LATEST"))
        .send()
        .await
        .expect_err("no longer allowed");
    assert_eq!(
        aws_sdk_sns::error::ProvideErrorMetadata::code(&err),
        Some("AuthorizationError"),
        "{err:?}"
    );
    let events = host.events.lock().unwrap().clone();
    assert_eq!(
        events.len(),
        1,
        "only the first publish invoked: {events:?}"
    );
    assert_eq!(events[0].1["Records"][0]["Sns"]["Message"], "first");
    drop(dir);
}
