//! OpenTelemetry traces: with `OTEL_EXPORTER_OTLP_ENDPOINT` set, each request's span
//! reaches an OTLP/HTTP receiver (a small one in this test, reading the JSON bodies the
//! exporter posts to `/v1/traces`); a request carrying a W3C `traceparent` is a child of
//! the caller's span, in the caller's trace.

use std::sync::{Arc, Mutex};

use axum::routing::post;
use serde_json::{json, Value};

use crate::harness::{eventually, Server};

/// Every span the receiver got: (trace id, span id, parent span id, name).
type Spans = Arc<Mutex<Vec<(String, String, String, String)>>>;

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
                        for s in ss["spans"].as_array().into_iter().flatten() {
                            let text = |k: &str| s[k].as_str().unwrap_or("").to_owned();
                            got.push((
                                text("traceId"),
                                text("spanId"),
                                text("parentSpanId"),
                                text("name"),
                            ));
                        }
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

#[tokio::test]
async fn request_spans_reach_the_otlp_endpoint_under_the_callers_trace() {
    let (endpoint, spans) = receiver().await;
    let s = Server::start_with(
        &[],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
            ("OTEL_BSP_SCHEDULE_DELAY", "50"),
        ],
    )
    .expect("starts");
    let trace = "0af7651916cd43dd8448eb211c80319c";
    let parent = "b7ad6b7169203331";
    let resp = s
        .http
        .post(s.url("/"))
        .header("x-amz-target", "AmazonSQS.CreateQueue")
        .header("content-type", "application/x-amz-json-1.0")
        .header("traceparent", format!("00-{trace}-{parent}-01"))
        .body(json!({"QueueName": "traced"}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    // And one without: a trace of its own, with no parent.
    s.sqs("ListQueues", json!({})).await;
    let (child, other) = eventually("both request spans at the receiver", || async {
        let got = spans.lock().unwrap().clone();
        let child = got
            .iter()
            .find(|(t, _, p, n)| t == trace && p == parent && n == "request")
            .cloned();
        let other = got
            .iter()
            .find(|(t, _, _, n)| t != trace && n == "request")
            .cloned();
        child.zip(other)
    })
    .await;
    assert_eq!(child.1.len(), 16, "a span id of its own: {child:?}");
    assert_ne!(child.1, parent);
    assert_eq!(other.0.len(), 32, "{other:?}");
    assert_eq!(other.2, "", "no parent without traceparent: {other:?}");
}
