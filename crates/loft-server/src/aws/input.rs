//! Typed reads of an operation's input, decoded into AWS's JSON input shape by either
//! protocol. Each accessor returns AWS's error for a missing or mistyped parameter.

use std::collections::BTreeMap;

use loft_core::message::{self, MessageAttributeValue, MessageAttributes};
use loft_core::{Error, Result};
use serde_json::Value;

/// One operation's input (or one batch entry), as a JSON object.
#[derive(Clone, Copy)]
pub struct Input<'a>(pub &'a Value);

fn wrong_type(name: &str, value: &Value) -> Error {
    Error::invalid(format!("Value {value} for parameter {name} is invalid."))
}

impl<'a> Input<'a> {
    fn get(&self, name: &str) -> Option<&'a Value> {
        self.0.get(name).filter(|v| !v.is_null())
    }

    /// The raw value of a parameter, `None` when absent or null.
    pub fn get_raw(&self, name: &str) -> Option<&'a Value> {
        self.get(name)
    }

    /// An optional string parameter. Errors: `InvalidParameterValue` for a non-string.
    pub fn str(&self, name: &str) -> Result<Option<&'a str>> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.as_str())),
            Some(v) => Err(wrong_type(name, v)),
        }
    }

    /// A required string parameter. Errors: `MissingParameter`, `InvalidParameterValue`.
    pub fn req_str(&self, name: &str) -> Result<&'a str> {
        self.str(name)?.ok_or_else(|| Error::missing(name))
    }

    /// An optional integer (a JSON number or, from the Query protocol, a numeric string).
    /// Errors: `InvalidParameterValue`.
    pub fn int(&self, name: &str) -> Result<Option<i64>> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Number(n)) => n
                .as_i64()
                .map(Some)
                .ok_or_else(|| wrong_type(name, &Value::Number(n.clone()))),
            Some(Value::String(s)) => s
                .trim()
                .parse::<i64>()
                .map(Some)
                .map_err(|_| wrong_type(name, &Value::String(s.clone()))),
            Some(v) => Err(wrong_type(name, v)),
        }
    }

    /// A list of strings (absent: empty). Errors: `InvalidParameterValue`.
    pub fn str_list(&self, name: &str) -> Result<Vec<String>> {
        match self.get(name) {
            None => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| match v {
                    Value::String(s) => Ok(s.clone()),
                    other => Err(wrong_type(name, other)),
                })
                .collect(),
            Some(v) => Err(wrong_type(name, v)),
        }
    }

    /// A map of strings (absent: empty). Errors: `InvalidParameterValue`.
    pub fn str_map(&self, name: &str) -> Result<BTreeMap<String, String>> {
        match self.get(name) {
            None => Ok(BTreeMap::new()),
            Some(Value::Object(map)) => map
                .iter()
                .map(|(k, v)| match v {
                    Value::String(s) => Ok((k.clone(), s.clone())),
                    other => Err(wrong_type(&format!("{name}.{k}"), other)),
                })
                .collect(),
            Some(v) => Err(wrong_type(name, v)),
        }
    }

    /// A list of objects (batch entries). Errors: `InvalidParameterValue`.
    pub fn objects(&self, name: &str) -> Result<Vec<Input<'a>>> {
        match self.get(name) {
            None => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| {
                    if v.is_object() {
                        Ok(Input(v))
                    } else {
                        Err(wrong_type(name, v))
                    }
                })
                .collect(),
            Some(v) => Err(wrong_type(name, v)),
        }
    }

    /// MessageAttributes / MessageSystemAttributes: name to
    /// `{DataType, StringValue | BinaryValue (base64)}`.
    /// Errors: `InvalidParameterValue` for malformed values or base64.
    pub fn message_attributes(&self, name: &str) -> Result<MessageAttributes> {
        let mut out = MessageAttributes::new();
        let Some(value) = self.get(name) else {
            return Ok(out);
        };
        let Value::Object(map) = value else {
            return Err(wrong_type(name, value));
        };
        for (attr, v) in map {
            let entry = Input(v);
            if !v.is_object() {
                return Err(wrong_type(&format!("{name}.{attr}"), v));
            }
            let data_type = entry.str("DataType")?.ok_or_else(|| {
                Error::invalid(format!(
                    "The message attribute '{attr}' must contain non-empty message attribute type."
                ))
            })?;
            let binary_value = entry
                .str("BinaryValue")?
                .map(message::base64_decode)
                .transpose()?;
            if !entry.str_list("StringListValues")?.is_empty()
                || !entry.str_list("BinaryListValues")?.is_empty()
            {
                return Err(Error::invalid(format!(
                    "Message attribute list values in '{attr}' are not supported."
                )));
            }
            out.insert(
                attr.clone(),
                MessageAttributeValue {
                    data_type: data_type.to_owned(),
                    string_value: entry.str("StringValue")?.map(str::to_owned),
                    binary_value,
                },
            );
        }
        Ok(out)
    }
}

/// Each service's wording of the batch errors.
pub struct BatchTexts {
    /// EmptyBatchRequest.
    pub empty: &'static str,
    /// TooManyEntriesInBatchRequest.
    pub too_many: &'static str,
    /// InvalidBatchEntryId.
    pub invalid_id: &'static str,
    /// BatchEntryIdsNotDistinct.
    pub repeated: &'static str,
}

/// The ids of a batch's entries, checked as SQS and SNS check them: 1..=10 entries, ids of
/// 1..=80 alphanumerics, hyphens and underscores, all distinct. Errors:
/// `EmptyBatchRequest`, `TooManyEntriesInBatchRequest`, `MissingParameter` (an entry
/// without Id), `InvalidBatchEntryId`, `BatchEntryIdsNotDistinct`.
pub fn batch_ids<'a>(entries: &[Input<'a>], texts: &BatchTexts) -> Result<Vec<&'a str>> {
    use loft_core::ErrorCode;
    if entries.is_empty() {
        return Err(Error::new(ErrorCode::EmptyBatchRequest, texts.empty));
    }
    if entries.len() > 10 {
        return Err(Error::new(
            ErrorCode::TooManyEntriesInBatchRequest,
            texts.too_many.replace("{sent}", &entries.len().to_string()),
        ));
    }
    let mut ids: Vec<&'a str> = Vec::with_capacity(entries.len());
    for e in entries {
        let id = e.req_str("Id")?;
        let valid = !id.is_empty()
            && id.len() <= 80
            && id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !valid {
            return Err(Error::new(ErrorCode::InvalidBatchEntryId, texts.invalid_id));
        }
        if ids.contains(&id) {
            return Err(Error::new(
                ErrorCode::BatchEntryIdsNotDistinct,
                texts.repeated,
            ));
        }
        ids.push(id);
    }
    Ok(ids)
}

/// Message attributes in AWS's JSON output shape.
pub fn attributes_json(attributes: &MessageAttributes) -> Value {
    let mut map = serde_json::Map::new();
    for (name, v) in attributes {
        let mut o = serde_json::Map::new();
        if let Some(s) = &v.string_value {
            o.insert("StringValue".into(), Value::String(s.clone()));
        }
        if let Some(b) = &v.binary_value {
            o.insert(
                "BinaryValue".into(),
                Value::String(message::base64_encode(b)),
            );
        }
        o.insert("DataType".into(), Value::String(v.data_type.clone()));
        map.insert(name.clone(), Value::Object(o));
    }
    Value::Object(map)
}
