//! The botocore model's shapes as Rust types: what every typed operation input and output
//! is made of, and the one place that knows how each wire protocol spells a shape.
//!
//! A structure is declared once with `structure!`: its Rust fields, and for each the
//! model's member name (the JSON key, the SNS Query name and the SNS XML element) and,
//! where the SQS Query protocol's flattened name differs (`AttributeNames` is sent as
//! `AttributeName.1`, `Attributes` as `Attribute.1.Name`), that name. The macro derives
//! from it the [`Shape`] implementation (decoding from JSON and from Query parameters,
//! writing XML), the JSON encoding (`serde::Serialize`) and [`Member`] descriptions that
//! tests read to build requests of every operation. Lists and maps take their shape from
//! their Rust type: `Vec<T>` is a list, [`Map<V, N>`] a map whose entry element names are
//! `N`'s ([`NameValue`], [`KeyValue`], [`LowerKeyValue`]), so no table of list or map
//! names exists beside the types.
//!
//! Required or optional comes from the type too: a member of type `Option<T>` may be
//! absent; any other member absent (or, for lists, maps and structures, sent as a bare
//! empty Query parameter `Name=`) is refused with the protocol's error for a missing
//! parameter ([`Wire::missing`]).
//!
//! Sources: the botocore models `sqs/2012-11-05` (JSON) and the last Query edition of it
//! (flattened lists and maps, `locationName`s), `sns/2010-03-31` (Query: lists as
//! `Name.member.N`, maps as `Name.entry.N.key`/`.value`); the SQS API Reference's Query
//! examples ("Values of n are integers starting from 1").

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::marker::PhantomData;

use loft_core::{Error, ErrorCode, Result};
use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;
use serde_json::Value;

use super::query::{escape, Node};

/// What a member holds, as the botocore model types it.
#[derive(Debug)]
pub enum Kind {
    /// A string.
    String,
    /// A 64-bit integer (the model's Integer and Long).
    Integer,
    /// `true` or `false`.
    Boolean,
    /// Bytes, base64 on the wire.
    Blob,
    /// A list of the inner kind.
    List(&'static Kind),
    /// A map of strings to the inner kind; `key` and `value` name an entry's parts.
    Map {
        /// The key element (`Name`, `Key`, `key`).
        key: &'static str,
        /// The value element (`Value`, `value`).
        value: &'static str,
        /// What the values are.
        of: &'static Kind,
    },
    /// A structure of these members.
    Structure(&'static [Member]),
    /// No output shape: the operation's Query answer has no `Result` element.
    Nothing,
}

/// One member of a structure.
#[derive(Debug)]
pub struct Member {
    /// The model's member name: the JSON key, the SNS Query parameter and SNS XML element.
    pub name: &'static str,
    /// The SQS Query protocol's name: a list's item, a map's entry, otherwise `name`.
    pub query: &'static str,
    /// What it holds.
    pub kind: &'static Kind,
    /// Whether a request without it is refused.
    pub required: bool,
}

/// The wire protocol a value is decoded from or written to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// SQS over AWS JSON 1.0.
    SqsJson,
    /// SQS over the Query protocol: flattened lists and maps, names from [`Member::query`].
    SqsQuery,
    /// SNS over the Query protocol: `member` lists and `entry` maps, names from
    /// [`Member::name`].
    SnsQuery,
}

/// Where a value sits in the input, for error messages: a chain from the value to the root,
/// kept on the stack while decoding and rendered only when an error is reported.
#[derive(Debug, Clone, Copy)]
pub struct At<'a> {
    parent: Option<&'a At<'a>>,
    step: Step<'a>,
}

#[derive(Debug, Clone, Copy)]
enum Step<'a> {
    Root,
    Member(&'static str, &'static Kind),
    Index(usize),
    Key(&'a str),
}

impl<'a> At<'a> {
    /// The input itself.
    pub const ROOT: At<'static> = At {
        parent: None,
        step: Step::Root,
    };

    /// A member of the structure here.
    pub fn member(&'a self, name: &'static str, kind: &'static Kind) -> At<'a> {
        At {
            parent: Some(self),
            step: Step::Member(name, kind),
        }
    }

    fn index(&'a self, i: usize) -> At<'a> {
        At {
            parent: Some(self),
            step: Step::Index(i),
        }
    }

    fn key(&'a self, k: &'a str) -> At<'a> {
        At {
            parent: Some(self),
            step: Step::Key(k),
        }
    }

    /// The innermost member name (`MessageBody` for an entry's body).
    fn leaf(&self) -> &'static str {
        let mut at = Some(self);
        while let Some(a) = at {
            if let Step::Member(name, _) = a.step {
                return name;
            }
            at = a.parent;
        }
        ""
    }

    /// The steps from the root.
    fn steps(&self) -> Vec<Step<'a>> {
        let mut out = Vec::new();
        let mut at = Some(self);
        while let Some(a) = at {
            if !matches!(a.step, Step::Root) {
                out.push(a.step);
            }
            at = a.parent;
        }
        out.reverse();
        out
    }
}

fn lower_first(name: &str) -> String {
    let mut c = name.chars();
    match c.next() {
        Some(f) => f.to_lowercase().chain(c).collect(),
        None => String::new(),
    }
}

impl Wire {
    /// Whether lists and maps are flattened (`Name.1`) rather than wrapped
    /// (`Name.member.1`).
    pub fn flattened(self) -> bool {
        self == Wire::SqsQuery
    }

    /// The name `member` has on this wire.
    pub fn name_of(self, member: &Member) -> &'static str {
        if self.flattened() {
            member.query
        } else {
            member.name
        }
    }

    /// The error for a required value that is absent at `at`.
    ///
    /// SQS: `MissingParameter` "The request must contain the parameter {name}.". SNS: a
    /// top-level string, number or boolean is `InvalidParameter` "Invalid parameter: {name}
    /// Reason: no value for required parameter"; anything deeper, and any list, map or
    /// structure, is `ValidationError` "1 validation error detected: Value null at
    /// '{path}' ...", the path in the model's lowerCamel names with `.N.member` after list
    /// items and `.key.member` after map values, as AWS's recorded responses show.
    pub fn missing(self, at: &At<'_>) -> Error {
        match self {
            Wire::SqsJson | Wire::SqsQuery => Error::missing(at.leaf()),
            Wire::SnsQuery => {
                let steps = at.steps();
                let scalar = |k: &Kind| {
                    matches!(k, Kind::String | Kind::Integer | Kind::Boolean | Kind::Blob)
                };
                if let [Step::Member(name, kind)] = steps.as_slice() {
                    if scalar(kind) {
                        return Error::with(
                            ErrorCode::InvalidParameter,
                            &[(
                                "parameter",
                                &format!("{name} Reason: no value for required parameter"),
                            )],
                        );
                    }
                }
                let mut path = String::new();
                for step in steps {
                    match step {
                        Step::Member(name, _) => {
                            if !path.is_empty() {
                                path.push('.');
                            }
                            path.push_str(&lower_first(name));
                        }
                        Step::Index(i) => {
                            let _ = write!(path, ".{i}.member");
                        }
                        Step::Key(k) => {
                            let _ = write!(path, ".{k}.member");
                        }
                        Step::Root => {}
                    }
                }
                Error::with(ErrorCode::ValidationError, &[("path", &path)])
            }
        }
    }

    /// The error for a value at `at` that is not of its member's type (`shown` as the
    /// client sent it): SQS `InvalidParameterValue` "Value {shown} for parameter {name} is
    /// invalid.", SNS `InvalidParameter` "Invalid parameter: {name}".
    pub fn invalid(self, at: &At<'_>, shown: &str) -> Error {
        match self {
            Wire::SqsJson | Wire::SqsQuery => Error::invalid(format!(
                "Value {shown} for parameter {} is invalid.",
                at.leaf()
            )),
            Wire::SnsQuery => {
                Error::with(ErrorCode::InvalidParameter, &[("parameter", &at.leaf())])
            }
        }
    }
}

/// A Query list or map index: a decimal integer from 1 (as Java's `Integer.parseInt` reads
/// it). Errors: `MalformedInput` "{index} is not a valid index", as AWS answers `.0.`.
fn index(key: &str) -> Result<usize> {
    match key.parse::<i32>() {
        Ok(i) if i >= 1 => Ok(i as usize),
        _ => {
            let shown: String = key.chars().take(64).collect();
            Err(Error::with(ErrorCode::MalformedInput, &[("index", &shown)]))
        }
    }
}

/// The items of a Query list or map node in index order: `Name.N` flattened,
/// `Name.member.N` / `Name.entry.N` wrapped (`wrapper`). Errors: `MalformedInput` for an
/// index that is not a positive integer.
fn indexed<'n>(node: &'n Node, wire: Wire, wrapper: &str) -> Result<Vec<(usize, &'n Node)>> {
    let items = if wire.flattened() {
        &node.children
    } else {
        match node.children.get(wrapper) {
            Some(n) => &n.children,
            None => return Ok(Vec::new()),
        }
    };
    let mut out = items
        .iter()
        .map(|(k, n)| Ok((index(k)?, n)))
        .collect::<Result<Vec<_>>>()?;
    out.sort_by_key(|(i, _)| *i);
    Ok(out)
}

/// Whether a Query node stands for nothing: no children and no value, or the empty value
/// the SDKs send for an empty list or map (`MessageAttributeNames=`).
pub fn is_empty_node(node: &Node) -> bool {
    node.children.is_empty() && node.value.as_deref().is_none_or(str::is_empty)
}

/// A value of the model: decoded from either protocol's input, written as XML; its JSON
/// encoding is its `serde::Serialize`.
pub trait Shape: Sized {
    /// What it is.
    const KIND: Kind;
    /// Whether a structure may lack it (`Option`).
    const OPTIONAL: bool = false;

    /// Its value when the input lacks it; `None` when it is required.
    fn absent() -> Option<Self> {
        None
    }

    /// Decodes it from JSON (never `null`: a null member is absent). The value is taken,
    /// so its strings move into the result instead of being copied (per-request CPU:
    /// BENCHMARKS.md, the floor).
    fn from_json(v: Value, at: &At<'_>, wire: Wire) -> Result<Self>;

    /// Decodes it from a Query parameter node (never an empty one for lists, maps and
    /// structures: those are absent).
    fn from_query(n: &Node, at: &At<'_>, wire: Wire) -> Result<Self>;

    /// Whether it is left out of the output (`None`).
    fn skip(&self) -> bool {
        false
    }

    /// Writes it as the element `name` (or, for flattened lists and maps, the elements).
    fn write_xml(&self, name: &str, wire: Wire, out: &mut String);
}

/// A value in the JSON form of the Query protocol (`Accept: application/json`), from its
/// JSON-protocol form `v` of kind `kind`: the same members, but every map is a list of its
/// entries, each an object of the map's key and value names (`[{"Name": "QueueArn",
/// "Value": "arn:..."}]`), as the Query protocol's XML writes them.
///
/// Source: AWS's answer to GetQueueAttributes over Query with `Accept: application/json`
/// (LocalStack `test_get_queue_attributes_json_format`, `aws.validated`: `Attributes` is a
/// list of `Name`/`Value` objects).
pub fn query_json(v: Value, kind: &Kind) -> Value {
    match (kind, v) {
        (Kind::Map { key, value, of }, Value::Object(obj)) => Value::Array(
            obj.into_iter()
                .map(|(k, item)| {
                    let mut entry = serde_json::Map::new();
                    entry.insert((*key).to_owned(), Value::String(k));
                    entry.insert((*value).to_owned(), query_json(item, of));
                    Value::Object(entry)
                })
                .collect(),
        ),
        (Kind::List(of), Value::Array(items)) => {
            Value::Array(items.into_iter().map(|i| query_json(i, of)).collect())
        }
        (Kind::Structure(members), Value::Object(obj)) => Value::Object(
            obj.into_iter()
                .map(|(name, item)| {
                    let item = match members.iter().find(|m| m.name == name) {
                        Some(m) => query_json(item, m.kind),
                        None => item,
                    };
                    (name, item)
                })
                .collect(),
        ),
        (_, v) => v,
    }
}

/// Decodes member `name` of a JSON object, taking it out of `obj`: absent or null takes
/// [`Shape::absent`].
pub fn json_member<T: Shape>(
    obj: &mut serde_json::Map<String, Value>,
    at: &At<'_>,
    name: &'static str,
    wire: Wire,
) -> Result<T> {
    let here = at.member(name, &T::KIND);
    match obj.swap_remove(name).filter(|v| !v.is_null()) {
        Some(v) => T::from_json(v, &here, wire),
        None => T::absent().ok_or_else(|| wire.missing(&here)),
    }
}

/// Decodes member `name` of a Query structure node: absent (or an empty node, for
/// anything but a scalar) takes [`Shape::absent`].
pub fn query_member<T: Shape>(
    node: &Node,
    at: &At<'_>,
    member: &'static str,
    query: &'static str,
    wire: Wire,
) -> Result<T> {
    let name = if wire.flattened() { query } else { member };
    let here = at.member(member, &T::KIND);
    let scalar = matches!(
        T::KIND,
        Kind::String | Kind::Integer | Kind::Boolean | Kind::Blob
    );
    match node.children.get(name) {
        Some(n) if scalar && n.value.is_some() => T::from_query(n, &here, wire),
        Some(n) if !scalar && !is_empty_node(n) => T::from_query(n, &here, wire),
        _ => T::absent().ok_or_else(|| wire.missing(&here)),
    }
}

fn shown_json(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 256 {
        let cut: String = s.chars().take(256).collect();
        format!("{cut}...")
    } else {
        s
    }
}

fn query_text(n: &Node) -> &str {
    n.value.as_deref().unwrap_or("")
}

fn element(name: &str, text: &str, out: &mut String) {
    out.push('<');
    out.push_str(name);
    out.push('>');
    escape(text, out);
    out.push_str("</");
    out.push_str(name);
    out.push('>');
}

impl Shape for String {
    const KIND: Kind = Kind::String;

    fn from_json(v: Value, at: &At<'_>, wire: Wire) -> Result<Self> {
        match v {
            Value::String(s) => Ok(s),
            other => Err(wire.invalid(at, &shown_json(&other))),
        }
    }

    fn from_query(n: &Node, _at: &At<'_>, _wire: Wire) -> Result<Self> {
        Ok(query_text(n).to_owned())
    }

    fn write_xml(&self, name: &str, _wire: Wire, out: &mut String) {
        element(name, self, out);
    }
}

impl Shape for i64 {
    const KIND: Kind = Kind::Integer;

    /// A JSON number. A string, even a numeric one, is refused as AWS's JSON front end
    /// refuses it: `SerializationException` "STRING_VALUE can not be converted to an
    /// Integer" (an SDK always sends a number; a hand-built body learns here, not from
    /// AWS, that `"DelaySeconds": "5"` fails).
    fn from_json(v: Value, at: &At<'_>, wire: Wire) -> Result<Self> {
        match &v {
            Value::Number(n) => n.as_i64(),
            Value::String(_) => {
                return Err(Error::with(
                    ErrorCode::Serialization,
                    &[("reason", &"STRING_VALUE can not be converted to an Integer")],
                ))
            }
            _ => None,
        }
        .ok_or_else(|| wire.invalid(at, &shown_json(&v)))
    }

    fn from_query(n: &Node, at: &At<'_>, wire: Wire) -> Result<Self> {
        let text = query_text(n);
        text.trim().parse().map_err(|_| {
            wire.invalid(
                at,
                &shown_json(&Value::String(text.chars().take(256).collect())),
            )
        })
    }

    fn write_xml(&self, name: &str, _wire: Wire, out: &mut String) {
        out.push('<');
        out.push_str(name);
        let _ = write!(out, ">{self}</{name}>");
    }
}

impl Shape for bool {
    const KIND: Kind = Kind::Boolean;

    /// A JSON boolean, or `true`/`false` in any case as a string.
    fn from_json(v: Value, at: &At<'_>, wire: Wire) -> Result<Self> {
        match v {
            Value::Bool(b) => Ok(b),
            Value::String(s) if s.eq_ignore_ascii_case("true") => Ok(true),
            Value::String(s) if s.eq_ignore_ascii_case("false") => Ok(false),
            other => Err(wire.invalid(at, &shown_json(&other))),
        }
    }

    fn from_query(n: &Node, at: &At<'_>, wire: Wire) -> Result<Self> {
        let text = query_text(n);
        if text.eq_ignore_ascii_case("true") {
            Ok(true)
        } else if text.eq_ignore_ascii_case("false") {
            Ok(false)
        } else {
            Err(wire.invalid(at, text))
        }
    }

    fn write_xml(&self, name: &str, _wire: Wire, out: &mut String) {
        element(name, if *self { "true" } else { "false" }, out);
    }
}

/// Bytes, base64 on every wire (the model's `Binary`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Blob(pub Vec<u8>);

impl Shape for Blob {
    const KIND: Kind = Kind::Blob;

    /// Errors: `InvalidParameterValue` for text that is not base64.
    fn from_json(v: Value, at: &At<'_>, wire: Wire) -> Result<Self> {
        match v {
            Value::String(s) => loft_core::message::base64_decode(&s).map(Blob),
            other => Err(wire.invalid(at, &shown_json(&other))),
        }
    }

    fn from_query(n: &Node, _at: &At<'_>, _wire: Wire) -> Result<Self> {
        loft_core::message::base64_decode(query_text(n)).map(Blob)
    }

    fn write_xml(&self, name: &str, _wire: Wire, out: &mut String) {
        element(name, &loft_core::message::base64_encode(&self.0), out);
    }
}

impl Serialize for Blob {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&loft_core::message::base64_encode(&self.0))
    }
}

impl<T: Shape> Shape for Option<T> {
    const KIND: Kind = T::KIND;
    const OPTIONAL: bool = true;

    fn absent() -> Option<Self> {
        Some(None)
    }

    fn from_json(v: Value, at: &At<'_>, wire: Wire) -> Result<Self> {
        T::from_json(v, at, wire).map(Some)
    }

    fn from_query(n: &Node, at: &At<'_>, wire: Wire) -> Result<Self> {
        T::from_query(n, at, wire).map(Some)
    }

    fn skip(&self) -> bool {
        self.as_ref().is_none_or(T::skip)
    }

    fn write_xml(&self, name: &str, wire: Wire, out: &mut String) {
        if let Some(v) = self {
            v.write_xml(name, wire, out);
        }
    }
}

impl<T: Shape> Shape for Vec<T> {
    const KIND: Kind = Kind::List(&T::KIND);

    /// Errors: a JSON value that is not an array (`InvalidParameterValue`), and each item's.
    fn from_json(v: Value, at: &At<'_>, wire: Wire) -> Result<Self> {
        let Value::Array(items) = v else {
            return Err(wire.invalid(at, &shown_json(&v)));
        };
        items
            .into_iter()
            .enumerate()
            .map(|(i, item)| {
                let here = at.index(i + 1);
                if item.is_null() {
                    T::absent().ok_or_else(|| wire.missing(&here))
                } else {
                    T::from_json(item, &here, wire)
                }
            })
            .collect()
    }

    /// Errors: `MalformedInput` for an index that is not a positive integer, and each
    /// item's.
    fn from_query(n: &Node, at: &At<'_>, wire: Wire) -> Result<Self> {
        indexed(n, wire, "member")?
            .into_iter()
            .map(|(i, item)| T::from_query(item, &at.index(i), wire))
            .collect()
    }

    fn write_xml(&self, name: &str, wire: Wire, out: &mut String) {
        if wire.flattened() {
            for item in self {
                item.write_xml(name, wire, out);
            }
        } else {
            let _ = write!(out, "<{name}>");
            for item in self {
                item.write_xml("member", wire, out);
            }
            let _ = write!(out, "</{name}>");
        }
    }
}

/// The element names of a map's entries.
pub trait MapNames {
    /// The key element.
    const KEY: &'static str;
    /// The value element.
    const VALUE: &'static str;
}

/// Entries of `Name` and `Value` (SQS attribute and message attribute maps, SNS message
/// attributes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NameValue;
impl MapNames for NameValue {
    const KEY: &'static str = "Name";
    const VALUE: &'static str = "Value";
}

/// Entries of `Key` and `Value` (SQS tags).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct KeyValue;
impl MapNames for KeyValue {
    const KEY: &'static str = "Key";
    const VALUE: &'static str = "Value";
}

/// Entries of `key` and `value`, the model's default (SNS attribute maps).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LowerKeyValue;
impl MapNames for LowerKeyValue {
    const KEY: &'static str = "key";
    const VALUE: &'static str = "value";
}

/// A map shape: string keys in order, values of `V`, entries named by `N`.
#[derive(Debug, Clone, PartialEq)]
pub struct Map<V, N>(pub BTreeMap<String, V>, PhantomData<N>);

impl<V, N> Default for Map<V, N> {
    fn default() -> Self {
        Map(BTreeMap::new(), PhantomData)
    }
}

impl<V, N> From<BTreeMap<String, V>> for Map<V, N> {
    fn from(m: BTreeMap<String, V>) -> Self {
        Map(m, PhantomData)
    }
}

impl<V, N> Map<V, N> {
    /// The entries.
    pub fn into_inner(self) -> BTreeMap<String, V> {
        self.0
    }
}

impl<V, N> std::ops::Deref for Map<V, N> {
    type Target = BTreeMap<String, V>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl<V: Shape, N: MapNames> Shape for Map<V, N> {
    const KIND: Kind = Kind::Map {
        key: N::KEY,
        value: N::VALUE,
        of: &V::KIND,
    };

    /// Errors: a JSON value that is not an object (`InvalidParameterValue`), and each
    /// value's.
    fn from_json(v: Value, at: &At<'_>, wire: Wire) -> Result<Self> {
        let Value::Object(obj) = v else {
            return Err(wire.invalid(at, &shown_json(&v)));
        };
        let mut out = BTreeMap::new();
        for (k, item) in obj {
            let here = at.key(&k);
            let value = if item.is_null() {
                V::absent().ok_or_else(|| wire.missing(&here))?
            } else {
                V::from_json(item, &here, wire)?
            };
            out.insert(k, value);
        }
        Ok(Map(out, PhantomData))
    }

    /// Entries without a key are left out; a later entry of the same key wins. Errors:
    /// `MalformedInput` for an index that is not a positive integer, and each value's.
    fn from_query(n: &Node, at: &At<'_>, wire: Wire) -> Result<Self> {
        let mut out = BTreeMap::new();
        for (_, entry) in indexed(n, wire, "entry")? {
            let Some(key) = entry.children.get(N::KEY).and_then(|k| k.value.as_deref()) else {
                continue;
            };
            let here = at.key(key);
            let scalar = matches!(
                V::KIND,
                Kind::String | Kind::Integer | Kind::Boolean | Kind::Blob
            );
            let value = match entry.children.get(N::VALUE) {
                Some(v) if scalar => V::from_query(v, &here, wire)?,
                Some(v) if !is_empty_node(v) => V::from_query(v, &here, wire)?,
                _ if scalar => V::from_query(&Node::default(), &here, wire)?,
                _ => V::absent().ok_or_else(|| wire.missing(&here))?,
            };
            out.insert(key.to_owned(), value);
        }
        Ok(Map(out, PhantomData))
    }

    fn write_xml(&self, name: &str, wire: Wire, out: &mut String) {
        let entry = if wire.flattened() {
            name
        } else {
            let _ = write!(out, "<{name}>");
            "entry"
        };
        for (k, v) in &self.0 {
            let _ = write!(out, "<{entry}>");
            element(N::KEY, k, out);
            v.write_xml(N::VALUE, wire, out);
            let _ = write!(out, "</{entry}>");
        }
        if !wire.flattened() {
            let _ = write!(out, "</{name}>");
        }
    }
}

impl<V: Serialize, N> Serialize for Map<V, N> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// A batch entry as decoded: the entry, or why it could not be read together with its
/// `Id` when it has a string one. SQS reports such an entry under `Failed` and goes on
/// with the others, so an entry's own errors do not refuse the whole request.
#[derive(Debug, Clone, PartialEq)]
pub enum Entry<T> {
    /// The entry, read in full.
    Ok(T),
    /// An entry that could not be read.
    Bad {
        /// Its `Id`, when it has a string one.
        id: Option<String>,
        /// Why it could not be read.
        error: Error,
    },
}

impl<T: Shape> Shape for Entry<T> {
    const KIND: Kind = T::KIND;

    /// Errors: only an `Id` that is present but not a string refuses the whole request
    /// (`InvalidParameterValue`), and only when the entry cannot be read; other errors
    /// make the entry [`Entry::Bad`]. The `Id` is copied before the entry is read (the
    /// read takes the value), so a bad entry still reports it.
    fn from_json(v: Value, at: &At<'_>, wire: Wire) -> Result<Self> {
        let id = match v.get("Id") {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(shown_json(other)),
        };
        match T::from_json(v, at, wire) {
            Ok(t) => Ok(Entry::Ok(t)),
            Err(error) => match id {
                Ok(id) => Ok(Entry::Bad { id, error }),
                Err(shown) => Err(wire.invalid(&at.member("Id", &Kind::String), &shown)),
            },
        }
    }

    fn from_query(n: &Node, at: &At<'_>, wire: Wire) -> Result<Self> {
        match T::from_query(n, at, wire) {
            Ok(t) => Ok(Entry::Ok(t)),
            Err(e) if e.code == ErrorCode::MalformedInput => Err(e),
            Err(error) => Ok(Entry::Bad {
                id: n.children.get("Id").and_then(|i| i.value.clone()),
                error,
            }),
        }
    }

    fn write_xml(&self, name: &str, wire: Wire, out: &mut String) {
        if let Entry::Ok(t) = self {
            t.write_xml(name, wire, out);
        }
    }
}

/// An entry read in full is written as itself, one that could not be read as its `Id`.
impl<T: Serialize> Serialize for Entry<T> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            Entry::Ok(t) => t.serialize(s),
            Entry::Bad { id, .. } => {
                let mut m = s.serialize_map(None)?;
                if let Some(id) = id {
                    m.serialize_entry("Id", id)?;
                }
                m.end()
            }
        }
    }
}

/// The output of an operation without an output shape: `{}` in JSON, no `Result` element
/// in a Query answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NoOutput;

impl Shape for NoOutput {
    const KIND: Kind = Kind::Nothing;

    fn from_json(_: Value, _: &At<'_>, _: Wire) -> Result<Self> {
        Ok(NoOutput)
    }

    fn from_query(_: &Node, _: &At<'_>, _: Wire) -> Result<Self> {
        Ok(NoOutput)
    }

    fn write_xml(&self, _: &str, _: Wire, _: &mut String) {}
}

impl Serialize for NoOutput {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_map(Some(0))?.end()
    }
}

/// A structure's members written as XML, in declaration order (the order of AWS's
/// answers); the members that [`Shape::skip`] are left out.
pub trait WriteMembers {
    /// Writes the members (not the structure's own element).
    fn write_members(&self, wire: Wire, out: &mut String);
}

impl WriteMembers for NoOutput {
    fn write_members(&self, _: Wire, _: &mut String) {}
}

/// Declares structures of the model: the Rust struct, its [`Shape`], its [`Member`]s
/// (`MEMBERS`), [`WriteMembers`] and `serde::Serialize`. Each field is written
/// `ModelName / QueryName: rust_name: Type` (the `/ QueryName` part only where the SQS
/// Query name differs from the model's).
macro_rules! structure {
    ($(
        $(#[$smeta:meta])*
        pub struct $name:ident {
            $(
                $(#[$fmeta:meta])*
                $json:ident $(/ $query:ident)? : $field:ident : $ty:ty
            ),* $(,)?
        }
    )*) => {$(
        $(#[$smeta])*
        #[derive(Debug, Clone, PartialEq)]
        pub struct $name {
            $( $(#[$fmeta])* pub $field: $ty, )*
        }

        impl $name {
            /// The members, as the model declares them.
            pub const MEMBERS: &'static [$crate::aws::shape::Member] = &[$(
                $crate::aws::shape::Member {
                    name: stringify!($json),
                    query: structure!(@query $json $(, $query)?),
                    kind: &<$ty as $crate::aws::shape::Shape>::KIND,
                    required: !<$ty as $crate::aws::shape::Shape>::OPTIONAL,
                },
            )*];
        }

        impl $crate::aws::shape::Shape for $name {
            const KIND: $crate::aws::shape::Kind =
                $crate::aws::shape::Kind::Structure(Self::MEMBERS);

            #[allow(unused_variables, unused_mut)]
            fn from_json(
                v: serde_json::Value,
                at: &$crate::aws::shape::At<'_>,
                wire: $crate::aws::shape::Wire,
            ) -> loft_core::Result<Self> {
                let serde_json::Value::Object(mut obj) = v else {
                    return Err(wire.invalid(at, &v.to_string()));
                };
                Ok($name {$(
                    $field: $crate::aws::shape::json_member::<$ty>(
                        &mut obj, at, stringify!($json), wire,
                    )?,
                )*})
            }

            #[allow(unused_variables)]
            fn from_query(
                n: &$crate::aws::query::Node,
                at: &$crate::aws::shape::At<'_>,
                wire: $crate::aws::shape::Wire,
            ) -> loft_core::Result<Self> {
                Ok($name {$(
                    $field: $crate::aws::shape::query_member::<$ty>(
                        n, at, stringify!($json), structure!(@query $json $(, $query)?), wire,
                    )?,
                )*})
            }

            fn write_xml(&self, name: &str, wire: $crate::aws::shape::Wire, out: &mut String) {
                out.push('<');
                out.push_str(name);
                out.push('>');
                $crate::aws::shape::WriteMembers::write_members(self, wire, out);
                out.push_str("</");
                out.push_str(name);
                out.push('>');
            }
        }

        impl $crate::aws::shape::WriteMembers for $name {
            #[allow(unused_variables)]
            fn write_members(&self, wire: $crate::aws::shape::Wire, out: &mut String) {
                $(
                    if !$crate::aws::shape::Shape::skip(&self.$field) {
                        let name = if wire.flattened() {
                            structure!(@query $json $(, $query)?)
                        } else {
                            stringify!($json)
                        };
                        $crate::aws::shape::Shape::write_xml(&self.$field, name, wire, out);
                    }
                )*
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                use serde::ser::SerializeMap;
                #[allow(unused_mut)]
                let mut m = s.serialize_map(None)?;
                $(
                    if !$crate::aws::shape::Shape::skip(&self.$field) {
                        m.serialize_entry(stringify!($json), &self.$field)?;
                    }
                )*
                m.end()
            }
        }
    )*};
    (@query $json:ident) => { stringify!($json) };
    (@query $json:ident, $query:ident) => { stringify!($query) };
}
pub(crate) use structure;

/// One operation of a service: its name and its input and output members, for tests and
/// tools that build requests from the model.
#[derive(Debug)]
pub struct Operation {
    /// The operation's name (`SendMessage`).
    pub name: &'static str,
    /// The input structure's members.
    pub input: &'static [Member],
    /// The output's kind: a structure, or [`Kind::Nothing`].
    pub output: &'static Kind,
}

impl Operation {
    /// The input member `name`.
    pub fn member(&self, name: &str) -> Option<&'static Member> {
        self.input.iter().find(|m| m.name == name)
    }
}

/// Declares a service's operations: the request enum (one variant per operation with its
/// input), the response enum (with its output), the [`Operation`] list, the decoders
/// that pick the variant by name, and each operation's access (`access()`, checked by
/// [`crate::aws::access::check`] before the operation runs).
///
/// One line per operation: its name, input and output, then its IAM action and the
/// resource it acts on, as a [`crate::aws::access::Resource`] variant built from the
/// input's members:
///
/// ```text
/// SendMessage(SendMessageRequest) -> SendMessageResult, sqs:SendMessage on QueueUrl(queue_url),
/// ListQueues(ListQueuesRequest) -> ListQueuesResult, sqs:ListQueues on Account,
/// ```
macro_rules! operations {
    (
        $(#[$rmeta:meta])* pub enum $req:ident;
        $(#[$smeta:meta])* pub enum $resp:ident;
        $(#[$ometa:meta])* pub static $ops:ident;
        { $( $op:ident ( $input:ty ) -> $output:ty ,
             $svc:ident : $action:ident on $kind:ident $( ( $( $member:ident ),* ) )?
           ),* $(,)? }
    ) => {
        $crate::aws::access::accesses! {
            $req { $( $op, $svc : $action on $kind $( ( $( $member ),* ) )? ),* }
        }

        $(#[$rmeta])*
        #[derive(Debug, Clone, PartialEq)]
        pub enum $req {
            $( #[doc = concat!("`", stringify!($op), "`.")] $op($input), )*
        }

        $(#[$smeta])*
        #[derive(Debug, Clone, PartialEq)]
        pub enum $resp {
            $( #[doc = concat!("`", stringify!($op), "`.")] $op($output), )*
        }

        $(#[$ometa])*
        pub static $ops: &[$crate::aws::shape::Operation] = &[$(
            $crate::aws::shape::Operation {
                name: stringify!($op),
                input: <$input>::MEMBERS,
                output: &<$output as $crate::aws::shape::Shape>::KIND,
            },
        )*];

        impl $req {
            /// The operation's name.
            pub fn name(&self) -> &'static str {
                match self { $( $req::$op(_) => stringify!($op), )* }
            }

            /// Decodes the input of operation `op` from a JSON object, taking its strings.
            ///
            /// Errors: `InvalidAction` for an operation the service does not have, and the
            /// input's own (`Shape::from_json`).
            pub fn from_json(
                op: &str,
                v: serde_json::Value,
                wire: $crate::aws::shape::Wire,
            ) -> loft_core::Result<Self> {
                use $crate::aws::shape::{At, Shape};
                match op {
                    $( stringify!($op) => <$input>::from_json(v, &At::ROOT, wire).map($req::$op), )*
                    other => Err(loft_core::Error::with(
                        loft_core::ErrorCode::InvalidAction,
                        &[("action", &other)],
                    )),
                }
            }

            /// Decodes the input of operation `op` from the Query parameter tree.
            ///
            /// Errors: `InvalidAction` for an operation the service does not have, and the
            /// input's own (`Shape::from_query`).
            pub fn from_query(
                op: &str,
                n: &$crate::aws::query::Node,
                wire: $crate::aws::shape::Wire,
            ) -> loft_core::Result<Self> {
                use $crate::aws::shape::{At, Shape};
                match op {
                    $( stringify!($op) => <$input>::from_query(n, &At::ROOT, wire).map($req::$op), )*
                    other => Err(loft_core::Error::with(
                        loft_core::ErrorCode::InvalidAction,
                        &[("action", &other)],
                    )),
                }
            }
        }

        impl $resp {
            /// The operation's name.
            pub fn name(&self) -> &'static str {
                match self { $( $resp::$op(_) => stringify!($op), )* }
            }

            /// Whether the operation has an output shape (a Query `Result` element).
            pub fn has_result(&self) -> bool {
                match self {
                    $( $resp::$op(_) => !matches!(
                        <$output as $crate::aws::shape::Shape>::KIND,
                        $crate::aws::shape::Kind::Nothing
                    ), )*
                }
            }

            /// The output's members as XML.
            pub fn write_members(&self, wire: $crate::aws::shape::Wire, out: &mut String) {
                match self {
                    $( $resp::$op(o) => $crate::aws::shape::WriteMembers::write_members(o, wire, out), )*
                }
            }
        }

        impl serde::Serialize for $resp {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                match self { $( $resp::$op(o) => o.serialize(s), )* }
            }
        }
    };
}
pub(crate) use operations;

#[cfg(test)]
mod tests {
    use super::*;

    structure! {
        /// A test structure.
        pub struct Inner {
            /// A string.
            DataType: data_type: String,
            /// A list.
            StringListValues / StringListValue: strings: Option<Vec<String>>,
        }
        /// Another.
        pub struct Outer {
            /// Required.
            QueueUrl: queue_url: String,
            /// A flattened map.
            Attributes / Attribute: attributes: Option<Map<String, NameValue>>,
            /// A map of structures.
            MessageAttributes / MessageAttribute: message_attributes: Option<Map<Inner, NameValue>>,
            /// A number.
            MaxResults: max_results: Option<i64>,
            /// Entries.
            Entries / Entry: entries: Option<Vec<Entry<Inner>>>,
        }
    }

    fn tree(pairs: &[(&str, &str)]) -> Node {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        super::super::query::tree(&pairs).unwrap()
    }

    #[test]
    fn members_describe_the_model() {
        let m = Outer::MEMBERS;
        assert_eq!(m[0].name, "QueueUrl");
        assert!(m[0].required);
        assert_eq!((m[1].name, m[1].query), ("Attributes", "Attribute"));
        assert!(!m[1].required);
        assert!(matches!(m[1].kind, Kind::Map { key: "Name", .. }));
        assert!(matches!(m[4].kind, Kind::List(Kind::Structure(_))));
    }

    #[test]
    fn json_and_query_decode_the_same_value() {
        let json = serde_json::json!({
            "QueueUrl": "u",
            "Attributes": {"A": "1"},
            "MessageAttributes": {"k": {"DataType": "String", "StringListValues": ["x", "y"]}},
            "MaxResults": 5,
            "Entries": [{"DataType": "d"}, {"StringListValues": ["z"]}],
        });
        let from_json = Outer::from_json(json, &At::ROOT, Wire::SqsJson).unwrap();
        let from_query = Outer::from_query(
            &tree(&[
                ("QueueUrl", "u"),
                ("Attribute.1.Name", "A"),
                ("Attribute.1.Value", "1"),
                ("MessageAttribute.1.Name", "k"),
                ("MessageAttribute.1.Value.DataType", "String"),
                ("MessageAttribute.1.Value.StringListValue.2", "y"),
                ("MessageAttribute.1.Value.StringListValue.1", "x"),
                ("MaxResults", "5"),
                ("Entry.1.DataType", "d"),
                ("Entry.2.StringListValue.1", "z"),
            ]),
            &At::ROOT,
            Wire::SqsQuery,
        )
        .unwrap();
        assert_eq!(from_json, from_query);
        assert_eq!(from_json.max_results, Some(5));
        let entries = from_json.entries.unwrap();
        assert!(matches!(entries[0], Entry::Ok(_)));
        let Entry::Bad { id, error } = &entries[1] else {
            panic!("{entries:?}")
        };
        assert_eq!((id, error.code), (&None, ErrorCode::MissingParameter));
        assert_eq!(
            error.message,
            "The request must contain the parameter DataType."
        );
    }

    #[test]
    fn query_indexes_are_positive_integers() {
        for bad in ["0", "-1", "12345678901234567890123", "x", ""] {
            let e = Outer::from_query(
                &tree(&[("QueueUrl", "u"), (&format!("Attribute.{bad}.Name"), "A")]),
                &At::ROOT,
                Wire::SqsQuery,
            )
            .unwrap_err();
            assert_eq!(e.code, ErrorCode::MalformedInput, "{bad}");
            assert!(e.message.ends_with("is not a valid index"), "{}", e.message);
        }
        let e = Outer::from_query(
            &tree(&[("QueueUrl", "u"), ("Entry.-1.DataType", "d")]),
            &At::ROOT,
            Wire::SqsQuery,
        )
        .unwrap_err();
        assert_eq!(e.message, "-1 is not a valid index");
    }

    #[test]
    fn empty_lists_and_maps_are_absent() {
        let v = Outer::from_query(
            &tree(&[("QueueUrl", "u"), ("Attribute", ""), ("Entry", "")]),
            &At::ROOT,
            Wire::SqsQuery,
        )
        .unwrap();
        assert_eq!((v.attributes, v.entries), (None, None));
    }

    #[test]
    fn missing_and_mistyped_members_per_wire() {
        let e = Outer::from_json(serde_json::json!({}), &At::ROOT, Wire::SqsJson).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (
                ErrorCode::MissingParameter,
                "The request must contain the parameter QueueUrl."
            )
        );
        let e = Outer::from_json(
            serde_json::json!({"QueueUrl": "u", "MaxResults": "10"}),
            &At::ROOT,
            Wire::SqsJson,
        )
        .unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (
                ErrorCode::Serialization,
                "STRING_VALUE can not be converted to an Integer"
            )
        );
        let e = Outer::from_json(
            serde_json::json!({"QueueUrl": "u", "MaxResults": [1]}),
            &At::ROOT,
            Wire::SqsJson,
        )
        .unwrap_err();
        assert_eq!(e.message, "Value [1] for parameter MaxResults is invalid.");
        let e = Outer::from_query(&tree(&[("X", "1")]), &At::ROOT, Wire::SnsQuery).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (
                ErrorCode::InvalidParameter,
                "Invalid parameter: QueueUrl Reason: no value for required parameter"
            )
        );
        let e = Outer::from_query(
            &tree(&[
                ("QueueUrl", "u"),
                ("MessageAttributes.entry.1.Name", "attr1"),
                ("MessageAttributes.entry.1.Value.StringValue", "x"),
            ]),
            &At::ROOT,
            Wire::SnsQuery,
        )
        .unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (
                ErrorCode::ValidationError,
                "1 validation error detected: Value null at 'messageAttributes.attr1.member.dataType' failed to satisfy constraint: Member must not be null"
            )
        );
    }

    #[test]
    fn xml_and_json_follow_the_types() {
        let v = Outer {
            queue_url: "u&".into(),
            attributes: Some(BTreeMap::from([("A".to_string(), "1".to_string())]).into()),
            message_attributes: None,
            max_results: Some(3),
            entries: None,
        };
        let mut sqs = String::new();
        v.write_members(Wire::SqsQuery, &mut sqs);
        assert_eq!(
            sqs,
            "<QueueUrl>u&amp;</QueueUrl><Attribute><Name>A</Name><Value>1</Value></Attribute><MaxResults>3</MaxResults>"
        );
        let mut sns = String::new();
        v.write_members(Wire::SnsQuery, &mut sns);
        assert_eq!(
            sns,
            "<QueueUrl>u&amp;</QueueUrl><Attributes><entry><Name>A</Name><Value>1</Value></entry></Attributes><MaxResults>3</MaxResults>"
        );
        assert_eq!(
            serde_json::to_value(&v).unwrap(),
            serde_json::json!({"QueueUrl": "u&", "Attributes": {"A": "1"}, "MaxResults": 3})
        );
        let list = vec!["a".to_string(), "b".to_string()];
        let mut out = String::new();
        list.write_xml("Names", Wire::SnsQuery, &mut out);
        assert_eq!(out, "<Names><member>a</member><member>b</member></Names>");
    }
}
