//! The storage engine `loft serve` opens: SQLite (`--db`), PostgreSQL (`--database-url`)
//! or, with several database URLs, PostgreSQL cells (`loft_store::cells`), with the
//! master key of SQS encryption at rest (`--sse-key-file`).

use std::sync::Arc;

use loft_core::store::Store;
use loft_store::{CellStore, Durability, PgOptions, PgStore, SqliteStore};

use crate::{DurabilityArg, ServeArgs};

/// The master key of a start that takes it from the file `path`: read when the file is
/// there (refused when it holds no key), made (mode 0600) when it is not, unless the
/// database already holds encrypted messages: a new key would never open them, so the
/// start is refused with a message naming the file.
fn start_key(
    path: &std::path::Path,
    probe: &loft_store::seal::KeyProbe,
) -> Result<loft_store::seal::MasterKey, String> {
    let missing =
        matches!(std::fs::metadata(path), Err(e) if e.kind() == std::io::ErrorKind::NotFound);
    if missing && probe.sealed_body.is_some() {
        return Err(format!(
            "{}: the SQS encryption master key file is missing, but the database holds \
             encrypted messages that only that key opens; restore the file (or name it with \
             --sse-key-file): a new key would not open them",
            path.display()
        ));
    }
    loft_store::seal::MasterKey::load_or_create(path)
}

/// The engine `serve` runs on, kept to close it at shutdown.
pub enum Engine {
    Sqlite(Arc<SqliteStore>),
    /// The store, and whether its connections are encrypted.
    Postgres(Arc<PgStore>, bool),
    /// Several PostgreSQL databases as cells, and whether every cell's connections are
    /// encrypted.
    Cells(Arc<CellStore>, bool),
}

/// The PostgreSQL URLs of `loft serve` and `loft cells status`: one database, or several
/// as cells.
#[derive(clap::Args, Debug, Clone)]
pub struct DatabaseUrls {
    /// PostgreSQL instead of SQLite: `postgres://user:password@host:5432/db` (or a
    /// `key=value` string). Several nodes may serve one database. TLS follows libpq's
    /// `sslmode` (disable, prefer, require, verify-ca, verify-full) and `sslrootcert`.
    /// Repeat it to spread queues and topics over several databases, each a cell (a
    /// preview, docs/deployment.md "Cells (preview)"): the first is cell 1, which keeps
    /// the catalog, and the order may not change later.
    #[arg(long, env = "LOFT_DATABASE_URL", hide_env_values = true, action = clap::ArgAction::Append)]
    pub database_url: Vec<String>,

    /// The cells' PostgreSQL URLs, comma-separated, cell 1 first: the environment's form
    /// of a repeated --database-url (not both).
    #[arg(
        long,
        env = "LOFT_DATABASE_URLS",
        hide_env_values = true,
        value_delimiter = ','
    )]
    pub database_urls: Vec<String>,
}

impl DatabaseUrls {
    /// The URLs given: the repeated `--database-url`, or `--database-urls` /
    /// `LOFT_DATABASE_URLS` (empty ones left out); none for SQLite.
    ///
    /// Errors: both forms given.
    pub fn urls(&self) -> Result<Vec<String>, String> {
        let one: Vec<String> = self
            .database_url
            .iter()
            .filter(|u| !u.is_empty())
            .cloned()
            .collect();
        let list: Vec<String> = self
            .database_urls
            .iter()
            .map(|u| u.trim().to_owned())
            .filter(|u| !u.is_empty())
            .collect();
        if !one.is_empty() && !list.is_empty() {
            return Err(
                "give the database URLs either as --database-url (repeated) or as \
                 --database-urls / LOFT_DATABASE_URLS, not both"
                    .to_owned(),
            );
        }
        Ok(if one.is_empty() { list } else { one })
    }
}

/// The master key of the cells, `stores[0]` being cell 1: the key file's, or cell 1's
/// database key; checked against every cell's recorded check value (and recorded where
/// none is), then given to every cell.
async fn cells_with_key(
    stores: Vec<PgStore>,
    from_file: Option<(&std::path::Path, String)>,
) -> Result<Vec<PgStore>, String> {
    let mut probes = Vec::with_capacity(stores.len());
    for store in &stores {
        probes.push(store.master_key_probe().await.map_err(|e| e.message)?);
    }
    let (key, origin) = match from_file {
        Some((path, origin)) => {
            let sealed = probes.iter().find(|p| p.sealed_body.is_some());
            (start_key(path, sealed.unwrap_or(&probes[0]))?, origin)
        }
        None => (
            stores[0]
                .database_master_key()
                .await
                .map_err(|e| e.message)?,
            "the master key kept in cell 1's database (table sse_master_key)".to_owned(),
        ),
    };
    for (i, (store, probe)) in stores.iter().zip(&probes).enumerate() {
        let origin = format!("{origin}, for cell {}", i + 1);
        if loft_store::seal::verify_master_key(&key, &origin, probe)? {
            store
                .record_master_key_check(&key.check_value())
                .await
                .map_err(|e| e.message)?;
        }
    }
    Ok(stores
        .into_iter()
        .map(|s| s.with_key_source(loft_store::seal::KeySource::Key(key.clone())))
        .collect())
}

impl Engine {
    /// Opens the store `args` name (`--db`, or `--database-url`) with its master key
    /// (`--sse-key-file`, or on PostgreSQL the database's).
    ///
    /// Errors: the database cannot be opened, or the master key is missing, unreadable or
    /// not the database's.
    pub async fn open(args: &ServeArgs) -> Result<Engine, String> {
        let key_file = args
            .sse_key_file
            .clone()
            .unwrap_or_else(|| loft_store::seal::default_key_file(&args.db));
        let urls = args.database.urls()?;
        let on_postgres = !urls.is_empty();
        // On PostgreSQL without a key file, the key lives in the database, so every node
        // of it opens what another sealed.
        let from_file = args.sse_key_file.is_some() || !on_postgres;
        if from_file {
            for w in loft_store::seal::permission_warnings(&key_file) {
                tracing::warn!("{w}");
            }
        }
        let file_origin = format!("the key file {}", key_file.display());
        if urls.len() > 1 {
            let mut stores = Vec::with_capacity(urls.len());
            for (i, url) in urls.iter().enumerate() {
                let options = PgOptions {
                    pool_size: args.database_pool_size,
                    ..PgOptions::default()
                };
                let store = PgStore::connect(url, options)
                    .await
                    .map_err(|e| format!("cell {}: {e}", i + 1))?;
                stores.push(store);
            }
            let stores = cells_with_key(
                stores,
                from_file.then_some((key_file.as_path(), file_origin)),
            )
            .await?;
            let mut tls = true;
            for store in &stores {
                tls &= store.uses_tls().await.map_err(|e| e.message)?;
            }
            let cells = CellStore::open(stores).await?;
            return Ok(Engine::Cells(Arc::new(cells), tls));
        }
        match urls.first() {
            Some(url) => {
                let options = PgOptions {
                    pool_size: args.database_pool_size,
                    ..PgOptions::default()
                };
                let store = PgStore::connect(url, options).await?;
                let probe = store.master_key_probe().await.map_err(|e| e.message)?;
                let (key, origin) = if from_file {
                    (start_key(&key_file, &probe)?, file_origin)
                } else {
                    (
                        store.database_master_key().await.map_err(|e| e.message)?,
                        "the master key kept in the database (table sse_master_key)".to_owned(),
                    )
                };
                if loft_store::seal::verify_master_key(&key, &origin, &probe)? {
                    store
                        .record_master_key_check(&key.check_value())
                        .await
                        .map_err(|e| e.message)?;
                }
                let store = store.with_key_source(loft_store::seal::KeySource::Key(key));
                let tls = store.uses_tls().await.map_err(|e| e.message)?;
                Ok(Engine::Postgres(Arc::new(store), tls))
            }
            None => {
                let durability = match args.durability {
                    DurabilityArg::Process => Durability::Process,
                    DurabilityArg::Fsync => Durability::Fsync,
                };
                let store = SqliteStore::open(&args.db, durability)?;
                let probe = store.master_key_probe().await.map_err(|e| e.message)?;
                let key = start_key(&key_file, &probe)?;
                if loft_store::seal::verify_master_key(&key, &file_origin, &probe)? {
                    store
                        .record_master_key_check(key.check_value())
                        .await
                        .map_err(|e| e.message)?;
                }
                Ok(Engine::Sqlite(Arc::new(
                    store.with_key_source(loft_store::seal::KeySource::Key(key)),
                )))
            }
        }
    }

    /// The store, for the service.
    pub fn store(&self) -> Arc<dyn Store> {
        match self {
            Engine::Sqlite(s) => s.clone(),
            Engine::Postgres(s, _) => s.clone(),
            Engine::Cells(s, _) => s.clone(),
        }
    }

    /// What to log at start: the file, or the server without the password.
    pub fn describe(&self, args: &ServeArgs) -> String {
        match self {
            Engine::Sqlite(_) => format!("sqlite {}", args.db.display()),
            Engine::Postgres(_, true) => "postgresql (TLS)".to_owned(),
            Engine::Postgres(_, false) => "postgresql (no TLS)".to_owned(),
            Engine::Cells(s, true) => format!("postgresql, {} cells (TLS)", s.cells().len()),
            Engine::Cells(s, false) => format!("postgresql, {} cells (no TLS)", s.cells().len()),
        }
    }

    /// Closes the store (after the service's last write).
    pub async fn close(&self) {
        match self {
            Engine::Sqlite(s) => s.close().await,
            Engine::Postgres(s, _) => s.close().await,
            Engine::Cells(s, _) => {
                for cell in s.cells() {
                    cell.close().await;
                }
            }
        }
    }
}
