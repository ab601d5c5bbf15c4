//! What a [`PgStore`] does for the outbox of a [`crate::cells::CellStore`] (work that
//! crosses cells): as a source cell, a publish that also writes outbox rows, and the
//! relay's claim and removal of them; as a destination cell, the idempotent insert of
//! relayed copies. A store opened alone never calls these: its outbox stays empty.

use super::*;

pub use ops::{MovedCopy, OutboxRow};

impl PgStore {
    /// [`Store::publish`] that also writes, in the same transaction, one outbox row per
    /// copy of `remote` (destination queue of another cell, copy), sealed as the
    /// destination will store it. Returns the local messages' outcomes and the outbox
    /// ids, in order.
    ///
    /// Errors: as [`Store::publish`].
    pub(crate) async fn publish_with_outbox(
        &self,
        messages: Vec<(i64, NewMessage)>,
        deliveries: Vec<NewDelivery>,
        records: Vec<RecordedMessage>,
        remote: Vec<(i64, NewMessage)>,
        now_ms: i64,
    ) -> Result<(Vec<SentMessage>, Vec<i64>)> {
        let channel = self.channel.as_str();
        let remote = self.sealer.sealed(remote)?;
        let remote = &remote;
        self.write_sealed(
            (messages, deliveries, records),
            |(messages, deliveries, records)| async move {
                run_tx!(self, |tx| async {
                    let sent =
                        ops::publish_in(&tx, &messages, &deliveries, &records, channel).await?;
                    let ids = ops::write_outbox_in(&tx, remote, now_ms).await?;
                    Ok::<_, Failure>((sent, ids))
                })
            },
        )
        .await
    }

    /// [`Store::advance_replay`] that also writes, in the same transaction, one outbox
    /// row per copy of `remote` (a queue of another cell, copy), sealed as the
    /// destination will store it; none when the step is stale (the replay is no longer
    /// this step's: `None`). Returns the replay and the outbox ids, in order.
    ///
    /// Errors: as [`Store::advance_replay`].
    pub(crate) async fn advance_replay_with_outbox(
        &self,
        step: ReplayStep,
        remote: Vec<(i64, NewMessage)>,
        now_ms: i64,
    ) -> Result<Option<(ReplayRecord, Vec<i64>)>> {
        let channel = self.channel.as_str();
        let remote = self.sealer.sealed(remote)?;
        let remote = &remote;
        self.write_sealed(step, |step| async move {
            run_tx!(self, |tx| async {
                let Some(replay) = ops::advance_replay_in(&tx, &step, channel).await? else {
                    return Ok::<_, Failure>(None);
                };
                let ids = ops::write_outbox_in(&tx, remote, now_ms).await?;
                Ok(Some((replay, ids)))
            })
        })
        .await
    }

    /// [`Store::publish_fifo`], with the copies for queues of other cells written to the
    /// outbox when this store is a cell (see [`ops::publish_fifo_in`]); returns the
    /// outbox ids too (none for a store opened alone).
    ///
    /// Errors: as [`Store::publish_fifo`].
    pub(crate) async fn publish_fifo_with_outbox(
        &self,
        publish: FifoPublish,
    ) -> Result<Option<(Vec<FifoPublished>, Vec<i64>)>> {
        let channel = self.channel.as_str();
        let cell = self.cell_ids.get();
        self.write_sealed(publish, |publish| async move {
            run_tx!(self, |tx| ops::publish_fifo_in(
                &tx, &publish, channel, cell
            ))
        })
        .await
    }

    /// Leases up to `limit` of this cell's outbox rows whose lease ended by `now_ms`
    /// (with `only`, only those ids) until `lease_until_ms`, lowest id first. Rows whose
    /// copy cannot be read are removed (logged) and not returned.
    ///
    /// Errors: `InternalError` when the database fails.
    pub(crate) async fn claim_outbox(
        &self,
        now_ms: i64,
        lease_until_ms: i64,
        limit: u32,
        only: Option<&[i64]>,
    ) -> Result<Vec<OutboxRow>> {
        let claimed = run_tx!(self, |tx| ops::claim_outbox(
            &tx,
            now_ms,
            lease_until_ms,
            limit,
            only
        ))?;
        let mut out = Vec::with_capacity(claimed.len());
        let mut broken = Vec::new();
        for (id, queue_id, copy) in claimed {
            match copy {
                Some((message, moved)) => out.push(OutboxRow {
                    id,
                    queue_id,
                    message,
                    moved,
                }),
                None => broken.push(id),
            }
        }
        if !broken.is_empty() {
            tracing::error!(ids = ?broken, "cells: outbox rows whose copy cannot be read are dropped");
            self.finish_outbox(&broken).await?;
        }
        Ok(out)
    }

    /// Inserts relayed `rows` into their queues of this cell in one transaction, each at
    /// most once ever (see [`ops::relay_in`]); returns per row what was stored, `None`
    /// for a repeat or a copy whose queue is gone.
    ///
    /// Errors: `InternalError` when the database fails (nothing is stored then).
    pub(crate) async fn relay_into(
        &self,
        rows: &[OutboxRow],
        now_ms: i64,
    ) -> Result<Vec<Option<SentMessage>>> {
        if rows.is_empty() {
            return Ok(Vec::new());
        }
        let channel = self.channel.as_str();
        run_tx!(self, |tx| ops::relay_in(&tx, rows, now_ms, channel))
    }

    /// Removes this cell's outbox rows `ids`.
    ///
    /// Errors: `InternalError` when the database fails.
    pub(crate) async fn finish_outbox(&self, ids: &[i64]) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        run!(self, |c| ops::finish_outbox(&c, ids)).map(drop)
    }

    /// The lowest id in this cell's outbox, if it holds a row.
    ///
    /// Errors: `InternalError` when the database fails.
    pub(crate) async fn outbox_floor(&self) -> Result<Option<i64>> {
        run!(self, |c| ops::outbox_floor(&c))
    }

    /// Forgets the ids relayed into this cell from the cell of id range `source` that are
    /// below `below` and were relayed before `before_ms`. Returns how many.
    ///
    /// Errors: `InternalError` when the database fails.
    pub(crate) async fn sweep_relayed(
        &self,
        source: &std::ops::Range<i64>,
        below: i64,
        before_ms: i64,
    ) -> Result<u64> {
        run!(self, |c| ops::sweep_relayed(&c, source, below, before_ms))
    }

    /// How many rows this cell's outbox holds (for tests and `loft cells status`).
    ///
    /// Errors: `InternalError` when the database fails.
    pub async fn count_outbox(&self) -> Result<u64> {
        let n: i64 = run!(self, |c| async {
            let row = c.query_one("SELECT count(*) FROM cell_outbox", &[]).await?;
            Ok::<i64, Failure>(row.get(0))
        })?;
        Ok(n.max(0) as u64)
    }
}
