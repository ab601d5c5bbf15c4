//! The console's queue listing (`GET /_loft/queues`): paged and filtered on the server,
//! the dead-letter queue's depth beside its source, and the charts' history, which is
//! this node's view since it started: a restart starts it again while the queues and
//! their messages stay.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use crate::common::Loft;

async fn sqs(loft: &Loft, op: &str, input: Value) -> Value {
    let resp = loft
        .send(
            reqwest::Client::new()
                .post(loft.url("/"))
                .header("x-amz-target", format!("AmazonSQS.{op}"))
                .header("content-type", "application/x-amz-json-1.0")
                .body(input.to_string()),
        )
        .await;
    assert_eq!(resp.status.as_u16(), 200, "{op}: {}", resp.text);
    resp.json()
}

fn names(v: &Value) -> Vec<&str> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|q| q["name"].as_str().unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_queue_listing_pages_filters_and_shows_dead_letter_depth() {
    let loft = Loft::start();
    for i in 1..=25 {
        sqs(
            &loft,
            "CreateQueue",
            json!({"QueueName": format!("q-{i:02}")}),
        )
        .await;
    }
    sqs(&loft, "CreateQueue", json!({"QueueName": "jobs-dlq"})).await;
    sqs(
        &loft,
        "CreateQueue",
        json!({"QueueName": "jobs", "Attributes": {"RedrivePolicy":
            "{\"deadLetterTargetArn\":\"arn:aws:sqs:us-east-1:000000000000:jobs-dlq\",\"maxReceiveCount\":\"2\"}"}}),
    )
    .await;
    let dlq_url = format!("{}/000000000000/jobs-dlq", loft.url(""));
    for body in ["a", "b", "c"] {
        sqs(
            &loft,
            "SendMessage",
            json!({"QueueUrl": dlq_url, "MessageBody": body}),
        )
        .await;
    }

    // Without parameters: every queue, by name, as before paging existed.
    let all = loft.get("/_loft/queues").await;
    assert_eq!(all.status, 200);
    assert_eq!(names(&all.json()).len(), 27);
    assert_eq!(all.headers["x-total-count"], "27");
    assert!(all.headers.get("link").is_none(), "nothing follows");

    // Pages of 10: the Link header names the next one until the last.
    let first = loft.get("/_loft/queues?limit=10").await;
    assert_eq!(
        names(&first.json()),
        ["jobs", "jobs-dlq", "q-01", "q-02", "q-03", "q-04", "q-05", "q-06", "q-07", "q-08"]
    );
    assert_eq!(first.headers["x-total-count"], "27");
    assert_eq!(
        first.headers["link"],
        "</_loft/queues?offset=10&limit=10>; rel=\"next\""
    );
    let mut seen = names(&first.json())
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>();
    let mut next = Some("/_loft/queues?offset=10&limit=10".to_owned());
    while let Some(path) = next {
        let page = loft.get(&path).await;
        seen.extend(names(&page.json()).iter().map(|s| s.to_string()));
        next = page.headers.get("link").map(|l| {
            let l = l.to_str().unwrap();
            l[1..l.find('>').unwrap()].to_owned()
        });
    }
    assert_eq!(seen.len(), 27, "every queue once: {seen:?}");
    assert_eq!(seen.last().unwrap(), "q-25");

    // The filter: a substring, ignoring case; the total counts the matches.
    let filtered = loft.get("/_loft/queues?filter=Q-1&limit=5").await;
    assert_eq!(
        names(&filtered.json()),
        ["q-10", "q-11", "q-12", "q-13", "q-14"]
    );
    assert_eq!(filtered.headers["x-total-count"], "10");
    assert_eq!(
        filtered.headers["link"],
        "</_loft/queues?offset=5&limit=5&filter=Q-1>; rel=\"next\""
    );
    let none = loft.get("/_loft/queues?filter=nothing%20like%20it").await;
    assert_eq!(none.json(), json!([]));
    assert_eq!(none.headers["x-total-count"], "0");

    // The source queue shows its dead-letter queue's depth (visible messages).
    let jobs = loft.get("/_loft/queues?filter=jobs").await.json();
    assert_eq!(jobs[0]["name"], "jobs");
    assert_eq!(jobs[0]["dead_letter_target"], "jobs-dlq");
    assert_eq!(jobs[0]["dead_letter_depth"], 3);
    assert_eq!(jobs[1]["dead_letter_depth"], Value::Null, "{jobs}");
    assert_eq!(jobs[1]["dead_letter_sources"], json!(["jobs"]));

    // A limit outside 1..=1000, or not a number, is refused in the console's error shape.
    for bad in ["limit=0", "limit=1001", "limit=ten", "offset=-1"] {
        let resp = loft.get(&format!("/_loft/queues?{bad}")).await;
        assert_eq!(resp.status, 400, "{bad}: {}", resp.text);
        assert!(resp.json()["error"].is_string(), "{bad}: {}", resp.text);
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// Polls queue `name`'s history until `done` holds (at most 20 s).
async fn history_until(loft: &Loft, name: &str, done: impl Fn(&Value) -> bool) -> Value {
    let history = || async {
        let listed = loft
            .get(&format!("/_loft/queues?filter={name}"))
            .await
            .json();
        listed[0]["history"].clone()
    };
    let found = crate::wait::poll(Duration::from_secs(20), || async {
        let h = history().await;
        done(&h).then_some(h)
    })
    .await;
    match found {
        Some(h) => h,
        None => panic!("history of {name}: {}", history().await),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_charts_history_is_this_nodes_since_it_started() {
    let mut loft = Loft::start_with(&["--console-sample-interval", "0.05"]);
    sqs(&loft, "CreateQueue", json!({"QueueName": "sampled"})).await;
    let url = format!("{}/000000000000/sampled", loft.url(""));
    // A sample of the empty queue first, so the sends fall between two samples.
    history_until(&loft, "sampled", |h| {
        h["visible"]
            .as_array()
            .is_some_and(|v| v.contains(&json!(0)))
    })
    .await;
    for i in 0..4 {
        sqs(
            &loft,
            "SendMessage",
            json!({"QueueUrl": url, "MessageBody": format!("m{i}")}),
        )
        .await;
    }
    let h = history_until(&loft, "sampled", |h| {
        h["visible"]
            .as_array()
            .is_some_and(|v| v.last() == Some(&json!(4)))
    })
    .await;
    let sent: f64 = h["sent_per_s"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_f64)
        .sum();
    assert!(sent > 0.0, "the sends show as a rate: {h}");

    loft.stop();
    let stopped_at = now_ms();
    loft.start_again();
    // The queue and its messages stayed; the history starts again with the node.
    let h = history_until(&loft, "sampled", |h| {
        h["t"].as_array().is_some_and(|t| t.len() >= 2)
    })
    .await;
    let first = h["t"][0].as_i64().unwrap();
    assert!(
        first >= stopped_at,
        "no sample from before the restart: {first} < {stopped_at}: {h}"
    );
    assert!(
        h["visible"].as_array().unwrap().iter().all(|v| v == 4),
        "{h}"
    );
    assert!(
        h["sent_per_s"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r.is_null() || r == 0.0),
        "nothing sent since the restart: {h}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_sample_interval_is_refused_at_start() {
    for bad in ["0", "-1", "abc", "3601"] {
        let started = crate::loft::TestLoft::new()
            .storage(crate::loft::Storage::Sqlite(":memory:".into()))
            .arg(format!("--console-sample-interval={bad}"))
            .stderr_in_memory()
            .try_start();
        let failed = match started {
            Ok(loft) => panic!("{bad} accepted: listening on {}", loft.url),
            Err(failed) => failed,
        };
        assert!(!failed.status.success(), "{bad} accepted");
        let err = failed.stderr;
        assert!(err.contains("--console-sample-interval"), "{bad}: {err}");
    }
}
