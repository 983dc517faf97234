//! The operator's tax rates: `taxRates`, `addTaxRate` and `endTaxRate`, each change
//! audited. What applies to an invoice is `neocloud_metering::tax`.

use chrono::{DateTime, Utc};
use neocloud_metering::tax::store::{self, NewRate, RateError};
use neocloud_schema::entity::tax_rate;
use sea_orm::DatabaseConnection;
use uuid::Uuid;

use crate::audit;
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};

impl From<RateError> for ApiError {
    fn from(e: RateError) -> Self {
        match e {
            RateError::Invalid { field, message } => ApiError::invalid(field, message),
            RateError::NotFound => ApiError::not_found("tax rate"),
            RateError::Database(source) => ApiError::Database { source },
        }
    }
}

/// `taxRates(jurisdiction)` (operator).
pub async fn list(
    db: &DatabaseConnection,
    actor: &Principal,
    jurisdiction: Option<&str>,
) -> ApiResult<Vec<tax_rate::Model>> {
    actor.require_operator()?;
    Ok(store::list(db, jurisdiction).await?)
}

fn described(rate: &tax_rate::Model) -> serde_json::Value {
    serde_json::json!({
        "jurisdiction": rate.jurisdiction,
        "percent": rate.percent.get().to_string(),
        "valid_from": rate.valid_from,
        "valid_until": rate.valid_until,
        "description": rate.description,
    })
}

/// `addTaxRate` (operator).
pub async fn add(
    db: &DatabaseConnection,
    actor: &Principal,
    rate: NewRate,
    now: DateTime<Utc>,
) -> ApiResult<tax_rate::Model> {
    actor.require_operator()?;
    let txn = crate::db::begin_write(db).await?;
    let added = store::add(&txn, rate, now).await?;
    audit::record(
        &txn,
        actor,
        audit::Entry {
            tenant_id: None,
            action: "tax_rate.add",
            object_type: "tax_rate",
            object_id: added.id.to_string(),
            before: None,
            after: Some(described(&added)),
        },
    )
    .await?;
    txn.commit().await?;
    Ok(added)
}

/// `endTaxRate` (operator).
pub async fn end(
    db: &DatabaseConnection,
    actor: &Principal,
    id: Uuid,
    until: DateTime<Utc>,
    now: DateTime<Utc>,
) -> ApiResult<tax_rate::Model> {
    actor.require_operator()?;
    let txn = crate::db::begin_write(db).await?;
    let ended = store::end(&txn, id, until, now).await?;
    audit::record(
        &txn,
        actor,
        audit::Entry {
            tenant_id: None,
            action: "tax_rate.end",
            object_type: "tax_rate",
            object_id: id.to_string(),
            before: None,
            after: Some(described(&ended)),
        },
    )
    .await?;
    txn.commit().await?;
    Ok(ended)
}
