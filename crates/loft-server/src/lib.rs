//! Loft's HTTP side.
//!
//! - [`routes`]: the one router every listener serves, and [`serve`] to run it.
//! - [`native`]: the seeds' REST/JSON API (`/queues`, `/topics`, `/health`).
//! - [`delivery`]: workers that POST topic deliveries to HTTP endpoints.
//!
//! Adapters translate wire formats and nothing else; every rule lives in
//! [`loft_core::Service`].

pub mod delivery;
pub mod native;
pub mod routes;

pub use routes::{router, serve};
