//! The `loft` binary: `loft serve` runs the server on SQLite; `loft bench` load-tests
//! an SQS endpoint.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};

mod trust;

/// mimalloc: perf showed glibc malloc at about a tenth of the server's CPU under load.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
use loft_core::clock::SystemClock;
use loft_core::{Service, ServiceConfig};
use loft_store::{Durability, SqliteStore};
use tokio::net::TcpListener;

/// Loft: Amazon SQS and SNS in one small binary, on SQLite.
#[derive(Parser, Debug)]
#[command(name = "loft", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run the server. Every listener serves every API: the seeds' REST/JSON routes
    /// (/queues, /topics, /health) and the AWS SQS and SNS protocols.
    Serve(ServeArgs),
    /// Load-test any SQS endpoint (AWS JSON protocol) and report throughput and latency.
    Bench(loft_bench::BenchArgs),
}

#[derive(clap::Args, Debug)]
struct ServeArgs {
    /// Address to listen on; repeat for several listeners
    /// (e.g. --listen 0.0.0.0:9003 --listen 0.0.0.0:9004). Port 0 picks a free port.
    #[arg(
        long = "listen",
        env = "LOFT_LISTEN",
        value_delimiter = ',',
        default_value = "127.0.0.1:9324"
    )]
    listen: Vec<SocketAddr>,

    /// SQLite database file; created when missing.
    #[arg(long, env = "LOFT_DB", default_value = "./loft.db")]
    db: PathBuf,

    /// How much an acknowledged write survives: `process` (survives kill -9 of Loft) or
    /// `fsync` (on disk before the response).
    #[arg(long, env = "LOFT_DURABILITY", value_enum, default_value_t = DurabilityArg::Process)]
    durability: DurabilityArg,

    /// Account id used in queue URLs and ARNs.
    #[arg(long, env = "LOFT_ACCOUNT_ID", default_value = "000000000000")]
    account_id: String,

    /// Region used in ARNs.
    #[arg(long, env = "LOFT_REGION", default_value = "us-east-1")]
    region: String,

    /// Base URL clients and SNS subscribers reach Loft at; SubscribeURL, UnsubscribeURL and
    /// SigningCertURL are built from it. Default: http:// and the first listener's address.
    #[arg(long, env = "LOFT_ADVERTISED_URL")]
    advertised_url: Option<String>,

    #[command(flatten)]
    trust: trust::TrustArgs,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum DurabilityArg {
    Process,
    Fsync,
}

fn main() -> std::process::ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("LOFT_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("loft: cannot start the runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let result = match cli.command {
        Command::Serve(args) => runtime.block_on(serve(args)),
        Command::Bench(args) => runtime.block_on(loft_bench::run(args)),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("loft: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn serve(args: ServeArgs) -> Result<(), String> {
    let durability = match args.durability {
        DurabilityArg::Process => Durability::Process,
        DurabilityArg::Fsync => Durability::Fsync,
    };
    let trust = args.trust.load()?;
    let store = Arc::new(SqliteStore::open(&args.db, durability)?);
    let mut listeners = Vec::new();
    for addr in &args.listen {
        let l = TcpListener::bind(addr)
            .await
            .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
        listeners.push(l);
    }
    if listeners.is_empty() {
        return Err("at least one --listen address is required".into());
    }
    let advertised_url = match args.advertised_url {
        Some(u) => u.trim_end_matches('/').to_owned(),
        None => {
            let mut addr = listeners[0].local_addr().map_err(|e| e.to_string())?;
            if addr.ip().is_unspecified() {
                addr.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
            }
            format!("http://{addr}")
        }
    };
    let config = trust.configure(ServiceConfig {
        account_id: args.account_id,
        region: args.region,
        advertised_url,
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
    let service = Service::new(
        store.clone(),
        Arc::new(SystemClock),
        config,
        Some(signer.clone() as Arc<dyn loft_core::service::MessageSigner>),
    );
    for l in &listeners {
        if let Ok(addr) = l.local_addr() {
            // One line per listener on stdout, for scripts and tests that bind port 0.
            println!("loft listening on http://{addr}");
        }
    }
    tracing::info!(db = %args.db.display(), "loft started");
    let delivery = tokio::spawn(loft_server::delivery::run(service.clone()));
    let reaper = {
        let service = service.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(60));
            loop {
                tick.tick().await;
                if let Err(e) = service.expire_messages().await {
                    tracing::warn!(error = %e, "retention sweep failed");
                }
            }
        })
    };
    let router = loft_server::router_with(service.clone(), Some(signer), trust.auth.clone());
    let stopping = service.clone();
    let shutdown = async move {
        shutdown_signal().await;
        stopping.begin_shutdown();
    };
    loft_server::listen::serve(listeners, router, shutdown, trust.server)
        .await
        .map_err(|e| e.to_string())?;
    reaper.abort();
    delivery.abort();
    store.close().await;
    tracing::info!("loft stopped");
    Ok(())
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
    tracing::info!("shutting down");
}
