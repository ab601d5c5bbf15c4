//! Message moves (redrive) and message-move tasks.

use super::*;

// ----- message moves

/// One step of a move task, or a move without one (`task` `None`): with a task, only
/// while it is running under the lease's owner (`None` otherwise; nothing moves), and
/// what moved is added to its progress.
pub fn move_step(
    c: &Connection,
    seqs: &MessageSeqs,
    source: i64,
    target: &MoveTarget,
    new_message_ids: &[String],
    now_ms: i64,
    task: Option<&MoveTaskLease>,
) -> rusqlite::Result<Option<u64>> {
    if let Some(lease) = task {
        if !renew_move_task(c, lease)? {
            return Ok(None);
        }
    }
    let limit = new_message_ids.len();
    // Groups with a message in flight in the source keep all their messages there, so a
    // redrive never lets a later message of a group overtake an earlier one.
    let mut locked: HashSet<String> = c
        .prepare_cached(
            "SELECT DISTINCT group_id FROM messages WHERE queue_id = ?1 AND visible_at > ?2 \
             AND receive_count > 0 AND group_id IS NOT NULL",
        )?
        .query_map(params![source, now_ms], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    // Read in send order only as far as the limit needs.
    let mut candidates = c.prepare_cached(
        "SELECT seq, dead_letter_source, group_id, visible_at FROM messages \
         INDEXED BY messages_queue_order WHERE queue_id = ?1 ORDER BY seq",
    )?;
    let mut scan = candidates.query(params![source])?;
    let mut rows: Vec<(i64, Option<String>, bool)> = Vec::new();
    while rows.len() < limit {
        let Some(r) = scan.next()? else { break };
        let (seq, origin, group, visible_at): (i64, Option<String>, Option<String>, i64) =
            (r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?);
        let grouped = group.is_some();
        if group.as_ref().is_some_and(|g| locked.contains(g)) {
            continue;
        }
        if visible_at > now_ms {
            if let Some(g) = group {
                locked.insert(g);
            }
            continue;
        }
        rows.push((seq, origin, grouped));
    }
    drop(scan);
    // A redriven message is a new message in its destination: new MessageId, sent now,
    // after what is already there, retention counted afresh (SQS Developer Guide,
    // "Configure a dead-letter queue redrive"); one with a MessageGroupId (a FIFO
    // queue's) takes its destination's next number, as a send into it does.
    let mut copy = c.prepare_cached(
        "INSERT INTO messages (queue_id, message_id, body, md5_body, message_attributes, \
         system_attributes, sender_id, sent_at, visible_at, expires_at, receive_count, \
         group_id, dedup_id, fair_key, sealed, seq, sequence) \
         SELECT ?2, ?3, body, md5_body, message_attributes, system_attributes, sender_id, \
         ?4, ?4, ?4 + (expires_at - sent_at), 0, group_id, dedup_id, \
         CASE WHEN (SELECT fair FROM queues WHERE id = ?2) = 1 THEN 0 END, sealed, ?5, ?6 \
         FROM messages WHERE seq = ?1",
    )?;
    let mut remove = c.prepare_cached("DELETE FROM messages WHERE seq = ?1")?;
    // A destination queue deleted since the task resolved it takes nothing: its messages
    // stay in the source (the task then fails, as AWS's does).
    let mut live = HashMap::new();
    let mut moved = 0;
    let mut ids = new_message_ids.iter();
    for (seq, origin, grouped) in rows {
        let dest = match target {
            MoveTarget::Queue(id) => Some(*id),
            MoveTarget::Sources(map) => origin
                .as_ref()
                .and_then(|o| map.iter().find(|(arn, _)| arn == o).map(|(_, id)| *id)),
        };
        let dest = match dest {
            Some(id) => {
                let exists = match live.get(&id) {
                    Some(known) => *known,
                    None => {
                        let known = c
                            .prepare_cached("SELECT 1 FROM queues WHERE id = ?1")?
                            .query_row([id], |_| Ok(()))
                            .optional()?
                            .is_some();
                        live.insert(id, known);
                        known
                    }
                };
                exists.then_some(id)
            }
            None => None,
        };
        if let Some(dest) = dest {
            let Some(id) = ids.next() else { break };
            let sequence = match grouped {
                true => next_queue_sequence(c, dest)?,
                false => None,
            };
            copy.execute(params![seq, dest, id, now_ms, seqs.take(c, 1)?, sequence])?;
            remove.execute([seq])?;
            moved += 1;
        }
    }
    if let Some(lease) = task {
        c.prepare_cached("UPDATE move_tasks SET moved = moved + ?2 WHERE handle = ?1")?
            .execute(params![lease.handle, moved as i64])?;
    }
    Ok(Some(moved))
}

// ----- message-move tasks

const MOVE_TASK_COLUMNS: &str = "handle, source_arn, source_queue, destination_arn, \
    max_per_second, status, moved, to_move, failure_reason, started_at, owner, lease_until, \
    started_by";

fn move_task_row(r: &Row<'_>) -> rusqlite::Result<MoveTaskRecord> {
    Ok(MoveTaskRecord {
        handle: r.get(0)?,
        source_arn: r.get(1)?,
        source_queue: r.get(2)?,
        destination_arn: r.get(3)?,
        max_per_second: r.get(4)?,
        status: MoveTaskStatus::parse(&r.get::<_, String>(5)?),
        moved: r.get(6)?,
        to_move: r.get(7)?,
        failure_reason: r.get(8)?,
        started_at_ms: r.get(9)?,
        owner: r.get(10)?,
        lease_until_ms: r.get(11)?,
        started_by: r.get(12)?,
    })
}

/// Renews `lease` if its task is still running under its owner; whether it is.
fn renew_move_task(c: &Connection, lease: &MoveTaskLease) -> rusqlite::Result<bool> {
    Ok(c.prepare_cached(
        "UPDATE move_tasks SET lease_until = ?3 WHERE handle = ?1 AND owner = ?2 \
             AND status = 'RUNNING'",
    )?
    .execute(params![lease.handle, lease.owner, lease.lease_until_ms])?
        == 1)
}

pub fn create_move_task(c: &Connection, t: &MoveTaskRecord) -> rusqlite::Result<bool> {
    Ok(c.prepare_cached(
        "INSERT INTO move_tasks (handle, source_arn, source_queue, destination_arn, \
             max_per_second, status, moved, to_move, failure_reason, started_at, owner, \
             lease_until, started_by) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13) \
             ON CONFLICT DO NOTHING",
    )?
    .execute(params![
        t.handle,
        t.source_arn,
        t.source_queue,
        t.destination_arn,
        t.max_per_second,
        t.status.as_str(),
        t.moved,
        t.to_move,
        t.failure_reason,
        t.started_at_ms,
        t.owner,
        t.lease_until_ms,
        t.started_by
    ])? == 1)
}

pub fn list_move_tasks(
    c: &Connection,
    source_arn: &str,
    limit: u32,
) -> rusqlite::Result<Vec<MoveTaskRecord>> {
    let mut stmt = c.prepare_cached(&format!(
        "SELECT {MOVE_TASK_COLUMNS} FROM move_tasks WHERE source_arn = ?1 \
         ORDER BY id DESC LIMIT ?2"
    ))?;
    let rows = stmt.query_map(params![source_arn, limit as i64], move_task_row)?;
    rows.collect()
}

pub fn cancel_move_task(c: &Connection, handle: &str) -> rusqlite::Result<Option<MoveTaskRecord>> {
    c.prepare_cached(&format!(
        "UPDATE move_tasks SET status = 'CANCELLED' WHERE handle = ?1 AND status = 'RUNNING' \
         RETURNING {MOVE_TASK_COLUMNS}"
    ))?
    .query_row([handle], move_task_row)
    .optional()
}

pub fn claim_move_tasks(
    c: &Connection,
    owner: &str,
    now_ms: i64,
    lease_until_ms: i64,
    limit: u32,
) -> rusqlite::Result<Vec<MoveTaskRecord>> {
    let mut stmt = c.prepare_cached(&format!(
        "UPDATE move_tasks SET owner = ?1, lease_until = ?3 WHERE id IN \
         (SELECT id FROM move_tasks WHERE status = 'RUNNING' AND lease_until <= ?2 \
          ORDER BY id LIMIT ?4) RETURNING {MOVE_TASK_COLUMNS}"
    ))?;
    let rows = stmt.query_map(
        params![owner, now_ms, lease_until_ms, limit as i64],
        move_task_row,
    )?;
    rows.collect()
}

pub fn finish_move_task(
    c: &Connection,
    lease: &MoveTaskLease,
    status: MoveTaskStatus,
    failure_reason: Option<&str>,
) -> rusqlite::Result<bool> {
    Ok(c.prepare_cached(
        "UPDATE move_tasks SET status = ?3, failure_reason = ?4, owner = NULL, \
             lease_until = 0 WHERE handle = ?1 AND owner = ?2 AND status = 'RUNNING'",
    )?
    .execute(params![
        lease.handle,
        lease.owner,
        status.as_str(),
        failure_reason
    ])? == 1)
}

pub fn release_move_tasks(c: &Connection, owner: &str) -> rusqlite::Result<()> {
    c.prepare_cached(
        "UPDATE move_tasks SET owner = NULL, lease_until = 0 WHERE owner = ?1 \
         AND status = 'RUNNING'",
    )?
    .execute([owner])?;
    Ok(())
}
