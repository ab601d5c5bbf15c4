//! SNS subscription filter policies: parsing, validation and matching. Pure: no I/O.
//!
//! Sources: SNS Developer Guide "Amazon SNS message filtering" and its pages "Filter policy
//! constraints", "String value matching", "Numeric value matching", "Key matching", "AND/OR
//! logic" and "Payload-based filtering"; the error texts are the ones SNS answers with
//! (`Invalid parameter: FilterPolicy: ...`), which come from the same rule compiler as
//! EventBridge's event patterns.
//!
//! # The language
//! A policy is a JSON object. Each key names a message attribute (scope `MessageAttributes`)
//! or a message body property (scope `MessageBody`, where a key's value may be an object to
//! reach nested properties). Each leaf key holds an array of values, any of which may match
//! (OR); all keys must match (AND). `"$or": [{..}, {..}]` ORs whole sub-policies, at any level.
//! A value is a string, number, `true`, `false`, `null`, or one operator object: `prefix`,
//! `suffix`, `equals-ignore-case`, `anything-but` (a value, a list, or a `prefix`/`suffix`
//! object), `numeric` (`=`, or a one- or two-sided range), `exists`, `cidr`.
//!
//! # How a message is seen
//! Every key resolves to a *field*: absent, or present with zero or more scalar values.
//! - Attributes: `String` gives one string; `Number` one number; `String.Array` the scalars of
//!   its JSON array; `Binary` is ignored, exactly as if it were absent. Custom types
//!   (`Number.float`) count as their base type.
//! - Body: properties are flattened to dot-joined paths, as SNS does, so `{"a": {"b": 1}}` and
//!   `{"a.b": 1}` both give `a.b = 1`; arrays (at any depth) contribute each element. A path
//!   with no scalar under it (`{}`, `[]`) is absent. A body that is not a JSON object matches
//!   nothing.
//!
//! A key matches when one of its values matches: `exists` looks at presence only; every other
//! value needs a present field with at least one scalar it accepts. So `anything-but` never
//! matches a missing key, and on an array it matches when some element is not excluded.
//! `anything-but X` accepts exactly the scalars that the plain value `X` (or `prefix`/`suffix`)
//! rejects. Numbers compare numerically (`300` = `3.0e2`) with five decimal digits of
//! precision; strings compare case-sensitively except under `equals-ignore-case`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::net::IpAddr;

use serde_json::{Map, Value};

use crate::error::{Error, ErrorCode, Result};

/// Most keys in a policy (per `$or` branch; only leaf keys count in a nested policy).
pub const MAX_KEYS: usize = 5;
/// Most "total combination of values" a policy may have.
pub const MAX_COMBINATIONS: u64 = 150;
/// Largest policy text, in bytes (256 KB).
pub const MAX_POLICY_BYTES: usize = 256 * 1024;
/// Numeric operands (`numeric`, numeric `anything-but`) must lie within ±this.
pub const NUMERIC_LIMIT: f64 = 1e9;

/// The reserved operator names: an object using one of them is a match expression, and a
/// `$or` array containing an object keyed by one of them is no `$or` at all.
const OPERATORS: [&str; 7] = [
    "prefix",
    "suffix",
    "equals-ignore-case",
    "anything-but",
    "numeric",
    "exists",
    "cidr",
];

/// What a subscription's filter policy is applied to (`FilterPolicyScope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum FilterPolicyScope {
    /// The message attributes (AWS's default).
    #[default]
    MessageAttributes,
    /// The message body, parsed as a JSON object.
    MessageBody,
}

impl FilterPolicyScope {
    /// The attribute value naming this scope.
    pub fn as_str(self) -> &'static str {
        match self {
            FilterPolicyScope::MessageAttributes => "MessageAttributes",
            FilterPolicyScope::MessageBody => "MessageBody",
        }
    }

    /// Parses a `FilterPolicyScope` attribute value. Errors: `InvalidParameter` with AWS's text.
    pub fn parse(value: &str) -> Result<Self> {
        match value {
            "MessageAttributes" => Ok(FilterPolicyScope::MessageAttributes),
            "MessageBody" => Ok(FilterPolicyScope::MessageBody),
            other => Err(Error::new(
                ErrorCode::InvalidParameter,
                format!(
                    "Invalid parameter: FilterPolicyScope: Invalid value [{other}]. \
                     Please use either MessageBody or MessageAttributes"
                ),
            )),
        }
    }
}

impl fmt::Display for FilterPolicyScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A parsed and validated filter policy.
#[derive(Debug, Clone, PartialEq)]
pub struct FilterPolicy {
    scope: FilterPolicyScope,
    /// The policy in disjunctive form: it matches when every key of some branch matches.
    branches: Vec<Branch>,
    /// Every leaf path, and every dot-boundary prefix of one (to prune body flattening).
    paths: HashSet<String>,
    prefixes: HashSet<String>,
}

type Branch = Vec<Leaf>;

/// One key with its values: `path` is the attribute name, or the dot-joined body path.
#[derive(Debug, Clone, PartialEq)]
struct Leaf {
    path: String,
    /// Nesting depth of the key (1 at the top), which weighs its values in the complexity.
    depth: u64,
    patterns: Vec<Pattern>,
}

#[derive(Debug, Clone, PartialEq)]
enum Pattern {
    Exact(Literal),
    Prefix(String),
    Suffix(String),
    /// Lower-cased.
    EqualsIgnoreCase(String),
    Numeric(NumRange),
    Cidr(Cidr),
    Exists(bool),
    AnythingBut(AnythingBut),
}

#[derive(Debug, Clone, PartialEq)]
enum Literal {
    Str(String),
    /// The canonical fixed-point form (see [`canon`]).
    Num(i128),
    Bool(bool),
    Null,
}

#[derive(Debug, Clone, PartialEq)]
enum AnythingBut {
    Strings(Vec<String>),
    Numbers(Vec<i128>),
    Prefix(String),
    Suffix(String),
}

/// Bounds in canonical fixed point, each with whether it is inclusive.
#[derive(Debug, Clone, Copy, PartialEq)]
struct NumRange {
    lower: Option<(i128, bool)>,
    upper: Option<(i128, bool)>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Cidr {
    V4 { network: u32, mask: u32 },
    V6 { network: u128, mask: u128 },
}

/// A number as an integer count of 10^-5: SNS keeps five digits after the decimal point.
fn canon(x: f64) -> i128 {
    (x * 1e5).round() as i128
}

fn invalid(reason: impl fmt::Display) -> Error {
    Error::new(
        ErrorCode::InvalidParameter,
        format!("Invalid parameter: FilterPolicy: {reason}"),
    )
}

/// How the JSON parser names a token in AWS's messages (`Invalid member in numeric match: 1`).
fn token_text(v: Option<&Value>) -> String {
    match v {
        None => "]".to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Object(_)) => "{".to_string(),
        Some(Value::Array(_)) => "[".to_string(),
        Some(other) => other.to_string(),
    }
}

impl FilterPolicy {
    /// Parses and validates `policy_json` for `scope`.
    ///
    /// Errors: [`ErrorCode::InvalidParameter`], with AWS's message
    /// (`Invalid parameter: FilterPolicy: ...`; the nested-policy error for the attributes
    /// scope reads `Invalid parameter: Filter policy scope MessageAttributes does not support
    /// nested filter policy`). `Subscribe` words them differently: see [`in_subscribe_call`].
    /// An empty object `{}` is accepted and matches every message.
    pub fn parse(policy_json: &str, scope: FilterPolicyScope) -> Result<FilterPolicy> {
        if policy_json.len() > MAX_POLICY_BYTES {
            return Err(invalid(format!(
                "Filter policy is too large: {} bytes, at most {MAX_POLICY_BYTES} allowed",
                policy_json.len()
            )));
        }
        let value: Value = serde_json::from_str(policy_json)
            .map_err(|e| invalid(format!("failed to parse JSON. {e}")))?;
        let Value::Object(object) = value else {
            return Err(invalid("Filter is not an object"));
        };

        let mut nested = false;
        let branches = if object.is_empty() {
            vec![Vec::new()]
        } else {
            compile_object(&object, &[], &mut nested)?
        };

        if nested && scope == FilterPolicyScope::MessageAttributes {
            return Err(Error::new(
                ErrorCode::InvalidParameter,
                "Invalid parameter: Filter policy scope MessageAttributes does not support \
                 nested filter policy",
            ));
        }
        for branch in &branches {
            let keys: HashSet<&str> = branch.iter().map(|l| l.path.as_str()).collect();
            if keys.len() > MAX_KEYS {
                return Err(invalid("Filter policy can not have more than 5 keys"));
            }
        }
        if complexity(&branches) > MAX_COMBINATIONS {
            return Err(invalid("Filter policy is too complex"));
        }

        let paths: HashSet<String> = branches.iter().flatten().map(|l| l.path.clone()).collect();
        let mut prefixes = HashSet::new();
        for path in &paths {
            prefixes.insert(path.clone());
            for (i, _) in path.match_indices('.') {
                prefixes.insert(path[..i].to_string());
            }
        }
        Ok(FilterPolicy {
            scope,
            branches,
            paths,
            prefixes,
        })
    }

    /// The scope the policy was parsed for.
    pub fn scope(&self) -> FilterPolicyScope {
        self.scope
    }

    /// Whether a message with these attributes passes. `attributes`: name -> (DataType,
    /// value), the value of a `String.Array` being its JSON array text. `Binary` attributes
    /// are ignored (as if absent).
    pub fn matches_attributes(&self, attributes: &BTreeMap<String, (String, String)>) -> bool {
        let mut fields: HashMap<&str, Option<Vec<Value>>> = HashMap::new();
        for path in &self.paths {
            let field = attributes
                .get(path)
                .and_then(|(data_type, value)| attribute_field(data_type, value));
            fields.insert(path.as_str(), field);
        }
        self.evaluate(|path| {
            fields
                .get(path)
                .and_then(|f| f.as_ref())
                .map(|values| values.iter().collect())
        })
    }

    /// Whether a message with this body passes. The body must be a JSON object; anything
    /// else (and so a body that is not JSON, see [`Self::matches_body_text`]) never matches.
    pub fn matches_body(&self, body: &Value) -> bool {
        let Value::Object(object) = body else {
            return false;
        };
        let mut fields: HashMap<String, Vec<&Value>> = HashMap::new();
        let mut path = String::new();
        for (key, child) in object {
            self.flatten(key, child, &mut path, &mut fields);
        }
        self.evaluate(|path| fields.get(path).cloned())
    }

    /// [`Self::matches_body`] on the body text: a body that is not JSON never matches.
    pub fn matches_body_text(&self, body: &str) -> bool {
        serde_json::from_str::<Value>(body).is_ok_and(|v| self.matches_body(&v))
    }

    /// Applies the policy to whichever part of the message its scope names.
    pub fn matches_message(
        &self,
        attributes: &BTreeMap<String, (String, String)>,
        body: &str,
    ) -> bool {
        match self.scope {
            FilterPolicyScope::MessageAttributes => self.matches_attributes(attributes),
            FilterPolicyScope::MessageBody => self.matches_body_text(body),
        }
    }

    /// Collects the scalars under `key` (appended to `path`), pruning paths no key reaches.
    fn flatten<'a>(
        &self,
        key: &str,
        value: &'a Value,
        path: &mut String,
        out: &mut HashMap<String, Vec<&'a Value>>,
    ) {
        let restore = path.len();
        if !path.is_empty() {
            path.push('.');
        }
        path.push_str(key);
        if self.prefixes.contains(path.as_str()) {
            self.collect(value, path, out);
        }
        path.truncate(restore);
    }

    fn collect<'a>(
        &self,
        value: &'a Value,
        path: &mut String,
        out: &mut HashMap<String, Vec<&'a Value>>,
    ) {
        match value {
            Value::Object(object) => {
                for (key, child) in object {
                    self.flatten(key, child, path, out);
                }
            }
            Value::Array(items) => {
                for item in items {
                    self.collect(item, path, out);
                }
            }
            scalar => {
                if self.paths.contains(path.as_str()) {
                    out.entry(path.clone()).or_default().push(scalar);
                }
            }
        }
    }

    fn evaluate<'v>(&self, field: impl Fn(&str) -> Option<Vec<&'v Value>>) -> bool {
        self.branches.iter().any(|branch| {
            branch.iter().all(|leaf| {
                let values = field(&leaf.path);
                leaf.patterns
                    .iter()
                    .any(|p| pattern_matches(p, values.as_deref()))
            })
        })
    }
}

/// Rewrites a [`FilterPolicy::parse`] error into the form `Subscribe` answers with
/// (`Invalid parameter: Attributes Reason: FilterPolicy: ...`); `SetSubscriptionAttributes`
/// uses the error as it is.
pub fn in_subscribe_call(error: Error) -> Error {
    match error.message.strip_prefix("Invalid parameter: ") {
        Some(rest) if error.code == ErrorCode::InvalidParameter => Error::new(
            ErrorCode::InvalidParameter,
            format!("Invalid parameter: Attributes Reason: {rest}"),
        ),
        _ => error,
    }
}

/// The field an attribute gives: `None` (absent) for `Binary`.
fn attribute_field(data_type: &str, value: &str) -> Option<Vec<Value>> {
    if data_type == "String.Array" {
        let values = match serde_json::from_str::<Value>(value) {
            Ok(Value::Array(items)) => items
                .into_iter()
                .filter(|v| !v.is_array() && !v.is_object())
                .collect(),
            // Publish rejects these; a malformed array is present but offers no value.
            _ => Vec::new(),
        };
        return Some(values);
    }
    match data_type.split('.').next().unwrap_or(data_type) {
        "Binary" => None,
        "Number" => Some(vec![number_value(value)]),
        _ => Some(vec![Value::String(value.to_string())]),
    }
}

fn number_value(text: &str) -> Value {
    text.trim()
        .parse::<f64>()
        .ok()
        .and_then(serde_json::Number::from_f64)
        .map(Value::Number)
        .unwrap_or_else(|| Value::String(text.to_string()))
}

/// The "total combination of values": per `$or` branch, the product over its keys of the
/// number of values times the key's depth; summed over the branches.
fn complexity(branches: &[Branch]) -> u64 {
    branches
        .iter()
        .map(|branch| {
            branch.iter().fold(1u64, |acc, leaf| {
                acc.saturating_mul((leaf.patterns.len() as u64).saturating_mul(leaf.depth))
            })
        })
        .fold(0u64, u64::saturating_add)
}

/// Whether `value` (the value of a `$or` key) makes it an OR: an array of at least two
/// objects, none keyed by an operator name. Otherwise `$or` is an ordinary key.
fn is_or_relationship(value: &Value) -> bool {
    let Value::Array(items) = value else {
        return false;
    };
    items.len() >= 2
        && items.iter().all(|item| match item {
            Value::Object(o) => o.keys().all(|k| !OPERATORS.contains(&k.as_str())),
            _ => false,
        })
}

/// Compiles an object (the policy or a nested property) under `prefix` into its branches.
fn compile_object(
    object: &Map<String, Value>,
    prefix: &[&str],
    nested: &mut bool,
) -> Result<Vec<Branch>> {
    let mut branches: Vec<Branch> = vec![Vec::new()];
    for (key, value) in object {
        let alternatives: Vec<Branch> = if key == "$or" && is_or_relationship(value) {
            let mut alternatives = Vec::new();
            for item in value.as_array().into_iter().flatten() {
                let Value::Object(sub) = item else {
                    unreachable!("checked by is_or_relationship")
                };
                if sub.is_empty() {
                    return Err(invalid("Empty objects are not allowed"));
                }
                alternatives.extend(compile_object(sub, prefix, nested)?);
            }
            alternatives
        } else {
            let mut path = prefix.to_vec();
            path.push(key);
            match value {
                Value::Object(sub) => {
                    *nested = true;
                    if sub.is_empty() {
                        return Err(invalid("Empty objects are not allowed"));
                    }
                    compile_object(sub, &path, nested)?
                }
                Value::Array(items) => vec![vec![Leaf {
                    path: path.join("."),
                    depth: path.len() as u64,
                    patterns: compile_values(items)?,
                }]],
                _ => return Err(invalid(format!("\"{key}\" must be an object or an array"))),
            }
        };
        // AND this key with what came before: every earlier branch with every alternative.
        if branches.len().saturating_mul(alternatives.len()) as u64 > MAX_COMBINATIONS {
            // Each branch adds at least one to the complexity: this can only be refused.
            return Err(invalid("Filter policy is too complex"));
        }
        branches = branches
            .iter()
            .flat_map(|b| {
                alternatives.iter().map(move |alt| {
                    let mut joined = b.clone();
                    joined.extend(alt.iter().cloned());
                    joined
                })
            })
            .collect();
    }
    Ok(branches)
}

fn compile_values(items: &[Value]) -> Result<Vec<Pattern>> {
    let mut patterns = Vec::with_capacity(items.len());
    for item in items {
        patterns.push(match item {
            Value::String(s) => Pattern::Exact(Literal::Str(s.clone())),
            Value::Number(n) => Pattern::Exact(Literal::Num(canon(n.as_f64().unwrap_or(0.0)))),
            Value::Bool(b) => Pattern::Exact(Literal::Bool(*b)),
            Value::Null => Pattern::Exact(Literal::Null),
            Value::Object(expression) => compile_expression(expression)?,
            Value::Array(_) => {
                return Err(invalid(
                    "Match value must be String, number, true, false, or null",
                ))
            }
        });
    }
    if patterns.is_empty() {
        return Err(invalid("Empty arrays are not allowed"));
    }
    Ok(patterns)
}

/// Compiles one operator object: the first key decides, its value is checked, then any
/// further key is refused (with the message AWS gives for that operator).
fn compile_expression(expression: &Map<String, Value>) -> Result<Pattern> {
    let mut entries = expression.iter();
    let Some((name, value)) = entries.next() else {
        return Err(invalid("Match expression name not found"));
    };
    let more = entries.next().is_some();
    let only_one = || invalid("Only one key allowed in match expression");
    let string_operand = |op: &str| match value {
        Value::String(s) => Ok(s.clone()),
        _ => Err(invalid(format!("{op} match pattern must be a string"))),
    };
    let pattern = match name.as_str() {
        "prefix" => Pattern::Prefix(string_operand("prefix")?),
        "suffix" => Pattern::Suffix(string_operand("suffix")?),
        "equals-ignore-case" => {
            Pattern::EqualsIgnoreCase(string_operand("equals-ignore-case")?.to_lowercase())
        }
        "exists" => match value {
            Value::Bool(b) => Pattern::Exists(*b),
            _ => {
                return Err(invalid(
                    "exists match pattern must be either true or false.",
                ))
            }
        },
        // AWS names the prefix operator when a cidr operand is not a string.
        "cidr" => Pattern::Cidr(parse_cidr(&string_operand("prefix")?)?),
        "numeric" => {
            let pattern = Pattern::Numeric(compile_numeric(value)?);
            if more {
                return Err(invalid("Too many elements in numeric expression"));
            }
            pattern
        }
        "anything-but" => {
            let pattern = Pattern::AnythingBut(compile_anything_but(value)?);
            if more {
                return Err(invalid("Too many elements in numeric expression"));
            }
            pattern
        }
        other => return Err(invalid(format!("Unrecognized match type {other}"))),
    };
    if more {
        return Err(only_one());
    }
    Ok(pattern)
}

fn numeric_operand(value: Option<&Value>, op: &str) -> Result<i128> {
    let name = if op == "=" { "equals" } else { op };
    match value {
        Some(Value::Number(n)) => {
            let x = n.as_f64().unwrap_or(f64::NAN);
            if !(-NUMERIC_LIMIT..=NUMERIC_LIMIT).contains(&x) {
                return Err(invalid("Value must be between -1.0E9 and 1.0E9, inclusive"));
            }
            Ok(canon(x))
        }
        _ => Err(invalid(format!("Value of {name} must be numeric"))),
    }
}

fn compile_numeric(value: &Value) -> Result<NumRange> {
    let Value::Array(terms) = value else {
        return Err(invalid("Value of numeric must be an array."));
    };
    let op = match terms.first() {
        Some(Value::String(op)) => op.as_str(),
        other => {
            return Err(invalid(format!(
                "Invalid member in numeric match: {}",
                token_text(other)
            )))
        }
    };
    let too_many = || invalid("Too many elements in numeric expression");
    match op {
        "=" => {
            let x = numeric_operand(terms.get(1), op)?;
            if terms.len() > 2 {
                return Err(too_many());
            }
            Ok(NumRange {
                lower: Some((x, true)),
                upper: Some((x, true)),
            })
        }
        "<" | "<=" => {
            let x = numeric_operand(terms.get(1), op)?;
            if terms.len() > 2 {
                return Err(too_many());
            }
            Ok(NumRange {
                lower: None,
                upper: Some((x, op == "<=")),
            })
        }
        ">" | ">=" => {
            let bottom = numeric_operand(terms.get(1), op)?;
            let lower = Some((bottom, op == ">="));
            if terms.len() == 2 {
                return Ok(NumRange { lower, upper: None });
            }
            let top_op = match terms.get(2) {
                Some(Value::String(s)) => s.as_str(),
                other => {
                    return Err(invalid(format!(
                        "Bad value in numeric range: {}",
                        token_text(other)
                    )))
                }
            };
            if top_op != "<" && top_op != "<=" {
                return Err(invalid(format!("Bad numeric range operator: {top_op}")));
            }
            let top = numeric_operand(terms.get(3), top_op)?;
            if terms.len() > 4 {
                return Err(invalid("Too many terms in numeric range expression"));
            }
            if bottom >= top {
                return Err(invalid("Bottom must be less than top"));
            }
            Ok(NumRange {
                lower,
                upper: Some((top, top_op == "<=")),
            })
        }
        other => Err(invalid(format!(
            "Unrecognized numeric range operator: {other}"
        ))),
    }
}

fn compile_anything_but(value: &Value) -> Result<AnythingBut> {
    let unsupported = || invalid("Inside anything but list, start|null|boolean is not supported.");
    match value {
        Value::Object(inner) => {
            let mut entries = inner.iter();
            let Some((op, operand)) = entries.next() else {
                return Err(invalid("Anything-But expression name not found"));
            };
            if op != "prefix" && op != "suffix" {
                return Err(invalid(format!("Unsupported anything-but pattern: {op}")));
            }
            let Value::String(text) = operand else {
                return Err(invalid(format!("{op} match pattern must be a string")));
            };
            if entries.next().is_some() {
                return Err(invalid("Only one key allowed in match expression"));
            }
            Ok(if op == "prefix" {
                AnythingBut::Prefix(text.clone())
            } else {
                AnythingBut::Suffix(text.clone())
            })
        }
        Value::String(s) => Ok(AnythingBut::Strings(vec![s.clone()])),
        Value::Number(_) => Ok(AnythingBut::Numbers(vec![numeric_operand(
            Some(value),
            "anything-but",
        )?])),
        Value::Array(items) => {
            let mut strings = Vec::new();
            let mut numbers = Vec::new();
            for item in items {
                match item {
                    Value::String(s) => strings.push(s.clone()),
                    Value::Number(_) => numbers.push(numeric_operand(Some(item), "anything-but")?),
                    _ => return Err(unsupported()),
                }
            }
            match (strings.is_empty(), numbers.is_empty()) {
                (false, true) => Ok(AnythingBut::Strings(strings)),
                (true, false) => Ok(AnythingBut::Numbers(numbers)),
                _ => Err(invalid(
                    "Inside anything but list, either all values are number or string, \
                     mixed type is not supported",
                )),
            }
        }
        _ => Err(invalid(
            "Value of anything-but must be an array or single string/number value.",
        )),
    }
}

fn parse_cidr(text: &str) -> Result<Cidr> {
    let parts: Vec<&str> = text.split('/').collect();
    let [address, bits] = parts[..] else {
        return Err(invalid("Malformed CIDR, one '/' required"));
    };
    let bits: i64 = bits
        .parse()
        .map_err(|_| invalid("Malformed CIDR, mask bits must be an integer"))?;
    if bits < 0 {
        return Err(invalid("Malformed CIDR, mask bits must not be negative"));
    }
    let ip: IpAddr = address
        .parse()
        .map_err(|_| invalid(format!("Nonstandard IP address: {address}")))?;
    match ip {
        IpAddr::V4(v4) => {
            if bits > 31 {
                return Err(invalid("IPv4 mask bits must be < 32"));
            }
            let mask = if bits == 0 {
                0
            } else {
                u32::MAX << (32 - bits)
            };
            Ok(Cidr::V4 {
                network: u32::from(v4) & mask,
                mask,
            })
        }
        IpAddr::V6(v6) => {
            if bits > 127 {
                return Err(invalid("IPv6 mask bits must be < 128"));
            }
            let mask = if bits == 0 {
                0
            } else {
                u128::MAX << (128 - bits)
            };
            Ok(Cidr::V6 {
                network: u128::from(v6) & mask,
                mask,
            })
        }
    }
}

impl Cidr {
    fn contains(&self, text: &str) -> bool {
        match (self, text.parse::<IpAddr>()) {
            (Cidr::V4 { network, mask }, Ok(IpAddr::V4(ip))) => u32::from(ip) & mask == *network,
            (Cidr::V6 { network, mask }, Ok(IpAddr::V6(ip))) => u128::from(ip) & mask == *network,
            _ => false,
        }
    }
}

impl NumRange {
    fn contains(&self, x: i128) -> bool {
        let above = match self.lower {
            None => true,
            Some((b, inclusive)) => x > b || (inclusive && x == b),
        };
        let below = match self.upper {
            None => true,
            Some((t, inclusive)) => x < t || (inclusive && x == t),
        };
        above && below
    }
}

fn number_of(value: &Value) -> Option<i128> {
    value.as_f64().filter(|_| value.is_number()).map(canon)
}

/// Whether one value of a key matches the field (`None`: absent; else its scalars).
fn pattern_matches(pattern: &Pattern, field: Option<&[&Value]>) -> bool {
    match (pattern, field) {
        (Pattern::Exists(want), field) => *want == field.is_some(),
        (_, None) => false,
        (pattern, Some(values)) => values.iter().any(|v| scalar_matches(pattern, v)),
    }
}

fn scalar_matches(pattern: &Pattern, value: &Value) -> bool {
    match pattern {
        Pattern::Exact(literal) => literal_matches(literal, value),
        Pattern::Prefix(p) => value.as_str().is_some_and(|s| s.starts_with(p.as_str())),
        Pattern::Suffix(p) => value.as_str().is_some_and(|s| s.ends_with(p.as_str())),
        Pattern::EqualsIgnoreCase(lower) => {
            value.as_str().is_some_and(|s| s.to_lowercase() == *lower)
        }
        Pattern::Numeric(range) => number_of(value).is_some_and(|x| range.contains(x)),
        Pattern::Cidr(cidr) => value.as_str().is_some_and(|s| cidr.contains(s)),
        Pattern::Exists(_) => true,
        Pattern::AnythingBut(but) => !match but {
            AnythingBut::Strings(set) => value.as_str().is_some_and(|s| set.iter().any(|x| x == s)),
            AnythingBut::Numbers(set) => number_of(value).is_some_and(|x| set.contains(&x)),
            AnythingBut::Prefix(p) => value.as_str().is_some_and(|s| s.starts_with(p.as_str())),
            AnythingBut::Suffix(p) => value.as_str().is_some_and(|s| s.ends_with(p.as_str())),
        },
    }
}

fn literal_matches(literal: &Literal, value: &Value) -> bool {
    match (literal, value) {
        (Literal::Str(a), Value::String(b)) => a == b,
        (Literal::Num(a), v) => number_of(v) == Some(*a),
        (Literal::Bool(a), Value::Bool(b)) => a == b,
        (Literal::Null, Value::Null) => true,
        _ => false,
    }
}
