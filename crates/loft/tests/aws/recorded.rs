//! SQS answers as AWS recorded them (the LocalStack suite's `aws.validated` snapshots and
//! the SQS API Reference): FIFO batches refused whole, DelaySeconds 0 on FIFO queues,
//! Unicode attribute names, attribute-name patterns on receive, the FifoQueue and KMS
//! attribute rules, AWS's words for WaitTimeSeconds and empty attributes, AddPermission's
//! policy version, X-Ray trace headers.

use aws_sdk_sqs::error::ProvideErrorMetadata;
use aws_sdk_sqs::types::{
    MessageSystemAttributeName, QueueAttributeName, SendMessageBatchRequestEntry,
};

use crate::harness::Server;
use crate::*;

fn entry(id: &str, group: Option<&str>, dedup: Option<&str>) -> SendMessageBatchRequestEntry {
    SendMessageBatchRequestEntry::builder()
        .id(id)
        .message_body(id)
        .set_message_group_id(group.map(str::to_owned))
        .set_message_deduplication_id(dedup.map(str::to_owned))
        .build()
        .expect("entry")
}

async fn attributes(
    sqs: &aws_sdk_sqs::Client,
    url: &str,
) -> std::collections::HashMap<QueueAttributeName, String> {
    sqs.get_queue_attributes()
        .queue_url(url)
        .attribute_names(QueueAttributeName::All)
        .send()
        .await
        .expect("GetQueueAttributes")
        .attributes
        .unwrap_or_default()
}

#[tokio::test]
async fn a_fifo_batch_with_an_entry_lacking_ids_is_refused_whole() {
    let server = Server::start();
    let sqs = server.sdk();
    let url = create_queue(&sqs, "whole.fifo", &[("FifoQueue", "true")]).await;
    for (bad, message) in [
        (
            entry("b", None, Some("d2")),
            "The request must contain the parameter MessageGroupId.",
        ),
        (
            entry("b", Some("g"), None),
            "The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly",
        ),
    ] {
        let e = assert_sdk_err!(
            sqs.send_message_batch()
                .queue_url(&url)
                .entries(entry("a", Some("g"), Some("d1")))
                .entries(bad)
                .send()
                .await,
            _,
            "InvalidParameterValue",
            400
        );
        assert_eq!(e.message(), Some(message));
    }
    assert_eq!(counts(&sqs, &url).await, (0, 0, 0), "nothing was stored");
}

#[tokio::test]
async fn fifo_sends_take_delay_seconds_zero_as_the_queues_delay() {
    let server = Server::start();
    let sqs = server.sdk();
    let url = create_queue(
        &sqs,
        "delayed.fifo",
        &[("FifoQueue", "true"), ("DelaySeconds", "60")],
    )
    .await;
    sqs.send_message()
        .queue_url(&url)
        .message_body("m")
        .message_group_id("g")
        .message_deduplication_id("d")
        .delay_seconds(0)
        .send()
        .await
        .expect("DelaySeconds=0 on a FIFO queue");
    assert_eq!(counts(&sqs, &url).await, (0, 0, 1), "delayed by the queue");
    assert_sdk_err!(
        sqs.send_message()
            .queue_url(&url)
            .message_body("m")
            .message_group_id("g")
            .message_deduplication_id("d2")
            .delay_seconds(5)
            .send()
            .await,
        _,
        "InvalidParameterValue",
        400
    );
}

#[tokio::test]
async fn attribute_names_are_unicode_and_receives_take_patterns() {
    let server = Server::start();
    let sqs = server.sdk();
    let url = create_queue(&sqs, "names", &[("VisibilityTimeout", "0")]).await;
    for name in ["Help.Me", "Hello", "General", "attr.1øßä"] {
        sqs.send_message()
            .queue_url(&url)
            .message_body(name)
            .message_attributes(name, string_attr("v"))
            .message_attributes("Hello", string_attr("There"))
            .send()
            .await
            .unwrap_or_else(|e| panic!("attribute name {name}: {e:?}"));
    }
    for bad in ["Invalid-§-attr", "Invalid-!-attr"] {
        assert_sdk_err!(
            sqs.send_message()
                .queue_url(&url)
                .message_body("x")
                .message_attributes(bad, string_attr("v"))
                .send()
                .await,
            _,
            "InvalidParameterValue",
            400
        );
    }
    let e = assert_sdk_err!(
        sqs.send_message()
            .queue_url(&url)
            .message_body("x")
            .message_attributes("ErrorDetails", string_attr(""))
            .send()
            .await,
        _,
        "InvalidParameterValue",
        400
    );
    assert_eq!(
        e.message(),
        Some("Message (user) attribute 'ErrorDetails' must contain a non-empty value of type 'String'.")
    );
    // One message whose attributes are Help.Me, Hello and General.
    let url = create_queue(&sqs, "patterns", &[("VisibilityTimeout", "0")]).await;
    sqs.send_message()
        .queue_url(&url)
        .message_body("m")
        .message_attributes("Help.Me", string_attr("Me"))
        .message_attributes("Hello", string_attr("There"))
        .message_attributes("General", string_attr("Kenobi"))
        .send()
        .await
        .expect("SendMessage");
    for (pattern, expected) in [
        ("*", vec!["General", "Hello", "Help.Me"]),
        (".*", vec!["General", "Hello", "Help.Me"]),
        ("Hel.*", vec!["Hello", "Help.Me"]),
        ("Foo", vec![]),
    ] {
        let out = sqs
            .receive_message()
            .queue_url(&url)
            .message_attribute_names(pattern)
            .wait_time_seconds(5)
            .send()
            .await
            .expect("ReceiveMessage");
        let m = &out.messages()[0];
        let mut names: Vec<&str> = m
            .message_attributes()
            .map(|a| a.keys().map(String::as_str).collect())
            .unwrap_or_default();
        names.sort();
        assert_eq!(names, expected, "{pattern}");
        assert_eq!(
            m.md5_of_message_attributes().is_some(),
            !expected.is_empty(),
            "{pattern}"
        );
    }
}

#[tokio::test]
async fn fifo_queue_and_kms_attributes_follow_aws() {
    let server = Server::start();
    let sqs = server.sdk();
    let fifo = create_queue(&sqs, "kind.fifo", &[("FifoQueue", "true")]).await;
    // FifoQueue=true on a FIFO queue changes nothing; false would change the queue's type.
    sqs.set_queue_attributes()
        .queue_url(&fifo)
        .attributes(QueueAttributeName::FifoQueue, "true")
        .send()
        .await
        .expect("FifoQueue=true on a FIFO queue");
    let e = assert_sdk_err!(
        sqs.set_queue_attributes()
            .queue_url(&fifo)
            .attributes(QueueAttributeName::FifoQueue, "false")
            .send()
            .await,
        _,
        "InvalidAttributeValue",
        400
    );
    assert_eq!(
        e.message(),
        Some("Invalid value for the parameter FifoQueue. Reason: Modifying queue type is not supported.")
    );
    // A standard queue has no FifoQueue attribute, not even `false`.
    for (name, message) in [
        ("FifoQueue", "Unknown Attribute FifoQueue."),
        (
            "ContentBasedDeduplication",
            "Unknown Attribute ContentBasedDeduplication.",
        ),
        (
            "DeduplicationScope",
            "You can specify the DeduplicationScope only when FifoQueue is set to true.",
        ),
    ] {
        let value = if name == "DeduplicationScope" {
            "queue"
        } else {
            "false"
        };
        let e = assert_sdk_err!(
            sqs.create_queue()
                .queue_name("standard")
                .attributes(QueueAttributeName::from(name), value)
                .send()
                .await,
            _,
            "InvalidAttributeName",
            400
        );
        assert_eq!(e.message(), Some(message), "{name}");
    }
    let url = create_queue(&sqs, "kms", &[]).await;
    let initial = attributes(&sqs, &url).await;
    assert_eq!(initial[&QueueAttributeName::SqsManagedSseEnabled], "true");
    assert!(!initial.contains_key(&QueueAttributeName::KmsDataKeyReusePeriodSeconds));
    sqs.set_queue_attributes()
        .queue_url(&url)
        .attributes(QueueAttributeName::KmsMasterKeyId, "testKeyId")
        .attributes(QueueAttributeName::KmsDataKeyReusePeriodSeconds, "6000")
        .send()
        .await
        .expect("SetQueueAttributes");
    let kms = attributes(&sqs, &url).await;
    assert_eq!(kms[&QueueAttributeName::SqsManagedSseEnabled], "false");
    assert_eq!(
        kms[&QueueAttributeName::KmsDataKeyReusePeriodSeconds],
        "6000"
    );
    sqs.set_queue_attributes()
        .queue_url(&url)
        .attributes(QueueAttributeName::KmsMasterKeyId, "")
        .attributes(QueueAttributeName::KmsDataKeyReusePeriodSeconds, "300")
        .send()
        .await
        .expect("SetQueueAttributes");
    let reset = attributes(&sqs, &url).await;
    assert_eq!(reset[&QueueAttributeName::SqsManagedSseEnabled], "false");
    assert!(!reset.contains_key(&QueueAttributeName::KmsMasterKeyId));
    assert!(!reset.contains_key(&QueueAttributeName::KmsDataKeyReusePeriodSeconds));
}

#[tokio::test]
async fn wait_time_and_permissions_in_aws_words() {
    let server = Server::start();
    let sqs = server.sdk();
    let url = create_queue(&sqs, "words", &[]).await;
    for wait in [-1, 21] {
        let e = assert_sdk_err!(
            sqs.receive_message()
                .queue_url(&url)
                .wait_time_seconds(wait)
                .send()
                .await,
            _,
            "InvalidParameterValue",
            400
        );
        assert_eq!(
            e.message().map(str::to_owned),
            Some(format!(
                "Value {wait} for parameter WaitTimeSeconds is invalid. Reason: Must be >= 0 and <= 20, if provided."
            ))
        );
    }
    sqs.add_permission()
        .queue_url(&url)
        .label("p")
        .aws_account_ids(harness::ACCOUNT)
        .actions("ReceiveMessage")
        .send()
        .await
        .expect("AddPermission");
    let policy = &attributes(&sqs, &url).await[&QueueAttributeName::Policy];
    let policy: serde_json::Value = serde_json::from_str(policy).expect("policy JSON");
    assert_eq!(policy["Version"], "2008-10-17");
}

/// SQS Developer Guide, "AWS X-Ray and Amazon SQS": the `X-Amzn-Trace-Id` header of a
/// send becomes the message's `AWSTraceHeader` system attribute.
#[tokio::test]
async fn the_trace_header_becomes_aws_trace_header() {
    let server = Server::start();
    let sqs = server.sdk();
    let url = create_queue(&sqs, "traced", &[]).await;
    let trace = "Root=1-3152b799-8954dae64eda91bc9a23a7e8;Parent=7fa8c0f79203be72;Sampled=1";
    sqs.send_message()
        .queue_url(&url)
        .message_body("m")
        .customize()
        .mutate_request(move |r| {
            r.headers_mut().insert("X-Amzn-Trace-Id", trace);
        })
        .send()
        .await
        .expect("SendMessage");
    let out = sqs
        .receive_message()
        .queue_url(&url)
        .message_system_attribute_names(MessageSystemAttributeName::AwsTraceHeader)
        .send()
        .await
        .expect("ReceiveMessage");
    assert_eq!(
        out.messages()[0].attributes().expect("attributes")
            [&MessageSystemAttributeName::AwsTraceHeader],
        trace
    );
}

/// FIFO deduplication after SetQueueAttributes changes DeduplicationScope (and
/// FifoThroughputLimit): AWS reports the new values but keeps deduplicating in the scope
/// the queue was created with, in both directions (recorded); a PurgeQueue empties the
/// deduplication window. Each row over both protocols: the creation attributes, the
/// change, and whether a second send of one deduplication id in another group is a
/// duplicate before and after the change.
#[tokio::test]
async fn fifo_dedup_keeps_its_creation_scope_and_purge_empties_it() {
    use serde_json::json;

    use crate::wire::{self, Outcome};

    // One row of the table below: (queue, attributes, changes, expected).
    type Row<'a> = (
        &'a str,
        &'a [(&'a str, &'a str)],
        &'a [(&'a str, &'a str)],
        bool,
    );
    let rows: [Row; 4] = [
        (
            "q2g",
            &[("DeduplicationScope", "queue")],
            &[
                ("DeduplicationScope", "messageGroup"),
                ("FifoThroughputLimit", "perMessageGroupId"),
            ],
            true,
        ),
        (
            "g2q",
            &[
                ("DeduplicationScope", "messageGroup"),
                ("FifoThroughputLimit", "perMessageGroupId"),
            ],
            &[
                ("DeduplicationScope", "queue"),
                ("FifoThroughputLimit", "perQueue"),
            ],
            false,
        ),
        (
            "dflt2g",
            &[],
            &[("DeduplicationScope", "messageGroup")],
            true,
        ),
        (
            "g-nolimit",
            &[("DeduplicationScope", "messageGroup")],
            &[("ContentBasedDeduplication", "true")],
            false,
        ),
    ];
    let server = Server::start();
    let http = crate::harness::http();
    for query in [false, true] {
        let call = |op: &'static str, input: serde_json::Value| {
            let (http, url) = (http.clone(), server.url.clone());
            async move {
                if query {
                    wire::query(&http, &url, op, &input).await
                } else {
                    wire::json(&http, &url, op, &input).await
                }
            }
        };
        for (name, created, change, duplicate_across_groups) in rows {
            let mut attributes = json!({"FifoQueue": "true"});
            for (k, v) in created {
                attributes[*k] = json!(v);
            }
            let queue = format!("{name}-{query}.fifo");
            let url = call(
                "CreateQueue",
                json!({"QueueName": queue, "Attributes": attributes}),
            )
            .await
            .ok()["QueueUrl"]
                .as_str()
                .unwrap()
                .to_owned();
            let send = |id: &'static str, group: &'static str| {
                let url = url.clone();
                let call = &call;
                async move {
                    call(
                        "SendMessage",
                        json!({"QueueUrl": url, "MessageBody": format!("{id} {group}"),
                               "MessageGroupId": group, "MessageDeduplicationId": id}),
                    )
                    .await
                    .ok()["MessageId"]
                        .as_str()
                        .unwrap()
                        .to_owned()
                }
            };
            let first = send("before", "g1").await;
            let second = send("before", "g2").await;
            assert_eq!(first == second, duplicate_across_groups, "{queue}: before");
            let mut set = json!({});
            for (k, v) in change {
                set[*k] = json!(v);
            }
            call(
                "SetQueueAttributes",
                json!({"QueueUrl": url, "Attributes": set}),
            )
            .await
            .ok();
            let got = call(
                "GetQueueAttributes",
                json!({"QueueUrl": url, "AttributeNames": ["All"]}),
            )
            .await
            .ok();
            for (k, v) in change {
                assert_eq!(got["Attributes"][*k], json!(v), "{queue}: {k} reported");
            }
            assert!(got["Attributes"]
                .get("LoftCreatedDeduplicationScope")
                .is_none());
            let first = send("after", "g3").await;
            let second = send("after", "g4").await;
            assert_eq!(
                first == second,
                duplicate_across_groups,
                "{queue}: after the change"
            );
            // PurgeQueue empties the window: the same id in the same group is new again.
            call("PurgeQueue", json!({"QueueUrl": url})).await.ok();
            let again = send("after", "g3").await;
            assert_ne!(again, first, "{queue}: after the purge");
        }
        // The combination rule holds for the merged attributes: perMessageGroupId needs
        // the messageGroup scope.
        let url = call(
            "CreateQueue",
            json!({"QueueName": format!("combo-{query}.fifo"), "Attributes": {"FifoQueue": "true"}}),
        )
        .await
        .ok()["QueueUrl"]
            .as_str()
            .unwrap()
            .to_owned();
        match call(
            "SetQueueAttributes",
            json!({"QueueUrl": url, "Attributes": {"FifoThroughputLimit": "perMessageGroupId"}}),
        )
        .await
        {
            Outcome::Err { code, status, .. } => {
                assert_eq!((code.as_str(), status), ("InvalidAttributeValue", 400))
            }
            other => panic!("perMessageGroupId with the queue scope: {other:?}"),
        }
    }
}

/// SSE-KMS and SSE-SQS exclude each other, per request (SQS API Reference,
/// SetQueueAttributes: one server-side encryption option per queue; AWS's recorded
/// refusal): a KMS key with `SqsManagedSseEnabled=true` in one CreateQueue or
/// SetQueueAttributes is `InvalidAttributeName`; a KMS key alone turns SSE-SQS off; an
/// empty key is no key. Standard and FIFO, JSON and Query.
#[tokio::test]
async fn one_server_side_encryption_at_a_time() {
    use serde_json::json;

    use crate::wire::{self, Outcome};

    const REFUSED: &str = "You can use one type of server-side encryption (SSE) at one time. You can either enable KMS SSE or SQS SSE.";
    // (given, Some(SqsManagedSseEnabled, KmsMasterKeyId reported) or None: refused)
    type Row<'a> = (&'a [(&'a str, &'a str)], Option<(&'a str, Option<&'a str>)>);
    let rows: [Row; 6] = [
        (
            &[("KmsMasterKeyId", "k1"), ("SqsManagedSseEnabled", "true")],
            None,
        ),
        (
            &[
                ("SqsManagedSseEnabled", "true"),
                ("KmsMasterKeyId", "alias/aws/sqs"),
            ],
            None,
        ),
        (
            &[("KmsMasterKeyId", "k1"), ("SqsManagedSseEnabled", "false")],
            Some(("false", Some("k1"))),
        ),
        (&[("KmsMasterKeyId", "k1")], Some(("false", Some("k1")))),
        (
            &[("KmsMasterKeyId", ""), ("SqsManagedSseEnabled", "true")],
            Some(("true", None)),
        ),
        (&[("SqsManagedSseEnabled", "false")], Some(("false", None))),
    ];
    let server = Server::start();
    let http = crate::harness::http();
    for query in [false, true] {
        let call = |op: &'static str, input: serde_json::Value| {
            let (http, url) = (http.clone(), server.url.clone());
            async move {
                if query {
                    wire::query(&http, &url, op, &input).await
                } else {
                    wire::json(&http, &url, op, &input).await
                }
            }
        };
        for fifo in [false, true] {
            for (i, (given, expected)) in rows.iter().enumerate() {
                let suffix = if fifo { ".fifo" } else { "" };
                let base = if fifo {
                    json!({"FifoQueue": "true"})
                } else {
                    json!({})
                };
                let mut attributes = base.clone();
                for (k, v) in *given {
                    attributes[*k] = json!(v);
                }
                let check = |outcome: Outcome, what: &str| match (outcome, expected) {
                    (
                        Outcome::Err {
                            code,
                            status,
                            message,
                            ..
                        },
                        None,
                    ) => {
                        assert_eq!(
                            (code.as_str(), status, message.as_str()),
                            ("InvalidAttributeName", 400, REFUSED),
                            "{what} {given:?}"
                        );
                        None
                    }
                    (Outcome::Ok(v), Some(_)) => Some(v),
                    (other, _) => panic!("{what} {given:?} (query {query}): {other:?}"),
                };
                // CreateQueue with the attributes.
                let name = format!("sse-c{i}-{query}{suffix}");
                let created = check(
                    call(
                        "CreateQueue",
                        json!({"QueueName": name, "Attributes": attributes}),
                    )
                    .await,
                    "CreateQueue",
                );
                // SetQueueAttributes with them on a queue created without.
                let name = format!("sse-s{i}-{query}{suffix}");
                let url = call(
                    "CreateQueue",
                    json!({"QueueName": name, "Attributes": base}),
                )
                .await
                .ok()["QueueUrl"]
                    .as_str()
                    .unwrap()
                    .to_owned();
                let mut set = json!({});
                for (k, v) in *given {
                    set[*k] = json!(v);
                }
                let before = call(
                    "GetQueueAttributes",
                    json!({"QueueUrl": url, "AttributeNames": ["All"]}),
                )
                .await
                .ok();
                let changed = check(
                    call(
                        "SetQueueAttributes",
                        json!({"QueueUrl": url, "Attributes": set}),
                    )
                    .await,
                    "SetQueueAttributes",
                );
                let after = call(
                    "GetQueueAttributes",
                    json!({"QueueUrl": url, "AttributeNames": ["All"]}),
                )
                .await
                .ok();
                let Some((sse, key)) = expected else {
                    assert!(created.is_none() && changed.is_none());
                    assert_eq!(
                        after["Attributes"]["SqsManagedSseEnabled"],
                        before["Attributes"]["SqsManagedSseEnabled"],
                        "a refused request changes nothing"
                    );
                    assert!(after["Attributes"].get("KmsMasterKeyId").is_none());
                    continue;
                };
                let created_url = created.unwrap()["QueueUrl"].as_str().unwrap().to_owned();
                let created = call(
                    "GetQueueAttributes",
                    json!({"QueueUrl": created_url, "AttributeNames": ["All"]}),
                )
                .await
                .ok();
                for (what, got) in [("created", &created), ("set", &after)] {
                    assert_eq!(
                        got["Attributes"]["SqsManagedSseEnabled"],
                        json!(sse),
                        "{what} {given:?} (query {query}, fifo {fifo})"
                    );
                    assert_eq!(
                        got["Attributes"]
                            .get("KmsMasterKeyId")
                            .and_then(|v| v.as_str()),
                        *key,
                        "{what} {given:?} (query {query}, fifo {fifo})"
                    );
                }
            }
        }
    }
}

/// The order FIFO messages come back in after their visibility ends (SQS Developer Guide,
/// "FIFO queue delivery logic": messages of a group come in the order sent, and no more of
/// a group are returned until the one received is deleted or visible again; AWS's answers
/// in LocalStack's `aws.validated` group-visibility tests: a group gives its visible
/// messages in send order up to its first hidden one, so a message visible again comes
/// back while a later one is still in flight). One row per scenario, on a group of four,
/// JSON and Query.
#[tokio::test]
async fn fifo_order_after_visibility_ends() {
    use serde_json::{json, Value};

    use crate::wire;

    #[derive(Debug, Clone, Copy)]
    enum Step {
        /// ReceiveMessage of at most `n`: the bodies expected, in order.
        Receive(i64, &'static [&'static str]),
        /// ChangeMessageVisibility of a held message to 0 (its visibility ends).
        Expire(&'static str),
        /// DeleteMessage of a held message.
        Delete(&'static str),
    }
    use Step::*;
    let rows: [(&str, &[Step]); 6] = [
        (
            "head-returns-first",
            &[Receive(1, &["m1"]), Expire("m1"), Receive(1, &["m1"])],
        ),
        (
            "whole-batch-expires",
            &[
                Receive(10, &["m1", "m2", "m3", "m4"]),
                Expire("m3"),
                Expire("m1"),
                Expire("m4"),
                Expire("m2"),
                Receive(10, &["m1", "m2", "m3", "m4"]),
            ],
        ),
        (
            "middle-expires-behind-a-held-head",
            &[
                Receive(10, &["m1", "m2", "m3", "m4"]),
                Expire("m3"),
                Receive(10, &[]),
                Delete("m1"),
                Delete("m2"),
                Receive(10, &["m3"]),
            ],
        ),
        (
            "head-visible-while-later-held",
            &[
                Receive(2, &["m1", "m2"]),
                Expire("m1"),
                Receive(10, &["m1"]),
            ],
        ),
        (
            "later-waits-for-earlier",
            &[
                Receive(2, &["m1", "m2"]),
                Expire("m2"),
                Receive(10, &[]),
                Delete("m1"),
                Receive(10, &["m2", "m3", "m4"]),
            ],
        ),
        (
            "expired-head-before-rest",
            &[
                Receive(2, &["m1", "m2"]),
                Delete("m2"),
                Expire("m1"),
                Receive(10, &["m1", "m3", "m4"]),
            ],
        ),
    ];
    let server = Server::start();
    let http = crate::harness::http();
    for query in [false, true] {
        let call = |op: &'static str, input: Value| {
            let (http, url) = (http.clone(), server.url.clone());
            async move {
                if query {
                    wire::query(&http, &url, op, &input).await
                } else {
                    wire::json(&http, &url, op, &input).await
                }
            }
        };
        for (name, steps) in rows {
            let queue = format!("{name}-{query}.fifo");
            let url = call(
                "CreateQueue",
                json!({"QueueName": queue, "Attributes": {"FifoQueue": "true", "ContentBasedDeduplication": "true"}}),
            )
            .await
            .ok()["QueueUrl"]
                .as_str()
                .unwrap()
                .to_owned();
            for body in ["m1", "m2", "m3", "m4"] {
                call(
                    "SendMessage",
                    json!({"QueueUrl": url, "MessageBody": body, "MessageGroupId": "g"}),
                )
                .await
                .ok();
            }
            let mut held: std::collections::HashMap<String, String> = Default::default();
            for (i, step) in steps.iter().enumerate() {
                match *step {
                    Receive(n, want) => {
                        let got = call(
                            "ReceiveMessage",
                            json!({"QueueUrl": url, "MaxNumberOfMessages": n,
                                   "VisibilityTimeout": 300, "WaitTimeSeconds": 0}),
                        )
                        .await
                        .ok();
                        let messages = got["Messages"].as_array().cloned().unwrap_or_default();
                        let bodies: Vec<&str> = messages
                            .iter()
                            .map(|m| m["Body"].as_str().unwrap())
                            .collect();
                        assert_eq!(bodies, want, "{queue} step {i}: {step:?}");
                        for m in &messages {
                            held.insert(
                                m["Body"].as_str().unwrap().to_owned(),
                                m["ReceiptHandle"].as_str().unwrap().to_owned(),
                            );
                        }
                    }
                    Expire(body) => {
                        call(
                            "ChangeMessageVisibility",
                            json!({"QueueUrl": url, "ReceiptHandle": held[body], "VisibilityTimeout": 0}),
                        )
                        .await
                        .ok();
                    }
                    Delete(body) => {
                        call(
                            "DeleteMessage",
                            json!({"QueueUrl": url, "ReceiptHandle": held[body]}),
                        )
                        .await
                        .ok();
                    }
                }
            }
        }
    }
}

/// FIFO settings changed after creation and their combinations (SQS API Reference,
/// CreateQueue and SetQueueAttributes: ContentBasedDeduplication, DeduplicationScope,
/// FifoThroughputLimit, "The perMessageGroupId value is allowed only when the value for
/// DeduplicationScope is messageGroup"; SQS Developer Guide, "High throughput for FIFO
/// queues"). ContentBasedDeduplication switched on lets sends without an id through,
/// deduplicated by body, from then on; switched off, such sends are refused again. JSON and
/// Query.
#[tokio::test]
async fn fifo_settings_after_creation() {
    use serde_json::{json, Value};

    use crate::wire::{self, Outcome};

    let server = Server::start();
    let http = crate::harness::http();
    for query in [false, true] {
        let call = |op: &'static str, input: Value| {
            let (http, url) = (http.clone(), server.url.clone());
            async move {
                if query {
                    wire::query(&http, &url, op, &input).await
                } else {
                    wire::json(&http, &url, op, &input).await
                }
            }
        };
        // Creation: the combination rule, one row per attribute set.
        let rows: [(&str, Value, Option<&str>); 4] = [
            (
                "limit-alone",
                json!({"FifoThroughputLimit": "perMessageGroupId"}),
                Some("InvalidAttributeValue"),
            ),
            (
                "limit-with-queue-scope",
                json!({"FifoThroughputLimit": "perMessageGroupId", "DeduplicationScope": "queue"}),
                Some("InvalidAttributeValue"),
            ),
            (
                "high-throughput",
                json!({"FifoThroughputLimit": "perMessageGroupId", "DeduplicationScope": "messageGroup"}),
                None,
            ),
            (
                "per-queue-group-scope",
                json!({"FifoThroughputLimit": "perQueue", "DeduplicationScope": "messageGroup"}),
                None,
            ),
        ];
        for (name, given, refused) in rows {
            let mut attributes = given.clone();
            attributes["FifoQueue"] = json!("true");
            let got = call(
                "CreateQueue",
                json!({"QueueName": format!("{name}-{query}.fifo"), "Attributes": attributes}),
            )
            .await;
            match (got, refused) {
                (Outcome::Err { code, status, .. }, Some(want)) => {
                    assert_eq!((code.as_str(), status), (want, 400), "{name}")
                }
                (Outcome::Ok(v), None) => {
                    let url = v["QueueUrl"].as_str().unwrap();
                    let got = call(
                        "GetQueueAttributes",
                        json!({"QueueUrl": url, "AttributeNames": ["All"]}),
                    )
                    .await
                    .ok();
                    for (k, v) in given.as_object().unwrap() {
                        assert_eq!(&got["Attributes"][k], v, "{name}: {k}");
                    }
                }
                (other, _) => panic!("{name} (query {query}): {other:?}"),
            }
        }
        // ContentBasedDeduplication switched after creation, both ways.
        for start in [false, true] {
            let url = call(
                "CreateQueue",
                json!({"QueueName": format!("cbd-{start}-{query}.fifo"),
                       "Attributes": {"FifoQueue": "true", "ContentBasedDeduplication": start.to_string()}}),
            )
            .await
            .ok()["QueueUrl"]
                .as_str()
                .unwrap()
                .to_owned();
            for (round, cbd) in [(0, start), (1, !start)] {
                if round == 1 {
                    call(
                        "SetQueueAttributes",
                        json!({"QueueUrl": url, "Attributes": {"ContentBasedDeduplication": cbd.to_string()}}),
                    )
                    .await
                    .ok();
                }
                let body = format!("body {start} {round}");
                let send = || {
                    call(
                        "SendMessage",
                        json!({"QueueUrl": url, "MessageBody": body, "MessageGroupId": "g"}),
                    )
                };
                match (send().await, cbd) {
                    (Outcome::Ok(first), true) => {
                        let again = send().await.ok();
                        assert_eq!(
                            first["MessageId"], again["MessageId"],
                            "same body, content-based deduplication (start {start}, round {round})"
                        );
                    }
                    (Outcome::Err { code, status, .. }, false) => assert_eq!(
                        (code.as_str(), status),
                        ("InvalidParameterValue", 400),
                        "no id without content-based deduplication"
                    ),
                    (other, cbd) => panic!("start {start} round {round} cbd {cbd}: {other:?}"),
                }
            }
        }
    }
}

/// CancelMessageMoveTask refuses a handle in three ways, each in AWS's words (recorded in
/// LocalStack's `aws.validated` move-task snapshots): not a handle at all (base64 JSON
/// with `taskId` and `sourceArn`) is `InvalidParameterValue` 400; a handle whose source
/// queue does not exist is `ResourceNotFoundException` 404 naming SourceArn; one whose
/// source exists but whose task does not is `ResourceNotFoundException` 404 "Task does
/// not exist.".
#[tokio::test]
async fn a_move_task_handle_is_refused_as_aws_refuses_it() {
    use base64::Engine as _;
    let server = Server::start();
    let sqs = server.sdk();
    create_queue(&sqs, "handle-source", &[]).await;
    let handle = |source: &str| {
        base64::engine::general_purpose::STANDARD.encode(format!(
            r#"{{"taskId":"10f57157-fc38-4da9-a113-4de7e12d05dd","sourceArn":"{source}"}}"#
        ))
    };
    let missing_source = handle("arn:aws:sqs:us-east-1:000000000000:no-such-queue");
    let missing_task = handle(&server.queue_arn("handle-source"));
    let not_json = base64::engine::general_purpose::STANDARD.encode("not json");
    let no_source = base64::engine::general_purpose::STANDARD.encode(r#"{"taskId":"x"}"#);
    for (task_handle, code, status, message) in [
        (
            "foobared",
            "InvalidParameterValue",
            400,
            "Value for parameter TaskHandle is invalid.",
        ),
        (
            not_json.as_str(),
            "InvalidParameterValue",
            400,
            "Value for parameter TaskHandle is invalid.",
        ),
        (
            no_source.as_str(),
            "InvalidParameterValue",
            400,
            "Value for parameter TaskHandle is invalid.",
        ),
        (
            missing_source.as_str(),
            "ResourceNotFoundException",
            404,
            "The resource that you specified for the SourceArn parameter doesn't exist.",
        ),
        (
            missing_task.as_str(),
            "ResourceNotFoundException",
            404,
            "Task does not exist.",
        ),
    ] {
        let e = sqs
            .cancel_message_move_task()
            .task_handle(task_handle)
            .send()
            .await
            .expect_err(task_handle);
        let (got_code, got_status) = crate::harness::sdk_error(&e);
        assert_eq!(
            (got_code.as_str(), got_status, e.message()),
            (code, status, Some(message)),
            "{task_handle}"
        );
    }
}

/// Message-move tasks as AWS records them (LocalStack's `aws.validated`
/// `test_sqs_move_task` snapshots; SQS API Reference StartMessageMoveTask,
/// ListMessageMoveTasks): one active task per source queue, a second Start while one runs
/// is `InvalidParameterValue` 400 "There is already a task running. Only one active task is
/// allowed for a source queue arn at a given time." (with or without a destination, to the
/// same or another one), and a Start once the task is cancelled is taken. A destination
/// queue deleted while the task runs ends it `FAILED` with FailureReason
/// `AWS.SimpleQueueService.NonExistentQueue`, and no message is lost: what was not moved
/// is still in the dead-letter queue. Standard and FIFO, JSON and Query.
#[tokio::test]
async fn move_tasks_as_aws_records_them() {
    use std::time::Duration;

    use serde_json::json;

    use crate::wire::{self, Outcome};

    const RUNNING: &str = "There is already a task running. Only one active task is allowed for a source queue arn at a given time.";
    const N: usize = 8;
    let server = Server::start();
    let http = crate::harness::http();
    for query in [false, true] {
        let call = |op: &'static str, input: serde_json::Value| {
            let (http, url) = (http.clone(), server.url.clone());
            async move {
                let out = if query {
                    wire::query(&http, &url, op, &input).await
                } else {
                    wire::json(&http, &url, op, &input).await
                };
                match out {
                    Outcome::Ok(v) => Outcome::Ok(wire::stringify(&v)),
                    other => other,
                }
            }
        };
        for fifo in [false, true] {
            let tag = format!("{}{}", if query { "q" } else { "j" }, fifo as u8);
            let suffix = if fifo { ".fifo" } else { "" };
            let base = if fifo {
                json!({"FifoQueue": "true", "ContentBasedDeduplication": "true"})
            } else {
                json!({})
            };
            let make = |name: String, extra: Option<(&str, String)>| {
                let mut attributes = base.clone();
                if let Some((k, v)) = extra {
                    attributes[k] = json!(v);
                }
                let call = &call;
                async move {
                    call(
                        "CreateQueue",
                        json!({"QueueName": name, "Attributes": attributes}),
                    )
                    .await
                    .ok()["QueueUrl"]
                        .as_str()
                        .unwrap()
                        .to_owned()
                }
            };
            let dlq_name = format!("mt-dead-{tag}{suffix}");
            let dlq = make(dlq_name.clone(), None).await;
            let policy = format!(
                r#"{{"deadLetterTargetArn":"{}","maxReceiveCount":1}}"#,
                server.queue_arn(&dlq_name)
            );
            make(
                format!("mt-live-{tag}{suffix}"),
                Some(("RedrivePolicy", policy)),
            )
            .await;
            let dest_names = [
                format!("mt-to-a-{tag}{suffix}"),
                format!("mt-to-b-{tag}{suffix}"),
            ];
            for d in &dest_names {
                make(d.clone(), None).await;
            }
            for i in 0..N {
                let mut send = json!({"QueueUrl": dlq, "MessageBody": format!("m{i}")});
                if fifo {
                    send["MessageGroupId"] = json!(format!("g{i}"));
                }
                call("SendMessage", send).await.ok();
            }
            let source_arn = server.queue_arn(&dlq_name);
            let start = |destination: Option<&str>| {
                let mut input = json!({"SourceArn": source_arn, "MaxNumberOfMessagesPerSecond": 1});
                if let Some(d) = destination {
                    input["DestinationArn"] = json!(server.queue_arn(d));
                }
                call("StartMessageMoveTask", input)
            };
            let handle = start(Some(&dest_names[0])).await.ok()["TaskHandle"]
                .as_str()
                .unwrap()
                .to_owned();
            // A second Start while it runs, whatever it names.
            for destination in [Some(&dest_names[0]), Some(&dest_names[1]), None] {
                match start(destination.map(String::as_str)).await {
                    Outcome::Err {
                        code,
                        status,
                        message,
                        ..
                    } => assert_eq!(
                        (code.as_str(), status, message.as_str()),
                        ("InvalidParameterValue", 400, RUNNING),
                        "{tag} second start to {destination:?}"
                    ),
                    other => panic!("{tag} second start to {destination:?}: {other:?}"),
                }
            }
            // Cancelled, it is no longer active: a new Start is taken.
            call("CancelMessageMoveTask", json!({"TaskHandle": handle}))
                .await
                .ok();
            start(Some(&dest_names[1])).await.ok();
            // The destination goes while the task runs (one message a second).
            call(
                "DeleteQueue",
                json!({"QueueUrl": server.queue_url(&dest_names[1])}),
            )
            .await
            .ok();
            let list = || call("ListMessageMoveTasks", json!({"SourceArn": source_arn}));
            let ended = crate::wait::until(Duration::from_secs(20), || async {
                list().await.ok()["Results"][0]["Status"] != json!("RUNNING")
            })
            .await;
            assert!(
                ended,
                "{tag}: the task still runs 20 s after its destination went"
            );
            let task = list().await.ok()["Results"][0].clone();
            assert_eq!(task["Status"], json!("FAILED"), "{tag}: {task}");
            assert_eq!(
                task["FailureReason"],
                json!("AWS.SimpleQueueService.NonExistentQueue"),
                "{tag}: {task}"
            );
            // Nothing lost: every message is in the first destination, in the source, or
            // was moved into the second before it was deleted (and went with it).
            let into_deleted: usize = task["ApproximateNumberOfMessagesMoved"]
                .as_str()
                .unwrap()
                .parse()
                .unwrap();
            let count = |url: String| {
                let call = &call;
                async move {
                    call(
                        "GetQueueAttributes",
                        json!({"QueueUrl": url, "AttributeNames": ["ApproximateNumberOfMessages"]}),
                    )
                    .await
                    .ok()["Attributes"]["ApproximateNumberOfMessages"]
                        .as_str()
                        .unwrap()
                        .parse::<usize>()
                        .unwrap()
                }
            };
            let moved_first = count(server.queue_url(&dest_names[0])).await;
            let left = count(dlq.clone()).await;
            assert_eq!(
                moved_first + left + into_deleted,
                N,
                "{tag}: {moved_first} moved, {left} left, {into_deleted} into the deleted queue"
            );
            assert!(left > 0, "{tag}: nothing left in the source");
        }
    }
}
