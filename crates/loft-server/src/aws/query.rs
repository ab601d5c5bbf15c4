//! The AWS Query protocol's wire format: form parameters in, XML out.
//!
//! Decoding turns flattened parameter names (`Attribute.1.Name`,
//! `SendMessageBatchRequestEntry.2.MessageAttribute.1.Value.StringValue`) into AWS's JSON
//! input shape, so the same operation code serves both protocols. Encoding writes a JSON
//! output shape as the Query protocol's XML, flattening lists and maps the way AWS does.

use std::collections::BTreeMap;

use loft_core::{Error, ErrorCode, Result};
use serde_json::{Map, Value};

/// Most dot-separated parts a Query parameter name may have. AWS's deepest names have 8
/// (`PublishBatchRequestEntries.member.1.MessageAttributes.entry.1.Value.StringValue`);
/// each part is one level of the decoded input, which is built and dropped recursively,
/// so a name of a million parts would overflow the stack.
pub const MAX_NAME_PARTS: usize = 16;

/// Query list names and the JSON member each becomes.
const LISTS: &[(&str, &str)] = &[
    ("AttributeName", "AttributeNames"),
    ("MessageAttributeName", "MessageAttributeNames"),
    ("MessageSystemAttributeName", "MessageSystemAttributeNames"),
    ("TagKey", "TagKeys"),
    ("AWSAccountId", "AWSAccountIds"),
    ("ActionName", "Actions"),
    ("StringListValue", "StringListValues"),
    ("BinaryListValue", "BinaryListValues"),
    ("SendMessageBatchRequestEntry", "Entries"),
    ("DeleteMessageBatchRequestEntry", "Entries"),
    ("ChangeMessageVisibilityBatchRequestEntry", "Entries"),
    (
        "PublishBatchRequestEntries.member",
        "PublishBatchRequestEntries",
    ),
];

/// Query map names: (query name, JSON member, key element, value element).
const MAPS: &[(&str, &str, &str, &str)] = &[
    ("Attribute", "Attributes", "Name", "Value"),
    ("Tag", "Tags", "Key", "Value"),
    ("MessageAttribute", "MessageAttributes", "Name", "Value"),
    (
        "MessageSystemAttribute",
        "MessageSystemAttributes",
        "Name",
        "Value",
    ),
];

/// Parameters that carry the request's signature or protocol, not the operation's input.
fn is_envelope(key: &str) -> bool {
    matches!(
        key,
        "Action"
            | "Version"
            | "AWSAccessKeyId"
            | "Signature"
            | "SignatureMethod"
            | "SignatureVersion"
            | "Timestamp"
            | "Expires"
            | "SecurityToken"
    ) || key.starts_with("X-Amz-")
}

#[derive(Default, Debug)]
struct Node {
    value: Option<String>,
    children: BTreeMap<String, Node>,
}

fn index_key(k: &str) -> (u64, String) {
    (k.parse::<u64>().unwrap_or(u64::MAX), k.to_owned())
}

fn to_value(node: &Node) -> Value {
    if node.children.is_empty() {
        return Value::String(node.value.clone().unwrap_or_default());
    }
    let mut out = Map::new();
    for (name, child) in &node.children {
        if let Some((_, json_name)) = LISTS.iter().find(|(q, _)| q == name) {
            let mut items: Vec<(&String, &Node)> = child.children.iter().collect();
            items.sort_by_key(|(k, _)| index_key(k));
            let list: Vec<Value> = items.into_iter().map(|(_, n)| to_value(n)).collect();
            out.insert((*json_name).to_owned(), Value::Array(list));
        } else if let Some((_, json_name, key, value)) = MAPS.iter().find(|(q, ..)| q == name) {
            let mut items: Vec<(&String, &Node)> = child.children.iter().collect();
            items.sort_by_key(|(k, _)| index_key(k));
            let mut map = Map::new();
            for (_, entry) in items {
                let Some(k) = entry.children.get(*key).and_then(|n| n.value.clone()) else {
                    continue;
                };
                let v = entry
                    .children
                    .get(*value)
                    .map(to_value)
                    .unwrap_or(Value::String(String::new()));
                map.insert(k, v);
            }
            out.insert((*json_name).to_owned(), Value::Object(map));
        } else {
            out.insert(name.clone(), to_value(child));
        }
    }
    Value::Object(out)
}

/// The Query protocol's parameters: those of the query string, then those of the form
/// body (`application/x-www-form-urlencoded`; pass an empty body for a GET), in order.
/// Bytes that are not UTF-8 decode as U+FFFD, as `form_urlencoded` reads them: enough to
/// route a request; [`check_utf8`] refuses such a request before its input is used.
pub fn form_pairs(query: Option<&str>, body: &[u8]) -> Vec<(String, String)> {
    let mut pairs: Vec<(String, String)> = query
        .map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect())
        .unwrap_or_default();
    pairs.extend(form_urlencoded::parse(body).into_owned());
    pairs
}

/// Checks that every parameter name and value of the query string and the form body is
/// UTF-8 once percent-decoded (`+` is a space; a `%` without two hex digits is itself), so
/// no byte is silently replaced.
///
/// Errors: `MalformedRequest` (`MalformedQueryString`) naming the first bad parameter.
pub fn check_utf8(query: Option<&str>, body: &[u8]) -> Result<()> {
    let hex = |b: u8| (b as char).to_digit(16).map(|d| d as u8);
    let mut decoded = Vec::new();
    for (index, part) in query
        .unwrap_or("")
        .as_bytes()
        .split(|&b| b == b'&')
        .chain(body.split(|&b| b == b'&'))
        .filter(|p| !p.is_empty())
        .enumerate()
    {
        for component in part.splitn(2, |&b| b == b'=') {
            decoded.clear();
            let mut i = 0;
            while i < component.len() {
                match component[i] {
                    b'+' => decoded.push(b' '),
                    b'%' if i + 2 < component.len() => {
                        match (hex(component[i + 1]), hex(component[i + 2])) {
                            (Some(hi), Some(lo)) => {
                                decoded.push(hi << 4 | lo);
                                i += 2;
                            }
                            _ => decoded.push(b'%'),
                        }
                    }
                    b => decoded.push(b),
                }
                i += 1;
            }
            if std::str::from_utf8(&decoded).is_err() {
                let shown: String = String::from_utf8_lossy(part).chars().take(64).collect();
                return Err(Error::new(
                    ErrorCode::MalformedRequest,
                    format!(
                        "Parameter {} ('{shown}') is not valid UTF-8 once percent-decoded.",
                        index + 1
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Decodes form pairs (query string and body together) into the JSON input shape.
/// Envelope parameters (Action, Version, signature fields) are left out.
///
/// Errors: `MalformedRequest` (`MalformedQueryString`) for a parameter name of more than
/// [`MAX_NAME_PARTS`] parts.
pub fn decode(pairs: &[(String, String)]) -> Result<Value> {
    Ok(match tree(pairs)? {
        Some(root) => to_value(&root),
        None => Value::Object(Map::new()),
    })
}

/// The parameter tree of dotted names (`A.1.B` under `A`, `1`, `B`), envelope left out;
/// `None` when no parameter is left. Errors: a name of more than [`MAX_NAME_PARTS`] parts.
fn tree(pairs: &[(String, String)]) -> Result<Option<Node>> {
    let mut root = Node::default();
    for (key, value) in pairs {
        if is_envelope(key) {
            continue;
        }
        if key.bytes().filter(|&b| b == b'.').count() >= MAX_NAME_PARTS {
            let shown: String = key.chars().take(64).collect();
            return Err(Error::new(
                ErrorCode::MalformedRequest,
                format!(
                    "The parameter name '{shown}...' has more than {MAX_NAME_PARTS} dot-separated parts."
                ),
            ));
        }
        let mut node = &mut root;
        for part in key.split('.') {
            node = node.children.entry(part.to_owned()).or_default();
        }
        node.value = Some(value.clone());
    }
    Ok((!root.children.is_empty()).then_some(root))
}

fn to_value_sns(node: &Node) -> Value {
    if node.children.is_empty() {
        return Value::String(node.value.clone().unwrap_or_default());
    }
    if node.children.len() == 1 {
        if let Some(list) = node.children.get("member") {
            let mut items: Vec<(&String, &Node)> = list.children.iter().collect();
            items.sort_by_key(|(k, _)| index_key(k));
            return Value::Array(items.into_iter().map(|(_, n)| to_value_sns(n)).collect());
        }
        if let Some(entries) = node.children.get("entry") {
            let mut items: Vec<(&String, &Node)> = entries.children.iter().collect();
            items.sort_by_key(|(k, _)| index_key(k));
            let mut map = Map::new();
            for (_, e) in items {
                let key = e
                    .children
                    .get("key")
                    .or_else(|| e.children.get("Name"))
                    .and_then(|n| n.value.clone());
                let value = e.children.get("value").or_else(|| e.children.get("Value"));
                if let Some(k) = key {
                    map.insert(
                        k,
                        value
                            .map(to_value_sns)
                            .unwrap_or(Value::String(String::new())),
                    );
                }
            }
            return Value::Object(map);
        }
    }
    let mut out = Map::new();
    for (name, child) in &node.children {
        out.insert(name.clone(), to_value_sns(child));
    }
    Value::Object(out)
}

/// Decodes SNS Query parameters (lists as `Name.member.N`, maps as
/// `Name.entry.N.key`/`.value` or `.Name`/`.Value`) into the JSON input shape.
///
/// Errors: as [`decode`].
pub fn decode_sns(pairs: &[(String, String)]) -> Result<Value> {
    Ok(match tree(pairs)? {
        Some(root) => to_value_sns(&root),
        None => Value::Object(Map::new()),
    })
}

/// Escapes text for XML content the way AWS does, keeping `\r` as `&#xD;` so that it
/// survives the parser's line-end normalisation.
pub fn escape(text: &str, out: &mut String) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\r' => out.push_str("&#xD;"),
            c => out.push(c),
        }
    }
}

/// How a JSON output member is written as XML.
pub struct XmlRules {
    /// JSON list member to the element name of each (flattened) item.
    pub lists: &'static [(&'static str, &'static str)],
    /// JSON map member to (entry element, key element, value element), flattened.
    pub maps: &'static [(&'static str, &'static str, &'static str, &'static str)],
    /// JSON list members written wrapped, with `<member>` items (SNS style).
    pub member_lists: bool,
}

fn write_scalar(value: &Value, out: &mut String) {
    match value {
        Value::String(s) => escape(s, out),
        Value::Null => {}
        other => out.push_str(&other.to_string()),
    }
}

/// Writes `value` as the XML content of an element named `name`.
pub fn write_element(name: &str, value: &Value, rules: &XmlRules, out: &mut String) {
    match value {
        Value::Array(items) => {
            if rules.member_lists {
                out.push('<');
                out.push_str(name);
                out.push('>');
                for item in items {
                    write_element("member", item, rules, out);
                }
                out.push_str("</");
                out.push_str(name);
                out.push('>');
            } else {
                let item_name = rules
                    .lists
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map_or(name, |(_, i)| *i);
                for item in items {
                    write_element(item_name, item, rules, out);
                }
            }
        }
        Value::Object(map) => {
            if let Some((_, entry, k, v)) = rules.maps.iter().find(|(n, ..)| *n == name) {
                if rules.member_lists {
                    out.push('<');
                    out.push_str(name);
                    out.push('>');
                }
                let entry = if rules.member_lists { "entry" } else { entry };
                for (key, val) in map {
                    out.push('<');
                    out.push_str(entry);
                    out.push('>');
                    write_element(k, &Value::String(key.clone()), rules, out);
                    write_element(v, val, rules, out);
                    out.push_str("</");
                    out.push_str(entry);
                    out.push('>');
                }
                if rules.member_lists {
                    out.push_str("</");
                    out.push_str(name);
                    out.push('>');
                }
                return;
            }
            out.push('<');
            out.push_str(name);
            out.push('>');
            for (k, v) in map {
                write_element(k, v, rules, out);
            }
            out.push_str("</");
            out.push_str(name);
            out.push('>');
        }
        scalar => {
            out.push('<');
            out.push_str(name);
            out.push('>');
            write_scalar(scalar, out);
            out.push_str("</");
            out.push_str(name);
            out.push('>');
        }
    }
}

/// A whole Query response: `<{op}Response xmlns=..><{op}Result>..</{op}Result>
/// <ResponseMetadata><RequestId>..</RequestId></ResponseMetadata></{op}Response>`.
/// Operations without an output shape (`has_result` false) have no Result element; an
/// output shape with nothing in it is an empty `<{op}Result/>`, as AWS sends.
pub fn response(
    op: &str,
    namespace: &str,
    output: &Value,
    rules: &XmlRules,
    request_id: &str,
    has_result: bool,
) -> String {
    let mut out = String::with_capacity(256);
    out.push_str("<?xml version=\"1.0\"?>");
    out.push_str(&format!("<{op}Response xmlns=\"{namespace}\">"));
    match output {
        Value::Object(map) if !map.is_empty() => {
            out.push_str(&format!("<{op}Result>"));
            for (k, v) in map {
                write_element(k, v, rules, &mut out);
            }
            out.push_str(&format!("</{op}Result>"));
        }
        _ if has_result => out.push_str(&format!("<{op}Result/>")),
        _ => {}
    }
    out.push_str("<ResponseMetadata><RequestId>");
    escape(request_id, &mut out);
    out.push_str(&format!("</RequestId></ResponseMetadata></{op}Response>"));
    out
}

/// The Query protocol's error document; `detail` adds SQS's empty `<Detail/>` (SNS's
/// `<Error>` has Type, Code and Message only).
pub fn error_response(
    namespace: &str,
    sender: bool,
    code: &str,
    message: &str,
    request_id: &str,
    detail: bool,
) -> String {
    let mut out = String::with_capacity(256);
    out.push_str("<?xml version=\"1.0\"?>");
    out.push_str(&format!(
        "<ErrorResponse xmlns=\"{namespace}\"><Error><Type>"
    ));
    out.push_str(if sender { "Sender" } else { "Receiver" });
    out.push_str("</Type><Code>");
    escape(code, &mut out);
    out.push_str("</Code><Message>");
    escape(message, &mut out);
    out.push_str("</Message>");
    if detail {
        out.push_str("<Detail/>");
    }
    out.push_str("</Error><RequestId>");
    escape(request_id, &mut out);
    out.push_str("</RequestId></ErrorResponse>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn decodes_maps_lists_and_entries() {
        let v = decode(&pairs(&[
            ("Action", "SendMessageBatch"),
            ("QueueUrl", "http://h/0/q"),
            ("SendMessageBatchRequestEntry.2.Id", "b"),
            ("SendMessageBatchRequestEntry.2.MessageBody", "two"),
            ("SendMessageBatchRequestEntry.1.Id", "a"),
            ("SendMessageBatchRequestEntry.1.MessageBody", "one"),
            (
                "SendMessageBatchRequestEntry.1.MessageAttribute.1.Name",
                "k",
            ),
            (
                "SendMessageBatchRequestEntry.1.MessageAttribute.1.Value.DataType",
                "String",
            ),
            (
                "SendMessageBatchRequestEntry.1.MessageAttribute.1.Value.StringValue",
                "v",
            ),
            ("AttributeName.1", "All"),
        ]))
        .unwrap();
        assert_eq!(
            v,
            json!({
                "AttributeNames": ["All"],
                "QueueUrl": "http://h/0/q",
                "Entries": [
                    {"Id": "a", "MessageAttributes": {"k": {"DataType": "String", "StringValue": "v"}}, "MessageBody": "one"},
                    {"Id": "b", "MessageBody": "two"}
                ]
            })
        );
    }

    #[test]
    fn decodes_attribute_maps() {
        let v = decode(&pairs(&[
            ("QueueName", "q"),
            ("Attribute.1.Name", "VisibilityTimeout"),
            ("Attribute.1.Value", "60"),
            ("Tag.1.Key", "team"),
            ("Tag.1.Value", "core"),
        ]))
        .unwrap();
        assert_eq!(v["Attributes"], json!({"VisibilityTimeout": "60"}));
        assert_eq!(v["Tags"], json!({"team": "core"}));
    }

    #[test]
    fn decodes_sns_members_and_entries() {
        let v = decode_sns(&pairs(&[
            ("TopicArn", "arn:aws:sns:us-east-1:0:t"),
            ("Attributes.entry.1.key", "DisplayName"),
            ("Attributes.entry.1.value", "d"),
            ("Tags.member.1.Key", "k"),
            ("Tags.member.1.Value", "v"),
            ("PublishBatchRequestEntries.member.1.Id", "a"),
            (
                "PublishBatchRequestEntries.member.1.MessageAttributes.entry.1.Name",
                "x",
            ),
            (
                "PublishBatchRequestEntries.member.1.MessageAttributes.entry.1.Value.DataType",
                "String",
            ),
            (
                "PublishBatchRequestEntries.member.1.MessageAttributes.entry.1.Value.StringValue",
                "y",
            ),
        ]))
        .unwrap();
        assert_eq!(v["Attributes"], json!({"DisplayName": "d"}));
        assert_eq!(v["Tags"], json!([{"Key": "k", "Value": "v"}]));
        assert_eq!(
            v["PublishBatchRequestEntries"][0]["MessageAttributes"],
            json!({"x": {"DataType": "String", "StringValue": "y"}})
        );
    }

    /// Regression: a name of a million parts (`a.a.a...`, 2 MB, well under the body
    /// limit) overflowed a worker thread's stack while the decoded input was built and
    /// dropped, aborting the whole server. Found by the malformed-input suite.
    #[test]
    fn refuses_names_nested_too_deep_without_recursing() {
        let deep = "a.".repeat(1_000_000) + "b";
        for decoded in [
            decode(&pairs(&[(&deep, "x")])),
            decode_sns(&pairs(&[(&deep, "x")])),
        ] {
            let e = decoded.unwrap_err();
            assert_eq!(e.code, ErrorCode::MalformedRequest);
            assert!(e.message.contains("more than 16"), "{}", e.message);
        }
        let deepest_aws =
            "PublishBatchRequestEntries.member.1.MessageAttributes.entry.1.Value.StringValue";
        assert!(decode_sns(&pairs(&[(deepest_aws, "x")])).is_ok());
        let sixteen = vec!["p"; MAX_NAME_PARTS].join(".");
        assert!(decode(&pairs(&[(&sixteen, "x")])).is_ok());
        let seventeen = vec!["p"; MAX_NAME_PARTS + 1].join(".");
        assert!(decode(&pairs(&[(&seventeen, "x")])).is_err());
    }

    /// Regression (the malformed-input suite): `MessageBody=%FF` was stored as U+FFFD and
    /// answered 200, the sender never told its bytes were changed.
    #[test]
    fn refuses_parameters_that_are_not_utf8() {
        for (query, body) in [
            (None, b"MessageBody=%FF".as_slice()),
            (None, b"MessageBody=\xff"),
            (None, b"Action=SendMessage&MessageBody=a%C3%28"),
            (None, b"%ED%A0%80=x"),
            (Some("Action=ListQueues&X=%C0%AF"), b""),
        ] {
            let e = check_utf8(query, body).unwrap_err();
            assert_eq!(e.code, ErrorCode::MalformedRequest, "{query:?} {body:?}");
        }
        for (query, body) in [
            (
                None,
                "MessageBody=%E2%9C%93+ok&A=100%&B=%zz%4&C=%".as_bytes(),
            ),
            (None, "MessageBody=✓&&=&x".as_bytes()),
            (Some("Action=ListQueues&Q=%EF%BF%BD"), b""),
        ] {
            assert_eq!(check_utf8(query, body), Ok(()), "{query:?} {body:?}");
        }
    }

    #[test]
    fn escapes_carriage_returns_and_quotes() {
        let mut s = String::new();
        escape("a\r\n\"<&>'", &mut s);
        assert_eq!(s, "a&#xD;\n&quot;&lt;&amp;&gt;&apos;");
    }
}
