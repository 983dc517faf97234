//! Payments: `paymentAccount` and `setDefaultPaymentMethod` (tenant admin).

use async_graphql::{Context, ID, Object, Result, SimpleObject};
use chrono::{DateTime, Utc};
use neocloud_schema::entity::payment_account;

use super::scalars::{tenant_arg, to_id};
use crate::payments;

/// A tenant's account with the payment provider.
#[derive(SimpleObject)]
pub struct PaymentAccount {
    pub tenant_id: ID,
    pub stripe_customer_id: Option<String>,
    pub default_payment_method: Option<String>,
    /// `CHARGE_AUTOMATICALLY` or `SEND_INVOICE`.
    pub collection_mode: String,
    pub updated_at: DateTime<Utc>,
}

impl From<payment_account::Model> for PaymentAccount {
    fn from(a: payment_account::Model) -> Self {
        PaymentAccount {
            tenant_id: to_id(a.tenant_id),
            stripe_customer_id: a.stripe_customer_id,
            default_payment_method: a.default_payment_method,
            collection_mode: a.collection_mode.to_uppercase(),
            updated_at: a.updated_at,
        }
    }
}

#[derive(Default)]
pub struct PaymentQuery;

#[Object]
impl PaymentQuery {
    /// The tenant's payment account, or null before a payment method was set.
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
}

#[derive(Default)]
pub struct PaymentMutation;

#[Object]
impl PaymentMutation {
    /// Attaches a payment method collected by the portal (Stripe.js / SetupIntent) to the
    /// tenant's Stripe customer and makes it the default for charging invoices.
    async fn set_default_payment_method(
        &self,
        ctx: &Context<'_>,
        payment_method_id: String,
    ) -> Result<PaymentAccount> {
        let gateway = ctx
            .data_opt::<Option<std::sync::Arc<neocloud_metering::payments::gateway::Gateway>>>()
            .and_then(|g| g.as_deref());
        let saved = payments::set_default_payment_method(
            super::db(ctx)?,
            super::principal(ctx)?,
            gateway,
            &payment_method_id,
        )
        .await?;
        Ok(saved.into())
    }
}
