//! SNS FIFO topics' message archive (SNS Developer Guide, "Amazon SNS message archiving
//! and replay for FIFO topics"): the topic's `ArchivePolicy`
//! (`{"MessageRetentionPeriod": "N"}`, N days from 1 to 365) keeps every message
//! published to it in the Store for N days, and GetTopicAttributes reports
//! `BeginningArchiveTime`, the earliest point a replay can start from.
//!
//! The archive's start is kept with the topic under [`ARCHIVE_START_ATTRIBUTE`] (hidden
//! from GetTopicAttributes); removing the policy (`{}` or an empty value) ends the archive
//! and drops what it held.

use serde_json::{json, Value};

use super::envelope::PublishRequest;
use super::sns_errors::invalid;
use crate::attributes::TopicConfig;
use crate::clock::iso_timestamp;
use crate::error::Result;
use crate::message;
use crate::model::{ArchiveEntry, TopicRecord};

/// Topic attribute holding when the archive began (ms since the epoch, decimal); not an
/// AWS attribute, never listed.
pub use crate::attributes::ARCHIVE_START_ATTRIBUTE;

/// The shortest and longest MessageRetentionPeriod, days (AWS::SNS::Topic ArchivePolicy:
/// "a retention period from 1 to 365 days").
pub const MIN_RETENTION_DAYS: u32 = 1;
/// See [`MIN_RETENTION_DAYS`].
pub const MAX_RETENTION_DAYS: u32 = 365;

const DAY_MS: i64 = 86_400_000;

/// A validated ArchivePolicy value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArchiveSetting {
    /// Keep messages this many days.
    Keep(u32),
    /// `{}` or an empty value: no archive.
    Off,
}

impl ArchiveSetting {
    /// The value GetTopicAttributes shows: `{"MessageRetentionPeriod":"N"}` (the period as
    /// a string, as AWS records it), or empty for [`ArchiveSetting::Off`].
    pub fn attribute(self) -> String {
        match self {
            ArchiveSetting::Keep(days) => {
                json!({"MessageRetentionPeriod": days.to_string()}).to_string()
            }
            ArchiveSetting::Off => String::new(),
        }
    }
}

/// Validates an ArchivePolicy for a topic (`fifo`: whether it is a FIFO topic).
///
/// Errors (`InvalidParameter`, "Invalid parameter: Attributes Reason: ..."): a standard
/// topic (archiving is for FIFO topics only), text that is not a JSON object, a member
/// other than `MessageRetentionPeriod`, a period that is not a whole number of days
/// (a string or a number) from 1 to 365.
pub fn parse_policy(value: &str, fifo: bool) -> Result<ArchiveSetting> {
    let bad = |why: &str| invalid(&format!("Attributes Reason: ArchivePolicy: {why}"));
    if !fifo {
        return Err(invalid(
            "Attributes Reason: ArchivePolicy can only be set for FIFO topics",
        ));
    }
    if value.trim().is_empty() {
        return Ok(ArchiveSetting::Off);
    }
    let doc: Value = serde_json::from_str(value).map_err(|_| bad("invalid JSON"))?;
    let Some(map) = doc.as_object() else {
        return Err(bad("must be a JSON object"));
    };
    if map.is_empty() {
        return Ok(ArchiveSetting::Off);
    }
    if let Some(other) = map.keys().find(|k| *k != "MessageRetentionPeriod") {
        return Err(bad(&format!("unknown member {other}")));
    }
    let period = &map["MessageRetentionPeriod"];
    let days = match period {
        Value::String(s) => s.trim().parse::<i64>().ok(),
        Value::Number(n) => n.as_i64(),
        _ => None,
    };
    match days {
        Some(d) if (i64::from(MIN_RETENTION_DAYS)..=i64::from(MAX_RETENTION_DAYS)).contains(&d) => {
            Ok(ArchiveSetting::Keep(d as u32))
        }
        _ => Err(bad(&format!(
            "MessageRetentionPeriod must be a whole number of days from {MIN_RETENTION_DAYS} to {MAX_RETENTION_DAYS}"
        ))),
    }
}

/// The retention (days) of the topic's archive, if it has one.
pub fn retention_days(topic: &TopicRecord) -> Option<u32> {
    let value = TopicConfig::from_attributes(&topic.attributes).archive_policy?;
    match parse_policy(&value, true) {
        Ok(ArchiveSetting::Keep(days)) => Some(days),
        _ => None,
    }
}

/// BeginningArchiveTime at `now_ms` (ISO 8601, milliseconds): the later of the archive's
/// start and `now_ms` less the retention period (SNS API Reference, GetTopicAttributes).
pub fn beginning_archive_time(topic: &TopicRecord, now_ms: i64) -> Option<String> {
    let days = retention_days(topic)?;
    let start: i64 = TopicConfig::from_attributes(&topic.attributes)
        .archive_start_ms
        .unwrap_or(topic.created_at_ms);
    Some(iso_timestamp(start.max(now_ms - i64::from(days) * DAY_MS)))
}

/// What the archive keeps of publish `req` to `topic` at `now_ms` (after inbound data
/// protection): everything a replay needs to build the deliveries again. `None` when the
/// topic keeps no archive.
pub fn entry(topic: &TopicRecord, req: &PublishRequest, now_ms: i64) -> Option<ArchiveEntry> {
    let days = retention_days(topic)?;
    let published = json!({
        "Message": req.message,
        "Subject": req.subject,
        "MessageStructure": req.message_structure,
        "MessageAttributes": message::encode_attributes(&req.message_attributes),
        "MessageGroupId": req.group_id,
        "MessageDeduplicationId": req.dedup_id,
        "Timestamp": iso_timestamp(now_ms),
    });
    Some(ArchiveEntry {
        published: published.to_string(),
        expires_at_ms: now_ms + i64::from(days) * DAY_MS,
        seal: crate::attributes::topic_seal(topic),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_as_aws_bounds_them() {
        assert_eq!(
            parse_policy(r#"{"MessageRetentionPeriod":"30"}"#, true).unwrap(),
            ArchiveSetting::Keep(30)
        );
        assert_eq!(
            parse_policy(r#"{"MessageRetentionPeriod": 365}"#, true).unwrap(),
            ArchiveSetting::Keep(365)
        );
        assert_eq!(parse_policy("{}", true).unwrap(), ArchiveSetting::Off);
        assert_eq!(parse_policy("", true).unwrap(), ArchiveSetting::Off);
        for bad in [
            r#"{"MessageRetentionPeriod":"0"}"#,
            r#"{"MessageRetentionPeriod":"366"}"#,
            r#"{"MessageRetentionPeriod":"1.5"}"#,
            r#"{"MessageRetentionPeriod":true}"#,
            r#"{"MessageRetentionPeriod":"7","Other":"1"}"#,
            r#"["MessageRetentionPeriod"]"#,
            "not json",
        ] {
            let e = parse_policy(bad, true).unwrap_err();
            assert!(
                e.message
                    .starts_with("Invalid parameter: Attributes Reason: ArchivePolicy"),
                "{bad}: {}",
                e.message
            );
        }
        let e = parse_policy(r#"{"MessageRetentionPeriod":"30"}"#, false).unwrap_err();
        assert_eq!(
            e.message,
            "Invalid parameter: Attributes Reason: ArchivePolicy can only be set for FIFO topics"
        );
        assert_eq!(
            ArchiveSetting::Keep(7).attribute(),
            r#"{"MessageRetentionPeriod":"7"}"#
        );
    }
}
