//! The state that once lived in a node's memory, each piece tried as a user
//! would with the real SDKs: FIFO topic deduplication (per topic and per message group)
//! and SequenceNumbers, the PurgeQueue and DeleteQueue 60-second holds, FIFO receive
//! attempts, message-move tasks, mobile push platforms, and the queue cap's count.
//!
//! Each scenario is two phases with a state between them. The tests here run the first
//! phase, restart Loft (SIGTERM, then a new process on the same SQLite file) and run the
//! second; `multinode.rs` runs the same phases through two nodes on one PostgreSQL
//! database. Either way the second phase expects the answers one process gives when
//! nothing happens in between (AWS's: SQS API Reference PurgeQueue, DeleteQueue,
//! ReceiveMessage `ReceiveRequestAttemptId`, StartMessageMoveTask, ListMessageMoveTasks,
//! CancelMessageMoveTask; SNS API Reference Publish `MessageDeduplicationId`,
//! `SequenceNumber`, CreatePlatformEndpoint).

use aws_sdk_sns::error::ProvideErrorMetadata as _;
use aws_sdk_sqs::types::QueueAttributeName;

use crate::common::Loft;

/// The clients of one node (or of one Loft process).
pub struct Clients {
    pub sqs: aws_sdk_sqs::Client,
    pub sns: aws_sdk_sns::Client,
}

impl Clients {
    pub fn of(base: &str) -> Clients {
        Clients {
            sqs: crate::common::sqs_client(base),
            sns: crate::common::sns_client(base),
        }
    }
}

/// How long a scenario waits for a move task to finish (its own rate is a few seconds;
/// a takeover adds a poll of the server's, 2 s).
const MOVE_PATIENCE: std::time::Duration = std::time::Duration::from_secs(40);

const ACCOUNT: &str = "000000000000";

fn queue_arn(name: &str) -> String {
    format!("arn:aws:sqs:us-east-1:{ACCOUNT}:{name}")
}

async fn create_queue(c: &Clients, name: &str, attrs: &[(&str, &str)]) -> String {
    let mut req = c.sqs.create_queue().queue_name(name);
    for (k, v) in attrs {
        req = req.attributes(QueueAttributeName::from(*k), *v);
    }
    req.send()
        .await
        .unwrap_or_else(|e| panic!("CreateQueue {name}: {e:?}"))
        .queue_url()
        .expect("QueueUrl")
        .to_owned()
}

async fn url(c: &Clients, name: &str) -> String {
    c.sqs
        .get_queue_url()
        .queue_name(name)
        .send()
        .await
        .unwrap_or_else(|e| panic!("GetQueueUrl {name}: {e:?}"))
        .queue_url()
        .expect("QueueUrl")
        .to_owned()
}

pub async fn visible(c: &Clients, name: &str) -> i64 {
    let out = c
        .sqs
        .get_queue_attributes()
        .queue_url(url(c, name).await)
        .attribute_names(QueueAttributeName::ApproximateNumberOfMessages)
        .send()
        .await
        .expect("GetQueueAttributes");
    out.attributes()
        .and_then(|a| a.get(&QueueAttributeName::ApproximateNumberOfMessages))
        .expect("ApproximateNumberOfMessages")
        .parse()
        .expect("a number")
}

/// Receives and deletes until the queue answers empty; the bodies in the order received.
async fn drain(c: &Clients, name: &str) -> Vec<String> {
    let u = url(c, name).await;
    let mut bodies = Vec::new();
    loop {
        let got = c
            .sqs
            .receive_message()
            .queue_url(&u)
            .max_number_of_messages(10)
            .visibility_timeout(60)
            .send()
            .await
            .expect("ReceiveMessage");
        if got.messages().is_empty() {
            return bodies;
        }
        for m in got.messages() {
            bodies.push(m.body().unwrap_or_default().to_owned());
            c.sqs
                .delete_message()
                .queue_url(&u)
                .receipt_handle(m.receipt_handle().expect("handle"))
                .send()
                .await
                .expect("DeleteMessage");
        }
    }
}

// ----- FIFO topics: deduplication (both scopes) and SequenceNumber

/// What phase one of the FIFO topic scenario published.
pub struct TopicState {
    topic: String,
    whole: String,
    a: (String, u128),
    y: (String, u128),
}

async fn create_topic(c: &Clients, name: &str, attrs: &[(&str, &str)]) -> String {
    let mut req = c.sns.create_topic().name(name);
    for (k, v) in attrs {
        req = req.attributes(*k, *v);
    }
    req.send()
        .await
        .unwrap_or_else(|e| panic!("CreateTopic {name}: {e:?}"))
        .topic_arn()
        .expect("TopicArn")
        .to_owned()
}

async fn publish(c: &Clients, topic: &str, body: &str, group: &str, dedup: &str) -> (String, u128) {
    let out = c
        .sns
        .publish()
        .topic_arn(topic)
        .message(body)
        .message_group_id(group)
        .message_deduplication_id(dedup)
        .send()
        .await
        .unwrap_or_else(|e| panic!("Publish {body}: {e:?}"));
    (
        out.message_id().expect("MessageId").to_owned(),
        out.sequence_number()
            .expect("SequenceNumber")
            .parse()
            .expect("a number"),
    )
}

pub async fn fifo_topic_before(c: &Clients) -> TopicState {
    let topic = create_topic(
        c,
        "prices.fifo",
        &[
            ("FifoTopic", "true"),
            ("FifoThroughputScope", "MessageGroup"),
        ],
    )
    .await;
    create_queue(
        c,
        "prices.fifo",
        &[
            ("FifoQueue", "true"),
            ("DeduplicationScope", "messageGroup"),
        ],
    )
    .await;
    let sub = c
        .sns
        .subscribe()
        .topic_arn(&topic)
        .protocol("sqs")
        .endpoint(queue_arn("prices.fifo"))
        .attributes("RawMessageDelivery", "true")
        .send()
        .await
        .expect("Subscribe");
    assert!(sub.subscription_arn().is_some());
    let a = publish(c, &topic, "a", "g1", "X1").await;
    let whole = create_topic(c, "whole.fifo", &[("FifoTopic", "true")]).await;
    let y = publish(c, &whole, "y", "g1", "Y").await;
    TopicState { topic, whole, a, y }
}

pub async fn fifo_topic_after(c: &Clients, s: TopicState) {
    // The retry inside the 5-minute window: the first publish's answer, no second copy.
    let again = publish(c, &s.topic, "a again", "g1", "X1").await;
    assert_eq!(again, s.a, "a retry of X1 is the first publish");
    // MessageGroup scope: the same id in another group is another message.
    let b = publish(c, &s.topic, "b", "g2", "X1").await;
    assert_ne!(b.0, s.a.0);
    let c2 = publish(c, &s.topic, "c", "g1", "X2").await;
    assert!(
        s.a.1 < b.1 && b.1 < c2.1,
        "SequenceNumbers increase: {} {} {}",
        s.a.1,
        b.1,
        c2.1
    );
    let mut got = drain(c, "prices.fifo").await;
    got.sort();
    assert_eq!(got, ["a", "b", "c"], "one copy of each, none of the retry");
    // Topic scope (the default): the same id in another group is a duplicate.
    let other_group = publish(c, &s.whole, "y in g2", "g2", "Y").await;
    assert_eq!(other_group, s.y);
}

// ----- PurgeQueue and DeleteQueue holds

pub async fn holds_before(c: &Clients) {
    let p = create_queue(c, "purged", &[]).await;
    c.sqs
        .send_message()
        .queue_url(&p)
        .message_body("x")
        .send()
        .await
        .expect("SendMessage");
    c.sqs
        .purge_queue()
        .queue_url(&p)
        .send()
        .await
        .expect("PurgeQueue");
    let g = create_queue(c, "gone", &[]).await;
    c.sqs
        .delete_queue()
        .queue_url(&g)
        .send()
        .await
        .expect("DeleteQueue");
}

pub async fn holds_after(c: &Clients) {
    let p = url(c, "purged").await;
    let err = c
        .sqs
        .purge_queue()
        .queue_url(&p)
        .send()
        .await
        .expect_err("a second purge inside 60 s");
    assert_eq!(
        err.code(),
        Some("AWS.SimpleQueueService.PurgeQueueInProgress"),
        "{err:?}"
    );
    let err = c
        .sqs
        .create_queue()
        .queue_name("gone")
        .send()
        .await
        .expect_err("re-creating inside 60 s");
    assert_eq!(
        err.code(),
        Some("AWS.SimpleQueueService.QueueDeletedRecently"),
        "{err:?}"
    );
}

// ----- FIFO receive attempts

/// The first receive's (MessageId, ReceiptHandle) pairs.
pub struct AttemptState(Vec<(String, String)>);

async fn receive_attempt(c: &Clients, attempt: &str) -> Vec<(String, String)> {
    let got = c
        .sqs
        .receive_message()
        .queue_url(url(c, "jobs.fifo").await)
        .max_number_of_messages(10)
        .visibility_timeout(120)
        .receive_request_attempt_id(attempt)
        .send()
        .await
        .expect("ReceiveMessage");
    got.messages()
        .iter()
        .map(|m| {
            (
                m.message_id().expect("id").to_owned(),
                m.receipt_handle().expect("handle").to_owned(),
            )
        })
        .collect()
}

pub async fn attempt_before(c: &Clients) -> AttemptState {
    let u = create_queue(c, "jobs.fifo", &[("FifoQueue", "true")]).await;
    for (body, dedup) in [("a1", "1"), ("a2", "2")] {
        c.sqs
            .send_message()
            .queue_url(&u)
            .message_body(body)
            .message_group_id("g")
            .message_deduplication_id(dedup)
            .send()
            .await
            .expect("SendMessage");
    }
    let first = receive_attempt(c, "try-1").await;
    assert_eq!(first.len(), 2);
    AttemptState(first)
}

pub async fn attempt_after(c: &Clients, s: AttemptState) {
    let retry = receive_attempt(c, "try-1").await;
    assert_eq!(
        retry, s.0,
        "the retry gets the first receive's messages and handles"
    );
    assert!(
        receive_attempt(c, "try-2").await.is_empty(),
        "another attempt: the group is in flight"
    );
    let u = url(c, "jobs.fifo").await;
    for (_, handle) in &retry {
        c.sqs
            .delete_message()
            .queue_url(&u)
            .receipt_handle(handle)
            .send()
            .await
            .expect("the handles are current");
    }
}

// ----- message-move tasks

/// The handles of phase one's tasks.
pub struct MoveState {
    cancelled: String,
    cancelled_moved: i64,
}

/// A source queue `src` with dead-letter queue `dlq` (maxReceiveCount 1) holding `n`
/// dead-lettered messages.
pub async fn dead_letters(c: &Clients, src: &str, dlq: &str, n: usize) {
    create_queue(c, dlq, &[]).await;
    let policy = format!(
        r#"{{"deadLetterTargetArn":"{}","maxReceiveCount":"1"}}"#,
        queue_arn(dlq)
    );
    let s = create_queue(c, src, &[("RedrivePolicy", &policy)]).await;
    for i in 0..n {
        c.sqs
            .send_message()
            .queue_url(&s)
            .message_body(format!("{src}-{i}"))
            .send()
            .await
            .expect("SendMessage");
    }
    // Received once with a zero visibility timeout, each moves on its next receive.
    let mut received = 0;
    while received < n {
        let got = c
            .sqs
            .receive_message()
            .queue_url(&s)
            .max_number_of_messages(10)
            .visibility_timeout(0)
            .send()
            .await
            .expect("ReceiveMessage");
        received += got.messages().len();
        assert!(!got.messages().is_empty(), "{src}: only {received} of {n}");
    }
    let again = c
        .sqs
        .receive_message()
        .queue_url(&s)
        .max_number_of_messages(10)
        .send()
        .await
        .expect("ReceiveMessage");
    assert!(again.messages().is_empty(), "all moved to {dlq}");
    assert_eq!(visible(c, dlq).await, n as i64);
}

pub async fn start_task(c: &Clients, dlq: &str, rate: i32) -> String {
    c.sqs
        .start_message_move_task()
        .source_arn(queue_arn(dlq))
        .max_number_of_messages_per_second(rate)
        .send()
        .await
        .expect("StartMessageMoveTask")
        .task_handle()
        .expect("TaskHandle")
        .to_owned()
}

/// The newest task of `dlq`: (status, moved, handle).
pub async fn newest_task(c: &Clients, dlq: &str) -> (String, i64, Option<String>) {
    let out = c
        .sqs
        .list_message_move_tasks()
        .source_arn(queue_arn(dlq))
        .send()
        .await
        .expect("ListMessageMoveTasks");
    let t = out.results().first().expect("a task");
    (
        t.status().expect("Status").to_owned(),
        t.approximate_number_of_messages_moved(),
        t.task_handle().map(str::to_owned),
    )
}

/// Waits for the newest task of `dlq` to complete; asserts it moved `n`.
pub async fn task_completes(c: &Clients, dlq: &str, n: i64) {
    let completed = crate::wait::until(MOVE_PATIENCE, || async {
        let (status, moved, _) = newest_task(c, dlq).await;
        if status == "COMPLETED" {
            assert_eq!(moved, n, "{dlq}: moved");
            return true;
        }
        assert_eq!(status, "RUNNING", "{dlq}");
        false
    })
    .await;
    let (status, moved, _) = newest_task(c, dlq).await;
    assert!(
        completed,
        "{dlq}: still {status} after {MOVE_PATIENCE:?}, {moved} moved"
    );
}

pub async fn move_before(c: &Clients) -> MoveState {
    // A slow task (1 a second) over 4 messages runs across the restart or the node change.
    dead_letters(c, "orders", "orders-dlq", 4).await;
    start_task(c, "orders-dlq", 1).await;
    // Another task cancelled before the restart: it stays cancelled, with what it moved.
    dead_letters(c, "billing", "billing-dlq", 3).await;
    let handle = start_task(c, "billing-dlq", 1).await;
    let cancelled = c
        .sqs
        .cancel_message_move_task()
        .task_handle(&handle)
        .send()
        .await
        .expect("CancelMessageMoveTask");
    let cancelled_moved = cancelled.approximate_number_of_messages_moved();
    // A cancel commits after any step of the task's: what it reports is what moved.
    assert_eq!(visible(c, "billing").await, cancelled_moved);
    MoveState {
        cancelled: handle,
        cancelled_moved,
    }
}

pub async fn move_after(c: &Clients, s: MoveState) {
    task_completes(c, "orders-dlq", 4).await;
    let mut back = drain(c, "orders").await;
    back.sort();
    assert_eq!(back, ["orders-0", "orders-1", "orders-2", "orders-3"]);
    assert_eq!(visible(c, "orders-dlq").await, 0);
    let (status, moved, handle) = newest_task(c, "billing-dlq").await;
    assert_eq!(
        (status.as_str(), moved, handle),
        ("CANCELLED", s.cancelled_moved, None)
    );
    assert_eq!(visible(c, "billing").await, s.cancelled_moved);
    assert_eq!(visible(c, "billing-dlq").await, 3 - s.cancelled_moved);
    let err = c
        .sqs
        .cancel_message_move_task()
        .task_handle(&s.cancelled)
        .send()
        .await
        .expect_err("no longer running");
    assert_eq!(err.code(), Some("ResourceNotFoundException"), "{err:?}");
}

// ----- mobile push platforms

/// Phase one's application and endpoint ARNs.
pub struct PlatformState {
    app: String,
    endpoint: String,
}

pub async fn platform_before(c: &Clients) -> PlatformState {
    let app = c
        .sns
        .create_platform_application()
        .name("phones")
        .platform("GCM")
        .attributes("PlatformCredential", "key")
        .attributes("PlatformPrincipal", "sender")
        .send()
        .await
        .expect("CreatePlatformApplication")
        .platform_application_arn()
        .expect("arn")
        .to_owned();
    let endpoint = c
        .sns
        .create_platform_endpoint()
        .platform_application_arn(&app)
        .token("device-1")
        .send()
        .await
        .expect("CreatePlatformEndpoint")
        .endpoint_arn()
        .expect("arn")
        .to_owned();
    PlatformState { app, endpoint }
}

pub async fn platform_after(c: &Clients, s: PlatformState) {
    let apps = c
        .sns
        .list_platform_applications()
        .send()
        .await
        .expect("ListPlatformApplications");
    let arns: Vec<&str> = apps
        .platform_applications()
        .iter()
        .filter_map(|a| a.platform_application_arn())
        .collect();
    assert_eq!(arns, [s.app.as_str()]);
    // The same token: the endpoint it has.
    let again = c
        .sns
        .create_platform_endpoint()
        .platform_application_arn(&s.app)
        .token("device-1")
        .send()
        .await
        .expect("CreatePlatformEndpoint");
    assert_eq!(again.endpoint_arn(), Some(s.endpoint.as_str()));
    let attrs = c
        .sns
        .get_endpoint_attributes()
        .endpoint_arn(&s.endpoint)
        .send()
        .await
        .expect("GetEndpointAttributes");
    let attrs = attrs.attributes().expect("attributes");
    assert_eq!(attrs.get("Token").map(String::as_str), Some("device-1"));
    assert_eq!(attrs.get("Enabled").map(String::as_str), Some("true"));
    // A publish to the endpoint is recorded, as before.
    c.sns
        .publish()
        .target_arn(&s.endpoint)
        .message("hello phone")
        .send()
        .await
        .expect("Publish to the endpoint");
    // Disabled, it refuses a publish with AWS's EndpointDisabled (SNS API Reference,
    // Publish), seen by every node and after a restart since the flag is stored.
    c.sns
        .set_endpoint_attributes()
        .endpoint_arn(&s.endpoint)
        .attributes("Enabled", "false")
        .send()
        .await
        .expect("SetEndpointAttributes");
    let err = c
        .sns
        .publish()
        .target_arn(&s.endpoint)
        .message("hello phone")
        .send()
        .await
        .expect_err("a disabled endpoint");
    assert_eq!(err.code(), Some("EndpointDisabled"), "{err:?}");
    assert_eq!(err.message(), Some("Endpoint is disabled"), "{err:?}");
    c.sns
        .delete_platform_application()
        .platform_application_arn(&s.app)
        .send()
        .await
        .expect("DeletePlatformApplication");
    let err = c
        .sns
        .get_endpoint_attributes()
        .endpoint_arn(&s.endpoint)
        .send()
        .await
        .expect_err("gone with its application");
    assert_eq!(err.code(), Some("NotFound"), "{err:?}");
}

// ----- the tests: restart on the same SQLite file

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifo_topic_deduplication_and_sequence_numbers_survive_a_restart() {
    let mut loft = Loft::start();
    let s = fifo_topic_before(&Clients::of(&loft.base)).await;
    loft.restart();
    fifo_topic_after(&Clients::of(&loft.base), s).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn purge_and_delete_holds_survive_a_restart() {
    let mut loft = Loft::start();
    holds_before(&Clients::of(&loft.base)).await;
    loft.restart();
    holds_after(&Clients::of(&loft.base)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fifo_receive_attempt_is_replayed_after_a_restart() {
    let mut loft = Loft::start();
    let s = attempt_before(&Clients::of(&loft.base)).await;
    loft.restart();
    attempt_after(&Clients::of(&loft.base), s).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn move_tasks_resume_and_stay_cancelled_after_a_restart() {
    let mut loft = Loft::start();
    let s = move_before(&Clients::of(&loft.base)).await;
    loft.restart();
    move_after(&Clients::of(&loft.base), s).await;
}

/// After a kill -9 the task's lease is not given up: the restarted Loft takes the task
/// over once the lease has run out (10 s) and completes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_task_resumes_after_a_crash_once_its_lease_ends() {
    let mut loft = Loft::start();
    let s = move_before(&Clients::of(&loft.base)).await;
    loft.crash_and_restart();
    move_after(&Clients::of(&loft.base), s).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn platform_applications_and_endpoints_survive_a_restart() {
    let mut loft = Loft::start();
    let s = platform_before(&Clients::of(&loft.base)).await;
    loft.restart();
    platform_after(&Clients::of(&loft.base), s).await;
}

/// The queue cap's count is rebuilt from the store: after a restart it counts the queues
/// the database holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_queue_cap_counts_the_stored_queues_after_a_restart() {
    let mut loft = Loft::start_with(&["--max-queues", "2"]);
    let c = Clients::of(&loft.base);
    create_queue(&c, "one", &[]).await;
    create_queue(&c, "two", &[]).await;
    loft.restart();
    let c = Clients::of(&loft.base);
    let err = c
        .sqs
        .create_queue()
        .queue_name("three")
        .send()
        .await
        .expect_err("the cap counts the queues made before the restart");
    assert_eq!(err.code(), Some("OverLimit"), "{err:?}");
    // An existing queue is still answered at the cap.
    create_queue(&c, "two", &[]).await;
}
