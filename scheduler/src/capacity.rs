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
