//! SNS answers that are rules rather than wire format: how a subscription is listed
//! (`PendingConfirmation` until it is confirmed) and the SMS settings calls (Loft sends
//! no SMS: it records the messages, so nobody is opted out and the account is not in the
//! SMS sandbox).
//!
//! Sources: the SNS API Reference (ListSubscriptions: "SubscriptionArn ... PendingConfirmation";
//! CheckIfPhoneNumberIsOptedOut, GetSMSAttributes, SetSMSAttributes, OptInPhoneNumber,
//! ListPhoneNumbersOptedOut, GetSMSSandboxAccountStatus).

use std::collections::BTreeMap;

use super::topics::Page;
use super::Sns;
use crate::error::{Error, ErrorCode, Result};
use crate::model::SubscriptionRecord;
use crate::names::Scope;

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

impl Sns {
    /// `s` as the list operations show it.
    pub fn subscription_summary(&self, s: &SubscriptionRecord) -> SubscriptionSummary {
        SubscriptionSummary {
            subscription_arn: if s.confirmed {
                self.subscription_arn(s)
            } else {
                "PendingConfirmation".into()
            },
            owner: self.subscription_owner(s),
            protocol: s.protocol.as_str().to_owned(),
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

    /// GetSMSAttributes: the SMS settings of `scope` (the caller's account and region;
    /// SNS keeps them per account and region) as SetSMSAttributes stored them, with AWS's
    /// default `MonthlySpendLimit` of `"1"` (US dollars) until one is set. With `names`,
    /// only those.
    ///
    /// Errors: `InternalError` when storage fails.
    pub async fn sms_attributes(
        &self,
        scope: Scope<'_>,
        names: &[String],
    ) -> Result<BTreeMap<String, String>> {
        let mut all = BTreeMap::from([("MonthlySpendLimit".to_owned(), "1".to_owned())]);
        all.extend(self.store.sms_attributes(&sms_scope(scope)).await?);
        if !names.is_empty() {
            all.retain(|k, _| names.contains(k));
        }
        Ok(all)
    }

    /// SetSMSAttributes: validates each attribute as AWS does and stores them for `scope`
    /// (the caller's account and region; Loft sends no SMS; the settings are kept and
    /// reported).
    ///
    /// Errors: `InvalidParameter` (400) "{name} is not a valid attribute" for a name outside
    /// [`SMS_ATTRIBUTES`], "{name} is invalid" for a value AWS refuses (DefaultSMSType other
    /// than `Promotional`/`Transactional`; DefaultSenderID not 1 to 11 letters and digits
    /// with a letter; MonthlySpendLimit not a whole number of dollars;
    /// DeliveryStatusSuccessSamplingRate not 0 to 100; DeliveryStatusIAMRole not an IAM
    /// role ARN); `InternalError` when storage fails.
    pub async fn set_sms_attributes(
        &self,
        scope: Scope<'_>,
        attributes: BTreeMap<String, String>,
    ) -> Result<()> {
        for (name, value) in &attributes {
            check_sms_attribute(name, value)?;
        }
        if attributes.is_empty() {
            return Ok(());
        }
        self.store
            .set_sms_attributes(&sms_scope(scope), attributes)
            .await
    }

    /// OptInPhoneNumber: accepted; no number is opted out.
    ///
    /// Errors: as [`Sns::sms_opted_out`].
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
        Err(super::sns_errors::invalid(
            "PhoneNumber Reason: input incorrectly formatted",
        ))
    }
}

/// The attributes SetSMSAttributes takes (SNS API Reference, SetSMSAttributes).
pub const SMS_ATTRIBUTES: &[&str] = &[
    "MonthlySpendLimit",
    "DeliveryStatusIAMRole",
    "DeliveryStatusSuccessSamplingRate",
    "DefaultSenderID",
    "DefaultSMSType",
    "UsageReportS3Bucket",
];

/// One SetSMSAttributes attribute against AWS's rules (see [`Sns::set_sms_attributes`]).
fn check_sms_attribute(name: &str, value: &str) -> Result<()> {
    let fail =
        |message: String| -> Result<()> { Err(Error::new(ErrorCode::InvalidParameter, message)) };
    if !SMS_ATTRIBUTES.contains(&name) {
        return fail(format!("{name} is not a valid attribute"));
    }
    let ok = match name {
        "DefaultSMSType" => value == "Promotional" || value == "Transactional",
        "DefaultSenderID" => {
            (1..=11).contains(&value.len())
                && value.bytes().all(|b| b.is_ascii_alphanumeric())
                && value.bytes().any(|b| b.is_ascii_alphabetic())
        }
        "MonthlySpendLimit" => !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()),
        "DeliveryStatusSuccessSamplingRate" => value.parse::<u8>().is_ok_and(|v| v <= 100),
        "DeliveryStatusIAMRole" => value.is_empty() || value.starts_with("arn:aws:iam::"),
        _ => true,
    };
    if ok {
        Ok(())
    } else {
        fail(format!("{name} is invalid"))
    }
}

/// The key SMS settings are kept under: the account and region, `ACCOUNT:REGION` (the
/// default account's settings from before accounts are under the configured ones).
fn sms_scope(scope: Scope<'_>) -> String {
    format!("{}:{}", scope.account, scope.region)
}
