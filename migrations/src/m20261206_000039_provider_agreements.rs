//! Provider agreements: the terms a provider's capacity is resold on, versioned per
//! provider and never changed once written (a new version takes effect from its start).
//! `model`: `revenue_share` (the provider earns `revenue_share_percent` of what tenants
//! are invoiced for its hardware) or `fixed_rate` (`fixed_rates`: a price per unit-hour
//! per SKU form and region); `platform_fee_percent` is taken from the provider's gross;
//! `sla_credits_borne_by`: `provider` or `platform`; payouts `monthly` once at least
//! `payout_minimum` is owed, and with `hold_until_paid` only out of invoices tenants paid.

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::*;
use sea_orm_migration::sea_orm::{ConnectionTrait, DbBackend};

use crate::helpers::{exact, fk, index};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum ProviderAgreements {
    Table,
    Id,
    ProviderId,
    Version,
    EffectiveFrom,
    Currency,
    Model,
    RevenueSharePercent,
    FixedRates,
    PlatformFeePercent,
    SlaCreditsBorneBy,
    PayoutSchedule,
    PayoutMinimum,
    HoldUntilPaid,
    CreatedAt,
    CreatedBy,
}

#[derive(DeriveIden)]
enum Providers {
    Table,
    Id,
}

const POSTGRES_GUARD: &str = r"
CREATE FUNCTION provider_agreements_frozen() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'a provider agreement is never changed: add a new version';
END
$$ LANGUAGE plpgsql;
CREATE TRIGGER provider_agreements_frozen BEFORE UPDATE OR DELETE ON provider_agreements
    FOR EACH ROW EXECUTE FUNCTION provider_agreements_frozen();
";

const SQLITE_GUARD: [&str; 2] = [
    r"CREATE TRIGGER provider_agreements_no_update BEFORE UPDATE ON provider_agreements
      BEGIN SELECT RAISE(ABORT, 'a provider agreement is never changed: add a new version'); END",
    r"CREATE TRIGGER provider_agreements_no_delete BEFORE DELETE ON provider_agreements
      BEGIN SELECT RAISE(ABORT, 'a provider agreement is never changed: add a new version'); END",
];

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let backend = manager.get_database_backend();
        let percent = |col| exact(backend, col);
        manager
            .create_table(
                Table::create()
                    .table(ProviderAgreements::Table)
                    .col(uuid(ProviderAgreements::Id).primary_key())
                    .col(uuid(ProviderAgreements::ProviderId))
                    .col(integer(ProviderAgreements::Version))
                    .col(timestamp_with_time_zone(ProviderAgreements::EffectiveFrom))
                    .col(string_len(ProviderAgreements::Currency, 3))
                    .col(string(ProviderAgreements::Model))
                    .col(percent(ProviderAgreements::RevenueSharePercent).null())
                    .col(json(ProviderAgreements::FixedRates))
                    .col(percent(ProviderAgreements::PlatformFeePercent).not_null())
                    .col(string(ProviderAgreements::SlaCreditsBorneBy))
                    .col(string(ProviderAgreements::PayoutSchedule))
                    .col(percent(ProviderAgreements::PayoutMinimum).not_null())
                    .col(boolean(ProviderAgreements::HoldUntilPaid))
                    .col(timestamp_with_time_zone(ProviderAgreements::CreatedAt))
                    .col(uuid_null(ProviderAgreements::CreatedBy))
                    .foreign_key(&mut fk(
                        ProviderAgreements::Table,
                        ProviderAgreements::ProviderId,
                        Providers::Table,
                        Providers::Id,
                    ))
                    .to_owned(),
            )
            .await?;
        for (name, second) in [
            ("provider_agreements_version", ProviderAgreements::Version),
            (
                "provider_agreements_start",
                ProviderAgreements::EffectiveFrom,
            ),
        ] {
            manager
                .create_index(index(
                    name,
                    ProviderAgreements::Table,
                    vec![
                        ProviderAgreements::ProviderId.into_iden(),
                        second.into_iden(),
                    ],
                    true,
                ))
                .await?;
        }
        let conn = manager.get_connection();
        match backend {
            DbBackend::Postgres => conn.execute_unprepared(POSTGRES_GUARD).await.map(|_| ()),
            _ => {
                for sql in SQLITE_GUARD {
                    conn.execute_unprepared(sql).await?;
                }
                Ok(())
            }
        }
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        if manager.get_database_backend() == DbBackend::Postgres {
            manager
                .get_connection()
                .execute_unprepared("DROP FUNCTION provider_agreements_frozen() CASCADE")
                .await?;
        }
        manager
            .drop_table(Table::drop().table(ProviderAgreements::Table).to_owned())
            .await
    }
}
