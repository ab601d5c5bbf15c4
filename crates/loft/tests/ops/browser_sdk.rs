//! CORS end to end: a page served from another origin, in headless Chromium, sends,
//! receives and publishes with the browser build of the AWS SDK for JavaScript v3, signing
//! with SigV4 against a Loft that requires signatures and allows that origin
//! (`--cors-allowed-origin`). The same page fails against a Loft that allows no origin, and
//! a raw preflight shows what is allowed and that it needs no signature.
//!
//! The SDK is bundled once per lockfile: `crates/loft/tests/browser-sdk/` (package.json,
//! package-lock.json, entry.js) is copied to `target/tmp/browser-sdk/`, `npm ci` installs
//! the pinned packages there and esbuild makes `sdk.js`. Skipped, with a note, when
//! Chromium or npm is not installed.

use std::path::{Path, PathBuf};
use std::process::Command;

use axum::http::header;
use axum::response::Html;
use axum::routing::get;
use serde_json::{json, Value};

use crate::console::{chromium, need_chromium, Browser};
use crate::harness::Server;
use crate::skips::Need;

const KEY: &str = "AKIDBROWSER";
const SECRET: &str = "browser/Secret";

const SOURCES: &[&str] = &["package.json", "package-lock.json", "entry.js"];

const PAGE: &str =
    "<!doctype html><html><head><meta charset=\"utf-8\"><title>Loft CORS test</title>\
<script src=\"/sdk.js\"></script></head><body><p id=\"out\">loading</p></body></html>";

/// What the CORS test needs besides Chromium: npm, to install the pinned AWS SDK for
/// JavaScript; `LOFT_TEST_REQUIRE_NPM=1` (CI) makes its absence a failure.
fn need_npm() -> Need {
    Need {
        missing: npm()
            .is_none()
            .then(|| "npm is not installed (apt-get install npm)".into()),
        require_var: "LOFT_TEST_REQUIRE_NPM",
        how: "install it to run the CORS browser test",
    }
}

fn npm() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("npm"))
        .find(|p| p.is_file())
}

fn run(cmd: &mut Command, what: &str) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Builds (or reuses) the SDK bundle; returns its path.
fn bundle(npm: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser-sdk");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("browser-sdk");
    std::fs::create_dir_all(&dir).unwrap();
    let stamp: String = SOURCES
        .iter()
        .map(|f| std::fs::read_to_string(src.join(f)).expect("browser-sdk source"))
        .collect::<Vec<_>>()
        .join("\u{0}");
    let out = dir.join("sdk.js");
    let stamp_file = dir.join("stamp");
    if out.is_file() && std::fs::read_to_string(&stamp_file).ok().as_deref() == Some(&stamp) {
        return out;
    }
    for f in SOURCES {
        std::fs::copy(src.join(f), dir.join(f)).unwrap();
    }
    // Exactly the locked versions; no install scripts (esbuild's binary comes in its
    // platform package, which needs none).
    run(
        Command::new(npm)
            .args(["ci", "--no-audit", "--no-fund", "--ignore-scripts"])
            .current_dir(&dir),
        "npm ci",
    );
    run(
        Command::new(dir.join("node_modules/.bin/esbuild"))
            .args([
                "entry.js",
                "--bundle",
                "--format=iife",
                "--platform=browser",
                "--minify",
                "--outfile=sdk.js",
            ])
            .current_dir(&dir),
        "esbuild",
    );
    std::fs::write(&stamp_file, stamp).unwrap();
    out
}

/// The scenario the page runs against Loft at `endpoint`: SQS CreateQueue, SendMessage;
/// SNS CreateTopic, Subscribe (the queue, raw), Publish; SQS ReceiveMessage of both.
/// Evaluates to `{ok: true, bodies, requestId}` or `{ok: false, error}`.
fn scenario(endpoint: &str) -> String {
    let cfg = json!({
        "endpoint": endpoint,
        "region": "us-east-1",
        "credentials": {"accessKeyId": KEY, "secretAccessKey": SECRET},
    });
    format!(
        r#"(async () => {{
  const S = window.LoftSdk;
  const cfg = {cfg};
  try {{
    const sqs = new S.SQSClient(cfg);
    const sns = new S.SNSClient(cfg);
    const q = await sqs.send(new S.CreateQueueCommand({{ QueueName: "from-the-browser" }}));
    const sent = await sqs.send(new S.SendMessageCommand({{ QueueUrl: q.QueueUrl, MessageBody: "sent by the page" }}));
    const t = await sns.send(new S.CreateTopicCommand({{ Name: "browser-topic" }}));
    await sns.send(new S.SubscribeCommand({{ TopicArn: t.TopicArn, Protocol: "sqs",
      Endpoint: "arn:aws:sqs:us-east-1:000000000000:from-the-browser",
      Attributes: {{ RawMessageDelivery: "true" }} }}));
    await sns.send(new S.PublishCommand({{ TopicArn: t.TopicArn, Message: "published by the page" }}));
    const bodies = [];
    for (let i = 0; i < 10 && bodies.length < 2; i++) {{
      const r = await sqs.send(new S.ReceiveMessageCommand({{ QueueUrl: q.QueueUrl,
        MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }}));
      for (const m of r.Messages || []) bodies.push(m.Body);
    }}
    bodies.sort();
    return {{ ok: true, bodies, messageId: sent.MessageId, requestId: sent.$metadata.requestId || null }};
  }} catch (e) {{
    return {{ ok: false, error: String(e && (e.name + ": " + e.message)) }};
  }}
}})()"#
    )
}

#[test]
fn a_page_from_an_allowed_origin_sends_receives_and_publishes_with_the_js_sdk() {
    const TEST: &str = "a_page_from_an_allowed_origin_sends_receives_and_publishes_with_the_js_sdk";
    let Some(binary) = chromium() else {
        return need_chromium().skip(TEST);
    };
    let Some(npm) = npm() else {
        return need_npm().skip(TEST);
    };
    let sdk = std::fs::read(bundle(&npm)).unwrap();

    // The page's own origin: a small server on another port than Loft's.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    let app = axum::Router::new()
        .route("/", get(|| async { Html(PAGE) }))
        .route(
            "/sdk.js",
            get(move || {
                let sdk = sdk.clone();
                async move { ([(header::CONTENT_TYPE, "text/javascript")], sdk) }
            }),
        );
    rt.spawn(async move { axum::serve(listener, app).await });

    let credentials = format!("{KEY}:{SECRET}");
    let allowed = Server::start_with(
        &["--cors-allowed-origin", &origin],
        &[("LOFT_CREDENTIALS", credentials.as_str())],
    )
    .unwrap_or_else(|f| panic!("loft did not start: {f:?}"));
    let closed = Server::start_with(&[], &[("LOFT_CREDENTIALS", credentials.as_str())])
        .unwrap_or_else(|f| panic!("loft did not start: {f:?}"));

    let mut b = Browser::launch(&binary);
    b.navigate(&format!("{origin}/"));
    b.wait_for("the SDK bundle", "typeof window.LoftSdk === 'object'");

    let got = b.eval(&scenario(&allowed.base));
    assert_eq!(got["ok"], json!(true), "the page's calls failed: {got}");
    assert_eq!(
        got["bodies"],
        json!(["published by the page", "sent by the page"]),
        "{got}"
    );
    // x-amzn-requestid is exposed to the page.
    assert!(
        got["requestId"].as_str().is_some_and(|r| !r.is_empty()),
        "the SDK could not read x-amzn-requestid: {got}"
    );
    b.screenshot("cors-sdk");

    // Without an allowed origin the browser blocks the same calls: the test above passes
    // because of CORS, not in spite of it.
    let refused = b.eval(&scenario(&closed.base));
    assert_eq!(
        refused["ok"],
        json!(false),
        "a Loft allowing no origin answered the page: {refused}"
    );
    assert!(
        refused["error"].as_str().unwrap_or("").contains("fetch"),
        "expected a network (CORS) failure: {refused}"
    );

    // A preflight: answered without a signature, for the SDK's headers only.
    let preflight = |server: &Server, request_headers: &str| {
        let url = format!("{}/", server.base);
        let origin = origin.clone();
        let headers = request_headers.to_owned();
        rt.block_on(async move {
            reqwest::Client::new()
                .request(reqwest::Method::OPTIONS, url)
                .header("origin", origin)
                .header("access-control-request-method", "POST")
                .header("access-control-request-headers", headers)
                .send()
                .await
                .unwrap()
        })
    };
    let r = preflight(
        &allowed,
        "authorization,content-type,x-amz-date,x-amz-target,amz-sdk-invocation-id,x-loft-console",
    );
    assert!(r.status().is_success(), "preflight: {}", r.status());
    let h = |name: &str| {
        r.headers()
            .get(name)
            .map(|v| v.to_str().unwrap().to_ascii_lowercase())
            .unwrap_or_default()
    };
    assert_eq!(h("access-control-allow-origin"), origin);
    let allowed_headers: Vec<String> = h("access-control-allow-headers")
        .split(',')
        .map(|s| s.trim().to_owned())
        .collect();
    for sdk_header in [
        "authorization",
        "content-type",
        "x-amz-date",
        "x-amz-target",
        "amz-sdk-invocation-id",
    ] {
        assert!(
            allowed_headers.iter().any(|a| a == sdk_header),
            "{sdk_header} not allowed: {allowed_headers:?}"
        );
    }
    assert!(
        !allowed_headers.iter().any(|a| a == "x-loft-console"),
        "the console's CSRF header must not be allowed cross-origin: {allowed_headers:?}"
    );
    assert!(h("access-control-allow-methods").contains("post"));
    assert!(h("access-control-allow-credentials").is_empty());
    // A Loft with no allowed origin sends no CORS header at all.
    let r = preflight(&closed, "authorization");
    assert!(r.headers().get("access-control-allow-origin").is_none());
    let exposed: Value = json!(r
        .headers()
        .get("access-control-expose-headers")
        .map(|v| v.to_str().unwrap().to_owned()));
    assert_eq!(exposed, Value::Null);
}

/// `Access-Control-Allow-Origin` of a preflight from `origin` to `server`.
async fn allow_origin(server: &Server, origin: &str) -> Option<String> {
    let r = server
        .http
        .request(reqwest::Method::OPTIONS, format!("{}/", server.base))
        .header("origin", origin)
        .header("access-control-request-method", "POST")
        .send()
        .await
        .unwrap();
    r.headers()
        .get("access-control-allow-origin")
        .map(|v| v.to_str().unwrap().to_owned())
}

#[tokio::test]
async fn origins_come_from_the_environment_and_the_config_file() {
    let env = Server::start_with(
        &[],
        &[(
            "LOFT_CORS_ALLOWED_ORIGINS",
            "http://a.example:8080,http://b.example",
        )],
    )
    .unwrap_or_else(|f| panic!("loft did not start: {f:?}"));
    assert_eq!(
        allow_origin(&env, "http://b.example").await.as_deref(),
        Some("http://b.example")
    );
    assert_eq!(
        allow_origin(&env, "http://a.example:8080").await.as_deref(),
        Some("http://a.example:8080")
    );
    assert_eq!(allow_origin(&env, "http://c.example").await, None);

    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("loft.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\nlisten = \"127.0.0.1:0\"\ndb = \"{}\"\ncors_allowed_origins = [\"*\"]\n",
            dir.path().join("loft.db").display()
        ),
    )
    .unwrap();
    let file = Server::start_in(dir, &["--config", config.to_str().unwrap()], &[])
        .unwrap_or_else(|f| panic!("loft did not start: {f:?}"));
    assert_eq!(
        allow_origin(&file, "http://anywhere.example")
            .await
            .as_deref(),
        Some("*")
    );

    // A malformed origin stops Loft at start with a clear message.
    let bad = Server::start_with(&["--cors-allowed-origin", "localhost:3000"], &[])
        .err()
        .expect("loft started with a bad origin");
    assert!(
        bad.stderr.contains("scheme://host[:port]"),
        "{}",
        bad.stderr
    );
}
