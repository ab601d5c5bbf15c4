//! The `function` scenario: messages per second through an SQS event source mapping into
//! a no-op HTTP function, and the delay from the start of each send to the invocation that
//! carries it.
//!
//! The bench is the function: it answers `POST`s on `--function-listen` with
//! `{"batchItemFailures":[]}` and reads each SQS event's bodies (which carry their send
//! time). Loft must name it in its config file:
//!
//! ```toml
//! [[functions]]
//! name = "bench-noop"
//! url = "http://127.0.0.1:9700/"
//! ```
//!
//! Then `loft bench --scenario function --function bench-noop`: the bench creates its
//! queue, a mapping of it to the function through the Lambda API (`POST
//! /2015-03-31/event-source-mappings/`, BatchSize 10), sends `--messages` messages on
//! `--connections` connections, waits for every one to be invoked (or the duration limit),
//! and deletes the mapping.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper::{Method, Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};

use crate::client::Client;
use crate::scenarios::{self, Ctx};
use crate::sqs::QueueArnOut;
use crate::stats::{micros, Recorder};

/// What the function saw: distinct message sequence numbers, repeats, and the delays.
#[derive(Default)]
struct Seen {
    seqs: HashSet<u64>,
    repeats: u64,
    delays_us: Vec<u32>,
    invocations: u64,
}

/// Answers one invocation: records its records and says none failed.
fn on_event(ctx: &Ctx, seen: &Mutex<Seen>, body: &[u8]) {
    let now = Instant::now();
    let Ok(event) = serde_json::from_slice::<Value>(body) else {
        return;
    };
    let mut s = seen.lock().unwrap_or_else(|p| p.into_inner());
    s.invocations += 1;
    for r in event["Records"].as_array().into_iter().flatten() {
        let Some(b) = r["body"].as_str() else {
            continue;
        };
        let Some(seq) = b.split(':').next().and_then(|x| x.parse::<u64>().ok()) else {
            continue;
        };
        if s.seqs.insert(seq) {
            ctx.progress.received.fetch_add(1, Ordering::Relaxed);
            if let Some(d) = ctx.age_of(b, now) {
                s.delays_us.push(micros(d));
            }
        } else {
            s.repeats += 1;
        }
    }
}

async fn serve(listener: tokio::net::TcpListener, ctx: Arc<Ctx>, seen: Arc<Mutex<Seen>>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let _ = stream.set_nodelay(true);
        let (ctx, seen) = (ctx.clone(), seen.clone());
        tokio::spawn(async move {
            let svc = service_fn(move |req: Request<hyper::body::Incoming>| {
                let (ctx, seen) = (ctx.clone(), seen.clone());
                async move {
                    let body = req
                        .into_body()
                        .collect()
                        .await
                        .map(|b| b.to_bytes())
                        .unwrap_or_default();
                    on_event(&ctx, &seen, &body);
                    Ok::<_, std::convert::Infallible>(Response::new(Full::new(Bytes::from_static(
                        br#"{"batchItemFailures":[]}"#,
                    ))))
                }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), svc)
                .await;
        });
    }
}

/// Runs the scenario; returns the recorder (sends, the mapping calls, the delays) and how
/// many messages were invoked more than once.
pub async fn run(
    ctx: Arc<Ctx>,
    function: &str,
    listen: SocketAddr,
    messages: u64,
    connections: usize,
) -> (Recorder, u64) {
    let mut rec = Recorder::new(ctx.progress.clone());
    let listener = match tokio::net::TcpListener::bind(listen).await {
        Ok(l) => l,
        Err(e) => {
            rec.error(format!("cannot listen on {listen}: {e}"), 1);
            return (rec, 0);
        }
    };
    let seen = Arc::new(Mutex::new(Seen::default()));
    let server = tokio::spawn(serve(listener, ctx.clone(), seen.clone()));
    let mut client = Client::new(ctx.endpoint.clone(), ctx.auth);
    let arn = match client
        .call::<_, QueueArnOut>(
            "GetQueueAttributes",
            &json!({"QueueUrl": ctx.queue_url, "AttributeNames": ["QueueArn"]}),
        )
        .await
    {
        Ok(a) => a.attributes.queue_arn,
        Err(e) => {
            rec.failed("GetQueueAttributes", &e);
            server.abort();
            return (rec, 0);
        }
    };
    let t0 = Instant::now();
    let created = client
        .rest(
            Method::POST,
            "/2015-03-31/event-source-mappings/",
            json!({"FunctionName": function, "EventSourceArn": arn, "BatchSize": 10})
                .to_string()
                .into_bytes(),
        )
        .await;
    let uuid = match created {
        Ok(b) => {
            rec.ok("CreateEventSourceMapping", t0.elapsed());
            serde_json::from_slice::<Value>(&b)
                .ok()
                .and_then(|v| v["UUID"].as_str().map(str::to_owned))
        }
        Err(e) => {
            rec.failed("CreateEventSourceMapping", &e);
            server.abort();
            return (rec, 0);
        }
    };
    let claims = Arc::new(AtomicU64::new(0));
    let sends = scenarios::run_workers(connections, &ctx.progress, || {
        scenarios::send_worker(ctx.clone(), claims.clone(), messages, None, true)
    })
    .await;
    rec.merge(sends);
    let target = ctx.progress.sent.load(Ordering::Relaxed);
    while ctx.progress.received.load(Ordering::Relaxed) < target {
        if ctx.past_deadline() {
            ctx.cut.store(true, Ordering::Relaxed);
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    rec.worked();
    if let Some(uuid) = uuid {
        let t = Instant::now();
        match client
            .rest(
                Method::DELETE,
                &format!("/2015-03-31/event-source-mappings/{uuid}"),
                Vec::new(),
            )
            .await
        {
            Ok(_) => rec.ok("DeleteEventSourceMapping", t.elapsed()),
            Err(e) => rec.failed("DeleteEventSourceMapping", &e),
        }
    }
    server.abort();
    let mut s = seen.lock().unwrap_or_else(|p| p.into_inner());
    rec.delivery_micros = std::mem::take(&mut s.delays_us);
    (rec, s.repeats)
}
