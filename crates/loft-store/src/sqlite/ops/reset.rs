//! Resetting state (`Store::reset`).

use super::*;

// ----- reset

/// [`loft_core::store::Store::reset`]: every statement runs in the caller's transaction.
/// Queue and topic keys are matched by `(:all OR (:dflt AND no separator) OR prefix)`,
/// the account columns by `:account` (and `:recorded`, the recorded messages' form).
pub fn reset(c: &Connection, scope: Option<&ResetScope>) -> rusqlite::Result<ResetCounts> {
    let ResetBinds {
        all,
        default_account: dflt,
        prefix,
        account,
        recorded,
    } = ResetBinds::of(scope);
    let keys = |col: &str| {
        format!(
            "(:all OR (:dflt AND instr({col}, '/') = 0) \
             OR substr({col}, 1, length(:prefix)) = :prefix)"
        )
    };
    let by_key = |sql: String| -> rusqlite::Result<u64> {
        c.prepare(&sql)?
            .execute(rusqlite::named_params! {":all": all, ":dflt": dflt, ":prefix": prefix})
            .map(|n| n as u64)
    };
    let by_account = |sql: &str| -> rusqlite::Result<u64> {
        c.prepare(sql)?
            .execute(rusqlite::named_params! {":all": all, ":account": account})
            .map(|n| n as u64)
    };
    let mut out = ResetCounts::default();
    let queues = format!("SELECT id FROM queues WHERE {}", keys("name"));
    for table in ["fifo_dedup", "receive_attempts"] {
        by_key(format!("DELETE FROM {table} WHERE queue_id IN ({queues})"))?;
    }
    out.messages = by_key(format!("DELETE FROM messages WHERE queue_id IN ({queues})"))?;
    out.move_tasks = by_key(format!(
        "DELETE FROM move_tasks WHERE {}",
        keys("source_queue")
    ))?;
    out.queue_ids = c
        .prepare(&format!(
            "DELETE FROM queues WHERE {} RETURNING id",
            keys("name")
        ))?
        .query_map(
            rusqlite::named_params! {":all": all, ":dflt": dflt, ":prefix": prefix},
            |r| r.get(0),
        )?
        .collect::<rusqlite::Result<Vec<i64>>>()?;
    out.queues = out.queue_ids.len() as u64;
    by_key(format!("DELETE FROM deleted_queues WHERE {}", keys("name")))?;
    let topics = format!("SELECT id FROM topics WHERE {}", keys("name"));
    out.deliveries = by_key(format!(
        "DELETE FROM deliveries WHERE subscription IN \
         (SELECT uuid FROM subscriptions WHERE topic_id IN ({topics}))"
    ))?;
    if all {
        // Deliveries of no subscription left (their topic deleted before): every account's.
        out.deliveries += c.execute("DELETE FROM deliveries", [])? as u64;
    }
    for table in ["subscription_replays", "topic_dedup", "topic_archive"] {
        by_key(format!("DELETE FROM {table} WHERE topic_id IN ({topics})"))?;
    }
    out.subscriptions = by_key(format!(
        "DELETE FROM subscriptions WHERE topic_id IN ({topics})"
    ))?;
    out.topics = by_key(format!("DELETE FROM topics WHERE {}", keys("name")))?;
    out.mappings = c
        .prepare(
            "DELETE FROM event_source_mappings WHERE :all OR account = :account \
             OR (:dflt AND account IS NULL)",
        )?
        .execute(rusqlite::named_params! {":all": all, ":account": account, ":dflt": dflt})?
        as u64;
    out.recordings =
        c.prepare("DELETE FROM recorded_messages WHERE :all OR account = :recorded")?
            .execute(rusqlite::named_params! {":all": all, ":recorded": recorded})? as u64;
    for table in ["platform_endpoints", "platform_applications"] {
        out.platforms += by_account(&format!(
            "DELETE FROM {table} WHERE :all OR arn LIKE 'arn:%:%:%:' || :account || ':%'"
        ))?;
    }
    by_account("DELETE FROM sms_attributes WHERE :all OR scope LIKE :account || ':%'")?;
    by_account("DELETE FROM sms_sandbox_numbers WHERE :all OR scope LIKE :account || ':%'")?;
    Ok(out)
}
