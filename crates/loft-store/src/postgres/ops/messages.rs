//! Messages: send, receive (standard and FIFO), delete, visibility, purge, counts, peek, expiry.

use super::*;

// ----- messages

/// The columns of a [`StoredMessage`], from `messages` aliased `m`. Its visibility time
/// is when the message is visible again: `GREATEST(visible_at, hidden_until)` (a
/// standard receive hides it through `hidden_until`, migration 23, the HOT claim).
const MESSAGE_COLUMNS: &str = "m.seq, m.queue_id, m.message_id, \
    m.body, m.md5_body, m.message_attributes, m.system_attributes, m.sender_id, m.sent_at, \
    GREATEST(m.visible_at, m.hidden_until), m.receive_count, m.first_received_at, m.receipt_token, m.group_id, \
    m.dedup_id, m.dead_letter_source, m.sealed, m.sequence";

fn message_row(r: &Row, at: usize) -> StoredMessage {
    StoredMessage {
        seq: r.get(at),
        queue_id: r.get(at + 1),
        message_id: r.get(at + 2),
        body: r.get(at + 3),
        md5_body: r.get(at + 4),
        message_attributes: r.get(at + 5),
        system_attributes: r.get(at + 6),
        sender_id: r.get(at + 7),
        sent_at_ms: r.get(at + 8),
        visible_at_ms: r.get(at + 9),
        receive_count: r.get(at + 10),
        first_received_at_ms: r.get(at + 11),
        receipt_token: r.get(at + 12),
        group_id: r.get(at + 13),
        dedup_id: r.get(at + 14),
        dead_letter_source: r.get(at + 15),
        sealed: r.get::<_, i16>(at + 16) != 0,
        sequence: r.get(at + 17),
    }
}

/// The messages of one send as column arrays, for `INSERT ... SELECT FROM unnest(...)`.
#[derive(Default)]
struct Columns {
    queue_id: Vec<i64>,
    message_id: Vec<Option<String>>,
    body: Vec<String>,
    md5_body: Vec<String>,
    message_attributes: Vec<Option<String>>,
    system_attributes: Vec<Option<String>>,
    sender_id: Vec<String>,
    sent_at: Vec<i64>,
    visible_at: Vec<i64>,
    expires_at: Vec<i64>,
    receive_count: Vec<i64>,
    first_received_at: Vec<Option<i64>>,
    group_id: Vec<Option<String>>,
    dedup_id: Vec<Option<String>>,
    dead_letter_source: Vec<Option<String>>,
    /// No deduplication key: a standard queue's message, which may take a fair key.
    standard: Vec<bool>,
    /// 1 when body and attributes are sealed ([`NewMessage::seal`]), else 0.
    sealed: Vec<i16>,
}

impl Columns {
    fn push(&mut self, queue_id: i64, m: &NewMessage) {
        self.queue_id.push(queue_id);
        self.message_id.push(m.message_id.clone());
        self.body.push(m.body.clone());
        self.md5_body.push(m.md5_body.clone());
        self.message_attributes.push(m.message_attributes.clone());
        self.system_attributes.push(m.system_attributes.clone());
        self.sender_id.push(m.sender_id.clone());
        self.sent_at.push(m.sent_at_ms);
        self.visible_at.push(m.visible_at_ms);
        self.expires_at.push(m.expires_at_ms);
        self.receive_count.push(m.receive_count);
        self.first_received_at.push(m.first_received_at_ms);
        self.group_id.push(m.group_id.clone());
        self.dedup_id.push(m.dedup_id.clone());
        self.dead_letter_source.push(m.dead_letter_source.clone());
        self.standard.push(m.dedup.is_none());
        self.sealed.push(m.seal.is_some() as i16);
    }
}

/// Inserts the rows of `$1..$17` in order (`$16`: standard, see [`Columns::standard`];
/// `$17`: [`Columns::sealed`]);
/// sequence numbers are drawn in input order, so the result ordered by seq lines up with
/// the input. In the same statement, a standard message with a group makes its queue fair
/// (`mark`; the queue's earlier messages get key 0, `rekey`), and each standard message of
/// a fair queue takes its fair key (`keyed`): the queue's smallest key (0 when it holds
/// none) for a message without a group, else the larger of that and one past the group's
/// latest key, counting up through the group's messages of this send (the SQLite store's
/// `fair_key`). Ends with the `ins` CTE (`seq, message_id, queue_id`).
const INSERT_MESSAGES: &str = concat!(
    insert_input_cte!(),
    "  fairq AS MATERIALIZED (SELECT q.id, q.fair AS was_fair FROM queues q \
    WHERE q.id IN (SELECT queue_id FROM input WHERE standard) \
      AND (q.fair OR q.id IN (SELECT queue_id FROM input \
                              WHERE standard AND group_id IS NOT NULL))), \
  mark AS (UPDATE queues q SET fair = true FROM fairq f \
    WHERE q.id = f.id AND NOT f.was_fair RETURNING q.id), \
  rekey AS (UPDATE messages m SET fair_key = 0 FROM mark k \
    WHERE m.queue_id = k.id AND m.fair_key IS NULL RETURNING 1), \
  keyed AS (SELECT i.*, CASE WHEN f.id IS NULL THEN NULL \
      WHEN i.group_id IS NULL THEN b.base \
      ELSE GREATEST(b.base, COALESCE(l.last + 1, b.base)) \
        + row_number() OVER (PARTITION BY i.queue_id, i.group_id ORDER BY i.n) - 1 \
      END AS fair_key \
    FROM input i LEFT JOIN fairq f ON f.id = i.queue_id AND i.standard \
    LEFT JOIN LATERAL (SELECT COALESCE(MIN(m.fair_key), 0) AS base FROM messages m \
      WHERE f.id IS NOT NULL AND m.queue_id = i.queue_id AND m.fair_key IS NOT NULL) b ON true \
    LEFT JOIN LATERAL (SELECT m.fair_key AS last FROM messages m \
      WHERE f.id IS NOT NULL AND i.group_id IS NOT NULL AND m.queue_id = i.queue_id \
        AND m.group_id = i.group_id ORDER BY m.seq DESC LIMIT 1) l ON true), \
  ins AS (INSERT INTO messages (queue_id, message_id, body, md5_body, \
    message_attributes, system_attributes, sender_id, sent_at, visible_at, expires_at, \
    receive_count, first_received_at, group_id, dedup_id, dead_letter_source, fair_key, \
    sealed) \
    SELECT queue_id, message_id, body, md5_body, message_attributes, system_attributes, \
      sender_id, sent_at, visible_at, expires_at, receive_count, first_received_at, \
      group_id, dedup_id, dead_letter_source, fair_key, sealed FROM keyed ORDER BY n \
    RETURNING seq, message_id, queue_id)"
);

/// The start of the `ins` CTE of [`INSERT_PLAIN_MESSAGES`]: the input's rows as they are,
/// without fair keys; the statement ends it its own way (a `WHERE`, then
/// `ORDER BY n RETURNING ...)`).
macro_rules! insert_rows_without_fair_keys {
    () => {
        "  ins AS (INSERT INTO messages (queue_id, message_id, body, md5_body, \
    message_attributes, system_attributes, sender_id, sent_at, visible_at, expires_at, \
    receive_count, first_received_at, group_id, dedup_id, dead_letter_source, sealed) \
    SELECT queue_id, message_id, body, md5_body, message_attributes, system_attributes, \
      sender_id, sent_at, visible_at, expires_at, receive_count, first_received_at, \
      group_id, dedup_id, dead_letter_source, sealed FROM input "
    };
}

/// Inserts the rows of `$1..$17` (as [`INSERT_MESSAGES`]) without fair keys, in order, and
/// wakes their queues (`pg_notify($18, queue id)`) when it commits, unless one of their
/// queues is fair: then it inserts nothing and returns no row. For sends whose messages
/// all lack a MessageGroupId (and a deduplication key), where [`INSERT_MESSAGES`] would
/// give every message a fair key only in a queue that is already fair: the same rule,
/// read in the same snapshot, so the two statements store the same rows.
///
/// Why a second statement: [`INSERT_MESSAGES`]'s fair-key CTEs make its planning cost
/// 0.9-1.9 ms, and PostgreSQL kept re-planning it on every small send, its custom plan
/// for one message costed below the generic plan (made for 10 rows) although the generic
/// plan is the same shape and runs as fast (docs/benchmarks/history.md, "the send INSERT's
/// plan", branch `i19z`). This one plans in about half the time and its generic plan costs
/// less than its custom plans, so PostgreSQL keeps the generic plan after five executions.
const INSERT_PLAIN_MESSAGES: &str = concat!(
    insert_input_cte!(),
    insert_rows_without_fair_keys!(),
    "WHERE NOT EXISTS (SELECT 1 FROM queues q WHERE q.fair AND q.id = ANY($1::bigint[])) \
    ORDER BY n RETURNING seq, message_id, queue_id), \
  woke AS (SELECT pg_notify($18, q::text) FROM (SELECT DISTINCT queue_id AS q FROM ins) d) \
  SELECT seq, message_id, (SELECT count(*) FROM woke) FROM ins ORDER BY seq"
);

/// Inserts the one row of `$1..$17` (as [`INSERT_MESSAGES`]), which carries a
/// deduplication key, and returns its `seq, message_id, sequence`. FIFO messages never take
/// a fair key (fair queues are standard queues), so this is [`INSERT_MESSAGES`] without its
/// fair-key CTEs. In the same statement the message takes its queue's next number
/// (`nextval` of the queue's own sequence, `queue_sequence!`, [`StoredMessage::sequence`]),
/// its reserved key (`fifo_dedup`, scope `$18`, id `$19`) records the message, and its
/// queue is woken (`pg_notify($20, queue id)`, sent at commit).
///
/// The number is taken without a lock to the commit (`nextval` is not transactional), so
/// FIFO sends to one queue commit concurrently. The message's group lock
/// ([`FIFO_GROUP_LOCK_CLASS`]) is held from before the number and `seq` (the claim order)
/// are taken to the commit, so within a group both are taken in the same order: taken here,
/// first in the statement (`lk`, class `$21`), when `$22` is true (every keyed message of
/// the transaction is of one group, [`lock_fifo_sends`]), else already by
/// [`lock_fifo_sends`]. Taking it here, after the deduplication key's reservation, keeps
/// the stretch a group's sends wait for each other to this statement and the commit. Until stop 18 the number was `UPDATE queues SET message_sequence = ... RETURNING`,
/// whose row lock lasted to the commit and made FIFO sends to one queue commit one at a
/// time (0.49x the sends per second at 8 connections, BENCHMARKS.md).
///
/// Why a third statement: a FIFO send inserts its keyed messages one by one inside the
/// deduplication transaction, and PostgreSQL re-planned [`INSERT_MESSAGES`] on every such
/// call (0.72 ms of planning against 0.64 ms of execution per message at a 1,000,000-row
/// backlog, BENCHMARKS.md "Large backlogs"). This statement's generic plan is kept after
/// five executions, as [`INSERT_PLAIN_MESSAGES`]'s is.
const INSERT_KEYED_MESSAGES: &str = concat!(
    insert_input_cte!(),
    "  lk AS MATERIALIZED (SELECT pg_advisory_xact_lock($21, ",
    group_lock_key!("queue_id", "COALESCE(group_id, '')"),
    ") FROM input WHERE $22), \
  num AS MATERIALIZED (SELECT nextval(",
    queue_sequence!("($1::bigint[])[1]"),
    ") AS message_sequence FROM (SELECT count(*) FROM lk) l), \
  ins AS (INSERT INTO messages (queue_id, message_id, body, md5_body, \
    message_attributes, system_attributes, sender_id, sent_at, visible_at, expires_at, \
    receive_count, first_received_at, group_id, dedup_id, dead_letter_source, sealed, \
    sequence) \
    SELECT queue_id, message_id, body, md5_body, message_attributes, system_attributes, \
      sender_id, sent_at, visible_at, expires_at, receive_count, first_received_at, \
      group_id, dedup_id, dead_letter_source, sealed, u.message_sequence \
    FROM input CROSS JOIN num u ORDER BY n RETURNING seq, message_id, sequence, queue_id), \
  kept AS (UPDATE fifo_dedup d SET seq = i.seq, message_id = COALESCE(i.message_id, ''), \
    sequence = i.sequence FROM ins i \
    WHERE d.queue_id = i.queue_id AND d.scope = $18 AND d.dedup_id = $19 RETURNING 1), \
  woke AS (SELECT pg_notify($20, queue_id::text) FROM ins) \
  SELECT seq, message_id, sequence, (SELECT count(*) FROM kept), (SELECT count(*) FROM woke) \
  FROM ins"
);

/// Takes, in one statement, the shared FIFO lock of each queue in `queues`
/// ([`FIFO_LOCK_CLASS`]) and then the exclusive group lock ([`FIFO_GROUP_LOCK_CLASS`]) of
/// each `(queue, MessageGroupId)` of `groups`, every class in key order (no lock-order
/// cycles between sends, nor with moves, which take group locks in the same order).
/// Both last until the transaction ends.
const LOCK_FIFO_SENDS: &str = concat!(
    "SELECT count(l) FROM (SELECT CASE WHEN o.s THEN pg_advisory_xact_lock_shared($1, o.k) \
       ELSE pg_advisory_xact_lock($2, o.k) END AS l \
     FROM (SELECT DISTINCT s, k FROM ( \
         SELECT true, (q & 2147483647)::int FROM unnest($3::bigint[]) q \
         UNION ALL SELECT false, ",
    group_lock_key!("q", "g"),
    " FROM unnest($4::bigint[], $5::text[]) u(q, g)) x(s, k) \
       ORDER BY s DESC, k OFFSET 0) o) z"
);

/// Takes the locks of a transaction's FIFO sends ([`LOCK_FIFO_SENDS`]): the shared lock of
/// each queue of a message with a deduplication key, so a FIFO receive never sees a later
/// message of a group whose earlier one is not committed yet, and, when those messages are
/// of more than one group, the group lock of each, so the groups' queue numbers follow
/// their claim order ([`INSERT_KEYED_MESSAGES`]) and two such transactions never wait for
/// each other's groups in a cycle. Returns whether the keyed messages are all of one group,
/// whose lock [`INSERT_KEYED_MESSAGES`] then takes itself (later in the transaction: the
/// usual FIFO send, one message or a batch to one group, holds its group for less time).
async fn lock_fifo_sends<C: GenericClient>(
    tx: &C,
    messages: &[(i64, NewMessage)],
) -> Result<bool, Error> {
    let keyed = || messages.iter().filter(|(_, m)| m.dedup.is_some());
    let mut queues: Vec<i64> = keyed().map(|(q, _)| *q).collect();
    if queues.is_empty() {
        return Ok(false);
    }
    queues.sort_unstable();
    queues.dedup();
    let mut group_queues: Vec<i64> = keyed().map(|(q, _)| *q).collect();
    let mut groups: Vec<String> = keyed()
        .map(|(_, m)| m.group_id.clone().unwrap_or_default())
        .collect();
    let one_group = group_queues.iter().all(|q| *q == group_queues[0])
        && groups.iter().all(|g| *g == groups[0]);
    if one_group {
        group_queues.clear();
        groups.clear();
    }
    query(
        tx,
        LOCK_FIFO_SENDS,
        &[
            &FIFO_LOCK_CLASS,
            &FIFO_GROUP_LOCK_CLASS,
            &queues,
            &group_queues,
            &groups,
        ],
    )
    .await?;
    Ok(one_group)
}

/// The 17 column arrays of `cols`, in `$1..$17` order.
fn column_params(cols: &Columns) -> [&(dyn ToSql + Sync); 17] {
    [
        &cols.queue_id,
        &cols.message_id,
        &cols.body,
        &cols.md5_body,
        &cols.message_attributes,
        &cols.system_attributes,
        &cols.sender_id,
        &cols.sent_at,
        &cols.visible_at,
        &cols.expires_at,
        &cols.receive_count,
        &cols.first_received_at,
        &cols.group_id,
        &cols.dedup_id,
        &cols.dead_letter_source,
        &cols.standard,
        &cols.sealed,
    ]
}

async fn insert_messages<C: GenericClient>(
    c: &C,
    cols: &Columns,
    channel: Option<&str>,
) -> Result<Vec<SentMessage>, Error> {
    let params = column_params(cols);
    let rows = match channel {
        // One statement: insert, and wake the queues' long polls when it commits.
        Some(channel) => {
            let sql = format!(
                "{INSERT_MESSAGES}, \
                 woke AS (SELECT pg_notify($18, q::text) FROM (SELECT DISTINCT queue_id AS q \
                 FROM ins) d) \
                 SELECT seq, message_id, (SELECT count(*) FROM woke) FROM ins ORDER BY seq"
            );
            let mut all: Vec<&(dyn ToSql + Sync)> = params.to_vec();
            all.push(&channel);
            query(c, &sql, &all).await?
        }
        None => {
            let sql = format!("{INSERT_MESSAGES} SELECT seq, message_id FROM ins ORDER BY seq");
            query(c, &sql, &params).await?
        }
    };
    Ok(rows.iter().map(sent_row).collect())
}

/// A sent message from a row of `seq, message_id, ...` (a message without a
/// deduplication key: no queue sequence number).
fn sent_row(r: &Row) -> SentMessage {
    SentMessage {
        seq: r.get(0),
        message_id: r.get(1),
        duplicate: false,
        sequence: None,
    }
}

/// Whether [`send_messages_in`] needs a transaction (FIFO deduplication) or one statement
/// ([`send_messages_fast`]) does.
pub fn needs_transaction(messages: &[(i64, NewMessage)]) -> bool {
    messages.iter().any(|(_, m)| m.dedup.is_some())
}

/// Stores messages without deduplication keys in one statement that also wakes their
/// queues: [`INSERT_PLAIN_MESSAGES`] when none has a MessageGroupId, and
/// [`INSERT_MESSAGES`] (fair keys) when one has, or when the plain statement stored
/// nothing because a queue of the send is fair (two statements then, each its own
/// implicit transaction; the first changed nothing).
pub async fn send_messages_fast<C: GenericClient>(
    c: &C,
    messages: &[(i64, NewMessage)],
    channel: &str,
) -> Result<Vec<SentMessage>, Error> {
    if messages.is_empty() {
        return Ok(Vec::new());
    }
    let mut cols = Columns::default();
    for (q, m) in messages {
        cols.push(*q, m);
    }
    if cols.group_id.iter().all(Option::is_none) {
        let mut params: Vec<&(dyn ToSql + Sync)> = column_params(&cols).to_vec();
        params.push(&channel);
        let rows = query(c, INSERT_PLAIN_MESSAGES, &params).await?;
        if !rows.is_empty() {
            return Ok(rows.iter().map(sent_row).collect());
        }
        // A queue of the send is fair: its messages take fair keys.
    }
    insert_messages(c, &cols, Some(channel)).await
}

/// Stores messages inside the caller's transaction `tx`, deduplicating FIFO ones, and
/// queues the wake-ups of their queues.
pub async fn send_messages_in<C: GenericClient>(
    tx: &C,
    messages: &[(i64, NewMessage)],
    channel: &str,
) -> Result<Vec<SentMessage>, Error> {
    // FIFO queues first take their shared lock, then their groups' locks, each in key
    // order (no lock-order cycles between sends of several queues or groups).
    let lock_in_insert = lock_fifo_sends(tx, messages).await?;
    let mut out = Vec::with_capacity(messages.len());
    let mut woken: Vec<i64> = Vec::new();
    // Runs of messages without keys go in one statement; keyed ones one by one.
    let mut run = Columns::default();
    for (q, m) in messages {
        let Some(key) = &m.dedup else {
            run.push(*q, m);
            continue;
        };
        if !run.queue_id.is_empty() {
            out.extend(insert_messages(tx, &std::mem::take(&mut run), None).await?);
        }
        // Reserve the key: a fresh row, or an expired one taken over. A live row of a
        // concurrent, uncommitted send makes this wait for that send to end.
        let reserved = query_opt(
            tx,
            "INSERT INTO fifo_dedup (queue_id, scope, dedup_id, seq, message_id, expires_at) \
             VALUES ($1, $2, $3, 0, '', $4) ON CONFLICT (queue_id, scope, dedup_id) \
             DO UPDATE SET seq = 0, message_id = '', expires_at = EXCLUDED.expires_at \
             WHERE fifo_dedup.expires_at <= $5 RETURNING 1",
            &[q, &key.scope, &key.id, &key.expires_at_ms, &m.sent_at_ms],
        )
        .await?;
        if reserved.is_none() {
            let row = query_one(
                tx,
                "SELECT seq, message_id, sequence FROM fifo_dedup WHERE queue_id = $1 \
                 AND scope = $2 AND dedup_id = $3",
                &[q, &key.scope, &key.id],
            )
            .await?;
            let message_id: String = row.get(1);
            out.push(SentMessage {
                seq: row.get(0),
                message_id: Some(message_id).filter(|id| !id.is_empty()),
                duplicate: true,
                sequence: row.get(2),
            });
            continue;
        }
        let mut one = Columns::default();
        one.push(*q, m);
        let mut params: Vec<&(dyn ToSql + Sync)> = column_params(&one).to_vec();
        params.extend([
            &key.scope as &(dyn ToSql + Sync),
            &key.id,
            &channel,
            &FIFO_GROUP_LOCK_CLASS,
            &lock_in_insert,
        ]);
        let sent = query(tx, INSERT_KEYED_MESSAGES, &params)
            .await?
            .iter()
            .map(|r| SentMessage {
                sequence: r.get(2),
                ..sent_row(r)
            })
            .next()
            .ok_or(Failure::Broken("an insert returned no row"))?;
        if !woken.contains(q) {
            woken.push(*q);
        }
        out.push(sent);
    }
    if !run.queue_id.is_empty() {
        out.extend(insert_messages(tx, &run, None).await?);
    }
    for (q, _) in messages {
        if !woken.contains(q) {
            woken.push(*q);
            notify(tx, channel, *q).await?;
        }
    }
    Ok(out)
}

/// One standard receive step of a receive group ([`receive_steps`]): the request, the
/// receipt tokens still to hand out (the n-th claimed message takes `tokens[n]`), whether
/// to read the fair order, and the messages earlier steps of the same receive claimed or
/// passed over.
#[derive(Debug, Clone)]
pub struct StepJob {
    /// The receive this step is part of.
    pub request: ReceiveRequest,
    /// The receipt tokens not handed out yet (at most `max_messages`).
    pub tokens: Vec<i64>,
    /// Read a fair queue's keyed messages in fair-key order.
    pub fair: bool,
    /// Sequence numbers to pass over.
    pub skip: Vec<i64>,
    /// Where the plain order's index walk starts (`visible_at`, ms; `i64::MIN`: at the
    /// start): the claim takes visible messages from here on first and goes below it only
    /// when those run short. Ignored by the fair and send orders (pass `i64::MIN`).
    pub floor: i64,
    /// The request's dead-letter queue is in another cell (this store is a cell of a
    /// `crate::cells::CellStore`): the messages the step moves there go to the outbox
    /// ([`outbox_parked_in`]) in the step's transaction.
    pub dlq_elsewhere: bool,
}

/// Standard receive steps, several receives' at once, in the caller's one transaction
/// `tx`. A step claims up to `tokens.len()` visible messages of its queue, the n-th with
/// `tokens[n]`, and tells how many candidates it looked at, how many it dead-lettered,
/// and the queue's next visibility time as its statement's snapshot saw it
/// ([`StepOutcome`]). With `fair` it reads a fair queue's keyed messages in fair-key
/// order (`messages_fair`); otherwise first visible first (`messages_visibility`, which
/// the HOT claim below leaves as it was), or in send order for the seeds. Messages in `skip` (claimed or passed over by earlier steps of its receive)
/// are passed over, by every step sharing its claim statement.
///
/// The claim is HOT (heap-only): it hides a message by writing `hidden_until` (with the
/// receive count, first receive, receive time and receipt token), columns no index
/// covers, and leaves the indexed `visible_at` as it was, so PostgreSQL writes the new
/// tuple on the same page (fillfactor 50 keeps room) and no index entry (migration 23;
/// the non-HOT claim wrote one entry in each of the table's indexes per claimed message).
/// A message is visible again at `GREATEST(visible_at, hidden_until)`, which every
/// reader of the engine uses. FIFO queues keep hiding through `visible_at` (their
/// receive reads the hidden groups' heads from `messages_visibility`), so their rows'
/// `hidden_until` stays 0; ChangeMessageVisibility writes the column the row hides by.
///
/// The plain order walks `messages_visibility` from the step's `floor` (the caller's
/// hint: where its last claim of the queue started taking messages) and walks the part
/// below it only when the messages above run short, in the same statement. The index's
/// start holds the entries of every message in flight (their `visible_at` stays where it
/// was) or deleted since the last vacuum, which a walk from the start steps over on every
/// claim: after 100,000 receive-deletes without a vacuum, 517 index pages and 2.4 ms per
/// claim against 7 pages and 0.08 ms after one (docs/benchmarks/history.md, "the claim's
/// walk from a floor", branch `s8b`). A message whose hiding ended below the floor is
/// found when the messages above run short or by the next walk from the start (the floor
/// is used for at most `FLOOR_RESCAN`, 1 s).
///
/// Steps of one queue that read the same order under the same dead-letter rule share one
/// claim statement ([`claim_sets`], [`claim_rows`]): it claims all their messages at
/// once and hands them out in step order, so a group of k receives of a queue pays one
/// statement's start-up, scans and CTEs instead of k. The sets' statements are sent at
/// once (pipelined on the connection) and run one after another, each with its own
/// snapshot (READ COMMITTED), so a later set sees the claims of the earlier ones as if
/// they had committed before it: hidden, so two steps never share a message (with a
/// visibility timeout of 0 the message is visible again, as after a committed receive;
/// within one statement a message is claimed once). A claim never waits:
/// `FOR UPDATE SKIP LOCKED` passes over rows other transactions hold.
///
/// The claims run on their generic plan (`SET LOCAL plan_cache_mode =
/// force_generic_plan`, this transaction only, one statement before the claims): the
/// plan is the same index scan for every parameter value, but PostgreSQL's default
/// choice kept planning it afresh on every call (0.8-1.5 ms each, as much as its
/// execution) whenever its custom plans looked cheaper (docs/benchmarks/history.md, "the
/// receive's claim", branch `i19v`). Other statements keep the default.
///
/// A claim reads the queue's next visibility time only when its candidates ran short
/// (fewer than its steps' `tokens` together; a step is short when the candidates ran out
/// before its turn ended, [`set_outcomes`]): the caller reports it only for a receive that came back
/// short (a long poll's next wake-up), and the read walks the index entries of every
/// claimed message that was deleted since the last vacuum, which at 32 connections cost
/// as much as the claim itself (the same section); it is the lower of the delayed
/// messages' time (`visible_at > now`, from the index) and the in-flight messages' end
/// (`hidden_until > now` among the index's visible range: with the candidates short,
/// those are the in-flight messages, read from the heap).
///
/// The claimed messages are opened (`sealer`) before the caller commits, and those that
/// cannot be opened are put back as they were (visibility, receive count, first receive,
/// receipt token) by one more statement in the same transaction, so the commit never
/// shows them claimed; they are returned apart ([`StepOutcome::passed`]).
/// One outcome per step, in order; an error fails the whole transaction.
pub async fn receive_steps<C: GenericClient>(
    tx: &C,
    steps: &[StepJob],
    channel: &str,
    sealer: &Sealer,
) -> Result<Vec<StepOutcome>, Error> {
    // The claims' generic plan, for this transaction only (reset at its end), and no
    // bitmap scans: with the HOT claim's `hidden_until` filter the generic plan's
    // estimate fell to one row and PostgreSQL chose a bitmap scan of the queue's whole
    // visible range and a sort (36,610 rows, 58 ms a claim behind a 40,000-message
    // preload, auto_explain) over the ordered index walk that stops at the limit.
    tx.batch_execute(
        "SET LOCAL plan_cache_mode = force_generic_plan; SET LOCAL enable_bitmapscan = off",
    )
    .await?;
    let sets = claim_sets(steps);
    let claims =
        futures_util::future::join_all(sets.iter().map(|set| claim_rows(tx, steps, set, channel)))
            .await;
    let mut put_back = Vec::new();
    let mut out: Vec<Option<StepOutcome>> = steps.iter().map(|_| None).collect();
    for (set, rows) in sets.iter().zip(claims) {
        let lens: Vec<usize> = set.iter().map(|&i| steps[i].tokens.len()).collect();
        for (&i, o) in set
            .iter()
            .zip(set_outcomes(&rows?, &lens, sealer, &mut put_back)?)
        {
            out[i] = Some(o);
        }
    }
    let out: Vec<StepOutcome> = out.into_iter().flatten().collect();
    if out.len() != steps.len() {
        return Err(Failure::Broken("a claim set lost steps"));
    }
    put_back_claims(tx, &put_back).await?;
    // Messages moved to a dead-letter queue of another cell leave through the outbox,
    // each queue's once (the steps of one transaction see each other's moves).
    let mut drained: Vec<i64> = Vec::new();
    for (step, o) in steps.iter().zip(&out) {
        if let (true, Some(rule)) = (step.dlq_elsewhere && o.dead > 0, &step.request.redrive) {
            if !drained.contains(&rule.dlq_queue_id) {
                drained.push(rule.dlq_queue_id);
                outbox_parked_in(tx, rule.dlq_queue_id, step.request.now_ms).await?;
            }
        }
    }
    Ok(out)
}

/// Message `m`, claimed by claim row `r` (its columns from `at`, its old state after
/// them), opened through the store's one opening place ([`crate::postgres::opened`],
/// [`Claiming`]); `None` when it cannot be opened: its old state then goes to `put_back`
/// (to be put back before the commit), and it is named in `undecryptable` the first time.
fn open_claim(
    sealer: &Sealer,
    r: &Row,
    at: usize,
    m: StoredMessage,
    put_back: &mut Vec<OldClaim>,
    undecryptable: &mut Vec<String>,
) -> Result<Option<StoredMessage>, Error> {
    let claiming = Claiming {
        message: m,
        undecryptable,
    };
    match crate::postgres::opened(sealer, claiming).map_err(|e| Failure::Sealing(e.message))? {
        Claimed::Readable(m) => Ok(Some(m)),
        Claimed::Unreadable(m) => {
            put_back.push(OldClaim::at(r, m.seq, at + MESSAGE_COLUMN_COUNT));
            Ok(None)
        }
    }
}

/// The steps of a receive group that one claim statement serves ([`claim_rows`]), as
/// indexes into `steps`, each set in `steps` order and the sets in the order of their
/// first step: steps of one queue join when they read the same order (fair, send or
/// plain) under the same dead-letter rule, so the statement's one filter, order and
/// dead-letter move hold for each of them.
fn claim_sets(steps: &[StepJob]) -> Vec<Vec<usize>> {
    let joins = |a: &StepJob, b: &StepJob| {
        a.request.queue_id == b.request.queue_id
            && a.fair == b.fair
            && a.request.send_order == b.request.send_order
            && a.request.redrive == b.request.redrive
            && a.dlq_elsewhere == b.dlq_elsewhere
    };
    let mut sets: Vec<Vec<usize>> = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        match sets.iter_mut().find(|set| joins(&steps[set[0]], step)) {
            Some(set) => set.push(i),
            None => sets.push(vec![i]),
        }
    }
    sets
}

/// The outcomes of a claim set's steps (each asking for `lens[j]` messages) from its
/// claim statement's rows. The statement numbered its claimed messages from 1 in claim
/// order and the steps take them in turn: step `j` the numbers after the earlier steps'
/// `lens`, as many as its own. Its candidates are its share of the statement's, taken in
/// the same turn (so a step is short, and reads `next`, only when the statement's
/// candidates ran out before its turn ended); the first step reports the set's dead
/// letters. The claimed messages that cannot be opened go to `put_back` (to be put back
/// before the commit) and to their step's `passed`.
fn set_outcomes(
    rows: &[Row],
    lens: &[usize],
    sealer: &Sealer,
    put_back: &mut Vec<OldClaim>,
) -> Result<Vec<StepOutcome>, Error> {
    let mut out: Vec<StepOutcome> = lens.iter().map(|_| StepOutcome::default()).collect();
    let Some(first) = rows.first() else {
        return Err(Failure::Broken("a claim gave no row"));
    };
    let candidates = first.get::<_, i64>(0);
    let next = first.get::<_, Option<i64>>(2);
    let mut before = 0i64;
    for (o, &len) in out.iter_mut().zip(lens) {
        o.candidates = (candidates - before).clamp(0, len as i64);
        o.next = next;
        before += len as i64;
    }
    if let Some(o) = out.first_mut() {
        o.dead = first.get::<_, i64>(1) as u64;
    }
    for r in rows {
        let Some(n) = r.get::<_, Option<i64>>(3) else {
            continue;
        };
        let mut end = 0i64;
        let Some(o) = out.iter_mut().zip(lens).find_map(|(o, &len)| {
            end += len as i64;
            (n <= end).then_some(o)
        }) else {
            return Err(Failure::Broken("a claim numbered past its tokens"));
        };
        let old_visible: i64 = r.get(4 + MESSAGE_COLUMN_COUNT);
        o.lowest_claimed = Some(o.lowest_claimed.map_or(old_visible, |l| l.min(old_visible)));
        let m = message_row(r, 4);
        match open_claim(sealer, r, 4, m, put_back, &mut o.undecryptable)? {
            Some(m) => o.messages.push(m),
            None => o.passed.push(r.get(4)),
        }
    }
    Ok(out)
}

/// The claim statement of one claim set ([`claim_sets`]: the steps `set` of `steps`,
/// several receives of one queue served together): its rows are (candidates, dead, next,
/// n, the claimed message's columns, its old state), one per claimed message ordered by n
/// (from 1; [`set_outcomes`] hands them to the steps), or one row of NULL message columns
/// when it claimed none. It asks for all its steps' messages at once, reads the queue as
/// of its latest step's now, passes over every step's `skip`, and walks from the lowest
/// floor; each claimed message takes its step's receipt token, visibility and now. The candidates
/// come from `visible_at >= floor` first (`above`) and from below `floor` only when those
/// fall short (`below`, its scan skipped otherwise); the row joins find the candidates'
/// rows by primary key (`= ANY(ARRAY(...))`: the planner cannot size the two parts'
/// union and otherwise may scan the table).
async fn claim_rows<C: GenericClient>(
    c: &C,
    steps: &[StepJob],
    set: &[usize],
    channel: &str,
) -> Result<Vec<Row>, Error> {
    let lead = &steps[set[0]];
    let (req, fair) = (&lead.request, lead.fair);
    // The set's claim numbers: the n-th claimed message takes `tokens[n]` and is hidden
    // until `until[n]` (its step's now + visibility), received at `at[n]` (its step's now).
    let (mut tokens, mut until, mut at) = (Vec::new(), Vec::new(), Vec::new());
    let mut skip: Vec<i64> = Vec::new();
    // The set reads the queue as of its latest step's now (the statement runs after every
    // one of its steps arrived, so a message visible then is visible to each of them) and
    // walks from its lowest floor.
    let (mut now, mut floor) = (i64::MIN, i64::MAX);
    for s in set.iter().map(|&i| &steps[i]) {
        tokens.extend_from_slice(&s.tokens);
        until.extend(
            s.tokens
                .iter()
                .map(|_| s.request.now_ms + s.request.visibility_ms),
        );
        at.extend(s.tokens.iter().map(|_| s.request.now_ms));
        skip.extend_from_slice(&s.skip);
        now = now.max(s.request.now_ms);
        floor = floor.min(s.floor);
    }
    let need = tokens.len() as i64;
    let (filter, order, claim_order) = if fair {
        ("AND fair_key IS NOT NULL", "fair_key, seq", "old_key, seq")
    } else if req.send_order {
        ("", "queue_id, seq", "seq")
    } else {
        ("", "visible_at, seq", "old_visible, seq")
    };
    // Only the plain order walks from the floor: a range on `visible_at` in the other
    // orders' statements turns their generic plans to `messages_visibility` and a sort of
    // the whole queue. Theirs reads nothing below (`$12` only typed).
    let (above_floor, below_floor) = if fair || req.send_order {
        ("", "AND false AND $12::bigint IS NOT NULL")
    } else {
        ("AND visible_at >= $12", "AND visible_at < $12")
    };
    // The send order reads `queue_id` as a range, ordered by `queue_id, seq`, as
    // `oldest_sent_at` does: only `messages_queue_order` gives that order. With
    // `queue_id = $1 ... ORDER BY seq` the generic plan walked the primary key filtered by
    // queue, through every other queue's older messages (366 ms behind 1,000,000 of
    // them against 0.05 ms, EXPLAIN ANALYZE, PostgreSQL 15).
    let queue = if req.send_order && !fair {
        "queue_id >= $1 AND queue_id <= $1"
    } else {
        "queue_id = $1"
    };
    // `claim` numbers the messages this step claims; the n-th takes `tokens[n]`.
    let sql = format!(
        "WITH above AS MATERIALIZED ( \
           SELECT {CAND_COLUMNS} \
           FROM messages WHERE {queue} AND visible_at <= $2 AND hidden_until <= $2 {above_floor} \
             {filter} AND NOT (seq = ANY($11::bigint[])) \
           ORDER BY {order} LIMIT $3 FOR UPDATE SKIP LOCKED), \
         below AS MATERIALIZED ( \
           SELECT {CAND_COLUMNS} \
           FROM messages WHERE {queue} AND visible_at <= $2 AND hidden_until <= $2 {below_floor} \
             {filter} \
             AND NOT (seq = ANY($11::bigint[])) AND (SELECT count(*) FROM above) < $3 \
           ORDER BY {order} LIMIT $3 - (SELECT count(*) FROM above) FOR UPDATE SKIP LOCKED), \
         cand AS MATERIALIZED (SELECT * FROM above UNION ALL SELECT * FROM below), \
         gone AS (DELETE FROM messages m USING cand c \
           WHERE m.seq = c.seq AND m.seq = ANY(ARRAY(SELECT seq FROM cand)) \
             AND c.old_expires <= $2 RETURNING m.seq), \
         dead AS (UPDATE messages m SET queue_id = $5::bigint, \
             visible_at = $2, hidden_until = 0, dead_letter_source = $7, \
             first_received_at = COALESCE(m.first_received_at, $2), \
             dedup_id = CASE WHEN $10 THEN m.message_id ELSE m.dedup_id END, \
             fair_key = CASE WHEN (SELECT fair FROM queues WHERE id = $5::bigint) THEN 0 END \
           FROM cand c WHERE m.seq = c.seq AND m.seq = ANY(ARRAY(SELECT seq FROM cand)) \
             AND c.old_expires > $2 AND $5::bigint IS NOT NULL AND c.old_count >= $6 RETURNING m.seq), \
         claim AS (SELECT seq, old_visible, old_count, old_first, old_token, old_received, \
             old_hidden, \
             row_number() OVER (ORDER BY {claim_order}) AS n \
           FROM cand WHERE old_expires > $2 AND NOT ($5::bigint IS NOT NULL AND old_count >= $6)), \
         got AS (UPDATE messages m SET hidden_until = ($4::bigint[])[k.n], \
             receive_count = m.receive_count + 1, \
             first_received_at = COALESCE(m.first_received_at, ($13::bigint[])[k.n]), \
             received_at = ($13::bigint[])[k.n], receipt_token = ($9::bigint[])[k.n] \
           FROM claim k WHERE m.seq = k.seq AND m.seq = ANY(ARRAY(SELECT seq FROM claim)) \
           RETURNING k.n, {MESSAGE_COLUMNS}, k.old_visible, k.old_count, k.old_first, \
             k.old_token, k.old_received, k.old_hidden), \
         woke AS (SELECT pg_notify($8, $5::bigint::text) FROM (SELECT 1 FROM dead LIMIT 1) d) \
         SELECT (SELECT count(*) FROM cand), \
                (SELECT count(*) FROM dead) + 0 * (SELECT count(*) FROM woke), \
                CASE WHEN (SELECT count(*) FROM cand) < $3 THEN LEAST( \
                  (SELECT MIN(GREATEST(visible_at, hidden_until)) \
                     FROM messages WHERE queue_id = $1 AND visible_at > $2), \
                  (SELECT MIN(hidden_until) FROM messages \
                     WHERE queue_id = $1 AND visible_at <= $2 AND hidden_until > $2)) END, \
                g.* \
         FROM (SELECT 1) one LEFT JOIN got g ON true ORDER BY g.n"
    );
    let (dlq, max, arn, dedup_from_id) = match &req.redrive {
        Some(r) => (
            Some(r.dlq_queue_id),
            r.moves_at_receive_count,
            Some(r.source_arn.clone()),
            r.dedup_id_from_message_id,
        ),
        None => (None, 0, None, false),
    };
    query(
        c,
        &sql,
        &[
            &req.queue_id,
            &now,
            &need,
            &until,
            &dlq,
            &max,
            &arn,
            &channel,
            &tokens,
            &dedup_from_id,
            &skip,
            &floor,
            &at,
        ],
    )
    .await
}

/// What one step of [`receive_steps`] did.
#[derive(Debug, Default)]
pub struct StepOutcome {
    /// The claimed messages, opened.
    pub messages: Vec<StoredMessage>,
    /// The messages it met that cannot be opened (seq); left as they were.
    pub passed: Vec<i64>,
    /// Those of them to report ([`ReceiveOutcome::undecryptable`]).
    pub undecryptable: Vec<String>,
    /// How many candidates it looked at.
    pub candidates: i64,
    /// How many it moved to the dead-letter queue.
    pub dead: u64,
    /// The queue's next visibility time as the statement's snapshot saw it (ms); read
    /// only when `candidates` fell short of the messages asked for, else `None`.
    pub next: Option<i64>,
    /// The lowest `visible_at` (ms) the claimed messages had before their claim
    /// (unreadable ones included); `None` when it claimed none. The caller's next floor.
    pub lowest_claimed: Option<i64>,
}

/// The candidate columns of a standard claim: the row's old state.
const CAND_COLUMNS: &str = "seq, visible_at AS old_visible, receive_count AS old_count, \
    expires_at AS old_expires, fair_key AS old_key, first_received_at AS old_first, \
    receipt_token AS old_token, received_at AS old_received, hidden_until AS old_hidden";

/// Number of columns of [`MESSAGE_COLUMNS`].
const MESSAGE_COLUMN_COUNT: usize = 18;

/// A claimed message's state before its claim, to put it back.
struct OldClaim {
    seq: i64,
    visible_at: i64,
    receive_count: i64,
    first_received_at: Option<i64>,
    receipt_token: i64,
    received_at: Option<i64>,
    hidden_until: i64,
}

impl OldClaim {
    /// The old state from row `r`'s six columns at `at` (visible_at, receive_count,
    /// first_received_at, receipt_token, received_at, hidden_until).
    fn at(r: &Row, seq: i64, at: usize) -> Self {
        OldClaim {
            seq,
            visible_at: r.get(at),
            receive_count: r.get(at + 1),
            first_received_at: r.get(at + 2),
            receipt_token: r.get(at + 3),
            received_at: r.get(at + 4),
            hidden_until: r.get(at + 5),
        }
    }
}

/// Puts claimed messages back as they were before the claim, inside the claiming
/// transaction (messages that cannot be opened are never handed out).
async fn put_back_claims<C: GenericClient>(tx: &C, old: &[OldClaim]) -> Result<(), Error> {
    if old.is_empty() {
        return Ok(());
    }
    let seqs: Vec<i64> = old.iter().map(|o| o.seq).collect();
    let visible: Vec<i64> = old.iter().map(|o| o.visible_at).collect();
    let counts: Vec<i64> = old.iter().map(|o| o.receive_count).collect();
    let first: Vec<Option<i64>> = old.iter().map(|o| o.first_received_at).collect();
    let tokens: Vec<i64> = old.iter().map(|o| o.receipt_token).collect();
    let received: Vec<Option<i64>> = old.iter().map(|o| o.received_at).collect();
    let hidden: Vec<i64> = old.iter().map(|o| o.hidden_until).collect();
    execute(
        tx,
        "UPDATE messages m SET visible_at = u.v, receive_count = u.c, \
         first_received_at = u.f, receipt_token = u.t, received_at = u.r, hidden_until = u.h \
         FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[], \
           $6::bigint[], $7::bigint[]) AS u(seq, v, c, f, t, r, h) WHERE m.seq = u.seq",
        &[
            &seqs, &visible, &counts, &first, &tokens, &received, &hidden,
        ],
    )
    .await
    .map(drop)
}

/// The messages a recorded receive attempt handed out that still hold its receipt tokens,
/// hidden again as `req` says, in their first order; `None` when no unexpired attempt is
/// recorded.
async fn replay_attempt<C: GenericClient>(
    tx: &C,
    req: &ReceiveRequest,
    attempt: &ReceiveAttempt,
) -> Result<Option<Vec<StoredMessage>>, Error> {
    let Some(row) = query_opt(
        tx,
        "SELECT seqs, tokens FROM receive_attempts WHERE queue_id = $1 AND attempt_id = $2 \
         AND expires_at > $3",
        &[&req.queue_id, &attempt.id, &req.now_ms],
    )
    .await?
    else {
        return Ok(None);
    };
    let seqs: Vec<i64> = row.get(0);
    let tokens: Vec<i64> = row.get(1);
    let sql = format!(
        "UPDATE messages m SET visible_at = $4 FROM unnest($2::bigint[], $3::bigint[]) \
           WITH ORDINALITY AS u(seq, token, n) \
         WHERE m.seq = u.seq AND m.queue_id = $1 AND m.receipt_token = u.token \
         RETURNING u.n, {MESSAGE_COLUMNS}"
    );
    let hidden_until = req.now_ms + req.visibility_ms;
    let rows = query(tx, &sql, &[&req.queue_id, &seqs, &tokens, &hidden_until]).await?;
    let mut again: Vec<(i64, StoredMessage)> =
        rows.iter().map(|r| (r.get(0), message_row(r, 1))).collect();
    again.sort_by_key(|(n, _)| *n);
    Ok(Some(again.into_iter().map(|(_, m)| m).collect()))
}

/// FIFO receive inside the caller's transaction, under the queue's advisory lock: the
/// walk of [`crate::fifo`], as the SQLite store does it. One statement reads the hidden
/// messages' groups (locked groups, each group's first hidden message, the next
/// visibility time), then each window of the walk is one statement, and the groups of a
/// full window that can still count are read past it through the group index in one
/// more (`CROSS JOIN LATERAL`, each group with its own limit).
///
/// Claimed messages are opened (`sealer`) before the transaction commits; one that cannot
/// be opened is put back as it was, with the later messages of its group, and named in
/// [`ReceiveOutcome::undecryptable`].
///
/// With `dlq_elsewhere` (the dead-letter queue is in another cell) the messages moved
/// there go to the outbox ([`outbox_parked_in`]) in the same transaction.
pub async fn receive_fifo<C: GenericClient>(
    tx: &C,
    req: &ReceiveRequest,
    channel: &str,
    sealer: &Sealer,
    dlq_elsewhere: bool,
) -> Result<ReceiveOutcome, Error> {
    query(
        tx,
        "SELECT pg_advisory_xact_lock($1, $2)",
        &[&FIFO_LOCK_CLASS, &lock_key(req.queue_id)],
    )
    .await?;
    let mut out = ReceiveOutcome::default();
    if let Some(attempt) = &req.attempt {
        if let Some(messages) = replay_attempt(tx, req, attempt).await? {
            out.messages = messages;
            out.replayed = true;
            return Ok(out);
        }
    }
    let want = req.max_messages as usize;
    // Each group's first hidden unexpired message (in flight or delayed: it holds back the
    // group's later ones), and the queue's next visibility time: one row per group with
    // hidden messages.
    let mut heads: HashMap<String, i64> = HashMap::new();
    let mut next_visible: Option<i64> = None;
    for r in query(
        tx,
        "SELECT COALESCE(group_id, ''), min(seq), min(visible_at) \
         FROM messages WHERE queue_id = $1 AND visible_at > $2 AND expires_at > $2 GROUP BY 1",
        &[&req.queue_id, &req.now_ms],
    )
    .await?
    {
        let group: String = r.get(0);
        let visible_at: i64 = r.get(2);
        next_visible = Some(next_visible.map_or(visible_at, |n| n.min(visible_at)));
        heads.insert(group, r.get(1));
    }
    let mut scan = FifoScan::new(req, heads);
    loop {
        match scan.next() {
            FifoRead::Window { after, limit } => {
                // `queue_id` as a range, ordered by `queue_id, seq`, as in `oldest_sent_at`:
                // with `queue_id = $1 ... ORDER BY seq` the planner walked the primary key
                // (seq order too) filtered by queue, reading every older message of other
                // queues first: 946 ms a call on a FIFO queue behind a 1,000,000-message
                // standard backlog, 0.3 ms on `messages_queue_order` (EXPLAIN ANALYZE,
                // PostgreSQL 15, custom and generic plans; bench/backlog).
                let rows = query(
                    tx,
                    "SELECT seq, receive_count, expires_at, COALESCE(group_id, ''), visible_at \
                     FROM messages WHERE queue_id >= $1 AND queue_id <= $1 AND seq > $2 \
                     AND visible_at <= $3 ORDER BY queue_id, seq LIMIT $4",
                    &[&req.queue_id, &after, &req.now_ms, &limit],
                )
                .await?;
                for r in &rows {
                    scan.window_row(r.get(0), r.get(1), r.get(2), r.get(3), r.get(4));
                }
                scan.end_window(rows.len());
            }
            // All the groups' reads in one statement, each with its own limit.
            FifoRead::Groups(reads) => {
                let groups: Vec<&str> = reads.iter().map(|g| g.group.as_str()).collect();
                let from: Vec<i64> = reads.iter().map(|g| g.from).collect();
                let before: Vec<i64> = reads.iter().map(|g| g.head).collect();
                let limits: Vec<i64> = reads.iter().map(|g| g.limit).collect();
                let rows = query(
                    tx,
                    "SELECT g.n, m.seq, m.receive_count, m.expires_at \
                     FROM unnest($2::text[], $3::bigint[], $4::bigint[], $5::bigint[]) \
                       WITH ORDINALITY AS g(grp, frm, head, lim, n) \
                     CROSS JOIN LATERAL (SELECT seq, receive_count, expires_at FROM messages \
                       WHERE queue_id = $1 AND group_id = g.grp AND seq > g.frm \
                       AND seq < g.head AND visible_at <= $6 ORDER BY seq LIMIT g.lim) m \
                     ORDER BY g.n, m.seq",
                    &[&req.queue_id, &groups, &from, &before, &limits, &req.now_ms],
                )
                .await?;
                for r in &rows {
                    let i = (r.get::<_, i64>(0) - 1) as usize;
                    scan.group_row(i, r.get(1), r.get(2), r.get(3));
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
    if !expired.is_empty() {
        execute(tx, "DELETE FROM messages WHERE seq = ANY($1)", &[&expired]).await?;
    }
    if let (false, Some(rule)) = (dead.is_empty(), &req.redrive) {
        out.dead_lettered = execute(
            tx,
            "UPDATE messages SET queue_id = $2, \
             visible_at = $3, dead_letter_source = $4, \
             dedup_id = CASE WHEN $5 THEN message_id ELSE dedup_id END, \
             first_received_at = COALESCE(first_received_at, $3) WHERE seq = ANY($1)",
            &[
                &dead,
                &rule.dlq_queue_id,
                &req.now_ms,
                &rule.source_arn,
                &rule.dedup_id_from_message_id,
            ],
        )
        .await?;
        if dlq_elsewhere {
            outbox_parked_in(tx, rule.dlq_queue_id, req.now_ms).await?;
        } else {
            notify(tx, channel, rule.dlq_queue_id).await?;
        }
    }
    if !take.is_empty() {
        let tokens: Vec<i64> = req
            .receipt_tokens
            .iter()
            .copied()
            .take(take.len())
            .collect();
        if tokens.len() < take.len() {
            return Err(Failure::Broken("fewer receipt tokens than messages"));
        }
        // The n-th message of `take` gets the n-th token; `o` is the rows before the
        // claim (the statement's snapshot), to put back what cannot be opened.
        let sql = format!(
            "UPDATE messages m SET visible_at = $2 + $3, receive_count = m.receive_count + 1, \
             first_received_at = COALESCE(m.first_received_at, $2), received_at = $2, \
             receipt_token = ($4::bigint[])[array_position($1::bigint[], m.seq)] \
             FROM (SELECT seq, visible_at, receive_count, first_received_at, receipt_token, \
               received_at, hidden_until FROM messages WHERE seq = ANY($1)) o \
             WHERE m.seq = o.seq AND m.seq = ANY($1) AND m.visible_at <= $2 \
             RETURNING {MESSAGE_COLUMNS}, o.visible_at, o.receive_count, \
               o.first_received_at, o.receipt_token, o.received_at, o.hidden_until"
        );
        let rows = query(tx, &sql, &[&take, &req.now_ms, &req.visibility_ms, &tokens]).await?;
        let mut claimed: Vec<(usize, &Row)> = rows
            .iter()
            .map(|r| {
                (
                    take.iter()
                        .position(|s| *s == r.get::<_, i64>(0))
                        .unwrap_or(usize::MAX),
                    r,
                )
            })
            .collect();
        // Keep the group-by-group order of `take`.
        claimed.sort_by_key(|(at, _)| *at);
        // A message that cannot be opened is put back, and so are the later messages of
        // its group (they wait behind it).
        let mut blocked: std::collections::HashSet<String> = Default::default();
        let mut put_back = Vec::new();
        for (_, r) in claimed {
            let m = message_row(r, 0);
            let group = m.group_id.clone().unwrap_or_default();
            if blocked.contains(&group) {
                put_back.push(OldClaim::at(r, m.seq, MESSAGE_COLUMN_COUNT));
                continue;
            }
            match open_claim(sealer, r, 0, m, &mut put_back, &mut out.undecryptable)? {
                Some(m) => out.messages.push(m),
                None => {
                    blocked.insert(group);
                }
            }
        }
        put_back_claims(tx, &put_back).await?;
    }
    if let (Some(attempt), false) = (&req.attempt, out.messages.is_empty()) {
        let seqs: Vec<i64> = out.messages.iter().map(|m| m.seq).collect();
        let tokens: Vec<i64> = out.messages.iter().map(|m| m.receipt_token).collect();
        execute(
            tx,
            "INSERT INTO receive_attempts (queue_id, attempt_id, expires_at, seqs, tokens) \
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT (queue_id, attempt_id) DO UPDATE \
             SET expires_at = EXCLUDED.expires_at, seqs = EXCLUDED.seqs, tokens = EXCLUDED.tokens",
            &[
                &req.queue_id,
                &attempt.id,
                &attempt.expires_at_ms,
                &seqs,
                &tokens,
            ],
        )
        .await?;
    }
    if out.messages.len() < want {
        out.next_visible_at_ms = next_visible;
    }
    Ok(out)
}

/// One entry of [`delete_in_queues`]: (queue id, seq, strict). With strict = (receipt
/// token, now in ms) the message is deleted only while that receipt holds it (token
/// matches, still hidden), else it is `Stale`; without, whenever it exists (`Store::delete_message`).
pub type DeleteItem = (i64, i64, Option<(i64, i64)>);

/// Deletes the messages `items` name, in any queues, and gives for each entry (its
/// condition held and this call deleted the row, the row existed); [`delete_outcomes`]
/// turns these into outcomes. The first entry naming each message is tried by one lean
/// `DELETE ... RETURNING` ([`DELETE_NAMED`]), which almost always deletes every entry (the
/// receive-delete loop of a consumer names messages it holds): those are (true, true). Only
/// the entries it did not delete (a second entry naming a message, a stale or unknown
/// receipt, a message another group deleted first) go through [`delete_checked`], which
/// tells why, so the common delete costs PostgreSQL one plain statement: in bare SQL under
/// pgbench (10 entries a call, 8 clients) 74-115 µs a call against 150-205 µs for the
/// checking statement alone (docs/benchmarks/history.md, "lean deletes", branch
/// `s22-pgclaim`). An entry the lean statement left behind is checked a moment later, as
/// if it came after it: the row then existing with its condition holding is deleted then;
/// a row gone meanwhile counts as gone before the entry (`NotFound`), as two groups naming
/// one message answer `Deleted` once.
pub async fn delete_in_queues<C: GenericClient>(
    c: &C,
    items: &[DeleteItem],
) -> Result<Vec<(bool, bool)>, Error> {
    let mut out: Vec<Option<(bool, bool)>> = vec![None; items.len()];
    // The first entry of each (queue, seq): a message is deleted once, by its first entry,
    // as deletes one after another would.
    let mut named: HashSet<(i64, i64)> = HashSet::with_capacity(items.len());
    let first: Vec<usize> = (0..items.len())
        .filter(|&i| named.insert((items[i].0, items[i].1)))
        .collect();
    let queues: Vec<i64> = first.iter().map(|&i| items[i].0).collect();
    let seqs: Vec<i64> = first.iter().map(|&i| items[i].1).collect();
    let tokens: Vec<Option<i64>> = first.iter().map(|&i| items[i].2.map(|t| t.0)).collect();
    let nows: Vec<i64> = first
        .iter()
        .map(|&i| items[i].2.map_or(0, |t| t.1))
        .collect();
    for r in query(c, DELETE_NAMED, &[&queues, &seqs, &tokens, &nows]).await? {
        let ord: i64 = r.get(0);
        let at = usize::try_from(ord - 1)
            .ok()
            .and_then(|k| first.get(k))
            .ok_or(Failure::Broken(
                "a delete answered an entry it was not given",
            ))?;
        out[*at] = Some((true, true));
    }
    let rest: Vec<usize> = (0..items.len()).filter(|&i| out[i].is_none()).collect();
    if !rest.is_empty() {
        let others: Vec<DeleteItem> = rest.iter().map(|&i| items[i]).collect();
        for (&i, checked) in rest.iter().zip(delete_checked(c, &others).await?) {
            out[i] = Some(checked);
        }
    }
    out.into_iter()
        .map(|o| o.ok_or(Failure::Broken("a delete lost an entry")))
        .collect()
}

/// [`delete_in_queues`]'s lean statement: deletes each entry's row (`$1` queue ids, `$2`
/// seqs, `$3` receipt tokens or NULL, `$4` nows in ms; no two entries naming one row)
/// whose condition holds, and returns the entries' numbers (from 1). The join finds each
/// row by its primary key.
const DELETE_NAMED: &str = "DELETE FROM messages m \
     USING unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::bigint[]) \
       WITH ORDINALITY AS r(queue_id, seq, token, now_ms, ord) \
     WHERE m.seq = r.seq AND m.queue_id = r.queue_id \
       AND (r.token IS NULL OR (m.receipt_token = r.token \
         AND GREATEST(m.visible_at, m.hidden_until) > r.now_ms)) \
     RETURNING r.ord";

/// Deletes the messages `items` name, in any queues, in one statement, and gives for each
/// entry (its condition held and this statement deleted the row, the row existed). The
/// DELETE removes every row some entry's condition holds on. A row the snapshot saw but a
/// concurrent transaction deleted first (the DELETE skips it after waiting) counts as gone
/// before this statement, so two groups naming one message answer `Deleted` once, as
/// deletes one after another would.
async fn delete_checked<C: GenericClient>(
    c: &C,
    items: &[DeleteItem],
) -> Result<Vec<(bool, bool)>, Error> {
    let queues: Vec<i64> = items.iter().map(|(q, _, _)| *q).collect();
    let seqs: Vec<i64> = items.iter().map(|(_, s, _)| *s).collect();
    let tokens: Vec<Option<i64>> = items.iter().map(|(_, _, t)| t.map(|t| t.0)).collect();
    let nows: Vec<i64> = items.iter().map(|(_, _, t)| t.map_or(0, |t| t.1)).collect();
    let rows = query(
        c,
        "WITH req AS (SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], \
             $4::bigint[]) WITH ORDINALITY AS r(queue_id, seq, token, now_ms, ord)), \
         pre AS (SELECT r.ord, r.queue_id, r.seq, m.seq IS NOT NULL AS existed, \
             (m.seq IS NOT NULL AND (r.token IS NULL OR \
               (m.receipt_token = r.token \
                 AND GREATEST(m.visible_at, m.hidden_until) > r.now_ms))) AS ok \
           FROM req r LEFT JOIN messages m ON m.seq = r.seq AND m.queue_id = r.queue_id), \
         d AS (DELETE FROM messages m USING req r, pre p \
           WHERE p.ord = r.ord AND p.ok AND m.seq = r.seq AND m.queue_id = r.queue_id \
           RETURNING m.queue_id, m.seq), \
         done AS (SELECT p.ord, EXISTS (SELECT 1 FROM d \
             WHERE d.queue_id = p.queue_id AND d.seq = p.seq) AS gone FROM pre p) \
         SELECT p.ok AND x.gone, p.existed AND (NOT p.ok OR x.gone) \
           FROM pre p JOIN done x ON x.ord = p.ord ORDER BY p.ord",
        &[&queues, &seqs, &tokens, &nows],
    )
    .await?;
    if rows.len() != items.len() {
        return Err(Failure::Broken(
            "a delete answered a row count unlike its entries'",
        ));
    }
    Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
}

/// The outcomes of `items` from what [`delete_in_queues`] found (`checked`), as if each
/// entry were deleted in turn after those whose (queue, seq) is in `gone` (updated): an
/// entry naming a message an earlier entry deleted is `NotFound`.
pub fn delete_outcomes(
    items: &[DeleteItem],
    checked: &[(bool, bool)],
    gone: &mut HashSet<(i64, i64)>,
) -> Vec<DeleteOutcome> {
    items
        .iter()
        .zip(checked)
        .map(|((queue, seq, strict), (ok, existed))| {
            if gone.contains(&(*queue, *seq)) {
                DeleteOutcome::NotFound
            } else if *ok {
                gone.insert((*queue, *seq));
                DeleteOutcome::Deleted
            } else if *existed && strict.is_some() {
                DeleteOutcome::Stale
            } else {
                DeleteOutcome::NotFound
            }
        })
        .collect()
}

pub async fn delete_message_by_id<C: GenericClient>(
    c: &C,
    queue_id: i64,
    message_id: &str,
) -> Result<bool, Error> {
    Ok(execute(
        c,
        "DELETE FROM messages WHERE message_id = $1 AND queue_id = $2",
        &[&message_id, &queue_id],
    )
    .await?
        > 0)
}

pub async fn delete_unnamed_message<C: GenericClient>(
    c: &C,
    queue_id: i64,
    seq: i64,
) -> Result<bool, Error> {
    Ok(execute(
        c,
        "DELETE FROM messages WHERE seq = $1 AND queue_id = $2 AND message_id IS NULL",
        &[&seq, &queue_id],
    )
    .await?
        > 0)
}

#[allow(clippy::too_many_arguments)]
pub async fn change_visibility<C: GenericClient>(
    c: &C,
    queue_id: i64,
    seq: i64,
    token: Option<i64>,
    now_ms: i64,
    visible_at_ms: i64,
    max_hidden_ms: i64,
    channel: &str,
) -> Result<VisibilityChange, Error> {
    // The update decides (its WHERE is `visibility::classify`'s rule, so the check and the
    // change are one statement); the row as it was before it (same snapshot) says why not.
    let row = query_opt(
        c,
        "WITH u AS (UPDATE messages \
           SET visible_at = CASE WHEN hidden_until = 0 THEN $5 ELSE visible_at END, \
             hidden_until = CASE WHEN hidden_until = 0 THEN 0 ELSE $5 END \
           WHERE seq = $1 AND queue_id = $2 \
           AND ($3::bigint IS NULL OR receipt_token = $3) AND receive_count > 0 \
           AND (received_at IS NULL OR $5 - received_at <= $7) \
           RETURNING 1), \
         woke AS (SELECT pg_notify($6, $2::bigint::text) FROM (SELECT 1 FROM u) x \
           WHERE $5 <= $4) \
         SELECT visible_at, receive_count, receipt_token, (SELECT count(*) FROM u), \
                (SELECT count(*) FROM woke), received_at \
         FROM messages WHERE seq = $1 AND queue_id = $2",
        &[
            &seq,
            &queue_id,
            &token,
            &now_ms,
            &visible_at_ms,
            &channel,
            &max_hidden_ms,
        ],
    )
    .await?;
    let Some(row) = row else {
        return Ok(VisibilityChange::NotFound);
    };
    let changed: i64 = row.get(3);
    if changed > 0 {
        return Ok(VisibilityChange::Changed);
    }
    let before = VisibilityRow {
        receive_count: row.get(1),
        receipt_token: row.get(2),
        received_at: row.get(5),
    };
    match visibility::classify(before, token, visible_at_ms, max_hidden_ms) {
        // In flight when the statement began, but changed by a concurrent receive or
        // delete.
        VisibilityChange::Changed => Ok(VisibilityChange::Stale),
        why_not => Ok(why_not),
    }
}

/// Purges unless held, the FIFO deduplication window with the messages (a deduplication
/// id seen before the purge is accepted after it, as AWS answers). Two purges at once:
/// the second's UPDATE waits for the first's row lock, then finds the hold the first set
/// and matches nothing.
pub async fn purge_queue<C: GenericClient>(
    c: &C,
    queue_id: i64,
    now_ms: i64,
    next_after_ms: i64,
) -> Result<PurgeOutcome, Error> {
    let row = query_one(
        c,
        "WITH q AS (UPDATE queues SET purge_hold_until = $3 WHERE id = $1 \
             AND (purge_hold_until IS NULL OR purge_hold_until <= $2) RETURNING id), \
         d AS (DELETE FROM messages WHERE queue_id IN (SELECT id FROM q) RETURNING 1), \
         f AS (DELETE FROM fifo_dedup WHERE queue_id IN (SELECT id FROM q)) \
         SELECT (SELECT count(*) FROM q), (SELECT count(*) FROM d), \
                EXISTS (SELECT 1 FROM queues WHERE id = $1)",
        &[&queue_id, &now_ms, &next_after_ms],
    )
    .await?;
    let (purged, deleted, exists): (i64, i64, bool) = (row.get(0), row.get(1), row.get(2));
    Ok(if purged == 0 && exists {
        PurgeOutcome::InProgress
    } else {
        PurgeOutcome::Purged(deleted as u64)
    })
}

/// The queue's live messages after `after_seq`, oldest sent first, at most `limit` (the
/// console's peek). `queue_id` is read as a range for the reason [`oldest_sent_at`] gives.
pub async fn peek_messages<C: GenericClient>(
    c: &C,
    queue_id: i64,
    after_seq: i64,
    limit: u32,
    now_ms: i64,
) -> Result<Vec<StoredMessage>, Error> {
    let sql = format!(
        "SELECT {MESSAGE_COLUMNS} FROM messages m WHERE m.queue_id >= $1 \
         AND m.queue_id <= $1 AND m.seq > $2 AND m.expires_at > $3 \
         ORDER BY m.queue_id, m.seq LIMIT $4"
    );
    let rows = query(c, &sql, &[&queue_id, &after_seq, &now_ms, &(limit as i64)]).await?;
    Ok(rows.iter().map(|r| message_row(r, 0)).collect())
}

pub async fn queue_counts<C: GenericClient>(
    c: &C,
    queue_id: i64,
    now_ms: i64,
) -> Result<QueueCounts, Error> {
    let row = query_one(
        c,
        "SELECT count(*) FILTER (WHERE visible_at <= $2 AND hidden_until <= $2), \
                count(*) FILTER (WHERE GREATEST(visible_at, hidden_until) > $2 \
                  AND receive_count > 0), \
                count(*) FILTER (WHERE GREATEST(visible_at, hidden_until) > $2 \
                  AND receive_count = 0) \
         FROM messages WHERE queue_id = $1 AND expires_at > $2",
        &[&queue_id, &now_ms],
    )
    .await?;
    Ok(QueueCounts {
        visible: row.get(0),
        in_flight: row.get(1),
        delayed: row.get(2),
    })
}

/// Whether queue `queue_id` is fair (see `Store::send_messages`).
pub async fn queue_is_fair<C: GenericClient>(c: &C, queue_id: i64) -> Result<bool, Error> {
    Ok(
        query_opt(c, "SELECT fair FROM queues WHERE id = $1", &[&queue_id])
            .await?
            .is_some_and(|r| r.get::<_, bool>(0)),
    )
}

/// The groups of a fair queue with their counts (see `Store::fair_groups`).
pub async fn fair_groups<C: GenericClient>(
    c: &C,
    queue_id: i64,
    now_ms: i64,
) -> Result<Option<Vec<GroupCounts>>, Error> {
    if !queue_is_fair(c, queue_id).await? {
        return Ok(None);
    }
    let rows = query(
        c,
        "SELECT group_id, count(*) FILTER (WHERE visible_at <= $2 AND hidden_until <= $2), \
                count(*) FILTER (WHERE GREATEST(visible_at, hidden_until) > $2 \
                  AND receive_count > 0), \
                count(*) FILTER (WHERE GREATEST(visible_at, hidden_until) > $2 \
                  AND receive_count = 0), \
                MIN(sent_at) FILTER (WHERE visible_at <= $2 AND hidden_until <= $2) \
         FROM messages WHERE queue_id = $1 AND expires_at > $2 GROUP BY group_id",
        &[&queue_id, &now_ms],
    )
    .await?;
    Ok(Some(
        rows.iter()
            .map(|r| GroupCounts {
                group: r.get(0),
                counts: QueueCounts {
                    visible: r.get(1),
                    in_flight: r.get(2),
                    delayed: r.get(3),
                },
                oldest_visible_sent_at_ms: r.get(4),
            })
            .collect(),
    ))
}

/// In-flight messages of a queue (see `Store::count_in_flight`): those hidden by
/// `visible_at` (FIFO, and rows in flight since before migration 23), over the range of
/// the visibility index not visible at `now_ms`, plus those hidden by `hidden_until` (the
/// HOT claim), among the index's range visible by `visible_at` (read from the heap, so
/// this part grows with the visible backlog).
pub async fn count_in_flight<C: GenericClient>(
    c: &C,
    queue_id: i64,
    now_ms: i64,
) -> Result<i64, Error> {
    let row = query_one(
        c,
        "SELECT (SELECT count(*) FROM messages WHERE queue_id = $1 AND visible_at > $2 \
           AND receive_count > 0 AND expires_at > $2) \
         + (SELECT count(*) FROM messages WHERE queue_id = $1 AND visible_at <= $2 \
           AND hidden_until > $2 AND receive_count > 0 AND expires_at > $2)",
        &[&queue_id, &now_ms],
    )
    .await?;
    Ok(row.get(0))
}

/// [`loft_core::store::Store::oldest_sent_at`]: the first live row of
/// `messages_queue_order` (an index scan from the queue's start, stopped at one row).
pub async fn oldest_sent_at<C: GenericClient>(
    c: &C,
    queue_id: i64,
    now_ms: i64,
) -> Result<Option<i64>, Error> {
    Ok(query_opt(
        c,
        // `queue_id` as a range, ordered by `queue_id, seq`: only `messages_queue_order`
        // gives that order, so the planner walks it from the queue's start. With
        // `queue_id = $1` it chose the primary key (seq order too) filtered by queue, which
        // reads every other queue's older messages first (EXPLAIN, PostgreSQL 15, custom
        // and generic plans).
        "SELECT sent_at FROM messages WHERE queue_id >= $1 AND queue_id <= $1 \
         AND expires_at > $2 ORDER BY queue_id, seq LIMIT 1",
        &[&queue_id, &now_ms],
    )
    .await?
    .map(|r| r.get(0)))
}

pub async fn delete_expired<C: GenericClient>(c: &C, now_ms: i64) -> Result<u64, Error> {
    for (table, column) in [
        ("fifo_dedup", "expires_at"),
        ("topic_dedup", "expires_at"),
        ("receive_attempts", "expires_at"),
        ("deleted_queues", "hold_until"),
        ("topic_archive", "expires_at"),
    ] {
        let sql = format!(
            "DELETE FROM {table} WHERE ctid IN (SELECT ctid FROM {table} WHERE {column} <= $1 \
             FOR UPDATE SKIP LOCKED)"
        );
        execute(c, &sql, &[&now_ms]).await?;
    }
    execute(
        c,
        "DELETE FROM messages WHERE seq IN (SELECT seq FROM messages WHERE expires_at <= $1 \
         FOR UPDATE SKIP LOCKED)",
        &[&now_ms],
    )
    .await
}
