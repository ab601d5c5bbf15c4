//! Loft's own inspection routes (not part of any AWS API):
//! - `GET /_loft/sns/messages[?limit=N]`: messages recorded for protocols Loft does not send
//!   (email, SMS, mobile push, Lambda, Firehose), newest first, as JSON.
//! - `DELETE /_loft/sns/messages[?protocol=P&endpoint=E&topic_arn=ARN]`: deletes the
//!   recorded messages matching every given parameter (all of them without any), so tests
//!   can reset between cases.
//!
//!   With credentials configured, both see and delete the caller's account's records only
//!   (a record belongs to its topic's account, or to the account that published straight
//!   to a phone number or endpoint), whether the key signed the request or signed in with
//!   HTTP Basic; an open Loft has one account, and shows all.
//! - `GET /_loft/sns/SimpleNotificationService-{id}.pem`: the certificate SNS signatures
//!   verify with (SigningCertURL; `SimpleNotificationService.pem` serves it too).

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::Extension;
use axum::Json;
use loft_core::model::RecordedFilter;
use loft_core::service::Principal;
use loft_core::{Error, ErrorCode, Service};
use serde_json::json;

use crate::reply::{table, NativeError};

/// Shared state of the inspection routes.
#[derive(Clone)]
pub struct Inspect {
    /// The service.
    pub service: Arc<Service>,
    /// The message signer, whose certificate SigningCertURL serves.
    pub signer: Option<Arc<crate::sns_signing::LazySigner>>,
}

/// `GET /_loft/sns/messages`: `200 [{"id","protocol","endpoint","topic_arn","subject","sender",
/// "message","timestamp"}]`, newest first; `limit` 1..=1000, default 100. The caller's
/// account's records only (see the module doc).
pub async fn recorded_messages(
    State(s): State<Inspect>,
    principal: Option<Extension<Principal>>,
    Query(params): Query<HashMap<String, String>>,
) -> Result<Response, NativeError> {
    let principal = crate::auth::caller(&s.service, principal);
    let limit = match params.get("limit") {
        Some(v) => v
            .parse::<u32>()
            .ok()
            .filter(|n| (1..=1000).contains(n))
            .ok_or_else(|| table(ErrorCode::MalformedRequest, "limit must be 1 to 1000"))?,
        None => 100,
    };
    let list = s.service.sns().recorded_messages(&principal, limit).await?;
    let out: Vec<_> = list
        .into_iter()
        .map(|m| {
            json!({
                "id": m.id,
                "protocol": m.protocol,
                "endpoint": m.endpoint,
                "topic_arn": m.topic_arn,
                "subject": m.subject,
                "sender": m.sender,
                "message": m.message,
                "timestamp": loft_core::clock::iso_timestamp(m.created_at_ms),
            })
        })
        .collect();
    Ok(Json(out).into_response())
}

/// `DELETE /_loft/sns/messages`: `200 {"deleted": N}`. Optional filters `protocol`,
/// `endpoint` and `topic_arn` must all match; without any, every recorded message of the
/// caller's account goes (see the module doc).
///
/// Errors: `400 {"error"}` for any other parameter (a misspelt filter must not clear
/// everything).
pub async fn delete_recorded_messages(
    State(s): State<Inspect>,
    principal: Option<Extension<Principal>>,
    Query(params): Query<HashMap<String, String>>,
) -> Result<Response, NativeError> {
    let principal = crate::auth::caller(&s.service, principal);
    if let Some(other) = params
        .keys()
        .find(|k| !matches!(k.as_str(), "protocol" | "endpoint" | "topic_arn"))
    {
        return Err(table(
            ErrorCode::MalformedRequest,
            format!("unknown parameter {other}: filter by protocol, endpoint or topic_arn"),
        ));
    }
    let filter = RecordedFilter {
        protocol: params.get("protocol").cloned(),
        endpoint: params.get("endpoint").cloned(),
        topic_arn: params.get("topic_arn").cloned(),
        account: None,
    };
    let deleted = s
        .service
        .sns()
        .delete_recorded_messages(&principal, filter)
        .await?;
    Ok(Json(json!({"deleted": deleted})).into_response())
}

/// `GET /_loft/sns/{file}`: the signing certificate when `file` is its name in
/// SigningCertURL (`SimpleNotificationService-{id}.pem`) or `SimpleNotificationService.pem`;
/// otherwise, or without a signer, `404 {"error"}`.
pub async fn certificate(State(s): State<Inspect>, Path(file): Path<String>) -> Response {
    match s.signer.as_ref().map(|l| l.get()) {
        Some(Ok(signer))
            if file == signer.certificate_file() || file == "SimpleNotificationService.pem" =>
        {
            (
                [(header::CONTENT_TYPE, "application/x-pem-file")],
                signer.certificate_pem().to_owned(),
            )
                .into_response()
        }
        Some(Ok(_)) => {
            table(ErrorCode::ResourceNotFoundException, "no such certificate").into_response()
        }
        Some(Err(e)) => NativeError::from(Error::new(ErrorCode::InternalError, e)).into_response(),
        None => table(
            ErrorCode::ResourceNotFoundException,
            "message signing is not configured",
        )
        .into_response(),
    }
}
