//! Queues: create, read, attributes, tags, deletion holds.

use super::*;

// ----- queues

const QUEUE_COLUMNS: &str = "id, name, attributes, tags, created_at, modified_at";

fn queue_row(r: &Row) -> QueueRecord {
    QueueRecord {
        id: r.get(0),
        name: r.get(1),
        attributes: from_json(r.get(2)),
        tags: from_json(r.get(3)),
        created_at_ms: r.get(4),
        modified_at_ms: r.get(5),
    }
}

/// Creates the queue `name` unless one has that name, and returns its record and whether
/// this call created it. A new queue's number sequence (`queue_sequence!`) is made before
/// its row: the queue's id is drawn from `queues`' own sequence first, so no node ever sees
/// a queue without its sequence (a crash in between leaves only an unused sequence). When
/// another call created the name first, the sequence made for the id drawn is dropped.
///
/// Errors: a statement fails.
pub async fn create_queue<C: GenericClient>(
    c: &C,
    name: &str,
    attributes: &Map,
    tags: &Map,
    now_ms: i64,
) -> Result<(QueueRecord, bool), Error> {
    let insert = format!(
        "INSERT INTO queues (id, name, attributes, tags, created_at, modified_at) \
         VALUES ($5, $1, $2, $3, $4, $4) ON CONFLICT (name) DO NOTHING RETURNING {QUEUE_COLUMNS}"
    );
    let (attributes, tags) = (to_json(attributes), to_json(tags));
    loop {
        if let Some(r) = query_opt(c, &select_queue(), &[&name]).await? {
            return Ok((queue_row(&r), false));
        }
        let id: i64 = query_one(
            c,
            "SELECT nextval(pg_get_serial_sequence('queues', 'id'))",
            &[],
        )
        .await?
        .get(0);
        let sequence = queue_sequence_name(id);
        c.batch_execute(&format!("CREATE SEQUENCE IF NOT EXISTS {sequence}"))
            .await?;
        let params: Params = &[&name, &attributes, &tags, &now_ms, &id];
        if let Some(r) = query_opt(c, &insert, params).await? {
            return Ok((queue_row(&r), true));
        }
        drop_queue_sequences(c, &[id]).await;
    }
}

/// Drops the number sequences (`queue_sequence!`) of the queues `ids`, which are gone.
/// A failure is logged, not returned: the queues are deleted already, and a sequence left
/// behind is only unused (no queue id is given twice).
pub async fn drop_queue_sequences<C: GenericClient>(c: &C, ids: &[i64]) {
    for chunk in ids.chunks(500) {
        let names: Vec<String> = chunk.iter().map(|id| queue_sequence_name(*id)).collect();
        let sql = format!("DROP SEQUENCE IF EXISTS {}", names.join(", "));
        if let Err(e) = c.batch_execute(&sql).await {
            tracing::warn!(error = %e, "cannot drop the number sequences of deleted queues");
        }
    }
}

/// The statement of the queue named `$1`.
fn select_queue() -> String {
    format!("SELECT {QUEUE_COLUMNS} FROM queues WHERE name = $1")
}

pub async fn get_queue<C: GenericClient>(c: &C, name: &str) -> Result<Option<QueueRecord>, Error> {
    Ok(query_opt(c, &select_queue(), &[&name])
        .await?
        .as_ref()
        .map(queue_row))
}

pub async fn list_queues<C: GenericClient>(c: &C) -> Result<Vec<QueueRecord>, Error> {
    let sql = format!("SELECT {QUEUE_COLUMNS} FROM queues ORDER BY name");
    Ok(query(c, &sql, &[]).await?.iter().map(queue_row).collect())
}

/// The statement selecting the ids of `table`'s (`queues`, `topics`) rows in one
/// account's and region's listing (`Store::list_queues_of`): with `bare`, the keys without
/// `/` (the partial index `{table}_bare` holds those alone), and the keys `$1` (a prefix
/// ending in `/`) followed by a name without `/` (a range of `{table}_name_bytes`, in the
/// "C" collation, up to `$2`, the prefix's range end). Neither reads another account's
/// rows.
pub(super) fn listing_ids(table: &str, bare: bool) -> String {
    let prefixed = format!(
        "SELECT id FROM {table} WHERE name COLLATE \"C\" >= $1 AND name COLLATE \"C\" < $2 \
         AND strpos(substr(name, length($1) + 1), '/') = 0"
    );
    if bare {
        format!("SELECT id FROM {table} WHERE strpos(name, '/') = 0 UNION ALL {prefixed}")
    } else {
        prefixed
    }
}

/// The statement reading `columns` of `table`'s (`queues`, `topics`) rows in one account's
/// and region's listing, by name: the rows [`listing_ids`] names, read straight from the
/// indexes (no second lookup of each row by id).
pub(super) fn listing_rows(table: &str, columns: &str, bare: bool) -> String {
    let prefixed = format!(
        "SELECT {columns} FROM {table} \
         WHERE name COLLATE \"C\" >= $1 AND name COLLATE \"C\" < $2 \
         AND strpos(substr(name, length($1) + 1), '/') = 0"
    );
    if bare {
        format!(
            "SELECT {columns} FROM {table} WHERE strpos(name, '/') = 0 \
             UNION ALL {prefixed} ORDER BY name"
        )
    } else {
        format!("{prefixed} ORDER BY name")
    }
}

/// The range end of `prefix` for [`listing_ids`]: its `$2`. A prefix not ending in `/`
/// matches no key (`key_in_listing`): the empty range `[prefix, prefix)`.
pub(super) fn listing_end(prefix: &str) -> String {
    loft_core::store::prefix_range_end(prefix).unwrap_or_else(|| prefix.to_owned())
}

/// The queues of one account and region (`Store::list_queues_of`), by name.
pub async fn list_queues_of<C: GenericClient>(
    c: &C,
    prefix: &str,
    bare: bool,
) -> Result<Vec<QueueRecord>, Error> {
    let sql = listing_rows("queues", QUEUE_COLUMNS, bare);
    let end = listing_end(prefix);
    Ok(query(c, &sql, &[&prefix, &end])
        .await?
        .iter()
        .map(queue_row)
        .collect())
}

/// How many rows `table` (`queues` or `topics`) has.
pub async fn count_rows<C: GenericClient>(c: &C, table: &'static str) -> Result<u64, Error> {
    let sql = format!("SELECT count(*) FROM {table}");
    Ok(query_one(c, &sql, &[]).await?.get::<_, i64>(0) as u64)
}

/// The rows of `table` (`queues`, `topics`) of one account: names starting with `prefix`,
/// and when `bare` names without `/` (`Store::count_queues_of`). An account's prefix
/// (`ACCOUNT/`) is counted as a range of `{table}_name_bytes` and the bare names through
/// the partial index `{table}_bare`, so the count reads no other account's rows (it runs
/// before every create).
pub async fn count_rows_of<C: GenericClient>(
    c: &C,
    table: &'static str,
    prefix: &str,
    bare: bool,
) -> Result<u64, Error> {
    let Some(end) = loft_core::store::prefix_range_end(prefix) else {
        let sql = format!(
            "SELECT count(*) FROM {table} \
             WHERE starts_with(name, $1) OR ($2 AND strpos(name, '/') = 0)"
        );
        return Ok(query_one(c, &sql, &[&prefix, &bare])
            .await?
            .get::<_, i64>(0) as u64);
    };
    let sql = format!(
        "SELECT (SELECT count(*) FROM {table} \
                 WHERE name COLLATE \"C\" >= $1 AND name COLLATE \"C\" < $3) \
              + (SELECT count(*) FROM {table} WHERE $2 AND strpos(name, '/') = 0)"
    );
    Ok(query_one(c, &sql, &[&prefix, &bare, &end])
        .await?
        .get::<_, i64>(0) as u64)
}

pub async fn delete_queue<C: GenericClient>(
    c: &C,
    queue_id: i64,
    recreate_after_ms: i64,
) -> Result<bool, Error> {
    let row = query_one(
        c,
        "WITH d AS (DELETE FROM fifo_dedup WHERE queue_id = $1), \
              a AS (DELETE FROM receive_attempts WHERE queue_id = $1), \
              m AS (DELETE FROM messages WHERE queue_id = $1), \
              q AS (DELETE FROM queues WHERE id = $1 RETURNING name), \
              h AS (INSERT INTO deleted_queues (name, hold_until) SELECT name, $2 FROM q \
                    ON CONFLICT (name) DO UPDATE SET hold_until = EXCLUDED.hold_until \
                    RETURNING 1) \
         SELECT (SELECT count(*) FROM q), (SELECT count(*) FROM h)",
        &[&queue_id, &recreate_after_ms],
    )
    .await?;
    let deleted = row.get::<_, i64>(0) == 1;
    if deleted {
        drop_queue_sequences(c, &[queue_id]).await;
    }
    Ok(deleted)
}

pub async fn queue_recreate_after<C: GenericClient>(
    c: &C,
    name: &str,
) -> Result<Option<i64>, Error> {
    Ok(query_opt(
        c,
        "SELECT hold_until FROM deleted_queues WHERE name = $1",
        &[&name],
    )
    .await?
    .map(|r| r.get(0)))
}

pub async fn set_queue_attributes<C: GenericClient>(
    c: &C,
    queue_id: i64,
    attributes: &Map,
    now_ms: i64,
) -> Result<(), Error> {
    execute(
        c,
        "UPDATE queues SET attributes = $2, modified_at = $3 WHERE id = $1",
        &[&queue_id, &to_json(attributes), &now_ms],
    )
    .await
    .map(drop)
}

pub async fn set_queue_tags<C: GenericClient>(
    c: &C,
    queue_id: i64,
    tags: &Map,
) -> Result<(), Error> {
    execute(
        c,
        "UPDATE queues SET tags = $2 WHERE id = $1",
        &[&queue_id, &to_json(tags)],
    )
    .await
    .map(drop)
}
