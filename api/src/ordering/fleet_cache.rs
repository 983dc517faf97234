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
use neocloud_schema::entity::{allocation, allocation_gpu, gpu, node};
use neocloud_schema::gpu::GpuModel;
use neocloud_schema::mig::MigProfile;
use neocloud_schema::vocabulary::{AllocationClass, AllocationStatus, GpuHealth, NodeState};
use sea_orm::{ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryOrder};
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

fn state_of(state: NodeState) -> SchedNodeState {
    match state {
        NodeState::Active => SchedNodeState::Active,
        NodeState::Draining => SchedNodeState::Draining,
        NodeState::Down => SchedNodeState::Down,
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
                start: start.clamp(0, 7) as u8,
            },
            Err(_) => GpuShare::Whole,
        },
        (_, _, Some(milli), _) => GpuShare::Fraction {
            milli: milli.max(0) as u32,
            memory_mib: fraction_memory_mib(gpu.memory_mib.max(0) as u64, milli.max(0) as u32),
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
            gpus_by_node.entry(g.node_id).or_default().push(g);
        }
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
            held.entry(row.allocation_id).or_default().push(row.gpu_id);
        }

        let mut grouped: BTreeMap<String, Vec<node::Model>> = BTreeMap::new();
        for n in nodes {
            grouped.entry(n.region.clone()).or_default().push(n);
        }
        let mut regions = BTreeMap::new();
        for (region, nodes) in grouped {
            let gpus: Vec<Vec<gpu::Model>> = nodes
                .iter()
                .map(|n| gpus_by_node.remove(&n.id).unwrap_or_default())
                .collect();
            // Built all active and healthy, so existing allocations always re-commit;
            // states and health are applied afterwards.
            let specs = nodes
                .iter()
                .zip(&gpus)
                .map(|(n, gs)| NodeSpec {
                    name: n.hostname.clone(),
                    region: n.region.clone(),
                    zone: n.zone.clone(),
                    rack: n.rack.clone(),
                    nvlink_domain: n.nvlink_domain.clone(),
                    cpu_milli: u32::try_from(n.cpu_milli).unwrap_or(u32::MAX),
                    memory_mib: n.memory_mib.max(0) as u64,
                    state: SchedNodeState::Active,
                    gpus: gs
                        .iter()
                        .map(|g| GpuSpec {
                            model: g.model.clone(),
                            memory_mib: g.memory_mib.max(0) as u64,
                            health: Health::Ok,
                            mode: if n.mig_enabled {
                                GpuMode::Mig
                            } else if n.shared_gpus {
                                GpuMode::Shared
                            } else {
                                GpuMode::Whole
                            },
                        })
                        .collect(),
                })
                .collect();
            let fleet = Fleet::new(specs).map_err(|e| DbErr::Custom(e.to_string()))?;
            let by_node = nodes
                .iter()
                .enumerate()
                .map(|(i, n)| (n.id, neocloud_scheduler::NodeId(i as u32)))
                .collect();
            regions.insert(
                region,
                RegionFleet {
                    fleet,
                    nodes,
                    gpus,
                    by_node,
                },
            );
        }

        let mut cache = FleetCache {
            epoch: Some(epoch),
            regions,
        };
        for alloc in &live {
            cache.recommit(alloc, held.get(&alloc.id).map_or(&[][..], Vec::as_slice))?;
        }
        for region in cache.regions.values_mut() {
            for (i, n) in region.nodes.iter().enumerate() {
                let id = neocloud_scheduler::NodeId(i as u32);
                region
                    .fleet
                    .set_node_state(id, state_of(n.state))
                    .map_err(|e| DbErr::Custom(e.to_string()))?;
                for (j, g) in region.gpus[i].iter().enumerate() {
                    region
                        .fleet
                        .set_gpu_health(
                            GpuRef {
                                node: id,
                                gpu: j as u8,
                            },
                            health_of(g.health),
                        )
                        .map_err(|e| DbErr::Custom(e.to_string()))?;
                }
            }
        }
        Ok(cache)
    }

    /// Re-applies a live allocation row to the scheduler state.
    fn recommit(&mut self, alloc: &allocation::Model, gpu_ids: &[Uuid]) -> Result<(), DbErr> {
        let Some(region) = self
            .regions
            .values_mut()
            .find(|r| r.by_node.contains_key(&alloc.node_id))
        else {
            return Err(DbErr::Custom(format!(
                "allocation {} is on an unknown node",
                alloc.id
            )));
        };
        let node = region.by_node[&alloc.node_id];
        let node_gpus = &region.gpus[node.index()];
        let mut grants: Vec<GpuGrant> = node_gpus
            .iter()
            .enumerate()
            .filter(|(_, g)| gpu_ids.contains(&g.id))
            .map(|(i, g)| GpuGrant {
                gpu: i as u8,
                share: share_of(alloc, g),
            })
            .collect();
        grants.sort_by_key(|g| g.gpu);
        let placement = Placement {
            tenant: tenant_key(alloc.tenant_id),
            class: class_of(alloc.class),
            exclusive: exclusive_of(alloc.exclusive.as_deref()),
            nodes: vec![NodePlacement {
                node,
                cpu_milli: u32::try_from(alloc.cpu_milli).unwrap_or(0),
                memory_mib: alloc.memory_mib.max(0) as u64,
                whole_node: alloc.whole_node,
                gpus: grants,
            }],
            victims: Vec::new(),
            degraded: false,
        };
        region
            .fleet
            .commit(allocation_key(alloc.id), &placement)
            .map(|_| ())
            .map_err(|e| DbErr::Custom(format!("allocation {} does not fit: {e}", alloc.id)))
    }
}
