//! SNS subscription filter policies (placeholder until the full matcher lands): parses a
//! policy and matches exact string values only.
//!
//! Source: SNS Developer Guide, "Amazon SNS message filtering".

use std::collections::BTreeMap;

use serde_json::Value;

use crate::error::{Error, ErrorCode, Result};

/// Which part of a message a policy applies to (`FilterPolicyScope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilterPolicyScope {
    /// The message attributes (default).
    MessageAttributes,
    /// The message body, parsed as JSON.
    MessageBody,
}

/// A parsed filter policy.
#[derive(Debug, Clone, PartialEq)]
pub struct FilterPolicy {
    policy: serde_json::Map<String, Value>,
}

impl FilterPolicy {
    /// Parses a policy. Errors: `InvalidParameter` for anything but a JSON object.
    pub fn parse(policy_json: &str, _scope: FilterPolicyScope) -> Result<FilterPolicy> {
        match serde_json::from_str::<Value>(policy_json) {
            Ok(Value::Object(policy)) => Ok(FilterPolicy { policy }),
            _ => Err(Error::new(
                ErrorCode::InvalidParameter,
                "Invalid parameter: FilterPolicy: failed to parse JSON.",
            )),
        }
    }

    /// Whether message attributes (name to (DataType, Value)) match.
    pub fn matches_attributes(&self, attributes: &BTreeMap<String, (String, String)>) -> bool {
        self.policy.iter().all(|(k, allowed)| {
            let Some((_, v)) = attributes.get(k) else {
                return false;
            };
            allowed
                .as_array()
                .is_some_and(|a| a.iter().any(|x| x.as_str() == Some(v.as_str())))
        })
    }

    /// Whether a JSON body matches.
    pub fn matches_body(&self, body: &Value) -> bool {
        self.policy.iter().all(|(k, allowed)| {
            let Some(v) = body.get(k) else { return false };
            allowed.as_array().is_some_and(|a| a.contains(v))
        })
    }
}
