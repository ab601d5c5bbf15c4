//! Moving a queue from one cell to another (`loft cells move QUEUE --to N`).
//!
//! # The steps
//!
//! 1. **Gate** (source cell, one transaction): waits for the transactions writing the
//!    queue tables to end and records the queue as moving (`loft_cell_moved`); from then
//!    on every write to the queue's rows in the source is refused with
//!    `ServiceUnavailable` (the pause), reads still answer.
//! 2. **Copy**: the source's rows, read in one snapshot, are stored in the destination in
//!    one transaction (a new queue id of that cell; see [`PgStore::move_write`]). The
//!    destination holding a queue of that store key is the record that this step is
//!    done.
//! 3. **Outbox**: every cell's outbox rows bound for the old id are re-aimed at the new
//!    one.
//! 4. **Flip**: the catalog (cell 1) names the destination, and notifies every node.
//! 5. **Clear** (source cell, one transaction): the queue's rows go, its gate row says
//!    moved (and keeps refusing writes that name the old id).
//!
//! # Why nothing is lost or doubled
//!
//! After step 1 the source copy cannot change, so step 2 copies exactly what was
//! acknowledged; it commits whole or not at all. Each step is idempotent and a later run
//! finds where an earlier one stopped: a gate row in state `moving` is an unfinished move
//! (any run for that queue finishes it first, whatever `--to` it was given); step 2 is
//! skipped when the destination has the queue; steps 3-5 are plain re-applies. A crash
//! before step 1 commits leaves the queue as it was; after it, the queue is served from
//! the source (reads) and refused (writes) until a rerun, and is in the destination whole
//! once step 2 commits. No step deletes anything the destination does not hold.
//!
//! # What clients see
//!
//! Between steps 1 and 4, writes to the queue (send, receive, delete, change visibility,
//! attributes, tags, purge, move tasks) answer 503 `ServiceUnavailable`; SDKs retry.
//! After the move the queue has a new id: receipt handles issued before it name the old
//! one and are answered `ReceiptHandleIsInvalid`, as for a message no longer there; an
//! in-flight message stays in flight until its visibility timeout ends and is then
//! received again from the new cell (as any message whose delete did not happen). A
//! retried ReceiveMessage with a ReceiveRequestAttemptId gets its messages with handles
//! of the new id. Subscriptions, event source mappings, redrive policies and move tasks
//! name queues by ARN, so they follow the catalog; move tasks move with their source
//! queue and are taken up again by any node.
//!
//! # A run that dies
//!
//! The gate row names the run that holds the move (its owner) and a lease
//! ([`MOVE_LEASE_MS`]) that the run renews after every step, recording the step done.
//! Every `loft serve` node sweeps the cells ([`CellStore::finish_abandoned_moves`], run
//! by `loft serve` every few seconds through [`Store::finish_cell_moves`]): a move whose
//! lease ended (its run was killed, its machine died) is taken over and finished, so a
//! queue stays paused at most a lease and a sweep longer than the move itself. Takeovers
//! are disjoint: the gate row is claimed under its row lock (`FOR UPDATE SKIP LOCKED`),
//! so two nodes sweeping at once never finish one move twice, and were two runs ever to
//! work on one move (a run slower than its lease; an operator's rerun, which takes the
//! move whatever its lease), every step is idempotent and the copy is one transaction
//! that a second copy finds done (the destination's unique store key), so nothing is
//! lost or doubled either way; the slower run stops at its next renewal. A move is never
//! rolled back: finishing needs the cells that a rollback would need too (the
//! destination to remove a copy that may have committed, every cell to re-aim outbox
//! rows back), so a move that cannot go on (a cell down) waits, refusing writes with
//! 503, until the cell is back and a sweep finishes it.

use std::sync::atomic::{AtomicU64, Ordering};

use loft_core::error::{Error, ErrorCode, Result};
use loft_core::store::Store;

use super::{CellStore, QUEUE};
use crate::postgres::PendingMove;

/// How long a move's run holds it (ms) after its last step: a move whose run has not
/// renewed it for this long is taken over by any node's sweep.
pub const MOVE_LEASE_MS: i64 = 30_000;

/// Most moves one sweep takes over per cell.
const SWEEP_BATCH: u32 = 8;

/// What [`CellStore::move_queue`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MoveOutcome {
    /// The queue's store key.
    pub name: String,
    /// The cell it was in (1-based).
    pub from: u32,
    /// The cell it is in now.
    pub to: u32,
    /// Its id before the move (equal to `new_id` when it was there already).
    pub old_id: i64,
    /// Its id now.
    pub new_id: i64,
    /// How many messages this run copied (0 when an earlier run had copied them).
    pub messages: u64,
    /// Whether this run finished a move an earlier run left unfinished.
    pub resumed: bool,
}

/// Where [`CellStore::move_queue_until`] stops: after this step, as a run killed there
/// would. Also the last step a move in progress has done ([`MoveStatus::step`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum MoveStep {
    /// The source refuses writes.
    Gate,
    /// The destination holds the copy.
    Copy,
    /// The outboxes name the new id.
    Outbox,
    /// The catalog names the destination.
    Flip,
}

impl MoveStep {
    /// The step as the gate row records it (1 to 4).
    fn number(self) -> i16 {
        match self {
            MoveStep::Gate => 1,
            MoveStep::Copy => 2,
            MoveStep::Outbox => 3,
            MoveStep::Flip => 4,
        }
    }

    /// The step a gate row records (a number out of range as the gate).
    fn from_number(n: i16) -> MoveStep {
        match n {
            2 => MoveStep::Copy,
            3 => MoveStep::Outbox,
            4 => MoveStep::Flip,
            _ => MoveStep::Gate,
        }
    }

    /// Its name as `loft cells status` prints it: `gate`, `copy`, `outbox`, `flip`.
    pub fn name(self) -> &'static str {
        match self {
            MoveStep::Gate => "gate",
            MoveStep::Copy => "copy",
            MoveStep::Outbox => "outbox",
            MoveStep::Flip => "flip",
        }
    }
}

/// A move in progress, as [`CellStore::moves_in_progress`] reports it for
/// `loft cells status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MoveStatus {
    /// The queue's store key.
    pub name: String,
    /// The cell it is moving out of (1-based).
    pub from: u32,
    /// The cell it is moving to.
    pub to: u32,
    /// The last step done.
    pub step: MoveStep,
    /// The run holding it: `loft cells move`'s `cli:PID@HOST#N`, or a node's id when a
    /// node's sweep took it over; `None` for a move begun before moves had owners.
    pub owner: Option<String>,
    /// Until when (ms since the epoch) the owner holds it; after that any node takes it
    /// over.
    pub lease_until_ms: i64,
    /// When it began (ms since the epoch; 0 when not recorded).
    pub started_at_ms: i64,
}

/// The run working on a move: its owner name and the earliest clock it may use for
/// leases (a sweep's `now_ms`).
struct Run<'a> {
    owner: &'a str,
    at_least_ms: i64,
}

impl Run<'_> {
    /// The lease a step renews: [`MOVE_LEASE_MS`] from now (the wall clock, or the
    /// sweep's time when later).
    fn lease_until(&self) -> i64 {
        wall_ms().max(self.at_least_ms) + MOVE_LEASE_MS
    }
}

/// Milliseconds since the Unix epoch by this machine's clock.
fn wall_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// The owner name of a `loft cells move` run in this process: `cli:PID@HOST#N`, unique
/// per run so that one process's runs tell each other apart.
fn cli_owner() -> String {
    static RUNS: AtomicU64 = AtomicU64::new(1);
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_owned());
    format!(
        "cli:{}@{host}#{}",
        std::process::id(),
        RUNS.fetch_add(1, Ordering::Relaxed)
    )
}

/// The error of a run whose move another run took over.
fn taken_over(name: &str) -> Error {
    Error::new(
        ErrorCode::ServiceUnavailable,
        format!("another run took over the move of {name}; it finishes it"),
    )
}

impl CellStore {
    /// Moves queue `name` (its store key) to cell number `to`, finishing first any move of
    /// it an earlier run left unfinished (to the cell that run was given, taking it over
    /// whatever its lease). See the module documentation for the steps and what clients
    /// see.
    ///
    /// Errors: `InvalidParameterValue` for a cell number this store does not have;
    /// `QueueDoesNotExist` when no catalog row or queue has that key; `ServiceUnavailable`
    /// when a cell is down (every cell takes part: each outbox is re-aimed), the queue
    /// is paused by another move, or another run took this one over (it finishes it);
    /// `InternalError` when a database fails. A failed run leaves the queue whole in one
    /// cell; run it again to finish, or let a node's sweep finish it after
    /// [`MOVE_LEASE_MS`].
    pub async fn move_queue(&self, name: &str, to: u32) -> Result<MoveOutcome> {
        self.move_queue_until(name, to, None)
            .await?
            .ok_or_else(|| Error::internal("cells: a move stopped without a stop step"))
    }

    /// [`CellStore::move_queue`], stopping after step `stop` when given (returning
    /// `None`), as a run killed there would: its lease is left to run out, as a killed
    /// run's is. For tests of the crash-safety argument.
    ///
    /// Errors: as [`CellStore::move_queue`].
    pub async fn move_queue_until(
        &self,
        name: &str,
        to: u32,
        stop: Option<MoveStep>,
    ) -> Result<Option<MoveOutcome>> {
        let owner = cli_owner();
        let run = Run {
            owner: &owner,
            at_least_ms: 0,
        };
        let dest = self
            .index_of_number(to)
            .ok_or_else(|| Error::invalid(format!("there is no cell {to}")))?;
        let mut resumed = None;
        for (i, cell) in self.cells.iter().enumerate() {
            for pending in cell.pending_moves(Some(name)).await? {
                if let Some(taken) = cell
                    .take_move(pending.queue_id, &owner, run.lease_until())
                    .await?
                {
                    resumed = self.finish_move(i, &taken, None, true, &run).await?;
                }
            }
        }
        let number = self.cells[0]
            .catalog_get(QUEUE, name)
            .await?
            .ok_or_else(Error::no_queue)?;
        let source = self.index_of_number(number).ok_or_else(|| {
            Error::internal(format!("cells: the catalog places {name} in cell {number}"))
        })?;
        if source == dest {
            let queue = self.cells[dest]
                .get_queue(name)
                .await?
                .ok_or_else(Error::no_queue)?;
            self.remember(QUEUE, name, dest);
            return Ok(Some(resumed.unwrap_or(MoveOutcome {
                name: name.to_owned(),
                from: to,
                to,
                old_id: queue.id,
                new_id: queue.id,
                messages: 0,
                resumed: false,
            })));
        }
        let queue = self.cells[source]
            .get_queue(name)
            .await?
            .ok_or_else(Error::no_queue)?;
        if !self.cells[source]
            .move_gate(queue.id, name, to, &owner, wall_ms(), run.lease_until())
            .await?
        {
            return Err(Error::no_queue());
        }
        tracing::info!(
            queue = name,
            from = number,
            to,
            owner,
            "cells: moving a queue"
        );
        if stop == Some(MoveStep::Gate) {
            return Ok(None);
        }
        let pending = PendingMove {
            queue_id: queue.id,
            name: name.to_owned(),
            to_cell: to,
            owner: Some(owner.clone()),
            lease_until_ms: 0,
            step: MoveStep::Gate.number(),
            started_at_ms: 0,
        };
        self.finish_move(source, &pending, stop, false, &run).await
    }

    /// Takes over and finishes the moves whose run stopped renewing them (lease ended by
    /// `now_ms`, ms since the epoch), for `owner` (this node's id): at most a few per cell
    /// per call, each held for [`MOVE_LEASE_MS`] after each step. Two nodes sweeping at
    /// once take disjoint moves. Returns how many moves it finished. A cell that is down
    /// is passed over (its moves wait for a later sweep).
    ///
    /// Errors: the first failure (a database failing, a move that cannot reach a cell it
    /// needs or whose destination this store does not have) when no move was finished; a
    /// move that failed is taken up again once its new lease ends.
    pub async fn finish_abandoned_moves(&self, owner: &str, now_ms: i64) -> Result<u64> {
        let run = Run {
            owner,
            at_least_ms: now_ms,
        };
        let mut done = 0;
        let mut first = None;
        for (i, cell) in self.cells.iter().enumerate() {
            let claimed = match super::live(
                cell.claim_moves(owner, now_ms, run.lease_until(), SWEEP_BATCH)
                    .await,
            ) {
                Ok(Some(claimed)) => claimed,
                // A cell that is down is passed over: its moves wait for a later sweep.
                Ok(None) => continue,
                Err(e) => {
                    first.get_or_insert(e);
                    continue;
                }
            };
            for pending in claimed {
                tracing::warn!(
                    queue = pending.name,
                    from = i + 1,
                    to = pending.to_cell,
                    step = MoveStep::from_number(pending.step).name(),
                    owner,
                    "cells: taking over a move whose run stopped"
                );
                match self.finish_move(i, &pending, None, true, &run).await {
                    Ok(_) => done += 1,
                    Err(e) => {
                        tracing::warn!(
                            queue = pending.name,
                            error = %e,
                            "cells: finishing a move failed; a later sweep retries it"
                        );
                        first.get_or_insert(e);
                    }
                }
            }
        }
        match first {
            Some(e) if done == 0 => Err(e),
            _ => Ok(done),
        }
    }

    /// The moves in progress in every cell (gate rows not yet cleared), by source cell
    /// then queue id, for `loft cells status`.
    ///
    /// Errors: `InternalError` when a cell's database fails; `ServiceUnavailable` when a
    /// cell is down.
    pub async fn moves_in_progress(&self) -> Result<Vec<MoveStatus>> {
        let mut out = Vec::new();
        for (i, cell) in self.cells.iter().enumerate() {
            for p in cell.pending_moves(None).await? {
                out.push(MoveStatus {
                    name: p.name,
                    from: i as u32 + 1,
                    to: p.to_cell,
                    step: MoveStep::from_number(p.step),
                    owner: p.owner,
                    lease_until_ms: p.lease_until_ms,
                    started_at_ms: p.started_at_ms,
                });
            }
        }
        Ok(out)
    }

    /// Records step `step` of `run`'s move of `pending` out of cell index `source` done
    /// and renews its lease. Errors: `ServiceUnavailable` when another run took the
    /// move over (this run stops); as [`CellStore::move_queue`] otherwise.
    async fn renew(
        &self,
        source: usize,
        pending: &PendingMove,
        run: &Run<'_>,
        step: MoveStep,
    ) -> Result<()> {
        let ours = self.cells[source]
            .renew_move(
                pending.queue_id,
                run.owner,
                step.number(),
                run.lease_until(),
            )
            .await?;
        if ours {
            Ok(())
        } else {
            Err(taken_over(&pending.name))
        }
    }

    /// Steps 2 to 5 of the move `pending` out of cell index `source` (its gate row
    /// committed, held by `run`), stopping after `stop` when given; `resumed`: an earlier
    /// run began it. Before each step the run renews its lease, and stops when another
    /// run took the move over.
    async fn finish_move(
        &self,
        source: usize,
        pending: &PendingMove,
        stop: Option<MoveStep>,
        resumed: bool,
        run: &Run<'_>,
    ) -> Result<Option<MoveOutcome>> {
        let dest = self.index_of_number(pending.to_cell).ok_or_else(|| {
            Error::internal(format!(
                "cells: a move of {} to cell {} this store does not have",
                pending.name, pending.to_cell
            ))
        })?;
        let old = pending.queue_id;
        self.renew(source, pending, run, MoveStep::Gate).await?;
        let image = self.cells[source].move_read(old).await?.ok_or_else(|| {
            Error::internal(format!(
                "cells: queue {} is moving but cell {} no longer has it",
                pending.name,
                source + 1
            ))
        })?;
        let key = self.cells[0].receipt_key();
        let (new, wrote) = self.cells[dest].move_write(&image, &key).await?;
        let messages = if wrote { image.message_count } else { 0 };
        self.renew(source, pending, run, MoveStep::Copy).await?;
        if stop == Some(MoveStep::Copy) {
            return Ok(None);
        }
        for cell in &self.cells {
            cell.move_outbox(old, new).await?;
        }
        self.renew(source, pending, run, MoveStep::Outbox).await?;
        if stop == Some(MoveStep::Outbox) {
            return Ok(None);
        }
        self.cells[0]
            .catalog_move(&pending.name, pending.to_cell)
            .await?;
        self.remember(QUEUE, &pending.name, dest);
        self.renew(source, pending, run, MoveStep::Flip).await?;
        if stop == Some(MoveStep::Flip) {
            return Ok(None);
        }
        self.cells[source]
            .move_clear(old, &pending.name, new)
            .await?;
        tracing::info!(
            queue = pending.name,
            from = source + 1,
            to = pending.to_cell,
            messages,
            owner = run.owner,
            "cells: moved a queue"
        );
        Ok(Some(MoveOutcome {
            name: pending.name.clone(),
            from: source as u32 + 1,
            to: pending.to_cell,
            old_id: old,
            new_id: new,
            messages,
            resumed,
        }))
    }
}
