//! SNS answers that are rules rather than wire format: how a subscription is listed
//! (`PendingConfirmation` until it is confirmed) and the SMS settings calls (Loft sends
//! no SMS: it records the messages, so nobody is opted out and the account is not in the
//! SMS sandbox).
//!
//! Sources: the SNS API Reference (ListSubscriptions: "SubscriptionArn ... PendingConfirmation";
//! CheckIfPhoneNumberIsOptedOut, GetSMSAttributes, SetSMSAttributes, OptInPhoneNumber,
//! ListPhoneNumbersOptedOut, GetSMSSandboxAccountStatus).

use super::{Page, Service};
use crate::error::Result;
use crate::model::SubscriptionRecord;

/// A subscription as ListSubscriptions and ListSubscriptionsByTopic show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubscriptionSummary {
    /// Its ARN, or `PendingConfirmation` while it waits for confirmation.
    pub subscription_arn: String,
    /// The owning account.
    pub owner: String,
    /// Its protocol (`sqs`, `https`, ...).
    pub protocol: String,
    /// Its endpoint.
    pub endpoint: String,
    /// Its topic's ARN.
    pub topic_arn: String,
}

impl Service {
    /// `s` as the list operations show it.
    pub fn subscription_summary(&self, s: &SubscriptionRecord) -> SubscriptionSummary {
        SubscriptionSummary {
            subscription_arn: if s.confirmed {
                self.subscription_arn(s)
            } else {
                "PendingConfirmation".into()
            },
            owner: self.split_key(&s.topic_name).0.to_owned(),
            protocol: s.protocol.clone(),
            endpoint: s.endpoint.clone(),
            topic_arn: self.topic_arn(&s.topic_name),
        }
    }

    /// ListSubscriptions (`topic_arn` `None`) and ListSubscriptionsByTopic, 100 a page.
    /// Errors: `NotFound` (topic), `InvalidParameter` (token).
    pub async fn list_subscription_summaries(
        &self,
        topic_arn: Option<&str>,
        next_token: Option<&str>,
    ) -> Result<Page<SubscriptionSummary>> {
        let page = self.list_subscriptions(topic_arn, next_token).await?;
        Ok(Page {
            items: page
                .items
                .iter()
                .map(|s| self.subscription_summary(s))
                .collect(),
            next_token: page.next_token,
        })
    }

    /// CheckIfPhoneNumberIsOptedOut: never, as Loft sends no SMS.
    ///
    /// Errors: `InvalidParameter` "Invalid parameter: PhoneNumber Reason: input incorrectly
    /// formatted" (AWS's answer) unless [`crate::names::is_phone_number`].
    pub fn sms_opted_out(&self, phone_number: &str) -> Result<bool> {
        check_phone_number(phone_number)?;
        Ok(false)
    }

    /// GetSMSAttributes: the account's SMS settings; Loft keeps none.
    pub fn sms_attributes(&self, _names: &[String]) -> std::collections::BTreeMap<String, String> {
        Default::default()
    }

    /// SetSMSAttributes: accepted; Loft sends no SMS, so nothing changes.
    pub fn set_sms_attributes(&self, _attributes: std::collections::BTreeMap<String, String>) {}

    /// OptInPhoneNumber: accepted; no number is opted out.
    ///
    /// Errors: as [`Service::sms_opted_out`].
    pub fn opt_in_phone_number(&self, phone_number: &str) -> Result<()> {
        check_phone_number(phone_number)
    }

    /// ListPhoneNumbersOptedOut: none.
    pub fn phone_numbers_opted_out(&self, _next_token: Option<&str>) -> Page<String> {
        Page {
            items: Vec::new(),
            next_token: None,
        }
    }

    /// GetSMSSandboxAccountStatus: not in the sandbox.
    pub fn sms_sandbox(&self) -> bool {
        false
    }
}

/// The phone number of OptInPhoneNumber and CheckIfPhoneNumberIsOptedOut. Errors:
/// `InvalidParameter` "Invalid parameter: PhoneNumber Reason: input incorrectly formatted".
fn check_phone_number(number: &str) -> Result<()> {
    if crate::names::is_phone_number(number) {
        Ok(())
    } else {
        Err(super::topics::invalid(
            "PhoneNumber Reason: input incorrectly formatted",
        ))
    }
}
