//! Budgets' rule: a tenant's monthly spend limit judged against the open period's spend
//! so far (the draft, rated: usage, fees, SLA credits, adjustments and commitment
//! discount — not the true-up nor credits).
//!
//! - each alert threshold (percent of the limit) the spend has reached is recorded once
//!   per limit version, as a tenant-visible event (a new limit is judged afresh);
//! - with a hard cap, the budget is blocked while the spend is at or over the limit;
//! - with `stop_allocations` too, once the limit is reached and no prepaid credit is left
//!   to pay for the period, the tenant's running allocations must stop — which ordering
//!   does; [`record_stopped`] then says so.
//!
//! Each is an event of the log (`budget.threshold_crossed`, `budget.blocked`,
//! `budget.allocations_stopped`), delivered to the tenant's webhook endpoints like any
//! other. `store` owns the budget tables.

pub mod store;

use chrono::{DateTime, Utc};
use neocloud_schema::entity::{budget, event};
use neocloud_schema::ids::TenantId;
use rust_decimal::Decimal;
use sea_orm::{ConnectionTrait, DatabaseConnection, DbErr};

use crate::events::{self, NewEvent};
use crate::invoicing::{self, InvoicingError};
use serde_json::json;

/// Where a tenant's open period stands, rated.
#[derive(Debug, Clone)]
pub struct Standing {
    pub spend: Decimal,
    /// What credits do not pay of the period so far.
    pub due: Decimal,
    pub period_start: DateTime<Utc>,
    pub period_end: DateTime<Utc>,
}

/// Rates the tenant's open period as of `now` (outside any write transaction: only the
/// decisions are written).
pub async fn standing(
    db: &DatabaseConnection,
    tenant: TenantId,
    now: DateTime<Utc>,
) -> Result<Standing, InvoicingError> {
    // Budgets limit spend before tax.
    let draft = invoicing::rate_open(db, tenant, now, None).await?;
    Ok(Standing {
        spend: draft.rated.spend(),
        due: draft.rated.total,
        period_start: draft.invoice.period_start,
        period_end: draft.invoice.period_end,
    })
}

/// A budget judged against a standing.
#[derive(Debug, Clone)]
pub struct Judged {
    pub budget: budget::Model,
    pub standing: Standing,
    /// The tenant's running allocations must stop.
    pub stop_allocations: bool,
    pub now: DateTime<Utc>,
}

/// Judges the tenant's budget, read again (locked) in `conn`'s transaction so that the
/// decisions follow the limit in force then: records the thresholds reached and sets or
/// clears the block. `None` when the tenant has no budget (any more).
pub async fn judge<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    standing: Standing,
    now: DateTime<Utc>,
) -> Result<Option<Judged>, DbErr> {
    let Some(found) = store::find_for_update(conn, tenant).await? else {
        return Ok(None);
    };
    let limit = found.monthly_limit.get();
    let over = standing.spend >= limit;
    let judged = Judged {
        stop_allocations: found.hard_cap
            && found.stop_allocations
            && over
            && standing.due > Decimal::ZERO,
        budget: found,
        standing,
        now,
    };
    for threshold in thresholds(&judged.budget) {
        if judged.standing.spend * Decimal::ONE_HUNDRED >= limit * Decimal::from(threshold) {
            record(conn, &judged, "threshold_crossed", threshold).await?;
        }
    }
    let blocked = judged.budget.hard_cap && over;
    if blocked != judged.budget.blocked_since.is_some() {
        store::set_blocked(conn, tenant, blocked.then_some(now)).await?;
        if blocked {
            tell(conn, &judged, "budget.blocked", json!({})).await?;
        }
    }
    Ok(Some(judged))
}

/// The alert thresholds, in percent of the limit.
pub fn thresholds(budget: &budget::Model) -> Vec<i32> {
    serde_json::from_value(budget.alert_thresholds.clone()).unwrap_or_default()
}

/// Records that the tenant's allocations were stopped for this budget.
pub async fn record_stopped<C: ConnectionTrait>(conn: &C, judged: &Judged) -> Result<(), DbErr> {
    record(conn, judged, "allocations_stopped", 100).await
}

/// Records an event of the budget's limit version (once per kind and threshold), and the
/// event of the log that carries it.
async fn record<C: ConnectionTrait>(
    conn: &C,
    judged: &Judged,
    kind: &str,
    threshold: i32,
) -> Result<(), DbErr> {
    let recorded = store::record_event(
        conn,
        store::NewEvent {
            tenant: judged.budget.tenant_id,
            period_start: judged.standing.period_start,
            kind,
            threshold,
            spend: judged.standing.spend,
            limit: judged.budget.monthly_limit,
            limit_version: judged.budget.limit_version,
            now: judged.now,
        },
    )
    .await?;
    let Some(id) = recorded else {
        return Ok(());
    };
    let event = if kind == "threshold_crossed" {
        let extra = json!({"threshold_pct": threshold});
        tell(conn, judged, "budget.threshold_crossed", extra).await?
    } else {
        tell(conn, judged, "budget.allocations_stopped", json!({})).await?
    };
    store::set_event(conn, id, event.id).await
}

/// Records a budget event of the event log: the spend against the limit, with `extra`.
async fn tell<C: ConnectionTrait>(
    conn: &C,
    judged: &Judged,
    kind: &'static str,
    extra: serde_json::Value,
) -> Result<event::Model, DbErr> {
    let mut data = json!({
        "spend": judged.standing.spend.to_string(),
        "monthly_limit": judged.budget.monthly_limit.get().to_string(),
        "currency": judged.budget.currency,
        "period_start": judged.standing.period_start,
    });
    if let (Some(data), Some(extra)) = (data.as_object_mut(), extra.as_object()) {
        data.extend(extra.clone());
    }
    let event = NewEvent::tenant(kind, judged.budget.tenant_id, judged.now, data);
    events::record(conn, event, judged.now).await
}
