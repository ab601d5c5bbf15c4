//! The harness: the real `loft` binary on `127.0.0.1:0` over a throw-away database, an HTTP
//! client with small helpers, and an HTTP sink that records topic deliveries.

use std::net::SocketAddr;
use std::time::Duration;

use axum::http::StatusCode;
use serde_json::Value;

use crate::loft::{LoftProcess, TestLoft};

/// How long a test waits for something that should happen at once (a delivery, a shutdown).
pub const PATIENCE: Duration = Duration::from_secs(10);

/// A running `loft serve` on its own database (a [`LoftProcess`]; SIGTERM and wait on
/// drop).
pub struct Loft {
    loft: LoftProcess,
    /// `http://127.0.0.1:PORT`, without a trailing slash.
    pub base: String,
    /// One client for every request of the test.
    pub http: reqwest::Client,
}

/// A response: status, headers and the raw body.
#[derive(Debug)]
pub struct Resp {
    pub status: StatusCode,
    pub headers: reqwest::header::HeaderMap,
    pub text: String,
}

impl Resp {
    /// The body parsed as JSON; panics (showing the body) when it is not JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.text)
            .unwrap_or_else(|e| panic!("response body is not JSON ({e}): {:?}", self.text))
    }

    /// Asserts the status and that the body is exactly `expected` as JSON.
    #[track_caller]
    pub fn expect(&self, status: u16, expected: Value) {
        assert_eq!(
            self.status.as_u16(),
            status,
            "unexpected status; body {:?}",
            self.text
        );
        assert_eq!(self.json(), expected, "unexpected body");
    }

    /// Asserts a JSON error: `status` and a body that is exactly `{"error": non-empty string}`
    /// with a JSON content type.
    #[track_caller]
    pub fn expect_error(&self, status: u16) {
        assert_eq!(
            self.status.as_u16(),
            status,
            "unexpected status; body {:?}",
            self.text
        );
        let ct = self
            .headers
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        assert!(
            ct.starts_with("application/json"),
            "error content-type {ct:?}, body {:?}",
            self.text
        );
        let body = self.json();
        let obj = body
            .as_object()
            .unwrap_or_else(|| panic!("error body is not an object: {body}"));
        assert_eq!(obj.len(), 1, "error body has extra fields: {body}");
        let msg = obj
            .get("error")
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("error body has no string \"error\": {body}"));
        assert!(!msg.is_empty(), "empty error message");
    }
}

impl Loft {
    /// Starts Loft on a fresh database in a new temporary directory.
    pub fn start() -> Loft {
        Loft::start_with(&[])
    }

    /// Starts Loft on a fresh database with extra `loft serve` arguments (kept for
    /// [`Loft::restart`]).
    pub fn start_with(args: &[&str]) -> Loft {
        let loft = TestLoft::new()
            .args(args)
            .stderr_file("loft.stderr.log")
            .start();
        Loft {
            base: loft.url.clone(),
            loft,
            http: reqwest::Client::new(),
        }
    }

    /// Stops Loft with SIGTERM and asserts it shut down gracefully (exit status 0 in
    /// time).
    pub fn stop(&mut self) {
        self.loft.stop_clean();
    }

    /// Stops Loft gracefully and starts it again on the same database (on a new port).
    pub fn restart(&mut self) {
        self.stop();
        self.start_again();
    }

    /// Starts Loft again on the same database (on a new port) after [`Loft::stop`].
    pub fn start_again(&mut self) {
        self.loft.start_again();
        self.base = self.loft.url.clone();
    }

    /// Kills Loft with SIGKILL (no chance to clean up) and starts it again on the same
    /// database (on a new port): what a crash and a supervisor's restart look like.
    pub fn crash_and_restart(&mut self) {
        self.loft.kill9();
        self.start_again();
    }

    /// Everything Loft wrote on stderr so far (its log).
    pub fn stderr(&self) -> String {
        self.loft.stderr()
    }

    /// The URL of `path` (which starts with `/`).
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// Sends `req` and reads the whole response.
    pub async fn send(&self, req: reqwest::RequestBuilder) -> Resp {
        let resp = req.send().await.expect("request to loft");
        let status = resp.status();
        let headers = resp.headers().clone();
        let text = resp.text().await.expect("response body");
        Resp {
            status,
            headers,
            text,
        }
    }

    pub async fn get(&self, path: &str) -> Resp {
        self.send(self.http.get(self.url(path))).await
    }

    pub async fn delete(&self, path: &str) -> Resp {
        self.send(self.http.delete(self.url(path))).await
    }

    /// POST with no body at all.
    pub async fn post_empty(&self, path: &str) -> Resp {
        self.send(self.http.post(self.url(path))).await
    }

    /// POST `body` as JSON.
    pub async fn post_json(&self, path: &str, body: &Value) -> Resp {
        self.send(self.http.post(self.url(path)).json(body)).await
    }

    /// POST raw bytes with `Content-Type: application/json`.
    pub async fn post_raw(&self, path: &str, body: impl Into<reqwest::Body>) -> Resp {
        self.send(
            self.http
                .post(self.url(path))
                .header("content-type", "application/json")
                .body(body),
        )
        .await
    }

    /// `POST /queues/{queue}/messages {"body": body}`; asserts 201 and returns the id.
    pub async fn send_msg(&self, queue: &str, body: &str) -> String {
        let r = self
            .post_json(
                &format!("/queues/{queue}/messages"),
                &serde_json::json!({ "body": body }),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "send: {}", r.text);
        let v = r.json();
        let obj = v.as_object().expect("send answers an object");
        assert_eq!(obj.len(), 1, "send answers only the id: {v}");
        obj["id"].as_str().expect("string id").to_owned()
    }

    /// `GET /queues/{queue}/messages{query}`; asserts 200 and returns the message, `None` for
    /// `null`. Asserts the message has exactly the fields `id`, `body`, `receive_count`.
    pub async fn receive(&self, queue: &str, query: &str) -> Option<Msg> {
        let r = self.get(&format!("/queues/{queue}/messages{query}")).await;
        assert_eq!(r.status, StatusCode::OK, "receive: {}", r.text);
        let v = r.json();
        if v.is_null() {
            return None;
        }
        let obj = v.as_object().unwrap_or_else(|| panic!("receive: {v}"));
        let mut keys: Vec<&str> = obj.keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(keys, ["body", "id", "receive_count"], "receive: {v}");
        Some(Msg {
            id: obj["id"].as_str().expect("string id").to_owned(),
            body: obj["body"].as_str().expect("string body").to_owned(),
            receive_count: obj["receive_count"]
                .as_i64()
                .expect("integer receive_count"),
        })
    }

    /// `DELETE /queues/{queue}/messages/{id}`; asserts 204 with an empty body.
    pub async fn ack(&self, queue: &str, id: &str) {
        let r = self.delete(&format!("/queues/{queue}/messages/{id}")).await;
        assert_eq!(r.status, StatusCode::NO_CONTENT, "delete: {}", r.text);
        assert!(r.text.is_empty(), "204 with a body: {:?}", r.text);
    }

    /// `GET {path}` of a list route, sorted.
    pub async fn names(&self, path: &str) -> Vec<String> {
        let r = self.get(path).await;
        assert_eq!(r.status, StatusCode::OK, "{path}: {}", r.text);
        let mut names: Vec<String> = serde_json::from_str(&r.text)
            .unwrap_or_else(|e| panic!("{path} is not an array of strings ({e}): {}", r.text));
        names.sort();
        names
    }

    /// `POST /topics/{topic}/subscribe {"endpoint": endpoint}`; asserts 201, returns the id.
    pub async fn subscribe(&self, topic: &str, endpoint: &str) -> String {
        let r = self
            .post_json(
                &format!("/topics/{topic}/subscribe"),
                &serde_json::json!({ "endpoint": endpoint }),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "subscribe: {}", r.text);
        let v = r.json();
        let obj = v.as_object().expect("subscribe answers an object");
        assert_eq!(obj.len(), 1, "subscribe answers only the id: {v}");
        obj["id"].as_str().expect("string id").to_owned()
    }

    /// `POST /topics/{topic}/publish {"message": message}`; asserts 200 and returns N of
    /// `{"delivered": N}`.
    pub async fn publish(&self, topic: &str, message: &str) -> i64 {
        let r = self
            .post_json(
                &format!("/topics/{topic}/publish"),
                &serde_json::json!({ "message": message }),
            )
            .await;
        assert_eq!(r.status, StatusCode::OK, "publish: {}", r.text);
        let v = r.json();
        let obj = v.as_object().expect("publish answers an object");
        assert_eq!(obj.len(), 1, "publish answers only delivered: {v}");
        obj["delivered"].as_i64().expect("integer delivered")
    }
}

/// An aws-sdk-sqs client (JSON protocol) for Loft at `base`: dummy credentials, plain
/// HTTP, no retries (each error is seen as Loft sent it).
pub fn sqs_client(base: &str) -> aws_sdk_sqs::Client {
    sqs_client_in(base, "us-east-1")
}

/// [`sqs_client`] signing for `region`.
pub fn sqs_client_in(base: &str, region: &str) -> aws_sdk_sqs::Client {
    use aws_sdk_sqs::config::{BehaviorVersion, Credentials, Region};
    let config = aws_sdk_sqs::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new(region.to_owned()))
        .credentials_provider(Credentials::new("x", "x", None, None, "loft-tests"))
        .endpoint_url(base)
        .http_client(aws_smithy_http_client::Builder::new().build_http())
        .retry_config(aws_sdk_sqs::config::retry::RetryConfig::disabled())
        .build();
    aws_sdk_sqs::Client::from_conf(config)
}

/// An aws-sdk-sns client (Query protocol) for Loft at `base`, configured likewise.
pub fn sns_client(base: &str) -> aws_sdk_sns::Client {
    sns_client_in(base, "us-east-1")
}

/// [`sns_client`] signing for `region`.
pub fn sns_client_in(base: &str, region: &str) -> aws_sdk_sns::Client {
    use aws_sdk_sns::config::{BehaviorVersion, Credentials, Region};
    let config = aws_sdk_sns::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new(region.to_owned()))
        .credentials_provider(Credentials::new("x", "x", None, None, "loft-tests"))
        .endpoint_url(base)
        .http_client(aws_smithy_http_client::Builder::new().build_http())
        .retry_config(aws_sdk_sns::config::retry::RetryConfig::disabled())
        .build();
    aws_sdk_sns::Client::from_conf(config)
}

/// A received message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Msg {
    pub id: String,
    pub body: String,
    pub receive_count: i64,
}

/// The number N of an id `{prefix}N` (`msg-`, `sub-`); panics on any other form.
#[track_caller]
pub fn seq_of(id: &str, prefix: &str) -> u64 {
    id.strip_prefix(prefix)
        .and_then(|n| n.parse().ok())
        .filter(|n: &u64| n.to_string() == id[prefix.len()..])
        .unwrap_or_else(|| panic!("{id:?} is not {prefix}N"))
}

pub use crate::http_sink::{Recorded, Sink};

/// A local address where nothing listens: bound to find a free port, then closed.
pub fn dead_endpoint() -> SocketAddr {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = l.local_addr().expect("address");
    drop(l);
    addr
}
