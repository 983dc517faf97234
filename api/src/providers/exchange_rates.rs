//! The operator's exchange rates: `exchangeRates` and `addExchangeRate`, each addition
//! audited. How statements use them is `neocloud_metering::exchange`.

use chrono::{DateTime, Utc};
use neocloud_metering::exchange::store::{self, NewRate, RateError};
use neocloud_schema::entity::exchange_rate;
use sea_orm::DatabaseConnection;

use crate::audit;
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};

impl From<RateError> for ApiError {
    fn from(e: RateError) -> Self {
        match e {
            RateError::Invalid { field, message } => ApiError::invalid(field, message),
            RateError::Database(source) => ApiError::Database { source },
        }
    }
}

/// `exchangeRates(from, to)` (operator): by pair and start.
pub async fn list(
    db: &DatabaseConnection,
    actor: &Principal,
    (from, to): (Option<&str>, Option<&str>),
) -> ApiResult<Vec<exchange_rate::Model>> {
    actor.require_operator()?;
    Ok(store::list(db, from, to).await?)
}

/// `addExchangeRate` (operator).
pub async fn add(
    db: &DatabaseConnection,
    actor: &Principal,
    rate: NewRate,
    now: DateTime<Utc>,
) -> ApiResult<exchange_rate::Model> {
    actor.require_operator()?;
    let txn = crate::db::begin_write(db).await?;
    let added = store::add(&txn, rate, now).await?;
    audit::record(
        &txn,
        actor,
        audit::Entry {
            tenant_id: None,
            action: "exchange_rate.add",
            object_type: "exchange_rate",
            object_id: added.id.to_string(),
            before: None,
            after: Some(serde_json::json!({
                "from": added.from_currency,
                "to": added.to_currency,
                "rate": added.rate.get().to_string(),
                "effective_from": added.effective_from,
                "source": added.source,
            })),
        },
    )
    .await?;
    txn.commit().await?;
    Ok(added)
}
