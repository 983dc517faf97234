//! sea-orm entities (feature `db`): one module per table. Decimal money and quantities are
//! `Exact` fields, stored as TEXT holding the exact decimal, never as a float or a
//! database-specific numeric, so SQLite and PostgreSQL behave identically; a stored value
//! that is not a decimal fails the read instead of becoming zero.
//! Enumerations are stored as their snake_case names (see `crate::vocabulary`).
//!
//! Tables are created by `neocloud-migrations`; a column added here needs a migration.

pub mod allocation;
pub mod allocation_gpu;
pub mod api_key;
pub mod audit_log;
mod exact;
pub use exact::{Exact, NotExact};
pub mod billing_profile;
pub mod budget;
pub mod budget_event;
pub mod credit_application;
pub mod credit_grant;
pub mod credit_note;
pub mod credit_note_line;
pub mod event;
pub mod event_log_head;
pub mod exchange_rate;
pub mod fleet_epoch;
pub mod gpu;
pub mod gpu_event;
pub mod gpu_health_interval;
pub mod ingest_anomaly;
pub mod ingest_batch;
pub mod ingest_pending;
pub mod ingest_quarantine;
pub mod ingest_rejection;
pub mod invoice;
pub mod invoice_line;
pub mod invoice_reminder;
pub mod invoice_sequence;
pub mod ledger_account;
pub mod ledger_entry;
pub mod ledger_transfer;
pub mod mail;
pub mod meter;
pub mod meter_group;
pub mod meter_minute;
pub mod meter_unique;
pub mod model_offering;
pub mod nats_user;
pub mod node;
pub mod node_coverage_hour;
pub mod node_energy;
pub mod node_reliability;
pub mod oidc_login;
pub mod operator_identity;
pub mod order;
pub mod payment_account;
pub mod payment_outbox;
pub mod plan;
pub mod plan_rate;
pub mod plan_version;
pub mod portal_user;
pub mod provider;
pub mod provider_agreement;
pub mod provider_payout;
pub mod provider_statement;
pub mod provider_statement_line;
pub mod quota;
pub mod sku;
pub mod ssh_key;
pub mod stripe_event;
pub mod tax_rate;
pub mod tenant;
pub mod tenant_plan;
pub mod top_up;
pub mod usage_event_batch;
pub mod usage_event_key;
pub mod usage_hour;
pub mod usage_minute;
pub mod volume;
pub mod volume_size;
pub mod web_session;
pub mod webhook_attempt;
pub mod webhook_delivery;
pub mod webhook_endpoint;
