//! SQL for budgets and their events. Every query names the tenant, except the sweep's
//! reads of all budgets and of pending webhook deliveries.

use chrono::{DateTime, Utc};
use neocloud_schema::entity::{budget, budget_event};
use rust_decimal::Decimal;
use sea_orm::sea_query::{Expr, OnConflict};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, IntoActiveModel,
    QueryFilter, QueryOrder, Set,
};
use uuid::Uuid;

pub(crate) async fn find<C: ConnectionTrait>(
    conn: &C,
    tenant: Uuid,
) -> Result<Option<budget::Model>, DbErr> {
    budget::Entity::find_by_id(tenant).one(conn).await
}

/// The budgets of `tenants` (those that have one), in one read.
pub(crate) async fn find_many<C: ConnectionTrait>(
    conn: &C,
    tenants: &[Uuid],
) -> Result<Vec<budget::Model>, DbErr> {
    budget::Entity::find()
        .filter(budget::Column::TenantId.is_in(tenants.iter().copied()))
        .all(conn)
        .await
}

pub(crate) async fn all<C: ConnectionTrait>(conn: &C) -> Result<Vec<budget::Model>, DbErr> {
    budget::Entity::find().all(conn).await
}

pub(crate) async fn upsert<C: ConnectionTrait>(
    conn: &C,
    model: budget::Model,
    exists: bool,
) -> Result<budget::Model, DbErr> {
    let mut active = model.into_active_model();
    if exists {
        // Every column but the key changes.
        for column in [
            budget::Column::MonthlyLimit,
            budget::Column::Currency,
            budget::Column::AlertThresholds,
            budget::Column::WebhookUrl,
            budget::Column::WebhookSecret,
            budget::Column::HardCap,
            budget::Column::StopAllocations,
            budget::Column::BlockedSince,
            budget::Column::UpdatedAt,
        ] {
            active.reset(column);
        }
        active.update(conn).await
    } else {
        active.insert(conn).await
    }
}

pub(crate) async fn delete<C: ConnectionTrait>(conn: &C, tenant: Uuid) -> Result<(), DbErr> {
    budget::Entity::delete_by_id(tenant)
        .exec(conn)
        .await
        .map(|_| ())
}

pub(crate) async fn set_blocked<C: ConnectionTrait>(
    conn: &C,
    tenant: Uuid,
    since: Option<DateTime<Utc>>,
) -> Result<(), DbErr> {
    budget::Entity::update_many()
        .col_expr(budget::Column::BlockedSince, Expr::value(since))
        .filter(budget::Column::TenantId.eq(tenant))
        .exec(conn)
        .await
        .map(|_| ())
}

/// Records an event once per tenant, period, kind and threshold.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn record_event<C: ConnectionTrait>(
    conn: &C,
    tenant: Uuid,
    period_start: DateTime<Utc>,
    kind: &str,
    threshold: i32,
    spend: Decimal,
    limit: &str,
    webhook_status: &str,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    budget_event::Entity::insert(budget_event::ActiveModel {
        id: Set(Uuid::now_v7()),
        tenant_id: Set(tenant),
        period_start: Set(period_start),
        kind: Set(kind.to_owned()),
        threshold: Set(threshold),
        spend: Set(spend.to_string()),
        monthly_limit: Set(limit.to_owned()),
        created_at: Set(now),
        webhook_status: Set(webhook_status.to_owned()),
        webhook_attempts: Set(0),
    })
    .on_conflict(
        OnConflict::columns([
            budget_event::Column::TenantId,
            budget_event::Column::PeriodStart,
            budget_event::Column::Kind,
            budget_event::Column::Threshold,
        ])
        .do_nothing()
        .to_owned(),
    )
    .exec_without_returning(conn)
    .await
    .map(|_| ())
}

/// The tenant's events of the period starting at `period_start`, oldest first.
pub(crate) async fn events<C: ConnectionTrait>(
    conn: &C,
    tenant: Uuid,
    period_start: DateTime<Utc>,
) -> Result<Vec<budget_event::Model>, DbErr> {
    budget_event::Entity::find()
        .filter(budget_event::Column::TenantId.eq(tenant))
        .filter(budget_event::Column::PeriodStart.eq(period_start))
        .order_by_asc(budget_event::Column::Id)
        .all(conn)
        .await
}

/// Events whose webhook is still to be delivered, with their budgets.
pub(crate) async fn pending_deliveries<C: ConnectionTrait>(
    conn: &C,
    max_attempts: i32,
) -> Result<Vec<(budget_event::Model, budget::Model)>, DbErr> {
    let pending = budget_event::Entity::find()
        .filter(budget_event::Column::WebhookStatus.eq("pending"))
        .filter(budget_event::Column::WebhookAttempts.lt(max_attempts))
        .order_by_asc(budget_event::Column::Id)
        .all(conn)
        .await?;
    let mut out = Vec::new();
    for event in pending {
        if let Some(found) = find(conn, event.tenant_id).await? {
            out.push((event, found));
        }
    }
    Ok(out)
}

pub(crate) async fn set_delivery<C: ConnectionTrait>(
    conn: &C,
    event: Uuid,
    status: &str,
    attempts: i32,
) -> Result<(), DbErr> {
    budget_event::Entity::update_many()
        .col_expr(budget_event::Column::WebhookStatus, Expr::value(status))
        .col_expr(budget_event::Column::WebhookAttempts, Expr::value(attempts))
        .filter(budget_event::Column::Id.eq(event))
        .exec(conn)
        .await
        .map(|_| ())
}
