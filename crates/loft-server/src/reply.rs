//! The reply of every route that is not an AWS protocol (the seeds' API, the console's
//! JSON, Loft's inspection routes, authentication and access refusals, unknown routes):
//! `{"error": message}` with an HTTP status. A leaf: it imports no route.
//!
//! Errors of the error table ([`loft_core::error`]) keep its status and message
//! (`From<Error>`); seeds' API shape: `chapter-41-sqs.md`, `chapter-42-sns.md`.

use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use loft_core::{Error, ErrorCode};
use serde_json::json;

use crate::body::BodyError;

/// An error of the seeds' API: `{"error": message}` with the table's status. Made only
/// from an [`Error`] (`From<Error>`, [`table`], [`NativeError::refused`]), so its status is
/// always its code's row in the error table.
pub struct NativeError(StatusCode, String);

impl From<Error> for NativeError {
    fn from(e: Error) -> Self {
        let status =
            StatusCode::from_u16(e.code.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        NativeError(status, e.message)
    }
}

impl NativeError {
    /// An authentication or authorization refusal of a seeds' API, console or inspection
    /// route: `403 {"error": "CODE: message"}`, the AWS code of `e` ahead of its message
    /// (`SignatureDoesNotMatch: ...`, `AccessDenied: ...`), whatever the table's status
    /// for the code.
    pub fn refused(e: &Error) -> Self {
        NativeError(
            StatusCode::FORBIDDEN,
            format!("{}: {}", e.code.aws_code(), e.message),
        )
    }
}

/// An error of the table's row `code`, its template's `{reason}` filled.
pub(crate) fn table(code: ErrorCode, reason: impl std::fmt::Display) -> NativeError {
    Error::with(code, &[("reason", &reason)]).into()
}

/// A body that was not read, in the seeds' API's shape: `{"error": message}` with 413
/// (over 1 MiB), 503 and `Retry-After: 1` (no room in the body budget), 408 (stalled) or
/// 400, and `Connection: close`.
impl IntoResponse for BodyError {
    fn into_response(self) -> Response {
        let mut resp = NativeError::from(self.to_error()).into_response();
        self.add_headers(resp.headers_mut());
        resp
    }
}

/// A path segment that does not decode (`%FF`, invalid UTF-8): 400 in the API's shape.
impl From<PathRejection> for NativeError {
    fn from(r: PathRejection) -> Self {
        table(ErrorCode::MalformedRequest, r.body_text())
    }
}

/// A query string that does not decode: 400 in the API's shape.
impl From<QueryRejection> for NativeError {
    fn from(r: QueryRejection) -> Self {
        table(ErrorCode::MalformedRequest, r.body_text())
    }
}

impl IntoResponse for NativeError {
    fn into_response(self) -> Response {
        (self.0, Json(json!({"error": self.1}))).into_response()
    }
}

/// Unknown route: `404 {"error": ...}`.
pub async fn not_found() -> Response {
    NativeError::from(Error::with(ErrorCode::NotFoundRoute, &[])).into_response()
}

/// Known route, wrong method: `405 {"error": ...}`.
pub async fn method_not_allowed() -> Response {
    NativeError::from(Error::with(ErrorCode::MethodNotAllowed, &[])).into_response()
}
