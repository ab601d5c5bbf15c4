//! `loft cells status`: one line per cell of a deployment on several PostgreSQL databases
//! (`loft_store::cells`, a preview): its number, its URL without the password, and how
//! many queues, topics and messages it holds. It reads the databases directly, not a
//! running server, and finds them as `loft serve` does: the repeated `--database-url`,
//! `--database-urls` / `LOFT_DATABASE_URLS`, or else the `[[cells]]` of the `--config`
//! file (`LOFT_CONFIG`), a flag or environment variable winning over the file
//! (docs/deployment.md "Cells (preview)").

use clap::{Args, Subcommand};
use loft_store::{CellStore, PgOptions, PgStore};

/// `loft cells ...`.
#[derive(Args, Debug)]
pub struct CellsArgs {
    #[command(subcommand)]
    command: CellsCommand,
}

#[derive(Subcommand, Debug)]
enum CellsCommand {
    /// Print one line per cell: number, URL (without password), queues, topics, messages.
    Status(StatusArgs),
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
/// (at its line), a database that cannot be opened or is another cell, a count that fails.
pub async fn run(args: CellsArgs) -> Result<(), String> {
    let CellsCommand::Status(args) = args.command;
    let mut urls = args.database.urls()?;
    if urls.is_empty() {
        if let Some(path) = &args.config {
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
    let cells = CellStore::open(stores).await?;
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
    for cell in cells.cells() {
        cell.close().await;
    }
    Ok(())
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
    use super::without_password;

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
