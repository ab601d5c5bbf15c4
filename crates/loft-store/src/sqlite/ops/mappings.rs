//! Event source mappings and their leases.

use rusqlite::ToSql;

use super::*;

// ----- event source mappings

const MAPPING_COLUMNS: &str = "uuid, function_arn, event_source_arn, batch_size, \
    batching_window, enabled, function_response_types, filter_patterns, maximum_concurrency, \
    last_modified, owner, lease_until, account";

fn list_json(items: &[String]) -> String {
    serde_json::to_string(items).unwrap_or_else(|_| "[]".into())
}

fn list_from_json(text: &str) -> Vec<String> {
    serde_json::from_str(text).unwrap_or_default()
}

/// Writes mapping `m` with `sql`: `?1` to `?9` are what both a create and an update
/// write (uuid, function_arn, batch_size, batching_window, enabled,
/// function_response_types, filter_patterns, maximum_concurrency, last_modified), `more`
/// follow from `?10`. The number of rows written.
fn write_mapping(
    c: &Connection,
    sql: &str,
    m: &EventSourceMappingRecord,
    more: &[&dyn ToSql],
) -> rusqlite::Result<usize> {
    let types = list_json(&m.function_response_types);
    let filters = list_json(&m.filter_patterns);
    let mut values = params![
        m.uuid,
        m.function_arn,
        m.batch_size,
        m.maximum_batching_window_seconds,
        m.enabled,
        types,
        filters,
        m.maximum_concurrency,
        m.last_modified_ms
    ]
    .to_vec();
    values.extend_from_slice(more);
    c.prepare_cached(sql)?.execute(&*values)
}

fn mapping_row(r: &Row<'_>) -> rusqlite::Result<EventSourceMappingRecord> {
    Ok(EventSourceMappingRecord {
        uuid: r.get(0)?,
        function_arn: r.get(1)?,
        event_source_arn: r.get(2)?,
        batch_size: r.get(3)?,
        maximum_batching_window_seconds: r.get(4)?,
        enabled: r.get(5)?,
        function_response_types: list_from_json(&r.get::<_, String>(6)?),
        filter_patterns: list_from_json(&r.get::<_, String>(7)?),
        maximum_concurrency: r.get(8)?,
        last_modified_ms: r.get(9)?,
        owner: r.get(10)?,
        lease_until_ms: r.get(11)?,
        account: r.get(12)?,
    })
}

pub fn create_event_source_mapping(
    c: &Connection,
    m: &EventSourceMappingRecord,
) -> rusqlite::Result<Option<String>> {
    let existing: Option<String> = c
        .prepare_cached(
            "SELECT uuid FROM event_source_mappings WHERE event_source_arn = ?1 \
             AND function_arn = ?2",
        )?
        .query_row(params![m.event_source_arn, m.function_arn], |r| r.get(0))
        .optional()?;
    if existing.is_some() {
        return Ok(existing);
    }
    // The values in MAPPING_COLUMNS' order; event_source_arn is `?10`, after what an
    // update writes too.
    write_mapping(
        c,
        &format!(
            "INSERT INTO event_source_mappings ({MAPPING_COLUMNS}) \
             VALUES (?1, ?2, ?10, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?11, ?12, ?13)"
        ),
        m,
        &[&m.event_source_arn, &m.owner, &m.lease_until_ms, &m.account],
    )?;
    Ok(None)
}

pub fn get_event_source_mapping(
    c: &Connection,
    uuid: &str,
) -> rusqlite::Result<Option<EventSourceMappingRecord>> {
    c.prepare_cached(&format!(
        "SELECT {MAPPING_COLUMNS} FROM event_source_mappings WHERE uuid = ?1"
    ))?
    .query_row([uuid], mapping_row)
    .optional()
}

pub fn list_event_source_mappings(
    c: &Connection,
) -> rusqlite::Result<Vec<EventSourceMappingRecord>> {
    let mut stmt = c.prepare_cached(&format!(
        "SELECT {MAPPING_COLUMNS} FROM event_source_mappings ORDER BY id"
    ))?;
    let rows = stmt.query_map([], mapping_row)?;
    rows.collect()
}

pub fn update_event_source_mapping(
    c: &Connection,
    m: &EventSourceMappingRecord,
) -> rusqlite::Result<bool> {
    Ok(write_mapping(
        c,
        "UPDATE event_source_mappings SET function_arn = ?2, batch_size = ?3, \
         batching_window = ?4, enabled = ?5, function_response_types = ?6, \
         filter_patterns = ?7, maximum_concurrency = ?8, last_modified = ?9 WHERE uuid = ?1",
        m,
        &[],
    )? == 1)
}

pub fn delete_event_source_mapping(c: &Connection, uuid: &str) -> rusqlite::Result<bool> {
    Ok(
        c.prepare_cached("DELETE FROM event_source_mappings WHERE uuid = ?1")?
            .execute([uuid])?
            == 1,
    )
}

pub fn claim_event_source_mappings(
    c: &Connection,
    owner: &str,
    now_ms: i64,
    lease_until_ms: i64,
    limit: u32,
) -> rusqlite::Result<Vec<EventSourceMappingRecord>> {
    let mut stmt = c.prepare_cached(&format!(
        "UPDATE event_source_mappings SET owner = ?1, lease_until = ?3 WHERE id IN \
         (SELECT id FROM event_source_mappings WHERE enabled AND lease_until <= ?2 \
          ORDER BY id LIMIT ?4) RETURNING {MAPPING_COLUMNS}"
    ))?;
    let rows = stmt.query_map(
        params![owner, now_ms, lease_until_ms, limit as i64],
        mapping_row,
    )?;
    let mut out: Vec<EventSourceMappingRecord> = rows.collect::<rusqlite::Result<_>>()?;
    out.sort_by(|a, b| a.uuid.cmp(&b.uuid));
    Ok(out)
}

pub fn renew_event_source_mapping(
    c: &Connection,
    uuid: &str,
    owner: &str,
    lease_until_ms: i64,
) -> rusqlite::Result<Option<EventSourceMappingRecord>> {
    c.prepare_cached(&format!(
        "UPDATE event_source_mappings SET lease_until = ?3 WHERE uuid = ?1 AND owner = ?2 \
         RETURNING {MAPPING_COLUMNS}"
    ))?
    .query_row(params![uuid, owner, lease_until_ms], mapping_row)
    .optional()
}

pub fn release_event_source_mappings(c: &Connection, owner: &str) -> rusqlite::Result<()> {
    c.prepare_cached(
        "UPDATE event_source_mappings SET owner = NULL, lease_until = 0 WHERE owner = ?1",
    )?
    .execute([owner])?;
    Ok(())
}
