//! Raw wire clients for both SQS protocols, without any SDK in between:
//!
//! - [`json`]: a JSON 1.0 call (`X-Amz-Target: AmazonSQS.<Op>`).
//! - [`query`]: a Query call (`Action=<Op>` form post) with its XML decoded back into AWS's
//!   JSON output shape, and JSON input encoded into Query's flattened parameters.
//!
//! Both answer [`Outcome`], so one scenario can run over either protocol and be compared.
//! The Query naming rules here come from the botocore model (flattened lists and maps) and
//! the Query examples of the SQS API Reference, independently of Loft's encoder.

use base64::Engine;
use quick_xml::events::Event;
use serde_json::{Map, Value};

/// What a call answered: its output, or its error as the wire carried it.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// HTTP 200 and the output shape.
    Ok(Value),
    /// An error: the Query-compatible code, the HTTP status and the fault type.
    Err {
        /// `AWS.SimpleQueueService.NonExistentQueue`, `InvalidParameterValue`, ...
        code: String,
        /// The HTTP status.
        status: u16,
        /// `Sender` or `Receiver`.
        fault: String,
        /// The error's message.
        message: String,
    },
}

impl Outcome {
    /// The output, panicking on an error.
    pub fn ok(self) -> Value {
        match self {
            Outcome::Ok(v) => v,
            Outcome::Err { code, status, .. } => panic!("unexpected error {code} ({status})"),
        }
    }
}

/// A JSON 1.0 call of `op` with `input`.
pub async fn json(http: &reqwest::Client, endpoint: &str, op: &str, input: &Value) -> Outcome {
    let resp = http
        .post(endpoint)
        .header("X-Amz-Target", format!("AmazonSQS.{op}"))
        .header("Content-Type", "application/x-amz-json-1.0")
        .body(input.to_string())
        .send()
        .await
        .expect("JSON request");
    let status = resp.status().as_u16();
    let header = resp
        .headers()
        .get("x-amzn-query-error")
        .and_then(|h| h.to_str().ok())
        .map(str::to_owned);
    let content_type = resp
        .headers()
        .get("content-type")
        .and_then(|h| h.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let body = resp.text().await.expect("JSON body");
    assert_eq!(
        content_type, "application/x-amz-json-1.0",
        "{op}: content type"
    );
    let value: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{op}: {e}: {body}"));
    if status == 200 {
        return Outcome::Ok(value);
    }
    // The JSON error body names the modern shape; the header carries the Query code.
    let shape = value["__type"].as_str().unwrap_or_default();
    assert!(
        shape.starts_with("com.amazonaws.sqs#"),
        "{op}: __type {shape}"
    );
    assert!(value["message"].is_string(), "{op}: message in {body}");
    let header = header.unwrap_or_else(|| panic!("{op}: no x-amzn-query-error header"));
    let (code, fault) = header.split_once(';').expect("code;fault");
    Outcome::Err {
        code: code.to_owned(),
        status,
        fault: fault.to_owned(),
        message: value["message"].as_str().unwrap_or_default().to_owned(),
    }
}

/// A Query call of `op` with `input` encoded as form parameters, posted to `endpoint` (the
/// service root or a queue URL).
pub async fn query(http: &reqwest::Client, endpoint: &str, op: &str, input: &Value) -> Outcome {
    let mut params = vec![
        ("Action".to_owned(), op.to_owned()),
        ("Version".to_owned(), "2012-11-05".to_owned()),
    ];
    params.extend(encode_query(op, input));
    let (status, body) = post_form(http, endpoint, &params).await;
    decode_query(op, status, &body)
}

/// Posts form `params` and returns the status and body text.
pub async fn post_form(
    http: &reqwest::Client,
    endpoint: &str,
    params: &[(String, String)],
) -> (u16, String) {
    let form: String = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(params)
        .finish();
    let resp = http
        .post(endpoint)
        .header("Content-Type", "application/x-www-form-urlencoded")
        .body(form)
        .send()
        .await
        .expect("Query request");
    let status = resp.status().as_u16();
    let content_type = resp
        .headers()
        .get("content-type")
        .and_then(|h| h.to_str().ok())
        .unwrap_or("")
        .to_owned();
    assert!(
        content_type.starts_with("text/xml"),
        "content type {content_type}"
    );
    (status, resp.text().await.expect("XML body"))
}

/// Decodes a Query response (or error) into an [`Outcome`].
pub fn decode_query(op: &str, status: u16, body: &str) -> Outcome {
    let root = parse_xml(body);
    if status != 200 {
        assert_eq!(root.name, "ErrorResponse", "{body}");
        let error = root.child("Error").expect("Error");
        return Outcome::Err {
            code: error.child("Code").expect("Code").text.clone(),
            status,
            fault: error.child("Type").expect("Type").text.clone(),
            message: error
                .child("Message")
                .map(|m| m.text.clone())
                .unwrap_or_default(),
        };
    }
    assert_eq!(root.name, format!("{op}Response"), "{body}");
    assert!(
        root.child("ResponseMetadata")
            .and_then(|m| m.child("RequestId"))
            .is_some_and(|r| !r.text.is_empty()),
        "RequestId in {body}"
    );
    match root.child(&format!("{op}Result")) {
        Some(result) => Outcome::Ok(struct_value(result)),
        None => Outcome::Ok(Value::Object(Map::new())),
    }
}

/// One XML element: name, text, children.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// Local element name.
    pub name: String,
    /// Unescaped text content (leaf elements).
    pub text: String,
    /// The `xmlns` attribute, if any.
    pub xmlns: Option<String>,
    /// Child elements, in document order.
    pub children: Vec<Node>,
}

impl Node {
    /// The first child named `name`.
    pub fn child(&self, name: &str) -> Option<&Node> {
        self.children.iter().find(|c| c.name == name)
    }

    /// A canonical text form with siblings sorted, for order-insensitive comparison.
    pub fn canonical(&self) -> String {
        let mut kids: Vec<String> = self.children.iter().map(Node::canonical).collect();
        kids.sort();
        let ns = self
            .xmlns
            .as_ref()
            .map(|n| format!(" xmlns=\"{n}\""))
            .unwrap_or_default();
        if kids.is_empty() {
            format!("<{}{ns}>{}</{}>", self.name, self.text, self.name)
        } else {
            format!("<{}{ns}>{}</{}>", self.name, kids.concat(), self.name)
        }
    }
}

/// Parses an XML document into its root [`Node`]. Whitespace between elements is dropped;
/// text of leaf elements is kept exactly (after unescaping).
pub fn parse_xml(xml: &str) -> Node {
    let mut reader = quick_xml::Reader::from_str(xml);
    let mut stack: Vec<Node> = Vec::new();
    let mut root = None;
    let open = |e: &quick_xml::events::BytesStart<'_>| Node {
        name: String::from_utf8_lossy(e.local_name().as_ref()).into_owned(),
        text: String::new(),
        xmlns: e
            .attributes()
            .flatten()
            .find(|a| a.key.as_ref() == b"xmlns")
            .map(|a| String::from_utf8_lossy(&a.value).into_owned()),
        children: Vec::new(),
    };
    loop {
        match reader
            .read_event()
            .unwrap_or_else(|e| panic!("bad XML {e}: {xml}"))
        {
            Event::Start(e) => stack.push(open(&e)),
            Event::Empty(e) => {
                let node = open(&e);
                match stack.last_mut() {
                    Some(parent) => parent.children.push(node),
                    None => root = Some(node),
                }
            }
            Event::Text(t) => {
                let text = t
                    .unescape()
                    .unwrap_or_else(|e| panic!("bad text {e}: {xml}"));
                if let Some(top) = stack.last_mut() {
                    top.text.push_str(&text);
                }
            }
            Event::CData(c) => {
                if let Some(top) = stack.last_mut() {
                    top.text.push_str(&String::from_utf8_lossy(&c));
                }
            }
            Event::End(_) => {
                let mut node = stack.pop().expect("balanced XML");
                if !node.children.is_empty() {
                    node.text.clear();
                }
                match stack.last_mut() {
                    Some(parent) => parent.children.push(node),
                    None => root = Some(node),
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    root.expect("an XML root element")
}

/// Flattened lists of SQS outputs: the item element and the JSON member it fills.
const OUTPUT_LISTS: &[(&str, &str)] = &[
    ("SendMessageBatchResultEntry", "Successful"),
    ("DeleteMessageBatchResultEntry", "Successful"),
    ("ChangeMessageVisibilityBatchResultEntry", "Successful"),
    ("BatchResultErrorEntry", "Failed"),
    ("ListMessageMoveTasksResultEntry", "Results"),
    ("StringListValue", "StringListValues"),
];

/// Flattened maps of SQS outputs: entry element, JSON member, key and value elements.
const OUTPUT_MAPS: &[(&str, &str, &str, &str)] = &[
    ("Attribute", "Attributes", "Name", "Value"),
    ("MessageAttribute", "MessageAttributes", "Name", "Value"),
    ("Tag", "Tags", "Key", "Value"),
];

fn struct_value(node: &Node) -> Value {
    let mut out = Map::new();
    for child in &node.children {
        // `Message` is ReceiveMessage's list item, but a plain member of batch error entries.
        let list = if child.name == "Message" && node.name == "ReceiveMessageResult" {
            Some("Messages")
        } else {
            OUTPUT_LISTS
                .iter()
                .find(|(e, _)| *e == child.name)
                .map(|(_, m)| *m)
        };
        if let Some(member) = list {
            out.entry(member)
                .or_insert_with(|| Value::Array(Vec::new()))
                .as_array_mut()
                .expect("list")
                .push(leaf_or_struct(child));
        } else if child.name == "QueueUrl"
            && node.name != "CreateQueueResult"
            && node.name != "GetQueueUrlResult"
        {
            // ListQueues' QueueUrls and ListDeadLetterSourceQueues' queueUrls.
            let member = if node.name == "ListDeadLetterSourceQueuesResult" {
                "queueUrls"
            } else {
                "QueueUrls"
            };
            out.entry(member)
                .or_insert_with(|| Value::Array(Vec::new()))
                .as_array_mut()
                .expect("list")
                .push(Value::String(child.text.clone()));
        } else if let Some((_, member, k, v)) = OUTPUT_MAPS.iter().find(|(e, ..)| *e == child.name)
        {
            let key = child.child(k).map(|n| n.text.clone()).unwrap_or_default();
            let value = child.child(v).map(leaf_or_struct).unwrap_or(Value::Null);
            out.entry(*member)
                .or_insert_with(|| Value::Object(Map::new()))
                .as_object_mut()
                .expect("map")
                .insert(key, value);
        } else {
            out.insert(child.name.clone(), leaf_or_struct(child));
        }
    }
    Value::Object(out)
}

fn leaf_or_struct(node: &Node) -> Value {
    if node.children.is_empty() {
        Value::String(node.text.clone())
    } else {
        struct_value(node)
    }
}

/// Encodes AWS's JSON input shape as the Query protocol's flattened form parameters.
pub fn encode_query(op: &str, input: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let Some(map) = input.as_object() else {
        return out;
    };
    for (name, value) in map {
        encode_member(op, name, value, "", &mut out);
    }
    out
}

fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn encode_member(
    op: &str,
    name: &str,
    value: &Value,
    prefix: &str,
    out: &mut Vec<(String, String)>,
) {
    let list_item = match name {
        "AttributeNames" => Some("AttributeName"),
        "MessageAttributeNames" => Some("MessageAttributeName"),
        "MessageSystemAttributeNames" => Some("MessageSystemAttributeName"),
        "TagKeys" => Some("TagKey"),
        "AWSAccountIds" => Some("AWSAccountId"),
        "Actions" => Some("ActionName"),
        "Entries" => Some(match op {
            "SendMessageBatch" => "SendMessageBatchRequestEntry",
            "DeleteMessageBatch" => "DeleteMessageBatchRequestEntry",
            _ => "ChangeMessageVisibilityBatchRequestEntry",
        }),
        _ => None,
    };
    if let (Some(item), Value::Array(items)) = (list_item, value) {
        for (i, v) in items.iter().enumerate() {
            let key = format!("{prefix}{item}.{}", i + 1);
            match v {
                Value::Object(fields) => {
                    for (k, fv) in fields {
                        encode_member(op, k, fv, &format!("{key}."), out);
                    }
                }
                other => out.push((key, scalar(other))),
            }
        }
        return;
    }
    let map_entry = match name {
        "Attributes" => Some(("Attribute", "Name", "Value")),
        "Tags" | "tags" => Some(("Tag", "Key", "Value")),
        "MessageAttributes" => Some(("MessageAttribute", "Name", "Value")),
        "MessageSystemAttributes" => Some(("MessageSystemAttribute", "Name", "Value")),
        _ => None,
    };
    if let (Some((entry, k, v)), Value::Object(entries)) = (map_entry, value) {
        for (i, (key, val)) in entries.iter().enumerate() {
            let base = format!("{prefix}{entry}.{}", i + 1);
            out.push((format!("{base}.{k}"), key.clone()));
            match val {
                Value::Object(fields) => {
                    for (fk, fv) in fields {
                        out.push((format!("{base}.{v}.{fk}"), scalar(fv)));
                    }
                }
                other => out.push((format!("{base}.{v}"), scalar(other))),
            }
        }
        return;
    }
    out.push((format!("{prefix}{name}"), scalar(value)));
}

/// Turns every scalar into its string form, so JSON numbers and booleans compare with the
/// Query protocol's text.
pub fn stringify(v: &Value) -> Value {
    match v {
        Value::Array(items) => Value::Array(items.iter().map(stringify).collect()),
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), stringify(v))).collect())
        }
        Value::Null => Value::Null,
        other => Value::String(scalar(other)),
    }
}

/// Base64 as binary values travel in both protocols.
pub fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}
