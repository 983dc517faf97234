//! What a tenant's usage cost (docs/metering.md, "Cost"): the unit costs of the billing
//! periods a usage read spans, from each finalized invoice's kept rating and from the
//! open period rated as of now. A voided invoice charged nothing: its period's usage
//! shows no cost.

use chrono::{DateTime, Utc};
use neocloud_schema::entity::invoice;
use neocloud_schema::ids::TenantId;
use neocloud_schema::vocabulary::InvoiceStatus;
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter};

use super::{InvoicingError, rate_open, store};
use crate::rating::unit_cost::UnitCosts;

/// The unit costs of `tenant`'s periods overlapping `[from, to)`.
pub async fn unit_costs<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    (from, to): (DateTime<Utc>, DateTime<Utc>),
    now: DateTime<Utc>,
) -> Result<UnitCosts, InvoicingError> {
    let mut costs = UnitCosts::default();
    let finalized = invoice::Entity::find()
        .filter(invoice::Column::TenantId.eq(tenant))
        .filter(invoice::Column::Status.is_not_in([InvoiceStatus::Draft, InvoiceStatus::Void]))
        .filter(invoice::Column::PeriodStart.lt(to))
        .filter(invoice::Column::PeriodEnd.gt(from))
        .all(conn)
        .await?;
    for inv in &finalized {
        if let Some((input, lines)) = store::kept_rating(inv) {
            costs.add_period(&input, &lines);
        }
    }
    let draft = rate_open(conn, tenant, now, None).await?;
    if draft.invoice.period_start < to {
        costs.add_period(&draft.input, &draft.rated.lines);
    }
    Ok(costs)
}
