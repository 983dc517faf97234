//! Databases for migration tests: a SQLite file, or a PostgreSQL database of its own at
//! `NEOCLOUD_TEST_POSTGRES_URL` (skipped when none answers, unless
//! `NEOCLOUD_REQUIRE_POSTGRES=1`), dropped by `Pg::drop`.
#![allow(dead_code)]

use sea_orm::{ConnectOptions, ConnectionTrait, Database, DatabaseConnection};

/// A SQLite file in `dir`, with a pool of connections as the server opens it.
pub async fn sqlite(dir: &tempfile::TempDir) -> DatabaseConnection {
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("m.db").display());
    let mut options = ConnectOptions::new(url);
    options.max_connections(4).min_connections(1);
    Database::connect(options).await.expect("connect")
}

/// A PostgreSQL database made for one test.
pub struct Pg {
    admin: DatabaseConnection,
    name: String,
    pub db: DatabaseConnection,
}

impl Pg {
    /// `None` when PostgreSQL does not answer and is not required.
    pub async fn create() -> Option<Pg> {
        let admin_url = std::env::var("NEOCLOUD_TEST_POSTGRES_URL")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into());
        let admin = match Database::connect(&admin_url).await {
            Ok(admin) => admin,
            Err(err) if std::env::var("NEOCLOUD_REQUIRE_POSTGRES").is_ok_and(|v| v == "1") => {
                panic!("PostgreSQL is required but unreachable at {admin_url}: {err}")
            }
            Err(err) => {
                eprintln!("skipping: {admin_url} unreachable: {err}");
                return None;
            }
        };
        let name = format!("neocloud_migration_{}", uuid::Uuid::new_v4().simple());
        admin
            .execute_unprepared(&format!("CREATE DATABASE \"{name}\""))
            .await
            .expect("create database");
        let (base, _) = admin_url.rsplit_once('/').expect("a path");
        let db = Database::connect(format!("{base}/{name}"))
            .await
            .expect("connect");
        Some(Pg { admin, name, db })
    }

    pub async fn drop(self) {
        drop(self.db);
        self.admin
            .execute_unprepared(&format!("DROP DATABASE \"{}\" WITH (FORCE)", self.name))
            .await
            .expect("drop database");
    }
}
