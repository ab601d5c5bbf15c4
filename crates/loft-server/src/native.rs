//! The seeds' REST/JSON API, byte for byte where callers can see it
//! (`chapter-41-sqs.md`, `chapter-42-sns.md`), plus Loft's own extensions
//! (docs/seeds-api.md, "The seeds' REST/JSON API"):
//! `visibility_timeout` on create, `?visibility_timeout=` and `?wait_seconds=` on receive.
//!
//! Errors are `{"error": "..."}` with a 4xx status (5xx only when storage fails): every
//! one is a row of the error table ([`loft_core::error`]), its status and message read
//! from there.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Extension;
use axum::Json;
use loft_core::{ErrorCode, Service};

use crate::body::NativeBody;
use crate::client_link::ClientLink;
use crate::reply::{table, NativeError};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Value};

type Svc = State<Arc<Service>>;

type NativeResult = Result<Response, NativeError>;

/// A route's path parameters, or the extractor's rejection to turn into a [`NativeError`].
type PathParam<T> = Result<Path<T>, PathRejection>;

/// `MalformedRequest` (400) with `message`.
fn bad_request(message: impl Into<String>) -> NativeError {
    table(ErrorCode::MalformedRequest, message.into())
}

/// Parses a JSON object body into `T`; an empty body or `null` is `None`. Anything but an
/// object (an array, a string, a number) is a 400, as the seed's struct decoding gives.
fn parse_body<T: DeserializeOwned>(body: &[u8]) -> Result<Option<T>, NativeError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    let value: Value = serde_json::from_slice(body).map_err(|e| bad_request(json_error(&e)))?;
    match value {
        Value::Null => Ok(None),
        Value::Object(_) => serde_json::from_value(value)
            .map(Some)
            .map_err(|e| bad_request(format!("invalid JSON body: {e}"))),
        _ => Err(bad_request("request body must be a JSON object")),
    }
}

/// The message of a body that is not JSON: serde's words, except for a `\u` escape that
/// names half of a UTF-16 surrogate pair (`"\ud800"` alone), where serde's "unexpected
/// end of hex escape" or "lone leading surrogate" says little: JSON text is Unicode
/// characters, and U+D800 to U+DFFF are none (RFC 8259, section 8.2).
fn json_error(e: &serde_json::Error) -> String {
    let text = e.to_string();
    if text.contains("hex escape") || text.contains("surrogate") {
        return format!(
            "invalid JSON body: a \\u escape at line {} column {} names a lone UTF-16 \
             surrogate (U+D800 to U+DFFF), which is not a character; write the character \
             itself or a complete surrogate pair",
            e.line(),
            e.column()
        );
    }
    format!("invalid JSON body: {text}")
}

/// `GET /health`: `200 {"status":"healthy","service":"loft"}`.
pub async fn health() -> Response {
    Json(json!({"status": "healthy", "service": "loft"})).into_response()
}

#[derive(Deserialize)]
struct CreateQueueBody {
    #[serde(default)]
    dead_letter_queue: Option<String>,
    #[serde(default)]
    max_receive_count: Option<i64>,
    #[serde(default)]
    visibility_timeout: Option<i64>,
}

/// `POST /queues/{name}` with optional `{"dead_letter_queue", "max_receive_count",
/// "visibility_timeout"}`: `201 {"name","dead_letter_queue","max_receive_count",
/// "visibility_timeout"}`, idempotent.
pub async fn create_queue(
    State(svc): Svc,
    name: PathParam<String>,
    body: NativeBody,
) -> NativeResult {
    let Path(name) = name?;
    let body: CreateQueueBody = parse_body(&body)?.unwrap_or(CreateQueueBody {
        dead_letter_queue: None,
        max_receive_count: None,
        visibility_timeout: None,
    });
    let q = svc
        .sqs()
        .create_queue_seed(
            &name,
            body.dead_letter_queue.as_deref(),
            body.max_receive_count.unwrap_or(0),
            body.visibility_timeout,
        )
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(json!({
            "name": q.name,
            "dead_letter_queue": q.dead_letter_queue,
            "max_receive_count": q.max_receive_count,
            "visibility_timeout": q.visibility_timeout,
        })),
    )
        .into_response())
}

/// `GET /queues`: `200` JSON array of queue names: the caller's account's queues in its
/// region ([`Sqs::visible_queues`]; another account's by store key, `ACCOUNT/NAME`),
/// the default account's for an open Loft.
pub async fn list_queues(
    State(svc): Svc,
    caller: Option<axum::Extension<loft_core::service::Principal>>,
) -> NativeResult {
    let names: Vec<String> = svc
        .sqs()
        .visible_queues(&crate::auth::caller(&svc, caller))
        .await?
        .into_iter()
        .map(|q| q.name)
        .collect();
    Ok(Json(names).into_response())
}

#[derive(Deserialize)]
struct SendBody {
    body: String,
}

/// `POST /queues/{name}/messages` with `{"body": STRING}`: `201 {"id":"msg-N"}`; creates
/// the queue when missing. Empty body or bad JSON: 400.
pub async fn send_message(
    State(svc): Svc,
    name: PathParam<String>,
    body: NativeBody,
) -> NativeResult {
    let Path(name) = name?;
    let Some(req) = parse_body::<SendBody>(&body)? else {
        return Err(bad_request("request body required: {\"body\": STRING}"));
    };
    if req.body.is_empty() {
        return Err(bad_request("body must not be empty"));
    }
    let id = svc.sqs().send_seed(&name, req.body).await?;
    Ok((StatusCode::CREATED, Json(json!({"id": id}))).into_response())
}

fn int_param(params: &HashMap<String, String>, name: &str) -> Result<Option<i64>, NativeError> {
    params
        .get(name)
        .map(|v| {
            v.parse::<i64>()
                .map_err(|_| bad_request(format!("{name} must be an integer")))
        })
        .transpose()
}

/// `GET /queues/{name}/messages[?visibility_timeout=S][&wait_seconds=S]`:
/// `200 {"id","body","receive_count"}` of the oldest visible message, or `null`.
pub async fn receive_message(
    State(svc): Svc,
    client: Option<Extension<ClientLink>>,
    name: PathParam<String>,
    params: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> NativeResult {
    let Path(name) = name?;
    let Query(params) = params?;
    let vt = int_param(&params, "visibility_timeout")?;
    let wait = int_param(&params, "wait_seconds")?;
    // A long poll ends when its client goes away (crate::client_link).
    let gone = async move {
        match client {
            Some(Extension(c)) => c.gone().await,
            None => std::future::pending().await,
        }
    };
    let message = svc.sqs().receive_seed_until(&name, vt, wait, gone).await?;
    crate::observe::link_to_sends(
        message
            .iter()
            .map(|m| (m.message_id.as_str(), m.trace_header.as_deref())),
    );
    let value = match message {
        Some(m) => json!({"id": m.message_id, "body": m.body, "receive_count": m.receive_count}),
        None => Value::Null,
    };
    Ok(Json(value).into_response())
}

/// `DELETE /queues/{name}/messages/{id}`: `204`, whether or not the message exists.
pub async fn delete_message(State(svc): Svc, path: PathParam<(String, String)>) -> NativeResult {
    let Path((name, id)) = path?;
    svc.sqs().delete_seed(&name, &id).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// `POST /topics/{name}`: `201 {"name"}`, idempotent.
pub async fn create_topic(State(svc): Svc, name: PathParam<String>) -> NativeResult {
    let Path(name) = name?;
    let t = svc.sns().create_topic_seed(&name).await?;
    Ok((StatusCode::CREATED, Json(json!({"name": t.name}))).into_response())
}

/// `GET /topics`: `200` JSON array of topic names, as `GET /queues` lists queues.
pub async fn list_topics(
    State(svc): Svc,
    caller: Option<axum::Extension<loft_core::service::Principal>>,
) -> NativeResult {
    let names: Vec<String> = svc
        .sns()
        .visible_topics(&crate::auth::caller(&svc, caller))
        .await?
        .into_iter()
        .map(|t| t.name)
        .collect();
    Ok(Json(names).into_response())
}

#[derive(Deserialize)]
struct SubscribeBody {
    #[serde(default)]
    endpoint: Option<String>,
}

/// `POST /topics/{name}/subscribe` with `{"endpoint": URL}`: `201 {"id":"sub-N"}`;
/// no endpoint: 400.
pub async fn subscribe(State(svc): Svc, name: PathParam<String>, body: NativeBody) -> NativeResult {
    let Path(name) = name?;
    let endpoint = parse_body::<SubscribeBody>(&body)?
        .and_then(|b| b.endpoint)
        .filter(|e| !e.is_empty())
        .ok_or_else(|| bad_request("endpoint required"))?;
    let sub = svc.sns().subscribe_seed(&name, &endpoint).await?;
    Ok((
        StatusCode::CREATED,
        Json(json!({"id": format!("sub-{}", sub.seq)})),
    )
        .into_response())
}

#[derive(Deserialize)]
struct PublishBody {
    message: String,
}

/// `POST /topics/{name}/publish` with `{"message": STRING}`: `200 {"delivered": N}`, N the
/// number of subscriptions; each endpoint then gets `POST {"topic","message"}`.
pub async fn publish(State(svc): Svc, name: PathParam<String>, body: NativeBody) -> NativeResult {
    let Path(name) = name?;
    let Some(req) = parse_body::<PublishBody>(&body)? else {
        return Err(bad_request("request body required: {\"message\": STRING}"));
    };
    let delivered = svc.sns().publish_seed(&name, &req.message).await?;
    Ok(Json(json!({"delivered": delivered})).into_response())
}
