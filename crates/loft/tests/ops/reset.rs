//! `POST /_loft/reset` (and LocalStack's `POST /_localstack/state/reset`) on an open Loft:
//! every queue, message, topic, subscription and recorded message goes, the answer counts
//! them, the configuration file's resources come back, and a removed name can be created
//! again at once (no 60 s `QueueDeletedRecently` hold).

use serde_json::{json, Value};

use crate::harness::{write_file, Server};

const CONFIG: &str = r#"
[server]
listen = "127.0.0.1:0"

[[queues]]
name = "configured"
attributes = { VisibilityTimeout = "45" }

[[topics]]
name = "configured-topic"
[[topics.subscriptions]]
protocol = "sqs"
endpoint = "arn:aws:sqs:us-east-1:000000000000:configured"
"#;

fn start() -> Server {
    let dir = tempfile::tempdir().unwrap();
    let path = write_file(dir.path(), "loft.toml", CONFIG);
    let path = path.to_str().unwrap().to_owned();
    Server::start_in(dir, &["--config", &path], &[]).expect("starts")
}

async fn reset(s: &Server, path: &str) -> Value {
    let resp = s.http.post(s.url(path)).send().await.expect("reset");
    assert_eq!(resp.status().as_u16(), 200, "{path}");
    resp.json().await.expect("JSON counts")
}

async fn queue_names(s: &Server) -> Vec<String> {
    let listed = s.sqs("ListQueues", json!({})).await;
    let mut names: Vec<String> = listed["QueueUrls"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|u| u.as_str().unwrap().rsplit('/').next().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

async fn depth(s: &Server, name: &str) -> String {
    let a = s
        .sqs(
            "GetQueueAttributes",
            json!({"QueueUrl": s.queue_url(name), "AttributeNames": ["ApproximateNumberOfMessages"]}),
        )
        .await;
    a["Attributes"]["ApproximateNumberOfMessages"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn xml_values(xml: &str, tag: &str) -> Vec<String> {
    let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
    xml.split(&open)
        .skip(1)
        .map(|s| s.split(&close).next().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn a_reset_removes_everything_counts_it_and_makes_the_configuration_again() {
    let s = start();
    for name in ["a", "b"] {
        s.sqs("CreateQueue", json!({"QueueName": name})).await;
    }
    s.sqs(
        "CreateQueue",
        json!({"QueueName": "c.fifo", "Attributes": {"FifoQueue": "true"}}),
    )
    .await;
    s.sqs("CreateQueue", json!({"QueueName": "gone"})).await;
    s.sqs("DeleteQueue", json!({"QueueUrl": s.queue_url("gone")}))
        .await;
    // The deleted name is held for 60 s, as SQS does.
    let (status, body, _) = s.sqs_raw("CreateQueue", json!({"QueueName": "gone"})).await;
    assert_eq!(status, 400, "held before the reset: {body}");
    for (queue, n) in [("a", 2), ("configured", 1)] {
        for i in 0..n {
            s.sqs(
                "SendMessage",
                json!({"QueueUrl": s.queue_url(queue), "MessageBody": format!("m{i}")}),
            )
            .await;
        }
    }
    let (status, xml) = s.sns("CreateTopic", &[("Name", "t")]).await;
    assert_eq!(status, 200, "{xml}");
    let topic = xml_values(&xml, "TopicArn").remove(0);
    for (protocol, endpoint) in [
        ("sqs", "arn:aws:sqs:us-east-1:000000000000:a"),
        ("sms", "+15555550100"),
    ] {
        let (status, xml) = s
            .sns(
                "Subscribe",
                &[
                    ("TopicArn", &topic),
                    ("Protocol", protocol),
                    ("Endpoint", endpoint),
                ],
            )
            .await;
        assert_eq!(status, 200, "{xml}");
    }
    let (status, xml) = s
        .sns("Publish", &[("TopicArn", &topic), ("Message", "hello")])
        .await;
    assert_eq!(status, 200, "{xml}");
    let recorded: Value = s
        .http
        .get(s.url("/_loft/sns/messages"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(
        recorded.to_string().contains("hello"),
        "recorded: {recorded}"
    );

    let counts = reset(&s, "/_loft/reset").await;
    // a, b, c.fifo and configured; a's 2 sends and the published copy, configured's 1;
    // t and configured-topic; t's two subscriptions and configured-topic's one; the SMS.
    for (kind, n) in [
        ("queues", 4),
        ("messages", 4),
        ("topics", 2),
        ("subscriptions", 3),
        ("recordings", 1),
        ("mappings", 0),
        ("move_tasks", 0),
    ] {
        assert_eq!(counts[kind], n, "{kind} in {counts}");
    }

    // The configuration's queue, topic and subscription are back, empty and as declared.
    assert_eq!(queue_names(&s).await, ["configured"]);
    assert_eq!(depth(&s, "configured").await, "0");
    let attrs = s
        .sqs(
            "GetQueueAttributes",
            json!({"QueueUrl": s.queue_url("configured"), "AttributeNames": ["VisibilityTimeout"]}),
        )
        .await;
    assert_eq!(attrs["Attributes"]["VisibilityTimeout"], "45");
    let (_, xml) = s.sns("ListTopics", &[]).await;
    let topics = xml_values(&xml, "TopicArn");
    assert_eq!(
        topics,
        ["arn:aws:sns:us-east-1:000000000000:configured-topic"]
    );
    let (_, xml) = s.sns("ListSubscriptions", &[]).await;
    assert_eq!(xml_values(&xml, "SubscriptionArn").len(), 1, "{xml}");
    let recorded: Value = s
        .http
        .get(s.url("/_loft/sns/messages"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(!recorded.to_string().contains("hello"), "{recorded}");

    // Every removed name is free at once, the held one too; a queue made again is empty.
    for name in ["gone", "a"] {
        let (status, body, _) = s.sqs_raw("CreateQueue", json!({"QueueName": name})).await;
        assert_eq!(status, 200, "{name} after the reset: {body}");
    }
    assert_eq!(depth(&s, "a").await, "0");
    let (status, xml) = s.sns("CreateTopic", &[("Name", "t")]).await;
    assert_eq!(status, 200, "{xml}");

    // LocalStack's route is the same reset: gone, a and t (and the configuration's).
    let counts = reset(&s, "/_localstack/state/reset").await;
    assert_eq!(counts["queues"], 3, "{counts}");
    assert_eq!(counts["topics"], 2, "{counts}");
    assert_eq!(queue_names(&s).await, ["configured"]);
}

#[tokio::test]
async fn a_reset_of_an_empty_loft_answers_zero_counts() {
    let s = Server::start();
    let counts = reset(&s, "/_loft/reset").await;
    for kind in [
        "queues",
        "messages",
        "topics",
        "subscriptions",
        "deliveries",
        "mappings",
        "move_tasks",
        "recordings",
        "platforms",
    ] {
        assert_eq!(counts[kind], 0, "{kind} in {counts}");
    }
    // GET is not the reset.
    let resp = s.http.get(s.url("/_loft/reset")).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 405);
}

/// A reset is durable: after a restart the removed queue is still gone, the
/// configuration's queue is there once (empty), and the removed name is free (the reset
/// left no deleted-queue hold for the restarted process to find).
#[tokio::test]
async fn a_reset_holds_across_a_restart() {
    let s = start();
    s.sqs("CreateQueue", json!({"QueueName": "temporary"}))
        .await;
    for queue in ["temporary", "configured"] {
        s.sqs(
            "SendMessage",
            json!({"QueueUrl": s.queue_url(queue), "MessageBody": "x"}),
        )
        .await;
    }
    let counts = reset(&s, "/_loft/reset").await;
    assert_eq!(counts["queues"], 2, "{counts}");
    let dir = s.stop();
    let path = dir.path().join("loft.toml");
    let path = path.to_str().unwrap().to_owned();
    let s = Server::start_in(dir, &["--config", &path], &[]).expect("starts again");
    assert_eq!(queue_names(&s).await, ["configured"]);
    assert_eq!(depth(&s, "configured").await, "0");
    let (status, body, _) = s
        .sqs_raw("CreateQueue", json!({"QueueName": "temporary"}))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(depth(&s, "temporary").await, "0");
}
