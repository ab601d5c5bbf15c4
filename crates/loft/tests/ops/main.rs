//! Operator features against the real `loft` binary: the `--config` file, `/metrics`,
//! `/ready`, request ids and logs, the admin commands (signing their requests when the
//! server has credentials), and the web console in headless Chromium (signing in with HTTP
//! Basic when the server has credentials), and a page from another origin calling Loft with
//! the browser build of the AWS SDK for JavaScript (CORS).

mod harness;
#[path = "../support/loft.rs"]
mod loft;
#[path = "../support/skips.rs"]
mod skips;
#[path = "../support/wait.rs"]
mod wait;

mod auto_create;
mod browser_sdk;
mod cli;
mod cli_auth;
mod config;
mod console;
mod deploy;
mod metrics;
mod observe;
mod reset;
mod traces;
