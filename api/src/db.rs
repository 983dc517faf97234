//! Connecting to the database (SQLite file or PostgreSQL) and bringing its schema up to date.

use std::time::Duration;

use neocloud_migrations::{Migrator, MigratorTrait};
use sea_orm::{ConnectOptions, ConnectionTrait, Database, DatabaseConnection, DbBackend, DbErr};
use secrecy::{ExposeSecret, SecretString};

/// Opens a pool. SQLite gets WAL and a busy timeout so readers never block the one writer.
pub async fn connect(url: &SecretString) -> Result<DatabaseConnection, DbErr> {
    let url = url.expose_secret();
    let mut options = ConnectOptions::new(url.to_owned());
    options
        .connect_timeout(Duration::from_secs(10))
        .acquire_timeout(Duration::from_secs(10))
        // A ping on every checkout doubled the round trips of short statements; only a
        // connection idle long enough to have been dropped is checked first.
        .test_before_acquire_if_idle_for(Duration::from_secs(30))
        .sqlx_logging(false);
    if url.starts_with("sqlite:") {
        // One writer at a time is SQLite's model; a small pool keeps lock waits short.
        options.max_connections(4).min_connections(1);
    } else {
        options.max_connections(16);
    }
    let db = Database::connect(options).await?;
    if db.get_database_backend() == DbBackend::Sqlite {
        db.execute_unprepared(
            "PRAGMA journal_mode = WAL; PRAGMA busy_timeout = 10000; PRAGMA foreign_keys = ON;",
        )
        .await?;
    }
    Ok(db)
}

/// SQLite is one process's database. Takes an exclusive lock on `<file>.lock` beside a
/// SQLite file, held for as long as the returned file is kept (the process's life): a
/// second process on the same file is refused at start, with the reason. None for
/// PostgreSQL and in-memory SQLite.
pub fn claim_sqlite(url: &SecretString) -> anyhow::Result<Option<std::fs::File>> {
    let Some(path) = sqlite_file(url.expose_secret()) else {
        return Ok(None);
    };
    let lock_path = format!("{path}.lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| anyhow::anyhow!("opening {lock_path}: {e}"))?;
    match file.try_lock() {
        Ok(()) => Ok(Some(file)),
        Err(std::fs::TryLockError::WouldBlock) => anyhow::bail!(
            "another neocloud process is serving the SQLite database {path}: SQLite is \
             single-process (one server with every role); stop the other one, or run \
             several processes on PostgreSQL"
        ),
        Err(std::fs::TryLockError::Error(e)) => Err(anyhow::anyhow!("locking {lock_path}: {e}")),
    }
}

/// The file of a `sqlite:` URL; None for other databases and in-memory SQLite.
fn sqlite_file(url: &str) -> Option<&str> {
    let rest = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))?;
    let (path, options) = rest.split_once('?').unwrap_or((rest, ""));
    let in_memory = path.is_empty() || path == ":memory:" || options.contains("mode=memory");
    (!in_memory).then_some(path)
}

/// Applies every pending migration; then, once, posts to the ledger the money that moved
/// before the database had one (`neocloud_metering::ledger::backfill`).
pub async fn migrate(db: &DatabaseConnection) -> Result<(), DbErr> {
    use neocloud_metering::ledger::backfill;
    Migrator::up(db, None).await?;
    if !backfill::needed(db).await? {
        return Ok(());
    }
    let txn = begin_write(db).await?;
    if backfill::needed(&txn).await? {
        let posted = backfill::run(&txn, chrono::Utc::now()).await?;
        tracing::info!(posted, "posted the history from before the ledger");
    }
    txn.commit().await
}

/// A trivial round trip, for `/readyz`.
pub async fn ping(db: &DatabaseConnection) -> Result<(), DbErr> {
    db.ping().await
}

/// Begins a transaction that will write. On SQLite it takes the write lock at once (a
/// deferred transaction that reads first cannot upgrade once another writer committed,
/// and fails instead of waiting); on PostgreSQL it is a plain `BEGIN`.
pub async fn begin_write(db: &DatabaseConnection) -> Result<sea_orm::DatabaseTransaction, DbErr> {
    use sea_orm::TransactionTrait;
    let txn = db.begin().await?;
    if db.get_database_backend() == DbBackend::Sqlite {
        // A write statement takes SQLite's RESERVED lock even when it changes no row.
        txn.execute_unprepared("UPDATE fleet_epoch SET epoch = epoch WHERE id = -1")
            .await?;
    }
    Ok(txn)
}

/// Most values bound in one statement: SQLite's historical limit is 999, and a statement
/// this size already amortizes its round trip.
const MAX_BIND_VALUES: usize = 900;

/// Inserts `rows` with as few multi-row `INSERT`s as the bind limit allows, without reading
/// anything back (the caller built every column).
pub async fn insert_all<A, C>(conn: &C, rows: Vec<A>) -> Result<(), DbErr>
where
    A: sea_orm::ActiveModelTrait,
    C: ConnectionTrait,
{
    use sea_orm::{EntityTrait, Iterable};
    let columns = <A::Entity as EntityTrait>::Column::iter().count().max(1);
    let per_statement = (MAX_BIND_VALUES / columns).max(1);
    let mut rows = rows.into_iter().peekable();
    while rows.peek().is_some() {
        let chunk: Vec<A> = rows.by_ref().take(per_statement).collect();
        <A::Entity as EntityTrait>::insert_many(chunk)
            .exec_without_returning(conn)
            .await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::sqlite_file;

    #[test]
    fn only_sqlite_files_are_claimed() {
        assert_eq!(
            sqlite_file("sqlite://neocloud.db?mode=rwc"),
            Some("neocloud.db")
        );
        assert_eq!(sqlite_file("sqlite:/var/lib/n.db"), Some("/var/lib/n.db"));
        assert_eq!(sqlite_file("sqlite::memory:"), None);
        assert_eq!(sqlite_file("sqlite://x.db?mode=memory"), None);
        assert_eq!(sqlite_file("postgres://postgres@127.0.0.1/db"), None);
    }
}
