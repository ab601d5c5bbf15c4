//! The one place that starts a Loft server for the integration tests: [`TestLoft`], a
//! builder for `loft serve` (arguments, environment, storage engine, data directory,
//! log filter, stderr capture), and [`LoftProcess`], the running server (the URL it
//! bound, its stdout lines and stderr, stop by SIGTERM, SIGKILL, start again on the same
//! data; stopped by pid on drop). Also the one runner of the `loft` CLI as a subprocess
//! ([`run_cli`]).
//!
//! The server's first `loft listening on URL` line on stdout says it is ready; the start
//! waits for that line (or the process's exit) on a condition variable, never a sleep.
//! The child's environment is cleared of every `LOFT_*`, `OTEL_*` and `SSL_CERT_*`
//! variable of the test's own, so the machine's settings never leak into a test.
//!
//! Included by path (`#[path = "../support/loft.rs"] mod loft;`, beside
//! `../support/wait.rs` as `mod wait`) into every test binary.

#![allow(dead_code)]

use std::ffi::{OsStr, OsString};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use tempfile::TempDir;

/// The `loft` binary under test.
pub const LOFT_BIN: &str = env!("CARGO_BIN_EXE_loft");

/// How long a start waits for the listening line.
pub const START_PATIENCE: Duration = Duration::from_secs(30);

/// How long a stop waits for the exit after SIGTERM before it sends SIGKILL.
pub const STOP_PATIENCE: Duration = Duration::from_secs(15);

/// Where the server keeps its state.
#[derive(Clone, Debug)]
pub enum Storage {
    /// `--db DIR/loft.db` in the server's directory (the default).
    SqliteInDir,
    /// `--db PATH`.
    Sqlite(PathBuf),
    /// `--database-url URL` (PostgreSQL).
    Postgres(String),
    /// No storage flag: the arguments or a config file give it.
    FromArgs,
}

/// Where the server's stderr goes.
#[derive(Clone, Debug)]
enum Stderr {
    /// Appended to `DIR/NAME`.
    File(String),
    /// Kept in memory (a file would itself meet a file-size limit set on the child).
    Memory,
    /// Dropped.
    Null,
}

/// Changes made to the `Command` just before the spawn (e.g. `pre_exec` limits).
pub type Configure = Arc<dyn Fn(&mut Command) + Send + Sync>;

/// How to start `loft serve`. Cheap to clone: a [`LoftProcess`] keeps it to start again.
#[derive(Clone)]
pub struct TestLoft {
    args: Vec<OsString>,
    envs: Vec<(String, String)>,
    log: String,
    storage: Storage,
    listen: Option<String>,
    stderr: Stderr,
    current_dir_is_data_dir: bool,
    configure: Option<Configure>,
}

impl Default for TestLoft {
    fn default() -> Self {
        TestLoft::new()
    }
}

impl TestLoft {
    /// `loft serve --listen 127.0.0.1:0 --db DIR/loft.db`, `LOFT_LOG=info`, stderr to
    /// `DIR/stderr.log`, where DIR is a fresh temporary directory.
    pub fn new() -> TestLoft {
        TestLoft {
            args: Vec::new(),
            envs: Vec::new(),
            log: "info".to_owned(),
            storage: Storage::SqliteInDir,
            listen: Some("127.0.0.1:0".to_owned()),
            stderr: Stderr::File("stderr.log".to_owned()),
            current_dir_is_data_dir: false,
            configure: None,
        }
    }

    /// One more `loft serve` argument.
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    /// More `loft serve` arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    /// An environment variable of the server.
    pub fn env(mut self, key: &str, value: &str) -> Self {
        self.envs.push((key.to_owned(), value.to_owned()));
        self
    }

    /// Several environment variables.
    pub fn envs(mut self, envs: &[(&str, &str)]) -> Self {
        for (k, v) in envs {
            self.envs.push(((*k).to_owned(), (*v).to_owned()));
        }
        self
    }

    /// `LOFT_LOG` (default `info`).
    pub fn log(mut self, filter: &str) -> Self {
        self.log = filter.to_owned();
        self
    }

    /// The storage engine and place (default: SQLite in the server's directory).
    pub fn storage(mut self, storage: Storage) -> Self {
        self.storage = storage;
        self
    }

    /// `--listen ADDR` (default `127.0.0.1:0`); `None` leaves it to the arguments or a
    /// config file.
    pub fn listen(mut self, addr: Option<&str>) -> Self {
        self.listen = addr.map(str::to_owned);
        self
    }

    /// Stderr appended to `DIR/name` (default `stderr.log`).
    pub fn stderr_file(mut self, name: &str) -> Self {
        self.stderr = Stderr::File(name.to_owned());
        self
    }

    /// Stderr kept in memory instead of a file.
    pub fn stderr_in_memory(mut self) -> Self {
        self.stderr = Stderr::Memory;
        self
    }

    /// Stderr discarded.
    pub fn stderr_null(mut self) -> Self {
        self.stderr = Stderr::Null;
        self
    }

    /// Runs the server in its directory (so relative paths of a config file land there).
    pub fn in_data_dir(mut self) -> Self {
        self.current_dir_is_data_dir = true;
        self
    }

    /// `f` changes the `Command` before each spawn (e.g. adds a `pre_exec` hook).
    pub fn configure(mut self, f: impl Fn(&mut Command) + Send + Sync + 'static) -> Self {
        self.configure = Some(Arc::new(f));
        self
    }

    /// Starts the server in a fresh temporary directory; panics (with its stderr) when it
    /// exits before listening or is silent for [`START_PATIENCE`].
    #[track_caller]
    pub fn start(self) -> LoftProcess {
        let dir = tempfile::tempdir().expect("temporary directory");
        self.start_in(dir)
    }

    /// [`TestLoft::start`] in `dir` (which may already hold a database or config file).
    #[track_caller]
    pub fn start_in(self, dir: TempDir) -> LoftProcess {
        self.try_start_in(dir).unwrap_or_else(|f| {
            panic!("loft exited before listening ({}):\n{}", f.status, f.stderr)
        })
    }

    /// Starts the server in a fresh temporary directory.
    ///
    /// Errors: the process exited before it printed its listening line (its status and
    /// stderr). Panics when it neither listens nor exits within [`START_PATIENCE`].
    pub fn try_start(self) -> Result<LoftProcess, StartFailure> {
        let dir = tempfile::tempdir().expect("temporary directory");
        self.try_start_in(dir)
    }

    /// [`TestLoft::try_start`] in `dir`.
    ///
    /// Errors: as [`TestLoft::try_start`].
    pub fn try_start_in(self, dir: TempDir) -> Result<LoftProcess, StartFailure> {
        self.try_start_held(Dir::Temp(dir))
    }

    /// [`TestLoft::start`] in `dir`, a directory the caller keeps (several servers may
    /// share it, e.g. the nodes of a cluster, each with its own stderr file).
    #[track_caller]
    pub fn start_at(self, dir: &Path) -> LoftProcess {
        self.try_start_held(Dir::Kept(dir.to_owned()))
            .unwrap_or_else(|f| {
                panic!("loft exited before listening ({}):\n{}", f.status, f.stderr)
            })
    }

    fn try_start_held(self, dir: Dir) -> Result<LoftProcess, StartFailure> {
        let listen = self.listen.clone();
        let run = spawn(&self, dir.path(), listen.as_deref())?;
        Ok(LoftProcess {
            spec: self,
            dir: Some(dir),
            heard: run.heard.clone(),
            run: Some(run),
            url: String::new(),
        }
        .with_url())
    }

    /// The `loft serve` command this builder runs in `dir`, listening on `listen`.
    fn command(&self, dir: &Path, listen: Option<&str>) -> Command {
        let mut cmd = Command::new(LOFT_BIN);
        cmd.arg("serve");
        for (k, _) in std::env::vars_os() {
            let k = k.to_string_lossy();
            if k.starts_with("LOFT_") || k.starts_with("OTEL_") || k.starts_with("SSL_CERT_") {
                cmd.env_remove(&*k);
            }
        }
        cmd.env("LOFT_LOG", &self.log).env("NO_COLOR", "1");
        if let Some(listen) = listen {
            cmd.arg("--listen").arg(listen);
        }
        match &self.storage {
            Storage::SqliteInDir => {
                cmd.arg("--db").arg(dir.join("loft.db"));
            }
            Storage::Sqlite(path) => {
                cmd.arg("--db").arg(path);
            }
            Storage::Postgres(url) => {
                cmd.arg("--database-url").arg(url);
            }
            Storage::FromArgs => {}
        }
        cmd.args(&self.args);
        for (k, v) in &self.envs {
            cmd.env(k, v);
        }
        if self.current_dir_is_data_dir {
            cmd.current_dir(dir);
        }
        cmd.stdin(Stdio::null()).stdout(Stdio::piped());
        if let Some(f) = &self.configure {
            f(&mut cmd);
        }
        cmd
    }
}

/// A `loft serve` that exited before listening.
#[derive(Debug)]
pub struct StartFailure {
    /// Its exit status.
    pub status: ExitStatus,
    /// Everything it wrote on stderr.
    pub stderr: String,
}

/// What the stdout reader saw.
#[derive(Default)]
struct Heard {
    /// Every stdout line so far.
    lines: Vec<String>,
    /// The URL of every `loft listening on URL` line so far, trailing `/` removed.
    listening: Vec<String>,
    /// Stdout reached its end (the process exited).
    closed: bool,
}

/// Stderr kept in memory, and the thread filling it (it ends at the child's exit; taken
/// when joined).
type Memory = (Arc<Mutex<String>>, Option<std::thread::JoinHandle<()>>);

/// One run of the process.
struct Run {
    child: Child,
    heard: Arc<(Mutex<Heard>, Condvar)>,
    /// Stderr kept in memory (see [`Memory`]).
    memory: Option<Memory>,
}

/// How a stop ended.
#[derive(Debug, Clone, Copy)]
pub struct Exit {
    /// The exit status (`None` when it could not be read).
    pub status: Option<ExitStatus>,
    /// Whether SIGTERM went unheeded for [`STOP_PATIENCE`] and SIGKILL followed.
    pub killed: bool,
}

impl Exit {
    /// Exited by itself with status 0.
    pub fn clean(&self) -> bool {
        !self.killed && self.status.is_some_and(|s| s.success())
    }
}

fn spawn(spec: &TestLoft, dir: &Path, listen: Option<&str>) -> Result<Run, StartFailure> {
    let mut cmd = spec.command(dir, listen);
    match &spec.stderr {
        Stderr::File(name) => {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(dir.join(name))
                .expect("the stderr log");
            cmd.stderr(file);
        }
        Stderr::Memory => {
            cmd.stderr(Stdio::piped());
        }
        Stderr::Null => {
            cmd.stderr(Stdio::null());
        }
    }
    let mut child = cmd.spawn().expect("start the loft binary");
    let memory = child.stderr.take().map(|mut pipe| {
        let text = Arc::new(Mutex::new(String::new()));
        let sink = text.clone();
        let reader = std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        (text, Some(reader))
    });
    let stdout = child.stdout.take().expect("piped stdout");
    let heard = Arc::new((Mutex::new(Heard::default()), Condvar::new()));
    let writer = heard.clone();
    // Drains stdout for the server's whole life, so a later write never meets a full or
    // closed pipe.
    std::thread::spawn(move || {
        let (lock, cvar) = &*writer;
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let mut h = lock.lock().unwrap();
            if let Some(url) = line.strip_prefix("loft listening on ") {
                h.listening
                    .push(url.trim().trim_end_matches('/').to_owned());
            }
            h.lines.push(line);
            cvar.notify_all();
        }
        lock.lock().unwrap().closed = true;
        cvar.notify_all();
    });
    let mut run = Run {
        child,
        heard,
        memory,
    };
    let (lock, cvar) = &*run.heard;
    let (h, _) = cvar
        .wait_timeout_while(lock.lock().unwrap(), START_PATIENCE, |h| {
            h.listening.is_empty() && !h.closed
        })
        .unwrap();
    let listening = !h.listening.is_empty();
    drop(h);
    if listening {
        return Ok(run);
    }
    let silent = !lock.lock().unwrap().closed;
    if silent {
        let _ = run.child.kill();
    }
    let status = run.child.wait().expect("reap loft");
    let stderr = run_stderr(spec, dir, &mut run, true);
    assert!(
        !silent,
        "loft neither listened nor exited within {START_PATIENCE:?}; stderr:\n{stderr}"
    );
    Err(StartFailure { status, stderr })
}

/// The stderr of `run` so far; `finished`: the process has exited (join the reader).
fn run_stderr(spec: &TestLoft, dir: &Path, run: &mut Run, finished: bool) -> String {
    match (&spec.stderr, &mut run.memory) {
        (Stderr::File(name), _) => std::fs::read_to_string(dir.join(name)).unwrap_or_default(),
        (Stderr::Memory, Some((text, reader))) => {
            if finished {
                // The exit closed the pipe: the reader has everything once it ends.
                if let Some(r) = reader.take() {
                    let _ = r.join();
                }
            }
            let t = text.lock().unwrap().clone();
            t
        }
        _ => String::new(),
    }
}

/// The server's directory: a temporary one it owns, or one the caller keeps.
enum Dir {
    Temp(TempDir),
    Kept(PathBuf),
}

impl Dir {
    fn path(&self) -> &Path {
        match self {
            Dir::Temp(t) => t.path(),
            Dir::Kept(p) => p,
        }
    }
}

/// A running (or stopped) `loft serve`; SIGTERM by pid on drop (SIGKILL when it does not
/// exit within [`STOP_PATIENCE`]).
pub struct LoftProcess {
    spec: TestLoft,
    dir: Option<Dir>,
    run: Option<Run>,
    /// What the latest run's stdout reader saw (kept after the run ends).
    heard: Arc<(Mutex<Heard>, Condvar)>,
    /// The first listener's URL: `http://127.0.0.1:PORT` (`https://` for TLS), no
    /// trailing slash.
    pub url: String,
}

impl LoftProcess {
    fn with_url(mut self) -> Self {
        self.url = self.urls(1).remove(0);
        self
    }

    fn run(&self) -> &Run {
        self.run.as_ref().expect("loft is running")
    }

    /// The server's directory (its database, its logs, the test's files).
    pub fn dir(&self) -> &Path {
        self.dir.as_ref().expect("the directory").path()
    }

    /// Stops the process and takes its temporary directory out (the caller removes it).
    pub fn take_dir(mut self) -> TempDir {
        self.stop();
        match self.dir.take().expect("the directory") {
            Dir::Temp(t) => t,
            Dir::Kept(p) => panic!("{} is not this server's own directory", p.display()),
        }
    }

    /// The port of the first listener.
    pub fn port(&self) -> u16 {
        self.url
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no port in {}", self.url))
    }

    /// The process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.run.as_ref().map(|r| r.child.id())
    }

    /// Whether a process was started and has not been stopped.
    pub fn is_running(&self) -> bool {
        self.run.is_some()
    }

    /// The URLs of the first `n` listeners, in the order Loft announced them; waits for
    /// them at most [`START_PATIENCE`].
    #[track_caller]
    pub fn urls(&self, n: usize) -> Vec<String> {
        let (lock, cvar) = &*self.heard;
        let (h, _) = cvar
            .wait_timeout_while(lock.lock().unwrap(), START_PATIENCE, |h| {
                h.listening.len() < n && !h.closed
            })
            .unwrap();
        assert!(
            h.listening.len() >= n,
            "{n} listeners announced: {:?}",
            h.listening
        );
        h.listening[..n].to_vec()
    }

    /// Every stdout line of the latest run so far.
    pub fn stdout_lines(&self) -> Vec<String> {
        self.heard.0.lock().unwrap().lines.clone()
    }

    /// Every stdout line of the latest run, after a stop: waits (at most
    /// [`STOP_PATIENCE`]) for stdout to reach its end.
    #[track_caller]
    pub fn stdout_to_end(&self) -> Vec<String> {
        let (lock, cvar) = &*self.heard;
        let (h, _) = cvar
            .wait_timeout_while(lock.lock().unwrap(), STOP_PATIENCE, |h| !h.closed)
            .unwrap();
        assert!(
            h.closed,
            "stdout still open {STOP_PATIENCE:?} after the stop"
        );
        h.lines.clone()
    }

    /// Waits (at most `within`) for a stdout line that `pred` accepts; `None` when none
    /// came or stdout closed first.
    pub fn wait_stdout(&self, within: Duration, pred: impl Fn(&str) -> bool) -> Option<String> {
        let (lock, cvar) = &*self.heard;
        let (h, _) = cvar
            .wait_timeout_while(lock.lock().unwrap(), within, |h| {
                !h.closed && !h.lines.iter().any(|l| pred(l))
            })
            .unwrap();
        h.lines.iter().find(|l| pred(l)).cloned()
    }

    /// Everything the server wrote on stderr so far (all runs, when it goes to a file).
    pub fn stderr(&self) -> String {
        match (&self.spec.stderr, &self.run) {
            (Stderr::File(name), _) => {
                std::fs::read_to_string(self.dir().join(name)).unwrap_or_default()
            }
            (
                Stderr::Memory,
                Some(Run {
                    memory: Some((t, _)),
                    ..
                }),
            ) => t.lock().unwrap().clone(),
            _ => String::new(),
        }
    }

    /// The file stderr goes to (the default `DIR/stderr.log`).
    pub fn stderr_path(&self) -> PathBuf {
        match &self.spec.stderr {
            Stderr::File(name) => self.dir().join(name),
            _ => panic!("this server's stderr is not in a file"),
        }
    }

    /// SIGTERM, then waits at most [`STOP_PATIENCE`] for the exit; SIGKILL after that.
    /// Returns how it ended and the stderr of this run (complete).
    pub fn stop_with_stderr(&mut self) -> (Exit, String) {
        let Some(mut run) = self.run.take() else {
            return (
                Exit {
                    status: None,
                    killed: false,
                },
                String::new(),
            );
        };
        let exit = terminate(&mut run.child);
        let dir = self.dir.as_ref().expect("the directory").path().to_owned();
        let stderr = run_stderr(&self.spec, &dir, &mut run, true);
        (exit, stderr)
    }

    /// SIGTERM, then waits at most [`STOP_PATIENCE`]; SIGKILL after that.
    pub fn stop(&mut self) -> Exit {
        self.stop_with_stderr().0
    }

    /// [`LoftProcess::stop`], asserting a graceful shutdown: exit status 0 within
    /// [`STOP_PATIENCE`] of SIGTERM.
    #[track_caller]
    pub fn stop_clean(&mut self) {
        let (exit, stderr) = self.stop_with_stderr();
        assert!(
            !exit.killed,
            "loft did not exit within {STOP_PATIENCE:?} of SIGTERM; stderr:\n{stderr}"
        );
        assert!(
            exit.clean(),
            "loft exited with {:?} after SIGTERM; stderr:\n{stderr}",
            exit.status
        );
    }

    /// SIGKILL: no shutdown, open transactions die with the connections.
    pub fn kill9(&mut self) {
        if let Some(mut run) = self.run.take() {
            let _ = run.child.kill();
            let _ = run.child.wait();
        }
    }

    /// Starts the server again, after a stop or a kill, on the same data with the same
    /// arguments, listening as first configured (a new port for `127.0.0.1:0`).
    #[track_caller]
    pub fn start_again(&mut self) {
        let listen = self.spec.listen.clone();
        self.start_again_on(listen.as_deref());
    }

    /// Starts the server again on the same data and the same address as before, so URLs
    /// already handed out keep working.
    #[track_caller]
    pub fn start_again_same_port(&mut self) {
        let host = self.url.split("://").nth(1).unwrap_or(&self.url).to_owned();
        self.start_again_on(Some(&host));
        assert!(
            self.url.ends_with(&host),
            "loft came back on {} instead of {host}",
            self.url
        );
    }

    #[track_caller]
    fn start_again_on(&mut self, listen: Option<&str>) {
        assert!(self.run.is_none(), "loft is still running");
        match spawn(&self.spec, self.dir(), listen) {
            Ok(run) => {
                self.heard = run.heard.clone();
                self.run = Some(run);
                self.url = self.urls(1).remove(0);
            }
            Err(f) => panic!("loft exited before listening ({}):\n{}", f.status, f.stderr),
        }
    }

    /// Stops the server (SIGTERM, not asserting how it ended) and starts it again on the
    /// same data and address.
    #[track_caller]
    pub fn restart_same_port(&mut self) {
        self.stop();
        self.start_again_same_port();
    }
}

impl Drop for LoftProcess {
    fn drop(&mut self) {
        if let Some(mut run) = self.run.take() {
            let _ = terminate(&mut run.child);
        }
    }
}

/// SIGTERM to `child`'s pid, then waits at most [`STOP_PATIENCE`]; SIGKILL after that.
fn terminate(child: &mut Child) -> Exit {
    if let Ok(Some(status)) = child.try_wait() {
        return Exit {
            status: Some(status),
            killed: false,
        };
    }
    let pid = child.id() as libc::pid_t;
    // SAFETY: kill(2) with the pid of our own child that has not been reaped yet.
    unsafe {
        libc::kill(pid, libc::SIGTERM);
    }
    match crate::wait::poll_blocking(STOP_PATIENCE, || child.try_wait().ok().flatten()) {
        Some(status) => Exit {
            status: Some(status),
            killed: false,
        },
        None => {
            let _ = child.kill();
            Exit {
                status: child.wait().ok(),
                killed: true,
            }
        }
    }
}

/// The outcome of one `loft` CLI command.
#[derive(Debug)]
pub struct CliRun {
    /// Exit code (-1 when killed by a signal).
    pub code: i32,
    /// stdout.
    pub stdout: String,
    /// stderr.
    pub stderr: String,
}

impl CliRun {
    /// Asserts exit code 0 and returns stdout.
    #[track_caller]
    pub fn ok(&self) -> &str {
        assert_eq!(self.code, 0, "command failed: {self:?}");
        &self.stdout
    }

    /// Asserts exit code 0 and parses stdout as JSON.
    #[track_caller]
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(self.ok())
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {self:?}"))
    }
}

/// The environment variables the admin commands read credentials from; removed from
/// theirs unless a test sets them, so the machine's settings never leak into a test.
const AWS_ENV: &[&str] = &[
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
];

/// How long a CLI command may run before the test fails.
pub const CLI_PATIENCE: Duration = Duration::from_secs(90);

/// Runs `loft ARGS` (any subcommand) with `envs` set, `stdin` fed to it, no `LOFT_*`,
/// `SSL_CERT_*` or AWS credential variable of the test's own, and waits at most [`CLI_PATIENCE`] (on a
/// thread, so that async tests can call it).
pub fn run_cli(args: &[&str], stdin: Option<&[u8]>, envs: &[(&str, &str)]) -> CliRun {
    let mut cmd = Command::new(LOFT_BIN);
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy();
        if k.starts_with("LOFT_") || k.starts_with("SSL_CERT_") || AWS_ENV.contains(&&*k) {
            cmd.env_remove(&*k);
        }
    }
    cmd.env("NO_COLOR", "1");
    cmd.envs(envs.iter().copied());
    let mut child = cmd
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run loft");
    if let Some(input) = stdin {
        let mut w = child.stdin.take().expect("stdin");
        let input = input.to_vec();
        std::thread::spawn(move || {
            let _ = w.write_all(&input);
        });
    }
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let started = Instant::now();
    let out = rx
        .recv_timeout(CLI_PATIENCE)
        .unwrap_or_else(|_| panic!("loft {args:?} still running after {:?}", started.elapsed()))
        .expect("loft command output");
    CliRun {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}
