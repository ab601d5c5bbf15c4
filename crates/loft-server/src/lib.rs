//! Loft's HTTP side.
//!
//! - [`routes`]: the one router every listener serves, and [`serve`] to run it.
//! - [`native`]: the seeds' REST/JSON API (`/queues`, `/topics`, `/health`).
//! - [`aws`]: the AWS protocols (SQS JSON and Query; SNS Query).
//! - [`cors`]: cross-origin requests from browsers (off unless origins are allowed).
//! - [`auth`]: credentials and where SigV4 signatures are required.
//! - [`sigv4`]: Signature Version 4 verification as pure functions.
//! - [`listen`]: the accept loop: connection limit, header size limit, TLS, graceful
//!   shutdown.
//! - [`tls`]: listeners' certificate and key (PEM files) as a rustls configuration.
//! - [`inspect`]: Loft's inspection routes (recorded messages, signing certificate).
//! - [`delivery`]: workers that POST topic deliveries to HTTP endpoints.
//! - [`sns_signing`]: the key, certificate and signatures of SNS HTTP/S messages.
//! - [`observe`]: the middleware around every route: request ids, access logs, request
//!   metrics.
//! - [`metrics`]: `GET /metrics` (Prometheus text format) and `GET /ready`.
//! - [`console`]: the web console at `/console` and its JSON routes under `/_loft/`.
//!
//! Adapters translate wire formats and nothing else; every rule lives in
//! [`loft_core::Service`].

pub mod auth;
pub mod aws;
pub mod console;
pub mod cors;
pub mod delivery;
pub mod inspect;
pub mod listen;
pub mod metrics;
pub mod native;
pub mod observe;
pub mod permissions;
pub mod routes;
pub mod sigv4;
pub mod sns_signing;
pub mod tls;

pub use routes::{router, router_with, serve};
