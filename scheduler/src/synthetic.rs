//! Synthetic fleets and request kinds for timing decisions (the criterion bench and
//! `neocloud-sched bench`), plus the naive baseline they are compared with: a linear
//! first-fit scan over every node, without aggregates. Seeded, so every run builds the
//! same fleet; timing itself is the callers' job (this crate reads no clock).

use neocloud_schema::mig::{MigProfile, SlotMask};
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::fleet::{Fleet, FleetError, Gpu, GpuMode, GpuSpec, Health, Node, NodeSpec, NodeState};
use crate::ids::{AllocationKey, ModelSet, NodeId, TenantKey, count_u32};
use crate::placement::{GpuGrant, GpuShare, NoFit, NodePlacement, Placement};
use crate::request::{Class, Request, Shape, Topology, TopologyLevel};

/// Nodes per rack of the synthetic fleet.
pub const RACK_NODES: usize = 8;
/// GPUs per node of the synthetic fleet.
pub const NODE_GPUS: usize = 8;

/// A fleet of `nodes` 8-GPU nodes in racks of 8, 4 zones: per 20 racks, 11 of H100 SXM
/// (each node its own NVLink domain), 3 NVL72-style GB200 racks (the rack is one NVLink
/// domain), 3 of A100/H100 in MIG mode, 3 of L40S in shared mode.
pub fn fleet(nodes: usize) -> Result<Fleet, FleetError> {
    let racks = nodes.div_ceil(RACK_NODES);
    let mut specs = Vec::with_capacity(nodes);
    for i in 0..nodes {
        let rack = i / RACK_NODES;
        let (model, mode, memory_gib, domain) = match rack % 20 {
            0..=10 => ("H100", GpuMode::Whole, 80, format!("n{i}")),
            11..=13 => ("GB200", GpuMode::Whole, 186, format!("nvl{rack}")),
            14 | 16 => ("A100-80GB", GpuMode::Mig, 80, format!("n{i}")),
            15 => ("H100", GpuMode::Mig, 80, format!("n{i}")),
            _ => ("L40S", GpuMode::Shared, 48, format!("n{i}")),
        };
        specs.push(NodeSpec {
            name: format!("n{i}"),
            region: "bench".into(),
            zone: format!("z{}", rack * 4 / racks.max(1)),
            rack: format!("rack{rack}"),
            nvlink_domain: domain,
            cpu_milli: 224_000,
            memory_mib: 2 << 20,
            state: NodeState::Active,
            reliability: None,
            gpus: vec![
                GpuSpec {
                    model: model.into(),
                    memory_mib: memory_gib * 1024,
                    health: Health::Ok,
                    mode,
                };
                NODE_GPUS
            ],
        });
    }
    Fleet::new(specs)
}

/// Fills the fleet to about `occupancy` (share of GPUs allocated) on every kind of node
/// alike: a node is full, half used or idle at random in the proportions that give the
/// occupancy (5% idle at 90%). On a half-used node each whole-mode GPU is taken with
/// probability 1/2 (one-GPU allocations), MIG GPUs get random profiles at their best
/// starts up to half their slots, shared GPUs random fractions up to half. A quarter of
/// the allocations are spot.
pub fn fill(fleet: &mut Fleet, occupancy: f64, seed: u64) -> Vec<AllocationKey> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut keys = Vec::new();
    let mut next = 1u128 << 64;
    let ids: Vec<NodeId> = fleet.node_ids().collect();
    for id in ids {
        let level = node_level(&mut rng, occupancy);
        let gpu_count = fleet.nodes[id.index()].gpus.len();
        // `Fleet::new` refuses nodes of more than 255 GPUs: every GPU has a `u8` index.
        for (gpu, _) in (0..=u8::MAX).zip(0..gpu_count) {
            let g = &fleet.nodes[id.index()].gpus[usize::from(gpu)];
            for share in random_shares(&mut rng, g, level) {
                let placement = random_placement(&mut rng, id, GpuGrant { gpu, share });
                let key = AllocationKey(next);
                next += 1;
                if fleet.commit(key, &placement).is_ok() {
                    keys.push(key);
                }
            }
        }
    }
    keys
}

/// A packed fleet: most nodes full, a band partly used, the rest idle
/// (occupancy − 5% full, 10% half used, the remainder idle).
fn node_level(rng: &mut ChaCha8Rng, occupancy: f64) -> f64 {
    let u: f64 = rng.random();
    if u < occupancy - 0.05 {
        1.0
    } else if u < occupancy + 0.05 {
        0.5
    } else {
        0.0
    }
}

/// The shares taken on one GPU of a node used to `level`.
fn random_shares(rng: &mut ChaCha8Rng, g: &Gpu, level: f64) -> Vec<GpuShare> {
    match g.mode {
        GpuMode::Whole => {
            if rng.random_bool(level.clamp(0.0, 1.0)) {
                vec![GpuShare::Whole]
            } else {
                Vec::new()
            }
        }
        GpuMode::Mig => random_mig_shares(rng, g.mig_used, level),
        GpuMode::Shared => random_fractions(rng, level),
    }
}

/// Random MIG profiles at their best starts, up to `level` of the slots.
fn random_mig_shares(rng: &mut ChaCha8Rng, used: SlotMask, level: f64) -> Vec<GpuShare> {
    let mut mask = used;
    let mut out = Vec::new();
    for _ in 0..8 {
        let profile = *MigProfile::ALL.choose(rng).unwrap_or(&MigProfile::OneG);
        let Some(start) = crate::mig::best_start(mask, profile) else {
            continue;
        };
        let after = mask.union(profile.mask_at(start));
        if f64::from(after.used_slots()) > level * 8.0 {
            continue;
        }
        mask = after;
        out.push(GpuShare::Mig { profile, start });
    }
    out
}

/// Random fractions of a shared GPU, up to `level` of it.
fn random_fractions(rng: &mut ChaCha8Rng, level: f64) -> Vec<GpuShare> {
    let mut used = 0u32;
    let mut out = Vec::new();
    for _ in 0..8 {
        let milli = *[125u32, 250, 500].choose(rng).unwrap_or(&250);
        if f64::from(used + milli) > level * 1000.0 {
            continue;
        }
        used += milli;
        out.push(GpuShare::Fraction {
            milli,
            memory_mib: 0,
        });
    }
    out
}

/// One grant for a random tenant; a quarter of them spot.
fn random_placement(rng: &mut ChaCha8Rng, node: NodeId, grant: GpuGrant) -> Placement {
    Placement {
        tenant: TenantKey(rng.random_range(1..50)),
        class: if rng.random_bool(0.25) {
            Class::Spot
        } else {
            Class::OnDemand
        },
        exclusive: None,
        nodes: vec![NodePlacement {
            node,
            cpu_milli: 4000,
            memory_mib: 16_384,
            whole_node: false,
            gpus: vec![grant],
        }],
        victims: Vec::new(),
        degraded: false,
    }
}

/// The request kinds the benchmarks time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    OneGpu,
    EightGpusNvlink,
    Gang1024Racks,
    Mig1g,
    Mig3g,
    Fractional,
}

impl Kind {
    pub const ALL: [Kind; 6] = [
        Kind::OneGpu,
        Kind::EightGpusNvlink,
        Kind::Gang1024Racks,
        Kind::Mig1g,
        Kind::Mig3g,
        Kind::Fractional,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Kind::OneGpu => "1 GPU",
            Kind::EightGpusNvlink => "8 GPUs, one NVLink domain",
            Kind::Gang1024Racks => "1,024-GPU gang, racks preferred",
            Kind::Mig1g => "MIG 1g",
            Kind::Mig3g => "MIG 3g",
            Kind::Fractional => "fractional 250 milli-GPU",
        }
    }

    /// The request of this kind on a synthetic fleet.
    pub fn request(self, fleet: &Fleet, tenant: u128) -> Request {
        let h100 = fleet.model_set(["H100"]);
        let mig = fleet.model_set(["A100-80GB", "H100"]);
        let shape = match self {
            Kind::OneGpu => Shape::WholeGpus {
                count: 1,
                models: h100,
                topology: Topology::ANY,
                cpu_milli_per_gpu: 8000,
                memory_mib_per_gpu: 65_536,
            },
            Kind::EightGpusNvlink => Shape::WholeGpus {
                count: 8,
                models: h100,
                topology: Topology::required(TopologyLevel::NvlinkDomain),
                cpu_milli_per_gpu: 8000,
                memory_mib_per_gpu: 65_536,
            },
            Kind::Gang1024Racks => Shape::WholeGpus {
                count: 1024,
                models: ModelSet::ANY,
                topology: Topology::preferred(TopologyLevel::Rack),
                cpu_milli_per_gpu: 0,
                memory_mib_per_gpu: 0,
            },
            Kind::Mig1g | Kind::Mig3g => Shape::Mig {
                profile: if self == Kind::Mig1g {
                    MigProfile::OneG
                } else {
                    MigProfile::ThreeG
                },
                models: mig,
                cpu_milli: 2000,
                memory_mib: 8192,
            },
            Kind::Fractional => Shape::Fractional {
                milli_gpu: 250,
                gpu_memory_mib: 8192,
                models: fleet.model_set(["L40S"]),
                cpu_milli: 2000,
                memory_mib: 8192,
            },
        };
        Request::new(TenantKey(tenant), shape)
    }
}

/// The baseline: scan every node in order, no aggregates, no topology; the first node
/// (or, for gangs, the first nodes in order) that fits wins.
pub fn naive_first_fit(fleet: &Fleet, req: &Request) -> Result<Placement, NoFit> {
    naive_scan(fleet, req, false)
}

/// The other baseline: scan every node, no aggregates; a single-node request takes the
/// node with the fewest free GPUs left (best fit), which needs the whole scan.
pub fn naive_best_fit(fleet: &Fleet, req: &Request) -> Result<Placement, NoFit> {
    naive_scan(fleet, req, true)
}

fn naive_scan(fleet: &Fleet, req: &Request, best_fit: bool) -> Result<Placement, NoFit> {
    let mut best: Option<(u32, NodePlacement)> = None;
    req.shape.validate()?;
    let mut nodes = Vec::new();
    let wanted = match req.shape {
        Shape::WholeGpus { count, .. } | Shape::WholeNodes { count, .. } => count,
        _ => 1,
    };
    let mut need = wanted;
    let gang = matches!(req.shape, Shape::WholeGpus { count, .. } if count > count_u32(NODE_GPUS));
    for (id, n) in fleet.node_ids().zip(&fleet.nodes) {
        if need == 0 {
            break;
        }
        if !fleet.node_open(n, req) {
            continue;
        }
        let Some(fit) = naive_fit(n, id, &req.shape, need, gang)? else {
            continue;
        };
        nodes.push(fit.placement);
        need -= fit.taken;
        if best_fit && !gang {
            keep_best(&mut best, &mut nodes, &mut need, fit.left, wanted);
        }
    }
    if let Some((_, np)) = best {
        nodes = vec![np];
        need = 0;
    }
    if need > 0 {
        return Err(NoFit::NoCapacity);
    }
    Ok(Placement {
        tenant: req.tenant,
        class: req.class,
        exclusive: req.exclusive,
        nodes,
        victims: Vec::new(),
        degraded: false,
    })
}

/// What one node would grant the naive scan.
struct NaiveFit {
    placement: NodePlacement,
    /// How much of what is still needed the grant covers.
    taken: u32,
    /// What the node would have left afterwards, for best fit (fewer is better).
    left: u32,
}

/// What node `n` can grant of `shape` without aggregates, if anything.
fn naive_fit(
    n: &Node,
    id: NodeId,
    shape: &Shape,
    need: u32,
    gang: bool,
) -> Result<Option<NaiveFit>, NoFit> {
    let fits_cpu = |cpu: u32, mem: u64| cpu <= n.free_cpu_milli && mem <= n.free_memory_mib;
    Ok(match *shape {
        Shape::WholeGpus {
            count,
            models,
            cpu_milli_per_gpu,
            memory_mib_per_gpu,
            ..
        } => {
            let per_gpu = (cpu_milli_per_gpu, memory_mib_per_gpu);
            naive_whole_gpus(n, id, count, models, per_gpu, need, gang)
        }
        Shape::Mig {
            profile,
            models,
            cpu_milli,
            memory_mib,
        } => {
            let hit = fits_cpu(cpu_milli, memory_mib)
                .then(|| first_mig_start(n, profile, models))
                .flatten();
            hit.map(|(gpu, g, start)| {
                let share = GpuShare::Mig { profile, start };
                let node = naive_node(id, cpu_milli, memory_mib, vec![GpuGrant { gpu, share }]);
                NaiveFit {
                    placement: node,
                    taken: need,
                    left: 8 - g.mig_used.used_slots(),
                }
            })
        }
        Shape::Fractional {
            milli_gpu,
            gpu_memory_mib,
            models,
            cpu_milli,
            memory_mib,
        } => {
            let hit = fits_cpu(cpu_milli, memory_mib)
                .then(|| first_shared_room(n, milli_gpu, gpu_memory_mib, models))
                .flatten();
            hit.map(|(gpu, g)| {
                let share = GpuShare::Fraction {
                    milli: milli_gpu,
                    memory_mib: gpu_memory_mib,
                };
                let node = naive_node(id, cpu_milli, memory_mib, vec![GpuGrant { gpu, share }]);
                NaiveFit {
                    placement: node,
                    taken: need,
                    left: g.free_milli(),
                }
            })
        }
        Shape::WholeNodes { .. } | Shape::Cpu { .. } => return Err(NoFit::NoCapacity),
    })
}

/// The whole GPUs node `n` can grant: all `count` asked for, or for a gang as many as
/// are still needed.
fn naive_whole_gpus(
    n: &Node,
    id: NodeId,
    count: u32,
    models: ModelSet,
    (cpu_milli_per_gpu, memory_mib_per_gpu): (u32, u64),
    need: u32,
    gang: bool,
) -> Option<NaiveFit> {
    let free = free_whole_gpus(n, models);
    let free_count = count_u32(free.len());
    let take = if gang {
        need.min(free_count)
    } else if free_count >= count {
        count
    } else {
        0
    };
    let cpu_milli = cpu_milli_per_gpu * take;
    let memory_mib = memory_mib_per_gpu * u64::from(take);
    if take == 0 || cpu_milli > n.free_cpu_milli || memory_mib > n.free_memory_mib {
        return None;
    }
    let gpus = free.iter().take(take as usize).map(|&gpu| GpuGrant {
        gpu,
        share: GpuShare::Whole,
    });
    Some(NaiveFit {
        placement: naive_node(id, cpu_milli, memory_mib, gpus.collect()),
        taken: take,
        left: free_count - take,
    })
}

fn naive_node(id: NodeId, cpu_milli: u32, memory_mib: u64, gpus: Vec<GpuGrant>) -> NodePlacement {
    NodePlacement {
        node: id,
        cpu_milli,
        memory_mib,
        whole_node: false,
        gpus,
    }
}

/// The healthy, idle GPUs of `n` sold whole, of the models asked for.
fn free_whole_gpus(n: &Node, models: ModelSet) -> Vec<u8> {
    n.indexed_gpus()
        .filter(|(_, g)| g.whole_free() && g.health == Health::Ok && models.contains(g.model))
        .map(|(i, _)| i)
        .collect()
}

/// The first healthy MIG GPU of `n` with room for `profile`, at its first free start.
fn first_mig_start(n: &Node, profile: MigProfile, models: ModelSet) -> Option<(u8, &Gpu, u8)> {
    n.indexed_gpus().find_map(|(i, g)| {
        (g.mode == GpuMode::Mig
            && g.holder.is_none()
            && g.health == Health::Ok
            && models.contains(g.model))
        .then(|| g.mig_used.free_starts(profile).next().map(|s| (i, g, s)))
        .flatten()
    })
}

/// The first healthy shared GPU of `n` with room for the fraction.
fn first_shared_room(
    n: &Node,
    milli_gpu: u32,
    gpu_memory_mib: u64,
    models: ModelSet,
) -> Option<(u8, &Gpu)> {
    n.indexed_gpus().find(|(_, g)| {
        g.mode == GpuMode::Shared
            && g.holder.is_none()
            && g.health == Health::Ok
            && models.contains(g.model)
            && g.free_milli() >= milli_gpu
            && g.shared_memory_mib + gpu_memory_mib <= g.memory_mib
    })
}

/// Best fit: keeps the candidate just pushed if it leaves less free than the best so far,
/// and keeps the scan going.
fn keep_best(
    best: &mut Option<(u32, NodePlacement)>,
    nodes: &mut Vec<NodePlacement>,
    need: &mut u32,
    left: u32,
    reset: u32,
) {
    if let Some(np) = nodes.pop()
        && best.as_ref().is_none_or(|(b, _)| left < *b)
    {
        *best = Some((left, np));
    }
    *need = reset;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_synthetic_fleet_fills_to_the_asked_occupancy_and_serves_every_kind() {
        let mut fleet = fleet(400).unwrap();
        fill(&mut fleet, 0.5, 7);
        let share = fleet.allocated_gpu_milli() as f64 / (fleet.gpu_count() as f64 * 1000.0);
        assert!((0.4..0.6).contains(&share), "{share}");
        for kind in Kind::ALL {
            let req = kind.request(&fleet, 999);
            let p = fleet.place(&req).unwrap();
            fleet.clone().commit(AllocationKey(1), &p).unwrap();
            let naive = naive_first_fit(&fleet, &req).unwrap();
            fleet.clone().commit(AllocationKey(1), &naive).unwrap();
            let naive = naive_best_fit(&fleet, &req).unwrap();
            fleet.clone().commit(AllocationKey(1), &naive).unwrap();
        }
    }
}
