//! Tests that need what a developer's machine may lack (a PostgreSQL database, headless
//! Chromium): there they skip, each with a note, and one test per test binary says how
//! many skipped and why on the terminal (`cargo test` captures the notes of passing
//! tests, so a skipped test would otherwise look like one that ran). In CI they must not
//! skip: `.ci/run` sets `LOFT_TEST_REQUIRE_POSTGRES=1` and `LOFT_TEST_REQUIRE_CHROMIUM=1`,
//! and then a test that would skip fails instead.
//!
//! Included by path (`#[path = ...] mod skips;`) into every test binary with such tests.

#![allow(dead_code)]

use std::io::Write as _;

/// Something a group of tests needs.
pub struct Need {
    /// Why it is missing ("LOFT_TEST_DATABASE_URL is unset"), or `None` when it is there.
    pub missing: Option<String>,
    /// The variable that turns a skip into a failure (`LOFT_TEST_REQUIRE_POSTGRES`).
    pub require_var: &'static str,
    /// How to run the tests ("run them under scripts/with-postgres.sh").
    pub how: &'static str,
}

impl Need {
    /// Whether `require_var` is `1`.
    pub fn required(&self) -> bool {
        std::env::var(self.require_var).is_ok_and(|v| v == "1")
    }

    /// Called by `test` when it cannot run: fails when the need is required, else prints
    /// a note (which `cargo test` shows only with `--nocapture`) and returns.
    pub fn skip(&self, test: &str) {
        let why = self.missing.as_deref().unwrap_or("it is missing");
        assert!(
            !self.required(),
            "{}=1 but {why}: {test} cannot run ({})",
            self.require_var,
            self.how
        );
        eprintln!("note: {why}; skipping {test} ({})", self.how);
    }

    /// The body of a binary's reporting test: when the need is missing, counts this
    /// binary's tests whose names start with one of `prefixes` (`--list`), writes one line
    /// straight to the terminal (past the test harness's capture), and fails when the
    /// need is required. Silent when the need is there.
    pub fn report(&self, what: &str, prefixes: &[&str]) {
        let Some(why) = &self.missing else { return };
        let n = count_tests(prefixes);
        let line = format!(
            "\nnote: {n} {what} of this test binary SKIPPED (they pass without running): \
             {why}; {}\n",
            self.how
        );
        let _ = std::io::stderr().write_all(line.as_bytes());
        assert!(
            !self.required(),
            "{}=1 but {why}: {n} {what} cannot run",
            self.require_var
        );
    }
}

/// How many tests of the running test binary have a name starting with one of `prefixes`,
/// not counting the reporting tests themselves (named `skipped_*`).
fn count_tests(prefixes: &[&str]) -> usize {
    let exe = std::env::current_exe().expect("the test binary's path");
    let out = std::process::Command::new(exe)
        .args(["--list", "--format", "terse"])
        .output()
        .expect("list the tests");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.strip_suffix(": test"))
        .filter(|name| prefixes.iter().any(|p| name.starts_with(p)))
        .filter(|name| {
            !name
                .rsplit("::")
                .next()
                .unwrap_or("")
                .starts_with("skipped_")
        })
        .count()
}

/// PostgreSQL: `LOFT_TEST_DATABASE_URL` names a database.
pub fn postgres() -> Need {
    let set = std::env::var("LOFT_TEST_DATABASE_URL").is_ok_and(|u| !u.is_empty());
    Need {
        missing: (!set).then(|| "LOFT_TEST_DATABASE_URL is unset".to_owned()),
        require_var: "LOFT_TEST_REQUIRE_POSTGRES",
        how: "scripts/with-postgres.sh runs them",
    }
}

/// Prometheus's `promtool` (Debian's `prometheus` package) on the `PATH`: it checks the
/// PromQL of `deploy/` and runs the alert rules' tests.
pub fn promtool() -> Need {
    let found = std::process::Command::new("promtool")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    Need {
        missing: (!found).then(|| "promtool is not installed".to_owned()),
        require_var: "LOFT_TEST_REQUIRE_PROMTOOL",
        how: "apt-get install prometheus provides it",
    }
}

/// Root (effective uid 0): the read-only database test switches the server to `nobody`.
pub fn root() -> Need {
    // The owner of /proc/self is the process's effective uid (proc(5)); read this way so
    // that every test crate including this file (loft-store's too) needs no libc.
    use std::os::unix::fs::MetadataExt;
    let root = std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0);
    Need {
        missing: (!root).then(|| "the tests do not run as root".to_owned()),
        require_var: "LOFT_TEST_REQUIRE_ROOT",
        how: "run them as root (CI does) to switch the server to nobody",
    }
}

/// The Python function hosts and clients (`missing` says which are not there):
/// `LOFT_REQUIRE_FUNCTION_HOSTS=1` (CI, which installs them) makes their absence a failure.
pub fn function_hosts(missing: Option<String>) -> Need {
    Need {
        missing,
        require_var: "LOFT_REQUIRE_FUNCTION_HOSTS",
        how: ".ci/run installs them with pip",
    }
}
