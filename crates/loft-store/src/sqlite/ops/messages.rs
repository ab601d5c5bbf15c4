//! Messages: sequence numbers, send, receive (standard and FIFO), delete, visibility, purge, counts, peek, expiry.

use super::*;

// ----- message sequence numbers

/// How many sequence numbers one write of `message_seq.high` reserves.
const SEQ_BLOCK: i64 = 4096;

/// The store sequence numbers of messages (`messages.seq`): increasing across the store and
/// never reused, also after the newest message is deleted and across restarts
/// ([`StoredMessage::seq`]; the seeds' `msg-N` MessageIds and every receipt name it).
///
/// `messages.seq` is a plain rowid (migration 11), given explicitly from `next`, held in
/// memory; `message_seq.high` in the file is the highest number that may have been handed
/// out. A number above it is given only in a transaction that raises it by [`SEQ_BLOCK`]
/// first, so the row is written once per 4,096 messages instead of `sqlite_sequence`'s
/// page in every commit (one WAL frame per commit: docs/benchmarks/history.md, "Loft's
/// messages without AUTOINCREMENT"), and [`MessageSeqs::load`] starts above it. The
/// check reads `high` inside the caller's transaction, so a raise undone by a rolled-back
/// savepoint or transaction is made again. A number taken by a job that then fails is not
/// given again (a gap, as AUTOINCREMENT leaves).
#[derive(Debug)]
pub struct MessageSeqs {
    next: AtomicI64,
}

impl MessageSeqs {
    /// Reads where numbering goes on: above `message_seq.high` and above every stored
    /// `seq`. Errors: SQLite's.
    pub fn load(c: &Connection) -> rusqlite::Result<Self> {
        let high: i64 = c.query_row(
            "SELECT MAX((SELECT COALESCE(MAX(high), 0) FROM message_seq), \
             (SELECT COALESCE(MAX(seq), 0) FROM messages))",
            [],
            |r| r.get(0),
        )?;
        Ok(MessageSeqs {
            next: AtomicI64::new(high + 1),
        })
    }

    /// Takes `n` consecutive numbers and returns the first, first raising
    /// `message_seq.high` in `c`'s open transaction if they pass it. Errors: SQLite's.
    pub fn take(&self, c: &Connection, n: usize) -> rusqlite::Result<i64> {
        let n = n as i64;
        let first = self.next.fetch_add(n, Ordering::SeqCst);
        let last = first + n - 1;
        let high: i64 = c
            .prepare_cached("SELECT high FROM message_seq")?
            .query_row([], |r| r.get(0))?;
        if last > high {
            c.prepare_cached("UPDATE message_seq SET high = ?1")?
                .execute([last + SEQ_BLOCK])?;
        }
        Ok(first)
    }
}

// ----- messages

const MESSAGE_COLUMNS: &str = message_columns!();

fn message_row(r: &Row<'_>) -> rusqlite::Result<StoredMessage> {
    Ok(StoredMessage {
        seq: r.get(0)?,
        queue_id: r.get(1)?,
        message_id: r.get(2)?,
        body: r.get(3)?,
        md5_body: r.get(4)?,
        message_attributes: r.get(5)?,
        system_attributes: r.get(6)?,
        sender_id: r.get(7)?,
        sent_at_ms: r.get(8)?,
        visible_at_ms: r.get(9)?,
        receive_count: r.get(10)?,
        first_received_at_ms: r.get(11)?,
        receipt_token: r.get(12)?,
        group_id: r.get(13)?,
        dedup_id: r.get(14)?,
        dead_letter_source: r.get(15)?,
        sealed: r.get::<_, i64>(16)? != 0,
        sequence: r.get(17)?,
    })
}

/// Whether queue `queue_id` is fair (it has received a standard message with a
/// MessageGroupId), as `known` remembers it for this call or the queue's row says.
fn queue_is_fair(
    c: &Connection,
    queue_id: i64,
    known: &mut HashMap<i64, bool>,
) -> rusqlite::Result<bool> {
    if let Some(fair) = known.get(&queue_id) {
        return Ok(*fair);
    }
    let fair: bool = c
        .prepare_cached("SELECT fair FROM queues WHERE id = ?1")?
        .query_row([queue_id], |r| r.get(0))
        .optional()?
        .unwrap_or(false);
    known.insert(queue_id, fair);
    Ok(fair)
}

/// Fills `known` with whether each queue that `messages` go to is fair, in one statement
/// when they go to more than one queue (an SNS fan-out: one publish, one copy per
/// subscribed queue), instead of one `SELECT` per queue in [`queue_is_fair`]. Read inside
/// the send's transaction, so it sees what [`make_fair`] and every other write of that
/// transaction did; a queue with no row is left to [`queue_is_fair`] (not fair).
fn prefetch_fair(
    c: &Connection,
    messages: &[(i64, NewMessage)],
    known: &mut HashMap<i64, bool>,
) -> rusqlite::Result<()> {
    let mut ids: Vec<i64> = messages
        .iter()
        .filter(|(_, m)| m.dedup.is_none())
        .map(|(q, _)| *q)
        .collect();
    ids.sort_unstable();
    ids.dedup();
    if ids.len() < 2 {
        return Ok(());
    }
    let list = serde_json::to_string(&ids).unwrap_or_else(|_| "[]".into());
    let mut stmt = c.prepare_cached(
        "SELECT id, fair FROM queues WHERE id IN (SELECT value FROM json_each(?1))",
    )?;
    let rows = stmt.query_map([list], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, bool>(1)?)))?;
    for row in rows {
        let (id, fair) = row?;
        known.insert(id, fair);
    }
    Ok(())
}

/// Makes queue `queue_id` fair unless it is: its messages from before get fair key 0, so
/// a fair receive sees them first.
fn make_fair(
    c: &Connection,
    queue_id: i64,
    known: &mut HashMap<i64, bool>,
) -> rusqlite::Result<()> {
    if queue_is_fair(c, queue_id, known)? {
        return Ok(());
    }
    let changed = c
        .prepare_cached("UPDATE queues SET fair = 1 WHERE id = ?1 AND fair = 0")?
        .execute([queue_id])?;
    if changed > 0 {
        c.prepare_cached(
            "UPDATE messages SET fair_key = 0 WHERE queue_id = ?1 AND fair_key IS NULL",
        )?
        .execute([queue_id])?;
    }
    known.insert(queue_id, true);
    Ok(())
}

/// The fair key of a new message of fair queue `queue_id` (start-time fair queueing, the
/// same rule as the PostgreSQL store's): the queue's virtual time is the smallest key it
/// holds (0 when empty); a message without a group, or of a group with no message in the
/// queue, starts there; a group's next message comes one after its latest one. A flood of
/// one group so spreads over keys ahead, and a quiet group's message is keyed beside the
/// oldest messages waiting, so a receive reaches it after at most about one message of
/// each other group (SQS Developer Guide, "Amazon SQS fair queues").
fn fair_key(c: &Connection, queue_id: i64, group: Option<&str>) -> rusqlite::Result<i64> {
    let base: Option<i64> = c
        .prepare_cached(
            "SELECT MIN(fair_key) FROM messages INDEXED BY messages_fair \
             WHERE queue_id = ?1 AND fair_key IS NOT NULL",
        )?
        .query_row([queue_id], |r| r.get(0))?;
    let base = base.unwrap_or(0);
    let Some(group) = group else {
        return Ok(base);
    };
    let last: Option<Option<i64>> = c
        .prepare_cached(
            "SELECT fair_key FROM messages INDEXED BY messages_group \
             WHERE queue_id = ?1 AND group_id = ?2 ORDER BY seq DESC LIMIT 1",
        )?
        .query_row(params![queue_id, group], |r| r.get(0))
        .optional()?;
    Ok(match last.flatten() {
        Some(last) => base.max(last + 1),
        None => base,
    })
}

/// Whether [`send_messages`] of `messages` makes one lasting change only, its one
/// `INSERT INTO messages`: one message without a deduplication key (no `fifo_dedup` row)
/// and without a MessageGroupId (so [`make_fair`] writes nothing). Its other possible
/// write, [`MessageSeqs::take`]'s raise of `message_seq.high`, may outlive a failed
/// insert: `high` is only a bound on the numbers handed out, and a number taken by a
/// failed job is a gap either way. Such a send needs no savepoint of its own in a group
/// transaction (`Atomicity::Statement` in the engine).
pub fn one_insert(messages: &[(i64, NewMessage)]) -> bool {
    match messages {
        [(_, m)] => m.dedup.is_none() && m.group_id.is_none(),
        _ => false,
    }
}

/// The next number of queue `queue_id`'s own sequence ([`StoredMessage::sequence`]),
/// counted in the queue's row inside the caller's transaction; `None` when the queue has
/// no row (deleted).
pub(crate) fn next_queue_sequence(c: &Connection, queue_id: i64) -> rusqlite::Result<Option<i64>> {
    c.prepare_cached(
        "UPDATE queues SET message_sequence = message_sequence + 1 WHERE id = ?1 \
         RETURNING message_sequence",
    )?
    .query_row([queue_id], |r| r.get(0))
    .optional()
}

/// Most rows one multi-row `INSERT` of [`insert_plain`] writes: an SNS fan-out's copies
/// of one publish (a topic's SQS subscriptions), in statements of this many rows.
const PLAIN_ROWS: usize = 16;

/// The columns of a new `messages` row, as [`send_messages`] and [`insert_plain`] bind
/// them (19 a row).
const INSERT_COLUMNS: &str = "queue_id, message_id, body, md5_body, message_attributes, \
     system_attributes, sender_id, sent_at, visible_at, expires_at, receive_count, \
     first_received_at, group_id, dedup_id, dead_letter_source, fair_key, sealed, seq, \
     sequence";

/// `INSERT OR FAIL INTO messages` of `rows` rows (1 to [`PLAIN_ROWS`]), made once.
///
/// `OR FAIL`, not the default `ABORT`: SQLite gives a statement that may write several
/// rows and abort midway a statement journal, copying every page the statement first
/// touches in a transaction (as a savepoint does: 5% of a fan-out's server CPU,
/// docs/benchmarks/history.md, "Fan-out, branch `s20-fanout`"). A failing `OR FAIL`
/// statement keeps the rows it wrote before the failure; its caller's job then fails and
/// its transaction or savepoint is rolled back whole (`Atomicity`), so none is kept
/// either way. Its rows break no rule in practice: `seq` is new, the rest is given.
fn plain_insert_sql(rows: usize) -> &'static str {
    static SQL: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    let all = SQL.get_or_init(|| {
        (1..=PLAIN_ROWS)
            .map(|n| {
                let row = format!("({})", vec!["?"; 19].join(", "));
                format!(
                    "INSERT OR FAIL INTO messages ({INSERT_COLUMNS}) VALUES {}",
                    vec![row; n].join(", ")
                )
            })
            .collect()
    });
    &all[rows.clamp(1, PLAIN_ROWS) - 1]
}

/// Whether [`insert_plain`] may store `messages`: more than one, none with a
/// deduplication key or a MessageGroupId, and no queue of theirs fair ([`queue_is_fair`],
/// remembered in `fair`). Such messages take no fair key, no queue sequence and no
/// `fifo_dedup` row: one `messages` row each and nothing else.
fn all_plain(
    c: &Connection,
    messages: &[(i64, NewMessage)],
    fair: &mut HashMap<i64, bool>,
) -> rusqlite::Result<bool> {
    if messages.len() < 2
        || messages
            .iter()
            .any(|(_, m)| m.dedup.is_some() || m.group_id.is_some())
    {
        return Ok(false);
    }
    for (queue_id, _) in messages {
        if queue_is_fair(c, *queue_id, fair)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Stores plain messages ([`all_plain`]) numbered from `first`, [`PLAIN_ROWS`] to a
/// statement instead of one statement each: SQLite opens the table's and its indexes'
/// cursors once a statement, not once a row (an SNS publish to ten queues: one
/// statement, not ten). The rows and their numbers are those [`send_messages`]'s
/// one-row path gives.
fn insert_plain(
    c: &Connection,
    first: i64,
    messages: &[(i64, NewMessage)],
) -> rusqlite::Result<Vec<SentMessage>> {
    let mut out = Vec::with_capacity(messages.len());
    let mut seq = first;
    for chunk in messages.chunks(PLAIN_ROWS) {
        let mut stmt = c.prepare_cached(plain_insert_sql(chunk.len()))?;
        let mut i = 0;
        let mut bind = |v: &dyn rusqlite::ToSql| -> rusqlite::Result<()> {
            i += 1;
            stmt.raw_bind_parameter(i, v)
        };
        for (offset, (queue_id, m)) in chunk.iter().enumerate() {
            bind(queue_id)?;
            bind(&m.message_id)?;
            bind(&m.body)?;
            bind(&m.md5_body)?;
            bind(&m.message_attributes)?;
            bind(&m.system_attributes)?;
            bind(&m.sender_id)?;
            bind(&m.sent_at_ms)?;
            bind(&m.visible_at_ms)?;
            bind(&m.expires_at_ms)?;
            bind(&m.receive_count)?;
            bind(&m.first_received_at_ms)?;
            bind(&m.group_id)?;
            bind(&m.dedup_id)?;
            bind(&m.dead_letter_source)?;
            bind(&None::<i64>)?;
            bind(&(m.seal.is_some() as i64))?;
            bind(&(seq + offset as i64))?;
            bind(&None::<i64>)?;
        }
        stmt.raw_execute()?;
        for (_, m) in chunk {
            out.push(SentMessage {
                seq,
                message_id: m.message_id.clone(),
                duplicate: false,
                sequence: None,
            });
            seq += 1;
        }
    }
    Ok(out)
}

pub fn send_messages(
    c: &Connection,
    seqs: &MessageSeqs,
    messages: &[(i64, NewMessage)],
) -> rusqlite::Result<Vec<SentMessage>> {
    // A duplicate FIFO send leaves its number unused: a gap, never a reuse.
    let mut next = seqs.take(c, messages.len())?;
    let mut fair: HashMap<i64, bool> = HashMap::new();
    prefetch_fair(c, messages, &mut fair)?;
    if all_plain(c, messages, &mut fair)? {
        return insert_plain(c, next, messages);
    }
    let mut stmt = c.prepare_cached(
        "INSERT INTO messages (queue_id, message_id, body, md5_body, message_attributes, \
         system_attributes, sender_id, sent_at, visible_at, expires_at, receive_count, \
         first_received_at, group_id, dedup_id, dead_letter_source, fair_key, sealed, seq, \
         sequence) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, \
         ?18, ?19)",
    )?;
    let mut out = Vec::with_capacity(messages.len());
    for (queue_id, m) in messages {
        if let Some(key) = &m.dedup {
            let original: Option<(i64, Option<String>, Option<i64>)> = c
                .prepare_cached(
                    "SELECT seq, message_id, sequence FROM fifo_dedup WHERE queue_id = ?1 \
                     AND scope = ?2 AND dedup_id = ?3 AND expires_at > ?4",
                )?
                .query_row(params![queue_id, key.scope, key.id, m.sent_at_ms], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                })
                .optional()?;
            if let Some((seq, message_id, sequence)) = original {
                out.push(SentMessage {
                    seq,
                    message_id: message_id.filter(|id| !id.is_empty()),
                    duplicate: true,
                    sequence,
                });
                continue;
            }
        }
        // A standard message (no deduplication key) with a group makes its queue fair;
        // every message of a fair queue takes a fair key.
        let key = if m.dedup.is_some() {
            None
        } else {
            if m.group_id.is_some() {
                make_fair(c, *queue_id, &mut fair)?;
            }
            if queue_is_fair(c, *queue_id, &mut fair)? {
                Some(fair_key(c, *queue_id, m.group_id.as_deref())?)
            } else {
                None
            }
        };
        // A message with a deduplication key (a FIFO queue's) takes its queue's next number.
        let sequence = match m.dedup {
            Some(_) => next_queue_sequence(c, *queue_id)?,
            None => None,
        };
        stmt.execute(params![
            queue_id,
            m.message_id,
            m.body,
            m.md5_body,
            m.message_attributes,
            m.system_attributes,
            m.sender_id,
            m.sent_at_ms,
            m.visible_at_ms,
            m.expires_at_ms,
            m.receive_count,
            m.first_received_at_ms,
            m.group_id,
            m.dedup_id,
            m.dead_letter_source,
            key,
            m.seal.is_some() as i64,
            next,
            sequence,
        ])?;
        let seq = next;
        next += 1;
        let message_id = m.message_id.clone();
        if let Some(key) = &m.dedup {
            c.prepare_cached(
                "INSERT OR REPLACE INTO fifo_dedup (queue_id, scope, dedup_id, seq, message_id, \
                 expires_at, sequence) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?
            .execute(params![
                queue_id,
                key.scope,
                key.id,
                seq,
                message_id.as_deref().unwrap_or_default(),
                key.expires_at_ms,
                sequence
            ])?;
        }
        out.push(SentMessage {
            seq,
            message_id,
            duplicate: false,
            sequence,
        });
    }
    Ok(out)
}

/// Moves message `seq` to the dead-letter queue of `rule`. It keeps its receive count: the
/// receive that moved it does not count (AWS's recorded DLQ receives show the count the
/// message had in its source queue, plus the DLQ's own receives).
fn dead_letter(c: &Connection, seq: i64, rule: &RedriveRule, now_ms: i64) -> rusqlite::Result<()> {
    c.prepare_cached(
        "UPDATE messages SET queue_id = ?2, visible_at = ?3, \
         dead_letter_source = ?4, first_received_at = COALESCE(first_received_at, ?3), \
         dedup_id = CASE WHEN ?5 THEN message_id ELSE dedup_id END, \
         fair_key = CASE WHEN (SELECT fair FROM queues WHERE id = ?2) = 1 THEN 0 END \
         WHERE seq = ?1",
    )?
    .execute(params![
        seq,
        rule.dlq_queue_id,
        now_ms,
        rule.source_arn,
        rule.dedup_id_from_message_id
    ])?;
    Ok(())
}

/// What [`claim`] did with one candidate.
enum Claim {
    /// Claimed: the message, opened, as the receive hands it out.
    Got(StoredMessage),
    /// Not claimed and left as it was: its sealed body or attributes cannot be opened.
    Unreadable(StoredMessage),
}

/// Claims message `seq` with the receipt token the service chose for it, inside the
/// receive's transaction: the row is read and opened (when sealed) first, through the
/// store's one opening place ([`crate::sqlite::opened`], [`Claiming`]), and only a
/// readable message is claimed. One that cannot be opened is left untouched (no
/// visibility change, no receive count) and named in `out`.
///
/// The row is read, then updated by a plain `UPDATE` (same transaction, one connection),
/// not `UPDATE ... RETURNING`: SQLite runs RETURNING as a trigger, opening a statement
/// journal and an ephemeral table per claim (nearly half of the claim's samples in a
/// profile of receive-delete: docs/benchmarks/history.md, "Where a receive-delete's CPU
/// goes").
fn claim(
    c: &Connection,
    req: &ReceiveRequest,
    seq: i64,
    token: i64,
    sealer: &Sealer,
    out: &mut ReceiveOutcome,
) -> rusqlite::Result<Claim> {
    let read = c
        .prepare_cached(concat!(
            "SELECT ",
            message_columns!(),
            " FROM messages WHERE seq = ?1"
        ))?
        .query_row([seq], message_row)?;
    let claiming = Claiming {
        message: read,
        undecryptable: &mut out.undecryptable,
    };
    let mut m = match crate::sqlite::opened(sealer, claiming)
        .map_err(|e| rusqlite::Error::ToSqlConversionFailure(e.message.into()))?
    {
        Claimed::Readable(m) => m,
        Claimed::Unreadable(m) => return Ok(Claim::Unreadable(m)),
    };
    c.prepare_cached(
        "UPDATE messages SET visible_at = ?2, receive_count = receive_count + 1, \
         first_received_at = COALESCE(first_received_at, ?3), receipt_token = ?4, \
         received_at = ?3 WHERE seq = ?1",
    )?
    .execute(params![
        seq,
        req.now_ms + req.visibility_ms,
        req.now_ms,
        token
    ])?;
    m.visible_at_ms = req.now_ms + req.visibility_ms;
    m.receive_count += 1;
    m.first_received_at_ms.get_or_insert(req.now_ms);
    m.receipt_token = token;
    Ok(Claim::Got(m))
}

/// The receipt token of the `i`-th message a receive claims.
fn token(req: &ReceiveRequest, i: usize) -> rusqlite::Result<i64> {
    req.receipt_tokens.get(i).copied().ok_or_else(|| {
        rusqlite::Error::InvalidParameterName("fewer receipt tokens than messages".into())
    })
}

/// Standard receive. A fair queue's messages are read in fair-key order (see
/// [`fair_key`]) through `messages_fair`, then, when those run short, in the plain order
/// (which also finds a message that reached the queue without a key, such as a
/// dead-lettered one); other queues read the longest-visible first (or in send order for
/// the seeds). Sealed messages are opened before they are claimed; one that cannot be
/// opened is passed over and left as it was ([`ReceiveOutcome::undecryptable`]).
pub fn receive(
    c: &Connection,
    req: &ReceiveRequest,
    sealer: &Sealer,
) -> rusqlite::Result<ReceiveOutcome> {
    if req.fifo {
        return receive_fifo(c, req, sealer);
    }
    let mut out = ReceiveOutcome::default();
    let want = req.max_messages as usize;
    if want == 0 {
        return Ok(out);
    }
    // A message claimed with a visibility timeout of 0 is visible again at once: the
    // candidates of the next round may hold it, and one receive never returns a message
    // twice. The limit leaves room for those and they are skipped, as are the messages
    // passed over because they cannot be opened.
    let mut claimed: HashSet<i64> = HashSet::new();
    let fair = !req.send_order && queue_is_fair(c, req.queue_id, &mut HashMap::new())?;
    if fair {
        claim_in_order(
            c,
            req,
            "SELECT seq, receive_count, expires_at FROM messages INDEXED BY messages_fair \
             WHERE queue_id = ?1 AND fair_key IS NOT NULL AND visible_at <= ?2 \
             ORDER BY fair_key, seq LIMIT ?3",
            sealer,
            &mut claimed,
            &mut out,
        )?;
    }
    if out.messages.len() < want {
        claim_in_order(
            c,
            req,
            if req.send_order {
                "SELECT seq, receive_count, expires_at FROM messages \
                 INDEXED BY messages_queue_order \
                 WHERE queue_id = ?1 AND visible_at <= ?2 ORDER BY seq LIMIT ?3"
            } else {
                "SELECT seq, receive_count, expires_at FROM messages \
                 INDEXED BY messages_visibility \
                 WHERE queue_id = ?1 AND visible_at <= ?2 ORDER BY visible_at, seq LIMIT ?3"
            },
            sealer,
            &mut claimed,
            &mut out,
        )?;
    }
    if out.messages.len() < want {
        out.next_visible_at_ms = c
            .prepare_cached(
                "SELECT MIN(visible_at) FROM messages WHERE queue_id = ?1 AND visible_at > ?2",
            )?
            .query_row(params![req.queue_id, req.now_ms], |r| r.get(0))?;
    }
    Ok(out)
}

/// Claims visible messages in the order `sql` reads them (`?1` queue, `?2` now, `?3`
/// limit) until the receive has what it wants or `sql` finds no more. `claimed` holds the
/// messages this receive claimed or passed over.
fn claim_in_order(
    c: &Connection,
    req: &ReceiveRequest,
    sql: &str,
    sealer: &Sealer,
    claimed: &mut HashSet<i64>,
    out: &mut ReceiveOutcome,
) -> rusqlite::Result<()> {
    let want = req.max_messages as usize;
    let mut candidates = c.prepare_cached(sql)?;
    let mut expire = c.prepare_cached("DELETE FROM messages WHERE seq = ?1")?;
    loop {
        let need = want - out.messages.len();
        let rows: Vec<(i64, i64, i64)> = candidates
            .query_map(
                params![req.queue_id, req.now_ms, (need + claimed.len()) as i64],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )?
            .filter(|r| {
                r.as_ref()
                    .map_or(true, |(seq, _, _)| !claimed.contains(seq))
            })
            .collect::<rusqlite::Result<_>>()?;
        if rows.is_empty() {
            break;
        }
        for (seq, receive_count, expires_at) in rows {
            if expires_at <= req.now_ms {
                expire.execute([seq])?;
                continue;
            }
            if let Some(rule) = &req.redrive {
                if receive_count >= rule.moves_at_receive_count {
                    dead_letter(c, seq, rule, req.now_ms)?;
                    out.dead_lettered += 1;
                    continue;
                }
            }
            claimed.insert(seq);
            if let Claim::Got(message) =
                claim(c, req, seq, token(req, out.messages.len())?, sealer, out)?
            {
                out.messages.push(message);
            }
        }
        if out.messages.len() >= want {
            break;
        }
    }
    Ok(())
}

/// The messages a recorded receive attempt handed out that still hold its receipt tokens,
/// hidden again as `req` says; `None` when no unexpired attempt `attempt` is recorded.
fn replay_attempt(
    c: &Connection,
    req: &ReceiveRequest,
    attempt: &ReceiveAttempt,
) -> rusqlite::Result<Option<Vec<StoredMessage>>> {
    let receipts: Option<String> = c
        .prepare_cached(
            "SELECT receipts FROM receive_attempts WHERE queue_id = ?1 AND attempt_id = ?2 \
             AND expires_at > ?3",
        )?
        .query_row(params![req.queue_id, attempt.id, req.now_ms], |r| r.get(0))
        .optional()?;
    let Some(receipts) = receipts else {
        return Ok(None);
    };
    let receipts: Vec<(i64, i64)> = serde_json::from_str(&receipts).unwrap_or_default();
    let mut again = c.prepare_cached(&format!(
        "UPDATE messages SET visible_at = ?4 WHERE seq = ?1 AND queue_id = ?2 \
         AND receipt_token = ?3 RETURNING {MESSAGE_COLUMNS}"
    ))?;
    let mut out = Vec::with_capacity(receipts.len());
    for (seq, token) in receipts {
        let hidden_until = req.now_ms + req.visibility_ms;
        if let Some(m) = again
            .query_row(params![seq, req.queue_id, token, hidden_until], message_row)
            .optional()?
        {
            out.push(m);
        }
    }
    Ok(Some(out))
}

/// Records what a FIFO receive with an attempt id handed out.
fn record_attempt(
    c: &Connection,
    req: &ReceiveRequest,
    attempt: &ReceiveAttempt,
    messages: &[StoredMessage],
) -> rusqlite::Result<()> {
    let receipts: Vec<(i64, i64)> = messages.iter().map(|m| (m.seq, m.receipt_token)).collect();
    c.prepare_cached(
        "INSERT OR REPLACE INTO receive_attempts (queue_id, attempt_id, expires_at, receipts) \
         VALUES (?1, ?2, ?3, ?4)",
    )?
    .execute(params![
        req.queue_id,
        attempt.id,
        attempt.expires_at_ms,
        serde_json::to_string(&receipts).unwrap_or_else(|_| "[]".into())
    ])?;
    Ok(())
}

/// FIFO receive, the same algorithm as the PostgreSQL store's. A group is locked while
/// any of its messages is in flight, and its first hidden (delayed or in-flight) message
/// holds back its later ones; open groups give their messages in send order, and a
/// receive takes as many of one group as it can before the next group, groups in the
/// order of their first candidate (SQS Developer Guide, "FIFO queue logic").
///
/// Cost: the messages not visible now are read once, through the visibility index (the
/// in-flight and delayed ones, not the backlog), for the locked groups and each group's
/// first hidden message. Then the visible messages are walked in send order, a window at
/// a time (the window doubling), only to find the next open group; each group found is
/// read through the group index (`messages_group`) for as many messages as the receive
/// still wants, one group after another and only while it can still count (so a deep
/// group that fills the receive is the only one read past the window). A receive so reads about as many rows as it returns plus the groups it
/// skips, whatever the depth of the queue or the spacing of a group's messages.
///
/// A message that cannot be opened is passed over and left as it was, and its group's
/// later messages are not taken by this receive (they wait behind it, in order).
fn receive_fifo(
    c: &Connection,
    req: &ReceiveRequest,
    sealer: &Sealer,
) -> rusqlite::Result<ReceiveOutcome> {
    let mut out = ReceiveOutcome::default();
    if let Some(attempt) = &req.attempt {
        if let Some(messages) = replay_attempt(c, req, attempt)? {
            out.messages = messages;
            out.replayed = true;
            return Ok(out);
        }
    }
    let want = req.max_messages as usize;
    // Each group's first hidden unexpired message (in flight or delayed: it holds back the
    // group's later ones), and the queue's next visibility time.
    let mut heads: HashMap<String, i64> = HashMap::new();
    let mut next_visible: Option<i64> = None;
    {
        let mut hidden = c.prepare_cached(
            "SELECT COALESCE(group_id, ''), MIN(seq), MIN(visible_at) \
             FROM messages INDEXED BY messages_visibility WHERE queue_id = ?1 \
             AND visible_at > ?2 AND expires_at > ?2 GROUP BY 1",
        )?;
        let rows = hidden.query_map(params![req.queue_id, req.now_ms], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, i64>(2)?,
            ))
        })?;
        for row in rows {
            let (group, head, visible_at) = row?;
            next_visible = Some(next_visible.map_or(visible_at, |n| n.min(visible_at)));
            heads.insert(group, head);
        }
    }
    let mut scan = FifoScan::new(req, heads);
    let mut rows_stmt = c.prepare_cached(
        "SELECT seq, receive_count, expires_at, group_id, visible_at FROM messages \
         INDEXED BY messages_queue_order WHERE queue_id = ?1 AND seq > ?2 AND visible_at <= ?3 \
         ORDER BY seq LIMIT ?4",
    )?;
    let mut group_stmt = c.prepare_cached(
        "SELECT seq, receive_count, expires_at FROM messages INDEXED BY messages_group \
         WHERE queue_id = ?1 AND group_id = ?2 AND seq > ?3 AND seq < ?4 AND visible_at <= ?5 \
         ORDER BY seq LIMIT ?6",
    )?;
    loop {
        match scan.next() {
            FifoRead::Window { after, limit } => {
                let mut rows = rows_stmt.query(params![req.queue_id, after, req.now_ms, limit])?;
                let mut n = 0;
                while let Some(r) = rows.next()? {
                    n += 1;
                    let group: Option<String> = r.get(3)?;
                    scan.window_row(
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        group.as_deref().unwrap_or_default(),
                        r.get(4)?,
                    );
                }
                scan.end_window(n);
            }
            FifoRead::Groups(reads) => {
                // One group after another, each only while it can still count
                // (`FifoScan::wants_group`): once a deep group fills the receive, the
                // later groups' rows are not read (each a row far from the others).
                for (i, g) in reads.iter().enumerate() {
                    if !scan.wants_group(i) {
                        continue;
                    }
                    let mut rows = group_stmt.query(params![
                        req.queue_id,
                        g.group,
                        g.from,
                        g.head,
                        req.now_ms,
                        g.limit
                    ])?;
                    while let Some(r) = rows.next()? {
                        scan.group_row(i, r.get(0)?, r.get(1)?, r.get(2)?);
                        if !scan.wants_group(i) {
                            break;
                        }
                    }
                }
                scan.end_groups();
            }
            FifoRead::Done => break,
        }
    }
    let walk = scan.finish();
    let FifoWalk {
        take,
        expired,
        dead,
        ..
    } = walk;
    let mut expire = c.prepare_cached("DELETE FROM messages WHERE seq = ?1")?;
    for seq in expired {
        expire.execute([seq])?;
    }
    if let Some(rule) = &req.redrive {
        for seq in dead {
            dead_letter(c, seq, rule, req.now_ms)?;
            out.dead_lettered += 1;
        }
    }
    // Groups whose next message cannot be opened: the rest of them waits.
    let mut blocked: HashSet<String> = HashSet::new();
    let mut group_of = c.prepare_cached("SELECT group_id FROM messages WHERE seq = ?1")?;
    for seq in take.into_iter().take(want) {
        if !blocked.is_empty() {
            let group: Option<String> = group_of.query_row([seq], |r| r.get(0))?;
            if blocked.contains(group.as_deref().unwrap_or_default()) {
                continue;
            }
        }
        match claim(
            c,
            req,
            seq,
            token(req, out.messages.len())?,
            sealer,
            &mut out,
        )? {
            Claim::Got(message) => out.messages.push(message),
            Claim::Unreadable(m) => {
                blocked.insert(m.group_id.unwrap_or_default());
            }
        }
    }
    if let (Some(attempt), false) = (&req.attempt, out.messages.is_empty()) {
        record_attempt(c, req, attempt, &out.messages)?;
    }
    if out.messages.len() < want {
        out.next_visible_at_ms = next_visible;
    }
    Ok(out)
}

pub fn delete_message(
    c: &Connection,
    queue_id: i64,
    seq: i64,
    strict: Option<(i64, i64)>,
) -> rusqlite::Result<DeleteOutcome> {
    if let Some((token, now_ms)) = strict {
        let row: Option<(i64, i64)> = c
            .prepare_cached(
                "SELECT receipt_token, visible_at FROM messages WHERE seq = ?1 AND queue_id = ?2",
            )?
            .query_row(params![seq, queue_id], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?;
        match row {
            None => return Ok(DeleteOutcome::NotFound),
            Some((current, visible_at)) if current != token || visible_at <= now_ms => {
                return Ok(DeleteOutcome::Stale)
            }
            Some(_) => {}
        }
    }
    let n = c
        .prepare_cached("DELETE FROM messages WHERE seq = ?1 AND queue_id = ?2")?
        .execute(params![seq, queue_id])?;
    Ok(if n > 0 {
        DeleteOutcome::Deleted
    } else {
        DeleteOutcome::NotFound
    })
}

pub fn delete_message_by_id(
    c: &Connection,
    queue_id: i64,
    message_id: &str,
) -> rusqlite::Result<bool> {
    let n = c
        .prepare_cached(
            "DELETE FROM messages INDEXED BY messages_queue_order \
             WHERE queue_id = ?2 AND message_id = ?1",
        )?
        .execute(params![message_id, queue_id])?;
    Ok(n > 0)
}

pub fn delete_unnamed_message(c: &Connection, queue_id: i64, seq: i64) -> rusqlite::Result<bool> {
    let n = c
        .prepare_cached(
            "DELETE FROM messages WHERE seq = ?1 AND queue_id = ?2 AND message_id IS NULL",
        )?
        .execute(params![seq, queue_id])?;
    Ok(n > 0)
}

pub fn change_visibility(
    c: &Connection,
    queue_id: i64,
    seq: i64,
    token: Option<i64>,
    visible_at_ms: i64,
    max_hidden_ms: i64,
) -> rusqlite::Result<VisibilityChange> {
    let row: Option<(i64, i64, Option<i64>)> = c
        .prepare_cached(
            "SELECT receive_count, receipt_token, received_at FROM messages \
             WHERE seq = ?1 AND queue_id = ?2",
        )?
        .query_row(params![seq, queue_id], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .optional()?;
    let Some((receive_count, receipt_token, received_at)) = row else {
        return Ok(VisibilityChange::NotFound);
    };
    let row = VisibilityRow {
        receive_count,
        receipt_token,
        received_at,
    };
    let verdict = visibility::classify(row, token, visible_at_ms, max_hidden_ms);
    if verdict != VisibilityChange::Changed {
        return Ok(verdict);
    }
    c.prepare_cached("UPDATE messages SET visible_at = ?2 WHERE seq = ?1")?
        .execute(params![seq, visible_at_ms])?;
    Ok(VisibilityChange::Changed)
}

pub fn purge_queue(
    c: &Connection,
    queue_id: i64,
    now_ms: i64,
    next_after_ms: i64,
) -> rusqlite::Result<PurgeOutcome> {
    let held = c
        .prepare_cached(
            "UPDATE queues SET purge_hold_until = ?3 WHERE id = ?1 \
             AND (purge_hold_until IS NULL OR purge_hold_until <= ?2)",
        )?
        .execute(params![queue_id, now_ms, next_after_ms])?
        == 0;
    let exists = || -> rusqlite::Result<bool> {
        c.prepare_cached("SELECT 1 FROM queues WHERE id = ?1")?
            .query_row([queue_id], |_| Ok(()))
            .optional()
            .map(|r| r.is_some())
    };
    if held && exists()? {
        return Ok(PurgeOutcome::InProgress);
    }
    let n = c
        .prepare_cached("DELETE FROM messages WHERE queue_id = ?1")?
        .execute([queue_id])?;
    // A purge empties the FIFO deduplication window too: a message sent after it with a
    // deduplication id seen before the purge is accepted (AWS's recorded PurgeQueue).
    c.prepare_cached("DELETE FROM fifo_dedup WHERE queue_id = ?1")?
        .execute([queue_id])?;
    Ok(PurgeOutcome::Purged(n as u64))
}

/// Message counts of a queue without reading every message: the visible ones are counted
/// in the visibility index alone (no row read), less the expired ones not yet swept
/// (found through the expiry index); only the messages not visible now (in flight or
/// delayed) are read. A queue of 1,000,000 visible messages takes tens of milliseconds,
/// not the hundreds a scan of its rows took, while the store waits.
pub fn queue_counts(c: &Connection, queue_id: i64, now_ms: i64) -> rusqlite::Result<QueueCounts> {
    let visible: i64 = c
        .prepare_cached(
            "SELECT COUNT(*) FROM messages INDEXED BY messages_visibility \
             WHERE queue_id = ?1 AND visible_at <= ?2",
        )?
        .query_row(params![queue_id, now_ms], |r| r.get(0))?;
    let expired: i64 = c
        .prepare_cached(
            "SELECT COUNT(*) FROM messages INDEXED BY messages_expiry \
             WHERE expires_at <= ?2 AND queue_id = ?1 AND visible_at <= ?2",
        )?
        .query_row(params![queue_id, now_ms], |r| r.get(0))?;
    let (in_flight, delayed) = c
        .prepare_cached(
            "SELECT COALESCE(SUM(receive_count > 0), 0), COALESCE(SUM(receive_count = 0), 0) \
             FROM messages INDEXED BY messages_visibility \
             WHERE queue_id = ?1 AND visible_at > ?2 AND expires_at > ?2",
        )?
        .query_row(params![queue_id, now_ms], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(QueueCounts {
        visible: visible - expired,
        in_flight,
        delayed,
    })
}

/// The groups of a fair queue with their counts (see `Store::fair_groups`).
pub fn fair_groups(
    c: &Connection,
    queue_id: i64,
    now_ms: i64,
) -> rusqlite::Result<Option<Vec<GroupCounts>>> {
    if !queue_is_fair(c, queue_id, &mut HashMap::new())? {
        return Ok(None);
    }
    let mut stmt = c.prepare_cached(
        "SELECT group_id, COALESCE(SUM(visible_at <= ?2), 0), \
         COALESCE(SUM(visible_at > ?2 AND receive_count > 0), 0), \
         COALESCE(SUM(visible_at > ?2 AND receive_count = 0), 0), \
         MIN(CASE WHEN visible_at <= ?2 THEN sent_at END) \
         FROM messages INDEXED BY messages_queue_order \
         WHERE queue_id = ?1 AND expires_at > ?2 GROUP BY group_id",
    )?;
    let rows = stmt.query_map(params![queue_id, now_ms], |r| {
        Ok(GroupCounts {
            group: r.get(0)?,
            counts: QueueCounts {
                visible: r.get(1)?,
                in_flight: r.get(2)?,
                delayed: r.get(3)?,
            },
            oldest_visible_sent_at_ms: r.get(4)?,
        })
    })?;
    rows.collect::<rusqlite::Result<Vec<_>>>().map(Some)
}

/// In-flight messages of a queue, over the range of the visibility index that is not
/// visible at `now_ms` (see `Store::count_in_flight`).
pub fn count_in_flight(c: &Connection, queue_id: i64, now_ms: i64) -> rusqlite::Result<i64> {
    c.prepare_cached(
        "SELECT COUNT(*) FROM messages INDEXED BY messages_visibility \
         WHERE queue_id = ?1 AND visible_at > ?2 AND receive_count > 0 AND expires_at > ?2",
    )?
    .query_row(params![queue_id, now_ms], |r| r.get(0))
}

/// [`loft_core::store::Store::oldest_sent_at`]: the send-order index's first live row.
pub fn oldest_sent_at(c: &Connection, queue_id: i64, now_ms: i64) -> rusqlite::Result<Option<i64>> {
    c.prepare_cached(
        "SELECT sent_at FROM messages INDEXED BY messages_queue_order \
         WHERE queue_id = ?1 AND expires_at > ?2 ORDER BY seq LIMIT 1",
    )?
    .query_row(params![queue_id, now_ms], |r| r.get(0))
    .optional()
}

/// Messages of one queue after `after_seq`, in send order, read without claiming them.
pub fn peek_messages(
    c: &Connection,
    queue_id: i64,
    after_seq: i64,
    limit: u32,
    now_ms: i64,
) -> rusqlite::Result<Vec<StoredMessage>> {
    let mut stmt = c.prepare_cached(&format!(
        "SELECT {MESSAGE_COLUMNS} FROM messages INDEXED BY messages_queue_order \
         WHERE queue_id = ?1 AND seq > ?2 AND expires_at > ?3 ORDER BY seq LIMIT ?4"
    ))?;
    let rows = stmt.query_map(
        params![queue_id, after_seq, now_ms, limit as i64],
        message_row,
    )?;
    rows.collect()
}

pub fn delete_expired(c: &Connection, now_ms: i64) -> rusqlite::Result<u64> {
    for sql in [
        "DELETE FROM fifo_dedup WHERE expires_at <= ?1",
        "DELETE FROM topic_dedup WHERE expires_at <= ?1",
        "DELETE FROM receive_attempts WHERE expires_at <= ?1",
        "DELETE FROM deleted_queues WHERE hold_until <= ?1",
        "DELETE FROM topic_archive WHERE expires_at <= ?1",
    ] {
        c.prepare_cached(sql)?.execute([now_ms])?;
    }
    Ok(
        c.prepare_cached("DELETE FROM messages WHERE expires_at <= ?1")?
            .execute([now_ms])? as u64,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A migrated database holding queues 1 to 12, queue 12 fair.
    fn database() -> (Connection, MessageSeqs) {
        let mut c = Connection::open_in_memory().unwrap();
        crate::sqlite::migrations::migrate(&mut c).unwrap();
        for i in 1..=12 {
            c.execute(
                "INSERT INTO queues (id, name, attributes, tags, created_at, modified_at, fair) \
                 VALUES (?1, ?2, '{}', '{}', 0, 0, ?3)",
                params![i, format!("q{i}"), i == 12],
            )
            .unwrap();
        }
        let seqs = MessageSeqs::load(&c).unwrap();
        (c, seqs)
    }

    /// A copy of one publish to queue `queue`, as the SNS service renders it.
    fn copy(queue: i64, n: usize) -> (i64, NewMessage) {
        (
            queue,
            NewMessage {
                message_id: Some(format!("id-{queue}-{n}")),
                body: format!("body {n}"),
                md5_body: format!("md5 {n}"),
                message_attributes: n.is_multiple_of(2).then(|| format!("{{\"a\":{n}}}")),
                system_attributes: n
                    .is_multiple_of(3)
                    .then(|| "{\"AWSTraceHeader\":1}".to_owned()),
                sender_id: "000000000000".into(),
                sent_at_ms: 1_000,
                visible_at_ms: 1_000 + n as i64,
                expires_at_ms: 9_000,
                group_id: None,
                dedup_id: None,
                receive_count: 0,
                first_received_at_ms: None,
                dead_letter_source: None,
                dedup: None,
                seal: (n % 2 == 1).then(|| SealWith {
                    key_id: "k".into(),
                    period: 1,
                }),
            },
        )
    }

    /// Every stored column of every message, in `seq` order.
    fn rows(c: &Connection) -> Vec<Vec<rusqlite::types::Value>> {
        let mut stmt = c.prepare("SELECT * FROM messages ORDER BY seq").unwrap();
        let n = stmt.column_count();
        let rows = stmt
            .query_map([], |r| (0..n).map(|i| r.get(i)).collect())
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        rows
    }

    /// One table row per kind of send: whether it takes the multi-row `INSERT`
    /// ([`all_plain`]), and that it stores exactly what sending its messages one at a
    /// time (the one-row path) stores, with the same answers.
    #[test]
    fn a_plain_fan_out_is_one_multi_row_insert_storing_what_single_inserts_store() {
        let fan_out = |queues: std::ops::RangeInclusive<i64>| -> Vec<(i64, NewMessage)> {
            queues.enumerate().map(|(n, q)| copy(q, n)).collect()
        };
        let grouped = {
            let mut m = fan_out(1..=10);
            m[4].1.group_id = Some("g".into());
            m
        };
        let fifo = {
            let mut m = fan_out(1..=3);
            m[1].1.dedup = Some(DedupKey {
                scope: String::new(),
                id: "d".into(),
                expires_at_ms: 9_000,
            });
            m[1].1.dedup_id = Some("d".into());
            m
        };
        let many: Vec<_> = (0..37).map(|n| copy(1 + n as i64 % 11, n)).collect();
        let batch: Vec<_> = (0..10).map(|n| copy(3, n)).collect();
        type Case<'a> = (&'a str, Vec<(i64, NewMessage)>, bool);
        let cases: Vec<Case> = vec![
            ("ten copies to ten queues", fan_out(1..=10), true),
            ("37 copies: statements of 16, 16 and 5 rows", many, true),
            ("a batch of ten to one queue", batch, true),
            ("one copy", fan_out(1..=1), false),
            ("a copy with a MessageGroupId", grouped, false),
            ("a copy with a deduplication key", fifo, false),
            ("a copy to a fair queue", fan_out(3..=12), false),
        ];
        for (name, messages, plain) in cases {
            let (c, seqs) = database();
            assert_eq!(
                all_plain(&c, &messages, &mut HashMap::new()).unwrap(),
                plain,
                "{name}"
            );
            let sent = send_messages(&c, &seqs, &messages).unwrap();
            let (one, one_seqs) = database();
            let single: Vec<SentMessage> = messages
                .iter()
                .flat_map(|m| send_messages(&one, &one_seqs, std::slice::from_ref(m)).unwrap())
                .collect();
            assert_eq!(sent, single, "{name}: the answers");
            assert_eq!(rows(&c), rows(&one), "{name}: the stored rows");
            assert_eq!(rows(&c).len(), messages.len(), "{name}");
        }
    }
}
