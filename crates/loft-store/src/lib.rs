//! Storage engines behind [`loft_core::store::Store`].
//!
//! - [`sqlite`]: the embedded default. One writer thread owns the connection and commits many
//!   requests per transaction (group commit); WAL mode; schema migrations recorded in
//!   `PRAGMA user_version`.

pub mod sqlite;

pub use sqlite::{Durability, SqliteStore};
