//! The HTTP side of the admin commands: SQS over the AWS JSON 1.0 protocol, SNS over the
//! Query protocol (form in, XML out), and Loft's own `/_loft/` routes, with reqwest.
//! Requests are unsigned (Loft does not check signatures).

use std::fmt;
use std::time::Duration;

use serde_json::Value;

use super::xml::Element;

/// What can go wrong talking to the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CliError {
    /// The server answered with an AWS error: its code (`AWS.SimpleQueueService.NonExistentQueue`,
    /// `NotFound`, ...) and message.
    Aws {
        /// AWS's error code.
        code: String,
        /// AWS's message.
        message: String,
    },
    /// No answer, or one that is not the protocol's (connection refused, bad JSON or XML).
    Transport(String),
    /// A problem with the command line or the input (a bad `--attribute`, a bad JSONL line).
    Usage(String),
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Aws { code, message } => write!(f, "{code}: {message}"),
            CliError::Transport(m) | CliError::Usage(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for CliError {}

/// The SNS Query API version.
pub const SNS_VERSION: &str = "2010-03-31";

/// A client of one Loft (or AWS-compatible) endpoint.
#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
    /// `http://host:port`, no trailing slash.
    pub endpoint: String,
}

impl Client {
    /// A client of `endpoint` (`http://127.0.0.1:9324`, or `https://...`: TLS with rustls,
    /// trusting the platform's root certificates, or those in `SSL_CERT_FILE` instead when
    /// it is set). Requests time out after 60 s (a long poll takes at most 20 s).
    ///
    /// Errors: `Transport` when the HTTP client cannot be built.
    pub fn new(endpoint: &str) -> Result<Client, CliError> {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .connect_timeout(Duration::from_secs(5))
            .user_agent(concat!("loft-cli/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| CliError::Transport(e.to_string()))?;
        Ok(Client {
            http,
            endpoint: endpoint.trim_end_matches('/').to_owned(),
        })
    }

    /// A transport error with its causes (reqwest's own message leaves out why, say an
    /// untrusted certificate).
    fn unreachable(&self, e: reqwest::Error) -> CliError {
        let mut text = e.to_string();
        let mut source = std::error::Error::source(&e);
        while let Some(s) = source {
            let cause = s.to_string();
            if !text.contains(&cause) {
                text.push_str(": ");
                text.push_str(&cause);
            }
            source = s.source();
        }
        CliError::Transport(format!("cannot reach {}: {text}", self.endpoint))
    }

    /// Calls SQS operation `op` (`CreateQueue`, ...) with its JSON input shape; returns the
    /// output shape (`{}` for operations without output).
    ///
    /// Errors: `Aws` with the code after `#` in `__type` and the message; `Transport`.
    pub async fn sqs(&self, op: &str, input: Value) -> Result<Value, CliError> {
        let resp = self
            .http
            .post(format!("{}/", self.endpoint))
            .header("x-amz-target", format!("AmazonSQS.{op}"))
            .header("content-type", "application/x-amz-json-1.0")
            .body(input.to_string())
            .send()
            .await
            .map_err(|e| self.unreachable(e))?;
        let status = resp.status();
        let text = resp.text().await.map_err(|e| self.unreachable(e))?;
        let body: Value = if text.trim().is_empty() {
            Value::Object(Default::default())
        } else {
            serde_json::from_str(&text).map_err(|_| {
                CliError::Transport(format!(
                    "{op}: the answer (HTTP {status}) is not SQS JSON: {}",
                    snippet(&text)
                ))
            })?
        };
        if status.is_success() {
            return Ok(body);
        }
        let code = body
            .get("__type")
            .and_then(Value::as_str)
            .map(|t| t.rsplit('#').next().unwrap_or(t).to_owned())
            .unwrap_or_else(|| format!("HTTP{}", status.as_u16()));
        let message = body
            .get("message")
            .or_else(|| body.get("Message"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        Err(CliError::Aws { code, message })
    }

    /// Calls SNS action `action` with Query parameters; returns the parsed XML response.
    ///
    /// Errors: `Aws` with `<Code>` and `<Message>` of the error document; `Transport`.
    pub async fn sns(
        &self,
        action: &str,
        params: &[(String, String)],
    ) -> Result<Element, CliError> {
        let mut form = form_urlencoded::Serializer::new(String::new());
        form.append_pair("Action", action);
        form.append_pair("Version", SNS_VERSION);
        for (k, v) in params {
            form.append_pair(k, v);
        }
        let resp = self
            .http
            .post(format!("{}/", self.endpoint))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form.finish())
            .send()
            .await
            .map_err(|e| self.unreachable(e))?;
        let status = resp.status();
        let text = resp.text().await.map_err(|e| self.unreachable(e))?;
        let doc = Element::parse(&text).map_err(|e| {
            CliError::Transport(format!(
                "{action}: the answer (HTTP {status}) is not SNS XML ({e}): {}",
                snippet(&text)
            ))
        })?;
        if status.is_success() {
            return Ok(doc);
        }
        let code = doc
            .find("Code")
            .map(|e| e.text.clone())
            .unwrap_or_else(|| format!("HTTP{}", status.as_u16()));
        let message = doc
            .find("Message")
            .map(|e| e.text.clone())
            .unwrap_or_default();
        Err(CliError::Aws { code, message })
    }

    /// `GET` a Loft route (`/_loft/...`) and parse its JSON.
    ///
    /// Errors: `Aws` from the route's `{"error","code"}`; `Transport`.
    pub async fn loft_get(&self, path_and_query: &str) -> Result<Value, CliError> {
        let resp = self
            .http
            .get(format!("{}{path_and_query}", self.endpoint))
            .send()
            .await
            .map_err(|e| self.unreachable(e))?;
        let status = resp.status();
        let text = resp.text().await.map_err(|e| self.unreachable(e))?;
        let body: Value = serde_json::from_str(&text).map_err(|_| {
            CliError::Transport(format!(
                "{path_and_query}: the answer (HTTP {status}) is not JSON: {}",
                snippet(&text)
            ))
        })?;
        if status.is_success() {
            return Ok(body);
        }
        Err(CliError::Aws {
            code: body
                .get("code")
                .and_then(Value::as_str)
                .map_or_else(|| format!("HTTP{}", status.as_u16()), str::to_owned),
            message: body
                .get("error")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned(),
        })
    }

    /// The URL of queue `name` (GetQueueUrl); a `http(s)://` argument is taken as the URL.
    ///
    /// Errors: `Aws` (`AWS.SimpleQueueService.NonExistentQueue`), `Transport`.
    pub async fn queue_url(&self, name: &str) -> Result<String, CliError> {
        if name.starts_with("http://") || name.starts_with("https://") {
            return Ok(name.to_owned());
        }
        let out = self
            .sqs("GetQueueUrl", serde_json::json!({"QueueName": name}))
            .await?;
        str_field(&out, "QueueUrl", "GetQueueUrl")
    }

    /// The ARN of queue `name` (GetQueueAttributes QueueArn); an `arn:` argument is
    /// returned as it is.
    ///
    /// Errors: as [`Client::queue_url`].
    pub async fn queue_arn(&self, name: &str) -> Result<String, CliError> {
        if name.starts_with("arn:") {
            return Ok(name.to_owned());
        }
        let url = self.queue_url(name).await?;
        let out = self
            .sqs(
                "GetQueueAttributes",
                serde_json::json!({"QueueUrl": url, "AttributeNames": ["QueueArn"]}),
            )
            .await?;
        out.get("Attributes")
            .and_then(|a| a.get("QueueArn"))
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| CliError::Transport("GetQueueAttributes returned no QueueArn".into()))
    }

    /// Every topic ARN (ListTopics, all pages).
    ///
    /// Errors: `Aws`, `Transport`.
    pub async fn topic_arns(&self) -> Result<Vec<String>, CliError> {
        let mut out = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let mut params = Vec::new();
            if let Some(t) = &token {
                params.push(("NextToken".to_owned(), t.clone()));
            }
            let doc = self.sns("ListTopics", &params).await?;
            out.extend(doc.find_all("TopicArn").into_iter().map(|e| e.text.clone()));
            match doc
                .find("NextToken")
                .map(|e| e.text.clone())
                .filter(|t| !t.is_empty())
            {
                Some(t) => token = Some(t),
                None => return Ok(out),
            }
        }
    }

    /// The ARN of topic `name`: an `arn:` argument as it is, else the listed topic whose
    /// ARN ends with `:name`.
    ///
    /// Errors: `Aws` `NotFound` when no topic has that name; `Transport`.
    pub async fn topic_arn(&self, name: &str) -> Result<String, CliError> {
        if name.starts_with("arn:") {
            return Ok(name.to_owned());
        }
        let suffix = format!(":{name}");
        self.topic_arns()
            .await?
            .into_iter()
            .find(|a| a.ends_with(&suffix))
            .ok_or_else(|| CliError::Aws {
                code: "NotFound".into(),
                message: format!("Topic does not exist: {name}"),
            })
    }
}

/// A string member of an output shape.
///
/// Errors: `Transport` when it is missing.
pub fn str_field(v: &Value, name: &str, op: &str) -> Result<String, CliError> {
    v.get(name)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| CliError::Transport(format!("{op} returned no {name}")))
}

fn snippet(text: &str) -> String {
    let t: String = text.chars().take(200).collect();
    if t.len() < text.len() {
        format!("{t}...")
    } else {
        t
    }
}
