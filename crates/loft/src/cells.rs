//! `loft cells status`: one line per cell of a deployment on several PostgreSQL databases
//! (`loft_store::cells`, a preview): its number, its URL without the password, and how
//! many queues, topics and messages it holds. `loft cells move QUEUE --to N`: moves a
//! queue to cell N while the servers run (`loft_store::cells::moving`). Both work on the
//! databases directly, not through a running server, and find them as `loft serve` does:
//! the repeated `--database-url`, `--database-urls` / `LOFT_DATABASE_URLS`, or else the
//! `[[cells]]` of the `--config` file (`LOFT_CONFIG`), a flag or environment variable
//! winning over the file (docs/deployment.md "Cells (preview)").

use clap::{Args, Subcommand};
use loft_core::names::{scoped_key, Scope};
use loft_store::{CellStore, PgOptions, PgStore};

/// `loft cells ...`.
#[derive(Args, Debug)]
pub struct CellsArgs {
    #[command(subcommand)]
    command: CellsCommand,
}

#[derive(Subcommand, Debug)]
enum CellsCommand {
    /// Print one line per cell: number, URL (without password), queues, topics, messages;
    /// then, when queues are moving, one line per move: queue, from, to, last step done,
    /// owner (the run holding it), its lease, and its age.
    Status(StatusArgs),
    /// Move a queue to another cell, with its messages (visible, in flight, delayed),
    /// attributes, tags, FIFO deduplication window and SequenceNumbers, and move tasks.
    ///
    /// While it runs (about as long as copying the queue takes) requests that change the
    /// queue get 503 ServiceUnavailable, which SDKs retry; reads still answer. After it,
    /// receipt handles issued before the move are ReceiptHandleIsInvalid and messages that
    /// were in flight come back when their visibility timeout ends. If the command (or a
    /// database) fails midway, the queue stays whole in one cell, paused until the command
    /// is run again, which finishes the move, or until a running node's sweep takes it over
    /// (30 s after the run stopped) and finishes it (docs/deployment.md "Moving a queue").
    Move(MoveArgs),
}

#[derive(Args, Debug)]
struct MoveArgs {
    /// The queue: its URL (`http://host:4566/000000000000/orders`), its ARN
    /// (`arn:aws:sqs:us-east-1:000000000000:orders`) or its store key (`orders` in the
    /// default account and region, `111111111111/orders` in another account,
    /// `111111111111/eu-west-1/orders` in another region).
    queue: String,

    /// The cell to move it to (1-based, in the order of the URLs).
    #[arg(long)]
    to: u32,

    /// `loft serve`'s --account-id: a URL or ARN of this account names a queue of the
    /// default account.
    #[arg(long, env = "LOFT_ACCOUNT_ID", default_value = "000000000000")]
    account_id: String,

    /// `loft serve`'s --region: an ARN of this region (and every URL) names a queue of the
    /// default region.
    #[arg(long, env = "LOFT_REGION", default_value = "us-east-1")]
    region: String,

    /// The cells' URLs, as given to `loft serve`.
    #[command(flatten)]
    database: crate::engine::DatabaseUrls,

    /// `loft serve`'s config file, as for `loft cells status`.
    #[arg(long, env = "LOFT_CONFIG")]
    config: Option<std::path::PathBuf>,
}

/// The store key of the queue `queue` names (a URL, an ARN or a store key), the default
/// account and region being `account` and `region` (`loft_core::names::scoped_key`).
pub fn queue_key(queue: &str, account: &str, region: &str) -> String {
    let default = Scope { account, region };
    if let Some(rest) = queue.strip_prefix("arn:") {
        // arn:PARTITION:sqs:REGION:ACCOUNT:NAME
        let parts: Vec<&str> = rest.splitn(5, ':').collect();
        if let [_, "sqs", r, a, name] = parts.as_slice() {
            return scoped_key(
                default,
                Scope {
                    account: a,
                    region: r,
                },
                name,
            );
        }
    }
    if let Some((_, rest)) = queue.split_once("://") {
        let path = rest.split_once('/').map_or("", |(_, p)| p);
        let path = path.split(['?', '#']).next().unwrap_or("");
        if let Some((a, name)) = path.trim_end_matches('/').split_once('/') {
            return scoped_key(default, Scope { account: a, region }, name);
        }
    }
    queue.to_owned()
}

/// The cells given by `database` or else `config`'s `[[cells]]`, opened.
///
/// Errors: as [`run`].
async fn open(
    database: &crate::engine::DatabaseUrls,
    config: Option<&std::path::Path>,
) -> Result<(CellStore, Vec<String>), String> {
    let mut urls = database.urls()?;
    if urls.is_empty() {
        if let Some(path) = config {
            let file = crate::config::load(path).map_err(|e| e.to_string())?;
            urls = file.server.cell_urls();
        }
    }
    if urls.is_empty() {
        return Err(
            "no database URL: give --database-url, --database-urls, or a --config file \
             with [[cells]]"
                .into(),
        );
    }
    let mut stores = Vec::with_capacity(urls.len());
    for (i, url) in urls.iter().enumerate() {
        let options = PgOptions {
            pool_size: 2,
            ..PgOptions::default()
        };
        let store = PgStore::connect(url, options)
            .await
            .map_err(|e| format!("cell {}: {e}", i + 1))?;
        stores.push(store);
    }
    Ok((CellStore::open(stores).await?, urls))
}

/// `loft cells move`: prints one line saying what was done.
async fn move_queue(args: MoveArgs) -> Result<(), String> {
    let key = queue_key(&args.queue, &args.account_id, &args.region);
    let (cells, _) = open(&args.database, args.config.as_deref()).await?;
    let outcome = cells.move_queue(&key, args.to).await;
    for cell in cells.cells() {
        cell.close().await;
    }
    let o =
        outcome.map_err(|e| format!("cannot move {key}: {}: {}", e.code.aws_code(), e.message))?;
    if o.from == o.to {
        println!("{key} is in cell {}", o.to);
    } else {
        println!(
            "moved {key} from cell {} to cell {}{}: {} messages copied",
            o.from,
            o.to,
            if o.resumed {
                " (finishing an earlier run)"
            } else {
                ""
            },
            o.messages
        );
    }
    Ok(())
}

#[derive(Args, Debug)]
struct StatusArgs {
    /// The cells' URLs, as given to `loft serve`.
    #[command(flatten)]
    database: crate::engine::DatabaseUrls,

    /// `loft serve`'s config file: its `[[cells]]` are the cells when no --database-url,
    /// --database-urls or their environment variables give any (docs/configuration.md).
    #[arg(long, env = "LOFT_CONFIG")]
    config: Option<std::path::PathBuf>,
}

/// Runs `loft cells ...`.
///
/// Errors: no URL or both forms given, a config file that cannot be read or is refused
/// (at its line), a database that cannot be opened or is another cell, a count that
/// fails; for `move`, the move's error (`CellStore::move_queue`).
pub async fn run(args: CellsArgs) -> Result<(), String> {
    let args = match args.command {
        CellsCommand::Status(args) => args,
        CellsCommand::Move(args) => return move_queue(args).await,
    };
    let (cells, urls) = open(&args.database, args.config.as_deref()).await?;
    let status = cells.status().await.map_err(|e| e.message)?;
    println!("cell\turl\tqueues\ttopics\tmessages");
    for (line, url) in status.iter().zip(&urls) {
        println!(
            "{}\t{}\t{}\t{}\t{}",
            line.number,
            without_password(url),
            line.queues,
            line.topics,
            line.messages
        );
    }
    let moves = cells.moves_in_progress().await.map_err(|e| e.message);
    for cell in cells.cells() {
        cell.close().await;
    }
    let moves = moves?;
    if !moves.is_empty() {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        println!();
        println!("moving\tfrom\tto\tstep\towner\tlease\tage");
        for m in &moves {
            println!(
                "{}\t{}\t{}\t{}\t{}\t{}\t{}",
                m.name,
                m.from,
                m.to,
                m.step.name(),
                m.owner.as_deref().unwrap_or("-"),
                lease(m.lease_until_ms, now),
                if m.started_at_ms > 0 {
                    seconds(now - m.started_at_ms)
                } else {
                    "-".to_owned()
                },
            );
        }
    }
    Ok(())
}

/// A move's lease as `loft cells status` shows it, at `now_ms`: `12s left`, or `ended 3s
/// ago` (any node's sweep takes the move over).
fn lease(until_ms: i64, now_ms: i64) -> String {
    if until_ms > now_ms {
        format!("{} left", seconds(until_ms - now_ms))
    } else if until_ms == 0 {
        "free".to_owned()
    } else {
        format!("ended {} ago", seconds(now_ms - until_ms))
    }
}

/// A span of `ms` milliseconds in whole seconds, rounded up: `3s`.
fn seconds(ms: i64) -> String {
    format!("{}s", (ms.max(0) + 999) / 1000)
}

/// `url` without its password: `postgres://user:secret@host/db` as
/// `postgres://user@host/db`, and a `key=value` string without its `password=...`.
pub fn without_password(url: &str) -> String {
    if let Some((scheme, rest)) = url.split_once("://") {
        let (authority, tail) = match rest.find(['/', '?']) {
            Some(i) => rest.split_at(i),
            None => (rest, ""),
        };
        let authority = match authority.rsplit_once('@') {
            Some((user, host)) => {
                let user = user.split_once(':').map_or(user, |(u, _)| u);
                format!("{user}@{host}")
            }
            None => authority.to_owned(),
        };
        let tail: String = match tail.split_once('?') {
            Some((path, query)) => {
                let kept: Vec<&str> = query
                    .split('&')
                    .filter(|kv| !kv.to_ascii_lowercase().starts_with("password="))
                    .collect();
                if kept.is_empty() {
                    path.to_owned()
                } else {
                    format!("{path}?{}", kept.join("&"))
                }
            }
            None => tail.to_owned(),
        };
        return format!("{scheme}://{authority}{tail}");
    }
    url.split_whitespace()
        .filter(|kv| !kv.to_ascii_lowercase().starts_with("password="))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::{queue_key, without_password};

    #[test]
    fn queues_are_named_by_url_arn_or_store_key() {
        let key = |q: &str| queue_key(q, "000000000000", "us-east-1");
        for (queue, want) in [
            ("http://localhost:4566/000000000000/orders", "orders"),
            (
                "https://sqs.example/111111111111/orders.fifo",
                "111111111111/orders.fifo",
            ),
            ("arn:aws:sqs:us-east-1:000000000000:orders", "orders"),
            (
                "arn:aws:sqs:us-east-1:111111111111:orders",
                "111111111111/orders",
            ),
            (
                "arn:aws:sqs:eu-west-1:000000000000:orders",
                "000000000000/eu-west-1/orders",
            ),
            ("orders", "orders"),
            ("111111111111/orders", "111111111111/orders"),
        ] {
            assert_eq!(key(queue), want, "{queue}");
        }
    }

    #[test]
    fn urls_lose_their_passwords() {
        for (url, shown) in [
            (
                "postgres://loft:s3cr:et@db.example:5432/loft?sslmode=require",
                "postgres://loft@db.example:5432/loft?sslmode=require",
            ),
            ("postgres://db.example/loft", "postgres://db.example/loft"),
            (
                "postgresql://u@h/d?password=x&sslmode=disable",
                "postgresql://u@h/d?sslmode=disable",
            ),
            ("postgres://u:p@h", "postgres://u@h"),
            (
                "host=h user=u password=secret dbname=d",
                "host=h user=u dbname=d",
            ),
        ] {
            assert_eq!(without_password(url), shown, "{url}");
        }
    }
}
