//! Loft's HTTP side.
//!
//! - [`routes`]: the one router every listener serves, and [`serve`] to run it.
//! - [`native`]: the seeds' REST/JSON API (`/queues`, `/topics`, `/health`).
//! - [`reply`]: the reply of every non-AWS route (`{"error": message}`), unknown routes.
//! - [`state`]: the router's state (the service and the authentication policy).
//! - [`aws`]: the AWS protocols (SQS JSON and Query; SNS Query).
//! - [`cors`]: cross-origin requests from browsers (off unless origins are allowed).
//! - [`browser`]: requests from web pages Loft did not invite (cross-site request
//!   forgery, DNS rebinding), refused before any route.
//! - [`auth`]: credentials and where SigV4 signatures are required.
//! - [`permissions`]: the access table of every route and [`permissions::Routes`], the only
//!   way to add a route.
//! - [`sigv4`]: Signature Version 4 verification as pure functions.
//! - [`listen`]: the accept loop: connection limits (all and per address), header size
//!   limit, TLS, graceful shutdown; it serves any [`listen::Serve`].
//! - [`deadline`]: one connection's clocks: keep-alive, request (head and body, with a
//!   minimum body rate) and unread-response timeouts.
//! - [`body`]: request bodies read under their protocol's limit and the global budget of
//!   body bytes in flight.
//! - [`tls`]: listeners' certificate and key (PEM files) as a rustls configuration.
//! - [`inspect`]: Loft's inspection routes (recorded messages, signing certificate).
//! - [`delivery`]: workers that POST topic deliveries to HTTP endpoints and invoke the
//!   functions of `lambda` subscriptions.
//! - [`mappings`]: SQS event source mapping workers (leases, batches, invocations).
//! - [`invoke`]: one call of a configured function (Invoke API or plain HTTP handler).
//! - [`sns_signing`]: the key, certificate and signatures of SNS HTTP/S messages.
//! - [`observe`]: the middleware around every route: request ids, access logs, request
//!   metrics.
//! - [`metrics`]: `GET /metrics` (Prometheus text format) and `GET /ready`.
//! - [`console`]: the web console at `/console` and its JSON routes under `/_loft/`.
//! - [`localstack`]: LocalStack's `/_localstack/health`, for `--localstack-compat`.
//!
//! Adapters translate wire formats and nothing else; every rule lives in
//! [`loft_core::Service`].

pub mod auth;
pub mod aws;
pub mod body;
pub mod browser;
pub mod client_link;
pub mod console;
pub mod cors;
pub mod deadline;
pub mod delivery;
pub mod http_version;
pub mod inspect;
pub mod invoke;
pub mod listen;
pub mod localstack;
pub mod mappings;
pub mod metrics;
pub mod native;
pub mod observe;
pub mod permissions;
pub mod proxy;
pub mod reply;
pub mod routes;
pub mod sigv4;
pub mod sns_signing;
pub mod state;
pub mod tls;

pub use routes::{router, router_with, serve, App};
