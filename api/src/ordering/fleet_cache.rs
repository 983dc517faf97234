//! The scheduler's view of the fleet, kept in memory per region and rebuilt from the
//! database whenever another writer changed the fleet. Every fleet change (placement,
//! release, node registration, state or health change) increments `fleet_epoch` inside its
//! transaction; the cache remembers the epoch it reflects, so a stale cache is detected
//! and reloaded under the same row lock that serializes placement.

use std::collections::{BTreeMap, HashMap};

use neocloud_scheduler::{
    AllocationKey, Class, Exclusivity, Fleet, GpuGrant, GpuMode, GpuRef, GpuShare, GpuSpec, Health,
    NodePlacement, NodeSpec, NodeState as SchedNodeState, Placement, TenantKey,
};
use neocloud_schema::entity::{allocation, allocation_gpu, gpu, node, node_reliability};
use neocloud_schema::gpu::GpuModel;
use neocloud_schema::mig::MigProfile;
use neocloud_schema::vocabulary::{AllocationClass, AllocationStatus, GpuHealth, NodeState};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryOrder, QuerySelect,
};
use uuid::Uuid;

/// One region's scheduler fleet and the mapping between its ids and the database's.
pub struct RegionFleet {
    pub fleet: Fleet,
    /// Scheduler node index → database node.
    pub nodes: Vec<node::Model>,
    /// Scheduler node index → its GPUs in scheduler order (by NVML index).
    pub gpus: Vec<Vec<gpu::Model>>,
    by_node: HashMap<Uuid, neocloud_scheduler::NodeId>,
}

impl RegionFleet {
    pub fn node(&self, id: neocloud_scheduler::NodeId) -> Option<&node::Model> {
        self.nodes.get(id.index())
    }

    pub fn gpu(&self, gpu: GpuRef) -> Option<&gpu::Model> {
        self.gpus.get(gpu.node.index())?.get(usize::from(gpu.gpu))
    }

    pub fn node_id(&self, db_node: Uuid) -> Option<neocloud_scheduler::NodeId> {
        self.by_node.get(&db_node).copied()
    }
}

/// The cached fleet: valid for `epoch` only.
#[derive(Default)]
pub struct FleetCache {
    /// The `fleet_epoch` this cache reflects; `None` until loaded or after a failure.
    pub epoch: Option<i64>,
    pub regions: BTreeMap<String, RegionFleet>,
}

pub fn tenant_key(tenant: Uuid) -> TenantKey {
    TenantKey(tenant.as_u128())
}

pub fn allocation_key(allocation: Uuid) -> AllocationKey {
    AllocationKey(allocation.as_u128())
}

pub fn class_of(class: AllocationClass) -> Class {
    match class {
        AllocationClass::OnDemand => Class::OnDemand,
        AllocationClass::Reserved => Class::Reserved,
        AllocationClass::Spot => Class::Spot,
    }
}

pub fn exclusive_of(text: Option<&str>) -> Option<Exclusivity> {
    match text {
        Some("node") => Some(Exclusivity::Node),
        Some("nvlink_domain") => Some(Exclusivity::NvlinkDomain),
        _ => None,
    }
}

pub fn exclusive_name(exclusive: Option<Exclusivity>) -> Option<String> {
    exclusive.map(|e| {
        match e {
            Exclusivity::Node => "node",
            Exclusivity::NvlinkDomain => "nvlink_domain",
        }
        .to_owned()
    })
}

fn health_of(health: GpuHealth) -> Health {
    match health {
        GpuHealth::Ok => Health::Ok,
        GpuHealth::Degraded => Health::Degraded,
        GpuHealth::Failed => Health::Failed,
    }
}

/// The scheduler's view of a node: a node whose hardware is not verified takes nothing
/// new, as if it were draining.
fn state_of(node: &node::Model) -> SchedNodeState {
    if node.state == NodeState::Active && !node.verification.schedulable() {
        return SchedNodeState::Draining;
    }
    match node.state {
        NodeState::Active => SchedNodeState::Active,
        NodeState::Draining => SchedNodeState::Draining,
        // Retired nodes are never loaded; were one, it would take nothing.
        NodeState::Down | NodeState::Retired => SchedNodeState::Down,
    }
}

/// The share of one GPU an allocation row holds.
pub fn share_of(alloc: &allocation::Model, gpu: &gpu::Model) -> GpuShare {
    let model = gpu.model.parse::<GpuModel>().ok();
    match (
        &alloc.mig_profile,
        alloc.mig_start_slot,
        alloc.milli_gpu,
        model,
    ) {
        (Some(name), Some(start), _, Some(model)) => match MigProfile::parse(name, model) {
            Ok(profile) => GpuShare::Mig {
                profile,
                start: u8::try_from(start.clamp(0, 7)).unwrap_or(0),
            },
            Err(_) => GpuShare::Whole,
        },
        (_, _, Some(milli), _) => GpuShare::Fraction {
            milli: u32::try_from(milli).unwrap_or(0),
            memory_mib: fraction_memory_mib(
                u64::try_from(gpu.memory_mib).unwrap_or(0),
                u32::try_from(milli).unwrap_or(0),
            ),
        },
        _ => GpuShare::Whole,
    }
}

/// GPU memory that comes with a fraction of a GPU (the catalog's rule).
pub fn fraction_memory_mib(gpu_memory_mib: u64, milli: u32) -> u64 {
    gpu_memory_mib * u64::from(milli) / 1000
}

impl FleetCache {
    /// Reads the whole fleet and its live allocations, as of `conn` (inside the caller's
    /// transaction, so it sees exactly what the transaction sees).
    pub async fn load<C: ConnectionTrait>(conn: &C, epoch: i64) -> Result<FleetCache, DbErr> {
        let nodes = node::Entity::find()
            .filter(node::Column::State.ne(NodeState::Retired))
            .order_by_asc(node::Column::Region)
            .order_by_asc(node::Column::Hostname)
            .all(conn)
            .await?;
        let mut gpus_by_node: HashMap<Uuid, Vec<gpu::Model>> = HashMap::new();
        for g in gpu::Entity::find()
            .order_by_asc(gpu::Column::Index)
            .all(conn)
            .await?
        {
            gpus_by_node.entry(g.node_id.into()).or_default().push(g);
        }
        let (live, held) = live_allocations(conn).await?;
        let mut grouped: BTreeMap<String, Vec<node::Model>> = BTreeMap::new();
        for n in nodes {
            grouped.entry(n.region.clone()).or_default().push(n);
        }
        let mut regions = BTreeMap::new();
        for (region, nodes) in grouped {
            let gpus: Vec<Vec<gpu::Model>> = nodes
                .iter()
                .map(|n| gpus_by_node.remove(&Uuid::from(n.id)).unwrap_or_default())
                .collect();
            regions.insert(region, RegionFleet::build(nodes, gpus)?);
        }
        let mut cache = FleetCache {
            epoch: Some(epoch),
            regions,
        };
        // An allocation being preempted holds, until its notice ends, what of it the order
        // that displaced it did not take: the others go first.
        let (leaving, staying): (Vec<_>, Vec<_>) = live
            .iter()
            .partition(|a| a.status == AllocationStatus::Preempting);
        let gpus_of =
            |a: &allocation::Model| held.get(&Uuid::from(a.id)).map_or(&[][..], Vec::as_slice);
        for alloc in staying {
            cache.recommit(alloc, gpus_of(alloc))?;
        }
        for alloc in leaving {
            cache.hold_for_notice(alloc, gpus_of(alloc))?;
        }
        let reliability = reliability_bp(conn).await?;
        for region in cache.regions.values_mut() {
            region.apply_states()?;
            region.apply_reliability(&reliability)?;
        }
        Ok(cache)
    }

    /// Re-applies a live allocation row to the scheduler state.
    fn recommit(&mut self, alloc: &allocation::Model, gpu_ids: &[Uuid]) -> Result<(), DbErr> {
        let region = self.region_of(alloc)?;
        let placement = region.placement_of(alloc, gpu_ids);
        region
            .fleet
            .commit(allocation_key(alloc.id.into()), &placement)
            .map(|_| ())
            .map_err(|e| DbErr::Custom(format!("allocation {} does not fit: {e}", alloc.id)))
    }

    /// A preempted allocation in its notice window takes back, on `gpu_ids`, whatever of
    /// it no other allocation holds (see [`keep_until_notice_ends`]).
    pub fn hold_for_notice(
        &mut self,
        alloc: &allocation::Model,
        gpu_ids: &[Uuid],
    ) -> Result<(), DbErr> {
        let region = self.region_of(alloc)?;
        let placement = region.placement_of(alloc, gpu_ids);
        keep_until_notice_ends(
            &mut region.fleet,
            allocation_key(alloc.id.into()),
            &placement,
        );
        Ok(())
    }

    fn region_of(&mut self, alloc: &allocation::Model) -> Result<&mut RegionFleet, DbErr> {
        self.regions
            .values_mut()
            .find(|r| r.by_node.contains_key(&Uuid::from(alloc.node_id)))
            .ok_or_else(|| DbErr::Custom(format!("allocation {} is on an unknown node", alloc.id)))
    }
}

/// A preempted allocation keeps running on its GPUs until its notice ends, so nothing that
/// starts now may be placed there. The scheduler hands all of it to its successor at once;
/// this commits again, under the allocation's key, each of its GPU grants that still fits
/// beside everyone else (those the successor did not take), without CPU or memory (the
/// successor may hold those). What it held before under the key is released first.
pub fn keep_until_notice_ends(fleet: &mut Fleet, key: AllocationKey, placement: &Placement) {
    let _ = fleet.release(key);
    let mut kept = Placement {
        nodes: Vec::new(),
        victims: Vec::new(),
        exclusive: None,
        ..placement.clone()
    };
    for np in &placement.nodes {
        let mut node = NodePlacement {
            node: np.node,
            cpu_milli: 0,
            memory_mib: 0,
            whole_node: false,
            gpus: Vec::new(),
        };
        for grant in &np.gpus {
            node.gpus.push(*grant);
            kept.nodes.push(node.clone());
            let fits = fleet.commit(key, &kept).is_ok();
            kept.nodes.pop();
            if fits {
                let _ = fleet.release(key);
            } else {
                node.gpus.pop();
            }
        }
        if !node.gpus.is_empty() {
            kept.nodes.push(node);
        }
    }
    // Every grant kept was committed with all kept before it, so this fits.
    if !kept.nodes.is_empty() {
        let _ = fleet.commit(key, &kept);
    }
}

impl RegionFleet {
    /// The placement of an allocation row over its node's GPUs `gpu_ids`.
    fn placement_of(&self, alloc: &allocation::Model, gpu_ids: &[Uuid]) -> Placement {
        let node = self.by_node[&Uuid::from(alloc.node_id)];
        let node_gpus = &self.gpus[node.index()];
        let mut grants: Vec<GpuGrant> = (0u8..=u8::MAX)
            .zip(node_gpus)
            .filter(|(_, g)| gpu_ids.contains(&Uuid::from(g.id)))
            .map(|(i, g)| GpuGrant {
                gpu: i,
                share: share_of(alloc, g),
            })
            .collect();
        grants.sort_by_key(|g| g.gpu);
        Placement {
            tenant: tenant_key(alloc.tenant_id.into()),
            class: class_of(alloc.class),
            exclusive: exclusive_of(alloc.exclusive.as_deref()),
            nodes: vec![NodePlacement {
                node,
                cpu_milli: u32::try_from(alloc.cpu_milli).unwrap_or(0),
                memory_mib: u64::try_from(alloc.memory_mib).unwrap_or(0),
                whole_node: alloc.whole_node,
                gpus: grants,
            }],
            victims: Vec::new(),
            degraded: false,
        }
    }
}

/// The allocations not released, with the GPUs each holds.
async fn live_allocations<C: ConnectionTrait>(
    conn: &C,
) -> Result<(Vec<allocation::Model>, HashMap<Uuid, Vec<Uuid>>), DbErr> {
    let live = allocation::Entity::find()
        .filter(allocation::Column::Status.ne(AllocationStatus::Released))
        .order_by_asc(allocation::Column::Id)
        .all(conn)
        .await?;
    let mut held: HashMap<Uuid, Vec<Uuid>> = HashMap::new();
    for row in allocation_gpu::Entity::find()
        .filter(allocation_gpu::Column::AllocationId.is_in(live.iter().map(|a| a.id)))
        .all(conn)
        .await?
    {
        held.entry(row.allocation_id.into())
            .or_default()
            .push(row.gpu_id.into());
    }
    Ok((live, held))
}

/// Each scored node's reliability in basis points (`node_reliability`).
async fn reliability_bp<C: ConnectionTrait>(conn: &C) -> Result<HashMap<Uuid, u16>, DbErr> {
    let rows: Vec<(Uuid, Option<i32>)> = node_reliability::Entity::find()
        .select_only()
        .column(node_reliability::Column::NodeId)
        .column(node_reliability::Column::ScoreBp)
        .into_tuple()
        .all(conn)
        .await?;
    Ok(rows
        .into_iter()
        .filter_map(|(node, bp)| Some((node, u16::try_from(bp?).ok()?)))
        .collect())
}

/// A node as the scheduler sees it, active and healthy: existing allocations always
/// re-commit onto it; its state and health are applied afterwards.
fn node_spec(n: &node::Model, gpus: &[gpu::Model]) -> NodeSpec {
    let mode = if n.mig_enabled {
        GpuMode::Mig
    } else if n.shared_gpus {
        GpuMode::Shared
    } else {
        GpuMode::Whole
    };
    NodeSpec {
        name: n.hostname.clone(),
        region: n.region.clone(),
        zone: n.zone.clone(),
        rack: n.rack.clone(),
        nvlink_domain: n.nvlink_domain.clone(),
        cpu_milli: u32::try_from(n.cpu_milli).unwrap_or(u32::MAX),
        // Registration bounds these; a negative value would be a broken row: no capacity.
        memory_mib: u64::try_from(n.memory_mib).unwrap_or(0),
        state: SchedNodeState::Active,
        reliability: None,
        gpus: gpus
            .iter()
            .map(|g| GpuSpec {
                model: g.model.clone(),
                memory_mib: u64::try_from(g.memory_mib).unwrap_or(0),
                health: Health::Ok,
                mode,
            })
            .collect(),
    }
}

impl RegionFleet {
    /// A region's scheduler fleet over its nodes (in order) and their GPUs.
    fn build(nodes: Vec<node::Model>, gpus: Vec<Vec<gpu::Model>>) -> Result<RegionFleet, DbErr> {
        let specs = nodes
            .iter()
            .zip(&gpus)
            .map(|(n, gs)| node_spec(n, gs))
            .collect();
        let fleet = Fleet::new(specs).map_err(|e| DbErr::Custom(e.to_string()))?;
        let by_node = (0u32..)
            .zip(&nodes)
            .map(|(i, n)| (n.id.into(), neocloud_scheduler::NodeId(i)))
            .collect();
        Ok(RegionFleet {
            fleet,
            nodes,
            gpus,
            by_node,
        })
    }

    /// Gives the fleet's nodes their reliability: the tie-breaker of on-demand placements.
    fn apply_reliability(&mut self, reliability: &HashMap<Uuid, u16>) -> Result<(), DbErr> {
        for (i, n) in (0u32..).zip(&self.nodes) {
            let bp = reliability.get(&Uuid::from(n.id)).copied();
            self.fleet
                .set_node_reliability(neocloud_scheduler::NodeId(i), bp)
                .map_err(|e| DbErr::Custom(e.to_string()))?;
        }
        Ok(())
    }

    /// Applies the nodes' states and the GPUs' health to the fleet.
    fn apply_states(&mut self) -> Result<(), DbErr> {
        let broken = |e: neocloud_scheduler::FleetError| DbErr::Custom(e.to_string());
        for ((i, n), gpus) in (0u32..).zip(&self.nodes).zip(&self.gpus) {
            let id = neocloud_scheduler::NodeId(i);
            self.fleet.set_node_state(id, state_of(n)).map_err(broken)?;
            for (j, g) in (0u8..=u8::MAX).zip(gpus) {
                let gpu = GpuRef { node: id, gpu: j };
                self.fleet
                    .set_gpu_health(gpu, health_of(g.health))
                    .map_err(broken)?;
            }
        }
        Ok(())
    }
}
