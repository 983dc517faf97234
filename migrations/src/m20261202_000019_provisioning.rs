//! The hand-off to the operator's provisioners. `ssh_keys` are tenants' public keys
//! (unique per tenant by fingerprint); an order keeps the ids of the keys it hands over;
//! an allocation keeps where its hand-off stands (`pending`, `ready` with the endpoints a
//! customer connects to, or `failed` with the reason). Allocations placed before start
//! `pending`.

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
enum SshKeys {
    Table,
    Id,
    TenantId,
    Name,
    KeyType,
    PublicKey,
    Comment,
    Fingerprint,
    CreatedAt,
}

#[derive(DeriveIden)]
enum Orders {
    Table,
    SshKeyIds,
}

#[derive(DeriveIden)]
enum Allocations {
    Table,
    AccessState,
    AccessEndpoints,
    AccessReason,
    AccessChangedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(SshKeys::Table)
                    .col(uuid(SshKeys::Id).primary_key())
                    .col(uuid(SshKeys::TenantId))
                    .col(string(SshKeys::Name))
                    .col(string(SshKeys::KeyType))
                    .col(text(SshKeys::PublicKey))
                    .col(string(SshKeys::Comment))
                    .col(string(SshKeys::Fingerprint))
                    .col(timestamp_with_time_zone(SshKeys::CreatedAt))
                    .foreign_key(&mut fk(
                        SshKeys::Table,
                        SshKeys::TenantId,
                        Tenants::Table,
                        Tenants::Id,
                    ))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(index(
                "idx_ssh_keys_tenant_fingerprint",
                SshKeys::Table,
                vec![
                    SshKeys::TenantId.into_iden(),
                    SshKeys::Fingerprint.into_iden(),
                ],
                true,
            ))
            .await?;
        add(manager, Orders::Table, json_null(Orders::SshKeyIds)).await?;
        let columns = [
            string(Allocations::AccessState)
                .default("pending")
                .to_owned(),
            json_null(Allocations::AccessEndpoints),
            text_null(Allocations::AccessReason),
            timestamp_with_time_zone_null(Allocations::AccessChangedAt),
        ];
        for column in columns {
            add(manager, Allocations::Table, column).await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for column in [
            Allocations::AccessChangedAt,
            Allocations::AccessReason,
            Allocations::AccessEndpoints,
            Allocations::AccessState,
        ] {
            drop(manager, Allocations::Table, column).await?;
        }
        drop(manager, Orders::Table, Orders::SshKeyIds).await?;
        manager
            .drop_table(Table::drop().table(SshKeys::Table).to_owned())
            .await
    }
}

/// One column per statement: SQLite alters one at a time.
async fn add(
    manager: &SchemaManager<'_>,
    table: impl IntoIden + 'static,
    mut column: ColumnDef,
) -> Result<(), DbErr> {
    manager
        .alter_table(
            Table::alter()
                .table(table)
                .add_column(&mut column)
                .to_owned(),
        )
        .await
}

async fn drop(
    manager: &SchemaManager<'_>,
    table: impl IntoIden + 'static,
    column: impl IntoIden + 'static,
) -> Result<(), DbErr> {
    manager
        .alter_table(Table::alter().table(table).drop_column(column).to_owned())
        .await
}
