//! Queues: create, read, attributes, tags, deletion holds.

use super::*;

// ----- queues

const QUEUE_COLUMNS: &str = "id, name, attributes, tags, created_at, modified_at";

fn queue_row(r: &Row<'_>) -> rusqlite::Result<QueueRecord> {
    Ok(QueueRecord {
        id: r.get(0)?,
        name: r.get(1)?,
        attributes: from_json(&r.get::<_, String>(2)?),
        tags: from_json(&r.get::<_, String>(3)?),
        created_at_ms: r.get(4)?,
        modified_at_ms: r.get(5)?,
    })
}

pub fn create_queue(
    c: &Connection,
    name: &str,
    attributes: &Map,
    tags: &Map,
    now_ms: i64,
) -> rusqlite::Result<(QueueRecord, bool)> {
    let inserted = c
        .prepare_cached(
            "INSERT INTO queues (name, attributes, tags, created_at, modified_at) \
             VALUES (?1, ?2, ?3, ?4, ?4) ON CONFLICT(name) DO NOTHING",
        )?
        .execute(params![name, to_json(attributes), to_json(tags), now_ms])?;
    let queue = get_queue(c, name)?.ok_or(rusqlite::Error::QueryReturnedNoRows)?;
    Ok((queue, inserted == 1))
}

pub fn get_queue(c: &Connection, name: &str) -> rusqlite::Result<Option<QueueRecord>> {
    c.prepare_cached(&format!(
        "SELECT {QUEUE_COLUMNS} FROM queues WHERE name = ?1"
    ))?
    .query_row([name], queue_row)
    .optional()
}

pub fn list_queues(c: &Connection) -> rusqlite::Result<Vec<QueueRecord>> {
    let mut stmt =
        c.prepare_cached(&format!("SELECT {QUEUE_COLUMNS} FROM queues ORDER BY name"))?;
    let rows = stmt.query_map([], queue_row)?;
    rows.collect()
}

/// How many rows `table` (`queues` or `topics`) has.
pub fn count_rows(c: &Connection, table: &'static str) -> rusqlite::Result<u64> {
    c.prepare_cached(&format!("SELECT COUNT(*) FROM {table}"))?
        .query_row([], |r| r.get::<_, i64>(0))
        .map(|n| n as u64)
}

/// The rows of `table` (`queues`, `topics`) of one account: names starting with `prefix`,
/// and when `bare` names without `/` (`Store::count_queues_of`).
pub fn count_rows_of(
    c: &Connection,
    table: &'static str,
    prefix: &str,
    bare: bool,
) -> rusqlite::Result<u64> {
    c.prepare_cached(&format!(
        "SELECT COUNT(*) FROM {table} \
         WHERE substr(name, 1, length(?1)) = ?1 OR (?2 AND instr(name, '/') = 0)"
    ))?
    .query_row(params![prefix, bare], |r| r.get::<_, i64>(0))
    .map(|n| n as u64)
}

pub fn delete_queue(
    c: &Connection,
    queue_id: i64,
    recreate_after_ms: i64,
) -> rusqlite::Result<bool> {
    c.prepare_cached("DELETE FROM fifo_dedup WHERE queue_id = ?1")?
        .execute([queue_id])?;
    c.prepare_cached("DELETE FROM receive_attempts WHERE queue_id = ?1")?
        .execute([queue_id])?;
    c.prepare_cached("DELETE FROM messages WHERE queue_id = ?1")?
        .execute([queue_id])?;
    let name: Option<String> = c
        .prepare_cached("DELETE FROM queues WHERE id = ?1 RETURNING name")?
        .query_row([queue_id], |r| r.get(0))
        .optional()?;
    let Some(name) = name else {
        return Ok(false);
    };
    c.prepare_cached(
        "INSERT INTO deleted_queues (name, hold_until) VALUES (?1, ?2) \
         ON CONFLICT (name) DO UPDATE SET hold_until = excluded.hold_until",
    )?
    .execute(params![name, recreate_after_ms])?;
    Ok(true)
}

pub fn queue_recreate_after(c: &Connection, name: &str) -> rusqlite::Result<Option<i64>> {
    c.prepare_cached("SELECT hold_until FROM deleted_queues WHERE name = ?1")?
        .query_row([name], |r| r.get(0))
        .optional()
}

pub fn set_queue_attributes(
    c: &Connection,
    queue_id: i64,
    attributes: &Map,
    now_ms: i64,
) -> rusqlite::Result<()> {
    c.prepare_cached("UPDATE queues SET attributes = ?2, modified_at = ?3 WHERE id = ?1")?
        .execute(params![queue_id, to_json(attributes), now_ms])?;
    Ok(())
}

pub fn set_queue_tags(c: &Connection, queue_id: i64, tags: &Map) -> rusqlite::Result<()> {
    c.prepare_cached("UPDATE queues SET tags = ?2 WHERE id = ?1")?
        .execute(params![queue_id, to_json(tags)])?;
    Ok(())
}
