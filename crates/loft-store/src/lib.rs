//! Storage engines behind [`loft_core::store::Store`].
//!
//! - [`sqlite`]: the embedded default. One writer thread owns the connection and commits many
//!   requests per transaction (group commit); WAL mode; schema migrations recorded in
//!   `PRAGMA user_version`.
//! - [`postgres`]: several Loft nodes on one PostgreSQL database. A connection pool,
//!   migrations under an advisory lock, `FOR UPDATE SKIP LOCKED` claims, per-queue advisory
//!   locks for FIFO groups, and LISTEN/NOTIFY wake-ups between nodes.
//! - [`cells`]: queues and topics spread over several PostgreSQL databases (cells), each a
//!   [`PgStore`], with a catalog in the first (preview).
//!
//! Both pass one conformance suite, `tests/store/conformance.rs`, and decide a FIFO receive with
//! one walk (`fifo`), each reading its rows in its own SQL.

pub mod cells;
mod fifo;
pub mod postgres;
mod replay;
pub mod seal;
pub mod sqlite;
mod visibility;

pub use cells::{CellStore, MoveOutcome, MoveStatus, MoveStep, MOVE_LEASE_MS};
pub use postgres::{PgOptions, PgStore};
pub use sqlite::{Durability, SqliteStore};
