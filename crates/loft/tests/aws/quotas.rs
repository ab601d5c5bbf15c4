//! SQS FIFO throughput quotas (`FifoThroughputLimit`) over real HTTP with aws-sdk-sqs and
//! retries off, on a Service whose clock the test moves: Loft's router over the in-memory
//! SQLite store and a `ManualClock`, served on 127.0.0.1 (the binary's clock cannot be
//! moved, so these tests serve the same router in-process).
//!
//! Sources: SQS Developer Guide "Amazon SQS message quotas" (300 transactions per second
//! per action for SendMessage, ReceiveMessage and DeleteMessage on a FIFO queue, a batch
//! being one transaction; nearly unlimited for standard queues), "Partitions and data
//! distribution for high throughput for SQS FIFO queues" (300 per partition, a message
//! group in one partition); botocore `RequestThrottled`, `_retry.json` (HTTP 403).

use std::sync::Arc;

use aws_sdk_sqs::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_sqs::operation::delete_message::DeleteMessageError;
use aws_sdk_sqs::operation::receive_message::ReceiveMessageError;
use aws_sdk_sqs::operation::send_message::SendMessageError;
use aws_sdk_sqs::operation::send_message_batch::SendMessageBatchError;
use aws_sdk_sqs::types::SendMessageBatchRequestEntry;
use aws_sdk_sqs::Client;
use loft_core::clock::{Clock, ManualClock};
use loft_core::service::Limits;
use loft_core::{Service, ServiceConfig};

use crate::create_queue;

/// 2023-11-14T22:13:20Z.
const START_MS: i64 = 1_700_000_000_000;

/// Loft's router over a service with a manual clock, listening on 127.0.0.1.
struct World {
    clock: Arc<ManualClock>,
    sdk: Client,
    url: String,
}

impl World {
    async fn new(sqs_quotas: bool) -> World {
        let clock = Arc::new(ManualClock::new(START_MS));
        let store = Arc::new(loft_store::SqliteStore::open_in_memory().expect("store"));
        let config = ServiceConfig {
            limits: Limits {
                sqs_quotas,
                ..Limits::default()
            },
            ..ServiceConfig::default()
        };
        let svc = Service::new(store, clock.clone() as Arc<dyn Clock>, config, None);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("address"));
        let app = loft_server::routes::router(svc, None);
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        let config = aws_sdk_sqs::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .credentials_provider(Credentials::new("x", "x", None, None, "loft-tests"))
            .endpoint_url(&url)
            .http_client(aws_smithy_http_client::Builder::new().build_http())
            .retry_config(aws_sdk_sqs::config::retry::RetryConfig::disabled())
            .build();
        World {
            clock,
            sdk: Client::from_conf(config),
            url,
        }
    }

    async fn send(
        &self,
        url: &str,
        group: &str,
        n: usize,
    ) -> Result<(), aws_sdk_sqs::error::SdkError<SendMessageError>> {
        self.sdk
            .send_message()
            .queue_url(url)
            .message_body(format!("m{n}"))
            .message_group_id(group)
            .message_deduplication_id(format!("{group}-{n}-{}", self.clock.now_ms()))
            .send()
            .await
            .map(|_| ())
    }
}

#[tokio::test]
async fn fifo_send_past_300_a_second_is_request_throttled_until_the_clock_moves() {
    let w = World::new(true).await;
    let url = create_queue(&w.sdk, "q.fifo", &[("FifoQueue", "true")]).await;
    for n in 0..300 {
        w.send(&url, "g", n).await.expect("within the quota");
    }
    let e = assert_sdk_err!(
        w.send(&url, "g", 300).await,
        SendMessageError::RequestThrottled(_),
        "RequestThrottled",
        403
    );
    assert!(
        format!("{e:?}").contains("300 transactions per second"),
        "{e:?}"
    );
    // Another group does not help: perQueue counts the whole queue.
    assert_sdk_err!(
        w.send(&url, "other", 301).await,
        SendMessageError::RequestThrottled(_),
        "RequestThrottled",
        403
    );
    // Other actions have quotas of their own.
    let got = w
        .sdk
        .receive_message()
        .queue_url(&url)
        .max_number_of_messages(10)
        .send()
        .await
        .expect("receive has its own quota");
    let handle = got.messages()[0].receipt_handle().unwrap().to_owned();
    w.sdk
        .delete_message()
        .queue_url(&url)
        .receipt_handle(&handle)
        .send()
        .await
        .expect("delete has its own quota");
    // 300 a second is one every 3.33 ms: 4 ms later one more send fits, and only one.
    w.clock.advance_ms(4);
    w.send(&url, "g", 302).await.expect("one token back");
    assert_sdk_err!(
        w.send(&url, "g", 303).await,
        SendMessageError::RequestThrottled(_),
        "RequestThrottled",
        403
    );
    // A second later the burst is whole again.
    w.clock.advance_ms(1_000);
    for n in 0..300 {
        w.send(&url, "g", 1_000 + n).await.expect("a new second");
    }
    assert!(w.send(&url, "g", 2_000).await.is_err());
}

#[tokio::test]
async fn a_batch_is_one_transaction_so_3000_messages_a_second_fit() {
    let w = World::new(true).await;
    let url = create_queue(&w.sdk, "b.fifo", &[("FifoQueue", "true")]).await;
    for b in 0..300 {
        let entries = (0..10)
            .map(|i| {
                SendMessageBatchRequestEntry::builder()
                    .id(format!("e{i}"))
                    .message_body("x")
                    .message_group_id("g")
                    .message_deduplication_id(format!("{b}-{i}"))
                    .build()
                    .unwrap()
            })
            .collect::<Vec<_>>();
        let out = w
            .sdk
            .send_message_batch()
            .queue_url(&url)
            .set_entries(Some(entries))
            .send()
            .await
            .expect("a batch is one transaction");
        assert_eq!(out.successful().len(), 10);
    }
    let entry = SendMessageBatchRequestEntry::builder()
        .id("late")
        .message_body("x")
        .message_group_id("g")
        .message_deduplication_id("late")
        .build()
        .unwrap();
    assert_sdk_err!(
        w.sdk
            .send_message_batch()
            .queue_url(&url)
            .entries(entry)
            .send()
            .await,
        SendMessageBatchError::RequestThrottled(_),
        "RequestThrottled",
        403
    );
    // The 3,000 messages are there.
    let attrs = w
        .sdk
        .get_queue_attributes()
        .queue_url(&url)
        .attribute_names(aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessages)
        .send()
        .await
        .unwrap();
    assert_eq!(
        attrs
            .attributes()
            .unwrap()
            .get(&aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessages)
            .map(String::as_str),
        Some("3000")
    );
}

#[tokio::test]
async fn receive_and_delete_are_throttled_per_queue() {
    let w = World::new(true).await;
    let url = create_queue(&w.sdk, "r.fifo", &[("FifoQueue", "true")]).await;
    w.send(&url, "g", 0).await.unwrap();
    let mut handle = None;
    for _ in 0..300 {
        let got = w
            .sdk
            .receive_message()
            .queue_url(&url)
            .send()
            .await
            .expect("within the quota");
        if let Some(m) = got.messages().first() {
            handle = m.receipt_handle().map(str::to_owned);
        }
    }
    assert_sdk_err!(
        w.sdk.receive_message().queue_url(&url).send().await,
        ReceiveMessageError::RequestThrottled(_),
        "RequestThrottled",
        403
    );
    let handle = handle.expect("the message was received");
    for _ in 0..300 {
        w.sdk
            .delete_message()
            .queue_url(&url)
            .receipt_handle(&handle)
            .send()
            .await
            .expect("within the quota");
    }
    assert_sdk_err!(
        w.sdk
            .delete_message()
            .queue_url(&url)
            .receipt_handle(&handle)
            .send()
            .await,
        DeleteMessageError::RequestThrottled(_),
        "RequestThrottled",
        403
    );
}

#[tokio::test]
async fn high_throughput_counts_each_message_group() {
    let w = World::new(true).await;
    let url = create_queue(
        &w.sdk,
        "h.fifo",
        &[
            ("FifoQueue", "true"),
            ("DeduplicationScope", "messageGroup"),
            ("FifoThroughputLimit", "perMessageGroupId"),
        ],
    )
    .await;
    for n in 0..300 {
        w.send(&url, "a", n)
            .await
            .expect("group a within its quota");
    }
    assert_sdk_err!(
        w.send(&url, "a", 300).await,
        SendMessageError::RequestThrottled(_),
        "RequestThrottled",
        403
    );
    // Each group has its own 300 a second; the queue's ceiling (70,000 in us-east-1) is
    // far off.
    for n in 0..300 {
        w.send(&url, "b", n)
            .await
            .expect("group b has its own quota");
    }
    // Receives name no group: only the ceiling applies, 300 more are fine.
    for _ in 0..301 {
        w.sdk
            .receive_message()
            .queue_url(&url)
            .send()
            .await
            .expect("under the high-throughput ceiling");
    }
}

#[tokio::test]
async fn standard_queues_and_quotas_off_are_not_throttled() {
    let w = World::new(true).await;
    let url = create_queue(&w.sdk, "std", &[]).await;
    for n in 0..400 {
        w.sdk
            .send_message()
            .queue_url(&url)
            .message_body(format!("m{n}"))
            .send()
            .await
            .expect("standard queues are not throttled");
    }
    let off = World::new(false).await;
    let url = create_queue(&off.sdk, "f.fifo", &[("FifoQueue", "true")]).await;
    for n in 0..400 {
        off.send(&url, "g", n).await.expect("quotas are off");
    }
    assert!(!off.url.is_empty());
}

#[tokio::test]
async fn the_query_protocol_answers_403_sender_request_throttled() {
    let w = World::new(true).await;
    let url = create_queue(&w.sdk, "x.fifo", &[("FifoQueue", "true")]).await;
    for n in 0..300 {
        w.send(&url, "g", n).await.unwrap();
    }
    let resp = crate::harness::http()
        .post(&url)
        .form(&[
            ("Action", "SendMessage"),
            ("Version", "2012-11-05"),
            ("MessageBody", "late"),
            ("MessageGroupId", "g"),
            ("MessageDeduplicationId", "late"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 403);
    let body = resp.text().await.unwrap();
    assert!(body.contains("<Type>Sender</Type>"), "{body}");
    assert!(body.contains("<Code>RequestThrottled</Code>"), "{body}");
}
