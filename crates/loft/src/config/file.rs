//! The TOML shapes of the configuration file and their checks: [`parse`] turns a file's
//! text into a [`Config`], every problem a [`ConfigError`] at its line.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::path::Path;

use loft_core::attributes::{self, RedrivePolicy};
use loft_core::functions::{FunctionConfig, FunctionSigning, FunctionTarget, InvocationType};
use loft_core::names::{self, Naming};
use serde::Deserialize;
use toml::Spanned;

use super::server::ServerSection;
use super::{error_at, Config, ConfigError, MappingSpec, QueueSpec, SubscriptionSpec, TopicSpec};

type Attributes = BTreeMap<Spanned<String>, Spanned<toml::Value>>;

/// Attributes as AWS strings, and where each name is in the file.
type ConvertedAttributes = (BTreeMap<String, String>, BTreeMap<String, Range<usize>>);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct QueueDecl {
    name: Spanned<String>,
    #[serde(default)]
    attributes: Attributes,
    #[serde(default)]
    tags: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SubscriptionDecl {
    protocol: Spanned<String>,
    endpoint: Spanned<String>,
    #[serde(default)]
    attributes: Attributes,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TopicDecl {
    name: Spanned<String>,
    #[serde(default)]
    attributes: Attributes,
    #[serde(default)]
    tags: BTreeMap<String, String>,
    #[serde(default)]
    subscriptions: Vec<SubscriptionDecl>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FunctionDecl {
    name: Spanned<String>,
    invoke_endpoint: Option<String>,
    url: Option<String>,
    timeout_seconds: Option<u64>,
    maximum_retry_attempts: Option<u32>,
    maximum_event_age_seconds: Option<u64>,
    access_key_id: Option<String>,
    secret_access_key: Option<String>,
    session_token: Option<String>,
    signing_region: Option<String>,
    invocation_type: Option<String>,
    account: Option<String>,
    #[serde(default)]
    allow_accounts: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MappingDecl {
    function: Spanned<String>,
    queue: String,
    batch_size: Option<i64>,
    maximum_batching_window_seconds: Option<i64>,
    enabled: Option<bool>,
    #[serde(default)]
    function_response_types: Vec<String>,
    #[serde(default)]
    filter_patterns: Vec<String>,
    maximum_concurrency: Option<i64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CredentialDecl {
    access_key_id: Spanned<String>,
    secret_access_key: Option<Spanned<String>>,
    secret_access_key_env: Option<Spanned<String>>,
    account_id: Option<Spanned<String>>,
    identity: Option<Spanned<String>>,
    #[serde(default)]
    policies: Vec<Spanned<String>>,
}

/// `[[cells]]`: one PostgreSQL database, a cell; the order is the cells' numbers.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CellDecl {
    database_url: Spanned<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileShape {
    #[serde(default)]
    cells: Vec<CellDecl>,
    #[serde(default)]
    functions: Vec<FunctionDecl>,
    #[serde(default)]
    event_source_mappings: Vec<MappingDecl>,
    #[serde(default)]
    server: ServerSection,
    #[serde(default)]
    credentials: Vec<CredentialDecl>,
    #[serde(default)]
    queues: Vec<QueueDecl>,
    #[serde(default)]
    topics: Vec<TopicDecl>,
}

/// Reads and checks `path`.
///
/// Errors: the file cannot be read, or [`parse`]'s errors.
pub fn load(path: &Path) -> Result<Config, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
        path: path.to_owned(),
        line: 0,
        column: 0,
        message: format!("cannot read the configuration file: {e}"),
    })?;
    parse(path, &text)
}

/// Converts a TOML attribute value to AWS's string form: strings as they are, integers and
/// booleans written out, tables and arrays as JSON (`RedrivePolicy = { maxReceiveCount = 3,
/// deadLetterTargetArn = "..." }` is the JSON policy).
fn attribute_string(v: &toml::Value) -> Result<String, String> {
    Ok(match v {
        toml::Value::String(s) => s.clone(),
        toml::Value::Integer(i) => i.to_string(),
        toml::Value::Boolean(b) => b.to_string(),
        toml::Value::Table(_) | toml::Value::Array(_) => {
            serde_json::to_string(v).map_err(|e| format!("cannot write the value as JSON: {e}"))?
        }
        toml::Value::Float(_) => {
            return Err(
                "attribute values are strings, integers, booleans or tables, not floats".into(),
            )
        }
        toml::Value::Datetime(_) => {
            return Err(
                "attribute values are strings, integers, booleans or tables, not dates".into(),
            )
        }
    })
}

fn convert_attributes(
    path: &Path,
    text: &str,
    attrs: &Attributes,
) -> Result<ConvertedAttributes, ConfigError> {
    let mut out = BTreeMap::new();
    let mut spans = BTreeMap::new();
    for (k, v) in attrs {
        let value = attribute_string(v.get_ref()).map_err(|m| {
            error_at(
                path,
                text,
                &v.span(),
                format!("attribute {}: {m}", k.get_ref()),
            )
        })?;
        out.insert(k.get_ref().clone(), value);
        spans.insert(k.get_ref().clone(), k.span());
    }
    Ok((out, spans))
}

/// Parses and checks the text of a configuration file (`path` is used in errors and to
/// resolve relative `db`, `tls_cert` and `tls_key` paths). Checks: TOML syntax and types,
/// unknown keys, `listen` addresses, `account_id` (12 digits), `advertised_url` (http or
/// https), `cors_allowed_origins` (origins or `*`), queue and topic names, duplicate names, queue attributes (CreateQueue's validation), RedrivePolicy
/// JSON, and dead-letter cycles among the declared queues.
///
/// Errors: a [`ConfigError`] at the offending line.
pub fn parse(path: &Path, text: &str) -> Result<Config, ConfigError> {
    let shape: FileShape = toml::from_str(text).map_err(|e| {
        let span = e.span().unwrap_or(0..0);
        let mut err = error_at(path, text, &span, e.message().trim().to_owned());
        if e.span().is_none() {
            err.line = 1;
            err.column = 1;
        }
        err
    })?;
    let at = |span: &Range<usize>, message: String| error_at(path, text, span, message);
    let mut server = super::server::settings(&shape.server, path, &at)?;
    // [[cells]]: the database URLs, cell 1 first, as `--database-urls` takes them (so a
    // `--database-url` flag, or either environment variable, wins over the file).
    let mut urls = Vec::with_capacity(shape.cells.len());
    for cell in &shape.cells {
        let url = cell.database_url.get_ref().trim();
        let span = cell.database_url.span();
        let postgres = url.starts_with("postgres://") || url.starts_with("postgresql://");
        if !(postgres || url.contains('=')) {
            return Err(at(
                &span,
                "database_url: a PostgreSQL URL (postgres://user:password@host:5432/db) or                  a key=value string"
                    .into(),
            ));
        }
        if url.contains(',') {
            return Err(at(&span, "database_url: may not contain ','".into()));
        }
        if urls.contains(&url.to_owned()) {
            return Err(at(
                &span,
                format!(
                    "database_url: cell {} names the same database as an earlier cell",
                    urls.len() + 1
                ),
            ));
        }
        urls.push(url.to_owned());
    }
    if !urls.is_empty() {
        server.set("database_urls", urls.into_iter().map(Into::into).collect());
    }
    // [[credentials]]
    let mut credentials = loft_server::auth::Credentials::default();
    let mut key_ids = BTreeSet::new();
    for c in &shape.credentials {
        let id = c.access_key_id.get_ref();
        if id.is_empty() || id.contains(char::is_whitespace) || id.contains(':') {
            return Err(at(
                &c.access_key_id.span(),
                "access_key_id: must be non-empty, without spaces or ':'".into(),
            ));
        }
        if !key_ids.insert(id.clone()) {
            return Err(at(
                &c.access_key_id.span(),
                format!("access_key_id {id} is declared twice"),
            ));
        }
        let secret = match (&c.secret_access_key, &c.secret_access_key_env) {
            (Some(s), None) => s.get_ref().clone(),
            (None, Some(var)) => std::env::var(var.get_ref()).map_err(|_| {
                at(
                    &var.span(),
                    format!(
                        "secret_access_key_env: the environment variable {} is not set",
                        var.get_ref()
                    ),
                )
            })?,
            _ => {
                return Err(at(
                    &c.access_key_id.span(),
                    "give one of secret_access_key and secret_access_key_env".into(),
                ))
            }
        };
        if secret.is_empty() {
            return Err(at(
                &c.access_key_id.span(),
                "the secret access key is empty".into(),
            ));
        }
        if let Some(a) = &c.account_id {
            if !names::is_account_id(a.get_ref()) {
                return Err(at(&a.span(), "account_id: must be 12 digits".into()));
            }
        }
        if let Some(i) = &c.identity {
            loft_server::auth::check_identity(i.get_ref())
                .map_err(|e| at(&i.span(), format!("identity: {e}")))?;
        }
        let mut policies = Vec::new();
        for p in &c.policies {
            policies.push(
                loft_core::iam::Policy::parse(p.get_ref(), loft_core::iam::PolicyKind::Identity)
                    .map_err(|e| at(&p.span(), format!("policies: {e}")))?,
            );
        }
        credentials.insert(
            id.clone(),
            loft_server::auth::Key {
                secret,
                account_id: c.account_id.as_ref().map(|a| a.get_ref().clone()),
                identity: c.identity.as_ref().map(|i| i.get_ref().clone()),
                policies: (!c.policies.is_empty()).then(|| std::sync::Arc::new(policies)),
            },
        );
    }
    // [[queues]]
    let mut queues = Vec::new();
    let mut seen = BTreeSet::new();
    for q in &shape.queues {
        let name = q.name.get_ref().clone();
        if !seen.insert(name.clone()) {
            return Err(at(
                &q.name.span(),
                format!("queue {name} is declared twice"),
            ));
        }
        let (attrs, spans) = convert_attributes(path, text, &q.attributes)?;
        let fifo = attrs
            .get("FifoQueue")
            .is_some_and(|v| v.eq_ignore_ascii_case("true"));
        if fifo != name.ends_with(".fifo") {
            return Err(at(
                &q.name.span(),
                format!(
                    "queue {name}: a FIFO queue's name ends with .fifo and needs FifoQueue = \"true\"; other queues have neither"
                ),
            ));
        }
        names::check_queue_name(&name, Naming::Aws)
            .map_err(|e| at(&q.name.span(), format!("queue {name}: {}", e.message)))?;
        if let Err(e) = attributes::validate(&attrs, true, fifo) {
            let span = spans
                .iter()
                .find(|(n, _)| e.message.contains(n.as_str()))
                .map_or(q.name.span(), |(_, s)| s.clone());
            return Err(at(
                &span,
                format!("queue {name}: {}: {}", e.code.aws_code(), e.message),
            ));
        }
        queues.push(QueueSpec {
            name,
            attributes: attrs,
            tags: q.tags.clone(),
            span: q.name.span(),
            attribute_spans: spans,
        });
    }
    let queues = dependency_order(path, text, queues)?;
    // [[topics]]
    let mut topics = Vec::new();
    let mut seen = BTreeSet::new();
    for t in &shape.topics {
        let name = t.name.get_ref().clone();
        if !seen.insert(name.clone()) {
            return Err(at(
                &t.name.span(),
                format!("topic {name} is declared twice"),
            ));
        }
        names::check_topic_name(&name, Naming::Aws)
            .map_err(|e| at(&t.name.span(), format!("topic {name}: {}", e.message)))?;
        let (attrs, _) = convert_attributes(path, text, &t.attributes)?;
        let mut subscriptions = Vec::new();
        for s in &t.subscriptions {
            let (sattrs, _) = convert_attributes(path, text, &s.attributes)?;
            if s.endpoint.get_ref().trim().is_empty() {
                return Err(at(&s.endpoint.span(), "endpoint: must not be empty".into()));
            }
            subscriptions.push(SubscriptionSpec {
                protocol: s.protocol.get_ref().to_ascii_lowercase(),
                endpoint: s.endpoint.get_ref().trim().to_owned(),
                attributes: sattrs,
                span: s.protocol.span(),
            });
        }
        topics.push(TopicSpec {
            name,
            attributes: attrs,
            tags: t.tags.clone(),
            subscriptions,
            span: t.name.span(),
        });
    }
    // [[functions]]
    let mut functions = Vec::new();
    let mut seen = BTreeSet::new();
    for f in &shape.functions {
        let name = f.name.get_ref().clone();
        let bad = |m: String| at(&f.name.span(), format!("function {name}: {m}"));
        if !seen.insert(name.clone()) {
            return Err(bad("declared twice".into()));
        }
        let target = match (&f.invoke_endpoint, &f.url) {
            (Some(e), None) => FunctionTarget::InvokeEndpoint(e.trim_end_matches('/').to_owned()),
            (None, Some(u)) => FunctionTarget::Url(u.clone()),
            _ => return Err(bad("give exactly one of invoke_endpoint and url".into())),
        };
        let mut config = FunctionConfig::new(name.clone(), target);
        if let Some(t) = f.timeout_seconds {
            config.timeout_seconds = t;
        }
        if let Some(r) = f.maximum_retry_attempts {
            config.maximum_retry_attempts = r;
        }
        if let Some(a) = f.maximum_event_age_seconds {
            config.maximum_event_age_seconds = a;
        }
        config.signing = match (&f.access_key_id, &f.secret_access_key) {
            (Some(k), Some(s)) => Some(FunctionSigning {
                access_key_id: k.clone(),
                secret_access_key: s.clone(),
                session_token: f.session_token.clone(),
                region: f.signing_region.clone(),
            }),
            (None, None) if f.session_token.is_none() => None,
            _ => {
                return Err(bad(
                    "signing needs both access_key_id and secret_access_key".into(),
                ))
            }
        };
        if config.signing.is_some() && f.url.is_some() {
            return Err(bad("signing applies to invoke_endpoint only".into()));
        }
        if let Some(t) = &f.invocation_type {
            if f.url.is_some() {
                return Err(bad("invocation_type applies to invoke_endpoint only".into()));
            }
            config.invocation_type = InvocationType::parse(t).ok_or_else(|| {
                bad(format!(
                    "invocation_type must be \"Event\" or \"RequestResponse\", not {t:?}"
                ))
            })?;
        }
        config.account = f.account.clone();
        config.allow_accounts = f.allow_accounts.clone();
        config.validate().map_err(|e| {
            let m = e.message.replacen(&format!("function {name}: "), "", 1);
            bad(m)
        })?;
        functions.push(config);
    }
    // [[event_source_mappings]]
    let mut event_source_mappings = Vec::new();
    for m in &shape.event_source_mappings {
        let function = m.function.get_ref().clone();
        if !seen.contains(&function) {
            return Err(at(
                &m.function.span(),
                format!("event source mapping: no [[functions]] entry is named {function}"),
            ));
        }
        event_source_mappings.push(MappingSpec {
            function: function.clone(),
            queue: m.queue.clone(),
            input: loft_core::service::MappingInput {
                function_name: Some(function),
                // Resolved against the service's account and region at provisioning.
                event_source_arn: Some(m.queue.clone()),
                enabled: m.enabled,
                batch_size: m.batch_size,
                maximum_batching_window_seconds: m.maximum_batching_window_seconds,
                function_response_types: Some(m.function_response_types.clone()),
                filter_patterns: Some(m.filter_patterns.clone()),
                maximum_concurrency: Some(m.maximum_concurrency),
            },
            span: m.function.span(),
        });
    }
    Ok(Config {
        path: path.to_owned(),
        text: text.to_owned(),
        server,
        queues,
        topics,
        functions,
        event_source_mappings,
        credentials,
    })
}

/// Orders queues so that each dead-letter queue declared in the file comes before the
/// queues whose RedrivePolicy names it (file order otherwise).
///
/// Errors: a RedrivePolicy that is not valid JSON, or a cycle of dead-letter queues.
fn dependency_order(
    path: &Path,
    text: &str,
    queues: Vec<QueueSpec>,
) -> Result<Vec<QueueSpec>, ConfigError> {
    let index: BTreeMap<String, usize> = queues
        .iter()
        .enumerate()
        .map(|(i, q)| (q.name.clone(), i))
        .collect();
    let mut target: Vec<Option<usize>> = Vec::with_capacity(queues.len());
    for q in &queues {
        let dlq = match q.attributes.get("RedrivePolicy").filter(|p| !p.is_empty()) {
            Some(p) => {
                let policy = RedrivePolicy::parse(p).map_err(|e| {
                    let span = q.attribute_spans.get("RedrivePolicy").unwrap_or(&q.span);
                    error_at(path, text, span, format!("queue {}: {}", q.name, e.message))
                })?;
                index.get(policy.dlq_name()).copied()
            }
            None => None,
        };
        target.push(dlq);
    }
    // Depth-first: a queue is placed after its dead-letter queue.
    let mut order = Vec::with_capacity(queues.len());
    let mut state = vec![0u8; queues.len()]; // 0 new, 1 on the path, 2 placed
    for start in 0..queues.len() {
        let mut path_stack = Vec::new();
        let mut cur = Some(start);
        while let Some(i) = cur {
            match state[i] {
                2 => break,
                1 => {
                    let cycle: Vec<&str> = path_stack
                        .iter()
                        .skip_while(|j| **j != i)
                        .map(|j: &usize| queues[*j].name.as_str())
                        .chain(std::iter::once(queues[i].name.as_str()))
                        .collect();
                    let q = &queues[start];
                    let span = q.attribute_spans.get("RedrivePolicy").unwrap_or(&q.span);
                    return Err(error_at(
                        path,
                        text,
                        span,
                        format!("dead-letter queues form a cycle: {}", cycle.join(" -> ")),
                    ));
                }
                _ => {
                    state[i] = 1;
                    path_stack.push(i);
                    cur = target[i];
                }
            }
        }
        for i in path_stack.into_iter().rev() {
            state[i] = 2;
            order.push(i);
        }
    }
    let mut slots: Vec<Option<QueueSpec>> = queues.into_iter().map(Some).collect();
    Ok(order.into_iter().filter_map(|i| slots[i].take()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{position, ServerSettings};

    fn parse_str(text: &str) -> Result<Config, ConfigError> {
        parse(Path::new("conf/loft.toml"), text)
    }

    #[test]
    fn a_full_file_parses_and_orders_dead_letter_queues_first() {
        let c = parse_str(
            r#"
[server]
listen = ["127.0.0.1:9000", "https://0.0.0.0:9001"]
db = "data/loft.db"
tls_cert = "tls/cert.pem"
tls_key = "/etc/loft/key.pem"
durability = "fsync"
account_id = "123456789012"
region = "eu-west-1"
advertised_url = "http://loft.local:9000/"
cors_allowed_origins = ["http://localhost:3000/", "https://app.example.com"]

[[queues]]
name = "orders"
attributes = { VisibilityTimeout = "45", RedrivePolicy = '{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:orders-dlq","maxReceiveCount":"3"}' }
tags = { team = "shop" }

[[queues]]
name = "orders-dlq"
attributes = { MessageRetentionPeriod = 1209600 }

[[queues]]
name = "jobs.fifo"
attributes = { FifoQueue = true, ContentBasedDeduplication = "true" }

[[topics]]
name = "events"
[[topics.subscriptions]]
protocol = "sqs"
endpoint = "arn:aws:sqs:us-east-1:000000000000:orders"
attributes = { RawMessageDelivery = "true" }
"#,
        )
        .expect("parses");
        let server = |id: &str| c.server.get(id).expect(id);
        assert_eq!(server("listen"), ["127.0.0.1:9000", "https://0.0.0.0:9001"]);
        assert_eq!(server("db"), ["conf/data/loft.db"], "beside the file");
        assert_eq!(server("tls_cert"), ["conf/tls/cert.pem"]);
        assert_eq!(server("tls_key"), ["/etc/loft/key.pem"]);
        assert_eq!(server("durability"), ["fsync"]);
        assert_eq!(server("account_id"), ["123456789012"]);
        assert_eq!(server("region"), ["eu-west-1"]);
        assert_eq!(server("advertised_url"), ["http://loft.local:9000"]);
        assert_eq!(
            server("cors_allowed_origins"),
            ["http://localhost:3000", "https://app.example.com"]
        );
        let names: Vec<&str> = c.queues.iter().map(|q| q.name.as_str()).collect();
        assert_eq!(names, ["orders-dlq", "orders", "jobs.fifo"]);
        assert_eq!(c.queues[0].attributes["MessageRetentionPeriod"], "1209600");
        assert_eq!(c.queues[2].attributes["FifoQueue"], "true");
        assert_eq!(c.queues[1].tags["team"], "shop");
        assert_eq!(c.topics[0].subscriptions[0].protocol, "sqs");
        assert_eq!(
            c.topics[0].subscriptions[0].attributes["RawMessageDelivery"],
            "true"
        );
    }

    #[test]
    fn a_table_attribute_becomes_json() {
        let c = parse_str(
            r#"
[[queues]]
name = "a"
attributes = { RedrivePolicy = { deadLetterTargetArn = "arn:aws:sqs:us-east-1:000000000000:b", maxReceiveCount = 2 } }
[[queues]]
name = "b"
"#,
        )
        .unwrap();
        assert_eq!(c.queues[0].name, "b");
        let policy: serde_json::Value =
            serde_json::from_str(&c.queues[1].attributes["RedrivePolicy"]).unwrap();
        assert_eq!(policy["maxReceiveCount"], 2);
    }

    #[test]
    fn functions_and_mappings_parse_with_their_defaults() {
        let c = parse_str(
            r#"
[[functions]]
name = "api"
invoke_endpoint = "http://127.0.0.1:3002/"
timeout_seconds = 30
access_key_id = "AKID"
secret_access_key = "s"

[[functions]]
name = "plain"
url = "http://127.0.0.1:8080/h"

[[functions]]
name = "emulated"
invoke_endpoint = "http://127.0.0.1:9000"
invocation_type = "RequestResponse"
account = "222222222222"
allow_accounts = ["333333333333"]

[[event_source_mappings]]
function = "plain"
queue = "q"
batch_size = 5
function_response_types = ["ReportBatchItemFailures"]
"#,
        )
        .unwrap();
        assert_eq!(c.functions.len(), 3);
        assert_eq!(
            c.functions[0].invocation_type,
            InvocationType::Event,
            "SNS invokes asynchronously, as AWS"
        );
        assert_eq!(
            c.functions[2].invocation_type,
            InvocationType::RequestResponse
        );
        assert_eq!(
            c.functions[0].target,
            FunctionTarget::InvokeEndpoint("http://127.0.0.1:3002".into())
        );
        assert_eq!(c.functions[0].timeout_seconds, 30);
        assert!(c.functions[0].signing.is_some());
        assert_eq!(c.functions[1].timeout_seconds, 3, "Lambda's default");
        assert_eq!(c.functions[1].maximum_retry_attempts, 2);
        assert_eq!(c.functions[1].account, None, "the server's account");
        assert!(c.functions[1].allow_accounts.is_empty());
        assert_eq!(c.functions[2].account.as_deref(), Some("222222222222"));
        assert_eq!(c.functions[2].allow_accounts, ["333333333333"]);
        let m = &c.event_source_mappings[0];
        assert_eq!((m.function.as_str(), m.queue.as_str()), ("plain", "q"));
        assert_eq!(m.input.batch_size, Some(5));
    }

    #[test]
    fn bad_functions_and_mappings_are_refused_at_their_line() {
        fails(
            "[[functions]]\nname = \"f\"\nurl = \"http://x\"\nallow_accounts = [\"12\"]\n",
            2,
            "12-digit account ids",
        );
        fails(
            "[[functions]]\nname = \"f\"\n",
            2,
            "exactly one of invoke_endpoint and url",
        );
        fails(
            "[[functions]]\nname = \"f\"\nurl = \"http://x\"\ninvoke_endpoint = \"http://y\"\n",
            2,
            "exactly one",
        );
        fails(
            "[[functions]]\nname = \"f\"\ninvoke_endpoint = \"http://x\"\ninvocation_type = \"DryRun\"\n",
            2,
            "invocation_type must be",
        );
        fails(
            "[[functions]]\nname = \"f\"\nurl = \"http://x\"\ninvocation_type = \"Event\"\n",
            2,
            "invoke_endpoint only",
        );
        fails(
            "[[functions]]\nname = \"f\"\nurl = \"http://x\"\ntimeout_seconds = 901\n",
            2,
            "timeout_seconds",
        );
        fails(
            "[[functions]]\nname = \"a.b\"\nurl = \"http://x\"\n",
            2,
            "invalid function name",
        );
        fails(
            "[[functions]]\nname = \"f\"\nurl = \"ftp://x\"\n",
            2,
            "http://",
        );
        fails(
            "[[functions]]\nname = \"f\"\nurl = \"http://x\"\naccess_key_id = \"k\"\n",
            2,
            "both access_key_id and secret_access_key",
        );
        fails(
            "[[event_source_mappings]]\nfunction = \"nope\"\nqueue = \"q\"\n",
            2,
            "no [[functions]] entry is named nope",
        );
    }

    #[test]
    fn an_empty_file_is_fine() {
        let c = parse_str("").unwrap();
        assert!(c.queues.is_empty() && c.topics.is_empty());
        assert_eq!(c.server, ServerSettings::default());
    }

    fn fails(text: &str, line: usize, needle: &str) {
        let e = parse_str(text).expect_err("should fail");
        assert_eq!(e.line, line, "line of {e}");
        assert!(e.message.contains(needle), "{e} lacks {needle:?}");
        assert!(
            e.to_string()
                .starts_with(&format!("conf/loft.toml:{line}:")),
            "{e}"
        );
    }

    #[test]
    fn syntax_errors_give_the_line() {
        fails("[server]\nlisten = [\"127.0.0.1:1\"\n", 2, "");
        fails("[[queues]]\nname = \"a\"\nattributes = { x = }\n", 3, "");
    }

    #[test]
    fn unknown_keys_and_wrong_types_give_the_line() {
        fails("[server]\nlisen = \"127.0.0.1:1\"\n", 2, "unknown field");
        fails(
            "[server]\ndurability = \"sometimes\"\n",
            2,
            "unknown variant",
        );
        fails("[[queues]]\nnam = \"a\"\n", 2, "unknown field");
        fails("[[queues]]\nname = 5\n", 2, "string");
        fails(
            "[[topics]]\nname = \"t\"\n[[topics.subscriptions]]\nprotocol = \"sqs\"\n",
            3,
            "endpoint",
        );
    }

    /// `[[cells]]`: each entry a cell's `database_url`, in order, given to `loft serve`
    /// as its `--database-urls` default; bad entries are refused at their line.
    #[test]
    fn cells_give_the_database_urls_in_order_and_bad_ones_the_line() {
        let c = parse_str(
            "[[cells]]\ndatabase_url = \"postgres://a/x\"\n\n\
             [[cells]]\ndatabase_url = \"host=b dbname=y\"\n",
        )
        .unwrap();
        assert_eq!(
            c.server.get("database_urls"),
            Some(vec![
                "postgres://a/x".to_owned(),
                "host=b dbname=y".to_owned()
            ])
        );
        assert_eq!(parse_str("").unwrap().server.get("database_urls"), None);
        fails(
            "[[cells]]\ndatabase_url = \"postgres://a/x\"\n[[cells]]\ndatabase_url = \"mysql://b\"\n",
            4,
            "a PostgreSQL URL",
        );
        fails(
            "[[cells]]\ndatabase_url = \"postgres://a/x\"\n[[cells]]\ndatabase_url = \"postgres://a/x\"\n",
            4,
            "cell 2 names the same database",
        );
        fails("[[cells]]\ndatabase_url = \"postgres://a/x,y\"\n", 2, "','");
        fails("[[cells]]\nurl = \"postgres://a/x\"\n", 2, "unknown field");
        fails("[[cells]]\ndatabase_url = 5\n", 2, "string");
    }

    #[test]
    fn bad_server_values_give_the_line() {
        fails("[server]\n\nlisten = \"localhost\"\n", 3, "not an IP:PORT");
        fails("[server]\naccount_id = \"42\"\n", 2, "12 digits");
        fails("[server]\nadvertised_url = \"loft:9324\"\n", 2, "http://");
        fails(
            "[server]\ncors_allowed_origins = [\"http://a.com/app\"]\n",
            2,
            "cors_allowed_origins: CORS origin",
        );
    }

    #[test]
    fn limits_parse_with_their_units_and_bad_ones_give_the_line() {
        let c = parse_str(
            "[server]\nmax_connections = 500\nmax_connections_per_ip = 50\n\
             trusted_proxies = [\"10.0.0.0/8\", \"192.0.2.7\"]\n\
             max_header_bytes = 16384\nrequest_timeout = 2.5\nmin_body_rate = 0\n\
             keep_alive_timeout = 90\nmax_body_bytes_in_flight = 67108864\n\
             max_queues = 10\nmax_topics = 20\nmax_in_flight = 30\nmax_in_flight_fifo = 40\n\
             sqs_quotas = false\nmetrics_auth = true\n",
        )
        .expect("parses");
        for (id, value) in [
            ("max_connections", "500"),
            ("max_connections_per_ip", "50"),
            ("max_header_bytes", "16384"),
            ("request_timeout", "2.5"),
            ("min_body_rate", "0"),
            ("keep_alive_timeout", "90"),
            ("max_body_bytes_in_flight", "67108864"),
            ("max_queues", "10"),
            ("max_topics", "20"),
            ("max_in_flight", "30"),
            ("max_in_flight_fifo", "40"),
            ("no_sqs_quotas", "true"),
            ("metrics_auth", "true"),
        ] {
            assert_eq!(c.server.get(id), Some(vec![value.to_owned()]), "{id}");
        }
        assert_eq!(
            c.server.get("trusted_proxies"),
            Some(vec!["10.0.0.0/8".to_owned(), "192.0.2.7".to_owned()])
        );
        assert_eq!(
            c.server.get("sqs_quotas"),
            None,
            "the argument is no_sqs_quotas"
        );
        fails("[server]\nsqs_quotas = \"off\"\n", 2, "");
        assert_eq!(parse_str("").unwrap().server, ServerSettings::default());
        fails("[server]\n\nrequest_timeout = 0\n", 3, "above 0");
        fails("[server]\nkeep_alive_timeout = -1.5\n", 2, "above 0");
        fails("[server]\nkeep_alive_timeout = \"30s\"\n", 2, "");
        fails("[server]\nmax_connections_per_ip = 0\n", 2, "at least 1");
        fails(
            "[server]\ntrusted_proxies = [\"10.0.0.0/40\"]\n",
            2,
            "trusted_proxies: \"10.0.0.0/40\" is not an IP address or CIDR range",
        );
        fails(
            "[server]\nmax_body_bytes_in_flight = 1024\n",
            2,
            "at least 10485760",
        );
        fails("[server]\nmax_connections = -3\n", 2, "");
    }

    #[test]
    fn credentials_tables_give_keys_with_accounts_identities_and_policies() {
        let c = parse_str(
            r#"
[[credentials]]
access_key_id = "AKIDA"
secret_access_key = "s3cret"
account_id = "111111111111"
identity = "user/team-a"
policies = ['{"Version":"2012-10-17","Statement":{"Effect":"Allow","Action":"sqs:*","Resource":"*"}}']

[[credentials]]
access_key_id = "AKIDB"
secret_access_key = "other"
"#,
        )
        .unwrap();
        let a = c.credentials.key("AKIDA").unwrap();
        assert_eq!(a.secret, "s3cret");
        assert_eq!(a.account_id.as_deref(), Some("111111111111"));
        assert_eq!(a.identity.as_deref(), Some("user/team-a"));
        assert_eq!(a.policies.as_ref().map(|p| p.len()), Some(1));
        let b = c.credentials.key("AKIDB").unwrap();
        assert!(b.account_id.is_none() && b.identity.is_none() && b.policies.is_none());
    }

    #[test]
    fn bad_credentials_give_the_line() {
        let key = "[[credentials]]\naccess_key_id = \"K\"\nsecret_access_key = \"s\"\n";
        fails(&format!("{key}account_id = \"12\"\n"), 4, "12 digits");
        fails(&format!("{key}identity = \"group/x\"\n"), 4, "user/NAME");
        fails(
            &format!("{key}policies = ['{{\"Statement\":{{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"*\",\"Resource\":\"*\"}}}}']\n"),
            4,
            "should not specify a principal",
        );
        fails(
            &format!("{key}policies = ['not json']\n"),
            4,
            "not valid JSON",
        );
        fails(
            "[[credentials]]\naccess_key_id = \"K\"\n",
            2,
            "secret_access_key",
        );
        fails(
            "[[credentials]]\naccess_key_id = \"K\"\nsecret_access_key_env = \"LOFT_TEST_SURELY_UNSET_VAR\"\n",
            3,
            "is not set",
        );
        fails(&format!("{key}{key}"), 5, "declared twice");
    }

    #[test]
    fn bad_queues_give_the_line() {
        fails(
            "[[queues]]\nname = \"a\"\n[[queues]]\nname = \"a\"\n",
            4,
            "declared twice",
        );
        fails("[[queues]]\nname = \"bad name\"\n", 2, "bad name");
        fails("[[queues]]\nname = \"a.fifo\"\n", 2, "FifoQueue");
        fails(
            "[[queues]]\nname = \"a\"\nattributes = { VisibilityTimeout = \"99999\" }\n",
            3,
            "VisibilityTimeout",
        );
        fails(
            "[[queues]]\nname = \"a\"\nattributes = { Colour = \"blue\" }\n",
            3,
            "Colour",
        );
        fails(
            "[[queues]]\nname = \"a\"\nattributes = { VisibilityTimeout = 1.5 }\n",
            3,
            "not floats",
        );
    }

    #[test]
    fn dead_letter_cycles_are_refused() {
        let arn = |n: &str| format!("arn:aws:sqs:us-east-1:000000000000:{n}");
        let text = format!(
            "[[queues]]\nname = \"a\"\nattributes = {{ RedrivePolicy = '{{\"deadLetterTargetArn\":\"{}\",\"maxReceiveCount\":\"3\"}}' }}\n\
             [[queues]]\nname = \"b\"\nattributes = {{ RedrivePolicy = '{{\"deadLetterTargetArn\":\"{}\",\"maxReceiveCount\":\"3\"}}' }}\n",
            arn("b"),
            arn("a")
        );
        fails(&text, 3, "cycle: a -> b -> a");
    }

    #[test]
    fn positions_count_lines_and_characters() {
        assert_eq!(position("ab\ncd", 0), (1, 1));
        assert_eq!(position("ab\ncd", 4), (2, 2));
        assert_eq!(position("é\nx", 3), (2, 1));
    }
}
