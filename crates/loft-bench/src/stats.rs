//! Latency samples, percentiles and the live counters behind the progress line.
//!
//! Latencies are kept as whole microseconds in plain vectors and sorted once at the
//! end: exact percentiles, and at the bench's scale (calls are bounded by `--messages`
//! and `--duration-limit`) a few megabytes at most.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::client::CallError;

/// The value at percentile `pct` (0–100] of `sorted` (ascending), by the nearest-rank
/// method: the smallest sample such that at least `pct`% of the samples are ≤ it.
/// `None` for no samples.
pub fn percentile(sorted: &[u32], pct: f64) -> Option<u32> {
    if sorted.is_empty() {
        return None;
    }
    // The tolerance keeps float noise (99.9 / 100 * 1000 = 999.0000000000001) from
    // pushing the rank one sample up.
    let rank = (pct / 100.0 * sorted.len() as f64 - 1e-9).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

/// Summary of a set of latencies. Every time is in milliseconds, at microsecond
/// resolution.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LatencySummary {
    /// Number of samples.
    pub count: u64,
    /// Arithmetic mean, ms.
    pub mean_ms: f64,
    /// Median, ms.
    pub p50_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
    /// 99.9th percentile, ms.
    pub p999_ms: f64,
    /// Largest sample, ms.
    pub max_ms: f64,
}

impl LatencySummary {
    /// Summarises samples given in microseconds; `None` when there are none.
    pub fn from_micros(mut micros: Vec<u32>) -> Option<LatencySummary> {
        if micros.is_empty() {
            return None;
        }
        micros.sort_unstable();
        let ms = |p: f64| f64::from(percentile(&micros, p).unwrap_or(0)) / 1000.0;
        let sum: u64 = micros.iter().map(|&m| u64::from(m)).sum();
        Some(LatencySummary {
            count: micros.len() as u64,
            mean_ms: round3(sum as f64 / micros.len() as f64 / 1000.0),
            p50_ms: ms(50.0),
            p99_ms: ms(99.0),
            p999_ms: ms(99.9),
            max_ms: f64::from(*micros.last().unwrap_or(&0)) / 1000.0,
        })
    }
}

/// Rounds to 3 decimals, to keep reports readable.
pub fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// A duration in whole microseconds, saturating at `u32::MAX` (about 71 minutes).
pub fn micros(d: Duration) -> u32 {
    u32::try_from(d.as_micros()).unwrap_or(u32::MAX)
}

/// Counters shared by all workers, read by the progress line once a second.
#[derive(Debug, Default)]
pub struct Progress {
    /// Messages the server acknowledged as sent.
    pub sent: AtomicU64,
    /// Distinct messages received.
    pub received: AtomicU64,
    /// Failed calls plus failed batch entries.
    pub errors: AtomicU64,
}

/// Per-operation results of one worker (or of all, once merged).
#[derive(Debug, Default)]
struct OpRecord {
    ok_micros: Vec<u32>,
    failed: u64,
}

/// What a worker saw: latencies of its successful calls per operation, its errors
/// counted by kind, end-to-end delivery latencies, and when it last did useful work.
#[derive(Debug)]
pub struct Recorder {
    progress: Arc<Progress>,
    ops: BTreeMap<&'static str, OpRecord>,
    /// Errors by kind (service error code, `transport`, ...): failed calls and failed
    /// batch entries.
    pub error_kinds: BTreeMap<String, u64>,
    /// The first failed call of each error kind, as text.
    pub error_examples: BTreeMap<String, String>,
    /// Delivery latencies in µs (scenario-specific; see the report).
    pub delivery_micros: Vec<u32>,
    /// When this worker last completed a call that moved messages.
    pub last_work: Option<Instant>,
}

/// One row of the per-call table.
#[derive(Debug, Clone, Serialize)]
pub struct CallStats {
    /// Operation name, e.g. `SendMessage`.
    pub op: &'static str,
    /// Calls made, failed ones included.
    pub calls: u64,
    /// Calls that failed (non-2xx answer or transport error).
    pub errors: u64,
    /// Latency of the successful calls, from sending the request to reading the whole
    /// answer; `null` when none succeeded.
    pub latency: Option<LatencySummary>,
}

impl Recorder {
    /// An empty recorder that also bumps the shared `progress` error counter.
    pub fn new(progress: Arc<Progress>) -> Recorder {
        Recorder {
            progress,
            ops: BTreeMap::new(),
            error_kinds: BTreeMap::new(),
            error_examples: BTreeMap::new(),
            delivery_micros: Vec::new(),
            last_work: None,
        }
    }

    /// A successful call of `op` that took `took`.
    pub fn ok(&mut self, op: &'static str, took: Duration) {
        self.ops.entry(op).or_default().ok_micros.push(micros(took));
    }

    /// A failed call of `op`, counted under the error's kind; the first error of each
    /// kind is kept as an example.
    pub fn failed(&mut self, op: &'static str, err: &CallError) {
        self.ops.entry(op).or_default().failed += 1;
        let kind = err.kind();
        self.error_examples
            .entry(kind.clone())
            .or_insert_with(|| format!("{op}: {err}"));
        self.error(kind, 1);
    }

    /// `n` errors of `kind` that are not whole failed calls (failed batch entries,
    /// lost deliveries).
    pub fn error(&mut self, kind: String, n: u64) {
        *self.error_kinds.entry(kind).or_default() += n;
        self.progress.errors.fetch_add(n, Ordering::Relaxed);
    }

    /// The failed entries of an answered batch call: one error each, under its code.
    pub fn entries_failed(&mut self, failed: Vec<crate::sqs::BatchError>) {
        for f in failed {
            self.error(f.code, 1);
        }
    }

    /// Marks now as the last time this worker moved messages.
    pub fn worked(&mut self) {
        self.last_work = Some(Instant::now());
    }

    /// Folds `other` into `self`.
    pub fn merge(&mut self, other: Recorder) {
        for (op, rec) in other.ops {
            let mine = self.ops.entry(op).or_default();
            mine.ok_micros.extend(rec.ok_micros);
            mine.failed += rec.failed;
        }
        for (k, n) in other.error_kinds {
            *self.error_kinds.entry(k).or_default() += n;
        }
        for (k, example) in other.error_examples {
            self.error_examples.entry(k).or_insert(example);
        }
        self.delivery_micros.extend(other.delivery_micros);
        self.last_work = self.last_work.max(other.last_work);
    }

    /// Total errors of every kind.
    pub fn errors(&self) -> u64 {
        self.error_kinds.values().sum()
    }

    /// The per-call table, consuming the samples.
    pub fn call_stats(&mut self) -> Vec<CallStats> {
        std::mem::take(&mut self.ops)
            .into_iter()
            .map(|(op, rec)| CallStats {
                op,
                calls: rec.ok_micros.len() as u64 + rec.failed,
                errors: rec.failed,
                latency: LatencySummary::from_micros(rec.ok_micros),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        assert_eq!(percentile(&[], 50.0), None);
        assert_eq!(percentile(&[7], 50.0), Some(7));
        assert_eq!(percentile(&[7], 99.9), Some(7));
        let v: Vec<u32> = (1..=100).collect();
        assert_eq!(percentile(&v, 50.0), Some(50));
        assert_eq!(percentile(&v, 99.0), Some(99));
        assert_eq!(percentile(&v, 99.9), Some(100));
        assert_eq!(percentile(&v, 100.0), Some(100));
        assert_eq!(percentile(&v, 0.0), Some(1));
        let v: Vec<u32> = (1..=1000).collect();
        assert_eq!(percentile(&v, 99.9), Some(999));
        assert_eq!(percentile(&[1, 2, 3, 4], 50.0), Some(2));
        assert_eq!(percentile(&[1, 2, 3, 4], 51.0), Some(3));
    }

    #[test]
    fn summary_in_milliseconds() {
        let s = LatencySummary::from_micros(vec![3000, 1000, 2000, 4000]).unwrap();
        assert_eq!(s.count, 4);
        assert_eq!(s.p50_ms, 2.0);
        assert_eq!(s.p99_ms, 4.0);
        assert_eq!(s.max_ms, 4.0);
        assert_eq!(s.mean_ms, 2.5);
        assert!(LatencySummary::from_micros(Vec::new()).is_none());
    }

    #[test]
    fn merging_recorders() {
        let p = Arc::new(Progress::default());
        let mut a = Recorder::new(p.clone());
        a.ok("SendMessage", Duration::from_millis(1));
        a.failed("SendMessage", &CallError::Transport("refused".into()));
        let mut b = Recorder::new(p.clone());
        b.ok("SendMessage", Duration::from_millis(3));
        b.error("InvalidParameterValue".into(), 2);
        a.merge(b);
        assert_eq!(a.errors(), 3);
        assert_eq!(p.errors.load(Ordering::Relaxed), 3);
        let stats = a.call_stats();
        assert_eq!(stats.len(), 1);
        assert_eq!(stats[0].calls, 3);
        assert_eq!(stats[0].errors, 1);
        assert_eq!(stats[0].latency.as_ref().unwrap().count, 2);
    }
}
