//! The harness of the operator tests: the real `loft serve` on `127.0.0.1:0` with any extra
//! flags and environment (a config file, a log format), the `loft` admin commands run as
//! processes against it, and small SQS JSON / metrics helpers.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, ExitStatus, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tempfile::TempDir;

/// How long a test waits for something that should happen soon.
pub const PATIENCE: Duration = Duration::from_secs(15);

/// The `loft` binary under test.
pub fn loft_bin() -> &'static str {
    env!("CARGO_BIN_EXE_loft")
}

/// A running `loft serve`; SIGTERM and wait on drop.
pub struct Server {
    child: Option<Child>,
    _stdout: Option<BufReader<ChildStdout>>,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// The server's directory (database, logs, config files of the test).
    pub dir: TempDir,
    /// One HTTP client for the test.
    pub http: reqwest::Client,
}

/// A `loft serve` that exited before listening: its status and stderr.
#[derive(Debug)]
pub struct StartFailure {
    /// Exit status.
    pub status: ExitStatus,
    /// Everything it wrote on stderr.
    pub stderr: String,
}

fn command(dir: &Path, args: &[&str], envs: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(loft_bin());
    cmd.arg("serve");
    for k in [
        "LOFT_LISTEN",
        "LOFT_DB",
        "LOFT_CONFIG",
        "LOFT_ACCOUNT_ID",
        "LOFT_REGION",
        "LOFT_DURABILITY",
        "LOFT_ADVERTISED_URL",
        "LOFT_LOG_FORMAT",
        "LOFT_CREDENTIALS",
        "LOFT_CREDENTIALS_FILE",
        "LOFT_CORS_ALLOWED_ORIGINS",
        "LOFT_SSE_KEY_FILE",
        "LOFT_NO_SQS_QUOTAS",
        "LOFT_METRICS_AUTH",
        "LOFT_AUTO_CREATE_QUEUES",
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    ] {
        cmd.env_remove(k);
    }
    cmd.env("LOFT_LOG", "info").env("NO_COLOR", "1");
    // A relative path (the default `loft.db` of a config file without `db`) lands in the
    // test's own folder, not in the crate's.
    cmd.current_dir(dir);
    if !args.contains(&"--db") && !args.contains(&"--config") {
        cmd.arg("--db").arg(dir.join("loft.db"));
    }
    if !args.contains(&"--listen") && !args.contains(&"--config") {
        cmd.arg("--listen").arg("127.0.0.1:0");
    }
    cmd.args(args);
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd
}

impl Server {
    /// `loft serve --listen 127.0.0.1:0 --db DIR/loft.db`.
    pub fn start() -> Server {
        Server::start_with(&[], &[]).unwrap_or_else(|f| panic!("loft did not start: {f:?}"))
    }

    /// `loft serve` with `args` (plus `--listen 127.0.0.1:0` and `--db DIR/loft.db` unless
    /// `args` gives `--listen`, `--db` or `--config`) in a fresh directory.
    ///
    /// Errors: the process exited before it printed its listening line.
    pub fn start_with(args: &[&str], envs: &[(&str, &str)]) -> Result<Server, StartFailure> {
        let dir = tempfile::tempdir().expect("temporary directory");
        Server::start_in(dir, args, envs)
    }

    /// As [`Server::start_with`], in `dir` (which may hold a config file).
    ///
    /// Errors: the process exited before it printed its listening line.
    pub fn start_in(
        dir: TempDir,
        args: &[&str],
        envs: &[(&str, &str)],
    ) -> Result<Server, StartFailure> {
        let log = dir.path().join("stderr.log");
        let file = std::fs::File::create(&log).expect("stderr log");
        let mut child = command(dir.path(), args, envs)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(file))
            .spawn()
            .expect("start loft");
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        let n = stdout.read_line(&mut line).expect("read stdout");
        if n == 0 {
            let status = child.wait().expect("wait for loft");
            return Err(StartFailure {
                status,
                stderr: std::fs::read_to_string(&log).unwrap_or_default(),
            });
        }
        let base = line
            .trim()
            .strip_prefix("loft listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_owned();
        Ok(Server {
            child: Some(child),
            _stdout: Some(stdout),
            base,
            dir,
            http: reqwest::Client::new(),
        })
    }

    /// Everything the server wrote on stderr so far.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("stderr.log")).unwrap_or_default()
    }

    /// `base` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Stops the server with SIGTERM, asserts a clean exit, and returns its directory.
    pub fn stop(mut self) -> TempDir {
        let child = self.child.take().expect("running");
        let (status, killed) = terminate(child);
        assert!(
            !killed && status.success(),
            "loft did not stop cleanly: {status}\n{}",
            self.stderr()
        );
        let dir = tempfile::tempdir().expect("temporary directory");
        std::mem::replace(&mut self.dir, dir)
    }

    /// Calls SQS JSON operation `op`; returns (HTTP status, body, headers).
    pub async fn sqs_raw(
        &self,
        op: &str,
        input: Value,
    ) -> (u16, Value, reqwest::header::HeaderMap) {
        let resp = self
            .http
            .post(self.url("/"))
            .header("x-amz-target", format!("AmazonSQS.{op}"))
            .header("content-type", "application/x-amz-json-1.0")
            .body(input.to_string())
            .send()
            .await
            .expect("SQS request");
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let text = resp.text().await.expect("body");
        let body = if text.is_empty() {
            json!({})
        } else {
            serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text}"))
        };
        (status, body, headers)
    }

    /// Calls SQS JSON operation `op` and asserts success.
    pub async fn sqs(&self, op: &str, input: Value) -> Value {
        let (status, body, _) = self.sqs_raw(op, input).await;
        assert_eq!(status, 200, "{op} failed: {body}");
        body
    }

    /// The URL of queue `name`.
    pub fn queue_url(&self, name: &str) -> String {
        format!("{}/000000000000/{name}", self.base)
    }

    /// Calls SNS Query action `action`; returns (status, XML text).
    pub async fn sns(&self, action: &str, params: &[(&str, &str)]) -> (u16, String) {
        let mut form = form_urlencoded::Serializer::new(String::new());
        form.append_pair("Action", action);
        form.append_pair("Version", "2010-03-31");
        for (k, v) in params {
            form.append_pair(k, v);
        }
        let resp = self
            .http
            .post(self.url("/"))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form.finish())
            .send()
            .await
            .expect("SNS request");
        (resp.status().as_u16(), resp.text().await.expect("body"))
    }

    /// `GET /metrics` parsed: sample (`name{labels}`) to value.
    pub async fn metrics(&self) -> BTreeMap<String, f64> {
        let resp = self
            .http
            .get(self.url("/metrics"))
            .send()
            .await
            .expect("metrics");
        assert_eq!(resp.status().as_u16(), 200);
        let ct = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        assert!(
            ct.starts_with("text/plain; version=0.0.4"),
            "content-type {ct}"
        );
        parse_metrics(&resp.text().await.expect("body"))
    }

    /// Runs `loft ARGS` against this server; `stdin` is fed to it.
    pub fn cli(&self, args: &[&str], stdin: Option<&[u8]>) -> CliRun {
        cli_at(&self.base, args, stdin)
    }

    /// Runs `loft ARGS` against this server with `envs` (`AWS_ACCESS_KEY_ID`, ...).
    pub fn cli_env(&self, args: &[&str], envs: &[(&str, &str)]) -> CliRun {
        cli_env(&self.base, args, None, envs)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(child) = self.child.take() {
            let _ = terminate(child);
        }
    }
}

/// Parses the Prometheus text format: every sample line into `name{labels}` -> value.
pub fn parse_metrics(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let (k, v) = l
                .rsplit_once(' ')
                .unwrap_or_else(|| panic!("bad line {l:?}"));
            (
                k.to_owned(),
                v.parse::<f64>()
                    .unwrap_or_else(|_| panic!("bad value {l:?}")),
            )
        })
        .collect()
}

/// Sends SIGTERM and waits; SIGKILL after [`PATIENCE`]. Returns the status and whether it
/// had to be killed.
fn terminate(mut child: Child) -> (ExitStatus, bool) {
    let pid = child.id().to_string();
    let _ = Command::new("kill").arg("-TERM").arg(&pid).status();
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return (status, false);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            return (child.wait().expect("wait"), true);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The outcome of one `loft` admin command.
#[derive(Debug)]
pub struct CliRun {
    /// Exit code (-1 when killed by a signal).
    pub code: i32,
    /// stdout.
    pub stdout: String,
    /// stderr.
    pub stderr: String,
}

impl CliRun {
    /// Asserts exit code 0 and returns stdout.
    #[track_caller]
    pub fn ok(&self) -> &str {
        assert_eq!(self.code, 0, "command failed: {self:?}");
        &self.stdout
    }

    /// Asserts exit code 0 and parses stdout as JSON.
    #[track_caller]
    pub fn json(&self) -> Value {
        serde_json::from_str(self.ok())
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {self:?}"))
    }
}

/// The environment variables the admin commands read credentials from; removed from
/// theirs unless a test sets them, so the machine's settings never leak into a test.
const AWS_ENV: &[&str] = &[
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
];

/// Runs `loft ARGS` with `LOFT_ENDPOINT=endpoint` and no credentials (in a blocking
/// thread so that async tests can call it).
pub fn cli_at(endpoint: &str, args: &[&str], stdin: Option<&[u8]>) -> CliRun {
    cli_env(endpoint, args, stdin, &[])
}

/// As [`cli_at`], with `envs` set.
pub fn cli_env(
    endpoint: &str,
    args: &[&str],
    stdin: Option<&[u8]>,
    envs: &[(&str, &str)],
) -> CliRun {
    let mut cmd = Command::new(loft_bin());
    for k in AWS_ENV {
        cmd.env_remove(k);
    }
    cmd.envs(envs.iter().copied());
    let mut child = cmd
        .args(args)
        .env("LOFT_ENDPOINT", endpoint)
        .env_remove("LOFT_LOG_FORMAT")
        .env("NO_COLOR", "1")
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run loft");
    if let Some(input) = stdin {
        let mut w = child.stdin.take().expect("stdin");
        let input = input.to_vec();
        std::thread::spawn(move || {
            let _ = w.write_all(&input);
        });
    }
    let (tx, rx) = mpsc::channel::<std::io::Result<Output>>();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let out = rx
        .recv_timeout(Duration::from_secs(90))
        .expect("loft command timed out")
        .expect("loft command output");
    CliRun {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Polls `check` every 50 ms until it returns `Some`, for at most [`PATIENCE`].
pub async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Writes `text` to `dir/name` and returns the path.
pub fn write_file(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write file");
    p
}
