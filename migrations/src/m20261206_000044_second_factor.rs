//! Portal users' second factor: a TOTP secret (RFC 6238; `totp_pending_secret` while it
//! is being set up, `totp_secret` once a code confirmed it), the last time step used (a
//! code counts once), and the SHA-256 of each unused recovery code (a JSON array).

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum PortalUsers {
    Table,
    TotpSecret,
    TotpPendingSecret,
    TotpEnabledAt,
    TotpLastStep,
    RecoveryCodes,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for mut col in [
            string_null(PortalUsers::TotpSecret),
            string_null(PortalUsers::TotpPendingSecret),
            timestamp_with_time_zone_null(PortalUsers::TotpEnabledAt),
            big_integer_null(PortalUsers::TotpLastStep),
            json_null(PortalUsers::RecoveryCodes),
        ] {
            manager
                .alter_table(
                    Table::alter()
                        .table(PortalUsers::Table)
                        .add_column(&mut col)
                        .to_owned(),
                )
                .await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for col in [
            PortalUsers::TotpSecret,
            PortalUsers::TotpPendingSecret,
            PortalUsers::TotpEnabledAt,
            PortalUsers::TotpLastStep,
            PortalUsers::RecoveryCodes,
        ] {
            manager
                .alter_table(
                    Table::alter()
                        .table(PortalUsers::Table)
                        .drop_column(col)
                        .to_owned(),
                )
                .await?;
        }
        Ok(())
    }
}
