//! The harness: the real `loft` binary on `127.0.0.1:0` over a throw-away database, an HTTP
//! client with small helpers, and an HTTP sink that records topic deliveries.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::mpsc as std_mpsc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::Router;
use serde_json::Value;
use tempfile::TempDir;
use tokio::sync::mpsc;

/// How long a test waits for something that should happen at once (a delivery, a shutdown).
pub const PATIENCE: Duration = Duration::from_secs(10);

/// A running `loft serve` on its own database. SIGTERM and wait on drop.
pub struct Loft {
    child: Option<Child>,
    /// Kept open so the server never writes to a closed pipe.
    _stdout: Option<BufReader<ChildStdout>>,
    /// `http://127.0.0.1:PORT`, without a trailing slash.
    pub base: String,
    /// Holds the database; removed when the `Loft` is dropped.
    dir: TempDir,
    /// One client for every request of the test.
    pub http: reqwest::Client,
    /// Extra `loft serve` arguments, kept for restarts.
    args: Vec<String>,
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

fn spawn(db: &Path, stderr_log: &Path, args: &[String]) -> (Child, BufReader<ChildStdout>, String) {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(stderr_log)
        .expect("open the stderr log");
    let mut child = Command::new(env!("CARGO_BIN_EXE_loft"))
        .arg("serve")
        .arg("--listen")
        .arg("127.0.0.1:0")
        .arg("--db")
        .arg(db)
        .args(args)
        .env_remove("LOFT_LISTEN")
        .env_remove("LOFT_DB")
        .env("LOFT_LOG", "info")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(log))
        .spawn()
        .expect("start the loft binary");
    let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
    let mut line = String::new();
    // Blocks until the server has bound its listener and said so.
    let n = stdout.read_line(&mut line).expect("read loft's stdout");
    if n == 0 {
        let status = child.wait();
        let log = std::fs::read_to_string(stderr_log).unwrap_or_default();
        panic!("loft exited before listening ({status:?}); stderr:\n{log}");
    }
    let base = line
        .trim()
        .strip_prefix("loft listening on ")
        .unwrap_or_else(|| panic!("unexpected first line from loft: {line:?}"))
        .trim_end_matches('/')
        .to_owned();
    assert!(base.starts_with("http://127.0.0.1:"), "listening on {base}");
    (child, stdout, base)
}

/// Sends SIGTERM to `child` and waits for it to exit; SIGKILL after [`PATIENCE`].
/// Returns the exit status and whether it had to be killed.
fn terminate(child: Child) -> (ExitStatus, bool) {
    let pid = child.id().to_string();
    let _ = Command::new("kill").arg("-TERM").arg(&pid).status();
    let (tx, rx) = std_mpsc::channel();
    let mut child = child;
    let waiter = std::thread::spawn(move || {
        let _ = tx.send(child.wait());
    });
    let (status, killed) = match rx.recv_timeout(PATIENCE) {
        Ok(s) => (s.expect("wait for loft"), false),
        Err(_) => {
            let _ = Command::new("kill").arg("-KILL").arg(&pid).status();
            (
                rx.recv().expect("wait for loft").expect("wait for loft"),
                true,
            )
        }
    };
    let _ = waiter.join();
    (status, killed)
}

impl Loft {
    /// Starts Loft on a fresh database in a new temporary directory.
    pub fn start() -> Loft {
        Loft::start_with(&[])
    }

    /// Starts Loft on a fresh database with extra `loft serve` arguments (kept for
    /// [`Loft::restart`]).
    pub fn start_with(args: &[&str]) -> Loft {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        let dir = tempfile::tempdir().expect("temporary directory");
        let (child, stdout, base) = spawn(&db_path(dir.path()), &log_path(dir.path()), &args);
        Loft {
            child: Some(child),
            _stdout: Some(stdout),
            base,
            dir,
            http: reqwest::Client::new(),
            args,
        }
    }

    /// The database file.
    pub fn db(&self) -> PathBuf {
        db_path(self.dir.path())
    }

    /// Stops Loft with SIGTERM and asserts it shut down gracefully (exit status 0 within
    /// [`PATIENCE`]).
    pub fn stop(&mut self) {
        let child = self.child.take().expect("loft is running");
        self._stdout = None;
        let (status, killed) = terminate(child);
        assert!(
            !killed,
            "loft did not exit within {PATIENCE:?} of SIGTERM; stderr:\n{}",
            self.stderr()
        );
        assert!(
            status.success(),
            "loft exited with {status} after SIGTERM; stderr:\n{}",
            self.stderr()
        );
    }

    /// Stops Loft gracefully and starts it again on the same database (on a new port).
    pub fn restart(&mut self) {
        self.stop();
        self.start_again();
    }

    /// Starts Loft again on the same database (on a new port) after [`Loft::stop`].
    pub fn start_again(&mut self) {
        assert!(self.child.is_none(), "loft is still running");
        let (child, stdout, base) = spawn(&self.db(), &log_path(self.dir.path()), &self.args);
        self.child = Some(child);
        self._stdout = Some(stdout);
        self.base = base;
    }

    /// Kills Loft with SIGKILL (no chance to clean up) and starts it again on the same
    /// database (on a new port): what a crash and a supervisor's restart look like.
    pub fn crash_and_restart(&mut self) {
        let mut child = self.child.take().expect("loft is running");
        self._stdout = None;
        child.kill().expect("SIGKILL loft");
        child.wait().expect("reap loft");
        let (child, stdout, base) = spawn(&self.db(), &log_path(self.dir.path()), &self.args);
        self.child = Some(child);
        self._stdout = Some(stdout);
        self.base = base;
    }

    /// Everything Loft wrote on stderr so far (its log).
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(log_path(self.dir.path())).unwrap_or_default()
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

impl Drop for Loft {
    fn drop(&mut self) {
        if let Some(child) = self.child.take() {
            let _ = terminate(child);
        }
    }
}

fn db_path(dir: &Path) -> PathBuf {
    dir.join("loft.db")
}

fn log_path(dir: &Path) -> PathBuf {
    dir.join("loft.stderr.log")
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

/// One request the sink received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: Method,
    pub path: String,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Recorded {
    /// The body as JSON; panics when it is not.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "delivery body is not JSON ({e}): {:?}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }
}

/// An HTTP server on `127.0.0.1:0` that answers 200 to everything and hands each request
/// to the test through a channel.
pub struct Sink {
    pub addr: SocketAddr,
    rx: mpsc::UnboundedReceiver<Recorded>,
    task: tokio::task::JoinHandle<()>,
}

async fn record(
    State(tx): State<mpsc::UnboundedSender<Recorded>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    let _ = tx.send(Recorded {
        method,
        path: uri.path().to_owned(),
        headers,
        body,
    });
    StatusCode::OK
}

impl Sink {
    pub async fn start() -> Sink {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the sink");
        let addr = listener.local_addr().expect("sink address");
        let (tx, rx) = mpsc::unbounded_channel();
        let app = Router::new().fallback(record).with_state(tx);
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Sink { addr, rx, task }
    }

    /// `http://ADDR{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// The next request, waiting at most [`PATIENCE`].
    #[track_caller]
    pub fn next(&mut self) -> impl std::future::Future<Output = Recorded> + '_ {
        let caller = std::panic::Location::caller();
        async move {
            match tokio::time::timeout(PATIENCE, self.rx.recv()).await {
                Ok(Some(r)) => r,
                Ok(None) => panic!("sink closed ({caller})"),
                Err(_) => panic!("no delivery reached the sink within {PATIENCE:?} ({caller})"),
            }
        }
    }

    /// The request already received, if any, without waiting.
    pub fn try_next(&mut self) -> Option<Recorded> {
        self.rx.try_recv().ok()
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A local address where nothing listens: bound to find a free port, then closed.
pub fn dead_endpoint() -> SocketAddr {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = l.local_addr().expect("address");
    drop(l);
    addr
}
