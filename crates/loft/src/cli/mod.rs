//! The admin commands of the `loft` binary, run against a running server: queues, messages,
//! topics, subscriptions, dead-letter redrive, export and import, shell completions.
//!
//! - [`client`]: SQS JSON, SNS Query and Loft routes over reqwest.
//! - [`xml`]: reading SNS's XML answers.
//! - [`output`]: tables and JSON.
//! - [`transfer`]: `loft export` and `loft import` (JSON Lines).
//!
//! Every command takes `--endpoint URL` (env `LOFT_ENDPOINT`, default
//! `http://127.0.0.1:9324`) and `--json`. An AWS error prints `loft: CODE: message` on
//! stderr and exits with status 1.
//!
//! Credentials: with an access key (`--access-key-id` or `AWS_ACCESS_KEY_ID`) and its
//! secret (`AWS_SECRET_ACCESS_KEY`, environment only, as `loft serve`'s
//! `LOFT_CREDENTIALS`, so that it never shows in the process list), every request is
//! signed with SigV4 in region `--region` (`AWS_REGION`, else `AWS_DEFAULT_REGION`, else
//! `us-east-1`), with `AWS_SESSION_TOKEN` when set. Without them requests are unsigned. A
//! server that refuses the credentials gets a message saying what to set.

pub mod client;
pub mod output;
pub mod transfer;
pub mod xml;

use std::collections::BTreeMap;
use std::time::Duration;

use clap::{Args, Subcommand};
use serde_json::{json, Map, Value};

pub use client::{CliError, Client};
use output::{print_table, Format};

/// The default server address.
pub const DEFAULT_ENDPOINT: &str = "http://127.0.0.1:9324";

/// The region signatures are scoped to when neither `--region`, `AWS_REGION` nor
/// `AWS_DEFAULT_REGION` names one: `loft serve`'s default region.
pub const DEFAULT_REGION: &str = "us-east-1";

/// Options every admin command takes.
#[derive(Args, Debug, Clone)]
pub struct ClientArgs {
    /// The server's base URL: `http://HOST:PORT`, or `https://HOST:PORT` (the certificate
    /// is checked against the system's roots, or SSL_CERT_FILE's when set).
    #[arg(long, env = "LOFT_ENDPOINT", default_value = DEFAULT_ENDPOINT, global = true)]
    pub endpoint: String,
    /// Print JSON on stdout instead of a table.
    #[arg(long, global = true)]
    pub json: bool,
    /// Access key id to sign requests with (AWS Signature Version 4), for a server with
    /// credentials; its secret comes from AWS_SECRET_ACCESS_KEY (environment only, so it
    /// never shows in the process list), a session token from AWS_SESSION_TOKEN.
    #[arg(long, env = "AWS_ACCESS_KEY_ID", global = true)]
    pub access_key_id: Option<String>,
    /// Region of the signatures' scope [default: AWS_DEFAULT_REGION, else us-east-1].
    #[arg(long, env = "AWS_REGION", global = true)]
    pub region: Option<String>,
}

/// A non-empty environment variable.
fn env_var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

impl ClientArgs {
    /// The signer these options and the environment describe: `None` without an access
    /// key and secret.
    ///
    /// Errors: `Usage` when only one of the access key and the secret is set.
    pub fn signer(&self) -> Result<Option<client::Signer>, CliError> {
        let key = self.access_key_id.clone().filter(|k| !k.is_empty());
        let secret = env_var("AWS_SECRET_ACCESS_KEY");
        match (key, secret) {
            (None, None) => Ok(None),
            (Some(_), None) => Err(CliError::Usage(
                "an access key id is set (--access-key-id or AWS_ACCESS_KEY_ID) but \
                 AWS_SECRET_ACCESS_KEY is not: set both to sign requests, or neither"
                    .into(),
            )),
            (None, Some(_)) => Err(CliError::Usage(
                "AWS_SECRET_ACCESS_KEY is set but no access key id is \
                 (--access-key-id or AWS_ACCESS_KEY_ID): set both to sign requests, or neither"
                    .into(),
            )),
            (Some(access_key), Some(secret)) => Ok(Some(client::Signer {
                access_key,
                secret,
                session_token: env_var("AWS_SESSION_TOKEN"),
                region: self
                    .region
                    .clone()
                    .filter(|r| !r.is_empty())
                    .or_else(|| env_var("AWS_DEFAULT_REGION"))
                    .unwrap_or_else(|| DEFAULT_REGION.to_owned()),
            })),
        }
    }

    /// A client of `--endpoint`, signing when [`ClientArgs::signer`] gives a signer.
    ///
    /// Errors: as [`ClientArgs::signer`] and [`Client::new`].
    pub fn client(&self) -> Result<Client, CliError> {
        Client::new(&self.endpoint, self.signer()?)
    }

    fn format(&self) -> Format {
        if self.json {
            Format::Json
        } else {
            Format::Table
        }
    }
}

/// The admin commands (flattened into `loft`'s own subcommands).
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Create, list, delete, purge queues and read or set their attributes.
    Queue(QueueArgs),
    /// Send one message (SendMessage).
    Send(SendArgs),
    /// Receive messages (ReceiveMessage), optionally deleting them.
    Receive(ReceiveArgs),
    /// Create, list and delete topics.
    Topic(TopicArgs),
    /// Publish a message to a topic.
    Publish(PublishArgs),
    /// Subscribe an endpoint to a topic.
    Subscribe(SubscribeArgs),
    /// Move a dead-letter queue's messages back to their source queues (StartMessageMoveTask).
    Redrive(RedriveArgs),
    /// Write every message of a queue to stdout as JSON Lines, without receiving them.
    Export(ExportArgs),
    /// Send the messages of a JSON Lines file (stdin) to a queue.
    Import(ImportArgs),
    /// Print a shell completion script.
    Completions(CompletionsArgs),
    /// Check that a URL answers: exit 0 when `GET URL` answers 2xx within the timeout,
    /// else print why on stderr and exit 1. A health check that needs no shell or curl
    /// (the container image's `HEALTHCHECK`: `loft probe http://127.0.0.1:9324/ready`).
    Probe(ProbeArgs),
}

/// `loft queue ...`.
#[derive(Args, Debug)]
pub struct QueueArgs {
    #[command(flatten)]
    client: ClientArgs,
    #[command(subcommand)]
    command: QueueCommand,
}

#[derive(Subcommand, Debug)]
enum QueueCommand {
    /// Create a queue (idempotent with the same attributes). Prints its URL.
    Create {
        /// Queue name (`.fifo` suffix for a FIFO queue).
        name: String,
        /// An attribute, AWS name and value: `--attribute VisibilityTimeout=45` (repeatable).
        #[arg(long = "attribute", short = 'a', value_name = "NAME=VALUE")]
        attributes: Vec<String>,
    },
    /// List queues with their message counts.
    List {
        /// Only queues whose name starts with this.
        #[arg(long)]
        prefix: Option<String>,
    },
    /// Delete a queue and its messages.
    Delete {
        /// Queue name or URL.
        name: String,
    },
    /// Delete every message of a queue (once a minute per queue).
    Purge {
        /// Queue name or URL.
        name: String,
    },
    /// Show a queue's attributes; with `--set`, change some first.
    Attributes {
        /// Queue name or URL.
        name: String,
        /// An attribute to set first: `--set VisibilityTimeout=60` (repeatable).
        #[arg(long = "set", value_name = "NAME=VALUE")]
        set: Vec<String>,
    },
}

/// `loft send QUEUE BODY`.
#[derive(Args, Debug)]
pub struct SendArgs {
    #[command(flatten)]
    client: ClientArgs,
    /// Queue name or URL.
    queue: String,
    /// The message body; `-` reads it from stdin.
    body: String,
    /// A message attribute: `NAME=VALUE` (String) or `NAME:TYPE=VALUE` with TYPE String,
    /// Number or Binary (base64) (repeatable).
    #[arg(long = "attribute", short = 'a', value_name = "NAME[:TYPE]=VALUE")]
    attributes: Vec<String>,
    /// Delay, seconds (0 to 900).
    #[arg(long)]
    delay: Option<i64>,
    /// MessageGroupId (FIFO queues).
    #[arg(long)]
    group_id: Option<String>,
    /// MessageDeduplicationId (FIFO queues).
    #[arg(long)]
    dedup_id: Option<String>,
}

/// `loft receive QUEUE`.
#[derive(Args, Debug)]
pub struct ReceiveArgs {
    #[command(flatten)]
    client: ClientArgs,
    /// Queue name or URL.
    queue: String,
    /// Long-poll for up to this many seconds (0 to 20).
    #[arg(long, default_value_t = 0)]
    wait: i64,
    /// At most this many messages (1 to 10).
    #[arg(long, default_value_t = 1)]
    max: i64,
    /// Visibility timeout of the received messages, seconds (default: the queue's).
    #[arg(long)]
    visibility: Option<i64>,
    /// Delete the received messages.
    #[arg(long)]
    delete: bool,
}

/// `loft topic ...`.
#[derive(Args, Debug)]
pub struct TopicArgs {
    #[command(flatten)]
    client: ClientArgs,
    #[command(subcommand)]
    command: TopicCommand,
}

#[derive(Subcommand, Debug)]
enum TopicCommand {
    /// Create a topic (idempotent). Prints its ARN.
    Create {
        /// Topic name (`.fifo` suffix for a FIFO topic).
        name: String,
        /// An attribute: `--attribute DisplayName=Shop` (repeatable).
        #[arg(long = "attribute", short = 'a', value_name = "NAME=VALUE")]
        attributes: Vec<String>,
    },
    /// List topics with their subscriptions.
    List,
    /// Delete a topic and its subscriptions.
    Delete {
        /// Topic name or ARN.
        name: String,
    },
}

/// `loft publish TOPIC MESSAGE`.
#[derive(Args, Debug)]
pub struct PublishArgs {
    #[command(flatten)]
    client: ClientArgs,
    /// Topic name or ARN.
    topic: String,
    /// The message; `-` reads it from stdin.
    message: String,
    /// Subject (email subscriptions).
    #[arg(long)]
    subject: Option<String>,
    /// A message attribute: `NAME=VALUE` or `NAME:TYPE=VALUE` (repeatable).
    #[arg(long = "attribute", short = 'a', value_name = "NAME[:TYPE]=VALUE")]
    attributes: Vec<String>,
    /// MessageGroupId (FIFO topics).
    #[arg(long)]
    group_id: Option<String>,
    /// MessageDeduplicationId (FIFO topics).
    #[arg(long)]
    dedup_id: Option<String>,
}

/// `loft subscribe TOPIC PROTOCOL ENDPOINT`.
#[derive(Args, Debug)]
pub struct SubscribeArgs {
    #[command(flatten)]
    client: ClientArgs,
    /// Topic name or ARN.
    topic: String,
    /// `sqs`, `http`, `https`, `email`, `email-json`, `sms`, `lambda`, `firehose`,
    /// `application`.
    protocol: String,
    /// The endpoint: a URL, an address, an ARN; for `sqs`, a queue name is turned into its
    /// ARN.
    #[arg(value_name = "ENDPOINT")]
    target: String,
    /// A subscription attribute: `--attribute RawMessageDelivery=true` (repeatable).
    #[arg(long = "attribute", short = 'a', value_name = "NAME=VALUE")]
    attributes: Vec<String>,
}

/// `loft redrive DLQ`.
#[derive(Args, Debug)]
pub struct RedriveArgs {
    #[command(flatten)]
    client: ClientArgs,
    /// The dead-letter queue (name, URL or ARN).
    dlq: String,
    /// Move every message to this queue instead of each one's source queue.
    #[arg(long)]
    destination: Option<String>,
    /// Messages per second (1 to 500; default 500).
    #[arg(long)]
    rate: Option<i64>,
    /// Wait until the task ends, showing progress on stderr.
    #[arg(long)]
    wait: bool,
}

/// `loft export QUEUE`.
#[derive(Args, Debug)]
pub struct ExportArgs {
    #[command(flatten)]
    client: ClientArgs,
    /// Queue name.
    queue: String,
}

/// `loft import QUEUE`.
#[derive(Args, Debug)]
pub struct ImportArgs {
    #[command(flatten)]
    client: ClientArgs,
    /// Queue name or URL.
    queue: String,
}

/// `loft completions SHELL`.
#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell.
    shell: clap_complete::Shell,
}

/// `loft probe URL`.
#[derive(Args, Debug)]
pub struct ProbeArgs {
    /// The URL to GET, `http://...` or `https://...` (e.g. `http://127.0.0.1:9324/ready`).
    url: String,
    /// Seconds to wait for the whole answer before failing.
    #[arg(long, default_value_t = 2.0)]
    timeout: f64,
}

/// `loft probe`: `GET url`; `Ok` when it answers 2xx within `timeout` seconds.
///
/// Errors: `Usage` for a timeout that is not a positive number of seconds; `Transport`
/// for no answer in time, a refused connection, or a status other than 2xx (named in the
/// message).
async fn probe(a: ProbeArgs) -> Result<(), CliError> {
    if !(a.timeout.is_finite() && a.timeout > 0.0) {
        return Err(CliError::Usage(format!(
            "--timeout {} is not a positive number of seconds",
            a.timeout
        )));
    }
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs_f64(a.timeout))
        .build()
        .map_err(|e| CliError::Transport(e.to_string()))?;
    let resp = http
        .get(&a.url)
        .send()
        .await
        .map_err(|e| CliError::Transport(format!("GET {}: {e}", a.url)))?;
    let status = resp.status();
    if status.is_success() {
        Ok(())
    } else {
        Err(CliError::Transport(format!("GET {}: HTTP {status}", a.url)))
    }
}

/// Splits `NAME=VALUE`.
///
/// Errors: `Usage` when there is no `=` or the name is empty.
pub fn name_value(s: &str) -> Result<(String, String), CliError> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_owned(), v.to_owned())),
        _ => Err(CliError::Usage(format!("{s:?} is not NAME=VALUE"))),
    }
}

fn attribute_map(list: &[String]) -> Result<BTreeMap<String, String>, CliError> {
    list.iter().map(|s| name_value(s)).collect()
}

/// Message attributes from `NAME[:TYPE]=VALUE` arguments, in AWS's JSON shape.
///
/// Errors: `Usage` for a malformed argument or a type other than String, Number, Binary
/// (with an optional `.custom` suffix).
pub fn message_attributes(list: &[String]) -> Result<Map<String, Value>, CliError> {
    let mut out = Map::new();
    for s in list {
        let (k, v) = name_value(s)?;
        let (name, data_type) = match k.split_once(':') {
            Some((n, t)) => (n.to_owned(), t.to_owned()),
            None => (k, "String".to_owned()),
        };
        let base = data_type.split('.').next().unwrap_or("");
        let value = match base {
            "String" | "Number" => json!({"DataType": data_type, "StringValue": v}),
            "Binary" => json!({"DataType": data_type, "BinaryValue": v}),
            _ => {
                return Err(CliError::Usage(format!(
                    "attribute {name}: type {data_type} is not String, Number or Binary"
                )))
            }
        };
        out.insert(name, value);
    }
    Ok(out)
}

fn read_arg(value: &str) -> Result<String, CliError> {
    if value != "-" {
        return Ok(value.to_owned());
    }
    let mut s = String::new();
    std::io::Read::read_to_string(&mut std::io::stdin(), &mut s)
        .map_err(|e| CliError::Usage(format!("cannot read stdin: {e}")))?;
    Ok(s)
}

/// The queue name a queue URL ends in, percent-decoded (a name made through the seeds'
/// API may hold characters its URL encodes, as `with%20space`).
pub(crate) fn queue_name_of(url: &str) -> String {
    let trimmed = url.trim_end_matches('/');
    loft_server::aws::sqs::queue_name(trimmed)
        .unwrap_or_else(|_| trimmed.rsplit('/').next().unwrap_or(url).to_owned())
}

/// Runs an admin command. `top` builds the whole `loft` command (for completions).
///
/// Errors: the first failing call's [`CliError`].
pub async fn run(command: Command, top: fn() -> clap::Command) -> Result<(), CliError> {
    match command {
        Command::Queue(a) => queue(a).await,
        Command::Send(a) => send(a).await,
        Command::Receive(a) => receive(a).await,
        Command::Topic(a) => topic(a).await,
        Command::Publish(a) => publish(a).await,
        Command::Subscribe(a) => subscribe(a).await,
        Command::Redrive(a) => redrive(a).await,
        Command::Export(a) => transfer::export(a.client, &a.queue).await,
        Command::Import(a) => transfer::import(a.client, &a.queue).await,
        Command::Completions(a) => {
            let mut cmd = top();
            clap_complete::generate(a.shell, &mut cmd, "loft", &mut std::io::stdout());
            Ok(())
        }
        Command::Probe(a) => probe(a).await,
    }
}

async fn queue(a: QueueArgs) -> Result<(), CliError> {
    let c = a.client.client()?;
    let format = a.client.format();
    match a.command {
        QueueCommand::Create { name, attributes } => {
            let attrs = attribute_map(&attributes)?;
            let mut input = json!({"QueueName": name});
            if !attrs.is_empty() {
                input["Attributes"] = json!(attrs);
            }
            let out = c.sqs("CreateQueue", input).await?;
            match format {
                Format::Json => output::json(&out),
                Format::Table => {
                    println!("{}", client::str_field(&out, "QueueUrl", "CreateQueue")?)
                }
            }
        }
        QueueCommand::List { prefix } => {
            let mut urls = Vec::new();
            let mut token: Option<String> = None;
            loop {
                let mut input = json!({"MaxResults": 1000});
                if let Some(p) = &prefix {
                    input["QueueNamePrefix"] = json!(p);
                }
                if let Some(t) = &token {
                    input["NextToken"] = json!(t);
                }
                let out = c.sqs("ListQueues", input).await?;
                if let Some(list) = out.get("QueueUrls").and_then(Value::as_array) {
                    urls.extend(list.iter().filter_map(Value::as_str).map(str::to_owned));
                }
                match out.get("NextToken").and_then(Value::as_str) {
                    Some(t) => token = Some(t.to_owned()),
                    None => break,
                }
            }
            let mut rows = Vec::new();
            let mut items = Vec::new();
            for url in urls {
                let attrs = c
                    .sqs(
                        "GetQueueAttributes",
                        json!({"QueueUrl": url, "AttributeNames": [
                            "ApproximateNumberOfMessages",
                            "ApproximateNumberOfMessagesNotVisible",
                            "ApproximateNumberOfMessagesDelayed"]}),
                    )
                    .await;
                let attrs = match attrs {
                    Ok(a) => a,
                    // Deleted since the listing.
                    Err(CliError::Aws { .. }) => continue,
                    Err(e) => return Err(e),
                };
                let n = |k: &str| -> i64 {
                    attrs
                        .get("Attributes")
                        .and_then(|a| a.get(k))
                        .and_then(Value::as_str)
                        .and_then(|v| v.parse().ok())
                        .unwrap_or(0)
                };
                let (visible, in_flight, delayed) = (
                    n("ApproximateNumberOfMessages"),
                    n("ApproximateNumberOfMessagesNotVisible"),
                    n("ApproximateNumberOfMessagesDelayed"),
                );
                let name = queue_name_of(&url);
                rows.push(vec![
                    name.clone(),
                    visible.to_string(),
                    in_flight.to_string(),
                    delayed.to_string(),
                    url.clone(),
                ]);
                items.push(json!({"name": name, "url": url, "visible": visible,
                    "in_flight": in_flight, "delayed": delayed}));
            }
            match format {
                Format::Json => output::json(&Value::Array(items)),
                Format::Table => {
                    print_table(&["NAME", "VISIBLE", "IN FLIGHT", "DELAYED", "URL"], &rows)
                }
            }
        }
        QueueCommand::Delete { name } => {
            let url = c.queue_url(&name).await?;
            c.sqs("DeleteQueue", json!({"QueueUrl": url})).await?;
            match format {
                Format::Json => output::json(&json!({"deleted": url})),
                Format::Table => println!("deleted {url}"),
            }
        }
        QueueCommand::Purge { name } => {
            let url = c.queue_url(&name).await?;
            c.sqs("PurgeQueue", json!({"QueueUrl": url})).await?;
            match format {
                Format::Json => output::json(&json!({"purged": url})),
                Format::Table => println!("purged {url}"),
            }
        }
        QueueCommand::Attributes { name, set } => {
            let url = c.queue_url(&name).await?;
            let changes = attribute_map(&set)?;
            if !changes.is_empty() {
                c.sqs(
                    "SetQueueAttributes",
                    json!({"QueueUrl": url, "Attributes": changes}),
                )
                .await?;
            }
            let out = c
                .sqs(
                    "GetQueueAttributes",
                    json!({"QueueUrl": url, "AttributeNames": ["All"]}),
                )
                .await?;
            let attrs = out.get("Attributes").cloned().unwrap_or(json!({}));
            match format {
                Format::Json => output::json(&attrs),
                Format::Table => {
                    let rows: Vec<Vec<String>> = attrs
                        .as_object()
                        .map(|m| {
                            m.iter()
                                .map(|(k, v)| vec![k.clone(), v.as_str().unwrap_or("").to_owned()])
                                .collect()
                        })
                        .unwrap_or_default();
                    print_table(&["ATTRIBUTE", "VALUE"], &rows);
                }
            }
        }
    }
    Ok(())
}

async fn send(a: SendArgs) -> Result<(), CliError> {
    let c = a.client.client()?;
    let url = c.queue_url(&a.queue).await?;
    let mut input = json!({"QueueUrl": url, "MessageBody": read_arg(&a.body)?});
    let attrs = message_attributes(&a.attributes)?;
    if !attrs.is_empty() {
        input["MessageAttributes"] = Value::Object(attrs);
    }
    if let Some(d) = a.delay {
        input["DelaySeconds"] = json!(d);
    }
    if let Some(g) = &a.group_id {
        input["MessageGroupId"] = json!(g);
    }
    if let Some(d) = &a.dedup_id {
        input["MessageDeduplicationId"] = json!(d);
    }
    let out = c.sqs("SendMessage", input).await?;
    match a.client.format() {
        Format::Json => output::json(&out),
        Format::Table => println!("{}", client::str_field(&out, "MessageId", "SendMessage")?),
    }
    Ok(())
}

async fn receive(a: ReceiveArgs) -> Result<(), CliError> {
    let c = a.client.client()?;
    let url = c.queue_url(&a.queue).await?;
    let mut input = json!({
        "QueueUrl": url,
        "MaxNumberOfMessages": a.max,
        "WaitTimeSeconds": a.wait,
        "MessageSystemAttributeNames": ["All"],
        "MessageAttributeNames": ["All"],
    });
    if let Some(v) = a.visibility {
        input["VisibilityTimeout"] = json!(v);
    }
    let out = c.sqs("ReceiveMessage", input).await?;
    let messages = out
        .get("Messages")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if a.delete && !messages.is_empty() {
        let entries: Vec<Value> = messages
            .iter()
            .enumerate()
            .map(|(i, m)| json!({"Id": i.to_string(), "ReceiptHandle": m["ReceiptHandle"]}))
            .collect();
        let del = c
            .sqs(
                "DeleteMessageBatch",
                json!({"QueueUrl": url, "Entries": entries}),
            )
            .await?;
        if let Some(failed) = del
            .get("Failed")
            .and_then(Value::as_array)
            .filter(|f| !f.is_empty())
        {
            let first = &failed[0];
            return Err(CliError::Aws {
                code: first["Code"].as_str().unwrap_or("").to_owned(),
                message: format!(
                    "{} of {} deletes failed: {}",
                    failed.len(),
                    messages.len(),
                    first["Message"].as_str().unwrap_or("")
                ),
            });
        }
    }
    match a.client.format() {
        Format::Json => output::json(&Value::Array(messages)),
        Format::Table => {
            if messages.is_empty() {
                eprintln!("no message");
                return Ok(());
            }
            let rows: Vec<Vec<String>> = messages
                .iter()
                .map(|m| {
                    vec![
                        m["MessageId"].as_str().unwrap_or("").to_owned(),
                        m["Attributes"]["ApproximateReceiveCount"]
                            .as_str()
                            .unwrap_or("")
                            .to_owned(),
                        m["Body"].as_str().unwrap_or("").to_owned(),
                    ]
                })
                .collect();
            print_table(&["MESSAGE ID", "RECEIVES", "BODY"], &rows);
        }
    }
    Ok(())
}

fn indexed_attributes(
    params: &mut Vec<(String, String)>,
    prefix: &str,
    attrs: &BTreeMap<String, String>,
) {
    for (i, (k, v)) in attrs.iter().enumerate() {
        params.push((format!("{prefix}.entry.{}.key", i + 1), k.clone()));
        params.push((format!("{prefix}.entry.{}.value", i + 1), v.clone()));
    }
}

async fn topic(a: TopicArgs) -> Result<(), CliError> {
    let c = a.client.client()?;
    let format = a.client.format();
    match a.command {
        TopicCommand::Create { name, attributes } => {
            let mut params = vec![("Name".to_owned(), name)];
            indexed_attributes(&mut params, "Attributes", &attribute_map(&attributes)?);
            let doc = c.sns("CreateTopic", &params).await?;
            let arn = doc
                .find("TopicArn")
                .map(|e| e.text.clone())
                .unwrap_or_default();
            match format {
                Format::Json => output::json(&json!({"TopicArn": arn})),
                Format::Table => println!("{arn}"),
            }
        }
        TopicCommand::List => {
            let arns = c.topic_arns().await?;
            let mut subs_by_topic: BTreeMap<String, Vec<Value>> = BTreeMap::new();
            let mut token: Option<String> = None;
            loop {
                let mut params = Vec::new();
                if let Some(t) = &token {
                    params.push(("NextToken".to_owned(), t.clone()));
                }
                let doc = c.sns("ListSubscriptions", &params).await?;
                for m in doc.find_all("member") {
                    let get = |n: &str| m.child_text(n).unwrap_or("").to_owned();
                    subs_by_topic
                        .entry(get("TopicArn"))
                        .or_default()
                        .push(json!({
                            "SubscriptionArn": get("SubscriptionArn"),
                            "Protocol": get("Protocol"),
                            "Endpoint": get("Endpoint"),
                        }));
                }
                match doc
                    .find("NextToken")
                    .map(|e| e.text.clone())
                    .filter(|t| !t.is_empty())
                {
                    Some(t) => token = Some(t),
                    None => break,
                }
            }
            let items: Vec<Value> = arns
                .iter()
                .map(|arn| {
                    json!({
                        "name": arn.rsplit(':').next().unwrap_or(arn),
                        "arn": arn,
                        "subscriptions": subs_by_topic.get(arn).cloned().unwrap_or_default(),
                    })
                })
                .collect();
            match format {
                Format::Json => output::json(&Value::Array(items)),
                Format::Table => {
                    let rows: Vec<Vec<String>> = items
                        .iter()
                        .map(|t| {
                            let subs: Vec<String> = t["subscriptions"]
                                .as_array()
                                .map(|l| {
                                    l.iter()
                                        .map(|s| {
                                            format!(
                                                "{}:{}",
                                                s["Protocol"].as_str().unwrap_or(""),
                                                s["Endpoint"].as_str().unwrap_or("")
                                            )
                                        })
                                        .collect()
                                })
                                .unwrap_or_default();
                            vec![
                                t["name"].as_str().unwrap_or("").to_owned(),
                                t["arn"].as_str().unwrap_or("").to_owned(),
                                subs.join(", "),
                            ]
                        })
                        .collect();
                    print_table(&["NAME", "ARN", "SUBSCRIPTIONS"], &rows);
                }
            }
        }
        TopicCommand::Delete { name } => {
            let arn = c.topic_arn(&name).await?;
            c.sns("DeleteTopic", &[("TopicArn".to_owned(), arn.clone())])
                .await?;
            match format {
                Format::Json => output::json(&json!({"deleted": arn})),
                Format::Table => println!("deleted {arn}"),
            }
        }
    }
    Ok(())
}

async fn publish(a: PublishArgs) -> Result<(), CliError> {
    let c = a.client.client()?;
    let arn = c.topic_arn(&a.topic).await?;
    let mut params = vec![
        ("TopicArn".to_owned(), arn),
        ("Message".to_owned(), read_arg(&a.message)?),
    ];
    if let Some(s) = a.subject {
        params.push(("Subject".into(), s));
    }
    if let Some(g) = a.group_id {
        params.push(("MessageGroupId".into(), g));
    }
    if let Some(d) = a.dedup_id {
        params.push(("MessageDeduplicationId".into(), d));
    }
    for (i, (name, v)) in message_attributes(&a.attributes)?.into_iter().enumerate() {
        let p = format!("MessageAttributes.entry.{}", i + 1);
        params.push((format!("{p}.Name"), name));
        params.push((
            format!("{p}.Value.DataType"),
            v["DataType"].as_str().unwrap_or("String").to_owned(),
        ));
        if let Some(s) = v["StringValue"].as_str() {
            params.push((format!("{p}.Value.StringValue"), s.to_owned()));
        }
        if let Some(b) = v["BinaryValue"].as_str() {
            params.push((format!("{p}.Value.BinaryValue"), b.to_owned()));
        }
    }
    let doc = c.sns("Publish", &params).await?;
    let id = doc
        .find("MessageId")
        .map(|e| e.text.clone())
        .unwrap_or_default();
    match a.client.format() {
        Format::Json => output::json(&json!({"MessageId": id})),
        Format::Table => println!("{id}"),
    }
    Ok(())
}

async fn subscribe(a: SubscribeArgs) -> Result<(), CliError> {
    let c = a.client.client()?;
    let arn = c.topic_arn(&a.topic).await?;
    let protocol = a.protocol.to_ascii_lowercase();
    // An SQS target is a queue's name or URL, sent as its ARN; an unknown protocol goes
    // as given, for Loft to refuse in SNS's words.
    let sqs = loft_core::model::SubscriptionProtocol::parse(&protocol)
        .is_ok_and(|p| p == loft_core::model::SubscriptionProtocol::Sqs);
    let endpoint = if sqs {
        c.queue_arn(&a.target).await?
    } else {
        a.target.clone()
    };
    let mut params = vec![
        ("TopicArn".to_owned(), arn),
        ("Protocol".to_owned(), protocol),
        ("Endpoint".to_owned(), endpoint),
        ("ReturnSubscriptionArn".to_owned(), "true".to_owned()),
    ];
    indexed_attributes(&mut params, "Attributes", &attribute_map(&a.attributes)?);
    let doc = c.sns("Subscribe", &params).await?;
    let sub = doc
        .find("SubscriptionArn")
        .map(|e| e.text.clone())
        .unwrap_or_default();
    match a.client.format() {
        Format::Json => output::json(&json!({"SubscriptionArn": sub})),
        Format::Table => println!("{sub}"),
    }
    Ok(())
}

async fn redrive(a: RedriveArgs) -> Result<(), CliError> {
    let c = a.client.client()?;
    let source = c.queue_arn(&a.dlq).await?;
    let mut input = json!({"SourceArn": source});
    if let Some(d) = &a.destination {
        input["DestinationArn"] = json!(c.queue_arn(d).await?);
    }
    if let Some(r) = a.rate {
        input["MaxNumberOfMessagesPerSecond"] = json!(r);
    }
    let out = c.sqs("StartMessageMoveTask", input).await?;
    let handle = client::str_field(&out, "TaskHandle", "StartMessageMoveTask")?;
    if !a.wait {
        match a.client.format() {
            Format::Json => output::json(&out),
            Format::Table => println!("{handle}"),
        }
        return Ok(());
    }
    loop {
        let list = c
            .sqs(
                "ListMessageMoveTasks",
                json!({"SourceArn": source, "MaxResults": 10}),
            )
            .await?;
        let task = list
            .get("Results")
            .and_then(Value::as_array)
            .and_then(|r| r.first())
            .cloned()
            .unwrap_or(json!({}));
        let status = task["Status"].as_str().unwrap_or("").to_owned();
        let moved = task["ApproximateNumberOfMessagesMoved"]
            .as_i64()
            .unwrap_or(0);
        let total = task["ApproximateNumberOfMessagesToMove"]
            .as_i64()
            .unwrap_or(0);
        eprint!("\rredrive {status}: {moved} of {total} moved ");
        if status != "RUNNING" {
            eprintln!();
            match a.client.format() {
                Format::Json => output::json(&task),
                Format::Table => println!("{status}: {moved} moved"),
            }
            if status == "FAILED" {
                return Err(CliError::Aws {
                    code: "MoveTaskFailed".into(),
                    message: task["FailureReason"].as_str().unwrap_or("").to_owned(),
                });
            }
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_parse() {
        assert_eq!(
            name_value("A=b=c").unwrap(),
            ("A".to_owned(), "b=c".to_owned())
        );
        assert!(name_value("=x").is_err());
        assert!(name_value("nope").is_err());
        let m = message_attributes(&["n:Number=5".into(), "s=hi".into(), "b:Binary=AAE=".into()])
            .unwrap();
        assert_eq!(m["n"], json!({"DataType": "Number", "StringValue": "5"}));
        assert_eq!(m["s"], json!({"DataType": "String", "StringValue": "hi"}));
        assert_eq!(m["b"], json!({"DataType": "Binary", "BinaryValue": "AAE="}));
        assert!(message_attributes(&["x:Float=1".into()]).is_err());
        assert_eq!(queue_name_of("http://h:1/000000000000/orders"), "orders");
    }
}
