//! The web console end to end in headless Chromium, driven over the DevTools protocol: the
//! page loads, shows live counts, sends a message, browses it without changing its
//! visibility, purges, and is saved as screenshots (test artefacts in
//! `target/tmp/loft-console-*.png`). Skipped, with a note, when Chromium is not installed
//! (`apt-get install chromium`; `LOFT_CHROMIUM` names another binary). Without one they
//! skip, counted on the terminal by [`skipped_console_browser_tests`]; with
//! `LOFT_TEST_REQUIRE_CHROMIUM=1` (CI) they fail instead.

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use base64::Engine;
use serde_json::{json, Value};
use tungstenite::stream::MaybeTlsStream;
use tungstenite::{Message, WebSocket};

use crate::harness::Server;
use crate::skips::Need;

/// What the browser tests need: a Chromium binary; `LOFT_TEST_REQUIRE_CHROMIUM=1` (CI)
/// makes its absence a failure.
pub fn need_chromium() -> Need {
    Need {
        missing: chromium().is_none().then(|| {
            "chromium is not installed (apt-get install chromium, or LOFT_CHROMIUM=PATH)".into()
        }),
        require_var: "LOFT_TEST_REQUIRE_CHROMIUM",
        how: "install it to run them",
    }
}

/// Says on the terminal how many browser tests were skipped and why (or fails, with
/// `LOFT_TEST_REQUIRE_CHROMIUM=1`); silent when Chromium is there.
#[test]
fn skipped_console_browser_tests() {
    need_chromium().report(
        "console browser tests",
        &[
            "console::console_shows_live_counts",
            "console::with_credentials_the_browser",
            "console::twelve_hundred_queues",
            "console::each_queue_and_topic_has_a_chart",
        ],
    );
}

/// The Chromium binary: `LOFT_CHROMIUM`, else the first of chromium, chromium-browser and
/// google-chrome on `PATH`.
pub fn chromium() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("LOFT_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for name in ["chromium", "chromium-browser", "google-chrome"] {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// A headless Chromium and one DevTools session on one page.
pub struct Browser {
    child: Child,
    ws: WebSocket<MaybeTlsStream<TcpStream>>,
    session: String,
    next_id: u64,
    _profile: tempfile::TempDir,
    /// What the "user" types when the browser asks for a user name and password
    /// ([`Browser::sign_in_with`]).
    credentials: Option<(String, String)>,
    /// The authentication challenges the browser asked about (`authChallenge` of
    /// `Fetch.authRequired`: `{source, origin, scheme, realm}`).
    challenges: Vec<Value>,
}

impl Browser {
    pub fn launch(binary: &PathBuf) -> Browser {
        let profile = tempfile::tempdir().unwrap();
        let mut child = Command::new(binary)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--window-size=1280,1000",
                "--remote-debugging-port=0",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start chromium");
        // Chromium says where DevTools listens on stderr.
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut sent = false;
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if !sent {
                    if let Some(url) = line.split("DevTools listening on ").nth(1) {
                        let _ = tx.send(url.trim().to_owned());
                        sent = true;
                    }
                }
            }
        });
        let url = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("chromium did not start its DevTools server");
        let (ws, _) = tungstenite::connect(url.as_str()).expect("connect to DevTools");
        let mut b = Browser {
            child,
            ws,
            session: String::new(),
            next_id: 0,
            _profile: profile,
            credentials: None,
            challenges: Vec::new(),
        };
        let target = b.call("Target.createTarget", json!({"url": "about:blank"}), false);
        let target_id = target["targetId"].as_str().unwrap().to_owned();
        let attached = b.call(
            "Target.attachToTarget",
            json!({"targetId": target_id, "flatten": true}),
            false,
        );
        b.session = attached["sessionId"].as_str().unwrap().to_owned();
        b.call("Page.enable", json!({}), true);
        b
    }

    /// Sends a command on the page's session (when `on_page`) without waiting; returns its
    /// id.
    fn send(&mut self, method: &str, params: Value, on_page: bool) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        let mut msg = json!({"id": id, "method": method, "params": params});
        if on_page {
            msg["sessionId"] = json!(self.session);
        }
        self.ws
            .send(Message::text(msg.to_string()))
            .expect("send to DevTools");
        id
    }

    /// Sends a command (on the page's session when `on_page`) and returns its result.
    /// Answers the `Fetch` events that arrive meanwhile (see [`Browser::sign_in_with`]).
    fn call(&mut self, method: &str, params: Value, on_page: bool) -> Value {
        let id = self.send(method, params, on_page);
        loop {
            let m = self.ws.read().expect("read from DevTools");
            let Message::Text(text) = m else { continue };
            let v: Value = serde_json::from_str(text.as_str()).expect("DevTools JSON");
            if v["id"] == id {
                if let Some(e) = v.get("error") {
                    panic!("{method} failed: {e}");
                }
                return v["result"].clone();
            }
            self.on_event(&v);
        }
    }

    /// Lets paused requests go on, and answers an authentication prompt with
    /// [`Browser::credentials`] as a user would type them.
    fn on_event(&mut self, v: &Value) {
        let request_id = v["params"]["requestId"].clone();
        match v["method"].as_str() {
            Some("Fetch.requestPaused") => {
                self.send(
                    "Fetch.continueRequest",
                    json!({"requestId": request_id}),
                    true,
                );
            }
            Some("Fetch.authRequired") => {
                self.challenges.push(v["params"]["authChallenge"].clone());
                let response = match &self.credentials {
                    Some((user, password)) => json!({"response": "ProvideCredentials",
                        "username": user, "password": password}),
                    None => json!({"response": "CancelAuth"}),
                };
                self.send(
                    "Fetch.continueWithAuth",
                    json!({"requestId": request_id, "authChallengeResponse": response}),
                    true,
                );
            }
            _ => {}
        }
    }

    /// From now on, answers the browser's requests for a user name and password with
    /// `user` and `password` (DevTools' `Fetch` domain stands in for the prompt).
    fn sign_in_with(&mut self, user: &str, password: &str) {
        self.credentials = Some((user.to_owned(), password.to_owned()));
        self.call(
            "Fetch.enable",
            json!({"handleAuthRequests": true, "patterns": [{"urlPattern": "*"}]}),
            true,
        );
    }

    /// Evaluates `expr` in the page (awaiting promises) and returns its value.
    pub fn eval(&mut self, expr: &str) -> Value {
        let r = self.call(
            "Runtime.evaluate",
            json!({"expression": expr, "returnByValue": true, "awaitPromise": true}),
            true,
        );
        if let Some(e) = r.get("exceptionDetails") {
            panic!("{expr} threw: {e}");
        }
        r["result"]["value"].clone()
    }

    /// Waits until `expr` is true in the page.
    pub fn wait_for(&mut self, what: &str, expr: &str) {
        if !crate::wait::until_blocking(Duration::from_secs(20), || self.eval(expr) == json!(true))
        {
            let dom = self.eval("document.body.innerText");
            panic!("timed out waiting for {what}; the page shows:\n{dom}");
        }
    }

    pub fn navigate(&mut self, url: &str) {
        self.call("Page.navigate", json!({"url": url}), true);
    }

    /// Saves a PNG screenshot of the page; returns its path.
    pub fn screenshot(&mut self, name: &str) -> PathBuf {
        let r = self.call(
            "Page.captureScreenshot",
            json!({"format": "png", "captureBeyondViewport": true}),
            true,
        );
        let png = base64::engine::general_purpose::STANDARD
            .decode(r["data"].as_str().unwrap())
            .unwrap();
        assert!(png.starts_with(b"\x89PNG"), "a PNG");
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("loft-console-{name}.png"));
        std::fs::write(&path, png).unwrap();
        eprintln!("screenshot saved: {}", path.display());
        path
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn count(queue: &str, state: &str) -> String {
    format!(
        "(document.querySelector('#queues tr[data-queue=\"{queue}\"] .{state}') || {{}}).textContent"
    )
}

#[test]
fn console_shows_live_counts_sends_browses_and_purges() {
    let Some(binary) = chromium() else {
        need_chromium().skip("console::console_shows_live_counts_sends_browses_and_purges");
        return;
    };
    let s = Server::start();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        s.sqs("CreateQueue", json!({"QueueName": "orders"})).await;
        s.sqs("CreateQueue", json!({"QueueName": "orders-dlq"})).await;
        s.sqs(
            "SetQueueAttributes",
            json!({"QueueUrl": s.queue_url("orders"), "Attributes": {"RedrivePolicy":
                "{\"deadLetterTargetArn\":\"arn:aws:sqs:us-east-1:000000000000:orders-dlq\",\"maxReceiveCount\":\"3\"}"}}),
        )
        .await;
        let (status, _) = s.sns("CreateTopic", &[("Name", "events")]).await;
        assert_eq!(status, 200);
        let (status, _) = s
            .sns(
                "Subscribe",
                &[
                    ("TopicArn", "arn:aws:sns:us-east-1:000000000000:events"),
                    ("Protocol", "email"),
                    ("Endpoint", "ops@example.com"),
                ],
            )
            .await;
        assert_eq!(status, 200);
        let (status, _) = s
            .sns("Publish", &[("PhoneNumber", "+15555550100"), ("Message", "your code is 1234")])
            .await;
        assert_eq!(status, 200);
    });
    let mut b = Browser::launch(&binary);
    b.navigate(&s.url("/console"));
    b.wait_for(
        "the orders row",
        &format!("{} === '0'", count("orders", "visible")),
    );
    b.wait_for(
        "the DLQ relation",
        "document.querySelector('#queues tr[data-queue=\"orders-dlq\"] .dlq').textContent.includes('DLQ of orders')",
    );
    b.wait_for(
        "the topic and its pending subscription",
        "document.querySelector('#topics [data-topic=\"events\"]').textContent.includes('ops@example.com')",
    );
    b.wait_for(
        "the recorded SMS",
        "document.querySelector('#recorded').textContent.includes('your code is 1234')",
    );

    // Clearing the recorded messages: the first click arms the button, the second clears.
    b.eval("document.querySelector('#clear-recorded').click(); true");
    b.wait_for(
        "the armed clear button",
        "document.querySelector('#clear-recorded').textContent === 'Confirm clear'",
    );
    b.eval("document.querySelector('#clear-recorded').click(); true");
    b.wait_for(
        "the cleared table",
        "document.querySelector('#recorded').textContent.includes('Nothing recorded yet.')",
    );
    b.wait_for(
        "the clear status",
        "document.querySelector('#status').textContent.startsWith('Cleared ')",
    );
    let left = rt.block_on(async {
        reqwest::get(s.url("/_loft/sns/messages"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    });
    assert_eq!(
        left, "[]",
        "the recorded messages are gone from Loft, not just the page"
    );

    // Live counts: a message sent elsewhere shows up without a reload.
    rt.block_on(s.sqs(
        "SendMessage",
        json!({"QueueUrl": s.queue_url("orders"), "MessageBody": "sent by the API",
               "MessageAttributes": {"source": {"DataType": "String", "StringValue": "test"}}}),
    ));
    b.wait_for(
        "the count to refresh",
        &format!("{} === '1'", count("orders", "visible")),
    );

    // Browse and send from the page.
    b.eval(
        "document.querySelector('#queues tr[data-queue=\"orders\"] button.browse').click(); true",
    );
    b.wait_for(
        "the message browser",
        "!document.querySelector('#browser').hidden",
    );
    b.wait_for(
        "the API's message in the browser",
        "document.querySelector('#messages').textContent.includes('sent by the API')",
    );
    b.eval(
        "document.querySelector('#send-body').value = 'typed in the console'; \
         document.querySelector('#send-button').click(); true",
    );
    b.wait_for(
        "the sent count",
        &format!("{} === '2'", count("orders", "visible")),
    );
    b.wait_for(
        "the sent message in the browser",
        "document.querySelectorAll('#messages tbody tr[data-message-id]').length === 2",
    );
    b.wait_for(
        "the send status",
        "document.querySelector('#status').textContent.startsWith('Sent ')",
    );
    b.screenshot("sent");

    // Browsing did not receive anything: both messages are visible, never received.
    rt.block_on(async {
        let attrs = s
            .sqs(
                "GetQueueAttributes",
                json!({"QueueUrl": s.queue_url("orders"), "AttributeNames": ["All"]}),
            )
            .await;
        assert_eq!(attrs["Attributes"]["ApproximateNumberOfMessages"], "2");
        assert_eq!(attrs["Attributes"]["ApproximateNumberOfMessagesNotVisible"], "0");
        let got = s
            .sqs(
                "ReceiveMessage",
                json!({"QueueUrl": s.queue_url("orders"), "MaxNumberOfMessages": 10,
                       "VisibilityTimeout": 0, "MessageSystemAttributeNames": ["ApproximateReceiveCount"]}),
            )
            .await;
        for m in got["Messages"].as_array().unwrap() {
            assert_eq!(m["Attributes"]["ApproximateReceiveCount"], "1", "{m}");
        }
    });

    // Purge: the first click arms the button, the second purges.
    b.eval(
        "document.querySelector('#queues tr[data-queue=\"orders\"] button.purge').click(); true",
    );
    b.wait_for(
        "the armed purge button",
        "document.querySelector('#queues tr[data-queue=\"orders\"] button.purge').textContent === 'Confirm purge'",
    );
    b.eval(
        "document.querySelector('#queues tr[data-queue=\"orders\"] button.purge').click(); true",
    );
    b.wait_for(
        "the purged count",
        &format!("{} === '0'", count("orders", "visible")),
    );
    b.wait_for(
        "the purge status",
        "document.querySelector('#status').textContent === 'Purged orders.'",
    );
    b.wait_for(
        "the empty browser",
        "document.querySelector('#messages').textContent.includes('The queue is empty.')",
    );
    b.screenshot("purged");
}

#[test]
fn with_credentials_the_browser_signs_in_with_basic_auth_and_the_console_works() {
    let Some(binary) = chromium() else {
        need_chromium().skip(
            "console::with_credentials_the_browser_signs_in_with_basic_auth_and_the_console_works",
        );
        return;
    };
    let s = Server::start_with(&[], &[("LOFT_CREDENTIALS", "AKIDCONSOLE:console/Secret")])
        .unwrap_or_else(|f| panic!("loft did not start: {f:?}"));
    let creds = [
        ("AWS_ACCESS_KEY_ID", "AKIDCONSOLE"),
        ("AWS_SECRET_ACCESS_KEY", "console/Secret"),
    ];
    s.cli_env(&["queue", "create", "orders"], &creds).ok();
    s.cli_env(&["send", "orders", "sent by the CLI"], &creds)
        .ok();
    let mut b = Browser::launch(&binary);
    b.sign_in_with("AKIDCONSOLE", "console/Secret");
    b.navigate(&s.url("/console"));
    // The page asked for credentials (Loft's Basic challenge) and its JSON calls, made
    // with them, show the queue.
    b.wait_for(
        "the orders row",
        &format!("{} === '1'", count("orders", "visible")),
    );
    assert!(
        b.challenges.iter().any(|c| c["scheme"]
            .as_str()
            .is_some_and(|s| s.eq_ignore_ascii_case("basic"))
            && c["realm"] == "loft"),
        "the browser was asked for Basic credentials, realm loft: {:?}",
        b.challenges
    );
    // Browsing and sending (a POST, which needs the console's header) work too.
    b.eval(
        "document.querySelector('#queues tr[data-queue=\"orders\"] button.browse').click(); true",
    );
    b.wait_for(
        "the CLI's message in the browser",
        "document.querySelector('#messages').textContent.includes('sent by the CLI')",
    );
    b.eval(
        "document.querySelector('#send-body').value = 'typed in the console'; \
         document.querySelector('#send-button').click(); true",
    );
    b.wait_for(
        "the send status",
        "document.querySelector('#status').textContent.startsWith('Sent ')",
    );
    b.wait_for(
        "the sent count",
        &format!("{} === '2'", count("orders", "visible")),
    );
    b.screenshot("signed-in");
    let got = s
        .cli_env(&["receive", "orders", "--max", "10", "--json"], &creds)
        .json();
    let mut bodies: Vec<&str> = got
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["Body"].as_str().unwrap())
        .collect();
    bodies.sort();
    assert_eq!(bodies, ["sent by the CLI", "typed in the console"]);
}

/// A name as long as SQS allows (80 characters).
const LONG_NAME: &str =
    "a-queue-name-as-long-as-sqs-allows-which-used-to-wrap-every-number-in-its-row-80";

/// What the page's queue rows look like: for each row, its height, how many lines its
/// name and each number take (distinct tops of the text's client rectangles), and whether
/// a cell's content overflows it (truncated).
const ROW_LAYOUT: &str = r#"(() => {
  const lines = (node) => {
    const r = document.createRange();
    r.selectNodeContents(node);
    return new Set([...r.getClientRects()].filter((c) => c.width > 0).map((c) => Math.round(c.top))).size;
  };
  return [...document.querySelectorAll('#queues tbody tr[data-queue]')].map((tr) => {
    const name = tr.querySelector('td.name');
    const nums = [...tr.querySelectorAll('td.num')];
    return {
      queue: tr.dataset.queue,
      height: tr.getBoundingClientRect().height,
      name_lines: lines(name.querySelector('code')),
      name_truncated: name.scrollWidth > name.clientWidth,
      name_title: name.title,
      number_lines: nums.map((td) => lines(td)),
      numbers_clipped: nums.some((td) => td.scrollWidth > td.clientWidth),
      number_width: nums.map((td) => Math.round(td.getBoundingClientRect().width)),
    };
  });
})()"#;

fn rows_layout(b: &mut Browser) -> Vec<Value> {
    b.eval(ROW_LAYOUT).as_array().cloned().unwrap_or_default()
}

#[test]
fn twelve_hundred_queues_page_filter_and_keep_every_row_one_line_with_dlq_depth() {
    let Some(binary) = chromium() else {
        need_chromium().skip(
            "console::twelve_hundred_queues_page_filter_and_keep_every_row_one_line_with_dlq_depth",
        );
        return;
    };
    let s = Server::start();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        for i in 1..=1200 {
            s.sqs("CreateQueue", json!({"QueueName": format!("queue-{i:04}")}))
                .await;
        }
        s.sqs("CreateQueue", json!({"QueueName": LONG_NAME})).await;
        s.sqs("CreateQueue", json!({"QueueName": "orders-dlq"})).await;
        s.sqs(
            "CreateQueue",
            json!({"QueueName": "orders", "Attributes": {"RedrivePolicy":
                "{\"deadLetterTargetArn\":\"arn:aws:sqs:us-east-1:000000000000:orders-dlq\",\"maxReceiveCount\":\"3\"}"}}),
        )
        .await;
        for body in ["dead 1", "dead 2"] {
            s.sqs(
                "SendMessage",
                json!({"QueueUrl": s.queue_url("orders-dlq"), "MessageBody": body}),
            )
            .await;
        }
        // Big numbers in the long name's row: 1,240 visible.
        let entries: Vec<Value> = (0..10)
            .map(|i| json!({"Id": format!("m{i}"), "MessageBody": "x"}))
            .collect();
        for _ in 0..124 {
            s.sqs(
                "SendMessageBatch",
                json!({"QueueUrl": s.queue_url(LONG_NAME), "Entries": entries}),
            )
            .await;
        }
    });
    let mut b = Browser::launch(&binary);
    b.navigate(&s.url("/console"));
    // 1,203 queues by name: the long one, orders, orders-dlq, then queue-0001...
    b.wait_for(
        "the first page",
        "document.querySelector('#page-info')?.textContent === '1–100 of 1,203'",
    );
    b.wait_for(
        "the long name's counts",
        &format!("{} === '1,240'", count(LONG_NAME, "visible")),
    );

    // Every row is one line high: names and numbers on one line, the long name cut with
    // its full name on hover, no number clipped, every row as high as the others.
    let rows = rows_layout(&mut b);
    assert_eq!(rows.len(), 100, "one page of 100 rows");
    let heights: Vec<f64> = rows.iter().map(|r| r["height"].as_f64().unwrap()).collect();
    let (lo, hi) = heights
        .iter()
        .fold((f64::MAX, 0f64), |(lo, hi), h| (lo.min(*h), hi.max(*h)));
    assert!(hi - lo < 1.0, "rows of one height: {lo}..{hi}");
    for r in &rows {
        assert_eq!(r["name_lines"], 1, "the name on one line: {r}");
        assert_eq!(
            r["number_lines"],
            json!([1, 1, 1]),
            "numbers on one line: {r}"
        );
        assert_eq!(r["numbers_clipped"], false, "no number cut: {r}");
    }
    let long = rows.iter().find(|r| r["queue"] == LONG_NAME).unwrap();
    assert_eq!(long["name_truncated"], true, "the long name is cut: {long}");
    assert_eq!(long["name_title"], LONG_NAME, "and shown whole on hover");
    assert_eq!(
        long["number_width"], rows[5]["number_width"],
        "number columns as wide in the long name's row as in any other"
    );

    // The dead-letter queue's depth beside its source.
    b.wait_for(
        "the DLQ depth beside orders",
        "(() => { const d = document.querySelector('#queues tr[data-queue=\"orders\"] .dlq-depth'); \
         return !!d && !d.hidden && d.textContent === '2' && d.getBoundingClientRect().width > 0; })()",
    );
    let dlq_title =
        b.eval("document.querySelector('#queues tr[data-queue=\"orders\"] td.dlq').title");
    assert!(
        dlq_title
            .as_str()
            .unwrap()
            .contains("orders-dlq after 3 receives; 2 visible"),
        "{dlq_title}"
    );
    b.screenshot("many-queues");

    // The filter narrows the list on the server's side.
    type_filter(&mut b, "QUEUE-11");
    b.wait_for(
        "the filtered list",
        "document.querySelectorAll('#queues tbody tr[data-queue]').length === 100 && \
         [...document.querySelectorAll('#queues tbody tr[data-queue]')].every((tr) => tr.dataset.queue.startsWith('queue-11'))",
    );
    assert_eq!(
        b.eval("document.querySelector('#pager').hidden"),
        json!(true)
    );
    type_filter(&mut b, "orders");
    b.wait_for(
        "two orders queues",
        "[...document.querySelectorAll('#queues tbody tr[data-queue]')].map((tr) => tr.dataset.queue).join() === 'orders,orders-dlq'",
    );
    b.screenshot("filtered");
    type_filter(&mut b, "");
    b.wait_for(
        "the whole list again",
        "document.querySelector('#page-info')?.textContent === '1–100 of 1,203'",
    );

    // Paging reaches queue 1,200.
    for page in 1..13 {
        let from = page * 100 + 1;
        let to = (from + 99).min(1203);
        let want = format!("{}–{} of 1,203", thousands(from), thousands(to));
        b.eval("document.querySelector('#page-next').click(); true");
        b.wait_for(
            &format!("page {}", page + 1),
            &format!("document.querySelector('#page-info')?.textContent === '{want}'"),
        );
    }
    b.wait_for(
        "queue 1,200 on the last page",
        "[...document.querySelectorAll('#queues tbody tr[data-queue]')].map((tr) => tr.dataset.queue).join() === 'queue-1198,queue-1199,queue-1200'",
    );
    assert_eq!(
        b.eval("document.querySelector('#page-next').disabled"),
        json!(true)
    );
    b.screenshot("last-page");
}

/// Types `text` into the queue filter box, as a user would (an `input` event).
fn type_filter(b: &mut Browser, text: &str) {
    b.eval(&format!(
        "(() => {{ const f = document.querySelector('#queue-filter'); f.value = {}; \
         f.dispatchEvent(new Event('input')); return true; }})()",
        json!(text)
    ));
}

fn thousands(n: usize) -> String {
    if n >= 1000 {
        format!("{},{:03}", n / 1000, n % 1000)
    } else {
        n.to_string()
    }
}

#[test]
fn each_queue_and_topic_has_a_chart_of_what_this_node_sampled() {
    let Some(binary) = chromium() else {
        need_chromium().skip("console::each_queue_and_topic_has_a_chart_of_what_this_node_sampled");
        return;
    };
    // A sample every 250 ms, so the charts fill while the test watches (the 120 kept span
    // 30 s, longer than the test).
    let s = Server::start_with(&["--console-sample-interval", "0.25"], &[])
        .unwrap_or_else(|f| panic!("loft did not start: {f:?}"));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        s.sqs("CreateQueue", json!({"QueueName": "charted"})).await;
        let (status, _) = s.sns("CreateTopic", &[("Name", "announcements")]).await;
        assert_eq!(status, 200);
    });
    let mut b = Browser::launch(&binary);
    b.navigate(&s.url("/console"));
    b.wait_for(
        "the charted row",
        &format!("{} === '0'", count("charted", "visible")),
    );
    // A sample of the empty queue first, so the sends below fall between two samples.
    let chart = "document.querySelector('#queues tr[data-queue=\"charted\"] td.chart svg')";
    b.wait_for(
        "a first sample in the queue's chart",
        &format!("(() => {{ const c = {chart}; return !!c && Number(c.dataset.points) > 0; }})()"),
    );
    rt.block_on(async {
        for i in 0..3 {
            s.sqs(
                "SendMessage",
                json!({"QueueUrl": s.queue_url("charted"), "MessageBody": format!("m{i}")}),
            )
            .await;
        }
        s.sqs(
            "ReceiveMessage",
            json!({"QueueUrl": s.queue_url("charted"), "MaxNumberOfMessages": 1}),
        )
        .await;
        let (status, _) = s
            .sns(
                "Publish",
                &[
                    (
                        "TopicArn",
                        "arn:aws:sns:us-east-1:000000000000:announcements",
                    ),
                    ("Message", "hello"),
                ],
            )
            .await;
        assert_eq!(status, 200);
    });
    // The row's chart shows a sample taken after the sends: two visible, one in flight,
    // and a sent rate above zero between two samples.
    b.wait_for(
        "a sample of the sends in the queue's chart",
        &format!(
            "(() => {{ const c = {chart}; return !!c && Number(c.dataset.points) > 4 && \
             c.querySelector('title').textContent.startsWith('Visible 2, in flight 1'); }})()"
        ),
    );
    b.wait_for(
        "the sent-rate line",
        &format!("!!{chart}.querySelector('.s-sent')"),
    );
    let lines = b.eval(&format!(
        "[...{chart}.querySelectorAll('polyline')].map((p) => p.getAttribute('class'))"
    ));
    for series in ["s-visible", "s-inflight", "s-sent", "s-received"] {
        assert!(
            lines
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c.as_str().unwrap().contains(series)),
            "a {series} line: {lines}"
        );
    }
    let topic_chart = "document.querySelector('#topics [data-topic=\"announcements\"] svg.spark')";
    b.wait_for(
        "the topic's chart with its publish",
        &format!(
            "(() => {{ const c = {topic_chart}; return !!c && Number(c.dataset.points) > 2 && \
             /Published [0-9.]+\\/s/.test(c.querySelector('title').textContent); }})()"
        ),
    );
    // Browsing the queue shows its chart larger.
    b.eval(
        "document.querySelector('#queues tr[data-queue=\"charted\"] button.browse').click(); true",
    );
    b.wait_for(
        "the browser's chart",
        "(() => { const c = document.querySelector('#browser-chart svg.spark'); \
         return !!c && c.getAttribute('width') === '640' && Number(c.dataset.points) > 4 && \
         /^top: up to [23] messages/.test(document.querySelector('#browser-chart-note').textContent); })()",
    );
    b.screenshot("charts");

    // The same history through the console's JSON route.
    let listed: Value = rt.block_on(async {
        reqwest::get(s.url("/_loft/queues?filter=charted"))
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    });
    let h = &listed[0]["history"];
    let n = h["t"].as_array().unwrap().len();
    assert!(n >= 2, "{h}");
    for k in ["visible", "in_flight", "sent_per_s", "received_per_s"] {
        assert_eq!(h[k].as_array().unwrap().len(), n, "{k}: {h}");
    }
    assert_eq!(
        h["sent_per_s"][0],
        Value::Null,
        "no rate before the first sample"
    );
    let sent: f64 = h["sent_per_s"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_f64)
        .sum();
    assert!(sent > 0.0, "the sends show as a rate: {h}");
}
