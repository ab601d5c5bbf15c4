//! Structured logs on stderr with `tracing`: human-readable text (the default) or one JSON
//! object per line (`--log-format json`, env `LOFT_LOG_FORMAT`). The filter comes from
//! `LOFT_LOG` (`tracing_subscriber` directives, default [`DEFAULT_FILTER`]). Lines written while a
//! request is served carry its `request_id` (the `request` span; see
//! `loft_server::observe`).
//!
//! Lines are written to stderr by the thread that logs, so a line is there as soon as
//! the event that logged it has happened. Colours only when stderr is a terminal and
//! `NO_COLOR` is unset.
//!
//! Traces: when `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is
//! set, the `tracing` spans at INFO and above (each request's `request` span and what runs
//! inside it) are also exported as OpenTelemetry spans over OTLP/HTTP with JSON bodies to
//! `ENDPOINT/v1/traces`, service name `loft` (`OTEL_SERVICE_NAME` overrides it), by the
//! SDK's batch span processor on its own thread (`OTEL_BSP_*` tune it). An incoming W3C
//! `traceparent` header makes the request's span a child of the caller's span
//! (`loft_server::observe`). `LOFT_LOG` filters the log lines only. Without the variable
//! nothing of this runs.

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

/// The OpenTelemetry tracer provider while traces are exported: dropping it flushes the
/// spans not yet sent and stops the exporter (keep it until the process ends).
pub struct Telemetry(opentelemetry_sdk::trace::SdkTracerProvider);

impl Drop for Telemetry {
    fn drop(&mut self) {
        if let Err(e) = self.0.shutdown() {
            eprintln!("loft: OpenTelemetry traces: {e}");
        }
    }
}

/// Whether an OTLP traces endpoint is configured (module doc).
fn otlp_configured() -> bool {
    [
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    ]
    .iter()
    .any(|v| std::env::var_os(v).is_some_and(|s| !s.is_empty()))
}

/// The OTLP/HTTP-JSON tracer provider (module doc), or why it cannot be made.
fn tracer_provider() -> Result<opentelemetry_sdk::trace::SdkTracerProvider, String> {
    use opentelemetry_otlp::WithExportConfig as _;
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpJson)
        .build()
        .map_err(|e| e.to_string())?;
    let service = std::env::var("OTEL_SERVICE_NAME")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "loft".to_owned());
    Ok(opentelemetry_sdk::trace::SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(
            opentelemetry_sdk::Resource::builder()
                .with_service_name(service)
                .build(),
        )
        .build())
}

/// Installs the global subscriber, with the OpenTelemetry layer when an OTLP endpoint is
/// configured (module doc). Call once, before anything logs and outside any Tokio
/// runtime (the exporter's blocking HTTP client is made here). Returns the provider to
/// keep while the process runs, when traces are exported.
pub fn init(format: LogFormat) -> Option<Telemetry> {
    use std::io::IsTerminal;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    use tracing_subscriber::Layer as _;
    let filter = tracing_subscriber::EnvFilter::try_from_env("LOFT_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(DEFAULT_FILTER));
    let ansi = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let fmt = tracing_subscriber::fmt::layer()
        .with_ansi(ansi)
        .with_writer(std::io::stderr);
    let fmt = match format {
        LogFormat::Text => fmt.boxed(),
        LogFormat::Json => fmt
            .json()
            .with_current_span(true)
            .with_span_list(true)
            .boxed(),
    }
    .with_filter(filter);
    let (otel, telemetry, failure) = if otlp_configured() {
        match tracer_provider() {
            Ok(provider) => {
                use opentelemetry::trace::TracerProvider as _;
                opentelemetry::global::set_text_map_propagator(
                    opentelemetry_sdk::propagation::TraceContextPropagator::new(),
                );
                let layer = tracing_opentelemetry::layer()
                    .with_tracer(provider.tracer("loft"))
                    .with_filter(tracing_subscriber::filter::LevelFilter::INFO);
                (Some(layer), Some(Telemetry(provider)), None)
            }
            Err(e) => (None, None, Some(e)),
        }
    } else {
        (None, None, None)
    };
    tracing_subscriber::registry().with(fmt).with(otel).init();
    match (&telemetry, failure) {
        (Some(_), _) => tracing::info!("OpenTelemetry traces exported over OTLP/HTTP (JSON)"),
        (None, Some(e)) => {
            tracing::warn!(error = %e, "OpenTelemetry traces are off: the OTLP exporter cannot be made")
        }
        (None, None) => {}
    }
    telemetry
}
