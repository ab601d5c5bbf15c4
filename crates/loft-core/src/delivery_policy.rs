//! SNS HTTP/S delivery policies: parsing, validation, the effective policy of a
//! subscription, and the retry schedule its four phases make.
//!
//! Source: the SNS Developer Guide, "Amazon SNS message delivery retries" (the four phases
//! and "Creating an HTTP/S delivery policy": attributes, constraints, defaults, the backoff
//! retry count formula), the older "Setting Amazon SNS Delivery Retry Policies for
//! HTTP/HTTPS Endpoints" (the default schedule and its 20/30/40 s linear example, topic
//! versus subscription precedence, "Ignore subscription override"), and the
//! "SetTopicAttributes / SetSubscriptionAttributes delivery policy JSON format" pages.
//!
//! A retry schedule has, in order:
//! 1. the immediate phase: `numNoDelayRetries` retries with no delay;
//! 2. the pre-backoff phase: `numMinDelayRetries` retries `minDelayTarget` apart;
//! 3. the backoff phase: `numRetries - numNoDelayRetries - numMinDelayRetries -
//!    numMaxDelayRetries` retries whose delays go from `minDelayTarget` (first) to
//!    `maxDelayTarget` (last) along the [`Backoff`] curve;
//! 4. the post-backoff phase: `numMaxDelayRetries` retries `maxDelayTarget` apart.
//!
//! AWS adds jitter to real retries; [`DeliveryPolicy::delay_before_retry`] gives the
//! un-jittered target so schedules are testable. A policy whose delays add up to more than
//! [`MAX_TOTAL_RETRY_SECS`] is refused, as AWS refuses it.

use serde_json::{Map, Value};

use crate::error::{Error, ErrorCode, Result};

/// Largest `numRetries`.
pub const MAX_RETRIES: u32 = 100;
/// Smallest `minDelayTarget` / `maxDelayTarget`, seconds.
pub const MIN_DELAY: u32 = 1;
/// Largest `minDelayTarget` / `maxDelayTarget`, seconds.
pub const MAX_DELAY: u32 = 3600;
/// The hard limit on a message's total retry time for an HTTP/S endpoint, seconds: the
/// sum of a policy's delays may not exceed it ("The total policy retry time for an HTTP/S
/// endpoint cannot be greater than 3,600 seconds").
pub const MAX_TOTAL_RETRY_SECS: u32 = 3600;

/// The retry-backoff function: how delays grow from `minDelayTarget` to `maxDelayTarget`
/// over the backoff phase (`backoffFunction`, one of `linear`, `arithmetic`, `geometric`,
/// `exponential`; default `linear`).
///
/// AWS publishes these only as a graph (10 retries from 5 s to 260 s), so the exact curves
/// are Loft's: each starts at the minimum on the first backoff retry, ends at the maximum on
/// the last, never decreases, and is named by the progression it follows. With `t` the
/// position in the phase (`i / (n - 1)` for retry `i` of `n`, 0-based):
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Backoff {
    /// Delays in arithmetic progression: `min + (max - min) * t`.
    Linear,
    /// Increments in arithmetic progression (each step `d` longer than the one before):
    /// `min + (max - min) * i (i + 1) / (n (n - 1))`.
    Arithmetic,
    /// Delays in geometric progression (a constant ratio between neighbours):
    /// `min * (max / min)^t`.
    Geometric,
    /// Increments doubling each retry (binary exponential backoff scaled to the span):
    /// `min + (max - min) * (2^i - 1) / (2^(n-1) - 1)`.
    Exponential,
}

impl Backoff {
    /// The JSON name (`"linear"`, `"arithmetic"`, `"geometric"`, `"exponential"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Backoff::Linear => "linear",
            Backoff::Arithmetic => "arithmetic",
            Backoff::Geometric => "geometric",
            Backoff::Exponential => "exponential",
        }
    }

    /// Parses a JSON name, ignoring ASCII case (the CDK sends `"EXPONENTIAL"`).
    fn parse(s: &str) -> Option<Self> {
        [
            Backoff::Linear,
            Backoff::Arithmetic,
            Backoff::Geometric,
            Backoff::Exponential,
        ]
        .into_iter()
        .find(|b| b.as_str().eq_ignore_ascii_case(s))
    }

    /// Delay in seconds of backoff retry `i` (0-based) of `n`, between `min` and `max`.
    fn delay(self, i: u32, n: u32, min: u32, max: u32) -> u32 {
        if n <= 1 || min == max {
            return min;
        }
        let (i_f, n_f) = (f64::from(i), f64::from(n));
        let (lo, hi) = (f64::from(min), f64::from(max));
        let span = hi - lo;
        let t = i_f / (n_f - 1.0);
        let value = match self {
            Backoff::Linear => lo + span * t,
            Backoff::Arithmetic => lo + span * (i_f * (i_f + 1.0)) / (n_f * (n_f - 1.0)),
            Backoff::Geometric => lo * (hi / lo).powf(t),
            Backoff::Exponential => {
                lo + span * (2f64.powf(i_f) - 1.0) / (2f64.powf(n_f - 1.0) - 1.0)
            }
        };
        // Rounding is monotone, so a non-decreasing curve stays non-decreasing.
        (value.round() as u32).clamp(min, max)
    }
}

/// An HTTP/S delivery policy: the healthy retry policy and the throttle policy.
///
/// Delays are whole seconds; counts are retries (attempts after the first). Source: SNS
/// Developer Guide, "Creating an HTTP/S delivery policy".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryPolicy {
    /// `minDelayTarget`: the pre-backoff delay and the first backoff delay, seconds
    /// (1..=`maxDelayTarget`, default 20).
    pub min_delay_target: u32,
    /// `maxDelayTarget`: the last backoff delay and the post-backoff delay, seconds
    /// (`minDelayTarget`..=3600, default 20).
    pub max_delay_target: u32,
    /// `numRetries`: every retry of all four phases (0..=100, default 3).
    pub num_retries: u32,
    /// `numNoDelayRetries`: retries in the immediate phase (default 0).
    pub num_no_delay_retries: u32,
    /// `numMinDelayRetries`: retries in the pre-backoff phase (default 0).
    pub num_min_delay_retries: u32,
    /// `numMaxDelayRetries`: retries in the post-backoff phase (default 0).
    pub num_max_delay_retries: u32,
    /// `backoffFunction` (default linear).
    pub backoff: Backoff,
    /// `throttlePolicy.maxReceivesPerSecond`: deliveries per second to this subscription
    /// (1 or more); `None` means no throttling (the default).
    pub max_receives_per_second: Option<u32>,
    /// `requestPolicy.headerContentType`: the Content-Type of the notifications POSTed to
    /// the endpoint; `None` means SNS's default, [`DEFAULT_CONTENT_TYPE`].
    pub header_content_type: Option<String>,
}

/// The Content-Type SNS gives HTTP/S notifications when no request policy names one
/// (SNS Developer Guide, "Creating an HTTP/S delivery policy").
pub const DEFAULT_CONTENT_TYPE: &str = "text/plain; charset=UTF-8";

/// The retry part of a policy, as one JSON object gave it (defaults filled in).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Retry {
    min: u32,
    max: u32,
    retries: u32,
    no_delay: u32,
    min_delay: u32,
    max_delay: u32,
    backoff: Backoff,
}

const DEFAULT_RETRY: Retry = Retry {
    min: 20,
    max: 20,
    retries: 3,
    no_delay: 0,
    min_delay: 0,
    max_delay: 0,
    backoff: Backoff::Linear,
};

/// What one DeliveryPolicy document says; `None` where it says nothing.
#[derive(Debug, Default)]
struct Parsed {
    retry: Option<Retry>,
    throttle: Option<u32>,
    content_type: Option<String>,
    disable_overrides: bool,
}

fn invalid(detail: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorCode::InvalidParameter,
        format!("Invalid parameter: DeliveryPolicy: {detail}"),
    )
}

fn object<'a>(v: &'a Value, path: &str) -> Result<&'a Map<String, Value>> {
    v.as_object()
        .ok_or_else(|| invalid(format!("{path} must be a JSON object")))
}

fn only_members(obj: &Map<String, Value>, allowed: &[&str]) -> Result<()> {
    match obj.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => Err(invalid(format!("Unexpected JSON member: {k}"))),
        None => Ok(()),
    }
}

/// A present, non-null member.
fn member<'a>(obj: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    obj.get(name).filter(|v| !v.is_null())
}

fn integer(obj: &Map<String, Value>, path: &str, name: &str, default: u32) -> Result<u32> {
    let Some(v) = member(obj, name) else {
        return Ok(default);
    };
    let n = v
        .as_i64()
        .ok_or_else(|| invalid(format!("{path}.{name} must be an integer")))?;
    if n < 0 {
        return Err(invalid(format!(
            "{path}.{name} must be greater than or equal to 0"
        )));
    }
    u32::try_from(n).map_err(|_| invalid(format!("{path}.{name} is too large")))
}

fn parse_retry(v: &Value, path: &str) -> Result<Retry> {
    let obj = object(v, path)?;
    only_members(
        obj,
        &[
            "minDelayTarget",
            "maxDelayTarget",
            "numRetries",
            "numNoDelayRetries",
            "numMinDelayRetries",
            "numMaxDelayRetries",
            "backoffFunction",
        ],
    )?;
    let d = DEFAULT_RETRY;
    let r = Retry {
        min: integer(obj, path, "minDelayTarget", d.min)?,
        max: integer(obj, path, "maxDelayTarget", d.max)?,
        retries: integer(obj, path, "numRetries", d.retries)?,
        no_delay: integer(obj, path, "numNoDelayRetries", d.no_delay)?,
        min_delay: integer(obj, path, "numMinDelayRetries", d.min_delay)?,
        max_delay: integer(obj, path, "numMaxDelayRetries", d.max_delay)?,
        backoff: match member(obj, "backoffFunction") {
            None => d.backoff,
            Some(v) => v.as_str().and_then(Backoff::parse).ok_or_else(|| {
                invalid(format!(
                    "{path}.backoffFunction must be one of linear, arithmetic, geometric, exponential"
                ))
            })?,
        },
    };
    if r.retries > MAX_RETRIES {
        return Err(invalid(format!(
            "{path}.numRetries must be less than or equal to {MAX_RETRIES}"
        )));
    }
    for (name, value) in [("minDelayTarget", r.min), ("maxDelayTarget", r.max)] {
        if value < MIN_DELAY {
            return Err(invalid(format!(
                "{path}.{name} must be greater than or equal to {MIN_DELAY}"
            )));
        }
        if value > MAX_DELAY {
            return Err(invalid(format!(
                "{path}.{name} must be less than or equal to {MAX_DELAY}"
            )));
        }
    }
    if r.min > r.max {
        return Err(invalid(format!(
            "{path}.minDelayTarget must be less than or equal to maxDelayTarget"
        )));
    }
    // Each count is at most 100 here or numRetries already failed, so no overflow.
    if u64::from(r.no_delay) + u64::from(r.min_delay) + u64::from(r.max_delay)
        > u64::from(r.retries)
    {
        return Err(invalid(format!(
            "{path}.numNoDelayRetries + numMinDelayRetries + numMaxDelayRetries must be less than or equal to numRetries"
        )));
    }
    let total = DeliveryPolicy::from_parts(r, None, None).total_retry_secs();
    if total > u64::from(MAX_TOTAL_RETRY_SECS) {
        return Err(invalid(format!(
            "{path}: Total policy retry time cannot be greater than {MAX_TOTAL_RETRY_SECS} seconds"
        )));
    }
    Ok(r)
}

fn parse_throttle(v: &Value, path: &str) -> Result<Option<u32>> {
    let obj = object(v, path)?;
    only_members(obj, &["maxReceivesPerSecond"])?;
    match member(obj, "maxReceivesPerSecond") {
        None => Ok(None),
        Some(_) => {
            let n = integer(obj, path, "maxReceivesPerSecond", 0)?;
            if n < 1 {
                return Err(invalid(format!(
                    "{path}.maxReceivesPerSecond must be greater than or equal to 1"
                )));
            }
            Ok(Some(n))
        }
    }
}

/// A request policy: `{"headerContentType": s}`, `s` a non-empty header value (visible
/// ASCII and spaces, at most 256 bytes); `None` when it names no content type.
fn parse_request(v: &Value, path: &str) -> Result<Option<String>> {
    let obj = object(v, path)?;
    only_members(obj, &["headerContentType"])?;
    match member(obj, "headerContentType") {
        None => Ok(None),
        Some(v) => {
            let s = v
                .as_str()
                .ok_or_else(|| invalid(format!("{path}.headerContentType must be a string")))?;
            let valid = !s.trim().is_empty()
                && s.len() <= 256
                && s.bytes().all(|b| b == b' ' || b.is_ascii_graphic());
            if !valid {
                return Err(invalid(format!(
                    "{path}.headerContentType must be a valid Content-Type header value"
                )));
            }
            Ok(Some(s.to_owned()))
        }
    }
}

fn nonempty(s: Option<&str>) -> Option<&str> {
    s.filter(|s| !s.trim().is_empty())
}

fn document(json: &str) -> Result<Value> {
    let v: Value = serde_json::from_str(json).map_err(|_| invalid("failed to parse JSON"))?;
    if !v.is_object() {
        return Err(invalid("must be a JSON object"));
    }
    Ok(v)
}

/// Parses a topic document: `{"http": {"defaultHealthyRetryPolicy", "disableSubscriptionOverrides",
/// "defaultThrottlePolicy", "defaultRequestPolicy"}}`.
fn parse_topic_doc(json: &str) -> Result<Parsed> {
    let v = document(json)?;
    let root = object(&v, "DeliveryPolicy")?;
    only_members(root, &["http"])?;
    let mut out = Parsed::default();
    let Some(http) = member(root, "http") else {
        return Ok(out);
    };
    let http = object(http, "http")?;
    only_members(
        http,
        &[
            "defaultHealthyRetryPolicy",
            "defaultSicklyRetryPolicy",
            "disableSubscriptionOverrides",
            "defaultThrottlePolicy",
            "defaultRequestPolicy",
        ],
    )?;
    if let Some(r) = member(http, "defaultHealthyRetryPolicy") {
        out.retry = Some(parse_retry(r, "http.defaultHealthyRetryPolicy")?);
    }
    if let Some(t) = member(http, "defaultThrottlePolicy") {
        out.throttle = parse_throttle(t, "http.defaultThrottlePolicy")?;
    }
    if let Some(r) = member(http, "defaultRequestPolicy") {
        out.content_type = parse_request(r, "http.defaultRequestPolicy")?;
    }
    if let Some(d) = member(http, "disableSubscriptionOverrides") {
        out.disable_overrides = d
            .as_bool()
            .ok_or_else(|| invalid("http.disableSubscriptionOverrides must be a boolean"))?;
    }
    Ok(out)
}

/// Parses a subscription document: `{"healthyRetryPolicy", "throttlePolicy", "requestPolicy"}`,
/// also accepting the `sicklyRetryPolicy` and `guaranteed` members that
/// EffectiveDeliveryPolicy shows, so that value can be set back as it was read.
fn parse_subscription_doc(json: &str) -> Result<Parsed> {
    let v = document(json)?;
    let root = object(&v, "DeliveryPolicy")?;
    only_members(
        root,
        &[
            "healthyRetryPolicy",
            "sicklyRetryPolicy",
            "throttlePolicy",
            "requestPolicy",
            "guaranteed",
        ],
    )?;
    let mut out = Parsed::default();
    if let Some(r) = member(root, "healthyRetryPolicy") {
        out.retry = Some(parse_retry(r, "healthyRetryPolicy")?);
    }
    if let Some(t) = member(root, "throttlePolicy") {
        out.throttle = parse_throttle(t, "throttlePolicy")?;
    }
    if let Some(r) = member(root, "requestPolicy") {
        out.content_type = parse_request(r, "requestPolicy")?;
    }
    if let Some(g) = member(root, "guaranteed") {
        if !g.is_boolean() {
            return Err(invalid("guaranteed must be a boolean"));
        }
    }
    Ok(out)
}

impl DeliveryPolicy {
    fn from_parts(retry: Retry, throttle: Option<u32>, content_type: Option<String>) -> Self {
        DeliveryPolicy {
            min_delay_target: retry.min,
            max_delay_target: retry.max,
            num_retries: retry.retries,
            num_no_delay_retries: retry.no_delay,
            num_min_delay_retries: retry.min_delay,
            num_max_delay_retries: retry.max_delay,
            backoff: retry.backoff,
            max_receives_per_second: throttle,
            header_content_type: content_type,
        }
    }

    /// AWS's default HTTP/S policy: 3 retries, all in the backoff phase, 20 s apart
    /// (`minDelayTarget` = `maxDelayTarget` = 20), linear, no throttling.
    ///
    /// Source: "Setting Amazon SNS Delivery Retry Policies for HTTP/HTTPS Endpoints" and
    /// the defaults column of "Creating an HTTP/S delivery policy".
    pub fn default_http() -> Self {
        Self::from_parts(DEFAULT_RETRY, None, None)
    }

    /// Parses and validates a topic's `DeliveryPolicy` attribute:
    /// `{"http": {"defaultHealthyRetryPolicy": {...}, "disableSubscriptionOverrides": bool,
    /// "defaultThrottlePolicy": {"maxReceivesPerSecond": n}, "defaultRequestPolicy":
    /// {"headerContentType": s}}}`. Members left out take AWS's defaults; `null` counts as
    /// left out.
    ///
    /// Errors: `InvalidParameter` with "Invalid parameter: DeliveryPolicy: ..." for bad JSON,
    /// an unexpected member, a non-integer or negative count, `numRetries` over 100, a delay
    /// outside 1..=3600, `minDelayTarget` > `maxDelayTarget`, the three fixed phases adding
    /// up to more than `numRetries`, delays adding up to more than 3600 s ("Total policy
    /// retry time cannot be greater than 3600 seconds"), an unknown `backoffFunction`,
    /// `maxReceivesPerSecond` < 1, or a `headerContentType` that is not a header value.
    ///
    /// Source: "SetTopicAttributes delivery policy JSON format" and "Creating an HTTP/S
    /// delivery policy".
    pub fn parse_topic(json: &str) -> Result<Self> {
        let p = parse_topic_doc(json)?;
        Ok(Self::from_parts(
            p.retry.unwrap_or(DEFAULT_RETRY),
            p.throttle,
            p.content_type,
        ))
    }

    /// The topic `DeliveryPolicy` document as SNS keeps and reports it, after
    /// [`Self::parse_topic`] accepted `json`: in the `http` object, members set to `null`
    /// are dropped and `disableSubscriptionOverrides` is `false` when not given. A document
    /// without an `http` object is kept as given.
    ///
    /// Errors: those of [`Self::parse_topic`].
    ///
    /// Source: AWS's recorded GetTopicAttributes answers (LocalStack
    /// `test_topic_delivery_policy_crud`, `aws.validated`): `{"http":
    /// {"defaultRequestPolicy": ..}}` reads back with `"disableSubscriptionOverrides":
    /// false`, and `{"http": {"defaultHealthyRetryPolicy": null}}` as `{"http":
    /// {"disableSubscriptionOverrides": false}}`.
    pub fn stored_topic_document(json: &str) -> Result<String> {
        Self::parse_topic(json)?;
        let mut v = document(json)?;
        if let Some(http) = v.get_mut("http").and_then(Value::as_object_mut) {
            http.retain(|_, member| !member.is_null());
            http.entry("disableSubscriptionOverrides")
                .or_insert(Value::Bool(false));
            return Ok(v.to_string());
        }
        Ok(json.to_owned())
    }

    /// Parses and validates a subscription's `DeliveryPolicy` attribute:
    /// `{"healthyRetryPolicy": {...}, "throttlePolicy": {"maxReceivesPerSecond": n},
    /// "requestPolicy": {"headerContentType": s}}`; `sicklyRetryPolicy` and `guaranteed`
    /// (as [`Self::to_json`] writes them) are accepted and ignored. Defaults and errors as
    /// for [`Self::parse_topic`], with paths such as `healthyRetryPolicy.numRetries`.
    ///
    /// Source: "SetSubscriptionAttributes delivery policy JSON format" and "Creating an
    /// HTTP/S delivery policy".
    pub fn parse_subscription(json: &str) -> Result<Self> {
        let p = parse_subscription_doc(json)?;
        Ok(Self::from_parts(
            p.retry.unwrap_or(DEFAULT_RETRY),
            p.throttle,
            p.content_type,
        ))
    }

    /// The policy in force for a subscription (what `EffectiveDeliveryPolicy` shows), from
    /// the topic's and the subscription's `DeliveryPolicy` attributes (`None` or empty when
    /// unset). The subscription's policy takes precedence unless the topic sets
    /// `disableSubscriptionOverrides`; a part (retry or throttle) that the chosen document
    /// leaves out falls back to the topic's, then to [`Self::default_http`]. Documents that
    /// do not parse count as unset: they were validated when they were stored.
    ///
    /// Source: "Setting Amazon SNS Delivery Retry Policies for HTTP/HTTPS Endpoints",
    /// "Applying Delivery Policies to Topics and Subscriptions".
    pub fn effective(topic: Option<&str>, subscription: Option<&str>) -> Self {
        let topic = nonempty(topic)
            .and_then(|t| parse_topic_doc(t).ok())
            .unwrap_or_default();
        let sub = if topic.disable_overrides {
            Parsed::default()
        } else {
            nonempty(subscription)
                .and_then(|s| parse_subscription_doc(s).ok())
                .unwrap_or_default()
        };
        Self::from_parts(
            sub.retry.or(topic.retry).unwrap_or(DEFAULT_RETRY),
            sub.throttle.or(topic.throttle),
            sub.content_type.or(topic.content_type),
        )
    }

    /// The Content-Type of this policy's notifications: `headerContentType`, or
    /// [`DEFAULT_CONTENT_TYPE`].
    pub fn content_type(&self) -> &str {
        self.header_content_type
            .as_deref()
            .unwrap_or(DEFAULT_CONTENT_TYPE)
    }

    /// The whole retry schedule's length: the sum of every delay
    /// [`Self::delay_before_retry`] gives, seconds. Valid policies keep it at most
    /// [`MAX_TOTAL_RETRY_SECS`].
    pub fn total_retry_secs(&self) -> u64 {
        (1..=self.num_retries)
            .filter_map(|r| self.delay_before_retry(r))
            .map(u64::from)
            .sum()
    }

    /// Retries in the backoff phase: `numRetries - numNoDelayRetries - numMinDelayRetries -
    /// numMaxDelayRetries` (saturating at 0 for a policy built by hand that breaks the rule).
    pub fn num_backoff_retries(&self) -> u32 {
        self.num_retries
            .saturating_sub(self.num_no_delay_retries)
            .saturating_sub(self.num_min_delay_retries)
            .saturating_sub(self.num_max_delay_retries)
    }

    /// Seconds to wait before retry number `retry`, 1-based (retry 1 follows the first,
    /// failed, attempt). `None` when `retry` is 0 or above `numRetries`: the policy is
    /// exhausted and the message goes to the dead-letter queue or is dropped.
    ///
    /// Phases, in order: `numNoDelayRetries` retries at 0 s; `numMinDelayRetries` at
    /// `minDelayTarget`; the backoff retries from `minDelayTarget` to `maxDelayTarget` along
    /// [`Backoff`]; the remaining `numMaxDelayRetries` at `maxDelayTarget`. The result is
    /// always in `0..=maxDelayTarget` and never decreases as `retry` grows. No jitter.
    ///
    /// Source: "Amazon SNS message delivery retries", "Delivery policy stages".
    pub fn delay_before_retry(&self, retry: u32) -> Option<u32> {
        if retry == 0 || retry > self.num_retries {
            return None;
        }
        let min = self.min_delay_target.min(self.max_delay_target);
        let max = self.max_delay_target;
        let mut k = retry - 1; // 0-based position in the whole schedule
        if k < self.num_no_delay_retries {
            return Some(0);
        }
        k -= self.num_no_delay_retries;
        if k < self.num_min_delay_retries {
            return Some(min);
        }
        k -= self.num_min_delay_retries;
        let backoff = self.num_backoff_retries();
        if k < backoff {
            return Some(self.backoff.delay(k, backoff, min, max));
        }
        Some(max)
    }

    /// AWS's JSON form of a subscription's policy, as GetSubscriptionAttributes'
    /// `EffectiveDeliveryPolicy` shows it:
    /// `{"healthyRetryPolicy":{"minDelayTarget":20,"maxDelayTarget":20,"numRetries":3,
    /// "numMaxDelayRetries":0,"numNoDelayRetries":0,"numMinDelayRetries":0,
    /// "backoffFunction":"linear"},"sicklyRetryPolicy":null,"throttlePolicy":null,
    /// "guaranteed":false}` (`throttlePolicy` is `{"maxReceivesPerSecond":n}` when set).
    /// [`Self::parse_subscription`] reads it back unchanged.
    pub fn to_json(&self) -> String {
        let mut retry = Map::new();
        retry.insert("minDelayTarget".into(), self.min_delay_target.into());
        retry.insert("maxDelayTarget".into(), self.max_delay_target.into());
        retry.insert("numRetries".into(), self.num_retries.into());
        retry.insert(
            "numMaxDelayRetries".into(),
            self.num_max_delay_retries.into(),
        );
        retry.insert("numNoDelayRetries".into(), self.num_no_delay_retries.into());
        retry.insert(
            "numMinDelayRetries".into(),
            self.num_min_delay_retries.into(),
        );
        retry.insert("backoffFunction".into(), self.backoff.as_str().into());
        let request = match &self.header_content_type {
            Some(t) => {
                let mut r = Map::new();
                r.insert("headerContentType".into(), t.clone().into());
                Value::Object(r)
            }
            None => Value::Null,
        };
        let throttle = match self.max_receives_per_second {
            Some(n) => {
                let mut t = Map::new();
                t.insert("maxReceivesPerSecond".into(), n.into());
                Value::Object(t)
            }
            None => Value::Null,
        };
        let mut root = Map::new();
        root.insert("healthyRetryPolicy".into(), Value::Object(retry));
        root.insert("sicklyRetryPolicy".into(), Value::Null);
        root.insert("throttlePolicy".into(), throttle);
        if !request.is_null() {
            root.insert("requestPolicy".into(), request);
        }
        root.insert("guaranteed".into(), false.into());
        Value::Object(root).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The topic document as SNS keeps it (AWS's recorded GetTopicAttributes answers):
    /// null members of `http` dropped, `disableSubscriptionOverrides` false unless given.
    #[test]
    fn topic_document_is_kept_as_aws_reports_it() {
        let rows: &[(&str, Value)] = &[
            (
                r#"{"http":{"defaultRequestPolicy":{"headerContentType":"application/json"}}}"#,
                serde_json::json!({"http":{"defaultRequestPolicy":{"headerContentType":"application/json"},"disableSubscriptionOverrides":false}}),
            ),
            (
                r#"{"http":{"defaultHealthyRetryPolicy":{"minDelayTarget":5,"maxDelayTarget":6,"numRetries":1}}}"#,
                serde_json::json!({"http":{"defaultHealthyRetryPolicy":{"minDelayTarget":5,"maxDelayTarget":6,"numRetries":1},"disableSubscriptionOverrides":false}}),
            ),
            (
                r#"{"http":{"defaultHealthyRetryPolicy":null}}"#,
                serde_json::json!({"http":{"disableSubscriptionOverrides":false}}),
            ),
            (
                r#"{"http":{"disableSubscriptionOverrides":true}}"#,
                serde_json::json!({"http":{"disableSubscriptionOverrides":true}}),
            ),
            (
                r#"{"http":{"disableSubscriptionOverrides":null,"defaultThrottlePolicy":{"maxReceivesPerSecond":3}}}"#,
                serde_json::json!({"http":{"defaultThrottlePolicy":{"maxReceivesPerSecond":3},"disableSubscriptionOverrides":false}}),
            ),
            (r#"{}"#, serde_json::json!({})),
        ];
        for (given, kept) in rows {
            let out = DeliveryPolicy::stored_topic_document(given).expect(given);
            let out: Value = serde_json::from_str(&out).unwrap();
            assert_eq!(&out, kept, "{given}");
        }
        for bad in [
            r#"{"http":{"disableSubscriptionOverrides":"yes"}}"#,
            "{",
            "[]",
        ] {
            assert!(DeliveryPolicy::stored_topic_document(bad).is_err(), "{bad}");
        }
    }
    use proptest::prelude::*;

    fn schedule(p: &DeliveryPolicy) -> Vec<u32> {
        (1..=p.num_retries)
            .map(|r| p.delay_before_retry(r).expect("within numRetries"))
            .collect()
    }

    fn sub(json: &str) -> DeliveryPolicy {
        DeliveryPolicy::parse_subscription(json).expect(json)
    }

    #[test]
    fn default_policy_is_three_retries_twenty_seconds_apart() {
        let p = DeliveryPolicy::default_http();
        assert_eq!(
            (p.min_delay_target, p.max_delay_target, p.num_retries),
            (20, 20, 3)
        );
        assert_eq!(
            (
                p.num_no_delay_retries,
                p.num_min_delay_retries,
                p.num_max_delay_retries
            ),
            (0, 0, 0)
        );
        assert_eq!(p.backoff, Backoff::Linear);
        assert_eq!(p.max_receives_per_second, None);
        assert_eq!(schedule(&p), [20, 20, 20]);
        assert_eq!(p.delay_before_retry(0), None);
        assert_eq!(p.delay_before_retry(4), None);
        assert_eq!(sub("{}"), p);
        assert_eq!(DeliveryPolicy::parse_topic("{}").unwrap(), p);
        assert_eq!(DeliveryPolicy::parse_topic(r#"{"http":{}}"#).unwrap(), p);
    }

    #[test]
    fn aws_linear_example_with_max_delay_forty() {
        // "Setting Amazon SNS Delivery Retry Policies": max 40, the rest default.
        let p = sub(r#"{"healthyRetryPolicy":{"maxDelayTarget":40}}"#);
        assert_eq!(schedule(&p), [20, 30, 40]);
    }

    #[test]
    fn each_backoff_function_over_the_aws_graph_setup() {
        // The AWS graph's setup: 10 backoff retries from 5 s to 260 s.
        let cases = [
            ("linear", [5, 33, 62, 90, 118, 147, 175, 203, 232, 260]),
            ("arithmetic", [5, 11, 22, 39, 62, 90, 124, 164, 209, 260]),
            ("geometric", [5, 8, 12, 19, 29, 45, 70, 108, 168, 260]),
            ("exponential", [5, 5, 6, 8, 12, 20, 36, 68, 132, 260]),
        ];
        for (name, expected) in cases {
            let p = sub(&format!(
                r#"{{"healthyRetryPolicy":{{"minDelayTarget":5,"maxDelayTarget":260,"numRetries":10,"backoffFunction":"{name}"}}}}"#
            ));
            assert_eq!(p.backoff.as_str(), name);
            assert_eq!(schedule(&p), expected, "{name}");
        }
    }

    #[test]
    fn backoff_names_ignore_case() {
        let p = sub(r#"{"healthyRetryPolicy":{"backoffFunction":"EXPONENTIAL"}}"#);
        assert_eq!(p.backoff, Backoff::Exponential);
    }

    #[test]
    fn phase_boundaries_of_the_aws_sample_policy() {
        // "Creating an HTTP/S delivery policy": 3 immediate, 2 at 1 s, 10 exponential from
        // 1 s to 60 s, 35 at 60 s: 50 retries.
        let p = sub(
            r#"{"healthyRetryPolicy":{"minDelayTarget":1,"maxDelayTarget":60,"numRetries":50,
               "numNoDelayRetries":3,"numMinDelayRetries":2,"numMaxDelayRetries":35,
               "backoffFunction":"exponential"},"throttlePolicy":{"maxReceivesPerSecond":10}}"#,
        );
        assert_eq!(p.num_backoff_retries(), 10);
        assert_eq!(p.max_receives_per_second, Some(10));
        let d = |r| p.delay_before_retry(r);
        let table = [
            (1, Some(0)),
            (3, Some(0)),   // last immediate retry
            (4, Some(1)),   // first pre-backoff retry
            (5, Some(1)),   // last pre-backoff retry
            (6, Some(1)),   // first backoff retry: minDelayTarget
            (14, Some(30)), // second to last backoff retry
            (15, Some(60)), // last backoff retry: maxDelayTarget
            (16, Some(60)), // first post-backoff retry
            (50, Some(60)), // last retry
            (51, None),
        ];
        for (retry, expected) in table {
            assert_eq!(d(retry), expected, "retry {retry}");
        }
        assert_eq!(
            schedule(&p)[5..15],
            [1, 1, 1, 2, 3, 5, 8, 16, 30, 60],
            "backoff phase"
        );
    }

    #[test]
    fn degenerate_phases() {
        // One backoff retry gets minDelayTarget.
        let p = sub(
            r#"{"healthyRetryPolicy":{"minDelayTarget":5,"maxDelayTarget":50,"numRetries":1}}"#,
        );
        assert_eq!(schedule(&p), [5]);
        // No backoff phase at all: straight from the minimum to the maximum.
        let p = sub(
            r#"{"healthyRetryPolicy":{"minDelayTarget":5,"maxDelayTarget":50,"numRetries":4,
               "numNoDelayRetries":1,"numMinDelayRetries":1,"numMaxDelayRetries":2}}"#,
        );
        assert_eq!(schedule(&p), [0, 5, 50, 50]);
        // Only immediate retries.
        let p = sub(r#"{"healthyRetryPolicy":{"numRetries":2,"numNoDelayRetries":2}}"#);
        assert_eq!(schedule(&p), [0, 0]);
        // No retries at all.
        let p = sub(r#"{"healthyRetryPolicy":{"numRetries":0}}"#);
        assert_eq!(p.delay_before_retry(1), None);
    }

    #[test]
    fn every_validation_error() {
        let s = "healthyRetryPolicy";
        let t = "http.defaultHealthyRetryPolicy";
        let cases: Vec<(bool, String, String)> = vec![
            (false, "not json".into(), "failed to parse JSON".into()),
            (false, "[]".into(), "must be a JSON object".into()),
            (false, r#"{"retry":{}}"#.into(), "Unexpected JSON member: retry".into()),
            (true, r#"{"https":{}}"#.into(), "Unexpected JSON member: https".into()),
            (true, r#"{"http":{"healthyRetryPolicy":{}}}"#.into(), "Unexpected JSON member: healthyRetryPolicy".into()),
            (false, r#"{"healthyRetryPolicy":{"numRetry":1}}"#.into(), "Unexpected JSON member: numRetry".into()),
            (false, r#"{"healthyRetryPolicy":5}"#.into(), format!("{s} must be a JSON object")),
            (true, r#"{"http":5}"#.into(), "http must be a JSON object".into()),
            (false, r#"{"healthyRetryPolicy":{"numRetries":101}}"#.into(), format!("{s}.numRetries must be less than or equal to 100")),
            (true, r#"{"http":{"defaultHealthyRetryPolicy":{"numRetries":101}}}"#.into(), format!("{t}.numRetries must be less than or equal to 100")),
            (false, r#"{"healthyRetryPolicy":{"numRetries":-1}}"#.into(), format!("{s}.numRetries must be greater than or equal to 0")),
            (false, r#"{"healthyRetryPolicy":{"numRetries":"3"}}"#.into(), format!("{s}.numRetries must be an integer")),
            (false, r#"{"healthyRetryPolicy":{"numRetries":2.5}}"#.into(), format!("{s}.numRetries must be an integer")),
            (false, r#"{"healthyRetryPolicy":{"numRetries":5000000000}}"#.into(), format!("{s}.numRetries is too large")),
            (false, r#"{"healthyRetryPolicy":{"minDelayTarget":0}}"#.into(), format!("{s}.minDelayTarget must be greater than or equal to 1")),
            (false, r#"{"healthyRetryPolicy":{"minDelayTarget":0,"maxDelayTarget":0}}"#.into(), format!("{s}.minDelayTarget must be greater than or equal to 1")),
            (false, r#"{"healthyRetryPolicy":{"maxDelayTarget":3601}}"#.into(), format!("{s}.maxDelayTarget must be less than or equal to 3600")),
            (false, r#"{"healthyRetryPolicy":{"minDelayTarget":3601,"maxDelayTarget":3601}}"#.into(), format!("{s}.minDelayTarget must be less than or equal to 3600")),
            (false, r#"{"healthyRetryPolicy":{"minDelayTarget":30,"maxDelayTarget":10}}"#.into(), format!("{s}.minDelayTarget must be less than or equal to maxDelayTarget")),
            (false, r#"{"healthyRetryPolicy":{"minDelayTarget":30}}"#.into(), format!("{s}.minDelayTarget must be less than or equal to maxDelayTarget")),
            (false, r#"{"healthyRetryPolicy":{"numRetries":3,"numNoDelayRetries":2,"numMinDelayRetries":1,"numMaxDelayRetries":1}}"#.into(), format!("{s}.numNoDelayRetries + numMinDelayRetries + numMaxDelayRetries must be less than or equal to numRetries")),
            (false, r#"{"healthyRetryPolicy":{"numMaxDelayRetries":4}}"#.into(), format!("{s}.numNoDelayRetries + numMinDelayRetries + numMaxDelayRetries must be less than or equal to numRetries")),
            (false, r#"{"healthyRetryPolicy":{"numNoDelayRetries":-2}}"#.into(), format!("{s}.numNoDelayRetries must be greater than or equal to 0")),
            (false, r#"{"healthyRetryPolicy":{"backoffFunction":"cubic"}}"#.into(), format!("{s}.backoffFunction must be one of linear, arithmetic, geometric, exponential")),
            (false, r#"{"healthyRetryPolicy":{"backoffFunction":1}}"#.into(), format!("{s}.backoffFunction must be one of linear, arithmetic, geometric, exponential")),
            (false, r#"{"throttlePolicy":{"maxReceivesPerSecond":0}}"#.into(), "throttlePolicy.maxReceivesPerSecond must be greater than or equal to 1".into()),
            (true, r#"{"http":{"defaultThrottlePolicy":{"maxReceivesPerSecond":0}}}"#.into(), "http.defaultThrottlePolicy.maxReceivesPerSecond must be greater than or equal to 1".into()),
            (false, r#"{"throttlePolicy":{"maxReceivesPerSecond":1,"burst":2}}"#.into(), "Unexpected JSON member: burst".into()),
            (false, r#"{"requestPolicy":{"headerContentType":5}}"#.into(), "requestPolicy.headerContentType must be a string".into()),
            (true, r#"{"http":{"defaultRequestPolicy":{"headerContentType":true}}}"#.into(), "http.defaultRequestPolicy.headerContentType must be a string".into()),
            (true, r#"{"http":{"disableSubscriptionOverrides":"yes"}}"#.into(), "http.disableSubscriptionOverrides must be a boolean".into()),
            (false, r#"{"guaranteed":"no"}"#.into(), "guaranteed must be a boolean".into()),
        ];
        for (topic, json, detail) in cases {
            let err = if topic {
                DeliveryPolicy::parse_topic(&json)
            } else {
                DeliveryPolicy::parse_subscription(&json)
            }
            .expect_err(&json);
            assert_eq!(err.code, ErrorCode::InvalidParameter, "{json}");
            assert_eq!(
                err.message,
                format!("Invalid parameter: DeliveryPolicy: {detail}"),
                "{json}"
            );
        }
    }

    #[test]
    fn limits_are_inclusive() {
        let p = sub(
            r#"{"healthyRetryPolicy":{"minDelayTarget":1,"maxDelayTarget":3600,"numRetries":100,
               "numNoDelayRetries":99,"numMaxDelayRetries":1}}"#,
        );
        assert_eq!(p.num_backoff_retries(), 0);
        assert_eq!(p.delay_before_retry(100), Some(3600));
        assert_eq!(p.delay_before_retry(101), None);
        assert_eq!(p.total_retry_secs(), 3600);
        // 100 retries 36 s apart: exactly the hour.
        let p = sub(
            r#"{"healthyRetryPolicy":{"minDelayTarget":36,"maxDelayTarget":36,"numRetries":100}}"#,
        );
        assert_eq!(p.total_retry_secs(), 3600);
    }

    #[test]
    fn total_retry_time_over_an_hour_is_refused() {
        // The AWS re:Post report of this error: 3599..3600 s with 10 retries.
        for (topic, json, path) in [
            (
                true,
                r#"{"http":{"defaultHealthyRetryPolicy":{"minDelayTarget":3599,"maxDelayTarget":3600,"numRetries":10}}}"#,
                "http.defaultHealthyRetryPolicy",
            ),
            (
                false,
                r#"{"healthyRetryPolicy":{"minDelayTarget":37,"maxDelayTarget":37,"numRetries":100}}"#,
                "healthyRetryPolicy",
            ),
            (
                false,
                r#"{"healthyRetryPolicy":{"minDelayTarget":1,"maxDelayTarget":3600,"numRetries":2}}"#,
                "healthyRetryPolicy",
            ),
        ] {
            let err = if topic {
                DeliveryPolicy::parse_topic(json)
            } else {
                DeliveryPolicy::parse_subscription(json)
            }
            .expect_err(json);
            assert_eq!(
                err.message,
                format!("Invalid parameter: DeliveryPolicy: {path}: Total policy retry time cannot be greater than 3600 seconds")
            );
        }
    }

    #[test]
    fn request_policy_sets_the_content_type() {
        assert_eq!(
            DeliveryPolicy::default_http().content_type(),
            "text/plain; charset=UTF-8"
        );
        let topic = r#"{"http":{"defaultRequestPolicy":{"headerContentType":"application/json"}}}"#;
        let own = r#"{"requestPolicy":{"headerContentType":"text/xml"}}"#;
        let retry_only = r#"{"healthyRetryPolicy":{"numRetries":1}}"#;
        let eff = DeliveryPolicy::effective;
        assert_eq!(eff(Some(topic), None).content_type(), "application/json");
        assert_eq!(eff(Some(topic), Some(own)).content_type(), "text/xml");
        assert_eq!(
            eff(Some(topic), Some(retry_only)).content_type(),
            "application/json"
        );
        assert_eq!(eff(None, Some(own)).content_type(), "text/xml");
        // The effective policy shows it, and reads back.
        let p = eff(None, Some(own));
        assert!(p
            .to_json()
            .contains(r#""requestPolicy":{"headerContentType":"text/xml"}"#));
        assert_eq!(sub(&p.to_json()), p);
        for bad in ["", " ", r"text/plain\r\nX-Evil: 1", r"caf\u00e9"] {
            let json = format!(r#"{{"requestPolicy":{{"headerContentType":"{bad}"}}}}"#);
            let err = DeliveryPolicy::parse_subscription(&json).expect_err(&json);
            assert_eq!(
                err.message,
                "Invalid parameter: DeliveryPolicy: requestPolicy.headerContentType must be a valid Content-Type header value",
                "{json}"
            );
        }
    }

    #[test]
    fn topic_document_with_every_member() {
        let p = DeliveryPolicy::parse_topic(
            r#"{"http":{"defaultHealthyRetryPolicy":{"minDelayTarget":2,"maxDelayTarget":8,
               "numRetries":4,"backoffFunction":"geometric"},"disableSubscriptionOverrides":true,
               "defaultSicklyRetryPolicy":null,"defaultThrottlePolicy":{"maxReceivesPerSecond":3},
               "defaultRequestPolicy":{"headerContentType":"application/json"}}}"#,
        )
        .unwrap();
        assert_eq!(p.backoff, Backoff::Geometric);
        assert_eq!(p.max_receives_per_second, Some(3));
        assert_eq!(schedule(&p), [2, 3, 5, 8]);
    }

    #[test]
    fn effective_policy_precedence() {
        let topic = r#"{"http":{"defaultHealthyRetryPolicy":{"numRetries":7},"defaultThrottlePolicy":{"maxReceivesPerSecond":5}}}"#;
        let locked = r#"{"http":{"defaultHealthyRetryPolicy":{"numRetries":7},"disableSubscriptionOverrides":true}}"#;
        let subscription = r#"{"healthyRetryPolicy":{"numRetries":9}}"#;
        let throttle_only = r#"{"throttlePolicy":{"maxReceivesPerSecond":2}}"#;
        let eff = DeliveryPolicy::effective;
        assert_eq!(eff(None, None), DeliveryPolicy::default_http());
        assert_eq!(eff(Some(""), Some("  ")), DeliveryPolicy::default_http());
        assert_eq!(eff(Some(topic), None).num_retries, 7);
        assert_eq!(eff(Some(topic), None).max_receives_per_second, Some(5));
        assert_eq!(eff(None, Some(subscription)).num_retries, 9);
        // The subscription's retry policy wins; the topic's throttle still applies.
        let both = eff(Some(topic), Some(subscription));
        assert_eq!(
            (both.num_retries, both.max_receives_per_second),
            (9, Some(5))
        );
        // A subscription that only throttles keeps the topic's retries.
        let p = eff(Some(topic), Some(throttle_only));
        assert_eq!((p.num_retries, p.max_receives_per_second), (7, Some(2)));
        // disableSubscriptionOverrides: the topic's policy, whatever the subscription says.
        assert_eq!(eff(Some(locked), Some(subscription)).num_retries, 7);
        assert_eq!(
            eff(Some(locked), Some(throttle_only)).max_receives_per_second,
            None
        );
        // Unparseable stored documents count as unset.
        assert_eq!(eff(Some("{"), Some(subscription)).num_retries, 9);
        assert_eq!(eff(Some(topic), Some("{")).num_retries, 7);
    }

    #[test]
    fn json_form_matches_aws_and_round_trips() {
        assert_eq!(
            DeliveryPolicy::default_http().to_json(),
            r#"{"healthyRetryPolicy":{"minDelayTarget":20,"maxDelayTarget":20,"numRetries":3,"numMaxDelayRetries":0,"numNoDelayRetries":0,"numMinDelayRetries":0,"backoffFunction":"linear"},"sicklyRetryPolicy":null,"throttlePolicy":null,"guaranteed":false}"#
        );
        let p = sub(
            r#"{"healthyRetryPolicy":{"minDelayTarget":1,"maxDelayTarget":60,"numRetries":50,
               "numNoDelayRetries":3,"numMinDelayRetries":2,"numMaxDelayRetries":35,
               "backoffFunction":"arithmetic"},"throttlePolicy":{"maxReceivesPerSecond":10}}"#,
        );
        assert!(p
            .to_json()
            .contains(r#""throttlePolicy":{"maxReceivesPerSecond":10}"#));
        assert_eq!(sub(&p.to_json()), p);
    }

    fn any_policy() -> impl Strategy<Value = DeliveryPolicy> {
        (
            1u32..=MAX_DELAY,
            0u32..=MAX_RETRIES,
            prop_oneof![
                Just(Backoff::Linear),
                Just(Backoff::Arithmetic),
                Just(Backoff::Geometric),
                Just(Backoff::Exponential),
            ],
            proptest::option::of(1u32..=1000),
        )
            .prop_flat_map(|(max, retries, backoff, throttle)| {
                (1u32..=max, 0..=retries).prop_flat_map(move |(min, no_delay)| {
                    (0..=retries - no_delay).prop_flat_map(move |min_delay| {
                        (0..=retries - no_delay - min_delay).prop_map(move |max_delay| {
                            DeliveryPolicy {
                                min_delay_target: min,
                                max_delay_target: max,
                                num_retries: retries,
                                num_no_delay_retries: no_delay,
                                num_min_delay_retries: min_delay,
                                num_max_delay_retries: max_delay,
                                backoff,
                                max_receives_per_second: throttle,
                                header_content_type: None,
                            }
                        })
                    })
                })
            })
    }

    proptest! {
        #[test]
        fn schedules_stay_within_the_policy(p in any_policy()) {
            // Policies within the hour survive their JSON form; longer ones are refused.
            let parsed = DeliveryPolicy::parse_subscription(&p.to_json());
            if p.total_retry_secs() <= u64::from(MAX_TOTAL_RETRY_SECS) {
                prop_assert_eq!(&parsed.unwrap(), &p);
            } else {
                prop_assert!(parsed.unwrap_err().message.contains("Total policy retry time"));
            }
            prop_assert_eq!(p.delay_before_retry(0), None);
            prop_assert_eq!(p.delay_before_retry(p.num_retries + 1), None);
            prop_assert_eq!(p.delay_before_retry(u32::MAX), None);
            let delays = schedule(&p);
            prop_assert_eq!(delays.len() as u32, p.num_retries);
            for &d in &delays {
                prop_assert!(d <= p.max_delay_target);
            }
            // The whole schedule, and so the backoff phase in it, never decreases.
            for w in delays.windows(2) {
                prop_assert!(w[0] <= w[1], "{:?}", delays);
            }
            let start = (p.num_no_delay_retries + p.num_min_delay_retries) as usize;
            let backoff = &delays[start..start + p.num_backoff_retries() as usize];
            if let (Some(&first), Some(&last)) = (backoff.first(), backoff.last()) {
                prop_assert_eq!(first, p.min_delay_target);
                if backoff.len() > 1 {
                    prop_assert_eq!(last, p.max_delay_target);
                }
                for &d in backoff {
                    prop_assert!(d >= p.min_delay_target && d <= p.max_delay_target);
                }
            }
        }
    }
}
