//! Budgets: a monthly spend limit per tenant with alert thresholds, a webhook and a hard
//! cap; and the events they raise (once per threshold and billing period).

use sea_orm_migration::{prelude::*, schema::*};

use crate::helpers::{fk, index};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Tenants {
    Table,
    Id,
}

#[derive(DeriveIden)]
enum Budgets {
    Table,
    TenantId,
    MonthlyLimit,
    Currency,
    AlertThresholds,
    WebhookUrl,
    WebhookSecret,
    HardCap,
    StopAllocations,
    BlockedSince,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum BudgetEvents {
    Table,
    Id,
    TenantId,
    PeriodStart,
    Kind,
    Threshold,
    Spend,
    MonthlyLimit,
    CreatedAt,
    WebhookStatus,
    WebhookAttempts,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(Budgets::Table)
                    .col(uuid(Budgets::TenantId).primary_key())
                    .col(string(Budgets::MonthlyLimit))
                    .col(string(Budgets::Currency))
                    .col(json(Budgets::AlertThresholds))
                    .col(string_null(Budgets::WebhookUrl))
                    .col(string(Budgets::WebhookSecret))
                    .col(boolean(Budgets::HardCap))
                    .col(boolean(Budgets::StopAllocations))
                    .col(timestamp_with_time_zone_null(Budgets::BlockedSince))
                    .col(timestamp_with_time_zone(Budgets::UpdatedAt))
                    .foreign_key(&mut fk(
                        Budgets::Table,
                        Budgets::TenantId,
                        Tenants::Table,
                        Tenants::Id,
                    ))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(BudgetEvents::Table)
                    .col(pk_uuid(BudgetEvents::Id))
                    .col(uuid(BudgetEvents::TenantId))
                    .col(timestamp_with_time_zone(BudgetEvents::PeriodStart))
                    .col(string(BudgetEvents::Kind))
                    .col(integer(BudgetEvents::Threshold))
                    .col(string(BudgetEvents::Spend))
                    .col(string(BudgetEvents::MonthlyLimit))
                    .col(timestamp_with_time_zone(BudgetEvents::CreatedAt))
                    .col(string(BudgetEvents::WebhookStatus))
                    .col(integer(BudgetEvents::WebhookAttempts))
                    .foreign_key(&mut fk(
                        BudgetEvents::Table,
                        BudgetEvents::TenantId,
                        Tenants::Table,
                        Tenants::Id,
                    ))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(index(
                "idx_budget_events_once",
                BudgetEvents::Table,
                vec![
                    BudgetEvents::TenantId.into_iden(),
                    BudgetEvents::PeriodStart.into_iden(),
                    BudgetEvents::Kind.into_iden(),
                    BudgetEvents::Threshold.into_iden(),
                ],
                true,
            ))
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in [BudgetEvents::Table.into_iden(), Budgets::Table.into_iden()] {
            manager
                .drop_table(Table::drop().table(table).to_owned())
                .await?;
        }
        Ok(())
    }
}
