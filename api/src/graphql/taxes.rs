//! The operator's tax rates: `taxRates`, `addTaxRate`, `endTaxRate`. Percentages are
//! decimal strings.

use async_graphql::{Context, ID, InputObject, Object, Result, SimpleObject};
use chrono::{DateTime, Utc};
use neocloud_metering::tax::store::NewRate;
use neocloud_schema::entity::tax_rate;
use neocloud_schema::money::parse_plain_decimal;

use super::scalars::{parse_id, to_id};
use crate::error::ApiError;
use crate::invoicing::taxes;

/// One rate of a jurisdiction over `[validFrom, validUntil)`.
#[derive(SimpleObject)]
pub struct TaxRate {
    pub id: ID,
    /// ISO 3166-1 alpha-2.
    pub jurisdiction: String,
    pub percent: String,
    pub valid_from: DateTime<Utc>,
    /// Null: in force until ended.
    pub valid_until: Option<DateTime<Utc>>,
    pub description: String,
}

impl From<tax_rate::Model> for TaxRate {
    fn from(r: tax_rate::Model) -> Self {
        TaxRate {
            id: to_id(r.id),
            jurisdiction: r.jurisdiction,
            percent: r.percent.get().normalize().to_string(),
            valid_from: r.valid_from,
            valid_until: r.valid_until,
            description: r.description,
        }
    }
}

#[derive(InputObject)]
pub struct AddTaxRateInput {
    /// ISO 3166-1 alpha-2, e.g. `DE`.
    pub jurisdiction: String,
    /// From 0 to below 100, at most 4 decimals, e.g. `19` or `25.5`.
    pub percent: String,
    pub valid_from: DateTime<Utc>,
    /// Null: until ended with `endTaxRate`.
    pub valid_until: Option<DateTime<Utc>>,
    #[graphql(default)]
    pub description: String,
}

#[derive(Default)]
pub struct TaxQuery;

#[Object]
impl TaxQuery {
    /// The operator's tax rates, by jurisdiction and start (operator).
    async fn tax_rates(
        &self,
        ctx: &Context<'_>,
        jurisdiction: Option<String>,
    ) -> Result<Vec<TaxRate>> {
        let rates = taxes::list(
            super::db(ctx)?,
            super::principal(ctx)?,
            jurisdiction.as_deref(),
        )
        .await?;
        Ok(rates.into_iter().map(TaxRate::from).collect())
    }
}

#[derive(Default)]
pub struct TaxMutation;

#[Object]
impl TaxMutation {
    /// Adds a rate (operator). Rates of one jurisdiction never overlap; invoices keep the
    /// rate they were taxed at.
    async fn add_tax_rate(&self, ctx: &Context<'_>, input: AddTaxRateInput) -> Result<TaxRate> {
        let percent = parse_plain_decimal(input.percent.trim())
            .map_err(|e| ApiError::invalid("percent", e))?;
        let rate = NewRate {
            jurisdiction: input.jurisdiction,
            percent,
            valid_from: input.valid_from,
            valid_until: input.valid_until,
            description: input.description,
        };
        let added = taxes::add(
            super::db(ctx)?,
            super::principal(ctx)?,
            rate,
            super::now(ctx)?,
        )
        .await?;
        Ok(added.into())
    }

    /// Ends an open-ended rate at `validUntil`, now or later (operator).
    async fn end_tax_rate(
        &self,
        ctx: &Context<'_>,
        id: ID,
        valid_until: DateTime<Utc>,
    ) -> Result<TaxRate> {
        let id: uuid::Uuid = parse_id("id", &id)?;
        let (db, principal) = (super::db(ctx)?, super::principal(ctx)?);
        let ended = taxes::end(db, principal, id, valid_until, super::now(ctx)?).await?;
        Ok(ended.into())
    }
}
