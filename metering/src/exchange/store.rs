//! `exchange_rates`: the operator's rates, only ever added (a pair's start is unique).

use chrono::{DateTime, Utc};
use neocloud_schema::entity::exchange_rate;
use neocloud_schema::money::Currency;
use rust_decimal::Decimal;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryOrder,
    Set,
};
use uuid::Uuid;

use super::{Rate, Rates};

/// A rate to add, as given.
#[derive(Debug, Clone)]
pub struct NewRate {
    pub from: String,
    pub to: String,
    pub rate: Decimal,
    pub effective_from: DateTime<Utc>,
    pub source: String,
}

#[derive(Debug, thiserror::Error)]
pub enum RateError {
    #[error("{field}: {message}")]
    Invalid {
        field: &'static str,
        message: String,
    },
    #[error("database: {0}")]
    Database(#[from] DbErr),
}

fn invalid(field: &'static str, message: impl Into<String>) -> RateError {
    RateError::Invalid {
        field,
        message: message.into(),
    }
}

/// The largest rate taken (units of one currency per unit of another: a won per franc is
/// about 1,600).
const MAX_RATE: Decimal = Decimal::from_parts(1_000_000, 0, 0, false, 0);
/// Decimal places a rate may have.
const MAX_RATE_DIGITS: u32 = 10;

/// Every rate, as statements read them.
pub async fn table<C: ConnectionTrait>(conn: &C) -> Result<Rates, DbErr> {
    let rates = list(conn, None, None).await?;
    Ok(Rates::new(
        rates
            .into_iter()
            .map(|r| Rate {
                from: r.from_currency,
                to: r.to_currency,
                rate: r.rate.get(),
                effective_from: r.effective_from,
            })
            .collect(),
    ))
}

/// The rates (of one source or target currency, with `Some`), by pair and start.
pub async fn list<C: ConnectionTrait>(
    conn: &C,
    from: Option<&str>,
    to: Option<&str>,
) -> Result<Vec<exchange_rate::Model>, DbErr> {
    let mut query = exchange_rate::Entity::find();
    if let Some(from) = from {
        query = query.filter(exchange_rate::Column::FromCurrency.eq(from.to_ascii_uppercase()));
    }
    if let Some(to) = to {
        query = query.filter(exchange_rate::Column::ToCurrency.eq(to.to_ascii_uppercase()));
    }
    query
        .order_by_asc(exchange_rate::Column::FromCurrency)
        .order_by_asc(exchange_rate::Column::ToCurrency)
        .order_by_asc(exchange_rate::Column::EffectiveFrom)
        .all(conn)
        .await
}

fn currency(field: &'static str, code: &str) -> Result<String, RateError> {
    code.trim()
        .to_ascii_uppercase()
        .parse::<Currency>()
        .map(|c| c.code().to_owned())
        .map_err(|_| invalid(field, "a supported ISO 4217 code, e.g. EUR"))
}

/// Whether the pair has a rate starting at `at`.
async fn starts_at<C: ConnectionTrait>(
    conn: &C,
    from: &str,
    to: &str,
    at: DateTime<Utc>,
) -> Result<bool, DbErr> {
    let found = exchange_rate::Entity::find()
        .filter(exchange_rate::Column::FromCurrency.eq(from))
        .filter(exchange_rate::Column::ToCurrency.eq(to))
        .filter(exchange_rate::Column::EffectiveFrom.eq(at))
        .one(conn)
        .await?;
    Ok(found.is_some())
}

/// Adds each of `rates` whose pair has no rate starting at the same instant (a feed read
/// again adds nothing); the ones added. Run in a write transaction.
pub async fn add_new<C: ConnectionTrait>(
    conn: &C,
    rates: Vec<NewRate>,
    now: DateTime<Utc>,
) -> Result<Vec<exchange_rate::Model>, RateError> {
    let (Some(first), Some(last)) = (
        rates.iter().map(|r| r.effective_from).min(),
        rates.iter().map(|r| r.effective_from).max(),
    ) else {
        return Ok(Vec::new());
    };
    let existing: std::collections::HashSet<(String, String, DateTime<Utc>)> =
        exchange_rate::Entity::find()
            .filter(exchange_rate::Column::EffectiveFrom.between(first, last))
            .all(conn)
            .await?
            .into_iter()
            .map(|r| (r.from_currency, r.to_currency, r.effective_from))
            .collect();
    let mut added = Vec::new();
    for rate in rates {
        let key = (rate.from.clone(), rate.to.clone(), rate.effective_from);
        if !existing.contains(&key) {
            added.push(add(conn, rate, now).await?);
        }
    }
    Ok(added)
}

/// Adds a rate: two different supported currencies, 0 < rate ≤ 1,000,000 with at most 10
/// decimals, a source of at most 200 characters, and no other rate of the pair starting
/// at the same instant. Run in a write transaction.
pub async fn add<C: ConnectionTrait>(
    conn: &C,
    rate: NewRate,
    now: DateTime<Utc>,
) -> Result<exchange_rate::Model, RateError> {
    let from = currency("from", &rate.from)?;
    let to = currency("to", &rate.to)?;
    if from == to {
        return Err(invalid("to", "another currency than from"));
    }
    if rate.rate <= Decimal::ZERO || rate.rate > MAX_RATE {
        return Err(invalid("rate", "above 0 and at most 1,000,000"));
    }
    if rate.rate.normalize().scale() > MAX_RATE_DIGITS {
        return Err(invalid("rate", "at most 10 decimal places"));
    }
    let source = rate.source.trim();
    if source.chars().count() > 200 || source.chars().any(char::is_control) {
        return Err(invalid(
            "source",
            "at most 200 characters, no control characters",
        ));
    }
    if starts_at(conn, &from, &to, rate.effective_from).await? {
        return Err(invalid(
            "effectiveFrom",
            format!("{from}→{to} already has a rate from this instant; add one from another"),
        ));
    }
    Ok(exchange_rate::ActiveModel {
        id: Set(Uuid::now_v7()),
        from_currency: Set(from),
        to_currency: Set(to),
        rate: Set(rate.rate.normalize().into()),
        effective_from: Set(rate.effective_from),
        source: Set(source.to_owned()),
        created_at: Set(now),
    }
    .insert(conn)
    .await?)
}
