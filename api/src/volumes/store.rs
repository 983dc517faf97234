//! SQL for volumes and their lifetime records. Every read of a tenant's volume filters by
//! its owner here; an operator's scope (`None`) reads any.

use chrono::{DateTime, Utc};
use neocloud_schema::entity::{sku, tenant, volume, volume_size};
use neocloud_schema::ids::{TenantId, VolumeId};
use neocloud_schema::vocabulary::{AccessState, SkuForm, StorageClass, VolumeStatus};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, PaginatorTrait,
    QueryFilter, QueryOrder, QuerySelect, Set,
};
use uuid::Uuid;

/// The tenant's row, locked until the transaction ends (PostgreSQL; SQLite's write
/// transaction already holds the database): what serializes a tenant's volume changes, so
/// two concurrent requests cannot both pass a quota.
pub(crate) async fn lock_tenant<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
) -> Result<Option<tenant::Model>, DbErr> {
    tenant::Entity::find_by_id(tenant)
        .lock_exclusive()
        .one(conn)
        .await
}

/// The active volume SKU of `class` in `region`.
pub(crate) async fn sku_for<C: ConnectionTrait>(
    conn: &C,
    class: StorageClass,
    region: &str,
) -> Result<Option<sku::Model>, DbErr> {
    sku::Entity::find()
        .filter(sku::Column::Form.eq(SkuForm::Volume))
        .filter(sku::Column::StorageClass.eq(class))
        .filter(sku::Column::Region.eq(region))
        .filter(sku::Column::Active.eq(true))
        .order_by_asc(sku::Column::CreatedAt)
        .one(conn)
        .await
}

fn owned(scope: Option<TenantId>) -> sea_orm::Select<volume::Entity> {
    let mut query = volume::Entity::find();
    if let Some(tenant) = scope {
        query = query.filter(volume::Column::TenantId.eq(tenant));
    }
    query
}

pub(crate) async fn find<C: ConnectionTrait>(
    conn: &C,
    id: VolumeId,
    scope: Option<TenantId>,
) -> Result<Option<volume::Model>, DbErr> {
    owned(scope)
        .filter(volume::Column::Id.eq(id))
        .one(conn)
        .await
}

/// `find`, the row locked until the transaction ends (PostgreSQL; SQLite's write
/// transaction already holds the database).
pub(crate) async fn find_for_update<C: ConnectionTrait>(
    conn: &C,
    id: VolumeId,
    scope: Option<TenantId>,
) -> Result<Option<volume::Model>, DbErr> {
    owned(scope)
        .filter(volume::Column::Id.eq(id))
        .lock_exclusive()
        .one(conn)
        .await
}

/// A live volume of the tenant named `name`.
pub(crate) async fn find_live_by_name<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    name: &str,
) -> Result<Option<volume::Model>, DbErr> {
    owned(Some(tenant))
        .filter(volume::Column::Status.eq(VolumeStatus::Active))
        .filter(volume::Column::Name.eq(name))
        .one(conn)
        .await
}

/// How many volumes the tenant holds now.
pub(crate) async fn count_live<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
) -> Result<u64, DbErr> {
    owned(Some(tenant))
        .filter(volume::Column::Status.eq(VolumeStatus::Active))
        .count(conn)
        .await
}

/// The region and size of each volume the tenant holds now.
pub(crate) async fn live_sizes<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
) -> Result<Vec<(String, u64)>, DbErr> {
    let rows: Vec<(String, i64)> = owned(Some(tenant))
        .select_only()
        .columns([volume::Column::Region, volume::Column::SizeGb])
        .filter(volume::Column::Status.eq(VolumeStatus::Active))
        .into_tuple()
        .all(conn)
        .await?;
    Ok(rows
        .into_iter()
        .map(|(region, gb)| (region, u64::try_from(gb).unwrap_or(0)))
        .collect())
}

/// The volumes of one tenant or of all, for a page; deleted ones only when asked.
pub(crate) fn listed(
    scope: Option<TenantId>,
    include_deleted: bool,
) -> sea_orm::Select<volume::Entity> {
    let query = owned(scope);
    if include_deleted {
        query
    } else {
        query.filter(volume::Column::Status.eq(VolumeStatus::Active))
    }
}

/// Writes a new volume and the first span of its life.
pub(crate) async fn insert<C: ConnectionTrait>(
    conn: &C,
    row: volume::Model,
) -> Result<volume::Model, DbErr> {
    let row = volume::ActiveModel::from(row).insert(conn).await?;
    open_span(conn, &row, row.created_at).await?;
    Ok(row)
}

/// Starts the span of `row` at its size from `at`.
async fn open_span<C: ConnectionTrait>(
    conn: &C,
    row: &volume::Model,
    at: DateTime<Utc>,
) -> Result<(), DbErr> {
    volume_size::ActiveModel {
        id: Set(Uuid::now_v7()),
        volume_id: Set(row.id),
        tenant_id: Set(row.tenant_id),
        sku_id: Set(row.sku_id),
        size_gb: Set(row.size_gb),
        started_at: Set(at),
        ended_at: Set(None),
    }
    .insert(conn)
    .await
    .map(|_| ())
}

/// Ends the volume's open span at `at`.
async fn close_span<C: ConnectionTrait>(
    conn: &C,
    volume: VolumeId,
    at: DateTime<Utc>,
) -> Result<(), DbErr> {
    volume_size::Entity::update_many()
        .col_expr(volume_size::Column::EndedAt, Expr::value(at))
        .filter(volume_size::Column::VolumeId.eq(volume))
        .filter(volume_size::Column::EndedAt.is_null())
        .exec(conn)
        .await
        .map(|_| ())
}

/// `row` at `size_gb` from `at`: the span at the old size ends, one at the new begins.
pub(crate) async fn resize<C: ConnectionTrait>(
    conn: &C,
    row: volume::Model,
    size_gb: i64,
    at: DateTime<Utc>,
) -> Result<volume::Model, DbErr> {
    close_span(conn, row.id, at).await?;
    let mut active: volume::ActiveModel = row.into();
    active.size_gb = Set(size_gb);
    let row = active.update(conn).await?;
    open_span(conn, &row, at).await?;
    Ok(row)
}

/// `row` deleted at `at` (with `failure`: its storage never created it, so none of its
/// life is billed).
pub(crate) async fn delete<C: ConnectionTrait>(
    conn: &C,
    row: volume::Model,
    failure: Option<&str>,
    at: DateTime<Utc>,
) -> Result<volume::Model, DbErr> {
    close_span(conn, row.id, at).await?;
    let mut active: volume::ActiveModel = row.into();
    active.status = Set(VolumeStatus::Deleted);
    active.deleted_at = Set(Some(at));
    if let Some(reason) = failure {
        active.access_state = Set(AccessState::Failed);
        active.access_reason = Set(Some(reason.to_owned()));
    }
    active.update(conn).await
}

/// `row` created by the operator's storage.
pub(crate) async fn mark_ready<C: ConnectionTrait>(
    conn: &C,
    row: volume::Model,
) -> Result<volume::Model, DbErr> {
    let mut active: volume::ActiveModel = row.into();
    active.access_state = Set(AccessState::Ready);
    active.update(conn).await
}

/// Erasure: empties the labels of the tenant's volumes; rows changed.
pub(crate) async fn erase<C: ConnectionTrait>(conn: &C, tenant: TenantId) -> Result<u64, DbErr> {
    let changed = volume::Entity::update_many()
        .col_expr(volume::Column::Labels, Expr::value(serde_json::json!({})))
        .filter(volume::Column::TenantId.eq(tenant))
        .exec(conn)
        .await?;
    Ok(changed.rows_affected)
}

/// Whether any volume of the tenant is not deleted.
pub(crate) async fn any_kept<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
) -> Result<bool, DbErr> {
    let kept = volume::Entity::find()
        .filter(volume::Column::TenantId.eq(tenant))
        .filter(volume::Column::Status.ne(VolumeStatus::Deleted.as_str()))
        .one(conn)
        .await?;
    Ok(kept.is_some())
}
