//! Limits against the real binary: in-flight messages per standard and FIFO queue, the
//! queue and topic caps, request header size, open connections (all and per address), and
//! clients that stall, hoard or half-close (BENCHMARKS.md, hostile clients), over raw
//! sockets: stalled heads and bodies cut at the request timeout (a short one,
//! `--request-timeout 1`), slow bodies above the minimum rate served, idle connections
//! closed, the body budget answered 503, and half-closed clients answered with nothing
//! lost.

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::{Duration, Instant};

use aws_sdk_sqs::types::{QueueAttributeName, SendMessageBatchRequestEntry};
use serde_json::json;

use crate::harness::*;

async fn send_n(client: &aws_sdk_sqs::Client, url: &str, n: usize, fifo: bool) {
    let mut req = client.send_message_batch().queue_url(url);
    for i in 0..n {
        let mut e = SendMessageBatchRequestEntry::builder()
            .id(format!("m{i}"))
            .message_body(format!("body {i}"));
        if fifo {
            e = e.message_group_id(format!("g{i}"));
        }
        req = req.entries(e.build().unwrap());
    }
    let out = req.send().await.expect("send batch");
    assert!(out.failed().is_empty(), "{out:?}");
}

#[tokio::test]
async fn a_standard_queue_at_its_in_flight_limit_answers_over_limit() {
    let loft = Loft::start(&["--max-in-flight", "3"], &[]);
    let client = loft.sdk("x", "x");
    let url = client
        .create_queue()
        .queue_name("busy")
        .send()
        .await
        .unwrap();
    let url = url.queue_url().unwrap().to_owned();
    send_n(&client, &url, 5, false).await;
    let receive = || {
        client
            .receive_message()
            .queue_url(&url)
            .max_number_of_messages(10)
            .visibility_timeout(300)
            .send()
    };
    let first = receive().await.expect("receive up to the limit");
    assert_eq!(
        first.messages().len(),
        3,
        "only the room left is handed out"
    );
    let err = receive().await.expect_err("at the limit");
    let (code, status, message) = sdk_error(&err);
    assert_eq!((code.as_str(), status), ("OverLimit", 403), "{message}");
    assert!(message.contains("in-flight"), "{message}");
    // Deleting one makes room again (after the recount interval).
    client
        .delete_message()
        .queue_url(&url)
        .receipt_handle(first.messages()[0].receipt_handle().unwrap())
        .send()
        .await
        .unwrap();
    // Asked until the recount has seen the room (refused with OverLimit until then).
    let again = crate::wait::poll(PATIENCE, || async { receive().await.ok() })
        .await
        .expect("room for one");
    assert_eq!(again.messages().len(), 1);
}

#[tokio::test]
async fn a_fifo_queue_at_its_in_flight_limit_returns_nothing_without_an_error() {
    let loft = Loft::start(&["--max-in-flight-fifo", "2"], &[]);
    let client = loft.sdk("x", "x");
    let url = client
        .create_queue()
        .queue_name("orders.fifo")
        .attributes(QueueAttributeName::FifoQueue, "true")
        .attributes(QueueAttributeName::ContentBasedDeduplication, "true")
        .send()
        .await
        .unwrap()
        .queue_url()
        .unwrap()
        .to_owned();
    send_n(&client, &url, 4, true).await;
    let receive = || {
        client
            .receive_message()
            .queue_url(&url)
            .max_number_of_messages(10)
            .visibility_timeout(300)
            .send()
    };
    assert_eq!(receive().await.unwrap().messages().len(), 2);
    let at_limit = receive().await.expect("no error at the FIFO limit");
    assert!(at_limit.messages().is_empty());
}

#[tokio::test]
async fn the_queue_cap_refuses_new_queues_but_not_existing_names() {
    let loft = Loft::start(&["--max-queues", "2"], &[]);
    let client = loft.sdk("x", "x");
    for name in ["a", "b"] {
        client.create_queue().queue_name(name).send().await.unwrap();
    }
    let err = client
        .create_queue()
        .queue_name("c")
        .send()
        .await
        .unwrap_err();
    let (code, status, message) = sdk_error(&err);
    assert_eq!((code.as_str(), status), ("OverLimit", 403), "{message}");
    assert!(message.contains("2 queues"), "{message}");
    client
        .create_queue()
        .queue_name("a")
        .send()
        .await
        .expect("an existing name");
    // The seeds' API shares the cap.
    let resp = http()
        .post(format!("{}/queues/seed", loft.url))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 403);
    client
        .delete_queue()
        .queue_url(loft.queue_url("a"))
        .send()
        .await
        .unwrap();
    client
        .create_queue()
        .queue_name("c")
        .send()
        .await
        .expect("room after a delete");
}

#[tokio::test]
async fn the_topic_cap_answers_topic_limit_exceeded() {
    let loft = Loft::start(&["--max-topics", "1"], &[]);
    let create = |name: &'static str| {
        http()
            .post(&loft.url)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form(&[
                ("Action", "CreateTopic"),
                ("Name", name),
                ("Version", "2010-03-31"),
            ]))
            .send()
    };
    assert_eq!(create("t1").await.unwrap().status(), 200);
    let resp = create("t2").await.unwrap();
    assert_eq!(resp.status(), 403);
    let text = resp.text().await.unwrap();
    assert!(text.contains("<Code>TopicLimitExceeded</Code>"), "{text}");
    assert_eq!(
        create("t1").await.unwrap().status(),
        200,
        "an existing name"
    );
    let seed = http()
        .post(format!("{}/topics/t3", loft.url))
        .send()
        .await
        .unwrap();
    assert_eq!(seed.status(), 403);
    let body: serde_json::Value = seed.json().await.unwrap();
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("limit of 1 topics"),
        "{body}"
    );
}

#[tokio::test]
async fn a_head_under_twice_the_default_limit_is_still_refused() {
    // 64 KiB by default; hyper's read buffer can take a 100 KB head in one read, so the
    // limit is Loft's own check, not the buffer's size.
    let loft = Loft::start(&[], &[]);
    let c = http();
    let under = c
        .get(format!("{}/health", loft.url))
        .header("x-padding", "a".repeat(60 * 1024))
        .send()
        .await
        .unwrap();
    assert_eq!(under.status(), 200);
    let over = c
        .get(format!("{}/health", loft.url))
        .header("x-padding", "a".repeat(100_000))
        .send()
        .await
        .unwrap();
    assert_eq!(over.status(), 431);
}

#[tokio::test]
async fn request_heads_over_the_header_limit_get_431() {
    let loft = Loft::start(&["--max-header-bytes", "16384"], &[]);
    let c = http();
    let small = c
        .get(format!("{}/health", loft.url))
        .header("x-padding", "a".repeat(8 * 1024))
        .send()
        .await
        .unwrap();
    assert_eq!(small.status(), 200);
    let big = c
        .get(format!("{}/health", loft.url))
        .header("x-padding", "a".repeat(32 * 1024))
        .send()
        .await
        .unwrap();
    assert_eq!(big.status(), 431);
    // The body limit still applies on its own: 1 MiB on the seeds' API.
    let body = json!({"body": "a".repeat(1024 * 1024 + 1)});
    let resp = c
        .post(format!("{}/queues/big/messages", loft.url))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 413);
}

/// Sends a keep-alive `GET /health` on `stream` and reads the response head and body.
fn get_health(stream: &mut TcpStream) -> String {
    stream
        .write_all(b"GET /health HTTP/1.1\r\nHost: loft\r\n\r\n")
        .unwrap();
    let mut buf = vec![0u8; 4096];
    let mut out = String::new();
    // The answers are small: one read after the head arrives is enough for both shapes.
    while !out.contains("\r\n\r\n{") || !out.ends_with('}') {
        let n = stream.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        out.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    out
}

#[tokio::test]
async fn connections_over_the_limit_get_503_until_one_closes() {
    let loft = Loft::start(&["--max-connections", "2"], &[]);
    let addr = loft.url.trim_start_matches("http://").to_owned();
    let timeout = Some(Duration::from_secs(10));
    let open = || {
        let s = TcpStream::connect(&addr).unwrap();
        s.set_read_timeout(timeout).unwrap();
        s
    };
    let mut first = open();
    let mut second = open();
    assert!(get_health(&mut first).starts_with("HTTP/1.1 200"));
    assert!(get_health(&mut second).starts_with("HTTP/1.1 200"));
    let mut third = open();
    let refused = get_health(&mut third);
    assert!(refused.starts_with("HTTP/1.1 503"), "{refused}");
    assert!(refused.contains("too many open connections"), "{refused}");
    assert!(
        refused.to_ascii_lowercase().contains("retry-after: 1"),
        "{refused}"
    );
    drop(first);
    let mut answered = String::new();
    crate::wait::until(Duration::from_millis(2500), || {
        answered = get_health(&mut open());
        std::future::ready(answered.starts_with("HTTP/1.1 200"))
    })
    .await;
    assert!(
        answered.starts_with("HTTP/1.1 200"),
        "a slot frees when a connection closes: {answered}"
    );
    assert!(
        get_health(&mut second).starts_with("HTTP/1.1 200"),
        "kept connections still work"
    );
}

/// Raises this process's open-files limit (RLIMIT_NOFILE) to its hard limit, so that a
/// test can hold `wanted` connections; panics when the hard limit is lower.
fn open_files_for(wanted: u64) {
    // SAFETY: getrlimit and setrlimit only read and write the struct given.
    unsafe {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim), 0);
        assert!(
            lim.rlim_max >= wanted,
            "the hard open-files limit {} is under {wanted}",
            lim.rlim_max
        );
        if lim.rlim_cur < wanted {
            lim.rlim_cur = lim.rlim_max;
            assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &lim), 0);
        }
    }
}

/// Behind a load balancer or NAT every client shares one address: a default server
/// has no per-address limit, so one address may hold more connections than the old
/// default cap of 1,000 (docs/security.md, "Running behind a load balancer"), each of them served.
#[test]
fn a_default_server_serves_more_than_a_thousand_connections_from_one_address() {
    const N: usize = 1_100;
    open_files_for(N as u64 + 200);
    let loft = Loft::start(&[], &[]);
    let addr = addr_of(&loft);
    let mut open = Vec::with_capacity(N);
    for i in 0..N {
        let mut s = connect(&addr);
        let answer = get_health(&mut s);
        assert!(
            answer.starts_with("HTTP/1.1 200"),
            "connection {i}: {answer}"
        );
        open.push(s);
    }
    // Every one is still open and served: none was closed to make room.
    for (i, s) in open.iter_mut().enumerate() {
        let answer = get_health(s);
        assert!(
            answer.starts_with("HTTP/1.1 200"),
            "connection {i} again: {answer}"
        );
    }
}

/// More connections over `--max-connections` at once than Loft answers 503 at a time
/// ([`loft_server::listen::MAX_REFUSING`], 64): each still gets its 503 with
/// `Retry-After` (the listener stops accepting while 64 answers are under way, the
/// kernel's backlog holds the rest), none is accepted and closed unanswered.
#[test]
fn every_connection_over_the_limit_gets_its_503_even_past_the_answering_bound() {
    const OVER: usize = 200;
    open_files_for(OVER as u64 + 100);
    let loft = Loft::start(&["--max-connections", "1"], &[]);
    let addr = addr_of(&loft);
    let mut held = connect(&addr);
    assert!(get_health(&mut held).starts_with("HTTP/1.1 200"));
    // All connect first and say nothing, so that the first 64 refusals are all under way
    // (waiting for their requests) when the others arrive.
    let mut over: Vec<TcpStream> = (0..OVER).map(|_| connect(&addr)).collect();
    for s in &mut over {
        s.write_all(b"GET /health HTTP/1.1\r\nHost: loft\r\n\r\n")
            .unwrap();
    }
    for (i, s) in over.iter_mut().enumerate() {
        let answer = read_to_close(s);
        assert!(
            answer.starts_with("HTTP/1.1 503"),
            "connection {i}: {answer:?}"
        );
        assert!(
            answer.to_ascii_lowercase().contains("retry-after: 1"),
            "connection {i}: {answer}"
        );
        assert!(
            answer.contains("too many open connections (the limit is 1)"),
            "{answer}"
        );
    }
    assert!(
        get_health(&mut held).starts_with("HTTP/1.1 200"),
        "the held one still works"
    );
}

// ----- clients that stall, hoard or half-close (BENCHMARKS.md, hostile clients)

/// Any SigV4 header: an open Loft reads the signing service from it and checks nothing.
const SIGV4: &str = "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20240101/us-east-1/sqs/aws4_request, \
                     SignedHeaders=host;x-amz-date, Signature=00";

fn addr_of(loft: &Loft) -> String {
    loft.url.trim_start_matches("http://").to_owned()
}

/// A connection whose reads give up after [`PATIENCE`] (so a missing answer fails the
/// test instead of hanging it).
fn connect(addr: &str) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    s
}

/// An SQS JSON request head for `op` announcing `length` body bytes.
fn json_head(op: &str, length: usize) -> String {
    format!(
        "POST / HTTP/1.1\r\nHost: loft\r\nX-Amz-Target: AmazonSQS.{op}\r\n\
         Content-Type: application/x-amz-json-1.0\r\nAuthorization: {SIGV4}\r\n\
         Content-Length: {length}\r\n\r\n"
    )
}

/// A whole SQS JSON request.
fn json_request(op: &str, body: &serde_json::Value) -> Vec<u8> {
    let body = body.to_string();
    format!("{}{body}", json_head(op, body.len())).into_bytes()
}

/// Everything the server sends until it closes the connection (or [`PATIENCE`] passes:
/// then what came so far).
fn read_to_close(s: &mut TcpStream) -> String {
    let mut out = Vec::new();
    let mut buf = [0u8; 16384];
    loop {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// One response read from `s`: status, head (lowercased) and body.
fn read_response(s: &mut TcpStream) -> (u16, String, String) {
    let mut out = Vec::new();
    let mut buf = [0u8; 16384];
    loop {
        if let Some(end) = out.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&out[..end]).to_ascii_lowercase();
            let length = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok());
            if let Some(n) = length {
                if out.len() >= end + 4 + n {
                    let body = String::from_utf8_lossy(&out[end + 4..end + 4 + n]).into_owned();
                    let status = head[9..12].parse().unwrap_or(0);
                    return (status, head, body);
                }
            }
        }
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
        }
    }
    let text = String::from_utf8_lossy(&out).into_owned();
    panic!("no complete response: {text:?}");
}

/// Sends a whole request on a fresh connection and reads its response.
fn exchange(addr: &str, request: &[u8]) -> (u16, String, String) {
    let mut s = connect(addr);
    s.write_all(request).unwrap();
    read_response(&mut s)
}

fn sqs(addr: &str, op: &str, body: serde_json::Value) -> serde_json::Value {
    let (status, _, text) = exchange(addr, &json_request(op, &body));
    assert_eq!(status, 200, "{op}: {text}");
    serde_json::from_str(&text).unwrap()
}

/// Every body in queue `url`, received (and kept in flight) until a receive comes back
/// empty.
fn drain_bodies(addr: &str, url: &str) -> Vec<String> {
    let mut bodies = Vec::new();
    loop {
        let out = sqs(
            addr,
            "ReceiveMessage",
            json!({"QueueUrl": url, "MaxNumberOfMessages": 10, "VisibilityTimeout": 600}),
        );
        let Some(messages) = out["Messages"].as_array().filter(|m| !m.is_empty()) else {
            return bodies;
        };
        bodies.extend(
            messages
                .iter()
                .map(|m| m["Body"].as_str().unwrap().to_owned()),
        );
    }
}

/// The value of an unlabelled sample of `/metrics`.
fn metric(addr: &str, name: &str) -> f64 {
    let (status, _, text) = exchange(addr, b"GET /metrics HTTP/1.1\r\nHost: loft\r\n\r\n");
    assert_eq!(status, 200);
    text.lines()
        .find_map(|l| l.strip_prefix(name).and_then(|v| v.strip_prefix(' ')))
        .unwrap_or_else(|| panic!("no {name} in /metrics:\n{text}"))
        .parse()
        .unwrap()
}

/// Waits until `check` holds, at most [`PATIENCE`].
fn eventually(what: &str, check: impl FnMut() -> bool) {
    assert!(
        crate::wait::until_blocking(PATIENCE, check),
        "{what}: not within {PATIENCE:?}"
    );
}

#[test]
fn stalled_requests_are_cut_at_the_request_timeout_and_their_slots_serve_new_clients() {
    let loft = Loft::start(&["--max-connections", "4", "--request-timeout", "1"], &[]);
    let addr = addr_of(&loft);
    let started = Instant::now();
    // The reproduction: heads announcing 1,000 bytes and no body, over the SQS
    // JSON and Query protocols and the seeds' API, and a head cut in the middle.
    let mut json = connect(&addr);
    json.write_all(json_head("SendMessage", 1000).as_bytes())
        .unwrap();
    let mut query = connect(&addr);
    query
        .write_all(
            format!(
                "POST / HTTP/1.1\r\nHost: loft\r\nAuthorization: {SIGV4}\r\n\
                 Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\n\
                 Action=SendMessage&"
            )
            .as_bytes(),
        )
        .unwrap();
    let mut seed = connect(&addr);
    seed.write_all(
        b"POST /queues/stalled/messages HTTP/1.1\r\nHost: loft\r\n\
          Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"body\": \"",
    )
    .unwrap();
    let mut head = connect(&addr);
    head.write_all(b"POST / HTTP/1.1\r\nHost: lo").unwrap();
    // All four slots are held: the next client is refused while they stall.
    let refused = get_health(&mut connect(&addr));
    assert!(refused.starts_with("HTTP/1.1 503"), "{refused}");
    // Each stalled body is answered 408 in its protocol's shape; the stalled head closed.
    let answer = read_to_close(&mut json);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(
        answer.contains("com.amazonaws.sqs#RequestTimeout"),
        "{answer}"
    );
    let answer = read_to_close(&mut query);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("<Code>RequestTimeout</Code>"), "{answer}");
    let answer = read_to_close(&mut seed);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains(r#"{"error":"#), "{answer}");
    assert_eq!(
        read_to_close(&mut head),
        "",
        "a stalled head is closed unanswered"
    );
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_secs(1),
        "cut at the timeout, not before: {waited:?}"
    );
    drop((json, query, seed, head));
    // Their slots serve new clients.
    eventually("a freed slot answers", || {
        get_health(&mut connect(&addr)).starts_with("HTTP/1.1 200")
    });
    // Nothing half-sent was stored.
    let resp = exchange(
        &addr,
        b"GET /queues/stalled/messages HTTP/1.1\r\nHost: loft\r\n\r\n",
    );
    assert_eq!((resp.0, resp.2.as_str()), (200, "null"), "{resp:?}");
}

/// Sends `request` on `s` in chunks of `chunk` bytes, one every `every` (a slow link),
/// until it is all sent or the server stops reading it.
fn trickle(mut s: TcpStream, request: Vec<u8>, chunk: usize, every: Duration) {
    for part in request.chunks(chunk) {
        if s.write_all(part).is_err() {
            return;
        }
        crate::wait::pace_blocking(every);
    }
}

#[test]
fn a_body_on_a_slow_link_above_the_minimum_rate_arrives_and_a_slower_one_is_cut() {
    let loft = Loft::start(&["--request-timeout", "1", "--min-body-rate", "65536"], &[]);
    let addr = addr_of(&loft);
    let url = sqs(&addr, "CreateQueue", json!({"QueueName": "slow"}))["QueueUrl"]
        .as_str()
        .unwrap()
        .to_owned();
    // 200 KB at about 128 KiB/s (twice the minimum rate): 1.6 s, past the 1 s timeout.
    let message = "a".repeat(200_000);
    let request = json_request(
        "SendMessage",
        &json!({"QueueUrl": url, "MessageBody": message}),
    );
    let s = connect(&addr);
    let mut reader = s.try_clone().unwrap();
    let started = Instant::now();
    let sender =
        std::thread::spawn(move || trickle(s, request, 16 * 1024, Duration::from_millis(125)));
    let (status, _, text) = read_response(&mut reader);
    sender.join().unwrap();
    assert_eq!(status, 200, "{text}");
    assert!(
        started.elapsed() > Duration::from_secs(1),
        "the body took longer than the request timeout: {:?}",
        started.elapsed()
    );
    assert_eq!(drain_bodies(&addr, &url), std::slice::from_ref(&message));
    // At 16 KiB/s, a quarter of the rate, the same body is cut (it would take 12 s).
    let request = json_request(
        "SendMessage",
        &json!({"QueueUrl": url, "MessageBody": message}),
    );
    let s = connect(&addr);
    let mut reader = s.try_clone().unwrap();
    let started = Instant::now();
    let sender =
        std::thread::spawn(move || trickle(s, request, 4 * 1024, Duration::from_millis(250)));
    let (status, _, text) = read_response(&mut reader);
    assert_eq!(status, 408, "{text}");
    assert!(text.contains("RequestTimeout"), "{text}");
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "cut long before it could finish: {:?}",
        started.elapsed()
    );
    drop(reader);
    sender.join().unwrap();
    let attrs = sqs(
        &addr,
        "GetQueueAttributes",
        json!({"QueueUrl": url, "AttributeNames": ["All"]}),
    );
    assert_eq!(
        attrs["Attributes"]["ApproximateNumberOfMessages"], "0",
        "the cut message was not stored: {attrs}"
    );
}

#[test]
fn idle_connections_are_closed_after_the_keep_alive_timeout() {
    let loft = Loft::start(&["--keep-alive-timeout", "1"], &[]);
    let addr = addr_of(&loft);
    let mut used = connect(&addr);
    // Loft's clock starts when its answer ends, after this and before the client reads it.
    let asked = Instant::now();
    assert!(get_health(&mut used).starts_with("HTTP/1.1 200"));
    assert_eq!(read_to_close(&mut used), "", "closed without a word");
    let idle = asked.elapsed();
    assert!(
        idle >= Duration::from_secs(1) && idle < PATIENCE,
        "closed after the keep-alive timeout: {idle:?}"
    );
    // A connection that never sends a request is closed the same way.
    let opened = Instant::now();
    let mut silent = connect(&addr);
    assert_eq!(read_to_close(&mut silent), "");
    assert!(opened.elapsed() >= Duration::from_secs(1));
}

/// A connection from `local` (an address of the loopback network) to `addr`.
async fn connect_from(local: &str, addr: &str) -> TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind(format!("{local}:0").parse().unwrap()).unwrap();
    let stream = socket.connect(addr.parse().unwrap()).await.unwrap();
    let stream = stream.into_std().unwrap();
    stream.set_nonblocking(false).unwrap();
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    stream
}

#[tokio::test]
async fn one_address_cannot_take_every_connection_slot() {
    let loft = Loft::start(&["--max-connections-per-ip", "2"], &[]);
    let addr = addr_of(&loft);
    let mut first = connect_from("127.0.0.1", &addr).await;
    let mut second = connect_from("127.0.0.1", &addr).await;
    assert!(get_health(&mut first).starts_with("HTTP/1.1 200"));
    assert!(get_health(&mut second).starts_with("HTTP/1.1 200"));
    let refused = get_health(&mut connect_from("127.0.0.1", &addr).await);
    assert!(refused.starts_with("HTTP/1.1 503"), "{refused}");
    assert!(
        refused.contains("too many open connections from 127.0.0.1 (the limit is 2 per address)"),
        "{refused}"
    );
    assert!(
        refused.to_ascii_lowercase().contains("retry-after: 1"),
        "{refused}"
    );
    // Another address is served meanwhile.
    let mut other = connect_from("127.0.0.2", &addr).await;
    assert!(get_health(&mut other).starts_with("HTTP/1.1 200"));
    drop(first);
    let last = std::sync::Mutex::new(String::new());
    crate::wait::until(Duration::from_secs(2), || async {
        let answered = get_health(&mut connect_from("127.0.0.1", &addr).await);
        let ok = answered.starts_with("HTTP/1.1 200");
        *last.lock().unwrap() = answered;
        ok
    })
    .await;
    let answered = last.into_inner().unwrap();
    assert!(answered.starts_with("HTTP/1.1 200"), "{answered}");
}

#[test]
fn bodies_past_the_limit_or_the_budget_are_refused_unread() {
    const MIB: usize = 1024 * 1024;
    // The smallest budget: one 10 MiB AWS body.
    let loft = Loft::start(
        &["--max-body-bytes-in-flight", &(10 * MIB).to_string()],
        &[],
    );
    let addr = addr_of(&loft);
    let url = sqs(&addr, "CreateQueue", json!({"QueueName": "budget"}))["QueueUrl"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        metric(&addr, "loft_request_body_budget_bytes"),
        (10 * MIB) as f64
    );
    // Over the AWS protocols' 10 MiB: refused from its Content-Length, before a byte.
    let (status, head, text) = exchange(&addr, json_head("SendMessage", 10 * MIB + 1).as_bytes());
    assert_eq!(status, 413, "{text}");
    assert!(text.contains("RequestEntityTooLarge"), "{text}");
    assert!(head.contains("connection: close"), "{head}");
    // The hoarder: 10 MiB minus one byte of a 10 MiB body, then nothing.
    let hoarder = connect(&addr);
    let prefix = format!(r#"{{"QueueUrl": "{url}", "MessageBody": ""#);
    let mut body = prefix.into_bytes();
    body.resize(10 * MIB - 1, b'a');
    let mut writer = hoarder.try_clone().unwrap();
    let sender = std::thread::spawn(move || {
        writer
            .write_all(json_head("SendMessage", 10 * MIB).as_bytes())
            .unwrap();
        writer.write_all(&body).unwrap();
    });
    eventually("the hoarder's bytes are counted", || {
        metric(&addr, "loft_request_body_bytes") == (10 * MIB - 1) as f64
    });
    sender.join().unwrap();
    // No room for two more bytes: 503 with Retry-After in each protocol's shape, the
    // body never read (only the head is sent).
    let (status, head, text) = exchange(&addr, json_head("SendMessage", 2).as_bytes());
    assert_eq!(status, 503, "{text}");
    assert!(
        text.contains("com.amazonaws.sqs#ServiceUnavailable"),
        "{text}"
    );
    assert!(head.contains("retry-after: 1"), "{head}");
    let (status, head, text) = exchange(
        &addr,
        b"POST / HTTP/1.1\r\nHost: loft\r\nContent-Type: application/x-www-form-urlencoded\r\n\
          Content-Length: 2\r\n\r\n",
    );
    assert_eq!(status, 503, "{text}");
    assert!(text.contains("<Code>ServiceUnavailable</Code>"), "{text}");
    assert!(head.contains("retry-after: 1"), "{head}");
    let (status, head, text) = exchange(
        &addr,
        b"POST /queues/budget/messages HTTP/1.1\r\nHost: loft\r\nContent-Length: 2\r\n\r\n",
    );
    assert_eq!(status, 503, "{text}");
    assert!(text.starts_with(r#"{"error":"#), "{text}");
    assert!(head.contains("retry-after: 1"), "{head}");
    // Requests without a body are served meanwhile.
    let (status, _, _) = exchange(&addr, b"GET /health HTTP/1.1\r\nHost: loft\r\n\r\n");
    assert_eq!(status, 200);
    // The hoarder gives up: its bytes are given back and bodies are read again.
    hoarder.shutdown(Shutdown::Both).unwrap();
    drop(hoarder);
    eventually("the hoarder's bytes are given back", || {
        metric(&addr, "loft_request_body_bytes") == 0.0
    });
    sqs(
        &addr,
        "SendMessage",
        json!({"QueueUrl": url, "MessageBody": "after"}),
    );
    assert_eq!(drain_bodies(&addr, &url), ["after"]);
}

#[test]
fn half_closed_clients_get_every_answer_and_nothing_is_lost() {
    let loft = Loft::start(&[], &[]);
    let addr = addr_of(&loft);
    let url = sqs(&addr, "CreateQueue", json!({"QueueName": "halves"}))["QueueUrl"]
        .as_str()
        .unwrap()
        .to_owned();
    // The reproduction: each request on its own connection, which shuts down its
    // sending side once the request is out; SQS JSON, SQS Query and the seeds' API.
    let request = |i: usize| -> (String, Vec<u8>) {
        let body = format!("m{i}");
        let req = match i % 3 {
            0 => json_request(
                "SendMessage",
                &json!({"QueueUrl": url, "MessageBody": body}),
            ),
            1 => {
                let form = form(&[
                    ("Action", "SendMessage"),
                    ("QueueUrl", &url),
                    ("MessageBody", &body),
                ]);
                format!(
                    "POST / HTTP/1.1\r\nHost: loft\r\nAuthorization: {SIGV4}\r\n\
                     Content-Type: application/x-www-form-urlencoded\r\n\
                     Content-Length: {}\r\n\r\n{form}",
                    form.len()
                )
                .into_bytes()
            }
            _ => {
                let json = json!({ "body": body }).to_string();
                format!(
                    "POST /queues/halves/messages HTTP/1.1\r\nHost: loft\r\n\
                     Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{json}",
                    json.len()
                )
                .into_bytes()
            }
        };
        (body, req)
    };
    const N: usize = 240;
    let requests: Vec<(String, Vec<u8>)> = (0..N).map(request).collect();
    let sent: BTreeSet<String> = requests.iter().map(|(b, _)| b.clone()).collect();
    let queue = std::sync::Mutex::new(requests);
    let failures = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..8 {
            scope.spawn(|| loop {
                let Some((body, req)) = queue.lock().unwrap().pop() else {
                    return;
                };
                let mut s = connect(&addr);
                s.write_all(&req).unwrap();
                s.shutdown(Shutdown::Write).unwrap();
                let answer = read_to_close(&mut s);
                if !(answer.starts_with("HTTP/1.1 200") || answer.starts_with("HTTP/1.1 201")) {
                    failures.lock().unwrap().push(format!("{body}: {answer:?}"));
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    assert!(
        failures.is_empty(),
        "{} of {N} unanswered: {failures:?}",
        failures.len()
    );
    let stored: BTreeSet<String> = drain_bodies(&addr, &url).into_iter().collect();
    assert_eq!(stored, sent, "every answered send is stored, once");
}

/// `request` answered on a fresh connection, retried while the server answers 503 for
/// want of a connection slot (at most [`PATIENCE`]).
fn exchange_when_slot_frees(addr: &str, request: &[u8]) -> (u16, String, String) {
    let mut last = None;
    let answer = crate::wait::poll_blocking(PATIENCE, || {
        let answer = exchange(addr, request);
        if answer.0 != 503 {
            return Some(answer);
        }
        last = Some(answer);
        None
    });
    answer.unwrap_or_else(|| panic!("no connection slot within {PATIENCE:?}: {last:?}"))
}

#[test]
fn a_long_poll_whose_client_left_ends_takes_nothing_and_frees_its_slot() {
    // One connection slot: while a long poll holds it, nobody else is served.
    let loft = Loft::start(&["--max-connections", "1"], &[]);
    let addr = addr_of(&loft);
    let sqs_call = |op: &str, body: serde_json::Value| {
        let (status, _, text) = exchange_when_slot_frees(&addr, &json_request(op, &body));
        assert_eq!(status, 200, "{op}: {text}");
        serde_json::from_str::<serde_json::Value>(&text).unwrap()
    };
    let url = sqs_call("CreateQueue", json!({"QueueName": "left"}))["QueueUrl"]
        .as_str()
        .unwrap()
        .to_owned();
    // The client departs two ways: it closes its socket (FIN: a read timeout in an SDK) or
    // resets it (RST); over SQS JSON and over the seeds' API.
    let seeds_poll = b"GET /queues/left/messages?wait_seconds=20 HTTP/1.1\r\nHost: loft\r\n\r\n";
    let json_poll = json_request(
        "ReceiveMessage",
        &json!({"QueueUrl": url, "WaitTimeSeconds": 20}),
    );
    for (i, (poll, reset)) in [(&json_poll[..], false), (&seeds_poll[..], true)]
        .into_iter()
        .enumerate()
    {
        // The slot may still be held by the previous exchange's connection: tried until
        // the poll is taken.
        let s = crate::wait::poll_blocking(PATIENCE, || {
            let mut s = connect(&addr);
            s.write_all(poll).unwrap();
            s.set_read_timeout(Some(Duration::from_millis(300)))
                .unwrap();
            let mut first = [0u8; 12];
            match s.read(&mut first) {
                // Refused for want of a slot: try again.
                Ok(n) if n > 0 => {
                    assert!(first.starts_with(b"HTTP/1.1 503"), "{first:?}");
                    None
                }
                // No answer yet: the poll waits on an empty queue.
                _ => Some(s),
            }
        })
        .unwrap_or_else(|| panic!("poll {i}: no connection slot within {PATIENCE:?}"));
        if reset {
            // SO_LINGER with a zero timeout: close() sends RST.
            let linger = libc::linger {
                l_onoff: 1,
                l_linger: 0,
            };
            // SAFETY: a valid socket and option buffer of the option's size.
            let rc = unsafe {
                libc::setsockopt(
                    std::os::fd::AsRawFd::as_raw_fd(&s),
                    libc::SOL_SOCKET,
                    libc::SO_LINGER,
                    (&linger as *const libc::linger).cast(),
                    std::mem::size_of::<libc::linger>() as libc::socklen_t,
                )
            };
            assert_eq!(rc, 0);
        } else {
            s.shutdown(Shutdown::Both).unwrap();
        }
        drop(s);
        // The slot frees well before the 20 s wait would have ended (within PATIENCE) ...
        let body = format!("after departure {i}");
        sqs_call("SendMessage", json!({"QueueUrl": url, "MessageBody": body}));
        // ... and the departed poll took nothing: the message is there, never received.
        let got = sqs_call(
            "ReceiveMessage",
            json!({"QueueUrl": url, "AttributeNames": ["ApproximateReceiveCount"]}),
        );
        let m = &got["Messages"][0];
        assert_eq!(m["Body"], body.as_str(), "{got}");
        assert_eq!(m["Attributes"]["ApproximateReceiveCount"], "1", "{got}");
        sqs_call(
            "DeleteMessage",
            json!({"QueueUrl": url, "ReceiptHandle": m["ReceiptHandle"]}),
        );
    }
}
