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

/// The statement selecting the ids of `table`'s (`queues`, `topics`) rows in one
/// account's and region's listing (`Store::list_queues_of`): with `bare`, the keys without
/// `/` (through the partial index `{table}_bare`, which holds those alone), and the keys
/// `?1` (a prefix ending in `/`) followed by a name without `/` (a range of the unique
/// index on `name`, up to `?2`, the prefix's range end). Neither reads another account's
/// rows. SQLite's BINARY collation compares the keys bytewise, as the range needs.
pub(super) fn listing_ids(table: &str, bare: bool) -> String {
    let prefixed = format!(
        "SELECT id FROM {table} WHERE name >= ?1 AND name < ?2 \
         AND instr(substr(name, length(?1) + 1), '/') = 0"
    );
    if bare {
        format!("SELECT id FROM {table} WHERE instr(name, '/') = 0 UNION ALL {prefixed}")
    } else {
        prefixed
    }
}

/// The statement reading `columns` of `table`'s (`queues`, `topics`) rows in one account's
/// and region's listing, by name: the rows [`listing_ids`] names, read straight from the
/// indexes in name order (with `bare`, SQLite merges the two ordered reads), so no sort
/// and no second lookup of each row (an `id IN (...)` form took a third longer on 20,000
/// rows of one account).
pub(super) fn listing_rows(table: &str, columns: &str, bare: bool) -> String {
    let prefixed = format!(
        "SELECT {columns} FROM {table} WHERE name >= ?1 AND name < ?2 \
         AND instr(substr(name, length(?1) + 1), '/') = 0"
    );
    if bare {
        format!(
            "SELECT {columns} FROM {table} WHERE instr(name, '/') = 0 \
             UNION ALL {prefixed} ORDER BY name"
        )
    } else {
        format!("{prefixed} ORDER BY name")
    }
}

/// The range end of `prefix` for [`listing_ids`]: its `?2`. A prefix not ending in `/`
/// matches no key (`key_in_listing`): the empty range `[prefix, prefix)`.
pub(super) fn listing_end(prefix: &str) -> String {
    loft_core::store::prefix_range_end(prefix).unwrap_or_else(|| prefix.to_owned())
}

/// The statement of [`list_queues_of`].
fn list_queues_of_sql(bare: bool) -> String {
    listing_rows("queues", QUEUE_COLUMNS, bare)
}

/// The queues of one account and region (`Store::list_queues_of`), by name.
pub fn list_queues_of(
    c: &Connection,
    prefix: &str,
    bare: bool,
) -> rusqlite::Result<Vec<QueueRecord>> {
    let mut stmt = c.prepare_cached(&list_queues_of_sql(bare))?;
    let rows = stmt.query_map(params![prefix, listing_end(prefix)], queue_row)?;
    rows.collect()
}

/// How many rows `table` (`queues` or `topics`) has.
pub fn count_rows(c: &Connection, table: &'static str) -> rusqlite::Result<u64> {
    c.prepare_cached(&format!("SELECT COUNT(*) FROM {table}"))?
        .query_row([], |r| r.get::<_, i64>(0))
        .map(|n| n as u64)
}

/// The statement of [`count_rows_of`] for a prefix ending in `/` (its range end `?3`).
fn count_rows_of_sql(table: &str) -> String {
    format!(
        "SELECT (SELECT COUNT(*) FROM {table} WHERE name >= ?1 AND name < ?3) \
              + (SELECT COUNT(*) FROM {table} WHERE ?2 AND instr(name, '/') = 0)"
    )
}

/// The rows of `table` (`queues`, `topics`) of one account: names starting with `prefix`,
/// and when `bare` names without `/` (`Store::count_queues_of`). An account's prefix
/// (`ACCOUNT/`) is counted as a range of the unique index on `name` and the bare names
/// through the partial index `{table}_bare`, so the count reads no other account's rows
/// (it runs before every create).
pub fn count_rows_of(
    c: &Connection,
    table: &'static str,
    prefix: &str,
    bare: bool,
) -> rusqlite::Result<u64> {
    let Some(end) = loft_core::store::prefix_range_end(prefix) else {
        return c
            .prepare_cached(&format!(
                "SELECT COUNT(*) FROM {table} \
                 WHERE substr(name, 1, length(?1)) = ?1 OR (?2 AND instr(name, '/') = 0)"
            ))?
            .query_row(params![prefix, bare], |r| r.get::<_, i64>(0))
            .map(|n| n as u64);
    };
    c.prepare_cached(&count_rows_of_sql(table))?
        .query_row(params![prefix, bare, end], |r| r.get::<_, i64>(0))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// SQLite's plan of `sql`: one line per step (`EXPLAIN QUERY PLAN`'s details).
    fn plan(c: &Connection, sql: &str) -> Vec<String> {
        let mut stmt = c.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
        // Unbound parameters are NULL: the plan is the statement's, whatever they are.
        let mut rows = stmt.raw_query();
        let mut steps = Vec::new();
        while let Some(row) = rows.next().unwrap() {
            steps.push(row.get::<_, String>(3).unwrap());
        }
        steps
    }

    /// The scoped listings read their rows through indexes, never by scanning a table or
    /// a whole index of every key (which reads every account's rows): the only scans are
    /// of the partial indexes of the bare keys,
    /// an account's prefix as a range of the unique index on `name`, a subscriber's
    /// subscriptions through `subscriptions_subscriber`.
    #[test]
    fn scoped_listings_read_through_indexes() {
        let mut c = Connection::open_in_memory().unwrap();
        crate::sqlite::migrations::migrate(&mut c).unwrap();
        for bare in [true, false] {
            let statements = [
                list_queues_of_sql(bare),
                super::super::topics::list_topics_of_sql(bare),
                super::super::topics::list_subscriptions_of_sql(bare),
            ];
            for sql in statements {
                let steps = plan(&c, &sql);
                for step in &steps {
                    assert!(
                        !step.starts_with("SCAN") || step.contains("_bare"),
                        "a scan of every account's rows in {sql}: {steps:?}"
                    );
                }
                if !sql.contains("subscriptions") {
                    assert!(
                        !steps.iter().any(|s| s.contains("TEMP B-TREE")),
                        "a listing by name sorts what its indexes give in order: {steps:?}"
                    );
                }
                let joined = steps.join("\n");
                assert_eq!(joined.contains("_bare"), bare, "{sql}: {steps:?}");
                assert!(
                    joined.contains("(name>? AND name<?)"),
                    "no range of the prefix in {sql}: {steps:?}"
                );
            }
        }
        for table in ["queues", "topics"] {
            let steps = plan(&c, &count_rows_of_sql(table));
            let joined = steps.join("\n");
            assert!(
                steps.iter().all(|s| {
                    !s.starts_with("SCAN") || s.contains("_bare") || s == "SCAN CONSTANT ROW"
                }) && joined.contains("_bare")
                    && joined.contains("(name>? AND name<?)"),
                "the count of one account's {table}: {steps:?}"
            );
        }
        let subs = plan(&c, &super::super::topics::list_subscriptions_of_sql(false));
        assert!(
            subs.iter().any(|s| s.contains("subscriptions_subscriber")),
            "{subs:?}"
        );
    }
}
