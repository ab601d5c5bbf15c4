//! The server's memory and CPU, read from `/proc/<pid>` (Linux only) for
//! `--server-pid`.

use std::sync::atomic::{AtomicU64, Ordering};

/// Resident set size in KiB from the text of `/proc/<pid>/status` (its `VmRSS:` line).
pub fn parse_vm_rss_kib(status: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
}

/// User plus system CPU time in clock ticks from the text of `/proc/<pid>/stat`
/// (fields 14 and 15, counted after the parenthesised command name, which may itself
/// hold spaces and parentheses).
pub fn parse_stat_ticks(stat: &str) -> Option<u64> {
    let after_comm = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after_comm.split_whitespace().collect();
    // fields[0] is field 3 (state), so field N is fields[N - 3].
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

fn ticks_per_second() -> f64 {
    // SAFETY: sysconf only reads a configuration value.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 {
        ticks as f64
    } else {
        100.0
    }
}

fn read_cpu_seconds(path: &str, ticks_per_second: f64) -> Result<f64, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?;
    let ticks = parse_stat_ticks(&text).ok_or_else(|| format!("cannot parse {path}"))?;
    Ok(ticks as f64 / ticks_per_second)
}

/// CPU seconds (user + system) this process has used, where `/proc` exists.
pub fn own_cpu_seconds() -> Option<f64> {
    read_cpu_seconds("/proc/self/stat", ticks_per_second()).ok()
}

/// Watches one server process.
#[derive(Debug)]
pub struct ServerWatch {
    pid: u32,
    ticks_per_second: f64,
    rss_max_kib: AtomicU64,
}

impl ServerWatch {
    /// Checks that `/proc/<pid>` is readable.
    pub fn new(pid: u32) -> Result<ServerWatch, String> {
        let watch = ServerWatch {
            pid,
            ticks_per_second: ticks_per_second(),
            rss_max_kib: AtomicU64::new(0),
        };
        watch.cpu_seconds()?;
        watch.sample_rss()?;
        Ok(watch)
    }

    /// CPU seconds (user + system) the process has used since it started.
    pub fn cpu_seconds(&self) -> Result<f64, String> {
        read_cpu_seconds(&format!("/proc/{}/stat", self.pid), self.ticks_per_second)
            .map_err(|e| format!("--server-pid {}: {e}", self.pid))
    }

    /// The current resident set size in KiB; also kept as the largest seen.
    pub fn sample_rss(&self) -> Result<u64, String> {
        let path = format!("/proc/{}/status", self.pid);
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("--server-pid {}: cannot read {path}: {e}", self.pid))?;
        let kib = parse_vm_rss_kib(&text)
            .ok_or_else(|| format!("--server-pid {}: no VmRSS in {path}", self.pid))?;
        self.rss_max_kib.fetch_max(kib, Ordering::Relaxed);
        Ok(kib)
    }

    /// The watched process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The largest resident set size sampled so far, in KiB.
    pub fn rss_max_kib(&self) -> u64 {
        self.rss_max_kib.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vm_rss() {
        let status = "Name:\tloft\nVmPeak:\t  200000 kB\nVmRSS:\t   12345 kB\nThreads:\t3\n";
        assert_eq!(parse_vm_rss_kib(status), Some(12345));
        assert_eq!(parse_vm_rss_kib("Name:\tzombie\n"), None);
    }

    #[test]
    fn stat_ticks() {
        let stat = "4242 (my (odd) srv) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 75 0 0 20 0 3 0 100 1000000 500 18446744073709551615";
        assert_eq!(parse_stat_ticks(stat), Some(325));
        assert_eq!(parse_stat_ticks("garbage"), None);
    }

    #[test]
    fn reads_own_process() {
        let w = ServerWatch::new(std::process::id()).unwrap();
        assert!(w.cpu_seconds().unwrap() >= 0.0);
        assert!(w.rss_max_kib() > 0);
        assert!(own_cpu_seconds().is_some());
    }
}
