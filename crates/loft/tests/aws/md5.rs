//! AWS's MD5 digests, written here from the SQS Developer Guide ("Calculating the MD5
//! message digest for message attributes") rather than taken from Loft, so the suite checks
//! Loft's digests against an independent implementation.

use std::collections::HashMap;

use aws_sdk_sqs::types::MessageAttributeValue;
use md5::{Digest, Md5};

/// Lower-case hex MD5 of `bytes` (MD5OfMessageBody / MD5OfBody).
pub fn hex_md5(bytes: &[u8]) -> String {
    hex::encode(Md5::digest(bytes))
}

/// One attribute value as the digest sees it.
pub enum Value<'a> {
    /// String and Number attributes (transport type 1).
    Text(&'a str),
    /// Binary attributes (transport type 2): the raw bytes, not their base64.
    Bytes(&'a [u8]),
}

/// MD5OfMessageAttributes: attributes sorted by name; for each, the 4-byte big-endian
/// length and UTF-8 bytes of the name, the same for the data type, one transport byte
/// (1 = string, 2 = binary), then the length and bytes of the value.
pub fn of_attributes(attributes: &[(&str, &str, Value<'_>)]) -> String {
    let mut sorted: Vec<&(&str, &str, Value<'_>)> = attributes.iter().collect();
    sorted.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    let mut buf = Vec::new();
    let put = |buf: &mut Vec<u8>, bytes: &[u8]| {
        buf.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
        buf.extend_from_slice(bytes);
    };
    for (name, data_type, value) in sorted {
        put(&mut buf, name.as_bytes());
        put(&mut buf, data_type.as_bytes());
        match value {
            Value::Text(s) => {
                buf.push(1);
                put(&mut buf, s.as_bytes());
            }
            Value::Bytes(b) => {
                buf.push(2);
                put(&mut buf, b);
            }
        }
    }
    hex_md5(&buf)
}

/// MD5OfMessageAttributes of attributes in the SDK's shape; `None` for none (AWS then
/// omits the digest).
pub fn of_sdk_attributes(map: &HashMap<String, MessageAttributeValue>) -> Option<String> {
    if map.is_empty() {
        return None;
    }
    let list: Vec<(&str, &str, Value<'_>)> = map
        .iter()
        .map(|(name, v)| {
            let value = match v.binary_value() {
                Some(b) => Value::Bytes(b.as_ref()),
                None => Value::Text(v.string_value().unwrap_or("")),
            };
            (name.as_str(), v.data_type(), value)
        })
        .collect();
    Some(of_attributes(&list))
}

#[test]
fn digest_matches_the_developer_guide_algorithm_by_hand() {
    // {"a": String "b"}: 00000001 'a' 00000006 'String' 01 00000001 'b'.
    let mut buf = vec![0, 0, 0, 1, b'a', 0, 0, 0, 6];
    buf.extend_from_slice(b"String");
    buf.extend_from_slice(&[1, 0, 0, 0, 1, b'b']);
    assert_eq!(
        of_attributes(&[("a", "String", Value::Text("b"))]),
        hex_md5(&buf)
    );
    // Order of the input does not matter: the digest sorts by name.
    assert_eq!(
        of_attributes(&[
            ("b", "Number", Value::Text("1")),
            ("a", "Binary", Value::Bytes(&[0, 1]))
        ]),
        of_attributes(&[
            ("a", "Binary", Value::Bytes(&[0, 1])),
            ("b", "Number", Value::Text("1"))
        ])
    );
    assert_eq!(hex_md5(b"hello"), "5d41402abc4b2a76b9719d911017c592");
}
