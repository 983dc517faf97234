//! Ledger posting on PostgreSQL: `--transfers` transfers, each in its own transaction as
//! the server posts them (an invoice finalized: receivable and wallet debited, revenue
//! and tax payable credited), from `--workers` concurrent connections over `--tenants`
//! tenants. Each is checked balanced before it is written and posted once by its
//! (kind, reference); accounts are opened on first use. Then the whole-ledger check
//! (debits equal credits per currency and per transfer) over everything posted.
//!
//! Baseline, in the same run and database: one plain row inserted per transaction, same
//! workers and count — the floor of a durable commit.
//!
//! `cargo run --release -p neocloud-api --example bench_ledger -- --transfers 20000 --workers 4 --tenants 1000`

mod bench_support;

use std::time::Instant;

use bench_support::{BenchServer, arg};
use chrono::Utc;
use neocloud_metering::ledger::store::{self, Posted};
use neocloud_metering::ledger::{Account, AccountKind, Transfer};
use neocloud_schema::ids::TenantId;
use rust_decimal::Decimal;
use sea_orm::{ConnectionTrait, DatabaseConnection, TransactionTrait};

fn finalized(tenant: TenantId, n: usize) -> Transfer {
    let cents = i64::try_from(n % 100_000).expect("small") + 100;
    let subtotal = Decimal::new(cents, 2);
    let tax = Decimal::new(cents * 19 / 100, 2);
    let credits = Decimal::new(cents / 10, 2);
    Transfer::new(
        "invoice.finalized",
        uuid::Uuid::now_v7(),
        "USD",
        Some(tenant),
        "bench",
    )
    .debit(
        Account::tenant(AccountKind::Receivable, tenant),
        subtotal + tax - credits,
    )
    .debit(Account::tenant(AccountKind::Wallet, tenant), credits)
    .credit(Account::platform(AccountKind::Revenue), subtotal)
    .credit(Account::platform(AccountKind::TaxPayable), tax)
}

async fn post_all(db: &DatabaseConnection, tenants: &[TenantId], workers: usize, total: usize) {
    let mut tasks = Vec::new();
    for w in 0..workers {
        let (db, tenants) = (db.clone(), tenants.to_vec());
        tasks.push(tokio::spawn(async move {
            for n in (w..total).step_by(workers) {
                let transfer = finalized(tenants[n % tenants.len()], n);
                let txn = db.begin().await.expect("begin");
                let posted = store::post(&txn, &transfer, Utc::now())
                    .await
                    .expect("post");
                assert!(matches!(posted, Posted::New(_)));
                txn.commit().await.expect("commit");
            }
        }));
    }
    for t in tasks {
        t.await.expect("worker");
    }
}

async fn insert_all(db: &DatabaseConnection, workers: usize, total: usize) {
    db.execute_unprepared(
        "CREATE TABLE bench_plain (id uuid PRIMARY KEY, tenant uuid NOT NULL, amount bigint NOT NULL, at timestamptz NOT NULL)",
    )
    .await
    .expect("create");
    let mut tasks = Vec::new();
    for w in 0..workers {
        let db = db.clone();
        tasks.push(tokio::spawn(async move {
            for n in (w..total).step_by(workers) {
                let txn = db.begin().await.expect("begin");
                let sql = format!(
                    "INSERT INTO bench_plain VALUES ('{}', '{}', {n}, now())",
                    uuid::Uuid::now_v7(),
                    uuid::Uuid::new_v4()
                );
                txn.execute_unprepared(&sql).await.expect("insert");
                txn.commit().await.expect("commit");
            }
        }));
    }
    for t in tasks {
        t.await.expect("worker");
    }
}

#[tokio::main]
async fn main() {
    let total = arg("--transfers", 20_000);
    let workers = arg("--workers", 4);
    let tenants: Vec<TenantId> = (0..arg("--tenants", 1_000))
        .map(|_| TenantId::new())
        .collect();
    let server = BenchServer::start().await;
    let db = server.db.clone();

    let start = Instant::now();
    insert_all(&db, workers, total).await;
    let plain = start.elapsed().as_secs_f64();

    let start = Instant::now();
    post_all(&db, &tenants, workers, total).await;
    let ledger = start.elapsed().as_secs_f64();

    let start = Instant::now();
    let check = store::check(&db).await.expect("check");
    let checked = start.elapsed().as_secs_f64();
    assert!(check.balanced(), "{check:?}");
    let per_second = |secs: f64| f64::from(u32::try_from(total).expect("count")) / secs;
    println!("| path | seconds | per second |");
    println!("|---|---|---|");
    println!(
        "| ledger transfers (4 entries, checked, once per reference) | {ledger:.2} | {:.0} |",
        per_second(ledger)
    );
    println!(
        "| baseline: one plain row per transaction | {plain:.2} | {:.0} |",
        per_second(plain)
    );
    println!(
        "| whole-ledger check: {} transfers, {} entries | {checked:.2} | |",
        check.transfers, check.entries
    );
    server.finish().await;
}
