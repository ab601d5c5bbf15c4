//! The AWS protocol adapters: SQS over JSON 1.0 (`X-Amz-Target: AmazonSQS.*`) and Query
//! (`Action=`), SNS over Query, on `POST /`, `GET /` and queue URLs (`/{account}/{queue}`).
//!
//! - [`shape`]: the model's shapes as Rust types, and how each wire spells them.
//! - [`sqs`] and [`sns`]: each service's typed operations ([`sqs::types`],
//!   [`sns::types`]) and the one arm per operation that calls the Service.
//! - [`sqs_json`], [`sqs_query`], [`sns_query`]: one decoder and one encoder per wire
//!   protocol, errors rendered from the error table.
//! - [`lambda`] and [`lambda_rest`]: Lambda's event-source-mapping operations and
//!   GetFunction/ListFunctions over REST-JSON under `/2015-03-31/`.
//! - [`query`]: what both Query protocols share: form parameters, the parameter tree, the
//!   XML documents.
//!
//! A request is routed by its shape, never by guessing from the action name alone: the
//! `X-Amz-Target` header means JSON; otherwise the signing service in the Authorization
//! header (or presigned `X-Amz-Credential`), a queue-URL path, the `Version` parameter and
//! the parameters themselves tell SQS from SNS. One request's way through this module is
//! in ARCHITECTURE.md.

pub mod access;
pub mod lambda;
pub mod lambda_rest;
pub mod query;
pub mod shape;
pub mod sns;
pub mod sns_query;
pub mod sqs;
pub mod sqs_json;
pub mod sqs_query;

use std::sync::Arc;

use axum::extract::{OriginalUri, Request, State};
use axum::http::{header, HeaderMap, Method};
use axum::response::Response;
use futures_util::FutureExt;
use loft_core::{Error, ErrorCode, Service};

use crate::auth::Auth;
use crate::body::{BodyError, RequestBody};
use crate::listen::Scheme;
use crate::observe::{OperationLabel, RequestId};

/// Largest AWS-protocol request body, bytes: a 1 MiB batch Query-encoded can triple.
pub const AWS_BODY_LIMIT: usize = 10 * 1024 * 1024;

/// An AWS-protocol request body, read under [`AWS_BODY_LIMIT`] ([`crate::body`]).
pub type AwsBody = RequestBody<AWS_BODY_LIMIT>;

/// The SQS Query protocol's XML namespace.
pub const SQS_NAMESPACE: &str = sqs_query::NAMESPACE;

/// Where a request came in and who sent it: what queue URLs are built from, and the caller
/// whose account and permissions apply. One for every AWS protocol: SQS, SNS and Lambda.
#[derive(Debug, Clone)]
pub struct Context {
    /// The authenticated caller ([`loft_core::service::Principal::open`] for an open
    /// Loft).
    pub principal: loft_core::service::Principal,
    /// `scheme://host[:port]` as the client addressed Loft.
    pub base_url: String,
    /// The `X-Amzn-Trace-Id` header: the X-Ray trace header SDKs send, which becomes a
    /// message's `AWSTraceHeader` system attribute unless the request gives that
    /// attribute itself (SQS Developer Guide, "AWS X-Ray and Amazon SQS"). Without the
    /// header, while OpenTelemetry traces are exported: the request span's trace context
    /// in X-Ray form ([`crate::observe::trace_header`]).
    pub trace_header: Option<String>,
    /// The connection the request came on, so a long poll ends when its client goes
    /// away (`None` when served without one, as in tests calling the router directly).
    pub client: Option<crate::client_link::ClientLink>,
    /// Loft requires signatures and this request, one of the SNS actions open without one
    /// ([`crate::auth::UNSIGNED_SNS_ACTIONS`]), carried none: its caller is no one's.
    pub unsigned: bool,
}

/// Which AWS service a Query request is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AwsService {
    /// Amazon SQS.
    Sqs,
    /// Amazon SNS.
    Sns,
}

fn request_id() -> Arc<str> {
    uuid::Uuid::new_v4().to_string().into()
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

/// Field `index` of a SigV4 credential (`AKID/20240101/us-east-1/sqs/aws4_request`):
/// 2 is the scope's region, 3 its service.
fn credential_field(credential: &str, index: usize) -> Option<&str> {
    credential.split('/').nth(index)
}

/// The credential of a SigV4-signed request: the Authorization header's `Credential=`, or
/// a presigned URL's `X-Amz-Credential`.
fn credential<'a>(headers: &'a HeaderMap, pairs: &'a [(String, String)]) -> Option<&'a str> {
    if let Some(auth) = headers
        .get(header::AUTHORIZATION)
        .and_then(|h| h.to_str().ok())
    {
        if let Some(pos) = auth.find("Credential=") {
            return auth[pos + 11..].split([',', ' ']).next();
        }
    }
    pairs
        .iter()
        .find(|(k, _)| k == "X-Amz-Credential")
        .map(|(_, v)| v.as_str())
}

fn signing_service<'a>(headers: &'a HeaderMap, pairs: &'a [(String, String)]) -> Option<&'a str> {
    credential(headers, pairs).and_then(|c| credential_field(c, 3))
}

/// The region of the request's SigV4 credential scope, unverified: what an open Loft (no
/// credentials configured, so no signature checked) takes as the request's region, as a
/// verified Loft takes [`crate::sigv4::Verified::region`].
fn scope_region(headers: &HeaderMap, uri: &axum::http::Uri) -> Option<String> {
    let pairs = query::form_pairs(uri.query(), &[]);
    credential(headers, &pairs)
        .and_then(|c| credential_field(c, 2))
        .map(str::to_owned)
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
    if sqs_query::is_queue_path(path) {
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
    if sqs::types::OPERATIONS.iter().any(|o| o.name == action) {
        AwsService::Sqs
    } else {
        AwsService::Sns
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

/// The metric label of an operation: its name when the service has it (it is one of
/// `operations`), else `Unknown`, so label values stay bounded.
fn label(op: &str, protocol: &'static str, operations: &[shape::Operation]) -> OperationLabel {
    OperationLabel {
        operation: operations
            .iter()
            .find(|o| o.name == op)
            .map_or("Unknown", |o| o.name)
            .into(),
        protocol,
    }
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
/// `MalformedQueryString` (400). Every 503 answer carries `Retry-After: 1`.
///
/// The request is taken apart here rather than by one extractor per piece, so that its
/// headers and extensions are moved, not copied (per-request CPU: BENCHMARKS.md, the floor).
///
/// The future it returns holds, through the operation (a long poll: 20 s), only the
/// operation's future and the metric label: the request is opened (its body read, the
/// caller authenticated, the operation decoded) in a boxed future of its own, freed once
/// the operation starts (every byte of this future is held per waiting long poll, and by
/// hyper per connection: BENCHMARKS.md, long polls).
pub fn entry(
    State(svc): State<Arc<Service>>,
    State(auth): State<Arc<Auth>>,
    req: Request,
) -> impl std::future::Future<Output = Response> + Send + 'static {
    let opened = Box::pin(open(svc, auth, req));
    async move {
        let (answer, op_label) = opened.await;
        let mut resp = answer.await;
        // Every 503 (`ServiceUnavailable`: a storage cell that is down, storage full)
        // says when to retry, whatever the protocol's body.
        if resp.status() == axum::http::StatusCode::SERVICE_UNAVAILABLE {
            resp.headers_mut()
                .entry(header::RETRY_AFTER)
                .or_insert(axum::http::HeaderValue::from_static("1"));
        }
        if let Some(l) = op_label {
            resp.extensions_mut().insert(l);
        }
        resp
    }
}

/// [`entry`]'s first part: reads the body and hands the request to [`handle`], which
/// routes, authenticates and decodes it; returns the operation's future and its metric
/// label.
async fn open(
    svc: Arc<Service>,
    auth: Arc<Auth>,
    req: Request,
) -> (Answer, Option<OperationLabel>) {
    let (parts, body) = req.into_parts();
    // Boxed, as every await before the operation's own: this future lives as long as the
    // request (a long poll: 20 s), and its size is that of its largest state, so a
    // transient state kept inline would be held for the whole wait (memory per waiting
    // long poll: BENCHMARKS.md, long polls).
    let body = Box::pin(AwsBody::from_parts(&parts, body)).await;
    let axum::http::request::Parts {
        method,
        uri,
        headers,
        mut extensions,
        ..
    } = parts;
    let ext = &mut extensions;
    // The URI the client sent (axum's `OriginalUri`, the same as the request's when no
    // router is nested).
    let uri = ext.remove::<OriginalUri>().map_or(uri, |OriginalUri(u)| u);
    let rid = ext
        .remove::<RequestId>()
        .map_or_else(request_id, |RequestId(id)| id);
    let scheme = ext.get::<Scheme>().copied().unwrap_or(Scheme::Http);
    let peer = ext
        .get::<crate::listen::ClientAddr>()
        .map(|c| c.0)
        .or_else(|| ext.get::<crate::listen::PeerAddr>().map(|p| p.0.ip()));
    let client = ext.remove::<crate::client_link::ClientLink>();
    // What is left of the extensions (the listener's, axum's) is not needed further, and
    // is not kept through a long poll.
    drop(extensions);
    let mut principal = svc.open_principal();
    principal.secure_transport = scheme == Scheme::Https;
    principal.source_ip = peer;
    let ctx = Context {
        principal,
        base_url: base_url(scheme, &headers, &uri),
        // The caller's X-Ray header, or, while traces are exported, the request span's
        // context in X-Ray form (`crate::observe::trace_header`).
        trace_header: headers
            .get("x-amzn-trace-id")
            .and_then(|v| v.to_str().ok())
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
            .or_else(crate::observe::trace_header),
        client,
        unsigned: false,
    };
    let mut op_label = None;
    let answer = handle(
        &svc,
        &auth,
        ctx,
        method,
        uri,
        headers,
        body,
        &rid,
        &mut op_label,
    );
    (answer, op_label)
}

/// What [`handle`] leaves to await: the operation and the encoding of its answer, in one
/// boxed future that owns what it needs (the Service, the context, the decoded request,
/// the request id) and nothing of the request's head or body, which are gone by then.
type Answer = std::pin::Pin<Box<dyn std::future::Future<Output = Response> + Send>>;

/// An answer that is ready now (an error found before the operation).
fn ready(resp: Response) -> Answer {
    Box::pin(std::future::ready(resp))
}

/// Routes, authenticates and decodes the request, synchronously, and returns the future
/// that runs its operation: that future alone is what a long poll holds through its wait
/// (memory per waiting long poll: BENCHMARKS.md, long polls), not this function's locals.
#[allow(clippy::too_many_arguments)]
fn handle(
    svc: &Arc<Service>,
    auth: &Auth,
    ctx: Context,
    method: Method,
    uri: axum::http::Uri,
    headers: HeaderMap,
    body: Result<AwsBody, BodyError>,
    rid: &Arc<str>,
    op_label: &mut Option<OperationLabel>,
) -> Answer {
    let mut body = match body {
        Ok(b) => b,
        Err(r) => {
            let e = r.to_error();
            // The body was not read, so the protocol is told by what came before it.
            let mut resp = if headers.contains_key("x-amz-target") {
                sqs_json::error(&e, rid)
            } else {
                let pairs = query::form_pairs(uri.query(), &[]);
                match unread_body_service(&headers, uri.path(), &pairs) {
                    AwsService::Sqs => sqs_query::error(&e, rid, false),
                    AwsService::Sns => sns_query::error(&e, rid),
                }
            };
            r.add_headers(resp.headers_mut());
            return ready(resp);
        }
    };
    let now = svc.now_ms().div_euclid(1000);
    // The caller: who signed the request (the open principal when Loft is open).
    // Its region: the credential scope's (see `Principal::sign_region`). The context is
    // moved in and out, not copied: it is built once per request.
    // A signature counts for the service its credential scope names (`sqs` or `sns`),
    // as AWS's front ends refuse one scoped to another ("Credential should be scoped to
    // correct service: 'sqs'. ", SignatureDoesNotMatch, 403).
    let authenticate = |mut ctx: Context, expected: &str| {
        // An open Loft checks no signature but reads the credential scope (its region),
        // so an `Authorization` header that is not one ASCII value is refused here too.
        crate::sigv4::authorization_header(&headers)?;
        let verified = auth.check(&method, &uri, &headers, &body, now)?;
        if let Some(v) = &verified {
            if v.service != expected {
                return Err(Error::new(
                    ErrorCode::SignatureDoesNotMatch,
                    format!("Credential should be scoped to correct service: '{expected}'. "),
                ));
            }
        }
        Ok::<_, Error>(verified).map(|v| {
            match v {
                Some(v) => {
                    let mut p = auth.principal(svc.config(), Some(&v.access_key));
                    p.secure_transport = ctx.principal.secure_transport;
                    p.source_ip = ctx.principal.source_ip.take();
                    p.sign_region(Some(&v.region));
                    ctx.principal = p;
                }
                None => ctx
                    .principal
                    .sign_region(scope_region(&headers, &uri).as_deref()),
            }
            ctx
        })
    };
    if let Some(target) = headers.get("x-amz-target") {
        let ctx = match authenticate(ctx, "sqs") {
            Ok(c) => c,
            Err(e) => return ready(sqs_json::error(&e, rid)),
        };
        let target = target.to_str().unwrap_or("");
        let request = sqs_json::target(target).and_then(|op| sqs_json::decode(op, &body));
        // The decoded request is what the call needs; the raw bytes go (still counted).
        body.release();
        *op_label = Some(label(
            target.strip_prefix("AmazonSQS.").unwrap_or(""),
            "sqs-json",
            sqs::types::OPERATIONS,
        ));
        // The head too, before the operation: its header values and URI are slices of
        // the connection's read buffer, which a long poll would otherwise keep alive for
        // its whole wait beside the buffer hyper reads the next request into.
        drop(headers);
        drop(uri);
        // The operation is started now, so this future owns its future alone, not the
        // decoded request and context beside it ([`sqs::call`]).
        let op = sqs_operation(svc, ctx, request);
        let rid = rid.clone();
        return Box::pin(op.map(move |result| match result {
            Ok(out) => sqs_json::response(&out, &rid),
            Err(e) => sqs_json::error(&e, &rid),
        }));
    }
    // The Query protocol: parameters from the query string and a form body.
    let form: &[u8] = if method == Method::POST { &body } else { &[] };
    let pairs = query::form_pairs(uri.query(), form);
    let action = pairs
        .iter()
        .find(|(k, _)| k == "Action")
        .map(|(_, v)| v.clone());
    let Some(action) = action else {
        // Neither X-Amz-Target nor Action: a queue URL answers as SQS does, anything else
        // is not an AWS request at all.
        if sqs_query::is_account_queue_path(uri.path()) {
            let e = Error::with(ErrorCode::UnknownOperation, &[]);
            return ready(sqs_query::error(&e, rid, false));
        }
        return Box::pin(crate::reply::not_found());
    };
    let service = route_query(&headers, uri.path(), &pairs, &action);
    let json = service == AwsService::Sqs && sqs_query::wants_json(&headers);
    let fail = move |e: &Error, rid: &str| match service {
        AwsService::Sqs => sqs_query::error(e, rid, json),
        AwsService::Sns => sns_query::error(e, rid),
    };
    let unsigned_allowed = service == AwsService::Sns
        && crate::auth::UNSIGNED_SNS_ACTIONS.contains(&action.as_str())
        && crate::sigv4::location(&headers, uri.query()) == crate::sigv4::Location::None;
    let ctx = if unsigned_allowed {
        Context {
            unsigned: auth.enabled(),
            ..ctx
        }
    } else {
        let expected = match service {
            AwsService::Sqs => "sqs",
            AwsService::Sns => "sns",
        };
        match authenticate(ctx, expected) {
            Ok(c) => c,
            Err(e) => return ready(fail(&e, rid)),
        }
    };
    // The pairs were decoded leniently to route the request; its input must be exact.
    if let Err(e) = query::check_utf8(uri.query(), form) {
        return ready(fail(&e, rid));
    }
    match service {
        AwsService::Sqs => {
            let request = sqs_query::decode(&action, &pairs, uri.path(), &ctx.base_url);
            *op_label = Some(label(&action, "sqs-query", sqs::types::OPERATIONS));
            // As on the JSON path: nothing of the request but its decoded input is kept
            // through the operation.
            drop(pairs);
            body.release();
            drop(headers);
            drop(uri);
            let op = sqs_operation(svc, ctx, request);
            let rid = rid.clone();
            Box::pin(op.map(move |result| match result {
                Ok(out) => sqs_query::response(&out, &rid, json),
                Err(e) => fail(&e, &rid),
            }))
        }
        AwsService::Sns => {
            let request = sns_query::decode(&action, &pairs);
            *op_label = Some(label(&action, "sns-query", sns::types::OPERATIONS));
            drop(pairs);
            body.release();
            drop(headers);
            drop(uri);
            let (svc, rid) = (svc.clone(), rid.clone());
            Box::pin(async move {
                let result = match request {
                    Ok(req) => sns::call(&svc, &ctx, req).await,
                    Err(e) => Err(e),
                };
                match result {
                    Ok(out) => sns_query::response(&out, &rid),
                    Err(e) => fail(&e, &rid),
                }
            })
        }
    }
}

/// The running SQS operation of a decoded `request` ([`sqs::call`]), or its decoding error.
fn sqs_operation(
    svc: &Arc<Service>,
    ctx: Context,
    request: loft_core::Result<sqs::types::SqsRequest>,
) -> futures_util::future::Either<
    impl std::future::Future<Output = loft_core::Result<sqs::types::SqsResponse>> + Send + 'static,
    std::future::Ready<loft_core::Result<sqs::types::SqsResponse>>,
> {
    match request {
        Ok(req) => futures_util::future::Either::Left(sqs::call(svc.clone(), ctx, req)),
        Err(e) => futures_util::future::Either::Right(std::future::ready(Err(e))),
    }
}

/// Sizes of the futures a request holds while it is served (a waiting long poll holds the
/// whole chain for up to 20 s: BENCHMARKS.md, long polls). Not a check: it prints them, for
/// `cargo test --release -p loft-server --lib future_sizes -- --ignored --nocapture`.
#[cfg(test)]
pub(crate) mod future_sizes {
    use std::future::Future;

    use super::*;

    /// The size of the future `f` returns, bytes.
    pub(crate) fn probe<A, F: Future>(_: impl Fn(A) -> F) -> usize {
        std::mem::size_of::<F>()
    }

    /// Prints each `(size, name)` row.
    pub(crate) fn print(rows: &[(&str, usize)]) {
        for (name, size) in rows {
            println!("{size:>6} B  {name}");
        }
    }

    #[test]
    #[ignore = "prints sizes; run by hand"]
    fn future_sizes() {
        type Parts = axum::http::request::Parts;
        let rows = [
            (
                "aws::entry",
                probe(|(s, a, r): (Arc<Service>, Arc<Auth>, Request)| entry(State(s), State(a), r)),
            ),
            (
                "AwsBody::from_parts (+ Parts)",
                probe(|(p, b): (Parts, axum::body::Body)| async move {
                    AwsBody::from_parts(&p, b).await
                }),
            ),
            (
                "sqs::call",
                probe(
                    |(s, c, r): (Arc<Service>, Context, sqs::types::SqsRequest)| sqs::call(s, c, r),
                ),
            ),
            (
                "sqs::receive_wait (boxed, held by a waiting poll)",
                probe(
                    |(s, n, r, g): (
                        Arc<Service>,
                        String,
                        loft_core::service::ReceiveMessage,
                        sqs::Gone,
                    )| sqs::receive_wait(s, n, r, g),
                ),
            ),
            (
                "Sqs::receive_message_until",
                probe(
                    |(s, r): (
                        &'static Service,
                        &'static loft_core::service::ReceiveMessage,
                    )| {
                        s.sqs()
                            .receive_message_until("q", r, std::future::pending())
                    },
                ),
            ),
            (
                "ClientLink::gone (+ link)",
                probe(|c: crate::client_link::ClientLink| async move { c.gone().await }),
            ),
            (
                "observe",
                probe(
                    |(s, r, n): (
                        State<Arc<crate::observe::RequestMetrics>>,
                        Request,
                        axum::middleware::Next,
                    )| crate::observe::observe(s, r, n),
                ),
            ),
            ("Context", std::mem::size_of::<Context>()),
            ("SqsRequest", std::mem::size_of::<sqs::types::SqsRequest>()),
            ("Request", std::mem::size_of::<Request>()),
            ("Parts", std::mem::size_of::<Parts>()),
            ("loft_core::Error", std::mem::size_of::<Error>()),
        ];
        print(&rows);
    }
}
