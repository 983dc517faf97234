//! Model offerings. `meters.filter` lets a meter count only the events whose values at
//! some paths are among the ones it names (unset for meters defined before: every event of
//! their type); `model_offerings` holds the models an operator sells per token, each with
//! the metered SKUs and meters that bill it.

use sea_orm_migration::{prelude::*, schema::*};

use crate::helpers::{fk, index};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Meters {
    Table,
    Filter,
}

#[derive(DeriveIden)]
enum Skus {
    Table,
    Id,
}

#[derive(DeriveIden)]
enum ModelOfferings {
    Table,
    Id,
    Name,
    Region,
    InputSkuId,
    OutputSkuId,
    CachedSkuId,
    RequestSkuId,
    MaxTokensPerRequest,
    Description,
    CreatedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Meters::Table)
                    .add_column(json_null(Meters::Filter))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(ModelOfferings::Table)
                    .col(uuid(ModelOfferings::Id).primary_key())
                    .col(string(ModelOfferings::Name))
                    .col(string(ModelOfferings::Region))
                    .col(uuid(ModelOfferings::InputSkuId))
                    .col(uuid(ModelOfferings::OutputSkuId))
                    .col(uuid_null(ModelOfferings::CachedSkuId))
                    .col(uuid_null(ModelOfferings::RequestSkuId))
                    .col(big_integer(ModelOfferings::MaxTokensPerRequest))
                    .col(string(ModelOfferings::Description))
                    .col(timestamp_with_time_zone(ModelOfferings::CreatedAt))
                    .foreign_key(&mut fk(
                        ModelOfferings::Table,
                        ModelOfferings::InputSkuId,
                        Skus::Table,
                        Skus::Id,
                    ))
                    .foreign_key(&mut fk(
                        ModelOfferings::Table,
                        ModelOfferings::OutputSkuId,
                        Skus::Table,
                        Skus::Id,
                    ))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(index(
                "idx_model_offerings_name_region",
                ModelOfferings::Table,
                vec![
                    ModelOfferings::Name.into_iden(),
                    ModelOfferings::Region.into_iden(),
                ],
                true,
            ))
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(ModelOfferings::Table).to_owned())
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Meters::Table)
                    .drop_column(Meters::Filter)
                    .to_owned(),
            )
            .await
    }
}
