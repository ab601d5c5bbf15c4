//! The storage engine `loft serve` opens: SQLite (`--db`) or PostgreSQL
//! (`--database-url`), with the master key of SQS encryption at rest (`--sse-key-file`).

use std::sync::Arc;

use loft_core::store::Store;
use loft_store::{Durability, PgOptions, PgStore, SqliteStore};

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
        let on_postgres = args.database_url.as_deref().is_some_and(|u| !u.is_empty());
        // On PostgreSQL without a key file, the key lives in the database, so every node
        // of it opens what another sealed.
        let from_file = args.sse_key_file.is_some() || !on_postgres;
        if from_file {
            for w in loft_store::seal::permission_warnings(&key_file) {
                tracing::warn!("{w}");
            }
        }
        let file_origin = format!("the key file {}", key_file.display());
        match args.database_url.as_deref().filter(|u| !u.is_empty()) {
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
        }
    }

    /// What to log at start: the file, or the server without the password.
    pub fn describe(&self, args: &ServeArgs) -> String {
        match self {
            Engine::Sqlite(_) => format!("sqlite {}", args.db.display()),
            Engine::Postgres(_, true) => "postgresql (TLS)".to_owned(),
            Engine::Postgres(_, false) => "postgresql (no TLS)".to_owned(),
        }
    }

    /// Closes the store (after the service's last write).
    pub async fn close(&self) {
        match self {
            Engine::Sqlite(s) => s.close().await,
            Engine::Postgres(s, _) => s.close().await,
        }
    }
}
