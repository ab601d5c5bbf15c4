//! The one plain-HTTP sink of the integration tests: a server on `127.0.0.1:0` that
//! answers 200 to every request and records it (method, path, headers, body), for SNS
//! deliveries and function invocations. The test reads the requests in arrival order
//! ([`Sink::next`], waiting on a channel) or all at once ([`Sink::bodies`]).
//!
//! Included by path (`#[path = "../support/http_sink.rs"] mod http_sink;`). The SNS
//! suite's subscriber (tests/sns/sink.rs) is another thing: it fails and holds requests
//! on demand and checks SNS signatures.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::Router;
use serde_json::Value;
use tokio::sync::mpsc;

/// How long [`Sink::next`] and [`Sink::wait_for`] wait for a request.
pub const PATIENCE: Duration = Duration::from_secs(10);

/// One request the sink received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: Method,
    pub path: String,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Recorded {
    /// The body as JSON; panics when it is not.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "delivery body is not JSON ({e}): {:?}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    /// The body as text (lossy).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// What the server task shares with the test.
#[derive(Clone)]
struct Shared {
    tx: mpsc::UnboundedSender<Recorded>,
    all: Arc<Mutex<Vec<Recorded>>>,
}

/// The sink: its address, the requests so far, the server task (aborted on drop).
pub struct Sink {
    pub addr: SocketAddr,
    rx: mpsc::UnboundedReceiver<Recorded>,
    all: Arc<Mutex<Vec<Recorded>>>,
    task: tokio::task::JoinHandle<()>,
}

async fn record(
    State(s): State<Shared>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    let r = Recorded {
        method,
        path: uri.path().to_owned(),
        headers,
        body,
    };
    s.all.lock().unwrap().push(r.clone());
    let _ = s.tx.send(r);
    StatusCode::OK
}

impl Sink {
    /// Binds `127.0.0.1:0` and serves.
    pub async fn start() -> Sink {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the sink");
        let addr = listener.local_addr().expect("sink address");
        let (tx, rx) = mpsc::unbounded_channel();
        let all = Arc::new(Mutex::new(Vec::new()));
        let shared = Shared {
            tx,
            all: all.clone(),
        };
        let app = Router::new().fallback(record).with_state(shared);
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Sink {
            addr,
            rx,
            all,
            task,
        }
    }

    /// `http://ADDR{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// The next request not yet taken by `next`/`try_next`, waiting at most
    /// [`PATIENCE`].
    #[track_caller]
    pub fn next(&mut self) -> impl std::future::Future<Output = Recorded> + '_ {
        let caller = std::panic::Location::caller();
        async move {
            match tokio::time::timeout(PATIENCE, self.rx.recv()).await {
                Ok(Some(r)) => r,
                Ok(None) => panic!("sink closed ({caller})"),
                Err(_) => panic!("no delivery reached the sink within {PATIENCE:?} ({caller})"),
            }
        }
    }

    /// The next request already received, if any, without waiting.
    pub fn try_next(&mut self) -> Option<Recorded> {
        self.rx.try_recv().ok()
    }

    /// How many requests arrived in all.
    pub fn count(&self) -> usize {
        self.all.lock().unwrap().len()
    }

    /// The bodies of all requests so far, in arrival order, as text.
    pub fn bodies(&self) -> Vec<String> {
        self.all
            .lock()
            .unwrap()
            .iter()
            .map(Recorded::text)
            .collect()
    }

    /// Waits until at least `n` requests arrived in all, at most [`PATIENCE`].
    pub async fn wait_for(&self, n: usize) -> bool {
        crate::wait::until(PATIENCE, || async { self.count() >= n }).await
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        self.task.abort();
    }
}
