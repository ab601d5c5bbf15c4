//! Loft's recorded messages (email, SMS, push: recorded, not sent) over HTTP:
//! `GET /_loft/sns/messages` lists them and `DELETE /_loft/sns/messages`, with optional
//! `protocol`, `endpoint` and `topic_arn` filters, clears them so tests can start clean.

use serde_json::Value;

use crate::{create_topic, Server};

async fn recorded(server: &Server) -> Vec<(String, String, String)> {
    let list: Value = reqwest::get(format!("{}/_loft/sns/messages", server.url))
        .await
        .expect("GET /_loft/sns/messages")
        .json()
        .await
        .expect("JSON");
    let mut out: Vec<(String, String, String)> = list
        .as_array()
        .expect("a list")
        .iter()
        .map(|m| {
            (
                m["protocol"].as_str().unwrap().to_owned(),
                m["endpoint"].as_str().unwrap().to_owned(),
                m["message"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    out.sort();
    out
}

async fn delete(server: &Server, query: &str) -> (u16, Value) {
    let resp = reqwest::Client::new()
        .delete(format!("{}/_loft/sns/messages{query}", server.url))
        .send()
        .await
        .expect("DELETE /_loft/sns/messages");
    let status = resp.status().as_u16();
    (status, resp.json().await.expect("JSON body"))
}

#[tokio::test]
async fn delete_clears_recorded_messages_by_filter() {
    let server = Server::start();
    let sns = server.sns();
    for (phone, text) in [("+15555550100", "code 1"), ("+15555550101", "code 2")] {
        sns.publish()
            .phone_number(phone)
            .message(text)
            .send()
            .await
            .expect("Publish to a phone number");
    }
    let topic = create_topic(&sns, "recorded", &[]).await;
    sns.subscribe()
        .topic_arn(&topic)
        .protocol("sms")
        .endpoint("+15555550102")
        .send()
        .await
        .expect("Subscribe sms");
    sns.publish()
        .topic_arn(&topic)
        .message("fan-out")
        .send()
        .await
        .expect("Publish to the topic");
    assert_eq!(recorded(&server).await.len(), 3);

    // A misspelt filter is refused rather than taken as "everything".
    let (status, body) = delete(&server, "?protocl=sms").await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("protocl"),
        "{body}"
    );
    assert_eq!(recorded(&server).await.len(), 3);

    // Every given filter must match (`+` percent-encoded, as in any query string).
    let (status, body) = delete(&server, "?protocol=sms&endpoint=%2B15555550100").await;
    assert_eq!((status, body["deleted"].as_u64()), (200, Some(1)));
    let (_, body) = delete(&server, "?protocol=email&endpoint=%2B15555550101").await;
    assert_eq!(body["deleted"], 0);
    assert_eq!(
        recorded(&server).await,
        vec![
            ("sms".into(), "+15555550101".into(), "code 2".into()),
            ("sms".into(), "+15555550102".into(), "fan-out".into()),
        ]
    );
    let (_, body) = delete(
        &server,
        &format!("?topic_arn={}", topic.replace(':', "%3A")),
    )
    .await;
    assert_eq!(body["deleted"], 1);
    assert_eq!(recorded(&server).await.len(), 1);

    // No filter: everything.
    let (status, body) = delete(&server, "").await;
    assert_eq!((status, body["deleted"].as_u64()), (200, Some(1)));
    assert!(recorded(&server).await.is_empty());
}

/// A topic's DisplayName is what recorded email and SMS come from: the email "From"
/// name (the topic's name without one) and the SMS sender prefix, its first 10
/// characters before the text.
#[tokio::test]
async fn display_name_is_the_email_from_name_and_the_sms_prefix() {
    let server = Server::start();
    let sns = server.sns();
    let named = create_topic(&sns, "named", &[("DisplayName", "Alerts Department")]).await;
    let plain = create_topic(&sns, "plain", &[]).await;
    for (topic, protocol, endpoint) in [
        (&named, "email", "ops@example.com"),
        (&named, "sms", "+15555550103"),
        (&plain, "email", "dev@example.com"),
        (&plain, "sms", "+15555550104"),
    ] {
        sns.subscribe()
            .topic_arn(topic)
            .protocol(protocol)
            .endpoint(endpoint)
            .send()
            .await
            .expect("Subscribe");
    }
    for topic in [&named, &plain] {
        sns.publish()
            .topic_arn(topic)
            .message("disk full")
            .send()
            .await
            .expect("Publish");
    }
    let list: Value = reqwest::get(format!("{}/_loft/sns/messages", server.url))
        .await
        .expect("GET /_loft/sns/messages")
        .json()
        .await
        .expect("JSON");
    let mut got: Vec<(String, Value, String)> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let text = m["message"].as_str().unwrap();
            let text = if m["protocol"] == "email" {
                // The confirmation's text; only its sender matters here.
                "confirmation".to_owned()
            } else {
                text.to_owned()
            };
            (
                m["endpoint"].as_str().unwrap().to_owned(),
                m["sender"].clone(),
                text,
            )
        })
        .collect();
    got.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        got,
        [
            (
                "+15555550103".to_owned(),
                Value::from("Alerts Dep"),
                "Alerts Dep> disk full".to_owned()
            ),
            (
                "+15555550104".to_owned(),
                Value::Null,
                "disk full".to_owned()
            ),
            (
                "dev@example.com".to_owned(),
                Value::from("plain <no-reply@sns.amazonaws.com>"),
                "confirmation".to_owned()
            ),
            (
                "ops@example.com".to_owned(),
                Value::from("Alerts Department <no-reply@sns.amazonaws.com>"),
                "confirmation".to_owned()
            ),
        ]
    );
}
