//! What a [`PgStore`] does as one cell of a [`crate::cells::CellStore`]: it records its
//! cell number, moves its id sequences into that number's range, and (cell 1 only) keeps
//! the catalog of which cell holds each queue and topic. None of it runs for a store
//! opened alone: a one-database deployment's schema is exactly the migrations'.
//!
//! The tables are made here, not by a migration, so that they exist only in databases
//! that serve as cells: `loft_cell` (one row: the cell's number),
//! `loft_cell_catalog` (kind `q` or `t`, store key, cell number; made in every cell, used
//! in cell 1 only) and `loft_cell_moved` with its guard function (the queues moving or
//! moved out of the cell, `super::moving`).

use std::time::Duration;

use loft_core::error::{Error, Result};

use super::ops::Failure;
use super::{chain, health, retryable, PgStore, MAX_RETRIES};

/// Bits of an id below its cell: the ids of cell `n` (1-based) are
/// `(n - 1) << CELL_ID_BITS` and up, so cell 1's ids are those a one-database deployment
/// makes, and each cell has 2^48 of each kind.
pub const CELL_ID_BITS: u32 = 48;

/// The advisory lock under which the cell tables are made (two nodes starting at once).
const CELL_DDL_LOCK: i64 = 0x6c6f_6674_6365_6c6c; // "loftcell"

/// The advisory lock under which a new name's cell is chosen and recorded in the catalog.
const CATALOG_PLACE_LOCK: i64 = 0x6c6f_6674_706c_6163; // "loftplac"

/// The id columns whose values leave the store (queue, topic, message, delivery, recorded
/// message, subscription, move task and mapping ids) or the cell (outbox ids, which the
/// destination cell records): each cell's sequence starts at its
/// range, so no two cells give one number.
const RANGED: &[(&str, &str)] = &[
    ("queues", "id"),
    ("messages", "seq"),
    ("topics", "id"),
    ("deliveries", "id"),
    ("recorded_messages", "id"),
    ("subscriptions", "seq"),
    ("move_tasks", "id"),
    ("event_source_mappings", "id"),
    ("cell_outbox", "id"),
];

fn pg(e: impl std::fmt::Display) -> String {
    format!("PostgreSQL: {e}")
}

impl PgStore {
    /// Makes this database cell `number` (1-based) of `count`: records the number (a
    /// database that recorded another number is refused, so reordered URLs cannot send a
    /// queue's traffic to the wrong database), starts its id sequences at the number's
    /// range and checks that its queues' and topics' ids lie in that range (a database
    /// that already served as a one-database deployment can only be cell 1). Cell 1 also
    /// gets the catalog table.
    ///
    /// Errors: the database refuses, or it is not (or cannot be) cell `number`.
    pub(crate) async fn claim_cell(&self, number: u32) -> Result<(), String> {
        let mut client = self.pool.get().await.map_err(|e| pg(chain(&e)))?;
        let tx = client.transaction().await.map_err(|e| pg(chain(&e)))?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&CELL_DDL_LOCK])
            .await
            .map_err(|e| pg(chain(&e)))?;
        // Made once, under the lock (`IF NOT EXISTS` alone would log a notice at every
        // start); a `loft_cell_moved` of before moves had leases gains their columns.
        let made: bool = tx
            .query_one(
                "SELECT to_regclass('loft_cell') IS NOT NULL \
                 AND to_regclass('loft_cell_catalog') IS NOT NULL \
                 AND to_regclass('loft_cell_moved') IS NOT NULL \
                 AND EXISTS (SELECT 1 FROM pg_attribute \
                             WHERE attrelid = to_regclass('loft_cell_moved') \
                               AND attname = 'started_at')",
                &[],
            )
            .await
            .map_err(|e| pg(chain(&e)))?
            .get(0);
        if !made {
            tx.batch_execute(
                "CREATE TABLE IF NOT EXISTS loft_cell (
                 id     SMALLINT PRIMARY KEY CHECK (id = 1),
                 number INTEGER NOT NULL
             );
             CREATE TABLE IF NOT EXISTS loft_cell_catalog (
                 kind TEXT NOT NULL,
                 name TEXT NOT NULL,
                 cell INTEGER NOT NULL,
                 PRIMARY KEY (kind, name)
             );",
            )
            .await
            .map_err(|e| pg(chain(&e)))?;
            tx.batch_execute(super::moving::GUARD_SQL)
                .await
                .map_err(|e| pg(chain(&e)))?;
        }
        let want = number as i32;
        tx.execute(
            "INSERT INTO loft_cell (id, number) VALUES (1, $1) ON CONFLICT (id) DO NOTHING",
            &[&want],
        )
        .await
        .map_err(|e| pg(chain(&e)))?;
        let had: i32 = tx
            .query_one("SELECT number FROM loft_cell WHERE id = 1", &[])
            .await
            .map_err(|e| pg(chain(&e)))?
            .get(0);
        if had != want {
            return Err(format!(
                "this database is cell {had}, not cell {number}: give the database URLs in \
                 the order they were first given"
            ));
        }
        let base = i64::from(number - 1) << CELL_ID_BITS;
        let end = i64::from(number) << CELL_ID_BITS;
        for (table, column) in RANGED {
            let outside: i64 = tx
                .query_one(
                    &format!("SELECT count(*) FROM {table} WHERE {column} < $1 OR {column} >= $2"),
                    &[&base, &end],
                )
                .await
                .map_err(|e| pg(chain(&e)))?
                .get(0);
            if outside > 0 && (*table == "queues" || *table == "topics") {
                return Err(format!(
                    "this database holds {outside} {table} outside cell {number}'s id range: \
                     a database that served alone can only be cell 1"
                ));
            }
            let seq: String = tx
                .query_one("SELECT pg_get_serial_sequence($1, $2)", &[table, column])
                .await
                .map_err(|e| pg(chain(&e)))?
                .get(0);
            // `setval(.., false)`: the next value is `base` itself.
            tx.execute(
                &format!(
                    "SELECT setval($1::text::regclass, $2, false) \
                     WHERE (SELECT CASE WHEN is_called THEN last_value + 1 ELSE last_value END \
                            FROM {seq}) < $2"
                ),
                &[&seq, &base],
            )
            .await
            .map_err(|e| pg(chain(&e)))?;
        }
        tx.commit().await.map_err(|e| pg(chain(&e)))?;
        let _ = self.cell_ids.set(base..end);
        self.health.arm(number);
        Ok(())
    }

    /// Every catalog row: (kind, store key, cell number).
    ///
    /// Errors: `InternalError` when the database fails; `ServiceUnavailable` when the
    /// cell is down ([`super::health`]).
    pub(crate) async fn catalog_rows(&self) -> Result<Vec<(String, String, u32)>> {
        run!(self, |c| async {
            let rows = c
                .query("SELECT kind, name, cell FROM loft_cell_catalog", &[])
                .await?;
            Ok::<_, Failure>(
                rows.iter()
                    .map(|r| (r.get(0), r.get(1), r.get::<_, i32>(2) as u32))
                    .collect(),
            )
        })
    }

    /// The cell of `kind` `name` in the catalog, if it has one.
    ///
    /// Errors: as [`PgStore::catalog_rows`].
    pub(crate) async fn catalog_get(&self, kind: &str, name: &str) -> Result<Option<u32>> {
        run!(self, |c| async {
            let row = c
                .query_opt(
                    "SELECT cell FROM loft_cell_catalog WHERE kind = $1 AND name = $2",
                    &[&kind, &name],
                )
                .await?;
            Ok::<_, Failure>(row.map(|r| r.get::<_, i32>(0) as u32))
        })
    }

    /// Places `kind` `name` on cell `cell` unless the catalog has it already; returns the
    /// cell it has now (of two nodes placing one name at once, one row wins).
    ///
    /// Errors: as [`PgStore::catalog_rows`].
    pub(crate) async fn catalog_place(&self, kind: &str, name: &str, cell: u32) -> Result<u32> {
        let cell = cell as i32;
        run!(self, |c| async {
            c.execute(
                "INSERT INTO loft_cell_catalog (kind, name, cell) VALUES ($1, $2, $3) \
                 ON CONFLICT (kind, name) DO NOTHING",
                &[&kind, &name, &cell],
            )
            .await?;
            let row = c
                .query_one(
                    "SELECT cell FROM loft_cell_catalog WHERE kind = $1 AND name = $2",
                    &[&kind, &name],
                )
                .await?;
            Ok::<_, Failure>(row.get::<_, i32>(0) as u32)
        })
    }

    /// Places `kind` `name` unless the catalog has it already, on the cell among
    /// `candidates` (cell numbers, the live ones) with the fewest catalog rows of `kind`
    /// (ties to the lowest number); returns the cell the name has now. The choice and its
    /// row are one transaction under an advisory lock, so creates placed at once, by this
    /// node or by others, each count the ones before them.
    ///
    /// Errors: as [`PgStore::catalog_rows`]; `InternalError` when `candidates` is empty.
    pub(crate) async fn catalog_place_least(
        &self,
        kind: &str,
        name: &str,
        candidates: &[u32],
    ) -> Result<u32> {
        if candidates.is_empty() {
            return Err(Error::internal(format!(
                "cells: no cell is up to place {name} in"
            )));
        }
        let candidates: Vec<i32> = candidates.iter().map(|&n| n as i32).collect();
        run_tx!(self, |tx| async {
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&CATALOG_PLACE_LOCK])
                .await?;
            tx.execute(
                "INSERT INTO loft_cell_catalog (kind, name, cell) \
                 SELECT $1, $2, c FROM unnest($3::int4[]) AS c \
                 ORDER BY (SELECT count(*) FROM loft_cell_catalog \
                           WHERE kind = $1 AND cell = c), c \
                 LIMIT 1 \
                 ON CONFLICT (kind, name) DO NOTHING",
                &[&kind, &name, &candidates],
            )
            .await?;
            let row = tx
                .query_one(
                    "SELECT cell FROM loft_cell_catalog WHERE kind = $1 AND name = $2",
                    &[&kind, &name],
                )
                .await?;
            Ok::<_, Failure>(row.get::<_, i32>(0) as u32)
        })
    }

    /// Gives every queue and topic of this database that the catalog lacks a row in cell
    /// 1 (a database that served alone before it became cell 1), so they are found by
    /// name and counted when placing.
    ///
    /// Errors: as [`PgStore::catalog_rows`].
    pub(crate) async fn catalog_adopt(&self) -> Result<()> {
        run!(self, |c| async {
            c.batch_execute(
                "INSERT INTO loft_cell_catalog (kind, name, cell) \
                 SELECT 'q', name, 1 FROM queues ON CONFLICT (kind, name) DO NOTHING; \
                 INSERT INTO loft_cell_catalog (kind, name, cell) \
                 SELECT 't', name, 1 FROM topics ON CONFLICT (kind, name) DO NOTHING",
            )
            .await?;
            Ok::<_, Failure>(())
        })
    }

    /// Removes the catalog rows of `names` (kind, store key).
    ///
    /// Errors: as [`PgStore::catalog_rows`].
    pub(crate) async fn catalog_remove(&self, names: &[(String, String)]) -> Result<()> {
        run!(self, |c| async {
            for (kind, name) in names {
                c.execute(
                    "DELETE FROM loft_cell_catalog WHERE kind = $1 AND name = $2",
                    &[kind, name],
                )
                .await?;
            }
            Ok::<_, Failure>(())
        })
    }

    /// How many messages the database holds, whatever their state (for `loft cells
    /// status`).
    ///
    /// Errors: as [`PgStore::catalog_rows`].
    pub async fn count_messages(&self) -> Result<u64> {
        run!(self, |c| async {
            let row = c.query_one("SELECT count(*) FROM messages", &[]).await?;
            Ok::<_, Failure>(row.get::<_, i64>(0).max(0) as u64)
        })
    }
}
