//! loft-store's integration tests, one binary (each test binary links the crate and its
//! dependencies again): the store and the service over it, on SQLite and, when
//! `LOFT_TEST_DATABASE_URL` names a database, PostgreSQL (`scripts/with-postgres.sh` starts
//! one; with `LOFT_TEST_REQUIRE_POSTGRES=1` PostgreSQL cases fail instead of skipping).
//!
//! - [`conformance`]: one set of cases generic over the `Store`, run on both engines and on
//!   two PostgreSQL cells.
//! - [`cells`]: placement, routing after a restart and receipt handles over two cells.
//! - [`cells_move`]: moving a queue between two cells, whole, once, across killed runs.
//! - [`fifo_scenarios`], [`redrive_self`], [`receipts`]: SQS rules at the service, one
//!   test each, on a `ManualClock`.
//! - [`fifo_property`], [`fifo_topic_property`], [`sns_state_property`]: property tests
//!   against models of AWS's rules, with several nodes and restarts.
//!
//! One suite alone: `cargo test -p loft-store --test store conformance::` (a module's
//! tests are named `MODULE::...`).

#[path = "../../../loft/tests/support/skips.rs"]
mod skips;

mod cells;
mod cells_move;
mod conformance;
mod fifo_property;
mod fifo_scenarios;
mod fifo_topic_property;
mod receipts;
mod redrive_self;
mod sns_state_property;
