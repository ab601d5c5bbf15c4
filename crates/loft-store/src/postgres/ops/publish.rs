//! Publishing to topics: fan-out, FIFO topics, the archive and replays, pending deliveries, recorded messages.

use super::*;

// ----- publish and deliveries

/// Publish inside the caller's transaction: messages, deliveries and records.
pub async fn publish_in<C: GenericClient>(
    tx: &C,
    messages: &[(i64, NewMessage)],
    deliveries: &[NewDelivery],
    records: &[RecordedMessage],
    channel: &str,
) -> Result<Vec<SentMessage>, Error> {
    let sent = send_messages_in(tx, messages, channel).await?;
    if !deliveries.is_empty() {
        let mut sub = Vec::new();
        let mut endpoint = Vec::new();
        let mut content_type = Vec::new();
        let mut headers = Vec::new();
        let mut body = Vec::new();
        let mut due = Vec::new();
        let mut sealed: Vec<i16> = Vec::new();
        for d in deliveries {
            sub.push(d.subscription.clone());
            endpoint.push(d.endpoint.clone());
            content_type.push(d.content_type.clone());
            headers.push(serde_json::to_string(&d.headers).unwrap_or_else(|_| "[]".into()));
            body.push(d.body.clone());
            due.push(d.due_at_ms);
            sealed.push(d.seal.is_some() as i16);
        }
        execute(
            tx,
            "INSERT INTO deliveries (subscription, endpoint, content_type, headers, body, next_at, \
             created_at, sealed) SELECT s, e, c, h, b, d, d, z FROM unnest($1::text[], \
             $2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::smallint[]) \
             AS u(s, e, c, h, b, d, z)",
            &[&sub, &endpoint, &content_type, &headers, &body, &due, &sealed],
        )
        .await?;
    }
    if !records.is_empty() {
        let protocol: Vec<&str> = records.iter().map(|r| r.protocol.as_str()).collect();
        let endpoint: Vec<&str> = records.iter().map(|r| r.endpoint.as_str()).collect();
        let topic_arn: Vec<Option<&str>> = records.iter().map(|r| r.topic_arn.as_deref()).collect();
        let subject: Vec<Option<&str>> = records.iter().map(|r| r.subject.as_deref()).collect();
        let message: Vec<&str> = records.iter().map(|r| r.message.as_str()).collect();
        let created: Vec<i64> = records.iter().map(|r| r.created_at_ms).collect();
        let sender: Vec<Option<&str>> = records.iter().map(|r| r.sender.as_deref()).collect();
        let sealed: Vec<i16> = records.iter().map(|r| r.seal.is_some() as i16).collect();
        let account: Vec<&str> = records.iter().map(|r| r.account.as_str()).collect();
        execute(
            tx,
            "INSERT INTO recorded_messages (protocol, endpoint, topic_arn, subject, message, \
             created_at, sender, sealed, account) SELECT * FROM unnest($1::text[], $2::text[], \
             $3::text[], $4::text[], $5::text[], $6::bigint[], $7::text[], $8::smallint[], \
             $9::text[])",
            &[
                &protocol, &endpoint, &topic_arn, &subject, &message, &created, &sender, &sealed,
                &account,
            ],
        )
        .await?;
    }
    Ok(sent)
}

/// A FIFO topic publish inside the caller's transaction. The topic's row is locked first
/// (`FOR UPDATE`) and held to the commit, so publishes to one topic through any node run
/// one after the other: the deduplication check, the sequence number and the fan-out of
/// each are decided with no other publish of the topic in between, and a later sequence
/// number's queue messages are inserted after an earlier one's.
///
/// With `cell` (the store is a cell of a `crate::cells::CellStore`, holding the ids of
/// that range), a copy for a queue outside it is written to the outbox instead
/// ([`write_outbox_in`], in entry and then fan-out order, so outbox ids follow the
/// SequenceNumber), reported stored with sequence number 0; the outbox ids are returned
/// beside the outcome.
pub async fn publish_fifo_in<C: GenericClient>(
    tx: &C,
    p: &SealedFifoPublish,
    channel: &str,
    cell: Option<&std::ops::Range<i64>>,
) -> Result<Option<(Vec<FifoPublished>, Vec<i64>)>, Error> {
    let (topic_id, now_ms) = (p.topic_id(), p.now_ms());
    let Some(row) = query_opt(
        tx,
        "SELECT sequence FROM topics WHERE id = $1 FOR UPDATE",
        &[&topic_id],
    )
    .await?
    else {
        return Ok(None);
    };
    let mut sequence: i64 = row.get(0);
    let held = held_subscriptions(tx, topic_id).await?;
    let mut out = Vec::with_capacity(p.entries().len());
    // The queue messages of all entries, stored in one go, and those bound for other
    // cells; `spans` says whose they are (which copies were held for a replay, and which
    // of the others went to the outbox).
    let mut messages: Vec<(i64, NewMessage)> = Vec::new();
    let mut remote: Vec<(i64, NewMessage)> = Vec::new();
    let mut spans: Vec<(usize, Vec<bool>, Vec<bool>)> = Vec::new();
    for (i, e) in p.entries().iter().enumerate() {
        let original = query_opt(
            tx,
            "SELECT message_id, sequence FROM topic_dedup WHERE topic_id = $1 AND scope = $2 \
             AND dedup_id = $3 AND expires_at > $4",
            &[&topic_id, &e.dedup.scope, &e.dedup.id, &now_ms],
        )
        .await?;
        if let Some(row) = original {
            out.push(FifoPublished {
                message_id: row.get(0),
                sequence: row.get(1),
                duplicate: true,
                sent: Vec::new(),
            });
            continue;
        }
        sequence += 1;
        execute(
            tx,
            "INSERT INTO topic_dedup (topic_id, scope, dedup_id, message_id, sequence, expires_at) \
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (topic_id, scope, dedup_id) DO UPDATE \
             SET message_id = EXCLUDED.message_id, sequence = EXCLUDED.sequence, \
             expires_at = EXCLUDED.expires_at",
            &[
                &topic_id,
                &e.dedup.scope,
                &e.dedup.id,
                &e.message_id,
                &sequence,
                &e.dedup.expires_at_ms,
            ],
        )
        .await?;
        if let Some(a) = &e.archive {
            let sealed = a.seal.is_some() as i16;
            execute(
                tx,
                "INSERT INTO topic_archive (topic_id, sequence, message_id, published_at, \
                 expires_at, published, sealed) VALUES ($1, $2, $3, $4, $5, $6, $7) \
                 ON CONFLICT (topic_id, sequence) DO NOTHING",
                &[
                    &topic_id,
                    &sequence,
                    &e.message_id,
                    &now_ms,
                    &a.expires_at_ms,
                    &a.published,
                    &sealed,
                ],
            )
            .await?;
        }
        let built = p
            .fanout(i, sequence)
            .map_err(|e| Failure::Sealing(e.message))?;
        let (kept, is_held) = drop_held(built, &e.subscriptions, &held);
        let mut away = Vec::with_capacity(kept.len());
        for (q, m) in kept {
            let outside = cell.is_some_and(|c| !c.contains(&q));
            away.push(outside);
            if outside {
                remote.push((q, m));
            } else {
                messages.push((q, m));
            }
        }
        spans.push((out.len(), is_held, away));
        out.push(FifoPublished {
            message_id: e.message_id.clone(),
            sequence,
            duplicate: false,
            sent: Vec::new(),
        });
    }
    execute(
        tx,
        "UPDATE topics SET sequence = $2 WHERE id = $1",
        &[&topic_id, &sequence],
    )
    .await?;
    let ids = write_outbox_in(tx, &remote, now_ms).await?;
    let mut sent = send_messages_in(tx, &messages, channel).await?.into_iter();
    let mut relayed = remote.into_iter().map(|(_, m)| SentMessage {
        seq: 0,
        message_id: m.message_id,
        duplicate: false,
        sequence: None,
    });
    for (entry, is_held, away) in spans {
        let stored: Vec<SentMessage> = away
            .iter()
            .map(|outside| {
                if *outside {
                    relayed.next()
                } else {
                    sent.next()
                }
            })
            .collect::<Option<_>>()
            .ok_or(Failure::Broken(
                "a FIFO publish stored fewer copies than it built",
            ))?;
        out[entry].sent = merge_held(stored, &is_held);
    }
    Ok(Some((out, ids)))
}

/// The subscriptions of topic `topic_id` whose replay holds live messages.
async fn held_subscriptions<C: GenericClient>(
    c: &C,
    topic_id: i64,
) -> Result<std::collections::HashSet<String>, Error> {
    Ok(query(
        c,
        "SELECT subscription FROM subscription_replays WHERE topic_id = $1 AND hold_live",
        &[&topic_id],
    )
    .await?
    .iter()
    .map(|r| r.get(0))
    .collect())
}

const REPLAY_COLUMNS: &str = "subscription, topic_id, replay_id, starting_at, ending_at, cursor, \
    status, hold_live, failure, owner, lease_until";

fn replay_row(r: &Row) -> ReplayRecord {
    ReplayRecord {
        subscription: r.get(0),
        topic_id: r.get(1),
        replay_id: r.get(2),
        starting_at_ms: r.get(3),
        ending_at_ms: r.get(4),
        cursor: r.get(5),
        status: ReplayStatus::parse(r.get(6)),
        hold_live: r.get(7),
        failure: r.get(8),
        owner: r.get(9),
        lease_until_ms: r.get(10),
    }
}

pub async fn put_replay<C: GenericClient>(c: &C, r: &ReplayRecord) -> Result<(), Error> {
    let sql = format!(
        "INSERT INTO subscription_replays ({REPLAY_COLUMNS}) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) \
         ON CONFLICT (subscription) DO UPDATE SET topic_id = EXCLUDED.topic_id, \
         replay_id = EXCLUDED.replay_id, starting_at = EXCLUDED.starting_at, \
         ending_at = EXCLUDED.ending_at, cursor = EXCLUDED.cursor, status = EXCLUDED.status, \
         hold_live = EXCLUDED.hold_live, failure = EXCLUDED.failure, owner = EXCLUDED.owner, \
         lease_until = EXCLUDED.lease_until"
    );
    execute(
        c,
        &sql,
        &[
            &r.subscription,
            &r.topic_id,
            &r.replay_id,
            &r.starting_at_ms,
            &r.ending_at_ms,
            &r.cursor,
            &r.status.as_str(),
            &r.hold_live,
            &r.failure,
            &r.owner,
            &r.lease_until_ms,
        ],
    )
    .await
    .map(drop)
}

pub async fn get_replay<C: GenericClient>(
    c: &C,
    subscription: &str,
) -> Result<Option<ReplayRecord>, Error> {
    let sql = format!("SELECT {REPLAY_COLUMNS} FROM subscription_replays WHERE subscription = $1");
    Ok(query_opt(c, &sql, &[&subscription])
        .await?
        .as_ref()
        .map(replay_row))
}

pub async fn claim_replays<C: GenericClient>(
    c: &C,
    owner: &str,
    now_ms: i64,
    lease_until_ms: i64,
    limit: u32,
) -> Result<Vec<ReplayRecord>, Error> {
    let sql = format!(
        "UPDATE subscription_replays SET owner = $1, lease_until = $3 WHERE subscription IN \
         (SELECT subscription FROM subscription_replays WHERE status IN ('Pending', 'Replaying') \
          AND (owner = $1 OR lease_until <= $2) ORDER BY subscription LIMIT $4 \
          FOR UPDATE SKIP LOCKED) RETURNING {REPLAY_COLUMNS}"
    );
    Ok(query(
        c,
        &sql,
        &[&owner, &now_ms, &lease_until_ms, &(limit as i64)],
    )
    .await?
    .iter()
    .map(replay_row)
    .collect())
}

/// One replay batch inside the caller's transaction: the topic's row is locked first, as
/// [`publish_fifo_in`] does, so a publish and a step never cross (a publish the step's
/// caught-up check misses would otherwise be held and never replayed).
pub async fn advance_replay_in<C: GenericClient>(
    tx: &C,
    step: &ReplayStep,
    channel: &str,
) -> Result<Option<ReplayRecord>, Error> {
    let Some(current) = get_replay(tx, &step.subscription).await? else {
        return Ok(None);
    };
    let latest: i64 = query_opt(
        tx,
        "SELECT sequence FROM topics WHERE id = $1 FOR UPDATE",
        &[&current.topic_id],
    )
    .await?
    .map(|r| r.get(0))
    .unwrap_or(0);
    let sql = format!(
        "SELECT {REPLAY_COLUMNS} FROM subscription_replays WHERE subscription = $1 FOR UPDATE"
    );
    let Some(current) = query_opt(tx, &sql, &[&step.subscription])
        .await?
        .as_ref()
        .map(replay_row)
    else {
        return Ok(None);
    };
    if current.replay_id != step.replay_id
        || !current.status.is_active()
        || current.owner.as_deref() != Some(step.owner.as_str())
    {
        return Ok(None);
    }
    send_messages_in(tx, &step.messages, channel).await?;
    let archived_after = matches!(step.finish, ReplayFinish::CaughtUp)
        && query_opt(
            tx,
            "SELECT 1 FROM topic_archive WHERE topic_id = $1 AND sequence > $2 LIMIT 1",
            &[&current.topic_id, &step.cursor],
        )
        .await?
        .is_some();
    let out = step.outcome(step.cursor >= latest || !archived_after);
    let sql = format!(
        "UPDATE subscription_replays SET cursor = $2, status = $3, hold_live = $4, failure = $5, \
         owner = $6, lease_until = $7 WHERE subscription = $1 RETURNING {REPLAY_COLUMNS}"
    );
    Ok(query_opt(
        tx,
        &sql,
        &[
            &step.subscription,
            &step.cursor,
            &out.status.as_str(),
            &out.hold_live,
            &out.failure,
            &out.owner,
            &out.lease_until_ms,
        ],
    )
    .await?
    .as_ref()
    .map(replay_row))
}

pub async fn release_replays<C: GenericClient>(c: &C, owner: &str) -> Result<(), Error> {
    execute(
        c,
        "UPDATE subscription_replays SET lease_until = 0 WHERE owner = $1",
        &[&owner],
    )
    .await
    .map(drop)
}

pub async fn archived_messages<C: GenericClient>(
    c: &C,
    w: &ArchiveWindow,
) -> Result<Vec<ArchivedMessage>, Error> {
    let rows = query(
        c,
        "SELECT sequence, message_id, published_at, expires_at, published, sealed \
         FROM topic_archive WHERE topic_id = $1 AND sequence > $2 AND published_at >= $3 \
         AND ($4::bigint IS NULL OR published_at <= $4) AND expires_at > $5 \
         ORDER BY sequence LIMIT $6",
        &[
            &w.topic_id,
            &w.after_sequence,
            &w.from_ms,
            &w.until_ms,
            &w.now_ms,
            &i64::from(w.limit),
        ],
    )
    .await?;
    Ok(rows
        .iter()
        .map(|r| ArchivedMessage {
            sequence: r.get(0),
            message_id: r.get(1),
            published_at_ms: r.get(2),
            expires_at_ms: r.get(3),
            published: r.get(4),
            sealed: r.get::<_, i16>(5) != 0,
        })
        .collect())
}

pub async fn delete_archive<C: GenericClient>(c: &C, topic_id: i64) -> Result<u64, Error> {
    execute(
        c,
        "DELETE FROM topic_archive WHERE topic_id = $1",
        &[&topic_id],
    )
    .await
}

const DELIVERY_COLUMNS: &str = "d.id, d.subscription, d.endpoint, d.content_type, d.headers, \
    d.body, d.attempts, d.created_at, d.last_error, d.function_errors, d.sealed";

fn delivery_row(r: &Row) -> DeliveryRecord {
    let headers: &str = r.get(4);
    DeliveryRecord {
        id: r.get(0),
        subscription: r.get(1),
        endpoint: r.get(2),
        content_type: r.get(3),
        headers: serde_json::from_str(headers).unwrap_or_default(),
        body: r.get(5),
        attempts: r.get(6),
        created_at_ms: r.get(7),
        last_error: r.get(8),
        function_errors: r.get(9),
        sealed: r.get::<_, i16>(10) != 0,
    }
}

/// Leases due deliveries: rows another node is claiming right now are skipped, and a
/// claimed row's `next_at` moves to the lease end, so no other node takes it until the
/// lease runs out (then one does: a crashed node's deliveries are taken over).
pub async fn claim_deliveries<C: GenericClient>(
    c: &C,
    now_ms: i64,
    limit: u32,
    lease_until_ms: i64,
) -> Result<Vec<DeliveryRecord>, Error> {
    let sql = format!(
        "UPDATE deliveries d SET next_at = $3 FROM (SELECT id FROM deliveries \
           WHERE next_at <= $1 ORDER BY next_at, id LIMIT $2 FOR UPDATE SKIP LOCKED) c \
         WHERE d.id = c.id RETURNING {DELIVERY_COLUMNS}"
    );
    let rows = query(c, &sql, &[&now_ms, &(limit as i64), &lease_until_ms]).await?;
    let mut out: Vec<DeliveryRecord> = rows.iter().map(delivery_row).collect();
    out.sort_by_key(|d| d.id);
    Ok(out)
}

pub async fn finish_delivery<C: GenericClient>(c: &C, id: i64) -> Result<(), Error> {
    execute(c, "DELETE FROM deliveries WHERE id = $1", &[&id])
        .await
        .map(drop)
}

pub async fn retry_delivery<C: GenericClient>(
    c: &C,
    id: i64,
    attempts: i64,
    next_at_ms: i64,
    error: &str,
) -> Result<(), Error> {
    execute(
        c,
        "UPDATE deliveries SET attempts = $2, next_at = $3, last_error = $4 WHERE id = $1",
        &[&id, &attempts, &next_at_ms, &error],
    )
    .await
    .map(drop)
}

pub async fn retry_invocation<C: GenericClient>(
    c: &C,
    id: i64,
    attempts: i64,
    function_errors: i64,
    next_at_ms: i64,
    error: &str,
) -> Result<(), Error> {
    execute(
        c,
        "UPDATE deliveries SET attempts = $2, function_errors = $3, next_at = $4, \
         last_error = $5 WHERE id = $1",
        &[&id, &attempts, &function_errors, &next_at_ms, &error],
    )
    .await
    .map(drop)
}

pub async fn next_delivery_at<C: GenericClient>(c: &C) -> Result<Option<i64>, Error> {
    Ok(query_one(c, "SELECT MIN(next_at) FROM deliveries", &[])
        .await?
        .get(0))
}

pub async fn list_deliveries<C: GenericClient>(
    c: &C,
    subscription: Option<&str>,
    limit: u32,
) -> Result<Vec<DeliveryRecord>, Error> {
    let sql = format!(
        "SELECT {DELIVERY_COLUMNS} FROM deliveries d \
         WHERE $1::text IS NULL OR d.subscription = $1 ORDER BY d.id LIMIT $2"
    );
    Ok(query(c, &sql, &[&subscription, &(limit as i64)])
        .await?
        .iter()
        .map(delivery_row)
        .collect())
}

pub async fn delete_recorded<C: GenericClient>(c: &C, f: &RecordedFilter) -> Result<u64, Error> {
    execute(
        c,
        "DELETE FROM recorded_messages WHERE ($1::text IS NULL OR protocol = $1) \
         AND ($2::text IS NULL OR endpoint = $2) AND ($3::text IS NULL OR topic_arn = $3) \
         AND ($4::text IS NULL OR account = $4)",
        &[&f.protocol, &f.endpoint, &f.topic_arn, &f.account],
    )
    .await
}

/// The latest `limit` records (of `account` only when given), newest first, each with its
/// `sealed` flag (still sealed as stored when it is set).
pub async fn list_recorded<C: GenericClient>(
    c: &C,
    limit: u32,
    account: Option<&str>,
) -> Result<Vec<(RecordedMessage, bool)>, Error> {
    let rows = query(
        c,
        "SELECT id, protocol, endpoint, topic_arn, subject, message, created_at, sender, \
         sealed, account FROM recorded_messages WHERE ($2::text IS NULL OR account = $2) \
         ORDER BY id DESC LIMIT $1",
        &[&(limit as i64), &account],
    )
    .await?;
    Ok(rows
        .iter()
        .map(|r| {
            (
                RecordedMessage {
                    id: r.get(0),
                    account: r.get(9),
                    protocol: r.get(1),
                    endpoint: r.get(2),
                    topic_arn: r.get(3),
                    subject: r.get(4),
                    message: r.get(5),
                    created_at_ms: r.get(6),
                    sender: r.get(7),
                    seal: None,
                },
                r.get::<_, i16>(8) != 0,
            )
        })
        .collect())
}
