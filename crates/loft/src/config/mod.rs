//! The configuration file of `loft serve --config FILE` (TOML): server settings and the
//! queues, topics and subscriptions to create at start.
//!
//! ```toml
//! [server]
//! listen = ["127.0.0.1:9324"]
//! db = "loft.db"
//!
//! [[queues]]
//! name = "orders"
//! attributes = { VisibilityTimeout = "45" }
//!
//! [[topics]]
//! name = "events"
//! [[topics.subscriptions]]
//! protocol = "sqs"
//! endpoint = "arn:aws:sqs:us-east-1:000000000000:orders"
//! ```
//!
//! Every setting is documented in `docs/configuration.md`. Flags and environment variables
//! override the `[server]` settings. Resources are created through the service (the same
//! validation as CreateQueue, CreateTopic and Subscribe) and idempotently: a declared
//! resource that exists already gets the declared attributes. Queues are created in
//! dependency order (a dead-letter queue before the queues that name it), whatever their
//! order in the file.
//!
//! Errors name the file, the line and column, and the reason: TOML syntax, unknown keys,
//! wrong types, duplicate names, bad names or attribute values, dead-letter cycles, and
//! anything the service refuses at start.
//!
//! - [`file`]: the TOML shapes and their checks, [`parse`] and [`load`].
//! - [`server`]: the `[server]` keys: `loft serve`'s arguments, declared there once.
//! - [`provision`]: [`Config::provision`], making the file's resources through the service.

mod file;
mod provision;
mod server;

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

use loft_core::functions::FunctionConfig;

pub use file::load;
#[cfg(test)]
pub use file::parse;
pub use server::ServerSettings;
#[cfg(test)]
pub use server::{Check, SERVER_KEYS};

/// A configuration problem: where it is and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The file.
    pub path: PathBuf,
    /// 1-based line, 0 when the problem is the whole file (it cannot be read).
    pub line: usize,
    /// 1-based column (characters), 0 with `line` 0.
    pub column: usize,
    /// Why.
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.path.display(), self.message)
        } else {
            write!(
                f,
                "{}:{}:{}: {}",
                self.path.display(),
                self.line,
                self.column,
                self.message
            )
        }
    }
}

impl std::error::Error for ConfigError {}

/// A queue to create, attributes as AWS strings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueSpec {
    /// Name.
    pub name: String,
    /// Attributes by AWS name.
    pub attributes: BTreeMap<String, String>,
    /// Tags.
    pub tags: BTreeMap<String, String>,
    span: Range<usize>,
    attribute_spans: BTreeMap<String, Range<usize>>,
}

/// A subscription to create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubscriptionSpec {
    /// Protocol (`sqs`, `http`, `https`, `email`, ...).
    pub protocol: String,
    /// Endpoint (ARN, URL, address).
    pub endpoint: String,
    /// Attributes by AWS name.
    pub attributes: BTreeMap<String, String>,
    span: Range<usize>,
}

/// A topic to create with its subscriptions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicSpec {
    /// Name.
    pub name: String,
    /// Attributes by AWS name.
    pub attributes: BTreeMap<String, String>,
    /// Tags.
    pub tags: BTreeMap<String, String>,
    /// Subscriptions.
    pub subscriptions: Vec<SubscriptionSpec>,
    span: Range<usize>,
}

/// An SQS event source mapping to create (or update) at start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MappingSpec {
    /// The function's name.
    pub function: String,
    /// The queue: a name or an ARN.
    pub queue: String,
    /// The settings, as CreateEventSourceMapping takes them.
    pub input: loft_core::service::MappingInput,
    span: Range<usize>,
}

/// A loaded and checked configuration file.
#[derive(Debug, Clone)]
pub struct Config {
    path: PathBuf,
    text: String,
    /// `[server]`: defaults for `loft serve`'s arguments.
    pub server: ServerSettings,
    /// `[[queues]]`, in creation order (dead-letter queues first).
    pub queues: Vec<QueueSpec>,
    /// `[[topics]]`, in file order.
    pub topics: Vec<TopicSpec>,
    /// `[[functions]]`: the functions Loft invokes (the service's configuration).
    pub functions: Vec<FunctionConfig>,
    /// `[[event_source_mappings]]`, in file order.
    pub event_source_mappings: Vec<MappingSpec>,
    /// `[[credentials]]`: access keys with their accounts, identities and policies.
    pub credentials: loft_server::auth::Credentials,
}

fn error_at(
    path: &Path,
    text: &str,
    span: &Range<usize>,
    message: impl Into<String>,
) -> ConfigError {
    let (line, column) = position(text, span.start);
    ConfigError {
        path: path.to_owned(),
        line,
        column,
        message: message.into(),
    }
}

fn position(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[line_start..].chars().count() + 1)
}
