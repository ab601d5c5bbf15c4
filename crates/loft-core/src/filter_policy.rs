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
//! `suffix`, `equals-ignore-case`, `anything-but` (a value, a list, or a `prefix` object:
//! SNS refuses `suffix` there), `numeric` (`=`, or a one- or two-sided range), `exists`, `cidr`.
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
//! `anything-but X` accepts exactly the scalars that the plain value `X` (or `prefix`)
//! rejects. Numbers compare numerically (`300` = `3.0e2`) with five decimal digits of
//! precision; strings compare case-sensitively except under `equals-ignore-case`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::net::IpAddr;

use serde_json::{Map, Value};

use crate::cidr::IpNet;
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
    /// An address range; a value matches when it is an address of the same family in it.
    Cidr(IpNet),
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
}

/// Bounds in canonical fixed point, each with whether it is inclusive.
#[derive(Debug, Clone, Copy, PartialEq)]
struct NumRange {
    lower: Option<(i128, bool)>,
    upper: Option<(i128, bool)>,
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
            // SNS takes one operator inside anything-but: `prefix` (SNS Developer Guide,
            // "String value matching", "Using a prefix with the anything-but operator";
            // AWS refuses `suffix`, `exists` and unknown names by name before looking at
            // the operand: recorded `test_validate_policy_nested_anything_but_operator`).
            if op != "prefix" {
                return Err(invalid(format!("Unsupported anything-but pattern: {op}")));
            }
            let Value::String(text) = operand else {
                return Err(invalid(format!("{op} match pattern must be a string")));
            };
            if entries.next().is_some() {
                return Err(invalid("Only one key allowed in match expression"));
            }
            Ok(AnythingBut::Prefix(text.clone()))
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

/// SNS's `cidr` operand: `ADDRESS/BITS` with one slash, an integer mask below the family's
/// width (SNS refuses /32 and /128), in SNS's wording; parsed and matched by
/// [`crate::cidr`].
fn parse_cidr(text: &str) -> Result<IpNet> {
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
        IpAddr::V4(_) if bits > 31 => Err(invalid("IPv4 mask bits must be < 32")),
        IpAddr::V6(_) if bits > 127 => Err(invalid("IPv6 mask bits must be < 128")),
        _ => crate::cidr::parse(&format!("{ip}/{bits}"))
            .map(|net| net.trunc())
            .ok_or_else(|| invalid(format!("Nonstandard IP address: {address}"))),
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
        Pattern::Cidr(net) => value
            .as_str()
            .and_then(|s| s.parse::<IpAddr>().ok())
            .is_some_and(|ip| net.contains(&ip)),
        Pattern::Exists(_) => true,
        Pattern::AnythingBut(but) => !match but {
            AnythingBut::Strings(set) => value.as_str().is_some_and(|s| set.iter().any(|x| x == s)),
            AnythingBut::Numbers(set) => number_of(value).is_some_and(|x| set.contains(&x)),
            AnythingBut::Prefix(p) => value.as_str().is_some_and(|s| s.starts_with(p.as_str())),
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    use FilterPolicyScope::{MessageAttributes as Attrs, MessageBody as Body};

    /// Attributes from `{"name": ["DataType", "value"], ...}`.
    fn attrs(text: &str) -> BTreeMap<String, (String, String)> {
        let map: BTreeMap<String, (String, String)> =
            serde_json::from_str(text).unwrap_or_else(|e| panic!("bad attributes {text}: {e}"));
        map
    }

    fn policy(text: &str, scope: FilterPolicyScope) -> FilterPolicy {
        FilterPolicy::parse(text, scope).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn attribute_matching_table() {
        // (policy, message attributes, expected)
        let cases: &[(&str, &str, bool)] = &[
            // exact strings, case-sensitive; String.Array matches on any element
            (
                r#"{"c":["rugby","tennis"]}"#,
                r#"{"c":["String","rugby"]}"#,
                true,
            ),
            (
                r#"{"c":["rugby","tennis"]}"#,
                r#"{"c":["String","tennis"]}"#,
                true,
            ),
            (
                r#"{"c":["rugby","tennis"]}"#,
                r#"{"c":["String","baseball"]}"#,
                false,
            ),
            (
                r#"{"c":["rugby","tennis"]}"#,
                r#"{"c":["String","Rugby"]}"#,
                false,
            ),
            (
                r#"{"c":["rugby","tennis"]}"#,
                r#"{"c":["String.Array","[\"rugby\",\"tennis\"]"]}"#,
                true,
            ),
            (
                r#"{"c":["rugby","tennis"]}"#,
                r#"{"c":["String.Array","[\"soccer\",\"tennis\"]"]}"#,
                true,
            ),
            (
                r#"{"c":["rugby","tennis"]}"#,
                r#"{"c":["String.Array","[\"baseball\"]"]}"#,
                false,
            ),
            (
                r#"{"c":["rugby","tennis"]}"#,
                r#"{"c":["String.Array","[]"]}"#,
                false,
            ),
            (r#"{"c":["rugby","tennis"]}"#, r#"{}"#, false),
            (
                r#"{"c":["rugby","tennis"]}"#,
                r#"{"other":["String","rugby"]}"#,
                false,
            ),
            (
                r#"{"c":["rugby"]}"#,
                r#"{"c":["String.custom","rugby"]}"#,
                true,
            ),
            // Binary attributes are ignored
            (r#"{"c":["rugby"]}"#, r#"{"c":["Binary","rugby"]}"#, false),
            // exact numbers compare numerically, and only with numbers
            (r#"{"p":[300]}"#, r#"{"p":["Number","300"]}"#, true),
            (r#"{"p":[300]}"#, r#"{"p":["Number","3.0e2"]}"#, true),
            (r#"{"p":[3.0e2]}"#, r#"{"p":["Number","300.000"]}"#, true),
            (r#"{"p":[300]}"#, r#"{"p":["Number.int","300"]}"#, true),
            (r#"{"p":[300]}"#, r#"{"p":["Number","301"]}"#, false),
            (r#"{"p":[300]}"#, r#"{"p":["String","300"]}"#, false),
            (r#"{"p":["300"]}"#, r#"{"p":["Number","300"]}"#, false),
            (
                r#"{"p":[300]}"#,
                r#"{"p":["String.Array","[1, 300]"]}"#,
                true,
            ),
            (r#"{"p":[0.00001]}"#, r#"{"p":["Number","0.00001"]}"#, true),
            (r#"{"p":[0.00001]}"#, r#"{"p":["Number","0.00002"]}"#, false),
            // null, true, false never come from attributes except inside String.Array
            (r#"{"c":[null]}"#, r#"{}"#, false),
            (r#"{"c":[null]}"#, r#"{"c":["String","null"]}"#, false),
            (
                r#"{"c":[true]}"#,
                r#"{"c":["String.Array","[true]"]}"#,
                true,
            ),
            (r#"{"c":[true]}"#, r#"{"c":["String","true"]}"#, false),
            // prefix / suffix
            (
                r#"{"c":[{"prefix":"bas"}]}"#,
                r#"{"c":["String","baseball"]}"#,
                true,
            ),
            (
                r#"{"c":[{"prefix":"bas"}]}"#,
                r#"{"c":["String","basketball"]}"#,
                true,
            ),
            (
                r#"{"c":[{"prefix":"bas"}]}"#,
                r#"{"c":["String","rugby"]}"#,
                false,
            ),
            (
                r#"{"c":[{"prefix":"bas"}]}"#,
                r#"{"c":["String.Array","[\"rugby\",\"bass\"]"]}"#,
                true,
            ),
            (
                r#"{"c":[{"prefix":"1"}]}"#,
                r#"{"c":["Number","10"]}"#,
                false,
            ),
            (r#"{"c":[{"prefix":"bas"}]}"#, r#"{}"#, false),
            (
                r#"{"c":[{"suffix":"ball"}]}"#,
                r#"{"c":["String","baseball"]}"#,
                true,
            ),
            (
                r#"{"c":[{"suffix":"ball"}]}"#,
                r#"{"c":["String","rugby"]}"#,
                false,
            ),
            (
                r#"{"c":[{"suffix":"ball"}]}"#,
                r#"{"c":["String","balls"]}"#,
                false,
            ),
            // equals-ignore-case
            (
                r#"{"c":[{"equals-ignore-case":"RuGbY"}]}"#,
                r#"{"c":["String","rugby"]}"#,
                true,
            ),
            (
                r#"{"c":[{"equals-ignore-case":"RuGbY"}]}"#,
                r#"{"c":["String","RUGBY"]}"#,
                true,
            ),
            (
                r#"{"c":[{"equals-ignore-case":"RuGbY"}]}"#,
                r#"{"c":["String","rugbys"]}"#,
                false,
            ),
            (
                r#"{"c":[{"equals-ignore-case":"ÉTÉ"}]}"#,
                r#"{"c":["String","été"]}"#,
                true,
            ),
            // anything-but: strings
            (
                r#"{"c":[{"anything-but":["rugby","tennis"]}]}"#,
                r#"{"c":["String","baseball"]}"#,
                true,
            ),
            (
                r#"{"c":[{"anything-but":["rugby","tennis"]}]}"#,
                r#"{"c":["String","rugby"]}"#,
                false,
            ),
            (
                r#"{"c":[{"anything-but":["rugby","tennis"]}]}"#,
                r#"{"c":["String.Array","[\"rugby\",\"baseball\"]"]}"#,
                true,
            ),
            (
                r#"{"c":[{"anything-but":["rugby","tennis"]}]}"#,
                r#"{"c":["String.Array","[\"rugby\",\"tennis\"]"]}"#,
                false,
            ),
            (
                r#"{"c":[{"anything-but":["rugby","tennis"]}]}"#,
                r#"{}"#,
                false,
            ),
            (
                r#"{"c":[{"anything-but":["rugby","tennis"]}]}"#,
                r#"{"c":["Binary","eA=="]}"#,
                false,
            ),
            (
                r#"{"c":[{"anything-but":"rugby"}]}"#,
                r#"{"c":["String","tennis"]}"#,
                true,
            ),
            (
                r#"{"c":[{"anything-but":"rugby"}]}"#,
                r#"{"c":["String","rugby"]}"#,
                false,
            ),
            (
                r#"{"c":[{"anything-but":"100"}]}"#,
                r#"{"c":["Number","100"]}"#,
                true,
            ),
            // anything-but: numbers
            (
                r#"{"p":[{"anything-but":[100,500]}]}"#,
                r#"{"p":["Number","101"]}"#,
                true,
            ),
            (
                r#"{"p":[{"anything-but":[100,500]}]}"#,
                r#"{"p":["Number","100.1"]}"#,
                true,
            ),
            (
                r#"{"p":[{"anything-but":[100,500]}]}"#,
                r#"{"p":["Number","100"]}"#,
                false,
            ),
            (
                r#"{"p":[{"anything-but":[100,500]}]}"#,
                r#"{"p":["Number","1e2"]}"#,
                false,
            ),
            (
                r#"{"p":[{"anything-but":[100,500]}]}"#,
                r#"{"p":["String.Array","[100, 50]"]}"#,
                true,
            ),
            (
                r#"{"p":[{"anything-but":[100,500]}]}"#,
                r#"{"p":["String.Array","[100, 500]"]}"#,
                false,
            ),
            (
                r#"{"p":[{"anything-but":100}]}"#,
                r#"{"p":["Number","100"]}"#,
                false,
            ),
            (
                r#"{"p":[{"anything-but":100}]}"#,
                r#"{"p":["String","100"]}"#,
                true,
            ),
            // anything-but: prefix
            (
                r#"{"e":[{"anything-but":{"prefix":"order-"}}]}"#,
                r#"{"e":["String","data-entry"]}"#,
                true,
            ),
            (
                r#"{"e":[{"anything-but":{"prefix":"order-"}}]}"#,
                r#"{"e":["String","order_number"]}"#,
                true,
            ),
            (
                r#"{"e":[{"anything-but":{"prefix":"order-"}}]}"#,
                r#"{"e":["String","order-cancelled"]}"#,
                false,
            ),
            (
                r#"{"e":[{"anything-but":{"prefix":"order-"}}]}"#,
                r#"{}"#,
                false,
            ),
            // numeric
            (
                r#"{"p":[{"numeric":["=",301.5]}]}"#,
                r#"{"p":["Number","301.5"]}"#,
                true,
            ),
            (
                r#"{"p":[{"numeric":["=",301.5]}]}"#,
                r#"{"p":["Number","3.015e2"]}"#,
                true,
            ),
            (
                r#"{"p":[{"numeric":["=",301.5]}]}"#,
                r#"{"p":["Number","301.6"]}"#,
                false,
            ),
            (
                r#"{"p":[{"numeric":["=",301.5]}]}"#,
                r#"{"p":["String","301.5"]}"#,
                false,
            ),
            (
                r#"{"p":[{"numeric":["<",0]}]}"#,
                r#"{"p":["Number","-0.5"]}"#,
                true,
            ),
            (
                r#"{"p":[{"numeric":["<",0]}]}"#,
                r#"{"p":["Number","0"]}"#,
                false,
            ),
            (
                r#"{"p":[{"numeric":["<=",0]}]}"#,
                r#"{"p":["Number","0"]}"#,
                true,
            ),
            (
                r#"{"p":[{"numeric":[">",0,"<=",150]}]}"#,
                r#"{"p":["Number","150"]}"#,
                true,
            ),
            (
                r#"{"p":[{"numeric":[">",0,"<=",150]}]}"#,
                r#"{"p":["Number","0.00001"]}"#,
                true,
            ),
            (
                r#"{"p":[{"numeric":[">",0,"<=",150]}]}"#,
                r#"{"p":["Number","0"]}"#,
                false,
            ),
            (
                r#"{"p":[{"numeric":[">",0,"<=",150]}]}"#,
                r#"{"p":["Number","150.00001"]}"#,
                false,
            ),
            (
                r#"{"p":[{"numeric":[">=",0,"<",10]}]}"#,
                r#"{"p":["Number","0"]}"#,
                true,
            ),
            (
                r#"{"p":[{"numeric":[">=",0,"<",10]}]}"#,
                r#"{"p":["Number","10"]}"#,
                false,
            ),
            (
                r#"{"p":[{"numeric":[">=",0,"<",10]}]}"#,
                r#"{"p":["String.Array","[20, 5]"]}"#,
                true,
            ),
            (
                r#"{"p":[{"numeric":[">=",0,"<",10]}]}"#,
                r#"{"p":["String.Array","[\"5\"]"]}"#,
                false,
            ),
            (r#"{"p":[{"numeric":[">",100]}]}"#, r#"{}"#, false),
            // exists
            (
                r#"{"s":[{"exists":true}]}"#,
                r#"{"s":["String","fans"]}"#,
                true,
            ),
            (
                r#"{"s":[{"exists":true}]}"#,
                r#"{"s":["Number","1"]}"#,
                true,
            ),
            (
                r#"{"s":[{"exists":true}]}"#,
                r#"{"s":["String.Array","[]"]}"#,
                true,
            ),
            (
                r#"{"s":[{"exists":true}]}"#,
                r#"{"x":["String","fans"]}"#,
                false,
            ),
            (
                r#"{"s":[{"exists":true}]}"#,
                r#"{"s":["Binary","eA=="]}"#,
                false,
            ),
            (
                r#"{"s":[{"exists":false}]}"#,
                r#"{"x":["String","fans"]}"#,
                true,
            ),
            (r#"{"s":[{"exists":false}]}"#, r#"{}"#, true),
            (
                r#"{"s":[{"exists":false}]}"#,
                r#"{"s":["Binary","eA=="]}"#,
                true,
            ),
            (
                r#"{"s":[{"exists":false}]}"#,
                r#"{"s":["String","fans"]}"#,
                false,
            ),
            (
                r#"{"s":["x",{"exists":false}]}"#,
                r#"{"s":["String","x"]}"#,
                true,
            ),
            (
                r#"{"s":["x",{"exists":false}]}"#,
                r#"{"s":["String","y"]}"#,
                false,
            ),
            // cidr, IPv4 and IPv6
            (
                r#"{"ip":[{"cidr":"10.0.0.0/24"}]}"#,
                r#"{"ip":["String","10.0.0.0"]}"#,
                true,
            ),
            (
                r#"{"ip":[{"cidr":"10.0.0.0/24"}]}"#,
                r#"{"ip":["String","10.0.0.255"]}"#,
                true,
            ),
            (
                r#"{"ip":[{"cidr":"10.0.0.0/24"}]}"#,
                r#"{"ip":["String","10.1.1.0"]}"#,
                false,
            ),
            (
                r#"{"ip":[{"cidr":"10.0.0.0/24"}]}"#,
                r#"{"ip":["String","not an ip"]}"#,
                false,
            ),
            (
                r#"{"ip":[{"cidr":"10.0.0.0/24"}]}"#,
                r#"{"ip":["String","::ffff:a00:1"]}"#,
                false,
            ),
            (
                r#"{"ip":[{"cidr":"10.0.0.7/24"}]}"#,
                r#"{"ip":["String","10.0.0.1"]}"#,
                true,
            ),
            (
                r#"{"ip":[{"cidr":"0.0.0.0/0"}]}"#,
                r#"{"ip":["String","192.0.2.1"]}"#,
                true,
            ),
            (
                r#"{"ip":[{"cidr":"2001:db8::/32"}]}"#,
                r#"{"ip":["String","2001:db8::1"]}"#,
                true,
            ),
            (
                r#"{"ip":[{"cidr":"2001:db8::/32"}]}"#,
                r#"{"ip":["String","2001:db9::1"]}"#,
                false,
            ),
            (
                r#"{"ip":[{"cidr":"2001:db8::/32"}]}"#,
                r#"{"ip":["String","10.0.0.1"]}"#,
                false,
            ),
            // AND across keys, OR within a key
            (
                r#"{"c":["rugby"],"p":[{"numeric":[">",100]}]}"#,
                r#"{"c":["String","rugby"],"p":["Number","101"]}"#,
                true,
            ),
            (
                r#"{"c":["rugby"],"p":[{"numeric":[">",100]}]}"#,
                r#"{"c":["String","rugby"],"p":["Number","99"]}"#,
                false,
            ),
            (
                r#"{"c":["rugby"],"p":[{"numeric":[">",100]}]}"#,
                r#"{"c":["String","rugby"]}"#,
                false,
            ),
            (
                r#"{"c":["rugby",{"prefix":"foot"}]}"#,
                r#"{"c":["String","football"]}"#,
                true,
            ),
            // $or
            (
                r#"{"$or":[{"a":["x"]},{"b":["y"]}]}"#,
                r#"{"a":["String","x"]}"#,
                true,
            ),
            (
                r#"{"$or":[{"a":["x"]},{"b":["y"]}]}"#,
                r#"{"b":["String","y"]}"#,
                true,
            ),
            (
                r#"{"$or":[{"a":["x"]},{"b":["y"]}]}"#,
                r#"{"a":["String","y"],"b":["String","x"]}"#,
                false,
            ),
            (r#"{"$or":[{"a":["x"]},{"b":["y"]}]}"#, r#"{}"#, false),
            (
                r#"{"src":["cw"],"$or":[{"m":["cpu"]},{"t":["T"],"n":["ec2"]}]}"#,
                r#"{"src":["String","cw"],"m":["String","cpu"]}"#,
                true,
            ),
            (
                r#"{"src":["cw"],"$or":[{"m":["cpu"]},{"t":["T"],"n":["ec2"]}]}"#,
                r#"{"src":["String","cw"],"t":["String","T"],"n":["String","ec2"]}"#,
                true,
            ),
            (
                r#"{"src":["cw"],"$or":[{"m":["cpu"]},{"t":["T"],"n":["ec2"]}]}"#,
                r#"{"src":["String","cw"],"t":["String","T"]}"#,
                false,
            ),
            (
                r#"{"src":["cw"],"$or":[{"m":["cpu"]},{"t":["T"],"n":["ec2"]}]}"#,
                r#"{"m":["String","cpu"]}"#,
                false,
            ),
            (
                r#"{"$or":[{"a":["x"]},{"$or":[{"b":["y"]},{"c":["z"]}]}]}"#,
                r#"{"c":["String","z"]}"#,
                true,
            ),
            // "$or" that is no OR relationship is an ordinary attribute name
            (r#"{"$or":["a","b"]}"#, r#"{"$or":["String","b"]}"#, true),
            (
                r#"{"$or":[{"prefix":"x"},{"suffix":"y"}]}"#,
                r#"{"$or":["String","xa"]}"#,
                true,
            ),
            (
                r#"{"$or":[{"prefix":"x"},{"suffix":"y"}]}"#,
                r#"{"$or":["String","ax"]}"#,
                false,
            ),
            // a malformed String.Array is present but offers no value
            (
                r#"{"c":[{"exists":true}]}"#,
                r#"{"c":["String.Array","not json"]}"#,
                true,
            ),
            (
                r#"{"c":["not json"]}"#,
                r#"{"c":["String.Array","not json"]}"#,
                false,
            ),
            // the empty policy matches everything
            (r#"{}"#, r#"{}"#, true),
            // a dotted name is just a name in the attributes scope
            (r#"{"a.b":["x"]}"#, r#"{"a.b":["String","x"]}"#, true),
        ];
        for (policy_text, message, expected) in cases {
            let p = policy(policy_text, Attrs);
            assert_eq!(
                p.matches_attributes(&attrs(message)),
                *expected,
                "policy {policy_text} on attributes {message}"
            );
        }
    }

    #[test]
    fn body_matching_table() {
        // (policy, message body, expected)
        let cases: &[(&str, &str, bool)] = &[
            (r#"{"c":["rugby","tennis"]}"#, r#"{"c":"rugby"}"#, true),
            (r#"{"c":["rugby","tennis"]}"#, r#"{"c":"baseball"}"#, false),
            (
                r#"{"c":["rugby","tennis"]}"#,
                r#"{"c":["baseball","tennis"]}"#,
                true,
            ),
            (r#"{"c":["rugby","tennis"]}"#, r#"{"c":[["rugby"]]}"#, true),
            (r#"{"c":["rugby","tennis"]}"#, r#"{}"#, false),
            // only a JSON object can match
            (r#"{"c":[{"exists":false}]}"#, r#"["c"]"#, false),
            (r#"{"c":[{"exists":false}]}"#, r#""rugby""#, false),
            // nested properties, reached through objects, arrays and dotted names alike
            (
                r#"{"object":{"key":[{"prefix":"auto-"}]}}"#,
                r#"{"object":{"key":"auto-test"}}"#,
                true,
            ),
            (
                r#"{"object":{"key":[{"prefix":"auto-"}]}}"#,
                r#"{"object":{"key":"home"}}"#,
                false,
            ),
            (
                r#"{"object":{"key":[{"prefix":"auto-"}]}}"#,
                r#"{"object.key":"auto-test"}"#,
                true,
            ),
            (
                r#"{"object":{"key":[{"prefix":"auto-"}]}}"#,
                r#"{"object":[{"key":"home"},{"key":"auto-1"}]}"#,
                true,
            ),
            (
                r#"{"object":{"key":[{"prefix":"auto-"}]}}"#,
                r#"{"key":"auto-test"}"#,
                false,
            ),
            (
                r#"{"object":{"key":[{"prefix":"auto-"}]}}"#,
                r#"{"object":"auto-test"}"#,
                false,
            ),
            (
                r#"{"object.nested":["v"]}"#,
                r#"{"object":{"nested":"v"}}"#,
                true,
            ),
            (
                r#"{"object.nested":["v"]}"#,
                r#"{"object.nested":"v"}"#,
                true,
            ),
            (r#"{"a":{"b":{"c":["v"]}}}"#, r#"{"a.b":{"c":"v"}}"#, true),
            (r#"{"a":{"b":{"c":["v"]}}}"#, r#"{"a":{"b.c":"v"}}"#, true),
            (
                r#"{"a":{"b":{"c":["v"]}}}"#,
                r#"{"a":{"b":{"c":"w"}}}"#,
                false,
            ),
            (
                r#"{"Records":{"s3":{"object":{"key":[{"prefix":"auto-"}]}}}}"#,
                r#"{"Records":[{"s3":{"object":[[{"key":"auto-insurance.xml"}]]}},{"s3":{"object":{"key":"home.xml"}}}]}"#,
                true,
            ),
            // numbers, booleans, null
            (r#"{"p":[300]}"#, r#"{"p":3.0e2}"#, true),
            (r#"{"p":[300]}"#, r#"{"p":"300"}"#, false),
            (r#"{"p":["300"]}"#, r#"{"p":300}"#, false),
            (r#"{"f":[true]}"#, r#"{"f":true}"#, true),
            (r#"{"f":[true]}"#, r#"{"f":"true"}"#, false),
            (r#"{"f":[false]}"#, r#"{"f":true}"#, false),
            (r#"{"n":[null]}"#, r#"{"n":null}"#, true),
            (r#"{"n":[null]}"#, r#"{}"#, false),
            (r#"{"n":[null]}"#, r#"{"n":"null"}"#, false),
            // operators on body values
            (
                r#"{"c":[{"suffix":"ball"}]}"#,
                r#"{"c":["rugby","football"]}"#,
                true,
            ),
            (
                r#"{"c":[{"equals-ignore-case":"RUGBY"}]}"#,
                r#"{"c":"Rugby"}"#,
                true,
            ),
            (
                r#"{"c":[{"anything-but":["rugby"]}]}"#,
                r#"{"c":["rugby","tennis"]}"#,
                true,
            ),
            (
                r#"{"c":[{"anything-but":["rugby"]}]}"#,
                r#"{"c":["rugby"]}"#,
                false,
            ),
            (
                r#"{"c":[{"anything-but":["rugby"]}]}"#,
                r#"{"d":"tennis"}"#,
                false,
            ),
            (
                r#"{"c":[{"anything-but":["rugby"]}]}"#,
                r#"{"c":[]}"#,
                false,
            ),
            (r#"{"p":[{"anything-but":[100]}]}"#, r#"{"p":1e2}"#, false),
            (
                r#"{"p":[{"anything-but":[100]}]}"#,
                r#"{"p":[100,7]}"#,
                true,
            ),
            (r#"{"p":[{"numeric":[">",10]}]}"#, r#"{"p":[1,20]}"#, true),
            (r#"{"p":[{"numeric":[">",10]}]}"#, r#"{"p":[1,2]}"#, false),
            (r#"{"p":[{"numeric":[">",10]}]}"#, r#"{"p":"20"}"#, false),
            (
                r#"{"ip":[{"cidr":"10.0.0.0/8"}]}"#,
                r#"{"ip":"10.20.30.40"}"#,
                true,
            ),
            (
                r#"{"ip":[{"cidr":"10.0.0.0/8"}]}"#,
                r#"{"ip":"11.0.0.1"}"#,
                false,
            ),
            // exists looks at leaves: null is present, [] and {} are not
            (r#"{"s":[{"exists":true}]}"#, r#"{"s":"fans"}"#, true),
            (r#"{"s":[{"exists":true}]}"#, r#"{"s":null}"#, true),
            (r#"{"s":[{"exists":true}]}"#, r#"{"s":[]}"#, false),
            (r#"{"s":[{"exists":true}]}"#, r#"{"s":{"x":1}}"#, false),
            (r#"{"s":[{"exists":false}]}"#, r#"{}"#, true),
            (r#"{"s":[{"exists":false}]}"#, r#"{"s":[]}"#, true),
            (r#"{"s":[{"exists":false}]}"#, r#"{"s":"fans"}"#, false),
            (
                r#"{"a":{"s":[{"exists":false}]}}"#,
                r#"{"a":{"t":1}}"#,
                true,
            ),
            (
                r#"{"a":{"s":[{"exists":false}]}}"#,
                r#"{"a":{"s":1}}"#,
                false,
            ),
            // $or at the top and nested
            (
                r#"{"$or":[{"a":["x"]},{"b":{"c":["y"]}}]}"#,
                r#"{"b":{"c":"y"}}"#,
                true,
            ),
            (
                r#"{"$or":[{"a":["x"]},{"b":{"c":["y"]}}]}"#,
                r#"{"b":{"c":"x"}}"#,
                false,
            ),
            (
                r#"{"a":{"$or":[{"b":["1"]},{"c":["2"]}]}}"#,
                r#"{"a":{"c":"2"}}"#,
                true,
            ),
            (
                r#"{"a":{"$or":[{"b":["1"]},{"c":["2"]}]}}"#,
                r#"{"a":{"b":"2"}}"#,
                false,
            ),
            (
                r#"{"a":{"$or":[{"b":["1"]},{"c":["2"]}]}}"#,
                r#"{"c":"2"}"#,
                false,
            ),
            (
                r#"{"k":["v"],"a":{"$or":[{"b":["1"]},{"c":["2"]}]}}"#,
                r#"{"k":"v","a":{"b":"1"}}"#,
                true,
            ),
            (
                r#"{"k":["v"],"a":{"$or":[{"b":["1"]},{"c":["2"]}]}}"#,
                r#"{"a":{"b":"1"}}"#,
                false,
            ),
            (r#"{}"#, r#"{"anything":1}"#, true),
        ];
        for (policy_text, body, expected) in cases {
            let p = policy(policy_text, Body);
            let value: Value = serde_json::from_str(body).unwrap();
            assert_eq!(
                p.matches_body(&value),
                *expected,
                "policy {policy_text} on body {body}"
            );
            assert_eq!(p.matches_body_text(body), *expected, "text of {body}");
        }
    }

    #[test]
    fn body_that_is_not_json_never_matches() {
        let p = policy(r#"{"c":[{"exists":false}]}"#, Body);
        assert!(p.matches_body_text("{}"));
        assert!(!p.matches_body_text("not json"));
        assert!(!p.matches_body_text(""));
    }

    #[test]
    fn matches_message_follows_the_scope() {
        let by_attr = policy(r#"{"c":["x"]}"#, Attrs);
        let by_body = policy(r#"{"c":["x"]}"#, Body);
        let a = attrs(r#"{"c":["String","x"]}"#);
        assert_eq!(by_attr.scope(), Attrs);
        assert!(by_attr.matches_message(&a, r#"{"c":"y"}"#));
        assert!(!by_body.matches_message(&a, r#"{"c":"y"}"#));
        assert!(by_body.matches_message(&BTreeMap::new(), r#"{"c":"x"}"#));
    }

    fn many(n: usize) -> String {
        let values: Vec<String> = (0..n).map(|i| format!("\"v{i}\"")).collect();
        format!("[{}]", values.join(","))
    }

    #[test]
    fn validation_errors() {
        let fp = |s: &str| format!("Invalid parameter: FilterPolicy: {s}");
        let nested_attr = "Invalid parameter: Filter policy scope MessageAttributes does not \
                           support nested filter policy"
            .to_string();
        let mut cases: Vec<(String, FilterPolicyScope, String)> = vec![];
        let mut add = |p: &str, scope, msg: String| cases.push((p.to_string(), scope, msg));

        // the document
        add("[]", Attrs, fp("Filter is not an object"));
        add(r#""x""#, Body, fp("Filter is not an object"));
        add(
            r#"{"key_a":"value_one"}"#,
            Attrs,
            fp(r#""key_a" must be an object or an array"#),
        );
        add(
            r#"{"key":5}"#,
            Body,
            fp(r#""key" must be an object or an array"#),
        );
        add(
            r#"{"key":{"suffix":"value"}}"#,
            Attrs,
            fp(r#""suffix" must be an object or an array"#),
        );
        add(
            r#"{"key":{"not-an-operator":"value"}}"#,
            Body,
            fp(r#""not-an-operator" must be an object or an array"#),
        );
        add(r#"{"key":[]}"#, Attrs, fp("Empty arrays are not allowed"));
        add(r#"{"key":{}}"#, Body, fp("Empty objects are not allowed"));
        add(
            r#"{"$or":[{"a":["x"]},{}]}"#,
            Attrs,
            fp("Empty objects are not allowed"),
        );
        add(
            r#"{"key":[["value"]]}"#,
            Attrs,
            fp("Match value must be String, number, true, false, or null"),
        );
        add(
            r#"{"key":[{}]}"#,
            Attrs,
            fp("Match expression name not found"),
        );
        add(
            r#"{"key":[{"wrong-operator":true}]}"#,
            Attrs,
            fp("Unrecognized match type wrong-operator"),
        );
        add(
            r#"{"key":[{"wildcard":"a*"}]}"#,
            Attrs,
            fp("Unrecognized match type wildcard"),
        );
        add(
            r#"{"$or":[{"a":["x"]}]}"#,
            Attrs,
            fp("Unrecognized match type a"),
        );
        add(
            r#"{"key":[{"suffix":"value","prefix":"value2"}]}"#,
            Attrs,
            fp("Only one key allowed in match expression"),
        );
        // string operators
        for op in ["prefix", "suffix", "equals-ignore-case"] {
            let msg = fp(&format!("{op} match pattern must be a string"));
            for operand in ["100", "null", "[]", r#"["a","b"]"#, "{}", "true"] {
                add(
                    &format!(r#"{{"key":[{{"{op}":{operand}}}]}}"#),
                    Attrs,
                    msg.clone(),
                );
            }
        }
        add(
            r#"{"key":[{"suffix":100,"prefix":"x"}]}"#,
            Attrs,
            fp("suffix match pattern must be a string"),
        );
        // numeric
        add(
            r#"{"key":[{"numeric":">"}]}"#,
            Attrs,
            fp("Value of numeric must be an array."),
        );
        add(
            r#"{"key":[{"numeric":[]}]}"#,
            Attrs,
            fp("Invalid member in numeric match: ]"),
        );
        add(
            r#"{"key":[{"numeric":["operator"]}]}"#,
            Attrs,
            fp("Unrecognized numeric range operator: operator"),
        );
        add(
            r#"{"key":[{"numeric":[1,"<="]}]}"#,
            Attrs,
            fp("Invalid member in numeric match: 1"),
        );
        add(
            r#"{"key":[{"numeric":["=","000"]}]}"#,
            Attrs,
            fp("Value of equals must be numeric"),
        );
        add(
            r#"{"key":[{"numeric":["="]}]}"#,
            Attrs,
            fp("Value of equals must be numeric"),
        );
        add(
            r#"{"key":[{"numeric":["=",1,2]}]}"#,
            Attrs,
            fp("Too many elements in numeric expression"),
        );
        add(
            r#"{"key":[{"numeric":[">="]}]}"#,
            Attrs,
            fp("Value of >= must be numeric"),
        );
        add(
            r#"{"key":[{"numeric":["<",100,">",10]}]}"#,
            Attrs,
            fp("Too many elements in numeric expression"),
        );
        add(
            r#"{"key":[{"numeric":["<=","x"]}]}"#,
            Attrs,
            fp("Value of <= must be numeric"),
        );
        add(
            r#"{"key":[{"numeric":[">=",1,">",2]}]}"#,
            Attrs,
            fp("Bad numeric range operator: >"),
        );
        add(
            r#"{"key":[{"numeric":[">",3,"<",1]}]}"#,
            Attrs,
            fp("Bottom must be less than top"),
        );
        add(
            r#"{"key":[{"numeric":[">",3,"<",3]}]}"#,
            Attrs,
            fp("Bottom must be less than top"),
        );
        add(
            r#"{"key":[{"numeric":[">",20,"<="]}]}"#,
            Attrs,
            fp("Value of <= must be numeric"),
        );
        add(
            r#"{"key":[{"numeric":[">",20,30]}]}"#,
            Attrs,
            fp("Bad value in numeric range: 30"),
        );
        add(
            r#"{"key":[{"numeric":[">",20,"test"]}]}"#,
            Attrs,
            fp("Bad numeric range operator: test"),
        );
        add(
            r#"{"key":[{"numeric":[">","20","<","30"]}]}"#,
            Attrs,
            fp("Value of > must be numeric"),
        );
        add(
            r#"{"key":[{"numeric":[">",20,"<","30"]}]}"#,
            Attrs,
            fp("Value of < must be numeric"),
        );
        add(
            r#"{"key":[{"numeric":[">",20,"<",30,"<",50]}]}"#,
            Attrs,
            fp("Too many terms in numeric range expression"),
        );
        add(
            r#"{"key":[{"numeric":[">",0],"x":1}]}"#,
            Attrs,
            fp("Too many elements in numeric expression"),
        );
        let range = fp("Value must be between -1.0E9 and 1.0E9, inclusive");
        add(
            r#"{"key":[{"numeric":["<",1000000001]}]}"#,
            Attrs,
            range.clone(),
        );
        add(r#"{"key":[{"numeric":["=",-2e9]}]}"#, Attrs, range.clone());
        add(
            r#"{"key":[{"numeric":[">",0,"<",1e10]}]}"#,
            Attrs,
            range.clone(),
        );
        // exists
        add(
            r#"{"key":[{"exists":null}]}"#,
            Attrs,
            fp("exists match pattern must be either true or false."),
        );
        add(
            r#"{"key":[{"exists":"no"}]}"#,
            Attrs,
            fp("exists match pattern must be either true or false."),
        );
        add(
            r#"{"key":[{"exists":true,"x":1}]}"#,
            Attrs,
            fp("Only one key allowed in match expression"),
        );
        // anything-but
        add(
            r#"{"key":[{"anything-but":{"wrong-operator":null}}]}"#,
            Attrs,
            fp("Unsupported anything-but pattern: wrong-operator"),
        );
        add(
            r#"{"key":[{"anything-but":{"exists":false}}]}"#,
            Attrs,
            fp("Unsupported anything-but pattern: exists"),
        );
        add(
            r#"{"key":[{"anything-but":{"prefix":false}}]}"#,
            Attrs,
            fp("prefix match pattern must be a string"),
        );
        // Only `prefix` inside anything-but; the name is refused before its operand is
        // looked at, in either scope and whatever the operand (recorded: `suffix`,
        // `exists`, `wrong-operator`).
        for (op, operand) in [
            ("suffix", "\"test\""),
            ("suffix", "1"),
            ("suffix", "null"),
            ("suffix", "[\".png\"]"),
            ("exists", "true"),
            ("equals-ignore-case", "\"a\""),
            ("numeric", "[\">\",1]"),
            ("cidr", "\"10.0.0.0/8\""),
            ("wildcard", "\"a*\""),
            ("Prefix", "\"a\""),
        ] {
            for scope in [Attrs, Body] {
                add(
                    &format!(r#"{{"key":[{{"anything-but":{{"{op}":{operand}}}}}]}}"#),
                    scope,
                    fp(&format!("Unsupported anything-but pattern: {op}")),
                );
            }
        }
        // Keys are read in order: an unsupported one first is named, a `prefix` first
        // leaves the second key to be refused as a second key.
        add(
            r#"{"key":[{"anything-but":{"suffix":"b","prefix":"a"}}]}"#,
            Attrs,
            fp("Unsupported anything-but pattern: suffix"),
        );
        add(
            r#"{"key":[{"anything-but":{}}]}"#,
            Attrs,
            fp("Anything-But expression name not found"),
        );
        add(
            r#"{"key":[{"anything-but":{"prefix":"a","suffix":"b"}}]}"#,
            Attrs,
            fp("Only one key allowed in match expression"),
        );
        add(
            r#"{"key":[{"anything-but":[true]}]}"#,
            Attrs,
            fp("Inside anything but list, start|null|boolean is not supported."),
        );
        add(
            r#"{"key":[{"anything-but":[null]}]}"#,
            Attrs,
            fp("Inside anything but list, start|null|boolean is not supported."),
        );
        add(
            r#"{"key":[{"anything-but":[["a"]]}]}"#,
            Attrs,
            fp("Inside anything but list, start|null|boolean is not supported."),
        );
        let mixed = fp("Inside anything but list, either all values are number or string, mixed type is not supported");
        add(
            r#"{"key":[{"anything-but":["a",1]}]}"#,
            Attrs,
            mixed.clone(),
        );
        add(r#"{"key":[{"anything-but":[]}]}"#, Attrs, mixed.clone());
        add(
            r#"{"key":[{"anything-but":true}]}"#,
            Attrs,
            fp("Value of anything-but must be an array or single string/number value."),
        );
        add(
            r#"{"key":[{"anything-but":null}]}"#,
            Attrs,
            fp("Value of anything-but must be an array or single string/number value."),
        );
        add(r#"{"key":[{"anything-but":[2e9]}]}"#, Attrs, range.clone());
        add(
            r#"{"key":[{"anything-but":"a","x":1}]}"#,
            Attrs,
            fp("Too many elements in numeric expression"),
        );
        // cidr
        add(
            r#"{"key":[{"cidr":1}]}"#,
            Attrs,
            fp("prefix match pattern must be a string"),
        );
        add(
            r#"{"key":[{"cidr":"10.0.0.0"}]}"#,
            Attrs,
            fp("Malformed CIDR, one '/' required"),
        );
        add(
            r#"{"key":[{"cidr":"10.0.0.0/8/8"}]}"#,
            Attrs,
            fp("Malformed CIDR, one '/' required"),
        );
        add(
            r#"{"key":[{"cidr":"10.0.0.0/x"}]}"#,
            Attrs,
            fp("Malformed CIDR, mask bits must be an integer"),
        );
        add(
            r#"{"key":[{"cidr":"10.0.0.0/-1"}]}"#,
            Attrs,
            fp("Malformed CIDR, mask bits must not be negative"),
        );
        add(
            r#"{"key":[{"cidr":"10.0.0/24"}]}"#,
            Attrs,
            fp("Nonstandard IP address: 10.0.0"),
        );
        add(
            r#"{"key":[{"cidr":"example.com/24"}]}"#,
            Attrs,
            fp("Nonstandard IP address: example.com"),
        );
        add(
            r#"{"key":[{"cidr":"10.0.0.0/32"}]}"#,
            Attrs,
            fp("IPv4 mask bits must be < 32"),
        );
        add(
            r#"{"key":[{"cidr":"::/128"}]}"#,
            Attrs,
            fp("IPv6 mask bits must be < 128"),
        );
        add(
            r#"{"key":[{"cidr":"10.0.0.0/8","x":1}]}"#,
            Attrs,
            fp("Only one key allowed in match expression"),
        );
        // nesting is for the body only
        add(r#"{"a":{"b":["x"]}}"#, Attrs, nested_attr.clone());
        add(
            r#"{"$or":[{"a":["x"]},{"b":{"c":["y"]}}]}"#,
            Attrs,
            nested_attr.clone(),
        );
        // at most five keys; in a nested policy only leaf keys count
        add(
            r#"{"a":[1],"b":[1],"c":[1],"d":[1],"e":[1],"f":[1]}"#,
            Attrs,
            fp("Filter policy can not have more than 5 keys"),
        );
        add(
            r#"{"a":{"b":[1],"c":[1]},"d":[1],"e":[1],"f":{"g":{"h":[1]}},"i":[1]}"#,
            Body,
            fp("Filter policy can not have more than 5 keys"),
        );
        add(
            r#"{"x":[1],"$or":[{"a":[1],"b":[1],"c":[1],"d":[1],"e":[1]},{"f":[1]}]}"#,
            Attrs,
            fp("Filter policy can not have more than 5 keys"),
        );
        // complexity: product per branch (values × depth), summed over $or branches
        let too_complex = fp("Filter policy is too complex");
        add(
            &format!(r#"{{"a":{}}}"#, many(151)),
            Attrs,
            too_complex.clone(),
        );
        add(
            &format!(r#"{{"a":{},"b":{}}}"#, many(10), many(16)),
            Attrs,
            too_complex.clone(),
        );
        add(
            &format!(r#"{{"a":{{"b":{}}}}}"#, many(76)),
            Body,
            too_complex.clone(),
        );
        add(
            &format!(r#"{{"$or":[{{"a":{}}},{{"b":{}}}]}}"#, many(100), many(51)),
            Attrs,
            too_complex.clone(),
        );
        add(
            &format!(
                r#"{{"a":{},"$or":[{{"b":{}}},{{"c":{}}}]}}"#,
                many(2),
                many(40),
                many(36)
            ),
            Attrs,
            too_complex.clone(),
        );
        // size
        let big = format!(r#"{{"a":["{}"]}}"#, "x".repeat(MAX_POLICY_BYTES));
        add(
            &big,
            Attrs,
            fp(&format!(
                "Filter policy is too large: {} bytes, at most 262144 allowed",
                big.len()
            )),
        );

        for (text, scope, expected) in &cases {
            match FilterPolicy::parse(text, *scope) {
                Ok(_) => panic!("{} accepted; expected {expected}", abbreviate(text)),
                Err(e) => {
                    assert_eq!(e.code, ErrorCode::InvalidParameter, "{}", abbreviate(text));
                    assert_eq!(&e.message, expected, "{}", abbreviate(text));
                }
            }
        }
    }

    fn abbreviate(text: &str) -> String {
        text.chars().take(120).collect()
    }

    #[test]
    fn invalid_json_is_reported_as_aws_does() {
        for text in ["{invalidjson}", "", "{\"a\":[1]", "{\"a\":[1]} x"] {
            let e = FilterPolicy::parse(text, Attrs).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidParameter);
            assert!(
                e.message
                    .starts_with("Invalid parameter: FilterPolicy: failed to parse JSON."),
                "{text}: {}",
                e.message
            );
        }
    }

    #[test]
    fn limits_that_are_reached_but_not_passed_are_accepted() {
        let ok: Vec<(String, FilterPolicyScope)> = vec![
            (r#"{"a":[1],"b":[1],"c":[1],"d":[1],"e":[1]}"#.into(), Attrs),
            // "finding" holds an object, so only its leaves count: 5 keys
            (
                r#"{"state":["SUCCESS"],"severity":[{"exists":true}],"finding":{"control":[{"exists":true}],"region":[{"exists":true}],"account":[{"exists":true}]}}"#.into(),
                Body,
            ),
            (format!(r#"{{"a":{}}}"#, many(150)), Attrs),
            (format!(r#"{{"a":{},"b":{}}}"#, many(10), many(15)), Attrs),
            (format!(r#"{{"a":{{"b":{}}}}}"#, many(75)), Body),
            // AWS's example: 3 × 4 × 2 × 3 = 72
            (
                format!(r#"{{"key_a":{{"key_b":{{"key_c":{}}}}},"key_d":{{"key_e":{}}}}}"#, many(4), many(3)),
                Body,
            ),
            (format!(r#"{{"$or":[{{"a":{}}},{{"b":{}}}]}}"#, many(100), many(50)), Attrs),
            // each $or branch has its own five keys
            (r#"{"x":[1],"$or":[{"a":[1],"b":[1],"c":[1],"d":[1]},{"e":[1],"f":[1],"g":[1],"h":[1]}]}"#.into(), Attrs),
            (r#"{"key":[{"numeric":[">=",-1e9,"<=",1e9]}]}"#.into(), Attrs),
            (r#"{"key":[5e9]}"#.into(), Attrs),
            (r#"{"key":[{"cidr":"10.0.0.0/31"}]}"#.into(), Attrs),
            (r#"{"key":[{"cidr":"::/0"}]}"#.into(), Attrs),
            (r#"{"key":[{"prefix":""}]}"#.into(), Attrs),
        ];
        for (text, scope) in &ok {
            if let Err(e) = FilterPolicy::parse(text, *scope) {
                panic!("{} refused: {e}", abbreviate(text));
            }
        }
    }

    #[test]
    fn scope_names() {
        assert_eq!(FilterPolicyScope::default(), Attrs);
        for scope in [Attrs, Body] {
            assert_eq!(FilterPolicyScope::parse(scope.as_str()).unwrap(), scope);
            assert_eq!(scope.to_string(), scope.as_str());
        }
        let e = FilterPolicyScope::parse("RandomValue").unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidParameter);
        assert_eq!(
            e.message,
            "Invalid parameter: FilterPolicyScope: Invalid value [RandomValue]. \
             Please use either MessageBody or MessageAttributes"
        );
    }

    #[test]
    fn subscribe_words_errors_with_attributes_reason() {
        let e = FilterPolicy::parse(r#"{"key":[{"exists":"no"}]}"#, Attrs).unwrap_err();
        assert_eq!(
            in_subscribe_call(e).message,
            "Invalid parameter: Attributes Reason: FilterPolicy: exists match pattern must be \
             either true or false."
        );
        let other = Error::new(ErrorCode::NotFound, "Topic does not exist");
        assert_eq!(in_subscribe_call(other.clone()), other);
    }

    // ---- property tests

    /// One value of a policy key, any operator.
    fn pattern() -> impl Strategy<Value = Value> {
        prop_oneof![
            "[a-c]{0,2}".prop_map(Value::String),
            (-3i64..3).prop_map(|n| json!(n)),
            "[a-c]{0,2}".prop_map(|s| json!({ "prefix": s })),
            "[a-c]{0,2}".prop_map(|s| json!({ "suffix": s })),
            "[a-cA-C]{0,2}".prop_map(|s| json!({ "equals-ignore-case": s })),
            prop::collection::vec("[a-c]{0,2}", 1..3).prop_map(|v| json!({ "anything-but": v })),
            prop::collection::vec(-3i64..3, 1..3).prop_map(|v| json!({ "anything-but": v })),
            "[a-c]{0,2}".prop_map(|s| json!({ "anything-but": { "prefix": s } })),
            (-3i64..3, 1i64..4).prop_map(|(lo, w)| json!({ "numeric": [">=", lo, "<", lo + w] })),
            (-3i64..3).prop_map(|n| json!({ "numeric": ["<=", n] })),
            any::<bool>().prop_map(|b| json!({ "exists": b })),
        ]
    }

    /// A flat policy of one to two keys among a, b, c.
    fn flat_policy() -> impl Strategy<Value = Value> {
        prop::collection::btree_map(
            prop::sample::select(vec!["a", "b", "c"]),
            prop::collection::vec(pattern(), 1..4),
            1..3,
        )
        .prop_map(|m| json!(m))
    }

    /// One attribute: (DataType, value), or absent.
    fn attribute() -> impl Strategy<Value = Option<(String, String)>> {
        prop_oneof![
            Just(None),
            "[a-cA-C]{0,2}".prop_map(|s| Some(("String".to_string(), s))),
            (-4i64..4).prop_map(|n| Some(("Number".to_string(), n.to_string()))),
            prop::collection::vec("[a-c]{0,2}", 0..3)
                .prop_map(|v| Some(("String.Array".to_string(), json!(v).to_string()))),
            Just(Some(("Binary".to_string(), "eA==".to_string()))),
        ]
    }

    fn attributes() -> impl Strategy<Value = BTreeMap<String, (String, String)>> {
        (attribute(), attribute(), attribute()).prop_map(|(a, b, c)| {
            [("a", a), ("b", b), ("c", c)]
                .into_iter()
                .filter_map(|(k, v)| v.map(|v| (k.to_string(), v)))
                .collect()
        })
    }

    /// A body with keys among a, b, c holding scalars or arrays of scalars.
    fn body() -> impl Strategy<Value = Value> {
        let scalar = prop_oneof![
            "[a-cA-C]{0,2}".prop_map(Value::String),
            (-4i64..4).prop_map(|n| json!(n)),
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
        ];
        let field = prop_oneof![
            scalar.clone(),
            prop::collection::vec(scalar, 0..3).prop_map(Value::Array),
        ];
        prop::collection::btree_map(prop::sample::select(vec!["a", "b", "c"]), field, 0..4)
            .prop_map(|m| json!(m))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// On a present string, `anything-but [v]` matches exactly when `[v]` does not.
        #[test]
        fn anything_but_negates_exact_string(v in "[a-c]{0,3}", s in "[a-c]{0,3}") {
            let exact = policy(&json!({ "k": [v] }).to_string(), Attrs);
            let but = policy(&json!({ "k": [{ "anything-but": [v] }] }).to_string(), Attrs);
            let message: BTreeMap<_, _> =
                [("k".to_string(), ("String".to_string(), s.clone()))].into();
            prop_assert_ne!(exact.matches_attributes(&message), but.matches_attributes(&message));

            let exact = policy(&json!({ "k": [v] }).to_string(), Body);
            let but = policy(&json!({ "k": [{ "anything-but": [v] }] }).to_string(), Body);
            let body = json!({ "k": s });
            prop_assert_ne!(exact.matches_body(&body), but.matches_body(&body));
        }

        /// The same for numbers, and for `anything-but {"prefix"}` against `{"prefix"}`.
        #[test]
        fn anything_but_negates_number_and_prefix(n in -5i64..5, x in -5i64..5, p in "[a-c]{0,2}", s in "[a-c]{0,3}") {
            let exact = policy(&json!({ "k": [n] }).to_string(), Attrs);
            let but = policy(&json!({ "k": [{ "anything-but": n }] }).to_string(), Attrs);
            let message: BTreeMap<_, _> =
                [("k".to_string(), ("Number".to_string(), x.to_string()))].into();
            prop_assert_ne!(exact.matches_attributes(&message), but.matches_attributes(&message));

            let prefix = policy(&json!({ "k": [{ "prefix": p }] }).to_string(), Body);
            let but = policy(&json!({ "k": [{ "anything-but": { "prefix": p } }] }).to_string(), Body);
            let body = json!({ "k": s });
            prop_assert_ne!(prefix.matches_body(&body), but.matches_body(&body));
        }

        /// `{"$or": [P1, P2]}` matches exactly when P1 or P2 does, in either scope.
        #[test]
        fn or_is_the_union(p1 in flat_policy(), p2 in flat_policy(), a in attributes(), b in body()) {
            let or = json!({ "$or": [p1, p2] }).to_string();
            for scope in [Attrs, Body] {
                let one = policy(&p1.to_string(), scope);
                let two = policy(&p2.to_string(), scope);
                let either = policy(&or, scope);
                prop_assert_eq!(
                    either.matches_attributes(&a),
                    one.matches_attributes(&a) || two.matches_attributes(&a)
                );
                prop_assert_eq!(
                    either.matches_body(&b),
                    one.matches_body(&b) || two.matches_body(&b)
                );
            }
        }

        /// Keys AND: a two-key policy matches exactly when both one-key policies do.
        #[test]
        fn keys_are_anded(pa in prop::collection::vec(pattern(), 1..3), pb in prop::collection::vec(pattern(), 1..3), a in attributes()) {
            let both = policy(&json!({ "a": pa, "b": pb }).to_string(), Attrs);
            let only_a = policy(&json!({ "a": pa }).to_string(), Attrs);
            let only_b = policy(&json!({ "b": pb }).to_string(), Attrs);
            prop_assert_eq!(
                both.matches_attributes(&a),
                only_a.matches_attributes(&a) && only_b.matches_attributes(&a)
            );
        }

        /// A String.Array matches exactly when one of its elements would, alone, as a String.
        #[test]
        fn string_array_matches_when_an_element_does(p in pattern(), items in prop::collection::vec("[a-c]{0,2}", 1..4)) {
            let policy = policy(&json!({ "k": [p] }).to_string(), Attrs);
            let array: BTreeMap<_, _> = [(
                "k".to_string(),
                ("String.Array".to_string(), json!(items).to_string()),
            )]
            .into();
            let any_single = items.iter().any(|s| {
                let one: BTreeMap<_, _> =
                    [("k".to_string(), ("String".to_string(), s.clone()))].into();
                policy.matches_attributes(&one)
            });
            prop_assert_eq!(policy.matches_attributes(&array), any_single);
        }

        /// Numeric ranges agree with plain comparison (two decimals: exact in five).
        #[test]
        fn numeric_range_agrees_with_comparison(lo in -10_000i64..10_000, width in 1i64..10_000, x in -20_000i64..20_000) {
            let (lo, hi, x) = (lo as f64 / 100.0, (lo + width) as f64 / 100.0, x as f64 / 100.0);
            let p = policy(&json!({ "k": [{ "numeric": [">=", lo, "<", hi] }] }).to_string(), Body);
            prop_assert_eq!(p.matches_body(&json!({ "k": x })), lo <= x && x < hi);
            let p = policy(&json!({ "k": [{ "numeric": [">", lo, "<=", hi] }] }).to_string(), Attrs);
            let message: BTreeMap<_, _> =
                [("k".to_string(), ("Number".to_string(), x.to_string()))].into();
            prop_assert_eq!(p.matches_attributes(&message), lo < x && x <= hi);
        }

        /// `exists: true` and `exists: false` split every message in two.
        #[test]
        fn exists_true_and_false_are_complements(a in attributes(), b in body()) {
            for key in ["a", "b", "c"] {
                for scope in [Attrs, Body] {
                    let yes = policy(&json!({ key: [{ "exists": true }] }).to_string(), scope);
                    let no = policy(&json!({ key: [{ "exists": false }] }).to_string(), scope);
                    prop_assert_ne!(yes.matches_attributes(&a), no.matches_attributes(&a));
                    prop_assert_ne!(yes.matches_body(&b), no.matches_body(&b));
                }
            }
        }
    }
}
