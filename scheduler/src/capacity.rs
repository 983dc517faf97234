//! Read-only capacity queries for the catalog: how many instances of a shape could be
//! placed now, read from the fleet-wide aggregates in constant time per model (no node is
//! visited). The count ignores CPU, memory, tenants and exclusivity, and rounds shared
//! GPUs' free capacity down to 100 milli-GPUs: it answers "is this sellable, and about
//! how many", while `Fleet::place` decides. `Fleet::most_ever` answers "could this ever
//! fit here" (an empty fleet), to tell a request that never fits from one that does not
//! fit now.

use std::collections::BTreeMap;

use neocloud_schema::mig::SlotMask;

use crate::aggregate::{SHARED_BUCKETS, WHOLE_BUCKETS, profile_index};
use crate::fleet::{Fleet, Gpu, GpuMode, Level, Node};
use crate::ids::count_u32;
use crate::request::{MILLI_PER_GPU, Shape, Topology, TopologyLevel};

impl Fleet {
    /// How many instances of `shape` the free capacity could hold now.
    pub fn available(&self, shape: &Shape) -> u32 {
        let s = self.root_summary();
        let models = |set: crate::ids::ModelSet| set.iter(self.models.len());
        match *shape {
            Shape::WholeGpus {
                count,
                models: set,
                topology,
                ..
            } => {
                if count == 0 {
                    return 0;
                }
                let per_node = topology.required && topology.level == TopologyLevel::Node;
                if per_node || count == 1 {
                    models(set)
                        .map(|m| {
                            (0..WHOLE_BUCKETS)
                                .zip(0u32..)
                                .map(|(b, free)| s.whole_hist[m.index()][b] * (free / count))
                                .sum::<u32>()
                        })
                        .sum()
                } else {
                    models(set).map(|m| s.whole_free[m.index()]).sum::<u32>() / count
                }
            }
            Shape::Mig {
                profile,
                models: set,
                ..
            } => models(set)
                .map(|m| s.mig_cap[m.index()][profile_index(profile)])
                .sum(),
            Shape::Fractional {
                milli_gpu,
                models: set,
                ..
            } => {
                if milli_gpu == 0 {
                    return 0;
                }
                models(set)
                    .map(|m| {
                        (0..SHARED_BUCKETS)
                            .zip(0u32..)
                            .map(|(b, tenths)| {
                                s.shared_hist[m.index()][b] * (tenths * 100 / milli_gpu)
                            })
                            .sum::<u32>()
                    })
                    .sum()
            }
            Shape::WholeNodes {
                count, models: set, ..
            } => models(set).map(|m| s.idle_nodes[m.index()]).sum::<u32>() / count.max(1),
            Shape::Cpu { .. } => 0,
        }
    }
}

impl Fleet {
    /// The most one request of `shape` could ever get from this fleet, were every node
    /// active, every GPU healthy and nothing allocated: for whole GPUs and whole nodes the
    /// largest `count` inside one scope of the shape's required topology (node, NVLink
    /// domain, rack, or the whole fleet), for a MIG or fractional shape how many such
    /// instances fit at once. A request above it can never be placed here, whatever is
    /// released. Reads every node: for explaining a refusal, not for placing.
    pub fn most_ever(&self, shape: &Shape) -> u32 {
        match *shape {
            Shape::WholeGpus {
                models, topology, ..
            } => self.most_per_scope(topology, |n| {
                count_u32(
                    n.gpus
                        .iter()
                        .filter(|g| g.mode != GpuMode::Mig && models.contains(g.model))
                        .count(),
                )
            }),
            Shape::WholeNodes {
                models, topology, ..
            } => {
                let most = self.most_per_scope(topology, |n| {
                    u32::from(!n.gpus.is_empty() && n.gpus.iter().all(|g| models.contains(g.model)))
                });
                if topology.required && topology.level == TopologyLevel::Node {
                    most.min(1)
                } else {
                    most
                }
            }
            Shape::Mig {
                profile, models, ..
            } => self.sum_over_gpus(|g| {
                if g.mode == GpuMode::Mig && models.contains(g.model) {
                    u32::from(SlotMask::EMPTY.capacity_for(profile))
                } else {
                    0
                }
            }),
            Shape::Fractional {
                milli_gpu,
                gpu_memory_mib,
                models,
                ..
            } => self.sum_over_gpus(|g| {
                if g.mode != GpuMode::Shared || !models.contains(g.model) || milli_gpu == 0 {
                    return 0;
                }
                let by_memory = g
                    .memory_mib
                    .checked_div(gpu_memory_mib)
                    .map_or(u32::MAX, |k| u32::try_from(k).unwrap_or(u32::MAX));
                (MILLI_PER_GPU / milli_gpu).min(by_memory)
            }),
            Shape::Cpu { .. } => 0,
        }
    }

    /// The largest sum of `per_node` over the nodes of one scope of `topology`.
    fn most_per_scope(&self, topology: Topology, per_node: impl Fn(&Node) -> u32) -> u32 {
        let level = match (topology.required, topology.level) {
            (true, TopologyLevel::Node) => None,
            (true, TopologyLevel::NvlinkDomain) => Some(Level::Domain),
            (true, TopologyLevel::Rack) => Some(Level::Rack),
            _ => Some(Level::Root),
        };
        let mut per_scope: BTreeMap<u32, u32> = BTreeMap::new();
        for (id, n) in self.node_ids().zip(&self.nodes) {
            let units = per_node(n);
            let scope = match level {
                None => id.0,
                Some(level) => self.ancestor_at(n.domain, level),
            };
            *per_scope.entry(scope).or_default() += units;
        }
        per_scope.into_values().max().unwrap_or(0)
    }

    /// The vertex at `level` above (or at) vertex `v`.
    fn ancestor_at(&self, mut v: u32, level: Level) -> u32 {
        while self.vertex(v).level > level {
            match self.vertex(v).parent {
                Some(parent) => v = parent,
                None => break,
            }
        }
        v
    }

    fn sum_over_gpus(&self, per_gpu: impl Fn(&Gpu) -> u32) -> u32 {
        self.nodes
            .iter()
            .flat_map(|n| &n.gpus)
            .map(per_gpu)
            .fold(0u32, u32::saturating_add)
    }
}

#[cfg(test)]
mod tests {
    use neocloud_schema::mig::MigProfile;

    use crate::fleet::{Fleet, GpuMode};
    use crate::ids::{AllocationKey, ModelSet, TenantKey};
    use crate::request::{Request, Shape};
    use crate::testkit::node;

    #[test]
    fn mig_and_fractional_availability_follow_commits() {
        let mut fleet = Fleet::new(vec![
            node("m", "k", "m", "H100", 2, GpuMode::Mig),
            node("s", "k", "s", "L40S", 2, GpuMode::Shared),
        ])
        .unwrap();
        let three = Shape::Mig {
            profile: MigProfile::ThreeG,
            models: ModelSet::ANY,
            cpu_milli: 0,
            memory_mib: 0,
        };
        let quarter = Shape::Fractional {
            milli_gpu: 250,
            gpu_memory_mib: 0,
            models: ModelSet::ANY,
            cpu_milli: 0,
            memory_mib: 0,
        };
        assert_eq!(fleet.available(&three), 4);
        assert_eq!(fleet.available(&quarter), 8);
        let p = fleet.place(&Request::new(TenantKey(1), three)).unwrap();
        fleet.commit(AllocationKey(1), &p).unwrap();
        let p = fleet.place(&Request::new(TenantKey(1), quarter)).unwrap();
        fleet.commit(AllocationKey(2), &p).unwrap();
        assert_eq!(fleet.available(&three), 3);
        // 750 milli left on one GPU counts as 700 (rounded down to 100): two more
        // quarters there, four on the idle GPU.
        assert_eq!(fleet.available(&quarter), 6);
        fleet.release(AllocationKey(1)).unwrap();
        assert_eq!(fleet.available(&three), 4);
    }
}
