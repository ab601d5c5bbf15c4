//! A small in-memory SQS JSON endpoint for the bench's own end-to-end tests: just
//! the operations the bench calls, with long polling, so every scenario can be run to
//! completion without an outside server.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use axum::Router;
use serde_json::{json, Value};
use tokio::sync::Notify;

/// One queue: messages waiting, and messages received but not deleted.
#[derive(Default)]
pub struct Queue {
    visible: VecDeque<(String, String)>,
    /// Receipt handle → (MessageId, body).
    inflight: HashMap<String, (String, String)>,
}

/// The fake's state; `queues` is readable by the tests.
#[derive(Default)]
pub struct Fake {
    pub queues: Mutex<HashMap<String, Queue>>,
    arrived: Notify,
    ids: AtomicU64,
    require_auth: bool,
}

/// Serves a fake on 127.0.0.1 with an ephemeral port; returns its URL and state.
pub async fn start(require_auth: bool) -> (String, Arc<Fake>) {
    let fake = Arc::new(Fake {
        require_auth,
        ..Fake::default()
    });
    let app = Router::new()
        .route("/", post(handle))
        .with_state(fake.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (format!("http://{addr}"), fake)
}

fn error(status: StatusCode, code: &str) -> (StatusCode, String) {
    (
        status,
        json!({"__type": format!("com.amazonaws.sqs#{code}"), "message": code}).to_string(),
    )
}

async fn handle(
    State(fake): State<Arc<Fake>>,
    headers: HeaderMap,
    body: String,
) -> (StatusCode, String) {
    if fake.require_auth && !headers.contains_key("authorization") {
        return error(StatusCode::FORBIDDEN, "MissingAuthenticationTokenException");
    }
    let op = headers
        .get("x-amz-target")
        .and_then(|v| v.to_str().ok())
        .and_then(|t| t.strip_prefix("AmazonSQS."))
        .unwrap_or("")
        .to_string();
    let Ok(input) = serde_json::from_str::<Value>(&body) else {
        return error(StatusCode::BAD_REQUEST, "SerializationException");
    };
    let s = |k: &str| input[k].as_str().unwrap_or("").to_string();
    let url = s("QueueUrl");
    let next_id = || format!("m{}", fake.ids.fetch_add(1, Ordering::Relaxed));
    let out = match op.as_str() {
        "CreateQueue" | "GetQueueUrl" => {
            let url = format!("http://fake/000000000000/{}", s("QueueName"));
            let mut queues = fake.queues.lock().unwrap();
            if op == "GetQueueUrl" && !queues.contains_key(&url) {
                return error(StatusCode::BAD_REQUEST, "QueueDoesNotExist");
            }
            queues.entry(url.clone()).or_default();
            json!({ "QueueUrl": url })
        }
        "DeleteQueue" => {
            fake.queues.lock().unwrap().remove(&url);
            json!({})
        }
        "SendMessage" | "SendMessageBatch" => {
            let bodies: Vec<(String, String)> = if op == "SendMessage" {
                vec![(String::new(), s("MessageBody"))]
            } else {
                input["Entries"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|e| {
                        let id = e["Id"].as_str().unwrap_or("").to_string();
                        (id, e["MessageBody"].as_str().unwrap_or("").to_string())
                    })
                    .collect()
            };
            let mut done = Vec::new();
            {
                let mut queues = fake.queues.lock().unwrap();
                let Some(q) = queues.get_mut(&url) else {
                    return error(StatusCode::BAD_REQUEST, "QueueDoesNotExist");
                };
                for (entry, body) in bodies {
                    let id = next_id();
                    q.visible.push_back((id.clone(), body));
                    done.push(json!({"Id": entry, "MessageId": id}));
                }
            }
            fake.arrived.notify_waiters();
            if op == "SendMessage" {
                json!({ "MessageId": done[0]["MessageId"] })
            } else {
                json!({ "Successful": done, "Failed": [] })
            }
        }
        "ReceiveMessage" => {
            let max = input["MaxNumberOfMessages"].as_u64().unwrap_or(1) as usize;
            let wait = input["WaitTimeSeconds"].as_u64().unwrap_or(0);
            let end = tokio::time::Instant::now() + Duration::from_secs(wait);
            loop {
                let arrived = fake.arrived.notified();
                tokio::pin!(arrived);
                arrived.as_mut().enable();
                let got: Vec<Value> = {
                    let mut queues = fake.queues.lock().unwrap();
                    let Some(q) = queues.get_mut(&url) else {
                        return error(StatusCode::BAD_REQUEST, "QueueDoesNotExist");
                    };
                    let n = max.min(q.visible.len());
                    q.visible
                        .drain(..n)
                        .collect::<Vec<_>>()
                        .into_iter()
                        .map(|(id, body)| {
                            let receipt =
                                format!("r-{id}-{}", fake.ids.fetch_add(1, Ordering::Relaxed));
                            q.inflight
                                .insert(receipt.clone(), (id.clone(), body.clone()));
                            json!({"MessageId": id, "ReceiptHandle": receipt, "Body": body})
                        })
                        .collect()
                };
                if !got.is_empty() || tokio::time::Instant::now() >= end {
                    break json!({ "Messages": got });
                }
                let _ = tokio::time::timeout_at(end, arrived).await;
            }
        }
        "DeleteMessage" => {
            if let Some(q) = fake.queues.lock().unwrap().get_mut(&url) {
                q.inflight.remove(&s("ReceiptHandle"));
            }
            json!({})
        }
        "DeleteMessageBatch" => {
            let mut queues = fake.queues.lock().unwrap();
            let Some(q) = queues.get_mut(&url) else {
                return error(StatusCode::BAD_REQUEST, "QueueDoesNotExist");
            };
            let ok: Vec<Value> = input["Entries"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|e| {
                    q.inflight
                        .remove(e["ReceiptHandle"].as_str().unwrap_or(""))
                        .is_some()
                })
                .map(|e| json!({"Id": e["Id"]}))
                .collect();
            json!({ "Successful": ok, "Failed": [] })
        }
        _ => return error(StatusCode::BAD_REQUEST, "InvalidAction"),
    };
    (StatusCode::OK, out.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{run_report, BenchArgs, Scenario};

    fn args(endpoint: &str, scenario: Scenario, messages: u64) -> BenchArgs {
        BenchArgs {
            endpoint: endpoint.to_string(),
            scenario,
            connections: 4,
            messages: Some(messages),
            size: 64,
            duration_limit: 30,
            queue: None,
            fifo_groups: None,
            fair_baseline: false,
            server_pid: Some(std::process::id()),
            function: None,
            function_listen: std::net::SocketAddr::from(([127, 0, 0, 1], 9700)),
            json: true,
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_scenario_runs_to_completion() {
        let (url, fake) = start(false).await;
        for (scenario, n) in [
            (Scenario::Send, 300),
            (Scenario::SendBatch, 305),
            (Scenario::ReceiveDelete, 305),
            (Scenario::ProduceConsume, 300),
            (Scenario::LongPoll, 5),
        ] {
            let r = run_report(&args(&url, scenario, n)).await.unwrap();
            let name = scenario.name();
            assert_eq!(r.stopped_by, "messages", "{name}");
            assert_eq!(r.errors, 0, "{name}: {:?}", r.error_examples);
            assert_eq!(r.messages, n, "{name}");
            assert!(r.messages_per_second > 0.0, "{name}");
            assert!(r.calls.iter().all(|c| c.latency.is_some()), "{name}");
            let server = r.server.as_ref().expect("server stats");
            assert!(server.rss_kib > 0, "{name}");
            match scenario {
                Scenario::ReceiveDelete | Scenario::ProduceConsume => {
                    assert_eq!(r.duplicates, Some(0), "{name}");
                    assert_eq!(r.deleted, Some(n), "{name}");
                }
                _ => assert_eq!(r.duplicates, None, "{name}"),
            }
            match scenario {
                Scenario::ProduceConsume | Scenario::LongPoll => {
                    assert_eq!(
                        r.delivery_latency.as_ref().map(|l| l.count),
                        Some(n),
                        "{name}"
                    )
                }
                _ => assert!(r.delivery_latency.is_none(), "{name}"),
            }
            if scenario == Scenario::ReceiveDelete {
                assert_eq!(r.preload.as_ref().map(|p| p.messages), Some(n));
            }
        }
        assert!(
            fake.queues.lock().unwrap().is_empty(),
            "the fresh queues were not deleted"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn fair_reports_dwell_per_tenant() {
        let (url, _fake) = start(false).await;
        for baseline in [false, true] {
            let mut a = args(&url, Scenario::Fair, 300);
            a.fair_baseline = baseline;
            let r = run_report(&a).await.unwrap();
            assert_eq!(r.stopped_by, "messages");
            assert_eq!(r.errors, 0, "{:?}", r.error_examples);
            assert_eq!(r.duplicates, Some(0));
            let f = r.fair.as_ref().expect("the fair report");
            assert_eq!(f.grouped, !baseline);
            assert_eq!(f.tenants[0].tenant, "noisy");
            assert_eq!(f.tenants[0].messages, 300);
            let quiet = &f.tenants[1];
            assert_eq!(quiet.tenant, "quiet (all)");
            assert!(quiet.messages >= 9, "{}", quiet.messages);
            assert_eq!(r.messages, 300 + quiet.messages);
            assert_eq!(f.tenants.len(), 2 + 9);
            assert!(r.table().contains("quiet-9"));
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn signs_only_when_the_endpoint_insists() {
        let (url, _fake) = start(true).await;
        let r = run_report(&args(&url, Scenario::Send, 20)).await.unwrap();
        assert_eq!((r.messages, r.errors), (20, 0));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_time_cap_stops_a_run_and_a_named_queue_is_kept() {
        let (url, fake) = start(false).await;
        let mut a = args(&url, Scenario::LongPoll, 1_000_000);
        a.duration_limit = 1;
        a.queue = Some("kept".into());
        let t = std::time::Instant::now();
        let r = run_report(&a).await.unwrap();
        assert_eq!(r.stopped_by, "duration-limit");
        assert!(r.messages > 0 && r.messages < 1_000_000, "{}", r.messages);
        assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
        assert!(fake
            .queues
            .lock()
            .unwrap()
            .contains_key("http://fake/000000000000/kept"));
    }
}
