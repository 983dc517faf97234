//! The GraphQL API: one module per resource, merged into one schema. Resolvers are thin:
//! read arguments, call the domain service, map the result. Every request runs under
//! depth and complexity limits.

mod access;
mod api_keys;
pub mod bounds;
mod budgets;
mod catalog;
mod console;
pub mod cost;
mod credit_notes;
mod exchange_rates;
mod invoices;
mod ledger;
pub mod loaders;
mod meters;
mod models;
mod nodes;
mod ordering;
mod payments;
mod plans;
mod provider_payouts;
mod provider_statements;
mod providers;
mod reliability;
mod scalars;
mod taxes;
mod tenants;
mod usage;
mod users;
mod viewer;
mod volumes;
mod webhooks;

use async_graphql::{Context, EmptySubscription, MergedObject, Schema};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use neocloud_schema::clock::SharedClock;
use sea_orm::DatabaseConnection;

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::invoicing::Billing;
use crate::ordering::Ordering;
use crate::outbound::WebhookClient;
use crate::settings::Settings;
use neocloud_metering::payments::gateway::Gateway;

#[derive(MergedObject, Default)]
pub struct Query(
    viewer::ViewerQuery,
    tenants::TenantQuery,
    nodes::NodeQuery,
    catalog::CatalogQuery,
    api_keys::ApiKeyQuery,
    ordering::OrderingQuery,
    console::ConsoleQuery,
    usage::UsageQuery,
    plans::PlanQuery,
    meters::MeterQuery,
    invoices::InvoiceQuery,
    budgets::BudgetQuery,
    payments::PaymentQuery,
    webhooks::WebhookQuery,
    access::AccessQuery,
    volumes::VolumeQuery,
    models::ModelQuery,
    taxes::TaxQuery,
    exchange_rates::ExchangeRateQuery,
    credit_notes::CreditNoteQuery,
    users::UserQuery,
    ledger::LedgerQuery,
    providers::ProviderQuery,
    provider_statements::ProviderStatementQuery,
    provider_payouts::ProviderPayoutQuery,
);

#[derive(MergedObject, Default)]
pub struct Mutation(
    tenants::TenantMutation,
    nodes::NodeMutation,
    catalog::CatalogMutation,
    api_keys::ApiKeyMutation,
    ordering::OrderingMutation,
    console::ConsoleMutation,
    plans::PlanMutation,
    meters::MeterMutation,
    invoices::InvoiceMutation,
    budgets::BudgetMutation,
    payments::PaymentMutation,
    usage::IngestMutation,
    webhooks::WebhookMutation,
    access::AccessMutation,
    volumes::VolumeMutation,
    models::ModelMutation,
    taxes::TaxMutation,
    exchange_rates::ExchangeRateMutation,
    credit_notes::CreditNoteMutation,
    users::UserMutation,
    providers::ProviderMutation,
    provider_statements::ProviderStatementMutation,
    provider_payouts::ProviderPayoutMutation,
);

pub type NeoSchema = Schema<Query, Mutation, EmptySubscription>;

/// The caller of one request: `None` when no key was presented.
#[derive(Debug, Clone)]
pub struct Caller(pub Option<Principal>);

/// Page-size limit, shared with resolvers.
#[derive(Debug, Clone, Copy)]
pub struct PageLimit(pub u32);

/// How long events are kept (`events.retention_days`), shared with the feed.
#[derive(Debug, Clone, Copy)]
pub struct Retention(pub chrono::TimeDelta);

/// The systems beyond the database that resolvers reach.
pub struct Outside {
    /// Stripe, when payments are configured.
    pub gateway: Option<Arc<Gateway>>,
    /// Tenant-supplied webhook URLs.
    pub webhooks: Arc<WebhookClient>,
    /// NATS JetStream, when configured (the ingest stream's backlog).
    pub jetstream: Option<async_nats::jetstream::Context>,
    /// The mail server, when configured (invitations, password-reset links).
    pub mailer: Option<Arc<crate::mail::Mailer>>,
    /// The reference-rate feed, when configured.
    pub reference_rates: Option<Arc<crate::providers::exchange_rates::ReferenceFeed>>,
}

pub fn build_schema(
    db: DatabaseConnection,
    ordering: Arc<Ordering>,
    billing: Arc<Billing>,
    outside: Outside,
    clock: SharedClock,
    settings: &Settings,
) -> NeoSchema {
    let limits = &settings.limits;
    // Validated with the settings: a bad key never gets this far.
    let authority = crate::nats::authority(&settings.nats).ok().flatten();
    Schema::build(Query::default(), Mutation::default(), EmptySubscription)
        .data(db)
        .data(clock)
        .data(ordering)
        .data(billing)
        .data(outside.gateway)
        .data(outside.webhooks)
        .data(authority)
        .data(outside.jetstream)
        .data(settings.card_form())
        .data(outside.mailer)
        .data(outside.reference_rates)
        .data(PageLimit(limits.page_size_max))
        .data(Retention(settings.events.retention()))
        .extension(cost::CostLimits {
            complexity: limits.graphql_complexity,
            depth: limits.graphql_depth,
        })
        .limit_recursive_depth(32)
        .limit_directives(16)
        .finish()
}

/// The served schema in SDL: what `schema/graphql/schema.graphql` must equal.
pub fn sdl() -> String {
    Schema::build(Query::default(), Mutation::default(), EmptySubscription)
        .finish()
        .sdl()
}

pub(crate) fn db<'a>(ctx: &Context<'a>) -> ApiResult<&'a DatabaseConnection> {
    ctx.data::<DatabaseConnection>()
        .map_err(|_| ApiError::invariant("schema built without a database"))
}

/// What time it is, by the application's clock.
pub(crate) fn now(ctx: &Context<'_>) -> ApiResult<DateTime<Utc>> {
    ctx.data::<SharedClock>()
        .map(|clock| clock.now())
        .map_err(|_| ApiError::invariant("schema built without a clock"))
}

/// The authenticated caller, or `UNAUTHENTICATED`; `SECOND_FACTOR_SETUP_REQUIRED` for a
/// session that may only set up its second factor.
pub(crate) fn principal<'a>(ctx: &Context<'a>) -> ApiResult<&'a Principal> {
    let principal = setting_up_sign_in(ctx)?;
    if principal.second_factor_setup_required {
        return Err(ApiError::SecondFactorSetupRequired);
    }
    Ok(principal)
}

/// The authenticated caller, also a session that may only set up its second factor: for
/// the mutations that do that.
pub(crate) fn setting_up_sign_in<'a>(ctx: &Context<'a>) -> ApiResult<&'a Principal> {
    match ctx.data_opt::<Caller>() {
        Some(Caller(Some(principal))) => Ok(principal),
        _ => Err(ApiError::Unauthenticated {
            message: "send `Authorization: Bearer <API key>`".into(),
        }),
    }
}

pub(crate) fn webhook_client<'a>(ctx: &Context<'a>) -> ApiResult<&'a Arc<WebhookClient>> {
    ctx.data::<Arc<WebhookClient>>()
        .map_err(|_| ApiError::invariant("schema built without the webhook client"))
}

pub(crate) fn ordering_service<'a>(ctx: &Context<'a>) -> ApiResult<&'a Arc<Ordering>> {
    ctx.data::<Arc<Ordering>>()
        .map_err(|_| ApiError::invariant("schema built without the ordering service"))
}

pub(crate) fn billing<'a>(ctx: &Context<'a>) -> ApiResult<&'a Arc<Billing>> {
    ctx.data::<Arc<Billing>>()
        .map_err(|_| ApiError::invariant("schema built without billing settings"))
}

pub(crate) fn page_limit(ctx: &Context<'_>) -> u32 {
    ctx.data_opt::<PageLimit>().map_or(100, |l| l.0)
}

pub(crate) fn retention(ctx: &Context<'_>) -> chrono::TimeDelta {
    ctx.data_opt::<Retention>()
        .map_or(neocloud_metering::events::DEFAULT_RETENTION, |r| r.0)
}
