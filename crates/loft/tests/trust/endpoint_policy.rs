//! The SNS endpoint policy against the real binary: metadata and link-local endpoints are
//! refused at Subscribe; a configured deny range is refused at Subscribe for an IP
//! literal and at delivery for a host name that resolves into it.
//!
//! No test sends traffic anywhere but the loopback sink: refused endpoints are never
//! contacted.

use std::time::Duration;

use serde_json::{json, Value};

use crate::harness::*;

const TOPIC_ARN: &str = "arn:aws:sns:us-east-1:000000000000:alerts";

async fn sns(loft: &Loft, pairs: &[(&str, &str)]) -> (u16, String) {
    let resp = http()
        .post(&loft.url)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form(pairs))
        .send()
        .await
        .unwrap();
    (resp.status().as_u16(), resp.text().await.unwrap())
}

async fn subscribe(loft: &Loft, endpoint: &str) -> (u16, String) {
    sns(
        loft,
        &[
            ("Action", "CreateTopic"),
            ("Name", "alerts"),
            ("Version", "2010-03-31"),
        ],
    )
    .await;
    sns(
        loft,
        &[
            ("Action", "Subscribe"),
            ("TopicArn", TOPIC_ARN),
            ("Protocol", "http"),
            ("Endpoint", endpoint),
            ("Version", "2010-03-31"),
        ],
    )
    .await
}

async fn seed_subscribe(loft: &Loft, endpoint: &str) -> reqwest::Response {
    http()
        .post(format!("{}/topics/alerts/subscribe", loft.url))
        .json(&json!({ "endpoint": endpoint }))
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn metadata_and_link_local_endpoints_are_refused_by_default() {
    let loft = Loft::start(&[], &[]);
    for endpoint in [
        "http://169.254.169.254/latest/meta-data/",
        "http://[::ffff:169.254.169.254]/",
        "http://2852039166/",
        "http://[fe80::1]:8080/",
        "http://[fd00:ec2::254]/",
    ] {
        let (status, text) = subscribe(&loft, endpoint).await;
        assert_eq!(status, 400, "{endpoint}: {text}");
        assert!(
            text.contains("<Code>InvalidParameter</Code>"),
            "{endpoint}: {text}"
        );
        assert!(
            text.contains("endpoint policy denies"),
            "{endpoint}: {text}"
        );
        let resp = seed_subscribe(&loft, endpoint).await;
        assert_eq!(resp.status(), 400, "seeds' API, {endpoint}");
        let body: Value = resp.json().await.unwrap();
        assert!(
            body["error"].as_str().unwrap().contains("endpoint policy"),
            "{body}"
        );
    }
    // Loopback stays allowed by default (local development).
    let sink = Sink::start().await;
    let (status, text) = subscribe(
        &loft,
        &format!("http://127.0.0.1:{}/hook", sink.addr.port()),
    )
    .await;
    assert_eq!(status, 200, "{text}");
    assert!(
        sink.wait_for(1).await,
        "the SubscriptionConfirmation arrives"
    );
}

#[tokio::test]
async fn private_ranges_are_refused_in_production_mode_with_allowed_exceptions() {
    let loft = Loft::start(
        &["--sns-deny-private", "--sns-allow-cidr", "10.1.2.0/24"],
        &[],
    );
    for endpoint in [
        "http://10.0.0.1/",
        "http://192.168.1.10:8080/",
        "http://127.0.0.1:9/",
        "http://[::1]:9/",
    ] {
        let (status, text) = subscribe(&loft, endpoint).await;
        assert_eq!(status, 400, "{endpoint}: {text}");
        assert!(text.contains("InvalidParameter"), "{text}");
    }
    // 10.1.2.0/24 is allowed: the seeds' API (no confirmation POST) accepts it, so
    // nothing is sent to that address.
    let resp = seed_subscribe(&loft, "http://10.1.2.3/hook").await;
    assert_eq!(resp.status(), 201);
}

#[tokio::test]
async fn a_denied_range_is_refused_at_subscribe_and_a_name_resolving_into_it_at_delivery() {
    let sink = Sink::start().await;
    let port = sink.addr.port();
    // Control: without the deny ranges, a delivery to localhost arrives, so the refusal
    // below is the policy's doing, not the name's.
    {
        let open = Loft::start(&[], &[]);
        assert_eq!(
            seed_subscribe(&open, &format!("http://localhost:{port}/hook"))
                .await
                .status(),
            201
        );
        let resp = http()
            .post(format!("{}/topics/alerts/publish", open.url))
            .json(&json!({"message": "control"}))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        assert!(sink.wait_for(1).await, "the control delivery arrives");
    }
    let before = sink.count();
    let loft = Loft::start(&["--sns-deny-cidr", "127.0.0.0/8,::1/128"], &[]);
    // An IP literal in the range: refused at Subscribe.
    let (status, text) = subscribe(&loft, &format!("http://127.0.0.1:{port}/hook")).await;
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("127.0.0.0/8"), "{text}");
    // A name: accepted at Subscribe (DNS may change), refused at each delivery after
    // resolution.
    let resp = seed_subscribe(&loft, &format!("http://localhost:{port}/hook")).await;
    assert_eq!(resp.status(), 201);
    let resp = http()
        .post(format!("{}/topics/alerts/publish", loft.url))
        .json(&json!({"message": "must not arrive"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.json::<Value>().await.unwrap(), json!({"delivered": 1}));
    assert!(
        loft.wait_for_log("SNS delivery refused by the endpoint policy")
            .await,
        "{}",
        loft.stderr()
    );
    crate::wait::holds_for(
        "nothing reached the sink",
        Duration::from_millis(500),
        || async { sink.count() == before },
    )
    .await;
    // An SNS subscription's confirmation is a delivery too: refused the same way.
    let (status, _) = subscribe(&loft, &format!("http://localhost:{port}/sns")).await;
    assert_eq!(status, 200);
    crate::wait::holds_for(
        "no confirmation reached the sink",
        Duration::from_millis(500),
        || async { sink.count() == before },
    )
    .await;
}
