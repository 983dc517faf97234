//! Per-domain free-capacity aggregates. Every vertex of the topology tree (root, region,
//! zone, rack, NVLink domain) and every node carries a `Summary`: sums and maxima of what
//! is free beneath it, per GPU model. A search skips a whole subtree when its summary
//! says the request cannot fit there (the summary is an upper bound: it ignores tenants
//! and exclusivity). A change to one node updates its ancestors only, by delta for sums
//! and by re-reading the children only when a maximum went down.
//!
//! Deciding what fits lives in `placement`; this module only counts.

use neocloud_schema::mig::MigProfile;

use crate::ids::MAX_MODELS;

/// Buckets of the "nodes by free whole GPUs" histogram: 0..=7 and "8 or more".
pub const WHOLE_BUCKETS: usize = 9;
/// Buckets of the "shared GPUs by free milli-GPUs" histogram: 100-milli steps, 1000 last.
pub const SHARED_BUCKETS: usize = 11;
/// MIG profiles, in `MigProfile::ALL` order.
pub const PROFILES: usize = 6;

/// What is free beneath one vertex or on one node (failed GPUs and nodes that are not
/// active count as nothing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// Idle GPUs that can be sold whole, per model.
    pub whole_free: [u32; MAX_MODELS],
    /// The most idle whole-sellable GPUs of a model on one node.
    pub max_node_whole: [u32; MAX_MODELS],
    /// Nodes by their idle whole-sellable GPUs of a model (last bucket: 8 or more).
    pub whole_hist: [[u32; WHOLE_BUCKETS]; MAX_MODELS],
    /// Idle nodes (nothing allocated, no failed GPU) with GPUs of a model.
    pub idle_nodes: [u32; MAX_MODELS],
    /// MIG instances of each profile that could still be created, per model.
    pub mig_cap: [[u32; PROFILES]; MAX_MODELS],
    /// The most free milli-GPUs on one shared-mode GPU of a model.
    pub max_shared_milli: [u32; MAX_MODELS],
    /// Shared-mode GPUs by free milli-GPUs (bucket = free / 100).
    pub shared_hist: [[u32; SHARED_BUCKETS]; MAX_MODELS],
    /// The most free CPU on one node, milli-cores.
    pub max_cpu_milli: u32,
    /// The most free memory on one node, MiB.
    pub max_memory_mib: u64,
}

impl Default for Summary {
    fn default() -> Self {
        Summary {
            whole_free: [0; MAX_MODELS],
            max_node_whole: [0; MAX_MODELS],
            whole_hist: [[0; WHOLE_BUCKETS]; MAX_MODELS],
            idle_nodes: [0; MAX_MODELS],
            mig_cap: [[0; PROFILES]; MAX_MODELS],
            max_shared_milli: [0; MAX_MODELS],
            shared_hist: [[0; SHARED_BUCKETS]; MAX_MODELS],
            max_cpu_milli: 0,
            max_memory_mib: 0,
        }
    }
}

/// Index of a profile in `MigProfile::ALL`.
pub fn profile_index(profile: MigProfile) -> usize {
    MigProfile::ALL
        .iter()
        .position(|&p| p == profile)
        .unwrap_or(0)
}

impl Summary {
    /// Adds a child's counts (sums and maxima).
    pub fn absorb(&mut self, child: &Summary) {
        for m in 0..MAX_MODELS {
            self.whole_free[m] += child.whole_free[m];
            self.max_node_whole[m] = self.max_node_whole[m].max(child.max_node_whole[m]);
            for b in 0..WHOLE_BUCKETS {
                self.whole_hist[m][b] += child.whole_hist[m][b];
            }
            self.idle_nodes[m] += child.idle_nodes[m];
            for p in 0..PROFILES {
                self.mig_cap[m][p] += child.mig_cap[m][p];
            }
            self.max_shared_milli[m] = self.max_shared_milli[m].max(child.max_shared_milli[m]);
            for b in 0..SHARED_BUCKETS {
                self.shared_hist[m][b] += child.shared_hist[m][b];
            }
        }
        self.max_cpu_milli = self.max_cpu_milli.max(child.max_cpu_milli);
        self.max_memory_mib = self.max_memory_mib.max(child.max_memory_mib);
    }

    /// Replaces a child's old counts by its new ones. Returns true when a maximum may
    /// have gone down, so the caller must re-read the children's maxima
    /// (`reset_maxima` + `absorb_maxima`).
    pub fn replace_child(&mut self, old: &Summary, new: &Summary) -> bool {
        let mut stale = false;
        for m in 0..MAX_MODELS {
            self.whole_free[m] = self.whole_free[m] - old.whole_free[m] + new.whole_free[m];
            for b in 0..WHOLE_BUCKETS {
                self.whole_hist[m][b] =
                    self.whole_hist[m][b] - old.whole_hist[m][b] + new.whole_hist[m][b];
            }
            self.idle_nodes[m] = self.idle_nodes[m] - old.idle_nodes[m] + new.idle_nodes[m];
            for p in 0..PROFILES {
                self.mig_cap[m][p] = self.mig_cap[m][p] - old.mig_cap[m][p] + new.mig_cap[m][p];
            }
            for b in 0..SHARED_BUCKETS {
                self.shared_hist[m][b] =
                    self.shared_hist[m][b] - old.shared_hist[m][b] + new.shared_hist[m][b];
            }
            stale |= raise(
                &mut self.max_node_whole[m],
                old.max_node_whole[m],
                new.max_node_whole[m],
            );
            stale |= raise(
                &mut self.max_shared_milli[m],
                old.max_shared_milli[m],
                new.max_shared_milli[m],
            );
        }
        stale |= raise(
            &mut self.max_cpu_milli,
            old.max_cpu_milli,
            new.max_cpu_milli,
        );
        stale |= raise(
            &mut self.max_memory_mib,
            old.max_memory_mib,
            new.max_memory_mib,
        );
        stale
    }

    pub fn reset_maxima(&mut self) {
        self.max_node_whole = [0; MAX_MODELS];
        self.max_shared_milli = [0; MAX_MODELS];
        self.max_cpu_milli = 0;
        self.max_memory_mib = 0;
    }

    pub fn absorb_maxima(&mut self, child: &Summary) {
        for m in 0..MAX_MODELS {
            self.max_node_whole[m] = self.max_node_whole[m].max(child.max_node_whole[m]);
            self.max_shared_milli[m] = self.max_shared_milli[m].max(child.max_shared_milli[m]);
        }
        self.max_cpu_milli = self.max_cpu_milli.max(child.max_cpu_milli);
        self.max_memory_mib = self.max_memory_mib.max(child.max_memory_mib);
    }
}

/// Moves a maximum from a child's old value to its new one; true when it may have
/// gone down (the child held the maximum and shrank).
fn raise<T: Ord + Copy>(max: &mut T, old: T, new: T) -> bool {
    if new >= *max {
        *max = new;
        false
    } else {
        old == *max && new < old
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replacing_a_child_keeps_sums_exact_and_flags_a_shrinking_maximum() {
        let mut a = Summary::default();
        a.whole_free[0] = 3;
        a.max_node_whole[0] = 3;
        let mut b = Summary::default();
        b.whole_free[0] = 5;
        b.max_node_whole[0] = 5;
        let mut parent = Summary::default();
        parent.absorb(&a);
        parent.absorb(&b);
        let mut b2 = b.clone();
        b2.whole_free[0] = 1;
        b2.max_node_whole[0] = 1;
        assert!(parent.replace_child(&b, &b2));
        assert_eq!(parent.whole_free[0], 4);
        parent.reset_maxima();
        parent.absorb_maxima(&a);
        parent.absorb_maxima(&b2);
        assert_eq!(parent.max_node_whole[0], 3);
    }
}
