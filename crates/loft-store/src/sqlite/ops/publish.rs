//! Publishing to topics: fan-out, FIFO topics, the archive and replays, pending deliveries, recorded messages.

use super::*;

// ----- publish and deliveries

pub fn publish(
    c: &Connection,
    seqs: &MessageSeqs,
    messages: &[(i64, NewMessage)],
    deliveries: &[NewDelivery],
    records: &[RecordedMessage],
) -> rusqlite::Result<Vec<SentMessage>> {
    let sent = send_messages(c, seqs, messages)?;
    let mut insert = c.prepare_cached(
        "INSERT INTO deliveries (subscription, endpoint, content_type, headers, body, next_at, \
         created_at, sealed) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, ?7)",
    )?;
    for d in deliveries {
        let headers = serde_json::to_string(&d.headers).unwrap_or_else(|_| "[]".into());
        insert.execute(params![
            d.subscription,
            d.endpoint,
            d.content_type,
            headers,
            d.body,
            d.due_at_ms,
            d.seal.is_some() as i64
        ])?;
    }
    let mut record = c.prepare_cached(
        "INSERT INTO recorded_messages (protocol, endpoint, topic_arn, subject, message, \
         created_at, sender, sealed, account) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?;
    for r in records {
        record.execute(params![
            r.protocol,
            r.endpoint,
            r.topic_arn,
            r.subject,
            r.message,
            r.created_at_ms,
            r.sender,
            r.seal.is_some() as i64,
            r.account
        ])?;
    }
    Ok(sent)
}

/// A FIFO topic publish: the topic's row holds its sequence; the writer runs one
/// transaction at a time, so nothing else publishes to the topic meanwhile.
pub fn publish_fifo(
    c: &Connection,
    seqs: &MessageSeqs,
    p: &SealedFifoPublish,
) -> rusqlite::Result<Option<Vec<FifoPublished>>> {
    let (topic_id, now_ms) = (p.topic_id(), p.now_ms());
    let sequence: Option<i64> = c
        .prepare_cached("SELECT sequence FROM topics WHERE id = ?1")?
        .query_row([topic_id], |r| r.get(0))
        .optional()?;
    let Some(mut sequence) = sequence else {
        return Ok(None);
    };
    let mut seen = c.prepare_cached(
        "SELECT message_id, sequence FROM topic_dedup WHERE topic_id = ?1 AND scope = ?2 \
         AND dedup_id = ?3 AND expires_at > ?4",
    )?;
    let mut record = c.prepare_cached(
        "INSERT OR REPLACE INTO topic_dedup (topic_id, scope, dedup_id, message_id, sequence, \
         expires_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?;
    let held = held_subscriptions(c, topic_id)?;
    let mut out = Vec::with_capacity(p.entries().len());
    for (i, e) in p.entries().iter().enumerate() {
        let original: Option<(String, i64)> = seen
            .query_row(params![topic_id, e.dedup.scope, e.dedup.id, now_ms], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .optional()?;
        if let Some((message_id, sequence)) = original {
            out.push(FifoPublished {
                message_id,
                sequence,
                duplicate: true,
                sent: Vec::new(),
            });
            continue;
        }
        sequence += 1;
        record.execute(params![
            topic_id,
            e.dedup.scope,
            e.dedup.id,
            e.message_id,
            sequence,
            e.dedup.expires_at_ms
        ])?;
        if let Some(a) = &e.archive {
            c.prepare_cached(
                "INSERT OR REPLACE INTO topic_archive (topic_id, sequence, message_id, \
                 published_at, expires_at, published, sealed) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?
            .execute(params![
                topic_id,
                sequence,
                e.message_id,
                now_ms,
                a.expires_at_ms,
                a.published,
                a.seal.is_some() as i64
            ])?;
        }
        let built = p
            .fanout(i, sequence)
            .map_err(|e| rusqlite::Error::ToSqlConversionFailure(e.message.into()))?;
        let (kept, is_held) = drop_held(built, &e.subscriptions, &held);
        let stored = send_messages(c, seqs, &kept)?;
        let sent = merge_held(stored, &is_held);
        out.push(FifoPublished {
            message_id: e.message_id.clone(),
            sequence,
            duplicate: false,
            sent,
        });
    }
    c.prepare_cached("UPDATE topics SET sequence = ?2 WHERE id = ?1")?
        .execute(params![topic_id, sequence])?;
    Ok(Some(out))
}

/// The subscriptions of topic `topic_id` whose replay holds live messages.
fn held_subscriptions(c: &Connection, topic_id: i64) -> rusqlite::Result<HashSet<String>> {
    let held = c
        .prepare_cached(
            "SELECT subscription FROM subscription_replays WHERE topic_id = ?1 AND hold_live = 1",
        )?
        .query_map([topic_id], |r| r.get(0))?
        .collect::<rusqlite::Result<HashSet<String>>>()?;
    Ok(held)
}

const REPLAY_COLUMNS: &str = "subscription, topic_id, replay_id, starting_at, ending_at, cursor, \
    status, hold_live, failure, owner, lease_until";

fn replay_row(r: &rusqlite::Row) -> rusqlite::Result<ReplayRecord> {
    let status: String = r.get(6)?;
    Ok(ReplayRecord {
        subscription: r.get(0)?,
        topic_id: r.get(1)?,
        replay_id: r.get(2)?,
        starting_at_ms: r.get(3)?,
        ending_at_ms: r.get(4)?,
        cursor: r.get(5)?,
        status: ReplayStatus::parse(&status),
        hold_live: r.get(7)?,
        failure: r.get(8)?,
        owner: r.get(9)?,
        lease_until_ms: r.get(10)?,
    })
}

pub fn put_replay(c: &Connection, r: &ReplayRecord) -> rusqlite::Result<()> {
    c.prepare_cached(&format!(
        "INSERT OR REPLACE INTO subscription_replays ({REPLAY_COLUMNS}) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)"
    ))?
    .execute(params![
        r.subscription,
        r.topic_id,
        r.replay_id,
        r.starting_at_ms,
        r.ending_at_ms,
        r.cursor,
        r.status.as_str(),
        r.hold_live,
        r.failure,
        r.owner,
        r.lease_until_ms
    ])?;
    Ok(())
}

pub fn get_replay(c: &Connection, subscription: &str) -> rusqlite::Result<Option<ReplayRecord>> {
    c.prepare_cached(&format!(
        "SELECT {REPLAY_COLUMNS} FROM subscription_replays WHERE subscription = ?1"
    ))?
    .query_row([subscription], replay_row)
    .optional()
}

pub fn claim_replays(
    c: &Connection,
    owner: &str,
    now_ms: i64,
    lease_until_ms: i64,
    limit: u32,
) -> rusqlite::Result<Vec<ReplayRecord>> {
    let subs: Vec<String> = c
        .prepare_cached(
            "SELECT subscription FROM subscription_replays WHERE status IN ('Pending', 'Replaying') \
             AND (owner = ?1 OR lease_until <= ?2) ORDER BY subscription LIMIT ?3",
        )?
        .query_map(params![owner, now_ms, limit], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let mut out = Vec::with_capacity(subs.len());
    for sub in subs {
        c.prepare_cached(
            "UPDATE subscription_replays SET owner = ?2, lease_until = ?3 WHERE subscription = ?1",
        )?
        .execute(params![sub, owner, lease_until_ms])?;
        if let Some(r) = get_replay(c, &sub)? {
            out.push(r);
        }
    }
    Ok(out)
}

pub fn advance_replay(
    c: &Connection,
    seqs: &MessageSeqs,
    step: &ReplayStep,
) -> rusqlite::Result<Option<ReplayRecord>> {
    let Some(current) = get_replay(c, &step.subscription)? else {
        return Ok(None);
    };
    if current.replay_id != step.replay_id
        || !current.status.is_active()
        || current.owner.as_deref() != Some(step.owner.as_str())
    {
        return Ok(None);
    }
    send_messages(c, seqs, &step.messages)?;
    let caught_up = match step.finish {
        ReplayFinish::CaughtUp => {
            let latest: i64 = c
                .prepare_cached("SELECT sequence FROM topics WHERE id = ?1")?
                .query_row([current.topic_id], |r| r.get(0))
                .optional()?
                .unwrap_or(0);
            let archived_after: bool = c
                .prepare_cached(
                    "SELECT EXISTS (SELECT 1 FROM topic_archive WHERE topic_id = ?1 \
                     AND sequence > ?2)",
                )?
                .query_row(params![current.topic_id, step.cursor], |r| r.get(0))?;
            step.cursor >= latest || !archived_after
        }
        _ => false,
    };
    let out = step.outcome(caught_up);
    c.prepare_cached(
        "UPDATE subscription_replays SET cursor = ?2, status = ?3, hold_live = ?4, failure = ?5, \
         owner = ?6, lease_until = ?7 WHERE subscription = ?1",
    )?
    .execute(params![
        step.subscription,
        step.cursor,
        out.status.as_str(),
        out.hold_live,
        out.failure,
        out.owner,
        out.lease_until_ms
    ])?;
    get_replay(c, &step.subscription)
}

pub fn release_replays(c: &Connection, owner: &str) -> rusqlite::Result<()> {
    c.prepare_cached("UPDATE subscription_replays SET lease_until = 0 WHERE owner = ?1")?
        .execute([owner])?;
    Ok(())
}

pub fn archived_messages(
    c: &Connection,
    w: &ArchiveWindow,
) -> rusqlite::Result<Vec<ArchivedMessage>> {
    let mut stmt = c.prepare_cached(
        "SELECT sequence, message_id, published_at, expires_at, published, sealed \
         FROM topic_archive WHERE topic_id = ?1 AND sequence > ?2 AND published_at >= ?3 \
         AND (?4 IS NULL OR published_at <= ?4) AND expires_at > ?5 \
         ORDER BY sequence LIMIT ?6",
    )?;
    let rows = stmt.query_map(
        params![
            w.topic_id,
            w.after_sequence,
            w.from_ms,
            w.until_ms,
            w.now_ms,
            w.limit
        ],
        |r| {
            Ok(ArchivedMessage {
                sequence: r.get(0)?,
                message_id: r.get(1)?,
                published_at_ms: r.get(2)?,
                expires_at_ms: r.get(3)?,
                published: r.get(4)?,
                sealed: r.get::<_, i64>(5)? != 0,
            })
        },
    )?;
    rows.collect()
}

pub fn delete_archive(c: &Connection, topic_id: i64) -> rusqlite::Result<u64> {
    Ok(
        c.prepare_cached("DELETE FROM topic_archive WHERE topic_id = ?1")?
            .execute([topic_id])? as u64,
    )
}

const DELIVERY_COLUMNS: &str = "id, subscription, endpoint, content_type, headers, body, \
    attempts, created_at, last_error, function_errors, sealed";

fn delivery_row(r: &Row<'_>) -> rusqlite::Result<DeliveryRecord> {
    let headers: String = r.get(4)?;
    Ok(DeliveryRecord {
        id: r.get(0)?,
        subscription: r.get(1)?,
        endpoint: r.get(2)?,
        content_type: r.get(3)?,
        headers: serde_json::from_str(&headers).unwrap_or_default(),
        body: r.get(5)?,
        attempts: r.get(6)?,
        created_at_ms: r.get(7)?,
        last_error: r.get(8)?,
        function_errors: r.get(9)?,
        sealed: r.get::<_, i64>(10)? != 0,
    })
}

pub fn claim_deliveries(
    c: &Connection,
    now_ms: i64,
    limit: u32,
    lease_until_ms: i64,
) -> rusqlite::Result<Vec<DeliveryRecord>> {
    let mut stmt = c.prepare_cached(&format!(
        "UPDATE deliveries SET next_at = ?3 WHERE id IN \
         (SELECT id FROM deliveries WHERE next_at <= ?1 ORDER BY next_at, id LIMIT ?2) \
         RETURNING {DELIVERY_COLUMNS}"
    ))?;
    let rows = stmt.query_map(params![now_ms, limit as i64, lease_until_ms], delivery_row)?;
    let mut out: Vec<DeliveryRecord> = rows.collect::<rusqlite::Result<_>>()?;
    out.sort_by_key(|d| d.id);
    Ok(out)
}

pub fn finish_delivery(c: &Connection, id: i64) -> rusqlite::Result<()> {
    c.prepare_cached("DELETE FROM deliveries WHERE id = ?1")?
        .execute([id])?;
    Ok(())
}

pub fn retry_delivery(
    c: &Connection,
    id: i64,
    attempts: i64,
    next_at_ms: i64,
    error: &str,
) -> rusqlite::Result<()> {
    c.prepare_cached(
        "UPDATE deliveries SET attempts = ?2, next_at = ?3, last_error = ?4 WHERE id = ?1",
    )?
    .execute(params![id, attempts, next_at_ms, error])?;
    Ok(())
}

pub fn retry_invocation(
    c: &Connection,
    id: i64,
    attempts: i64,
    function_errors: i64,
    next_at_ms: i64,
    error: &str,
) -> rusqlite::Result<()> {
    c.prepare_cached(
        "UPDATE deliveries SET attempts = ?2, function_errors = ?3, next_at = ?4, \
         last_error = ?5 WHERE id = ?1",
    )?
    .execute(params![id, attempts, function_errors, next_at_ms, error])?;
    Ok(())
}

pub fn next_delivery_at(c: &Connection) -> rusqlite::Result<Option<i64>> {
    c.prepare_cached("SELECT MIN(next_at) FROM deliveries")?
        .query_row([], |r| r.get(0))
}

pub fn list_deliveries(
    c: &Connection,
    subscription: Option<&str>,
    limit: u32,
) -> rusqlite::Result<Vec<DeliveryRecord>> {
    let mut stmt = c.prepare_cached(&format!(
        "SELECT {DELIVERY_COLUMNS} FROM deliveries WHERE ?1 IS NULL OR subscription = ?1 \
         ORDER BY id LIMIT ?2"
    ))?;
    let rows = stmt.query_map(params![subscription, limit as i64], delivery_row)?;
    rows.collect()
}

/// How many deliveries are pending.
pub fn count_deliveries(c: &Connection) -> rusqlite::Result<u64> {
    c.prepare_cached("SELECT COUNT(*) FROM deliveries")?
        .query_row([], |r| r.get::<_, i64>(0))
        .map(|n| n as u64)
}

/// The latest `limit` records (of `account` only when given), newest first, each with its
/// `sealed` flag (still sealed as stored when it is set).
pub fn list_recorded(
    c: &Connection,
    limit: u32,
    account: Option<&str>,
) -> rusqlite::Result<Vec<(RecordedMessage, bool)>> {
    let mut stmt = c.prepare_cached(
        "SELECT id, protocol, endpoint, topic_arn, subject, message, created_at, sender, \
         sealed, account FROM recorded_messages WHERE (?2 IS NULL OR account = ?2) \
         ORDER BY id DESC LIMIT ?1",
    )?;
    let rows = stmt.query_map(params![limit as i64, account], |r| {
        Ok((
            RecordedMessage {
                id: r.get(0)?,
                account: r.get(9)?,
                protocol: r.get(1)?,
                endpoint: r.get(2)?,
                topic_arn: r.get(3)?,
                subject: r.get(4)?,
                message: r.get(5)?,
                created_at_ms: r.get(6)?,
                sender: r.get(7)?,
                seal: None,
            },
            r.get::<_, i64>(8)? != 0,
        ))
    })?;
    rows.collect()
}

pub fn delete_recorded(c: &Connection, f: &RecordedFilter) -> rusqlite::Result<u64> {
    c.prepare_cached(
        "DELETE FROM recorded_messages WHERE (?1 IS NULL OR protocol = ?1) \
         AND (?2 IS NULL OR endpoint = ?2) AND (?3 IS NULL OR topic_arn = ?3) \
         AND (?4 IS NULL OR account = ?4)",
    )?
    .execute(rusqlite::params![
        f.protocol,
        f.endpoint,
        f.topic_arn,
        f.account
    ])
    .map(|n| n as u64)
}
