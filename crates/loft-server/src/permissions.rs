//! Permissions on the seeds' API and the console's routes: each route is the IAM action of
//! its AWS equivalent, checked by [`loft_core::Service::authorize`] on the default account's
//! queue or topic it names (the seeds' API and the console work on the default account).
//!
//! | route | action |
//! |---|---|
//! | `GET /queues`, `GET /_loft/queues` | `sqs:ListQueues` |
//! | `POST /queues/{name}` | `sqs:CreateQueue` |
//! | `POST /queues/{name}/messages`, `POST /_loft/queues/{name}/messages` | `sqs:SendMessage` |
//! | `GET /queues/{name}/messages`, `GET /_loft/queues/{name}/messages` | `sqs:ReceiveMessage` |
//! | `DELETE /queues/{name}/messages/{id}` | `sqs:DeleteMessage` |
//! | `POST /_loft/queues/{name}/purge` | `sqs:PurgeQueue` |
//! | `POST /_loft/queues/{name}/redrive` | `sqs:StartMessageMoveTask` |
//! | `GET /topics`, `GET /_loft/topics` | `sns:ListTopics` |
//! | `POST /topics/{name}` | `sns:CreateTopic` |
//! | `POST /topics/{name}/subscribe` | `sns:Subscribe` |
//! | `POST /topics/{name}/publish` | `sns:Publish` |
//! | `GET /_loft/mappings` | `lambda:ListEventSourceMappings` (the default account's mappings) |
//! | `POST /_loft/reset`, `POST /_localstack/state/reset` | `loft:Reset`, on the caller's account (Loft's own action: `loft:*` or `*` in a policy) |
//!
//! The recorded-messages inspection route (`/_loft/sns/messages`) is not mapped: it takes
//! any configured key.
//!
//! The caller is the [`Principal`] the authentication middleware ([`crate::auth`]) put in
//! the request's extensions; without one (an open Loft) nothing is checked. A refusal is
//! `403 {"error": "AccessDenied: User: ... is not authorized to perform: ..."}`.

use std::collections::HashMap;

use axum::extract::{MatchedPath, Path, Request, State};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use loft_core::service::{Principal, Target};

use crate::auth::AppState;
use crate::native::NativeError;

/// The action and resource kind of a route: (`sqs:...`/`sns:...`, whether the `{name}` is a
/// queue (`Some(true)`), a topic (`Some(false)`), or the route names none (`None`): then
/// the action is checked on the default account, except for [`CALLER_ACCOUNT_ACTIONS`]).
fn route_action(method: &Method, template: &str) -> Option<(&'static str, Option<bool>)> {
    Some(match (method.as_str(), template) {
        ("GET", "/queues") | ("GET", "/_loft/queues") => ("sqs:ListQueues", None),
        ("POST", "/queues/{name}") => ("sqs:CreateQueue", Some(true)),
        ("POST", "/queues/{name}/messages") | ("POST", "/_loft/queues/{name}/messages") => {
            ("sqs:SendMessage", Some(true))
        }
        ("GET", "/queues/{name}/messages") | ("GET", "/_loft/queues/{name}/messages") => {
            ("sqs:ReceiveMessage", Some(true))
        }
        ("DELETE", "/queues/{name}/messages/{id}") => ("sqs:DeleteMessage", Some(true)),
        ("POST", "/_loft/queues/{name}/purge") => ("sqs:PurgeQueue", Some(true)),
        ("POST", "/_loft/queues/{name}/redrive") => ("sqs:StartMessageMoveTask", Some(true)),
        ("GET", "/topics") | ("GET", "/_loft/topics") => ("sns:ListTopics", None),
        ("POST", "/topics/{name}") => ("sns:CreateTopic", Some(false)),
        ("POST", "/topics/{name}/subscribe") => ("sns:Subscribe", Some(false)),
        ("POST", "/topics/{name}/publish") => ("sns:Publish", Some(false)),
        ("GET", "/_loft/mappings") => ("lambda:ListEventSourceMappings", None),
        ("GET", "/_loft/sns/messages") => ("sns:ListRecordedMessages", None),
        ("DELETE", "/_loft/sns/messages") => ("sns:DeleteRecordedMessages", None),
        ("POST", "/_loft/reset") | ("POST", "/_localstack/state/reset") => ("loft:Reset", None),
        _ => return None,
    })
}

/// Loft's own actions on what each account keeps apart (the SNS messages recorded for its
/// email, SMS and mobile push deliveries): checked on the caller's own account, so a key
/// without policies reads and clears its account's records and an identity whose policy
/// denies them gets 403. No AWS action covers these; `sns:*` in a policy does.
const CALLER_ACCOUNT_ACTIONS: &[&str] = &[
    "sns:ListRecordedMessages",
    "sns:DeleteRecordedMessages",
    "loft:Reset",
];

/// Middleware: checks the route's action for the caller (see the module doc). Must run
/// inside the authentication middleware, which sets the caller.
pub async fn enforce(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let Some(principal) = req.extensions().get::<Principal>().cloned() else {
        return next.run(req).await;
    };
    let template = req
        .extensions()
        .get::<MatchedPath>()
        .map(|m| m.as_str().to_owned())
        .unwrap_or_default();
    let Some((action, kind)) = route_action(req.method(), &template) else {
        return next.run(req).await;
    };
    let (mut parts, body) = req.into_parts();
    let name = match kind {
        Some(_) => {
            use axum::extract::FromRequestParts;
            Path::<HashMap<String, String>>::from_request_parts(&mut parts, &())
                .await
                .ok()
                .and_then(|Path(p)| p.get("name").cloned())
                // The console's routes take a store key in any form (see
                // `Service::canonical_key`); the seeds' routes take a seed name as it is.
                .map(|n| match template.starts_with("/_loft/") {
                    true => state.service.canonical_key(&n),
                    false => n,
                })
        }
        None => None,
    };
    let svc = &state.service;
    let default = svc.config().account_id.clone();
    let result = match (kind, &name) {
        (Some(true), Some(n)) => svc.authorize(&principal, action, Target::Queue(n)).await,
        (Some(false), Some(n)) => svc.authorize(&principal, action, Target::Topic(n)).await,
        _ => {
            let service = match action.split_once(':') {
                Some(("sns", _)) => "sns",
                Some(("lambda", _)) => "lambda",
                Some(("loft", _)) => "loft",
                _ => "sqs",
            };
            let account: &str = if CALLER_ACCOUNT_ACTIONS.contains(&action) {
                &principal.account_id
            } else {
                &default
            };
            let target = Target::Account { service, account };
            svc.authorize(&principal, action, target).await
        }
    };
    match result {
        Ok(()) => next.run(Request::from_parts(parts, body)).await,
        Err(e) => NativeError(
            StatusCode::FORBIDDEN,
            format!("{}: {}", e.code.aws_code(), e.message),
        )
        .into_response(),
    }
}
