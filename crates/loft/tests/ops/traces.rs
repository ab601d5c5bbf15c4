//! OpenTelemetry traces: with `OTEL_EXPORTER_OTLP_ENDPOINT` set, each request's span
//! reaches an OTLP/HTTP receiver (a small one in this test, reading the JSON bodies the
//! exporter posts to `/v1/traces`); a request carrying a W3C `traceparent` is a child of
//! the caller's span, in the caller's trace. A message sent under a trace carries it as
//! its `AWSTraceHeader` (X-Ray form), and the receive that hands it out links to the send
//! (`loft_server::observe`); without the endpoint no message gains one.

use std::sync::{Arc, Mutex};

use axum::routing::post;
use serde_json::{json, Value};

use crate::harness::{eventually, Server};

/// Every span the receiver got, as OTLP/JSON `Span` objects (`traceId`, `spanId`,
/// `parentSpanId`, `name`, `links`, ...).
type Spans = Arc<Mutex<Vec<Value>>>;

/// An OTLP/HTTP receiver on `127.0.0.1:0`: its endpoint and what it received.
async fn receiver() -> (String, Spans) {
    let spans: Spans = Arc::default();
    let got = spans.clone();
    let app = axum::Router::new().route(
        "/v1/traces",
        post(move |body: String| {
            let got = got.clone();
            async move {
                let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
                let mut got = got.lock().unwrap();
                for rs in v["resourceSpans"].as_array().into_iter().flatten() {
                    for ss in rs["scopeSpans"].as_array().into_iter().flatten() {
                        got.extend(ss["spans"].as_array().into_iter().flatten().cloned());
                    }
                }
                axum::Json(json!({}))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}"), spans)
}

/// A Loft exporting its traces to `endpoint`, quickly (50 ms batches).
fn traced_server(endpoint: &str) -> Server {
    Server::start_with(
        &[],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint),
            ("OTEL_BSP_SCHEDULE_DELAY", "50"),
        ],
    )
    .expect("starts")
}

/// A string field of an OTLP/JSON span.
fn text<'a>(span: &'a Value, key: &str) -> &'a str {
    span[key].as_str().unwrap_or("")
}

/// The first span received that `pick` accepts, waiting for it (bounded).
async fn span_where(spans: &Spans, what: &str, pick: impl Fn(&Value) -> bool) -> Value {
    eventually(what, || async {
        spans.lock().unwrap().iter().find(|s| pick(s)).cloned()
    })
    .await
}

/// SQS JSON operation `op` sent with W3C `traceparent` `00-{trace}-{parent}-01`; asserts
/// success.
async fn sqs_under(s: &Server, trace: &str, parent: &str, op: &str, input: Value) -> Value {
    let resp = s
        .http
        .post(s.url("/"))
        .header("x-amz-target", format!("AmazonSQS.{op}"))
        .header("content-type", "application/x-amz-json-1.0")
        .header("traceparent", format!("00-{trace}-{parent}-01"))
        .body(input.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    resp.json().await.unwrap()
}

/// The next `n` messages of queue `url`, with their system attributes: receives (long
/// polls of 1 s, at most 20) until `n` came.
async fn receive(s: &Server, url: &str, n: usize) -> Vec<Value> {
    let mut got = Vec::new();
    for _ in 0..20 {
        if got.len() >= n {
            break;
        }
        let r = s
            .sqs(
                "ReceiveMessage",
                json!({"QueueUrl": url, "MaxNumberOfMessages": 10, "WaitTimeSeconds": 1,
                       "MessageSystemAttributeNames": ["All"]}),
            )
            .await;
        got.extend(r["Messages"].as_array().into_iter().flatten().cloned());
    }
    assert_eq!(got.len(), n, "{got:?}");
    got
}

/// A message's `AWSTraceHeader`, if any.
fn trace_header(m: &Value) -> Option<&str> {
    m["Attributes"]["AWSTraceHeader"].as_str()
}

/// Whether `span` has a link to span `span_id` of trace `trace` whose
/// `messaging.message.id` is `message_id`.
fn links_to(span: &Value, trace: &str, span_id: &str, message_id: &str) -> bool {
    span["links"].as_array().into_iter().flatten().any(|l| {
        text(l, "traceId") == trace
            && text(l, "spanId") == span_id
            && l["attributes"].as_array().into_iter().flatten().any(|a| {
                a["key"] == "messaging.message.id" && a["value"]["stringValue"] == message_id
            })
    })
}

#[tokio::test]
async fn request_spans_reach_the_otlp_endpoint_under_the_callers_trace() {
    let (endpoint, spans) = receiver().await;
    let s = traced_server(&endpoint);
    let trace = "0af7651916cd43dd8448eb211c80319c";
    let parent = "b7ad6b7169203331";
    sqs_under(
        &s,
        trace,
        parent,
        "CreateQueue",
        json!({"QueueName": "traced"}),
    )
    .await;
    // And one without: a trace of its own, with no parent.
    s.sqs("ListQueues", json!({})).await;
    let child = span_where(&spans, "the traced request's span", |sp| {
        text(sp, "traceId") == trace
            && text(sp, "parentSpanId") == parent
            && text(sp, "name") == "request"
    })
    .await;
    let other = span_where(&spans, "the untraced request's span", |sp| {
        text(sp, "traceId") != trace && text(sp, "name") == "request"
    })
    .await;
    assert_eq!(
        text(&child, "spanId").len(),
        16,
        "a span id of its own: {child}"
    );
    assert_ne!(text(&child, "spanId"), parent);
    assert_eq!(text(&other, "traceId").len(), 32, "{other}");
    assert_eq!(
        text(&other, "parentSpanId"),
        "",
        "no parent without traceparent: {other}"
    );
}

#[tokio::test]
async fn sends_under_a_traceparent_carry_it_as_aws_trace_header_and_receives_link_to_them() {
    let (endpoint, spans) = receiver().await;
    let s = traced_server(&endpoint);
    s.sqs("CreateQueue", json!({"QueueName": "linked"})).await;
    let url = s.queue_url("linked");
    let trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let (one, batch) = ("00f067aa0ba902b7", "00f067aa0ba902b8");
    let sent = sqs_under(
        &s,
        trace,
        one,
        "SendMessage",
        json!({"QueueUrl": url, "MessageBody": "one"}),
    )
    .await;
    let sent_batch = sqs_under(
        &s,
        trace,
        batch,
        "SendMessageBatch",
        json!({"QueueUrl": url, "Entries": [
            {"Id": "a", "MessageBody": "two"},
            {"Id": "b", "MessageBody": "three"},
        ]}),
    )
    .await;
    assert_eq!(sent_batch["Successful"].as_array().map(Vec::len), Some(2));
    let got = receive(&s, &url, 3).await;
    // Each send's request span, a child of the caller's span.
    let send_span = |p: &'static str| {
        span_where(&spans, "a send's span", move |sp| {
            text(sp, "traceId") == trace && text(sp, "parentSpanId") == p
        })
    };
    let (one_span, batch_span) = (send_span(one).await, send_span(batch).await);
    for m in &got {
        let header = trace_header(m).unwrap_or_else(|| panic!("no AWSTraceHeader: {m}"));
        let span_id = if m["Body"] == "one" {
            assert_eq!(m["MessageId"], sent["MessageId"]);
            text(&one_span, "spanId")
        } else {
            text(&batch_span, "spanId")
        };
        // X-Ray form of the W3C ids: Root=1-{8 hex}-{24 hex}; Parent = the send's span.
        assert_eq!(
            header,
            format!(
                "Root=1-{}-{};Parent={span_id};Sampled=1",
                &trace[..8],
                &trace[8..]
            ),
            "{m}"
        );
    }
    // The receive (a trace of its own) links to each message's send.
    let receive_span = span_where(&spans, "the receive's span with its links", |sp| {
        got.iter().all(|m| {
            let id = m["MessageId"].as_str().unwrap();
            let span_id = if m["Body"] == "one" {
                &one_span
            } else {
                &batch_span
            };
            links_to(sp, trace, text(span_id, "spanId"), id)
        })
    })
    .await;
    assert_ne!(text(&receive_span, "traceId"), trace, "{receive_span}");
}

#[tokio::test]
async fn a_send_without_traceparent_carries_the_servers_own_trace() {
    let (endpoint, spans) = receiver().await;
    let s = traced_server(&endpoint);
    s.sqs("CreateQueue", json!({"QueueName": "own"})).await;
    let url = s.queue_url("own");
    s.sqs("SendMessage", json!({"QueueUrl": url, "MessageBody": "x"}))
        .await;
    let got = receive(&s, &url, 1).await;
    let header = trace_header(&got[0]).expect("an AWSTraceHeader").to_owned();
    // Root=1-XXXXXXXX-YYYYYYYYYYYYYYYYYYYYYYYY;Parent=ZZZZZZZZZZZZZZZZ;Sampled=1
    let fields: Vec<&str> = header.split(';').collect();
    let root = fields[0].strip_prefix("Root=1-").expect("Root first");
    let trace = root.replace('-', "");
    let parent = fields[1].strip_prefix("Parent=").expect("Parent second");
    assert_eq!(
        (trace.len(), parent.len(), fields[2]),
        (32, 16, "Sampled=1")
    );
    // It names the send's exported request span.
    span_where(&spans, "the send's span, named by the header", |sp| {
        text(sp, "traceId") == trace && text(sp, "spanId") == parent
    })
    .await;
}

#[tokio::test]
async fn an_explicit_aws_trace_header_wins_over_the_trace_context() {
    let (endpoint, spans) = receiver().await;
    let s = traced_server(&endpoint);
    s.sqs("CreateQueue", json!({"QueueName": "explicit"})).await;
    let url = s.queue_url("explicit");
    let theirs = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1";
    let sent = sqs_under(
        &s,
        "0af7651916cd43dd8448eb211c80319c",
        "b7ad6b7169203331",
        "SendMessage",
        json!({"QueueUrl": url, "MessageBody": "x", "MessageSystemAttributes": {
            "AWSTraceHeader": {"DataType": "String", "StringValue": theirs}}}),
    )
    .await;
    let got = receive(&s, &url, 1).await;
    assert_eq!(trace_header(&got[0]), Some(theirs));
    // The receive links to the span that header names.
    let id = sent["MessageId"].as_str().unwrap();
    span_where(&spans, "the receive's link to the sender's span", |sp| {
        links_to(
            sp,
            "5759e988bd862e3fe1be46a994272793",
            "53995c3f42cd8ad8",
            id,
        )
    })
    .await;
}

#[tokio::test]
async fn a_publish_under_a_traceparent_reaches_its_sqs_subscribers_trace() {
    let (endpoint, spans) = receiver().await;
    let s = traced_server(&endpoint);
    s.sqs("CreateQueue", json!({"QueueName": "fanned"})).await;
    let url = s.queue_url("fanned");
    let (status, xml) = s.sns("CreateTopic", &[("Name", "news")]).await;
    assert_eq!(status, 200, "{xml}");
    let topic = "arn:aws:sns:us-east-1:000000000000:news";
    let (status, xml) = s
        .sns(
            "Subscribe",
            &[
                ("TopicArn", topic),
                ("Protocol", "sqs"),
                ("Endpoint", "arn:aws:sqs:us-east-1:000000000000:fanned"),
            ],
        )
        .await;
    assert_eq!(status, 200, "{xml}");
    let trace = "5bf92f3577b34da6a3ce929d0e0e4736";
    let parent = "10f067aa0ba902b7";
    let mut form = form_urlencoded::Serializer::new(String::new());
    for (k, v) in [
        ("Action", "Publish"),
        ("Version", "2010-03-31"),
        ("TopicArn", topic),
        ("Message", "hello"),
    ] {
        form.append_pair(k, v);
    }
    let resp = s
        .http
        .post(s.url("/"))
        .header("content-type", "application/x-www-form-urlencoded")
        .header("traceparent", format!("00-{trace}-{parent}-01"))
        .body(form.finish())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let got = receive(&s, &url, 1).await;
    let publish_span = span_where(&spans, "the publish's span", |sp| {
        text(sp, "traceId") == trace && text(sp, "parentSpanId") == parent
    })
    .await;
    assert_eq!(
        trace_header(&got[0]),
        Some(
            format!(
                "Root=1-{}-{};Parent={};Sampled=1",
                &trace[..8],
                &trace[8..],
                text(&publish_span, "spanId")
            )
            .as_str()
        ),
        "{}",
        got[0]
    );
}

#[tokio::test]
async fn without_an_otlp_endpoint_no_message_gains_an_aws_trace_header() {
    let s = Server::start();
    s.sqs("CreateQueue", json!({"QueueName": "plain"})).await;
    let url = s.queue_url("plain");
    sqs_under(
        &s,
        "0af7651916cd43dd8448eb211c80319c",
        "b7ad6b7169203331",
        "SendMessage",
        json!({"QueueUrl": url, "MessageBody": "traced caller"}),
    )
    .await;
    s.sqs(
        "SendMessage",
        json!({"QueueUrl": url, "MessageBody": "plain"}),
    )
    .await;
    let got = receive(&s, &url, 2).await;
    for m in &got {
        assert_eq!(trace_header(m), None, "{m}");
        assert!(m["Attributes"]["SentTimestamp"].is_string(), "{m}");
    }
}

#[tokio::test]
async fn the_seeds_receive_links_to_the_send_too() {
    let (endpoint, spans) = receiver().await;
    let s = traced_server(&endpoint);
    // A queue of the seeds' API, sent to over SQS under a trace.
    let resp = s.http.post(s.url("/queues/seeded")).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 201);
    let trace = "6bf92f3577b34da6a3ce929d0e0e4736";
    let parent = "20f067aa0ba902b7";
    let sent = sqs_under(
        &s,
        trace,
        parent,
        "SendMessage",
        json!({"QueueUrl": s.queue_url("seeded"), "MessageBody": "x"}),
    )
    .await;
    let got: Value = s
        .http
        .get(s.url("/queues/seeded/messages?wait_seconds=5"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = sent["MessageId"].as_str().unwrap();
    assert_eq!(got["id"], id, "{got}");
    let send_span = span_where(&spans, "the send's span", |sp| {
        text(sp, "traceId") == trace && text(sp, "parentSpanId") == parent
    })
    .await;
    span_where(&spans, "the seeds' receive linking to the send", |sp| {
        links_to(sp, trace, text(&send_span, "spanId"), id)
    })
    .await;
}

#[tokio::test]
async fn an_event_source_mapping_batch_links_to_the_sends() {
    let (endpoint, spans) = receiver().await;
    // The function: a plain HTTP handler that takes every batch.
    let invoked = Arc::new(tokio::sync::Notify::new());
    let told = invoked.clone();
    let app = axum::Router::new().route(
        "/",
        post(move || {
            let told = told.clone();
            async move {
                told.notify_one();
                axum::Json(json!({}))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let function = format!("http://{}/", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let dir = tempfile::tempdir().unwrap();
    let config = crate::harness::write_file(
        dir.path(),
        "loft.toml",
        &format!(
            "[server]\nlisten = \"127.0.0.1:0\"\n\n[[queues]]\nname = \"mapped\"\n\n\
             [[functions]]\nname = \"f\"\nurl = \"{function}\"\n\n\
             [[event_source_mappings]]\nfunction = \"f\"\nqueue = \"mapped\"\n"
        ),
    );
    let config = config.to_str().unwrap().to_owned();
    let s = Server::start_in(
        dir,
        &["--config", &config],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
            ("OTEL_BSP_SCHEDULE_DELAY", "50"),
        ],
    )
    .expect("starts");
    let trace = "7bf92f3577b34da6a3ce929d0e0e4736";
    let parent = "30f067aa0ba902b7";
    let sent = sqs_under(
        &s,
        trace,
        parent,
        "SendMessage",
        json!({"QueueUrl": s.queue_url("mapped"), "MessageBody": "x"}),
    )
    .await;
    tokio::time::timeout(std::time::Duration::from_secs(30), invoked.notified())
        .await
        .expect("the function is invoked");
    let id = sent["MessageId"].as_str().unwrap();
    let send_span = span_where(&spans, "the send's span", |sp| {
        text(sp, "traceId") == trace && text(sp, "parentSpanId") == parent
    })
    .await;
    let batch = span_where(&spans, "the mapping batch linking to the send", |sp| {
        links_to(sp, trace, text(&send_span, "spanId"), id)
    })
    .await;
    assert_eq!(text(&batch, "name"), "mapping_batch", "{batch}");
}
