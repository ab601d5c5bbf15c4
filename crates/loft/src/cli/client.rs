//! The HTTP side of the admin commands: SQS over the AWS JSON 1.0 protocol, SNS over the
//! Query protocol (form in, XML out), and Loft's own `/_loft/` routes, with reqwest.
//!
//! With a [`Signer`] (access key and secret), every request is signed with AWS Signature
//! Version 4 by the server's own signing functions ([`loft_server::sigv4::authorization`]):
//! SQS calls in the `sqs` scope, SNS calls in the `sns` scope (the scope is how Loft tells
//! an SNS Query request from an SQS one), Loft's routes in the `sqs` scope (Loft accepts
//! any service name there). Without one, requests are sent unsigned, which a Loft without
//! credentials accepts. A refusal of the credentials (HTTP 401, or an authentication error
//! code) becomes [`CliError::Auth`], whose message says what to set.

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use loft_server::sigv4;
use reqwest::header::{HeaderValue, AUTHORIZATION, HOST};
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
    /// The server refused the request's credentials: none were sent (HTTP 401,
    /// `MissingAuthenticationToken`) or they are not right (`InvalidClientTokenId`,
    /// `SignatureDoesNotMatch`, ...).
    Auth {
        /// AWS's error code, or `HTTP401`.
        code: String,
        /// The server's message.
        message: String,
        /// The access key the request was signed with; `None` when it was unsigned.
        access_key: Option<String>,
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
            CliError::Auth {
                code,
                message,
                access_key: None,
            } => write!(
                f,
                "{code}: {message}\nthe server requires signed requests: set AWS_ACCESS_KEY_ID \
                 (or --access-key-id) and AWS_SECRET_ACCESS_KEY to one of its access keys"
            ),
            CliError::Auth {
                code,
                message,
                access_key: Some(key),
            } => write!(
                f,
                "{code}: {message}\nthe server refused the credentials of access key {key}: \
                 check that AWS_ACCESS_KEY_ID (or --access-key-id) and AWS_SECRET_ACCESS_KEY \
                 are one of its keys, and this machine's clock"
            ),
            CliError::Transport(m) | CliError::Usage(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for CliError {}

/// The SNS Query API version.
pub const SNS_VERSION: &str = "2010-03-31";

/// The error codes with which AWS (and Loft) refuse a request's credentials.
pub const AUTH_ERROR_CODES: &[&str] = &[
    "MissingAuthenticationToken",
    "InvalidClientTokenId",
    "SignatureDoesNotMatch",
    "IncompleteSignature",
    "RequestExpired",
    "UnrecognizedClientException",
];

/// The credentials requests are signed with (SigV4). `Debug` hides the secret and token.
#[derive(Clone, PartialEq, Eq)]
pub struct Signer {
    /// The access key id.
    pub access_key: String,
    /// Its secret access key.
    pub secret: String,
    /// A session token (`AWS_SESSION_TOKEN`), sent and signed as `x-amz-security-token`.
    pub session_token: Option<String>,
    /// The region of the signature's scope.
    pub region: String,
}

impl fmt::Debug for Signer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Signer")
            .field("access_key", &self.access_key)
            .field("region", &self.region)
            .finish_non_exhaustive()
    }
}

impl Signer {
    /// Signs `req` for `service` at `now` (seconds since the epoch): sets `Host` (the
    /// URL's authority, as it is sent), `x-amz-date`, `x-amz-security-token` with a
    /// session token, and `Authorization`. The headers already set (`content-type`,
    /// `x-amz-target`) are signed too.
    ///
    /// Errors: `Usage` for a URL without a host or a credential that is not a valid
    /// header value.
    pub fn sign(
        &self,
        req: &mut reqwest::Request,
        service: &str,
        now: i64,
    ) -> Result<(), CliError> {
        let url = req.url().clone();
        let host = match (url.host_str(), url.port()) {
            (Some(h), Some(p)) => format!("{h}:{p}"),
            (Some(h), None) => h.to_owned(),
            (None, _) => {
                return Err(CliError::Usage(format!(
                    "cannot sign a request to {url}: it names no host"
                )))
            }
        };
        let amz_date = sigv4::format_amz_date(now);
        let value = |what: &str, v: &str| {
            HeaderValue::from_str(v)
                .map_err(|_| CliError::Usage(format!("{what} is not a valid HTTP header value")))
        };
        let headers = req.headers_mut();
        headers.insert(HOST, value("the endpoint's host", &host)?);
        headers.insert("x-amz-date", value("the date", &amz_date)?);
        if let Some(token) = &self.session_token {
            headers.insert("x-amz-security-token", value("AWS_SESSION_TOKEN", token)?);
        }
        let body = req.body().and_then(|b| b.as_bytes()).unwrap_or(b"");
        let authorization = sigv4::authorization(
            &sigv4::Request {
                method: req.method().as_str(),
                path: url.path(),
                query: url.query(),
                headers: req.headers(),
                authority: None,
                body,
            },
            &sigv4::SigningParams {
                access_key: &self.access_key,
                secret: &self.secret,
                region: &self.region,
                service,
                amz_date: &amz_date,
            },
        );
        let authorization = value("the access key id", &authorization)?;
        req.headers_mut().insert(AUTHORIZATION, authorization);
        Ok(())
    }
}

/// A client of one Loft (or AWS-compatible) endpoint.
#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
    /// `http://host:port`, no trailing slash.
    pub endpoint: String,
    /// Signs every request when set.
    signer: Option<Signer>,
}

impl Client {
    /// A client of `endpoint` (`http://127.0.0.1:9324`, or `https://...`: TLS with rustls,
    /// trusting the platform's root certificates, or those in `SSL_CERT_FILE` instead when
    /// it is set) that signs its requests with `signer` when given. Requests time out after
    /// 60 s (a long poll takes at most 20 s).
    ///
    /// Errors: `Transport` when the HTTP client cannot be built.
    pub fn new(endpoint: &str, signer: Option<Signer>) -> Result<Client, CliError> {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .connect_timeout(Duration::from_secs(5))
            .user_agent(concat!("loft-cli/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| CliError::Transport(e.to_string()))?;
        Ok(Client {
            http,
            endpoint: endpoint.trim_end_matches('/').to_owned(),
            signer,
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

    /// Builds `req`, signs it for `service` when the client has a signer, and sends it.
    async fn send(
        &self,
        req: reqwest::RequestBuilder,
        service: &str,
    ) -> Result<reqwest::Response, CliError> {
        let mut req = req
            .build()
            .map_err(|e| CliError::Usage(format!("cannot build the request: {e}")))?;
        if let Some(signer) = &self.signer {
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs() as i64);
            signer.sign(&mut req, service, now)?;
        }
        self.http
            .execute(req)
            .await
            .map_err(|e| self.unreachable(e))
    }

    /// The error of a failed answer: [`CliError::Auth`] when it refuses the credentials
    /// (HTTP 401, or one of [`AUTH_ERROR_CODES`]), else [`CliError::Aws`].
    fn failure(&self, status: reqwest::StatusCode, code: String, message: String) -> CliError {
        if status == reqwest::StatusCode::UNAUTHORIZED || AUTH_ERROR_CODES.contains(&code.as_str())
        {
            CliError::Auth {
                code,
                message,
                access_key: self.signer.as_ref().map(|s| s.access_key.clone()),
            }
        } else {
            CliError::Aws { code, message }
        }
    }

    /// Calls SQS operation `op` (`CreateQueue`, ...) with its JSON input shape; returns the
    /// output shape (`{}` for operations without output).
    ///
    /// Errors: `Aws` with the code after `#` in `__type` and the message; `Transport`.
    pub async fn sqs(&self, op: &str, input: Value) -> Result<Value, CliError> {
        let req = self
            .http
            .post(format!("{}/", self.endpoint))
            .header("x-amz-target", format!("AmazonSQS.{op}"))
            .header("content-type", "application/x-amz-json-1.0")
            .body(input.to_string());
        let resp = self.send(req, "sqs").await?;
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
        Err(self.failure(status, code, message))
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
        let req = self
            .http
            .post(format!("{}/", self.endpoint))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form.finish());
        let resp = self.send(req, "sns").await?;
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
        Err(self.failure(status, code, message))
    }

    /// `GET` a Loft route (`/_loft/...`) and parse its JSON.
    ///
    /// Errors: `Aws` from the route's `{"error","code"}`; `Transport`.
    pub async fn loft_get(&self, path_and_query: &str) -> Result<Value, CliError> {
        let req = self.http.get(format!("{}{path_and_query}", self.endpoint));
        let resp = self.send(req, "sqs").await?;
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
        let error = body.get("error").and_then(Value::as_str).unwrap_or("");
        let (code, message) = match body.get("code").and_then(Value::as_str) {
            Some(code) => (code.to_owned(), error.to_owned()),
            // Loft's authentication answers: `{"error": "CODE: message"}`.
            None => match error.split_once(": ") {
                Some((code, message)) if AUTH_ERROR_CODES.contains(&code) => {
                    (code.to_owned(), message.to_owned())
                }
                _ => (format!("HTTP{}", status.as_u16()), error.to_owned()),
            },
        };
        Err(self.failure(status, code, message))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn signer(token: Option<&str>) -> Signer {
        Signer {
            access_key: "AKID".into(),
            secret: "s3cret".into(),
            session_token: token.map(str::to_owned),
            region: "eu-west-1".into(),
        }
    }

    /// What the server's verifier says of a request the CLI signed.
    fn verify(req: &reqwest::Request, now: i64, secret: &str) -> Result<sigv4::Verified, String> {
        let body = req.body().and_then(|b| b.as_bytes()).unwrap_or(b"");
        let received = sigv4::Request {
            method: req.method().as_str(),
            path: req.url().path(),
            query: req.url().query(),
            headers: req.headers(),
            authority: None,
            body,
        };
        sigv4::verify(&received, now, |k| (k == "AKID").then_some(secret))
            .map_err(|e| e.code.aws_code().to_owned())
    }

    #[test]
    fn a_signed_request_verifies_with_its_host_date_and_token() {
        let http = reqwest::Client::new();
        let now = 1_700_000_000;
        let mut req = http
            .post("http://127.0.0.1:9324/")
            .header("x-amz-target", "AmazonSQS.ListQueues")
            .header("content-type", "application/x-amz-json-1.0")
            .body("{}")
            .build()
            .unwrap();
        signer(Some("TOKEN")).sign(&mut req, "sqs", now).unwrap();
        let h = req.headers();
        assert_eq!(h["host"], "127.0.0.1:9324");
        assert_eq!(h["x-amz-date"], sigv4::format_amz_date(now));
        assert_eq!(h["x-amz-security-token"], "TOKEN");
        let auth = h["authorization"].to_str().unwrap();
        assert!(
            auth.starts_with(
                "AWS4-HMAC-SHA256 Credential=AKID/20231114/eu-west-1/sqs/aws4_request, \
                 SignedHeaders=content-type;host;x-amz-date;x-amz-security-token;x-amz-target, \
                 Signature="
            ),
            "{auth}"
        );
        let who = verify(&req, now, "s3cret").unwrap();
        assert_eq!(
            (who.access_key.as_str(), who.service.as_str()),
            ("AKID", "sqs")
        );
        assert_eq!(
            verify(&req, now, "other"),
            Err("SignatureDoesNotMatch".into())
        );
    }

    #[test]
    fn a_get_with_an_encoded_path_and_query_verifies() {
        let http = reqwest::Client::new();
        let now = 1_700_000_000;
        let mut req = http
            .get("http://localhost/_loft/queues/a%20b/messages?limit=1000&after=5")
            .build()
            .unwrap();
        signer(None).sign(&mut req, "sqs", now).unwrap();
        assert_eq!(req.headers()["host"], "localhost");
        assert!(!req.headers().contains_key("x-amz-security-token"));
        assert!(verify(&req, now, "s3cret").is_ok());
    }

    #[test]
    fn debug_output_hides_the_secret_and_token() {
        let shown = format!("{:?}", signer(Some("TOKEN")));
        assert!(shown.contains("AKID"), "{shown}");
        assert!(
            !shown.contains("s3cret") && !shown.contains("TOKEN"),
            "{shown}"
        );
    }

    #[test]
    fn refusals_of_the_credentials_become_auth_errors() {
        let c = Client::new("http://127.0.0.1:1", None).unwrap();
        let e = c.failure(
            reqwest::StatusCode::FORBIDDEN,
            "MissingAuthenticationToken".into(),
            "m".into(),
        );
        assert!(
            matches!(
                e,
                CliError::Auth {
                    access_key: None,
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(e.to_string().contains("set AWS_ACCESS_KEY_ID"), "{e}");
        let e = c.failure(
            reqwest::StatusCode::UNAUTHORIZED,
            "HTTP401".into(),
            "m".into(),
        );
        assert!(matches!(e, CliError::Auth { .. }), "{e:?}");
        // OverLimit is a 403 too, and no authentication error.
        let e = c.failure(
            reqwest::StatusCode::FORBIDDEN,
            "OverLimit".into(),
            "m".into(),
        );
        assert!(matches!(e, CliError::Aws { .. }), "{e:?}");
        let signed = Client::new("http://127.0.0.1:1", Some(signer(None))).unwrap();
        let e = signed.failure(
            reqwest::StatusCode::FORBIDDEN,
            "SignatureDoesNotMatch".into(),
            "m".into(),
        );
        assert!(
            matches!(&e, CliError::Auth { access_key: Some(k), .. } if k == "AKID"),
            "{e:?}"
        );
        assert!(
            e.to_string()
                .contains("refused the credentials of access key AKID"),
            "{e}"
        );
    }
}
