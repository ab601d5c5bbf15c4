//! Runs the real `loft` binary for one test: `loft serve --listen 127.0.0.1:0` on a fresh
//! SQLite file, the port read from the `loft listening on http://...` line on stdout,
//! SIGTERM (through the `kill` command) when the [`Server`] is dropped.
//!
//! Every test gets its own server, so queue names, purge cool-downs and ListQueues results
//! never leak between tests that run in parallel.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use aws_sdk_sqs::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_sqs::error::ProvideErrorMetadata;

/// The account id Loft puts in queue URLs and ARNs by default.
pub const ACCOUNT: &str = "000000000000";

/// A running `loft serve`.
pub struct Server {
    child: Child,
    /// `http://127.0.0.1:PORT`, no trailing slash.
    pub url: String,
    dir: tempfile::TempDir,
}

impl Server {
    /// Starts the binary and waits for its listening line (at most 30 s).
    pub fn start() -> Server {
        let dir = tempfile::tempdir().expect("temp dir");
        let (child, url) = spawn(dir.path(), "127.0.0.1:0");
        Server { child, url, dir }
    }

    /// Stops the process (SIGTERM, as [`Drop`] does) and starts a new one on the same
    /// database, listening on the same port.
    #[allow(dead_code)]
    pub fn restart(&mut self) {
        self.stop();
        let addr = self.url.trim_start_matches("http://").to_owned();
        let (child, url) = spawn(self.dir.path(), &addr);
        self.child = child;
        self.url = url;
    }

    /// The folder of the database (`loft.db`) and the files Loft keeps beside it.
    #[allow(dead_code)]
    pub fn dir(&self) -> &std::path::Path {
        self.dir.path()
    }

    /// Stops the process: SIGTERM, then SIGKILL after 10 s.
    pub fn stop(&mut self) {
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match self.child.try_wait() {
                Ok(Some(_)) => return,
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                _ => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    return;
                }
            }
        }
    }

    /// The URL Loft gives queue `name`.
    pub fn queue_url(&self, name: &str) -> String {
        format!("{}/{ACCOUNT}/{name}", self.url)
    }

    /// The ARN of queue `name`.
    pub fn queue_arn(&self, name: &str) -> String {
        format!("arn:aws:sqs:us-east-1:{ACCOUNT}:{name}")
    }

    /// An aws-sdk-sqs client (JSON protocol) pointed at this server with static dummy
    /// credentials, plain HTTP and no retries, so each error is seen as Loft sent it.
    pub fn sdk(&self) -> aws_sdk_sqs::Client {
        let http = aws_smithy_http_client::Builder::new().build_http();
        let config = aws_sdk_sqs::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .credentials_provider(Credentials::new("x", "x", None, None, "loft-tests"))
            .endpoint_url(&self.url)
            .http_client(http)
            .retry_config(aws_sdk_sqs::config::retry::RetryConfig::disabled())
            .build();
        aws_sdk_sqs::Client::from_conf(config)
    }

    /// Loft's stderr so far (for failure messages).
    #[allow(dead_code)]
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("stderr.log")).unwrap_or_default()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Starts `loft serve` on `dir/loft.db`, listening on `listen`, and waits for its
/// listening line (at most 30 s). Returns the child and its `http://IP:PORT`.
fn spawn(dir: &std::path::Path, listen: &str) -> (Child, String) {
    let stderr = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("stderr.log"))
        .expect("stderr log");
    let mut child = Command::new(env!("CARGO_BIN_EXE_loft"))
        .args(["serve", "--listen", listen, "--db"])
        .arg(dir.join("loft.db"))
        .env("LOFT_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .expect("start loft");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    // Keeps draining stdout for the server's whole life so a later write never meets
    // a closed pipe.
    std::thread::spawn(move || {
        let mut tx = Some(tx);
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Some(url) = line.strip_prefix("loft listening on ") {
                if let Some(tx) = tx.take() {
                    let _ = tx.send(url.trim().to_owned());
                }
            }
        }
    });
    match rx.recv_timeout(Duration::from_secs(30)) {
        Ok(url) => (child, url),
        Err(_) => {
            let _ = child.kill();
            let log = std::fs::read_to_string(dir.join("stderr.log")).unwrap_or_default();
            panic!("loft did not print its listening line; stderr:\n{log}");
        }
    }
}

/// What an SDK call's error looked like on the wire: the error code the SDK read (the
/// Query-compatible code from `x-amzn-query-error`) and the HTTP status.
pub fn sdk_error<E: ProvideErrorMetadata>(err: &aws_sdk_sqs::error::SdkError<E>) -> (String, u16) {
    let code = err.code().unwrap_or("<none>").to_owned();
    let status = err.raw_response().map_or(0, |r| r.status().as_u16());
    (code, status)
}

/// Asserts an SDK call failed with HTTP `$status`, error code `$code` and a service error
/// matching `$variant`; evaluates to the service error.
#[macro_export]
macro_rules! assert_sdk_err {
    ($result:expr, $variant:pat, $code:expr, $status:expr) => {{
        let err = match $result {
            Ok(out) => panic!("expected {} ({}), got success: {out:?}", $code, $status),
            Err(e) => e,
        };
        let (code, status) = $crate::harness::sdk_error(&err);
        assert_eq!(
            (code.as_str(), status),
            ($code, $status),
            "wrong error: {err:?}"
        );
        let service = err.into_service_error();
        assert!(
            matches!(service, $variant),
            "wrong SDK error variant: {service:?}"
        );
        service
    }};
}

/// A raw HTTP client for the protocol-level tests.
pub fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .expect("reqwest client")
}
