//! How `loft serve` schedules its work (`--runtime`: wake-ups per request).
//!
//! - `multi-thread` (the default): one tokio multi-thread runtime, a worker thread per
//!   core, any worker taking (stealing) any task. A worker that finds work while others
//!   sleep wakes one of them (a futex call and a context switch), so at a low request rate
//!   a request may cost two wake-ups instead of one (docs/benchmarks/history.md, "wake-ups
//!   per request and the runtime model").
//! - `per-core`: a current-thread runtime per core (the main thread's and [`Cores`]' ones),
//!   each accepting on its own handle (a duplicated descriptor) of every `--listen`
//!   socket ([`crate::listeners::twins`]), so a connection is read, served and answered
//!   on the thread that accepted it, and no runtime wakes another for it. (Until
//!   2026-12-02 each runtime bound a socket of its own with `SO_REUSEPORT`, which also let
//!   another process of the same user bind the port while Loft ran.) The background work
//!   (delivery, mappings, sweeps) runs on the main thread's runtime. What crosses runtimes
//!   is what is shared anyway: the Service and its store, the long-poll wake-ups (tokio
//!   `Notify`s work across runtimes), the connection limits and the graceful shutdown
//!   (`loft_server::listen::serve`). One difference: connections that arrive together on
//!   different runtimes are accepted in no set order across them, so when they pass
//!   `--max-connections` together, which of them is refused is not the last to connect
//!   (the limit itself holds: the slots are one semaphore).

use tokio::runtime::{Builder, Handle, Runtime};
use tokio::sync::oneshot;

/// The scheduling mode of `loft serve --runtime` (module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum RuntimeMode {
    /// One multi-thread runtime, a worker per core.
    MultiThread,
    /// A current-thread runtime per core, each accepting from every listening socket.
    PerCore,
}

/// The main thread's runtime for `mode` (for every command but `serve --runtime
/// per-core`: the multi-thread one). Each thread collects its allocator heap as it parks
/// ([`crate::allocator::collect`]).
///
/// Errors: the system's, when the runtime cannot be built.
pub fn main_runtime(mode: RuntimeMode) -> std::io::Result<Runtime> {
    let mut builder = match mode {
        RuntimeMode::MultiThread => Builder::new_multi_thread(),
        RuntimeMode::PerCore => Builder::new_current_thread(),
    };
    builder
        .enable_all()
        .on_thread_park(crate::allocator::collect)
        .build()
}

/// The current-thread runtimes of `--runtime per-core` besides the main thread's, each
/// driven by a thread of its own (`loft-core-N`) until [`Cores::stop`].
pub struct Cores {
    running: Vec<Core>,
}

struct Core {
    handle: Handle,
    stop: oneshot::Sender<()>,
    thread: std::thread::JoinHandle<()>,
}

impl Cores {
    /// None: the multi-thread runtime, or a single core.
    pub fn none() -> Cores {
        Cores {
            running: Vec::new(),
        }
    }

    /// One runtime for each core but the first (`std::thread::available_parallelism`,
    /// which honours CPU affinity and cgroup quotas; 1 when unknown).
    ///
    /// Errors: a runtime or its thread cannot be made (the system's error).
    pub fn start_per_core() -> Result<Cores, String> {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let mut started = Cores::none();
        for n in 1..cores {
            let runtime = main_runtime(RuntimeMode::PerCore)
                .map_err(|e| format!("cannot start the runtime of core {n}: {e}"))?;
            let handle = runtime.handle().clone();
            let (stop, stopped) = oneshot::channel::<()>();
            let thread = std::thread::Builder::new()
                .name(format!("loft-core-{n}"))
                .spawn(move || {
                    let _ = runtime.block_on(stopped);
                    // Dropped here, after the stop: what is left of its tasks with it.
                    drop(runtime);
                })
                .map_err(|e| format!("cannot start the thread of core {n}: {e}"))?;
            started.running.push(Core {
                handle,
                stop,
                thread,
            });
        }
        Ok(started)
    }

    /// The runtimes' handles, one per extra core.
    pub fn handles(&self) -> Vec<Handle> {
        self.running.iter().map(|c| c.handle.clone()).collect()
    }

    /// Stops every runtime (their remaining tasks are dropped, as the main runtime's are
    /// when `main` returns) and waits for its thread.
    pub fn stop(self) {
        for core in self.running {
            let _ = core.stop.send(());
            let _ = core.thread.join();
        }
    }
}
