//! HTTP/S subscriptions end to end against an HTTP sink: the SubscriptionConfirmation and
//! confirming through SubscribeURL (or ConfirmSubscription), nothing delivered before,
//! SNS's headers, signatures of SignatureVersion 1 and 2 verified with the certificate
//! served at SigningCertURL, raw delivery, retries by the DeliveryPolicy, the RedrivePolicy
//! dead-letter queue, and a restart of both ends that resumes a pending delivery.
//!
//! Sources: SNS Developer Guide "Use Amazon SNS to send messages to HTTP/S endpoints",
//! "HTTP/HTTPS subscription confirmation JSON format", "HTTP/HTTPS notification JSON
//! format", "Verifying the signatures of Amazon SNS messages", "Amazon SNS message delivery
//! retries", "Amazon SNS dead-letter queues (DLQs)".

use std::time::Duration;

use loft_server::sns_signing::SignatureVersion;
use serde_json::Value;

use crate::sink::{assert_sns_headers, verify_envelope, Hit, Sink};
use crate::*;

/// A delivery policy of `retries` retries `delay` seconds apart.
fn policy(retries: u32, delay: u32) -> String {
    format!(
        r#"{{"healthyRetryPolicy":{{"minDelayTarget":{delay},"maxDelayTarget":{delay},"numRetries":{retries}}}}}"#
    )
}

/// Checks a SubscriptionConfirmation hit completely and returns its JSON.
async fn check_confirmation(hit: &Hit, topic: &str, version: &str) -> Value {
    assert_sns_headers(hit, "SubscriptionConfirmation", topic);
    assert!(
        hit.optional("x-amz-sns-subscription-arn").is_none(),
        "confirmations name no subscription: {:?}",
        hit.headers
    );
    let env = hit.json();
    assert_eq!(
        keys(&env),
        sorted(&[
            "Type",
            "MessageId",
            "Token",
            "TopicArn",
            "Message",
            "SubscribeURL",
            "Timestamp",
            "SignatureVersion",
            "Signature",
            "SigningCertURL"
        ]),
        "{env}"
    );
    assert_eq!(env["Type"], "SubscriptionConfirmation");
    assert_eq!(env["TopicArn"], topic);
    assert_eq!(env["SignatureVersion"], version);
    assert_eq!(
        env["Message"],
        format!("You have chosen to subscribe to the topic {topic}.\nTo confirm the subscription, visit the SubscribeURL included in this message.")
    );
    assert_timestamp(env["Timestamp"].as_str().expect("Timestamp"));
    let token = env["Token"].as_str().expect("Token");
    assert!(!token.is_empty());
    let url = env["SubscribeURL"].as_str().expect("SubscribeURL");
    assert!(
        url.contains("Action=ConfirmSubscription") && url.contains(&format!("Token={token}")),
        "{url}"
    );
    verify_envelope(&env).await;
    env
}

/// GETs the SubscribeURL of confirmation `env`, as a subscriber does; returns the
/// subscription ARN from the response.
async fn visit_subscribe_url(env: &Value) -> String {
    let url = env["SubscribeURL"].as_str().expect("SubscribeURL");
    let resp = reqwest::get(url).await.expect("GET SubscribeURL");
    assert_eq!(resp.status(), 200, "GET {url}");
    let xml = resp.text().await.expect("body");
    assert!(
        xml.contains("<ConfirmSubscriptionResponse xmlns=\"http://sns.amazonaws.com/doc/2010-03-31/\"><ConfirmSubscriptionResult><SubscriptionArn>"),
        "{xml}"
    );
    let start = xml.find("<SubscriptionArn>").expect("SubscriptionArn") + "<SubscriptionArn>".len();
    let end = xml.find("</SubscriptionArn>").expect("SubscriptionArn end");
    xml[start..end].to_owned()
}

/// Subscribes the sink at `path` to `topic` with `attrs`, takes the confirmation from the
/// sink, checks it and confirms through SubscribeURL. Returns the subscription ARN.
async fn subscribe_sink(
    server: &Server,
    sink: &mut Sink,
    topic: &str,
    path: &str,
    attrs: &[(&str, &str)],
) -> String {
    let mut req = server
        .sns()
        .subscribe()
        .topic_arn(topic)
        .protocol("http")
        .endpoint(sink.url(path));
    for (k, v) in attrs {
        req = req.attributes(*k, *v);
    }
    let out = req.send().await.expect("Subscribe http");
    assert_eq!(out.subscription_arn(), Some("pending confirmation"));
    let hit = sink.next().await;
    assert_eq!(hit.status, 200);
    let version = topic_attributes(&server.sns(), topic)
        .await
        .get("SignatureVersion")
        .cloned()
        .unwrap_or_else(|| "1".into());
    let env = check_confirmation(&hit, topic, &version).await;
    let arn = visit_subscribe_url(&env).await;
    assert!(arn.starts_with(&format!("{topic}:")), "{arn}");
    arn
}

/// Checks a Notification hit (enveloped) of `message_id` and returns its JSON.
async fn check_notification(hit: &Hit, topic: &str, sub: &str, message_id: &str) -> Value {
    assert_sns_headers(hit, "Notification", topic);
    assert_eq!(hit.header("x-amz-sns-subscription-arn"), sub);
    assert_eq!(hit.header("x-amz-sns-message-id"), message_id);
    let env = hit.json();
    assert_eq!(env["Type"], "Notification");
    assert_eq!(env["MessageId"], message_id);
    assert_eq!(env["TopicArn"], topic);
    assert!(env["UnsubscribeURL"]
        .as_str()
        .is_some_and(|u| u.contains("Action=Unsubscribe")));
    verify_envelope(&env).await;
    env
}

async fn publish(sns: &aws_sdk_sns::Client, topic: &str, message: &str) -> String {
    sns.publish()
        .topic_arn(topic)
        .message(message)
        .send()
        .await
        .expect("Publish")
        .message_id()
        .expect("MessageId")
        .to_owned()
}

#[tokio::test]
async fn confirmation_then_signed_notifications_for_both_signature_versions() {
    let server = Server::start();
    let sns = server.sns();
    let mut sink = Sink::start().await;
    for version in ["1", "2"] {
        let topic = create_topic(
            &sns,
            &format!("signed-v{version}"),
            &[("SignatureVersion", version)],
        )
        .await;
        let out = sns
            .subscribe()
            .topic_arn(&topic)
            .protocol("http")
            .endpoint(sink.url(&format!("/v{version}")))
            .send()
            .await
            .expect("Subscribe");
        assert_eq!(out.subscription_arn(), Some("pending confirmation"));
        let confirmation = sink.next().await;
        let env = check_confirmation(&confirmation, &topic, version).await;
        assert_eq!(
            topic_attributes(&sns, &topic).await["SubscriptionsPending"],
            "1"
        );

        // Nothing is delivered before the subscription is confirmed.
        publish(&sns, &topic, "before confirmation").await;

        let sub = if version == "1" {
            visit_subscribe_url(&env).await
        } else {
            sns.confirm_subscription()
                .topic_arn(&topic)
                .token(env["Token"].as_str().expect("Token"))
                .send()
                .await
                .expect("ConfirmSubscription")
                .subscription_arn()
                .expect("SubscriptionArn")
                .to_owned()
        };
        let attrs = subscription_attributes(&sns, &sub).await;
        assert_eq!(attrs["PendingConfirmation"], "false");
        assert_eq!(attrs["Endpoint"], sink.url(&format!("/v{version}")));
        let effective: Value = serde_json::from_str(&attrs["EffectiveDeliveryPolicy"])
            .expect("EffectiveDeliveryPolicy");
        assert_eq!(effective["healthyRetryPolicy"]["numRetries"], 3);
        // Confirming again answers the same ARN.
        assert_eq!(visit_subscribe_url(&env).await, sub);

        let id = sns
            .publish()
            .topic_arn(&topic)
            .message("after confirmation")
            .subject("Greetings")
            .message_attributes("kind", sns_string("test"))
            .send()
            .await
            .expect("Publish")
            .message_id()
            .expect("MessageId")
            .to_owned();
        let hit = sink.next().await;
        let env = check_notification(&hit, &topic, &sub, &id).await;
        assert_eq!(
            keys(&env),
            sorted(&[
                "Type",
                "MessageId",
                "TopicArn",
                "Subject",
                "Message",
                "Timestamp",
                "SignatureVersion",
                "Signature",
                "SigningCertURL",
                "UnsubscribeURL",
                "MessageAttributes"
            ])
        );
        assert_eq!(env["Message"], "after confirmation");
        assert_eq!(env["Subject"], "Greetings");
        assert_eq!(env["SignatureVersion"], version);
        assert_eq!(
            verify_envelope(&env).await,
            SignatureVersion::parse(version).expect("version")
        );
        assert_eq!(
            env["MessageAttributes"],
            serde_json::json!({"kind": {"Type": "String", "Value": "test"}})
        );
        assert!(
            sink.next_within(Duration::from_millis(300)).await.is_none(),
            "the message published before confirmation was never delivered"
        );
    }
}

#[tokio::test]
async fn raw_delivery_over_http() {
    let server = Server::start();
    let sns = server.sns();
    let mut sink = Sink::start().await;
    let topic = create_topic(&sns, "raw-http", &[]).await;
    let sub = subscribe_sink(
        &server,
        &mut sink,
        &topic,
        "/raw",
        &[("RawMessageDelivery", "true")],
    )
    .await;
    let id = publish(&sns, &topic, "bare body ✓").await;
    let hit = sink.next().await;
    assert_sns_headers(&hit, "Notification", &topic);
    assert_eq!(hit.header("x-amz-sns-rawdelivery"), "true");
    assert_eq!(hit.header("x-amz-sns-subscription-arn"), sub);
    assert_eq!(hit.header("x-amz-sns-message-id"), id);
    assert_eq!(hit.body, "bare body ✓");
}

#[tokio::test]
async fn failed_attempts_are_retried_by_the_delivery_policy() {
    let server = Server::start();
    let sns = server.sns();
    let mut sink = Sink::start().await;
    let topic = create_topic(&sns, "retried", &[]).await;
    let sub = subscribe_sink(
        &server,
        &mut sink,
        &topic,
        "/flaky",
        &[("DeliveryPolicy", &policy(3, 1))],
    )
    .await;
    sink.fail_next(2);
    let id = publish(&sns, &topic, "eventually").await;
    let mut hits = Vec::new();
    for _ in 0..3 {
        hits.push(sink.next().await);
    }
    assert_eq!(
        hits.iter().map(|h| h.status).collect::<Vec<_>>(),
        [500, 500, 200]
    );
    for h in &hits {
        // A retry resends the same message: same MessageId, same signed body.
        assert_eq!(h.body, hits[0].body);
        check_notification(h, &topic, &sub, &id).await;
    }
    for pair in hits.windows(2) {
        let gap = pair[1].at - pair[0].at;
        assert!(
            gap >= Duration::from_millis(900) && gap < Duration::from_secs(5),
            "retries follow minDelayTarget 1 s; the gap was {gap:?}"
        );
    }
    assert!(
        sink.next_within(Duration::from_millis(1500))
            .await
            .is_none(),
        "a delivered message is not sent again"
    );
}

/// An answer from 200 to 499 ends the delivery: SNS retries only when the endpoint answers
/// outside 200-4xx or does not answer in time (SNS Developer Guide, "Step 1: Make sure
/// your endpoint is ready to process Amazon SNS messages"), so a 404, 403, 301 or 429 is
/// not sent again while a 500 is.
#[tokio::test]
async fn answers_from_200_to_499_are_not_retried() {
    let server = Server::start();
    let sns = server.sns();
    let mut sink = Sink::start().await;
    let topic = create_topic(&sns, "four-hundreds", &[]).await;
    subscribe_sink(
        &server,
        &mut sink,
        &topic,
        "/gone",
        &[("DeliveryPolicy", &policy(3, 1))],
    )
    .await;
    for status in [404, 403, 301, 429] {
        sink.fail_next_with(1, status);
        publish(&sns, &topic, &format!("answered {status}")).await;
        let hit = sink.next().await;
        assert_eq!(hit.status, status);
        assert!(
            sink.next_within(Duration::from_millis(1500))
                .await
                .is_none(),
            "an answer of {status} is not retried"
        );
    }
    sink.fail_next_with(1, 503);
    publish(&sns, &topic, "answered 503").await;
    assert_eq!(sink.next().await.status, 503);
    assert_eq!(sink.next().await.status, 200, "a 5xx answer is retried");
}

/// Delivery status logging of HTTP/S: with HTTPFailureFeedbackRoleArn and
/// HTTPSuccessFeedbackRoleArn, a failed attempt writes a FAILURE record (status 500,
/// attempt 1, on the `/Failure` log group) and the retry that succeeds a SUCCESS record
/// (status 200, attempt 2), both naming the message.
#[tokio::test]
async fn delivery_status_records_of_failed_and_retried_attempts() {
    let server = Server::start();
    let sns = server.sns();
    let mut sink = Sink::start().await;
    let role = "arn:aws:iam::000000000000:role/SNSFeedback";
    let topic = create_topic(
        &sns,
        "status-http",
        &[
            ("HTTPSuccessFeedbackRoleArn", role),
            ("HTTPFailureFeedbackRoleArn", role),
            ("HTTPSuccessFeedbackSampleRate", "100"),
        ],
    )
    .await;
    subscribe_sink(
        &server,
        &mut sink,
        &topic,
        "/status",
        &[("DeliveryPolicy", &policy(3, 1))],
    )
    .await;
    sink.fail_next(1);
    let id = publish(&sns, &topic, "logged delivery").await;
    assert_eq!(sink.next().await.status, 500);
    assert_eq!(sink.next().await.status, 200);
    let records = |log: &str| -> Vec<Value> {
        log.lines()
            .filter(|l| l.contains("loft::sns::delivery_status"))
            .filter_map(|l| l.split_once("record=").map(|(_, r)| r.to_owned()))
            .filter_map(|r| serde_json::from_str(&r).ok())
            .collect()
    };
    crate::wait::until(PATIENCE, || async { records(&server.stderr()).len() >= 2 }).await;
    let found = records(&server.stderr());
    assert_eq!(found.len(), 2, "{found:?}");
    for (r, status, code, attempts) in [
        (&found[0], "FAILURE", 500, 1),
        (&found[1], "SUCCESS", 200, 2),
    ] {
        assert_eq!(r["status"], status, "{r}");
        assert_eq!(r["delivery"]["statusCode"], code, "{r}");
        assert_eq!(r["delivery"]["attempts"], attempts, "{r}");
        assert_eq!(r["delivery"]["destination"], sink.url("/status"), "{r}");
        assert_eq!(r["notification"]["messageId"], id.as_str(), "{r}");
        assert_eq!(r["notification"]["topicArn"], topic.as_str(), "{r}");
    }
}

#[tokio::test]
async fn exhausted_retries_go_to_the_redrive_policy_dlq() {
    let server = Server::start();
    let (sns, sqs) = (server.sns(), server.sqs());
    let dlq = create_queue(&sqs, "http-dlq", &[]).await;
    let mut sink = Sink::start().await;
    let topic = create_topic(&sns, "doomed", &[]).await;
    let redrive = format!(
        r#"{{"deadLetterTargetArn":"{}"}}"#,
        server.queue_arn("http-dlq")
    );
    let sub = subscribe_sink(
        &server,
        &mut sink,
        &topic,
        "/down",
        &[
            ("DeliveryPolicy", &policy(2, 1)),
            ("RedrivePolicy", &redrive),
        ],
    )
    .await;
    sink.fail_next(usize::MAX);
    let id = publish(&sns, &topic, "undeliverable").await;
    // The first attempt and numRetries (2) retries, all failing.
    for _ in 0..3 {
        let hit = sink.next().await;
        assert_eq!(hit.status, 500);
        check_notification(&hit, &topic, &sub, &id).await;
    }
    let dead = receive_exactly(&sqs, &dlq, 1).await;
    let env = json_of(dead[0].body().expect("body"));
    assert_eq!(env["MessageId"], id.as_str());
    assert_eq!(env["Message"], "undeliverable");
    assert_eq!(env["TopicArn"], topic.as_str());
    assert!(
        sink.next_within(Duration::from_millis(1500))
            .await
            .is_none(),
        "no attempt after the retries ran out"
    );
}

#[tokio::test]
async fn a_pending_delivery_survives_a_restart_of_loft_and_the_sink() {
    let mut server = Server::start();
    let sns = server.sns();
    let mut sink = Sink::start().await;
    let topic = create_topic(&sns, "durable", &[("SignatureVersion", "2")]).await;
    let sub = subscribe_sink(
        &server,
        &mut sink,
        &topic,
        "/later",
        &[("DeliveryPolicy", &policy(20, 1))],
    )
    .await;

    // The sink goes away; the message is published meanwhile and its first attempt fails.
    sink.stop().await;
    let id = publish(&sns, &topic, "published while the sink was down").await;
    let failed = "delivery attempt failed".to_owned();
    eventually(PATIENCE, "a failed attempt in Loft's log", || {
        let log = server.stderr();
        let failed = failed.clone();
        async move { log.contains(&failed) }
    })
    .await;

    // Both ends restart; the pending delivery resumes.
    server.stop();
    sink.restart().await;
    server.start_again();
    let hit = sink.next().await;
    assert_eq!(hit.status, 200);
    let env = check_notification(&hit, &topic, &sub, &id).await;
    assert_eq!(env["Message"], "published while the sink was down");
    assert_eq!(env["SignatureVersion"], "2");

    // And the restarted Loft delivers new messages as before.
    let id2 = publish(&server.sns(), &topic, "after the restart").await;
    let hit = sink.next().await;
    check_notification(&hit, &topic, &sub, &id2).await;
}

#[tokio::test]
async fn unsubscribing_an_http_endpoint_sends_an_unsubscribe_confirmation() {
    // SNS Developer Guide, "HTTP/HTTPS unsubscribe confirmation JSON format": after an
    // HTTP/S endpoint is unsubscribed, SNS POSTs an UnsubscribeConfirmation with a Token and
    // a SubscribeURL that re-confirms the subscription.
    let server = Server::start();
    let sns = server.sns();
    let mut sink = Sink::start().await;
    let topic = create_topic(&sns, "leaving", &[]).await;
    let sub = subscribe_sink(&server, &mut sink, &topic, "/bye", &[]).await;
    sns.unsubscribe()
        .subscription_arn(&sub)
        .send()
        .await
        .expect("Unsubscribe");
    let hit = sink.next().await;
    assert_sns_headers(&hit, "UnsubscribeConfirmation", &topic);
    let env = hit.json();
    assert_eq!(env["Type"], "UnsubscribeConfirmation");
    assert!(
        env["Token"].is_string() && env["SubscribeURL"].is_string(),
        "{env}"
    );
    assert_eq!(
        env["Message"],
        format!("You have chosen to deactivate subscription {sub}.\nTo cancel this operation and restore the subscription, visit the SubscribeURL included in this message.")
    );
    verify_envelope(&env).await;
}

#[tokio::test]
async fn the_request_policy_sets_the_content_type_of_notifications() {
    // SNS Developer Guide, "Creating an HTTP/S delivery policy": requestPolicy
    // headerContentType is the Content-Type of the notifications SNS POSTs.
    let server = Server::start();
    let sns = server.sns();
    let mut sink = Sink::start().await;
    let topic = create_topic(&sns, "typed", &[]).await;
    subscribe_sink(
        &server,
        &mut sink,
        &topic,
        "/json",
        &[(
            "DeliveryPolicy",
            r#"{"requestPolicy":{"headerContentType":"application/json"}}"#,
        )],
    )
    .await;
    publish(&sns, &topic, "typed").await;
    let hit = sink.next().await;
    assert_eq!(hit.header("content-type"), "application/json");
}

#[tokio::test]
async fn sigterm_waits_for_the_delivery_attempt_in_flight() {
    // A graceful shutdown must not leave a delivery leased to a process that is gone: Loft
    // waits for the attempt in flight and records its outcome, so after a restart the
    // retry comes on the policy's schedule (1 s here), not after the 60 s lease.
    let mut server = Server::start();
    let sns = server.sns();
    let mut sink = Sink::start().await;
    let topic = create_topic(&sns, "draining", &[]).await;
    let policy = r#"{"healthyRetryPolicy":{"minDelayTarget":1,"maxDelayTarget":1,"numRetries":3}}"#;
    let sub = subscribe_sink(
        &server,
        &mut sink,
        &topic,
        "/slow",
        &[("DeliveryPolicy", policy)],
    )
    .await;
    sink.hold_next();
    sink.fail_next(1);
    let id = publish(&sns, &topic, "in flight at shutdown").await;
    let held = sink.next().await;
    assert_eq!(held.json()["MessageId"], id);

    // SIGTERM while the attempt is held; Loft says it is waiting for it.
    let log = server.stderr_path();
    let stopping = std::thread::spawn(move || {
        server.stop();
        server
    });
    eventually(PATIENCE, "Loft waiting for the attempt in flight", || {
        let log = std::fs::read_to_string(&log).unwrap_or_default();
        async move { log.contains("waiting for delivery attempts in flight") }
    })
    .await;
    // The held attempt now fails (HTTP 500); Loft records the retry and exits 0.
    sink.release();
    let mut server = tokio::task::spawn_blocking(move || stopping.join().expect("stop"))
        .await
        .expect("join");
    server.start_again();
    let retry = sink.next().await;
    assert_eq!(retry.status, 200);
    let env = check_notification(&retry, &topic, &sub, &id).await;
    assert_eq!(env["Message"], "in flight at shutdown");
}
