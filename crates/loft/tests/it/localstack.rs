//! The LocalStack drop-in (`--localstack-compat`, `LOFT_LOCALSTACK_COMPAT`): a second
//! listener, the `Ready.` line LocalStack's testcontainers modules wait for, `GET
//! /_localstack/health` in LocalStack's shape, and queue URLs written with LocalStack's
//! hosts; and `loft probe`, the container image's shell-free health check.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};

use serde_json::json;

use crate::common::{dead_endpoint, sqs_client, PATIENCE};

/// `loft serve` on `127.0.0.1:0` over a fresh database, with `env` set; its stdout piped.
fn spawn(dir: &std::path::Path, env: &[(&str, &str)]) -> Child {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_loft"));
    cmd.arg("serve")
        .arg("--listen")
        .arg("127.0.0.1:0")
        .arg("--db")
        .arg(dir.join("loft.db"))
        .env_remove("LOFT_LISTEN")
        .env_remove("LOFT_DB")
        .env_remove("LOFT_LOCALSTACK_COMPAT")
        .env_remove("LOFT_LOCALSTACK_PORT")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.spawn().expect("start the loft binary")
}

/// Sends SIGTERM to `child` and returns the rest of its stdout (read to its end, which
/// comes when it exits); kills it if it has not exited within [`PATIENCE`].
fn stop(mut child: Child, mut stdout: BufReader<std::process::ChildStdout>) -> String {
    let pid = child.id();
    let _ = Command::new("kill")
        .arg("-TERM")
        .arg(pid.to_string())
        .status();
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = stdout.read_to_string(&mut rest);
        let _ = tx.send(());
        rest
    });
    if rx.recv_timeout(PATIENCE).is_err() {
        let _ = child.kill();
    }
    let status = child.wait().expect("reap loft");
    let rest = reader.join().expect("stdout reader");
    assert!(status.success(), "loft exited with {status} after SIGTERM");
    rest
}

fn line(stdout: &mut BufReader<std::process::ChildStdout>) -> String {
    let mut l = String::new();
    stdout.read_line(&mut l).expect("read loft's stdout");
    l.trim_end().to_owned()
}

/// With `LOFT_LOCALSTACK_COMPAT=1` Loft listens on the extra port too, prints `Ready.`
/// after its listening lines, answers `/_localstack/health` as LocalStack does on both
/// listeners, and takes queue URLs written with LocalStack's host forms.
#[tokio::test]
async fn localstack_compat_listens_on_its_port_says_ready_and_reports_health() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = spawn(
        dir.path(),
        &[
            ("LOFT_LOCALSTACK_COMPAT", "1"),
            ("LOFT_LOCALSTACK_PORT", "0"),
        ],
    );
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let first = line(&mut stdout);
    let second = line(&mut stdout);
    let ready = line(&mut stdout);
    let base = first.strip_prefix("loft listening on ").unwrap().to_owned();
    let edge = second
        .strip_prefix("loft listening on ")
        .unwrap_or_else(|| panic!("a second listener, got {second:?}"))
        .to_owned();
    assert_ne!(base, edge, "two listeners");
    assert_eq!(
        ready, "Ready.",
        "LocalStack's ready line after the listeners"
    );

    let http = reqwest::Client::new();
    for url in [&base, &edge] {
        let resp = http
            .get(format!("{url}/_localstack/health"))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status().as_u16(), 200);
        let body: serde_json::Value = resp.json().await.unwrap();
        assert_eq!(
            body,
            json!({
                "services": {"sqs": "running", "sns": "running", "lambda": "running"},
                "edition": "community",
                "version": env!("CARGO_PKG_VERSION"),
            })
        );
    }

    // SQS through the extra listener, the queue named by LocalStack's URL forms.
    let sqs = sqs_client(&edge);
    sqs.create_queue()
        .queue_name("orders")
        .send()
        .await
        .unwrap();
    for (i, url) in [
        "http://sqs.us-east-1.localhost.localstack.cloud:4566/000000000000/orders",
        "http://localhost.localstack.cloud:4566/000000000000/orders",
    ]
    .iter()
    .enumerate()
    {
        sqs.send_message()
            .queue_url(*url)
            .message_body(format!("m{i}"))
            .send()
            .await
            .unwrap_or_else(|e| panic!("SendMessage to {url}: {e:?}"));
    }
    let got = sqs
        .receive_message()
        .queue_url("http://localhost.localstack.cloud:4566/000000000000/orders")
        .max_number_of_messages(10)
        .send()
        .await
        .unwrap();
    let mut bodies: Vec<String> = got
        .messages()
        .iter()
        .filter_map(|m| m.body().map(str::to_owned))
        .collect();
    bodies.sort();
    assert_eq!(bodies, ["m0", "m1"]);

    let rest = stop(child, stdout);
    assert!(!rest.contains("Ready."), "Ready. is printed once: {rest:?}");
}

/// Off (`LOFT_LOCALSTACK_COMPAT=0`, whatever the port says): one listener, no `Ready.`
/// line, and `/_localstack/health` is an unknown route.
#[tokio::test]
async fn without_localstack_compat_there_is_no_extra_listener_ready_line_or_health() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = spawn(
        dir.path(),
        &[
            ("LOFT_LOCALSTACK_COMPAT", "0"),
            ("LOFT_LOCALSTACK_PORT", "0"),
        ],
    );
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let first = line(&mut stdout);
    let base = first.strip_prefix("loft listening on ").unwrap().to_owned();
    let resp = reqwest::get(format!("{base}/_localstack/health"))
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 404);
    let rest = stop(child, stdout);
    assert_eq!(
        rest, "",
        "nothing more on stdout than the one listener's line"
    );
}

/// `loft probe URL` exits 0 when the URL answers 2xx, 1 (saying why) for any other status
/// or no answer.
#[test]
fn probe_exits_zero_only_for_a_2xx_answer() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = spawn(dir.path(), &[]);
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let first = line(&mut stdout);
    let base = first.strip_prefix("loft listening on ").unwrap().to_owned();
    let probe = |url: &str| {
        Command::new(env!("CARGO_BIN_EXE_loft"))
            .args(["probe", url])
            .output()
            .expect("run loft probe")
    };
    let ok = probe(&format!("{base}/ready"));
    assert_eq!(ok.status.code(), Some(0), "{ok:?}");
    let missing = probe(&format!("{base}/no-such-route"));
    assert_eq!(missing.status.code(), Some(1), "{missing:?}");
    assert!(
        String::from_utf8_lossy(&missing.stderr).contains("404"),
        "{missing:?}"
    );
    let dead = probe(&format!("http://{}/ready", dead_endpoint()));
    assert_eq!(dead.status.code(), Some(1), "{dead:?}");
    stop(child, stdout);
}

/// `loft probe --timeout S` gives up on a server that takes the connection but never
/// answers: exit 1 once the timeout has passed, not a hang.
#[test]
fn probe_fails_when_no_answer_comes_within_its_timeout() {
    // The kernel completes the connection; nothing ever reads the request or answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/ready", silent.local_addr().unwrap());
    let started = std::time::Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_loft"))
        .args(["probe", "--timeout", "0.3", &url])
        .output()
        .expect("run loft probe");
    let took = started.elapsed();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        took >= std::time::Duration::from_millis(300) && took < PATIENCE,
        "gave up after {took:?}"
    );
    drop(silent);
}
