//! The SQL of each store operation on PostgreSQL.
//!
//! Most operations are one statement (data-modifying CTEs), so they are atomic without an
//! explicit transaction and cost one round trip. The rest (FIFO sends and receives, publish)
//! run in a transaction the caller opens. Several Loft nodes run these against one database
//! at once; what keeps them correct:
//!
//! - standard receives, message moves, expiry sweeps and delivery claims pick their rows with
//!   `FOR UPDATE SKIP LOCKED`, so two nodes never take the same row and never wait on each
//!   other;
//! - FIFO receives hold a transaction-scoped advisory lock on their queue
//!   ([`FIFO_LOCK_CLASS`], queue id) for the whole walk, so group locks are decided by one
//!   receiver at a time; FIFO sends hold the same lock in shared mode from before their
//!   insert to their commit, so a receive never sees a later message of a group whose
//!   earlier one is not committed yet;
//! - a FIFO message's number comes from its queue's own `SEQUENCE` (`queue_sequence!`,
//!   not transactional, so sends to one queue do not wait for each other's commits), taken
//!   under its group's advisory lock ([`FIFO_GROUP_LOCK_CLASS`]) held to the commit, so
//!   within a group numbers and the claim order (`seq`) agree on every node;
//! - deduplication keys are rows with a primary key: the second of two concurrent sends of
//!   one key waits for the first to commit and then reports it as the original.
//!
//! Each change that can make messages visible in a queue also runs `pg_notify(channel,
//! queue_id)`, delivered to every node's listener when the transaction commits.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;

use deadpool_postgres::GenericClient;
use loft_core::model::*;
use tokio_postgres::types::ToSql;
use tokio_postgres::Row;

use crate::fifo::{FifoRead, FifoScan, FifoWalk};
use crate::replay::{drop_held, merge_held, ArchiveWindow};
use crate::seal::{Claimed, Claiming, SealedFifoPublish, Sealer};
use crate::visibility::{self, VisibilityRow};

type Map = BTreeMap<String, String>;

/// Why an operation failed: the database said no, or answered something impossible.
#[derive(Debug)]
pub enum Failure {
    /// An error from the driver or the server.
    Db(tokio_postgres::Error),
    /// The database answered, but not as the schema promises.
    Broken(&'static str),
    /// A message of an encrypted queue could not be sealed or opened (`crate::seal`).
    Sealing(String),
}

impl From<tokio_postgres::Error> for Failure {
    fn from(e: tokio_postgres::Error) -> Self {
        Failure::Db(e)
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Db(e) => match e.as_db_error() {
                Some(db) => write!(f, "{}: {}", db.code().code(), db.message()),
                None => {
                    write!(f, "{e}")?;
                    let mut source = std::error::Error::source(e);
                    while let Some(s) = source {
                        write!(f, ": {s}")?;
                        source = s.source();
                    }
                    Ok(())
                }
            },
            Failure::Broken(why) => f.write_str(why),
            Failure::Sealing(why) => f.write_str(why),
        }
    }
}

type Error = Failure;
type Params<'a> = &'a [&'a (dyn ToSql + Sync)];

/// Advisory-lock class of the per-queue FIFO lock; the second key is the queue id.
pub const FIFO_LOCK_CLASS: i32 = 0x4c66_6966; // "Lfif"

/// Advisory-lock class of the per-group FIFO lock; the second key is
/// `group_lock_key!` of the queue id and the MessageGroupId. Whatever gives a message with
/// a MessageGroupId its queue number (a FIFO send, a move into a queue) holds its group's
/// lock exclusively from before it takes the number until it commits, so the numbers of one
/// group and its messages' `seq` (the claim order) are taken in the same order, and
/// numbers increase in the order the group's messages are delivered. Two groups whose keys
/// collide only wait for each other.
pub const FIFO_GROUP_LOCK_CLASS: i32 = 0x4c66_6967; // "Lfig"

/// The second key of a group's [`FIFO_GROUP_LOCK_CLASS`] lock, an SQL expression of `q`
/// (the queue id, `bigint`) and `g` (the MessageGroupId, `text`, `''` for none).
macro_rules! group_lock_key {
    ($q:literal, $g:literal) => {
        concat!("hashtext(", $q, "::text || ' ' || ", $g, ")")
    };
}

/// The queue number sequence of queue `q` (an SQL expression giving its id) as a
/// `regclass`, for `nextval`: each queue has its own PostgreSQL `SEQUENCE`
/// `queue_sequence_<id>` in the store's schema, made with the queue and dropped with it
/// ([`create_queue`], [`delete_queue`], [`reset`]; migration 20 made those of older
/// queues). `nextval` is not transactional, so taking a number holds no lock to the
/// commit; numbers a rolled-back send took are skipped (SequenceNumbers are "large,
/// non-consecutive", Amazon SQS API Reference, SendMessage).
macro_rules! queue_sequence {
    ($q:literal) => {
        concat!("(('queue_sequence_' || ", $q, ")::regclass)")
    };
}

/// The name of queue `id`'s number sequence ([`queue_sequence!`]).
pub(crate) fn queue_sequence_name(id: i64) -> String {
    format!("queue_sequence_{id}")
}

fn to_json(map: &Map) -> String {
    serde_json::to_string(map).unwrap_or_else(|_| "{}".into())
}

fn from_json(text: &str) -> Map {
    serde_json::from_str(text).unwrap_or_default()
}

/// The second advisory-lock key of queue `id` (queue ids stay far below 2^31; beyond that
/// two queues would share a lock, which only serialises them).
fn lock_key(id: i64) -> i32 {
    (id & 0x7fff_ffff) as i32
}

async fn query<C: GenericClient>(c: &C, sql: &str, params: Params<'_>) -> Result<Vec<Row>, Error> {
    let stmt = c.prepare_cached(sql).await?;
    Ok(c.query(&stmt, params).await?)
}

async fn query_opt<C: GenericClient>(
    c: &C,
    sql: &str,
    params: Params<'_>,
) -> Result<Option<Row>, Error> {
    let stmt = c.prepare_cached(sql).await?;
    Ok(c.query_opt(&stmt, params).await?)
}

async fn query_one<C: GenericClient>(c: &C, sql: &str, params: Params<'_>) -> Result<Row, Error> {
    let stmt = c.prepare_cached(sql).await?;
    Ok(c.query_one(&stmt, params).await?)
}

async fn execute<C: GenericClient>(c: &C, sql: &str, params: Params<'_>) -> Result<u64, Error> {
    let stmt = c.prepare_cached(sql).await?;
    Ok(c.execute(&stmt, params).await?)
}

/// Creates a named row (a queue, a topic) with `insert`, an `INSERT ... ON CONFLICT (name)
/// DO NOTHING RETURNING` its columns with `params` (`$1` the name), or reads the row that
/// has the name with `select` (`$1` the name); `true` when this call created it. When the
/// row the insert met is deleted before the read, it tries again.
async fn create_named<C: GenericClient, T>(
    c: &C,
    insert: &str,
    select: &str,
    params: Params<'_>,
    row: fn(&Row) -> T,
) -> Result<(T, bool), Error> {
    loop {
        if let Some(r) = query_opt(c, insert, params).await? {
            return Ok((row(&r), true));
        }
        if let Some(r) = query_opt(c, select, &params[..1]).await? {
            return Ok((row(&r), false));
        }
    }
}

/// Queues a wake-up of `queue_id`'s long polls on every node (sent at commit).
async fn notify<C: GenericClient>(c: &C, channel: &str, queue_id: i64) -> Result<(), Error> {
    query(
        c,
        "SELECT pg_notify($1, $2::bigint::text)",
        &[&channel, &queue_id],
    )
    .await
    .map(drop)
}

/// The `input` CTE both send statements ([`INSERT_MESSAGES`], [`INSERT_PLAIN_MESSAGES`])
/// start with: the rows of `$1..$17`, one array per column, numbered `n` in order.
macro_rules! insert_input_cte {
    () => {
        "WITH input AS (SELECT * FROM unnest($1::bigint[], \
    $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::bigint[], \
    $9::bigint[], $10::bigint[], $11::bigint[], $12::bigint[], $13::text[], $14::text[], \
    $15::text[], $16::bool[], $17::smallint[]) WITH ORDINALITY AS u(queue_id, message_id, \
    body, md5_body, message_attributes, system_attributes, sender_id, sent_at, visible_at, \
    expires_at, receive_count, first_received_at, group_id, dedup_id, dead_letter_source, \
    standard, sealed, n)), "
    };
}

mod mappings;
mod messages;
mod moves;
mod outbox;
mod platforms;
mod publish;
mod queues;
mod reset;
mod topics;

pub use mappings::*;
pub use messages::*;
pub use moves::*;
pub use outbox::*;
pub use platforms::*;
pub use publish::*;
pub use queues::*;
pub use reset::*;
pub use topics::*;
