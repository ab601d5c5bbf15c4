//! `loft bench`: a load generator for any endpoint that speaks the Amazon SQS JSON
//! protocol (AWS JSON 1.0: `POST /` with `X-Amz-Target: AmazonSQS.<Op>`), Loft or not.
//!
//! It opens `--connections` HTTP/1.1 connections (plain HTTP, no TLS), each with one
//! request in flight, runs one [`Scenario`] against one queue, and reports messages per
//! second, per-call latency percentiles, errors, duplicates and, given the server's
//! pid, the server's memory and CPU. Every loop is bounded both by a message count and
//! by `--duration-limit`.

mod client;
mod fair;
#[cfg(test)]
mod fake;
mod function;
mod report;
mod scenarios;
mod server;
mod sqs;
mod stats;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::distributions::Alphanumeric;
use rand::Rng;

use crate::client::{CallError, Client, Endpoint};
use crate::report::{PreloadStats, Report, ServerStats};
use crate::scenarios::Ctx;
use crate::server::ServerWatch;
use crate::sqs::{Ignored, QueueNameIn, QueueUrlIn, QueueUrlOut};
use crate::stats::{round3, Progress, Recorder};

/// Largest message body SQS accepts, in bytes (1 MiB, per the service model); also the
/// largest total of the bodies in one `SendMessageBatch`.
pub const MAX_MESSAGE_BYTES: usize = 1_048_576;

/// Largest `--connections`.
pub const MAX_CONNECTIONS: usize = 10_000;

/// Largest `--duration-limit`, in seconds (one day).
pub const MAX_DURATION_LIMIT_SECONDS: u64 = 86_400;

/// Default `--messages` for every scenario but long-poll.
pub const DEFAULT_MESSAGES: u64 = 100_000;

/// Default `--messages` (round trips) for long-poll.
pub const DEFAULT_LONG_POLL_ROUNDS: u64 = 200;

/// Time allowed to each setup or teardown call (creating, finding, deleting the queue).
const ADMIN_CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// Arguments of `loft bench`.
#[derive(clap::Args, Debug, Clone)]
pub struct BenchArgs {
    /// Base URL of the SQS endpoint; http only (the bench speaks no TLS).
    #[arg(long, default_value = "http://127.0.0.1:9324")]
    pub endpoint: String,

    /// What to measure.
    #[arg(long, value_enum, default_value_t = Scenario::Send)]
    pub scenario: Scenario,

    /// Concurrent HTTP/1.1 connections, one request in flight on each
    /// (produce-consume gives half to producers, half to consumers; long-poll uses 2).
    #[arg(long, default_value_t = 32)]
    pub connections: usize,

    /// Total messages to move [default: 100000; for long-poll, 200 round trips].
    #[arg(long)]
    pub messages: Option<u64>,

    /// Message body size, in bytes (1 to 1048576).
    #[arg(long, default_value_t = 256)]
    pub size: usize,

    /// Hard cap on the whole run, in seconds (preloading included; creating and
    /// deleting the queue take at most 10 s more each).
    #[arg(long, default_value_t = 60)]
    pub duration_limit: u64,

    /// Queue to use, found or created by name, and left in place afterwards
    /// [default: a fresh `loft-bench-<random>` queue, deleted at the end].
    #[arg(long)]
    pub queue: Option<String>,

    /// Use a FIFO queue whose sends spread round robin over this many message groups
    /// (1 to 100000), each with a unique MessageDeduplicationId; with `--queue`, its name
    /// ends in `.fifo`. For send, send-batch and receive-delete.
    #[arg(long)]
    pub fifo_groups: Option<u32>,

    /// For `--scenario fair`: send without MessageGroupId (the tenant only in the
    /// body), the no-fairness baseline on a plain standard queue.
    #[arg(long)]
    pub fair_baseline: bool,

    /// Pid of the server process, on this machine: report its resident memory
    /// (VmRSS) and the CPU seconds it spent during the measured phase.
    #[arg(long)]
    pub server_pid: Option<u32>,

    /// For `--scenario function`: the configured function (`[[functions]]` of Loft's
    /// config file) whose `url` is `--function-listen`.
    #[arg(long)]
    pub function: Option<String>,

    /// For `--scenario function`: where the bench's no-op function listens.
    #[arg(long, default_value = "127.0.0.1:9700")]
    pub function_listen: std::net::SocketAddr,

    /// Print one JSON object on stdout instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// A load pattern.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    /// `SendMessage`, one message per call, on every connection.
    Send,
    /// `SendMessageBatch` of 10 messages per call (fewer when 10 bodies would pass
    /// 1 MiB), on every connection.
    SendBatch,
    /// Preload the queue with batched sends, then, on every connection,
    /// `ReceiveMessage` (up to 10) and `DeleteMessageBatch` until all are consumed;
    /// counts duplicates (a MessageId received twice before its deletion).
    ReceiveDelete,
    /// Half the connections send (`SendMessage`) while the other half receive and
    /// delete; also measures delivery latency, from the start of a send to the answer of
    /// the receive that got it (bodies of 24 bytes or more carry the send time).
    ProduceConsume,
    /// One consumer waits with `WaitTimeSeconds=20`; once it waits, a producer sends one
    /// message; measures from the send's answer to the receive's answer. Repeated
    /// `--messages` times.
    LongPoll,
    /// An SQS event source mapping (BatchSize 10) feeds the queue to `--function`, a
    /// no-op HTTP function the bench runs on `--function-listen`, while every connection
    /// sends; measures messages per second invoked and the delay from the start of each
    /// send to the invocation carrying it.
    Function,
    /// Fair queues: preload `--messages` messages of one tenant (MessageGroupId
    /// `noisy`), then nine quiet tenants send one message each every 100 ms while the
    /// other connections receive and delete until all is consumed; reports each
    /// tenant's dwell time (send start to receive answer) and the total msgs/s.
    Fair,
}

impl Scenario {
    /// The scenario's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::Send => "send",
            Scenario::SendBatch => "send-batch",
            Scenario::ReceiveDelete => "receive-delete",
            Scenario::ProduceConsume => "produce-consume",
            Scenario::LongPoll => "long-poll",
            Scenario::Function => "function",
            Scenario::Fair => "fair",
        }
    }
}

/// Validated arguments.
#[derive(Debug, Clone)]
struct Plan {
    endpoint: Endpoint,
    scenario: Scenario,
    /// Connections actually used.
    connections: usize,
    messages: u64,
    size: usize,
    /// Entries per `SendMessageBatch`.
    batch: usize,
    limit: Duration,
    queue: Option<String>,
    fifo_groups: Option<u32>,
    /// The function scenario's function and listen address.
    function: Option<(String, std::net::SocketAddr)>,
    fair_baseline: bool,
}

impl BenchArgs {
    fn plan(&self) -> Result<Plan, String> {
        let endpoint = Endpoint::parse(&self.endpoint)?;
        if self.connections == 0 || self.connections > MAX_CONNECTIONS {
            return Err(format!(
                "--connections must be between 1 and {MAX_CONNECTIONS}, not {}",
                self.connections
            ));
        }
        if self.scenario == Scenario::Fair && self.connections < 2 {
            return Err(
                "--scenario fair needs --connections 2 or more (a quiet producer and a consumer)"
                    .into(),
            );
        }
        if self.fair_baseline && self.scenario != Scenario::Fair {
            return Err("--fair-baseline is for --scenario fair".into());
        }
        if self.scenario == Scenario::ProduceConsume && self.connections < 2 {
            return Err(
                "--scenario produce-consume needs --connections 2 or more (a producer and a consumer)"
                    .into(),
            );
        }
        let messages = self.messages.unwrap_or(match self.scenario {
            Scenario::LongPoll => DEFAULT_LONG_POLL_ROUNDS,
            _ => DEFAULT_MESSAGES,
        });
        if messages == 0 {
            return Err("--messages must be at least 1".into());
        }
        if self.size == 0 || self.size > MAX_MESSAGE_BYTES {
            return Err(format!(
                "--size must be between 1 and {MAX_MESSAGE_BYTES} bytes, not {}",
                self.size
            ));
        }
        if self.duration_limit == 0 || self.duration_limit > MAX_DURATION_LIMIT_SECONDS {
            return Err(format!(
                "--duration-limit must be between 1 and {MAX_DURATION_LIMIT_SECONDS} seconds, not {}",
                self.duration_limit
            ));
        }
        if let Some(g) = self.fifo_groups {
            if !(1..=100_000).contains(&g) {
                return Err(format!(
                    "--fifo-groups must be between 1 and 100000, not {g}"
                ));
            }
            if !matches!(
                self.scenario,
                Scenario::Send | Scenario::SendBatch | Scenario::ReceiveDelete
            ) {
                return Err(format!(
                    "--fifo-groups is for send, send-batch and receive-delete, not {}",
                    self.scenario.name()
                ));
            }
        }
        if let Some(q) = &self.queue {
            validate_queue_name(q, self.fifo_groups.is_some())?;
        }
        let function = match (self.scenario, &self.function) {
            (Scenario::Function, Some(f)) => Some((f.clone(), self.function_listen)),
            (Scenario::Function, None) => {
                return Err("--scenario function needs --function NAME: a function of Loft's config file whose url is http://--function-listen/".into())
            }
            (_, Some(_)) => return Err("--function is for --scenario function".into()),
            (_, None) => None,
        };
        let connections = match self.scenario {
            Scenario::LongPoll => 2,
            _ => self.connections,
        };
        Ok(Plan {
            endpoint,
            scenario: self.scenario,
            connections,
            messages,
            size: self.size,
            batch: (MAX_MESSAGE_BYTES / self.size).clamp(1, 10),
            limit: Duration::from_secs(self.duration_limit),
            queue: self.queue.clone(),
            fifo_groups: self.fifo_groups,
            function,
            fair_baseline: self.fair_baseline,
        })
    }
}

fn validate_queue_name(name: &str, fifo: bool) -> Result<(), String> {
    if name.ends_with(".fifo") != fifo {
        return Err(if fifo {
            format!(
                "--queue {name:?}: with --fifo-groups the queue is FIFO, its name ends in .fifo"
            )
        } else {
            format!(
                "--queue {name:?}: a FIFO queue needs --fifo-groups (its sends need a MessageGroupId)"
            )
        });
    }
    let ok_chars = name
        .strip_suffix(".fifo")
        .unwrap_or(name)
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if name.is_empty() || name.len() > 80 || !ok_chars {
        return Err(format!(
            "--queue {name:?}: a queue name has 1 to 80 characters among letters, digits, '-' and '_'"
        ));
    }
    Ok(())
}

/// Runs the bench as `args` say: creates (or finds) the queue, runs the scenario,
/// deletes the queue if it created it, and prints the report on stdout (a table, or one
/// JSON object with `--json`). Progress goes to stderr about once a second.
///
/// Errors are fatal problems: bad arguments, an unreachable endpoint, a queue that
/// cannot be created. Failed calls during the run are counted in the report instead.
pub async fn run(args: BenchArgs) -> Result<(), String> {
    let report = run_report(&args).await?;
    if args.json {
        let text = serde_json::to_string(&report).map_err(|e| e.to_string())?;
        println!("{text}");
    } else {
        print!("{}", report.table());
    }
    Ok(())
}

/// [`run`] without the printing.
async fn run_report(args: &BenchArgs) -> Result<Report, String> {
    let plan = args.plan()?;
    let watch = args
        .server_pid
        .map(ServerWatch::new)
        .transpose()?
        .map(Arc::new);
    let endpoint = Arc::new(plan.endpoint.clone());
    let (queue_url, auth, created) =
        setup(&endpoint, plan.queue.as_deref(), plan.fifo_groups.is_some()).await?;
    eprintln!(
        "loft bench: {} against {} on {queue_url}{}",
        plan.scenario.name(),
        args.endpoint,
        if auth {
            " (with a placeholder SigV4 Authorization header)"
        } else {
            ""
        }
    );
    let measured = tokio::select! {
        r = measure(&plan, &args.endpoint, endpoint.clone(), auth, &queue_url, watch) => Ok(r),
        _ = tokio::signal::ctrl_c() => Err("interrupted".to_string()),
    };
    if created {
        let mut c = Client::new(endpoint.clone(), auth);
        let input = QueueUrlIn {
            queue_url: &queue_url,
        };
        match tokio::time::timeout(
            ADMIN_CALL_TIMEOUT,
            c.call::<_, Ignored>("DeleteQueue", &input),
        )
        .await
        {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => eprintln!("loft bench: could not delete {queue_url}: {e}"),
            Err(_) => eprintln!("loft bench: could not delete {queue_url}: timed out"),
        }
    }
    measured
}

/// Finds or creates the queue; returns its URL, whether requests need the placeholder
/// `Authorization` header, and whether the bench created the queue (and must delete it).
async fn setup(
    endpoint: &Arc<Endpoint>,
    queue: Option<&str>,
    fifo: bool,
) -> Result<(String, bool, bool), String> {
    let fresh;
    let name = match queue {
        Some(q) => q,
        None => {
            let tag: String = rand::thread_rng()
                .sample_iter(&Alphanumeric)
                .take(10)
                .map(|c| char::from(c).to_ascii_lowercase())
                .collect();
            fresh = format!("loft-bench-{tag}{}", if fifo { ".fifo" } else { "" });
            &fresh
        }
    };
    let op = if queue.is_some() {
        "GetQueueUrl"
    } else {
        "CreateQueue"
    };
    // Unsigned first. A refusal that asks for a signature, or an answer that is not
    // SQS JSON (moto, for one, routes unsigned requests by guesswork and answers as
    // S3), gets one retry with the placeholder header, kept if the endpoint then
    // speaks SQS.
    let mut auth = false;
    let mut first = admin_call(endpoint, false, op, name, fifo).await;
    if let Err(e) = &first {
        if e.wants_auth() || matches!(e, CallError::BadResponse(_)) {
            let retry = admin_call(endpoint, true, op, name, fifo).await;
            if matches!(&retry, Ok(_) | Err(CallError::Service { .. }))
                && !matches!(&retry, Err(e) if e.wants_auth())
            {
                auth = true;
                first = retry;
            }
        }
    }
    let url = match first {
        Ok(url) => url,
        Err(e)
            if queue.is_some()
                && (e.kind().contains("NonExistentQueue")
                    || e.kind().contains("QueueDoesNotExist")) =>
        {
            admin_call(endpoint, auth, "CreateQueue", name, fifo)
                .await
                .map_err(|e| format!("cannot create queue {name}: {e}"))?
        }
        Err(e) => return Err(format!("{op} {name} against {}: {e}", endpoint.host)),
    };
    Ok((url, auth, queue.is_none()))
}

async fn admin_call(
    endpoint: &Arc<Endpoint>,
    auth: bool,
    op: &'static str,
    name: &str,
    fifo: bool,
) -> Result<String, CallError> {
    let mut c = Client::new(endpoint.clone(), auth);
    let input = QueueNameIn {
        queue_name: name,
        attributes: (fifo && op == "CreateQueue")
            .then(|| std::collections::BTreeMap::from([("FifoQueue", "true")])),
    };
    match tokio::time::timeout(ADMIN_CALL_TIMEOUT, c.call::<_, QueueUrlOut>(op, &input)).await {
        Ok(r) => r.map(|o| o.queue_url),
        Err(_) => Err(CallError::Transport(format!(
            "no answer within {} s",
            ADMIN_CALL_TIMEOUT.as_secs()
        ))),
    }
}

/// Prints a progress line on stderr once a second until aborted.
fn spawn_ticker(
    label: &'static str,
    progress: Arc<Progress>,
    watch: Option<Arc<ServerWatch>>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let start = Instant::now();
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        tick.tick().await;
        let (mut last_sent, mut last_received) = (0, 0);
        loop {
            tick.tick().await;
            let sent = progress.sent.load(Ordering::Relaxed);
            let received = progress.received.load(Ordering::Relaxed);
            let errors = progress.errors.load(Ordering::Relaxed);
            let mut line = format!(
                "loft bench: {label} {:>5.1} s  sent {sent} (+{})  received {received} (+{})  errors {errors}",
                start.elapsed().as_secs_f64(),
                sent - last_sent,
                received - last_received,
            );
            if let Some(Ok(kib)) = watch.as_ref().map(|w| w.sample_rss()) {
                line.push_str(&format!("  server RSS {:.1} MiB", kib as f64 / 1024.0));
            }
            eprintln!("{line}");
            (last_sent, last_received) = (sent, received);
        }
    })
}

/// Runs the scenario's phases and builds the report.
async fn measure(
    plan: &Plan,
    endpoint_text: &str,
    endpoint: Arc<Endpoint>,
    auth: bool,
    queue_url: &str,
    watch: Option<Arc<ServerWatch>>,
) -> Report {
    let start = Instant::now();
    let pad: String = rand::thread_rng()
        .sample_iter(&Alphanumeric)
        .take(256)
        .map(char::from)
        .collect();
    let base = Ctx {
        endpoint,
        auth,
        queue_url: queue_url.to_string(),
        size: plan.size,
        deadline: start + plan.limit,
        visibility_timeout: (plan.limit.as_secs() + 60).min(43_200),
        origin: start,
        pad: Arc::from(pad.as_str()),
        progress: Arc::new(Progress::default()),
        cut: AtomicBool::new(false),
        fifo: plan.fifo_groups.map(|groups| scenarios::FifoIds {
            groups,
            tag: rand::thread_rng()
                .sample_iter(&Alphanumeric)
                .take(8)
                .map(char::from)
                .collect(),
        }),
    };

    // receive-delete and fair first fill the queue, unmeasured but bounded by the same
    // deadline.
    let mut preload = None;
    let mut preload_cut = false;
    let mut target = plan.messages;
    if matches!(plan.scenario, Scenario::Fair | Scenario::ReceiveDelete) {
        let ctx = Arc::new(base.next_phase());
        let ticker = spawn_ticker("preload", ctx.progress.clone(), watch.clone());
        let t0 = Instant::now();
        let rec = if plan.scenario == Scenario::Fair {
            fair::preload(
                ctx.clone(),
                plan.connections,
                plan.messages,
                plan.batch,
                !plan.fair_baseline,
            )
            .await
        } else {
            let claims = Arc::new(AtomicU64::new(0));
            scenarios::run_workers(plan.connections, &ctx.progress, || {
                scenarios::send_worker(
                    ctx.clone(),
                    claims.clone(),
                    plan.messages,
                    Some(plan.batch),
                    false,
                )
            })
            .await
        };
        ticker.abort();
        let secs = t0.elapsed().as_secs_f64();
        target = ctx.progress.sent.load(Ordering::Relaxed);
        preload_cut = ctx.cut.load(Ordering::Relaxed);
        preload = Some(PreloadStats {
            messages: target,
            seconds: round3(secs),
            messages_per_second: round3(target as f64 / secs.max(1e-9)),
            errors: rec.errors(),
        });
    }

    let ctx = Arc::new(base.next_phase());
    let ticker = spawn_ticker(plan.scenario.name(), ctx.progress.clone(), watch.clone());
    let cpu_before = watch.as_ref().and_then(|w| w.cpu_seconds().ok());
    let own_cpu_before = server::own_cpu_seconds();
    let t0 = Instant::now();
    let mut tracker = None;
    let mut function_repeats = None;
    let mut fair_report = None;
    let mut rec: Recorder = match plan.scenario {
        Scenario::Send | Scenario::SendBatch => {
            let batch = (plan.scenario == Scenario::SendBatch).then_some(plan.batch);
            let claims = Arc::new(AtomicU64::new(0));
            scenarios::run_workers(plan.connections, &ctx.progress, || {
                scenarios::send_worker(ctx.clone(), claims.clone(), plan.messages, batch, false)
            })
            .await
        }
        Scenario::ReceiveDelete => {
            let t = Arc::new(scenarios::Tracker::new(target, ctx.progress.clone()));
            t.check_done();
            tracker = Some(t.clone());
            scenarios::run_workers(plan.connections, &ctx.progress, || {
                scenarios::consume_worker(ctx.clone(), t.clone(), false)
            })
            .await
        }
        Scenario::ProduceConsume => {
            let producers = plan.connections / 2;
            let (rec, t) = scenarios::produce_consume(
                ctx.clone(),
                plan.messages,
                producers,
                plan.connections - producers,
            )
            .await;
            tracker = Some(t);
            rec
        }
        Scenario::LongPoll => scenarios::long_poll(ctx.clone(), plan.messages).await,
        Scenario::Function => {
            // plan() refuses the function scenario without a function.
            let (name, listen) = plan.function.clone().unwrap_or_else(|| {
                (
                    String::new(),
                    std::net::SocketAddr::from(([127, 0, 0, 1], 9700)),
                )
            });
            let (rec, repeats) =
                function::run(ctx.clone(), &name, listen, plan.messages, plan.connections).await;
            function_repeats = Some(repeats);
            rec
        }
        Scenario::Fair => {
            let (rec, t, report) = fair::run(
                ctx.clone(),
                plan.connections - 1,
                target,
                !plan.fair_baseline,
            )
            .await;
            tracker = Some(t);
            fair_report = Some(report);
            rec
        }
    };
    let wall = t0.elapsed();
    ticker.abort();
    let cpu_after = watch.as_ref().and_then(|w| w.cpu_seconds().ok());
    let own_cpu = match (own_cpu_before, server::own_cpu_seconds()) {
        (Some(a), Some(b)) => Some(round3(b - a)),
        _ => None,
    };

    let elapsed = rec
        .last_work
        .map(|t| t.saturating_duration_since(t0))
        .filter(|d| !d.is_zero())
        .unwrap_or(wall)
        .as_secs_f64();
    let sent = ctx.progress.sent.load(Ordering::Relaxed);
    let received = ctx.progress.received.load(Ordering::Relaxed);
    let messages = match plan.scenario {
        Scenario::Send | Scenario::SendBatch => sent,
        _ => received,
    };
    let server = watch.as_ref().map(|w| {
        let rss = w.sample_rss().unwrap_or(0);
        let cpu = match (cpu_before, cpu_after) {
            (Some(a), Some(b)) => Some(b - a),
            _ => None,
        };
        ServerStats {
            pid: w.pid(),
            rss_kib: rss,
            rss_max_kib: w.rss_max_kib(),
            cpu_seconds: cpu.map(round3),
            messages_per_cpu_second: cpu
                .filter(|c| *c > 0.0)
                .map(|c| round3(messages as f64 / c)),
        }
    });
    let cut = preload_cut || ctx.cut.load(Ordering::Relaxed);
    let delivery = std::mem::take(&mut rec.delivery_micros);
    Report {
        scenario: plan.scenario.name(),
        endpoint: endpoint_text.to_string(),
        queue_url: queue_url.to_string(),
        connections: plan.connections,
        message_size_bytes: plan.size,
        fifo_groups: plan.fifo_groups,
        batch_size: matches!(plan.scenario, Scenario::SendBatch | Scenario::ReceiveDelete)
            .then_some(plan.batch),
        messages_requested: plan.messages,
        stopped_by: if cut { "duration-limit" } else { "messages" },
        elapsed_seconds: round3(elapsed),
        messages,
        messages_per_second: round3(messages as f64 / elapsed.max(1e-9)),
        sent,
        received,
        deleted: tracker.as_ref().map(|t| t.deleted.load(Ordering::Relaxed)),
        errors: rec.errors(),
        duplicates: tracker
            .as_ref()
            .map(|t| t.duplicates.load(Ordering::Relaxed))
            .or(function_repeats),
        redelivered_after_delete: tracker
            .as_ref()
            .map(|t| t.after_delete.load(Ordering::Relaxed)),
        error_kinds: std::mem::take(&mut rec.error_kinds),
        error_examples: std::mem::take(&mut rec.error_examples),
        calls: rec.call_stats(),
        delivery_latency: stats::LatencySummary::from_micros(delivery),
        delivery_latency_from: match plan.scenario {
            Scenario::ProduceConsume | Scenario::Function => Some("send request start"),
            Scenario::LongPoll => Some("send response"),
            _ => None,
        },
        preload,
        server,
        bench_cpu_seconds: own_cpu,
        fair: fair_report,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        bench: BenchArgs,
    }

    fn parse(args: &[&str]) -> Result<Plan, String> {
        let mut all = vec!["bench"];
        all.extend_from_slice(args);
        Cli::try_parse_from(all)
            .map_err(|e| e.to_string())?
            .bench
            .plan()
    }

    #[test]
    fn defaults() {
        let p = parse(&[]).unwrap();
        assert_eq!(p.endpoint.connect, "127.0.0.1:9324");
        assert_eq!(p.scenario, Scenario::Send);
        assert_eq!(p.connections, 32);
        assert_eq!(p.messages, 100_000);
        assert_eq!(p.size, 256);
        assert_eq!(p.batch, 10);
        assert_eq!(p.limit, Duration::from_secs(60));
        assert_eq!(p.queue, None);
        assert_eq!(p.fifo_groups, None);
        let p = parse(&["--queue", "orders.fifo", "--fifo-groups", "1000"]).unwrap();
        assert_eq!(p.fifo_groups, Some(1000));
        let p = parse(&["--scenario", "function", "--function", "f"]).unwrap();
        assert_eq!(
            p.function,
            Some(("f".to_owned(), "127.0.0.1:9700".parse().unwrap()))
        );
        let p = parse(&["--scenario", "long-poll"]).unwrap();
        assert_eq!(p.messages, 200);
        assert_eq!(p.connections, 2);
    }

    #[test]
    fn rejects_bad_arguments() {
        for bad in [
            &["--connections", "0"][..],
            &["--messages", "0"],
            &["--size", "0"],
            &["--size", "1048577"],
            &["--duration-limit", "0"],
            &["--endpoint", "https://127.0.0.1:9324"],
            &["--queue", "has space"],
            &["--queue", "orders.fifo"],
            &["--queue", "orders", "--fifo-groups", "4"],
            &["--fifo-groups", "0"],
            &["--fifo-groups", "4", "--scenario", "long-poll"],
            &["--scenario", "produce-consume", "--connections", "1"],
            &["--scenario", "fair", "--connections", "1"],
            &["--fair-baseline"],
            &["--scenario", "nope"],
            &["--scenario", "function"],
            &["--function", "f"],
        ] {
            assert!(parse(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn batches_fit_in_one_mebibyte() {
        assert_eq!(parse(&["--size", "104857"]).unwrap().batch, 10);
        assert_eq!(parse(&["--size", "300000"]).unwrap().batch, 3);
        assert_eq!(parse(&["--size", "1048576"]).unwrap().batch, 1);
    }
}
