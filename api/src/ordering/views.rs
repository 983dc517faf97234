//! Orders and allocations as the API shows them: with their SKU, node and GPUs, read in a
//! fixed number of queries for a whole page; and the tenant-scoped reads behind `orders`,
//! `allocations`, `order(id)` and `allocation(id)` (another tenant's id is `NOT_FOUND`).

use std::collections::BTreeMap;

use neocloud_schema::entity::{allocation, gpu, node, order, sku};
use neocloud_schema::ids::SkuId;
use neocloud_schema::vocabulary::{AllocationStatus, OrderStatus};
use sea_orm::DatabaseConnection;
use uuid::Uuid;

use super::store;
use crate::auth::Principal;
use crate::catalog;
use crate::error::{ApiError, ApiResult};
use crate::pagination::{Page, PageOf};

/// An allocation with its SKU and where it runs.
#[derive(Debug, Clone)]
pub struct AllocationView {
    pub allocation: allocation::Model,
    pub sku: sku::Model,
    pub node: node::Model,
    pub gpus: Vec<gpu::Model>,
}

#[derive(Debug, Clone)]
pub struct OrderView {
    pub order: order::Model,
    pub sku: sku::Model,
    pub allocations: Vec<AllocationView>,
}

/// An order with its allocations, nodes and GPUs.
pub async fn view_order(db: &DatabaseConnection, order: order::Model) -> ApiResult<OrderView> {
    view_orders(db, vec![order])
        .await?
        .pop()
        .ok_or_else(|| ApiError::invariant("an order without its view"))
}

/// Orders with their SKUs and allocations, in a fixed number of reads for any number of
/// orders (a page of 100 costs what one does).
pub async fn view_orders(
    db: &DatabaseConnection,
    orders: Vec<order::Model>,
) -> ApiResult<Vec<OrderView>> {
    let ids: Vec<Uuid> = orders.iter().map(|o| Uuid::from(o.id)).collect();
    let mut allocations =
        view_allocations(db, store::allocations_of_orders(db, &ids).await?).await?;
    let skus = skus_by_id(db, orders.iter().map(|o| o.sku_id)).await?;
    let mut views = Vec::with_capacity(orders.len());
    for order in orders {
        let (mine, rest) = allocations
            .into_iter()
            .partition(|a| a.allocation.order_id == order.id);
        allocations = rest;
        views.push(OrderView {
            sku: sku_of(&skus, order.sku_id)?,
            order,
            allocations: mine,
        });
    }
    Ok(views)
}

pub(super) async fn skus_by_id(
    db: &DatabaseConnection,
    ids: impl Iterator<Item = SkuId>,
) -> ApiResult<BTreeMap<SkuId, sku::Model>> {
    let ids: Vec<Uuid> = ids
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .map(Uuid::from)
        .collect();
    Ok(catalog::store::find_many(db, &ids)
        .await?
        .into_iter()
        .map(|s| (s.id, s))
        .collect())
}

pub(super) fn sku_of(skus: &BTreeMap<SkuId, sku::Model>, id: SkuId) -> ApiResult<sku::Model> {
    skus.get(&id).cloned().ok_or_else(|| ApiError::Internal {
        message: format!("SKU {id} is missing"),
    })
}

pub async fn view_allocations(
    db: &DatabaseConnection,
    allocations: Vec<allocation::Model>,
) -> ApiResult<Vec<AllocationView>> {
    let ids: Vec<Uuid> = allocations.iter().map(|a| Uuid::from(a.id)).collect();
    let gpus = store::gpus_of(db, &ids).await?;
    let node_ids: Vec<Uuid> = allocations.iter().map(|a| Uuid::from(a.node_id)).collect();
    let nodes = store::nodes_by_id(db, &node_ids).await?;
    let skus = skus_by_id(db, allocations.iter().map(|a| a.sku_id)).await?;
    let mut out = Vec::new();
    for allocation in allocations {
        let node = nodes
            .iter()
            .find(|n| n.id == allocation.node_id)
            .cloned()
            .ok_or_else(|| ApiError::Internal {
                message: "allocation on a missing node".into(),
            })?;
        let mine = gpus
            .iter()
            .filter(|(a, _)| *a == Uuid::from(allocation.id))
            .map(|(_, g)| g.clone())
            .collect();
        out.push(AllocationView {
            sku: sku_of(&skus, allocation.sku_id)?,
            allocation,
            node,
            gpus: mine,
        });
    }
    Ok(out)
}

/// `orders`: the caller's tenant's orders (operators: everyone's).
pub async fn list_orders(
    db: &DatabaseConnection,
    actor: &Principal,
    status: Option<OrderStatus>,
    page: Page,
) -> ApiResult<PageOf<OrderView>> {
    actor.require_user()?;
    let orders = store::orders_page(db, actor.tenant_scope_or_all(), status, page).await?;
    Ok(PageOf {
        items: view_orders(db, orders.items).await?,
        has_next: orders.has_next,
        has_previous: orders.has_previous,
    })
}

/// `allocations`.
pub async fn list_allocations(
    db: &DatabaseConnection,
    actor: &Principal,
    status: Option<AllocationStatus>,
    page: Page,
) -> ApiResult<PageOf<AllocationView>> {
    actor.require_user()?;
    let rows = store::allocations_page(db, actor.tenant_scope_or_all(), status, page).await?;
    Ok(PageOf {
        items: view_allocations(db, rows.items).await?,
        has_next: rows.has_next,
        has_previous: rows.has_previous,
    })
}

/// `allocation(id)` and `order(id)`: `NOT_FOUND` for another tenant's ids.
pub async fn get_allocation(
    db: &DatabaseConnection,
    actor: &Principal,
    id: Uuid,
) -> ApiResult<AllocationView> {
    actor.require_user()?;
    let row = store::find_allocation(db, id, actor.tenant_scope_or_all())
        .await?
        .ok_or_else(|| ApiError::not_found("allocation"))?;
    view_allocations(db, vec![row])
        .await?
        .pop()
        .ok_or_else(|| ApiError::not_found("allocation"))
}

/// The live allocations on `nodes` (operator): what a drain would wait for.
pub async fn live_on_nodes(
    db: &DatabaseConnection,
    actor: &Principal,
    nodes: &[Uuid],
) -> ApiResult<Vec<AllocationView>> {
    actor.require_operator()?;
    let rows = store::live_on_nodes(db, nodes).await?;
    view_allocations(db, rows).await
}

pub async fn get_order(
    db: &DatabaseConnection,
    actor: &Principal,
    id: Uuid,
) -> ApiResult<OrderView> {
    actor.require_user()?;
    let order = store::find_order(db, id, actor.tenant_scope_or_all())
        .await?
        .ok_or_else(|| ApiError::not_found("order"))?;
    view_order(db, order).await
}
