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
