//! Event source mappings and their leases.

use super::*;

// ----- event source mappings

const MAPPING_COLUMNS: &str = "uuid, function_arn, event_source_arn, batch_size, \
    batching_window, enabled, function_response_types, filter_patterns, maximum_concurrency, \
    last_modified, owner, lease_until, account";

fn list_json(items: &[String]) -> String {
    serde_json::to_string(items).unwrap_or_else(|_| "[]".into())
}

/// Writes mapping `m` with `sql`: `$1` to `$9` are what both a create and an update
/// write (uuid, function_arn, batch_size, batching_window, enabled,
/// function_response_types, filter_patterns, maximum_concurrency, last_modified), `more`
/// follow from `$10`. The number of rows written.
async fn write_mapping<C: GenericClient>(
    c: &C,
    sql: &str,
    m: &EventSourceMappingRecord,
    more: Params<'_>,
) -> Result<u64, Error> {
    let types = list_json(&m.function_response_types);
    let filters = list_json(&m.filter_patterns);
    let mut params: Vec<&(dyn ToSql + Sync)> = vec![
        &m.uuid,
        &m.function_arn,
        &m.batch_size,
        &m.maximum_batching_window_seconds,
        &m.enabled,
        &types,
        &filters,
        &m.maximum_concurrency,
        &m.last_modified_ms,
    ];
    params.extend_from_slice(more);
    execute(c, sql, &params).await
}

fn mapping_row(r: &Row) -> EventSourceMappingRecord {
    let types: &str = r.get(6);
    let filters: &str = r.get(7);
    EventSourceMappingRecord {
        uuid: r.get(0),
        function_arn: r.get(1),
        event_source_arn: r.get(2),
        batch_size: r.get(3),
        maximum_batching_window_seconds: r.get(4),
        enabled: r.get(5),
        function_response_types: serde_json::from_str(types).unwrap_or_default(),
        filter_patterns: serde_json::from_str(filters).unwrap_or_default(),
        maximum_concurrency: r.get(8),
        last_modified_ms: r.get(9),
        owner: r.get(10),
        lease_until_ms: r.get(11),
        account: r.get(12),
    }
}

/// Inserts the mapping unless its (event source, function) pair exists; the unique index
/// settles two concurrent creates, and the loser reads the winner's UUID.
pub async fn create_event_source_mapping<C: GenericClient>(
    c: &C,
    m: &EventSourceMappingRecord,
) -> Result<Option<String>, Error> {
    // The values in MAPPING_COLUMNS' order; event_source_arn is `$10`, after what an
    // update writes too.
    let inserted = write_mapping(
        c,
        &format!(
            "INSERT INTO event_source_mappings ({MAPPING_COLUMNS}) \
             VALUES ($1, $2, $10, $3, $4, $5, $6, $7, $8, $9, $11, $12, $13) \
             ON CONFLICT DO NOTHING"
        ),
        m,
        &[&m.event_source_arn, &m.owner, &m.lease_until_ms, &m.account],
    )
    .await?;
    if inserted == 1 {
        return Ok(None);
    }
    let row = query_opt(
        c,
        "SELECT uuid FROM event_source_mappings WHERE event_source_arn = $1 \
         AND function_arn = $2",
        &[&m.event_source_arn, &m.function_arn],
    )
    .await?;
    match row {
        Some(r) => Ok(Some(r.get(0))),
        // The conflict was on the UUID itself.
        None => Ok(Some(m.uuid.clone())),
    }
}

pub async fn get_event_source_mapping<C: GenericClient>(
    c: &C,
    uuid: &str,
) -> Result<Option<EventSourceMappingRecord>, Error> {
    let sql = format!("SELECT {MAPPING_COLUMNS} FROM event_source_mappings WHERE uuid = $1");
    Ok(query_opt(c, &sql, &[&uuid])
        .await?
        .as_ref()
        .map(mapping_row))
}

pub async fn list_event_source_mappings<C: GenericClient>(
    c: &C,
) -> Result<Vec<EventSourceMappingRecord>, Error> {
    let sql = format!("SELECT {MAPPING_COLUMNS} FROM event_source_mappings ORDER BY id");
    Ok(query(c, &sql, &[]).await?.iter().map(mapping_row).collect())
}

pub async fn update_event_source_mapping<C: GenericClient>(
    c: &C,
    m: &EventSourceMappingRecord,
) -> Result<bool, Error> {
    Ok(write_mapping(
        c,
        "UPDATE event_source_mappings SET function_arn = $2, batch_size = $3, \
         batching_window = $4, enabled = $5, function_response_types = $6, \
         filter_patterns = $7, maximum_concurrency = $8, last_modified = $9 WHERE uuid = $1",
        m,
        &[],
    )
    .await?
        == 1)
}

pub async fn delete_event_source_mapping<C: GenericClient>(
    c: &C,
    uuid: &str,
) -> Result<bool, Error> {
    Ok(execute(
        c,
        "DELETE FROM event_source_mappings WHERE uuid = $1",
        &[&uuid],
    )
    .await?
        == 1)
}

/// Leases mappings whose lease ended; rows another node is claiming are skipped.
pub async fn claim_event_source_mappings<C: GenericClient>(
    c: &C,
    owner: &str,
    now_ms: i64,
    lease_until_ms: i64,
    limit: u32,
) -> Result<Vec<EventSourceMappingRecord>, Error> {
    let sql = format!(
        "UPDATE event_source_mappings SET owner = $1, lease_until = $3 WHERE id IN \
         (SELECT id FROM event_source_mappings WHERE enabled AND lease_until <= $2 \
          ORDER BY id LIMIT $4 FOR UPDATE SKIP LOCKED) RETURNING {MAPPING_COLUMNS}"
    );
    let mut out: Vec<EventSourceMappingRecord> = query(
        c,
        &sql,
        &[&owner, &now_ms, &lease_until_ms, &(limit as i64)],
    )
    .await?
    .iter()
    .map(mapping_row)
    .collect();
    out.sort_by(|a, b| a.uuid.cmp(&b.uuid));
    Ok(out)
}

pub async fn renew_event_source_mapping<C: GenericClient>(
    c: &C,
    uuid: &str,
    owner: &str,
    lease_until_ms: i64,
) -> Result<Option<EventSourceMappingRecord>, Error> {
    let sql = format!(
        "UPDATE event_source_mappings SET lease_until = $3 WHERE uuid = $1 AND owner = $2 \
         RETURNING {MAPPING_COLUMNS}"
    );
    Ok(query_opt(c, &sql, &[&uuid, &owner, &lease_until_ms])
        .await?
        .as_ref()
        .map(mapping_row))
}

pub async fn release_event_source_mappings<C: GenericClient>(
    c: &C,
    owner: &str,
) -> Result<(), Error> {
    execute(
        c,
        "UPDATE event_source_mappings SET owner = NULL, lease_until = 0 WHERE owner = $1",
        &[&owner],
    )
    .await
    .map(drop)
}
