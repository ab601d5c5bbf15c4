//! Every error a user can provoke over the JSON protocol, with the SDK's variant, the
//! Query-compatible code (`x-amzn-query-error`) and the HTTP status the SQS API Reference
//! gives: 400 for all of these but PurgeQueueInProgress and OverLimit (403) and
//! ResourceNotFoundException (404).

use aws_sdk_sqs::operation::change_message_visibility::ChangeMessageVisibilityError;
use aws_sdk_sqs::operation::change_message_visibility_batch::ChangeMessageVisibilityBatchError;
use aws_sdk_sqs::operation::delete_message::DeleteMessageError;
use aws_sdk_sqs::operation::delete_message_batch::DeleteMessageBatchError;
use aws_sdk_sqs::operation::receive_message::ReceiveMessageError;
use aws_sdk_sqs::operation::send_message::SendMessageError;
use aws_sdk_sqs::operation::send_message_batch::SendMessageBatchError;
use aws_sdk_sqs::types::{
    ChangeMessageVisibilityBatchRequestEntry, DeleteMessageBatchRequestEntry,
    SendMessageBatchRequestEntry,
};
use aws_sdk_sqs::Client;

use crate::harness::Server;
use crate::{counts, create_queue, string_attr, typed_attr};

const NO_QUEUE: &str = "AWS.SimpleQueueService.NonExistentQueue";

fn send_entry(id: &str, body: &str) -> SendMessageBatchRequestEntry {
    SendMessageBatchRequestEntry::builder()
        .id(id)
        .message_body(body)
        .build()
        .unwrap()
}

fn delete_entry(id: &str, handle: &str) -> DeleteMessageBatchRequestEntry {
    DeleteMessageBatchRequestEntry::builder()
        .id(id)
        .receipt_handle(handle)
        .build()
        .unwrap()
}

fn visibility_entry(id: &str, handle: &str, vt: i32) -> ChangeMessageVisibilityBatchRequestEntry {
    ChangeMessageVisibilityBatchRequestEntry::builder()
        .id(id)
        .receipt_handle(handle)
        .visibility_timeout(vt)
        .build()
        .unwrap()
}

/// Sends one message and receives it; returns its receipt handle.
async fn in_flight(sqs: &Client, url: &str, body: &str) -> String {
    sqs.send_message()
        .queue_url(url)
        .message_body(body)
        .send()
        .await
        .unwrap();
    let out = sqs
        .receive_message()
        .queue_url(url)
        .visibility_timeout(300)
        .send()
        .await
        .unwrap();
    out.messages()[0].receipt_handle().unwrap().to_owned()
}

#[tokio::test]
async fn queue_does_not_exist_for_every_queue_operation() {
    let server = Server::start();
    let sqs = server.sdk();
    let url = server.queue_url("missing");
    assert_sdk_err!(
        sqs.send_message()
            .queue_url(&url)
            .message_body("x")
            .send()
            .await,
        SendMessageError::QueueDoesNotExist(_),
        NO_QUEUE,
        400
    );
    assert_sdk_err!(
        sqs.send_message_batch()
            .queue_url(&url)
            .entries(send_entry("a", "x"))
            .send()
            .await,
        SendMessageBatchError::QueueDoesNotExist(_),
        NO_QUEUE,
        400
    );
    assert_sdk_err!(
        sqs.receive_message().queue_url(&url).send().await,
        ReceiveMessageError::QueueDoesNotExist(_),
        NO_QUEUE,
        400
    );
    assert_sdk_err!(
        sqs.delete_message()
            .queue_url(&url)
            .receipt_handle("h")
            .send()
            .await,
        DeleteMessageError::QueueDoesNotExist(_),
        NO_QUEUE,
        400
    );
    assert_sdk_err!(
        sqs.delete_message_batch()
            .queue_url(&url)
            .entries(delete_entry("a", "h"))
            .send()
            .await,
        DeleteMessageBatchError::QueueDoesNotExist(_),
        NO_QUEUE,
        400
    );
    assert_sdk_err!(
        sqs.change_message_visibility()
            .queue_url(&url)
            .receipt_handle("h")
            .visibility_timeout(1)
            .send()
            .await,
        ChangeMessageVisibilityError::QueueDoesNotExist(_),
        NO_QUEUE,
        400
    );
    assert_sdk_err!(
        sqs.change_message_visibility_batch()
            .queue_url(&url)
            .entries(visibility_entry("a", "h", 1))
            .send()
            .await,
        ChangeMessageVisibilityBatchError::QueueDoesNotExist(_),
        NO_QUEUE,
        400
    );
    assert_sdk_err!(
        sqs.untag_queue().queue_url(&url).tag_keys("a").send().await,
        aws_sdk_sqs::operation::untag_queue::UntagQueueError::QueueDoesNotExist(_),
        NO_QUEUE,
        400
    );
    assert_sdk_err!(
        sqs.add_permission()
            .queue_url(&url)
            .label("l")
            .aws_account_ids("111122223333")
            .actions("SendMessage")
            .send()
            .await,
        aws_sdk_sqs::operation::add_permission::AddPermissionError::QueueDoesNotExist(_),
        NO_QUEUE,
        400
    );
}

#[tokio::test]
async fn receive_message_parameter_ranges() {
    let server = Server::start();
    let sqs = server.sdk();
    let url = create_queue(&sqs, "ranges", &[]).await;
    for n in [0, 11, -1] {
        let r = sqs
            .receive_message()
            .queue_url(&url)
            .max_number_of_messages(n)
            .send()
            .await;
        assert_sdk_err!(r, _, "InvalidParameterValue", 400);
    }
    for w in [21, -1] {
        let r = sqs
            .receive_message()
            .queue_url(&url)
            .wait_time_seconds(w)
            .send()
            .await;
        assert_sdk_err!(r, _, "InvalidParameterValue", 400);
    }
    for v in [43201, -1] {
        let r = sqs
            .receive_message()
            .queue_url(&url)
            .visibility_timeout(v)
            .send()
            .await;
        assert_sdk_err!(r, _, "InvalidParameterValue", 400);
    }
    // The edges are valid.
    for (n, w, v) in [(1, 0, 0), (10, 0, 43200)] {
        sqs.receive_message()
            .queue_url(&url)
            .max_number_of_messages(n)
            .wait_time_seconds(w)
            .visibility_timeout(v)
            .send()
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn send_message_parameter_errors() {
    let server = Server::start();
    let sqs = server.sdk();
    let url = create_queue(&sqs, "send-errors", &[]).await;
    // DelaySeconds 0..=900.
    let r = sqs
        .send_message()
        .queue_url(&url)
        .message_body("x")
        .delay_seconds(901)
        .send()
        .await;
    assert_sdk_err!(r, _, "InvalidParameterValue", 400);
    // Characters outside #x9 | #xA | #xD | #x20-#xD7FF | #xE000-#xFFFD | #x10000-#x10FFFF.
    for body in ["bad \u{1} char", "\u{FFFE}", "nul\u{0}"] {
        let r = sqs
            .send_message()
            .queue_url(&url)
            .message_body(body)
            .send()
            .await;
        assert_sdk_err!(
            r,
            SendMessageError::InvalidMessageContents(_),
            "InvalidMessageContents",
            400
        );
    }
    // An empty body is a missing MessageBody.
    let r = sqs
        .send_message()
        .queue_url(&url)
        .message_body("")
        .send()
        .await;
    assert_sdk_err!(r, _, "MissingParameter", 400);
    // Message attributes: bad type, Number not a number, reserved name, too many.
    let bad_attrs = [
        ("x", typed_attr("Text", "v")),
        ("n", typed_attr("Number", "twelve")),
        ("AWS.reserved", string_attr("v")),
        ("amazon.reserved", string_attr("v")),
        ("has space", string_attr("v")),
        ("empty", string_attr("")),
    ];
    for (name, value) in bad_attrs {
        let r = sqs
            .send_message()
            .queue_url(&url)
            .message_body("x")
            .message_attributes(name, value)
            .send()
            .await;
        assert_sdk_err!(r, _, "InvalidParameterValue", 400);
    }
    let mut req = sqs.send_message().queue_url(&url).message_body("x");
    for i in 0..11 {
        req = req.message_attributes(format!("a{i}"), string_attr("v"));
    }
    assert_sdk_err!(req.send().await, _, "InvalidParameterValue", 400);
    // None of the above was stored.
    assert_eq!(counts(&sqs, &url).await, (0, 0, 0));
}

#[tokio::test]
async fn message_too_large() {
    let server = Server::start();
    let sqs = server.sdk();
    // Default MaximumMessageSize: 1 MiB (1,048,576 bytes), body and attributes together.
    let url = create_queue(&sqs, "big", &[]).await;
    sqs.send_message()
        .queue_url(&url)
        .message_body("x".repeat(1_048_576))
        .send()
        .await
        .unwrap();
    let r = sqs
        .send_message()
        .queue_url(&url)
        .message_body("x".repeat(1_048_577))
        .send()
        .await;
    assert_sdk_err!(r, _, "InvalidParameterValue", 400);
    // Attributes count: name, type and value bytes.
    let r = sqs
        .send_message()
        .queue_url(&url)
        .message_body("x".repeat(1_048_576 - 10))
        .message_attributes("name", string_attr("value"))
        .send()
        .await;
    assert_sdk_err!(r, _, "InvalidParameterValue", 400);

    // A queue's own smaller MaximumMessageSize.
    let url = create_queue(&sqs, "small", &[("MaximumMessageSize", "1024")]).await;
    sqs.send_message()
        .queue_url(&url)
        .message_body("y".repeat(1024))
        .send()
        .await
        .unwrap();
    let r = sqs
        .send_message()
        .queue_url(&url)
        .message_body("y".repeat(1025))
        .send()
        .await;
    let e = assert_sdk_err!(r, _, "InvalidParameterValue", 400);
    // AWS's words (recorded): SendMessage's "are invalid", a batch entry's "cannot be
    // validated".
    assert_eq!(
        aws_sdk_sqs::error::ProvideErrorMetadata::message(&e),
        Some(
            "One or more parameters are invalid. Reason: Message must be shorter than 1024 bytes."
        )
    );
    let out = sqs
        .send_message_batch()
        .queue_url(&url)
        .entries(
            aws_sdk_sqs::types::SendMessageBatchRequestEntry::builder()
                .id("big")
                .message_body("y".repeat(1025))
                .build()
                .unwrap(),
        )
        .entries(
            aws_sdk_sqs::types::SendMessageBatchRequestEntry::builder()
                .id("fits")
                .message_body("y".repeat(1024))
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(out.successful().len(), 1);
    let failed = &out.failed()[0];
    assert_eq!(
        (failed.id(), failed.code(), failed.sender_fault()),
        ("big", "InvalidParameterValue", true)
    );
    assert_eq!(
        failed.message(),
        Some(
            "One or more parameters cannot be validated. Reason: Message must be shorter than 1024 bytes."
        )
    );
}

#[tokio::test]
async fn malformed_batches_fail_whole_for_all_three_batch_operations() {
    let server = Server::start();
    let sqs = server.sdk();
    let url = create_queue(&sqs, "batches", &[]).await;

    // Empty.
    assert_sdk_err!(
        sqs.send_message_batch()
            .queue_url(&url)
            .set_entries(Some(vec![]))
            .send()
            .await,
        SendMessageBatchError::EmptyBatchRequest(_),
        "AWS.SimpleQueueService.EmptyBatchRequest",
        400
    );
    assert_sdk_err!(
        sqs.delete_message_batch()
            .queue_url(&url)
            .set_entries(Some(vec![]))
            .send()
            .await,
        DeleteMessageBatchError::EmptyBatchRequest(_),
        "AWS.SimpleQueueService.EmptyBatchRequest",
        400
    );
    assert_sdk_err!(
        sqs.change_message_visibility_batch()
            .queue_url(&url)
            .set_entries(Some(vec![]))
            .send()
            .await,
        ChangeMessageVisibilityBatchError::EmptyBatchRequest(_),
        "AWS.SimpleQueueService.EmptyBatchRequest",
        400
    );

    // Eleven entries.
    let eleven: Vec<_> = (0..11).map(|i| send_entry(&format!("e{i}"), "x")).collect();
    assert_sdk_err!(
        sqs.send_message_batch()
            .queue_url(&url)
            .set_entries(Some(eleven))
            .send()
            .await,
        SendMessageBatchError::TooManyEntriesInBatchRequest(_),
        "AWS.SimpleQueueService.TooManyEntriesInBatchRequest",
        400
    );
    let eleven: Vec<_> = (0..11)
        .map(|i| delete_entry(&format!("e{i}"), "h"))
        .collect();
    assert_sdk_err!(
        sqs.delete_message_batch()
            .queue_url(&url)
            .set_entries(Some(eleven))
            .send()
            .await,
        DeleteMessageBatchError::TooManyEntriesInBatchRequest(_),
        "AWS.SimpleQueueService.TooManyEntriesInBatchRequest",
        400
    );
    let eleven: Vec<_> = (0..11)
        .map(|i| visibility_entry(&format!("e{i}"), "h", 1))
        .collect();
    assert_sdk_err!(
        sqs.change_message_visibility_batch()
            .queue_url(&url)
            .set_entries(Some(eleven))
            .send()
            .await,
        ChangeMessageVisibilityBatchError::TooManyEntriesInBatchRequest(_),
        "AWS.SimpleQueueService.TooManyEntriesInBatchRequest",
        400
    );

    // Repeated ids.
    assert_sdk_err!(
        sqs.send_message_batch()
            .queue_url(&url)
            .entries(send_entry("same", "x"))
            .entries(send_entry("same", "y"))
            .send()
            .await,
        SendMessageBatchError::BatchEntryIdsNotDistinct(_),
        "AWS.SimpleQueueService.BatchEntryIdsNotDistinct",
        400
    );
    assert_sdk_err!(
        sqs.delete_message_batch()
            .queue_url(&url)
            .entries(delete_entry("same", "h1"))
            .entries(delete_entry("same", "h2"))
            .send()
            .await,
        DeleteMessageBatchError::BatchEntryIdsNotDistinct(_),
        "AWS.SimpleQueueService.BatchEntryIdsNotDistinct",
        400
    );
    assert_sdk_err!(
        sqs.change_message_visibility_batch()
            .queue_url(&url)
            .entries(visibility_entry("same", "h1", 1))
            .entries(visibility_entry("same", "h2", 1))
            .send()
            .await,
        ChangeMessageVisibilityBatchError::BatchEntryIdsNotDistinct(_),
        "AWS.SimpleQueueService.BatchEntryIdsNotDistinct",
        400
    );

    // Ids: alphanumerics, hyphens and underscores, at most 80.
    for bad in ["has space", "dot.id", &"i".repeat(81), "ümlaut"] {
        assert_sdk_err!(
            sqs.send_message_batch()
                .queue_url(&url)
                .entries(send_entry(bad, "x"))
                .send()
                .await,
            SendMessageBatchError::InvalidBatchEntryId(_),
            "AWS.SimpleQueueService.InvalidBatchEntryId",
            400
        );
    }
    assert_sdk_err!(
        sqs.delete_message_batch()
            .queue_url(&url)
            .entries(delete_entry("a.b", "h"))
            .send()
            .await,
        DeleteMessageBatchError::InvalidBatchEntryId(_),
        "AWS.SimpleQueueService.InvalidBatchEntryId",
        400
    );
    assert_sdk_err!(
        sqs.change_message_visibility_batch()
            .queue_url(&url)
            .entries(visibility_entry("a.b", "h", 1))
            .send()
            .await,
        ChangeMessageVisibilityBatchError::InvalidBatchEntryId(_),
        "AWS.SimpleQueueService.InvalidBatchEntryId",
        400
    );
    // An 80-character id is fine.
    sqs.send_message_batch()
        .queue_url(&url)
        .entries(send_entry(&"i".repeat(80), "x"))
        .send()
        .await
        .unwrap();

    // Whole-batch size: the sum of the entries over 1 MiB.
    let half = "z".repeat(600 * 1024);
    assert_sdk_err!(
        sqs.send_message_batch()
            .queue_url(&url)
            .entries(send_entry("a", &half))
            .entries(send_entry("b", &half))
            .send()
            .await,
        SendMessageBatchError::BatchRequestTooLong(_),
        "AWS.SimpleQueueService.BatchRequestTooLong",
        400
    );
    // Nothing of the failed batches was stored (only the 80-character-id entry).
    assert_eq!(counts(&sqs, &url).await, (1, 0, 0));
}

/// SendMessageBatch: "The maximum allowed individual message size and the maximum total
/// payload size (the sum of the individual lengths of all of the batched messages) are both
/// 1 MiB". The batch limit is AWS's fixed 1 MiB, not the queue's MaximumMessageSize.
#[tokio::test]
async fn batch_total_limit_is_one_mib_not_maximum_message_size() {
    let server = Server::start();
    let sqs = server.sdk();
    let url = create_queue(&sqs, "small", &[("MaximumMessageSize", "1024")]).await;
    let out = sqs
        .send_message_batch()
        .queue_url(&url)
        .entries(send_entry("a", &"a".repeat(600)))
        .entries(send_entry("b", &"b".repeat(600)))
        .send()
        .await
        .expect("two 600-byte messages fit a 1024-byte queue and a 1 MiB batch");
    assert_eq!(out.successful().len(), 2);
}

#[tokio::test]
async fn receipt_handle_errors() {
    let server = Server::start();
    let sqs = server.sdk();
    let url = create_queue(&sqs, "handles", &[]).await;
    let other = create_queue(&sqs, "elsewhere", &[]).await;
    for bad in ["garbage", "AQEBlongbutfake=="] {
        assert_sdk_err!(
            sqs.delete_message()
                .queue_url(&url)
                .receipt_handle(bad)
                .send()
                .await,
            DeleteMessageError::ReceiptHandleIsInvalid(_),
            "ReceiptHandleIsInvalid",
            400
        );
        assert_sdk_err!(
            sqs.change_message_visibility()
                .queue_url(&url)
                .receipt_handle(bad)
                .visibility_timeout(10)
                .send()
                .await,
            ChangeMessageVisibilityError::ReceiptHandleIsInvalid(_),
            "ReceiptHandleIsInvalid",
            400
        );
    }
    // A real handle of another queue.
    let foreign = in_flight(&sqs, &other, "theirs").await;
    assert_sdk_err!(
        sqs.delete_message()
            .queue_url(&url)
            .receipt_handle(&foreign)
            .send()
            .await,
        DeleteMessageError::ReceiptHandleIsInvalid(_),
        "ReceiptHandleIsInvalid",
        400
    );
    // The message in the other queue is untouched.
    assert_eq!(counts(&sqs, &other).await, (0, 1, 0));
}

#[tokio::test]
async fn change_visibility_errors() {
    let server = Server::start();
    let sqs = server.sdk();
    let url = create_queue(&sqs, "cmv", &[]).await;
    let handle = in_flight(&sqs, &url, "m").await;
    // VisibilityTimeout 0..=43200.
    let r = sqs
        .change_message_visibility()
        .queue_url(&url)
        .receipt_handle(&handle)
        .visibility_timeout(43201)
        .send()
        .await;
    assert_sdk_err!(r, _, "InvalidParameterValue", 400);
    // Made visible again, its latest handle still changes its visibility, as AWS answers
    // (recorded: ChangeMessageVisibility after the timeout expired returns 200).
    sqs.change_message_visibility()
        .queue_url(&url)
        .receipt_handle(&handle)
        .visibility_timeout(0)
        .send()
        .await
        .unwrap();
    sqs.change_message_visibility()
        .queue_url(&url)
        .receipt_handle(&handle)
        .visibility_timeout(30)
        .send()
        .await
        .unwrap();
    assert_eq!(counts(&sqs, &url).await, (0, 1, 0));
    sqs.change_message_visibility()
        .queue_url(&url)
        .receipt_handle(&handle)
        .visibility_timeout(0)
        .send()
        .await
        .unwrap();
    // Deleted, its handle names no message: InvalidParameterValue.
    let handle = sqs
        .receive_message()
        .queue_url(&url)
        .send()
        .await
        .unwrap()
        .messages()[0]
        .receipt_handle()
        .unwrap()
        .to_owned();
    sqs.delete_message()
        .queue_url(&url)
        .receipt_handle(&handle)
        .send()
        .await
        .unwrap();
    let r = sqs
        .change_message_visibility()
        .queue_url(&url)
        .receipt_handle(&handle)
        .visibility_timeout(30)
        .send()
        .await;
    assert_sdk_err!(r, _, "InvalidParameterValue", 400);
}

#[tokio::test]
async fn batch_entries_fail_one_by_one_in_a_200_response() {
    let server = Server::start();
    let sqs = server.sdk();
    let url = create_queue(&sqs, "partial", &[]).await;

    // SendMessageBatch: bad characters, bad delay, bad attribute fail alone.
    let out = sqs
        .send_message_batch()
        .queue_url(&url)
        .entries(send_entry("ok1", "fine"))
        .entries(send_entry("badchars", "bad\u{1}"))
        .entries(
            SendMessageBatchRequestEntry::builder()
                .id("baddelay")
                .message_body("x")
                .delay_seconds(901)
                .build()
                .unwrap(),
        )
        .entries(
            SendMessageBatchRequestEntry::builder()
                .id("badattr")
                .message_body("x")
                .message_attributes("n", typed_attr("Number", "NaN-ish"))
                .build()
                .unwrap(),
        )
        .entries(send_entry("ok2", "also fine"))
        .send()
        .await
        .unwrap();
    let mut ok: Vec<&str> = out.successful().iter().map(|s| s.id()).collect();
    ok.sort();
    assert_eq!(ok, ["ok1", "ok2"]);
    let failed: std::collections::HashMap<&str, _> =
        out.failed().iter().map(|f| (f.id(), f)).collect();
    assert_eq!(failed.len(), 3, "{failed:?}");
    assert_eq!(failed["badchars"].code(), "InvalidMessageContents");
    assert_eq!(failed["baddelay"].code(), "InvalidParameterValue");
    assert_eq!(failed["badattr"].code(), "InvalidParameterValue");
    for f in failed.values() {
        assert!(f.sender_fault(), "{f:?}");
        assert!(f.message().is_some_and(|m| !m.is_empty()), "{f:?}");
    }
    assert_eq!(counts(&sqs, &url).await, (2, 0, 0));

    // DeleteMessageBatch: a good handle and a garbage one.
    let handle = sqs
        .receive_message()
        .queue_url(&url)
        .send()
        .await
        .unwrap()
        .messages()[0]
        .receipt_handle()
        .unwrap()
        .to_owned();
    let out = sqs
        .delete_message_batch()
        .queue_url(&url)
        .entries(delete_entry("good", &handle))
        .entries(delete_entry("bad", "garbage"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        out.successful().iter().map(|s| s.id()).collect::<Vec<_>>(),
        ["good"]
    );
    let [f] = out.failed() else {
        panic!("{:?}", out.failed())
    };
    assert_eq!(
        (f.id(), f.code(), f.sender_fault()),
        ("bad", "ReceiptHandleIsInvalid", true)
    );
    assert_eq!(counts(&sqs, &url).await, (1, 0, 0));

    // ChangeMessageVisibilityBatch: a good handle, a garbage one, an out-of-range timeout.
    let handle = in_flight(&sqs, &url, "third").await;
    let h2 = sqs
        .receive_message()
        .queue_url(&url)
        .visibility_timeout(300)
        .send()
        .await
        .unwrap()
        .messages()[0]
        .receipt_handle()
        .unwrap()
        .to_owned();
    let out = sqs
        .change_message_visibility_batch()
        .queue_url(&url)
        .entries(visibility_entry("good", &handle, 0))
        .entries(visibility_entry("bad", "garbage", 0))
        .entries(visibility_entry("range", &h2, 43201))
        .send()
        .await
        .unwrap();
    assert_eq!(
        out.successful().iter().map(|s| s.id()).collect::<Vec<_>>(),
        ["good"]
    );
    let failed: std::collections::HashMap<&str, &str> =
        out.failed().iter().map(|f| (f.id(), f.code())).collect();
    assert_eq!(failed.len(), 2);
    assert_eq!(failed["bad"], "ReceiptHandleIsInvalid");
    assert_eq!(failed["range"], "InvalidParameterValue");
}

#[tokio::test]
async fn unknown_operation_and_malformed_json() {
    let server = Server::start();
    let http = crate::harness::http();
    let r = http
        .post(&server.url)
        .header("X-Amz-Target", "AmazonSQS.FlyToTheMoon")
        .header("Content-Type", "application/x-amz-json-1.0")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);
    assert_eq!(
        r.headers()["x-amzn-query-error"].to_str().unwrap(),
        "InvalidAction;Sender"
    );
    let r = http
        .post(&server.url)
        .header("X-Amz-Target", "AmazonSQS.ListQueues")
        .header("Content-Type", "application/x-amz-json-1.0")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);
    // A required parameter missing.
    let r = http
        .post(&server.url)
        .header("X-Amz-Target", "AmazonSQS.CreateQueue")
        .header("Content-Type", "application/x-amz-json-1.0")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);
    assert_eq!(
        r.headers()["x-amzn-query-error"].to_str().unwrap(),
        "MissingParameter;Sender"
    );
}

/// ChangeMessageVisibility: "If you attempt to set the VisibilityTimeout to a value greater
/// than the maximum time left, Amazon SQS returns an error": a message's visibility can be
/// at most 12 hours from the receive, so extending to 43200 s a second later is rejected.
#[tokio::test]
async fn visibility_cannot_extend_past_twelve_hours_from_the_receive() {
    let server = Server::start();
    let sqs = server.sdk();
    let url = create_queue(&sqs, "cap", &[]).await;
    let handle = in_flight(&sqs, &url, "m").await;
    // Right at the receive 43200 s is still within the cap; once the clock has moved past
    // the receive's second it is not. Asks until then (a cap never enforced times out).
    let r = crate::wait::poll(std::time::Duration::from_secs(10), || async {
        let r = sqs
            .change_message_visibility()
            .queue_url(&url)
            .receipt_handle(&handle)
            .visibility_timeout(43200)
            .send()
            .await;
        r.is_err().then_some(r)
    })
    .await
    .expect("extending to 12 hours after the receive was never refused");
    assert_sdk_err!(r, _, "InvalidParameterValue", 400);
}
