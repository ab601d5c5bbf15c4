//! Loft as a TLS client: SNS deliveries to `https://` endpoints and the admin commands
//! against an HTTPS listener, trusting a test certificate authority (made with rcgen)
//! through `SSL_CERT_FILE`, as rustls-native-certs reads it.
//!
//! The subscriber is an axum server behind tokio-rustls ([`HttpsSink`]) that records the
//! requests it gets, the TCP connections it accepts and the handshakes that fail, so a test
//! can tell "never contacted" from "contacted, but the handshake failed" from "delivered".

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::{OriginalUri, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use loft_server::sns_signing::{self, SignatureVersion, SignedFields};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::Value;
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;

use crate::harness::*;

/// A test certificate authority; its certificate is in `ca.pem` in its directory, the
/// file `SSL_CERT_FILE` names.
struct TestCa {
    dir: tempfile::TempDir,
    issuer: CertifiedIssuer<'static, KeyPair>,
}

impl TestCa {
    fn new(name: &str) -> TestCa {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let issuer = CertifiedIssuer::self_signed(params, KeyPair::generate().expect("CA key"))
            .expect("CA certificate");
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("ca.pem"), issuer.pem()).expect("write ca.pem");
        TestCa { dir, issuer }
    }

    /// The CA certificate's PEM file.
    fn pem_file(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    /// A certificate for `localhost` and `127.0.0.1` signed by this CA, and its key, as
    /// PEM.
    fn issue(&self) -> (String, String) {
        let params = CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
            .expect("leaf parameters");
        let key = KeyPair::generate().expect("leaf key");
        let cert = params
            .signed_by(&key, &self.issuer)
            .expect("leaf certificate");
        (cert.pem(), key.serialize_pem())
    }

    /// A certificate issued by [`Self::issue`], written to `cert.pem` and `key.pem` in
    /// `dir`: `--tls-cert`, `--tls-key` arguments.
    fn issue_files(&self, dir: &std::path::Path) -> Vec<String> {
        let (cert, key) = self.issue();
        std::fs::write(dir.join("cert.pem"), cert).unwrap();
        std::fs::write(dir.join("key.pem"), key).unwrap();
        vec![
            "--tls-cert".into(),
            dir.join("cert.pem").display().to_string(),
            "--tls-key".into(),
            dir.join("key.pem").display().to_string(),
        ]
    }
}

/// The environment of a Loft that trusts `ca` only (no `SSL_CERT_DIR`, which the harness
/// removes), with delivery attempts logged.
fn trusting(ca: &TestCa) -> Vec<(&'static str, String)> {
    vec![
        ("SSL_CERT_FILE", ca.pem_file().display().to_string()),
        ("LOFT_LOG", "info,loft_server::delivery=debug".to_owned()),
    ]
}

/// Starts Loft (plain HTTP listener) with `args` and the environment `env`.
fn start(args: &[&str], env: &[(&'static str, String)]) -> Loft {
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    Loft::start(args, &env)
}

/// One request the sink answered.
#[derive(Debug, Clone)]
struct Hit {
    path: String,
    headers: HeaderMap,
    body: String,
}

impl Hit {
    fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .unwrap_or_else(|| panic!("no {name} header: {:?}", self.headers))
            .to_str()
            .unwrap()
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }
}

/// What the sink answers.
#[derive(Clone)]
enum Answer {
    /// 200 OK.
    Ok,
    /// `307 Temporary Redirect` to this URL.
    Redirect(String),
}

/// What the sink saw.
#[derive(Default)]
struct Seen {
    /// TCP connections accepted.
    connections: AtomicUsize,
    /// Failed TLS handshakes: rustls's error.
    handshake_errors: Mutex<Vec<String>>,
    /// Requests answered, over TLS.
    hits: Mutex<Vec<Hit>>,
}

/// The sink's listener for `axum::serve`: accepts TCP, counts it, and hands axum only the
/// connections whose TLS handshake succeeded (one at a time: a test sink has few).
struct TlsListener {
    tcp: TcpListener,
    acceptor: TlsAcceptor,
    seen: Arc<Seen>,
}

impl axum::serve::Listener for TlsListener {
    type Io = tokio_rustls::server::TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let Ok((tcp, peer)) = self.tcp.accept().await else {
                continue;
            };
            self.seen.connections.fetch_add(1, Ordering::SeqCst);
            match tokio::time::timeout(PATIENCE, self.acceptor.accept(tcp)).await {
                Ok(Ok(tls)) => return (tls, peer),
                Ok(Err(e)) => self
                    .seen
                    .handshake_errors
                    .lock()
                    .unwrap()
                    .push(e.to_string()),
                Err(_) => self
                    .seen
                    .handshake_errors
                    .lock()
                    .unwrap()
                    .push("handshake timed out".to_owned()),
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.tcp.local_addr()
    }
}

/// An HTTPS subscriber on `127.0.0.1:0` with a certificate for `localhost` and
/// `127.0.0.1` issued by a given CA.
struct HttpsSink {
    port: u16,
    seen: Arc<Seen>,
    task: tokio::task::JoinHandle<()>,
}

async fn answer(
    State((seen, answer)): State<(Arc<Seen>, Answer)>,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    seen.hits.lock().unwrap().push(Hit {
        path: uri.path().to_owned(),
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    });
    match answer {
        Answer::Ok => "ok".into_response(),
        Answer::Redirect(to) => {
            (StatusCode::TEMPORARY_REDIRECT, [(header::LOCATION, to)]).into_response()
        }
    }
}

impl HttpsSink {
    async fn start(ca: &TestCa, reply: Answer) -> HttpsSink {
        let (cert_pem, key_pem) = ca.issue();
        let chain: Vec<CertificateDer<'static>> =
            CertificateDer::pem_slice_iter(cert_pem.as_bytes())
                .collect::<Result<_, _>>()
                .expect("certificate PEM");
        let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).expect("key PEM");
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .expect("server certificate");
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let tcp = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the sink");
        let port = tcp.local_addr().unwrap().port();
        let seen = Arc::new(Seen::default());
        let listener = TlsListener {
            tcp,
            acceptor: TlsAcceptor::from(Arc::new(config)),
            seen: seen.clone(),
        };
        let app = axum::Router::new()
            .fallback(answer)
            .with_state((seen.clone(), reply));
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        HttpsSink { port, seen, task }
    }

    /// `https://localhost:PORT{path}`.
    fn url(&self, path: &str) -> String {
        format!("https://localhost:{}{path}", self.port)
    }

    fn connections(&self) -> usize {
        self.seen.connections.load(Ordering::SeqCst)
    }

    fn handshake_errors(&self) -> Vec<String> {
        self.seen.handshake_errors.lock().unwrap().clone()
    }

    fn hits(&self) -> Vec<Hit> {
        self.seen.hits.lock().unwrap().clone()
    }

    /// Waits until at least `n` requests arrived (at most [`PATIENCE`]); returns them.
    async fn wait_for_hits(&self, n: usize) -> Vec<Hit> {
        let hits = eventually(&format!("{n} requests at the HTTPS sink"), || {
            let hits = self.hits();
            (hits.len() >= n).then_some(hits)
        })
        .await;
        assert!(
            self.handshake_errors().is_empty(),
            "{:?}",
            self.handshake_errors()
        );
        hits
    }
}

impl Drop for HttpsSink {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Polls `check` until it returns `Some`, for at most [`PATIENCE`].
async fn eventually<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let found = crate::wait::poll(PATIENCE, || std::future::ready(check())).await;
    found.unwrap_or_else(|| panic!("timed out waiting for {what}"))
}

/// An SNS Query action on `loft`: the status and the XML.
async fn sns(loft: &Loft, pairs: &[(&str, &str)]) -> (u16, String) {
    let mut all = pairs.to_vec();
    all.push(("Version", "2010-03-31"));
    let resp = http()
        .post(&loft.url)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form(&all))
        .send()
        .await
        .unwrap();
    (resp.status().as_u16(), resp.text().await.unwrap())
}

/// The text of the first `<tag>` in `xml`.
fn xml_text<'a>(xml: &'a str, tag: &str) -> &'a str {
    let open = format!("<{tag}>");
    let start = xml
        .find(&open)
        .unwrap_or_else(|| panic!("no <{tag}> in {xml}"))
        + open.len();
    let end = start + xml[start..].find(&format!("</{tag}>")).unwrap();
    &xml[start..end]
}

/// Creates topic `name`; returns its ARN.
async fn create_topic(loft: &Loft, name: &str) -> String {
    let (status, xml) = sns(loft, &[("Action", "CreateTopic"), ("Name", name)]).await;
    assert_eq!(status, 200, "{xml}");
    xml_text(&xml, "TopicArn").to_owned()
}

/// Subscribes `endpoint` with protocol `https` to `topic`, with `DeliveryPolicy` =
/// `policy` when given; returns the status and the XML.
async fn subscribe_https(
    loft: &Loft,
    topic: &str,
    endpoint: &str,
    policy: Option<&str>,
) -> (u16, String) {
    let mut pairs = vec![
        ("Action", "Subscribe"),
        ("TopicArn", topic),
        ("Protocol", "https"),
        ("Endpoint", endpoint),
    ];
    if let Some(p) = policy {
        pairs.extend([
            ("Attributes.entry.1.key", "DeliveryPolicy"),
            ("Attributes.entry.1.value", p),
        ]);
    }
    sns(loft, &pairs).await
}

/// Checks an SNS JSON document's signature with the certificate at its SigningCertURL.
async fn assert_signed(env: &Value) {
    let s = |k: &str| env.get(k).and_then(Value::as_str).map(str::to_owned);
    let cert_url = s("SigningCertURL").expect("SigningCertURL");
    let cert = http()
        .get(&cert_url)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let fields = SignedFields {
        message_type: s("Type").expect("Type"),
        message: s("Message").expect("Message"),
        message_id: s("MessageId").expect("MessageId"),
        subject: s("Subject"),
        subscribe_url: s("SubscribeURL"),
        timestamp: s("Timestamp").expect("Timestamp"),
        token: s("Token"),
        topic_arn: s("TopicArn").expect("TopicArn"),
    };
    let version = SignatureVersion::parse(&s("SignatureVersion").expect("SignatureVersion"))
        .expect("a known SignatureVersion");
    let signature = s("Signature").expect("Signature");
    assert!(
        sns_signing::verify(&cert, &fields, &signature, version),
        "signature does not verify: {env}"
    );
    let mut tampered = fields.clone();
    tampered.message.push('!');
    assert!(
        !sns_signing::verify(&cert, &tampered, &signature, version),
        "a changed message still verifies"
    );
}

/// The subscriptions of `topic` as the console reports them (`GET /_loft/topics`).
async fn console_subscriptions(loft: &Loft, topic: &str) -> Vec<Value> {
    let all: Value = http()
        .get(format!("{}/_loft/topics", loft.url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    all.as_array()
        .unwrap()
        .iter()
        .find(|t| t["arn"] == topic)
        .map(|t| t["subscriptions"].as_array().unwrap().clone())
        .unwrap_or_default()
}

/// Waits until `topic`'s only subscription has a pending delivery whose last attempt
/// failed with `at_least` attempts made; returns that subscription's console entry.
async fn wait_for_failed_attempts(loft: &Loft, topic: &str, at_least: u64) -> Value {
    let found = crate::wait::poll(PATIENCE, || async {
        let subs = console_subscriptions(loft, topic).await;
        assert_eq!(subs.len(), 1, "{subs:?}");
        let sub = &subs[0];
        (sub["max_attempts"].as_u64().unwrap_or(0) >= at_least && sub["last_error"].is_string())
            .then(|| sub.clone())
    })
    .await;
    found.unwrap_or_else(|| panic!("no failed attempt recorded for {topic}\n{}", loft.stderr()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_https_endpoint_trusted_through_ssl_cert_file_is_confirmed_and_gets_signed_notifications(
) {
    let ca = TestCa::new("Loft test CA");
    let sink = HttpsSink::start(&ca, Answer::Ok).await;
    let loft = start(&[], &trusting(&ca));
    let topic = create_topic(&loft, "secure-hooks").await;
    let endpoint = sink.url("/hook");
    let (status, xml) = subscribe_https(&loft, &topic, &endpoint, None).await;
    assert_eq!(status, 200, "{xml}");
    assert_eq!(xml_text(&xml, "SubscriptionArn"), "pending confirmation");

    // The SubscriptionConfirmation arrives over TLS (the sink speaks nothing else),
    // signed.
    let hits = sink.wait_for_hits(1).await;
    let confirmation = &hits[0];
    assert_eq!(confirmation.path, "/hook");
    assert_eq!(
        confirmation.header("x-amz-sns-message-type"),
        "SubscriptionConfirmation"
    );
    let env = confirmation.json();
    assert_eq!(env["Type"], "SubscriptionConfirmation");
    assert_eq!(env["TopicArn"], topic);
    assert_signed(&env).await;

    // Visiting its SubscribeURL confirms the subscription.
    let resp = http()
        .get(env["SubscribeURL"].as_str().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let arn = xml_text(&resp.text().await.unwrap(), "SubscriptionArn").to_owned();
    assert!(arn.starts_with(&format!("{topic}:")), "{arn}");
    let (_, attrs) = sns(
        &loft,
        &[
            ("Action", "GetSubscriptionAttributes"),
            ("SubscriptionArn", &arn),
        ],
    )
    .await;
    assert!(
        attrs.contains("<key>PendingConfirmation</key><value>false</value>"),
        "{attrs}"
    );
    assert!(
        attrs.contains(&format!("<key>Endpoint</key><value>{endpoint}</value>")),
        "{attrs}"
    );

    // A Publish arrives as a signed Notification, over TLS.
    let (status, xml) = sns(
        &loft,
        &[
            ("Action", "Publish"),
            ("TopicArn", &topic),
            ("Message", "hello over TLS"),
        ],
    )
    .await;
    assert_eq!(status, 200, "{xml}");
    let message_id = xml_text(&xml, "MessageId").to_owned();
    let hits = sink.wait_for_hits(2).await;
    let note = &hits[1];
    assert_eq!(note.header("x-amz-sns-message-type"), "Notification");
    assert_eq!(note.header("x-amz-sns-subscription-arn"), arn);
    let env = note.json();
    assert_eq!(env["Type"], "Notification");
    assert_eq!(env["MessageId"], message_id);
    assert_eq!(env["Message"], "hello over TLS");
    assert_signed(&env).await;
    assert_eq!(hits.len(), 2, "nothing else arrived: {hits:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endpoint_with_an_untrusted_certificate_gets_nothing_and_is_retried() {
    let trusted = TestCa::new("Loft trusted CA");
    let stranger = TestCa::new("Someone else's CA");
    let sink = HttpsSink::start(&stranger, Answer::Ok).await;
    let loft = start(&[], &trusting(&trusted));
    let topic = create_topic(&loft, "untrusted-hooks").await;
    // Retries one second apart, so a second attempt comes within the test's patience.
    let policy = r#"{"healthyRetryPolicy":{"minDelayTarget":1,"maxDelayTarget":1,"numRetries":3}}"#;
    let (status, xml) = subscribe_https(&loft, &topic, &sink.url("/hook"), Some(policy)).await;
    assert_eq!(status, 200, "{xml}");

    // Loft connects, refuses the certificate, and schedules a retry; then tries again.
    let sub = wait_for_failed_attempts(&loft, &topic, 2).await;
    assert_eq!(sub["pending_deliveries"], 1, "{sub}");
    let error = sub["last_error"].as_str().unwrap();
    assert!(
        error.contains("invalid peer certificate") && error.contains("UnknownIssuer"),
        "{error}"
    );
    let failures = sink.handshake_errors();
    assert!(failures.len() >= 2, "{failures:?}");
    assert!(
        failures.iter().all(|f| f.contains("UnknownCA")),
        "Loft aborts each handshake with an unknown-CA alert: {failures:?}"
    );
    assert!(
        sink.hits().is_empty(),
        "no request got through: {:?}",
        sink.hits()
    );
    // Loft writes its log off the request threads: wait for the line.
    assert!(
        loft.wait_for_log("delivery attempt failed").await,
        "no failed attempt logged:\n{}",
        loft.stderr()
    );
    let log = loft.stderr();
    let attempt = log
        .lines()
        .find(|l| l.contains("delivery attempt failed"))
        .unwrap_or_else(|| panic!("no failed attempt logged:\n{log}"));
    assert!(
        attempt.contains(&sink.url("/hook")) && attempt.contains("invalid peer certificate"),
        "{attempt}"
    );
    assert!(!log.contains("panicked"), "{log}");
    // Loft is still serving.
    let (status, _) = sns(&loft, &[("Action", "ListTopics")]).await;
    assert_eq!(status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_deliveries_keep_the_endpoint_policy_and_never_follow_redirects() {
    let ca = TestCa::new("Loft test CA");
    let sink = HttpsSink::start(&ca, Answer::Ok).await;

    // The endpoint policy: an IP literal in a denied range is refused at Subscribe, a name
    // resolving into it at delivery, before any connection (no TCP, so no ClientHello).
    {
        let loft = start(&["--sns-deny-cidr", "127.0.0.0/8,::1/128"], &trusting(&ca));
        let topic = create_topic(&loft, "denied").await;
        let literal = format!("https://127.0.0.1:{}/hook", sink.port);
        let (status, xml) = subscribe_https(&loft, &topic, &literal, None).await;
        assert_eq!(status, 400, "{xml}");
        assert!(xml.contains("<Code>InvalidParameter</Code>"), "{xml}");
        assert!(xml.contains("127.0.0.0/8"), "{xml}");
        let (status, xml) = subscribe_https(&loft, &topic, &sink.url("/hook"), None).await;
        assert_eq!(status, 200, "{xml}");
        let sub = wait_for_failed_attempts(&loft, &topic, 1).await;
        let error = sub["last_error"].as_str().unwrap();
        assert!(error.contains("SNS endpoint policy denies"), "{error}");
        assert!(
            loft.wait_for_log("SNS delivery refused by the endpoint policy")
                .await,
            "{}",
            loft.stderr()
        );
        assert_eq!(sink.connections(), 0, "the sink was never contacted");
    }

    // Redirects: a 307 ends the attempt (SNS counts any answer from 200 to 4xx as the
    // endpoint's); its target is never contacted.
    let redirector = HttpsSink::start(&ca, Answer::Redirect(sink.url("/stolen"))).await;
    let loft = start(&[], &trusting(&ca));
    let topic = create_topic(&loft, "redirected").await;
    let (status, xml) = subscribe_https(&loft, &topic, &redirector.url("/hook"), None).await;
    assert_eq!(status, 200, "{xml}");
    let ended = crate::wait::until(PATIENCE, || async {
        let subs = console_subscriptions(&loft, &topic).await;
        let pending = subs[0]["pending_deliveries"].as_u64().unwrap_or(1);
        !redirector.hits().is_empty() && pending == 0
    })
    .await;
    assert!(
        ended,
        "the 307 did not end the delivery: {:?}",
        console_subscriptions(&loft, &topic).await
    );
    let hits = redirector.hits();
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(
        hits[0].header("x-amz-sns-message-type"),
        "SubscriptionConfirmation"
    );
    assert_eq!(sink.connections(), 0, "the redirect was not followed");
}

#[tokio::test]
async fn an_unreadable_ssl_cert_file_is_reported_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-ca.pem");
    let loft = start(&[], &[("SSL_CERT_FILE", missing.display().to_string())]);
    assert!(
        loft.wait_for_log("no trusted root certificates").await,
        "{}",
        loft.stderr()
    );
    let log = loft.stderr();
    let line = log
        .lines()
        .find(|l| l.contains("cannot read root certificates for HTTPS deliveries"))
        .unwrap_or_else(|| panic!("the unreadable file is not reported:\n{log}"));
    assert!(line.contains("WARN"), "{line}");
    assert!(line.contains(&missing.display().to_string()), "{line}");
}

/// Runs `loft ARGS --endpoint endpoint` with `SSL_CERT_FILE=ssl_cert_file`; returns the
/// exit code, stdout and stderr.
fn cli(endpoint: &str, ssl_cert_file: &std::path::Path, args: &[&str]) -> (i32, String, String) {
    let args = [args, &["--endpoint", endpoint]].concat();
    let cert = ssl_cert_file.to_str().expect("a UTF-8 path");
    let out = crate::loft::run_cli(&args, None, &[("SSL_CERT_FILE", cert)]);
    (out.code, out.stdout, out.stderr)
}

#[test]
fn the_admin_commands_speak_https_to_a_listener_ssl_cert_file_trusts() {
    let ca = TestCa::new("Loft test CA");
    let args = ca.issue_files(ca.dir.path());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let loft = Loft::start(&args, &[]);
    assert!(loft.url.starts_with("https://127.0.0.1:"), "{}", loft.url);
    let ok = |args: &[&str]| {
        let (code, out, err) = cli(&loft.url, &ca.pem_file(), args);
        assert_eq!(code, 0, "loft {args:?}: {err}");
        out
    };
    // SQS JSON.
    let url = ok(&["queue", "create", "over-tls"]);
    assert_eq!(url.trim(), format!("{}/000000000000/over-tls", loft.url));
    ok(&["send", "over-tls", "hello over TLS"]);
    let got: Value =
        serde_json::from_str(&ok(&["receive", "over-tls", "--wait", "5", "--json"])).unwrap();
    assert_eq!(got[0]["Body"], "hello over TLS", "{got}");
    // SNS Query.
    let arn = ok(&["topic", "create", "over-tls"]);
    assert_eq!(arn.trim(), "arn:aws:sns:us-east-1:000000000000:over-tls");
    // Loft's own routes (`loft export` reads the peek route).
    ok(&["send", "over-tls", "exported"]);
    let exported = ok(&["export", "over-tls"]);
    assert!(exported.contains("\"exported\""), "{exported}");

    // Trusting another CA instead: refused, and the message says why.
    let stranger = TestCa::new("Someone else's CA");
    let (code, out, err) = cli(&loft.url, &stranger.pem_file(), &["queue", "list"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains(&format!("cannot reach {}", loft.url)) && err.contains("UnknownIssuer"),
        "{err}"
    );
}
