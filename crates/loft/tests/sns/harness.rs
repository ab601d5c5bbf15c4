//! Runs the real `loft` binary for one test and gives it SDK clients: `loft serve` on a
//! fresh SQLite file, the port read from the `loft listening on http://...` line, SIGTERM
//! when stopped or dropped. [`Server::restart`] starts it again on the same database and the
//! same port, so URLs already handed out (SigningCertURL, SubscribeURL) keep working.

use std::time::Duration;

use aws_sdk_sns::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_sns::error::ProvideErrorMetadata;

use crate::loft::{LoftProcess, TestLoft};

/// The account id Loft puts in ARNs by default.
pub const ACCOUNT: &str = "000000000000";

/// How long a test waits for something that should happen promptly.
pub const PATIENCE: Duration = Duration::from_secs(15);

/// A running `loft serve` (a [`LoftProcess`]; SIGTERM on drop).
pub struct Server {
    loft: LoftProcess,
    /// `http://127.0.0.1:PORT`, no trailing slash.
    pub url: String,
}

impl Server {
    /// Starts the binary on a free port and waits for its listening line.
    pub fn start() -> Server {
        let loft = TestLoft::new()
            .log("info,loft_server::delivery=debug")
            .start();
        let url = loft.url.clone();
        Server { loft, url }
    }

    /// Stops Loft with SIGTERM and asserts it exits with status 0 in time.
    pub fn stop(&mut self) {
        self.loft.stop_clean();
    }

    /// Starts Loft again, after [`Self::stop`], on the same database and port.
    pub fn start_again(&mut self) {
        self.loft.start_again_same_port();
        assert_eq!(self.loft.url, self.url, "loft came back on another address");
    }

    /// The folder of the database (`loft.db`, its WAL, and the files beside it).
    #[allow(dead_code)]
    pub fn dir(&self) -> &std::path::Path {
        self.loft.dir()
    }

    /// The ARN of queue `name`.
    pub fn queue_arn(&self, name: &str) -> String {
        format!("arn:aws:sqs:us-east-1:{ACCOUNT}:{name}")
    }

    /// The ARN of topic `name`.
    pub fn topic_arn(&self, name: &str) -> String {
        format!("arn:aws:sns:us-east-1:{ACCOUNT}:{name}")
    }

    /// An aws-sdk-sns client (Query protocol) on this server: dummy credentials, plain
    /// HTTP, no retries, so each error is seen as Loft sent it.
    pub fn sns(&self) -> aws_sdk_sns::Client {
        let http = aws_smithy_http_client::Builder::new().build_http();
        let config = aws_sdk_sns::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .credentials_provider(Credentials::new("x", "x", None, None, "loft-tests"))
            .endpoint_url(&self.url)
            .http_client(http)
            .retry_config(aws_sdk_sns::config::retry::RetryConfig::disabled())
            .build();
        aws_sdk_sns::Client::from_conf(config)
    }

    /// An aws-sdk-sqs client (JSON protocol) on this server, configured likewise.
    pub fn sqs(&self) -> aws_sdk_sqs::Client {
        let http = aws_smithy_http_client::Builder::new().build_http();
        let config = aws_sdk_sqs::Config::builder()
            .behavior_version(aws_sdk_sqs::config::BehaviorVersion::latest())
            .region(aws_sdk_sqs::config::Region::new("us-east-1"))
            .credentials_provider(aws_sdk_sqs::config::Credentials::new(
                "x",
                "x",
                None,
                None,
                "loft-tests",
            ))
            .endpoint_url(&self.url)
            .http_client(http)
            .retry_config(aws_sdk_sqs::config::retry::RetryConfig::disabled())
            .build();
        aws_sdk_sqs::Client::from_conf(config)
    }

    /// Loft's stderr so far (for failure messages).
    pub fn stderr(&self) -> String {
        self.loft.stderr()
    }

    /// The file Loft's log goes to.
    pub fn stderr_path(&self) -> std::path::PathBuf {
        self.loft.stderr_path()
    }
}

/// What an SDK call's error looked like on the wire: the error code and the HTTP status.
pub fn sdk_error<E: ProvideErrorMetadata>(err: &aws_sdk_sns::error::SdkError<E>) -> (String, u16) {
    let code = err.code().unwrap_or("<none>").to_owned();
    let status = err.raw_response().map_or(0, |r| r.status().as_u16());
    (code, status)
}

/// Asserts an SDK call failed with HTTP `$status` and error code `$code`, and that the SDK
/// read it as the modelled error `$variant`; evaluates to the SDK's error message.
#[macro_export]
macro_rules! assert_sns_err {
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
        let message = aws_sdk_sns::error::ProvideErrorMetadata::message(&err)
            .unwrap_or_default()
            .to_owned();
        let service = err.into_service_error();
        assert!(
            matches!(service, $variant),
            "wrong SDK error variant: {service:?}"
        );
        message
    }};
}
