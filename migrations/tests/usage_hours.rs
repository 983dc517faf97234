//! Migration 050: the hourly roll-ups start as the sums of the minute buckets already
//! stored, per allocation and UTC hour over devices and label sets, exactly (SQLite keeps
//! the decimals as text); seconds no allocation held are not rolled up (SQLite and
//! PostgreSQL).

mod support;

use std::str::FromStr;

use chrono::{DateTime, Utc};
use neocloud_migrations::{Migrator, MigratorTrait};
use rust_decimal::Decimal;
use sea_orm::sea_query::{Alias, Expr, Query};
use sea_orm::{ConnectionTrait, DatabaseConnection, Statement};
use uuid::Uuid;

/// The columns a test writes of `usage_minutes` (as migration 049 left it).
const MINUTE_COLUMNS: [&str; 11] = [
    "id",
    "minute_start",
    "device_uuid",
    "allocation_id",
    "tenant_id",
    "sku_id",
    "label",
    "active_seconds",
    "memory_gib_seconds",
    "energy_kwh",
    "sampled_seconds",
];

fn t(s: &str) -> DateTime<Utc> {
    s.parse().expect("time")
}

/// A minute bucket: (allocation, minute, device, label, active, memory, energy, seconds).
async fn minute(
    db: &DatabaseConnection,
    (allocation, tenant, sku): (Uuid, Option<Uuid>, Option<Uuid>),
    (at, device, label): (&str, &str, &str),
    quantities: [&str; 3],
    seconds: i64,
) {
    let row = Query::insert()
        .into_table(Alias::new("usage_minutes"))
        .columns(MINUTE_COLUMNS.map(Alias::new))
        .values_panic([
            Uuid::now_v7().into(),
            t(at).into(),
            device.into(),
            allocation.into(),
            tenant.into(),
            sku.into(),
            label.into(),
            Expr::cust(format!("'{}'", quantities[0])),
            Expr::cust(format!("'{}'", quantities[1])),
            Expr::cust(format!("'{}'", quantities[2])),
            seconds.into(),
        ])
        .to_owned();
    db.execute(&row).await.expect("minute");
}

/// (allocation, hour, active, memory, energy, seconds) of every roll-up, in key order.
async fn hours(db: &DatabaseConnection) -> Vec<(Uuid, DateTime<Utc>, [Decimal; 3], i64)> {
    let sql = "SELECT allocation_id, hour_start, CAST(active_seconds AS TEXT) AS a, \
               CAST(memory_gib_seconds AS TEXT) AS m, CAST(energy_kwh AS TEXT) AS e, \
               sampled_seconds FROM usage_hours ORDER BY allocation_id, hour_start";
    let backend = db.get_database_backend();
    let rows = db
        .query_all_raw(Statement::from_string(backend, sql))
        .await
        .expect("read");
    rows.iter()
        .map(|r| {
            let dec = |c: &str| {
                let text: String = r.try_get("", c).expect("text");
                Decimal::from_str(&text).expect("a decimal")
            };
            (
                r.try_get("", "allocation_id").expect("allocation"),
                r.try_get("", "hour_start").expect("hour"),
                [dec("a"), dec("m"), dec("e")],
                r.try_get("", "sampled_seconds").expect("seconds"),
            )
        })
        .collect()
}

async fn minutes_are_rolled_up(db: &DatabaseConnection) {
    Migrator::up(db, Some(49)).await.expect("up to 049");
    let (tenant, sku) = (Some(Uuid::now_v7()), Some(Uuid::now_v7()));
    let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
    let q = |x: &'static str, y: &'static str, z: &'static str| [x, y, z];
    minute(
        db,
        (a, tenant, sku),
        ("2026-11-30T10:05:00Z", "GPU-1", ""),
        q("30.125", "0.1", "0.000001"),
        60,
    )
    .await;
    minute(
        db,
        (a, tenant, sku),
        ("2026-11-30T10:05:00Z", "GPU-2", "job=x"),
        q("0.875", "0.2", "0.000002"),
        60,
    )
    .await;
    minute(
        db,
        (a, tenant, sku),
        ("2026-11-30T10:59:00Z", "GPU-1", ""),
        q("1", "0", "0"),
        30,
    )
    .await;
    minute(
        db,
        (a, tenant, sku),
        ("2026-11-30T11:00:00Z", "GPU-1", ""),
        q("2.5", "1.5", "0.5"),
        60,
    )
    .await;
    minute(
        db,
        (b, tenant, sku),
        ("2026-11-30T10:30:00Z", "GPU-3", ""),
        q("7", "8", "9"),
        60,
    )
    .await;
    // Nobody's seconds: kept per minute for utilization, never rolled up.
    minute(
        db,
        (Uuid::nil(), None, None),
        ("2026-11-30T10:10:00Z", "GPU-4", ""),
        q("60", "1", "1"),
        60,
    )
    .await;
    Migrator::up(db, None).await.expect("up 050");
    let d = |s: &str| Decimal::from_str(s).expect("decimal");
    let mut want = vec![
        (
            a,
            t("2026-11-30T10:00:00Z"),
            [d("32"), d("0.3"), d("0.000003")],
            150,
        ),
        (
            a,
            t("2026-11-30T11:00:00Z"),
            [d("2.5"), d("1.5"), d("0.5")],
            60,
        ),
        (b, t("2026-11-30T10:00:00Z"), [d("7"), d("8"), d("9")], 60),
    ];
    want.sort_by_key(|w| (w.0, w.1));
    assert_eq!(hours(db).await, want);
}

#[tokio::test]
async fn minutes_are_rolled_up_on_sqlite() {
    let dir = tempfile::tempdir().expect("tempdir");
    minutes_are_rolled_up(&support::sqlite(&dir).await).await;
}

#[tokio::test]
async fn minutes_are_rolled_up_on_postgres() {
    let Some(pg) = support::Pg::create().await else {
        return;
    };
    minutes_are_rolled_up(&pg.db).await;
    pg.drop().await;
}

/// More minutes than one page of the SQLite fill: every page is summed, none twice.
#[tokio::test]
async fn minutes_beyond_one_page_are_all_rolled_up_on_sqlite() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = support::sqlite(&dir).await;
    Migrator::up(&db, Some(49)).await.expect("up to 049");
    let allocation = Uuid::now_v7();
    let start = t("2026-11-30T00:00:00Z");
    let minutes: i64 = 25_030;
    for first in (0..minutes).step_by(500) {
        let mut insert = Query::insert();
        insert
            .into_table(Alias::new("usage_minutes"))
            .columns(MINUTE_COLUMNS.map(Alias::new));
        for i in first..(first + 500).min(minutes) {
            insert.values_panic([
                Uuid::now_v7().into(),
                (start + chrono::Duration::minutes(i)).into(),
                "GPU-1".into(),
                allocation.into(),
                Uuid::nil().into(),
                Uuid::nil().into(),
                "".into(),
                "0.5".into(),
                "1".into(),
                "0".into(),
                60i64.into(),
            ]);
        }
        db.execute(&insert).await.expect("minutes");
    }
    Migrator::up(&db, None).await.expect("up 050");
    let hours = hours(&db).await;
    assert_eq!(hours.len() as i64, (minutes + 59) / 60);
    let active: Decimal = hours.iter().map(|h| h.2[0]).sum();
    assert_eq!(active, Decimal::from(minutes) / Decimal::TWO);
    let sampled: i64 = hours.iter().map(|h| h.3).sum();
    assert_eq!(sampled, minutes * 60);
}
