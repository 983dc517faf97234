//! `portal_users`: people who sign in to the portal with an email and a password. A user
//! is invited by a tenant admin (a one-time token, stored as its SHA-256), sets a
//! password (stored as an argon2id PHC string) and acts through an API key of its own
//! whose secret nobody ever sees, so roles, audit and revocation are those of keys.
//! An email belongs to one active user.

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::*;
use sea_orm_migration::sea_orm::ConnectionTrait;

use crate::helpers::fk;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum PortalUsers {
    Table,
    Id,
    TenantId,
    Email,
    Role,
    ApiKeyId,
    PasswordHash,
    InvitationHash,
    InvitationExpiresAt,
    FailedSignIns,
    LockedUntil,
    CreatedAt,
    LastSignInAt,
    DisabledAt,
}

#[derive(DeriveIden)]
enum Tenants {
    Table,
    Id,
}

#[derive(DeriveIden)]
enum ApiKeys {
    Table,
    Id,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(PortalUsers::Table)
                    .col(uuid(PortalUsers::Id).primary_key())
                    .col(uuid(PortalUsers::TenantId))
                    .col(string(PortalUsers::Email))
                    .col(string(PortalUsers::Role))
                    .col(uuid(PortalUsers::ApiKeyId))
                    .col(text_null(PortalUsers::PasswordHash))
                    .col(string_null(PortalUsers::InvitationHash))
                    .col(timestamp_with_time_zone_null(
                        PortalUsers::InvitationExpiresAt,
                    ))
                    .col(integer(PortalUsers::FailedSignIns).default(0))
                    .col(timestamp_with_time_zone_null(PortalUsers::LockedUntil))
                    .col(timestamp_with_time_zone(PortalUsers::CreatedAt))
                    .col(timestamp_with_time_zone_null(PortalUsers::LastSignInAt))
                    .col(timestamp_with_time_zone_null(PortalUsers::DisabledAt))
                    .foreign_key(&mut fk(
                        PortalUsers::Table,
                        PortalUsers::TenantId,
                        Tenants::Table,
                        Tenants::Id,
                    ))
                    .foreign_key(&mut fk(
                        PortalUsers::Table,
                        PortalUsers::ApiKeyId,
                        ApiKeys::Table,
                        ApiKeys::Id,
                    ))
                    .to_owned(),
            )
            .await?;
        // Same syntax on both engines: one active user per email, invitations found by hash.
        let db = manager.get_connection();
        db.execute_unprepared(
            "CREATE UNIQUE INDEX portal_users_active_email ON portal_users (email) \
             WHERE disabled_at IS NULL",
        )
        .await?;
        db.execute_unprepared(
            "CREATE INDEX portal_users_invitation ON portal_users (invitation_hash)",
        )
        .await?;
        db.execute_unprepared("CREATE INDEX portal_users_tenant ON portal_users (tenant_id)")
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(PortalUsers::Table).to_owned())
            .await
    }
}
