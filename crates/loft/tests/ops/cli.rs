//! The admin commands as processes against a running server.

use serde_json::{json, Value};

use crate::harness::{cli_at, Server};

#[tokio::test]
async fn queue_commands_and_messages() {
    let s = Server::start();
    let url = s
        .cli(
            &["queue", "create", "orders", "-a", "VisibilityTimeout=45"],
            None,
        )
        .ok()
        .trim()
        .to_owned();
    assert_eq!(url, s.queue_url("orders"));
    // Idempotent.
    s.cli(
        &["queue", "create", "orders", "-a", "VisibilityTimeout=45"],
        None,
    )
    .ok();
    let id = s
        .cli(
            &[
                "send",
                "orders",
                "hello",
                "-a",
                "colour=blue",
                "-a",
                "n:Number=7",
            ],
            None,
        )
        .ok()
        .trim()
        .to_owned();
    assert_eq!(id.len(), 36, "a MessageId: {id}");
    s.cli(&["send", "orders", "-"], Some(b"from stdin")).ok();

    let list = s.cli(&["queue", "list", "--json"], None).json();
    assert_eq!(
        list,
        json!([{"name": "orders", "url": url, "visible": 2, "in_flight": 0, "delayed": 0}])
    );
    let table = s.cli(&["queue", "list"], None);
    let lines: Vec<&str> = table.ok().lines().collect();
    assert!(lines[0].starts_with("NAME"), "{table:?}");
    assert!(lines[1].starts_with("orders  "), "{table:?}");
    assert!(lines[1].contains(" 2 "), "{table:?}");

    let attrs = s
        .cli(
            &[
                "queue",
                "attributes",
                "orders",
                "--set",
                "DelaySeconds=0",
                "--json",
            ],
            None,
        )
        .json();
    assert_eq!(attrs["VisibilityTimeout"], "45");
    assert_eq!(attrs["ApproximateNumberOfMessages"], "2");
    let table = s.cli(&["queue", "attributes", "orders"], None);
    assert!(
        table
            .ok()
            .lines()
            .any(|l| l.starts_with("VisibilityTimeout") && l.ends_with("45")),
        "{table:?}"
    );

    // Receive without deleting, then with.
    let got = s
        .cli(
            &[
                "receive",
                "orders",
                "--max",
                "10",
                "--visibility",
                "0",
                "--json",
            ],
            None,
        )
        .json();
    let bodies: Vec<&str> = got
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["Body"].as_str().unwrap())
        .collect();
    assert_eq!(bodies.len(), 2, "{got}");
    assert!(bodies.contains(&"hello") && bodies.contains(&"from stdin"));
    let hello = got
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["Body"] == "hello")
        .unwrap();
    assert_eq!(hello["MessageAttributes"]["colour"]["StringValue"], "blue");
    assert_eq!(hello["MessageAttributes"]["n"]["DataType"], "Number");
    let table = s.cli(
        &[
            "receive", "orders", "--max", "10", "--delete", "--wait", "1",
        ],
        None,
    );
    let out = table.ok();
    assert!(out.starts_with("MESSAGE ID"), "{table:?}");
    assert_eq!(out.lines().count(), 3, "{table:?}");
    let none = s.cli(&["receive", "orders", "--json"], None).json();
    assert_eq!(none, json!([]));

    s.cli(&["send", "orders", "x"], None).ok();
    assert!(s
        .cli(&["queue", "purge", "orders"], None)
        .ok()
        .contains("purged"));
    let attrs = s
        .cli(&["queue", "attributes", "orders", "--json"], None)
        .json();
    assert_eq!(attrs["ApproximateNumberOfMessages"], "0");
    s.cli(&["queue", "delete", "orders"], None).ok();
    assert_eq!(s.cli(&["queue", "list", "--json"], None).json(), json!([]));
}

#[tokio::test]
async fn errors_print_the_aws_code_and_exit_non_zero() {
    let s = Server::start();
    let r = s.cli(&["send", "missing", "x"], None);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stderr
            .contains("QueueDoesNotExist: The specified queue does not exist."),
        "{r:?}"
    );
    assert!(r.stdout.is_empty());
    let r = s.cli(&["queue", "create", "bad name!"], None);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("InvalidParameterValue"), "{r:?}");
    let r = s.cli(&["topic", "delete", "nope"], None);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("NotFound"), "{r:?}");
    let r = s.cli(&["queue", "create", "q", "-a", "novalue"], None);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("NAME=VALUE"), "{r:?}");
    // Nobody listening.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let r = cli_at(&endpoint, &["queue", "list"], None);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("cannot reach"), "{r:?}");
    // --endpoint beats LOFT_ENDPOINT.
    let r = cli_at(
        &endpoint,
        &["queue", "list", "--json", "--endpoint", &s.base],
        None,
    );
    assert_eq!(r.json(), json!([]));
}

#[tokio::test]
async fn topics_publish_and_subscribe() {
    let s = Server::start();
    s.cli(&["queue", "create", "inbox"], None).ok();
    let arn = s
        .cli(&["topic", "create", "news"], None)
        .ok()
        .trim()
        .to_owned();
    assert_eq!(arn, "arn:aws:sns:us-east-1:000000000000:news");
    let sub = s
        .cli(
            &[
                "subscribe",
                "news",
                "sqs",
                "inbox",
                "-a",
                "RawMessageDelivery=true",
            ],
            None,
        )
        .ok()
        .trim()
        .to_owned();
    assert!(sub.starts_with(&format!("{arn}:")), "{sub}");
    let list = s.cli(&["topic", "list", "--json"], None).json();
    assert_eq!(list[0]["name"], "news");
    assert_eq!(list[0]["subscriptions"][0]["Protocol"], "sqs");
    assert_eq!(
        list[0]["subscriptions"][0]["Endpoint"],
        "arn:aws:sqs:us-east-1:000000000000:inbox"
    );
    let table = s.cli(&["topic", "list"], None);
    assert!(
        table
            .ok()
            .contains("sqs:arn:aws:sqs:us-east-1:000000000000:inbox"),
        "{table:?}"
    );
    let id = s
        .cli(&["publish", "news", "breaking", "-a", "kind=alert"], None)
        .ok()
        .trim()
        .to_owned();
    assert_eq!(id.len(), 36);
    let got = s
        .cli(&["receive", "inbox", "--wait", "5", "--json"], None)
        .json();
    assert_eq!(got[0]["Body"], "breaking");
    assert_eq!(got[0]["MessageAttributes"]["kind"]["StringValue"], "alert");
    s.cli(&["topic", "delete", "news"], None).ok();
    assert_eq!(s.cli(&["topic", "list", "--json"], None).json(), json!([]));
}

#[tokio::test]
async fn redrive_moves_dead_letters_back() {
    let s = Server::start();
    s.cli(&["queue", "create", "jobs-dlq"], None).ok();
    s.cli(
        &[
            "queue",
            "create",
            "jobs",
            "-a",
            r#"RedrivePolicy={"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:jobs-dlq","maxReceiveCount":"1"}"#,
        ],
        None,
    )
    .ok();
    s.cli(&["send", "jobs", "poison"], None).ok();
    for _ in 0..2 {
        s.cli(&["receive", "jobs", "--visibility", "0"], None).ok();
    }
    let dlq = s
        .cli(&["queue", "attributes", "jobs-dlq", "--json"], None)
        .json();
    assert_eq!(dlq["ApproximateNumberOfMessages"], "1");
    let r = s.cli(&["redrive", "jobs-dlq", "--wait", "--json"], None);
    let task = r.json();
    assert_eq!(task["Status"], "COMPLETED", "{r:?}");
    assert_eq!(task["ApproximateNumberOfMessagesMoved"], 1);
    assert!(r.stderr.contains("redrive"), "progress on stderr: {r:?}");
    let got = s.cli(&["receive", "jobs", "--json"], None).json();
    assert_eq!(got[0]["Body"], "poison");
    // Not a dead-letter queue.
    let r = s.cli(&["redrive", "jobs"], None);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("InvalidParameterValue"), "{r:?}");
}

#[tokio::test]
async fn export_reads_without_receiving_and_import_sends_back() {
    let s = Server::start();
    s.cli(&["queue", "create", "src"], None).ok();
    s.cli(&["queue", "create", "dst"], None).ok();
    for i in 0..25 {
        s.cli(
            &[
                "send",
                "src",
                &format!("body {i}"),
                "-a",
                &format!("i:Number={i}"),
            ],
            None,
        )
        .ok();
    }
    // One message in flight, one delayed: both are exported too.
    s.sqs(
        "ReceiveMessage",
        json!({"QueueUrl": s.queue_url("src"), "VisibilityTimeout": 600}),
    )
    .await;
    s.cli(&["send", "src", "delayed", "--delay", "600"], None)
        .ok();
    let r = s.cli(&["export", "src"], None);
    let lines: Vec<Value> = r
        .ok()
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    assert_eq!(lines.len(), 26, "{r:?}");
    assert!(r.stderr.contains("exported 26 messages from src"), "{r:?}");
    assert_eq!(lines[0]["body"], "body 0");
    assert_eq!(lines[3]["message_attributes"]["i"]["StringValue"], "3");
    let states: Vec<&str> = lines.iter().map(|l| l["state"].as_str().unwrap()).collect();
    assert_eq!(states.iter().filter(|s| **s == "in_flight").count(), 1);
    assert_eq!(states.iter().filter(|s| **s == "delayed").count(), 1);
    // Exporting changed nothing: counts and receive counts are as before.
    let attrs = s
        .cli(&["queue", "attributes", "src", "--json"], None)
        .json();
    assert_eq!(attrs["ApproximateNumberOfMessages"], "24");
    assert_eq!(attrs["ApproximateNumberOfMessagesNotVisible"], "1");
    assert_eq!(attrs["ApproximateNumberOfMessagesDelayed"], "1");
    let again = s.cli(&["export", "src"], None);
    assert_eq!(again.ok(), r.ok(), "a second export is identical");

    let r = s.cli(&["import", "dst"], Some(r.stdout.as_bytes()));
    r.ok();
    assert!(r.stderr.contains("imported 26 messages to dst"), "{r:?}");
    let attrs = s
        .cli(&["queue", "attributes", "dst", "--json"], None)
        .json();
    assert_eq!(attrs["ApproximateNumberOfMessages"], "26");
    let copy = s.cli(&["export", "dst"], None);
    let copied: Vec<Value> = copy
        .ok()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for (a, b) in lines.iter().zip(&copied) {
        assert_eq!(a["body"], b["body"]);
        assert_eq!(a["message_attributes"], b["message_attributes"]);
    }
    // A bad line stops the import with its number.
    let r = s.cli(&["import", "dst"], Some(b"{\"body\":\"ok\"}\nnot json\n"));
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("line 2"), "{r:?}");
    // Exporting a missing queue fails with the AWS code.
    let r = s.cli(&["export", "nope"], None);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("QueueDoesNotExist"), "{r:?}");
}

/// Export and import of messages whose total passes SendMessageBatch's 1 MiB: import
/// splits its batches by size, so three 400,000-byte messages arrive, not
/// BatchRequestTooLong.
#[tokio::test]
async fn import_splits_batches_at_one_mebibyte() {
    let s = Server::start();
    s.cli(&["queue", "create", "big-src"], None).ok();
    s.cli(&["queue", "create", "big-dst"], None).ok();
    let body = "x".repeat(400_000);
    for _ in 0..3 {
        s.cli(&["send", "big-src", "-"], Some(body.as_bytes())).ok();
    }
    let exported = s.cli(&["export", "big-src"], None);
    let r = s.cli(&["import", "big-dst"], Some(exported.ok().as_bytes()));
    r.ok();
    assert!(r.stderr.contains("imported 3 messages to big-dst"), "{r:?}");
    let copied = s.cli(&["export", "big-dst"], None);
    let bodies: Vec<usize> = copied
        .ok()
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["body"]
                .as_str()
                .unwrap()
                .len()
        })
        .collect();
    assert_eq!(bodies, [400_000; 3]);
}

/// A queue made through the seeds' API with a name its URL percent-encodes is listed,
/// exported and imported into by that name.
#[tokio::test]
async fn seed_names_with_url_characters_work_in_the_cli() {
    let s = Server::start();
    let resp = reqwest::Client::new()
        .post(s.url("/queues/with%20space/messages"))
        .body(r#"{"body":"spaced"}"#)
        .send()
        .await
        .expect("seeds' send");
    assert!(resp.status().is_success(), "{resp:?}");
    let list = s.cli(&["queue", "list", "--json"], None).json();
    assert_eq!(list[0]["name"], "with space", "{list}");
    let exported = s.cli(&["export", "with space"], None);
    assert!(exported.ok().contains("spaced"), "{exported:?}");
    let r = s.cli(&["import", "with space"], Some(exported.ok().as_bytes()));
    assert!(
        r.stderr.contains("imported 1 messages to with space"),
        "{r:?}"
    );
}

#[tokio::test]
async fn export_reads_the_queue_of_its_region() {
    let s = Server::start();
    s.cli(&["queue", "create", "jobs"], None).ok();
    s.cli(&["send", "jobs", "home"], None).ok();
    // A client with credentials signs for its region, and an open Loft serves the region
    // the signature names.
    let eu = ["--region", "eu-west-1"];
    let keys = [
        ("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"),
        ("AWS_SECRET_ACCESS_KEY", "secret"),
    ];
    let url = s
        .cli_env(&[&["queue", "create", "jobs"][..], &eu[..]].concat(), &keys)
        .ok()
        .trim()
        .to_owned();
    assert!(url.contains("/queue/eu-west-1/"), "{url}");
    s.cli_env(&[&["send", "jobs", "abroad"][..], &eu[..]].concat(), &keys)
        .ok();
    let bodies = |r: &str| -> Vec<String> {
        r.lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap()["body"].to_string())
            .collect()
    };
    let home = s.cli(&["export", "jobs"], None);
    assert_eq!(bodies(home.ok()), ["\"home\""], "{home:?}");
    let abroad = s.cli_env(&[&["export", "jobs"][..], &eu[..]].concat(), &keys);
    assert_eq!(bodies(abroad.ok()), ["\"abroad\""], "{abroad:?}");
    // The queue's URL names its region itself.
    let by_url = s.cli(&["export", &url], None);
    assert_eq!(bodies(by_url.ok()), ["\"abroad\""], "{by_url:?}");
}

#[test]
fn completions_are_generated_for_each_shell() {
    for (shell, needle) in [
        ("bash", "_loft()"),
        ("zsh", "#compdef loft"),
        ("fish", "complete -c loft"),
    ] {
        let r = cli_at("http://127.0.0.1:1", &["completions", shell], None);
        assert!(r.ok().contains(needle), "{shell}: {r:?}");
        assert!(
            r.stdout.contains("redrive"),
            "{shell} completes subcommands"
        );
    }
}
