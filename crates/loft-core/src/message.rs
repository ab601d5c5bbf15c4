//! Message attributes, their validation and AWS's MD5 digests.
//!
//! Sources: SQS Developer Guide "Amazon SQS message attributes" (names, data types, limits)
//! and "Calculating the MD5 message digest for message attributes" (the digest algorithm);
//! SendMessage "MessageBody" (the allowed character set).

use std::collections::BTreeMap;

use base64::Engine;
use md5::{Digest, Md5};
use serde::{Deserialize, Serialize};

use crate::error::{Error, ErrorCode, Result};

/// Most message attributes per message.
pub const MAX_ATTRIBUTES: usize = 10;

/// One message attribute value (`MessageAttributeValue`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MessageAttributeValue {
    /// `String`, `Number`, `Binary`, or one of those with a `.custom` suffix.
    #[serde(rename = "DataType")]
    pub data_type: String,
    /// The value of String and Number attributes.
    #[serde(
        rename = "StringValue",
        skip_serializing_if = "Option::is_none",
        default
    )]
    pub string_value: Option<String>,
    /// The value of Binary attributes (raw bytes; base64 on the wire and in storage).
    #[serde(
        rename = "BinaryValue",
        skip_serializing_if = "Option::is_none",
        default,
        with = "base64_opt"
    )]
    pub binary_value: Option<Vec<u8>>,
}

mod base64_opt {
    use base64::Engine;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &Option<Vec<u8>>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(b) => s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(b)),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<u8>>, D::Error> {
        let s: Option<String> = Option::deserialize(d)?;
        s.map(|s| {
            base64::engine::general_purpose::STANDARD
                .decode(s)
                .map_err(serde::de::Error::custom)
        })
        .transpose()
    }
}

/// Attributes by name, in name order (the order the digest needs).
pub type MessageAttributes = BTreeMap<String, MessageAttributeValue>;

impl MessageAttributeValue {
    /// A String attribute.
    pub fn string(value: impl Into<String>) -> Self {
        MessageAttributeValue {
            data_type: "String".into(),
            string_value: Some(value.into()),
            binary_value: None,
        }
    }

    /// The base type: `String`, `Number` or `Binary` (the part before any `.`).
    pub fn base_type(&self) -> &str {
        self.data_type.split('.').next().unwrap_or("")
    }

    /// Bytes this attribute counts towards the message size: name, type and value.
    pub fn size(&self, name: &str) -> usize {
        name.len()
            + self.data_type.len()
            + self.string_value.as_ref().map_or(0, |s| s.len())
            + self.binary_value.as_ref().map_or(0, |b| b.len())
    }
}

/// Total bytes of a set of attributes as they count towards MaximumMessageSize.
pub fn attributes_size(attributes: &MessageAttributes) -> usize {
    attributes.iter().map(|(n, v)| v.size(n)).sum()
}

/// Checks message attributes as SendMessage does.
///
/// Errors: `InvalidParameterValue` for more than 10 attributes, bad names, unknown data
/// types, missing or mismatched values, non-numeric Numbers, invalid characters (in a
/// value or a type).
pub fn validate_attributes(attributes: &MessageAttributes) -> Result<()> {
    if attributes.len() > MAX_ATTRIBUTES {
        return Err(Error::invalid(format!(
            "Number of message attributes [{}] exceeds the allowed maximum [{MAX_ATTRIBUTES}].",
            attributes.len()
        )));
    }
    for (name, value) in attributes {
        validate_attribute_name(name)?;
        if value.data_type.is_empty() {
            return Err(Error::invalid(format!(
                "The message attribute '{name}' must contain non-empty message attribute type."
            )));
        }
        if value.data_type.len() > 256 {
            return Err(Error::invalid(format!(
                "The message attribute '{name}' has a type longer than 256 characters."
            )));
        }
        // A custom type label (`String.x`) is text the receiver gets back, so it takes the
        // characters a value may have (AWS's words for this refusal are not recorded).
        if !valid_characters(&value.data_type) {
            return Err(Error::new(
                ErrorCode::InvalidParameterValue,
                format!("Message (user) attribute '{name}' type contains invalid characters."),
            ));
        }
        match value.base_type() {
            "String" | "Number" => {
                let Some(s) = &value.string_value else {
                    return Err(Error::invalid(format!(
                        "The message attribute '{name}' with type '{}' must use field 'String'.",
                        value.base_type()
                    )));
                };
                if value.binary_value.is_some() {
                    return Err(Error::invalid(format!(
                        "The message attribute '{name}' with type '{}' must use field 'String'.",
                        value.base_type()
                    )));
                }
                if s.is_empty() {
                    return Err(Error::invalid(format!(
                        "Message (user) attribute '{name}' must contain a non-empty value of type '{}'.",
                        value.data_type
                    )));
                }
                if value.base_type() == "Number" && !is_number(s) {
                    return Err(Error::invalid(format!(
                        "Can't cast the value of message (user) attribute '{name}' to a number."
                    )));
                }
                if !valid_characters(s) {
                    return Err(Error::new(
                        ErrorCode::InvalidParameterValue,
                        format!("Message (user) attribute '{name}' value contains invalid characters."),
                    ));
                }
            }
            "Binary" => {
                if value.binary_value.is_none() || value.string_value.is_some() {
                    return Err(Error::invalid(format!(
                        "The message attribute '{name}' with type 'Binary' must use field 'Binary'."
                    )));
                }
            }
            _ => {
                return Err(Error::invalid(format!(
                    "The type of message (user) attribute '{name}' is invalid. You must use only the following supported type prefixes: Binary, Number, String."
                )))
            }
        }
    }
    Ok(())
}

/// Checks a message attribute name: 1-256 characters, Unicode letters and digits and
/// `_-.`, no leading, trailing or
/// doubled period, no `AWS.`/`Amazon.` prefix in any case (SQS and SNS share the rules).
/// Errors: `InvalidParameterValue`.
pub(crate) fn validate_attribute_name(name: &str) -> Result<()> {
    let bad = |why: &str| Error::invalid(format!("Message (user) attribute name '{name}' {why}"));
    if name.is_empty() {
        return Err(Error::invalid(
            "The message attribute name must not be empty.",
        ));
    }
    if name.chars().count() > 256 {
        return Err(bad("is longer than 256 characters."));
    }
    // "Alphanumeric" is Unicode's: AWS takes `attr.1øßä` and refuses `§`, `!`, `(`.
    if !name
        .chars()
        .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'))
    {
        return Err(bad("contains invalid characters."));
    }
    let lower = name.to_ascii_lowercase();
    if lower.starts_with("aws.") || lower.starts_with("amazon.") {
        return Err(bad("is reserved for use by Amazon."));
    }
    if name.starts_with('.') || name.ends_with('.') || name.contains("..") {
        return Err(bad(
            "must not start or end with a period, or have consecutive periods.",
        ));
    }
    Ok(())
}

fn is_number(s: &str) -> bool {
    let t = s.trim();
    !t.is_empty() && t.parse::<f64>().is_ok_and(|f| f.is_finite())
}

/// Whether every character is in SQS's allowed set: `#x9 | #xA | #xD | #x20-#xD7FF |
/// #xE000-#xFFFD | #x10000-#x10FFFF`.
pub fn valid_characters(s: &str) -> bool {
    valid_ascii(s.as_bytes())
        || s.chars().all(|c| {
            matches!(c, '\u{9}' | '\u{A}' | '\u{D}' | '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..='\u{10FFFF}')
        })
}

/// Whether `bytes` are all ASCII characters of SQS's set (`#x9 | #xA | #xD | #x20-#x7F`):
/// the common case, checked a block of bytes at a time without decoding characters (false
/// for any non-ASCII byte, which [`valid_characters`] then checks by character).
fn valid_ascii(bytes: &[u8]) -> bool {
    bytes.chunks(64).all(|block| {
        !block.iter().fold(false, |bad, &b| {
            bad | (b >= 0x80) | ((b < 0x20) & (b != b'\t') & (b != b'\n') & (b != b'\r'))
        })
    })
}

/// Checks a message body. Errors: `InvalidMessageContents` for characters outside the set;
/// `MissingParameter` for an empty body.
pub fn validate_body(body: &str) -> Result<()> {
    if body.is_empty() {
        return Err(Error::missing("MessageBody"));
    }
    if !valid_characters(body) {
        return Err(Error::new(
            ErrorCode::InvalidMessageContents,
            "Invalid characters found. Valid unicode characters are #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF",
        ));
    }
    Ok(())
}

/// Lower-case hex MD5 of `data` (MD5OfMessageBody).
pub fn md5_hex(data: &[u8]) -> String {
    hex::encode(Md5::digest(data))
}

/// MD5OfMessageAttributes / MD5OfMessageSystemAttributes by AWS's algorithm: for each
/// attribute in name order, the 4-byte big-endian length and bytes of the name, of the data
/// type, a transport byte (1 string, 2 binary), then the length and bytes of the value.
/// Returns `None` for an empty set (AWS omits the field).
pub fn md5_of_attributes(attributes: &MessageAttributes) -> Option<String> {
    if attributes.is_empty() {
        return None;
    }
    fn put(h: &mut Md5, bytes: &[u8]) {
        h.update((bytes.len() as u32).to_be_bytes());
        h.update(bytes);
    }
    let mut h = Md5::new();
    for (name, value) in attributes {
        put(&mut h, name.as_bytes());
        put(&mut h, value.data_type.as_bytes());
        if let Some(b) = &value.binary_value {
            h.update([2u8]);
            put(&mut h, b);
        } else {
            h.update([1u8]);
            put(
                &mut h,
                value.string_value.as_deref().unwrap_or("").as_bytes(),
            );
        }
    }
    Some(hex::encode(h.finalize()))
}

/// Keeps the attributes a receive asked for: `All`, `.*`, exact names, and `prefix.*`.
pub fn select_attributes(attributes: &MessageAttributes, wanted: &[String]) -> MessageAttributes {
    if wanted.is_empty() {
        return MessageAttributes::new();
    }
    attributes
        .iter()
        .filter(|(name, _)| {
            // `All`, `*` and `.*` take every attribute; `Prefix.*` those whose names start
            // with `Prefix` (`Hel.*` takes `Hello` and `Help.Me`), as AWS answers.
            wanted.iter().any(|w| {
                matches!(w.as_str(), "All" | "*" | ".*")
                    || w == *name
                    || w.strip_suffix(".*")
                        .is_some_and(|prefix| name.starts_with(prefix))
            })
        })
        .map(|(n, v)| (n.clone(), v.clone()))
        .collect()
}

/// Encodes attributes for storage (JSON), `None` when empty.
pub fn encode_attributes(attributes: &MessageAttributes) -> Option<String> {
    if attributes.is_empty() {
        None
    } else {
        serde_json::to_string(attributes).ok()
    }
}

/// Decodes stored attributes; an absent or unreadable value is empty.
pub fn decode_attributes(stored: Option<&str>) -> MessageAttributes {
    stored
        .and_then(|s| serde_json::from_str(s).ok())
        .unwrap_or_default()
}

/// Base64 of bytes, as binary attribute values travel.
pub fn base64_encode(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Decodes base64. Errors: `InvalidParameterValue`.
pub fn base64_decode(text: &str) -> Result<Vec<u8>> {
    base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|_| Error::invalid("Binary value is not valid base64."))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_characters_agrees_with_the_character_walk() {
        // Every code point of the first 0x3000 and a few beyond, alone and after a long
        // valid ASCII run (so the block-wise ASCII check sees it past its first block):
        // the answer is the one of the set's definition.
        let allowed = |c: char| matches!(c, '\u{9}' | '\u{A}' | '\u{D}' | '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..='\u{10FFFF}');
        let long = "x".repeat(130);
        let probes =
            (0u32..0x3000).chain([0xD7FF, 0xE000, 0xFFFD, 0xFFFE, 0xFFFF, 0x10000, 0x10FFFF]);
        for c in probes.filter_map(char::from_u32) {
            assert_eq!(
                valid_characters(&c.to_string()),
                allowed(c),
                "{:#x}",
                c as u32
            );
            let s = format!("{long}{c}{long}");
            assert_eq!(
                valid_characters(&s),
                allowed(c),
                "{:#x} in a long body",
                c as u32
            );
        }
        assert!(valid_characters("tab\tnewline\ncr\r DEL\u{7f} ~"));
        assert!(!valid_characters("nul\u{0}"));
        assert!(valid_characters(""));
    }

    #[test]
    fn body_md5() {
        assert_eq!(md5_hex(b"hello"), "5d41402abc4b2a76b9719d911017c592");
    }

    #[test]
    fn attribute_md5_matches_aws_examples() {
        // Value computed by botocore's own validator for
        // {"a": {"DataType": "String", "StringValue": "b"}}.
        let mut attrs = MessageAttributes::new();
        attrs.insert("a".into(), MessageAttributeValue::string("b"));
        let mut buf = Vec::new();
        for part in [&b"a"[..], b"String"] {
            buf.extend((part.len() as u32).to_be_bytes());
            buf.extend(part);
        }
        buf.push(1);
        buf.extend(1u32.to_be_bytes());
        buf.extend(b"b");
        assert_eq!(md5_of_attributes(&attrs).unwrap(), md5_hex(&buf));
        assert_eq!(md5_of_attributes(&MessageAttributes::new()), None);
    }

    #[test]
    fn selection() {
        let mut attrs = MessageAttributes::new();
        for n in ["a.x", "a.y", "b"] {
            attrs.insert(n.into(), MessageAttributeValue::string("v"));
        }
        assert_eq!(select_attributes(&attrs, &["All".into()]).len(), 3);
        assert_eq!(select_attributes(&attrs, &["a.*".into()]).len(), 2);
        assert_eq!(select_attributes(&attrs, &["*".into()]).len(), 3);
        // A prefix pattern matches any name that starts with it, dot or not.
        assert_eq!(select_attributes(&attrs, &["a.x.*".into()]).len(), 1);
        assert_eq!(select_attributes(&attrs, &["a.x.y.*".into()]).len(), 0);
        assert_eq!(select_attributes(&attrs, &["b".into()]).len(), 1);
        assert_eq!(select_attributes(&attrs, &[]).len(), 0);
    }

    #[test]
    fn characters() {
        assert!(validate_body("hello\r\n\t").is_ok());
        assert_eq!(
            validate_body("bad\u{1}").unwrap_err().code,
            ErrorCode::InvalidMessageContents
        );
        assert!(validate_body("\u{FFFE}").is_err());
    }

    #[test]
    fn attribute_validation() {
        let mut attrs = MessageAttributes::new();
        attrs.insert(
            "n".into(),
            MessageAttributeValue {
                data_type: "Number".into(),
                string_value: Some("abc".into()),
                binary_value: None,
            },
        );
        assert!(validate_attributes(&attrs).is_err());
        let mut attrs = MessageAttributes::new();
        attrs.insert("AWS.x".into(), MessageAttributeValue::string("v"));
        assert!(validate_attributes(&attrs).is_err());
        let mut attrs = MessageAttributes::new();
        attrs.insert(
            "ok".into(),
            MessageAttributeValue {
                data_type: "String.custom".into(),
                string_value: Some("v".into()),
                binary_value: None,
            },
        );
        assert!(validate_attributes(&attrs).is_ok());
    }
}
