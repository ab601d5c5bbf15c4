//! The report: one JSON object (`--json`) or a table for people.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde::Serialize;

use crate::stats::{CallStats, LatencySummary};

/// Everything one run measured. Times are in seconds unless the name says `_ms`.
#[derive(Debug, Serialize)]
pub struct Report {
    /// Scenario name, as on the command line.
    pub scenario: &'static str,
    /// `--endpoint` as given.
    pub endpoint: String,
    /// The queue the run used.
    pub queue_url: String,
    /// Connections used.
    pub connections: usize,
    /// Body size of every message sent, in bytes.
    pub message_size_bytes: usize,
    /// `--fifo-groups`: the message groups of a FIFO queue's sends.
    pub fifo_groups: Option<u32>,
    /// Entries per `SendMessageBatch`, for the scenarios that batch.
    pub batch_size: Option<usize>,
    /// `--messages` (or its scenario default).
    pub messages_requested: u64,
    /// `messages` when every message was moved, `duration-limit` when the cap cut the
    /// run short.
    pub stopped_by: &'static str,
    /// From the start of the measured phase to the last call that moved messages, s.
    pub elapsed_seconds: f64,
    /// Messages moved in the measured phase: sent for send and send-batch, distinct
    /// messages received for the others.
    pub messages: u64,
    /// `messages / elapsed_seconds`.
    pub messages_per_second: f64,
    /// Messages acknowledged by the server in the measured phase.
    pub sent: u64,
    /// Distinct messages received in the measured phase.
    pub received: u64,
    /// Distinct messages deleted, for the scenarios that consume in batches.
    pub deleted: Option<u64>,
    /// Failed calls plus failed batch entries plus lost or unexpected deliveries.
    pub errors: u64,
    /// Receipts of a MessageId already received and not yet deleted (the visibility
    /// timeout outlasts the run, so each is a duplicate delivery).
    pub duplicates: Option<u64>,
    /// Receipts of a MessageId already deleted.
    pub redelivered_after_delete: Option<u64>,
    /// Errors counted by kind.
    pub error_kinds: BTreeMap<String, u64>,
    /// The first failed call of each kind, as text.
    pub error_examples: BTreeMap<String, String>,
    /// Per-operation call counts and latencies.
    pub calls: Vec<CallStats>,
    /// Delivery latency (produce-consume, long-poll, function), ms.
    pub delivery_latency: Option<LatencySummary>,
    /// What the delivery latency is measured from; it ends at the answer of the receive
    /// that got the message, or (function) at the invocation that carried it.
    pub delivery_latency_from: Option<&'static str>,
    /// The unmeasured preload of receive-delete.
    pub preload: Option<PreloadStats>,
    /// The server process, with `--server-pid`.
    pub server: Option<ServerStats>,
    /// CPU time (user + system) the bench itself spent in the measured phase, s: on
    /// a small machine it competes with the server for the same cores.
    pub bench_cpu_seconds: Option<f64>,
    /// The `fair` scenario's dwell time per tenant.
    pub fair: Option<crate::fair::FairReport>,
}

/// The preload phase of receive-delete.
#[derive(Debug, Serialize)]
pub struct PreloadStats {
    /// Messages the server acknowledged.
    pub messages: u64,
    /// Wall time, s.
    pub seconds: f64,
    /// Messages per second.
    pub messages_per_second: f64,
    /// Failed calls and entries.
    pub errors: u64,
}

/// The server process during the measured phase.
#[derive(Debug, Serialize)]
pub struct ServerStats {
    /// Its pid.
    pub pid: u32,
    /// Resident set size (VmRSS) at the end, KiB.
    pub rss_kib: u64,
    /// Largest resident set size sampled (about once a second), KiB.
    pub rss_max_kib: u64,
    /// User + system CPU time spent during the measured phase, s.
    pub cpu_seconds: Option<f64>,
    /// `messages / cpu_seconds`.
    pub messages_per_cpu_second: Option<f64>,
}

fn opt(v: Option<u64>) -> String {
    v.map_or_else(|| "-".to_string(), |n| n.to_string())
}

impl Report {
    /// The report as an aligned text table.
    pub fn table(&self) -> String {
        let mut t = String::new();
        let batch = self
            .batch_size
            .map(|b| format!(", batches of {b}"))
            .unwrap_or_default();
        let _ = writeln!(
            t,
            "loft bench {}: {} connections, {} messages of {} B{batch}",
            self.scenario, self.connections, self.messages_requested, self.message_size_bytes
        );
        let _ = writeln!(t, "  endpoint     {}", self.endpoint);
        let _ = writeln!(t, "  queue        {}", self.queue_url);
        if let Some(g) = self.fifo_groups {
            let _ = writeln!(t, "  FIFO         {g} message groups, round robin");
        }
        if let Some(p) = &self.preload {
            let _ = writeln!(
                t,
                "  preload      {} messages in {:.3} s ({:.1} msgs/s), {} errors",
                p.messages, p.seconds, p.messages_per_second, p.errors
            );
        }
        let _ = writeln!(
            t,
            "  throughput   {:.1} msgs/s ({} messages in {:.3} s; stopped by {})",
            self.messages_per_second, self.messages, self.elapsed_seconds, self.stopped_by
        );
        let _ = writeln!(
            t,
            "  messages     sent {}, received {}, deleted {}",
            self.sent,
            self.received,
            opt(self.deleted)
        );
        let _ = writeln!(t, "  errors       {}", self.errors);
        for (kind, n) in &self.error_kinds {
            let example = self
                .error_examples
                .get(kind)
                .map(|e| format!(": {e}"))
                .unwrap_or_default();
            let _ = writeln!(t, "    {n:>8} {kind}{example}");
        }
        if self.duplicates.is_some() {
            let _ = writeln!(
                t,
                "  duplicates   {} (received again after deletion: {})",
                opt(self.duplicates),
                opt(self.redelivered_after_delete)
            );
        }
        let _ = writeln!(
            t,
            "\n  {:<22} {:>8} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9}",
            "latency per call",
            "calls",
            "errors",
            "mean ms",
            "p50 ms",
            "p99 ms",
            "p99.9 ms",
            "max ms"
        );
        for c in &self.calls {
            let _ = write!(t, "  {:<22} {:>8} {:>7}", c.op, c.calls, c.errors);
            t.push_str(&latency_cells(c.latency.as_ref()));
        }
        if let Some(from) = self.delivery_latency_from {
            let label = format!(
                "delivery ({})",
                if from.contains("start") {
                    "e2e"
                } else {
                    "wake"
                }
            );
            let n = self.delivery_latency.as_ref().map_or(0, |l| l.count);
            let _ = write!(t, "  {label:<22} {n:>8} {:>7}", "");
            t.push_str(&latency_cells(self.delivery_latency.as_ref()));
            let to = if self.scenario == "function" {
                "the function's invocation carrying it"
            } else {
                "the answer of the receive that got it"
            };
            let _ = writeln!(t, "  (delivery: from the {from} to {to})");
        }
        if let Some(f) = &self.fair {
            let _ = writeln!(
                t,
                "\n  {:<22} {:>8} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9}",
                if f.grouped {
                    "dwell, MessageGroupId"
                } else {
                    "dwell, no group (base)"
                },
                "messages",
                "",
                "mean ms",
                "p50 ms",
                "p99 ms",
                "p99.9 ms",
                "max ms"
            );
            for d in &f.tenants {
                let _ = write!(t, "  {:<22} {:>8} {:>7}", d.tenant, d.messages, "");
                t.push_str(&latency_cells(d.dwell.as_ref()));
            }
            let _ = writeln!(
                t,
                "  (dwell: from the start of the send to the answer of the receive; {} quiet tenants, one message each every {} ms)",
                f.quiet_tenants, f.quiet_interval_ms
            );
        }
        if let Some(c) = self.bench_cpu_seconds {
            let _ = writeln!(t, "\n  bench CPU    {c:.2} s (the load generator itself)");
        }
        if let Some(s) = &self.server {
            let mib = |k: u64| k as f64 / 1024.0;
            let cpu = s
                .cpu_seconds
                .map_or_else(|| "CPU unknown".to_string(), |c| format!("CPU {c:.2} s"));
            let per_cpu = s
                .messages_per_cpu_second
                .map(|m| format!(", {m:.0} msgs per server CPU second"))
                .unwrap_or_default();
            let _ = writeln!(
                t,
                "  server pid {}: RSS {:.1} MiB (max seen {:.1} MiB), {cpu}{per_cpu}",
                s.pid,
                mib(s.rss_kib),
                mib(s.rss_max_kib)
            );
        }
        t
    }
}

fn latency_cells(l: Option<&LatencySummary>) -> String {
    match l {
        Some(l) => format!(
            " {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3}\n",
            l.mean_ms, l.p50_ms, l.p99_ms, l.p999_ms, l.max_ms
        ),
        None => format!(" {:>9} {:>9} {:>9} {:>9} {:>9}\n", "-", "-", "-", "-", "-"),
    }
}
