//! Mobile push platform applications and endpoints (SNS CreatePlatformApplication,
//! CreatePlatformEndpoint and their list/get/set/delete): accepted so code written for AWS
//! runs, kept in the store (they survive a restart and every node sees them), and a
//! Publish to an endpoint is recorded for inspection (`GET /_loft/sns/messages`), never
//! sent.
//!
//! A platform application belongs to the account and region it was created in, which
//! its ARN names (`arn:aws:sns:REGION:ACCOUNT:app/PLATFORM/NAME`), and its endpoints to
//! the same. They have no resource policy, so only their own account's callers reach them:
//! another account's application or endpoint is answered as one that does not exist, and
//! listings show the caller's account and region only.
//!
//! Source: SNS API Reference, "Mobile push" operations.

use std::collections::BTreeMap;

use super::topics::invalid;
use super::Service;
use crate::error::{Error, ErrorCode, Result};
use crate::names::{self, Scope};

type Map = BTreeMap<String, String>;

/// A platform application or endpoint: its ARN and attributes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlatformResource {
    /// PlatformApplicationArn or EndpointArn.
    pub arn: String,
    /// Attributes by AWS name.
    pub attributes: Map,
}

/// The platforms SNS accepts.
pub const PLATFORMS: &[&str] = &[
    "ADM",
    "APNS",
    "APNS_SANDBOX",
    "GCM",
    "BAIDU",
    "MPNS",
    "WNS",
    "APNS_VOIP",
    "APNS_VOIP_SANDBOX",
];

/// Which of the two a platform call names: SNS's errors say which.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlatformKind {
    /// A platform application (`PlatformApplicationArn`).
    Application,
    /// A platform endpoint (`EndpointArn`).
    Endpoint,
}

impl PlatformKind {
    /// `PlatformApplication` or `Endpoint`, as "... does not exist" names it.
    fn name(self) -> &'static str {
        match self {
            PlatformKind::Application => "PlatformApplication",
            PlatformKind::Endpoint => "Endpoint",
        }
    }

    /// The request parameter holding its ARN.
    fn arn_parameter(self) -> &'static str {
        match self {
            PlatformKind::Application => "PlatformApplicationArn",
            PlatformKind::Endpoint => "EndpointArn",
        }
    }
}

fn not_found(what: &str) -> Error {
    Error::new(ErrorCode::NotFound, format!("{what} does not exist"))
}

/// Whether `arn` has the form of a platform endpoint's ARN (`...:endpoint/PLATFORM/APP/ID`);
/// topic names cannot contain `/`, so a topic's ARN never has it.
fn looks_like_endpoint(arn: &str) -> bool {
    arn.split(':')
        .nth(5)
        .is_some_and(|r| r.starts_with("endpoint/"))
}

impl Service {
    /// Whether platform application or endpoint `arn` is `account`'s: its ARN's account
    /// field (an application's ARN is made from its creator's account, an endpoint's from
    /// its application's).
    pub fn platform_owned_by(&self, arn: &str, account: &str) -> bool {
        names::arn_account(arn) == Some(account)
    }

    /// CreatePlatformApplication in `scope` (the caller's account and region):
    /// idempotent for the same name and platform (the first one's attributes stay).
    /// Errors: `InvalidParameter` (name, platform).
    pub async fn create_platform_application(
        &self,
        scope: Scope<'_>,
        name: &str,
        platform: &str,
        attributes: Map,
    ) -> Result<String> {
        // AWS names the value itself in these messages (recorded).
        let bad_name = |reason: &str| {
            Err(Error::new(
                ErrorCode::InvalidParameter,
                format!("Invalid parameter: {name} Reason: {reason}"),
            ))
        };
        if name.is_empty() {
            return bad_name("cannot be empty");
        }
        if name.chars().count() > 256 {
            return bad_name("must be at most 256 characters long");
        }
        if !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
        {
            return bad_name(
                "must contain only characters 'a'-'z', 'A'-'Z', '0'-'9', '_', '-', and '.'",
            );
        }
        if !PLATFORMS.contains(&platform) {
            return Err(invalid("Platform"));
        }
        let arn = format!(
            "arn:aws:sns:{}:{}:app/{platform}/{name}",
            scope.region, scope.account
        );
        self.store
            .create_platform_application(&arn, attributes)
            .await?;
        Ok(arn)
    }

    /// CreatePlatformEndpoint of `account`'s application `app_arn`: idempotent for the
    /// same token (the existing endpoint's ARN).
    /// Errors: `NotFound` (app, or another account's), `InvalidParameter` (empty token).
    pub async fn create_platform_endpoint(
        &self,
        account: &str,
        app_arn: &str,
        token: &str,
        attributes: Map,
    ) -> Result<String> {
        if token.is_empty() {
            return Err(invalid("Token"));
        }
        if !self.platform_owned_by(app_arn, account) {
            return Err(not_found("PlatformApplication"));
        }
        let arn = format!(
            "{}/{}",
            app_arn.replace(":app/", ":endpoint/"),
            uuid::Uuid::new_v4()
        );
        let mut attrs = attributes;
        attrs.insert("Token".into(), token.into());
        attrs
            .entry("Enabled".into())
            .or_insert_with(|| "true".into());
        self.store
            .create_platform_endpoint(app_arn, &arn, token, attrs)
            .await?
            .ok_or_else(|| not_found("PlatformApplication"))
    }

    /// The platform applications of `scope` (the caller's account and region), or the
    /// endpoints of `scope`'s account's application `app_arn`.
    /// Errors: `NotFound` (app, or another account's).
    pub async fn list_platform(
        &self,
        scope: Scope<'_>,
        app_arn: Option<&str>,
    ) -> Result<Vec<PlatformResource>> {
        let records = match app_arn {
            None => {
                let prefix = format!("arn:aws:sns:{}:{}:app/", scope.region, scope.account);
                let mut all = self.store.list_platform_applications().await?;
                all.retain(|r| r.arn.starts_with(&prefix));
                all
            }
            Some(app) => {
                if !self.platform_owned_by(app, scope.account)
                    || self.store.get_platform(app).await?.is_none()
                {
                    return Err(not_found("PlatformApplication"));
                }
                self.store.list_platform_endpoints(app).await?
            }
        };
        Ok(records
            .into_iter()
            .map(|r| PlatformResource {
                arn: r.arn,
                attributes: r.attributes,
            })
            .collect())
    }

    /// Attributes of `account`'s platform application or endpoint (`kind`, which the ARN
    /// names).
    ///
    /// Errors: `InvalidParameter` "Invalid parameter: {kind}Arn Reason: An ARN must have at
    /// least 6 elements, not N"; `NotFound` (404) "{PlatformApplication|Endpoint} does not
    /// exist", as AWS words them (another account's too).
    pub async fn platform_attributes(
        &self,
        account: &str,
        kind: PlatformKind,
        arn: &str,
    ) -> Result<Map> {
        super::topics::check_arn_elements(kind.arn_parameter(), arn)?;
        if !self.platform_owned_by(arn, account) {
            return Err(not_found(kind.name()));
        }
        self.store
            .get_platform(arn)
            .await?
            .map(|r| r.attributes)
            .ok_or_else(|| not_found(kind.name()))
    }

    /// Merges attributes into `account`'s platform application or endpoint (a `Token`
    /// changes an endpoint's device token). AWS checks, in this order (recorded): the ARN's
    /// form, that `attributes` is given, that the resource exists.
    ///
    /// Errors: as [`Service::platform_attributes`]; `ValidationError` "... Value null at
    /// 'attributes' ..." when `attributes` is `None`.
    pub async fn set_platform_attributes(
        &self,
        account: &str,
        kind: PlatformKind,
        arn: &str,
        attributes: Option<Map>,
    ) -> Result<()> {
        super::topics::check_arn_elements(kind.arn_parameter(), arn)?;
        let Some(attributes) = attributes else {
            return Err(Error::with(
                ErrorCode::ValidationError,
                &[("path", &"attributes")],
            ));
        };
        if !self.platform_owned_by(arn, account) {
            return Err(not_found(kind.name()));
        }
        let token = attributes.get("Token").cloned();
        if self
            .store
            .update_platform_attributes(arn, attributes, token)
            .await?
        {
            Ok(())
        } else {
            Err(not_found(kind.name()))
        }
    }

    /// Deletes `account`'s platform application (with its endpoints) or endpoint; missing
    /// ones succeed, as on AWS, and so does another account's, which stays.
    /// Errors: store errors.
    pub async fn delete_platform(&self, account: &str, arn: &str) -> Result<()> {
        if !self.platform_owned_by(arn, account) {
            return Ok(());
        }
        self.store.delete_platform(arn).await
    }

    /// Whether `arn` names a platform endpoint (only ARNs of an endpoint's form are looked
    /// up, so a Publish to a topic costs no store read for it).
    pub async fn is_platform_endpoint(&self, arn: &str) -> Result<bool> {
        if !looks_like_endpoint(arn) {
            return Ok(false);
        }
        Ok(self.store.get_platform(arn).await?.is_some())
    }
}
