//! HTTPS listeners (`--tls-cert`, `--tls-key`) against the real binary, with a self-signed
//! certificate made at test time: aws-sdk-sqs and aws-sdk-sns trusting it, https queue
//! URLs and SNS links, plain HTTP and failed handshakes beside working connections, the
//! connection and header limits over TLS, an `http://` listener beside HTTPS ones, the
//! configuration file's `tls_cert`/`tls_key`, and bad files stopping Loft at start.
//!
//! The tests run on a multi-threaded runtime: the SDKs speak HTTP/2 over TLS (ALPN), and
//! Loft's graceful shutdown when [`Loft`] drops waits for the client to answer its
//! GOAWAY ping, which a current-thread runtime blocked in that `Drop` could not do.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use aws_sdk_sqs::config::{BehaviorVersion, Credentials, Region};
use aws_smithy_http_client::tls::{self, rustls_provider::CryptoMode, TlsContext, TrustStore};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

use crate::harness::*;

/// A self-signed certificate for `localhost` and `127.0.0.1`, and its key, in PEM files.
struct TestCert {
    dir: tempfile::TempDir,
    /// The certificate, PEM.
    pem: String,
}

impl TestCert {
    fn new() -> TestCert {
        let made = rcgen::generate_simple_self_signed(vec![
            "localhost".to_owned(),
            "127.0.0.1".to_owned(),
        ])
        .expect("self-signed certificate");
        let dir = tempfile::tempdir().expect("temp dir");
        let pem = made.cert.pem();
        std::fs::write(dir.path().join("cert.pem"), &pem).unwrap();
        std::fs::write(dir.path().join("key.pem"), made.signing_key.serialize_pem()).unwrap();
        TestCert { dir, pem }
    }

    fn cert(&self) -> PathBuf {
        self.dir.path().join("cert.pem")
    }

    fn key(&self) -> PathBuf {
        self.dir.path().join("key.pem")
    }

    /// `--tls-cert CERT --tls-key KEY`.
    fn args(&self) -> Vec<String> {
        vec![
            "--tls-cert".into(),
            self.cert().display().to_string(),
            "--tls-key".into(),
            self.key().display().to_string(),
        ]
    }

    /// A Loft on `127.0.0.1:0` serving HTTPS with this certificate, plus `more` flags.
    fn start(&self, more: &[&str]) -> Loft {
        let mut args = self.args();
        args.extend(more.iter().map(|s| s.to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let loft = Loft::start(&args, &[]);
        assert!(loft.url.starts_with("https://127.0.0.1:"), "{}", loft.url);
        loft
    }

    /// The AWS SDKs' HTTP client, trusting only this certificate.
    fn sdk_http(&self) -> aws_sdk_sqs::config::SharedHttpClient {
        aws_smithy_http_client::Builder::new()
            .tls_provider(tls::Provider::Rustls(CryptoMode::Ring))
            .tls_context(
                TlsContext::builder()
                    .with_trust_store(TrustStore::empty().with_pem_certificate(self.pem.clone()))
                    .build()
                    .expect("TLS context"),
            )
            .build_https()
    }

    fn sqs(&self, url: &str) -> aws_sdk_sqs::Client {
        let config = aws_sdk_sqs::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .credentials_provider(Credentials::new("x", "x", None, None, "loft-tls"))
            .endpoint_url(url)
            .http_client(self.sdk_http())
            .retry_config(aws_sdk_sqs::config::retry::RetryConfig::disabled())
            .build();
        aws_sdk_sqs::Client::from_conf(config)
    }

    fn sns(&self, url: &str) -> aws_sdk_sns::Client {
        let config = aws_sdk_sns::Config::builder()
            .behavior_version(aws_sdk_sns::config::BehaviorVersion::latest())
            .region(aws_sdk_sns::config::Region::new("us-east-1"))
            .credentials_provider(aws_sdk_sns::config::Credentials::new(
                "x", "x", None, None, "loft-tls",
            ))
            .endpoint_url(url)
            .http_client(self.sdk_http())
            .retry_config(aws_sdk_sns::config::retry::RetryConfig::disabled())
            .build();
        aws_sdk_sns::Client::from_conf(config)
    }

    /// A rustls client trusting only this certificate, offering HTTP/1.1 only.
    fn connector(&self) -> TlsConnector {
        connector_trusting(&self.pem)
    }
}

fn connector_trusting(pem: &str) -> TlsConnector {
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_slice_iter(pem.as_bytes()) {
        roots
            .add(c.expect("PEM certificate"))
            .expect("trust anchor");
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    TlsConnector::from(Arc::new(config))
}

/// `host:port` of an `https://host:port[/...]` URL.
fn authority(url: &str) -> &str {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .unwrap_or(url);
    rest.split('/').next().unwrap_or(rest)
}

/// A TLS connection to `addr` (`127.0.0.1:PORT`) through `connector`.
async fn tls_connect(
    connector: &TlsConnector,
    addr: &str,
) -> std::io::Result<TlsStream<TcpStream>> {
    let tcp = TcpStream::connect(addr).await?;
    let name = ServerName::try_from("127.0.0.1").unwrap();
    connector.connect(name, tcp).await
}

/// Sends `GET target` (keep-alive) for `host` with `extra` header lines on `stream` and
/// reads one response: the head and a `Content-Length` body, as text.
async fn get<S>(stream: &mut S, host: &str, target: &str, extra: &str) -> String
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let req = format!("GET {target} HTTP/1.1\r\nHost: {host}\r\n{extra}\r\n");
    stream.write_all(req.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    let mut buf = [0u8; 8192];
    let read = async {
        loop {
            if let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&raw[..end]).to_ascii_lowercase();
                let len = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse::<usize>().ok())
                    .unwrap_or(0);
                if raw.len() >= end + 4 + len {
                    break;
                }
            }
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => raw.extend_from_slice(&buf[..n]),
            }
        }
    };
    tokio::time::timeout(PATIENCE, read)
        .await
        .expect("an answer in time");
    String::from_utf8_lossy(&raw).into_owned()
}

/// `GET url` over a fresh HTTPS connection trusting `cert`: the raw response.
async fn https_get(cert: &TestCert, url: &str) -> String {
    let addr = authority(url);
    let target = &url[url.find(addr).unwrap() + addr.len()..];
    let target = if target.is_empty() { "/" } else { target };
    let mut s = tls_connect(&cert.connector(), addr)
        .await
        .expect("TLS connection");
    get(&mut s, addr, target, "").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sdk_over_https_gets_https_queue_urls_and_sends_and_receives() {
    let cert = TestCert::new();
    let loft = cert.start(&[]);
    let sqs = cert.sqs(&loft.url);
    let url = sqs
        .create_queue()
        .queue_name("secure")
        .send()
        .await
        .expect("CreateQueue over HTTPS")
        .queue_url()
        .unwrap()
        .to_owned();
    assert_eq!(url, format!("{}/000000000000/secure", loft.url));
    let got = sqs
        .get_queue_url()
        .queue_name("secure")
        .send()
        .await
        .unwrap();
    assert_eq!(got.queue_url(), Some(url.as_str()));
    let listed = sqs.list_queues().send().await.unwrap();
    assert_eq!(listed.queue_urls(), std::slice::from_ref(&url));
    sqs.send_message()
        .queue_url(&url)
        .message_body("over TLS")
        .send()
        .await
        .expect("SendMessage over HTTPS");
    let received = sqs
        .receive_message()
        .queue_url(&url)
        .wait_time_seconds(5)
        .send()
        .await
        .expect("ReceiveMessage over HTTPS");
    assert_eq!(received.messages()[0].body(), Some("over TLS"));
    // The Query protocol's queue-URL path answers with the same https URL.
    let target = "/000000000000/secure?Action=GetQueueAttributes&AttributeName.1=All";
    let resp = https_get(&cert, &format!("{}{target}", loft.url)).await;
    assert!(resp.starts_with("HTTP/1.1 200"), "{resp}");
    let query = https_get(
        &cert,
        &format!(
            "{}/?Action=GetQueueUrl&QueueName=secure&Version=2012-11-05",
            loft.url
        ),
    )
    .await;
    assert!(
        query.contains(&format!("<QueueUrl>{url}</QueueUrl>")),
        "{query}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_http_and_failed_handshakes_touch_only_their_own_connection() {
    let cert = TestCert::new();
    let loft = cert.start(&[]);
    let addr = authority(&loft.url).to_owned();
    // A connection that never says anything holds its own slot, nothing more.
    let _silent = TcpStream::connect(&addr).await.unwrap();
    // Plain HTTP to the TLS port: told to use https, and the connection closes.
    let resp = http()
        .get(format!("http://{addr}/health"))
        .send()
        .await
        .expect("an answer to plain HTTP");
    assert_eq!(resp.status(), 400);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(
        body["error"],
        format!("this listener speaks HTTPS: use https://{addr}")
    );
    // `message` too, the member AWS SDKs show.
    assert_eq!(body["message"], body["error"]);
    // Garbage that starts like a TLS record: the handshake fails, the connection closes.
    let mut junk = TcpStream::connect(&addr).await.unwrap();
    junk.write_all(b"\x16\x03\x01\x00\x05hello-not-tls")
        .await
        .unwrap();
    let mut buf = Vec::new();
    let closed = tokio::time::timeout(PATIENCE, junk.read_to_end(&mut buf)).await;
    assert!(closed.is_ok(), "a failed handshake closes the connection");
    // A client that does not trust the certificate fails its own handshake.
    let stranger = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned()]).unwrap();
    let err = tls_connect(&connector_trusting(&stranger.cert.pem()), &addr)
        .await
        .expect_err("an untrusted certificate");
    assert!(
        err.to_string().to_lowercase().contains("certificate"),
        "{err}"
    );
    // Meanwhile everyone else is served, by the SDK and over a raw TLS connection.
    let sqs = cert.sqs(&loft.url);
    sqs.create_queue().queue_name("after").send().await.unwrap();
    let health = https_get(&cert, &format!("{}/health", loft.url)).await;
    assert!(health.starts_with("HTTP/1.1 200"), "{health}");
    assert!(health.contains("healthy"), "{health}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_connection_and_header_limits_hold_over_tls() {
    let cert = TestCert::new();
    let loft = cert.start(&["--max-connections", "1", "--max-header-bytes", "16384"]);
    let addr = authority(&loft.url).to_owned();
    let connector = cert.connector();
    let mut first = tls_connect(&connector, &addr).await.unwrap();
    let ok = get(&mut first, &addr, "/health", "").await;
    assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
    // The only slot is `first`'s: another connection completes its handshake and is
    // answered 503, over TLS as over plain HTTP.
    let mut second = tls_connect(&connector, &addr)
        .await
        .expect("the TLS handshake of a refused connection");
    let refused = get(&mut second, &addr, "/health", "").await;
    assert!(refused.starts_with("HTTP/1.1 503"), "{refused}");
    assert!(refused.contains("too many open connections"), "{refused}");
    assert!(
        refused.to_ascii_lowercase().contains("retry-after: 1"),
        "{refused}"
    );
    // A request head over the limit: 431.
    let padding = format!("x-padding: {}\r\n", "a".repeat(32 * 1024));
    let too_big = get(&mut first, &addr, "/health", &padding).await;
    assert!(too_big.starts_with("HTTP/1.1 431"), "{too_big}");
    drop(first);
    // The slot frees when that connection closes.
    let last = std::sync::Mutex::new(String::new());
    let freed = crate::wait::until(Duration::from_millis(2500), || async {
        let Ok(mut s) = tls_connect(&connector, &addr).await else {
            return false;
        };
        let answered = get(&mut s, &addr, "/health", "").await;
        let ok = answered.starts_with("HTTP/1.1 200");
        *last.lock().unwrap() = answered;
        ok
    })
    .await;
    assert!(freed, "{}", last.lock().unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sns_links_use_https_and_work() {
    let cert = TestCert::new();
    // The files through the environment this time.
    let loft = Loft::start(
        &[],
        &[
            ("LOFT_TLS_CERT", cert.cert().to_str().unwrap()),
            ("LOFT_TLS_KEY", cert.key().to_str().unwrap()),
        ],
    );
    assert!(loft.url.starts_with("https://"), "{}", loft.url);
    let sink = Sink::start().await;
    let sns = cert.sns(&loft.url);
    let topic = sns
        .create_topic()
        .name("secure-events")
        .send()
        .await
        .expect("CreateTopic over HTTPS")
        .topic_arn()
        .unwrap()
        .to_owned();
    sns.subscribe()
        .topic_arn(&topic)
        .protocol("http")
        .endpoint(format!("http://{}/hook", sink.addr))
        .send()
        .await
        .expect("Subscribe over HTTPS");
    assert!(sink.wait_for(1).await, "a SubscriptionConfirmation arrives");
    let confirmation: Value = serde_json::from_str(&sink.bodies()[0]).unwrap();
    assert_eq!(confirmation["Type"], "SubscriptionConfirmation");
    let base = format!("{}/", loft.url);
    for field in ["SubscribeURL", "SigningCertURL"] {
        let link = confirmation[field].as_str().unwrap();
        assert!(link.starts_with(&base), "{field} is {link}");
    }
    // Visiting the SubscribeURL over HTTPS confirms the subscription.
    let confirmed = https_get(&cert, confirmation["SubscribeURL"].as_str().unwrap()).await;
    assert!(confirmed.starts_with("HTTP/1.1 200"), "{confirmed}");
    assert!(confirmed.contains("<SubscriptionArn>"), "{confirmed}");
    // The signing certificate is served at the https SigningCertURL.
    let pem = https_get(&cert, confirmation["SigningCertURL"].as_str().unwrap()).await;
    assert!(pem.starts_with("HTTP/1.1 200"), "{pem}");
    assert!(pem.contains("-----BEGIN CERTIFICATE-----"), "{pem}");
    sns.publish()
        .topic_arn(&topic)
        .message("hello over TLS")
        .send()
        .await
        .expect("Publish over HTTPS");
    assert!(sink.wait_for(2).await, "the notification arrives");
    let note: Value = serde_json::from_str(&sink.bodies()[1]).unwrap();
    assert_eq!(note["Type"], "Notification");
    assert_eq!(note["Message"], "hello over TLS");
    for field in ["UnsubscribeURL", "SigningCertURL"] {
        let link = note[field].as_str().unwrap();
        assert!(link.starts_with(&base), "{field} is {link}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listener_written_http_stays_plain_beside_https_ones() {
    let cert = TestCert::new();
    let loft = cert.start(&["--listen", "http://127.0.0.1:0"]);
    let urls = loft.urls(2);
    assert!(urls[0].starts_with("https://"), "{urls:?}");
    assert!(urls[1].starts_with("http://"), "{urls:?}");
    let over_tls = cert.sqs(&urls[0]);
    let tls_url = over_tls
        .create_queue()
        .queue_name("both")
        .send()
        .await
        .unwrap()
        .queue_url()
        .unwrap()
        .to_owned();
    assert_eq!(tls_url, format!("{}/000000000000/both", urls[0]));
    let plain = http()
        .post(format!("{}/", urls[1]))
        .header("x-amz-target", "AmazonSQS.GetQueueUrl")
        .header("content-type", "application/x-amz-json-1.0")
        .body(r#"{"QueueName":"both"}"#)
        .send()
        .await
        .unwrap();
    let body: Value = plain.json().await.unwrap();
    assert_eq!(
        body["QueueUrl"],
        format!("{}/000000000000/both", urls[1]),
        "the same queue, reached over plain HTTP"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_configuration_file_names_the_files_relative_to_itself() {
    let cert = TestCert::new();
    let config = cert.dir.path().join("loft.toml");
    std::fs::write(
        &config,
        "[server]\ntls_cert = \"cert.pem\"\ntls_key = \"key.pem\"\n",
    )
    .unwrap();
    let loft = Loft::start(&["--config", config.to_str().unwrap()], &[]);
    assert!(loft.url.starts_with("https://"), "{}", loft.url);
    let health = https_get(&cert, &format!("{}/health", loft.url)).await;
    assert!(health.starts_with("HTTP/1.1 200"), "{health}");
}

/// Runs `loft serve` with `args` on a fresh database; it must exit on its own, without
/// announcing a listener. Returns the exit status's success and stderr.
fn serve_fails(args: &[&str]) -> (bool, String) {
    match crate::loft::TestLoft::new()
        .args(args)
        .stderr_in_memory()
        .try_start()
    {
        Ok(loft) => panic!(
            "loft serve {args:?} kept running, listening on {}",
            loft.url
        ),
        Err(failed) => {
            assert!(!failed.stderr.contains("panicked"), "{}", failed.stderr);
            (failed.status.success(), failed.stderr)
        }
    }
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[test]
fn bad_certificate_or_key_files_stop_loft_naming_the_file() {
    let cert = TestCert::new();
    let other = TestCert::new();
    let junk = cert.dir.path().join("junk.pem");
    std::fs::write(&junk, "not a key\n").unwrap();
    let missing = cert.dir.path().join("missing.pem");
    let (good_cert, good_key, other_key) = (cert.cert(), cert.key(), other.key());
    let cases: [(&[&str], &Path, &str); 4] = [
        (
            &["--tls-cert", p(&good_cert), "--tls-key", p(&other_key)],
            &other_key,
            "does not belong to the certificate",
        ),
        (
            &["--tls-cert", p(&good_cert), "--tls-key", p(&junk)],
            &junk,
            "no usable PEM private key",
        ),
        (
            &["--tls-cert", p(&missing), "--tls-key", p(&good_key)],
            &missing,
            "cannot read the TLS certificate",
        ),
        (
            &["--tls-cert", p(&good_key), "--tls-key", p(&good_key)],
            &good_key,
            "no PEM certificate",
        ),
    ];
    for (args, file, why) in cases {
        let (ok, stderr) = serve_fails(args);
        assert!(!ok, "{args:?} must fail");
        assert!(
            stderr.contains(&format!("loft: {}: ", file.display())) && stderr.contains(why),
            "{args:?}: {stderr}"
        );
    }
    let (ok, stderr) = serve_fails(&["--tls-cert", p(&good_cert)]);
    assert!(
        !ok && stderr.contains("--tls-cert needs --tls-key"),
        "{stderr}"
    );
    let (ok, stderr) = serve_fails(&["--listen", "https://127.0.0.1:0"]);
    assert!(
        !ok && stderr.contains("--listen https://127.0.0.1:0 needs --tls-cert and --tls-key"),
        "{stderr}"
    );
}
