//! The operator's exchange rates: `exchangeRates`, `addExchangeRate` and
//! `fetchReferenceRates`. Rates are decimal strings: units of `to` per unit of `from`.

use async_graphql::{Context, ID, InputObject, Object, Result, SimpleObject};
use chrono::{DateTime, Utc};
use neocloud_metering::exchange::store::NewRate;
use neocloud_schema::entity::exchange_rate;
use neocloud_schema::money::parse_plain_decimal;

use super::scalars::to_id;
use crate::error::ApiError;
use crate::providers::exchange_rates;

/// One rate of a currency pair, in force from `effectiveFrom` until the pair's next.
#[derive(SimpleObject)]
pub struct ExchangeRate {
    pub id: ID,
    /// ISO 4217.
    #[graphql(name = "from")]
    pub from_currency: String,
    /// ISO 4217.
    #[graphql(name = "to")]
    pub to_currency: String,
    /// Units of `to` per unit of `from`.
    pub rate: String,
    pub effective_from: DateTime<Utc>,
    pub source: String,
}

impl From<exchange_rate::Model> for ExchangeRate {
    fn from(r: exchange_rate::Model) -> Self {
        ExchangeRate {
            id: to_id(r.id),
            from_currency: r.from_currency,
            to_currency: r.to_currency,
            rate: r.rate.get().normalize().to_string(),
            effective_from: r.effective_from,
            source: r.source,
        }
    }
}

#[derive(InputObject)]
pub struct AddExchangeRateInput {
    /// ISO 4217, e.g. `USD`.
    pub from: String,
    /// ISO 4217, e.g. `EUR`.
    pub to: String,
    /// Units of `to` per unit of `from`: above 0, at most 1,000,000 and 10 decimals.
    pub rate: String,
    /// Any instant, past included (a rate published after the day it is for); a pair
    /// has one rate per instant.
    pub effective_from: DateTime<Utc>,
    /// Where it comes from, e.g. `ECB reference rate 2026-11-30` (at most 200 characters).
    #[graphql(default)]
    pub source: String,
}

/// What one reading of the reference-rate feed added.
#[derive(SimpleObject)]
pub struct ReferenceRatesFetched {
    /// The newest day the feed holds rates for, `YYYY-MM-DD` (each day's in force from
    /// its start, UTC).
    pub day: String,
    /// How many days the feed holds (1 for a daily feed; a history back-fills).
    pub days: i32,
    /// Pairs added over all its days; 0 when every day was read before.
    pub added: i32,
}

#[derive(Default)]
pub struct ExchangeRateQuery;

#[Object]
impl ExchangeRateQuery {
    /// The operator's exchange rates, by pair and start (operator).
    async fn exchange_rates(
        &self,
        ctx: &Context<'_>,
        from: Option<String>,
        to: Option<String>,
    ) -> Result<Vec<ExchangeRate>> {
        let (db, principal) = (super::db(ctx)?, super::principal(ctx)?);
        let pair = (from.as_deref(), to.as_deref());
        let rates = exchange_rates::list(db, principal, pair).await?;
        Ok(rates.into_iter().map(ExchangeRate::from).collect())
    }
}

#[derive(Default)]
pub struct ExchangeRateMutation;

#[Object]
impl ExchangeRateMutation {
    /// Adds a rate (operator; audited). A provider paid in another currency than an
    /// invoice's earns from it at the rate in force at the invoice's period end; a
    /// statement held for a missing rate closes on the next sweep.
    async fn add_exchange_rate(
        &self,
        ctx: &Context<'_>,
        input: AddExchangeRateInput,
    ) -> Result<ExchangeRate> {
        let rate =
            parse_plain_decimal(input.rate.trim()).map_err(|e| ApiError::invalid("rate", e))?;
        let new = NewRate {
            from: input.from,
            to: input.to,
            rate,
            effective_from: input.effective_from,
            source: input.source,
        };
        let (db, principal) = (super::db(ctx)?, super::principal(ctx)?);
        let added = exchange_rates::add(db, principal, new, super::now(ctx)?).await?;
        Ok(added.into())
    }

    /// Reads the reference-rate feed now (operator; it is also read every 6 hours):
    /// every pair of each day's supported currencies not added before, audited.
    /// `UNAVAILABLE` without a feed, or when it does not answer; `INVALID_INPUT` on
    /// `feed` when what it answers is not days of rates, or holds a day to come.
    async fn fetch_reference_rates(&self, ctx: &Context<'_>) -> Result<ReferenceRatesFetched> {
        let feed = ctx
            .data_opt::<Option<std::sync::Arc<exchange_rates::ReferenceFeed>>>()
            .and_then(|f| f.as_deref());
        let (db, principal) = (super::db(ctx)?, super::principal(ctx)?);
        let fetched = exchange_rates::fetch_now(db, principal, feed, super::now(ctx)?).await?;
        Ok(ReferenceRatesFetched {
            day: fetched.date.to_string(),
            days: i32::try_from(fetched.days).unwrap_or(i32::MAX),
            added: i32::try_from(fetched.added).unwrap_or(i32::MAX),
        })
    }
}
