//! The SQL of each store operation, run on the writer thread inside a group transaction.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicI64, Ordering};

use loft_core::model::*;
use rusqlite::{params, Connection, OptionalExtension, Row};

use crate::fifo::{FifoRead, FifoScan, FifoWalk};
use crate::replay::{drop_held, merge_held};
use crate::seal::{Claimed, SealedFifoPublish, Sealer};
use crate::visibility::{self, VisibilityRow};

type Map = BTreeMap<String, String>;

fn to_json(map: &Map) -> String {
    serde_json::to_string(map).unwrap_or_else(|_| "{}".into())
}

fn from_json(text: &str) -> Map {
    serde_json::from_str(text).unwrap_or_default()
}

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

// ----- messages

/// The columns [`message_row`] reads, in its order (a macro, so that statements can be
/// built with `concat!` as constants).
macro_rules! message_columns {
    () => {
        "seq, queue_id, message_id, body, \
    md5_body, message_attributes, system_attributes, sender_id, sent_at, visible_at, \
    receive_count, first_received_at, receipt_token, group_id, dedup_id, dead_letter_source, sealed"
    };
}
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

pub fn send_messages(
    c: &Connection,
    seqs: &MessageSeqs,
    messages: &[(i64, NewMessage)],
) -> rusqlite::Result<Vec<SentMessage>> {
    let mut stmt = c.prepare_cached(
        "INSERT INTO messages (queue_id, message_id, body, md5_body, message_attributes, \
         system_attributes, sender_id, sent_at, visible_at, expires_at, receive_count, \
         first_received_at, group_id, dedup_id, dead_letter_source, fair_key, sealed, seq) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, \
         ?18)",
    )?;
    // A duplicate FIFO send leaves its number unused: a gap, never a reuse.
    let mut next = seqs.take(c, messages.len())?;
    let mut out = Vec::with_capacity(messages.len());
    let mut fair: HashMap<i64, bool> = HashMap::new();
    prefetch_fair(c, messages, &mut fair)?;
    for (queue_id, m) in messages {
        if let Some(key) = &m.dedup {
            let original: Option<(i64, Option<String>)> = c
                .prepare_cached(
                    "SELECT seq, message_id FROM fifo_dedup WHERE queue_id = ?1 AND scope = ?2 \
                     AND dedup_id = ?3 AND expires_at > ?4",
                )?
                .query_row(params![queue_id, key.scope, key.id, m.sent_at_ms], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })
                .optional()?;
            if let Some((seq, message_id)) = original {
                out.push(SentMessage {
                    seq,
                    message_id: message_id.filter(|id| !id.is_empty()),
                    duplicate: true,
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
        ])?;
        let seq = next;
        next += 1;
        let message_id = m.message_id.clone();
        if let Some(key) = &m.dedup {
            c.prepare_cached(
                "INSERT OR REPLACE INTO fifo_dedup (queue_id, scope, dedup_id, seq, message_id, \
                 expires_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?
            .execute(params![
                queue_id,
                key.scope,
                key.id,
                seq,
                message_id.as_deref().unwrap_or_default(),
                key.expires_at_ms
            ])?;
        }
        out.push(SentMessage {
            seq,
            message_id,
            duplicate: false,
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
/// receive's transaction: the row is read and opened (when sealed) first, and only a
/// readable message is claimed. One that cannot be opened is left untouched (no
/// visibility change, no receive count) and named in `out` ([`Sealer::open_claimed`]).
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
    let mut m = match sealer.open_claimed(read, &mut out.undecryptable) {
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
/// still wants. A receive so reads about as many rows as it returns plus the groups it
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
                for (i, g) in reads.iter().enumerate() {
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

// ----- topics

fn topic_row(r: &Row<'_>) -> rusqlite::Result<TopicRecord> {
    Ok(TopicRecord {
        id: r.get(0)?,
        name: r.get(1)?,
        attributes: from_json(&r.get::<_, String>(2)?),
        tags: from_json(&r.get::<_, String>(3)?),
        created_at_ms: r.get(4)?,
    })
}

pub fn create_topic(
    c: &Connection,
    name: &str,
    attributes: &Map,
    tags: &Map,
    now_ms: i64,
) -> rusqlite::Result<(TopicRecord, bool)> {
    let inserted = c
        .prepare_cached(
            "INSERT INTO topics (name, attributes, tags, created_at) VALUES (?1, ?2, ?3, ?4) \
             ON CONFLICT(name) DO NOTHING",
        )?
        .execute(params![name, to_json(attributes), to_json(tags), now_ms])?;
    let topic = get_topic(c, name)?.ok_or(rusqlite::Error::QueryReturnedNoRows)?;
    Ok((topic, inserted == 1))
}

pub fn get_topic(c: &Connection, name: &str) -> rusqlite::Result<Option<TopicRecord>> {
    c.prepare_cached("SELECT id, name, attributes, tags, created_at FROM topics WHERE name = ?1")?
        .query_row([name], topic_row)
        .optional()
}

pub fn list_topics(c: &Connection) -> rusqlite::Result<Vec<TopicRecord>> {
    let mut stmt = c.prepare_cached(
        "SELECT id, name, attributes, tags, created_at FROM topics ORDER BY name",
    )?;
    let rows = stmt.query_map([], topic_row)?;
    rows.collect()
}

pub fn delete_topic(c: &Connection, topic_id: i64) -> rusqlite::Result<bool> {
    c.prepare_cached("DELETE FROM subscriptions WHERE topic_id = ?1")?
        .execute([topic_id])?;
    c.prepare_cached("DELETE FROM subscription_replays WHERE topic_id = ?1")?
        .execute([topic_id])?;
    c.prepare_cached("DELETE FROM topic_dedup WHERE topic_id = ?1")?
        .execute([topic_id])?;
    delete_archive(c, topic_id)?;
    Ok(c.prepare_cached("DELETE FROM topics WHERE id = ?1")?
        .execute([topic_id])?
        == 1)
}

pub fn set_topic_json(
    c: &Connection,
    topic_id: i64,
    column: &'static str,
    map: &Map,
) -> rusqlite::Result<()> {
    c.prepare_cached(&format!("UPDATE topics SET {column} = ?2 WHERE id = ?1"))?
        .execute(params![topic_id, to_json(map)])?;
    Ok(())
}

// ----- subscriptions

const SUBSCRIPTION_COLUMNS: &str = "s.seq, s.topic_id, t.name, s.uuid, s.protocol, s.endpoint, \
    s.attributes, s.confirmed, s.token";

fn subscription_row(r: &Row<'_>) -> rusqlite::Result<SubscriptionRecord> {
    Ok(SubscriptionRecord {
        seq: r.get(0)?,
        topic_id: r.get(1)?,
        topic_name: r.get(2)?,
        uuid: r.get(3)?,
        protocol: SubscriptionProtocol::parse(&r.get::<_, String>(4)?).map_err(|e| {
            rusqlite::Error::FromSqlConversionFailure(4, rusqlite::types::Type::Text, Box::new(e))
        })?,
        endpoint: r.get(5)?,
        attributes: from_json(&r.get::<_, String>(6)?),
        confirmed: r.get(7)?,
        token: r.get(8)?,
    })
}

pub fn create_subscription(
    c: &Connection,
    topic_id: i64,
    s: &NewSubscription,
) -> rusqlite::Result<SubscriptionRecord> {
    c.prepare_cached(
        "INSERT INTO subscriptions (topic_id, uuid, protocol, endpoint, attributes, confirmed, \
         token) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![
        topic_id,
        s.uuid,
        s.protocol.as_str(),
        s.endpoint,
        to_json(&s.attributes),
        s.confirmed,
        s.token
    ])?;
    get_subscription(c, &s.uuid)?.ok_or(rusqlite::Error::QueryReturnedNoRows)
}

pub fn list_subscriptions(
    c: &Connection,
    topic_id: Option<i64>,
) -> rusqlite::Result<Vec<SubscriptionRecord>> {
    let mut stmt = c.prepare_cached(&format!(
        "SELECT {SUBSCRIPTION_COLUMNS} FROM subscriptions s JOIN topics t ON t.id = s.topic_id \
         WHERE ?1 IS NULL OR s.topic_id = ?1 ORDER BY s.seq"
    ))?;
    let rows = stmt.query_map([topic_id], subscription_row)?;
    rows.collect()
}

pub fn get_subscription(
    c: &Connection,
    uuid: &str,
) -> rusqlite::Result<Option<SubscriptionRecord>> {
    c.prepare_cached(&format!(
        "SELECT {SUBSCRIPTION_COLUMNS} FROM subscriptions s JOIN topics t ON t.id = s.topic_id \
         WHERE s.uuid = ?1"
    ))?
    .query_row([uuid], subscription_row)
    .optional()
}

pub fn update_subscription(
    c: &Connection,
    uuid: &str,
    attributes: &Map,
    confirmed: bool,
    token: Option<String>,
) -> rusqlite::Result<()> {
    c.prepare_cached(
        "UPDATE subscriptions SET attributes = ?2, confirmed = ?3, token = ?4 WHERE uuid = ?1",
    )?
    .execute(params![uuid, to_json(attributes), confirmed, token])?;
    Ok(())
}

pub fn delete_subscription(c: &Connection, uuid: &str) -> rusqlite::Result<bool> {
    c.prepare_cached("DELETE FROM subscription_replays WHERE subscription = ?1")?
        .execute([uuid])?;
    Ok(
        c.prepare_cached("DELETE FROM subscriptions WHERE uuid = ?1")?
            .execute([uuid])?
            == 1,
    )
}

// ----- message moves

pub fn move_messages(
    c: &Connection,
    seqs: &MessageSeqs,
    source: i64,
    target: &MoveTarget,
    new_message_ids: &[String],
    now_ms: i64,
) -> rusqlite::Result<u64> {
    let limit = new_message_ids.len();
    // Groups with a message in flight in the source keep all their messages there, so a
    // redrive never lets a later message of a group overtake an earlier one.
    let mut locked: HashSet<String> = c
        .prepare_cached(
            "SELECT DISTINCT group_id FROM messages WHERE queue_id = ?1 AND visible_at > ?2 \
             AND receive_count > 0 AND group_id IS NOT NULL",
        )?
        .query_map(params![source, now_ms], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    // Read in send order only as far as the limit needs.
    let mut candidates = c.prepare_cached(
        "SELECT seq, dead_letter_source, group_id, visible_at FROM messages \
         INDEXED BY messages_queue_order WHERE queue_id = ?1 ORDER BY seq",
    )?;
    let mut scan = candidates.query(params![source])?;
    let mut rows: Vec<(i64, Option<String>)> = Vec::new();
    while rows.len() < limit {
        let Some(r) = scan.next()? else { break };
        let (seq, origin, group, visible_at): (i64, Option<String>, Option<String>, i64) =
            (r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?);
        if group.as_ref().is_some_and(|g| locked.contains(g)) {
            continue;
        }
        if visible_at > now_ms {
            if let Some(g) = group {
                locked.insert(g);
            }
            continue;
        }
        rows.push((seq, origin));
    }
    drop(scan);
    // A redriven message is a new message in its destination: new MessageId, sent now,
    // after what is already there, retention counted afresh (SQS Developer Guide,
    // "Configure a dead-letter queue redrive").
    let mut copy = c.prepare_cached(
        "INSERT INTO messages (queue_id, message_id, body, md5_body, message_attributes, \
         system_attributes, sender_id, sent_at, visible_at, expires_at, receive_count, \
         group_id, dedup_id, fair_key, sealed, seq) \
         SELECT ?2, ?3, body, md5_body, message_attributes, system_attributes, sender_id, \
         ?4, ?4, ?4 + (expires_at - sent_at), 0, group_id, dedup_id, \
         CASE WHEN (SELECT fair FROM queues WHERE id = ?2) = 1 THEN 0 END, sealed, ?5 \
         FROM messages WHERE seq = ?1",
    )?;
    let mut remove = c.prepare_cached("DELETE FROM messages WHERE seq = ?1")?;
    let mut moved = 0;
    let mut ids = new_message_ids.iter();
    for (seq, origin) in rows {
        let dest = match target {
            MoveTarget::Queue(id) => Some(*id),
            MoveTarget::Sources(map) => origin
                .as_ref()
                .and_then(|o| map.iter().find(|(arn, _)| arn == o).map(|(_, id)| *id)),
        };
        if let Some(dest) = dest {
            let Some(id) = ids.next() else { break };
            copy.execute(params![seq, dest, id, now_ms, seqs.take(c, 1)?])?;
            remove.execute([seq])?;
            moved += 1;
        }
    }
    Ok(moved)
}

// ----- message-move tasks

const MOVE_TASK_COLUMNS: &str = "handle, source_arn, source_queue, destination_arn, \
    max_per_second, status, moved, to_move, failure_reason, started_at, owner, lease_until";

fn move_task_row(r: &Row<'_>) -> rusqlite::Result<MoveTaskRecord> {
    Ok(MoveTaskRecord {
        handle: r.get(0)?,
        source_arn: r.get(1)?,
        source_queue: r.get(2)?,
        destination_arn: r.get(3)?,
        max_per_second: r.get(4)?,
        status: MoveTaskStatus::parse(&r.get::<_, String>(5)?),
        moved: r.get(6)?,
        to_move: r.get(7)?,
        failure_reason: r.get(8)?,
        started_at_ms: r.get(9)?,
        owner: r.get(10)?,
        lease_until_ms: r.get(11)?,
    })
}

/// Renews `lease` if its task is still running under its owner; whether it is.
fn renew_move_task(c: &Connection, lease: &MoveTaskLease) -> rusqlite::Result<bool> {
    Ok(c.prepare_cached(
        "UPDATE move_tasks SET lease_until = ?3 WHERE handle = ?1 AND owner = ?2 \
             AND status = 'RUNNING'",
    )?
    .execute(params![lease.handle, lease.owner, lease.lease_until_ms])?
        == 1)
}

/// One step of a move task, or a move without one.
pub fn move_step(
    c: &Connection,
    seqs: &MessageSeqs,
    source: i64,
    target: &MoveTarget,
    new_message_ids: &[String],
    now_ms: i64,
    task: Option<&MoveTaskLease>,
) -> rusqlite::Result<Option<u64>> {
    if let Some(lease) = task {
        if !renew_move_task(c, lease)? {
            return Ok(None);
        }
    }
    let moved = move_messages(c, seqs, source, target, new_message_ids, now_ms)?;
    if let Some(lease) = task {
        c.prepare_cached("UPDATE move_tasks SET moved = moved + ?2 WHERE handle = ?1")?
            .execute(params![lease.handle, moved as i64])?;
    }
    Ok(Some(moved))
}

pub fn create_move_task(c: &Connection, t: &MoveTaskRecord) -> rusqlite::Result<bool> {
    Ok(c.prepare_cached(
        "INSERT INTO move_tasks (handle, source_arn, source_queue, destination_arn, \
             max_per_second, status, moved, to_move, failure_reason, started_at, owner, \
             lease_until) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12) \
             ON CONFLICT DO NOTHING",
    )?
    .execute(params![
        t.handle,
        t.source_arn,
        t.source_queue,
        t.destination_arn,
        t.max_per_second,
        t.status.as_str(),
        t.moved,
        t.to_move,
        t.failure_reason,
        t.started_at_ms,
        t.owner,
        t.lease_until_ms
    ])? == 1)
}

pub fn list_move_tasks(
    c: &Connection,
    source_arn: &str,
    limit: u32,
) -> rusqlite::Result<Vec<MoveTaskRecord>> {
    let mut stmt = c.prepare_cached(&format!(
        "SELECT {MOVE_TASK_COLUMNS} FROM move_tasks WHERE source_arn = ?1 \
         ORDER BY id DESC LIMIT ?2"
    ))?;
    let rows = stmt.query_map(params![source_arn, limit as i64], move_task_row)?;
    rows.collect()
}

pub fn cancel_move_task(c: &Connection, handle: &str) -> rusqlite::Result<Option<MoveTaskRecord>> {
    c.prepare_cached(&format!(
        "UPDATE move_tasks SET status = 'CANCELLED' WHERE handle = ?1 AND status = 'RUNNING' \
         RETURNING {MOVE_TASK_COLUMNS}"
    ))?
    .query_row([handle], move_task_row)
    .optional()
}

pub fn claim_move_tasks(
    c: &Connection,
    owner: &str,
    now_ms: i64,
    lease_until_ms: i64,
    limit: u32,
) -> rusqlite::Result<Vec<MoveTaskRecord>> {
    let mut stmt = c.prepare_cached(&format!(
        "UPDATE move_tasks SET owner = ?1, lease_until = ?3 WHERE id IN \
         (SELECT id FROM move_tasks WHERE status = 'RUNNING' AND lease_until <= ?2 \
          ORDER BY id LIMIT ?4) RETURNING {MOVE_TASK_COLUMNS}"
    ))?;
    let rows = stmt.query_map(
        params![owner, now_ms, lease_until_ms, limit as i64],
        move_task_row,
    )?;
    rows.collect()
}

pub fn finish_move_task(
    c: &Connection,
    lease: &MoveTaskLease,
    status: MoveTaskStatus,
    failure_reason: Option<&str>,
) -> rusqlite::Result<bool> {
    Ok(c.prepare_cached(
        "UPDATE move_tasks SET status = ?3, failure_reason = ?4, owner = NULL, \
             lease_until = 0 WHERE handle = ?1 AND owner = ?2 AND status = 'RUNNING'",
    )?
    .execute(params![
        lease.handle,
        lease.owner,
        status.as_str(),
        failure_reason
    ])? == 1)
}

pub fn release_move_tasks(c: &Connection, owner: &str) -> rusqlite::Result<()> {
    c.prepare_cached(
        "UPDATE move_tasks SET owner = NULL, lease_until = 0 WHERE owner = ?1 \
         AND status = 'RUNNING'",
    )?
    .execute([owner])?;
    Ok(())
}

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
    c.prepare_cached(&format!(
        "INSERT INTO event_source_mappings ({MAPPING_COLUMNS}) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)"
    ))?
    .execute(params![
        m.uuid,
        m.function_arn,
        m.event_source_arn,
        m.batch_size,
        m.maximum_batching_window_seconds,
        m.enabled,
        list_json(&m.function_response_types),
        list_json(&m.filter_patterns),
        m.maximum_concurrency,
        m.last_modified_ms,
        m.owner,
        m.lease_until_ms,
        m.account
    ])?;
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
    Ok(c.prepare_cached(
        "UPDATE event_source_mappings SET function_arn = ?2, batch_size = ?3, \
         batching_window = ?4, enabled = ?5, function_response_types = ?6, \
         filter_patterns = ?7, maximum_concurrency = ?8, last_modified = ?9 WHERE uuid = ?1",
    )?
    .execute(params![
        m.uuid,
        m.function_arn,
        m.batch_size,
        m.maximum_batching_window_seconds,
        m.enabled,
        list_json(&m.function_response_types),
        list_json(&m.filter_patterns),
        m.maximum_concurrency,
        m.last_modified_ms
    ])? == 1)
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

// ----- mobile push platforms

pub fn create_platform_application(
    c: &Connection,
    arn: &str,
    attributes: &Map,
) -> rusqlite::Result<()> {
    c.prepare_cached(
        "INSERT INTO platform_applications (arn, attributes) VALUES (?1, ?2) \
         ON CONFLICT (arn) DO NOTHING",
    )?
    .execute(params![arn, to_json(attributes)])?;
    Ok(())
}

pub fn create_platform_endpoint(
    c: &Connection,
    application_arn: &str,
    arn: &str,
    token: &str,
    attributes: &Map,
) -> rusqlite::Result<Option<String>> {
    let app: Option<i64> = c
        .prepare_cached("SELECT 1 FROM platform_applications WHERE arn = ?1")?
        .query_row([application_arn], |r| r.get(0))
        .optional()?;
    if app.is_none() {
        return Ok(None);
    }
    c.prepare_cached(
        "INSERT INTO platform_endpoints (arn, application_arn, token, attributes) \
         VALUES (?1, ?2, ?3, ?4) ON CONFLICT DO NOTHING",
    )?
    .execute(params![arn, application_arn, token, to_json(attributes)])?;
    c.prepare_cached(
        "SELECT arn FROM platform_endpoints WHERE application_arn = ?1 AND token = ?2",
    )?
    .query_row(params![application_arn, token], |r| r.get(0))
    .optional()
}

fn platform_row(r: &Row<'_>) -> rusqlite::Result<PlatformRecord> {
    Ok(PlatformRecord {
        arn: r.get(0)?,
        attributes: from_json(&r.get::<_, String>(1)?),
    })
}

pub fn sms_attributes(c: &Connection, scope: &str) -> rusqlite::Result<BTreeMap<String, String>> {
    let mut stmt = c.prepare_cached("SELECT name, value FROM sms_attributes WHERE scope = ?1")?;
    let rows = stmt.query_map([scope], |r| Ok((r.get(0)?, r.get(1)?)))?;
    rows.collect()
}

pub fn set_sms_attributes(
    c: &Connection,
    scope: &str,
    attributes: &BTreeMap<String, String>,
) -> rusqlite::Result<()> {
    // The writer's transaction holds every job: all of them land or none.
    let mut stmt = c.prepare_cached(
        "INSERT INTO sms_attributes (scope, name, value) VALUES (?1, ?2, ?3) \
         ON CONFLICT (scope, name) DO UPDATE SET value = excluded.value",
    )?;
    for (name, value) in attributes {
        stmt.execute(rusqlite::params![scope, name, value])?;
    }
    Ok(())
}

pub fn get_platform(c: &Connection, arn: &str) -> rusqlite::Result<Option<PlatformRecord>> {
    c.prepare_cached(
        "SELECT arn, attributes FROM platform_applications WHERE arn = ?1 \
         UNION ALL SELECT arn, attributes FROM platform_endpoints WHERE arn = ?1",
    )?
    .query_row([arn], platform_row)
    .optional()
}

pub fn list_platform_applications(c: &Connection) -> rusqlite::Result<Vec<PlatformRecord>> {
    let mut stmt =
        c.prepare_cached("SELECT arn, attributes FROM platform_applications ORDER BY arn")?;
    let rows = stmt.query_map([], platform_row)?;
    rows.collect()
}

pub fn list_platform_endpoints(
    c: &Connection,
    application_arn: &str,
) -> rusqlite::Result<Vec<PlatformRecord>> {
    let mut stmt = c.prepare_cached(
        "SELECT arn, attributes FROM platform_endpoints WHERE application_arn = ?1 ORDER BY arn",
    )?;
    let rows = stmt.query_map([application_arn], platform_row)?;
    rows.collect()
}

pub fn update_platform_attributes(
    c: &Connection,
    arn: &str,
    attributes: &Map,
    token: Option<&str>,
) -> rusqlite::Result<bool> {
    let Some(mut current) = get_platform(c, arn)? else {
        return Ok(false);
    };
    current.attributes.extend(attributes.clone());
    let json = to_json(&current.attributes);
    c.prepare_cached("UPDATE platform_applications SET attributes = ?2 WHERE arn = ?1")?
        .execute(params![arn, json])?;
    c.prepare_cached(
        "UPDATE platform_endpoints SET attributes = ?2, token = COALESCE(?3, token) \
         WHERE arn = ?1",
    )?
    .execute(params![arn, json, token])?;
    Ok(true)
}

pub fn delete_platform(c: &Connection, arn: &str) -> rusqlite::Result<()> {
    c.prepare_cached("DELETE FROM platform_endpoints WHERE arn = ?1 OR application_arn = ?1")?
        .execute([arn])?;
    c.prepare_cached("DELETE FROM platform_applications WHERE arn = ?1")?
        .execute([arn])?;
    Ok(())
}

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
    let (status, hold_live, failure) = match &step.finish {
        ReplayFinish::Continue => (ReplayStatus::Replaying, true, None),
        ReplayFinish::CaughtUp => {
            let latest: i64 = c
                .prepare_cached("SELECT sequence FROM topics WHERE id = ?1")?
                .query_row([current.topic_id], |r| r.get(0))
                .optional()?
                .unwrap_or(0);
            // Caught up when the cursor reached the topic's last message, or when nothing
            // after it is archived: messages published while the topic kept no archive
            // (before its ArchivePolicy) can never be replayed, and must not keep the
            // replay waiting for them.
            let archived_after: bool = c
                .prepare_cached(
                    "SELECT EXISTS (SELECT 1 FROM topic_archive WHERE topic_id = ?1 \
                     AND sequence > ?2)",
                )?
                .query_row(params![current.topic_id, step.cursor], |r| r.get(0))?;
            if step.cursor >= latest || !archived_after {
                (ReplayStatus::Completed, false, None)
            } else {
                (ReplayStatus::Replaying, true, None)
            }
        }
        ReplayFinish::Ended => (ReplayStatus::Completed, true, None),
        ReplayFinish::Stopped => (ReplayStatus::Completed, false, None),
        ReplayFinish::Failed(why) => (ReplayStatus::Failed, false, Some(why.clone())),
    };
    let lease_until = if status.is_active() {
        step.lease_until_ms
    } else {
        0
    };
    let owner = status.is_active().then_some(step.owner.as_str());
    c.prepare_cached(
        "UPDATE subscription_replays SET cursor = ?2, status = ?3, hold_live = ?4, failure = ?5, \
         owner = ?6, lease_until = ?7 WHERE subscription = ?1",
    )?
    .execute(params![
        step.subscription,
        step.cursor,
        status.as_str(),
        hold_live,
        failure,
        owner,
        lease_until
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
    topic_id: i64,
    after_sequence: i64,
    from_ms: i64,
    until_ms: Option<i64>,
    now_ms: i64,
    limit: u32,
) -> rusqlite::Result<Vec<ArchivedMessage>> {
    let mut stmt = c.prepare_cached(
        "SELECT sequence, message_id, published_at, expires_at, published, sealed \
         FROM topic_archive WHERE topic_id = ?1 AND sequence > ?2 AND published_at >= ?3 \
         AND (?4 IS NULL OR published_at <= ?4) AND expires_at > ?5 \
         ORDER BY sequence LIMIT ?6",
    )?;
    let rows = stmt.query_map(
        params![topic_id, after_sequence, from_ms, until_ms, now_ms, limit],
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

// ----- reset

/// [`loft_core::store::Store::reset`]: every statement runs in the caller's transaction.
/// Queue and topic keys are matched by `(:all OR (:dflt AND no separator) OR prefix)`,
/// the account columns by `:account` (and `:recorded`, the recorded messages' form).
pub fn reset(c: &Connection, scope: Option<&ResetScope>) -> rusqlite::Result<ResetCounts> {
    let all = scope.is_none();
    let dflt = scope.is_some_and(|s| s.default_account);
    let prefix = scope.map(|s| s.key_prefix()).unwrap_or_default();
    let account = scope.map(|s| s.account.clone()).unwrap_or_default();
    let recorded = scope
        .map(|s| s.recorded_account().to_owned())
        .unwrap_or_default();
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
    Ok(out)
}
