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

use loft_core::error::{Error, Result};
use loft_core::store::Store;

use super::{CellStore, QUEUE};
use crate::postgres::PendingMove;

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
/// would.
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

impl CellStore {
    /// Moves queue `name` (its store key) to cell number `to`, finishing first any move of
    /// it an earlier run left unfinished (to the cell that run was given). See the
    /// module documentation for the steps and what clients see.
    ///
    /// Errors: `InvalidParameterValue` for a cell number this store does not have;
    /// `QueueDoesNotExist` when no catalog row or queue has that key; `ServiceUnavailable`
    /// when a cell is down (every cell takes part: each outbox is re-aimed) or the queue
    /// is paused by another move; `InternalError` when a database fails. A failed run
    /// leaves the queue whole in one cell; run it again to finish.
    pub async fn move_queue(&self, name: &str, to: u32) -> Result<MoveOutcome> {
        self.move_queue_until(name, to, None)
            .await?
            .ok_or_else(|| Error::internal("cells: a move stopped without a stop step"))
    }

    /// [`CellStore::move_queue`], stopping after step `stop` when given (returning
    /// `None`), as a run killed there would: for tests of the crash-safety argument.
    ///
    /// Errors: as [`CellStore::move_queue`].
    pub async fn move_queue_until(
        &self,
        name: &str,
        to: u32,
        stop: Option<MoveStep>,
    ) -> Result<Option<MoveOutcome>> {
        let dest = self
            .index_of_number(to)
            .ok_or_else(|| Error::invalid(format!("there is no cell {to}")))?;
        let mut resumed = None;
        for (i, cell) in self.cells.iter().enumerate() {
            for pending in cell.pending_moves(Some(name)).await? {
                resumed = self.finish_move(i, &pending, None, true).await?;
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
        if !self.cells[source].move_gate(queue.id, name, to).await? {
            return Err(Error::no_queue());
        }
        tracing::info!(queue = name, from = number, to, "cells: moving a queue");
        if stop == Some(MoveStep::Gate) {
            return Ok(None);
        }
        let pending = PendingMove {
            queue_id: queue.id,
            name: name.to_owned(),
            to_cell: to,
        };
        self.finish_move(source, &pending, stop, false).await
    }

    /// Steps 2 to 5 of the move `pending` out of cell index `source` (its gate row
    /// committed), stopping after `stop` when given; `resumed`: an earlier run began it.
    async fn finish_move(
        &self,
        source: usize,
        pending: &PendingMove,
        stop: Option<MoveStep>,
        resumed: bool,
    ) -> Result<Option<MoveOutcome>> {
        let dest = self.index_of_number(pending.to_cell).ok_or_else(|| {
            Error::internal(format!(
                "cells: a move of {} to cell {} this store does not have",
                pending.name, pending.to_cell
            ))
        })?;
        let old = pending.queue_id;
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
        if stop == Some(MoveStep::Copy) {
            return Ok(None);
        }
        for cell in &self.cells {
            cell.move_outbox(old, new).await?;
        }
        if stop == Some(MoveStep::Outbox) {
            return Ok(None);
        }
        self.cells[0]
            .catalog_move(&pending.name, pending.to_cell)
            .await?;
        self.remember(QUEUE, &pending.name, dest);
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
