//! Structured logs on stderr with `tracing`: human-readable text (the default) or one JSON
//! object per line (`--log-format json`, env `LOFT_LOG_FORMAT`). The filter comes from
//! `LOFT_LOG` (`tracing_subscriber` directives, default [`DEFAULT_FILTER`]). Lines written while a
//! request is served carry its `request_id` (the `request` span; see
//! `loft_server::observe`).
//!
//! Lines are written to stderr by the thread that logs, so a line is there as soon as
//! the event that logged it has happened. Colours only when stderr is a terminal and
//! `NO_COLOR` is unset.

use clap::ValueEnum;

/// The log filter when `LOFT_LOG` is unset: INFO and above, without the per-request
/// access lines (`LOFT_LOG=info` adds them; see `loft_server::observe`).
pub const DEFAULT_FILTER: &str = "info,loft::access=warn";

/// How log lines are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// `2024-01-01T00:00:00Z  INFO request{request_id=...}: loft::access: request ...`.
    #[default]
    Text,
    /// `{"timestamp":...,"level":"INFO","fields":{...},"target":...,"span":{...},"spans":[...]}`.
    Json,
}

/// Installs the global subscriber. Call once, before anything logs.
pub fn init(format: LogFormat) {
    use std::io::IsTerminal;
    let filter = tracing_subscriber::EnvFilter::try_from_env("LOFT_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(DEFAULT_FILTER));
    let ansi = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder
            .json()
            .with_current_span(true)
            .with_span_list(true)
            .init(),
    }
}
