//! `loft serve --config FILE`: resources created at start, idempotently and in dependency
//! order; server settings with flags overriding the file; bad files stop start-up with the
//! file, line and reason.

use serde_json::json;

use crate::harness::{write_file, Server};

const GOOD: &str = r#"
[server]
listen = "127.0.0.1:0"
db = "state.db"
account_id = "123456789012"

# The source queue comes first; its dead-letter queue is declared after it.
[[queues]]
name = "orders"
attributes = { VisibilityTimeout = "45", RedrivePolicy = '{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:123456789012:orders-dlq","maxReceiveCount":"3"}' }
tags = { team = "shop" }

[[queues]]
name = "orders-dlq"
attributes = { MessageRetentionPeriod = 1209600 }

[[queues]]
name = "jobs.fifo"
attributes = { FifoQueue = true, ContentBasedDeduplication = "true" }

[[topics]]
name = "events"
[[topics.subscriptions]]
protocol = "sqs"
endpoint = "arn:aws:sqs:us-east-1:123456789012:orders"
attributes = { RawMessageDelivery = "true" }
"#;

fn start(text: &str, extra: &[&str]) -> Result<Server, crate::harness::StartFailure> {
    let dir = tempfile::tempdir().unwrap();
    let path = write_file(dir.path(), "loft.toml", text);
    let path = path.to_str().unwrap().to_owned();
    let mut args = vec!["--config", path.as_str()];
    args.extend_from_slice(extra);
    Server::start_in(dir, &args, &[])
}

#[tokio::test]
async fn a_good_file_creates_queues_topics_and_subscriptions() {
    let s = start(GOOD, &[]).expect("starts");
    assert!(
        s.dir().join("state.db").exists(),
        "db is relative to the config file"
    );
    let url = s.sqs("GetQueueUrl", json!({"QueueName": "orders"})).await["QueueUrl"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        url.contains("/123456789012/orders"),
        "account from the file: {url}"
    );
    let attrs = s
        .sqs(
            "GetQueueAttributes",
            json!({"QueueUrl": url, "AttributeNames": ["All"]}),
        )
        .await;
    assert_eq!(attrs["Attributes"]["VisibilityTimeout"], "45");
    let policy: serde_json::Value =
        serde_json::from_str(attrs["Attributes"]["RedrivePolicy"].as_str().unwrap()).unwrap();
    assert_eq!(policy["maxReceiveCount"], 3);
    let tags = s.sqs("ListQueueTags", json!({"QueueUrl": url})).await;
    assert_eq!(tags["Tags"]["team"], "shop");
    let dlq = s
        .sqs(
            "GetQueueAttributes",
            json!({"QueueUrl": format!("{}/123456789012/orders-dlq", s.base), "AttributeNames": ["MessageRetentionPeriod"]}),
        )
        .await;
    assert_eq!(dlq["Attributes"]["MessageRetentionPeriod"], "1209600");
    let fifo = s
        .sqs(
            "GetQueueAttributes",
            json!({"QueueUrl": format!("{}/123456789012/jobs.fifo", s.base), "AttributeNames": ["All"]}),
        )
        .await;
    assert_eq!(fifo["Attributes"]["ContentBasedDeduplication"], "true");
    // The subscription delivers raw messages to the queue.
    let (status, xml) = s
        .sns(
            "Publish",
            &[
                ("TopicArn", "arn:aws:sns:us-east-1:123456789012:events"),
                ("Message", "order 1 placed"),
            ],
        )
        .await;
    assert_eq!(status, 200, "{xml}");
    let got = s
        .sqs(
            "ReceiveMessage",
            json!({"QueueUrl": url, "WaitTimeSeconds": 5}),
        )
        .await;
    assert_eq!(got["Messages"][0]["Body"], "order 1 placed");
}

#[tokio::test]
async fn starting_again_is_idempotent_and_applies_changed_attributes() {
    let s = start(GOOD, &[]).expect("first start");
    let dir = s.stop();
    // The same file again: nothing fails, nothing is duplicated.
    let path = dir.path().join("loft.toml");
    let p = path.to_str().unwrap().to_owned();
    let s = Server::start_in(dir, &["--config", &p], &[]).expect("second start");
    let (status, xml) = s
        .sns(
            "ListSubscriptionsByTopic",
            &[("TopicArn", "arn:aws:sns:us-east-1:123456789012:events")],
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(xml.matches("<SubscriptionArn>").count(), 1, "{xml}");
    let dir = s.stop();
    // A changed attribute is applied to the existing queue.
    std::fs::write(
        &path,
        GOOD.replace("VisibilityTimeout = \"45\"", "VisibilityTimeout = \"60\""),
    )
    .unwrap();
    let s = Server::start_in(dir, &["--config", &p], &[]).expect("third start");
    let attrs = s
        .sqs(
            "GetQueueAttributes",
            json!({"QueueUrl": format!("{}/123456789012/orders", s.base), "AttributeNames": ["VisibilityTimeout"]}),
        )
        .await;
    assert_eq!(attrs["Attributes"]["VisibilityTimeout"], "60");
    assert!(s.stderr().contains("attributes applied"), "{}", s.stderr());
}

#[tokio::test]
async fn flags_and_env_override_the_file() {
    // The file's ARNs name its account; with another account they would name queues
    // that account cannot have (refused at start, as the next case shows).
    let file = GOOD.replace("123456789012", "999999999999");
    let file = file.replace(
        "account_id = \"999999999999\"",
        "account_id = \"123456789012\"",
    );
    let s = start(&file, &["--account-id", "999999999999"]).expect("starts");
    let url = s
        .sqs("GetQueueUrl", json!({"QueueName": "orders-dlq"}))
        .await["QueueUrl"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(url.contains("/999999999999/"), "the flag wins: {url}");
    drop(s);
    let dir = tempfile::tempdir().unwrap();
    let path = write_file(
        dir.path(),
        "loft.toml",
        "[server]\nlisten = \"127.0.0.1:0\"\nregion = \"eu-west-1\"\n",
    );
    let s = Server::start_in(
        dir,
        &["--config", path.to_str().unwrap()],
        &[("LOFT_REGION", "ap-south-1")],
    )
    .expect("starts");
    let out = s.sqs("CreateQueue", json!({"QueueName": "r"})).await;
    let url = out["QueueUrl"].as_str().unwrap();
    let arn = s
        .sqs(
            "GetQueueAttributes",
            json!({"QueueUrl": url, "AttributeNames": ["QueueArn"]}),
        )
        .await;
    assert_eq!(
        arn["Attributes"]["QueueArn"],
        "arn:aws:sqs:ap-south-1:000000000000:r"
    );
}

#[test]
fn limits_in_the_file_apply_and_flags_override_them() {
    use std::io::{Read, Write};
    let text = "[server]\nlisten = \"127.0.0.1:0\"\nmax_connections_per_ip = 1\n\
                keep_alive_timeout = 30\n";
    let health = |base: &str| {
        let mut c = std::net::TcpStream::connect(base.trim_start_matches("http://")).unwrap();
        c.set_read_timeout(Some(std::time::Duration::from_secs(10)))
            .unwrap();
        c.write_all(b"GET /health HTTP/1.1\r\nHost: loft\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut out = String::new();
        let _ = c.read_to_string(&mut out);
        out
    };
    let s = start(text, &[]).expect("starts");
    // One connection held open (keep-alive): the address has no slot left.
    let mut held = std::net::TcpStream::connect(s.base.trim_start_matches("http://")).unwrap();
    held.write_all(b"GET /health HTTP/1.1\r\nHost: loft\r\n\r\n")
        .unwrap();
    let mut first = [0u8; 12];
    held.read_exact(&mut first).unwrap();
    assert_eq!(&first, b"HTTP/1.1 200");
    let refused = health(&s.base);
    assert!(
        refused.contains("the limit is 1 per address"),
        "the file's limit applies: {refused}"
    );
    drop((held, s));
    let s = start(text, &["--max-connections-per-ip", "2"]).expect("starts");
    let mut held = std::net::TcpStream::connect(s.base.trim_start_matches("http://")).unwrap();
    held.write_all(b"GET /health HTTP/1.1\r\nHost: loft\r\n\r\n")
        .unwrap();
    held.read_exact(&mut first).unwrap();
    assert!(health(&s.base).starts_with("HTTP/1.1 200"), "the flag wins");
}

/// ARNs in the file name an account and a region: one the server does not have (here the
/// file's account, overridden by `--account-id`) names no queue, and provisioning says so.
#[test]
fn an_arn_of_another_account_is_refused_at_start() {
    let failure = match start(GOOD, &["--account-id", "999999999999"]) {
        Ok(s) => panic!("started; stderr:\n{}", s.stderr()),
        Err(f) => f,
    };
    assert!(!failure.status.success(), "{failure:?}");
    assert!(
        failure
            .stderr
            .contains("Dead letter target does not exist."),
        "{}",
        failure.stderr
    );
}

/// Starts with `text`, expects failure, and checks stderr names `loft.toml:LINE:` and
/// contains `reason`.
fn refused(text: &str, line: usize, reason: &str) {
    let failure = match start(text, &[]) {
        Ok(s) => panic!("started with a bad file; stderr:\n{}", s.stderr()),
        Err(f) => f,
    };
    assert!(!failure.status.success(), "{failure:?}");
    let needle = format!("loft.toml:{line}:");
    assert!(
        failure.stderr.contains(&needle) && failure.stderr.contains(reason),
        "stderr lacks {needle:?} and {reason:?}:\n{}",
        failure.stderr
    );
}

#[test]
fn a_syntax_error_names_the_line() {
    refused(
        "[server]\nlisten = \"127.0.0.1:0\"\n\n[[queues]]\nname = \"a\nattributes = {}\n",
        5,
        "",
    );
}

#[test]
fn an_unknown_key_names_the_line() {
    refused(
        "[server]\nlisen = \"127.0.0.1:0\"\n",
        2,
        "unknown field `lisen`",
    );
}

#[test]
fn a_wrong_type_names_the_line() {
    refused(
        "[server]\nlisten = \"127.0.0.1:0\"\n[[queues]]\nname = [\"a\"]\n",
        4,
        "string",
    );
}

#[test]
fn a_bad_attribute_value_names_the_line() {
    refused(
        "[server]\nlisten = \"127.0.0.1:0\"\n[[queues]]\nname = \"a\"\nattributes = { VisibilityTimeout = \"50000\" }\n",
        5,
        "VisibilityTimeout",
    );
}

#[test]
fn an_unknown_attribute_names_the_line() {
    refused(
        "[server]\nlisten = \"127.0.0.1:0\"\n[[queues]]\nname = \"a\"\nattributes = { Colour = \"blue\" }\n",
        5,
        "Colour",
    );
}

#[test]
fn a_dead_letter_cycle_names_the_line() {
    let policy = |to: &str| {
        format!(
            "attributes = {{ RedrivePolicy = '{{\"deadLetterTargetArn\":\"arn:aws:sqs:us-east-1:000000000000:{to}\",\"maxReceiveCount\":\"2\"}}' }}"
        )
    };
    let text = format!(
        "[server]\nlisten = \"127.0.0.1:0\"\n[[queues]]\nname = \"a\"\n{}\n[[queues]]\nname = \"b\"\n{}\n",
        policy("b"),
        policy("a")
    );
    refused(&text, 5, "cycle");
}

#[test]
fn a_missing_dead_letter_queue_stops_start_up_at_its_line() {
    refused(
        "[server]\nlisten = \"127.0.0.1:0\"\n[[queues]]\nname = \"a\"\nattributes = { RedrivePolicy = '{\"deadLetterTargetArn\":\"arn:aws:sqs:us-east-1:000000000000:nowhere\",\"maxReceiveCount\":\"2\"}' }\n",
        5,
        "Dead letter target does not exist",
    );
}

#[test]
fn a_bad_subscription_stops_start_up_at_its_line() {
    refused(
        "[server]\nlisten = \"127.0.0.1:0\"\n[[topics]]\nname = \"t\"\n[[topics.subscriptions]]\nprotocol = \"carrier-pigeon\"\nendpoint = \"loft\"\n",
        6,
        "carrier-pigeon",
    );
}

#[test]
fn a_missing_file_is_refused() {
    let f = Server::start_with(&["--config", "/nonexistent/loft.toml"], &[])
        .err()
        .expect("refused");
    assert!(
        f.stderr.contains("/nonexistent/loft.toml: cannot read"),
        "{}",
        f.stderr
    );
}

#[test]
fn a_master_key_file_that_holds_no_key_stops_the_start() {
    // Every encrypted send and receive would fail on it: Loft says so at start instead.
    let dir = tempfile::tempdir().unwrap();
    let keys = dir.path().join("keys");
    std::fs::create_dir(&keys).unwrap();
    let key = keys.join("master.key");
    std::fs::write(&key, "not a key\n").unwrap();
    let key = key.to_str().unwrap().to_owned();
    let err = match Server::start_in(dir, &["--sse-key-file", &key], &[]) {
        Ok(_) => panic!("started with a key file that holds no key"),
        Err(e) => e,
    };
    assert!(!err.status.success());
    assert!(
        err.stderr.contains("not a Loft master key"),
        "{}",
        err.stderr
    );
}

#[tokio::test]
async fn a_missing_or_replaced_master_key_stops_the_start_while_encrypted_messages_are_stored() {
    // A queue with SSE-SQS (the default) holds one sealed message.
    let server = Server::start();
    server
        .sqs("CreateQueue", json!({"QueueName": "sealed"}))
        .await;
    server
        .sqs(
            "SendMessage",
            json!({"QueueUrl": server.queue_url("sealed"), "MessageBody": "kept secret"}),
        )
        .await;
    let dir = server.stop();
    let key_file = dir.path().join("loft-sse").join("master.key");
    let key = std::fs::read_to_string(&key_file).unwrap();

    // Without the key file: refused, naming the file; no new key is made.
    std::fs::remove_file(&key_file).unwrap();
    let kept = tempfile::tempdir().unwrap();
    let db = dir.path().join("loft.db");
    let db_arg = db.to_str().unwrap().to_owned();
    let err = match Server::start_in(kept, &["--db", &db_arg], &[]) {
        Ok(s) => panic!("started without its key file: {}", s.stderr()),
        Err(e) => e,
    };
    assert!(!err.status.success());
    assert!(
        err.stderr.contains(&format!(
            "{}: the SQS encryption master key file is missing",
            key_file.display()
        )),
        "{}",
        err.stderr
    );
    assert!(!key_file.exists(), "no new key was made");

    // Another key in its place: refused, naming the file.
    let other = "MzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzM=\n";
    std::fs::write(&key_file, other).unwrap();
    let err = match Server::start_in(tempfile::tempdir().unwrap(), &["--db", &db_arg], &[]) {
        Ok(s) => panic!("started with another key: {}", s.stderr()),
        Err(e) => e,
    };
    assert!(
        err.stderr.contains(&format!(
            "the key file {} does not open this database's encrypted messages",
            key_file.display()
        )),
        "{}",
        err.stderr
    );

    // The right key again: it starts and the message reads back.
    std::fs::write(&key_file, key).unwrap();
    let server = Server::start_in(tempfile::tempdir().unwrap(), &["--db", &db_arg], &[])
        .unwrap_or_else(|f| panic!("{f:?}"));
    let out = server
        .sqs(
            "ReceiveMessage",
            json!({"QueueUrl": server.queue_url("sealed")}),
        )
        .await;
    assert_eq!(out["Messages"][0]["Body"], "kept secret");
    server.stop();
    drop(dir);
}
