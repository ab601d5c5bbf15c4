//! The AWS Query protocol's wire format, common to SQS and SNS: form parameters in (the
//! query string and an `application/x-www-form-urlencoded` body), XML out.
//!
//! [`form_pairs`] reads the parameters, [`check_utf8`] refuses bytes that are not UTF-8,
//! [`tree`] turns dotted names (`SendMessageBatchRequestEntry.2.MessageAttribute.1.Name`)
//! into a [`Node`] tree that each operation's typed input reads ([`super::shape`]);
//! [`response`] and [`error_response`] write the XML documents.

use std::collections::BTreeMap;

use loft_core::{Error, ErrorCode, Result};

/// Most dot-separated parts a Query parameter name may have. AWS's deepest names have 8
/// (`PublishBatchRequestEntries.member.1.MessageAttributes.entry.1.Value.StringValue`);
/// each part is one level of the decoded input, which is built and dropped recursively,
/// so a name of a million parts would overflow the stack.
pub const MAX_NAME_PARTS: usize = 16;

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

/// A Query parameter tree: `A.1.B=v` is the value `v` at `A` → `1` → `B`. A node may have
/// a value and children both (`A=x&A.1=y`); which counts depends on the shape read from it
/// ([`super::shape`]).
#[derive(Default, Debug, Clone, PartialEq)]
pub struct Node {
    /// The parameter's value, when one was given at exactly this name.
    pub value: Option<String>,
    /// The parameters below it, by their next name part.
    pub children: BTreeMap<String, Node>,
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

/// The parameter tree of dotted names (`A.1.B` under `A`, `1`, `B`), envelope parameters
/// (Action, Version, signature fields) left out; a parameter given twice counts with its
/// last value.
///
/// Errors: `MalformedRequest` (`MalformedQueryString`) for a parameter name of more than
/// [`MAX_NAME_PARTS`] parts.
pub fn tree(pairs: &[(String, String)]) -> Result<Node> {
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
    Ok(root)
}

/// Escapes text for XML content the way AWS does, keeping `\r` as `&#xD;` so that it
/// survives the parser's line-end normalisation. A character XML 1.0 cannot carry at all
/// (controls other than tab, line feed and carriage return, U+FFFE, U+FFFF: not even as a
/// character reference) is written as U+FFFD, so no text that reached Loft (a tag, an echo
/// of a request's value in an error) can make a response ill-formed for every client
/// that reads it.
pub fn escape(text: &str, out: &mut String) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\r' => out.push_str("&#xD;"),
            '\t' | '\n' => out.push(c),
            '\u{0}'..='\u{1F}' | '\u{FFFE}' | '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
}

/// A whole Query response: `<{op}Response xmlns=..><{op}Result>..</{op}Result>
/// <ResponseMetadata><RequestId>..</RequestId></ResponseMetadata></{op}Response>`, the
/// Result's members written by `members`. Operations without an output shape
/// (`has_result` false) have no Result element; an output with nothing in it is an empty
/// `<{op}Result/>`, as AWS sends.
pub fn response(
    op: &str,
    namespace: &str,
    has_result: bool,
    members: impl FnOnce(&mut String),
    request_id: &str,
) -> String {
    let mut out = String::with_capacity(512);
    out.push_str("<?xml version=\"1.0\"?><");
    out.push_str(op);
    out.push_str("Response xmlns=\"");
    out.push_str(namespace);
    out.push_str("\">");
    if has_result {
        let open = out.len();
        out.push('<');
        out.push_str(op);
        out.push_str("Result>");
        let body = out.len();
        members(&mut out);
        if out.len() == body {
            out.truncate(open);
            out.push('<');
            out.push_str(op);
            out.push_str("Result/>");
        } else {
            out.push_str("</");
            out.push_str(op);
            out.push_str("Result>");
        }
    }
    out.push_str("<ResponseMetadata><RequestId>");
    escape(request_id, &mut out);
    out.push_str("</RequestId></ResponseMetadata></");
    out.push_str(op);
    out.push_str("Response>");
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

/// Test input: the `(name, value)` pairs of a form body, owned.
#[cfg(test)]
pub(crate) fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_the_tree_without_the_envelope() {
        let t = tree(&pairs(&[
            ("Action", "SendMessageBatch"),
            ("Version", "2012-11-05"),
            ("X-Amz-Signature", "x"),
            ("QueueUrl", "http://h/0/q"),
            ("SendMessageBatchRequestEntry.2.Id", "b"),
            ("SendMessageBatchRequestEntry.1.Id", "a"),
            ("SendMessageBatchRequestEntry.1.Id", "a2"),
        ]))
        .unwrap();
        assert_eq!(
            t.children.keys().collect::<Vec<_>>(),
            ["QueueUrl", "SendMessageBatchRequestEntry"]
        );
        let entries = &t.children["SendMessageBatchRequestEntry"];
        assert_eq!(
            entries.children["1"].children["Id"].value.as_deref(),
            Some("a2"),
            "a parameter given twice counts with its last value"
        );
        assert_eq!(
            entries.children["2"].children["Id"].value.as_deref(),
            Some("b")
        );
    }

    /// Regression: a name of a million parts (`a.a.a...`, 2 MB, well under the body
    /// limit) overflowed a worker thread's stack while the decoded input was built and
    /// dropped, aborting the whole server. Found by the malformed-input suite.
    #[test]
    fn refuses_names_nested_too_deep_without_recursing() {
        let deep = "a.".repeat(1_000_000) + "b";
        let e = tree(&pairs(&[(&deep, "x")])).unwrap_err();
        assert_eq!(e.code, ErrorCode::MalformedRequest);
        assert!(e.message.contains("more than 16"), "{}", e.message);
        let deepest_aws =
            "PublishBatchRequestEntries.member.1.MessageAttributes.entry.1.Value.StringValue";
        assert!(tree(&pairs(&[(deepest_aws, "x")])).is_ok());
        let sixteen = vec!["p"; MAX_NAME_PARTS].join(".");
        assert!(tree(&pairs(&[(&sixteen, "x")])).is_ok());
        let seventeen = vec!["p"; MAX_NAME_PARTS + 1].join(".");
        assert!(tree(&pairs(&[(&seventeen, "x")])).is_err());
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

    #[test]
    fn characters_xml_cannot_carry_become_replacement_characters() {
        let mut s = String::new();
        escape("a\u{0}b\u{1}\tc\u{1F}\u{FFFE}\u{FFFF}\u{10000}", &mut s);
        assert_eq!(s, "a\u{FFFD}b\u{FFFD}\tc\u{FFFD}\u{FFFD}\u{FFFD}\u{10000}");
    }

    #[test]
    fn results_are_elided_or_empty_as_aws_sends_them() {
        let with = response(
            "GetQueueUrl",
            "ns",
            true,
            |o| o.push_str("<QueueUrl>u</QueueUrl>"),
            "r",
        );
        assert_eq!(
            with,
            "<?xml version=\"1.0\"?><GetQueueUrlResponse xmlns=\"ns\"><GetQueueUrlResult><QueueUrl>u</QueueUrl></GetQueueUrlResult><ResponseMetadata><RequestId>r</RequestId></ResponseMetadata></GetQueueUrlResponse>"
        );
        let empty = response("ListQueues", "ns", true, |_| {}, "r");
        assert!(
            empty.contains("<ListQueuesResult/><ResponseMetadata>"),
            "{empty}"
        );
        let none = response("DeleteQueue", "ns", false, |_| {}, "r");
        assert!(!none.contains("Result"), "{none}");
    }
}
