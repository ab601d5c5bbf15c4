//! Message moves (redrive) and message-move tasks.

use super::*;

// ----- message moves

/// Moves up to `limit` visible messages; rows another node is moving are skipped, so two
/// nodes running a move task of one queue move each message once. A moved message with a
/// MessageGroupId (a FIFO queue's) takes its destination's next numbers (`nextval` of its
/// queue sequence, `queue_sequence!`, in send order), as a send into it does, after taking
/// the lock of each destination group it moves into ([`FIFO_GROUP_LOCK_CLASS`], in key
/// order as a send takes them, held to the commit), so a concurrent send to one of those
/// groups takes its number and `seq` wholly before or wholly after the move's. A
/// destination queue that no longer exists (deleted since the task resolved it) takes
/// nothing: its messages stay in the source. The candidates read `queue_id` as a range,
/// ordered by `queue_id, seq`, so that only `messages_queue_order` gives their order: with
/// `queue_id = $1 ... ORDER BY seq` the generic plan walked the primary key through
/// every other queue's older messages (366 ms a batch behind 1,000,000 of them, against
/// 0.05 ms; EXPLAIN ANALYZE, PostgreSQL 15).
///
/// With `cell` (this store is a cell of a `crate::cells::CellStore`, holding the ids of
/// that range) a message bound for a queue outside it goes to the outbox in the same
/// statement (a [`MovedCopy`] with `renumber`, written as the insert here would store it:
/// new MessageId, sent now, receive count 0), so it leaves its queue exactly when its
/// copy is written, and the destination numbers it when the relay stores it (its group
/// lock and sequence are the destination cell's). Whether such a queue still exists is
/// the relay's to see (a copy for a queue that is gone is dropped there); this cell checks
/// only its own queues.
pub async fn move_messages<C: GenericClient>(
    c: &C,
    source: i64,
    target: &MoveTarget,
    new_message_ids: &[String],
    now_ms: i64,
    channel: &str,
    cell: Option<&std::ops::Range<i64>>,
) -> Result<u64, Error> {
    let limit = new_message_ids.len() as i64;
    let (to, arns, ids): (Option<i64>, Vec<String>, Vec<i64>) = match target {
        MoveTarget::Queue(id) => (Some(*id), Vec::new(), Vec::new()),
        MoveTarget::Sources(list) => (
            None,
            list.iter().map(|(a, _)| a.clone()).collect(),
            list.iter().map(|(_, i)| *i).collect(),
        ),
    };
    let (low, high) = cell.map_or((i64::MIN, i64::MAX), |r| (r.start, r.end));
    let copy = moved_json_sql(
        "($8::text[])[n]",
        "$2",
        "$2",
        "$2 + (expires_at - sent_at)",
        "0",
        "NULL::bigint",
        "NULL::text",
        "NULL::bigint",
        true,
    );
    let sql = format!(
        concat!(
            "WITH locked AS MATERIALIZED (SELECT DISTINCT group_id AS g FROM messages \
           WHERE queue_id = $1 AND GREATEST(visible_at, hidden_until) > $2 \
             AND group_id IS NOT NULL), \
         cand AS MATERIALIZED (SELECT seq, dead_letter_source FROM messages \
           WHERE queue_id >= $1 AND queue_id <= $1 AND visible_at <= $2 AND hidden_until <= $2 \
             AND (group_id IS NULL OR group_id NOT IN (SELECT g FROM locked)) \
           ORDER BY queue_id, seq LIMIT $3 FOR UPDATE SKIP LOCKED), \
         dest AS (SELECT c.seq, CASE WHEN NOT (t.id >= $9 AND t.id < $10) \
               OR EXISTS (SELECT 1 FROM queues q WHERE q.id = t.id) THEN t.id END AS dest \
           FROM cand c \
           LEFT JOIN (SELECT DISTINCT ON (arn) arn, id \
                      FROM unnest($5::text[], $6::bigint[]) AS u(arn, id)) s \
             ON s.arn = c.dead_letter_source \
           CROSS JOIN LATERAL (SELECT COALESCE($4::bigint, s.id) AS id) t), \
         gone AS (DELETE FROM messages m USING dest d WHERE m.seq = d.seq AND d.dest IS NOT NULL \
           RETURNING m.seq, d.dest, m.body, m.md5_body, m.message_attributes, \
             m.system_attributes, m.sender_id, m.sent_at, m.expires_at, m.group_id, m.dedup_id, \
             m.sealed), \
         grouplocks AS MATERIALIZED (SELECT count(pg_advisory_xact_lock($11, k)) AS n \
           FROM (SELECT DISTINCT ",
            group_lock_key!("dest", "group_id"),
            " AS k FROM gone WHERE group_id IS NOT NULL AND dest >= $9 AND dest < $10 \
             ORDER BY k OFFSET 0) o), \
         ordered AS (SELECT *, row_number() OVER (ORDER BY seq) AS n FROM gone \
           WHERE (SELECT n FROM grouplocks) >= 0 ORDER BY seq OFFSET 0), \
         numbered AS (SELECT *, CASE WHEN group_id IS NOT NULL AND dest >= $9 AND dest < $10 \
             THEN nextval(",
            queue_sequence!("dest"),
            ") END AS number FROM ordered OFFSET 0), \
         moved AS (INSERT INTO messages (queue_id, message_id, body, md5_body, \
             message_attributes, system_attributes, sender_id, sent_at, visible_at, expires_at, \
             receive_count, group_id, dedup_id, fair_key, sealed, sequence) \
           SELECT dest, ($8::text[])[n], body, md5_body, message_attributes, \
             system_attributes, sender_id, $2, $2, $2 + (expires_at - sent_at), 0, group_id, \
             dedup_id, CASE WHEN (SELECT fair FROM queues WHERE id = dest) THEN 0 END, sealed, \
             number \
           FROM numbered \
           WHERE dest >= $9 AND dest < $10 ORDER BY seq RETURNING queue_id), \
         outboxed AS (INSERT INTO cell_outbox (queue_id, copy, created_at, ordered) \
           SELECT dest, {copy}, $2, group_id IS NOT NULL FROM numbered \
           WHERE NOT (dest >= $9 AND dest < $10) ORDER BY seq RETURNING id), \
         woke AS (SELECT pg_notify($7, q::text) FROM (SELECT DISTINCT queue_id AS q FROM moved) x) \
         SELECT (SELECT count(*) FROM moved) + (SELECT count(*) FROM outboxed), \
           (SELECT count(*) FROM woke)"
        ),
        copy = copy
    );
    let row = query_one(
        c,
        &sql,
        &[
            &source,
            &now_ms,
            &limit,
            &to,
            &arns,
            &ids,
            &channel,
            &new_message_ids,
            &low,
            &high,
            &FIFO_GROUP_LOCK_CLASS,
        ],
    )
    .await?;
    Ok(row.get::<_, i64>(0) as u64)
}

// ----- message-move tasks

const MOVE_TASK_COLUMNS: &str = "handle, source_arn, source_queue, destination_arn, \
    max_per_second, status, moved, to_move, failure_reason, started_at, owner, lease_until, \
    started_by";

fn move_task_row(r: &Row) -> MoveTaskRecord {
    MoveTaskRecord {
        handle: r.get(0),
        source_arn: r.get(1),
        source_queue: r.get(2),
        destination_arn: r.get(3),
        max_per_second: r.get(4),
        status: MoveTaskStatus::parse(r.get(5)),
        moved: r.get(6),
        to_move: r.get(7),
        failure_reason: r.get(8),
        started_at_ms: r.get(9),
        owner: r.get(10),
        lease_until_ms: r.get(11),
        started_by: r.get(12),
    }
}

/// One step of a move task inside the caller's transaction: the task's row is renewed
/// (and so locked) first, so a cancel waits for the step and then sees its progress.
#[allow(clippy::too_many_arguments)]
pub async fn move_step_in<C: GenericClient>(
    tx: &C,
    source: i64,
    target: &MoveTarget,
    new_message_ids: &[String],
    now_ms: i64,
    lease: &MoveTaskLease,
    channel: &str,
    cell: Option<&std::ops::Range<i64>>,
) -> Result<Option<u64>, Error> {
    let renewed = execute(
        tx,
        "UPDATE move_tasks SET lease_until = $3 WHERE handle = $1 AND owner = $2 \
         AND status = 'RUNNING'",
        &[&lease.handle, &lease.owner, &lease.lease_until_ms],
    )
    .await?;
    if renewed == 0 {
        return Ok(None);
    }
    let moved = move_messages(tx, source, target, new_message_ids, now_ms, channel, cell).await?;
    execute(
        tx,
        "UPDATE move_tasks SET moved = moved + $2 WHERE handle = $1",
        &[&lease.handle, &(moved as i64)],
    )
    .await?;
    Ok(Some(moved))
}

pub async fn create_move_task<C: GenericClient>(c: &C, t: &MoveTaskRecord) -> Result<bool, Error> {
    Ok(execute(
        c,
        "INSERT INTO move_tasks (handle, source_arn, source_queue, destination_arn, \
         max_per_second, status, moved, to_move, failure_reason, started_at, owner, \
         lease_until, started_by) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) \
         ON CONFLICT DO NOTHING",
        &[
            &t.handle,
            &t.source_arn,
            &t.source_queue,
            &t.destination_arn,
            &t.max_per_second,
            &t.status.as_str(),
            &t.moved,
            &t.to_move,
            &t.failure_reason,
            &t.started_at_ms,
            &t.owner,
            &t.lease_until_ms,
            &t.started_by,
        ],
    )
    .await?
        == 1)
}

pub async fn list_move_tasks<C: GenericClient>(
    c: &C,
    source_arn: &str,
    limit: u32,
) -> Result<Vec<MoveTaskRecord>, Error> {
    let sql = format!(
        "SELECT {MOVE_TASK_COLUMNS} FROM move_tasks WHERE source_arn = $1 \
         ORDER BY id DESC LIMIT $2"
    );
    Ok(query(c, &sql, &[&source_arn, &(limit as i64)])
        .await?
        .iter()
        .map(move_task_row)
        .collect())
}

pub async fn cancel_move_task<C: GenericClient>(
    c: &C,
    handle: &str,
) -> Result<Option<MoveTaskRecord>, Error> {
    let sql = format!(
        "UPDATE move_tasks SET status = 'CANCELLED' WHERE handle = $1 AND status = 'RUNNING' \
         RETURNING {MOVE_TASK_COLUMNS}"
    );
    Ok(query_opt(c, &sql, &[&handle])
        .await?
        .as_ref()
        .map(move_task_row))
}

pub async fn claim_move_tasks<C: GenericClient>(
    c: &C,
    owner: &str,
    now_ms: i64,
    lease_until_ms: i64,
    limit: u32,
) -> Result<Vec<MoveTaskRecord>, Error> {
    let sql = format!(
        "UPDATE move_tasks SET owner = $1, lease_until = $3 WHERE id IN \
         (SELECT id FROM move_tasks WHERE status = 'RUNNING' AND lease_until <= $2 \
          ORDER BY id LIMIT $4 FOR UPDATE SKIP LOCKED) RETURNING {MOVE_TASK_COLUMNS}"
    );
    Ok(query(
        c,
        &sql,
        &[&owner, &now_ms, &lease_until_ms, &(limit as i64)],
    )
    .await?
    .iter()
    .map(move_task_row)
    .collect())
}

pub async fn finish_move_task<C: GenericClient>(
    c: &C,
    lease: &MoveTaskLease,
    status: MoveTaskStatus,
    failure_reason: Option<&str>,
) -> Result<bool, Error> {
    Ok(execute(
        c,
        "UPDATE move_tasks SET status = $3, failure_reason = $4, owner = NULL, \
         lease_until = 0 WHERE handle = $1 AND owner = $2 AND status = 'RUNNING'",
        &[
            &lease.handle,
            &lease.owner,
            &status.as_str(),
            &failure_reason,
        ],
    )
    .await?
        == 1)
}

pub async fn release_move_tasks<C: GenericClient>(c: &C, owner: &str) -> Result<(), Error> {
    execute(
        c,
        "UPDATE move_tasks SET owner = NULL, lease_until = 0 WHERE owner = $1 \
         AND status = 'RUNNING'",
        &[&owner],
    )
    .await
    .map(drop)
}
