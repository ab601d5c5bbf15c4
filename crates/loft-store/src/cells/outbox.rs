//! The outbox: work that crosses cells without a transaction spanning two databases.
//!
//! Besides a publish's copies, the outbox carries messages that leave their queue for a
//! queue of another cell ([`MovedCopy`]): a receive's dead-letter moves (the source
//! cell's statement moves them as on one database, to the other cell's queue id, and the
//! same transaction takes those rows out into the outbox, `ops::outbox_parked_in`) and a
//! message move's or move task step's (written to the outbox by the move's statement).
//! They are relayed like a publish's copies; a FIFO queue's in order.
//!
//! A publish whose copies go to queues of several cells runs in one cell, its *source*
//! (a FIFO topic's cell; for a standard topic the cell of its deliveries, else the cell
//! holding most of its copies): in the source's
//! one transaction it stores the local copies, deliveries and records as on one database,
//! and writes one outbox row per copy bound for another cell (the copy as its queue will
//! store it, already sealed; table `cell_outbox`). Nothing is written to the outbox when
//! every copy is local: that publish is exactly the one-database publish.
//!
//! A **relay** then moves each row, in three steps: it leases the row in the source
//! ([`CellStore::claim_outbox`], `FOR UPDATE SKIP LOCKED`, so two nodes never take one row
//! while its lease runs); it inserts the copy in the destination cell in one transaction
//! that first records the row's id in the destination's `cell_relayed`
//! (`ON CONFLICT DO NOTHING`): a row whose id is already there stores nothing
//! ([`CellStore::relay_rows`]); and it deletes the row in the source
//! ([`CellStore::finish_rows`]). Outbox ids carry their source cell (their sequence is
//! ranged like every other id), so one table serves every source. Whatever step a relay
//! dies in, the row's lease ends and a relay on any node repeats it:
//!
//! - died before the destination's commit: nothing was stored; the repeat stores it once;
//! - died after the destination's commit, before the source's delete: the repeat finds
//!   the id in `cell_relayed`, stores nothing and deletes the row.
//!
//! A FIFO queue's rows are *ordered*: the claims of one cell's outbox run one at a time
//! (an advisory lock), and an ordered row is taken only when no earlier row of its queue
//! is leased (nor, for a publish's own relay, left out of it). Ids follow the topic's
//! SequenceNumber (the topic's row lock orders its publishes), and a relay stores its
//! rows for one queue in id order in one transaction, so the copies reach the queue in
//! SequenceNumber order whichever relay dies.
//!
//! The node that published relays its rows at once, after its commit (unless
//! [`CellStore::relay_at_once`] turned that off), so a copy is normally in its queue when
//! the publish returns; the long polls of its queue wake with the destination's insert
//! (the cell's NOTIFY). When that fails (the destination is down) the row waits for the
//! relay workers ([`Store::relay_outbox`], every node, each second). A destination
//! forgets a relayed id ([`Store::delete_expired`]) only when the id lies below the
//! lowest id still in its source's outbox (so its row is gone and can never be relayed
//! again) and was relayed more than [`RELAYED_KEEP_MS`] ago.

use std::collections::HashMap;
use std::sync::atomic::Ordering;

use loft_core::error::Result;
use loft_core::model::*;
#[allow(unused_imports)] // the documentation's links
use loft_core::store::Store;

use super::{live, CellStore, CELL_ID_BITS};
pub use crate::postgres::{MovedCopy, OutboxRow};

/// How long a relay leases the outbox rows it took (ms): the rows of a relay that died
/// are relayed by another after this.
pub const RELAY_LEASE_MS: i64 = 30_000;

/// The least time (ms) a destination keeps a relayed outbox id, beyond the rule that its
/// source row be gone.
pub const RELAYED_KEEP_MS: i64 = 3_600_000;

/// The wall clock (ms since the epoch), for the leases of the relay a publish runs at
/// once.
fn wall_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// The id range of cell index `index` (0-based).
fn range_of(index: usize) -> std::ops::Range<i64> {
    ((index as i64) << CELL_ID_BITS)..((index as i64 + 1) << CELL_ID_BITS)
}

impl CellStore {
    /// Whether a publish relays its outbox rows itself as soon as it commits (on, the
    /// default) or leaves them to the relay workers ([`Store::relay_outbox`]). Tests turn
    /// it off to run the relay's steps one by one, as a relay that dies between them
    /// would have.
    pub fn relay_at_once(&self, on: bool) {
        self.relay_at_once.store(on, Ordering::Relaxed);
    }

    /// Relay step 1: leases up to `limit` outbox rows of cell index `cell` (0-based)
    /// whose lease ended by `now_ms`, until `lease_until_ms`, lowest id first.
    ///
    /// Errors: `InternalError` when the cell's database fails.
    pub async fn claim_outbox(
        &self,
        cell: usize,
        now_ms: i64,
        lease_until_ms: i64,
        limit: u32,
    ) -> Result<Vec<OutboxRow>> {
        self.cells[cell]
            .claim_outbox(now_ms, lease_until_ms, limit, None)
            .await
    }

    /// Relay step 2: stores `rows` in their destination cells, one transaction per
    /// destination, each row at most once ever (a repeat stores nothing). Returns per row,
    /// in order, what was stored: `None` for a repeat or a copy whose queue is gone.
    ///
    /// Errors: `InternalError` when a destination's database fails (that destination
    /// stored nothing; earlier ones did).
    pub async fn relay_rows(
        &self,
        rows: &[OutboxRow],
        now_ms: i64,
    ) -> Result<Vec<Option<SentMessage>>> {
        let mut out: Vec<Option<SentMessage>> = vec![None; rows.len()];
        for (dest, group) in self.by_destination(rows) {
            let batch: Vec<OutboxRow> = group.iter().map(|i| rows[*i].clone()).collect();
            let sent = self.cells[dest].relay_into(&batch, now_ms).await?;
            for (i, s) in group.into_iter().zip(sent) {
                out[i] = s;
            }
        }
        Ok(out)
    }

    /// Relay step 3: removes `rows` from their source cells' outboxes.
    ///
    /// Errors: `InternalError` when a source's database fails.
    pub async fn finish_rows(&self, rows: &[OutboxRow]) -> Result<()> {
        let mut by_source: HashMap<usize, Vec<i64>> = HashMap::new();
        for r in rows {
            by_source
                .entry(self.index_of_id(r.id))
                .or_default()
                .push(r.id);
        }
        for (source, ids) in by_source {
            self.cells[source].finish_outbox(&ids).await?;
        }
        Ok(())
    }

    /// How many rows the outboxes of all cells hold.
    ///
    /// Errors: `InternalError` when a cell's database fails.
    pub async fn count_outbox(&self) -> Result<u64> {
        let mut n = 0;
        for cell in &self.cells {
            n += cell.count_outbox().await?;
        }
        Ok(n)
    }

    /// The indexes of `rows` grouped by destination cell, each group in order.
    fn by_destination(&self, rows: &[OutboxRow]) -> Vec<(usize, Vec<usize>)> {
        let mut groups: Vec<(usize, Vec<usize>)> = Vec::new();
        for (i, r) in rows.iter().enumerate() {
            let dest = self.index_of_id(r.queue_id);
            match groups.iter_mut().find(|(d, _)| *d == dest) {
                Some((_, g)) => g.push(i),
                None => groups.push((dest, vec![i])),
            }
        }
        groups
    }

    /// Relays rows of cell `source` that this node leased: each destination's rows in its
    /// transaction, then (for each destination that committed) their removal from the
    /// source. A destination that fails keeps its rows leased (another relay repeats them
    /// after the lease). Returns the rows finished and what each stored, by outbox id.
    async fn relay_leased(
        &self,
        source: usize,
        rows: &[OutboxRow],
        now_ms: i64,
    ) -> Result<(u64, HashMap<i64, SentMessage>)> {
        let mut done = 0;
        let mut stored = HashMap::new();
        let mut failed = None;
        for (dest, group) in self.by_destination(rows) {
            let batch: Vec<OutboxRow> = group.iter().map(|i| rows[*i].clone()).collect();
            match self.cells[dest].relay_into(&batch, now_ms).await {
                Ok(sent) => {
                    let ids: Vec<i64> = batch.iter().map(|r| r.id).collect();
                    self.cells[source].finish_outbox(&ids).await?;
                    done += ids.len() as u64;
                    for (r, s) in batch.iter().zip(sent) {
                        if let Some(s) = s {
                            stored.insert(r.id, s);
                        }
                    }
                }
                Err(e) => {
                    tracing::warn!(
                        source = source + 1,
                        destination = dest + 1,
                        error = %e.message,
                        "cells: relaying outbox rows failed; they are relayed again after their lease"
                    );
                    // Rows written toward a queue after its move re-aimed the outbox
                    // (a publish that resolved the queue's old id): aimed at its new id
                    // now, relayed by the next pass.
                    self.reaim_moved(source, dest, &batch).await;
                    failed = Some(e);
                }
            }
        }
        match failed {
            Some(e) if done == 0 => Err(e),
            _ => Ok((done, stored)),
        }
    }

    /// Re-aims cell `source`'s outbox rows bound for queues of `batch` that moved out of
    /// cell `dest` at the queues' new ids (`loft cells move`); a failure is left for the
    /// next relay.
    async fn reaim_moved(&self, source: usize, dest: usize, batch: &[OutboxRow]) {
        let mut queues: Vec<i64> = batch.iter().map(|r| r.queue_id).collect();
        queues.sort_unstable();
        queues.dedup();
        for old in queues {
            if let Ok(Some((_, new))) = self.cells[dest].moved_to(old).await {
                if let Err(e) = self.cells[source].move_outbox(old, new).await {
                    tracing::warn!(error = %e.message, "cells: re-aiming outbox rows failed");
                }
            }
        }
    }

    /// A publish whose copies go to several cells: the local part and the outbox rows in
    /// cell `source`'s one transaction, then (unless turned off) the relay of those rows.
    /// The outcome of a copy still in the outbox is not known yet: it is reported stored
    /// (`duplicate: false`) with sequence number 0.
    pub(super) async fn publish_across(
        &self,
        source: usize,
        messages: Vec<(i64, NewMessage)>,
        deliveries: Vec<NewDelivery>,
        records: Vec<RecordedMessage>,
    ) -> Result<Vec<SentMessage>> {
        let mut local = Vec::new();
        let mut remote = Vec::new();
        // Per message: whether it went to the outbox, and its index in its part.
        let mut place = Vec::with_capacity(messages.len());
        for (q, m) in messages {
            if self.index_of_id(q) == source {
                place.push((false, local.len()));
                local.push((q, m));
            } else {
                place.push((true, remote.len()));
                remote.push((q, m));
            }
        }
        let ids_of_copies: Vec<Option<String>> =
            remote.iter().map(|(_, m)| m.message_id.clone()).collect();
        let now = wall_ms();
        let (sent, ids) = self.cells[source]
            .publish_with_outbox(local, deliveries, records, remote, now)
            .await?;
        let mut relayed = HashMap::new();
        if self.relay_at_once.load(Ordering::Relaxed) {
            match self.relay_ids(source, &ids, now).await {
                Ok(r) => relayed = r,
                Err(e) => tracing::warn!(
                    error = %e.message,
                    "cells: a publish's outbox rows wait for the relay workers"
                ),
            }
        }
        Ok(place
            .into_iter()
            .map(|(outboxed, i)| {
                if !outboxed {
                    return sent[i].clone();
                }
                relayed.remove(&ids[i]).unwrap_or(SentMessage {
                    seq: 0,
                    message_id: ids_of_copies[i].clone(),
                    duplicate: false,
                    sequence: None,
                })
            })
            .collect())
    }

    /// A replay step whose subscriber's queue is in another cell than its subscription
    /// (the topic's): the step commits in the subscription's cell with those copies in
    /// its outbox, relayed at once (unless turned off) in their order, as a publish's.
    pub(super) async fn advance_replay_across(
        &self,
        source: usize,
        mut step: ReplayStep,
    ) -> Result<Option<ReplayRecord>> {
        let (local, remote): (Vec<_>, Vec<_>) = std::mem::take(&mut step.messages)
            .into_iter()
            .partition(|(q, _)| self.index_of_id(*q) == source);
        step.messages = local;
        let now = wall_ms();
        let Some((replay, ids)) = self.cells[source]
            .advance_replay_with_outbox(step, remote, now)
            .await?
        else {
            return Ok(None);
        };
        if self.relay_at_once.load(Ordering::Relaxed) {
            if let Err(e) = self.relay_ids(source, &ids, now).await {
                tracing::warn!(
                    error = %e.message,
                    "cells: a replay step's outbox rows wait for the relay workers"
                );
            }
        }
        Ok(Some(replay))
    }

    /// A FIFO topic's publish, in the topic's cell; the copies it wrote to the outbox are
    /// then relayed at once (unless turned off), in their order. Their outcomes stay as
    /// the cell reported them (stored, sequence number 0).
    pub(super) async fn publish_fifo_across(
        &self,
        publish: FifoPublish,
    ) -> Result<Option<Vec<FifoPublished>>> {
        let source = self.index_of_id(publish.topic_id);
        let Some((out, ids)) = self.cells[source].publish_fifo_with_outbox(publish).await? else {
            return Ok(None);
        };
        if !ids.is_empty() && self.relay_at_once.load(Ordering::Relaxed) {
            if let Err(e) = self.relay_ids(source, &ids, wall_ms()).await {
                tracing::warn!(
                    error = %e.message,
                    "cells: a FIFO publish's outbox rows wait for the relay workers"
                );
            }
        }
        Ok(Some(out))
    }

    /// Leases outbox rows `ids` of cell `source` (those still free) and relays them.
    async fn relay_ids(
        &self,
        source: usize,
        ids: &[i64],
        now_ms: i64,
    ) -> Result<HashMap<i64, SentMessage>> {
        if ids.is_empty() {
            return Ok(HashMap::new());
        }
        let rows = self.cells[source]
            .claim_outbox(now_ms, now_ms + RELAY_LEASE_MS, ids.len() as u32, Some(ids))
            .await?;
        Ok(self.relay_leased(source, &rows, now_ms).await?.1)
    }

    /// After work that wrote outbox rows in cell `source` without knowing their ids (a
    /// dead-letter move, a message move): relays up to `limit` of the cell's due rows at
    /// once, unless [`CellStore::relay_at_once`] turned that off. A failure is logged; the
    /// rows wait for the relay workers.
    pub(super) async fn relay_from(&self, source: usize, limit: u64) {
        if !self.relay_at_once.load(Ordering::Relaxed) {
            return;
        }
        let now = wall_ms();
        let limit = limit.min(u32::MAX as u64) as u32;
        let relayed = match self.cells[source]
            .claim_outbox(now, now + RELAY_LEASE_MS, limit, None)
            .await
        {
            Ok(rows) if rows.is_empty() => Ok(()),
            Ok(rows) => self.relay_leased(source, &rows, now).await.map(drop),
            Err(e) => Err(e),
        };
        if let Err(e) = relayed {
            tracing::warn!(
                error = %e.message,
                "cells: moved messages wait in the outbox for the relay workers"
            );
        }
    }

    /// [`Store::relay_outbox`]: the cells' outboxes in turn, from a rotating cell.
    pub(super) async fn relay_due(
        &self,
        now_ms: i64,
        lease_until_ms: i64,
        limit: u32,
    ) -> Result<u64> {
        let n = self.cells.len();
        let start = self.next_claim.fetch_add(1, Ordering::Relaxed) % n;
        let mut done = 0u64;
        let mut failed = None;
        for k in 0..n {
            let left = limit.saturating_sub(done as u32);
            if left == 0 {
                break;
            }
            let source = (start + k) % n;
            let claimed = live(
                self.cells[source]
                    .claim_outbox(now_ms, lease_until_ms, left, None)
                    .await,
            );
            let outcome = match claimed {
                // A down cell's outbox waits for it to answer again: passed over, as the
                // other workers' claims pass it over (not an error each second).
                Ok(None) => Ok((0, HashMap::new())),
                Ok(Some(rows)) if rows.is_empty() => Ok((0, HashMap::new())),
                Ok(Some(rows)) => self.relay_leased(source, &rows, now_ms).await,
                Err(e) => Err(e),
            };
            match outcome {
                Ok((d, _)) => done += d,
                Err(e) => failed = Some(e),
            }
        }
        match failed {
            Some(e) if done == 0 => Err(e),
            _ => Ok(done),
        }
    }

    /// Forgets, in every cell, the relayed ids no repeat can come for (see the module
    /// documentation). A cell that cannot be read is left for the next sweep. Returns how
    /// many ids were forgotten.
    pub(super) async fn sweep_relayed(&self, now_ms: i64) -> u64 {
        let mut n = 0;
        for (s, source) in self.cells.iter().enumerate() {
            let range = range_of(s);
            let below = match source.outbox_floor().await {
                Ok(floor) => floor.unwrap_or(range.end),
                Err(_) => continue,
            };
            for dest in &self.cells {
                match dest
                    .sweep_relayed(&range, below, now_ms - RELAYED_KEEP_MS)
                    .await
                {
                    Ok(k) => n += k,
                    Err(e) => {
                        tracing::warn!(error = %e.message, "cells: sweeping relayed ids failed")
                    }
                }
            }
        }
        n
    }
}
