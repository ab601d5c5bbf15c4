//! Delivery workers: POST each due SNS delivery to its HTTP/S endpoint and report the
//! outcome to the service, which schedules retries by the delivery policy.
//!
//! Deliveries live in the store, so a restart resumes every pending one. Attempts run
//! concurrently, at most [`MAX_CONCURRENT`] at once, each with its own timeout, so one slow
//! or dead endpoint never delays the others nor the publish that queued them
//! (`chapter-42-sns.md` "Publish"; SNS Developer Guide "Amazon SNS message delivery
//! retries"). Redirects are not followed.

use std::sync::Arc;
use std::time::Duration;

use loft_core::model::DeliveryRecord;
use loft_core::Service;
use tokio::sync::Semaphore;

/// Most attempts in flight at once.
pub const MAX_CONCURRENT: usize = 256;
/// Per-attempt timeout, seconds.
pub const ATTEMPT_TIMEOUT_SECS: u64 = 15;
/// Longest sleep between looks at the store, seconds (new deliveries wake the worker at once).
pub const IDLE_CAP_SECS: u64 = 30;

/// The HTTP client deliveries use: SNS's User-Agent, no redirects, per-attempt timeouts.
///
/// Errors: the client cannot be built (no TLS backend).
pub fn client() -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(ATTEMPT_TIMEOUT_SECS))
        .connect_timeout(Duration::from_secs(5))
        .redirect(reqwest::redirect::Policy::none())
        .user_agent("Amazon Simple Notification Service Agent")
        .build()
        .map_err(|e| e.to_string())
}

/// One attempt: POST the delivery; 2xx is success, anything else a failure to retry.
pub async fn attempt(client: &reqwest::Client, d: &DeliveryRecord) -> Result<(), String> {
    let mut req = client
        .post(&d.endpoint)
        .header("content-type", &d.content_type)
        .body(d.body.clone());
    for (k, v) in &d.headers {
        req = req.header(k, v);
    }
    match req.send().await {
        Ok(resp) if resp.status().is_success() => Ok(()),
        Ok(resp) => Err(format!("HTTP status {}", resp.status().as_u16())),
        Err(e) => Err(e.to_string()),
    }
}

async fn attempt_and_report(svc: &Service, client: &reqwest::Client, d: DeliveryRecord) {
    let outcome = attempt(client, &d).await;
    let report = match outcome {
        Ok(()) => svc.delivery_done(&d).await,
        Err(e) => {
            tracing::debug!(endpoint = %d.endpoint, error = %e, attempt = d.attempts + 1, "delivery attempt failed");
            svc.delivery_failed(&d, &e).await
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
    let due = match svc.take_deliveries(MAX_CONCURRENT as u32).await {
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
        let client = client.clone();
        tasks.push(tokio::spawn(async move {
            attempt_and_report(&svc, &client, d).await
        }));
    }
    for t in tasks {
        let _ = t.await;
    }
    n
}

/// Runs the delivery workers until the task is aborted.
pub async fn run(svc: Arc<Service>) {
    let client = match client() {
        Ok(c) => c,
        Err(e) => {
            tracing::error!(error = %e, "cannot build the HTTP client; deliveries disabled");
            return;
        }
    };
    let permits = Arc::new(Semaphore::new(MAX_CONCURRENT));
    loop {
        let free = permits.available_permits() as u32;
        if free > 0 {
            match svc.take_deliveries(free).await {
                Ok(due) => {
                    for d in due {
                        let Ok(permit) = permits.clone().acquire_owned().await else {
                            return;
                        };
                        let svc = svc.clone();
                        let client = client.clone();
                        tokio::spawn(async move {
                            let _permit = permit;
                            attempt_and_report(&svc, &client, d).await;
                        });
                    }
                }
                Err(e) => tracing::warn!(error = %e, "could not take deliveries"),
            }
        }
        let idle = svc
            .delivery_idle(Duration::from_secs(IDLE_CAP_SECS))
            .await
            .unwrap_or(Duration::from_secs(1))
            .max(Duration::from_millis(5));
        tokio::select! {
            _ = svc.delivery_wakeup() => {}
            _ = tokio::time::sleep(idle) => {}
        }
    }
}
