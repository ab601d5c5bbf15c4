//! Loft's AWS-compatibility suite: the SQS protocols checked against what AWS documents.
//!
//! Each test starts the real `loft` binary ([`harness`]) and talks to it as users do:
//!
//! - `sdk_*`: aws-sdk-sqs (the JSON 1.0 protocol) for each of the 23 operations, their
//!   parameters and every error a user can provoke, with the SDK's error variant, the
//!   Query-compatible code it reads and the HTTP status.
//! - [`traps`]: behaviours emulators commonly get wrong (MD5 over the selected attributes,
//!   per-entry batch failures, stale receipt handles, DLQ redrive and move tasks, long
//!   polling).
//! - [`recorded`]: answers as AWS recorded them (FIFO batches, attribute rules, words).
//! - [`query_golden`]: the Query protocol's exact XML for each response shape.
//! - [`both_protocols`]: one scenario over JSON and over Query with identical results.
//! - [`quotas`]: FIFO throughput quotas, on an in-process server whose clock the test moves.
//!
//! Authority: the botocore model `sqs/2012-11-05`, the SQS API Reference and Developer
//! Guide. A test that pins a known divergence from AWS asserts AWS's behaviour and is
//! `#[ignore]`d with the reason, so `cargo test -p loft --test aws -- --ignored` lists what
//! is still to fix.

#[path = "../support/loft.rs"]
mod loft;
#[path = "../support/wait.rs"]
mod wait;
#[macro_use]
mod harness;
mod both_protocols;
mod encryption;
mod md5;
mod query_golden;
mod quotas;
mod receipts;
mod recorded;
mod sdk_errors;
mod sdk_messages;
mod sdk_queues;
mod traps;
mod wire;
mod wire_rules;

use aws_sdk_sqs::types::{MessageAttributeValue, QueueAttributeName};
use aws_sdk_sqs::Client;

/// Creates queue `name` with `attributes` and returns its URL.
pub async fn create_queue(client: &Client, name: &str, attributes: &[(&str, &str)]) -> String {
    let mut req = client.create_queue().queue_name(name);
    for (k, v) in attributes {
        req = req.attributes(QueueAttributeName::from(*k), *v);
    }
    req.send()
        .await
        .unwrap_or_else(|e| panic!("create {name}: {e:?}"))
        .queue_url()
        .expect("QueueUrl")
        .to_owned()
}

/// A String message attribute.
pub fn string_attr(value: &str) -> MessageAttributeValue {
    MessageAttributeValue::builder()
        .data_type("String")
        .string_value(value)
        .build()
        .expect("attribute")
}

/// A message attribute of any String-based or Number-based `data_type`.
pub fn typed_attr(data_type: &str, value: &str) -> MessageAttributeValue {
    MessageAttributeValue::builder()
        .data_type(data_type)
        .string_value(value)
        .build()
        .expect("attribute")
}

/// A Binary message attribute.
pub fn binary_attr(bytes: &[u8]) -> MessageAttributeValue {
    MessageAttributeValue::builder()
        .data_type("Binary")
        .binary_value(aws_sdk_sqs::primitives::Blob::new(bytes.to_vec()))
        .build()
        .expect("attribute")
}

/// The approximate message counts of a queue: (visible, not visible, delayed).
pub async fn counts(client: &Client, url: &str) -> (u64, u64, u64) {
    let out = client
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(QueueAttributeName::All)
        .send()
        .await
        .expect("GetQueueAttributes");
    let attrs = out.attributes().expect("Attributes");
    let get = |n: QueueAttributeName| -> u64 {
        attrs
            .get(&n)
            .unwrap_or_else(|| panic!("{n:?} missing"))
            .parse()
            .expect("number")
    };
    (
        get(QueueAttributeName::ApproximateNumberOfMessages),
        get(QueueAttributeName::ApproximateNumberOfMessagesNotVisible),
        get(QueueAttributeName::ApproximateNumberOfMessagesDelayed),
    )
}
