//! A minimal SQS client over the AWS JSON 1.0 protocol: one HTTP/1.1 connection, one
//! request in flight, reconnecting after a broken connection.
//!
//! The bench opens exactly one [`Client`] per `--connections`, so the number of TCP
//! connections the server sees is the number asked for (a pooled client would open
//! and close connections behind our back).

use std::fmt;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper::header::{AUTHORIZATION, CONTENT_TYPE, HOST};
use hyper::{Method, Request, Uri};
use hyper_util::rt::TokioIo;
use serde::de::DeserializeOwned;
use serde::Serialize;
use tokio::net::TcpStream;

/// Where the requests go: an `http://host[:port][/path]` URL split for a raw HTTP/1.1
/// client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// `host:port` to connect to (port 80 when the URL names none).
    pub connect: String,
    /// Value of the `Host` header: the URL's authority as written.
    pub host: String,
    /// Request path: `/` unless the URL names one.
    pub path: String,
}

impl Endpoint {
    /// Parses `--endpoint`. Only `http://` is accepted: the bench speaks no TLS.
    pub fn parse(url: &str) -> Result<Endpoint, String> {
        let uri: Uri = url
            .parse()
            .map_err(|e| format!("--endpoint {url:?} is not a URL: {e}"))?;
        match uri.scheme_str() {
            Some("http") => {}
            Some("https") => {
                return Err(format!(
                "--endpoint {url:?}: https is not supported (the bench speaks no TLS); use http://"
            ))
            }
            Some(other) => {
                return Err(format!(
                    "--endpoint {url:?}: unsupported scheme {other:?}; use http://"
                ))
            }
            None => {
                return Err(format!(
                    "--endpoint {url:?} needs a scheme, e.g. http://127.0.0.1:9324"
                ))
            }
        }
        let authority = uri
            .authority()
            .ok_or_else(|| format!("--endpoint {url:?} names no host"))?;
        if authority.as_str().contains('@') {
            return Err(format!(
                "--endpoint {url:?}: user information in the URL is not supported"
            ));
        }
        if uri.query().is_some() {
            return Err(format!(
                "--endpoint {url:?}: a query string is not supported"
            ));
        }
        let port = authority.port_u16().unwrap_or(80);
        let path = match uri.path() {
            "" => "/".to_string(),
            p => p.to_string(),
        };
        Ok(Endpoint {
            connect: format!("{}:{port}", authority.host()),
            host: authority.as_str().to_string(),
            path,
        })
    }
}

/// Why a call failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError {
    /// No answer: connecting, writing or reading failed.
    Transport(String),
    /// The service answered with a non-2xx status.
    Service {
        /// HTTP status code.
        status: u16,
        /// Error code: the part of `__type` after `#`, else the `x-amzn-query-error`
        /// code, else `HTTP <status>`.
        code: String,
        /// The error's `message`, when there is one.
        message: String,
    },
    /// A 2xx answer whose body is not the JSON the operation returns.
    BadResponse(String),
}

impl CallError {
    /// A short name to count errors by: the service's error code, `transport` or
    /// `bad-response`.
    pub fn kind(&self) -> String {
        match self {
            CallError::Transport(_) => "transport".to_string(),
            CallError::Service { code, .. } => code.clone(),
            CallError::BadResponse(_) => "bad-response".to_string(),
        }
    }

    /// Whether the answer says a signature is missing or malformed, so that a retry
    /// with a SigV4-shaped `Authorization` header may get through.
    pub fn wants_auth(&self) -> bool {
        match self {
            CallError::Service { status, code, .. } => {
                *status == 401
                    || *status == 403
                    || ["Authentication", "Signature", "Security", "Auth"]
                        .iter()
                        .any(|w| code.contains(w))
            }
            _ => false,
        }
    }

    /// Builds the error of a non-2xx answer from its status, its
    /// `x-amzn-query-error` header and its body.
    pub fn from_response(status: u16, query_error: Option<&str>, body: &[u8]) -> CallError {
        let json: Option<serde_json::Value> = serde_json::from_slice(body).ok();
        let field = |names: &[&str]| -> Option<String> {
            let obj = json.as_ref()?.as_object()?;
            names
                .iter()
                .find_map(|n| obj.get(*n).and_then(|v| v.as_str()).map(str::to_string))
        };
        let code = field(&["__type", "code", "Code"])
            .map(|t| t.rsplit('#').next().unwrap_or(&t).to_string())
            .filter(|c| !c.is_empty())
            .or_else(|| {
                query_error
                    .and_then(|h| h.split(';').next())
                    .map(str::to_string)
            })
            .unwrap_or_else(|| format!("HTTP {status}"));
        let message = field(&["message", "Message"]).unwrap_or_else(|| {
            // Not an SQS JSON error: show the start of the body on one line.
            let text = String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned();
            format!(
                "not an SQS JSON answer: {}",
                text.split_whitespace().collect::<Vec<_>>().join(" ")
            )
        });
        CallError::Service {
            status,
            code,
            message,
        }
    }
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallError::Transport(e) => write!(f, "transport error: {e}"),
            CallError::Service {
                status,
                code,
                message,
            } if code.starts_with("HTTP ") => write!(f, "{code}: {message}"),
            CallError::Service {
                status,
                code,
                message,
            } => write!(f, "{code} (HTTP {status}): {message}"),
            CallError::BadResponse(e) => write!(f, "unexpected response: {e}"),
        }
    }
}

/// One connection to the endpoint, with at most one request in flight.
pub struct Client {
    endpoint: Arc<Endpoint>,
    auth: bool,
    key: Option<Arc<SigningKey>>,
    sender: Option<SendRequest<Full<Bytes>>>,
}

/// A real access key to sign with: `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY` from the
/// environment, region `AWS_REGION` (else `us-east-1`), service `sqs`.
#[derive(Debug, Clone)]
pub struct SigningKey {
    id: String,
    secret: String,
    region: String,
}

impl SigningKey {
    /// The key of the environment, when both variables are set and not empty.
    pub fn from_env() -> Option<SigningKey> {
        let var = |n: &str| std::env::var(n).ok().filter(|v| !v.is_empty());
        Some(SigningKey {
            id: var("AWS_ACCESS_KEY_ID")?,
            secret: var("AWS_SECRET_ACCESS_KEY")?,
            region: var("AWS_REGION").unwrap_or_else(|| "us-east-1".into()),
        })
    }

    /// The SigV4 `Authorization` of a `POST` of `body` to `endpoint` with `X-Amz-Target:
    /// AmazonSQS.{op}` at `stamp` (AWS General Reference, "Signature Version 4 signing
    /// process"; the headers the client sends: content-type, host, x-amz-date,
    /// x-amz-target).
    /// The SigV4 `Authorization` header of a request: `method` on `path` with
    /// `content_type`, the `x-amz-target` header when given (SQS JSON, service `sqs`;
    /// without it a REST call, service `lambda`), signed at `stamp`.
    fn authorization(
        &self,
        endpoint: &Endpoint,
        request: (&Method, &str, &str, Option<&str>),
        stamp: &str,
        body: &[u8],
    ) -> String {
        use sha2::{Digest, Sha256};
        let (method, uri, content_type, target) = request;
        let date = &stamp[..8];
        let (path, query) = uri.split_once('?').unwrap_or((uri, ""));
        let mut query: Vec<&str> = query.split('&').filter(|q| !q.is_empty()).collect();
        query.sort_unstable();
        let (signed, target_line, service) = match target {
            Some(t) => (
                "content-type;host;x-amz-date;x-amz-target",
                format!("x-amz-target:{t}\n"),
                "sqs",
            ),
            None => ("content-type;host;x-amz-date", String::new(), "lambda"),
        };
        let canonical = format!(
            "{method}\n{path}\n{}\ncontent-type:{content_type}\nhost:{}\nx-amz-date:{stamp}\n{target_line}\n{signed}\n{}",
            query.join("&"),
            endpoint.host,
            hex::encode(Sha256::digest(body))
        );
        let scope = format!("{date}/{}/{service}/aws4_request", self.region);
        let to_sign = format!(
            "AWS4-HMAC-SHA256\n{stamp}\n{scope}\n{}",
            hex::encode(Sha256::digest(canonical.as_bytes()))
        );
        let k_date = hmac(format!("AWS4{}", self.secret).as_bytes(), date.as_bytes());
        let k_region = hmac(&k_date, self.region.as_bytes());
        let k_service = hmac(&k_region, service.as_bytes());
        let k_signing = hmac(&k_service, b"aws4_request");
        let signature = hex::encode(hmac(&k_signing, to_sign.as_bytes()));
        format!(
            "AWS4-HMAC-SHA256 Credential={}/{scope}, SignedHeaders={signed}, Signature={signature}",
            self.id
        )
    }
}

/// HMAC-SHA256 (RFC 2104).
fn hmac(key: &[u8], data: &[u8]) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    let mut block = [0u8; 64];
    if key.len() > 64 {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let mut inner = Sha256::new();
    inner.update(block.map(|b| b ^ 0x36));
    inner.update(data);
    let mut outer = Sha256::new();
    outer.update(block.map(|b| b ^ 0x5c));
    outer.update(inner.finalize());
    outer.finalize().into()
}

impl Client {
    /// A client that connects on its first call. With `auth`, every request carries a
    /// SigV4 `Authorization` header: signed by the environment's key ([`SigningKey`]) when
    /// it has one, else SigV4-shaped with a signature of zeros (enough for an endpoint that
    /// wants the header present, useless against one that checks it).
    pub fn new(endpoint: Arc<Endpoint>, auth: bool) -> Client {
        Client {
            endpoint,
            auth,
            key: SigningKey::from_env().map(Arc::new),
            sender: None,
        }
    }

    async fn connect(&self) -> Result<SendRequest<Full<Bytes>>, CallError> {
        let stream = TcpStream::connect(&self.endpoint.connect)
            .await
            .map_err(|e| CallError::Transport(format!("connect {}: {e}", self.endpoint.connect)))?;
        let _ = stream.set_nodelay(true);
        let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| CallError::Transport(format!("handshake: {e}")))?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Ok(sender)
    }

    /// Calls `AmazonSQS.<op>` with `input` as the JSON body and decodes the answer.
    /// An empty 2xx body decodes as `{}`.
    pub async fn call<I: Serialize, O: DeserializeOwned>(
        &mut self,
        op: &'static str,
        input: &I,
    ) -> Result<O, CallError> {
        let body = serde_json::to_vec(input)
            .map_err(|e| CallError::Transport(format!("cannot encode the request: {e}")))?;
        let answer = self.post(op, body).await?;
        let text: &[u8] = if answer.iter().all(u8::is_ascii_whitespace) {
            b"{}"
        } else {
            &answer
        };
        serde_json::from_slice(text).map_err(|e| {
            CallError::BadResponse(format!(
                "{op}: {e}: {}",
                String::from_utf8_lossy(&text[..text.len().min(200)])
            ))
        })
    }

    /// A REST call (the Lambda API): `method` on `path` (under the endpoint's base path)
    /// with a JSON `body`; answers the body of a 2xx answer.
    pub async fn rest(
        &mut self,
        method: Method,
        path: &str,
        body: Vec<u8>,
    ) -> Result<Bytes, CallError> {
        let base = self.endpoint.path.trim_end_matches('/');
        let uri = format!("{base}{path}");
        self.exchange(method, &uri, None, "application/json", body)
            .await
    }

    async fn post(&mut self, op: &'static str, body: Vec<u8>) -> Result<Bytes, CallError> {
        let uri = self.endpoint.path.clone();
        self.exchange(
            Method::POST,
            &uri,
            Some(format!("AmazonSQS.{op}")),
            "application/x-amz-json-1.0",
            body,
        )
        .await
    }

    async fn exchange(
        &mut self,
        method: Method,
        uri: &str,
        target: Option<String>,
        content_type: &'static str,
        body: Vec<u8>,
    ) -> Result<Bytes, CallError> {
        // A sender is put back only after a complete exchange: after any failure the
        // next call opens a fresh connection.
        let mut sender = match self.sender.take() {
            Some(s) if !s.is_closed() => s,
            _ => self.connect().await?,
        };
        if sender.ready().await.is_err() {
            sender = self.connect().await?;
            sender
                .ready()
                .await
                .map_err(|e| CallError::Transport(format!("connection not ready: {e}")))?;
        }
        let mut req = Request::builder()
            .method(method.clone())
            .uri(uri)
            .header(HOST, self.endpoint.host.as_str())
            .header(CONTENT_TYPE, content_type);
        if let Some(t) = &target {
            req = req.header("x-amz-target", t.as_str());
        }
        if self.auth {
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0);
            let stamp = amz_date(now);
            let authorization = match &self.key {
                Some(key) => key.authorization(
                    &self.endpoint,
                    (&method, uri, content_type, target.as_deref()),
                    &stamp,
                    &body,
                ),
                None => fake_authorization(&stamp),
            };
            req = req
                .header(AUTHORIZATION, authorization)
                .header("x-amz-date", stamp);
        }
        let req = req
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| CallError::Transport(format!("cannot build the request: {e}")))?;
        let resp = sender
            .send_request(req)
            .await
            .map_err(|e| CallError::Transport(e.to_string()))?;
        let status = resp.status();
        let query_error = resp
            .headers()
            .get("x-amzn-query-error")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let answer = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| CallError::Transport(format!("reading the answer: {e}")))?
            .to_bytes();
        self.sender = Some(sender);
        if status.is_success() {
            Ok(answer)
        } else {
            Err(CallError::from_response(
                status.as_u16(),
                query_error.as_deref(),
                &answer,
            ))
        }
    }
}

/// `YYYYMMDDTHHMMSSZ` for a Unix time in seconds, as SigV4's `X-Amz-Date` wants.
pub fn amz_date(unix_secs: u64) -> String {
    let days = (unix_secs / 86_400) as i64;
    let secs = unix_secs % 86_400;
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}{month:02}{day:02}T{:02}{:02}{:02}Z",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

fn fake_authorization(stamp: &str) -> String {
    format!(
        "AWS4-HMAC-SHA256 Credential=AKIDLOFTBENCH/{}/us-east-1/sqs/aws4_request, \
         SignedHeaders=content-type;host;x-amz-date;x-amz-target, Signature={}",
        &stamp[..8],
        "0".repeat(64)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_parsing() {
        let e = Endpoint::parse("http://127.0.0.1:9324").unwrap();
        assert_eq!(e.connect, "127.0.0.1:9324");
        assert_eq!(e.host, "127.0.0.1:9324");
        assert_eq!(e.path, "/");
        let e = Endpoint::parse("http://localhost/sqs").unwrap();
        assert_eq!(e.connect, "localhost:80");
        assert_eq!(e.path, "/sqs");
        let e = Endpoint::parse("http://[::1]:9324/").unwrap();
        assert!(e.connect.parse::<std::net::SocketAddr>().is_ok(), "{e:?}");
        assert!(Endpoint::parse("https://127.0.0.1:9324").is_err());
        assert!(Endpoint::parse("127.0.0.1:9324").is_err());
        assert!(Endpoint::parse("http://u:p@127.0.0.1:9324").is_err());
    }

    #[test]
    fn error_codes() {
        let e = CallError::from_response(
            400,
            None,
            br#"{"__type":"com.amazonaws.sqs#QueueDoesNotExist","message":"gone"}"#,
        );
        assert_eq!(e.kind(), "QueueDoesNotExist");
        assert!(!e.wants_auth());
        let e = CallError::from_response(
            400,
            Some("AWS.SimpleQueueService.NonExistentQueue;Sender"),
            b"",
        );
        assert_eq!(e.kind(), "AWS.SimpleQueueService.NonExistentQueue");
        let e = CallError::from_response(403, None, b"<html/>");
        assert_eq!(e.kind(), "HTTP 403");
        assert!(e.wants_auth());
        let e =
            CallError::from_response(501, None, b"<!DOCTYPE HTML>\n<html>\n  <body>nope</body>");
        assert_eq!(
            e.to_string(),
            "HTTP 501: not an SQS JSON answer: <!DOCTYPE HTML> <html> <body>nope</body>"
        );
        let e = CallError::from_response(400, None, br#"{"__type":"MissingAuthenticationToken"}"#);
        assert!(e.wants_auth());
    }

    #[test]
    fn hmac_matches_rfc_4231_case_2() {
        assert_eq!(
            hex::encode(hmac(b"Jefe", b"what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn amz_dates() {
        assert_eq!(amz_date(0), "19700101T000000Z");
        assert_eq!(amz_date(1_700_000_000), "20231114T221320Z");
        assert_eq!(amz_date(951_782_400), "20000229T000000Z");
    }
}
