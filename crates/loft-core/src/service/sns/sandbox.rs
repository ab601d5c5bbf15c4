//! The SMS sandbox's destination numbers and the account's origination numbers:
//! CreateSMSSandboxPhoneNumber, VerifySMSSandboxPhoneNumber, DeleteSMSSandboxPhoneNumber,
//! ListSMSSandboxPhoneNumbers, ListOriginationNumbers.
//!
//! Loft sends no SMS: the one-time password CreateSMSSandboxPhoneNumber "sends" is
//! recorded as an SMS to that number (`GET /_loft/sns/messages?protocol=sms`), where a
//! test or a person reads it to call VerifySMSSandboxPhoneNumber. The numbers are kept per
//! account and region, as SNS keeps an account's SMS settings. Loft's accounts are not in
//! the sandbox ([`Sns::sms_sandbox`]), so the list does not restrict what Publish may
//! reach; it is kept and verified as AWS keeps it, for code that manages it.
//!
//! Sources: the SNS API Reference (the five actions: PhoneNumber "Length Constraints:
//! Maximum length of 20. Pattern: `^(\+[0-9]{8,}|[0-9]{0,9})$`"; OneTimePassword
//! "Minimum length of 5. Maximum length of 8. Pattern: `^[0-9]+$`"; MaxResults 1 to 100
//! for ListSMSSandboxPhoneNumbers, 1 to 30 for ListOriginationNumbers; the errors
//! `ResourceNotFound` (404, "Can't perform the action on the specified resource. Make sure
//! that the resource exists."), `VerificationException` ("Indicates that the one-time
//! password (OTP) used for verification is invalid."), `ValidationException`), the
//! botocore model `sns/2010-03-31` (LanguageCode's values), the SNS Developer Guide, "SMS
//! sandbox". Where AWS's wording of a refusal is not published, the text is Loft's and
//! docs/conformance.md says so.

use super::sns_errors::invalid;
use super::topics::{page_of, Page};
use super::Sns;
use crate::error::{Error, ErrorCode, Result};
use crate::model::{RecordedMessage, SmsSandboxNumber};
use crate::names::Scope;
use crate::service::core::activity::DeliveryOutcome;

/// LanguageCode's values (botocore `LanguageCodeString`); `en-US` when absent.
pub const LANGUAGE_CODES: &[&str] = &[
    "en-US", "en-GB", "es-419", "es-ES", "de-DE", "fr-CA", "fr-FR", "it-IT", "ja-JP", "pt-BR",
    "kr-KR", "zh-CN", "zh-TW",
];

/// ListSMSSandboxPhoneNumbers' largest (and default) page.
pub const SANDBOX_PAGE_MAX: usize = 100;

/// ListOriginationNumbers' largest (and default) page.
pub const ORIGINATION_PAGE_MAX: usize = 30;

/// A destination number as ListSMSSandboxPhoneNumbers shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxNumberSummary {
    /// The number.
    pub phone_number: String,
    /// `Pending` or `Verified`.
    pub status: &'static str,
}

impl Sns {
    /// CreateSMSSandboxPhoneNumber: adds `phone_number` to the SMS sandbox of `scope` (the
    /// caller's account and region) as `Pending` and "sends" it a new six-digit one-time
    /// password: recorded as an SMS to that number from `account`, reading "Your
    /// verification code is NNNNNN" (Loft's text; AWS's SMS is not published). A number
    /// already there gets a new password and keeps its status (a verified number stays
    /// verified).
    ///
    /// Errors: `InvalidParameter` "Invalid parameter: PhoneNumber Reason: input incorrectly
    /// formatted" unless the number matches the API Reference's pattern and length;
    /// "Invalid parameter: LanguageCode" for a value outside [`LANGUAGE_CODES`];
    /// `InternalError` when storage fails.
    pub async fn create_sms_sandbox_number(
        &self,
        account: &str,
        scope: Scope<'_>,
        phone_number: &str,
        language_code: Option<&str>,
    ) -> Result<()> {
        check_sandbox_number(phone_number)?;
        if language_code.is_some_and(|l| !LANGUAGE_CODES.contains(&l)) {
            return Err(invalid("LanguageCode"));
        }
        let key = sandbox_scope(scope);
        let verified = self
            .store
            .sms_sandbox_numbers(&key)
            .await?
            .into_iter()
            .any(|n| n.phone_number == phone_number && n.verified);
        let password = format!("{:06}", uuid::Uuid::new_v4().as_u128() % 1_000_000);
        let now = self.now_ms();
        self.store
            .put_sms_sandbox_number(
                &key,
                SmsSandboxNumber {
                    phone_number: phone_number.to_owned(),
                    verified,
                    one_time_password: password.clone(),
                    created_at_ms: now,
                },
            )
            .await?;
        let record = RecordedMessage {
            id: 0,
            account: self.stored_account(account),
            protocol: "sms".to_owned(),
            endpoint: phone_number.to_owned(),
            topic_arn: None,
            subject: None,
            message: format!("Your verification code is {password}"),
            sender: None,
            created_at_ms: now,
            seal: None,
        };
        self.store
            .publish(Vec::new(), Vec::new(), vec![record])
            .await?;
        self.activity.delivery("sms", DeliveryOutcome::Recorded, 1);
        Ok(())
    }

    /// VerifySMSSandboxPhoneNumber: marks `phone_number` of `scope`'s sandbox `Verified`
    /// when `one_time_password` is the last one sent to it. A verified number verified
    /// again with its password stays verified.
    ///
    /// Errors: `InvalidParameter` for a malformed number (as
    /// [`Sns::create_sms_sandbox_number`]) or "Invalid parameter: OneTimePassword" for a
    /// password that is not 5 to 8 digits; `SnsResourceNotFound` (404, the API
    /// Reference's sentence) when the number is not in the sandbox;
    /// `VerificationException` (400) "Invalid one-time password" (Loft's words) for
    /// another password; `InternalError` when storage fails.
    pub async fn verify_sms_sandbox_number(
        &self,
        scope: Scope<'_>,
        phone_number: &str,
        one_time_password: &str,
    ) -> Result<()> {
        check_sandbox_number(phone_number)?;
        if !(5..=8).contains(&one_time_password.len())
            || !one_time_password.bytes().all(|b| b.is_ascii_digit())
        {
            return Err(invalid("OneTimePassword"));
        }
        let key = sandbox_scope(scope);
        let Some(mut number) = self
            .store
            .sms_sandbox_numbers(&key)
            .await?
            .into_iter()
            .find(|n| n.phone_number == phone_number)
        else {
            return Err(sandbox_number_not_found());
        };
        if number.one_time_password != one_time_password {
            return Err(Error::new(
                ErrorCode::VerificationException,
                "Invalid one-time password",
            ));
        }
        number.verified = true;
        self.store.put_sms_sandbox_number(&key, number).await
    }

    /// DeleteSMSSandboxPhoneNumber: removes `phone_number` from `scope`'s sandbox.
    ///
    /// Errors: `InvalidParameter` for a malformed number; `SnsResourceNotFound` (404) when
    /// it is not there; `InternalError` when storage fails.
    pub async fn delete_sms_sandbox_number(
        &self,
        scope: Scope<'_>,
        phone_number: &str,
    ) -> Result<()> {
        check_sandbox_number(phone_number)?;
        if self
            .store
            .delete_sms_sandbox_number(&sandbox_scope(scope), phone_number)
            .await?
        {
            Ok(())
        } else {
            Err(sandbox_number_not_found())
        }
    }

    /// ListSMSSandboxPhoneNumbers: `scope`'s destination numbers, ordered by number, at
    /// most `max_results` (1 to [`SANDBOX_PAGE_MAX`], that many when absent) a page.
    ///
    /// Errors: `InvalidParameter` "Invalid parameter: MaxResults" outside 1 to 100, or
    /// "Invalid parameter: NextToken" for a token no page gave; `InternalError` when
    /// storage fails.
    pub async fn list_sms_sandbox_numbers(
        &self,
        scope: Scope<'_>,
        next_token: Option<&str>,
        max_results: Option<i64>,
    ) -> Result<Page<SandboxNumberSummary>> {
        let size = page_size(max_results, SANDBOX_PAGE_MAX, || invalid("MaxResults"))?;
        let numbers = self
            .store
            .sms_sandbox_numbers(&sandbox_scope(scope))
            .await?;
        let page = page_of(numbers, next_token, size, |n| n.phone_number.clone())?;
        Ok(Page {
            items: page
                .items
                .into_iter()
                .map(|n| SandboxNumberSummary {
                    phone_number: n.phone_number,
                    status: if n.verified { "Verified" } else { "Pending" },
                })
                .collect(),
            next_token: page.next_token,
        })
    }

    /// ListOriginationNumbers: none (Loft sends no SMS, so an account has no dedicated
    /// origination numbers).
    ///
    /// Errors: `ValidationException` "MaxResults must be between 1 and 30" (Loft's words)
    /// outside 1 to [`ORIGINATION_PAGE_MAX`].
    pub fn list_origination_numbers(&self, max_results: Option<i64>) -> Result<Page<String>> {
        page_size(max_results, ORIGINATION_PAGE_MAX, || {
            Error::new(
                ErrorCode::SnsValidationException,
                "MaxResults must be between 1 and 30",
            )
        })?;
        Ok(Page {
            items: Vec::new(),
            next_token: None,
        })
    }
}

/// `max_results` as a page size: 1 to `max`, `max` when absent; else `refusal()`.
fn page_size(max_results: Option<i64>, max: usize, refusal: impl Fn() -> Error) -> Result<usize> {
    match max_results {
        None => Ok(max),
        Some(n) if (1..=max as i64).contains(&n) => Ok(n as usize),
        Some(_) => Err(refusal()),
    }
}

/// The sandbox's PhoneNumber rule (API Reference): at most 20 characters, `+` and 8 or
/// more digits, or 1 to 9 digits (the pattern allows none, but the member is required). Errors: `InvalidParameter` "Invalid parameter:
/// PhoneNumber Reason: input incorrectly formatted" (the words AWS records for the other
/// phone-number actions).
fn check_sandbox_number(number: &str) -> Result<()> {
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    let ok = !number.is_empty()
        && number.len() <= 20
        && match number.strip_prefix('+') {
            Some(rest) => rest.len() >= 8 && digits(rest),
            None => number.len() <= 9 && digits(number),
        };
    if ok {
        Ok(())
    } else {
        Err(invalid("PhoneNumber Reason: input incorrectly formatted"))
    }
}

/// `ResourceNotFound` (404) in the API Reference's words.
fn sandbox_number_not_found() -> Error {
    Error::new(
        ErrorCode::SnsResourceNotFound,
        "Can't perform the action on the specified resource. Make sure that the resource exists.",
    )
}

/// The key sandbox numbers are kept under: `ACCOUNT:REGION`, as SMS settings are.
fn sandbox_scope(scope: Scope<'_>) -> String {
    format!("{}:{}", scope.account, scope.region)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The PhoneNumber pattern's edges, one row each.
    #[test]
    fn sandbox_numbers_follow_the_api_references_pattern() {
        for (number, ok) in [
            ("+12065550100", true),
            ("+12345678", true),
            ("+1234567", false),
            ("123456789", true),
            ("1234567890", false),
            ("", false),
            ("+1206555010a", false),
            ("+1-206-555-0100", false),
            (&format!("+{}", "1".repeat(19)), true),
            (&format!("+{}", "1".repeat(20)), false),
        ] {
            assert_eq!(check_sandbox_number(number).is_ok(), ok, "{number:?}");
        }
    }

    #[test]
    fn page_sizes_are_bounded() {
        let refuse = || Error::internal("refused");
        assert_eq!(page_size(None, 100, refuse).unwrap(), 100);
        assert_eq!(page_size(Some(1), 100, refuse).unwrap(), 1);
        assert_eq!(page_size(Some(100), 100, refuse).unwrap(), 100);
        assert!(page_size(Some(0), 100, refuse).is_err());
        assert!(page_size(Some(101), 100, refuse).is_err());
        assert!(page_size(Some(31), 30, refuse).is_err());
    }
}
