//! Regions, over real HTTP with aws-sdk-rust clients signing for different regions: one
//! name in two regions is two queues and two topics, each region lists and resolves only
//! its own, URLs and ARNs name their region, a topic delivers to a queue of another region,
//! the topic operations SNS refuses across regions are refused with its error, and
//! regional resources survive a restart. The two-node PostgreSQL case is in
//! `multinode.rs` (it uses [`before`] and [`after`]).
//!
//! Also the accounts a single-account Loft does not have: a queue URL, a queue owner or a
//! topic ARN naming another account names nothing, as on AWS.

use aws_sdk_sns::error::ProvideErrorMetadata as _;
use aws_sdk_sqs::types::QueueAttributeName;

use crate::common::{sns_client_in, sqs_client_in, Loft};

const ACCOUNT: &str = "000000000000";
const HOME: &str = "us-east-1";
const AWAY: &str = "eu-central-1";

/// The clients of one region.
struct Region {
    sqs: aws_sdk_sqs::Client,
    sns: aws_sdk_sns::Client,
}

fn region(base: &str, name: &str) -> Region {
    Region {
        sqs: sqs_client_in(base, name),
        sns: sns_client_in(base, name),
    }
}

async fn create_queue(r: &Region, name: &str) -> String {
    r.sqs
        .create_queue()
        .queue_name(name)
        .send()
        .await
        .expect("CreateQueue")
        .queue_url()
        .expect("QueueUrl")
        .to_owned()
}

async fn queue_arn(r: &Region, url: &str) -> String {
    let out = r
        .sqs
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(QueueAttributeName::QueueArn)
        .send()
        .await
        .expect("GetQueueAttributes");
    out.attributes()
        .and_then(|a| a.get(&QueueAttributeName::QueueArn))
        .expect("QueueArn")
        .clone()
}

async fn list_queues(r: &Region) -> Vec<String> {
    r.sqs
        .list_queues()
        .send()
        .await
        .expect("ListQueues")
        .queue_urls()
        .to_vec()
}

async fn list_topics(r: &Region) -> Vec<String> {
    r.sns
        .list_topics()
        .send()
        .await
        .expect("ListTopics")
        .topics()
        .iter()
        .filter_map(|t| t.topic_arn().map(str::to_owned))
        .collect()
}

async fn receive_bodies(r: &Region, url: &str) -> Vec<String> {
    r.sqs
        .receive_message()
        .queue_url(url)
        .max_number_of_messages(10)
        .wait_time_seconds(5)
        .send()
        .await
        .expect("ReceiveMessage")
        .messages()
        .iter()
        .filter_map(|m| m.body().map(str::to_owned))
        .collect()
}

fn sqs_code<E: aws_sdk_sqs::error::ProvideErrorMetadata>(e: &E) -> Option<&str> {
    e.code()
}

/// What [`before`] made, for [`after`].
pub struct Made {
    home_url: String,
    away_url: String,
    home_topic: String,
    away_topic: String,
}

impl Made {
    /// The same resources, their queue URLs made for Loft at `to` instead of `from`
    /// (another port after a restart, another node).
    pub fn rebased(self, from: &str, to: &str) -> Made {
        Made {
            home_url: self.home_url.replacen(from, to, 1),
            away_url: self.away_url.replacen(from, to, 1),
            ..self
        }
    }
}

/// Makes queue `orders` and topic `events` in both regions, a message in each queue, and
/// checks what each region sees.
pub async fn before(base: &str) -> Made {
    let (home, away) = (region(base, HOME), region(base, AWAY));
    let home_url = create_queue(&home, "orders").await;
    let away_url = create_queue(&away, "orders").await;
    assert_eq!(home_url, format!("{base}/{ACCOUNT}/orders"));
    assert_eq!(away_url, format!("{base}/queue/{AWAY}/{ACCOUNT}/orders"));
    for (r, url, body) in [(&home, &home_url, "to home"), (&away, &away_url, "to away")] {
        r.sqs
            .send_message()
            .queue_url(url)
            .message_body(body)
            .send()
            .await
            .expect("SendMessage");
    }
    let home_topic = home
        .sns
        .create_topic()
        .name("events")
        .send()
        .await
        .expect("CreateTopic")
        .topic_arn()
        .expect("TopicArn")
        .to_owned();
    let away_topic = away
        .sns
        .create_topic()
        .name("events")
        .send()
        .await
        .expect("CreateTopic")
        .topic_arn()
        .expect("TopicArn")
        .to_owned();
    assert_eq!(home_topic, format!("arn:aws:sns:{HOME}:{ACCOUNT}:events"));
    assert_eq!(away_topic, format!("arn:aws:sns:{AWAY}:{ACCOUNT}:events"));
    let made = Made {
        home_url,
        away_url,
        home_topic,
        away_topic,
    };
    sees_its_own(base, &made).await;
    made
}

/// Each region still has its own queue (with its own message) and topic.
pub async fn after(base: &str, made: Made) {
    sees_its_own(base, &made).await;
    let (home, away) = (region(base, HOME), region(base, AWAY));
    assert_eq!(receive_bodies(&home, &made.home_url).await, ["to home"]);
    assert_eq!(receive_bodies(&away, &made.away_url).await, ["to away"]);
}

async fn sees_its_own(base: &str, made: &Made) {
    let (home, away) = (region(base, HOME), region(base, AWAY));
    for (r, url, topic, name) in [
        (&home, &made.home_url, &made.home_topic, HOME),
        (&away, &made.away_url, &made.away_topic, AWAY),
    ] {
        let got = r
            .sqs
            .get_queue_url()
            .queue_name("orders")
            .send()
            .await
            .expect("GetQueueUrl");
        assert_eq!(got.queue_url(), Some(url.as_str()), "GetQueueUrl in {name}");
        assert_eq!(list_queues(r).await, [url.as_str()], "ListQueues in {name}");
        assert_eq!(
            queue_arn(r, url).await,
            format!("arn:aws:sqs:{name}:{ACCOUNT}:orders")
        );
        assert_eq!(
            list_topics(r).await,
            [topic.as_str()],
            "ListTopics in {name}"
        );
        let attrs = r
            .sns
            .get_topic_attributes()
            .topic_arn(topic)
            .send()
            .await
            .expect("GetTopicAttributes");
        let attrs = attrs.attributes().expect("attributes");
        assert_eq!(attrs.get("TopicArn"), Some(topic));
    }
}

/// One name in two regions is two queues and two topics; each region lists and resolves
/// its own, and the queue URLs and ARNs name the region.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_name_in_two_regions_is_two_queues_and_two_topics() {
    let loft = Loft::start();
    let base = loft.url("");
    let made = before(&base).await;
    after(&base, made).await;
}

/// The seeds' API and the console work on the default account and region: their lists
/// show that region's queues and topics, not another region's of the same or other names.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_seeds_api_and_the_console_list_the_default_region_only() {
    let loft = Loft::start();
    let base = loft.url("");
    let (home, away) = (region(&base, HOME), region(&base, AWAY));
    create_queue(&home, "shown").await;
    create_queue(&away, "hidden").await;
    for (r, name) in [(&home, "shown-topic"), (&away, "hidden-topic")] {
        r.sns
            .create_topic()
            .name(name)
            .send()
            .await
            .expect("CreateTopic");
    }
    let names = |v: serde_json::Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|e| e.as_str().or(e["name"].as_str()).unwrap().to_owned())
            .collect()
    };
    assert_eq!(names(loft.get("/queues").await.json()), ["shown"]);
    assert_eq!(names(loft.get("/topics").await.json()), ["shown-topic"]);
    assert_eq!(names(loft.get("/_loft/queues").await.json()), ["shown"]);
    assert_eq!(
        names(loft.get("/_loft/topics").await.json()),
        ["shown-topic"]
    );
    // The other region still has them.
    assert_eq!(list_queues(&away).await.len(), 1);
}

/// A queue URL or topic ARN of another region, used by a client signing for this one, is
/// refused as AWS refuses it: SQS's `QueueDoesNotExist`, SNS's `InvalidParameter`
/// "Invalid parameter: TopicArn" for every topic operation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_regions_queue_or_topic_is_refused() {
    let loft = Loft::start();
    let base = loft.url("");
    let (home, away) = (region(&base, HOME), region(&base, AWAY));
    let away_url = create_queue(&away, "far").await;
    let err = home
        .sqs
        .send_message()
        .queue_url(&away_url)
        .message_body("x")
        .send()
        .await
        .expect_err("a queue of another region");
    assert_eq!(
        sqs_code(&err),
        Some("AWS.SimpleQueueService.NonExistentQueue"),
        "{err:?}"
    );
    let err = home
        .sqs
        .get_queue_url()
        .queue_name("far")
        .send()
        .await
        .expect_err("not in this region");
    assert_eq!(
        sqs_code(&err),
        Some("AWS.SimpleQueueService.NonExistentQueue"),
        "{err:?}"
    );

    let topic = home
        .sns
        .create_topic()
        .name("near")
        .send()
        .await
        .expect("CreateTopic")
        .topic_arn()
        .expect("TopicArn")
        .to_owned();
    let publish = away
        .sns
        .publish()
        .topic_arn(&topic)
        .message("m")
        .send()
        .await;
    let get = away
        .sns
        .get_topic_attributes()
        .topic_arn(&topic)
        .send()
        .await;
    let delete = away.sns.delete_topic().topic_arn(&topic).send().await;
    let subscribe = away
        .sns
        .subscribe()
        .topic_arn(&topic)
        .protocol("sqs")
        .endpoint(queue_arn(&away, &away_url).await)
        .send()
        .await;
    /// The error's code and message.
    fn said<E: aws_sdk_sns::error::ProvideErrorMetadata, T>(
        r: Result<T, E>,
    ) -> (Option<String>, Option<String>) {
        match r {
            Ok(_) => (None, None),
            Err(e) => (e.code().map(str::to_owned), e.message().map(str::to_owned)),
        }
    }
    for (op, said) in [
        ("Publish", said(publish)),
        ("GetTopicAttributes", said(get)),
        ("DeleteTopic", said(delete)),
        ("Subscribe", said(subscribe)),
    ] {
        let expected = (
            Some("InvalidParameter".to_owned()),
            Some("Invalid parameter: TopicArn".to_owned()),
        );
        assert_eq!(said, expected, "{op}");
    }
    // Refused, not done: the topic is still there.
    assert_eq!(list_topics(&home).await, [topic]);
}

/// A topic delivers to a subscribed queue of another region, as on AWS; the envelope names
/// the topic's region.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_topic_delivers_to_a_queue_of_another_region() {
    let loft = Loft::start();
    let base = loft.url("");
    let (home, away) = (region(&base, HOME), region(&base, AWAY));
    let topic = home
        .sns
        .create_topic()
        .name("fanout")
        .send()
        .await
        .expect("CreateTopic")
        .topic_arn()
        .expect("TopicArn")
        .to_owned();
    let away_url = create_queue(&away, "inbox").await;
    // The same name at home must not receive it.
    let home_url = create_queue(&home, "inbox").await;
    let arn = queue_arn(&away, &away_url).await;
    assert_eq!(arn, format!("arn:aws:sqs:{AWAY}:{ACCOUNT}:inbox"));
    let sub = home
        .sns
        .subscribe()
        .topic_arn(&topic)
        .protocol("sqs")
        .endpoint(&arn)
        .attributes("RawMessageDelivery", "false")
        .send()
        .await
        .expect("Subscribe");
    assert!(
        sub.subscription_arn()
            .is_some_and(|s| s.starts_with(&format!("{topic}:"))),
        "{sub:?}"
    );
    home.sns
        .publish()
        .topic_arn(&topic)
        .message("across")
        .send()
        .await
        .expect("Publish");
    let bodies = receive_bodies(&away, &away_url).await;
    assert_eq!(bodies.len(), 1, "{bodies:?}");
    let envelope: serde_json::Value = serde_json::from_str(&bodies[0]).expect("JSON envelope");
    assert_eq!(envelope["Message"], "across");
    assert_eq!(envelope["TopicArn"], topic.as_str());
    let none = home
        .sqs
        .receive_message()
        .queue_url(&home_url)
        .send()
        .await
        .expect("ReceiveMessage");
    assert!(none.messages().is_empty(), "{none:?}");
}

/// A RedrivePolicy naming a dead-letter queue of another region is refused: SQS looks for
/// the dead-letter queue in the source queue's region only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_letter_queue_of_another_region_is_refused() {
    let loft = Loft::start();
    let base = loft.url("");
    let (home, away) = (region(&base, HOME), region(&base, AWAY));
    let dlq = create_queue(&away, "dlq").await;
    let dlq_arn = queue_arn(&away, &dlq).await;
    let policy = format!(r#"{{"deadLetterTargetArn":"{dlq_arn}","maxReceiveCount":"2"}}"#);
    let err = home
        .sqs
        .create_queue()
        .queue_name("src")
        .attributes(QueueAttributeName::RedrivePolicy, &policy)
        .send()
        .await
        .expect_err("a dead-letter queue of another region");
    assert_eq!(sqs_code(&err), Some("InvalidParameterValue"), "{err:?}");
    assert!(
        err.message()
            .is_some_and(|m| m.ends_with("Reason: Dead letter target does not exist.")),
        "{err:?}"
    );
    // In its own region the same policy is accepted.
    away.sqs
        .create_queue()
        .queue_name("src")
        .attributes(QueueAttributeName::RedrivePolicy, &policy)
        .send()
        .await
        .expect("a dead-letter queue of the same region");
}

/// A move task's SourceArn or DestinationArn of another region names nothing, as SQS
/// serves a queue in its own region only: `ResourceNotFoundException`, nothing moved.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_task_between_regions_is_refused() {
    let loft = Loft::start();
    let base = loft.url("");
    let (home, away) = (region(&base, HOME), region(&base, AWAY));
    let dlq = create_queue(&home, "dlq").await;
    let dlq_arn = queue_arn(&home, &dlq).await;
    let policy = format!(r#"{{"deadLetterTargetArn":"{dlq_arn}","maxReceiveCount":"2"}}"#);
    home.sqs
        .create_queue()
        .queue_name("src")
        .attributes(QueueAttributeName::RedrivePolicy, &policy)
        .send()
        .await
        .expect("source queue");
    let elsewhere = create_queue(&away, "elsewhere").await;
    let elsewhere_arn = queue_arn(&away, &elsewhere).await;
    let not_found = |e: &dyn aws_sdk_sqs::error::ProvideErrorMetadata, param: &str| {
        assert_eq!(
            e.code(),
            Some("ResourceNotFoundException"),
            "{:?}",
            e.message()
        );
        let want =
            format!("The resource that you specified for the {param} parameter doesn't exist.");
        assert_eq!(e.message(), Some(want.as_str()));
    };
    let err = away
        .sqs
        .start_message_move_task()
        .source_arn(&dlq_arn)
        .send()
        .await
        .expect_err("a source of another region");
    not_found(&err, "SourceArn");
    let err = away
        .sqs
        .list_message_move_tasks()
        .source_arn(&dlq_arn)
        .send()
        .await
        .expect_err("a source of another region");
    not_found(&err, "SourceArn");
    let err = home
        .sqs
        .start_message_move_task()
        .source_arn(&dlq_arn)
        .destination_arn(&elsewhere_arn)
        .send()
        .await
        .expect_err("a destination of another region");
    not_found(&err, "DestinationArn");
    // In its own region the task starts.
    home.sqs
        .start_message_move_task()
        .source_arn(&dlq_arn)
        .send()
        .await
        .expect("a move task within the region");
}

/// An unsigned Query request sent to a regional queue URL acts on that region's queue (no
/// credential scope says otherwise).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unsigned_request_to_a_regional_queue_url_reaches_that_region() {
    let loft = Loft::start();
    let base = loft.url("");
    let away = region(&base, AWAY);
    let home = region(&base, HOME);
    let away_url = create_queue(&away, "plain").await;
    let home_url = create_queue(&home, "plain").await;
    let resp = loft
        .http
        .post(&away_url)
        .form(&[("Action", "SendMessage"), ("MessageBody", "unsigned")])
        .send()
        .await
        .expect("POST");
    assert_eq!(resp.status().as_u16(), 200, "{:?}", resp.text().await);
    assert_eq!(receive_bodies(&away, &away_url).await, ["unsigned"]);
    let none = home
        .sqs
        .receive_message()
        .queue_url(&home_url)
        .send()
        .await
        .expect("ReceiveMessage");
    assert!(none.messages().is_empty(), "{none:?}");
}

/// Regional queues and topics, and their messages, survive a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regional_resources_survive_a_restart() {
    let mut loft = Loft::start();
    let old = loft.url("");
    let made = before(&old).await;
    loft.restart();
    let base = loft.url("");
    // The URLs carry the old port; the queue's place in them is what matters.
    let made = made.rebased(&old, &base);
    after(&base, made).await;
}

/// A single-account Loft has no other account: a queue URL or QueueOwnerAWSAccountId
/// naming one is `QueueDoesNotExist`, a topic ARN naming one `NotFound`, while the
/// account's own URLs (Loft's, and AWS's form) still work.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_account_names_nothing_in_a_single_account_loft() {
    let loft = Loft::start();
    let base = loft.url("");
    let home = region(&base, HOME);
    let url = create_queue(&home, "mine").await;
    for foreign in [
        format!("{base}/111111111111/mine"),
        format!("https://sqs.{HOME}.amazonaws.com/111111111111/mine"),
    ] {
        let err = home
            .sqs
            .send_message()
            .queue_url(&foreign)
            .message_body("x")
            .send()
            .await
            .expect_err("another account's queue");
        assert_eq!(
            sqs_code(&err),
            Some("AWS.SimpleQueueService.NonExistentQueue"),
            "{foreign}: {err:?}"
        );
    }
    let err = home
        .sqs
        .get_queue_url()
        .queue_name("mine")
        .queue_owner_aws_account_id("111111111111")
        .send()
        .await
        .expect_err("another account's queue");
    assert_eq!(
        sqs_code(&err),
        Some("AWS.SimpleQueueService.NonExistentQueue"),
        "{err:?}"
    );
    let own = home
        .sqs
        .get_queue_url()
        .queue_name("mine")
        .queue_owner_aws_account_id(ACCOUNT)
        .send()
        .await
        .expect("GetQueueUrl of the own account");
    assert_eq!(own.queue_url(), Some(url.as_str()));
    for own in [
        url.clone(),
        format!("https://sqs.{HOME}.amazonaws.com/{ACCOUNT}/mine"),
        format!("http://localhost:4566/{ACCOUNT}/mine"),
    ] {
        home.sqs
            .send_message()
            .queue_url(&own)
            .message_body("ok")
            .send()
            .await
            .unwrap_or_else(|e| panic!("{own}: {e:?}"));
    }
    home.sns
        .create_topic()
        .name("t")
        .send()
        .await
        .expect("CreateTopic");
    let err = home
        .sns
        .get_topic_attributes()
        .topic_arn(format!("arn:aws:sns:{HOME}:111111111111:t"))
        .send()
        .await
        .expect_err("another account's topic");
    assert_eq!(err.code(), Some("NotFound"), "{err:?}");
}

/// An unsigned request acts in the region its ARN names: a topic ARN of another region
/// reaches that region's topic, and one whose region field is no region name names
/// nothing (`InvalidParameter`), where before regions both reached the local topic.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unsigned_request_acts_in_the_region_its_arn_names() {
    let loft = Loft::start();
    let base = loft.url("");
    let away = region(&base, AWAY);
    let topic = away
        .sns
        .create_topic()
        .name("far")
        .send()
        .await
        .expect("CreateTopic")
        .topic_arn()
        .expect("TopicArn")
        .to_owned();
    let get = |arn: String| {
        loft.http
            .post(&base)
            .form(&[
                ("Action", "GetTopicAttributes".to_owned()),
                ("Version", "2010-03-31".to_owned()),
                ("TopicArn", arn),
            ])
            .send()
    };
    let resp = get(topic.clone()).await.expect("POST");
    assert_eq!(resp.status().as_u16(), 200);
    let text = resp.text().await.expect("body");
    assert!(text.contains(&topic), "{text}");
    let resp = get(format!("arn:aws:sns:local:{ACCOUNT}:far"))
        .await
        .expect("POST");
    assert_eq!(resp.status().as_u16(), 400);
    let text = resp.text().await.expect("body");
    assert!(text.contains("<Code>InvalidParameter</Code>"), "{text}");
}
