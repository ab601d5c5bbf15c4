//! The web console with credentials configured: its page, assets and JSON routes take HTTP
//! Basic authentication (an access key id and its secret) or SigV4, and ask browsers for
//! Basic with a `WWW-Authenticate` challenge; Basic is refused everywhere else (the AWS
//! protocols, the seeds' API).

use base64::Engine as _;
use serde_json::{json, Value};

use crate::harness::*;

/// An HTTP Basic `Authorization` value.
fn basic(user: &str, password: &str) -> String {
    let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    format!("Basic {token}")
}

/// The console's page, assets and every JSON route its page reads (queue `jobs` exists).
const CONSOLE_GETS: &[&str] = &[
    "/console",
    "/console/",
    "/console/app.js",
    "/console/style.css",
    "/_loft/queues",
    "/_loft/queues/jobs/messages?limit=5",
    "/_loft/topics",
    "/_loft/sns/messages",
];

/// A signed server with queue `jobs` holding one message.
async fn server_with_a_message() -> Loft {
    let loft = Loft::signed(&[]);
    let sdk = loft.sdk(KEY, SECRET);
    let url = sdk
        .create_queue()
        .queue_name("jobs")
        .send()
        .await
        .expect("create jobs")
        .queue_url()
        .unwrap()
        .to_owned();
    sdk.send_message()
        .queue_url(url)
        .message_body("waiting")
        .send()
        .await
        .expect("send");
    loft
}

async fn get(loft: &Loft, path: &str, authorization: Option<&str>) -> reqwest::Response {
    let mut req = http().get(format!("{}{path}", loft.url));
    if let Some(a) = authorization {
        req = req.header("authorization", a);
    }
    req.send().await.expect("GET")
}

#[track_caller]
fn assert_challenge(resp: &reqwest::Response, what: &str) {
    assert_eq!(resp.status(), 401, "{what}");
    let challenges: Vec<_> = resp
        .headers()
        .get_all("www-authenticate")
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .collect();
    assert_eq!(challenges, [r#"Basic realm="loft""#], "{what}");
}

#[tokio::test]
async fn the_console_asks_for_basic_auth_and_takes_a_key_and_its_secret() {
    let loft = server_with_a_message().await;
    for path in CONSOLE_GETS {
        let resp = get(&loft, path, None).await;
        assert_challenge(&resp, &format!("{path} without credentials"));
        let body: Value = resp.json().await.unwrap();
        assert!(
            body["error"].as_str().unwrap().contains("sign in"),
            "{path}: {body}"
        );

        let resp = get(&loft, path, Some(&basic(KEY, SECRET))).await;
        assert_eq!(resp.status(), 200, "{path} with KEY's secret");
        let resp = get(&loft, path, Some(&basic(KEY2, SECRET2))).await;
        assert_eq!(resp.status(), 200, "{path} with KEY2's secret");

        let resp = get(&loft, path, Some(&basic(KEY, "wrong"))).await;
        assert_challenge(&resp, &format!("{path} with a wrong secret"));
        let resp = get(&loft, path, Some(&basic(KEY, SECRET2))).await;
        assert_challenge(&resp, &format!("{path} with another key's secret"));
        let resp = get(&loft, path, Some(&basic("AKIDUNKNOWN", SECRET))).await;
        assert_challenge(&resp, &format!("{path} with an unknown key"));
    }
    // What the routes answer once signed in is the console's data.
    let page = get(&loft, "/console", Some(&basic(KEY, SECRET))).await;
    assert!(page.text().await.unwrap().contains("<html"));
    let queues: Value = get(&loft, "/_loft/queues", Some(&basic(KEY, SECRET)))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(queues[0]["name"], "jobs", "{queues}");
    assert_eq!(queues[0]["visible"], 1, "{queues}");
    let peeked: Value = get(
        &loft,
        "/_loft/queues/jobs/messages",
        Some(&basic(KEY, SECRET)),
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(peeked["messages"][0]["body"], "waiting", "{peeked}");
}

#[tokio::test]
async fn the_console_routes_still_take_sigv4() {
    let loft = server_with_a_message().await;
    let url = format!("{}/_loft/queues", loft.url);
    let resp = send_signed(&Signer::now("sqs"), "GET", &url, &[], b"").await;
    assert_eq!(resp.status(), 200);
    let queues: Value = resp.json().await.unwrap();
    assert_eq!(queues[0]["name"], "jobs", "{queues}");
    let bad = Signer {
        secret: "wrong",
        ..Signer::now("sqs")
    };
    let resp = send_signed(&bad, "GET", &url, &[], b"").await;
    assert_eq!(resp.status(), 403);
    let body: Value = resp.json().await.unwrap();
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .starts_with("SignatureDoesNotMatch: "),
        "{body}"
    );
}

#[tokio::test]
async fn a_basic_authenticated_post_needs_the_console_header() {
    let loft = server_with_a_message().await;
    let send = format!("{}/_loft/queues/jobs/messages", loft.url);
    let body = json!({"body": "from the console"}).to_string();
    // What a form posted from another site would send, with the browser's remembered
    // credentials: refused, and nothing is sent.
    let forged = http()
        .post(&send)
        .header("authorization", basic(KEY, SECRET))
        .header("content-type", "text/plain")
        .body(body.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), 403);
    let error: Value = forged.json().await.unwrap();
    assert!(
        error["error"].as_str().unwrap().contains("x-loft-console"),
        "{error}"
    );
    let purge = http()
        .post(format!("{}/_loft/queues/jobs/purge", loft.url))
        .header("authorization", basic(KEY, SECRET))
        .send()
        .await
        .unwrap();
    assert_eq!(purge.status(), 403);
    let queues: Value = get(&loft, "/_loft/queues", Some(&basic(KEY, SECRET)))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(queues[0]["visible"], 1, "neither sent nor purged: {queues}");
    // The console's own request: accepted.
    let sent = http()
        .post(&send)
        .header("authorization", basic(KEY, SECRET))
        .header("x-loft-console", "1")
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(sent.status(), 201, "{}", sent.text().await.unwrap());
    let queues: Value = get(&loft, "/_loft/queues", Some(&basic(KEY, SECRET)))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(queues[0]["visible"], 2, "{queues}");
    // A wrong secret is refused before the header matters.
    let wrong = http()
        .post(&send)
        .header("authorization", basic(KEY, "wrong"))
        .header("x-loft-console", "1")
        .body("{\"body\":\"x\"}")
        .send()
        .await
        .unwrap();
    assert_challenge(&wrong, "a POST with a wrong secret");
}

#[tokio::test]
async fn clearing_recorded_messages_takes_the_console_auth_and_header() {
    let loft = server_with_a_message().await;
    let route = format!("{}/_loft/sns/messages", loft.url);
    let anonymous = http().delete(&route).send().await.unwrap();
    assert_challenge(&anonymous, "an anonymous DELETE");
    // Remembered Basic credentials without the console's header: a forged request.
    let forged = http()
        .delete(&route)
        .header("authorization", basic(KEY, SECRET))
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), 403);
    let cleared = http()
        .delete(&route)
        .header("authorization", basic(KEY, SECRET))
        .header("x-loft-console", "1")
        .send()
        .await
        .unwrap();
    assert_eq!(cleared.status(), 200);
    let body: Value = cleared.json().await.unwrap();
    assert_eq!(body, json!({"deleted": 0}));
}

#[tokio::test]
async fn basic_auth_is_refused_on_the_aws_protocols_and_the_seeds_api() {
    let loft = server_with_a_message().await;
    let right = basic(KEY, SECRET);
    // SQS JSON: the right key and secret, in Basic, are no signature.
    let resp = http()
        .post(&loft.url)
        .header("authorization", &right)
        .header("x-amz-target", "AmazonSQS.ListQueues")
        .header("content-type", "application/x-amz-json-1.0")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 403);
    assert!(resp.headers().get("www-authenticate").is_none());
    let body: Value = resp.json().await.unwrap();
    assert_eq!(
        body["__type"], "com.amazonaws.sqs#IncompleteSignature",
        "{body}"
    );
    // On a queue URL, in the Query protocol.
    let resp = http()
        .post(loft.queue_url("jobs"))
        .header("authorization", &right)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form(&[("Action", "ReceiveMessage")]))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 403);
    let text = resp.text().await.unwrap();
    assert!(text.contains("<Code>IncompleteSignature</Code>"), "{text}");
    // SNS Query.
    let resp = http()
        .post(&loft.url)
        .header("authorization", &right)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form(&[("Action", "ListTopics"), ("Version", "2010-03-31")]))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 403);
    // The seeds' API.
    let resp = get(&loft, "/queues", Some(&right)).await;
    assert_eq!(resp.status(), 403);
    let body: Value = resp.json().await.unwrap();
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .starts_with("IncompleteSignature: "),
        "{body}"
    );
    // Nothing was received through any of them.
    let queues: Value = get(&loft, "/_loft/queues", Some(&right))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(queues[0]["visible"], 1, "{queues}");
    assert_eq!(queues[0]["in_flight"], 0, "{queues}");
}

#[tokio::test]
async fn an_open_server_serves_the_console_without_credentials() {
    let loft = Loft::start(&[], &[]);
    for path in ["/console", "/_loft/queues", "/_loft/topics"] {
        let resp = get(&loft, path, None).await;
        assert_eq!(resp.status(), 200, "{path}");
        assert!(resp.headers().get("www-authenticate").is_none(), "{path}");
    }
}

/// No other site may frame the console (clickjacking): its page, its assets, its JSON
/// routes and its sign-in challenge carry `X-Frame-Options: DENY` (RFC 7034) and
/// `Content-Security-Policy: frame-ancestors 'none'` (CSP Level 2).
#[tokio::test]
async fn the_console_may_not_be_framed() {
    let loft = server_with_a_message().await;
    let auth = basic(KEY, SECRET);
    // Every route the console signs in to, the inspection router's recorded messages too.
    for path in CONSOLE_GETS {
        for (authorization, status) in [(None, 401), (Some(auth.as_str()), 200)] {
            let resp = get(&loft, path, authorization).await;
            assert_eq!(resp.status(), status, "{path}");
            let header = |name: &str| {
                resp.headers()
                    .get(name)
                    .map(|v| v.to_str().unwrap().to_owned())
            };
            assert_eq!(header("x-frame-options").as_deref(), Some("DENY"), "{path}");
            assert_eq!(
                header("content-security-policy").as_deref(),
                Some("frame-ancestors 'none'"),
                "{path}"
            );
        }
    }
}

/// The peek's page cursor is opaque and bound to its queue: messages are numbered
/// store-wide, so a cursor (or a message field) holding that number would let one account
/// count another's traffic between two of its own messages. Paging still reads every
/// message once, in send order.
#[tokio::test]
async fn the_peek_cursor_pages_one_queue_and_shows_no_store_sequence() {
    let loft = Loft::start(&[], &[]);
    let post = |queue: &str, body: String| {
        http()
            .post(format!("{}/queues/{queue}/messages", loft.url))
            .json(&json!({ "body": body }))
            .send()
    };
    for i in 0..5 {
        assert_eq!(post("mine", format!("m{i}")).await.unwrap().status(), 201);
        // Another queue's traffic between this queue's messages.
        for j in 0..3 {
            assert_eq!(
                post("theirs", format!("t{i}-{j}")).await.unwrap().status(),
                201
            );
        }
    }
    let mut bodies = Vec::new();
    let mut cursors: Vec<String> = Vec::new();
    let mut path = "/_loft/queues/mine/messages?limit=2".to_owned();
    loop {
        let page: Value = get(&loft, &path, None).await.json().await.unwrap();
        for m in page["messages"].as_array().unwrap() {
            assert!(m.get("seq").is_none(), "no store sequence in {m}");
            bodies.push(m["body"].as_str().unwrap().to_owned());
        }
        match &page["next"] {
            Value::Null => break,
            Value::String(next) => {
                assert!(next.parse::<i64>().is_err(), "an opaque cursor: {next}");
                cursors.push(next.clone());
                let encoded: String = form_urlencoded::byte_serialize(next.as_bytes()).collect();
                path = format!("/_loft/queues/mine/messages?limit=2&after={encoded}");
            }
            other => panic!("next is a text or null, not {other}"),
        }
        assert!(bodies.len() <= 5, "paging ends: {bodies:?}");
    }
    assert_eq!(bodies, ["m0", "m1", "m2", "m3", "m4"]);
    assert_eq!(cursors.len(), 2, "pages of 2, 2 and 1");
    // Another queue's pages, and made-up cursors, refuse it.
    let encoded: String = form_urlencoded::byte_serialize(cursors[0].as_bytes()).collect();
    for path in [
        format!("/_loft/queues/theirs/messages?after={encoded}"),
        "/_loft/queues/mine/messages?after=5".to_owned(),
        "/_loft/queues/mine/messages?after=AAAA".to_owned(),
    ] {
        let resp = get(&loft, &path, None).await;
        assert_eq!(resp.status(), 400, "{path}");
        let body: Value = resp.json().await.unwrap();
        assert!(
            body["error"].as_str().unwrap().contains("parameter after"),
            "{path}: {body}"
        );
    }
}
