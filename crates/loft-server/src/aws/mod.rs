//! The AWS protocol adapters: SQS over JSON 1.0 (`X-Amz-Target: AmazonSQS.*`) and Query
//! (`Action=`), on `POST /`, `GET /` and queue URLs (`/{account}/{queue}`).
//!
//! - [`input`]: typed reads of an operation's JSON input shape.
//! - [`query`]: the Query protocol's form decoding and XML encoding.
//! - [`sqs`]: the SQS operations over JSON shapes, shared by both protocols.
//! - [`sns`]: the SNS operations (Query protocol).
//!
//! A request is routed by its shape, never by guessing from the action name alone: the
//! `X-Amz-Target` header means JSON; otherwise the signing service in the Authorization
//! header (or presigned `X-Amz-Credential`), a queue-URL path, the `Version` parameter and
//! the parameters themselves tell SQS from SNS.

pub mod input;
pub mod query;
pub mod sns;
pub mod sqs;

use std::sync::Arc;

use axum::extract::{Extension, OriginalUri, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use loft_core::{Error, ErrorCode, Service};
use serde_json::Value;

use crate::auth::Auth;
use crate::body::{BodyError, RequestBody};
use crate::listen::Scheme;
use crate::observe::{OperationLabel, RequestId};

/// Largest AWS-protocol request body, bytes: a 1 MiB batch Query-encoded can triple.
pub const AWS_BODY_LIMIT: usize = 10 * 1024 * 1024;

/// An AWS-protocol request body, read under [`AWS_BODY_LIMIT`] ([`crate::body`]).
pub type AwsBody = RequestBody<AWS_BODY_LIMIT>;

/// The SQS Query protocol's XML namespace.
pub const SQS_NAMESPACE: &str = "http://queue.amazonaws.com/doc/2012-11-05/";

const JSON_CONTENT_TYPE: &str = "application/x-amz-json-1.0";

/// Which AWS service a Query request is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AwsService {
    /// Amazon SQS.
    Sqs,
    /// Amazon SNS.
    Sns,
}

fn request_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// `scheme://host[:port]` as the client addressed Loft: the listener's scheme, and the
/// `Host` header (HTTP/1) or the URI's authority (`:authority`, HTTP/2); `localhost:9324`
/// when the request names neither.
pub fn base_url(scheme: Scheme, headers: &HeaderMap, uri: &axum::http::Uri) -> String {
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .filter(|h| !h.is_empty())
        .or_else(|| uri.authority().map(|a| a.as_str()))
        .unwrap_or("localhost:9324");
    format!("{scheme}://{host}")
}

/// The signing service named by a SigV4 credential scope
/// (`AKID/20240101/us-east-1/sqs/aws4_request`).
fn scope_service(credential: &str) -> Option<&str> {
    let mut parts = credential.split('/');
    let _ = (parts.next()?, parts.next()?, parts.next()?);
    parts.next()
}

fn signing_service<'a>(headers: &'a HeaderMap, pairs: &'a [(String, String)]) -> Option<&'a str> {
    if let Some(auth) = headers
        .get(header::AUTHORIZATION)
        .and_then(|h| h.to_str().ok())
    {
        if let Some(pos) = auth.find("Credential=") {
            let cred = auth[pos + 11..].split([',', ' ']).next().unwrap_or("");
            return scope_service(cred);
        }
    }
    pairs
        .iter()
        .find(|(k, _)| k == "X-Amz-Credential")
        .and_then(|(_, v)| scope_service(v))
}

/// Decides whether a Query request is for SQS or SNS (see the module doc).
pub fn route_query(
    headers: &HeaderMap,
    path: &str,
    pairs: &[(String, String)],
    action: &str,
) -> AwsService {
    match signing_service(headers, pairs) {
        Some("sqs") => return AwsService::Sqs,
        Some("sns") => return AwsService::Sns,
        _ => {}
    }
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    if segments.len() == 2 {
        return AwsService::Sqs;
    }
    let param = |name: &str| {
        pairs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    match param("Version") {
        Some("2012-11-05") => return AwsService::Sqs,
        Some("2010-03-31") => return AwsService::Sns,
        _ => {}
    }
    if param("QueueUrl").is_some() || param("QueueName").is_some() {
        return AwsService::Sqs;
    }
    if param("TopicArn").is_some()
        || param("SubscriptionArn").is_some()
        || param("TargetArn").is_some()
    {
        return AwsService::Sns;
    }
    if sqs::OPERATIONS.contains(&action) {
        AwsService::Sqs
    } else {
        AwsService::Sns
    }
}

/// The SQS operation an `X-Amz-Target` header names (`AmazonSQS.SendMessage` names
/// `SendMessage`); whether Loft implements it is [`sqs::call`]'s to say.
///
/// Errors: `InvalidAction` when the target is not `AmazonSQS.*`.
pub fn json_target(target: &str) -> Result<&str, Error> {
    target.strip_prefix("AmazonSQS.").ok_or_else(|| {
        Error::new(
            ErrorCode::InvalidAction,
            format!("The target {target} is not an operation of this service."),
        )
    })
}

/// The input of a JSON-protocol request: its body as a JSON object; an empty (or
/// all-whitespace) body is the empty object, as the SDKs send for operations without
/// input.
///
/// Errors: `MalformedRequest` (`MalformedQueryString`) for anything but a JSON object.
pub fn json_input(body: &[u8]) -> Result<Value, Error> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Value::Object(Default::default()));
    }
    match serde_json::from_slice(body) {
        Ok(v @ Value::Object(_)) => Ok(v),
        _ => Err(Error::new(
            ErrorCode::MalformedRequest,
            "The request body is not a valid JSON object.",
        )),
    }
}

/// The service of a Query request whose body could not be read (too large): told by the
/// signing service, the path and the query string as [`route_query`] tells them, SQS when
/// nothing tells.
fn unread_body_service(headers: &HeaderMap, path: &str, pairs: &[(String, String)]) -> AwsService {
    let hinted = signing_service(headers, pairs).is_some()
        || pairs
            .iter()
            .any(|(k, _)| matches!(k.as_str(), "Action" | "Version" | "TopicArn" | "TargetArn"));
    if !hinted {
        return AwsService::Sqs;
    }
    let action = pairs
        .iter()
        .find(|(k, _)| k == "Action")
        .map_or("", |(_, v)| v.as_str());
    route_query(headers, path, pairs, action)
}

fn json_error(e: &Error, request_id: &str) -> Response {
    let status = StatusCode::from_u16(e.code.http_status()).unwrap_or(StatusCode::BAD_REQUEST);
    let body = serde_json::json!({
        "__type": format!("com.amazonaws.sqs#{}", e.code.aws_code()),
        "message": e.message,
    });
    let fault = if e.code.is_sender_fault() {
        "Sender"
    } else {
        "Receiver"
    };
    let mut resp = (status, body.to_string()).into_response();
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(JSON_CONTENT_TYPE),
    );
    if let Ok(v) = HeaderValue::from_str(&format!("{};{fault}", e.code.query_code())) {
        h.insert("x-amzn-query-error", v);
    }
    if let Ok(v) = HeaderValue::from_str(request_id) {
        h.insert("x-amzn-requestid", v);
    }
    resp
}

fn xml_response(status: StatusCode, body: String, request_id: &str) -> Response {
    let mut resp = (status, body).into_response();
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/xml"));
    if let Ok(v) = HeaderValue::from_str(request_id) {
        h.insert("x-amzn-requestid", v);
    }
    resp
}

fn query_error(namespace: &str, e: &Error, request_id: &str) -> Response {
    let status = StatusCode::from_u16(e.code.http_status()).unwrap_or(StatusCode::BAD_REQUEST);
    let body = query::error_response(
        namespace,
        e.code.is_sender_fault(),
        e.code.query_code(),
        &e.message,
        request_id,
    );
    xml_response(status, body, request_id)
}

fn sqs_xml_rules(op: &str) -> &'static query::XmlRules {
    const COMMON_LISTS: [(&str, &str); 6] = [
        ("Messages", "Message"),
        ("QueueUrls", "QueueUrl"),
        ("queueUrls", "QueueUrl"),
        ("Failed", "BatchResultErrorEntry"),
        ("Results", "ListMessageMoveTasksResultEntry"),
        ("StringListValues", "StringListValue"),
    ];
    const MAPS: &[(&str, &str, &str, &str)] = &[
        ("Attributes", "Attribute", "Name", "Value"),
        ("MessageAttributes", "MessageAttribute", "Name", "Value"),
        ("Tags", "Tag", "Key", "Value"),
    ];
    macro_rules! rules {
        ($entry:expr) => {{
            const LISTS: &[(&str, &str)] = &[
                COMMON_LISTS[0],
                COMMON_LISTS[1],
                COMMON_LISTS[2],
                COMMON_LISTS[3],
                COMMON_LISTS[4],
                COMMON_LISTS[5],
                ("Successful", $entry),
            ];
            const RULES: query::XmlRules = query::XmlRules {
                lists: LISTS,
                maps: MAPS,
                member_lists: false,
            };
            &RULES
        }};
    }
    match op {
        "SendMessageBatch" => rules!("SendMessageBatchResultEntry"),
        "DeleteMessageBatch" => rules!("DeleteMessageBatchResultEntry"),
        _ => rules!("ChangeMessageVisibilityBatchResultEntry"),
    }
}

/// The metric label of an operation: its name when the adapter implements it (the call did
/// not fail with `InvalidAction`), else `Unknown`, so label values stay bounded.
fn label<T>(op: &str, protocol: &'static str, result: &Result<T, Error>) -> OperationLabel {
    let known = !matches!(result, Err(e) if e.code == ErrorCode::InvalidAction);
    OperationLabel {
        operation: if known {
            op.to_owned().into()
        } else {
            "Unknown".into()
        },
        protocol,
    }
}

fn sns_error(e: &Error, request_id: &str) -> Response {
    let status = StatusCode::from_u16(e.code.http_status()).unwrap_or(StatusCode::BAD_REQUEST);
    let body = query::error_response(
        sns::SNS_NAMESPACE,
        e.code.is_sender_fault(),
        e.code.aws_code(),
        &e.message,
        request_id,
    );
    xml_response(status, body, request_id)
}

/// The entry point of every AWS-protocol request (`/` and queue URLs). With credentials
/// configured ([`crate::auth`]), the request's SigV4 signature is checked once its
/// protocol is known, and a failure is answered in that protocol's shape. The request id
/// is the one [`crate::observe`] gave the request (a fresh one without that middleware);
/// the response carries an [`OperationLabel`] for the request metrics. Queue URLs in
/// answers are built by [`base_url`] from the listener's [`Scheme`] and the request's host.
///
/// A body that could not be read ([`BodyError`]: over [`AWS_BODY_LIMIT`], no room in the
/// body budget, stalled) is answered in the protocol the head tells (`X-Amz-Target`, else
/// the signing service, the path and the query string): `RequestEntityTooLarge` (413),
/// `ServiceUnavailable` (503, with `Retry-After: 1`), `RequestTimeout` (408) or
/// `MalformedQueryString` (400).
#[allow(clippy::too_many_arguments)] // axum extractors
pub async fn entry(
    State(svc): State<Arc<Service>>,
    State(auth): State<Arc<Auth>>,
    method: Method,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
    rid: Option<Extension<RequestId>>,
    scheme: Option<Extension<Scheme>>,
    body: Result<AwsBody, BodyError>,
) -> Response {
    let rid = rid.map_or_else(request_id, |Extension(RequestId(id))| id);
    let scheme = scheme.map_or(Scheme::Http, |Extension(s)| s);
    let ctx = sqs::Context {
        base_url: base_url(scheme, &headers, &uri),
    };
    let mut op_label = None;
    let mut resp = handle(
        &svc,
        &auth,
        &ctx,
        method,
        uri,
        headers,
        body,
        &rid,
        &mut op_label,
    )
    .await;
    if let Some(l) = op_label {
        resp.extensions_mut().insert(l);
    }
    resp
}

#[allow(clippy::too_many_arguments)]
async fn handle(
    svc: &Arc<Service>,
    auth: &Auth,
    ctx: &sqs::Context,
    method: Method,
    uri: axum::http::Uri,
    headers: HeaderMap,
    body: Result<AwsBody, BodyError>,
    rid: &str,
    op_label: &mut Option<OperationLabel>,
) -> Response {
    let rid = rid.to_owned();
    let mut body = match body {
        Ok(b) => b,
        Err(r) => {
            let e = r.to_error();
            // The body was not read, so the protocol is told by what came before it.
            let mut resp = if headers.contains_key("x-amz-target") {
                json_error(&e, &rid)
            } else {
                let pairs = query::form_pairs(uri.query(), &[]);
                match unread_body_service(&headers, uri.path(), &pairs) {
                    AwsService::Sqs => query_error(SQS_NAMESPACE, &e, &rid),
                    AwsService::Sns => sns_error(&e, &rid),
                }
            };
            r.add_headers(resp.headers_mut());
            return resp;
        }
    };
    let now = svc.now_ms().div_euclid(1000);
    let authenticate = || auth.check(&method, &uri, &headers, &body, now);
    if let Some(target) = headers.get("x-amz-target") {
        if let Err(e) = authenticate() {
            return json_error(&e, &rid);
        }
        let target = target.to_str().unwrap_or("");
        let known = target
            .strip_prefix("AmazonSQS.")
            .and_then(|op| sqs::OPERATIONS.iter().find(|o| **o == op));
        *op_label = Some(OperationLabel {
            operation: known.copied().unwrap_or("Unknown").into(),
            protocol: "sqs-json",
        });
        let op = match json_target(target) {
            Ok(op) => op,
            Err(e) => return json_error(&e, &rid),
        };
        let input = match json_input(&body) {
            Ok(v) => v,
            Err(e) => return json_error(&e, &rid),
        };
        // The decoded input is what the call needs; the raw bytes go (still counted).
        body.release();
        let result = sqs::call(svc, ctx, op, &input).await;
        *op_label = Some(label(op, "sqs-json", &result));
        return match result {
            Ok(out) => {
                let mut resp = (StatusCode::OK, out.to_string()).into_response();
                let h = resp.headers_mut();
                h.insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static(JSON_CONTENT_TYPE),
                );
                if let Ok(v) = HeaderValue::from_str(&rid) {
                    h.insert("x-amzn-requestid", v);
                }
                resp
            }
            Err(e) => json_error(&e, &rid),
        };
    }
    // The Query protocol: parameters from the query string and a form body.
    let form: &[u8] = if method == Method::POST { &body } else { &[] };
    let pairs = query::form_pairs(uri.query(), form);
    let action = pairs
        .iter()
        .find(|(k, _)| k == "Action")
        .map(|(_, v)| v.clone());
    let Some(action) = action else {
        // Neither X-Amz-Target nor Action: not an AWS request at all.
        return crate::native::not_found().await;
    };
    let service = route_query(&headers, uri.path(), &pairs, &action);
    let unsigned_allowed = service == AwsService::Sns
        && crate::auth::UNSIGNED_SNS_ACTIONS.contains(&action.as_str())
        && crate::sigv4::location(&headers, uri.query()) == crate::sigv4::Location::None;
    if !unsigned_allowed {
        if let Err(e) = authenticate() {
            return match service {
                AwsService::Sqs => query_error(SQS_NAMESPACE, &e, &rid),
                AwsService::Sns => sns_error(&e, &rid),
            };
        }
    }
    // The pairs were decoded leniently to route the request; its input must be exact.
    if let Err(e) = query::check_utf8(uri.query(), form) {
        return match service {
            AwsService::Sqs => query_error(SQS_NAMESPACE, &e, &rid),
            AwsService::Sns => sns_error(&e, &rid),
        };
    }
    match service {
        AwsService::Sqs => {
            let mut input = match query::decode(&pairs) {
                Ok(v) => v,
                Err(e) => return query_error(SQS_NAMESPACE, &e, &rid),
            };
            let segments: Vec<&str> = uri.path().split('/').filter(|s| !s.is_empty()).collect();
            if segments.len() == 2 && input.get("QueueUrl").is_none() {
                if let Value::Object(map) = &mut input {
                    map.insert(
                        "QueueUrl".into(),
                        Value::String(format!("{}{}", ctx.base_url, uri.path())),
                    );
                }
            }
            drop(pairs);
            body.release();
            let result = sqs::call(svc, ctx, &action, &input).await;
            *op_label = Some(label(&action, "sqs-query", &result));
            match result {
                Ok(out) => {
                    let body = query::response(
                        &action,
                        SQS_NAMESPACE,
                        &out,
                        sqs_xml_rules(&action),
                        &rid,
                        !sqs::NO_OUTPUT.contains(&action.as_str()),
                    );
                    xml_response(StatusCode::OK, body, &rid)
                }
                Err(e) => query_error(SQS_NAMESPACE, &e, &rid),
            }
        }
        AwsService::Sns => {
            let input = match query::decode_sns(&pairs) {
                Ok(v) => v,
                Err(e) => return sns_error(&e, &rid),
            };
            drop(pairs);
            body.release();
            let result = sns::call(svc, &action, &input).await;
            *op_label = Some(label(&action, "sns-query", &result));
            match result {
                Ok(out) => {
                    let body = query::response(
                        &action,
                        sns::SNS_NAMESPACE,
                        &out,
                        &sns::XML_RULES,
                        &rid,
                        !sns::NO_OUTPUT.contains(&action.as_str()),
                    );
                    xml_response(StatusCode::OK, body, &rid)
                }
                Err(e) => sns_error(&e, &rid),
            }
        }
    }
}
