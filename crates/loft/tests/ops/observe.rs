//! `/health` unchanged, `/ready`, a request id on every response and log line, and JSON
//! logs.

use serde_json::{json, Value};

use crate::harness::{eventually, Server};

fn request_id(h: &reqwest::header::HeaderMap) -> String {
    h.get("x-amzn-requestid")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_else(|| panic!("no x-amzn-requestid in {h:?}"))
        .to_owned()
}

#[tokio::test]
async fn health_is_unchanged_and_ready_answers() {
    let s = Server::start();
    let r = s.http.get(s.url("/health")).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(
        r.json::<Value>().await.unwrap(),
        json!({"status": "healthy", "service": "loft"})
    );
    let r = s.http.get(s.url("/ready")).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(r.json::<Value>().await.unwrap(), json!({"status": "ready"}));
}

#[tokio::test]
async fn every_response_carries_a_fresh_request_id() {
    let s = Server::start();
    let mut seen = std::collections::BTreeSet::new();
    for path in [
        "/health", "/ready", "/queues", "/metrics", "/console", "/nowhere",
    ] {
        let r = s.http.get(s.url(path)).send().await.unwrap();
        let id = request_id(r.headers());
        assert_eq!(id.len(), 36, "a UUID: {id}");
        assert!(seen.insert(id), "request ids repeat");
    }
    // AWS responses: the id in the header is the id in the body.
    let resp = s
        .http
        .post(s.url("/"))
        .form(&[("Action", "ListQueues"), ("Version", "2012-11-05")])
        .send()
        .await
        .unwrap();
    let id = request_id(resp.headers());
    let body = resp.text().await.unwrap();
    assert!(
        body.contains(&format!("<RequestId>{id}</RequestId>")),
        "{id} not in {body}"
    );
    let (_, _, h) = s.sqs_raw("ListQueues", json!({})).await;
    assert!(seen.insert(request_id(&h)));
}

#[tokio::test]
async fn json_logs_carry_the_request_id() {
    let s = Server::start_with(&["--log-format", "json"], &[]).expect("starts");
    let (_, _, h) = s
        .sqs_raw("CreateQueue", json!({"QueueName": "logged"}))
        .await;
    let id = request_id(&h);
    let line = eventually("the access log line", || async {
        s.stderr()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|v| v["span"]["request_id"] == id.as_str())
    })
    .await;
    assert_eq!(line["target"], "loft::access");
    assert_eq!(line["fields"]["operation"], "CreateQueue");
    assert_eq!(line["fields"]["protocol"], "sqs-json");
    assert_eq!(line["fields"]["status"], 200);
    assert!(line["fields"]["duration_ms"].as_f64().is_some(), "{line}");
    // Every line of the log is JSON.
    for l in s.stderr().lines() {
        assert!(serde_json::from_str::<Value>(l).is_ok(), "not JSON: {l}");
    }
}

#[tokio::test]
async fn text_logs_carry_the_request_id() {
    let s = Server::start();
    let r = s.http.get(s.url("/queues")).send().await.unwrap();
    let id = request_id(r.headers());
    eventually("the access log line", || async {
        s.stderr()
            .lines()
            .any(|l| l.contains(&format!("request_id={id}")) && l.contains("status=200"))
            .then_some(())
    })
    .await;
}

#[cfg(unix)]
#[tokio::test]
async fn the_signing_key_folder_is_private_and_a_loose_one_is_warned_about_at_start() {
    use std::os::unix::fs::PermissionsExt;
    let s = Server::start_with(&[], &[]).expect("starts");
    // The key is made on first use: fetching the certificate makes it.
    let cert = s
        .http
        .get(s.url("/_loft/sns/SimpleNotificationService.pem"))
        .send()
        .await
        .unwrap();
    assert_eq!(cert.status(), 200);
    let folder = s.dir().join("loft-sns-signing");
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(
        mode(&folder),
        0o700,
        "only Loft's user may enter the folder"
    );
    assert_eq!(mode(&folder.join("key.pem")), 0o600);
    assert!(
        !s.stderr().contains("open to other users"),
        "{}",
        s.stderr()
    );
    let dir = s.stop();
    std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o755)).unwrap();
    let s = Server::start_in(dir, &[], &[]).expect("starts again");
    let log = s.stderr();
    assert!(
        log.contains("loft-sns-signing is open to other users (mode 0755)")
            && log.contains("chmod 700"),
        "{log}"
    );
}
