//! SNS HTTP/S delivery retry policies (placeholder until the full policy lands): AWS's
//! default policy only.
//!
//! Source: SNS Developer Guide, "Amazon SNS message delivery retries".

use crate::error::Result;

/// A delivery retry policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryPolicy {
    /// Retries after the first attempt.
    pub num_retries: u32,
    /// Delay between retries, seconds.
    pub min_delay_target: u32,
}

impl DeliveryPolicy {
    /// AWS's default HTTP/S policy: 3 retries, 20 s apart.
    pub fn default_http() -> Self {
        DeliveryPolicy {
            num_retries: 3,
            min_delay_target: 20,
        }
    }

    /// Parses a topic DeliveryPolicy.
    pub fn parse_topic(_json: &str) -> Result<Self> {
        Ok(Self::default_http())
    }

    /// Parses a subscription DeliveryPolicy.
    pub fn parse_subscription(_json: &str) -> Result<Self> {
        Ok(Self::default_http())
    }

    /// The policy in force.
    pub fn effective(_topic: Option<&str>, _subscription: Option<&str>) -> Self {
        Self::default_http()
    }

    /// Seconds before retry `retry` (1-based), `None` when exhausted.
    pub fn delay_before_retry(&self, retry: u32) -> Option<u32> {
        (retry <= self.num_retries).then_some(self.min_delay_target)
    }

    /// AWS's JSON form.
    pub fn to_json(&self) -> String {
        serde_json::json!({"http": {"defaultHealthyRetryPolicy": {
            "minDelayTarget": self.min_delay_target, "maxDelayTarget": self.min_delay_target,
            "numRetries": self.num_retries, "numMaxDelayRetries": 0, "numNoDelayRetries": 0,
            "numMinDelayRetries": 0, "backoffFunction": "linear"},
            "disableSubscriptionOverrides": false, "defaultRequestPolicy": {"headerContentType": "text/plain; charset=UTF-8"}}})
        .to_string()
    }
}
