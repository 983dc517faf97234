//! Dunning: after a payment event changed an invoice, a tenant whose invoice failed
//! `failures` times is suspended for new orders; once it has paid, a tenant that dunning
//! suspended is resumed. The verdict is recorded on the tenant's payment account here;
//! changing the tenant's status (and auditing it) is tenancy's, in the same transaction.

use chrono::{DateTime, Utc};
use neocloud_schema::entity::{invoice, tenant};
use neocloud_schema::vocabulary::{InvoiceStatus, TenantStatus};
use sea_orm::{ConnectionTrait, DbErr, EntityTrait, QuerySelect};

use super::{Event, accounts};

/// What dunning decided for a tenant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub tenant: tenant::Model,
    /// The tenant's status from now on.
    pub status: TenantStatus,
    pub invoice: invoice::Model,
}

impl Verdict {
    pub fn suspends(&self) -> bool {
        self.status == TenantStatus::Suspended
    }
}

/// Judges the tenant of the invoice `event` changed (0 `failures`: never suspend) and
/// records the verdict on its payment account. `None`: nothing changes.
pub async fn judge<C: ConnectionTrait>(
    conn: &C,
    event: &Event,
    failures: i32,
    now: DateTime<Utc>,
) -> Result<Option<Verdict>, DbErr> {
    let Some(found) = (match event.invoice {
        Some(id) => invoice::Entity::find_by_id(id).one(conn).await?,
        None => None,
    }) else {
        return Ok(None);
    };
    // Locked: two payment events of one tenant judged at once (on two replicas) see each
    // other's verdict, so a tenant is suspended or resumed once.
    let Some(owner) = tenant::Entity::find_by_id(found.tenant_id)
        .lock_exclusive()
        .one(conn)
        .await?
    else {
        return Ok(None);
    };
    let suspended_by_dunning = accounts::find(conn, owner.id)
        .await?
        .is_some_and(|a| a.dunning_suspended_at.is_some());
    let suspend = failures > 0
        && found.status.is_owed()
        && found.payment_failures >= failures
        && owner.status == TenantStatus::Active;
    let resume = found.status == InvoiceStatus::Paid
        && owner.status == TenantStatus::Suspended
        && suspended_by_dunning;
    if !(suspend || resume) {
        return Ok(None);
    }
    accounts::set_dunning_suspended(conn, owner.id, suspend.then_some(now), now).await?;
    Ok(Some(Verdict {
        tenant: owner,
        status: if suspend {
            TenantStatus::Suspended
        } else {
            TenantStatus::Active
        },
        invoice: found,
    }))
}
