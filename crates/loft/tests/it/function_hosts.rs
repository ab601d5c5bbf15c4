//! A function from the ecosystem behind Loft: a Python handler using Powertools for AWS
//! Lambda's batch processor (`tests/functions/powertools_batch.py`), run by AWS's Runtime
//! Interface Client (`awslambdaric`), fed by an SQS event source mapping of a real Loft.
//!
//! Between them sits the Runtime Interface Emulator's contract, played by this test: the
//! Invoke API towards Loft (`POST /2015-03-31/functions/{name}/invocations`) and the Lambda
//! Runtime API towards the client (`GET /2018-06-01/runtime/invocation/next`, `POST
//! .../{request id}/response` and `.../error`; Lambda Developer Guide "Using the Lambda
//! runtime API for custom runtimes"), one invocation at a time, as one Lambda execution
//! environment runs them.
//!
//! The Python packages are installed by `.ci/run`, which sets `LOFT_REQUIRE_FUNCTION_HOSTS`:
//! there a missing package fails the test; elsewhere the test skips with a note.

use std::collections::{HashMap, VecDeque};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde_json::Value;
use tokio::sync::{oneshot, Notify};

use crate::common::{sqs_client, Loft};

/// What an invocation ended with: the function's response, or its error.
type Outcome = Result<String, String>;

struct Pending {
    id: String,
    event: String,
    reply: oneshot::Sender<Outcome>,
}

#[derive(Clone, Default)]
struct Emulator {
    queue: Arc<Mutex<VecDeque<Pending>>>,
    arrived: Arc<Notify>,
    in_flight: Arc<Mutex<HashMap<String, oneshot::Sender<Outcome>>>>,
    /// Every (event, outcome) pair, in completion order.
    log: Arc<Mutex<Vec<(Value, Outcome)>>>,
}

async fn invoke(State(e): State<Emulator>, Path(_name): Path<String>, body: Bytes) -> Response {
    let (tx, rx) = oneshot::channel();
    let event = String::from_utf8_lossy(&body).into_owned();
    e.queue.lock().unwrap().push_back(Pending {
        id: uuid_like(),
        event: event.clone(),
        reply: tx,
    });
    e.arrived.notify_one();
    let outcome = rx.await.unwrap_or_else(|_| Err("runtime gone".into()));
    e.log.lock().unwrap().push((
        serde_json::from_str(&event).unwrap_or(Value::Null),
        outcome.clone(),
    ));
    match outcome {
        Ok(payload) => (StatusCode::OK, payload).into_response(),
        Err(error) => {
            let mut r = (StatusCode::OK, error).into_response();
            r.headers_mut()
                .insert("x-amz-function-error", "Unhandled".parse().unwrap());
            r
        }
    }
}

fn uuid_like() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(1);
    format!(
        "00000000-0000-4000-8000-{:012}",
        N.fetch_add(1, Ordering::Relaxed)
    )
}

async fn next(State(e): State<Emulator>) -> Response {
    let p = loop {
        let notified = e.arrived.notified();
        if let Some(p) = e.queue.lock().unwrap().pop_front() {
            break p;
        }
        notified.await;
    };
    e.in_flight.lock().unwrap().insert(p.id.clone(), p.reply);
    let deadline = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis()
        + 30_000;
    (
        StatusCode::OK,
        [
            ("lambda-runtime-aws-request-id", p.id),
            ("lambda-runtime-deadline-ms", deadline.to_string()),
            (
                "lambda-runtime-invoked-function-arn",
                "arn:aws:lambda:us-east-1:000000000000:function:batch".to_owned(),
            ),
            (
                "lambda-runtime-trace-id",
                "Root=1-00000000-000000000000000000000000".to_owned(),
            ),
            ("content-type", "application/json".to_owned()),
        ],
        p.event,
    )
        .into_response()
}

async fn done(
    State(e): State<Emulator>,
    Path((id, kind)): Path<(String, String)>,
    body: Bytes,
) -> StatusCode {
    let text = String::from_utf8_lossy(&body).into_owned();
    let Some(reply) = e.in_flight.lock().unwrap().remove(&id) else {
        return StatusCode::BAD_REQUEST;
    };
    let _ = reply.send(if kind == "response" {
        Ok(text)
    } else {
        Err(text)
    });
    StatusCode::ACCEPTED
}

async fn init_error(body: Bytes) -> StatusCode {
    eprintln!("runtime init error: {}", String::from_utf8_lossy(&body));
    StatusCode::ACCEPTED
}

/// Whether python3 has awslambdaric and aws_lambda_powertools; `None` with a note when
/// not (a failure under `LOFT_REQUIRE_FUNCTION_HOSTS`).
fn python_with_packages() -> Option<()> {
    let ok = Command::new("python3")
        .args(["-c", "import awslambdaric, aws_lambda_powertools"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        return Some(());
    }
    let note = "python3 with awslambdaric and aws-lambda-powertools is needed \
                (pip install awslambdaric aws-lambda-powertools)";
    crate::skips::function_hosts(Some(note.to_owned())).skip("function_hosts");
    None
}

struct Runtime(Child);

impl Drop for Runtime {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_powertools_batch_handler_under_the_runtime_interface_client_reports_partial_failures() {
    if python_with_packages().is_none() {
        return;
    }
    let emu = Emulator::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().unwrap();
    let app = Router::new()
        .route("/2015-03-31/functions/{name}/invocations", post(invoke))
        .route("/2018-06-01/runtime/invocation/next", get(next))
        .route("/2018-06-01/runtime/invocation/{id}/{kind}", post(done))
        .route("/2018-06-01/runtime/init/error", post(init_error))
        .with_state(emu.clone());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let functions_dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/functions");
    let _runtime = Runtime(
        Command::new("python3")
            .args(["-m", "awslambdaric", "powertools_batch.handler"])
            .current_dir(functions_dir)
            .env("AWS_LAMBDA_RUNTIME_API", addr.to_string())
            .env("PYTHONPATH", functions_dir)
            .env("AWS_LAMBDA_FUNCTION_NAME", "batch")
            .env("POWERTOOLS_SERVICE_NAME", "loft-test")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .expect("start the runtime interface client"),
    );
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("loft.toml");
    std::fs::write(
        &config,
        format!(
            r#"
[[functions]]
name = "batch"
invoke_endpoint = "http://{addr}"
timeout_seconds = 30

[[queues]]
name = "jobs-dlq"

[[queues]]
name = "jobs"
attributes = {{ VisibilityTimeout = "1", RedrivePolicy = {{ maxReceiveCount = 2, deadLetterTargetArn = "arn:aws:sqs:us-east-1:000000000000:jobs-dlq" }} }}

[[event_source_mappings]]
function = "batch"
queue = "jobs"
batch_size = 10
function_response_types = ["ReportBatchItemFailures"]
"#
        ),
    )
    .unwrap();
    let loft = Loft::start_with(&["--config", config.to_str().unwrap()]);
    let sqs = sqs_client(&loft.base);
    let url = format!("{}/000000000000/jobs", loft.base);
    let mut failing = Vec::new();
    for n in 0..60 {
        let body = if n % 10 == 3 {
            format!("fail-{n}")
        } else {
            format!("job-{n}")
        };
        if body.starts_with("fail") {
            failing.push(body.clone());
        }
        sqs.send_message()
            .queue_url(&url)
            .message_body(&body)
            .send()
            .await
            .expect("send");
    }
    let dlq = format!("{}/000000000000/jobs-dlq", loft.base);
    let mut dead = Vec::new();
    let start = Instant::now();
    while dead.len() < failing.len() {
        assert!(
            start.elapsed() < Duration::from_secs(90),
            "dead-lettered {dead:?} of {failing:?}; log: {:?}",
            emu.log.lock().unwrap().last()
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
    failing.sort();
    assert_eq!(dead, failing);
    // Powertools answered each batch with the failures it saw, and only those.
    let log = emu.log.lock().unwrap().clone();
    assert!(!log.is_empty());
    let mut processed = std::collections::HashSet::new();
    for (event, outcome) in &log {
        let records = event["Records"].as_array().unwrap();
        let answer: Value = match outcome {
            Ok(a) => serde_json::from_str(a).expect("a JSON answer"),
            // Powertools raises when every record of a batch failed (the failures coming
            // back alone): a function error, so the whole batch returns.
            Err(e) => {
                let err: Value = serde_json::from_str(e).expect("a JSON error");
                assert_eq!(err["errorType"], "BatchProcessingError");
                for r in records {
                    assert!(r["body"].as_str().unwrap().starts_with("fail"), "{r}");
                    processed.insert(r["body"].as_str().unwrap().to_owned());
                }
                continue;
            }
        };
        let failed: Vec<&str> = answer["batchItemFailures"]
            .as_array()
            .expect("batchItemFailures")
            .iter()
            .map(|f| f["itemIdentifier"].as_str().unwrap())
            .collect();
        for r in records {
            let body = r["body"].as_str().unwrap();
            let id = r["messageId"].as_str().unwrap();
            assert_eq!(failed.contains(&id), body.starts_with("fail"), "{body}");
            processed.insert(body.to_owned());
        }
    }
    assert_eq!(processed.len(), 60, "every message reached the handler");
}
