//! The console's JSON routes (Loft's own, not part of any AWS API). Each translates JSON to
//! a service call and back; the rules are the service's, so a send here is validated as a
//! SendMessage is.
//!
//! | Route | Response |
//! |---|---|
//! | `GET /_loft/queues` | `200 [{"name","arn","fifo","visible","in_flight","delayed","dead_letter_target","max_receive_count","dead_letter_sources"}]` |
//! | `GET /_loft/queues/{name}/messages[?limit=N&after=SEQ]` | `200 {"messages":[message],"next":SEQ\|null}`: read without claiming; `limit` 1..=1000, default 50 |
//! | `POST /_loft/queues/{name}/messages` | body `{"body", "message_attributes"?, "delay_seconds"?, "group_id"?, "dedup_id"?}`; `201 {"message_id","md5_body","sequence_number"}` |
//! | `POST /_loft/queues/{name}/purge` | `200 {"purged":true}` (PurgeQueue's rules: once a minute) |
//! | `POST /_loft/queues/{name}/redrive` | `200 {"task_handle"}`: StartMessageMoveTask from this dead-letter queue back to its sources |
//! | `POST /_loft/reset`, `POST /_localstack/state/reset` | `200 {"queues","messages","topics","subscriptions","deliveries","mappings","move_tasks","recordings","platforms"}`: counts of what was removed (the caller's account; every account when Loft is open); the configuration file's resources are made again |
//! | `GET /_loft/topics` | `200 [{"name","arn","fifo","subscriptions":[{"arn","protocol","endpoint","confirmed","attributes","pending_deliveries","max_attempts","last_error"}]}]` |
//!
//! `{name}` is the queue's name in the default account and region, or its account and name
//! (`ACCOUNT/NAME`) or account, region and name (`ACCOUNT/REGION/NAME`), `/` percent-encoded
//! as `%2F`, for a queue elsewhere (`loft export` names queues so).
//!
//! A message is `{"seq","message_id","body","md5_body","message_attributes","state",
//! "sent_timestamp","visible_at","receive_count","first_receive_timestamp","group_id",
//! "dedup_id","dead_letter_source_arn"}`; `message_attributes` in AWS's JSON shape
//! (`{"name":{"DataType","StringValue"|"BinaryValue"(base64)}}`), times in ms since the
//! epoch, `state` one of `visible`, `in_flight`, `delayed`.
//!
//! Errors: `{"error": message, "code": AWS error code}` with the error table's HTTP status
//! (e.g. `400` and `AWS.SimpleQueueService.NonExistentQueue` for an unknown queue).

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use loft_core::message::MessageAttributes;
use loft_core::service::{PeekedMessage, SendMessage};
use loft_core::{Error, ErrorCode, Service};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::body::BodyError;
use crate::native::NativeBody;

/// Default number of messages `GET /_loft/queues/{name}/messages` returns.
pub const DEFAULT_PEEK: u32 = 50;

/// An error of the console API: `{"error": message, "code": code}`.
pub struct ConsoleError(pub Error);

impl From<Error> for ConsoleError {
    fn from(e: Error) -> Self {
        ConsoleError(e)
    }
}

impl IntoResponse for ConsoleError {
    fn into_response(self) -> Response {
        let status =
            StatusCode::from_u16(self.0.code.http_status()).unwrap_or(StatusCode::BAD_REQUEST);
        (
            status,
            Json(json!({"error": self.0.message, "code": self.0.code.aws_code()})),
        )
            .into_response()
    }
}

type Svc = State<Arc<Service>>;

/// A message in the console's JSON shape (see the module doc).
pub fn message_json(m: &PeekedMessage) -> Value {
    json!({
        "seq": m.seq,
        "message_id": m.message_id,
        "body": m.body,
        "md5_body": m.md5_body,
        "message_attributes": m.message_attributes,
        "state": m.state.as_str(),
        "sent_timestamp": m.sent_at_ms,
        "visible_at": m.visible_at_ms,
        "receive_count": m.receive_count,
        "first_receive_timestamp": m.first_received_at_ms,
        "group_id": m.group_id,
        "dedup_id": m.dedup_id,
        "dead_letter_source_arn": m.dead_letter_source,
    })
}

/// `GET /_loft/queues`.
pub async fn queues(State(svc): Svc) -> Result<Response, ConsoleError> {
    let list = svc.queue_overview().await?;
    let out: Vec<Value> = list
        .into_iter()
        .map(|q| {
            json!({
                "name": q.name,
                "arn": q.arn,
                "fifo": q.fifo,
                "visible": q.counts.visible,
                "in_flight": q.counts.in_flight,
                "delayed": q.counts.delayed,
                "dead_letter_target": q.dead_letter_target,
                "max_receive_count": q.max_receive_count,
                "dead_letter_sources": q.dead_letter_sources,
            })
        })
        .collect();
    Ok(Json(out).into_response())
}

fn int_param<T: std::str::FromStr>(
    params: &HashMap<String, String>,
    name: &str,
) -> Result<Option<T>, ConsoleError> {
    params
        .get(name)
        .map(|v| {
            v.parse::<T>().map_err(|_| {
                ConsoleError(Error::invalid(format!(
                    "Value {v} for parameter {name} is invalid. Reason: not an integer."
                )))
            })
        })
        .transpose()
}

/// `GET /_loft/queues/{name}/messages`: a page of messages read without claiming them.
pub async fn peek(
    State(svc): Svc,
    Path(name): Path<String>,
    Query(params): Query<HashMap<String, String>>,
) -> Result<Response, ConsoleError> {
    let limit = int_param::<u32>(&params, "limit")?.unwrap_or(DEFAULT_PEEK);
    let after = int_param::<i64>(&params, "after")?;
    let page = svc
        .peek_messages(&svc.canonical_key(&name), after, limit)
        .await?;
    let next = (page.len() as u32 == limit)
        .then(|| page.last().map(|m| m.seq))
        .flatten();
    let messages: Vec<Value> = page.iter().map(message_json).collect();
    Ok(Json(json!({"messages": messages, "next": next})).into_response())
}

/// The body of `POST /_loft/queues/{name}/messages`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SendBody {
    /// MessageBody.
    pub body: String,
    /// MessageAttributes in AWS's JSON shape.
    #[serde(default)]
    pub message_attributes: MessageAttributes,
    /// DelaySeconds (0..=900).
    pub delay_seconds: Option<i64>,
    /// MessageGroupId.
    pub group_id: Option<String>,
    /// MessageDeduplicationId.
    pub dedup_id: Option<String>,
}

/// `POST /_loft/queues/{name}/messages`: SendMessage.
pub async fn send(
    State(svc): Svc,
    Path(name): Path<String>,
    body: Result<NativeBody, BodyError>,
) -> Result<Response, ConsoleError> {
    let body = match body {
        Ok(b) => b,
        Err(e) => {
            let mut resp = ConsoleError(e.to_error()).into_response();
            e.add_headers(resp.headers_mut());
            return Ok(resp);
        }
    };
    let req: SendBody = serde_json::from_slice(&body).map_err(|e| {
        ConsoleError(Error::new(
            ErrorCode::MalformedRequest,
            format!("bad request body: {e}"),
        ))
    })?;
    let out = svc
        .send_message(
            &svc.canonical_key(&name),
            SendMessage {
                body: req.body,
                delay_seconds: req.delay_seconds,
                message_attributes: req.message_attributes,
                group_id: req.group_id,
                dedup_id: req.dedup_id,
                ..SendMessage::default()
            },
        )
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(json!({
            "message_id": out.message_id,
            "md5_body": out.md5_body,
            "sequence_number": out.sequence_number,
        })),
    )
        .into_response())
}

/// `POST /_loft/queues/{name}/purge`: PurgeQueue.
pub async fn purge(State(svc): Svc, Path(name): Path<String>) -> Result<Response, ConsoleError> {
    svc.purge_queue(&svc.canonical_key(&name)).await?;
    Ok(Json(json!({"purged": true})).into_response())
}

/// `POST /_loft/queues/{name}/redrive`: StartMessageMoveTask from this dead-letter queue
/// back to each message's source queue.
pub async fn redrive(State(svc): Svc, Path(name): Path<String>) -> Result<Response, ConsoleError> {
    let handle = svc
        .start_message_move_task(&svc.canonical_key(&name), None, None)
        .await?;
    Ok(Json(json!({"task_handle": handle})).into_response())
}

/// `POST /_loft/reset` and `POST /_localstack/state/reset`: removes every resource of the
/// caller's account (every account's when Loft is open) and makes the configuration's
/// resources again ([`Service::reset`]); answers what it removed.
pub async fn reset(
    State(svc): Svc,
    caller: Option<axum::Extension<loft_core::service::Principal>>,
) -> Result<Response, ConsoleError> {
    let caller = crate::auth::caller(&svc, caller);
    let counts = svc.reset(&caller).await?;
    Ok(Json(counts).into_response())
}

/// `GET /_loft/topics`.
pub async fn topics(State(svc): Svc) -> Result<Response, ConsoleError> {
    let list = svc.topic_overview().await?;
    let out: Vec<Value> = list
        .into_iter()
        .map(|t| {
            let subs: Vec<Value> = t
                .subscriptions
                .into_iter()
                .map(|s| {
                    json!({
                        "arn": s.arn,
                        "protocol": s.protocol,
                        "endpoint": s.endpoint,
                        "confirmed": s.confirmed,
                        "attributes": s.attributes,
                        "pending_deliveries": s.pending_deliveries,
                        "max_attempts": s.max_attempts,
                        "last_error": s.last_error,
                    })
                })
                .collect();
            json!({"name": t.name, "arn": t.arn, "fifo": t.fifo, "subscriptions": subs})
        })
        .collect();
    Ok(Json(out).into_response())
}

/// `GET /_loft/mappings`: every SQS event source mapping of the default account (the
/// console's, as its queues and topics are) with its state and who polls it
/// (`[{"uuid", "queue_arn", "function_arn", "state", "poller", "batch_size",
/// "batching_window_seconds", "function_response_types", "filters", "maximum_concurrency",
/// "last_modified"}]`, `last_modified` in ms).
pub async fn mappings(State(svc): Svc) -> Result<Response, ConsoleError> {
    let list = svc.mapping_overview(&svc.config().account_id).await?;
    let out: Vec<Value> = list
        .into_iter()
        .map(|(v, poller)| {
            let r = v.record;
            json!({
                "uuid": r.uuid,
                "queue_arn": r.event_source_arn,
                "function_arn": r.function_arn,
                "state": v.state,
                "poller": poller,
                "batch_size": r.batch_size,
                "batching_window_seconds": r.maximum_batching_window_seconds,
                "function_response_types": r.function_response_types,
                "filters": r.filter_patterns,
                "maximum_concurrency": r.maximum_concurrency,
                "last_modified": r.last_modified_ms,
            })
        })
        .collect();
    Ok(Json(out).into_response())
}
