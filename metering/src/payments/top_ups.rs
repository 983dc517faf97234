//! Prepaid top-ups as stored: a top-up is created with its payment queued in the outbox in
//! the same transaction (the payment exists if and only if the top-up does); Stripe's
//! events then move it on (`super::apply_event`).

use chrono::{DateTime, Utc};
use neocloud_schema::entity::top_up;
use neocloud_schema::ids::TenantId;
use neocloud_schema::vocabulary::TopUpStatus;
use rust_decimal::Decimal;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryOrder,
    QuerySelect, Set,
};
use uuid::Uuid;

use super::outbox;

/// The tenant's top-up made under the client's idempotency key, if any.
pub async fn find_by_key<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    key: &str,
) -> Result<Option<top_up::Model>, DbErr> {
    top_up::Entity::find()
        .filter(top_up::Column::TenantId.eq(tenant))
        .filter(top_up::Column::ClientKey.eq(key))
        .one(conn)
        .await
}

/// A new top-up of `amount` (already in the currency's minor-unit scale), pending, with its
/// payment queued.
pub async fn start<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    (amount, currency): (Decimal, &str),
    client_key: Option<String>,
    now: DateTime<Utc>,
) -> Result<top_up::Model, DbErr> {
    let created = top_up::ActiveModel {
        id: Set(Uuid::now_v7()),
        tenant_id: Set(tenant),
        amount: Set(amount.into()),
        currency: Set(currency.to_owned()),
        status: Set(TopUpStatus::Pending),
        client_key: Set(client_key),
        stripe_payment_intent: Set(None),
        credit_grant_id: Set(None),
        failure: Set(None),
        created_at: Set(now),
        updated_at: Set(now),
    }
    .insert(conn)
    .await?;
    outbox::queue_top_up(conn, tenant, created.id, now).await?;
    Ok(created)
}

/// The tenant's latest `limit` top-ups, newest first.
pub async fn latest<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    limit: u64,
) -> Result<Vec<top_up::Model>, DbErr> {
    top_up::Entity::find()
        .filter(top_up::Column::TenantId.eq(tenant))
        .order_by_desc(top_up::Column::CreatedAt)
        .limit(limit)
        .all(conn)
        .await
}
