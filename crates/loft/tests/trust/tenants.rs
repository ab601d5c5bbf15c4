//! Two tenants on one Loft: accounts A (111111111111) and B (222222222222), a key of the
//! default account, and an identity of A whose policy denies `sqs:ReceiveMessage`. B
//! must not reach A's event source mappings through the Lambda API or the console's
//! `/_loft/mappings`, nor cancel A's message move task with A's TaskHandle; A creates a
//! mapping on its own queue by the queue's real ARN. Functions belong to their configured
//! account: another account neither sees, maps nor subscribes one unless it is allowed,
//! and cannot tell one of A's functions (or task handles) from a made-up one.

use serde_json::{json, Value};

use crate::harness::{send_signed, Loft, Signer};

const A: (&str, &str) = ("AKIDTENANTA", "secret-a");
const B: (&str, &str) = ("AKIDTENANTB", "secret-b");
const A_DENIED: (&str, &str) = ("AKIDTENANTADENIED", "secret-a-denied");
const ROOT: (&str, &str) = ("AKIDDEFAULT", "secret-default");
const ACCOUNT_A: &str = "111111111111";

fn start() -> (Loft, tempfile::TempDir) {
    start_with(&[])
}

/// [`start`] with more flags of `loft serve`.
fn start_with(args: &[&str]) -> (Loft, tempfile::TempDir) {
    start_config("", args)
}

/// [`start_with`] with `extra` appended to the config file (more TOML tables).
fn start_config(extra: &str, args: &[&str]) -> (Loft, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = format!(
        r#"
# The default account's, and allowed to A and B: their mappings are judged by the queue.
[[functions]]
name = "worker"
url = "http://127.0.0.1:9/handler"
timeout_seconds = 3
allow_accounts = ["{ACCOUNT_A}", "222222222222"]

# A's own, allowed to no other account.
[[functions]]
name = "a-only"
url = "http://127.0.0.1:9/handler"
account = "{ACCOUNT_A}"

[[credentials]]
access_key_id = "{}"
secret_access_key = "{}"
account_id = "{ACCOUNT_A}"

[[credentials]]
access_key_id = "{}"
secret_access_key = "{}"
account_id = "222222222222"

[[credentials]]
access_key_id = "{}"
secret_access_key = "{}"
account_id = "{ACCOUNT_A}"
identity = "user/no-receive"
policies = ['{{"Version":"2012-10-17","Statement":[{{"Effect":"Allow","Action":"*","Resource":"*"}},{{"Effect":"Deny","Action":"sqs:ReceiveMessage","Resource":"*"}}]}}']

[[credentials]]
access_key_id = "{}"
secret_access_key = "{}"
"#,
        A.0, A.1, B.0, B.1, A_DENIED.0, A_DENIED.1, ROOT.0, ROOT.1
    );
    config.push_str(extra);
    let path = dir.path().join("loft.toml");
    std::fs::write(&path, config).expect("config");
    let mut all = vec!["--config", path.to_str().unwrap()];
    all.extend_from_slice(args);
    let loft = Loft::start(&all, &[]);
    (loft, dir)
}

fn signer(key: (&'static str, &'static str), service: &'static str) -> Signer<'static> {
    Signer {
        key: key.0,
        secret: key.1,
        service,
        at: std::time::SystemTime::now(),
    }
}

/// A signed Lambda API call: its status, `x-amzn-ErrorType` and JSON body.
async fn lambda(
    loft: &Loft,
    key: (&'static str, &'static str),
    method: &str,
    path: &str,
    body: Option<Value>,
) -> (u16, String, Value) {
    let url = format!("{}{path}", loft.url);
    let bytes = body.map(|b| b.to_string()).unwrap_or_default();
    let resp = send_signed(
        &signer(key, "lambda"),
        method,
        &url,
        &[("content-type", "application/json")],
        bytes.as_bytes(),
    )
    .await;
    let status = resp.status().as_u16();
    let kind = resp
        .headers()
        .get("x-amzn-errortype")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let text = resp.text().await.unwrap();
    (
        status,
        kind,
        serde_json::from_str(&text).unwrap_or(Value::Null),
    )
}

/// A signed SQS JSON call by `key`: its status and JSON body.
async fn sqs(
    loft: &Loft,
    key: (&'static str, &'static str),
    op: &str,
    input: Value,
) -> (u16, Value) {
    let target = format!("AmazonSQS.{op}");
    let body = input.to_string();
    let resp = send_signed(
        &signer(key, "sqs"),
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

async fn create_queue(
    loft: &Loft,
    key: (&'static str, &'static str),
    name: &str,
    attrs: Value,
) -> String {
    let (status, out) = sqs(
        loft,
        key,
        "CreateQueue",
        json!({"QueueName": name, "Attributes": attrs}),
    )
    .await;
    assert_eq!(status, 200, "CreateQueue {name}: {out}");
    out["QueueUrl"].as_str().unwrap().to_owned()
}

fn queue_arn(account: &str, name: &str) -> String {
    format!("arn:aws:sqs:us-east-1:{account}:{name}")
}

/// A queue Policy (JSON) that lets topic `topic` (by `aws:SourceArn`) send into the queue
/// `queue_arn`, as the SNS Developer Guide's cross-account example writes it.
fn topic_may_send(queue_arn: &str, topic: &str) -> String {
    json!({
        "Version": "2012-10-17",
        "Statement": [{
            "Effect": "Allow",
            "Principal": {"Service": "sns.amazonaws.com"},
            "Action": "sqs:SendMessage",
            "Resource": queue_arn,
            "Condition": {"ArnEquals": {"aws:SourceArn": topic}},
        }]
    })
    .to_string()
}

/// Publishes `text` to `topic` as `key`, asserting it succeeds; the MessageId.
async fn publish_as(
    loft: &Loft,
    key: (&'static str, &'static str),
    topic: &str,
    text: &str,
) -> String {
    let (status, out) = sns(
        loft,
        key,
        &[
            ("Action", "Publish"),
            ("TopicArn", topic),
            ("Message", text),
        ],
    )
    .await;
    assert_eq!(status, 200, "{out}");
    xml_value(&out, "MessageId").unwrap().to_owned()
}

/// Up to 10 messages received from the queue at `url` as `key` (JSON protocol), asserting
/// the call succeeds.
async fn receive_all(loft: &Loft, key: (&'static str, &'static str), url: String) -> Vec<Value> {
    let (status, out) = sqs(
        loft,
        key,
        "ReceiveMessage",
        json!({"QueueUrl": url, "MaxNumberOfMessages": 10}),
    )
    .await;
    assert_eq!(status, 200, "{out}");
    out["Messages"].as_array().cloned().unwrap_or_default()
}

/// `key`'s (of `account`) dead-letter queue `dlq`, the one of its queue `source`, holding
/// `n` messages; its ARN and URL.
async fn dead_letter_queue(
    loft: &Loft,
    key: (&'static str, &'static str),
    account: &str,
    dlq: &str,
    source: &str,
    n: usize,
) -> (String, String) {
    let arn = queue_arn(account, dlq);
    let url = create_queue(loft, key, dlq, json!({})).await;
    let redrive = json!({"deadLetterTargetArn": arn, "maxReceiveCount": "1"}).to_string();
    create_queue(loft, key, source, json!({"RedrivePolicy": redrive})).await;
    for i in 0..n {
        let (status, out) = sqs(
            loft,
            key,
            "SendMessage",
            json!({"QueueUrl": url, "MessageBody": format!("m{i}")}),
        )
        .await;
        assert_eq!(status, 200, "{out}");
    }
    (arn, url)
}

#[tokio::test]
async fn event_source_mappings_are_their_accounts_own() {
    let (loft, _dir) = start();
    create_queue(&loft, A, "a-work", json!({})).await;
    let arn = queue_arn(ACCOUNT_A, "a-work");

    // A maps its own queue by its real ARN, to the default account's function that
    // allows A, named by its ARN (a name alone would be A's own function).
    let (status, _, created) = lambda(
        &loft,
        A,
        "POST",
        "/2015-03-31/event-source-mappings/",
        Some(
            json!({"FunctionName": "arn:aws:lambda:us-east-1:000000000000:function:worker", "EventSourceArn": arn, "Enabled": true}),
        ),
    )
    .await;
    assert_eq!(status, 202, "{created}");
    assert_eq!(created["EventSourceArn"], arn.as_str());
    let uuid = created["UUID"].as_str().unwrap().to_owned();
    assert_eq!(
        created["EventSourceMappingArn"],
        format!("arn:aws:lambda:us-east-1:{ACCOUNT_A}:event-source-mapping:{uuid}").as_str()
    );

    // B lists none of them, and gets, disables and deletes none.
    let (status, _, listed) =
        lambda(&loft, B, "GET", "/2015-03-31/event-source-mappings/", None).await;
    assert_eq!(status, 200);
    assert_eq!(listed["EventSourceMappings"], json!([]));
    let one = format!("/2015-03-31/event-source-mappings/{uuid}");
    for (method, body) in [
        ("GET", None),
        ("PUT", Some(json!({"Enabled": false}))),
        ("DELETE", None),
    ] {
        // As for a UUID that names nothing: Lambda's mappings are their account's, and a
        // 403 would tell B that A's UUID exists.
        let (status, kind, out) = lambda(&loft, B, method, &one, body).await;
        assert_eq!(
            (status, kind.as_str()),
            (404, "ResourceNotFoundException"),
            "{method}: {out}"
        );
    }
    // B cannot map A's queue either (A's queue has no policy for B).
    let (status, kind, _) = lambda(
        &loft,
        B,
        "POST",
        "/2015-03-31/event-source-mappings/",
        Some(json!({"FunctionName": "worker", "EventSourceArn": arn})),
    )
    .await;
    assert_eq!((status, kind.as_str()), (403, "AccessDeniedException"));

    // A's mapping is untouched and A's own.
    let (status, _, got) = lambda(&loft, A, "GET", &one, None).await;
    assert_eq!(status, 200, "{got}");
    assert_eq!(got["State"], "Enabled");
    let (_, _, listed) = lambda(&loft, A, "GET", "/2015-03-31/event-source-mappings/", None).await;
    assert_eq!(listed["EventSourceMappings"].as_array().unwrap().len(), 1);

    // The console's mappings are the caller's account's: B and the default account's
    // key see none of A's, A sees its own.
    let url = format!("{}/_loft/mappings", loft.url);
    for key in [B, ROOT] {
        let resp = send_signed(&signer(key, "sqs"), "GET", &url, &[], b"").await;
        assert_eq!(resp.status(), 200);
        let console: Value = resp.json().await.unwrap();
        assert_eq!(console, json!([]), "{}: A's mapping is A's alone", key.0);
    }
    let resp = send_signed(&signer(A, "sqs"), "GET", &url, &[], b"").await;
    let console: Value = resp.json().await.unwrap();
    assert_eq!(console[0]["uuid"], uuid.as_str(), "{console}");

    // A deletes it.
    let (status, _, _) = lambda(&loft, A, "DELETE", &one, None).await;
    assert_eq!(status, 202);
}

#[tokio::test]
async fn a_mapping_needs_its_creator_allowed_to_read_the_queue() {
    let (loft, _dir) = start();
    create_queue(&loft, A, "a-denied", json!({})).await;
    let (status, kind, out) = lambda(
        &loft,
        A_DENIED,
        "POST",
        "/2015-03-31/event-source-mappings/",
        Some(json!({"FunctionName": "worker", "EventSourceArn": queue_arn(ACCOUNT_A, "a-denied")})),
    )
    .await;
    assert_eq!(
        (status, kind.as_str()),
        (403, "AccessDeniedException"),
        "{out}"
    );
    assert!(
        out["Message"]
            .as_str()
            .unwrap()
            .contains("sqs:ReceiveMessage"),
        "{out}"
    );
    // Nothing was made.
    let (_, _, listed) = lambda(&loft, A, "GET", "/2015-03-31/event-source-mappings/", None).await;
    assert_eq!(listed["EventSourceMappings"], json!([]));
}

#[tokio::test]
async fn another_accounts_task_handle_cancels_nothing() {
    let (loft, _dir) = start();
    let (dlq, _) = dead_letter_queue(&loft, A, ACCOUNT_A, "a-dlq", "a-src", 5).await;
    create_queue(&loft, A, "a-dest", json!({})).await;
    // One message a second: the task runs for seconds.
    let (status, out) = sqs(
        &loft,
        A,
        "StartMessageMoveTask",
        json!({"SourceArn": dlq, "DestinationArn": queue_arn(ACCOUNT_A, "a-dest"),
               "MaxNumberOfMessagesPerSecond": 1}),
    )
    .await;
    assert_eq!(status, 200, "{out}");
    let handle = out["TaskHandle"].as_str().unwrap().to_owned();

    let (status, out) = sqs(
        &loft,
        B,
        "CancelMessageMoveTask",
        json!({"TaskHandle": handle}),
    )
    .await;
    assert_eq!(status, 403, "{out}");
    assert!(
        out["__type"]
            .as_str()
            .unwrap_or("")
            .contains("AccessDenied"),
        "{out}"
    );
    // A handle made up to name A's queue gets the same answer: a 404 would tell B which
    // handle is a running task's.
    use base64::Engine as _;
    let forged = base64::engine::general_purpose::STANDARD.encode(
        json!({"taskId": "6f1c3a52-8d4e-4b7a-9c2d-0e5f7a1b3c4d", "sourceArn": dlq}).to_string(),
    );
    let (forged_status, forged_out) = sqs(
        &loft,
        B,
        "CancelMessageMoveTask",
        json!({"TaskHandle": forged}),
    )
    .await;
    assert_eq!((forged_status, &forged_out), (status, &out));
    // The task still runs, and A itself cancels it.
    let (_, listed) = sqs(&loft, A, "ListMessageMoveTasks", json!({"SourceArn": dlq})).await;
    assert_eq!(listed["Results"][0]["Status"], "RUNNING", "{listed}");
    let (status, out) = sqs(
        &loft,
        A,
        "CancelMessageMoveTask",
        json!({"TaskHandle": handle}),
    )
    .await;
    assert_eq!(status, 200, "{out}");
    // A handle that is not one at all is answered as AWS answers it, whoever asks.
    let (status, out) = sqs(
        &loft,
        B,
        "CancelMessageMoveTask",
        json!({"TaskHandle": "bm9uZQ=="}),
    )
    .await;
    assert_eq!(status, 400, "{out}");
    assert_eq!(
        out["message"], "Value for parameter TaskHandle is invalid.",
        "{out}"
    );
}

/// A signed SNS query call by `key`: its status and body text.
async fn sns(
    loft: &Loft,
    key: (&'static str, &'static str),
    params: &[(&str, &str)],
) -> (u16, String) {
    let body = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(params)
        .finish();
    let resp = send_signed(
        &signer(key, "sns"),
        "POST",
        &format!("{}/", loft.url),
        &[("content-type", "application/x-www-form-urlencoded")],
        body.as_bytes(),
    )
    .await;
    (resp.status().as_u16(), resp.text().await.unwrap())
}

/// A function belongs to its configured account: another account's key does not see it
/// in the Lambda API, cannot map it and cannot subscribe its topic to it, unless the
/// function's `allow_accounts` names that account.
#[tokio::test]
async fn functions_are_their_accounts_own_unless_they_allow_another() {
    let (loft, _dir) = start();
    let a_only = format!("arn:aws:lambda:us-east-1:{ACCOUNT_A}:function:a-only");
    // The Lambda API: B's name alone is B's own function, and A's by its ARN is answered
    // as a missing one (`another_accounts_function_is_answered_as_a_missing_one`); B
    // lists its own (none); A and the default account list their own.
    let (status, kind, out) = lambda(&loft, B, "GET", "/2015-03-31/functions/a-only", None).await;
    assert_eq!(
        (status, kind.as_str(), &out["Message"]),
        (
            404,
            "ResourceNotFoundException",
            &json!("Function not found: arn:aws:lambda:us-east-1:222222222222:function:a-only")
        ),
        "{out}"
    );
    let (status, kind, out) = lambda(
        &loft,
        B,
        "GET",
        &format!("/2015-03-31/functions/{a_only}"),
        None,
    )
    .await;
    assert_eq!(
        (status, kind.as_str(), &out["Message"]),
        (
            404,
            "ResourceNotFoundException",
            &json!(format!("Function not found: {a_only}"))
        ),
        "{out}"
    );
    let names = |v: &Value| -> Vec<String> {
        v["Functions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["FunctionName"].as_str().unwrap().to_owned())
            .collect()
    };
    let (_, _, listed) = lambda(&loft, B, "GET", "/2015-03-31/functions/", None).await;
    assert!(names(&listed).is_empty(), "{listed}");
    let (_, _, listed) = lambda(&loft, A, "GET", "/2015-03-31/functions/", None).await;
    assert_eq!(names(&listed), ["a-only"], "{listed}");
    assert_eq!(listed["Functions"][0]["FunctionArn"], a_only.as_str());
    let (_, _, listed) = lambda(&loft, ROOT, "GET", "/2015-03-31/functions/", None).await;
    assert_eq!(names(&listed), ["worker"], "{listed}");
    let (status, _, got) = lambda(&loft, A, "GET", "/2015-03-31/functions/a-only", None).await;
    assert_eq!(status, 200, "{got}");

    // Mappings: B cannot map A's function on its own queue; A can, and the mapping
    // names the function in A's account.
    create_queue(&loft, B, "b-work", json!({})).await;
    let (status, kind, out) = lambda(
        &loft,
        B,
        "POST",
        "/2015-03-31/event-source-mappings/",
        Some(json!({"FunctionName": "a-only", "EventSourceArn": queue_arn("222222222222", "b-work")})),
    )
    .await;
    assert_eq!(
        (status, kind.as_str()),
        (404, "ResourceNotFoundException"),
        "{out}"
    );
    create_queue(&loft, A, "a-work", json!({})).await;
    let (status, _, out) = lambda(
        &loft,
        A,
        "POST",
        "/2015-03-31/event-source-mappings/",
        Some(json!({"FunctionName": "a-only", "EventSourceArn": queue_arn(ACCOUNT_A, "a-work"), "Enabled": false})),
    )
    .await;
    assert_eq!(status, 202, "{out}");
    assert_eq!(out["FunctionArn"], a_only.as_str());

    // SNS: B's topic cannot subscribe A's function; the default account's `worker`,
    // which allows B, it can.
    let (status, out) = sns(&loft, B, &[("Action", "CreateTopic"), ("Name", "b-topic")]).await;
    assert_eq!(status, 200, "{out}");
    let b_topic = "arn:aws:sns:us-east-1:222222222222:b-topic";
    let (status, out) = sns(
        &loft,
        B,
        &[
            ("Action", "Subscribe"),
            ("TopicArn", b_topic),
            ("Protocol", "lambda"),
            ("Endpoint", &a_only),
        ],
    )
    .await;
    assert_eq!(status, 403, "{out}");
    assert!(
        out.contains("AuthorizationError") && out.contains("lambda:InvokeFunction"),
        "{out}"
    );
    let worker = "arn:aws:lambda:us-east-1:000000000000:function:worker";
    let (status, out) = sns(
        &loft,
        B,
        &[
            ("Action", "Subscribe"),
            ("TopicArn", b_topic),
            ("Protocol", "lambda"),
            ("Endpoint", worker),
        ],
    )
    .await;
    assert_eq!(status, 200, "{out}");
}

/// The console's and the seeds' listings show a key its own account's queues and topics,
/// and the console's by-name routes reach them by the name the listing gives; the default
/// account's key sees none of B's.
#[tokio::test]
async fn listings_show_each_key_its_own_accounts_resources() {
    let (loft, _dir) = start();
    create_queue(&loft, B, "b-console", json!({})).await;
    create_queue(&loft, ROOT, "root-console", json!({})).await;
    let get = |key, path: &str| {
        let url = format!("{}{path}", loft.url);
        async move {
            let resp = send_signed(&signer(key, "sqs"), "GET", &url, &[], b"").await;
            let status = resp.status().as_u16();
            (status, resp.text().await.unwrap())
        }
    };
    let (status, listed) = get(B, "/_loft/queues").await;
    assert_eq!(status, 200, "{listed}");
    let listed: Value = serde_json::from_str(&listed).unwrap();
    let names: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["222222222222/b-console"], "{listed}");
    assert_eq!(
        listed[0]["arn"],
        "arn:aws:sqs:us-east-1:222222222222:b-console"
    );
    let (status, page) = get(B, "/_loft/queues/222222222222%2Fb-console/messages").await;
    assert_eq!(status, 200, "{page}");
    let (_, seeds) = get(B, "/queues").await;
    assert_eq!(seeds, r#"["222222222222/b-console"]"#);
    for path in ["/_loft/queues", "/queues"] {
        let (status, root) = get(ROOT, path).await;
        assert_eq!(status, 200);
        assert!(root.contains("root-console"), "{path}: {root}");
        assert!(!root.contains("b-console"), "{path}: {root}");
    }
    // B's key reads the default account's queue by name only as the AWS operation would:
    // refused, as it has no policy for B.
    let (status, refused) = get(B, "/_loft/queues/root-console/messages").await;
    assert_eq!(status, 403, "{refused}");
    // The seeds' routes take the key the listing gives for every verb: B sends to its queue
    // by `ACCOUNT%2FNAME` and receives it there; the default account's key is refused, and
    // a new name with a `/` is still no name.
    let post = |key, path: &str, body: &'static str| {
        let url = format!("{}{path}", loft.url);
        async move {
            let headers = [("content-type", "application/json")];
            let resp =
                send_signed(&signer(key, "sqs"), "POST", &url, &headers, body.as_bytes()).await;
            let status = resp.status().as_u16();
            (status, resp.text().await.unwrap())
        }
    };
    let seeds_queue = "/queues/222222222222%2Fb-console/messages";
    let (status, sent) = post(B, seeds_queue, r#"{"body":"by key"}"#).await;
    assert_eq!(status, 201, "{sent}");
    let (status, got) = get(B, seeds_queue).await;
    assert_eq!(status, 200, "{got}");
    assert!(got.contains("by key"), "{got}");
    let (status, refused) = post(ROOT, seeds_queue, r#"{"body":"not mine"}"#).await;
    assert_eq!(status, 403, "{refused}");
    let (status, refused) = post(
        B,
        "/queues/222222222222%2Fnew-one/messages",
        r#"{"body":"x"}"#,
    )
    .await;
    assert_eq!(status, 400, "{refused}");
}

/// B's answers about A's function and about a made-up one of the same spelling must be the
/// same, once B's own input is read back (the made-up name as A's): a name alone is
/// looked up in the caller's own account, as Lambda resolves FunctionName, and another
/// account's function that does not allow B is answered as a missing one of the ARN B
/// named, never of A's data. The default account (000000000000) is neither A's nor B's.
#[tokio::test]
async fn another_accounts_function_is_answered_as_a_missing_one() {
    let (loft, _dir) = start();
    create_queue(&loft, B, "b-own", json!({})).await;
    let b_queue = queue_arn("222222222222", "b-own");
    let worker = "arn:aws:lambda:us-east-1:000000000000:function:worker";
    let (status, _, made) = lambda(
        &loft,
        B,
        "POST",
        "/2015-03-31/event-source-mappings/",
        Some(json!({"FunctionName": worker, "EventSourceArn": b_queue, "Enabled": false})),
    )
    .await;
    assert_eq!(
        status, 202,
        "B maps its queue to the function that allows it: {made}"
    );
    let b_mapping = made["UUID"].as_str().unwrap().to_owned();
    let spellings = |name: &str| {
        [
            name.to_owned(),
            format!("{ACCOUNT_A}:function:{name}"),
            format!("arn:aws:lambda:us-east-1:{ACCOUNT_A}:function:{name}"),
        ]
    };
    let (real, fake) = ("a-only", "a-nosuch");
    let mut doors = Vec::new();
    for (r, f) in spellings(real).into_iter().zip(spellings(fake)) {
        let query = |n: &str| -> String { form_urlencoded::byte_serialize(n.as_bytes()).collect() };
        for (op, method) in [
            ("GetFunction", "GET"),
            ("ListEventSourceMappings", "GET"),
            ("CreateEventSourceMapping", "POST"),
            ("UpdateEventSourceMapping", "PUT"),
        ] {
            let request = |n: &str| match op {
                "GetFunction" => (format!("/2015-03-31/functions/{n}"), None),
                "ListEventSourceMappings" => (
                    format!(
                        "/2015-03-31/event-source-mappings/?FunctionName={}",
                        query(n)
                    ),
                    None,
                ),
                "CreateEventSourceMapping" => (
                    "/2015-03-31/event-source-mappings/".to_owned(),
                    Some(json!({"FunctionName": n, "EventSourceArn": b_queue})),
                ),
                _ => (
                    format!("/2015-03-31/event-source-mappings/{b_mapping}"),
                    Some(json!({"FunctionName": n})),
                ),
            };
            let (path, body) = request(&r);
            let a = lambda(&loft, B, method, &path, body).await;
            let (path, body) = request(&f);
            let m = lambda(&loft, B, method, &path, body).await;
            let echoed = serde_json::from_str::<Value>(&m.2.to_string().replace(fake, real))
                .unwrap_or(Value::Null);
            if (a.0, &a.1, &a.2) != (m.0, &m.1, &echoed) {
                doors.push(format!("{op} {r}: A's {a:?}, made up {m:?}"));
            }
            assert!(a.0 >= 400, "{op} {r}: B reached A's function: {a:?}");
        }
    }
    // SNS: B's topic subscribing A's function is refused as one subscribing a made-up
    // function of A's account.
    let (status, out) = sns(&loft, B, &[("Action", "CreateTopic"), ("Name", "b-doors")]).await;
    assert_eq!(status, 200, "{out}");
    let b_topic = "arn:aws:sns:us-east-1:222222222222:b-doors";
    let mut answers = Vec::new();
    for name in [real, fake] {
        let endpoint = format!("arn:aws:lambda:us-east-1:{ACCOUNT_A}:function:{name}");
        let (status, out) = sns(
            &loft,
            B,
            &[
                ("Action", "Subscribe"),
                ("TopicArn", b_topic),
                ("Protocol", "lambda"),
                ("Endpoint", &endpoint),
            ],
        )
        .await;
        let message = out
            .split_once("<RequestId>")
            .map_or(out.as_str(), |(head, _)| head)
            .replace(fake, real);
        answers.push((status, message));
    }
    if answers[0] != answers[1] {
        doors.push(format!(
            "Subscribe: A's {:?}, made up {:?}",
            answers[0], answers[1]
        ));
    }
    assert_eq!(answers[0].0, 403, "{answers:?}");
    assert!(
        doors.is_empty(),
        "B tells A's function from a made-up one:\n{}",
        doors.join("\n")
    );
}

/// The text between `<tag>` and `</tag>` in `xml`, when present.
fn xml_value<'a>(xml: &'a str, tag: &str) -> Option<&'a str> {
    let start = xml.find(&format!("<{tag}>"))? + tag.len() + 2;
    let end = xml[start..].find(&format!("</{tag}>"))? + start;
    Some(&xml[start..end])
}

/// A subscription belongs to the account that made it (SNS Developer Guide, "Sending
/// Amazon SNS messages to an Amazon SQS queue in a different account"): when B subscribes
/// its queue to A's topic, which lets B subscribe, GetSubscriptionAttributes reports B as
/// `Owner`; B may get, set and unsubscribe it, and B's ListSubscriptions lists it, A's does
/// not (ListSubscriptions lists "the requester's subscriptions"); A, the topic's owner,
/// sees it in ListSubscriptionsByTopic and may manage it too. A third account gets the same
/// refusal for B's subscription as for a made-up id on A's topic.
#[tokio::test]
async fn a_subscription_belongs_to_the_account_that_made_it() {
    let (loft, _dir) = start();
    let policy = json!({
        "Version": "2012-10-17",
        "Statement": [{
            "Effect": "Allow",
            "Principal": {"AWS": "arn:aws:iam::222222222222:root"},
            "Action": "sns:Subscribe",
            "Resource": format!("arn:aws:sns:us-east-1:{ACCOUNT_A}:a-shared"),
        }]
    })
    .to_string();
    let (status, out) = sns(
        &loft,
        A,
        &[
            ("Action", "CreateTopic"),
            ("Name", "a-shared"),
            ("Attributes.entry.1.key", "Policy"),
            ("Attributes.entry.1.value", &policy),
        ],
    )
    .await;
    assert_eq!(status, 200, "{out}");
    let topic = format!("arn:aws:sns:us-east-1:{ACCOUNT_A}:a-shared");
    create_queue(&loft, B, "b-subscriber", json!({})).await;
    let (status, out) = sns(
        &loft,
        B,
        &[
            ("Action", "Subscribe"),
            ("TopicArn", &topic),
            ("Protocol", "sqs"),
            ("Endpoint", &queue_arn("222222222222", "b-subscriber")),
        ],
    )
    .await;
    assert_eq!(status, 200, "B subscribes its queue: {out}");
    let arn = xml_value(&out, "SubscriptionArn").unwrap().to_owned();
    assert!(arn.starts_with(&format!("{topic}:")), "{arn}");

    let get = |key| {
        let arn = arn.clone();
        let loft = &loft;
        async move {
            sns(
                loft,
                key,
                &[
                    ("Action", "GetSubscriptionAttributes"),
                    ("SubscriptionArn", &arn),
                ],
            )
            .await
        }
    };
    let (status, out) = get(B).await;
    assert_eq!(status, 200, "B gets its subscription: {out}");
    assert!(
        out.contains("<key>Owner</key><value>222222222222</value>")
            || out.contains("<key>Owner</key>\n        <value>222222222222</value>"),
        "Owner is B: {out}"
    );
    assert!(!out.contains("LoftSubscriberAccount"), "{out}");
    let (status, out) = get(A).await;
    assert_eq!(status, 200, "A, the topic's owner, gets it: {out}");
    assert!(out.contains("222222222222</value>"), "{out}");

    let listed = |key| {
        let loft = &loft;
        async move { sns(loft, key, &[("Action", "ListSubscriptions")]).await }
    };
    let (status, out) = listed(B).await;
    assert_eq!(status, 200, "{out}");
    assert!(out.contains(&arn), "B lists its subscription: {out}");
    assert!(out.contains("<Owner>222222222222</Owner>"), "{out}");
    let (status, out) = listed(A).await;
    assert_eq!(status, 200, "{out}");
    assert!(
        !out.contains(&arn),
        "A's ListSubscriptions is A's own: {out}"
    );
    let (status, out) = sns(
        &loft,
        A,
        &[("Action", "ListSubscriptionsByTopic"), ("TopicArn", &topic)],
    )
    .await;
    assert_eq!(status, 200, "{out}");
    assert!(
        out.contains(&arn),
        "A lists its topic's subscriptions: {out}"
    );

    // A third account (the default one) is refused B's subscription as it is a made-up id
    // on A's topic: the same status and error.
    let made_up = format!("{topic}:00000000-0000-0000-0000-000000000000");
    let mut answers = Vec::new();
    for sub in [arn.as_str(), made_up.as_str()] {
        let (status, out) = sns(
            &loft,
            ROOT,
            &[
                ("Action", "GetSubscriptionAttributes"),
                ("SubscriptionArn", sub),
            ],
        )
        .await;
        answers.push((status, xml_value(&out, "Code").map(str::to_owned)));
    }
    assert_eq!(answers[0], answers[1], "{answers:?}");
    assert_eq!(answers[0].0, 403, "{answers:?}");

    let (status, out) = sns(
        &loft,
        B,
        &[
            ("Action", "SetSubscriptionAttributes"),
            ("SubscriptionArn", &arn),
            ("AttributeName", "RawMessageDelivery"),
            ("AttributeValue", "true"),
        ],
    )
    .await;
    assert_eq!(status, 200, "B sets its subscription: {out}");
    let (_, out) = get(B).await;
    assert!(out.contains("RawMessageDelivery"), "{out}");
    assert!(
        !out.contains("<key>RawMessageDelivery</key><value>false</value>"),
        "{out}"
    );
    // Its dead-letter queue is of its owner's account ("The Amazon SNS subscription and
    // Amazon SQS queue must be under the same AWS account and Region"): B's, not A's, the
    // topic's owner, whoever sets it.
    create_queue(&loft, A, "a-dlq", json!({})).await;
    create_queue(&loft, B, "b-dlq", json!({})).await;
    for (key, dlq_account, dlq, expected) in [
        (B, ACCOUNT_A, "a-dlq", 400),
        (A, ACCOUNT_A, "a-dlq", 400),
        (B, "222222222222", "b-dlq", 200),
    ] {
        let policy = json!({"deadLetterTargetArn": queue_arn(dlq_account, dlq)}).to_string();
        let (status, out) = sns(
            &loft,
            key,
            &[
                ("Action", "SetSubscriptionAttributes"),
                ("SubscriptionArn", &arn),
                ("AttributeName", "RedrivePolicy"),
                ("AttributeValue", &policy),
            ],
        )
        .await;
        assert_eq!(status, expected, "{dlq}: {out}");
    }
    let (status, out) = sns(
        &loft,
        B,
        &[("Action", "Unsubscribe"), ("SubscriptionArn", &arn)],
    )
    .await;
    assert_eq!(status, 200, "B unsubscribes: {out}");
    let (status, out) = get(A).await;
    assert_eq!(status, 404, "gone: {out}");
    // Once gone it is no longer B's: B is answered as for any id on A's topic.
    let (status, out) = get(B).await;
    assert_eq!(status, 403, "{out}");
}

/// When a topic's owner subscribes a queue of another account, the queue's owner must
/// confirm (SNS Developer Guide, "Sending Amazon SNS messages to an Amazon SQS queue in a
/// different account"): the subscription stays pending and gets no message until then; a
/// SubscriptionConfirmation with its Token and SubscribeURL arrives in the queue when the
/// queue's Policy lets the topic send, and ConfirmSubscription with that token starts the
/// deliveries. A queue whose Policy refuses the topic gets nothing, the confirmation
/// included.
#[tokio::test]
async fn another_accounts_queue_confirms_the_subscription_its_topic_made() {
    let (loft, _dir) = start();
    let (status, out) = sns(&loft, A, &[("Action", "CreateTopic"), ("Name", "a-fanout")]).await;
    assert_eq!(status, 200, "{out}");
    let topic = format!("arn:aws:sns:us-east-1:{ACCOUNT_A}:a-fanout");
    let inbox_arn = queue_arn("222222222222", "b-inbox");
    let policy = topic_may_send(&inbox_arn, &topic);
    let inbox = create_queue(&loft, B, "b-inbox", json!({"Policy": policy})).await;
    let closed = create_queue(&loft, B, "b-closed", json!({})).await;
    let receive = |url: String| receive_all(&loft, B, url);
    let subscribe = |endpoint: String| {
        let loft = &loft;
        let topic = topic.clone();
        async move {
            let (status, out) = sns(
                loft,
                A,
                &[
                    ("Action", "Subscribe"),
                    ("TopicArn", &topic),
                    ("Protocol", "sqs"),
                    ("Endpoint", &endpoint),
                ],
            )
            .await;
            assert_eq!(status, 200, "{out}");
            xml_value(&out, "SubscriptionArn").unwrap().to_owned()
        }
    };
    assert_eq!(subscribe(inbox_arn.clone()).await, "pending confirmation");
    assert_eq!(
        subscribe(queue_arn("222222222222", "b-closed")).await,
        "pending confirmation"
    );
    let publish = |text: &'static str| {
        let loft = &loft;
        let topic = topic.clone();
        async move {
            let (status, out) = sns(
                loft,
                A,
                &[
                    ("Action", "Publish"),
                    ("TopicArn", &topic),
                    ("Message", text),
                ],
            )
            .await;
            assert_eq!(status, 200, "{out}");
        }
    };
    publish("before the queue's owner confirms").await;

    assert!(
        receive(closed.clone()).await.is_empty(),
        "a refusing queue gets nothing"
    );
    let got = receive(inbox.clone()).await;
    assert_eq!(got.len(), 1, "the confirmation only: {got:?}");
    let body: Value = serde_json::from_str(got[0]["Body"].as_str().unwrap()).unwrap();
    assert_eq!(body["Type"], "SubscriptionConfirmation", "{body}");
    assert_eq!(body["TopicArn"], topic.as_str(), "{body}");
    assert!(body["SubscribeURL"]
        .as_str()
        .unwrap()
        .contains("Action=ConfirmSubscription"));
    let token = body["Token"].as_str().unwrap().to_owned();
    let (status, out) = sqs(
        &loft,
        B,
        "DeleteMessage",
        json!({"QueueUrl": inbox, "ReceiptHandle": got[0]["ReceiptHandle"]}),
    )
    .await;
    assert_eq!(status, 200, "{out}");

    let (status, out) = sns(
        &loft,
        B,
        &[
            ("Action", "ConfirmSubscription"),
            ("TopicArn", &topic),
            ("Token", &token),
        ],
    )
    .await;
    assert_eq!(status, 200, "B confirms: {out}");
    let arn = xml_value(&out, "SubscriptionArn").unwrap();
    assert!(arn.starts_with(&format!("{topic}:")), "{out}");

    publish("after the queue's owner confirms").await;
    let got = receive(inbox.clone()).await;
    assert_eq!(got.len(), 1, "{got:?}");
    let body: Value = serde_json::from_str(got[0]["Body"].as_str().unwrap()).unwrap();
    assert_eq!(body["Type"], "Notification", "{body}");
    assert_eq!(body["Message"], "after the queue's owner confirms");
    assert!(receive(closed).await.is_empty());
}

/// Unsubscribe is open without a signature (for the UnsubscribeURL SNS sends), but "if
/// the subscription requires authentication for deletion, only the owner of the
/// subscription or the topic's owner can unsubscribe, and an AWS signature is required"
/// (SNS API Reference, Unsubscribe). A subscription confirmed by the signed Subscribe
/// itself (an `sqs` one) is such a one: an unsigned Unsubscribe is refused and leaves it;
/// a signed one by its owner removes it. One confirmed by a ConfirmSubscription that was
/// not signed with AuthenticateOnUnsubscribe reports ConfirmationWasAuthenticated false
/// and may go unsigned.
#[tokio::test]
async fn an_authenticated_subscription_is_not_removed_by_an_unsigned_unsubscribe() {
    let (loft, _dir) = start();
    let (status, out) = sns(&loft, A, &[("Action", "CreateTopic"), ("Name", "a-held")]).await;
    assert_eq!(status, 200, "{out}");
    let topic = format!("arn:aws:sns:us-east-1:{ACCOUNT_A}:a-held");
    create_queue(&loft, A, "a-held-q", json!({})).await;
    let (status, out) = sns(
        &loft,
        A,
        &[
            ("Action", "Subscribe"),
            ("TopicArn", &topic),
            ("Protocol", "sqs"),
            ("Endpoint", &queue_arn(ACCOUNT_A, "a-held-q")),
        ],
    )
    .await;
    assert_eq!(status, 200, "{out}");
    let arn = xml_value(&out, "SubscriptionArn").unwrap().to_owned();
    let unsigned = |params: Vec<(&'static str, String)>| {
        let url = format!("{}/", loft.url);
        async move {
            let body = form_urlencoded::Serializer::new(String::new())
                .extend_pairs(params)
                .finish();
            let resp = crate::harness::http()
                .post(url)
                .header("content-type", "application/x-www-form-urlencoded")
                .body(body)
                .send()
                .await
                .unwrap();
            (resp.status().as_u16(), resp.text().await.unwrap())
        }
    };
    let (status, out) = unsigned(vec![
        ("Action", "Unsubscribe".into()),
        ("SubscriptionArn", arn.clone()),
    ])
    .await;
    assert_eq!(status, 403, "{out}");
    assert_eq!(xml_value(&out, "Code"), Some("AuthorizationError"), "{out}");
    let get = |arn: String| {
        let loft = &loft;
        async move {
            sns(
                loft,
                A,
                &[
                    ("Action", "GetSubscriptionAttributes"),
                    ("SubscriptionArn", &arn),
                ],
            )
            .await
        }
    };
    let (status, out) = get(arn.clone()).await;
    assert_eq!(status, 200, "still there: {out}");
    assert!(
        out.contains("<key>ConfirmationWasAuthenticated</key><value>true</value>"),
        "{out}"
    );
    let (status, out) = sns(
        &loft,
        A,
        &[("Action", "Unsubscribe"), ("SubscriptionArn", &arn)],
    )
    .await;
    assert_eq!(status, 200, "{out}");
    let (status, _) = get(arn).await;
    assert_eq!(status, 404);

    // B's queue confirms A's subscription with an unsigned ConfirmSubscription: the
    // subscription may then go unsigned too.
    let inbox_arn = queue_arn("222222222222", "b-open-inbox");
    let policy = json!({
        "Version": "2012-10-17",
        "Statement": [{
            "Effect": "Allow",
            "Principal": {"Service": "sns.amazonaws.com"},
            "Action": "sqs:SendMessage",
            "Resource": inbox_arn,
        }]
    })
    .to_string();
    let inbox = create_queue(&loft, B, "b-open-inbox", json!({"Policy": policy})).await;
    let (status, out) = sns(
        &loft,
        A,
        &[
            ("Action", "Subscribe"),
            ("TopicArn", &topic),
            ("Protocol", "sqs"),
            ("Endpoint", &inbox_arn),
            ("ReturnSubscriptionArn", "true"),
        ],
    )
    .await;
    assert_eq!(status, 200, "{out}");
    let arn = xml_value(&out, "SubscriptionArn").unwrap().to_owned();
    let (status, got) = sqs(&loft, B, "ReceiveMessage", json!({"QueueUrl": inbox})).await;
    assert_eq!(status, 200, "{got}");
    let body: Value = serde_json::from_str(got["Messages"][0]["Body"].as_str().unwrap()).unwrap();
    let (status, out) = unsigned(vec![
        ("Action", "ConfirmSubscription".into()),
        ("TopicArn", topic.clone()),
        ("Token", body["Token"].as_str().unwrap().to_owned()),
        ("AuthenticateOnUnsubscribe", "true".into()),
    ])
    .await;
    assert_eq!(status, 200, "{out}");
    let (status, out) = get(arn.clone()).await;
    assert_eq!(status, 200, "{out}");
    assert!(
        out.contains("<key>ConfirmationWasAuthenticated</key><value>false</value>"),
        "an unsigned confirmation is not authenticated: {out}"
    );
    let (status, out) = unsigned(vec![
        ("Action", "Unsubscribe".into()),
        ("SubscriptionArn", arn.clone()),
    ])
    .await;
    assert_eq!(status, 200, "{out}");
    let (status, _) = get(arn).await;
    assert_eq!(status, 404);
}

/// On SQLite: see [`caps_count_each_account_alone`].
#[tokio::test]
async fn queue_and_topic_caps_count_each_account_alone_on_sqlite() {
    caps_count_each_account_alone(&[]).await;
}

/// On PostgreSQL (`LOFT_TEST_DATABASE_URL`), whose engine counts an account's rows in its
/// own SQL: see [`caps_count_each_account_alone`].
#[tokio::test]
async fn queue_and_topic_caps_count_each_account_alone_on_postgres() {
    let Some(node_url) =
        postgres_node("tenants::queue_and_topic_caps_count_each_account_alone_on_postgres").await
    else {
        return;
    };
    caps_count_each_account_alone(&["--database-url", &node_url]).await;
}

/// A database URL for a Loft node on a schema of its own in `LOFT_TEST_DATABASE_URL`;
/// `None` (the skip noted for `test`) without one.
async fn postgres_node(test: &str) -> Option<String> {
    let Some(url) = std::env::var("LOFT_TEST_DATABASE_URL")
        .ok()
        .filter(|u| !u.is_empty())
    else {
        crate::skips::postgres().skip(test);
        return None;
    };
    let schema = format!(
        "loft_tenants_{:x}",
        std::time::SystemTime::now()
            .duration_since(std::time::SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    );
    loft_store::PgStore::create_schema(&url, &schema)
        .await
        .expect("connect to LOFT_TEST_DATABASE_URL");
    let sep = if url.contains('?') { '&' } else { '?' };
    Some(format!("{url}{sep}options=-c%20search_path%3D{schema}"))
}

/// `--max-queues` and `--max-topics` count per account, as AWS's quotas are (SQS and SNS
/// quotas are per account): B filling its quota refuses B's next create only, A and the
/// default account still create up to theirs, and B's deletes give B room, not A.
async fn caps_count_each_account_alone(engine: &[&str]) {
    let mut args = vec!["--max-queues", "2", "--max-topics", "1"];
    args.extend_from_slice(engine);
    let (loft, _dir) = start_with(&args);
    for name in ["b1", "b2"] {
        create_queue(&loft, B, name, json!({})).await;
    }
    let (status, out) = sqs(&loft, B, "CreateQueue", json!({"QueueName": "b3"})).await;
    assert_eq!(status, 403, "B is over its cap: {out}");
    assert!(
        out["__type"].as_str().unwrap().ends_with("OverLimit"),
        "{out}"
    );
    assert_eq!(
        out["message"],
        "Cannot create the queue: the limit of 2 queues for this account is reached.",
        "the cap is said to be the account's: {out}"
    );
    for name in ["a1", "a2"] {
        create_queue(&loft, A, name, json!({})).await;
    }
    create_queue(&loft, ROOT, "root1", json!({})).await;
    create_queue(&loft, ROOT, "root2", json!({})).await;
    let (status, out) = sqs(&loft, A, "CreateQueue", json!({"QueueName": "a3"})).await;
    assert_eq!(status, 403, "A is over its own cap: {out}");
    assert!(
        out["__type"].as_str().unwrap().ends_with("OverLimit"),
        "{out}"
    );
    // B deletes one of its queues: B has room again, A still has none.
    let b1 = format!("{}/222222222222/b1", loft.url);
    let (status, out) = sqs(&loft, B, "DeleteQueue", json!({"QueueUrl": b1})).await;
    assert_eq!(status, 200, "{out}");
    let (status, out) = sqs(&loft, A, "CreateQueue", json!({"QueueName": "a3"})).await;
    assert_eq!(status, 403, "B's delete frees no slot of A's: {out}");
    create_queue(&loft, B, "b3", json!({})).await;

    let create_topic = |key, name: &'static str| {
        let loft = &loft;
        async move { sns(loft, key, &[("Action", "CreateTopic"), ("Name", name)]).await }
    };
    let (status, out) = create_topic(B, "bt1").await;
    assert_eq!(status, 200, "{out}");
    let (status, out) = create_topic(B, "bt2").await;
    assert_eq!(status, 403, "{out}");
    assert!(out.contains("<Code>TopicLimitExceeded</Code>"), "{out}");
    assert!(
        out.contains("the limit of 1 topics for this account is reached."),
        "{out}"
    );
    for key in [A, ROOT] {
        let (status, out) = create_topic(key, "own-topic").await;
        assert_eq!(status, 200, "another account's topic cap is its own: {out}");
    }
}

/// A signed seeds' API call by `key` with a JSON body: its status and body text.
async fn seeds_post(
    loft: &Loft,
    key: (&'static str, &'static str),
    path: &str,
    body: &str,
) -> (u16, String) {
    let url = format!("{}{path}", loft.url);
    let headers = [("content-type", "application/json")];
    let resp = send_signed(&signer(key, "sqs"), "POST", &url, &headers, body.as_bytes()).await;
    (resp.status().as_u16(), resp.text().await.unwrap())
}

/// The seeds' API reaches an existing queue or topic of another account than the server's
/// by the `ACCOUNT%2FNAME` key its listing gives, on every route (docs/seeds-api.md):
/// create (the existing one), subscribe and publish as well as send. A new one is not made
/// by such a key (400), and every route is still checked on the resource the key names.
#[tokio::test]
async fn the_seeds_routes_reach_an_existing_resource_by_its_key() {
    let (loft, _dir) = start();
    let (status, out) = sns(&loft, B, &[("Action", "CreateTopic"), ("Name", "bfilt")]).await;
    assert_eq!(status, 200, "{out}");
    let (status, out) = sns(&loft, A, &[("Action", "CreateTopic"), ("Name", "atopic")]).await;
    assert_eq!(status, 200, "{out}");
    create_queue(&loft, B, "bq", json!({})).await;
    create_queue(&loft, A, "aq", json!({})).await;
    let endpoint = r#"{"endpoint":"http://127.0.0.1:9/hook"}"#;

    let b_topic = "/topics/222222222222%2Fbfilt";
    let (status, out) = seeds_post(&loft, B, b_topic, "").await;
    assert_eq!(
        (status, out.as_str()),
        (201, r#"{"name":"222222222222/bfilt"}"#)
    );
    let (status, out) = seeds_post(&loft, B, &format!("{b_topic}/subscribe"), endpoint).await;
    assert_eq!(status, 201, "{out}");
    assert!(out.starts_with(r#"{"id":"sub-"#), "{out}");
    let (status, out) = seeds_post(
        &loft,
        B,
        &format!("{b_topic}/publish"),
        r#"{"message":"hi"}"#,
    )
    .await;
    assert_eq!((status, out.as_str()), (200, r#"{"delivered":1}"#));
    let (status, out) = seeds_post(&loft, B, "/queues/222222222222%2Fbq", "").await;
    assert_eq!(status, 201, "{out}");
    let created: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(created["name"], "222222222222/bq", "{out}");

    // A new queue or topic is not made by a key: the name rule refuses its `/`.
    for path in [
        "/queues/222222222222%2Fseedq",
        "/topics/222222222222%2Fnewt",
        "/topics/222222222222%2Fnewt/subscribe",
    ] {
        let body = if path.ends_with("subscribe") {
            endpoint
        } else {
            ""
        };
        let (status, out) = seeds_post(&loft, B, path, body).await;
        assert_eq!(status, 400, "{path}: {out}");
        assert!(out.contains("name must be 1 to 256 bytes"), "{path}: {out}");
    }
    let (_, listed) = sns(&loft, B, &[("Action", "ListTopics")]).await;
    assert!(!listed.contains("newt"), "{listed}");

    // Permissions as before: the default account's key on B's, B's key on A's, refused.
    let refused = [
        (ROOT, format!("{b_topic}/publish"), r#"{"message":"x"}"#),
        (ROOT, format!("{b_topic}/subscribe"), endpoint),
        (ROOT, b_topic.to_owned(), ""),
        (ROOT, "/queues/222222222222%2Fbq".to_owned(), ""),
        (
            B,
            "/topics/111111111111%2Fatopic/publish".to_owned(),
            r#"{"message":"x"}"#,
        ),
        (
            B,
            "/topics/111111111111%2Fatopic/subscribe".to_owned(),
            endpoint,
        ),
        (B, "/topics/111111111111%2Fatopic".to_owned(), ""),
        (B, "/queues/111111111111%2Faq".to_owned(), ""),
        (
            B,
            "/queues/111111111111%2Faq/messages".to_owned(),
            r#"{"body":"x"}"#,
        ),
    ];
    for (key, path, body) in refused {
        let (status, out) = seeds_post(&loft, key, &path, body).await;
        assert_eq!(status, 403, "{} on {path}: {out}", key.0);
    }
}

/// A recorded email's sender is the topic's name when it has no DisplayName, for another
/// account's topic as for the default account's (SNS API Reference, SetTopicAttributes
/// `DisplayName`), never Loft's store key.
#[tokio::test]
async fn an_email_from_another_accounts_topic_comes_from_its_name() {
    let (loft, _dir) = start();
    let (status, out) = sns(&loft, A, &[("Action", "CreateTopic"), ("Name", "atopic")]).await;
    assert_eq!(status, 200, "{out}");
    let arn = format!("arn:aws:sns:us-east-1:{ACCOUNT_A}:atopic");
    let (status, out) = sns(
        &loft,
        A,
        &[
            ("Action", "Subscribe"),
            ("TopicArn", &arn),
            ("Protocol", "email"),
            ("Endpoint", "ops@example.com"),
        ],
    )
    .await;
    assert_eq!(status, 200, "{out}");
    let url = format!("{}/_loft/sns/messages", loft.url);
    let resp = send_signed(&signer(A, "sqs"), "GET", &url, &[], b"").await;
    assert_eq!(resp.status(), 200);
    let recorded: Value = resp.json().await.unwrap();
    let senders: Vec<&Value> = recorded
        .as_array()
        .unwrap()
        .iter()
        .map(|m| &m["sender"])
        .collect();
    assert_eq!(
        senders,
        [&json!("atopic <no-reply@sns.amazonaws.com>")],
        "{recorded}"
    );
}

/// A QueueOwnerAWSAccountId that is not 12 ASCII digits names no account, so GetQueueUrl
/// answers as for a queue that does not exist (AWS's answer is not recorded: see
/// `Context::named_queue_key`), the same for every malformed id, over JSON and Query, and
/// never AccessDenied on a key made of it.
#[tokio::test]
async fn a_malformed_queue_owner_is_a_queue_that_does_not_exist() {
    let (loft, _dir) = start();
    create_queue(&loft, A, "asecret", json!({})).await;
    for owner in [
        "0111111111111",
        "+11111111111",
        "1.1e11",
        "11111111111",
        "١١١١١١١١١١١١",
        "11111111111x",
    ] {
        for key in [A, B] {
            let (status, out) = sqs(
                &loft,
                key,
                "GetQueueUrl",
                json!({"QueueName": "asecret", "QueueOwnerAWSAccountId": owner}),
            )
            .await;
            assert_eq!(
                (status, out["__type"].as_str()),
                (400, Some("com.amazonaws.sqs#QueueDoesNotExist")),
                "{owner} by {}: {out}",
                key.0
            );
        }
        let body = form_urlencoded::Serializer::new(String::new())
            .extend_pairs([
                ("Action", "GetQueueUrl"),
                ("QueueName", "asecret"),
                ("QueueOwnerAWSAccountId", owner),
                ("Version", "2012-11-05"),
            ])
            .finish();
        let resp = send_signed(
            &signer(B, "sqs"),
            "POST",
            &format!("{}/", loft.url),
            &[("content-type", "application/x-www-form-urlencoded")],
            body.as_bytes(),
        )
        .await;
        assert_eq!(resp.status(), 400, "{owner}");
        let text = resp.text().await.unwrap();
        assert!(
            text.contains("<Code>AWS.SimpleQueueService.NonExistentQueue</Code>"),
            "{owner}: {text}"
        );
    }
    // The well-formed id still finds A's queue for A.
    let (status, out) = sqs(
        &loft,
        A,
        "GetQueueUrl",
        json!({"QueueName": "asecret", "QueueOwnerAWSAccountId": ACCOUNT_A}),
    )
    .await;
    assert_eq!(status, 200, "{out}");
}

/// A refusal of another account's queue or topic tells nothing of its policy: B gets the
/// same answer for A's queue (or topic) whose Policy denies B explicitly, or denies every
/// request over plain HTTP, as for a name A does not have (docs/security.md, "Accounts").
#[tokio::test]
async fn another_accounts_deny_is_answered_as_a_missing_resource() {
    let (loft, _dir) = start();
    let deny_b = json!({"Version": "2012-10-17", "Statement": [{"Effect": "Deny",
        "Principal": {"AWS": "222222222222"}, "Action": "*", "Resource": "*"}]})
    .to_string();
    let deny_http = json!({"Version": "2012-10-17", "Statement": [{"Effect": "Deny",
        "Principal": "*", "Action": "*", "Resource": "*",
        "Condition": {"Bool": {"aws:SecureTransport": "false"}}}]})
    .to_string();
    for (name, policy) in [("a-deny-b", &deny_b), ("a-deny-http", &deny_http)] {
        create_queue(&loft, A, name, json!({ "Policy": policy })).await;
        let (status, out) = sns(
            &loft,
            A,
            &[
                ("Action", "CreateTopic"),
                ("Name", name),
                ("Attributes.entry.1.key", "Policy"),
                ("Attributes.entry.1.value", policy.as_str()),
            ],
        )
        .await;
        assert_eq!(status, 200, "CreateTopic {name}: {out}");
    }
    let missing_queue = {
        let (status, out) = sqs(
            &loft,
            B,
            "GetQueueUrl",
            json!({"QueueName": "a-missing", "QueueOwnerAWSAccountId": ACCOUNT_A}),
        )
        .await;
        (status, out.to_string().replace("a-missing", "NAME"))
    };
    let missing_topic = {
        let arn = format!("arn:aws:sns:us-east-1:{ACCOUNT_A}:a-missing");
        let (status, out) = sns(
            &loft,
            B,
            &[("Action", "Publish"), ("TopicArn", &arn), ("Message", "hi")],
        )
        .await;
        (status, strip_request_id(&out).replace("a-missing", "NAME"))
    };
    assert_eq!(missing_queue.0, 403, "{missing_queue:?}");
    assert_eq!(missing_topic.0, 403, "{missing_topic:?}");
    for name in ["a-deny-b", "a-deny-http"] {
        let (status, out) = sqs(
            &loft,
            B,
            "GetQueueUrl",
            json!({"QueueName": name, "QueueOwnerAWSAccountId": ACCOUNT_A}),
        )
        .await;
        assert_eq!(
            (status, out.to_string().replace(name, "NAME")),
            missing_queue,
            "GetQueueUrl {name}"
        );
        let arn = format!("arn:aws:sns:us-east-1:{ACCOUNT_A}:{name}");
        let (status, out) = sns(
            &loft,
            B,
            &[("Action", "Publish"), ("TopicArn", &arn), ("Message", "hi")],
        )
        .await;
        assert_eq!(
            (status, strip_request_id(&out).replace(name, "NAME")),
            missing_topic,
            "Publish {name}"
        );
    }
    // A itself is still told why: its own queue's policy denies it over plain HTTP.
    let (status, out) = sqs(&loft, A, "GetQueueUrl", json!({"QueueName": "a-deny-http"})).await;
    assert_eq!(status, 403, "{out}");
    assert!(
        out.to_string()
            .contains("explicit deny in a resource-based policy"),
        "{out}"
    );
}

/// `text` without its `<RequestId>` element, which differs per request.
fn strip_request_id(text: &str) -> String {
    match (text.find("<RequestId>"), text.find("</RequestId>")) {
        (Some(a), Some(b)) if b > a => format!("{}{}", &text[..a], &text[b..]),
        _ => text.to_owned(),
    }
}

/// PurgeQueueInProgress names the queue as its caller knows it (SQS API Reference,
/// PurgeQueue: "Only one PurgeQueue operation on QUEUE is allowed every 60 seconds."), not
/// the store's key that carries its account.
#[tokio::test]
async fn a_second_purge_names_the_queue_not_its_store_key() {
    let (loft, _dir) = start();
    let url = create_queue(&loft, A, "a-purged", json!({})).await;
    let (status, out) = sqs(&loft, A, "PurgeQueue", json!({"QueueUrl": url})).await;
    assert_eq!(status, 200, "{out}");
    let (status, out) = sqs(&loft, A, "PurgeQueue", json!({"QueueUrl": url})).await;
    assert_eq!(status, 403, "{out}");
    assert_eq!(
        out["message"].as_str(),
        Some("Only one PurgeQueue operation on a-purged is allowed every 60 seconds."),
        "{out}"
    );
}

/// A's queue `name`'s visible and in-flight message counts, as A reads them.
async fn queue_counts(loft: &Loft, name: &str) -> (u64, u64) {
    let url = format!("{}/{ACCOUNT_A}/{name}", loft.url);
    let (status, out) = sqs(
        loft,
        A,
        "GetQueueAttributes",
        json!({"QueueUrl": url, "AttributeNames": ["All"]}),
    )
    .await;
    assert_eq!(status, 200, "{out}");
    let n = |k: &str| {
        out["Attributes"][k]
            .as_str()
            .unwrap()
            .parse::<u64>()
            .unwrap()
    };
    (
        n("ApproximateNumberOfMessages"),
        n("ApproximateNumberOfMessagesNotVisible"),
    )
}

/// B's message move task from its own dead-letter queue into A's queue `a-acct`, which A's
/// Policy lets B send to, at one message a second; once the first message is in, A sets
/// `revoked` as the queue's Policy. The task must end FAILED at its next step with a
/// FailureReason naming the refused send, having moved into A's queue only what it moved
/// while allowed, the rest left in B's dead-letter queue. `engine`: more flags of `loft
/// serve` (the database).
async fn a_move_task_stops_when_the_destination_refuses(revoked: &str, engine: &[&str]) {
    let (loft, _dir) = start_with(engine);
    let a_queue = queue_arn(ACCOUNT_A, "a-acct");
    let allow_b = json!({"Version": "2012-10-17", "Statement": [{"Effect": "Allow",
        "Principal": {"AWS": "arn:aws:iam::222222222222:root"},
        "Action": "sqs:SendMessage", "Resource": a_queue}]});
    let a_url = create_queue(&loft, A, "a-acct", json!({"Policy": allow_b.to_string()})).await;
    let (bdlq, bdlq_url) = dead_letter_queue(&loft, B, "222222222222", "bdlq", "bsrc", 30).await;
    let (status, out) = sqs(
        &loft,
        B,
        "StartMessageMoveTask",
        json!({"SourceArn": bdlq, "DestinationArn": a_queue,
               "MaxNumberOfMessagesPerSecond": 1}),
    )
    .await;
    assert_eq!(status, 200, "{out}");
    // While A allows it, the task writes into A's queue.
    let wrote = crate::wait::until(std::time::Duration::from_secs(10), || async {
        queue_counts(&loft, "a-acct").await.0 >= 1
    })
    .await;
    assert!(wrote, "the task moved nothing while A allowed it");

    let (status, out) = sqs(
        &loft,
        A,
        "SetQueueAttributes",
        json!({"QueueUrl": a_url, "Attributes": {"Policy": revoked}}),
    )
    .await;
    assert_eq!(status, 200, "{out}");
    // B's own send is refused now, as the task's next step must be.
    let (status, out) = sqs(
        &loft,
        B,
        "SendMessage",
        json!({"QueueUrl": a_url, "MessageBody": "direct"}),
    )
    .await;
    assert_eq!(status, 403, "{out}");

    let latest = || async {
        let (status, listed) =
            sqs(&loft, B, "ListMessageMoveTasks", json!({"SourceArn": bdlq})).await;
        assert_eq!(status, 200, "{listed}");
        listed["Results"][0].clone()
    };
    let failed = crate::wait::until(std::time::Duration::from_secs(10), || async {
        latest().await["Status"] == "FAILED"
    })
    .await;
    let task = latest().await;
    assert!(failed, "the task kept running after A revoked: {task}");
    let reason = task["FailureReason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("sqs:SendMessage") && reason.contains(&a_queue),
        "FailureReason names the refused send: {task}"
    );
    let moved = task["ApproximateNumberOfMessagesMoved"].as_u64().unwrap();
    assert!((1..30).contains(&moved), "{task}");
    // What is in A's queue is what moved while allowed; the rest stays in B's DLQ.
    assert_eq!(queue_counts(&loft, "a-acct").await, (moved, 0));
    let (status, out) = sqs(
        &loft,
        B,
        "GetQueueAttributes",
        json!({"QueueUrl": bdlq_url, "AttributeNames": ["ApproximateNumberOfMessages"]}),
    )
    .await;
    assert_eq!(status, 200, "{out}");
    assert_eq!(
        out["Attributes"]["ApproximateNumberOfMessages"],
        (30 - moved).to_string()
    );
}

/// The condition keys AWS puts in every request (IAM User Guide, "AWS global condition
/// context keys": aws:CurrentTime, aws:EpochTime, aws:RequestedRegion,
/// aws:PrincipalType, aws:userid, aws:username, aws:PrincipalIsAWSService,
/// aws:ViaAWSService) are in Loft's too, so a Deny conditioned on one applies as on AWS
/// (the time keys under the String, Numeric and Date operators alike)
/// instead of failing open on a key found absent. A hostile tenant found each of these
/// Denies ignored. Each row: A's queue lets anyone send, except what a Deny with the
/// row's condition refuses; B (`arn:aws:iam::222222222222:user/loft`, signing for
/// us-east-1) sends, refused when the condition holds for B's request, taken when not.
#[tokio::test]
async fn deny_conditions_on_the_keys_aws_always_sets_apply() {
    let (loft, _dir) = start();
    let rows: &[(&str, &str, &str, u16)] = &[
        ("StringEquals", "aws:RequestedRegion", r#""us-east-1""#, 403),
        ("StringEquals", "aws:RequestedRegion", r#""us-west-2""#, 200),
        ("Bool", "aws:PrincipalIsAWSService", r#""false""#, 403),
        ("Bool", "aws:PrincipalIsAWSService", r#""true""#, 200),
        ("Bool", "aws:ViaAWSService", r#""false""#, 403),
        ("Bool", "aws:ViaAWSService", r#""true""#, 200),
        ("NumericGreaterThan", "aws:EpochTime", r#""1""#, 403),
        ("NumericLessThan", "aws:EpochTime", r#""1""#, 200),
        ("StringLike", "aws:CurrentTime", r#""20*T*Z""#, 403),
        ("StringLike", "aws:CurrentTime", r#""19*""#, 200),
        (
            "DateGreaterThan",
            "aws:CurrentTime",
            r#""2020-01-01T00:00:00Z""#,
            403,
        ),
        (
            "DateLessThan",
            "aws:CurrentTime",
            r#""2020-01-01T00:00:00Z""#,
            200,
        ),
        (
            "DateGreaterThanEquals",
            "aws:EpochTime",
            r#""1577836800""#,
            403,
        ),
        (
            "DateLessThanEquals",
            "aws:EpochTime",
            r#""2020-01-01""#,
            200,
        ),
        ("DateNotEquals", "aws:CurrentTime", r#""2020-01-01""#, 403),
        ("StringEquals", "aws:PrincipalType", r#""User""#, 403),
        ("StringEquals", "aws:PrincipalType", r#""Account""#, 200),
        ("StringEquals", "aws:username", r#""loft""#, 403),
        ("StringEquals", "aws:username", r#""someone-else""#, 200),
        ("StringLike", "aws:userid", r#""AIDA*""#, 403),
        ("StringLike", "aws:userid", r#""AROA*""#, 200),
    ];
    for (i, (operator, key, value, want)) in rows.iter().enumerate() {
        let name = format!("a-cond-{i}");
        let arn = queue_arn(ACCOUNT_A, &name);
        let policy = format!(
            r#"{{"Version":"2012-10-17","Statement":[
              {{"Effect":"Allow","Principal":"*","Action":"sqs:SendMessage","Resource":"{arn}"}},
              {{"Effect":"Deny","Principal":"*","Action":"sqs:SendMessage","Resource":"{arn}",
                "Condition":{{"{operator}":{{"{key}":{value}}}}}}}]}}"#
        );
        let url = create_queue(&loft, A, &name, json!({"Policy": policy})).await;
        let (status, out) = sqs(
            &loft,
            B,
            "SendMessage",
            json!({"QueueUrl": url, "MessageBody": "b"}),
        )
        .await;
        assert_eq!(status, *want, "{operator} {key} {value}: {out}");
    }
}

/// B's message move task out of A's dead-letter queue, which A's Policy opens to B (the
/// task, and receive, delete, read its attributes: what StartMessageMoveTask needs on its
/// source),
/// into B's own queue, at one message a second; once the first message is in B's queue, A
/// removes the Policy. The task must end FAILED at its next step, its FailureReason naming
/// the refused receive, having taken out of A's queue only what it took while allowed.
/// The source's twin of [`a_move_task_stops_when_the_destination_refuses`]; a hostile
/// tenant found the same door in event source mappings.
#[tokio::test]
async fn a_move_task_out_of_another_accounts_queue_stops_when_its_permission_is_removed() {
    let (loft, _dir) = start();
    let (a_dlq, a_dlq_url) = dead_letter_queue(&loft, A, ACCOUNT_A, "a-dlq", "a-src", 30).await;
    let grant = json!({"Version": "2012-10-17", "Statement": [{"Effect": "Allow",
        "Principal": {"AWS": "arn:aws:iam::222222222222:root"},
        "Action": ["sqs:StartMessageMoveTask", "sqs:ReceiveMessage", "sqs:DeleteMessage",
                   "sqs:GetQueueAttributes"],
        "Resource": a_dlq}]})
    .to_string();
    let set_policy = |policy: String| {
        let (loft, url) = (&loft, a_dlq_url.clone());
        async move {
            let (status, out) = sqs(
                loft,
                A,
                "SetQueueAttributes",
                json!({"QueueUrl": url, "Attributes": {"Policy": policy}}),
            )
            .await;
            assert_eq!(status, 200, "{out}");
        }
    };
    set_policy(grant).await;
    let b_url = create_queue(&loft, B, "b-dest", json!({})).await;
    let (status, out) = sqs(
        &loft,
        B,
        "StartMessageMoveTask",
        json!({"SourceArn": a_dlq, "DestinationArn": queue_arn("222222222222", "b-dest"),
               "MaxNumberOfMessagesPerSecond": 1}),
    )
    .await;
    assert_eq!(status, 200, "{out}");
    let b_count = || async {
        let (status, out) = sqs(
            &loft,
            B,
            "GetQueueAttributes",
            json!({"QueueUrl": b_url, "AttributeNames": ["ApproximateNumberOfMessages"]}),
        )
        .await;
        assert_eq!(status, 200, "{out}");
        out["Attributes"]["ApproximateNumberOfMessages"]
            .as_str()
            .unwrap()
            .parse::<u64>()
            .unwrap()
    };
    let took = crate::wait::until(std::time::Duration::from_secs(10), || async {
        b_count().await >= 1
    })
    .await;
    assert!(took, "the task moved nothing while A allowed it");

    set_policy(String::new()).await;
    let latest = || async {
        let (status, listed) = sqs(
            &loft,
            A,
            "ListMessageMoveTasks",
            json!({"SourceArn": a_dlq}),
        )
        .await;
        assert_eq!(status, 200, "{listed}");
        listed["Results"][0].clone()
    };
    let failed = crate::wait::until(std::time::Duration::from_secs(10), || async {
        latest().await["Status"] == "FAILED"
    })
    .await;
    let task = latest().await;
    assert!(
        failed,
        "the task kept taking A's messages after A revoked: {task}"
    );
    let reason = task["FailureReason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("sqs:ReceiveMessage") && reason.contains(&a_dlq),
        "FailureReason names the refused receive: {task}"
    );
    let moved = task["ApproximateNumberOfMessagesMoved"].as_u64().unwrap();
    assert!((1..30).contains(&moved), "{task}");
    assert_eq!(b_count().await, moved);
    assert_eq!(queue_counts(&loft, "a-dlq").await, (30 - moved, 0));
}

/// A removing its Policy (`""`) stops B's move task into A's queue at its next step.
#[tokio::test]
async fn a_move_task_into_another_account_stops_when_its_permission_is_removed() {
    a_move_task_stops_when_the_destination_refuses("", &[]).await;
}

/// [`a_move_task_into_another_account_stops_when_its_permission_is_removed`] on
/// PostgreSQL (`LOFT_TEST_DATABASE_URL`), whose engine keeps who started the task.
#[tokio::test]
async fn a_move_task_into_another_account_stops_when_its_permission_is_removed_on_postgres() {
    let Some(node_url) = postgres_node(
        "tenants::a_move_task_into_another_account_stops_when_its_permission_is_removed_on_postgres",
    )
    .await
    else {
        return;
    };
    a_move_task_stops_when_the_destination_refuses("", &["--database-url", &node_url]).await;
}

/// An explicit Deny for B in A's Policy, next to the Allow, stops B's move task too.
#[tokio::test]
async fn a_move_task_into_another_account_stops_at_an_explicit_deny() {
    let a_queue = queue_arn(ACCOUNT_A, "a-acct");
    let deny = json!({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::222222222222:root"},
         "Action": "sqs:SendMessage", "Resource": a_queue},
        {"Effect": "Deny", "Principal": {"AWS": "222222222222"},
         "Action": "sqs:SendMessage", "Resource": a_queue}]});
    a_move_task_stops_when_the_destination_refuses(&deny.to_string(), &[]).await;
}

/// A's topic audits into A's own queue and lets B publish: B's publish is audited there
/// as A's own is (the record is the topic's, naming B as `callerPrincipal`), though A's
/// queue grants B nothing. The writer of an audit record is the topic's account, as AWS
/// writes audit records where the principal that set the policy may deliver (SNS
/// Developer Guide, "Data protection policy operations"), never the publisher: the same
/// record into B's topic's destination, a queue of A's whose grant to B A removed, is not
/// written when A publishes to B's topic.
#[tokio::test]
async fn an_audit_record_is_the_topics_whoever_publishes() {
    let (loft, _dir) = start();
    let a_url = create_queue(&loft, A, "a-audit", json!({})).await;
    let policy = json!({"Name": "audit", "Version": "2021-06-01", "Statement": [{
        "Sid": "audit", "DataDirection": "Inbound", "Principal": ["*"],
        "DataIdentifier": ["arn:aws:dataprotection::aws:data-identifier/EmailAddress"],
        "Operation": {"Audit": {"SampleRate": "99", "FindingsDestination": {
            "Sqs": {"QueueArn": queue_arn(ACCOUNT_A, "a-audit")}}}}}]})
    .to_string();
    // A's topic, auditing into A's queue, open to B's publishes.
    let (status, out) = sns(&loft, A, &[("Action", "CreateTopic"), ("Name", "at")]).await;
    assert_eq!(status, 200, "{out}");
    let a_topic = xml_value(&out, "TopicArn").unwrap().to_owned();
    for params in [
        vec![
            ("Action", "PutDataProtectionPolicy"),
            ("ResourceArn", a_topic.as_str()),
            ("DataProtectionPolicy", policy.as_str()),
        ],
        vec![
            ("Action", "AddPermission"),
            ("TopicArn", a_topic.as_str()),
            ("Label", "b-publishes"),
            ("AWSAccountId.member.1", "222222222222"),
            ("ActionName.member.1", "Publish"),
        ],
    ] {
        let (status, out) = sns(&loft, A, &params).await;
        assert_eq!(status, 200, "{out}");
    }
    let (status, out) = sns(
        &loft,
        B,
        &[
            ("Action", "Publish"),
            ("TopicArn", &a_topic),
            ("Message", "write to jo@example.com"),
        ],
    )
    .await;
    assert_eq!(status, 200, "{out}");
    let (status, out) = sqs(
        &loft,
        A,
        "ReceiveMessage",
        json!({"QueueUrl": a_url, "MaxNumberOfMessages": 10}),
    )
    .await;
    assert_eq!(status, 200, "{out}");
    let records = out["Messages"].as_array().cloned().unwrap_or_default();
    assert_eq!(
        records.len(),
        1,
        "B's publish to A's topic is audited: {out}"
    );
    let record: Value = serde_json::from_str(records[0]["Body"].as_str().unwrap()).unwrap();
    assert_eq!(
        record["callerPrincipal"], "arn:aws:iam::222222222222:user/loft",
        "the record names its publisher: {record}"
    );
    let (status, out) = sqs(
        &loft,
        A,
        "DeleteMessage",
        json!({"QueueUrl": a_url, "ReceiptHandle": records[0]["ReceiptHandle"]}),
    )
    .await;
    assert_eq!(status, 200, "{out}");

    // B's topic names the same queue of A's, which lets B send while B sets its policy;
    // then A removes that grant. A's publishes to B's topic write no record there, though
    // the queue is A's own: the writer is B's topic, not its publisher.
    let (status, out) = sqs(
        &loft,
        A,
        "AddPermission",
        json!({"QueueUrl": a_url, "Label": "b-audit", "AWSAccountIds": ["222222222222"],
               "Actions": ["SendMessage"]}),
    )
    .await;
    assert_eq!(status, 200, "{out}");
    let (status, out) = sns(&loft, B, &[("Action", "CreateTopic"), ("Name", "bt")]).await;
    assert_eq!(status, 200, "{out}");
    let b_topic = xml_value(&out, "TopicArn").unwrap().to_owned();
    for params in [
        vec![
            ("Action", "PutDataProtectionPolicy"),
            ("ResourceArn", b_topic.as_str()),
            ("DataProtectionPolicy", policy.as_str()),
        ],
        vec![
            ("Action", "AddPermission"),
            ("TopicArn", b_topic.as_str()),
            ("Label", "a-publishes"),
            ("AWSAccountId.member.1", ACCOUNT_A),
            ("ActionName.member.1", "Publish"),
        ],
    ] {
        let (status, out) = sns(&loft, B, &params).await;
        assert_eq!(status, 200, "{out}");
    }
    let (status, out) = sqs(
        &loft,
        A,
        "RemovePermission",
        json!({"QueueUrl": a_url, "Label": "b-audit"}),
    )
    .await;
    assert_eq!(status, 200, "{out}");
    let (status, out) = sns(
        &loft,
        A,
        &[
            ("Action", "Publish"),
            ("TopicArn", &b_topic),
            ("Message", "write to jo@example.com"),
        ],
    )
    .await;
    assert_eq!(status, 200, "{out}");
    assert_eq!(
        queue_counts(&loft, "a-audit").await,
        (0, 0),
        "B's topic wrote no record into A's queue once A removed B's grant"
    );
}

/// B's topic audits into A's queue (a data protection audit destination) while A's queue
/// lets B send: the record names B's principal as `callerPrincipal`. Once A removes B's
/// permission (RemovePermission), B's publishes still succeed but write no record into A's
/// queue, as a refused SNS delivery is dropped.
#[tokio::test]
async fn audit_records_into_another_account_stop_when_its_permission_is_removed() {
    let (loft, _dir) = start();
    let a_url = create_queue(&loft, A, "a-audit", json!({})).await;
    let (status, out) = sqs(
        &loft,
        A,
        "AddPermission",
        json!({"QueueUrl": a_url, "Label": "b-audit", "AWSAccountIds": ["222222222222"],
               "Actions": ["SendMessage"]}),
    )
    .await;
    assert_eq!(status, 200, "{out}");
    let (status, out) = sns(&loft, B, &[("Action", "CreateTopic"), ("Name", "bt")]).await;
    assert_eq!(status, 200, "{out}");
    let topic = xml_value(&out, "TopicArn").unwrap().to_owned();
    let policy = json!({"Name": "audit", "Version": "2021-06-01", "Statement": [{
        "Sid": "audit", "DataDirection": "Inbound", "Principal": ["*"],
        "DataIdentifier": ["arn:aws:dataprotection::aws:data-identifier/EmailAddress"],
        "Operation": {"Audit": {"SampleRate": "99", "FindingsDestination": {
            "Sqs": {"QueueArn": queue_arn(ACCOUNT_A, "a-audit")}}}}}]})
    .to_string();
    let (status, out) = sns(
        &loft,
        B,
        &[
            ("Action", "PutDataProtectionPolicy"),
            ("ResourceArn", &topic),
            ("DataProtectionPolicy", &policy),
        ],
    )
    .await;
    assert_eq!(status, 200, "{out}");
    let publish = || async {
        let (status, out) = sns(
            &loft,
            B,
            &[
                ("Action", "Publish"),
                ("TopicArn", &topic),
                ("Message", "write to jo@example.com"),
            ],
        )
        .await;
        assert_eq!(status, 200, "{out}");
    };
    publish().await;
    let (status, out) = sqs(
        &loft,
        A,
        "ReceiveMessage",
        json!({"QueueUrl": a_url, "MaxNumberOfMessages": 10}),
    )
    .await;
    assert_eq!(status, 200, "{out}");
    let records = out["Messages"].as_array().cloned().unwrap_or_default();
    assert_eq!(records.len(), 1, "one audit record while allowed: {out}");
    let record: Value = serde_json::from_str(records[0]["Body"].as_str().unwrap()).unwrap();
    let (status, out) = sqs(
        &loft,
        A,
        "DeleteMessage",
        json!({"QueueUrl": a_url, "ReceiptHandle": records[0]["ReceiptHandle"]}),
    )
    .await;
    assert_eq!(status, 200, "{out}");

    let (status, out) = sqs(
        &loft,
        A,
        "RemovePermission",
        json!({"QueueUrl": a_url, "Label": "b-audit"}),
    )
    .await;
    assert_eq!(status, 200, "{out}");
    // The audit record is written in the publish's own transaction: once Publish has
    // answered, A's queue holds whatever it was going to get.
    for _ in 0..3 {
        publish().await;
    }
    assert_eq!(
        queue_counts(&loft, "a-audit").await,
        (0, 0),
        "no audit record after A removed B's permission"
    );
    // The record sent while allowed named its publisher, B's key (not the server's
    // default account).
    assert_eq!(
        record["callerPrincipal"], "arn:aws:iam::222222222222:user/loft",
        "the record names the publisher: {record}"
    );
}

/// A function endpoint on `127.0.0.1:0` that answers every call `500`: a plain-HTTP
/// function's failed invocation (a function error, so MaximumRetryAttempts counts it).
/// Returns its URL; it runs until the test ends.
async fn failing_function_endpoint() -> String {
    function_endpoint(
        b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
    )
    .await
    .0
}

/// A function endpoint on `127.0.0.1:0` that answers every call `answer` (a whole HTTP
/// response) and counts the calls. It reads each request whole (head and
/// `content-length` body) before answering, so the caller sees the status, not a reset.
/// Returns its URL and the count; it runs until the test ends.
async fn function_endpoint(
    answer: &'static [u8],
) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let calls = std::sync::Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut conn, _)) = listener.accept().await else {
                return;
            };
            let counted = counted.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    let Ok(n) = conn.read(&mut chunk).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
                        continue;
                    };
                    let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
                    let length = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse::<usize>().ok())
                        .unwrap_or(0);
                    if buf.len() < end + 4 + length {
                        continue;
                    }
                    counted.fetch_add(1, Ordering::SeqCst);
                    let _ = conn.write_all(answer).await;
                    return;
                }
            });
        }
    });
    (format!("http://{addr}/invoke"), calls)
}

/// An event source mapping reads another account's queue only while the queue's Policy
/// lets the mapping's account receive and delete: Lambda polls with the function's
/// execution role, each ReceiveMessage and DeleteMessage needing the permission at that
/// moment (Lambda Developer Guide, "Using Lambda with Amazon SQS"), as Loft checks every
/// write into a queue at the write. B maps A's queue, which A's Policy opens to B; the
/// mapping consumes A's first message; A removes the Policy; the mapping's next receive is
/// refused (logged), so A's next message stays in A's queue and B's function never sees
/// it; A opens the Policy again and the same mapping consumes it. Found by a hostile
/// tenant: before, the mapping read on after the grant was gone, across restarts too.
#[tokio::test]
async fn a_mapping_stops_reading_another_accounts_queue_when_the_grant_is_removed() {
    use std::sync::atomic::Ordering;
    let (url, calls) = function_endpoint(
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}",
    )
    .await;
    let (loft, _dir) = start_config(
        &format!(
            r#"
[[functions]]
name = "b-reader"
url = "{url}"
account = "222222222222"
"#
        ),
        &[],
    );
    let a_queue = queue_arn(ACCOUNT_A, "a-mapped");
    let grant = json!({"Version": "2012-10-17", "Statement": [{"Effect": "Allow",
        "Principal": {"AWS": "arn:aws:iam::222222222222:root"},
        "Action": ["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes"],
        "Resource": a_queue}]})
    .to_string();
    let a_url = create_queue(&loft, A, "a-mapped", json!({"Policy": grant})).await;
    let (status, _, created) = lambda(
        &loft,
        B,
        "POST",
        "/2015-03-31/event-source-mappings/",
        Some(json!({"FunctionName": "b-reader", "EventSourceArn": a_queue, "BatchSize": 1})),
    )
    .await;
    assert_eq!(status, 202, "{created}");
    let send = |body: &'static str| {
        let (loft, a_url) = (&loft, a_url.clone());
        async move {
            let (status, out) = sqs(
                loft,
                A,
                "SendMessage",
                json!({"QueueUrl": a_url, "MessageBody": body}),
            )
            .await;
            assert_eq!(status, 200, "{out}");
        }
    };
    let set_policy = |policy: String| {
        let (loft, a_url) = (&loft, a_url.clone());
        async move {
            let (status, out) = sqs(
                loft,
                A,
                "SetQueueAttributes",
                json!({"QueueUrl": a_url, "Attributes": {"Policy": policy}}),
            )
            .await;
            assert_eq!(status, 200, "{out}");
        }
    };
    let patience = std::time::Duration::from_secs(60);

    // While A allows it, the mapping consumes A's message.
    send("while-allowed").await;
    let consumed = crate::wait::until(patience, || async {
        queue_counts(&loft, "a-mapped").await == (0, 0)
    })
    .await;
    assert!(consumed, "the mapping consumed nothing while A allowed it");
    let invoked = calls.load(Ordering::SeqCst);
    assert_eq!(invoked, 1);

    // A removes the grant: the mapping's next receive is refused.
    set_policy(String::new()).await;
    send("after-revoke").await;
    let refusal = format!(
        "arn:aws:iam::222222222222:root is not authorized to perform: sqs:ReceiveMessage on resource: {a_queue}"
    );
    let refused = crate::wait::until(patience, || async { loft.stderr().contains(&refusal) }).await;
    assert!(refused, "no refused receive logged: {}", loft.stderr());
    assert_eq!(
        calls.load(Ordering::SeqCst),
        invoked,
        "B's function saw A's message after the grant was removed"
    );
    let (visible, in_flight) = queue_counts(&loft, "a-mapped").await;
    assert_eq!(visible + in_flight, 1, "A's message is still A's");

    // A grants it again: the same mapping consumes the message.
    let grant = json!({"Version": "2012-10-17", "Statement": [{"Effect": "Allow",
        "Principal": {"AWS": "arn:aws:iam::222222222222:root"},
        "Action": ["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes"],
        "Resource": a_queue}]})
    .to_string();
    set_policy(grant).await;
    let consumed = crate::wait::until(patience, || async {
        queue_counts(&loft, "a-mapped").await == (0, 0)
    })
    .await;
    assert!(
        consumed,
        "the mapping did not resume once A allowed it again"
    );
    assert_eq!(calls.load(Ordering::SeqCst), invoked + 1);
}

/// A Lambda subscription's dead-letter queue is its owner's (SNS Developer Guide, "Amazon
/// SNS dead-letter queues"), and when the subscription is on another account's topic, the
/// message SNS moves there is still written by that topic: the queue's Policy must let the
/// topic send, as for every SNS write into a queue (`Core::may_send_into`). B subscribes
/// two of its functions, which always fail and are not retried, to A's topic: one with a
/// dead-letter queue whose Policy lets A's topic send (the message lands there), once with
/// one that has no Policy (the message is dropped, the queue stays empty).
#[tokio::test]
async fn a_dead_letter_queue_of_another_account_takes_only_what_its_policy_lets_the_topic_send() {
    let url = failing_function_endpoint().await;
    let (loft, _dir) = start_config(
        &format!(
            r#"
[[functions]]
name = "b-fails-open"
url = "{url}"
account = "222222222222"
allow_accounts = ["{ACCOUNT_A}"]
maximum_retry_attempts = 0

[[functions]]
name = "b-fails-closed"
url = "{url}"
account = "222222222222"
allow_accounts = ["{ACCOUNT_A}"]
maximum_retry_attempts = 0
"#
        ),
        &[],
    );
    let topic = format!("arn:aws:sns:us-east-1:{ACCOUNT_A}:a-events");
    let policy = json!({
        "Version": "2012-10-17",
        "Statement": [{
            "Effect": "Allow",
            "Principal": {"AWS": "arn:aws:iam::222222222222:root"},
            "Action": "sns:Subscribe",
            "Resource": topic,
        }]
    })
    .to_string();
    let (status, out) = sns(
        &loft,
        A,
        &[
            ("Action", "CreateTopic"),
            ("Name", "a-events"),
            ("Attributes.entry.1.key", "Policy"),
            ("Attributes.entry.1.value", &policy),
        ],
    )
    .await;
    assert_eq!(status, 200, "{out}");
    let open_policy = topic_may_send(&queue_arn("222222222222", "b-dlq-open"), &topic);
    let open = create_queue(&loft, B, "b-dlq-open", json!({"Policy": open_policy})).await;
    let closed = create_queue(&loft, B, "b-dlq-closed", json!({})).await;
    for which in ["open", "closed"] {
        let dlq = format!("b-dlq-{which}");
        let function = format!("arn:aws:lambda:us-east-1:222222222222:function:b-fails-{which}");
        let redrive = json!({"deadLetterTargetArn": queue_arn("222222222222", &dlq)}).to_string();
        let (status, out) = sns(
            &loft,
            B,
            &[
                ("Action", "Subscribe"),
                ("TopicArn", &topic),
                ("Protocol", "lambda"),
                ("Endpoint", &function),
                ("Attributes.entry.1.key", "RedrivePolicy"),
                ("Attributes.entry.1.value", &redrive),
            ],
        )
        .await;
        assert_eq!(status, 200, "B subscribes with {dlq}: {out}");
        assert!(
            xml_value(&out, "SubscriptionArn")
                .unwrap()
                .starts_with(&topic),
            "confirmed at once: {out}"
        );
    }
    let message_id = publish_as(&loft, A, &topic, "undeliverable").await;

    // Both deliveries end: one dead-lettered, one dropped (the metrics count each end).
    let metric = |outcome: &'static str| {
        let loft = &loft;
        async move {
            let text = crate::harness::http()
                .get(format!("{}/metrics", loft.url))
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap();
            let series =
                format!(r#"loft_deliveries_total{{protocol="lambda",outcome="{outcome}"}} "#);
            text.lines()
                .find_map(|l| l.strip_prefix(series.as_str()))
                .and_then(|n| n.trim().parse::<u64>().ok())
                .unwrap_or(0)
        }
    };
    let ended = crate::wait::poll(std::time::Duration::from_secs(30), || async {
        (metric("dead_lettered").await == 1 && metric("dropped").await == 1).then_some(())
    })
    .await;
    assert!(
        ended.is_some(),
        "both deliveries end: one dead-lettered, one dropped"
    );

    let receive = |url: String| receive_all(&loft, B, url);
    let got = receive(open).await;
    assert_eq!(got.len(), 1, "the allowed dead-letter queue: {got:?}");
    let body: Value = serde_json::from_str(got[0]["Body"].as_str().unwrap()).unwrap();
    assert_eq!(body["MessageId"], message_id.as_str(), "{body}");
    assert_eq!(body["TopicArn"], topic.as_str(), "{body}");
    assert!(
        receive(closed).await.is_empty(),
        "a dead-letter queue whose Policy does not let the topic send gets nothing"
    );
}

/// A FIFO queue's SequenceNumber tells its account nothing of other accounts' traffic (it
/// was once the store-wide message number: B could count A's messages). B sends to its
/// FIFO queue, A sends ten messages to queues of its own (FIFO and standard, one by one
/// and in a batch), B sends again: B's numbers step as they do with nothing in between.
/// Each is a 20-digit decimal, and a receive gives the one the send answered.
#[tokio::test]
async fn a_fifo_sequence_number_does_not_count_other_accounts_messages_on_sqlite() {
    fifo_numbers_are_the_queues_own(&[]).await;
}

/// [`a_fifo_sequence_number_does_not_count_other_accounts_messages_on_sqlite`] on
/// PostgreSQL (`LOFT_TEST_DATABASE_URL`).
#[tokio::test]
async fn a_fifo_sequence_number_does_not_count_other_accounts_messages_on_postgres() {
    let Some(node_url) = postgres_node(
        "tenants::a_fifo_sequence_number_does_not_count_other_accounts_messages_on_postgres",
    )
    .await
    else {
        return;
    };
    fifo_numbers_are_the_queues_own(&["--database-url", &node_url]).await;
}

/// See [`a_fifo_sequence_number_does_not_count_other_accounts_messages_on_sqlite`].
async fn fifo_numbers_are_the_queues_own(engine: &[&str]) {
    let (loft, _dir) = start_with(engine);
    let fifo = json!({"FifoQueue": "true", "ContentBasedDeduplication": "true"});
    let b_queue = create_queue(&loft, B, "b-orders.fifo", fifo.clone()).await;
    let a_fifo = create_queue(&loft, A, "a-orders.fifo", fifo).await;
    let a_plain = create_queue(&loft, A, "a-plain", json!({})).await;
    let mut b_sent = 0;
    let mut b_send = || {
        b_sent += 1;
        let (loft, url, body) = (&loft, b_queue.clone(), format!("b{b_sent}"));
        async move {
            let (status, out) = sqs(
                loft,
                B,
                "SendMessage",
                json!({"QueueUrl": url, "MessageBody": body, "MessageGroupId": "g"}),
            )
            .await;
            assert_eq!(status, 200, "{out}");
            let number = out["SequenceNumber"].as_str().expect("a SequenceNumber");
            assert!(number.len() >= 20, "{number}");
            number.parse::<u128>().expect("a decimal")
        }
    };
    // The step of B's numbers with nothing in between.
    let first = b_send().await;
    let second = b_send().await;
    let step = second - first;
    assert!(step > 0);
    // A sends ten messages between B's next two.
    for i in 0..4 {
        let (status, out) = sqs(
            &loft,
            A,
            "SendMessage",
            json!({"QueueUrl": a_fifo, "MessageBody": format!("a{i}"), "MessageGroupId": "g"}),
        )
        .await;
        assert_eq!(status, 200, "{out}");
    }
    let entries: Vec<Value> = (0..3)
        .map(|i| json!({"Id": format!("e{i}"), "MessageBody": format!("a-batch{i}"), "MessageGroupId": "h"}))
        .collect();
    let (status, out) = sqs(
        &loft,
        A,
        "SendMessageBatch",
        json!({"QueueUrl": a_fifo, "Entries": entries}),
    )
    .await;
    assert_eq!(status, 200, "{out}");
    for i in 0..3 {
        let (status, out) = sqs(
            &loft,
            A,
            "SendMessage",
            json!({"QueueUrl": a_plain, "MessageBody": format!("p{i}")}),
        )
        .await;
        assert_eq!(status, 200, "{out}");
    }
    let third = b_send().await;
    assert_eq!(
        third - second,
        step,
        "B's SequenceNumber moved by {} over A's ten messages, not by its own step {step}",
        third - second
    );
    // A batch of B's: each entry one step on.
    let entries: Vec<Value> = (0..2)
        .map(|i| json!({"Id": format!("e{i}"), "MessageBody": format!("b-batch{i}"), "MessageGroupId": "g"}))
        .collect();
    let (status, out) = sqs(
        &loft,
        B,
        "SendMessageBatch",
        json!({"QueueUrl": b_queue, "Entries": entries}),
    )
    .await;
    assert_eq!(status, 200, "{out}");
    let batch: Vec<u128> = out["Successful"]
        .as_array()
        .expect("Successful")
        .iter()
        .map(|e| e["SequenceNumber"].as_str().unwrap().parse().unwrap())
        .collect();
    assert_eq!(batch, [third + step, third + 2 * step]);
    // A receive gives each message the number its send answered.
    let (status, out) = sqs(
        &loft,
        B,
        "ReceiveMessage",
        json!({"QueueUrl": b_queue, "MaxNumberOfMessages": 10,
               "MessageSystemAttributeNames": ["SequenceNumber"]}),
    )
    .await;
    assert_eq!(status, 200, "{out}");
    let received: Vec<u128> = out["Messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| {
            m["Attributes"]["SequenceNumber"]
                .as_str()
                .unwrap()
                .parse()
                .unwrap()
        })
        .collect();
    assert_eq!(
        received,
        [first, second, third, third + step, third + 2 * step]
    );
}

/// A data protection policy's Outbound statement applies to the principals that
/// subscribed to the topic (SNS Developer Guide, "Understanding Amazon SNS data protection
/// policies"): one naming account B denies B's subscription a message with an email
/// address, and leaves A's own subscription on the same topic its copy.
#[tokio::test]
async fn an_outbound_data_protection_statement_applies_to_the_subscribing_account() {
    let (loft, _dir) = start();
    let topic = format!("arn:aws:sns:us-east-1:{ACCOUNT_A}:a-guarded");
    let policy = json!({
        "Version": "2012-10-17",
        "Statement": [{
            "Effect": "Allow",
            "Principal": {"AWS": "arn:aws:iam::222222222222:root"},
            "Action": "sns:Subscribe",
            "Resource": topic,
        }]
    })
    .to_string();
    let (status, out) = sns(
        &loft,
        A,
        &[
            ("Action", "CreateTopic"),
            ("Name", "a-guarded"),
            ("Attributes.entry.1.key", "Policy"),
            ("Attributes.entry.1.value", &policy),
        ],
    )
    .await;
    assert_eq!(status, 200, "{out}");
    let mut urls = Vec::new();
    for (key, account, name) in [(A, ACCOUNT_A, "a-reader"), (B, "222222222222", "b-reader")] {
        let arn = queue_arn(account, name);
        let url = create_queue(
            &loft,
            key,
            name,
            json!({"Policy": topic_may_send(&arn, &topic)}),
        )
        .await;
        let (status, out) = sns(
            &loft,
            key,
            &[
                ("Action", "Subscribe"),
                ("TopicArn", &topic),
                ("Protocol", "sqs"),
                ("Endpoint", &arn),
                ("Attributes.entry.1.key", "RawMessageDelivery"),
                ("Attributes.entry.1.value", "true"),
            ],
        )
        .await;
        assert_eq!(status, 200, "{account} subscribes: {out}");
        urls.push((key, url));
    }
    let protection = json!({"Name": "guard", "Version": "2021-06-01", "Statement": [{
        "Sid": "no-emails-to-b", "DataDirection": "Outbound",
        "Principal": ["222222222222"],
        "DataIdentifier": ["arn:aws:dataprotection::aws:data-identifier/EmailAddress"],
        "Operation": {"Deny": {}}}]})
    .to_string();
    let (status, out) = sns(
        &loft,
        A,
        &[
            ("Action", "PutDataProtectionPolicy"),
            ("ResourceArn", &topic),
            ("DataProtectionPolicy", &protection),
        ],
    )
    .await;
    assert_eq!(status, 200, "{out}");
    publish_as(&loft, A, &topic, "write to jo@example.com").await;
    publish_as(&loft, A, &topic, "nothing sensitive").await;
    let bodies = |got: Vec<Value>| -> Vec<String> {
        let mut b: Vec<String> = got
            .iter()
            .map(|m| m["Body"].as_str().unwrap().to_owned())
            .collect();
        b.sort();
        b
    };
    let (a_key, a_url) = urls[0].clone();
    let (b_key, b_url) = urls[1].clone();
    // Deliveries to SQS are written in the publish's own transaction.
    assert_eq!(
        bodies(receive_all(&loft, a_key, a_url).await),
        ["nothing sensitive", "write to jo@example.com"],
        "A's subscription is not B's: the statement does not apply to it"
    );
    assert_eq!(
        bodies(receive_all(&loft, b_key, b_url).await),
        ["nothing sensitive"],
        "B's subscription is denied the message with an email address"
    );
}

/// A's queue `name`'s Policy: account B may do `actions` on it.
async fn let_b(loft: &Loft, name: &str, actions: &[&str]) {
    let arn = queue_arn(ACCOUNT_A, name);
    let policy = json!({
        "Version": "2012-10-17",
        "Statement": [{
            "Effect": "Allow",
            "Principal": {"AWS": "arn:aws:iam::222222222222:root"},
            "Action": actions,
            "Resource": arn,
        }]
    })
    .to_string();
    let url = format!("{}/{ACCOUNT_A}/{name}", loft.url);
    let (status, out) = sqs(
        loft,
        A,
        "SetQueueAttributes",
        json!({"QueueUrl": url, "Attributes": {"Policy": policy}}),
    )
    .await;
    assert_eq!(status, 200, "{out}");
}

/// Loft's own routes ask what their AWS operations ask (found by a hostile tenant): the
/// seeds' delete by id, which deletes as a receipt handle does, needs `sqs:ReceiveMessage`
/// too, not `sqs:DeleteMessage` alone; the console's redrive needs StartMessageMoveTask's
/// permissions on its source (ReceiveMessage, DeleteMessage, GetQueueAttributes), not
/// `sqs:StartMessageMoveTask` alone; a seeds' `dead_letter_queue` is of the queue's own
/// account and region (the default account's key made its queue's dead-letter queue B's
/// and moved messages into it); a queue URL whose account segment is digits but no
/// account id names no queue, not the caller's own.
#[tokio::test]
async fn lofts_own_routes_need_what_their_aws_operations_need() {
    let (loft, _dir) = start();
    create_queue(&loft, B, "bq", json!({})).await;

    // The seeds' dead-letter queue in another account or region: refused, nothing made.
    for dlq in [
        "222222222222/bq",
        "222222222222/us-east-1/bq",
        "111111111111/eu-west-1/aq-eu",
    ] {
        let body = json!({"dead_letter_queue": dlq, "max_receive_count": 1}).to_string();
        let (status, out) = seeds_post(&loft, ROOT, "/queues/p-src", &body).await;
        assert_eq!(status, 400, "{dlq}: {out}");
        // An existing queue's key is refused by this rule (a new one's by the name rule).
        if dlq == "222222222222/bq" {
            assert!(out.contains("same account and region"), "{dlq}: {out}");
        }
    }
    let (status, out) = seeds_post(
        &loft,
        ROOT,
        "/queues/p-src",
        r#"{"dead_letter_queue":"p-dlq","max_receive_count":1}"#,
    )
    .await;
    assert_eq!(status, 201, "its own account's is taken: {out}");

    // The seeds' delete by id: DeleteMessage alone is not enough.
    create_queue(&loft, A, "a-del", json!({})).await;
    let_b(&loft, "a-del", &["sqs:DeleteMessage"]).await;
    let (status, out) = seeds_post(
        &loft,
        A,
        "/queues/111111111111%2Fa-del/messages",
        r#"{"body":"keep me"}"#,
    )
    .await;
    assert_eq!(status, 201, "{out}");
    let id = serde_json::from_str::<Value>(&out).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let delete = |key: (&'static str, &'static str)| {
        let url = format!("{}/queues/111111111111%2Fa-del/messages/{id}", loft.url);
        async move {
            send_signed(&signer(key, "sqs"), "DELETE", &url, &[], b"")
                .await
                .status()
                .as_u16()
        }
    };
    assert_eq!(delete(B).await, 403);
    assert_eq!(
        queue_counts(&loft, "a-del").await,
        (1, 0),
        "the message stays"
    );
    let_b(&loft, "a-del", &["sqs:DeleteMessage", "sqs:ReceiveMessage"]).await;
    assert_eq!(delete(B).await, 204, "with ReceiveMessage too it may");
    assert_eq!(queue_counts(&loft, "a-del").await, (0, 0));

    // The console's redrive: StartMessageMoveTask alone is not enough.
    dead_letter_queue(&loft, A, ACCOUNT_A, "r-dlq", "r-src", 2).await;
    let redrive = |key: (&'static str, &'static str)| {
        let url = format!("{}/_loft/queues/111111111111%2Fr-dlq/redrive", loft.url);
        async move {
            let resp = send_signed(&signer(key, "sqs"), "POST", &url, &[], b"").await;
            (resp.status().as_u16(), resp.text().await.unwrap())
        }
    };
    for actions in [
        vec!["sqs:StartMessageMoveTask"],
        vec!["sqs:StartMessageMoveTask", "sqs:ReceiveMessage"],
        vec![
            "sqs:StartMessageMoveTask",
            "sqs:ReceiveMessage",
            "sqs:DeleteMessage",
        ],
    ] {
        let_b(&loft, "r-dlq", &actions).await;
        let (status, out) = redrive(B).await;
        assert_eq!(status, 403, "{actions:?}: {out}");
        assert_eq!(queue_counts(&loft, "r-dlq").await, (2, 0), "{actions:?}");
    }
    let (status, out) = redrive(A).await;
    assert_eq!(status, 200, "the owner redrives: {out}");

    // A queue URL naming digits that are no account: no queue, not B's own `bq`.
    for account in ["0222222222222", "22222222222", "２２２２２２２２２２２２"] {
        let url = format!("{}/{account}/bq", loft.url);
        let (status, out) = sqs(
            &loft,
            B,
            "SendMessage",
            json!({"QueueUrl": url, "MessageBody": "x"}),
        )
        .await;
        assert_eq!(
            (status, out["__type"].as_str()),
            (400, Some("com.amazonaws.sqs#QueueDoesNotExist")),
            "{account}: {out}"
        );
    }
    let url = format!("{}/222222222222/bq", loft.url);
    let (status, out) = sqs(
        &loft,
        B,
        "GetQueueAttributes",
        json!({"QueueUrl": url, "AttributeNames": ["ApproximateNumberOfMessages"]}),
    )
    .await;
    assert_eq!(status, 200, "{out}");
    assert_eq!(
        out["Attributes"]["ApproximateNumberOfMessages"], "0",
        "{out}"
    );
}
