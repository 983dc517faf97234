//! Payments: `paymentAccount`, `topUps`; `startCardSetup`, `finishCardSetup`,
//! `setDefaultPaymentMethod` and `startTopUp` (tenant admin); `setCollectionMode`
//! (operator).

use std::sync::Arc;

use async_graphql::{Context, Enum, ID, Object, Result, SimpleObject};
use chrono::{DateTime, Utc};
use neocloud_metering::payments::gateway::Gateway;
use neocloud_schema::entity::{payment_account, top_up};

use super::scalars::{parse_id, tenant_arg, to_id};
use crate::payments;
use crate::payments::cards::CardForm;

#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug)]
#[graphql(
    remote = "neocloud_schema::vocabulary::CollectionMode",
    name = "CollectionMode"
)]
pub enum GqlCollectionMode {
    /// Each finalized invoice is charged to the default payment method.
    ChargeAutomatically,
    /// A Stripe-hosted invoice is sent, payable by transfer within `daysUntilDue`.
    SendInvoice,
}

#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug)]
#[graphql(
    remote = "neocloud_schema::vocabulary::TopUpStatus",
    name = "TopUpStatus"
)]
pub enum GqlTopUpStatus {
    Pending,
    Paid,
    Failed,
}

/// A tenant's account with the payment provider.
#[derive(SimpleObject)]
pub struct PaymentAccount {
    pub tenant_id: ID,
    pub stripe_customer_id: Option<String>,
    pub default_payment_method: Option<String>,
    /// What the default payment method is recognised by: `Visa •••• 4242, expires 12/2030`.
    pub default_payment_method_label: Option<String>,
    pub collection_mode: GqlCollectionMode,
    /// Payment terms of hosted invoices (`SEND_INVOICE`).
    pub days_until_due: i32,
    pub updated_at: DateTime<Utc>,
}

impl From<payment_account::Model> for PaymentAccount {
    fn from(a: payment_account::Model) -> Self {
        PaymentAccount {
            tenant_id: to_id(a.tenant_id),
            stripe_customer_id: a.stripe_customer_id,
            default_payment_method: a.default_payment_method,
            default_payment_method_label: a.default_payment_method_label,
            collection_mode: a.collection_mode.into(),
            days_until_due: a.days_until_due,
            updated_at: a.updated_at,
        }
    }
}

/// A card being added: the portal loads Stripe.js from `stripeJsUrl` with
/// `publishableKey` and confirms the SetupIntent with `clientSecret` (handed to this
/// browser only, never stored), then calls `finishCardSetup(setupIntentId)`.
#[derive(SimpleObject)]
pub struct CardSetup {
    pub setup_intent_id: String,
    pub client_secret: String,
    pub publishable_key: String,
    pub stripe_js_url: String,
}

impl From<payments::cards::Started> for CardSetup {
    fn from(s: payments::cards::Started) -> Self {
        CardSetup {
            setup_intent_id: s.setup_intent_id,
            client_secret: s.client_secret,
            publishable_key: s.publishable_key,
            stripe_js_url: s.js_url,
        }
    }
}

/// Prepaid credit bought through Stripe; `PAID` once the payment succeeded, with the
/// credit grant it bought.
#[derive(SimpleObject)]
pub struct TopUp {
    pub id: ID,
    /// Decimal string in `currency`.
    pub amount: String,
    pub currency: String,
    pub status: GqlTopUpStatus,
    pub credit_grant_id: Option<ID>,
    /// Why the payment was refused.
    pub failure: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<top_up::Model> for TopUp {
    fn from(t: top_up::Model) -> Self {
        TopUp {
            id: to_id(t.id),
            amount: t.amount.to_string(),
            currency: t.currency,
            status: t.status.into(),
            credit_grant_id: t.credit_grant_id.map(to_id),
            failure: t.failure,
            created_at: t.created_at,
            updated_at: t.updated_at,
        }
    }
}

fn gateway<'a>(ctx: &'a Context<'_>) -> Option<&'a Gateway> {
    ctx.data_opt::<Option<Arc<Gateway>>>()
        .and_then(|g| g.as_deref())
}

#[derive(Default)]
pub struct PaymentQuery;

#[Object]
impl PaymentQuery {
    /// The tenant's payment account, or null before one was set up.
    async fn payment_account(
        &self,
        ctx: &Context<'_>,
        tenant_id: Option<ID>,
    ) -> Result<Option<PaymentAccount>> {
        let found = payments::account(
            super::db(ctx)?,
            super::principal(ctx)?,
            tenant_arg(tenant_id)?,
        )
        .await?;
        Ok(found.map(Into::into))
    }

    /// Whether cards can be added in the portal here (`startCardSetup`): Stripe is
    /// configured with a publishable key.
    async fn card_setup_available(&self, ctx: &Context<'_>) -> bool {
        ctx.data_opt::<Option<CardForm>>()
            .is_some_and(Option::is_some)
    }

    /// The tenant's top-ups, newest first (the latest 100).
    async fn top_ups(&self, ctx: &Context<'_>, tenant_id: Option<ID>) -> Result<Vec<TopUp>> {
        let found = payments::top_ups::list(
            super::db(ctx)?,
            super::principal(ctx)?,
            tenant_arg(tenant_id)?,
        )
        .await?;
        Ok(found.into_iter().map(Into::into).collect())
    }
}

#[derive(Default)]
pub struct PaymentMutation;

#[Object]
impl PaymentMutation {
    /// Starts adding a card (tenant admin): a Stripe SetupIntent for the tenant's
    /// customer, to confirm in the browser with Stripe.js. `UNAVAILABLE` where the
    /// operator has not configured a publishable key.
    async fn start_card_setup(&self, ctx: &Context<'_>) -> Result<CardSetup> {
        let form = ctx.data_opt::<Option<CardForm>>().and_then(Option::as_ref);
        let started = payments::cards::start(
            super::db(ctx)?,
            super::principal(ctx)?,
            gateway(ctx),
            form,
            super::now(ctx)?,
        )
        .await?;
        Ok(started.into())
    }

    /// Makes the card of a SetupIntent confirmed in the browser the default payment
    /// method (tenant admin). Another tenant's SetupIntent → `NOT_FOUND`; one not
    /// confirmed yet → `INVALID_STATE`.
    async fn finish_card_setup(
        &self,
        ctx: &Context<'_>,
        setup_intent_id: String,
    ) -> Result<PaymentAccount> {
        let saved = payments::cards::finish(
            super::db(ctx)?,
            super::principal(ctx)?,
            gateway(ctx),
            &setup_intent_id,
            super::now(ctx)?,
        )
        .await?;
        Ok(saved.into())
    }

    /// Attaches a payment method collected by the portal (Stripe.js / SetupIntent) to the
    /// tenant's Stripe customer and makes it the default for charging invoices.
    async fn set_default_payment_method(
        &self,
        ctx: &Context<'_>,
        payment_method_id: String,
    ) -> Result<PaymentAccount> {
        let saved = payments::set_default_payment_method(
            super::db(ctx)?,
            super::principal(ctx)?,
            gateway(ctx),
            &payment_method_id,
            super::now(ctx)?,
        )
        .await?;
        Ok(saved.into())
    }

    /// Removes the default payment method (tenant admin): detached from the tenant's
    /// Stripe customer and no longer charged; invoices and top-ups due wait for a new
    /// one. `NOT_FOUND` when there is none.
    async fn remove_payment_method(&self, ctx: &Context<'_>) -> Result<PaymentAccount> {
        let saved = payments::remove_payment_method(
            super::db(ctx)?,
            super::principal(ctx)?,
            gateway(ctx),
            super::now(ctx)?,
        )
        .await?;
        Ok(saved.into())
    }

    /// Buys prepaid credit (tenant admin): the default payment method is charged `amount`
    /// (a decimal string in the tenant's currency, 1 to 1,000,000) and the credit is
    /// granted once the payment succeeds. The same `idempotencyKey` returns the same
    /// top-up; with another amount → `IDEMPOTENCY_CONFLICT`.
    async fn start_top_up(
        &self,
        ctx: &Context<'_>,
        amount: String,
        idempotency_key: Option<String>,
    ) -> Result<TopUp> {
        let created = payments::top_ups::start(
            super::db(ctx)?,
            super::principal(ctx)?,
            gateway(ctx).is_some(),
            &amount,
            idempotency_key,
            super::now(ctx)?,
        )
        .await?;
        Ok(created.into())
    }

    /// How the tenant's next invoices are collected (operator); `daysUntilDue` (1–365,
    /// default 30) are the payment terms of hosted invoices.
    async fn set_collection_mode(
        &self,
        ctx: &Context<'_>,
        tenant_id: ID,
        mode: GqlCollectionMode,
        days_until_due: Option<i32>,
    ) -> Result<PaymentAccount> {
        let saved = payments::set_collection_mode(
            super::db(ctx)?,
            super::principal(ctx)?,
            parse_id("tenantId", &tenant_id)?,
            mode.into(),
            days_until_due,
            super::now(ctx)?,
        )
        .await?;
        Ok(saved.into())
    }
}
