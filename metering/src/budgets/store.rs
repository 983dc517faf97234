//! The budget tables (`budgets`, `budget_events`): the only module that writes them. Every
//! query names the tenant, except the sweep's read of all budgets.

use chrono::{DateTime, Utc};
use neocloud_schema::entity::{Exact, budget, budget_event};
use neocloud_schema::ids::{EventId, TenantId};
use rust_decimal::Decimal;
use sea_orm::sea_query::{Expr, OnConflict};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, IntoActiveModel,
    QueryFilter, QueryOrder, QuerySelect, Set,
};
use uuid::Uuid;

pub async fn find<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
) -> Result<Option<budget::Model>, DbErr> {
    budget::Entity::find_by_id(tenant).one(conn).await
}

/// The tenant's budget, locked until the transaction ends where the engine has row locks
/// (PostgreSQL; SQLite's write transaction already holds the database).
pub async fn find_for_update<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
) -> Result<Option<budget::Model>, DbErr> {
    budget::Entity::find_by_id(tenant)
        .lock_exclusive()
        .one(conn)
        .await
}

/// A limit version the tenant has not used: above the budget's and every event's, so a
/// budget removed and set again starts afresh too.
pub async fn next_limit_version<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    before: Option<&budget::Model>,
) -> Result<i32, DbErr> {
    let latest_event = budget_event::Entity::find()
        .filter(budget_event::Column::TenantId.eq(tenant))
        .order_by_desc(budget_event::Column::LimitVersion)
        .one(conn)
        .await?
        .map_or(0, |e| e.limit_version);
    let current = before.map_or(0, |b| b.limit_version);
    Ok(latest_event.max(current) + 1)
}

/// The budgets of `tenants` (those that have one), in one read.
pub async fn find_many<C: ConnectionTrait>(
    conn: &C,
    tenants: &[Uuid],
) -> Result<Vec<budget::Model>, DbErr> {
    budget::Entity::find()
        .filter(budget::Column::TenantId.is_in(tenants.iter().copied()))
        .all(conn)
        .await
}

pub async fn all<C: ConnectionTrait>(conn: &C) -> Result<Vec<budget::Model>, DbErr> {
    budget::Entity::find().all(conn).await
}

pub async fn upsert<C: ConnectionTrait>(
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
            budget::Column::LimitVersion,
        ] {
            active.reset(column);
        }
        active.update(conn).await
    } else {
        active.insert(conn).await
    }
}

pub async fn delete<C: ConnectionTrait>(conn: &C, tenant: TenantId) -> Result<(), DbErr> {
    budget::Entity::delete_by_id(tenant)
        .exec(conn)
        .await
        .map(|_| ())
}

pub async fn set_blocked<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    since: Option<DateTime<Utc>>,
) -> Result<(), DbErr> {
    budget::Entity::update_many()
        .col_expr(budget::Column::BlockedSince, Expr::value(since))
        .filter(budget::Column::TenantId.eq(tenant))
        .exec(conn)
        .await
        .map(|_| ())
}

/// An event to record.
pub struct NewEvent<'a> {
    pub tenant: TenantId,
    pub period_start: DateTime<Utc>,
    pub kind: &'a str,
    pub threshold: i32,
    pub spend: Decimal,
    pub limit: Exact,
    pub limit_version: i32,
    pub now: DateTime<Utc>,
}

/// Records an event once per tenant, period, kind, threshold and limit version; its id
/// when this call recorded it.
pub async fn record_event<C: ConnectionTrait>(
    conn: &C,
    event: NewEvent<'_>,
) -> Result<Option<Uuid>, DbErr> {
    let id = Uuid::now_v7();
    budget_event::Entity::insert(budget_event::ActiveModel {
        id: Set(id),
        tenant_id: Set(event.tenant),
        period_start: Set(event.period_start),
        kind: Set(event.kind.to_owned()),
        threshold: Set(event.threshold),
        spend: Set(event.spend.into()),
        monthly_limit: Set(event.limit),
        created_at: Set(event.now),
        webhook_status: Set("none".to_owned()),
        webhook_attempts: Set(0),
        limit_version: Set(event.limit_version),
        event_id: Set(None),
    })
    .on_conflict(
        OnConflict::columns([
            budget_event::Column::TenantId,
            budget_event::Column::PeriodStart,
            budget_event::Column::Kind,
            budget_event::Column::Threshold,
            budget_event::Column::LimitVersion,
        ])
        .do_nothing()
        .to_owned(),
    )
    .exec_without_returning(conn)
    .await
    .map(|inserted| (inserted > 0).then_some(id))
}

/// Links a budget event to the event of the log that carried it.
pub async fn set_event<C: ConnectionTrait>(
    conn: &C,
    budget_event: Uuid,
    event: EventId,
) -> Result<(), DbErr> {
    budget_event::Entity::update_many()
        .col_expr(budget_event::Column::EventId, Expr::value(event))
        .filter(budget_event::Column::Id.eq(budget_event))
        .exec(conn)
        .await
        .map(|_| ())
}

/// The tenant's events of the period starting at `period_start`, oldest first.
pub async fn events<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    period_start: DateTime<Utc>,
) -> Result<Vec<budget_event::Model>, DbErr> {
    budget_event::Entity::find()
        .filter(budget_event::Column::TenantId.eq(tenant))
        .filter(budget_event::Column::PeriodStart.eq(period_start))
        .order_by_asc(budget_event::Column::Id)
        .all(conn)
        .await
}
