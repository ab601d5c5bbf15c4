//! An HTTP/S subscriber for the tests: an axum server that hands every request to the
//! test through a channel and answers HTTP 500 to the first N of them (then 200); and the
//! subscriber's checks: SNS's headers, the signature verified with the certificate fetched
//! from SigningCertURL, confirmation through SubscribeURL.
//!
//! Source: SNS Developer Guide "Use Amazon SNS to send messages to HTTP/S endpoints"
//! (headers, confirmation), "Verifying the signatures of Amazon SNS messages".

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::Router;
use loft_server::sns_signing::{self, SignatureVersion, SignedFields};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::PATIENCE;

/// One request the sink received.
#[derive(Debug, Clone)]
pub struct Hit {
    pub headers: HeaderMap,
    pub body: String,
    /// When it arrived.
    pub at: Instant,
    /// What the sink answered.
    pub status: u16,
}

impl Hit {
    /// The body as JSON.
    pub fn json(&self) -> Value {
        crate::json_of(&self.body)
    }

    /// A header's value, if present.
    pub fn optional(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// A header's value; panics when missing.
    #[track_caller]
    pub fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .unwrap_or_else(|| panic!("no {name} header: {:?}", self.headers))
            .to_str()
            .expect("ASCII header")
    }
}

struct Shared {
    tx: mpsc::UnboundedSender<Hit>,
    /// Requests still to answer with [`Shared::failure_status`].
    failures: AtomicUsize,
    /// The status of a failed answer (500 unless [`Sink::fail_next_with`] says).
    failure_status: AtomicU16,
    /// Whether the next request is held until [`Sink::release`].
    hold: AtomicBool,
    release: tokio::sync::Notify,
}

/// The HTTP subscriber.
pub struct Sink {
    pub addr: SocketAddr,
    rx: mpsc::UnboundedReceiver<Hit>,
    shared: Arc<Shared>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

async fn record(State(s): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let fail = s
        .failures
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok();
    let status = if fail {
        StatusCode::from_u16(s.failure_status.load(Ordering::SeqCst))
            .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    } else {
        StatusCode::OK
    };
    let _ = s.tx.send(Hit {
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
        at: Instant::now(),
        status: status.as_u16(),
    });
    if s.hold.swap(false, Ordering::SeqCst) {
        s.release.notified().await;
    }
    status
}

impl Sink {
    /// A sink on a free port.
    pub async fn start() -> Sink {
        Self::start_on("127.0.0.1:0".parse().expect("addr")).await
    }

    /// A sink on `addr` (to bring one back on the address a subscription names).
    pub async fn start_on(addr: SocketAddr) -> Sink {
        let (tx, rx) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared {
            tx,
            failures: AtomicUsize::new(0),
            failure_status: AtomicU16::new(500),
            hold: AtomicBool::new(false),
            release: tokio::sync::Notify::new(),
        });
        let mut sink = Sink {
            addr,
            rx,
            shared,
            stop: None,
            task: None,
        };
        sink.listen(addr).await;
        sink
    }

    async fn listen(&mut self, addr: SocketAddr) {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .unwrap_or_else(|e| panic!("bind the sink on {addr}: {e}"));
        self.addr = listener.local_addr().expect("sink address");
        let app = Router::new()
            .fallback(record)
            .with_state(self.shared.clone());
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        self.stop = Some(stop_tx);
        self.task = Some(tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = stop_rx.await;
                })
                .await;
        }));
    }

    /// Stops listening and closes every connection (kept-alive ones too), so the next
    /// delivery attempt finds nobody there.
    pub async fn stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = tokio::time::timeout(PATIENCE, task).await;
        }
    }

    /// Listens again on the same address.
    pub async fn restart(&mut self) {
        assert!(self.task.is_none(), "the sink is still running");
        let addr = self.addr;
        self.listen(addr).await;
    }

    /// `http://ADDR{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// Answers HTTP 500 to the next `n` requests.
    pub fn fail_next(&self, n: usize) {
        self.fail_next_with(n, 500);
    }

    /// Answers the next `n` requests with HTTP `status` (then 200).
    pub fn fail_next_with(&self, n: usize, status: u16) {
        self.shared.failure_status.store(status, Ordering::SeqCst);
        self.shared.failures.store(n, Ordering::SeqCst);
    }

    /// Holds the next request: it is reported by [`Self::next`] at once, but answered only
    /// after [`Self::release`], so a test can act while a delivery attempt is in flight.
    pub fn hold_next(&self) {
        self.shared.hold.store(true, Ordering::SeqCst);
    }

    /// Lets the held request be answered.
    pub fn release(&self) {
        self.shared.release.notify_one();
    }

    /// The next request, waiting at most [`PATIENCE`].
    pub async fn next(&mut self) -> Hit {
        self.next_within(PATIENCE)
            .await
            .unwrap_or_else(|| panic!("nothing reached the sink within {PATIENCE:?}"))
    }

    /// The next request if one comes within `wait`.
    pub async fn next_within(&mut self, wait: std::time::Duration) -> Option<Hit> {
        match tokio::time::timeout(wait, self.rx.recv()).await {
            Ok(Some(h)) => Some(h),
            Ok(None) => panic!("sink channel closed"),
            Err(_) => None,
        }
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// Fetches the certificate at `url` (the SigningCertURL) as PEM.
pub async fn fetch_certificate(url: &str) -> String {
    let resp = reqwest::get(url)
        .await
        .unwrap_or_else(|e| panic!("GET SigningCertURL {url}: {e}"));
    assert_eq!(resp.status(), 200, "GET {url}");
    let pem = resp.text().await.expect("certificate body");
    assert!(
        pem.starts_with("-----BEGIN CERTIFICATE-----"),
        "SigningCertURL did not serve a PEM certificate: {pem:?}"
    );
    pem
}

/// The signed fields of an SNS JSON document, as a subscriber reads them.
pub fn signed_fields(env: &Value) -> SignedFields {
    let s = |k: &str| env.get(k).and_then(Value::as_str).map(str::to_owned);
    SignedFields {
        message_type: s("Type").expect("Type"),
        message: s("Message").expect("Message"),
        message_id: s("MessageId").expect("MessageId"),
        subject: s("Subject"),
        subscribe_url: s("SubscribeURL"),
        timestamp: s("Timestamp").expect("Timestamp"),
        token: s("Token"),
        topic_arn: s("TopicArn").expect("TopicArn"),
    }
}

/// Verifies an SNS document's signature the way subscribers do: the certificate from its
/// SigningCertURL, the string to sign of its Type, SHA1 for SignatureVersion 1 and SHA256
/// for 2. Also checks that a changed Message no longer verifies. Returns the version.
pub async fn verify_envelope(env: &Value) -> SignatureVersion {
    let version = env["SignatureVersion"]
        .as_str()
        .and_then(SignatureVersion::parse)
        .unwrap_or_else(|| panic!("bad SignatureVersion in {env}"));
    let signature = env["Signature"].as_str().expect("Signature");
    let cert = fetch_certificate(env["SigningCertURL"].as_str().expect("SigningCertURL")).await;
    let fields = signed_fields(env);
    assert!(
        sns_signing::verify(&cert, &fields, signature, version),
        "signature does not verify: {env}"
    );
    let other = if version == SignatureVersion::V1 {
        SignatureVersion::V2
    } else {
        SignatureVersion::V1
    };
    assert!(
        !sns_signing::verify(&cert, &fields, signature, other),
        "signature also verifies with the other hash"
    );
    let mut tampered = fields.clone();
    tampered.message.push('!');
    assert!(
        !sns_signing::verify(&cert, &tampered, signature, version),
        "a changed message still verifies"
    );
    version
}

/// Checks the headers SNS sends with every HTTP/S message of `message_type`.
#[track_caller]
pub fn assert_sns_headers(hit: &Hit, message_type: &str, topic_arn: &str) {
    assert_eq!(hit.header("x-amz-sns-message-type"), message_type);
    assert_eq!(hit.header("x-amz-sns-topic-arn"), topic_arn);
    assert_eq!(hit.header("content-type"), "text/plain; charset=UTF-8");
    assert_eq!(
        hit.header("user-agent"),
        "Amazon Simple Notification Service Agent"
    );
    let id = hit.header("x-amz-sns-message-id");
    if hit.optional("x-amz-sns-rawdelivery") != Some("true") {
        assert_eq!(hit.json()["MessageId"], id, "x-amz-sns-message-id");
    }
}
