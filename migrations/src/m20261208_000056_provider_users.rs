//! Provider users: the people of a hardware provider sign in to the provider console with
//! an email, a password and a second factor, as a tenant's people sign in to the portal.
//! A `portal_users` row now belongs to a tenant or to a provider, never both:
//! `tenant_id` becomes nullable, `provider_id` is added, and a check keeps exactly one.
//! PostgreSQL alters the table; SQLite, which cannot drop a `NOT NULL`, copies it into a
//! new one with the same columns and indexes.

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::*;
use sea_orm_migration::sea_orm::{ConnectionTrait, DbBackend};

use crate::helpers::fk;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum PortalUsers {
    Id,
    TenantId,
    ProviderId,
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
    TotpSecret,
    TotpPendingSecret,
    TotpEnabledAt,
    TotpLastStep,
    RecoveryCodes,
}

#[derive(DeriveIden)]
enum Tenants {
    Table,
    Id,
}

#[derive(DeriveIden)]
enum Providers {
    Table,
    Id,
}

#[derive(DeriveIden)]
enum ApiKeys {
    Table,
    Id,
}

const ONE_OWNER: &str = "(tenant_id IS NULL) <> (provider_id IS NULL)";
const COLUMNS: &str = "id, tenant_id, email, role, api_key_id, password_hash, invitation_hash, \
     invitation_expires_at, failed_sign_ins, locked_until, created_at, last_sign_in_at, \
     disabled_at, totp_secret, totp_pending_secret, totp_enabled_at, totp_last_step, \
     recovery_codes";

/// `portal_users` under `name`: 035's and 044's columns, then (`with_providers`) with the
/// tenant optional and a provider beside it, exactly one of them set.
fn table(name: &str, with_providers: bool) -> TableCreateStatement {
    let mut table = Table::create();
    table
        .table(Alias::new(name))
        .col(uuid(PortalUsers::Id).primary_key());
    if with_providers {
        table
            .col(uuid_null(PortalUsers::TenantId))
            .col(uuid_null(PortalUsers::ProviderId))
            .check(Expr::cust(ONE_OWNER))
            .foreign_key(&mut fk(
                Alias::new(name),
                PortalUsers::ProviderId,
                Providers::Table,
                Providers::Id,
            ));
    } else {
        table.col(uuid(PortalUsers::TenantId));
    }
    table
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
        .col(string_null(PortalUsers::TotpSecret))
        .col(string_null(PortalUsers::TotpPendingSecret))
        .col(timestamp_with_time_zone_null(PortalUsers::TotpEnabledAt))
        .col(big_integer_null(PortalUsers::TotpLastStep))
        .col(json_null(PortalUsers::RecoveryCodes))
        .foreign_key(&mut fk(
            Alias::new(name),
            PortalUsers::TenantId,
            Tenants::Table,
            Tenants::Id,
        ))
        .foreign_key(&mut fk(
            Alias::new(name),
            PortalUsers::ApiKeyId,
            ApiKeys::Table,
            ApiKeys::Id,
        ))
        .to_owned()
}

/// SQLite: copies the tenants' users into `table(.., with_providers)`, which takes the
/// old table's place and indexes. One script, so that one connection runs all of it.
async fn rebuild(manager: &SchemaManager<'_>, with_providers: bool) -> Result<(), DbErr> {
    let create = DbBackend::Sqlite
        .build(&table("portal_users_056", with_providers))
        .to_string();
    let script = [
        &create,
        &format!(
            "INSERT INTO portal_users_056 ({COLUMNS}) SELECT {COLUMNS} FROM portal_users \
             WHERE tenant_id IS NOT NULL"
        ),
        "DROP TABLE portal_users",
        "ALTER TABLE portal_users_056 RENAME TO portal_users",
        // 035's indexes, which went with the old table.
        "CREATE UNIQUE INDEX portal_users_active_email ON portal_users (email) \
         WHERE disabled_at IS NULL",
        "CREATE INDEX portal_users_invitation ON portal_users (invitation_hash)",
        "CREATE INDEX portal_users_tenant ON portal_users (tenant_id)",
    ]
    .join(";\n");
    manager.get_connection().execute_unprepared(&script).await?;
    Ok(())
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        if manager.get_database_backend() == DbBackend::Postgres {
            for sql in [
                "ALTER TABLE portal_users ALTER COLUMN tenant_id DROP NOT NULL",
                "ALTER TABLE portal_users ADD COLUMN provider_id uuid NULL \
                 REFERENCES providers (id) ON DELETE RESTRICT",
                &format!(
                    "ALTER TABLE portal_users ADD CONSTRAINT portal_users_one_owner \
                     CHECK ({ONE_OWNER})"
                ),
            ] {
                db.execute_unprepared(sql).await?;
            }
        } else {
            rebuild(manager, true).await?;
        }
        db.execute_unprepared("CREATE INDEX portal_users_provider ON portal_users (provider_id)")
            .await?;
        Ok(())
    }

    /// Provider users go; the tenants' stay.
    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        if manager.get_database_backend() != DbBackend::Postgres {
            return rebuild(manager, false).await;
        }
        for sql in [
            "DELETE FROM portal_users WHERE provider_id IS NOT NULL",
            "ALTER TABLE portal_users DROP COLUMN provider_id",
            "ALTER TABLE portal_users ALTER COLUMN tenant_id SET NOT NULL",
        ] {
            db.execute_unprepared(sql).await?;
        }
        Ok(())
    }
}
