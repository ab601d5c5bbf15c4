//! The LocalStack drop-in (`--localstack-compat`, `LOFT_LOCALSTACK_COMPAT`): a second
//! listener, the `Ready.` line LocalStack's testcontainers modules wait for, `GET
//! /_localstack/health` in LocalStack's shape, and queue URLs written with LocalStack's
//! hosts; and `loft probe`, the container image's shell-free health check.

use serde_json::json;

use crate::common::{dead_endpoint, sqs_client, PATIENCE};
use crate::loft::{run_cli, LoftProcess, TestLoft};

/// `loft serve` on `127.0.0.1:0` over a fresh database, with `env` set.
fn start(env: &[(&str, &str)]) -> LoftProcess {
    TestLoft::new().envs(env).start()
}

/// Sends SIGTERM, asserts a clean exit, and returns all of stdout after the first `n`
/// lines (read to its end, which comes when the process exits).
fn stop(mut loft: LoftProcess, n: usize) -> String {
    loft.stop_clean();
    loft.stdout_to_end()[n..].join("\n")
}

/// With `LOFT_LOCALSTACK_COMPAT=1` Loft listens on the extra port too, prints `Ready.`
/// after its listening lines, answers `/_localstack/health` as LocalStack does on both
/// listeners, and takes queue URLs written with LocalStack's host forms.
#[tokio::test]
async fn localstack_compat_listens_on_its_port_says_ready_and_reports_health() {
    let loft = start(&[
        ("LOFT_LOCALSTACK_COMPAT", "1"),
        ("LOFT_LOCALSTACK_PORT", "0"),
    ]);
    // The first three lines: both listeners, then `Ready.` (awaited, not slept for).
    let lines = match loft.wait_stdout(PATIENCE, |l| l == "Ready.") {
        Some(_) => loft.stdout_lines(),
        None => panic!("no Ready. line: {:?}", loft.stdout_lines()),
    };
    let (first, second, ready) = (&lines[0], &lines[1], &lines[2]);
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

    let rest = stop(loft, 3);
    assert!(!rest.contains("Ready."), "Ready. is printed once: {rest:?}");
}

/// Off (`LOFT_LOCALSTACK_COMPAT=0`, whatever the port says): one listener, no `Ready.`
/// line, and `/_localstack/health` is an unknown route.
#[tokio::test]
async fn without_localstack_compat_there_is_no_extra_listener_ready_line_or_health() {
    let loft = start(&[
        ("LOFT_LOCALSTACK_COMPAT", "0"),
        ("LOFT_LOCALSTACK_PORT", "0"),
    ]);
    let base = loft.url.clone();
    let resp = reqwest::get(format!("{base}/_localstack/health"))
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 404);
    let rest = stop(loft, 1);
    assert_eq!(
        rest, "",
        "nothing more on stdout than the one listener's line"
    );
}

/// `loft probe URL` exits 0 when the URL answers 2xx, 1 (saying why) for any other status
/// or no answer.
#[test]
fn probe_exits_zero_only_for_a_2xx_answer() {
    let loft = start(&[]);
    let base = loft.url.clone();
    let probe = |url: &str| run_cli(&["probe", url], None, &[]);
    let ok = probe(&format!("{base}/ready"));
    assert_eq!(ok.code, 0, "{ok:?}");
    let missing = probe(&format!("{base}/no-such-route"));
    assert_eq!(missing.code, 1, "{missing:?}");
    assert!(missing.stderr.contains("404"), "{missing:?}");
    let dead = probe(&format!("http://{}/ready", dead_endpoint()));
    assert_eq!(dead.code, 1, "{dead:?}");
    stop(loft, 1);
}

/// `loft probe --timeout S` gives up on a server that takes the connection but never
/// answers: exit 1 once the timeout has passed, not a hang.
#[test]
fn probe_fails_when_no_answer_comes_within_its_timeout() {
    // The kernel completes the connection; nothing ever reads the request or answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/ready", silent.local_addr().unwrap());
    let started = std::time::Instant::now();
    let out = run_cli(&["probe", "--timeout", "0.3", &url], None, &[]);
    let took = started.elapsed();
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        took >= std::time::Duration::from_millis(300) && took < PATIENCE,
        "gave up after {took:?}"
    );
    drop(silent);
}
