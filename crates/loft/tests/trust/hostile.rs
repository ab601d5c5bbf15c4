//! The hostile-tenant suite: account B (and an identity of account A whose policy denies
//! everything) tries every operation and route against account A's resources, by every
//! URL and ARN spelling Loft accepts, on SQLite and on PostgreSQL.
//!
//! What is generated: one request per operation of Loft's operation tables
//! (`loft_server::aws::{sqs,sns}::types::OPERATIONS`) and per spelling of the member that
//! names A's resource, over SQS JSON, SQS Query (on `/` and on the queue URL's path) and
//! SNS Query; then the Lambda API's routes and every other route (the seeds' API, the
//! console's JSON routes, `/_loft/*`). An operation with a required member the suite has no
//! value for fails the suite, so a new operation is covered the day it is added.
//!
//! What must hold (AWS's rule, IAM User Guide "Policy evaluation logic": another account's
//! resource needs its resource policy to allow; an explicit deny wins):
//! - the denied identity gets no 2xx (403 in the protocol's own shape, or the answer for
//!   a resource that does not exist, e.g. a topic ARN of another region);
//! - no answer to B contains A's data (every secret A stored carries [`MARK`]);
//! - nothing of A's changes: a snapshot of everything A can read (queues, attributes,
//!   tags, messages in flight, topics, subscriptions, platform applications and endpoints,
//!   SMS attributes, move tasks, event source mappings, recorded SNS messages) is the same
//!   after the barrage as before it;
//! - no 5xx.
//!
//! Sequences the operation tables do not make (each refused attempt counts as a request;
//! an accepted one is a door):
//! - data protection on B's own topic whose audit destination is A's queue (CreateTopic,
//!   SetTopicAttributes, PutDataProtectionPolicy), then a publish that would audit into it;
//!   the same policy naming B's own queue is accepted and audits there (the control);
//! - B's topic subscribing A's function (`lambda`), B's mapping of A's function on B's
//!   queue, B's ListFunctions naming it; the function is a recording server, which must
//!   receive nothing;
//! - `/metrics` under `--metrics-auth`: unsigned is refused, B's scrape names none of A's
//!   queues or topics (A's own does, the control);
//! - every row of the route table (`loft_server::permissions::ROUTES`), its placeholders
//!   filled with A's names; the listings (seeds' API, console) must not show A's
//!   resources: A keeps a marked queue and topic (`vsecretq`, `vsecrettopic`) that B
//!   never names, so their names in any answer to B are a leak.
//!
//! - existence: for A's function (GetFunction, Create-, Update- and
//!   ListEventSourceMappings by name, partial ARN and ARN; SNS Subscribe of B's topic to
//!   it), A's subscription (Get- and SetSubscriptionAttributes, Unsubscribe) and A's move
//!   task (CancelMessageMoveTask), B's answer must be the one B gets for a made-up resource
//!   of the same shape, B's own input echoed apart: a difference tells B it exists.
//!
//! Figures go to stdout (`hostile[ENGINE]: N requests, N refused, N answered 2xx, 0 doors`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::SystemTime;

use loft_server::aws::shape::{Kind, Member};
use serde_json::{json, Map, Value};

use crate::harness::{send_signed, Loft, Signer};

const A: &str = "111111111111";
const B: &str = "222222222222";
/// Every secret of account A contains this (case-insensitively); no answer to B may.
const MARK: &str = "vsecret";

/// An access key and its secret.
#[derive(Clone, Copy)]
struct Key(&'static str, &'static str);

/// Account A's owner: no policies, everything in its own account.
const OWNER: Key = Key("AKIDHOSTOWNER", "owner-secret");
/// Account A, an identity whose policy denies every action on every resource.
const DENIED: Key = Key("AKIDHOSTDENIED", "denied-secret");
/// Account B: no policies, everything in its own account and nothing in A's.
const ATTACKER: Key = Key("AKIDHOSTATTACK", "attack-secret");

fn config(function_url: &str) -> String {
    let deny = r#"{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}, {"Effect": "Deny", "Action": "*", "Resource": "*"}]}"#;
    format!(
        r#"[server]
account_id = "{A}"

[[credentials]]
access_key_id = "{owner}"
secret_access_key = "{owner_secret}"
account_id = "{A}"
identity = "user/owner"

[[credentials]]
access_key_id = "{denied}"
secret_access_key = "{denied_secret}"
account_id = "{A}"
identity = "user/denied"
policies = [{deny:?}]

[[credentials]]
access_key_id = "{attacker}"
secret_access_key = "{attacker_secret}"
account_id = "{B}"
identity = "user/attacker"

[[functions]]
name = "vfunc"
url = "{function_url}"

# B's own function (a host nothing listens on): B's mapping of it is what B changes to
# name A's function in UpdateEventSourceMapping.
[[functions]]
name = "bfunc"
url = "http://127.0.0.1:9/"
account = "{B}"
"#,
        owner = OWNER.0,
        owner_secret = OWNER.1,
        denied = DENIED.0,
        denied_secret = DENIED.1,
        attacker = ATTACKER.0,
        attacker_secret = ATTACKER.1,
    )
}

/// One answer: status, body and the Lambda API's error type (`x-amzn-ErrorType`, which
/// its error bodies leave out).
#[derive(Debug, Clone)]
struct Answer {
    status: u16,
    body: String,
    kind: String,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }
    /// The text of the first `<name>` element.
    fn xml(&self, name: &str) -> Option<String> {
        let open = format!("<{name}>");
        let start = self.body.find(&open)? + open.len();
        let end = self.body[start..].find(&format!("</{name}>"))? + start;
        Some(
            self.body[start..end]
                .replace("&amp;", "&")
                .replace("&quot;", "\""),
        )
    }
    /// Every `<name>` element's text.
    fn xml_all(&self, name: &str) -> Vec<String> {
        let (open, close) = (format!("<{name}>"), format!("</{name}>"));
        let mut out = Vec::new();
        let mut rest = self.body.as_str();
        while let Some(s) = rest.find(&open) {
            let after = &rest[s + open.len()..];
            let Some(e) = after.find(&close) else { break };
            out.push(after[..e].to_owned());
            rest = &after[e + close.len()..];
        }
        out
    }
}

/// A signing client of one server.
struct Client<'a> {
    base: &'a str,
    key: Key,
}

impl Client<'_> {
    async fn send(
        &self,
        service: &str,
        method: &str,
        url: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Answer {
        let signer = Signer {
            key: self.key.0,
            secret: self.key.1,
            service,
            at: SystemTime::now(),
        };
        let r = send_signed(&signer, method, url, headers, body).await;
        let kind = r
            .headers()
            .get("x-amzn-errortype")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        Answer {
            status: r.status().as_u16(),
            body: r.text().await.unwrap_or_default(),
            kind,
        }
    }

    async fn sqs_json(&self, op: &str, input: &Value) -> Answer {
        let target = format!("AmazonSQS.{op}");
        let headers = [
            ("content-type", "application/x-amz-json-1.0"),
            ("x-amz-target", target.as_str()),
        ];
        let url = format!("{}/", self.base);
        self.send("sqs", "POST", &url, &headers, input.to_string().as_bytes())
            .await
    }

    async fn query(&self, service: &str, url: &str, pairs: &[(String, String)]) -> Answer {
        let body = form_urlencoded::Serializer::new(String::new())
            .extend_pairs(pairs)
            .finish();
        let headers = [("content-type", "application/x-www-form-urlencoded")];
        self.send(service, "POST", url, &headers, body.as_bytes())
            .await
    }

    async fn sns(&self, op: &str, params: &[(&str, &str)]) -> Answer {
        let mut pairs = vec![
            ("Action".to_owned(), op.to_owned()),
            ("Version".to_owned(), "2010-03-31".to_owned()),
        ];
        pairs.extend(params.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        self.query("sns", &format!("{}/", self.base), &pairs).await
    }

    /// [`Client::sns`], which must succeed (setup steps).
    async fn sns_ok(&self, op: &str, params: &[(&str, &str)]) -> Answer {
        let a = self.sns(op, params).await;
        ok(&a, op);
        a
    }

    async fn rest(&self, service: &str, method: &str, path: &str, body: Option<&Value>) -> Answer {
        let url = format!("{}{path}", self.base);
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let headers: &[(&str, &str)] = if body.is_empty() {
            &[]
        } else {
            &[("content-type", "application/json")]
        };
        self.send(service, method, &url, headers, body.as_bytes())
            .await
    }
}

/// A's resources, made by [`setup`].
struct Victim {
    base: String,
    port: u16,
    handle: String,
    fifo_handle: String,
    task_handle: String,
    topic: String,
    subscription: String,
    app: String,
    endpoint: String,
    mapping: Option<String>,
    attacker_topic: String,
    attacker_queue_arn: String,
    attacker_queue_url: String,
}

fn qarn(account: &str, name: &str) -> String {
    format!("arn:aws:sqs:us-east-1:{account}:{name}")
}

impl Victim {
    fn url(&self, name: &str) -> String {
        format!("{}/{A}/{name}", self.base)
    }
    /// Every spelling of A's queue `name`'s URL that Loft accepts.
    fn url_spellings(&self, name: &str) -> Vec<String> {
        vec![
            self.url(name),
            format!("http://localhost:{}/{A}/{name}", self.port),
            format!("https://sqs.us-east-1.amazonaws.com/{A}/{name}"),
            format!("{}/queue/us-east-1/{A}/{name}", self.base),
        ]
    }
    /// The spellings of A's subscription: its ARN, and B's topic's ARN with its id.
    fn subscription_spellings(&self) -> Vec<String> {
        let id = self.subscription.rsplit(':').next().unwrap_or_default();
        vec![
            self.subscription.clone(),
            format!("{}:{id}", self.attacker_topic),
        ]
    }
}

fn ok(a: &Answer, what: &str) {
    assert!(
        (200..300).contains(&a.status),
        "{what}: {} {}",
        a.status,
        a.body
    );
}

async fn setup(base: &str, port: u16) -> Victim {
    let owner = Client { base, key: OWNER };
    let attacker = Client {
        base,
        key: ATTACKER,
    };
    let url = |name: &str| format!("{base}/{A}/{name}");
    let policy = json!({
        "Version": "2012-10-17", "Id": "vsecret-policy",
        "Statement": [{"Sid": "vsecretsid", "Effect": "Allow",
            "Principal": {"AWS": format!("arn:aws:iam::{A}:root")},
            "Action": "sqs:SendMessage", "Resource": qarn(A, "vq")}],
    });
    for (name, attrs) in [
        // Named in no request of B's: its name in an answer to B is a leak (listings).
        ("vsecretq", json!({})),
        ("vdlq", json!({})),
        ("vdest", json!({})),
        ("vmapq", json!({})),
        ("vwatch", json!({})),
        (
            "vq.fifo",
            json!({"FifoQueue": "true", "ContentBasedDeduplication": "true"}),
        ),
        (
            "vq",
            json!({
                "Policy": policy.to_string(),
                "RedrivePolicy": json!({"deadLetterTargetArn": qarn(A, "vdlq"), "maxReceiveCount": 5}).to_string(),
            }),
        ),
    ] {
        let a = owner
            .sqs_json(
                "CreateQueue",
                &json!({"QueueName": name, "Attributes": attrs, "tags": {"owner": "vsecret-tag"}}),
            )
            .await;
        ok(&a, &format!("CreateQueue {name}"));
    }
    for i in 0..3 {
        let a = owner
            .sqs_json(
                "SendMessage",
                &json!({"QueueUrl": url("vq"), "MessageBody": format!("vsecret body {i}")}),
            )
            .await;
        ok(&a, "SendMessage vq");
    }
    let a = owner
        .sqs_json(
            "ReceiveMessage",
            &json!({"QueueUrl": url("vq"), "MaxNumberOfMessages": 1, "VisibilityTimeout": 3600}),
        )
        .await;
    ok(&a, "ReceiveMessage vq");
    let handle = a.json()["Messages"][0]["ReceiptHandle"]
        .as_str()
        .expect("a receipt handle")
        .to_owned();
    let a = owner
        .sqs_json(
            "SendMessage",
            &json!({"QueueUrl": url("vq.fifo"), "MessageBody": "vsecret fifo", "MessageGroupId": "g"}),
        )
        .await;
    ok(&a, "SendMessage vq.fifo");
    let a = owner
        .sqs_json(
            "ReceiveMessage",
            &json!({"QueueUrl": url("vq.fifo"), "MaxNumberOfMessages": 1, "VisibilityTimeout": 3600}),
        )
        .await;
    let fifo_handle = a.json()["Messages"][0]["ReceiptHandle"]
        .as_str()
        .expect("a FIFO receipt handle")
        .to_owned();
    // A slow move task (1 message a second over 300) that is still running when the
    // barrage ends.
    for batch in 0..30 {
        let entries: Vec<Value> = (0..10)
            .map(|i| json!({"Id": format!("m{i}"), "MessageBody": format!("vsecret dlq {batch}-{i}")}))
            .collect();
        let a = owner
            .sqs_json(
                "SendMessageBatch",
                &json!({"QueueUrl": url("vdlq"), "Entries": entries}),
            )
            .await;
        ok(&a, "SendMessageBatch vdlq");
    }
    let a = owner
        .sqs_json(
            "StartMessageMoveTask",
            &json!({"SourceArn": qarn(A, "vdlq"), "DestinationArn": qarn(A, "vdest"),
                "MaxNumberOfMessagesPerSecond": 1}),
        )
        .await;
    ok(&a, "StartMessageMoveTask");
    let task_handle = a.json()["TaskHandle"].as_str().unwrap().to_owned();

    let a = owner
        .sns_ok(
            "CreateTopic",
            &[
                ("Name", "vt"),
                ("Attributes.entry.1.key", "DisplayName"),
                ("Attributes.entry.1.value", "vsecretname"),
            ],
        )
        .await;
    let topic = a.xml("TopicArn").unwrap();
    owner
        .sns_ok("CreateTopic", &[("Name", "vsecrettopic")])
        .await;
    let vq_arn = qarn(A, "vq");
    let a = owner
        .sns_ok(
            "Subscribe",
            &[
                ("TopicArn", &topic),
                ("Protocol", "sqs"),
                ("Endpoint", &vq_arn),
                ("ReturnSubscriptionArn", "true"),
                ("Attributes.entry.1.key", "FilterPolicy"),
                (
                    "Attributes.entry.1.value",
                    r#"{"owner": ["vsecret-filter"]}"#,
                ),
            ],
        )
        .await;
    let subscription = a.xml("SubscriptionArn").unwrap();
    // A second subscription without a filter: whatever reaches A's topic lands in `vwatch`,
    // whose depth the snapshot holds, so a publish by anyone else shows.
    owner
        .sns_ok(
            "Subscribe",
            &[
                ("TopicArn", &topic),
                ("Protocol", "sqs"),
                ("Endpoint", &qarn(A, "vwatch")),
                ("Attributes.entry.1.key", "RawMessageDelivery"),
                ("Attributes.entry.1.value", "true"),
            ],
        )
        .await;
    owner
        .sns_ok(
            "TagResource",
            &[
                ("ResourceArn", &topic),
                ("Tags.member.1.Key", "owner"),
                ("Tags.member.1.Value", "vsecret-tag"),
            ],
        )
        .await;
    let a = owner
        .sns_ok(
            "CreatePlatformApplication",
            &[
                ("Name", "vapp"),
                ("Platform", "GCM"),
                ("Attributes.entry.1.key", "PlatformCredential"),
                ("Attributes.entry.1.value", "vsecret-credential"),
                ("Attributes.entry.2.key", "PlatformPrincipal"),
                ("Attributes.entry.2.value", "vsecret-principal"),
            ],
        )
        .await;
    let app = a.xml("PlatformApplicationArn").unwrap();
    let a = owner
        .sns_ok(
            "CreatePlatformEndpoint",
            &[
                ("PlatformApplicationArn", &app),
                ("Token", "vsecret-token"),
                ("CustomUserData", "vsecret-data"),
            ],
        )
        .await;
    let endpoint = a.xml("EndpointArn").unwrap();
    owner
        .sns_ok(
            "SetSMSAttributes",
            &[
                ("attributes.entry.1.key", "DefaultSenderID"),
                ("attributes.entry.1.value", "VSECRET1"),
            ],
        )
        .await;
    owner
        .sns_ok(
            "Publish",
            &[("PhoneNumber", "+15555550100"), ("Message", "vsecret sms")],
        )
        .await;
    owner
        .sns_ok(
            "CreateSMSSandboxPhoneNumber",
            &[("PhoneNumber", "+15555550177")],
        )
        .await;
    let a = owner
        .rest(
            "lambda",
            "POST",
            "/2015-03-31/event-source-mappings/",
            Some(&json!({"EventSourceArn": qarn(A, "vmapq"), "FunctionName": "vfunc", "Enabled": false})),
        )
        .await;
    // Account A's own mapping on its own queue; a failure is reported by the suite.
    let mapping = (200..300)
        .contains(&a.status)
        .then(|| a.json()["UUID"].as_str().unwrap_or_default().to_owned());

    // B's own topic and queue, for the spellings that mix B's names with A's.
    let a = attacker.sns_ok("CreateTopic", &[("Name", "bt")]).await;
    let attacker_topic = a.xml("TopicArn").unwrap();
    let a = attacker
        .sqs_json("CreateQueue", &json!({"QueueName": "bq"}))
        .await;
    ok(&a, "CreateQueue bq");
    Victim {
        base: base.to_owned(),
        port,
        handle,
        fifo_handle,
        task_handle,
        topic,
        subscription,
        app,
        endpoint,
        mapping,
        attacker_topic,
        attacker_queue_arn: qarn(B, "bq"),
        attacker_queue_url: format!("{base}/{B}/bq"),
    }
}

/// Everything account A can read of its own, as text; the same before and after the barrage.
async fn snapshot(v: &Victim) -> BTreeMap<String, String> {
    let owner = Client {
        base: &v.base,
        key: OWNER,
    };
    let mut out = BTreeMap::new();
    let a = owner.sqs_json("ListQueues", &json!({})).await;
    out.insert("ListQueues".into(), a.body.clone());
    for name in ["vq", "vq.fifo", "vdlq", "vdest", "vmapq", "vwatch"] {
        let a = owner
            .sqs_json(
                "GetQueueAttributes",
                &json!({"QueueUrl": v.url(name), "AttributeNames": ["All"]}),
            )
            .await;
        let mut attrs = a.json()["Attributes"].clone();
        if matches!(name, "vdlq" | "vdest") {
            // The move task changes these as it runs.
            if let Some(m) = attrs.as_object_mut() {
                m.retain(|k, _| !k.starts_with("ApproximateNumberOfMessages"));
            }
        }
        out.insert(format!("GetQueueAttributes {name}"), attrs.to_string());
        let a = owner
            .sqs_json("ListQueueTags", &json!({"QueueUrl": v.url(name)}))
            .await;
        out.insert(format!("ListQueueTags {name}"), a.body);
    }
    let a = owner
        .sqs_json(
            "ListMessageMoveTasks",
            &json!({"SourceArn": qarn(A, "vdlq"), "MaxResults": 10}),
        )
        .await;
    let cancelled = a.json()["Results"]
        .as_array()
        .map(|r| r.iter().filter(|t| t["Status"] == "CANCELLED").count());
    out.insert(
        "ListMessageMoveTasks cancelled".into(),
        format!("{cancelled:?}"),
    );
    // Each SNS read of A's: (operation, parameter, value, what of the answer is kept).
    let reads: [(&str, &str, &str, Pick); 14] = [
        ("ListTopics", "", "", Pick::All("TopicArn")),
        ("GetTopicAttributes", "TopicArn", &v.topic, Pick::Attributes),
        (
            "ListSubscriptionsByTopic",
            "TopicArn",
            &v.topic,
            Pick::All("SubscriptionArn"),
        ),
        (
            "GetSubscriptionAttributes",
            "SubscriptionArn",
            &v.subscription,
            Pick::Attributes,
        ),
        (
            "ListTagsForResource",
            "ResourceArn",
            &v.topic,
            Pick::All("Value"),
        ),
        (
            "GetDataProtectionPolicy",
            "ResourceArn",
            &v.topic,
            Pick::All("DataProtectionPolicy"),
        ),
        (
            "ListPlatformApplications",
            "",
            "",
            Pick::All("PlatformApplicationArn"),
        ),
        (
            "GetPlatformApplicationAttributes",
            "PlatformApplicationArn",
            &v.app,
            Pick::Attributes,
        ),
        (
            "ListEndpointsByPlatformApplication",
            "PlatformApplicationArn",
            &v.app,
            Pick::All("EndpointArn"),
        ),
        (
            "GetEndpointAttributes",
            "EndpointArn",
            &v.endpoint,
            Pick::Attributes,
        ),
        ("GetSMSAttributes", "", "", Pick::Attributes),
        ("ListSubscriptions", "", "", Pick::All("SubscriptionArn")),
        ("ListPhoneNumbersOptedOut", "", "", Pick::All("member")),
        (
            "ListSMSSandboxPhoneNumbers",
            "",
            "",
            Pick::All("PhoneNumber"),
        ),
    ];
    for (op, param, value, pick) in reads {
        let params: &[(&str, &str)] = if param.is_empty() {
            &[]
        } else {
            &[(param, value)]
        };
        let a = owner.sns(op, params).await;
        let kept = match pick {
            Pick::All(element) => a.xml_all(element).join(","),
            Pick::Attributes => attributes_of(&a),
        };
        out.insert(op.to_owned(), kept);
    }
    let a = owner
        .rest("lambda", "GET", "/2015-03-31/event-source-mappings/", None)
        .await;
    let mut mappings: Vec<String> = a.json()["EventSourceMappings"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| format!("{} {} {}", m["UUID"], m["EventSourceArn"], m["State"]))
        .collect();
    mappings.sort();
    out.insert("ListEventSourceMappings".into(), mappings.join(","));
    let a = owner.rest("sqs", "GET", "/_loft/sns/messages", None).await;
    out.insert(
        "recorded SNS messages".into(),
        format!("{} {}", a.status, a.body.matches("vsecret sms").count()),
    );
    out
}

/// What a snapshot keeps of an SNS answer.
#[derive(Clone, Copy)]
enum Pick {
    /// Every `<element>`'s text.
    All(&'static str),
    /// The `key=value` attribute pairs ([`attributes_of`]).
    Attributes,
}

/// The `<entry><key>K</key><value>V</value></entry>` pairs of an SNS answer, sorted.
fn attributes_of(a: &Answer) -> String {
    let keys = a.xml_all("key");
    let values = a.xml_all("value");
    let mut pairs: Vec<String> = keys
        .into_iter()
        .zip(values)
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    pairs.sort();
    format!("{} {}", a.status, pairs.join(";"))
}

// ---------------------------------------------------------------------------------------
// Request generation from the operation tables.

/// The values a member of an attack takes, by member name: several for the members that
/// name A's resources (one request each), one for the rest. `None` for a member the suite
/// has no value for (a required one fails the suite).
fn sqs_values(v: &Victim, _op: &str, member: &str) -> Option<Vec<Value>> {
    let one = |x: Value| Some(vec![x]);
    match member {
        "QueueUrl" => Some(
            v.url_spellings("vq")
                .into_iter()
                .chain(v.url_spellings("vq.fifo").into_iter().take(1))
                .map(Value::from)
                .collect(),
        ),
        "QueueName" => one(json!("vq")),
        "QueueOwnerAWSAccountId" => one(json!(A)),
        "ReceiptHandle" => Some(vec![json!(v.handle), json!(v.fifo_handle)]),
        "SourceArn" => Some(vec![json!(qarn(A, "vdlq")), json!(qarn(A, "vq"))]),
        "DestinationArn" => one(json!(qarn(B, "bq"))),
        "TaskHandle" => one(json!(v.task_handle)),
        "MessageBody" => one(json!("attack")),
        "MessageGroupId" => one(json!("g")),
        "MessageDeduplicationId" => one(json!("attack")),
        "Id" => one(json!("e1")),
        "Label" => one(json!("attack")),
        "AWSAccountIds" => one(json!([B])),
        "Actions" => one(json!(["SendMessage"])),
        "Attributes" => one(json!({"VisibilityTimeout": "7"})),
        "AttributeNames" | "MessageAttributeNames" | "MessageSystemAttributeNames" => {
            one(json!(["All"]))
        }
        "Tags" | "tags" => one(json!({"attack": "1"})),
        "TagKeys" => one(json!(["owner"])),
        "VisibilityTimeout" => one(json!(0)),
        "MaxNumberOfMessages" => one(json!(10)),
        "WaitTimeSeconds" => one(json!(0)),
        "MaxResults" => one(json!(10)),
        "MaxNumberOfMessagesPerSecond" => one(json!(10)),
        _ => None,
    }
}

/// The inputs of one operation: a base input with each member's first value, then one
/// input per further value of each member, then, for each optional member that names a
/// resource (an ARN or a URL), one input per value in which it is the only optional one
/// that does: alternatives such as Publish's TopicArn and TargetArn are each tried alone,
/// so one cannot hide behind another.
fn inputs(
    op: &str,
    members: &[Member],
    values: &dyn Fn(&str, &str) -> Option<Vec<Value>>,
    missing: &mut Vec<String>,
) -> Vec<Map<String, Value>> {
    let mut base = Map::new();
    let mut variants: Vec<(&str, Vec<Value>)> = Vec::new();
    let names_resource =
        |m: &Member| !m.required && (m.name.ends_with("Arn") || m.name.ends_with("Url"));
    let alternatives: Vec<&str> = members
        .iter()
        .filter(|m| names_resource(m))
        .map(|m| m.name)
        .collect();
    let mut alone: Vec<(&str, Vec<Value>)> = Vec::new();
    for m in members {
        let vals = match (m.kind, values(op, m.name)) {
            (_, Some(vals)) => vals,
            (Kind::List(Kind::Structure(inner)), None) if m.required => {
                let entries = inputs(op, inner, values, missing);
                entries
                    .into_iter()
                    .map(|e| Value::Array(vec![Value::Object(e)]))
                    .collect()
            }
            (_, None) if m.required => {
                missing.push(format!("{op}.{}", m.name));
                continue;
            }
            (_, None) => continue,
        };
        if names_resource(m) && alternatives.len() > 1 {
            alone.push((m.name, vals.clone()));
        }
        let mut vals = vals.into_iter();
        if let Some(first) = vals.next() {
            base.insert(m.name.to_owned(), first);
        }
        variants.push((m.name, vals.collect()));
    }
    let mut out = vec![base.clone()];
    for (name, rest) in variants {
        for value in rest {
            let mut input = base.clone();
            input.insert(name.to_owned(), value);
            out.push(input);
        }
    }
    for (name, vals) in alone {
        for value in vals {
            let mut input = base.clone();
            input.retain(|k, _| k == name || !alternatives.contains(&k.as_str()));
            input.insert(name.to_owned(), value);
            out.push(input);
        }
    }
    out
}

/// Query parameters of an SQS input (flattened lists and maps, the members' Query names).
fn sqs_query_pairs(
    members: &[Member],
    input: &Map<String, Value>,
    prefix: &str,
) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (name, value) in input {
        let (query, kind) = members
            .iter()
            .find(|m| m.name == name)
            .map_or((name.as_str(), &Kind::String), |m| (m.query, m.kind));
        query_value(kind, &format!("{prefix}{query}"), value, false, &mut out);
    }
    out
}

/// SNS Query parameters of an input (`member` lists, `entry` maps).
fn sns_query_pairs(
    members: &[Member],
    input: &Map<String, Value>,
    prefix: &str,
) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (name, value) in input {
        let kind = members
            .iter()
            .find(|m| m.name == name)
            .map_or(&Kind::String, |m| m.kind);
        query_value(kind, &format!("{prefix}{name}"), value, true, &mut out);
    }
    out
}

fn query_value(kind: &Kind, name: &str, value: &Value, sns: bool, out: &mut Vec<(String, String)>) {
    match (kind, value) {
        (Kind::List(item), Value::Array(items)) => {
            for (i, v) in items.iter().enumerate() {
                let n = if sns {
                    format!("{name}.member.{}", i + 1)
                } else {
                    format!("{name}.{}", i + 1)
                };
                query_value(item, &n, v, sns, out);
            }
        }
        (Kind::Map { key, value, of }, Value::Object(map)) => {
            for (i, (k, v)) in map.iter().enumerate() {
                let n = if sns {
                    format!("{name}.entry.{}", i + 1)
                } else {
                    format!("{name}.{}", i + 1)
                };
                out.push((format!("{n}.{key}"), k.clone()));
                query_value(of, &format!("{n}.{value}"), v, sns, out);
            }
        }
        (Kind::Structure(members), Value::Object(obj)) => {
            let inner = if sns {
                sns_query_pairs(members, obj, &format!("{name}."))
            } else {
                sqs_query_pairs(members, obj, &format!("{name}."))
            };
            out.extend(inner);
        }
        (_, Value::String(s)) => out.push((name.to_owned(), s.clone())),
        (_, other) => out.push((name.to_owned(), other.to_string())),
    }
}

fn sns_values(v: &Victim, op: &str, member: &str) -> Option<Vec<Value>> {
    let one = |x: &str| Some(vec![json!(x)]);
    match (op, member) {
        (_, "TopicArn") => Some(vec![
            json!(v.topic),
            json!(v.topic.replace("us-east-1", "us-west-2")),
        ]),
        (_, "SubscriptionArn") => Some(
            v.subscription_spellings()
                .into_iter()
                .map(Value::from)
                .collect(),
        ),
        (_, "ResourceArn") => Some(vec![json!(v.topic), json!(qarn(A, "vq"))]),
        (_, "PlatformApplicationArn") => one(&v.app),
        (_, "EndpointArn") => one(&v.endpoint),
        (_, "TargetArn") => Some(vec![json!(v.endpoint), json!(v.topic)]),
        ("CreatePlatformApplication", "Attributes") => Some(vec![json!({
            "PlatformCredential": "attack", "PlatformPrincipal": "attack"
        })]),
        ("CreatePlatformApplication", "Name") => one("vapp"),
        ("CreatePlatformApplication", "Platform") => one("GCM"),
        ("SetEndpointAttributes", "Attributes") => Some(vec![json!({"Enabled": "false"})]),
        ("SetPlatformApplicationAttributes", "Attributes") => {
            Some(vec![json!({"Enabled": "false"})])
        }
        ("SetSMSAttributes", "attributes") => Some(vec![json!({"DefaultSenderID": "ATTACK1"})]),
        ("CreatePlatformEndpoint", "Token") => one("attack-token"),
        (_, "Token") => one("0123456789abcdef0123456789abcdef"),
        ("SetTopicAttributes", "AttributeName") => one("DisplayName"),
        ("SetTopicAttributes", "AttributeValue") => one("attack"),
        ("SetSubscriptionAttributes", "AttributeName") => one("FilterPolicy"),
        ("SetSubscriptionAttributes", "AttributeValue") => one(r#"{"attack": ["1"]}"#),
        (_, "Name") => one("vt"),
        (_, "Protocol") => one("sqs"),
        (_, "Endpoint") => one(&v.attacker_queue_arn),
        (_, "ReturnSubscriptionArn") => Some(vec![json!(true)]),
        (_, "Message") => one("attack"),
        (_, "Subject") => one("attack"),
        (_, "PhoneNumber" | "phoneNumber") => one("+15555550100"),
        (_, "OneTimePassword") => one("123456"),
        (_, "LanguageCode") => one("en-US"),
        (_, "Label") => one("attack"),
        (_, "AWSAccountId") => Some(vec![json!([B])]),
        (_, "ActionName") => Some(vec![json!(["Publish"])]),
        (_, "Tags") => Some(vec![json!([{"Key": "attack", "Value": "1"}])]),
        (_, "TagKeys") => Some(vec![json!(["owner"])]),
        (_, "Id") => one("e1"),
        (_, "DataProtectionPolicy") => one(
            r#"{"Name": "p", "Version": "2021-06-01", "Statement": [{"DataDirection": "Inbound", "Principal": ["*"], "DataIdentifier": ["arn:aws:dataprotection::aws:data-identifier/EmailAddress"], "Operation": {"Deny": {}}}]}"#,
        ),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------
// The barrage.

/// What the barrage found.
#[derive(Default)]
struct Tally {
    requests: usize,
    refused: usize,
    answered: usize,
    doors: Vec<String>,
}

impl Tally {
    /// Judges one answer to `who` for `what`.
    fn judge(&mut self, who: Key, what: &str, a: &Answer) {
        self.requests += 1;
        let denied = who.0 == DENIED.0;
        if a.status >= 500 {
            self.doors.push(format!("{what}: {} {}", a.status, a.body));
        } else if denied && a.status < 400 {
            self.doors.push(format!(
                "{what} (denied identity): {} {}",
                a.status,
                trim(&a.body)
            ));
        } else if a.body.to_ascii_lowercase().contains(MARK) {
            self.doors
                .push(format!("{what}: leaked A's data: {}", trim(&a.body)));
        } else if a.status >= 400 {
            self.refused += 1;
        } else {
            self.answered += 1;
        }
    }
}

impl Tally {
    /// Judges an attempt that must be refused: a 2xx is a door, whoever asked.
    fn refused(&mut self, who: Key, what: &str, a: &Answer) {
        if (200..300).contains(&a.status) {
            self.requests += 1;
            self.doors
                .push(format!("{what}: accepted: {} {}", a.status, trim(&a.body)));
        } else {
            self.judge(who, what, a);
        }
    }

    /// Judges an answer to `who` that must not contain any of `names` (A's resources).
    fn without(&mut self, who: Key, what: &str, a: &Answer, names: &[&str]) {
        self.judge(who, what, a);
        for n in names.iter().filter(|n| a.body.contains(**n)) {
            let line = a.body.lines().find(|l| l.contains(*n)).unwrap_or_default();
            self.doors
                .push(format!("{what}: shows A's {n}: {}", trim(line)));
        }
    }

    /// Judges a public route's answer: as [`Tally::judge`], but a 2xx to the denied
    /// identity is no door (the route holds no account's data and takes no action).
    fn public(&mut self, who: Key, what: &str, a: &Answer) {
        if who.0 == DENIED.0 && a.status < 400 {
            self.requests += 1;
            self.answered += 1;
        } else {
            self.judge(who, what, a);
        }
    }
}

fn trim(s: &str) -> String {
    s.chars().take(300).collect()
}

async fn barrage(v: &Victim, who: Key, tally: &mut Tally) {
    let c = Client {
        base: &v.base,
        key: who,
    };
    let mut missing = Vec::new();
    let sqs_values = |op: &str, m: &str| sqs_values(v, op, m);
    for op in loft_server::aws::sqs::types::OPERATIONS {
        for input in inputs(op.name, op.input, &sqs_values, &mut missing) {
            let what = format!("SQS JSON {} {}", op.name, Value::Object(input.clone()));
            let a = c.sqs_json(op.name, &Value::Object(input.clone())).await;
            tally.judge(who, &what, &a);
            let mut pairs = vec![
                ("Action".to_owned(), op.name.to_owned()),
                ("Version".to_owned(), "2012-11-05".to_owned()),
            ];
            pairs.extend(sqs_query_pairs(op.input, &input, ""));
            let a = c.query("sqs", &format!("{}/", v.base), &pairs).await;
            tally.judge(who, &format!("SQS Query {} {pairs:?}", op.name), &a);
            // The queue URL's own path, with QueueUrl left out.
            if let Some(Value::String(url)) = input.get("QueueUrl") {
                if url.starts_with(&v.base) {
                    let path: Vec<_> = pairs
                        .iter()
                        .filter(|(k, _)| k != "QueueUrl")
                        .cloned()
                        .collect();
                    let a = c.query("sqs", url, &path).await;
                    tally.judge(who, &format!("SQS Query at {url} {path:?}"), &a);
                }
            }
        }
    }
    let sns_values = |op: &str, m: &str| sns_values(v, op, m);
    for op in loft_server::aws::sns::types::OPERATIONS {
        for input in inputs(op.name, op.input, &sns_values, &mut missing) {
            let mut pairs = vec![
                ("Action".to_owned(), op.name.to_owned()),
                ("Version".to_owned(), "2010-03-31".to_owned()),
            ];
            pairs.extend(sns_query_pairs(op.input, &input, ""));
            let a = c.query("sns", &format!("{}/", v.base), &pairs).await;
            tally.judge(who, &format!("SNS {} {pairs:?}", op.name), &a);
        }
    }
    assert!(
        missing.is_empty(),
        "the suite has no value for these required members (add them to sqs_values/sns_values): {missing:?}"
    );
    // The Lambda API.
    let mapping = v
        .mapping
        .clone()
        .unwrap_or_else(|| "00000000-0000-0000-0000-000000000000".into());
    let esm = "/2015-03-31/event-source-mappings";
    let lambda: Vec<(&str, String, Option<Value>)> = vec![
        ("GET", format!("{esm}/"), None),
        (
            "GET",
            format!("{esm}/?EventSourceArn={}", qarn(A, "vmapq")),
            None,
        ),
        ("GET", format!("{esm}/{mapping}"), None),
        (
            "PUT",
            format!("{esm}/{mapping}"),
            Some(json!({"Enabled": true})),
        ),
        ("DELETE", format!("{esm}/{mapping}"), None),
        (
            "POST",
            format!("{esm}/"),
            Some(json!({"EventSourceArn": qarn(A, "vmapq"), "FunctionName": "vfunc"})),
        ),
        (
            "POST",
            format!("{esm}/"),
            Some(
                json!({"EventSourceArn": qarn(A, "vmapq"), "FunctionName": format!("arn:aws:lambda:us-east-1:{A}:function:vfunc")}),
            ),
        ),
        ("GET", "/2015-03-31/functions/".into(), None),
        ("GET", "/2015-03-31/functions/vfunc".into(), None),
        (
            "GET",
            format!("/2015-03-31/functions/arn:aws:lambda:us-east-1:{A}:function:vfunc"),
            None,
        ),
    ];
    for (method, path, body) in lambda {
        let a = c.rest("lambda", method, &path, body.as_ref()).await;
        tally.judge(who, &format!("Lambda {method} {path}"), &a);
    }
    // Every other route, as the seeds' API and the console are called (signed).
    let topic_q: String = form_urlencoded::byte_serialize(v.topic.as_bytes()).collect();
    let routes: Vec<(&str, String, Option<Value>)> = vec![
        ("GET", "/queues".into(), None),
        ("POST", "/queues/vq".into(), None),
        (
            "POST",
            "/queues/vq/messages".into(),
            Some(json!({"body": "attack"})),
        ),
        ("GET", "/queues/vq/messages".into(), None),
        ("DELETE", "/queues/vq/messages/1".into(), None),
        ("GET", "/topics".into(), None),
        ("POST", "/topics/vt".into(), None),
        (
            "POST",
            "/topics/vt/subscribe".into(),
            Some(json!({"url": "http://127.0.0.1:9/"})),
        ),
        (
            "POST",
            "/topics/vt/publish".into(),
            Some(json!({"message": "attack"})),
        ),
        ("GET", "/_loft/queues".into(), None),
        ("GET", "/_loft/queues/vq/messages".into(), None),
        (
            "POST",
            "/_loft/queues/vq/messages".into(),
            Some(json!({"body": "attack"})),
        ),
        ("POST", "/_loft/queues/vq/purge".into(), None),
        ("POST", "/_loft/queues/vdlq/redrive".into(), None),
        ("GET", "/_loft/topics".into(), None),
        ("GET", "/_loft/mappings".into(), None),
        ("GET", "/_loft/sns/messages".into(), None),
        (
            "GET",
            format!("/_loft/sns/messages?topic_arn={topic_q}"),
            None,
        ),
        (
            "DELETE",
            format!("/_loft/sns/messages?topic_arn={topic_q}"),
            None,
        ),
        ("DELETE", "/_loft/sns/messages".into(), None),
        // The resets are tried last of all, by the route table ([`table`]): they remove
        // what the attacker made in its own account, which the sequences still use.
    ];
    for (method, path, body) in routes {
        let a = c.rest("sqs", method, &path, body.as_ref()).await;
        tally.judge(who, &format!("route {method} {path}"), &a);
    }
}

/// A data protection policy auditing every message into the queue `queue_arn`.
fn audit_policy(queue_arn: &str) -> String {
    let destination = json!({"Sqs": {"QueueArn": queue_arn}});
    json!({"Name": "attack", "Version": "2021-06-01", "Statement": [{
        "Sid": "audit", "DataDirection": "Inbound", "Principal": ["*"],
        "DataIdentifier": ["arn:aws:dataprotection::aws:data-identifier/EmailAddress"],
        "Operation": {"Audit": {"SampleRate": "99",
            "FindingsDestination": destination, "NoFindingsDestination": destination}}}]})
    .to_string()
}

/// The sequences of account B the operation tables do not make (see the module doc):
/// doors 7 (audit destinations), 8 (functions) and 10 (`/metrics`).
async fn sequences(v: &Victim, tally: &mut Tally) {
    let b = Client {
        base: &v.base,
        key: ATTACKER,
    };
    // Data protection: B's own topic may not audit into A's queue, by any of the three
    // operations that set a policy.
    let into_a = audit_policy(&qarn(A, "vq"));
    let a = b
        .sns(
            "CreateTopic",
            &[
                ("Name", "bdp"),
                ("Attributes.entry.1.key", "DataProtectionPolicy"),
                ("Attributes.entry.1.value", &into_a),
            ],
        )
        .await;
    tally.refused(ATTACKER, "CreateTopic with A's audit queue", &a);
    let a = b
        .sns(
            "SetTopicAttributes",
            &[
                ("TopicArn", &v.attacker_topic),
                ("AttributeName", "DataProtectionPolicy"),
                ("AttributeValue", &into_a),
            ],
        )
        .await;
    tally.refused(ATTACKER, "SetTopicAttributes with A's audit queue", &a);
    let a = b
        .sns(
            "PutDataProtectionPolicy",
            &[
                ("ResourceArn", &v.attacker_topic),
                ("DataProtectionPolicy", &into_a),
            ],
        )
        .await;
    tally.refused(ATTACKER, "PutDataProtectionPolicy with A's audit queue", &a);
    // The control: B's own queue is accepted, and the publish below audits into it.
    b.sns_ok(
        "PutDataProtectionPolicy",
        &[
            ("ResourceArn", &v.attacker_topic),
            ("DataProtectionPolicy", &audit_policy(&v.attacker_queue_arn)),
        ],
    )
    .await;

    // Functions: A's function is not B's to subscribe, map or list.
    let function = format!("arn:aws:lambda:us-east-1:{A}:function:vfunc");
    for endpoint in [function.clone(), format!("{function}:$LATEST")] {
        let a = b
            .sns(
                "Subscribe",
                &[
                    ("TopicArn", &v.attacker_topic),
                    ("Protocol", "lambda"),
                    ("Endpoint", &endpoint),
                ],
            )
            .await;
        tally.refused(ATTACKER, &format!("Subscribe B's topic to {endpoint}"), &a);
    }
    for name in ["vfunc", function.as_str()] {
        let a = b
            .rest(
                "lambda",
                "POST",
                "/2015-03-31/event-source-mappings/",
                Some(&json!({"EventSourceArn": v.attacker_queue_arn, "FunctionName": name})),
            )
            .await;
        tally.refused(ATTACKER, &format!("map B's queue to {name}"), &a);
    }
    let a = b
        .rest("lambda", "GET", "/2015-03-31/functions/", None)
        .await;
    tally.without(ATTACKER, "ListFunctions", &a, &["vfunc"]);

    // B publishes to its own topic: audited into B's queue only, invoking nothing.
    b.sns_ok(
        "Publish",
        &[
            ("TopicArn", &v.attacker_topic),
            ("Message", "mail b@example.com"),
        ],
    )
    .await;
    let a = b
        .sqs_json(
            "GetQueueAttributes",
            &json!({"QueueUrl": v.attacker_queue_url, "AttributeNames": ["ApproximateNumberOfMessages"]}),
        )
        .await;
    assert_eq!(
        a.json()["Attributes"]["ApproximateNumberOfMessages"],
        "1",
        "the control: B's own audit queue got B's audit record: {}",
        a.body
    );
    let a = b
        .sns(
            "ListSubscriptionsByTopic",
            &[("TopicArn", &v.attacker_topic)],
        )
        .await;
    tally.without(ATTACKER, "B's topic's subscriptions", &a, &["vfunc"]);
    let a = b
        .rest("lambda", "GET", "/2015-03-31/event-source-mappings/", None)
        .await;
    tally.without(ATTACKER, "B's mappings", &a, &["vfunc"]);

    // `/metrics` under `--metrics-auth`: unsigned refused; B sees none of A's series.
    let r = reqwest::get(format!("{}/metrics", v.base))
        .await
        .expect("GET /metrics");
    let a = Answer {
        status: r.status().as_u16(),
        body: r.text().await.unwrap_or_default(),
        kind: String::new(),
    };
    tally.refused(ATTACKER, "unsigned GET /metrics", &a);
    let a = b.rest("sqs", "GET", "/metrics", None).await;
    tally.without(
        ATTACKER,
        "GET /metrics",
        &a,
        // B has queues named as A's (the barrage made them in B's account); A's marked
        // queue it never named, and node-wide series are the server's account's.
        &["vsecretq", "loft_requests_total"],
    );
    let owner = Client {
        base: &v.base,
        key: OWNER,
    };
    let a = owner.rest("sqs", "GET", "/metrics", None).await;
    assert!(
        a.body.contains("queue=\"vsecretq\""),
        "the control: A's scrape shows A's queues: {}",
        trim(&a.body)
    );
}

/// The answer of `a` without what differs between any two requests (the request id of a
/// Query error), for comparing two answers.
fn comparable(a: &Answer) -> (u16, String, String) {
    let mut body = a.body.clone();
    while let (Some(s), Some(e)) = (body.find("<RequestId>"), body.find("</RequestId>")) {
        if e < s {
            break;
        }
        body.replace_range(s..e + "</RequestId>".len(), "");
    }
    (a.status, a.kind.clone(), body)
}

impl Tally {
    /// Judges a pair of answers to B: `real` for one of A's resources, `made_up` for one
    /// of the same shape that does not exist, B's requests differing only by `swap.0`
    /// (the made-up name, id or handle) in place of `swap.1`. Once B's own input is
    /// echoed back (`swap.0` read as `swap.1`), code, status and message must be the
    /// same: any difference tells B that A's resource exists.
    fn same(&mut self, what: &str, real: &Answer, made_up: &Answer, swap: (&str, &str)) {
        self.judge(ATTACKER, &format!("{what} (A's)"), real);
        self.judge(ATTACKER, &format!("{what} (made up)"), made_up);
        let echoed = Answer {
            body: made_up.body.replace(swap.0, swap.1),
            ..made_up.clone()
        };
        if comparable(real) != comparable(&echoed) {
            self.doors.push(format!(
                "{what}: A's answers {} {} {}, a made-up one {} {} {}",
                real.status,
                real.kind,
                trim(&real.body),
                made_up.status,
                made_up.kind,
                trim(&made_up.body)
            ));
        }
    }
}

/// Existence doors: B asks about each kind of A's resource that B may not reach, and about
/// a made-up one of the same shape (same account, same spelling), and must get the same
/// answer for both ([`Tally::same`]). A FunctionName is a name, a partial ARN
/// (`ACCOUNT:function:NAME`) or an ARN (Lambda API Reference, GetFunction); a name alone
/// names a function of the caller's own account, and another account's function is
/// answered to B as a missing one of that ARN.
async fn existence(v: &Victim, tally: &mut Tally) {
    let b = Client {
        base: &v.base,
        key: ATTACKER,
    };
    let owner = Client {
        base: &v.base,
        key: OWNER,
    };
    // Functions: every Lambda operation that takes a FunctionName, by name, partial ARN
    // and ARN.
    let (real, fake) = ("vfunc", "vnosuch");
    let spellings = |name: &str| {
        vec![
            name.to_owned(),
            format!("{A}:function:{name}"),
            format!("arn:aws:lambda:us-east-1:{A}:function:{name}"),
        ]
    };
    let esm = "/2015-03-31/event-source-mappings";
    let a = b
        .rest(
            "lambda",
            "POST",
            &format!("{esm}/"),
            Some(&json!({"EventSourceArn": v.attacker_queue_arn, "FunctionName": "bfunc", "Enabled": false})),
        )
        .await;
    ok(&a, "B maps its own queue to its own function");
    let b_mapping = a.json()["UUID"].as_str().unwrap_or_default().to_owned();
    // Each operation's request naming function `n`: method, path and body.
    let request = |op: &str, n: &str| -> (&str, String, Option<Value>) {
        match op {
            "GetFunction" => ("GET", format!("/2015-03-31/functions/{n}"), None),
            "ListEventSourceMappings" => {
                let n: String = form_urlencoded::byte_serialize(n.as_bytes()).collect();
                ("GET", format!("{esm}/?FunctionName={n}"), None)
            }
            "CreateEventSourceMapping" => (
                "POST",
                format!("{esm}/"),
                Some(json!({"EventSourceArn": v.attacker_queue_arn, "FunctionName": n})),
            ),
            _ => (
                "PUT",
                format!("{esm}/{b_mapping}"),
                Some(json!({"FunctionName": n})),
            ),
        }
    };
    for (r, f) in spellings(real).into_iter().zip(spellings(fake)) {
        for op in [
            "GetFunction",
            "ListEventSourceMappings",
            "CreateEventSourceMapping",
            "UpdateEventSourceMapping",
        ] {
            let (method, path, body) = request(op, &r);
            let a = b.rest("lambda", method, &path, body.as_ref()).await;
            let (method, path, body) = request(op, &f);
            let m = b.rest("lambda", method, &path, body.as_ref()).await;
            tally.same(&format!("Lambda {op} {r}"), &a, &m, (fake, real));
        }
    }
    // SNS Subscribe of B's topic to A's function (its ARN, and qualified).
    for suffix in ["", ":$LATEST"] {
        let endpoint = |n: &str| format!("arn:aws:lambda:us-east-1:{A}:function:{n}{suffix}");
        let mut answers = Vec::new();
        for n in [real, fake] {
            let params = [
                ("TopicArn", v.attacker_topic.as_str()),
                ("Protocol", "lambda"),
                ("Endpoint", &endpoint(n)),
            ];
            answers.push(b.sns("Subscribe", &params).await);
        }
        let what = format!("Subscribe B's topic to {}", endpoint(real));
        tally.same(&what, &answers[0], &answers[1], (fake, real));
    }
    // Subscriptions: A's real one and a made-up id on A's topic; the same ids on B's own
    // topic (the control: B's topic, so both are B's to ask about, and neither exists).
    let id = v.subscription.rsplit(':').next().unwrap_or_default();
    let made_up = "6f1c3a52-8d4e-4b7a-9c2d-0e5f7a1b3c4d";
    for topic in [v.topic.as_str(), v.attacker_topic.as_str()] {
        let real_arn = format!("{topic}:{id}");
        for (op, extra) in [
            ("GetSubscriptionAttributes", &[][..]),
            (
                "SetSubscriptionAttributes",
                &[
                    ("AttributeName", "FilterPolicy"),
                    ("AttributeValue", r#"{"attack": ["1"]}"#),
                ][..],
            ),
            ("Unsubscribe", &[][..]),
        ] {
            let mut answers = Vec::new();
            for arn in [real_arn.clone(), format!("{topic}:{made_up}")] {
                let mut params = vec![("SubscriptionArn", arn.as_str())];
                params.extend_from_slice(extra);
                answers.push(b.sns(op, &params).await);
            }
            let what = format!("{op} {real_arn}");
            tally.same(&what, &answers[0], &answers[1], (made_up, id));
        }
    }
    // Message move tasks: A's running task's handle, and a handle made up the way Loft
    // makes them, naming A's queue.
    let a = owner
        .sqs_json(
            "ListMessageMoveTasks",
            &json!({"SourceArn": qarn(A, "vdlq"), "MaxResults": 1}),
        )
        .await;
    assert_eq!(
        a.json()["Results"][0]["Status"],
        "RUNNING",
        "the control: A's move task still runs, so its handle names a task: {}",
        a.body
    );
    use base64::Engine as _;
    let forged = base64::engine::general_purpose::STANDARD
        .encode(json!({"taskId": made_up, "sourceArn": qarn(A, "vdlq")}).to_string());
    let a = b
        .sqs_json(
            "CancelMessageMoveTask",
            &json!({"TaskHandle": v.task_handle}),
        )
        .await;
    let m = b
        .sqs_json("CancelMessageMoveTask", &json!({"TaskHandle": forged}))
        .await;
    tally.same(
        "CancelMessageMoveTask with A's handle",
        &a,
        &m,
        (&forged, &v.task_handle),
    );
}

/// Every row of the route table, its placeholders filled with A's names (`{name}` is A's
/// queue or topic, `{uuid}` A's mapping), tried by `who` with an empty body. The
/// listings must not show A's marked resources nor A's mapping.
async fn table(v: &Victim, who: Key, tally: &mut Tally) {
    use loft_server::permissions::{On, RouteAccess, ROUTES};
    let c = Client {
        base: &v.base,
        key: who,
    };
    let mapping = v.mapping.clone().unwrap_or_default();
    let mut names = vec!["vsecretq", "vsecrettopic"];
    if !mapping.is_empty() {
        names.push(&mapping);
    }
    for row in ROUTES {
        let name = match row.access {
            RouteAccess::Action(_, On::Topic) => "vt",
            _ => "vq",
        };
        let path = row
            .path
            .replace("{name}", name)
            .replace("{queue}", "vq")
            .replace("{account}", A)
            .replace("{region}", "us-east-1")
            .replace("{id}", "1")
            .replace("{uuid}", if mapping.is_empty() { "none" } else { &mapping })
            .replace("{file}", "SimpleNotificationService.pem");
        let service = if path.starts_with("/2015-03-31/") {
            "lambda"
        } else {
            "sqs"
        };
        let a = c.rest(service, row.method, &path, None).await;
        let what = format!("table {} {path}", row.method);
        // A route that names A's mapping may name it back (in its refusal).
        let shown: Vec<&str> = names
            .iter()
            .copied()
            .filter(|n| !path.contains(*n))
            .collect();
        match row.access {
            RouteAccess::Public | RouteAccess::SignedIn => tally.public(who, &what, &a),
            _ => tally.without(who, &what, &a, &shown),
        }
    }
}

async fn hostile(engine: &str, extra: &[&str]) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("hostile.toml");
    // A's function: a recording server, which nothing of B's may reach.
    let function = crate::harness::Sink::start().await;
    std::fs::write(&path, config(&format!("http://{}/", function.addr))).expect("write config");
    let mut args = vec!["--config", path.to_str().unwrap(), "--metrics-auth"];
    args.extend_from_slice(extra);
    let loft = Loft::start(&args, &[]);
    let port: u16 = loft.url.rsplit(':').next().unwrap().parse().unwrap();
    let v = setup(&loft.url, port).await;
    let before = snapshot(&v).await;
    // The snapshot sees what A made (else an unchanged snapshot would prove nothing).
    for (key, needle) in [
        ("ListSubscriptionsByTopic", v.subscription.as_str()),
        ("GetSubscriptionAttributes", "vsecret-filter"),
        ("GetTopicAttributes", "vsecretname"),
        ("ListEndpointsByPlatformApplication", v.endpoint.as_str()),
        ("GetSMSAttributes", "VSECRET1"),
        ("ListQueueTags vq", "vsecret-tag"),
        (
            "GetQueueAttributes vq",
            "ApproximateNumberOfMessagesNotVisible\":\"1",
        ),
        ("recorded SNS messages", "200 1"),
    ] {
        let seen = before.get(key).map(String::as_str).unwrap_or_default();
        assert!(seen.contains(needle), "A's snapshot {key}: {seen}");
    }
    let mut tally = Tally::default();
    if v.mapping.is_none() {
        tally
            .doors
            .push("account A could not create an event source mapping on its own queue".into());
    }
    barrage(&v, ATTACKER, &mut tally).await;
    barrage(&v, DENIED, &mut tally).await;
    sequences(&v, &mut tally).await;
    existence(&v, &mut tally).await;
    table(&v, ATTACKER, &mut tally).await;
    table(&v, DENIED, &mut tally).await;
    // The control of the listings: A's own sees its marked queue and topic.
    let owner = Client {
        base: &v.base,
        key: OWNER,
    };
    for path in ["/_loft/queues", "/queues", "/_loft/topics", "/topics"] {
        let a = owner.rest("sqs", "GET", path, None).await;
        assert!(
            a.body.contains("vsecretq") || a.body.contains("vsecrettopic"),
            "the control: A's {path} shows A's resources: {}",
            trim(&a.body)
        );
    }
    let after = snapshot(&v).await;
    for (k, b) in &before {
        let a = after.get(k).cloned().unwrap_or_default();
        if &a != b {
            tally
                .doors
                .push(format!("A's {k} changed:\n  before: {b}\n  after:  {a}"));
        }
    }
    if function.count() > 0 {
        tally.doors.push(format!(
            "A's function was invoked {} times: {:?}",
            function.count(),
            function.bodies()
        ));
    }
    println!(
        "hostile[{engine}]: {} requests, {} refused, {} answered 2xx, {} doors",
        tally.requests,
        tally.refused,
        tally.answered,
        tally.doors.len()
    );
    let mut report = String::new();
    for d in &tally.doors {
        let _ = writeln!(report, "- {d}");
    }
    assert!(tally.doors.is_empty(), "doors found on {engine}:\n{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_account_gets_nothing_of_a_on_sqlite() {
    hostile("sqlite", &[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_account_gets_nothing_of_a_on_postgres() {
    let Some(url) = std::env::var("LOFT_TEST_DATABASE_URL")
        .ok()
        .filter(|u| !u.is_empty())
    else {
        crate::skips::postgres().skip("hostile::another_account_gets_nothing_of_a_on_postgres");
        return;
    };
    let schema = format!(
        "loft_hostile_{:x}",
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    );
    loft_store::PgStore::create_schema(&url, &schema)
        .await
        .expect("connect to LOFT_TEST_DATABASE_URL");
    let sep = if url.contains('?') { '&' } else { '?' };
    let node_url = format!("{url}{sep}options=-c%20search_path%3D{schema}");
    hostile("postgres", &["--database-url", &node_url]).await;
}
