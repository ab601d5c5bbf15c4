//! `POST /_loft/reset` on a Loft with credentials: it removes the caller's account's
//! resources only (another account's queue of the same name, and the default account's,
//! stay), it is the IAM action `loft:Reset` (an identity whose policy denies it gets
//! 403), and it needs a caller (401 without one).

use base64::Engine as _;
use serde_json::{json, Value};

use crate::harness::{send_signed, Loft, Signer};

const A: (&str, &str) = ("AKIDRESETA", "secret-a");
const B: (&str, &str) = ("AKIDRESETB", "secret-b");
const A_NO_RESET: (&str, &str) = ("AKIDRESETANO", "secret-a-no");
const ROOT: (&str, &str) = ("AKIDRESETROOT", "secret-root");

fn start() -> (Loft, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = format!(
        r#"
[[credentials]]
access_key_id = "{}"
secret_access_key = "{}"
account_id = "111111111111"

[[credentials]]
access_key_id = "{}"
secret_access_key = "{}"
account_id = "222222222222"

[[credentials]]
access_key_id = "{}"
secret_access_key = "{}"
account_id = "111111111111"
identity = "user/no-reset"
policies = ['{{"Version":"2012-10-17","Statement":[{{"Effect":"Allow","Action":"*","Resource":"*"}},{{"Effect":"Deny","Action":"loft:Reset","Resource":"*"}}]}}']

[[credentials]]
access_key_id = "{}"
secret_access_key = "{}"
"#,
        A.0, A.1, B.0, B.1, A_NO_RESET.0, A_NO_RESET.1, ROOT.0, ROOT.1
    );
    let path = dir.path().join("loft.toml");
    std::fs::write(&path, config).expect("config");
    let loft = Loft::start(&["--config", path.to_str().unwrap()], &[]);
    (loft, dir)
}

/// A signed SQS JSON call by `key`: its status and JSON body.
pub(crate) async fn sqs(loft: &Loft, key: (&str, &str), op: &str, input: Value) -> (u16, Value) {
    let target = format!("AmazonSQS.{op}");
    let body = input.to_string();
    let signer = Signer {
        key: key.0,
        secret: key.1,
        service: "sqs",
        at: std::time::SystemTime::now(),
    };
    let resp = send_signed(
        &signer,
        "POST",
        &format!("{}/", loft.url),
        &[
            ("content-type", "application/x-amz-json-1.0"),
            ("x-amz-target", &target),
        ],
        body.as_bytes(),
    )
    .await;
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// `POST /_loft/reset` signed in with HTTP Basic as `key` (`None`: no credentials).
async fn reset(loft: &Loft, key: Option<(&str, &str)>) -> (u16, Value) {
    let mut req = reqwest::Client::new()
        .post(format!("{}/_loft/reset", loft.url))
        .header("x-loft-console", "1");
    if let Some((id, secret)) = key {
        let token = base64::engine::general_purpose::STANDARD.encode(format!("{id}:{secret}"));
        req = req.header("authorization", format!("Basic {token}"));
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

/// Creates `name` as `key` and sends one message to it.
async fn queue_with_a_message(loft: &Loft, key: (&str, &str), name: &str) -> String {
    let (status, out) = sqs(loft, key, "CreateQueue", json!({"QueueName": name})).await;
    assert_eq!(status, 200, "CreateQueue {name}: {out}");
    let url = out["QueueUrl"].as_str().unwrap().to_owned();
    let (status, out) = sqs(
        loft,
        key,
        "SendMessage",
        json!({"QueueUrl": url, "MessageBody": "kept?"}),
    )
    .await;
    assert_eq!(status, 200, "SendMessage {name}: {out}");
    url
}

async fn listed(loft: &Loft, key: (&str, &str)) -> Vec<String> {
    let (status, out) = sqs(loft, key, "ListQueues", json!({})).await;
    assert_eq!(status, 200, "{out}");
    out["QueueUrls"]
        .as_array()
        .map(|a| a.iter().map(|u| u.as_str().unwrap().to_owned()).collect())
        .unwrap_or_default()
}

#[tokio::test]
async fn a_reset_removes_the_callers_account_only_and_is_an_iam_action() {
    let (loft, _dir) = start();
    queue_with_a_message(&loft, A, "shared-name").await;
    queue_with_a_message(&loft, A, "a-only").await;
    let b_url = queue_with_a_message(&loft, B, "shared-name").await;
    let root_url = queue_with_a_message(&loft, ROOT, "root-queue").await;

    let (status, body) = reset(&loft, None).await;
    assert_eq!(status, 401, "no caller: {body}");
    let (status, body) = reset(&loft, Some(A_NO_RESET)).await;
    assert_eq!(status, 403, "denied by policy: {body}");
    assert!(body.to_string().contains("loft:Reset"), "{body}");
    assert_eq!(
        listed(&loft, A).await.len(),
        2,
        "a refused reset removes nothing"
    );

    let (status, counts) = reset(&loft, Some(A)).await;
    assert_eq!(status, 200, "{counts}");
    assert_eq!(
        (counts["queues"].as_u64(), counts["messages"].as_u64()),
        (Some(2), Some(2)),
        "{counts}"
    );
    assert!(listed(&loft, A).await.is_empty());
    assert_eq!(listed(&loft, B).await, [b_url.as_str()]);
    assert_eq!(listed(&loft, ROOT).await, [root_url.as_str()]);
    for (key, url) in [(B, &b_url), (ROOT, &root_url)] {
        let (status, out) = sqs(
            &loft,
            key,
            "GetQueueAttributes",
            json!({"QueueUrl": url, "AttributeNames": ["ApproximateNumberOfMessages"]}),
        )
        .await;
        assert_eq!(status, 200, "{out}");
        assert_eq!(
            out["Attributes"]["ApproximateNumberOfMessages"], "1",
            "{url}"
        );
    }
    // A's names are free again at once.
    let (status, out) = sqs(&loft, A, "CreateQueue", json!({"QueueName": "a-only"})).await;
    assert_eq!(status, 200, "{out}");
}
