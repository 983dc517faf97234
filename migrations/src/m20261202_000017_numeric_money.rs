//! Money, prices and metered quantities as `NUMERIC` on PostgreSQL: the database itself
//! refuses a value that is not a number, and sums and compares them exactly. SQLite keeps
//! the decimal's text (its `NUMERIC` affinity would store `0.10` as a float); the
//! entities' `Exact` type reads both. A stored text that is not a decimal makes this
//! migration fail rather than pass into an invoice.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::DbBackend;

#[derive(DeriveMigrationName)]
pub struct Migration;

/// Every exact-decimal column, by table.
const COLUMNS: &[(&str, &[&str])] = &[
    ("budgets", &["monthly_limit"]),
    ("budget_events", &["spend", "monthly_limit"]),
    ("credit_applications", &["amount"]),
    ("credit_grants", &["amount"]),
    ("invoices", &["subtotal", "credits", "total"]),
    (
        "invoice_lines",
        &["quantity", "unit_price", "amount", "amount_exact"],
    ),
    ("orders", &["max_price_per_hour"]),
    (
        "plan_rates",
        &[
            "unit_price",
            "spot_unit_price",
            "package_size",
            "package_price",
        ],
    ),
    (
        "plan_versions",
        &["commitment_monthly_minimum", "commitment_discount_pct"],
    ),
    ("skus", &["list_price_per_hour"]),
    ("top_ups", &["amount"]),
    (
        "usage_minutes",
        &["active_seconds", "memory_gib_seconds", "energy_kwh"],
    ),
];

async fn retype(manager: &SchemaManager<'_>, to: &str) -> Result<(), DbErr> {
    if manager.get_database_backend() != DbBackend::Postgres {
        return Ok(());
    }
    let db = manager.get_connection();
    for (table, columns) in COLUMNS {
        let changes: Vec<String> = columns
            .iter()
            .map(|c| format!("ALTER COLUMN {c} TYPE {to} USING {c}::{to}"))
            .collect();
        db.execute_unprepared(&format!("ALTER TABLE {table} {}", changes.join(", ")))
            .await?;
    }
    Ok(())
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        retype(manager, "numeric").await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        retype(manager, "varchar").await
    }
}
