//! Runs the real `loft` binary for one test and gives it SDK clients: `loft serve` on a
//! fresh SQLite file, the port read from the `loft listening on http://...` line, SIGTERM
//! when stopped or dropped. [`Server::restart`] starts it again on the same database and the
//! same port, so URLs already handed out (SigningCertURL, SubscribeURL) keep working.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use aws_sdk_sns::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_sns::error::ProvideErrorMetadata;

/// The account id Loft puts in ARNs by default.
pub const ACCOUNT: &str = "000000000000";

/// How long a test waits for something that should happen promptly.
pub const PATIENCE: Duration = Duration::from_secs(15);

/// A running `loft serve`.
pub struct Server {
    child: Option<Child>,
    /// `http://127.0.0.1:PORT`, no trailing slash.
    pub url: String,
    dir: tempfile::TempDir,
}

fn spawn(dir: &std::path::Path, listen: &str) -> (Child, String) {
    let stderr = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("stderr.log"))
        .expect("stderr log");
    let mut child = Command::new(env!("CARGO_BIN_EXE_loft"))
        .args(["serve", "--listen", listen, "--db"])
        .arg(dir.join("loft.db"))
        .env_remove("LOFT_LISTEN")
        .env_remove("LOFT_DB")
        .env_remove("LOFT_ADVERTISED_URL")
        .env("LOFT_LOG", "info,loft_server::delivery=debug")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .expect("start loft");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    // Keeps draining stdout for the server's whole life so a later write never meets a
    // closed pipe.
    std::thread::spawn(move || {
        let mut tx = Some(tx);
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Some(url) = line.strip_prefix("loft listening on ") {
                if let Some(tx) = tx.take() {
                    let _ = tx.send(url.trim().trim_end_matches('/').to_owned());
                }
            }
        }
    });
    match rx.recv_timeout(Duration::from_secs(30)) {
        Ok(url) => (child, url),
        Err(_) => {
            let _ = child.kill();
            let _ = child.wait();
            let log = std::fs::read_to_string(dir.join("stderr.log")).unwrap_or_default();
            panic!("loft did not print its listening line; stderr:\n{log}");
        }
    }
}

impl Server {
    /// Starts the binary on a free port and waits for its listening line.
    pub fn start() -> Server {
        let dir = tempfile::tempdir().expect("temp dir");
        let (child, url) = spawn(dir.path(), "127.0.0.1:0");
        Server {
            child: Some(child),
            url,
            dir,
        }
    }

    /// Stops Loft with SIGTERM and asserts it exits with status 0 within [`PATIENCE`].
    pub fn stop(&mut self) {
        let child = self.child.take().expect("loft is running");
        let (status, killed) = terminate(child);
        assert!(!killed, "loft ignored SIGTERM; stderr:\n{}", self.stderr());
        assert!(
            status.is_some_and(|s| s.success()),
            "loft exited with {status:?} after SIGTERM; stderr:\n{}",
            self.stderr()
        );
    }

    /// Starts Loft again, after [`Self::stop`], on the same database and port.
    pub fn start_again(&mut self) {
        assert!(self.child.is_none(), "loft is still running");
        let listen = self.url.trim_start_matches("http://").to_owned();
        let (child, url) = spawn(self.dir.path(), &listen);
        assert_eq!(url, self.url, "loft came back on another address");
        self.child = Some(child);
    }

    /// The folder of the database (`loft.db`, its WAL, and the files beside it).
    #[allow(dead_code)]
    pub fn dir(&self) -> &std::path::Path {
        self.dir.path()
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
        std::fs::read_to_string(self.stderr_path()).unwrap_or_default()
    }

    /// The file Loft's log goes to.
    pub fn stderr_path(&self) -> std::path::PathBuf {
        self.dir.path().join("stderr.log")
    }
}

/// SIGTERM, then wait up to [`PATIENCE`]; SIGKILL after that. Returns the exit status and
/// whether it had to be killed.
fn terminate(mut child: Child) -> (Option<std::process::ExitStatus>, bool) {
    let pid = child.id().to_string();
    let _ = Command::new("kill").args(["-TERM", &pid]).status();
    let deadline = Instant::now() + PATIENCE;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return (Some(status), false),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                let _ = child.kill();
                return (child.wait().ok(), true);
            }
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(child) = self.child.take() {
            let _ = terminate(child);
        }
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
