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

use super::sns_errors::invalid;
use super::Sns;
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

/// The attributes a platform endpoint takes (SNS API Reference, SetEndpointAttributes and
/// CreatePlatformEndpoint: `CustomUserData`, `Enabled`, `Token`).
pub const ENDPOINT_ATTRIBUTES: &[&str] = &["CustomUserData", "Enabled", "Token"];

/// Largest `CustomUserData`, bytes of UTF-8 (SNS API Reference, CreatePlatformEndpoint:
/// "must be in UTF-8 format and less than 2KB").
pub const MAX_CUSTOM_USER_DATA: usize = 2048;

/// The credentials CreatePlatformApplication takes in pairs and SNS never reports back
/// (its recorded GetPlatformApplicationAttributes lists `Enabled` alone).
const CREDENTIALS: [&str; 2] = ["PlatformPrincipal", "PlatformCredential"];

fn invalid_attributes(reason: &str) -> Error {
    Error::new(
        ErrorCode::InvalidParameter,
        format!("Invalid parameter: Attributes Reason: {reason}"),
    )
}

fn null_attributes() -> Error {
    Error::with(ErrorCode::ValidationError, &[("path", &"attributes")])
}

/// Checks a platform endpoint's attributes (CreatePlatformEndpoint, SetEndpointAttributes):
/// only the names in [`ENDPOINT_ATTRIBUTES`], `CustomUserData` at most
/// [`MAX_CUSTOM_USER_DATA`] bytes. Errors: `InvalidParameter`, in AWS's recorded words.
pub fn validate_endpoint_attributes(attributes: &Map) -> Result<()> {
    if let Some(name) = attributes
        .keys()
        .find(|k| !ENDPOINT_ATTRIBUTES.contains(&k.as_str()))
    {
        return Err(invalid_attributes(&format!(
            "Invalid attribute name: {name}"
        )));
    }
    if attributes
        .get("CustomUserData")
        .is_some_and(|d| d.len() > MAX_CUSTOM_USER_DATA)
    {
        return Err(invalid_attributes(
            "Invalid value for attribute: CustomUserData: must be at most 2048 bytes long in UTF-8 encoding",
        ));
    }
    Ok(())
}

/// Checks the relative part of a platform ARN: `app/PLATFORM/NAME` (two slashes) for an
/// application, `endpoint/PLATFORM/APP/ID` (three) for an endpoint. Errors:
/// `InvalidParameter` "Invalid parameter: {EndpointArn|PlatformApplicationArn} Reason:
/// Wrong number of slashes in relative portion of the ARN." (AWS's recorded words).
fn check_slashes(kind: PlatformKind, arn: &str) -> Result<()> {
    let resource = arn.splitn(6, ':').nth(5).unwrap_or_default();
    let want = match kind {
        PlatformKind::Application => 2,
        PlatformKind::Endpoint => 3,
    };
    if resource.matches('/').count() != want {
        return Err(Error::new(
            ErrorCode::InvalidParameter,
            format!(
                "Invalid parameter: {} Reason: Wrong number of slashes in relative portion of the ARN.",
                kind.arn_parameter()
            ),
        ));
    }
    Ok(())
}

/// The ARN checks every call naming a platform resource makes, in AWS's order: at least
/// six elements, then the slashes of the relative part.
fn check_platform_arn(kind: PlatformKind, arn: &str) -> Result<()> {
    super::sns_errors::check_arn_elements(kind.arn_parameter(), arn)?;
    check_slashes(kind, arn)
}

impl Sns {
    /// Whether platform application or endpoint `arn` is `account`'s: its ARN's account
    /// field (an application's ARN is made from its creator's account, an endpoint's from
    /// its application's).
    pub fn platform_owned_by(&self, arn: &str, account: &str) -> bool {
        names::arn_account(arn) == Some(account)
    }

    /// CreatePlatformApplication in `scope` (the caller's account and region): idempotent for the same name and platform (the first
    /// one's attributes stay). PlatformPrincipal and PlatformCredential come as a pair,
    /// except that GCM takes a PlatformCredential alone, and are not kept (SNS never
    /// reports them); `Enabled` is `true` unless given.
    ///
    /// Errors, in AWS's order and words (recorded): `InvalidParameter` "Invalid parameter:
    /// {name} Reason: ..." (name), "Invalid parameter: Platform Reason: {platform} is not
    /// supported", `ValidationError` "... Value null at 'attributes' ..." (no attributes),
    /// `InvalidParameter` "... Reason: PlatformCredential attribute provided without
    /// PlatformPrincipal" (and the reverse).
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
            return Err(Error::new(
                ErrorCode::InvalidParameter,
                format!("Invalid parameter: Platform Reason: {platform} is not supported"),
            ));
        }
        if attributes.is_empty() {
            return Err(null_attributes());
        }
        let [principal, credential] = CREDENTIALS.map(|k| attributes.contains_key(k));
        // Firebase (GCM) has no PlatformPrincipal: its PlatformCredential alone is the API
        // key or the service-account key (SNS API Reference, CreatePlatformApplication).
        if credential && !principal && platform != "GCM" {
            return Err(invalid_attributes(
                "PlatformCredential attribute provided without PlatformPrincipal",
            ));
        }
        if principal && !credential {
            return Err(invalid_attributes(
                "PlatformPrincipal attribute provided without PlatformCredential",
            ));
        }
        let mut attributes = attributes;
        for k in CREDENTIALS {
            attributes.remove(k);
        }
        attributes
            .entry("Enabled".into())
            .or_insert_with(|| "true".into());
        let arn = format!(
            "arn:aws:sns:{}:{}:app/{platform}/{name}",
            scope.region, scope.account
        );
        self.store
            .create_platform_application(&arn, attributes)
            .await?;
        Ok(arn)
    }

    /// CreatePlatformEndpoint of `account`'s application `app_arn`: idempotent for the same token and the same attributes (the
    /// existing endpoint's ARN); `Enabled` is `true` and `Token` the token unless given.
    ///
    /// Errors, as AWS words them (recorded): `InvalidParameter` (empty token; "Invalid
    /// parameter: Attributes Reason: Invalid attribute name: X"; CustomUserData over 2048
    /// bytes; "Invalid parameter: Token Reason: Endpoint ARN already exists with the same
    /// Token, but different attributes."), `NotFound` "PlatformApplication does not exist" (another account's too).
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
        validate_endpoint_attributes(&attributes)?;
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
        let created = self
            .store
            .create_platform_endpoint(app_arn, &arn, token, attrs.clone())
            .await?
            .ok_or_else(|| not_found("PlatformApplication"))?;
        if created != arn {
            // The token had an endpoint already: the same request again is answered with
            // it, another one is refused (SNS API Reference, CreatePlatformEndpoint: "if the
            // requested endpoint ... already exists with the same attributes, its ARN is
            // returned without creating a new endpoint").
            let existing = self.store.get_platform(&created).await?;
            if existing.is_some_and(|e| e.attributes != attrs) {
                return Err(Error::new(
                    ErrorCode::InvalidParameter,
                    format!("Invalid parameter: Token Reason: Endpoint {created} already exists with the same Token, but different attributes."),
                ));
            }
        }
        Ok(created)
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
    /// least 6 elements, not N" or "... Wrong number of slashes in relative portion of the
    /// ARN."; `NotFound` (404) "{PlatformApplication|Endpoint} does not exist", as AWS
    /// words them (another account's too).
    pub async fn platform_attributes(
        &self,
        account: &str,
        kind: PlatformKind,
        arn: &str,
    ) -> Result<Map> {
        check_platform_arn(kind, arn)?;
        if !self.platform_owned_by(arn, account) {
            return Err(not_found(kind.name()));
        }
        self.store
            .get_platform(arn)
            .await?
            .map(|r| r.attributes)
            .ok_or_else(|| not_found(kind.name()))
    }

    /// Merges attributes into `account`'s platform application or endpoint (a `Token` changes an
    /// endpoint's device token). AWS checks, in this order (recorded): the ARN's form, that
    /// `attributes` is given and not empty, an endpoint's attribute names and values, that
    /// the resource exists. An application's PlatformPrincipal and PlatformCredential are
    /// taken and not kept, as at creation.
    ///
    /// Errors: as [`Sns::platform_attributes`]; `ValidationError` "... Value null at
    /// 'attributes' ..." when `attributes` is `None` or empty; `InvalidParameter` as
    /// [`validate_endpoint_attributes`].
    pub async fn set_platform_attributes(
        &self,
        account: &str,
        kind: PlatformKind,
        arn: &str,
        attributes: Option<Map>,
    ) -> Result<()> {
        check_platform_arn(kind, arn)?;
        let Some(mut attributes) = attributes.filter(|a| !a.is_empty()) else {
            return Err(null_attributes());
        };
        if !self.platform_owned_by(arn, account) {
            return Err(not_found(kind.name()));
        }
        match kind {
            PlatformKind::Endpoint => validate_endpoint_attributes(&attributes)?,
            PlatformKind::Application => {
                for k in CREDENTIALS {
                    attributes.remove(k);
                }
            }
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

    /// Whether the platform endpoint `arn` is enabled: its `Enabled` attribute is `true`
    /// (in any case) or absent. A missing endpoint counts as enabled (the caller has
    /// checked it exists). Errors: store errors.
    pub async fn platform_endpoint_enabled(&self, arn: &str) -> Result<bool> {
        Ok(self.store.get_platform(arn).await?.is_none_or(|r| {
            r.attributes
                .get("Enabled")
                .is_none_or(|v| v.eq_ignore_ascii_case("true"))
        }))
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
