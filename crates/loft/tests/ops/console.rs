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
use std::time::{Duration, Instant};

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
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if self.eval(expr) == json!(true) {
                return;
            }
            if Instant::now() > deadline {
                let dom = self.eval("document.body.innerText");
                panic!("timed out waiting for {what}; the page shows:\n{dom}");
            }
            std::thread::sleep(Duration::from_millis(100));
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
