//! What a [`PgStore`] does for `loft cells move` ([`crate::cells::CellStore::move_queue`]):
//! as the source cell it freezes a queue ([`PgStore::move_gate`]), reads it whole
//! ([`PgStore::move_read`]) and, once the destination holds it and the catalog says so,
//! removes it ([`PgStore::move_clear`]); as the destination it stores the copy in one
//! transaction ([`PgStore::move_write`]); every cell re-aims its outbox rows bound for the
//! queue's old id ([`PgStore::move_outbox`]).
//!
//! # The guard
//!
//! Table `loft_cell_moved` (made with the cell tables, `super::cell`) has one row per
//! queue id that is moving (`state = 'moving'`) or has moved (`'moved'`) out of this cell.
//! The first move out of a cell installs `BEFORE` row triggers (function
//! `loft_cell_moved_guard`) on `messages`, `fifo_dedup`, `receive_attempts` and `queues`
//! (by queue id) and on `move_tasks` (by source queue store key, while moving) that raise
//! SQLSTATE [`MOVED_STATE`] for a row of such a queue; [`run!`](super::run) answers it
//! `ServiceUnavailable`, so a request that reaches the old cell (a node whose caches still
//! name the old id) is told to retry and changes nothing. The move's own statements set
//! `loft.moving = 'on'` for their transaction and pass. A cell that never had a queue move
//! out has no triggers and pays nothing; one that had pays one primary-key probe of a
//! small table per row written.
//!
//! The gate row stays after the move: a send that still names the old id (a node's cached
//! queue record, an outbox row written meanwhile) is refused instead of storing a message
//! in a queue no longer there.

use loft_core::error::{Error, ErrorCode, Result};
use loft_core::service::receipt::ReceiptKey;

use super::ops::{queue_sequence_name, Failure};
use super::{chain, health, retryable, PgStore, MAX_RETRIES};
use std::time::Duration;

/// The SQLSTATE `loft_cell_moved_guard` raises: the row belongs to a queue that is moving
/// or has moved to another cell.
pub const MOVED_STATE: &str = "LFMV1";

/// The advisory lock under which the guard's triggers are installed (as the cell tables).
const GUARD_DDL_LOCK: i64 = 0x6c6f_6674_6d6f_7665; // "loftmove"

/// The guard function and the `loft_cell_moved` table it reads.
pub(super) const GUARD_SQL: &str = "
CREATE TABLE IF NOT EXISTS loft_cell_moved (
    queue_id BIGINT PRIMARY KEY,
    name     TEXT NOT NULL,
    to_cell  INTEGER NOT NULL,
    state    TEXT NOT NULL,
    new_id   BIGINT
);
CREATE INDEX IF NOT EXISTS loft_cell_moved_name ON loft_cell_moved (name);
ALTER TABLE loft_cell_moved ADD COLUMN IF NOT EXISTS owner TEXT;
ALTER TABLE loft_cell_moved ADD COLUMN IF NOT EXISTS lease_until BIGINT NOT NULL DEFAULT 0;
ALTER TABLE loft_cell_moved ADD COLUMN IF NOT EXISTS step SMALLINT NOT NULL DEFAULT 1;
ALTER TABLE loft_cell_moved ADD COLUMN IF NOT EXISTS started_at BIGINT NOT NULL DEFAULT 0;
CREATE OR REPLACE FUNCTION loft_cell_moved_guard() RETURNS trigger LANGUAGE plpgsql AS $g$
DECLARE
    q BIGINT;
BEGIN
    IF current_setting('loft.moving', true) = 'on' THEN
        RETURN COALESCE(NEW, OLD);
    END IF;
    IF TG_TABLE_NAME = 'move_tasks' THEN
        IF EXISTS (SELECT 1 FROM loft_cell_moved
                   WHERE name = COALESCE(NEW.source_queue, OLD.source_queue)
                     AND state = 'moving') THEN
            RAISE EXCEPTION 'loft: the source queue of this move task is moving to another cell'
                USING ERRCODE = 'LFMV1';
        END IF;
        RETURN COALESCE(NEW, OLD);
    END IF;
    IF TG_TABLE_NAME = 'queues' THEN
        q := OLD.id;
    ELSIF TG_OP = 'DELETE' THEN
        q := OLD.queue_id;
    ELSE
        q := NEW.queue_id;
    END IF;
    IF EXISTS (SELECT 1 FROM loft_cell_moved WHERE queue_id = q) THEN
        RAISE EXCEPTION 'loft: queue % is moving or has moved to another cell', q
            USING ERRCODE = 'LFMV1';
    END IF;
    RETURN COALESCE(NEW, OLD);
END
$g$;
";

/// The triggers the guard needs, made by the first move out of a cell.
const TRIGGERS_SQL: &str = "
CREATE TRIGGER loft_cell_moved_guard BEFORE INSERT OR UPDATE OR DELETE ON messages
    FOR EACH ROW EXECUTE FUNCTION loft_cell_moved_guard();
CREATE TRIGGER loft_cell_moved_guard BEFORE INSERT OR UPDATE OR DELETE ON fifo_dedup
    FOR EACH ROW EXECUTE FUNCTION loft_cell_moved_guard();
CREATE TRIGGER loft_cell_moved_guard BEFORE INSERT OR UPDATE OR DELETE ON receive_attempts
    FOR EACH ROW EXECUTE FUNCTION loft_cell_moved_guard();
CREATE TRIGGER loft_cell_moved_guard BEFORE UPDATE OR DELETE ON queues
    FOR EACH ROW EXECUTE FUNCTION loft_cell_moved_guard();
CREATE TRIGGER loft_cell_moved_guard BEFORE INSERT OR UPDATE OR DELETE ON move_tasks
    FOR EACH ROW EXECUTE FUNCTION loft_cell_moved_guard();
";

/// Whether `e` is the guard's refusal.
pub(super) fn is_moved(e: &tokio_postgres::Error) -> bool {
    e.code().is_some_and(|c| c.code() == MOVED_STATE)
}

/// The answer to a request the guard refused: `ServiceUnavailable` (503, retried by
/// every SDK), nothing changed.
pub(super) fn moved_error() -> Error {
    Error::new(
        ErrorCode::ServiceUnavailable,
        "This queue is moving to another storage cell. Retry shortly.",
    )
}

/// The columns of a gate row [`PendingMove`] is read from, in its order.
const PENDING_COLUMNS: &str = "queue_id, name, to_cell, owner, lease_until, step, started_at";

/// A move in progress out of this cell, as its gate row records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingMove {
    /// The queue's id in this (the source) cell.
    pub queue_id: i64,
    /// The queue's store key.
    pub name: String,
    /// The destination cell's number.
    pub to_cell: u32,
    /// The run that holds the move (`loft cells move`'s `cli:PID@HOST`, a node's id), or
    /// `None` for a gate row written before moves had owners.
    pub owner: Option<String>,
    /// Until when (ms since the epoch) `owner` holds it; after that any node's sweep may
    /// take it over (0: free).
    pub lease_until_ms: i64,
    /// The last step done (`crate::cells::MoveStep` as 1 gate, 2 copy, 3 outbox, 4 flip).
    pub step: i16,
    /// When the gate was committed (ms since the epoch; 0 when not recorded).
    pub started_at_ms: i64,
}

impl PendingMove {
    fn from_row(r: &tokio_postgres::Row) -> PendingMove {
        PendingMove {
            queue_id: r.get(0),
            name: r.get(1),
            to_cell: r.get::<_, i32>(2) as u32,
            owner: r.get(3),
            lease_until_ms: r.get(4),
            step: r.get(5),
            started_at_ms: r.get(6),
        }
    }
}

/// A queue as the source cell holds it, read whole by [`PgStore::move_read`] for
/// [`PgStore::move_write`]. The row sets are JSON arrays of the tables' rows (PostgreSQL's
/// `json_agg`, read back with `json_populate_recordset`, so every column travels as the
/// database wrote it).
#[derive(Debug, Clone)]
pub struct QueueImage {
    /// The queue's id in the source cell.
    pub queue_id: i64,
    /// The queue's store key.
    pub name: String,
    /// The `queues` row (JSON object).
    pub queue: String,
    /// Its `messages` rows in `seq` order (JSON array).
    pub messages: String,
    /// How many messages.
    pub message_count: u64,
    /// Its `fifo_dedup` rows (JSON array).
    pub dedup: String,
    /// Its `receive_attempts` rows (JSON array).
    pub attempts: String,
    /// Its move tasks (`move_tasks` rows whose source it is, JSON array).
    pub tasks: String,
    /// The next number its `queue_sequence_<id>` would give.
    pub next_number: i64,
    /// The ids the source cell recorded as relayed (`cell_relayed`, JSON array), so a
    /// relay that stored a copy in the source before the move repeats nothing in the
    /// destination.
    pub relayed: String,
}

impl PgStore {
    /// The store keys whose catalog row another node changed (a queue moved), as this
    /// database's listener hears them (cell 1 of cells).
    pub(crate) fn catalog_changes(&self) -> tokio::sync::broadcast::Receiver<String> {
        self.catalog_changes.subscribe()
    }

    /// The moves out of this cell not finished yet (gate rows in state `moving`); only
    /// those of queue `name` when given.
    ///
    /// Errors: `InternalError` when the database fails; `ServiceUnavailable` when the cell
    /// is down.
    pub(crate) async fn pending_moves(&self, name: Option<&str>) -> Result<Vec<PendingMove>> {
        run!(self, |c| async {
            let rows = c
                .query(
                    &format!(
                        "SELECT {PENDING_COLUMNS} FROM loft_cell_moved \
                         WHERE state = 'moving' AND ($1::text IS NULL OR name = $1) \
                         ORDER BY queue_id"
                    ),
                    &[&name],
                )
                .await?;
            Ok::<_, Failure>(rows.iter().map(PendingMove::from_row).collect())
        })
    }

    /// Takes up to `limit` moves out of this cell whose lease ended by `now_ms` (their
    /// run died or stopped) for `owner` until `lease_until_ms`, lowest queue id first.
    /// Two nodes claiming at once get disjoint moves: each gate row is locked
    /// (`FOR UPDATE SKIP LOCKED`) and its lease checked again under the lock.
    ///
    /// Errors: as [`PgStore::pending_moves`].
    pub(crate) async fn claim_moves(
        &self,
        owner: &str,
        now_ms: i64,
        lease_until_ms: i64,
        limit: u32,
    ) -> Result<Vec<PendingMove>> {
        let limit = i64::from(limit);
        run!(self, |c| async {
            let rows = c
                .query(
                    &format!(
                        "UPDATE loft_cell_moved SET owner = $1, lease_until = $3 \
                         WHERE queue_id IN (SELECT queue_id FROM loft_cell_moved \
                             WHERE state = 'moving' AND lease_until <= $2 \
                             ORDER BY queue_id LIMIT $4 FOR UPDATE SKIP LOCKED) \
                           AND state = 'moving' AND lease_until <= $2 \
                         RETURNING {PENDING_COLUMNS}"
                    ),
                    &[&owner, &now_ms, &lease_until_ms, &limit],
                )
                .await?;
            let mut moves: Vec<PendingMove> = rows.iter().map(PendingMove::from_row).collect();
            moves.sort_by_key(|m| m.queue_id);
            Ok::<_, Failure>(moves)
        })
    }

    /// Takes the move of queue `queue_id` for `owner` until `lease_until_ms` whatever its
    /// lease (an operator's rerun of `loft cells move`: the earlier run is taken to be
    /// dead; were it not, each step is idempotent and its next renewal stops it). `None`
    /// when the queue is not moving out of this cell.
    ///
    /// Errors: as [`PgStore::pending_moves`].
    pub(crate) async fn take_move(
        &self,
        queue_id: i64,
        owner: &str,
        lease_until_ms: i64,
    ) -> Result<Option<PendingMove>> {
        run!(self, |c| async {
            let row = c
                .query_opt(
                    &format!(
                        "UPDATE loft_cell_moved SET owner = $2, lease_until = $3 \
                         WHERE queue_id = $1 AND state = 'moving' \
                         RETURNING {PENDING_COLUMNS}"
                    ),
                    &[&queue_id, &owner, &lease_until_ms],
                )
                .await?;
            Ok::<_, Failure>(row.as_ref().map(PendingMove::from_row))
        })
    }

    /// Records that `owner`'s move of queue `queue_id` has done step `step` (the highest
    /// recorded stays) and extends its lease to `lease_until_ms`. Returns false when the
    /// move is no longer `owner`'s (another run took it over) or no longer in progress:
    /// the caller stops.
    ///
    /// Errors: as [`PgStore::pending_moves`].
    pub(crate) async fn renew_move(
        &self,
        queue_id: i64,
        owner: &str,
        step: i16,
        lease_until_ms: i64,
    ) -> Result<bool> {
        run!(self, |c| async {
            let n = c
                .execute(
                    "UPDATE loft_cell_moved SET step = GREATEST(step, $3), lease_until = $4 \
                     WHERE queue_id = $1 AND owner = $2 AND state = 'moving'",
                    &[&queue_id, &owner, &step, &lease_until_ms],
                )
                .await?;
            Ok::<_, Failure>(n == 1)
        })
    }

    /// Freezes queue `queue_id` (store key `name`) for its move to cell `to_cell`, held by
    /// `owner` until `lease_until_ms` (started at `now_ms`; ms since the epoch): waits
    /// for every transaction writing the guarded tables to end (a table lock, at most 5 s),
    /// records the gate row and (first move out of this cell) installs the guard's
    /// triggers, in one transaction. From its commit on nothing changes the queue's rows
    /// here but the move itself. Returns false when the queue is not here (deleted
    /// meanwhile). Doing it again is harmless.
    ///
    /// Errors: `InternalError` when the database fails or the lock is not had in 5 s
    /// (nothing changed); `ServiceUnavailable` when the cell is down.
    pub(crate) async fn move_gate(
        &self,
        queue_id: i64,
        name: &str,
        to_cell: u32,
        owner: &str,
        now_ms: i64,
        lease_until_ms: i64,
    ) -> Result<bool> {
        let to = to_cell as i32;
        run_tx!(self, |tx| async {
            tx.batch_execute("SET LOCAL lock_timeout = '5s'").await?;
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&GUARD_DDL_LOCK])
                .await?;
            let installed: bool = tx
                .query_one(
                    "SELECT EXISTS (SELECT 1 FROM pg_trigger \
                     WHERE tgname = 'loft_cell_moved_guard' \
                       AND tgrelid = 'messages'::regclass)",
                    &[],
                )
                .await?
                .get(0);
            if !installed {
                tx.batch_execute(TRIGGERS_SQL).await?;
            }
            // Every writer of the queue's rows that began before this lock has ended, and
            // every later one meets the gate row (each statement of the guard reads it in
            // its own snapshot).
            tx.batch_execute(
                "LOCK TABLE messages, fifo_dedup, receive_attempts, queues, move_tasks \
                 IN SHARE ROW EXCLUSIVE MODE",
            )
            .await?;
            let here = tx
                .query_opt("SELECT 1 FROM queues WHERE id = $1", &[&queue_id])
                .await?
                .is_some();
            if here {
                tx.execute(
                    "INSERT INTO loft_cell_moved (queue_id, name, to_cell, state, owner, \
                       lease_until, step, started_at) \
                     VALUES ($1, $2, $3, 'moving', $4, $6, 1, $5) \
                     ON CONFLICT (queue_id) DO NOTHING",
                    &[&queue_id, &name, &to, &owner, &now_ms, &lease_until_ms],
                )
                .await?;
            }
            Ok::<_, Failure>(here)
        })
    }

    /// Reads queue `queue_id` whole (one snapshot), for [`PgStore::move_write`]; `None`
    /// when it is not here.
    ///
    /// Errors: as [`PgStore::pending_moves`].
    pub(crate) async fn move_read(&self, queue_id: i64) -> Result<Option<QueueImage>> {
        let sequence = queue_sequence_name(queue_id);
        run!(self, |c| async {
            let tx = c
                .build_transaction()
                .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
                .read_only(true)
                .start()
                .await?;
            let Some(row) = tx
                .query_opt(
                    "SELECT row_to_json(q)::text, name FROM queues q WHERE id = $1",
                    &[&queue_id],
                )
                .await?
            else {
                return Ok::<_, Failure>(None);
            };
            let queue: String = row.get(0);
            let name: String = row.get(1);
            let one = |sql: &'static str| {
                let tx = &tx;
                async move {
                    let r = tx.query_one(sql, &[&queue_id]).await?;
                    Ok::<_, Failure>(r)
                }
            };
            let m = one(
                "SELECT COALESCE(json_agg(m ORDER BY m.seq), '[]')::text, count(*) \
                 FROM messages m WHERE queue_id = $1",
            )
            .await?;
            let dedup: String = one(
                "SELECT COALESCE(json_agg(d), '[]')::text FROM fifo_dedup d WHERE queue_id = $1",
            )
            .await?
            .get(0);
            let attempts: String = one(
                "SELECT COALESCE(json_agg(a), '[]')::text FROM receive_attempts a \
                 WHERE queue_id = $1",
            )
            .await?
            .get(0);
            let tasks: String = tx
                .query_one(
                    "SELECT COALESCE(json_agg(t ORDER BY t.id), '[]')::text FROM move_tasks t \
                     WHERE source_queue = $1",
                    &[&name],
                )
                .await?
                .get(0);
            let next_number: i64 = tx
                .query_one(
                    &format!(
                        "SELECT CASE WHEN is_called THEN last_value + 1 ELSE last_value END \
                         FROM {sequence}"
                    ),
                    &[],
                )
                .await?
                .get(0);
            let relayed: String = tx
                .query_one(
                    "SELECT COALESCE(json_agg(r), '[]')::text FROM cell_relayed r",
                    &[],
                )
                .await?
                .get(0);
            tx.commit().await?;
            Ok(Some(QueueImage {
                queue_id,
                name,
                queue,
                messages: m.get(0),
                message_count: m.get::<_, i64>(1).max(0) as u64,
                dedup,
                attempts,
                tasks,
                next_number,
                relayed,
            }))
        })
    }

    /// Stores `image` in this (the destination) cell in one transaction: the queue under a
    /// new id of this cell, its number sequence going on from the source's, its messages
    /// in their order with new `seq`s of this cell (each keeping its MessageId, body,
    /// attributes, state of visibility, receive count, receipt token, group,
    /// deduplication id and SequenceNumber as the service shows it under `key`: a FIFO
    /// queue's numbers are shifted by the difference of the old and new ids' offsets,
    /// `ReceiptKey::sequence_offset`), its deduplication window and receive
    /// attempts (their `seq`s mapped to the new ones), its move tasks (free for any node
    /// to take up again) and the source's relayed outbox ids. Returns the queue's id here
    /// and whether this call stored it: when this cell already has a queue of that store
    /// key (an earlier run stored it), nothing is written.
    ///
    /// Errors: as [`PgStore::pending_moves`].
    pub(crate) async fn move_write(
        &self,
        image: &QueueImage,
        key: &ReceiptKey,
    ) -> Result<(i64, bool)> {
        run_tx!(self, |tx| async {
            tx.batch_execute("SET LOCAL loft.moving = 'on'").await?;
            if let Some(r) = tx
                .query_opt("SELECT id FROM queues WHERE name = $1", &[&image.name])
                .await?
            {
                return Ok::<_, Failure>((r.get(0), false));
            }
            let id: i64 = tx
                .query_one(
                    "SELECT nextval(pg_get_serial_sequence('queues', 'id'))",
                    &[],
                )
                .await?
                .get(0);
            // A FIFO queue's SequenceNumbers are its numbers plus an offset made of its
            // id (`ReceiptKey::sequence_offset`): shifted by the offsets' difference, each
            // message keeps its SequenceNumber and the queue's next ones go on above.
            let fifo: bool = tx
                .query_one(
                    "SELECT COALESCE((attributes::json ->> 'FifoQueue') = 'true', false) \
                     FROM json_populate_record(NULL::queues, $1::text::json)",
                    &[&image.queue],
                )
                .await?
                .get(0);
            let delta = if fifo {
                key.sequence_offset(image.queue_id) as i64 - key.sequence_offset(id) as i64
            } else {
                0
            };
            // A message numbered before queues had their own numbers shows 10^19 + its
            // old seq: as a queue number, its seq less 2^60 and the old offset.
            let unnumbered = (1i64 << 60) + key.sequence_offset(image.queue_id) as i64;
            let start = image.next_number.max(1) + delta;
            tx.batch_execute(&format!(
                "CREATE SEQUENCE IF NOT EXISTS {} MINVALUE {} START WITH {start}",
                queue_sequence_name(id),
                start.min(1),
            ))
            .await?;
            tx.execute(
                "INSERT INTO queues (id, name, attributes, tags, created_at, modified_at, \
                   purge_hold_until, fair, message_sequence) \
                 SELECT $1, name, attributes, tags, created_at, modified_at, \
                   purge_hold_until, fair, message_sequence \
                 FROM json_populate_record(NULL::queues, $2::text::json)",
                &[&id, &image.queue],
            )
            .await?;
            tx.batch_execute(
                "CREATE TEMP TABLE loft_move_map (old BIGINT PRIMARY KEY, new BIGINT NOT NULL) \
                 ON COMMIT DROP",
            )
            .await?;
            // New seqs drawn in the old order (the FIFO and fair claim order); a FIFO
            // message of before per-queue numbers (`sequence` NULL) keeps the number its
            // old seq made.
            tx.execute(
                "WITH src AS MATERIALIZED (SELECT r.*, \
                     nextval(pg_get_serial_sequence('messages', 'seq')) AS new_seq \
                   FROM (SELECT * FROM json_populate_recordset(NULL::messages, $2::text::json) \
                         ORDER BY seq OFFSET 0) r), \
                 ins AS (INSERT INTO messages (seq, queue_id, message_id, body, md5_body, \
                     message_attributes, system_attributes, sender_id, sent_at, visible_at, \
                     expires_at, receive_count, first_received_at, receipt_token, group_id, \
                     dedup_id, dead_letter_source, received_at, fair_key, sealed, sequence, \
                     hidden_until) \
                   SELECT new_seq, $1, message_id, body, md5_body, message_attributes, \
                     system_attributes, sender_id, sent_at, visible_at, expires_at, \
                     receive_count, first_received_at, receipt_token, group_id, dedup_id, \
                     dead_letter_source, received_at, fair_key, sealed, \
                     CASE WHEN $3 THEN COALESCE(sequence, seq - $4) + $5 ELSE sequence END, \
                     COALESCE(hidden_until, 0) \
                   FROM src ORDER BY new_seq) \
                 INSERT INTO loft_move_map (old, new) SELECT seq, new_seq FROM src",
                &[&id, &image.messages, &fifo, &unnumbered, &delta],
            )
            .await?;
            tx.execute(
                "INSERT INTO fifo_dedup (queue_id, scope, dedup_id, seq, message_id, \
                   expires_at, sequence) \
                 SELECT $1, d.scope, d.dedup_id, COALESCE(m.new, d.seq), d.message_id, \
                   d.expires_at, CASE WHEN $3 THEN COALESCE(d.sequence, d.seq - $4) + $5 \
                                      ELSE d.sequence END \
                 FROM json_populate_recordset(NULL::fifo_dedup, $2::text::json) d \
                 LEFT JOIN loft_move_map m ON m.old = d.seq",
                &[&id, &image.dedup, &fifo, &unnumbered, &delta],
            )
            .await?;
            tx.execute(
                "INSERT INTO receive_attempts (queue_id, attempt_id, expires_at, seqs, tokens) \
                 SELECT $1, a.attempt_id, a.expires_at, \
                   ARRAY(SELECT COALESCE(m.new, u.s) FROM unnest(a.seqs) WITH ORDINALITY u(s, o) \
                         LEFT JOIN loft_move_map m ON m.old = u.s ORDER BY u.o), \
                   a.tokens \
                 FROM json_populate_recordset(NULL::receive_attempts, $2::text::json) a",
                &[&id, &image.attempts],
            )
            .await?;
            tx.execute(
                "INSERT INTO move_tasks (handle, source_arn, source_queue, destination_arn, \
                   max_per_second, status, moved, to_move, failure_reason, started_at, owner, \
                   lease_until, started_by) \
                 SELECT handle, source_arn, source_queue, destination_arn, max_per_second, \
                   status, moved, to_move, failure_reason, started_at, NULL, 0, started_by \
                 FROM json_populate_recordset(NULL::move_tasks, $1::text::json) ORDER BY id",
                &[&image.tasks],
            )
            .await?;
            tx.execute(
                "INSERT INTO cell_relayed (id, relayed_at) \
                 SELECT id, relayed_at FROM json_populate_recordset(NULL::cell_relayed, \
                   $1::text::json) ON CONFLICT (id) DO NOTHING",
                &[&image.relayed],
            )
            .await?;
            Ok((id, true))
        })
    }

    /// Re-aims this cell's outbox rows bound for queue `old` at `new` (freed of their
    /// lease, so the next relay takes them); returns how many.
    ///
    /// Errors: as [`PgStore::pending_moves`].
    pub(crate) async fn move_outbox(&self, old: i64, new: i64) -> Result<u64> {
        run!(self, |c| async {
            Ok::<_, Failure>(
                c.execute(
                    "UPDATE cell_outbox SET queue_id = $2, lease_until = 0 WHERE queue_id = $1",
                    &[&old, &new],
                )
                .await?,
            )
        })
    }

    /// Where queue `old` of this cell went, once its move finished: (cell number, new
    /// id).
    ///
    /// Errors: as [`PgStore::pending_moves`].
    pub(crate) async fn moved_to(&self, old: i64) -> Result<Option<(u32, i64)>> {
        run!(self, |c| async {
            let row = c
                .query_opt(
                    "SELECT to_cell, new_id FROM loft_cell_moved \
                     WHERE queue_id = $1 AND new_id IS NOT NULL",
                    &[&old],
                )
                .await?;
            Ok::<_, Failure>(row.map(|r| (r.get::<_, i32>(0) as u32, r.get(1))))
        })
    }

    /// Removes queue `queue_id` (store key `name`) and everything keyed to it from this
    /// (the source) cell in one transaction, its number sequence with it, and marks its
    /// gate row moved to `new_id`. Doing it again is harmless.
    ///
    /// Errors: as [`PgStore::pending_moves`].
    pub(crate) async fn move_clear(&self, queue_id: i64, name: &str, new_id: i64) -> Result<()> {
        let drop_sequence = format!("DROP SEQUENCE IF EXISTS {}", queue_sequence_name(queue_id));
        run_tx!(self, |tx| async {
            tx.batch_execute("SET LOCAL loft.moving = 'on'").await?;
            tx.execute("DELETE FROM messages WHERE queue_id = $1", &[&queue_id])
                .await?;
            tx.execute("DELETE FROM fifo_dedup WHERE queue_id = $1", &[&queue_id])
                .await?;
            tx.execute(
                "DELETE FROM receive_attempts WHERE queue_id = $1",
                &[&queue_id],
            )
            .await?;
            tx.execute("DELETE FROM move_tasks WHERE source_queue = $1", &[&name])
                .await?;
            tx.execute("DELETE FROM queues WHERE id = $1", &[&queue_id])
                .await?;
            tx.batch_execute(&drop_sequence).await?;
            tx.execute(
                "UPDATE loft_cell_moved SET state = 'moved', new_id = $2 WHERE queue_id = $1",
                &[&queue_id, &new_id],
            )
            .await?;
            Ok::<_, Failure>(())
        })
    }

    /// Points the catalog row of queue `name` at cell `cell` and tells every node at
    /// commit (a `catalog:KEY` notification on this store's channel, which each node's
    /// listener forwards to [`PgStore::catalog_changes`]; cell 1 only).
    ///
    /// Errors: as [`PgStore::pending_moves`].
    pub(crate) async fn catalog_move(&self, name: &str, cell: u32) -> Result<()> {
        let cell = cell as i32;
        let channel = self.channel.clone();
        let payload = format!("catalog:{name}");
        run_tx!(self, |tx| async {
            tx.execute(
                "UPDATE loft_cell_catalog SET cell = $2 WHERE kind = 'q' AND name = $1",
                &[&name, &cell],
            )
            .await?;
            tx.execute("SELECT pg_notify($1, $2)", &[&channel, &payload])
                .await?;
            Ok::<_, Failure>(())
        })
    }
}
