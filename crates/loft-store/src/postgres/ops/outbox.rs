//! The outbox of work that crosses cells (`crate::cells`, migration 18): in the source
//! cell, the rows a publish writes for queues of other cells and the relay's claim and
//! removal of them; in the destination cell, the idempotent insert of relayed copies.

use super::*;

/// One outbox row: a copy bound for `queue_id` (a queue of another cell), as the
/// destination stores it (already sealed when its queue is encrypted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxRow {
    /// The row's id in its source cell; ids are ranged by cell, so `id >> CELL_ID_BITS`
    /// names the source cell and no two cells give one id.
    pub id: i64,
    /// The destination queue's id (which carries its cell).
    pub queue_id: i64,
    /// The copy. For a [`MovedCopy`], its body and attributes are as its source stored
    /// them (sealed when [`MovedCopy::sealed`]), and `seal` is `None`.
    pub message: NewMessage,
    /// `Some` when the copy is a message that left its queue for a queue of another cell
    /// (a dead-letter move or a message move), `None` for a publish's copy.
    pub moved: Option<MovedCopy>,
}

/// How a message that left its queue for a queue of another cell is stored there: the
/// row as the move on one database would leave it, carried whole (no deduplication key is
/// reserved, the queue is not made fair by it; a fair destination gives it key 0, as the
/// move on one database does).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MovedCopy {
    /// Whether body and attributes are sealed (the source row's `sealed`).
    pub sealed: bool,
    /// The FIFO SequenceNumber it keeps (a dead-letter move keeps its source's), if any.
    pub sequence: Option<i64>,
    /// Whether it takes its destination queue's next SequenceNumber instead, when it has a
    /// MessageGroupId (a message move, which numbers it as a send into the queue does).
    pub renumber: bool,
}

/// The copy `m` as the outbox's `copy` column keeps it (JSON).
fn copy_json(m: &NewMessage) -> String {
    serde_json::json!({
        "message_id": m.message_id,
        "body": m.body,
        "md5_body": m.md5_body,
        "message_attributes": m.message_attributes,
        "system_attributes": m.system_attributes,
        "sender_id": m.sender_id,
        "sent_at": m.sent_at_ms,
        "visible_at": m.visible_at_ms,
        "expires_at": m.expires_at_ms,
        "group_id": m.group_id,
        "dedup_id": m.dedup_id,
        "receive_count": m.receive_count,
        "first_received_at": m.first_received_at_ms,
        "dead_letter_source": m.dead_letter_source,
        "dedup": m.dedup.as_ref().map(|d| serde_json::json!({
            "scope": d.scope, "id": d.id, "expires_at": d.expires_at_ms,
        })),
        "seal": m.seal.as_ref().map(|s| serde_json::json!({
            "key_id": s.key_id, "period": s.period,
        })),
    })
    .to_string()
}

/// The [`MovedCopy`] of a copy's JSON (`moved`: `sealed` 0 or 1, `sequence`, `renumber`),
/// `None` for a publish's copy; as [`outbox_parked_in`] and [`outbox_moves_in`] write it.
fn moved_from_json(text: &str) -> Option<MovedCopy> {
    use serde_json::Value;
    let v: Value = serde_json::from_str(text).ok()?;
    let m = v.get("moved")?.as_object()?;
    Some(MovedCopy {
        sealed: m.get("sealed").and_then(Value::as_i64).unwrap_or(0) != 0,
        sequence: m.get("sequence").and_then(Value::as_i64),
        renumber: m.get("renumber").and_then(Value::as_bool).unwrap_or(false),
    })
}

/// The SQL expression of a moved message's copy (the JSON [`copy_from_json`] and
/// [`moved_from_json`] read) from the columns of a `messages` row, given as SQL
/// expressions: `$visible`, `$expires`... are substituted by the callers' columns.
#[allow(clippy::too_many_arguments)]
pub(crate) fn moved_json_sql(
    message_id: &str,
    sent_at: &str,
    visible_at: &str,
    expires_at: &str,
    receive_count: &str,
    first_received_at: &str,
    dead_letter_source: &str,
    sequence: &str,
    renumber: bool,
) -> String {
    format!(
        "json_build_object('message_id', {message_id}, 'body', body, 'md5_body', md5_body, \
         'message_attributes', message_attributes, 'system_attributes', system_attributes, \
         'sender_id', sender_id, 'sent_at', {sent_at}, 'visible_at', {visible_at}, \
         'expires_at', {expires_at}, 'group_id', group_id, 'dedup_id', dedup_id, \
         'receive_count', {receive_count}, 'first_received_at', {first_received_at}, \
         'dead_letter_source', {dead_letter_source}, 'dedup', NULL::text, 'seal', NULL::text, \
         'moved', json_build_object('sealed', sealed, 'sequence', {sequence}, \
           'renumber', {renumber}))::text"
    )
}

/// Moves the messages this cell holds parked under `queue_id` (a queue of another cell:
/// a dead-letter move of this transaction set their `queue_id` to it, exactly as on one
/// database) into the outbox, inside the caller's transaction: each row leaves
/// `messages` and becomes an outbox row carrying it whole ([`MovedCopy`]: sealed as
/// stored, its attributes, receive count, first receive, `dead_letter_source`, group and
/// deduplication id, SequenceNumber), in seq order (ordered rows when it has a
/// MessageGroupId, so a FIFO dead-letter queue gets them in order). Rows parked by
/// other transactions are not visible here until they commit, and each transaction
/// drains its own before it commits, so none stays parked. Returns the outbox ids.
pub async fn outbox_parked_in<C: GenericClient>(
    tx: &C,
    queue_id: i64,
    now_ms: i64,
) -> Result<Vec<i64>, Error> {
    let copy = moved_json_sql(
        "message_id",
        "sent_at",
        "GREATEST(visible_at, hidden_until)",
        "expires_at",
        "receive_count",
        "first_received_at",
        "dead_letter_source",
        "sequence",
        false,
    );
    let sql = format!(
        "WITH gone AS (DELETE FROM messages WHERE queue_id = $1 RETURNING *) \
         INSERT INTO cell_outbox (queue_id, copy, created_at, ordered) \
         SELECT $1, {copy}, $2, group_id IS NOT NULL FROM gone ORDER BY seq RETURNING id"
    );
    let mut ids: Vec<i64> = query(tx, &sql, &[&queue_id, &now_ms])
        .await?
        .iter()
        .map(|r| r.get(0))
        .collect();
    ids.sort_unstable();
    Ok(ids)
}

/// The copy that [`copy_json`] wrote, or `None` when `text` is not one.
fn copy_from_json(text: &str) -> Option<NewMessage> {
    use serde_json::Value;
    let v: Value = serde_json::from_str(text).ok()?;
    let text = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    let int = |k: &str| v.get(k).and_then(Value::as_i64);
    let dedup = match v.get("dedup") {
        Some(Value::Object(d)) => Some(DedupKey {
            scope: d.get("scope")?.as_str()?.to_owned(),
            id: d.get("id")?.as_str()?.to_owned(),
            expires_at_ms: d.get("expires_at")?.as_i64()?,
        }),
        _ => None,
    };
    let seal = match v.get("seal") {
        Some(Value::Object(s)) => Some(SealWith {
            key_id: s.get("key_id")?.as_str()?.to_owned(),
            period: s.get("period")?.as_i64()?,
        }),
        _ => None,
    };
    Some(NewMessage {
        message_id: text("message_id"),
        body: text("body")?,
        md5_body: text("md5_body")?,
        message_attributes: text("message_attributes"),
        system_attributes: text("system_attributes"),
        sender_id: text("sender_id")?,
        sent_at_ms: int("sent_at")?,
        visible_at_ms: int("visible_at")?,
        expires_at_ms: int("expires_at")?,
        group_id: text("group_id"),
        dedup_id: text("dedup_id"),
        receive_count: int("receive_count")?,
        first_received_at_ms: int("first_received_at"),
        dead_letter_source: text("dead_letter_source"),
        dedup,
        seal,
    })
}

/// Writes one outbox row per copy of `copies` (destination queue id, copy) inside the
/// caller's transaction, free to claim (`lease_until` 0). Returns their ids, in order.
pub async fn write_outbox_in<C: GenericClient>(
    tx: &C,
    copies: &[(i64, NewMessage)],
    now_ms: i64,
) -> Result<Vec<i64>, Error> {
    if copies.is_empty() {
        return Ok(Vec::new());
    }
    let queue: Vec<i64> = copies.iter().map(|(q, _)| *q).collect();
    let copy: Vec<String> = copies.iter().map(|(_, m)| copy_json(m)).collect();
    // A FIFO queue's copies (those with a deduplication key) keep their order.
    let ordered: Vec<bool> = copies.iter().map(|(_, m)| m.dedup.is_some()).collect();
    // `WITH ORDINALITY` and the ORDER BY keep the ids in input order.
    let rows = query(
        tx,
        "INSERT INTO cell_outbox (queue_id, copy, created_at, ordered) \
         SELECT q, c, $3, o FROM unnest($1::bigint[], $2::text[], $4::boolean[]) \
         WITH ORDINALITY AS u(q, c, o, n) ORDER BY n RETURNING id",
        &[&queue, &copy, &now_ms, &ordered],
    )
    .await?;
    let mut ids: Vec<i64> = rows.iter().map(|r| r.get(0)).collect();
    // Ids are drawn in the order rows are inserted, which follows the ORDER BY.
    ids.sort_unstable();
    Ok(ids)
}

/// A claimed outbox row: its id, its destination queue, and its copy (with what
/// [`MovedCopy`] it is), `None` when the copy cannot be read.
pub type ClaimedRow = (i64, i64, Option<(NewMessage, Option<MovedCopy>)>);

/// Advisory-lock class of the outbox claim (the second key is 0): claims of one cell's
/// outbox run one at a time, so each sees the leases the one before it took.
pub const OUTBOX_LOCK_CLASS: i32 = 0x4c6f_7574; // "Lout"

/// Leases, inside the caller's transaction, up to `limit` outbox rows whose lease ended
/// by `now_ms` (or, with `only`, those of its ids that are free) until `lease_until_ms`,
/// lowest id first. An ordered row (a FIFO queue's copy) is taken only when no earlier
/// row of its queue is leased, or (with `only`) left out: so a FIFO queue's copies are
/// relayed in the order they were written (their topic's SequenceNumber order), by one
/// relay at a time. The claims of the cell run one after another (an advisory lock held
/// to the caller's commit). A row whose copy cannot be read is returned with `None` (the
/// caller drops it).
pub async fn claim_outbox<C: GenericClient>(
    c: &C,
    now_ms: i64,
    lease_until_ms: i64,
    limit: u32,
    only: Option<&[i64]>,
) -> Result<Vec<ClaimedRow>, Error> {
    let only: Option<Vec<i64>> = only.map(<[i64]>::to_vec);
    execute(
        c,
        "SELECT pg_advisory_xact_lock($1, 0)",
        &[&OUTBOX_LOCK_CLASS],
    )
    .await?;
    let rows = query(
        c,
        "UPDATE cell_outbox o SET lease_until = $2 FROM (SELECT w.id FROM cell_outbox w \
           WHERE w.lease_until <= $1 AND ($4::bigint[] IS NULL OR w.id = ANY($4)) \
           AND (NOT w.ordered OR NOT EXISTS (SELECT 1 FROM cell_outbox e \
             WHERE e.queue_id = w.queue_id AND e.id < w.id \
             AND (e.lease_until > $1 OR ($4::bigint[] IS NOT NULL AND e.id <> ALL($4))))) \
           ORDER BY w.id LIMIT $3 FOR UPDATE SKIP LOCKED) c \
         WHERE o.id = c.id RETURNING o.id, o.queue_id, o.copy",
        &[&now_ms, &lease_until_ms, &(limit as i64), &only],
    )
    .await?;
    let mut out: Vec<ClaimedRow> = rows
        .iter()
        .map(|r| {
            let copy: &str = r.get(2);
            (
                r.get(0),
                r.get(1),
                copy_from_json(copy).map(|m| (m, moved_from_json(copy))),
            )
        })
        .collect();
    out.sort_by_key(|(id, _, _)| *id);
    Ok(out)
}

/// Removes outbox rows `ids` (relayed, or dropped).
pub async fn finish_outbox<C: GenericClient>(c: &C, ids: &[i64]) -> Result<u64, Error> {
    let ids = ids.to_vec();
    execute(c, "DELETE FROM cell_outbox WHERE id = ANY($1)", &[&ids]).await
}

/// Inserts relayed `rows` into their queues (of this cell) inside the caller's
/// transaction, each at most once ever: the row's id goes into `cell_relayed` first
/// (`ON CONFLICT DO NOTHING`; a concurrent relay of the same id waits for the first to
/// end), and only the rows whose id was new are stored. A copy for a queue this cell no
/// longer has is recorded and dropped, unless the queue moved to another cell: then the
/// whole relay fails (SQLSTATE `LFMV1`, answered `ServiceUnavailable`) and its rows stay. A publish's copy is stored as a send stores it
/// (`send_messages_in`), a moved message as its move leaves it ([`MovedCopy`]);
/// consecutive rows of one kind in one statement, in row order. Returns, per row in
/// order, what the insert did: `None` for a repeat or a dropped copy.
pub async fn relay_in<C: GenericClient>(
    tx: &C,
    rows: &[OutboxRow],
    now_ms: i64,
    channel: &str,
) -> Result<Vec<Option<SentMessage>>, Error> {
    let ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
    let fresh: HashSet<i64> = query(
        tx,
        "INSERT INTO cell_relayed (id, relayed_at) SELECT id, $2 FROM unnest($1::bigint[]) \
         AS u(id) ON CONFLICT (id) DO NOTHING RETURNING id",
        &[&ids, &now_ms],
    )
    .await?
    .iter()
    .map(|r| r.get(0))
    .collect();
    let mut queues: Vec<i64> = rows
        .iter()
        .filter(|r| fresh.contains(&r.id))
        .map(|r| r.queue_id)
        .collect();
    queues.sort_unstable();
    queues.dedup();
    let live: HashSet<i64> = if queues.is_empty() {
        HashSet::new()
    } else {
        query(tx, "SELECT id FROM queues WHERE id = ANY($1)", &[&queues])
            .await?
            .iter()
            .map(|r| r.get(0))
            .collect()
    };
    // A queue that moved to another cell (`super::super::moving`): refused, so the row
    // stays in its outbox (re-aimed at the queue's new id by the move) instead of being
    // dropped as a deleted queue's.
    let gone: Vec<i64> = queues
        .iter()
        .filter(|q| !live.contains(q))
        .copied()
        .collect();
    if !gone.is_empty()
        && !query(
            tx,
            "SELECT 1 FROM loft_cell_moved WHERE queue_id = ANY($1)",
            &[&gone],
        )
        .await?
        .is_empty()
    {
        tx.batch_execute(
            "DO $r$ BEGIN RAISE EXCEPTION 'loft: an outbox row names a queue that moved \
             to another cell' USING ERRCODE = 'LFMV1'; END $r$",
        )
        .await?;
    }
    // Runs of publish copies and of moved messages, in row order, each run in one
    // statement (so a queue's rows are stored in id order).
    let keep: Vec<&OutboxRow> = rows
        .iter()
        .filter(|r| fresh.contains(&r.id) && live.contains(&r.queue_id))
        .collect();
    let mut sent: Vec<SentMessage> = Vec::with_capacity(keep.len());
    for run in keep.chunk_by(|a, b| a.moved.is_some() == b.moved.is_some()) {
        if run[0].moved.is_some() {
            sent.extend(insert_moved_in(tx, run, channel).await?);
        } else {
            let copies: Vec<(i64, NewMessage)> = run
                .iter()
                .map(|r| (r.queue_id, r.message.clone()))
                .collect();
            sent.extend(send_messages_in(tx, &copies, channel).await?);
        }
    }
    let mut sent = sent.into_iter();
    Ok(rows
        .iter()
        .map(|r| {
            if fresh.contains(&r.id) && live.contains(&r.queue_id) {
                sent.next()
            } else {
                None
            }
        })
        .collect())
}

/// Inserts moved messages (`rows`, each with its [`MovedCopy`]) into their queues of this
/// cell in one statement, in order, as the move on one database leaves them: no
/// deduplication key reserved, fair key 0 in a fair queue, the SequenceNumber kept or (with
/// [`MovedCopy::renumber`] and a MessageGroupId) the queue's next; and wakes their queues
/// at commit.
async fn insert_moved_in<C: GenericClient>(
    tx: &C,
    rows: &[&OutboxRow],
    channel: &str,
) -> Result<Vec<SentMessage>, Error> {
    let col = |f: &dyn Fn(&OutboxRow) -> Option<String>| -> Vec<Option<String>> {
        rows.iter().map(|r| f(r)).collect()
    };
    let int = |f: &dyn Fn(&OutboxRow) -> i64| -> Vec<i64> { rows.iter().map(|r| f(r)).collect() };
    let queue = int(&|r| r.queue_id);
    let message_id = col(&|r| r.message.message_id.clone());
    let body = col(&|r| Some(r.message.body.clone()));
    let md5 = col(&|r| Some(r.message.md5_body.clone()));
    let mattrs = col(&|r| r.message.message_attributes.clone());
    let sattrs = col(&|r| r.message.system_attributes.clone());
    let sender = col(&|r| Some(r.message.sender_id.clone()));
    let sent_at = int(&|r| r.message.sent_at_ms);
    let visible = int(&|r| r.message.visible_at_ms);
    let expires = int(&|r| r.message.expires_at_ms);
    let count = int(&|r| r.message.receive_count);
    let first: Vec<Option<i64>> = rows
        .iter()
        .map(|r| r.message.first_received_at_ms)
        .collect();
    let group = col(&|r| r.message.group_id.clone());
    let dedup = col(&|r| r.message.dedup_id.clone());
    let source = col(&|r| r.message.dead_letter_source.clone());
    let moved = |r: &OutboxRow| {
        r.moved.clone().unwrap_or(MovedCopy {
            sealed: false,
            sequence: None,
            renumber: false,
        })
    };
    let sealed: Vec<i16> = rows.iter().map(|r| moved(r).sealed as i16).collect();
    let sequence: Vec<Option<i64>> = rows.iter().map(|r| moved(r).sequence).collect();
    let renumber: Vec<bool> = rows.iter().map(|r| moved(r).renumber).collect();
    let channel = channel.to_owned();
    let params: [&(dyn ToSql + Sync); 20] = [
        &queue,
        &message_id,
        &body,
        &md5,
        &mattrs,
        &sattrs,
        &sender,
        &sent_at,
        &visible,
        &expires,
        &count,
        &first,
        &group,
        &dedup,
        &source,
        &sealed,
        &sequence,
        &renumber,
        &channel,
        &FIFO_GROUP_LOCK_CLASS,
    ];
    let out = query(
        tx,
        concat!(
            "WITH input AS (SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], \
             $4::text[], $5::text[], $6::text[], $7::text[], $8::bigint[], $9::bigint[], \
             $10::bigint[], $11::bigint[], $12::bigint[], $13::text[], $14::text[], \
             $15::text[], $16::smallint[], $17::bigint[], $18::boolean[]) WITH ORDINALITY \
           AS u(q, mid, body, md5, ma, sa, sender, sent, vis, exp, rc, fr, g, d, dls, sealed, \
             seqn, renum, n)), \
         fresh AS (SELECT i.*, (renum AND g IS NOT NULL) AS fresh FROM input i), \
         grouplocks AS MATERIALIZED (SELECT count(pg_advisory_xact_lock($20, k)) AS locks \
           FROM (SELECT DISTINCT ",
            group_lock_key!("q", "g"),
            " AS k FROM fresh WHERE fresh ORDER BY k OFFSET 0) o), \
         ordered AS (SELECT * FROM fresh WHERE (SELECT locks FROM grouplocks) >= 0 \
           ORDER BY n OFFSET 0), \
         numbered AS (SELECT *, CASE WHEN fresh THEN nextval(",
            queue_sequence!("q"),
            ") END AS number FROM ordered OFFSET 0), \
         ins AS (INSERT INTO messages (queue_id, message_id, body, md5_body, \
             message_attributes, system_attributes, sender_id, sent_at, visible_at, \
             expires_at, receive_count, first_received_at, group_id, dedup_id, \
             dead_letter_source, fair_key, sealed, sequence) \
           SELECT x.q, mid, body, md5, ma, sa, sender, sent, vis, exp, rc, fr, g, d, dls, \
             CASE WHEN (SELECT fair FROM queues WHERE id = x.q) THEN 0 END, sealed, \
             CASE WHEN fresh THEN number ELSE seqn END \
           FROM numbered x ORDER BY n \
           RETURNING seq, message_id, queue_id, sequence), \
         woke AS (SELECT pg_notify($19, q::text) FROM (SELECT DISTINCT queue_id AS q FROM ins) d) \
         SELECT seq, message_id, sequence, (SELECT count(*) FROM woke) FROM ins ORDER BY seq"
        ),
        &params,
    )
    .await?
    .iter()
    .map(|r| SentMessage {
        seq: r.get(0),
        message_id: r.get(1),
        duplicate: false,
        sequence: r.get(2),
    })
    .collect();
    Ok(out)
}

/// The lowest id in this cell's outbox, if any row is there.
pub async fn outbox_floor<C: GenericClient>(c: &C) -> Result<Option<i64>, Error> {
    Ok(query_one(c, "SELECT MIN(id) FROM cell_outbox", &[])
        .await?
        .get(0))
}

/// Forgets the relayed ids of `source` (a cell's id range) below `below` that were
/// relayed before `before_ms`: their outbox rows are gone, so no repeat can come.
pub async fn sweep_relayed<C: GenericClient>(
    c: &C,
    source: &std::ops::Range<i64>,
    below: i64,
    before_ms: i64,
) -> Result<u64, Error> {
    execute(
        c,
        "DELETE FROM cell_relayed WHERE id >= $1 AND id < $2 AND relayed_at < $3",
        &[&source.start, &below.min(source.end), &before_ms],
    )
    .await
}
