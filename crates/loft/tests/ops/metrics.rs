//! `GET /metrics` after known operations: queue gauges, message counters, request counters
//! and latency histograms by bounded labels, SNS delivery outcomes and the pending gauge.

use std::collections::BTreeMap;

use serde_json::json;

use crate::harness::{eventually, Server};

fn get(m: &BTreeMap<String, f64>, key: &str) -> f64 {
    *m.get(key).unwrap_or_else(|| {
        panic!(
            "no sample {key}; have:\n{}",
            m.keys().cloned().collect::<Vec<_>>().join("\n")
        )
    })
}

#[tokio::test]
async fn queue_gauges_and_message_counters_follow_operations() {
    let s = Server::start();
    let q = s.sqs("CreateQueue", json!({"QueueName": "work"})).await["QueueUrl"]
        .as_str()
        .unwrap()
        .to_owned();
    for i in 0..3 {
        s.sqs(
            "SendMessage",
            json!({"QueueUrl": q, "MessageBody": format!("m{i}")}),
        )
        .await;
    }
    s.sqs(
        "SendMessage",
        json!({"QueueUrl": q, "MessageBody": "later", "DelaySeconds": 600}),
    )
    .await;
    let got = s
        .sqs(
            "ReceiveMessage",
            json!({"QueueUrl": q, "MaxNumberOfMessages": 2, "VisibilityTimeout": 300}),
        )
        .await;
    let handle = got["Messages"][0]["ReceiptHandle"].as_str().unwrap();
    s.sqs(
        "DeleteMessage",
        json!({"QueueUrl": q, "ReceiptHandle": handle}),
    )
    .await;
    // Deleting again counts nothing.
    s.sqs(
        "DeleteMessage",
        json!({"QueueUrl": q, "ReceiptHandle": handle}),
    )
    .await;

    // A queue that dead-letters after one receive.
    let dlq = s.sqs("CreateQueue", json!({"QueueName": "work-dlq"})).await["QueueUrl"]
        .as_str()
        .unwrap()
        .to_owned();
    let src = s
        .sqs(
            "CreateQueue",
            json!({"QueueName": "flaky", "Attributes": {"RedrivePolicy":
                "{\"deadLetterTargetArn\":\"arn:aws:sqs:us-east-1:000000000000:work-dlq\",\"maxReceiveCount\":\"1\"}"}}),
        )
        .await["QueueUrl"]
        .as_str()
        .unwrap()
        .to_owned();
    s.sqs(
        "SendMessage",
        json!({"QueueUrl": src, "MessageBody": "poison"}),
    )
    .await;
    for _ in 0..2 {
        s.sqs(
            "ReceiveMessage",
            json!({"QueueUrl": src, "VisibilityTimeout": 0}),
        )
        .await;
    }
    let _ = dlq;

    let m = s.metrics().await;
    assert_eq!(
        get(&m, r#"loft_queue_messages{queue="work",state="visible"}"#),
        1.0
    );
    assert_eq!(
        get(&m, r#"loft_queue_messages{queue="work",state="in_flight"}"#),
        1.0
    );
    assert_eq!(
        get(&m, r#"loft_queue_messages{queue="work",state="delayed"}"#),
        1.0
    );
    assert_eq!(get(&m, r#"loft_messages_sent_total{queue="work"}"#), 4.0);
    assert_eq!(
        get(&m, r#"loft_messages_received_total{queue="work"}"#),
        2.0
    );
    assert_eq!(get(&m, r#"loft_messages_deleted_total{queue="work"}"#), 1.0);
    assert_eq!(
        get(&m, r#"loft_messages_dead_lettered_total{queue="work"}"#),
        0.0
    );
    assert_eq!(
        get(&m, r#"loft_messages_dead_lettered_total{queue="flaky"}"#),
        1.0
    );
    assert_eq!(
        get(&m, r#"loft_messages_received_total{queue="flaky"}"#),
        1.0
    );
    assert_eq!(
        get(
            &m,
            r#"loft_queue_messages{queue="work-dlq",state="visible"}"#
        ),
        1.0
    );
    assert_eq!(
        get(&m, r#"loft_queue_messages{queue="flaky",state="visible"}"#),
        0.0
    );
    assert_eq!(
        get(
            &m,
            r#"loft_requests_total{operation="SendMessage",protocol="sqs-json",status="200"}"#
        ),
        5.0
    );
    assert_eq!(
        get(
            &m,
            r#"loft_requests_total{operation="DeleteMessage",protocol="sqs-json",status="200"}"#
        ),
        2.0
    );
    assert_eq!(
        get(
            &m,
            r#"loft_request_duration_seconds_count{operation="SendMessage"}"#
        ),
        5.0
    );
    assert_eq!(
        get(
            &m,
            r#"loft_request_duration_seconds_bucket{operation="SendMessage",le="+Inf"}"#
        ),
        5.0
    );
    assert!(
        get(
            &m,
            r#"loft_request_duration_seconds_sum{operation="SendMessage"}"#
        ) > 0.0
    );
    assert_eq!(get(&m, "loft_deliveries_pending"), 0.0);
}

#[tokio::test]
async fn request_labels_are_bounded_and_cover_every_protocol() {
    let s = Server::start();
    // An error: 400 with the operation's name.
    let (status, _, _) = s
        .sqs_raw("GetQueueUrl", json!({"QueueName": "missing"}))
        .await;
    assert_eq!(status, 400);
    // Unknown operations are one label, whatever their name.
    for op in ["Frobnicate", "Defenestrate"] {
        let (status, _, _) = s.sqs_raw(op, json!({})).await;
        assert_eq!(status, 400);
    }
    // The Query protocol.
    let resp = s
        .http
        .post(s.url("/"))
        .form(&[("Action", "ListQueues"), ("Version", "2012-11-05")])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let (status, _) = s.sns("ListTopics", &[]).await;
    assert_eq!(status, 200);
    // The seeds' REST API, by route pattern, not path.
    for name in ["a", "b"] {
        let r = s
            .http
            .post(s.url(&format!("/queues/{name}/messages")))
            .json(&json!({"body": "x"}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 201);
    }
    let r = s
        .http
        .get(s.url("/no/such/route/at/all"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 404);
    let m = s.metrics().await;
    assert_eq!(
        get(
            &m,
            r#"loft_requests_total{operation="GetQueueUrl",protocol="sqs-json",status="400"}"#
        ),
        1.0
    );
    assert_eq!(
        get(
            &m,
            r#"loft_requests_total{operation="Unknown",protocol="sqs-json",status="400"}"#
        ),
        2.0
    );
    assert_eq!(
        get(
            &m,
            r#"loft_requests_total{operation="ListQueues",protocol="sqs-query",status="200"}"#
        ),
        1.0
    );
    assert_eq!(
        get(
            &m,
            r#"loft_requests_total{operation="ListTopics",protocol="sns-query",status="200"}"#
        ),
        1.0
    );
    assert_eq!(
        get(
            &m,
            r#"loft_requests_total{operation="POST /queues/{name}/messages",protocol="rest",status="201"}"#
        ),
        2.0
    );
    assert_eq!(
        get(
            &m,
            r#"loft_requests_total{operation="unmatched",protocol="rest",status="404"}"#
        ),
        1.0
    );
    assert_eq!(get(&m, r#"loft_messages_sent_total{queue="a"}"#), 1.0);
    assert!(
        !m.keys()
            .any(|k| k.contains("Frobnicate") || k.contains("/no/such")),
        "unbounded label values leaked"
    );
}

#[tokio::test]
async fn sns_deliveries_are_counted_by_protocol_and_outcome() {
    let s = Server::start();
    s.sqs("CreateQueue", json!({"QueueName": "inbox"})).await;
    let (_, xml) = s.sns("CreateTopic", &[("Name", "news")]).await;
    assert!(
        xml.contains("arn:aws:sns:us-east-1:000000000000:news"),
        "{xml}"
    );
    let topic = "arn:aws:sns:us-east-1:000000000000:news";
    for (protocol, endpoint) in [
        ("sqs", "arn:aws:sqs:us-east-1:000000000000:inbox"),
        ("sms", "+15555550100"),
    ] {
        let (status, xml) = s
            .sns(
                "Subscribe",
                &[
                    ("TopicArn", topic),
                    ("Protocol", protocol),
                    ("Endpoint", endpoint),
                ],
            )
            .await;
        assert_eq!(status, 200, "{xml}");
    }
    for i in 0..2 {
        let (status, xml) = s
            .sns(
                "Publish",
                &[("TopicArn", topic), ("Message", &format!("n{i}"))],
            )
            .await;
        assert_eq!(status, 200, "{xml}");
    }
    // An HTTP endpoint nobody listens on: its confirmation fails and waits for a retry.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hook", closed.local_addr().unwrap());
    drop(closed);
    let (status, xml) = s
        .sns(
            "Subscribe",
            &[
                ("TopicArn", topic),
                ("Protocol", "http"),
                ("Endpoint", &url),
            ],
        )
        .await;
    assert_eq!(status, 200, "{xml}");
    let m = eventually("a failed HTTP attempt", || async {
        let m = s.metrics().await;
        (m.get(r#"loft_deliveries_total{protocol="http",outcome="retrying"}"#)
            .copied()
            .unwrap_or(0.0)
            >= 1.0)
            .then_some(m)
    })
    .await;
    assert_eq!(
        get(
            &m,
            r#"loft_deliveries_total{protocol="sqs",outcome="delivered"}"#
        ),
        2.0
    );
    assert_eq!(
        get(
            &m,
            r#"loft_deliveries_total{protocol="sms",outcome="recorded"}"#
        ),
        2.0
    );
    assert_eq!(get(&m, r#"loft_messages_sent_total{queue="inbox"}"#), 2.0);
    assert_eq!(get(&m, "loft_deliveries_pending"), 1.0);
}

/// A raw-delivery SQS subscription cannot carry more than 10 message attributes: the copy
/// is not stored, and `/metrics` counts it as dropped rather than leaving it uncounted.
#[tokio::test]
async fn a_raw_copy_with_eleven_attributes_counts_as_dropped() {
    let s = Server::start();
    s.sqs("CreateQueue", json!({"QueueName": "raw"})).await;
    let topic = "arn:aws:sns:us-east-1:000000000000:wide";
    let (status, xml) = s.sns("CreateTopic", &[("Name", "wide")]).await;
    assert_eq!(status, 200, "{xml}");
    let (status, xml) = s
        .sns(
            "Subscribe",
            &[
                ("TopicArn", topic),
                ("Protocol", "sqs"),
                ("Endpoint", "arn:aws:sqs:us-east-1:000000000000:raw"),
                ("Attributes.entry.1.key", "RawMessageDelivery"),
                ("Attributes.entry.1.value", "true"),
            ],
        )
        .await;
    assert_eq!(status, 200, "{xml}");
    let keys: Vec<[String; 4]> = (1..=11)
        .map(|i| {
            [
                format!("MessageAttributes.entry.{i}.Name"),
                format!("MessageAttributes.entry.{i}.Value.DataType"),
                format!("MessageAttributes.entry.{i}.Value.StringValue"),
                format!("a{i}"),
            ]
        })
        .collect();
    let mut params = vec![("TopicArn", topic), ("Message", "wide")];
    for [name, kind, value, attr] in &keys {
        params.extend([
            (name.as_str(), attr.as_str()),
            (kind.as_str(), "String"),
            (value.as_str(), "v"),
        ]);
    }
    let (status, xml) = s.sns("Publish", &params).await;
    assert_eq!(status, 200, "{xml}");
    let m = s.metrics().await;
    assert_eq!(
        get(
            &m,
            r#"loft_deliveries_total{protocol="sqs",outcome="dropped"}"#
        ),
        1.0
    );
    assert!(
        !m.contains_key(r#"loft_deliveries_total{protocol="sqs",outcome="delivered"}"#),
        "no copy was delivered: {m:?}"
    );
    let body = s
        .sqs("ReceiveMessage", json!({"QueueUrl": s.queue_url("raw")}))
        .await;
    assert!(body.get("Messages").is_none(), "{body}");
}

/// A standard queue that receives MessageGroupIds is fair: a quiet group's message is
/// received ahead of a flood of another group, and `/metrics` shows the fair-queue gauges
/// (AWS's ApproximateNumberOfNoisyGroups and the quiet groups' message counts).
#[tokio::test]
async fn fair_queue_serves_quiet_groups_and_reports_noisy_ones() {
    let s = Server::start();
    let q = s.sqs("CreateQueue", json!({"QueueName": "tenants"})).await["QueueUrl"]
        .as_str()
        .unwrap()
        .to_owned();
    for batch in 0..30 {
        let entries: Vec<_> = (0..10)
            .map(|i| {
                json!({"Id": format!("e{i}"), "MessageBody": format!("flood-{}", batch * 10 + i),
                       "MessageGroupId": "flood"})
            })
            .collect();
        s.sqs(
            "SendMessageBatch",
            json!({"QueueUrl": q, "Entries": entries}),
        )
        .await;
    }
    s.sqs(
        "SendMessage",
        json!({"QueueUrl": q, "MessageBody": "quiet-1", "MessageGroupId": "t1"}),
    )
    .await;
    let got = s
        .sqs(
            "ReceiveMessage",
            json!({"QueueUrl": q, "MaxNumberOfMessages": 10, "VisibilityTimeout": 300}),
        )
        .await;
    let bodies: Vec<&str> = got["Messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["Body"].as_str().unwrap())
        .collect();
    assert!(bodies.contains(&"quiet-1"), "{bodies:?}");
    // 40 of the flood in flight make it a noisy neighbour (at least 30, more than 10%).
    for _ in 0..4 {
        s.sqs(
            "ReceiveMessage",
            json!({"QueueUrl": q, "MaxNumberOfMessages": 10, "VisibilityTimeout": 300}),
        )
        .await;
    }
    s.sqs(
        "SendMessage",
        json!({"QueueUrl": q, "MessageBody": "quiet-2", "MessageGroupId": "t2"}),
    )
    .await;
    let m = s.metrics().await;
    assert_eq!(
        get(&m, r#"loft_fair_queue_noisy_groups{queue="tenants"}"#),
        1.0
    );
    assert_eq!(
        get(
            &m,
            r#"loft_fair_queue_quiet_messages{queue="tenants",state="in_flight"}"#
        ),
        1.0
    );
    assert_eq!(
        get(
            &m,
            r#"loft_fair_queue_quiet_messages{queue="tenants",state="visible"}"#
        ),
        1.0
    );
    assert!(m.contains_key(r#"loft_fair_queue_quiet_oldest_age_seconds{queue="tenants"}"#));
    // A queue without groups has no fair-queue samples.
    assert!(!m
        .keys()
        .any(|k| k.starts_with("loft_fair_queue") && k.contains("\"work\"")));
}

/// A queue of another region (made by a request whose credential scope names it; an open
/// Loft reads the scope without verifying it) has `account` and `region` labels beside its
/// bare name; the same name in the default region keeps the series it always had.
#[tokio::test]
async fn a_queue_of_another_region_is_labelled_with_its_account_and_region() {
    let s = Server::start();
    let scoped = |op: &str, input: serde_json::Value| {
        s.http
            .post(s.url("/"))
            .header("x-amz-target", format!("AmazonSQS.{op}"))
            .header("content-type", "application/x-amz-json-1.0")
            .header(
                "authorization",
                "AWS4-HMAC-SHA256 Credential=x/20260101/eu-west-1/sqs/aws4_request, \
                 SignedHeaders=host, Signature=00",
            )
            .body(input.to_string())
            .send()
    };
    let resp = scoped("CreateQueue", json!({"QueueName": "twin"}))
        .await
        .expect("CreateQueue");
    assert_eq!(resp.status().as_u16(), 200);
    let away: serde_json::Value = resp.json().await.expect("JSON");
    let away_url = away["QueueUrl"].as_str().expect("QueueUrl").to_owned();
    assert!(
        away_url.ends_with("/queue/eu-west-1/000000000000/twin"),
        "{away_url}"
    );
    let resp = scoped(
        "SendMessage",
        json!({"QueueUrl": away_url, "MessageBody": "m"}),
    )
    .await
    .expect("SendMessage");
    assert_eq!(resp.status().as_u16(), 200);
    s.sqs("CreateQueue", json!({"QueueName": "twin"})).await;
    let m = s.metrics().await;
    assert_eq!(
        get(
            &m,
            r#"loft_queue_messages{queue="twin",account="000000000000",region="eu-west-1",state="visible"}"#
        ),
        1.0
    );
    assert_eq!(
        get(
            &m,
            r#"loft_messages_sent_total{queue="twin",account="000000000000",region="eu-west-1"}"#
        ),
        1.0
    );
    assert_eq!(
        get(&m, r#"loft_queue_messages{queue="twin",state="visible"}"#),
        0.0
    );
}

/// `loft_queue_oldest_message_age_seconds`: 0 for an empty queue; once a message is in,
/// the age of the oldest grows (read until it is above 0, bounded by the time since the
/// send: it is the message's age, not some other clock), an in-flight message still
/// counts, and once it is deleted the queue reads 0 again.
#[tokio::test]
async fn the_oldest_message_age_follows_the_oldest_message() {
    let s = Server::start();
    s.sqs("CreateQueue", json!({"QueueName": "aging"})).await;
    let key = r#"loft_queue_oldest_message_age_seconds{queue="aging"}"#;
    assert_eq!(get(&s.metrics().await, key), 0.0, "empty");
    let before = std::time::Instant::now();
    s.sqs(
        "SendMessage",
        json!({"QueueUrl": s.queue_url("aging"), "MessageBody": "old"}),
    )
    .await;
    let age = eventually("the oldest message's age to rise above 0", || async {
        let age = get(&s.metrics().await, key);
        (age > 0.0).then_some(age)
    })
    .await;
    assert!(
        age <= before.elapsed().as_secs_f64() + 0.002,
        "age {age} s is older than the message"
    );
    let got = s
        .sqs(
            "ReceiveMessage",
            json!({"QueueUrl": s.queue_url("aging"), "VisibilityTimeout": 60}),
        )
        .await;
    let handle = got["Messages"][0]["ReceiptHandle"]
        .as_str()
        .unwrap()
        .to_owned();
    let in_flight = get(&s.metrics().await, key);
    assert!(
        in_flight >= age,
        "in flight still counts: {in_flight} < {age}"
    );
    s.sqs(
        "DeleteMessage",
        json!({"QueueUrl": s.queue_url("aging"), "ReceiptHandle": handle}),
    )
    .await;
    assert_eq!(get(&s.metrics().await, key), 0.0, "empty again");
}

/// `loft_messages_deleted_total` counts each message DeleteMessageBatch deleted (a
/// Celery or `loft receive --delete` consumer deletes in batches), not the failed entries.
#[tokio::test]
async fn batch_deletes_are_counted() {
    let s = Server::start();
    s.sqs("CreateQueue", json!({"QueueName": "batched"})).await;
    let url = s.queue_url("batched");
    let entries: Vec<_> = (0..3)
        .map(|i| json!({"Id": format!("m{i}"), "MessageBody": format!("body {i}")}))
        .collect();
    s.sqs(
        "SendMessageBatch",
        json!({"QueueUrl": url, "Entries": entries}),
    )
    .await;
    let mut handles = Vec::new();
    while handles.len() < 3 {
        let got = s
            .sqs(
                "ReceiveMessage",
                json!({"QueueUrl": url, "MaxNumberOfMessages": 10, "WaitTimeSeconds": 1}),
            )
            .await;
        for m in got["Messages"].as_array().cloned().unwrap_or_default() {
            handles.push(m["ReceiptHandle"].as_str().unwrap().to_owned());
        }
    }
    let mut entries: Vec<_> = handles
        .iter()
        .enumerate()
        .map(|(i, h)| json!({"Id": format!("d{i}"), "ReceiptHandle": h}))
        .collect();
    entries.push(json!({"Id": "bogus", "ReceiptHandle": "not-a-handle"}));
    let out = s
        .sqs(
            "DeleteMessageBatch",
            json!({"QueueUrl": url, "Entries": entries}),
        )
        .await;
    assert_eq!(out["Successful"].as_array().unwrap().len(), 3, "{out}");
    assert_eq!(out["Failed"].as_array().unwrap().len(), 1, "{out}");
    let key = r#"loft_messages_deleted_total{queue="batched"}"#;
    assert_eq!(get(&s.metrics().await, key), 3.0);
}
