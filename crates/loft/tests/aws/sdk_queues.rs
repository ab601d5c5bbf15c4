//! Queue operations over aws-sdk-sqs: CreateQueue, GetQueueUrl, ListQueues, DeleteQueue,
//! GetQueueAttributes, SetQueueAttributes, TagQueue, UntagQueue, ListQueueTags,
//! AddPermission, RemovePermission, ListDeadLetterSourceQueues.

use std::collections::HashMap;

use aws_sdk_sqs::operation::create_queue::CreateQueueError;
use aws_sdk_sqs::operation::delete_queue::DeleteQueueError;
use aws_sdk_sqs::operation::get_queue_attributes::GetQueueAttributesError;
use aws_sdk_sqs::operation::get_queue_url::GetQueueUrlError;
use aws_sdk_sqs::operation::list_dead_letter_source_queues::ListDeadLetterSourceQueuesError;
use aws_sdk_sqs::operation::list_queue_tags::ListQueueTagsError;
use aws_sdk_sqs::operation::set_queue_attributes::SetQueueAttributesError;
use aws_sdk_sqs::types::QueueAttributeName as A;
use serde_json::Value;

use crate::create_queue;
use crate::harness::Server;

fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

#[tokio::test]
async fn create_queue_with_attributes_and_tags_then_read_them_back() {
    let server = Server::start();
    let sqs = server.sdk();
    let out = sqs
        .create_queue()
        .queue_name("orders")
        .attributes(A::VisibilityTimeout, "45")
        .attributes(A::DelaySeconds, "2")
        .attributes(A::MaximumMessageSize, "2048")
        .attributes(A::MessageRetentionPeriod, "3600")
        .attributes(A::ReceiveMessageWaitTimeSeconds, "1")
        .tags("team", "core")
        .tags("env", "test")
        .send()
        .await
        .unwrap();
    let url = out.queue_url().unwrap().to_owned();
    assert_eq!(url, server.queue_url("orders"));

    let attrs = sqs
        .get_queue_attributes()
        .queue_url(&url)
        .attribute_names(A::All)
        .send()
        .await
        .unwrap()
        .attributes()
        .unwrap()
        .clone();
    let get = |n: A| attrs.get(&n).map(String::as_str);
    assert_eq!(get(A::VisibilityTimeout), Some("45"));
    assert_eq!(get(A::DelaySeconds), Some("2"));
    assert_eq!(get(A::MaximumMessageSize), Some("2048"));
    assert_eq!(get(A::MessageRetentionPeriod), Some("3600"));
    assert_eq!(get(A::ReceiveMessageWaitTimeSeconds), Some("1"));
    assert_eq!(get(A::QueueArn), Some(server.queue_arn("orders").as_str()));
    assert_eq!(get(A::ApproximateNumberOfMessages), Some("0"));
    assert_eq!(get(A::ApproximateNumberOfMessagesNotVisible), Some("0"));
    assert_eq!(get(A::ApproximateNumberOfMessagesDelayed), Some("0"));
    // Timestamps are epoch seconds (not milliseconds).
    let created: i64 = get(A::CreatedTimestamp).unwrap().parse().unwrap();
    assert!(
        (created - now_secs()).abs() < 60,
        "CreatedTimestamp {created}"
    );
    let modified: i64 = get(A::LastModifiedTimestamp).unwrap().parse().unwrap();
    assert!(
        (modified - now_secs()).abs() < 60,
        "LastModifiedTimestamp {modified}"
    );
    // A standard queue reports no FIFO attributes.
    assert_eq!(get(A::FifoQueue), None);
    assert_eq!(get(A::ContentBasedDeduplication), None);

    let tags = sqs
        .list_queue_tags()
        .queue_url(&url)
        .send()
        .await
        .unwrap()
        .tags()
        .unwrap()
        .clone();
    assert_eq!(
        tags,
        HashMap::from([
            ("team".to_owned(), "core".to_owned()),
            ("env".to_owned(), "test".to_owned())
        ])
    );
}

#[tokio::test]
async fn create_queue_is_idempotent_only_for_equal_attributes() {
    let server = Server::start();
    let sqs = server.sdk();
    let url = create_queue(&sqs, "idem", &[("VisibilityTimeout", "45")]).await;
    // Same name, same attributes: the existing queue's URL.
    assert_eq!(
        create_queue(&sqs, "idem", &[("VisibilityTimeout", "45")]).await,
        url
    );
    // Same name, no attributes: nothing differs, so also the existing URL.
    assert_eq!(create_queue(&sqs, "idem", &[]).await, url);
    // A default spelled out equals the default.
    assert_eq!(
        create_queue(&sqs, "idem", &[("DelaySeconds", "0")]).await,
        url
    );
    // Same name, a different value: QueueAlreadyExists (QueueNameExists), 400.
    assert_sdk_err!(
        sqs.create_queue()
            .queue_name("idem")
            .attributes(A::VisibilityTimeout, "46")
            .send()
            .await,
        CreateQueueError::QueueNameExists(_),
        "QueueAlreadyExists",
        400
    );
}

#[tokio::test]
async fn create_queue_rejects_bad_names_and_attributes() {
    let server = Server::start();
    let sqs = server.sdk();
    for bad in ["has space", "dot.name", &"x".repeat(81), "slash/name"] {
        let r = sqs.create_queue().queue_name(bad).send().await;
        assert_sdk_err!(r, _, "InvalidParameterValue", 400);
    }
    // 80 characters is the longest valid name.
    create_queue(&sqs, &"x".repeat(80), &[]).await;
    create_queue(&sqs, "Mixed-Case_09", &[]).await;

    // Unknown attribute name.
    let r = sqs
        .create_queue()
        .queue_name("q")
        .attributes(A::from("Colour"), "blue")
        .send()
        .await;
    assert_sdk_err!(
        r,
        CreateQueueError::InvalidAttributeName(_),
        "InvalidAttributeName",
        400
    );
    // Read-only attribute.
    let r = sqs
        .create_queue()
        .queue_name("q")
        .attributes(A::QueueArn, "arn:aws:sqs:us-east-1:000000000000:q")
        .send()
        .await;
    assert_sdk_err!(
        r,
        CreateQueueError::InvalidAttributeName(_),
        "InvalidAttributeName",
        400
    );
    // Out-of-range and malformed values.
    for (name, value) in [
        (A::VisibilityTimeout, "43201"),
        (A::VisibilityTimeout, "-1"),
        (A::DelaySeconds, "901"),
        (A::MaximumMessageSize, "1023"),
        (A::MaximumMessageSize, "1048577"),
        (A::MessageRetentionPeriod, "59"),
        (A::MessageRetentionPeriod, "1209601"),
        (A::ReceiveMessageWaitTimeSeconds, "21"),
        (A::VisibilityTimeout, "soon"),
    ] {
        let r = sqs
            .create_queue()
            .queue_name("q")
            .attributes(name.clone(), value)
            .send()
            .await;
        assert_sdk_err!(
            r,
            CreateQueueError::InvalidAttributeValue(_),
            "InvalidAttributeValue",
            400
        );
    }
    // Nothing above created the queue.
    let r = sqs.get_queue_url().queue_name("q").send().await;
    assert_sdk_err!(
        r,
        GetQueueUrlError::QueueDoesNotExist(_),
        "AWS.SimpleQueueService.NonExistentQueue",
        400
    );
}

#[tokio::test]
async fn get_queue_url_and_delete_queue() {
    let server = Server::start();
    let sqs = server.sdk();
    let url = create_queue(&sqs, "gone", &[]).await;
    let got = sqs.get_queue_url().queue_name("gone").send().await.unwrap();
    assert_eq!(got.queue_url(), Some(url.as_str()));
    // The owner account may be given.
    let got = sqs
        .get_queue_url()
        .queue_name("gone")
        .queue_owner_aws_account_id("000000000000")
        .send()
        .await
        .unwrap();
    assert_eq!(got.queue_url(), Some(url.as_str()));

    sqs.delete_queue().queue_url(&url).send().await.unwrap();
    assert_sdk_err!(
        sqs.get_queue_url().queue_name("gone").send().await,
        GetQueueUrlError::QueueDoesNotExist(_),
        "AWS.SimpleQueueService.NonExistentQueue",
        400
    );
    assert_sdk_err!(
        sqs.delete_queue().queue_url(&url).send().await,
        DeleteQueueError::QueueDoesNotExist(_),
        "AWS.SimpleQueueService.NonExistentQueue",
        400
    );
    assert_sdk_err!(
        sqs.get_queue_attributes()
            .queue_url(&url)
            .attribute_names(A::All)
            .send()
            .await,
        GetQueueAttributesError::QueueDoesNotExist(_),
        "AWS.SimpleQueueService.NonExistentQueue",
        400
    );
}

/// CreateQueue: "After you delete a queue, you must wait at least 60 seconds before
/// creating a queue with the same name" (QueueDeletedRecently, 400).
#[tokio::test]
async fn recreate_within_60s_is_queue_deleted_recently() {
    let server = Server::start();
    let sqs = server.sdk();
    let url = create_queue(&sqs, "again", &[]).await;
    sqs.delete_queue().queue_url(&url).send().await.unwrap();
    assert_sdk_err!(
        sqs.create_queue().queue_name("again").send().await,
        CreateQueueError::QueueDeletedRecently(_),
        "AWS.SimpleQueueService.QueueDeletedRecently",
        400
    );
}

#[tokio::test]
async fn list_queues_by_prefix_and_pages() {
    let server = Server::start();
    let sqs = server.sdk();
    // No queues: QueueUrls absent (the SDK shows an empty list).
    let out = sqs.list_queues().send().await.unwrap();
    assert!(out.queue_urls().is_empty());
    assert_eq!(out.next_token(), None);

    for name in ["alpha-1", "alpha-2", "alpha-3", "beta-1"] {
        create_queue(&sqs, name, &[]).await;
    }
    let mut all: Vec<String> = sqs
        .list_queues()
        .send()
        .await
        .unwrap()
        .queue_urls()
        .to_vec();
    all.sort();
    assert_eq!(
        all,
        ["alpha-1", "alpha-2", "alpha-3", "beta-1"]
            .map(|n| server.queue_url(n))
            .to_vec()
    );
    let beta = sqs
        .list_queues()
        .queue_name_prefix("beta")
        .send()
        .await
        .unwrap();
    assert_eq!(beta.queue_urls(), [server.queue_url("beta-1")]);

    // MaxResults pages with NextToken until no token is returned.
    let mut seen = Vec::new();
    let mut token: Option<String> = None;
    for _ in 0..10 {
        let page = sqs
            .list_queues()
            .queue_name_prefix("alpha")
            .max_results(2)
            .set_next_token(token.clone())
            .send()
            .await
            .unwrap();
        assert!(page.queue_urls().len() <= 2);
        seen.extend(page.queue_urls().iter().cloned());
        token = page.next_token().map(str::to_owned);
        if token.is_none() {
            break;
        }
    }
    seen.sort();
    assert_eq!(
        seen,
        ["alpha-1", "alpha-2", "alpha-3"]
            .map(|n| server.queue_url(n))
            .to_vec()
    );
    // MaxResults must be 1..=1000.
    for bad in [0, 1001] {
        let r = sqs.list_queues().max_results(bad).send().await;
        assert_sdk_err!(r, _, "InvalidParameterValue", 400);
    }
}

#[tokio::test]
async fn get_queue_attributes_by_name_and_unknown_names() {
    let server = Server::start();
    let sqs = server.sdk();
    let url = create_queue(&sqs, "attrs", &[("VisibilityTimeout", "31")]).await;
    let out = sqs
        .get_queue_attributes()
        .queue_url(&url)
        .attribute_names(A::VisibilityTimeout)
        .attribute_names(A::QueueArn)
        .send()
        .await
        .unwrap();
    let attrs = out.attributes().unwrap();
    assert_eq!(attrs.len(), 2, "{attrs:?}");
    assert_eq!(attrs[&A::VisibilityTimeout], "31");
    assert_eq!(attrs[&A::QueueArn], server.queue_arn("attrs"));
    // Defaults of attributes never set.
    let out = sqs
        .get_queue_attributes()
        .queue_url(&url)
        .attribute_names(A::DelaySeconds)
        .attribute_names(A::MaximumMessageSize)
        .attribute_names(A::MessageRetentionPeriod)
        .attribute_names(A::ReceiveMessageWaitTimeSeconds)
        .send()
        .await
        .unwrap();
    let attrs = out.attributes().unwrap();
    assert_eq!(attrs[&A::DelaySeconds], "0");
    assert_eq!(attrs[&A::MaximumMessageSize], "1048576");
    assert_eq!(attrs[&A::MessageRetentionPeriod], "345600");
    assert_eq!(attrs[&A::ReceiveMessageWaitTimeSeconds], "0");
    // No names asked: no attributes.
    let out = sqs
        .get_queue_attributes()
        .queue_url(&url)
        .send()
        .await
        .unwrap();
    assert!(out.attributes().is_none_or(HashMap::is_empty));

    assert_sdk_err!(
        sqs.get_queue_attributes()
            .queue_url(&url)
            .attribute_names(A::from("Colour"))
            .send()
            .await,
        GetQueueAttributesError::InvalidAttributeName(_),
        "InvalidAttributeName",
        400
    );
}

#[tokio::test]
async fn set_queue_attributes_changes_and_validates() {
    let server = Server::start();
    let sqs = server.sdk();
    let url = create_queue(&sqs, "settable", &[]).await;
    sqs.set_queue_attributes()
        .queue_url(&url)
        .attributes(A::VisibilityTimeout, "120")
        .attributes(A::DelaySeconds, "5")
        .send()
        .await
        .unwrap();
    let attrs = sqs
        .get_queue_attributes()
        .queue_url(&url)
        .attribute_names(A::All)
        .send()
        .await
        .unwrap()
        .attributes()
        .unwrap()
        .clone();
    assert_eq!(attrs[&A::VisibilityTimeout], "120");
    assert_eq!(attrs[&A::DelaySeconds], "5");

    for (name, value, code) in [
        (A::VisibilityTimeout, "43201", "InvalidAttributeValue"),
        (A::DelaySeconds, "901", "InvalidAttributeValue"),
        (A::from("Colour"), "blue", "InvalidAttributeName"),
        (A::QueueArn, "x", "InvalidAttributeName"),
        // FifoQueue cannot change after creation.
        (A::FifoQueue, "true", "InvalidAttributeName"),
    ] {
        let err = sqs
            .set_queue_attributes()
            .queue_url(&url)
            .attributes(name.clone(), value)
            .send()
            .await
            .expect_err("bad attribute accepted");
        let (got, status) = crate::harness::sdk_error(&err);
        assert_eq!((got.as_str(), status), (code, 400), "{name:?}={value}");
        let e = err.into_service_error();
        match code {
            "InvalidAttributeValue" => {
                assert!(matches!(
                    e,
                    SetQueueAttributesError::InvalidAttributeValue(_)
                ))
            }
            _ => assert!(matches!(
                e,
                SetQueueAttributesError::InvalidAttributeName(_)
            )),
        }
    }
    assert_sdk_err!(
        sqs.set_queue_attributes()
            .queue_url(server.queue_url("nope"))
            .attributes(A::VisibilityTimeout, "1")
            .send()
            .await,
        SetQueueAttributesError::QueueDoesNotExist(_),
        "AWS.SimpleQueueService.NonExistentQueue",
        400
    );
}

#[tokio::test]
async fn redrive_policy_set_read_and_removed() {
    let server = Server::start();
    let sqs = server.sdk();
    create_queue(&sqs, "dlq", &[]).await;
    let url = create_queue(&sqs, "src", &[]).await;
    let policy = format!(
        r#"{{"deadLetterTargetArn":"{}","maxReceiveCount":"3"}}"#,
        server.queue_arn("dlq")
    );
    sqs.set_queue_attributes()
        .queue_url(&url)
        .attributes(A::RedrivePolicy, &policy)
        .send()
        .await
        .unwrap();
    let attrs = sqs
        .get_queue_attributes()
        .queue_url(&url)
        .attribute_names(A::RedrivePolicy)
        .send()
        .await
        .unwrap()
        .attributes()
        .unwrap()
        .clone();
    let read: Value = serde_json::from_str(&attrs[&A::RedrivePolicy]).unwrap();
    assert_eq!(read["deadLetterTargetArn"], server.queue_arn("dlq"));
    // AWS answers maxReceiveCount as a number whatever form it was given in.
    assert_eq!(read["maxReceiveCount"], 3);

    let sources = sqs
        .list_dead_letter_source_queues()
        .queue_url(server.queue_url("dlq"))
        .send()
        .await
        .unwrap();
    assert_eq!(sources.queue_urls(), std::slice::from_ref(&url));

    // A missing target, a bad count.
    for bad in [
        format!(
            r#"{{"deadLetterTargetArn":"{}","maxReceiveCount":3}}"#,
            server.queue_arn("missing")
        ),
        format!(
            r#"{{"deadLetterTargetArn":"{}","maxReceiveCount":0}}"#,
            server.queue_arn("dlq")
        ),
        "not json".to_owned(),
    ] {
        let err = sqs
            .set_queue_attributes()
            .queue_url(&url)
            .attributes(A::RedrivePolicy, bad.clone())
            .send()
            .await
            .expect_err("bad RedrivePolicy accepted");
        let (_, status) = crate::harness::sdk_error(&err);
        assert_eq!(status, 400, "{bad}: {err:?}");
    }

    // An empty RedrivePolicy removes it.
    sqs.set_queue_attributes()
        .queue_url(&url)
        .attributes(A::RedrivePolicy, "")
        .send()
        .await
        .unwrap();
    let out = sqs
        .get_queue_attributes()
        .queue_url(&url)
        .attribute_names(A::RedrivePolicy)
        .send()
        .await
        .unwrap();
    assert!(out
        .attributes()
        .is_none_or(|a| !a.contains_key(&A::RedrivePolicy)));
    let sources = sqs
        .list_dead_letter_source_queues()
        .queue_url(server.queue_url("dlq"))
        .send()
        .await
        .unwrap();
    assert!(sources.queue_urls().is_empty());
    assert_sdk_err!(
        sqs.list_dead_letter_source_queues()
            .queue_url(server.queue_url("nope"))
            .send()
            .await,
        ListDeadLetterSourceQueuesError::QueueDoesNotExist(_),
        "AWS.SimpleQueueService.NonExistentQueue",
        400
    );
}

#[tokio::test]
async fn list_dead_letter_source_queues_pages() {
    let server = Server::start();
    let sqs = server.sdk();
    create_queue(&sqs, "dlq", &[]).await;
    let policy = format!(
        r#"{{"deadLetterTargetArn":"{}","maxReceiveCount":5}}"#,
        server.queue_arn("dlq")
    );
    for n in ["s1", "s2", "s3"] {
        create_queue(&sqs, n, &[("RedrivePolicy", &policy)]).await;
    }
    let mut seen = Vec::new();
    let mut token: Option<String> = None;
    for _ in 0..5 {
        let page = sqs
            .list_dead_letter_source_queues()
            .queue_url(server.queue_url("dlq"))
            .max_results(2)
            .set_next_token(token.clone())
            .send()
            .await
            .unwrap();
        assert!(page.queue_urls().len() <= 2);
        seen.extend(page.queue_urls().iter().cloned());
        token = page.next_token().map(str::to_owned);
        if token.is_none() {
            break;
        }
    }
    seen.sort();
    assert_eq!(
        seen,
        ["s1", "s2", "s3"].map(|n| server.queue_url(n)).to_vec()
    );
}

#[tokio::test]
async fn tag_untag_and_list_tags() {
    let server = Server::start();
    let sqs = server.sdk();
    let url = create_queue(&sqs, "tagged", &[]).await;
    let tags = sqs.list_queue_tags().queue_url(&url).send().await.unwrap();
    assert!(tags.tags().is_none_or(HashMap::is_empty));

    sqs.tag_queue()
        .queue_url(&url)
        .tags("a", "1")
        .tags("b", "2")
        .send()
        .await
        .unwrap();
    // Tagging an existing key replaces its value.
    sqs.tag_queue()
        .queue_url(&url)
        .tags("a", "3")
        .send()
        .await
        .unwrap();
    let tags = sqs.list_queue_tags().queue_url(&url).send().await.unwrap();
    assert_eq!(
        tags.tags().unwrap(),
        &HashMap::from([
            ("a".to_owned(), "3".to_owned()),
            ("b".to_owned(), "2".to_owned())
        ])
    );
    sqs.untag_queue()
        .queue_url(&url)
        .tag_keys("a")
        .tag_keys("not-there")
        .send()
        .await
        .unwrap();
    let tags = sqs.list_queue_tags().queue_url(&url).send().await.unwrap();
    assert_eq!(
        tags.tags().unwrap(),
        &HashMap::from([("b".to_owned(), "2".to_owned())])
    );
    assert_sdk_err!(
        sqs.list_queue_tags()
            .queue_url(server.queue_url("nope"))
            .send()
            .await,
        ListQueueTagsError::QueueDoesNotExist(_),
        "AWS.SimpleQueueService.NonExistentQueue",
        400
    );
    let r = sqs
        .tag_queue()
        .queue_url(server.queue_url("nope"))
        .tags("a", "1")
        .send()
        .await;
    assert_sdk_err!(
        r,
        aws_sdk_sqs::operation::tag_queue::TagQueueError::QueueDoesNotExist(_),
        "AWS.SimpleQueueService.NonExistentQueue",
        400
    );
}

#[tokio::test]
async fn add_and_remove_permission() {
    let server = Server::start();
    let sqs = server.sdk();
    let url = create_queue(&sqs, "shared", &[]).await;
    sqs.add_permission()
        .queue_url(&url)
        .label("let-them-send")
        .aws_account_ids("111122223333")
        .actions("SendMessage")
        .actions("ReceiveMessage")
        .send()
        .await
        .unwrap();
    let policy = sqs
        .get_queue_attributes()
        .queue_url(&url)
        .attribute_names(A::Policy)
        .send()
        .await
        .unwrap()
        .attributes()
        .unwrap()[&A::Policy]
        .clone();
    let policy: Value = serde_json::from_str(&policy).unwrap();
    let statements = policy["Statement"].as_array().unwrap();
    assert_eq!(statements.len(), 1);
    assert_eq!(statements[0]["Sid"], "let-them-send");
    assert_eq!(statements[0]["Effect"], "Allow");
    assert_eq!(statements[0]["Resource"], server.queue_arn("shared"));
    assert_eq!(
        statements[0]["Principal"]["AWS"],
        "arn:aws:iam::111122223333:root"
    );
    assert_eq!(
        statements[0]["Action"],
        serde_json::json!(["SQS:SendMessage", "SQS:ReceiveMessage"])
    );
    // The same label twice is invalid.
    let r = sqs
        .add_permission()
        .queue_url(&url)
        .label("let-them-send")
        .aws_account_ids("111122223333")
        .actions("SendMessage")
        .send()
        .await;
    assert_sdk_err!(r, _, "InvalidParameterValue", 400);

    sqs.remove_permission()
        .queue_url(&url)
        .label("let-them-send")
        .send()
        .await
        .unwrap();
    let out = sqs
        .get_queue_attributes()
        .queue_url(&url)
        .attribute_names(A::Policy)
        .send()
        .await
        .unwrap();
    assert!(out.attributes().is_none_or(|a| !a.contains_key(&A::Policy)));
    // Removing an unknown label is invalid.
    let r = sqs
        .remove_permission()
        .queue_url(&url)
        .label("never")
        .send()
        .await;
    assert_sdk_err!(r, _, "InvalidParameterValue", 400);
    let r = sqs
        .remove_permission()
        .queue_url(server.queue_url("nope"))
        .label("never")
        .send()
        .await;
    assert_sdk_err!(
        r,
        aws_sdk_sqs::operation::remove_permission::RemovePermissionError::QueueDoesNotExist(_),
        "AWS.SimpleQueueService.NonExistentQueue",
        400
    );
}

#[tokio::test]
async fn fifo_queue_creation_rules() {
    let server = Server::start();
    let sqs = server.sdk();
    let url = create_queue(
        &sqs,
        "jobs.fifo",
        &[("FifoQueue", "true"), ("ContentBasedDeduplication", "true")],
    )
    .await;
    assert_eq!(url, server.queue_url("jobs.fifo"));
    let attrs = sqs
        .get_queue_attributes()
        .queue_url(&url)
        .attribute_names(A::All)
        .send()
        .await
        .unwrap()
        .attributes()
        .unwrap()
        .clone();
    assert_eq!(attrs[&A::FifoQueue], "true");
    assert_eq!(attrs[&A::ContentBasedDeduplication], "true");
    // A FIFO queue's name must end in .fifo, and only a FIFO queue's may.
    let r = sqs
        .create_queue()
        .queue_name("jobs")
        .attributes(A::FifoQueue, "true")
        .send()
        .await;
    assert_sdk_err!(r, _, "InvalidParameterValue", 400);
    let r = sqs.create_queue().queue_name("plain.fifo").send().await;
    assert_sdk_err!(r, _, "InvalidParameterValue", 400);
    // FIFO-only attributes on a standard queue.
    let r = sqs
        .create_queue()
        .queue_name("plain")
        .attributes(A::ContentBasedDeduplication, "true")
        .send()
        .await;
    assert_sdk_err!(
        r,
        CreateQueueError::InvalidAttributeName(_),
        "InvalidAttributeName",
        400
    );
}

/// AddPermission's ActionName must name an SQS action (`*`, `SendMessage`, ...); AWS
/// rejects others with InvalidParameterValue.
#[tokio::test]
async fn add_permission_rejects_unknown_actions() {
    let server = Server::start();
    let sqs = server.sdk();
    let url = create_queue(&sqs, "shared", &[]).await;
    let r = sqs
        .add_permission()
        .queue_url(&url)
        .label("l")
        .aws_account_ids("111122223333")
        .actions("FlyToTheMoon")
        .send()
        .await;
    assert_sdk_err!(r, _, "InvalidParameterValue", 400);
}

/// RedriveAllowPolicy `denyAll`: "No source queues can specify this queue as the
/// dead-letter queue"; `byQueue` allows only the listed source queues.
#[tokio::test]
async fn redrive_allow_policy_is_enforced() {
    let server = Server::start();
    let sqs = server.sdk();
    create_queue(
        &sqs,
        "closed-dlq",
        &[("RedriveAllowPolicy", r#"{"redrivePermission":"denyAll"}"#)],
    )
    .await;
    let policy = format!(
        r#"{{"deadLetterTargetArn":"{}","maxReceiveCount":3}}"#,
        server.queue_arn("closed-dlq")
    );
    let r = sqs
        .create_queue()
        .queue_name("src")
        .attributes(A::RedrivePolicy, policy)
        .send()
        .await;
    assert_sdk_err!(r, _, "InvalidParameterValue", 400);
}

/// FifoThroughputLimit `perMessageGroupId` is allowed only with DeduplicationScope
/// `messageGroup` (SQS API Reference, SetQueueAttributes), at create and on the merged
/// attributes of a set; the high-throughput pair is accepted and reported.
#[tokio::test]
async fn per_group_throughput_needs_message_group_deduplication() {
    use aws_sdk_sqs::types::QueueAttributeName as A;
    let server = Server::start();
    let sqs = server.sdk();
    let e = assert_sdk_err!(
        sqs.create_queue()
            .queue_name("tp.fifo")
            .attributes(A::FifoQueue, "true")
            .attributes(A::FifoThroughputLimit, "perMessageGroupId")
            .send()
            .await,
        _,
        "InvalidAttributeValue",
        400
    );
    assert!(
        e.to_string().contains("DeduplicationScope")
            || format!("{e:?}").contains("DeduplicationScope"),
        "{e:?}"
    );
    let url = crate::create_queue(
        &sqs,
        "tp.fifo",
        &[
            ("FifoQueue", "true"),
            ("DeduplicationScope", "messageGroup"),
            ("FifoThroughputLimit", "perMessageGroupId"),
        ],
    )
    .await;
    let attrs = sqs
        .get_queue_attributes()
        .queue_url(&url)
        .attribute_names(A::All)
        .send()
        .await
        .expect("GetQueueAttributes");
    let attrs = attrs.attributes().unwrap();
    assert_eq!(attrs[&A::FifoThroughputLimit], "perMessageGroupId");
    assert_eq!(attrs[&A::DeduplicationScope], "messageGroup");
    assert_sdk_err!(
        sqs.set_queue_attributes()
            .queue_url(&url)
            .attributes(A::DeduplicationScope, "queue")
            .send()
            .await,
        SetQueueAttributesError::InvalidAttributeValue(_),
        "InvalidAttributeValue",
        400
    );
    // Both back to normal throughput at once is fine.
    sqs.set_queue_attributes()
        .queue_url(&url)
        .attributes(A::DeduplicationScope, "queue")
        .attributes(A::FifoThroughputLimit, "perQueue")
        .send()
        .await
        .expect("SetQueueAttributes");
}
