//! `tax_rates`: the operator's table. Rates of one jurisdiction never overlap; a rate is
//! only ever added, or given an end if it had none.

use chrono::{DateTime, Utc};
use neocloud_schema::entity::tax_rate;
use rust_decimal::Decimal;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryOrder,
    Set,
};
use uuid::Uuid;

use super::TaxRate;

/// A rate to add, as given.
#[derive(Debug, Clone)]
pub struct NewRate {
    pub jurisdiction: String,
    pub percent: Decimal,
    pub valid_from: DateTime<Utc>,
    pub valid_until: Option<DateTime<Utc>>,
    pub description: String,
}

#[derive(Debug, thiserror::Error)]
pub enum RateError {
    #[error("{field}: {message}")]
    Invalid {
        field: &'static str,
        message: String,
    },
    #[error("no such tax rate")]
    NotFound,
    #[error("database: {0}")]
    Database(#[from] DbErr),
}

fn invalid(field: &'static str, message: impl Into<String>) -> RateError {
    RateError::Invalid {
        field,
        message: message.into(),
    }
}

/// Every rate, as the determination reads them.
pub async fn table<C: ConnectionTrait>(conn: &C) -> Result<Vec<TaxRate>, DbErr> {
    Ok(list(conn, None)
        .await?
        .into_iter()
        .map(|r| TaxRate {
            jurisdiction: r.jurisdiction,
            percent: r.percent.get(),
            valid_from: r.valid_from,
            valid_until: r.valid_until,
        })
        .collect())
}

/// The rates (of one jurisdiction, with `Some`), by jurisdiction and start.
pub async fn list<C: ConnectionTrait>(
    conn: &C,
    jurisdiction: Option<&str>,
) -> Result<Vec<tax_rate::Model>, DbErr> {
    let mut query = tax_rate::Entity::find();
    if let Some(j) = jurisdiction {
        query = query.filter(tax_rate::Column::Jurisdiction.eq(j.to_ascii_uppercase()));
    }
    query
        .order_by_asc(tax_rate::Column::Jurisdiction)
        .order_by_asc(tax_rate::Column::ValidFrom)
        .all(conn)
        .await
}

fn overlaps(a: (DateTime<Utc>, Option<DateTime<Utc>>), b: &tax_rate::Model) -> bool {
    let a_before_b_ends = b.valid_until.is_none_or(|end| a.0 < end);
    let b_before_a_ends = a.1.is_none_or(|end| b.valid_from < end);
    a_before_b_ends && b_before_a_ends
}

/// Adds a rate: a country code, 0 ≤ percent < 100 with at most 4 decimals, an end after
/// its start, and no overlap with another rate of the jurisdiction. Run in a write
/// transaction.
pub async fn add<C: ConnectionTrait>(
    conn: &C,
    rate: NewRate,
    now: DateTime<Utc>,
) -> Result<tax_rate::Model, RateError> {
    let jurisdiction = rate.jurisdiction.trim().to_ascii_uppercase();
    if jurisdiction.len() != 2 || !jurisdiction.bytes().all(|b| b.is_ascii_uppercase()) {
        return Err(invalid(
            "jurisdiction",
            "an ISO 3166-1 alpha-2 code, e.g. DE",
        ));
    }
    if rate.percent < Decimal::ZERO || rate.percent >= Decimal::ONE_HUNDRED {
        return Err(invalid("percent", "at least 0 and below 100"));
    }
    if rate.percent.normalize().scale() > 4 {
        return Err(invalid("percent", "at most 4 decimal places"));
    }
    if rate.valid_until.is_some_and(|u| u <= rate.valid_from) {
        return Err(invalid("validUntil", "must be after validFrom"));
    }
    let description = rate.description.trim();
    if description.chars().count() > 200 || description.chars().any(char::is_control) {
        return Err(invalid(
            "description",
            "at most 200 characters, no control characters",
        ));
    }
    let span = (rate.valid_from, rate.valid_until);
    if let Some(other) = list(conn, Some(&jurisdiction))
        .await?
        .iter()
        .find(|r| overlaps(span, r))
    {
        return Err(invalid(
            "validFrom",
            format!(
                "overlaps the {jurisdiction} rate of {}% from {}; end that one first",
                other.percent.get().normalize(),
                other.valid_from.to_rfc3339()
            ),
        ));
    }
    Ok(tax_rate::ActiveModel {
        id: Set(Uuid::now_v7()),
        jurisdiction: Set(jurisdiction),
        percent: Set(rate.percent.normalize().into()),
        valid_from: Set(rate.valid_from),
        valid_until: Set(rate.valid_until),
        description: Set(description.to_owned()),
        created_at: Set(now),
    }
    .insert(conn)
    .await?)
}

/// Ends an open-ended rate at `until` (not before now: what was in force stays so).
pub async fn end<C: ConnectionTrait>(
    conn: &C,
    id: Uuid,
    until: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<tax_rate::Model, RateError> {
    let found = tax_rate::Entity::find_by_id(id)
        .one(conn)
        .await?
        .ok_or(RateError::NotFound)?;
    if found.valid_until.is_some() {
        return Err(invalid("id", "this rate already has an end"));
    }
    if until < now || until <= found.valid_from {
        return Err(invalid(
            "validUntil",
            "must be now or later, and after the rate's start",
        ));
    }
    let mut active: tax_rate::ActiveModel = found.into();
    active.valid_until = Set(Some(until));
    Ok(active.update(conn).await?)
}
