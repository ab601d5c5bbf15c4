//! Resetting state (`Store::reset`).

use super::*;

// ----- reset

/// [`loft_core::store::Store::reset`] in one statement (so one transaction, one round
/// trip): every data-modifying CTE reads the snapshot from before the statement, so the
/// queue and topic ids are those that existed. Wakes every node's long polls and makes
/// them forget their cached queue records (`pg_notify(channel, '-1')`, sent at commit).
/// The deleted queues' number sequences are dropped after it ([`drop_queue_sequences`]).
pub async fn reset<C: GenericClient>(
    c: &C,
    scope: Option<&ResetScope>,
    channel: &str,
) -> Result<ResetCounts, Error> {
    let b = ResetBinds::of(scope);
    let keys = |col: &str| {
        format!("($1 OR ($2 AND strpos({col}, '/') = 0) OR left({col}, length($3)) = $3)")
    };
    let sql = format!(
        "WITH q AS (SELECT id FROM queues WHERE {queues}), \
              t AS (SELECT id FROM topics WHERE {topics}), \
              s AS (SELECT uuid FROM subscriptions WHERE topic_id IN (SELECT id FROM t)), \
              fd AS (DELETE FROM fifo_dedup WHERE queue_id IN (SELECT id FROM q)), \
              ra AS (DELETE FROM receive_attempts WHERE queue_id IN (SELECT id FROM q)), \
              m AS (DELETE FROM messages WHERE queue_id IN (SELECT id FROM q) RETURNING 1), \
              mt AS (DELETE FROM move_tasks WHERE {tasks} RETURNING 1), \
              dq AS (DELETE FROM queues WHERE id IN (SELECT id FROM q) RETURNING id), \
              h AS (DELETE FROM deleted_queues WHERE {holds}), \
              dl AS (DELETE FROM deliveries WHERE $1 OR subscription IN (SELECT uuid FROM s) \
                     RETURNING 1), \
              rp AS (DELETE FROM subscription_replays WHERE topic_id IN (SELECT id FROM t)), \
              td AS (DELETE FROM topic_dedup WHERE topic_id IN (SELECT id FROM t)), \
              ta AS (DELETE FROM topic_archive WHERE topic_id IN (SELECT id FROM t)), \
              ds AS (DELETE FROM subscriptions WHERE topic_id IN (SELECT id FROM t) RETURNING 1), \
              dt AS (DELETE FROM topics WHERE id IN (SELECT id FROM t) RETURNING 1), \
              em AS (DELETE FROM event_source_mappings WHERE $1 OR account = $4 \
                     OR ($2 AND account IS NULL) RETURNING 1), \
              rm AS (DELETE FROM recorded_messages WHERE $1 OR account = $5 RETURNING 1), \
              pe AS (DELETE FROM platform_endpoints WHERE $1 OR split_part(arn, ':', 5) = $4 \
                     RETURNING 1), \
              pa AS (DELETE FROM platform_applications WHERE $1 \
                     OR split_part(arn, ':', 5) = $4 RETURNING 1), \
              sm AS (DELETE FROM sms_attributes WHERE $1 OR split_part(scope, ':', 1) = $4), \
              sb AS (DELETE FROM sms_sandbox_numbers WHERE $1 \
                     OR split_part(scope, ':', 1) = $4), \
              w AS (SELECT pg_notify($6, '-1')) \
         SELECT (SELECT array_agg(id) FROM dq), (SELECT count(*) FROM m), \
                (SELECT count(*) FROM dt), (SELECT count(*) FROM ds), \
                (SELECT count(*) FROM dl), (SELECT count(*) FROM em), \
                (SELECT count(*) FROM mt), (SELECT count(*) FROM rm), \
                (SELECT count(*) FROM pe) + (SELECT count(*) FROM pa), \
                (SELECT count(*) FROM w)",
        queues = keys("name"),
        topics = keys("name"),
        tasks = keys("source_queue"),
        holds = keys("name"),
    );
    let row = query_one(
        c,
        &sql,
        &[
            &b.all,
            &b.default_account,
            &b.prefix,
            &b.account,
            &b.recorded,
            &channel,
        ],
    )
    .await?;
    let count = |i: usize| row.get::<_, i64>(i) as u64;
    let queue_ids: Vec<i64> = row.get::<_, Option<Vec<i64>>>(0).unwrap_or_default();
    drop_queue_sequences(c, &queue_ids).await;
    Ok(ResetCounts {
        queues: queue_ids.len() as u64,
        messages: count(1),
        topics: count(2),
        subscriptions: count(3),
        deliveries: count(4),
        mappings: count(5),
        move_tasks: count(6),
        recordings: count(7),
        platforms: count(8),
        queue_ids,
    })
}
