//! A PostgreSQL cell that is down fails only its own queues' and topics' requests:
//! `loft serve` over two cells (two schemas of the test database), cell 2 reached through
//! a TCP forwarder in the test that can refuse connections (its port closed, its
//! connections cut) or black-hole them (connections accepted, nothing passed either way),
//! and pass again. Raw HTTP in each protocol's shape (SQS JSON, SQS Query XML, SNS XML).
//! The outage test names its cells in the config file (`[[cells]]`), the start test with
//! repeated `--database-url`.
//!
//! Skipped (with a note, counted by `skipped_multinode_cases`) unless
//! `LOFT_TEST_DATABASE_URL` names a database; failed instead with
//! `LOFT_TEST_REQUIRE_POSTGRES=1`.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use crate::loft::{LoftProcess, Storage, TestLoft};

const ACCOUNT: &str = "000000000000";

/// The bound the issue sets on a down cell's answer, with the test's own clock (an upper
/// bound only; the store answers after at most 8 s by design).
const DOWN_ANSWER_WITHIN: Duration = Duration::from_secs(10);

/// What the forwarder does with cell 2's connections.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    /// Passes bytes both ways.
    Pass,
    /// Its port closed (connections refused) and its open connections cut.
    Refuse,
    /// Connections accepted and held; nothing passed either way.
    BlackHole,
}

/// A TCP forwarder on 127.0.0.1 to `upstream`, switched by [`Forwarder::set`]; stopped
/// when dropped.
struct Forwarder {
    port: u16,
    mode: watch::Sender<Mode>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        self.task.abort();
        let _ = self.mode.send(Mode::Refuse);
    }
}

impl Forwarder {
    async fn start(upstream: String) -> Forwarder {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("address").port();
        let (mode, rx) = watch::channel(Mode::Pass);
        let task = tokio::spawn(accept_loop(Some(listener), port, upstream, rx));
        Forwarder { port, mode, task }
    }

    fn set(&self, mode: Mode) {
        self.mode.send_replace(mode);
    }
}

/// Waits until `mode` passes bytes; `false` when it refuses (the connection is to close).
async fn until_passing(mode: &mut watch::Receiver<Mode>) -> bool {
    loop {
        let now = *mode.borrow_and_update();
        match now {
            Mode::Pass => return true,
            Mode::Refuse => return false,
            Mode::BlackHole => {
                if mode.changed().await.is_err() {
                    return false;
                }
            }
        }
    }
}

async fn accept_loop(
    mut listener: Option<TcpListener>,
    port: u16,
    upstream: String,
    mut mode: watch::Receiver<Mode>,
) {
    loop {
        let Some(l) = listener.take() else {
            // Refusing: the port stays closed until the mode changes.
            if *mode.borrow_and_update() == Mode::Refuse {
                if mode.changed().await.is_err() {
                    return;
                }
                continue;
            }
            listener = TcpListener::bind(("127.0.0.1", port)).await.ok();
            if listener.is_none() {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            continue;
        };
        tokio::select! {
            accepted = l.accept() => {
                if let Ok((socket, _)) = accepted {
                    tokio::spawn(connection(socket, upstream.clone(), mode.clone()));
                }
                listener = Some(l);
            }
            changed = mode.changed() => {
                if changed.is_err() {
                    return;
                }
                if *mode.borrow() != Mode::Refuse {
                    listener = Some(l);
                }
                // else: dropped, the port closes.
            }
        }
    }
}

async fn connection(socket: TcpStream, upstream: String, mut mode: watch::Receiver<Mode>) {
    if !until_passing(&mut mode).await {
        return;
    }
    let Ok(up) = TcpStream::connect(&upstream).await else {
        return;
    };
    let (cr, cw) = socket.into_split();
    let (ur, uw) = up.into_split();
    let a = tokio::spawn(pipe(cr, uw, mode.clone()));
    let b = tokio::spawn(pipe(ur, cw, mode));
    let _ = tokio::join!(a, b);
}

/// Copies `from` to `to` while the mode passes; holds the bytes while it black-holes;
/// ends (closing its halves) when it refuses or either side closes.
async fn pipe(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    mut mode: watch::Receiver<Mode>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        if !until_passing(&mut mode).await {
            return;
        }
        tokio::select! {
            read = from.read(&mut buf) => {
                let n = match read {
                    Ok(0) | Err(_) => return,
                    Ok(n) => n,
                };
                // Read while passing; held if the mode changed meanwhile.
                if !until_passing(&mut mode).await || to.write_all(&buf[..n]).await.is_err() {
                    return;
                }
            }
            changed = mode.changed() => {
                if changed.is_err() {
                    return;
                }
            }
        }
    }
}

/// One HTTP answer: status, `Retry-After`, body.
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) retry_after: Option<String>,
    pub(crate) body: String,
}

pub(crate) async fn post(
    http: &reqwest::Client,
    base: &str,
    target: Option<&str>,
    body: String,
) -> Answer {
    let mut req = http.post(format!("{base}/"));
    req = match target {
        Some(op) => req
            .header("x-amz-target", format!("AmazonSQS.{op}"))
            .header("content-type", "application/x-amz-json-1.0"),
        None => req.header("content-type", "application/x-www-form-urlencoded"),
    };
    let resp = req.body(body).send().await.expect("HTTP answer");
    let status = resp.status().as_u16();
    let retry_after = resp
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = resp.text().await.expect("body");
    Answer {
        status,
        retry_after,
        body,
    }
}

/// An SQS JSON call that must succeed.
pub(crate) async fn sqs_ok(http: &reqwest::Client, base: &str, op: &str, body: Value) -> Value {
    let a = post(http, base, Some(op), body.to_string()).await;
    assert_eq!(a.status, 200, "{op}: {}", a.body);
    serde_json::from_str(&a.body).expect("JSON")
}

/// A form body of `pairs`, URL-encoded.
pub(crate) fn form(pairs: &[(&str, &str)]) -> String {
    reqwest::Url::parse_with_params("http://x/", pairs)
        .expect("form")
        .query()
        .unwrap_or("")
        .to_owned()
}

fn queue_url(base: &str, name: &str) -> String {
    format!("{base}/{ACCOUNT}/{name}")
}

fn topic_arn(name: &str) -> String {
    format!("arn:aws:sns:us-east-1:{ACCOUNT}:{name}")
}

/// Asserts `a` is the 503 `ServiceUnavailable` of a down cell with `Retry-After`, in
/// SQS JSON (`json`) or Query XML.
fn assert_unavailable(a: &Answer, json: bool, what: &str) {
    assert_eq!(a.status, 503, "{what}: {}", a.body);
    assert!(
        a.retry_after
            .as_deref()
            .is_some_and(|v| v.parse::<u32>().is_ok()),
        "{what}: Retry-After {:?}",
        a.retry_after
    );
    if json {
        let v: Value = serde_json::from_str(&a.body).expect("JSON error");
        assert_eq!(
            v["__type"], "com.amazonaws.sqs#ServiceUnavailable",
            "{what}: {}",
            a.body
        );
    } else {
        assert!(
            a.body.contains("<Code>ServiceUnavailable</Code>")
                && a.body.contains("<Type>Receiver</Type>"),
            "{what}: {}",
            a.body
        );
    }
}

/// Loft over two cells: cell 1 the test database directly, cell 2 through `forwarder`,
/// each in a fresh schema (dropped at the end).
struct TwoCells {
    loft: LoftProcess,
    url: String,
    schemas: [String; 2],
}

impl Drop for TwoCells {
    fn drop(&mut self) {
        self.loft.stop();
        let (url, schemas) = (self.url.clone(), self.schemas.clone());
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            for s in &schemas {
                let _ = rt.block_on(loft_store::PgStore::drop_schema(&url, s));
            }
        })
        .join();
    }
}

pub(crate) fn with_schema(url: &str, schema: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}options=-c%20search_path%3D{schema}")
}

/// The test database's URL with its port replaced by `port`, and its `host:port`.
fn through(url: &str, port: u16) -> (String, String) {
    let mut u = reqwest::Url::parse(url).expect("LOFT_TEST_DATABASE_URL is a URL");
    let upstream = format!(
        "{}:{}",
        u.host_str().expect("host"),
        u.port().unwrap_or(5432)
    );
    u.set_port(Some(port)).expect("port");
    (u.to_string(), upstream)
}

pub(crate) async fn schemas(url: &str) -> [String; 2] {
    let tag = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_nanos()
        & 0xffff_ffff_ffff;
    let s = [
        format!("loft_cd1_{tag:012x}"),
        format!("loft_cd2_{tag:012x}"),
    ];
    for schema in &s {
        loft_store::PgStore::create_schema(url, schema)
            .await
            .expect("connect to LOFT_TEST_DATABASE_URL");
    }
    s
}

fn database_url(test: &str) -> Option<String> {
    match std::env::var("LOFT_TEST_DATABASE_URL") {
        Ok(u) if !u.is_empty() => Some(u),
        _ => {
            crate::skips::postgres().skip(&format!("cells_down::{test}"));
            None
        }
    }
}

/// Sends `n` numbered messages to `queue`, each acknowledged; returns their bodies.
async fn send_numbered(http: &reqwest::Client, base: &str, queue: &str, n: usize) -> Vec<String> {
    let mut bodies = Vec::new();
    for i in 0..n {
        let body = format!("{queue}-{i}");
        sqs_ok(
            http,
            base,
            "SendMessage",
            json!({"QueueUrl": queue_url(base, queue), "MessageBody": body}),
        )
        .await;
        bodies.push(body);
    }
    bodies
}

/// Sends `n` messages named `tag` to `queue`, each acknowledged; returns their bodies
/// and how long each send took.
async fn timed_sends(
    http: &reqwest::Client,
    base: &str,
    queue: &str,
    tag: &str,
    n: usize,
) -> (Vec<String>, Vec<Duration>) {
    let mut bodies = Vec::new();
    let mut times = Vec::new();
    for i in 0..n {
        let body = format!("{queue}-{tag}-{i}");
        let at = Instant::now();
        sqs_ok(
            http,
            base,
            "SendMessage",
            json!({"QueueUrl": queue_url(base, queue), "MessageBody": body}),
        )
        .await;
        times.push(at.elapsed());
        bodies.push(body);
    }
    (bodies, times)
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

/// Receives and deletes from `queue` until every body of `want` came, within 60 s.
async fn drain_expecting(http: &reqwest::Client, base: &str, queue: &str, want: &[String]) {
    let mut missing: HashSet<&str> = want.iter().map(String::as_str).collect();
    let until = Instant::now() + Duration::from_secs(60);
    while !missing.is_empty() && Instant::now() < until {
        let got = sqs_ok(
            http,
            base,
            "ReceiveMessage",
            json!({"QueueUrl": queue_url(base, queue), "MaxNumberOfMessages": 10,
                   "WaitTimeSeconds": 1}),
        )
        .await;
        for m in got["Messages"].as_array().into_iter().flatten() {
            missing.remove(m["Body"].as_str().unwrap_or(""));
            sqs_ok(
                http,
                base,
                "DeleteMessage",
                json!({"QueueUrl": queue_url(base, queue),
                       "ReceiptHandle": m["ReceiptHandle"]}),
            )
            .await;
        }
    }
    assert!(
        missing.is_empty(),
        "{queue}: acknowledged messages missing after the outage: {missing:?}"
    );
}

/// Waits (at most 30 s) until a send to `queue` succeeds again; returns its body.
async fn until_back(http: &reqwest::Client, base: &str, queue: &str) -> String {
    let until = Instant::now() + Duration::from_secs(30);
    let body = format!("{queue}-back");
    loop {
        let a = post(
            http,
            base,
            Some("SendMessage"),
            json!({"QueueUrl": queue_url(base, queue), "MessageBody": body}).to_string(),
        )
        .await;
        if a.status == 200 {
            return body;
        }
        assert_unavailable(&a, true, "a send while the cell comes back");
        assert!(Instant::now() < until, "cell 2 not back within 30 s");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// One outage of cell 2 in `mode`: its queue and topic answer 503 in each protocol within
/// [`DOWN_ANSWER_WITHIN`]; cell 1's queue and topic serve; ListQueues answers with cell
/// 1's queue; after the forwarder passes again every acknowledged message is received.
async fn outage(http: &reqwest::Client, base: &str, fwd: &Forwarder, mode: Mode) {
    let before_one = send_numbered(http, base, "one", 5).await;
    let mut before_two = send_numbered(http, base, "two", 5).await;
    // A receipt handle of cell 2 taken before the outage, its message hidden 1 s.
    let held = sqs_ok(
        http,
        base,
        "ReceiveMessage",
        json!({"QueueUrl": queue_url(base, "two"), "MaxNumberOfMessages": 1,
               "VisibilityTimeout": 1}),
    )
    .await;
    let handle = held["Messages"][0]["ReceiptHandle"].clone();
    assert!(handle.is_string(), "a message of queue two: {held}");

    // Cell 1's send latency before the outage, for the figures printed below.
    let (before_sends, before_times) = timed_sends(http, base, "one", "before", 10).await;

    fwd.set(mode);

    // The down cell's queue: SendMessage, ReceiveMessage, DeleteMessage (SQS JSON). The
    // first request runs while cell 1 is sent to, so the print shows whether cell 1's
    // requests wait on it (in a black hole the first one takes the cell's full bound).
    let started = Instant::now();
    let first = {
        let (http, url) = (http.clone(), queue_url(base, "two"));
        let base = base.to_owned();
        tokio::spawn(async move {
            let a = post(
                &http,
                &base,
                Some("SendMessage"),
                json!({"QueueUrl": url, "MessageBody": "during"}).to_string(),
            )
            .await;
            (a, started.elapsed())
        })
    };
    let (meanwhile_sends, meanwhile_times) = timed_sends(http, base, "one", "meanwhile", 10).await;
    let (a, took) = first.await.expect("the down cell's request");
    assert!(
        took < DOWN_ANSWER_WITHIN,
        "{mode:?}: the first answer of the down cell took {took:?}"
    );
    eprintln!(
        "{mode:?}: the down cell's first answer after {took:?}; cell 1's SendMessage median \
         {:?} before the outage, {:?} meanwhile: {}",
        median(before_times),
        median(meanwhile_times),
        a.body
    );
    assert_unavailable(&a, true, "SendMessage to the down cell");
    for (op, body) in [
        (
            "ReceiveMessage",
            json!({"QueueUrl": queue_url(base, "two"), "WaitTimeSeconds": 5}),
        ),
        (
            "DeleteMessage",
            json!({"QueueUrl": queue_url(base, "two"), "ReceiptHandle": handle}),
        ),
    ] {
        let started = Instant::now();
        let a = post(http, base, Some(op), body.to_string()).await;
        assert!(
            started.elapsed() < DOWN_ANSWER_WITHIN,
            "{mode:?}: {op} took {:?}",
            started.elapsed()
        );
        assert_unavailable(&a, true, op);
    }
    // SQS Query XML and SNS XML.
    let a = post(
        http,
        base,
        None,
        form(&[
            ("Action", "SendMessage"),
            ("Version", "2012-11-05"),
            ("QueueUrl", &queue_url(base, "two")),
            ("MessageBody", "during"),
        ]),
    )
    .await;
    assert_unavailable(&a, false, "SQS Query SendMessage");
    let a = post(
        http,
        base,
        None,
        form(&[
            ("Action", "Publish"),
            ("Version", "2010-03-31"),
            ("TopicArn", &topic_arn("t2")),
            ("Message", "during"),
        ]),
    )
    .await;
    assert_unavailable(&a, false, "SNS Publish");

    // The live cell serves: its queue sends, receives and deletes, its topic publishes.
    let during = send_numbered(http, base, "one", 3).await;
    let a = post(
        http,
        base,
        None,
        form(&[
            ("Action", "Publish"),
            ("Version", "2010-03-31"),
            ("TopicArn", &topic_arn("t1")),
            ("Message", "during"),
        ]),
    )
    .await;
    assert_eq!(a.status, 200, "SNS Publish to the live cell: {}", a.body);
    let listed = sqs_ok(http, base, "ListQueues", json!({})).await;
    let urls: Vec<&str> = listed["QueueUrls"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(
        urls,
        [queue_url(base, "one")],
        "ListQueues while cell 2 is down lists the live cells' queues"
    );
    let mut want_one = before_one;
    want_one.extend(during);
    want_one.extend(before_sends);
    want_one.extend(meanwhile_sends);
    drain_expecting(http, base, "one", &want_one).await;

    // Back: every message acknowledged before the outage (the held one included).
    fwd.set(Mode::Pass);
    before_two.push(until_back(http, base, "two").await);
    drain_expecting(http, base, "two", &before_two).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_down_cell_fails_only_its_own_queues() {
    let Some(url) = database_url("a_down_cell_fails_only_its_own_queues") else {
        return;
    };
    let schemas = schemas(&url).await;
    let (_, upstream) = through(&url, 1);
    let fwd = Forwarder::start(upstream).await;
    let (via, _) = through(&url, fwd.port);
    // The cells come from the config file's `[[cells]]`, in order.
    let dir = tempfile::tempdir().expect("temporary directory");
    let config = dir.path().join("loft.toml");
    std::fs::write(
        &config,
        format!(
            "[[cells]]\ndatabase_url = {:?}\n\n[[cells]]\ndatabase_url = {:?}\n",
            with_schema(&url, &schemas[0]),
            with_schema(&via, &schemas[1])
        ),
    )
    .expect("config file");
    let loft = TestLoft::new()
        .storage(Storage::FromArgs)
        .arg("--config")
        .arg(&config)
        .args(["--database-pool-size", "4"])
        .log("warn")
        .start_in(dir);
    let cells = TwoCells {
        loft,
        url: url.clone(),
        schemas,
    };
    let base = cells.loft.url.clone();
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(40))
        .build()
        .expect("HTTP client");
    // New queues and topics spread by count, ties to the lowest cell: "one" and "t1" in
    // cell 1, "two" and "t2" in cell 2.
    for q in ["one", "two"] {
        sqs_ok(&http, &base, "CreateQueue", json!({"QueueName": q})).await;
    }
    for t in ["t1", "t2"] {
        let a = post(
            &http,
            &base,
            None,
            form(&[
                ("Action", "CreateTopic"),
                ("Version", "2010-03-31"),
                ("Name", t),
            ]),
        )
        .await;
        assert_eq!(a.status, 200, "CreateTopic {t}: {}", a.body);
    }

    outage(&http, &base, &fwd, Mode::Refuse).await;
    outage(&http, &base, &fwd, Mode::BlackHole).await;
    // The outbox relay worker (every second, seconds of outage above) passes the down
    // cell over, as the other workers do, instead of logging a failure at each tick.
    let log = cells.loft.stderr();
    assert!(log.contains("cell down"), "the outage is logged: {log}");
    assert!(
        !log.contains("relaying work across cells failed"),
        "the relay worker passes a down cell over: {log}"
    );

    // `/ready` answers while a cell is down: the node serves the other cells.
    fwd.set(Mode::Refuse);
    let ready = http
        .get(format!("{base}/ready"))
        .send()
        .await
        .expect("/ready");
    assert_eq!(ready.status().as_u16(), 200);
    fwd.set(Mode::Pass);
}

/// `loft serve` refuses to start while cell 2 refuses connections or never answers
/// (within its 10 s connect bound, not hanging), naming the cell.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_refuses_to_start_while_a_cell_is_down() {
    let Some(url) = database_url("serve_refuses_to_start_while_a_cell_is_down") else {
        return;
    };
    let schemas = schemas(&url).await;
    let (_, upstream) = through(&url, 1);
    let fwd = Forwarder::start(upstream).await;
    let (via, _) = through(&url, fwd.port);
    let mut failures = Vec::new();
    for mode in [Mode::Refuse, Mode::BlackHole] {
        fwd.set(mode);
        let started = Instant::now();
        let failed = TestLoft::new()
            .storage(Storage::Postgres(with_schema(&url, &schemas[0])))
            .args(["--database-url", &with_schema(&via, &schemas[1])])
            .log("warn")
            .try_start();
        failures.push((mode, started.elapsed(), failed));
    }
    for s in &schemas {
        let _ = loft_store::PgStore::drop_schema(&url, s).await;
    }
    for (mode, took, failed) in failures {
        let failure = match failed {
            Ok(mut p) => {
                p.stop();
                panic!("loft serve started while cell 2 was down ({mode:?})");
            }
            Err(f) => f,
        };
        assert!(
            failure
                .stderr
                .contains("cell 2: cannot connect to PostgreSQL"),
            "{mode:?}: the start's error names the cell: {}",
            failure.stderr
        );
        // The harness waits 30 s for a start; the 10 s bound ends it well before.
        assert!(took < Duration::from_secs(25), "{mode:?}: took {took:?}");
    }
}

/// With cell 1 (the catalog's) down, the queues of cell 2 a node knows keep serving;
/// creating a queue answers 503 (placement needs the catalog) and ListQueues answers
/// with cell 2's queues. After cell 1 returns, its acknowledged messages are all there.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn with_the_catalog_cell_down_other_cells_serve() {
    let Some(url) = database_url("with_the_catalog_cell_down_other_cells_serve") else {
        return;
    };
    let schemas = schemas(&url).await;
    let (_, upstream) = through(&url, 1);
    let fwd = Forwarder::start(upstream).await;
    let (via, _) = through(&url, fwd.port);
    let loft = TestLoft::new()
        .storage(Storage::Postgres(with_schema(&via, &schemas[0])))
        .args(["--database-url", &with_schema(&url, &schemas[1])])
        .args(["--database-pool-size", "4"])
        .log("warn")
        .start();
    let cells = TwoCells {
        loft,
        url: url.clone(),
        schemas,
    };
    let base = cells.loft.url.clone();
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(40))
        .build()
        .expect("HTTP client");
    for q in ["one", "two"] {
        sqs_ok(&http, &base, "CreateQueue", json!({"QueueName": q})).await;
    }
    let mut before_one = send_numbered(&http, &base, "one", 5).await;
    let before_two = send_numbered(&http, &base, "two", 5).await;

    fwd.set(Mode::Refuse);
    let a = post(
        &http,
        &base,
        Some("SendMessage"),
        json!({"QueueUrl": queue_url(&base, "one"), "MessageBody": "during"}).to_string(),
    )
    .await;
    assert_unavailable(&a, true, "SendMessage to cell 1");
    let a = post(
        &http,
        &base,
        Some("CreateQueue"),
        json!({"QueueName": "three"}).to_string(),
    )
    .await;
    assert_unavailable(&a, true, "CreateQueue without the catalog");
    let mut want_two = before_two;
    want_two.extend(send_numbered(&http, &base, "two", 3).await);
    drain_expecting(&http, &base, "two", &want_two).await;
    let listed = sqs_ok(&http, &base, "ListQueues", json!({})).await;
    assert_eq!(
        listed["QueueUrls"],
        json!([queue_url(&base, "two")]),
        "ListQueues while cell 1 is down lists cell 2's queues"
    );

    fwd.set(Mode::Pass);
    before_one.push(until_back(&http, &base, "one").await);
    drain_expecting(&http, &base, "one", &before_one).await;
    sqs_ok(&http, &base, "CreateQueue", json!({"QueueName": "three"})).await;
}
