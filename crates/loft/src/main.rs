//! The `loft` binary: `loft serve` runs the server on SQLite (the default) or, with
//! `--database-url postgres://...`, on PostgreSQL shared by several nodes; `loft bench`
//! load-tests an SQS endpoint; the admin commands ([`cli`]) talk to a running server.
//!
//! - [`allocator`]: the global allocator (mimalloc), set to give memory back after bursts.
//! - [`config`]: the `--config` file of `loft serve`.
//! - [`engine`]: the database `serve` opens (SQLite, PostgreSQL, or PostgreSQL cells) and
//!   its master key.
//! - [`cells`]: `loft cells status` and `loft cells move`, the cells of a deployment on several databases.
//! - [`cli`]: `loft queue|send|receive|topic|publish|subscribe|redrive|export|import|completions|probe`.
//! - [`logging`]: `--log-format text|json`.
//! - [`listeners`]: `--listen` addresses and which speak HTTPS (`--tls-cert`, `--tls-key`).
//! - [`runtimes`]: `--runtime multi-thread|per-core`, how `serve` schedules its work.
//! - [`workers`]: the background work `serve` starts beside its listeners.

mod allocator;
mod cells;
mod cli;
mod config;
mod engine;
mod listeners;
mod logging;
mod runtimes;
mod workers;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};

mod trust;

use loft_core::clock::SystemClock;
use loft_core::{Service, ServiceConfig};

/// Loft: Amazon SQS and SNS in one small binary, on SQLite.
#[derive(Parser, Debug)]
#[command(name = "loft", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,

    /// Log line format on stderr (filter with LOFT_LOG, e.g. `info,loft::access=warn`).
    #[arg(
        long,
        env = "LOFT_LOG_FORMAT",
        value_enum,
        default_value_t,
        global = true
    )]
    log_format: logging::LogFormat,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run the server. Every listener serves every API: the seeds' REST/JSON routes
    /// (/queues, /topics, /health) and the AWS SQS and SNS protocols.
    Serve(Box<ServeArgs>),
    /// Load-test any SQS endpoint (AWS JSON protocol) and report throughput and latency.
    Bench(loft_bench::BenchArgs),
    /// The PostgreSQL cells of a deployment on several databases (a preview):
    /// `loft cells status`, `loft cells move QUEUE --to N`.
    Cells(cells::CellsArgs),
    #[command(flatten)]
    Admin(cli::Command),
}

#[derive(clap::Args, Debug)]
struct ServeArgs {
    /// TOML file of server settings and of queues, topics and subscriptions to create at
    /// start (docs/configuration.md). Flags and environment variables override it.
    #[arg(long, env = "LOFT_CONFIG")]
    config: Option<PathBuf>,

    /// Address to listen on; repeat for several listeners
    /// (e.g. --listen 0.0.0.0:9003 --listen 0.0.0.0:9004). Port 0 picks a free port.
    /// With --tls-cert and --tls-key every listener speaks HTTPS, except one written
    /// http://IP:PORT; https://IP:PORT requires them.
    #[arg(
        long = "listen",
        env = "LOFT_LISTEN",
        value_delimiter = ',',
        default_value = "127.0.0.1:9324"
    )]
    listen: Vec<listeners::ListenAddr>,

    /// PEM certificate chain (the server's certificate first) for HTTPS listeners;
    /// with --tls-key, every listener not written http://... speaks HTTPS.
    #[arg(long, env = "LOFT_TLS_CERT")]
    tls_cert: Option<PathBuf>,

    /// PEM private key of --tls-cert (PKCS#8, PKCS#1 RSA or SEC1 EC).
    #[arg(long, env = "LOFT_TLS_KEY")]
    tls_key: Option<PathBuf>,

    /// SQLite database file; created when missing. Ignored with --database-url.
    #[arg(long, env = "LOFT_DB", default_value = "./loft.db")]
    db: PathBuf,

    #[command(flatten)]
    database: engine::DatabaseUrls,

    /// Most PostgreSQL connections this node opens (plus one for wake-ups).
    #[arg(long, env = "LOFT_DATABASE_POOL_SIZE", default_value_t = loft_store::postgres::DEFAULT_POOL_SIZE)]
    database_pool_size: usize,

    /// Master key of SQS encryption at rest (SqsManagedSseEnabled, KmsMasterKeyId): a file
    /// of 32 random bytes in base64, made (mode 0600, its folder 0700) at start when
    /// missing and no encrypted message is stored (the start is refused when one is, or
    /// when the key is not the database's: its check value differs). Default: loft-sse/master.key beside --db on SQLite; on PostgreSQL, a key
    /// kept in the database (made by the first node), shared by every node. Nodes sharing
    /// a PostgreSQL database must all use the same key: give this to all of them or none.
    #[arg(long, env = "LOFT_SSE_KEY_FILE")]
    sse_key_file: Option<PathBuf>,

    /// How much an acknowledged write survives: `process` (survives kill -9 of Loft) or
    /// `fsync` (on disk before the response).
    #[arg(long, env = "LOFT_DURABILITY", value_enum, default_value_t = DurabilityArg::Process)]
    durability: DurabilityArg,

    /// How requests are scheduled: `multi-thread` (one tokio runtime, a worker thread per
    /// core taking any task) or `per-core` (a current-thread runtime per core, each
    /// accepting from every --listen socket itself, so a request is served on the thread
    /// that accepted it). See docs/benchmarks/history.md for what each costs.
    #[arg(long, env = "LOFT_RUNTIME", value_enum, default_value_t = runtimes::RuntimeMode::MultiThread)]
    runtime: runtimes::RuntimeMode,

    /// Account id used in queue URLs and ARNs.
    #[arg(long, env = "LOFT_ACCOUNT_ID", default_value = "000000000000")]
    account_id: String,

    /// Region used in ARNs.
    #[arg(long, env = "LOFT_REGION", default_value = "us-east-1")]
    region: String,

    /// Base URL clients and SNS subscribers reach Loft at; SubscribeURL, UnsubscribeURL and
    /// SigningCertURL are built from it. Default: the first listener's scheme (http or
    /// https) and address.
    #[arg(long, env = "LOFT_ADVERTISED_URL")]
    advertised_url: Option<String>,

    /// Origin (scheme://host[:port], or * for any) whose web pages may call Loft from a
    /// browser (CORS); repeat for several. Default: none, and no CORS headers at all.
    #[arg(
        long = "cors-allowed-origin",
        env = "LOFT_CORS_ALLOWED_ORIGINS",
        value_delimiter = ','
    )]
    cors_allowed_origins: Vec<String>,

    /// LocalStack drop-in: also listen on --localstack-port (on the first --listen
    /// address's IP, unless a --listen address is that port already), answer `GET
    /// /_localstack/health` in LocalStack's shape, and print `Ready.` on stdout once
    /// serving (the line LocalStack's testcontainers modules wait for). On in the
    /// container image (docs/container.md). `LOFT_LOCALSTACK_COMPAT=1` (or `true`, `yes`,
    /// `on`) turns it on, `0` (or `false`, `no`, `off`) off.
    #[arg(
        long,
        env = "LOFT_LOCALSTACK_COMPAT",
        value_parser = clap::builder::BoolishValueParser::new()
    )]
    localstack_compat: bool,

    /// The port --localstack-compat adds a listener on: LocalStack's edge port, 4566, by
    /// default; 0 picks a free port.
    #[arg(long, env = "LOFT_LOCALSTACK_PORT", default_value_t = LOCALSTACK_PORT)]
    localstack_port: u16,
    /// Seconds between two samples of every queue's and topic's counts and rates for the
    /// web console's charts (fractions allowed, 0.05 to 3600); each node keeps its last 120
    /// samples in memory: an hour at the default.
    #[arg(long, env = "LOFT_CONSOLE_SAMPLE_INTERVAL", default_value_t = loft_core::service::history::DEFAULT_SAMPLE_INTERVAL.as_secs_f64())]
    console_sample_interval: f64,

    /// Create a missing queue, with the default attributes (a name ending in .fifo makes a
    /// FIFO queue), when GetQueueUrl, SendMessage, SendMessageBatch or ReceiveMessage
    /// names it, as ElasticMQ's autoCreateQueues does; the caller needs sqs:CreateQueue.
    /// Off by default (AWS answers QueueDoesNotExist).
    #[arg(long, env = "LOFT_AUTO_CREATE_QUEUES")]
    auto_create_queues: bool,

    #[command(flatten)]
    trust: trust::TrustArgs,
}

/// LocalStack's edge port, where its clients look for it (`http://localhost:4566`).
const LOCALSTACK_PORT: u16 = 4566;

/// LocalStack's ready line (`READY_MARKER_OUTPUT`, localstack-core/localstack/constants.py),
/// printed alone on stdout with --localstack-compat once every listener serves.
const LOCALSTACK_READY_LINE: &str = "Ready.";

/// The addresses `serve` binds: `listen`, and with `compat` one more on the first
/// address's IP and scheme at `port`, unless a listener of `listen` is on that port
/// already (port 0 always adds one, on a free port).
fn listen_addrs(
    listen: &[listeners::ListenAddr],
    compat: bool,
    port: u16,
) -> Vec<listeners::ListenAddr> {
    let mut addrs = listen.to_vec();
    if compat && (port == 0 || !listen.iter().any(|l| l.addr.port() == port)) {
        if let Some(first) = listen.first() {
            addrs.push(listeners::ListenAddr {
                addr: std::net::SocketAddr::new(first.addr.ip(), port),
                scheme: first.scheme,
            });
        }
    }
    addrs
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum DurabilityArg {
    Process,
    Fsync,
}

fn main() -> std::process::ExitCode {
    allocator::tune();
    let matches = Cli::command().get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    // Kept to the end of `main`: dropping it flushes the spans not yet exported.
    let _telemetry = logging::init(cli.log_format);
    let mode = match &cli.command {
        Command::Serve(args) => args.runtime,
        _ => runtimes::RuntimeMode::MultiThread,
    };
    let runtime = match runtimes::main_runtime(mode) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("loft: cannot start the runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let result = match cli.command {
        Command::Serve(mut args) => {
            let file = match args.config.as_deref().map(config::load).transpose() {
                Ok(f) => f,
                Err(e) => {
                    eprintln!("loft: {e}");
                    return std::process::ExitCode::FAILURE;
                }
            };
            if let Some(f) = &file {
                *args = serve_args_with_file(&f.server, std::env::args_os())
                    .unwrap_or_else(|e| e.exit());
            }
            let cores = match mode {
                runtimes::RuntimeMode::PerCore => match runtimes::Cores::start_per_core() {
                    Ok(c) => {
                        tracing::info!(
                            runtimes = c.handles().len() + 1,
                            "per-core runtime: a current-thread runtime per core, each \
                             accepting from every listener"
                        );
                        c
                    }
                    Err(e) => {
                        eprintln!("loft: {e}");
                        return std::process::ExitCode::FAILURE;
                    }
                },
                runtimes::RuntimeMode::MultiThread => runtimes::Cores::none(),
            };
            let result = runtime.block_on(serve(*args, file, cores.handles()));
            cores.stop();
            result
        }
        Command::Bench(args) => runtime.block_on(loft_bench::run(args)),
        Command::Cells(args) => runtime.block_on(cells::run(args)),
        Command::Admin(command) => runtime
            .block_on(cli::run(command, Cli::command))
            .map_err(|e| e.to_string()),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("loft: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// `loft serve`'s arguments parsed from `argv` again, with the config file's `[server]`
/// values as their defaults ([`config::ServerSettings::as_defaults`]): a flag wins, then
/// its environment variable, then the file, then the default declared on the argument.
///
/// Errors: clap's, for an `argv` that is not `loft serve ...` or a value its parser refuses.
fn serve_args_with_file<I, T>(
    file: &config::ServerSettings,
    argv: I,
) -> Result<ServeArgs, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let command = Cli::command().mut_subcommand("serve", |serve| file.as_defaults(serve));
    let matches = command.try_get_matches_from(argv)?;
    match Cli::from_arg_matches(&matches)?.command {
        Command::Serve(mut args) => {
            // The file's `[[cells]]` are `--database-urls`' defaults; a `--database-url`
            // (flag or LOFT_DATABASE_URL) wins over them, as over any file value.
            let from_file = matches.subcommand_matches("serve").is_some_and(|m| {
                m.value_source("database_urls") == Some(clap::parser::ValueSource::DefaultValue)
            });
            if from_file && !args.database.database_url.is_empty() {
                args.database.database_urls.clear();
            }
            Ok(*args)
        }
        _ => Err(clap::Error::new(clap::error::ErrorKind::MissingSubcommand)),
    }
}

/// Runs the server until a shutdown signal, then drains and closes it. `cores`: the other
/// runtimes of `--runtime per-core` (empty otherwise), each given its own listener on
/// every address ([`runtimes`]).
async fn serve(
    args: ServeArgs,
    file: Option<config::Config>,
    cores: Vec<tokio::runtime::Handle>,
) -> Result<(), String> {
    // Before anything is announced: a SIGTERM from then on shuts down gracefully.
    let stop_signal = shutdown_signal();
    let open_files = raise_open_files_limit();
    let file_keys = file
        .as_ref()
        .map(|f| f.credentials.clone())
        .unwrap_or_default();
    let trust = args.trust.load(file_keys)?;
    let sample_every = args.console_sample_interval;
    if !(0.05..=3600.0).contains(&sample_every) {
        return Err(format!(
            "--console-sample-interval: {sample_every} is not a number of seconds from 0.05 to 3600"
        ));
    }
    let cors_origins = args
        .cors_allowed_origins
        .iter()
        .filter(|o| !o.trim().is_empty())
        .map(|o| loft_server::cors::check_origin(o))
        .collect::<Result<Vec<_>, _>>()?;
    let tls = listeners::TlsFiles::pair(args.tls_cert.as_deref(), args.tls_key.as_deref())?;
    // Before the database: a bad certificate or a busy port fails before anything opens.
    let addrs = listen_addrs(&args.listen, args.localstack_compat, args.localstack_port);
    let listeners = listeners::bind(&addrs, tls.as_ref()).await?;
    let mut on_cores = Vec::new();
    for core in &cores {
        on_cores.extend(
            listeners::twins(&listeners)?
                .into_iter()
                .map(|l| l.on_runtime(core.clone())),
        );
    }
    let engine = engine::Engine::open(&args).await?;
    let store = engine.store();
    let described = engine.describe(&args);
    let advertised_url = match args.advertised_url {
        Some(u) => u.trim_end_matches('/').to_owned(),
        None => listeners[0].local_url().map_err(|e| e.to_string())?,
    };
    let config = trust.configure(ServiceConfig {
        account_id: args.account_id,
        region: args.region,
        advertised_url,
        auto_create_queues: args.auto_create_queues,
        functions: file
            .as_ref()
            .map(|f| f.functions.clone())
            .unwrap_or_default(),
        ..ServiceConfig::default()
    });
    // SNS signing key and certificate: beside the database, made on first use.
    let key_dir = args
        .db
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."))
        .join("loft-sns-signing");
    let signer = Arc::new(loft_server::sns_signing::LazySigner::new(key_dir));
    for w in signer.permission_warnings() {
        tracing::warn!("{w}");
    }
    let service = Service::new(
        store.clone(),
        Arc::new(SystemClock),
        config,
        Some(signer.clone() as Arc<dyn loft_core::service::MessageSigner>),
    );
    if let Some(file) = &file {
        file.provision(&service).await.map_err(|e| e.to_string())?;
        // A reset (`POST /_loft/reset`) makes the file's resources again.
        let file = Arc::new(file.clone());
        service.set_provisioner(Arc::new(move |svc| {
            let file = file.clone();
            Box::pin(async move {
                file.provision(svc)
                    .await
                    .map(drop)
                    .map_err(|e| e.to_string())
            })
        }));
    }
    for l in &listeners {
        if let Ok(addr) = l.local_addr() {
            // One line per listener on stdout, for scripts and tests that bind port 0.
            println!("loft listening on {}://{addr}", l.scheme());
        }
    }
    tracing::info!(db = %described, "loft started");
    trust.log_mode();
    let deliveries = workers::Deliveries::start(&service);
    let periodic = workers::Periodic::start(&service, Duration::from_secs_f64(sample_every));
    let mut app = loft_server::App::new(service.clone(), Some(signer), trust.auth.clone());
    if args.localstack_compat {
        app = app.with_localstack_compat();
    }
    let app = app.with_cors(&cors_origins);
    if !cors_origins.is_empty() {
        tracing::info!(origins = %cors_origins.join(","), "CORS: browsers may call Loft from these origins");
    }
    let stopping = service.clone();
    let stop_polling = deliveries.stop_polling();
    let shutdown = async move {
        stop_signal.await;
        stopping.begin_shutdown();
        stop_polling();
    };
    if let Some(limit) = open_files {
        let wanted = trust.server.max_connections as u64 + OPEN_FILES_MARGIN;
        if limit < wanted {
            tracing::warn!(
                open_files_limit = limit,
                max_connections = trust.server.max_connections,
                "the open-files limit (RLIMIT_NOFILE, raised to its hard limit) is below \
                 --max-connections plus {OPEN_FILES_MARGIN}: connections past it will be refused \
                 by the system; raise the hard limit (ulimit -Hn, LimitNOFILE=) or lower \
                 --max-connections"
            );
        }
    }
    let mut listeners = listeners;
    listeners.extend(on_cores);
    if args.localstack_compat {
        // Every listener is bound and accepting into its backlog; `serve` takes them now.
        println!("{LOCALSTACK_READY_LINE}");
    }
    loft_server::listen::serve(listeners, app, shutdown, trust.server)
        .await
        .map_err(|e| e.to_string())?;
    periodic.abort();
    // The move tasks this node ran (begin_shutdown stopped them) go to whichever node
    // looks next, this one restarted included, without waiting for their leases to end.
    if let Err(e) = service.sqs().release_move_tasks().await {
        tracing::warn!(error = %e, "could not release the message-move tasks of this node");
    }
    // Likewise the message replays: the next node resumes each after its last batch.
    if let Err(e) = service.sns().release_replays().await {
        tracing::warn!(error = %e, "could not release the message replays of this node");
    }
    deliveries.finish().await;
    engine.close().await;
    tracing::info!("loft stopped");
    #[cfg(feature = "count-allocations")]
    eprintln!(
        "loft: {} allocations since start",
        allocator::counting::allocations()
    );
    Ok(())
}

/// Raises the soft limit on open files (`RLIMIT_NOFILE`) to the hard limit, which an
/// unprivileged process may do: every connection and every long poll (`WaitTimeSeconds`)
/// holds a socket, and a soft limit of 1,024 (a common default) would refuse connections
/// long before `--max-connections` (10,000 by default). Returns the soft limit reached
/// (`None` when it cannot be read, or off Unix); `serve` warns when it is below
/// `--max-connections` plus [`OPEN_FILES_MARGIN`] (10,000 long polls at once: BENCHMARKS.md,
/// long polls).
fn raise_open_files_limit() -> Option<u64> {
    #[cfg(not(unix))]
    return None;
    #[cfg(unix)]
    {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit and setrlimit read and write the struct we pass.
        unsafe {
            if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
                return None;
            }
            let before = lim.rlim_cur;
            if lim.rlim_cur < lim.rlim_max {
                lim.rlim_cur = lim.rlim_max;
                if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                    lim.rlim_cur = before;
                }
            }
            tracing::debug!(
                soft = lim.rlim_cur,
                hard = lim.rlim_max,
                before,
                "open files limit"
            );
        }
        // rlim_t is u64 on Linux, not on every Unix.
        #[allow(clippy::unnecessary_cast)]
        Some(lim.rlim_cur as u64)
    }
}

/// Files Loft keeps open besides its connections: listeners, the database and its WAL,
/// PostgreSQL connections, log output.
const OPEN_FILES_MARGIN: u64 = 64;

/// Resolves on SIGTERM or Ctrl-C. The handlers are installed when this is called, not when
/// the future is first polled: call it before announcing the listeners, so a SIGTERM that
/// follows the announcement at once is still a graceful shutdown.
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    let ctrl_c = tokio::signal::ctrl_c();
    async move {
        #[cfg(unix)]
        let term_wait = async {
            match term.as_mut() {
                Some(s) => {
                    s.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        #[cfg(not(unix))]
        let term_wait = std::future::pending::<()>();
        tokio::select! {
            _ = ctrl_c => {},
            _ = term_wait => {},
        }
        tracing::info!("shutting down");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    #[allow(clippy::unnecessary_cast)] // rlim_t is u64 on Linux, not on every Unix
    fn the_open_files_limit_is_raised_to_the_hard_limit() {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: lowers this test process's own soft limit, then reads it back.
        unsafe {
            assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim), 0);
            let hard = lim.rlim_max;
            lim.rlim_cur = 256.min(hard);
            assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &lim), 0);
            let reached = raise_open_files_limit().expect("the limit is readable");
            assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim), 0);
            assert_eq!(lim.rlim_cur, hard, "soft limit raised to the hard one");
            assert_eq!(reached, hard as u64);
        }
    }

    /// --localstack-compat adds LocalStack's port on the first address's IP and scheme,
    /// unless a --listen address already has that port; without it nothing is added.
    #[test]
    fn localstack_compat_adds_its_port_unless_listened_on() {
        let addr = |s: &str| s.parse::<listeners::ListenAddr>().unwrap();
        let strings = |v: Vec<listeners::ListenAddr>| {
            v.into_iter().map(|a| a.to_string()).collect::<Vec<_>>()
        };
        assert_eq!(
            strings(listen_addrs(&[addr("0.0.0.0:9324")], true, 4566)),
            ["0.0.0.0:9324", "0.0.0.0:4566"]
        );
        assert_eq!(
            strings(listen_addrs(&[addr("0.0.0.0:9324")], false, 4566)),
            ["0.0.0.0:9324"]
        );
        assert_eq!(
            strings(listen_addrs(
                &[addr("127.0.0.1:9324"), addr("127.0.0.1:4566")],
                true,
                4566
            )),
            ["127.0.0.1:9324", "127.0.0.1:4566"]
        );
        assert_eq!(
            strings(listen_addrs(&[addr("http://[::1]:0")], true, 0)),
            ["http://[::1]:0", "http://[::1]:0"]
        );
    }

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }

    /// One --database-url is one database (today's PostgreSQL store); repeated, or as the
    /// comma-separated --database-urls, they are cells in the order given; both forms
    /// together are refused.
    #[test]
    fn database_urls_repeat_or_come_as_a_list() {
        let urls = |argv: &[&str]| serve_with(argv, "").database.urls();
        assert_eq!(urls(&["loft", "serve"]).unwrap(), Vec::<String>::new());
        assert_eq!(
            urls(&["loft", "serve", "--database-url", "postgres://a/x"]).unwrap(),
            ["postgres://a/x"]
        );
        assert_eq!(
            urls(&[
                "loft",
                "serve",
                "--database-url",
                "postgres://a/x",
                "--database-url",
                "postgres://b/y"
            ])
            .unwrap(),
            ["postgres://a/x", "postgres://b/y"]
        );
        assert_eq!(
            urls(&[
                "loft",
                "serve",
                "--database-urls",
                "postgres://a/x, postgres://b/y"
            ])
            .unwrap(),
            ["postgres://a/x", "postgres://b/y"]
        );
        assert!(urls(&[
            "loft",
            "serve",
            "--database-url",
            "postgres://a/x",
            "--database-urls",
            "postgres://b/y"
        ])
        .is_err());
    }

    /// The file's `[[cells]]` are the cells when no flag or environment variable gives
    /// database URLs; `--database-url` and `--database-urls` win over them.
    #[test]
    fn the_files_cells_give_way_to_flags() {
        let file = "[[cells]]\ndatabase_url = \"postgres://f/1\"\n\
                    [[cells]]\ndatabase_url = \"postgres://f/2\"\n";
        let urls = |argv: &[&str]| serve_with(argv, file).database.urls().unwrap();
        assert_eq!(
            urls(&["loft", "serve"]),
            ["postgres://f/1", "postgres://f/2"]
        );
        assert_eq!(
            urls(&["loft", "serve", "--database-url", "postgres://a/x"]),
            ["postgres://a/x"]
        );
        assert_eq!(
            urls(&[
                "loft",
                "serve",
                "--database-urls",
                "postgres://a/x,postgres://b/y"
            ]),
            ["postgres://a/x", "postgres://b/y"]
        );
    }

    /// `argv` (`loft serve ...`) with the config file `text`'s `[server]` section.
    fn serve_with(argv: &[&str], text: &str) -> ServeArgs {
        let file = config::parse(std::path::Path::new("loft.toml"), text).expect("file");
        serve_args_with_file(&file.server, argv).expect("arguments")
    }

    /// SQS FIFO quotas: on by default, off with `--no-sqs-quotas` or the file's
    /// `sqs_quotas = false`, and the flag wins over a file that says `true`.
    #[test]
    fn sqs_quotas_are_on_unless_switched_off() {
        let quotas = |argv: &[&str], file: &str| {
            serve_with(argv, &format!("[server]\n{file}\n"))
                .trust
                .load(Default::default())
                .expect("trust")
                .limits
                .sqs_quotas
        };
        assert!(quotas(&["loft", "serve"], ""));
        assert!(!quotas(&["loft", "serve", "--no-sqs-quotas"], ""));
        assert!(!quotas(&["loft", "serve"], "sqs_quotas = false"));
        assert!(quotas(&["loft", "serve"], "sqs_quotas = true"));
        assert!(!quotas(
            &["loft", "serve", "--no-sqs-quotas"],
            "sqs_quotas = true"
        ));
    }

    /// `--metrics-auth`: off by default, on with the flag or the file's
    /// `metrics_auth = true`; refused without credentials, which it needs.
    #[test]
    fn metrics_auth_is_off_unless_switched_on_and_needs_credentials() {
        let load = |argv: &[&str], file: &str, keys: &str| {
            let args = serve_with(argv, &format!("[server]\n{file}\n"));
            let keys = loft_server::auth::Credentials::parse(keys).expect("keys");
            args.trust.load(keys).map(|t| t.auth.metrics_auth())
        };
        let keys = "AKID:SECRET";
        assert_eq!(load(&["loft", "serve"], "", keys), Ok(false));
        assert_eq!(
            load(&["loft", "serve", "--metrics-auth"], "", keys),
            Ok(true)
        );
        assert_eq!(
            load(&["loft", "serve"], "metrics_auth = true", keys),
            Ok(true)
        );
        let refused = load(&["loft", "serve", "--metrics-auth"], "", "").unwrap_err();
        assert!(refused.contains("needs credentials"), "{refused}");
    }

    /// A `[server]` value is its argument's: the file's when no flag is given, the flag's
    /// over the file's, and the declared default when neither says anything.
    #[test]
    fn the_file_sets_serve_arguments_under_their_flags() {
        let file = "[server]\nlisten = [\"127.0.0.1:7001\", \"https://0.0.0.0:7002\"]\n\
                    max_connections_per_ip = 7\nrequest_timeout = 2.5\ndurability = \"fsync\"\n\
                    db = \"data/x.db\"\ntrusted_proxies = [\"10.0.0.0/8\"]\n\
                    auto_create_queues = true\n";
        let args = serve_with(&["loft", "serve"], file);
        let listen: Vec<String> = args.listen.iter().map(|a| a.to_string()).collect();
        assert_eq!(listen, ["127.0.0.1:7001", "https://0.0.0.0:7002"]);
        assert_eq!(args.trust.max_connections_per_ip, Some(7));
        assert_eq!(args.trust.request_timeout, 2.5);
        assert!(matches!(args.durability, DurabilityArg::Fsync));
        assert_eq!(args.db, PathBuf::from("data/x.db"));
        assert_eq!(
            args.trust.trusted_proxies,
            ["10.0.0.0/8".parse::<ipnet::IpNet>().unwrap()]
        );
        assert!(args.auto_create_queues);
        let args = serve_with(
            &[
                "loft",
                "serve",
                "--listen",
                "127.0.0.1:7003",
                "--max-connections-per-ip",
                "9",
                "--durability",
                "process",
            ],
            file,
        );
        let listen: Vec<String> = args.listen.iter().map(|a| a.to_string()).collect();
        assert_eq!(listen, ["127.0.0.1:7003"], "the flag wins");
        assert_eq!(args.trust.max_connections_per_ip, Some(9));
        assert!(matches!(args.durability, DurabilityArg::Process));
        let args = serve_with(&["loft", "serve"], "");
        assert_eq!(args.trust.max_connections_per_ip, None, "the default");
        assert_eq!(args.trust.max_connections, 10_000);
        assert_eq!(args.db, PathBuf::from("./loft.db"));
    }

    /// Every `[server]` key sets an argument of `loft serve` (the one that declares its
    /// flag, environment variable and default), one the file may set.
    #[test]
    fn every_server_key_names_a_serve_argument() {
        let cli = Cli::command();
        let serve = cli.find_subcommand("serve").expect("serve");
        for (key, check) in config::SERVER_KEYS {
            let id = match check {
                config::Check::Negates(id) => id,
                _ => key,
            };
            assert!(
                serve.get_arguments().any(|a| a.get_id() == *id),
                "[server] {key}: loft serve has no argument {id}"
            );
        }
    }

    /// docs/running.md names every flag of `loft serve` and its environment variable, and
    /// docs/configuration.md every `[server]` key: the declarations on `ServeArgs` and
    /// `TrustArgs` are the source, the documents must follow.
    #[test]
    fn the_documentation_names_every_serve_flag_and_server_key() {
        let docs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs");
        let running = std::fs::read_to_string(docs.join("running.md")).expect("running.md");
        let configuration =
            std::fs::read_to_string(docs.join("configuration.md")).expect("configuration.md");
        let cli = Cli::command();
        let serve = cli.find_subcommand("serve").expect("serve");
        let mut missing = Vec::new();
        for arg in serve.get_arguments().filter(|a| !a.is_hide_set()) {
            if let Some(long) = arg.get_long() {
                if !running.contains(&format!("`--{long}")) {
                    missing.push(format!("--{long}"));
                }
            }
            if let Some(env) = arg.get_env() {
                let env = env.to_string_lossy();
                if !running.contains(&format!("`{env}`")) && !running.contains(&format!("`{env} "))
                {
                    missing.push(env.into_owned());
                }
            }
        }
        assert!(missing.is_empty(), "docs/running.md lacks {missing:?}");
        for (key, _) in config::SERVER_KEYS {
            assert!(
                configuration.contains(&format!("`{key}")),
                "docs/configuration.md lacks the [server] key {key}"
            );
        }
    }
}
