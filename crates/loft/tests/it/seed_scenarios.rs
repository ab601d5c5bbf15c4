//! The seeds' own uses of Loft, end to end: the scheduler's worker polling `jobs`
//! (`chapter-41-sqs.md`) and the object store's `s3:ObjectCreated` event reaching the
//! Lambda's `/trigger-notify` endpoint (`chapter-42-sns.md`).

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::{json, Value};

use crate::common::{Loft, Sink};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_polls_jobs_parses_commands_and_acknowledges_them() {
    let loft = Arc::new(Loft::start());
    let commands: Vec<String> = (0..10).map(|i| format!("run-job-{i}")).collect();
    let body = |c: &str| json!({"command": c, "image": "alpine"}).to_string();

    // The producer drops work on `jobs` without creating the queue first.
    loft.send_msg("jobs", &body(&commands[0])).await;
    assert_eq!(loft.names("/queues").await, ["jobs"]);

    // The worker: receive, parse the body as a JSON job, acknowledge with DELETE. It
    // receives with visibility 0 so a message it failed to delete would come straight
    // back (as a duplicate) and would still be there at the end.
    let worker = {
        let loft = loft.clone();
        let want = commands.len();
        tokio::spawn(async move {
            let mut done = Vec::new();
            while done.len() < want {
                let Some(m) = loft
                    .receive("jobs", "?visibility_timeout=0&wait_seconds=5")
                    .await
                else {
                    panic!("no job arrived within 5 s; handled {done:?}");
                };
                let job: Value = serde_json::from_str(&m.body)
                    .unwrap_or_else(|e| panic!("job body {:?} is not JSON: {e}", m.body));
                let command = job["command"].as_str().expect("command").to_owned();
                loft.ack("jobs", &m.id).await;
                done.push(command);
            }
            done
        })
    };
    for c in &commands[1..] {
        loft.send_msg("jobs", &body(c)).await;
    }
    let done = worker.await.expect("worker");
    assert_eq!(done.len(), commands.len(), "handled {done:?}");
    let done_set: BTreeSet<&String> = done.iter().collect();
    assert_eq!(
        done_set.len(),
        done.len(),
        "a job was handled twice: {done:?}"
    );
    assert_eq!(done_set, commands.iter().collect::<BTreeSet<_>>());
    // Every job acknowledged: nothing left, visible or not.
    loft.get("/queues/jobs/messages?visibility_timeout=0")
        .await
        .expect(200, json!(null));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn object_created_event_reaches_the_lambda_trigger_endpoint() {
    let loft = Loft::start();
    let mut lambda = Sink::start().await;

    // The Lambda runtime on startup: create the topic (JSON content type, no body), then
    // subscribe its /trigger-notify endpoint.
    loft.post_raw("/topics/s3:ObjectCreated", "")
        .await
        .expect(201, json!({"name": "s3:ObjectCreated"}));
    let r = loft
        .post_raw(
            "/topics/s3:ObjectCreated/subscribe",
            json!({"endpoint": lambda.url("/trigger-notify")}).to_string(),
        )
        .await;
    assert_eq!(r.status.as_u16(), 201, "{}", r.text);

    // The object store after a PUT: publish the bucket, key and size.
    let event = json!({"bucket": "photos", "key": "2024/cat.jpg", "size": 48213}).to_string();
    let r = loft
        .post_raw(
            "/topics/s3:ObjectCreated/publish",
            json!({ "message": event }).to_string(),
        )
        .await;
    r.expect(200, json!({"delivered": 1}));

    let got = lambda.next().await;
    assert_eq!(got.method, "POST");
    assert_eq!(got.path, "/trigger-notify");
    let payload = got.json();
    assert_eq!(
        payload,
        json!({"topic": "s3:ObjectCreated", "message": event})
    );
    // The Lambda side parses the event back out of the message.
    let inner: Value =
        serde_json::from_str(payload["message"].as_str().expect("message")).expect("event JSON");
    assert_eq!(
        inner,
        json!({"bucket": "photos", "key": "2024/cat.jpg", "size": 48213})
    );
}
