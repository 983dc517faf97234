//! neocloud-migrations: the database schema as append-only migrations, one file per change
//! (`mYYYYMMDD_HHMMSS_what.rs`). Every migration behaves identically on SQLite (the
//! embedded default) and PostgreSQL: money and quantities are TEXT decimals, enumerations
//! TEXT names, ids UUIDs, times timestamps with time zone.
//!
//! Never edit a migration that has shipped; add a new one.

// No panics on values from outside, no `as` cast where a checked conversion exists, and
// no function longer than `too-many-lines-threshold` (clippy.toml).
#![warn(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap,
    clippy::cast_lossless,
    clippy::too_many_lines
)]
#![cfg_attr(
    test,
    allow(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_possible_wrap,
        clippy::cast_lossless,
        clippy::too_many_lines
    )
)]

pub use sea_orm_migration::prelude::*;

mod helpers;
mod m20261129_000001_core;
mod m20261129_000002_ordering;
mod m20261129_000003_metering;
mod m20261129_000004_invoicing;
mod m20261129_000005_budgets;
mod m20261129_000006_payments;
mod m20261129_000007_payment_outbox;
mod m20261129_000008_dunning;
mod m20261129_000009_top_ups;
mod m20261129_000010_coverage_from_batches;
mod m20261129_000011_node_energy;
mod m20261129_000012_ingest_journal;
mod m20261129_000013_budget_limit_versions;
mod m20261201_000014_ingest_quarantine;
mod m20261201_000015_credit_coverage;
mod m20261202_000016_gpu_event_gpu;
mod m20261202_000017_numeric_money;
mod m20261202_000018_events;
mod m20261202_000019_provisioning;
mod m20261203_000020_budget_endpoints;
mod m20261204_000021_meters;
mod m20261204_000022_volumes;
mod m20261204_000023_model_offerings;
mod m20261205_000024_usage_event_identity;
mod m20261205_000025_scale_out;
mod m20261205_000026_usage_event_journal;
mod m20261206_000027_audit_chain;
mod m20261206_000028_payment_terms;
mod m20261206_000029_parties;
mod m20261206_000030_taxes;
mod m20261206_000031_credit_notes;
mod m20261206_000032_erasure;
mod m20261206_000033_residency;
mod m20261206_000034_web_sessions;
mod m20261206_000035_portal_users;
mod m20261206_000036_oidc;
mod m20261206_000037_ledger;
mod m20261206_000038_providers;
mod m20261206_000039_provider_agreements;
mod m20261206_000040_provider_statements;
mod m20261206_000041_provider_payouts;
mod m20261206_000042_node_verification;
mod m20261206_000043_node_reliability;
mod m20261206_000044_second_factor;
mod m20261207_000045_statement_credit_notes;
mod m20261207_000046_node_retirement;
mod m20261207_000047_one_open_period;
mod m20261207_000048_nats_users;
mod m20261207_000049_exchange_rates;
mod m20261207_000050_usage_hours;
mod m20261207_000051_second_factor_required;
mod m20261207_000052_payment_method_label;
mod m20261207_000053_mail_outbox;
mod m20261207_000054_node_fabric;
mod m20261207_000055_session_oidc_sid;
mod m20261208_000056_provider_users;
mod m20261208_000057_fixed_rate_credit_notes;
mod m20261208_000058_provider_second_factor;

pub struct Migrator;

#[async_trait::async_trait]
impl MigratorTrait for Migrator {
    fn migrations() -> Vec<Box<dyn MigrationTrait>> {
        vec![
            Box::new(m20261129_000001_core::Migration),
            Box::new(m20261129_000002_ordering::Migration),
            Box::new(m20261129_000003_metering::Migration),
            Box::new(m20261129_000004_invoicing::Migration),
            Box::new(m20261129_000005_budgets::Migration),
            Box::new(m20261129_000006_payments::Migration),
            Box::new(m20261129_000007_payment_outbox::Migration),
            Box::new(m20261129_000008_dunning::Migration),
            Box::new(m20261129_000009_top_ups::Migration),
            Box::new(m20261129_000010_coverage_from_batches::Migration),
            Box::new(m20261129_000011_node_energy::Migration),
            Box::new(m20261129_000012_ingest_journal::Migration),
            Box::new(m20261129_000013_budget_limit_versions::Migration),
            Box::new(m20261201_000014_ingest_quarantine::Migration),
            Box::new(m20261201_000015_credit_coverage::Migration),
            Box::new(m20261202_000016_gpu_event_gpu::Migration),
            Box::new(m20261202_000017_numeric_money::Migration),
            Box::new(m20261202_000018_events::Migration),
            Box::new(m20261202_000019_provisioning::Migration),
            Box::new(m20261203_000020_budget_endpoints::Migration),
            Box::new(m20261204_000021_meters::Migration),
            Box::new(m20261204_000022_volumes::Migration),
            Box::new(m20261204_000023_model_offerings::Migration),
            Box::new(m20261205_000024_usage_event_identity::Migration),
            Box::new(m20261205_000025_scale_out::Migration),
            Box::new(m20261205_000026_usage_event_journal::Migration),
            Box::new(m20261206_000027_audit_chain::Migration),
            Box::new(m20261206_000028_payment_terms::Migration),
            Box::new(m20261206_000029_parties::Migration),
            Box::new(m20261206_000030_taxes::Migration),
            Box::new(m20261206_000031_credit_notes::Migration),
            Box::new(m20261206_000032_erasure::Migration),
            Box::new(m20261206_000033_residency::Migration),
            Box::new(m20261206_000034_web_sessions::Migration),
            Box::new(m20261206_000035_portal_users::Migration),
            Box::new(m20261206_000036_oidc::Migration),
            Box::new(m20261206_000037_ledger::Migration),
            Box::new(m20261206_000038_providers::Migration),
            Box::new(m20261206_000039_provider_agreements::Migration),
            Box::new(m20261206_000040_provider_statements::Migration),
            Box::new(m20261206_000041_provider_payouts::Migration),
            Box::new(m20261206_000042_node_verification::Migration),
            Box::new(m20261206_000043_node_reliability::Migration),
            Box::new(m20261206_000044_second_factor::Migration),
            Box::new(m20261207_000045_statement_credit_notes::Migration),
            Box::new(m20261207_000046_node_retirement::Migration),
            Box::new(m20261207_000047_one_open_period::Migration),
            Box::new(m20261207_000048_nats_users::Migration),
            Box::new(m20261207_000049_exchange_rates::Migration),
            Box::new(m20261207_000050_usage_hours::Migration),
            Box::new(m20261207_000051_second_factor_required::Migration),
            Box::new(m20261207_000052_payment_method_label::Migration),
            Box::new(m20261207_000053_mail_outbox::Migration),
            Box::new(m20261207_000054_node_fabric::Migration),
            Box::new(m20261207_000055_session_oidc_sid::Migration),
            Box::new(m20261208_000056_provider_users::Migration),
            Box::new(m20261208_000057_fixed_rate_credit_notes::Migration),
            Box::new(m20261208_000058_provider_second_factor::Migration),
        ]
    }
}
