//! Read-only capacity queries for the catalog: how many instances of a shape could be
//! placed now, read from the fleet-wide aggregates in constant time per model (no node is
//! visited). The count ignores CPU, memory, tenants and exclusivity, and rounds shared
//! GPUs' free capacity down to 100 milli-GPUs: it answers "is this sellable, and about
//! how many", while `Fleet::place` decides.

use crate::aggregate::{SHARED_BUCKETS, WHOLE_BUCKETS, profile_index};
use crate::fleet::Fleet;
use crate::request::{Shape, TopologyLevel};

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
                                .map(|b| s.whole_hist[m.index()][b] * (b as u32 / count))
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
                            .map(|b| s.shared_hist[m.index()][b] * (b as u32 * 100 / milli_gpu))
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
