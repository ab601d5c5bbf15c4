//! Group commit for the PostgreSQL store: concurrent requests of one node share one
//! statement (one round trip, one implicit transaction, one commit) instead of one each.
//!
//! A request hands its job to a [`Combiner`] and waits for its own answer. While fewer than
//! [`Combiner::new`]'s `flights` groups are running, a new job starts a flight at once (a
//! lone request pays no wait); otherwise it waits in the queue, and the next flight to
//! finish takes everything queued (up to the combiner's weight limit) as its group. A
//! flight runs in its own task, so a request dropped by its client never strands the
//! others of its group.
//!
//! The runner answers every job of a group: the statement commits before any answer is
//! sent, so nothing is acknowledged that is not committed. When a group of several jobs
//! fails for a reason a retry would not cure, the runner runs each job alone, so one bad
//! request fails only itself (see `PgStore`'s send, delete and receive groups). The SQLite engine's
//! writer thread does the same with one transaction (`crate::sqlite`).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use loft_core::error::{Error, Result};
use tokio::sync::oneshot;

/// Runs one group: the jobs in queue order, one answer per job in the same order.
pub type Runner<J, R> =
    Arc<dyn Fn(Vec<J>) -> Pin<Box<dyn Future<Output = Vec<Result<R>>> + Send>> + Send + Sync>;

struct Waiting<J, R> {
    job: J,
    weight: usize,
    answer: oneshot::Sender<Result<R>>,
}

struct State<J, R> {
    queue: std::collections::VecDeque<Waiting<J, R>>,
    /// Flights running (each a task).
    flying: usize,
}

/// Groups concurrent jobs of one kind (`J`, answered with `R`) into shared statements.
pub struct Combiner<J, R> {
    state: Mutex<State<J, R>>,
    /// Most groups running at once (each holds one pooled connection while it runs).
    flights: usize,
    /// Most weight (messages) in one group; a single heavier job still runs, alone.
    max_weight: usize,
    run: Runner<J, R>,
}

/// Gives the flight slot back when a flight ends, also when its runner panics (its
/// waiters then get "dropped" errors from their closed channels).
struct Landing<J: Send + 'static, R: Send + 'static>(Arc<Combiner<J, R>>);

impl<J: Send + 'static, R: Send + 'static> Drop for Landing<J, R> {
    fn drop(&mut self) {
        let again = {
            let mut s = self.0.state.lock().unwrap_or_else(|p| p.into_inner());
            if s.queue.is_empty() {
                s.flying -= 1;
                false
            } else {
                true
            }
        };
        if again {
            // The slot passes to a new flight for what queued meanwhile.
            tokio::spawn(Combiner::fly(self.0.clone()));
        }
    }
}

impl<J: Send + 'static, R: Send + 'static> Combiner<J, R> {
    /// A combiner running at most `flights` groups at once (at least 1), each of at most
    /// `max_weight` weight, through `run`.
    pub fn new(flights: usize, max_weight: usize, run: Runner<J, R>) -> Arc<Self> {
        Arc::new(Combiner {
            state: Mutex::new(State {
                queue: Default::default(),
                flying: 0,
            }),
            flights: flights.max(1),
            max_weight: max_weight.max(1),
            run,
        })
    }

    /// Runs `job` (of `weight`, e.g. its message count) in a group and gives its answer.
    ///
    /// Errors: whatever the runner answers for this job; `InternalError` if the flight
    /// carrying it ended without an answer (its runner panicked).
    pub async fn submit(self: &Arc<Self>, job: J, weight: usize) -> Result<R> {
        let (answer, rx) = oneshot::channel();
        let start = {
            let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
            s.queue.push_back(Waiting {
                job,
                weight,
                answer,
            });
            if s.flying < self.flights {
                s.flying += 1;
                true
            } else {
                false
            }
        };
        if start {
            tokio::spawn(Combiner::fly(self.clone()));
        }
        rx.await
            .map_err(|_| Error::internal("PostgreSQL group ended without an answer"))?
    }

    /// One flight: takes a group from the queue, runs it, answers it.
    async fn fly(self: Arc<Self>) {
        let landing = Landing(self.clone());
        let group: Vec<Waiting<J, R>> = {
            let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
            let mut weight = 0;
            let mut group = Vec::new();
            while let Some(w) = s.queue.front() {
                if !group.is_empty() && weight + w.weight > self.max_weight {
                    break;
                }
                weight += w.weight;
                group.extend(s.queue.pop_front());
            }
            group
        };
        if !group.is_empty() {
            let (jobs, answers): (Vec<J>, Vec<_>) =
                group.into_iter().map(|w| (w.job, w.answer)).unzip();
            let n = jobs.len();
            let mut results = (self.run)(jobs).await.into_iter();
            for answer in answers {
                let r = results.next().unwrap_or_else(|| {
                    Err(Error::internal(format!(
                        "PostgreSQL group of {n} gave fewer answers"
                    )))
                });
                // A receiver gone (its request dropped) needs no answer.
                let _ = answer.send(r);
            }
        }
        drop(landing);
    }
}
