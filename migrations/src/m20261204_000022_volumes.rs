//! Storage volumes. A volume SKU names its storage class (`skus.storage_class`);
//! `volumes` holds each tenant's volumes (current size, live or deleted, whether the
//! operator's storage created it); `volume_sizes` their lifetime records, one row per
//! span at one size, which is what GB-hours bill.

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
enum Skus {
    Table,
    Id,
    StorageClass,
}

#[derive(DeriveIden)]
enum Volumes {
    Table,
    Id,
    TenantId,
    SkuId,
    Region,
    Name,
    SizeGb,
    Status,
    AccessState,
    AccessReason,
    Labels,
    CreatedAt,
    DeletedAt,
}

#[derive(DeriveIden)]
enum VolumeSizes {
    Table,
    Id,
    VolumeId,
    TenantId,
    SkuId,
    SizeGb,
    StartedAt,
    EndedAt,
}

async fn volumes(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    manager
        .create_table(
            Table::create()
                .table(Volumes::Table)
                .col(uuid(Volumes::Id).primary_key())
                .col(uuid(Volumes::TenantId))
                .col(uuid(Volumes::SkuId))
                .col(string(Volumes::Region))
                .col(string(Volumes::Name))
                .col(big_integer(Volumes::SizeGb))
                .col(string(Volumes::Status))
                .col(string(Volumes::AccessState))
                .col(string_null(Volumes::AccessReason))
                .col(json(Volumes::Labels))
                .col(timestamp_with_time_zone(Volumes::CreatedAt))
                .col(timestamp_with_time_zone_null(Volumes::DeletedAt))
                .foreign_key(&mut fk(
                    Volumes::Table,
                    Volumes::TenantId,
                    Tenants::Table,
                    Tenants::Id,
                ))
                .foreign_key(&mut fk(
                    Volumes::Table,
                    Volumes::SkuId,
                    Skus::Table,
                    Skus::Id,
                ))
                .to_owned(),
        )
        .await?;
    manager
        .create_index(index(
            "idx_volumes_tenant_status",
            Volumes::Table,
            vec![Volumes::TenantId.into_iden(), Volumes::Status.into_iden()],
            false,
        ))
        .await
}

async fn volume_sizes(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    manager
        .create_table(
            Table::create()
                .table(VolumeSizes::Table)
                .col(uuid(VolumeSizes::Id).primary_key())
                .col(uuid(VolumeSizes::VolumeId))
                .col(uuid(VolumeSizes::TenantId))
                .col(uuid(VolumeSizes::SkuId))
                .col(big_integer(VolumeSizes::SizeGb))
                .col(timestamp_with_time_zone(VolumeSizes::StartedAt))
                .col(timestamp_with_time_zone_null(VolumeSizes::EndedAt))
                .foreign_key(&mut fk(
                    VolumeSizes::Table,
                    VolumeSizes::VolumeId,
                    Volumes::Table,
                    Volumes::Id,
                ))
                .to_owned(),
        )
        .await?;
    manager
        .create_index(index(
            "idx_volume_sizes_tenant_started",
            VolumeSizes::Table,
            vec![
                VolumeSizes::TenantId.into_iden(),
                VolumeSizes::StartedAt.into_iden(),
            ],
            false,
        ))
        .await
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Skus::Table)
                    .add_column(string_null(Skus::StorageClass))
                    .to_owned(),
            )
            .await?;
        volumes(manager).await?;
        volume_sizes(manager).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in [VolumeSizes::Table.into_iden(), Volumes::Table.into_iden()] {
            manager
                .drop_table(Table::drop().table(table).to_owned())
                .await?;
        }
        manager
            .alter_table(
                Table::alter()
                    .table(Skus::Table)
                    .drop_column(Skus::StorageClass)
                    .to_owned(),
            )
            .await
    }
}
