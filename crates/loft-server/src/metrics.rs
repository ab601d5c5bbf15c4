//! Operational endpoints: `GET /metrics` (Prometheus text format 0.0.4) and `GET /ready`.
//!
//! The text is written by hand rather than through a metrics crate: every value is a
//! snapshot taken at scrape time (queue gauges from the store, counters the service and the
//! request middleware keep in memory), so a registry would only copy them once more, and the
//! exposition format needs about a hundred lines (escaping, cumulative buckets) that the unit
//! tests below pin down. No global recorder means several servers in one process (tests) do
//! not share metrics.
//!
//! Families (all counters since the process started):
//!
//! | name | type | labels | meaning |
//! |---|---|---|---|
//! | `loft_queue_messages` | gauge | `queue`, `state` (`visible`, `in_flight`, `delayed`) | messages in the queue now |
//! | `loft_queue_oldest_message_age_seconds` | gauge | `queue` | age of the queue's oldest message (visible, in flight or delayed) by its send time, seconds; `0` when empty (SQS's ApproximateAgeOfOldestMessage, a CloudWatch metric) |
//! | `loft_queue_dead_letter_sources` | gauge | `queue` | how many queues' RedrivePolicy names this queue as their dead-letter queue; `0` for a queue that is none's (selects dead-letter queues in alert rules) |
//! | `loft_messages_sent_total` | counter | `queue` | messages stored by sends and SNS fan-out |
//! | `loft_messages_received_total` | counter | `queue` | messages handed out by receives |
//! | `loft_messages_deleted_total` | counter | `queue` | messages deleted by DeleteMessage, each deleted entry of DeleteMessageBatch, the seeds' DELETE and event source mappings (not PurgeQueue) |
//! | `loft_messages_dead_lettered_total` | counter | `queue` (the source) | messages moved to the queue's DLQ past maxReceiveCount |
//! | `loft_messages_undecryptable_total` | counter | `queue` | messages a receive passed over because they cannot be decrypted with this master key (left in the queue untouched; each counted once per process) |
//! | `loft_requests_total` | counter | `operation`, `protocol`, `status` | HTTP requests answered |
//! | `loft_request_duration_seconds` | histogram | `operation` | time to answer, seconds |
//! | `loft_deliveries_total` | counter | `protocol`, `outcome` | SNS deliveries by subscription protocol and outcome |
//! | `loft_sns_replayed_notifications_total` | counter | `outcome` | SNS message replay copies: `delivered`, `failed` (to the dead-letter queue) |
//! | `loft_deliveries_pending` | gauge | | HTTP/S deliveries waiting (due or to retry) |
//! | `loft_request_body_bytes` | gauge | | bytes of request bodies held now ([`crate::body`]) |
//! | `loft_request_body_budget_bytes` | gauge | | the most they may be (`--max-body-bytes-in-flight`) |
//!
//! With `--metrics-auth` ([`crate::auth::Auth::metrics_auth`]) a scrape is signed and
//! shows the caller's account's queue and topic series only, and the node-wide families
//! (requests, deliveries, body bytes) to the server's own account only
//! ([`Scrape::only_account`]).
//!
//! A queue or topic outside the default account and region also has the labels
//! `account` and `region` (its `queue`/`topic` label is then its bare name); the default
//! ones' series have neither, as before accounts and regions existed
//! ([`resource_labels`]).
//!
//! The last two come from the body budget the listener hands each request
//! ([`crate::listen::serve`]); a router called without it shows neither.
//! | `loft_fair_queue_noisy_groups` | gauge | `queue` | fair queues: groups that are noisy neighbours now (AWS's ApproximateNumberOfNoisyGroups) |
//! | `loft_fair_queue_quiet_messages` | gauge | `queue`, `state` | fair queues: messages of quiet groups (ApproximateNumberOfMessagesVisibleInQuietGroups, ...NotVisible..., ...Delayed...) |
//! | `loft_fair_queue_quiet_oldest_age_seconds` | gauge | `queue` | fair queues: age of the oldest visible message of a quiet group (ApproximateAgeOfOldestMessageInQuietGroups) |

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;

use axum::extract::{Extension, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use loft_core::service::activity::{ActivitySnapshot, QueueActivity};
use loft_core::service::operator::FairQueueStatus;
use loft_core::service::Principal;
use loft_core::Service;
use serde_json::json;

use crate::body::BodyBudget;
use crate::observe::{RequestMetrics, RequestSnapshot, DURATION_BUCKETS};

/// Content-Type of `/metrics`: Prometheus text exposition format 0.0.4.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Shared state of `/metrics`.
#[derive(Clone)]
pub struct Metrics {
    /// The service: queue gauges, activity counters, pending deliveries.
    pub service: Arc<Service>,
    /// The request middleware's counters.
    pub requests: Arc<RequestMetrics>,
}

/// Message counts of one queue at scrape time: (visible, in flight, delayed).
pub type QueueGauge = (String, i64, i64, i64);

/// The age of one queue's oldest message at scrape time, ms (0: empty).
pub type QueueAge = (String, i64);

/// Everything one scrape shows.
#[derive(Debug, Clone, Default)]
pub struct Scrape {
    /// Queues by name with their counts now.
    pub queues: Vec<QueueGauge>,
    /// Queues by name with the age of their oldest message now.
    pub oldest: Vec<QueueAge>,
    /// Queues by name with how many queues' RedrivePolicy names them as their
    /// dead-letter queue (0: not a dead-letter queue).
    pub dead_letter_sources: Vec<(String, u64)>,
    /// The service's counters.
    pub activity: ActivitySnapshot,
    /// The middleware's counters.
    pub requests: RequestSnapshot,
    /// Pending HTTP/S deliveries.
    pub pending_deliveries: u64,
    /// Request body bytes held now and the budget, bytes (when the request came through
    /// a listener).
    pub body_bytes: Option<(usize, usize)>,
    /// The fair queues by name, as AWS's fair-queue metrics describe them.
    pub fair: Vec<(String, FairQueueStatus)>,
    /// The configured account and region: the store keys above are read against them
    /// ([`resource_labels`]).
    pub default_scope: (String, String),
    /// Whether the series of no one account (requests, deliveries, body bytes) are left
    /// out: never without `--metrics-auth`; with it, for every caller but the server's
    /// account's ([`Scrape::only_account`]).
    pub hide_node_wide: bool,
}

impl Scrape {
    /// Keeps the series of `account`'s queues and topics only (any region), as
    /// `--metrics-auth` shows a caller; the node-wide series stay when `account` is the
    /// server's own (its operator's), else they go too.
    pub fn only_account(&mut self, account: &str) {
        let scope = loft_core::names::Scope {
            account: &self.default_scope.0,
            region: &self.default_scope.1,
        };
        let of = |key: &str| loft_core::names::split_scoped_key(scope, key).0.account == account;
        self.queues.retain(|(q, ..)| of(q));
        self.oldest.retain(|(q, _)| of(q));
        self.dead_letter_sources.retain(|(q, _)| of(q));
        self.fair.retain(|(q, _)| of(q));
        self.activity.queues.retain(|q, _| of(q));
        self.activity.data_protection.retain(|(t, ..), _| of(t));
        self.activity.findings.retain(|(t, _), _| of(t));
        if account != self.default_scope.0 {
            self.hide_node_wide = true;
            self.requests = RequestSnapshot::default();
            self.activity.deliveries.clear();
            self.activity.replayed.clear();
            self.pending_deliveries = 0;
            self.body_bytes = None;
        }
    }
}

/// The labels naming the queue or topic of store key `key` (`kind` is `queue` or `topic`):
/// its name, and for one outside the default account and region (`default`) also its
/// `account` and `region`, so series of the default ones read as before regions and
/// accounts existed (an absent label matches `account=""` in PromQL).
pub fn resource_labels<'a>(
    default: &'a (String, String),
    kind: &'static str,
    key: &'a str,
) -> Vec<(&'static str, &'a str)> {
    let scope = loft_core::names::Scope {
        account: &default.0,
        region: &default.1,
    };
    let (of, name) = loft_core::names::split_scoped_key(scope, key);
    if of == scope {
        vec![(kind, name)]
    } else {
        vec![(kind, name), ("account", of.account), ("region", of.region)]
    }
}

/// Escapes a label value: backslash, double quote and newline.
pub fn escape_label(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

fn labels(pairs: &[(&str, &str)]) -> String {
    labels_of(pairs.iter().copied())
}

/// [`labels`] of a resource's labels ([`resource_labels`]) followed by `more`.
fn labels_with(resource: Vec<(&str, &str)>, more: &[(&str, &str)]) -> String {
    labels_of(resource.into_iter().chain(more.iter().copied()))
}

fn labels_of<'a>(pairs: impl Iterator<Item = (&'a str, &'a str)>) -> String {
    let pairs: Vec<(&str, &str)> = pairs.collect();
    if pairs.is_empty() {
        return String::new();
    }
    let inner: Vec<String> = pairs
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", escape_label(v)))
        .collect();
    format!("{{{}}}", inner.join(","))
}

fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

fn float(v: f64) -> String {
    if v == f64::INFINITY {
        "+Inf".into()
    } else {
        format!("{v}")
    }
}

/// Writes `scrape` in the text exposition format.
pub fn render(scrape: &Scrape) -> String {
    let mut out = String::new();
    family(
        &mut out,
        "loft_queue_messages",
        "gauge",
        "Messages in the queue now, by state (visible, in_flight, delayed).",
    );
    for (q, visible, in_flight, delayed) in &scrape.queues {
        for (state, n) in [
            ("visible", visible),
            ("in_flight", in_flight),
            ("delayed", delayed),
        ] {
            let _ = writeln!(
                out,
                "loft_queue_messages{} {n}",
                labels_with(
                    resource_labels(&scrape.default_scope, "queue", q),
                    &[("state", state)]
                )
            );
        }
    }
    family(
        &mut out,
        "loft_queue_oldest_message_age_seconds",
        "gauge",
        "Age of the oldest message in the queue (visible, in flight or delayed), seconds; 0 when empty (SQS ApproximateAgeOfOldestMessage).",
    );
    for (q, age_ms) in &scrape.oldest {
        let _ = writeln!(
            out,
            "loft_queue_oldest_message_age_seconds{} {}",
            labels_with(resource_labels(&scrape.default_scope, "queue", q), &[]),
            float(*age_ms as f64 / 1000.0)
        );
    }
    family(
        &mut out,
        "loft_queue_dead_letter_sources",
        "gauge",
        "Queues whose RedrivePolicy names this queue as their dead-letter queue (0: not a dead-letter queue).",
    );
    for (q, n) in &scrape.dead_letter_sources {
        let _ = writeln!(
            out,
            "loft_queue_dead_letter_sources{} {n}",
            labels_with(resource_labels(&scrape.default_scope, "queue", q), &[])
        );
    }
    // Every existing queue shows its counters, zero included; deleted queues keep theirs.
    let mut activity: BTreeMap<&str, QueueActivity> = scrape
        .queues
        .iter()
        .map(|(q, ..)| (q.as_str(), QueueActivity::default()))
        .collect();
    for (q, a) in &scrape.activity.queues {
        activity.insert(q.as_str(), *a);
    }
    type Counter = (&'static str, &'static str, fn(&QueueActivity) -> u64);
    let counters: [Counter; 5] = [
        (
            "loft_messages_sent_total",
            "Messages stored in the queue by sends and SNS fan-out.",
            |a| a.sent,
        ),
        (
            "loft_messages_received_total",
            "Messages handed out by receives from the queue.",
            |a| a.received,
        ),
        (
            "loft_messages_deleted_total",
            "Messages deleted from the queue by receipt handle or id.",
            |a| a.deleted,
        ),
        (
            "loft_messages_dead_lettered_total",
            "Messages the queue moved to its dead-letter queue after maxReceiveCount receives.",
            |a| a.dead_lettered,
        ),
        (
            "loft_messages_undecryptable_total",
            "Messages of the queue a receive passed over because they cannot be decrypted with this master key (each once per process).",
            |a| a.undecryptable,
        ),
    ];
    for (name, help, get) in counters {
        family(&mut out, name, "counter", help);
        for (q, a) in &activity {
            let _ = writeln!(
                out,
                "{name}{} {}",
                labels_with(resource_labels(&scrape.default_scope, "queue", q), &[]),
                get(a)
            );
        }
    }
    if !scrape.hide_node_wide {
        render_node_requests(&mut out, scrape);
    }
    family(
        &mut out,
        "loft_sns_data_protection_messages_total",
        "counter",
        "SNS messages a topic's data protection policy acted on, by topic, direction (Inbound: Publish, Outbound: one subscription's delivery) and result: with_findings and without_findings (the audit statement, AWS's MessagesWithFindings and MessagesWithNoFindings), denied, deidentified.",
    );
    for ((topic, direction, result), n) in &scrape.activity.data_protection {
        let _ = writeln!(
            out,
            "loft_sns_data_protection_messages_total{} {n}",
            labels_with(
                resource_labels(&scrape.default_scope, "topic", topic),
                &[("direction", direction), ("result", result)]
            )
        );
    }
    family(
        &mut out,
        "loft_sns_data_protection_findings_total",
        "counter",
        "Sensitive data found by SNS data protection audit statements, by topic and managed data identifier.",
    );
    for ((topic, identifier), n) in &scrape.activity.findings {
        let _ = writeln!(
            out,
            "loft_sns_data_protection_findings_total{} {n}",
            labels_with(
                resource_labels(&scrape.default_scope, "topic", topic),
                &[("identifier", identifier)]
            )
        );
    }
    if !scrape.hide_node_wide {
        render_node_state(&mut out, scrape);
    }
    if !scrape.fair.is_empty() {
        family(
            &mut out,
            "loft_fair_queue_noisy_groups",
            "gauge",
            "Fair queues: message groups that are noisy neighbours now (at least 30 messages in flight and more than 10% of the queue's).",
        );
        for (q, f) in &scrape.fair {
            let _ = writeln!(
                out,
                "loft_fair_queue_noisy_groups{} {}",
                labels_with(resource_labels(&scrape.default_scope, "queue", q), &[]),
                f.noisy_groups
            );
        }
        family(
            &mut out,
            "loft_fair_queue_quiet_messages",
            "gauge",
            "Fair queues: messages of the quiet groups, by state (visible, in_flight, delayed).",
        );
        for (q, f) in &scrape.fair {
            for (state, n) in [
                ("visible", f.quiet.visible),
                ("in_flight", f.quiet.in_flight),
                ("delayed", f.quiet.delayed),
            ] {
                let _ = writeln!(
                    out,
                    "loft_fair_queue_quiet_messages{} {n}",
                    labels_with(
                        resource_labels(&scrape.default_scope, "queue", q),
                        &[("state", state)]
                    )
                );
            }
        }
        family(
            &mut out,
            "loft_fair_queue_quiet_oldest_age_seconds",
            "gauge",
            "Fair queues: age of the oldest visible message of a quiet group, seconds.",
        );
        for (q, f) in &scrape.fair {
            if let Some(ms) = f.quiet_oldest_age_ms {
                let _ = writeln!(
                    out,
                    "loft_fair_queue_quiet_oldest_age_seconds{} {}",
                    labels_with(resource_labels(&scrape.default_scope, "queue", q), &[]),
                    float(ms as f64 / 1000.0)
                );
            }
        }
    }
    out
}

/// The node-wide request and delivery counters (no one account's).
fn render_node_requests(out: &mut String, scrape: &Scrape) {
    family(
        out,
        "loft_requests_total",
        "counter",
        "HTTP requests answered, by operation, protocol and status code.",
    );
    for ((op, protocol, status), n) in &scrape.requests.requests {
        let status = status.to_string();
        let _ = writeln!(
            out,
            "loft_requests_total{} {n}",
            labels(&[
                ("operation", op),
                ("protocol", protocol),
                ("status", &status)
            ])
        );
    }
    family(
        out,
        "loft_request_duration_seconds",
        "histogram",
        "Time to answer a request, seconds, by operation.",
    );
    for (op, h) in &scrape.requests.durations {
        let mut cumulative = 0;
        for (bound, n) in DURATION_BUCKETS.iter().zip(h.buckets) {
            cumulative += n;
            let le = float(*bound);
            let _ = writeln!(
                out,
                "loft_request_duration_seconds_bucket{} {cumulative}",
                labels(&[("operation", op), ("le", &le)])
            );
        }
        let _ = writeln!(
            out,
            "loft_request_duration_seconds_bucket{} {}",
            labels(&[("operation", op), ("le", "+Inf")]),
            h.count
        );
        let _ = writeln!(
            out,
            "loft_request_duration_seconds_sum{} {}",
            labels(&[("operation", op)]),
            float(h.sum)
        );
        let _ = writeln!(
            out,
            "loft_request_duration_seconds_count{} {}",
            labels(&[("operation", op)]),
            h.count
        );
    }
    family(
        out,
        "loft_deliveries_total",
        "counter",
        "SNS deliveries by subscription protocol and outcome (delivered, recorded, retrying, dead_lettered, dropped).",
    );
    for ((protocol, outcome), n) in &scrape.activity.deliveries {
        let _ = writeln!(
            out,
            "loft_deliveries_total{} {n}",
            labels(&[("protocol", protocol), ("outcome", outcome.as_str())])
        );
    }
    family(
        out,
        "loft_sns_replayed_notifications_total",
        "counter",
        "SNS message replay copies by outcome: delivered (to the subscribed queue, AWS's NumberOfReplayedNotificationsDelivered) and failed (sent to the subscription's dead-letter queue instead, AWS's NumberOfReplayedNotificationsFailed).",
    );
    for outcome in ["delivered", "failed"] {
        let n = scrape.activity.replayed.get(outcome).copied().unwrap_or(0);
        let _ = writeln!(
            out,
            "loft_sns_replayed_notifications_total{} {n}",
            labels(&[("outcome", outcome)])
        );
    }
}

/// The node-wide gauges: pending deliveries, request body bytes.
fn render_node_state(out: &mut String, scrape: &Scrape) {
    family(
        out,
        "loft_deliveries_pending",
        "gauge",
        "SNS HTTP/S deliveries waiting for an attempt (due or scheduled for a retry).",
    );
    let _ = writeln!(out, "loft_deliveries_pending {}", scrape.pending_deliveries);
    if let Some((held, budget)) = scrape.body_bytes {
        family(
            out,
            "loft_request_body_bytes",
            "gauge",
            "Bytes of request bodies held now, read or being read.",
        );
        let _ = writeln!(out, "loft_request_body_bytes {held}");
        family(
            out,
            "loft_request_body_budget_bytes",
            "gauge",
            "The most bytes of request bodies held at once (--max-body-bytes-in-flight).",
        );
        let _ = writeln!(out, "loft_request_body_budget_bytes {budget}");
    }
}

/// Takes a scrape: queue counts from the store, counters from memory.
///
/// Errors: storage fails (as the service's `InternalError`).
pub async fn scrape(m: &Metrics) -> loft_core::Result<Scrape> {
    let mut queues = Vec::new();
    let mut fair = Vec::new();
    let mut oldest = Vec::new();
    let all = m.service.sqs().all_queues().await?;
    let mut sources: BTreeMap<String, u64> = BTreeMap::new();
    for q in &all {
        if let Some(policy) =
            loft_core::attributes::QueueConfig::from_attributes(&q.attributes).redrive_policy
        {
            *sources.entry(m.service.dlq_key(&policy)).or_default() += 1;
        }
    }
    let dead_letter_sources = all
        .iter()
        .map(|q| (q.name.clone(), sources.get(&q.name).copied().unwrap_or(0)))
        .collect();
    for q in all {
        // A queue deleted since the listing is skipped.
        if let Ok(c) = m.service.queue_counts(&q.name).await {
            if let Ok(Some(f)) = m.service.fair_queue_status(&q.name).await {
                fair.push((q.name.clone(), f));
            }
            if let Ok(age) = m.service.oldest_message_age_ms(&q.name).await {
                oldest.push((q.name.clone(), age));
            }
            queues.push((q.name, c.visible, c.in_flight, c.delayed));
        }
    }
    Ok(Scrape {
        queues,
        oldest,
        dead_letter_sources,
        activity: m.service.activity(),
        requests: m.requests.snapshot(),
        pending_deliveries: m.service.pending_delivery_count().await?,
        body_bytes: None,
        fair,
        default_scope: (
            m.service.config().account_id.clone(),
            m.service.config().region.clone(),
        ),
        hide_node_wide: false,
    })
}

/// `GET /metrics`: `200` with the text format; `503` (plain text) when storage fails.
/// Under `--metrics-auth` ([`crate::auth::Auth::metrics_auth`]) the route requires a
/// signature and shows the caller's account's series only ([`Scrape::only_account`]).
pub async fn metrics(
    State(m): State<Metrics>,
    budget: Option<Extension<Arc<BodyBudget>>>,
    caller: Option<Extension<Principal>>,
) -> Response {
    match scrape(&m).await {
        Ok(mut s) => {
            s.body_bytes = budget.map(|Extension(b)| (b.in_use(), b.limit()));
            // A caller is known only under `--metrics-auth` (the route's signature layer
            // sets it): it sees its own account's series.
            if let Some(Extension(p)) = caller.filter(|c| c.enforced) {
                s.only_account(&p.account_id);
            }
            ([(header::CONTENT_TYPE, CONTENT_TYPE)], render(&s)).into_response()
        }
        Err(e) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("storage does not answer: {}\n", e.message),
        )
            .into_response(),
    }
}

/// `GET /ready`: `200 {"status":"ready"}` when storage answers, else
/// `503 {"status":"unavailable"}` (`GET /health` says only that the process is up).
pub async fn ready(State(m): State<Metrics>) -> Response {
    if m.service.ready().await {
        Json(json!({"status": "ready"})).into_response()
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({"status": "unavailable"})),
        )
            .into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::RequestMetrics;
    use loft_core::service::activity::DeliveryOutcome;

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escape_label(r#"a"b\c"#), r#"a\"b\\c"#);
        assert_eq!(escape_label("x\ny"), "x\\ny");
    }

    #[test]
    fn renders_every_family_with_cumulative_buckets() {
        let requests = RequestMetrics::default();
        requests.record("SendMessage", "sqs-json", 200, 0.002);
        requests.record("SendMessage", "sqs-json", 200, 0.2);
        requests.record("SendMessage", "sqs-json", 200, 30.0);
        let mut activity = ActivitySnapshot::default();
        activity.queues.insert(
            "gone".into(),
            QueueActivity {
                sent: 2,
                ..QueueActivity::default()
            },
        );
        activity
            .deliveries
            .insert(("sqs".into(), DeliveryOutcome::Delivered), 4);
        activity
            .data_protection
            .insert(("t".into(), "Inbound", "with_findings"), 2);
        activity.findings.insert(("t".into(), "EmailAddress"), 3);
        activity.replayed.insert("delivered", 6);
        let s = Scrape {
            queues: vec![
                ("orders".into(), 3, 1, 0),
                ("111111111111/orders".into(), 2, 0, 0),
                ("000000000000/eu-west-1/orders".into(), 1, 0, 0),
            ],
            oldest: vec![("orders".into(), 2500), ("111111111111/orders".into(), 0)],
            dead_letter_sources: vec![("orders".into(), 2)],
            activity,
            requests: requests.snapshot(),
            pending_deliveries: 5,
            body_bytes: Some((1024, 4096)),
            fair: vec![(
                "tenants".into(),
                FairQueueStatus {
                    noisy_groups: 1,
                    quiet: loft_core::model::QueueCounts {
                        visible: 4,
                        in_flight: 2,
                        delayed: 0,
                    },
                    quiet_oldest_age_ms: Some(1500),
                },
            )],
            default_scope: ("000000000000".into(), "us-east-1".into()),
            hide_node_wide: false,
        };
        let text = render(&s);
        // `--metrics-auth`: another account sees its own queues' series only, nothing
        // node-wide; the server's account sees its own (every region) and the node's.
        let mut other = s.clone();
        other.only_account("111111111111");
        let shown = render(&other);
        assert!(shown.contains(r#"loft_queue_messages{queue="orders",account="111111111111",region="us-east-1",state="visible"} 2"#), "{shown}");
        for hidden in [
            r#"queue="orders",state"#,
            r#"loft_queue_oldest_message_age_seconds{queue="orders"}"#,
            r#"loft_queue_dead_letter_sources{queue="orders"}"#,
            "eu-west-1",
            "tenants",
            r#"queue="gone""#,
            r#"topic="t""#,
            "loft_requests_total",
            "loft_deliveries_pending",
            "loft_request_body_bytes",
            "loft_sns_replayed_notifications_total",
        ] {
            assert!(
                !shown.contains(hidden),
                "{hidden} shown to another account:\n{shown}"
            );
        }
        let mut own = s.clone();
        own.only_account("000000000000");
        let shown = render(&own);
        assert!(!shown.contains("111111111111"), "{shown}");
        for kept in [
            "eu-west-1",
            "tenants",
            "loft_requests_total",
            "loft_deliveries_pending 5",
        ] {
            assert!(
                shown.contains(kept),
                "{kept} not shown to the server's account:\n{shown}"
            );
        }
        for line in [
            r#"loft_queue_messages{queue="orders",state="visible"} 3"#,
            r#"loft_queue_messages{queue="orders",state="in_flight"} 1"#,
            r#"loft_queue_messages{queue="orders",state="delayed"} 0"#,
            r#"loft_queue_messages{queue="orders",account="111111111111",region="us-east-1",state="visible"} 2"#,
            r#"loft_queue_messages{queue="orders",account="000000000000",region="eu-west-1",state="visible"} 1"#,
            r#"loft_messages_sent_total{queue="orders",account="111111111111",region="us-east-1"} 0"#,
            r#"loft_messages_sent_total{queue="orders"} 0"#,
            r#"loft_messages_sent_total{queue="gone"} 2"#,
            r#"loft_requests_total{operation="SendMessage",protocol="sqs-json",status="200"} 3"#,
            r#"loft_request_duration_seconds_bucket{operation="SendMessage",le="0.0025"} 1"#,
            r#"loft_request_duration_seconds_bucket{operation="SendMessage",le="0.25"} 2"#,
            r#"loft_request_duration_seconds_bucket{operation="SendMessage",le="25"} 2"#,
            r#"loft_request_duration_seconds_bucket{operation="SendMessage",le="+Inf"} 3"#,
            r#"loft_request_duration_seconds_count{operation="SendMessage"} 3"#,
            r#"loft_deliveries_total{protocol="sqs",outcome="delivered"} 4"#,
            "loft_deliveries_pending 5",
            r#"loft_queue_oldest_message_age_seconds{queue="orders"} 2.5"#,
            r#"loft_queue_oldest_message_age_seconds{queue="orders",account="111111111111",region="us-east-1"} 0"#,
            "# TYPE loft_queue_oldest_message_age_seconds gauge",
            r#"loft_queue_dead_letter_sources{queue="orders"} 2"#,
            r#"loft_sns_replayed_notifications_total{outcome="delivered"} 6"#,
            r#"loft_sns_replayed_notifications_total{outcome="failed"} 0"#,
            r#"loft_fair_queue_noisy_groups{queue="tenants"} 1"#,
            r#"loft_fair_queue_quiet_messages{queue="tenants",state="visible"} 4"#,
            r#"loft_fair_queue_quiet_messages{queue="tenants",state="in_flight"} 2"#,
            r#"loft_fair_queue_quiet_oldest_age_seconds{queue="tenants"} 1.5"#,
            r#"loft_sns_data_protection_messages_total{topic="t",direction="Inbound",result="with_findings"} 2"#,
            r#"loft_sns_data_protection_findings_total{topic="t",identifier="EmailAddress"} 3"#,
            "loft_request_body_bytes 1024",
            "loft_request_body_budget_bytes 4096",
            "# TYPE loft_request_body_bytes gauge",
            "# TYPE loft_request_duration_seconds histogram",
            "# TYPE loft_messages_dead_lettered_total counter",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "missing {line:?} in\n{text}"
            );
        }
        // Every sample line is `name{labels} value` or `name value`.
        for l in text.lines().filter(|l| !l.starts_with('#')) {
            let value = l.rsplit(' ').next().unwrap();
            assert!(value.parse::<f64>().is_ok(), "bad value in {l:?}");
        }
    }
}
