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

/// The attributes a platform application takes (SNS API Reference,
/// SetPlatformApplicationAttributes: the credentials, the four event topics, the two
/// feedback roles and the sample rate, and for APNs token authentication the team and
/// bundle ids; `Enabled`, which GetPlatformApplicationAttributes reports and Loft lets a
/// caller set, is how an application is disabled).
pub const APPLICATION_ATTRIBUTES: &[&str] = &[
    "PlatformCredential",
    "PlatformPrincipal",
    "EventEndpointCreated",
    "EventEndpointDeleted",
    "EventEndpointUpdated",
    "EventDeliveryFailure",
    "SuccessFeedbackRoleArn",
    "FailureFeedbackRoleArn",
    "SuccessFeedbackSampleRate",
    "ApplePlatformTeamID",
    "ApplePlatformBundleID",
    "Enabled",
];

/// The platforms of Apple's push service, the only ones `ApplePlatformTeamID` and
/// `ApplePlatformBundleID` apply to (SNS API Reference, SetPlatformApplicationAttributes:
/// "only apply to APNs token-based authentication").
const APNS_PLATFORMS: &[&str] = &["APNS", "APNS_SANDBOX", "APNS_VOIP", "APNS_VOIP_SANDBOX"];

/// Checks a platform application's attributes (CreatePlatformApplication,
/// SetPlatformApplicationAttributes) on `platform` (its ARN's, `app/PLATFORM/NAME`): only
/// the names in [`APPLICATION_ATTRIBUTES`]; each `Event*` attribute a topic ARN, each
/// `*FeedbackRoleArn` an IAM role ARN (either one empty: none), `SuccessFeedbackSampleRate`
/// a whole number from 0 to 100 (SNS API Reference, SetPlatformApplicationAttributes);
/// `ApplePlatformTeamID` and `ApplePlatformBundleID` only on an APNs platform.
///
/// Errors: `InvalidParameter` "Invalid parameter: Attributes Reason: Invalid attribute
/// name: X" (the words AWS was recorded using for an endpoint's attribute names), or
/// "... Reason: Invalid value for attribute: NAME: REASON" (the form AWS was recorded
/// using for CustomUserData; each REASON here is Loft's: AWS's is not recorded).
pub fn validate_application_attributes(platform: &str, attributes: &Map) -> Result<()> {
    for (name, value) in attributes {
        if !APPLICATION_ATTRIBUTES.contains(&name.as_str()) {
            return Err(invalid_attributes(&format!(
                "Invalid attribute name: {name}"
            )));
        }
        let reason = match name.as_str() {
            "EventEndpointCreated"
            | "EventEndpointDeleted"
            | "EventEndpointUpdated"
            | "EventDeliveryFailure"
                if !value.is_empty() && !is_topic_arn(value) =>
            {
                "must be a topic ARN"
            }
            "SuccessFeedbackRoleArn" | "FailureFeedbackRoleArn"
                if !value.is_empty() && !is_role_arn(value) =>
            {
                "must be an IAM role ARN"
            }
            "SuccessFeedbackSampleRate"
                if !(!value.is_empty()
                    && value.len() <= 3
                    && value.bytes().all(|b| b.is_ascii_digit())
                    && value.parse::<u8>().is_ok_and(|v| v <= 100)) =>
            {
                "must be a whole number from 0 to 100"
            }
            "ApplePlatformTeamID" | "ApplePlatformBundleID"
                if !APNS_PLATFORMS.contains(&platform) =>
            {
                "applies only to APNs token-based authentication"
            }
            _ => continue,
        };
        return Err(invalid_attributes(&format!(
            "Invalid value for attribute: {name}: {reason}"
        )));
    }
    Ok(())
}

/// Whether `arn` is an SNS topic's ARN: `arn:PARTITION:sns:REGION:ACCOUNT:NAME`, a 12-digit
/// account and a name of a topic's characters (no `/`, so no platform resource).
fn is_topic_arn(arn: &str) -> bool {
    let parts: Vec<&str> = arn.split(':').collect();
    parts.len() == 6
        && names::arn_resource(arn, "sns").is_some_and(|name| {
            name.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
        })
        && !parts[3].is_empty()
        && names::is_account_id(parts[4])
}

/// Whether `arn` is an IAM role's ARN: `arn:PARTITION:iam::ACCOUNT:role/PATH/NAME`.
fn is_role_arn(arn: &str) -> bool {
    let parts: Vec<&str> = arn.splitn(6, ':').collect();
    parts.len() == 6
        && parts[0] == "arn"
        && !parts[1].is_empty()
        && parts[2] == "iam"
        && parts[3].is_empty()
        && names::is_account_id(parts[4])
        && parts[5]
            .strip_prefix("role/")
            .is_some_and(|name| !name.is_empty() && !name.ends_with('/'))
}

/// The platform a platform ARN names: `PLATFORM` of `app/PLATFORM/NAME` or
/// `endpoint/PLATFORM/APP/ID` (empty when it names none).
fn platform_of(arn: &str) -> &str {
    arn.splitn(6, ':')
        .nth(5)
        .and_then(|r| r.split('/').nth(1))
        .unwrap_or_default()
}

/// The ARN of the application an endpoint's ARN names (`...:endpoint/P/APP/ID` →
/// `...:app/P/APP`).
fn application_of(endpoint_arn: &str) -> String {
    let app = endpoint_arn
        .rsplit_once('/')
        .map_or(endpoint_arn, |(app, _)| app);
    app.replacen(":endpoint/", ":app/", 1)
}

/// ListPlatformApplications and ListEndpointsByPlatformApplication page size (AWS: "up to
/// 100").
pub const PLATFORM_PAGE_SIZE: usize = 100;

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
        validate_application_attributes(platform, &attributes)?;
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
        check_platform_arn(PlatformKind::Application, app_arn)?;
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
    /// endpoints of `scope`'s account's application `app_arn`, 100 a page (SNS API
    /// Reference, ListPlatformApplications and ListEndpointsByPlatformApplication: "up to
    /// 100", then a NextToken), in ARN order; `next_token` is the one the page before gave.
    ///
    /// Errors: `InvalidParameter` as [`Sns::platform_attributes`] for `app_arn`'s form, and
    /// "Invalid parameter: NextToken" for a token no page gave (one that does not name an
    /// ARN of what is listed); `NotFound` (app, or another account's).
    pub async fn list_platform(
        &self,
        scope: Scope<'_>,
        app_arn: Option<&str>,
        next_token: Option<&str>,
    ) -> Result<super::topics::Page<PlatformResource>> {
        let (prefix, records) = match app_arn {
            None => {
                let prefix = format!("arn:aws:sns:{}:{}:app/", scope.region, scope.account);
                let mut all = self.store.list_platform_applications().await?;
                all.retain(|r| r.arn.starts_with(&prefix));
                (prefix, all)
            }
            Some(app) => {
                check_platform_arn(PlatformKind::Application, app)?;
                if !self.platform_owned_by(app, scope.account)
                    || self.store.get_platform(app).await?.is_none()
                {
                    return Err(not_found("PlatformApplication"));
                }
                let prefix = format!("{}/", app.replacen(":app/", ":endpoint/", 1));
                (prefix, self.store.list_platform_endpoints(app).await?)
            }
        };
        // A token is the base64 of the last ARN of a page: one that names no ARN of what
        // is listed was never given out.
        if let Some(t) = next_token.filter(|t| !t.is_empty()) {
            let named = crate::message::base64_decode(t)
                .ok()
                .and_then(|b| String::from_utf8(b).ok())
                .unwrap_or_default();
            if !named.starts_with(&prefix) {
                return Err(invalid("NextToken"));
            }
        }
        let mut items: Vec<PlatformResource> = records
            .into_iter()
            .map(|r| PlatformResource {
                arn: r.arn,
                attributes: r.attributes,
            })
            .collect();
        items.sort_by(|a, b| a.arn.cmp(&b.arn));
        super::topics::page_of(items, next_token, PLATFORM_PAGE_SIZE, |r| r.arn.clone())
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
                validate_application_attributes(platform_of(arn), &attributes)?;
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

    /// Deletes `account`'s platform application (with its endpoints) or endpoint (`kind`,
    /// which the operation names: DeletePlatformApplication or DeleteEndpoint); missing
    /// ones succeed, as on AWS, and so does another account's, which stays. The ARN is
    /// checked as every platform call checks it, so DeleteEndpoint never deletes an
    /// application, nor DeletePlatformApplication an endpoint.
    ///
    /// Errors: `InvalidParameter` as [`Sns::platform_attributes`] (elements, slashes);
    /// store errors.
    pub async fn delete_platform(
        &self,
        account: &str,
        kind: PlatformKind,
        arn: &str,
    ) -> Result<()> {
        check_platform_arn(kind, arn)?;
        if !self.platform_owned_by(arn, account) {
            return Ok(());
        }
        self.store.delete_platform(arn).await
    }

    /// Checks that a Publish may reach platform endpoint `arn`: its application and then
    /// the endpoint itself are enabled (`Enabled` absent or `true`, as
    /// [`Sns::platform_endpoint_enabled`] reads it).
    ///
    /// Errors: `PlatformApplicationDisabled` (the botocore model's
    /// `PlatformApplicationDisabledException`, 400), `EndpointDisabled` (AWS's "Endpoint is
    /// disabled"); store errors.
    pub async fn check_endpoint_reachable(&self, arn: &str) -> Result<()> {
        let app_enabled = self
            .store
            .get_platform(&application_of(arn))
            .await?
            .is_none_or(|r| {
                r.attributes
                    .get("Enabled")
                    .is_none_or(|v| v.eq_ignore_ascii_case("true"))
            });
        if !app_enabled {
            return Err(Error::with(ErrorCode::PlatformApplicationDisabled, &[]));
        }
        if !self.platform_endpoint_enabled(arn).await? {
            return Err(Error::with(ErrorCode::EndpointDisabled, &[]));
        }
        Ok(())
    }

    /// Whether `endpoint` names a platform endpoint `account` may subscribe to a topic
    /// (protocol `application`): one of its own that exists.
    ///
    /// Errors: `InvalidParameter` "Invalid parameter: Endpoint Reason: Endpoint does not
    /// exist for endpoint {ARN}" (AWS's answer, as quoted in moto issue #7518) for an
    /// endpoint that does not exist, was deleted, or is another account's, and for an
    /// ARN of anything else (an application, a topic); store errors.
    pub async fn check_application_endpoint(&self, account: &str, endpoint: &str) -> Result<()> {
        if looks_like_endpoint(endpoint)
            && check_slashes(PlatformKind::Endpoint, endpoint).is_ok()
            && self.platform_owned_by(endpoint, account)
            && self.is_platform_endpoint(endpoint).await?
        {
            return Ok(());
        }
        Err(invalid(&format!(
            "Endpoint Reason: Endpoint does not exist for endpoint {endpoint}"
        )))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every variant of a platform application's attribute rule, one row each: the
    /// platform, one attribute, and `None` when it is taken or the refusal's text.
    #[test]
    fn application_attribute_rules() {
        let value = |name: &str, reason: &str| {
            format!("Invalid parameter: Attributes Reason: Invalid value for attribute: {name}: {reason}")
        };
        let topic = "arn:aws:sns:us-east-1:000000000000:events";
        let role = "arn:aws:iam::000000000000:role/sns-feedback";
        let mut rows: Vec<(&str, &str, &str, Option<String>)> = vec![
            ("ADM", "Enabled", "false", None),
            ("ADM", "SuccessFeedbackSampleRate", "0", None),
            ("ADM", "SuccessFeedbackSampleRate", "100", None),
            (
                "ADM",
                "SuccessFeedbackSampleRate",
                "101",
                Some(value(
                    "SuccessFeedbackSampleRate",
                    "must be a whole number from 0 to 100",
                )),
            ),
            (
                "ADM",
                "SuccessFeedbackSampleRate",
                "-1",
                Some(value(
                    "SuccessFeedbackSampleRate",
                    "must be a whole number from 0 to 100",
                )),
            ),
            (
                "ADM",
                "SuccessFeedbackSampleRate",
                "50.5",
                Some(value(
                    "SuccessFeedbackSampleRate",
                    "must be a whole number from 0 to 100",
                )),
            ),
            (
                "ADM",
                "SuccessFeedbackSampleRate",
                "",
                Some(value(
                    "SuccessFeedbackSampleRate",
                    "must be a whole number from 0 to 100",
                )),
            ),
            (
                "ADM",
                "SuccessFeedbackSampleRate",
                "0100",
                Some(value(
                    "SuccessFeedbackSampleRate",
                    "must be a whole number from 0 to 100",
                )),
            ),
            ("ADM", "SuccessFeedbackRoleArn", role, None),
            ("ADM", "FailureFeedbackRoleArn", "", None),
            (
                "ADM",
                "FailureFeedbackRoleArn",
                "arn:aws:iam::000000000000:user/x",
                Some(value("FailureFeedbackRoleArn", "must be an IAM role ARN")),
            ),
            (
                "ADM",
                "SuccessFeedbackRoleArn",
                "role/x",
                Some(value("SuccessFeedbackRoleArn", "must be an IAM role ARN")),
            ),
            (
                "ADM",
                "SuccessFeedbackRoleArn",
                "arn:aws:iam::0:role/x",
                Some(value("SuccessFeedbackRoleArn", "must be an IAM role ARN")),
            ),
            ("APNS", "ApplePlatformTeamID", "TEAM123456", None),
            (
                "APNS_SANDBOX",
                "ApplePlatformBundleID",
                "com.example.app",
                None,
            ),
            ("APNS_VOIP", "ApplePlatformTeamID", "TEAM123456", None),
            (
                "GCM",
                "ApplePlatformTeamID",
                "TEAM123456",
                Some(value(
                    "ApplePlatformTeamID",
                    "applies only to APNs token-based authentication",
                )),
            ),
            (
                "ADM",
                "ApplePlatformBundleID",
                "com.example.app",
                Some(value(
                    "ApplePlatformBundleID",
                    "applies only to APNs token-based authentication",
                )),
            ),
            (
                "ADM",
                "Foo",
                "bar",
                Some("Invalid parameter: Attributes Reason: Invalid attribute name: Foo".into()),
            ),
            (
                "ADM",
                "enabled",
                "true",
                Some(
                    "Invalid parameter: Attributes Reason: Invalid attribute name: enabled".into(),
                ),
            ),
            (
                "ADM",
                "CustomUserData",
                "x",
                Some(
                    "Invalid parameter: Attributes Reason: Invalid attribute name: CustomUserData"
                        .into(),
                ),
            ),
            (
                "ADM",
                "Token",
                "x",
                Some("Invalid parameter: Attributes Reason: Invalid attribute name: Token".into()),
            ),
        ];
        for name in [
            "EventEndpointCreated",
            "EventEndpointDeleted",
            "EventEndpointUpdated",
            "EventDeliveryFailure",
        ] {
            rows.push(("ADM", name, topic, None));
            rows.push(("ADM", name, "", None));
            for bad in [
                "not-an-arn",
                "arn:aws:sqs:us-east-1:000000000000:events",
                "arn:aws:sns:us-east-1:000000000000:app/GCM/x",
                "arn:aws:sns:us-east-1:000000000000:events:sub-id",
                "arn:aws:sns:us-east-1:12:events",
            ] {
                rows.push(("ADM", name, bad, Some(value(name, "must be a topic ARN"))));
            }
        }
        for (platform, name, v, want) in rows {
            let attrs = Map::from([(name.to_owned(), v.to_owned())]);
            match (validate_application_attributes(platform, &attrs), want) {
                (Ok(()), None) => {}
                (Err(e), Some(m)) => {
                    assert_eq!(e.code, ErrorCode::InvalidParameter, "{platform} {name}={v}");
                    assert_eq!(e.message, m, "{platform} {name}={v}");
                }
                (got, want) => panic!("{platform} {name}={v}: got {got:?}, want {want:?}"),
            }
        }
    }

    /// An endpoint's application and platform, read from its ARN.
    #[test]
    fn an_endpoint_arn_names_its_application() {
        let ep = "arn:aws:sns:us-east-1:000000000000:endpoint/GCM/app-1/5e3e9847-3183-3f18-a7e8-671c3a57d4b3";
        assert_eq!(
            application_of(ep),
            "arn:aws:sns:us-east-1:000000000000:app/GCM/app-1"
        );
        assert_eq!(platform_of(ep), "GCM");
        assert_eq!(
            platform_of("arn:aws:sns:us-east-1:000000000000:app/APNS_SANDBOX/a"),
            "APNS_SANDBOX"
        );
    }
}
