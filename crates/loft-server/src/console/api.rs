//! The console's JSON routes (Loft's own, not part of any AWS API). Each translates JSON to
//! a service call and back; the rules are the service's, so a send here is validated as a
//! SendMessage is.
//!
//! | Route | Response |
//! |---|---|
//! | `GET /_loft/queues[?filter=TEXT&offset=N&limit=N]` | `200 [{"name","arn","fifo","visible","in_flight","delayed","dead_letter_target","max_receive_count","dead_letter_sources","dead_letter_depth","history"}]`, by name: the queues whose name contains `filter` (ignoring case), `offset` of them skipped, at most `limit` (1..=1000; default: all); headers `X-Total-Count` (how many match) and `Link: <NEXT-PAGE>; rel="next"` when more follow |
//! | `GET /_loft/queues/{name}/messages[?limit=N&after=CURSOR]` | `200 {"messages":[message],"next":CURSOR\|null}`: read without claiming, in send order; `limit` 1..=1000, default 50; `next` (when the page is full) is an opaque text valid for this queue only, which shows neither the store's sequence numbers nor how far apart messages are |
//! | `POST /_loft/queues/{name}/messages` | body `{"body", "message_attributes"?, "delay_seconds"?, "group_id"?, "dedup_id"?}`; `201 {"message_id","md5_body","sequence_number"}` |
//! | `POST /_loft/queues/{name}/purge` | `200 {"purged":true}` (PurgeQueue's rules: once a minute) |
//! | `POST /_loft/queues/{name}/redrive` | `200 {"task_handle"}`: StartMessageMoveTask from this dead-letter queue back to its sources |
//! | `POST /_loft/reset`, `POST /_localstack/state/reset` | `200 {"queues","messages","topics","subscriptions","deliveries","mappings","move_tasks","recordings","platforms"}`: counts of what was removed (the caller's account; every account when Loft is open); the configuration file's resources are made again |
//! | `GET /_loft/topics` | `200 [{"name","arn","fifo","subscriptions":[{"arn","protocol","endpoint","confirmed","attributes","pending_deliveries","max_attempts","last_error"}],"history"}]` |
//!
//! `{name}` is the queue's name in the default account and region, or its account and name
//! (`ACCOUNT/NAME`) or account, region and name (`ACCOUNT/REGION/NAME`), `/` percent-encoded
//! as `%2F`, for a queue elsewhere (`loft export` names queues so).
//!
//! `history` is what this node sampled of the queue or topic
//! ([`loft_core::service::history`]: per node, since the node started, one sample every
//! `--console-sample-interval`, the last 120 kept), oldest first, as parallel arrays: a
//! queue's `{"t":[ms],"visible":[n],"in_flight":[n],"sent_per_s":[rate|null],
//! "received_per_s":[rate|null]}`, a topic's `{"t":[ms],"published_per_s":[rate|null],
//! "pending":[n]}`; a rate is messages per second since the sample before (`null` for the
//! first). `dead_letter_depth` is the visible messages of the queue's dead-letter queue
//! (`null` without one).
//!
//! A message is `{"message_id","body","md5_body","message_attributes","state",
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
use loft_core::service::{OverviewListing, PeekedMessage, SendMessage};
use loft_core::{Error, ErrorCode, Service};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::body::BodyError;
use crate::body::NativeBody;

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

/// The caller the authentication middleware found ([`crate::auth::caller`]).
type Caller = Option<axum::Extension<loft_core::service::Principal>>;

/// A message in the console's JSON shape (see the module doc).
pub fn message_json(m: &PeekedMessage) -> Value {
    json!({
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

/// `GET /_loft/queues[?filter=TEXT&offset=N&limit=N]`: a page of the caller's account's
/// queues in its region (every queue of the default account and region for an open Loft;
/// [`Sqs::visible_queues`]; see the module doc), with the headers `X-Total-Count` (queues matching the filter) and, when more
/// follow, `Link: <...>; rel="next"`.
pub async fn queues(
    State(svc): Svc,
    caller: Caller,
    Query(params): Query<HashMap<String, String>>,
) -> Result<Response, ConsoleError> {
    let listing = OverviewListing {
        filter: params.get("filter").cloned(),
        offset: int_param::<usize>(&params, "offset")?.unwrap_or(0),
        limit: int_param::<usize>(&params, "limit")?,
    };
    let page = svc
        .queue_overview(&crate::auth::caller(&svc, caller), &listing)
        .await?;
    let out: Vec<Value> = page
        .queues
        .into_iter()
        .map(|q| {
            let h = svc.queue_history(&q.name);
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
                "dead_letter_depth": q.dead_letter_depth,
                "history": {
                    "t": h.at_ms,
                    "visible": h.visible,
                    "in_flight": h.in_flight,
                    "sent_per_s": h.sent_per_s,
                    "received_per_s": h.received_per_s,
                },
            })
        })
        .collect();
    let shown = out.len();
    let mut resp = Json(out).into_response();
    let headers = resp.headers_mut();
    headers.insert("x-total-count", page.total.into());
    let next = listing.offset + shown;
    if shown > 0 && next < page.total {
        let mut link = format!("/_loft/queues?offset={next}");
        if let Some(limit) = listing.limit {
            link.push_str(&format!("&limit={limit}"));
        }
        if let Some(f) = &listing.filter {
            link.push_str("&filter=");
            link.push_str(&percent_encode(f));
        }
        if let Ok(v) = format!("<{link}>; rel=\"next\"").parse() {
            headers.insert(axum::http::header::LINK, v);
        }
    }
    Ok(resp)
}

/// `s` percent-encoded for a query string: everything but ASCII letters, digits and
/// `-._~` (RFC 3986 unreserved characters).
fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
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
    let page = svc
        .peek_messages(
            &svc.canonical_key(&name),
            params.get("after").map(String::as_str),
            limit,
        )
        .await?;
    let messages: Vec<Value> = page.messages.iter().map(message_json).collect();
    Ok(Json(json!({"messages": messages, "next": page.next})).into_response())
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
        .sqs()
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
    svc.sqs().purge_queue(&svc.canonical_key(&name)).await?;
    Ok(Json(json!({"purged": true})).into_response())
}

/// `POST /_loft/queues/{name}/redrive`: StartMessageMoveTask from this dead-letter queue
/// back to each message's source queue, started by the caller: its steps are checked as
/// the caller's, as those of a task started over SQS are
/// ([`loft_core::service::Sqs::start_message_move_task_by`]); the route's own access
/// (`permissions::ROUTES`) is StartMessageMoveTask's.
pub async fn redrive(
    State(svc): Svc,
    caller: Option<axum::Extension<loft_core::service::Principal>>,
    Path(name): Path<String>,
) -> Result<Response, ConsoleError> {
    let started_by = caller.and_then(|axum::Extension(p)| p.acting_arn());
    let handle = svc
        .sqs()
        .start_message_move_task_by(started_by.as_deref(), &svc.canonical_key(&name), None, None)
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

/// `GET /_loft/topics`: the caller's account's topics in its region, as
/// `GET /_loft/queues`.
pub async fn topics(State(svc): Svc, caller: Caller) -> Result<Response, ConsoleError> {
    let list = svc
        .topic_overview(&crate::auth::caller(&svc, caller))
        .await?;
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
            let h = svc.topic_history(&t.name);
            json!({"name": t.name, "arn": t.arn, "fifo": t.fifo, "subscriptions": subs,
                "history": {"t": h.at_ms, "published_per_s": h.published_per_s,
                    "pending": h.pending}})
        })
        .collect();
    Ok(Json(out).into_response())
}

/// `GET /_loft/mappings`: every SQS event source mapping of the caller's account (the
/// default account's for an open Loft) with its state and who polls it
/// (`[{"uuid", "queue_arn", "function_arn", "state", "poller", "batch_size",
/// "batching_window_seconds", "function_response_types", "filters", "maximum_concurrency",
/// "last_modified"}]`, `last_modified` in ms).
pub async fn mappings(State(svc): Svc, caller: Caller) -> Result<Response, ConsoleError> {
    let caller = crate::auth::caller(&svc, caller);
    let list = svc.functions().mapping_overview(&caller.account_id).await?;
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
