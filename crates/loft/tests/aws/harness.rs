//! Runs the real `loft` binary for one test: `loft serve --listen 127.0.0.1:0` on a fresh
//! SQLite file, the port read from the `loft listening on http://...` line on stdout,
//! SIGTERM (through the `kill` command) when the [`Server`] is dropped.
//!
//! Every test gets its own server, so queue names, purge cool-downs and ListQueues results
//! never leak between tests that run in parallel.

use std::time::Duration;

use aws_sdk_sqs::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_sqs::error::ProvideErrorMetadata;

use crate::loft::{LoftProcess, TestLoft};

/// The account id Loft puts in queue URLs and ARNs by default.
pub const ACCOUNT: &str = "000000000000";

/// A running `loft serve` (a [`LoftProcess`]; SIGTERM on drop).
pub struct Server {
    loft: LoftProcess,
    /// `http://127.0.0.1:PORT`, no trailing slash.
    pub url: String,
}

impl Server {
    /// Starts the binary and waits for its listening line.
    pub fn start() -> Server {
        let loft = TestLoft::new().log("warn").start();
        let url = loft.url.clone();
        Server { loft, url }
    }

    /// Stops the process (SIGTERM, as [`Drop`] does; nothing when already stopped) and
    /// starts a new one on the same database, listening on the same port.
    #[allow(dead_code)]
    pub fn restart(&mut self) {
        self.loft.restart_same_port();
        self.url = self.loft.url.clone();
    }

    /// The folder of the database (`loft.db`) and the files Loft keeps beside it.
    #[allow(dead_code)]
    pub fn dir(&self) -> &std::path::Path {
        self.loft.dir()
    }

    /// Stops the process: SIGTERM, then SIGKILL after a while.
    pub fn stop(&mut self) {
        self.loft.stop();
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
        self.loft.stderr()
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
