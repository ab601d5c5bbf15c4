//! The harness of the operator tests: the real `loft serve` on `127.0.0.1:0` with any extra
//! flags and environment (a config file, a log format), the `loft` admin commands run as
//! processes against it, and small SQS JSON / metrics helpers.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};
use tempfile::TempDir;

use crate::loft::{run_cli, LoftProcess, Storage, TestLoft};
pub use crate::loft::{CliRun, StartFailure};

/// How long a test waits for something that should happen soon.
pub const PATIENCE: Duration = Duration::from_secs(15);

/// A running `loft serve` (a [`LoftProcess`]; SIGTERM and wait on drop).
pub struct Server {
    loft: LoftProcess,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// One HTTP client for the test.
    pub http: reqwest::Client,
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

    /// As [`Server::start_with`], in `dir` (which may hold a config file), which is also
    /// the server's working directory: a relative path (the default `loft.db` of a config
    /// file without `db`) lands in the test's own folder, not in the crate's.
    ///
    /// Errors: the process exited before it printed its listening line.
    pub fn start_in(
        dir: TempDir,
        args: &[&str],
        envs: &[(&str, &str)],
    ) -> Result<Server, StartFailure> {
        let mut spec = TestLoft::new().args(args).envs(envs).in_data_dir();
        if args.contains(&"--db") || args.contains(&"--config") {
            spec = spec.storage(Storage::FromArgs);
        }
        if args.contains(&"--listen") || args.contains(&"--config") {
            spec = spec.listen(None);
        }
        let loft = spec.try_start_in(dir)?;
        Ok(Server {
            base: loft.url.clone(),
            loft,
            http: reqwest::Client::new(),
        })
    }

    /// The server's directory (database, logs, config files of the test).
    pub fn dir(&self) -> &Path {
        self.loft.dir()
    }

    /// Everything the server wrote on stderr so far.
    pub fn stderr(&self) -> String {
        self.loft.stderr()
    }

    /// `base` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Stops the server with SIGTERM, asserts a clean exit, and returns its directory.
    pub fn stop(mut self) -> TempDir {
        self.loft.stop_clean();
        self.loft.take_dir()
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

/// Runs `loft ARGS` with `LOFT_ENDPOINT=endpoint` and no credentials (in a blocking
/// thread so that async tests can call it).
pub fn cli_at(endpoint: &str, args: &[&str], stdin: Option<&[u8]>) -> CliRun {
    cli_env(endpoint, args, stdin, &[])
}

/// As [`cli_at`], with `envs` set (and `LOFT_LOG_FORMAT` unset, as for every CLI run).
pub fn cli_env(
    endpoint: &str,
    args: &[&str],
    stdin: Option<&[u8]>,
    envs: &[(&str, &str)],
) -> CliRun {
    let mut all = envs.to_vec();
    all.push(("LOFT_ENDPOINT", endpoint));
    run_cli(args, stdin, &all)
}

/// Polls `check` until it returns `Some`, for at most [`PATIENCE`] (through the one
/// waiting helper, [`crate::wait::eventually`]).
pub async fn eventually<T, F, Fut>(what: &str, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    crate::wait::eventually(what, PATIENCE, check).await
}

/// Writes `text` to `dir/name` and returns the path.
pub fn write_file(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write file");
    p
}
