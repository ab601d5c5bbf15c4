//! LocalStack compatibility (`loft serve --localstack-compat`): the routes LocalStack's
//! clients and test harnesses call besides the AWS APIs, so a tool written for
//! LocalStack runs against Loft with nothing changed but the image or endpoint.
//!
//! - `GET /_localstack/health` (and `HEAD`): LocalStack's `HealthResource.on_get`
//!   (localstack-core/localstack/services/internal.py): `{"services": {NAME: STATE},
//!   "edition": ..., "version": ...}`, a state being one of LocalStack's `ServiceState`
//!   values (`running`, `available`, `disabled`, ...; services/plugins.py).
//!
//! The rest of the drop-in lives elsewhere: the extra listener on port 4566 and the
//! `Ready.` line (LocalStack's `READY_MARKER_OUTPUT`, printed once it serves) in the
//! `loft` binary; LocalStack's queue URL host forms (`sqs.REGION.localhost.localstack.cloud:4566`,
//! `localhost.localstack.cloud:4566`) in [`crate::aws::sqs::QueueUrlParts`].

use axum::response::{IntoResponse, Response};
use axum::{Json, Router};
use serde_json::json;

/// The edition `/_localstack/health` names: LocalStack's free edition's, which is what
/// tools comparing it expect of a server without LocalStack's paid features.
pub const EDITION: &str = "community";

/// The services `/_localstack/health` reports `running`: every AWS API Loft serves on
/// every listener (SQS and SNS; Lambda's REST API of functions and event source
/// mappings, `crate::aws::lambda_rest`, which is always routed).
pub const RUNNING_SERVICES: [&str; 3] = ["sqs", "sns", "lambda"];

/// The LocalStack routes, with no state, registered through the access table
/// ([`crate::permissions::ROUTES`]: `/_localstack/health` is public); their methods and
/// templates are appended to `registered`.
pub fn routes<S: Clone + Send + Sync + 'static>(
    registered: &mut Vec<(&'static str, &'static str)>,
) -> Router<S> {
    crate::permissions::Routes::new()
        .at("GET", "/_localstack/health", health)
        .finish(registered)
}

/// `GET /_localstack/health`: `200 {"services": {"sqs": "running", "sns": "running",
/// "lambda": "running"}, "edition": "community", "version": LOFT_VERSION}` (LocalStack's
/// shape, see the module doc; the version is Loft's own, e.g. `0.1.0`).
pub async fn health() -> Response {
    let services: serde_json::Map<String, serde_json::Value> = RUNNING_SERVICES
        .iter()
        .map(|s| (s.to_string(), json!("running")))
        .collect();
    Json(json!({
        "services": services,
        "edition": EDITION,
        "version": env!("CARGO_PKG_VERSION"),
    }))
    .into_response()
}
