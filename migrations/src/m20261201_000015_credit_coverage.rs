//! What a credit grant pays for: `covers_from` is the start of the charges it may pay.
//! `grantCredits` sets it to the start of the billing period open when the grant is
//! made (unless the operator names a date), so a goodwill credit granted mid-period pays
//! the whole period's charges. Grants made before this column existed have none and keep
//! covering the charges from their `effective_at`.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum CreditGrants {
    Table,
    CoversFrom,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(CreditGrants::Table)
                    .add_column(timestamp_with_time_zone_null(CreditGrants::CoversFrom))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(CreditGrants::Table)
                    .drop_column(CreditGrants::CoversFrom)
                    .to_owned(),
            )
            .await
    }
}
