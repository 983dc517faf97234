//! SQL for orders and allocations. Every tenant-owned lookup filters by tenant here.

use chrono::{DateTime, Utc};
use neocloud_schema::entity::{allocation, allocation_gpu, gpu, node, order, sku};
use neocloud_schema::ids::TenantId;
use neocloud_schema::vocabulary::{AccessState, AllocationStatus, OrderStatus};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryOrder,
    Set,
};
use uuid::Uuid;

use crate::pagination::{Page, PageOf};

/// `None`: any tenant (operators).
pub(crate) type Scope = Option<TenantId>;

fn scoped<E, C>(query: sea_orm::Select<E>, col: C, scope: Scope) -> sea_orm::Select<E>
where
    E: EntityTrait,
    C: ColumnTrait,
{
    match scope {
        Some(tenant) => query.filter(col.eq(Uuid::from(tenant))),
        None => query,
    }
}

/// The orders of a batch's idempotency keys that exist already, in one read.
pub(crate) async fn find_by_idempotency_keys<C: ConnectionTrait>(
    conn: &C,
    keys: &[(TenantId, &str)],
) -> Result<Vec<order::Model>, DbErr> {
    if keys.is_empty() {
        return Ok(Vec::new());
    }
    let rows = order::Entity::find()
        .filter(order::Column::TenantId.is_in(keys.iter().map(|(t, _)| Uuid::from(*t))))
        .filter(order::Column::IdempotencyKey.is_in(keys.iter().map(|(_, k)| (*k).to_owned())))
        .all(conn)
        .await?;
    // The two `IN` lists match every pairing; keep only the pairs asked for.
    Ok(rows
        .into_iter()
        .filter(|o| {
            keys.iter()
                .any(|(t, k)| *t == o.tenant_id && *k == o.idempotency_key)
        })
        .collect())
}

pub(crate) async fn find_order<C: ConnectionTrait>(
    conn: &C,
    id: Uuid,
    scope: Scope,
) -> Result<Option<order::Model>, DbErr> {
    scoped(
        order::Entity::find_by_id(id),
        order::Column::TenantId,
        scope,
    )
    .one(conn)
    .await
}

pub(crate) async fn find_allocation<C: ConnectionTrait>(
    conn: &C,
    id: Uuid,
    scope: Scope,
) -> Result<Option<allocation::Model>, DbErr> {
    scoped(
        allocation::Entity::find_by_id(id),
        allocation::Column::TenantId,
        scope,
    )
    .one(conn)
    .await
}

pub(crate) async fn orders_page<C: ConnectionTrait>(
    conn: &C,
    scope: Scope,
    status: Option<OrderStatus>,
    page: Page,
) -> Result<PageOf<order::Model>, DbErr> {
    let mut query = scoped(order::Entity::find(), order::Column::TenantId, scope);
    if let Some(status) = status {
        query = query.filter(order::Column::Status.eq(status));
    }
    page.fetch(conn, query, order::Column::Id).await
}

pub(crate) async fn allocations_page<C: ConnectionTrait>(
    conn: &C,
    scope: Scope,
    status: Option<AllocationStatus>,
    page: Page,
) -> Result<PageOf<allocation::Model>, DbErr> {
    let mut query = scoped(
        allocation::Entity::find(),
        allocation::Column::TenantId,
        scope,
    );
    if let Some(status) = status {
        query = query.filter(allocation::Column::Status.eq(status));
    }
    page.fetch(conn, query, allocation::Column::Id).await
}

pub(crate) async fn allocations_of_orders<C: ConnectionTrait>(
    conn: &C,
    order_ids: &[Uuid],
) -> Result<Vec<allocation::Model>, DbErr> {
    allocation::Entity::find()
        .filter(allocation::Column::OrderId.is_in(order_ids.iter().copied()))
        .order_by_asc(allocation::Column::Id)
        .all(conn)
        .await
}

/// Live allocations of a tenant with their SKUs (for quotas).
pub(crate) async fn live_allocations_of<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
) -> Result<Vec<(allocation::Model, Option<sku::Model>)>, DbErr> {
    allocation::Entity::find()
        .filter(allocation::Column::TenantId.eq(Uuid::from(tenant)))
        .filter(allocation::Column::Status.ne(AllocationStatus::Released))
        .find_also_related(sku::Entity)
        .all(conn)
        .await
}

/// The GPUs an allocation holds, by NVML index.
pub(crate) async fn gpus_of<C: ConnectionTrait>(
    conn: &C,
    allocation_ids: &[Uuid],
) -> Result<Vec<(Uuid, gpu::Model)>, DbErr> {
    let rows = allocation_gpu::Entity::find()
        .filter(allocation_gpu::Column::AllocationId.is_in(allocation_ids.iter().copied()))
        .all(conn)
        .await?;
    let gpus = gpu::Entity::find()
        .filter(gpu::Column::Id.is_in(rows.iter().map(|r| r.gpu_id)))
        .order_by_asc(gpu::Column::Index)
        .all(conn)
        .await?;
    let mut out = Vec::new();
    for g in gpus {
        for r in rows.iter().filter(|r| r.gpu_id == g.id) {
            out.push((r.allocation_id.into(), g.clone()));
        }
    }
    Ok(out)
}

pub(crate) async fn nodes_by_id<C: ConnectionTrait>(
    conn: &C,
    ids: &[Uuid],
) -> Result<Vec<node::Model>, DbErr> {
    node::Entity::find()
        .filter(node::Column::Id.is_in(ids.iter().copied()))
        .all(conn)
        .await
}

/// Writes a batch's orders, then its allocations with the GPUs each holds, in a few
/// multi-row statements.
pub(crate) async fn insert_placed<C: ConnectionTrait>(
    conn: &C,
    orders: Vec<order::Model>,
    allocations: Vec<(allocation::Model, Vec<Uuid>)>,
) -> Result<(), DbErr> {
    let orders: Vec<order::ActiveModel> = orders.into_iter().map(Into::into).collect();
    crate::db::insert_all(conn, orders).await?;
    let mut held = Vec::new();
    let mut rows = Vec::with_capacity(allocations.len());
    for (row, gpu_ids) in allocations {
        for gpu_id in gpu_ids {
            held.push(allocation_gpu::ActiveModel {
                allocation_id: Set(row.id),
                gpu_id: Set(gpu_id.into()),
                tenant_id: Set(row.tenant_id),
            });
        }
        rows.push(allocation::ActiveModel::from(row));
    }
    crate::db::insert_all(conn, rows).await?;
    crate::db::insert_all(conn, held).await
}

pub(crate) async fn allocations_by_id<C: ConnectionTrait>(
    conn: &C,
    ids: &[Uuid],
) -> Result<Vec<allocation::Model>, DbErr> {
    allocation::Entity::find()
        .filter(allocation::Column::Id.is_in(ids.iter().copied()))
        .order_by_asc(allocation::Column::Id)
        .all(conn)
        .await
}

pub(crate) async fn mark_preempting<C: ConnectionTrait>(
    conn: &C,
    ids: &[Uuid],
    at: DateTime<Utc>,
) -> Result<Vec<Uuid>, DbErr> {
    // Only what is still running: an allocation released (or already given notice)
    // meanwhile, by this process or another, keeps its state.
    let marked = allocation::Entity::update_many()
        .col_expr(
            allocation::Column::Status,
            Expr::value(AllocationStatus::Preempting.as_str()),
        )
        .col_expr(allocation::Column::PreemptAt, Expr::value(at))
        .filter(allocation::Column::Id.is_in(ids.iter().copied()))
        .filter(allocation::Column::Status.eq(AllocationStatus::Active))
        .exec_with_returning(conn)
        .await?;
    Ok(marked.into_iter().map(|a| a.id.into()).collect())
}

pub(crate) async fn end_allocation<C: ConnectionTrait>(
    conn: &C,
    row: &allocation::Model,
    at: DateTime<Utc>,
) -> Result<allocation::Model, DbErr> {
    let mut active: allocation::ActiveModel = row.clone().into();
    active.status = Set(AllocationStatus::Released);
    active.ended_at = Set(Some(at));
    active.update(conn).await
}

/// Records where an allocation's hand-off stands.
pub(crate) async fn set_access<C: ConnectionTrait>(
    conn: &C,
    row: &allocation::Model,
    state: AccessState,
    endpoints: Option<serde_json::Value>,
    reason: Option<String>,
    at: DateTime<Utc>,
) -> Result<allocation::Model, DbErr> {
    let mut active: allocation::ActiveModel = row.clone().into();
    active.access_state = Set(state);
    active.access_endpoints = Set(endpoints);
    active.access_reason = Set(reason);
    active.access_changed_at = Set(Some(at));
    active.update(conn).await
}

/// Marks the order released once none of its allocations is live.
pub(crate) async fn settle_order<C: ConnectionTrait>(
    conn: &C,
    order_id: Uuid,
    at: DateTime<Utc>,
) -> Result<(), DbErr> {
    let live = allocation::Entity::find()
        .filter(allocation::Column::OrderId.eq(order_id))
        .filter(allocation::Column::Status.ne(AllocationStatus::Released))
        .one(conn)
        .await?;
    if live.is_none() {
        order::Entity::update_many()
            .col_expr(
                order::Column::Status,
                Expr::value(OrderStatus::Released.as_str()),
            )
            .col_expr(order::Column::EndedAt, Expr::value(at))
            .filter(order::Column::Id.eq(order_id))
            .filter(order::Column::Status.ne(OrderStatus::Released))
            .exec(conn)
            .await?;
    }
    Ok(())
}

/// Preempted allocations whose notice window has passed.
pub(crate) async fn due_preemptions<C: ConnectionTrait>(
    conn: &C,
    now: DateTime<Utc>,
) -> Result<Vec<allocation::Model>, DbErr> {
    allocation::Entity::find()
        .filter(allocation::Column::Status.eq(AllocationStatus::Preempting))
        .filter(allocation::Column::PreemptAt.lte(now))
        .all(conn)
        .await
}

/// Live allocations on a node.
pub(crate) async fn live_on_nodes<C: ConnectionTrait>(
    conn: &C,
    node_ids: &[Uuid],
) -> Result<Vec<allocation::Model>, DbErr> {
    allocation::Entity::find()
        .filter(allocation::Column::NodeId.is_in(node_ids.iter().copied()))
        .filter(allocation::Column::Status.ne(AllocationStatus::Released))
        .order_by_asc(allocation::Column::Id)
        .all(conn)
        .await
}

/// Erasure: empties the labels of the tenant's orders and allocations and forgets where
/// its allocations were reached; rows changed.
pub(crate) async fn erase<C: ConnectionTrait>(conn: &C, tenant: TenantId) -> Result<u64, DbErr> {
    let orders = order::Entity::update_many()
        .col_expr(order::Column::Labels, Expr::value(serde_json::json!({})))
        .filter(order::Column::TenantId.eq(tenant))
        .exec(conn)
        .await?;
    let allocations = allocation::Entity::update_many()
        .col_expr(
            allocation::Column::Labels,
            Expr::value(serde_json::json!({})),
        )
        .col_expr(
            allocation::Column::AccessEndpoints,
            Expr::value(Option::<serde_json::Value>::None),
        )
        .filter(allocation::Column::TenantId.eq(tenant))
        .exec(conn)
        .await?;
    Ok(orders.rows_affected + allocations.rows_affected)
}

/// Whether any allocation of the tenant still runs.
pub(crate) async fn any_running<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
) -> Result<bool, DbErr> {
    let running = allocation::Entity::find()
        .filter(allocation::Column::TenantId.eq(tenant))
        .filter(allocation::Column::Status.ne(AllocationStatus::Released.as_str()))
        .one(conn)
        .await?;
    Ok(running.is_some())
}
