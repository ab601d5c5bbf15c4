//! The background work `loft serve` runs beside its listeners, each started by a named
//! function:
//!
//! - [`retention_sweeper`]: deletes messages past their queue's `MessageRetentionPeriod`.
//! - [`move_task_resumer`]: runs the message-move tasks no node holds.
//! - [`replay_advancer`]: advances SNS message replays (`ReplayPolicy`).
//! - [`console_sampler`]: samples queues and topics for the web console's charts.
//! - [`outbox_relayer`]: relays the work that crosses storage cells (SNS copies bound for
//!   a queue of another cell) that no publish relayed itself.
//! - [`cell_move_finisher`]: finishes the moves of queues between cells (`loft cells
//!   move`) whose run was killed or died.
//! - [`Deliveries`]: the SNS delivery workers and the SQS event source mapping workers,
//!   which live in loft-server (`loft_server::delivery`, `loft_server::mappings`); this
//!   only starts and stops them.
//!
//! Every periodic worker keeps its state in the store (or, for the console's samples, in a
//! per-node view that may be lost), so aborting one at shutdown loses nothing.

use std::sync::Arc;
use std::time::Duration;

use loft_core::Service;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

/// How often [`retention_sweeper`] looks for expired messages.
const RETENTION_SWEEP: Duration = Duration::from_secs(60);

/// Every minute, deletes the messages past their queue's retention period.
pub fn retention_sweeper(service: Arc<Service>) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(RETENTION_SWEEP);
        loop {
            tick.tick().await;
            if let Err(e) = service.expire_messages().await {
                tracing::warn!(error = %e, "retention sweep failed");
            }
        }
    })
}

/// Every [`loft_core::service::MOVE_TASK_POLL`], takes and runs the message-move tasks no
/// node holds (after a restart, or a node's death).
pub fn move_task_resumer(service: Arc<Service>) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(loft_core::service::MOVE_TASK_POLL);
        loop {
            tick.tick().await;
            if let Err(e) = service.sqs().resume_move_tasks().await {
                tracing::warn!(error = %e, "looking for message-move tasks to resume failed");
            }
        }
    })
}

/// Every [`loft_core::service::REPLAY_POLL`], advances the SNS message replays this node
/// holds, and those no node holds (a new replay, or its node stopped or died).
pub fn replay_advancer(service: Arc<Service>) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(loft_core::service::REPLAY_POLL);
        loop {
            tick.tick().await;
            if let Err(e) = service.sns().delivery().advance_replays().await {
                tracing::warn!(error = %e, "advancing message replays failed");
            }
        }
    })
}

/// Every [`loft_core::service::OUTBOX_POLL`], relays the outbox rows whose lease ended
/// (a publish's own relay failed, or its node died): on a store of one database there are
/// none, and each call costs nothing.
pub fn outbox_relayer(service: Arc<Service>) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(loft_core::service::OUTBOX_POLL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            if let Err(e) = service.relay_outbox().await {
                tracing::warn!(error = %e, "relaying work across cells failed");
            }
        }
    })
}

/// Every [`loft_core::service::CELL_MOVE_POLL`], takes over and finishes the moves of
/// queues between cells whose run stopped renewing its lease (`loft cells move` killed,
/// or its machine gone), so no queue stays paused: on a store of one database there are
/// none, and each call costs nothing.
pub fn cell_move_finisher(service: Arc<Service>) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(loft_core::service::CELL_MOVE_POLL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            match service.finish_cell_moves().await {
                Ok(0) => {}
                Ok(n) => tracing::info!(moves = n, "finished moves of queues between cells"),
                Err(e) => tracing::warn!(error = %e, "finishing moves between cells failed"),
            }
        }
    })
}

/// Every `every` (`--console-sample-interval`), samples every queue's and topic's counts
/// and rates for the console's charts (`loft_core::service::history`: a view, per node,
/// in memory). A late tick is not made up for.
pub fn console_sampler(service: Arc<Service>, every: Duration) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            if let Err(e) = service.sample_history().await {
                tracing::warn!(error = %e, "sampling queues and topics for the console failed");
            }
        }
    })
}

/// The periodic workers above, aborted together at shutdown.
pub struct Periodic(Vec<JoinHandle<()>>);

impl Periodic {
    /// Starts [`retention_sweeper`], [`move_task_resumer`], [`replay_advancer`],
    /// [`outbox_relayer`], [`cell_move_finisher`] and [`console_sampler`] (every
    /// `sample_every`).
    pub fn start(service: &Arc<Service>, sample_every: Duration) -> Periodic {
        Periodic(vec![
            retention_sweeper(service.clone()),
            console_sampler(service.clone(), sample_every),
            move_task_resumer(service.clone()),
            replay_advancer(service.clone()),
            outbox_relayer(service.clone()),
            cell_move_finisher(service.clone()),
        ])
    }

    /// Aborts them: each keeps its progress in the store, so nothing is lost.
    pub fn abort(self) {
        for h in self.0 {
            h.abort();
        }
    }
}

/// The delivery workers (SNS → HTTP/S and Lambda, retries: `loft_server::delivery`) and
/// the SQS event source mapping workers (`loft_server::mappings`) of this node.
pub struct Deliveries {
    stop_delivery: Arc<Notify>,
    stop_mappings: Arc<Notify>,
    delivery: JoinHandle<()>,
    mappings: JoinHandle<()>,
}

impl Deliveries {
    /// Starts both.
    pub fn start(service: &Arc<Service>) -> Deliveries {
        let stop_delivery = Arc::new(Notify::new());
        let delivery = {
            let stop = stop_delivery.clone();
            tokio::spawn(loft_server::delivery::run(service.clone(), async move {
                stop.notified().await
            }))
        };
        let stop_mappings = Arc::new(Notify::new());
        let mappings = {
            let stop = stop_mappings.clone();
            tokio::spawn(loft_server::mappings::run(service.clone(), async move {
                stop.notified().await
            }))
        };
        Deliveries {
            stop_delivery,
            stop_mappings,
            delivery,
            mappings,
        }
    }

    /// Stops the mappings' polling: called with the listeners' shutdown (long polls end
    /// then), so the batches in flight finish while in-flight requests drain.
    pub fn stop_polling(&self) -> impl FnOnce() + Send + 'static {
        let stop = self.stop_mappings.clone();
        move || stop.notify_one()
    }

    /// Stops both and waits for them: attempts and batches in flight finish and are
    /// recorded (call it before the store closes); the mappings this node polled are
    /// released for the next node.
    pub async fn finish(self) {
        self.stop_delivery.notify_one();
        self.stop_mappings.notify_one();
        let _ = self.delivery.await;
        let _ = self.mappings.await;
    }
}
