//! Provider payouts: `providerPayouts` (a provider key its own, operators any or all),
//! `createSepaPayoutFile` and `sepaPayoutFile` (operators). Money is a decimal string
//! in the payout's currency.

use async_graphql::{Context, ID, Object, Result, SimpleObject};
use chrono::{DateTime, Utc};
use neocloud_schema::entity::provider_payout;

use super::scalars::{parse_id, to_id};
use crate::providers::payouts::{self, SepaFile};

/// What a closed statement left owed to a provider, paid once.
pub struct ProviderPayout(provider_payout::Model);

#[Object]
impl ProviderPayout {
    async fn id(&self) -> ID {
        to_id(self.0.id)
    }
    async fn provider_id(&self) -> ID {
        to_id(self.0.provider_id)
    }
    /// `PO-<PROVIDER>-0001`: the number of the statement that made it due, with `PO`.
    async fn number(&self) -> &str {
        &self.0.number
    }
    async fn statement_id(&self) -> ID {
        to_id(self.0.statement_id)
    }
    async fn currency(&self) -> &str {
        &self.0.currency
    }
    async fn amount(&self) -> String {
        crate::invoicing::in_minor_units(&self.0.currency)(self.0.amount.get()).to_string()
    }
    /// `stripe_connect` or `sepa_credit_transfer`.
    async fn method(&self) -> &str {
        &self.0.method
    }
    /// `queued`, `sent` or `failed` (then owed again, and paid with the next payout).
    async fn status(&self) -> &str {
        &self.0.status
    }
    /// The Stripe transfer (`tr_…`), or the message id of the SEPA file that paid it.
    async fn reference(&self) -> Option<&str> {
        self.0.reference.as_deref()
    }
    async fn attempts(&self) -> i32 {
        self.0.attempts
    }
    async fn last_error(&self) -> Option<&str> {
        self.0.last_error.as_deref()
    }
    async fn created_at(&self) -> DateTime<Utc> {
        self.0.created_at
    }
    async fn sent_at(&self) -> Option<DateTime<Utc>> {
        self.0.sent_at
    }
}

/// A SEPA credit-transfer file (ISO 20022 `pain.001.001.09`) for the operator's bank.
#[derive(SimpleObject)]
pub struct SepaPayoutFile {
    pub message_id: String,
    pub payouts: Vec<ProviderPayout>,
    /// The file, UTF-8 XML.
    pub xml: String,
}

impl From<SepaFile> for SepaPayoutFile {
    fn from(file: SepaFile) -> Self {
        SepaPayoutFile {
            message_id: file.message_id,
            payouts: file.payouts.into_iter().map(ProviderPayout).collect(),
            xml: file.xml,
        }
    }
}

#[derive(Default)]
pub struct ProviderPayoutQuery;

#[Object]
impl ProviderPayoutQuery {
    /// Payouts, newest first: a provider key's own; operators a provider's, or all.
    async fn provider_payouts(
        &self,
        ctx: &Context<'_>,
        provider_id: Option<ID>,
    ) -> Result<Vec<ProviderPayout>> {
        let provider = super::scalars::provider_arg(provider_id)?;
        let (db, principal) = (super::db(ctx)?, super::principal(ctx)?);
        let found = payouts::list(db, principal, provider).await?;
        Ok(found.into_iter().map(ProviderPayout).collect())
    }

    /// A SEPA file made before, again (operator).
    async fn sepa_payout_file(
        &self,
        ctx: &Context<'_>,
        message_id: String,
    ) -> Result<SepaPayoutFile> {
        let (db, principal) = (super::db(ctx)?, super::principal(ctx)?);
        let debtor = super::billing(ctx)?.payout_debtor.clone();
        Ok(payouts::sepa_file_again(db, principal, debtor, &message_id)
            .await?
            .into())
    }
}

#[derive(Default)]
pub struct ProviderPayoutMutation;

#[Object]
impl ProviderPayoutMutation {
    /// Pays every queued euro SEPA payout with one file from the operator's account
    /// (operator); the payouts are sent with it.
    async fn create_sepa_payout_file(&self, ctx: &Context<'_>) -> Result<SepaPayoutFile> {
        let (db, principal) = (super::db(ctx)?, super::principal(ctx)?);
        let debtor = super::billing(ctx)?.payout_debtor.clone();
        let now = super::now(ctx)?;
        Ok(payouts::sepa_file(db, principal, debtor, now).await?.into())
    }

    /// Records that a queued payout of a `MANUAL` provider was paid outside neocloud,
    /// with what the payment is found by (operator): it is sent.
    async fn record_manual_payout(
        &self,
        ctx: &Context<'_>,
        payout_id: ID,
        reference: String,
    ) -> Result<ProviderPayout> {
        let id = parse_id("payoutId", &payout_id)?;
        let payout = payouts::record_manual(
            super::db(ctx)?,
            super::principal(ctx)?,
            id,
            &reference,
            super::now(ctx)?,
        )
        .await?;
        Ok(ProviderPayout(payout))
    }
}
