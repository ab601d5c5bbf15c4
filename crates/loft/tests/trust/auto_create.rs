//! `--auto-create-queues` with credentials: a queue made on first use is the caller's,
//! in its own account, and making it is `sqs:CreateQueue` (an identity whose policy
//! denies that gets 403 and no queue); another account's missing queue is not made.

use serde_json::json;

use crate::harness::Loft;
use crate::reset::sqs;

const OWNER: (&str, &str) = ("AKIDAUTOOWNER", "secret-owner");
const NO_CREATE: (&str, &str) = ("AKIDAUTONOCREATE", "secret-no-create");
const OTHER: (&str, &str) = ("AKIDAUTOOTHER", "secret-other");

#[tokio::test]
async fn a_queue_made_on_first_use_is_the_callers_and_needs_create_queue() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = format!(
        r#"
[server]
auto_create_queues = true

[[credentials]]
access_key_id = "{}"
secret_access_key = "{}"
account_id = "111111111111"

[[credentials]]
access_key_id = "{}"
secret_access_key = "{}"
account_id = "111111111111"
identity = "user/no-create"
policies = ['{{"Version":"2012-10-17","Statement":[{{"Effect":"Allow","Action":"*","Resource":"*"}},{{"Effect":"Deny","Action":"sqs:CreateQueue","Resource":"*"}}]}}']

[[credentials]]
access_key_id = "{}"
secret_access_key = "{}"
account_id = "222222222222"
"#,
        OWNER.0, OWNER.1, NO_CREATE.0, NO_CREATE.1, OTHER.0, OTHER.1
    );
    let path = dir.path().join("loft.toml");
    std::fs::write(&path, config).expect("config");
    let loft = Loft::start(&["--config", path.to_str().unwrap()], &[]);
    let url = |account: &str, name: &str| format!("{}/{account}/{name}", loft.url);

    let (status, out) = sqs(
        &loft,
        NO_CREATE,
        "SendMessage",
        json!({"QueueUrl": url("111111111111", "denied"), "MessageBody": "x"}),
    )
    .await;
    assert_eq!(status, 403, "{out}");
    assert!(out.to_string().contains("sqs:CreateQueue"), "{out}");
    let (status, out) = sqs(&loft, OWNER, "GetQueueUrl", json!({"QueueName": "denied"})).await;
    assert_eq!(status, 200, "the owner may make it: {out}");

    // B's send to a missing queue of A's account makes nothing there.
    let (status, out) = sqs(
        &loft,
        OTHER,
        "SendMessage",
        json!({"QueueUrl": url("111111111111", "not-yours"), "MessageBody": "x"}),
    )
    .await;
    assert!(status >= 400, "{out}");
    let (_, listed) = sqs(&loft, OWNER, "ListQueues", json!({})).await;
    assert!(!listed.to_string().contains("not-yours"), "{listed}");
    // B's own send makes B's queue.
    let (status, out) = sqs(
        &loft,
        OTHER,
        "SendMessage",
        json!({"QueueUrl": url("222222222222", "mine"), "MessageBody": "x"}),
    )
    .await;
    assert_eq!(status, 200, "{out}");
    let (_, listed) = sqs(&loft, OTHER, "ListQueues", json!({})).await;
    assert_eq!(
        listed["QueueUrls"][0],
        url("222222222222", "mine"),
        "{listed}"
    );
}
