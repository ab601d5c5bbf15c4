//! Functions as consumers with a clock the test moves: the service over the in-memory
//! SQLite store and a [`ManualClock`], a function host the test runs (one route speaking
//! the Lambda Invoke API, one plain HTTP handler), and the workers' steps
//! ([`deliver_due`], [`run_batch`]) run by hand.
//!
//! Sources: Lambda Developer Guide "How Lambda handles errors and retries with asynchronous
//! invocation" (two retries, one then two minutes apart; throttles back off from 1 s),
//! "Using Lambda with Amazon SNS" (the event), "Using Lambda with Amazon SQS" (the event,
//! delete on success, partial batch responses, FIFO), Lambda API Reference `Invoke`.

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;
use loft_core::clock::{Clock, ManualClock};
use loft_core::functions::{FunctionConfig, FunctionTarget, InvokeOutcome};
use loft_core::service::{
    MappingInput, PublishRequest, PublishTarget, ReceiveMessage, SendMessage,
};
use loft_core::{Service, ServiceConfig};
use loft_server::delivery::deliver_due;
use loft_server::mappings::run_batch;
use loft_store::SqliteStore;
use serde_json::{json, Value};

/// The default account (`ServiceConfig::default()`'s): every mapping here is its.
const ACCOUNT: &str = "000000000000";

/// 2023-11-14T22:13:20Z.
const START_MS: i64 = 1_700_000_000_000;

/// A scripted answer of the host: status, `X-Amz-Function-Error`, body.
type Answer = (u16, Option<&'static str>, String);

/// One call the host received.
#[derive(Debug, Clone)]
struct Call {
    path: String,
    invocation_type: Option<String>,
    event: Value,
    at_ms: i64,
}

#[derive(Clone)]
struct Host {
    clock: Arc<ManualClock>,
    calls: Arc<Mutex<Vec<Call>>>,
    /// Answers to give, in order; once empty, the batch handler below answers.
    script: Arc<Mutex<VecDeque<Answer>>>,
}

/// With no scripted answer: success, reporting as failed every SQS record whose body
/// starts with `fail` (a partial batch response).
fn batch_answer(event: &Value) -> String {
    let failures: Vec<Value> = event["Records"]
        .as_array()
        .map(|rs| {
            rs.iter()
                .filter(|r| r["body"].as_str().is_some_and(|b| b.starts_with("fail")))
                .map(|r| json!({"itemIdentifier": r["messageId"]}))
                .collect()
        })
        .unwrap_or_default();
    json!({"batchItemFailures": failures}).to_string()
}

async fn host(State(h): State<Host>, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let event: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    h.calls.lock().unwrap().push(Call {
        path: uri.path().to_owned(),
        invocation_type: headers
            .get("x-amz-invocation-type")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
        event: event.clone(),
        at_ms: h.clock.now_ms(),
    });
    let scripted = h.script.lock().unwrap().pop_front();
    let (status, error, body) = scripted.unwrap_or_else(|| (200, None, batch_answer(&event)));
    let mut resp = (StatusCode::from_u16(status).unwrap(), body).into_response();
    if let Some(e) = error {
        resp.headers_mut()
            .insert("x-amz-function-error", e.parse().unwrap());
    }
    resp
}

struct World {
    clock: Arc<ManualClock>,
    svc: Arc<Service>,
    http: reqwest::Client,
    functions: reqwest::Client,
    host: Host,
}

impl World {
    /// A service with function `api` (Invoke API) and `plain` (a plain handler) on one
    /// test host.
    async fn new() -> World {
        let clock = Arc::new(ManualClock::new(START_MS));
        let store = Arc::new(SqliteStore::open_in_memory().expect("in-memory store"));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the host");
        let addr: SocketAddr = listener.local_addr().expect("host address");
        let host_state = Host {
            clock: clock.clone(),
            calls: Arc::default(),
            script: Arc::default(),
        };
        let app = Router::new().fallback(host).with_state(host_state.clone());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        let mut api = FunctionConfig::new(
            "api",
            FunctionTarget::InvokeEndpoint(format!("http://{addr}")),
        );
        api.timeout_seconds = 5;
        let plain = FunctionConfig::new(
            "plain",
            FunctionTarget::Url(format!("http://{addr}/handler")),
        );
        let config = ServiceConfig {
            functions: vec![api, plain],
            ..ServiceConfig::default()
        };
        let svc = Service::new(store, clock.clone() as Arc<dyn Clock>, config, None);
        World {
            clock,
            svc,
            http: loft_server::delivery::client(Default::default()).expect("client"),
            functions: loft_server::invoke::client().expect("client"),
            host: host_state,
        }
    }

    fn script(&self, answers: Vec<Answer>) {
        self.host.script.lock().unwrap().extend(answers);
    }

    fn calls(&self) -> Vec<Call> {
        self.host.calls.lock().unwrap().clone()
    }

    async fn deliver(&self) -> usize {
        deliver_due(&self.svc, &self.http).await
    }

    async fn topic_with_lambda(&self, function: &str, attrs: &[(&str, &str)]) -> (String, String) {
        self.svc
            .sns()
            .create_topic("t", BTreeMap::new(), Vec::new())
            .await
            .expect("topic");
        let topic = self.svc.topic_arn("t");
        let attrs = attrs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let sub = self
            .svc
            .sns()
            .subscribe(
                &topic,
                "lambda",
                Some(&self.svc.functions().function_arn(function)),
                attrs,
                true,
            )
            .await
            .expect("subscribe")
            .subscription_arn;
        (topic, sub)
    }

    async fn publish(&self, topic: &str, message: &str) -> String {
        self.svc
            .sns()
            .publish(
                PublishTarget::Topic(topic),
                PublishRequest {
                    message: message.to_owned(),
                    subject: Some("greeting".into()),
                    ..PublishRequest::default()
                },
            )
            .await
            .expect("publish")
            .message_id
    }

    async fn bodies(&self, queue: &str) -> Vec<String> {
        let mut out = Vec::new();
        loop {
            let got = self
                .svc
                .sqs()
                .receive_message(
                    queue,
                    ReceiveMessage {
                        max_messages: Some(10),
                        wait_seconds: Some(0),
                        visibility_timeout: Some(3600),
                        ..ReceiveMessage::default()
                    },
                )
                .await
                .expect("receive");
            if got.is_empty() {
                return out;
            }
            out.extend(got.into_iter().map(|m| m.body));
        }
    }

    async fn queue(&self, name: &str, attrs: &[(&str, &str)]) -> String {
        let attrs = attrs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        self.svc
            .sqs()
            .create_queue(name, attrs, BTreeMap::new())
            .await
            .expect("queue");
        self.svc.queue_arn(name)
    }

    async fn send(&self, queue: &str, body: &str, group: Option<&str>) {
        self.svc
            .sqs()
            .send_message(
                queue,
                SendMessage {
                    body: body.to_owned(),
                    group_id: group.map(str::to_owned),
                    dedup_id: group.map(|_| body.to_owned()),
                    ..SendMessage::default()
                },
            )
            .await
            .expect("send");
    }
}

#[tokio::test]
async fn sns_invokes_the_function_again_a_minute_after_a_function_error() {
    let w = World::new().await;
    let (topic, sub) = w.topic_with_lambda("api", &[]).await;
    w.script(vec![(
        200,
        Some("Unhandled"),
        r#"{"errorMessage":"boom"}"#.into(),
    )]);
    let id = w.publish(&topic, "hello").await;
    assert_eq!(w.deliver().await, 1, "the first invocation is immediate");
    w.clock.advance_ms(60_000 - 1);
    assert_eq!(w.deliver().await, 0, "retried 1 ms early");
    w.clock.advance_ms(1);
    assert_eq!(
        w.deliver().await,
        1,
        "the retry a minute after the function error"
    );
    w.clock.advance_ms(3_600_000);
    assert_eq!(w.deliver().await, 0, "the second invocation succeeded");
    let calls = w.calls();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[1].at_ms - calls[0].at_ms, 60_000);
    assert_eq!(calls[0].path, "/2015-03-31/functions/api/invocations");
    assert!(
        calls[0].invocation_type.is_some(),
        "X-Amz-Invocation-Type is sent"
    );
    assert_eq!(calls[0].event, calls[1].event, "the same event both times");
    // AWS's SNS event.
    let r = &calls[0].event["Records"][0];
    assert_eq!(r["EventSource"], "aws:sns");
    assert_eq!(r["EventVersion"], "1.0");
    assert_eq!(r["EventSubscriptionArn"], sub);
    let sns = &r["Sns"];
    assert_eq!(sns["Type"], "Notification");
    assert_eq!(sns["MessageId"], id);
    assert_eq!(sns["TopicArn"], topic);
    assert_eq!(sns["Subject"], "greeting");
    assert_eq!(sns["Message"], "hello");
    assert!(sns["Timestamp"].as_str().is_some_and(|t| t.ends_with('Z')));
    assert!(sns["SigningCertUrl"].is_string() && sns["UnsubscribeUrl"].is_string());
    assert_eq!(sns["MessageAttributes"], json!({}));
}

#[tokio::test]
async fn function_errors_exhaust_two_retries_then_the_subscription_dlq_gets_the_envelope() {
    let w = World::new().await;
    let dlq = w.queue("dlq", &[]).await;
    let redrive = format!(r#"{{"deadLetterTargetArn":"{dlq}"}}"#);
    let (topic, _) = w
        .topic_with_lambda("plain", &[("RedrivePolicy", &redrive)])
        .await;
    // A plain handler's non-2xx answer is a function error.
    w.script((0..3).map(|_| (500, None, "no".to_owned())).collect());
    let id = w.publish(&topic, "doomed").await;
    assert_eq!(w.deliver().await, 1);
    w.clock.advance_ms(60_000);
    assert_eq!(w.deliver().await, 1, "first retry after a minute");
    assert!(w.bodies("dlq").await.is_empty(), "not dead-lettered yet");
    w.clock.advance_ms(120_000 - 1);
    assert_eq!(w.deliver().await, 0);
    w.clock.advance_ms(1);
    assert_eq!(w.deliver().await, 1, "second retry two minutes later");
    w.clock.advance_ms(3_600_000);
    assert_eq!(w.deliver().await, 0, "no third retry");
    assert_eq!(w.calls().len(), 3);
    assert_eq!(w.calls()[0].path, "/handler");
    let dead = w.bodies("dlq").await;
    assert_eq!(dead.len(), 1, "{dead:?}");
    let env: Value = serde_json::from_str(&dead[0]).expect("the SNS envelope");
    assert_eq!(env["Type"], "Notification");
    assert_eq!(env["MessageId"], id);
    assert_eq!(env["Message"], "doomed");
    assert!(env.get("SigningCertURL").is_some());
}

#[tokio::test]
async fn throttled_invocations_back_off_from_one_second() {
    let w = World::new().await;
    let (topic, _) = w.topic_with_lambda("api", &[]).await;
    w.script(vec![
        (
            429,
            None,
            r#"{"Type":"User","message":"Rate exceeded"}"#.into(),
        ),
        (503, None, String::new()),
    ]);
    w.publish(&topic, "busy").await;
    assert_eq!(w.deliver().await, 1);
    w.clock.advance_ms(999);
    assert_eq!(w.deliver().await, 0);
    w.clock.advance_ms(1);
    assert_eq!(w.deliver().await, 1, "1 s after the first throttle");
    w.clock.advance_ms(1_999);
    assert_eq!(w.deliver().await, 0);
    w.clock.advance_ms(1);
    assert_eq!(w.deliver().await, 1, "2 s after the second");
    w.clock.advance_ms(3_600_000);
    assert_eq!(w.deliver().await, 0, "then it ran");
}

#[tokio::test]
async fn a_lambda_subscription_to_an_unconfigured_function_is_recorded_not_invoked() {
    let w = World::new().await;
    let (topic, _) = w.topic_with_lambda("elsewhere", &[]).await;
    w.publish(&topic, "kept").await;
    assert_eq!(w.deliver().await, 0);
    let recorded = w
        .svc
        .sns()
        .recorded_messages(&w.svc.open_principal(), 10)
        .await
        .expect("recorded");
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0].protocol, "lambda");
    assert!(w.calls().is_empty());
}

async fn mapping(
    w: &World,
    queue_arn: &str,
    input: MappingInput,
) -> loft_core::model::EventSourceMappingRecord {
    w.svc
        .functions()
        .create_event_source_mapping(
            ACCOUNT,
            MappingInput {
                function_name: Some("api".into()),
                event_source_arn: Some(queue_arn.to_owned()),
                ..input
            },
        )
        .await
        .expect("create mapping")
        .record
}

#[tokio::test]
async fn a_mapping_deletes_successes_and_dead_letters_reported_failures_after_max_receive_count() {
    let w = World::new().await;
    let dlq = w.queue("q-dlq", &[]).await;
    let redrive = format!(r#"{{"deadLetterTargetArn":"{dlq}","maxReceiveCount":2}}"#);
    let q = w.queue("q", &[("RedrivePolicy", &redrive)]).await;
    let m = mapping(
        &w,
        &q,
        MappingInput {
            batch_size: Some(10),
            function_response_types: Some(vec!["ReportBatchItemFailures".into()]),
            ..MappingInput::default()
        },
    )
    .await;
    let mut sent = Vec::new();
    for i in 0..25 {
        let body = if i % 5 == 0 {
            format!("fail-{i}")
        } else {
            format!("ok-{i}")
        };
        w.send("q", &body, None).await;
        sent.push(body);
    }
    // Drain: three batches (10, 10, 5).
    let mut sizes = Vec::new();
    while let Some(r) = run_batch(&w.svc, &w.functions, &m, 0).await.expect("batch") {
        assert!(matches!(r.outcome, Some(InvokeOutcome::Success(_))));
        assert_eq!(
            r.deleted + r.invoked / 5,
            r.invoked,
            "only the failures stay"
        );
        sizes.push(r.invoked);
    }
    assert_eq!(sizes, [10, 10, 5]);
    // The event is AWS's SQS event.
    let call = &w.calls()[0];
    assert_eq!(call.path, "/2015-03-31/functions/api/invocations");
    let rec = &call.event["Records"][0];
    assert_eq!(rec["eventSource"], "aws:sqs");
    assert_eq!(rec["eventSourceARN"], q);
    assert_eq!(rec["awsRegion"], "us-east-1");
    assert_eq!(rec["body"], sent[0]);
    for k in ["messageId", "receiptHandle", "md5OfBody"] {
        assert!(rec[k].is_string(), "{k}");
    }
    assert_eq!(rec["attributes"]["ApproximateReceiveCount"], "1");
    assert!(rec["attributes"]["SentTimestamp"].is_string());
    // The failures come back after the visibility timeout (30 s), once more.
    w.clock.advance_ms(30_000);
    let again = run_batch(&w.svc, &w.functions, &m, 0)
        .await
        .expect("batch")
        .expect("the failures again");
    assert_eq!((again.invoked, again.deleted), (5, 0));
    let last = w.calls().last().unwrap().event.clone();
    assert!(last["Records"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["attributes"]["ApproximateReceiveCount"] == "2"));
    // Past maxReceiveCount they are dead-lettered by the queue, not invoked a third time.
    w.clock.advance_ms(30_000);
    assert!(run_batch(&w.svc, &w.functions, &m, 0)
        .await
        .expect("batch")
        .is_none());
    let mut dead = w.bodies("q-dlq").await;
    dead.sort();
    let mut failed: Vec<String> = sent
        .iter()
        .filter(|b| b.starts_with("fail"))
        .cloned()
        .collect();
    failed.sort();
    assert_eq!(dead, failed);
    assert!(w.bodies("q").await.is_empty(), "every success was deleted");
}

#[tokio::test]
async fn a_function_error_leaves_the_whole_batch_for_the_visibility_timeout() {
    let w = World::new().await;
    let q = w.queue("q", &[]).await;
    let m = mapping(&w, &q, MappingInput::default()).await;
    for i in 0..3 {
        w.send("q", &format!("m{i}"), None).await;
    }
    w.script(vec![(200, Some("Unhandled"), "{}".into())]);
    let r = run_batch(&w.svc, &w.functions, &m, 0)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((r.invoked, r.deleted), (3, 0));
    assert!(
        run_batch(&w.svc, &w.functions, &m, 0)
            .await
            .unwrap()
            .is_none(),
        "in flight"
    );
    w.clock.advance_ms(30_000);
    let r = run_batch(&w.svc, &w.functions, &m, 0)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (r.invoked, r.deleted),
        (3, 3),
        "retried whole, then deleted"
    );
    assert!(w.bodies("q").await.is_empty());
}

#[tokio::test]
async fn a_fifo_mapping_keeps_the_records_after_a_failure_in_their_group() {
    let w = World::new().await;
    let q = w.queue("q.fifo", &[("FifoQueue", "true")]).await;
    let m = mapping(
        &w,
        &q,
        MappingInput {
            function_response_types: Some(vec!["ReportBatchItemFailures".into()]),
            ..MappingInput::default()
        },
    )
    .await;
    for b in ["a1", "a2", "fail-a3", "a4", "a5"] {
        w.send("q.fifo", b, Some("a")).await;
    }
    for b in ["b1", "b2"] {
        w.send("q.fifo", b, Some("b")).await;
    }
    let r = run_batch(&w.svc, &w.functions, &m, 0)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(r.invoked, 7);
    // a1, a2, b1, b2 deleted; fail-a3 failed, so a4 and a5 (reported successful) stay.
    assert_eq!(r.deleted, 4);
    w.script(vec![(200, None, "{}".into())]);
    w.clock.advance_ms(30_000);
    run_batch(&w.svc, &w.functions, &m, 0)
        .await
        .unwrap()
        .unwrap();
    let last = w.calls().last().unwrap().event.clone();
    let bodies: Vec<&str> = last["Records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["body"].as_str().unwrap())
        .collect();
    assert_eq!(
        bodies,
        ["fail-a3", "a4", "a5"],
        "group a resumes at its failure, in order"
    );
    assert_eq!(
        last["Records"][0]["attributes"]["MessageGroupId"], "a",
        "FIFO attributes reach the event"
    );
    assert!(w.bodies("q.fifo").await.is_empty());
}

#[tokio::test]
async fn filter_criteria_delete_unmatched_messages_without_an_invocation() {
    let w = World::new().await;
    let q = w.queue("q", &[]).await;
    let m = mapping(
        &w,
        &q,
        MappingInput {
            filter_patterns: Some(vec![r#"{"body":{"kind":["order"]}}"#.into()]),
            ..MappingInput::default()
        },
    )
    .await;
    w.send("q", r#"{"kind":"order","n":1}"#, None).await;
    w.send("q", r#"{"kind":"noise"}"#, None).await;
    w.send("q", "plain text", None).await;
    let r = run_batch(&w.svc, &w.functions, &m, 0)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((r.received, r.invoked, r.deleted), (3, 1, 1));
    let ev = &w.calls()[0].event;
    assert_eq!(ev["Records"].as_array().unwrap().len(), 1);
    assert_eq!(ev["Records"][0]["body"], r#"{"kind":"order","n":1}"#);
    w.clock.advance_ms(3_600_000);
    assert!(w.bodies("q").await.is_empty(), "the unmatched were deleted");
}

#[tokio::test]
async fn mapping_settings_are_checked_and_one_node_holds_a_mapping() {
    let w = World::new().await;
    let q = w.queue("q", &[]).await;
    let fifo = w.queue("q.fifo", &[("FifoQueue", "true")]).await;
    let bad = |input: MappingInput| {
        let svc = w.svc.clone();
        async move {
            svc.functions()
                .create_event_source_mapping(ACCOUNT, input)
                .await
                .unwrap_err()
        }
    };
    let base = MappingInput {
        function_name: Some("api".into()),
        event_source_arn: Some(q.clone()),
        ..MappingInput::default()
    };
    let e = bad(MappingInput {
        batch_size: Some(11),
        ..base.clone()
    })
    .await;
    assert_eq!(
        e.code.aws_code(),
        "InvalidParameterValueException",
        "{}",
        e.message
    );
    let e = bad(MappingInput {
        batch_size: Some(10_001),
        maximum_batching_window_seconds: Some(1),
        ..base.clone()
    })
    .await;
    assert_eq!(e.code.aws_code(), "InvalidParameterValueException");
    let e = bad(MappingInput {
        event_source_arn: Some(fifo.clone()),
        batch_size: Some(11),
        maximum_batching_window_seconds: Some(1),
        ..base.clone()
    })
    .await;
    assert_eq!(e.code.aws_code(), "InvalidParameterValueException");
    let e = bad(MappingInput {
        function_name: Some("nope".into()),
        ..base.clone()
    })
    .await;
    assert_eq!(e.code.aws_code(), "ResourceNotFoundException");
    let e = bad(MappingInput {
        function_response_types: Some(vec!["Other".into()]),
        ..base.clone()
    })
    .await;
    assert_eq!(e.code.aws_code(), "InvalidParameterValueException");
    let e = bad(MappingInput {
        filter_patterns: Some(vec!["{not json".into()]),
        ..base.clone()
    })
    .await;
    assert_eq!(e.code.aws_code(), "InvalidParameterValueException");
    let e = bad(MappingInput {
        event_source_arn: Some(w.svc.queue_arn("missing")),
        ..base.clone()
    })
    .await;
    assert_eq!(e.code.aws_code(), "InvalidParameterValueException");
    let created = w
        .svc
        .functions()
        .create_event_source_mapping(
            ACCOUNT,
            MappingInput {
                batch_size: Some(100),
                maximum_batching_window_seconds: Some(2),
                ..base.clone()
            },
        )
        .await
        .expect("create");
    assert_eq!(created.state, "Creating");
    assert_eq!(
        created.record.function_arn,
        w.svc.functions().function_arn("api")
    );
    let e = bad(base.clone()).await;
    assert_eq!(e.code.aws_code(), "ResourceConflictException");
    // Update, list, get.
    let updated = w
        .svc
        .functions()
        .update_event_source_mapping(
            ACCOUNT,
            &created.record.uuid,
            MappingInput {
                enabled: Some(false),
                ..MappingInput::default()
            },
        )
        .await
        .expect("update");
    assert_eq!(updated.state, "Updating");
    let got = w
        .svc
        .functions()
        .get_event_source_mapping(ACCOUNT, &created.record.uuid)
        .await
        .unwrap();
    assert_eq!(got.state, "Disabled");
    assert_eq!(got.record.batch_size, 100);
    let (page, next) = w
        .svc
        .functions()
        .list_event_source_mappings(ACCOUNT, None, Some("api"), None, None)
        .await
        .unwrap();
    assert_eq!((page.len(), next), (1, None));
    // Disabled: no node claims it. Enabled: exactly one claim until the lease runs out.
    assert!(w
        .svc
        .functions()
        .claim_mappings(10)
        .await
        .unwrap()
        .is_empty());
    w.svc
        .functions()
        .update_event_source_mapping(
            ACCOUNT,
            &created.record.uuid,
            MappingInput {
                enabled: Some(true),
                ..MappingInput::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(w.svc.functions().claim_mappings(10).await.unwrap().len(), 1);
    assert!(w
        .svc
        .functions()
        .claim_mappings(10)
        .await
        .unwrap()
        .is_empty());
    let deleted = w
        .svc
        .functions()
        .delete_event_source_mapping(ACCOUNT, &created.record.uuid)
        .await
        .unwrap();
    assert_eq!(deleted.state, "Deleting");
    assert!(w
        .svc
        .functions()
        .renew_mapping(&created.record.uuid)
        .await
        .unwrap()
        .is_none());
    let e = w
        .svc
        .functions()
        .get_event_source_mapping(ACCOUNT, &created.record.uuid)
        .await
        .unwrap_err();
    assert_eq!(e.code.aws_code(), "ResourceNotFoundException");
}

/// A function belongs to its configured account: `function` resolves a name alone in the
/// caller's account and an ARN in the ARN's, `own_function`/`own_functions` are that
/// account's, and `invocable_function` also serves the accounts its `allow_accounts`
/// names (by its ARN); everyone else is answered as for a missing function of the ARN
/// they named, never of the function's own.
#[tokio::test]
async fn functions_belong_to_their_account_and_serve_the_accounts_they_allow() {
    let mut mine = FunctionConfig::new("mine", FunctionTarget::Url("http://127.0.0.1:9/".into()));
    mine.account = Some("111111111111".into());
    mine.allow_accounts = vec!["222222222222".into()];
    let shared = FunctionConfig::new("shared", FunctionTarget::Url("http://127.0.0.1:9/".into()));
    let config = ServiceConfig {
        functions: vec![mine, shared],
        ..ServiceConfig::default()
    };
    let default = config.account_id.clone();
    let svc = Service::new(
        Arc::new(SqliteStore::open_in_memory().expect("in-memory store")),
        Arc::new(ManualClock::new(START_MS)) as Arc<dyn Clock>,
        config,
        None,
    );
    let mine_arn = "arn:aws:lambda:us-east-1:111111111111:function:mine";
    assert_eq!(svc.functions().function_arn("mine"), mine_arn);
    let fx = svc.functions();
    for account in ["111111111111", "222222222222", default.as_str()] {
        assert!(fx.function(account, mine_arn).is_ok());
        assert!(fx
            .function(account, "111111111111:function:mine:$LATEST")
            .is_ok());
    }
    assert!(fx.function("111111111111", "mine").is_ok());
    let message = |e: loft_core::Error| {
        assert_eq!(e.code, loft_core::ErrorCode::LambdaResourceNotFound);
        e.message
    };
    // A name alone is the caller's own function: another account's is not found, in the
    // caller's account, as a missing one is.
    assert_eq!(
        message(fx.function("222222222222", "mine").unwrap_err()),
        "Function not found: arn:aws:lambda:us-east-1:222222222222:function:mine"
    );
    assert_eq!(
        message(
            fx.function(
                &default,
                &format!("arn:aws:lambda:us-east-1:{default}:function:mine")
            )
            .unwrap_err()
        ),
        format!("Function not found: arn:aws:lambda:us-east-1:{default}:function:mine")
    );
    assert!(fx.own_function("111111111111", "mine").is_ok());
    assert!(fx.own_function("111111111111", mine_arn).is_ok());
    // Another account's function by its ARN is answered as a missing one of that ARN.
    assert_eq!(
        message(fx.own_function("222222222222", mine_arn).unwrap_err()),
        message(
            fx.own_function("222222222222", &mine_arn.replace("mine", "nosuch"))
                .unwrap_err()
        )
        .replace("nosuch", "mine")
    );
    assert!(fx.invocable_function("222222222222", mine_arn).is_ok());
    assert!(fx.invocable_function("222222222222", "mine").is_err());
    assert_eq!(
        message(fx.invocable_function("333333333333", mine_arn).unwrap_err()),
        format!("Function not found: {mine_arn}")
    );
    assert!(fx.invocable_function(&default, "shared").is_ok());
    assert!(fx.invocable_function("111111111111", "shared").is_err());
    let names = |account: &str| -> Vec<String> {
        svc.functions()
            .own_functions(account)
            .iter()
            .map(|f| f.name.clone())
            .collect()
    };
    assert_eq!(names("111111111111"), ["mine"]);
    assert_eq!(names(&default), ["shared"]);
    assert!(names("222222222222").is_empty());
}
