//! Mobile push platform applications and endpoints (SNS CreatePlatformApplication,
//! CreatePlatformEndpoint and their list/get/set/delete): accepted so code written for AWS
//! runs, kept in memory (a restart forgets them), and a Publish to an endpoint is recorded
//! for inspection (`GET /_loft/sns/messages`), never sent.
//!
//! Source: SNS API Reference, "Mobile push" operations.

use std::collections::BTreeMap;

use super::topics::invalid;
use super::Service;
use crate::error::{Error, ErrorCode, Result};

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

fn not_found(what: &str) -> Error {
    Error::new(ErrorCode::NotFound, format!("{what} does not exist"))
}

impl Service {
    /// CreatePlatformApplication. Errors: `InvalidParameter` (name, platform).
    pub fn create_platform_application(
        &self,
        name: &str,
        platform: &str,
        attributes: Map,
    ) -> Result<String> {
        if name.is_empty()
            || name.len() > 256
            || !name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
        {
            return Err(invalid("Name"));
        }
        if !PLATFORMS.contains(&platform) {
            return Err(invalid("Platform"));
        }
        let arn = format!(
            "arn:aws:sns:{}:{}:app/{platform}/{name}",
            self.config.region, self.config.account_id
        );
        let mut apps = self.platform.lock().unwrap_or_else(|p| p.into_inner());
        apps.0.entry(arn.clone()).or_insert(attributes);
        Ok(arn)
    }

    /// CreatePlatformEndpoint: idempotent for the same token. Errors: `NotFound` (app),
    /// `InvalidParameter` (empty token).
    pub fn create_platform_endpoint(
        &self,
        app_arn: &str,
        token: &str,
        attributes: Map,
    ) -> Result<String> {
        if token.is_empty() {
            return Err(invalid("Token"));
        }
        let mut state = self.platform.lock().unwrap_or_else(|p| p.into_inner());
        if !state.0.contains_key(app_arn) {
            return Err(not_found("PlatformApplication"));
        }
        if let Some((arn, _)) = state.1.iter().find(|(arn, a)| {
            arn.starts_with(&app_arn.replace(":app/", ":endpoint/"))
                && a.get("Token").map(String::as_str) == Some(token)
        }) {
            return Ok(arn.clone());
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
        state.1.insert(arn.clone(), attrs);
        Ok(arn)
    }

    /// The platform applications, or the endpoints of `app_arn`.
    pub fn list_platform(&self, app_arn: Option<&str>) -> Result<Vec<PlatformResource>> {
        let state = self.platform.lock().unwrap_or_else(|p| p.into_inner());
        Ok(match app_arn {
            None => state
                .0
                .iter()
                .map(|(a, m)| PlatformResource {
                    arn: a.clone(),
                    attributes: m.clone(),
                })
                .collect(),
            Some(app) => {
                if !state.0.contains_key(app) {
                    return Err(not_found("PlatformApplication"));
                }
                let prefix = format!("{}/", app.replace(":app/", ":endpoint/"));
                state
                    .1
                    .iter()
                    .filter(|(a, _)| a.starts_with(&prefix))
                    .map(|(a, m)| PlatformResource {
                        arn: a.clone(),
                        attributes: m.clone(),
                    })
                    .collect()
            }
        })
    }

    /// Attributes of a platform application or endpoint. Errors: `NotFound`.
    pub fn platform_attributes(&self, arn: &str) -> Result<Map> {
        let state = self.platform.lock().unwrap_or_else(|p| p.into_inner());
        state
            .0
            .get(arn)
            .or_else(|| state.1.get(arn))
            .cloned()
            .ok_or_else(|| not_found("Resource"))
    }

    /// Merges attributes into a platform application or endpoint. Errors: `NotFound`.
    pub fn set_platform_attributes(&self, arn: &str, attributes: Map) -> Result<()> {
        let mut state = self.platform.lock().unwrap_or_else(|p| p.into_inner());
        let target = if state.0.contains_key(arn) {
            state.0.get_mut(arn)
        } else {
            state.1.get_mut(arn)
        };
        target
            .ok_or_else(|| not_found("Resource"))?
            .extend(attributes);
        Ok(())
    }

    /// Deletes a platform application (with its endpoints) or an endpoint; missing ones
    /// succeed, as on AWS.
    pub fn delete_platform(&self, arn: &str) {
        let mut state = self.platform.lock().unwrap_or_else(|p| p.into_inner());
        state.0.remove(arn);
        state.1.remove(arn);
        let prefix = format!("{}/", arn.replace(":app/", ":endpoint/"));
        state.1.retain(|a, _| !a.starts_with(&prefix));
    }

    /// Whether `arn` names a platform endpoint.
    pub fn is_platform_endpoint(&self, arn: &str) -> bool {
        let state = self.platform.lock().unwrap_or_else(|p| p.into_inner());
        state.1.contains_key(arn)
    }
}
