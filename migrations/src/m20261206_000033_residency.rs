//! Data residency: each tenant's `home_region` and the regions it allows orders and
//! volumes in (`allowed_regions`, a JSON array; null: any).

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Tenants {
    Table,
    HomeRegion,
    AllowedRegions,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for col in [
            string_null(Tenants::HomeRegion),
            json_null(Tenants::AllowedRegions),
        ] {
            let mut col = col;
            manager
                .alter_table(
                    Table::alter()
                        .table(Tenants::Table)
                        .add_column(&mut col)
                        .to_owned(),
                )
                .await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for col in [Tenants::HomeRegion, Tenants::AllowedRegions] {
            manager
                .alter_table(
                    Table::alter()
                        .table(Tenants::Table)
                        .drop_column(col)
                        .to_owned(),
                )
                .await?;
        }
        Ok(())
    }
}
