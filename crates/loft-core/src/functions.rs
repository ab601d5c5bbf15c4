//! Functions as consumers: the functions Loft invokes (configured, never run by Loft), the
//! retry rules of asynchronous invocation, and the events AWS Lambda hands a function for
//! SNS notifications and SQS batches. Pure: no I/O; the workers in `loft-server` make the
//! HTTP calls and report back to the service.
//!
//! Sources: Lambda Developer Guide "Invoking a Lambda function asynchronously" and "How
//! Lambda handles errors and retries with asynchronous invocation" (two retries, one and
//! two minutes apart; throttles and system errors retried with a backoff from 1 s to
//! 5 min; maximum event age 6 h), "Using Lambda with Amazon SNS" (the SNS event),
//! "Using Lambda with Amazon SQS" (the SQS event), Lambda API Reference `Invoke`
//! (`X-Amz-Invocation-Type`, `X-Amz-Function-Error`), `PutFunctionEventInvokeConfig`
//! (MaximumRetryAttempts 0..=2, MaximumEventAgeInSeconds 60..=21600).

use serde_json::{json, Map, Value};

use crate::error::{Error, ErrorCode, Result};
use crate::message::{self, MessageAttributes};

/// Default of [`FunctionConfig::timeout_seconds`] (Lambda's default timeout, 3 s).
pub const DEFAULT_TIMEOUT_SECONDS: u64 = 3;
/// Longest function timeout (Lambda's 900 s).
pub const MAX_TIMEOUT_SECONDS: u64 = 900;
/// Default MaximumRetryAttempts of asynchronous invocation.
pub const DEFAULT_MAX_RETRY_ATTEMPTS: u32 = 2;
/// Default (and largest) MaximumEventAgeInSeconds of asynchronous invocation (6 hours).
pub const DEFAULT_MAX_EVENT_AGE_SECONDS: u64 = 21_600;
/// Smallest MaximumEventAgeInSeconds.
pub const MIN_MAX_EVENT_AGE_SECONDS: u64 = 60;
/// Largest payload of a synchronous invocation, bytes (Lambda's 6 MB): a mapping's batch
/// stops growing before it.
pub const MAX_SYNC_PAYLOAD: usize = 6 * 1024 * 1024;

/// How a function is called.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FunctionTarget {
    /// A host of the Lambda Invoke API (serverless-offline's Lambda port, the Runtime
    /// Interface Emulator, AWS Lambda itself): `POST {base}/2015-03-31/functions/{name}/invocations`.
    /// A function error is the `X-Amz-Function-Error` header.
    InvokeEndpoint(String),
    /// Any HTTP handler: `POST` of the event as the body to this URL; a non-2xx status is a
    /// function error.
    Url(String),
}

/// The invocation type of an Invoke API call (`X-Amz-Invocation-Type`; Lambda API Reference
/// `Invoke`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InvocationType {
    /// `RequestResponse`: the host runs the function and answers its result (or its error
    /// in `X-Amz-Function-Error`). Event source mappings always invoke this way, as Lambda's
    /// SQS poller does.
    RequestResponse,
    /// `Event`: asynchronous; the host queues the event and answers `202` at once, and its
    /// own asynchronous configuration (retries, destinations) applies. How SNS invokes
    /// (Lambda Developer Guide "Invoking a Lambda function asynchronously": SNS is an
    /// asynchronous invoker).
    #[default]
    Event,
}

impl InvocationType {
    /// The header value: `RequestResponse` or `Event`.
    pub fn as_str(self) -> &'static str {
        match self {
            InvocationType::RequestResponse => "RequestResponse",
            InvocationType::Event => "Event",
        }
    }

    /// The type a header value (`RequestResponse`, `Event`) names; `None` for any other,
    /// `DryRun` included.
    pub fn parse(s: &str) -> Option<InvocationType> {
        match s {
            "RequestResponse" => Some(InvocationType::RequestResponse),
            "Event" => Some(InvocationType::Event),
            _ => None,
        }
    }
}

/// SigV4 credentials to sign Invoke API calls with (real AWS Lambda).
#[derive(Clone, PartialEq, Eq)]
pub struct FunctionSigning {
    /// Access key id.
    pub access_key_id: String,
    /// Secret access key.
    pub secret_access_key: String,
    /// Session token, sent as `x-amz-security-token`.
    pub session_token: Option<String>,
    /// The region of the signature's scope (the service's region when `None`).
    pub region: Option<String>,
}

impl std::fmt::Debug for FunctionSigning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FunctionSigning")
            .field("access_key_id", &self.access_key_id)
            .field("region", &self.region)
            .finish_non_exhaustive()
    }
}

/// One function of the config file's `[[functions]]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionConfig {
    /// The function's name (`[a-zA-Z0-9-_]`, 1 to 64 characters); its ARN is
    /// `arn:aws:lambda:{region}:{account}:function:{name}`.
    pub name: String,
    /// Where it is invoked.
    pub target: FunctionTarget,
    /// How long one invocation may take, seconds (1..=900); a call still running then is a
    /// function error ("Task timed out").
    pub timeout_seconds: u64,
    /// Asynchronous invocation: retries after a function error (0..=2).
    pub maximum_retry_attempts: u32,
    /// Asynchronous invocation: events older than this (seconds, 60..=21600) are not tried
    /// again.
    pub maximum_event_age_seconds: u64,
    /// Sign Invoke API calls with these credentials.
    pub signing: Option<FunctionSigning>,
    /// How SNS deliveries call an [`FunctionTarget::InvokeEndpoint`] function (default
    /// [`InvocationType::Event`], as AWS). `RequestResponse` is for hosts that cannot take
    /// `Event`: `sam local start-lambda` refuses it (`NotImplemented`), and the Lambda
    /// Runtime Interface Emulator runs every call synchronously, so an `Event` call's
    /// function error would pass for a success; with `RequestResponse` Loft sees the
    /// function's error and applies the asynchronous retries itself. Event source mappings
    /// always call `RequestResponse`; a [`FunctionTarget::Url`] has no invocation type.
    pub invocation_type: InvocationType,
    /// The account the function belongs to (its ARN's); `None`: the server's account.
    /// Only that account sees it in the Lambda API (GetFunction, ListFunctions).
    pub account: Option<String>,
    /// Other accounts whose topics may subscribe it and whose event source mappings may
    /// invoke it, as a Lambda resource-based policy's `lambda:InvokeFunction` grant to
    /// those accounts would (Lambda Developer Guide, "Granting function access to other
    /// accounts"). Empty: its own account only.
    pub allow_accounts: Vec<String>,
}

impl FunctionConfig {
    /// A function named `name` at `target` with Lambda's defaults.
    pub fn new(name: impl Into<String>, target: FunctionTarget) -> FunctionConfig {
        FunctionConfig {
            name: name.into(),
            target,
            timeout_seconds: DEFAULT_TIMEOUT_SECONDS,
            maximum_retry_attempts: DEFAULT_MAX_RETRY_ATTEMPTS,
            maximum_event_age_seconds: DEFAULT_MAX_EVENT_AGE_SECONDS,
            signing: None,
            invocation_type: InvocationType::Event,
            account: None,
            allow_accounts: Vec::new(),
        }
    }

    /// Checks the settings' ranges and the name. Errors: `InvalidParameterValue` naming
    /// the setting.
    pub fn validate(&self) -> Result<()> {
        check_function_name(&self.name)?;
        let bad = |what: &str| Error::invalid(format!("function {}: {what}", self.name));
        if !(1..=MAX_TIMEOUT_SECONDS).contains(&self.timeout_seconds) {
            return Err(bad("timeout_seconds must be between 1 and 900"));
        }
        if self.maximum_retry_attempts > 2 {
            return Err(bad("maximum_retry_attempts must be between 0 and 2"));
        }
        if !(MIN_MAX_EVENT_AGE_SECONDS..=DEFAULT_MAX_EVENT_AGE_SECONDS)
            .contains(&self.maximum_event_age_seconds)
        {
            return Err(bad(
                "maximum_event_age_seconds must be between 60 and 21600",
            ));
        }
        for a in self.account.iter().chain(&self.allow_accounts) {
            if a.len() != 12 || !a.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad(&format!(
                    "account and allow_accounts take 12-digit account ids, not {a:?}"
                )));
            }
        }
        let url = match &self.target {
            FunctionTarget::InvokeEndpoint(u) | FunctionTarget::Url(u) => u,
        };
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(bad(
                "invoke_endpoint and url must be http:// or https:// URLs",
            ));
        }
        Ok(())
    }
}

/// A function name: 1 to 64 of `[a-zA-Z0-9-_]` (Lambda API Reference, CreateFunction).
/// Errors: `InvalidParameterValue`.
pub fn check_function_name(name: &str) -> Result<()> {
    let ok = (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "invalid function name {name:?}: 1 to 64 letters, digits, hyphens or underscores"
        )))
    }
}

/// `arn:aws:lambda:{region}:{account}:function:{name}`.
pub fn function_arn(region: &str, account: &str, name: &str) -> String {
    format!("arn:aws:lambda:{region}:{account}:function:{name}")
}

/// The function name in a FunctionName parameter: a name, `name:qualifier`, a partial ARN
/// (`123456789012:function:name`) or a full ARN, as the Lambda API accepts; the qualifier
/// (`$LATEST`, a version or alias) is dropped, since Loft's functions have one version.
pub fn function_name_of(name_or_arn: &str) -> &str {
    let rest = name_or_arn
        .rsplit_once(":function:")
        .map_or(name_or_arn, |(_, r)| r);
    rest.split(':').next().unwrap_or(rest)
}

/// The function a FunctionName parameter names for a caller: its region, account and name
/// (the qualifier dropped, [`function_name_of`]). The Lambda API takes a name
/// (`my-function`, `my-function:v1`), a partial ARN (`123456789012:function:my-function`)
/// or an ARN (Lambda API Reference, GetFunction, FunctionName "Name formats"); a name
/// alone is the caller's own function, so it names the caller's account, and a partial
/// ARN names its account in the caller's region. Built from the parameter and the caller
/// alone: what it names does not depend on which functions exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FunctionRef<'a> {
    /// The ARN's region, else the caller's.
    pub region: &'a str,
    /// The (partial) ARN's account, else the caller's.
    pub account: &'a str,
    /// The function's name.
    pub name: &'a str,
}

impl<'a> FunctionRef<'a> {
    /// What `name_or_arn` names for a caller of `account` in `region`; an empty account
    /// or region field of an ARN is the caller's.
    pub fn parse(name_or_arn: &'a str, account: &'a str, region: &'a str) -> FunctionRef<'a> {
        let name = function_name_of(name_or_arn);
        let Some((head, _)) = name_or_arn.rsplit_once(":function:") else {
            return FunctionRef {
                region,
                account,
                name,
            };
        };
        // `ACCOUNT` (a partial ARN) or `arn:PARTITION:lambda:REGION:ACCOUNT` (an ARN).
        let mut fields = head.rsplit(':');
        let named = |f: Option<&'a str>, or: &'a str| f.filter(|v| !v.is_empty()).unwrap_or(or);
        let account = named(fields.next(), account);
        let region = if head.starts_with("arn:") {
            named(fields.next(), region)
        } else {
            region
        };
        FunctionRef {
            region,
            account,
            name,
        }
    }

    /// `arn:aws:lambda:{region}:{account}:function:{name}`.
    pub fn arn(&self) -> String {
        function_arn(self.region, self.account, self.name)
    }
}

/// What one invocation came to, as the worker that made the call saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InvokeOutcome {
    /// The function ran and returned this payload (the response body).
    Success(String),
    /// The function ran and failed (`X-Amz-Function-Error`, a non-2xx answer of a `url`
    /// handler, or its timeout): `error_type` (`Unhandled`, `Handled`, `TimedOut`) and the
    /// error payload.
    FunctionError {
        /// The kind of error.
        error_type: String,
        /// The payload the function's host answered with.
        payload: String,
    },
    /// The function did not run: its host refused (429, 5xx without a function error) or
    /// could not be reached. Retried with the throttle backoff.
    Throttled(String),
    /// The call can never succeed: no such function configured, or the host answered
    /// 4xx (other than 429) without a function error.
    Rejected(String),
}

impl InvokeOutcome {
    /// A short description for logs and a delivery's last error.
    pub fn describe(&self) -> String {
        match self {
            InvokeOutcome::Success(_) => "success".into(),
            InvokeOutcome::FunctionError {
                error_type,
                payload,
            } => {
                let cut: String = payload.chars().take(256).collect();
                format!("function error ({error_type}): {cut}")
            }
            InvokeOutcome::Throttled(why) => format!("not invoked: {why}"),
            InvokeOutcome::Rejected(why) => format!("refused: {why}"),
        }
    }
}

/// What asynchronous invocation does after a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AsyncNext {
    /// Try again this many milliseconds from now.
    RetryInMs(i64),
    /// Give up: the event goes to the subscription's dead-letter queue, if any.
    GiveUp,
}

/// The retry rule of asynchronous invocation after an attempt that failed with `outcome`:
/// `function_errors` function errors so far (this one included), `throttles` throttles so
/// far (this one included), the event `age_ms` old now.
///
/// Function errors: retried `max_retries` times, one minute after the first error and two
/// after the second. Throttles and system errors: retried with a backoff that starts at 1 s
/// and doubles up to 5 minutes. Either way, never once the event is older than
/// `max_age_seconds`; a rejected call is never retried.
pub fn async_retry(
    outcome: &InvokeOutcome,
    function_errors: u32,
    throttles: u32,
    age_ms: i64,
    max_retries: u32,
    max_age_seconds: u64,
) -> AsyncNext {
    let delay_ms = match outcome {
        InvokeOutcome::Success(_) | InvokeOutcome::Rejected(_) => return AsyncNext::GiveUp,
        InvokeOutcome::FunctionError { .. } => {
            if function_errors > max_retries {
                return AsyncNext::GiveUp;
            }
            60_000 * function_errors.max(1) as i64
        }
        InvokeOutcome::Throttled(_) => {
            let exp = throttles.saturating_sub(1).min(20);
            (1_000i64 << exp).min(300_000)
        }
    };
    if age_ms + delay_ms > max_age_seconds as i64 * 1000 {
        return AsyncNext::GiveUp;
    }
    AsyncNext::RetryInMs(delay_ms)
}

/// The fields of one SNS notification as a Lambda subscription receives them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnsNotification<'a> {
    /// The subscription's ARN (EventSubscriptionArn).
    pub subscription_arn: &'a str,
    /// TopicArn.
    pub topic_arn: &'a str,
    /// MessageId.
    pub message_id: &'a str,
    /// Subject, `null` when none.
    pub subject: Option<&'a str>,
    /// Message.
    pub message: &'a str,
    /// Timestamp, ISO 8601 with milliseconds.
    pub timestamp: &'a str,
    /// SignatureVersion and Signature, when the topic signs.
    pub signature: Option<(u8, &'a str)>,
    /// SigningCertUrl.
    pub signing_cert_url: &'a str,
    /// UnsubscribeUrl.
    pub unsubscribe_url: &'a str,
    /// MessageAttributes (`{"name": {"Type", "Value"}}`).
    pub attributes: &'a MessageAttributes,
}

/// The event an SNS notification invokes a function with (Lambda Developer Guide, "Using
/// Lambda with Amazon SNS"): one record, `EventSource` `aws:sns`, `EventVersion` `1.0`,
/// the notification under `Sns` with Lambda's spellings (`SigningCertUrl`,
/// `UnsubscribeUrl`) and `Subject` `null` when the publish had none.
pub fn sns_event(n: &SnsNotification<'_>) -> Value {
    let mut sns = Map::new();
    if let Some((version, sig)) = n.signature {
        sns.insert("SignatureVersion".into(), json!(version.to_string()));
        sns.insert("Signature".into(), json!(sig));
    }
    sns.insert("Timestamp".into(), json!(n.timestamp));
    sns.insert("SigningCertUrl".into(), json!(n.signing_cert_url));
    sns.insert("MessageId".into(), json!(n.message_id));
    sns.insert("Message".into(), json!(n.message));
    let mut attrs = Map::new();
    for (name, v) in n.attributes {
        let value = match &v.binary_value {
            Some(b) => message::base64_encode(b),
            None => v.string_value.clone().unwrap_or_default(),
        };
        attrs.insert(name.clone(), json!({"Type": v.data_type, "Value": value}));
    }
    sns.insert("MessageAttributes".into(), Value::Object(attrs));
    sns.insert("Type".into(), json!("Notification"));
    sns.insert("UnsubscribeUrl".into(), json!(n.unsubscribe_url));
    sns.insert("TopicArn".into(), json!(n.topic_arn));
    sns.insert("Subject".into(), json!(n.subject));
    json!({"Records": [{
        "EventSource": "aws:sns",
        "EventVersion": "1.0",
        "EventSubscriptionArn": n.subscription_arn,
        "Sns": Value::Object(sns),
    }]})
}

/// The SNS envelope of the notification inside an [`sns_event`] (the shape SNS sends to
/// HTTP/S endpoints and SQS queues, with its spellings `SigningCertURL` and
/// `UnsubscribeURL`): what a Lambda subscription's dead-letter queue receives. `None`
/// when `event` is not such an event.
pub fn envelope_of_sns_event(event: &str) -> Option<String> {
    let v: Value = serde_json::from_str(event).ok()?;
    let sns = v.get("Records")?.get(0)?.get("Sns")?.as_object()?;
    let mut env = Map::new();
    let copy = |env: &mut Map<String, Value>, from: &str, to: &str| {
        if let Some(x) = sns.get(from).filter(|x| !x.is_null()) {
            env.insert(to.to_owned(), x.clone());
        }
    };
    for (from, to) in [
        ("Type", "Type"),
        ("MessageId", "MessageId"),
        ("TopicArn", "TopicArn"),
        ("Subject", "Subject"),
        ("Message", "Message"),
        ("Timestamp", "Timestamp"),
        ("SignatureVersion", "SignatureVersion"),
        ("Signature", "Signature"),
        ("SigningCertUrl", "SigningCertURL"),
        ("UnsubscribeUrl", "UnsubscribeURL"),
    ] {
        copy(&mut env, from, to);
    }
    if sns
        .get("MessageAttributes")
        .and_then(Value::as_object)
        .is_some_and(|m| !m.is_empty())
    {
        copy(&mut env, "MessageAttributes", "MessageAttributes");
    }
    Some(Value::Object(env).to_string())
}

/// One message of an SQS batch, as a mapping received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqsRecord {
    /// MessageId.
    pub message_id: String,
    /// ReceiptHandle of this receive.
    pub receipt_handle: String,
    /// Body.
    pub body: String,
    /// MD5 of the body.
    pub md5_body: String,
    /// System attributes (ApproximateReceiveCount, SentTimestamp, SenderId,
    /// ApproximateFirstReceiveTimestamp; on FIFO queues SequenceNumber, MessageGroupId,
    /// MessageDeduplicationId; AWSTraceHeader when set).
    pub attributes: std::collections::BTreeMap<String, String>,
    /// Message attributes.
    pub message_attributes: MessageAttributes,
    /// MD5OfMessageAttributes, when it has any.
    pub md5_message_attributes: Option<String>,
}

impl SqsRecord {
    /// The record as the SQS event carries it (Lambda Developer Guide, "Using Lambda with
    /// Amazon SQS"; AWS's recorded events): `messageAttributes` with `stringValue` /
    /// `binaryValue`, `stringListValues`, `binaryListValues`, `dataType`;
    /// `md5OfMessageAttributes` `null` when there are none.
    pub fn to_json(&self, queue_arn: &str, region: &str) -> Value {
        let mut attrs = Map::new();
        for (name, v) in &self.message_attributes {
            let mut a = Map::new();
            match &v.binary_value {
                Some(b) => {
                    a.insert("binaryValue".into(), json!(message::base64_encode(b)));
                }
                None => {
                    a.insert(
                        "stringValue".into(),
                        json!(v.string_value.clone().unwrap_or_default()),
                    );
                }
            }
            a.insert("stringListValues".into(), json!([]));
            a.insert("binaryListValues".into(), json!([]));
            a.insert("dataType".into(), json!(v.data_type));
            attrs.insert(name.clone(), Value::Object(a));
        }
        json!({
            "messageId": self.message_id,
            "receiptHandle": self.receipt_handle,
            "body": self.body,
            "attributes": self.attributes,
            "messageAttributes": Value::Object(attrs),
            "md5OfMessageAttributes": self.md5_message_attributes,
            "md5OfBody": self.md5_body,
            "eventSource": "aws:sqs",
            "eventSourceARN": queue_arn,
            "awsRegion": region,
        })
    }

    /// What FilterCriteria patterns are matched against: the record's fields, with `body`
    /// parsed as JSON when it is a JSON object (Lambda Developer Guide, "Control which
    /// events Lambda sends to your function": "if the body is not valid JSON, Lambda
    /// matches it as a plain string").
    pub fn filter_view(&self, queue_arn: &str, region: &str) -> Value {
        let mut v = self.to_json(queue_arn, region);
        if let Ok(body @ Value::Object(_)) = serde_json::from_str::<Value>(&self.body) {
            v["body"] = body;
        }
        v
    }
}

/// The event of one SQS batch: `{"Records": [...]}`.
pub fn sqs_event(records: &[SqsRecord], queue_arn: &str, region: &str) -> Value {
    json!({"Records": records.iter().map(|r| r.to_json(queue_arn, region)).collect::<Vec<_>>()})
}

/// Which messages of a batch failed, from the function's answer when the mapping has
/// `ReportBatchItemFailures` (Lambda Developer Guide, "Implementing partial batch
/// responses"): the `itemIdentifier`s of `batchItemFailures`. An empty answer, `null`,
/// `{}`, or an empty list report no failure; an answer that is not such an object, or a
/// failure whose identifier is missing, empty or not in the batch, fails the whole batch
/// (`None`).
pub fn batch_item_failures(payload: &str, message_ids: &[&str]) -> Option<Vec<String>> {
    let trimmed = payload.trim();
    if trimmed.is_empty() {
        return Some(Vec::new());
    }
    let v: Value = serde_json::from_str(trimmed).ok()?;
    let obj = match v {
        Value::Null => return Some(Vec::new()),
        Value::Object(o) => o,
        _ => return None,
    };
    let failures = match obj.get("batchItemFailures") {
        None | Some(Value::Null) => return Some(Vec::new()),
        Some(Value::Array(a)) => a,
        Some(_) => return None,
    };
    let mut out = Vec::with_capacity(failures.len());
    for f in failures {
        let id = f.get("itemIdentifier")?.as_str()?;
        if id.is_empty() || !message_ids.contains(&id) {
            return None;
        }
        out.push(id.to_owned());
    }
    Some(out)
}

/// The error of a FunctionName that names no configured function.
pub fn function_not_found(arn: &str) -> Error {
    Error::new(
        ErrorCode::LambdaResourceNotFound,
        format!("Function not found: {arn}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn function_error() -> InvokeOutcome {
        InvokeOutcome::FunctionError {
            error_type: "Unhandled".into(),
            payload: "{}".into(),
        }
    }

    #[test]
    fn a_function_name_alone_is_the_callers_and_an_arn_names_its_account() {
        let at = |s| FunctionRef::parse(s, "222222222222", "us-east-1").arn();
        let own = "arn:aws:lambda:us-east-1:222222222222:function:f";
        assert_eq!(at("f"), own);
        assert_eq!(at("f:$LATEST"), own);
        assert_eq!(
            at("111111111111:function:f:1"),
            "arn:aws:lambda:us-east-1:111111111111:function:f"
        );
        assert_eq!(
            at("arn:aws:lambda:eu-west-1:111111111111:function:f"),
            "arn:aws:lambda:eu-west-1:111111111111:function:f"
        );
        assert_eq!(at("arn:aws:lambda:::function:f"), own);
    }

    #[test]
    fn function_errors_are_retried_twice_one_and_two_minutes_apart() {
        let age = 0;
        assert_eq!(
            async_retry(&function_error(), 1, 0, age, 2, 21_600),
            AsyncNext::RetryInMs(60_000)
        );
        assert_eq!(
            async_retry(&function_error(), 2, 0, 60_000, 2, 21_600),
            AsyncNext::RetryInMs(120_000)
        );
        assert_eq!(
            async_retry(&function_error(), 3, 0, 180_000, 2, 21_600),
            AsyncNext::GiveUp
        );
        assert_eq!(
            async_retry(&function_error(), 1, 0, 0, 0, 21_600),
            AsyncNext::GiveUp,
            "MaximumRetryAttempts 0"
        );
    }

    #[test]
    fn throttles_back_off_from_one_second_to_five_minutes_within_the_event_age() {
        let t = InvokeOutcome::Throttled("connection refused".into());
        // (throttles so far, the event's age, what comes next)
        for (throttles, age_ms, next) in [
            (1, 0, AsyncNext::RetryInMs(1_000)),
            (2, 0, AsyncNext::RetryInMs(2_000)),
            (9, 0, AsyncNext::RetryInMs(256_000)),
            (10, 0, AsyncNext::RetryInMs(300_000)),
            // Past the maximum event age.
            (10, 21_500_000, AsyncNext::GiveUp),
        ] {
            assert_eq!(
                async_retry(&t, 0, throttles, age_ms, 2, 21_600),
                next,
                "throttle {throttles}, {age_ms} ms old"
            );
        }
        assert_eq!(
            async_retry(&InvokeOutcome::Rejected("404".into()), 0, 0, 0, 2, 21_600),
            AsyncNext::GiveUp
        );
    }

    #[test]
    fn function_names_come_out_of_names_and_arns() {
        assert_eq!(function_name_of("f"), "f");
        assert_eq!(function_name_of("f:$LATEST"), "f");
        assert_eq!(function_name_of("123456789012:function:f"), "f");
        assert_eq!(
            function_name_of("arn:aws:lambda:us-east-1:123456789012:function:f:prod"),
            "f"
        );
        assert!(check_function_name("thumb_nailer-2").is_ok());
        assert!(check_function_name("").is_err());
        assert!(check_function_name("a.b").is_err());
    }

    #[test]
    fn batch_item_failures_read_as_lambda_reads_them() {
        let ids = ["a", "b"];
        assert_eq!(batch_item_failures("", &ids), Some(vec![]));
        assert_eq!(batch_item_failures("null", &ids), Some(vec![]));
        assert_eq!(batch_item_failures("{}", &ids), Some(vec![]));
        assert_eq!(
            batch_item_failures(r#"{"batchItemFailures":[]}"#, &ids),
            Some(vec![])
        );
        assert_eq!(
            batch_item_failures(r#"{"batchItemFailures":[{"itemIdentifier":"b"}]}"#, &ids),
            Some(vec!["b".to_owned()])
        );
        assert_eq!(
            batch_item_failures(r#"{"batchItemFailures":[{"itemIdentifier":"z"}]}"#, &ids),
            None,
            "an identifier not in the batch fails the batch"
        );
        assert_eq!(
            batch_item_failures(r#"{"batchItemFailures":[{"itemIdentifier":""}]}"#, &ids),
            None
        );
        assert_eq!(batch_item_failures("[1]", &ids), None);
        assert_eq!(batch_item_failures("not json", &ids), None);
    }

    #[test]
    fn the_sns_event_and_its_envelope() {
        let attrs = MessageAttributes::new();
        let event = sns_event(&SnsNotification {
            subscription_arn: "arn:aws:sns:us-east-1:000000000000:t:1",
            topic_arn: "arn:aws:sns:us-east-1:000000000000:t",
            message_id: "m",
            subject: None,
            message: "hello",
            timestamp: "2024-01-01T00:00:00.000Z",
            signature: Some((1, "sig")),
            signing_cert_url: "http://x/c.pem",
            unsubscribe_url: "http://x/?Action=Unsubscribe",
            attributes: &attrs,
        });
        let r = &event["Records"][0];
        assert_eq!(r["EventSource"], "aws:sns");
        assert_eq!(r["EventVersion"], "1.0");
        assert_eq!(r["Sns"]["Subject"], Value::Null);
        assert_eq!(r["Sns"]["SigningCertUrl"], "http://x/c.pem");
        let env: Value =
            serde_json::from_str(&envelope_of_sns_event(&event.to_string()).unwrap()).unwrap();
        assert_eq!(env["Message"], "hello");
        assert_eq!(env["SigningCertURL"], "http://x/c.pem");
        assert!(env.get("Subject").is_none());
    }
}
