//! IAM policies: parsing and evaluation, as pure functions.
//!
//! Loft enforces two kinds of AWS access policy, both written in the IAM policy language
//! (IAM User Guide, "IAM JSON policy elements reference"):
//!
//! - **identity policies**, attached to an access key in Loft's configuration
//!   (`[[credentials]] policies`): no `Principal`, a `Resource` or `NotResource` in every
//!   statement;
//! - **resource policies**, the `Policy` attribute of a queue or a topic: every statement
//!   names a `Principal` (or `NotPrincipal`); a missing `Resource` means the resource the
//!   policy is attached to.
//!
//! [`Policy::parse`] reads either kind: `Version` (`2012-10-17`, `2008-10-17` or absent),
//! `Id`, `Statement` (one object or a list), and in each statement `Sid`, `Effect`
//! (`Allow`/`Deny`), `Action`/`NotAction` (case-insensitive, `*` and `?` wildcards),
//! `Resource`/`NotResource` (ARNs with wildcards, each of the six colon-separated parts
//! matched on its own), `Principal`/`NotPrincipal` (`"*"`, `{"AWS": ...}` with account ids,
//! `arn:aws:iam::ACCOUNT:root` or principal ARNs, `{"Service": ...}`) and `Condition` with the
//! operators of [`Operator`] (String, Arn, Numeric, Date, Bool, IpAddress and Null, each
//! with `...IfExists`, and `ForAnyValue:`/`ForAllValues:`).
//! Bad input is a [`PolicyError`], never a panic.
//!
//! [`authorize`] decides a request as "Determining whether a request is allowed or denied
//! within an account" and "Cross-account policy evaluation logic" (IAM User Guide) describe
//! it: an explicit `Deny` in any applicable policy wins; within one account an `Allow` in the
//! identity policies *or* the resource policy allows; across accounts both the caller's
//! identity policies *and* the resource policy must allow; anything else is an implicit deny.

use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;

use serde_json::Value;

/// Why a policy document was refused. The text says which element is wrong, in the words
/// IAM's validator uses where it has them ("Policy document should not specify a principal").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyError(pub String);

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PolicyError {}

fn err<T>(message: impl Into<String>) -> Result<T, PolicyError> {
    Err(PolicyError(message.into()))
}

/// A statement's `Effect`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// `"Allow"`.
    Allow,
    /// `"Deny"`.
    Deny,
}

/// Patterns with a sense: `Action` (`negated == false`) or `NotAction` (`true`); the same for
/// `Resource`/`NotResource`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Patterns {
    /// The listed patterns, as written.
    pub patterns: Vec<String>,
    /// Whether the element was the `Not...` form.
    pub negated: bool,
}

/// A statement's `Principal` or `NotPrincipal`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principals {
    /// `"*"` or `{"AWS": "*"}`: everyone.
    pub anyone: bool,
    /// `AWS` entries: account ids (`"123456789012"`), account roots
    /// (`arn:aws:iam::123456789012:root`) or principal ARNs.
    pub aws: Vec<String>,
    /// `Service` entries (`sns.amazonaws.com`).
    pub services: Vec<String>,
    /// Whether the element was `NotPrincipal`.
    pub negated: bool,
}

/// A condition operator (IAM User Guide, "IAM JSON policy elements: Condition operators").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operator {
    /// `StringEquals`: exact, case-sensitive.
    StringEquals,
    /// `StringNotEquals`.
    StringNotEquals,
    /// `StringEqualsIgnoreCase`.
    StringEqualsIgnoreCase,
    /// `StringNotEqualsIgnoreCase`.
    StringNotEqualsIgnoreCase,
    /// `StringLike`: case-sensitive with `*` and `?`.
    StringLike,
    /// `StringNotLike`.
    StringNotLike,
    /// `ArnEquals` and `ArnLike` (the same test in IAM: each ARN part on its own, with
    /// wildcards).
    ArnLike,
    /// `ArnNotEquals` and `ArnNotLike`.
    ArnNotLike,
    /// `NumericEquals`.
    NumericEquals,
    /// `NumericNotEquals`.
    NumericNotEquals,
    /// `NumericLessThan`.
    NumericLessThan,
    /// `NumericLessThanEquals`.
    NumericLessThanEquals,
    /// `NumericGreaterThan`.
    NumericGreaterThan,
    /// `NumericGreaterThanEquals`.
    NumericGreaterThanEquals,
    /// `Bool`: `true`/`false`, case-insensitive.
    Bool,
    /// `IpAddress`: the key's address is in one of the CIDR ranges.
    IpAddress,
    /// `NotIpAddress`.
    NotIpAddress,
    /// `Null`: `true` when the key must be absent, `false` when present.
    Null,
    /// `DateEquals`: the key's instant (an ISO 8601 date/time in the W3C profile, or
    /// epoch seconds; [`date_ms`]) equals the policy's.
    DateEquals,
    /// `DateNotEquals`.
    DateNotEquals,
    /// `DateLessThan`: the key's instant is before the policy's.
    DateLessThan,
    /// `DateLessThanEquals`.
    DateLessThanEquals,
    /// `DateGreaterThan`: the key's instant is after the policy's.
    DateGreaterThan,
    /// `DateGreaterThanEquals`.
    DateGreaterThanEquals,
}

impl Operator {
    fn parse(name: &str) -> Option<Self> {
        use Operator::*;
        Some(match name {
            "StringEquals" => StringEquals,
            "StringNotEquals" => StringNotEquals,
            "StringEqualsIgnoreCase" => StringEqualsIgnoreCase,
            "StringNotEqualsIgnoreCase" => StringNotEqualsIgnoreCase,
            "StringLike" => StringLike,
            "StringNotLike" => StringNotLike,
            "ArnEquals" | "ArnLike" => ArnLike,
            "ArnNotEquals" | "ArnNotLike" => ArnNotLike,
            "NumericEquals" => NumericEquals,
            "NumericNotEquals" => NumericNotEquals,
            "NumericLessThan" => NumericLessThan,
            "NumericLessThanEquals" => NumericLessThanEquals,
            "NumericGreaterThan" => NumericGreaterThan,
            "NumericGreaterThanEquals" => NumericGreaterThanEquals,
            "Bool" => Bool,
            "IpAddress" => IpAddress,
            "NotIpAddress" => NotIpAddress,
            "Null" => Null,
            "DateEquals" => DateEquals,
            "DateNotEquals" => DateNotEquals,
            "DateLessThan" => DateLessThan,
            "DateLessThanEquals" => DateLessThanEquals,
            "DateGreaterThan" => DateGreaterThan,
            "DateGreaterThanEquals" => DateGreaterThanEquals,
            _ => return None,
        })
    }

    /// The negated operators: true when the key is absent (IAM User Guide, "Condition
    /// operators": "If the key ... is not present ... and the policy condition requires that
    /// the key is not matched, such as StringNotLike or ArnNotLike, the condition is true").
    fn negated(self) -> bool {
        use Operator::*;
        matches!(
            self,
            StringNotEquals
                | StringNotEqualsIgnoreCase
                | StringNotLike
                | ArnNotLike
                | NumericNotEquals
                | NotIpAddress
                | DateNotEquals
        )
    }
}

/// How a condition treats a multivalued key (`ForAnyValue:`, `ForAllValues:`, neither).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetQualifier {
    /// No qualifier: a single-valued key; with several values, any one matching suffices.
    None,
    /// `ForAnyValue:`: at least one of the request's values matches.
    AnyValue,
    /// `ForAllValues:`: every one of the request's values matches (true when there are none).
    AllValues,
}

/// One test of a `Condition` block: `{"Operator": {"key": [values]}}` for one key.
#[derive(Debug, Clone, PartialEq)]
pub struct Condition {
    /// The operator.
    pub operator: Operator,
    /// `...IfExists`: true when the key is absent.
    pub if_exists: bool,
    /// `ForAnyValue:` / `ForAllValues:`.
    pub qualifier: SetQualifier,
    /// The condition key, lower-cased (keys are case-insensitive): `aws:sourcearn`.
    pub key: String,
    /// The values the key is compared with; any one matching suffices.
    pub values: Vec<String>,
}

/// One statement.
#[derive(Debug, Clone, PartialEq)]
pub struct Statement {
    /// `Sid`, when given.
    pub sid: Option<String>,
    /// `Effect`.
    pub effect: Effect,
    /// `Principal`/`NotPrincipal`, when given.
    pub principal: Option<Principals>,
    /// `Action`/`NotAction`.
    pub action: Patterns,
    /// `Resource`/`NotResource`, when given.
    pub resource: Option<Patterns>,
    /// Every test of the `Condition` block; all must hold.
    pub conditions: Vec<Condition>,
}

/// A parsed policy document.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Policy {
    /// The statements, in document order.
    pub statements: Vec<Statement>,
}

/// Which kind of policy a document is, for the checks that differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PolicyKind {
    /// Attached to a caller: no `Principal`, a `Resource` in every statement.
    Identity,
    /// Attached to a queue or topic: a `Principal` in every statement.
    Resource,
}

/// Strings from a JSON string or list of strings (`"Action": "sqs:*"` or `["a", "b"]`).
fn strings(v: &Value, element: &str) -> Result<Vec<String>, PolicyError> {
    match v {
        Value::String(s) => Ok(vec![s.clone()]),
        Value::Array(items) if !items.is_empty() => items
            .iter()
            .map(|i| match i {
                Value::String(s) => Ok(s.clone()),
                _ => err(format!("{element} must be a string or a list of strings")),
            })
            .collect(),
        _ => err(format!("{element} must be a string or a list of strings")),
    }
}

/// Condition values: strings, numbers and booleans are accepted as IAM does (written as
/// text: `false` is `"false"`).
fn condition_values(v: &Value) -> Result<Vec<String>, PolicyError> {
    let one = |v: &Value| match v {
        Value::String(s) => Ok(s.clone()),
        Value::Bool(b) => Ok(b.to_string()),
        Value::Number(n) => Ok(n.to_string()),
        _ => err("Condition values must be strings, numbers or booleans"),
    };
    match v {
        Value::Array(items) if !items.is_empty() => items.iter().map(one).collect(),
        Value::Array(_) => err("Condition values must not be an empty list"),
        other => Ok(vec![one(other)?]),
    }
}

fn principals(v: &Value, negated: bool) -> Result<Principals, PolicyError> {
    let mut p = Principals {
        anyone: false,
        aws: Vec::new(),
        services: Vec::new(),
        negated,
    };
    match v {
        Value::String(s) if s == "*" => p.anyone = true,
        Value::Object(map) if !map.is_empty() => {
            for (kind, value) in map {
                let list = strings(value, "Principal")?;
                match kind.as_str() {
                    "AWS" => {
                        for a in list {
                            if a == "*" {
                                p.anyone = true;
                            } else {
                                p.aws.push(a);
                            }
                        }
                    }
                    "Service" => p.services.extend(list),
                    // Federated and CanonicalUser principals never match a Loft caller.
                    "Federated" | "CanonicalUser" => {}
                    other => return err(format!("Invalid principal type {other}")),
                }
            }
        }
        _ => return err("Invalid principal in policy"),
    }
    Ok(p)
}

fn condition_block(v: &Value) -> Result<Vec<Condition>, PolicyError> {
    let Value::Object(ops) = v else {
        return err("Condition must be an object");
    };
    let mut out = Vec::new();
    for (name, keys) in ops {
        let (qualifier, rest) = if let Some(r) = name.strip_prefix("ForAnyValue:") {
            (SetQualifier::AnyValue, r)
        } else if let Some(r) = name.strip_prefix("ForAllValues:") {
            (SetQualifier::AllValues, r)
        } else {
            (SetQualifier::None, name.as_str())
        };
        let (if_exists, base) = match rest.strip_suffix("IfExists") {
            Some(b) => (true, b),
            None => (false, rest),
        };
        let operator = Operator::parse(base)
            .ok_or_else(|| PolicyError(format!("Unsupported condition operator {name}")))?;
        if operator == Operator::Null && if_exists {
            return err("NullIfExists is not a condition operator");
        }
        let Value::Object(keys) = keys else {
            return err(format!("Condition {name} must be an object of keys"));
        };
        if keys.is_empty() {
            return err(format!("Condition {name} names no key"));
        }
        for (key, values) in keys {
            let values = condition_values(values)?;
            match operator {
                Operator::IpAddress | Operator::NotIpAddress => {
                    for v in &values {
                        crate::cidr::parse(v).ok_or_else(|| {
                            PolicyError(format!("Invalid IP address or range {v} in {name}"))
                        })?;
                    }
                }
                Operator::NumericEquals
                | Operator::NumericNotEquals
                | Operator::NumericLessThan
                | Operator::NumericLessThanEquals
                | Operator::NumericGreaterThan
                | Operator::NumericGreaterThanEquals => {
                    for v in &values {
                        v.trim()
                            .parse::<f64>()
                            .map_err(|_| PolicyError(format!("Invalid number {v} in {name}")))?;
                    }
                }
                Operator::DateEquals
                | Operator::DateNotEquals
                | Operator::DateLessThan
                | Operator::DateLessThanEquals
                | Operator::DateGreaterThan
                | Operator::DateGreaterThanEquals => {
                    for v in &values {
                        date_ms(v)
                            .ok_or_else(|| PolicyError(format!("Invalid date {v} in {name}")))?;
                    }
                }
                _ => {}
            }
            out.push(Condition {
                operator,
                if_exists,
                qualifier,
                key: key.to_ascii_lowercase(),
                values,
            });
        }
    }
    Ok(out)
}

fn statement(v: &Value, kind: Option<PolicyKind>) -> Result<Statement, PolicyError> {
    let Value::Object(map) = v else {
        return err("Statement must be an object or a list of objects");
    };
    for key in map.keys() {
        if !matches!(
            key.as_str(),
            "Sid"
                | "Effect"
                | "Principal"
                | "NotPrincipal"
                | "Action"
                | "NotAction"
                | "Resource"
                | "NotResource"
                | "Condition"
        ) {
            return err(format!("Statement element {key} is not supported"));
        }
    }
    let sid = match map.get("Sid") {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return err("Sid must be a string"),
    };
    let effect = match map.get("Effect") {
        Some(Value::String(s)) if s == "Allow" => Effect::Allow,
        Some(Value::String(s)) if s == "Deny" => Effect::Deny,
        Some(_) => return err("Effect must be Allow or Deny"),
        None => return err("Missing required field Effect"),
    };
    let pair = |yes: &str, no: &str| -> Result<Option<Patterns>, PolicyError> {
        match (map.get(yes), map.get(no)) {
            (Some(_), Some(_)) => err(format!("A statement cannot have both {yes} and {no}")),
            (Some(v), None) => Ok(Some(Patterns {
                patterns: strings(v, yes)?,
                negated: false,
            })),
            (None, Some(v)) => Ok(Some(Patterns {
                patterns: strings(v, no)?,
                negated: true,
            })),
            (None, None) => Ok(None),
        }
    };
    let action = pair("Action", "NotAction")?
        .ok_or_else(|| PolicyError("Missing required field Action".into()))?;
    let resource = pair("Resource", "NotResource")?;
    let principal = match (map.get("Principal"), map.get("NotPrincipal")) {
        (Some(_), Some(_)) => {
            return err("A statement cannot have both Principal and NotPrincipal")
        }
        (Some(v), None) => Some(principals(v, false)?),
        (None, Some(v)) => Some(principals(v, true)?),
        (None, None) => None,
    };
    let conditions = match map.get("Condition") {
        Some(c) => condition_block(c)?,
        None => Vec::new(),
    };
    match kind {
        Some(PolicyKind::Identity) => {
            if principal.is_some() {
                return err("Policy document should not specify a principal.");
            }
            if resource.is_none() {
                return err("Missing required field Resource");
            }
        }
        Some(PolicyKind::Resource) if principal.is_none() => {
            return err("Missing required field Principal");
        }
        _ => {}
    }
    Ok(Statement {
        sid,
        effect,
        principal,
        action,
        resource,
        conditions,
    })
}

impl Policy {
    /// Parses a policy document of `kind` (see the module's description for the grammar).
    ///
    /// Errors: [`PolicyError`] for text that is not a JSON object, an unknown `Version`, a
    /// missing or empty `Statement`, an unknown element, an unsupported condition operator,
    /// a malformed value, or the checks of [`PolicyKind`].
    pub fn parse(text: &str, kind: PolicyKind) -> Result<Self, PolicyError> {
        Self::parse_as(text, Some(kind))
    }

    /// Parses a document without the checks of either [`PolicyKind`]: how Loft reads a
    /// queue's or topic's stored `Policy` attribute, which AWS's APIs accept in forms IAM's
    /// validator would refuse.
    ///
    /// Errors: as [`Policy::parse`], less the kind's checks.
    pub fn parse_lenient(text: &str) -> Result<Self, PolicyError> {
        Self::parse_as(text, None)
    }

    fn parse_as(text: &str, kind: Option<PolicyKind>) -> Result<Self, PolicyError> {
        let doc: Value = serde_json::from_str(text)
            .map_err(|e| PolicyError(format!("The policy is not valid JSON: {e}")))?;
        let Value::Object(map) = &doc else {
            return err("The policy must be a JSON object");
        };
        for key in map.keys() {
            if !matches!(key.as_str(), "Version" | "Id" | "Statement") {
                return err(format!("Policy element {key} is not supported"));
            }
        }
        match map.get("Version") {
            None => {}
            Some(Value::String(v)) if v == "2012-10-17" || v == "2008-10-17" => {}
            Some(_) => return err("The policy Version must be 2012-10-17 or 2008-10-17"),
        }
        if let Some(id) = map.get("Id") {
            if !id.is_string() {
                return err("Id must be a string");
            }
        }
        let statements = match map.get("Statement") {
            Some(Value::Array(list)) => list
                .iter()
                .map(|s| statement(s, kind))
                .collect::<Result<Vec<_>, _>>()?,
            Some(one @ Value::Object(_)) => vec![statement(one, kind)?],
            Some(_) => return err("Statement must be an object or a list of objects"),
            None => return err("Missing required field Statement"),
        };
        if statements.is_empty() && kind.is_some() {
            return err("Missing required field Statement");
        }
        Ok(Policy { statements })
    }
}

/// Who makes a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caller {
    /// An IAM identity of `account`: its ARN (`arn:aws:iam::111111111111:user/team-a`, or
    /// `arn:aws:iam::111111111111:root` for a key without an identity).
    Iam {
        /// The 12-digit account id.
        account: String,
        /// The identity's ARN.
        arn: String,
    },
    /// An AWS service acting on its own behalf (`sns.amazonaws.com` delivering to a queue).
    Service(String),
}

/// One request, as the policies see it (IAM User Guide, "Request context").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The action, `service:Operation` (`sqs:SendMessage`).
    pub action: String,
    /// The resource's ARN (`arn:aws:sqs:us-east-1:111111111111:orders`).
    pub resource: String,
    /// The caller.
    pub caller: Caller,
    /// Condition keys, lower-cased, with their values (`aws:sourcearn` → `[topic ARN]`).
    /// [`Request::new`] fills the principal keys AWS includes in every request from the
    /// caller; the service adds the request's own ([`Request::at`] and the rest).
    pub context: BTreeMap<String, Vec<String>>,
}

impl Request {
    /// A request of `caller` for `action` on `resource`, with the principal keys AWS
    /// always includes (IAM User Guide, "AWS global condition context keys"): for an IAM
    /// identity `aws:PrincipalAccount`, `aws:PrincipalArn`, `aws:PrincipalType` (`Account`
    /// for an account's root, `User` for `user/...`, `AssumedRole` for a role) and, for a
    /// user, `aws:username` (its name without its path); for a service
    /// `aws:PrincipalServiceName`; `aws:PrincipalIsAWSService` (`true` only for a
    /// service) and `aws:ViaAWSService` (`false`: Loft makes no request on a principal's
    /// behalf through another service). A condition on one of them therefore matches as
    /// on AWS instead of finding the key absent.
    pub fn new(action: impl Into<String>, resource: impl Into<String>, caller: Caller) -> Self {
        let mut context = BTreeMap::new();
        let one = |v: &str| vec![v.to_owned()];
        match &caller {
            Caller::Iam { account, arn } => {
                context.insert("aws:principalaccount".into(), one(account));
                context.insert("aws:principalarn".into(), one(arn));
                let resource = arn.rsplit_once(':').map_or("", |(_, r)| r);
                let kind = if resource == "root" {
                    "Account"
                } else if resource.starts_with("role/") || resource.starts_with("assumed-role/") {
                    "AssumedRole"
                } else {
                    "User"
                };
                context.insert("aws:principaltype".into(), one(kind));
                if let Some(path) = resource.strip_prefix("user/") {
                    let name = path.rsplit('/').next().unwrap_or(path);
                    context.insert("aws:username".into(), one(name));
                }
                context.insert("aws:principalisawsservice".into(), one("false"));
            }
            Caller::Service(name) => {
                context.insert("aws:principalservicename".into(), one(name));
                context.insert("aws:principalisawsservice".into(), one("true"));
            }
        }
        context.insert("aws:viaawsservice".into(), one("false"));
        Request {
            action: action.into(),
            resource: resource.into(),
            caller,
            context,
        }
    }

    /// Sets the keys of the request's moment and place that AWS always includes:
    /// `aws:CurrentTime` (ISO 8601 UTC of `now_ms`), `aws:EpochTime` (its whole seconds)
    /// and `aws:RequestedRegion` (`region`, the request's).
    pub fn at(self, now_ms: i64, region: &str) -> Self {
        self.with("aws:CurrentTime", vec![crate::clock::iso_timestamp(now_ms)])
            .with("aws:EpochTime", vec![now_ms.div_euclid(1000).to_string()])
            .with("aws:RequestedRegion", vec![region.to_owned()])
    }

    /// Sets condition key `key` (any case) to `values`.
    pub fn with(mut self, key: &str, values: Vec<String>) -> Self {
        self.context.insert(key.to_ascii_lowercase(), values);
        self
    }
}

/// What one policy, or the whole evaluation, says about a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// An `Allow` statement matched and no `Deny` did.
    Allow,
    /// A `Deny` statement matched.
    ExplicitDeny,
    /// Nothing matched.
    ImplicitDeny,
}

/// `*` and `?` glob matching; `fold` compares ASCII case-insensitively.
pub fn glob(pattern: &str, text: &str, fold: bool) -> bool {
    let p = pattern.as_bytes();
    let t = text.as_bytes();
    let eq = |a: u8, b: u8| {
        if fold {
            a.eq_ignore_ascii_case(&b)
        } else {
            a == b
        }
    };
    // Iterative matching with one backtrack point: linear in practice, never recursive,
    // so a hostile pattern cannot exhaust the stack.
    let (mut pi, mut ti) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == b'?' || (p[pi] != b'*' && eq(p[pi], t[ti]))) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == b'*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == b'*' {
        pi += 1;
    }
    pi == p.len()
}

/// ARN matching as IAM does it for `Resource` and `ArnLike`: `*` alone matches anything;
/// otherwise both split into six colon-separated parts (the last keeps its colons), each
/// part matched with [`glob`], case-sensitively.
pub fn arn_matches(pattern: &str, arn: &str) -> bool {
    if pattern == "*" {
        return true;
    }
    let pp: Vec<&str> = pattern.splitn(6, ':').collect();
    let ap: Vec<&str> = arn.splitn(6, ':').collect();
    if ap.len() != 6 {
        // Not an ARN: compared as a plain glob.
        return glob(pattern, arn, false);
    }
    if pp.len() != 6 {
        // A pattern with fewer parts than an ARN never matches one (IAM refuses it as a
        // Resource; a stored resource policy may still hold one).
        return false;
    }
    pp.iter().zip(&ap).all(|(p, a)| glob(p, a, false))
}

/// Whether one request value matches one policy value under a (non-negated form of an)
/// operator.
fn value_matches(op: Operator, policy: &str, actual: &str) -> bool {
    use Operator::*;
    let num = |s: &str| s.trim().parse::<f64>().ok();
    match op {
        StringEquals | StringNotEquals => policy == actual,
        StringEqualsIgnoreCase | StringNotEqualsIgnoreCase => policy.eq_ignore_ascii_case(actual),
        StringLike | StringNotLike => glob(policy, actual, false),
        ArnLike | ArnNotLike => arn_matches(policy, actual),
        Bool => policy.eq_ignore_ascii_case(actual),
        IpAddress | NotIpAddress => actual.parse::<IpAddr>().is_ok_and(|ip| {
            crate::cidr::parse(policy).is_some_and(|n| crate::cidr::contains(&n, ip))
        }),
        NumericEquals | NumericNotEquals => {
            matches!((num(actual), num(policy)), (Some(a), Some(p)) if a == p)
        }
        NumericLessThan => matches!((num(actual), num(policy)), (Some(a), Some(p)) if a < p),
        NumericLessThanEquals => matches!((num(actual), num(policy)), (Some(a), Some(p)) if a <= p),
        NumericGreaterThan => matches!((num(actual), num(policy)), (Some(a), Some(p)) if a > p),
        NumericGreaterThanEquals => {
            matches!((num(actual), num(policy)), (Some(a), Some(p)) if a >= p)
        }
        DateEquals | DateNotEquals => {
            matches!((date_ms(actual), date_ms(policy)), (Some(a), Some(p)) if a == p)
        }
        DateLessThan => matches!((date_ms(actual), date_ms(policy)), (Some(a), Some(p)) if a < p),
        DateLessThanEquals => {
            matches!((date_ms(actual), date_ms(policy)), (Some(a), Some(p)) if a <= p)
        }
        DateGreaterThan => {
            matches!((date_ms(actual), date_ms(policy)), (Some(a), Some(p)) if a > p)
        }
        DateGreaterThanEquals => {
            matches!((date_ms(actual), date_ms(policy)), (Some(a), Some(p)) if a >= p)
        }
        Null => false,
    }
}

/// The instant (epoch milliseconds, UTC) a Date condition value or key names: epoch
/// seconds (digits, as `aws:EpochTime` gives them), or an ISO 8601 date/time in the W3C
/// profile the IAM User Guide asks for ("Date condition operators"): `YYYY-MM-DD`,
/// `YYYY-MM-DDThh:mmTZD`, `YYYY-MM-DDThh:mm:ssTZD`, `YYYY-MM-DDThh:mm:ss.sTZD` (`TZD`
/// being `Z` or `+hh:mm`/`-hh:mm`); a bare date is its midnight UTC, and a time without
/// `TZD` is taken as UTC. `None` for anything else (wildcards included: the guide
/// permits none).
pub fn date_ms(s: &str) -> Option<i64> {
    let s = s.trim();
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        return s.parse::<i64>().ok()?.checked_mul(1000);
    }
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s) {
        return Some(t.timestamp_millis());
    }
    if let Ok(t) = chrono::DateTime::parse_from_str(s, "%Y-%m-%dT%H:%M%#z") {
        return Some(t.timestamp_millis());
    }
    let naive = s.strip_suffix('Z').unwrap_or(s);
    for form in ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%dT%H:%M"] {
        if let Ok(t) = chrono::NaiveDateTime::parse_from_str(naive, form) {
            return Some(t.and_utc().timestamp_millis());
        }
    }
    let d = chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").ok()?;
    Some(d.and_hms_opt(0, 0, 0)?.and_utc().timestamp_millis())
}

impl Condition {
    /// Whether this test holds for `context` (IAM User Guide, "Condition operators" and
    /// "Single-valued vs. multivalued context keys").
    pub fn holds(&self, context: &BTreeMap<String, Vec<String>>) -> bool {
        let actual = context.get(&self.key).filter(|v| !v.is_empty());
        if self.operator == Operator::Null {
            let want_absent = self.values.iter().any(|v| v.eq_ignore_ascii_case("true"));
            return actual.is_none() == want_absent;
        }
        let Some(actual) = actual else {
            return match self.qualifier {
                SetQualifier::AllValues => true,
                _ => self.if_exists || self.operator.negated(),
            };
        };
        let any_policy = |a: &str| {
            self.values
                .iter()
                .any(|p| value_matches(self.operator, p, a))
        };
        if self.operator.negated() {
            // Negated operators: true when no value matches.
            match self.qualifier {
                SetQualifier::AllValues => actual.iter().all(|a| !any_policy(a)),
                SetQualifier::AnyValue => actual.iter().any(|a| !any_policy(a)),
                SetQualifier::None => !actual.iter().any(|a| any_policy(a)),
            }
        } else {
            match self.qualifier {
                SetQualifier::AllValues => actual.iter().all(|a| any_policy(a)),
                _ => actual.iter().any(|a| any_policy(a)),
            }
        }
    }
}

/// The caller's account, whatever form a principal entry names it in.
fn principal_entry_matches(entry: &str, account: &str, arn: &str) -> bool {
    if entry == account || entry == arn {
        return true;
    }
    if let Some(rest) = entry.strip_prefix("arn:aws:iam::") {
        if let Some(acct) = rest.strip_suffix(":root") {
            return acct == account;
        }
    }
    false
}

impl Principals {
    /// Whether the element names `caller` (for `NotPrincipal`, whether it does not).
    pub fn matches(&self, caller: &Caller) -> bool {
        let named = self.anyone
            || match caller {
                Caller::Iam { account, arn } => self
                    .aws
                    .iter()
                    .any(|e| principal_entry_matches(e, account, arn)),
                Caller::Service(name) => self.services.iter().any(|s| s.eq_ignore_ascii_case(name)),
            };
        named != self.negated
    }
}

impl Statement {
    /// Whether the statement applies to `request`: its principal (when it names one), action,
    /// resource (when it names one; absent means the resource the policy is attached to) and
    /// every condition.
    pub fn applies(&self, request: &Request) -> bool {
        if let Some(p) = &self.principal {
            if !p.matches(&request.caller) {
                return false;
            }
        }
        let action = self
            .action
            .patterns
            .iter()
            .any(|p| glob(p, &request.action, true));
        if action == self.action.negated {
            return false;
        }
        if let Some(r) = &self.resource {
            let hit = r.patterns.iter().any(|p| arn_matches(p, &request.resource));
            if hit == r.negated {
                return false;
            }
        }
        self.conditions.iter().all(|c| c.holds(&request.context))
    }
}

impl Policy {
    /// What this policy alone says about `request`: [`Decision::ExplicitDeny`] when a `Deny`
    /// statement applies, else [`Decision::Allow`] when an `Allow` statement does, else
    /// [`Decision::ImplicitDeny`].
    pub fn evaluate(&self, request: &Request) -> Decision {
        let mut allowed = false;
        for s in &self.statements {
            if s.applies(request) {
                match s.effect {
                    Effect::Deny => return Decision::ExplicitDeny,
                    Effect::Allow => allowed = true,
                }
            }
        }
        if allowed {
            Decision::Allow
        } else {
            Decision::ImplicitDeny
        }
    }
}

/// The caller's identity policies.
#[derive(Debug, Clone, Copy)]
pub enum Identity<'a> {
    /// A key without policies: everything its account may do, as the account's root user
    /// (and as Loft before policies existed).
    Unrestricted,
    /// A key with policies: what they allow, nothing else.
    Policies(&'a [Policy]),
    /// No identity policies apply (a service principal).
    None,
}

/// The decision on `request` for a resource owned by `resource_account`, from the caller's
/// identity policies and the resource's policy (IAM User Guide, "Policy evaluation logic"):
///
/// 1. any explicit `Deny` in either → [`Decision::ExplicitDeny`];
/// 2. the caller in `resource_account` (or a service principal): an `Allow` in either
///    allows;
/// 3. the caller in another account: the identity policies *and* the resource policy must
///    both allow;
/// 4. otherwise [`Decision::ImplicitDeny`].
pub fn authorize(
    identity: Identity<'_>,
    resource_policy: Option<&Policy>,
    resource_account: &str,
    request: &Request,
) -> Decision {
    let identity_decision = match identity {
        Identity::Unrestricted => Decision::Allow,
        Identity::Policies(list) => {
            let mut d = Decision::ImplicitDeny;
            for p in list {
                match p.evaluate(request) {
                    Decision::ExplicitDeny => return Decision::ExplicitDeny,
                    Decision::Allow => d = Decision::Allow,
                    Decision::ImplicitDeny => {}
                }
            }
            d
        }
        Identity::None => Decision::ImplicitDeny,
    };
    let resource_decision = resource_policy
        .map(|p| p.evaluate(request))
        .unwrap_or(Decision::ImplicitDeny);
    if resource_decision == Decision::ExplicitDeny {
        return Decision::ExplicitDeny;
    }
    let same_account = match &request.caller {
        Caller::Iam { account, .. } => account == resource_account,
        Caller::Service(_) => true,
    };
    let allowed = if same_account {
        identity_decision == Decision::Allow || resource_decision == Decision::Allow
    } else {
        identity_decision == Decision::Allow && resource_decision == Decision::Allow
    };
    if allowed {
        Decision::Allow
    } else {
        Decision::ImplicitDeny
    }
}

#[cfg(test)]
mod tests;
