//! `--auto-create-queues` (`LOFT_AUTO_CREATE_QUEUES`, `auto_create_queues` in the config
//! file): GetQueueUrl, SendMessage, SendMessageBatch and ReceiveMessage on a missing queue
//! create it with the default attributes (FIFO for a `.fifo` name), over SQS JSON and
//! Query alike, as ElasticMQ's autoCreateQueues does; off by default, as AWS.

use serde_json::json;

use crate::harness::{write_file, Server};

/// An SQS Query call (form POST to the queue URL or `/`): (status, XML).
async fn query(s: &Server, path: &str, params: &[(&str, &str)]) -> (u16, String) {
    let mut form = form_urlencoded::Serializer::new(String::new());
    form.append_pair("Version", "2012-11-05");
    for (k, v) in params {
        form.append_pair(k, v);
    }
    let resp = s
        .http
        .post(s.url(path))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form.finish())
        .send()
        .await
        .expect("Query request");
    (resp.status().as_u16(), resp.text().await.expect("body"))
}

async fn attribute(s: &Server, name: &str, attribute: &str) -> String {
    let a = s
        .sqs(
            "GetQueueAttributes",
            json!({"QueueUrl": s.queue_url(name), "AttributeNames": [attribute]}),
        )
        .await;
    a["Attributes"][attribute].as_str().unwrap_or("").to_owned()
}

#[tokio::test]
async fn off_by_default_a_missing_queue_stays_missing() {
    let s = Server::start();
    let (status, body, _) = s
        .sqs_raw("GetQueueUrl", json!({"QueueName": "never-made"}))
        .await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["__type"]
            .as_str()
            .unwrap()
            .contains("QueueDoesNotExist"),
        "{body}"
    );
    let (status, body, _) = s
        .sqs_raw(
            "SendMessage",
            json!({"QueueUrl": s.queue_url("never-made"), "MessageBody": "x"}),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    let listed = s.sqs("ListQueues", json!({})).await;
    assert!(listed.get("QueueUrls").is_none(), "{listed}");
}

#[tokio::test]
async fn each_operation_creates_its_missing_queue_over_json_and_query() {
    let s = Server::start_with(&["--auto-create-queues"], &[]).expect("starts");
    // GetQueueUrl (JSON): the URL of a new standard queue with the defaults.
    let url = s
        .sqs("GetQueueUrl", json!({"QueueName": "by-get-url"}))
        .await;
    assert_eq!(url["QueueUrl"], s.queue_url("by-get-url"));
    assert_eq!(attribute(&s, "by-get-url", "VisibilityTimeout").await, "30");
    assert_eq!(attribute(&s, "by-get-url", "FifoQueue").await, "");
    // SendMessage (Query, to the queue URL's path), then the message is there.
    let (status, xml) = query(
        &s,
        "/000000000000/by-query-send",
        &[("Action", "SendMessage"), ("MessageBody", "first")],
    )
    .await;
    assert_eq!(status, 200, "{xml}");
    let got = s
        .sqs(
            "ReceiveMessage",
            json!({"QueueUrl": s.queue_url("by-query-send")}),
        )
        .await;
    assert_eq!(got["Messages"][0]["Body"], "first", "{got}");
    // SendMessage (JSON) to a .fifo name: a FIFO queue, and the send is a FIFO send.
    s.sqs(
        "SendMessage",
        json!({"QueueUrl": s.queue_url("by-send.fifo"), "MessageBody": "f",
               "MessageGroupId": "g", "MessageDeduplicationId": "d"}),
    )
    .await;
    assert_eq!(attribute(&s, "by-send.fifo", "FifoQueue").await, "true");
    // SendMessageBatch (JSON).
    let batch = s
        .sqs(
            "SendMessageBatch",
            json!({"QueueUrl": s.queue_url("by-batch"),
                   "Entries": [{"Id": "1", "MessageBody": "a"}, {"Id": "2", "MessageBody": "b"}]}),
        )
        .await;
    assert_eq!(batch["Successful"].as_array().unwrap().len(), 2, "{batch}");
    assert_eq!(
        attribute(&s, "by-batch", "ApproximateNumberOfMessages").await,
        "2"
    );
    // ReceiveMessage (Query): an empty answer from a new queue.
    let (status, xml) = query(
        &s,
        "/",
        &[
            ("Action", "ReceiveMessage"),
            ("QueueUrl", &s.queue_url("by-receive")),
        ],
    )
    .await;
    assert_eq!(status, 200, "{xml}");
    assert!(!xml.contains("<Message>"), "{xml}");
    // GetQueueUrl (Query) of a .fifo name.
    let (status, xml) = query(
        &s,
        "/",
        &[
            ("Action", "GetQueueUrl"),
            ("QueueName", "by-query-url.fifo"),
        ],
    )
    .await;
    assert_eq!(status, 200, "{xml}");
    assert_eq!(
        attribute(&s, "by-query-url.fifo", "FifoQueue").await,
        "true"
    );
    let listed = s.sqs("ListQueues", json!({})).await;
    assert_eq!(listed["QueueUrls"].as_array().unwrap().len(), 6, "{listed}");
    // Other operations do not create: DeleteMessage's and GetQueueAttributes' queue stays
    // missing, and a name CreateQueue refuses is QueueDoesNotExist, not a new queue.
    let (status, body, _) = s
        .sqs_raw(
            "GetQueueAttributes",
            json!({"QueueUrl": s.queue_url("not-by-attributes")}),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    let (status, body, _) = s
        .sqs_raw("GetQueueUrl", json!({"QueueName": "bad name!"}))
        .await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["__type"]
            .as_str()
            .unwrap()
            .contains("QueueDoesNotExist"),
        "{body}"
    );
}

#[tokio::test]
async fn the_environment_and_the_config_file_turn_it_on() {
    let s = Server::start_with(&[], &[("LOFT_AUTO_CREATE_QUEUES", "true")]).expect("starts");
    s.sqs("GetQueueUrl", json!({"QueueName": "by-env"})).await;
    drop(s);
    let dir = tempfile::tempdir().unwrap();
    let path = write_file(
        dir.path(),
        "loft.toml",
        "[server]\nlisten = \"127.0.0.1:0\"\nauto_create_queues = true\n",
    );
    let path = path.to_str().unwrap().to_owned();
    let s = Server::start_in(dir, &["--config", &path], &[]).expect("starts");
    s.sqs("GetQueueUrl", json!({"QueueName": "by-file"})).await;
}
