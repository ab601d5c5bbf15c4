//! Receipt handles only Loft can make: a handle Loft did not sign is `ReceiptHandleIsInvalid`
//! (SQS API Reference, DeleteMessage / ChangeMessageVisibility errors) on standard and FIFO
//! queues, over JSON and Query, in batch entries too, and tells nothing about other
//! messages; a stale handle still deletes (DeleteMessage: "If you use an old ReceiptHandle,
//! the request will succeed") but cannot change visibility; handles survive a restart.

use base64::Engine;
use serde_json::{json, Value};

use crate::harness::{http, Server};
use crate::wire::{self, Outcome};

#[derive(Clone, Copy, Debug)]
enum Protocol {
    Json,
    Query,
}

async fn call(server: &Server, p: Protocol, op: &str, input: Value) -> Outcome {
    let http = http();
    match p {
        Protocol::Json => wire::json(&http, &server.url, op, &input).await,
        Protocol::Query => wire::query(&http, &server.url, op, &input).await,
    }
}

/// Creates queue `name` (FIFO when it ends in `.fifo`), sends one message and receives it
/// hidden for 300 s; returns the queue URL and the handle.
async fn one_in_flight(server: &Server, p: Protocol, name: &str) -> (String, String) {
    let fifo = name.ends_with(".fifo");
    let attributes = if fifo {
        json!({"FifoQueue": "true", "ContentBasedDeduplication": "true"})
    } else {
        json!({})
    };
    let url = call(
        server,
        p,
        "CreateQueue",
        json!({"QueueName": name, "Attributes": attributes}),
    )
    .await
    .ok()["QueueUrl"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut send = json!({"QueueUrl": url, "MessageBody": "held"});
    if fifo {
        send["MessageGroupId"] = json!("g");
    }
    call(server, p, "SendMessage", send).await.ok();
    let handle = receive(server, p, &url, 300).await.expect("a message");
    (url, handle)
}

async fn receive(server: &Server, p: Protocol, url: &str, visibility: i64) -> Option<String> {
    let out = call(
        server,
        p,
        "ReceiveMessage",
        json!({"QueueUrl": url, "VisibilityTimeout": visibility}),
    )
    .await
    .ok();
    out["Messages"]
        .as_array()
        .and_then(|m| m.first())
        .map(|m| m["ReceiptHandle"].as_str().unwrap().to_owned())
}

/// (visible, in flight) of queue `url`.
async fn counts(server: &Server, p: Protocol, url: &str) -> (String, String) {
    let out = call(
        server,
        p,
        "GetQueueAttributes",
        json!({"QueueUrl": url, "AttributeNames": ["All"]}),
    )
    .await
    .ok();
    let a = &out["Attributes"];
    let s = |n: &str| {
        a[n].as_str()
            .map(str::to_owned)
            .unwrap_or_else(|| a[n].to_string())
    };
    (
        s("ApproximateNumberOfMessages"),
        s("ApproximateNumberOfMessagesNotVisible"),
    )
}

fn b64url(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// Handles an attacker can make from a genuine one: bit flips, a changed seq, old-format
/// guesses (token 0 is a message never received), random bytes of the right length.
fn forgeries(genuine: &str) -> Vec<String> {
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(genuine)
        .expect("Loft's handles are URL-safe base64");
    let mut out = Vec::new();
    for at in [0, 5, 12, 20, 30, bytes.len() - 1] {
        let mut b = bytes.clone();
        b[at] ^= 0x01;
        out.push(b64url(&b));
    }
    let mut next_seq = bytes.clone();
    next_seq[16] = next_seq[16].wrapping_add(1);
    out.push(b64url(&next_seq));
    for guess in ["1:1:0", "1:2:0", "2:1:0", "1:1:1", "3:3:123456789"] {
        out.push(b64url(guess.as_bytes()));
    }
    // Bytes of each handle format's length, after its version byte (2: fields and MAC;
    // 3: nonce, sealed fields, tag).
    out.push(b64url(&[2u8; 41]));
    out.push(b64url(&[3u8; 53]));
    out
}

fn assert_invalid(outcome: &Outcome, what: &str) {
    match outcome {
        Outcome::Err { code, status, .. } => assert_eq!(
            (code.as_str(), *status),
            ("ReceiptHandleIsInvalid", 400),
            "{what}"
        ),
        Outcome::Ok(v) => panic!("{what}: accepted: {v}"),
    }
}

fn assert_failed_entry(outcome: Outcome, what: &str) {
    let out = outcome.ok();
    assert!(
        out["Successful"].as_array().is_none_or(|s| s.is_empty()),
        "{what}: {out}"
    );
    assert_eq!(
        out["Failed"][0]["Code"].as_str(),
        Some("ReceiptHandleIsInvalid"),
        "{what}: {out}"
    );
}

#[tokio::test]
async fn forged_handles_are_refused_on_both_queue_kinds_and_protocols_in_batches_too() {
    let server = Server::start();
    for p in [Protocol::Json, Protocol::Query] {
        for kind in ["std", "fifo.fifo"] {
            let name = format!("forged-{p:?}-{kind}").to_lowercase();
            let (url, genuine) = one_in_flight(&server, p, &name).await;
            for forged in forgeries(&genuine) {
                let what = format!("{p:?} {kind} {forged}");
                let h = forged.as_str();
                assert_invalid(
                    &call(
                        &server,
                        p,
                        "DeleteMessage",
                        json!({"QueueUrl": url, "ReceiptHandle": h}),
                    )
                    .await,
                    &format!("DeleteMessage {what}"),
                );
                assert_invalid(
                    &call(
                        &server,
                        p,
                        "ChangeMessageVisibility",
                        json!({"QueueUrl": url, "ReceiptHandle": h, "VisibilityTimeout": 0}),
                    )
                    .await,
                    &format!("ChangeMessageVisibility {what}"),
                );
                assert_failed_entry(
                    call(
                        &server,
                        p,
                        "DeleteMessageBatch",
                        json!({"QueueUrl": url, "Entries": [{"Id": "a", "ReceiptHandle": h}]}),
                    )
                    .await,
                    &format!("DeleteMessageBatch {what}"),
                );
                assert_failed_entry(
                    call(
                        &server,
                        p,
                        "ChangeMessageVisibilityBatch",
                        json!({"QueueUrl": url, "Entries": [
                            {"Id": "a", "ReceiptHandle": h, "VisibilityTimeout": 0}]}),
                    )
                    .await,
                    &format!("ChangeMessageVisibilityBatch {what}"),
                );
            }
            // Nothing moved: the message is still held by its receive, whose handle works.
            assert_eq!(
                counts(&server, p, &url).await,
                ("0".into(), "1".into()),
                "{p:?} {kind}"
            );
            call(
                &server,
                p,
                "DeleteMessage",
                json!({"QueueUrl": url, "ReceiptHandle": genuine}),
            )
            .await
            .ok();
            assert_eq!(counts(&server, p, &url).await, ("0".into(), "0".into()));
        }
    }
}

#[tokio::test]
async fn a_stale_handle_still_changes_visibility_and_deletes() {
    let server = Server::start();
    for p in [Protocol::Json, Protocol::Query] {
        let name = format!("stale-{p:?}").to_lowercase();
        let (url, old) = one_in_flight(&server, p, &name).await;
        // Visible again at once, then taken by a second receive.
        call(
            &server,
            p,
            "ChangeMessageVisibility",
            json!({"QueueUrl": url, "ReceiptHandle": old, "VisibilityTimeout": 0}),
        )
        .await
        .ok();
        let current = receive(&server, p, &url, 300)
            .await
            .expect("received again");
        assert_ne!(old, current);
        // A genuine handle of the earlier receive still changes the message's visibility on
        // a standard queue, as AWS answers (LocalStack's aws.validated
        // test_terminate_visibility_timeout_after_receive): the message is visible again.
        match call(
            &server,
            p,
            "ChangeMessageVisibility",
            json!({"QueueUrl": url, "ReceiptHandle": old, "VisibilityTimeout": 0}),
        )
        .await
        {
            Outcome::Ok(_) => {}
            Outcome::Err { code, status, .. } => {
                panic!("{p:?}: the earlier handle's change was refused: {code} ({status})")
            }
        }
        assert_eq!(counts(&server, p, &url).await, ("1".into(), "0".into()));
        // Its delete still succeeds, and deletes.
        call(
            &server,
            p,
            "DeleteMessage",
            json!({"QueueUrl": url, "ReceiptHandle": old}),
        )
        .await
        .ok();
        assert_eq!(counts(&server, p, &url).await, ("0".into(), "0".into()));
        // The message is gone: a genuine handle's delete succeeds (as on AWS), its
        // visibility change says the message is not available.
        call(
            &server,
            p,
            "DeleteMessage",
            json!({"QueueUrl": url, "ReceiptHandle": current}),
        )
        .await
        .ok();
        match call(
            &server,
            p,
            "ChangeMessageVisibility",
            json!({"QueueUrl": url, "ReceiptHandle": current, "VisibilityTimeout": 5}),
        )
        .await
        {
            Outcome::Err { code, .. } => assert_eq!(code, "InvalidParameterValue"),
            Outcome::Ok(v) => panic!("{p:?}: changed a deleted message: {v}"),
        }
    }
}

#[tokio::test]
async fn a_handle_survives_a_restart() {
    let mut server = Server::start();
    let p = Protocol::Json;
    let (url, handle) = one_in_flight(&server, p, "restart-std").await;
    let (furl, fhandle) = one_in_flight(&server, p, "restart.fifo").await;
    server.restart();
    for (url, handle) in [(&url, &handle), (&furl, &fhandle)] {
        call(
            &server,
            p,
            "ChangeMessageVisibility",
            json!({"QueueUrl": url, "ReceiptHandle": handle, "VisibilityTimeout": 600}),
        )
        .await
        .ok();
        call(
            &server,
            p,
            "DeleteMessage",
            json!({"QueueUrl": url, "ReceiptHandle": handle}),
        )
        .await
        .ok();
        assert_eq!(counts(&server, p, url).await, ("0".into(), "0".into()));
    }
}
