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

/// Applies every pending migration.
pub async fn migrate(db: &DatabaseConnection) -> Result<(), DbErr> {
    Migrator::up(db, None).await
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
