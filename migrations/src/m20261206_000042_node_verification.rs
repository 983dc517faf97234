//! Node verification: whether the hardware a node's agent reports is what was
//! registered. Nodes registered before (by operators) are `trusted`; a provider's node is
//! `pending` until its agent reports, then `verified` or `mismatch` with the reason.

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Nodes {
    Table,
    Verification,
    VerificationReason,
    VerifiedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        // SQLite adds one column per statement.
        for column in [
            string(Nodes::Verification).default("trusted").to_owned(),
            text_null(Nodes::VerificationReason).to_owned(),
            timestamp_with_time_zone_null(Nodes::VerifiedAt).to_owned(),
        ] {
            manager
                .alter_table(
                    Table::alter()
                        .table(Nodes::Table)
                        .add_column(column)
                        .to_owned(),
                )
                .await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for column in [
            Nodes::Verification,
            Nodes::VerificationReason,
            Nodes::VerifiedAt,
        ] {
            manager
                .alter_table(
                    Table::alter()
                        .table(Nodes::Table)
                        .drop_column(column)
                        .to_owned(),
                )
                .await?;
        }
        Ok(())
    }
}
