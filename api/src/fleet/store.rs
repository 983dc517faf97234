//! SQL for nodes and GPUs (providers: `crate::providers::store`).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use neocloud_schema::entity::gpu::{self, Entity as Gpus, GpuHealth};
use neocloud_schema::entity::node::{self, Entity as Nodes, NodeState, NodeVerification};
use neocloud_schema::ids::{GpuId, NodeId, ProviderId};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, PaginatorTrait,
    QueryFilter, QueryOrder, Set,
};
use serde_json::{Value, json};
use uuid::Uuid;

use super::ValidNode;
use crate::pagination::{Page, PageOf};

pub(crate) async fn find_by_hostname<C: ConnectionTrait>(
    conn: &C,
    hostname: &str,
) -> Result<Option<node::Model>, DbErr> {
    Nodes::find()
        .filter(node::Column::Hostname.eq(hostname))
        .one(conn)
        .await
}

pub(crate) use neocloud_schema::entity::fleet_epoch::{
    bump as bump_epoch, current as current_epoch,
};

pub(crate) async fn find<C: ConnectionTrait>(
    conn: &C,
    id: NodeId,
) -> Result<Option<node::Model>, DbErr> {
    Nodes::find_by_id(Uuid::from(id)).one(conn).await
}

pub(crate) async fn find_gpu_by_uuid<C: ConnectionTrait>(
    conn: &C,
    uuid: &str,
) -> Result<Option<gpu::Model>, DbErr> {
    Gpus::find()
        .filter(gpu::Column::Uuid.eq(uuid))
        .one(conn)
        .await
}

pub(crate) async fn find_in_nvlink_domain<C: ConnectionTrait>(
    conn: &C,
    domain: &str,
) -> Result<Option<node::Model>, DbErr> {
    Nodes::find()
        .filter(node::Column::NvlinkDomain.eq(domain))
        .one(conn)
        .await
}

/// The NVLink domain of `node` as its hardware report is judged against it: the GPUs and
/// nodes registered in it (retired ones left out), and the fabric the first other node
/// (by hostname) not in mismatch reported.
pub(crate) async fn nvlink_domain<C: ConnectionTrait>(
    conn: &C,
    node: &node::Model,
) -> Result<super::verify::Domain, DbErr> {
    let nodes: Vec<node::Model> = Nodes::find()
        .filter(node::Column::NvlinkDomain.eq(node.nvlink_domain.as_str()))
        .order_by_asc(node::Column::Hostname)
        .all(conn)
        .await?
        .into_iter()
        .filter(|n| n.state != NodeState::Retired || n.id == node.id)
        .collect();
    let fabric = nodes
        .iter()
        .filter(|n| n.id != node.id && n.verification != NodeVerification::Mismatch)
        .find_map(|n| Some((n.nvlink_fabric.clone()?, n.hostname.clone())));
    Ok(super::verify::Domain {
        gpus: nodes
            .iter()
            .map(|n| usize::try_from(n.gpu_count).unwrap_or(0))
            .sum(),
        nodes: nodes.len(),
        fabric,
    })
}

pub(crate) async fn insert_node<C: ConnectionTrait>(
    conn: &C,
    id: NodeId,
    provider: ProviderId,
    valid: &ValidNode,
) -> Result<(node::Model, Vec<gpu::Model>), DbErr> {
    let now = Utc::now();
    let node = node::ActiveModel {
        id: Set(id),
        provider_id: Set(provider),
        hostname: Set(valid.hostname.clone()),
        region: Set(valid.region.clone()),
        zone: Set(valid.zone.clone()),
        rack: Set(valid.rack.clone()),
        nvlink_domain: Set(valid.nvlink_domain.clone()),
        gpu_model: Set(valid.model.code().to_owned()),
        // At most MAX_GPUS_PER_NODE (validated).
        gpu_count: Set(i32::try_from(valid.gpus.len()).unwrap_or(i32::MAX)),
        mig_enabled: Set(valid.mig_enabled),
        shared_gpus: Set(valid.shared_gpus),
        cpu_milli: Set(valid.cpu_milli),
        memory_mib: Set(valid.memory_mib),
        state: Set(NodeState::Active),
        created_at: Set(now),
        verification: Set(valid.verification),
        verification_reason: Set(None),
        verified_at: Set(None),
        retired_at: Set(None),
        nvlink_fabric: Set(None),
    }
    .insert(conn)
    .await?;
    let mut gpus = Vec::with_capacity(valid.gpus.len());
    for input in &valid.gpus {
        gpus.push(
            gpu::ActiveModel {
                id: Set(GpuId::new()),
                node_id: Set(node.id),
                uuid: Set(input.uuid.clone()),
                index: Set(input.index),
                model: Set(valid.model.code().to_owned()),
                memory_mib: Set(i64::try_from(valid.model.memory_mib()).unwrap_or(i64::MAX)),
                mig_enabled: Set(valid.mig_enabled),
                health: Set(GpuHealth::Ok),
                health_changed_at: Set(now),
            }
            .insert(conn)
            .await?,
        );
    }
    gpus.sort_by_key(|g| g.index);
    Ok((node, gpus))
}

pub(crate) async fn page<C: ConnectionTrait>(
    conn: &C,
    page: Page,
    filter: &super::NodeFilter,
) -> Result<PageOf<node::Model>, DbErr> {
    let mut select = Nodes::find();
    for (column, value) in [
        (node::Column::Region, &filter.region),
        (node::Column::Rack, &filter.rack),
        (node::Column::NvlinkDomain, &filter.nvlink_domain),
    ] {
        if let Some(value) = value {
            select = select.filter(column.eq(value.as_str()));
        }
    }
    page.fetch(conn, select, node::Column::Id).await
}

/// The GPUs of the given nodes, ordered by node and index.
pub(crate) async fn gpus_of<C: ConnectionTrait>(
    conn: &C,
    node_ids: &[Uuid],
) -> Result<Vec<gpu::Model>, DbErr> {
    Gpus::find()
        .filter(gpu::Column::NodeId.is_in(node_ids.iter().copied()))
        .order_by_asc(gpu::Column::NodeId)
        .order_by_asc(gpu::Column::Index)
        .all(conn)
        .await
}

pub(crate) fn describe(node: &node::Model, gpus: &[gpu::Model]) -> Value {
    json!({
        "id": node.id,
        "hostname": node.hostname,
        "region": node.region,
        "zone": node.zone,
        "rack": node.rack,
        "nvlink_domain": node.nvlink_domain,
        "gpu_model": node.gpu_model,
        "mig_enabled": node.mig_enabled,
        "shared_gpus": node.shared_gpus,
        "gpus": gpus.iter().map(|g| json!({"uuid": g.uuid, "index": g.index})).collect::<Vec<_>>(),
    })
}

pub(crate) async fn set_state<C: ConnectionTrait>(
    conn: &C,
    node: &node::Model,
    state: NodeState,
) -> Result<node::Model, DbErr> {
    let mut active: node::ActiveModel = node.clone().into();
    active.state = Set(state);
    active.update(conn).await
}

/// Every node in the fleet (retired ones left out).
/// The hostnames of the nodes `ids`, by id.
pub(crate) async fn hostnames<C: ConnectionTrait>(
    conn: &C,
    ids: &[Uuid],
) -> Result<BTreeMap<Uuid, String>, DbErr> {
    let mut found = BTreeMap::new();
    for chunk in ids.chunks(500) {
        let rows = node::Entity::find()
            .filter(node::Column::Id.is_in(chunk.iter().copied()))
            .all(conn)
            .await?;
        found.extend(rows.into_iter().map(|n| (n.id.into(), n.hostname)));
    }
    Ok(found)
}

pub(crate) async fn all_nodes<C: ConnectionTrait>(conn: &C) -> Result<Vec<node::Model>, DbErr> {
    Nodes::find()
        .filter(node::Column::State.ne(NodeState::Retired))
        .order_by_asc(node::Column::Hostname)
        .all(conn)
        .await
}

/// How many allocations still hold something on the node (active or being preempted).
pub(crate) async fn live_allocations_on<C: ConnectionTrait>(
    conn: &C,
    node: NodeId,
) -> Result<u64, DbErr> {
    use neocloud_schema::entity::allocation;
    use neocloud_schema::vocabulary::AllocationStatus;
    allocation::Entity::find()
        .filter(allocation::Column::NodeId.eq(node))
        .filter(allocation::Column::Status.ne(AllocationStatus::Released))
        .count(conn)
        .await
}

/// Retires `node`: out of the fleet for good, from `now`.
pub(crate) async fn retire<C: ConnectionTrait>(
    conn: &C,
    node: &node::Model,
    now: DateTime<Utc>,
) -> Result<node::Model, DbErr> {
    let mut active: node::ActiveModel = node.clone().into();
    active.state = Set(NodeState::Retired);
    active.retired_at = Set(Some(now));
    active.update(conn).await
}

/// Milli-GPUs held on each GPU by live allocations.
pub(crate) async fn held_milli_by_gpu<C: ConnectionTrait>(
    conn: &C,
) -> Result<std::collections::HashMap<Uuid, u64>, DbErr> {
    use neocloud_schema::entity::{allocation, allocation_gpu};
    use neocloud_schema::vocabulary::AllocationStatus;
    let live: std::collections::HashMap<Uuid, allocation::Model> = allocation::Entity::find()
        .filter(allocation::Column::Status.ne(AllocationStatus::Released))
        .all(conn)
        .await?
        .into_iter()
        .map(|a| (Uuid::from(a.id), a))
        .collect();
    let mut held = std::collections::HashMap::new();
    for row in allocation_gpu::Entity::find()
        .filter(allocation_gpu::Column::AllocationId.is_in(live.keys().copied()))
        .all(conn)
        .await?
    {
        let Some(a) = live.get(&Uuid::from(row.allocation_id)) else {
            continue;
        };
        let milli = a.milli_per_gpu();
        *held.entry(row.gpu_id.into()).or_insert(0u64) += milli;
    }
    Ok(held)
}
