//! Alerts belong to the limit in force: `budgets.limit_version` moves whenever the limit
//! changes, and each budget event records the version it was judged against. An event is
//! now recorded once per tenant, period, kind, threshold *and limit version*, so crossings
//! of an old limit no longer silence the crossings of a new one. Rows that exist keep
//! version 0.

use sea_orm_migration::{prelude::*, schema::*};

use crate::helpers::index;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Budgets {
    Table,
    LimitVersion,
}

#[derive(DeriveIden)]
enum BudgetEvents {
    Table,
    TenantId,
    PeriodStart,
    Kind,
    Threshold,
    LimitVersion,
}

const OLD_INDEX: &str = "idx_budget_events_once";
const NEW_INDEX: &str = "idx_budget_events_once_per_limit";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        // Both tables name the column `limit_version`.
        for table in [Budgets::Table.into_iden(), BudgetEvents::Table.into_iden()] {
            manager
                .alter_table(
                    Table::alter()
                        .table(table)
                        .add_column(integer(Budgets::LimitVersion).default(0))
                        .to_owned(),
                )
                .await?;
        }
        manager
            .drop_index(
                Index::drop()
                    .name(OLD_INDEX)
                    .table(BudgetEvents::Table)
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(index(
                NEW_INDEX,
                BudgetEvents::Table,
                vec![
                    BudgetEvents::TenantId.into_iden(),
                    BudgetEvents::PeriodStart.into_iden(),
                    BudgetEvents::Kind.into_iden(),
                    BudgetEvents::Threshold.into_iden(),
                    BudgetEvents::LimitVersion.into_iden(),
                ],
                true,
            ))
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_index(
                Index::drop()
                    .name(NEW_INDEX)
                    .table(BudgetEvents::Table)
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(index(
                OLD_INDEX,
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
        for table in [Budgets::Table.into_iden(), BudgetEvents::Table.into_iden()] {
            manager
                .alter_table(
                    Table::alter()
                        .table(table)
                        .drop_column(Budgets::LimitVersion)
                        .to_owned(),
                )
                .await?;
        }
        Ok(())
    }
}
