//! The malformed-input suite: thousands of bad requests for every protocol, generated
//! deterministically (a seeded [`Rng`]) by mutating valid requests, sent to the real binary
//! over raw HTTP/1.1 (so paths, bytes and headers go out exactly as written).
//!
//! Every request must get a 4xx in its protocol's own error shape ([`Protocol::check`]):
//! SQS JSON `{"__type": "com.amazonaws.sqs#...", "message"}`, SQS and SNS Query
//! `<ErrorResponse xmlns=...>` with the service's namespace, the seeds' API
//! `{"error": "..."}`. Batches whose entries are bad one by one may answer 2xx with every
//! bad entry under `Failed`, as AWS does ([`Expect::ErrorOrFailedEntries`]); a Query request
//! without `Action` is no AWS request and gets the seeds' 404. Never a 5xx, never a dropped
//! connection; after each batch of one kind a valid request still works, and at the end
//! messages stored before the barrage come back intact.
//!
//! What is generated, per protocol (see the `sqs_json`, `sqs_query`, `sns_query` and
//! `native` generators): missing required fields, wrong types, out-of-range numbers,
//! unknown queues and topics, bad batch entry ids, too many and no entries, bad message
//! bodies and attributes, unknown actions and targets, truncated and broken bodies (JSON
//! and form), invalid UTF-8, deep JSON nesting, deep and numerous Query parameter names,
//! Query list and map indexes that are not integers from 1 (`.0.`, `.-1.`, 23 digits),
//! repeated parameters (the last counts), bad Content-Types, huge values and bodies over
//! the limits, path tricks (`..`, `%2F`, `%00`, overlong paths), unknown routes and
//! methods.
//!
//! The SQS and SNS operations' members (names, Query names, kinds, which are required) are
//! not restated here: they come from Loft's typed operations
//! (`loft_server::aws::{sqs,sns}::types::OPERATIONS`), so a new member or operation is
//! covered without touching this file.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::harness::Loft;

// ---------------------------------------------------------------------------------------
// A seeded generator.

/// SplitMix64: small, fast and the same on every machine, so a failure names a seed and
/// an index that reproduce it.
pub struct Rng(u64);

impl Rng {
    /// A generator starting from `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// A number in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }

    /// One of `items`.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    /// A copy of one of `items`.
    pub fn choose<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
}

// ---------------------------------------------------------------------------------------
// Requests, expectations and the error shapes.

/// The protocol a request speaks, which decides the error shape it must get.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Protocol {
    /// SQS over AWS JSON 1.0 (`X-Amz-Target`).
    SqsJson,
    /// SQS over the Query protocol.
    SqsQuery,
    /// SNS over the Query protocol.
    SnsQuery,
    /// The seeds' REST/JSON API.
    Native,
}

/// What a bad request may get.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// A 4xx in the protocol's error shape.
    Error,
    /// A 4xx in the protocol's error shape, or a 2xx listing every entry under `Failed`
    /// (a batch whose entries are bad one by one).
    ErrorOrFailedEntries,
    /// The seeds' `404 {"error"}`: a Query request without `Action` is no AWS request.
    NativeNotFound,
}

/// One generated request.
pub struct Bad {
    /// The protocol it speaks.
    pub protocol: Protocol,
    /// The kind of damage, for the report and the per-kind liveness check.
    pub kind: &'static str,
    /// What exactly, for the report.
    pub detail: String,
    /// `GET`, `POST`, ...
    pub method: &'static str,
    /// The request target as sent: path and query, any bytes.
    pub target: Vec<u8>,
    /// Extra headers (raw bytes as values).
    pub headers: Vec<(String, Vec<u8>)>,
    /// The body.
    pub body: Vec<u8>,
    /// What it may get.
    pub expect: Expect,
}

/// A response read off the wire.
#[derive(Debug)]
pub struct RawResponse {
    /// The status code.
    pub status: u16,
    /// Header names (lower case) and values.
    pub headers: Vec<(String, String)>,
    /// The body (de-chunked).
    pub body: Vec<u8>,
}

impl RawResponse {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    fn text(&self) -> String {
        let text = String::from_utf8_lossy(&self.body);
        text.chars().take(300).collect()
    }
}

const SQS_NS: &str = "http://queue.amazonaws.com/doc/2012-11-05/";
const SNS_NS: &str = "http://sns.amazonaws.com/doc/2010-03-31/";

/// Checks a Query error document: well-formed XML, root `ErrorResponse` in `namespace`,
/// a non-empty `Error/Code`, `Error/Type` Sender for a 4xx.
fn check_query_error(r: &RawResponse, namespace: &str) -> Result<(), String> {
    if !r.header("content-type").is_some_and(|c| c.contains("xml")) {
        return Err(format!("content-type {:?}", r.header("content-type")));
    }
    let mut reader = quick_xml::Reader::from_reader(r.body.as_slice());
    let mut buf = Vec::new();
    let mut path: Vec<String> = Vec::new();
    let (mut root, mut ns, mut code, mut kind) = (None, None, String::new(), String::new());
    loop {
        match reader.read_event_into(&mut buf) {
            Ok(quick_xml::events::Event::Start(e)) => {
                let name = String::from_utf8_lossy(e.name().as_ref()).into_owned();
                if root.is_none() {
                    root = Some(name.clone());
                    ns = e
                        .try_get_attribute("xmlns")
                        .ok()
                        .flatten()
                        .map(|a| String::from_utf8_lossy(&a.value).into_owned());
                }
                path.push(name);
            }
            Ok(quick_xml::events::Event::End(_)) => {
                path.pop();
            }
            Ok(quick_xml::events::Event::Text(t)) => {
                let text = t.unescape().map_err(|e| e.to_string())?.into_owned();
                match path.join("/").as_str() {
                    "ErrorResponse/Error/Code" => code = text,
                    "ErrorResponse/Error/Type" => kind = text,
                    _ => {}
                }
            }
            Ok(quick_xml::events::Event::Eof) => break,
            Ok(_) => {}
            Err(e) => return Err(format!("not XML: {e}")),
        }
        buf.clear();
    }
    if root.as_deref() != Some("ErrorResponse") {
        return Err(format!("root {root:?}"));
    }
    if ns.as_deref() != Some(namespace) {
        return Err(format!("namespace {ns:?}, wanted {namespace}"));
    }
    if code.is_empty() {
        return Err("no Error/Code".into());
    }
    if kind != "Sender" {
        return Err(format!("Error/Type {kind:?} for a client error"));
    }
    Ok(())
}

fn json_body(r: &RawResponse) -> Result<Map<String, Value>, String> {
    match serde_json::from_slice::<Value>(&r.body) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(other) => Err(format!("JSON but not an object: {other}")),
        Err(e) => Err(format!("not JSON: {e}")),
    }
}

fn check_native_error(r: &RawResponse) -> Result<(), String> {
    let m = json_body(r)?;
    match m.get("error") {
        Some(Value::String(s)) if !s.is_empty() => Ok(()),
        other => Err(format!("no \"error\" string: {other:?}")),
    }
}

/// Whether a 2xx batch answer lists failed entries and no successful one.
fn only_failed_entries(protocol: Protocol, r: &RawResponse) -> Result<(), String> {
    match protocol {
        Protocol::SqsJson => {
            let m = json_body(r)?;
            let failed = m
                .get("Failed")
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            let ok = m
                .get("Successful")
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            if failed > 0 && ok == 0 {
                Ok(())
            } else {
                Err(format!("{failed} failed, {ok} successful"))
            }
        }
        Protocol::SqsQuery | Protocol::SnsQuery => {
            let text = String::from_utf8_lossy(&r.body);
            let failed = text.matches("<Code>").count();
            // SQS flattens lists (`<SendMessageBatchResultEntry>`); SNS wraps them
            // (`<Successful><member>`).
            let sns_ok = text
                .split_once("<Successful>")
                .and_then(|(_, rest)| rest.split_once("</Successful>"))
                .map_or(0, |(list, _)| list.matches("<member>").count());
            let ok = text.matches("ResultEntry><Id>").count() + sns_ok;
            if failed > 0 && ok == 0 {
                Ok(())
            } else {
                Err(format!("{failed} failed, {ok} successful"))
            }
        }
        Protocol::Native => Err("the seeds' API has no batches".into()),
    }
}

impl Protocol {
    /// Checks a response to a bad request: `Ok` when it is what `expect` allows.
    pub fn check(self, expect: Expect, r: &RawResponse) -> Result<(), String> {
        if expect == Expect::NativeNotFound {
            if r.status != 404 {
                return Err(format!("status {} (wanted the seeds' 404)", r.status));
            }
            return check_native_error(r);
        }
        if (200..300).contains(&r.status) && expect == Expect::ErrorOrFailedEntries {
            return only_failed_entries(self, r);
        }
        if !(400..500).contains(&r.status) {
            return Err(format!("status {}", r.status));
        }
        match self {
            Protocol::SqsJson => {
                if r.header("content-type") != Some("application/x-amz-json-1.0") {
                    return Err(format!("content-type {:?}", r.header("content-type")));
                }
                let m = json_body(r)?;
                match (m.get("__type"), m.get("message")) {
                    (Some(Value::String(t)), Some(Value::String(_)))
                        if t.starts_with("com.amazonaws.sqs#") =>
                    {
                        Ok(())
                    }
                    _ => Err("no __type and message".into()),
                }
            }
            Protocol::SqsQuery => check_query_error(r, SQS_NS),
            Protocol::SnsQuery => check_query_error(r, SNS_NS),
            Protocol::Native => check_native_error(r),
        }
    }
}

// ---------------------------------------------------------------------------------------
// Raw HTTP/1.1.

fn dechunk(mut body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(eol) = body.windows(2).position(|w| w == b"\r\n") else {
            return out;
        };
        let size = std::str::from_utf8(&body[..eol])
            .ok()
            .and_then(|s| usize::from_str_radix(s.split(';').next().unwrap_or("").trim(), 16).ok())
            .unwrap_or(0);
        body = &body[eol + 2..];
        if size == 0 || body.len() < size {
            return out;
        }
        out.extend_from_slice(&body[..size]);
        body = &body[(size + 2).min(body.len())..];
    }
}

/// Sends one request on a fresh connection (`Connection: close`) and reads the response.
/// The body is written while the response is read, so a server that answers early (413)
/// is still heard. Errors: no complete response (the connection dropped, or 30 s passed).
pub async fn send_raw(
    addr: &str,
    method: &str,
    target: &[u8],
    headers: &[(String, Vec<u8>)],
    body: &[u8],
) -> Result<RawResponse, String> {
    let mut head = Vec::with_capacity(256 + target.len());
    head.extend_from_slice(method.as_bytes());
    head.push(b' ');
    head.extend_from_slice(target);
    head.extend_from_slice(b" HTTP/1.1\r\nHost: ");
    head.extend_from_slice(addr.as_bytes());
    head.extend_from_slice(b"\r\nConnection: close\r\n");
    head.extend_from_slice(format!("Content-Length: {}\r\n", body.len()).as_bytes());
    for (name, value) in headers {
        head.extend_from_slice(name.as_bytes());
        head.extend_from_slice(b": ");
        head.extend_from_slice(value);
        head.extend_from_slice(b"\r\n");
    }
    head.extend_from_slice(b"\r\n");
    let stream = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let (mut reader, mut writer) = stream.into_split();
    let body = body.to_vec();
    let write = tokio::spawn(async move {
        let _ = writer.write_all(&head).await;
        let _ = writer.write_all(&body).await;
        let _ = writer.flush().await;
        writer
    });
    let mut raw = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(30), reader.read_to_end(&mut raw)).await;
    let _ = write.await;
    if read.is_err() {
        return Err("no answer within 30 s".into());
    }
    let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") else {
        return Err(format!(
            "connection closed without a response ({} bytes)",
            raw.len()
        ));
    };
    let head = String::from_utf8_lossy(&raw[..end]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse::<u16>().ok())
        .ok_or_else(|| format!("bad status line in {head:?}"))?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let mut body = raw[end + 4..].to_vec();
    if headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"))
    {
        body = dechunk(&body);
    } else if let Some(len) = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse::<usize>().ok())
    {
        if body.len() < len {
            return Err(format!("body cut short: {} of {len} bytes", body.len()));
        }
        body.truncate(len);
    }
    Ok(RawResponse {
        status,
        headers,
        body,
    })
}

// ---------------------------------------------------------------------------------------
// Shared pieces of the generators.

const ACCOUNT: &str = "000000000000";
/// The queue the SQS mutations aim at.
const QUEUE: &str = "malq";
/// The queue whose messages must survive untouched.
const KEEP: &str = "keepq";
/// The topic the SNS mutations aim at.
const TOPIC: &str = "malt";
const MIB: usize = 1024 * 1024;

fn form_encode(s: &[u8]) -> String {
    form_urlencoded::byte_serialize(s).collect()
}

/// A form body or query string from pairs, each name and value form-encoded.
fn form(pairs: &[(String, String)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, (k, v)) in pairs.iter().enumerate() {
        if i > 0 {
            out.push(b'&');
        }
        out.extend_from_slice(form_encode(k.as_bytes()).as_bytes());
        out.push(b'=');
        out.extend_from_slice(form_encode(v.as_bytes()).as_bytes());
    }
    out
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// Batch entry ids SQS and SNS refuse.
const BAD_IDS: &[&str] = &[
    "",
    "a b",
    "a.b",
    "ü",
    "<id>",
    "a/b",
    "tab\there",
    "%41",
    "0123456789012345678901234567890123456789012345678901234567890123456789012345678901",
];

/// Content-Types no AWS client sends (Loft reads a request by its shape, not by this
/// header, so these must not change the error it gets).
const BAD_CONTENT_TYPES: &[&[u8]] = &[
    b"text/plain",
    b"application/json",
    b"multipart/form-data; boundary=xyz",
    b"application/x-www-form-urlencoded; charset=latin1",
    b"application/x-amz-json-1.1",
    b"",
    b"\xff\xfe garbage",
    b"*/*",
];

/// Bytes that make any form value or JSON text invalid UTF-8.
const BAD_UTF8: &[&[u8]] = &[
    b"\xff",
    b"\xc3\x28",
    b"\xc0\xaf",
    b"\xed\xa0\x80",
    b"\xf8\x88\x80\x80\x80",
    b"\xe2\x82",
];

/// JSON nested `depth` deep: arrays or objects.
fn deep_json(depth: usize, arrays: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(depth * 6 + 16);
    for _ in 0..depth {
        if arrays {
            out.push(b'[');
        } else {
            out.extend_from_slice(b"{\"a\":");
        }
    }
    out.push(b'1');
    for _ in 0..depth {
        out.push(if arrays { b']' } else { b'}' });
    }
    out
}

// ---------------------------------------------------------------------------------------
// SQS: the operations' input shapes come from Loft's own typed operations
// (`loft_server::aws::sqs::types::OPERATIONS`, named and shaped as the botocore model), so
// the generators cover every member of every operation; what is test data here is only
// which values each operation's Service refuses.

use loft_server::aws::shape::{Kind, Member};

/// A map of message attribute values (`MessageAttributes`, `MessageSystemAttributes`).
fn is_attrs(kind: &Kind) -> bool {
    matches!(
        kind,
        Kind::Map {
            of: Kind::Structure(_),
            ..
        }
    )
}

/// The members of a list's structures (batch entries).
fn entry_members(kind: &Kind) -> Option<&'static [Member]> {
    match kind {
        Kind::List(Kind::Structure(members)) => Some(members),
        _ => None,
    }
}

struct Op {
    name: &'static str,
    fields: &'static [Member],
    /// Out-of-range values: (field, value), each refused by the service.
    out_of_range: &'static [(&'static str, &'static str)],
}

/// Values the Service refuses, by operation.
fn out_of_range(op: &str) -> &'static [(&'static str, &'static str)] {
    match op {
        "CreateQueue" => &[
            ("QueueName", r#""""#),
            ("QueueName", r#""a b""#),
            ("QueueName", r#""bad.name""#),
            ("QueueName", r#""ü""#),
            (
                "QueueName",
                r#""x123456789012345678901234567890123456789012345678901234567890123456789012345678901""#,
            ),
            ("Attributes", r#"{"VisibilityTimeout": "43201"}"#),
            ("Attributes", r#"{"DelaySeconds": "-1"}"#),
            ("Attributes", r#"{"MaximumMessageSize": "1023"}"#),
            ("Attributes", r#"{"MessageRetentionPeriod": "59"}"#),
            ("Attributes", r#"{"ReceiveMessageWaitTimeSeconds": "21"}"#),
            ("Attributes", r#"{"Bogus": "1"}"#),
            ("Attributes", r#"{"FifoQueue": "true"}"#),
            ("Attributes", r#"{"RedrivePolicy": "not json"}"#),
            ("Attributes", r#"{"VisibilityTimeout": "ten"}"#),
        ],
        "GetQueueUrl" => &[("QueueName", r#""no-such-queue""#), ("QueueName", r#""""#)],
        "ListQueues" => &[
            ("MaxResults", "0"),
            ("MaxResults", "1001"),
            ("MaxResults", "-1"),
            ("NextToken", r#""not-a-token""#),
        ],
        "GetQueueAttributes" => &[("AttributeNames", r#"["Bogus"]"#)],
        "SetQueueAttributes" => &[
            ("Attributes", r#"{"VisibilityTimeout": "43201"}"#),
            ("Attributes", r#"{"DelaySeconds": "901"}"#),
            ("Attributes", r#"{"MaximumMessageSize": "1048577"}"#),
            ("Attributes", r#"{"Bogus": "1"}"#),
            ("Attributes", r#"{"FifoQueue": "true"}"#),
            ("Attributes", r#"{"Policy": "{"}"#),
            (
                "Attributes",
                r#"{"RedrivePolicy": "{\"deadLetterTargetArn\":\"arn:aws:sqs:us-east-1:000000000000:nope\",\"maxReceiveCount\":\"3\"}"}"#,
            ),
        ],
        "SendMessage" => &[
            ("DelaySeconds", "-1"),
            ("DelaySeconds", "901"),
            ("DelaySeconds", "9223372036854775807"),
            ("MessageBody", r#""""#),
            ("MessageBody", r#""nul \u0000 inside""#),
            ("MessageBody", r#""\uFFFE""#),
            ("MessageBody", r#""bell \u0007""#),
        ],
        "ReceiveMessage" => &[
            ("MaxNumberOfMessages", "0"),
            ("MaxNumberOfMessages", "11"),
            ("MaxNumberOfMessages", "-3"),
            ("VisibilityTimeout", "-1"),
            ("VisibilityTimeout", "43201"),
            ("WaitTimeSeconds", "-1"),
            ("WaitTimeSeconds", "21"),
            ("WaitTimeSeconds", "-9223372036854775808"),
        ],
        "DeleteMessage" => &[("ReceiptHandle", r#""""#), ("ReceiptHandle", r#""%%%""#)],
        "ChangeMessageVisibility" => &[("VisibilityTimeout", "-1"), ("VisibilityTimeout", "43201")],
        "TagQueue" => &[("Tags", r#"{}"#)],
        "UntagQueue" => &[("TagKeys", r#"[]"#)],
        "ListDeadLetterSourceQueues" => &[("MaxResults", "0"), ("MaxResults", "1001")],
        "AddPermission" => &[
            ("Label", r#""bad label!""#),
            ("Actions", r#"["Bogus"]"#),
            ("AWSAccountIds", r#"[]"#),
            ("Actions", r#"[]"#),
        ],
        "RemovePermission" => &[("Label", r#""no-such-label""#)],
        "StartMessageMoveTask" => &[
            ("SourceArn", r#""not-an-arn""#),
            ("SourceArn", r#""arn:aws:sqs:us-east-1:000000000000:nope""#),
            ("MaxNumberOfMessagesPerSecond", "0"),
            ("MaxNumberOfMessagesPerSecond", "501"),
        ],
        "ListMessageMoveTasks" => &[
            ("SourceArn", r#""arn:aws:sns:us-east-1:000000000000:t""#),
            ("MaxResults", "0"),
            ("MaxResults", "11"),
        ],
        "CancelMessageMoveTask" => &[("TaskHandle", r#""no-such-task""#)],
        _ => &[],
    }
}

/// Every SQS operation, its members from the typed operations.
fn sqs_ops() -> Vec<Op> {
    loft_server::aws::sqs::types::OPERATIONS
        .iter()
        .map(|o| Op {
            name: o.name,
            fields: o.input,
            out_of_range: out_of_range(o.name),
        })
        .collect()
}

fn queue_url(addr: &str, name: &str) -> String {
    format!("http://{addr}/{ACCOUNT}/{name}")
}

fn queue_arn(name: &str) -> String {
    format!("arn:aws:sqs:us-east-1:{ACCOUNT}:{name}")
}

/// A valid input of `op` against [`QUEUE`] (the mutations make it invalid).
fn sqs_template(op: &str, addr: &str) -> Value {
    let url = queue_url(addr, QUEUE);
    let attrs = json!({
        "colour": {"DataType": "String", "StringValue": "blue"},
        "bin": {"DataType": "Binary", "BinaryValue": "AQID"},
    });
    let handle = "AQEBaZ+j5qUoOAoxlmrCQPkBm9njMWXqemmIG6shMHCO6fV20JrQYg==";
    match op {
        "CreateQueue" => {
            json!({"QueueName": QUEUE, "Attributes": {"VisibilityTimeout": "30"}, "tags": {"team": "core"}})
        }
        "GetQueueUrl" => json!({"QueueName": QUEUE}),
        "ListQueues" => json!({"QueueNamePrefix": "mal", "MaxResults": 5}),
        "GetQueueAttributes" => json!({"QueueUrl": url, "AttributeNames": ["All"]}),
        "SetQueueAttributes" => json!({"QueueUrl": url, "Attributes": {"VisibilityTimeout": "30"}}),
        "SendMessage" => {
            json!({"QueueUrl": url, "MessageBody": "hello", "DelaySeconds": 0, "MessageAttributes": attrs})
        }
        "SendMessageBatch" => json!({"QueueUrl": url, "Entries": [
            {"Id": "a", "MessageBody": "one", "DelaySeconds": 0},
            {"Id": "b", "MessageBody": "two", "MessageAttributes": attrs},
        ]}),
        "ReceiveMessage" => {
            json!({"QueueUrl": url, "MaxNumberOfMessages": 1, "VisibilityTimeout": 0,
            "WaitTimeSeconds": 0, "AttributeNames": ["All"], "MessageAttributeNames": ["All"],
            "ReceiveRequestAttemptId": "x"})
        }
        "DeleteMessage" => json!({"QueueUrl": url, "ReceiptHandle": handle}),
        "DeleteMessageBatch" => json!({"QueueUrl": url, "Entries": [
            {"Id": "a", "ReceiptHandle": handle}, {"Id": "b", "ReceiptHandle": handle},
        ]}),
        "ChangeMessageVisibility" => {
            json!({"QueueUrl": url, "ReceiptHandle": handle, "VisibilityTimeout": 10})
        }
        "ChangeMessageVisibilityBatch" => json!({"QueueUrl": url, "Entries": [
            {"Id": "a", "ReceiptHandle": handle, "VisibilityTimeout": 10},
        ]}),
        "TagQueue" => json!({"QueueUrl": url, "Tags": {"team": "core"}}),
        "UntagQueue" => json!({"QueueUrl": url, "TagKeys": ["team"]}),
        "ListDeadLetterSourceQueues" => json!({"QueueUrl": url, "MaxResults": 5}),
        "AddPermission" => json!({"QueueUrl": url, "Label": "l1",
            "AWSAccountIds": ["111122223333"], "Actions": ["SendMessage"]}),
        "RemovePermission" => json!({"QueueUrl": url, "Label": "l1"}),
        "StartMessageMoveTask" => json!({"SourceArn": queue_arn(QUEUE),
            "DestinationArn": queue_arn(KEEP), "MaxNumberOfMessagesPerSecond": 10}),
        "ListMessageMoveTasks" => json!({"SourceArn": queue_arn(QUEUE), "MaxResults": 5}),
        "CancelMessageMoveTask" => json!({"TaskHandle": "eyJ0YXNrSWQiOiJ4In0="}),
        _ => json!({"QueueUrl": url}),
    }
}

/// A JSON value of the wrong type for `kind`.
fn wrong_json(rng: &mut Rng, kind: &Kind) -> Value {
    match kind {
        Kind::String | Kind::Blob | Kind::Boolean | Kind::Nothing => rng
            .pick(&[
                json!(5),
                json!(true),
                json!(["x"]),
                json!({"a": "b"}),
                json!(1.5),
            ])
            .clone(),
        Kind::Integer => rng
            .pick(&[
                json!("abc"),
                json!("1.5"),
                json!(""),
                json!(true),
                json!([1]),
                json!({"n": 1}),
                json!(1.5),
                json!(1e300),
                json!(-0.5),
                serde_json::from_str::<Value>("99999999999999999999").unwrap(),
                serde_json::from_str::<Value>("-99999999999999999999").unwrap(),
            ])
            .clone(),
        Kind::List(Kind::Structure(_)) => rng
            .pick(&[
                json!("x"),
                json!({"Id": "a"}),
                json!([1]),
                json!(["a"]),
                json!([[]]),
                json!(5),
            ])
            .clone(),
        Kind::List(_) => rng
            .pick(&[
                json!("All"),
                json!(5),
                json!({"a": "b"}),
                json!([1, 2]),
                json!([["x"]]),
                json!([null, {}]),
            ])
            .clone(),
        kind if is_attrs(kind) => rng
            .pick(&[
                json!("x"),
                json!(["a"]),
                json!({"a": "x"}),
                json!({"a": {"StringValue": "x"}}),
                json!({"a": {"DataType": 5, "StringValue": "x"}}),
                json!({"a": {"DataType": "String", "StringValue": 5}}),
                json!({"a": {"DataType": "Binary", "BinaryValue": "***"}}),
                json!({"a": {"DataType": "Bogus", "StringValue": "x"}}),
                json!({"a": {"DataType": "Number", "StringValue": "not a number"}}),
                json!({"a": {"DataType": "String"}}),
                json!({"": {"DataType": "String", "StringValue": "x"}}),
                json!({"AWS.reserved": {"DataType": "String", "StringValue": "x"}}),
                json!({".dot": {"DataType": "String", "StringValue": "x"}}),
                json!({"a": {"DataType": "String", "StringListValues": ["x"]}}),
            ])
            .clone(),
        Kind::Map { .. } | Kind::Structure(_) => rng
            .pick(&[
                json!("x"),
                json!(["a"]),
                json!(7),
                json!({"a": 1}),
                json!({"a": {"b": "c"}}),
                json!({"a": ["b"]}),
            ])
            .clone(),
    }
}

/// The Query parameters of `value`, a value of `kind` named `name` (with its prefix), as
/// the SDKs flatten it: lists `Name.N`, maps `Name.N.Key` / `.Value`, structures
/// `Name.Member`. A value not of its kind (the wrong types of the JSON mutations) is sent
/// as its text.
fn query_value(kind: &Kind, name: &str, value: &Value, out: &mut Vec<(String, String)>) {
    fn text(v: &Value) -> String {
        match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        }
    }
    match (kind, value) {
        (Kind::List(item), Value::Array(items)) => {
            for (i, v) in items.iter().enumerate() {
                query_value(item, &format!("{name}.{}", i + 1), v, out);
            }
        }
        (Kind::Map { key, value, of }, Value::Object(map)) => {
            for (i, (k, v)) in map.iter().enumerate() {
                out.push((format!("{name}.{}.{key}", i + 1), k.clone()));
                query_value(of, &format!("{name}.{}.{value}", i + 1), v, out);
            }
        }
        (Kind::Structure(members), Value::Object(obj)) => {
            sqs_query_pairs(members, obj, &format!("{name}."), out)
        }
        _ => out.push((name.to_owned(), text(value))),
    }
}

/// Query parameters of an SQS input, named by the members' Query names.
fn sqs_query_pairs(
    fields: &[Member],
    input: &Map<String, Value>,
    prefix: &str,
    out: &mut Vec<(String, String)>,
) {
    for (name, value) in input {
        let (query, kind) = fields
            .iter()
            .find(|f| f.name == name)
            .map_or((name.as_str(), &Kind::String), |f| (f.query, f.kind));
        query_value(kind, &format!("{prefix}{query}"), value, out);
    }
}

/// A mutated SQS input: what was done, the input, and what it may get.
struct Mutated {
    what: String,
    input: Map<String, Value>,
    expect: Expect,
}

/// One semantic mutation of `op`'s template, valid for both SQS protocols (`json`: whether
/// wrong JSON types may be used).
fn mutate_sqs(rng: &mut Rng, op: &Op, addr: &str, json: bool) -> Mutated {
    let Value::Object(mut input) = sqs_template(op.name, addr) else {
        unreachable!("templates are objects")
    };
    let entries = op
        .fields
        .iter()
        .find_map(|f| entry_members(f.kind).map(|ef| (f.name, ef)));
    let has_url = op.fields.iter().any(|f| f.name == "QueueUrl");
    loop {
        match rng.below(8) {
            // A required field left out.
            0 => {
                let required: Vec<&Member> = op.fields.iter().filter(|f| f.required).collect();
                if required.is_empty() {
                    continue;
                }
                let field = rng.pick(&required);
                input.remove(field.name);
                return Mutated {
                    what: format!("{} without {}", op.name, field.name),
                    input,
                    expect: Expect::Error,
                };
            }
            // A field of the wrong type (JSON), or an integer that is not one (Query).
            1 => {
                let field = rng.pick(op.fields);
                let value = if json {
                    wrong_json(rng, field.kind)
                } else if matches!(field.kind, Kind::Integer) {
                    json!(rng.pick(&[
                        "abc",
                        "1.5",
                        "",
                        "0x10",
                        "1e3",
                        "99999999999999999999",
                        "١٢",
                        "--1",
                        "5 5"
                    ]))
                } else if is_attrs(field.kind) {
                    rng.pick(&[
                        json!({"a": {"StringValue": "x"}}),
                        json!({"a": {"DataType": "Binary", "BinaryValue": "***"}}),
                        json!({"a": {"DataType": "Bogus", "StringValue": "x"}}),
                        json!({"a": {"DataType": "Number", "StringValue": "nan"}}),
                        json!({"AWS.x": {"DataType": "String", "StringValue": "x"}}),
                    ])
                    .clone()
                } else {
                    continue;
                };
                let shown = value.to_string();
                input.insert(field.name.into(), value);
                return Mutated {
                    what: format!(
                        "{} with {} = {}",
                        op.name,
                        field.name,
                        shown.chars().take(60).collect::<String>()
                    ),
                    input,
                    expect: Expect::Error,
                };
            }
            // A value out of range.
            2 => {
                if op.out_of_range.is_empty() {
                    continue;
                }
                let (field, value) = rng.pick(op.out_of_range);
                let value: Value = serde_json::from_str(value).expect("a JSON value");
                let value = match (json, value) {
                    // Query carries numbers as text.
                    (false, Value::Number(n)) => Value::String(n.to_string()),
                    (_, v) => v,
                };
                let shown = value.to_string();
                input.insert((*field).into(), value);
                return Mutated {
                    what: format!("{} with {field} = {shown}", op.name),
                    input,
                    expect: Expect::Error,
                };
            }
            // A queue that does not exist.
            3 => {
                if !has_url {
                    continue;
                }
                let name = rng.pick(&["nope", "..", "a%2Fb", "", "x/y/z", "http:", "%00"]);
                let url = if rng.below(2) == 0 {
                    format!("http://{addr}/{ACCOUNT}/{name}")
                } else {
                    (*name).to_owned()
                };
                input.insert("QueueUrl".into(), json!(url));
                return Mutated {
                    what: format!("{} on queue URL {url:?}", op.name),
                    input,
                    expect: Expect::Error,
                };
            }
            // Batch entries: bad ids, repeated ids, too many, none.
            4 => {
                let Some((name, _)) = entries else {
                    continue;
                };
                let Some(Value::Array(list)) = input.get_mut(name) else {
                    unreachable!("batch templates have entries")
                };
                let what = match rng.below(4) {
                    0 => {
                        let id = rng.pick(BAD_IDS);
                        let i = rng.below(list.len());
                        list[i]["Id"] = json!(id);
                        format!("entry id {id:?}")
                    }
                    1 => {
                        let first = list[0]["Id"].clone();
                        if list.len() == 1 {
                            list.push(list[0].clone());
                        }
                        list[1]["Id"] = first.clone();
                        format!("repeated entry id {first}")
                    }
                    2 => {
                        let n = rng.range(11, 40);
                        let one = list[0].clone();
                        list.clear();
                        for i in 0..n {
                            let mut e = one.clone();
                            e["Id"] = json!(format!("e{i}"));
                            list.push(e);
                        }
                        format!("{n} entries")
                    }
                    _ => {
                        list.clear();
                        "no entries".to_owned()
                    }
                };
                return Mutated {
                    what: format!("{}: {what}", op.name),
                    input,
                    expect: Expect::Error,
                };
            }
            // Every entry bad on its own: the batch may answer 2xx with all of them failed.
            5 => {
                let Some((name, entry_fields)) = entries else {
                    continue;
                };
                let Some(Value::Array(list)) = input.get_mut(name) else {
                    unreachable!("batch templates have entries")
                };
                let required: Vec<&Member> = entry_fields
                    .iter()
                    .filter(|f| f.required && f.name != "Id")
                    .collect();
                let field = rng.pick(&required);
                let damage = rng.below(3);
                for e in list.iter_mut() {
                    let e = e.as_object_mut().expect("entries are objects");
                    match (damage, field.kind) {
                        (0, _) => {
                            e.remove(field.name);
                        }
                        (1, Kind::Integer) => {
                            e.insert(
                                field.name.into(),
                                json!(if json { json!(1.5) } else { json!("x") }),
                            );
                        }
                        (_, Kind::Integer) => {
                            e.insert(
                                field.name.into(),
                                json!(if json { json!(-7) } else { json!("-7") }),
                            );
                        }
                        (1, _) => {
                            e.insert(field.name.into(), json!(""));
                        }
                        (_, _) => {
                            let bad = if field.name == "MessageBody" {
                                "\u{0}\u{1}"
                            } else {
                                "not-a-receipt-handle"
                            };
                            e.insert(field.name.into(), json!(bad));
                        }
                    }
                }
                return Mutated {
                    what: format!(
                        "{}: every entry's {} damaged ({damage})",
                        op.name, field.name
                    ),
                    input,
                    expect: Expect::ErrorOrFailedEntries,
                };
            }
            // A message body over SQS's 1 MiB, or attributes that push it over.
            6 => {
                if op.name != "SendMessage" {
                    continue;
                }
                if rng.below(2) == 0 {
                    input.insert("MessageBody".into(), json!("x".repeat(MIB + 1)));
                    return Mutated {
                        what: "SendMessage of 1 MiB + 1".into(),
                        input,
                        expect: Expect::Error,
                    };
                }
                input.insert("MessageBody".into(), json!("x".repeat(MIB - 10)));
                input.insert(
                    "MessageAttributes".into(),
                    json!({"big": {"DataType": "String", "StringValue": "y".repeat(100)}}),
                );
                return Mutated {
                    what: "SendMessage whose attributes pass 1 MiB".into(),
                    input,
                    expect: Expect::Error,
                };
            }
            // Too many or too long message attributes.
            _ => {
                if !op.fields.iter().any(|f| is_attrs(f.kind)) {
                    continue;
                }
                let mut attrs = Map::new();
                let what = if rng.below(2) == 0 {
                    for i in 0..11 {
                        attrs.insert(
                            format!("a{i}"),
                            json!({"DataType": "String", "StringValue": "v"}),
                        );
                    }
                    "11 message attributes"
                } else {
                    attrs.insert(
                        "n".repeat(257),
                        json!({"DataType": "String", "StringValue": "v"}),
                    );
                    "a 257-character attribute name"
                };
                input.insert("MessageAttributes".into(), Value::Object(attrs));
                return Mutated {
                    what: format!("{}: {what}", op.name),
                    input,
                    expect: Expect::Error,
                };
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// The generators.

fn sqs_json_request(
    target: &[u8],
    body: Vec<u8>,
    kind: &'static str,
    detail: String,
    expect: Expect,
) -> Bad {
    Bad {
        protocol: Protocol::SqsJson,
        kind,
        detail,
        method: "POST",
        target: b"/".to_vec(),
        headers: vec![
            ("X-Amz-Target".into(), target.to_vec()),
            (
                "Content-Type".into(),
                b"application/x-amz-json-1.0".to_vec(),
            ),
        ],
        body,
        expect,
    }
}

/// SQS over JSON: `n` bad requests.
fn sqs_json(rng: &mut Rng, addr: &str, n: usize) -> Vec<Bad> {
    let mut out = Vec::with_capacity(n);
    // Bodies over the 10 MiB limit: a few, they are big.
    for extra in [1, 4096] {
        let body = format!(
            r#"{{"QueueUrl":"{}","MessageBody":"{}"}}"#,
            queue_url(addr, QUEUE),
            "x".repeat(10 * MIB + extra)
        );
        out.push(sqs_json_request(
            b"AmazonSQS.SendMessage",
            body.into_bytes(),
            "too large",
            "a body over 10 MiB".into(),
            Expect::Error,
        ));
    }
    let ops = sqs_ops();
    while out.len() < n {
        let op = rng.pick(&ops);
        let target = format!("AmazonSQS.{}", op.name);
        let valid = || serde_json::to_vec(&sqs_template(op.name, addr)).unwrap();
        let bad = match rng.below(12) {
            0..=4 => {
                let m = mutate_sqs(rng, op, addr, true);
                sqs_json_request(
                    target.as_bytes(),
                    serde_json::to_vec(&m.input).unwrap(),
                    "semantic",
                    m.what,
                    m.expect,
                )
            }
            5 => {
                let t: Vec<u8> = match rng.below(9) {
                    0 => b"AmazonSQS.Bogus".to_vec(),
                    1 => b"AmazonSQS.".to_vec(),
                    2 => format!("AmazonSQS.{}", op.name.to_lowercase()).into_bytes(),
                    3 => b"AmazonSNS.Publish".to_vec(),
                    4 => b"".to_vec(),
                    5 => [format!("AmazonSQS.{}", op.name).as_bytes(), &[0xff]].concat(),
                    6 => [b"AmazonSQS.".as_slice(), &[0xc3, 0x28]].concat(),
                    7 => format!("AmazonSQS.{}", "A".repeat(rng.range(100, 4000))).into_bytes(),
                    _ => op.name.as_bytes().to_vec(),
                };
                let shown = String::from_utf8_lossy(&t)
                    .chars()
                    .take(40)
                    .collect::<String>();
                sqs_json_request(
                    &t,
                    valid(),
                    "unknown target",
                    format!("target {shown:?}"),
                    Expect::Error,
                )
            }
            6 => {
                let body = valid();
                let cut = rng.range(1, body.len() - 1);
                sqs_json_request(
                    target.as_bytes(),
                    body[..cut].to_vec(),
                    "truncated",
                    format!("{} cut at {cut}", op.name),
                    Expect::Error,
                )
            }
            7 => {
                let mut body = valid();
                let at = rng.range(1, body.len() - 1);
                let (what, insert): (&str, &[u8]) = if rng.below(2) == 0 {
                    ("invalid UTF-8", rng.choose(BAD_UTF8))
                } else {
                    (
                        "a control character",
                        rng.choose(&[b"\x00".as_slice(), b"\x01", b"\x1b", b"\x08"]),
                    )
                };
                body.splice(at..at, insert.iter().copied());
                sqs_json_request(
                    target.as_bytes(),
                    body,
                    "broken encoding",
                    format!("{} with {what} at {at}", op.name),
                    Expect::Error,
                )
            }
            8 => {
                let depth = rng.choose(&[129, 200, 1000, 10_000, 100_000, 1_000_000]);
                let arrays = rng.below(2) == 0;
                let (what, body) = if rng.below(2) == 0 {
                    ("the whole body", deep_json(depth, arrays))
                } else {
                    let mut b = format!(
                        r#"{{"QueueUrl":"{}","MessageBody":"#,
                        queue_url(addr, QUEUE)
                    )
                    .into_bytes();
                    b.extend(deep_json(depth, arrays));
                    b.push(b'}');
                    ("MessageBody", b)
                };
                sqs_json_request(
                    target.as_bytes(),
                    body,
                    "deep nesting",
                    format!("{} {what} {depth} deep", op.name),
                    Expect::Error,
                )
            }
            9 => {
                let (what, body): (&str, Vec<u8>) = match rng.below(8) {
                    0 => ("an array", b"[]".to_vec()),
                    1 => ("a string", b"\"x\"".to_vec()),
                    2 => ("a number", b"12".to_vec()),
                    3 => ("null", b"null".to_vec()),
                    4 => ("trailing garbage", [valid(), b" x".to_vec()].concat()),
                    5 => ("two objects", [valid(), valid()].concat()),
                    6 => (
                        "a byte-order mark",
                        [b"\xef\xbb\xbf".to_vec(), valid()].concat(),
                    ),
                    _ => ("form encoding", b"Action=ListQueues".to_vec()),
                };
                sqs_json_request(
                    target.as_bytes(),
                    body,
                    "not a JSON object",
                    format!("{} body is {what}", op.name),
                    Expect::Error,
                )
            }
            10 => {
                // A key given twice: the last value counts, and here it is of the wrong type.
                let field = rng.pick(op.fields);
                let mut body = valid();
                body.pop();
                let wrong = wrong_json(rng, field.kind);
                body.extend(format!(r#","{}":{}}}"#, field.name, wrong).into_bytes());
                sqs_json_request(
                    target.as_bytes(),
                    body,
                    "repeated key",
                    format!("{} with {} again as {wrong}", op.name, field.name),
                    Expect::Error,
                )
            }
            _ => {
                let m = mutate_sqs(rng, op, addr, true);
                let mut r = sqs_json_request(
                    target.as_bytes(),
                    serde_json::to_vec(&m.input).unwrap(),
                    "bad content type",
                    m.what,
                    m.expect,
                );
                let ct = rng.pick(BAD_CONTENT_TYPES);
                r.detail = format!(
                    "{} (Content-Type {:?})",
                    r.detail,
                    String::from_utf8_lossy(ct)
                );
                r.headers[1].1 = ct.to_vec();
                r
            }
        };
        out.push(bad);
    }
    out
}

fn query_request(
    protocol: Protocol,
    kind: &'static str,
    detail: String,
    body: Vec<u8>,
    expect: Expect,
) -> Bad {
    Bad {
        protocol,
        kind,
        detail,
        method: "POST",
        target: b"/".to_vec(),
        headers: vec![(
            "Content-Type".into(),
            b"application/x-www-form-urlencoded".to_vec(),
        )],
        body,
        expect,
    }
}

/// Query-level damage shared by SQS and SNS: applied to valid `base` parameters whose
/// `required` parameter is needed. Returns the kind, the detail and the body.
fn query_damage(
    rng: &mut Rng,
    base: &[(String, String)],
    required: &str,
) -> (&'static str, String, Vec<u8>) {
    let without_required: Vec<(String, String)> = base
        .iter()
        .filter(|(k, _)| k != required)
        .cloned()
        .collect();
    match rng.below(7) {
        0 => {
            // Invalid UTF-8 in the required parameter's value, escaped or raw.
            let bad = rng.pick(BAD_UTF8);
            let mut body = form(&without_required);
            let value: Vec<u8> = if rng.below(2) == 0 {
                bad.iter()
                    .flat_map(|b| format!("%{b:02X}").into_bytes())
                    .collect()
            } else {
                bad.to_vec()
            };
            body.extend_from_slice(b"&");
            body.extend_from_slice(required.as_bytes());
            body.push(b'=');
            body.extend_from_slice(&value);
            ("invalid UTF-8", format!("{required} = {value:?}"), body)
        }
        1 => {
            // The required parameter's name with a broken escape: it is not there.
            let broken = rng.pick(&["%", "%Z", "%%", "%4", "%G0"]);
            let mut body = form(&without_required);
            let cut = rng.range(1, required.len() - 1);
            body.extend(
                format!("&{}{broken}{}=x", &required[..cut], &required[cut..]).into_bytes(),
            );
            (
                "broken escape",
                format!("{required} spelled with {broken:?}"),
                body,
            )
        }
        2 => {
            // Truncated inside the required parameter's name, which comes last.
            let mut body = form(&without_required);
            body.extend(format!("&{}", &required[..rng.range(1, required.len() - 1)]).into_bytes());
            ("truncated", format!("cut inside {required}"), body)
        }
        3 => {
            // Names nested very deep.
            // At most 500,000 parts: 6 MB of `Attribute.1.`, under the body limit.
            let depth = rng.choose(&[100, 1000, 100_000, 500_000]);
            let mut body = form(&without_required);
            body.extend_from_slice(b"&");
            let name = if rng.below(2) == 0 {
                "a."
            } else {
                "Attribute.1."
            };
            body.extend(name.repeat(depth).into_bytes());
            body.extend_from_slice(b"=x");
            (
                "deep names",
                format!("a name {depth} parts deep, without {required}"),
                body,
            )
        }
        4 => {
            // Very many parameters, the required one missing.
            let n = rng.choose(&[1000, 20_000, 100_000]);
            let mut body = form(&without_required);
            for i in 0..n {
                body.extend(format!("&p{i}.{}=v", i % 7).into_bytes());
            }
            (
                "many parameters",
                format!("{n} parameters, without {required}"),
                body,
            )
        }
        5 => {
            // Structure where a value should be: the required parameter given children.
            let mut body = form(&without_required);
            body.extend(format!("&{required}.1=x&{required}.x.y=z").into_bytes());
            (
                "structure for a value",
                format!("{required}.1 and {required}.x.y"),
                body,
            )
        }
        _ => {
            // Junk around the parameters.
            let mut body = form(&without_required);
            let junk = rng.pick(&["&&&", "===", "&=&=", "=x", "&a=b=c", "&;", "&\r\n"]);
            body.extend_from_slice(junk.as_bytes());
            (
                "junk separators",
                format!("{junk:?}, without {required}"),
                body,
            )
        }
    }
}

/// List and map indexes AWS refuses (docs/security.md, "Hostile input"): indexes are integers
/// from 1, as AWS answers `.0.` with `MalformedInput` "0 is not a valid index".
const BAD_INDEXES: &[&str] = &["0", "-1", "-0", "12345678901234567890123", "x", ""];

/// `ps` with the first index of the first indexed parameter (`Attribute.1.Name`,
/// `Tags.member.1.Key`) replaced by `bad` in every parameter of that list item; `None`
/// when no parameter has an index.
fn with_bad_index(ps: &[(String, String)], bad: &str) -> Option<Vec<(String, String)>> {
    let (prefix, index) = ps.iter().find_map(|(k, _)| {
        let parts: Vec<&str> = k.split('.').collect();
        let i = parts.iter().position(|p| p.parse::<u32>().is_ok())?;
        Some((parts[..i].join("."), parts[i].to_owned()))
    })?;
    let old = format!("{prefix}.{index}");
    Some(
        ps.iter()
            .map(|(k, v)| match k.strip_prefix(&old) {
                Some(rest) if rest.is_empty() || rest.starts_with('.') => {
                    (format!("{prefix}.{bad}{rest}"), v.clone())
                }
                _ => (k.clone(), v.clone()),
            })
            .collect(),
    )
}

/// SQS over Query: `n` bad requests.
fn sqs_query(rng: &mut Rng, addr: &str, n: usize) -> Vec<Bad> {
    let mut out = Vec::with_capacity(n);
    let p = Protocol::SqsQuery;
    let with_action = |op: &str, input: &Map<String, Value>, fields: &[Member]| {
        let mut ps = pairs(&[("Action", op), ("Version", "2012-11-05")]);
        sqs_query_pairs(fields, input, "", &mut ps);
        ps
    };
    for extra in [1, 4096] {
        let body = format!(
            "Action=SendMessage&Version=2012-11-05&QueueUrl={}&MessageBody={}",
            form_encode(queue_url(addr, QUEUE).as_bytes()),
            "x".repeat(10 * MIB + extra)
        );
        out.push(query_request(
            p,
            "too large",
            "a body over 10 MiB".into(),
            body.into_bytes(),
            Expect::Error,
        ));
    }
    let ops = sqs_ops();
    for op in &ops {
        let Value::Object(template) = sqs_template(op.name, addr) else {
            unreachable!("templates are objects")
        };
        for bad in BAD_INDEXES {
            if let Some(ps) = with_bad_index(&with_action(op.name, &template, op.fields), bad) {
                out.push(query_request(
                    p,
                    "bad index",
                    format!("{} with index {bad:?}", op.name),
                    form(&ps),
                    Expect::Error,
                ));
            }
        }
    }
    while out.len() < n {
        let op = rng.pick(&ops);
        let Value::Object(template) = sqs_template(op.name, addr) else {
            unreachable!("templates are objects")
        };
        let base = with_action(op.name, &template, op.fields);
        let bad = match rng.below(10) {
            0..=3 => {
                let m = mutate_sqs(rng, op, addr, false);
                let ps = with_action(op.name, &m.input, op.fields);
                query_request(p, "semantic", m.what, form(&ps), m.expect)
            }
            4 => {
                let action = rng.pick(&[
                    "Bogus",
                    "sendmessage",
                    "",
                    "Send Message",
                    "Publish\u{0}",
                    "ListQueues;DROP",
                ]);
                let mut ps = base.clone();
                ps[0].1 = (*action).to_owned();
                query_request(
                    p,
                    "unknown action",
                    format!("Action {action:?}"),
                    form(&ps),
                    Expect::Error,
                )
            }
            5 => {
                let required: Vec<&Member> = op
                    .fields
                    .iter()
                    .filter(|f| f.required && matches!(f.kind, Kind::String))
                    .collect();
                if required.is_empty() {
                    continue;
                }
                let required = rng.pick(&required);
                let (kind, detail, body) = query_damage(rng, &base, required.name);
                query_request(
                    p,
                    kind,
                    format!("{}: {detail}", op.name),
                    body,
                    Expect::Error,
                )
            }
            6 => {
                // A parameter given twice: the last one counts, and it is bad.
                let Some(field) = op
                    .fields
                    .iter()
                    .find(|f| matches!(f.kind, Kind::Integer) || f.name == "QueueUrl")
                else {
                    continue;
                };
                let mut ps = base.clone();
                let bad = if field.name == "QueueUrl" {
                    queue_url(addr, "nope")
                } else {
                    "x".into()
                };
                if !ps.iter().any(|(k, _)| k == field.name) {
                    ps.push((field.name.into(), "1".into()));
                }
                ps.push((field.name.into(), bad.clone()));
                query_request(
                    p,
                    "repeated parameter",
                    format!("{}: {} again as {bad:?}", op.name, field.name),
                    form(&ps),
                    Expect::Error,
                )
            }
            7 => {
                // The same bad request as a GET, its parameters in the query string.
                let m = mutate_sqs(rng, op, addr, false);
                let ps = with_action(op.name, &m.input, op.fields);
                let mut target = b"/?".to_vec();
                target.extend(form(&ps));
                if target.len() > 60_000 {
                    continue;
                }
                Bad {
                    protocol: p,
                    kind: "GET",
                    detail: format!("GET {}", m.what),
                    method: "GET",
                    target,
                    headers: vec![],
                    body: vec![],
                    expect: m.expect,
                }
            }
            8 => {
                // A queue URL path: an unknown queue, or a path trick.
                let path = rng.pick(&[
                    "/000000000000/nope",
                    "/000000000000/..",
                    "/000000000000/%2e%2e",
                    "/000000000000/a%2Fb",
                    "/000000000000/%00",
                    "/000000000000/%FF",
                    "/..%2F..%2Fetc/passwd",
                ]);
                let mut ps = base.clone();
                ps.retain(|(k, _)| k != "QueueUrl");
                let mut r = query_request(
                    p,
                    "queue path",
                    format!("{} on {path}", op.name),
                    form(&ps),
                    Expect::Error,
                );
                r.target = path.as_bytes().to_vec();
                if !op.fields.iter().any(|f| f.name == "QueueUrl") {
                    // Without a QueueUrl parameter the path names no queue to use; the
                    // operation's own required parameters are still there, so only an
                    // unknown queue or a bad name makes it fail. Damage it too.
                    let m = mutate_sqs(rng, op, addr, false);
                    r.body = form(&with_action(op.name, &m.input, op.fields));
                    r.expect = m.expect;
                    r.detail = format!("{} on {path}", m.what);
                }
                r
            }
            _ => {
                let m = mutate_sqs(rng, op, addr, false);
                let ps = with_action(op.name, &m.input, op.fields);
                let ct = rng.pick(BAD_CONTENT_TYPES);
                let mut r = query_request(
                    p,
                    "bad content type",
                    format!(
                        "{} (Content-Type {:?})",
                        m.what,
                        String::from_utf8_lossy(ct)
                    ),
                    form(&ps),
                    m.expect,
                );
                r.headers[0].1 = ct.to_vec();
                r
            }
        };
        out.push(bad);
    }
    // Without Action a request is no AWS request: the seeds' 404.
    for body in [
        "QueueUrl=x&MessageBody=y",
        "Version=2012-11-05",
        "",
        "action=ListQueues",
        "Action%=ListQueues",
    ] {
        out.push(query_request(
            p,
            "no action",
            format!("body {body:?}"),
            body.as_bytes().to_vec(),
            Expect::NativeNotFound,
        ));
    }
    out
}

/// SNS filter policies SNS refuses.
const BAD_POLICIES: &[&str] = &[
    r#"{"a": "not an array"}"#,
    r#"{"a": [{"prefix": 5}]}"#,
    r#"{"a": [{"bogus": 1}]}"#,
    r#"{"a": [{"numeric": [">", "x"]}]}"#,
    r#"{"a": [{"numeric": [">", 1e10]}]}"#,
    r#"{"a": [{"numeric": ["<", 5, "<", 6]}]}"#,
    r#"{"a": [{"cidr": "300.1.1.1/8"}]}"#,
    r#"{"a": [{"exists": "yes"}]}"#,
    r#"{"a": [1], "b": [1], "c": [1], "d": [1], "e": [1], "f": [1]}"#,
    r#"{"a": [[1]]}"#,
    r#"[]"#,
    r#""x""#,
    r#"{"a": [1]"#,
    r#"{"a": {"b": {"c": [1]}}}"#,
    r#"{"$or": "x"}"#,
    r#"{"a": [{"anything-but": {"bogus": 1}}]}"#,
];

/// The SNS operations [`sns_template`] has a valid request of.
const SNS_OPS: &[&str] = &[
    "CreateTopic",
    "DeleteTopic",
    "GetTopicAttributes",
    "SetTopicAttributes",
    "Subscribe",
    "ConfirmSubscription",
    "Unsubscribe",
    "ListSubscriptionsByTopic",
    "GetSubscriptionAttributes",
    "SetSubscriptionAttributes",
    "Publish",
    "PublishBatch",
    "TagResource",
    "UntagResource",
    "ListTagsForResource",
];

/// The required string parameters of SNS operation `op`, from Loft's typed operations
/// (`loft_server::aws::sns::types::OPERATIONS`, the botocore model's `required`).
fn sns_required(op: &str) -> Vec<&'static str> {
    loft_server::aws::sns::types::OPERATIONS
        .iter()
        .find(|o| o.name == op)
        .map(|o| {
            o.input
                .iter()
                .filter(|m| m.required && matches!(m.kind, Kind::String))
                .map(|m| m.name)
                .collect()
        })
        .unwrap_or_default()
}

fn topic_arn(name: &str) -> String {
    format!("arn:aws:sns:us-east-1:{ACCOUNT}:{name}")
}

/// A valid SNS request of `op` against [`TOPIC`] and the subscription `sub`.
fn sns_template(op: &str, sub: &str) -> Vec<(String, String)> {
    let topic = topic_arn(TOPIC);
    let mut ps = pairs(&[("Action", op), ("Version", "2010-03-31")]);
    let add = |ps: &mut Vec<(String, String)>, list: &[(&str, &str)]| ps.extend(pairs(list));
    match op {
        "CreateTopic" => add(
            &mut ps,
            &[
                ("Name", TOPIC),
                ("Tags.member.1.Key", "k"),
                ("Tags.member.1.Value", "v"),
            ],
        ),
        "SetTopicAttributes" => add(
            &mut ps,
            &[
                ("TopicArn", &topic),
                ("AttributeName", "DisplayName"),
                ("AttributeValue", "d"),
            ],
        ),
        "Subscribe" => add(
            &mut ps,
            &[
                ("TopicArn", &topic),
                ("Protocol", "sqs"),
                ("Endpoint", &queue_arn(QUEUE)),
            ],
        ),
        "ConfirmSubscription" => add(
            &mut ps,
            &[("TopicArn", &topic), ("Token", "0123456789abcdef")],
        ),
        "Unsubscribe" | "GetSubscriptionAttributes" => add(&mut ps, &[("SubscriptionArn", sub)]),
        "SetSubscriptionAttributes" => add(
            &mut ps,
            &[
                ("SubscriptionArn", sub),
                ("AttributeName", "FilterPolicy"),
                ("AttributeValue", r#"{"a": ["b"]}"#),
            ],
        ),
        "Publish" => add(
            &mut ps,
            &[
                ("TopicArn", &topic),
                ("Message", "hello"),
                ("MessageAttributes.entry.1.Name", "colour"),
                ("MessageAttributes.entry.1.Value.DataType", "String"),
                ("MessageAttributes.entry.1.Value.StringValue", "blue"),
            ],
        ),
        "PublishBatch" => add(
            &mut ps,
            &[
                ("TopicArn", &topic),
                ("PublishBatchRequestEntries.member.1.Id", "a"),
                ("PublishBatchRequestEntries.member.1.Message", "one"),
                ("PublishBatchRequestEntries.member.2.Id", "b"),
                ("PublishBatchRequestEntries.member.2.Message", "two"),
            ],
        ),
        "TagResource" => add(
            &mut ps,
            &[
                ("ResourceArn", &topic),
                ("Tags.member.1.Key", "k"),
                ("Tags.member.1.Value", "v"),
            ],
        ),
        "UntagResource" => add(
            &mut ps,
            &[("ResourceArn", &topic), ("TagKeys.member.1", "k")],
        ),
        "ListTagsForResource" => add(&mut ps, &[("ResourceArn", &topic)]),
        _ => add(&mut ps, &[("TopicArn", &topic)]),
    }
    ps
}

fn set(ps: &mut Vec<(String, String)>, name: &str, value: &str) {
    ps.retain(|(k, _)| k != name);
    ps.push((name.to_owned(), value.to_owned()));
}

/// SNS over Query: `n` bad requests. `sub` is a confirmed subscription of [`TOPIC`].
fn sns_query(rng: &mut Rng, sub: &str, n: usize) -> Vec<Bad> {
    let p = Protocol::SnsQuery;
    let mut out = Vec::with_capacity(n);
    // Bodies over the 10 MiB limit. Loft does not read them, so what tells SNS from SQS is
    // what comes before the body: the signing service an SDK's Authorization header names
    // (any is accepted without credentials), or the query string.
    for extra in [1, 4096] {
        let body = format!(
            "Action=Publish&Version=2010-03-31&TopicArn={}&Message={}",
            form_encode(topic_arn(TOPIC).as_bytes()),
            "x".repeat(10 * MIB + extra)
        );
        let mut r = query_request(
            p,
            "too large",
            "a body over 10 MiB".into(),
            body.into_bytes(),
            Expect::Error,
        );
        if extra == 1 {
            r.detail.push_str(", SNS named by the Authorization header");
            r.headers.push((
                "Authorization".into(),
                b"AWS4-HMAC-SHA256 Credential=AKID/20240101/us-east-1/sns/aws4_request, SignedHeaders=host, Signature=00".to_vec(),
            ));
        } else {
            r.detail.push_str(", SNS named by the query string");
            r.target = b"/?Action=Publish&Version=2010-03-31".to_vec();
        }
        out.push(r);
    }
    for op in SNS_OPS {
        for bad in BAD_INDEXES {
            if let Some(ps) = with_bad_index(&sns_template(op, sub), bad) {
                out.push(query_request(
                    p,
                    "bad index",
                    format!("{op} with index {bad:?}"),
                    form(&ps),
                    Expect::Error,
                ));
            }
        }
    }
    while out.len() < n {
        let op = rng.pick(SNS_OPS);
        let required = sns_required(op);
        let required = required.as_slice();
        let base = sns_template(op, sub);
        let (kind, detail, body, expect) = match rng.below(9) {
            0 | 1 => {
                let name = rng.pick(required);
                let mut ps = base.clone();
                let what = if rng.below(2) == 0 {
                    ps.retain(|(k, _)| k != name);
                    "without"
                } else {
                    set(&mut ps, name, "");
                    "with an empty"
                };
                (
                    "missing",
                    format!("{op} {what} {name}"),
                    form(&ps),
                    Expect::Error,
                )
            }
            2 => {
                // Names of things that do not exist, or are not ARNs.
                let name = rng.pick(required);
                let value = rng.pick(&[
                    "arn:aws:sns:us-east-1:000000000000:nope",
                    "not-an-arn",
                    "arn:aws:sns:us-east-1:000000000000",
                    "arn:aws:sqs:us-east-1:000000000000:malq",
                    "arn:aws:sns:us-east-1:000000000000:malt:not-a-uuid",
                    ":::::",
                ]);
                if (*op == "DeleteTopic" || *op == "Unsubscribe")
                    && value.starts_with("arn:aws:sns")
                {
                    // Deleting what is not there succeeds on SNS.
                    continue;
                }
                if *name == "Name"
                    || *name == "Message"
                    || *name == "Protocol"
                    || *name == "AttributeName"
                    || *name == "Token"
                {
                    continue;
                }
                let mut ps = base.clone();
                set(&mut ps, name, value);
                (
                    "unknown resource",
                    format!("{op} with {name} = {value}"),
                    form(&ps),
                    Expect::Error,
                )
            }
            3 => {
                // Values SNS refuses, per operation.
                let mut ps = base.clone();
                let what = match *op {
                    "CreateTopic" => {
                        let long = "x".repeat(257);
                        let v = rng.choose(&["bad name", "a.b", "", long.as_str(), "ü"]);
                        set(&mut ps, "Name", v);
                        format!("Name {v:?}")
                    }
                    "SetTopicAttributes" => {
                        let (k, v) = rng.pick(&[
                            ("Bogus", "1"),
                            ("DeliveryPolicy", "{"),
                            ("Policy", "not json"),
                            ("FifoTopic", "true"),
                        ]);
                        set(&mut ps, "AttributeName", k);
                        set(&mut ps, "AttributeValue", v);
                        format!("{k} = {v:?}")
                    }
                    "Subscribe" => {
                        let (proto, endpoint) = rng.pick(&[
                            ("bogus", "x"),
                            ("sqs", "not-an-arn"),
                            ("sqs", ""),
                            ("http", "not a url"),
                            ("https", "http://wrong-scheme.example/"),
                            ("http", "http://169.254.169.254/latest/meta-data/"),
                            ("http", "http://[fe80::1]/"),
                            ("lambda", "x"),
                        ]);
                        set(&mut ps, "Protocol", proto);
                        set(&mut ps, "Endpoint", endpoint);
                        format!("{proto} endpoint {endpoint:?}")
                    }
                    "SetSubscriptionAttributes" => {
                        if rng.below(3) == 0 {
                            let (k, v) = rng.pick(&[
                                ("Bogus", "1"),
                                ("RawMessageDelivery", "maybe"),
                                ("FilterPolicyScope", "Everything"),
                                ("RedrivePolicy", "{"),
                            ]);
                            set(&mut ps, "AttributeName", k);
                            set(&mut ps, "AttributeValue", v);
                            format!("{k} = {v:?}")
                        } else {
                            let policy = rng.pick(BAD_POLICIES);
                            set(&mut ps, "AttributeValue", policy);
                            format!("FilterPolicy {policy}")
                        }
                    }
                    "Publish" => match rng.below(5) {
                        0 => {
                            set(&mut ps, "Message", &"x".repeat(256 * 1024 + 1));
                            "a message over 256 KiB".into()
                        }
                        1 => {
                            ps.retain(|(k, _)| k != "Message");
                            "no Message".into()
                        }
                        2 => {
                            set(&mut ps, "MessageStructure", "json");
                            set(
                                &mut ps,
                                "Message",
                                rng.choose(&["not json", "{}", r#"{"sqs": "x"}"#, "[]"]),
                            );
                            "MessageStructure json without a default".into()
                        }
                        3 => {
                            set(
                                &mut ps,
                                "MessageAttributes.entry.1.Value.DataType",
                                rng.choose(&["Bogus", "", "Number"]),
                            );
                            "a bad attribute DataType".into()
                        }
                        _ => {
                            let long = "s".repeat(101);
                            set(
                                &mut ps,
                                "Subject",
                                rng.choose(&["line\nbreak", long.as_str(), ""]),
                            );
                            "a bad Subject".into()
                        }
                    },
                    "PublishBatch" => {
                        let prefix = "PublishBatchRequestEntries.member";
                        match rng.below(4) {
                            0 => {
                                let id = rng.pick(BAD_IDS);
                                set(&mut ps, &format!("{prefix}.1.Id"), id);
                                format!("entry id {id:?}")
                            }
                            1 => {
                                set(&mut ps, &format!("{prefix}.2.Id"), "a");
                                "repeated entry id".into()
                            }
                            2 => {
                                for i in 3..=11 {
                                    ps.push((format!("{prefix}.{i}.Id"), format!("e{i}")));
                                    ps.push((format!("{prefix}.{i}.Message"), "m".into()));
                                }
                                "11 entries".into()
                            }
                            _ => {
                                ps.retain(|(k, _)| !k.starts_with(prefix));
                                "no entries".into()
                            }
                        }
                    }
                    "TagResource" => {
                        for i in 2..=52 {
                            ps.push((format!("Tags.member.{i}.Key"), format!("k{i}")));
                            ps.push((format!("Tags.member.{i}.Value"), "v".into()));
                        }
                        "52 tags".into()
                    }
                    _ => continue,
                };
                (
                    "semantic",
                    format!("{op}: {what}"),
                    form(&ps),
                    Expect::Error,
                )
            }
            4 => {
                let action =
                    rng.pick(&["Bogus", "publish", "", "Publish Batch", "CreateTopic\u{7f}"]);
                let mut ps = base.clone();
                ps[0].1 = (*action).to_owned();
                (
                    "unknown action",
                    format!("Action {action:?}"),
                    form(&ps),
                    Expect::Error,
                )
            }
            5 | 6 => {
                let name = rng.pick(required);
                let (kind, detail, body) = query_damage(rng, &base, name);
                (kind, format!("{op}: {detail}"), body, Expect::Error)
            }
            7 => {
                // A parameter given twice, the last one bad.
                let name = rng.pick(required);
                let mut ps = base.clone();
                ps.push(((*name).to_owned(), String::new()));
                (
                    "repeated parameter",
                    format!("{op}: {name} again, empty"),
                    form(&ps),
                    Expect::Error,
                )
            }
            _ => {
                let name = rng.pick(required);
                let mut ps = base.clone();
                set(&mut ps, name, "");
                let ct = rng.pick(BAD_CONTENT_TYPES);
                let mut r = query_request(
                    p,
                    "bad content type",
                    format!(
                        "{op} with an empty {name} (Content-Type {:?})",
                        String::from_utf8_lossy(ct)
                    ),
                    form(&ps),
                    Expect::Error,
                );
                r.headers[0].1 = ct.to_vec();
                out.push(r);
                continue;
            }
        };
        out.push(query_request(p, kind, detail, body, expect));
    }
    out
}

fn native(
    kind: &'static str,
    detail: String,
    method: &'static str,
    target: &[u8],
    body: &[u8],
) -> Bad {
    Bad {
        protocol: Protocol::Native,
        kind,
        detail,
        method,
        target: target.to_vec(),
        headers: vec![("Content-Type".into(), b"application/json".to_vec())],
        body: body.to_vec(),
        expect: Expect::Error,
    }
}

/// Queue and topic names the seeds' API refuses (as path segments, raw): dot segments,
/// `/`, control characters, invalid UTF-8. (It takes any other path segment of 1 to 256
/// bytes: `a b`, `<x>`, `s3:ObjectCreated`.)
const BAD_NAMES: &[&str] = &[
    "..",
    ".",
    "%2e%2e",
    "%2E",
    "%2e",
    ".%2e",
    "a%2Fb",
    "a%2fb",
    "%2F",
    "%00",
    "a%0Ab",
    "%7F",
    "%C2%85",
    "%FF",
    "%C0%AF",
    "%ED%A0%80",
    "%E2%82",
];

/// The seeds' REST/JSON API: `n` bad requests.
fn native_api(rng: &mut Rng, n: usize) -> Vec<Bad> {
    let mut out = Vec::with_capacity(n);
    out.push(native(
        "too large",
        "a send over 1 MiB".into(),
        "POST",
        format!("/queues/{QUEUE}/messages").as_bytes(),
        format!(r#"{{"body":"{}"}}"#, "x".repeat(MIB)).as_bytes(),
    ));
    out.push(native(
        "too large",
        "a create over 1 MiB".into(),
        "POST",
        format!("/queues/{QUEUE}").as_bytes(),
        format!(r#"{{"dead_letter_queue":"{}"}}"#, "x".repeat(MIB)).as_bytes(),
    ));
    out.push(native(
        "too large",
        "a publish over 1 MiB".into(),
        "POST",
        format!("/topics/{TOPIC}/publish").as_bytes(),
        format!(r#"{{"message":"{}"}}"#, "x".repeat(MIB)).as_bytes(),
    ));
    let bad_json: &[&[u8]] = &[
        b"{",
        b"{\"body\": ",
        b"[]",
        b"\"x\"",
        b"12",
        b"true",
        b"{\"a\":1}x",
        b"\xef\xbb\xbf{}",
        b"{'body': 'x'}",
    ];
    while out.len() < n {
        let bad = match rng.below(9) {
            0 => {
                let name = rng.pick(BAD_NAMES);
                let (method, path) = rng.choose(&[
                    ("POST", "/queues/{}"),
                    ("POST", "/queues/{}/messages"),
                    ("GET", "/queues/{}/messages"),
                    ("POST", "/topics/{}"),
                    ("POST", "/topics/{}/publish"),
                    ("POST", "/topics/{}/subscribe"),
                ]);
                // `.fifo` names are refused where a queue would be made.
                let name = if rng.below(8) == 0 && path.starts_with("/queues") && method == "POST" {
                    "q.fifo"
                } else {
                    name
                };
                let target = path.replace("{}", name);
                let body: &[u8] = match path {
                    "/queues/{}/messages" => b"{\"body\":\"x\"}",
                    "/topics/{}/publish" => b"{\"message\":\"x\"}",
                    "/topics/{}/subscribe" => b"{\"endpoint\":\"http://127.0.0.1:9/\"}",
                    _ => b"",
                };
                native(
                    "bad name",
                    format!("{method} {target}"),
                    method,
                    target.as_bytes(),
                    body,
                )
            }
            1 => {
                let len = rng.choose(&[257, 300, 5000, 30_000]);
                let name = "n".repeat(len);
                let (method, path) = rng.choose(&[
                    ("POST", "/queues/{}"),
                    ("POST", "/topics/{}"),
                    ("GET", "/queues/{}/messages"),
                ]);
                native(
                    "overlong name",
                    format!("{method} {path} with {len} characters"),
                    method,
                    path.replace("{}", &name).as_bytes(),
                    b"",
                )
            }
            2 => {
                let body: &[u8] = match rng.below(3) {
                    0 => rng.choose(&[
                        br#"{"visibility_timeout": -1}"#.as_slice(),
                        br#"{"visibility_timeout": 43201}"#,
                        br#"{"visibility_timeout": "30"}"#,
                        br#"{"visibility_timeout": 1.5}"#,
                        br#"{"visibility_timeout": true}"#,
                        br#"{"visibility_timeout": 99999999999999999999}"#,
                    ]),
                    1 => rng.choose(&[
                        br#"{"max_receive_count": "3"}"#.as_slice(),
                        br#"{"max_receive_count": []}"#,
                        br#"{"max_receive_count": 1e400}"#,
                    ]),
                    _ => rng.choose(&[
                        br#"{"dead_letter_queue": 5}"#.as_slice(),
                        br#"{"dead_letter_queue": "x.fifo"}"#,
                        br#"{"dead_letter_queue": "a/b"}"#,
                        br#"{"dead_letter_queue": ".."}"#,
                        br#"{"dead_letter_queue": {}}"#,
                    ]),
                };
                native(
                    "wrong type",
                    format!("create {}", String::from_utf8_lossy(body)),
                    "POST",
                    format!("/queues/{QUEUE}").as_bytes(),
                    body,
                )
            }
            3 => {
                let body: &[u8] = rng.choose(&[
                    br#"{"body": 5}"#.as_slice(),
                    br#"{"body": null}"#,
                    br#"{"body": ["a"]}"#,
                    br#"{"body": {}}"#,
                    br#"{"body": true}"#,
                    br#"{"body": ""}"#,
                    br#"{}"#,
                    br#"{"bdy": "x"}"#,
                    b"",
                ]);
                native(
                    "wrong type",
                    format!("send {}", String::from_utf8_lossy(body)),
                    "POST",
                    format!("/queues/{QUEUE}/messages").as_bytes(),
                    body,
                )
            }
            4 => {
                let (path, body): (String, &[u8]) = if rng.below(2) == 0 {
                    (
                        format!("/topics/{TOPIC}/publish"),
                        rng.choose(&[
                            br#"{"message": 5}"#.as_slice(),
                            br#"{"message": null}"#,
                            br#"{"message": ""}"#,
                            br#"{}"#,
                            b"",
                            br#"{"message": ["x"]}"#,
                        ]),
                    )
                } else {
                    (
                        format!("/topics/{TOPIC}/subscribe"),
                        rng.choose(&[
                            br#"{"endpoint": 5}"#.as_slice(),
                            br#"{"endpoint": ""}"#,
                            br#"{}"#,
                            b"",
                            br#"{"endpoint": "not a url"}"#,
                            br#"{"endpoint": "http://169.254.169.254/"}"#,
                            br#"{"endpoint": "ftp://x/"}"#,
                        ]),
                    )
                };
                native(
                    "wrong type",
                    format!("{path} {}", String::from_utf8_lossy(body)),
                    "POST",
                    path.as_bytes(),
                    body,
                )
            }
            5 => {
                // Broken JSON: malformed, truncated, invalid UTF-8, deep.
                let (path, valid): (String, &[u8]) = rng
                    .pick(&[
                        (
                            format!("/queues/{QUEUE}/messages"),
                            br#"{"body":"hello"}"#.as_slice(),
                        ),
                        (format!("/queues/{QUEUE}"), br#"{"visibility_timeout":30}"#),
                        (
                            format!("/topics/{TOPIC}/publish"),
                            br#"{"message":"hello"}"#,
                        ),
                        (
                            format!("/topics/{TOPIC}/subscribe"),
                            br#"{"endpoint":"http://127.0.0.1:9/"}"#,
                        ),
                    ])
                    .clone();
                let (what, body) = match rng.below(4) {
                    0 => ("malformed".to_owned(), rng.pick(bad_json).to_vec()),
                    1 => {
                        let cut = rng.range(1, valid.len() - 1);
                        (format!("cut at {cut}"), valid[..cut].to_vec())
                    }
                    2 => {
                        let mut b = valid.to_vec();
                        let at = rng.range(1, b.len() - 2);
                        b.splice(at..at, rng.pick(BAD_UTF8).iter().copied());
                        (format!("invalid UTF-8 at {at}"), b)
                    }
                    _ => {
                        let depth = rng.choose(&[129, 1000, 100_000]);
                        (format!("{depth} deep"), deep_json(depth, rng.below(2) == 0))
                    }
                };
                native(
                    "broken JSON",
                    format!("{path} {what}"),
                    "POST",
                    path.as_bytes(),
                    &body,
                )
            }
            6 => {
                let q = rng.pick(&[
                    "visibility_timeout=abc",
                    "visibility_timeout=-1",
                    "visibility_timeout=43201",
                    "visibility_timeout=1.5",
                    "visibility_timeout=%FF",
                    "visibility_timeout=99999999999999999999",
                    "wait_seconds=21",
                    "wait_seconds=-1",
                    "wait_seconds=x",
                    "wait_seconds=%00",
                    "visibility_timeout=x&visibility_timeout=y",
                    "%FF=1&visibility_timeout=x",
                ]);
                native(
                    "bad query",
                    format!("receive ?{q}"),
                    "GET",
                    format!("/queues/{QUEUE}/messages?{q}").as_bytes(),
                    b"",
                )
            }
            7 => {
                // Unknown routes and path tricks.
                let path = rng.pick(&[
                    "/queuez",
                    "/queues/malq/messages/x/y",
                    "/queues/malq/../../etc/passwd",
                    "/topics/malt/unknown",
                    "//queues",
                    "/queues//messages",
                    "/%2e%2e/queues",
                    "/queues/malq/messages%2Fx",
                    "/queues/%2e%2e%2f%2e%2e/messages",
                    "/../../../../etc/passwd",
                    "/_loft/nope",
                    "/queues/malq/messages/",
                ]);
                let long;
                let path: &str = if rng.below(4) == 0 {
                    long = format!("/{}", "a/".repeat(rng.range(100, 8000)));
                    &long
                } else {
                    path
                };
                let method = rng.pick(&["GET", "POST"]);
                native(
                    "unknown route",
                    format!("{method} {}", path.chars().take(60).collect::<String>()),
                    method,
                    path.as_bytes(),
                    b"",
                )
            }
            _ => {
                let (method, path) = rng.pick(&[
                    ("PUT", "/queues"),
                    ("DELETE", "/queues"),
                    ("PATCH", "/queues/malq"),
                    ("PUT", "/queues/malq/messages"),
                    ("GET", "/topics/malt/publish"),
                    ("DELETE", "/topics/malt"),
                    ("POST", "/health"),
                    ("POST", "/queues"),
                ]);
                native(
                    "wrong method",
                    format!("{method} {path}"),
                    method,
                    path.as_bytes(),
                    b"",
                )
            }
        };
        out.push(bad);
    }
    out
}

// ---------------------------------------------------------------------------------------
// Running it.

/// A valid SQS JSON call; panics unless it answers 200.
async fn sqs_call(addr: &str, op: &str, input: Value) -> Value {
    let headers = vec![
        (
            "X-Amz-Target".to_owned(),
            format!("AmazonSQS.{op}").into_bytes(),
        ),
        (
            "Content-Type".to_owned(),
            b"application/x-amz-json-1.0".to_vec(),
        ),
    ];
    let r = send_raw(addr, "POST", b"/", &headers, input.to_string().as_bytes())
        .await
        .unwrap_or_else(|e| panic!("{op}: {e}"));
    assert_eq!(r.status, 200, "{op}: {}", r.text());
    serde_json::from_slice(&r.body).expect("JSON")
}

/// A valid SNS Query call; panics unless it answers 200. Returns the body.
async fn sns_call(addr: &str, ps: &[(&str, &str)]) -> String {
    let headers = vec![(
        "Content-Type".to_owned(),
        b"application/x-www-form-urlencoded".to_vec(),
    )];
    let r = send_raw(addr, "POST", b"/", &headers, &form(&pairs(ps)))
        .await
        .expect("SNS call");
    assert_eq!(r.status, 200, "{ps:?}: {}", r.text());
    String::from_utf8(r.body).expect("UTF-8")
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

fn between<'a>(text: &'a str, start: &str, end: &str) -> &'a str {
    let from = text.find(start).map(|i| i + start.len()).expect(start);
    &text[from..from + text[from..].find(end).expect(end)]
}

/// Sends `requests` from `workers` connections at once; returns the failures.
async fn barrage(addr: &str, requests: Vec<Bad>, workers: usize) -> Vec<String> {
    let queue = Arc::new(std::sync::Mutex::new(requests));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..workers {
        let queue = queue.clone();
        let addr = addr.to_owned();
        tasks.spawn(async move {
            let mut failures = Vec::new();
            loop {
                let Some(bad) = queue.lock().unwrap().pop() else {
                    break;
                };
                let outcome =
                    send_raw(&addr, bad.method, &bad.target, &bad.headers, &bad.body).await;
                let problem = match outcome {
                    Err(e) => Some(e),
                    Ok(r) => bad
                        .protocol
                        .check(bad.expect, &r)
                        .err()
                        .map(|why| format!("{why}; got {}: {}", r.status, r.text())),
                };
                if let Some(problem) = problem {
                    failures.push(format!(
                        "{:?} [{}] {}: {problem}",
                        bad.protocol, bad.kind, bad.detail
                    ));
                }
            }
            failures
        });
    }
    let mut failures = Vec::new();
    while let Some(done) = tasks.join_next().await {
        failures.extend(done.expect("a worker"));
    }
    failures
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousands_of_malformed_requests_get_4xx_in_their_protocols_shape() {
    let started = Instant::now();
    let loft = Loft::start(&[], &[("LOFT_LOG", "warn")]);
    let addr = loft.url.trim_start_matches("http://").to_owned();

    // What must survive: messages with attributes in KEEP.
    for name in [QUEUE, KEEP] {
        sqs_call(&addr, "CreateQueue", json!({"QueueName": name})).await;
    }
    let keep_url = queue_url(&addr, KEEP);
    let mut kept = BTreeMap::new();
    for i in 0..5 {
        let body = format!("kept message {i} ✓ <&>");
        let out = sqs_call(
            &addr,
            "SendMessage",
            json!({"QueueUrl": keep_url, "MessageBody": body,
            "MessageAttributes": {"n": {"DataType": "Number", "StringValue": i.to_string()}}}),
        )
        .await;
        kept.insert(
            body,
            out["MD5OfMessageAttributes"].as_str().unwrap().to_owned(),
        );
    }
    sns_call(&addr, &[("Action", "CreateTopic"), ("Name", TOPIC)]).await;
    let sub = sns_call(
        &addr,
        &[
            ("Action", "Subscribe"),
            ("TopicArn", &topic_arn(TOPIC)),
            ("Protocol", "sqs"),
            ("Endpoint", &queue_arn(QUEUE)),
            ("ReturnSubscriptionArn", "true"),
        ],
    )
    .await;
    let sub = between(&sub, "<SubscriptionArn>", "</SubscriptionArn>").to_owned();

    let per_protocol = 2500;
    let mut rng = Rng::new(0x10f7_5eed);
    let batches = [
        (Protocol::SqsJson, sqs_json(&mut rng, &addr, per_protocol)),
        (Protocol::SqsQuery, sqs_query(&mut rng, &addr, per_protocol)),
        (Protocol::SnsQuery, sns_query(&mut rng, &sub, per_protocol)),
        (Protocol::Native, native_api(&mut rng, per_protocol)),
    ];
    let mut failures = Vec::new();
    for (protocol, requests) in batches {
        let mut kinds: BTreeMap<&str, Vec<Bad>> = BTreeMap::new();
        let total = requests.len();
        for r in requests {
            kinds.entry(r.kind).or_default().push(r);
        }
        let summary: Vec<String> = kinds
            .iter()
            .map(|(k, v)| format!("{k} {}", v.len()))
            .collect();
        let at = Instant::now();
        for (kind, requests) in kinds {
            failures.extend(barrage(&addr, requests, 4).await);
            // Still serving: a valid request right after each kind.
            let headers = vec![
                ("X-Amz-Target".to_owned(), b"AmazonSQS.GetQueueUrl".to_vec()),
                (
                    "Content-Type".to_owned(),
                    b"application/x-amz-json-1.0".to_vec(),
                ),
            ];
            let alive = send_raw(
                &addr,
                "POST",
                b"/",
                &headers,
                json!({"QueueName": KEEP}).to_string().as_bytes(),
            )
            .await;
            match alive {
                Ok(r) if r.status == 200 && json_body(&r).is_ok_and(|m| m["QueueUrl"] == json!(keep_url)) => {}
                other => panic!(
                    "Loft stopped serving after the {protocol:?} {kind} requests ({other:?}); its stderr ends:\n{}",
                    tail(&loft.stderr(), 40)
                ),
            }
        }
        eprintln!(
            "{protocol:?}: {total} bad requests in {:.1} s ({})",
            at.elapsed().as_secs_f64(),
            summary.join(", ")
        );
    }
    if !failures.is_empty() {
        // Every failure to a file, one example of each protocol and kind in the panic.
        let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
        let path = dir.join("malformed-failures.txt");
        let _ = std::fs::write(&path, failures.join("\n"));
        let mut groups: BTreeMap<String, (usize, &String)> = BTreeMap::new();
        for f in &failures {
            let key: String = f.split(']').next().unwrap_or("").to_owned();
            groups.entry(key).or_insert((0, f)).0 += 1;
        }
        let shown: Vec<String> = groups
            .values()
            .map(|(n, example)| format!("{n} like: {example}"))
            .collect();
        panic!(
            "{} of the malformed requests were answered wrongly (all in {}):\n{}",
            failures.len(),
            path.display(),
            shown.join("\n")
        );
    }

    // The stored messages are intact: all five, bodies and attribute digests as sent.
    let out = sqs_call(
        &addr,
        "ReceiveMessage",
        json!({"QueueUrl": keep_url, "MaxNumberOfMessages": 10,
        "MessageAttributeNames": ["All"], "VisibilityTimeout": 60}),
    )
    .await;
    let got: BTreeMap<String, String> = out["Messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| {
            (
                m["Body"].as_str().unwrap().to_owned(),
                m["MD5OfMessageAttributes"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(got, kept, "the messages stored before the barrage");
    // And a fresh round trip works.
    sqs_call(
        &addr,
        "SendMessage",
        json!({"QueueUrl": keep_url, "MessageBody": "after"}),
    )
    .await;
    let out = sqs_call(
        &addr,
        "ReceiveMessage",
        json!({"QueueUrl": keep_url, "WaitTimeSeconds": 1}),
    )
    .await;
    assert_eq!(out["Messages"][0]["Body"], json!("after"));
    let stderr = loft.stderr();
    assert!(!stderr.contains("panicked"), "Loft panicked:\n{stderr}");
    eprintln!("malformed suite: {:.1} s", started.elapsed().as_secs_f64());
}
