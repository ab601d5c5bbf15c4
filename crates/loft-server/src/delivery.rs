//! Delivery workers: POST each due SNS delivery to its HTTP/S endpoint, or invoke the
//! configured function of a `lambda` subscription ([`crate::invoke`]), and report the
//! outcome to the service, which schedules retries by the delivery policy (HTTP/S) or as
//! asynchronous invocation retries (Lambda).
//!
//! Deliveries live in the store, so a restart resumes every pending one. Attempts run
//! concurrently, at most [`MAX_CONCURRENT`] at once, each with its own timeout, so one slow
//! or dead endpoint never delays the others nor the publish that queued them
//! (`chapter-42-sns.md` "Publish"; SNS Developer Guide "Amazon SNS message delivery
//! retries"). Redirects are not followed, and every attempt connects only to addresses the
//! SNS endpoint policy permits ([`loft_core::endpoint_policy`]), checked after DNS
//! resolution ([`PolicyResolver`]).
//!
//! `https://` endpoints are reached over rustls (ring provider), verifying the endpoint's
//! certificate against the platform's root certificates, or the PEM bundle named by
//! `SSL_CERT_FILE` (and the directories of `SSL_CERT_DIR`) instead when set, as
//! rustls-native-certs reads them. TLS runs on top of the same resolver and connector as
//! plain HTTP, so the endpoint policy and the no-redirect rule hold for both schemes.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use loft_core::endpoint_policy::EndpointPolicy;
use loft_core::functions::InvokeOutcome;
use loft_core::model::DeliveryRecord;
use loft_core::Service;
use tokio::sync::Semaphore;

/// Most attempts in flight at once.
pub const MAX_CONCURRENT: usize = 256;
/// Per-attempt timeout, seconds.
pub const ATTEMPT_TIMEOUT_SECS: u64 = 15;
/// Longest sleep between looks at the store, seconds (new deliveries wake the worker at once).
pub const IDLE_CAP_SECS: u64 = 30;

/// Why an endpoint's host was refused: every address it resolved to is denied by the
/// endpoint policy, or it resolved to none.
#[derive(Debug)]
pub struct Refused(pub String);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refused {}

/// A DNS resolver that returns only the addresses the endpoint policy permits, so the
/// client connects only to those; a host with none is refused. Runs at every connection,
/// so a name that re-resolves to a denied address (DNS rebinding) is caught too.
#[derive(Debug, Clone)]
pub struct PolicyResolver {
    policy: Arc<EndpointPolicy>,
}

impl PolicyResolver {
    /// A resolver filtering by `policy`.
    pub fn new(policy: Arc<EndpointPolicy>) -> Self {
        PolicyResolver { policy }
    }

    /// Resolves `host` with the system resolver and keeps the permitted addresses (port 0).
    ///
    /// Errors: resolution failed, or [`Refused`] when no address is permitted.
    pub async fn resolve_host(
        &self,
        host: &str,
    ) -> Result<Vec<SocketAddr>, Box<dyn std::error::Error + Send + Sync>> {
        let resolved: Vec<SocketAddr> = tokio::net::lookup_host((host, 0)).await?.collect();
        let (permitted, denied): (Vec<SocketAddr>, Vec<SocketAddr>) = resolved
            .into_iter()
            .partition(|a| self.policy.permits(a.ip()));
        if permitted.is_empty() {
            let denied: Vec<String> = denied.iter().map(|a| a.ip().to_string()).collect();
            tracing::warn!(host, addresses = ?denied, "SNS delivery refused by the endpoint policy");
            return Err(Box::new(Refused(format!(
                "{host} resolves only to addresses the SNS endpoint policy denies ({})",
                denied.join(", ")
            ))));
        }
        if !denied.is_empty() {
            tracing::debug!(
                host,
                ?denied,
                "skipping addresses the endpoint policy denies"
            );
        }
        Ok(permitted)
    }
}

impl reqwest::dns::Resolve for PolicyResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let this = self.clone();
        Box::pin(async move {
            let addrs = this.resolve_host(name.as_str()).await?;
            Ok(Box::new(addrs.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// The HTTP client deliveries use: SNS's User-Agent, no redirects, no proxies (a proxy
/// would resolve names itself, past the policy), per-attempt timeouts, a resolver that
/// connects only to addresses `policy` permits (for `http://` and `https://` alike), and
/// TLS that trusts the platform's roots or `SSL_CERT_FILE` (see the module documentation).
///
/// Errors: the client cannot be built (the root store held certificates but none rustls
/// could use).
pub fn client(policy: Arc<EndpointPolicy>) -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(ATTEMPT_TIMEOUT_SECS))
        .connect_timeout(Duration::from_secs(5))
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .dns_resolver(Arc::new(PolicyResolver::new(policy)))
        .user_agent("Amazon Simple Notification Service Agent")
        .build()
        .map_err(|e| e.to_string())
}

/// Logs where HTTPS deliveries get their trusted root certificates, the way the delivery
/// client loads them (rustls-native-certs): a warning when the store could not be read
/// (say, `SSL_CERT_FILE` names a missing file) or holds no certificate, since then every
/// `https://` delivery fails certificate verification.
fn log_trust_roots() {
    let source = match (
        std::env::var_os("SSL_CERT_FILE"),
        std::env::var_os("SSL_CERT_DIR"),
    ) {
        (None, None) => "the platform's certificate store".to_owned(),
        (file, dir) => {
            let mut parts = Vec::new();
            if let Some(f) = file {
                parts.push(format!("SSL_CERT_FILE={}", f.to_string_lossy()));
            }
            if let Some(d) = dir {
                parts.push(format!("SSL_CERT_DIR={}", d.to_string_lossy()));
            }
            parts.join(" ")
        }
    };
    let loaded = rustls_native_certs::load_native_certs();
    for e in &loaded.errors {
        tracing::warn!(roots = %source, error = %e, "cannot read root certificates for HTTPS deliveries");
    }
    if loaded.certs.is_empty() {
        tracing::warn!(roots = %source, "no trusted root certificates: every https:// SNS delivery will fail certificate verification");
    } else {
        tracing::debug!(roots = %source, certificates = loaded.certs.len(), "HTTPS deliveries trust these root certificates");
    }
}

/// The two clients of deliveries: HTTP/S endpoints (under the endpoint policy) and
/// configured functions (the operator's hosts).
struct Clients {
    http: reqwest::Client,
    functions: reqwest::Client,
}

/// One attempt: POST the delivery; an answer from 200 to 499 ends it (its status
/// returned: SNS counts a delivery failed only when the endpoint answers outside
/// 200-4xx or not within the timeout, SNS Developer Guide "Step 1: Make sure your
/// endpoint is ready to process Amazon SNS messages"), anything else is a failure to
/// retry. An
/// endpoint whose host is an IP literal the policy denies is refused before connecting
/// (the client resolves only host names, through [`PolicyResolver`]).
pub async fn attempt(
    client: &reqwest::Client,
    policy: &EndpointPolicy,
    d: &DeliveryRecord,
) -> Result<u16, String> {
    if let Err(why) = policy.check_url(&d.endpoint) {
        tracing::warn!(endpoint = %d.endpoint, reason = %why, "SNS delivery refused by the endpoint policy");
        return Err(format!("refused by the SNS endpoint policy: {why}"));
    }
    let mut req = client
        .post(&d.endpoint)
        .header("content-type", &d.content_type)
        .body(d.body.clone());
    for (k, v) in &d.headers {
        req = req.header(k, v);
    }
    match req.send().await {
        Ok(resp) if (200..500).contains(&resp.status().as_u16()) => Ok(resp.status().as_u16()),
        Ok(resp) => Err(format!("HTTP status {}", resp.status().as_u16())),
        Err(e) => Err(crate::invoke::error_chain(&e)),
    }
}

/// One attempt of a Lambda delivery (its endpoint is a function ARN): the SNS event to
/// the configured function, its outcome to [`Functions::invocation_failed`] or done.
async fn invoke_and_report(svc: &Service, client: &reqwest::Client, d: DeliveryRecord) {
    let report = match svc.functions().delivery_function(&d).await {
        Ok(f) => {
            let outcome =
                crate::invoke::invoke(client, f, f.invocation_type, &d.body, &svc.config().region)
                    .await;
            let ok = matches!(outcome, InvokeOutcome::Success(_));
            let why = (!ok).then(|| outcome.describe());
            svc.sns()
                .log_delivery_status(&d, ok, ok.then_some(202), why.as_deref())
                .await;
            match outcome {
                InvokeOutcome::Success(_) => svc.sns().delivery_done(&d).await,
                failed => {
                    tracing::debug!(function = %d.endpoint, error = %failed.describe(), attempt = d.attempts + 1, "invocation failed");
                    svc.functions().invocation_failed(&d, &failed).await
                }
            }
        }
        Err(e) => {
            svc.functions()
                .invocation_failed(&d, &InvokeOutcome::Rejected(e.message))
                .await
        }
    };
    if let Err(e) = report {
        tracing::warn!(error = %e, "could not record an invocation outcome");
    }
}

async fn attempt_and_report(svc: &Service, clients: &Clients, d: DeliveryRecord) {
    if d.endpoint.starts_with("arn:aws:lambda:") {
        return invoke_and_report(svc, &clients.functions, d).await;
    }
    let client = &clients.http;
    let outcome = attempt(client, &svc.config().endpoint_policy, &d).await;
    let status = match &outcome {
        Ok(code) => Some(*code),
        Err(e) => e.strip_prefix("HTTP status ").and_then(|c| c.parse().ok()),
    };
    svc.sns()
        .log_delivery_status(
            &d,
            outcome.is_ok(),
            status,
            outcome.as_ref().err().map(String::as_str),
        )
        .await;
    let report = match outcome {
        Ok(_) => svc.sns().delivery_done(&d).await,
        Err(e) => {
            tracing::debug!(endpoint = %d.endpoint, error = %e, attempt = d.attempts + 1, "delivery attempt failed");
            svc.sns().delivery_failed(&d, &e).await
        }
    };
    if let Err(e) = report {
        tracing::warn!(error = %e, "could not record a delivery outcome");
    }
}

/// Attempts every delivery due now and waits for all of them; returns how many were
/// attempted. The workers' loop does the same without waiting; tests drive this with a
/// moved clock.
pub async fn deliver_due(svc: &Arc<Service>, client: &reqwest::Client) -> usize {
    let Ok(functions) = crate::invoke::client() else {
        return 0;
    };
    let clients = Arc::new(Clients {
        http: client.clone(),
        functions,
    });
    let due = match svc.sns().take_deliveries(MAX_CONCURRENT as u32).await {
        Ok(d) => d,
        Err(e) => {
            tracing::warn!(error = %e, "could not take deliveries");
            return 0;
        }
    };
    let n = due.len();
    let mut tasks = Vec::with_capacity(n);
    for d in due {
        let svc = svc.clone();
        let clients = clients.clone();
        tasks.push(tokio::spawn(async move {
            attempt_and_report(&svc, &clients, d).await
        }));
    }
    for t in tasks {
        let _ = t.await;
    }
    n
}

/// Runs the delivery workers until `stop` resolves, then takes no more deliveries and
/// waits for the attempts in flight to finish and be recorded (at most
/// [`ATTEMPT_TIMEOUT_SECS`] plus 5 s), so a graceful shutdown leaves no delivery leased
/// to a process that is gone. Attempts still running after that keep their lease, which
/// expires after [`loft_core::service::DELIVERY_LEASE_MS`] as after a crash.
pub async fn run(svc: Arc<Service>, stop: impl std::future::Future<Output = ()>) {
    tokio::pin!(stop);
    log_trust_roots();
    let clients = match (
        client(Arc::new(svc.config().endpoint_policy.clone())),
        crate::invoke::client(),
    ) {
        (Ok(http), Ok(functions)) => Arc::new(Clients { http, functions }),
        (Err(e), _) | (_, Err(e)) => {
            tracing::error!(error = %e, "cannot build the HTTP client; deliveries disabled");
            return;
        }
    };
    let permits = Arc::new(Semaphore::new(MAX_CONCURRENT));
    loop {
        let free = permits.available_permits() as u32;
        if free > 0 {
            match svc.sns().take_deliveries(free).await {
                Ok(due) => {
                    for d in due {
                        let Ok(permit) = permits.clone().acquire_owned().await else {
                            return;
                        };
                        let svc = svc.clone();
                        let clients = clients.clone();
                        tokio::spawn(async move {
                            let _permit = permit;
                            attempt_and_report(&svc, &clients, d).await;
                        });
                    }
                }
                Err(e) => tracing::warn!(error = %e, "could not take deliveries"),
            }
        }
        let idle = svc
            .sns()
            .delivery_idle(Duration::from_secs(IDLE_CAP_SECS))
            .await
            .unwrap_or(Duration::from_secs(1))
            .max(Duration::from_millis(5));
        tokio::select! {
            _ = svc.sns().delivery_wakeup() => {}
            _ = tokio::time::sleep(idle) => {}
            _ = &mut stop => break,
        }
    }
    let in_flight = MAX_CONCURRENT - permits.available_permits();
    if in_flight > 0 {
        tracing::info!(in_flight, "waiting for delivery attempts in flight");
        let all = permits.acquire_many(MAX_CONCURRENT as u32);
        if tokio::time::timeout(Duration::from_secs(ATTEMPT_TIMEOUT_SECS + 5), all)
            .await
            .is_err()
        {
            tracing::warn!(
                "delivery attempts still in flight at shutdown; their leases will expire"
            );
        }
    }
}
