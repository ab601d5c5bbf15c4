//! Behaviours that emulators commonly get wrong, each checked against AWS's documented (or
//! observed and relied-upon) behaviour.

use std::time::{Duration, Instant};

use aws_sdk_sqs::operation::cancel_message_move_task::CancelMessageMoveTaskError;
use aws_sdk_sqs::operation::list_message_move_tasks::ListMessageMoveTasksError;
use aws_sdk_sqs::operation::start_message_move_task::StartMessageMoveTaskError;
use aws_sdk_sqs::types::MessageSystemAttributeName as S;
use aws_sdk_sqs::Client;

use crate::harness::Server;
use crate::md5::{self, Value};
use crate::{counts, create_queue, string_attr, typed_attr};

/// MD5OfMessageAttributes on a receive covers only the attributes that receive selected, and
/// is absent when none was selected.
#[tokio::test]
async fn md5_of_message_attributes_covers_only_selected_attributes() {
    let server = Server::start();
    let sqs = server.sdk();
    let url = create_queue(&sqs, "select", &[]).await;
    let sent = sqs
        .send_message()
        .queue_url(&url)
        .message_body("b")
        .message_attributes("app.x", string_attr("1"))
        .message_attributes("app.y", typed_attr("Number", "2"))
        .message_attributes("other", string_attr("3"))
        .send()
        .await
        .unwrap();
    let all = md5::of_attributes(&[
        ("app.x", "String", Value::Text("1")),
        ("app.y", "Number", Value::Text("2")),
        ("other", "String", Value::Text("3")),
    ]);
    assert_eq!(sent.md5_of_message_attributes(), Some(all.as_str()));

    let cases: [(&[&str], Option<String>); 6] = [
        (&["All"], Some(all.clone())),
        (&[".*"], Some(all.clone())),
        (
            &["app.*"],
            Some(md5::of_attributes(&[
                ("app.x", "String", Value::Text("1")),
                ("app.y", "Number", Value::Text("2")),
            ])),
        ),
        (
            &["other"],
            Some(md5::of_attributes(&[("other", "String", Value::Text("3"))])),
        ),
        (
            &["other", "app.y", "absent"],
            Some(md5::of_attributes(&[
                ("app.y", "Number", Value::Text("2")),
                ("other", "String", Value::Text("3")),
            ])),
        ),
        (&["absent"], None),
    ];
    for (names, expected) in cases {
        let mut req = sqs.receive_message().queue_url(&url).visibility_timeout(0);
        for n in names {
            req = req.message_attribute_names(*n);
        }
        let out = req.send().await.unwrap();
        let m = &out.messages()[0];
        assert_eq!(
            m.md5_of_message_attributes(),
            expected.as_deref(),
            "selection {names:?}"
        );
        let got = m.message_attributes().cloned().unwrap_or_default();
        assert_eq!(
            md5::of_sdk_attributes(&got),
            expected,
            "attributes {names:?}"
        );
    }
}

/// Receipt handles are new on every receive; on a standard queue an older handle of the same
/// message still deletes it.
#[tokio::test]
async fn receipt_handles_change_and_a_stale_handle_still_deletes() {
    let server = Server::start();
    let sqs = server.sdk();
    let url = create_queue(&sqs, "stale", &[]).await;
    sqs.send_message()
        .queue_url(&url)
        .message_body("once")
        .send()
        .await
        .unwrap();
    let mut handles = Vec::new();
    for _ in 0..3 {
        let out = sqs
            .receive_message()
            .queue_url(&url)
            .visibility_timeout(0)
            .send()
            .await
            .unwrap();
        handles.push(out.messages()[0].receipt_handle().unwrap().to_owned());
    }
    assert_ne!(handles[0], handles[1]);
    assert_ne!(handles[1], handles[2]);
    assert_ne!(handles[0], handles[2]);
    // The message is hidden under the latest receive; delete with the first handle.
    let out = sqs
        .receive_message()
        .queue_url(&url)
        .visibility_timeout(300)
        .send()
        .await
        .unwrap();
    assert_eq!(out.messages().len(), 1);
    sqs.delete_message()
        .queue_url(&url)
        .receipt_handle(&handles[0])
        .send()
        .await
        .unwrap();
    assert_eq!(counts(&sqs, &url).await, (0, 0, 0));
}

async fn receive_one(sqs: &Client, url: &str) -> Option<aws_sdk_sqs::types::Message> {
    sqs.receive_message()
        .queue_url(url)
        .message_system_attribute_names(S::All)
        .message_attribute_names("All")
        .visibility_timeout(0)
        .send()
        .await
        .unwrap()
        .messages()
        .first()
        .cloned()
}

/// Past maxReceiveCount receives, a message moves to the dead-letter queue with its
/// MessageId, attributes and body, and DeadLetterQueueSourceArn set; StartMessageMoveTask
/// moves it back to its source.
#[tokio::test]
async fn dlq_redrive_and_message_move_task_back() {
    let server = Server::start();
    let sqs = server.sdk();
    let dlq = create_queue(&sqs, "dead", &[]).await;
    let policy = format!(
        r#"{{"deadLetterTargetArn":"{}","maxReceiveCount":2}}"#,
        server.queue_arn("dead")
    );
    let src = create_queue(&sqs, "live", &[("RedrivePolicy", &policy)]).await;
    let sent = sqs
        .send_message()
        .queue_url(&src)
        .message_body("poison")
        .message_attributes("k", string_attr("v"))
        .send()
        .await
        .unwrap();
    let id = sent.message_id().unwrap().to_owned();

    // Two receives are allowed; the third attempt moves it.
    for n in 1..=2 {
        let m = receive_one(&sqs, &src).await.expect("still in source");
        assert_eq!(m.message_id(), Some(id.as_str()));
        assert_eq!(
            m.attributes().unwrap()[&S::ApproximateReceiveCount],
            n.to_string()
        );
    }
    assert!(receive_one(&sqs, &src).await.is_none());
    assert_eq!(counts(&sqs, &src).await, (0, 0, 0));
    let dead = receive_one(&sqs, &dlq).await.expect("in the DLQ");
    assert_eq!(dead.message_id(), Some(id.as_str()));
    assert_eq!(dead.body(), Some("poison"));
    assert_eq!(
        dead.message_attributes().unwrap()["k"].string_value(),
        Some("v")
    );
    assert_eq!(
        dead.md5_of_message_attributes(),
        sent.md5_of_message_attributes()
    );
    assert_eq!(
        dead.attributes().unwrap()[&S::DeadLetterQueueSourceArn],
        server.queue_arn("live")
    );

    // Move it back (no DestinationArn: to its source queue).
    let handle = sqs
        .start_message_move_task()
        .source_arn(server.queue_arn("dead"))
        .send()
        .await
        .unwrap()
        .task_handle()
        .unwrap()
        .to_owned();
    assert!(!handle.is_empty());
    let latest = || async {
        let tasks = sqs
            .list_message_move_tasks()
            .source_arn(server.queue_arn("dead"))
            .send()
            .await
            .unwrap();
        tasks.results()[0].clone()
    };
    crate::wait::until(Duration::from_secs(10), || async {
        latest().await.status() == Some("COMPLETED")
    })
    .await;
    let task = latest().await;
    assert_eq!(task.status(), Some("COMPLETED"), "{task:?}");
    assert_eq!(task.source_arn(), Some(server.queue_arn("dead").as_str()));
    assert_eq!(task.approximate_number_of_messages_moved(), 1);
    assert_eq!(task.approximate_number_of_messages_to_move(), Some(1));
    assert_eq!(task.destination_arn(), None);
    // Only a running task has a handle.
    assert_eq!(task.task_handle(), None);
    assert!(task.started_timestamp() > 0);

    let back = receive_one(&sqs, &src).await.expect("back in the source");
    assert_eq!(back.body(), Some("poison"));
    assert_eq!(
        back.md5_of_message_attributes(),
        sent.md5_of_message_attributes()
    );
    // Redriven, it starts over: received once, no dead-letter source.
    let attrs = back.attributes().unwrap();
    assert_eq!(attrs[&S::ApproximateReceiveCount], "1");
    assert!(!attrs.contains_key(&S::DeadLetterQueueSourceArn));
    assert_eq!(counts(&sqs, &dlq).await, (0, 0, 0));

    // A finished task cannot be cancelled.
    assert_sdk_err!(
        sqs.cancel_message_move_task()
            .task_handle(&handle)
            .send()
            .await,
        CancelMessageMoveTaskError::ResourceNotFoundException(_),
        "ResourceNotFoundException",
        404
    );
}

#[tokio::test]
async fn message_move_task_to_a_destination_rate_and_cancel() {
    let server = Server::start();
    let sqs = server.sdk();
    let dlq = create_queue(&sqs, "dead", &[]).await;
    let policy = format!(
        r#"{{"deadLetterTargetArn":"{}","maxReceiveCount":1}}"#,
        server.queue_arn("dead")
    );
    create_queue(&sqs, "live", &[("RedrivePolicy", &policy)]).await;
    let elsewhere = create_queue(&sqs, "elsewhere", &[]).await;
    for i in 0..30 {
        sqs.send_message()
            .queue_url(&dlq)
            .message_body(format!("m{i}"))
            .send()
            .await
            .unwrap();
    }
    // A dead-letter queue cannot be moved into itself.
    let err = sqs
        .start_message_move_task()
        .source_arn(server.queue_arn("dead"))
        .destination_arn(server.queue_arn("dead"))
        .send()
        .await
        .expect_err("a move into the source queue itself");
    let (code, status) = crate::harness::sdk_error(&err);
    assert_eq!(
        (code.as_str(), status),
        ("InvalidParameterValue", 400),
        "{err:?}"
    );
    // One message a second: the task is still running when cancelled.
    let handle = sqs
        .start_message_move_task()
        .source_arn(server.queue_arn("dead"))
        .destination_arn(server.queue_arn("elsewhere"))
        .max_number_of_messages_per_second(1)
        .send()
        .await
        .unwrap()
        .task_handle()
        .unwrap()
        .to_owned();
    let tasks = sqs
        .list_message_move_tasks()
        .source_arn(server.queue_arn("dead"))
        .max_results(10)
        .send()
        .await
        .unwrap();
    let t = &tasks.results()[0];
    assert_eq!(t.status(), Some("RUNNING"));
    assert_eq!(t.task_handle(), Some(handle.as_str()));
    assert_eq!(
        t.destination_arn(),
        Some(server.queue_arn("elsewhere").as_str())
    );
    assert_eq!(t.max_number_of_messages_per_second(), Some(1));
    assert_eq!(t.approximate_number_of_messages_to_move(), Some(30));
    // A second task on the same source while one runs.
    let r = sqs
        .start_message_move_task()
        .source_arn(server.queue_arn("dead"))
        .send()
        .await;
    let err = r.expect_err("a second task on one source");
    let (code, status) = crate::harness::sdk_error(&err);
    assert_eq!(
        (code.as_str(), status),
        ("InvalidParameterValue", 400),
        "{err:?}"
    );
    // At 1 a second: cancelled once the first message has moved (and before all 30 have).
    let started_moving = crate::wait::until(Duration::from_secs(10), || async {
        let tasks = sqs
            .list_message_move_tasks()
            .source_arn(server.queue_arn("dead"))
            .send()
            .await
            .unwrap();
        tasks.results()[0].approximate_number_of_messages_moved() >= 1
    })
    .await;
    assert!(
        started_moving,
        "the task moved nothing in 10 s at 1 a second"
    );
    let cancelled = sqs
        .cancel_message_move_task()
        .task_handle(&handle)
        .send()
        .await
        .unwrap();
    let moved = cancelled.approximate_number_of_messages_moved();
    assert!((1..30).contains(&moved), "moved {moved}");
    crate::wait::until(Duration::from_secs(10), || async {
        counts(&sqs, &elsewhere).await.0 >= moved as u64
    })
    .await;
    let (visible, _, _) = counts(&sqs, &elsewhere).await;
    assert!(
        visible >= moved as u64 && visible < 30,
        "{visible} vs {moved}"
    );
    let tasks = sqs
        .list_message_move_tasks()
        .source_arn(server.queue_arn("dead"))
        .send()
        .await
        .unwrap();
    assert_eq!(tasks.results()[0].status(), Some("CANCELLED"));
}

#[tokio::test]
async fn message_move_task_errors() {
    let server = Server::start();
    let sqs = server.sdk();
    create_queue(&sqs, "plain", &[]).await;
    // An unknown source.
    assert_sdk_err!(
        sqs.start_message_move_task()
            .source_arn(server.queue_arn("missing"))
            .send()
            .await,
        StartMessageMoveTaskError::ResourceNotFoundException(_),
        "ResourceNotFoundException",
        404
    );
    assert_sdk_err!(
        sqs.list_message_move_tasks()
            .source_arn(server.queue_arn("missing"))
            .send()
            .await,
        ListMessageMoveTasksError::ResourceNotFoundException(_),
        "ResourceNotFoundException",
        404
    );
    // A queue that is no queue's dead-letter queue.
    let r = sqs
        .start_message_move_task()
        .source_arn(server.queue_arn("plain"))
        .send()
        .await;
    assert_sdk_err!(r, _, "InvalidParameterValue", 400);
    // Something that is not a task handle (base64 of "not-a-task"): AWS's words in
    // `recorded::a_move_task_handle_is_refused_as_aws_refuses_it`.
    assert_sdk_err!(
        sqs.cancel_message_move_task()
            .task_handle("bm90LWEtdGFzaw==")
            .send()
            .await,
        _,
        "InvalidParameterValue",
        400
    );
    // No tasks yet: an empty list.
    let out = sqs
        .list_message_move_tasks()
        .source_arn(server.queue_arn("plain"))
        .send()
        .await
        .unwrap();
    assert!(out.results().is_empty());
}

/// MaxNumberOfMessagesPerSecond bounds the move rate: at 2 messages a second the task does
/// move messages, and the sixth cannot have moved before 2 s have passed (a first second's
/// burst of 2 aside, 2 a second after it).
#[tokio::test]
async fn message_move_task_honours_low_rates() {
    let server = Server::start();
    let sqs = server.sdk();
    let dlq = create_queue(&sqs, "dead", &[]).await;
    let policy = format!(
        r#"{{"deadLetterTargetArn":"{}","maxReceiveCount":1}}"#,
        server.queue_arn("dead")
    );
    create_queue(&sqs, "live", &[("RedrivePolicy", &policy)]).await;
    let dest = create_queue(&sqs, "dest", &[]).await;
    for i in 0..20 {
        sqs.send_message()
            .queue_url(&dlq)
            .message_body(format!("m{i}"))
            .send()
            .await
            .unwrap();
    }
    let started = Instant::now();
    sqs.start_message_move_task()
        .source_arn(server.queue_arn("dead"))
        .destination_arn(server.queue_arn("dest"))
        .max_number_of_messages_per_second(2)
        .send()
        .await
        .unwrap();
    // Watch the destination until 6 have arrived (bounded: 20 s is ample at 2 a second).
    let six = crate::wait::until(Duration::from_secs(20), || async {
        counts(&sqs, &dest).await.0 >= 6
    })
    .await;
    assert!(
        six,
        "only {} of 20 messages moved in 20 s at 2 a second",
        counts(&sqs, &dest).await.0
    );
    let took = started.elapsed();
    assert!(
        took >= Duration::from_secs(2),
        "6 messages moved in {took:?} at 2 a second"
    );
}

/// SQS Developer Guide, "Configuring a dead-letter queue redrive": "The redrive task
/// resets the retention period. All redriven messages are considered new messages and are
/// assigned a new messageID and enqueueTime."
#[tokio::test]
async fn redriven_messages_are_new_messages() {
    let server = Server::start();
    let sqs = server.sdk();
    let dlq = create_queue(&sqs, "dead", &[]).await;
    let policy = format!(
        r#"{{"deadLetterTargetArn":"{}","maxReceiveCount":1}}"#,
        server.queue_arn("dead")
    );
    let src = create_queue(&sqs, "live", &[("RedrivePolicy", &policy)]).await;
    let id = sqs
        .send_message()
        .queue_url(&src)
        .message_body("again")
        .send()
        .await
        .unwrap()
        .message_id()
        .unwrap()
        .to_owned();
    let first = receive_one(&sqs, &src).await.unwrap();
    let sent_at = first.attributes().unwrap()[&S::SentTimestamp].clone();
    assert!(receive_one(&sqs, &src).await.is_none());
    assert_eq!(counts(&sqs, &dlq).await.0, 1);
    // The redrive must happen on a later millisecond than the first send, so that a
    // SentTimestamp carried over would show.
    let sent_ms: u128 = sent_at.parse().expect("SentTimestamp in ms");
    let now_ms = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis()
    };
    assert!(
        crate::wait::until(Duration::from_secs(1), || async { now_ms() > sent_ms }).await,
        "the clock did not move past {sent_ms}"
    );
    sqs.start_message_move_task()
        .source_arn(server.queue_arn("dead"))
        .send()
        .await
        .unwrap();
    let back = crate::wait::poll(Duration::from_secs(10), || receive_one(&sqs, &src))
        .await
        .expect("never moved back");
    assert_ne!(back.message_id(), Some(id.as_str()));
    assert_ne!(back.attributes().unwrap()[&S::SentTimestamp], sent_at);
}

/// A long poll returns as soon as a message arrives, not at the end of its wait.
#[tokio::test]
async fn long_poll_returns_promptly_when_a_message_is_sent() {
    let server = Server::start();
    let sqs = server.sdk();
    let url = create_queue(&sqs, "waiting", &[]).await;
    let receiver = {
        let sqs = sqs.clone();
        let url = url.clone();
        tokio::spawn(async move {
            let start = Instant::now();
            let out = sqs
                .receive_message()
                .queue_url(&url)
                .wait_time_seconds(20)
                .send()
                .await
                .unwrap();
            (start.elapsed(), out)
        })
    };
    // The long poll is still waiting after 700 ms of an empty queue (watched, not slept).
    crate::wait::holds_for(
        "the long poll waiting",
        Duration::from_millis(700),
        || async { !receiver.is_finished() },
    )
    .await;
    sqs.send_message()
        .queue_url(&url)
        .message_body("wake up")
        .send()
        .await
        .unwrap();
    let (elapsed, out) = receiver.await.unwrap();
    assert_eq!(out.messages().len(), 1);
    assert_eq!(out.messages()[0].body(), Some("wake up"));
    assert!(elapsed >= Duration::from_millis(600), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
}

/// A long poll also returns when a hidden message becomes visible during the wait.
#[tokio::test]
async fn long_poll_returns_when_visibility_expires() {
    let server = Server::start();
    let sqs = server.sdk();
    let url = create_queue(&sqs, "expiring", &[]).await;
    sqs.send_message()
        .queue_url(&url)
        .message_body("m")
        .send()
        .await
        .unwrap();
    sqs.receive_message()
        .queue_url(&url)
        .visibility_timeout(1)
        .send()
        .await
        .unwrap();
    let start = Instant::now();
    let out = sqs
        .receive_message()
        .queue_url(&url)
        .wait_time_seconds(10)
        .send()
        .await
        .unwrap();
    assert_eq!(out.messages().len(), 1);
    assert!(
        start.elapsed() < Duration::from_secs(4),
        "{:?}",
        start.elapsed()
    );
}

/// FIFO queues: SendMessage requires MessageGroupId; sends return a SequenceNumber;
/// MessageDeduplicationId (or content-based deduplication) drops duplicates for 5 minutes;
/// messages of one group come in order and one batch at a time.
#[tokio::test]
async fn fifo_queue_semantics() {
    let server = Server::start();
    let sqs = server.sdk();
    let url = create_queue(
        &sqs,
        "orders.fifo",
        &[("FifoQueue", "true"), ("ContentBasedDeduplication", "true")],
    )
    .await;
    // MessageGroupId is required.
    let r = sqs
        .send_message()
        .queue_url(&url)
        .message_body("x")
        .send()
        .await;
    assert_sdk_err!(r, _, "MissingParameter", 400);
    // DelaySeconds per message is not allowed on FIFO queues.
    let r = sqs
        .send_message()
        .queue_url(&url)
        .message_body("x")
        .message_group_id("g")
        .delay_seconds(1)
        .send()
        .await;
    assert_sdk_err!(r, _, "InvalidParameterValue", 400);

    let first = sqs
        .send_message()
        .queue_url(&url)
        .message_body("one")
        .message_group_id("g")
        .send()
        .await
        .unwrap();
    assert!(first.sequence_number().is_some());
    // Same content within the deduplication interval: accepted, same MessageId, not stored.
    let dup = sqs
        .send_message()
        .queue_url(&url)
        .message_body("one")
        .message_group_id("g")
        .send()
        .await
        .unwrap();
    assert_eq!(dup.message_id(), first.message_id());
    sqs.send_message()
        .queue_url(&url)
        .message_body("two")
        .message_group_id("g")
        .send()
        .await
        .unwrap();
    assert_eq!(counts(&sqs, &url).await.0, 2);

    let out = sqs
        .receive_message()
        .queue_url(&url)
        .max_number_of_messages(1)
        .message_system_attribute_names(S::All)
        .send()
        .await
        .unwrap();
    let m = &out.messages()[0];
    assert_eq!(m.body(), Some("one"));
    let attrs = m.attributes().unwrap();
    assert_eq!(attrs[&S::MessageGroupId], "g");
    assert!(attrs.contains_key(&S::SequenceNumber));
    assert!(attrs.contains_key(&S::MessageDeduplicationId));
    // While "one" is in flight its group is locked: "two" is not delivered.
    let out = sqs.receive_message().queue_url(&url).send().await.unwrap();
    assert!(out.messages().is_empty());
}

/// Competing consumers: while a message is in flight no other receive gets it, so 50
/// messages shared by 5 concurrent long-polling receivers are each delivered exactly once.
#[tokio::test]
async fn concurrent_receivers_never_share_an_in_flight_message() {
    let server = Server::start();
    let sqs = server.sdk();
    let url = create_queue(&sqs, "shared-work", &[]).await;
    for chunk in 0..5 {
        let mut req = sqs.send_message_batch().queue_url(&url);
        for i in 0..10 {
            req = req.entries(
                aws_sdk_sqs::types::SendMessageBatchRequestEntry::builder()
                    .id(format!("e{i}"))
                    .message_body(format!("m{}", chunk * 10 + i))
                    .build()
                    .unwrap(),
            );
        }
        req.send().await.unwrap();
    }
    let mut workers = Vec::new();
    for _ in 0..5 {
        let sqs = sqs.clone();
        let url = url.clone();
        workers.push(tokio::spawn(async move {
            let mut bodies = Vec::new();
            loop {
                let out = sqs
                    .receive_message()
                    .queue_url(&url)
                    .max_number_of_messages(10)
                    .visibility_timeout(300)
                    .wait_time_seconds(1)
                    .send()
                    .await
                    .unwrap();
                if out.messages().is_empty() {
                    return bodies;
                }
                bodies.extend(out.messages().iter().map(|m| m.body().unwrap().to_owned()));
            }
        }));
    }
    let mut all = Vec::new();
    for w in workers {
        all.extend(w.await.unwrap());
    }
    all.sort();
    let total = all.len();
    all.dedup();
    assert_eq!(total, all.len(), "a message was delivered twice");
    assert_eq!(all.len(), 50);
}

/// No answer in XML carries a character XML 1.0 cannot (a control other than tab, line
/// feed and carriage return): a hostile tenant with SendMessage on another account's
/// queue sent a message whose attribute type held U+0001, and the owner's Query
/// ReceiveMessage came back ill-formed, the whole batch unreadable and the message back
/// at every visibility timeout. SQS refuses such text in a value already
/// (`InvalidParameterValue`); a type label, AWSTraceHeader and tags now are refused too,
/// and an error that echoes the request's text writes U+FFFD for such a character.
#[tokio::test]
async fn characters_xml_cannot_carry_never_reach_a_query_answer() {
    use crate::wire::{self, Outcome};
    use serde_json::json;
    let server = Server::start();
    let http = reqwest::Client::new();
    let call = |op: &'static str, input: serde_json::Value| {
        let (http, url) = (http.clone(), server.url.clone());
        async move { wire::query(&http, &url, op, &input).await }
    };
    let refused = |out: Outcome, what: &str| match out {
        Outcome::Err { code, status, .. } => {
            assert_eq!(
                (code.as_str(), status),
                ("InvalidParameterValue", 400),
                "{what}"
            )
        }
        Outcome::Ok(v) => panic!("{what}: taken: {v}"),
    };
    let url = match call("CreateQueue", json!({"QueueName": "ctl"})).await {
        Outcome::Ok(v) => v["QueueUrl"].as_str().unwrap().to_owned(),
        other => panic!("{other:?}"),
    };
    for (what, input) in [
        (
            "a type label",
            json!({"QueueUrl": url, "MessageBody": "b", "MessageAttributes": {
                "a": {"DataType": "String.\u{1}", "StringValue": "v"}}}),
        ),
        (
            "a value",
            json!({"QueueUrl": url, "MessageBody": "b", "MessageAttributes": {
                "a": {"DataType": "String", "StringValue": "v\u{1}"}}}),
        ),
        (
            "AWSTraceHeader",
            json!({"QueueUrl": url, "MessageBody": "b", "MessageSystemAttributes": {
                "AWSTraceHeader": {"DataType": "String", "StringValue": "Root=\u{1}"}}}),
        ),
    ] {
        refused(call("SendMessage", input).await, what);
    }
    refused(
        call(
            "TagQueue",
            json!({"QueueUrl": url, "Tags": {"k\u{1}": "v"}}),
        )
        .await,
        "a tag key",
    );
    refused(
        call(
            "TagQueue",
            json!({"QueueUrl": url, "Tags": {"k": "v\u{1f}"}}),
        )
        .await,
        "a tag value",
    );
    // Nothing was stored: the queue's answers parse (decode_query parses every body).
    match call(
        "ReceiveMessage",
        json!({"QueueUrl": url, "WaitTimeSeconds": 0}),
    )
    .await
    {
        Outcome::Ok(v) => assert!(v["Messages"].as_array().is_none_or(|m| m.is_empty()), "{v}"),
        other => panic!("{other:?}"),
    }
    match call("ListQueueTags", json!({"QueueUrl": url})).await {
        Outcome::Ok(_) => {}
        other => panic!("{other:?}"),
    }
    // An error that echoes the request's text: well-formed, the character replaced.
    match call(
        "GetQueueAttributes",
        json!({"QueueUrl": format!("{url}x\u{1}"), "AttributeNames": ["All"]}),
    )
    .await
    {
        Outcome::Err {
            status, message, ..
        } => {
            assert_eq!(status, 400, "{message}");
            assert!(!message.contains('\u{1}'), "{message}");
        }
        other => panic!("{other:?}"),
    }
}
