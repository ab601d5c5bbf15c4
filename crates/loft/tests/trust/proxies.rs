//! Loft behind a load balancer (`--trusted-proxy`, docs/security.md, "Running behind a load
//! balancer"), against the real binary: `X-Forwarded-For` from a trusted proxy is the
//! client an `aws:SourceIp` condition sees, and is ignored from any other address; a PROXY
//! protocol v2 header from a trusted proxy names the client for `aws:SourceIp` and for
//! `--max-connections-per-ip`, and is not believed from any other address.
//!
//! The queue's policy denies `sqs:SendMessage` unless `aws:SourceIp` is in
//! 203.0.113.0/24 (a documentation range no test connection comes from), so a send
//! succeeds only when Loft took the client from the proxy's word.

use std::io::{Read, Write};
use std::net::{IpAddr, TcpStream};

use serde_json::json;

use crate::harness::*;

/// The range the queue's policy lets send.
const ALLOWED: &str = "203.0.113.0/24";

/// A signed Loft trusting 127.0.0.1 as a proxy, with `extra` flags, and a queue of
/// [`KEY`]'s whose policy denies `sqs:SendMessage` from outside [`ALLOWED`]; its URL.
async fn start(extra: &[&str]) -> (Loft, String) {
    let mut args = vec!["--trusted-proxy", "127.0.0.1"];
    args.extend_from_slice(extra);
    let (name, value) = credentials_env();
    let loft = Loft::start(&args, &[(name, &value)]);
    let sqs = loft.sdk(KEY, SECRET);
    let url = sqs
        .create_queue()
        .queue_name("behind-a-balancer")
        .send()
        .await
        .expect("create queue")
        .queue_url
        .unwrap();
    let arn = sqs
        .get_queue_attributes()
        .queue_url(&url)
        .attribute_names(aws_sdk_sqs::types::QueueAttributeName::QueueArn)
        .send()
        .await
        .expect("queue arn")
        .attributes
        .unwrap()[&aws_sdk_sqs::types::QueueAttributeName::QueueArn]
        .clone();
    let policy = json!({
        "Version": "2012-10-17",
        "Statement": [{
            "Effect": "Deny",
            "Principal": "*",
            "Action": "sqs:SendMessage",
            "Resource": arn,
            "Condition": {"NotIpAddress": {"aws:SourceIp": ALLOWED}},
        }],
    });
    sqs.set_queue_attributes()
        .queue_url(&url)
        .attributes(
            aws_sdk_sqs::types::QueueAttributeName::Policy,
            policy.to_string(),
        )
        .send()
        .await
        .expect("set policy");
    (loft, url)
}

/// The status of a signed SendMessage to `queue` sent from `local` with `forwarded` as
/// its `X-Forwarded-For` (none when empty).
async fn send_from(loft: &Loft, queue: &str, local: &str, forwarded: &str) -> u16 {
    let client = reqwest::Client::builder()
        .local_address(local.parse::<IpAddr>().unwrap())
        .timeout(PATIENCE)
        .build()
        .unwrap();
    let body = json!({"QueueUrl": queue, "MessageBody": "hello"}).to_string();
    let mut headers = vec![
        ("x-amz-target", "AmazonSQS.SendMessage"),
        ("content-type", "application/x-amz-json-1.0"),
    ];
    if !forwarded.is_empty() {
        headers.push(("x-forwarded-for", forwarded));
    }
    let url = format!("{}/", loft.url);
    let resp = send_signed_via(
        &client,
        &Signer::now("sqs"),
        "POST",
        &url,
        &headers,
        body.as_bytes(),
    )
    .await;
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap_or_default();
    assert!(
        status == 200 || text.contains("AccessDenied"),
        "{status}: {text}"
    );
    status
}

#[tokio::test]
async fn x_forwarded_for_from_a_trusted_proxy_is_the_source_ip_and_ignored_from_others() {
    let (loft, queue) = start(&[]).await;
    assert_eq!(
        send_from(&loft, &queue, "127.0.0.1", "203.0.113.9").await,
        200,
        "the trusted proxy says the client is in the allowed range"
    );
    assert_eq!(
        send_from(&loft, &queue, "127.0.0.1", "[::ffff:203.0.113.9]:5555").await,
        200,
        "an IPv4-mapped address with a port is the IPv4 client"
    );
    assert_eq!(
        send_from(&loft, &queue, "127.0.0.1", "").await,
        403,
        "no X-Forwarded-For: the proxy itself is the client"
    );
    assert_eq!(
        send_from(&loft, &queue, "127.0.0.1", "203.0.113.9, 198.51.100.1").await,
        403,
        "the hop the trusted proxy saw (the rightmost) is the client, not what the client claimed"
    );
    assert_eq!(
        send_from(&loft, &queue, "127.0.0.2", "203.0.113.9").await,
        403,
        "from an address that is no trusted proxy the header is ignored"
    );
}

/// A PROXY protocol v2 header (TCP over IPv4) naming `client`:`port` as the source.
fn proxy_v2(client: [u8; 4], port: u16) -> Vec<u8> {
    let mut h = b"\r\n\r\n\0\r\nQUIT\n".to_vec();
    h.extend_from_slice(&[0x21, 0x11, 0, 12]);
    h.extend_from_slice(&client);
    h.extend_from_slice(&[127, 0, 0, 1]);
    h.extend_from_slice(&port.to_be_bytes());
    h.extend_from_slice(&9324u16.to_be_bytes());
    h
}

/// A connection to `loft` from `local` (an address of the loopback network), whose reads
/// give up after [`PATIENCE`].
async fn connect_from(loft: &Loft, local: &str) -> TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind(format!("{local}:0").parse().unwrap()).unwrap();
    let addr = loft.url.trim_start_matches("http://").parse().unwrap();
    let stream = socket.connect(addr).await.unwrap().into_std().unwrap();
    stream.set_nonblocking(false).unwrap();
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    stream
}

/// A signed SendMessage to `queue` written by hand, keeping the connection open.
fn signed_send(loft: &Loft, queue: &str) -> Vec<u8> {
    let host = loft.url.trim_start_matches("http://");
    let body = json!({"QueueUrl": queue, "MessageBody": "hello"}).to_string();
    let headers = [
        ("x-amz-target", "AmazonSQS.SendMessage"),
        ("content-type", "application/x-amz-json-1.0"),
    ];
    let signed = signed_headers(
        &Signer::now("sqs"),
        "POST",
        &format!("{}/", loft.url),
        &headers,
        body.as_bytes(),
    );
    let mut out = format!(
        "POST / HTTP/1.1\r\nHost: {host}\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers
        .iter()
        .map(|(k, v)| (*k, *v))
        .chain(signed.iter().map(|(k, v)| (k.as_str(), v.as_str())))
    {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str("\r\n");
    out.push_str(&body);
    out.into_bytes()
}

/// One response read from `s`: its status line and the rest as text (the body is small
/// and comes in the same reads; reading stops at the body's announced length or a close).
fn response(s: &mut TcpStream) -> String {
    let mut out = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        let text = String::from_utf8_lossy(&out).into_owned();
        if let Some(end) = text.find("\r\n\r\n") {
            let length = text[..end]
                .to_ascii_lowercase()
                .lines()
                .find_map(|l| {
                    l.strip_prefix("content-length:")
                        .map(|v| v.trim().parse::<usize>())
                })
                .and_then(Result::ok);
            if length.is_some_and(|n| out.len() >= end + 4 + n) {
                return text;
            }
        }
        match s.read(&mut buf) {
            Ok(0) | Err(_) => return text,
            Ok(n) => out.extend_from_slice(&buf[..n]),
        }
    }
}

#[tokio::test]
async fn a_proxy_v2_header_from_a_trusted_proxy_names_the_client() {
    let (loft, queue) = start(&["--max-connections-per-ip", "1"]).await;
    // The client the header names is the source IP the policy sees.
    let mut first = connect_from(&loft, "127.0.0.1").await;
    first.write_all(&proxy_v2([203, 0, 113, 9], 40000)).unwrap();
    first.write_all(&signed_send(&loft, &queue)).unwrap();
    let answer = response(&mut first);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    // ... and the address the per-address limit counts: a second connection for the same
    // client is refused with the 503 (after its header, so the balancer reads it).
    let mut second = connect_from(&loft, "127.0.0.1").await;
    second
        .write_all(&proxy_v2([203, 0, 113, 9], 40001))
        .unwrap();
    second
        .write_all(b"GET /health HTTP/1.1\r\nHost: loft\r\n\r\n")
        .unwrap();
    let refused = response(&mut second);
    assert!(refused.starts_with("HTTP/1.1 503"), "{refused}");
    assert!(
        refused.contains("too many open connections from 203.0.113.9 (the limit is 1 per address)"),
        "{refused}"
    );
    assert!(
        refused.to_ascii_lowercase().contains("retry-after: 1"),
        "{refused}"
    );
    // Another client through the same proxy is served meanwhile, and so is the proxy's
    // own connection without a header (the proxy's address is not limited), though the
    // policy then sees the proxy.
    let mut other = connect_from(&loft, "127.0.0.1").await;
    other
        .write_all(&proxy_v2([203, 0, 113, 10], 40002))
        .unwrap();
    other.write_all(&signed_send(&loft, &queue)).unwrap();
    let answer = response(&mut other);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let mut plain = [
        connect_from(&loft, "127.0.0.1").await,
        connect_from(&loft, "127.0.0.1").await,
    ];
    for s in &mut plain {
        s.write_all(&signed_send(&loft, &queue)).unwrap();
        let answer = response(s);
        assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
        assert!(answer.contains("AccessDenied"), "{answer}");
    }
    // From an address that is no trusted proxy the header is not read: the connection
    // does not get to act as 203.0.113.9.
    let mut stranger = connect_from(&loft, "127.0.0.2").await;
    stranger
        .write_all(&proxy_v2([203, 0, 113, 11], 40003))
        .unwrap();
    stranger.write_all(&signed_send(&loft, &queue)).unwrap();
    let answer = response(&mut stranger);
    assert!(!answer.starts_with("HTTP/1.1 200"), "{answer}");
    // The first connection still works.
    first.write_all(&signed_send(&loft, &queue)).unwrap();
    let answer = response(&mut first);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}
