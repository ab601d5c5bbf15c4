//! The `[server]` section of the configuration file.
//!
//! A `[server]` key is the id of a `loft serve` argument: its field in `ServeArgs`
//! (`main.rs`) or `TrustArgs` (`trust.rs`), where the flag, the environment variable, the
//! default and the documentation are declared, once. [`SERVER_KEYS`] only says which
//! arguments the file may set and how the file's value is checked (so a bad value is
//! refused at its line). The file's values become those arguments' defaults
//! ([`ServerSettings::as_defaults`]), so clap applies the precedence: flag, then
//! environment variable, then file, then the declared default.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use super::ConfigError;
use crate::listeners::ListenAddr;

/// How a `[server]` value is checked, and turned into the string(s) its argument parses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// `listen`: an address or a non-empty array of them (`IP:PORT`, `http://IP:PORT`,
    /// `https://IP:PORT`).
    Listen,
    /// A file path, resolved against the config file's directory when relative.
    Path,
    /// `durability`: `"process"` or `"fsync"`.
    Durability,
    /// 12 digits.
    AccountId,
    /// Any string.
    Text,
    /// An `http://` or `https://` URL; a trailing `/` is dropped.
    Url,
    /// An array of CORS origins (`scheme://host[:port]` or `*`), normalised.
    Origins,
    /// An array of IP addresses and CIDR ranges.
    Cidrs,
    /// An integer at least this.
    AtLeast(u64),
    /// A number of seconds (integer or float) above 0 and at most a day.
    Seconds,
    /// `true` or `false`.
    Bool,
    /// `true` or `false`, given to the named switch negated (`sqs_quotas = false` is
    /// `--no-sqs-quotas`).
    Negates(&'static str),
}

/// The `[server]` keys, each the id of the `loft serve` argument it sets (except
/// [`Check::Negates`], which names its argument), and how its value is checked.
/// docs/configuration.md documents each; a test checks every key names an argument.
pub const SERVER_KEYS: &[(&str, Check)] = &[
    ("listen", Check::Listen),
    ("db", Check::Path),
    ("tls_cert", Check::Path),
    ("tls_key", Check::Path),
    ("durability", Check::Durability),
    ("account_id", Check::AccountId),
    ("region", Check::Text),
    ("advertised_url", Check::Url),
    ("cors_allowed_origins", Check::Origins),
    ("max_connections", Check::AtLeast(1)),
    ("max_connections_per_ip", Check::AtLeast(1)),
    ("trusted_proxies", Check::Cidrs),
    ("max_header_bytes", Check::AtLeast(1)),
    ("request_timeout", Check::Seconds),
    ("min_body_rate", Check::AtLeast(0)),
    ("keep_alive_timeout", Check::Seconds),
    (
        "max_body_bytes_in_flight",
        Check::AtLeast(loft_server::aws::AWS_BODY_LIMIT as u64),
    ),
    ("max_queues", Check::AtLeast(1)),
    ("max_topics", Check::AtLeast(1)),
    ("max_in_flight", Check::AtLeast(1)),
    ("max_in_flight_fifo", Check::AtLeast(1)),
    ("sqs_quotas", Check::Negates("no_sqs_quotas")),
    ("metrics_auth", Check::Bool),
    ("auto_create_queues", Check::Bool),
];

/// The `[server]` section as the file holds it: keys and values with their places.
pub(super) type ServerSection = BTreeMap<Spanned<String>, Spanned<toml::Value>>;

/// The `[server]` settings a file gives: for each argument it sets, the value(s) as the
/// argument's parser takes them. Empty when the file says nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerSettings(BTreeMap<&'static str, Vec<OsString>>);

impl ServerSettings {
    /// `serve` (the `loft serve` command) with the file's values as its arguments'
    /// defaults: a flag or an environment variable still wins, the declared default
    /// applies when the file says nothing.
    pub fn as_defaults(&self, serve: clap::Command) -> clap::Command {
        self.0.iter().fold(serve, |cmd, (id, values)| {
            cmd.mut_arg(*id, |a| a.default_values(values.iter().cloned()))
        })
    }

    /// Gives the argument `id` the default `values` (a section other than `[server]`
    /// that sets an argument: `[[cells]]`).
    pub(super) fn set(&mut self, id: &'static str, values: Vec<OsString>) {
        self.0.insert(id, values);
    }

    /// The cells' database URLs the file's `[[cells]]` give, cell 1 first; empty when it
    /// has none (`loft cells status --config`, which finds the cells as `loft serve` does).
    pub fn cell_urls(&self) -> Vec<String> {
        self.0
            .get("database_urls")
            .map(|v| v.iter().map(|s| s.to_string_lossy().into_owned()).collect())
            .unwrap_or_default()
    }

    /// The value(s) the file gives the argument `id`, as text; `None` when it gives none.
    #[cfg(test)]
    pub fn get(&self, id: &str) -> Option<Vec<String>> {
        self.0
            .get(id)
            .map(|v| v.iter().map(|s| s.to_string_lossy().into_owned()).collect())
    }
}

/// `durability` in `[server]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum FileDurability {
    /// WAL, `synchronous=NORMAL`.
    Process,
    /// Every acknowledged write is on disk first.
    Fsync,
}

/// A string or an array of them (`listen`).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

/// A number of seconds in the file: an integer or a float.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(untagged)]
enum Number {
    Int(i64),
    Float(f64),
}

/// Checks `section` (the file at `path`); `at` makes an error at a span.
///
/// Errors: an unknown key, a value of the wrong type, or one its [`Check`] refuses.
pub(super) fn settings(
    section: &ServerSection,
    path: &Path,
    at: &dyn Fn(&Range<usize>, String) -> ConfigError,
) -> Result<ServerSettings, ConfigError> {
    let mut out = BTreeMap::new();
    for (key, value) in section {
        let name = key.get_ref().as_str();
        let Some((id, check)) = SERVER_KEYS.iter().find(|(k, _)| *k == name) else {
            let known: Vec<String> = SERVER_KEYS.iter().map(|(k, _)| format!("`{k}`")).collect();
            return Err(at(
                &key.span(),
                format!(
                    "unknown field `{name}`, expected one of {}",
                    known.join(", ")
                ),
            ));
        };
        let span = value.span();
        let raw = value.get_ref().clone();
        let parse = |m: String| at(&span, m);
        let values: Vec<OsString> = match check {
            Check::Listen => {
                let list = match deserialize::<OneOrMany>(raw, &parse)? {
                    OneOrMany::One(s) => vec![s],
                    OneOrMany::Many(v) => v,
                };
                if list.is_empty() {
                    return Err(parse("listen: give at least one address".into()));
                }
                for a in &list {
                    a.parse::<ListenAddr>()
                        .map_err(|e| parse(format!("listen: {e}")))?;
                }
                list.into_iter().map(OsString::from).collect()
            }
            Check::Path => {
                let file: String = deserialize(raw, &parse)?;
                vec![beside(path, &file).into_os_string()]
            }
            Check::Durability => {
                let d: FileDurability = deserialize(raw, &parse)?;
                vec![match d {
                    FileDurability::Process => "process".into(),
                    FileDurability::Fsync => "fsync".into(),
                }]
            }
            Check::AccountId => {
                let id: String = deserialize(raw, &parse)?;
                if id.len() != 12 || !id.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(parse(format!("{name}: must be 12 digits")));
                }
                vec![id.into()]
            }
            Check::Text => vec![deserialize::<String>(raw, &parse)?.into()],
            Check::Url => {
                let u: String = deserialize(raw, &parse)?;
                if !(u.starts_with("http://") || u.starts_with("https://")) {
                    return Err(parse(format!(
                        "{name}: must start with http:// or https://"
                    )));
                }
                vec![u.trim_end_matches('/').into()]
            }
            Check::Origins => deserialize::<Vec<String>>(raw, &parse)?
                .iter()
                .map(|o| loft_server::cors::check_origin(o).map(OsString::from))
                .collect::<Result<_, _>>()
                .map_err(|e| parse(format!("{name}: {e}")))?,
            Check::Cidrs => {
                let list: Vec<String> = deserialize(raw, &parse)?;
                for c in &list {
                    loft_server::proxy::parse_cidr(c).map_err(|e| parse(format!("{name}: {e}")))?;
                }
                list.into_iter().map(OsString::from).collect()
            }
            Check::AtLeast(min) => {
                let n: u64 = deserialize(raw, &parse)?;
                if n < *min {
                    return Err(parse(format!("{name}: must be at least {min}")));
                }
                vec![n.to_string().into()]
            }
            Check::Seconds => {
                let secs = match deserialize::<Number>(raw, &parse)? {
                    Number::Int(i) => i as f64,
                    Number::Float(f) => f,
                };
                if !(secs > 0.0 && secs <= 86_400.0) {
                    return Err(parse(format!(
                        "{name}: must be a number of seconds above 0 and at most 86400"
                    )));
                }
                vec![secs.to_string().into()]
            }
            Check::Bool => vec![deserialize::<bool>(raw, &parse)?.to_string().into()],
            Check::Negates(_) => vec![(!deserialize::<bool>(raw, &parse)?).to_string().into()],
        };
        let id = match check {
            Check::Negates(arg) => *arg,
            _ => *id,
        };
        out.insert(id, values);
    }
    Ok(ServerSettings(out))
}

/// `value` as a `T`; a value of another type is refused in serde's words.
fn deserialize<T: serde::de::DeserializeOwned>(
    value: toml::Value,
    err: &dyn Fn(String) -> ConfigError,
) -> Result<T, ConfigError> {
    value
        .try_into()
        .map_err(|e| err(e.to_string().trim().to_owned()))
}

/// `file` resolved against the directory of the config file `config` when relative.
fn beside(config: &Path, file: &str) -> PathBuf {
    let p = PathBuf::from(file);
    if p.is_relative() {
        config
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .map_or(p.clone(), |d| d.join(&p))
    } else {
        p
    }
}
