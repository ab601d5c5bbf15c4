//! `loft export QUEUE > file.jsonl` and `loft import QUEUE < file.jsonl`.
//!
//! Export finds the queue's URL (GetQueueUrl, so `--region` and the caller's account
//! apply, as to every other command) and reads through Loft's peek route
//! (`GET /_loft/queues/{ACCOUNT/[REGION/]NAME}/messages`), which
//! does not claim messages: nothing is received, visibility, receive counts and receipt
//! handles stay as they are, and in-flight and delayed messages are exported too. It needs
//! a Loft server (AWS has no such call). One JSON object per line:
//!
//! ```json
//! {"message_id":"...","body":"...","message_attributes":{"k":{"DataType":"String","StringValue":"v"}},
//!  "group_id":null,"dedup_id":null,"sent_timestamp":1700000000000,"receive_count":0,"state":"visible"}
//! ```
//!
//! Import sends each line's `body` and `message_attributes` (and, to a FIFO queue,
//! `group_id`, with `dedup_id` or else the original `message_id` as the deduplication id)
//! with SendMessageBatch, ten at a time, in file order. Other fields are ignored, so a
//! line may be just `{"body":"..."}`. Progress goes to stderr.

use std::io::{BufRead, IsTerminal, Write};

use serde_json::{json, Value};

use super::client::CliError;
use super::ClientArgs;

/// Messages per peek request (the route's maximum).
pub const EXPORT_PAGE: u32 = 1000;

/// Progress on stderr: rewritten in place on a terminal, one line per update otherwise
/// (at most every `every` items, and at the end).
struct Progress {
    verb: &'static str,
    queue: String,
    tty: bool,
    last: u64,
    every: u64,
}

impl Progress {
    fn new(verb: &'static str, queue: &str) -> Progress {
        let tty = std::io::stderr().is_terminal();
        Progress {
            verb,
            queue: queue.to_owned(),
            tty,
            last: 0,
            every: if tty { 1 } else { 1000 },
        }
    }

    fn update(&mut self, n: u64) {
        if n < self.last + self.every {
            return;
        }
        self.last = n;
        let mut e = std::io::stderr().lock();
        if self.tty {
            let _ = write!(e, "\r{} {n} messages...", self.verb);
        } else {
            let _ = writeln!(e, "{} {n} messages...", self.verb);
        }
    }

    fn done(&self, n: u64, failed: u64) {
        let mut e = std::io::stderr().lock();
        if self.tty {
            let _ = write!(e, "\r");
        }
        let prep = if self.verb == "exported" {
            "from"
        } else {
            "to"
        };
        if failed > 0 {
            let _ = writeln!(
                e,
                "{} {n} messages {prep} {}; {failed} failed",
                self.verb, self.queue
            );
        } else {
            let _ = writeln!(e, "{} {n} messages {prep} {}", self.verb, self.queue);
        }
    }
}

/// The export line of one message from the peek route.
fn export_line(m: &Value) -> Value {
    json!({
        "message_id": m["message_id"],
        "body": m["body"],
        "message_attributes": m["message_attributes"],
        "group_id": m["group_id"],
        "dedup_id": m["dedup_id"],
        "sent_timestamp": m["sent_timestamp"],
        "receive_count": m["receive_count"],
        "state": m["state"],
    })
}

/// `loft export QUEUE`: every message as one JSON line on stdout.
///
/// Errors: the queue does not exist, the server is not Loft, stdout fails.
pub async fn export(args: ClientArgs, queue: &str) -> Result<(), CliError> {
    let c = args.client()?;
    // The queue's URL (GetQueueUrl in the signature's region and the caller's account)
    // names its account and, outside Loft's default region, its region: the peek route
    // takes them as `ACCOUNT/[REGION/]NAME`.
    let url = c.queue_url(queue).await?;
    let not_a_queue = |_| CliError::Usage(format!("{url} is not a queue URL"));
    let parts = loft_server::aws::sqs::QueueUrlParts::parse(&url).map_err(not_a_queue)?;
    let name = loft_server::aws::sqs::queue_name(&url).map_err(not_a_queue)?;
    let key = match (parts.account, parts.region) {
        (Some(account), Some(region)) => format!("{account}/{region}/{name}"),
        (Some(account), None) => format!("{account}/{name}"),
        _ => name.clone(),
    };
    // A path segment: form encoding's `+` for a space would be a literal `+` there (and
    // a `+` of the name is already `%2B`).
    let encoded = form_urlencoded::byte_serialize(key.as_bytes())
        .collect::<String>()
        .replace('+', "%20");
    let mut progress = Progress::new("exported", &name);
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut after: Option<String> = None;
    let mut n = 0u64;
    loop {
        let mut path = format!("/_loft/queues/{encoded}/messages?limit={EXPORT_PAGE}");
        if let Some(a) = &after {
            // The cursor is base64 (`+`, `/`, `=`): encoded as a query value.
            let a: String = form_urlencoded::byte_serialize(a.as_bytes()).collect();
            path.push_str(&format!("&after={a}"));
        }
        let page = c.loft_get(&path).await?;
        let messages = page["messages"].as_array().cloned().unwrap_or_default();
        for m in &messages {
            writeln!(out, "{}", export_line(m))
                .map_err(|e| CliError::Usage(format!("cannot write stdout: {e}")))?;
            n += 1;
        }
        progress.update(n);
        match page["next"].as_str() {
            Some(next) if !messages.is_empty() => after = Some(next.to_owned()),
            _ => break,
        }
    }
    out.flush()
        .map_err(|e| CliError::Usage(format!("cannot write stdout: {e}")))?;
    progress.done(n, 0);
    Ok(())
}

/// One batch entry from an import line.
///
/// Errors: `Usage` when the line is not a JSON object with a string `body`.
fn entry(line: &str, line_no: usize, fifo: bool) -> Result<Value, CliError> {
    let bad = |why: &str| CliError::Usage(format!("stdin line {line_no}: {why}"));
    let v: Value = serde_json::from_str(line).map_err(|e| bad(&format!("not JSON: {e}")))?;
    let body = v
        .get("body")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("no string \"body\""))?;
    let mut e = json!({"MessageBody": body});
    if let Some(attrs) = v
        .get("message_attributes")
        .filter(|a| a.as_object().is_some_and(|o| !o.is_empty()))
    {
        e["MessageAttributes"] = attrs.clone();
    }
    if fifo {
        let group = v
            .get("group_id")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("a FIFO queue needs \"group_id\""))?;
        e["MessageGroupId"] = json!(group);
        if let Some(d) = v
            .get("dedup_id")
            .and_then(Value::as_str)
            .or_else(|| v.get("message_id").and_then(Value::as_str))
        {
            e["MessageDeduplicationId"] = json!(d);
        }
    }
    Ok(e)
}

/// `loft import QUEUE`: sends each stdin line's message (see the module doc).
///
/// Errors: a malformed line (nothing after it is sent), the queue does not exist, or some
/// entries failed (all others are sent; the first failure is reported).
pub async fn import(args: ClientArgs, queue: &str) -> Result<(), CliError> {
    let c = args.client()?;
    let url = c.queue_url(queue).await?;
    let name = super::queue_name_of(&url);
    let fifo = name.ends_with(".fifo");
    let mut progress = Progress::new("imported", &name);
    let stdin = std::io::stdin();
    let mut batch = Batch::default();
    let mut lines = stdin.lock().lines().enumerate();
    loop {
        let next = lines.next();
        if let Some((i, line)) = &next {
            let line = line
                .as_ref()
                .map_err(|e| CliError::Usage(format!("cannot read stdin: {e}")))?;
            if !line.trim().is_empty() {
                let e = entry(line, i + 1, fifo)?;
                let size = entry_bytes(&e);
                // SendMessageBatch refuses more than 1 MiB in all (BatchRequestTooLong):
                // an entry that would pass it goes in the next batch.
                if !batch.entries.is_empty() && batch.bytes + size > MAX_BATCH_BYTES {
                    batch.send(&c, &url).await?;
                    progress.update(batch.sent);
                }
                batch.push(e, size);
            }
        }
        if batch.entries.len() == 10 || (next.is_none() && !batch.entries.is_empty()) {
            batch.send(&c, &url).await?;
            progress.update(batch.sent);
        }
        if next.is_none() {
            break;
        }
    }
    progress.done(batch.sent, batch.failed);
    match batch.first_failure {
        Some(CliError::Aws { code, message }) => Err(CliError::Aws {
            code,
            message: format!(
                "{} messages were not imported; the first: {message}",
                batch.failed
            ),
        }),
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// SendMessageBatch's limit on the sum of its messages' sizes, bytes (SQS API Reference,
/// SendMessageBatch: "the sum of all the messages' lengths ... can't exceed 1 MiB").
const MAX_BATCH_BYTES: usize = 1_048_576;

/// What an entry counts toward [`MAX_BATCH_BYTES`], as SQS counts a message's size: its
/// body and each attribute's name, type and value (a binary value counted by its base64
/// text, which is longer than its bytes, so a batch never comes out too long).
fn entry_bytes(e: &Value) -> usize {
    let body = e["MessageBody"].as_str().map_or(0, str::len);
    let attributes = e["MessageAttributes"].as_object().map_or(0, |attrs| {
        attrs
            .iter()
            .map(|(name, v)| {
                let field = |f: &str| v[f].as_str().map_or(0, str::len);
                name.len() + field("DataType") + field("StringValue") + field("BinaryValue")
            })
            .sum()
    });
    body + attributes
}

/// The import's batch being filled, and what the sent ones did.
#[derive(Default)]
struct Batch {
    entries: Vec<Value>,
    bytes: usize,
    sent: u64,
    failed: u64,
    first_failure: Option<CliError>,
}

impl Batch {
    fn push(&mut self, mut e: Value, size: usize) {
        e["Id"] = json!(self.entries.len().to_string());
        self.entries.push(e);
        self.bytes += size;
    }

    /// Sends the entries with SendMessageBatch and empties the batch.
    ///
    /// Errors: the request failing as a whole (an entry's failure is counted instead).
    async fn send(&mut self, c: &super::client::Client, url: &str) -> Result<(), CliError> {
        let entries = std::mem::take(&mut self.entries);
        self.bytes = 0;
        let out = c
            .sqs(
                "SendMessageBatch",
                json!({"QueueUrl": url, "Entries": entries}),
            )
            .await?;
        self.sent += out["Successful"].as_array().map_or(0, Vec::len) as u64;
        if let Some(f) = out["Failed"].as_array().filter(|f| !f.is_empty()) {
            self.failed += f.len() as u64;
            if self.first_failure.is_none() {
                self.first_failure = Some(CliError::Aws {
                    code: f[0]["Code"].as_str().unwrap_or("").to_owned(),
                    message: f[0]["Message"].as_str().unwrap_or("").to_owned(),
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The entry of a standard queue's import line with `body` and one String attribute,
    /// `k` = `v`.
    fn entry_with_attribute(body: &str) -> Value {
        let line = json!({
            "body": body,
            "message_attributes": {"k": {"DataType": "String", "StringValue": "v"}},
        });
        entry(&line.to_string(), 1, false).unwrap()
    }

    #[test]
    fn import_lines_become_batch_entries() {
        let e = entry_with_attribute("hi");
        assert_eq!(e["MessageBody"], "hi");
        assert_eq!(e["MessageAttributes"]["k"]["StringValue"], "v");
        assert!(e.get("MessageGroupId").is_none());
        let f = entry(r#"{"body":"x","group_id":"g","message_id":"m1"}"#, 1, true).unwrap();
        assert_eq!(f["MessageGroupId"], "g");
        assert_eq!(f["MessageDeduplicationId"], "m1");
        let err = entry(r#"{"bdy":"x"}"#, 7, false).unwrap_err();
        assert!(err.to_string().contains("line 7"), "{err}");
        assert!(entry(r#"{"body":"x"}"#, 1, true).is_err());
    }

    #[test]
    fn an_entry_counts_its_body_and_attributes() {
        let e = entry_with_attribute("hello");
        assert_eq!(entry_bytes(&e), 5 + 1 + 6 + 1);
    }
}
