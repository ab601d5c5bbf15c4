//! One scenario run over the JSON protocol and over the Query protocol, each on a fresh
//! server, with identical observations: outputs with volatile values removed (ids,
//! receipt handles, timestamps, messages of errors), MD5s, bodies, attribute maps, error
//! codes, HTTP statuses and fault types.

use serde_json::{json, Map, Value};

use crate::harness::{http, Server};
use crate::md5;
use crate::wire::{self, b64, stringify, Outcome};

#[derive(Clone, Copy, Debug)]
enum Protocol {
    Json,
    Query,
}

struct Run<'a> {
    protocol: Protocol,
    server: &'a Server,
    http: reqwest::Client,
    seen: Vec<(String, Value)>,
}

const VOLATILE_KEYS: &[&str] = &[
    "MessageId",
    "ReceiptHandle",
    "Message",
    "SentTimestamp",
    "ApproximateFirstReceiveTimestamp",
    "CreatedTimestamp",
    "LastModifiedTimestamp",
];

/// Drops volatile members and empty lists and maps; replaces the server's address.
fn normalize(v: &Value, url: &str) -> Value {
    match v {
        Value::Object(map) => {
            let mut out = Map::new();
            for (k, v) in map {
                if VOLATILE_KEYS.contains(&k.as_str()) {
                    continue;
                }
                let n = normalize(v, url);
                let empty = match &n {
                    Value::Array(a) => a.is_empty(),
                    Value::Object(o) => o.is_empty(),
                    _ => false,
                };
                if !empty {
                    out.insert(k.clone(), n);
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(|i| normalize(i, url)).collect()),
        Value::String(s) => Value::String(s.replace(url, "http://loft")),
        other => stringify(other),
    }
}

impl Run<'_> {
    async fn call(&mut self, op: &str, input: Value) -> Outcome {
        match self.protocol {
            Protocol::Json => wire::json(&self.http, &self.server.url, op, &input).await,
            Protocol::Query => wire::query(&self.http, &self.server.url, op, &input).await,
        }
    }

    /// Calls `op` and records its normalized outcome under `label`.
    async fn step(&mut self, label: &str, op: &str, input: Value) -> Outcome {
        let outcome = self.call(op, input).await;
        let observed = match &outcome {
            Outcome::Ok(v) => json!({"ok": normalize(v, &self.server.url)}),
            Outcome::Err {
                code,
                status,
                fault,
                ..
            } => json!({"error": code, "status": status, "fault": fault}),
        };
        self.seen.push((label.to_owned(), observed));
        outcome
    }

    fn record(&mut self, label: &str, value: Value) {
        self.seen.push((label.to_owned(), value));
    }
}

fn handles(received: &Value) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = received["Messages"]
        .as_array()
        .map(|ms| {
            ms.iter()
                .map(|m| {
                    (
                        m["Body"].as_str().unwrap().to_owned(),
                        m["ReceiptHandle"].as_str().unwrap().to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// Sorts a receive's messages by body so both runs list them alike.
fn sorted_messages(received: &Value, url: &str) -> Value {
    let mut messages: Vec<Value> = received["Messages"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|m| normalize(m, url))
        .collect();
    messages.sort_by_key(|m| m["Body"].as_str().unwrap_or_default().to_owned());
    Value::Array(messages)
}

async fn scenario(protocol: Protocol) -> Vec<(String, Value)> {
    let server = Server::start();
    let mut run = Run {
        protocol,
        server: &server,
        http: http(),
        seen: Vec::new(),
    };
    let created = run
        .step(
            "create",
            "CreateQueue",
            json!({
                "QueueName": "both",
                "Attributes": {"VisibilityTimeout": "60", "MaximumMessageSize": "4096"},
                "tags": {"team": "core"}
            }),
        )
        .await
        .ok();
    let url = created["QueueUrl"].as_str().unwrap().to_owned();
    run.step(
        "create again, different attributes",
        "CreateQueue",
        json!({"QueueName": "both", "Attributes": {"VisibilityTimeout": "61"}}),
    )
    .await;
    run.step(
        "create with a bad name",
        "CreateQueue",
        json!({"QueueName": "bad name"}),
    )
    .await;
    run.step(
        "create with an unknown attribute",
        "CreateQueue",
        json!({"QueueName": "x", "Attributes": {"Colour": "blue"}}),
    )
    .await;
    run.step("get url", "GetQueueUrl", json!({"QueueName": "both"}))
        .await;
    run.step(
        "get url, missing",
        "GetQueueUrl",
        json!({"QueueName": "nope"}),
    )
    .await;

    let body = "crlf\r\n \"quoted\" &quot; <x> ünï \u{1F600}";
    let sent = run
        .step(
            "send with attributes",
            "SendMessage",
            json!({
                "QueueUrl": url,
                "MessageBody": body,
                "MessageAttributes": {
                    "s": {"DataType": "String", "StringValue": "v\r\"x\""},
                    "n": {"DataType": "Number", "StringValue": "-1.5e3"},
                    "b": {"DataType": "Binary", "BinaryValue": b64(&[0, 1, 2, 254, 255])}
                }
            }),
        )
        .await
        .ok();
    // The digests are AWS's, whichever protocol carried them.
    assert_eq!(sent["MD5OfMessageBody"], md5::hex_md5(body.as_bytes()));
    assert_eq!(
        sent["MD5OfMessageAttributes"],
        md5::of_attributes(&[
            ("s", "String", md5::Value::Text("v\r\"x\"")),
            ("n", "Number", md5::Value::Text("-1.5e3")),
            ("b", "Binary", md5::Value::Bytes(&[0, 1, 2, 254, 255])),
        ])
    );
    run.step(
        "send with DelaySeconds 901",
        "SendMessage",
        json!({"QueueUrl": url, "MessageBody": "x", "DelaySeconds": 901}),
    )
    .await;
    run.step(
        "send with bad characters",
        "SendMessage",
        json!({"QueueUrl": url, "MessageBody": "bad\u{1}"}),
    )
    .await;
    run.step(
        "send too large for the queue",
        "SendMessage",
        json!({"QueueUrl": url, "MessageBody": "x".repeat(4097)}),
    )
    .await;
    run.step(
        "send batch, one bad entry",
        "SendMessageBatch",
        json!({"QueueUrl": url, "Entries": [
            {"Id": "one", "MessageBody": "batch one"},
            {"Id": "bad", "MessageBody": "bad\u{1}"},
            {"Id": "two", "MessageBody": "batch two",
             "MessageAttributes": {"k": {"DataType": "String", "StringValue": "v"}}}
        ]}),
    )
    .await;
    run.step(
        "send batch, repeated ids",
        "SendMessageBatch",
        json!({"QueueUrl": url, "Entries": [
            {"Id": "same", "MessageBody": "a"}, {"Id": "same", "MessageBody": "b"}
        ]}),
    )
    .await;
    run.step(
        "send batch, empty",
        "SendMessageBatch",
        json!({"QueueUrl": url, "Entries": []}),
    )
    .await;

    let received = run
        .call(
            "ReceiveMessage",
            json!({
                "QueueUrl": url,
                "MaxNumberOfMessages": 10,
                "VisibilityTimeout": 60,
                "MessageAttributeNames": ["All"],
                "MessageSystemAttributeNames": ["ApproximateReceiveCount", "SenderId", "SentTimestamp"]
            }),
        )
        .await
        .ok();
    let mut received = received;
    // A short poll may return fewer; collect all three.
    while handles(&received).len() < 3 {
        let more = run
            .call(
                "ReceiveMessage",
                json!({
                    "QueueUrl": url, "MaxNumberOfMessages": 10, "VisibilityTimeout": 60,
                    "MessageAttributeNames": ["All"],
                    "MessageSystemAttributeNames": ["ApproximateReceiveCount", "SenderId", "SentTimestamp"]
                }),
            )
            .await
            .ok();
        let list = received["Messages"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .chain(more["Messages"].as_array().cloned().unwrap_or_default())
            .collect::<Vec<_>>();
        received = json!({ "Messages": list });
    }
    for m in received["Messages"].as_array().unwrap() {
        assert!(m["Attributes"]["SentTimestamp"].is_string());
        if m["Body"] == body {
            assert_eq!(m["MD5OfBody"], md5::hex_md5(body.as_bytes()));
        }
    }
    run.record("received", sorted_messages(&received, &server.url));
    let hs = handles(&received);
    // hs sorted by body: "batch one", "batch two", body.
    let (h_one, h_two, h_body) = (hs[0].1.clone(), hs[1].1.clone(), hs[2].1.clone());

    run.step(
        "selected attributes only",
        "ReceiveMessage",
        json!({"QueueUrl": url, "MessageAttributeNames": ["s"]}),
    )
    .await;
    run.step(
        "receive MaxNumberOfMessages 11",
        "ReceiveMessage",
        json!({"QueueUrl": url, "MaxNumberOfMessages": 11}),
    )
    .await;
    run.step(
        "receive WaitTimeSeconds 21",
        "ReceiveMessage",
        json!({"QueueUrl": url, "WaitTimeSeconds": 21}),
    )
    .await;
    run.step(
        "change visibility",
        "ChangeMessageVisibility",
        json!({"QueueUrl": url, "ReceiptHandle": h_one, "VisibilityTimeout": 120}),
    )
    .await;
    run.step(
        "change visibility 43201",
        "ChangeMessageVisibility",
        json!({"QueueUrl": url, "ReceiptHandle": h_one, "VisibilityTimeout": 43201}),
    )
    .await;
    run.step(
        "change visibility, bad handle",
        "ChangeMessageVisibility",
        json!({"QueueUrl": url, "ReceiptHandle": "garbage", "VisibilityTimeout": 1}),
    )
    .await;
    run.step(
        "change visibility batch",
        "ChangeMessageVisibilityBatch",
        json!({"QueueUrl": url, "Entries": [
            {"Id": "a", "ReceiptHandle": h_two, "VisibilityTimeout": 0},
            {"Id": "b", "ReceiptHandle": "garbage", "VisibilityTimeout": 0}
        ]}),
    )
    .await;
    run.step(
        "change visibility after it was made visible",
        "ChangeMessageVisibility",
        json!({"QueueUrl": url, "ReceiptHandle": h_two, "VisibilityTimeout": 5}),
    )
    .await;
    run.step(
        "delete",
        "DeleteMessage",
        json!({"QueueUrl": url, "ReceiptHandle": h_body}),
    )
    .await;
    run.step(
        "delete, bad handle",
        "DeleteMessage",
        json!({"QueueUrl": url, "ReceiptHandle": "garbage"}),
    )
    .await;
    run.step(
        "delete batch",
        "DeleteMessageBatch",
        json!({"QueueUrl": url, "Entries": [
            {"Id": "a", "ReceiptHandle": h_one},
            {"Id": "b", "ReceiptHandle": "garbage"}
        ]}),
    )
    .await;
    run.step(
        "attributes",
        "GetQueueAttributes",
        json!({"QueueUrl": url, "AttributeNames": ["All"]}),
    )
    .await;
    run.step(
        "attributes, unknown name",
        "GetQueueAttributes",
        json!({"QueueUrl": url, "AttributeNames": ["Colour"]}),
    )
    .await;
    run.step(
        "set attributes",
        "SetQueueAttributes",
        json!({"QueueUrl": url, "Attributes": {"DelaySeconds": "3"}}),
    )
    .await;
    run.step(
        "set attributes, bad value",
        "SetQueueAttributes",
        json!({"QueueUrl": url, "Attributes": {"DelaySeconds": "901"}}),
    )
    .await;
    run.step(
        "tag",
        "TagQueue",
        json!({"QueueUrl": url, "Tags": {"env": "test"}}),
    )
    .await;
    run.step(
        "untag",
        "UntagQueue",
        json!({"QueueUrl": url, "TagKeys": ["team"]}),
    )
    .await;
    run.step("tags", "ListQueueTags", json!({"QueueUrl": url}))
        .await;
    run.step("list", "ListQueues", json!({})).await;
    run.step("purge", "PurgeQueue", json!({"QueueUrl": url}))
        .await;
    run.step("purge again", "PurgeQueue", json!({"QueueUrl": url}))
        .await;
    run.step("delete queue", "DeleteQueue", json!({"QueueUrl": url}))
        .await;
    run.step(
        "send to a deleted queue",
        "SendMessage",
        json!({"QueueUrl": url, "MessageBody": "x"}),
    )
    .await;
    run.step("list, none left", "ListQueues", json!({})).await;
    run.seen
}

#[tokio::test]
async fn one_scenario_gives_identical_results_over_json_and_query() {
    let (json_seen, query_seen) = tokio::join!(scenario(Protocol::Json), scenario(Protocol::Query));
    assert_eq!(json_seen.len(), query_seen.len());
    let mut differences = Vec::new();
    for ((label, j), (_, q)) in json_seen.iter().zip(&query_seen) {
        if j != q {
            differences.push(format!("{label}:\n  json:  {j}\n  query: {q}"));
        }
    }
    assert!(
        differences.is_empty(),
        "{} step(s) differ:\n{}",
        differences.len(),
        differences.join("\n")
    );
    // Sanity: the scenario saw the errors it was meant to provoke.
    let errors: Vec<&Value> = json_seen
        .iter()
        .filter_map(|(_, v)| v.get("error"))
        .collect();
    for code in [
        "QueueAlreadyExists",
        "AWS.SimpleQueueService.NonExistentQueue",
        "InvalidMessageContents",
        "AWS.SimpleQueueService.BatchEntryIdsNotDistinct",
        "AWS.SimpleQueueService.EmptyBatchRequest",
        "ReceiptHandleIsInvalid",
        "InvalidAttributeName",
        "InvalidAttributeValue",
        "AWS.SimpleQueueService.PurgeQueueInProgress",
    ] {
        assert!(
            errors.iter().any(|e| *e == code),
            "{code} not provoked: {errors:?}"
        );
    }
    let purge_again = &json_seen
        .iter()
        .find(|(l, _)| l == "purge again")
        .unwrap()
        .1;
    assert_eq!(purge_again["status"], 403);
}
