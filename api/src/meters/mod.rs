//! Meters and usage events at the api's edge: who may define meters (operators), read
//! them (every user: customers re-derive their charges from them, as from plans) and read
//! a tenant's metered usage (its own users; operators, any tenant), who may report events
//! (usage reporter keys and operators), the audit of each new meter version, and the
//! transaction a batch of events is recorded in. The rules and tables are
//! `neocloud_metering::meters`.

use chrono::{DateTime, Utc};
use neocloud_metering::meters::quantity::{self, MeterQuantity};
use neocloud_metering::meters::record::{self, Outcome, Reporter};
use neocloud_metering::meters::{self, NewMeter, store};
use neocloud_schema::entity::meter;
use neocloud_schema::ids::TenantId;
use sea_orm::{DatabaseConnection, DbErr};
use serde_json::{Value, json};

use crate::audit;
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};

/// Longest span a metered-usage query covers.
pub const MAX_RANGE_DAYS: i64 = 93;

/// `createMeter` (operator): the next version of the meter under the key.
pub async fn create(
    db: &DatabaseConnection,
    actor: &Principal,
    new: &NewMeter,
    now: DateTime<Utc>,
) -> ApiResult<meter::Model> {
    actor.require_operator()?;
    let txn = crate::db::begin_write(db).await?;
    let created = meters::create(&txn, new, now).await?;
    audit::record(
        &txn,
        actor,
        audit::Entry {
            tenant_id: None,
            action: "meter.create",
            object_type: "meter",
            object_id: created.id.to_string(),
            before: None,
            after: Some(describe(&created)),
        },
    )
    .await?;
    txn.commit().await?;
    Ok(created)
}

fn describe(m: &meter::Model) -> Value {
    json!({
        "key": m.key,
        "version": m.version,
        "event_type": m.event_type,
        "value_path": m.value_path,
        "aggregation": m.aggregation,
        "group_by": m.group_by,
        "filter": m.filter,
        "max_value": m.max_value.to_string(),
        "sku": m.sku_id,
    })
}

/// `meters`: every version of every meter, by key and version.
pub async fn list(db: &DatabaseConnection, actor: &Principal) -> ApiResult<Vec<meter::Model>> {
    actor.require_user()?;
    Ok(store::all_versions(db).await?)
}

/// `meterUsage`: what the meters counted for the tenant in `[from, to)`, per meter version
/// and group.
pub async fn usage(
    db: &DatabaseConnection,
    actor: &Principal,
    tenant: Option<TenantId>,
    (from, to): (DateTime<Utc>, DateTime<Utc>),
) -> ApiResult<Vec<MeterQuantity>> {
    let tenant = actor.acting_tenant(tenant)?;
    if to <= from {
        return Err(ApiError::invalid("to", "must be after from"));
    }
    if (to - from).num_days() > MAX_RANGE_DAYS {
        return Err(ApiError::invalid(
            "to",
            format!("a query spans at most {MAX_RANGE_DAYS} days"),
        ));
    }
    Ok(quantity::by_group(db, tenant, from, to).await?)
}

/// `POST /v1/events`: records a batch in one transaction (retried once when the database
/// gives up on it, e.g. a deadlock between two batches of one tenant); one outcome per
/// event.
pub async fn report(
    db: &DatabaseConnection,
    actor: &Principal,
    events: &[Value],
    now: DateTime<Utc>,
) -> ApiResult<Vec<Outcome>> {
    let reporter = Reporter {
        tenant: actor.usage_reporter()?,
    };
    match record_once(db, reporter, events, now).await {
        Ok(outcomes) => Ok(outcomes),
        Err(err) => {
            tracing::warn!(error = %err, "Recording usage events failed; retrying once.");
            Ok(record_once(db, reporter, events, now).await?)
        }
    }
}

async fn record_once(
    db: &DatabaseConnection,
    reporter: Reporter,
    events: &[Value],
    now: DateTime<Utc>,
) -> Result<Vec<Outcome>, DbErr> {
    let txn = crate::db::begin_write(db).await?;
    let outcomes = record::record(&txn, reporter, events, now).await?;
    txn.commit().await?;
    Ok(outcomes)
}
