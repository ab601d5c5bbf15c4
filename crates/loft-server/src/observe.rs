//! Request observation, one middleware around every route: a request id, a tracing span and
//! an access log line, and the request counters and latency histogram of `/metrics`.
//!
//! - Every request gets a fresh request id (a UUID). Handlers read it from the
//!   [`RequestId`] request extension (the AWS adapters put it in their bodies); every
//!   response carries it in `x-amzn-requestid`, and every log line written while the request
//!   runs carries it as the `request_id` field of the `request` span.
//! - Labels are bounded: the AWS adapters name the operation (`SendMessage`, `Publish`, ...)
//!   with an [`OperationLabel`] response extension; other routes are labelled by method and
//!   route pattern (`GET /queues/{name}/messages`), never by the concrete path; requests
//!   that match no route are `unmatched`.
//! - The access line goes to target `loft::access` at INFO. `loft serve`'s default filter
//!   (`info,loft::access=warn`) leaves it out, because writing a line per request cost about
//!   a third of the server's CPU on single sends; `LOFT_LOG=info` turns it on.
//! - Per request, the middleware allocates the request id once (shared by the extension,
//!   the span and the header) and nothing for the metrics of an AWS operation: their
//!   labels are `&'static str`s (per-request CPU: BENCHMARKS.md, the floor).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::uri::PathAndQuery;
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;
use tracing::{Instrument, Span};

/// The response header that carries the request id (AWS's name for it).
pub const REQUEST_ID_HEADER: &str = "x-amzn-requestid";

/// The id of the request being served: a UUID (36 characters, lower-case hyphenated), in
/// the request's extensions. Shared, so that the extension, the adapters and the span
/// copy a pointer rather than the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestId(pub Arc<str>);

/// What an adapter says a request was, as a response extension: the metric labels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperationLabel {
    /// The operation: an AWS action name (`SendMessage`), or `Unknown` for one the adapter
    /// does not implement (so clients cannot create label values at will).
    pub operation: Cow<'static, str>,
    /// The protocol: `sqs-json`, `sqs-query`, `sns-query` or `lambda-rest-json`.
    pub protocol: &'static str,
}

/// Upper bounds of the latency histogram buckets, seconds (the last finite one covers a
/// 20 s long poll).
pub const DURATION_BUCKETS: [f64; 14] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 25.0,
];

/// One operation's latency histogram.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Histogram {
    /// Requests per bucket, not cumulative: `buckets[i]` counts durations in
    /// `(DURATION_BUCKETS[i-1], DURATION_BUCKETS[i]]`; durations above the last bound are
    /// only in `count`.
    pub buckets: [u64; DURATION_BUCKETS.len()],
    /// Sum of all durations, seconds.
    pub sum: f64,
    /// Number of requests.
    pub count: u64,
}

impl Histogram {
    /// Adds one duration (seconds).
    pub fn observe(&mut self, seconds: f64) {
        if let Some(i) = DURATION_BUCKETS.iter().position(|b| seconds <= *b) {
            self.buckets[i] += 1;
        }
        self.sum += seconds;
        self.count += 1;
    }
}

/// Request counters by (operation, protocol, HTTP status) and latency by operation, since
/// the process started. Both under one lock, taken once per request; an operation label
/// that is a `&'static str` (every AWS operation) is counted without allocating.
#[derive(Debug, Default)]
pub struct RequestMetrics {
    counters: Mutex<Counters>,
}

/// What [`RequestMetrics`] holds.
#[derive(Debug, Default)]
struct Counters {
    requests: BTreeMap<(Cow<'static, str>, &'static str, u16), u64>,
    durations: BTreeMap<Cow<'static, str>, Histogram>,
}

/// A copy of the request metrics at one instant.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RequestSnapshot {
    /// Requests by (operation, protocol, status).
    pub requests: BTreeMap<(String, String, u16), u64>,
    /// Latency by operation.
    pub durations: BTreeMap<String, Histogram>,
}

impl RequestMetrics {
    /// Counts one request of `operation` over `protocol` answered with HTTP `status` that
    /// took `seconds`.
    pub fn record(
        &self,
        operation: impl Into<Cow<'static, str>>,
        protocol: &'static str,
        status: u16,
        seconds: f64,
    ) {
        let operation = operation.into();
        let mut c = self.counters.lock().unwrap_or_else(|p| p.into_inner());
        match c.durations.get_mut(operation.as_ref()) {
            Some(h) => h.observe(seconds),
            None => c
                .durations
                .entry(operation.clone())
                .or_default()
                .observe(seconds),
        }
        *c.requests.entry((operation, protocol, status)).or_default() += 1;
    }

    /// Every counter and histogram now.
    pub fn snapshot(&self) -> RequestSnapshot {
        let c = self.counters.lock().unwrap_or_else(|p| p.into_inner());
        RequestSnapshot {
            requests: c
                .requests
                .iter()
                .map(|((op, protocol, status), n)| {
                    ((op.to_string(), protocol.to_string(), *status), *n)
                })
                .collect(),
            durations: c
                .durations
                .iter()
                .map(|(op, h)| (op.to_string(), h.clone()))
                .collect(),
        }
    }
}

/// The protocol label of a route Loft serves for itself (`loft`: console, metrics,
/// readiness, inspection) or of the seeds' REST/JSON API (`rest`).
fn route_protocol(path: &str) -> &'static str {
    let own = ["/_loft", "/console", "/metrics", "/ready"];
    if own.iter().any(|p| {
        path.strip_prefix(p)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    }) {
        "loft"
    } else {
        "rest"
    }
}

/// The middleware: see the module doc. Install with
/// `axum::middleware::from_fn_with_state(metrics, observe)` as the router's outermost layer.
/// [`crate::routes::App`] observes its direct AWS route with [`Observation`] instead, which
/// does the same work.
pub async fn observe(
    State(metrics): State<Arc<RequestMetrics>>,
    mut req: Request,
    next: Next,
) -> Response {
    let route = req.extensions().get::<MatchedPath>().cloned();
    let (obs, span) = Observation::begin(&mut req, route.map(RouteName::Matched));
    async move {
        let resp = next.run(req).await;
        obs.finish(&metrics, resp)
    }
    .instrument(span)
    .await
}

/// The route pattern a request matched, for its metric label when no adapter names the
/// operation.
#[derive(Debug, Clone)]
pub(crate) enum RouteName {
    /// The pattern axum's router matched.
    Matched(MatchedPath),
    /// A route served outside axum's router ([`crate::routes::App`]'s `/`).
    Fixed(&'static str),
}

impl RouteName {
    fn as_str(&self) -> &str {
        match self {
            RouteName::Matched(m) => m.as_str(),
            RouteName::Fixed(s) => s,
        }
    }
}

/// The W3C trace context header (W3C Trace Context, "traceparent Header").
const TRACEPARENT: &str = "traceparent";

/// A request's headers as OpenTelemetry's propagators read them.
struct HeaderExtractor<'a>(&'a axum::http::HeaderMap);

impl opentelemetry::propagation::Extractor for HeaderExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(|k| k.as_str()).collect()
    }
}

/// The X-Ray trace header of the current span's OpenTelemetry context, when traces are
/// exported and that context is valid (the request's span, a child of the caller's
/// `traceparent` span when one came): `Root=1-{first 8 hex digits of the W3C trace
/// id}-{its other 24};Parent={span id, 16 hex digits};Sampled={1|0}` (X-Ray Developer
/// Guide, "Tracing header"; W3C Trace Context, "trace-id"). A send without an
/// `AWSTraceHeader` of its own carries this one, as SQS stores the X-Ray header of a
/// traced sender (SQS Developer Guide, "AWS X-Ray and Amazon SQS"). `None` when traces
/// are not exported (`crates/loft/src/logging.rs`): then Loft adds no header, as SQS
/// adds none for an untraced sender.
pub fn trace_header() -> Option<String> {
    use opentelemetry::trace::TraceContextExt as _;
    use tracing_opentelemetry::OpenTelemetrySpanExt as _;
    let cx = Span::current().context();
    let span = cx.span();
    xray_header(span.span_context())
}

/// `sc` in the X-Ray header form of [`trace_header`]; `None` for an invalid context.
fn xray_header(sc: &opentelemetry::trace::SpanContext) -> Option<String> {
    if !sc.is_valid() {
        return None;
    }
    let trace = format!("{:032x}", sc.trace_id());
    Some(format!(
        "Root=1-{}-{};Parent={:016x};Sampled={}",
        &trace[..8],
        &trace[8..],
        sc.span_id(),
        u8::from(sc.is_sampled())
    ))
}

/// The span context an X-Ray trace header names (`Root=1-XXXXXXXX-YYY…;Parent=…;Sampled=…`,
/// fields in any order, others ignored; X-Ray Developer Guide, "Tracing header"): the trace
/// id is the Root's 32 hex digits, the span id the Parent. `None` when the header has no
/// well-formed Root or Parent (a header SNS started has no Parent: nothing to link to).
fn xray_span_context(header: &str) -> Option<opentelemetry::trace::SpanContext> {
    use opentelemetry::trace::{SpanContext, SpanId, TraceFlags, TraceId, TraceState};
    let (mut trace, mut parent, mut sampled) = (None, None, false);
    for field in header.split(';') {
        let Some((k, v)) = field.trim().split_once('=') else {
            continue;
        };
        match k.trim() {
            "Root" => {
                let mut parts = v.trim().split('-');
                trace = match (parts.next(), parts.next(), parts.next(), parts.next()) {
                    (Some("1"), Some(time), Some(id), None)
                        if is_hex(time, 8) && is_hex(id, 24) =>
                    {
                        TraceId::from_hex(&format!("{time}{id}")).ok()
                    }
                    _ => None,
                };
            }
            "Parent" if is_hex(v.trim(), 16) => parent = SpanId::from_hex(v.trim()).ok(),
            "Sampled" => sampled = v.trim() == "1",
            _ => {}
        }
    }
    let flags = if sampled {
        TraceFlags::SAMPLED
    } else {
        TraceFlags::default()
    };
    let sc = SpanContext::new(trace?, parent?, flags, true, TraceState::default());
    sc.is_valid().then_some(sc)
}

/// Whether `s` is `len` hexadecimal digits.
fn is_hex(s: &str, len: usize) -> bool {
    s.len() == len && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Links the current span (a receive's request span) to the send of each received
/// message that carries an X-Ray `AWSTraceHeader` with a Parent: `(message id, header)`
/// pairs. Each link has attribute `messaging.message.id` (OpenTelemetry semantic
/// conventions, "Messaging spans"), so a trace viewer leads from a receive to the request
/// that sent each message. Nothing when traces are not exported, or for headers that
/// name no span ([`xray_span_context`]).
pub fn link_to_sends<'a>(messages: impl IntoIterator<Item = (&'a str, Option<&'a str>)>) {
    link_span_to_sends(&Span::current(), messages);
}

/// [`link_to_sends`] for `span` rather than the current one (an event source mapping's
/// batch, which is no request).
pub fn link_span_to_sends<'a>(
    span: &Span,
    messages: impl IntoIterator<Item = (&'a str, Option<&'a str>)>,
) {
    use tracing_opentelemetry::OpenTelemetrySpanExt as _;
    if span.is_disabled() {
        return;
    }
    for (id, header) in messages {
        if let Some(sc) = header.and_then(xray_span_context) {
            span.add_link_with_attributes(
                sc,
                vec![opentelemetry::KeyValue::new(
                    "messaging.message.id",
                    id.to_owned(),
                )],
            );
        }
    }
}

/// One request under observation, from its arrival ([`Observation::begin`]: the request
/// id, the `request` span) to its answer ([`Observation::finish`]: the metrics, the
/// `x-amzn-requestid` header, the access line). Run the request's future, and `finish`,
/// inside the span `begin` returns.
///
/// It holds only what `finish` needs (the request's path, not its whole URI; the span is
/// the caller's), as a long poll keeps it through its wait (memory per waiting long
/// poll: BENCHMARKS.md, long polls).
#[derive(Debug)]
pub(crate) struct Observation {
    start: Instant,
    rid: Arc<str>,
    method: axum::http::Method,
    /// The request's path and query (`None` for an authority-form target). A clone shares its bytes with the
    /// request (no copy of the path).
    path: Option<PathAndQuery>,
    route: Option<RouteName>,
}

impl Observation {
    /// Starts observing `req` (matched to `route`, if any): gives it a fresh [`RequestId`]
    /// extension; returns the observation and the request's span, in which the request
    /// is to be served and [`Observation::finish`] called (every log line written inside
    /// it carries `request_id`).
    pub(crate) fn begin(req: &mut Request, route: Option<RouteName>) -> (Observation, Span) {
        let start = Instant::now();
        let mut text = [0u8; uuid::fmt::Hyphenated::LENGTH];
        let rid: Arc<str> = Arc::from(&*uuid::Uuid::new_v4().hyphenated().encode_lower(&mut text));
        req.extensions_mut().insert(RequestId(rid.clone()));
        let method = req.method().clone();
        let path = req.uri().path_and_query().cloned();
        let span = tracing::info_span!("request", request_id = %rid);
        if req.headers().contains_key(TRACEPARENT) {
            // W3C trace context: the caller's span becomes this request's parent when traces
            // are exported (`crates/loft/src/logging.rs`); otherwise the propagator is
            // a no-op and so is this.
            let cx = opentelemetry::global::get_text_map_propagator(|p| {
                p.extract(&HeaderExtractor(req.headers()))
            });
            use tracing_opentelemetry::OpenTelemetrySpanExt as _;
            let _ = span.set_parent(cx);
        }
        (
            Observation {
                start,
                rid,
                method,
                path,
                route,
            },
            span,
        )
    }

    /// Ends the observation with `resp`: counts the request in `metrics`, adds the
    /// request id header when the handler did not, writes the access line (in the current
    /// span: call it inside the span [`Observation::begin`] returned).
    pub(crate) fn finish(self, metrics: &RequestMetrics, mut resp: Response) -> Response {
        let Observation {
            start,
            rid,
            method,
            path,
            route,
        } = self;
        let elapsed = start.elapsed().as_secs_f64();
        // As `Uri::path`: none for an authority-form target (`CONNECT host:port`).
        let path = path.as_ref().map_or("", PathAndQuery::path);
        let (operation, protocol): (Cow<'static, str>, &'static str) =
            match resp.extensions().get::<OperationLabel>() {
                Some(l) => (l.operation.clone(), l.protocol),
                None => match &route {
                    Some(r) => (
                        format!("{method} {}", r.as_str()).into(),
                        route_protocol(r.as_str()),
                    ),
                    None => ("unmatched".into(), route_protocol(path)),
                },
            };
        let status = resp.status().as_u16();
        metrics.record(operation.clone(), protocol, status, elapsed);
        if !resp.headers().contains_key(REQUEST_ID_HEADER) {
            if let Ok(v) = HeaderValue::from_str(&rid) {
                resp.headers_mut().insert(REQUEST_ID_HEADER, v);
            }
        }
        tracing::info!(
            target: "loft::access",
            %method,
            %path,
            operation = %operation,
            protocol,
            status,
            duration_ms = elapsed * 1000.0,
            "request"
        );
        resp
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xray_headers_name_the_w3c_trace_and_span() {
        use opentelemetry::trace::{SpanContext, SpanId, TraceFlags, TraceId, TraceState};
        let sc = SpanContext::new(
            TraceId::from_hex("0af7651916cd43dd8448eb211c80319c").unwrap(),
            SpanId::from_hex("00f067aa0ba902b7").unwrap(),
            TraceFlags::SAMPLED,
            false,
            TraceState::default(),
        );
        let h = xray_header(&sc).unwrap();
        assert_eq!(
            h,
            "Root=1-0af76519-16cd43dd8448eb211c80319c;Parent=00f067aa0ba902b7;Sampled=1"
        );
        let back = xray_span_context(&h).unwrap();
        assert_eq!(back.trace_id(), sc.trace_id());
        assert_eq!(back.span_id(), sc.span_id());
        assert!(back.is_sampled());
        assert!(xray_header(&SpanContext::empty_context()).is_none());
    }

    #[test]
    fn xray_headers_are_read_as_x_ray_writes_them() {
        // X-Ray Developer Guide, "Tracing header": fields in any order, spaces allowed.
        let sc = xray_span_context(
            "Sampled=0; Parent=53995c3f42cd8ad8; Root=1-5759e988-bd862e3fe1be46a994272793",
        )
        .unwrap();
        assert_eq!(
            format!("{:032x}", sc.trace_id()),
            "5759e988bd862e3fe1be46a994272793"
        );
        assert_eq!(format!("{:016x}", sc.span_id()), "53995c3f42cd8ad8");
        assert!(!sc.is_sampled());
        // No Parent (as SNS starts a trace): no span to link to.
        assert!(xray_span_context("Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1").is_none());
        for bad in [
            "",
            "Root=2-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8",
            "Root=1-5759e98-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8",
            "Root=1-+759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8",
            "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad",
            "Root=1-00000000-000000000000000000000000;Parent=53995c3f42cd8ad8",
            "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=0000000000000000",
        ] {
            assert!(xray_span_context(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn histogram_buckets_are_upper_inclusive() {
        let mut h = Histogram::default();
        h.observe(0.001);
        h.observe(0.0011);
        h.observe(100.0);
        assert_eq!(h.buckets[0], 1);
        assert_eq!(h.buckets[1], 1);
        assert_eq!(h.buckets.iter().sum::<u64>(), 2);
        assert_eq!(h.count, 3);
        assert!((h.sum - 100.0021).abs() < 1e-9);
    }

    #[test]
    fn routes_are_labelled_by_owner() {
        assert_eq!(route_protocol("/metrics"), "loft");
        assert_eq!(route_protocol("/_loft/queues"), "loft");
        assert_eq!(route_protocol("/console"), "loft");
        assert_eq!(route_protocol("/queues/{name}"), "rest");
        assert_eq!(route_protocol("/metricsx"), "rest");
        assert_eq!(route_protocol("/"), "rest");
    }

    #[test]
    fn records_by_labels() {
        let m = RequestMetrics::default();
        m.record("SendMessage", "sqs-json", 200, 0.002);
        m.record("SendMessage", "sqs-json", 200, 0.003);
        m.record("SendMessage", "sqs-query", 400, 0.003);
        let s = m.snapshot();
        assert_eq!(
            s.requests[&("SendMessage".into(), "sqs-json".into(), 200)],
            2
        );
        assert_eq!(s.durations["SendMessage"].count, 3);
    }
}
