//! How many units of each SKU could be ordered right now, from one read of the fleet:
//! GPUs on active nodes that have not failed, minus what running allocations hold.
//! (Placement itself — topology, gangs, preemption — is the scheduler's; this is the
//! count a customer sees in the catalog.)

use std::collections::HashMap;

use neocloud_schema::entity::{allocation, allocation_gpu, gpu, node, sku};
use neocloud_schema::gpu::GpuModel;
use neocloud_schema::mig::{MigProfile, SlotMask};
use neocloud_schema::vocabulary::{AllocationStatus, GpuHealth, NodeState, SkuForm};
use sea_orm::{ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter};
use uuid::Uuid;

/// (model code, region)
type Key = (String, String);

#[derive(Debug, Default)]
pub struct Availability {
    whole_gpus: HashMap<Key, u32>,
    whole_nodes: HashMap<Key, u32>,
    /// Slots taken on each usable MIG-mode GPU.
    mig_gpus: HashMap<Key, Vec<SlotMask>>,
    /// Milli-GPUs still free on each usable shared GPU.
    shared_free_milli: HashMap<Key, Vec<u32>>,
}

/// What running allocations hold on one GPU.
#[derive(Debug, Default, Clone, Copy)]
struct Held {
    whole: bool,
    mig: SlotMask,
    milli: u32,
}

impl Availability {
    pub async fn load<C: ConnectionTrait>(conn: &C) -> Result<Availability, DbErr> {
        let nodes: HashMap<Uuid, node::Model> = node::Entity::find()
            .filter(node::Column::State.eq(NodeState::Active))
            .all(conn)
            .await?
            .into_iter()
            .map(|n| (n.id, n))
            .collect();
        let gpus = gpu::Entity::find()
            .filter(gpu::Column::NodeId.is_in(nodes.keys().copied()))
            .all(conn)
            .await?;
        let running: HashMap<Uuid, allocation::Model> = allocation::Entity::find()
            .filter(allocation::Column::Status.ne(AllocationStatus::Released))
            .all(conn)
            .await?
            .into_iter()
            .map(|a| (a.id, a))
            .collect();
        let holdings = allocation_gpu::Entity::find()
            .filter(allocation_gpu::Column::AllocationId.is_in(running.keys().copied()))
            .all(conn)
            .await?;
        let models: HashMap<Uuid, GpuModel> = nodes
            .values()
            .filter_map(|n| n.gpu_model.parse().ok().map(|m| (n.id, m)))
            .collect();
        let gpu_node: HashMap<Uuid, Uuid> = gpus.iter().map(|g| (g.id, g.node_id)).collect();

        let mut held: HashMap<Uuid, Held> = HashMap::new();
        for row in &holdings {
            let Some(alloc) = running.get(&row.allocation_id) else {
                continue;
            };
            let entry = held.entry(row.gpu_id).or_default();
            let model = gpu_node.get(&row.gpu_id).and_then(|n| models.get(n));
            match (
                &alloc.mig_profile,
                alloc.mig_start_slot,
                alloc.milli_gpu,
                model,
            ) {
                (Some(name), Some(start), _, Some(model)) => {
                    if let Ok(profile) = MigProfile::parse(name, *model) {
                        entry.mig = entry.mig.union(profile.mask_at(start as u8));
                    }
                }
                (_, _, Some(milli), _) => entry.milli += milli.max(0) as u32,
                _ => entry.whole = true,
            }
        }

        let mut out = Availability::default();
        let mut node_busy: HashMap<Uuid, bool> = HashMap::new();
        for gpu in &gpus {
            let Some(node) = nodes.get(&gpu.node_id) else {
                continue;
            };
            let h = held.get(&gpu.id).copied().unwrap_or_default();
            let busy = h.whole || h.mig != SlotMask::EMPTY || h.milli > 0;
            let unusable = gpu.health == GpuHealth::Failed;
            *node_busy.entry(node.id).or_default() |= busy || unusable;
            if unusable {
                continue;
            }
            let key = (node.gpu_model.clone(), node.region.clone());
            if node.mig_enabled {
                out.mig_gpus.entry(key).or_default().push(h.mig);
            } else if node.shared_gpus {
                out.shared_free_milli
                    .entry(key)
                    .or_default()
                    .push(1000u32.saturating_sub(h.milli));
            } else if !busy {
                *out.whole_gpus.entry(key).or_default() += 1;
            }
        }
        for node in nodes.values() {
            if !node.mig_enabled
                && !node.shared_gpus
                && !node_busy.get(&node.id).copied().unwrap_or(true)
            {
                *out.whole_nodes
                    .entry((node.gpu_model.clone(), node.region.clone()))
                    .or_default() += 1;
            }
        }
        Ok(out)
    }

    /// Units of `sku` that could be ordered now.
    pub fn of(&self, sku: &sku::Model) -> u32 {
        let key = (sku.gpu_model.clone(), sku.region.clone());
        match sku.form {
            SkuForm::WholeGpu => self.whole_gpus.get(&key).copied().unwrap_or(0),
            SkuForm::WholeNode => self.whole_nodes.get(&key).copied().unwrap_or(0),
            SkuForm::Mig => {
                let profile = sku
                    .gpu_model
                    .parse::<GpuModel>()
                    .ok()
                    .zip(sku.mig_profile.as_deref())
                    .and_then(|(model, name)| MigProfile::parse(name, model).ok());
                match (profile, self.mig_gpus.get(&key)) {
                    (Some(profile), Some(masks)) => masks
                        .iter()
                        .map(|m| u32::from(m.capacity_for(profile)))
                        .sum(),
                    _ => 0,
                }
            }
            SkuForm::Fractional => match (sku.milli_gpu, self.shared_free_milli.get(&key)) {
                (Some(milli), Some(free)) if milli > 0 => {
                    free.iter().map(|f| f / milli as u32).sum()
                }
                _ => 0,
            },
        }
    }
}
