//! SNS filter policies: parsing in both scopes and matching against a message's
//! attributes and body.
//!
//! Input: the policy (JSON), then optionally a line `---` and a message body. The body's
//! top-level members also serve as message attributes (strings as `String`, numbers as
//! `Number`, arrays as `String.Array`, anything else as `String` of its JSON text). Without
//! a body, the policy text is the body too.
#![no_main]

use std::collections::BTreeMap;

use libfuzzer_sys::fuzz_target;
use loft_core::filter_policy::{FilterPolicy, FilterPolicyScope};
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (policy, body) = text.split_once("\n---\n").unwrap_or((text, text));
    let mut attributes = BTreeMap::new();
    if let Ok(Value::Object(members)) = serde_json::from_str::<Value>(body) {
        for (name, value) in members {
            let attribute = match value {
                Value::String(s) => ("String".to_owned(), s),
                Value::Number(n) => ("Number".to_owned(), n.to_string()),
                v @ Value::Array(_) => ("String.Array".to_owned(), v.to_string()),
                other => ("String".to_owned(), other.to_string()),
            };
            attributes.insert(name, attribute);
        }
    }
    for scope in [
        FilterPolicyScope::MessageAttributes,
        FilterPolicyScope::MessageBody,
    ] {
        if let Ok(p) = FilterPolicy::parse(policy, scope) {
            let _ = p.matches_message(&attributes, body);
            let _ = p.matches_attributes(&attributes);
            let _ = p.matches_body_text(body);
        }
    }
});
