//! SQS event source mapping workers: each node claims the mappings no node polls (a lease
//! row in the store, [`loft_core::service::MAPPING_LEASE_MS`]), and for each one it holds
//! runs up to ScalingConfig.MaximumConcurrency batch loops: receive a batch (BatchSize,
//! MaximumBatchingWindowInSeconds), drop what FilterCriteria rejects, invoke the function
//! synchronously with the SQS event, and let the service settle the batch (delete the
//! successes). The lease is renewed every [`loft_core::service::MAPPING_RENEW_MS`]; a
//! mapping deleted, disabled or taken over stops its loops at the next renewal, or as soon
//! as a loop finds it so before invoking (each batch asks the store, whichever node changed
//! the mapping), and a received batch that will not be invoked goes back to the queue. Only
//! once every loop has ended does the node give the lease up, which is when a disabled
//! mapping turns from `Disabling` to `Disabled`: no invocation follows a `Disabled`. A node
//! that dies leaves its leases to run out, and another node (or this one restarted) takes
//! them.
//!
//! FIFO queues keep their order because the queue does: a receive never returns a
//! message of a group that has messages in flight, so each group has at most one batch in
//! flight, and the service keeps every record after a failed one of its group.
//!
//! Source: Lambda Developer Guide "Using Lambda with Amazon SQS" (polling and batching,
//! batching window, concurrency, FIFO), "Handling errors for an SQS event source".

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use loft_core::functions::{InvokeOutcome, MAX_SYNC_PAYLOAD};
use loft_core::model::EventSourceMappingRecord;
use loft_core::service::{Functions, MAPPING_RENEW_MS};
use loft_core::Service;
use tokio::sync::{watch, Notify};
use tokio::task::JoinHandle;
use tracing::Instrument as _;

use crate::invoke::{self, InvocationType};

/// How often a node looks for mappings to claim.
pub const CLAIM_POLL: Duration = Duration::from_secs(1);
/// Longest wait of one receive (the SQS long-poll limit), seconds.
pub const RECEIVE_WAIT_SECONDS: i64 = 20;
/// Most batch loops of one mapping, whatever its MaximumConcurrency.
pub const MAX_LOOPS: usize = 1000;

/// What one batch came to, for tests and logs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchReport {
    /// Messages received.
    pub received: usize,
    /// Messages the function was invoked with (after FilterCriteria).
    pub invoked: usize,
    /// Messages deleted after the invocation.
    pub deleted: usize,
    /// The invocation's outcome, when there was one.
    pub outcome: Option<InvokeOutcome>,
    /// The mapping was found disabled, deleted or leased to another node before the
    /// invocation: nothing was invoked and the batch went back to the queue.
    pub stopped: bool,
}

/// Runs one batch of mapping `m`: receives (waiting up to `wait_seconds` for the first
/// message, then filling the batch within the mapping's batching window), invokes and
/// settles. Returns `None` when nothing arrived. The workers' loops call it again and
/// again; tests call it by hand.
///
/// Errors: the service's (the queue is gone, the store failed) or the function's
/// (`ResourceNotFoundException` when it is no longer configured).
pub async fn run_batch(
    svc: &Service,
    client: &reqwest::Client,
    m: &EventSourceMappingRecord,
    wait_seconds: i64,
) -> loft_core::Result<Option<BatchReport>> {
    run_batch_until(svc, client, m, wait_seconds, std::future::pending(), false).await
}

/// [`run_batch`], giving up the wait for the first message when `stop` completes. Only
/// that wait is cut short: once messages are received, the batch is invoked and settled;
/// with `leased`, only if the mapping is still enabled and this node's
/// ([`Functions::mapping_active`]), else the batch goes back to the queue
/// ([`BatchReport::stopped`]).
async fn run_batch_until(
    svc: &Service,
    client: &reqwest::Client,
    m: &EventSourceMappingRecord,
    wait_seconds: i64,
    stop: impl Future<Output = ()>,
    leased: bool,
) -> loft_core::Result<Option<BatchReport>> {
    // Checked before each batch: the configuration may no longer let the mapping's
    // account invoke the function.
    let f = svc.functions().mapping_function(m)?.clone();
    let batch = m.batch_size.max(1) as usize;
    let first = svc
        .functions()
        .mapping_receive(m, batch.min(10) as i64, wait_seconds);
    let mut records = tokio::select! {
        r = first => r?,
        // A receive dropped here may have taken messages already: they come back after
        // the visibility timeout, as after any lost consumer.
        _ = stop => return Ok(None),
    };
    if records.is_empty() {
        return Ok(None);
    }
    let mut size: usize = records.iter().map(|r| r.body.len() + 1024).sum();
    if m.maximum_batching_window_seconds > 0 {
        let deadline = tokio::time::Instant::now()
            + Duration::from_secs(m.maximum_batching_window_seconds as u64);
        while records.len() < batch && size < MAX_SYNC_PAYLOAD {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if left.is_zero() {
                break;
            }
            let want = (batch - records.len()).min(10) as i64;
            let wait = (left.as_secs() as i64).min(RECEIVE_WAIT_SECONDS);
            let more = svc.functions().mapping_receive(m, want, wait).await?;
            if more.is_empty() {
                if wait == 0 {
                    // Less than a second of the window is left and the queue is empty.
                    tokio::time::sleep(left).await;
                }
                continue;
            }
            size += more.iter().map(|r| r.body.len() + 1024).sum::<usize>();
            records.extend(more);
        }
    }
    let received = records.len();
    // The batch's span (exported with OpenTelemetry traces, crates/loft/src/logging.rs):
    // linked to each message's send, as a receive's is (`crate::observe::link_to_sends`).
    let span = tracing::info_span!("mapping_batch", mapping = %m.uuid, messages = received);
    crate::observe::link_span_to_sends(
        &span,
        records.iter().map(|r| {
            (
                r.message_id.as_str(),
                r.attributes.get("AWSTraceHeader").map(String::as_str),
            )
        }),
    );
    async {
        if leased && !svc.functions().mapping_active(&m.uuid).await? {
            // Disabled, deleted or taken over while the batch was received: not invoked, and
            // back in the queue for whoever polls next.
            svc.functions().mapping_return(m, &records).await?;
            return Ok(Some(BatchReport {
                received,
                invoked: 0,
                deleted: 0,
                outcome: None,
                stopped: true,
            }));
        }
        let records = svc.functions().mapping_filter(m, records).await?;
        if records.is_empty() {
            return Ok(Some(BatchReport {
                received,
                invoked: 0,
                deleted: 0,
                outcome: None,
                stopped: false,
            }));
        }
        let event = svc.functions().mapping_event(m, &records);
        let outcome = invoke::invoke(
            client,
            &f,
            InvocationType::RequestResponse,
            &event,
            &svc.config().region,
        )
        .await;
        let deleted = svc.functions().mapping_settle(m, &records, &outcome).await?;
        if !matches!(outcome, InvokeOutcome::Success(_)) {
            tracing::info!(mapping = %m.uuid, function = %f.name, messages = records.len(), error = %outcome.describe(), "batch failed; its messages return after the visibility timeout");
        }
        Ok(Some(BatchReport {
            received,
            invoked: records.len(),
            deleted,
            outcome: Some(outcome),
            stopped: false,
        }))
    }
    .instrument(span)
    .await
}

/// One batch loop of a mapping: batches until the mapping stops (`current` turns `None`,
/// or a batch finds it stopped, which `stopped` tells the poller) or the node stops. Loop
/// `index` idles while the mapping's concurrency is at most `index`.
async fn batch_loop(
    svc: Arc<Service>,
    client: reqwest::Client,
    index: usize,
    mut current: watch::Receiver<Option<EventSourceMappingRecord>>,
    mut stop: watch::Receiver<bool>,
    stopped: Arc<Notify>,
) {
    loop {
        if *stop.borrow() {
            return;
        }
        let Some(m) = current.borrow_and_update().clone() else {
            return;
        };
        if index >= Functions::mapping_concurrency(&m) {
            tokio::select! {
                _ = current.changed() => continue,
                _ = stop.changed() => return,
            }
        }
        // A receive waiting for messages ends with the node or the mapping; a batch in
        // flight (invocation and settling) is not interrupted.
        let ended = async {
            tokio::select! {
                _ = stop.wait_for(|s| *s) => {}
                _ = current.wait_for(Option::is_none) => {}
            }
        };
        let result = run_batch_until(&svc, &client, &m, RECEIVE_WAIT_SECONDS, ended, true).await;
        match result {
            Ok(Some(r)) if r.stopped => {
                stopped.notify_one();
                return;
            }
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(mapping = %m.uuid, error = %e, "event source mapping batch failed");
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_secs(5)) => {}
                    _ = current.changed() => {}
                    _ = stop.changed() => return,
                }
            }
        }
    }
}

/// Polls mapping `m` (leased to this node) until it is deleted, disabled or taken over, or
/// the node stops: renews the lease and starts the batch loops its concurrency asks for.
/// When the mapping stops (found at a renewal or by a batch loop), the loops end after
/// their batch in flight and then the lease is given up ([`Functions::release_mapping`]), so
/// a disabled mapping reads `Disabled` only once nothing of it runs here.
async fn poll_mapping(
    svc: Arc<Service>,
    client: reqwest::Client,
    m: EventSourceMappingRecord,
    mut stop: watch::Receiver<bool>,
) {
    let uuid = m.uuid.clone();
    tracing::info!(mapping = %uuid, queue = %m.event_source_arn, function = %m.function_arn, "polling event source mapping");
    let (tx, rx) = watch::channel(Some(m.clone()));
    let stopped = Arc::new(Notify::new());
    let mut loops: Vec<JoinHandle<()>> = Vec::new();
    let mut want = Functions::mapping_concurrency(&m).min(MAX_LOOPS);
    let mut node_stops = false;
    loop {
        while loops.len() < want {
            loops.push(tokio::spawn(batch_loop(
                svc.clone(),
                client.clone(),
                loops.len(),
                rx.clone(),
                stop.clone(),
                stopped.clone(),
            )));
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(MAPPING_RENEW_MS as u64)) => {}
            _ = stopped.notified() => {
                tracing::info!(mapping = %uuid, "event source mapping disabled, deleted or taken over; polling stops here");
                break;
            }
            _ = stop.changed() => {
                node_stops = true;
                break;
            }
        }
        match svc.functions().renew_mapping(&uuid).await {
            Ok(Some(now)) => {
                want = Functions::mapping_concurrency(&now).min(MAX_LOOPS);
                // Only a change of the settings wakes the loops (the lease moves every time).
                tx.send_if_modified(|cur| {
                    let same = cur.as_ref().is_some_and(|c| {
                        EventSourceMappingRecord {
                            lease_until_ms: now.lease_until_ms,
                            ..c.clone()
                        } == now
                    });
                    if !same {
                        *cur = Some(now);
                    }
                    !same
                });
            }
            Ok(None) => {
                tracing::info!(mapping = %uuid, "event source mapping deleted, disabled or taken over; polling stops here");
                break;
            }
            Err(e) => {
                tracing::warn!(mapping = %uuid, error = %e, "could not renew an event source mapping's lease")
            }
        }
    }
    let _ = tx.send(None);
    for l in loops {
        let _ = l.await;
    }
    // At a node's stop, [`run`] releases every lease once all pollers are done.
    if !node_stops {
        if let Err(e) = svc.functions().release_mapping(&uuid).await {
            tracing::warn!(mapping = %uuid, error = %e, "could not give up an event source mapping's lease; it runs out by itself");
        }
    }
}

/// Runs the mapping workers until `stop` resolves; then the batch loops end after their
/// batch in flight (the function's timeout at most), and this node's leases are released
/// so another node takes its mappings over at once.
pub async fn run(svc: Arc<Service>, stop: impl Future<Output = ()>) {
    tokio::pin!(stop);
    let client = match invoke::client() {
        Ok(c) => c,
        Err(e) => {
            tracing::error!(error = %e, "cannot build the HTTP client; event source mappings disabled");
            return;
        }
    };
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut pollers: HashMap<String, JoinHandle<()>> = HashMap::new();
    loop {
        pollers.retain(|_, h| !h.is_finished());
        match svc.functions().claim_mappings(64).await {
            Ok(claimed) => {
                for m in claimed {
                    if pollers.contains_key(&m.uuid) {
                        continue;
                    }
                    let uuid = m.uuid.clone();
                    let h = tokio::spawn(poll_mapping(
                        svc.clone(),
                        client.clone(),
                        m,
                        stop_rx.clone(),
                    ));
                    pollers.insert(uuid, h);
                }
            }
            Err(e) => tracing::warn!(error = %e, "could not claim event source mappings"),
        }
        tokio::select! {
            _ = tokio::time::sleep(CLAIM_POLL) => {}
            _ = &mut stop => break,
        }
    }
    let _ = stop_tx.send(true);
    let wait = async {
        for (_, h) in pollers {
            let _ = h.await;
        }
    };
    let limit = svc
        .functions()
        .functions()
        .iter()
        .map(|f| f.timeout_seconds)
        .max()
        .unwrap_or(3)
        + 5;
    if tokio::time::timeout(Duration::from_secs(limit), wait)
        .await
        .is_err()
    {
        tracing::warn!("event source mapping batches still in flight at shutdown");
    }
    if let Err(e) = svc.functions().release_mappings().await {
        tracing::warn!(error = %e, "could not release this node's event source mappings");
    }
}
