//! Operator features against the real `loft` binary: the `--config` file, `/metrics`,
//! `/ready`, request ids and logs, the admin commands (signing their requests when the
//! server has credentials), and the web console in headless Chromium (signing in with HTTP
//! Basic when the server has credentials).

mod harness;
#[path = "../support/skips.rs"]
mod skips;

mod cli;
mod cli_auth;
mod config;
mod console;
mod metrics;
mod observe;
