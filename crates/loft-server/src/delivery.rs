//! Delivery workers: POST each topic delivery to its HTTP endpoint.
//!
//! Deliveries run concurrently, at most [`MAX_CONCURRENT`] at once, each with its own
//! timeout, so one slow or dead endpoint never delays the others nor the publish that made
//! them (`chapter-42-sns.md`, "Publish").

use std::sync::Arc;
use std::time::Duration;

use loft_core::service::Delivery;
use tokio::sync::{mpsc, Semaphore};

/// Most deliveries in flight at once.
pub const MAX_CONCURRENT: usize = 256;
/// Per-attempt timeout, seconds.
pub const ATTEMPT_TIMEOUT_SECS: u64 = 15;

/// Runs until the delivery channel closes (the service is dropped).
pub async fn run(mut deliveries: mpsc::UnboundedReceiver<Delivery>) {
    let client = match reqwest::Client::builder()
        .timeout(Duration::from_secs(ATTEMPT_TIMEOUT_SECS))
        .connect_timeout(Duration::from_secs(5))
        .redirect(reqwest::redirect::Policy::none())
        .user_agent("Amazon Simple Notification Service Agent")
        .build()
    {
        Ok(c) => c,
        Err(e) => {
            tracing::error!(error = %e, "cannot build the HTTP client; deliveries disabled");
            return;
        }
    };
    let permits = Arc::new(Semaphore::new(MAX_CONCURRENT));
    while let Some(d) = deliveries.recv().await {
        let Ok(permit) = permits.clone().acquire_owned().await else {
            return;
        };
        let client = client.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let mut req = client
                .post(&d.endpoint)
                .header("content-type", &d.content_type)
                .body(d.body);
            for (k, v) in &d.headers {
                req = req.header(k, v);
            }
            match req.send().await {
                Ok(resp) if resp.status().is_success() => {
                    tracing::debug!(endpoint = %d.endpoint, "delivered");
                }
                Ok(resp) => {
                    tracing::warn!(endpoint = %d.endpoint, status = %resp.status(), subscription = %d.subscription, "delivery refused");
                }
                Err(e) => {
                    tracing::warn!(endpoint = %d.endpoint, error = %e, subscription = %d.subscription, "delivery failed");
                }
            }
        });
    }
}
